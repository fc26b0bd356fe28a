"""The algebraic solver of composed laws: a rational Stieltjes curve (theory section 8.4).

When every level of a law down to its point-mass leaves is rational, ``z = Z(t)``
is a polynomial equation in the leaf variable ``t``, solved in batches
(companion eigenvalues); the Stieltjes branch is the root whose subordination
points all lie in the closed upper half-plane (eq. (8.10)), and the edges are
the real critical points of ``Z`` (eqs. (8.11)-(8.12)).  Used by
:class:`freeattn.compose._subordination.SubordinationLaw`.

Nothing in this module prints or does I/O.
"""

from fractions import Fraction

import numpy as np

from ..algebra._rational import all_roots, batched_roots, padd, pmul, trim
from ..core._errors import ConvergenceError
from ..laws._law_base import SOFT, Interval
from ._fixed_point import polish_newton

__all__ = ["RationalSolver"]

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
#: Newton polish of those real roots: at most this many steps, each at most this
#: long relative to the root (a longer one means a multiple root).
REAL_ROOT_STEPS = 20
REAL_ROOT_MAX_STEP = 1e-3

#: Newton steps polishing companion-matrix eigenvalues: they are backward
#: stable, so a simple root needs 2-3 steps from the nudged start (quadratic
#: convergence from a relative offset 1e-6); a multiple root stalls and stops.
POLISH_MAX_ITER = 8
#: Newton polishing stops when a step is not below this fraction of the previous
#: one.  Next to a (nearly) double root Newton converges linearly with ratio 1/2
#: until it is closer to one root than to the other, so the ratio must exceed 1/2.
NEWTON_STALL_RATIO = 0.9

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

#: A selected root whose residual ``|Z(t) - z|`` on the factored tower exceeds this
#: fraction of ``|z|`` and which the factored polish did not move is polished again
#: with ``RESCUE_MOVE`` among all candidates (:meth:`RationalSolver._select`).
TOWER_RESIDUAL_RTOL = 1e-9
#: How far (relative) the polish may move a rescue seed
#: (:meth:`RationalSolver._rescue`): the seed, a root of the local quadratic
#: model at a real root, is off by the model's cubic term; the branch test
#: checks where Newton lands.
RESCUE_MOVE = 0.1
#: A rescue polish that went more than ``RESCUE_RESTART_FRACTION`` of ``RESCUE_MOVE`` is
#: restarted from where it stopped, up to this many passes in all: the coefficient roots
#: of a tall tower next to its hard edge at 0 can be further than ``RESCUE_MOVE`` from
#: the factored tower's (11 % for the branch of the degree-12 tower of three sample
#: covariances of ``attention(0.42, 0.30)²`` at ``x = 2.9e-5``), and a polish stopped at
#: the limit left only real roots on other sheets (theory section 8.4).
RESCUE_PASSES = 3
#: ... a polish counts as stopped at its reach when it moved more than this fraction of it.
RESCUE_RESTART_FRACTION = 0.5

#: A first edge within this fraction of the upper edge from 0 is the structural
#: hard edge at 0 (:func:`_snap_hard_edge`); measured offsets are 1e-17 to 1.2e-6.
HARD_EDGE_SNAP_RTOL = 1e-4

#: Points closer to a hard edge at 0 than this fraction of the support's
#: extent are not rescued (:meth:`RationalSolver.solve`): there the factored
#: tower cancels too (at 3e-22 of the extent the square attention law's tower
#: gave a root on another sheet), while the representation of a multi-head law
#: with a square factor samples its density down to 2e-10 of the extent.
HARD_EDGE_RESCUE_RTOL = 1e-13

#: Points within this fraction of the extent from a hard edge at 0 take ``G``
#: from the local model's Newton when the law provides it
#: (:attr:`RationalSolver.hard_edge_branch`): the tower's roots there lose up to
#: 1.5e-10 relative at 1e-14 of the extent (the attention law at ``beta = 1``),
#: all digits at ``beta = 1e-8``, while the model's Newton agrees with mpmath
#: to 7e-16 from 1e-40 to 1e-7 of the extent (tests/test_laws.py).
HARD_EDGE_MODEL_RTOL = 1e-6

#: Test points of the outer t-intervals ``(-oo, t_1)``, ``(t_k, oo)`` of the
#: support search sit ``OUTER_TEST_FACTOR * max(1, |t|)`` beyond the break:
#: never at ``t = 0`` (a factor 1 put them there for every break ``|t| >= 1``).
OUTER_TEST_FACTOR = 1.5
#: ... and an inner interval symmetric about 0 is tested at this fraction.
INNER_TEST_FRACTION = 0.381966

#: Points within this fraction of an edge's local scale (the smallest of its
#: distance to 0, its band's width and the gap beside it) from a square-root
#: edge take the branch from Newton on the factored tower seeded by the edge's
#: quadratic model (:meth:`RationalSolver._edge_seeded`, theory eq. (8.20)):
#: the coefficient roots of the multi-head tower at ``beta = 0.15`` gave another
#: root from 1e-7 of its lower edge inwards, with 1e-6 of the edge 8e-10 off.
EDGE_SEED_RTOL = 1e-4
#: ... on towers of at least this degree: the cubics and quartics of the peers'
#: compositions and of the attention law keep their edges' roots apart (their
#: coefficients do not cancel), and the seeded solve would cost them a second
#: selection per call.
EDGE_SEED_MIN_DEGREE = 5
#: An edge far below the law's extent gets a zone of at least ``EDGE_SEED_EXTENT_RTOL``
#: of the extent (the region where ``G`` alone comes from the representation,
#: ``NEAR_EDGE_RTOL``), up to ``EDGE_SEED_MAX_RTOL`` of its local scale: 2.7e-15 outside
#: the lower edge 2.04e-11 of a tower on ``[2e-11, 1.8e-4]`` (its zone 2e-15 wide) the
#: coefficient roots gave ``(G, G')`` from a complex pair, ``F = 1/G`` 4e-3 off, and a
#: host's curves (eq. (14.20)) raised.
EDGE_SEED_EXTENT_RTOL = 1e-9
EDGE_SEED_MAX_RTOL = 1e-2

#: A break where the expanded denominator of ``Z`` vanishes is a pole only if the
#: factored tower blows up there too (theory eq. (8.33)): ``|Z(t)|`` above
#: ``POLE_CONFIRM_RATIO`` times ``|Z|`` at ``t (1 +- POLE_PROBE_RTOL)``.  At a pole
#: rounded to ``k`` ulps the ratio is about ``POLE_PROBE_RTOL / (k eps)``, 1e10 at
#: ``k = 64``; where the tower is continuous it is about 1.  The expanded
#: coefficients of a product of a small-``beta`` attention law with three
#: Marchenko-Pastur laws lose their low-order terms to cancellation (5.8e-16 where
#: 0 is exact, against 4e-8 at higher orders) and have spurious real roots at
#: ``|t| ~ 0.05``, where ``Z`` is finite: read as poles, they swallowed the support.
POLE_PROBE_RTOL = 1e-4
POLE_CONFIRM_RATIO = 1e3

#: The same cancellation loses critical points of ``Z`` (the lower edge of that
#: product, at ``t = 7e-5``, is a root of no expanded coefficient's polynomial).
#: On towers of degree at least ``EDGE_SEED_MIN_DEGREE`` the factored ``Z'`` is
#: also scanned at ``SCAN_PER_DECADE`` points a decade on ``+-[SCAN_LOW, SCAN_HIGH]``
#: times the largest break (at least 1); a sign change with no expanded critical
#: point or pole between its two points is bisected ``SCAN_BISECTIONS`` times (a
#: relative 1e-7 of its cell) and joins the critical points before their polish.
SCAN_PER_DECADE = 16
SCAN_LOW = 1e-12
SCAN_HIGH = 1e2
SCAN_BISECTIONS = 24


def _real_roots(poly, tol=REAL_CRITICAL_RTOL, roots=None):
    """Real roots of a polynomial (lowest first), Newton-polished, with multiplicities merged
    (``roots``: all its roots, when already computed)."""
    return _real_roots_of([poly], tol, [roots])[0]


def _real_roots_of(polys, tol=REAL_CRITICAL_RTOL, roots=None):
    """:func:`_real_roots` of several polynomials, polished in one batch.

    Each root takes the same Newton steps as alone (Horner on its own
    polynomial's coefficients, padded with leading zeros, which Horner's
    recurrence carries exactly): one polish instead of one per polynomial.
    """
    roots = [None] * len(polys) if roots is None else roots
    reals, coeffs = [], []
    for poly, rts in zip(polys, roots):
        poly = trim(poly)
        if poly.size < 2:
            reals.append(np.empty(0))
            continue
        if rts is None:
            rts = all_roots(poly)
        real = np.sort(rts[np.abs(rts.imag) <= tol * np.abs(rts)].real)
        reals.append(real)
        coeffs.extend([np.asarray(poly, dtype=float)] * real.size)
    if not coeffs:
        return reals
    size = max(c.size for c in coeffs)
    pc = np.zeros((size, len(coeffs)))
    for j, c in enumerate(coeffs):
        pc[:c.size, j] = c
    dc = pc[1:] * np.arange(1, size)[:, None]

    def step_of(x, idx):
        # real values in complex arithmetic with zero imaginary parts: exact
        return (_horner(pc[:, idx], x) / _horner(dc[:, idx], x)).real

    def accept(xn, x, idx):
        # a longer step: a multiple root, whose eigenvalue estimate is kept
        return np.abs(x - xn) <= REAL_ROOT_MAX_STEP * np.maximum(np.abs(x), _TINY)
    flat = polish_newton(step_of, np.concatenate(reals), REAL_ROOT_STEPS, 4 * _EPS,
                         accept=accept)
    out, at = [], 0
    for real in reals:
        out.append(flat[at:at + real.size])
        at += real.size
    return out

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
        #: ``polisher(tau, z, g, derivative=False)`` refines the outermost
        #: subordination point by Newton on ``Phi(tau) = z`` with the constituent's
        #: closed-form transform (set by the law when its constituent has one);
        #: returns ``(G, taken)``, ``G`` keeping ``g`` where ``taken`` is False
        #: (with ``derivative``, ``(G, G', taken)``, ``G'`` NaN where not taken).
        self.polisher = None
        #: ``hard_edge_branch(z)`` returns ``G`` (NaN where it fails) next to a
        #: hard edge at 0, where the tower keeps no digits (set by the law).
        self.hard_edge_branch = None
        #: ``(x_e, t_e, Z''(t_e), zone)`` of every square-root edge, once
        #: :meth:`support` has run (:meth:`_edge_seeded`).
        self.soft_edges = []

    # -- the branch ---------------------------------------------------------------------
    def solve(self, z, leaf=True, derivative=False):
        """Leaf variable ``t`` of the Stieltjes branch at each ``z`` (1-d, ``Im z >= 0``).

        Returns ``(t, G)``.  With ``leaf=False`` only ``G`` is wanted: where the
        :attr:`polisher` gives ``G``, the leaf variable is not polished on the
        factored tower (``t`` is then the coefficient root; ``G`` is the same).
        With ``derivative`` (and ``leaf=False``) also ``G'``, the polisher's where
        it gives ``G`` and NaN elsewhere (``t`` is polished there, and ``G'`` is
        read off the tower's stages at it): ``(t, G, G')``.
        """
        if self.hard_edge_branch is not None and self.extent is not None:
            # Next to the hard edge the local model's Newton is exact to rounding
            # where the tower keeps fewer digits (theory eq. (8.27)): preferred
            # there; the leaf variable of such a point is NaN.
            sel = np.nonzero(np.abs(z) <= HARD_EDGE_MODEL_RTOL * self.extent)[0]
            if sel.size:
                gh = self.hard_edge_branch(z[sel])
                fixed = np.isfinite(gh)
                t = np.full(z.shape, np.nan + 0j)
                g = np.empty(z.shape, dtype=complex)
                dg = np.full(z.shape, np.nan + 0j)
                g[sel[fixed]] = gh[fixed]
                rest = np.ones(z.shape, dtype=bool)
                rest[sel[fixed]] = False
                if rest.any():
                    t[rest], g[rest], d = self._solve_tower(z[rest], leaf, derivative)
                    if derivative:
                        dg[rest] = d
                return (t, g, dg) if derivative else (t, g)
        out = self._solve_tower(z, leaf, derivative)
        return out if derivative else out[:2]

    def _solve_tower(self, z, leaf=True, derivative=False):
        """:meth:`solve` by the roots of the tower's polynomial (eqs. (8.10)-(8.11));
        returns ``(t, G, G')``, ``G'`` NaN where the polisher did not give it (and
        ``None`` without ``derivative``)."""
        opts = self.options
        coeffs = self.num[:, None] - z[None, :] * self.den[:, None]
        top = coeffs.shape[0] - 1
        while top > 0 and np.all(coeffs[top] == 0):
            top -= 1
        coeffs = coeffs[:top + 1]
        roots = batched_roots(coeffs)
        roots = self._newton(coeffs, roots + 1j * opts.root_nudge * np.abs(roots))
        t, g, bad, failed, message, dg = self._select(roots, z, leaf=leaf,
                                                      derivative=derivative)
        if self.soft_edges:
            # every point within the zone of a square-root edge, seeded by that edge
            which = np.full(z.shape, -1)
            for k, (xe, _, _, zone) in enumerate(self.soft_edges):
                which[(which < 0) & (np.abs(z - xe) <= zone)] = k
            sel = np.flatnonzero(which >= 0)
            if sel.size:
                edges = np.array(self.soft_edges, dtype=complex)[which[sel]]
                ts, gs, ok = self._edge_seeded(edges[:, 0].real, edges[:, 1].real,
                                               edges[:, 2], z[sel])
                keep = sel[ok]
                t[keep], g[keep] = ts[ok], gs[ok]
                bad[keep] = failed[keep] = False
                if dg is not None:
                    dg[keep] = np.nan
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
                if dg is not None:
                    dg[sel] = np.nan
            bad &= ~near
        if bad.any():
            t[bad], g[bad] = self._rescue(roots[:, bad], z[bad])
            if dg is not None:
                dg[bad] = np.nan
        return t, g, dg

    def _second_derivative(self, t, h):
        """``Z''(t)`` by a central difference of ``Z'`` (from the factored stages) with
        step ``h``, for the local quadratic model of eq. (8.20)."""
        return (self.curve.stages(t + h)[2][-1] - self.curve.stages(t - h)[2][-1]) / (2.0 * h)

    def _edge_seeded(self, xe, te, d2, z):
        """The branch next to a square-root edge from its quadratic model (eq. (8.20)).

        At the simple critical point ``t_e`` of the edge ``x_e = Z(t_e)`` the local
        quadratic model of eq. (8.20) has ``Z'(t_e) = 0``: both its roots
        ``t_e +- sqrt(2 (z - x_e) / Z''(t_e))`` seed Newton on the factored tower,
        and the selection of eq. (8.10) picks the branch among the two.  The
        expanded polynomial of a tall tower, whose two roots there are a
        near-double pair, can give another root instead.  Returns ``(t, G, ok)``.
        """
        with np.errstate(all="ignore"):
            step = np.sqrt(2.0 * (z - xe) / d2 + 0j)
            seeds = np.stack([te + step, te - step])
            cand = self._polish_factored(seeds, z[None, :], max_move=RESCUE_MOVE)
        t, g, bad, _, _, _ = self._select(cand, z)
        return t, g, ~bad & np.isfinite(g)

    def _record_soft_edges(self, intervals, edge_points):
        """``soft_edges`` from the support's intervals and the leaf points of their edges
        (a tower of degree at least ``EDGE_SEED_MIN_DEGREE`` only)."""
        self.soft_edges = []
        if self.num.size - 1 < EDGE_SEED_MIN_DEGREE:
            return
        bounds = sorted(v for iv in intervals for v in (iv.lo, iv.hi))
        for iv in intervals:
            for x, expo in ((iv.lo, iv.lo_exponent), (iv.hi, iv.hi_exponent)):
                te = edge_points.get(x)
                if expo != Fraction(1, 2) or te is None or not np.isfinite(te):
                    continue
                others = [abs(v - x) for v in bounds if v != x]
                # the edge's local scale: its distance to 0 and to the other edges
                local = min([v for v in [abs(x)] + others if v > 0.0], default=0.0)
                if not local > 0.0:
                    continue
                with np.errstate(all="ignore"):
                    d2 = complex(self._second_derivative(
                        np.array([te + 0j]), CRITICAL_DIFF_STEP * max(abs(te), _TINY))[0])
                if np.isfinite(d2) and d2 != 0:
                    zone = min(max(EDGE_SEED_RTOL * local,
                                   EDGE_SEED_EXTENT_RTOL * (self.extent or 0.0)),
                               EDGE_SEED_MAX_RTOL * local)
                    self.soft_edges.append((x, te, d2, zone))

    def _rescue(self, roots, z, strict=True):
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

        With ``strict`` (the default) a point left without a root on the branch
        raises :class:`ConvergenceError`; without it, ``(t, G, bad)`` is returned
        with ``bad`` marking those points (the re-selection of stuck roots in
        :meth:`_select`, theory section 8.4).
        """
        polished = self._polish_factored(roots, z[None, :], max_move=RESCUE_MOVE)
        restart = RESCUE_RESTART_FRACTION * RESCUE_MOVE
        with np.errstate(invalid="ignore"):
            far = np.abs(polished - roots) > restart * np.abs(roots)
        for _ in range(RESCUE_PASSES - 1):
            if not far.any():
                break
            start = polished[far]
            polished[far] = self._polish_factored(
                start, np.broadcast_to(z[None, :], polished.shape)[far], max_move=RESCUE_MOVE)
            with np.errstate(invalid="ignore"):
                far[far] = np.abs(polished[far] - start) > restart * np.abs(start)
        tol = self.options.real_root_rtol * REAL_ROOT_SCORE_FACTOR
        realish = np.isfinite(polished) & (np.abs(polished.imag) <= tol * np.abs(polished))
        r = np.where(realish, polished.real, np.nan) + 0j
        h = CRITICAL_DIFF_STEP * np.abs(r)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            zs, _, dzs, _ = self.curve.stages(r)
            d2 = self._second_derivative(r, h)
            # Z(r) + Z'(r) e + Z''(r) e**2/2 = z: both roots e of the local quadratic (8.20).
            disc = np.sqrt(dzs[-1] ** 2 - 2.0 * d2 * (zs[-1] - z[None, :]))
            seeds = [self._polish_factored(r + (-dzs[-1] + sign * disc) / d2, z[None, :],
                                           max_move=RESCUE_MOVE)
                     for sign in (1.0, -1.0)]
            if self.soft_edges:
                # and the quadratic model of the nearest square-root edge (eq. (8.20)),
                # beyond its zone: inside a band of a tall tower the coefficient roots
                # can all be real, on other sheets (the top 1.5 % of the band [6.6e-16,
                # 3.5e-12] of sample_covariance(attention(0.0011, 0.134)², 1.19))
                xe, te, d2e, _ = (np.array(v) for v in zip(*self.soft_edges))
                k = np.argmin(np.abs(z.real[:, None] - xe.real[None, :]), axis=1)
                step = np.sqrt(2.0 * (z - xe[k]) / d2e[k] + 0j)
                seeds += [self._polish_factored((te[k] + sign * step)[None, :], z[None, :],
                                                max_move=RESCUE_MOVE)
                          for sign in (1.0, -1.0)]
        t, g, bad, failed, message, _ = self._select(np.concatenate([polished] + seeds), z,
                                                  retry=strict)
        if not strict:
            return t, g, bad
        if failed.any():
            raise ConvergenceError(message[0], **message[1])
        return t, g

    def _newton(self, coeffs, t):
        """Polish roots by Newton's method on the coefficients, point by point until
        each step is a few ulps (the shared :func:`~._fixed_point.polish_newton`).

        A root whose step stops shrinking (a multiple root, converging linearly)
        keeps its current value; the branch test decides about it.
        """
        der = coeffs[1:] * np.arange(1, coeffs.shape[0])[:, None]
        cols = np.broadcast_to(np.arange(t.shape[1]), t.shape).ravel()

        def step_of(ta, idx):
            if idx.size == cols.size:
                # every root (the first rounds): each column's coefficients broadcast
                # over its roots, the same operations without the gathers
                ta2 = ta.reshape(t.shape)
                p = _horner(coeffs[:, None, :], ta2).ravel()
                dp = _horner(der[:, None, :], ta2).ravel()
            else:
                c = cols[idx]
                p = _horner(coeffs[:, c], ta)
                dp = _horner(der[:, c], ta)
            step = np.where(dp != 0, p / dp, 0)
            return np.where(np.isfinite(step), step, 0)
        return polish_newton(step_of, t, POLISH_MAX_ITER, self.options.newton_rtol,
                             NEWTON_STALL_RATIO)

    def _select(self, roots, z, retry=True, leaf=True, derivative=False):
        """The admissible root: all subordination points in the closed upper half-plane
        (eq. (8.10)); with ``retry``, roots stuck far from ``Z(t) = z`` are polished
        with the rescue's reach and selected again.  Without ``leaf`` (only ``G``
        wanted, :meth:`solve`) the :attr:`polisher` runs first and the factored
        polish only where it left ``G`` alone: the same ``G`` at every point, since the
        polisher starts from the coefficient root's subordination point either way;
        with ``derivative`` it also gives ``G'`` there (the last value returned: NaN
        where the polisher did not give it, None without ``derivative``)."""
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
        inner = zs[:-2] if self.curve.levels and not self.curve.levels[-1].subordinating \
            else zs[:-1]
        zk = np.stack([roots] + inner + partners)                # (points, d, m)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            im_rel = zk.imag / np.maximum(np.abs(zk), _TINY)
            score = im_rel.min(axis=0)                            # (d, m)
            res = np.abs(zs[-1] - z[None, :]) / (np.abs(z)[None, :] + np.abs(roots)
                                                 + self.scale)
        res = np.where(np.isfinite(res), res, np.inf)
        ok = (res < opts.branch_rtol) & (score >= -opts.branch_rtol) & np.isfinite(gs[-1])
        real_score = np.abs(score) <= opts.real_root_rtol * REAL_ROOT_SCORE_FACTOR
        rr = roots.real + 0j
        cols = np.arange(z.size)
        # The tests that call a partner's transform run lazily, on the candidates the
        # selection would take (the same choice as testing all of them first: the one
        # taken passes, and is the best of a larger set): a real point's tower has up
        # to its degree of real roots, and the partner of a collapsed level is itself
        # a tower (theory section 8.12, eqs. (8.10), (8.11))
        checked = np.zeros(ok.shape, dtype=bool)      # the partner test of eq. (8.10)
        known = np.zeros(ok.shape, dtype=bool)        # the test of eq. (8.11)
        increasing = np.zeros(ok.shape, dtype=bool)
        while True:
            real = ok & real_score
            need = real & ~known
            if need.any():
                # Off the support only real roots remain; the Stieltjes value is the one
                # on which every level increases (eq. (8.11)), the partners' test only
                # where the levels do
                zr, gr, dzr, _ = self.curve.stages(rr[need])
                up = np.all(np.stack(dzr).real > 0, axis=0)
                if up.any():
                    up[up] = self.curve.partner_valid([zk[up] for zk in zr],
                                                      [gk[up] for gk in gr],
                                                      opts.branch_rtol)
                increasing[need] = up
                known |= need
            sc = np.where(real, np.where(increasing, 0.0, -1.0), score)
            sc = np.where(ok, sc, -np.inf)
            # Ties (real roots, and a root whose only nearly real points are functions
            # of z, as under a single-atom partner, all score 0) go to the largest -Im G:
            # inside the support the branch is the one candidate with a density, eq.
            # (8.10); their order from the root finder decided before.
            best = sc.max(axis=0)
            with np.errstate(invalid="ignore"):
                density = np.where(ok & (sc == best[None, :]), -gs[-1].imag, -np.inf)
            idx = np.argmax(density, axis=0)
            todo = np.flatnonzero(ok[idx, cols] & ~checked[idx, cols])
            if not partner_info or not todo.size:
                break
            # A partner's subordination point must also be on the partner's true
            # branch (eq. (8.10)): a root of the tower polynomial can put it in C+ on
            # another sheet of the partner's transform.
            ri, ci = idx[todo], todo
            checked[ri, ci] = True
            passed = np.ones(todo.size, dtype=bool)
            for level, k, pt in partner_info:
                ps = pt[ri, ci]
                sel = np.isfinite(ps)
                if sel.any():
                    # A point on the partner's support up to rounding is read on the
                    # upper side (the boundary value of the Stieltjes branch).
                    ps = ps[sel].real + 1j * np.maximum(ps[sel].imag, 0.0)
                    mism = level.partner_check(ps, zs[k - 1][ri, ci][sel],
                                               gs[k - 1][ri, ci][sel], gs[k][ri, ci][sel])
                    passed[np.flatnonzero(sel)[~(mism <= np.sqrt(opts.branch_rtol))]] = False
            if passed.all():
                break
            ok[ri[~passed], ci[~passed]] = False
        score = sc
        decreasing = real & ~increasing
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
        rest = good.copy()              # the points whose leaf is polished
        dg = np.full(z.shape, np.nan + 0j) if derivative else None
        if self.polisher is not None and not leaf and good.any():
            taken = np.zeros(z.shape, dtype=bool)
            if derivative:
                g[good], dg[good], taken[good] = self.polisher(
                    zs[-2][idx, cols][good], z[good], g[good], derivative=True)
            else:
                g[good], taken[good] = self.polisher(zs[-2][idx, cols][good], z[good],
                                                     g[good])
            rest &= ~taken
        t_coeff = t.copy()
        if rest.any():
            t[rest], g[rest] = self._polish_factored(t[rest], z[rest], g[rest])
        if retry:
            # A root the coefficients placed farther than the factored polish may move
            # (its residual on the factored tower far above rounding relative to z, and
            # no step taken): the residual test above is relative to |t| + scale, which
            # at z many decades below the leaf's size passes a root 4.5e-5 off in z
            # (a band at 1e-10 of a law on [0, 1.4e-4], eq. (8.10)).  Every candidate is
            # polished with the rescue's reach and the selection is made again.
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.abs(zs[-1][idx, cols] - z) / np.abs(z)
            stuck = np.flatnonzero(rest & (rel > TOWER_RESIDUAL_RTOL) & (t == t_coeff))
            if stuck.size:
                # the rescue's candidates: a real root next to a nearly double one
                # stays real under Newton at a real z, and only the local quadratic
                # model's seeds reach the complex pair (next to a square-root edge
                # beyond the zone its seeds serve, eq. (8.20))
                t2, g2, bad2 = self._rescue(roots[:, stuck], z[stuck], strict=False)
                keep = ~bad2
                t[stuck[keep]], g[stuck[keep]] = t2[keep], g2[keep]
        if self.polisher is not None and leaf and good.any():
            tau = zs[-2][idx, cols]
            g[good] = self.polisher(tau[good], z[good], g[good])[0]
        return t, g, failed | (good & decreasing[idx, cols]), failed, message, dg

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

        def step_of(ta, idx):
            zs, _, dzs, _ = self.curve.stages(ta)
            return (zs[-1] - z[idx]) / dzs[-1]

        def accept(tn, ta, idx):
            ok = np.abs(tn - t0[idx]) <= move[idx] * np.abs(t0[idx])
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
            return ok
        t = polish_newton(step_of, t, FACTORED_MAX_ITER, self.options.newton_rtol,
                          NEWTON_STALL_RATIO, accept, active=np.isfinite(t) & (t != 0))
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
        all_crit = all_roots(crit_poly) if crit_poly.size > 1 else np.empty(0)
        # the critical points and the levels' poles, polished in one batch
        pole_polys = [poly for (nk, dk, ak, bk) in curve.polys for poly in (dk, bk)
                      if poly.size > 1]
        raw, *pole_roots = _real_roots_of([crit_poly] + pole_polys,
                                          roots=[all_crit] + [None] * len(pole_polys))
        if curve.degree >= EDGE_SEED_MIN_DEGREE:
            lost = self._scanned_critical(np.concatenate([raw] + pole_roots))
            if lost.size:
                raw = np.sort(np.concatenate([raw, lost]))
                all_crit = np.concatenate([all_crit, lost])
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
        poles = np.concatenate(pole_roots) if pole_roots else np.empty(0)
        poles = _cluster(poles)[0] if poles.size else np.empty(0)
        breaks = np.sort(np.concatenate([crit_c, poles]))
        breaks = _cluster(breaks)[0] if breaks.size else breaks
        # Roots of Z' and of the denominators, for multiplicities at the edges.
        b_roots = all_roots(b) if b.size > 1 else np.empty(0)
        a_roots = all_roots(a) if a.size > 1 else np.empty(0)

        pieces = []                   # (x_left, x_right, t_left, t_right)
        ends = np.concatenate([[-np.inf], breaks, [np.inf]])
        mids = []
        for tl, tr in zip(ends[:-1], ends[1:]):
            # A test point inside each t-interval, never t = 0: there the leaf
            # variable is degenerate (Z(0) = 0 with a pole of the outer levels'
            # partner terms), and the point fails eq. (8.11) whatever the interval
            # (tr - max(1, tr) = 0 dropped the outside (-oo, lower edge) of
            # sample_covariance(point_masses([2.0]), 0.1)).
            if np.isinf(tl) and np.isinf(tr):
                mids.append(1.0)
            elif np.isinf(tl):
                mids.append(tr - OUTER_TEST_FACTOR * max(1.0, abs(tr)))
            elif np.isinf(tr):
                mids.append(tl + OUTER_TEST_FACTOR * max(1.0, abs(tl)))
            else:
                mid = 0.5 * (tl + tr)
                mids.append(mid if mid != 0.0 else tl + INNER_TEST_FRACTION * (tr - tl))
        valid = self._valid(np.array(mids))
        left, right = ends[:-1][valid], ends[1:][valid]
        xl, xr = np.split(self._end_values(np.r_[left, right], np.r_[np.ones(left.size),
                                                                     -np.ones(right.size)]), 2)
        pieces = list(zip(xl.tolist(), xr.tolist(), left.tolist(), right.tolist()))
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
        edge_points = {}
        for left, right in zip(merged[:-1], merged[1:]):
            lo, hi = left[1], right[0]
            if hi - lo <= self.options.edge_merge_rtol * max(abs(lo), abs(hi), _TINY):
                continue                                      # an atom or a closed gap
            e_lo = self._exponent(origin(left[3]), all_crit, a_roots,
                                  b_roots, lo)
            e_hi = self._exponent(origin(right[2]), all_crit, a_roots,
                                  b_roots, hi)
            intervals.append([float(lo), float(hi), e_lo, e_hi])
            edge_points[float(lo)], edge_points[float(hi)] = left[3], right[2]
        if intervals:
            self.extent = max(max(abs(iv[0]), abs(iv[1])) for iv in intervals)
        intervals = _snap_hard_edge(intervals, self.hard_edges, self.options)
        self._record_soft_edges(intervals, edge_points)
        return intervals

    def _scanned_critical(self, known):
        """Sign changes of the factored ``Z'`` that no point of ``known`` explains.

        The expanded numerator of ``Z'`` (eq. (8.12)) loses roots to the
        cancellation of its coefficients; the scan (``SCAN_PER_DECADE``) finds
        them on the factored tower, bisected to ``SCAN_BISECTIONS`` halvings.
        """
        known = np.sort(known[np.isfinite(known)])
        top = max(float(np.max(np.abs(known))) if known.size else 1.0, 1.0)
        decades = np.log10(SCAN_HIGH / SCAN_LOW)
        mags = top * np.geomspace(SCAN_LOW, SCAN_HIGH, int(decades * SCAN_PER_DECADE) + 1)
        t = np.concatenate([-mags[::-1], mags])

        def slope(t):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return self.curve.stages(t.astype(complex))[2][-1].real
        d = slope(t)
        lo, hi, dlo, dhi = t[:-1], t[1:], d[:-1], d[1:]
        change = np.isfinite(dlo) & np.isfinite(dhi) & (np.sign(dlo) * np.sign(dhi) < 0)
        # no expanded critical point or pole between or at the two points (the grid
        # holds the largest break itself)
        change &= np.searchsorted(known, lo, "left") == np.searchsorted(known, hi, "right")
        lo, hi, slo = lo[change], hi[change], np.sign(dlo[change])
        if not lo.size:
            return np.empty(0)
        for _ in range(SCAN_BISECTIONS):
            mid = 0.5 * (lo + hi)
            same = np.sign(slope(mid)) == slo
            lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
        return 0.5 * (lo + hi)

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

        def dz_and_slope(t):
            # Z'(t) and its central difference, in one evaluation of the stages
            h = CRITICAL_DIFF_STEP * np.maximum(np.abs(t), _TINY)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                d = self.curve.stages(np.concatenate([t, t + h, t - h]).astype(complex)
                                      )[2][-1].real.reshape(3, t.size)
                return d[0], (d[1] - d[2]) / (2.0 * h)

        # Z' and Z'' at each point's current value (the step of the next round)
        cur, slope = dz_and_slope(crit)
        d0 = np.abs(cur)

        def step_of(ta, idx):
            return cur[idx] / slope[idx]

        def accept(tn, ta, idx):
            dn, sn = dz_and_slope(tn)
            an = np.abs(dn)
            ok = np.isfinite(an) & (an < d0[idx]) & (np.abs(tn - crit[idx]) <= limit[idx])
            d0[idx[ok]], cur[idx[ok]], slope[idx[ok]] = an[ok], dn[ok], sn[ok]
            return ok
        return polish_newton(step_of, crit, FACTORED_MAX_ITER, accept=accept,
                             active=np.ones(crit.shape, dtype=bool))

    def _valid(self, t):
        """Whether every level increases at each real leaf point (eq. (8.11))."""
        zs, gs, dzs, _ = self.curve.stages(t.astype(complex))
        dz = np.stack(dzs).real
        return np.all((dz > 0) & np.isfinite(dz), axis=0) & self.curve.partner_valid(
            zs, gs, self.options.branch_rtol)

    def _end_values(self, t, side):
        """``lim Z`` at ends ``t`` of increasing t-intervals (``side=+1``: a left end)."""
        out = np.array(t, dtype=float)
        fin = np.flatnonzero(np.isfinite(out))
        if not fin.size:
            return out
        tf = out[fin]
        dval = _P.polyval(tf, self.den)
        nval = _P.polyval(tf, self.num)
        pole = np.abs(dval) <= 1e-12 * (np.abs(tf)[:, None] ** np.arange(self.den.size)
                                        @ np.abs(self.den))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = self.curve.z_of(tf.astype(complex))
            value = np.where(np.isfinite(z), z.real, nval / dval)
            if pole.any():
                # the factored tower confirms the pole (eq. (8.33))
                near = self.curve.z_of(np.concatenate(
                    [tf * (1.0 - POLE_PROBE_RTOL), tf * (1.0 + POLE_PROBE_RTOL)]
                ).astype(complex)).reshape(2, tf.size)
                scale = np.max(np.abs(near), axis=0)
                finite = np.isfinite(z) & np.all(np.isfinite(near), axis=0)
                pole &= ~finite | (np.abs(z) > POLE_CONFIRM_RATIO * scale)
        out[fin] = np.where(pole, np.where(side[fin] > 0, -np.inf, np.inf), value)
        return out

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
