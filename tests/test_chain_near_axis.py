"""Warm starts of a nested product next to the axis and far from its last points
(theory section 14.35, eqs. (14.44), (14.45); the negative-axis table of section 14.16).

Every accepted value is compared with the cold continuation of section 14.8 from
``y = 64 s`` at the same point (the reference of eq. (14.8), independent of the tables),
relative in the largest unknown: a root on another branch would be off by O(1).
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose import _chain

#: Agreement with the cold continuation, relative; measured 1.3e-15 (eq. (14.44)),
#: 2.1e-15 (eq. (14.45)), 1.9e-16 (the negative-axis table).
CONTINUATION_RTOL = 1e-13


def _product():
    return freeattn.free_multiplicative(freeattn.attention_law(0.026488, 0.39777).squared(),
                                        freeattn.attention_law(0.71258, 0.85779).squared())


def test_the_negative_table_waits_for_a_negative_point():
    law = _product()
    law.intervals()
    assert not np.any(law._gap_x < 0)
    law._solve_axis(np.array([1e-3]))
    assert not np.any(law._gap_x < 0)


@pytest.fixture(scope="module")
def product():
    # two bands, the lower one from a hard edge at 0: [0, 3.6e-7] and [2.1e-5, 6.9e-3]
    law = freeattn.free_multiplicative(freeattn.attention_law(0.026488, 0.39777).squared(),
                                       freeattn.attention_law(0.71258, 0.85779).squared())
    assert isinstance(law, _chain.ProductChainLaw) and len(law.intervals()) == 2
    return law


def _rel(om, ref):
    return np.abs(om - ref).max(axis=0) / np.abs(ref).max(axis=0)


def test_negative_axis_table_of_a_support_reaching_zero(product):
    # built when the negative axis is first asked for
    x = np.array([-1e-8, -1e-4, -0.1])
    om, ok = product._solve_axis(x)
    assert ok.all()
    gx = product._gap_x
    neg = np.sort(-gx[gx < 0])
    assert neg.size >= 100
    ratio = neg[1:] / neg[:-1]
    assert ratio.max() <= 1.34                # eight points per decade
    ref = product._continue(x, np.zeros(x.size))
    assert _rel(om, ref).max() <= CONTINUATION_RTOL
    assert np.all(np.abs(om.imag) <= _chain.CHAIN_REAL_RTOL * np.abs(om))


def test_points_next_to_the_axis_start_from_their_real_part_eq_14_44(product):
    # left of the hard edge, in the gap, inside both bands, above the support
    x = np.array([-1e-9, -3e-6, -0.02, 3e-7, 1e-5, 0.004, 0.05])
    z = x + 1j * 1e-6 * np.abs(x)
    om, ok = product._near_axis(z)
    assert ok.all()
    ref = product._continue(z.real, z.imag)
    assert _rel(om, ref).max() <= CONTINUATION_RTOL
    assert np.all(om.imag <= 0)


#: 1e-10 beyond a square-root edge, omega(x) - omega_e ~ sqrt(x - x_e): an ulp of x
#: moves the continuation's answer by 2e-12 - 8e-12 relative (measured, +-1 ulp), and two
#: paths to the point (the fold model of eq. (14.54) then Newton, or the continuation)
#: agree to 6.6e-11 (measured on an AVX-512 host, where the fold model answers; 1e-13
#: where the continuation answers both).
EDGE_CONTINUATION_RTOL = 2e-10


def test_a_point_next_to_an_edge_agrees_with_the_continuation(product):
    """1e-10 beyond the first band's upper edge (the distance condition of eq. (14.16)
    gives no table start there; eq. (14.54)'s fold model may, depending on the
    rounding of the fold): whichever path answers, the solve and eq. (14.44) agree
    with the cold continuation to the edge's conditioning."""
    edge = product.intervals()[0][1]
    z = np.array([edge * (1 + 1e-10) + 1e-17j])
    near, ok = product._near_axis(z)
    om = product._solve(z)
    ref = product._continue(z.real, z.imag)
    assert _rel(om, ref).max() <= EDGE_CONTINUATION_RTOL
    if ok.any():
        assert _rel(near, ref).max() <= EDGE_CONTINUATION_RTOL
        assert np.all(near.imag <= 0)


def test_points_far_from_every_solved_point_start_from_the_nearest_eq_14_45(product):
    z0 = np.full(3, 1e-3 + 1e-3j)
    om0 = product._continue(z0.real, z0.imag)
    z = np.array([1e-6 + 3e-6j, -2e-3 + 1e-3j, 0.3 + 0.1j])   # 3 to 300 times |z0| away
    om, ok = product._from_neighbours(z, z0, om0)
    assert ok.all()
    ref = product._continue(z.real, z.imag)
    assert _rel(om, ref).max() <= CONTINUATION_RTOL


def test_a_host_sum_rarely_continues_its_nested_product(product, monkeypatch):
    # SC(1e-3) ⊞ the product: the host's Newton calls the product next to the axis,
    # over its gap and left of 0; after the product's own support (built above), its
    # continuation of section 14.8 ran 13 times for the host's support and density on
    # 100 points before eqs. (14.44), (14.45), and 3 times now (the host's locator)
    calls = []
    plain = _chain.ProductChainLaw._continue

    def counting(self, *args, **kwargs):
        calls.append(1)
        return plain(self, *args, **kwargs)

    monkeypatch.setattr(_chain.ProductChainLaw, "_continue", counting)
    host = freeattn.free_additive(freeattn.semicircle(1e-3), product)
    lo, hi = host.support()
    assert np.all(host.pdf(np.linspace(lo, hi, 100)) >= 0)
    assert host.accuracy().mass_error <= 1e-10
    assert len(calls) <= 6


@pytest.mark.slow
def test_a_point_far_from_its_neighbour_goes_along_the_path_eq_14_61(monkeypatch):
    # eq. (14.61): the second product of the depth-4 campaign's seed 44 / draw 4, asked by
    # the sum over it at subordination points above 0, below its support [9.15e-7, 0.569]:
    # the nearest solved point lies a factor 2.4 to 600 away, where the scaled start of
    # eq. (14.45) fails; each such call went through the continuation (0.1 s)
    A = freeattn.attention_law
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(
            freeattn.free_multiplicative(A(1.0797, 0.35236).squared(), freeattn.point_masses(
                [3.253, 0.781, 1.465, 3.818], [0.317, 0.055, 0.358, 0.27])),
            freeattn.free_multiplicative(freeattn.marchenko_pastur(0.64809, 1.4426),
                                         freeattn.marchenko_pastur(0.67417, 1.8574))),
        freeattn.sample_covariance(freeattn.free_multiplicative(
            A(0.77361, 0.42371).squared(), A(0.096157, 0.89151).squared()), 0.69988))
    assert isinstance(law, _chain.ProductChainLaw)
    z0 = np.array([-2.242875765503177e-08 + 2.2772299805392405e-07j])
    om0 = law._solve(z0)
    z = np.array([-2.2343384328202487e-08 + 1.388093514115577e-04j,
                  3.27941e-07 + 1.38809351e-04j,
                  -2.2228020560683112e-08 + 5.437681856265346e-07j])
    _, accepted = law._from_neighbours(z, np.repeat(z0, 3), np.repeat(om0, 3, axis=1))
    assert not accepted.any()
    continued = []
    original = law._continue
    monkeypatch.setattr(law, "_continue", lambda *a, **k: continued.append(a) or original(*a, **k))
    om = law._solve(z)
    assert not continued
    ref = original(z.real, z.imag)
    # measured 1.2e-15
    assert np.abs(om - ref).max() <= CONTINUATION_RTOL * np.abs(ref).max()


def test_continued_gap_points_join_the_table_once_eq_14_16():
    # a host may ask the same real point twice in one call: the table of eq. (14.16)
    # keeps each point once (a repeated abscissa would give a bracket of width 0)
    law = _product()
    hi = law.intervals()[-1][1]
    x = np.array([2.0 * hi, 2.0 * hi, 3.0 * hi])
    om = law._continue(x, np.zeros(x.size), check=False)
    before = law._gap_x.size
    law._add_gap(x, om)
    assert law._gap_x.size == before + 2
    assert np.all(np.diff(law._gap_x) > 0)
