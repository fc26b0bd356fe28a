"""A tall tower that fails its probe falls back to the many-law system when it has three or
more factors (theory section 14.64).

The law is the depth-3 campaign's seed 99 / draw 32, ``(MP ⊠ sample_covariance(
attention², 0.2813)) ⊠ MP``: an S-level tower over the attention law whose solve takes a
real root inside its lowest band (the probe of theory section 8.5), and whose two-law form
(eq. (14.4)) finds its support reaching 0 where no factor's does.  The references are the
rank counts: the product's atom at 0 is the largest factor atom, ``1 - 1/c`` of the second
Marchenko-Pastur law; the attention law's mass ``1 - gamma`` near 0 that the atom does not
take forms the lowest band, and its mass ``gamma`` the upper band.
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose import _subordination
from freeattn.compose._chain import ProductChainLaw

GAMMA = 0.10316
RATIO = 2.6306
#: Band masses against the rank counts: measured 1.1e-16 and 8e-17.
MASS_ATOL = 1e-12


def _operands():
    a = freeattn.free_multiplicative(
        freeattn.marchenko_pastur(1.2749, 2.3997),
        freeattn.sample_covariance(freeattn.attention_law(0.0076216, GAMMA).squared(), 0.2813))
    return a, freeattn.marchenko_pastur(0.90187, RATIO)


def test_the_tower_fails_its_probe_and_the_two_law_form_its_support():
    a, b = _operands()
    tower = _subordination._collapsed_product(a, b, a._s_transform(), b._s_transform(),
                                              a.options)
    with pytest.raises(freeattn.ConvergenceError, match="real root"):
        _subordination._probe_bands(tower)
    from freeattn.compose._analytic import analytic_multiplicative
    with pytest.raises(freeattn.ConvergenceError, match="reaches 0"):
        analytic_multiplicative(a, b).interval_details()


def test_the_product_is_the_system_with_rank_count_masses():
    a, b = _operands()
    law = freeattn.free_multiplicative(a, b)
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 4
    loc, mass = law.atoms()
    assert loc.tolist() == [0.0] and mass[0] == pytest.approx(1 - 1 / RATIO, abs=MASS_ATOL)
    ivs = law.interval_details()
    assert len(ivs) == 2
    masses = [law.cdf(float(iv.hi)) - law.cdf(float(iv.lo)) for iv in ivs]
    np.testing.assert_allclose(masses, [1 - GAMMA - mass[0], GAMMA], atol=MASS_ATOL)
    assert law.accuracy().mass_error < MASS_ATOL
