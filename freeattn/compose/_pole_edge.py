"""The density next to a pole edge of ``a ⊞ b`` or ``a ⊠ b``, in offsets from two atoms
(theory section 14.27, eqs. (14.30)-(14.33)).

At a pole edge ``x_e`` (where the density diverges as ``|x - x_e|**(-1/2)``, not at 0)
both subordination points tend to atoms: ``omega_a -> alpha`` of ``a`` and
``omega_b -> beta`` of ``b`` with masses summing to 1, ``x_e = alpha + beta`` (⊞) or
``alpha beta`` (⊠).  The fixed point of eqs. (14.1)/(14.4) is solved there with
unknowns of size ``|alpha|`` whose relevant part is their offset ``~ sqrt|x - x_e|``
from the atom, so it keeps only the digits of ``|x - x_e|`` (the arcsine's density
was ``6e-6`` off at ``1e-10`` of its edges, the free projections' product ``5e-4``).
Here the unknown is the offset ``s_a = omega_a - alpha`` itself and every term of the
residual is a product of small quantities, each computed to a relative rounding.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ..laws._elementary import PointMasses
from ._fixed_point import polish_newton

__all__ = ["PoleEdge", "pole_candidates", "pole_edge_pair"]

_EPS = float(np.finfo(float).eps)
#: Distance from a pole edge, as a fraction of its band's width, within which the
#: density is solved by the offset model (the general solve keeps about
#: ``1e-15 w / |x - x_e|`` of its digits there, ``1e-13`` at this boundary).
POLE_MODEL_REACH = 1e-2
#: ... and within this fraction of the distance from the edge to the support's next
#: edge its Newton starts from the sqrt scaling of one reference point there
#: (farther out, from the general solve at the point: beside a gap of 2.5e-3 of the
#: band's width one reference at 1e-2 of it started 10% off and went to another root).
POLE_MODEL_NEAR = 1e-2
#: Largest relative move of a far point's offset from the general solve's start:
#: beyond it the model's Newton went to another root.
POLE_FAR_MOVE = 1e-3
#: A pair of atoms whose sum (⊞) or product (⊠) is within this of the edge,
#: relative to the band's scale, is the pair of the pole edge.
POLE_PAIR_RTOL = 1e-9
#: Masses of two atoms within this of summing to 1 make a candidate pole edge
#: (:func:`pole_candidates`).
POLE_MASS_ATOL = 1e-9
#: Newton steps of the offset model, and the relative step at which a point has
#: converged (a few roundings of the offset).
POLE_NEWTON_STEPS = 40
POLE_STEP_RTOL = 16 * _EPS
#: A step longer than this times the previous one stops a point (rounding noise).
POLE_STALL_RATIO = 1.0
#: A point is solved where its residual is within this of the sum of its terms'
#: moduli (a few roundings of each of the seven terms of eq. (14.33)).
POLE_RESIDUAL_FLOOR = 32 * _EPS
#: Ratio of successive distances of the continuation ladder
#: (:meth:`PoleEdge._ladder_to`), from ``reach`` towards the edge; each rung starts
#: from the last one extrapolated by the exponent of the last two.
POLE_LADDER_RATIO = 1e-2
#: A rung's offset must have ``Im s_a`` above this fraction of ``|s_a|``: a root whose
#: offset is real to that accuracy lies on another sheet (a real root off the support).
POLE_LADDER_MIN_PHASE = 1e-6
#: Times a rung that fails is retried at the square root of its ratio.
POLE_LADDER_RETRIES = 6


class _AtomOffset:
    """``F(atom + s)`` of one constituent as a function of the offset ``s`` (eq. (14.30)).

    With ``R(w) = G(w) - m/(w - atom)`` (the rest of the law's Cauchy transform,
    analytic at the atom), ``F(atom + s) = s/(m + s R) = s/m + s**2 rho``,
    ``rho = -R/(m (m + s R))``.  For a discrete law ``R`` is summed over the other
    atoms (no cancellation); otherwise it is ``G - m/(w - atom)``, whose rounding
    ``eps m/|s|`` enters ``F`` multiplied by ``s**2``.
    """

    def __init__(self, law, atom, mass, cauchy_pair):
        self.atom, self.mass = float(atom), float(mass)
        self.law = law
        self._cauchy_pair = cauchy_pair
        if isinstance(law, PointMasses):
            keep = law.values != atom
            self._rest = (np.asarray(law.values[keep], dtype=float),
                          np.asarray(law.weights[keep], dtype=float))
        else:
            self._rest = None

    def rest(self, s):
        """``(R, R')`` at ``atom + s``."""
        w = self.atom + s
        if self._rest is not None:
            vals, wts = self._rest
            r = np.empty(s.shape, dtype=complex)
            dr = np.empty(s.shape, dtype=complex)
            rows = max(1, 2 ** 15 // max(vals.size, 1))
            for i in range(0, s.size, rows):
                x = 1.0 / (w[i:i + rows, None] - vals[None, :])
                r[i:i + rows] = x @ wts
                dr[i:i + rows] = -(x * x) @ wts
            return r, dr
        g, dg = self._cauchy_pair(self.law, w)
        sp = w - self.atom          # exact next to the atom (Sterbenz)
        return g - self.mass / sp, dg + self.mass / (sp * sp)

    def values(self, s):
        """``(s/m, s**2 rho, F', F)`` at offsets ``s`` (complex, 1-d)."""
        r, dr = self.rest(s)
        m = self.mass
        den = m + s * r
        rho = -r / (m * den)
        quad = s * s * rho
        lin = s / m
        return lin, quad, (m - s * s * dr) / (den * den), lin + quad


class PoleEdge:
    """The subordination equations at a pole edge in offsets from its two atoms.

    Parameters
    ----------
    a, b : SpectralLaw
        The constituents, in the order of the law's formulation.
    alpha, m_alpha : float
        The atom of ``a`` that its subordination point tends to, and its mass.
    beta, m_beta : float
        The same for ``b``.
    multiplicative : bool
    edge : float
        The support's edge: the float nearest ``alpha + beta`` (``alpha beta``).
    side : int
        -1 when the band lies below the edge (an upper edge), +1 above it.
    reach : float
        Largest ``|x - x_e|`` that the model serves.
    near : float
        Largest ``|x - x_e|`` at which its Newton starts from the scaled reference
        point (at ``near`` from the edge) instead of the general solve.
    regular : callable
        ``regular(x)`` returns ``omega_a - alpha`` (``1/w - alpha`` for ⊠) at real
        points ``x`` inside the band by the general solve: the start of the
        reference point and of the points beyond ``near``.
    cauchy_pair : callable
        ``cauchy_pair(law, u)`` returns ``(G, G')``.
    """

    def __init__(self, a, alpha, m_alpha, b, beta, m_beta, multiplicative, edge, side, reach,
                 near, regular, cauchy_pair):
        self.oa = _AtomOffset(a, alpha, m_alpha, cauchy_pair)
        self.ob = _AtomOffset(b, beta, m_beta, cauchy_pair)
        self.multiplicative = multiplicative
        self.side, self.reach, self.near = int(side), float(reach), float(near)
        self.edge = float(edge)
        # eq. (14.31): the coefficient of the offset's linear term, 0 when the masses
        # sum to 1; the larger mass minus 1, then plus the smaller, are exact
        # (Sterbenz) when they sum to about 1
        big, small = max(m_alpha, m_beta), min(m_alpha, m_beta)
        self.kappa = ((big - 1.0) + small) / (m_alpha * m_beta)
        self._regular = regular
        self._reference = None
        #: The continuation ladder: rungs ``(|delta|, s1)``, distances decreasing.
        self._rungs = []

    def serves(self, x):
        """The points of ``x`` inside the band within ``reach`` of the edge."""
        d = self.offset(x)
        return (self.side * d > 0) & (np.abs(d) <= self.reach)

    def offset(self, x):
        """``x - x_e`` for the float edge ``x_e`` of the support (exact next to it).

        The model is solved at ``x + (x_e* - x_e)``, ``x_e*`` the exact sum or product
        of the atoms: the density translated by less than an ulp of the edge, which
        the Chebyshev panels (whose edge is the float ``x_e``) then fit exactly
        (theory section 14.27).
        """
        return np.asarray(x, dtype=float) - self.edge

    def residual(self, s1, delta, x):
        """The residual of eq. (14.32) (⊞) or (14.33) (⊠), its derivative in ``s1``,
        ``F_a``, ``s2`` and the sum of its terms' moduli (the scale of its rounding)."""
        oa, ob, kappa = self.oa, self.ob, self.kappa
        _, quad1, df1, f1 = oa.values(s1)
        mb = ob.mass
        e1 = s1 * ((1.0 - oa.mass) / oa.mass) + quad1           # F_a - s1
        if not self.multiplicative:
            s2 = delta + e1
            _, quad2, df2, f2 = ob.values(s2)
            terms = (kappa * s1, -delta / mb, quad1 * (1.0 - 1.0 / mb), -quad2)
            dres = df1 - df2 * (df1 - 1.0)
        else:
            alpha, beta = oa.atom, ob.atom
            den = alpha - e1
            s2 = (delta + beta * e1) / den
            _, quad2, df2, f2 = ob.values(s2)
            terms = (beta * kappa * s1, beta * quad1 * (1.0 - 1.0 / mb), -delta / mb,
                     -s2 * e1 / mb, -alpha * quad2, s2 * f1, -s1 * f2)
            ds2 = (df1 - 1.0) * x / (den * den)
            dres = ds2 * f1 + (beta + s2) * df1 - f2 - (alpha + s1) * df2 * ds2
        res = sum(terms)
        size = sum(np.abs(t) for t in terms)
        return res, dres, f1, s2, size

    def _newton(self, s1, delta, x):
        """Newton on the residual from ``s1`` (the shared undamped polish, until a step
        is a few roundings or stops shrinking); solved where the residual is at the
        rounding of its terms."""
        def step_of(s, idx):
            res, dres = self.residual(s, delta[idx], x[idx])[:2]
            return res / dres
        with np.errstate(all="ignore"):
            s1 = polish_newton(step_of, np.array(s1, dtype=complex), POLE_NEWTON_STEPS,
                               POLE_STEP_RTOL, POLE_STALL_RATIO)
            res, _, f1, s2, size = self.residual(s1, delta, x)
            ok = np.isfinite(s1) & (np.abs(res) <= POLE_RESIDUAL_FLOOR * size)
        return s1, f1, s2, ok

    def _reference_point(self):
        """``(delta, s1)`` at ``near`` from the edge, by the general solve polished by
        the offset model's Newton."""
        if self._reference is None:
            x = np.array([self.edge + self.side * self.near])
            delta = self.offset(x)
            start = self._regular(x)
            s1, _, _, ok = self._newton(start, delta, x)
            if not ok.all() or not s1[0].imag > 0:
                raise ConvergenceError(
                    f"the offset model of the pole edge at {self.edge!r} (theory eqs. "
                    f"(14.32)-(14.33)) did not converge at its reference point "
                    f"x = {float(x[0])!r} from the general solve's offset "
                    f"{complex(start[0])!r}", point=float(x[0]))
            self._reference = (float(delta[0]), complex(s1[0]))
        return self._reference

    def _solve_at(self, delta, start):
        """Newton from ``start`` at the distances ``delta`` (signed); the offsets, ``G``
        and whether each point is on the Stieltjes branch."""
        x = self.edge + delta
        s1, f1, s2, ok = self._newton(start, delta, x)
        with np.errstate(all="ignore"):
            if self.multiplicative:
                g = (self.oa.atom + s1) / (x * f1)
            else:
                g = 1.0 / f1
            ok &= (s1.imag > 0) & (s2.imag >= 0) & np.isfinite(g) & (g.imag <= 0)
        return s1, s2, g, ok

    def _ladder_to(self, dmin):
        """The continuation ladder down to a distance below ``dmin`` (theory section 14.27).

        Next to a pole edge that faces another one across a narrow gap the offsets
        follow ``sqrt(delta)`` only far closer to the edge than the reference point,
        and the scaled start lands on another root.  The ladder instead starts at
        ``reach`` from the general solve and walks towards the edge by
        ``POLE_LADDER_RATIO``, each rung's Newton starting from the last rung
        extrapolated by the exponent of the last two (``s ~ delta**p``, ``p``
        complex), a failed rung retried at a smaller step.
        """
        rungs = self._rungs
        if not rungs:
            d0 = np.array([self.side * self.reach])
            start = self._regular(self.edge + d0)
            s1, _, _, ok = self._solve_at(d0, start)
            if not ok.all():
                raise ConvergenceError(
                    f"the offset model of the pole edge at {self.edge!r} (theory eqs. "
                    f"(14.32)-(14.33)) did not converge at x = {float(self.edge + d0[0])!r} "
                    f"from the general solve's offset {complex(start[0])!r}",
                    point=float(self.edge + d0[0]))
            rungs.append((self.reach, complex(s1[0])))
        # at least two rungs: the starts between them are a power law in the distance
        while len(rungs) < 2 or rungs[-1][0] > dmin:
            d_last, s_last = rungs[-1]
            p = 0.5
            if len(rungs) >= 2:
                d_prev, s_prev = rungs[-2]
                p = np.log(s_last / s_prev) / np.log(d_last / d_prev)
            ratio = POLE_LADDER_RATIO
            for _ in range(POLE_LADDER_RETRIES + 1):
                d = d_last * ratio
                start = np.array([s_last * np.exp(p * np.log(ratio))])
                s1, _, _, ok = self._solve_at(np.array([self.side * d]), start)
                # a nearly real offset is a root off the support (another sheet)
                if ok.all() and s1[0].imag > POLE_LADDER_MIN_PHASE * abs(s1[0]):
                    rungs.append((d, complex(s1[0])))
                    break
                ratio = np.sqrt(ratio)
            else:
                raise ConvergenceError(
                    f"the offset model of the pole edge at {self.edge!r} (theory eqs. "
                    f"(14.32)-(14.33)) did not converge on its continuation ladder: "
                    f"stalled at a distance {d_last!r} from the edge",
                    point=float(self.edge + self.side * d_last))
        return rungs

    def _ladder_start(self, delta):
        """Starts at the distances ``delta`` interpolated on the ladder (a power law
        between the two rungs that bracket each)."""
        d = np.abs(delta)
        rungs = self._ladder_to(float(d.min()))
        dist = np.array([r[0] for r in rungs])
        offs = np.array([r[1] for r in rungs])
        # rung k with dist[k] >= d > dist[k + 1] (dist decreasing)
        k = np.clip(np.searchsorted(-dist, -d, side="right") - 1, 0, dist.size - 2)
        p = np.log(offs[k + 1] / offs[k]) / np.log(dist[k + 1] / dist[k])
        return offs[k] * np.exp(p * np.log(d / dist[k]))

    def cauchy(self, x):
        """``G(x + i0)`` at real points ``x`` that :meth:`serves`, and where it is solved.

        Within ``near`` of the edge Newton starts from the reference point's offset
        scaled by ``sqrt(delta/delta_ref)`` (the offsets grow as ``sqrt(delta)``,
        eq. (14.31)), and a point it does not solve raises ``ConvergenceError``;
        farther out it starts from the general solve at the point itself (which
        keeps ``~ eps w/|delta|`` there, a start within the model's reach of its
        root), and the points it does not solve are returned as not solved (the
        general solve's value stands there).
        """
        x = np.asarray(x, dtype=float)
        delta = self.offset(x)
        near = np.abs(delta) <= self.near
        start = np.empty(x.shape, dtype=complex)
        reference = True
        if near.any():
            try:
                d_ref, s_ref = self._reference_point()
                start[near] = s_ref * np.sqrt(delta[near] / d_ref)
            except ConvergenceError:
                reference = False
                start[near] = self._ladder_start(delta[near])
        if not near.all():
            start[~near] = self._regular(x[~near])
        s1, s2, g, ok = self._solve_at(delta, start)
        # a far point's root stays next to the general solve's start
        with np.errstate(all="ignore"):
            ok &= near | (np.abs(s1 - start) <= POLE_FAR_MOVE * np.abs(start))
        missed = np.flatnonzero(near & ~ok)
        if missed.size and reference:
            # the sqrt scaling of the reference did not hold there: the ladder
            ls1, ls2, lg, lok = self._solve_at(delta[missed], self._ladder_start(delta[missed]))
            s1[missed], s2[missed], g[missed], ok[missed] = ls1, ls2, lg, lok
        if not (ok | ~near).all():
            k = int(np.argmax(near & ~ok))
            raise ConvergenceError(
                f"the offset model of the pole edge at {self.edge!r} (theory eqs. "
                f"(14.32)-(14.33)) did not converge to the Stieltjes branch at "
                f"x = {float(x[k])!r}: offsets {complex(s1[k])!r}, {complex(s2[k])!r}",
                point=float(x[k]))
        return g, ok


def pole_edge_pair(a, b, edge, multiplicative, scale):
    """The atoms ``(alpha, m_alpha, beta, m_beta)`` of ``a`` and ``b`` whose sum (⊞) or
    product (⊠) is the pole edge ``edge`` (within ``POLE_PAIR_RTOL * scale``): of those
    whose masses sum to 1 (within ``POLE_MASS_ATOL``) the nearest to the edge, else
    the one with the masses closest to summing to 1; None without such a pair."""
    la, ma = a.atoms()
    lb, mb = b.atoms()
    if not (la.size and lb.size):
        return None
    best = None
    for alpha, m_alpha in zip(la.tolist(), ma.tolist()):
        if multiplicative:
            if alpha == 0.0:
                continue
            target = edge / alpha
        else:
            target = edge - alpha
        j = int(np.clip(np.searchsorted(lb, target), 1, lb.size - 1)) if lb.size > 1 else 0
        cand = [j - 1, j] if lb.size > 1 else [0]
        for k in cand:
            beta = float(lb[k])
            x = alpha * beta if multiplicative else alpha + beta
            if abs(x - edge) > POLE_PAIR_RTOL * scale:
                continue
            miss = abs(m_alpha + float(mb[k]) - 1.0)
            # masses summing to 1 first, then the pair nearest the edge (two pole edges
            # 1e-10 apart are both within the tolerance of either), then the masses
            key = (miss > POLE_MASS_ATOL, abs(x - edge), miss)
            if best is None or key < best[0]:
                best = (key, (alpha, m_alpha, beta, float(mb[k])))
    return None if best is None else best[1]


def pole_candidates(a, b, multiplicative):
    """The sums (⊞) or products (⊠) of the atoms of ``a`` and ``b`` whose masses sum
    to 1 within ``POLE_MASS_ATOL``: where ``a ⊞ b`` (``a ⊠ b``) may have a pole edge
    (section 14.27), a gap of the support beside it included.  Sorted, 0 excluded
    for ⊠ (its hard edge)."""
    la, ma = a.atoms()
    lb, mb = b.atoms()
    if not (la.size and lb.size) or ma.max() + mb.max() < 1.0 - POLE_MASS_ATOL:
        return np.empty(0)
    # only atoms heavy enough to pair with the other law's heaviest
    ia = np.flatnonzero(ma >= 1.0 - mb.max() - POLE_MASS_ATOL)
    ib = np.flatnonzero(mb >= 1.0 - ma.max() - POLE_MASS_ATOL)
    pa, pb = la[ia][:, None], lb[ib][None, :]
    hit = np.abs(ma[ia][:, None] + mb[ib][None, :] - 1.0) <= POLE_MASS_ATOL
    x = (pa * pb if multiplicative else pa + pb)[hit]
    if multiplicative:
        x = x[x != 0.0]
    return np.unique(x)
