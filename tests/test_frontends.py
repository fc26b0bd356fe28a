"""Input checks of the law front ends: ``rvs`` sizes and ``point_masses`` shapes.

Each check names the argument and what is allowed (they used to surface as numpy's
own errors, or to flatten a 2-d input silently)."""

import numpy as np
import pytest

import freeattn as fa


def test_rvs_size_must_be_non_negative_integers():
    law = fa.marchenko_pastur(1.0, 0.5)
    for bad in (-1, (2, -3)):
        with pytest.raises(ValueError, match="size must be a non-negative integer"):
            law.rvs(size=bad, rng=0)
    for bad in (2.0, "3", True, (2, 1.5), (True, 2)):
        with pytest.raises(TypeError, match="size must be a non-negative integer"):
            law.rvs(size=bad, rng=0)
    assert law.rvs(size=0, rng=0).shape == (0,)
    assert law.rvs(size=(0, 2), rng=0).shape == (0, 2)
    assert law.rvs(size=np.int64(3), rng=0).shape == (3,)
    # the checked size draws the same uniforms as before: ppf of the generator's stream
    np.testing.assert_array_equal(law.rvs(size=[2, 2], rng=7),
                                  law.ppf(np.random.default_rng(7).random((2, 2))))


def test_point_masses_values_must_be_one_dimensional():
    with pytest.raises(ValueError, match=r"values must be a 1-d array.*\(2, 2\)"):
        fa.point_masses([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match=r"values must be a 1-d array.*\(\)"):
        fa.point_masses(2.0)
    with pytest.raises(ValueError, match="weights must have the shape of values"):
        fa.point_masses([1.0, 2.0], [[0.5, 0.5]])
    law = fa.point_masses([3.0, 1.0, 3.0], [0.25, 0.5, 0.25])      # repeats merged
    assert law.mean() == pytest.approx(0.5 * 1.0 + 0.5 * 3.0, rel=1e-15)
