"""Tests of the piecewise-Chebyshev representation (freeattn._chebyshev),
theory eqs. (8.14)-(8.16), against closed forms."""

import math
from fractions import Fraction

import numpy as np
import pytest

from freeattn import DEFAULT_OPTIONS, ConvergenceError, marchenko_pastur, semicircle
from freeattn._chebyshev import (build_representation, cauchy_integral, clenshaw, edge_power,
                                 first_kind_nodes, nodes_coefficients)
from freeattn._law_base import Interval

_cheb = np.polynomial.chebyshev


def _mp_density(c):
    lo, hi = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2

    def f(x):
        return np.sqrt(np.maximum((hi - x) * (x - lo), 0)) / (2 * math.pi * c * x)
    return f, lo, hi


def test_edge_power_eq_8_14():
    """eq. (8.14): exponent j/p -> map power p and g ~ s**(p eta + p - 1)."""
    assert edge_power(Fraction(1, 2)) == (2, 2)
    assert edge_power(Fraction(-1, 2)) == (2, 0)
    assert edge_power(Fraction(-2, 3)) == (3, 0)
    assert edge_power(Fraction(1, 3)) == (3, 3)
    assert edge_power(0) == (1, 0)
    with pytest.raises(ValueError, match="integrable"):
        edge_power(-1)


@pytest.mark.parametrize("c, exponents", [(0.5, (Fraction(1, 2), Fraction(1, 2))),
                                          (1.0, (Fraction(-1, 2), Fraction(1, 2)))])
def test_panel_map_makes_g_analytic_eq_8_14(c, exponents):
    """eq. (8.14): with the edge maps, the MP density (square-root edges, and the
    x**(-1/2) hard edge at c = 1) is represented by two panels of at most 81
    nodes, to rtol 1e-13 at interior points and 2e-10 at 1e-6 of the width from
    an edge (closed form, theory eq. (5.4); there the density itself is only
    eps * width/distance ~ 2e-10 well conditioned)."""
    f, lo, hi = _mp_density(c)
    rep = build_representation(f, [Interval(lo, hi, *exponents)], DEFAULT_OPTIONS,
                               expected_mass=1.0)
    assert len(rep.panels) == 2 and rep.degree <= 81
    x = np.linspace(lo, hi, 1001)[1:-1]
    np.testing.assert_allclose(rep.pdf(x), f(x), rtol=1e-13)
    near = np.array([lo + 1e-6 * (hi - lo), hi - 1e-6 * (hi - lo)])
    np.testing.assert_allclose(rep.pdf(near), f(near), rtol=2e-10)


def test_nested_nodes_and_dct_eq_8_14():
    """The first-kind nodes of n are nodes of 3n (no discarded solves, eq. (8.14)),
    and the DCT coefficients interpolate: chebval at the nodes gives the values."""
    n = 9
    small, big = first_kind_nodes(n), first_kind_nodes(3 * n)
    np.testing.assert_allclose(big[1::3], small, atol=1e-15)
    vals = np.exp(small)
    coef = nodes_coefficients(vals)
    np.testing.assert_allclose(_cheb.chebval(small, coef), vals, rtol=1e-14)
    assert clenshaw(list(coef), 0.3) == pytest.approx(_cheb.chebval(0.3, coef), rel=1e-14)


def test_cdf_is_the_exact_integral_eq_8_15():
    """eq. (8.15): the semicircle CDF from its representation equals the closed form
    1/2 + (t sqrt(1-t^2) + asin t)/pi, t = x/2 (atol 1e-15), and the quantile
    inverts it (inverse interpolant + one Newton step; atol 1e-14)."""
    sc = semicircle(1.0)
    rep = sc._representation()
    x = np.linspace(-2, 2, 801)
    t = x / 2
    exact = 0.5 + (t * np.sqrt(1 - t * t) + np.arcsin(t)) / math.pi
    np.testing.assert_allclose(rep.cdf(x), exact, atol=1e-15)
    q = np.linspace(0, 1, 401)
    np.testing.assert_allclose(rep.cdf(rep.quantile(q * rep.total, DEFAULT_OPTIONS)), q * rep.total,
                               atol=1e-14)


def test_mass_check_raises_eq_8_15():
    """A density that does not integrate to the expected mass raises
    ConvergenceError quoting the difference (it is never renormalized silently)."""
    f, lo, hi = _mp_density(0.5)
    with pytest.raises(ConvergenceError, match="integrates to"):
        build_representation(lambda x: 1.01 * f(x), [Interval(lo, hi)], DEFAULT_OPTIONS,
                             expected_mass=1.0)


def test_cauchy_integral_singularity_subtraction_eq_8_16():
    """eq. (8.16): int_{-1}^{1} g/(s - zeta) for g = 1 + s**2 equals the closed form
    (1 + zeta**2) log((1-zeta)/(-1-zeta)) + 2 zeta (rtol 1e-13) at points near and
    on the segment (read from above) and far from it, and the derivative equals
    the closed form too."""
    coef = _cheb.poly2cheb([1.0, 0.0, 1.0])
    zeta = np.array([0.3 + 1e-12j, 0.3 + 0j, -0.9 + 0.05j, 1.5 + 0.0j, 3.0 + 4.0j, 0.2 + 1.0j])

    def exact(z):
        L = np.log(1 - z) - np.log(-1 - z)
        on = (z.imag == 0) & (np.abs(z.real) < 1)
        with np.errstate(invalid="ignore"):
            L = np.where(on, np.log((1 - z.real) / (1 + z.real)) + 1j * np.pi, L)
        return (1 + z * z) * L + 2 * z, L
    val, der = cauchy_integral(coef, zeta, derivative=True)
    ref, L = exact(zeta)
    np.testing.assert_allclose(val, ref, rtol=1e-13)
    dref = 2 * zeta * L + (1 + zeta * zeta) * (-2 / (1 - zeta * zeta)) + 2
    np.testing.assert_allclose(der, dref, rtol=1e-12)


def test_representation_stieltjes_near_the_axis_eq_8_16():
    """eq. (8.16): the Cauchy transform of the MP representation equals MP's closed
    form (theory eq. (5.4)/(8.6)) at Im z = 1e-3, 1e-9 and on the axis inside the
    support (from above), rtol 1e-12, including next to the junction of two
    panels (the midpoint), where the ends 1 -+ zeta are computed without
    cancellation."""
    mp = marchenko_pastur(1.0, 0.5)
    lo, hi = mp.intervals()[0]
    mid = 0.5 * (lo + hi)
    x = np.concatenate([np.linspace(lo, hi, 7)[1:-1], mid + np.array([1e-12, 1e-6, -1e-9])])
    for eta in (1e-3, 1e-9, 0.0):
        zz = x + 1j * eta
        np.testing.assert_allclose(mp._stieltjes_from_representation(zz),
                                   mp._stieltjes_exact(zz), rtol=1e-12)
