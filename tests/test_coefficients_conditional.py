"""Tests of the conditional moments of a feature row given the keys.

Covers ``conditional_mean`` (theory eq. (3.5)), ``conditional_covariance``
(theory eq. (4.2)) and ``gaussian_equivalent_covariance`` (theory eq. (4.4)).
"""

import numpy as np
import pytest

from freeattn.attention._coefficients import (
    conditional_covariance,
    conditional_mean,
    gaussian_equivalent_covariance,
    linear_coefficients,
)


def _gram(n, d, rng):
    keys = rng.standard_normal((n, d))
    return keys @ keys.T / d


def test_identity_gram_gives_theta1_on_the_diagonal():
    """eq. (4.2) at rho = I: Sigma_f = theta1 I, mean 0 (eq. (3.5))."""
    beta = 0.7
    theta1 = np.expm1(beta**2)  # closed form, eq. (2.4)
    np.testing.assert_allclose(conditional_covariance(np.eye(4), beta), theta1 * np.eye(4),
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(conditional_mean(np.eye(4), beta), np.zeros(4))


def test_shapes_and_stacks():
    rng = np.random.default_rng(1)
    grams = np.stack([_gram(5, 7, rng) for _ in range(3)])
    assert conditional_mean(grams, 1.0).shape == (3, 5)
    assert conditional_covariance(grams, 1.0).shape == (3, 5, 5)
    assert gaussian_equivalent_covariance(grams, 1.0).shape == (3, 5, 5)
    np.testing.assert_array_equal(conditional_covariance(grams, 1.0)[1],
                                  conditional_covariance(grams[1], 1.0))


def test_gaussian_equivalent_is_theta2_rho_plus_alpha2():
    """eq. (4.4): Sigma_G = theta2 rho + (theta1 - theta2) I."""
    rng = np.random.default_rng(2)
    rho = _gram(6, 12, rng)
    c = linear_coefficients(1.3)
    np.testing.assert_allclose(gaussian_equivalent_covariance(rho, 1.3),
                               c.theta2 * rho + c.alpha2 * np.eye(6), rtol=1e-14)


@pytest.mark.statistical
def test_conditional_moments_match_monte_carlo():
    """eq. (3.5) and eq. (4.2) against a seeded Monte Carlo over the query.

    Fixed keys (n=4, d=3 so that rho is far from I), 4e5 Gaussian queries;
    the mean of f(q.k_j/sqrt d) and its covariance must match the closed forms
    within 6 Monte Carlo standard errors (standard error estimated from the
    same sample).
    """
    rng = np.random.default_rng(20261129)
    n, d, beta, draws = 4, 3, 0.8, 400_000
    keys = rng.standard_normal((n, d))
    rho = keys @ keys.T / d
    scores = rng.standard_normal((draws, d)) @ keys.T / np.sqrt(d)
    f = np.expm1(beta * scores - beta**2 / 2)
    mean = f.mean(axis=0)
    se_mean = f.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(mean - conditional_mean(rho, beta)) < 6 * se_mean)
    centred = f - conditional_mean(rho, beta)
    products = centred[:, :, None] * centred[:, None, :]
    cov = products.mean(axis=0)
    se_cov = products.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(cov - conditional_covariance(rho, beta)) < 6 * se_cov)


@pytest.mark.parametrize("gram, exc", [
    (np.ones(3), ValueError),
    (np.ones((2, 3)), ValueError),
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), ValueError),
    (np.array([[-1.0, 0.0], [0.0, 1.0]]), ValueError),
    ("eye", TypeError),
    (np.eye(2) * (1 + 1j), TypeError),
])
def test_bad_gram(gram, exc):
    with pytest.raises(exc, match="gram"):
        conditional_covariance(gram, 1.0)


@pytest.mark.parametrize("beta, exc", [
    (0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError), ("1", TypeError),
    (1 + 0j, TypeError), (27.0, ValueError), ([1.0, 2.0], ValueError),
])
def test_bad_beta(beta, exc):
    for func in (conditional_mean, conditional_covariance, gaussian_equivalent_covariance):
        with pytest.raises(exc, match="beta"):
            func(np.eye(2), beta)


def test_overflow_is_reported():
    with pytest.raises(ValueError, match="beta"):
        conditional_covariance(4.0 * np.eye(2), 20.0)
