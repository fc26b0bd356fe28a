"""Numerical checks of theory/01_model.md, 03_centering.md and 04_covariance.md.

Seeded samples at small sizes.  Exact identities are checked to rounding
(rtol/atol ~1e-12); statistical statements within a stated number of Monte
Carlo standard errors, or within a stated relative band whose width is the
spread measured over seeds 0-5 (given next to each test) times about two.
"""

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from freeattn import (
    conditional_covariance,
    conditional_mean,
    gaussian_equivalent_covariance,
    linear_coefficients,
)

BETA = 1.0
THETA1 = np.expm1(BETA**2)  # eq. (2.4)


def _scores(n, d, rng, keys=None):
    keys = rng.standard_normal((n, d)) if keys is None else keys
    queries = rng.standard_normal((n, d))
    return queries @ keys.T / np.sqrt(d), keys


def _attention(scores, beta):
    weights = np.exp(beta * scores - (beta * scores).max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def _within_standard_errors(samples, expected, k=6.0):
    mean = samples.mean(axis=0)
    se = samples.std(axis=0) / np.sqrt(samples.shape[0])
    return np.all(np.abs(mean - expected) <= k * se)


# --- 01_model.md -----------------------------------------------------------------------

@pytest.mark.statistical
def test_score_rows_given_keys_have_covariance_rho():
    """eq. (1.1): given K, rows of S are N(0, rho); 2e5 query rows, within 6 standard errors."""
    rng = np.random.default_rng(11)
    n, d, draws = 4, 3, 200_000
    keys = rng.standard_normal((n, d))
    rho = keys @ keys.T / d
    scores = rng.standard_normal((draws, d)) @ keys.T / np.sqrt(d)
    assert _within_standard_errors(scores, np.zeros(n))
    assert _within_standard_errors(scores[:, :, None] * scores[:, None, :], rho)


def test_centred_attention_annihilates_ones():
    """eq. (1.2): A is row-stochastic and A_perp 1 = 0 (to 1e-14)."""
    rng = np.random.default_rng(12)
    a = _attention(_scores(60, 30, rng)[0], 2.0)
    assert (a >= 0).all()
    np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    a_perp = a - np.full_like(a, 1 / 60)
    np.testing.assert_allclose(a_perp @ np.ones(60), 0.0, rtol=0, atol=1e-14)


@pytest.mark.statistical
def test_mean_squared_singular_value_is_theta1():
    """eq. (1.3): sum_ij (A_ij - 1/n)**2 -> theta1; n = d = 1000, beta = 1, within 5 %
    (ratios 0.972-1.001 over seeds 0-5)."""
    rng = np.random.default_rng(13)
    n = 1000
    a = _attention(_scores(n, n, rng)[0], BETA)
    assert np.sum((a - 1 / n) ** 2) == pytest.approx(THETA1, rel=0.05)


@pytest.mark.statistical
def test_linear_model_entries_have_variance_theta1():
    """eq. (1.4): E m1 = E tr(Y_lin Y_lin^T)/n = theta1 exactly; 200 draws at n = d = 40,
    within 5 standard errors."""
    rng = np.random.default_rng(14)
    n, beta = 40, 1.3
    c = linear_coefficients(beta)
    m1 = []
    for _ in range(200):
        scores, _ = _scores(n, n, rng)
        y = (beta * scores + c.alpha * rng.standard_normal((n, n))) / np.sqrt(n)
        m1.append(np.sum(y * y) / n)
    assert _within_standard_errors(np.array(m1), c.theta1, k=5)


# --- 03_centering.md -------------------------------------------------------------------

def _normalizers(scores, beta):
    n = scores.shape[1]
    return np.exp(beta * scores).sum(axis=1) / (n * np.exp(beta**2 / 2))


def test_relative_normalizer_is_one_plus_mean_feature():
    """eq. (3.1): z_i = Z_i/(n exp(beta**2/2)) = 1 + (1/n) sum_j f(S_ij), to 1e-13."""
    rng = np.random.default_rng(31)
    scores, _ = _scores(50, 20, rng)
    f = np.expm1(BETA * scores - BETA**2 / 2)
    np.testing.assert_allclose(_normalizers(scores, BETA), 1 + f.mean(axis=1), rtol=1e-13)


@pytest.mark.statistical
def test_normalizer_concentration():
    """eq. (3.2): n Var(z_i - 1) -> theta1 + beta**4/(2 gamma) and max_i |z_i - 1| is a few
    sqrt(2 log n) standard deviations.  n = d = 1000, beta = 1: variance ratio within 20 %
    (0.90-1.06 over seeds 0-5), max below 2.5 (measured 0.87-1.16)."""
    rng = np.random.default_rng(32)
    n = 1000
    z = _normalizers(_scores(n, n, rng)[0], BETA)
    variance = (THETA1 + BETA**4 / 2) / n
    assert np.var(z - 1) / variance == pytest.approx(1.0, abs=0.2)
    assert np.abs(z - 1).max() <= 2.5 * np.sqrt(2 * np.log(n) * variance)


def _feature_matrices(n, d, beta, rng):
    scores, keys = _scores(n, d, rng)
    y_f = np.expm1(beta * scores - beta**2 / 2) / np.sqrt(n)
    return scores, keys, y_f


def test_exact_identity_for_centred_attention():
    """eq. (3.3): sqrt(n) A_perp = D_z^{-1} Y_f (I - P), to 1e-12."""
    rng = np.random.default_rng(33)
    n, beta = 80, 1.5
    scores, _, y_f = _feature_matrices(n, 40, beta, rng)
    lhs = np.sqrt(n) * (_attention(scores, beta) - 1 / n)
    centring = np.eye(n) - np.full((n, n), 1 / n)
    rhs = (y_f @ centring) / _normalizers(scores, beta)[:, None]
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-12 * np.abs(lhs).max())


def test_normalizers_move_singular_values_little():
    """eq. (3.4): |s_k(sqrt(n) A_perp) - s_k(Y_f (I-P))| <= max|1/z - 1| ||Y_f (I-P)||."""
    rng = np.random.default_rng(34)
    n = 200
    scores, _, y_f = _feature_matrices(n, n, BETA, rng)
    z = _normalizers(scores, BETA)
    b = y_f - y_f.mean(axis=1, keepdims=True)  # Y_f (I - P)
    s_attention = np.linalg.svd(np.sqrt(n) * (_attention(scores, BETA) - 1 / n),
                                compute_uv=False)
    s_b = np.linalg.svd(b, compute_uv=False)
    bound = np.abs(1 / z - 1).max() * s_b[0]
    assert np.abs(s_attention - s_b).max() <= bound + 1e-12
    assert bound < 0.5 * s_b[0]  # the bound is informative at this size


def test_conditional_mean_matches_formula():
    """eq. (3.5): conditional_mean is exp(beta**2 (rho_jj - 1)/2) - 1 (the MC check of the
    same equation is in test_coefficients_conditional.py)."""
    rho = np.diag([0.5, 1.0, 2.0])
    np.testing.assert_allclose(conditional_mean(rho, 2.0),
                               np.expm1(4.0 * (np.diag(rho) - 1) / 2), rtol=1e-15)


def _ks_distance(a, b):
    grid = np.union1d(a, b)
    fa = np.searchsorted(np.sort(a), grid, side="right") / a.size
    fb = np.searchsorted(np.sort(b), grid, side="right") / b.size
    return np.abs(fa - fb).max()


def test_rank_one_steps_move_the_distribution_by_at_most_one_over_n():
    """eq. (3.6): sup |F^{BB^T} - F^{CC^T}| <= rank(B - C)/n for the two centerings."""
    rng = np.random.default_rng(36)
    n, d = 150, 75
    _, keys, y_f = _feature_matrices(n, d, BETA, rng)
    mu = conditional_mean(keys @ keys.T / d, BETA)
    y_c = y_f - np.outer(np.ones(n), mu) / np.sqrt(n)
    y_p = y_f - y_f.mean(axis=1, keepdims=True)
    sq = {name: np.linalg.svd(m, compute_uv=False) ** 2
          for name, m in (("f", y_f), ("c", y_c), ("p", y_p))}
    assert _ks_distance(sq["f"], sq["c"]) <= 1 / n + 1e-12
    assert _ks_distance(sq["f"], sq["p"]) <= 1 / n + 1e-12


@pytest.mark.statistical
def test_conditional_mean_over_keys():
    """eq. (3.7): E mu_j = exp(-beta**2/2)(1 - beta**2/d)**(-d/2) - 1 and
    Var mu_j = exp(-beta**2)(1 - 2 beta**2/d)**(-d/2) - (E mu_j + 1)**2 (chi-square MGF),
    d = 20, beta = 1, 4e5 key norms, within 6 standard errors; at d = 400 the exact
    values are within 1 % of the leading terms beta**4/(4d), beta**4/(2d)."""
    rng = np.random.default_rng(37)
    d, beta = 20, BETA
    rho_jj = rng.chisquare(d, size=400_000) / d
    mu = np.expm1(beta**2 * (rho_jj - 1) / 2)
    mean = np.exp(-beta**2 / 2) * (1 - beta**2 / d) ** (-d / 2) - 1
    var = np.exp(-beta**2) * (1 - 2 * beta**2 / d) ** (-d / 2) - (mean + 1) ** 2
    assert _within_standard_errors(mu, mean)
    assert _within_standard_errors((mu - mean) ** 2, var)
    d = 400
    mean = np.exp(-beta**2 / 2) * (1 - beta**2 / d) ** (-d / 2) - 1
    var = np.exp(-beta**2) * (1 - 2 * beta**2 / d) ** (-d / 2) - (mean + 1) ** 2
    assert mean == pytest.approx(beta**4 / (4 * d), rel=0.01)
    assert var == pytest.approx(beta**4 / (2 * d), rel=0.01)


# --- 04_covariance.md ------------------------------------------------------------------

def _gauss_hermite_pair(rho_jj, rho_kk, rho_jk, beta, nodes=80):
    """E f(X)f(Y), E f(X), E f(Y) by tensor Gauss-Hermite (probabilists') quadrature."""
    z, w = hermegauss(nodes)
    w = w / np.sqrt(2 * np.pi)
    z1, z2 = np.meshgrid(z, z, indexing="ij")
    weight = np.outer(w, w)
    x = np.sqrt(rho_jj) * z1
    y = rho_jk / np.sqrt(rho_jj) * z1 + np.sqrt(rho_kk - rho_jk**2 / rho_jj) * z2
    fx, fy = np.expm1(beta * x - beta**2 / 2), np.expm1(beta * y - beta**2 / 2)
    return np.sum(weight * fx * fy), np.sum(weight * fx), np.sum(weight * fy)


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_bivariate_mgf_and_covariance_by_quadrature(beta):
    """eq. (4.1) and eq. (4.2) against 80 x 80 Gauss-Hermite quadrature (numpy hermegauss;
    exact up to rounding for these entire integrands), rtol 1e-12."""
    rng = np.random.default_rng(41)
    for _ in range(5):
        rho_jj, rho_kk = rng.uniform(0.5, 1.5, size=2)
        rho_jk = rng.uniform(-0.9, 0.9) * np.sqrt(rho_jj * rho_kk)
        second, mean_j, mean_k = _gauss_hermite_pair(rho_jj, rho_kk, rho_jk, beta)
        gram = np.array([[rho_jj, rho_jk], [rho_jk, rho_kk]])
        mgf = np.exp(beta**2 * (rho_jj + rho_kk + 2 * rho_jk) / 2)  # eq. (4.1)
        assert (second + mean_j + mean_k + 1) * np.exp(beta**2) == pytest.approx(mgf, rel=1e-12)
        np.testing.assert_allclose(conditional_mean(gram, beta), [mean_j, mean_k], rtol=1e-12,
                                   atol=1e-14)
        assert conditional_covariance(gram, beta)[0, 1] == pytest.approx(
            second - mean_j * mean_k, rel=1e-12)


def test_hermite_form_numerically():
    """eq. (4.3): Sigma_f = s_j s_k sum_{m>=1} beta**(2m)/m! rho_jk**m (30 terms), rtol 1e-13."""
    rng = np.random.default_rng(43)
    keys = rng.standard_normal((6, 8))
    rho = keys @ keys.T / 8
    beta = 1.2
    envelope = np.exp(beta**2 * (np.diag(rho) - 1) / 2)
    series = sum(beta ** (2 * m) / np.prod(np.arange(1.0, m + 1)) * rho**m for m in range(1, 31))
    np.testing.assert_allclose(conditional_covariance(rho, beta),
                               np.outer(envelope, envelope) * series, rtol=1e-13)


def test_sigma_g_is_sigma_f_to_first_order():
    """eq. (4.4) and eq. (4.5) numerically: n = 30 keys, d = 1e4 (eps, r ~ 0.01); off the
    diagonal Sigma_f - Sigma_G - beta**4/2 r (eps_j + eps_k + r) <= 5 delta**3 (measured 0.44),
    on it Sigma_f - Sigma_G - 2 theta1 theta2 eps <= 10 eps**2 (second-order coefficient
    2 e - 1/2 = 4.94 at beta = 1, from the series of eq. (4.2))."""
    rng = np.random.default_rng(45)
    n, d = 30, 10_000
    keys = rng.standard_normal((n, d))
    rho = keys @ keys.T / d
    eps = np.diag(rho) - 1
    difference = conditional_covariance(rho, BETA) - gaussian_equivalent_covariance(rho, BETA)
    off = ~np.eye(n, dtype=bool)
    delta = max(np.abs(eps).max(), np.abs(rho[off]).max())
    second_order = BETA**4 / 2 * rho * (eps[:, None] + eps[None, :] + rho)
    assert np.abs((difference - second_order)[off]).max() <= 5 * delta**3
    diagonal = np.diag(difference) - 2 * THETA1 * BETA**2 * eps
    assert np.abs(diagonal).max() <= 10 * np.abs(eps).max() ** 2


@pytest.mark.statistical
def test_linear_model_rows_have_covariance_sigma_g():
    """eq. (4.6): given K, rows of beta S + alpha W are N(0, Sigma_G); 2e5 rows, 6 standard errors."""
    rng = np.random.default_rng(46)
    n, d, draws, beta = 4, 3, 200_000, 1.2
    keys = rng.standard_normal((n, d))
    c = linear_coefficients(beta)
    rows = (beta * rng.standard_normal((draws, d)) @ keys.T / np.sqrt(d)
            + c.alpha * rng.standard_normal((draws, n)))
    sigma_g = gaussian_equivalent_covariance(keys @ keys.T / d, beta)
    assert _within_standard_errors(rows[:, :, None] * rows[:, None, :], sigma_g)


def test_population_spectrum_is_affine_image_of_gram_spectrum():
    """eq. (4.7): spec(Sigma_G) = alpha2 + beta**2 spec(rho) (exact, 1e-12); rank(rho) = d when
    d < n, i.e. an atom 1 - gamma at 0; MP edges (1 +- sqrt(n/d))**2 within 0.1 at n = 200."""
    rng = np.random.default_rng(47)
    beta = 1.3
    c = linear_coefficients(beta)
    keys = rng.standard_normal((200, 400))
    rho = keys @ keys.T / 400
    np.testing.assert_allclose(np.linalg.eigvalsh(gaussian_equivalent_covariance(rho, beta)),
                               c.alpha2 + c.theta2 * np.linalg.eigvalsh(rho), rtol=1e-12)
    eig = np.linalg.eigvalsh(rho)
    ratio = 200 / 400
    assert eig[0] == pytest.approx((1 - np.sqrt(ratio)) ** 2, abs=0.1)
    assert eig[-1] == pytest.approx((1 + np.sqrt(ratio)) ** 2, abs=0.1)
    thin = rng.standard_normal((200, 50))
    assert np.linalg.matrix_rank(thin @ thin.T / 50) == 50  # atom 1 - gamma = 3/4


@pytest.mark.statistical
def test_gram_moments():
    """eq. (4.7): E tr(rho)/n = 1 and E tr(rho**2)/n = 1 + (n+1)/d exactly; n = 20, d = 10,
    4000 draws, within 5 standard errors."""
    rng = np.random.default_rng(48)
    n, d = 20, 10
    keys = rng.standard_normal((4000, n, d))
    rho = keys @ keys.transpose(0, 2, 1) / d
    tr1 = np.trace(rho, axis1=1, axis2=2) / n
    tr2 = np.sum(rho * rho, axis=(1, 2)) / n
    assert _within_standard_errors(tr1, 1.0, k=5)
    assert _within_standard_errors(tr2, 1 + (n + 1) / d, k=5)


@pytest.mark.statistical
def test_second_moment_of_linear_model_finite_n():
    """eq. (4.8): E m2 = (1 + 1/n)(theta1**2 + beta**4 (n+1)/d) + theta1**2 + 2 beta**4/(n d)
    exactly at finite n; n = 30, d = 15, beta = 1, 3000 draws, within 5 standard errors.
    The Marchenko-Pastur value 2 theta1**2 (+ finite-n terms) is excluded by the same test."""
    rng = np.random.default_rng(49)
    n, d, beta, draws = 30, 15, 1.0, 3000
    c = linear_coefficients(beta)
    keys = rng.standard_normal((draws, n, d))
    scores = rng.standard_normal((draws, n, d)) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    y = (beta * scores + c.alpha * rng.standard_normal((draws, n, n))) / np.sqrt(n)
    gram = y @ y.transpose(0, 2, 1)
    m2 = np.sum(gram * gram, axis=(1, 2)) / n
    expected = ((1 + 1 / n) * (c.theta1**2 + beta**4 * (n + 1) / d) + c.theta1**2
                + 2 * beta**4 / (n * d))
    assert _within_standard_errors(m2, expected, k=5)
    mp_like = (1 + 1 / n) * c.theta1**2 + c.theta1**2
    assert not _within_standard_errors(m2, mp_like, k=5)
