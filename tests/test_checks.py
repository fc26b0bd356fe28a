"""The shared input checks: type errors vs value errors, each naming the argument."""

import numpy as np
import pytest

from freeattn.core._checks import MAX_FLOAT_BETA, as_real_array, check_beta, check_int, check_positive


@pytest.mark.parametrize("value", [None, "1.0", b"1", True, 1 + 2j, np.array([1j]), object()])
def test_non_real_is_a_type_error_naming_the_argument(value):
    with pytest.raises(TypeError, match="gamma"):
        as_real_array(value, "gamma")


@pytest.mark.parametrize("value", [float("nan"), [1.0, float("nan")]])
def test_nan_is_a_value_error(value):
    with pytest.raises(ValueError, match="x must not be NaN"):
        as_real_array(value, "x")


def test_finite_flag_rejects_infinities_only_when_asked():
    assert np.isinf(as_real_array([1.0, np.inf], "x")).any()
    with pytest.raises(ValueError, match="x must be finite"):
        as_real_array([1.0, -np.inf], "x", finite=True)
    assert as_real_array(2, "x", finite=True) == 2.0


@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), [1.0, -2.0]])
def test_check_positive_rejects_non_positive_and_infinite(value):
    with pytest.raises(ValueError, match="gamma"):
        check_positive(value, "gamma")


def test_check_positive_upper_bound_is_quoted():
    with pytest.raises(ValueError, match=r"\(0, 4"):
        check_positive(4.5, "beta", upper=4.0)
    assert check_positive(4.0, "beta", upper=4.0) == 4.0


def test_beta_float_range_is_where_exp_beta2_is_finite():
    # Closed form: exp(beta**2) is finite iff beta**2 <= log(float max).
    assert np.isfinite(np.exp(MAX_FLOAT_BETA ** 2 * (1 - 1e-15)))
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.nextafter(MAX_FLOAT_BETA, np.inf) ** 2 * (1 + 1e-14)))
    with pytest.raises(ValueError, match="beta"):
        check_beta(MAX_FLOAT_BETA * 1.001)


def test_check_beta_keeps_shape():
    assert check_beta([[0.5, 1.0]]).shape == (1, 2)


@pytest.mark.parametrize("value", [2.0, "3", True, None])
def test_check_int_rejects_non_integers(value):
    with pytest.raises(TypeError, match="n must be an integer"):
        check_int(value, "n", minimum=2)


def test_check_int_range_and_numpy_integers():
    assert check_int(np.int64(5), "n") == 5
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        check_int(1, "n", minimum=2)
