"""Tests of the causal (masked) attention law and samplers (theory/10_causal.md).

Every expected number says where it comes from: a closed form of theory/10,
the independent references of ``tests/reference/make_causal_references.py``
(mpmath at 30 digits on a different discretisation; exact sympy moments; a
Nystrom solve of the original operator system), the non-causal law of
``freeattn.attention_law``, or seeded Monte Carlo.
"""

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import freeattn
from freeattn import ConvergenceError
from freeattn.attention import _causal as causal
from freeattn.attention._causal import (causal_cdf, causal_density, causal_edge, causal_moments,
                              causal_stieltjes, causal_support)
from freeattn.montecarlo._causal_sampling import (CAUSAL_MODELS, causal_attention, causal_matrix,
                                       causal_spectrum)

REF = json.loads((Path(__file__).parent / "reference" / "causal_references.json").read_text())


def _theta(beta):
    return float(np.expm1(beta * beta)), beta * beta


def _dt_solver(gamma=1.0):
    """The masked Gaussian noise alone (theta2 = 0): the Dykema-Haagerup law of variance 1."""
    solver, scale = causal._solver_ab(1.0, 0.0, gamma)
    assert scale == 1.0
    return solver


# --------------------------------------------------------------------------- discretisation

def test_collocation_jacobian_matches_finite_differences():
    """The Jacobian of the collocation of eq. (10.10) (sigma columns and kappa
    column) against central differences (step 1e-7: agreement ~1e-8)."""
    system = causal._System(0.4, 0.6, 0.7)
    grid = causal._grid((0.0, 0.5), 16)
    rng = np.random.default_rng(0)
    sig = 0.5 + 0.05 * (rng.standard_normal((2, grid.size)) + 1j * rng.standard_normal((2, grid.size)))
    kap = np.array([0.2 - 0.3j, -1.0 - 0.2j])
    st = system.evaluate(sig, kap, grid)
    h = 1e-7
    for j in (0, 5, grid.size - 1):
        e = np.zeros(grid.size)
        e[j] = h
        fd = (system.evaluate(sig + e, kap, grid, jac=False).R
              - system.evaluate(sig - e, kap, grid, jac=False).R) / (2 * h)
        np.testing.assert_allclose(st.dR_s[:, :, j], fd, atol=1e-7)
    fd = (system.evaluate(sig, kap + h, grid, jac=False).R
          - system.evaluate(sig, kap - h, grid, jac=False).R) / (2 * h)
    np.testing.assert_allclose(st.dR_k, fd, atol=1e-7)


@pytest.mark.parametrize("rec", REF["stieltjes"], ids=lambda r: f"b{r['beta']}-g{r['gamma']}-z{r['z']}")
def test_stieltjes_matches_independent_full_interval_reference(rec):
    """G at real and complex z against the mpmath reference (30 digits, full
    interval, unknown psi, no symmetry): checks the reduction eqs. (10.8)-(10.10),
    the symmetry eq. (10.11) used by the solver and G = kappa b(0)/z, eq. (10.12).
    rtol 1e-11 (measured <= 5e-16 at these seven points; the bound leaves room
    for other BLAS builds and for points nearer an edge)."""
    z = complex(*rec["z"])
    expected = complex(float(rec["G"][0]), float(rec["G"][1]))
    assert rec["discretisation_error"] < 1e-20
    if z.imag == 0:
        got = complex(causal_stieltjes(rec["beta"], rec["gamma"], z))
        dens = float(causal_density(rec["beta"], rec["gamma"], z.real))
        assert dens == pytest.approx(-expected.imag / np.pi, rel=1e-11)
    else:
        got = complex(causal_stieltjes(rec["beta"], rec["gamma"], z))
    assert abs(got - expected) <= 1e-11 * abs(expected)


def test_reduced_problem_matches_the_operator_system():
    """The original operator equations eq. (10.5) (Nystrom, m = 100/200/400,
    Richardson in 1/m; its own error estimate) agree with the solver of the
    reduced boundary-value problem eqs. (10.6)-(10.12)."""
    rec = REF["nystrom"]
    z = complex(*rec["z"])
    expected = complex(*rec["G"])
    got = complex(causal_stieltjes(rec["beta"], rec["gamma"], z))
    assert abs(got - expected) <= 10 * rec["error_estimate"] + 1e-9
    assert rec["error_estimate"] < 1e-6


def _nystrom(z, a2, b2, gamma, m, mask):
    c = b2 / gamma
    h = 1.0 / m
    if mask == "causal":
        E = h * (np.tril(np.ones((m, m)), -1) + 0.5 * np.eye(m))
    else:
        E = h * np.ones((m, m))
    t = np.full(m, -1 / z, complex)
    w = np.ones(m, complex)
    for _ in range(2000):
        K2 = np.diag(E @ np.linalg.solve(np.diag(1 / t) + c * E.T @ np.diag(w) @ E, E.T)) / h
        K1 = np.diag(E.T @ np.linalg.solve(np.diag(1 / w) + c * E @ np.diag(t) @ E.T, E)) / h
        wn = 1 / (1 + a2 * (E @ t) + b2 * K2)
        tn = 1 / (-z + a2 * (E.T @ w) + b2 * K1)
        err = max(np.abs(wn - w).max(), np.abs(tn - t).max())
        w, t = 0.5 * wn + 0.5 * w, 0.5 * tn + 0.5 * t
        if err < 1e-14:
            break
    return t, w


@pytest.mark.parametrize("beta,gamma", [(1.0, 1.0), (0.7, 0.5), (1.5, 3.0)])
def test_all_ones_mask_gives_the_noncausal_law(beta, gamma):
    """With the all-ones mask the operator system eq. (10.5) has constant
    solutions solving eq. (10.15), the non-causal compound free Poisson law
    (population alpha**2 + beta**2 MP_{1/gamma}, ratio 1, eq. (5.3)):
    freeattn.attention_law(...).squared().stieltjes = -m; rtol 1e-11 (the
    constant solution is exact for any m, here m = 16)."""
    theta1, theta2 = _theta(beta)
    alpha2 = theta1 - theta2
    sq = freeattn.attention_law(beta, gamma).squared()
    for z in (1.0 + 1.0j, 3.0 + 0.5j, 0.2 + 0.1j):
        t, w = _nystrom(z, alpha2, theta2, gamma, 16, "full")
        m = t.mean()
        expected = -complex(sq.stieltjes(z))
        assert abs(m - expected) <= 1e-11 * abs(expected)
        assert abs(-w.mean() / z - expected) <= 1e-11 * abs(expected)
        # the scalar form eq. (10.15)
        c = theta2 / gamma
        residual = 1 / m + z * (1 + alpha2 * m + theta2 * m / (1 - c * z * m * m))
        assert abs(residual) <= 1e-11 * abs(1 / m)


def test_operator_solution_has_constant_t_times_omega():
    """The first integral t(x) omega(x) = 1/kappa, eq. (10.8), and the symmetry
    omega(x) = -z t(1 - x), eq. (10.11), hold for the Nystrom solution of the
    *original* system eq. (10.5) up to its O(1/m) discretisation error
    (m = 80: spread below 1e-2 of the mean; a violated identity, e.g. t omega
    growing with x, would differ by O(1))."""
    beta, gamma, z = 1.0, 1.0, 1.0 + 1.0j
    theta1, theta2 = _theta(beta)
    t, w = _nystrom(z / theta1, 1 - theta2 / theta1, theta2 / theta1, gamma, 80, "causal")
    prod = t * w
    assert np.max(np.abs(prod - prod.mean())) < 1e-2 * abs(prod.mean())
    np.testing.assert_allclose(w, -(z / theta1) * t[::-1], rtol=1e-2)


def test_kernel_diagonals_obey_the_sturm_liouville_relations():
    """The diagonals K2(x,x), K1(x,x) of the operator system eq. (10.5)
    (Nystrom, m = 120) obey eq. (10.7): with sigma = K2'/(2t), K1' = -2 omega
    sigma, sigma(0) = 1/2 and sigma**2 + c K1 K2 = 1/4, up to the O(1/m)
    error of the discretisation and of the finite differences (tolerance 3e-2
    against O(1) values)."""
    beta, gamma, z = 1.0, 1.0, 1.0 + 1.0j
    theta1, theta2 = _theta(beta)
    a2, b2 = 1 - theta2 / theta1, theta2 / theta1
    m = 120
    t, w = _nystrom(z / theta1, a2, b2, gamma, m, "causal")
    c = b2 / gamma
    h = 1.0 / m
    E = h * (np.tril(np.ones((m, m)), -1) + 0.5 * np.eye(m))
    K2 = np.diag(E @ np.linalg.solve(np.diag(1 / t) + c * E.T @ np.diag(w) @ E, E.T)) / h
    K1 = np.diag(E.T @ np.linalg.solve(np.diag(1 / w) + c * E @ np.diag(t) @ E.T, E)) / h
    sigma = np.gradient(K2, h) / (2 * t)
    inner = slice(5, m - 5)
    np.testing.assert_allclose(np.gradient(K1, h)[inner], (-2 * w * sigma)[inner], atol=3e-2)
    np.testing.assert_allclose((sigma ** 2 + c * K1 * K2)[inner], 0.25, atol=3e-2)
    assert abs(sigma[1] - 0.5) < 3e-2


def test_deterministic_equivalent_given_the_keys():
    """Step 1 of the derivation, eq. (10.4): for one key matrix K (n = 300,
    SeedSequence 8), the deterministic equivalent (T, omega_i) of rows with covariances
    P_i Sigma_G P_i / n predicts (1/n) tr (Y_c^T Y_c - z)^-1 of Monte Carlo
    draws of Q and W with that K (6 draws, spread 2.8e-3 per draw: tolerance
    5e-3 = 4.5 standard errors of the mean; measured 4e-4) and agrees with the
    limit m(z) of eq. (10.12) to O(1/n) (5e-3; measured 1e-3)."""
    beta, n, z = 1.0, 300, 1.5 + 0.7j
    theta1, theta2 = _theta(beta)
    streams = np.random.SeedSequence(8).spawn(7)      # keys, then 6 draws of (Q, W)
    K = np.random.default_rng(streams[0]).standard_normal((n, n))
    sigma_g = theta2 * K @ K.T / n + (theta1 - theta2) * np.eye(n)
    omega = np.ones(n, complex)
    for _ in range(200):
        # (1/n) sum_i omega_i P_i Sigma_G P_i = Sigma_G * B, B_jk = (1/n) sum_{i >= max(j,k)} omega_i
        tail = np.cumsum(omega[::-1])[::-1] / n
        B = tail[np.maximum.outer(np.arange(n), np.arange(n))]
        T = np.linalg.inv(-z * np.eye(n) + sigma_g * B)
        # (1/n) tr(P_i Sigma_G P_i T) = (1/n) sum_{j,k <= i} Sigma_jk T_kj: 2-d prefix sums
        prefix = np.cumsum(np.cumsum(sigma_g * T.T, axis=0), axis=1)
        new = 1.0 / (1.0 + np.diag(prefix) / n)
        if np.max(np.abs(new - omega)) < 1e-13:
            break
        omega = 0.5 * omega + 0.5 * new
    predicted = np.trace(T) / n
    alpha = np.sqrt(theta1 - theta2)
    draws = []
    for s in range(1, 7):
        g = np.random.default_rng(streams[s])
        Q = g.standard_normal((n, n))
        W = g.standard_normal((n, n))
        Y = np.tril(beta * Q @ K.T / np.sqrt(n) + alpha * W) / np.sqrt(n)
        ev = np.linalg.eigvalsh(Y.T @ Y)
        draws.append(np.mean(1.0 / (ev - z)))
    assert abs(np.mean(draws) - predicted) < 5e-3
    limit = -complex(causal_stieltjes(beta, 1.0, z))
    assert abs(predicted - limit) < 5e-3


def test_convergence_in_the_number_of_nodes():
    """Spectral convergence of the collocation of eq. (10.10) on one panel
    (error of G against 80 nodes).  Measured: at beta = 1e-4, gamma = 0.1,
    lambda = 0.05 theta1 (the hardest bulk case met) 1e-7, 9e-11, 1e-13, 1e-15
    at 16, 24, 32, 40 nodes; at beta = gamma = 1, lambda = 1e-6 theta1, 8e-14
    and 1e-15 at 16 and 24.  Checked: geometric decrease, and below 1e-12 at
    the node count the law uses (32 for gamma >= 0.25, 40 below)."""
    for beta, gamma, lam in [(1e-4, 0.1, 0.05), (1.0, 1.0, 1e-6)]:
        solver, scale = causal._law(beta, gamma)
        (idx, st, grid), = [g for g in causal._solver_points(solver, np.array([np.log(lam)])) if g[0].size]
        assert len(grid.breaks) == 2                  # one panel
        errors = {}
        ref = None
        for n in (80, 16, 24, 32, 40):
            g = causal._grid((0.0, 0.5), n)
            sig, kap, ok, its = solver._newton_one(np.log(lam) - 1j * np.pi,
                                                   grid.interpolate(st.sig[0], g), complex(st.kap[0]),
                                                   g, max_iter=30)
            assert ok
            val = complex(causal._stieltjes_from_state(
                solver.system.evaluate(sig[None], np.array([kap]), g, jac=False),
                np.array([np.log(lam) + 0j]))[0])
            if ref is None:
                ref = val
                continue
            errors[n] = abs(val - ref) / abs(ref)
        assert errors[16] > 1e3 * errors[24] or errors[24] < 1e-14
        assert errors[solver.nodes] < 1e-12
    assert causal._law(1e-4, 0.1)[0].nodes == 40 and causal._law(1.0, 1.0)[0].nodes == 32
    assert errors[16] > 1e-14           # the coarse grid is visibly worse at lambda = 1e-6


# --------------------------------------------------------------------------- checks

def test_dykema_haagerup_closed_forms_are_consistent():
    """Theory eq. (10.14): the DT density integrates to the DT CDF, has moments
    k**k/(k+1)! (Gauss-Legendre on [0, e] after the substitution x = e u**2,
    which removes the edge square root; the log end at 0 carries mass
    1/log(1/x) ~ 0.01 below x = e**-100 but no moment), and its CDF is 1 at e."""
    u, wts = np.polynomial.legendre.leggauss(400)
    # x in [e^-300, e]: substitution x = e * exp(-s) on s in [0, 300] would miss
    # the edge; split [e^-300, 1] in log x and [1, e] in sqrt(e - x)
    for k in range(1, 6):
        s = 0.5 * (u + 1) * 300.0            # x = exp(-s) on [e^-300, 1]
        x1 = np.exp(-s)
        part1 = np.sum(wts * 150.0 * x1 ** (k + 1) * causal._dt_density(x1))
        v = 0.5 * (u + 1) * np.sqrt(np.e - 1.0)   # x = e - v^2 on [1, e]
        x2 = np.e - v * v
        part2 = np.sum(wts * 0.5 * np.sqrt(np.e - 1.0) * 2 * v * x2 ** k * causal._dt_density(x2))
        exact = k ** k / np.prod(np.arange(1, k + 2, dtype=float))
        assert part1 + part2 == pytest.approx(exact, rel=1e-10)
    a, b = 0.3, 2.0
    xs = 0.5 * (u + 1) * (b - a) + a
    mass = np.sum(wts * 0.5 * (b - a) * causal._dt_density(xs))
    assert causal._dt_cdf(b) - causal._dt_cdf(a) == pytest.approx(mass, rel=1e-12)
    assert causal._dt_cdf(np.e) == 1.0


def test_solver_reproduces_dykema_haagerup():
    """theta2 = 0 (no score part): density, CDF and edge of the solver equal
    the closed forms eq. (10.14): density rtol 1e-11, CDF atol 1e-12 (also at
    x = 1e-300 through the exact log potential eq. (10.13)), edge e to 1e-13."""
    solver = _dt_solver(1.0)
    assert solver.top_fold().edge == pytest.approx(np.e, rel=1e-13)
    x = np.array([1e-6, 0.01, 0.3, 1.0, 2.0, 2.7])
    dens, cdf = causal._real_axis(solver, x, True)
    np.testing.assert_allclose(dens, causal._dt_density(x), rtol=1e-11)
    np.testing.assert_allclose(cdf, causal._dt_cdf(x), atol=1e-12)
    tiny_dens, tiny_cdf = causal._real_axis(solver, np.array([1e-300]), True)
    T = causal._dt_T(1e-300)
    T = T.conjugate() if T.imag < 0 else T
    assert tiny_cdf[0] == pytest.approx((np.angle(T) + T.imag / abs(T) ** 2) / np.pi, abs=1e-14)


def test_beta_4_is_dykema_haagerup():
    """At beta = 4 the score part is theta2/theta1 = 1.8e-6 of the variance:
    the law in units of theta1 is DT (eq. (10.14)) to ~1e-6; edge e * theta1."""
    theta1, _ = _theta(4.0)
    assert causal_edge(4.0, 1.0) / theta1 == pytest.approx(np.e, rel=1e-9)
    x = np.array([0.05, 0.5, 1.5, 2.5])
    np.testing.assert_allclose(causal_density(4.0, 1.0, x * theta1) * theta1,
                               causal._dt_density(x), rtol=5e-6)


def _exact_moment(k, beta, gamma):
    rec = REF["moments"][k - 1]
    assert rec["k"] == k
    theta1, theta2 = _theta(beta)
    return sum(Fraction(p, q) * theta1 ** i * theta2 ** j * (1 / gamma) ** l
               for p, q, i, j, l in rec["terms"])


@pytest.mark.parametrize("beta,gamma", [(1.0, 1.0), (0.3, 0.1), (2.0, 7.0), (1e-4, 0.5)])
def test_moments_closed_forms(beta, gamma):
    """m1 = theta1/2, m2 = 2 theta1^2/3 + theta2^2/(6 gamma),
    m3 = 9 theta1^3/8 + 7 theta1 theta2^2/(10 gamma) + theta2^3/(15 gamma^2),
    eq. (10.16) (rtol 1e-13), and m4-m6 against the exact sympy coefficients of
    the reference file (rtol 1e-12)."""
    theta1, theta2 = _theta(beta)
    m = causal_moments(beta, gamma, 6)
    g = gamma
    assert m[0] == pytest.approx(theta1 / 2, rel=1e-13)
    assert m[1] == pytest.approx(2 * theta1 ** 2 / 3 + theta2 ** 2 / (6 * g), rel=1e-13)
    assert m[2] == pytest.approx(9 * theta1 ** 3 / 8 + 7 * theta1 * theta2 ** 2 / (10 * g)
                                 + theta2 ** 3 / (15 * g * g), rel=1e-13)
    for k in range(1, 7):
        assert m[k - 1] == pytest.approx(float(_exact_moment(k, beta, gamma)), rel=1e-12)


def test_moment_table_matches_the_text():
    """The m1-m4 coefficients printed in eq. (10.16) are those of the exact
    reference (sympy rationals), and theta2 = 0 gives k^k/(k+1)! theta1^k (eq. (10.14))."""
    expected = {
        1: {(1, 0, 0): Fraction(1, 2)},
        2: {(2, 0, 0): Fraction(2, 3), (0, 2, 1): Fraction(1, 6)},
        3: {(3, 0, 0): Fraction(9, 8), (1, 2, 1): Fraction(7, 10), (0, 3, 2): Fraction(1, 15)},
        4: {(4, 0, 0): Fraction(32, 15), (2, 2, 1): Fraction(203, 90), (1, 3, 2): Fraction(118, 315),
            (0, 4, 2): Fraction(52, 315), (0, 4, 3): Fraction(17, 630)},
    }
    for k, table in expected.items():
        got = {tuple(t[2:]): Fraction(t[0], t[1]) for t in REF["moments"][k - 1]["terms"]}
        assert got == table
    for k in range(1, 7):
        pure = [Fraction(t[0], t[1]) for t in REF["moments"][k - 1]["terms"] if t[3] == 0]
        assert pure == [Fraction(k ** k, int(np.prod(np.arange(1, k + 2))))]


@pytest.mark.slow
def test_moments_from_the_stieltjes_transform():
    """The solver's G on the circle |z| = R (beyond the edge) has Laurent
    coefficients m_k, eq. (10.12) against eq. (10.16): trapezoidal rule with
    24 points, aliasing error ~(edge/R)^24; rtol 1e-9."""
    beta, gamma = 1.0, 1.0
    edge = causal_edge(beta, gamma)
    R = 2.5 * edge
    K = 24
    theta = 2 * np.pi * (np.arange(K) + 0.5) / K
    upper = theta < np.pi
    z = R * np.exp(1j * theta[upper])
    g_upper = causal_stieltjes(beta, gamma, z)
    g = np.empty(K, complex)
    g[upper] = g_upper
    g[~upper] = np.conj(g_upper[::-1])       # G(conj z) = conj G(z)
    m = causal_moments(beta, gamma, 4)
    for k in range(1, 5):
        mk = np.mean(g * (R * np.exp(1j * theta)) ** (k + 1)).real
        assert mk == pytest.approx(m[k - 1], rel=1e-9)


def test_cdf_is_the_integral_of_the_density():
    """F from the log potential, eq. (10.13), against Gauss-Legendre integrals
    of the density (eq. (10.12)) between interior points: atol 1e-12; F is
    increasing and F(upper edge) = 1, F(x < 0) = 0."""
    beta, gamma = 1.0, 1.0
    u, w = np.polynomial.legendre.leggauss(60)
    knots = np.array([0.01, 0.2, 1.0, 2.5, 4.0])
    F = causal_cdf(beta, gamma, knots)
    for a, b, Fa, Fb in zip(knots[:-1], knots[1:], F[:-1], F[1:]):
        x = 0.5 * (b - a) * (u + 1) + a
        integral = 0.5 * (b - a) * np.sum(w * causal_density(beta, gamma, x))
        assert Fb - Fa == pytest.approx(integral, abs=1e-12)
    edge = causal_edge(beta, gamma)
    grid = np.linspace(1e-3, edge * (1 - 1e-9), 200)
    assert np.all(np.diff(causal_cdf(beta, gamma, grid)) > 0)
    assert causal_cdf(beta, gamma, [-1.0, 0.0, edge, 10.0]).tolist() == [0.0, 0.0, 1.0, 1.0]


def test_log_potential_at_large_z():
    """Phi(z) = log z - m1/z - m2/(2 z^2) - m3/(3 z^3) - ..., eq. (10.13), at
    |z| = 1e3 (atol 1e-12; the omitted m5/(5 z^5) term is ~1e-14)."""
    beta, gamma = 1.0, 1.0
    solver, scale = causal._law(beta, gamma)
    z = 1000.0 * np.exp(0.7j)
    sig, kap, grid = causal._solve_vertical(solver, z.real / scale, z.imag / scale)
    st = solver.system.evaluate(sig[None], np.array([kap]), grid, jac=False)
    phi = causal._log_potential(solver.system, st, grid, np.array([np.log(-z / scale)]))[0]
    m = causal_moments(beta, gamma, 4) / scale ** np.arange(1, 5)
    w = scale / z
    # Phi in units of theta1: log(z/theta1) - sum_k m_k w^k / k
    expected = np.log(z / scale) - sum(m[k - 1] * w ** k / k for k in range(1, 5))
    assert abs(phi - expected) < 1e-12


def test_g_along_a_segment_from_a_remembered_solution(monkeypatch):
    """The causal law's G at points off the axis (a composition's continuation asks
    for rows like these: x in [0.1, 0.7], Im z ~ 0.1-0.16, spaced by 0.05, farther
    apart than the warm-start radius) is reached from the nearest remembered
    solution along the segment between them (steps of a quarter of the hull
    distance): one continuation down a vertical line for the first point, none
    for the other 11 (before: 12), and every G equals the vertical continuation's
    to 1e-12 relative (measured 6.5e-14, both Newton-converged)."""
    solver, scale = causal._law(0.55, 1.5)
    x = np.linspace(0.1, 0.7, 12)
    z = (x + 1j * (0.09 + 0.1 * x)) * scale
    w = z / scale

    def vertical_g(wk):
        sig, kap, grid = causal._solve_vertical(solver, wk.real, wk.imag)
        st = solver.system.evaluate(sig[None], np.array([kap]), grid, jac=False)
        return causal._stieltjes_from_state(st, np.array([np.log(wk)]))[0] / scale
    expected = np.array([vertical_g(wk) for wk in w])
    calls = []
    original = causal._solve_vertical

    def counted(*args, **kwargs):
        calls.append(args[1:3])
        return original(*args, **kwargs)
    monkeypatch.setattr(causal, "_solve_vertical", counted)
    monkeypatch.setattr(solver, "_warm", [])
    monkeypatch.setattr(solver, "_warm_w", np.empty(0, dtype=complex))
    g = np.array([causal.stieltjes_values(solver, scale, z[k:k + 1])[0] for k in range(z.size)])
    assert len(calls) == 1
    assert np.max(np.abs(g / expected - 1.0)) <= 1e-12


# --------------------------------------------------------------------------- edges and support

@pytest.mark.parametrize("beta,gamma", [(1.0, 1.0), (0.5, 3.0), (2.0, 0.3)])
def test_upper_edge_is_a_critical_point(beta, gamma):
    """Theory eq. (10.17): at the edge d lambda/d kappa = 0 (|.| < 1e-9 of its scale) on
    the real branch; the density is positive just inside and zero just outside;
    the edge is unchanged (1e-12) on a 48-node grid."""
    solver, scale = causal._law(beta, gamma)
    fold = solver.top_fold()
    out = solver.system.real_branch(fold.kappa, fold.sigma, fold.grid)
    assert abs(out[2]) < 1e-9
    edge = fold.edge * scale
    assert causal_edge(beta, gamma) == edge
    d = causal_density(beta, gamma, [edge * (1 - 1e-6), edge * (1 + 1e-9)])
    assert d[0] > 0 and d[1] == 0.0
    fine = causal._grid((0.0, 0.5), 48)
    sig = fold.grid.interpolate(fold.sigma, fine)

    def dlam(s):
        r = solver.system.real_branch(-1 / s, sig, fine)
        return r[2]

    import scipy.optimize
    s0 = -1 / fold.kappa
    s_star = scipy.optimize.brentq(dlam, s0 * (1 - 1e-3), s0 * (1 + 1e-3), xtol=1e-15)
    lam = solver.system.real_branch(-1 / s_star, sig, fine)[1]
    assert lam == pytest.approx(fold.edge, rel=1e-12)


def test_edge_against_monte_carlo_scale():
    """The edge (eq. (10.17)) is below the non-causal edge and above the DT
    edge e theta1 of the same variance at beta = gamma = 1: 5.52391 (physical),
    non-causal 9.0095, DT 4.6708; the largest squared singular value of Y_c at
    n = 1000 (seed 3) lies within 3% of it (Tracy-Widom scale n^-2/3)."""
    edge = causal_edge(1.0, 1.0)
    assert edge == pytest.approx(5.523909750979, rel=1e-11)
    assert np.e * np.expm1(1.0) < edge < freeattn.operator_norm(1.0, 1.0).squared_edge
    top = causal_spectrum("causal_linear", 1000, 1000, 1.0, rng=3)[-1]
    assert top == pytest.approx(edge, rel=0.03)


def test_split_support_and_the_mass_of_the_score_interval():
    """beta -> 0, gamma = 0.1: the support splits (eq. (10.17)) and the upper
    interval carries mass gamma exactly, eq. (10.19): F on the gap is 0.9 and
    F(e2 (1 + d)) - 0.9 shrinks like d^1.5."""
    beta, gamma = 1e-4, 0.1
    sup = causal_support(beta, gamma)
    theta1, _ = _theta(beta)
    (lo1, hi1), (lo2, hi2) = sup.intervals
    assert lo1 == 0.0 and hi1 / theta1 == pytest.approx(0.98514458, rel=1e-7)
    assert lo2 / theta1 == pytest.approx(1.21845468, rel=1e-7)
    assert sup.gap_masses == (pytest.approx(0.9, abs=1e-15),)
    mid = 0.5 * (hi1 + lo2)
    assert causal_density(beta, gamma, mid) == 0.0
    assert causal_cdf(beta, gamma, mid) == pytest.approx(0.9, abs=1e-15)
    excess = causal_cdf(beta, gamma, lo2 * (1 + np.array([1e-4, 1e-6]))) - 0.9
    assert 0 < excess[1] < excess[0]
    assert excess[0] / excess[1] == pytest.approx(1e3, rel=0.05)


def test_small_lambda_asymptotics():
    """Theory eq. (10.18): near 0 the law is DT at the shifted point lambda e^{-2 b2^2/gamma};
    the first form has error C y^3 (C < 15 measured for these parameters), and
    lambda rho(lambda) log^2(theta1/lambda) -> 1 (1.016 at e^-700)."""
    for beta, gamma in [(1.0, 1.0), (1.0, 0.3)]:
        solver, scale = causal._law(beta, gamma)
        for L in (-100.0, -300.0, -700.0):
            lam = np.exp(L)
            dens, cdf = causal._real_axis(solver, np.array([lam]), True)
            y = 1 / (-L + 2 * solver.b2 ** 2 / solver.gamma)
            asym = solver.tiny_cdf(np.array([L]))[0]
            assert abs(cdf[0] - asym) < 15 * y ** 3
            assert cdf[0] == pytest.approx(y, rel=5 * y * np.log(1 / y))
        assert lam * dens[0] * L * L == pytest.approx(1.0, abs=0.03)


def test_cdf_at_the_bottom_of_the_float_range():
    """The exact CDF, eq. (10.13), at x = 1e-300 and at the smallest subnormal:
    below 1/log(theta1/x) + 1e-4 and positive (the log end, eq. (10.18))."""
    F = causal_cdf(1.0, 1.0, [5e-324, 1e-300])
    theta1 = np.expm1(1.0)
    for x, f in zip([5e-324, 1e-300], F):
        y = 1 / (np.log(theta1) - np.log(x))
        assert 0.0 < f < y + 1e-4
        assert f == pytest.approx(y, rel=0.01)


def test_admissibility_rejects_the_conjugate():
    """Theory eq. (10.20): the solution satisfies Im t >= 0 and Im(-omega/z) >= 0; its
    conjugate solves the real-axis equations too and is rejected."""
    solver, scale = causal._law(1.0, 1.0)
    (idx, st, grid), = [g for g in causal._solver_points(solver, np.array([0.0])) if g[0].size]
    log_mz = np.array(0.0 - 1j * np.pi)
    assert causal._admissible(st.psi[0], complex(st.kap[0]), log_mz)
    assert not causal._admissible(st.psi[0].conj(), complex(st.kap[0]).conjugate(), log_mz)


def test_stieltjes_basics():
    """G ~ 1/z at infinity, Im G < 0 above the axis, and -Im G(x + i eta)/pi
    tends to the density at x (eq. (10.12)): eta = 1e-8 moves it by O(eta)."""
    beta, gamma = 1.0, 1.0
    g = causal_stieltjes(beta, gamma, np.array([1e5j, 1.0 + 1.0j, 3.0 + 1e-8j]))
    assert abs(g[0] * 1e5j - 1.0) < 1e-5
    assert np.all(g.imag < 0)
    assert -g[2].imag / np.pi == pytest.approx(float(causal_density(beta, gamma, 3.0)), rel=1e-6)


# --------------------------------------------------------------------------- input checks

@pytest.mark.parametrize("func", [causal_density, causal_cdf])
def test_bad_arguments(func):
    with pytest.raises(ValueError, match="beta"):
        func(5.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="beta"):
        func(1e-9, 1.0, 1.0)
    with pytest.raises(ValueError, match="gamma"):
        func(1.0, 0.05, 1.0)
    with pytest.raises(TypeError, match="gamma"):
        func(1.0, [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="x"):
        func(1.0, 1.0, np.nan)
    with pytest.raises(TypeError, match="x"):
        func(1.0, 1.0, "1")


def test_bad_arguments_other_functions():
    with pytest.raises(ValueError, match="Im z"):
        causal_stieltjes(1.0, 1.0, 1.0 - 1.0j)
    with pytest.raises(TypeError, match="z"):
        causal_stieltjes(1.0, 1.0, "z")
    with pytest.raises(ValueError, match="kmax"):
        causal_moments(1.0, 1.0, 0)
    with pytest.raises(TypeError, match="kmax"):
        causal_moments(1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="no gap"):
        causal._law(1.0, 1.0)[0].gap_mass()


def test_convergence_error_quotes_numbers():
    """A continuation that cannot reach its target raises ConvergenceError with
    the point: here from the lower interval of a split support into its gap
    (eq. (10.17)), where the Stieltjes branch meets its conjugate."""
    solver, _ = causal._law(1e-4, 0.1)
    (lo1, hi1), (lo2, hi2) = solver.intervals()
    start = max((q for q in solver.points() if q.lam < hi1), key=lambda q: q.lam)
    with pytest.raises(ConvergenceError, match="lambda") as info:
        solver.continue_to(start, float(np.log(0.5 * (hi1 + lo2))))
    assert info.value.point is not None


# --------------------------------------------------------------------------- samplers

def test_causal_attention_is_a_causal_softmax():
    """Theory eq. (10.1): lower triangular, rows sum to 1, A_11 = 1, equal to the
    softmax of each row prefix computed directly."""
    n, d, beta = 7, 5, 1.3
    A = causal_attention(n, d, beta, rng=4)
    assert np.all(np.triu(A, 1) == 0)
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-15)
    rng = np.random.default_rng(4).spawn(4)
    K = rng[0].standard_normal((n, d))
    Q = rng[1].standard_normal((n, d))
    S = Q @ K.T / np.sqrt(d)
    for i in range(n):
        e = np.exp(beta * S[i, :i + 1])
        np.testing.assert_allclose(A[i, :i + 1], e / e.sum(), rtol=1e-13)


def test_causal_matrix_models_share_scores():
    """Theory eqs. (10.1), (10.3): C has zero row sums and C = (diag(i) A - L)/sqrt(n);
    Y_c from the same rng uses the same S and the linear-noise stream."""
    n, d, beta = 9, 4, 0.8
    A = causal_attention(n, d, beta, rng=11)
    C = causal_matrix("causal", n, d, beta, rng=11)
    L = np.tril(np.ones((n, n)))
    np.testing.assert_allclose(C, (np.arange(1, n + 1)[:, None] * A - L) / np.sqrt(n), atol=1e-15)
    np.testing.assert_allclose(C.sum(axis=1), 0.0, atol=1e-14)
    raw = causal_matrix("causal", n, d, beta, rng=11, rescale=False)
    np.testing.assert_allclose(raw, np.sqrt(n) * (A - L / np.arange(1, n + 1)[:, None]), atol=1e-14)
    Y = causal_matrix("causal_linear", n, d, beta, rng=11)
    rng = np.random.default_rng(11).spawn(4)
    K = rng[0].standard_normal((n, d))
    Q = rng[1].standard_normal((n, d))
    W = rng[2].standard_normal((n, n))
    alpha = np.sqrt(np.expm1(beta ** 2) - beta ** 2)
    np.testing.assert_allclose(Y, L * (beta * Q @ K.T / np.sqrt(d) + alpha * W) / np.sqrt(n),
                               atol=1e-14)
    ev = causal_spectrum("causal_linear", n, d, beta, rng=11)
    np.testing.assert_allclose(ev, np.sort(np.linalg.svd(Y, compute_uv=False) ** 2), atol=1e-13)
    assert ev.dtype == np.float64


def test_sampler_arguments():
    assert CAUSAL_MODELS == ("causal", "causal_linear")
    with pytest.raises(ValueError, match="model"):
        causal_matrix("attention", 4, 4, 1.0)
    with pytest.raises(TypeError, match="model"):
        causal_matrix(3, 4, 4, 1.0)
    with pytest.raises(ValueError, match="rescale"):
        causal_matrix("causal_linear", 4, 4, 1.0, rescale=False)
    with pytest.raises(TypeError, match="rescale"):
        causal_matrix("causal", 4, 4, 1.0, rescale="no")
    with pytest.raises(TypeError, match="rng"):
        causal_matrix("causal", 4, 4, 1.0, rng="seed")
    with pytest.raises(ValueError, match="rng"):
        causal_matrix("causal", 4, 4, 1.0, rng=-3)
    with pytest.raises(ValueError, match="n"):
        causal_matrix("causal", 1, 4, 1.0)
    with pytest.raises(ValueError, match="beta"):
        causal_attention(4, 4, -1.0)
    a = causal_matrix("causal", 6, 3, 1.0, rng=np.random.default_rng(5))
    b = causal_matrix("causal", 6, 3, 1.0, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- Monte Carlo

def _ks_above_floor(ev, cdf, n):
    """Floor-aware Kolmogorov distance, theory eq. (7.15) (freeattn.montecarlo._statistics): the
    values of a triangular matrix below the float64 floor 10 n eps max are counted,
    not placed (theory 10.9)."""
    from freeattn.montecarlo import _statistics as stats

    ev = np.sort(ev)
    floor = stats.resolution_floor(n, ev[-1])
    return stats.ks_distance_above_floor(ev, cdf(ev), floor, float(cdf(floor)))


@pytest.mark.statistical
def test_masked_linear_model_matches_the_law():
    """Y_c (eq. (10.3)) at n = 600, 3 draws (seeds 0-2): Kolmogorov distance to
    the exact CDF (eq. (10.13)) above the float64 floor is at the noise level.
    Measured (benchmarks/causal_finite_n.py): 0.0023 at n = 500 (8 draws), 0.0014
    at n = 1000; a pool of 1800 values has a KS noise ~0.7/sqrt(1800) = 0.016
    for i.i.d. samples, far less for rigid eigenvalues.  Bound 0.008; the same
    statistic against the non-causal law of the same beta is > 0.1.  The CDF is
    causal_law's, within 1e-13 of eq. (10.13) (test_causal_law_on_the_spectral_law_base)."""
    beta, gamma, n = 1.0, 1.0, 600
    ev = np.concatenate([causal_spectrum("causal_linear", n, n, beta, rng=s) for s in range(3)])
    ks = _ks_above_floor(ev, freeattn.causal_law(beta, gamma).cdf, n)
    assert ks < 0.008
    wrong = freeattn.attention_law(beta, gamma).squared()
    assert _ks_above_floor(ev, wrong.cdf, n) > 0.1


@pytest.mark.statistical
def test_causal_softmax_matches_the_law():
    """C (eq. (10.1)) at beta = 0.5, n = 600, 3 draws: KS above the floor < 0.012
    (measured 0.0059 at n = 500, 0.0033 at n = 1000: the softmax's own finite-n
    gap is small at beta = 0.5, section 10.9)."""
    beta, gamma, n = 0.5, 1.0, 600
    ev = np.concatenate([causal_spectrum("causal", n, n, beta, rng=10 + s) for s in range(3)])
    assert _ks_above_floor(ev, freeattn.causal_law(beta, gamma).cdf, n) < 0.012


@pytest.mark.statistical
def test_raw_trace_grows_like_log_n():
    """Theory eq. (10.2): row i of sqrt(n)(A - M) has mean squared entry theta1/i, so
    the mean squared singular value grows like theta1 log n.  One draw at
    n = 1600 (seed 2): i times the row sum of squares, averaged over the rows
    i in (n/4, n], is theta1 within 4% (measured 0.981-0.988 theta1 on three
    seeds; the O(1/sqrt(i)) normalizer noise biases it down), and those rows
    add theta1 log 4 (5%; measured 2.33-2.34 vs 2.38).  C = diag(i)(A - M)/sqrt(n)
    has mean squared singular value theta1/2 (5%; 0.841-0.851 vs 0.859)."""
    beta, n = 1.0, 1600
    theta1 = np.expm1(beta ** 2)
    R = causal_matrix("causal", n, n, beta, rng=2, rescale=False)
    rows = np.sum(R * R, axis=1) / n
    i = np.arange(1, n + 1)
    late = i > n // 4
    assert np.mean(i[late] * rows[late]) == pytest.approx(theta1, rel=0.04)
    assert np.sum(rows[late]) == pytest.approx(theta1 * np.log(4.0), rel=0.05)
    C = causal_matrix("causal", n, n, beta, rng=2)
    assert np.sum(C * C) / n == pytest.approx(theta1 / 2, rel=0.05)


# --------------------------------------------------------------------------- the law on the base

def test_causal_law_on_the_spectral_law_base():
    """freeattn.causal_law (the base's representation, its log-end panel the map
    of eq. (8.18)) against the solver: pdf rtol 1e-11 inside the
    support (also at 1e-30 and 1e-200, in the log-end panel), CDF atol 1e-13
    against the exact log potential eq. (10.13), ppf inverts the CDF, total
    mass 1 (1e-12), exact moments eq. (10.16), support eq. (10.17), and G
    eq. (10.12) through the law's own solver."""
    beta, gamma = 1.0, 1.0
    law = freeattn.causal_law(beta, gamma)
    assert isinstance(law, freeattn.CausalLaw)
    edge = causal_edge(beta, gamma)
    assert law.support() == (0.0, edge)
    x = np.array([1e-200, 1e-30, 1e-6, 0.01, 0.3, 1.0, 2.5, 4.0, 5.4])
    np.testing.assert_allclose(law.pdf(x), causal_density(beta, gamma, x), rtol=1e-11)
    np.testing.assert_allclose(law.cdf(x), causal_cdf(beta, gamma, x), atol=1e-13)
    q = np.array([0.01, 0.2, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(law.cdf(law.ppf(q)), q, atol=1e-12)
    assert law.total_mass() == pytest.approx(1.0, abs=1e-12)
    theta1, theta2 = _theta(beta)
    assert law.mean() == pytest.approx(theta1 / 2, rel=1e-14)
    assert law.moment(2) == pytest.approx(2 * theta1 ** 2 / 3 + theta2 ** 2 / (6 * gamma), rel=1e-14)
    z = 1.0 + 1.0j
    assert law.stieltjes(z) == pytest.approx(complex(causal_stieltjes(beta, gamma, z)), rel=1e-14)
    # the quantiles below F(5e-324) = 0.00135 are not float64 numbers: they come out 0
    assert law.ppf(1e-3) == 0.0


def test_causal_representation_transform_off_the_support_eq_8_28():
    """The Cauchy integral of the causal law's representation (used for ``G'`` by
    the composition solvers) equals the law's exact transform eq. (10.12) at a
    point of C+ over the support, just past the upper edge and beyond it
    (rtol 1e-11, the representation's accuracy), and ``G'`` equals a central
    difference of the exact transform with steps of 1e-3 of the distance to the
    support (rtol 1e-6, the difference's truncation error).
    Before eq. (8.28) the square-root panel next to the log end returned 1e20
    at ``0.5 + 0.3i`` (its series diverges there)."""
    law = freeattn.causal_law(0.55, 1.5)
    edge = law.support()[1]
    z = np.array([0.5 * edge + 0.3j * edge, edge * (1 + 1e-3) + 0j, 2.0 * edge + 0j])
    exact = law._stieltjes(z)
    np.testing.assert_allclose(law._stieltjes_from_representation(z), exact, rtol=1e-11)
    h = 1e-3 * edge * np.array([0.3, 1e-3, 1.0])        # 1e-3 of the distance to the support
    fd = (law._stieltjes(z + h) - law._stieltjes(z - h)) / (2 * h)
    np.testing.assert_allclose(law._stieltjes_derivative(z), fd, rtol=1e-6)


def test_composition_transform_takes_the_solver_next_to_the_log_end():
    """The pair (G, G') the composition solvers use: G from the representation where
    its error bound (eq. (8.28), the log-end quadrature checked against a finer
    rule) is below 1e-13 of |G|, from the solver eq. (10.12) elsewhere.  At five
    points (two next to the log end, where the bound is 8e-10 and 0.76 and the
    representation is off by 7.7e-10 and 0.47) G equals the solver's to 1e-12
    (the representation's accuracy, REPRESENTATION_TRANSFORM_RTOL's comment),
    and the estimate is within a factor 2 of the representation's actual error at both."""
    from freeattn.attention._causal_law import CausalLaw
    law = CausalLaw(0.55, 1.5)
    e = law.support()[1]
    z = e * np.array([0.01 + 0.01j, 0.1 + 0.001j, -0.01 + 0j, 0.2 + 0.05j, 0.5 + 0.01j])
    exact = law._stieltjes(z)
    g, dg = law._stieltjes_pair(z)
    np.testing.assert_allclose(g, exact, rtol=1e-12)
    rep = law._representation()
    plain, _, err, _ = rep.cauchy(z, derivative=True, error=True)
    assert abs(plain[1] - exact[1]) > 1e-3 * abs(exact[1])          # the fallback matters
    actual = np.abs(plain - exact)
    assert 0.5 * actual[0] <= err[0] <= 2 * actual[0] and 0.5 * actual[1] <= err[1] <= 2 * actual[1]
    taken = err <= 1e-13 * np.abs(plain)
    assert taken.sum() == 3 and np.all(np.abs(plain - exact)[taken] <= 1e-12 * np.abs(exact)[taken])


def test_transform_next_to_the_log_end_from_the_left():
    """G at real z < 0 within 5e-14 of the log end (where the vertical continuation
    used to stop at eta = 1e-8 and fail): real, negative, -1/|z| < G(z) (as
    G = int dmu/(z - x) with every x >= 0), and decreasing towards the end:
    G(-5e-14) < G(-1e-13) < G(-1e-6) < 0."""
    law = freeattn.causal_law(0.7, 1.0)
    z = np.array([-1e-6, -1e-13, -5e-14]) + 0j
    g = law.stieltjes(z)
    assert np.all(np.abs(g.imag) <= 1e-12 * np.abs(g.real))
    g = g.real
    assert np.all(g < 0) and np.all(g > -1 / np.abs(z.real))
    assert g[2] < g[1] < g[0]


def test_compositions_keeping_a_log_end_raise_a_convergence_error():
    """A sample covariance or a free product with the causal law keeps its logarithmic
    end at 0 (eq. (8.13)), whose panel needs the density below the float range:
    ConvergenceError naming the log end (it used to raise 'Newton failed at z=0j'
    after 139 s, and then NotImplementedError)."""
    causal_law = freeattn.causal_law(0.7, 1.0)
    for build in (lambda: freeattn.sample_covariance(causal_law, 0.5),
                  lambda: freeattn.free_multiplicative(freeattn.marchenko_pastur(1.0, 0.5),
                                                       causal_law)):
        with pytest.raises(ConvergenceError, match="logarithmic end"):
            build().pdf(0.5)


def test_semicircle_plus_causal_law_obeys_its_subordination_equation():
    """SC(1) ⊞ causal(0.55, 1.5) (generic solver, eq. (8.10); 349 s before the
    representation's transform, 1.5 s after): in the bulk G(x + i0) equals the
    causal law's own transform (eq. (10.12), the solver) at tau = x - G(x)
    (SC's R-transform is the identity), rtol 1e-11; at both edges e of the
    support, tau + G_c(tau) at tau = e - G(e) is e (rtol 1e-12: the edge is a
    critical value of that map, eq. (8.12)); the density integrates to 1."""
    law = freeattn.free_additive(freeattn.semicircle(1.0), freeattn.causal_law(0.55, 1.5))
    causal_law = freeattn.causal_law(0.55, 1.5)
    (lo, hi), = law.intervals()
    x = lo + (hi - lo) * np.array([0.1, 0.35, 0.6, 0.9])
    g = law.stieltjes(x + 0j)
    np.testing.assert_allclose(causal_law.stieltjes(x - g), g, rtol=1e-11)
    for edge in (lo, hi):
        # Im G(e) ~ sqrt(rounding of e) at a square-root edge: 1.4e-8 measured
        tau = edge - law.stieltjes(complex(edge))
        assert abs(tau.imag) <= 1e-6 * abs(tau)
        tau = tau.real
        assert tau + causal_law.stieltjes(complex(tau)).real == pytest.approx(edge, rel=1e-12)
    assert law.total_mass() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("beta,gamma", [(1.0, 1.0), (1.0, 0.3)])
def test_causal_cdf_and_ppf_at_the_log_end(beta, gamma):
    """The log-end panel of eq. (8.18) (LogEnd edge of scale theta1, eq. (10.18)):
    law.cdf at x = theta1 * (1e-3, 1e-6, 1e-12) against the exact CDF of the log
    potential, eq. (10.13), computed from the solution at x itself (atol 1e-13;
    measured <= 1.5e-15), and against the first form of the asymptotics (10.18)
    (error C y**3; measured C = 2.8-3.1 at gamma = 1, 13.5-17.5 at gamma = 0.3 at
    these x; bound 25); ppf inverts it (relative 1e-10 in x, measured <= 5e-14:
    dx/x = dq log(theta1/x)**2/A at the log end)."""
    law = freeattn.causal_law(beta, gamma)
    assert law._representation().panels[0].map.kind == "logend"
    solver, scale = causal._law(beta, gamma)
    x = law.theta1 * np.array([1e-3, 1e-6, 1e-12])
    F = law.cdf(x)
    np.testing.assert_allclose(F, causal_cdf(beta, gamma, x), atol=1e-13)
    L = np.log(x / law.theta1)
    y = 1 / (-L + 2 * solver.b2 ** 2 / solver.gamma)
    assert np.all(np.abs(F - solver.tiny_cdf(L)) < 25 * y ** 3)
    np.testing.assert_allclose(law.ppf(F), x, rtol=1e-10)
    assert 0.13 < F[0] < 0.22            # 13-21% of the mass below 1e-3 theta1 (theory 10.8)


def test_causal_models_are_registered():
    """The registry entries 'causal' (eq. (10.1)) and 'causal_linear' (eq. (10.3))
    sample from the shared draw (Y_c is the lower triangle of the chain's linear
    model of the same seed) and follow causal_law."""
    assert {"causal", "causal_linear"} <= set(freeattn.MODELS)
    model = freeattn.MODELS["causal"]
    assert model.limit_law(1.0, 1.0) is freeattn.causal_law(1.0, 1.0)
    C = freeattn.sample_model("causal", 7, 5, 1.0, rng=9)
    np.testing.assert_array_equal(C, causal_matrix("causal", 7, 5, 1.0, rng=9))
    Y = freeattn.sample_model("causal_linear", 7, 5, 1.0, rng=9)
    np.testing.assert_allclose(Y, np.tril(freeattn.sample_model("linear", 7, 5, 1.0, rng=9)),
                               atol=1e-15)


def test_cli_causal_command(capsys):
    """`freeattn causal` reports the support (eq. (10.17)), the gap mass
    (eq. (10.19)) and the exact moments (eq. (10.16)) of the library, and
    exits 2 naming gamma outside [0.1, 10]."""
    from freeattn.cli._cli import main

    assert main(["causal", "--beta", "1e-4", "--gamma", "0.1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    sup = causal_support(1e-4, 0.1)
    assert (data["interval2_lo"], data["squared_edge"]) == (sup.intervals[1][0], sup.upper)
    assert data["cdf_on_gap1"] == pytest.approx(0.9, abs=1e-15)
    assert data["m2"] == causal_moments(1e-4, 0.1, 3)[1]
    assert main(["causal", "--beta", "1", "--gamma", "0.01"]) == 2
    assert "gamma" in capsys.readouterr().err


@pytest.mark.statistical
def test_validate_uses_the_floor_aware_distance_for_causal_models():
    """validate(models=["causal_linear"]) reports the distance of eq. (7.15) (the model
    has floor=True): recomputed from the documented draws (i-th child of
    SeedSequence(5), n = 150, 2 draws) with the library's spectral routine it matches
    to 1e-12; with LAPACK's SVD instead (which places the values below the floor
    differently) within one count, 1/N; the plain KS (7.9) of the same pool is larger
    (the unresolved values)."""
    import scipy.linalg

    from freeattn.montecarlo import _statistics as stats

    assert freeattn.MODELS["causal_linear"].floor and freeattn.MODELS["causal"].floor
    n, draws, seed = 150, 2, 5
    rep = freeattn.validate(1.0, 1.0, n, draws, models=["causal_linear"], rng=seed,
                            progress=False)
    res = rep.results["causal_linear"]
    law = freeattn.causal_law(1.0, 1.0)
    mats = [freeattn.sample_chain(n, n, 1.0, models=["causal_linear"], rng=child)["causal_linear"]
            for child in np.random.SeedSequence(seed).spawn(draws)]

    def floor_ks(pooled):
        floor = stats.resolution_floor(n, pooled[-1])
        return stats.ks_distance_above_floor(pooled, law.cdf(pooled), floor, float(law.cdf(floor)))

    own = np.sort(np.concatenate([freeattn.squared_singular_values(Y) for Y in mats]))
    assert res.ks == pytest.approx(floor_ks(own), rel=1e-12)
    lapack = np.sort(np.concatenate([scipy.linalg.svdvals(Y) ** 2 for Y in mats]))
    assert abs(res.ks - floor_ks(lapack)) <= 1.0 / (n * draws) + 1e-12
    assert stats.ks_distance(law.cdf(own)) > res.ks


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_cli_causal_command_every_format(fmt, capsys):
    """`freeattn causal --format F` prints the upper edge of eq. (10.17) and the exact
    m1 = theta1/2 of eq. (10.16) in each of the four formats of the renderer."""
    from freeattn.cli._cli import main

    assert main(["causal", "--beta", "1", "--gamma", "1", "--format", fmt]) == 0
    out = capsys.readouterr().out
    edge, m1 = causal_edge(1.0, 1.0), float(np.expm1(1.0)) / 2
    if fmt == "json":
        data = json.loads(out)
        assert data["squared_edge"] == pytest.approx(edge, rel=1e-15)
        assert data["m1"] == pytest.approx(m1, rel=1e-15)
    elif fmt == "csv":
        # csv is the density/CDF table (as for every law command): its last
        # point is the upper edge, where the CDF reaches 1.
        lines = out.strip().splitlines()
        assert lines[0] == "x,pdf,cdf"
        x, _, cdf = (float(v) for v in lines[-1].split(","))
        assert x == pytest.approx(edge, rel=1e-15) and cdf == pytest.approx(1.0, abs=1e-14)
    else:
        assert f"{edge:.8g}" in out and f"{m1:.8g}" in out
