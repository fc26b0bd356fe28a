"""Nested sample covariances over atoms: a tall tower whose lowest band lies decades below
its scale is solved as the many-law system (theory section 14.62).

References: the critical values of eq. (14.67) at 40 digits,
``tests/reference/make_discrete_tower_references.py`` (mpmath, freeattn not used).
"""

import json
import pathlib

import numpy as np
import pytest

import freeattn
from freeattn.compose import _subordination
from freeattn.compose._chain import ProductChainLaw

_DATA = json.loads((pathlib.Path(__file__).parent / "reference"
                    / "discrete_tower_references.json").read_text())
REF = _DATA["laws"]
DENSITY_REF = _DATA["two_levels_density"]

#: The system's lowest edge, next to the atom at 0 (5e-6 on a support reaching 122-140):
#: measured 2.5e-12 and 4.9e-12 relative.  The rows of the two Marchenko-Pastur factors
#: are there within 7e-5 of their saturated eta = 1 - 1/p0 (p0 their atom at 0), which
#: holds each row's unknown to a few 1e-13 (section 14.62).  The tower had 8.7e-10 and
#: 2.2e-10.
LOW_EDGE_RTOL = 2e-11
#: The upper edge: measured 2.2e-15 and 0 relative.
HIGH_EDGE_RTOL = 1e-13
#: Mass of the built representation (measured 2.2e-16 and 0).
MASS_ATOL = 1e-12
#: The atom at 0 against ``1 - 1/c`` of the largest ratio (the product's rank; the engine's
#: atoms of a product are computed from the factors' in closed form: measured equal).
ATOM_RTOL = 1e-14
#: two_levels' density against the reference at x = 6e-6 ... 1 (the first 8 % above the
#: lower edge): the system's solve measured 4.7e-12 at most, the representation (pdf)
#: 3.9e-11 at 6e-6 and 1.9e-12 elsewhere; the tower 5.2e-8, 4.6e-8, 2.7e-9, 6.4e-10,
#: 1.2e-13.
DENSITY_RTOL = 1e-10

POPULATION = ([4.779, 2.75, 4.986, 2.507], [0.138, 0.639, 0.021, 0.202])


def _nested(ratios):
    law = freeattn.point_masses(*POPULATION)
    for c in ratios:
        law = freeattn.sample_covariance(law, c)
    return law


@pytest.mark.parametrize("name, ratios", [("two_levels", (9.1327, 9.1414)),
                                          ("three_levels", (9.1327, 9.1414, 1.7133))])
def test_nested_sample_covariance_over_atoms_eq_14_67(name, ratios):
    law = _nested(ratios)
    assert isinstance(law, ProductChainLaw)
    ivs = law.interval_details()
    assert len(ivs) == 1
    lo_ref, hi_ref = (float(v) for v in REF[name])
    assert abs(float(ivs[0].lo) / lo_ref - 1) < LOW_EDGE_RTOL
    assert abs(float(ivs[0].hi) / hi_ref - 1) < HIGH_EDGE_RTOL
    # the atom at 0: 1 - 1/c of the largest ratio (the rank of the product)
    loc, mass = law.atoms()
    assert loc.tolist() == [0.0]
    assert mass[0] == pytest.approx(1 - 1 / max(ratios), rel=ATOM_RTOL)
    x = np.linspace(float(ivs[0].lo), float(ivs[0].hi), 200)
    assert np.all(law.pdf(x[1:-1]) > 0)
    assert law.accuracy().mass_error < MASS_ATOL


def test_the_density_next_to_the_lower_edge():
    law = _nested((9.1327, 9.1414))
    x = np.array([float(k) for k in DENSITY_REF])
    ref = np.array([float(v) for v in DENSITY_REF.values()])
    np.testing.assert_allclose(law._density(x), ref, rtol=DENSITY_RTOL)
    np.testing.assert_allclose(law.pdf(x), ref, rtol=DENSITY_RTOL)


def test_the_tower_it_replaces():
    # the collapsed level of two_levels: its lower edge is the reference's to its
    # absolute rounding only (eq. (8.30)), and so is its density next to that edge (its
    # representation ran out of panels at 6.4e-5)
    pop = freeattn.point_masses(*POPULATION)
    inner = freeattn.sample_covariance(pop, 9.1327)
    mp = freeattn.marchenko_pastur(1.0, 9.1414)
    tower = _subordination._collapsed_product(mp, inner, mp._s_transform(),
                                              inner._s_transform(), mp.options)
    assert _subordination._tall_tower(tower)
    lo = float(tower.interval_details()[0].lo)
    lo_ref = float(REF["two_levels"][0])
    assert abs(lo / lo_ref - 1) > 10 * LOW_EDGE_RTOL
    x = np.array([float(k) for k in DENSITY_REF])[:3]
    ref = np.array([float(v) for v in DENSITY_REF.values()])[:3]
    assert np.all(np.abs(tower._density(x) / ref - 1) > 10 * DENSITY_RTOL)


def test_a_tower_above_the_span_stays():
    # (MP ⊠ MP) ⊠ (atoms ⊠ MP) of the depth-3 campaign's seed 81 / draw 7: its lowest
    # band starts at 1.4e-4 of its upper end, above TOWER_CHAIN_SPAN, and its tower agreed
    # with the system to 1e-14
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.marchenko_pastur(1.5002, 2.1948),
                                     freeattn.marchenko_pastur(0.97418, 2.3477)),
        freeattn.free_multiplicative(freeattn.point_masses([1.644, 0.47], [0.538, 0.462]),
                                     freeattn.marchenko_pastur(1.3772, 2.9095)))
    assert isinstance(law, _subordination.SubordinationLaw) and _subordination._tall_tower(law)
    ivs = law.interval_details()
    assert float(ivs[0].lo) > _subordination.TOWER_CHAIN_SPAN * float(ivs[-1].hi)


#: The six-factor law's edges against eq. (14.67): measured 9.9e-14 and 3.8e-15.
SIX_EDGE_RTOL = 1e-12


def _six_factors():
    # seed 106 / draw 31 of the depth-3 campaign
    mp = freeattn.marchenko_pastur
    left = freeattn.sample_covariance(freeattn.free_multiplicative(mp(1.4848, 0.20064),
                                                                   mp(1.3225, 2.2271)), 2.2275)
    right = freeattn.free_multiplicative(
        mp(0.7798, 2.2413), freeattn.free_multiplicative(
            mp(1.1997, 1.3974), freeattn.point_masses([4.174, 1.719, 4.663, 4.291],
                                                      [0.019, 0.063, 0.223, 0.695])))
    return left, right


def test_a_level_without_a_tower_is_the_system():
    left, right = _six_factors()
    # the collapsed level has no tower (its generic solver): its lower edge was 6.19e-8,
    # half the reference, and its mass 1.1e-8 off (the build raised)
    level = _subordination._collapsed_product(left, right, left._s_transform(),
                                              right._s_transform(), left.options)
    assert not _subordination._tall_tower(level)
    lo_ref, hi_ref = (float(v) for v in REF["six_factors"])
    assert abs(float(level.interval_details()[0].lo) / lo_ref - 1) > 0.1
    law = freeattn.free_multiplicative(left, right)
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 6
    ivs = law.interval_details()
    assert len(ivs) == 1
    assert abs(float(ivs[0].lo) / lo_ref - 1) < SIX_EDGE_RTOL
    assert abs(float(ivs[0].hi) / hi_ref - 1) < SIX_EDGE_RTOL
    # the atom at 0: 1 - 1/c of the largest ratio, 2.2413
    loc, mass = law.atoms()
    assert loc.tolist() == [0.0] and mass[0] == pytest.approx(1 - 1 / 2.2413, rel=ATOM_RTOL)
    law.pdf(np.linspace(float(ivs[0].lo), float(ivs[0].hi), 20))
    assert law.accuracy().mass_error < MASS_ATOL
