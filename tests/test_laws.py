"""Tests of the public spectral laws (freeattn._laws) against closed forms.

Tolerances are quoted beside each check with the source of the expected value.
"""

import numpy as np
import pytest

import freeattn
from freeattn import attention_law, marchenko_pastur, operator_norm


def test_marchenko_pastur_density_closed_form():
    """MP density sqrt((x+ - x)(x - x-))/(2 pi v c x), theory eq. (5.4); rtol 1e-12."""
    for v, c in [(1.0, 1.0), (2.0, 0.3), (0.5, 2.5)]:
        mp = marchenko_pastur(v, c)
        lo, hi = v * (1 - np.sqrt(c)) ** 2, v * (1 + np.sqrt(c)) ** 2
        x = np.linspace(lo, hi, 403)[1:-1]
        exact = np.sqrt((hi - x) * (x - lo)) / (2 * np.pi * v * c * x)
        np.testing.assert_allclose(mp.pdf(x), exact, rtol=1e-12)
        assert mp.atom == pytest.approx(max(0.0, 1 - 1 / c), abs=1e-15)


def test_quarter_circle_beta_large():
    """At beta = 4 (alpha**2/theta1 = 1 - 2e-6) s/sqrt(theta1) is quarter-circle
    sqrt(4 - s**2)/pi (MP takes over, theory eq. (6.12)); atol 1e-4 set by the
    beta**2/theta1 = 1.8e-6 perturbation."""
    law = attention_law(4.0)
    scale = np.sqrt(freeattn.linear_coefficients(4.0).theta1)
    s = np.linspace(0.0, 1.99, 200)
    np.testing.assert_allclose(law.pdf(s * scale) * scale, np.sqrt(4 - s * s) / np.pi, atol=1e-4)


def test_squared_law_mass_mean_second_moment():
    """Mass 1 (1e-10), m1 = theta1 and m2 = 2 theta1**2 + beta**4/gamma (SPEC 2,
    eq. (5.11)-(5.12)) from the density by quadrature of the CDF expansion."""
    for beta, gamma in [(1.0, 1.0), (0.5, 0.1), (2.0, 0.02), (1.0, 50.0)]:
        sq = attention_law(beta, gamma).squared()
        assert sq.cdf(sq.support()[1]) == pytest.approx(1.0, abs=1e-10)
        assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
        theta1 = np.expm1(beta ** 2)
        assert sq.mean() == pytest.approx(theta1, rel=1e-14)
        assert sq.moment(2) == pytest.approx(2 * theta1 ** 2 + beta ** 4 / gamma, rel=1e-13)


def test_operator_norm_exceeds_mp():
    """The true edge is strictly above the MP edge 4 theta1 (SPEC section 2)."""
    for beta in (0.5, 1.0, 2.0):
        r = operator_norm(beta)
        assert r.squared_edge > r.mp_squared_edge
        assert r.norm == pytest.approx(np.sqrt(r.squared_edge), rel=1e-15)
