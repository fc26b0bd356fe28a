"""Products nested in products (theory section 14.39, eq. (14.49)) and the answers a
nested law keeps for its host (``SpectralLaw._memoized_pair``)."""

import numpy as np
import pytest

import freeattn
from conftest import record_calls
from freeattn.compose import _chain
from freeattn.compose._analytic import AnalyticLaw
from freeattn.core._errors import ConvergenceError
from freeattn.compose._chain import CHAIN_FINAL_RTOL, CHAIN_FINAL_STEPS, ProductChainLaw
from freeattn.compose._fixed_point import WarmTable
from freeattn.compose._subordination import SubordinationLaw
from freeattn.laws._law_base import PAIR_MEMO_MAX_POINTS, PAIR_MEMO_SIZE

#: The system of eq. (14.8) in four factors (the S-level's two) against the same system in
#: three, the S-level's row solved by its tower (eq. (8.10)): two independent solves of
#: the same law, each to its own ~1e-15; measured 7.1e-16 in G at five points on and off
#: the axis, 2.8e-15 in the upper edge, 1.5e-14 in the density on 48 points of the band
#: (next to the edges the density's relative error grows as its value falls).
G_RTOL = 1e-13
EDGE_RTOL = 1e-13
PDF_RTOL = 1e-12


@pytest.fixture(scope="module")
def nested():
    level = freeattn.free_multiplicative(freeattn.attention_law(0.5, 0.5).squared(),
                                         freeattn.marchenko_pastur(1.0, 0.5))
    other = freeattn.free_multiplicative(freeattn.attention_law(1.0, 1.0).squared(),
                                         freeattn.attention_law(0.3, 0.7).squared())
    return level, other


def test_an_s_level_operand_enters_the_system_as_its_factors_eq_14_49(nested):
    # eq. (14.49): (attention ⊠ MP) ⊠ (attention ⊠ attention) is the system of eq. (14.8)
    # in the four laws; the same law as the system in three with the level as one row
    level, other = nested
    assert isinstance(level, SubordinationLaw) and level._s_transform() is None
    assert isinstance(other, ProductChainLaw)
    law = freeattn.free_multiplicative(level, other)
    assert isinstance(law, ProductChainLaw)
    assert [type(f).__name__ for f in law.factors] == ["MarchenkoPastur", "AttentionLaw",
                                                      "AttentionLaw", "AttentionLaw"]
    ref = ProductChainLaw([level, *other.factors], law.options)
    z = np.array([0.3 + 0.1j, 1 + 1e-3j, 2.0 + 0.5j, 0.05 + 0.01j, 5 + 0j])
    np.testing.assert_allclose(law.stieltjes(z), ref.stieltjes(z), rtol=G_RTOL, atol=0)
    (lo, hi), = law.intervals()
    (rlo, rhi), = ref.intervals()
    assert lo == rlo == 0.0
    assert hi == pytest.approx(rhi, rel=EDGE_RTOL)
    x = np.linspace(lo, hi, 50)[1:-1]
    np.testing.assert_allclose(law.pdf(x), ref.pdf(x), rtol=PDF_RTOL, atol=0)


def test_two_laws_are_flattened_and_explicit_rows_are_not_section_14_39(nested):
    # an S-level and one other law: the system in their three factors, which keeps the
    # two laws for their subordination (eq. (14.4)); an S-level over a closed-form
    # constituent (a sample covariance of atoms) is an explicit row of eq. (14.21) and
    # stays one row
    level, other = nested
    att = freeattn.attention_law(1.0, 1.0).squared()
    two = freeattn.free_multiplicative(level, att)
    assert isinstance(two, ProductChainLaw) and len(two.factors) == 3
    assert two._two_laws == (level, att)
    cov = freeattn.sample_covariance(freeattn.point_masses([1.0, 3.0], [0.5, 0.5]), 0.5)
    law = freeattn.free_multiplicative(cov, other)
    assert isinstance(law, ProductChainLaw) and law.factors[0] is cov
    assert len(law.factors) == 3 and law._two_laws is None


#: G and G' far from the support from the two laws' subordination against the moment
#: series sum_k m_k / z**(k+1) in the exact moments (eq. (14.47), 16 terms: |z| is 4e5
#: times the support's extent, so the tail is below 1e-80); measured 5.3e-16 and 1.3e-15.
FAR_RTOL = 1e-13


def _campaign_pair():
    # (MP ⊠ attention) ⊠ two atoms, nested at depth 3 of the campaign (seed 0, draw 39)
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.marchenko_pastur(0.53392, 1.1864),
                                     freeattn.attention_law(0.045567, 0.27105).squared()),
        freeattn.point_masses([1.553, 4.649], [0.694, 0.306]))
    assert isinstance(law, ProductChainLaw) and law._two_laws is not None
    return law


def _series_pair(law, z):
    m = [law.moment(k) for k in range(16)]
    gs = sum(m[k] / z ** (k + 1) for k in range(16))
    ds = sum(-(k + 1) * m[k] / z ** (k + 2) for k in range(16))
    return gs, ds


#: Its host asked the law at z = -1.9e4 + 14i (its support ends at 0.046).
FAR_POINT = -19449.70752567695 + 14.03775846899765j


def test_a_system_solves_far_from_its_support_by_the_moment_tail_eq_14_52():
    # there eta = 1 - w/G(1/w) of an omega-row (eq. (14.4)) kept eps/|w| = 4e-10 of its
    # digits, the Newton steps followed that noise and the system found no root; with
    # eta from the moment tail (eq. (14.52)) it solves the point (measured 1.3e-16 in G
    # and 6e-19 in G' from the series)
    law = _campaign_pair()
    g, d = law._solved_pair(np.array([FAR_POINT]))
    gs, ds = _series_pair(law, FAR_POINT)
    assert abs(g[0] - gs) <= FAR_RTOL * abs(gs)
    assert abs(d[0] - ds) <= FAR_RTOL * abs(ds)


def test_a_flattened_pair_answers_a_host_by_their_subordination_section_14_39(monkeypatch):
    # where the system of eq. (14.8) in the three factors raises (made to, here, as it
    # did at FAR_POINT before eq. (14.52)), the two laws' subordination (eq. (14.4))
    # answers
    law = _campaign_pair()
    own = law._solve

    def failing(z, partial=False):
        raise ConvergenceError("no root of the system (made to fail)", point=z[0])

    monkeypatch.setattr(law, "_solve", failing)
    z = np.array([FAR_POINT])
    with pytest.raises(ConvergenceError, match="made to fail"):
        law._solved_pair(z)
    g, d = law._stieltjes_pair(z)
    # the two-law form answered, its support located first (its tables serve a host's
    # points next to the axis, as when the two laws were the law itself)
    assert law._two_law_form()._interval_cache is not None
    gs, ds = _series_pair(law, FAR_POINT)
    assert abs(g[0] - gs) <= FAR_RTOL * abs(gs)
    assert abs(d[0] - ds) <= FAR_RTOL * abs(ds)
    monkeypatch.setattr(law, "_solve", own)
    assert law.stieltjes(z)[0] == pytest.approx(gs, rel=FAR_RTOL)


def test_a_system_without_two_laws_raises(monkeypatch):
    # a system that flattens no pair has no other solve: its failure is the caller's
    level, other = freeattn.attention_law(1.0, 1.0).squared(), freeattn.attention_law(0.3, 0.7)
    law = freeattn.free_multiplicative(level, other.squared())
    assert isinstance(law, ProductChainLaw) and law._two_laws is None

    def fail(z):
        raise freeattn.ConvergenceError("made to fail")
    monkeypatch.setattr(law, "_solve", fail)
    with pytest.raises(freeattn.ConvergenceError, match="made to fail"):
        law._stieltjes_pair(np.array([0.5 + 0.1j]))


def test_a_product_is_not_located_to_check_its_sign_section_14_39(nested):
    # a product of laws on [0, oo) is on [0, oo): composing it again does not locate its
    # support (which for a nested product costs as much as the law itself)
    level, other = nested
    chain = freeattn.free_multiplicative(level, other)
    law = freeattn.free_multiplicative(chain, freeattn.attention_law(2.0, 0.7).squared())
    assert chain._interval_cache is None
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 5


#: A rational S-level over a system against the system with it as one more factor:
#: edges measured within 3.4e-15 relative (section 14.41).
LEVEL_AS_FACTOR_RTOL = 1e-13


@pytest.mark.parametrize("betas, gammas, ratio, bands", [
    ((0.5, 1.0), (0.5, 1.0), 0.5, 1),
    # depth-2 campaign, seed 1 / draw 1: bands [0, 5.2e-16], [5.6e-15, 1.1e-10] and
    # [1.2e-8, 1.8e-6]; the system's grid below its plain start merged the two lowest
    # until a real solution there counted as a gap (eq. (14.16), section 14.41)
    ((0.011554, 0.02588), (0.80723, 0.25522), 0.45652, 3),
])
def test_a_level_over_a_system_is_one_more_factor_section_14_41(betas, gammas, ratio, bands):
    from freeattn.compose._subordination import _collapsed_product

    inner = freeattn.free_multiplicative(
        freeattn.attention_law(betas[0], gammas[0]).squared(),
        freeattn.attention_law(betas[1], gammas[1]).squared())
    assert isinstance(inner, ProductChainLaw)
    law = freeattn.sample_covariance(inner, ratio)
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 3
    mp = freeattn.marchenko_pastur(1.0, ratio)
    level = _collapsed_product(mp, inner, mp._s_transform(), None, mp.options)
    assert isinstance(level, SubordinationLaw) and level.constituent is inner
    assert len(law.intervals()) == len(level.intervals()) == bands
    np.testing.assert_allclose([v for iv in law.intervals() for v in iv],
                               [v for iv in level.intervals() for v in iv],
                               rtol=LEVEL_AS_FACTOR_RTOL, atol=0)


def _counting(law, monkeypatch):
    calls = []
    solve = law._unmemoized_pair

    def counted(z):
        calls.append(z.size)
        return solve(z)
    monkeypatch.setattr(law, "_unmemoized_pair", counted)
    return calls


def test_a_nested_law_keeps_its_last_answers(monkeypatch):
    def make():
        return freeattn.free_multiplicative(freeattn.attention_law(0.5, 0.5).squared(),
                                            freeattn.marchenko_pastur(1.0, 0.5))
    law = make()
    z = np.array([0.4 + 0.2j, 1.1 + 1e-4j])
    # the same solve on a twin (the law's own second solve would start from its first
    # answers, eq. (8.36), equal to rounding, not bit for bit)
    fresh = make()._unmemoized_pair(z.copy())
    calls = _counting(law, monkeypatch)
    g, d = law._stieltjes_pair(z.copy())
    # the kept answer is the solve's own, bit for bit
    assert np.array_equal(g, fresh[0]) and np.array_equal(d, fresh[1]) and calls == [2]
    g[:] = np.nan                           # a caller's change does not reach the memo
    g2, d2 = law._stieltjes_pair(z.copy())
    assert calls == [2]
    assert np.array_equal(g2, fresh[0]) and np.array_equal(d2, fresh[1])
    # other points, and more than PAIR_MEMO_MAX_POINTS, are solved
    law._stieltjes_pair(z[:1].copy())
    big = np.linspace(0.1, 2.0, PAIR_MEMO_MAX_POINTS + 1) + 0.3j
    law._stieltjes_pair(big)
    law._stieltjes_pair(big)
    assert calls == [2, 1, big.size, big.size]
    # only the last PAIR_MEMO_SIZE point sets are kept
    for k in range(PAIR_MEMO_SIZE):
        law._stieltjes_pair(np.array([0.5 + 0.1j * (k + 1)]))
    law._stieltjes_pair(z.copy())
    assert calls[-1] == 2 and len(calls) == 4 + PAIR_MEMO_SIZE + 1


def test_a_failed_solve_is_not_kept(monkeypatch):
    law = freeattn.free_additive(freeattn.attention_law(0.5, 0.5).squared(),
                                 freeattn.attention_law(1.0, 1.0).squared())
    assert isinstance(law, AnalyticLaw)
    z = np.array([0.7 + 0.05j])
    solve = law._unmemoized_pair
    state = {"fail": True}

    def flaky(zs):
        if state["fail"]:
            raise freeattn.ConvergenceError("made to fail")
        return solve(zs)
    monkeypatch.setattr(law, "_unmemoized_pair", flaky)
    with pytest.raises(freeattn.ConvergenceError, match="made to fail"):
        law._stieltjes_pair(z)
    state["fail"] = False
    g, _ = law._stieltjes_pair(z)
    assert np.isfinite(g).all() and g[0].imag < 0


#: Moments of the density (scipy ``quad`` at ``QUAD_EPSREL``) against the exact moments of
#: the factors' product (theory section 8.10); measured 1.0e-15.  The atom at 0 and the
#: band's mass against the closed form 1 - 1/c (the sample covariance's atom, the largest
#: at 0 among the factors); measured exact and 5.6e-17.
MOMENT_RTOL = 1e-12
#: The system's density against its level form's, at the same points (two solves of one
#: law, sections 14.39 and 14.41; measured within 2e-14 on seed 16 / draw 14).
FORMS_RTOL = 1e-12
MASS_ATOL = 1e-12
#: The relative accuracy asked of ``quad`` for those moments.
QUAD_EPSREL = 1e-13


def test_a_depth_3_product_that_ran_over_a_minute_builds_section_14_39():
    # depth-3 campaign, seed 1 / draw 36 (benchmarks/campaign.py): stopped after 60 s
    # before the S-levels entered the system as their factors (eq. (14.49)); built in 0.6 s
    from scipy.integrate import quad

    c = 6.3663
    law = freeattn.free_multiplicative(
        freeattn.point_masses([1.781, 3.113, 3.697, 0.827], [0.117, 0.64, 0.094, 0.149]),
        freeattn.free_multiplicative(
            freeattn.sample_covariance(freeattn.attention_law(0.32061, 2.2451).squared(), c),
            freeattn.sample_covariance(freeattn.point_masses([2.609, 1.284, 0.653, 4.56],
                                                             [0.678, 0.035, 0.04, 0.247]),
                                       1.4118)))
    # five factors: the sample covariance of atoms, with an atom at 0, enters as its
    # factors (eq. (14.60)), the other as its explicit row of eq. (14.21)
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 5
    (lo, hi), = law.intervals()
    loc, mass = law.atoms()
    np.testing.assert_array_equal(loc, [0.0])
    assert mass[0] == pytest.approx(1.0 - 1.0 / c, abs=MASS_ATOL)
    assert law.cdf(hi) - law.cdf(lo) == pytest.approx(1.0 / c, abs=MASS_ATOL)
    for m in (1, 2, 3):
        q = quad(lambda x: x ** m * law.pdf(x), lo, hi, limit=200, epsabs=0,
                 epsrel=QUAD_EPSREL)[0]
        assert q == pytest.approx(law.moment(m), rel=MOMENT_RTOL)


def test_a_gap_narrower_than_the_locator_grid_splits_its_band_section_14_41():
    # depth-2 campaign, seed 10 / draw 9: (atom ⊠ attention) ⊠ attention. The system's
    # locator grid (1.7 % apart there) reported one band [8.2e-8, 2.3e-3] and missed a gap
    # 1.5 % wide; the representation split at the edge it did not know until its panel
    # cap (23 s). The density's solve finds the point outside (real unknowns, eq.
    # (14.16)) and the band splits at the two folds of eq. (14.22) around it.
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.point_masses([1.637], [1.0]),
                                     freeattn.attention_law(0.16643, 0.36141).squared()),
        freeattn.attention_law(0.051783, 0.50977).squared())
    assert isinstance(law, ProductChainLaw)
    bands = law.intervals()
    assert len(bands) == 3
    (_, gap_lo), (gap_hi, _) = bands[1], bands[2]
    # the density vanishes across the gap and not beside it (measured on a scan of 40
    # points: 0 from 2.8607e-6 to 2.9019e-6, 234 at 2.9042e-6)
    assert 2.8606e-6 < gap_lo < 2.8608e-6 and 2.9019e-6 < gap_hi < 2.9043e-6
    inside_gap = np.linspace(gap_lo, gap_hi, 7)[1:-1]
    assert np.all(law.pdf(inside_gap) == 0.0)
    beside = np.array([gap_lo * (1 - 1e-3), gap_hi * (1 + 1e-3)])
    assert np.all(law.pdf(beside) > 1.0)
    # moments 1-3 of the density against the exact ones (measured 1.5e-15)
    from scipy.integrate import quad

    for k in (1, 2, 3):
        m = sum(quad(lambda x: x ** k * law.pdf(np.array([x]))[0], lo, hi, epsabs=0,
                     epsrel=QUAD_EPSREL, limit=400)[0] for lo, hi in bands)
        assert m == pytest.approx(law.moment(k), rel=MOMENT_RTOL)


def test_density_batch_keeps_the_system_beside_a_failing_point(monkeypatch):
    # where the system misses its tolerance at one point of a density batch, only the
    # points from it to the nearest band edge go to the level form; the rest are solved
    # again (DENSITY_RETRIES; seed 16 / draw 14 of depth 2 had sent a 432-point batch to
    # the level for one point 3.5e-9 below an edge).  Both forms agree (FORMS_RTOL).
    law = freeattn.sample_covariance(
        freeattn.free_multiplicative(freeattn.attention_law(0.5, 0.5).squared(),
                                     freeattn.attention_law(0.3, 0.7).squared()), 0.5)
    (lo, hi), = law.intervals()
    x = np.linspace(lo, hi, 41)[1:-1]
    plain = law._density(x)
    fail_at = x[-3]                 # the third point from the upper edge
    solve = type(law)._solve
    calls = []

    def failing(self, z):
        # the batch's solves fail at fail_at (the level form's own questions to the
        # system, at its subordination points, are answered)
        if z.size < 4:
            return solve(self, z)
        calls.append(z.size)
        if np.any(z.real == fail_at):
            raise freeattn.ConvergenceError("injected", point=complex(fail_at))
        return solve(self, z)
    monkeypatch.setattr(type(law), "_solve", failing)
    form = law._two_law_form()
    asked = []
    form_density = type(form)._density
    monkeypatch.setattr(type(form), "_density",
                        lambda self, xs: asked.append(xs.copy()) or form_density(self, xs))
    calls.clear()                   # (the level form's own build asked the system)
    got = law._density(x)
    assert calls[:2] == [x.size, x.size - 3]
    assert len(asked) == 1 and np.array_equal(asked[0], x[-3:])
    np.testing.assert_allclose(got, plain, rtol=FORMS_RTOL)


#: A real point asked again, served from the table of eq. (14.16) that it joined when it
#: was continued: Newton from its own unknowns to the chain's final tolerance
#: (CHAIN_FINAL_RTOL = 1e-14), a few ulps; measured equal in the real parts.
TABLE_AGAIN_RTOL = 1e-13


def test_a_real_point_continued_once_is_kept_section_14_46(monkeypatch):
    # a real point beyond an edge of a product where no table start is accepted is
    # continued once; asked again, alone or in another batch, it gets the same unknowns
    # without a continuation (now from the table of eq. (14.16), which the continued
    # point joined; its real unknowns, the continuation's imaginary parts of 6.8e-19
    # relative dropped)
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.point_masses([4.586, 2.486, 4.346],
                                                           [0.341, 0.098, 0.561]),
                                     freeattn.attention_law(0.10008, 0.15406).squared()),
        freeattn.point_masses([2.486, 2.257, 2.234, 3.014], [0.035, 0.331, 0.251, 0.383]))
    assert isinstance(law, ProductChainLaw)
    (_, hi), *_ = law.intervals()
    # beyond the reach of the fold's model (eq. (14.54)) and nearer the edge than the
    # gap table's cell
    x = np.array([hi * (1 + 1.2e-2)])
    om = law._solve(x.astype(complex))
    assert np.all(np.isfinite(om)) and np.all(np.abs(om.imag) <= 1e-12 * np.abs(om))
    assert float(x[0]) in law._axis_memo             # it was continued
    continued = record_calls(monkeypatch, law, "_continue")
    again = law._solve(np.array([hi * 0.5 + 0j, x[0] + 0j]))
    alone = law._solve(x.astype(complex))
    assert not any(np.any(xs == x[0]) for xs in continued)
    np.testing.assert_allclose(again[:, 1], om[:, 0], rtol=TABLE_AGAIN_RTOL)
    np.testing.assert_allclose(alone, om, rtol=TABLE_AGAIN_RTOL)


def _atoms_attention_atoms():
    # seed 0 / draw 20 of the depth-3 campaign: (atoms ⊠ attention) ⊠ atoms
    return freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.point_masses([4.586, 2.486, 4.346],
                                                           [0.341, 0.098, 0.561]),
                                     freeattn.attention_law(0.10008, 0.15406).squared()),
        freeattn.point_masses([2.486, 2.257, 2.234, 3.014], [0.035, 0.331, 0.251, 0.383]))


#: Real points at relative distance d beside a soft edge from its fold's model (eq.
#: (14.54)) against the continuation (eq. (14.3)): both carry the fold's conditioning,
#: eps/sqrt(d), so G within FOLD_ULPS * eps/sqrt(d) (measured at most 0.6 eps/sqrt(d),
#: 4.1e-11 at d = 1e-11 and 3.6e-15 at d = 5e-3).
FOLD_ULPS = 8


def test_real_points_beside_a_soft_edge_start_from_its_fold_eq_14_54():
    law = _atoms_attention_atoms()
    ivs = law.intervals()
    folds = law._folds[0]
    assert folds.size == 3                       # the three soft edges (0 is hard)
    d = np.array([1e-11, 1e-9, 1e-7, 1e-5, 1e-3, 5e-3])
    eps = np.finfo(float).eps
    for xe in folds:
        for side in (1.0, -1.0):
            x = xe * (1 + side * d)
            if any(np.any((x > lo) & (x < hi)) for lo, hi in ivs):
                continue                          # the band's side
            om, acc = law._from_fold(x)
            assert acc.all()
            ref = law._continue(x, np.zeros(x.size), check=False)
            g, gr = law._g_from(om, x + 0j), law._g_from(ref, x + 0j)
            assert np.all(np.abs(g - gr) <= FOLD_ULPS * eps / np.sqrt(d) * np.abs(gr))
            # outside the support G is real and decreasing there
            _, dg = law._pair_from(om, x + 0j)
            assert np.all(np.abs(om.imag) == 0) and np.all(dg.real < 0)


def test_the_mirror_root_through_a_fold_is_refused_eq_14_54():
    # the fold's other real root (the mirror branch) has G' > 0: not the solution
    law = _atoms_attention_atoms()
    law.intervals()
    xe, ome, x2, ratios = (a[..., 0] for a in law._folds)
    x = np.array([xe * (1 + 1e-6)])
    du = np.sqrt(2.0 * (x - xe) / x2)
    t = 1.0 / x.astype(complex)
    roots = []
    for sign in (1.0, -1.0):
        new, conv = law._newton((ome + ratios * sign * du[0])[:, None] + 0j, t,
                                CHAIN_FINAL_STEPS, CHAIN_FINAL_RTOL)
        assert conv.all()
        roots.append((law._pair_from(new, x + 0j)[1].real[0], new))
    slopes = sorted(r[0] for r in roots)
    assert slopes[0] < 0 < slopes[1]
    om, acc = law._from_fold(x)
    chosen = [r[1] for r in roots if r[0] < 0][0]
    assert acc.all()
    # the same Newton from the same start: the same root, kept real
    np.testing.assert_array_equal(om, chosen.real + 0j)


#: ``Im G(x + iy)/y`` at two heights: outside the support it is ``-∫ dμ/(x - s)²`` up to
#: O(y²) (measured ratios 1.0000 - 1.0012 at y = 1e-7 x and 1e-9 x in the gap); inside a
#: band it grows like 1/y (measured ratio 100 at 1e-4 of the edges).
OUTSIDE_RATIO_RTOL = 1e-2
INSIDE_RATIO_MIN = 50.0


@pytest.mark.slow
def test_a_fold_across_a_one_point_gap_is_the_other_bands_edge_eq_14_22():
    # depth-3 campaign, seed 15 / draw 5: (3.91 MP ⊠ atoms ⊠ atoms) ⊠ (MP ⊠ attention ⊠
    # attention). A gap [5.76e-14, 5.91e-14] held one grid point; the fold continued from
    # it for the upper band's lower edge was the lower band's upper edge (within 1.5
    # cells), so the bands touched at one float and the law raised on its mass check
    # (3.7e-10) after 8.8 s. The fold must lie towards the band from the outer point.
    mul = freeattn.free_multiplicative
    a = mul(mul(freeattn.point_masses([3.91], [1.0]), freeattn.marchenko_pastur(1.6618, 2.6195)),
            mul(freeattn.point_masses([4.301, 2.183, 4.382], [0.714, 0.238, 0.048]),
                freeattn.point_masses([4.99, 2.396, 1.163], [0.051, 0.907, 0.042])))
    b = mul(mul(freeattn.marchenko_pastur(1.1974, 2.9942),
                freeattn.attention_law(0.0054697, 0.65656).squared()),
            freeattn.attention_law(0.0051082, 0.33246).squared())
    law = mul(a, b)
    (_, gap_lo), (gap_hi, _) = law.intervals()
    assert gap_hi > gap_lo * (1 + 1e-2)            # measured 2.71 % wide

    def ratio(x):
        g = [law.stieltjes(x + 1j * y * x).imag / (y * x) for y in (1e-7, 1e-9)]
        return g[1] / g[0]

    for x in (gap_lo * (1 + 1e-4), np.sqrt(gap_lo * gap_hi), gap_hi * (1 - 1e-4)):
        assert ratio(x) == pytest.approx(1.0, rel=OUTSIDE_RATIO_RTOL)
    for x in (gap_lo * (1 - 1e-4), gap_hi * (1 + 1e-4)):
        assert ratio(x) > INSIDE_RATIO_MIN
    assert law.accuracy().mass_error <= MASS_ATOL


@pytest.mark.slow
def test_an_edge_is_narrowed_by_points_the_continuation_brought_to_the_axis_eq_14_9():
    # depth-4 campaign, seed 29 / draw 23: sample_covariance(atoms ⊠ atoms, 0.25659), a
    # system of eq. (14.8). The cell [2.8543, 2.8651] of its second band's lower edge has
    # no fold from its outer point, so it is narrowed (eq. (14.9)); G has a zero 1e-5
    # below the edge, where the unknowns diverge and the continuation's levels stall at
    # y ~ 1e-5: those points kept their last level's Im G and counted as inside, the
    # edge came out at 2.8581698 (3.4e-5 low) and the density raised after 2.5 s on a
    # real root inside that band. Only points brought to the axis now decide a cell.
    law = freeattn.sample_covariance(
        freeattn.free_multiplicative(
            freeattn.point_masses([1.313, 3.729, 0.404], [0.303, 0.28, 0.417]),
            freeattn.point_masses([4.554, 4.171], [0.251, 0.749])), 0.25659)
    assert isinstance(law, ProductChainLaw)
    ivs = law.intervals()
    assert len(ivs) == 3
    edge = ivs[1][0]

    def ratio(x):
        g = [law.stieltjes(x + 1j * y * x).imag / (y * x) for y in (1e-7, 1e-9)]
        return g[1] / g[0]

    # outside: Im G(x + iy)/y constant in y (measured within 1.3e-3 at 1e-6 of the edge);
    # inside: growing like 1/y (measured 99.9)
    for d in (1e-5, 1e-6):
        assert ratio(edge * (1 - d)) == pytest.approx(1.0, rel=OUTSIDE_RATIO_RTOL)
        assert ratio(edge * (1 + d)) > INSIDE_RATIO_MIN
    assert law.accuracy().mass_error <= MASS_ATOL


#: A root from the start of eq. (14.44) against the continuation's root at the same
#: point (measured 3.4e-16 - 7.1e-16 of the unknowns).
NEAR_AXIS_ROOT_RTOL = 1e-12


def test_a_point_a_little_higher_over_a_gap_starts_from_its_real_part_eq_14_44(monkeypatch):
    # depth-3 campaign, seed 18 / draw 1: a sum asked this product at z = x + iy left of
    # its support, y about 1.1e-3 |x|, again and again; no neighbour's root certifies
    # itself there (the unknowns are real to within y |omega'|), so every call went
    # through the continuation (30 ms). Up to CHAIN_NEAR_AXIS_WIDE |x| above the axis
    # the start from omega(x) is tried under the test of eq. (14.44), the first step
    # allowed up to CHAIN_NEAR_AXIS_WIDE_STEP of the unknowns.
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(
            freeattn.attention_law(0.046367, 0.17571).squared(),
            freeattn.point_masses([3.734, 4.555, 4.465, 4.752], [0.013, 0.34, 0.404, 0.243])),
        freeattn.marchenko_pastur(0.68941, 1.9159))
    assert isinstance(law, ProductChainLaw)
    law.intervals()
    z = np.array([-1.79875158e-09 + 1.91348136e-12j, -1.671e-09 + 2.2e-12j,
                  -9.868e-10 + 1.2e-12j])
    assert np.all(z.imag > _chain.CHAIN_NEAR_AXIS_RTOL * np.abs(z.real))
    continued = record_calls(monkeypatch, law, "_continue")
    om = law._solve(z)
    # (the negative axis's table of section 14.35 is continued once, when first asked)
    assert not any(np.isin(z.real, xs).any() for xs in continued)
    ref = law._continue(z.real, z.imag, check=False)
    assert np.all(np.abs(om - ref) <= NEAR_AXIS_ROOT_RTOL * np.abs(ref))
    # without the wider start the same points are continued
    monkeypatch.setattr(_chain, "CHAIN_NEAR_AXIS_WIDE", _chain.CHAIN_NEAR_AXIS_RTOL)
    law._last = WarmTable(_chain.CHAIN_WARM_TABLE)
    law._solve(z)
    assert np.isin(z.real, continued[-1]).all()


#: A product's edges with a factor's S-level row against every row in its subordination
#: point (two formulations of eq. (14.8); measured 4e-14 at the lower edge).
ROWS_EDGE_RTOL = 1e-12


@pytest.mark.slow
def test_a_factor_with_an_atom_at_zero_is_not_an_explicit_row_eq_14_60(monkeypatch):
    # the depth-4 campaign's seed 15 / draw 8: the row of eq. (14.21) of a sample
    # covariance with an atom at 0 evaluated its S-transform's denominator next to its
    # root, with kappa = 3e5 of eq. (14.60); the continuation stalled within 1e-7 of the
    # lower edge and the law raised. Such a factor enters as its factors (eq. (14.49))
    def build():
        mul, cov, pm = (freeattn.free_multiplicative, freeattn.sample_covariance,
                        freeattn.point_masses)
        mp = freeattn.marchenko_pastur
        return mul(cov(mul(mul(mp(0.92865, 1.9005), mp(1.8778, 1.9144)),
                           mul(pm([3.369, 4.419], [0.552, 0.448]), mp(1.0074, 2.9818))),
                       3.0795),
                   mul(cov(mul(pm([4.061], [1.0]), pm([4.792, 4.531, 3.49, 1.05],
                                                      [0.17, 0.288, 0.022, 0.52])), 0.97455),
                       pm([0.977, 2.953, 0.655], [0.249, 0.686, 0.065])))

    law = build()
    assert isinstance(law, ProductChainLaw)
    for row, f in zip(law._rows, law.factors):
        assert not (isinstance(row, _chain._LevelRow) and _chain._has_atom_at_zero(f))
    (lo, hi), = law.intervals()
    assert law.accuracy().mass_error <= MASS_ATOL
    # every row in its subordination point: the same edges
    monkeypatch.setattr(_chain._LevelRow, "of", classmethod(lambda cls, f: _chain._OmegaRow(f)))
    other = build()
    assert all(isinstance(r, _chain._OmegaRow) for r in other._rows)
    np.testing.assert_allclose(other.intervals(), [(lo, hi)], rtol=ROWS_EDGE_RTOL, atol=0)
