"""Composable laws by subordination: sample covariance, free ⊞ and ⊠.

Every composed law here has the form (theory section 8.3)

    z = Phi(tau),  G(z) = g(tau),   tau = the subordination point in C+,

where ``Phi`` and ``g`` are built from a *constituent* law ``b`` (through its
Stieltjes transform ``G_b(tau)``) and an explicit *level* transform:

* an affine map, ``z = a + s tau``, ``G = G_b(tau)/s`` (eq. (8.7));
* an R-level (free additive convolution with a law ``a`` whose R-transform is
  known), ``z = tau + R_a(G_b(tau))``, ``G = G_b(tau)`` (eq. (8.8));
* an S-level (free multiplicative convolution with a law ``a`` whose
  S-transform is known), ``w = tau G_b(tau) - 1``, ``z = tau / S_a(w)``,
  ``G = G_b(tau) S_a(w)`` (eq. (8.9)); the sample-covariance law with ratio
  ``c`` is the S-level of ``MP(1, c)``, ``S(w) = 1/(1 + c w)``, which is
  Silverstein's equation (5.3).

When every level of a law, down to its point-mass leaves, is rational, the
Stieltjes graph ``(z, G)`` is a rational curve ``z = Z(t)``, ``G = G(t)`` in
the leaf variable ``t`` (:class:`freeattn.algebra._curve.Curve`; the levels
are in :mod:`freeattn.algebra._levels`): ``Z(t) = z`` is a polynomial
equation solved in batches (companion eigenvalues), the Stieltjes branch is
the root whose subordination points all lie in the closed upper half-plane
(eq. (8.10)), and the edges are real critical points of ``Z`` (eqs.
(8.11)-(8.12)).  Other laws use the generic Newton path with continuation in
``Im z`` (:class:`GenericSolver`), with edges from the zeros of ``Phi'`` on
the gaps of the constituent's support.

Nothing in this module prints or does I/O.
"""

import math
from fractions import Fraction

import numpy as np

from ..algebra._levels import AffineLevel, RLevel, SLevel
from ..algebra._rational import batched_roots, hval, padd, pmul, trim
from ..core._errors import ConvergenceError
from ..laws._law_base import SOFT, Interval, SpectralLaw

from ._moments import additive_series, multiplicative_series

__all__ = [
    "SubordinationLaw",
    "sample_covariance",
    "free_additive",
    "free_multiplicative",
    "compose_affine",
]

_P = np.polynomial.polynomial
_TINY = float(np.finfo(float).tiny)
_EPS = float(np.finfo(float).eps)

#: Two critical points of ``Z`` closer than this (relative to their size) are
#: one multiple critical point: a double root of ``Z'`` computed from
#: companion eigenvalues splits by ``~ sqrt(eps) ~ 1e-8`` relative.
CLUSTER_RTOL = 1e-6

#: A critical point or pole of the curve is real when ``|Im t|`` is below this
#: times ``|t|``; it is then polished on the real line.
REAL_CRITICAL_RTOL = 1e-7

#: Continuation of the generic solver: ``Im z`` shrinks by this factor per stage
#: from ``4 |z|`` down to ``CONTINUATION_FLOOR * scale``, then the target itself
#: is solved from there (the solution is continuous up to the real axis).
CONTINUATION_FACTOR = 0.25
CONTINUATION_FLOOR = 1e-7

#: Secant steps of ``mpmath.findroot`` in the arbitrary-precision path (it
#: starts from the float solution, so a few dozen suffice; the margin covers
#: starts next to a hard edge, where the float point has few correct digits).
MP_MAX_STEPS = 200

#: Step halvings of the generic solver's backtracking line search.
BACKTRACK_HALVINGS = 20

#: Relative size (to ``Phi'`` at infinity) below which a sampled derivative of
#: the inverse map counts as not positive in the generic support search.
DPHI_FLOOR = 1e-10

#: Newton steps polishing companion-matrix eigenvalues: they are backward
#: stable, so a simple root needs 2-3 steps from the nudged start (quadratic
#: convergence from a relative offset 1e-6); a multiple root stalls and stops.
POLISH_MAX_ITER = 8
#: Newton polishing stops when a step is not below this fraction of the previous
#: one.  Next to a (nearly) double root Newton converges linearly with ratio 1/2
#: until it is closer to one root than to the other, so the ratio must exceed 1/2.
NEWTON_STALL_RATIO = 0.9
#: Real points outside the support closer than this (relative to the law's
#: scale) to an edge take ``G`` from the representation's Cauchy integral: the
#: leaf roots there are nearly double (error ~ sqrt(eps / distance)).
NEAR_EDGE_RTOL = 1e-9

#: A candidate whose subordination points have ``|Im|/|.|`` below
#: ``real_root_rtol`` times this factor counts as a real root (eq. (8.11)).
REAL_ROOT_SCORE_FACTOR = 1e3

#: Newton steps of the factored-tower polish of a selected root
#: (:meth:`RationalSolver._polish_factored`); the polish starts within the
#: branch tolerance of the root and converges in 2-4 steps.
FACTORED_MAX_ITER = 8

#: Largest relative move of a root by the factored polish: the root found from
#: the coefficients is within about ``sqrt(branch_rtol)`` of the true one, and
#: a larger move means Newton is heading for another root.
FACTORED_MAX_MOVE = 1e-3

#: Relative step of the central difference for ``Z''`` in the critical-point
#: polish (:meth:`RationalSolver._polish_critical`): its truncation error
#: (``~step**2``) and rounding (``~eps/step``) only slow the quasi-Newton
#: iteration, whose fixed point is ``Z'(t) = 0`` to the rounding of ``Z'``.
CRITICAL_DIFF_STEP = 1e-6

#: How far (relative) the polish may move a rescue seed
#: (:meth:`RationalSolver._rescue`): the seed, a root of the local quadratic
#: model at a real root, is off by the model's cubic term; the branch test
#: checks where Newton lands.
RESCUE_MOVE = 0.1

#: A first edge within this fraction of the upper edge from 0 is the structural
#: hard edge at 0 (:func:`_snap_hard_edge`); measured offsets are 1e-17 to 1.2e-6.
HARD_EDGE_SNAP_RTOL = 1e-4

#: Points closer to a hard edge at 0 than this fraction of the support's
#: extent are not rescued (:meth:`RationalSolver.solve`): there the factored
#: tower cancels too (at 3e-22 of the extent the square attention law's tower
#: gave a root on another sheet), while the representation of a multi-head law
#: with a square factor samples its density down to 2e-10 of the extent.
HARD_EDGE_RESCUE_RTOL = 1e-13



# --------------------------------------------------------------------------- #
# Moments of compositions
# --------------------------------------------------------------------------- #

def level_series(level, constituent, kmax, prec):
    """Moment series of ``level`` applied to ``constituent`` (``None``: not exact).

    An R-level is a free additive convolution (eqs. (8.2)-(8.3)), an S-level a
    free multiplicative one (eqs. (8.4)-(8.5)); other levels (affine, and the
    multi-head companion level) give their own ``series`` (theory section 8.10).
    """
    if level.kind == "R":
        return additive_series(level.partner, constituent, kmax, prec)
    if level.kind == "S":
        return multiplicative_series(level.partner, constituent, kmax, prec)
    series = getattr(level, "series", None)
    return None if series is None else series(constituent, kmax, prec)


def _real_roots(poly, tol=REAL_CRITICAL_RTOL):
    """Real roots of a polynomial (lowest first), Newton-polished, with multiplicities merged."""
    poly = trim(poly)
    if poly.size < 2:
        return np.empty(0)
    roots = np.roots(poly[::-1])
    real = np.sort(roots[np.abs(roots.imag) <= tol * np.abs(roots)].real)
    pc = tuple(float(c) for c in poly)
    dc = tuple(k * c for k, c in enumerate(pc))[1:]
    out = []
    for r in real:
        x = float(r)
        for _ in range(20):
            f, df = hval(pc, x), hval(dc, x)
            if df == 0 or not np.isfinite(f / df):
                break
            step = f / df
            if abs(step) > 1e-3 * abs(x):
                break                         # a multiple root: keep the eigenvalue estimate
            x -= step
            if abs(step) <= 4 * _EPS * max(abs(x), _TINY):
                break
        out.append(x)
    return np.array(out)


def _cluster(points, rtol=CLUSTER_RTOL):
    """Group sorted reals closer than ``rtol * max(1, |x|)``: (centres, multiplicities)."""
    centres, mult = [], []
    for p in np.sort(points):
        if centres and abs(p - centres[-1]) <= rtol * max(abs(p), abs(centres[-1])):
            n = mult[-1]
            centres[-1] = (centres[-1] * n + p) / (n + 1)
            mult[-1] = n + 1
        else:
            centres.append(p)
            mult.append(1)
    return np.array(centres), np.array(mult, dtype=int)


def _multiplicity_near(roots, t, rtol=CLUSTER_RTOL):
    return int(np.sum(np.abs(roots - t) <= rtol * max(abs(t), _TINY)))


class RationalSolver:
    """Solves ``Z(t) = z`` on a :class:`Curve` and finds its support (eqs. (8.10)-(8.13))."""

    def __init__(self, curve, options, hard_edges):
        self.curve = curve
        self.options = options
        n, d = curve.polys[-1][0], curve.polys[-1][1]
        size = max(n.size, d.size)
        self.num = np.zeros(size)
        self.num[:n.size] = n
        self.den = np.zeros(size)
        self.den[:d.size] = d
        self.hard_edges = hard_edges
        self.scale = 1.0
        #: Largest absolute edge of the support, once :meth:`support` has run.
        self.extent = None
        #: ``polisher(tau, z, g)`` refines the outermost subordination point by
        #: Newton on ``Phi(tau) = z`` with the constituent's closed-form transform
        #: (set by the law when its constituent has one).
        self.polisher = None

    # -- the branch ---------------------------------------------------------------------
    def solve(self, z):
        """Leaf variable ``t`` of the Stieltjes branch at each ``z`` (1-d, ``Im z >= 0``).

        Returns ``(t, G)``.
        """
        opts = self.options
        coeffs = self.num[:, None] - z[None, :] * self.den[:, None]
        top = coeffs.shape[0] - 1
        while top > 0 and np.all(coeffs[top] == 0):
            top -= 1
        coeffs = coeffs[:top + 1]
        roots = batched_roots(coeffs)
        roots = self._newton(coeffs, roots + 1j * opts.root_nudge * np.abs(roots))
        t, g, bad, failed, message = self._select(roots, z)
        if self.hard_edges is not None and self.extent is not None:
            # Next to a hard edge at 0 the factored tower cancels too (its
            # subordination points are small differences of large numbers), so
            # a polished root there is not trustworthy: no rescue.
            near = np.abs(z) <= HARD_EDGE_RESCUE_RTOL * self.extent
            if (failed & near).any():
                # Rescued there only when the density dominates G, as a hard edge's
                # x**eta (eta < 0) does: a nearly real G is another sheet.
                sel = failed & near
                try:
                    tr, gr = self._rescue(roots[:, sel], z[sel])
                except ConvergenceError:
                    raise ConvergenceError(message[0], **message[1]) from None
                if np.any(gr.imag > -np.sqrt(self.options.branch_rtol) * np.abs(gr)):
                    raise ConvergenceError(message[0], **message[1])
                t[sel], g[sel] = tr, gr
            bad &= ~near
        if bad.any():
            t[bad], g[bad] = self._rescue(roots[:, bad], z[bad])
        return t, g

    def _rescue(self, roots, z):
        """The branch where the coefficient roots did not give it (theory eqs. (8.10), (8.20)).

        The expanded polynomial ``N - z D`` of a tall tower can lose most of
        its digits where its roots spread over several orders of magnitude
        (a relative residual of 1e-4 next to the lower edge of the multi-head
        law at ``beta = 0.1``, theory section 9.11): a complex root pair close
        to the real axis then appears as two real roots, and no candidate is
        on the Stieltjes branch, or only a real root on which some level
        decreases (a density of 0 inside the support).  Every root is polished
        on the factored tower, and every real root ``r`` also seeds Newton at
        both roots of the local quadratic model
        ``Z(r) + Z'(r) e + Z''(r) e**2/2 = z`` (``Z''`` by a central
        difference): next to a nearly double root the model's roots are the
        complex pair to within its cubic term.
        """
        polished = self._polish_factored(roots, z[None, :], max_move=RESCUE_MOVE)
        tol = self.options.real_root_rtol * REAL_ROOT_SCORE_FACTOR
        realish = np.isfinite(polished) & (np.abs(polished.imag) <= tol * np.abs(polished))
        r = np.where(realish, polished.real, np.nan) + 0j
        h = CRITICAL_DIFF_STEP * np.abs(r)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            zs, _, dzs, _ = self.curve.stages(r)
            d2 = (self.curve.stages(r + h)[2][-1] - self.curve.stages(r - h)[2][-1]) / (2 * h)
            # Z(r) + Z'(r) e + Z''(r) e**2/2 = z: both roots e of the local quadratic (8.20).
            disc = np.sqrt(dzs[-1] ** 2 - 2.0 * d2 * (zs[-1] - z[None, :]))
            seeds = [self._polish_factored(r + (-dzs[-1] + sign * disc) / d2, z[None, :],
                                           max_move=RESCUE_MOVE)
                     for sign in (1.0, -1.0)]
        t, g, _, failed, message = self._select(np.concatenate([polished] + seeds), z)
        if failed.any():
            raise ConvergenceError(message[0], **message[1])
        return t, g

    def _newton(self, coeffs, t):
        """Polish roots by Newton's method, point by point until each step is a few ulps.

        A root whose step stops shrinking (a multiple root, converging linearly)
        keeps its current value; the branch test decides about it.
        """
        opts = self.options
        der = coeffs[1:] * np.arange(1, coeffs.shape[0])[:, None]
        t = t.copy()
        active = np.ones(t.shape, dtype=bool)
        last = np.full(t.shape, np.inf)
        for _ in range(POLISH_MAX_ITER):
            rows, cols = np.nonzero(active)
            if rows.size == 0:
                break
            ta = t[rows, cols]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                p = _horner(coeffs[:, cols], ta)
                dp = _horner(der[:, cols], ta)
                step = np.where(dp != 0, p / dp, 0)
            step = np.where(np.isfinite(step), step, 0)
            size = np.abs(step)
            stalled = size > NEWTON_STALL_RATIO * last[rows, cols]
            take = ~stalled
            t[rows[take], cols[take]] = ta[take] - step[take]
            last[rows, cols] = size
            done = stalled | (size <= opts.newton_rtol * np.abs(ta))
            active[rows[done], cols[done]] = False
        return t

    def _select(self, roots, z):
        """The admissible root: all subordination points in the closed upper half-plane."""
        opts = self.options
        zs, gs, _, _ = self.curve.stages(roots, derivatives=False)
        # The outermost partner point from the given z, not from Z(t) recomputed with
        # cancellation (next to a hard edge Z(t) keeps few digits of z).
        zs_exact = zs[:-1] + [np.broadcast_to(z[None, :], zs[-1].shape)]
        partner_info = self.curve.partner_points(zs_exact, gs)
        # A partner point at infinity (G = 0) restricts nothing.
        partners = [np.where(np.isfinite(pt), pt, 1j) for _, _, pt in partner_info]
        # The point under an outermost affine or companion level is a function of z
        # itself (real with z), not a subordination point: it would tie every
        # candidate's score at 0 on the real axis.
        inner = zs[:-2] if self.curve.levels and self.curve.levels[-1].kind in (
            "affine", "companion") else zs[:-1]
        zk = np.stack([roots] + inner + partners)                # (points, d, m)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            im_rel = zk.imag / np.maximum(np.abs(zk), _TINY)
            score = im_rel.min(axis=0)                            # (d, m)
            res = np.abs(zs[-1] - z[None, :]) / (np.abs(z)[None, :] + np.abs(roots)
                                                 + self.scale)
        res = np.where(np.isfinite(res), res, np.inf)
        ok = (res < opts.branch_rtol) & (score >= -opts.branch_rtol) & np.isfinite(gs[-1])
        if partner_info and ok.any():
            # A partner's subordination point must also be on the partner's true
            # branch (eq. (8.10)): a root of the tower polynomial can put it in C+
            # on another sheet of the partner's transform.
            for level, k, pt in partner_info:
                sel = ok & np.isfinite(pt)
                mism = np.zeros(pt.shape)
                if sel.any():
                    # A point on the partner's support up to rounding is read on the
                    # upper side (the boundary value of the Stieltjes branch).
                    ps = pt[sel]
                    ps = ps.real + 1j * np.maximum(ps.imag, 0.0)
                    mism[sel] = level.partner_check(ps, zs[k - 1][sel], gs[k - 1][sel],
                                                    gs[k][sel])
                ok &= mism <= np.sqrt(opts.branch_rtol)
        real = ok & (np.abs(score) <= opts.real_root_rtol * REAL_ROOT_SCORE_FACTOR)
        decreasing = np.zeros(ok.shape, dtype=bool)
        if real.any():
            # Off the support only real roots remain; the Stieltjes value is the one on
            # which every level increases (eq. (8.11)).
            rr = roots.real + 0j
            zr, gr, dzr, _ = self.curve.stages(rr)
            increasing = np.all(np.stack(dzr).real > 0, axis=0) & self.curve.partner_valid(
                zr, gr, opts.branch_rtol)
            score = np.where(real, np.where(increasing, 0.0, -1.0), score)
            decreasing = real & ~increasing
        score = np.where(ok, score, -np.inf)
        idx = np.argmax(score, axis=0)
        cols = np.arange(z.size)
        failed = ~ok[idx, cols]
        message = None
        if failed.any():
            k = int(np.argmax(failed))
            message = (
                f"no root of the subordination equation is on the Stieltjes branch at "
                f"z={z[k]!r}: best relative residual {res[:, k].min():.3e} (tolerance "
                f"{opts.branch_rtol:.1e}), largest min Im(subordination point)/|.| "
                f"{np.max(np.where(res[:, k] < opts.branch_rtol, score[:, k], -np.inf)):.3e}",
                dict(point=z[k], residual=float(res[:, k].min()), tolerance=opts.branch_rtol,
                     iterations=opts.newton_max_iter))
        t = roots[idx, cols]
        g = gs[-1][idx, cols]
        good = ~failed
        t[good], g[good] = self._polish_factored(t[good], z[good], g[good])
        if self.polisher is not None and good.any():
            tau = zs[-2][idx, cols]
            g[good] = self.polisher(tau[good], z[good], g[good])
        return t, g, failed | (good & decreasing[idx, cols]), failed, message

    def _polish_factored(self, t, z, g=None, max_move=FACTORED_MAX_MOVE):
        """Newton on ``Z(t) = z`` with the tower evaluated level by level (theory eq. (8.10)).

        The expanded polynomial ``N - z D`` of a tall tower can lose many digits
        to cancellation among its coefficients (7 of them next to the lower edge
        of the multi-head law at small ``beta``, theory section 9.11), so its
        roots, polished on the coefficients, miss ``Z(t) = z`` by up to the
        branch tolerance.  The factored stages keep ``Z`` and ``Z'`` to a few
        ulps; Newton on them restores the root.  A root keeps its value when a
        step grows or would move it by more than ``max_move`` relative
        (Newton heading for another root; ``max_move`` broadcasts to ``t``);
        with ``g`` given (the selected branch) also when a step would flip the
        sign of ``Im G`` or move a subordination point below the real axis.

        ``t`` has any shape and ``z`` broadcasts to it; returns ``t`` (and the
        polished ``G`` when ``g`` is given).
        """
        shape = t.shape
        t = np.array(t, dtype=complex).ravel()
        z = np.broadcast_to(z, shape).ravel()
        t0 = t.copy()
        move = np.broadcast_to(max_move, shape).ravel()
        gout = None if g is None else np.array(g, dtype=complex).ravel()
        active = np.isfinite(t) & (t != 0)
        last = np.full(t.shape, np.inf)
        for _ in range(FACTORED_MAX_ITER):
            idx = np.nonzero(active)[0]
            if idx.size == 0:
                break
            ta = t[idx]
            zs, gs, dzs, _ = self.curve.stages(ta)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                step = (zs[-1] - z[idx]) / dzs[-1]
            size = np.abs(step)
            tn = ta - step
            ok = (np.isfinite(step) & (size < NEWTON_STALL_RATIO * last[idx])
                  & (np.abs(tn - t0[idx]) <= move[idx] * np.abs(t0[idx])))
            if gout is not None and ok.any():
                zn, gn, _, _ = self.curve.stages(tn[ok], derivatives=False)
                gn = gn[-1]
                # The branch (eq. (8.10)): Im G <= 0 and every subordination point in
                # the closed upper half-plane; a step must not leave it.
                rtol = self.options.branch_rtol
                keep = np.isfinite(gn) & (gn.imag <= rtol * np.abs(gn))
                for zk in [tn[ok]] + zn[:-1]:
                    keep &= zk.imag >= -rtol * np.abs(zk)
                gout[idx[ok][keep]] = gn[keep]
                ok[np.nonzero(ok)[0][~keep]] = False
            t[idx[ok]] = tn[ok]
            last[idx] = size
            done = ~ok | (size <= self.options.newton_rtol * np.abs(ta))
            active[idx[done]] = False
        if gout is None:
            return t.reshape(shape)
        return t.reshape(shape), gout.reshape(shape)

    # -- the support ---------------------------------------------------------------------
    def support(self):
        """Support intervals of the continuous part (with exponents), from eqs. (8.11)-(8.12)."""
        curve = self.curve
        n, d, a, b = curve.polys[-1]
        crit_poly = trim(padd(pmul(_P.polyder(n) if n.size > 1 else [0.0], d),
                              -pmul(n, _P.polyder(d) if d.size > 1 else [0.0])))
        raw = _real_roots(crit_poly)
        crit = self._polish_critical(raw)
        # Multiplicities (eq. (8.13)) are counted among the coefficient roots,
        # next to each polished point's unpolished origin.
        polished = crit.copy()

        def origin(t):
            # The unpolished root next to the polished point nearest t (a break is a
            # cluster centre of polished points, or a pole).
            if polished.size == 0 or not np.isfinite(t):
                return t
            i = int(np.argmin(np.abs(polished - t)))
            return raw[i] if abs(polished[i] - t) <= CLUSTER_RTOL * max(abs(t), _TINY) else t

        crit = np.sort(crit)
        crit_c, crit_m = _cluster(crit)
        poles = []
        for (nk, dk, ak, bk) in curve.polys:
            for poly in (dk, bk):
                if poly.size > 1:
                    poles.extend(_real_roots(poly))
        poles = _cluster(np.array(poles))[0] if poles else np.empty(0)
        breaks = np.sort(np.concatenate([crit_c, poles]))
        breaks = _cluster(breaks)[0] if breaks.size else breaks
        # Roots of Z' and of the denominators, for multiplicities at the edges.
        all_crit = np.roots(crit_poly[::-1]) if crit_poly.size > 1 else np.empty(0)
        b_roots = np.roots(b[::-1]) if b.size > 1 else np.empty(0)
        a_roots = np.roots(a[::-1]) if a.size > 1 else np.empty(0)

        pieces = []                   # (x_left, x_right, t_left, t_right)
        ends = np.concatenate([[-np.inf], breaks, [np.inf]])
        mids = []
        for tl, tr in zip(ends[:-1], ends[1:]):
            if np.isinf(tl) and np.isinf(tr):
                mids.append(0.0)
            elif np.isinf(tl):
                mids.append(tr - max(1.0, abs(tr)))
            elif np.isinf(tr):
                mids.append(tl + max(1.0, abs(tl)))
            else:
                mids.append(0.5 * (tl + tr))
        valid = self._valid(np.array(mids))
        for tl, tr, ok in zip(ends[:-1], ends[1:], valid):
            if not ok:
                continue
            xl = self._end_value(tl, side=+1)
            xr = self._end_value(tr, side=-1)
            pieces.append((xl, xr, tl, tr))
        if not pieces:
            raise ConvergenceError("found no real point outside the support: the curve has no "
                                   "increasing branch (eq. (8.11))")
        pieces.sort(key=lambda p: p[0])
        if pieces[0][0] != -np.inf or max(p[1] for p in pieces) != np.inf:
            raise ConvergenceError(f"the outside of the support does not reach +-infinity: "
                                   f"pieces {[(p[0], p[1]) for p in pieces]}")
        # Merge the complement and read the support off its gaps.
        merged = []
        for p in pieces:
            if merged and p[0] <= merged[-1][1]:
                if p[1] > merged[-1][1]:
                    merged[-1] = (merged[-1][0], p[1], merged[-1][2], p[3])
            else:
                merged.append(p)
        intervals = []
        for left, right in zip(merged[:-1], merged[1:]):
            lo, hi = left[1], right[0]
            if hi - lo <= self.options.edge_merge_rtol * max(abs(lo), abs(hi), _TINY):
                continue                                      # an atom or a closed gap
            e_lo = self._exponent(origin(left[3]), all_crit, a_roots,
                                  b_roots, lo)
            e_hi = self._exponent(origin(right[2]), all_crit, a_roots,
                                  b_roots, hi)
            intervals.append([float(lo), float(hi), e_lo, e_hi])
        if intervals:
            self.extent = max(max(abs(iv[0]), abs(iv[1])) for iv in intervals)
        return _snap_hard_edge(intervals, self.hard_edges, self.options)

    def _polish_critical(self, crit):
        """Critical points of ``Z`` refined on the factored tower (theory eq. (8.12), section 8.4).

        The roots of ``N' D - N D'`` carry the cancellation of the expanded
        coefficients (a relative 6e-8 at the lower edge of the multi-head law
        at ``beta = 0.1``); Newton on ``Z'(t) = 0`` with ``Z'`` from the stages
        and ``Z''`` by a central difference of step ``CRITICAL_DIFF_STEP``
        (relative) restores them to a few ulps of ``Z'``.  A point keeps its
        value when a step does not reduce ``|Z'|`` or would move it by more
        than ``RESCUE_MOVE`` relative or half-way to another critical point
        (a relative 1.5e-2 at ``beta = 0.05``).
        """
        crit = np.array(crit, dtype=float)
        if crit.size == 0:
            return crit
        # A point may move by up to RESCUE_MOVE relative, but not half-way to
        # another critical point (Newton must not trade one for another).
        limit = RESCUE_MOVE * np.abs(crit)
        if crit.size > 1:
            gaps = np.abs(crit[:, None] - crit[None, :]) + np.diag(np.full(crit.size, np.inf))
            limit = np.minimum(limit, 0.5 * gaps.min(axis=1))

        def dz(t):
            return self.curve.stages(t.astype(complex))[2][-1].real

        t = crit.copy()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d0 = np.abs(dz(t))
            for _ in range(FACTORED_MAX_ITER):
                h = CRITICAL_DIFF_STEP * np.maximum(np.abs(t), _TINY)
                d2 = (dz(t + h) - dz(t - h)) / (2.0 * h)
                tn = t - dz(t) / d2
                dn = np.abs(dz(tn))
                ok = (np.isfinite(tn) & np.isfinite(dn) & (dn < d0)
                      & (np.abs(tn - crit) <= limit))
                if not ok.any():
                    break
                t = np.where(ok, tn, t)
                d0 = np.where(ok, dn, d0)
        return t

    def _valid(self, t):
        """Whether every level increases at each real leaf point (eq. (8.11))."""
        zs, gs, dzs, _ = self.curve.stages(t.astype(complex))
        dz = np.stack(dzs).real
        return np.all((dz > 0) & np.isfinite(dz), axis=0) & self.curve.partner_valid(
            zs, gs, self.options.branch_rtol)

    def _end_value(self, t, side):
        """``lim Z`` at an end of an increasing t-interval (``side=+1``: left end)."""
        if np.isinf(t):
            return t
        dval = _P.polyval(t, self.den)
        nval = _P.polyval(t, self.num)
        if abs(dval) <= 1e-12 * np.abs(self.den) @ (abs(t) ** np.arange(self.den.size)):
            return -np.inf if side > 0 else np.inf
        z = self.curve.z_of(np.array([complex(t)]))[0]
        value = z.real if np.isfinite(z) else nval / dval
        return float(value)

    def _exponent(self, t, all_crit, a_roots, b_roots, x):
        """Density exponent at the edge reached at leaf point ``t`` (eq. (8.13))."""
        if np.isinf(t):
            return SOFT
        m = _multiplicity_near(all_crit, t)
        r = _multiplicity_near(b_roots, t) - _multiplicity_near(a_roots, t)
        k = m + 1
        if r > 0:
            return Fraction(-r, k)
        return Fraction(1, k)


def _snap_hard_edge(intervals, hard, options):
    """Put a lower edge that is 0 to rounding exactly at 0 (eq. (8.13)).

    With a structural hard edge (an S-level whose S-transform has a pole at
    ``w = -r``, :meth:`SLevel.hard_edge`) the edge at 0 is computed as ``Z(t)`` at a double zero and
    comes out as ``+-1e-17`` instead of 0 (at a pole of order 2 of ``S``, as
    ``-1e-6`` of the upper edge: ``Z`` has a triple critical point there); a
    pole of ``S`` makes the density diverge at 0, so the support reaches 0 and
    a first edge within ``HARD_EDGE_SNAP_RTOL`` of the upper edge is set to 0
    with the hard-edge exponent.
    """
    if intervals:
        top = max(abs(iv[1]) for iv in intervals)
        first = intervals[0]
        if hard is not None and abs(first[0]) <= HARD_EDGE_SNAP_RTOL * top:
            first[0] = 0.0
            # The structural exponent wins: with an atom at 0 the curve's rule
            # (8.13) also counts the atom's pole of G.
            first[2] = hard
    return tuple(Interval(lo, hi, elo, ehi) for lo, hi, elo, ehi in intervals)


def _horner(coeffs, t):
    """Evaluate per-column polynomials (lowest first, shape (n, m)) at ``t`` (d, m)."""
    acc = np.zeros(t.shape, dtype=complex) + coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * t + c
    return acc


# --------------------------------------------------------------------------- #
# Generic solver (any constituent)
# --------------------------------------------------------------------------- #

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

    def _phi(self, tau):
        gb, dgb = self.constituent._stieltjes_pair(tau)
        return self.level.apply(tau, gb, np.ones_like(tau), dgb)

    def solve(self, z, guess=None):
        """``(tau, G)`` at each ``z`` (1-d complex, ``Im z >= 0``)."""
        opts = self.options
        scale = max(self.scale, 1e-300)
        zabs = np.maximum(np.abs(z), scale)
        eta0 = 4.0 * zabs
        tau = self.level.guess(z.real + 1j * eta0) if guess is None else np.asarray(guess,
                                                                                    complex)
        stages = []
        if guess is None:
            eta = eta0
            for _ in range(opts.continuation_stages):
                stages.append(eta)
                eta = eta * CONTINUATION_FACTOR
                if np.all(eta < CONTINUATION_FLOOR * scale):
                    break
        for eta in stages + [None]:
            zk = z if eta is None else z.real + 1j * np.maximum(eta, z.imag)
            if eta is not None and np.all(eta <= z.imag):
                continue
            tau = self._newton(tau, zk)
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

    def _newton(self, tau, zk):
        """Newton steps on ``Phi(tau) = zk``, each point until its step is a few ulps.

        A step that would leave the upper half-plane is halved (the
        subordination point stays in the closed upper half-plane).
        """
        opts = self.options
        tau = np.array(tau, dtype=complex)
        active = np.arange(tau.size)
        for _ in range(opts.newton_max_iter):
            ta = tau[active]
            za = zk[active]
            zz, _, dz, _ = self._phi(ta)
            res0 = np.abs(zz - za)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                step = (zz - za) / dz
            step = np.where(np.isfinite(step), step, 0)
            new = ta - step
            for _ in range(30):
                out = new.imag < 0
                if not out.any():
                    break
                step = np.where(out, step / 2, step)
                new = ta - step
            new = np.where(new.imag < 0, new.real + 0j, new)
            # Backtracking: a step that does not reduce the residual is halved
            # (far from the solution a full Newton step can jump to another sheet).
            for _ in range(BACKTRACK_HALVINGS):
                with np.errstate(all="ignore"):
                    res1 = np.abs(self._phi(new)[0] - za)
                worse = ~(res1 <= res0) & (np.abs(step) > opts.newton_rtol * np.abs(ta))
                if not worse.any():
                    break
                step = np.where(worse, step / 2, step)
                new = np.where(worse, ta - step, new)
            tau[active] = new
            done = np.abs(step) <= opts.newton_rtol * np.maximum(np.abs(new), 1e-300)
            active = active[~done]
            if active.size == 0:
                break
        return tau

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
            pos = (self._dphi_real(taus) > floor) & self._partner_valid(taus)
            for i, j in _runs(pos):
                if i == 0:
                    left, e_left = glo, e_glo
                else:
                    left, e_left = self._zero(taus[i - 1], taus[i]), SOFT
                if j == taus.size - 1:
                    right, e_right = ghi, e_ghi
                else:
                    right, e_right = self._zero(taus[j], taus[j + 1]), SOFT
                pieces.append((self._phi_real_limit(left, +1), self._phi_real_limit(right, -1),
                               e_left, e_right))
        scale = max((abs(v) for p in pieces for v in p[:2] if np.isfinite(v)), default=1.0)
        pieces = [p for p in pieces if p[1] - p[0] > opts.edge_merge_rtol * scale]
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

    def _partner_valid(self, taus):
        """The partner's subordination point is on its true branch (eq. (8.11))."""
        tau = taus.astype(complex)
        z, g, _, _ = self._phi(tau)
        gb = self.constituent._stieltjes(tau)
        pt = self.level.partner_point(z, tau, gb, g)
        if pt is None:
            return np.ones(taus.shape, dtype=bool)
        ok = np.isfinite(pt) & np.isfinite(z)
        mism = np.where(np.isfinite(z), 0.0, np.inf)          # partner at infinity: fine
        if ok.any():
            mism[ok] = self.level.partner_check(pt[ok].real + 0j, tau[ok], gb[ok], g[ok])
        return mism <= self.options.branch_rtol

    def _dphi_infinity(self):
        level = self.level
        if level.kind == "S":
            return abs(1.0 / level.transform.at_zero())
        return 1.0

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
        evaluated a few ulps inside the gap; a value beyond ``1/eps`` times the
        scale is the pole's infinity.
        """
        if np.isinf(tau):
            return tau
        t = tau
        with np.errstate(all="ignore"):
            try:
                z = self._phi(np.array([complex(t)]))[0][0]
            except ValueError:
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


# --------------------------------------------------------------------------- #
# The composed law
# --------------------------------------------------------------------------- #

class SubordinationLaw(SpectralLaw):
    """A law defined by one level over a constituent law (eqs. (8.7)-(8.9)).

    Build it with :func:`sample_covariance`, :func:`free_additive`,
    :func:`free_multiplicative` or :meth:`SpectralLaw.affine`.

    Attributes
    ----------
    level : AffineLevel, RLevel or SLevel
    constituent : SpectralLaw
    """

    def __init__(self, level, constituent, options=None, name=None):
        super().__init__(options if options is not None else constituent.options)
        self.level = level
        self.constituent = constituent
        self._name = name
        base_curve = constituent._curve()
        curve = None
        if base_curve is not None and getattr(getattr(level, "transform", None), "rational",
                                              True):
            curve = base_curve.extend(level)
            if curve.degree > self.options.max_rational_degree:
                curve = None
        self._curve_cache = curve
        self._boundary_cache = None
        hard = level.hard_edge(constituent)
        self._hard_edge = hard
        if curve is not None:
            self._solver = RationalSolver(curve, self.options, hard)
            if getattr(constituent, "_closed_form", False):
                self._solver.polisher = self._polish
        else:
            self._solver = GenericSolver(level, constituent, self.options)

    def _polish(self, tau, z, g):
        """Two Newton steps on the outermost level ``Phi(tau) = z`` (eq. (8.10)).

        The leaf variable of a rational tower loses relative accuracy where a
        subordination point is the small difference of larger numbers (next to
        the hard edge ``tau -> 0``: ``eps/|tau|``); the outermost level with
        the constituent's closed-form transform has no such cancellation.
        Points where a step would leave the upper half-plane or grow keep the
        tower's value.
        """
        b = self.constituent
        level = self.level
        ok = np.isfinite(tau) & (tau != 0)
        tau = np.where(ok, tau, 1.0)
        g_new = g.copy()
        for _ in range(2):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                gb = b._stieltjes(tau)
                dgb = b._stieltjes_derivative(tau)
                zz, gg, dz, _ = level.apply(tau, gb, np.ones_like(tau), dgb)
                step = (zz - z) / dz
            good = ok & np.isfinite(step) & (np.abs(step) <= 1e-6 * np.abs(tau)) & (
                (tau - step).imag >= -self.options.branch_rtol * np.abs(tau))
            tau = np.where(good, tau - step, tau)
            ok = good
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gb = b._stieltjes(tau)
            _, gg, _, _ = level.apply(tau, gb, np.ones_like(tau), np.zeros_like(tau))
        return np.where(ok & np.isfinite(gg), gg, g_new)

    def _describe(self):
        if self._name:
            return self._name
        return f"{self.constituent._describe()} {self.level.describe()}"

    def _curve(self):
        return self._curve_cache

    # -- hooks ---------------------------------------------------------------------
    def _support_intervals(self):
        ivs = self._solver.support()
        if self.level.kind == "S" and ivs and ivs[0].lo < 0:
            # A product of laws on [0, oo) lives on [0, oo): a lower edge below 0
            # is 0 computed with rounding (a double zero of Z'); beyond rounding
            # it is an error, not a law.
            first = ivs[0]
            if -first.lo > self.options.edge_merge_rtol * max(abs(first.hi), _TINY):
                raise ConvergenceError(
                    f"lower edge {first.lo!r} of a law on [0, oo) is below 0 by more than "
                    f"rounding (edge_merge_rtol {self.options.edge_merge_rtol:.1e})")
            ivs = (Interval(0.0, first.hi, first.lo_exponent, first.hi_exponent),) + \
                tuple(ivs[1:])
        if not ivs:
            # A law without a continuous part is all atoms: otherwise the support
            # search missed its bands.
            atom_mass = float(np.sum(self.level.atoms(self.constituent)[1]))
            if atom_mass < 1.0 - self.options.mass_atol:
                raise ConvergenceError(
                    f"found no support interval, but the atoms carry only {atom_mass!r} of "
                    f"the mass (missing {1.0 - atom_mass:.3e} > mass_atol "
                    f"{self.options.mass_atol:.1e}): the critical points of the tower were "
                    f"not resolved (eq. (8.12))")
        return ivs

    def _atoms(self):
        return self.level.atoms(self.constituent)

    def _density(self, x):
        z = x.astype(complex)
        if isinstance(self._solver, GenericSolver):
            g = self._generic_boundary(z)
        else:
            _, g = self._solver.solve(z)
        bad = ~np.isfinite(g) | (g.imag > self.options.branch_rtol * np.abs(g))
        if bad.any():
            k = int(np.argmax(bad))
            raise ConvergenceError(
                f"density at x={x[k]!r}: G={g[k]!r} is not on the Stieltjes branch "
                f"(Im G must be <= 0)", point=float(x[k]))
        return np.maximum(-g.imag, 0.0) / math.pi

    def _stieltjes_exact(self, z):
        near = self._near_edge_outside(z)
        if not near.any():
            return self._solver.solve(z)[1]
        out = np.empty(z.shape, dtype=complex)
        if (~near).any():
            out[~near] = self._solver.solve(z[~near])[1]
        out[near] = self._stieltjes_from_representation(z[near])
        return out

    def _near_edge_outside(self, z):
        """Real points outside the support within ``NEAR_EDGE_RTOL`` of an edge.

        There the leaf roots are nearly double and keep about half the digits, so
        ``G`` is the Cauchy integral of the representation instead (theory
        eq. (8.16); real and accurate to rounding next to an edge).
        """
        near = np.zeros(z.shape, dtype=bool)
        ivs = self.intervals()
        real = z.imag == 0
        if not ivs or not real.any():
            return near
        x = z.real
        ends = np.asarray(ivs, dtype=float)
        inside = np.zeros(z.shape, dtype=bool)
        for lo, hi in ends:
            inside |= (x >= lo) & (x <= hi)
        dist = np.min(np.abs(x[:, None] - ends.ravel()[None, :]), axis=1)
        return real & ~inside & (dist <= NEAR_EDGE_RTOL * self._scale())

    def _generic_boundary(self, z):
        """Boundary values on the support, warm-started from earlier solves.

        The subordination point is continuous along the support, so each new
        point starts Newton from the points already solved (interpolated);
        points that fail the branch test are solved by continuation.
        """
        cache = self._boundary_cache
        if cache is None or cache[0].size < 2:
            tau, g = self._solver.solve(z)
        else:
            xs, taus = cache
            guess = np.interp(z.real, xs, taus.real) + 1j * np.interp(z.real, xs, taus.imag)
            tau, g = self._solver.solve(z, guess=guess)
        if cache is None:
            xs, taus = z.real, tau
        else:
            xs, taus = np.concatenate([cache[0], z.real]), np.concatenate([cache[1], tau])
        order = np.argsort(xs)
        self._boundary_cache = (xs[order], taus[order])
        return g

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        """``G`` and ``G' = (dG/dtau)/(dz/dtau)`` from one solve."""
        if isinstance(self._solver, RationalSolver):
            t, g = self._solver.solve(z)
            zs, gs, dzs, dgs = self._solver.curve.stages(t)
            with np.errstate(divide="ignore", invalid="ignore"):
                return g, dgs[-1] / dzs[-1]
        tau, g = self._solver.solve(z)
        _, _, dz, dg = self._solver._phi(tau)
        with np.errstate(divide="ignore", invalid="ignore"):
            return g, dg / dz

    def _moment_series(self, kmax, prec):
        return level_series(self.level, self.constituent, kmax, prec)

    def _tau(self, z):
        """Float outermost subordination point at each ``z`` (1-d)."""
        if isinstance(self._solver, RationalSolver):
            t, _ = self._solver.solve(z)
            return self._solver.curve.stages(t, derivatives=False)[0][-2]
        return self._solver.solve(z)[0]

    def _mp_stieltjes(self, z):
        """Solve ``Phi(tau) = z`` with ``mpmath.findroot`` (eq. (8.10)) at the working precision.

        Started from the float solution (or, when that fails, from the
        continuation of the float solver at ``Re z + i``), it is an
        independent solve of the transcendental equation with the
        constituent's arbitrary-precision transform; the residual is checked
        against ``mp_tolerance`` of the working precision.
        """
        import mpmath
        from ..core._tolerances import mp_tolerance

        phi = self.level.mp(mpmath)
        b = self.constituent
        zc = complex(z)
        try:
            start = complex(self._tau(np.array([zc]))[0])
        except ConvergenceError:
            start = complex(self._tau(np.array([complex(zc.real, max(zc.imag, 1.0))]))[0])

        def f(tau):
            return phi(tau, b._mp_stieltjes(tau))[0] - z

        tau = mpmath.findroot(f, mpmath.mpc(start.real, start.imag), verify=False,
                              maxsteps=MP_MAX_STEPS)
        tol = mp_tolerance(mpmath.mp.dps) * (abs(z) + abs(tau))
        res = abs(f(tau))
        # Next to an edge the root is nearly double and its imaginary part is
        # only sqrt(tol)-accurate.
        if res > tol or tau.imag < -mpmath.sqrt(tol) * abs(tau):
            raise ConvergenceError(
                f"mpmath subordination solve at z={complex(z)!r}: residual {float(res):.3e} "
                f"(tolerance {float(tol):.1e}), tau={complex(tau)!r}", point=complex(z),
                residual=float(res), tolerance=float(tol))
        return phi(tau, b._mp_stieltjes(tau))[1]

    def _r_transform(self):
        if self.level.kind != "R":
            return None
        rb = self.constituent._r_transform()
        if rb is None:
            return None
        return self.level.transform.plus(rb, source=self)

    def _s_transform(self):
        if self.level.kind != "S":
            return None
        sb = self.constituent._s_transform()
        if sb is None:
            return None
        return self.level.transform.times(sb, source=self)


# --------------------------------------------------------------------------- #
# Public compositions
# --------------------------------------------------------------------------- #

#: Point-mass populations with more atoms than this go to the analytic path of
#: theory section 14 (the algebraic tower costs 4.9 s at 400 atoms and fails at
#: 1000); at most this many keep the algebraic path, which the tests check.
ANALYTIC_MIN_ATOMS = 400


def _check_law(law, name):
    if not isinstance(law, SpectralLaw):
        raise TypeError(f"{name} must be a freeattn law (SpectralLaw), got {type(law).__name__}")
    return law


def _check_nonnegative(law, name):
    lo = law.support()[0]
    if lo < 0:
        raise ValueError(f"{name} must be a law on [0, inf) for a free multiplicative "
                         f"convolution (sample covariance), but its support starts at {lo!r}")


def compose_affine(law, shift, scale):
    """``shift + scale * X`` as a subordination level (``scale > 0``)."""
    return SubordinationLaw(AffineLevel(shift, scale), law)


def sample_covariance(population, ratio, *, options=None):
    """Limiting eigenvalue law of a sample covariance matrix with any population.

    The law of the eigenvalues of the ``p x p`` matrix
    ``T^{1/2} X X^T T^{1/2} / N``, ``X`` a ``p x N`` matrix of i.i.d. N(0, 1)
    entries, ``p/N -> ratio``, the spectrum of ``T`` tending to
    ``population`` (Marchenko & Pastur 1967; Silverstein & Bai 1995).  It is
    ``marchenko_pastur(1, ratio) ⊠ population``: Silverstein's equation (5.3)
    is the S-level of theory eq. (8.9) with ``S(w) = 1/(1 + ratio w)``.

    Parameters
    ----------
    population : SpectralLaw
        Any law on ``[0, oo)``, including one computed by freeattn.
    ratio : float
        ``c = p/N`` in ``[1e-4, 1e4]``; an atom of mass ``1 - 1/c`` sits at 0
        when ``c > 1`` (and the population has no larger atom at 0).
    options : SolverOptions, optional

    Returns
    -------
    SubordinationLaw

    Raises
    ------
    TypeError
        If ``population`` is not a law.
    ValueError
        If the population has mass below 0 or ``ratio`` is out of range.

    Examples
    --------
    >>> import freeattn
    >>> pop = freeattn.point_masses([1.0, 10.0], [0.5, 0.5])
    >>> law = freeattn.sample_covariance(pop, 0.1)
    >>> len(law.intervals())                      # two bands, one per population atom
    2
    >>> round(law.mean(), 12)                     # the population mean
    5.5
    """
    from ..laws._elementary import marchenko_pastur
    from ..core._options import check_options

    _check_law(population, "population")
    _check_nonnegative(population, "population")
    from ..laws._elementary import PointMasses
    if isinstance(population, PointMasses) and population.values.size > ANALYTIC_MIN_ATOMS \
            and population.values.min() > 0:
        # Many atoms: the algebraic tower has degree ~ atoms; analytic subordination
        # (theory eqs. (14.4)-(14.5)) costs linear in them.
        from ._analytic import analytic_multiplicative
        return analytic_multiplicative(marchenko_pastur(1.0, ratio), population,
                                       options=None if options is None else
                                       check_options(options))
    return free_multiplicative(marchenko_pastur(1.0, ratio), population,
                               options=None if options is None else check_options(options))


def free_additive(a, b, *, options=None):
    """Free additive convolution ``a ⊞ b``: the law of ``A + U B U^*`` (``U`` Haar).

    Computed by subordination, ``G(z) = G_b(omega(z))``,
    ``z = omega + R_a(G_b(omega))`` (theory eq. (8.8)), with ``R_a`` the
    R-transform of ``a``.

    Parameters
    ----------
    a, b : SpectralLaw
        At least one of them must have a known R-transform (semicircle,
        Marchenko-Pastur, a single atom, or a free additive convolution of
        those); the other can be any law.
    options : SolverOptions, optional

    Returns
    -------
    SubordinationLaw

    Examples
    --------
    >>> import freeattn
    >>> law = freeattn.free_additive(freeattn.semicircle(1.0), freeattn.semicircle(2.0))
    >>> round(law.var(), 12), [round(v, 10) for v in law.support()]   # semicircle(3)
    (3.0, [-3.4641016151, 3.4641016151])
    """
    from ..core._options import check_options

    _check_law(a, "a")
    _check_law(b, "b")
    opts = check_options(options) if options is not None else a.options
    ra, rb = a._r_transform(), b._r_transform()
    if ra is None and rb is None:
        # Neither law has a rational R-transform: analytic subordination of the two
        # Cauchy transforms, theory eqs. (14.1)-(14.5).
        from ._analytic import analytic_additive
        return analytic_additive(a, b, options=opts)
    if ra is None:
        a, b, ra = b, a, rb
    # Collapse R-levels: (c ⊞ d) ⊞ a = d ⊞ (R_a + R_c).
    if isinstance(b, SubordinationLaw) and b.level.kind == "R" and getattr(
            ra, "rational", True) and getattr(b.level.transform, "rational", True):
        partner = free_additive(a, b.level.partner) if ra.source is not None else None
        combined = ra.plus(b.level.transform, source=partner)
        return SubordinationLaw(RLevel(combined, partner), b.constituent, opts)
    return SubordinationLaw(RLevel(ra, a), b, opts)


def free_multiplicative(a, b, *, options=None):
    """Free multiplicative convolution ``a ⊠ b`` of laws on ``[0, oo)``.

    The law of ``A^{1/2} U B U^* A^{1/2}``, by subordination with the
    S-transform of ``a``: ``w = tau G_b(tau) - 1``, ``z = tau / S_a(w)``,
    ``G(z) = G_b(tau) S_a(w)`` (theory eq. (8.9)).

    Parameters
    ----------
    a, b : SpectralLaw
        Laws on ``[0, oo)``; at least one must have a known S-transform
        (Marchenko-Pastur, a single positive atom, or a free multiplicative
        convolution of those); the other can be any law.
    options : SolverOptions, optional

    Returns
    -------
    SubordinationLaw

    Raises
    ------
    ValueError
        If a law has mass below 0.

    Examples
    --------
    >>> import freeattn
    >>> mp = freeattn.marchenko_pastur(1.0, 1.0)
    >>> fc = freeattn.free_multiplicative(mp, mp)       # Fuss-Catalan: moments 1, 3, 12
    >>> [round(fc.moment(k), 10) for k in (1, 2, 3)], round(fc.support()[1], 12)
    ([1.0, 3.0, 12.0], 6.75)
    """
    from ..core._options import check_options

    _check_law(a, "a")
    _check_law(b, "b")
    _check_nonnegative(a, "a")
    _check_nonnegative(b, "b")
    opts = check_options(options) if options is not None else a.options
    sa, sb = a._s_transform(), b._s_transform()
    if sa is None and sb is None:
        # Neither law has a rational S-transform: analytic subordination, theory
        # eqs. (14.4)-(14.6) for two factors, one system in all of them (eq. (14.8))
        # when a factor is itself such a product.
        from ._analytic import AnalyticLaw, analytic_multiplicative
        from ._chain import ProductChainLaw

        def factors(law):
            if isinstance(law, ProductChainLaw):
                return list(law.factors)
            if isinstance(law, AnalyticLaw) and law.multiplicative:
                return [law.a, law.b]
            return [law]

        parts = factors(a) + factors(b)
        if len(parts) > 2:
            return ProductChainLaw(parts, opts)
        return analytic_multiplicative(a, b, options=opts)
    if sa is None:
        a, b, sa = b, a, sb
    if isinstance(b, SubordinationLaw) and b.level.kind == "S" and getattr(
            sa, "rational", True) and getattr(b.level.transform, "rational", True):
        partner = free_multiplicative(a, b.level.partner)
        combined = sa.times(b.level.transform, source=partner)
        return SubordinationLaw(SLevel(combined, partner), b.constituent, opts)
    return SubordinationLaw(SLevel(sa, a), b, opts)
