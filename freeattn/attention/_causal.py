"""Limiting spectrum of causal (masked) softmax attention.

The squared singular values of the row-rescaled causal attention matrix
``C = diag(1, ..., n) (A - M) / sqrt(n)`` and of its Gaussian-equivalent
masked linear model ``Y_c = L * (beta S + alpha W) / sqrt(n)`` follow one
limiting law (theory/10_causal.md).  Its Stieltjes transform comes from a
two-point boundary-value problem on the position interval ``[0, 1]``
(theory eqs. (10.5)-(10.12)), which this module solves by Chebyshev spectral
collocation of its integrated form on the half interval ``[0, 1/2]`` (the
problem is symmetric about ``1/2``, eq. (10.11)), with Newton's method.

Everything is computed in units of ``theta1 = exp(beta**2) - 1``: the
parameters are ``a2 = alpha**2/theta1`` and ``b2 = beta**2/theta1`` with
``a2 + b2 = 1`` for attention (the masked Gaussian noise alone, the
Dykema-Haagerup case, is ``a2 = 1, b2 = 0``).

Public functions (all vectorized in their point argument):

- :func:`causal_stieltjes` -- ``G(z) = int dmu(x)/(z - x)``;
- :func:`causal_density` -- the density of the squared singular values;
- :func:`causal_cdf` -- the distribution function, exactly, from the
  logarithmic potential (eq. (10.13)), including ``x`` down to ``exp(-700)``;
- :func:`causal_support` and :func:`causal_edge` -- the support intervals and
  the upper edge, from the critical points of the real solution branch
  (eq. (10.17));
- :func:`causal_moments` -- exact moments from the expansion at infinity
  (eq. (10.16)).

The module does no I/O and no plotting.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special

from ..core._blas import single_threaded
from ..core._checks import CAUSAL_BETA, CAUSAL_GAMMA, as_real_array
from ..core._errors import ConvergenceError
from ..compose._fixed_point import SystemProblem, newton_system

__all__ = [
    "CAUSAL_BETA_RANGE",
    "CAUSAL_GAMMA_RANGE",
    "CausalSupport",
    "causal_stieltjes",
    "causal_density",
    "causal_cdf",
    "causal_support",
    "causal_edge",
    "causal_moments",
]

# --------------------------------------------------------------------------- #
# Parameter ranges and named tolerances
# --------------------------------------------------------------------------- #

#: Inverse temperatures served.  Below 1e-8 the law in units of theta1 is its
#: beta -> 0 limit (the masked score matrix alone) to O(beta**2) = 1e-16; at
#: beta = 4, b2 = beta**2/theta1 = 1.8e-6 and the law is the Dykema-Haagerup law
#: to that relative order (theory section 10.6).
CAUSAL_BETA_RANGE = CAUSAL_BETA.range

#: Ratios gamma = d_qk/n served.  Measured: the solver reaches 1e-12 on this
#: range (tests/test_causal.py); below ~0.05 the score part develops layers of
#: width O(gamma) in the position variable that need finer grids.
CAUSAL_GAMMA_RANGE = CAUSAL_GAMMA.range

#: Newton iterations allowed for one solve from a warm start (quadratic
#: convergence from a continuation predictor takes 2-5).
NEWTON_MAX_ITER = 30

#: Newton stops when the largest update of (sigma, kappa) is below this
#: (absolute on sigma, which is O(1); relative on kappa): a few ulps of the
#: O(1) unknowns.
NEWTON_STEP_TOL = 1e-13

#: Newton also stops when the step is below NEWTON_QUADRATIC_MAX and the
#: quadratic-convergence estimate of the error left (step**3/previous**2) is
#: below NEWTON_STEP_TOL: this saves the last confirming iteration.
NEWTON_QUADRATIC_MAX = 1e-5

#: The chord iteration keeps its Jacobian while each step is at most this
#: fraction of the previous one (it then gains >= 1 digit per cheap step).
CHORD_MIN_CONTRACTION = 0.1

#: Atlas points used for the interpolated starting guess of a query (cubic).
GUESS_POINTS = 4

#: A converged solve must leave a residual below this (max norm of the
#: integrated equations, whose terms are O(1)); anything larger is reported.
RESIDUAL_TOL = 1e-10

#: A solve whose Newton steps stagnate (they do within ~1e-10 relative of an edge,
#: where the Jacobian's condition number grows like distance**(-1/2): measured
#: steps ~1e-12 for 30 iterations at 8e-11 from the upper edge, beta = 0.5) is
#: accepted when its residual is at this rounding level of the O(1) equations.
RESIDUAL_ROUNDING = 1e-14

#: Chebyshev nodes per panel of the position grid.  A single panel on [0, 1/2]
#: with 32 nodes reaches ~1e-14 in the bulk of the support (tests quote the
#: convergence table); panels are added near x = 0 when the boundary layer
#: exp(-psi) becomes narrow (small lambda, see _grid_for).
PANEL_NODES = 32

#: Below gamma = SMALL_GAMMA the single panel gets PANEL_NODES_SMALL_GAMMA nodes
#: (measured: 32 nodes give 1e-11 and 40 give 1e-13 in G at gamma = 0.1).
SMALL_GAMMA = 0.25
PANEL_NODES_SMALL_GAMMA = 40

#: The boundary layer at x = 0 decays like exp(-r x), r = Re(1/kappa).  While
#: r <= LAYER_SINGLE_PANEL the whole half interval is one panel of PANEL_NODES
#: nodes; beyond, geometric panels of LAYER_PANEL_NODES nodes (see _grid_for).
#: The break points (3, 9, 27, 60)/r with 16 nodes per panel were chosen from
#: a comparison of five layouts against a 7-panel, 32-node reference: <= 3e-13
#: relative in G from lambda = exp(-40) to exp(-600) (theory section 10.8).
LAYER_SINGLE_PANEL = 32.0
LAYER_PANEL_NODES = 16
LAYER_BREAKS = (3.0, 9.0, 27.0, 60.0)

#: Continuation: largest relative change of kappa accepted per step; steps that
#: need more than CONT_MAX_NEWTON iterations, fail, or leave the branch are
#: halved, down to CONT_MIN_STEP (relative to the sweep variable's range).
CONT_MAX_KAPPA_CHANGE = 0.15
CONT_MAX_NEWTON = 8
CONT_MIN_STEP = 1e-9

#: Real-branch tracing starts at kappa = -1/s with s = TRACE_S0 (z ~ 1/s far
#: beyond the support, where sigma = 1/2 to O(s)) and steps in s.
TRACE_S0 = 1e-2
TRACE_STEP0 = 2e-2
TRACE_MAX_STEP = 0.2

#: Relative imaginary part of kappa below which a continued solution inside
#: the support has collapsed onto the real axis (an edge of a gap).
COLLAPSE_IMAG_RTOL = 1e-7

#: A continued solution whose Im(kappa)/|kappa| is below NEAR_EDGE_IMAG_RTOL and
#: whose steps have shrunk below NEAR_EDGE_MIN_STEP is next to an edge where it
#: meets its conjugate (Newton's matrix is singular there, hence the stall); the
#: edge itself is then computed on the real branch (_fold_near).
NEAR_EDGE_IMAG_RTOL = 1e-2
NEAR_EDGE_MIN_STEP = 1e-6

#: Slack of the sign test of _admissible (relative imaginary parts of the
#: resolvent diagonals, which vanish at x = 0 and outside the support up to
#: round-off).
ADMISSIBLE_TOL = 1e-8

#: The logarithm of the Gelfand-Yaglom solution g2 is continued along x from
#: the phases of its interpolant on a grid PHASE_REFINE times finer.  Between
#: two fine points g2 is a straight segment to many digits, which subtends an
#: angle < pi at the origin, so np.angle of the ratio is the true phase step
#: even where g2 passes close to 0 (next to a gap, where it crosses 0 on the
#: real branch); a step beyond PHASE_STEP_MAX means the segment is not resolved.
PHASE_STEP_MAX = 3.0
PHASE_REFINE = 8

#: Relative offset above the lower edge of the upper interval at which the
#: multiple of gamma carried by the upper interval is read off; measured: the
#: mass left out is (1.6-4.3) * offset**1.5 for gamma = 0.1-0.12.
GAP_MASS_OFFSET = 1e-4
GAP_MASS_TOL = 1e-4

#: Brent tolerance for the critical points of the real branch (in s = -1/kappa);
#: lambda is quadratic there, so the edge value is accurate to ~eps.
EDGE_XTOL = 1e-13

#: Smallest lambda/theta1 covered by the continuation atlas; below it points
#: are solved on demand by continuation in log(lambda) (theory section 10.8).
ATLAS_LOG_MIN = -30.0

#: Points below lambda = exp(DEEP_LOG) theta1 are solved directly from the layer
#: expansion (eq. (10.18)), batched, instead of by continuation from the atlas:
#: there the guess is within Newton's reach (measured for gamma >= 0.1).
DEEP_LOG = -60.0

#: The continuation from below (needed only when the support has a gap) starts
#: at lambda = exp(L) theta1 for the first L here whose start is admissible:
#: there kappa ~ 1/|L| and the layer expansion (eq. (10.18)) is close enough for
#: Newton (at L = -30 it is not for gamma = 0.1: sigma - 1/2 = O(kappa/gamma)).
BOTTOM_LOG_STARTS = (-60.0, -200.0, -600.0)

#: Points of the lower end are solved exactly down to lambda = exp(LOG_LAMBDA_MIN)
#: (units of theta1), which covers every positive float64 x for every theta1 of
#: the beta range (x >= 5e-324 = exp(-744.4), theta1 <= exp(16) * 1.001).
LOG_LAMBDA_MIN = -800.0

#: Lambert's W of exp(L) is evaluated by scipy for Re L below LAMBERT_LOG_DIRECT
#: and by Newton's method on T + log T = L beyond (where exp(L) overflows); from
#: T = L - log L the error is O(log L / L)**2**k after k steps.
LAMBERT_LOG_DIRECT = 600.0
LAMBERT_NEWTON_STEPS = 8

#: Stieltjes transform at complex z: continuation down the vertical line from
#: z + i*STIELTJES_ETA0*scale (adaptive steps in log eta).
STIELTJES_ETA0 = 4.0

#: Warm starts of the Stieltjes transform: a point closer to a remembered
#: solution than WARM_RADIUS_FRACTION of the distance of both to the hull of the
#: support starts Newton there (the solution is analytic on the disc of that
#: distance, so it moves by a fraction of its size); the WARM_MEMORY latest
#: solutions of a law are remembered.
WARM_RADIUS_FRACTION = 0.25
WARM_MEMORY = 512
#: A point farther from every remembered solution than that, but within
#: PATH_REACH hull distances of the nearest, is reached by continuation along
#: the segment from it in steps of at most WARM_RADIUS_FRACTION of the hull
#: distance (at most PATH_MAX_STEPS accepted steps; otherwise, or when a step
#: halves below PATH_MIN_STEP of the segment, down its vertical line).
PATH_REACH = 4.0
PATH_MAX_STEPS = 24
PATH_MIN_STEP = 1e-3

#: Orders of the moment recursion supported (floating point; the recursion
#: works with polynomials of degree ~2k in the position variable).
MAX_MOMENT_ORDER = 12


# --------------------------------------------------------------------------- #
# Chebyshev panels on [0, 1/2]
# --------------------------------------------------------------------------- #

@lru_cache(maxsize=None)
def _chebyshev_unit(n):
    """Lobatto nodes on [0, 1] and the matrix of the integral from 0."""
    k = np.arange(n + 1)
    x = 0.5 * (1.0 - np.cos(np.pi * k / n))
    s = 2.0 * x - 1.0
    vander = np.polynomial.chebyshev.chebvander(s, n)
    integrals = np.empty((n + 1, n + 1))
    unit = np.eye(n + 1)
    for j in range(n + 1):
        antiderivative = np.polynomial.chebyshev.chebint(unit[j], lbnd=-1) * 0.5
        integrals[:, j] = np.polynomial.chebyshev.chebval(s, antiderivative)
    # integrals = J @ vander  ->  J = integrals @ inv(vander)
    jmat = np.linalg.solve(vander.T, integrals.T).T
    weights = (-1.0) ** k       # barycentric weights of Lobatto nodes
    weights[[0, -1]] *= 0.5
    return x, jmat, weights


@dataclass(frozen=True, eq=False)
class _Grid:
    """Composite Chebyshev grid (junction nodes shared); one object per (breaks, n)."""

    breaks: tuple
    n: int
    x: np.ndarray
    J: np.ndarray      # integral from 0 to x_i
    Jr: np.ndarray     # integral from x_i to 1/2
    w: np.ndarray      # quadrature weights on [0, 1/2]

    @property
    def size(self):
        return self.x.size

    def interpolate(self, values, other):
        """Values on ``other.x`` of the piecewise interpolant of ``values`` (last axis)."""
        if other is self:
            return values
        out = np.empty(values.shape[:-1] + (other.size,), dtype=values.dtype)
        xu, _, bw = _chebyshev_unit(self.n)
        for p in range(len(self.breaks) - 1):
            lo, hi = self.breaks[p], self.breaks[p + 1]
            if p == len(self.breaks) - 2:
                sel = (other.x >= lo)
            else:
                sel = (other.x >= lo) & (other.x < hi)
            if not sel.any():
                continue
            t = (other.x[sel] - lo) / (hi - lo)
            nodes = values[..., p * self.n:p * self.n + self.n + 1]
            diff = t[:, None] - xu[None, :]
            exact = diff == 0.0
            with np.errstate(divide="ignore", invalid="ignore"):
                c = bw[None, :] / diff
                res = (nodes @ c.T) / c.sum(axis=1)
            hit = exact.any(axis=1)
            if hit.any():
                res[..., hit] = nodes[..., np.argmax(exact[hit], axis=1)]
            out[..., sel] = res
        return out


@lru_cache(maxsize=256)
def _grid(breaks, n):
    xu, ju, _ = _chebyshev_unit(n)
    panels = len(breaks) - 1
    size = panels * n + 1
    x = np.empty(size)
    jmat = np.zeros((size, size))
    for p in range(panels):
        lo, hi = breaks[p], breaks[p + 1]
        idx = np.arange(p * n, p * n + n + 1)
        x[idx] = lo + (hi - lo) * xu
        jmat[np.ix_(idx, idx)] += (hi - lo) * ju
        if p > 0:
            jmat[idx[1:], :p * n + 1] += jmat[p * n, :p * n + 1][None, :]
    w = jmat[-1].copy()
    jr = w[None, :] - jmat
    for arr in (x, jmat, jr, w):
        arr.setflags(write=False)
    return _Grid(tuple(breaks), n, x, jmat, jr, w)


def _grid_for(kappa, n=None):
    """Grid resolving the boundary layer of width ~1/Re(1/kappa) at x = 0.

    With ``r = Re(1/kappa)`` rounded down to a power of 2 (so that nearby
    kappa share a cached grid): one panel ``[0, 1/2]`` of ``PANEL_NODES`` nodes
    while ``r <= LAYER_SINGLE_PANEL``; otherwise break points at
    ``LAYER_BREAKS / r`` (those below 0.4) with ``LAYER_PANEL_NODES`` nodes per
    panel, on which ``exp(-r x)`` varies by at most ``e**33`` per panel.
    """
    r = float(np.real(1.0 / kappa))
    if not r > LAYER_SINGLE_PANEL:
        return _grid((0.0, 0.5), n or PANEL_NODES)
    r = 2.0 ** np.floor(np.log2(r))
    inner = tuple(c / r for c in LAYER_BREAKS if c / r < 0.4)
    return _grid((0.0,) + inner + (0.5,), n or LAYER_PANEL_NODES)


# --------------------------------------------------------------------------- #
# The boundary-value problem, theory eqs. (10.10)-(10.12)
# --------------------------------------------------------------------------- #

def _rows_times(rows, mat_t):
    """``rows @ mat_t`` for a batch of rows ``(P, M)`` as ``P`` stacked ``1 x M`` products.

    numpy hands a 2-d ``(P, M) x (M, M)`` product to OpenBLAS's threaded gemm;
    on the project's shared 2-core machine that was 20-150x slower than the
    stacked form, which runs one small single-threaded product per row
    (benchmarks/RESULTS.md, causal section).
    """
    return np.matmul(rows[:, None, :], mat_t)[:, 0, :]


def _left_times(mat, x):
    """``mat @ x[p]`` for a batch ``x`` of shape ``(P, M, K)``, as stacked ``1 x M`` row
    products (single-threaded; see :func:`_rows_times`): measured 0.02 ms instead
    of 11 ms for one ``49 x 49`` complex product under load."""
    rows = np.swapaxes(x, 1, 2)[..., None, :]
    return np.swapaxes(np.matmul(rows, mat.T)[..., 0, :], 1, 2)


def _wrap_imag(v):
    """``v`` with its imaginary part reduced to ``(-pi, pi]`` (a log residual)."""
    return v.real + 1j * (np.pi - np.mod(np.pi - v.imag, 2.0 * np.pi))


class _State:
    """Solution quantities of one batch of points (all arrays, batch first)."""

    __slots__ = ("sig", "kap", "psi", "a", "b", "R", "dR_s", "dR_k", "dpsih_s", "dpsih_k",
                 "Fm", "Erho")


class _ChordNewton(SystemProblem):
    """The system of :class:`_System` at points ``log(-z)`` as a
    :class:`~freeattn.compose._fixed_point.SystemProblem` solved by chord steps.

    The unknowns of a point are ``(sigma at the nodes, kappa)``, a column of
    ``w``; the points passed to :func:`~freeattn.compose._fixed_point.newton_system`
    are their indices, under which the problem keeps the inverted Jacobian, whether
    it is fresh, the last step's size and the steps taken.
    """

    def __init__(self, system, log_mz, grid):
        self.system = system
        self.log_mz = log_mz
        self.grid = grid
        P, M = log_mz.size, grid.size
        self.jinv = np.full((P, M + 1, M + 1), np.nan, dtype=complex)
        self.need = np.ones(P, dtype=bool)        # recompute the Jacobian
        self.fresh = np.zeros(P, dtype=bool)      # the last step used a fresh one
        self.prev = np.full(P, np.nan)            # no contraction estimate before two steps
        self.its = np.zeros(P, dtype=int)

    def evaluate(self, w, idx):
        M = self.grid.size
        sig, kap = w[:M].T, w[M]
        f = np.empty(w.shape, dtype=complex)
        redo = self.need[idx]
        for part, jac in ((redo, True), (~redo, False)):
            if not part.any():
                continue
            sel = idx[part]
            st = self.system.evaluate(sig[part], kap[part], self.grid, jac=jac)
            if jac:
                jm = np.empty((sel.size, M + 1, M + 1), complex)
                jm[:, :M, :M] = st.dR_s
                jm[:, :M, M] = st.dR_k
                jm[:, M, :M] = -2.0 * st.dpsih_s
                jm[:, M, M] = 1.0 / st.kap - 2.0 * st.dpsih_k
                with np.errstate(all="ignore"):
                    try:
                        self.jinv[sel] = np.linalg.inv(jm)
                    except np.linalg.LinAlgError:
                        self.jinv[sel] = np.nan
            bc = _wrap_imag(np.log(st.kap) - 2.0 * st.psi[:, -1] - self.log_mz[sel])
            f[:M, part], f[M, part] = st.R.T, bc
            self.fresh[sel] = jac
        with np.errstate(all="ignore"):
            step = np.einsum("pij,jp->ip", self.jinv[idx], f)
        return f, step, (np.maximum(1.0, np.abs(self.log_mz[idx])),)

    def error(self, f, w, extra):
        return np.maximum(np.max(np.abs(f[:-1]), axis=0), np.abs(f[-1]) / extra[0])

    def step_size(self, step, w, idx):
        """The size of the step, or 0 where the extrapolation of the last two steps
        (quadratic after a fresh Jacobian, geometric after a chord step) leaves an
        error below ``NEWTON_STEP_TOL``; records the contraction."""
        size = np.maximum(np.max(np.abs(step[:-1]), axis=0), np.abs(step[-1]) / np.abs(w[-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = size / self.prev[idx]
            left = np.where(self.fresh[idx], size * ratio ** 2, size * ratio / (1.0 - ratio))
        done = (size < NEWTON_QUADRATIC_MAX) & (left >= 0) & (left < NEWTON_STEP_TOL)
        self.need[idx] = ratio >= CHORD_MIN_CONTRACTION      # NaN (first step): keep
        self.prev[idx] = size
        self.its[idx] += 1
        return np.where(done, 0.0, size)


class _System:
    """The half-interval collocation of theory eq. (10.11) for given (a2, b2, gamma).

    Unknowns: ``sigma`` at the grid nodes and ``kappa``.  Given them,
    ``psi = (1/kappa) int_0^x (a2 + 2 b2 sigma)``; ``a`` and ``b`` solve the
    linear equations ``a' = -psi' a + 1/kappa``, ``a(0) = 0`` and
    ``b' = psi' b - 1/kappa``, ``b(1/2) = a(1/2)``; the residual is the
    integrated sigma equation
    ``R = sigma - 1/2 + (1/gamma) int_0^x (e^-psi - rho e^psi + a2 (a - b))``
    with ``rho = exp(-2 psi(1/2))``.  The boundary condition
    ``kappa exp(-2 psi(1/2)) = -z`` closes the system.
    """

    def __init__(self, a2, b2, gamma):
        self.a2 = float(a2)
        self.b2 = float(b2)
        self.gamma = float(gamma)

    @single_threaded
    def evaluate(self, sig, kap, grid, jac=True):
        """Residual (and Jacobian) at a batch: ``sig`` (P, M), ``kap`` (P,).

        The two linear equations for ``a`` and ``b`` are solved with their
        Jacobian right-hand sides in one batched LU solve each (numpy's LAPACK;
        scipy's ``lu_solve`` with its threaded triangular solves was ~100x
        slower on these 25-100 sized systems on two cores), and the
        integration of the Jacobian is one large matrix product.
        """
        a2, b2, gamma = self.a2, self.b2, self.gamma
        J, Jr, x = grid.J, grid.Jr, grid.x
        M = grid.size
        P = sig.shape[0]
        eye = np.eye(M)
        kap = np.asarray(kap)
        kc = kap[:, None]
        f = a2 + 2.0 * b2 * sig
        psi = _rows_times(f, J.T) / kc
        dpsi = f / kc
        psih = psi[:, -1:]
        with np.errstate(over="ignore", under="ignore"):
            Erho = np.exp(psi - 2.0 * psih)
            Fm = np.exp(-psi)
        ma = eye + J[None] * dpsi[:, None, :]
        mb = eye + Jr[None] * dpsi[:, None, :]
        if jac:
            rhs_a = np.broadcast_to(np.column_stack([x, J]), (P, M, M + 1))
            rhs_b = np.broadcast_to(np.column_stack([np.ones(M), 0.5 - x, Jr]), (P, M, M + 2))
        else:
            rhs_a = np.broadcast_to(x[:, None], (P, M, 1))
            rhs_b = np.broadcast_to(np.column_stack([np.ones(M), 0.5 - x]), (P, M, 2))
        xa = np.linalg.solve(ma, rhs_a)
        xb = np.linalg.solve(mb, rhs_b)
        a = xa[:, :, 0] / kc
        b = xb[:, :, 0] * a[:, -1:] + xb[:, :, 1] / kc
        src = Fm - Erho + a2 * (a - b)
        st = _State()
        st.sig, st.kap, st.psi, st.a, st.b, st.Fm, st.Erho = sig, kap, psi, a, b, Fm, Erho
        st.R = sig - 0.5 + _rows_times(src, J.T) / gamma
        if not jac:
            return st
        c = (2.0 * b2 / kap)[:, None, None]
        inv_a_J = xa[:, :, 1:]                    # Ma^-1 J
        inv_b_1, inv_b_x, inv_b_Jr = xb[:, :, 0], xb[:, :, 1], xb[:, :, 2:]
        ddpsi_k = -dpsi / kc                      # d psi'/d kappa (d psi'_i/d sigma_j = c delta_ij)
        dpsi_k = -psi / kc
        # a: Ma da = -J diag(a) d(psi') - x d(kappa)/kappa^2
        da_s = -c * inv_a_J * a[:, None, :]
        da_k = -np.einsum("pij,pj->pi", inv_a_J, a * ddpsi_k) - a / kc
        # b: Mb db = da(1/2) 1 - Jr diag(b) d(psi') - (1/2 - x) d(kappa)/kappa^2
        db_s = inv_b_1[:, :, None] * da_s[:, -1:, :] - c * inv_b_Jr * b[:, None, :]
        db_k = (inv_b_1 * da_k[:, -1:] - np.einsum("pij,pj->pi", inv_b_Jr, b * ddpsi_k)
                - inv_b_x / kc ** 2)
        # source: d(e^-psi) = -e^-psi d psi, d(rho e^psi) = rho e^psi (d psi - 2 d psi(1/2))
        fe = (Fm + Erho)[:, :, None]
        dsrc_s = (-fe * (c * J[None]) + 2.0 * (c * Erho[:, :, None]) * J[-1][None, None, :]
                  + a2 * (da_s - db_s))
        dsrc_k = (-(Fm + Erho) * dpsi_k + 2.0 * Erho * dpsi_k[:, -1:] + a2 * (da_k - db_k))
        # dR_s = I + J dsrc_s / gamma, P stacked (M x M) products (single-threaded,
        # see _rows_times)
        dR_s = _left_times(J, dsrc_s)
        dR_s /= gamma
        dR_s += eye
        st.dR_s = dR_s
        st.dR_k = _rows_times(dsrc_k, J.T) / gamma
        st.dpsih_s = np.broadcast_to((2.0 * b2 / kc) * J[-1][None, :], (P, M))
        st.dpsih_k = dpsi_k[:, -1]
        return st

    # -- Newton at given z (through log(-z)) ----------------------------------

    @single_threaded
    def newton(self, log_mz, sig, kap, grid, max_iter=NEWTON_MAX_ITER):
        """Newton's method on (sigma, kappa) for a batch of points.

        The shared strategy :func:`freeattn.compose._fixed_point.newton_system`
        with the chord steps of :class:`_ChordNewton`: the Jacobian (the
        expensive part) is inverted at the first iterate and reused while
        successive steps shrink by at least ``CHORD_MIN_CONTRACTION``; otherwise
        it is recomputed.  Returns ``(state, converged, iterations, residual)``;
        ``converged`` means the step fell below ``NEWTON_STEP_TOL`` (or the
        quadratic/linear extrapolation of the remaining error did) and the final
        residual is below ``RESIDUAL_TOL``.  The boundary condition is used in
        the form ``log(kappa) - 2 psi(1/2) - log(-z) = 0`` (imaginary part
        modulo ``2 pi``), which stays O(1) for ``|z|`` down to ``exp(-800)``.
        """
        sig = np.array(sig, dtype=complex)
        kap = np.array(kap, dtype=complex)
        log_mz = np.asarray(log_mz, dtype=complex)
        P, M = sig.shape
        chord = _ChordNewton(self, log_mz, grid)
        w0 = np.concatenate([sig.T, kap[None, :]])
        # rtol 0: in the loop a point converges by its (extrapolated) step only; the
        # residual is tested once, after it (RESIDUAL_TOL, RESIDUAL_ROUNDING)
        result = newton_system(chord, np.arange(P), w0, max_iter, 0.0,
                               step_rtol=NEWTON_STEP_TOL)
        sig, kap = result.value[:M].T, result.value[M]
        st = self.evaluate(sig, kap, grid, jac=False)
        bc = _wrap_imag(np.log(st.kap) - 2.0 * st.psi[:, -1] - log_mz)
        # the boundary condition balances terms of size |log z|: relative to that
        res = np.maximum(np.max(np.abs(st.R), axis=1), np.abs(bc) / np.maximum(1.0, np.abs(log_mz)))
        # next to an edge the Jacobian is nearly singular and the steps can stagnate
        # at rounding level above NEWTON_STEP_TOL: a residual at rounding level is then
        # as converged as the data allow
        conv = ((result.converged | (res < RESIDUAL_ROUNDING)) & (res < RESIDUAL_TOL)
                & np.isfinite(res))
        return st, conv, chord.its, res

    # -- real branch at given kappa --------------------------------------------

    @single_threaded
    def real_branch(self, kap, sig, grid, max_iter=NEWTON_MAX_ITER):
        """Real solution at real ``kappa``: returns ``(sig, lam, dlam_dkap, dsig_dkap)`` or None.

        ``lam = -kappa exp(-2 psi(1/2))`` is the real ``z`` of the solution
        (theory eq. (10.17)); its derivative comes from the implicit function
        theorem.
        """
        sig = np.array(sig, dtype=float)[None]
        kv = np.array([float(kap)])
        prev = np.inf
        for it in range(max_iter):
            st = self.evaluate(sig, kv, grid)
            nr = float(np.max(np.abs(st.R)))
            if not np.isfinite(nr) or (it > 3 and nr > prev):
                return None
            prev = nr
            try:
                step = np.linalg.solve(st.dR_s[0], -st.R[0])
            except np.linalg.LinAlgError:
                return None
            sig[0] += step
            if np.max(np.abs(step)) < NEWTON_STEP_TOL:
                break
        else:
            return None
        st = self.evaluate(sig, kv, grid)
        if not np.max(np.abs(st.R)) < RESIDUAL_TOL:
            return None
        dsig = np.linalg.solve(st.dR_s[0], -st.dR_k[0])
        dpsih = st.dpsih_k[0] + st.dpsih_s[0] @ dsig
        e2 = np.exp(-2.0 * st.psi[0, -1])
        lam = -kv[0] * e2
        dlam = -e2 + 2.0 * kv[0] * e2 * dpsih
        return sig[0], float(lam), float(dlam), dsig


# --------------------------------------------------------------------------- #
# Real branch, edges (theory eq. (10.17)) and continuation along the axis
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class _Fold:
    """A critical point of the real branch: an edge of the support."""

    edge: float          # lambda at the critical point (units of theta1)
    kappa: float
    sigma: np.ndarray
    dsigma: np.ndarray   # d sigma / d kappa along the real branch
    curvature: float     # d^2 lambda / d kappa^2
    grid: _Grid


def _polyfit_predict(ps, values, p):
    """Lagrange extrapolation of ``values`` (list of arrays) at ``p`` from nodes ``ps``."""
    out = 0.0
    for i, (pi, vi) in enumerate(zip(ps, values)):
        li = 1.0
        for j, pj in enumerate(ps):
            if j != i:
                li *= (p - pj) / (pi - pj)
        out = out + li * vi
    return out


@dataclass
class _AtlasPoint:
    lam: float           # units of theta1
    log_lam: float
    sigma: np.ndarray
    kappa: complex
    grid: _Grid


def _dt_kappa(log_mz):
    """``kappa = 1/T``, ``T e^T = -1/z``: the Dykema-Haagerup solution (eq. (10.14)).

    ``log_mz = log(-z)``; the principal branch of Lambert's W is the one that
    behaves as ``-1/z`` at infinity.
    """
    log_arg = -np.asarray(log_mz, dtype=complex)          # log(-1/z)
    if np.all(log_arg.real < LAMBERT_LOG_DIRECT):
        return 1.0 / scipy.special.lambertw(np.exp(log_arg), 0)
    # |-1/z| beyond the float range: solve T + log T = log(-1/z) by Newton
    # from T = L - log L (the principal branch for large |L|)
    T = log_arg - np.log(log_arg)
    for _ in range(LAMBERT_NEWTON_STEPS):
        T = T - (T + np.log(T) - log_arg) / (1.0 + 1.0 / T)
    return 1.0 / T


def _admissible(psi, kap, log_mz):
    """Whether a solution is the Stieltjes branch: ``Im t >= 0`` and ``Im(-omega/z) >= 0``.

    ``t(x) = e^psi/kappa`` and ``-omega(x)/z = -e^-psi/z`` are diagonal entries
    of resolvents of ``Y^T Y`` and ``Y Y^T`` (theory eq. (10.5)), so their
    imaginary parts are >= 0 for ``Im z >= 0`` (on ``[1/2, 1]`` the symmetry
    eq. (10.11) maps one onto the other).  Other solutions of the
    collocation equations violate this by O(1) somewhere.
    """
    arg_t = np.imag(psi) - np.angle(kap)
    arg_w = -np.imag(psi) - np.imag(log_mz)          # arg(e^-psi/(-z))
    return bool(np.all(np.sin(arg_t) >= -ADMISSIBLE_TOL) and np.all(np.sin(arg_w) >= -ADMISSIBLE_TOL))


class _Solver:
    """Edges, support and an atlas of solutions along the real axis for one law."""

    def __init__(self, a2, b2, gamma):
        self.system = _System(a2, b2, gamma)
        self.a2, self.b2, self.gamma = float(a2), float(b2), float(gamma)
        # nodes of a single panel: sigma varies more for small gamma (its
        # equation carries 1/gamma), measured in tests/test_causal.py
        self.nodes = PANEL_NODES if self.gamma >= SMALL_GAMMA else PANEL_NODES_SMALL_GAMMA
        self._folds = None
        self._atlas = None
        self._warm = []                    # (w, sigma, kappa, grid) of solved points
        self._warm_w = np.empty(0, complex)

    # -- real branch ------------------------------------------------------------

    def _real_at_s(self, s, start):
        """Real solution at ``kappa = -1/s`` warm-started from ``start = (s0, sig0, dsig0)``."""
        s0, sig0, dsig0 = start
        kap = -1.0 / s
        guess = sig0 + dsig0 * (kap + 1.0 / s0)
        return self.system.real_branch(kap, guess, self.grid_for(kap))

    def _fold_from_bracket(self, lo, hi, start):
        cache = {}

        def dlam(s):
            out = self._real_at_s(s, start)
            if out is None:
                raise ConvergenceError(
                    f"real branch lost at kappa={-1 / s!r} while locating an edge "
                    f"(a2={self.a2}, b2={self.b2}, gamma={self.gamma})", point=-1 / s)
            cache[s] = out
            return out[2]

        s_star = scipy.optimize.brentq(dlam, lo, hi, xtol=EDGE_XTOL * hi, rtol=4 * np.finfo(float).eps)
        sig, lam, _, dsig = cache.get(s_star) or self._real_at_s(s_star, start)
        kap = -1.0 / s_star
        h = 1e-4 * abs(kap)
        plus = self.system.real_branch(kap + h, sig + dsig * h, self.grid_for(kap))
        minus = self.system.real_branch(kap - h, sig - dsig * h, self.grid_for(kap))
        if plus is None or minus is None:
            raise ConvergenceError(f"no real branch next to the edge at kappa={kap!r}", point=kap)
        curvature = (plus[2] - minus[2]) / (2.0 * h)
        return _Fold(lam, kap, sig, dsig, curvature, self.grid_for(kap))

    def top_fold(self):
        """The upper edge: first critical point of lambda(kappa) on the branch from -infinity."""
        if self._folds is not None:
            return self._folds[0]
        s = TRACE_S0
        grid = self.grid_for(-1.0 / s)
        out = self.system.real_branch(-1.0 / s, np.full(grid.size, 0.5), grid)
        if out is None:
            raise ConvergenceError(f"no real solution at kappa={-1 / s} (far outside the support)")
        start = (s, out[0], out[3])
        step = TRACE_STEP0
        while True:
            nxt = self._real_at_s(s + step, start)
            if nxt is None or abs(step / (s + step)) > CONT_MAX_KAPPA_CHANGE and step > 1e-6:
                if nxt is None or step > CONT_MAX_KAPPA_CHANGE * s:
                    step /= 2.0
                    if step < CONT_MIN_STEP:
                        raise ConvergenceError(
                            f"real-branch continuation stalled at kappa={-1 / s!r} "
                            f"(a2={self.a2}, b2={self.b2}, gamma={self.gamma})", point=-1 / s)
                    continue
            if nxt[2] > 0.0:     # dlam/dkappa changed sign: bracket [s, s + step]
                fold = self._fold_from_bracket(s, s + step, start)
                self._folds = [fold]
                return fold
            s += step
            start = (s, nxt[0], nxt[3])
            step = min(1.5 * step, TRACE_MAX_STEP)

    # -- continuation inside the support ------------------------------------------

    def _newton_one(self, log_mz, sig, kap, grid, max_iter=CONT_MAX_NEWTON):
        """Newton at one point (:meth:`_newton_batch` of one)."""
        sig, kap, ok, its = self._newton_batch(np.array([log_mz]), sig[None], np.array([kap]),
                                               grid, max_iter)
        return sig[0], complex(kap[0]), bool(ok[0]), int(its[0])

    def _newton_batch(self, log_mz, sig, kap, grid, max_iter=CONT_MAX_NEWTON):
        """Newton at a batch of points on one grid.  On the real axis
        (``Im log(-z) = -pi``) the equations are real, so the conjugate of a
        solution is a solution; the boundary value from above has
        ``Im kappa < 0`` (``Im t > 0``, theory section 10.5), and a solution
        found with ``Im kappa > 0`` is conjugated.  Returns
        ``(sigma, kappa, ok, iterations)``, ``ok`` = converged and admissible."""
        st, conv, its, res = self.system.newton(log_mz, sig, kap, grid, max_iter=max_iter)
        sig, kap, psi = st.sig.copy(), st.kap.copy(), st.psi.copy()
        flip = (kap.imag > 0) & (np.abs(np.imag(log_mz) + np.pi) < 1e-12)
        sig[flip], kap[flip], psi[flip] = sig[flip].conj(), kap[flip].conj(), psi[flip].conj()
        ok = np.array([bool(c) and _admissible(p, k, lm)
                       for c, p, k, lm in zip(conv, psi, kap, log_mz)], dtype=bool)
        return sig, kap, ok, its

    def _sweep(self, points, lam_of_p, p_end, step0, step_max, step_frac=0.0):
        """Continue the solution from ``points`` (list of _AtlasPoint, last = current,
        each with attribute ``p``) in the sweep variable ``p`` towards ``p_end``.

        Returns ``(points, collapsed)``; ``collapsed`` is the first real (gap)
        solution met, as ``(p, sigma, kappa, grid)``, or None.
        """
        step = step0
        direction = np.sign(p_end - points[-1].p)
        while direction * (p_end - points[-1].p) > 0:
            last = points[-1]
            p = last.p + direction * min(step, abs(p_end - last.p))
            lam, log_lam = lam_of_p(p)
            grid = self.grid_for(last.kappa)
            recent = points[-3:]
            ps = [q.p for q in recent]
            kap0 = _polyfit_predict(ps, [q.kappa for q in recent], p)
            sig0 = _polyfit_predict(ps, [q.grid.interpolate(q.sigma, grid) for q in recent], p)
            sig, kap, ok, its = self._newton_one(log_lam - 1j * np.pi, sig0, kap0, grid)
            change = abs(kap - last.kappa) / abs(last.kappa)
            near_axis = abs(last.kappa.imag) <= NEAR_EDGE_IMAG_RTOL * abs(last.kappa)
            if not ok or change > CONT_MAX_KAPPA_CHANGE or not kap.imag < 0.0 or \
                    abs(kap.imag) <= COLLAPSE_IMAG_RTOL * abs(kap):
                step /= 2.0
                if step < NEAR_EDGE_MIN_STEP * max(1.0, abs(p)) and near_axis:
                    # the branch is about to meet its conjugate: an edge of a gap
                    return points, (last.p, last.sigma, last.kappa, last.grid)
                if step < CONT_MIN_STEP * max(1.0, abs(p)):
                    raise ConvergenceError(
                        f"continuation along the real axis stalled at lambda={lam!r} (units of "
                        f"theta1; a2={self.a2}, b2={self.b2}, gamma={self.gamma}): last Newton "
                        f"converged={ok} after {its} iterations, kappa={kap!r}",
                        point=lam, iterations=its)
                continue
            pt = _AtlasPoint(lam, log_lam, sig, kap, grid)
            pt.p = p
            points.append(pt)
            if its <= 4:
                step = min(1.5 * step, max(step_max, step_frac * abs(p)))
        return points, None

    def _fold_near(self, kap, sig):
        """Critical point of the real branch next to a collapsed (real) solution."""
        grid = self.grid_for(kap)
        out = self.system.real_branch(kap, np.real(sig), grid)
        if out is None:
            raise ConvergenceError(f"no real solution at the gap point kappa={kap!r}", point=kap)
        s = -1.0 / kap
        start = (s, out[0], out[3])
        # walk in s until dlam/dkappa changes sign; the collapse point is within a
        # relative ~COLLAPSE_IMAG_RTOL**(1/2) of the fold, so a small step suffices
        d0 = out[2]
        h = 1e-4 * abs(s)
        for direction in (1.0, -1.0):
            for k in range(40):
                nxt = self._real_at_s(s + direction * h * 1.5 ** k, start)
                if nxt is None:
                    break
                if np.sign(nxt[2]) != np.sign(d0):
                    lo, hi = sorted((s + direction * h * 1.5 ** (k - 1) if k else s,
                                     s + direction * h * 1.5 ** k))
                    return self._fold_from_bracket(lo, hi, start)
        raise ConvergenceError(f"no edge found next to the real solution at kappa={kap!r}",
                               point=kap)

    def _start_at_fold(self, fold, lam):
        """Complex solution at ``lam`` just inside the support next to ``fold``."""
        dk = -1j * np.sqrt(2.0 * abs(lam - fold.edge) / abs(fold.curvature))
        kap0 = fold.kappa + dk
        sig0 = fold.sigma + fold.dsigma * dk
        sig, kap, ok, its = self._newton_one(np.log(lam) - 1j * np.pi, sig0, kap0, fold.grid,
                                             max_iter=NEWTON_MAX_ITER)
        if not ok or not kap.imag < 0:
            raise ConvergenceError(f"could not enter the support at lambda={lam!r} next to the "
                                   f"edge {fold.edge!r} (kappa={kap!r})", point=lam)
        return _AtlasPoint(lam, float(np.log(lam)), sig, kap, fold.grid)

    def _start_at_bottom(self, log_lam):
        """Complex solution at tiny ``lambda = exp(log_lam)`` from the layer expansion (eq. (10.18))."""
        log_mz = log_lam - 1j * np.pi
        sig0, kap0, grid = self.layer_guess(log_lam)
        sig, kap, ok, its = self._newton_one(log_mz, sig0, kap0, grid, max_iter=NEWTON_MAX_ITER)
        if not ok or not kap.imag < 0:
            raise ConvergenceError(f"no solution at lambda=exp({log_lam}) from the small-lambda "
                                   f"start (kappa={kap!r})", point=log_lam)
        return _AtlasPoint(float(np.exp(log_lam)), float(log_lam), sig, kap, grid)

    def layer_guess(self, log_lam):
        """Starting guess at tiny ``lambda = exp(log_lam)`` from the layer expansion, eq. (10.18).

        ``kappa`` solves ``kappa e^{-1/kappa} = -lambda e^{-2 b2^2/gamma}``
        (Lambert's W in log form) and ``sigma = 1/2 - (kappa b2/gamma)(1 - e^{-x/kappa})``.
        """
        shift = 2.0 * self.b2 ** 2 / self.gamma
        kap0 = complex(_dt_kappa(log_lam - shift - 1j * np.pi))
        if kap0.imag > 0:
            kap0 = kap0.conjugate()
        grid = self.grid_for(kap0)
        with np.errstate(over="ignore", under="ignore"):
            sig0 = 0.5 - (kap0 * self.b2 / self.gamma) * (1.0 - np.exp(-grid.x / kap0))
        return sig0, kap0, grid

    def grid_for(self, kappa):
        """The grid of this law for a solution with this kappa (see _grid_for)."""
        r = float(np.real(1.0 / kappa))
        return _grid_for(kappa, self.nodes if not r > LAYER_SINGLE_PANEL else None)

    def points(self):
        """Atlas points sorted by lambda."""
        return self.build()[1]

    def intervals(self):
        """Support intervals in units of theta1."""
        return self.build()[0]

    def piece_of(self, lam):
        """Index of the support interval containing ``lam`` (-1 if none)."""
        for k, (lo, hi) in enumerate(self.intervals()):
            if lo <= lam <= hi:
                return k
        return -1

    def atlas_log_min(self):
        return self.points()[0].log_lam

    def extend_down(self, log_target):
        """Continue the atlas below its lowest point down to ``exp(log_target)``."""
        pts = self.points()
        start = pts[0]
        first = _AtlasPoint(start.lam, start.log_lam, start.sigma, start.kappa, start.grid)
        first.p = start.log_lam
        new, collapsed = self._sweep([first], lambda p: (float(np.exp(p)), p), log_target,
                                     0.5, 0.5, 0.15)
        if collapsed is not None:
            raise ConvergenceError(f"the support ended below lambda=exp({start.log_lam}) "
                                   f"(units of theta1) while continuing towards 0")
        self._atlas = (self._atlas[0], sorted(new[1:] + pts, key=lambda q: q.lam))

    def continue_to(self, start, log_target):
        """Solution at ``exp(log_target)`` by continuation in log(lambda) from atlas point ``start``."""
        first = _AtlasPoint(start.lam, start.log_lam, start.sigma, start.kappa, start.grid)
        first.p = start.log_lam
        new, collapsed = self._sweep([first], lambda p: (float(np.exp(p)), p), log_target,
                                     1e-3, 0.5, 0.15)
        if collapsed is not None or abs(new[-1].log_lam - log_target) > 1e-12 * max(1.0, abs(log_target)):
            raise ConvergenceError(f"continuation to lambda=exp({log_target}) (units of theta1) "
                                   f"met an edge", point=log_target)
        last = new[-1]
        return last.sigma, last.kappa, last.grid

    def gap_mass(self):
        """``F`` on the gap of a split support: ``1 - k gamma`` exactly (theory eq. (10.19)).

        On the gap all quantities are real and ``Im Phi = pi (1 - F)`` comes
        only from the winding of the Gelfand-Yaglom solution, in steps of
        ``gamma pi``.  ``k`` is read off ``F`` evaluated just inside the upper
        interval, at a relative offset ``GAP_MASS_OFFSET`` above its lower edge
        (the mass left out is ~offset**1.5 ~ 1e-6); a value not within
        ``GAP_MASS_TOL`` of a multiple of ``gamma`` raises.
        """
        intervals = self.intervals()
        if len(intervals) < 2:
            raise ValueError("the support has no gap")
        lam = intervals[1][0] * (1.0 + GAP_MASS_OFFSET)
        (idx, st, grid), = [g for g in _solver_points(self, np.array([np.log(lam)])) if g[0].size]
        phi = _log_potential(self.system, st, grid, np.array([np.log(lam) - 1j * np.pi]))
        upper = float(phi[0].imag / np.pi)
        k = round(upper / self.gamma)
        if not (k >= 1 and abs(upper - k * self.gamma) < GAP_MASS_TOL):
            raise ConvergenceError(f"mass above the gap {upper!r} is not a multiple of "
                                   f"gamma={self.gamma} (tolerance {GAP_MASS_TOL})",
                                   residual=abs(upper - k * self.gamma), tolerance=GAP_MASS_TOL)
        return 1.0 - k * self.gamma

    def tiny_cdf(self, log_lam):
        """Leading asymptotics of F below exp(LOG_LAMBDA_MIN) (theory eq. (10.18))."""
        shift = 2.0 * self.b2 ** 2 / self.gamma
        kap = _dt_kappa(np.asarray(log_lam) - shift - 1j * np.pi)
        kap = np.where(kap.imag > 0, kap.conj(), kap)
        c1 = 1.0 + self.b2 ** 2 / self.gamma
        return 1.0 - (np.angle(-kap) + c1 * kap.imag) / np.pi

    def build(self):
        """Atlas of solutions along the support and its intervals; cached."""
        if self._atlas is not None:
            return self._atlas
        top = self.top_fold()
        e = top.edge
        u0 = 1e-3
        first = self._start_at_fold(top, e * (1.0 - u0 ** 2))
        first.p = u0
        u1 = np.sqrt(0.75)

        def lam_u(p):
            lam = e * (1.0 - p * p)
            return lam, float(np.log(lam))

        def lam_log(p):
            return float(np.exp(-p)), -p

        pts, collapsed = self._sweep([first], lam_u, u1, 2e-3, 0.05)
        if collapsed is None:
            for q in pts[-3:]:
                q.p = -q.log_lam
            pts, collapsed = self._sweep(pts, lam_log, -ATLAS_LOG_MIN, 0.05, 0.5, 0.15)
        intervals = []
        upper = pts
        lower = []
        if collapsed is not None:
            gap_hi = self._fold_near(collapsed[2].real, collapsed[1])
            bottom = None
            for start in BOTTOM_LOG_STARTS:
                try:
                    bottom = self._start_at_bottom(start)
                    break
                except ConvergenceError:
                    continue
            if bottom is None:
                raise ConvergenceError(f"no admissible small-lambda start at log(lambda) in "
                                       f"{BOTTOM_LOG_STARTS} (a2={self.a2}, b2={self.b2}, "
                                       f"gamma={self.gamma})")
            bottom.p = bottom.log_lam
            lower, collapsed2 = self._sweep([bottom], lambda p: (float(np.exp(p)), p),
                                            np.log(gap_hi.edge), 0.5, 0.5, 0.15)
            if collapsed2 is None:
                raise ConvergenceError(
                    f"the continuation from below crossed the gap below {gap_hi.edge!r} "
                    f"without meeting an edge (a2={self.a2}, b2={self.b2}, gamma={self.gamma})")
            gap_lo = self._fold_near(collapsed2[2].real, collapsed2[1])
            if not gap_lo.edge < gap_hi.edge:
                raise ConvergenceError(f"inconsistent gap edges {gap_lo.edge!r} >= {gap_hi.edge!r}")
            intervals = [(0.0, gap_lo.edge), (gap_hi.edge, e)]
            self._folds = [top, gap_hi, gap_lo]
        else:
            intervals = [(0.0, e)]
        points = sorted(upper + lower, key=lambda q: q.lam)
        self._atlas = (tuple(intervals), points)
        return self._atlas


def _observables(system, st, log_z):
    """``G(z)`` and the logarithmic potential ``Phi(z)`` from a solved state.

    ``G = kappa b(0)/z`` (theory eq. (10.12)) and
    ``Phi = log(-kappa) + kappa b(0) - 1 + int_0^{1/2} (2 - e^-psi - rho e^psi - a2 (a + b))
    (1 - 2 sigma)/(1 + 2 sigma) dx`` (eq. (10.13)), with ``log z`` given so that
    ``|z|`` may be far below the float range.
    """
    a2 = system.a2
    kap = st.kap
    b0 = st.b[:, 0]
    g = kap * b0 * np.exp(-log_z)
    integrand = (2.0 - st.Fm - st.Erho - a2 * (st.a + st.b)) * (1.0 - 2.0 * st.sig) / (1.0 + 2.0 * st.sig)
    return g, integrand, b0


def _solve_vertical(solver, x, y, x_is_log=False):
    """Solution at ``z = x + i y`` (``y >= 0``) by continuation down the vertical line.

    Starts at ``x + i eta0`` (``eta0 = STIELTJES_ETA0 * max(|x|, edge)``) from the
    Dykema-Haagerup solution (accurate to O(1/|z|), eq. (10.14)) and lowers
    ``eta`` geometrically with adaptive steps (predictor: linear extrapolation
    in ``log eta``), finishing with ``eta = y`` (for ``y = 0`` the boundary
    value from above).  Returns ``(sigma, kappa, grid)``.
    """
    edge = solver.top_fold().edge
    eta0 = STIELTJES_ETA0 * max(abs(x), edge)
    if y >= eta0:
        eta0 = y
    z0 = x + 1j * eta0
    kap = complex(_dt_kappa(np.log(-z0)))
    grid = solver.grid_for(kap)
    sig = np.full(grid.size, 0.5 + 0j)
    sig, kap, ok, its = solver._newton_one(np.log(-z0), sig, kap, grid, max_iter=NEWTON_MAX_ITER)
    if not ok:
        raise ConvergenceError(f"no solution at the continuation start z={z0!r}", point=z0)
    hist = [(np.log(eta0), sig, kap, grid)]
    t = np.log(eta0)
    step = 0.3
    # below eta_floor the solution equals its boundary value to ~eps**(1/2); off the
    # hull [0, edge] the boundary value is reached within a fraction of the
    # distance to it (x = -5e-14, next to the log end, failed from eta = 1e-8)
    reach = max(1.0, abs(x))
    if x < 0 or x > edge:
        reach = min(reach, float(_hull_distance(x, edge)))
    t_floor = np.log(max(y, 1e-8 * reach))
    while t > t_floor:
        tn = max(t - step, t_floor)
        eta = np.exp(tn)
        zn = x + 1j * eta
        grid_n = solver.grid_for(hist[-1][2])
        if len(hist) >= 2:
            (t1, s1, k1, g1), (t2, s2, k2, g2) = hist[-2], hist[-1]
            w = (tn - t2) / (t2 - t1)
            kap0 = k2 + w * (k2 - k1)
            sig0 = g2.interpolate(s2, grid_n) + w * (g2.interpolate(s2, grid_n) - g1.interpolate(s1, grid_n))
        else:
            kap0, sig0 = hist[-1][2], hist[-1][3].interpolate(hist[-1][1], grid_n)
        sn, kn, ok, its = solver._newton_one(np.log(-zn), sig0, kap0, grid_n)
        if not ok or not kn.imag < 0 or abs(kn - hist[-1][2]) > CONT_MAX_KAPPA_CHANGE * abs(hist[-1][2]):
            step /= 2.0
            if step < 1e-6:
                raise ConvergenceError(f"continuation to z={x + 1j * y!r} stalled at eta={eta!r}",
                                       point=x + 1j * y)
            continue
        hist.append((tn, sn, kn, grid_n))
        t = tn
        if its <= 4:
            step = min(1.5 * step, 1.0)
    # final point
    log_mz = _log_minus(x, y)
    sig, kap, grid = hist[-1][1], hist[-1][2], hist[-1][3]
    sig, kap, ok, its = solver._newton_one(log_mz, sig, kap, grid, max_iter=NEWTON_MAX_ITER)
    if not ok:
        raise ConvergenceError(f"Newton failed at z={x + 1j * y!r} after continuation", point=x + 1j * y)
    return sig, kap, grid


def _log_minus(x, y):
    """``log(-z)`` at ``z = x + i y`` (``y >= 0``; on the axis the value from above)."""
    if y > 0:
        return np.log(-(x + 1j * y))
    return np.log(x) - 1j * np.pi if x > 0 else np.log(-x) + 0j


def _hull_distance(w, edge):
    """Distance from ``w`` to ``[0, edge]`` (a lower bound of its distance to the
    support), elementwise."""
    return np.abs(w - np.clip(np.real(w), 0.0, edge))


def _solve_warm(solver, ws):
    """Solutions at the points ``ws`` by Newton from remembered solutions.

    A point is started from its nearest remembered solution when it lies within
    ``WARM_RADIUS_FRACTION`` of the distance of both to the hull of the
    support; the points sharing a grid are solved in one batch, and a result
    is accepted only as the continuation accepts a step (converged, on the
    Stieltjes branch, ``kappa`` moved by at most ``CONT_MAX_KAPPA_CHANGE``).
    Returns ``(solved, failed, states)``: indices into ``ws`` solved, indices
    that were eligible but not accepted, and a dict index -> (sigma, kappa, grid).
    """
    states = {}
    if not solver._warm or not ws.size:
        return np.empty(0, int), np.empty(0, int), states
    edge = solver.top_fold().edge
    dist = np.abs(ws[:, None] - solver._warm_w[None, :])
    near = np.argmin(dist, axis=1)
    hull = _hull_distance(ws, edge)
    hull_c = _hull_distance(solver._warm_w, edge)[near]
    eligible = dist[np.arange(ws.size), near] <= WARM_RADIUS_FRACTION * np.minimum(hull, hull_c)
    groups = {}
    for i in np.flatnonzero(eligible):
        _, sig_c, kap_c, grid_c = solver._warm[near[i]]
        grid = solver.grid_for(kap_c)
        groups.setdefault((grid.breaks, grid.n), (grid, []))[1].append(
            (i, grid_c.interpolate(sig_c, grid), kap_c))
    failed = []
    for grid, items in groups.values():
        idx = np.array([it[0] for it in items])
        kap0 = np.array([it[2] for it in items], dtype=complex)
        log_mz = np.array([_log_minus(w.real, w.imag) for w in ws[idx]])
        sig, kap, ok, _ = solver._newton_batch(log_mz, np.array([it[1] for it in items]), kap0,
                                               grid, max_iter=NEWTON_MAX_ITER)
        ok &= np.abs(kap - kap0) <= CONT_MAX_KAPPA_CHANGE * np.abs(kap0)
        for j, i in enumerate(idx):
            if ok[j]:
                states[int(i)] = (sig[j], complex(kap[j]), grid)
            else:
                failed.append(int(i))
    solved = np.array(sorted(states), dtype=int)
    return solved, np.array(failed, dtype=int), states


def _solve_path(solver, w):
    """Solution at ``w`` (scaled units) by continuation along the segment from the
    nearest remembered solution, or None where that is out of reach.

    Each step moves by at most ``WARM_RADIUS_FRACTION`` of the hull distance at
    both of its ends (the warm-start condition of :func:`_solve_warm`, within
    which the solution is analytic and moves by a fraction of its size) and is
    accepted as the continuation accepts one: Newton converged on the Stieltjes
    branch (10.20), ``kappa`` moved by at most ``CONT_MAX_KAPPA_CHANGE``; a
    rejected step is halved.  Returns ``(sigma, kappa, grid)``.
    """
    if not solver._warm:
        return None
    edge = solver.top_fold().edge
    k = int(np.argmin(np.abs(solver._warm_w - w)))
    w0, sig, kap, grid = solver._warm[k]
    hull = float(_hull_distance(np.array([w]), edge)[0])
    if not (hull > 0 and abs(w - w0) <= PATH_REACH * hull):
        return None
    t, accepted = 0.0, 0
    cur = w0
    while t < 1.0:
        h_cur = float(_hull_distance(np.array([cur]), edge)[0])
        step = min(1.0 - t, WARM_RADIUS_FRACTION * h_cur / abs(w - w0))
        while True:
            tn = min(1.0, t + step)
            wn = w0 + tn * (w - w0) if tn < 1.0 else w
            h_next = float(_hull_distance(np.array([wn]), edge)[0])
            if abs(wn - cur) > WARM_RADIUS_FRACTION * h_next:
                # the hull distance is convex along the segment: it may dip between
                # the ends, and the step must stay within the radius at both of its
                step /= 2.0
                if step < PATH_MIN_STEP:
                    return None
                continue
            grid_n = solver.grid_for(kap)
            sn, kn, ok, _ = solver._newton_one(_log_minus(wn.real, wn.imag),
                                               grid.interpolate(sig, grid_n), kap, grid_n,
                                               max_iter=NEWTON_MAX_ITER)
            if ok and abs(kn - kap) <= CONT_MAX_KAPPA_CHANGE * abs(kap):
                break
            step /= 2.0
            if step < PATH_MIN_STEP:
                return None
        t, cur, sig, kap, grid = tn, wn, sn, kn, grid_n
        accepted += 1
        if accepted > PATH_MAX_STEPS and t < 1.0:
            return None
    return sig, kap, grid


def _remember(solver, w, sig, kap, grid):
    solver._warm.append((complex(w), sig, kap, grid))
    if len(solver._warm) > WARM_MEMORY:
        del solver._warm[0]
    solver._warm_w = np.array([p[0] for p in solver._warm], dtype=complex)


# --------------------------------------------------------------------------- #
# Observables: G, density, logarithmic potential (theory eqs. (10.12)-(10.13))
# --------------------------------------------------------------------------- #

@lru_cache(maxsize=256)
def _mirror(grid):
    """Grid on [0, 1]: ``grid`` and its mirror image (nodes ``x`` then ``1 - x``)."""
    breaks = grid.breaks + tuple(1.0 - b for b in reversed(grid.breaks[:-1]))
    full = _grid(breaks, grid.n)
    return full


@single_threaded
def _log_potential(system, st, grid, log_mz):
    """``Phi(z) = int log(z - x) dmu(x)`` from solved states (theory eq. (10.13)).

    ``Phi = log(-kappa) + kappa b(0) - 1 + gamma log g2(1) - int_0^1 omega beta^2 K2``,
    with ``g2`` the Gelfand-Yaglom solution of ``h1' = -psi' h1 + g2/kappa``,
    ``g2' = (b2/gamma) h1``, ``h1(0) = 0``, ``g2(0) = 1`` on ``[0, 1]`` (its log
    continued along x from ``log g2(0) = 0``), and
    ``omega beta^2 K2 = 1 - e^-psi - a2 a`` on ``[0, 1/2]`` (mirrored on ``[1/2, 1]``).
    """
    a2, b2, gamma = system.a2, system.b2, system.gamma
    full = _mirror(grid)
    kap = st.kap
    f = a2 + 2.0 * b2 * st.sig
    dpsi = f / kap[:, None]
    dpsi_full = np.concatenate([dpsi, dpsi[:, -2::-1]], axis=1)
    Jf = full.J
    c = b2 / gamma
    mat = (np.eye(full.size)[None] + Jf[None] * dpsi_full[:, None, :]
           - (c / kap)[:, None, None] * (Jf @ Jf)[None])
    h1 = np.linalg.solve(mat, (full.x[None] / kap[:, None])[:, :, None])[:, :, 0]
    g2 = 1.0 + c * _rows_times(h1, Jf.T)
    # continuous log along x: unwrap the phase of the interpolant of g2 on a
    # grid PHASE_REFINE times finer (g2 is smooth; its phase turns fast only
    # where g2 passes close to 0)
    fine = full.interpolate(g2, _grid(full.breaks, PHASE_REFINE * full.n))
    steps = np.angle(fine[:, 1:] / fine[:, :-1])
    if np.any(np.abs(steps) > PHASE_STEP_MAX):
        raise ConvergenceError(
            f"the Gelfand-Yaglom solution turns by {np.max(np.abs(steps)):.3g} rad between two "
            f"nodes (limit {PHASE_STEP_MAX}); its logarithm is ambiguous", point=np.exp(log_mz))
    log_g2 = np.log(np.abs(g2[:, -1])) + 1j * np.sum(steps, axis=1)
    integrand = 2.0 - st.Fm - st.Erho - a2 * (st.a + st.b)
    b0 = st.b[:, 0]
    return np.log(-kap) + kap * b0 - 1.0 + gamma * log_g2 - integrand @ grid.w


def _stieltjes_from_state(st, log_z):
    """``G(z) = kappa b(0)/z`` (theory eq. (10.12)); ``log z`` given for tiny ``|z|``.

    Below ``|z| ~ 1e-306`` the value (~ 1/(|z| log|z|)) exceeds the float range
    and comes out infinite.
    """
    with np.errstate(over="ignore"):
        return st.kap * st.b[:, 0] * np.exp(-log_z)


# --------------------------------------------------------------------------- #
# Points on the real axis
# --------------------------------------------------------------------------- #

def _chart(intervals, lam, log_lam=None):
    """Interpolation chart of ``lam``: ``(segment key, coordinate)``.

    The solution is smooth in ``sqrt(distance to an edge)`` next to a
    square-root edge and in ``log(lambda)`` next to 0 (theory sections 10.7,
    10.8), so each support interval is cut at its midpoint (at a quarter of
    its top for the interval that starts at 0) into two charts.
    """
    for k, (lo, hi) in enumerate(intervals):
        if lo < lam <= hi or (lo == 0.0 and lam == 0.0 and log_lam is not None):
            if lo == 0.0:
                if lam < 0.25 * hi:
                    return (k, 0), float(np.log(lam) if log_lam is None else log_lam)
                return (k, 1), float(np.sqrt(hi - lam))
            mid = 0.5 * (lo + hi)
            if lam < mid:
                return (k, 0), float(np.sqrt(lam - lo))
            return (k, 1), float(np.sqrt(hi - lam))
    return None, None


def _solver_points(solver, log_lam):
    """Solve at real ``lambda = exp(log_lam)`` (units of theta1) inside the support.

    Guesses come from the continuation atlas: cubic Lagrange interpolation of
    (sigma, kappa) in the chart coordinate of ``_chart`` through the four
    nearest atlas points of the same chart and grid.  Points below the atlas
    extend it downwards first.  Points are solved in batches of equal grid; a
    point whose batched Newton fails is reached by its own continuation from
    the nearest atlas point.

    Returns a list of ``(indices, state, grid)``.
    """
    log_lam = np.asarray(log_lam, dtype=float)
    intervals = solver.intervals()
    deep = log_lam < DEEP_LOG
    shallow = log_lam[~deep]
    if shallow.size and shallow.min() < solver.atlas_log_min():
        solver.extend_down(float(shallow.min()))
    out = _deep_points(solver, log_lam, np.flatnonzero(deep)) if deep.any() else []
    if not (~deep).any():
        return out
    pts = solver.points()
    charts = {}
    for q in pts:
        key, v = _chart(intervals, q.lam, q.log_lam)
        charts.setdefault(key, []).append((v, q))
    for key in charts:
        charts[key].sort(key=lambda item: item[0])
    groups = {}
    guesses = {}
    for i in np.flatnonzero(~deep):
        lv = log_lam[i]
        key, v = _chart(intervals, float(np.exp(lv)), float(lv))
        cand = charts.get(key)
        if not cand:
            raise ConvergenceError(f"no atlas point next to lambda=exp({lv}) (units of theta1)")
        vs = np.array([c[0] for c in cand])
        order = np.argsort(np.abs(vs - v))
        near = cand[order[0]][1]
        same = [cand[j] for j in order if cand[j][1].grid is near.grid][:GUESS_POINTS]
        nodes = [c[0] for c in same]
        kap = _polyfit_predict(nodes, [c[1].kappa for c in same], v)
        sig = _polyfit_predict(nodes, [c[1].sigma for c in same], v)
        guesses[i] = (sig, kap, near)
        groups.setdefault(id(near.grid), (near.grid, []))[1].append(i)
    system = solver.system
    for grid, idx in groups.values():
        idx = np.array(idx)
        sig0 = np.stack([guesses[i][0] for i in idx])
        kap0 = np.array([guesses[i][1] for i in idx])
        log_mz = log_lam[idx] - 1j * np.pi
        st, conv, its, res = system.newton(log_mz, sig0, kap0, grid)
        # real axis: conjugate solutions with Im kappa > 0 (see _Solver._newton_one)
        flip = st.kap.imag > 0
        if flip.any():
            st = system.evaluate(np.where(flip[:, None], st.sig.conj(), st.sig),
                                 np.where(flip, st.kap.conj(), st.kap), grid, jac=False)
        good = conv & np.array([_admissible(st.psi[j], st.kap[j], log_mz[j]) for j in range(idx.size)])
        if good.all():
            out.append((idx, st, grid))
            continue
        out.append((idx[good], _take(st, good), grid))
        for j in np.flatnonzero(~good):
            sig, kap, g = solver.continue_to(guesses[idx[j]][2], float(log_lam[idx[j]]))
            st1 = system.evaluate(sig[None], np.array([kap]), g, jac=False)
            out.append((idx[j:j + 1], st1, g))
    return out


def _deep_points(solver, log_lam, which):
    """Points below ``exp(DEEP_LOG)``: batched Newton from the layer guess (eq. (10.18)).

    A point that fails is reached by continuation in ``log lambda`` from the
    atlas (extended to ``DEEP_LOG``).
    """
    system = solver.system
    groups = {}
    guesses = {}
    for i in which:
        sig0, kap0, grid = solver.layer_guess(float(log_lam[i]))
        guesses[i] = (sig0, kap0)
        groups.setdefault(id(grid), (grid, []))[1].append(i)
    out = []
    for grid, idx in groups.values():
        idx = np.array(idx)
        log_mz = log_lam[idx] - 1j * np.pi
        st, conv, its, res = system.newton(log_mz, np.stack([guesses[i][0] for i in idx]),
                                           np.array([guesses[i][1] for i in idx]), grid)
        flip = st.kap.imag > 0
        if flip.any():
            st = system.evaluate(np.where(flip[:, None], st.sig.conj(), st.sig),
                                 np.where(flip, st.kap.conj(), st.kap), grid, jac=False)
        good = conv & np.array([_admissible(st.psi[j], st.kap[j], log_mz[j]) for j in range(idx.size)])
        out.append((idx[good], _take(st, good), grid))
        if not good.all():
            if solver.atlas_log_min() > DEEP_LOG:
                solver.extend_down(DEEP_LOG)
            start = solver.points()[0]
            for j in np.flatnonzero(~good):
                sig, kap, g = solver.continue_to(start, float(log_lam[idx[j]]))
                out.append((idx[j:j + 1], system.evaluate(sig[None], np.array([kap]), g, jac=False), g))
    return out


def _take(st, mask):
    new = _State()
    for name in ("sig", "kap", "psi", "a", "b", "R", "Fm", "Erho"):
        setattr(new, name, getattr(st, name)[mask])
    return new


# --------------------------------------------------------------------------- #
# Dykema-Haagerup closed forms (theory eq. (10.14)), the b2 = 0 case
# --------------------------------------------------------------------------- #

def _dt_T(x):
    """``T`` with ``T e^T = -1/x`` at ``x + i0`` (principal branch of W)."""
    return scipy.special.lambertw(-1.0 / (np.asarray(x, dtype=complex) + 0j), 0)


def _dt_density(x):
    """Density of the Dykema-Haagerup law of variance 1 (support ``[0, e]``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        T = _dt_T(np.where((x > 0) & (x < np.e), x, 1.0))
        g = 1.0 + 1.0 / (x * T)               # G = 1 + 1/(z T)  (eq. (10.14))
        dens = -g.imag / np.pi
    return np.where((x > 0) & (x < np.e), np.abs(dens), 0.0)


def _dt_cdf(x):
    """Distribution function of the Dykema-Haagerup law: ``(arg T + Im T/|T|^2)/pi``."""
    x = np.asarray(x, dtype=float)
    inside = (x > 0) & (x < np.e)
    T = _dt_T(np.where(inside, x, 1.0))
    T = np.where(T.imag < 0, T.conj(), T)
    val = (np.angle(T) + T.imag / np.abs(T) ** 2) / np.pi
    return np.where(inside, val, np.where(x >= np.e, 1.0, 0.0))


# --------------------------------------------------------------------------- #
# Moments from the expansion at z = infinity (theory eq. (10.16))
# --------------------------------------------------------------------------- #

def _unit_moments(a2, b2, gamma, kmax):
    """Moments ``m_1..m_kmax`` in units of theta1 from the power series of eq. (10.16).

    The reduced system in the (A, B) form (theory eq. (10.9)) is iterated on
    truncated power series in ``w = 1/z`` whose coefficients are polynomials in
    the position ``x`` (numpy.polynomial); each pass fixes at least one more
    order, and ``3 (kmax + 2) + 3`` passes reach a fixed point (checked).
    """
    P = np.polynomial.Polynomial
    N = kmax + 2
    zero, one = P([0.0]), P([1.0])

    def smul(s, t):
        out = [zero] * N
        for i in range(N):
            for j in range(N - i):
                out[i + j] = out[i + j] + s[i] * t[j]
        return out

    def sexp(s, sign):
        e = [one] + [zero] * (N - 1)
        for j in range(1, N):
            acc = zero
            for i in range(1, j + 1):
                acc = acc + i * s[i] * e[j - i]
            e[j] = sign * acc / j
        return e

    def integ(p):
        return p.integ(lbnd=0.0)

    def at(p, x0):
        return P([p(x0)])

    sig = [P([0.5])] + [zero] * (N - 1)
    kinv = [zero, P([-1.0])] + [zero] * (N - 2)
    passes = 3 * N + 3
    prev = None
    for it in range(passes):
        f = [a2 + 2.0 * b2 * sig[0]] + [2.0 * b2 * s for s in sig[1:]]
        psi = smul(kinv, [integ(p) for p in f])
        ep, em = sexp(psi, 1.0), sexp(psi, -1.0)
        A = smul(kinv, [integ(p) for p in ep])
        Iem = [integ(p) for p in em]
        B = [at(p, 1.0) - p for p in Iem]
        B0 = [at(p, 0.0) for p in B]
        zA = A[1:] + [zero]
        AB = smul(A, B)
        sig = [(B[j] - B0[j] - zA[j] + a2 * AB[j]) / gamma for j in range(N)]
        sig[0] = sig[0] + 0.5
        psi1 = [at(p, 1.0) for p in psi]
        e1 = sexp(psi1, -1.0)
        kinv = [zero] + [-p for p in e1[:N - 1]]
        m = np.array([-A[k + 1](1.0) for k in range(1, kmax + 1)])
        if prev is not None and np.array_equal(m, prev) and it > N:
            break
        prev = m
    return m


# --------------------------------------------------------------------------- #
# Public functions
# --------------------------------------------------------------------------- #

def _check_args(beta, gamma):
    return CAUSAL_BETA.check(beta, "beta"), CAUSAL_GAMMA.check(gamma, "gamma")


def _coefficients(beta):
    """``(theta1, alpha2, theta2)`` with ``expm1`` for accuracy at small beta."""
    theta1 = float(np.expm1(beta * beta))
    theta2 = beta * beta
    # alpha2 = e^{b^2} - 1 - b^2 = sum_{k>=2} b^{2k}/k!; the series avoids the
    # cancellation of the difference for beta < 0.1
    if beta < 0.1:
        t = theta2
        alpha2 = sum(t ** k / np.prod(np.arange(1, k + 1, dtype=float)) for k in range(2, 12))
    else:
        alpha2 = theta1 - theta2
    return theta1, float(alpha2), theta2


@lru_cache(maxsize=64)
def _solver_ab(alpha2, theta2, gamma):
    """Solver of the law with noise variance ``alpha2`` and score variance ``theta2``
    (units: their sum), and that unit.  ``theta2 = 0`` is the Dykema-Haagerup law."""
    scale = alpha2 + theta2
    return _Solver(alpha2 / scale, theta2 / scale, gamma), scale


def _law(beta, gamma):
    """The solver of the law and its unit, for ``beta``, ``gamma`` already checked
    (floats in :data:`CAUSAL_BETA`, :data:`CAUSAL_GAMMA`)."""
    theta1, alpha2, theta2 = _coefficients(beta)
    return _solver_ab(alpha2, theta2, gamma)


def _real_axis(solver, lam, want_cdf):
    """Density (and CDF) in units at real ``lam`` (1-d float array)."""
    dens = np.zeros(lam.shape)
    cdf = np.zeros(lam.shape) if want_cdf else None
    intervals = solver.intervals()
    top = intervals[-1][1]
    inside = np.zeros(lam.shape, bool)
    for lo, hi in intervals:
        inside |= (lam > lo) & (lam < hi)
    inside &= lam > np.exp(LOG_LAMBDA_MIN)
    dens[lam <= 0.0] = 0.0
    if want_cdf:
        cdf[lam >= top] = 1.0
        if len(intervals) > 1:
            in_gap = (lam >= intervals[0][1]) & (lam <= intervals[1][0])
            if in_gap.any():
                cdf[in_gap] = solver.gap_mass()
        tiny = (lam > 0) & (lam <= np.exp(LOG_LAMBDA_MIN))
        if tiny.any():
            cdf[tiny] = solver.tiny_cdf(np.log(lam[tiny]))
    zero_tiny = (lam > 0) & (lam <= np.exp(LOG_LAMBDA_MIN))
    dens[zero_tiny] = np.inf
    idx = np.flatnonzero(inside)
    if idx.size:
        log_lam = np.log(lam[idx])
        for sub, st, grid in _solver_points(solver, log_lam):
            if sub.size == 0:
                continue
            g = _stieltjes_from_state(st, log_lam[sub] + 0j)
            dens[idx[sub]] = -g.imag / np.pi
            if want_cdf:
                phi = _log_potential(solver.system, st, grid, log_lam[sub] - 1j * np.pi)
                cdf[idx[sub]] = 1.0 - phi.imag / np.pi
    return dens, cdf


def causal_density(beta, gamma, x):
    """Density of the limiting law of the squared singular values of causal attention.

    The law of the squared singular values of ``C = diag(1..n)(A - M)/sqrt(n)``
    and of the masked linear model ``Y_c = L * (beta S + alpha W)/sqrt(n)``
    (theory eqs. (10.1), (10.3)), as ``n -> oo`` with ``d_qk/n = gamma``.

    Parameters
    ----------
    beta : float
        Inverse temperature in ``[1e-8, 4]`` (``CAUSAL_BETA_RANGE``).
    gamma : float
        ``d_qk/n`` in ``[0.1, 10]`` (``CAUSAL_GAMMA_RANGE``).
    x : array_like
        Real points.

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``: ``-Im G(x + i0)/pi`` inside the support (theory
        eq. (10.12)), 0 outside, ``inf`` for ``0 < x <= theta1 exp(-800)``.

    Raises
    ------
    TypeError, ValueError
        For non-real or out-of-range arguments.
    ConvergenceError
        If the boundary-value problem is not solved to its tolerance.

    Notes
    -----
    The density diverges at 0 like ``1/(x log(theta1/x)**2)`` (theory eq. (10.18)).
    Cost: building the law (edges and the continuation atlas) takes 0.1-0.5 s,
    then ~0.5 ms per point in batches (benchmarks/bench_causal.py).

    Examples
    --------
    >>> import numpy as np
    >>> d = causal_density(1.0, 1.0, [0.5, 2.0, 6.0])
    >>> bool(d[0] > d[1] > 0.0), float(d[2])
    (True, 0.0)
    """
    solver, scale = _law(*_check_args(beta, gamma))
    xs = as_real_array(x, "x", finite=True)
    dens, _ = _real_axis(solver, np.ravel(xs) / scale, False)
    return (dens / scale).reshape(xs.shape)


def causal_cdf(beta, gamma, x):
    """Distribution function of the limiting causal law, exactly (theory eq. (10.13)).

    ``F(x) = 1 - Im Phi(x + i0)/pi`` with ``Phi`` the logarithmic potential,
    computed from the solution at ``x`` itself (no quadrature of the density),
    for every positive float ``x``.

    Parameters
    ----------
    beta, gamma : float
        As in :func:`causal_density`.
    x : array_like
        Real points.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> F = causal_cdf(1.0, 1.0, [1e-300, 1.0, 100.0])
    >>> bool(0.0 < F[0] < 0.002), round(float(F[1]), 4), float(F[2])
    (True, 0.7022, 1.0)
    """
    solver, scale = _law(*_check_args(beta, gamma))
    xs = as_real_array(x, "x", finite=True)
    _, cdf = _real_axis(solver, np.ravel(xs) / scale, True)
    return cdf.reshape(xs.shape)


def causal_stieltjes(beta, gamma, z):
    """Stieltjes transform ``G(z) = int dmu(x)/(z - x)`` of the limiting causal law.

    Parameters
    ----------
    beta, gamma : float
        As in :func:`causal_density`.
    z : array_like
        Complex points with ``Im z > 0``, or real points (boundary value from
        above).

    Returns
    -------
    numpy.ndarray
        Complex, ``G ~ 1/z`` at infinity, ``Im G < 0`` above the axis.

    Notes
    -----
    Each point off the real axis is reached by continuation down a vertical
    line from ``|z|`` beyond the support (~10-50 Newton solves per point).

    Examples
    --------
    >>> g = causal_stieltjes(1.0, 1.0, 1e6j)
    >>> round(float((g * 1e6j).real), 9), bool(g.imag < 0)
    (1.0, True)
    """
    solver, scale = _law(*_check_args(beta, gamma))
    zs = np.asarray(z)
    if zs.dtype == object or zs.dtype.kind not in "iufc":
        raise TypeError(f"z must be a complex number or array, got {z!r}")
    zs = zs.astype(complex)
    if not np.all(np.isfinite(zs)):
        raise ValueError(f"z must be finite, got {z!r}")
    if np.any(zs.imag < 0):
        raise ValueError("z must have Im z >= 0 (the transform of the lower half-plane is the "
                         "conjugate)")
    return stieltjes_values(solver, scale, zs.ravel()).reshape(zs.shape)


def stieltjes_values(solver, scale, zs):
    """``G`` of the law of ``(solver, scale)`` (:func:`_law`) at the finite points
    ``zs`` (1-d complex, ``Im z >= 0``), unchecked: :func:`causal_stieltjes` and the
    law's own transform check them."""
    ws = zs / scale
    out = np.empty(zs.shape, complex)
    todo = np.ones(ws.shape, dtype=bool)
    while todo.any():
        # rounds: every point next to a solved one is solved from it (batched);
        # when none is, the first remaining point is solved by continuation from
        # its nearest remembered solution (_solve_path) or, out of its reach, down
        # its vertical line, and the next round may start from it; a warm start
        # that is not accepted is solved down its vertical line at once
        idx = np.flatnonzero(todo)
        solved, failed, states = _solve_warm(solver, ws[idx])
        if not solved.size and not failed.size:
            failed = np.array([0])
            path = _solve_path(solver, ws[idx[0]])
            if path is not None:
                failed = np.empty(0, dtype=int)
                solved, states = np.array([0]), {0: path}
        for k in failed:                     # a warm start not accepted: continuation
            w = ws[idx[k]]
            states[int(k)] = _solve_vertical(solver, w.real, w.imag)
        for k in np.concatenate([solved, failed]):
            i = idx[k]
            sig, kap, grid = states[int(k)]
            _remember(solver, ws[i], sig, kap, grid)
            st = solver.system.evaluate(sig[None], np.array([kap]), grid, jac=False)
            out[i] = _stieltjes_from_state(st, np.array([np.log(ws[i])]))[0]
            todo[i] = False
    return out / scale


@dataclass(frozen=True)
class CausalSupport:
    """Support of the limiting causal law (physical units).

    Attributes
    ----------
    intervals : tuple of (float, float)
        Disjoint closed intervals, the first starting at 0.
    gap_masses : tuple of float
        ``F`` on each gap (mass below it).
    """

    intervals: tuple
    gap_masses: tuple

    @property
    def upper(self):
        return self.intervals[-1][1]


def causal_support(beta, gamma):
    """Support intervals of the limiting causal law (theory eq. (10.17)).

    The edges are critical points of ``lambda(kappa)`` on the real solution
    branch, located by Brent's method on ``d lambda/d kappa`` (never by
    thresholding a density).  For small ``gamma`` and small ``beta`` the
    support splits in two (the score part separates, carrying mass ``gamma``).

    Returns
    -------
    CausalSupport

    Examples
    --------
    >>> s = causal_support(1.0, 1.0)
    >>> len(s.intervals), round(s.upper, 6)
    (1, 5.52391)
    """
    solver, scale = _law(*_check_args(beta, gamma))
    intervals = tuple((lo * scale, hi * scale) for lo, hi in solver.intervals())
    masses = (solver.gap_mass(),) if len(intervals) > 1 else ()
    return CausalSupport(intervals, masses)


def causal_edge(beta, gamma):
    """Upper edge of the support (the squared operator norm of ``C`` as ``n -> oo``).

    Computed from the first critical point of the real branch (theory
    eq. (10.17)) without building the rest of the law.

    Examples
    --------
    >>> round(causal_edge(4.0, 1.0) / float(np.expm1(16.0)), 9)   # Dykema-Haagerup: e
    2.718281828
    """
    solver, scale = _law(*_check_args(beta, gamma))
    return float(solver.top_fold().edge * scale)


def causal_moments(beta, gamma, kmax=3):
    """Moments ``m_1, ..., m_kmax`` of the limiting causal law (theory eq. (10.16)).

    From the expansion of the boundary-value problem at ``z = oo`` (exact up to
    rounding), ``kmax <= 12``.  The first three are
    ``m1 = theta1/2``, ``m2 = 2 theta1**2/3 + theta2**2/(6 gamma)``,
    ``m3 = 9 theta1**3/8 + 7 theta1 theta2**2/(10 gamma) + theta2**3/(15 gamma**2)``.

    Examples
    --------
    >>> m = causal_moments(1.0, 1.0, 3)
    >>> t1 = float(np.expm1(1.0))
    >>> bool(np.isclose(m[1], 2 * t1**2 / 3 + 1 / 6, rtol=1e-14))
    True
    """
    b, g = _check_args(beta, gamma)
    if isinstance(kmax, bool) or not isinstance(kmax, (int, np.integer)):
        raise TypeError(f"kmax must be an integer in [1, {MAX_MOMENT_ORDER}], got {kmax!r}")
    if not 1 <= kmax <= MAX_MOMENT_ORDER:
        raise ValueError(f"kmax must be in [1, {MAX_MOMENT_ORDER}], got {kmax}")
    theta1, alpha2, theta2 = _coefficients(b)
    unit = _unit_moments(alpha2 / theta1, theta2 / theta1, g, int(kmax))
    return unit * theta1 ** np.arange(1, kmax + 1)
