"""A level whose own solve leaves the branch inside a band hands that batch of its density
to the analytic subordination of its two laws (theory section 14.60).

The law: seed 81 / draw 12 of the depth-3 campaign, ``sample_covariance(
sample_covariance(attention(0.32235, 0.10025)², 0.2341), 0.39026) ⊞ MP(0.76315, 1.9673)``,
an R-level over an S-level (the algebraic path of theory note 08). In its lower band the
tower's solve took a real root (density 0 inside the band) and the build raised.
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose import _analytic
from freeattn.compose._subordination import SubordinationLaw

#: The two forms solve the same equations by different methods, each to ~1e-14: measured
#: 3.3e-14 (lower band, both values from the analytic form's batches and the level's
#: representation of them) and 6.9e-15 (upper band, the level's own solve).
FORMS_RTOL = 1e-12
#: The lower band's mass against the rank count 1 - gamma - 1/ratio (the attention law's
#: band at 0 has mass 1 - gamma, the Marchenko-Pastur law's atom at 0 1 - 1/ratio):
#: measured 2.8e-16; the representation states its mass error (2.2e-16).
MASS_ATOL = 1e-12
#: The two forms' edges (the tower's critical points, eq. (8.12), and the curves of eq.
#: (14.20)): measured 1.0e-15 relative.
EDGES_RTOL = 1e-14

GAMMA, RATIO = 0.10025, 1.9673


def _parts():
    c = freeattn.sample_covariance(
        freeattn.sample_covariance(freeattn.attention_law(0.32235, GAMMA).squared(), 0.2341),
        0.39026)
    return c, freeattn.marchenko_pastur(0.76315, RATIO)


@pytest.fixture(scope="module")
def law():
    c, mp = _parts()
    law = freeattn.free_additive(c, mp)
    assert isinstance(law, SubordinationLaw) and law.level.kind == "R"
    return law


def test_the_levels_own_solve_leaves_the_branch_in_the_lower_band(law):
    (lo, hi), _ = law.intervals()
    x = lo + (hi - lo) * np.linspace(0.1, 0.9, 5)
    with pytest.raises(freeattn.ConvergenceError, match="real root on another sheet"):
        law._level_density(x)


def test_the_density_comes_from_the_analytic_form_there(law):
    c, mp = _parts()
    other = _analytic.analytic_additive(c, mp)
    ivs = law.intervals()
    np.testing.assert_allclose(np.array(other.intervals()), np.array(ivs), rtol=EDGES_RTOL)
    for lo, hi in ivs:
        x = lo + (hi - lo) * np.linspace(0.01, 0.99, 41)
        np.testing.assert_allclose(law.pdf(x), other.pdf(x), rtol=FORMS_RTOL)
    (lo, hi), _ = ivs
    assert abs((law.cdf(hi) - law.cdf(lo)) - (1 - GAMMA - 1 / RATIO)) <= MASS_ATOL
    assert law.accuracy().mass_error <= MASS_ATOL


def test_where_the_analytic_form_fails_too_the_levels_own_error_stands(law, monkeypatch):
    class Failing:
        def _density(self, x):
            raise freeattn.ConvergenceError("the other form failed")

    monkeypatch.setattr(law, "_analytic_form", lambda: Failing())
    (lo, hi), _ = law.intervals()
    with pytest.raises(freeattn.ConvergenceError, match="real root on another sheet"):
        law._density(lo + (hi - lo) * np.linspace(0.1, 0.9, 5))


def test_values_of_the_analytic_form_pass_the_levels_interior_check(law, monkeypatch):
    # a form whose density vanishes inside the level's band is refused like the level's
    # own solve (its support would not be the level's)
    class Zero:
        def _density(self, x):
            return np.zeros(x.shape)

    monkeypatch.setattr(law, "_analytic_form", lambda: Zero())
    (lo, hi), _ = law.intervals()
    with pytest.raises(freeattn.ConvergenceError, match="real root on another sheet"):
        law._density(lo + (hi - lo) * np.linspace(0.1, 0.9, 5))
