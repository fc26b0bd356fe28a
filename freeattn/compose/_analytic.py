"""Free convolutions of arbitrary laws by analytic subordination (theory section 14).

For any two laws whose Cauchy transforms are computable off the real axis,
``a ⊞ b`` and ``a ⊠ b`` are solved by the fixed-point problems of theory
eqs. (14.1)-(14.4) (Belinschi & Bercovici 2007): the iteration reaches the
branch from any start, Newton polishes it, and continuation in ``Im z`` brings
it to the real axis.  Edges are the real points where the fixed-point map's
Jacobian is singular (eq. (14.5)), found by bordered Newton; discrete laws with
many atoms are evaluated by a chunked sum over the atoms (cost linear in
their number).
"""

import math
from contextlib import contextmanager
from fractions import Fraction

import numpy as np

from ..algebra._levels import HARD_EDGE_MASS_RTOL
from ..core._errors import ConvergenceError
from ._atom_tree import TREE_MIN_ATOMS, AtomTree, sums_nearest_apart
from ._fixed_point import (FixedPointProblem, FixedPointResult, edge_newton, iterate,
                           WarmTable, newton)
from ._pole_edge import (POLE_MODEL_NEAR, POLE_MODEL_REACH, PoleEdge, pole_candidates,
                          pole_edge_pair)
from ..laws._elementary import PointMasses
from ..laws._law_base import NESTED_SOLVE_FACTOR, Interval, SpectralLaw

__all__ = ["AnalyticLaw", "analytic_additive", "analytic_multiplicative"]

#: A ⊞ whose second law's support is narrower than this fraction of the first's
#: (but not a single point, whose ⊞ is a shift) takes the narrower law's
#: subordination point as the unknown (theory section 14.31): the other one stays within ``~(s_b/s_a)**2`` of the axis inside the
#: support, below the grid's test of ``INSIDE_RTOL`` for ``s_b/s_a < 3e-4``.
NARROW_SPREAD_RATIO = 1e-2
#: ... and a ⊠ whose second law's ``log(hi/lo)`` is below that fraction of the first's
#: (which is infinite for a support reaching 0) and below this: a spread of a factor
#: e at most (the campaign's atoms within a factor 1.6 of each other times an attention
#: law reaching 0 built only in the swapped orientation; a 17-atom token Gram spread over
#: a factor 25 times MP(1, 1) only in its own).
NARROW_LOG_SPREAD = 1.0
#: Points of the real grid on which the support is located before its edges
#: are solved exactly by bordered Newton (gaps narrower than the grid spacing
#: over the bounding interval can be missed).
SUPPORT_GRID = 1200
#: ``Im w`` relative to ``|w| + scale`` above which a real point is taken as
#: inside the support to start the edge solve (a start, never the answer: the
#: edge itself solves eq. (14.5)).
INSIDE_RTOL = 1e-7
#: The continuation ``z = x + i y`` starts at ``y = CONT_START * scale`` and
#: divides ``y`` by a per-point factor in ``[CONT_FACTOR_MIN, CONT_FACTOR_MAX]``
#: until ``y < CONT_STOP * scale`` (``CONT_STOP * |x|`` for ⊠), then solves at ``y = 0``.
CONT_START = 1.0
CONT_FACTOR_MAX = 16.0
CONT_FACTOR_MIN = 1.05
CONT_STOP = 1e-15
#: For ⊠ the continuation of a point ``x`` starts at ``y = CONT_START *
#: min(scale, CONT_LOCAL * |x|)`` (the problem is scale-free; next to a hard edge
#: at 0 a start at the scale would cost many levels), and from ``CONT_START *
#: scale`` where that first level is not solved.
CONT_LOCAL = 4.0
#: Newton steps allowed per continuation level; a level that needs more is
#: retried with a smaller step in ``y`` (Newton from the secant predictor
#: converges quadratically in 2-4 steps when the step is small enough).
LEVEL_NEWTON_STEPS = 6
#: Relative error (Newton's estimate) at which an intermediate level is
#: accepted; it only has to keep the next level's start on the branch (the
#: last level is polished to :data:`FIXED_POINT_RTOL`).
LEVEL_RTOL = 1e-9
#: A continuation level's root, or its final one, with ``|phi'|`` above ``1 +
#: CONTRACTION_SLACK`` is no subordination point: the fixed point inside the
#: half-plane contracts (``|phi'| < 1``, Schwarz-Pick) and a real boundary one has
#: ``phi'`` in ``(0, 1]`` (eq. (14.11)).  Next to a fold ``phi' -> 1`` and a nested
#: law's transform leaves it ``1 + 4.8e-5`` at an accepted root: the slack is well
#: above that, far below the repelling roots met (``phi' = 9.8``; section 14.50).
CONTRACTION_SLACK = 1e-2

#: An imaginary part of ``h = F - u`` of the wrong sign (theory eq. (14.46)) up to this
#: fraction of ``|u| + |h|`` (64 ulps) is the rounding of the difference and is set to 0.
NEVANLINNA_ROUNDING_RTOL = 64 * np.finfo(float).eps

#: Relative padding of the locator grids beyond the bounds of the support (of the
#: bounds for ⊠, of the sum's scale for ⊞).
GRID_PAD = 1e-3
#: With a support that may reach 0 (a ⊠ whose factors' supports start at 0),
#: the geometric locator grid starts at this fraction of the upper bound; a
#: first grid point inside the support means a hard edge at 0 (eq. (14.6)).
HARD_EDGE_GRID_START = 1e-9
#: Below ``HARD_EDGE_GRID_START`` of the upper bound (the grid of eq. (14.41)) a point
#: is inside only where every unknown's imaginary part is at least this fraction of
#: its size: in a band there they are of order 1 (0.87 at the bottom of one of mass
#: 1e-3), the noise of a degenerate limit is 1e-8 to 1e-6 in one of them at least
#: (theory section 14.32).
EXTENSION_INSIDE_RTOL = 1e-3
#: Where no factor gives a product a hard edge at 0 and the continuation stalls next
#: to 0 (a degenerate limit of its unknowns), its support is located on grids that
#: start these factors above ``HARD_EDGE_GRID_START`` of the upper bound (theory
#: section 14.32); a first point inside such a grid raises.
SUPPORT_START_LIFTS = (1e3, 1e6)
#: Bisections of a grid cell holding an edge before the bordered Newton is
#: retried, where it did not converge from the grid point outside the edge or
#: converged outside the cell.
EDGE_BISECTIONS = 20
#: Where bordered Newton fails from the cell and from its bisections, the cell is
#: bisected on the test of eqs. (14.7), (14.11) until it spans this many ulps of
#: ``x`` (at most ``EDGE_BISECT_STEPS`` halvings; section 14.31).
EDGE_BISECT_ULPS = 8
EDGE_BISECT_STEPS = 80
#: Slack, relative to the cell's width, of the test that an edge lies in the
#: grid cell it was started from.
EDGE_CELL_RTOL = 1e-6
#: Belinschi-Bercovici iterations (eq. (14.2)) taken to reach Newton's basin
#: before Newton polishes, in rounds: the points Newton does not solve after the
#: first round's iterations iterate on (24 in all); the iteration converges only
#: linearly, slowly as ``Im z -> 0``.
REACH_ITERATIONS = (4, 20)
#: Newton steps of a warm start at ``y = 0`` (eq. (14.7)) before the point is
#: handed to the continuation.
WARM_NEWTON_STEPS = 12
#: An off-axis point is warm-started from the last call's nearest point when
#: they are this close (relative to ``|z|``).
WARM_NEIGHBOUR_RTOL = 0.05
#: Real points this close to an edge (relative to the law's scale) or outside the
#: support take ``G`` and ``G'`` from the representation where the solve fails
#: (:meth:`AnalyticLaw._stieltjes_pair`, eq. (8.16)).
EDGE_REPRESENTATION_RTOL = 1e-9
#: Off-axis points solved by :meth:`AnalyticLaw._solve` kept (the latest first) as
#: Newton starts at any distance (eq. (14.45)).
OFF_AXIS_TABLE = 8192
#: Real points solved by :meth:`AnalyticLaw._solve` kept (sorted by ``x``) as Newton
#: starts for later real points (a law nested in a sum is sampled on hundreds of real
#: points by the curves of eq. (14.20)); a root is taken only where eq. (14.11) or
#: (14.7) certifies it, elsewhere the point is continued.
AXIS_TABLE = 4096
#: A boundary value enters the table of warm starts (eq. (14.7)) when its ``Im w``
#: is above this fraction of ``|w| + scale`` (clearly inside the support).
WARM_INSIDE_RTOL = 1e-6
#: A real root at ``y = 0`` is accepted as the boundary fixed point (eq. (14.11))
#: only with ``phi' < 1 - WARM_JACOBIAN_MIN`` (away from a fold).
WARM_JACOBIAN_MIN = 1e-6
#: A Newton root at ``y = 0`` whose ``|Im w|`` (and ``|Im phi(w)|``, ``|Im phi'|``) is
#: below this fraction of ``|w| + scale`` is real (rounding), and is tested as the
#: boundary fixed point of eq. (14.11).
AXIS_REAL_RTOL = 1e-12
#: A root at ``y = 0`` inside the half-plane is accepted when ``Im w * |1 - phi'|``
#: exceeds this fraction of ``|w| + scale``: a real double root (a fold) split by a
#: rounding ``delta`` of ``phi`` gives a conjugate pair with ``Im w * |1 - phi'| = 2 delta``
#: (theory eq. (14.13)); ``delta`` is a few ulps, so this leaves a factor >= 50.
AXIS_INSIDE_RTOL = 1e-12
#: A continued point tries Newton at ``y = 0`` (eq. (14.11)) once ``y`` is below this
#: fraction of its scale (``scale`` for ⊞, ``|x|`` for ⊠) ...
JUMP_START = 1e-2
#: ... and again each time ``y`` has shrunk by this factor,
JUMP_FACTOR = 1e-3
#: with this many Newton rounds.
JUMP_NEWTON_STEPS = 8
#: The locator continues every ``LOCATOR_STRIDE``-th grid point from ``y = scale``;
#: the others are solved at ``y = 0`` by Newton from the interpolation of their
#: solved neighbours, halving the stride level by level (eq. (14.12)).
LOCATOR_STRIDE = 16
#: Entries (points x atoms) per block of the sum over atoms (256 kB of floats:
#: the three work blocks stay in cache through the passes of :func:`_atom_sums`).
ATOM_BLOCK = 2 ** 15
#: An edge where ``|F| = 1/|G|`` at the subordination point is below this
#: fraction of the scale has ``G -> oo``: a density ``~ |x - e|**(-1/2)``.
POLE_EDGE_RTOL = 1e-6
#: Distances (relative to the candidate for ⊠, to the scale for ⊞) of the grid
#: points added on both sides of a candidate pole edge (section 14.27): the gap
#: beside one can be narrower than 1e-6 of it.  Nearer than 1e-7 the general
#: solve's rounding (``eps/d``) can put a point of a gap inside the support or one
#: of a band outside it.
POLE_PROBE_RTOLS = (1e-3, 1e-5, 1e-7)
#: Relative error (Newton's estimate) at which the boundary value is accepted.
BOUNDARY_RTOL = 1e-11
#: A point of a band found outside the support counts as a missed gap more than this
#: fraction of the band's width from its ends (theory section 14.52) ...
GAP_EVIDENCE_RTOL = 1e-6
#: ... and the search for the gap's ends starts this fraction of the width from it;
#: at most this many such points are tried.
GAP_SEARCH_START = 1e-6
GAP_MAX_TRIES = 8
#: Most restarts of a representation's build at missed gaps.
GAP_MAX_SPLITS = 4
#: Once the support is known, a point more than this many spacings of a band's ends
#: inside the band takes a real fixed point only where Newton converges to it (eq.
#: (14.57)).
BAND_INTERIOR_ULPS = 4
#: Relative move of the probe that tells a map which is the identity at a point (any
#: ``w`` a fixed point, as Bernoulli ⊞ Bernoulli at ``z = 0``, eq. (14.3)) from a fold,
#: whose residual grows quadratically away from its one double root.
DEGENERATE_PROBE = 1e-3
#: ... the map is the identity there when the probe moves by no more than this
#: (relative; a few roundings: a map that is the identity only to first order in
#: ``z``, as Bernoulli ⊞ Bernoulli next to 0, keeps Newton's value).
DEGENERATE_RTOL = 4 * np.finfo(float).eps
#: A residual ``|w - phi(w)|`` below this (relative) is the rounding of ``phi``:
#: accepted next to a fold, where ``|1 - phi'|`` is small and no step can do better.
FOLD_RESIDUAL_RTOL = 1e-13
#: That floor is multiplied by the loss of digits of the sums over atoms
#: (:func:`_sum_condition`), at most this much: the floor then never exceeds
#: ``BOUNDARY_RTOL`` (eq. (14.27); measured 83 next to a narrow band's edge over
#: 20 000 atoms).
SUM_CONDITION_MAX = BOUNDARY_RTOL / FOLD_RESIDUAL_RTOL
#: Above that floor a residual is still rounding where it is the measured noise of
#: ``phi`` (eq. (14.42)): the second difference of ``w - phi(w)`` over steps of
#: ``NOISE_STEP`` relative (its curvature term is ~1e-24 of ``|w|``), which the
#: residual may exceed by ``NOISE_FACTOR``, and only where that noise is at most
#: ``NOISE_MAX_RTOL`` of ``|w| + scale`` (beyond, no root is trusted).
NOISE_STEP = 2.0 ** -40
#: ... measured at this many steps (the largest second difference counts), and
#: accepted only with ``|1 - phi'| >= NOISE_FOLD_MARGIN`` (away from a fold, where
#: the residual over ``|1 - phi'|`` bounds the error; at a fold the representation
#: serves, eq. (8.16)).
NOISE_PROBES = 4
NOISE_FOLD_MARGIN = 0.1
NOISE_FACTOR = 4.0
NOISE_MAX_RTOL = 1e-8
#: A continuation level whose Newton error estimate is above ``LEVEL_RTOL`` but
#: below this (relative) is tested against that rounding floor too: next to a
#: fold the estimate is the floor over ``|1 - phi'|`` (3e-5: 1e-8 measured).
LEVEL_FLOOR_RTOL = 1e-6
#: Discrete laws with at most this many atoms take ``h = F - u`` of eq. (14.28),
#: free of the cancellation of ``1/G - u``; larger ones the direct difference
#: (their sums run over cache-sized blocks or the tree code of eq. (14.25)).
EXACT_H_MAX_ATOMS = 256
#: A band of a sum whose own scale (its largest ``|edge|`` and its width) is below
#: this fraction of the sum's scale has its density solved with the fixed-point
#: tolerances relative to the band's scale (theory eq. (14.48)): relative to the
#: sum's, they are absolute at its size, and the density of a band of width
#: ``1.9e-6`` next to 0 in a sum of scale 14.2 came out 4.3e-3 off.
LOCAL_BAND_RTOL = 1e-4
#: A band with an end closer than ``LOCAL_BAND_RTOL`` of the sum's scale to 0 is solved
#: in parts this many times longer than the last, from that end out, each at its own
#: scale (theory eq. (14.62)): at the band's scale ``0.13`` in a sum of scale ``1.15``,
#: the density ``4.3e-7`` above the lower end ``4.3e-6`` came out ``9.3e-9`` off a
#: 40-digit solve, ``1.3e-12`` at any scale up to ``1e-4`` there.
LOCAL_BAND_FACTOR = 10.0
#: A band at an atom (section 14.37) narrower than ``ATOM_BAND_MIN_RTOL`` of the sum's
#: scale, solved at that scale (not a band of eq. (14.48)), is not resolved: the band
#: of ``(0.37 + 1e-6 attention(0.5, 0.5)²) ⊞ sample_covariance({1, 2}, 4)``, ``1.3e-7``
#: of the scale, split its representation's panels for 9.5 s, while bands ``9e-6`` of
#: the scale at an atom (tests/test_sum_support.py) are solved to their mass.  Bands
#: below eq. (8.30)'s limit raise there instead.
ATOM_BAND_MIN_RTOL = 1e-6


def _contracting(dphi):
    """Where ``|phi'|`` at a root is at most ``1 + CONTRACTION_SLACK`` (theory eq.
    (14.56): ``omega`` is the fixed point that contracts, or the boundary one with
    ``phi'`` in ``(0, 1]``); false where ``phi'`` is not finite."""
    with np.errstate(invalid="ignore"):
        return np.abs(dphi) <= 1.0 + CONTRACTION_SLACK


def _atom_sums(values, weights, v):
    """``(G, G')`` of point masses at points ``v`` with ``Im v >= 0``, in real arithmetic.

    With ``d = Re v - a_j``, ``y = Im v`` and ``1/(v - a_j) = (d - i y)/(d**2 + y**2)``:
    ``G = sum m_j d/D - i y sum m_j/D`` and
    ``G' = -sum m_j (d**2 - y**2)/D**2 + 2 i y sum m_j d/D**2`` (``D = d**2 + y**2``),
    a few real passes over cache-sized blocks of ``(points, atoms)`` and matrix-vector
    products with the weights; a block of real points needs only ``sum m_j/d`` and
    ``sum m_j/d**2``.  Points where ``D`` under- or overflows (next to an atom) are
    recomputed by the complex formula.  Cost linear in the number of atoms.
    """
    a, m = values, weights
    g = np.empty(v.shape, dtype=complex)
    dg = np.empty(v.shape, dtype=complex)
    x, y = v.real, v.imag
    rows = max(1, min(v.size, ATOM_BLOCK // max(a.size, 1)))
    # three work blocks, reused (no allocation per block)
    d, inv, t = (np.empty((rows, a.size)) for _ in range(3))
    with np.errstate(all="ignore"):
        for i in range(0, v.size, rows):
            sl = slice(i, i + rows)
            xs, ys = x[sl], y[sl]
            dd, ii, tt = d[:xs.size], inv[:xs.size], t[:xs.size]
            np.subtract.outer(xs, a, out=dd)
            if not ys.any():
                np.reciprocal(dd, out=ii)
                g[sl] = ii @ m
                np.multiply(ii, ii, out=ii)
                dg[sl] = -(ii @ m)
                continue
            y2 = (ys * ys)[:, None]
            np.multiply(dd, dd, out=ii)
            ii += y2
            np.reciprocal(ii, out=ii)            # 1 / D
            np.multiply(dd, ii, out=tt)          # d / D
            s1, s0 = tt @ m, ii @ m
            np.multiply(tt, ii, out=dd)          # d / D**2
            s4 = dd @ m
            np.multiply(tt, tt, out=tt)
            np.multiply(ii, ii, out=ii)
            ii *= y2
            tt -= ii                             # (d**2 - y**2) / D**2
            g[sl] = s1 - 1j * ys * s0
            dg[sl] = -(tt @ m) + 2j * ys * s4
        bad = ~(np.isfinite(g) & np.isfinite(dg))
        if bad.any():
            r = 1.0 / (v[bad, None] - a[None, :])
            g[bad], dg[bad] = r @ m, -(r * r) @ m
    return g, dg


def _point_mass_sums(law, v):
    """``(G, G')`` of a discrete law at ``v`` (``Im v >= 0``): the direct sum, or
    the tree code of eq. (14.25) from ``TREE_MIN_ATOMS`` atoms (built once per law)."""
    if law.values.size < TREE_MIN_ATOMS:
        return _atom_sums(law.values, law.weights, v)
    tree = law.__dict__.get("_atom_tree")
    if tree is None:
        tree = law._atom_tree = AtomTree(law.values, law.weights)
    return tree.sums(v)


def _at_rounding_floor(pr, w, z, scale=None):
    """Whether ``|w - phi(w, z)|`` is at the rounding of ``phi`` (eq. (14.27)).

    ``FOLD_RESIDUAL_RTOL`` of the size of ``w``, times, over many atoms, the
    loss of digits of the Cauchy sums (:func:`_sum_condition`, at most
    ``SUM_CONDITION_MAX``, so the floor never exceeds ``BOUNDARY_RTOL``).  The size
    is ``scale + |w|``, ``scale`` the problem's unless given (the sum's, inside a
    part of a band solved at a scale of its own: ``phi`` rounds at the sum's scale,
    eq. (14.62)).
    """
    with np.errstate(all="ignore"):
        r = w - pr.phi(w, z)[0]
    f = np.abs(r)
    size = (pr.scale if scale is None else max(scale, pr.scale)) + np.abs(w)
    floor = f <= FOLD_RESIDUAL_RTOL * size
    if (~floor).any():
        idx = np.flatnonzero(~floor)
        cond = np.minimum(_sum_condition(pr.phi_arguments(w[idx], z[idx])[2]),
                          SUM_CONDITION_MAX)
        floor[idx] = f[idx] <= FOLD_RESIDUAL_RTOL * cond * size[idx]
    if (~floor).any():
        idx = np.flatnonzero(~floor)
        floor[idx] = _measured_noise(pr, w[idx], z[idx], r[idx], size[idx])
    return floor


def _measured_noise(pr, w, z, r, size):
    """Whether the residuals ``r = w - phi(w, z)`` are the measured rounding noise
    of ``phi`` (eq. (14.42)).

    Next to a zero of a constituent's ``G`` (a pole of its ``F``) the rounding of
    a nested constituent is amplified by ``h'`` of the outer one, and ``w`` grows
    like ``1/(x - p)``: the residual stays far above ``FOLD_RESIDUAL_RTOL``
    whatever the step.  The noise is measured, not modelled: the second
    differences of ``w - phi(w)`` over ``0, s, ..., NOISE_PROBES s``
    (``s = NOISE_STEP max(|w|, scale)``) are rounding (their curvature term is ``phi'' s**2``); the residual may be
    ``NOISE_FACTOR`` times the largest, where that is at most ``NOISE_MAX_RTOL`` of
    ``size`` and ``|1 - phi'| >= NOISE_FOLD_MARGIN``.
    """
    step = NOISE_STEP * np.maximum(np.abs(w), pr.scale)
    k = np.arange(0, NOISE_PROBES + 1)[:, None]
    wk = w[None, :] + k * step[None, :]
    with np.errstate(all="ignore"):
        p, dp = pr.phi(wk.ravel(), np.broadcast_to(z, wk.shape).ravel())
        rk = np.concatenate([r[None, :], (wk[1:] - p.reshape(wk.shape)[1:])])
        noise = np.max(np.abs(rk[2:] - 2.0 * rk[1:-1] + rk[:-2]), axis=0)
        # away from a fold only: there the residual over |1 - phi'| bounds the error
        away = np.abs(1.0 - dp.reshape(wk.shape)[0]) >= NOISE_FOLD_MARGIN
    return ((np.abs(r) <= NOISE_FACTOR * noise) & (noise <= NOISE_MAX_RTOL * size) & away
            & np.isfinite(noise))


def _sum_condition(arguments):
    """The loss of digits ``kappa`` of eq. (14.27) of the Cauchy sums over atoms at
    the points ``(law, u)``.

    ``sum_j m_j / |u - a_j|`` over ``|G(u)|`` for a discrete law (at least 1: the
    rounding of ``G`` is this times that of its largest terms), 1 for other laws;
    the largest over the laws, per point.  Summed directly, block by block: it is
    asked for at the few points whose residual is above the rounding floor.
    """
    cond = None
    for law, u in arguments:
        u = np.asarray(u, dtype=complex)
        c = np.ones(u.shape)
        if isinstance(law, PointMasses):
            v = np.where(u.imag < 0, np.conj(u), u)
            g = _point_mass_sums(law, v)[0]
            rows = max(1, ATOM_BLOCK // max(law.values.size, 1))
            moduli = np.empty(v.shape)
            with np.errstate(all="ignore"):
                for i in range(0, v.size, rows):
                    moduli[i:i + rows] = (1.0 / np.abs(v[i:i + rows, None] - law.values)
                                          ) @ law.weights
                c = np.where(np.isfinite(moduli / np.abs(g)),
                             np.maximum(moduli / np.abs(g), 1.0), 1.0)
        cond = c if cond is None else np.maximum(cond, c)
    return cond


def _cauchy_pair(law, u):
    """``(G(u), G'(u))`` for any complex ``u`` (``G(conj u) = conj G(u)``)."""
    u = np.asarray(u, dtype=complex)
    low = u.imag < 0
    flip = low.any()
    v = np.where(low, np.conj(u), u) if flip else u
    if isinstance(law, PointMasses):
        g, d = _point_mass_sums(law, v)
    else:
        # a point where a nested law's solver meets a pole of its transform gives a
        # non-finite value, which the fixed-point strategies reject (never accept)
        # (a solver built for its support's neighbourhood, asked far beyond it: the
        # moment series there, eq. (14.47))
        with np.errstate(all="ignore"):
            g, d = law._pair_or_far(v)
    if not flip:
        return g, d
    return np.where(low, np.conj(g), g), np.where(low, np.conj(d), d)


def _real_analytic_at(law, u):
    """Where the real points ``u`` lie outside every interval of ``law``'s continuous
    support (its Cauchy transform is real-analytic there; atoms are poles of ``G``,
    where ``F = 1/G`` is analytic)."""
    u = np.asarray(u)
    ok = np.isfinite(u) & (np.abs(u.imag) <= AXIS_REAL_RTOL * (1.0 + np.abs(u.real)))
    ur = u.real
    for iv in law.interval_details():
        ok &= ~((ur >= float(iv.lo)) & (ur <= float(iv.hi)))
    return ok


def _reciprocal_pair(law, u):
    """``(F, F') = (1/G, -G'/G**2)``; at an atom ``a_j`` of mass ``m_j``: ``(0, 1/m_j)``."""
    g, d = _cauchy_pair(law, u)
    with np.errstate(all="ignore"):
        f, df = 1.0 / g, -d / g ** 2
    pole = ~np.isfinite(g)
    if pole.any():
        loc, mass = law.atoms()
        for k in np.flatnonzero(pole):
            hit = loc == u[k]
            if hit.any():
                f[k], df[k] = 0.0, 1.0 / float(mass[hit][0])
    return f, df



class _MissedGap(Exception):
    """Raised by :meth:`AnalyticLaw._density` inside a representation's build where the
    density found a point of a band outside the support (theory section 14.52); never
    leaves :meth:`AnalyticLaw._representation`."""


class _UnresolvedBand(ConvergenceError):
    """A band the ⊞ locator cannot resolve (theory section 14.37): the mirrored
    formulation of eq. (14.29), on the same grid, is not tried."""


def _nevanlinna_sign(h, u, sign):
    """``h`` with the sign of its imaginary part that theory eq. (14.46) proves.

    ``Im F(u) >= Im u`` on the closed upper half-plane, so ``h = F - u`` has
    ``Im h >= 0`` there (``sign = 1``) and ``k = u - F(u)`` has ``Im k <= 0``
    (``sign = -1``).  Formed as a difference, ``h`` carries a rounding of
    ``eps |u|``: for a law whose scale is far below ``|u|`` its imaginary part is
    below that rounding and can come out of the wrong sign, which at ``Im z = 0``
    sends the partner's point below the axis, onto the other branch of its
    transform.  Such values, no larger than ``NEVANLINNA_ROUNDING_RTOL`` of
    ``|u| + |h|``, are set to the real axis; a larger one is not rounding (another
    branch of a constituent's transform) and is kept, for the strategies to reject.
    """
    with np.errstate(invalid="ignore"):
        wrong = (u.imag >= 0) & (sign * h.imag < 0) & (
            np.abs(h.imag) <= NEVANLINNA_ROUNDING_RTOL * (np.abs(u) + np.abs(h)))
    if wrong.any():
        h = np.where(wrong, h.real + 0j, h)
    return h


def _atom_h_pair(law, u):
    """``(h, h')`` of a discrete law, ``h = F - u``, by eq. (14.28).

    With ``x_j = 1/(u - a_j)``, ``G = sum m_j x_j`` and ``H = sum m_j a_j x_j``:
    ``h = -H/G`` and ``h' = sum m_j x_j**2 (a_j G - H)**2 / G**2``, whose terms do not
    cancel where ``|u|`` is large (``1/G - u`` loses the digits of ``|u|/|h|``
    there); ``a_j G - H`` takes the term of the atom nearest to ``u`` apart, which
    it would cancel next to that atom.  Points where a sum is not finite (at an
    atom) take the direct difference of :func:`_reciprocal_pair`.
    """
    u = np.asarray(u, dtype=complex)
    a, m = law.values, law.weights
    h = np.empty(u.shape, dtype=complex)
    dh = np.empty(u.shape, dtype=complex)
    rows = max(1, ATOM_BLOCK // max(a.size, 1))
    with np.errstate(all="ignore"):
        for i in range(0, u.size, rows):
            x = 1.0 / (u[i:i + rows, None] - a)
            g, hh, c = sums_nearest_apart(x, a, m)
            h[i:i + rows] = -hh / g
            dh[i:i + rows] = ((x * c) ** 2) @ m / (g * g)
    bad = ~(np.isfinite(h) & np.isfinite(dh))
    if bad.any():
        f, df = _reciprocal_pair(law, u[bad])
        h[bad], dh[bad] = f - u[bad], df - 1.0
    return h, dh


def locator_schedule(n):
    """Index schedule of the locator of eq. (14.12) on a grid of ``n`` points.

    Returns
    -------
    coarse : ndarray of int
        Every ``LOCATOR_STRIDE``-th point and the last (continued).
    levels : list of (mid, lo, hi, frac)
        Per halving of the stride, the points half-way between solved ones and
        their solved neighbours, with the interpolation weight of ``hi``
        (``guess = v[lo] + frac * (v[hi] - v[lo])``).
    rest : ndarray of int
        Points no level reaches (continued).
    """
    stride = LOCATOR_STRIDE
    coarse = np.unique(np.r_[np.arange(0, n, stride), n - 1])
    solved = np.zeros(n, dtype=bool)
    solved[coarse] = True
    levels = []
    while stride > 1:
        half = stride // 2
        mid = np.arange(half, n, stride)
        mid = mid[~solved[mid]]
        if mid.size:
            lo = mid - half
            hi = np.minimum(mid + half, n - 1)
            hi = np.where(solved[hi], hi, lo)
            frac = np.where(hi > lo, (mid - lo) / np.maximum(hi - lo, 1), 0.0)
            levels.append((mid, lo, hi, frac))
            solved[mid] = True
        stride = half
    return coarse, levels, np.flatnonzero(~solved)


def lowest_scale(factors, atoms=False):
    """The scale of the lowest band a ``⊠`` of ``factors`` can have, or None where it is
    that of the plain grid (theory eq. (14.41)).

    Each factor contributes its lowest band's lower end (with ``atoms``, its lowest
    positive atom where that is lower, or where it has no band; without, a factor
    without a band gives None), or, where that band reaches 0, its upper end.  Only a factor whose band ``[0, e]`` lies apart from
    the rest of its support (a gap above it) with more mass than any factor's atom
    at 0 puts mass far below the product's upper bound: it acts as a projection
    of its other mass, and the atoms at 0 (``⊠`` keeps the largest) absorb a
    smaller one.
    """
    scale, isolated, atom = 1.0, 0.0, 0.0
    for law in factors:
        ivs = law.interval_details()
        loc, mass = law.atoms()
        at_zero = float(np.sum(mass[loc == 0.0]))
        atom = max(atom, at_zero)
        # the lowest positive atom where it lies below the bands (a discrete factor's
        # lowest atom: a product of an attention law's band [0, 1.9e-12] with atoms
        # {0.434, 4.533} has its lowest band at 1.4e-16)
        positive = loc[loc > 0.0]
        low_atom = float(np.min(positive)) if positive.size and atoms else np.inf
        if not ivs:
            if not np.isfinite(low_atom):
                return None
            scale *= low_atom
            continue
        first = ivs[0]
        if first.lo > 0:
            scale *= min(first.lo, low_atom)
            continue
        scale *= first.hi
        if len(ivs) > 1:
            isolated = max(isolated, float(law.cdf(first.hi)) - at_zero)
    return scale if isolated > atom else None


def below_plain_grid(xs, bounds):
    """The points of a ``⊠`` grid below where it starts without the factors' lowest
    scale (:data:`HARD_EDGE_GRID_START` of the upper bound; eq. (14.41))."""
    lo, hi = bounds
    if lo > 0:
        return np.zeros(np.shape(xs), dtype=bool)
    return np.asarray(xs) < HARD_EDGE_GRID_START * hi


def extension_inside(inside, low, solid, hard_possible=True, real=None):
    """Which points below the plain grid (``low``) are inside (theory section 14.32): all
    of them where the plain grid's first point is inside and the product may reach 0
    (the hard edge it sees) but those whose unknowns are ``real`` (a real solution
    continued from above: a gap, eq. (14.16), section 14.41), else those inside with a
    ``solid`` imaginary part."""
    if sees_hard_edge(inside, low, hard_possible):
        out = np.ones(int(low.sum()), dtype=bool)
        return out if real is None else out & ~real
    return inside[low] & solid


def solid_unknowns(w):
    """Where every unknown (the rows of ``w``, or ``w`` itself when 1-d) has an imaginary
    part of at least ``EXTENSION_INSIDE_RTOL`` of its size: the solid rule below a
    product's plain grid (theory section 14.32)."""
    w = np.atleast_2d(w)
    return np.all(np.abs(w.imag) >= EXTENSION_INSIDE_RTOL * np.abs(w), axis=0)


def sees_hard_edge(inside, low, hard_possible=True):
    """Whether :func:`extension_inside` takes every point below the plain grid as inside
    (the plain grid's first point inside, and the product may reach 0)."""
    plain = np.flatnonzero(~low)
    return bool(hard_possible and plain.size and inside[plain[0]])


def product_grid(bounds, points, factors=(), deeper=False, atoms=False):
    """The geometric locator grid of a ``⊠`` over the bounds ``(lo, hi)`` of its support.

    Padded by :data:`GRID_PAD` on both sides; a support that may reach 0 (a
    lower bound 0) starts at :data:`HARD_EDGE_GRID_START` of ``hi``, or of the
    :func:`lowest_scale` of ``factors`` where that is below ``hi`` (eqs. (14.6),
    (14.41)); ``points`` per ``log10(1/HARD_EDGE_GRID_START)``
    decades, the grid's density kept as it reaches further down.  ``deeper``: that
    many decades further down again (a band whose soft lower edge lies below the
    first grid point of a product that cannot reach 0, section 14.32).  ``atoms``:
    the factors' atoms count in the lowest scale (:func:`lowest_scale`).
    """
    lo, hi = bounds
    if lo > 0:
        return np.geomspace(lo * (1 - GRID_PAD), hi * (1 + GRID_PAD), points)
    base = hi
    low = lowest_scale(factors, atoms) if factors else None
    if low is not None and 0 < low < hi:
        base = low
    start = HARD_EDGE_GRID_START * base * (HARD_EDGE_GRID_START if deeper else 1.0)
    ratio = np.log(hi / start) / -np.log(HARD_EDGE_GRID_START)
    points = int(np.ceil(points * max(1.0, ratio)))
    return np.geomspace(start, hi * (1 + GRID_PAD), points)


def may_reach_zero(factors):
    """Whether a product of ``factors`` may have its support reach 0: a hard edge that
    eq. (14.6) gives an exponent (:func:`hard_edge_exponent` does not raise)."""
    try:
        hard_edge_exponent(factors, "the product")
    except ConvergenceError:
        return False
    return True


def hard_edge_exponent(factors, what):
    """Exponent ``-k/(k + 1)`` of the density of a ``⊠`` of ``factors`` at a hard edge at 0.

    With ``r_i`` the non-zero mass of factor ``i`` (1 minus its atom at 0) and
    ``r = min r_i`` the product's, ``psi`` tends to ``-r`` at the lower end and
    only the factors with ``r_i = r`` have a singular S-transform there: a pole
    of order ``[r_i < 1]`` (the atom at 0) plus ``q`` for a continuous part
    ``~ x**(-q/(q + 1))`` at 0.  The poles multiply, so the orders add to
    ``p``, and the product's density is ``~ x**(-k/(k + 1))`` with
    ``k = p - [r < 1]`` (theory eq. (14.24), extending (14.6); two free projections of
    trace 1/2: ``k = 1``, the ``x**(-1/2)`` of the arcsine law on ``[0, 1]``).

    Raises
    ------
    ConvergenceError
        If a factor ends at 0 in another way, or ``k = 0`` (no hard edge).
    """
    masses = []
    for law in factors:
        loc, mass = law.atoms()
        masses.append(1.0 - float(np.sum(mass[loc == 0.0])))
    r = min(masses)
    order = Fraction(0)
    for law, ri in zip(factors, masses):
        if abs(ri - r) > HARD_EDGE_MASS_RTOL * r:
            continue                        # S_i is regular at -r
        order += int(ri < 1.0 - HARD_EDGE_MASS_RTOL)
        ivs = law.interval_details()
        if not ivs or ivs[0].lo > 0:
            continue
        e = ivs[0].lo_exponent
        if not isinstance(e, Fraction) or not -1 < e < 0:
            raise ConvergenceError(
                f"the support of {what} reaches 0 where a factor's density behaves as "
                f"x**{e!s}: only x**(-q/(q + 1)) ends are handled (theory eq. (14.6))")
        order += -e / (1 + e)
    order -= int(r < 1.0 - HARD_EDGE_MASS_RTOL)
    if order <= 0:
        raise ConvergenceError(f"the support of {what} reaches 0 although no factor's does "
                               f"(theory eq. (14.6))")
    return -order / (order + 1)


class _Additive(FixedPointProblem):
    """``w1 = z + h_b(z + h_a(w1))``, ``h(u) = 1/G(u) - u`` (theory eq. (14.1))."""

    sign = 1

    def __init__(self, a, b, scale):
        self.a, self.b, self.scale = a, b, scale

    def _h(self, law, u):
        if isinstance(law, PointMasses) and law.values.size <= EXACT_H_MAX_ATOMS:
            return _atom_h_pair(law, u)
        f, df = _reciprocal_pair(law, u)
        return _nevanlinna_sign(f - u, u, 1), df - 1.0

    def phi(self, w, z):
        return self.phi_arguments(w, z)[:2]

    def phi_arguments(self, w, z):
        """``phi``, ``d phi/d w`` and the points ``(law, u)`` where ``G`` was evaluated."""
        ha, dha = self._h(self.a, w)
        ub = z + ha
        hb, dhb = self._h(self.b, ub)
        return z + hb, dhb * dha, ((self.a, w), (self.b, ub))

    def start(self, z):
        return z + 1j * self.scale

    def cauchy(self, w, z):
        return _cauchy_pair(self.a, w)[0]

    def cauchy_derivative(self, w, z):
        """``dG/dz`` at the fixed point: ``G_a'(w) dw/dz``, ``dw/dz = phi_z/(1 - phi_w)``."""
        ha, dha = self._h(self.a, w)
        hb, dhb = self._h(self.b, z + ha)
        dwdz = (1.0 + dhb) / (1.0 - dhb * dha)
        return _cauchy_pair(self.a, w)[1] * dwdz


class _Multiplicative(FixedPointProblem):
    """``w1 = u k_b(u k_a(w1))``, ``u = 1/z``, ``k(w) = 1/w - F(1/w)`` (theory eq. (14.4))."""

    sign = -1

    def __init__(self, a, b, scale):
        self.a, self.b, self.scale = a, b, scale

    def _k(self, law, w):
        iw = 1.0 / w
        f, df = _reciprocal_pair(law, iw)
        return _nevanlinna_sign(iw - f, iw, -1), (-1.0 + df) * iw * iw

    def phi(self, w, z):
        return self.phi_arguments(w, z)[:2]

    def phi_arguments(self, w, z):
        """``phi``, ``d phi/d w`` and the points ``(law, u)`` where ``G`` was evaluated."""
        u = 1.0 / z
        ka, dka = self._k(self.a, w)
        v = u * ka
        kb, dkb = self._k(self.b, v)
        with np.errstate(all="ignore"):
            return u * kb, u * u * dkb * dka, ((self.a, 1.0 / w), (self.b, 1.0 / v))

    def start(self, z):
        return 1.0 / z

    def cauchy(self, w, z):
        u = 1.0 / z
        return u * _cauchy_pair(self.a, 1.0 / w)[0] / w

    def cauchy_derivative(self, w, z):
        """``dG/dz`` at the fixed point, by the chain rule through ``u = 1/z`` and ``w(u)``."""
        u = 1.0 / z
        ka, dka = self._k(self.a, w)
        kb, dkb = self._k(self.b, u * ka)
        dwdu = (kb + u * dkb * ka) / (1.0 - u * u * dkb * dka)
        return self._dg_dz(w, u, dwdu)

    def _dg_dz(self, w, u, dwdu):
        """``dG/dz`` of ``G = u G_a(1/w)/w`` (eq. (14.4)) from ``dw/du``, ``u = 1/z``."""
        ga, dga = _cauchy_pair(self.a, 1.0 / w)
        dg_du = ga / w
        dg_dw = u * (-dga / w ** 3 - ga / w ** 2)
        return -(u * u) * (dg_du + dg_dw * dwdu)


class _SymmetricAdditive(_Additive):
    """``a ⊞ a``: the two subordination points are equal, ``w = z + h_a(w)`` (theory
    eq. (14.19)); one evaluation of ``G_a`` per step instead of two."""

    def phi_arguments(self, w, z):
        ha, dha = self._h(self.a, w)
        return z + ha, dha, ((self.a, w),)

    def cauchy_derivative(self, w, z):
        _, dha = self._h(self.a, w)
        return _cauchy_pair(self.a, w)[1] / (1.0 - dha)


class _SymmetricMultiplicative(_Multiplicative):
    """``a ⊠ a``: ``w = u k_a(w)``, ``u = 1/z`` (theory eq. (14.19)); one evaluation
    of ``G_a`` per step instead of two."""

    def phi_arguments(self, w, z):
        u = 1.0 / z
        ka, dka = self._k(self.a, w)
        with np.errstate(all="ignore"):
            return u * ka, u * dka, ((self.a, 1.0 / w),)

    def cauchy_derivative(self, w, z):
        u = 1.0 / z
        ka, dka = self._k(self.a, w)
        return self._dg_dz(w, u, ka / (1.0 - u * dka))           # dw/du of eq. (14.19)


def _local_band_segments(lo, hi, scale):
    """``(lo_k, hi_k, s_k)``: the parts of the band ``[lo, hi]`` of a sum of scale
    ``scale`` whose density is solved at a scale ``s_k`` below the sum's, in order.

    A band whose own scale ``s_B = max(|lo|, |hi|, hi - lo)`` is below
    ``LOCAL_BAND_RTOL`` of the sum's is one part at ``s_B`` (eq. (14.48)); a band on one
    side of 0 whose end next to 0 is closer to it than that is cut into parts
    ``LOCAL_BAND_FACTOR`` times longer than the last, from that end out, each at the
    larger of its ends' magnitudes (at most ``s_B``; eq. (14.62); one part at ``s_B``
    where that end is within the factor of ``s_B``); the parts at the sum's scale or
    above are left out.  Other bands have none.
    """
    own = max(abs(lo), abs(hi), hi - lo)
    reach = LOCAL_BAND_RTOL * scale
    if lo > 0.0 and lo < reach:
        near, far, sign = lo, hi, 1.0
    elif hi < 0.0 and -hi < reach:
        near, far, sign = -hi, -lo, -1.0
    else:
        return [(lo, hi, own)] if own < reach else []
    if near * LOCAL_BAND_FACTOR >= own:
        return [(lo, hi, own)] if own < scale else []
    parts = []
    start = near
    while start < far:
        end = min(start * LOCAL_BAND_FACTOR, far)
        s_k = min(end, own)
        if s_k >= scale:
            break
        a, b = (start, end) if sign > 0 else (-end, -start)
        parts.append((a, b, s_k))
        start = end
    return parts if sign > 0 else parts[::-1]


class AnalyticLaw(SpectralLaw):
    """``a ⊞ b`` or ``a ⊠ b`` of any two laws by analytic subordination (theory section 14).

    Build it with :func:`analytic_additive` or :func:`analytic_multiplicative`.
    Every :class:`SpectralLaw` method works.

    Attributes
    ----------
    a, b : SpectralLaw
    kind : str
        ``"additive"`` or ``"multiplicative"``.
    """

    _nested_solve = True

    @property
    def _additive_constituents(self):
        return None if self.multiplicative else (self.a, self.b)

    def __init__(self, a, b, multiplicative, options=None):
        super().__init__(options if options is not None else a.options)
        self.a, self.b = a, b
        self.multiplicative = multiplicative
        (la, ha), (lb, hb) = a.support(), b.support()
        if multiplicative:
            self._bounds = (la * lb, ha * hb)
            scale = max(ha * hb, np.finfo(float).tiny)
            problem = _SymmetricMultiplicative if a is b else _Multiplicative
            # w = 1/y with y the point where G_a is evaluated: its size is that of
            # a's support, whatever b's (an attention law at small beta lives at 1e-6)
            self._problem = problem(a, b, 1.0 / ha)
        else:
            self._bounds = (la + lb, ha + hb)
            scale = max(ha - la, hb - lb, abs(la + lb), abs(ha + hb), np.finfo(float).tiny)
            self._problem = (_SymmetricAdditive if a is b else _Additive)(a, b, scale)
        self._xscale = scale
        # solved boundary values w(x + i0) inside the support, sorted by x: the
        # warm starts of eq. (14.7)
        self._warm_x = np.empty(0)
        self._warm_w = np.empty(0, dtype=complex)
        # the latest OFF_AXIS_TABLE solved off-axis points (latest first): warm starts
        # of _solve (eqs. (14.2), (14.45))
        self._off = WarmTable(OFF_AXIS_TABLE)
        # real points solved by _solve, sorted by x: Newton starts at y = 0
        self._axis_x = np.empty(0)
        self._axis_w = np.empty(0, dtype=complex)

    @property
    def _pointwise_transform(self):
        return self.a._pointwise_transform or self.b._pointwise_transform

    @property
    def _evaluation_cost(self):
        # Newton on eq. (14.1) / (14.4) over both constituents (eq. (14.51))
        return NESTED_SOLVE_FACTOR * (self.a._evaluation_cost + self.b._evaluation_cost)

    def _describe(self):
        op = "⊠" if self.multiplicative else "⊞"

        def short(law):
            text = law._describe()
            return text if len(text) <= 80 else text[:77] + "..."
        return f"({short(self.a)}) {op} ({short(self.b)})"

    # -- solves ---------------------------------------------------------------------
    def _solve(self, z):
        """Subordination point ``w`` and ``G`` at complex ``z`` (``Im z >= 0``), 1-d.

        Off the axis: Newton from the nearest of the latest ``OFF_AXIS_TABLE``
        solved points, kept inside the half-plane where that point lies within
        ``WARM_NEIGHBOUR_RTOL`` (eq. (14.2): a root inside the half-plane is the
        subordination point), else kept with the margin of eq. (14.7) (eq.
        (14.45)); then the iteration of eq. (14.2) and Newton, and
        the continuation (eq. (14.3)) where that fails.  On the axis:
        :meth:`_solve_real`.
        """
        z = np.asarray(z, dtype=complex)
        w = np.empty(z.shape, dtype=complex)
        off = z.imag > 0
        pr = self._problem
        pz = np.empty(z.size, dtype=complex)
        pw = np.empty(z.size, dtype=complex)
        if off.any() and len(self._off):
            pz[off], pw[off] = self._off.nearest(z[off])
            # warm start from the nearest solved point within WARM_NEIGHBOUR_RTOL (a
            # law nested in another is called at slowly moving points): for Im z > 0
            # the fixed point in the open half-plane is unique (eq. (14.2)), so a
            # converged Newton root strictly inside it is the subordination point
            idx = np.flatnonzero(off)
            near = idx[np.abs(z[idx] - pz[idx]) <= WARM_NEIGHBOUR_RTOL * np.abs(z[idx])]
            if near.size:
                r = newton(pr, z[near], pw[near], max_steps=WARM_NEWTON_STEPS)
                good = r.converged & (pr.sign * r.value.imag > 0)
                w[near[good]] = r.value[good]
                off[near[good]] = False
            far = np.flatnonzero(off)
            if far.size:
                # eq. (14.45) for two laws: from the nearest at any distance, the root
                # kept clearly inside the half-plane (the margin of eq. (14.7))
                r = newton(pr, z[far], pw[far], max_steps=WARM_NEWTON_STEPS)
                good = r.converged & (pr.sign * r.value.imag
                                      > WARM_INSIDE_RTOL * (pr.scale + np.abs(r.value)))
                w[far[good]] = r.value[good]
                off[far[good]] = False
        if off.any():
            r = iterate(pr, z[off], max_iterations=sum(REACH_ITERATIONS))
            r2 = newton(pr, z[off], r.value)
            w[off] = r2.value
            # far from the axis the iteration converges; near it, continue down.  A
            # root that repels is another fixed point (eq. (14.56)): at z = x + 1.9e-30 i
            # inside a band of a product of atoms the iteration had not reached
            # omega(z) and Newton went on to a real root with phi' = 1.24 (G real there)
            solved = r2.converged & _contracting(r2.derivative)
            if not solved.all():
                bad = np.flatnonzero(off)[~solved]
                w[bad] = self._continue(z[bad].real, z[bad].imag)
        real = z.imag <= 0
        if real.any():
            w[real] = self._solve_real(z[real].real)
        up = z.imag > 0
        if up.any():
            keep = np.isfinite(w[up])
            self._off.add(z[up][keep], w[up][keep])
        return w, self._g(w, z)

    def _solve_real(self, x):
        """``w(x + i0)`` at real points: Newton at ``y = 0`` from the nearest real point
        solved before, kept where eq. (14.11) (a real attracting fixed point: outside)
        or eq. (14.7) (the interior one) certifies the root; the other points are
        continued (eq. (14.3)).  The points join the table of ``AXIS_TABLE``."""
        w = np.empty(x.shape, dtype=complex)
        todo = np.ones(x.shape, dtype=bool)
        if self._axis_x.size:
            # the two solved neighbours: their linear interpolation between them, the
            # nearer one beyond the table's ends
            right = np.minimum(np.searchsorted(self._axis_x, x), self._axis_x.size - 1)
            left = np.maximum(right - 1, 0)
            xl, xr = self._axis_x[left], self._axis_x[right]
            wl, wr = self._axis_w[left], self._axis_w[right]
            with np.errstate(all="ignore"):
                frac = (x - xl) / (xr - xl)
                guess = np.where((xl < x) & (x < xr), wl + frac * (wr - wl),
                                 np.where(np.abs(x - xl) <= np.abs(x - xr), wl, wr))
            wg, status = self._axis_newton(x, guess)
            hit = status >= 0
            w[hit] = wg[hit]
            todo = ~hit
        if todo.any():
            w[todo] = self._continue(x[todo], np.zeros(int(todo.sum())))
        keep = np.isfinite(w)
        if keep.any():
            xs = np.r_[self._axis_x, x[keep]]
            ws = np.r_[self._axis_w, w[keep]]
            xs, first = np.unique(xs, return_index=True)
            ws = ws[first]
            if xs.size > AXIS_TABLE:
                sel = np.linspace(0, xs.size - 1, AXIS_TABLE).astype(int)
                xs, ws = xs[sel], ws[sel]
            self._axis_x, self._axis_w = xs, ws
        return w

    def _g(self, w, z):
        with np.errstate(all="ignore"):
            return self._problem.cauchy(w, z)

    def _pz(self, z):
        """The point handed to the problem: ``z`` itself (the ⊠ problem takes
        ``u = 1/z`` inside :meth:`_Multiplicative.phi`)."""
        return z

    def _classify_axis(self, x, r):
        """Accept or reject Newton roots ``r`` of ``w = phi(w, x)`` at real points ``x``.

        Returns ``(w, status)``: ``status`` is 1 for a root strictly inside the
        problem's half-plane with ``|1 - phi'|`` away from 0 (the unique interior
        fixed point, theory eq. (14.7)), 0 for a real root with ``phi' < 1``
        where the constituents' transforms are real-analytic (the boundary
        fixed point ``omega(x + i0)`` of eq. (14.11): ``x`` is outside the
        support), and -1 for a root that is neither (it goes to the
        continuation).  Both tests need the error estimate below
        :data:`BOUNDARY_RTOL`.
        """
        pr = self._problem
        w = r.value.copy()
        dp = r.derivative
        size = pr.scale + np.abs(w)
        with np.errstate(all="ignore"):
            solved = (r.residual <= BOUNDARY_RTOL * size) & np.isfinite(w) & np.isfinite(dp)
            # eq. (14.7), with the margin of eq. (14.13) against a real double root
            # split by rounding into a conjugate pair
            height = pr.sign * w.imag
            interior = solved & (height > r.residual) & (
                height * np.abs(1.0 - dp) > AXIS_INSIDE_RTOL * size)
        status = np.where(interior, 1, -1)
        near = np.flatnonzero(solved & ~interior & (np.abs(w.imag) <= AXIS_REAL_RTOL * size))
        if near.size:
            wr = w[near].real.astype(complex)
            # inside a band of the known support a real root must be one Newton
            # converges to (eq. (14.57)): next to an edge the real minimum of the
            # residual, about the distance to the edge, passed the tests below
            verified = np.ones(near.size, dtype=bool)
            band = self._band_interior(x[near])
            if band is not None and band.any():
                k = np.flatnonzero(band)
                rv = newton(pr, self._pz(x[near][k].astype(complex)), wr[k],
                            max_steps=WARM_NEWTON_STEPS)
                verified[k] = rv.converged & np.isfinite(rv.value)
                wr[k] = np.where(verified[k], rv.value.real, wr[k].real)
            with np.errstate(all="ignore"):
                p, d, args = pr.phi_arguments(wr, self._pz(x[near].astype(complex)))
                sz = pr.scale + np.abs(wr)
                solved = np.abs(wr - p) <= BOUNDARY_RTOL * sz * np.abs(1.0 - d)
                ok = (np.abs(p.imag) <= AXIS_REAL_RTOL * sz) & (
                    np.abs(d.imag) <= AXIS_REAL_RTOL) & (d.real < 1.0 - WARM_JACOBIAN_MIN)
            for law, u in args:
                ok &= _real_analytic_at(law, u)
            # a residual at the rounding of phi (eq. (14.42)) is as solved as it gets
            noisy = np.flatnonzero(ok & ~solved)
            if noisy.size:
                solved[noisy] = _at_rounding_floor(
                    pr, wr[noisy], self._pz(x[near][noisy].astype(complex)),
                    self._floor_scale())
            ok &= solved & verified
            w[near[ok]] = wr[ok]
            status[near[ok]] = 0
            if band is not None and (ok & band).any():
                # a real attracting root inside a band: the support missed a gap there
                self._note_gap(x[near][ok & band])
        return w, status

    def _known_bands(self):
        """``(lo, hi)`` arrays of the support's bands once it is known (a mirrored
        formulation's are its host's), else None."""
        host = self.__dict__.get("_host") or self
        ivs = host._interval_cache
        if not ivs:
            return None
        return (np.array([float(iv.lo) for iv in ivs]),
                np.array([float(iv.hi) for iv in ivs]))

    def _band_index(self, x, bands):
        """The index of the band at or left of each ``x`` (0 left of the first)."""
        return np.clip(np.searchsorted(bands[0], x, side="right") - 1, 0, bands[0].size - 1)

    def _band_interior(self, x):
        """Where ``x`` lies inside a band of the support, more than
        ``BAND_INTERIOR_ULPS`` spacings of the band's ends from them; None before
        the support is known (eq. (14.57)) and while a gap's edges are searched
        (:meth:`_split_at_gaps`: its bands are the ones in question)."""
        host = self.__dict__.get("_host") or self
        bands = self._known_bands()
        if bands is None or host.__dict__.get("_splitting"):
            return None
        lo, hi = bands
        k = self._band_index(x, bands)
        margin = BAND_INTERIOR_ULPS * np.spacing(np.maximum(np.abs(lo[k]), np.abs(hi[k])))
        return (x > lo[k] + margin) & (x < hi[k] - margin)

    def _note_gap(self, x):
        """Keep points of a band of the support found outside it (eq. (14.57)) more than
        ``GAP_EVIDENCE_RTOL`` of the band's width from its ends, for
        :meth:`_representation` (a mirrored formulation keeps them for its host)."""
        bands = self._known_bands()
        if bands is None:
            return
        lo, hi = bands
        k = self._band_index(x, bands)
        margin = GAP_EVIDENCE_RTOL * (hi[k] - lo[k])
        keep = (x > lo[k] + margin) & (x < hi[k] - margin)
        if keep.any():
            host = self.__dict__.get("_host") or self
            host.__dict__.setdefault("_gap_evidence", []).extend(x[keep].tolist())

    def _representation(self):
        """The representation (:meth:`SpectralLaw._representation`); where its density
        finds points of a band outside the support (a gap between two points of the
        locator's grid, eq. (14.57)), the build stops, the band is split at that gap's
        edges and the build starts again (theory section 14.52); where a gap's edges
        are not found, the build goes on as before."""
        if self._rep is not None:
            return self._rep
        for _ in range(GAP_MAX_SPLITS):
            self._watch_gaps = True
            try:
                return super()._representation()
            except _MissedGap:
                self._rep = None
                evidence = np.unique(self.__dict__.pop("_gap_evidence"))
                self._splitting = True
                try:
                    ivs = self._split_at_gaps(evidence)
                finally:
                    self._splitting = False
                if ivs is None:
                    break
                self._interval_cache = ivs
                for key in ("_pole_models", "_near_atom_windows_kept", "_near_atom_kept"):
                    self.__dict__.pop(key, None)
            finally:
                self._watch_gaps = False
        return super()._representation()

    def _gap_edge(self, x_out, x_in):
        """The edge in the cell ``[x_out, x_in]`` (``x_out`` outside, ``x_in`` inside):
        bordered Newton (eq. (14.5)) after ``EDGE_BISECTIONS`` bisections, else the
        certified bisection of eq. (14.11), as the support's own edges; None where
        neither closes in the cell."""
        xo, xi = np.array([x_out]), np.array([x_in])
        res = self._edges(xo, xi, EDGE_BISECTIONS)
        lo, hi = min(x_out, x_in), max(x_out, x_in)
        if res.converged[0] and lo <= res.value[0, 1].real <= hi:
            return float(res.value[0, 1].real)
        xb, _, closed = self._bisect_edges(xo, xi)
        return float(xb[0]) if closed[0] else None

    def _split_at_gaps(self, xs):
        """The support's bands split at the gaps holding the points ``xs`` (each found
        outside by eq. (14.57)): from each point (at most ``GAP_MAX_TRIES``, the middle
        one first), steps of doubling length to either side until a point is inside
        by the test of :meth:`_edges`' bisection, then :meth:`_gap_edge` in each cell.  None where no gap is resolved
        so."""
        ivs = list(self._interval_cache)
        changed = False
        tries = 0
        # the middle point first: the representation's points crowd at the gap's ends
        order = np.argsort(np.abs(np.arange(xs.size) - xs.size // 2), kind="stable")
        for x0 in xs[order]:
            k = next((j for j, iv in enumerate(ivs) if iv.lo < x0 < iv.hi), None)
            if k is None:
                continue                     # (in a gap split off already)
            if tries == GAP_MAX_TRIES:
                break
            tries += 1
            iv = ivs[k]
            width = float(iv.hi) - float(iv.lo)
            ends = []
            for side in (-1.0, 1.0):
                step, x_in = GAP_SEARCH_START * width, None
                while step < width:
                    xt = x0 + side * step
                    if not float(iv.lo) < xt < float(iv.hi):
                        break
                    # inside by the test of the edges' own bisection (eq. (14.5))
                    w = self._boundary(np.array([xt]), partial=True)[0]
                    if not np.isfinite(w):
                        break
                    if abs(w.imag) > INSIDE_RTOL * (self._problem.scale + abs(w)):
                        x_in = xt
                        break
                    step *= 2.0
                if x_in is None:
                    break
                edge = self._gap_edge(x0, x_in)
                if edge is None:
                    break
                ends.append(edge)
            if len(ends) != 2 or not ends[0] < ends[1]:
                continue
            ivs[k:k + 1] = [Interval(iv.lo, ends[0], iv.lo_exponent, Fraction(1, 2)),
                            Interval(ends[1], iv.hi, Fraction(1, 2), iv.hi_exponent)]
            changed = True
        return tuple(ivs) if changed else None

    def _height_scale(self):
        """The scale of the heights ``y`` of the continuation (eq. (14.3)): the law's,
        or inside a band of a sum solved at a scale of its own (eqs. (14.48), (14.62))
        that scale, where the heights of the sum's would stop ``CONT_STOP`` of the
        sum's scale above the axis, far from the band's edges (a ⊠, whose problem's
        scale is that of ``1/w``, keeps the law's)."""
        if self.multiplicative:
            return self._xscale
        return min(self._xscale, self._problem.scale)

    def _axis_newton(self, x, guess, steps=WARM_NEWTON_STEPS):
        """Newton at ``y = 0`` from ``guess``, classified by :meth:`_classify_axis`."""
        pr = self._problem
        guess = np.where(pr.sign * guess.imag >= 0, guess, guess.real + 0j)
        r = newton(pr, self._pz(x.astype(complex)), guess, max_steps=steps)
        return self._classify_axis(x, r)

    def _near_axis(self, x, w0):
        """The last step of the continuation for roots ``w0`` at ``y = 0`` that
        :meth:`_classify_axis` rejected (eq. (14.14)).

        Newton at ``z = x + i eta``, ``eta = CONT_STOP`` of the point's scale,
        from ``w0``: for ``Im z > 0`` a root strictly inside the half-plane is
        ``omega(z)`` (eq. (14.2)), the value the continuation reaches at its
        last level; then Newton at ``y = 0`` from it, the continuation's final
        step, at the points the first one solved.  Each Newton takes at most
        ``WARM_NEWTON_STEPS`` rounds, as the other warm starts do: a point that
        needs more is the continuation's (theory section 14.47).  Returns
        ``(w, ok)``; ``ok`` is false where a step does not converge.
        """
        pr = self._problem
        xscale = (np.maximum(np.abs(x), np.finfo(float).tiny) if self.multiplicative
                  else np.full(x.shape, self._height_scale()))
        z = x + 1j * CONT_STOP * xscale
        start = np.where(pr.sign * w0.imag > 0, w0, w0.real + 1j * pr.sign * CONT_STOP * (
            pr.scale + np.abs(w0)))
        pz, px = self._pz(z), self._pz(x.astype(complex))
        r = newton(pr, pz, start, max_steps=WARM_NEWTON_STEPS)
        size = pr.scale + np.abs(r.value)
        # either step is solved at its tolerance or, next to a fold where the
        # estimate is the rounding over |1 - phi'|, at the floor of eq. (14.27)
        rounding = self._floor_scale()
        ok = ((r.residual <= BOUNDARY_RTOL * size)
              | _at_rounding_floor(pr, r.value, pz, rounding)) & (
            pr.sign * r.value.imag > np.minimum(r.residual, BOUNDARY_RTOL * size))
        value = r.value.copy()
        sel = np.flatnonzero(ok)
        if sel.size:
            # the final step only where the first one was solved
            rf = newton(pr, px[sel], r.value[sel], max_steps=WARM_NEWTON_STEPS)
            value[sel] = rf.value
            sz = pr.scale + np.abs(rf.value)
            good = ((rf.residual <= BOUNDARY_RTOL * sz) | _at_rounding_floor(
                pr, rf.value, px[sel], rounding)
                    ) & _contracting(rf.derivative)     # eq. (14.56)
            if good.any():
                # where the map is the identity at x every w is a fixed point and
                # Newton keeps its start: the value is the continuation's limit (eq.
                # (14.3))
                probe = rf.value + 1j * pr.sign * DEGENERATE_PROBE * sz
                with np.errstate(all="ignore"):
                    moved = np.abs(pr.phi(probe, px[sel])[0] - probe)
                good &= ~(moved <= DEGENERATE_RTOL * sz)
            ok[sel] = good
        return value, ok

    def _axis(self, x, guess, check=False, partial=False):
        """``w(x + i0)`` at real points: :meth:`_warm_axis` from ``guess``, then the
        continuation for the points it rejects (``partial`` as in :meth:`_continue`)."""
        x = np.asarray(x, dtype=float)
        w, bad = self._warm_axis(x, guess)
        if bad.size:
            w[bad] = self._continue(x[bad], np.zeros(bad.size), check=check, partial=partial)
        return w

    def _warm_axis(self, x, guess):
        """``(w, bad)``: :meth:`_axis_newton` from ``guess``, then :meth:`_near_axis` at the
        points it rejects; ``bad`` indexes the points neither accepts (their ``w`` is
        Newton's rejected root)."""
        w, status = self._axis_newton(x, guess)
        bad = np.flatnonzero(status < 0)
        if bad.size:
            wn, ok = self._near_axis(x[bad], w[bad])
            w[bad[ok]] = wn[ok]
            bad = bad[~ok]
        return w, bad

    def _first_level(self, x, y):
        """``(w, ok)`` at ``x + i y`` (``y > 0``) by eq. (14.2) then Newton; ``ok`` where
        Newton converged to a point of the open half-plane (there the fixed point
        is unique, eq. (14.2))."""
        pr = self._problem
        z = self._pz(x + 1j * y)
        w = pr.start(z)
        ok = np.zeros(x.shape, dtype=bool)
        for n_iter in REACH_ITERATIONS:
            # a few iterations (14.2) towards the branch, then Newton; the points
            # Newton does not solve iterate longer
            todo = np.flatnonzero(~ok)
            if not todo.size:
                break
            r = iterate(pr, z[todo], w[todo], max_iterations=n_iter)
            r = newton(pr, z[todo], r.value)
            w[todo] = r.value
            ok[todo] = (r.residual <= LEVEL_RTOL * (pr.scale + np.abs(r.value))) & (
                pr.sign * r.value.imag > 0)
        return w, ok

    def _continue(self, x, y_final, check=True, partial=False):
        """Continuation from ``x + i CONT_START*scale`` down to ``x + i y_final`` (eq. (14.3)).

        Each point divides ``y`` by its own factor (first ``CONT_FACTOR_MAX``),
        starting Newton from the secant extrapolation of its last two levels;
        a level Newton does not solve within ``LEVEL_NEWTON_STEPS`` is retried
        with the factor's square root, and a solved one doubles the factor
        (up to ``CONT_FACTOR_MAX``).  A point bound for the axis tries, once its
        ``y`` is below ``JUMP_START`` of its scale and then every ``JUMP_FACTOR``,
        Newton at ``y = 0`` from the extrapolation to ``y = 0``; a root accepted
        by :meth:`_classify_axis` (eqs. (14.7), (14.11)) ends its continuation.
        Points whose factor falls below ``CONT_FACTOR_MIN`` raise
        :class:`ConvergenceError`, and so do points whose final value misses
        :data:`BOUNDARY_RTOL` unless ``check`` is false (the support locator
        only needs to tell the inside from the outside).  With ``partial`` such
        points are NaN instead and the others go on; the first one's error is
        kept in ``_partial_error`` (section 14.43).
        """
        pr = self._problem
        s = self._height_scale()
        x = np.asarray(x, dtype=float)
        y_final = np.asarray(y_final, dtype=float)
        # ⊠ is scale-free: a point next to 0 starts at a height of its own size
        top = CONT_START * (np.minimum(s, CONT_LOCAL * np.abs(x)) if self.multiplicative
                            else np.full(x.shape, s))
        top = np.where(top > 0, top, CONT_START * s)
        y = np.maximum(top, y_final)
        w, ok = self._first_level(x, y)
        retry = ~ok & (y < CONT_START * s)
        if retry.any():
            # not reached from the point's own height: from the scale of the problem
            y[retry] = np.maximum(CONT_START * s, y_final[retry])
            w[retry], _ = self._first_level(x[retry], y[retry])
        w_prev = w.copy()
        y_prev = np.full(x.shape, np.nan)
        factor = np.full(x.shape, CONT_FACTOR_MAX)
        # ⊠ is scale-free: next to 0 the continuation goes on to y << |x|
        xscale = (np.maximum(np.abs(x), np.finfo(float).tiny) if self.multiplicative
                  else np.full(x.shape, s))
        stop = CONT_STOP * xscale
        jump = np.where(y_final == 0, JUMP_START * xscale, -1.0)
        landed = np.zeros(x.shape, dtype=bool)
        active = y > y_final
        levels = 0
        while active.any():
            levels += 1
            idx = np.flatnonzero(active)
            ya, fa = y[idx], factor[idx]
            yn = np.maximum(ya / fa, y_final[idx])
            last = yn < stop[idx]
            yn = np.where(last, y_final[idx], yn)
            has = np.isfinite(y_prev[idx])
            slope = np.where(has, (w[idx] - w_prev[idx]) / np.where(has, ya - y_prev[idx], 1.0),
                             0.0)
            guess = w[idx] + slope * (yn - ya)
            # the predictor must stay in the problem's half-plane
            guess = np.where(pr.sign * guess.imag >= 0, guess, w[idx])
            zn = self._pz(x[idx] + 1j * yn)
            rn = newton(pr, zn, guess, max_steps=LEVEL_NEWTON_STEPS, rtol=LEVEL_RTOL)
            ok = rn.converged.copy()
            # a level whose residual is at the rounding of phi is solved as far as
            # the data allow (next to a fold, |1 - phi'| makes Newton's error
            # estimate exceed the tolerance; over 1e5 atoms it stalled at y ~ 1e-16)
            near = np.flatnonzero(~ok & np.isfinite(rn.value)
                                  & (rn.residual <= LEVEL_FLOOR_RTOL * (pr.scale + np.abs(rn.value))))
            if near.size:
                ok[near] = _at_rounding_floor(pr, rn.value[near], zn[near],
                                              self._floor_scale())
            # a repelling root is another fixed point, never omega(z) (eq. (14.56)):
            # next to a zero of a product's G, where omega runs to infinity, Newton
            # from a level far out found the real root with phi' = 9.8
            ok &= _contracting(rn.derivative)
            good, bad = idx[ok], idx[~ok]
            w_prev[good], y_prev[good] = w[good], y[good]
            w[good], y[good] = rn.value[ok], yn[ok]
            factor[good] = np.minimum(factor[good] * 2.0, CONT_FACTOR_MAX)
            factor[bad] = np.sqrt(factor[bad])
            # a failed last step (to y_final from below the stop height) would be the
            # same Newton from the same predictor at every factor that also lands
            # below it: the next level is at least the stop height (section 14.43)
            again = bad[last[~ok]]
            factor[again] = np.minimum(factor[again], y[again] / stop[again])
            dead = bad[factor[bad] < CONT_FACTOR_MIN]
            if dead.size:
                k = int(dead[np.argmin(factor[dead])])
                err = ConvergenceError(
                    f"subordination continuation at x={float(x[k])!r} stalled at "
                    f"y={float(y[k]):.3e} (step factor below {CONT_FACTOR_MIN}; "
                    f"theory eq. (14.3))", point=float(x[k]), iterations=levels)
                if not partial:
                    raise err
                self._partial_failure(err)
                w[dead], y[dead] = np.nan, y_final[dead]
                landed[dead] = True
            # eq. (14.11): try the axis from here; an accepted root is final
            hop = good[(y[good] > 0) & (y[good] <= jump[good])]
            if hop.size:
                pred = w[hop] - y[hop] * (w[hop] - w_prev[hop]) / (y[hop] - y_prev[hop])
                pred = np.where(np.isfinite(pred), pred, w[hop])
                wj, st = self._axis_newton(x[hop], pred, JUMP_NEWTON_STEPS)
                hit = hop[st >= 0]
                w[hit], y[hit] = wj[st >= 0], 0.0
                landed[hit] = True
                jump[hop] = y[hop] * JUMP_FACTOR
            active = y > y_final
        # polish at the final level to rounding (a few steps from a converged point)
        zf = self._pz(x + 1j * y)
        err = np.zeros(x.shape)
        rest = ~landed
        repelling = np.zeros(x.shape, dtype=bool)
        if rest.any():
            r = newton(pr, zf[rest], w[rest])
            w[rest], err[rest] = r.value, r.residual
            repelling[rest] = ~_contracting(r.derivative)
        if not check:
            return w
        tol = BOUNDARY_RTOL * (pr.scale + np.abs(w))
        # next to a fold (an edge) phi' -> 1 and Newton's error estimate carries the
        # rounding of phi divided by |1 - phi'|: there a residual at rounding is the
        # most the formulation gives, and is accepted (a NaN estimate never is)
        bad = ~(err <= tol)
        idx = np.flatnonzero(bad & np.isfinite(w))
        if idx.size:
            bad[idx] = ~_at_rounding_floor(pr, w[idx], zf[idx],
                                           self._floor_scale())
        if repelling.any():
            # the polish left the branch for a repelling root (eq. (14.56))
            err[repelling] = np.inf
            bad |= repelling
        if bad.any():
            k = int(np.argmax(bad))
            error = ConvergenceError(
                f"subordination solve at z={complex(x[k] + 1j * y[k])!r}: estimated error "
                f"{err[k]:.3e} > {tol[k]:.1e} after the continuation's Newton steps "
                f"(theory eq. (14.3))",
                point=complex(x[k] + 1j * y[k]), residual=float(err[k]),
                tolerance=float(tol[k]), iterations=levels)
            if not partial:
                raise error
            self._partial_failure(error)
            w[bad] = np.nan
        return w

    def _partial_failure(self, error):
        """Keep the first error of a partial solve (:meth:`_continue`)."""
        if self.__dict__.get("_partial_error") is None:
            self._partial_error = error

    # -- hooks ----------------------------------------------------------------------
    def _atoms(self):
        from ..algebra._levels import additive_atoms, multiplicative_atoms

        if self.multiplicative:
            return multiplicative_atoms(self.a.atoms(), self.b.atoms())
        return additive_atoms(self.a.atoms(), self.b.atoms())

    def _support_intervals(self):
        """The support; where this formulation's edges cannot be solved, the mirrored
        one's (the other law's subordination point the unknown, eq. (14.29), section
        14.31), which then also solves the density first.  A grid whose continuation
        stalls raises at once (a law the engine cannot solve, as the token law the
        Dyson system of eq. (13.12) then serves: a second grid would cost as much)."""
        curves = self._curve_support()
        if curves is not None:
            # the bands do not need the grid (eq. (14.20)); only the warm starts of
            # eq. (14.7) do, from its points inside them (section 14.40)
            try:
                self._seed_bands(curves)
            except ConvergenceError:
                pass                  # the whole grid, as below
            else:
                ivs = _curve_intervals(curves)
                self._check_far_atom_bands(ivs)
                return ivs
        grid = self._locator_grid()
        try:
            return self._own_support(grid)
        except _UnresolvedBand:
            raise          # the mirror's grid and tolerances are the same
        except ConvergenceError as err:
            if grid is None:
                raise
            mirror = self._mirror()
            if mirror is None:
                raise
            try:
                ivs = mirror._own_support(mirror._locator_grid())
            except ConvergenceError as err2:
                raise ConvergenceError(f"{err} and, in the mirrored formulation of eq. "
                                       f"(14.29), {err2}") from err
            mirror._interval_cache = ivs
            self.__dict__["_formulations"] = [mirror, self]
            return ivs

    def _seed_bands(self, bands):
        """The warm starts of eq. (14.7) from the locator grid's points inside each of
        ``bands`` (the curves' bands), each band located on its own (eq. (14.12)):
        the grid's points in the gaps, where a nested law is solved next to its
        own edges and zeros, are not needed once the curves gave the bands."""
        grid = self._additive_grid()
        xs, ws = [], []
        for blo, bhi, _, _ in bands:
            x = grid[(grid > blo) & (grid < bhi)]
            if x.size:
                w = self._locate(x)
                seed = self._warm_inside(w)
                xs.append(x[seed])
                ws.append(w[seed])
        self._warm_x = np.concatenate(xs) if xs else np.empty(0)
        self._warm_w = np.concatenate(ws) if ws else np.empty(0, dtype=complex)

    def _additive_grid(self):
        """The locator grid of a ⊞ (eq. (14.12)): ``SUPPORT_GRID`` equal steps over the
        bounds of its support, padded by ``GRID_PAD`` of its scale on both sides."""
        lo, hi = self._bounds
        pad = GRID_PAD * self._xscale
        return np.linspace(lo - pad, hi + pad, SUPPORT_GRID)

    def _warm_inside(self, w):
        """Boundary values ``w`` clearly inside the support, kept as warm starts of
        eq. (14.7): ``Im w`` above ``WARM_INSIDE_RTOL`` of ``|w|`` plus the scale."""
        pr = self._problem
        return pr.sign * w.imag > WARM_INSIDE_RTOL * (pr.scale + np.abs(w))

    def _locator_grid(self):
        """``(xs, w)``: the locator's grid and its solution (eq. (14.12)); None where the
        grid's continuation stalls (its error is raised by :meth:`_own_support`)."""
        lo, hi = self._bounds
        if self.multiplicative:
            # a support reaching 0 (a hard edge) starts at the first grid point; where
            # the continuation stalls below the plain grid (eq. (14.41)), the plain grid
            xs = product_grid(self._bounds, SUPPORT_GRID, (self.a, self.b))
            grids = [xs]
            if below_plain_grid(xs[:1], self._bounds)[0]:
                grids.append(product_grid(self._bounds, SUPPORT_GRID))
            if not lo > 0 and not may_reach_zero((self.a, self.b)):
                # no factor gives the product a hard edge (eq. (14.6)): where the
                # continuation stalls next to 0 (a degenerate limit), grids that start
                # higher, up to SUPPORT_START_LIFTS
                grids += [xs[-1] * np.geomspace(HARD_EDGE_GRID_START * lift, 1.0, SUPPORT_GRID)
                          for lift in SUPPORT_START_LIFTS]
        else:
            grids = [self._additive_grid()]
        for xs in grids:
            try:
                return xs, self._locate(xs)
            except ConvergenceError as err:
                self._grid_error = err
        return None

    def _own_support(self, grid):
        """The support from this formulation (eqs. (14.5), (14.20), (14.34), (14.17)) and
        its locator ``grid`` (:meth:`_locator_grid`)."""
        if grid is None:
            raise self._grid_error
        lo, hi = self._bounds
        xs, w = grid
        pr = self._problem
        inside = np.abs(w.imag) > INSIDE_RTOL * (pr.scale + np.abs(w))
        # or where G itself is not real: a subordination point that lies on its own
        # law's support at that law's smaller scale has an imaginary part below the
        # threshold above while the density is large (section 14.36)
        with np.errstate(all="ignore"):
            g = self._g(w, self._pz(xs.astype(complex)))
        inside |= np.isfinite(g) & (np.abs(g.imag) > INSIDE_RTOL * np.abs(g))
        if self.multiplicative:
            low = below_plain_grid(xs, self._bounds)
            if low.any():
                inside[low] = extension_inside(
                    inside, low, solid_unknowns(w[low]),
                    may_reach_zero((self.a, self.b)))
        exact_support = self._discrete_pair() is not None or self._atomic_population() is not None
        poles = np.empty(0) if exact_support else pole_candidates(self.a, self.b,
                                                                  self.multiplicative)
        if poles.size:
            xs, w, inside = self._probe_poles(xs, w, inside, poles)
        seed = self._warm_inside(w)
        self._warm_x, self._warm_w = xs[seed], w[seed]
        curves = self._curve_support()
        if curves is not None:
            # eq. (14.20) on the branches of eq. (14.37): every gap, however narrow
            # against the grid (which still seeds the warm starts of eq. (14.7))
            return _curve_intervals(curves)
        if not inside.any():
            raise ConvergenceError(
                f"no point of the support of {self._describe()} found on a grid of "
                f"{xs.size} points over [{lo!r}, {hi!r}]")
        sums = self._discrete_pair()
        if sums is not None:
            # eqs. (14.20), (14.34): every gap of a ⊞ or ⊠ of two discrete laws,
            # however narrow
            if self.multiplicative:
                from ._discrete_product_support import discrete_product_edges as edges_of
            else:
                from ._discrete_sum_support import discrete_sum_edges as edges_of

            half, pole = Fraction(1, 2), Fraction(-1, 2)
            return tuple(Interval(lo, hi, pole if plo else half, pole if phi else half)
                         for lo, hi, plo, phi in edges_of(*sums))
        population = self._atomic_population()
        if population is not None:
            # eq. (14.17): every gap of a sample covariance over atoms, however narrow
            # against the grid (the grid still seeds the warm starts of eq. (14.7))
            from ._population_support import population_edges

            bands = population_edges(*population)
            return tuple(Interval(a, b, Fraction(1, 2), Fraction(1, 2)) for a, b in bands)
        edges = []
        hard = bool(self.multiplicative and not lo > 0 and inside[0])
        if hard:
            # eq. (14.6): the support reaches 0; no fold there
            edges.append((0.0, "lo", self._hard_edge_exponent()))
            inside = inside.copy()
            inside[0] = False
        idx = np.flatnonzero(np.diff(inside.astype(int)))
        if (inside[0] and not hard) or inside[-1]:
            raise ConvergenceError(
                f"the support of {self._describe()} reaches the end of its bounding interval "
                f"[{lo!r}, {hi!r}] (a hard edge): not handled by the analytic path")
        if hard and idx.size and idx[0] == 0:
            idx = idx[1:]          # the hard edge's own cell
        kinds = ["lo" if not inside[i] else "hi" for i in idx]
        x_out = np.array([xs[i] if not inside[i] else xs[i + 1] for i in idx])
        x_in = np.array([xs[i + 1] if not inside[i] else xs[i] for i in idx])
        if poles.size and idx.size:
            # a transition across a candidate pole edge is that edge (section 14.27):
            # the fold of eq. (14.5) is singular there, and its start, a probe next to
            # it, need not converge
            lo_c, hi_c = np.minimum(x_out, x_in), np.maximum(x_out, x_in)
            j = np.searchsorted(poles, lo_c)
            at = np.minimum(j, poles.size - 1)
            pole_cell = (j < poles.size) & (poles[at] <= hi_c)
            for k in np.flatnonzero(pole_cell):
                edges.append((float(poles[at[k]]), kinds[k], Fraction(-1, 2)))
            keep = ~pole_cell
            kinds = [kd for kd, kp in zip(kinds, keep) if kp]
            x_out, x_in = x_out[keep], x_in[keep]
        # eq. (14.5) by bordered Newton from the real solution at the outer grid point;
        # where that start is too far from the fold, bisect the cell and retry
        w_at = {float(v): c for v, c in zip(xs, w)}
        res = self._edges(x_out, x_in, 0, np.array([w_at[float(v)] for v in x_out]))
        lo_c, hi_c = np.minimum(x_out, x_in), np.maximum(x_out, x_in)

        def in_cell(r):
            # an edge must lie in the grid cell it was started from: a fold outside it
            # is another edge (two edges of a gap narrower than a cell both start from
            # the one grid point in the gap)
            slack = EDGE_CELL_RTOL * (hi_c - lo_c)
            x = r.value[:, 1] if r.value.size else np.empty(0)
            return r.converged & (x >= lo_c - slack) & (x <= hi_c + slack)

        res = FixedPointResult(res.value, res.residual, res.iterations, in_cell(res))
        if not res.converged.all():
            again = ~res.converged
            retry = self._edges(x_out[again], x_in[again], EDGE_BISECTIONS)
            value, resid = res.value.copy(), res.residual.copy()
            value[again], resid[again] = retry.value, retry.residual
            conv = res.converged.copy()
            conv[again] = retry.converged
            res = FixedPointResult(value, resid, res.iterations + retry.iterations, conv)
            res = FixedPointResult(res.value, res.residual, res.iterations, in_cell(res))
        if not res.converged.all():
            # a fold within the rounding of a constituent's edge, where phi' climbs from
            # far below 1 to 1 over a sliver (section 14.31): the certified test of
            # eqs. (14.7), (14.11) bisected to the rounding of x
            again = np.flatnonzero(~res.converged)
            xb, wb, closed = self._bisect_edges(x_out[again], x_in[again])
            if not closed.all():
                k = int(again[np.argmin(closed)])
                raise ConvergenceError(
                    f"edge of {self._describe()} near x={float(x_out[k])!r}: bordered Newton "
                    f"(theory eq. (14.5)) did not converge, residual {res.residual[k]:.3e}, "
                    f"and the bisection of its cell did not close on a point certified outside",
                    point=float(x_out[k]), residual=float(res.residual[k]))
            value = res.value.copy()
            value[again, 0], value[again, 1] = wb.real, xb
            res = FixedPointResult(value, res.residual, res.iterations,
                                   np.ones(res.converged.shape, dtype=bool))
        wx = res.value
        xe = wx[:, 1]
        for k in range(len(kinds)):
            wk = np.array([complex(wx[k, 0])])
            arg = 1.0 / wk if self.multiplicative else wk
            fa = abs(_reciprocal_pair(self.a, arg)[0][0])
            la, ha = self.a.support()
            expo = Fraction(-1, 2) if fa < POLE_EDGE_RTOL * max(ha - la, abs(la), abs(ha)) \
                else Fraction(1, 2)
            edge = float(xe[k])
            if expo < 0:
                # a pole edge is the sum (product) of its two atoms (eq. (14.30)): the
                # correctly rounded value instead of the fold's few ulps
                pair = pole_edge_pair(self.a, self.b, edge, self.multiplicative, self._xscale)
                if pair is not None:
                    edge = pair[0] * pair[2] if self.multiplicative else pair[0] + pair[2]
            edges.append((edge, kinds[k], expo))
        edges.sort()
        ivs = []
        for j in range(0, len(edges) - 1, 2):
            (x0, k0, e0), (x1, k1, e1) = edges[j], edges[j + 1]
            if k0 != "lo" or k1 != "hi" or not x0 < x1:
                raise ConvergenceError(
                    f"edges of {self._describe()} do not pair into intervals: {edges!r}")
            ivs.append(Interval(float(x0), float(x1), e0, e1))
        if not self.multiplicative:
            self._check_atom_bands(ivs, xs)
        return tuple(ivs)

    def _probe_poles(self, xs, w, inside, poles):
        """The locator grid with points beside every candidate pole edge that lies
        between two grid points inside the support (section 14.27): the gap beside
        a pole edge can be narrower than the grid.  A candidate in a transition cell
        is taken as that edge by the caller; one outside needs nothing."""
        j = np.searchsorted(xs, poles)
        ok = (j > 0) & (j < xs.size)
        j = np.where(ok, j, 1)
        interior = ok & inside[j - 1] & inside[np.minimum(j, xs.size - 1)]
        if not interior.any():
            return xs, w, inside
        cand = poles[interior]
        scale = np.abs(cand) if self.multiplicative else np.full(cand.shape, self._xscale)
        off = np.outer(POLE_PROBE_RTOLS, scale).ravel()
        extra = np.concatenate([np.tile(cand, len(POLE_PROBE_RTOLS)) + sign * off
                                for sign in (-1.0, 1.0)])
        extra = np.setdiff1d(extra[(extra > xs[0]) & (extra < xs[-1])], xs)
        if not extra.size:
            return xs, w, inside
        guess = np.interp(extra, xs, w.real) + 1j * np.interp(extra, xs, w.imag)
        we = self._axis(extra, guess)
        pr = self._problem
        xs2 = np.concatenate([xs, extra])
        order = np.argsort(xs2, kind="stable")
        w2 = np.concatenate([w, we])[order]
        return xs2[order], w2, np.abs(w2.imag) > INSIDE_RTOL * (pr.scale + np.abs(w2))

    def _discrete_pair(self):
        """``(s, p, t, q)`` when this law is the ⊞ of two discrete laws, or the ⊠ of two
        discrete laws on ``(0, oo)``, with at least two atoms each and at most
        ``MAX_CURVES`` pairs of branches (theory eqs. (14.20), (14.34)); else None."""
        from ..laws._elementary import PointMasses

        if not (isinstance(self.a, PointMasses) and isinstance(self.b, PointMasses)):
            return None
        from ._discrete_sum_support import MAX_CURVES

        ka, kb = self.a.values.size, self.b.values.size
        if ka < 2 or kb < 2 or ka * kb > MAX_CURVES:
            return None
        if self.multiplicative and not (np.all(self.a.values > 0)
                                        and np.all(self.b.values > 0)):
            return None                # an atom at 0: the grid locator (section 14.24)
        return (np.asarray(self.a.values, dtype=float), np.asarray(self.a.weights, dtype=float),
                np.asarray(self.b.values, dtype=float), np.asarray(self.b.weights, dtype=float))

    def _curve_support(self):
        """:meth:`_find_curve_support`, found once."""
        if "_curves" not in self.__dict__:
            self.__dict__["_curves"] = self._find_curve_support()
        return self.__dict__["_curves"]

    def _find_curve_support(self):
        """The bands of a ⊞ from the curves of theory eq. (14.20) on the branches of
        eq. (14.37) (section 14.29), or None: for a ⊠, two discrete laws (section
        14.19), a law whose transform is solved point by point (the causal law:
        its branches' samples cost seconds, the grid a fraction of a second), more
        than ``MAX_LAW_CURVES`` pairs of branches, or where the
        curves cannot be followed (a Cauchy transform not accurate next to an
        edge, a curve whose samples do not settle its sign), which the grid
        locator then serves."""
        if self.multiplicative or self._discrete_pair() is not None or self._pointwise_transform:
            return None
        from ._sum_support import (MAX_LAW_CURVES, curve_keys, law_branches, law_sum_edges,
                                   parameter_index)

        terms = _additive_terms(self.a, levels=True) + _additive_terms(self.b, levels=True)
        if len(terms) > 2:
            # a sum of sums: the curves of eq. (14.50) on the branches of every term,
            # without a nested law's real values (a solve of its own at each point,
            # section 14.40); where they cannot be followed, the two-law curves
            try:
                built = {}            # one law twice (a ⊞ a) is sampled once
                for t in terms:
                    if id(t) not in built:
                        built[id(t)] = law_branches(t, _cauchy_pair)
                laws = [built[id(t)] for t in terms]
                first = parameter_index(laws)
                if len(curve_keys(laws[first], laws[:first] + laws[first + 1:])) \
                        <= MAX_LAW_CURVES:
                    return law_sum_edges(*laws)
            except ConvergenceError:
                pass
        try:
            a = law_branches(self.a, _cauchy_pair)
            b = law_branches(self.b, _cauchy_pair)
            if a.count * b.count > MAX_LAW_CURVES:
                return None
            return law_sum_edges(a, b)
        except ConvergenceError:
            return None

    def _atomic_population(self):
        """``(ratio, t, w)`` when this law is ``MP(v, ratio) ⊠ sum_k w_k delta_{t_k}``
        with ``0 < ratio < 1`` and every ``t_k > 0`` (the atoms scaled by ``v``),
        the case of theory eq. (14.17); else None."""
        from ..laws._elementary import MarchenkoPastur, PointMasses

        if not self.multiplicative:
            return None
        for mp, pop in ((self.a, self.b), (self.b, self.a)):
            if isinstance(mp, MarchenkoPastur) and isinstance(pop, PointMasses) \
                    and 0 < mp.ratio < 1 and np.all(pop.values > 0):
                return (float(mp.ratio), float(mp.variance) * np.asarray(pop.values, dtype=float),
                        np.asarray(pop.weights, dtype=float))
        return None

    def _locate(self, xs):
        """``w(x + i0)`` on the locator grid ``xs`` (increasing), eq. (14.12).

        Every ``LOCATOR_STRIDE``-th point (and the last) is continued from
        ``y = scale`` (with the axis attempts of eq. (14.11)); then, halving the
        stride, the points half-way between solved ones are solved at ``y = 0``
        by Newton from the linear interpolation of their two neighbours, each
        root accepted only by the test of :meth:`_classify_axis`; rejected points
        are continued.  Every grid point is classified, none is skipped.
        """
        n = xs.size
        w = np.empty(n, dtype=complex)
        coarse, levels, rest = locator_schedule(n)
        w[coarse] = self._continue(xs[coarse], np.zeros(coarse.size), check=False)
        for mid, lo, hi, frac in levels:
            w[mid] = self._axis(xs[mid], w[lo] + frac * (w[hi] - w[lo]))
        if rest.size:
            w[rest] = self._continue(xs[rest], np.zeros(rest.size), check=False)
        return w

    def _edges(self, x_out, x_in, bisections, w_out=None):
        """Bordered Newton (eq. (14.5)) from cells ``[x_out, x_in]`` across an edge,
        after ``bisections`` bisections of each cell (a start, never the edge);
        ``w_out`` is ``w`` at ``x_out`` when it is known (no bisection)."""
        pr = self._problem
        x_out, x_in = x_out.copy(), x_in.copy()
        if not x_out.size:
            return FixedPointResult(np.empty((0, 2)), np.empty(0), 0, np.empty(0, dtype=bool))
        if bisections or w_out is None:
            w_out = self._continue(x_out, np.zeros(x_out.size), check=False)
            w_in = self._continue(x_in, np.zeros(x_in.size), check=False)
            for _ in range(bisections):
                mid = 0.5 * (x_out + x_in)
                wm = self._axis(mid, 0.5 * (w_out + w_in))
                ins = np.abs(wm.imag) > INSIDE_RTOL * (pr.scale + np.abs(wm))
                x_in, w_in = np.where(ins, mid, x_in), np.where(ins, wm, w_in)
                x_out, w_out = np.where(ins, x_out, mid), np.where(ins, w_out, wm)
        return edge_newton(pr, np.asarray(w_out).real, x_out,
                           x_scale=0.0 if self.multiplicative else None)

    def _bisect_edges(self, x_out, x_in):
        """Edges by bisection of the cells ``[x_out, x_in]`` on the test of eq. (14.11)
        (a real attracting fixed point: outside), down to ``EDGE_BISECT_ULPS`` of ``x``
        (theory section 14.31).  Returns ``(x, w, closed)``: the outer end of each
        final cell, its real solution, and whether the cell closed with that end
        certified outside (a cell whose outer end never was holds no edge)."""
        x_out, x_in = x_out.astype(float), x_in.astype(float)
        w_out = self._axis(x_out, self._continue(x_out, np.zeros(x_out.size), check=False))
        # the outer end must itself be certified outside (eq. (14.11)), else the cell
        # does not hold an edge and the bisection would return its outer end
        certified = self._axis_newton(x_out, w_out)[1] == 0

        def closed():
            return np.abs(x_in - x_out) <= EDGE_BISECT_ULPS * np.spacing(
                np.maximum(np.abs(x_out), np.abs(x_in)))

        for _ in range(EDGE_BISECT_STEPS):
            open_ = ~closed()
            if not open_.any():
                break
            idx = np.flatnonzero(open_)
            mid = 0.5 * (x_out[idx] + x_in[idx])
            # outside exactly where Newton from the outer end's real solution reaches a
            # real attracting fixed point (eq. (14.11), certified); a point it does not
            # certify counts as inside, so the edge is the last certified point
            wm, status = self._axis_newton(mid, w_out[idx])
            ins = status != 0
            x_in[idx[ins]] = mid[ins]
            out = idx[~ins]
            x_out[out], w_out[out] = mid[~ins], wm[~ins]
            certified[out] = True
        return x_out, w_out, closed() & certified

    def _hard_edge_exponent(self):
        return hard_edge_exponent((self.a, self.b), self._describe())

    def _warm_guess(self, x):
        """Interpolation of the table of solved boundary values at ``x`` (eq. (14.7)):
        linear in ``x`` for ⊞; for ⊠ linear in ``log x`` of ``log w`` (the problem is
        scale-free; next to a hard edge at 0, ``w`` behaves as a power of ``x``),
        extrapolated linearly below the table."""
        xs, ws = self._warm_x, self._warm_w
        if not self.multiplicative:
            return np.interp(x, xs, ws.real) + 1j * np.interp(x, xs, ws.imag)
        with np.errstate(all="ignore"):
            t, lw, tq = np.log(xs), np.log(ws), np.log(np.maximum(x, np.finfo(float).tiny))
        out = np.interp(tq, t, lw.real) + 1j * np.interp(tq, t, lw.imag)
        below = tq < t[0]
        if below.any() and t[1] > t[0]:
            slope = (lw[1] - lw[0]) / (t[1] - t[0])
            out[below] = lw[0] + slope * (tq[below] - t[0])
        return np.exp(out)

    def _boundary(self, x, partial=False, stage=None):
        """``w(x + i0)`` at real points inside the support (eq. (14.7)).

        Newton at ``y = 0`` from the interpolation of already solved
        neighbours (:meth:`_warm_guess`); a root is kept when
        :meth:`_classify_axis` accepts it (the interior fixed point with the
        margin of eq. (14.13), or the boundary fixed point of eq. (14.11));
        the others are solved by eq. (14.14), then by the continuation of
        eq. (14.3).  With ``partial``, NaN where those fail (:meth:`_continue`).
        ``stage`` ``"warm"`` takes the warm starts alone (NaN where they fail, at every
        point without a table of two solved points), ``"continue"`` the continuation
        alone (for points whose warm starts failed; eq. (14.63)).
        """
        x = np.asarray(x, dtype=float)
        w = np.empty(x.shape, dtype=complex)
        todo = np.ones(x.shape, dtype=bool)
        if stage not in (None, "warm", "continue"):
            raise ValueError(f"stage must be None, 'warm' or 'continue', got {stage!r}")
        if stage == "warm":
            w[:] = np.nan
            if self._warm_x.size >= 2 and x.size:
                w, bad = self._warm_axis(x, self._warm_guess(x))
                w[bad] = np.nan
            todo[:] = False
        elif stage is None and self._warm_x.size >= 2 and x.size:
            w = self._axis(x, self._warm_guess(x), check=True, partial=partial)
            todo[:] = False
        if todo.any():
            w[todo] = self._continue(x[todo], np.zeros(int(todo.sum())), partial=partial)
        inside = self._warm_inside(w)
        if inside.any():
            xs = np.concatenate([self._warm_x, x[inside]])
            ws = np.concatenate([self._warm_w, w[inside]])
            order = np.argsort(xs, kind="stable")
            self._warm_x, self._warm_w = xs[order], ws[order]
        return w

    def _check_far_atom_bands(self, ivs):
        """Raise on a band the curves found at an atom that the sum's tolerances do not
        resolve (theory section 14.37): within ``s + [lo - d, hi + d]`` of an atom ``s``
        of one law (mass below 1), ``[lo, hi]`` the other's support, the band and ``d``
        narrower than ``ATOM_BAND_MIN_RTOL`` of the sum's scale, not a band solved at its
        own scale (eq. (14.48)) and not below eq. (8.30)'s limit (raised there).  Where
        the other's support is wider but one of its bands ``[lo, hi]`` is that narrow,
        the same test is kept for the density (:meth:`_density` raises it): the
        support, from the curves, is exact, and a host asks ``G`` only off the axis."""
        scale = self._problem.scale
        limit = ATOM_BAND_MIN_RTOL * scale
        for law, other, s_, m, olo, ohi, whole in self._atom_windows(limit, bands=True):
            iv = self._unresolved_atom_band(ivs, s_, olo, ohi)
            if iv is None:
                continue
            what = (f"the support of {other._describe()}" if whole else
                    f"the band [{olo!r}, {ohi!r}] of {other._describe()}")
            error = _UnresolvedBand(
                f"{self._describe()}: the atom of {law._describe()} at "
                f"{float(s_)!r} (mass {float(m):.6g}) spreads into the band "
                f"[{float(iv.lo)!r}, {float(iv.hi)!r}], as wide as {what} "
                f"({ohi - olo:.3e}), below ATOM_BAND_MIN_RTOL "
                f"{ATOM_BAND_MIN_RTOL:.0e} of the sum's scale {scale:.3e}: the "
                f"solver's tolerances, relative to that scale, do not resolve "
                f"its density (theory section 14.37)", point=float(s_))
            if whole:
                raise error
            if self.__dict__.get("_unresolved_density") is None:
                self._unresolved_density = error

    def _check_atom_band_density(self):
        """Raise the error :meth:`_check_far_atom_bands` kept for the density."""
        error = self.__dict__.get("_unresolved_density")
        if error is not None:
            raise error

    def _unresolved_atom_band(self, ivs, s_, olo, ohi):
        """The first band of ``ivs`` in the window ``s + [lo - d, hi + d]`` of section
        14.37 that the sum's tolerances do not resolve (:meth:`_check_far_atom_bands`),
        or None."""
        from ..algebra._chebyshev import ROUNDING_FLOOR_MAX

        scale = self._problem.scale
        width = ohi - olo
        lo, hi = s_ + olo - width, s_ + ohi + width
        for iv in ivs:
            w = float(iv.hi) - float(iv.lo)
            if (iv.lo <= hi and iv.hi >= lo and w < ATOM_BAND_MIN_RTOL * scale
                    and not _local_band_segments(float(iv.lo), float(iv.hi), scale)
                    and not np.finfo(float).eps * scale / w > ROUNDING_FLOOR_MAX):
                return iv
        return None

    def _atom_windows(self, max_width, bands=False):
        """``(law, other, s, m, lo, hi, whole)`` for every atom ``s`` of mass ``0 < m < 1``
        of one law whose partner's support ``[lo, hi]`` is narrower than ``max_width``
        (``whole``); with ``bands``, where the support is wider, for every band ``[lo,
        hi]`` of the partner with ``max(|lo|, |hi|)`` below ``max_width``: a band next
        to 0, where the partner's subordination point is a number that small, held to
        the sum's absolute tolerance (a band far from 0 is a number of its own size,
        solved to its relative digits; theory section 14.52)."""
        for law, other in ((self.a, self.b), (self.b, self.a)):
            loc, mass = law.atoms()
            details = other.interval_details()
            if not loc.size or not details:
                continue
            olo, ohi = other.support()
            if ohi - olo < max_width:
                windows = [(olo, ohi, True)]
            elif bands:
                windows = [(float(iv.lo), float(iv.hi), False) for iv in details
                           if max(abs(float(iv.lo)), abs(float(iv.hi))) < max_width]
            else:
                continue
            for s_, m in zip(loc, mass):
                if 0 < m < 1:
                    for lo, hi, whole in windows:
                        yield law, other, s_, m, lo, hi, whole

    def _check_atom_bands(self, ivs, xs):
        """Raise where an atom's band of ``a ⊞ b`` lies between two locator points.

        Next to an atom ``s`` of one law (mass below 1, and no atom of the sum
        there), ``a ⊞ b`` carries about the atom's mass within
        ``s + [lo - d, hi + d]``, ``[lo, hi]`` the partner's support and ``d`` its
        width (theory section 14.37).  Where that window is narrower than the grid
        spacing and no interval found meets it (with a cell's margin), the band was
        missed: raised here, with the numbers, instead of by the mass check after
        the density's build.
        """
        spacing = float(np.max(np.diff(xs)))
        sum_loc = self.atoms()[0]
        for law, other, s, m, olo, ohi, _ in self._atom_windows(spacing):
            width = ohi - olo
            if np.any(np.abs(sum_loc - s - olo) <= width):
                continue
            lo, hi = s + olo - width - spacing, s + ohi + width + spacing
            if any(iv.lo <= hi and iv.hi >= lo for iv in ivs):
                continue
            raise _UnresolvedBand(
                f"{self._describe()}: the atom of {law._describe()} at {float(s)!r} "
                f"(mass {float(m):.6g}) spreads into a band about as wide as the support "
                f"of {other._describe()} ({width:.3e}), which lies between two points "
                f"of the locator grid (spacing {spacing:.3e}) and was not found; the "
                f"solver's tolerances, relative to the sum's scale, do not resolve it "
                f"(theory section 14.37)", point=float(s))

    def _first_panel_nodes(self):
        # Two discrete laws with at most as many pairs of atoms as the exact supports
        # take (MAX_CURVES): a solve costs little per point next to its fixed cost per
        # call (theory eq. (8.14)); a population or a computed law keeps the default.
        from ..algebra._chebyshev import CHEAP_SOLVER_START_NODES
        from ..laws._elementary import PointMasses
        from ._discrete_sum_support import MAX_CURVES

        if (isinstance(self.a, PointMasses) and isinstance(self.b, PointMasses)
                and self.a.values.size * self.b.values.size <= MAX_CURVES):
            return CHEAP_SOLVER_START_NODES
        return None

    def _absolute_scale(self):
        # ⊞ resolves x to the rounding of its scale (eq. (14.3)); ⊠ is scale-free
        return None if self.multiplicative else self._xscale

    def _mirror(self):
        """The same law as ``b ⊞ a`` (``b ⊠ a``): the other constituent's
        subordination point is the unknown (eq. (14.29)); None for one law twice."""
        if self.a is self.b:
            return None
        mirror = self.__dict__.get("_mirror_law")
        if mirror is None:
            mirror = self._mirror_law = AnalyticLaw(self.b, self.a, self.multiplicative,
                                                    self.options)
            mirror._host = self           # its support is this one's (eq. (14.57))
        return mirror

    def _boundary_density(self, x, partial=False, stage=None):
        w = self._boundary(x, partial, stage)
        # a point the partial solve left (NaN) stays NaN, for the next formulation
        # (section 14.43); asked of a constituent, a NaN point raised for the whole
        # batch, which then went to the mirrored formulation at every point
        g = np.full(x.shape, complex(np.nan, np.nan))
        solved = np.isfinite(w)
        if solved.any():
            g[solved] = self._g(w[solved], x[solved].astype(complex))
        return np.maximum(-g.imag, 0.0) / math.pi

    def _pole_edges(self):
        """The offset models of the pole edges (theory section 14.27), built once."""
        models = self.__dict__.get("_pole_models")
        if models is not None:
            return models
        models = []
        ends = np.array([float(v) for iv in self.interval_details() for v in (iv.lo, iv.hi)])
        for iv in self.interval_details():
            lo, hi = float(iv.lo), float(iv.hi)
            scale = max(hi - lo, abs(lo), abs(hi))
            for edge, expo, side in ((lo, iv.lo_exponent, 1), (hi, iv.hi_exponent, -1)):
                # (a ⊠'s edge at 0 is its hard edge, eq. (14.6), kept to its digits)
                if expo != Fraction(-1, 2) or (self.multiplicative and edge == 0.0):
                    continue
                pair = pole_edge_pair(self.a, self.b, edge, self.multiplicative, scale)
                if pair is None:
                    continue
                alpha = pair[0]
                if self.multiplicative:
                    def regular(x, alpha=alpha):
                        return 1.0 / self._boundary(x) - alpha
                else:
                    def regular(x, alpha=alpha):
                        return self._boundary(x) - alpha
                # the offsets follow sqrt(x - x_e) to within a fraction of the distance
                # to the support's next edge (across a gap, or the band's other end)
                others = np.abs(ends[ends != edge] - edge)
                reach = POLE_MODEL_REACH * (hi - lo)
                near = min(reach, POLE_MODEL_NEAR * float(others.min())) if others.size \
                    else reach
                models.append(PoleEdge(self.a, pair[0], pair[1], self.b, pair[2], pair[3],
                                       self.multiplicative, edge, side, reach, near,
                                       regular, _cauchy_pair))
        self._pole_models = models
        return models

    def _density(self, x):
        """The density on the axis (eq. (14.7)); next to a pole edge by the offset
        model of eqs. (14.30)-(14.33); in a band far below the sum's scale with
        tolerances relative to the band's (eq. (14.48))."""
        x = np.asarray(x, dtype=float)
        self._check_atom_band_density()
        out = self._density_in_bands(x)
        if self.__dict__.get("_watch_gaps") and self.__dict__.get("_gap_evidence"):
            raise _MissedGap()           # a representation being built stops here
        return out

    def _density_in_bands(self, x):
        """:meth:`_density`, band by band (eq. (14.48))."""
        bands = self._local_bands()
        if not bands:
            return self._scaled_density(x)
        out = np.empty(x.shape)
        rest = np.ones(x.shape, dtype=bool)
        for lo, hi, scale in bands:
            sel = np.flatnonzero(rest & (x >= lo) & (x <= hi))
            if sel.size:
                with self._problem_scale(scale):
                    out[sel] = self._scaled_density(x[sel])
                rest[sel] = False
        if rest.any():
            out[rest] = self._scaled_density(x[rest])
        return out

    def _local_bands(self):
        """``(lo, hi, scale)`` of every part of a band solved at a scale of its own
        (:func:`_local_band_segments`, eqs. (14.48) and (14.62)); none for a ⊠ or
        before the support is known."""
        if self.multiplicative or self._interval_cache is None:
            return []                     # (not while the support is being found)
        scale = self._problem.scale
        return [part for iv in self._interval_cache
                for part in _local_band_segments(float(iv.lo), float(iv.hi), scale)]

    def _floor_scale(self):
        """The scale of the rounding floor of eq. (14.27): a sum's own, also inside a
        block of :meth:`_problem_scale` (``phi`` rounds there, eq. (14.62)); None for a
        ⊠ (its problem's scale, that of ``1/w``)."""
        return None if self.multiplicative else self._xscale

    @contextmanager
    def _problem_scale(self, scale):
        """This law's fixed-point problem with ``scale``, the floor of its tolerances
        (eqs. (14.48), (14.62)), for the duration of the block, the rounding floor of
        eq. (14.27) keeping the sum's scale (:meth:`_floor_scale`); the mirrored
        formulation keeps its own (theory section 14.38)."""
        saved = self._problem.scale
        try:
            self._problem.scale = scale
            yield
        finally:
            self._problem.scale = saved

    def _scaled_density(self, x):
        """:meth:`_density` at the problem's current scale."""
        out = np.empty(x.shape)
        rest = np.ones(x.shape, dtype=bool)
        for model in self._pole_edges():
            sel = np.flatnonzero(rest & model.serves(x))
            if sel.size:
                g, solved = model.cauchy(x[sel])
                out[sel[solved]] = np.maximum(-g[solved].imag, 0.0) / math.pi
                rest[sel[solved]] = False
        if rest.all():
            return self._general_density(x)
        if rest.any():
            out[rest] = self._general_density(x[rest])
        return out

    def _general_density(self, x):
        """The density on the axis (eq. (14.7)); points whose subordination point
        cannot be resolved (next to an edge where it tends to infinity, eq. (14.29))
        are solved in the mirrored formulation (section 14.43): each formulation
        solves the points it can and leaves the others to the next one, both warm
        tables first, then the continuations (eq. (14.63)); where one raises
        outright, the points neither solved are halved until each part is solved or
        a single point fails in both."""
        x = np.asarray(x, dtype=float)
        mirror = self._mirror()
        if mirror is None:
            return self._boundary_density(x)

        # the formulation whose continuation solved more of the last batch continues
        # first (a representation asks for batches next to one edge after another)
        order = self.__dict__.setdefault("_formulations", [self, mirror])

        def solve(xs):
            values = np.full(xs.shape, np.nan)
            # the warm starts of both formulations before either continues (eq.
            # (14.63)): a point one formulation's table does not reach is often in
            # the other's, and its continuation costs tens of Newton solves
            for law in tuple(order):
                todo = np.flatnonzero(~np.isfinite(values))
                if todo.size:
                    try:
                        values[todo] = law._boundary_density(xs[todo], stage="warm")
                    except ConvergenceError:
                        pass            # (its points go on to the continuations below)
            errors, raised = [], False          # an error for each formulation that
            solved = []                         # left points or raised; the points each solved
            for law in tuple(order):
                todo = np.flatnonzero(~np.isfinite(values))
                if not todo.size:
                    break
                law._partial_error = None
                try:
                    values[todo] = law._boundary_density(xs[todo], partial=True,
                                                         stage="continue")
                except ConvergenceError as err:
                    errors.append(err)
                    raised = True
                    solved.append(0)
                    continue
                left = todo[~np.isfinite(values[todo])]
                solved.append(todo.size - left.size)
                if left.size:
                    errors.append(law._partial_error or ConvergenceError(
                        f"{law._describe()}: density not finite at x={float(xs[left[0]])!r}"))
            bad = np.flatnonzero(~np.isfinite(values))
            if not bad.size:
                if len(solved) > 1 and solved[1] > solved[0]:
                    # the second's continuation solved more of the points neither
                    # table served: it continues first for the next batch (eq. (14.63))
                    order.reverse()
                return values
            if xs.size == 1 or not raised:
                raise ConvergenceError(
                    f"{errors[0]} and, in the mirrored formulation of eq. (14.29), "
                    f"{errors[-1]}", point=float(xs[bad[0]])) from errors[0]
            part = xs[bad]
            half = part.size // 2
            values[bad] = (solve(part) if part.size == 1 else
                           np.concatenate([solve(part[:half]), solve(part[half:])]))
            return values

        return solve(x.ravel()).reshape(x.shape)

    def _stieltjes_exact(self, z):
        try:
            return self._solve(z)[1]
        except ConvergenceError as err:
            # real points off the support where the solve fails (next to a zero of
            # G, section 14.50): the representation, as for a host (eq. (8.16))
            return self._pair_after_failed_solve(np.asarray(z, dtype=complex), err)[0]

    def _stieltjes_pair(self, zs):
        """``(G, G')`` from one subordination solve (``G'`` by the chain rule); at real
        points outside the support or within ``EDGE_REPRESENTATION_RTOL`` of its scale
        from an edge, where the solve fails (a fold: the continuation's Newton keeps
        half the digits), from the representation (eq. (8.16)), once the support is
        known.  Kept for a host's repeated questions (:meth:`SpectralLaw._memoized_pair`;
        a kept answer is one of the solve's own, from its warm start of then)."""
        return self._memoized_pair(np.asarray(zs, dtype=complex), self._unmemoized_pair)

    def _unmemoized_pair(self, zs):
        try:
            return self._solved_pair(zs)
        except ConvergenceError as err:
            return self._pair_after_failed_solve(zs, err)

    def _pair_after_failed_solve(self, zs, error):
        """``(G, G')`` at ``zs`` after the solve raised ``error``: at the real points off
        the support (or within ``EDGE_REPRESENTATION_RTOL`` of the scale from an edge)
        and off the atoms from the representation (eq. (8.16)), at the others from the
        solve again; ``error`` is raised where there is no such point or the support is
        not known yet."""
        if self._interval_cache is None:
            raise error
        off = (zs.imag == 0) & ~np.isin(zs.real, self.atoms()[0])
        reach = EDGE_REPRESENTATION_RTOL * self._xscale
        for lo, hi in self.intervals():
            off &= ~((zs.real > lo + reach) & (zs.real < hi - reach))
        if not off.any():
            raise error
        return self._pair_beside_solver(zs, self._solved_pair, off)

    def _solved_pair(self, zs):
        """:meth:`_stieltjes_pair` from the subordination solve alone."""
        w, g = self._solve(zs)
        with np.errstate(all="ignore"):
            d = self._problem.cauchy_derivative(w, zs)
        return g, d

    def _stieltjes_derivative(self, zs):
        return self._stieltjes_pair(zs)[1]

    def _moments_exact(self, kmax):
        from ._moments import additive_moments, multiplicative_moments

        if self.multiplicative:
            return multiplicative_moments(self.a, self.b, kmax)
        return additive_moments(self.a, self.b, kmax)

    def _moment_series(self, kmax, prec):
        # the ⊞ / ⊠ of the constituents' moment series (theory section 8.10)
        from ._moments import additive_series, multiplicative_series

        return (multiplicative_series if self.multiplicative else additive_series)(
            self.a, self.b, kmax, prec)


def _curve_intervals(curves):
    """The :class:`Interval` s of the curves' bands (pole edges with exponent -1/2)."""
    half, pole = Fraction(1, 2), Fraction(-1, 2)
    return tuple(Interval(lo, hi, pole if plo else half, pole if phi else half)
                 for lo, hi, plo, phi in curves)


def _additive_terms(law, levels=False):
    """The terms of ``law`` as a sum: the terms of both operands of an additive
    :class:`AnalyticLaw`, else ``[law]`` (theory section 14.40); with ``levels`` (the
    curves of eq. (14.50)) also a ``⊞`` with a law of known R-transform solved by Newton
    over a nested law (eq. (8.8)) as that law and its partner, whose real values cost
    one evaluation each rather than a solve (section 14.42)."""
    parts = law._additive_level_terms if levels else None
    if parts is None:
        parts = law._additive_constituents
    if parts is None:
        return [law]
    return _additive_terms(parts[0], levels) + _additive_terms(parts[1], levels)


def _check(law, name):
    if not isinstance(law, SpectralLaw):
        raise TypeError(f"{name} must be a freeattn law (SpectralLaw), got {type(law).__name__}")
    return law


def analytic_additive(a, b, *, options=None):
    """``a ⊞ b`` of any two laws by analytic subordination (theory eqs. (14.1)-(14.3)).

    Parameters
    ----------
    a, b : SpectralLaw
    options : SolverOptions, optional

    Returns
    -------
    AnalyticLaw

    Examples
    --------
    >>> import freeattn
    >>> from freeattn.compose._analytic import analytic_additive
    >>> ber = freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])
    >>> law = analytic_additive(ber, ber)               # the arcsine law on [-2, 2]
    >>> [round(v, 12) for v in law.intervals()[0]]
    [-2.0, 2.0]
    >>> round(float(law.pdf(0.0)) * 2 * 3.141592653589793, 12)   # 1/(pi sqrt(4 - x^2))
    1.0
    """
    _check(a, "a")
    _check(b, "b")
    arranged = _arranged_sum(_additive_terms(a) + _additive_terms(b),
                             a._evaluation_cost + b._evaluation_cost, options)
    if arranged is not None:
        a, b = arranged
    (la, ha), (lb, hb) = a.support(), b.support()
    if 0 < hb - lb < NARROW_SPREAD_RATIO * (ha - la):
        # the unknown is the narrower law's subordination point (section 14.31)
        a, b = b, a
    return AnalyticLaw(a, b, False, options)


def _costliest(terms):
    """Index of the term whose transform costs the most (the first of equals)."""
    costs = [t._evaluation_cost for t in terms]
    return costs.index(max(costs))


def _sum_cost(terms):
    """Cost of one evaluation of ``G`` of the sum of ``terms`` (eq. (14.51)) with the
    costliest term outermost and the others nested the same way."""
    if len(terms) == 1:
        return terms[0]._evaluation_cost
    top = _costliest(terms)
    return NESTED_SOLVE_FACTOR * (terms[top]._evaluation_cost
                                  + _sum_cost(terms[:top] + terms[top + 1:]))


def _arranged_sum(terms, cost, options):
    """``(nested, top)``: a sum of three or more ``terms`` as the sum of its costliest
    term and the sum of the others, where eq. (14.51) makes that cheaper than the two
    operands given (of costs adding to ``cost``); else None (theory section 14.42).

    ``⊞`` is associative: every arrangement is the same law, and its support comes
    from the curves of all the terms (eq. (14.50)) whichever it is; only the cost
    of its Cauchy transform changes, which a nested sum multiplies by its Newton.
    """
    if len(terms) <= 2:
        return None
    top = _costliest(terms)
    rest = terms[:top] + terms[top + 1:]
    if not terms[top]._evaluation_cost + _sum_cost(rest) < cost:
        return None
    nested = rest[0]
    for t in rest[1:]:
        nested = analytic_additive(nested, t, options=options)
    return nested, terms[top]


def analytic_multiplicative(a, b, *, options=None):
    """``a ⊠ b`` of two laws on ``[0, oo)`` by analytic subordination (theory eq. (14.4)).

    Parameters
    ----------
    a, b : SpectralLaw
    options : SolverOptions, optional

    Returns
    -------
    AnalyticLaw

    Raises
    ------
    ValueError
        If a law has mass below 0.
    """
    for law, name in ((a, "a"), (b, "b")):
        _check(law, name)
        if law.support()[0] < 0:
            raise ValueError(f"{name} must be a law on [0, inf), but its support starts at "
                             f"{law.support()[0]!r}")
    if 0 < _log_spread(b) < min(NARROW_SPREAD_RATIO * _log_spread(a), NARROW_LOG_SPREAD):
        # the unknown is the narrower law's subordination point (section 14.31)
        a, b = b, a
    return AnalyticLaw(a, b, True, options)


def _log_spread(law):
    """``log(hi/lo)`` of a law's support on ``[0, oo)`` (``oo`` where it reaches 0): the
    width that matters to ⊠, which is scale-free."""
    lo, hi = law.support()
    return math.log(hi / lo) if lo > 0 else math.inf
