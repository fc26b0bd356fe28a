"""The generic solver of composed laws: Newton with continuation in ``Im z`` (theory section 8.4).

For a level over a constituent known only through its Cauchy transform,
``Phi(tau) = z`` is solved by Newton's method continued from ``4|z|`` down
(eq. (8.10)); the edges are the zeros of ``Phi'`` on the gaps of the
constituent's support.  Used by
:class:`freeattn.compose._subordination.SubordinationLaw`.

Nothing in this module prints or does I/O.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ..laws._law_base import SOFT

from ._fixed_point import FixedPointProblem, newton
from ._rational_solver import _EPS, _TINY, _snap_hard_edge

__all__ = ["GenericSolver"]

#: Continuation of the generic solver: ``Im z`` shrinks by this factor per stage
#: from ``4 |z|`` down to ``CONTINUATION_FLOOR * scale``, then the target itself
#: is solved from there (the solution is continuous up to the real axis).
CONTINUATION_FACTOR = 0.25
CONTINUATION_FLOOR = 1e-7
#: Relative error to which Newton solves the continuation's intermediate stages: each
#: is only the next stage's start, which Newton's quadratic convergence needs close,
#: not exact; the target itself is solved to ``options.newton_rtol``.
CONTINUATION_STAGE_RTOL = 1e-3
#: The continuation starts where Newton from the level's large-``|z|`` guess lands within
#: this fraction of its root (eq. (8.39)) ...
START_GUESS_RTOL = 0.25
#: ... raising the start's height by this factor ...
START_LIFT = 8.0
#: ... at most this many times.
START_LIFTS = 6

#: Relative size (to ``Phi'`` at infinity) below which a sampled derivative of
#: the inverse map counts as not positive in the generic support search.
DPHI_FLOOR = 1e-10

#: Ratio of successive distances of the points added at a finite gap end
#: (theory eq. (8.32)): from the Chebyshev grid's closest point towards the end.
GAP_END_RATIO = 0.25
#: They stop at this distance relative to an end ``e != 0`` (``|e|`` times
#: 1e4 ulps: closer, ``Phi'`` is rounding) ...
GAP_END_RTOL = 1e4 * np.finfo(float).eps
#: ... and at ``GAP_END_BAND_RTOL`` of the width of the constituent's band at the end
#: (an atom: width 0) ...
GAP_END_BAND_RTOL = 1e-6
#: ... and relative to the constituent's scale at an end at 0, where ``tau``
#: keeps its relative digits (the attention law at ``beta = 1e-8`` grades down to
#: 1.7e-25 of its support, theory section 6.8).
GAP_END_ZERO_FLOOR = 1e-30

# --------------------------------------------------------------------------- #
# Generic solver (any constituent)
# --------------------------------------------------------------------------- #

class _InverseMap(FixedPointProblem):
    """``Phi(tau) = z`` (eq. (8.10)) as the fixed-point problem
    ``tau = tau - (Phi(tau) - z) / s`` with ``s = Phi'(oo)``.

    Dividing by ``s`` keeps the residual in the units of ``tau`` (the
    tolerances of :func:`~._fixed_point.newton` are relative to ``|tau|``);
    the Newton step ``(Phi - z) / Phi'`` does not depend on ``s``.
    """

    sign = 1

    #: Tolerances purely relative to ``|tau|`` (no absolute floor at the support's
    #: scale): next to a hard edge at 0 the subordination point is small and needs
    #: its relative digits.
    scale = 0.0

    def __init__(self, solver, slope):
        self._solver = solver
        self._slope = slope

    def phi(self, tau, z):
        zz, _, dz, _ = self._solver._phi(tau)
        return tau - (zz - z) / self._slope, 1.0 - dz / self._slope


class GenericSolver:
    """Newton's method on ``Phi(tau) = z`` with continuation in ``Im z`` (eq. (8.10)).

    Needs only the constituent's Stieltjes transform and its derivative; used
    when the tower is not rational (a constituent known only through its
    transform, a numerical R- or S-transform) or its degree is too high.
    """

    def __init__(self, level, constituent, options):
        self.level = level
        self.constituent = constituent
        self.options = options
        lo, hi = constituent.support()
        self.scale = max(abs(lo), abs(hi), 1e-300)

    def _phi(self, tau, with_constituent=False):
        # a nested constituent asked far beyond its support: its moment series there
        # (eq. (14.47)), as for any host
        gb, dgb = self.constituent._pair_or_far(tau)
        out = self.level.apply(tau, gb, np.ones_like(tau), dgb)
        return (out, gb) if with_constituent else out

    def solve(self, z, guess=None):
        """``(tau, G)`` at each ``z`` (1-d complex, ``Im z >= 0``)."""
        opts = self.options
        scale = max(self.scale, 1e-300)
        zabs = np.maximum(np.abs(z), scale)
        eta0 = 4.0 * zabs
        if guess is None:
            tau, eta0 = self._first_stage(z, eta0)
        else:
            tau = np.asarray(guess, complex)
        stages = []
        if guess is None:
            # (the first stage, at eta0, is solved)
            eta = eta0 * CONTINUATION_FACTOR
            for _ in range(opts.continuation_stages - 1):
                stages.append(eta)
                eta = eta * CONTINUATION_FACTOR
                if np.all(eta < CONTINUATION_FLOOR * scale):
                    break
        for eta in stages + [None]:
            zk = z if eta is None else z.real + 1j * np.maximum(eta, z.imag)
            if eta is not None and np.all(eta <= z.imag):
                continue
            tau = self._newton(tau, zk, None if eta is None else CONTINUATION_STAGE_RTOL)
        zz, g, dz, _ = self._phi(tau)
        res = np.abs(zz - z) / (np.abs(z) + scale)
        bad = ~np.isfinite(res) | (res > opts.branch_rtol) | (tau.imag < -opts.branch_rtol
                                                               * np.abs(tau))
        # A real subordination point is the Stieltjes value only where the map
        # increases (eq. (8.11)); a real root on a decreasing branch is spurious.
        real = tau.imag <= opts.real_root_rtol * np.abs(tau)
        bad |= real & (dz.real <= 0)
        if bad.any():
            if guess is not None:
                tau2, g2 = self.solve(z[bad])
                tau[bad], g[bad] = tau2, g2
                return tau, g
            k = int(np.argmax(bad))
            raise ConvergenceError(
                f"subordination equation not solved at z={z[k]!r}: relative residual "
                f"{res[k]:.3e} (tolerance {opts.branch_rtol:.1e}), tau={tau[k]!r}",
                point=z[k], residual=float(res[k]), tolerance=opts.branch_rtol)
        return tau, g

    def _first_stage(self, z, eta0):
        """The continuation's start (eq. (8.39)): Newton at ``x + i eta0`` from the
        level's large-``|z|`` guess, the height raised ``START_LIFT``-fold (up to
        ``START_LIFTS`` times) where the root lies farther than ``START_GUESS_RTOL``
        from the guess: the level's own spread (an S-level whose partner is a product
        reaching 50 over atoms on ``[1.1, 4.6]``) can put ``4 |z|`` below the reach of
        the guess, and Newton from there found another branch.  ``(tau, eta0)``."""
        eta0 = np.array(eta0, dtype=float)
        todo = np.arange(z.size)
        tau = np.empty(z.shape, dtype=complex)
        for lift in range(START_LIFTS + 1):
            zk = z.real[todo] + 1j * eta0[todo]
            start = self.level.guess(zk)
            root = self._newton(start, zk, CONTINUATION_STAGE_RTOL)
            tau[todo] = root
            with np.errstate(all="ignore"):
                far = ~(np.abs(root - start) <= START_GUESS_RTOL * np.abs(root))
            if lift == START_LIFTS or not far.any():
                break
            todo = todo[far]
            eta0[todo] *= START_LIFT
        return tau, eta0

    def _newton(self, tau, zk, rtol=None):
        """Newton on ``Phi(tau) = zk`` by the shared strategy :func:`~._fixed_point.newton`.

        The inverse-map equation is the fixed-point problem
        ``tau = tau - (Phi(tau) - zk) / Phi'(oo)`` (:class:`_InverseMap`), whose
        Newton step is ``(Phi - zk) / Phi'``; a step that would leave the upper
        half-plane is projected onto the real axis, and a step that raises the
        residual is halved.
        """
        problem = _InverseMap(self, self._dphi_infinity())
        return newton(problem, zk, np.asarray(tau, dtype=complex),
                      max_steps=self.options.newton_max_iter,
                      rtol=self.options.newton_rtol if rtol is None else rtol).value

    # -- the support ---------------------------------------------------------------------
    def support(self):
        """Support from the zeros of ``Phi'`` on the gaps of the constituent (eq. (8.12)).

        An end of an increasing run is a zero of ``Phi'`` (a soft edge of the
        law) or an end of the gap; a gap end that is an edge of the
        constituent is mapped diffeomorphically (``Phi' > 0`` there), so the
        law's edge keeps the constituent's exponent (eq. (8.13)).
        """
        b = self.constituent
        opts = self.options
        pieces = []                       # (x_left, x_right, exponent_left, exponent_right)
        floor = DPHI_FLOOR * self._dphi_infinity()
        for glo, ghi, e_glo, e_ghi in _gaps(b):
            taus = _gap_grid(glo, ghi, opts.critical_grid, self.scale)
            taus = _ray_reach_points(taus, glo, ghi, self.scale, self.level.ray_reach())
            # one evaluation of the constituent for both tests (its transform can
            # be the expensive part: a system solved per point)
            tc = taus.astype(complex)
            (z, g, dz, _), gb = self._phi(tc, with_constituent=True)
            pos = (dz.real > floor) & self._partner_valid(tc, z, g, gb)
            taus, pos = self._refine_ends(glo, ghi, taus, pos, floor, (e_glo, e_ghi))
            for i, j in _runs(pos):
                if i == 0:
                    left, e_left = glo, e_glo
                else:
                    left, e_left = self._zero(taus[i - 1], taus[i]), SOFT
                if j == taus.size - 1:
                    right, e_right = ghi, e_ghi
                else:
                    right, e_right = self._zero(taus[j], taus[j + 1]), SOFT
                xl, xr = self._phi_real_limit(left, +1), self._phi_real_limit(right, -1)
                # the piece's rounding: the terms of Phi at its ends (eq. (8.8):
                # z = tau + (z - tau)), bounded by twice its ends' z and tau
                size = max((abs(v) for v in (xl, xr, left, right) if np.isfinite(v)),
                           default=0.0)
                if not (xr - xl > opts.edge_merge_rtol * size):
                    continue
                pieces.append((xl, xr, e_left, e_right))
        pieces.sort(key=lambda p: p[0])
        merged = []
        for p in pieces:
            if merged and p[0] <= merged[-1][1]:
                if p[1] > merged[-1][1]:
                    merged[-1] = (merged[-1][0], p[1], merged[-1][2], p[3])
            else:
                merged.append(p)
        if not merged or merged[0][0] != -np.inf or merged[-1][1] != np.inf:
            raise ConvergenceError(f"the outside of the support found from Phi' does not reach "
                                   f"+-infinity: {[(p[0], p[1]) for p in merged]}")
        out = []
        for left, right in zip(merged[:-1], merged[1:]):
            lo, hi = left[1], right[0]
            if hi - lo <= opts.edge_merge_rtol * max(abs(lo), abs(hi), _TINY):
                continue
            out.append([float(lo), float(hi), SOFT if left[3] is None else left[3],
                        SOFT if right[2] is None else right[2]])
        return _snap_hard_edge(out, self.level.hard_edge(b), opts)

    def _refine_ends(self, glo, ghi, taus, pos, floor, exponents=(None, None)):
        """The gap grid with geometric points towards each finite end (eq. (8.32)).

        A constituent with structure far below its scale (a band of width 1e-11
        at 0 under a support reaching 4e-5) puts a zero of ``Phi'`` closer to a gap
        end than the Chebyshev grid's closest point (``1e-5`` of the gap); the
        grid then reads one increasing run up to the end, and the law gets an
        edge at ``Phi(end)`` where its density is still 0.  Where the grid's run
        reaches an end (``Phi' > 0`` at its closest point), points at
        ``GAP_END_RATIO``-fold shrinking distances from the grid's closest point,
        down to ``GAP_END_BAND_RTOL`` of the width of the constituent's band at the
        end (and no further than ``GAP_END_RTOL |e|``, or ``GAP_END_ZERO_FLOOR``
        times the scale at ``e = 0``), bracket it.  (Deeper points cost solves of a
        nested constituent next to its edge, which also fill its tables of warm
        starts with points the rest of the support never needs.)  An end whose
        points the constituent cannot evaluate (its solver raises, or ``Phi'`` is
        not finite there) keeps the plain grid.  At a square-root end of the
        constituent away from 0 (``exponents``, the constituent's at ``glo``, ``ghi``)
        ``G_b'`` diverges, so an R-level's ``Phi'`` has a zero before the end: the
        points go on down to the rounding floor ``GAP_END_RTOL |e|`` (theory eq. (8.35));
        so they do at a hard end (exponent -1/2), where ``G_b`` itself diverges,
        and at an end at 0, down to ``GAP_END_ZERO_FLOOR`` times the scale (theory
        eq. (8.37)).
        Returns the grid and its sign mask, sorted.
        """
        parts_t, parts_p = [taus], [pos]
        for end, nearest, side, reaches, exponent in (
                (glo, taus[0], 1.0, pos[0], exponents[0]),
                (ghi, taus[-1], -1.0, pos[-1], exponents[1])):
            if not (np.isfinite(end) and reaches):
                continue
            # the structure beside the end is as fine as the constituent's piece there:
            # down to GAP_END_BAND_RTOL of its width, not below the rounding floors
            width = _adjacent_width(self.constituent, end)
            stop = max(GAP_END_BAND_RTOL * width,
                       GAP_END_RTOL * abs(end) if end != 0 else GAP_END_ZERO_FLOOR * self.scale)
            if exponent is not None and exponent < 1 and self.level.fold_before_soft_end:
                # G_b' diverges at the end (a square-root end, eq. (8.35); a hard
                # end, eq. (8.37)): the fold is there, to the rounding floor
                stop = GAP_END_RTOL * abs(end) if end != 0 else GAP_END_ZERO_FLOOR * self.scale
            d0 = abs(nearest - end)
            count = int(np.floor(np.log(stop / d0) / np.log(GAP_END_RATIO))) if d0 > stop else 0
            if count < 1:
                continue
            t = end + side * d0 * GAP_END_RATIO ** np.arange(1, count + 1)
            t = t[(t - end) * side > 0]
            try:
                with np.errstate(all="ignore"):
                    tc = t.astype(complex)
                    (z, g, dz, _), gb = self._phi(tc, with_constituent=True)
                    ok = np.isfinite(dz) & np.isfinite(z)
                    p = (dz.real > floor) & self._partner_valid(tc, z, g, gb)
            except ConvergenceError:
                continue
            parts_t.append(t[ok])
            parts_p.append(p[ok])
        if len(parts_t) == 1:
            return taus, pos
        t = np.concatenate(parts_t)
        order = np.argsort(t, kind="stable")
        return t[order], np.concatenate(parts_p)[order]

    def _partner_valid(self, tau, z, g, gb):
        """The partner's subordination point is on its true branch (eq. (8.11)).

        ``z, g`` are ``Phi(tau)`` and the law's transform there, ``gb`` the
        constituent's transform at ``tau``.
        """
        pt = self.level.partner_point(z, tau, gb, g)
        if pt is None:
            return np.ones(tau.shape, dtype=bool)
        ok = np.isfinite(pt) & np.isfinite(z)
        mism = np.where(np.isfinite(z), 0.0, np.inf)          # partner at infinity: fine
        if ok.any():
            mism[ok] = self.level.partner_check(pt[ok].real + 0j, tau[ok], gb[ok], g[ok])
        return mism <= self.options.branch_rtol

    def _dphi_infinity(self):
        return self.level.slope_at_infinity()

    def _dphi_real(self, taus):
        _, _, dz, _ = self._phi(taus.astype(complex))
        return dz.real

    def _zero(self, a, b):
        """The zero of ``Phi' - floor`` between two grid points (an edge, eq. (8.12)).

        Raises
        ------
        ConvergenceError
            If ``Phi'`` is not finite at an end or inside (the constituent's
            or partner's transform is undefined there: no edge can be
            bracketed), instead of SciPy's ``ValueError``.
        """
        from scipy.optimize import brentq

        floor = DPHI_FLOOR * self._dphi_infinity()

        def f(t):
            with np.errstate(all="ignore"):
                value = float(self._dphi_real(np.array([t]))[0]) - floor
            if not np.isfinite(value):
                raise ConvergenceError(
                    f"Phi' of {self._describe_level()} is {value!r} at tau={t!r} on the real axis: the support edge between "
                    f"tau={a!r} and {b!r} cannot be bracketed (eq. (8.12))", point=t)
            return value
        fa, fb = f(a), f(b)
        if fa * fb > 0:
            return a if abs(fa) < abs(fb) else b
        try:
            return brentq(f, a, b, xtol=4 * _EPS * max(abs(a), abs(b)), rtol=4 * _EPS)
        except (ValueError, RuntimeError) as exc:
            raise ConvergenceError(f"support edge of {self._describe_level()} between tau={a!r} "
                                   f"and {b!r} not found: {exc}", point=a) from exc

    def _describe_level(self):
        return f"{self.level.describe()} over {self.constituent._describe()}"

    def _phi_real_limit(self, tau, side):
        """``lim Phi`` at an end of an increasing run (``side=+1``: its left end).

        At an end that is an atom or an edge of the constituent, ``Phi`` is
        evaluated a few ulps inside the gap (also where the constituent's
        transform is not defined at the end: a logarithmic end, whose solver
        raises there); a value beyond ``1/eps`` times the scale is the pole's
        infinity.
        """
        if np.isinf(tau):
            return tau
        t = tau
        with np.errstate(all="ignore"):
            try:
                z = self._phi(np.array([complex(t)]))[0][0]
            except (ValueError, ConvergenceError):
                z = np.nan
            if not np.isfinite(z):
                t = tau + side * 64 * _EPS * max(abs(tau), self.scale)
                z = self._phi(np.array([complex(t)]))[0][0]
        if not np.isfinite(z) or abs(z) > self.scale / _EPS:
            return -np.inf if side > 0 else np.inf
        return float(z.real)


def _gaps(law):
    """Open gaps of the support of a law, with the density exponent at each finite end.

    Returns ``(lo, hi, exponent_at_lo, exponent_at_hi)``; an end that is an
    atom gets ``None`` (the map has a pole there), the rays ``+-inf`` get
    ``None`` too.
    """
    points = []
    for iv in law.interval_details():
        points.append((iv.lo, iv.hi, iv.lo_exponent, iv.hi_exponent))
    loc, mass = law.atoms()
    for a in loc[mass > 0]:
        points.append((a, a, None, None))
    points.sort(key=lambda p: (p[0], p[1]))
    gaps = []
    left, e_left = -np.inf, None
    for lo, hi, e_lo, e_hi in points:
        if lo > left:
            gaps.append((left, lo, e_left, e_lo))
        if hi >= left:
            left, e_left = hi, e_hi
    gaps.append((left, np.inf, e_left, None))
    return gaps


def _adjacent_width(law, end):
    """Width of ``law``'s support interval that ends at ``end`` (0 for an atom)."""
    for iv in law.interval_details():
        if iv.lo == end or iv.hi == end:
            return float(iv.hi) - float(iv.lo)
    return 0.0


def _gap_grid(lo, hi, n, scale):
    """Points inside a gap, clustered at its ends (Chebyshev-like; rays mapped)."""
    u = 0.5 * (1 - np.cos(np.pi * (np.arange(n) + 0.5) / n))      # (0, 1), clustered at ends
    if np.isinf(lo) and np.isinf(hi):
        return scale * np.tan(np.pi * (u - 0.5))
    if np.isinf(lo):
        return hi - 4 * scale * (1 - u) / u                          # increasing to hi
    if np.isinf(hi):
        return lo + 4 * scale * u / (1 - u)
    return lo + (hi - lo) * u


#: A level whose own structure reaches beyond ``RAY_REACH_RATIO`` times the
#: constituent's scale (a ⊞ with MP(1.01, 2.99), on [0.54, 7.5], over a product of
#: attention laws on [0, 9.4e-9]) gets ``RAY_REACH_PER_DECADE`` geometric points a
#: decade on each infinite gap, from where the mapped Chebyshev grid thins out
#: (``RAY_REACH_RATIO`` times the scale; with 256 points its last is at 4.3e5 times
#: the scale) to ``RAY_REACH_FAR`` times the reach: the grid alone put no point
#: between 1e-3 and infinity there, read one increasing run across the partner's
#: band and missed it (theory section 8.5).
RAY_REACH_RATIO = 1e4
RAY_REACH_PER_DECADE = 16
RAY_REACH_FAR = 1e2


def _ray_reach_points(taus, lo, hi, scale, reach):
    """``taus`` with the geometric points of ``RAY_REACH_PER_DECADE`` on infinite gaps."""
    if not reach > RAY_REACH_RATIO * scale or (np.isfinite(lo) and np.isfinite(hi)):
        return taus
    start, stop = RAY_REACH_RATIO * scale, RAY_REACH_FAR * reach
    count = int(np.ceil(np.log10(stop / start) * RAY_REACH_PER_DECADE)) + 1
    mags = np.geomspace(start, stop, count)
    extra = []
    if np.isinf(hi):
        extra.append((0.0 if np.isinf(lo) else lo) + mags)
    if np.isinf(lo):
        extra.append((0.0 if np.isinf(hi) else hi) - mags)
    return np.unique(np.concatenate([taus] + extra))


def _runs(mask):
    runs = []
    i = 0
    n = mask.size
    while i < n:
        if mask[i]:
            j = i
            while j + 1 < n and mask[j + 1]:
                j += 1
            runs.append((i, j))
            i = j + 1
        else:
            i += 1
    return runs
