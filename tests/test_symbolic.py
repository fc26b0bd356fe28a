"""Sympy identity checks of the theory notes, equation by equation.

Each test states the equation it checks.  The derivations in
``freeattn.attention._symbolic`` compute the closed forms from definitions (Gaussian
expectations); here they are compared, as exact sympy identities, with the
formulas written in theory/02_coefficients.md, 03_centering.md and
04_covariance.md.  The Gaussian-expectation engine itself is checked against
``sympy.integrate``.
"""

import sympy as sp

from freeattn.attention import _symbolic as sym
from freeattn.attention._symbolic import BETA as b

x, t, r = sp.symbols("x t r", real=True)
z1, z2 = sp.symbols("z1 z2", real=True)
rho_jj, rho_kk, rho_jk = sym.gram_symbols()


def _is_zero(expr):
    return sp.simplify(sp.expand(expr)) == 0


def test_gaussian_expectation_matches_sympy_integrate():
    """The engine (completing the square) against direct integration of the density."""
    density = sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi)
    for expr in (x**6, (x**3 - 2 * x) * sp.exp(t * x), sp.exp(b * x - b**2 / 2) ** 2):
        direct = sp.integrate(expr * density, (x, -sp.oo, sp.oo), conds="none")
        assert _is_zero(sym.gaussian_expectation(expr, x) - direct), expr
    # A term outside the polynomial-times-exponential class goes to sympy.integrate.
    assert sym.gaussian_expectation(sp.exp(-x**2 / 2), x) == sp.sqrt(2) / 2


def test_feature_is_centred():
    """eq. (2.1): E f(chi) = 0."""
    assert sym.gaussian_expectation(sym.feature(b, x), x) == 0


def test_hermite_orthogonality():
    """eq. (2.2): E[He_j He_k] = k! delta_jk for j, k <= 5."""
    for j in range(6):
        for k in range(6):
            value = sym.gaussian_expectation(sp.hermite_prob(j, x) * sp.hermite_prob(k, x), x)
            assert value == (sp.factorial(k) if j == k else 0)
        assert sym.derive_hermite_norm(j) == sp.factorial(j)


def test_hermite_coefficients_and_generating_function():
    """eq. (2.3): c_k = beta**k/k!, by projection and by the generating function."""
    for k in range(9):
        assert sym.derive_hermite_coefficient(k) == b**k / sp.factorial(k)
    # Generating function: the series of exp(t x - t**2/2) in t has coefficients He_k(x)/k!.
    series = sp.series(sp.exp(t * x - t**2 / 2), t, 0, 8).removeO()
    for k in range(8):
        assert sp.expand(series.coeff(t, k) - sp.hermite_prob(k, x) / sp.factorial(k)) == 0
    # Partial sum of the expansion converges to the feature (Taylor in beta to order 7).
    partial = sum(sym.derive_hermite_coefficient(k) * sp.hermite_prob(k, x) for k in range(8))
    target = sp.series(sym.feature(b, x) + 1, b, 0, 8).removeO()
    assert sp.expand(partial - target) == 0


def test_linear_coefficients_closed_forms():
    """eq. (2.4), eq. (2.5), eq. (2.6): derived theta1, theta2, alpha2 equal the closed forms."""
    c = sym.derive_linear_coefficients()
    assert _is_zero(c["theta1"] - (sp.exp(b**2) - 1))
    assert _is_zero(c["theta2"] - b**2)
    assert _is_zero(c["alpha2"] - (sp.exp(b**2) - 1 - b**2))
    # Stein's lemma behind eq. (2.5): E f'(chi) = E[chi f(chi)] = c_1.
    f = sym.feature(b, x)
    assert _is_zero(sym.gaussian_expectation(sp.diff(f, x), x)
                    - sym.gaussian_expectation(x * f, x))
    assert _is_zero(sym.gaussian_expectation(x * f, x) - sym.derive_hermite_coefficient(1))


def test_order_variances_and_their_sum():
    """eq. (2.7): v_k = beta**(2k)/k! and sum_{k>=1} v_k = theta1 (sympy summation)."""
    for k in range(7):
        assert sym.derive_order_variance(k) == b ** (2 * k) / sp.factorial(k)
    assert _is_zero(sym.derive_theta1_series() - (sp.exp(b**2) - 1))


def test_truncation_remainder_is_taylor_remainder():
    """eq. (2.8): alpha2 - alpha2_{<=K} is the Taylor tail of exp at beta**2 (K = 0..6)."""
    c = sym.derive_linear_coefficients()
    u = sp.Symbol("u", positive=True)
    for order in range(7):
        partial = sum(sym.derive_order_variance(k) for k in range(2, order + 1))
        # Orders <= max(K, 1) are either kept (2..K) or are theta2 and the common mode.
        expected = sp.exp(u) - sp.series(sp.exp(u), u, 0, max(order, 1) + 1).removeO()
        assert _is_zero((c["alpha2"] - partial).subs(b, sp.sqrt(u)) - expected), order


def test_mehler_formula():
    """eq. (2.9): E[He_j(X) He_k(Y)] = delta_jk k! r**k and E[f(X) f(Y)] = exp(beta**2 r) - 1."""
    corr = sp.Symbol("r", positive=True)
    X = z1
    Y = corr * z1 + sp.sqrt(1 - corr**2) * z2

    def expectation(expr):
        return sym.gaussian_expectation(sym.gaussian_expectation(expr, z2), z1)

    for j in range(4):
        for k in range(4):
            value = expectation(sp.hermite_prob(j, X) * sp.hermite_prob(k, Y))
            expected = sp.factorial(k) * corr**k if j == k else 0
            assert _is_zero(value - expected), (j, k)
    covariance = expectation(sym.feature(b, X) * sym.feature(b, Y))
    assert _is_zero(covariance - (sp.exp(b**2 * corr) - 1))


def test_normalizer_mean():
    """eq. (3.1): E[exp(beta S_ij) | K] = exp(beta**2 rho_jj / 2), and z_i = 1 + mean of f."""
    assert _is_zero(sym.derive_normalizer_mean() - sp.exp(b**2 * rho_jj / 2))
    s = sp.Symbol("s", real=True)
    # exp(beta s) / exp(beta**2/2) = 1 + f(s), termwise identity behind z_i.
    assert _is_zero(sp.exp(b * s) / sp.exp(b**2 / 2) - (1 + sym.feature(b, s)))


def test_conditional_mean():
    """eq. (3.5): E[f(S_ij) | K] = exp(beta**2 (rho_jj - 1)/2) - 1."""
    assert _is_zero(sym.derive_conditional_mean() - (sp.exp(b**2 * (rho_jj - 1) / 2) - 1))


def test_mean_over_keys_is_order_one_over_d():
    """eq. (3.7): E mu_j = exp(-beta**2/2)(1 - beta**2/d)**(-d/2) - 1 = beta**4/(4d) + O(d**-2),
    Var mu_j = beta**4/(2d) + O(d**-2), from the chi-square MGF E exp(t chi2_d) = (1-2t)**(-d/2)."""
    eps = sp.Symbol("epsilon", positive=True)  # eps = 1/d

    def chi2_mgf_over_d(tau):  # E exp(tau |k|^2/d) with |k|^2 ~ chi2_d
        return (1 - 2 * tau * eps) ** (-1 / (2 * eps))

    mean = sp.exp(-b**2 / 2) * chi2_mgf_over_d(b**2 / 2) - 1
    second = sp.exp(-b**2) * chi2_mgf_over_d(b**2)
    variance = second - (mean + 1) ** 2
    assert _is_zero(sp.series(mean, eps, 0, 2).removeO() - b**4 * eps / 4)
    assert _is_zero(sp.series(variance, eps, 0, 2).removeO() - b**4 * eps / 2)


def test_bivariate_mgf():
    """eq. (4.1): E[exp(beta (S_ij + S_ik)) | K] through the Cholesky factor."""
    s_j = sp.sqrt(rho_jj) * z1
    s_k = rho_jk / sp.sqrt(rho_jj) * z1 + sp.sqrt(rho_kk - rho_jk**2 / rho_jj) * z2
    value = sym.gaussian_expectation(
        sym.gaussian_expectation(sp.exp(b * (s_j + s_k)), z2), z1)
    expected = sp.exp(b**2 * (rho_jj + rho_kk + 2 * rho_jk) / 2)
    assert _is_zero(sp.log(value) - sp.log(expected))


def test_conditional_covariance_closed_form():
    """eq. (4.2): derived Sigma_f equals exp(beta**2 (rho_jj+rho_kk-2)/2)(exp(beta**2 rho_jk)-1)."""
    sigma_f = sym.derive_conditional_covariance()
    expected = sp.exp(b**2 * (rho_jj + rho_kk - 2) / 2) * (sp.exp(b**2 * rho_jk) - 1)
    assert _is_zero(sigma_f - expected)
    # At rho = I the diagonal is theta1 (eq. (2.4)).
    assert _is_zero(sigma_f.subs({rho_jj: 1, rho_kk: 1, rho_jk: 1}) - (sp.exp(b**2) - 1))


def test_hermite_form_of_sigma_f():
    """eq. (4.3): Sigma_f = s_j s_k sum_m beta**(2m)/m! rho_jk**m (series in rho_jk to order 6)."""
    sigma_f = sym.derive_conditional_covariance()
    envelope = sp.exp(b**2 * (rho_jj - 1) / 2) * sp.exp(b**2 * (rho_kk - 1) / 2)
    hermite = envelope * sum(sym.derive_order_variance(m) * rho_jk**m for m in range(1, 7))
    series = sp.series(sigma_f, rho_jk, 0, 7).removeO()
    assert _is_zero(series - hermite)


def test_sigma_g_matches_sigma_f_at_the_typical_point():
    """eq. (4.4): Sigma_G = theta2 rho + (theta1 - theta2) I agrees with Sigma_f at rho_jj = 1
    (diagonal theta1) and in the first derivative in rho_jk off the diagonal (theta2)."""
    c = sym.derive_linear_coefficients()
    sigma_f = sym.derive_conditional_covariance()
    diagonal_g = c["theta2"] * 1 + c["alpha2"]
    assert _is_zero(sigma_f.subs({rho_jj: 1, rho_kk: 1, rho_jk: 1}) - diagonal_g)
    slope = sp.diff(sigma_f, rho_jk).subs({rho_jj: 1, rho_kk: 1, rho_jk: 0})
    assert _is_zero(slope - c["theta2"])


def test_taylor_step():
    """eq. (4.5): Sigma_f - Sigma_G to second order: off-diagonal beta**4/2 r (eps_j + eps_k + r),
    diagonal 2 theta1 theta2 eps_j (first order) -- and zero at first order off the diagonal."""
    eps_j, eps_k, rr = sp.symbols("eps_j eps_k r", real=True)
    first = sym.derive_taylor_step(1)
    assert first["offdiagonal"] == 0
    assert _is_zero(first["diagonal"] - 2 * (sp.exp(b**2) - 1) * b**2 * eps_j)
    second = sym.derive_taylor_step(2)
    assert _is_zero(second["offdiagonal"] - b**4 / 2 * rr * (eps_j + eps_k + rr))


def test_second_moment_of_linear_model():
    """eq. (4.8): E m2 from the Wishart identity and the Gram moments of eq. (4.7),
    and its limit 2 theta1**2 + beta**4/gamma (n, d -> oo with d = gamma n)."""
    n, d, gamma = sp.symbols("n d gamma", positive=True)
    c = sym.derive_linear_coefficients()
    theta1, beta2, alpha2 = c["theta1"], c["theta2"], c["alpha2"]
    # Moments of tr(rho)/n and tr(rho**2)/n, eq. (4.7): mean 1, variance 2/(n d); 1 + (n+1)/d.
    e_tr_rho, var_tr_rho, e_tr_rho2 = 1, 2 / (n * d), 1 + (n + 1) / d
    e_tau1 = beta2 * e_tr_rho + alpha2
    e_tau1_sq = e_tau1**2 + beta2**2 * var_tr_rho
    e_tau2 = beta2**2 * e_tr_rho2 + 2 * beta2 * alpha2 * e_tr_rho + alpha2**2
    e_m2 = (1 + 1 / n) * e_tau2 + e_tau1_sq  # E[W A W] = n(n+1) A + n tr(A) I
    assert _is_zero(e_tau1 - theta1)  # E m1 = theta1, also eq. (1.4)
    expected = (1 + 1 / n) * (theta1**2 + b**4 * (n + 1) / d) + theta1**2 + 2 * b**4 / (n * d)
    assert _is_zero(e_m2 - expected)
    limit = sp.limit(e_m2.subs(d, gamma * n), n, sp.oo)
    assert _is_zero(limit - (2 * theta1**2 + b**4 / gamma))
