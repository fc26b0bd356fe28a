"""The continuation of the many-law system from the point's own height (theory eq.
(14.65)): starts from the spine (the continuation along the imaginary axis) instead of
``y = 64 s``.

The reference is the same continuation from the top (``own_height=False``), which follows
the branch from the large-``|z|`` limit at every point.
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose import _chain
from freeattn.compose._chain import ProductChainLaw

#: Both continuations end with Newton to CHAIN_FINAL_RTOL = 1e-14 in the unknowns;
#: measured agreement 5e-16 - 8e-16 relative (the largest unknown).
SAME_ROOT_RTOL = 1e-13
#: Newton columns (points times Newton calls) of the continuation: measured 1.61 times
#: fewer from the own heights at 64 points 3-11 decades below the scale.
FEWER_COLUMNS = 1.3
#: Spine levels from logarithms (rounding ~1e-14 at most) and products by 64 (exact up to
#: one ulp).
LEVEL_ATOL = 1e-9
ULP_RTOL = 1e-15


@pytest.fixture(scope="module")
def product():
    # four laws in one system, support [0, ...] with a hard edge at 0
    law = freeattn.free_multiplicative(
        freeattn.attention_law(0.5, 1.0).squared(),
        freeattn.free_multiplicative(freeattn.attention_law(1.0, 0.5).squared(),
                                     freeattn.point_masses([1.0, 2.0], [0.5, 0.5])))
    assert isinstance(law, ProductChainLaw)
    return law


def _points(law):
    s = law._start_scale()
    x = s * np.r_[np.geomspace(1e-11, 1e-3, 12), -np.geomspace(1e-9, 1e-4, 4)]
    return x


def _columns(monkeypatch):
    """A counter of the Newton columns (points times calls) of the system."""
    count = [0]
    original = ProductChainLaw._newton

    def counting(self, om, t, steps, rtol):
        count[0] += om.shape[1]
        return original(self, om, t, steps, rtol)

    monkeypatch.setattr(ProductChainLaw, "_newton", counting)
    return count


def test_own_height_starts_reach_the_roots_continued_from_the_top(product):
    x = _points(product)
    for y in (np.zeros(x.size), 1e-3 * np.abs(x)):
        own = product._continue(x, y)
        top = product._continue(x, y, own_height=False)
        assert np.max(np.abs(own - top) / np.abs(top)) <= SAME_ROOT_RTOL


def test_the_start_is_at_the_lowest_spine_level_above_64_x(product):
    x = _points(product)
    idx, y0, om, y_prev, _ = product._own_height(x, np.zeros(x.size))
    top = _chain.CHAIN_START * product._start_scale()
    # every point whose start lies at least CHAIN_OWN_MIN_LEVELS spine levels below the
    # top (here all but x = 1e-3 s, 1.7 levels)
    deep = (_chain.CHAIN_OWN_RATIO * np.abs(x)
            <= top / _chain.CHAIN_FACTOR_MAX ** _chain.CHAIN_OWN_MIN_LEVELS)
    assert np.array_equal(idx, np.flatnonzero(deep)) and idx.size == x.size - 1
    ax = np.abs(x[idx])
    assert np.all((y0 >= _chain.CHAIN_OWN_RATIO * ax)
                  & (y0 < _chain.CHAIN_OWN_RATIO * _chain.CHAIN_FACTOR_MAX * ax))
    # whole spine levels (the logarithms' rounding, ~1e-15 of ~10 levels) and the level
    # above each (one ulp)
    levels = np.log(top / y0) / np.log(_chain.CHAIN_FACTOR_MAX)
    assert np.allclose(levels, np.round(levels), rtol=0, atol=LEVEL_ATOL)
    assert np.allclose(y_prev, y0 * _chain.CHAIN_FACTOR_MAX, rtol=ULP_RTOL, atol=0)
    # the roots there lie inside the lower half-plane and pass eq. (14.64)
    t = 1.0 / (x[idx] + 1j * y0)
    assert np.all(om.imag < 0) and product._turned_from(om, t).all()


def test_the_spine_is_solved_once(product, monkeypatch):
    x = _points(product)
    product._continue(x, np.zeros(x.size))
    kept = dict(product._spine_cache)
    calls = []
    original = ProductChainLaw._continue

    def watching(self, *a, **k):
        calls.append(k.get("own_height", True))
        return original(self, *a, **k)

    monkeypatch.setattr(ProductChainLaw, "_continue", watching)
    product._continue(x, np.zeros(x.size))
    assert calls == [True]                   # no continuation of the spine again
    assert product._spine_cache.keys() == kept.keys()


def test_own_height_starts_cost_fewer_newton_columns(monkeypatch):
    law = freeattn.free_multiplicative(
        freeattn.attention_law(0.5, 1.0).squared(),
        freeattn.free_multiplicative(freeattn.attention_law(1.0, 0.5).squared(),
                                     freeattn.point_masses([1.0, 2.0], [0.5, 0.5])))
    x = law._start_scale() * np.geomspace(1e-11, 1e-3, 64)
    law._spine(range(2, 10))                 # the spine first (solved once per law)
    count = _columns(monkeypatch)
    law._continue(x, np.zeros(x.size))
    own = count[0]
    count[0] = 0
    law._continue(x, np.zeros(x.size), own_height=False)
    assert count[0] >= FEWER_COLUMNS * own


def test_a_point_that_fails_from_its_own_height_goes_again_from_the_top(product, monkeypatch):
    # (the depth-3 product of tests/test_sum_support.py, next to an edge, ended its
    # descent from its own height 1.5e-11 from the root, above CHAIN_ACCEPT_RTOL, where
    # the continuation from the top ends at 1.0e-11; made to fail here for every point)
    x = _points(product)
    original = ProductChainLaw._continue_from
    calls = []

    def failing(self, x, y_final, check, optional, partial, strict, own, soft=None):
        calls.append(own is not None)
        om = original(self, x, y_final, check, optional, partial, strict, own, soft)
        if own is not None:
            om[:, own[0]] = np.nan           # as a soft point the continuation dropped
        return om

    monkeypatch.setattr(ProductChainLaw, "_continue_from", failing)
    om = product._continue(x, np.zeros(x.size))
    assert calls == [True, False]
    monkeypatch.setattr(ProductChainLaw, "_continue_from", original)
    top = product._continue(x, np.zeros(x.size), own_height=False)
    assert np.max(np.abs(om - top) / np.abs(top)) <= SAME_ROOT_RTOL
