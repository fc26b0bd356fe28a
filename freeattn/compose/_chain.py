"""The free multiplicative convolution of many laws at once (theory section 14.8).

``nu_1 ⊠ ... ⊠ nu_L`` by one subordination system in ``L`` unknowns,

    eta_1(omega_1) = ... = eta_L(omega_L) = eta(t),
    omega_1 ... omega_L = t eta(t)**(L - 1),            t = 1/z,

(theory eq. (14.8)), solved by Newton (an arrowhead Jacobian: ``O(L)`` per
step) with continuation from ``|z| >> 1`` to the real axis.  Nesting ``L - 1``
two-law solves (eq. (14.4)) would instead cost a full solve of the inner law
at every evaluation of the outer one; the chain costs ``L`` Cauchy transforms
per Newton step.
"""

import math
from fractions import Fraction

import numpy as np

from ..core._errors import ConvergenceError
from ..laws._law_base import (NESTED_SOLVE_FACTOR, AffineLaw, Interval, SpectralLaw,
                              outside_bands)
from ._fixed_point import SystemProblem, WarmTable, newton_system, secant
from ._analytic import (WARM_INSIDE_RTOL, WARM_NEIGHBOUR_RTOL, _cauchy_pair,
                        below_plain_grid, extension_inside, hard_edge_exponent,
                        locator_schedule, may_reach_zero, product_grid,
                        sees_hard_edge, solid_unknowns)

__all__ = ["ProductChainLaw", "product_chain"]

#: Points of the geometric grid on which the support is located.
CHAIN_GRID = 1200
#: A grid cell that holds an edge is cut into ``CHAIN_EDGE_SECTIONS`` equal
#: parts (in ``log x``) per round, all solved in one batch, for
#: ``CHAIN_EDGE_ROUNDS`` rounds (``64**4 = 2**24``: to ``2**-24`` of its width,
#: about 1e-9 relative) before the square-root extrapolation of eq. (14.9).  A
#: continuation costs about the same for one point as for a few hundred (each
#: level is one call of every factor's Cauchy transform), so four rounds of 63
#: points cost a sixth of 24 bisections.
CHAIN_EDGE_SECTIONS = 64
CHAIN_EDGE_ROUNDS = 4
#: ``|Im G| * |z|`` above which a real point is inside the support.
CHAIN_INSIDE_RTOL = 1e-9
#: The continuation starts at ``y = CHAIN_START * scale`` from the large-``|z|``
#: asymptotics ``omega_i ~ t prod_{j != i} m1_j``.
CHAIN_START = 64.0
#: The start's scale is at most ``CHAIN_MOMENT_REACH`` times the radius of the
#: moments up to ``CHAIN_MOMENT_ORDER`` (:meth:`ProductChainLaw._start_scale`).
CHAIN_MOMENT_REACH = 8.0
CHAIN_MOMENT_ORDER = 12
#: Per-point factor by which ``y`` shrinks, between these bounds; a level that fails
#: takes the square root of its factor, and a point whose factor falls below
#: ``CHAIN_FACTOR_MIN`` has stalled.  Next to a zero of G in a gap (a pole of eta, where
#: the unknowns of eq. (14.8) grow like ``1/(z - x0)``) a level of 10 % fails, one of
#: 5 % from the secant's prediction took 9 Newton steps against the level's 8, one of
#: 1 % takes 5 (theory section 14.61: seed 88 / draw 2 of the depth-3 campaign).
CHAIN_FACTOR_MAX = 64.0
CHAIN_FACTOR_MIN = 1.01
#: Eq. (14.65): a point ``x`` starts at the spine level ``y0 >= CHAIN_OWN_RATIO |x|`` (the
#: spine: the continuation along the imaginary axis, its levels ``CHAIN_FACTOR_MAX``
#: apart) where that is at least ``CHAIN_OWN_MIN_LEVELS`` levels below the top (at most
#: ``CHAIN_OWN_MAX_LEVELS``), by Newton from the spine's unknowns at ``i y0``, kept where
#: no unknown moved by more than ``CHAIN_OWN_JUMP`` of its size (``|x|/y0 <= 1/64``
#: moves them by about that; a level of the continuation moves ``y`` by 64 times).
CHAIN_OWN_RATIO = 64.0
CHAIN_OWN_MIN_LEVELS = 2
CHAIN_OWN_MAX_LEVELS = 60
CHAIN_OWN_JUMP = 0.5
#: Below ``1/CHAIN_STEEP_RATIO`` of the start's scale (:meth:`_start_scale`) the
#: continuation's predictor is the secant in ``log u`` against ``log z`` (powers
#: of ``z`` next to a hard edge at 0).
CHAIN_STEEP_RATIO = 256.0
#: There the factor by which ``y`` shrinks grows up to this.
CHAIN_STEEP_FACTOR_MAX = 4096.0
#: Newton steps per continuation level, and the relative step length at which
#: a level (``CHAIN_LEVEL_RTOL``) and the final point (``CHAIN_FINAL_RTOL``) are
#: converged.
CHAIN_LEVEL_STEPS = 8
CHAIN_LEVEL_RTOL = 1e-10
CHAIN_FINAL_RTOL = 1e-14
#: A Newton step moves no unknown by more than this fraction of its size.
CHAIN_STEP_RATIO = 0.5
#: A relative residual of eq. (14.8) below this is the rounding of the system.
CHAIN_RESIDUAL_RTOL = 4e-16
#: Extra Newton steps at the final level.
CHAIN_FINAL_STEPS = 20
#: Newton steps from a solved neighbour within ``WARM_NEIGHBOUR_RTOL`` (eq. (14.15)): of
#: 16 415 such points of the depth-3 campaign's seed 2 / draw 14, 7 857 were still
#: unconverged after 5 steps and 3 477 after 20, stuck at relative residuals 1e-14 -
#: 1e-7 (next to folds, where Newton converges linearly); 8 steps, then the
#: continuation's acceptance.  A farther neighbour (eq. (14.45)) keeps
#: ``CHAIN_FINAL_STEPS``.
CHAIN_NEIGHBOUR_STEPS = 8
#: ``y`` below ``CHAIN_STOP * |x|`` is replaced by the target (eq. (14.8) is scale-free).
CHAIN_STOP = 1e-15
#: Relative accuracy at which the final point is accepted (Newton's step length).
CHAIN_ACCEPT_RTOL = 1e-11
#: A strict continuation (the locator's check of points below the plain grid, eq.
#: (14.59)) keeps a level's root only where Newton moved it from the prediction by at
#: most ``CHAIN_JUMP_RATIO`` times the predictor's own step plus ``CHAIN_JUMP_FLOOR``
#: (relative, the largest over the unknowns).
CHAIN_JUMP_RATIO = 1.0
CHAIN_JUMP_FLOOR = 1e-6
#: Next to a fold the Jacobian of eq. (14.8) is nearly singular and Newton's step
#: length overstates the error; a final point whose relative residual is below
#: this is accepted there (theory section 14.8, the fold at an edge; the same rule
#: as eq. (14.13) for two laws).
CHAIN_FOLD_RESIDUAL_RTOL = 1e-13
#: The extrapolated edge of eq. (14.9) is kept within this many cell widths of
#: the last narrowed cell's middle (else the middle is the edge); a fold of
#: eq. (14.22) within as many widths of its grid cell's middle.
CHAIN_EXTRAPOLATION_REACH = 1.5
#: The fold of eq. (14.22): secant steps, the first step (relative to ``u_L``),
#: the relative step at which it is converged, and the inner Newton on the
#: other rows (steps, accepted relative residual of ``eta``).
CHAIN_FOLD_STEPS = 40
CHAIN_FOLD_START = 1e-4
CHAIN_FOLD_RTOL = 1e-15
CHAIN_FOLD_INNER_STEPS = 30
CHAIN_FOLD_INNER_RTOL = 1e-13
#: Relative distances inside a fold edge of the table's seeds
#: (:meth:`ProductChainLaw._seed_fold`), and the relative step of the central
#: difference of ``d log t/d u_L`` there.
CHAIN_FOLD_SEEDS = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2)
CHAIN_FOLD_DIFF = 1e-5
#: The table of eq. (14.16) reaches ``CHAIN_GAP_REACH`` times beyond the grid on
#: both sides, with ``CHAIN_GAP_POINTS`` geometric points each.
CHAIN_GAP_REACH = 1e4
#: Continued real points outside the support join that table up to this many points.
CHAIN_GAP_TABLE = 4096
#: Below a hard edge's first grid point the table of eq. (14.7) gets
#: ``CHAIN_GAP_POINTS`` geometric points down to ``CHAIN_HARD_REACH`` of it.
CHAIN_HARD_REACH = 1e-12
CHAIN_GAP_POINTS = 64
#: Points per decade of the table on the negative axis (a ratio 1.33: every
#: point farther from the edge at 0 than from its neighbours, eq. (14.16)).
CHAIN_NEGATIVE_PER_DECADE = 8
#: Off-axis points at most ``CHAIN_NEAR_AXIS_RTOL |x|`` above the axis start from the
#: warm solution at ``x`` (eq. (14.44)); in a gap the first Newton step must be
#: below ``CHAIN_NEAR_AXIS_STEP`` of the unknowns and the root within
#: ``CHAIN_NEAR_AXIS_REACH`` first steps of the start.
CHAIN_NEAR_AXIS_RTOL = 1e-4
CHAIN_NEAR_AXIS_STEP = 1e-3
CHAIN_NEAR_AXIS_REACH = 2.0
#: Points up to ``CHAIN_NEAR_AXIS_WIDE |x|`` above the axis that no neighbour's root
#: serves (eq. (14.45)) try the start of eq. (14.44) too, under its test with the
#: first step up to ``CHAIN_NEAR_AXIS_WIDE_STEP`` of the unknowns (that step is about
#: ``y/|x|`` of them, where each unknown scales like a power of ``x``).
CHAIN_NEAR_AXIS_WIDE = 1e-2
CHAIN_NEAR_AXIS_WIDE_STEP = 1e-2
#: Off-axis points kept (the latest first) as warm starts of eq. (14.15).
CHAIN_WARM_TABLE = 8192
#: ``Im omega`` up to this fraction of ``|omega|`` counts as real (rounding).
CHAIN_REAL_RTOL = 1e-12
#: ``Im(omega_i/t)`` up to this fraction of ``|omega_i/t|`` passes the test of eq.
#: (14.64) (``arg omega_i <= arg t``; a root on another branch breaks it by tens of
#: degrees, rounding by 1e-16).
CHAIN_TURN_RTOL = 1e-9
#: :meth:`ProductChainLaw._from_fold`: real points within ``CHAIN_FOLD_REACH`` of a soft
#: edge (relative) start from its fold's model (eq. (14.54)); a root is kept within
#: ``CHAIN_FOLD_LOCAL`` times the model's distance of its start.
CHAIN_FOLD_REACH = 1e-2
CHAIN_FOLD_LOCAL = 0.5
#: Real points solved by the continuation kept with their unknowns (section 14.46): a
#: sum over the product asked 215 points just beyond its edges 3 147 times (depth-3
#: campaign, seed 0 / draw 20).
CHAIN_AXIS_MEMO = 4096
#: The path of eq. (14.61) from the nearest solved point: steps of at most this ratio in
#: ``|z|`` (and the angle's share of ``|log z|``) ...
CHAIN_PATH_RATIO = 4.0
#: ... and at most this many of them (a longer path goes to the continuation).
CHAIN_PATH_STEPS = 12


def _real_unknowns(om):
    """Where every unknown of eq. (14.8) (the rows of ``om``) is real to
    ``CHAIN_REAL_RTOL``: a real solution, outside the support (eq. (14.16))."""
    return np.all(np.abs(om.imag) <= CHAIN_REAL_RTOL * np.abs(om), axis=0)


def _has_atom_at_zero(law):
    """Whether ``law`` has an atom at 0: next to it an S-level's ``omega(tau)`` of eq.
    (14.21) has a pole, its S-transform's denominator evaluated at its root with the
    loss of theory eq. (14.60), which the inverse map does not have."""
    return law.atom > 0.0


def _through_soft_edges(inside, plain, real):
    """Points below the plain grid that ``G`` puts inside (``plain``) but the solid rule
    does not, in a run between a point inside and a real solution (outside, eq.
    (14.16)), taken as inside (``inside`` updated in place; theory section 14.32): next
    to a soft edge every unknown's imaginary part vanishes like the square root of the
    distance, and the last grid points before it fail the solid rule."""
    cand = np.flatnonzero(plain & ~inside)
    if not cand.size:
        return
    n = inside.size
    for run in np.split(cand, np.flatnonzero(np.diff(cand) > 1) + 1):
        a, b = run[0] - 1, run[-1] + 1
        if a < 0 or b >= n:
            continue
        if (inside[a] and real[b]) or (real[a] and inside[b]):
            inside[run] = True


def _kept_branch(level, guess, new):
    """Where a continuation level's root ``new`` lies within ``CHAIN_JUMP_RATIO`` times
    the predictor's step (``guess`` from the last ``level``) of the prediction, with
    the floor ``CHAIN_JUMP_FLOOR`` (theory eq. (14.59)): a larger correction left
    the branch the levels followed."""
    with np.errstate(all="ignore"):
        step = np.max(np.abs(guess - level) / np.abs(level), axis=0)
        jump = np.max(np.abs(new - guess) / np.abs(new), axis=0)
    return jump <= CHAIN_JUMP_RATIO * step + CHAIN_JUMP_FLOOR


def _relative_residual(res, om, eL):
    """The largest residual of eq. (14.8), each relative to the size of its terms
    (the last row is relative already: :meth:`ProductChainLaw._system`)."""
    with np.errstate(all="ignore"):
        return np.maximum(np.abs(res[:-1]).max(axis=0, initial=0.0) / np.abs(eL),
                          np.abs(res[-1]))


#: :class:`_Tail`: beyond ``LEVEL_SERIES_REACH`` times the radius of
#: a law's support, ``w`` from ``LEVEL_SERIES_TERMS`` exact moments
#: (truncation ``LEVEL_SERIES_REACH**-(LEVEL_SERIES_TERMS + 1)`` = 3e-23).
LEVEL_SERIES_REACH = 8.0
LEVEL_SERIES_TERMS = 24


class _Tail:
    """``v = tau G(tau)``, ``w = v - 1`` and ``dw/dtau`` of a law (theory eq.
    (14.52)).

    Far from the support (``|tau| >= LEVEL_SERIES_REACH`` times its radius) ``w``
    comes from the law's exact moments, ``w = sum_k m_k tau**-k``, where
    ``tau G - 1`` would keep only ``eps |tau|/radius`` of ``w`` (and ``eta = w/v``
    as little), and ``v = 1 + w``; elsewhere ``v`` is the product itself, which
    next to the hard edge (``v -> 0``) ``1 + w`` would lose.  A law without exact
    moments keeps the product everywhere.
    """

    def __init__(self, law):
        self.law = law
        self._series = None

    def _columns(self):
        if self._series is None:
            exact = self.law._exact_scaled_moments(LEVEL_SERIES_TERMS)
            radius = np.inf
            if exact is not None:
                lo, hi = self.law.support()
                radius = max(abs(lo), abs(hi))
                # the columns (m_k, k m_k) for k = K, ..., 1, Horner's order
                unit, m = exact
                exact = (unit, tuple(np.array([[m[k]], [k * m[k]]])
                                     for k in range(m.size - 1, 0, -1)))
            self._series = (radius, exact)
        return self._series

    def pair(self, tau, g, dg):
        """``(v, w, dw/dtau)`` at ``tau`` from ``G(tau)`` and ``G'(tau)``."""
        with np.errstate(all="ignore"):
            v = tau * g
            w = v - 1.0
            dw = g + tau * dg
        radius, exact = self._columns()
        if exact is None:
            return v, w, dw
        far = np.abs(tau) >= LEVEL_SERIES_REACH * radius
        if far.any():
            unit, cols = exact
            r = unit / tau[far]
            # Horner in r = unit/tau of w/r and of its derivative's series (rows)
            acc = np.zeros((2, r.size), dtype=complex)
            for col in cols:
                acc = acc * r + col
            w[far] = acc[0] * r
            v[far] = 1.0 + w[far]
            dw[far] = -acc[1] * r / tau[far]
        return v, w, dw

    def eta_pair(self, tau, g, dg):
        """``eta = 1 - 1/v = w/v`` (eq. (14.4) at ``omega = u = 1/tau``, eq. (14.21)
        in ``tau``) and ``d eta/du``."""
        v, w, dw = self.pair(tau, g, dg)
        with np.errstate(all="ignore"):
            return w / v, -dw / (v * v) * (tau * tau)


class _SupportAtBound(Exception):
    """The locator grid's last point is inside the support (internal signal)."""


class _GapInBand(ConvergenceError):
    """The density's solve found real unknowns (a point outside the support, eq.
    (14.16)) inside a band the locator reported (internal signal of the system's own
    representation build; section 14.41)."""

    def __init__(self, x, om):
        super().__init__(f"a point outside the support at x={x!r} inside a band its "
                         f"locator reported (theory section 14.41)", point=x)
        self.x, self.om = x, om


#: A point of the density's batch is inside a band by more than this fraction of its
#: size from the band's edges when it may split the band (section 14.41): next to a soft
#: edge the unknowns' imaginary parts are ~ sqrt of the relative distance, far above the
#: ``CHAIN_REAL_RTOL`` of a real solution.
GAP_SPLIT_MARGIN = 1e-9
#: Most bands split by the density's solve before the representation is given up.
GAP_SPLITS_MAX = 8
#: Where the system misses its tolerance at a point of a density batch, the points from
#: it to its nearest band edge go to the other form and the rest are solved again, at
#: most this many times before the whole batch goes to the other form (sections 14.39,
#: 14.41): one point 3.5e-9 below an edge of the sample covariance of a product of two
#: attention laws (seed 16 / draw 14 of depth 2) sent its 432-point batch to the level's
#: generic solver, 7 s.
DENSITY_RETRIES = 8


class _OmegaRow:
    """A factor whose row of eq. (14.8) has its subordination point ``omega`` as the
    unknown: ``eta(omega)`` from the factor's Cauchy transform (eq. (14.4))."""

    def __init__(self, law):
        self.law = law
        self._tail = _Tail(law)

    def map(self, u):
        """``(omega, d omega/du, eta, d eta/du)`` at the unknowns ``u``:
        ``eta(omega) = 1 - omega/G(1/omega)`` (eq. (14.4)) as ``w/v`` of eq. (14.52)."""
        with np.errstate(all="ignore"):
            tau = 1.0 / u
        g, dg = _cauchy_pair(self.law, tau)
        eta, deta = self._tail.eta_pair(tau, g, dg)
        return u, np.ones_like(u), eta, deta

    def start(self, omega):
        return omega

    def omega(self, u):
        """The subordination point at the unknown ``u`` (``u`` itself)."""
        return u

    def valid(self, u):
        return np.ones(u.shape, dtype=bool)


class _LevelRow:
    """A factor ``s * nu`` with ``nu`` an S-level over a closed-form constituent
    (``z = tau/S_a(w)``, ``w = tau G_b(tau) - 1``, eq. (8.9)): its row of
    eq. (14.8) in the unknown ``u = 1/tau`` (theory eq. (14.21)).

    ``omega = 1/(s z(tau))`` and ``eta = 1 - 1/(tau G_b(tau))`` are explicit in
    ``tau``, so a step of the system costs one closed-form ``G_b`` instead of a
    solve of the factor's own subordination equation.  ``u`` lies where
    ``omega`` does (the closed lower half-plane, real outside the support) and
    is proportional to ``t`` at large ``|z|``; :meth:`valid` is the branch test
    of eq. (8.10) (``tau`` in the closed upper half-plane, the partner's
    subordination point on the partner's branch).  ``S`` is evaluated in
    ``v = tau G_b`` (:meth:`SLevel.apply_at_pole`), exact next to the hard edge
    where ``w -> -1``.
    """

    def __init__(self, sub, scale):
        self.level = sub.level
        self.constituent = sub.constituent
        self.scale = float(scale)
        self.rtol = sub.options.branch_rtol
        self._tail = _Tail(self.constituent)

    @classmethod
    def of(cls, law):
        """The row of ``law``: a :class:`_LevelRow` where it applies (an S-level with a
        rational S-transform over a closed-form constituent, without an atom at 0: eq.
        (14.60)), else :class:`_OmegaRow`."""
        sub, scale = law, 1.0
        if isinstance(law, AffineLaw) and law.shift == 0.0 and law.scale > 0:
            sub, scale = law.base, law.scale
        # a level with the pole form of eq. (8.27) (an S-level) whose S-transform is
        # rational, over a constituent with a closed-form Cauchy transform
        level = getattr(sub, "level", None)
        transform = getattr(level, "transform", None)
        if (hasattr(level, "apply_at_pole") and hasattr(transform, "num")
                and getattr(transform, "rational", True)
                and getattr(getattr(sub, "constituent", None), "_closed_form", False)
                and not _has_atom_at_zero(sub)):
            return cls(sub, scale)
        return _OmegaRow(law)

    def _values(self, u):
        with np.errstate(all="ignore"):
            tau = 1.0 / u
            gb, dgb = _cauchy_pair(self.constituent, tau)
            z, g, dz, _ = self.level.apply_at_pole(tau, gb, dgb)
        return tau, gb, z, g, dz, dgb

    def map(self, u):
        tau, gb, z, _, dz, dgb = self._values(u)
        eta, deta = self._tail.eta_pair(tau, gb, dgb)
        with np.errstate(all="ignore"):
            t2 = -tau * tau                       # d tau/du
            omega = 1.0 / (self.scale * z)
            domega = -dz / (self.scale * z * z) * t2
        return omega, domega, eta, deta

    def start(self, omega):
        with np.errstate(all="ignore"):
            return 1.0 / self.level.guess(1.0 / (self.scale * omega))

    def omega(self, u):
        """The subordination point ``1/(s z(tau))`` at the unknown ``u = 1/tau``."""
        z = self._values(u)[2]
        with np.errstate(all="ignore"):
            return 1.0 / (self.scale * z)

    def valid(self, u):
        tau, gb, z, g, _, _ = self._values(u)
        r = self.rtol
        with np.errstate(all="ignore"):
            ok = np.isfinite(z) & np.isfinite(g) & (tau.imag >= -r * np.abs(tau))
        sel = np.flatnonzero(ok)
        if sel.size:
            ok[sel] = self.level.partner_on_branch(z[sel], tau[sel], gb[sel], g[sel], r,
                                                   infinite_ok=True)
        return ok


class _ChainProblem(SystemProblem):
    """The system (14.8) of a :class:`ProductChainLaw` at points ``t`` as a
    :class:`~._fixed_point.SystemProblem`: the step is the arrowhead
    elimination of :meth:`ProductChainLaw._system`, damped so that no unknown
    moves by more than ``CHAIN_STEP_RATIO`` of its size."""

    def __init__(self, law):
        self._law = law

    def evaluate(self, om, t):
        res, step, eL, _ = self._law._system(om, t)
        return res, -step, (eL,)

    def error(self, f, om, extra):
        return _relative_residual(f, om, extra[0])

    def step_size(self, step, om, t):
        return np.abs(step).max(axis=0) / np.abs(om).max(axis=0)

    def damp(self, step, om):
        with np.errstate(all="ignore"):
            big = np.max(np.abs(step) / (CHAIN_STEP_RATIO * np.abs(om)), axis=0)
            return step / np.maximum(big, 1.0)


class ProductChainLaw(SpectralLaw):
    """``nu_1 ⊠ ... ⊠ nu_L`` of laws on ``[0, oo)`` (theory eq. (14.8)).

    Build it with :func:`product_chain` (or :func:`freeattn.free_multiplicative`,
    which flattens nested products of laws without a rational S-transform).

    Attributes
    ----------
    factors : tuple of SpectralLaw
    """

    _nested_solve = True

    @property
    def _pointwise_transform(self):
        return any(f._pointwise_transform for f in self.factors)

    @property
    def _evaluation_cost(self):
        # Newton on the system of eq. (14.8) over every factor (eq. (14.51))
        return NESTED_SOLVE_FACTOR * sum(f._evaluation_cost for f in self.factors)

    def __init__(self, factors, options=None, two_laws=None, form=None):
        super().__init__(options if options is not None else factors[0].options)
        self.factors = tuple(factors)
        # (a, b) when the system flattens the product of two laws (theory section
        # 14.39): their subordination (eq. (14.4)) answers a host where it has no root;
        # ``form(a, b)`` builds that other form (by default analytic_multiplicative;
        # a rational S-level over a system keeps its level, section 14.41)
        self._two_laws = two_laws
        self._form = form
        # while the system's own representation is built, a point of its density's
        # solve outside a band splits that band (section 14.41)
        self._splitting = False
        # factors that are one law object share its evaluations (rows of the system)
        groups = {}
        for i, f in enumerate(self.factors):
            groups.setdefault(id(f), (f, []))[1].append(i)
        self._groups = tuple((f, rows) for f, rows in groups.values())
        # the unknown of each row (eq. (14.8) or (14.21)), one adapter per distinct law
        adapters = {id(f): _LevelRow.of(f) for f, _ in self._groups}
        self._rows = tuple(adapters[id(f)] for f in self.factors)
        sup = [f.support() for f in self.factors]
        self._bounds = (math.prod(s[0] for s in sup), math.prod(s[1] for s in sup))
        self._m1 = np.array([f.mean() for f in self.factors])
        self._xscale = max(self._bounds[1], np.finfo(float).tiny)
        self._warm_x = np.empty(0)
        self._warm_w = np.empty((len(self.factors), 0), dtype=complex)
        self._gap_x = np.empty(0)
        self._gap_w = np.empty((len(self.factors), 0), dtype=complex)
        # the soft edges' folds: (x_e, real unknowns, x'', ratios) (eq. (14.54))
        self._folds = (np.empty(0), np.empty((len(self.factors), 0)), np.empty(0),
                       np.empty((len(self.factors), 0)))
        self._negative_reach = None
        # the latest solved off-axis points and their unknowns (eq. (14.15))
        self._last = WarmTable(CHAIN_WARM_TABLE)

    @property
    def _group_rows(self):
        """The row adapter of each group of :attr:`_groups` (its first row's)."""
        return tuple(self._rows[rows[0]] for _, rows in self._groups)

    def _describe(self):
        parts = []
        for f in self.factors:
            text = f._describe()
            parts.append(f"({text if len(text) <= 60 else text[:57] + '...'})")
        return " ⊠ ".join(parts)

    # -- the system (eq. (14.8)) -----------------------------------------------------
    def _system(self, om, t):
        """Residuals, Newton step and ``(eta, d eta_L)`` at unknowns ``om`` (L, n)."""
        L = om.shape[0]
        omegas = np.empty(om.shape, dtype=complex)
        domegas = np.empty(om.shape, dtype=complex)
        etas = np.empty(om.shape, dtype=complex)
        detas = np.empty(om.shape, dtype=complex)
        # a law that is several factors (a stack of equal layers) is called once; when
        # every factor is one law, the unknowns start equal (the large-|z| start) and the
        # step below keeps them equal, bit for bit (theory section 14.18: the solution
        # is symmetric), so at such points the law is evaluated at one row only
        same = np.zeros(om.shape[1], dtype=bool)
        if len(self._groups) == 1 and L > 1:
            same = (om == om[:1]).all(axis=0)
        if same.any():
            vals = self._group_rows[0].map(om[0, same])
            for out, v in zip((omegas, domegas, etas, detas), vals):
                out[:, same] = v
        rest = ~same
        if rest.all():
            for row, (f, rows) in zip(self._group_rows, self._groups):
                vals = row.map(om[rows].ravel())
                for out, v in zip((omegas, domegas, etas, detas), vals):
                    out[rows] = v.reshape(len(rows), -1)
        elif rest.any():
            for row, (f, rows) in zip(self._group_rows, self._groups):
                vals = row.map(om[np.ix_(rows, rest)].ravel())
                for out, v in zip((omegas, domegas, etas, detas), vals):
                    out[np.ix_(rows, rest)] = v.reshape(len(rows), -1)
        eL, dL = etas[-1], detas[-1]
        with np.errstate(all="ignore"):
            res = np.empty(om.shape, dtype=complex)
            res[:-1] = etas[:-1] - eL
            # the last row divided by t eta_L**(L-1) (theory eq. (14.23)): rho - 1 with
            # rho = prod omega_i/(t eta_L**(L-1)), every factor scaled by the
            # geometric mean c of |omega_i| (next to a hard edge at 0 the product
            # and t eta**(L-1) leave the float range long before rho does)
            c = np.exp(np.mean(np.log(np.abs(omegas)), axis=0))
            rho = np.prod(omegas / c, axis=0) / ((t / c) * (eL / c) ** (L - 1))
            res[-1] = rho - 1.0
            # arrowhead elimination: d_i = (-r_i + dL d_L)/eta_i', with the last row's
            # derivatives rho omega_i'/omega_i (omega_i' = 1 where the unknown is omega_i)
            p = rho * domegas / omegas
            q = p[-1] - (L - 1) * dL / eL
            ratio = dL / detas[:-1]
            denom = np.sum(p[:-1] * ratio, axis=0) + q
            dlast = (-res[-1] + np.sum(p[:-1] * res[:-1] / detas[:-1], axis=0)) / denom
            step = np.empty(om.shape, dtype=complex)
            step[-1] = dlast
            step[:-1] = (-res[:-1] + dL * dlast) / detas[:-1]
            step[:, same] = dlast[same]          # equal rows: the same step, exactly
        return res, step, eL, denom

    def _newton(self, om, t, steps, rtol):
        """Newton on eq. (14.8) by the shared strategy :func:`~._fixed_point.newton_system`
        (:class:`_ChainProblem`); converged where the step is below ``rtol``
        relative, or the residual at the rounding of the system (next to a fold,
        where the Jacobian is nearly singular, a step would only follow rounding
        noise)."""
        res = newton_system(_ChainProblem(self), t, om, steps, CHAIN_RESIDUAL_RTOL,
                            step_rtol=rtol)
        om = res.value
        # the solution lies in the closed lower half-plane (real outside the support)
        good = res.converged & np.all(om.imag <= CHAIN_REAL_RTOL * np.abs(om), axis=0)
        good &= self._valid(om)
        return om, good

    def _valid(self, om):
        """The branch test of every row's unknowns (:meth:`_LevelRow.valid`)."""
        ok = np.ones(om.shape[1], dtype=bool)
        for i, row in enumerate(self._rows):
            if isinstance(row, _OmegaRow) or not ok.any():
                continue
            if i and row is self._rows[i - 1]:
                # the same law at equal unknowns (theory section 14.18): tested once
                sel = np.flatnonzero(ok & (om[i] != om[i - 1]))
            else:
                sel = np.flatnonzero(ok)
            if sel.size:
                ok[sel] &= row.valid(om[i, sel])
        return ok

    def _start_scale(self):
        """The scale of the continuation's start: ``CHAIN_MOMENT_REACH`` times the
        moment radius ``max_k m_k**(1/k)`` (``k <= CHAIN_MOMENT_ORDER``, a lower bound
        of the support's radius) where the exact moments exist, capped by the
        bound ``prod_i sup_i`` (which for deep products overshoots the support by
        orders of magnitude: far out, ``eta`` keeps few digits; theory section 14.23)."""
        cached = self.__dict__.get("_start_scale_cache")
        if cached is not None:
            return cached
        scale = self._xscale
        exact = self._exact_scaled_moments(CHAIN_MOMENT_ORDER)
        if exact is not None:
            unit, m = exact
            k = np.arange(1, m.size)
            with np.errstate(all="ignore"):
                radius = unit * float(np.max(np.abs(m[1:]) ** (1.0 / k)))
            if np.isfinite(radius) and radius > 0:
                scale = min(scale, CHAIN_MOMENT_REACH * radius)
        self._start_scale_cache = scale
        return scale

    def _start(self, t):
        m1 = self._m1
        tot = np.prod(m1)
        return np.stack([row.start(t * (tot / m)) for row, m in zip(self._rows, m1)])

    def _spine(self, levels):
        """The unknowns of eq. (14.8) at ``z = i y_j``, ``y_j = CHAIN_START * scale /
        CHAIN_FACTOR_MAX**j`` for the integers ``levels`` (eq. (14.65)), NaN where the
        continuation along the imaginary axis does not reach them; computed once per
        level and kept."""
        kept = self.__dict__.setdefault("_spine_cache", {})
        new = np.array(sorted(set(int(j) for j in levels) - set(kept)), dtype=int)
        if new.size:
            ys = CHAIN_START * self._start_scale() / CHAIN_FACTOR_MAX ** new.astype(float)
            om = self._continue(np.zeros(new.size), ys, check=False, partial=True,
                                own_height=False)
            for j, col in zip(new, om.T):
                kept[int(j)] = col.copy()
        return np.stack([kept[int(j)] for j in levels], axis=1)

    def _own_height(self, x, y_final):
        """Starts of the continuation at the points' own heights (eq. (14.65)):
        ``(idx, y0, om, y_above, om_above)`` for the points ``idx`` of ``x`` whose start
        ``x + i y0`` lies at least ``CHAIN_OWN_MIN_LEVELS`` spine levels below the top
        (the last two: the spine level above each start, the predictor's history), with
        ``y0`` the lowest spine level at or above ``CHAIN_OWN_RATIO |x|`` (and
        ``y_final``), solved by Newton from the spine's unknowns at ``i y0`` and kept as
        a first level is (:meth:`_newton`) where no unknown moved by more than
        ``CHAIN_OWN_JUMP`` of its size."""
        top = CHAIN_START * self._start_scale()
        low = np.maximum(CHAIN_OWN_RATIO * np.abs(x), y_final)
        with np.errstate(all="ignore"):
            levels = np.floor(np.log(top / low) / np.log(CHAIN_FACTOR_MAX))
        cand = np.flatnonzero(np.isfinite(levels) & (levels >= CHAIN_OWN_MIN_LEVELS)
                              & (np.abs(x) > 0))
        if not cand.size:
            return cand, np.empty(0), None, np.empty(0), None
        j = np.minimum(levels[cand], CHAIN_OWN_MAX_LEVELS).astype(int)
        # the level and the one above it (the secant predictor's history)
        jj = np.r_[j, j - 1]
        start = self._spine(jj)
        n = cand.size
        fin = np.all(np.isfinite(start[:, :n]), axis=0) & np.all(np.isfinite(start[:, n:]),
                                                                 axis=0)
        keep = np.r_[fin, fin]
        cand, jj, start = cand[fin], jj[keep], start[:, keep]
        n = cand.size
        ys = top / CHAIN_FACTOR_MAX ** jj.astype(float)
        t = 1.0 / (np.r_[x[cand], x[cand]] + 1j * ys)
        om, ok = self._newton(start, t, 4 * CHAIN_LEVEL_STEPS, CHAIN_LEVEL_RTOL)
        with np.errstate(all="ignore"):
            moved = np.max(np.abs(om - start) / np.abs(om), axis=0)
        ok &= moved <= CHAIN_OWN_JUMP
        ok = ok[:n] & ok[n:]
        return cand[ok], ys[:n][ok], om[:, :n][:, ok], ys[n:][ok], om[:, n:][:, ok]

    def _continue(self, x, y_final, check=True, optional=None, partial=False,
                  strict=False, own_height=True):
        """Continuation from ``x + i CHAIN_START*scale`` to ``x + i y_final``.

        ``optional`` (boolean, like ``x``) marks points that may fail at the first
        level (the tables' points far beyond the support, where the factors' ``eta``
        keep few digits at ``|z|`` up to ``CHAIN_GAP_REACH`` times the scale): they
        come back as NaN instead of raising.  With ``partial`` every point the
        continuation does not solve comes back as NaN (section 14.43).  With
        ``strict`` a level's root is kept only within ``CHAIN_JUMP_RATIO`` times the
        predictor's step of the prediction (eq. (14.59)).  With ``own_height`` a
        point far below the scale starts at its own height from the spine of eq.
        (14.65) (:meth:`_own_height`), the others at the top; an own-height point
        the continuation does not solve is continued again from the top.
        """
        x = np.asarray(x, dtype=float)
        y_final = np.asarray(y_final, dtype=float)
        own = None
        if own_height and not strict:
            own = self._own_height(x, y_final)
        if own is None or not own[0].size:
            return self._continue_from(x, y_final, check, optional, partial, strict, None)
        # the own-height points come back as NaN where they fail, and go again from the top
        soft = np.zeros(x.shape, dtype=bool)
        soft[own[0]] = True
        om = self._continue_from(x, y_final, check, optional, partial, strict, own,
                                 soft | partial)
        again = own[0][~np.all(np.isfinite(om[:, own[0]]), axis=0)]
        if again.size:
            om[:, again] = self._continue_from(
                x[again], y_final[again], check,
                None if optional is None else np.asarray(optional)[again], partial, strict,
                None)
        return om

    def _continue_from(self, x, y_final, check, optional, partial, strict, own, soft=None):
        """:meth:`_continue` from the top, or from the own heights ``own`` of
        :meth:`_own_height` where given; ``soft`` (boolean, like ``x``; default
        ``partial``) marks the points that come back as NaN where they fail."""
        s = self._start_scale()
        soft = np.full(x.shape, bool(partial)) if soft is None else soft
        y = np.maximum(CHAIN_START * s, y_final)
        om = np.empty((len(self.factors), x.size), dtype=complex)
        ok = np.zeros(x.shape, dtype=bool)
        if own is not None:
            idx, y0, om0 = own[:3]
            y[idx], om[:, idx], ok[idx] = y0, om0, True
        top = np.flatnonzero(~ok)
        if top.size:
            t = 1.0 / (x[top] + 1j * y[top])
            om[:, top], ok[top] = self._newton(self._start(t), t, 4 * CHAIN_LEVEL_STEPS,
                                               CHAIN_LEVEL_RTOL)
        dropped = np.zeros(x.shape, dtype=bool)
        if soft.any():
            optional = soft.copy() if optional is None else (np.asarray(optional) | soft)
        if not ok.all() and optional is not None and np.all(optional[~ok]):
            dropped = ~ok
            y_final = np.where(dropped, y, y_final)
            ok = np.ones(x.shape, dtype=bool)
        if not ok.all():
            k = int(np.argmin(ok))
            raise ConvergenceError(f"{self._describe()}: no solution of eq. (14.8) far from the "
                                   f"axis at z={complex(x[k] + 1j * y[k])!r}")
        om_prev = om.copy()
        y_prev = np.full(x.shape, np.nan)
        if own is not None and own[0].size:
            # an own-height start has the spine level above it as its last level
            idx = own[0]
            y_prev[idx], om_prev[:, idx] = own[3], own[4]
        factor = np.full(x.shape, CHAIN_FACTOR_MAX)
        stop = CHAIN_STOP * np.maximum(np.abs(x), np.finfo(float).tiny)
        gap = self._over_gap(x)
        active = y > y_final
        while active.any():
            idx = np.flatnonzero(active)
            ya = y[idx]
            yn = np.maximum(ya / factor[idx], y_final[idx])
            yn = np.where(yn < stop[idx], y_final[idx], yn)
            has = np.isfinite(y_prev[idx])
            # the secant predictor in the scaled unknowns omega * z, which tend to
            # constants as |z| -> oo (the start of eq. (14.15)): far from the axis a
            # step of y by the factor moves omega by that factor, more than the
            # damped Newton steps of a level reach
            za, zn = x[idx] + 1j * ya, x[idx] + 1j * yn
            zp = x[idx] + 1j * np.where(has, y_prev[idx], ya)
            v, vp = om[:, idx] * za, om_prev[:, idx] * zp
            slope = np.where(has, (v - vp) / np.where(has, ya - y_prev[idx], 1.0), 0.0)
            guess = (v + slope * (yn - ya)) / zn
            # at |z| much smaller than the support (next to a hard edge at 0) the
            # unknowns are powers of z (eq. (14.6)): the secant in log u against
            # log z there, through the bend of the path from |z| ~ y to |z| ~ x
            steep = has & (np.abs(za) < self._start_scale() / CHAIN_STEEP_RATIO)
            if steep.any():
                with np.errstate(all="ignore"):
                    r = np.log(om[:, idx[steep]] / om_prev[:, idx[steep]])
                    power = np.log(zn[steep] / za[steep]) / np.log(za[steep] / zp[steep])
                    pw = om[:, idx[steep]] * np.exp(r * power)
                fin = np.all(np.isfinite(pw), axis=0)
                sub = np.flatnonzero(steep)[fin]
                guess[:, sub] = pw[:, fin]
            # a predicted unknown above the axis: over a gap of the known support eq.
            # (14.55), elsewhere its real part
            guess = self._below_axis(guess, om[:, idx], yn / ya, gap[idx])
            tn = 1.0 / zn
            new, ok = self._newton(guess, tn, CHAIN_LEVEL_STEPS, CHAIN_LEVEL_RTOL)
            if strict:
                ok &= _kept_branch(om[:, idx], guess, new)
            good, bad = idx[ok], idx[~ok]
            om_prev[:, good], y_prev[good] = om[:, good], y[good]
            om[:, good], y[good] = new[:, ok], yn[ok]
            # a power law in y (above a point much smaller than the scale) is
            # predicted to rounding by the secant in log u: longer levels there
            cap = np.where(steep[ok], CHAIN_STEEP_FACTOR_MAX, CHAIN_FACTOR_MAX)
            factor[good] = np.minimum(2 * factor[good], cap)
            factor[bad] = np.sqrt(factor[bad])
            stalled = bad[factor[bad] < CHAIN_FACTOR_MIN]
            if stalled.size and not check:
                # the locator only classifies: a point next to a fold keeps its last level
                y_final = y_final.copy()
                y_final[stalled] = y[stalled]
            elif stalled.size:
                # next to a fold the levels stall; the last step straight to the
                # target from the last level is kept when the continuation's
                # acceptance takes it (a root in the closed lower half-plane on the
                # factors' branches, solved to CHAIN_ACCEPT_RTOL or to the fold's
                # residual)
                tt = 1.0 / (x[stalled] + 1j * y_final[stalled])
                new, _ = self._newton(om[:, stalled], tt, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
                good = self._accepted_near_fold(new, tt)
                if not good.all():
                    hard = stalled[~good & ~soft[stalled]]
                    if hard.size:
                        k = int(hard[0])
                        raise ConvergenceError(
                            f"{self._describe()}: continuation of eq. (14.8) stalled at "
                            f"z={complex(x[k] + 1j * y[k])!r}", point=float(x[k]))
                    # a soft point (partial, or started at its own height) the fold's acceptance
                    # refuses is dropped
                    lost = stalled[~good]
                    dropped[lost] = True
                    y_final = y_final.copy()
                    y_final[lost] = y[lost]
                    stalled, new = stalled[good], new[:, good]
                om[:, stalled], y[stalled] = new, y_final[stalled]
            active = (y > y_final) & ~dropped
        t = 1.0 / (x + 1j * y)
        final, ok = self._newton(om, t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
        keep = np.all(np.isfinite(final), axis=0)
        if strict:
            # the last level is at this point already: its polish moves it by its
            # tolerance, not to another root
            keep &= _kept_branch(om, om, final)
        om[:, keep] = final[:, keep]
        if check:
            good, err = self._accepted(om, t)
            bad = ~good & ~dropped
            dropped |= bad & soft
            bad &= ~soft
            if bad.any():
                k = int(np.argmax(bad))
                raise ConvergenceError(
                    f"{self._describe()}: eq. (14.8) at z={complex(x[k] + 1j * y[k])!r} "
                    f"solved to {err[k]:.2e} > {CHAIN_ACCEPT_RTOL:.0e}",
                    point=complex(x[k] + 1j * y[k]), residual=float(err[k]),
                    tolerance=CHAIN_ACCEPT_RTOL)
        om[:, dropped] = np.nan
        return om

    @staticmethod
    def _below_axis(guess, level, ratio, gap):
        """A continuation's prediction ``guess`` (``(L, n)``) with every unknown
        predicted above the axis given its real part and, at the points over a ``gap``
        of the known support, the imaginary part of its ``level`` times ``ratio =
        y_next/y`` (theory eq. (14.55)); the others unchanged."""
        with np.errstate(all="ignore"):
            shrunk = np.where(gap, guess.real + 1j * level.imag * ratio, guess.real - 0j)
        return np.where(guess.imag <= 0, guess, shrunk)

    def _over_gap(self, x):
        """Where real ``x`` lies outside every band of the support, once the support is
        known (while it is being located: nowhere, section 14.48)."""
        ivs = self._interval_cache
        if not ivs:
            return np.zeros(x.shape, dtype=bool)
        return outside_bands(x, [(iv.lo, iv.hi) for iv in ivs])

    def _accepted(self, om, t):
        """Final points solved to ``CHAIN_ACCEPT_RTOL`` (Newton's next step), or next
        to a fold to the residual ``CHAIN_FOLD_RESIDUAL_RTOL``; ``(accepted, step)``."""
        res, step, eL, _ = self._system(om, t)
        with np.errstate(all="ignore"):
            err = np.abs(step).max(axis=0) / np.abs(om).max(axis=0)
        fold = _relative_residual(res, om, eL) <= CHAIN_FOLD_RESIDUAL_RTOL
        return (err <= CHAIN_ACCEPT_RTOL) | fold, err

    def _accepted_near_fold(self, om, t):
        """Newton results whose steps stalled at the rounding of the system next to a
        fold, kept under the continuation's acceptance: finite, :meth:`_accepted`,
        in the closed lower half-plane and on every row's branch (:meth:`_valid`)."""
        ok = np.all(np.isfinite(om), axis=0)
        if ok.any():
            sel = np.flatnonzero(ok)
            ok[sel] = (self._accepted(om[:, sel], t[sel])[0]
                       & np.all(om[:, sel].imag <= CHAIN_REAL_RTOL * np.abs(om[:, sel]),
                                axis=0)
                       & self._valid(om[:, sel]))
        return ok

    def _g_from(self, om, z):
        t = 1.0 / z
        eta = self._rows[-1].map(om[-1])[2]
        with np.errstate(all="ignore"):
            return t / (1.0 - eta)

    # -- hooks ----------------------------------------------------------------------
    def _atoms(self):
        from ..algebra._levels import multiplicative_atoms

        atoms = self.factors[0].atoms()
        for f in self.factors[1:]:
            atoms = multiplicative_atoms(atoms, f.atoms())
        return atoms

    def _inside(self, om, x):
        g = self._g_from(om, x.astype(complex))
        return np.abs(g.imag) * np.abs(x) > CHAIN_INSIDE_RTOL

    def _support_intervals(self):
        # the grid up to the start's scale (CHAIN_MOMENT_REACH times the moment
        # radius, where the bound prod_i sup_i overshoots a deep product's support
        # by orders of magnitude); the full bound if the support reaches it
        lo, hi = self._bounds[0], min(self._bounds[1], self._start_scale())
        try:
            ivs = self._locate_support(lo, hi)
        except _SupportAtBound:
            if hi >= self._bounds[1]:
                raise ConvergenceError(f"the support of {self._describe()} reaches its "
                                       f"bound {hi!r}") from None
            self._clear_warm()
            ivs = self._locate_support(lo, self._bounds[1])
        except ConvergenceError:
            if not self._atoms_reach_lower(lo, hi):
                raise
            # a soft lower edge below even the deeper plain grid, where a discrete
            # factor's atoms put the lowest band (eq. (14.41) with the atoms)
            self._clear_warm()
            ivs = self._locate_support(lo, hi, atoms=True)
        # the density's representation at once: where its solve finds a point outside
        # a band, the band splits (section 14.41), so the support returned is final
        self._interval_cache = tuple(ivs)
        try:
            self._representation()
        except ConvergenceError:
            self._rep = None           # the density's own error is raised where asked
            if self._atoms_reach_lower(lo, hi):
                # a discrete factor's atoms put the lowest band below the grid (eq.
                # (14.41) with the atoms): located again on the grid reaching it
                self._clear_warm()
                self._interval_cache = tuple(self._locate_support(lo, hi, atoms=True))
                try:
                    self._representation()
                except ConvergenceError:
                    self._rep = None
        ivs, self._interval_cache = self._interval_cache, None
        return ivs

    def _clear_warm(self):
        """Forget the boundary table of eq. (14.7) before the support is located again."""
        self._warm_x = np.empty(0)
        self._warm_w = np.empty((len(self.factors), 0), dtype=complex)

    def _atoms_reach_lower(self, lo, hi):
        """Whether the grid of eq. (14.41) with the factors' atoms starts lower."""
        if lo > 0:
            return False
        with_atoms = product_grid((lo, hi), CHAIN_GRID, self.factors, atoms=True)[0]
        return with_atoms < product_grid((lo, hi), CHAIN_GRID, self.factors)[0]

    def _locate_support(self, lo, hi, deeper=False, atoms=False):
        xs = product_grid((lo, hi), CHAIN_GRID, self.factors, deeper, atoms)
        may_reach = not lo > 0 and may_reach_zero(self.factors)
        start = xs[0]
        # points beyond the grid on both sides (geometric, to CHAIN_GAP_REACH) for
        # the table of eq. (14.16) and, below a support that may reach 0, towards the
        # hard edge for the table of eq. (14.7) (the density's nodes next to 0 reach
        # far below the grid's first point); continued with the grid's coarse points
        above = xs[-1] * np.geomspace(1.0, CHAIN_GAP_REACH, CHAIN_GAP_POINTS + 1)[1:]
        below = xs[0] * (np.geomspace(1.0 / CHAIN_GAP_REACH, 1.0, CHAIN_GAP_POINTS + 1)
                         if lo > 0 else np.geomspace(CHAIN_HARD_REACH, 1.0,
                                                     CHAIN_GAP_POINTS + 1))[:-1]
        ext = np.r_[below, above]
        # (the negative axis, for a support that may reach 0: built when first asked,
        # by _negative_table)
        self._negative_reach = ((CHAIN_HARD_REACH * xs[0], CHAIN_GAP_REACH * xs[-1])
                                if not lo > 0 else None)
        om, om_ext = self._locate(xs, ext)
        inside = self._inside(om, xs)
        low = below_plain_grid(xs, (lo, hi))
        if low.any():
            # below the plain grid (eq. (14.41)): every unknown's imaginary part solid
            om_low = om[:, low]
            real = _real_unknowns(om_low)
            inside[low] = extension_inside(inside, low, solid_unknowns(om_low), may_reach,
                                           real)
            if not sees_hard_edge(inside, low, may_reach):
                self._confirm_low(xs, om, inside, low)
                _through_soft_edges(inside, low & self._inside(om, xs), _real_unknowns(om))
        if not inside.any():
            raise ConvergenceError(f"no point of the support of {self._describe()} found on "
                                   f"a grid of {xs.size} points over [{start!r}, {hi!r}]")
        seed = inside & np.all(om.imag < 0, axis=0)
        self._warm_x, self._warm_w = xs[seed], om[:, seed]
        # the continued real solutions outside the support, the table of eq. (14.16)
        real = ~inside & _real_unknowns(om)
        self._add_inside(ext, om_ext)
        gx = np.r_[ext, xs[real]]
        gw = np.concatenate([om_ext, om[:, real]], axis=1)
        keep = _real_unknowns(gw)
        order = np.argsort(gx[keep])
        self._gap_x, self._gap_w = gx[keep][order], gw[:, keep][:, order].real + 0j
        if inside[-1]:
            raise _SupportAtBound()
        hard = bool(not lo > 0 and inside[0])
        if hard and not may_reach and not deeper:
            # no factor gives a hard edge (eq. (14.6)): the band's soft lower edge lies
            # below the grid; nine decades further down (section 14.32)
            return self._locate_support(lo, hi, deeper=True, atoms=atoms)
        edges = []
        if hard:
            edges.append((0.0, "lo", self._hard_edge_exponent()))
        elif inside[0]:
            raise ConvergenceError(f"the support of {self._describe()} reaches its lower "
                                   f"bound {lo!r}")
        idx = np.flatnonzero(np.diff(inside.astype(int)))
        if idx.size:
            kinds = ["lo" if not inside[i] else "hi" for i in idx]
            x_out = np.array([xs[i] if not inside[i] else xs[i + 1] for i in idx])
            x_in = np.array([xs[i + 1] if not inside[i] else xs[i] for i in idx])
            # eq. (14.22): the edge is the fold of the real solution continued from
            # the cell's outer end; where that fails, eq. (14.9): narrow in log x,
            # then extrapolate (Im G)**2, linear in x at a soft edge, to its zero
            i_out = np.array([i if not inside[i] else i + 1 for i in idx])
            xe, ok = self._fold_edges(x_out, om[:, i_out], x_in)
            if not ok.all():
                bad = ~ok
                xn_out, xn_in = self._narrow(x_out[bad], x_in[bad])
                xe[bad] = self._refine_edges(xn_out, xn_in)
            for k in range(idx.size):
                edges.append((float(xe[k]), kinds[k], Fraction(1, 2)))
        edges.sort()
        ivs = []
        for j in range(0, len(edges) - 1, 2):
            (x0, k0, e0), (x1, k1, e1) = edges[j], edges[j + 1]
            if k0 != "lo" or k1 != "hi" or not x0 < x1:
                raise ConvergenceError(
                    f"edges of {self._describe()} do not pair into intervals: {edges!r}")
            ivs.append(Interval(x0, x1, e0, e1))
        return tuple(ivs)

    def _confirm_low(self, xs, om, inside, low):
        """Points below the plain grid that the solid rule takes as inside, confirmed by
        the continuation (theory eq. (14.59)); ``om`` and ``inside`` updated in place.

        Of each run of consecutive such points the first, middle and last are
        continued from far above the axis by the strict continuation (``strict`` of
        :meth:`_continue`); a run where one of them is not inside by the continued root
        (:meth:`_inside` and the solid rule) is continued at every point, and each point
        keeps the continued verdict and root.
        """
        cand = np.flatnonzero(low & inside)
        if not cand.size:
            return
        runs = np.split(cand, np.flatnonzero(np.diff(cand) > 1) + 1)
        ends = [np.unique([r[0], r[r.size // 2], r[-1]]) for r in runs]
        probes = np.unique(np.concatenate(ends))
        ok = self._continued_inside(xs, om, inside, probes)
        doubtful = [r for r, e in zip(runs, ends) if not ok[np.searchsorted(probes, e)].all()]
        if doubtful:
            rest = np.setdiff1d(np.concatenate(doubtful), probes)
            if rest.size:
                self._continued_inside(xs, om, inside, rest)

    def _continued_inside(self, xs, om, inside, idx):
        """The continuation's root and verdict (:meth:`_inside` and the solid rule of
        section 14.32) at the grid points ``idx``, written into ``om`` and ``inside``."""
        new = self._continue(xs[idx], np.zeros(idx.size), check=False, strict=True)
        ok = self._inside(new, xs[idx]) & solid_unknowns(new)
        om[:, idx], inside[idx] = new, ok
        return ok

    def _locate(self, xs, extra):
        """The unknowns of eq. (14.8) at ``x + i0`` on the locator grid ``xs``, and
        at the points ``extra`` (continued with the grid's coarse points).

        As eq. (14.12) for two laws: every ``LOCATOR_STRIDE``-th point (and the
        last) is continued; then, halving the stride, each point half-way between
        solved ones is solved by Newton at ``y = 0`` from their interpolation.
        A root is kept only strictly inside the lower half-plane (the margin
        ``WARM_INSIDE_RTOL`` of eq. (14.7), beyond a conjugate pair split off a
        real double root by rounding); every other point (outside the support,
        or next to an edge) is continued, in one batch at the end.
        """
        om = np.empty((len(self.factors), xs.size), dtype=complex)
        coarse, levels, rest = locator_schedule(xs.size)
        pts = np.r_[xs[coarse], extra]
        both = self._continue(pts, np.zeros(pts.size), check=False,
                              optional=np.r_[np.zeros(coarse.size, dtype=bool),
                                             np.ones(extra.size, dtype=bool)])
        om[:, coarse], om_extra = both[:, :coarse.size], both[:, coarse.size:]
        rejected = [rest]
        for mid, lo, hi, frac in levels:
            guess = om[:, lo] + frac * (om[:, hi] - om[:, lo])
            new, ok = self._newton(guess, 1.0 / xs[mid].astype(complex),
                                   CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
            ok &= np.all(new.imag < -WARM_INSIDE_RTOL * np.abs(new), axis=0)
            # a rejected point's root is still the best guess for its neighbours
            om[:, mid] = np.where(np.all(np.isfinite(new), axis=0), new, guess)
            rejected.append(mid[~ok])
        rest = np.concatenate(rejected).astype(int)
        if rest.size:
            om[:, rest] = self._continue(xs[rest], np.zeros(rest.size), check=False)
        return om, om_extra

    def _branch(self, uL, rest):
        """The real solution of eq. (14.8) parametrized by its last unknown ``uL``
        (eq. (14.22)): ``(t, d log t/d uL, rest)``, the other rows' unknowns
        ``rest`` ((L - 1, n), their guesses) solved by Newton on
        ``eta_i(u_i) = eta_L(uL)``; ``t`` NaN where that does not converge."""
        L = len(self.factors)
        rows = self._rows
        om_L, dom_L, eta_L, deta_L = (v.real for v in rows[-1].map(uL + 0j))
        rest = rest.copy()
        ok = np.isfinite(om_L) & np.isfinite(eta_L) & (deta_L != 0)
        if len(self._groups) == 1:
            rest[:] = uL
            vals = [(om_L, dom_L, eta_L, deta_L)] * (L - 1)
        else:
            vals = []
            for i in range(L - 1):
                u = rest[i]
                for _ in range(CHAIN_FOLD_INNER_STEPS):
                    om_i, dom_i, eta_i, deta_i = (v.real for v in rows[i].map(u + 0j))
                    with np.errstate(all="ignore"):
                        step = (eta_i - eta_L) / deta_i
                    u = u - np.where(np.isfinite(step), step, 0.0)
                    if not np.any(np.abs(step) > CHAIN_FOLD_RTOL * np.abs(u)):
                        break
                om_i, dom_i, eta_i, deta_i = (v.real for v in rows[i].map(u + 0j))
                with np.errstate(all="ignore"):
                    ok &= np.abs(eta_i - eta_L) <= CHAIN_FOLD_INNER_RTOL * np.abs(eta_L)
                rest[i] = u
                vals.append((om_i, dom_i, eta_i, deta_i))
        with np.errstate(all="ignore"):
            prod = om_L * np.prod([v[0] for v in vals], axis=0)
            t = prod / eta_L ** (L - 1)
            # d log t/d uL with d u_i/d uL = eta_L'/eta_i'
            dlog = dom_L / om_L - (L - 1) * deta_L / eta_L
            for om_i, dom_i, _, deta_i in vals:
                dlog = dlog + dom_i / om_i * deta_L / deta_i
        ok &= np.isfinite(t) & np.isfinite(dlog)
        return np.where(ok, t, np.nan), dlog, rest

    def _fold_edges(self, x_out, om_out, x_in):
        """Soft edges as folds of the real solution (theory eq. (14.22)).

        Outside the support the solution of eq. (14.8) is real and, as ``x``
        moves to the edge, folds: ``x = 1/t`` is stationary in ``u_L``.  From
        the continued real solution at each cell's outer end ``x_out`` the
        secant method finds the zero of ``d log t/d u_L``; the edge is ``1/t``
        there, exact to rounding because ``x`` is quadratic in the error of
        ``u_L``.  Returns ``(edges, ok)``; ``ok`` is false where the secant
        does not converge, the unknowns leave the real branch or the edge
        falls outside its cell.
        """
        n = x_out.size
        edges = np.full(n, np.nan)
        ok = np.zeros(n, dtype=bool)
        real = _real_unknowns(om_out)
        if not real.any():
            return edges, ok
        u0 = om_out[-1].real.copy()
        state = {"rest": om_out[:-1].real.copy()}

        def slope(u):
            # d log t/d u_L on the real branch, carrying the other rows along
            state["t"], g, state["rest"] = self._branch(u, state["rest"])
            return g
        g0 = slope(u0)
        u1 = u0 * (1.0 + CHAIN_FOLD_START)
        g1 = slope(u1)
        res = secant(slope, u0, u1, g0, g1, CHAIN_FOLD_RTOL, CHAIN_FOLD_STEPS, active=real)
        u1, t1, rest, done = res.value, state["t"], state["rest"], res.converged
        with np.errstate(all="ignore"):
            xe = 1.0 / t1
        width = np.abs(x_in - x_out)
        mid = 0.5 * (x_in + x_out)
        om = np.vstack([rest, u1[None, :]]) + 0j
        # the real branch continued from x_out ends at its fold on the side of x_in: a
        # fold on the other side is the neighbouring band's edge, across a gap that
        # holds x_out alone (section 14.22)
        ok = (real & done & np.isfinite(xe) & ((xe - x_out) * (x_in - x_out) > 0)
              & (np.abs(xe - mid) <= CHAIN_EXTRAPOLATION_REACH * width) & self._valid(om))
        edges[ok] = xe[ok]
        if ok.any():
            self._seed_fold(xe[ok], om[:, ok].real, np.sign(x_in - x_out)[ok])
        return edges, ok

    def _fold_model(self, xe, om):
        """``(x'', ratios)`` of the folds at the edges ``xe`` with real unknowns ``om``
        (eq. (14.22)): ``x(u_L) = x_e + x'' (u_L - u*)**2/2`` and the other rows move by
        ``ratios = eta_L'/eta_i'`` times ``u_L - u*`` (shape of ``om``)."""
        us = om[-1]
        h = CHAIN_FOLD_DIFF * np.abs(us)
        _, gp, _ = self._branch(us + h, om[:-1])
        _, gm, _ = self._branch(us - h, om[:-1])
        with np.errstate(all="ignore"):
            x2 = -xe * (gp - gm) / (2.0 * h)             # x'' = -x g' at the fold
            vals = [row.map(om[i] + 0j) for i, row in enumerate(self._rows)]
            dL = vals[-1][3].real
            ratios = np.stack([dL / v[3].real for v in vals])
        return x2, ratios

    def _seed_fold(self, xe, om, inward):
        """Solutions just inside soft edges for the table of eq. (14.7) (eq. (14.22)).

        Next to the fold ``x(u_L) = x_e + x''(u*) (u_L - u*)**2/2``, so at ``x``
        inside the band ``u_L - u* = sqrt(2 (x - x_e)/x'')`` (the root in the
        lower half-plane) and the other rows move by ``eta_L'/eta_i'`` times
        that; Newton at ``y = 0`` polishes these guesses at
        ``CHAIN_FOLD_SEEDS`` distances from the edge, and the roots strictly
        inside the lower half-plane join the table.  The folds' models are kept
        for the real points beside them (:meth:`_from_fold`).
        """
        x2, ratios = self._fold_model(xe, om)
        keep = np.isfinite(x2) & (x2 != 0) & np.all(np.isfinite(ratios), axis=0)
        if keep.any():
            old = self._folds
            self._folds = tuple(np.concatenate([a, b], axis=-1) for a, b in zip(
                old, (xe[keep], om[:, keep], x2[keep], ratios[:, keep])))
        frac = np.asarray(CHAIN_FOLD_SEEDS)
        x = (xe[:, None] * (1.0 + inward[:, None] * frac[None, :])).ravel()
        dx = x - np.repeat(xe, frac.size)
        with np.errstate(all="ignore"):
            du = np.sqrt(2.0 * dx / np.repeat(x2, frac.size) + 0j)
            du = np.where(du.imag > 0, -du, du)
            guess = np.empty((len(self._rows), x.size), dtype=complex)
            for i in range(len(self._rows)):
                guess[i] = np.repeat(om[i], frac.size) + np.repeat(ratios[i], frac.size) * du
        fin = np.all(np.isfinite(guess), axis=0)
        if not fin.any():
            return
        t = 1.0 / x[fin].astype(complex)
        new, _ = self._newton(guess[:, fin], t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
        ok = self._accepted_near_fold(new, t)
        ok &= np.all(new.imag < -WARM_INSIDE_RTOL * np.abs(new), axis=0)
        self._add_inside(x[fin][ok], new[:, ok])

    def _narrow(self, x_out, x_in):
        """Cells ``[x_out, x_in]`` (either order) holding an edge, cut to
        ``CHAIN_EDGE_SECTIONS**-CHAIN_EDGE_ROUNDS`` of their width (in ``log x``).

        Each round solves ``CHAIN_EDGE_SECTIONS - 1`` interior points of every
        cell in one batch and keeps the sub-cell from the last point outside before
        the first point inside, counted from ``x_out``, of the points the
        continuation brought to the axis (accepted there, :meth:`_accepted`; theory
        section 14.9).
        """
        k = CHAIN_EDGE_SECTIONS
        frac = np.arange(1, k) / k
        for _ in range(CHAIN_EDGE_ROUNDS):
            pts = x_out[:, None] * (x_in / x_out)[:, None] ** frac[None, :]
            flat = pts.ravel()
            om = self._continue(flat, np.zeros(flat.size), check=False)
            # a point the continuation left above the axis (its levels stalled: next to
            # a fold, or next to a zero of G, where the unknowns diverge) decides
            # nothing: its G keeps the imaginary part of its last level (section 14.9)
            reached = np.all(np.isfinite(om), axis=0)
            sel = np.flatnonzero(reached)
            if sel.size:
                reached[sel] = self._accepted(om[:, sel], 1.0 / flat[sel].astype(complex))[0]
            self._add_inside(flat[reached], om[:, reached])   # warm starts next to the edge
            inside = self._inside(om, flat)
            ins = (inside & reached).reshape(pts.shape)
            out = (~inside & reached).reshape(pts.shape)
            # the first point inside (x_in itself when none is) and the last point
            # outside before it (x_out itself when none is)
            first = np.where(ins.any(axis=1), np.argmax(ins, axis=1), k - 1)
            before = out & (np.arange(k - 1)[None, :] < first[:, None])
            last = np.where(before.any(axis=1), k - 2 - np.argmax(before[:, ::-1], axis=1), -1)
            rows = np.arange(x_out.size)
            full = np.concatenate([x_out[:, None], pts, x_in[:, None]], axis=1)
            x_out, x_in = full[rows, last + 1], full[rows, first + 1]
        return x_out, x_in

    def _refine_edges(self, x_out, x_in):
        """Zero of ``(Im G)**2`` (linear in ``x`` next to a soft edge) extrapolated from
        two points inside the last narrowed cell's neighbourhood (eq. (14.9))."""
        x2 = x_in + 2.0 * (x_in - x_out)
        pts = np.concatenate([x_in, x2])
        g = self._g_from(self._continue(pts, np.zeros(pts.size), check=False),
                         pts.astype(complex)).imag ** 2
        h1, h2 = g[:x_in.size], g[x_in.size:]
        with np.errstate(all="ignore"):
            xe = x_in - h1 * (x2 - x_in) / (h2 - h1)
        # kept when it falls within a cell width of the last cell, else the cell's middle
        width = np.abs(x_in - x_out)
        keep = np.isfinite(xe) & (np.abs(xe - 0.5 * (x_in + x_out)) <= CHAIN_EXTRAPOLATION_REACH * width)
        return np.where(keep, xe, 0.5 * (x_out + x_in))

    def _hard_edge_exponent(self):
        return hard_edge_exponent(self.factors, self._describe())

    def _density(self, x):
        # eq. (14.7) through the axis tables of _solve, the continuation for the rest;
        # where that stalls, the flattened pair's other form (sections 14.39, 14.41)
        x = np.asarray(x, dtype=float)
        z = x.astype(complex)
        rest = np.ones(x.shape, dtype=bool)       # the points the system answers
        for _ in range(DENSITY_RETRIES + 1):
            try:
                om = self._solve(z[rest])
                break
            except ConvergenceError as err:
                form = self._two_law_form()
                if form is None:
                    raise
                near = self._toward_edge(x, err.point) & rest
                if not near.any() or near.sum() == rest.sum():
                    return form._density(x)
                rest &= ~near
        else:
            return self._two_law_form()._density(x)
        self._check_gaps(x[rest], om)
        out = np.empty(x.shape)
        g = self._g_from(om, z[rest])
        out[rest] = np.maximum(-g.imag, 0.0) / math.pi
        if not rest.all():
            out[~rest] = self._two_law_form()._density(x[~rest])
        return out

    def _toward_edge(self, x, point):
        """The points of ``x`` from ``point`` to its nearest band edge (a failing solve's
        neighbourhood, :data:`DENSITY_RETRIES`); none without a finite real ``point``."""
        if point is None or self._interval_cache is None:
            return np.zeros(x.shape, dtype=bool)
        p = complex(point).real
        ends = np.array([float(v) for iv in self._interval_cache for v in (iv.lo, iv.hi)])
        if not np.isfinite(p) or not ends.size:
            return np.zeros(x.shape, dtype=bool)
        e = ends[np.argmin(np.abs(ends - p))]
        return np.abs(x - e) <= np.abs(p - e)

    def _check_gaps(self, x, om):
        """Raise :class:`_GapInBand` at the first point of ``x`` whose unknowns are real
        (outside the support, eq. (14.16)) well inside a band (``GAP_SPLIT_MARGIN``)."""
        if not self._splitting or self._interval_cache is None or not x.size:
            return
        real = _real_unknowns(om)
        if not real.any():
            return
        for iv in self._interval_cache:
            lo, hi = float(iv.lo), float(iv.hi)
            margin = GAP_SPLIT_MARGIN * max(abs(lo), abs(hi))
            hit = np.flatnonzero(real & (x > lo + margin) & (x < hi - margin))
            if hit.size:
                k = hit[0]
                raise _GapInBand(float(x[k]), om[:, k].copy())

    def _representation(self):
        """The representation, splitting a band where the density's solve finds a
        point outside it (section 14.41): the locator grid misses a gap narrower than
        its spacing; the two new edges are the folds of eq. (14.22) from that point."""
        for _ in range(GAP_SPLITS_MAX):
            self._splitting = True      # only this build splits (not a wrapper's)
            try:
                return super()._representation()
            except _GapInBand as gap:
                self._rep = None
                self._split_band(gap.x, gap.om)
            finally:
                self._splitting = False
        raise ConvergenceError(f"the density of {self._describe()} found more than "
                               f"{GAP_SPLITS_MAX} gaps inside the bands its locator reported")

    def _split_band(self, x0, om0):
        """Split the band holding the outside point ``x0`` (unknowns ``om0``) at the
        edges of eq. (14.22) on both sides of it (eq. (14.9) where the fold fails),
        each in the cell between ``x0`` and the nearest inside point of the band."""
        ivs = list(self._interval_cache)
        j = next(i for i, iv in enumerate(ivs) if float(iv.lo) < x0 < float(iv.hi))
        lo, hi = float(ivs[j].lo), float(ivs[j].hi)
        wx = self._warm_x
        left = wx[(wx > lo) & (wx < x0)]
        right = wx[(wx > x0) & (wx < hi)]
        x_in = np.array([left.max() if left.size else 0.5 * (lo + x0),
                         right.min() if right.size else 0.5 * (x0 + hi)])
        x_out = np.array([x0, x0])
        xe, ok = self._fold_edges(x_out, np.stack([om0, om0], axis=1), x_in)
        # each fold in its own cell (from one outside point the secant can reach the
        # same fold on both sides)
        ok &= (np.minimum(x_out, x_in) <= xe) & (xe <= np.maximum(x_out, x_in))
        if not ok.all():
            bad = ~ok
            xn_out, xn_in = self._narrow(x_out[bad], x_in[bad])
            xe[bad] = self._refine_edges(xn_out, xn_in)
        e_lo, e_hi = float(min(xe)), float(max(xe))
        if not (lo < e_lo <= x0 <= e_hi < hi):
            raise ConvergenceError(
                f"a gap of {self._describe()} inside its band [{lo!r}, {hi!r}] at "
                f"x={x0!r}: its edges {tuple(xe)!r} do not split the band")
        half = Fraction(1, 2)
        ivs[j:j + 1] = [Interval(ivs[j].lo, e_lo, ivs[j].lo_exponent, half),
                        Interval(e_hi, ivs[j].hi, half, ivs[j].hi_exponent)]
        self._interval_cache = tuple(ivs)
        self._support_cache = None

    def _solve(self, z, partial=False):
        """The unknowns of eq. (14.8) at ``z`` (1-d, ``Im z >= 0``), eqs. (14.15),
        (14.16), (14.44), (14.45).

        Off the axis, Newton starts from the nearest of the latest
        ``CHAIN_WARM_TABLE`` solved points when it is within
        ``WARM_NEIGHBOUR_RTOL`` (its unknowns scaled by ``t/t_prev``, exact at
        large ``|z|``), and the root is kept when it lies strictly inside the lower
        half-plane; a point next to the axis then starts from the solution at its
        real part (:meth:`_near_axis`), any other from its nearest solved point at
        any distance, and last from the large-``|z|`` value.  On the axis the tables
        of :meth:`_solve_axis` are tried.  Every other point is continued from
        ``y = CHAIN_START * scale``; with ``partial``, a point the continuation does
        not solve comes back as NaN instead of raising (section 14.43).
        """
        z = np.asarray(z, dtype=complex)
        zero = z == 0
        if zero.any():
            # eq. (14.8) is written in t = 1/z: z = 0 is t = oo, where no root exists
            # (the continuation would walk hundreds of decades of y before it stalls)
            if not partial:
                raise ConvergenceError(f"{self._describe()}: eq. (14.8) in t = 1/z has no "
                                       f"value at z = 0 (theory section 14.58)", point=0.0)
            om = np.full((len(self.factors), z.size), np.nan, dtype=complex)
            if not zero.all():
                om[:, ~zero] = self._solve(z[~zero], partial=True)
            return om
        om = np.empty((len(self.factors), z.size), dtype=complex)
        todo = np.ones(z.size, dtype=bool)
        off = np.flatnonzero(z.imag > 0)
        pz = None
        if off.size and len(self._last):
            # the nearest solved point and its unknowns, at every off-axis point
            pz = np.empty(z.size, dtype=complex)
            pom = np.empty((len(self.factors), z.size), dtype=complex)
            zo = z[off]
            pz[off], pom[:, off] = self._last.nearest(zo)
            near = np.abs(zo - pz[off]) <= WARM_NEIGHBOUR_RTOL * np.abs(zo)
            if near.any():
                k = off[near]
                new, ok = self._from_neighbours(z[k], pz[k], pom[:, k], CHAIN_NEIGHBOUR_STEPS)
                om[:, k[ok]] = new[:, ok]
                todo[k[ok]] = False
        near = np.flatnonzero(todo & (z.imag > 0) & (z.imag <= CHAIN_NEAR_AXIS_RTOL * np.abs(z.real)))
        if near.size and self._gap_x.size + self._warm_x.size:
            # eq. (14.44): from the solution at the real part
            new, ok = self._near_axis(z[near])
            om[:, near[ok]] = new[:, ok]
            todo[near[ok]] = False
        off = np.flatnonzero(todo & (z.imag > 0))
        if off.size and pz is not None:
            # eq. (14.45): from the nearest solved point at any distance
            new, ok = self._from_neighbours(z[off], pz[off], pom[:, off])
            om[:, off[ok]] = new[:, ok]
            todo[off[ok]] = False
        wide = np.flatnonzero(todo & (z.imag > CHAIN_NEAR_AXIS_RTOL * np.abs(z.real))
                              & (z.imag <= CHAIN_NEAR_AXIS_WIDE * np.abs(z.real)))
        if wide.size and self._gap_x.size + self._warm_x.size:
            # eq. (14.44) a little higher, where no neighbour's root certifies itself
            # (over a gap the roots are real to within y |omega'|): its test decides
            new, ok = self._near_axis(z[wide], CHAIN_NEAR_AXIS_WIDE_STEP)
            om[:, wide[ok]] = new[:, ok]
            todo[wide[ok]] = False
        off = np.flatnonzero(todo & (z.imag > 0))
        if off.size:
            # eq. (14.15) from the large-|z| start: for Im z > 0 a root strictly inside
            # the half-plane is the solution whatever the start
            t = 1.0 / z[off]
            new, ok = self._newton(self._start(t), t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
            ok = self._kept_inside(new, t, ok)
            om[:, off[ok]] = new[:, ok]
            todo[off[ok]] = False
        off = np.flatnonzero(todo & (z.imag > 0))
        if off.size and pz is not None:
            # eq. (14.61): along the logarithmic path from the nearest solved point
            new, ok = self._along_path(z[off], pz[off], pom[:, off])
            om[:, off[ok]] = new[:, ok]
            todo[off[ok]] = False
        on = np.flatnonzero(todo & (z.imag <= 0))
        if on.size:
            new, ok = self._solve_axis(z[on].real)
            om[:, on[ok]] = new[:, ok]
            todo[on[ok]] = False
        cont = np.flatnonzero(todo & (z.imag <= 0))
        if todo.any():
            self._continued(z, om, todo, partial)
        self._add_inside(z.real[on], om[:, on])
        if cont.size:
            self._add_gap(z.real[cont], om[:, cont])
        up = (z.imag > 0) & np.all(np.isfinite(om), axis=0)
        if up.any():
            # the table keeps the latest CHAIN_WARM_TABLE points (a nested law is
            # called by its host's solvers in turn, at interleaved point sets)
            self._last.add(z[up], om[:, up])
        return om

    def _continued(self, z, om, todo, partial):
        """The continuation (eq. (14.3)) at the points ``todo`` of ``z``, into ``om``;
        a real point continued before takes its kept unknowns (section 14.46): a
        host's Newton asks the same real points just beyond an edge again and again,
        where no table start is accepted."""
        memo = self.__dict__.setdefault("_axis_memo", {})
        idx = np.flatnonzero(todo)
        real = z.imag[idx] == 0
        if memo and real.any():
            for k in idx[real]:
                hit = memo.get(float(z[k].real))
                if hit is not None:
                    om[:, k] = hit
                    todo[k] = False
            idx = np.flatnonzero(todo)
        if not idx.size:
            return
        om[:, idx] = self._continue(z[idx].real, np.maximum(z[idx].imag, 0.0),
                                    partial=partial)
        keep = idx[(z.imag[idx] == 0) & np.all(np.isfinite(om[:, idx]), axis=0)]
        for k in keep:
            if len(memo) >= CHAIN_AXIS_MEMO:
                memo.pop(next(iter(memo)))          # the oldest first
            memo[float(z[k].real)] = om[:, k].copy()

    def _from_neighbours(self, z, z0, om0, steps=CHAIN_FINAL_STEPS):
        """Newton at ``z`` from the unknowns ``om0`` solved at ``z0``, scaled as in eq.
        (14.15), kept strictly inside the lower half-plane (eqs. (14.15), (14.45): the
        test, not the start, certifies the root); ``(om, accepted)``."""
        t = 1.0 / z
        om, ok = self._newton(om0 * (z0 / z), t, steps, CHAIN_FINAL_RTOL)
        return om, self._kept_inside(om, t, ok)

    def _along_path(self, z, z0, om0):
        """Newton along ``z(s) = z0**(1 - s) z**s`` from the unknowns ``om0`` solved at
        ``z0`` (eq. (14.61)): steps of at most ``CHAIN_PATH_RATIO`` in ``|log z|``, each
        started from the last root unscaled (next to the support the unknowns do not go
        as ``1/z``, which defeats the start of eq. (14.45)), at most ``CHAIN_PATH_STEPS``
        of them; the root at ``z`` kept by the test of eq. (14.15).  ``(om, accepted)``.
        """
        om = np.zeros((len(self.factors), z.size), dtype=complex)
        acc = np.zeros(z.size, dtype=bool)
        with np.errstate(all="ignore"):
            span = np.log(z / z0)
            count = np.ceil(np.abs(span) / np.log(CHAIN_PATH_RATIO))
        sel = np.flatnonzero(np.isfinite(count) & (count >= 1) & (count <= CHAIN_PATH_STEPS))
        if not sel.size:
            return om, acc
        n = count[sel].astype(int)
        cur = om0[:, sel].copy()
        alive = np.ones(sel.size, dtype=bool)
        for k in range(1, int(n.max())):
            go = np.flatnonzero(alive & (k < n))
            if not go.size:
                break
            zk = z0[sel[go]] * np.exp(span[sel[go]] * (k / n[go]))
            new, ok = self._newton(cur[:, go], 1.0 / zk, CHAIN_NEIGHBOUR_STEPS, CHAIN_LEVEL_RTOL)
            cur[:, go[ok]] = new[:, ok]
            alive[go[~ok]] = False
        if alive.any():
            k = sel[alive]
            t = 1.0 / z[k]
            new, ok = self._newton(cur[:, alive], t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
            ok = self._kept_inside(new, t, ok)
            om[:, k[ok]], acc[k[ok]] = new[:, ok], True
        return om, acc

    def _kept_inside(self, om, t, converged):
        """Roots of eq. (14.8) at ``t = 1/z`` (``Im z > 0``) strictly inside the lower
        half-plane (eq. (14.15)), where Newton converged or, next to a fold where it
        converges linearly and stops above its step tolerance, where the
        continuation's acceptance takes them (section 14.43)."""
        ok = converged.copy()
        rest = np.flatnonzero(~ok)
        if rest.size:
            ok[rest] = self._accepted_near_fold(om[:, rest], t[rest])
        ok &= np.all(om.imag < -WARM_INSIDE_RTOL * np.abs(om), axis=0)
        sel = np.flatnonzero(ok)
        if sel.size:
            ok[sel] = self._turned_from(om[:, sel], t[sel])
        return ok

    def _turned_from(self, om, t):
        """Whether every row's subordination point ``omega_i`` is turned from ``t`` away
        from the positive axis, ``arg omega_i <= arg t`` (eq. (14.64)): the lower
        half-plane alone does not single out the solution of eq. (14.8) for ``L > 2``
        (section 14.57)."""
        ok = np.ones(om.shape[1], dtype=bool)
        for i, row in enumerate(self._rows):
            if i and row is self._rows[i - 1] and np.array_equal(om[i], om[i - 1]):
                continue
            omega = row.omega(om[i])
            with np.errstate(all="ignore"):
                q = omega / t
                ok &= q.imag <= CHAIN_TURN_RTOL * np.abs(q)
        return ok

    def _near_axis(self, z, step_rtol=CHAIN_NEAR_AXIS_STEP):
        """Solves at points ``z = x + i y`` next to the axis (``0 < y <=
        CHAIN_NEAR_AXIS_RTOL |x|``, or up to ``CHAIN_NEAR_AXIS_WIDE |x|`` where no
        neighbour served) from the warm solution at ``x`` (eq. (14.44));
        ``(om, accepted)``.

        Newton at ``z`` starts from ``omega(x)`` of :meth:`_solve_axis`.  Inside
        the support the root is kept strictly inside the lower half-plane (eq.
        (14.15)).  In a gap ``omega(x)`` is real and its first Newton step at ``z``
        is ``i y omega'(x)`` to first order: the root is kept when that step is
        below ``step_rtol`` of ``|omega|``, Newton converged within
        ``CHAIN_NEAR_AXIS_REACH`` times the first step of the start, and every
        unknown lies in the closed lower half-plane.
        """
        om = np.zeros((len(self.factors), z.size), dtype=complex)
        acc = np.zeros(z.size, dtype=bool)
        base, have = self._solve_axis(z.real)
        idx = np.flatnonzero(have)
        if not idx.size:
            return om, acc
        base, zz = base[:, idx], z[idx]
        t = 1.0 / zz
        _, step, _, _ = self._system(base, t)
        with np.errstate(all="ignore"):
            first = np.abs(step).max(axis=0)
            size = np.abs(base).max(axis=0)
        new, ok = self._newton(base, t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
        inside = np.all(new.imag < -WARM_INSIDE_RTOL * np.abs(new), axis=0)
        real_base = _real_unknowns(base)
        with np.errstate(all="ignore"):
            moved = np.abs(new - base).max(axis=0)
        gap = (real_base & (first <= step_rtol * size)
               & (moved <= CHAIN_NEAR_AXIS_REACH * first + CHAIN_REAL_RTOL * size)
               & np.all(new.imag <= 0, axis=0))
        ok &= inside | gap
        sel = np.flatnonzero(ok)
        if sel.size:
            ok[sel] = self._turned_from(new[:, sel], t[sel])        # eq. (14.64)
        om[:, idx[ok]], acc[idx[ok]] = new[:, ok], True
        return om, acc

    def _solve_axis(self, x):
        """Warm solves at real ``x`` (eqs. (14.7), (14.16)); ``(om, accepted)``.

        Inside the support: Newton from the interpolated table of boundary
        values, kept strictly inside the lower half-plane (eq. (14.7)).  In a
        gap (or beyond the support): Newton from the interpolation of the two
        continued grid solutions around ``x``, kept when both lie in the same
        gap as ``x``, ``x`` is farther than their distance from every edge, and
        the root is real and within the bracket of eq. (14.16).
        """
        L = len(self.factors)
        om = np.zeros((L, x.size), dtype=complex)
        acc = np.zeros(x.size, dtype=bool)
        ivs = self.interval_details()
        if np.any(x < 0) and self._negative_reach is not None:
            self._negative_table()
        edges = np.array([e for iv in ivs for e in (iv.lo, iv.hi)], dtype=float)
        t = 1.0 / x.astype(complex)
        inside = np.zeros(x.size, dtype=bool)
        for iv in ivs:
            inside |= (x > iv.lo) & (x < iv.hi)
        cand = np.flatnonzero(inside)
        if cand.size and self._warm_x.size >= 2:
            guess = self._inside_guess(x[cand], ivs)
            new, ok = self._newton(guess, t[cand], CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
            if not ok.all():
                ok[~ok] = self._accepted_near_fold(new[:, ~ok], t[cand][~ok])
            ok &= np.all(new.imag < -WARM_INSIDE_RTOL * np.abs(new), axis=0)
            om[:, cand[ok]], acc[cand[ok]] = new[:, ok], True
        gx, gw = self._gap_x, self._gap_w
        if gx.size >= 2 and edges.size:
            pos = np.searchsorted(gx, x)
            cand = np.flatnonzero(~inside & (pos > 0) & (pos < gx.size))
            a, b = pos[cand] - 1, pos[cand]
            xc = x[cand]
            gap = np.searchsorted(edges, xc)
            width = gx[b] - gx[a]
            # (never across 0, where t = 1/z is singular)
            keep = ((np.searchsorted(edges, gx[a]) == gap) & (np.searchsorted(edges, gx[b]) == gap)
                    & (np.sign(gx[a]) == np.sign(gx[b]))
                    & (np.min(np.abs(xc[:, None] - edges[None, :]), axis=1) > width))
            cand, a, b, xc, width = cand[keep], a[keep], b[keep], xc[keep], width[keep]
            if cand.size:
                frac = (xc - gx[a]) / width
                wa, wb = gw[:, a], gw[:, b]
                guess = wa + frac * (wb - wa)
                new, ok = self._newton(guess, t[cand], CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
                ok &= _real_unknowns(new)
                # eq. (14.16): within the bracket of its neighbours, widened by its width
                spread = np.abs(wb - wa)
                lo = np.minimum(wa.real, wb.real) - spread
                hi = np.maximum(wa.real, wb.real) + spread
                ok &= np.all((new.real >= lo) & (new.real <= hi), axis=0)
                om[:, cand[ok]], acc[cand[ok]] = new[:, ok].real + 0j, True
        rest = np.flatnonzero(~acc & ~inside & (x != 0))
        if rest.size and self._folds[0].size:
            new, ok = self._from_fold(x[rest])
            om[:, rest[ok]], acc[rest[ok]] = new[:, ok], True
        return om, acc

    def _from_fold(self, x):
        """Real solutions at real ``x`` beside a soft edge from its fold (eq. (14.54));
        ``(om, accepted)``.

        Within ``CHAIN_FOLD_REACH`` of an edge ``x_e`` on its gap side, the fold's
        model gives two real roots ``u_L = u* +- sqrt(2 (x - x_e)/x'')``; each is
        polished by Newton and kept when it is real, on every row's branch and
        within ``CHAIN_FOLD_LOCAL`` of its model's distance from ``u*``.  Outside the
        support ``G`` is real and decreasing, and next to the edge ``G - G_e`` is
        ``-+c sqrt(|x - x_e|)``: the solution is the one root with ``G' < 0``, the
        other the mirror branch through the fold (``G' > 0``).
        """
        xe, ome, x2, ratios = self._folds
        L = len(self.factors)
        om = np.zeros((L, x.size), dtype=complex)
        acc = np.zeros(x.size, dtype=bool)
        k = np.argmin(np.abs(x[:, None] - xe[None, :]), axis=1)
        d = x - xe[k]
        with np.errstate(all="ignore"):
            q = 2.0 * d / x2[k]
        sel = np.flatnonzero((np.abs(d) <= CHAIN_FOLD_REACH * np.abs(xe[k])) & (q > 0)
                             & np.isfinite(q))
        if not sel.size:
            return om, acc
        ks, du = k[sel], np.sqrt(q[sel])
        t = 1.0 / x[sel].astype(complex)
        found = np.zeros((L, sel.size), dtype=complex)
        count = np.zeros(sel.size, dtype=int)
        for sign in (1.0, -1.0):
            guess = ome[:, ks] + ratios[:, ks] * (sign * du) + 0j
            new, conv = self._newton(guess, t, CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
            if not conv.all():
                conv[~conv] = self._accepted_near_fold(new[:, ~conv], t[~conv])
            with np.errstate(all="ignore"):
                local = np.abs(new[-1].real - ome[-1, ks] - sign * du) <= CHAIN_FOLD_LOCAL * du
            ok = conv & _real_unknowns(new) & local
            idx = np.flatnonzero(ok)
            if idx.size:
                ok[idx] = self._valid(new[:, idx])
                idx = np.flatnonzero(ok)
            if idx.size:
                _, dg = self._pair_from(new[:, idx].real + 0j, x[sel][idx].astype(complex))
                down = np.isfinite(dg) & (dg.real < 0)
                found[:, idx[down]] = new[:, idx[down]].real + 0j
                count[idx[down]] += 1
        one = count == 1
        om[:, sel[one]], acc[sel[one]] = found[:, one], True
        return om, acc

    def _negative_table(self):
        """Adds the negative axis to the table of eq. (14.16) for a support that may
        reach 0 (theory section 14.35): ``CHAIN_NEGATIVE_PER_DECADE`` geometric
        points per decade from ``CHAIN_HARD_REACH`` of the locator grid's first
        point to ``CHAIN_GAP_REACH`` times its last, continued once (a point whose
        first level misses its tolerance is dropped, as beyond the grid)."""
        a, b = self._negative_reach
        self._negative_reach = None
        n = int(np.ceil(CHAIN_NEGATIVE_PER_DECADE * np.log10(b / a)))
        x = -np.geomspace(b, a, n + 1)
        om = self._continue(x, np.zeros(x.size), check=False,
                            optional=np.ones(x.size, dtype=bool))
        keep = np.all(np.isfinite(om), axis=0) & _real_unknowns(om)
        self._merge_gap(x[keep], om[:, keep])

    def _merge_gap(self, x, om):
        """Merges real points ``x`` and their real unknowns ``om`` into the table of eq.
        (14.16), sorted, each point once (a point already there keeps its unknowns)."""
        x, first = np.unique(x, return_index=True)
        new = ~np.isin(x, self._gap_x)
        if not new.any():
            return
        gx = np.r_[self._gap_x, x[new]]
        gw = np.concatenate([self._gap_w, om[:, first[new]].real + 0j], axis=1)
        order = np.argsort(gx, kind="stable")
        self._gap_x, self._gap_w = gx[order], gw[:, order]

    def _add_gap(self, x, om):
        """Adds continued real points outside the support (real unknowns, eq. (14.16)) to
        the table of eq. (14.16), up to ``CHAIN_GAP_TABLE`` points: a host asks real
        points next to those it asked before, which then have a bracket of solved
        neighbours."""
        if self._gap_x.size >= CHAIN_GAP_TABLE or self._interval_cache is None:
            return
        keep = (np.all(np.isfinite(om), axis=0) & _real_unknowns(om) & self._over_gap(x)
                & (x != 0))
        self._merge_gap(x[keep], om[:, keep])

    def _add_inside(self, x, om):
        """Adds solved real points strictly inside the support to the table of eq. (14.7)."""
        keep = np.all(om.imag < -WARM_INSIDE_RTOL * np.abs(om), axis=0) & ~np.isin(x, self._warm_x)
        if keep.any() and self._warm_x.size:
            xs = np.r_[self._warm_x, x[keep]]
            order = np.argsort(xs, kind="stable")
            self._warm_x = xs[order]
            self._warm_w = np.concatenate([self._warm_w, om[:, keep]], axis=1)[:, order]

    def _inside_guess(self, x, ivs):
        """Newton starts inside the support from the table of boundary values (eq. (14.7)).

        Between table points: linear interpolation in ``x``.  Between an interval's
        outermost table point and its edge, the two outermost points are
        extrapolated in ``sqrt(|x - e|)`` towards a soft edge ``e`` (the unknowns
        are analytic in it at a square-root fold, theory section 14.16) and in
        ``log x`` of ``log omega`` towards a hard edge at 0 (a power of ``x``
        there, eq. (14.6)), where interpolation would repeat the end value.
        """
        wx, ww = self._warm_x, self._warm_w
        guess = np.stack([np.interp(x, wx, r.real) + 1j * np.interp(x, wx, r.imag) for r in ww])
        for iv in ivs:
            tab = np.flatnonzero((wx > iv.lo) & (wx < iv.hi))
            if tab.size < 2:
                continue
            for end, (i1, i2) in ((iv.hi, (tab[-1], tab[-2])), (iv.lo, (tab[0], tab[1]))):
                sel = (x > min(end, wx[i1])) & (x < max(end, wx[i1]))
                if not sel.any():
                    continue
                w1, w2 = ww[:, i1, None], ww[:, i2, None]
                with np.errstate(all="ignore"):
                    if end == 0.0:
                        slope = (np.log(w1) - np.log(w2)) / np.log(wx[i1] / wx[i2])
                        g = np.exp(np.log(w1) + slope * np.log(x[sel] / wx[i1])[None, :])
                    else:
                        s1, s2 = np.sqrt(abs(end - wx[i1])), np.sqrt(abs(end - wx[i2]))
                        g = w1 + (w1 - w2) / (s1 - s2) * (np.sqrt(np.abs(end - x[sel])) - s1)
                ok = np.all(np.isfinite(g), axis=0)
                guess[:, np.flatnonzero(sel)[ok]] = g[:, ok]
        return guess

    def _two_law_form(self):
        """The subordination of eq. (14.4) of the two laws this system flattens (built
        when first asked), or None."""
        if self._two_laws is None:
            return None
        form = self.__dict__.get("_two_law_cache")
        if form is None:
            from ._analytic import analytic_multiplicative

            build = self._form or (lambda a, b: analytic_multiplicative(
                a, b, options=self.options))
            form = build(*self._two_laws)
            if self._form is not None and self._interval_cache is not None:
                # a level kept as the other form (section 14.41) has the system's
                # support: its own search (the generic solver's, a system solve per
                # real point) is not repeated
                form._interval_cache = self._interval_cache
            else:
                # its support first: a host's point next to the axis is then solved
                # from the tables of the located support (eqs. (14.12), (14.16)), as
                # when the two laws were the law itself (where that fails, the points
                # are solved cold)
                try:
                    form.interval_details()
                except ConvergenceError:
                    pass
            self._two_law_cache = form
        return form

    def _or_two_laws(self, from_unknowns, name, z):
        """``from_unknowns(om, z)`` of the system's unknowns at ``z``; at the points
        where the system has no root (a host's points far from the support), the
        flattened pair's two-law subordination (section 14.39) answers by its method
        ``name``, and at all of them where the system raises otherwise; without such
        a pair the error stands (section 14.43)."""
        if self._two_laws is None:
            return from_unknowns(self._solve(z), z)
        try:
            om = self._solve(z, partial=True)
        except ConvergenceError:
            return getattr(self._two_law_form(), name)(z)
        solved = np.all(np.isfinite(om), axis=0)
        if solved.all():
            return from_unknowns(om, z)
        own = from_unknowns(om[:, solved], z[solved])
        other = getattr(self._two_law_form(), name)(z[~solved])
        single = not isinstance(own, tuple)
        if single:
            own, other = (own,), (other,)
        out = tuple(np.empty(z.shape, dtype=complex) for _ in own)
        for full, a, b in zip(out, own, other):
            full[solved], full[~solved] = a, b
        return out[0] if single else out

    def _stieltjes_exact(self, z):
        return self._or_two_laws(self._g_from, "_stieltjes_exact",
                                 np.asarray(z, dtype=complex))

    def _stieltjes_pair(self, zs):
        return self._or_two_laws(self._pair_from, "_stieltjes_pair",
                                 np.asarray(zs, dtype=complex))

    def _solved_pair(self, zs):
        """``(G, G')`` at ``zs`` from the system alone."""
        return self._pair_from(self._solve(zs), zs)

    def _pair_from(self, om, zs):
        """``(G, G')`` at ``zs`` from the system's unknowns ``om`` there."""
        t = 1.0 / zs
        _, _, eL, denom = self._system(om, t)
        dL = self._rows[-1].map(om[-1])[3]
        with np.errstate(all="ignore"):
            # d u_L/dt from the arrowhead system with right side (0, ..., 1/t) (the
            # last row divided by t eta**(L-1))
            domL = 1.0 / (t * denom)
            deta_dz = dL * domL * (-t * t)
            g = t / (1.0 - eL)
            dg = -g * g * ((1.0 - eL) - zs * deta_dz)
        return g, dg

    def _stieltjes_derivative(self, zs):
        return self._stieltjes_pair(zs)[1]

    def _moment_series(self, kmax, prec):
        # the ⊠ of the factors' moment series (theory section 8.10, eqs. (8.4), (8.5))
        from ._moments import product_series

        return product_series(self.factors, kmax, prec)


def product_chain(factors, *, options=None):
    """``nu_1 ⊠ ... ⊠ nu_L`` of laws on ``[0, oo)`` by one system (theory eq. (14.8)).

    Parameters
    ----------
    factors : sequence of SpectralLaw
        At least two laws on ``[0, oo)`` with positive means.
    options : SolverOptions, optional

    Returns
    -------
    ProductChainLaw

    Raises
    ------
    TypeError
        If a factor is not a law.
    ValueError
        If there are fewer than two factors, or a factor has mass below 0 or
        mean 0.

    Examples
    --------
    >>> import freeattn
    >>> from freeattn.compose._chain import product_chain
    >>> mp = freeattn.marchenko_pastur(1.0, 0.5)
    >>> law = product_chain([mp, mp, mp])          # mean 1, m2 = 1 + 3 * 0.5
    >>> round(law.mean(), 12), round(law.moment(2), 10)
    (1.0, 2.5)
    """
    factors = list(factors)
    if len(factors) < 2:
        raise ValueError(f"factors must hold at least two laws, got {len(factors)}")
    for k, law in enumerate(factors):
        if not isinstance(law, SpectralLaw):
            raise TypeError(f"factors[{k}] must be a freeattn law (SpectralLaw), got "
                            f"{type(law).__name__}")
        if law.support()[0] < 0:
            raise ValueError(f"factors[{k}] must be a law on [0, inf), but its support starts "
                             f"at {law.support()[0]!r}")
        if not law.mean() > 0:
            raise ValueError(f"factors[{k}] must have a positive mean, got {law.mean()!r}")
    return ProductChainLaw(factors, options)
