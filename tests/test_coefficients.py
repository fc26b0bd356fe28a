"""Tests of the linear model's coefficients and the Hermite bookkeeping.

Expected values are closed forms (theory/02_coefficients.md) evaluated exactly
by sympy, or mpmath at 40 digits; tolerances are stated next to each check.
"""

import fractions

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import freeattn
from freeattn import (
    alpha2_fraction,
    hermite_coefficients,
    hermite_table,
    linear_coefficients,
    order_variances,
    truncated_alpha2,
)

#: Largest beta with exp(beta**2) finite in float64: sqrt(log(2**1024 (1 - 2**-53))).
MAX_FLOAT_BETA = 26.641747557046326

#: Float64 path against mpmath at 40 digits: the float path carries the rounding
#: error of beta**2 (Dekker) so it stays within a few ulp; measured worst case
#: 4.4e-16 over 600 random beta in [1e-6, 26.6].
FLOAT_VS_MPMATH_RTOL = 1e-15

betas = st.floats(min_value=1e-3, max_value=26.6, allow_nan=False)


# --- exact values at rational points -------------------------------------------------

@pytest.mark.parametrize("beta", [sp.Rational(1, 2), sp.Integer(1), sp.Rational(3, 2),
                                  fractions.Fraction(1, 10), 2])
def test_exact_coefficients_at_rational_points(beta):
    """eq. (2.4), eq. (2.5), eq. (2.6): exact sympy equality with the closed forms."""
    b = sp.Rational(beta.numerator, beta.denominator) if isinstance(
        beta, fractions.Fraction) else sp.Integer(beta) if isinstance(beta, int) else beta
    c = linear_coefficients(beta, exact=True)
    assert sp.simplify(c.theta1 - (sp.exp(b**2) - 1)) == 0
    assert sp.simplify(c.theta2 - b**2) == 0
    assert sp.simplify(c.alpha2 - (sp.exp(b**2) - 1 - b**2)) == 0
    assert sp.simplify(c.alpha**2 - c.alpha2) == 0
    assert c.beta == b


def test_exact_table_of_first_values():
    """eq. (2.4) and eq. (2.6) at beta = 1/2 and 1, written out."""
    half = linear_coefficients(sp.Rational(1, 2), exact=True)
    assert half.theta1 == sp.exp(sp.Rational(1, 4)) - 1
    assert half.theta2 == sp.Rational(1, 4)
    assert half.alpha2 == sp.exp(sp.Rational(1, 4)) - sp.Rational(5, 4)
    one = linear_coefficients(1, exact=True)
    assert (one.theta1, one.theta2, one.alpha2) == (sp.E - 1, 1, sp.E - 2)


def test_exact_symbolic_beta():
    b = sp.Symbol("b")
    c = linear_coefficients(b, exact=True)
    assert c.theta1 == sp.exp(b**2) - 1
    assert c.theta2 == b**2
    assert sp.simplify(c.alpha2 - (sp.exp(b**2) - 1 - b**2)) == 0


def test_float_values_against_closed_forms():
    """eq. (2.4)-(2.6) in float64 at beta = 1: e - 1, 1, e - 2 (math.e), rtol 1e-15."""
    c = linear_coefficients(1.0)
    assert c.theta1 == pytest.approx(np.e - 1, rel=1e-15)
    assert c.theta2 == 1.0
    assert c.alpha2 == pytest.approx(np.e - 2, rel=1e-15)
    assert c.alpha == pytest.approx(np.sqrt(np.e - 2), rel=1e-15)


def test_float_is_vectorized_and_shape_preserving():
    beta = np.array([[0.1, 1.0], [2.0, 3.0]])
    c = linear_coefficients(beta)
    assert c.theta1.shape == c.alpha.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            assert c.theta1[i, j] == linear_coefficients(beta[i, j]).theta1


def test_small_beta_keeps_relative_accuracy():
    """eq. (2.6) at beta = 1e-3: alpha2 = beta**4/2 + beta**6/6 + ... (series), rtol 1e-15."""
    b = 1e-3
    c = linear_coefficients(b)
    x = mpmath.mpf(b) ** 2
    assert c.alpha2 == pytest.approx(float(x**2 / 2 + x**3 / 6 + x**4 / 24), rel=1e-15)
    assert c.theta1 == pytest.approx(float(x + x**2 / 2 + x**3 / 6), rel=1e-15)


@settings(max_examples=60, deadline=None)
@given(betas)
def test_float_agrees_with_mpmath(beta):
    """eq. (2.4) and eq. (2.6): float64 path vs mpmath at 40 digits, rtol 1e-15."""
    f = linear_coefficients(beta)
    m = linear_coefficients(beta, dps=40)
    for name in ("theta1", "theta2", "alpha2", "alpha"):
        exact = getattr(m, name)
        assert abs(mpmath.mpf(getattr(f, name)) / exact - 1) <= FLOAT_VS_MPMATH_RTOL, name


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1e-300, max_value=MAX_FLOAT_BETA, allow_nan=False))
@example(6.6685890524927785e-155)      # beta**2 subnormal: theta1 fell an ulp below theta2
def test_theta1_ge_theta2_ge_0(beta):
    """eq. (2.6): alpha2 = theta1 - theta2 >= 0."""
    c = linear_coefficients(beta)
    assert c.theta1 >= c.theta2 >= 0
    assert c.alpha2 >= 0


def test_mpmath_path_beyond_float_range():
    """eq. (2.4) at beta = 30 with mpmath: exp(900) - 1, 30 digits."""
    c = linear_coefficients(30, dps=30)
    with mpmath.workdps(30):
        assert c.theta1 == mpmath.expm1(900)
        assert c.alpha2 == mpmath.expm1(900) - 900
    assert isinstance(c.theta1, mpmath.mpf)


def test_mpmath_small_beta_has_full_precision():
    """eq. (2.6) at beta = 1e-10, 50 digits: beta**4/2 + beta**6/6 + beta**8/24 exactly."""
    with mpmath.workdps(60):
        x = mpmath.mpf("1e-20")
        expected = x**2 / 2 + x**3 / 6 + x**4 / 24
    c = linear_coefficients(sp.Rational(1, 10**10), dps=50)
    with mpmath.workdps(50):
        assert abs(c.alpha2 / expected - 1) < mpmath.mpf(10) ** -48


# --- Hermite bookkeeping ---------------------------------------------------------------

def test_hermite_coefficient_table():
    """eq. (2.3): c_k = beta**k/k! -- exact table of the first orders."""
    b = sp.Symbol("b")
    assert hermite_coefficients(b, 5, exact=True) == (
        1, b, b**2 / 2, b**3 / 6, b**4 / 24, b**5 / 120)
    assert hermite_coefficients(sp.Rational(1, 2), 3, exact=True) == (
        1, sp.Rational(1, 2), sp.Rational(1, 8), sp.Rational(1, 48))
    np.testing.assert_allclose(hermite_coefficients(2.0, 4), [1, 2, 2, 4 / 3, 2 / 3],
                               rtol=1e-15)


def test_order_variance_table():
    """eq. (2.7): v_k = beta**(2k)/k! -- exact table of the first orders."""
    b = sp.Symbol("b")
    assert order_variances(b, 4, exact=True) == (1, b**2, b**4 / 2, b**6 / 6, b**8 / 24)
    np.testing.assert_allclose(order_variances(3.0, 3), [1, 9, 81 / 2, 729 / 6], rtol=1e-15)


def test_truncations_exact():
    """eq. (2.8) at beta = 1: partial sums 0, 0, 1/2, 2/3, 17/24 of alpha2 = e - 2."""
    assert [truncated_alpha2(1, k, exact=True) for k in range(5)] == [
        0, 0, sp.Rational(1, 2), sp.Rational(2, 3), sp.Rational(17, 24)]
    assert sp.simplify(alpha2_fraction(1, 2, exact=True) - sp.Rational(1, 2) / (sp.E - 2)) == 0


def test_three_paths_agree():
    """eq. (2.7) and eq. (2.8): float, mpmath (30 digits) and sympy agree, rtol 1e-14."""
    beta, order = 1.5, 12
    exact = [float(v) for v in order_variances(sp.Rational(3, 2), order, exact=True)]
    np.testing.assert_allclose(order_variances(beta, order), exact, rtol=1e-14)
    np.testing.assert_allclose([float(v) for v in order_variances(beta, order, dps=30)],
                               exact, rtol=1e-15)
    partial = float(truncated_alpha2(sp.Rational(3, 2), order, exact=True))
    assert truncated_alpha2(beta, order) == pytest.approx(partial, rel=1e-14)
    assert float(truncated_alpha2(beta, order, dps=30)) == pytest.approx(partial, rel=1e-15)
    assert float(alpha2_fraction(beta, order, dps=30)) == pytest.approx(
        alpha2_fraction(beta, order), rel=1e-14)


@settings(max_examples=40, deadline=None)
@given(betas)
def test_order_variances_sum_to_theta1(beta):
    """eq. (2.7): sum_{k>=1} v_k = theta1 (float, orders up to x + 12 sqrt(x) + 40, x = beta**2;
    the Poisson(x)-shaped tail beyond is below 1e-30 relative).  rtol 2e-13: the running
    product beta**(2k)/k! carries up to k ulp at the peak k ~ x <= 710 (measured worst
    5.7e-14 over 400 beta in [1e-3, 26.6])."""
    x = beta * beta
    order = int(x + 12 * np.sqrt(x) + 40)
    v = order_variances(beta, order)
    c = linear_coefficients(beta)
    assert v[0] == 1.0 and v[1] == pytest.approx(c.theta2, rel=1e-15)
    assert np.sum(v[1:]) == pytest.approx(c.theta1, rel=2e-13)
    assert truncated_alpha2(beta, order) == pytest.approx(c.alpha2, rel=2e-13)


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=1e-2, max_value=6.0), st.integers(min_value=0, max_value=60))
def test_truncation_remainder_bound(beta, order):
    """eq. (2.8): 0 <= alpha2 - alpha2_{<=K} <= beta**(2(K+1))/(K+1)! exp(beta**2), mpmath at
    60 digits; the difference is accurate to 1e-55 alpha2 absolute, allowed as slack."""
    with mpmath.workdps(60):
        b = mpmath.mpf(beta)
        alpha2 = linear_coefficients(beta, dps=60).alpha2
        remainder = alpha2 - truncated_alpha2(beta, order, dps=60)
        bound = b ** (2 * (order + 1)) / mpmath.factorial(order + 1) * mpmath.exp(b * b)
        slack = mpmath.mpf(10) ** -55 * alpha2
        assert -slack <= remainder <= bound + slack
    fraction = alpha2_fraction(beta, order)
    assert 0.0 <= fraction <= 1.0


def test_fraction_tends_to_one_for_small_beta():
    """eq. (2.6) and eq. (2.8): at small beta order 2 holds almost all of alpha2,
    fraction = 1 - beta**2/3 + O(beta**4) (series of (x**2/2)/(e**x - 1 - x))."""
    assert alpha2_fraction(1e-3, 2) == pytest.approx(1 - 1e-6 / 3, rel=1e-12)
    assert alpha2_fraction([0.5, 1.0], 1).tolist() == [0.0, 0.0]


def test_hermite_table():
    """eq. (2.7) and eq. (2.8) as one table at beta = 1 (closed forms 1/k!, (1/2)/(e-2))."""
    t = hermite_table(1.0, 4)
    np.testing.assert_array_equal(t.orders, np.arange(5))
    np.testing.assert_allclose(t.variances, [1, 1, 1 / 2, 1 / 6, 1 / 24], rtol=1e-15)
    np.testing.assert_allclose(t.cumulative_alpha2, [0, 0, 1 / 2, 2 / 3, 17 / 24], rtol=1e-15)
    np.testing.assert_allclose(t.noise_fraction[2], 0.5 / (np.e - 2), rtol=1e-14)
    assert t.theta1 == pytest.approx(np.e - 1, rel=1e-15)
    assert hermite_table(1.0, 0).cumulative_alpha2.tolist() == [0.0]


def test_vectorized_bookkeeping_shapes():
    beta = np.array([0.5, 1.0, 2.0])
    assert hermite_coefficients(beta, 6).shape == (3, 7)
    assert order_variances(beta, 6).shape == (3, 7)
    assert truncated_alpha2(beta, 6).shape == (3,)
    assert alpha2_fraction(beta, 6).shape == (3,)
    assert isinstance(truncated_alpha2(1.0, 6), float)


# --- bad input -----------------------------------------------------------------------

BAD_BETAS = [
    (0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError),
    ("1.0", TypeError), (1 + 2j, TypeError), (True, TypeError), (None, TypeError),
]


@pytest.mark.parametrize("beta, exc", BAD_BETAS)
@pytest.mark.parametrize("kwargs", [{}, {"exact": True}, {"dps": 20}])
def test_bad_beta_is_rejected_naming_beta(beta, exc, kwargs):
    with pytest.raises(exc, match="beta"):
        linear_coefficients(beta, **kwargs)
    with pytest.raises(exc, match="beta"):
        hermite_coefficients(beta, 3, **kwargs)


def test_float_path_upper_limit_names_beta_range_and_mpmath():
    assert linear_coefficients(MAX_FLOAT_BETA).theta1 > 1e308
    for func in (linear_coefficients, lambda b: order_variances(b, 3)):
        with pytest.raises(ValueError, match=r"beta must be in \(0, 26\.64.*dps="):
            func(26.65)
    with pytest.raises(ValueError, match="beta"):
        linear_coefficients([1.0, 27.0])


def test_bad_sympy_beta():
    with pytest.raises(ValueError, match="beta"):
        linear_coefficients(sp.Integer(-1), exact=True)
    with pytest.raises(TypeError, match="beta"):
        linear_coefficients(sp.I, exact=True)
    with pytest.raises(ValueError, match="beta"):
        linear_coefficients(sp.nan, exact=True)


@pytest.mark.parametrize("order, exc", [(-1, ValueError), (2.0, TypeError), ("3", TypeError)])
def test_bad_order(order, exc):
    with pytest.raises(exc, match="order"):
        order_variances(1.0, order)


@pytest.mark.parametrize("dps, exc", [(0, ValueError), (20.0, TypeError)])
def test_bad_dps(dps, exc):
    with pytest.raises(exc, match="dps"):
        linear_coefficients(1.0, dps=dps)


def test_exact_and_dps_are_exclusive():
    with pytest.raises(ValueError, match="exact"):
        linear_coefficients(1.0, exact=True, dps=20)
    for bookkeeping in (hermite_coefficients, order_variances, truncated_alpha2,
                        alpha2_fraction):
        with pytest.raises(ValueError, match="exact"):
            bookkeeping(1.0, 3, exact=True, dps=20)


def test_hermite_table_needs_a_scalar():
    with pytest.raises(ValueError, match="beta"):
        hermite_table([1.0, 2.0], 3)


def test_public_names_are_exported():
    for name in ("linear_coefficients", "hermite_coefficients", "order_variances",
                 "truncated_alpha2", "alpha2_fraction", "hermite_table", "conditional_mean",
                 "conditional_covariance", "gaussian_equivalent_covariance"):
        assert name in freeattn.__all__ and callable(getattr(freeattn, name))
