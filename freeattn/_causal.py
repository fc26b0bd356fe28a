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
  (eq. (10.16));
- :func:`causal_log_end` -- the logarithmic behaviour at 0 (eq. (10.18)).

The module does no I/O and no plotting.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special

from ._checks import as_real_array, check_beta
from ._errors import ConvergenceError

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
    "causal_log_end",
]

# --------------------------------------------------------------------------- #
# Parameter ranges and named tolerances
# --------------------------------------------------------------------------- #

#: Inverse temperatures served.  Below 1e-8 the law in units of theta1 is its
#: beta -> 0 limit (the masked score matrix alone) to O(beta**2) = 1e-16; at
#: beta = 4, b2 = beta**2/theta1 = 1.8e-6 and the law is the Dykema-Haagerup law
#: to that relative order (theory section 10.6).
CAUSAL_BETA_RANGE = (1e-8, 4.0)

#: Ratios gamma = d_qk/n served.  Measured: the solver reaches 1e-12 on this
#: range (tests/test_causal.py); below ~0.05 the score part develops layers of
#: width O(gamma) in the position variable that need finer grids.
CAUSAL_GAMMA_RANGE = (0.1, 10.0)

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

#: A converged solve must leave a residual below this (max norm of the
#: integrated equations, whose terms are O(1)); anything larger is reported.
RESIDUAL_TOL = 1e-10

#: Chebyshev nodes per panel of the position grid.  A single panel on [0, 1/2]
#: with 32 nodes reaches ~1e-14 in the bulk of the support (tests quote the
#: convergence table); panels are added near x = 0 when the boundary layer
#: exp(-psi) becomes narrow (small lambda, see _grid_for).
PANEL_NODES = 32

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
#: ... and stops looking for further critical points once the branch has
#: turned back up past this multiple of the first edge (lambda -> infinity
#: there; see theory section 10.7).
TRACE_STOP_FACTOR = 50.0

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

#: Brent tolerance for the critical points of the real branch (in s = -1/kappa);
#: lambda is quadratic there, so the edge value is accurate to ~eps.
EDGE_XTOL = 1e-13

#: Smallest lambda/theta1 covered by the continuation atlas; below it points
#: are solved on demand by continuation in log(lambda) (theory section 10.8).
ATLAS_LOG_MIN = -30.0

#: The continuation from below (needed only when the support has a gap) starts
#: at lambda = exp(L) theta1 for the first L here whose start is admissible:
#: there kappa ~ 1/|L| and the layer expansion (eq. (10.18)) is close enough for
#: Newton (at L = -30 it is not for gamma = 0.1: sigma - 1/2 = O(kappa/gamma)).
BOTTOM_LOG_STARTS = (-60.0, -200.0, -600.0)

#: Points of the lower end are solved down to lambda = exp(LOG_LAMBDA_MIN)
#: (in units of theta1); below it the asymptotic series (eq. (10.18)) is used.
LOG_LAMBDA_MIN = -700.0

#: Stieltjes transform at complex z: continuation from z + i*STIELTJES_ETA0*scale
#: down to z in STIELTJES_STAGES geometric stages.
STIELTJES_ETA0 = 4.0
STIELTJES_STAGES = 40
STIELTJES_STAGE_FACTOR = 0.7

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


@dataclass(frozen=True)
class _Grid:
    """Composite Chebyshev grid on ``[0, 1/2]`` (junction nodes shared)."""

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

def _wrap_imag(v):
    """``v`` with its imaginary part reduced to ``(-pi, pi]`` (a log residual)."""
    return v.real + 1j * (np.pi - np.mod(np.pi - v.imag, 2.0 * np.pi))


class _State:
    """Solution quantities of one batch of points (all arrays, batch first)."""

    __slots__ = ("sig", "kap", "psi", "a", "b", "R", "dR_s", "dR_k", "dpsih_s", "dpsih_k",
                 "Fm", "Erho")


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

    def evaluate(self, sig, kap, grid, jac=True):
        """Residual (and Jacobian) at a batch: ``sig`` (P, M), ``kap`` (P,)."""
        a2, b2, gamma = self.a2, self.b2, self.gamma
        J, Jr, x = grid.J, grid.Jr, grid.x
        M = grid.size
        eye = np.eye(M)
        kap = np.asarray(kap)
        kc = kap[:, None]
        f = a2 + 2.0 * b2 * sig
        psi = (f @ J.T) / kc
        dpsi = f / kc
        psih = psi[:, -1:]
        with np.errstate(over="ignore", under="ignore"):
            Erho = np.exp(psi - 2.0 * psih)
            Fm = np.exp(-psi)
        # The two linear equations share nothing with Newton's matrix; their
        # inverses (batched numpy LAPACK, not scipy's lu_solve, whose threaded
        # triangular solves are ~100x slower on these 30-100 sized systems)
        # also give the Jacobian columns by matrix products.
        inv_a = np.linalg.inv(eye + J[None] * dpsi[:, None, :])
        inv_b = np.linalg.inv(eye + Jr[None] * dpsi[:, None, :])
        a = np.einsum("pij,j->pi", inv_a, x) / kc
        b = np.einsum("pij,pj->pi", inv_b, a[:, -1:] + (0.5 - x)[None] / kc)
        src = Fm - Erho + a2 * (a - b)
        st = _State()
        st.sig, st.kap, st.psi, st.a, st.b, st.Fm, st.Erho = sig, kap, psi, a, b, Fm, Erho
        st.R = sig - 0.5 + (src @ J.T) / gamma
        if not jac:
            return st
        c = (2.0 * b2 / kap)[:, None, None]
        dpsi_s = c * J[None]                       # d psi_i / d sigma_j
        dpsi_k = -psi / kc
        ddpsi_k = -dpsi / kc                       # d psi'_i / d kappa (psi'_i / d sigma_j = c I)
        rhs_s = -c * (J[None] * a[:, None, :])
        rhs_k = -(a * ddpsi_k) @ J.T - x[None] / kc ** 2
        rhs = np.concatenate([rhs_s, rhs_k[:, :, None]], axis=2)
        da = inv_a @ rhs
        rhs_s = da[:, -1:, :M] - c * (Jr[None] * b[:, None, :])
        rhs_k = da[:, -1, M][:, None] - (b * ddpsi_k) @ Jr.T - (0.5 - x)[None] / kc ** 2
        rhs = np.concatenate([rhs_s, rhs_k[:, :, None]], axis=2)
        db = inv_b @ rhs
        dpsi_all = np.concatenate([dpsi_s, dpsi_k[:, :, None]], axis=2)
        dpsih = dpsi_all[:, -1:, :]
        dsrc = (-Fm[:, :, None] * dpsi_all - Erho[:, :, None] * (dpsi_all - 2.0 * dpsih)
                + a2 * (da - db))
        dR = np.einsum("ij,pjk->pik", J, dsrc) / gamma
        dR[:, :, :M] += eye
        st.dR_s = dR[:, :, :M]
        st.dR_k = dR[:, :, M]
        st.dpsih_s = dpsih[:, 0, :M]
        st.dpsih_k = dpsih[:, 0, M]
        return st

    # -- Newton at given z (through log(-z)) ----------------------------------

    def newton(self, log_mz, sig, kap, grid, max_iter=NEWTON_MAX_ITER):
        """Newton's method on (sigma, kappa) for a batch of points.

        Returns ``(state, converged, iterations, residual)``; ``converged`` is a
        boolean array (step below ``NEWTON_STEP_TOL`` and residual below
        ``RESIDUAL_TOL``).  The boundary condition is used in the form
        ``log(kappa) - 2 psi(1/2) - log(-z) = 0`` (imaginary part modulo
        ``2 pi``), which stays O(1) for ``|z|`` down to ``exp(-700)``.
        """
        sig = np.array(sig, dtype=complex)
        kap = np.array(kap, dtype=complex)
        log_mz = np.asarray(log_mz, dtype=complex)
        P, M = sig.shape
        done = np.zeros(P, bool)
        its = np.zeros(P, int)
        res = np.full(P, np.inf)
        active = np.arange(P)
        prev = np.full(P, np.nan)      # no quadratic estimate before two steps
        for it in range(max_iter):
            st = self.evaluate(sig[active], kap[active], grid)
            bc = _wrap_imag(np.log(st.kap) - 2.0 * st.psi[:, -1] - log_mz[active])
            jm = np.empty((active.size, M + 1, M + 1), complex)
            jm[:, :M, :M] = st.dR_s
            jm[:, :M, M] = st.dR_k
            jm[:, M, :M] = -2.0 * st.dpsih_s
            jm[:, M, M] = 1.0 / st.kap - 2.0 * st.dpsih_k
            r = np.concatenate([st.R, bc[:, None]], axis=1)
            res[active] = np.max(np.abs(r), axis=1)
            with np.errstate(all="ignore"):
                try:
                    step = np.linalg.solve(jm, -r[:, :, None])[:, :, 0]
                except np.linalg.LinAlgError:
                    step = np.full_like(r, np.nan)
            sig[active] += step[:, :M]
            kap[active] += step[:, M]
            size = np.maximum(np.max(np.abs(step[:, :M]), axis=1),
                              np.abs(step[:, M]) / np.abs(kap[active]))
            its[active] = it + 1
            fin = ~np.isfinite(size)
            # quadratic convergence: the error left after this step is about
            # size**2 * (size / prev**2); stop once that is below the tolerance
            with np.errstate(divide="ignore", invalid="ignore"):
                left = size ** 3 / prev[active] ** 2
            ok = (size < NEWTON_STEP_TOL) | ((size < NEWTON_QUADRATIC_MAX) & (left < NEWTON_STEP_TOL)) | fin
            prev[active] = size
            done[active[ok & ~fin]] = True
            active = active[~ok]
            if active.size == 0:
                break
        st = self.evaluate(sig, kap, grid, jac=False)
        bc = _wrap_imag(np.log(st.kap) - 2.0 * st.psi[:, -1] - log_mz)
        res = np.maximum(np.max(np.abs(st.R), axis=1), np.abs(bc))
        conv = done & (res < RESIDUAL_TOL) & np.isfinite(res)
        return st, conv, its, res

    # -- real branch at given kappa --------------------------------------------

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
    arg = np.exp(-np.asarray(log_mz, dtype=complex))      # -1/z
    return 1.0 / scipy.special.lambertw(arg, 0)


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
        self._folds = None
        self._atlas = None

    # -- real branch ------------------------------------------------------------

    def _real_at_s(self, s, start):
        """Real solution at ``kappa = -1/s`` warm-started from ``start = (s0, sig0, dsig0)``."""
        s0, sig0, dsig0 = start
        kap = -1.0 / s
        guess = sig0 + dsig0 * (kap + 1.0 / s0)
        return self.system.real_branch(kap, guess, _grid_for(kap))

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
        plus = self.system.real_branch(kap + h, sig + dsig * h, _grid_for(kap))
        minus = self.system.real_branch(kap - h, sig - dsig * h, _grid_for(kap))
        if plus is None or minus is None:
            raise ConvergenceError(f"no real branch next to the edge at kappa={kap!r}", point=kap)
        curvature = (plus[2] - minus[2]) / (2.0 * h)
        return _Fold(lam, kap, sig, dsig, curvature, _grid_for(kap))

    def top_fold(self):
        """The upper edge: first critical point of lambda(kappa) on the branch from -infinity."""
        if self._folds is not None:
            return self._folds[0]
        s = TRACE_S0
        grid = _grid_for(-1.0 / s)
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
        """Newton at one point.  On the real axis (``Im log(-z) = -pi``) the
        equations are real, so the conjugate of a solution is a solution; the
        boundary value from above has ``Im kappa < 0`` (``Im t > 0``, theory
        section 10.5), and a solution found with ``Im kappa > 0`` is conjugated."""
        st, conv, its, res = self.system.newton(np.array([log_mz]), sig[None], np.array([kap]),
                                                grid, max_iter=max_iter)
        sig, kap, psi = st.sig[0], complex(st.kap[0]), st.psi[0]
        if kap.imag > 0 and abs(np.imag(log_mz) + np.pi) < 1e-12:
            sig, kap, psi = sig.conj(), kap.conjugate(), psi.conj()
        ok = bool(conv[0]) and _admissible(psi, kap, log_mz)
        return sig, kap, ok, int(its[0])

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
            grid = _grid_for(last.kappa)
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
        grid = _grid_for(kap)
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
        kap0 = complex(_dt_kappa(log_mz))
        grid = _grid_for(kap0)
        xi = grid.x / kap0
        sig0 = 0.5 - (kap0 * self.b2 / self.gamma) * (1.0 - np.exp(-xi))
        sig, kap, ok, its = self._newton_one(log_mz, sig0, kap0, grid, max_iter=NEWTON_MAX_ITER)
        if not ok or not kap.imag < 0:
            raise ConvergenceError(f"no solution at lambda=exp({log_lam}) from the small-lambda "
                                   f"start (kappa={kap!r})", point=log_lam)
        return _AtlasPoint(float(np.exp(log_lam)), float(log_lam), sig, kap, grid)

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
    system = solver.system
    edge = solver.top_fold().edge
    eta0 = STIELTJES_ETA0 * max(abs(x), edge)
    if y >= eta0:
        eta0 = y
    z0 = x + 1j * eta0
    kap = complex(_dt_kappa(np.log(-z0)))
    grid = _grid_for(kap)
    sig = np.full(grid.size, 0.5 + 0j)
    sig, kap, ok, its = solver._newton_one(np.log(-z0), sig, kap, grid, max_iter=NEWTON_MAX_ITER)
    if not ok:
        raise ConvergenceError(f"no solution at the continuation start z={z0!r}", point=z0)
    hist = [(np.log(eta0), sig, kap, grid)]
    t_end = np.log(y) if y > 0 else None
    t = np.log(eta0)
    step = 0.3
    # below eta_floor the solution equals its boundary value to ~eps**(1/2)
    t_floor = np.log(max(y, 1e-8 * max(1.0, abs(x))) if y > 0 else 1e-8 * max(1.0, abs(x)))
    while t > t_floor:
        tn = max(t - step, t_floor)
        eta = np.exp(tn)
        zn = x + 1j * eta
        grid_n = _grid_for(hist[-1][2])
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
    log_mz = np.log(-(x + 1j * y)) if y > 0 else (np.log(x) - 1j * np.pi if x > 0 else np.log(-x) + 0j)
    sig, kap, grid = hist[-1][1], hist[-1][2], hist[-1][3]
    sig, kap, ok, its = solver._newton_one(log_mz, sig, kap, grid, max_iter=NEWTON_MAX_ITER)
    if not ok:
        raise ConvergenceError(f"Newton failed at z={x + 1j * y!r} after continuation", point=x + 1j * y)
    return sig, kap, grid
