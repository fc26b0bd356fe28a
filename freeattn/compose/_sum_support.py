"""Support of the free additive convolution of any two laws (theory section 14.29).

Section 14.19 locates every gap of ``a ⊞ b`` for two discrete laws on curves of
real solutions ``F_a(omega_1) = F_b(omega_2) = f``, ``x = omega_1 + omega_2 - f``,
where

    dx/df = 1/F_a'(omega_1) + 1/F_b'(omega_2) - 1 > 0       (theory eq. (14.20))

holds exactly outside the support.  Nothing in that argument needs the laws to
be discrete: for any law ``F = 1/G`` is real and increasing on the real line
outside the continuous support, between consecutive zeros of ``G`` and edges of
the support (its *branches*, theory eq. (14.37)).  :class:`LawBranches` finds the
branches of any law from its Cauchy transform on the real line, samples ``F``
on each over every scale the law has (geometric in the distance from each end
and each atom), and inverts ``F`` in the brackets of its own samples; the
curves of each pair of branches then go to the common core
:func:`~._discrete_sum_support.curve_bands`.  A gap is found however narrow it
is against the support (an attention law at ``beta = 1e-3`` added to atoms gives
bands of width ``1e-5`` around each of them, which a grid over the support misses).

Nothing in this module prints or does I/O.
"""

import math

import numpy as np

from ..core._errors import ConvergenceError
from ._discrete_sum_support import (ATOM_MARGIN, S_MARGIN, TAIL_FACTOR, TAIL_SAMPLES, _Branches,
                                    curve_bands, sum_criterion)
from ._fixed_point import bracketed_newton
from ..laws._elementary import PointMasses

__all__ = ["LawBranches", "law_branches", "law_sum_edges", "curve_keys", "parameter_index",
           "MAX_LAW_CURVES"]

#: Samples per decade of the distance from each end of a branch and from each
#: atom on it (``F`` changes on every scale from the end's rounding up).
DECADE_SAMPLES = 6
#: The nearest sample to a finite end lies this far from it, relative to the
#: end's size: nearer, the rounding of the edge itself and the loss of digits of
#: ``G`` next to it (``sqrt(eps/d)``) leave nothing to sample (an attention law's
#: ``G`` was 3e-7 off at 2e-13 of its edge, its 40-digit value not monotone there).
END_RTOL = 1e-11
#: An end or atom at 0 (or within this fraction of the spread from it) is sampled from
#: ``END_RTOL`` of this fraction of the spread: its own size gives no scale there.
NEAR_ZERO_FRACTION = 1e-3
#: ... and at most this fraction of the width of the piece of a gap it ends (between an
#: edge and an atom, or two atoms).
END_WIDTH_FRACTION = 0.25
#: Samples spread evenly (Chebyshev points) over a finite branch.
INTERIOR_SAMPLES = 32
#: An unbounded branch is sampled out to this many times the law's spread
#: beyond its finite end; the tails beyond come from eq. (14.38).
OUTER_REACH = 1e4
#: A sampled maximum of eq. (14.20) is refined where a parabola through it and its
#: neighbours, with this many times their drop, could reach the margin (eq. (14.39)):
#: a parabola through three equally spaced samples rises at most 1/8 of the drop
#: above the middle one; the unequal spacing of geometric samples, at most 4 times.
PEAK_REACH = 4.0
#: Gap images of two curves meet where their ends agree to this many ulps of the
#: end (the limits of eq. (14.38) at a common end are one formula): the band
#: between them can be 1e-11 of the support (theory section 14.29).
TOUCH_ULPS = 64
#: :meth:`LawBranches.inverse`: a value of ``F`` within this many ulps of a sampled value
#: is that sample's point (a curve's ``f`` recomputed from its parameter's point differs
#: from the sample it was inverted from by an ulp; next to an edge, where ``F'`` is large,
#: the bracketed Newton then bisects down to ``BRACKET_RTOL`` at a nested law's cost per
#: step: 15 solves, 1.9 s, for seed 1 / draw 38 of the depth-3 campaign).
SAMPLE_ULPS = 4
_EPS = float(np.finfo(float).eps)
#: Beyond this many times the radius of the support about the mean, ``F`` is the
#: series of eq. (14.40) in the Boolean cumulants (``1/F' - 1 ~ -var/u**2`` keeps no
#: digits from ``G**2/(-G') - 1`` there, and a rational tower finds no root at
#: ``u ~ 1e18``); with ``FAR_TERMS`` of them the series' truncation is ``4**-FAR_TERMS``
#: of its leading term.
FAR_FACTOR = 4.0
FAR_TERMS = 24
#: The moments about the mean come from the moments by the binomial transform, which
#: cancels where the mean is far from 0 against the radius (``-0.239 + 1e-5 X``: all
#: digits of the 13th central moment lost, and the series gave ``F = -1.1e11`` where
#: ``F = -0.024``).  Orders are kept while the transform's rounding bound, ``(k + 2)
#: eps sum_j C(k, j) |m_j| |mean|**(k - j)``, is within ``CENTRAL_MOMENT_RTOL`` of
#: ``(FAR_FACTOR radius)**k`` (the order's term of ``F/v`` at the series' reach); with
#: ``K < FAR_TERMS`` orders the series serves only beyond ``FAR_FACTOR**(FAR_TERMS /
#: K)`` times the radius (the same truncation).
CENTRAL_MOMENT_RTOL = 1e-13
#: Most pairs of branches the method takes (each is a curve of a few hundred
#: samples, two inverses per sample); larger sums keep the grid locator.
MAX_LAW_CURVES = 64
#: A sample of ``F`` that falls below an earlier one on its branch by more than
#: this (relative) marks a Cauchy transform that is not accurate there; smaller
#: falls (the rounding of ``G`` next to an edge) drop the sample.
MONOTONE_RTOL = 1e-8


class LawBranches:
    """``F = 1/G`` of any law on the real line outside its support (theory eq. (14.37)).

    Parameters
    ----------
    law : SpectralLaw
    pair : callable
        ``pair(law, u) -> (G, G')`` at complex points ``u`` (the Cauchy transform
        and its derivative; real points outside the support give real values).

    Attributes
    ----------
    branches : list of (float, float, str, str)
        ``(left, right, left_kind, right_kind)``, increasing; a kind is
        ``"inf"`` (an unbounded end), ``"zero"`` (a zero of ``G``: ``F -> +-oo``)
        or ``"edge"`` (an edge of the continuous support: ``F`` tends to a
        finite value, 0 where ``G`` diverges).
    mean, var : float
        The law's mean and variance (the limits of eq. (14.38)).
    spread : float
        Size of the law's support (the extent of its atoms and intervals).
    """

    def __init__(self, law, pair):
        self.law = law
        self._pair = pair
        bands = [(float(iv.lo), float(iv.hi)) for iv in law.interval_details()]
        loc, mass = law.atoms()
        self.atoms = np.asarray(loc, dtype=float)
        self.masses = np.asarray(mass, dtype=float)
        ends = [v for b in bands for v in b] + self.atoms.tolist()
        lo, hi = min(ends), max(ends)
        self.spread = max(hi - lo, abs(lo), abs(hi), np.finfo(float).tiny)
        self.hull = (lo, hi)
        self.mean = float(law.mean())
        self.var = float(law.var())
        # a discrete law's 1/F' - 1 and u - F(u) without cancellation (eq. (14.28)),
        # and its inverse from companion eigenvalues: cheap to invert
        self._exact = (_Branches(law.values, law.weights)
                       if isinstance(law, PointMasses) and law.values.size >= 2 else None)
        self.cheap = self._exact is not None
        # the zeros of G known from the constituents of a ⊞ (eq. (14.43)): sorted
        # candidates and G' at each
        self._known = _known_zeros(law, pair)
        # the candidates _zero took as zeros, with G' there: G's value at them
        self._zeros_at = {}
        # the real values of G and G' solved so far, by point
        self._kept = {}
        # far from the support F by its Boolean cumulants (eq. (14.40))
        self.radius = max(hi - self.mean, self.mean - lo, np.finfo(float).tiny)
        self._boolean = None if self.cheap else _boolean_cumulants(law.moments(FAR_TERMS),
                                                                   self.mean, self.radius)
        self._far_factor = (FAR_FACTOR ** (FAR_TERMS / (len(self._boolean) + 1))
                            if self._boolean is not None else np.inf)
        self.branches = []
        self._samples = []
        edges = [-np.inf] + [v for b in bands for v in b] + [np.inf]
        for left, right in zip(edges[0::2], edges[1::2]):
            self._add_gap(left, right)
        self.count = len(self.branches)
        # the finest scale of the samples: the floor of the search tolerances
        pts = np.abs(np.concatenate([u for u, _ in self._samples]))
        pts = pts[pts > 0]
        self.finest = float(pts.min()) if pts.size else self.spread

    # -- evaluation ---------------------------------------------------------------
    def _far(self, u):
        """Points where the series of eq. (14.40) serves."""
        return np.abs(u - self.mean) > self._far_factor * self.radius

    def _series(self, u):
        """``(F - u + mean, F' - 1)`` at far points by eq. (14.40), without cancellation."""
        v = u - self.mean
        inv = 1.0 / v
        shift = np.zeros(u.shape)
        slope = np.zeros(u.shape)
        power = inv.copy()                    # v**(1 - n) for n = 2, 3, ...
        for n, b in enumerate(self._boolean, start=2):
            shift -= b * power
            power = power * inv
            slope += (n - 1) * b * power
        return shift, slope

    def values(self, u):
        """``(G, G')`` at real points ``u`` (real arrays; infinite at an atom; at a
        zero of eq. (14.43), 0 and its slope)."""
        return self._solved_values(u, known=True)

    def _solved_values(self, u, known=False):
        """:meth:`values`, the zeros taken from eq. (14.43) only with ``known``."""
        u = np.asarray(u, dtype=float)
        far = self._far(u)
        g = np.empty(u.shape)
        d = np.empty(u.shape)
        # at an atom G has a pole (a composed law's solver has no root there)
        pole = np.isin(u, self.atoms) & ~far
        g[pole], d[pole] = np.inf, -np.inf
        near = ~far & ~pole
        if known and self._zeros_at:
            # at a zero taken from eq. (14.43) a solver's subordination point is infinite
            hit = near & np.isin(u, list(self._zeros_at))
            if hit.any():
                g[hit] = 0.0
                d[hit] = [self._zeros_at[v] for v in u[hit].tolist()]
                near &= ~hit
        if near.any():
            g[near], d[near] = self._kept_pair(u[near])
        if far.any():
            shift, slope = self._series(u[far])
            f = u[far] - self.mean + shift
            g[far] = 1.0 / f
            d[far] = -(1.0 + slope) / (f * f)
        return g, d

    def _kept_pair(self, u):
        """Real ``(G, G')`` at real points ``u`` from the law's solver, each point solved
        once: the curves of eqs. (14.20), (14.50) ask the samples and their inverses again
        (their signs, forward values and parts), 74 % of the points of seed 51 / draw 40
        of the depth-3 campaign, each a Newton solve of a nested law."""
        if not np.all(np.isfinite(u)):
            # (a point that is not a number is not kept: the solver answers it)
            gn, dn = self._pair(self.law, u.astype(complex))
            return np.real(gn), np.real(dn)
        kept = self._kept
        keys = u.tolist()
        new = [i for i, v in enumerate(keys) if v not in kept]
        if new:
            fresh = np.unique(u[new])
            gn, dn = self._pair(self.law, fresh.astype(complex))
            kept.update(zip(fresh.tolist(), zip(np.real(gn).tolist(), np.real(dn).tolist())))
        values = np.array([kept[v] for v in keys], dtype=float).reshape(u.size, 2)
        return values[:, 0], values[:, 1]

    def parts(self, u, f):
        """``(d, e, r)`` at points ``u`` with ``F(u) = f``: ``d = 1/F'(u) = G**2/(-G')``,
        ``e = d - 1`` and ``r = u - F(u)``; at an atom of mass ``m``: ``(m, m - 1, u)``;
        far from the support from eq. (14.40), free of cancellation."""
        if self._exact is not None:
            return self._exact.parts(u, f)
        u = np.asarray(u, dtype=float)
        g, dg = self.values(u)
        with np.errstate(all="ignore"):
            d = g * g / -dg
            e = d - 1.0
            # the curve's common value f, not 1/G(u) again: at a point u inverted from
            # f next to an edge (F' large) the inverse leaves a residual F(u) - f of
            # F' times its step tolerance, which would enter x of eq. (14.50) (section
            # 14.45)
            r = u - np.asarray(f, dtype=float)
        far = self._far(u)
        if far.any():
            shift, slope = self._series(u[far])
            d[far] = 1.0 / (1.0 + slope)
            e[far] = -slope / (1.0 + slope)
            r[far] = self.mean - shift
        hit = np.isin(u, self.atoms)
        if hit.any():
            k = np.searchsorted(self.atoms, u[hit])
            k = np.clip(k, 0, self.atoms.size - 1)
            m = np.where(self.atoms[k] == u[hit], self.masses[k], np.nan)
            d[hit], e[hit], r[hit] = m, m - 1.0, u[hit]
        return d, e, r

    # -- branches -----------------------------------------------------------------
    def _add_gap(self, left, right):
        """The branches of the gap ``(left, right)`` of the continuous support: its
        atoms split it into pieces where ``G`` decreases, each holding at most
        one zero of ``G`` (eq. (14.37))."""
        inside = self.atoms[(self.atoms > left) & (self.atoms < right)]
        cuts = [left] + inside.tolist() + [right]
        zeros = []
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            sl = self._end_sign(lo, +1, hi - lo)
            sh = self._end_sign(hi, -1, hi - lo)
            if sl > 0 and sh < 0:
                zeros.append(self._zero(lo, hi))
        ends = [left] + zeros + [right]
        kinds = ["inf" if not np.isfinite(left) else "edge"] + ["zero"] * len(zeros) + [
            "inf" if not np.isfinite(right) else "edge"]
        for j in range(len(ends) - 1):
            branch = (float(ends[j]), float(ends[j + 1]), kinds[j], kinds[j + 1])
            self.branches.append(branch)
            self._samples.append(self._sample(branch))

    def _end_sign(self, v, side, width):
        """Sign of ``G`` next to ``v`` on the ``side`` of it (``+1``: right), inside the
        piece of width ``width`` that ``v`` ends (:meth:`_end_step`)."""
        if not np.isfinite(v):
            return np.sign(v)           # G ~ 1/u: negative at -oo, positive at +oo
        if v in self.atoms:
            return side                 # a pole of G with positive residue
        g = self.values([v + side * self._end_step(v, width)])[0][0]
        if not np.isfinite(g) or g == 0.0:
            raise ConvergenceError(f"G of {self.law._describe()} is {g!r} next to the "
                                   f"edge {v!r} (theory eq. (14.37))")
        return np.sign(g)

    def _end_step(self, v, width=np.inf):
        """The distance from an end ``v`` at which ``G`` is first asked: ``END_RTOL`` of
        its size (of ``NEAR_ZERO_FRACTION`` of the spread next to 0), at most
        ``END_WIDTH_FRACTION`` of the ``width`` of the piece it ends: a probe beyond the
        piece (a band's edge ``6e-17`` from an atom at 0 of a law spread over ``[0, 7]``)
        reads ``G`` on the other side of the atom, of the other sign."""
        return min(END_RTOL * max(abs(v), self.spread * NEAR_ZERO_FRACTION),
                   END_WIDTH_FRACTION * width)

    def _zero(self, lo, hi):
        """The zero of ``G`` in ``(lo, hi)``, where ``G`` decreases from positive to negative."""
        a = lo + (self._end_step(lo, hi - lo) if lo not in self.atoms else 0.0)
        b = hi - (self._end_step(hi, hi - lo) if hi not in self.atoms else 0.0)
        x0 = None
        if self._known is not None:
            # the one zero in (lo, hi) is among the candidates of eq. (14.43): where
            # only one candidate lies there, it is the zero, kept where the law's own
            # G has its signs at the first samples beside it (the nearest the
            # branches are sampled, END_RTOL); else Newton starts there
            at, slope = self._known
            inside = np.flatnonzero((at > lo) & (at < hi))
            if inside.size == 1:
                p = float(at[inside[0]])
                step = self._end_step(p)
                if a < p - step and p + step < b:
                    g = self._solved_values(np.array([p - step, p + step]))[0]
                    if g[0] > 0 > g[1]:
                        self._zeros_at[p] = float(slope[inside[0]])
                        return p
                x0 = np.array([p])

        return float(bracketed_newton(lambda u, idx: self._solved_values(u), np.array([a]),
                                      np.array([b]), np.array([1.0]), x0=x0,
                                      scale=self.spread,
                                      what="G = 0 in a gap (theory eq. (14.37))")[0])

    def _sample(self, branch):
        """``(u, F)`` samples of a branch, ``F`` increasing (eq. (14.37))."""
        left, right, _, _ = branch
        pts = []
        decades = lambda near, far: np.logspace(np.log10(near), np.log10(far),
                                                max(2, int(DECADE_SAMPLES * np.log10(
                                                    far / near))) + 1)
        if np.isfinite(left) and np.isfinite(right):
            width = right - left
            t = np.cos(np.pi * (np.arange(INTERIOR_SAMPLES) + 0.5) / INTERIOR_SAMPLES)
            pts.append(left + 0.5 * width * (1.0 + t))
        else:
            width = np.inf
        reach = OUTER_REACH * self.spread
        for end, side in ((left, 1.0), (right, -1.0)):
            if np.isfinite(end):
                near = self._end_step(end)
                far = min(0.5 * width, reach)
                if far > near:
                    pts.append(end + side * decades(near, far))
        if not np.isfinite(left) or not np.isfinite(right):
            # an unbounded branch: from its finite end (or the hull) outwards
            base = right if np.isfinite(right) else (left if np.isfinite(left) else None)
            if base is None:
                base = self.hull[0] if not np.isfinite(left) else self.hull[1]
            side = -1.0 if not np.isfinite(left) else 1.0
            pts.append(base + side * decades(NEAR_ZERO_FRACTION * self.spread, reach))
        for c in self.atoms[(self.atoms > left) & (self.atoms < right)]:
            near = END_RTOL * max(abs(c), self.spread * NEAR_ZERO_FRACTION)
            for end, side in ((left, -1.0), (right, 1.0)):
                far = min(0.5 * abs(end - c), reach)
                if far > near:
                    pts.append(c + side * decades(near, far))
            pts.append(np.array([c]))
        u = np.unique(np.concatenate(pts))
        u = u[(u > left) & (u < right)]
        f = self.forward(u)
        if not np.isfinite(f).all():
            k = int(np.argmin(np.isfinite(f)))
            raise ConvergenceError(f"G of {self.law._describe()} is not finite at {u[k]!r} "
                                   f"outside its support (theory eq. (14.37))")
        top = np.maximum.accumulate(f)
        fall = top - f > MONOTONE_RTOL * np.abs(top)
        if fall.any():
            k = int(np.argmax(fall))
            raise ConvergenceError(
                f"F = 1/G of {self.law._describe()} falls to {f[k]!r} at {u[k]!r} after "
                f"{top[k]!r}: its Cauchy transform is not accurate there (theory eq. (14.37))")
        keep = np.r_[True, f[1:] > top[:-1]]
        return u[keep], f[keep]

    def value_bounds(self, k):
        """``(lo, hi)``: the values of ``F`` on branch ``k`` lie within them; the first
        (last) sample at an edge end, ``-oo`` (``+oo``) at another (eq. (14.37))."""
        left, right, lk, rk = self.branches[k]
        f = self._samples[k][1]
        return (f[0] if lk == "edge" else -np.inf, f[-1] if rk == "edge" else np.inf)

    def sampled_values(self, k):
        """The sampled values of ``F`` on branch ``k``, increasing."""
        return self._samples[k][1]

    def sampled_points(self, k):
        """The sampled points of branch ``k``, increasing."""
        return self._samples[k][0]

    def forward(self, u):
        """``F(u) = 1/G(u)`` at real points ``u`` (0 at an atom)."""
        u = np.asarray(u, dtype=float)
        g, _ = self.values(u)
        with np.errstate(all="ignore"):
            f = 1.0 / g
        return np.where(np.isin(u, self.atoms), 0.0, f)

    def inverse(self, f, k):
        """``omega`` on branch ``k`` with ``F(omega) = f`` (``f``, ``k`` arrays of one
        shape), by safeguarded Newton in the bracket of two samples or, beyond the
        samples of an unbounded end, in ``[f + lo, f + hi]`` (``u - hi <= F(u) <= u - lo``
        outside the hull ``[lo, hi]``), or between a zero of ``G`` and the last sample."""
        f = np.asarray(f, dtype=float)
        k = np.broadcast_to(np.asarray(k), f.shape)
        if self._exact is not None:
            return self._exact.inverse(f, k)
        out = np.empty(f.shape)
        for kk in np.unique(k):
            sel = k == kk
            out[sel] = self._inverse_one(f[sel], int(kk))
        return out

    def _inverse_one(self, f, k):
        u_s, f_s = self._samples[k]
        left, right, lk, rk = self.branches[k]
        # the nearest sample of each value (f_s increases), taken where within SAMPLE_ULPS
        above = np.minimum(np.searchsorted(f_s, f), f_s.size - 1)
        below = np.maximum(above - 1, 0)
        near = np.where(np.abs(f_s[below] - f) < np.abs(f_s[above] - f), below, above)
        exact = np.isfinite(f) & (np.abs(f_s[near] - f) <= SAMPLE_ULPS * _EPS * np.abs(f))
        j = np.where(exact, 1, np.searchsorted(f_s, f))
        lo = np.empty(f.shape)
        hi = np.empty(f.shape)
        x0 = np.full(f.shape, np.nan)
        mid = (j > 0) & (j < f_s.size)
        jm = j[mid]
        lo[mid], hi[mid] = u_s[jm - 1], u_s[jm]
        with np.errstate(all="ignore"):
            t = (f[mid] - f_s[jm - 1]) / (f_s[jm] - f_s[jm - 1])
        x0[mid] = u_s[jm - 1] + np.where(np.isfinite(t), t, 0.5) * (u_s[jm] - u_s[jm - 1])
        for beyond, kind, end, side in ((j == 0, lk, left, -1), (j == f_s.size, rk, right, 1)):
            if not beyond.any():
                continue
            fb = f[beyond]
            if kind == "edge":
                raise ConvergenceError(
                    f"F = {float(fb[0])!r} lies beyond the samples of a branch of "
                    f"{self.law._describe()} that ends at the edge {end!r} (theory eq. (14.37))")
            if kind == "zero":
                lo[beyond] = end if side < 0 else u_s[-1]
                hi[beyond] = u_s[0] if side < 0 else end
            elif side < 0:
                lo[beyond] = fb + self.hull[0]
                hi[beyond] = np.minimum(u_s[0], fb + self.hull[1])
            else:
                lo[beyond] = np.maximum(u_s[-1], fb + self.hull[0])
                hi[beyond] = fb + self.hull[1]
        u = np.empty(f.shape)
        if exact.any():
            u[exact] = u_s[near[exact]]
        todo = np.flatnonzero(~exact)
        if todo.size:
            ff = f[todo]

            def f_pair(v, idx):
                g, dg = self.values(v)
                with np.errstate(all="ignore"):
                    return 1.0 / g - ff[idx], -dg / (g * g)

            u[todo] = bracketed_newton(f_pair, lo[todo], hi[todo], -np.ones(todo.size),
                                       x0=x0[todo], scale=self.spread,
                                       what="F(omega) = f (theory eq. (14.37))")
        return u

    def end(self, k, side):
        """As ``f`` runs to the ``side`` end of branch ``k``: ``("inf", mean)``,
        ``("zero", p)`` or ``("edge", v)``."""
        left, right, lk, rk = self.branches[k]
        kind, v = (lk, left) if side < 0 else (rk, right)
        return kind, (self.mean if kind == "inf" else v)

    def pole_slope(self, p):
        """``|G'(p)|`` at a zero ``p`` of ``G``."""
        return abs(float(self.values([p])[1][0]))


def law_branches(law, pair):
    """The :class:`LawBranches` of ``law`` with ``pair``, built once per law.

    Its branches and samples are the law's own (theory eq. (14.37)): every sum
    that holds the law among its terms reads them.  A sum of sums locates its
    support from the curves of all its terms and so does each of its nested sums
    (section 14.40), and the arrangement of eq. (14.51) builds several: the
    depth-3 campaign's seed 51 / draw 40, a discrete product ⊞ two attention laws
    ⊞ a semicircle, sampled the product 16 191 times at 4 201 distinct points.
    """
    kept = law.__dict__.setdefault("_law_branches", {})
    branches = kept.get(pair)
    if branches is None:
        branches = kept[pair] = LawBranches(law, pair)
    return branches


def law_sum_edges(*laws):
    """Bands of ``a_1 ⊞ ... ⊞ a_n`` from the curves of eq. (14.50) (eq. (14.20) for two
    laws) on the branches of eq. (14.37).

    A curve is one branch of every law with a common range of ``F``.  It is
    parametrized by the point ``u`` of the first law whose inverse costs more (a
    computed law rather than atoms): ``f = F(u)`` is then one evaluation of its
    Cauchy transform per sample and per refining step, and only the other laws'
    ``F`` are inverted (theory sections 14.29, 14.40).

    Parameters
    ----------
    *laws : LawBranches
        Two or more.

    Returns
    -------
    list of (float, float, bool, bool)
        The bands, increasing, with whether each edge is a pole edge (atoms of
        every law whose masses sum to ``n - 1``, theory section 14.19).

    Raises
    ------
    ConvergenceError
        If no curve has a common value, a curve's samples do not settle its sign,
        or the gap images do not tile the complement of bands (as
        :func:`curve_bands`).
    """
    # p: the law whose point is the parameter, others: the laws inverted at f = F_p(u)
    first = parameter_index(laws)
    p = laws[first]
    others = laws[:first] + laws[first + 1:]
    own, extras, kk, ll = [], [], [], []
    for key in curve_keys(p, others):
        k, ls = key[0], key[1:]
        fp = p.sampled_values(k)
        # the common values of F: an edge end bounds a branch's at its last sample,
        # an unbounded end or a zero of G does not (eq. (14.37))
        lo, hi = _common_values(p, others, key)
        # the other laws' samples, and the tails of eq. (14.38), as points of p
        extra = np.concatenate([f[(f > lo) & (f < hi)] for f in
                                (o.sampled_values(l) for o, l in zip(others, ls))])
        mine = (fp >= lo) & (fp <= hi)
        both = np.r_[fp[mine], extra]
        if not both.size:
            continue
        extra = np.r_[extra, _tails((p,) + others, key, both.min(), both.max())]
        if lo < 0 < hi:
            extra = np.r_[extra, 0.0]
        own.append(p.sampled_points(k)[mine])
        extras.append(extra)
        kk.append(k)
        ll.append(ls)
    if not own:
        raise ConvergenceError("no curve of branches shares a value of F (theory eq. (14.37))")
    # one inverse for all the curves
    sizes = [e.size for e in extras]
    points = np.split(p.inverse(np.concatenate(extras), np.repeat(kk, sizes)),
                      np.cumsum(sizes)[:-1])
    rows = [np.unique(np.r_[u, v]) for u, v in zip(own, points)]
    kk, ll = np.array(kk), np.array(ll).reshape(len(kk), len(others))
    upad = np.full((len(rows), max(r.size for r in rows)), np.inf)
    for i, r in enumerate(rows):
        upad[i, :r.size] = r

    def s_and_x(u, rows, parts=False):
        f = p.forward(u)
        vs = [o.inverse(f, ll[rows, j]) for j, o in enumerate(others)]
        pr = [p.parts(u, f)] + [o.parts(v, f) for o, v in zip(others, vs)]
        out = sum_criterion([u] + vs, pr)
        return (out, [u] + vs, pr) if parts else out

    pole_x = np.full(kk.size, np.nan)
    pole_at = np.full(kk.size, np.nan)
    for i, (k, ls) in enumerate(zip(kk, ll)):
        atoms = [_branch_atom(p, k)] + [_branch_atom(o, l) for o, l in zip(others, ls)]
        if all(m is not None for m in atoms) and abs(
                sum(m[1] for m in atoms) - len(others)) <= ATOM_MARGIN:
            pole_x[i], pole_at[i] = sum(m[0] for m in atoms), atoms[0][0]

    def ends(r, side):
        return [p.end(int(kk[r]), side)] + [o.end(int(l), side)
                                            for o, l in zip(others, ll[r])]

    def limit(r, side):
        kinds = ends(r, side)
        if any(kind == "edge" for kind, _ in kinds):
            # the curve ends where a point reaches an edge of its law's support, where
            # 1/F' -> 0 and eq. (14.50) tends to the others' sum of 1/F' - 1 <= 0: a
            # positive last sample has its zero between it and that edge (eq.
            # (14.38)), where x is stationary; x there from x at the sample by eq.
            # (14.53)
            row = upad[r][np.isfinite(upad[r])]
            (_, x), points, pr = s_and_x(np.array([row[0] if side < 0 else row[-1]]),
                                         np.array([r]), parts=True)
            d = np.array([float(q[0][0]) for q in pr])
            e = np.array([float(q[1][0]) for q in pr])
            at = [i for i, (kind, _) in enumerate(kinds) if kind == "edge"]
            j = min(at, key=lambda i: d[i])          # the law at its edge: 1/F' smallest
            return float(x[0]) - stationary_shift(float(points[j][0]) - kinds[j][1], d[j],
                                                  d[j] + e.sum() - e[j])
        return _limit(ends(r, side), side, (int(kk[r]),) + tuple(int(l) for l in ll[r]))

    closed = np.array([[any(kind == "edge" for kind, _ in ends(r, side)) for side in (-1, 1)]
                       for r in range(kk.size)], dtype=bool)
    return curve_bands(upad, s_and_x, limit, pole_x, p.finest, TOUCH_ULPS * _EPS,
                       "eq. (14.50)" if others[1:] else "eq. (14.20)", closed, pole_at,
                       PEAK_REACH, touch_relative=True, increasing=True)


def stationary_shift(dw, d, s):
    """``x_s - x_0`` of eq. (14.53): from a sample of a curve of eq. (14.50) whose point
    ``omega_j`` lies ``dw = omega_j - e`` beyond the square-root edge ``e`` of its law, with
    ``d = 1/F_j'`` there and the criterion ``s = d + sum_{i != j} (1/F_i' - 1)``, to the
    stationary point ``x_0`` of ``x`` (the zero of the criterion) between the sample and
    the edge: ``dw (s/d)**2`` (0 where ``d`` is not a positive number)."""
    if not d > 0 or not np.isfinite(d) or not np.isfinite(dw):
        return 0.0
    ratio = min(max(s / d, 0.0), 1.0)
    return dw * ratio * ratio


def parameter_index(laws):
    """The index of the law whose point parametrizes the curves of eq. (14.50): the
    first that is not a law of atoms (its inverse costs more), else the first."""
    return next((i for i, law in enumerate(laws) if not law.cheap), 0)


def _common_values(p, others, key):
    """``(lo, hi)``: the values of ``F`` common to the branches ``key`` of ``p`` and
    ``others`` (eq. (14.37))."""
    bounds = [p.value_bounds(key[0])] + [o.value_bounds(l) for o, l in zip(others, key[1:])]
    return max(b[0] for b in bounds), min(b[1] for b in bounds)


def curve_keys(p, others):
    """The curves of eq. (14.50): every choice ``(k, l_1, ...)`` of one branch of ``p``
    and of each of ``others`` whose ranges of ``F`` overlap, in lexicographic order."""
    keys = [((k,), p.value_bounds(k)) for k in range(p.count)]
    for o in others:
        keys = [(key + (l,), (max(lo, b[0]), min(hi, b[1])))
                for key, (lo, hi) in keys for l, b in enumerate(map(o.value_bounds,
                                                                     range(o.count)))
                if max(lo, b[0]) < min(hi, b[1])]
    return [key for key, _ in keys]


def _constituent_zeros(law, pair):
    """``(zeta, G'(zeta))`` at every zero of ``G`` of ``law`` on the real line: none
    for one atom or for a law on one interval without atoms (``G`` has one sign off
    its support), the zeros between the atoms of a discrete law, and those of
    :class:`LawBranches` for any other law whose transform is not itself a nested
    composition (None for those: their zeros are what is being solved)."""
    loc, _ = law.atoms()
    if isinstance(law, PointMasses):
        if law.values.size < 2:
            return np.empty(0), np.empty(0)
        br = _Branches(law.values, law.weights)
        return br.poles, br._g_dg(br.poles)[1]
    if len(loc) == 0 and len(law.interval_details()) == 1:
        return np.empty(0), np.empty(0)
    if law._nested_solve or law._pointwise_transform:
        return None
    try:
        br = law_branches(law, pair)
    except ConvergenceError:
        # the zeros are then solved in the sum's own branches, as before
        return None
    zeta = np.array([right for _, right, _, kind in br.branches[:-1] if kind == "zero"])
    return zeta, br.values(zeta)[1]


def _known_zeros(law, pair):
    """Candidates for the zeros of ``G`` of an additive subordination law and ``G'``
    there (theory eq. (14.43)), or None.

    At a real zero ``p`` of ``G`` of ``a ⊞ b`` one subordination point stays at a
    zero ``zeta`` of its constituent's ``G`` while the other runs to infinity:
    ``p = zeta + mean(partner)`` and ``G'(p) = G_c'(zeta) / (1 + var(partner)
    G_c'(zeta))``.  Every zero is among these candidates, not every candidate a
    zero.
    """
    parts = law._additive_constituents
    if parts is None:
        return None
    at, slope = [], []
    for c, partner in (parts, parts[::-1]):
        zeros = _constituent_zeros(c, pair)
        if zeros is None:
            return None
        zeta, dg = zeros
        var = float(partner.var())
        with np.errstate(all="ignore"):
            at.append(zeta + float(partner.mean()))
            slope.append(dg / (1.0 + var * dg))
    at, slope = np.concatenate(at), np.concatenate(slope)
    order = np.argsort(at)
    return at[order], slope[order]


def _boolean_cumulants(moments, mean, radius):
    """The Boolean cumulants ``b_2, ..., b_K`` of a law about its mean (eq. (14.40)),
    from its moments ``m_0, ..., m_N``, ``K <= N`` the orders whose moments about the
    mean the binomial transform resolves (``CENTRAL_MOMENT_RTOL`` of
    ``(FAR_FACTOR radius)**k``);
    None where they are not finite or not even ``b_2`` is resolved."""
    m = np.asarray(moments, dtype=float)
    n = m.size - 1
    # moments about the mean by the binomial transform, with its rounding bound
    terms = [[math.comb(k, j) * m[j] * (-mean) ** (k - j) for j in range(k + 1)]
             for k in range(n + 1)]
    c = np.array([sum(t) for t in terms])
    bound = np.array([(k + 2) * _EPS * sum(abs(v) for v in t) for k, t in enumerate(terms)])
    with np.errstate(over="ignore", invalid="ignore"):
        resolved = bound[2:] <= CENTRAL_MOMENT_RTOL * (FAR_FACTOR * radius) ** np.arange(2, n + 1)
    n = 1 + (int(np.argmin(resolved)) if not resolved.all() else resolved.size)
    if n < 2:
        return None
    c = c[:n + 1]
    c[1] = 0.0
    b = np.zeros(n + 1)
    for k in range(2, n + 1):
        b[k] = c[k] - sum(b[j] * c[k - j] for j in range(2, k - 1))
    out = b[2:]
    return out if np.isfinite(out).all() else None


def _branch_atom(law, k):
    """``(location, mass)`` of the atom on branch ``k`` of ``law``, or None."""
    left, right, _, _ = law.branches[k]
    sel = (law.atoms > left) & (law.atoms < right)
    if not sel.any():
        return None
    j = int(np.argmax(sel))
    return float(law.atoms[j]), float(law.masses[j])


def _tails(laws, key, lo, hi):
    """Values of ``f`` beyond the common samples ``[lo, hi]`` of curve ``key`` (one
    branch of each of ``laws``) where one branch ends at a zero ``q`` of ``G`` and all
    the others are unbounded (eq. (14.38)): there eq. (14.50) decays as ``C/f**2``,
    ``C = 1/|G'(q)| - sum of the others' variances``, and its last zero can lie
    beyond the samples; geometric values out to where ``C/f**2`` is ``TAIL_FACTOR``
    times the margin, and beyond ``spread**2/sqrt|C|``."""
    out = []
    spread = max(law.spread for law in laws)
    for side, last in ((-1, lo), (1, hi)):
        ends = [law.end(k, side) for law, k in zip(laws, key)]
        kinds = [kind for kind, _ in ends]
        if sorted(kinds) != ["zero"] + ["inf"] * (len(laws) - 1) or last == 0.0:
            continue
        i = kinds.index("zero")
        c = 1.0 / laws[i].pole_slope(ends[i][1]) - sum(
            law.var for j, law in enumerate(laws) if j != i)
        if c == 0.0:
            continue
        far = max(np.sqrt(TAIL_FACTOR) * spread ** 2 / np.sqrt(abs(c)),
                  np.sqrt(abs(c) / (TAIL_FACTOR * S_MARGIN)))
        if far > abs(last):
            out.append(side * np.geomspace(abs(last), far, TAIL_SAMPLES + 1)[1:])
    return np.concatenate(out) if out else np.empty(0)


def _limit(ends, side, key):
    """``lim x`` as ``f -> side * oo`` on curve ``key`` whose branches end as ``ends``
    (``(kind, value)``, kinds ``"inf"`` or ``"zero"``; eq. (14.38))."""
    kinds = [kind for kind, _ in ends]
    if all(kind == "inf" for kind in kinds):
        return side * np.inf
    if kinds.count("zero") == 1:
        # omega - f -> the mean on the unbounded branches, a zero of G on the other
        return sum(v for _, v in ends)
    # two or more at zeros: s -> 1 - (number of zeros) < 0 there, so no gap reaches this end
    raise ConvergenceError(
        f"eq. (14.50) is positive at the end of the inner curve {key}: the samples "
        f"do not reach its limit (theory eq. (14.38))")
