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


# --------------------------------------------------------------------------- #
# Domains at the public boundary: checked once there, trusted below
# --------------------------------------------------------------------------- #

def _count_domain_checks(monkeypatch):
    """Record ``(argument name, value)`` of every ``Real.check`` call."""
    from freeattn.core._checks import Real

    calls = []
    original = Real.check

    def counting(self, value, name):
        calls.append(name)
        return original(self, value, name)

    monkeypatch.setattr(Real, "check", counting)
    return calls


def test_fit_checks_its_arguments_once_and_its_search_trusts_them(monkeypatch):
    """freeattn.fit checks gamma and level with their domains once; the search below it
    builds its laws (about ten here) without checking them again (it used to check
    gamma once per law)."""
    import freeattn

    x = freeattn.squared_singular_values(freeattn.sample_model("attention", 60, 60, 1.0, rng=0))
    calls = _count_domain_checks(monkeypatch)
    freeattn.fit(x, gamma=1.0, resamples=0)
    assert calls == ["gamma", "level"]


def test_a_built_law_does_not_check_its_parameters_again(monkeypatch):
    """attention_law and causal_law check beta and gamma once; evaluating the built law
    (the causal law's Stieltjes transform used to re-check both per call) checks nothing."""
    import freeattn

    calls = _count_domain_checks(monkeypatch)
    law = freeattn.causal_law(1.0, 1.0)
    law.stieltjes(np.array([2.0 + 1.0j]))
    law.cdf(0.5)
    sq = freeattn.attention_law(0.7, 0.5).squared()
    sq.cdf(0.5)
    freeattn.operator_norm(0.7, 0.5)
    assert calls == ["beta", "gamma"] * 3


@pytest.mark.parametrize("call, message", [
    (lambda fa, x: fa.fit(x, gamma=1.0, level=1.0), r"level must be in \(0\.0, 1\.0\), got 1\.0"),
    (lambda fa, x: fa.fit(x, gamma=1.0, level=0), r"level must be in \(0\.0, 1\.0\), got 0"),
    (lambda fa, x: fa.fit(x, gamma=2e4), r"gamma must be in \[0\.0001, 10000\.0\], got 20000\.0"),
    (lambda fa, x: fa.fit(x, gamma=1.0, resamples=10**5),
     r"resamples must be an integer in \[0, 10000\], got 100000"),
    (lambda fa, x: fa.attention_law(5.0),
     r"beta must be in \[1e-08, 4\.0\] \(below, the law in units of theta1 is its beta -> 0 "
     r"limit.*Marchenko-Pastur of variance theta1 to that order\), got 5\.0"),
    (lambda fa, x: fa.linearization_threshold(1), r"n must be an integer >= 2, got 1"),
    (lambda fa, x: fa.multihead_law(1.0, heads=2, gamma_k=1.0, gamma_v=1.0, gamma_o=200.0),
     r"gamma_o must be in \[0\.01, 100\.0\], got 200\.0"),
    (lambda fa, x: fa.attention_stack_law(1.0, layers=49),
     r"layers must be an integer in \[1, 48\], got 49"),
    (lambda fa, x: fa.validate(0.0, 1.0, 50, 2), r"beta must be in \[1e-08, 4\.0\]"),
    (lambda fa, x: fa.validate(1.0, -1.0, 50, 2), r"gamma must be in \(0\.0, inf\), got -1\.0"),
])
def test_boundary_messages_name_the_argument_and_the_range(call, message):
    """Each public entry point's domain check names the argument and the allowed range
    (the domains of freeattn.core._checks: Real, Integer, Probability)."""
    import freeattn

    x = np.linspace(0.1, 3.0, 20)
    with pytest.raises(ValueError, match=message):
        call(freeattn, x)


def test_probability_domain_is_open_by_default():
    """Probability(): (0, 1); the closed ends on request."""
    from freeattn.core._checks import Probability

    level = Probability()
    assert level.check(0.5, "level") == 0.5
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"level must be in \(0\.0, 1\.0\)"):
            level.check(bad, "level")
    assert Probability(open_low=False, open_high=False).check(1.0, "q") == 1.0
    with pytest.raises(TypeError, match="level must be a real scalar"):
        level.check([0.5, 0.6], "level")
