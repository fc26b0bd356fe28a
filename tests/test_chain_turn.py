"""The argument test of eq. (14.64): a root of the many-law system (14.8) off the axis is
kept only where every subordination point is turned from ``t`` at least as far as ``t``
itself (theory section 14.57).

The reference is the cold continuation of section 14.8 from ``y = 64 s`` at the same
point, which follows the solution's branch from the large-``|z|`` limit and does not use
the tests of eqs. (14.15) or (14.64).
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose import _chain

#: A root on another branch differs from the solution by O(1) relative (here 0.08 in
#: ``G``, 1.1 in the unknowns); agreement of the kept root with the continuation is to
#: rounding (measured 0 and 5e-16).
BRANCH_GAP = 0.01
CONTINUATION_RTOL = 1e-13

#: The point of section 14.57 and the start from which Newton reaches the other root.
POINT = 7.37319544e-05 + 2.1516e-04j
OTHER_START = np.array([[0.99 - 0.57j], [0.765 - 0.008j], [0.757 - 0.26j]])


def _system():
    # seed 76 / draw 25 of the depth-3 campaign: the nested law of the sum
    atoms = freeattn.point_masses([0.898, 0.865, 2.695], [0.34, 0.073, 0.587])
    law = freeattn.sample_covariance(
        freeattn.free_multiplicative(atoms, freeattn.attention_law(0.043245, 0.18405).squared()),
        4.874)
    assert isinstance(law, _chain.ProductChainLaw) and len(law.factors) == 3
    return law


def _g(law, om, z):
    """``G = t/(1 - eta)`` from the unknowns (eq. (14.8))."""
    eta = law._rows[0].map(om[0])[2]
    return (1.0 / z) / (1.0 - eta)


def test_a_root_in_the_lower_half_plane_off_the_branch_is_refused_eq_14_64():
    law = _system()
    z = np.array([POINT])
    t = 1.0 / z
    other, converged = law._newton(OTHER_START.astype(complex), t, _chain.CHAIN_FINAL_STEPS,
                                   _chain.CHAIN_FINAL_RTOL)
    solution = law._continue(z.real, z.imag)
    # a root of eq. (14.8), every unknown strictly inside the lower half-plane: the
    # half-plane test of eq. (14.15) alone keeps it ...
    assert converged[0]
    assert np.all(other.imag < -_chain.WARM_INSIDE_RTOL * np.abs(other))
    # ... but it is not the solution
    g_other, g_sol = _g(law, other, z), _g(law, solution, z)
    assert abs(g_other[0] - g_sol[0]) > BRANCH_GAP * abs(g_sol[0])
    # eq. (14.64) refuses it (its first subordination point is turned less than t)
    q = law._rows[0].omega(other[0]) / t
    assert q.imag[0] > 0
    assert not law._kept_inside(other, t, converged)[0]
    # and keeps the solution
    assert law._kept_inside(solution, t, np.array([True]))[0]


def test_the_warm_solve_returns_the_continued_root_there():
    law = _system()
    z = np.array([POINT])
    # a warm table holding the other root at the point itself: its Newton converges
    # at once, and eq. (14.64) sends the point on to the other starts
    other, _ = law._newton(OTHER_START.astype(complex), 1.0 / z, _chain.CHAIN_FINAL_STEPS,
                           _chain.CHAIN_FINAL_RTOL)
    law._last.add(z, other)
    om = law._solve(z)
    solution = law._continue(z.real, z.imag)
    assert np.max(np.abs(om - solution)) <= CONTINUATION_RTOL * np.max(np.abs(solution))


@pytest.mark.parametrize("make", [
    _system,
    lambda: freeattn.free_multiplicative(
        freeattn.attention_law(0.5, 1.0).squared(),
        freeattn.free_multiplicative(freeattn.attention_law(1.0, 0.5).squared(),
                                     freeattn.point_masses([1.0, 2.0], [0.5, 0.5]))),
], ids=["sample-covariance-of-atoms-x-attention", "attention-x-attention-x-atoms"])
def test_continued_roots_pass_eq_14_64(make):
    law = make()
    assert len(law.factors) >= 3
    s = law._start_scale()
    rng = np.random.default_rng(76)
    x = s * np.r_[rng.uniform(-0.2, 1.2, 24), 10.0 ** rng.uniform(-8, 0, 24)]
    y = s * 10.0 ** rng.uniform(-10, 0.5, 48)
    om = law._continue(x, y)
    assert law._turned_from(om, 1.0 / (x + 1j * y)).all()


# -- the point z = 0 (theory section 14.58) ---------------------------------------------

def _hard_edge_product():
    # three laws, support [0, 8.36] with a hard edge at 0 (exponent -1/2), no atom
    return freeattn.free_multiplicative(
        freeattn.attention_law(0.5, 1.0).squared(),
        freeattn.free_multiplicative(freeattn.attention_law(1.0, 0.5).squared(),
                                     freeattn.point_masses([1.0, 2.0], [0.5, 0.5])))


def test_the_system_has_no_value_at_z_0_and_says_so_at_once():
    law = _hard_edge_product()
    assert isinstance(law, _chain.ProductChainLaw)
    with pytest.raises(freeattn.ConvergenceError, match="no value at z = 0"):
        law._solve(np.array([0.0 + 0j]))
    # a host's partial solve: NaN at 0, the other point solved as alone
    z = np.array([0.0 + 0j, 1.0 + 0.5j])
    om = law._solve(z, partial=True)
    assert np.all(np.isnan(om[:, 0]))
    alone = law._continue(z.real[1:], z.imag[1:])
    assert np.max(np.abs(om[:, 1:] - alone)) <= CONTINUATION_RTOL * np.max(np.abs(alone))


@pytest.mark.parametrize("make", [
    _hard_edge_product,
    lambda: freeattn.free_multiplicative(freeattn.attention_law(1.0, 0.5).squared(),
                                         freeattn.point_masses([1.0, 2.0], [0.5, 0.5])),
], ids=["three-laws", "two-laws"])
def test_g_at_a_hard_edge_raises_a_value_error_naming_it(make):
    law = make()
    lo = law.interval_details()[0]
    assert lo.lo == 0.0 and lo.lo_exponent < 0
    with pytest.raises(ValueError, match="z = 0.0 is an end of the support"):
        law.stieltjes(0.0)
    # beside it G is finite, real and negative (the law lies on [0, oo))
    g = law.stieltjes(-1e-3 * law.support()[1])
    assert np.isfinite(g) and g.imag == 0 and g.real < 0


def test_g_at_a_soft_edge_is_its_finite_limit():
    # the semicircle of variance 1 at its edge 2: G(2) = (z - sqrt(z**2 - 4))/2 = 1 exactly
    assert freeattn.semicircle(1.0).stieltjes(2.0) == 1.0
