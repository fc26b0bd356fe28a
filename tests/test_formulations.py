"""The two formulations of a sum's density (theory eqs. (14.1), (14.29)) solve the points
they can, each leaving the others to the next (section 14.43), both warm tables before
either continuation (eq. (14.63)), and a continuation's failed last step is not repeated
from the same predictor.

Independent checks: the mirrored formulation's own solve of the same points (the two
formulations are two solves of one law), and the error each formulation raises alone.
"""

import numpy as np
import pytest

import freeattn
from conftest import record_calls
from freeattn.compose import _analytic
from freeattn.core._errors import ConvergenceError

#: The two formulations at interior points of the weighted Bernoulli sum: measured
#: 2.2e-16 at the quarter points of its bands.
FORMULATIONS_RTOL = 1e-12
#: A solve at a point again, from a warm start of its table: measured 6.1e-16 (G) apart
#: for a system, 1.1e-15 (density) for the sum of section 14.43's NaN test.
RESOLVE_RTOL = 1e-13


def _weighted_bernoulli():
    # point_masses([-1, 1], [1/2 - e, 1/2 + e]) ⊞ point_masses([-1, 1]), e = 0.01: two
    # bands around the atom of mass e at 0 (theory section 14.26)
    e = 0.01
    law = freeattn.free_additive(freeattn.point_masses([-1.0, 1.0], [0.5 - e, 0.5 + e]),
                                 freeattn.point_masses([-1.0, 1.0]))
    assert isinstance(law, _analytic.AnalyticLaw)
    return law


def _quarter_points(law):
    return np.array([lo + f * (hi - lo) for lo, hi in law.intervals()
                     for f in (0.25, 0.5, 0.75)])


def _made_to_fail(target, points, name, warm=True):
    """``target._boundary_density`` failing at ``points`` (NaN with ``partial`` or at
    the warm stage, else a raise), and with ``warm`` false at every point of the warm
    stage (its warm table made not to reach them)."""
    solve = type(target)._boundary_density.__get__(target)

    def density(xs, partial=False, stage=None):
        if stage == "warm" and not warm:
            return np.full(xs.shape, np.nan)
        out = solve(xs, partial, stage)
        hit = np.isin(xs, points)
        if hit.any():
            error = ConvergenceError(f"{name} made to fail", point=float(xs[hit][0]))
            if not (partial or stage == "warm"):
                raise error
            if partial:
                target._partial_failure(error)
            out[hit] = np.nan
        return out
    return density


def test_each_formulation_solves_the_points_it_can_section_14_43():
    law = _weighted_bernoulli()
    mirror = law._mirror()
    x = _quarter_points(law)
    own = law._boundary_density(x)
    other = mirror._boundary_density(x)
    np.testing.assert_allclose(own, other, rtol=FORMULATIONS_RTOL)

    # the own formulation made to fail at two points: those, and only those, go to the
    # mirrored one, whose values they get; the others keep the own formulation's
    failing = [1, 4]
    asked = []

    def asking(density):
        def recorded(xs, partial=False, stage=None):
            asked.append((np.array(xs), stage))
            return density(xs, partial, stage)
        return recorded

    law._boundary_density = _made_to_fail(law, x[failing], "own")
    mirror._boundary_density = asking(type(mirror)._boundary_density.__get__(mirror))
    law._formulations = [law, mirror]
    got = law._general_density(x)
    # its warm table (of the solve above) reaches them (eq. (14.63)): no continuation
    assert len(asked) == 1 and asked[0][1] == "warm"
    np.testing.assert_array_equal(asked[0][0], x[failing])
    keep = np.setdiff1d(np.arange(x.size), failing)
    np.testing.assert_allclose(got[keep], own[keep], rtol=FORMULATIONS_RTOL)
    np.testing.assert_allclose(got[failing], other[failing], rtol=FORMULATIONS_RTOL)
    assert law._formulations[0] is law

    # neither warm table reaches four points: the own continuation fails them, the
    # mirrored one solves them, and goes first for the next batch
    failing = [0, 1, 2, 4]
    asked.clear()
    law._boundary_density = _made_to_fail(law, x[failing], "own")
    mirror._boundary_density = asking(_made_to_fail(
        mirror, [], "mirrored", warm=False))
    got = law._general_density(x)
    assert [a[1] for a in asked] == ["warm", "continue"]
    np.testing.assert_array_equal(asked[1][0], x[failing])
    np.testing.assert_allclose(got[failing], other[failing], rtol=FORMULATIONS_RTOL)
    assert law._formulations[0] is mirror

    # a second continuation that solves fewer points than the first's does not turn
    # the order round: neither table reaches any point, the mirrored formulation (now
    # first) made to leave two of the six, which the own one's continuation solves
    asked.clear()
    mirror._boundary_density = asking(_made_to_fail(mirror, x[[1, 4]], "mirrored",
                                                    warm=False))
    law._boundary_density = _made_to_fail(law, [], "own", warm=False)
    got = law._general_density(x)
    assert [a[0].size for a in asked] == [6, 6]
    np.testing.assert_allclose(got, other, rtol=FORMULATIONS_RTOL)
    assert law._formulations[0] is mirror


def test_the_warm_and_continue_stages_eq_14_63(monkeypatch):
    # the warm stage is Newton from the table alone (NaN without a table); the continue
    # stage goes straight to the continuation, without the table's Newton again
    law = _weighted_bernoulli()
    x = _quarter_points(law)
    full = law._boundary_density(x)
    table = law._warm_x, law._warm_w
    law._warm_x, law._warm_w = np.empty(0), np.empty(0, dtype=complex)
    assert np.isnan(law._boundary_density(x, stage="warm")).all()     # no table
    law._warm_x, law._warm_w = table
    continued = record_calls(monkeypatch, law, "_continue")
    warm_path = record_calls(monkeypatch, law, "_axis")
    warm = law._boundary_density(x, stage="warm")
    assert not continued and not warm_path
    np.testing.assert_allclose(warm, full, rtol=RESOLVE_RTOL)
    got = law._boundary_density(x, stage="continue")
    assert len(continued) == 1 and not warm_path
    np.testing.assert_array_equal(continued[0], x)
    np.testing.assert_allclose(got, full, rtol=RESOLVE_RTOL)
    with pytest.raises(ValueError, match="stage must be"):
        law._boundary(x, stage="cold")


def test_a_warm_stage_that_raises_leaves_its_points_to_the_continuations_eq_14_63():
    # the own formulation's warm stage made to raise (a constituent's transform raising
    # at a table start): its points go on to the continuations, which solve them
    law = _weighted_bernoulli()
    mirror = law._mirror()
    x = _quarter_points(law)
    full = law._boundary_density(x)
    solve = type(law)._boundary_density.__get__(law)

    def raising(xs, partial=False, stage=None):
        if stage == "warm":
            raise ConvergenceError("made to fail", point=float(xs[0]))
        return solve(xs, partial, stage)
    law._boundary_density = raising
    law._formulations = [law, mirror]
    got = law._general_density(x)
    np.testing.assert_allclose(got, full, rtol=FORMULATIONS_RTOL)


def test_a_point_a_partial_solve_leaves_is_not_asked_of_a_constituent_section_14_43(
        monkeypatch):
    """A boundary solve that leaves a point (NaN, partial) gave that NaN to the
    constituent's transform; a tower raised on it ('no root ... at z=nan+nanj') for the
    whole batch, which then went to the mirrored formulation.  Now the point stays NaN
    and the others keep their density (the same values as the solve without it)."""
    # the depth-2 campaign's seed 2 / draw 4
    law = freeattn.free_additive(
        freeattn.free_multiplicative(freeattn.marchenko_pastur(1.7528, 1.2168),
                                     freeattn.attention_law(2.5876, 1.528).squared()),
        freeattn.attention_law(0.026747, 0.2468).squared())
    assert isinstance(law, _analytic.AnalyticLaw)
    x = _quarter_points(law)
    full = law._boundary_density(x)
    boundary = law._boundary

    def leaving_one(xs, partial=False, stage=None):
        w = boundary(xs, partial, stage)
        w[1] = np.nan
        return w
    monkeypatch.setattr(law, "_boundary", leaving_one)
    got = law._boundary_density(x, partial=True)
    assert np.isnan(got[1])
    keep = np.arange(x.size) != 1
    np.testing.assert_allclose(got[keep], full[keep], rtol=RESOLVE_RTOL)


def test_a_point_neither_formulation_solves_raises_with_both_errors_section_14_43():
    law = _weighted_bernoulli()
    mirror = law._mirror()
    x = _quarter_points(law)
    law._boundary_density(x)                      # warm starts of eq. (14.7)

    law._boundary_density = _made_to_fail(law, x[2:3], "own")
    mirror._boundary_density = _made_to_fail(mirror, x[2:3], "mirrored")
    with pytest.raises(ConvergenceError, match="own made to fail and, in the mirrored "
                       "formulation of eq. \\(14.29\\), mirrored made to fail") as info:
        law._general_density(x)
    assert info.value.point == float(x[2])


@pytest.mark.slow
def test_a_failed_last_step_of_a_continuation_is_not_repeated_section_14_43():
    # the depth-3 campaign's seed 2 / draw 19: its own formulation stalls at x = 0.01005
    # (the mirrored one solves it).  Below the stop height every factor's next level is
    # the axis itself, from the same predictor: the failed Newton at y = 0 was repeated
    # 12 times there (measured), now at most once more (2 measured)
    law = freeattn.free_additive(
        freeattn.free_multiplicative(freeattn.point_masses([2.726], [1.0]),
                                     freeattn.attention_law(1.8584, 0.50884).squared()),
        freeattn.sample_covariance(freeattn.free_multiplicative(
            freeattn.attention_law(0.14625, 0.20773).squared(),
            freeattn.attention_law(0.0036128, 0.22818).squared()), 0.27405))
    steps = []
    newton = _analytic.newton

    def counting(pr, z, w0, max_steps=_analytic.LEVEL_NEWTON_STEPS, **kw):
        r = newton(pr, z, w0, max_steps=max_steps, **kw)
        if pr is law._problem and max_steps == _analytic.LEVEL_NEWTON_STEPS and np.all(
                z.imag == 0):
            steps.append(bool(r.converged.all()))
        return r

    x = np.array([0.010053916846119641])
    try:
        _analytic.newton = counting
        w = law._continue(x, np.zeros(1), partial=True)
    finally:
        _analytic.newton = newton
    assert np.isnan(w[0])
    assert "stalled" in str(law._partial_error) and law._partial_error.point == x[0]
    assert 1 <= len(steps) <= 3 and not any(steps)
    # without partial the same error is raised
    with pytest.raises(ConvergenceError, match="stalled"):
        law._continue(x, np.zeros(1))


def test_a_system_solves_its_points_and_its_two_laws_the_others_section_14_43(monkeypatch):
    # (MP ⊠ attention) ⊠ two atoms (depth-3 campaign, seed 0 / draw 39), its system made
    # to leave one point of a batch unsolved (NaN with ``partial``, as a point without a
    # root from its starts comes back): only that point goes to the two laws'
    # subordination (eq. (14.4))
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.marchenko_pastur(0.53392, 1.1864),
                                     freeattn.attention_law(0.045567, 0.27105).squared()),
        freeattn.point_masses([1.553, 4.649], [0.694, 0.306]))
    far = -19449.70752567695 + 14.03775846899765j
    own = law._solve

    def leaving_far(z, partial=False):
        assert partial
        om = own(z, partial=True)
        om[:, z == far] = np.nan
        return om

    near = np.array([0.01 + 0.01j, 0.03 + 0.002j])
    g_sys, d_sys = law._solved_pair(near)
    form = law._two_law_form()
    pair = form._stieltjes_pair
    asked = record_calls(monkeypatch, form, "_stieltjes_pair")
    monkeypatch.setattr(law, "_solve", leaving_far)
    z = np.array([near[0], far, near[1]])
    g, d = law._stieltjes_pair(z)
    assert len(asked) == 1
    np.testing.assert_array_equal(asked[0], [far])
    # the system's solves again, from its warm table (measured 6.1e-16 apart)
    np.testing.assert_allclose(g[[0, 2]], g_sys, rtol=RESOLVE_RTOL)
    np.testing.assert_allclose(d[[0, 2]], d_sys, rtol=RESOLVE_RTOL)
    g_far, d_far = pair(np.array([far]))
    assert g[1] == g_far[0] and d[1] == d_far[0]


def test_a_root_left_above_the_step_tolerance_is_kept_under_the_acceptance_section_14_43():
    # Newton from a solved neighbour stops after CHAIN_NEIGHBOUR_STEPS; a root it left
    # unconverged (next to a fold it converges linearly) is kept where the
    # continuation's acceptance takes it (its next step below CHAIN_ACCEPT_RTOL, or the
    # fold's residual), strictly inside the lower half-plane; a root 1e-6 off is not
    law = freeattn.free_multiplicative(freeattn.attention_law(0.026488, 0.39777).squared(),
                                       freeattn.attention_law(0.71258, 0.85779).squared())
    z = np.array([1e-3 + 1e-3j, 2e-3 + 5e-4j, 4e-3 + 1e-5j])
    om = law._continue(z.real, z.imag)
    unconverged = np.zeros(z.size, dtype=bool)
    assert law._kept_inside(om, 1.0 / z, unconverged).all()
    assert not law._kept_inside(om * (1.0 + 1e-6), 1.0 / z, unconverged).any()
    # and a converged root outside the open lower half-plane is not kept
    assert not law._kept_inside(om.conj(), 1.0 / z, ~unconverged).any()
