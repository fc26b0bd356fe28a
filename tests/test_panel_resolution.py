"""A split panel far narrower than the solver resolves raises at once (theory section 14.63).

A density known to an absolute rounding ``eps S`` of ``x`` (a free additive convolution,
eq. (8.30)) is refused on a band narrower than that rounding resolves; the same test now
holds for the panels a split makes of a wider band.  The law below (the depth-2
campaign's seed 49 / draw 29) has a band ``1.2e-7`` wide at ``-0.284`` on a support
reaching 32, whose density near its lower edge varies on ``1e-13``, a few times ``eps S``:
its panels split towards that edge until the panel budget, for more than 60 s.
"""

import numpy as np
import pytest

import freeattn
from freeattn.algebra import _chebyshev

#: The sum's absolute rounding, eps times its scale (the support's upper end 32.0).
EPS_S = np.finfo(float).eps * 32.0
#: seed 94 / draw 14's mass error (measured 1.7e-14; the engine's mass_atol is 1e-11).
MASS_ATOL = 1e-12


def _law():
    a = freeattn.sample_covariance(
        freeattn.point_masses([4.01, 1.95, 1.001, 2.885], [0.159, 0.155, 0.37, 0.316]), 7.1094)
    b = freeattn.free_additive(freeattn.point_masses([-0.284], [1.0]),
                               freeattn.attention_law(0.016381, 0.10706).squared())
    return freeattn.free_additive(a, b)


def test_the_density_next_to_the_edge_is_below_the_resolution_eq_8_30():
    law = _law()
    band = law.interval_details()[0]
    lo, hi = float(band.lo), float(band.hi)
    # the band itself is resolved (eps S / width = 6e-8, below ROUNDING_FLOOR_MAX) ...
    assert _chebyshev.band_rounding_noise(hi - lo, 32.0) < _chebyshev.ROUNDING_FLOOR_MAX
    # ... but within a few eps S of its lower edge the solve finds no density (measured
    # 0 and 7e-34 at 1e-15 ... 3.2e-14 above it), where 1e-12 above it has 7.0e6
    near = law._density(lo + np.array([2.0, 4.0]) * EPS_S)
    inside = law._density(np.array([lo + 1e-12]))[0]
    assert inside > 1e6
    assert np.all(near < 1e-20 * inside)


def test_a_split_below_the_resolution_raises():
    law = _law()
    with pytest.raises(freeattn.ConvergenceError, match="narrower than the solver resolves") \
            as info:
        law.pdf(np.array([-0.28]))
    assert info.value.residual > _chebyshev.SPLIT_RESOLUTION_MAX
    assert "eq. (8.30)" in str(info.value)


def test_a_split_child_just_above_the_floor_still_converges():
    # seed 94 / draw 14 of the depth-4 campaign: one child of its band [6.2e-10, 1.6e-8]
    # has the bound eps S / w = 1.26e-6, above ROUNDING_FLOOR_MAX, and converges (the
    # law built in 0.9 s with its representation error 2.7e-6 allowed, mass error
    # 1.7e-14); the margin SPLIT_RESOLUTION_MAX keeps it
    law = freeattn.free_additive(
        freeattn.sample_covariance(freeattn.attention_law(0.010502, 0.11236).squared(), 2.9025),
        freeattn.sample_covariance(freeattn.marchenko_pastur(1.9324, 1.1978), 2.9023))
    lo, hi = law.support()
    law.pdf(np.linspace(lo, hi, 50))
    assert law.accuracy().mass_error < MASS_ATOL
