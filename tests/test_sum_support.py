"""Supports of ⊞ of any two laws on the branches of F (theory section 14.29), the
sizes of a product's unknowns (section 14.30), a product's lowest bands (section
14.32), and the laws of the mixed random campaign of benchmarks/RESULTS.md sections
27 and 28 that raised before them.

Closed forms: the semicircle's ``F(u) = (u + sqrt(u**2 - 4))/2`` (so ``F^{-1}(f) =
f + 1/f``) and the free sum of two arcsine laws on [-1, 1] (the Kesten-McKay law
of four free symmetries over 2, on [-sqrt 3, sqrt 3]).  Where no closed form
exists the independent check is a second formulation (the mirrored subordination
unknown of theory eq. (14.29), or ``pdf_mp``: the same level solved by
``mpmath.findroot`` at 30 digits) or the continued density off the axis.
"""

import numpy as np
import pytest

import freeattn
from freeattn import ConvergenceError
from freeattn.algebra._chebyshev import NARROW_BAND_GAIN, build_representation
from freeattn.compose import _discrete_sum_support
from freeattn.compose._analytic import AnalyticLaw, _cauchy_pair, may_reach_zero
from freeattn.compose._chain import ProductChainLaw
from freeattn.compose._discrete_sum_support import S_MARGIN, curve_bands
from freeattn.compose._sum_support import LawBranches, law_sum_edges
from freeattn.core._options import DEFAULT_OPTIONS
from freeattn.laws._law_base import Interval
from conftest import record_calls
from user_laws import UserArcsine

EPS = np.finfo(float).eps

#: The sum of an attention law at small beta and two atoms (campaign rng 1, draw 18).
ATOMS_18 = ([1.359, -0.81], [0.628, 0.372])
ATTENTION_18 = (0.0024246, 0.25497)


def test_branches_of_the_semicircle_and_their_inverse_eq_14_37():
    # semicircle(1) on [-2, 2]: two branches, (-oo, -2) with F in (-oo, -1) and
    # (2, oo) with F in (1, oo); F^{-1}(f) = f + 1/f (closed form), to 4 ulps
    br = LawBranches(freeattn.semicircle(1.0), _cauchy_pair)
    assert [b[2:] for b in br.branches] == [("inf", "edge"), ("edge", "inf")]
    assert br.branches[0][1] == -2.0 and br.branches[1][0] == 2.0
    lo, hi = br.sampled_values(1)[[0, -1]]
    # the sample nearest the edge is at 1e-11 of it: F there is 1 + O(sqrt(1e-11))
    assert 1.0 < lo < 1.0 + 1e-5 and hi > 1e4
    f = np.array([1.001, 1.5, 3.0, 1e3, 1e6])
    u = br.inverse(f, np.ones(f.size, dtype=int))
    np.testing.assert_allclose(u, f + 1.0 / f, rtol=4 * EPS)
    # forward: F' ~ 1/sqrt(u - 2) amplifies the rounding of u next to the edge
    # (measured 1.3e-13 at u - 2 = 1e-6)
    np.testing.assert_allclose(br.forward(u), f, rtol=1e-12)


def test_a_value_within_ulps_of_a_sample_is_that_samples_point(monkeypatch):
    # the semicircle's branch (2, oo): a value one ulp off a sampled value is inverted to
    # that sample's point without a solve (SAMPLE_ULPS), which is the closed-form inverse
    # f + 1/f to the sample's own rounding (8 ulps)
    from freeattn.compose._sum_support import SAMPLE_ULPS

    br = LawBranches(freeattn.semicircle(1.0), _cauchy_pair)
    f_s, u_s = br.sampled_values(1), br.sampled_points(1)
    f = np.array([f_s[3] * (1.0 + EPS), f_s[7] * (1.0 - 2 * EPS)])
    calls = record_calls(monkeypatch, br, "values")
    u = br.inverse(f, np.ones(2, dtype=int))
    assert not calls
    np.testing.assert_array_equal(u, u_s[[3, 7]])
    np.testing.assert_allclose(u, f + 1.0 / f, rtol=8 * EPS)
    # farther than SAMPLE_ULPS: solved (Newton from the sample, theory section 14.51),
    # to the closed form; 1e-10 from the edge F' ~ 1e5 maps the 16 ulps of f to less
    # than an ulp of u, so the answer may be the sample's point itself
    g = np.array([f_s[3] * (1.0 + 4 * SAMPLE_ULPS * EPS)])
    v = br.inverse(g, np.ones(1, dtype=int))
    assert calls
    np.testing.assert_allclose(v, g + 1.0 / g, rtol=4 * EPS)
    # and a value farther still moves off the sample, to the closed form
    h = np.array([f_s[3] * (1.0 + 1e-6)])
    assert br.inverse(h, np.ones(1, dtype=int))[0] != u_s[3]
    np.testing.assert_allclose(br.inverse(h, np.ones(1, dtype=int)), h + 1.0 / h, rtol=4 * EPS)


def test_branches_of_a_discrete_law_are_cut_at_the_zeros_of_g_eq_14_37():
    # three atoms: G has one zero between consecutive atoms (section 14.19), so four
    # pieces... three branches, each holding one atom, F = 0 there; the zeros agree
    # with the discrete branches' to 1e-15 relative (both bracketed Newton on G)
    law = freeattn.point_masses([-1.0, 0.5, 2.0], [0.2, 0.5, 0.3])
    br = LawBranches(law, _cauchy_pair)
    ref = _discrete_sum_support._Branches(law.values, law.weights)
    assert br.count == 3
    zeros = [b[1] for b in br.branches[:-1]]
    np.testing.assert_allclose(zeros, ref.poles, rtol=1e-15)
    for k, atom in enumerate([-1.0, 0.5, 2.0]):
        assert br.inverse(np.array([0.0]), np.array([k]))[0] == atom


def test_two_arcsine_laws_by_the_curves_eq_14_38():
    # UserArcsine(-1, 1) ⊞ itself is supported on [-sqrt 3, sqrt 3] (closed form); a law
    # known by its transform alone takes its bands from the curves (section 14.29), whose
    # ends are the two edges' limits of eq. (14.38)
    a = UserArcsine(-1.0, 1.0)
    edges = law_sum_edges(LawBranches(a, _cauchy_pair), LawBranches(a, _cauchy_pair))
    assert len(edges) == 1 and not edges[0][2] and not edges[0][3]
    np.testing.assert_allclose(edges[0][:2], [-np.sqrt(3.0), np.sqrt(3.0)], rtol=4 * EPS)


def test_narrow_bands_next_to_atoms_are_found_eq_14_38():
    # The attention law at beta = 0.0024, gamma = 0.255 has mass 1 - gamma in a band
    # [0, 5.1e-11] beside its bulk [3.0e-6, 7.2e-5]; with the atoms -0.81 and 1.359 the
    # sum has a band of width ~5e-5 next to each atom and, where the atom's mass and
    # 1 - gamma add to more than 1, a band of width 2e-11 and 3.6e-11 at it.  The grid
    # over [-0.81, 1.36] found none of them ("no point of the support").
    law = freeattn.free_additive(freeattn.point_masses(*ATOMS_18),
                                 freeattn.attention_law(*ATTENTION_18).squared())
    ivs = np.array(law.intervals())
    assert ivs.shape == (4, 2)
    widths = ivs[:, 1] - ivs[:, 0]
    assert np.all(widths[[0, 2]] < 1e-10) and np.all(widths[[1, 3]] > 1e-5)
    # the continued density (eq. (14.3) at x + 1e-12 i, independent of the support)
    # is positive in the middle of each band and below 1e-3 of it in each gap
    mids = ivs.mean(axis=1)
    gaps = 0.5 * (ivs[:-1, 1] + ivs[1:, 0])
    dens = -np.imag([law.stieltjes(x + 1e-14j) for x in np.r_[mids, gaps]]) / np.pi
    assert np.all(dens[:4] > 1e2) and np.all(dens[4:] < 1e-3 * dens[:4].min())


def test_a_band_narrower_than_the_rounding_raises_at_once_eq_8_30():
    # eq. (8.30): the two bands of width ~2e-11 at |x| ~ 1 keep eps |x| / W ~ 1e-5 of relative
    # noise: more than the largest rounding floor of a fit (1e-6), so the density raises
    # naming the band (it had split into more than 1024 panels for 56 s)
    law = freeattn.free_additive(freeattn.point_masses(*ATOMS_18),
                                 freeattn.attention_law(*ATTENTION_18).squared())
    with pytest.raises(ConvergenceError, match=r"narrower than the solver resolves.*8\.30"):
        law.pdf(0.0)


#: Band masses against the rank count (closed form): measured 5.6e-17 - 1.1e-16; the
#: law's mass error 2.2e-16.
RANK_COUNT_ATOL = 1e-12


def test_a_real_root_inside_a_band_below_the_supports_rounding_names_eq_8_30():
    # depth-3 campaign, seed 39 / draw 30: MP(1.8628, 1.4232) ⊞ (a sample covariance of
    # an attention law at beta = 0.0034), an R-level over a tower. Its band
    # [1.08e-11, 1.35e-10] at MP's atom at 0 is 1.24e-10 wide on a support reaching 8.96:
    # eps * 8.96 / 1.24e-10 = 1.6e-5 > 1e-6 (eq. (8.30)); the tower's roots there are real
    # to rounding and its own density raises on a real root inside the band, naming that
    # cause. The analytic subordination of the two laws, which solves such a band at its
    # own scale (eq. (14.48)), gives the batch instead (theory section 14.60): the law
    # builds, its three bands with the masses of the rank count (MP's atom 1 - 1/ratio
    # over the attention law's band at 0 of mass 1 - gamma, then gamma, then the rest)
    # to 1e-12 (measured 5.6e-17 - 1.1e-16)
    ratio, gamma = 1.4232, 0.13403
    law = freeattn.free_additive(
        freeattn.marchenko_pastur(1.8628, ratio),
        freeattn.sample_covariance(freeattn.attention_law(0.0033944, gamma).squared(),
                                   0.86789))
    ivs = law.intervals()
    lo, hi = ivs[0]
    assert EPS * law.support()[1] / (hi - lo) > 1e-6
    with pytest.raises(ConvergenceError, match=r"another sheet.*1\.6e-05.*8\.30"):
        law._level_density(np.linspace(lo, hi, 9)[1:-1])
    mass = [law.cdf(b) - law.cdf(a) for a, b in ivs]
    low = 1 - 1 / ratio - gamma
    np.testing.assert_allclose(mass, [low, gamma, 1 - low - gamma], rtol=0,
                               atol=RANK_COUNT_ATOL)
    assert law.accuracy().mass_error <= RANK_COUNT_ATOL


def test_the_band_allowance_of_a_density_known_to_an_absolute_rounding_eq_8_30():
    # a uniform density on a band of width 1e-4 at x = 1, computed to eps of x: the
    # mass check allows NARROW_BAND_GAIN eps * 1 / W of each panel's mass (two
    # panels of half the band: 7.1e-11 in all); with the band 1e-12 wide the noise
    # eps/1e-12 = 2.2e-4 exceeds 1e-6 and it raises
    width = 1e-4
    rep = build_representation(lambda x: np.full(x.shape, 1.0 / width),
                               [Interval(1.0, 1.0 + width)], DEFAULT_OPTIONS,
                               expected_mass=1.0, zero_scale=1.0)
    expected = sum(p.mass * NARROW_BAND_GAIN * EPS / (p.hi - p.lo) for p in rep.panels)
    assert len(rep.panels) == 2                    # split at the middle (eq. (8.14))
    assert rep.edge_allowance == pytest.approx(expected, rel=1e-12, abs=0.0)
    assert rep.edge_allowance == pytest.approx(2 * NARROW_BAND_GAIN * EPS / width, rel=1e-6, abs=0.0)
    assert abs(rep.total - 1.0) <= 1e-12
    with pytest.raises(ConvergenceError, match="narrower than the solver resolves"):
        build_representation(lambda x: np.full(x.shape, 1e12), [Interval(1.0, 1.0 + 1e-12)],
                             DEFAULT_OPTIONS, expected_mass=1.0, zero_scale=1.0)


def test_the_upper_edge_of_an_attention_law_plus_atoms_eq_14_38():
    # campaign rng 0, draw 15 of section 26: raised from the bordered Newton of eq.
    # (14.5); the curves give the support (-2.5540, 125.66293): the continued density
    # (x + 1e-9 i) is 6.1e-6 at 1e-3 inside the upper edge (a gap that ends on a curve
    # whose other end is an edge, eq. (14.38)) and at most 1e-10 at 1e-3
    # beyond it, and the law builds (mass 1 to 1e-12)
    a = freeattn.attention_law(1.8137, 0.12051).squared()
    b = freeattn.point_masses([-2.904, -2.830, 0.686, 1.315], [0.484, 0.174, 0.298, 0.044])
    law = freeattn.free_additive(a, b)
    (lo, hi), = law.intervals()
    assert hi == pytest.approx(125.66293, abs=1e-5)
    inside = -law.stieltjes(hi - 1e-3 + 1e-9j).imag / np.pi
    outside = -law.stieltjes(hi + 1e-3 + 1e-9j).imag / np.pi
    assert inside > 1e-6 and outside < 1e-10
    assert law.accuracy().mass_error <= 1e-12


def test_two_attention_laws_whose_fold_raised_eq_14_38():
    # campaign rng 2, draws 7 and 26: bordered Newton from the grid did not reach the
    # fold; both build from the curves (one band; two bands from the first law's split
    # support), mass 1 to 1e-12
    for (b1, g1), (b2, g2), bands in (((2.3704, 0.10666), (0.58405, 2.8554), 1),
                                      ((0.026747, 0.2468), (0.0043167, 1.6129), 2)):
        law = freeattn.free_additive(freeattn.attention_law(b1, g1).squared(),
                                     freeattn.attention_law(b2, g2).squared())
        assert len(law.intervals()) == bands
        assert law.accuracy().mass_error <= 1e-12


def test_flat_runs_are_not_refined_and_hidden_humps_are_eq_14_39(monkeypatch):
    # the rule of eq. (14.39): eq. (14.20) at -1 to rounding along a whole curve: every
    # other sample is a sampled
    # maximum, none of which a parabola could lift to 0 (no refinement, no gap); a hump
    # of height 0.2 between samples 0.05 apart (sampled at -0.78 and -1) is refined and
    # its gap found, x = v here
    f = np.linspace(-1.0, 1.0, 41)[None, :]
    calls = []

    def flat(v, rows):
        calls.append(v.size)
        return -1.0 + 1e-16 * np.cos(1e3 * v), v

    with pytest.raises(ConvergenceError, match="outer gaps"):
        curve_bands(f, flat, lambda r, side: side * np.inf, np.full(1, np.nan), 1e-3, 1.0,
                    "the test criterion", peak_reach=4.0)
    assert calls == [f.size]

    def hump(v, rows):
        return -1.0 + 1.2 * np.exp(-((v - 0.013) / 0.01) ** 2), v

    # limits: the curve ends inside bands on both sides (no outer gap: raises), but
    # the gap of the hump is refined and bracketed first
    found = {}
    orig = _discrete_sum_support._curve_gaps

    def spy(limit, pos, cols, zx, pole):
        found["zx"] = np.array(zx)
        return orig(limit, pos, cols, zx, pole)

    monkeypatch.setattr(_discrete_sum_support, "_curve_gaps", spy)
    with pytest.raises(ConvergenceError, match="outer gaps"):
        curve_bands(f, hump, lambda r, side: side * np.inf, np.full(1, np.nan), 1e-3,
                    1.0, "the test criterion", peak_reach=4.0)
    # -1 + 1.2 exp(-d**2) = S_MARGIN at d = sqrt(log 1.2) (closed form), to 1e-9
    d = 0.01 * np.sqrt(np.log(1.2 / (1.0 + S_MARGIN)))
    np.testing.assert_allclose(np.sort(found["zx"]), [0.013 - d, 0.013 + d], atol=1e-9)


@pytest.mark.parametrize("atoms, beta, gamma", [
    (([0.756, 3.193, 3.928], [0.147, 0.83, 0.023]), 0.040742, 0.13326),
    (([4.293, 3.046, 1.448], [0.263, 0.507, 0.23]), 0.0032998, 4.3577),
])
def test_products_with_an_attention_law_at_small_beta(atoms, beta, gamma):
    # section 14.30: with the product's scale the interior points were taken as outside
    # and the bordered Newton of eq. (14.5) stepped x by 0.1 at an edge at 1.4e-5; both
    # build (mass 1 to 1e-12) and the density agrees with the mirrored formulation
    # (the other law's subordination point the unknown, eq. (14.29)) to 1e-9
    a = freeattn.point_masses(*atoms)
    b = freeattn.attention_law(beta, gamma).squared()
    law = freeattn.free_multiplicative(a, b)
    assert isinstance(law, AnalyticLaw)
    assert law.accuracy().mass_error <= 1e-12
    mirror = AnalyticLaw(b, a, True)
    x = np.concatenate([np.linspace(lo, hi, 7)[1:-1] for lo, hi in law.intervals()])
    np.testing.assert_allclose(law._density(x), mirror._density(x), rtol=1e-9)


def test_the_scale_of_a_products_unknown_is_that_of_its_first_factor():
    # section 14.30: the point 1.3617e-5 lies inside the support of {1.448, 3.046,
    # 4.293} ⊠ the attention law at beta = 0.0033 (support to 5.2e-5).  The old scale
    # of the atoms' unknown, 1/(1e-3 hi_a hi_b), made the inside test's threshold
    # 1e-7 (S + |w|) exceed |Im w| at the middle point; with S = 1/hi_a it is far below
    a = freeattn.point_masses([4.293, 3.046, 1.448], [0.263, 0.507, 0.23])
    b = freeattn.attention_law(0.0032998, 4.3577).squared()
    law = AnalyticLaw(a, b, True)
    pr = law._problem
    assert pr.scale == 1.0 / 4.293
    x = np.array([1.3e-5, 1.3616867891949144e-05, 1.4e-5])
    w = law._locate(x)
    old = 1.0 / (1e-3 * 4.293 * b.support()[1])
    assert np.all(np.abs(w.imag) > 1e-7 * (pr.scale + np.abs(w)))
    assert abs(w[1].imag) < 1e-7 * (old + abs(w[1]))      # 0.444 < 0.447: "outside"


def test_a_sample_covariance_next_to_its_constituents_hard_edge_eq_8_31():
    # the attention law at beta = 0.0017 has a band [0, 1.3e-11] with x**(-1/2) at 0;
    # its sample covariance of ratio 0.358 raised "no root on the Stieltjes branch" at
    # 1.8e-15.  The linear model of eq. (8.31) gives the density to 1e-13 of pdf_mp
    # (30 digits; measured 3.3e-16) from 3.5e-19 to 1e-7 of the extent; mass 1 to 1e-12
    b = freeattn.attention_law(0.0016952, 0.21499).squared()
    law = freeattn.sample_covariance(b, 0.35832)
    hi = law.interval_details()[0].hi
    x = hi * np.array([1e-12, 1e-6, 0.3])
    ref = np.array([float(law.pdf_mp(v, dps=30)) for v in x])
    np.testing.assert_allclose(law._density(x), ref, rtol=1e-13)
    assert law.accuracy().mass_error <= 1e-12


def test_roots_the_coefficients_place_too_far_are_selected_again_eq_8_10():
    # the sample covariance of the attention law at beta = 0.0028 (ratio 0.138): the
    # degree-7 tower's roots were 2.5e-3 off between 1.8e-4 and 1.8e-3 of the band
    # [0, 1.1e-10]'s width below its upper edge (density 1-14% low, mass 6.4e-7 short);
    # now within 1e-12 of pdf_mp (30 digits; measured 1e-15) and mass 1 to 1e-12
    b = freeattn.attention_law(0.0027962, 0.14032).squared()
    law = freeattn.sample_covariance(b, 0.13825)
    hi = law.interval_details()[0].hi
    x = hi * (1.0 - np.array([1.78e-3, 1e-3, 3.16e-4]))
    ref = np.array([float(law.pdf_mp(v, dps=30)) for v in x])
    np.testing.assert_allclose(law._density(x), ref, rtol=1e-12)
    assert law.accuracy().mass_error <= 1e-12


def test_a_causal_constituent_keeps_the_grid_and_the_curves_agree_with_it_eq_14_37():
    # the causal law's transform is solved point by point (section 14.29): its sums
    # keep the grid locator; the curves on its branches give the same edges (measured
    # 1.7e-16 relative for causal(0.55, 1.5) ⊞ {-1, 1}), to 1e-13
    law = freeattn.free_additive(freeattn.causal_law(0.55, 1.5),
                                 freeattn.point_masses([-1.0, 1.0], [0.5, 0.5]))
    assert law._curve_support() is None
    grid = np.array(law.intervals())
    curves = law_sum_edges(LawBranches(law.a, _cauchy_pair), LawBranches(law.b, _cauchy_pair))
    assert grid.shape == (2, 2)
    np.testing.assert_allclose(np.array([c[:2] for c in curves]), grid, rtol=1e-13)


def test_the_narrower_laws_point_is_the_unknown():
    # section 14.31: the attention laws at beta = 1.987 (support to 205.8) and 0.0158
    # (to 1.2e-3): the wide law's point stays within 3e-8 of the axis inside the
    # support, the grid had no warm start and the density took 5.8 s; in the other
    # orientation the grid seeds them and the law builds (mass 1 to 1e-12, mass
    # error of the old orientation 1.3e-10).  The density agrees between the two
    # orientations to 1e-9 inside the band.
    a = freeattn.attention_law(1.987, 0.56416).squared()
    b = freeattn.attention_law(0.015757, 4.4463).squared()
    law = freeattn.free_additive(a, b)
    assert law.a is b and law.b is a
    assert law.accuracy().mass_error <= 1e-12
    assert law._warm_x.size > 100
    other = AnalyticLaw(a, b, False)
    other._curve_support = law._curve_support
    x = np.linspace(1.0, 200.0, 7)
    np.testing.assert_allclose(law._density(x), other._density(x), rtol=1e-9)
    # the same in the scale-free width of a product: atoms near 3.4 and an attention
    # law reaching 0, whose grid took its hard edge for a gap
    p = freeattn.free_multiplicative(freeattn.attention_law(2.7277, 0.46028).squared(),
                                     freeattn.point_masses([3.305, 3.582], [0.822, 0.178]))
    assert isinstance(p.a, freeattn.point_masses([1.0]).__class__)
    assert p.intervals()[0][0] == 0.0 and p.accuracy().mass_error <= 1e-12


def test_an_edge_beside_a_constituents_edge_by_bisection():
    # section 14.31: the second band of {4.564, 4.94} ⊠ the attention law at beta = 0.119,
    # gamma = 0.264 starts where the law's point reaches its edge 0.006853; no fold for
    # the bordered Newton.  The bisection on the certified test puts the edge at
    # 0.0334192279069 (to 1e-10 of the full classification, theory 14.31); the continued
    # density (x + 1e-15 i) is below 1e-8 at 1e-9 below it and above 1e-5 at 1e-9 above
    law = freeattn.free_multiplicative(
        freeattn.attention_law(0.11908, 0.26403).squared(),
        freeattn.point_masses([4.564, 4.94], [0.164, 0.836]))
    ivs = law.intervals()
    assert len(ivs) == 2
    e = ivs[1][0]
    assert e == pytest.approx(0.0334192279098, rel=1e-10)
    below = -law.stieltjes(e * (1 - 1e-9) + 1e-15j).imag / np.pi
    above = -law.stieltjes(e * (1 + 1e-9) + 1e-15j).imag / np.pi
    assert below < 1e-8 and above > 1e-5
    assert law.accuracy().mass_error <= 1e-12


def test_far_from_the_support_f_is_its_boolean_series_eq_14_40():
    # eq. (14.40) for the semicircle: Boolean cumulants 1, 0, 1, 0, 2, 0, 5 (Catalan
    # numbers, closed form); beyond 4 radii F, 1/F' - 1 and u - F(u) follow the closed
    # form F(u) = (u + sqrt(u**2 - 4))/2 to 1e-13 (the closed form's own cancellation at
    # u = 1e3 is 2e-11 in 1/F' - 1, so that point is checked against the expansion
    # -(F' - 1)/F' = -1/u**2 - 2/u**4 - 5/u**6 + O(u**-8) of F' - 1 = 1/u**2 + 3/u**4
    # + 10/u**6 + ...)
    br = LawBranches(freeattn.semicircle(1.0), _cauchy_pair)
    np.testing.assert_allclose(br._boolean[:7], [1, 0, 1, 0, 2, 0, 5], atol=1e-13)
    u = np.array([8.5, 20.0, -9.0])
    root = np.sign(u) * np.sqrt(u * u - 4.0)
    f = (u + root) / 2.0
    d, e, r = br.parts(u, f)
    np.testing.assert_allclose(br.forward(u), f, rtol=1e-13)
    np.testing.assert_allclose(e, 1.0 / ((1.0 + u / root) / 2.0) - 1.0, rtol=1e-13)
    np.testing.assert_allclose(r, u - f, rtol=1e-13)
    e_far = br.parts(np.array([1e3]), np.array([1e3]))[1][0]
    assert e_far == pytest.approx(-1e-6 - 2e-12 - 5e-18, rel=1e-13, abs=0.0)


def test_a_support_search_that_raises_takes_the_mirrored_formulation():
    # section 14.31: where this formulation's support search raises (here forced), the
    # mirrored one (eq. (14.29)) gives the support and solves the density first:
    # {2.366, 3.487, 3.696} ⊠ the attention law at beta = 1.398 on [0, 173.540349248445],
    # the same as free_multiplicative's (to 1e-14), mass 1 to 1e-12
    a = freeattn.attention_law(1.3981, 0.1183).squared()
    b = freeattn.point_masses([2.366, 3.487, 3.696], [0.005, 0.491, 0.504])
    law = AnalyticLaw(a, b, True)

    def fail(grid):
        raise ConvergenceError("forced")

    law._own_support = fail
    (lo, hi), = law.intervals()
    assert law._formulations[0] is law._mirror()
    ref = freeattn.free_multiplicative(a, b)
    assert lo == 0.0 and hi == pytest.approx(ref.intervals()[0][1], rel=1e-14, abs=0.0)
    assert law.accuracy().mass_error <= 1e-12
    # both failing: one error naming both formulations
    both = AnalyticLaw(a, b, True)
    both._own_support = fail
    both._mirror()._own_support = fail
    with pytest.raises(ConvergenceError, match="forced and, in the mirrored formulation"):
        both.intervals()


def test_a_tower_whose_critical_points_are_lost_falls_back_to_subordination(monkeypatch):
    # theory section 14.31: the sample covariance (ratio 0.240) of the attention law at
    # beta = 0.0013 (bands [0, 6.1e-12] and [3.1e-6, 3.2e-5]).  On the machine of the
    # first measurement the degree-8 tower found no support interval (eq. (8.12)) and
    # the law fell back to analytic subordination (eq. (14.4)); on an AMD EPYC Zen 2
    # (OpenBLAS's Haswell, Sandybridge and Nehalem kernels alike) the tower keeps its
    # critical points: its roots depend on the CPU and LAPACK build.  Either
    # way the law has both bands, mass 1 to 1e-12, its edges agree with the analytic
    # subordination's to 1e-12 (measured 4e-16) and its density with the other
    # formulation's to 1e-12 (measured 1.4e-14)
    from freeattn.compose import _subordination as sub
    from freeattn.compose._analytic import analytic_multiplicative

    b = freeattn.attention_law(0.0013262, 0.13819).squared()
    mp = freeattn.marchenko_pastur(1.0, 0.24013)
    law = freeattn.sample_covariance(b, 0.24013)
    analytic = analytic_multiplicative(mp, b)
    tower = sub._collapsed_product(mp, b, mp._s_transform(), b._s_transform(), mp.options)
    assert len(law.intervals()) == 2 and law.accuracy().mass_error <= 1e-12
    np.testing.assert_allclose(law.intervals(), analytic.intervals(), rtol=1e-12, atol=0)
    x = np.r_[np.linspace(3.2e-6, 3.2e-5, 6), np.linspace(1e-13, 6e-12, 4)]
    np.testing.assert_allclose(tower._density(x), analytic._density(x), rtol=1e-12)
    np.testing.assert_allclose(law._density(x), analytic._density(x), rtol=1e-12)
    # the fallback itself: a tower whose support search raises as on that kernel
    original = sub.SubordinationLaw._support_intervals

    def lost(self):
        if self.constituent is b:
            raise ConvergenceError("found no support interval: the critical points of the "
                                   "tower were not resolved (eq. (8.12))")
        return original(self)
    b.intervals()
    monkeypatch.setattr(sub.SubordinationLaw, "_support_intervals", lost)
    fallback = freeattn.sample_covariance(b, 0.24013 * (1 + 1e-12))  # not the cached law
    assert isinstance(fallback, AnalyticLaw)
    assert len(fallback.intervals()) == 2 and fallback.accuracy().mass_error <= 1e-12


def test_a_product_grid_reaches_the_factors_lowest_bands_section_14_32():
    # theory section 14.32, eq. (14.41): the squared attention laws at beta = 0.0072 and 0.0096
    # (gamma 0.197, 0.478) each have a band [0, ~1e-8] of mass 1 - gamma; their product
    # has three bands, the lowest [0, 2.7e-17] at 5e-11 of the upper bound, below the
    # grid's old start (1e-9 of it): the build raised (mass 0.478).  The masses of the
    # bands are those of two free projections of traces gamma_a < gamma_b (closed form):
    # 1 - gamma_b, gamma_b - gamma_a, gamma_a, to 1e-10; the density agrees with the
    # analytic subordination of eq. (14.4) (another formulation) to 1e-12 (measured 3e-14)
    from freeattn.compose._analytic import analytic_multiplicative

    ga, gb = 0.19685, 0.47802
    a = freeattn.attention_law(0.0071597, ga).squared()
    b = freeattn.attention_law(0.0095735, gb).squared()
    # eq. (14.41): the upper ends of both factors' lowest bands [0, e] (exact products);
    # a factor whose lowest band starts above 0 (MP(1, 2.9) beside its atom) gives its
    # lower end
    from freeattn.compose._analytic import lowest_scale

    ea, eb = a.intervals()[0][1], b.intervals()[0][1]
    assert a.intervals()[0][0] == 0.0 and b.intervals()[0][0] == 0.0
    assert lowest_scale((a, b)) == ea * eb
    mp = freeattn.marchenko_pastur(1.8144, 2.8911)
    assert lowest_scale((mp, a)) == mp.intervals()[0][0] * ea
    law = freeattn.free_multiplicative(a, b)
    ivs = law.intervals()
    assert len(ivs) == 3 and ivs[0][0] == 0.0 and ivs[0][1] < 1e-16
    mass = [law.cdf(hi) - law.cdf(lo) for lo, hi in ivs]
    np.testing.assert_allclose(mass, [1 - gb, gb - ga, ga], rtol=1e-10)
    other = analytic_multiplicative(a, b)
    np.testing.assert_allclose(np.array(other.intervals()), np.array(ivs), rtol=1e-12)
    x = np.concatenate([lo + (hi - lo) * np.linspace(0.02, 0.98, 5) for lo, hi in ivs])
    np.testing.assert_allclose(law.pdf(x), other.pdf(x), rtol=1e-12)


def test_split_roots_beyond_an_edges_seeded_zone_take_the_rescues_seeds_eq_8_20():
    # theory section 8.4: MP(1.8144, 2.8911) ⊠ the attention law at beta = 0.0029893,
    # gamma = 0.17012 has a band [2.4544e-11, 4.15e-10]; between 1e-4 and 2.4e-4 of the
    # lower edge above it the tower's coefficients split the complex pair into two
    # real roots, which the re-polish kept: a density of 0 at half the points and a
    # representation that raised after 1024 panels.  Now no zero there, the density
    # within 1e-10 of pdf_mp (30 digits; measured 6.8e-12, the edge's conditioning
    # eps/1e-4) and mass 1 to 1e-12
    law = freeattn.free_multiplicative(freeattn.marchenko_pastur(1.8144, 2.8911),
                                       freeattn.attention_law(0.0029893, 0.17012).squared())
    xe = law.interval_details()[0].lo
    assert xe == pytest.approx(2.4544e-11, rel=1e-4)
    dense = xe * (1.0 + np.linspace(1e-4, 2.5e-4, 2000))
    assert np.all(law._density(dense) > 0.0)
    x = xe * (1.0 + np.array([1.05e-4, 1.3e-4, 2e-4]))
    ref = np.array([float(law.pdf_mp(v, dps=30)) for v in x])
    np.testing.assert_allclose(law._density(x), ref, rtol=1e-10)
    assert law.accuracy().mass_error <= 1e-12


def test_branches_through_an_atom_of_a_composed_law_eq_14_37():
    # MP(1.4808, 1.3506) ⊠ the squared attention law at beta = 1.0967 keeps MP's atom
    # at 0 (mass 1 - 1/1.3506, closed form); its branch of F runs through the atom, where
    # the tower's solver has no root (G has a pole): G there is infinite, not an error.
    # The sum with the attention law at beta = 0.0158 then has two bands (the curves of
    # eq. (14.20); the grid, spacing 0.023, missed the band [3.7e-5, 7.5e-4] and the
    # build raised on a mass of 0.74), the lower one of the atom's mass (to 1e-10), and
    # the density agrees with the other orientation of eq. (14.29) to 1e-10 (measured
    # 3.2e-12)
    a = freeattn.free_multiplicative(freeattn.marchenko_pastur(1.4808, 1.3506),
                                     freeattn.attention_law(1.0967, 1.8377).squared())
    br = LawBranches(a, _cauchy_pair)
    g, d = br.values(np.array([0.0, -1.0]))
    assert g[0] == np.inf and d[0] == -np.inf and np.isfinite(g[1])
    b = freeattn.attention_law(0.015778, 1.2228).squared()
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    assert len(ivs) == 2 and ivs[0][1] < 1e-3
    atom = 1.0 - 1.0 / 1.3506
    assert law.cdf(ivs[0][1]) - law.cdf(ivs[0][0]) == pytest.approx(atom, rel=1e-10)
    other = AnalyticLaw(law.b, law.a, False)
    other._curve_support = law._curve_support
    x = np.r_[np.linspace(*ivs[0], 7)[1:-1], np.linspace(*ivs[1], 7)[1:-1]]
    np.testing.assert_allclose(law.pdf(x), other.pdf(x), rtol=1e-10)
    assert law.accuracy().mass_error <= 1e-12


def test_the_hard_edge_model_left_of_0_reads_its_constituent_on_the_upper_side_eq_8_27():
    # theory section 8.4, eq. (8.27): the squared attention law at beta = 0.717 times
    # MP(0.587, 0.288) has a hard edge at 0; at real x < 0 the hard-edge model's seed
    # is a rounding below the axis and the constituent's solver, which takes Im z >= 0,
    # raised "no root on the Stieltjes branch" (so the curves of eq. (14.20) gave up and
    # the sum with the attention law at beta = 0.0164 missed a band: mass 0.646).  Read
    # by G(conj z) = conj G(z): G equals the Cauchy integral of the representation
    # (law.stieltjes at real points off the support) to 1e-12 (measured 2e-16), the sum
    # builds (mass 1 to 1e-12) and its density agrees with the other orientation of
    # eq. (14.29) to 1e-10 (measured 4.6e-15)
    b = freeattn.free_multiplicative(freeattn.attention_law(0.71677, 0.30503).squared(),
                                     freeattn.marchenko_pastur(0.58714, 0.28794))
    b.intervals()               # the hard-edge model serves once the extent is known
    u = np.array([-1.4122164389485323e-13, -1e-11, -1e-9])
    g, _ = b._stieltjes_pair(u + 0j)
    ref = np.array([b.stieltjes(v) for v in u])
    np.testing.assert_allclose(g.real, ref.real, rtol=1e-12)
    law = freeattn.free_additive(freeattn.attention_law(0.016418, 1.5236).squared(), b)
    (lo, hi), = law.intervals()
    assert law.accuracy().mass_error <= 1e-12
    other = AnalyticLaw(law.b, law.a, False)
    other._curve_support = law._curve_support
    x = np.linspace(lo, hi, 9)[1:-1]
    np.testing.assert_allclose(law.pdf(x), other.pdf(x), rtol=1e-10)


def test_g_next_to_an_atom_off_the_tower_comes_from_the_representation_eq_8_16():
    # MP(1.7448, 2.0072) ⊠ MP(1.7301, 1.3429) has an atom at 0 (mass 1 - 1/2.0072) and
    # its support from 0.08; at real u within 1e-12 of the atom its tower finds no root
    # on the branch, and G' was not available there (the curves of eq. (14.20) of its sum
    # with a sample covariance gave up; the grid missed the band [1.7e-6, 4.9e-5]).  G and
    # G' there come from the Cauchy integral of the representation (eq. (8.16)) plus the
    # atom: G u/m - 1 = R u/m with |R| below 0.5/0.08 (the continuous mass over the
    # distance to the support)
    a = freeattn.free_multiplicative(freeattn.marchenko_pastur(1.7448, 2.0072),
                                     freeattn.marchenko_pastur(1.7301, 1.3429))
    a.intervals()
    u = np.array([-1.0880912231758385e-16, -1e-12])
    with pytest.raises(ConvergenceError):
        a._solved_pair(u + 0j)
    g, d = a._stieltjes_pair(u + 0j)
    m = 1.0 - 1.0 / 2.0072
    assert np.all(np.abs(g.real * u / m - 1.0) <= (0.5 / 0.08) * np.abs(u) / m)
    assert np.all(np.abs(d.real * u * u / -m - 1.0) <= 1e-9)
    # the sum: an atom at 0 of mass p_a + p_b - 1 and two bands of masses 1 - p_b and
    # 1 - p_a (closed forms, p the atoms' masses), to 1e-9 (the lower band's edge sits
    # at 6e-8 of the law's extent, where its density keeps eps S/W, eq. (8.30))
    b = freeattn.sample_covariance(freeattn.attention_law(0.0022837, 5.0065).squared(),
                                   5.7143)
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    pb = 1.0 - 1.0 / 5.7143
    assert len(ivs) == 2
    np.testing.assert_allclose(law.atoms()[1], [m + pb - 1.0], rtol=1e-12)
    mass = [law.cdf(hi) - law.cdf(lo) for lo, hi in ivs]
    np.testing.assert_allclose(mass, [1.0 - pb, 1.0 - m], rtol=1e-9)


def test_a_sliver_image_at_an_atoms_pole_is_rounding_not_an_overlap_eq_14_20():
    # four atoms ⊞ the sample covariance (ratio 1.7564) of the attention law at
    # beta = 0.0025: a curve through the pole of the atom -2.207 has an image of width
    # 6e-16 (3 ulps) at the atom, inside the outer gap (-oo, -2.2069999185); it raised
    # "gap images overlap" (and the grid then found no point of the support, whose
    # bands are 5e-6 to 5e-5 wide).  The bands' masses are the atoms' masses, the one at
    # -0.973 less the sum's atom there, whose mass is 0.623 + p_b - 1 with p_b the
    # sample covariance's atom at 0, 1 - 1/1.7564 (closed forms), to 1e-9
    a = freeattn.point_masses([1.52, -0.973, -2.207, -0.68], [0.018, 0.623, 0.349, 0.01])
    b = freeattn.sample_covariance(freeattn.attention_law(0.0024928, 0.8548).squared(), 1.7564)
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    assert len(ivs) == 4
    pb = 1.0 - 1.0 / 1.7564
    loc, mass = law.atoms()
    np.testing.assert_allclose(loc, [-0.973])
    np.testing.assert_allclose(mass, [0.623 + pb - 1.0], rtol=1e-12)
    masses = [law.cdf(hi) - law.cdf(lo) for lo, hi in ivs]
    np.testing.assert_allclose(masses, [0.349, 0.623 - mass[0], 0.01, 0.018], rtol=1e-9)


def test_an_isolated_band_lighter_than_an_atom_keeps_the_plain_grid_eq_14_41():
    # theory section 14.32: the attention law at beta = 0.0235 (a band [0, 8.6e-8] of
    # mass 0.142) times a sample covariance with an atom at 0 (mass 1 - 1/2.2981) and its
    # bulk from 1.04: the atom absorbs the lighter band, so eq. (14.41) keeps the plain
    # grid; reaching 8.9e-17, the chain's unknowns there carried noise (imaginary parts
    # 1e-8 to 0.25 of their size) that made a hard edge at 0 ("reaches 0 although no
    # factor's does").  One band from 7.5858e-5 (its edge on the plain grid before eq.
    # (14.41), to 1e-4: no hard edge), of mass 1/2.2981, and the atom 1 - 1/2.2981
    # (closed forms), to 1e-12
    from freeattn.compose._analytic import lowest_scale

    a = freeattn.attention_law(0.023526, 0.85816).squared()
    b = freeattn.sample_covariance(
        freeattn.point_masses([3.836, 3.518, 4.582, 4.149], [0.226, 0.297, 0.068, 0.409]),
        2.2981)
    assert lowest_scale((a, b)) is None
    law = freeattn.free_multiplicative(a, b)
    (lo, hi), = law.intervals()
    assert lo == pytest.approx(7.5858e-5, rel=1e-4)
    np.testing.assert_allclose(law.atoms()[1], [1.0 - 1.0 / 2.2981], rtol=1e-12)
    assert law.cdf(hi) - law.cdf(lo) == pytest.approx(1.0 / 2.2981, rel=1e-12)


def test_real_points_of_a_nested_law_start_from_its_solved_ones_eq_14_11(monkeypatch):
    # theory section 14.29: the curves of a sum sample a nested law (here the squared
    # attention law at beta = 0.752 times four atoms) on hundreds of real points, one
    # call at a time; each was a continuation from far off the axis.  A real point now
    # starts Newton at y = 0 from the points solved before, kept where eq. (14.11)
    # (outside) or (14.7) (inside) certifies the root.  Same values as the continuation
    # of a fresh law to 1e-13 (measured 1e-15), with continuations only for the first
    # call's points
    def make():
        return freeattn.free_multiplicative(
            freeattn.attention_law(0.75204, 0.26267).squared(),
            freeattn.point_masses([2.427, 4.078, 4.05, 4.572], [0.16, 0.425, 0.23, 0.185]))

    x = np.array([-3.0, -0.5, 29.5, 31.0, 40.0, 2.14, 1.0, 10.0])
    fresh = np.array([make()._stieltjes_pair(np.array([v + 0j]))[0][0] for v in x])
    law = make()
    law.intervals()
    law._axis_x, law._axis_w = np.empty(0), np.empty(0, dtype=complex)
    calls = []
    original = AnalyticLaw._continue

    def counting(self, xs, ys, *args, **kwargs):
        calls.append(np.size(xs))
        return original(self, xs, ys, *args, **kwargs)

    monkeypatch.setattr(AnalyticLaw, "_continue", counting)
    law._stieltjes_pair(x[:2] + 0j)
    first = sum(calls)
    table = np.array([law._stieltjes_pair(np.array([v + 0j]))[0][0] for v in x[2:]])
    assert first == 2 and sum(calls) == first
    np.testing.assert_allclose(table, fresh[2:], rtol=1e-13)


def test_a_nested_sum_at_its_own_edge_takes_g_from_the_representation_eq_8_16():
    # the sum of the squared attention laws at beta = 0.279 and 0.0208 has an edge at
    # 0.0926912667783557; at 6 ulps inside it the continuation's Newton keeps half the
    # digits (estimated error 1.7e-11 against 1.3e-11 when found) and raised, so the
    # sum of that law with the atoms 0.519, 2.038, 1.359 raised too (it builds now, its
    # edges those of the grid path to 1e-15: benchmarks/RESULTS.md section 28).  Whether
    # the solve passes there depends on the last bits of the constituents' G' (it did
    # not with G' from the leaf's stages; it does with G' from the closed-form
    # polisher, eq. (8.10)), so the failure is made here: where the solve raises,
    # (G, G') come from the representation's Cauchy integral (eq. (8.16)), G equal to
    # the solve 1e-9 outside the edge to 1e-4 (G is continuous with a square-root edge:
    # measured 4e-7); an interior point keeps the solver's error
    inner = freeattn.free_additive(freeattn.attention_law(0.2794, 0.18086).squared(),
                                   freeattn.attention_law(0.020834, 0.69477).squared())
    e = inner.intervals()[1][0]
    z = np.array([0.09269126677835651 + 0j])
    assert 0 < z.real[0] - e < 1e-15
    near = inner._solved_pair(np.array([e * (1 - 1e-9) + 0j]))[0]
    g, d = inner._stieltjes_pair(z)
    assert np.isfinite(d).all() and abs(g[0] - near[0]) <= 1e-4 * abs(near[0])
    solved = inner._solved_pair

    def failing(zs):
        if np.any(np.abs(zs - z[0]) <= 1e-3 * e):
            raise ConvergenceError("made to fail at the edge")
        return solved(zs)
    inner._solved_pair = failing
    g, d = inner._stieltjes_pair(z)
    assert np.isfinite(d).all() and abs(g[0] - near[0]) <= 1e-4 * abs(near[0])
    with pytest.raises(ConvergenceError, match="made to fail"):
        inner._stieltjes_pair(np.array([z[0] * (1 + 1e-4)]))


def test_a_product_without_a_hard_edge_lifts_a_stalled_grid_section_14_32():
    # theory section 14.32: the attention law at beta = 0.0893 times a sample covariance
    # (ratio 5.15, atom at 0 of mass 1 - 1/5.1502) of the attention law at beta = 0.0038:
    # no factor gives the product a hard edge (eq. (14.6)), and the continuation next to 0
    # stalled at 2.3e-14 (a degenerate limit), which raised.  A grid starting 1e3 higher
    # locates one band from 4.06e-8 (the mirrored formulation of eq. (14.29) gives the
    # same edges to 5e-16, benchmarks/RESULTS.md section 28), of mass 1/5.1502 beside the
    # atom 1 - 1/5.1502 (closed forms), to 1e-12.  The sample covariance's S-level enters
    # the system of eq. (14.8) as its two factors (MP(1, 5.1502) and its population,
    # section 14.39); the lower edge is the two-law subordination's to 5e-15
    law = freeattn.free_multiplicative(
        freeattn.attention_law(0.08928, 0.70204).squared(),
        freeattn.sample_covariance(freeattn.attention_law(0.0038362, 6.7776).squared(), 5.1502))
    assert isinstance(law, ProductChainLaw) and len(law.factors) == 3
    assert not may_reach_zero(law.factors)
    (lo, hi), = law.intervals()
    assert lo == pytest.approx(4.0617486289245e-08, rel=1e-12)
    np.testing.assert_allclose(law.atoms()[1], [1.0 - 1.0 / 5.1502], rtol=1e-12)
    assert law.cdf(hi) - law.cdf(lo) == pytest.approx(1.0 / 5.1502, rel=1e-12)


@pytest.mark.slow
def test_a_band_below_the_grid_of_a_product_that_cannot_reach_0_section_14_32():
    # theory section 14.32: (attention at beta = 0.079 ⊠ MP(1.03, 2.93)) ⊠ (attention at
    # beta = 0.00136 ⊠ four atoms), a chain of four factors (the S-level attention ⊠ MP
    # enters as its two, eq. (14.49); three before, that level's tower solved at every
    # step: ~18 s, now ~2 s): MP's atom (mass
    # p = 1 - 1/2.925) is the smallest non-zero mass, so no hard edge (eq. (14.6)), yet the
    # first grid point lay inside a band with a soft lower edge at 1.1e-15 ("reaches 0
    # although no factor's does").  Nine decades deeper (the noise of the degenerate limit
    # below is not solid) it has two bands of masses q - p and gamma, with q = 1 - gamma
    # the attention law's isolated band at 0 (gamma = 0.15256; the dimension count of
    # free projections), to 1e-12 (measured 1e-15)
    law = freeattn.free_multiplicative(
        freeattn.free_multiplicative(freeattn.attention_law(0.079226, 0.63429).squared(),
                                     freeattn.marchenko_pastur(1.0265, 2.925)),
        freeattn.free_multiplicative(
            freeattn.attention_law(0.0013649, 0.15256).squared(),
            freeattn.point_masses([4.96, 3.687, 4.367, 0.438], [0.3, 0.147, 0.088, 0.465])))
    assert len(law.factors) == 4 and not may_reach_zero(law.factors)
    ivs = law.intervals()
    assert len(ivs) == 2 and ivs[0][0] > 0.0
    gamma, p = 0.15256, 1.0 - 1.0 / 2.925
    masses = [law.cdf(hi) - law.cdf(lo) for lo, hi in ivs]
    np.testing.assert_allclose(masses, [1.0 - gamma - p, gamma], rtol=1e-12)


def test_zeros_of_a_sums_g_are_a_constituents_zeros_shifted_by_the_partners_mean_eq_14_43():
    # theory eq. (14.43): a real zero of G of a ⊞ b lies at zeta + mean(b), zeta a zero of
    # G_a, with G' = G_a'(zeta) / (1 + var(b) G_a'(zeta)).  Three atoms ⊞ MP(0.01, 0.3)
    # (mean 0.01, variance 3e-5, closed forms) by analytic subordination: the law's own
    # solved G changes sign across each candidate within 1e-9 (|G| there 3e-9, its
    # rounding 1e-15), and a central difference of it (step 1e-7, truncation and
    # rounding ~1e-9 relative) gives the slope to 1e-8
    from freeattn.compose._analytic import analytic_additive
    from freeattn.compose._discrete_sum_support import _Branches
    from freeattn.compose._sum_support import _known_zeros

    pm = freeattn.point_masses([-1.299, -0.075, 2.349], [0.132, 0.43, 0.438])
    mp = freeattn.marchenko_pastur(0.01, 0.3)
    law = analytic_additive(pm, mp)
    law.intervals()
    at, slope = _known_zeros(law, _cauchy_pair)
    zeta = _Branches(pm.values, pm.weights).poles
    np.testing.assert_allclose(at, zeta + 0.01, rtol=0, atol=4e-16)
    for p, s in zip(at, slope):
        g = law._stieltjes_pair(np.array([p - 1e-9, p + 1e-9]) + 0j)[0].real
        assert g[0] > 0 > g[1]
        g = law._stieltjes_pair(np.array([p - 1e-7, p + 1e-7]) + 0j)[0].real
        assert abs((g[1] - g[0]) / 2e-7 - s) <= 1e-8 * abs(s)
    # the branches of F end at the candidates themselves (no solve there)
    br = LawBranches(law, _cauchy_pair)
    ends = [right for _, right, _, kind in br.branches if kind == "zero"]
    assert ends == list(at)
    g, d = br.values(at)
    assert np.all(g == 0) and np.all(d == slope)


def _seed_32_draw_38():
    a = freeattn.sample_covariance(freeattn.attention_law(0.0097669, 0.11046).squared(),
                                   5.1531)
    b = freeattn.free_additive(
        freeattn.free_multiplicative(freeattn.marchenko_pastur(1.1133, 1.5153),
                                     freeattn.attention_law(0.0045071, 0.60838).squared()),
        freeattn.marchenko_pastur(1.0108, 2.9435))
    return a, b


@pytest.mark.slow
def test_a_zero_of_g_is_probed_inside_its_piece_of_a_gap_eq_14_37(monkeypatch):
    # theory eq. (14.37), section 14.29: the depth-3 campaign's seed 32 / draw 38.  b has
    # an atom at 0 and a band from 6.3e-17 on a support reaching 7.45; G(x) < 0 for every
    # x < 0 (each term 1/(x - t) of a law on [0, oo) is negative), so no branch ends at a
    # zero below 0.  Probed beyond its piece (at -7.4e-14, across the atom) the piece
    # from the atom to the band took a zero at -1.2e-15, and the sum a gap
    # [8.1e-5, 1.1e-4] where its density is 0.09/x: mass 0.972, raised.
    from freeattn.compose import _sum_support

    a, b = _seed_32_draw_38()
    br = LawBranches(b, _cauchy_pair)
    lo = float(b.interval_details()[0].lo)
    assert 0 < lo < 1e-16 and b.atoms()[0].tolist() == [0.0]
    zeros = [right for _, right, _, kind in br.branches if kind == "zero"]
    assert all(z > 0 for z in zeros)
    assert br.branches[0][:2] == (-np.inf, lo)
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    assert len(ivs) == 2 and ivs[0][0] < 1e-8 and ivs[0][1] > 2e-3
    # the density across the former gap equals the continued -Im G(x + iy)/pi at
    # y = 1e-9 x (its change over y: y times the density's relative slope ~1/x, 1e-9)
    x = np.array([8.5e-5, 1e-4, 1.1e-4])
    cont = -law.stieltjes(x + 1e-9j * x).imag / np.pi
    assert np.all(cont * x > 0.05)
    np.testing.assert_allclose(law.pdf(x), cont, rtol=1e-7)
    assert law.accuracy().mass_error <= 1e-10
    # probed as before, the two curves through the false zero map their "gaps" with x
    # decreasing (from 9.54e-5 to 8.13e-5, and from 1.12e-4 to 9.54e-5), which a sum's
    # gap cannot do (eq. (14.20)): the curves raise rather than giving that support (the
    # sum then goes to its grid, which raises on section 14.37's band at the atom)
    monkeypatch.setattr(_sum_support, "END_WIDTH_FRACTION", np.inf)
    a, b = _seed_32_draw_38()
    with pytest.raises(ConvergenceError, match="decreases along a gap"):
        law_sum_edges(LawBranches(a, _cauchy_pair), LawBranches(b, _cauchy_pair))
    with pytest.raises(ConvergenceError):
        freeattn.free_additive(a, b).intervals()


def test_measured_noise_accepts_a_residual_at_the_rounding_of_phi_and_nothing_more_eq_14_42():
    # theory eq. (14.42) on a map with noise of known size: phi(w) = w/2 + 1 + noise
    # (fixed point 2, phi' = 1/2); a residual at the noise is accepted, one 100 times
    # above it is not, nor noise above 1e-8 of |w| + scale, nor a point next to a fold
    from freeattn.compose._analytic import _measured_noise

    class Noisy:
        scale = 1.0

        def __init__(self, amp, slope=0.5):
            self.amp, self.slope = amp, slope
            self.rng = np.random.default_rng(7)

        def phi(self, w, z):
            w = np.asarray(w)
            p = self.slope * (w - 2.0) + 2.0 + self.amp * self.rng.standard_normal(w.shape)
            return p, np.full(w.shape, self.slope + 0j)

    def accepted(pr, w):
        w = np.array([w + 0j])
        r = w - pr.phi(w, w)[0]
        return bool(_measured_noise(pr, w, w, r, pr.scale + np.abs(w))[0])

    assert accepted(Noisy(1e-10), 2.0)
    assert not accepted(Noisy(1e-10), 2.0 + 2e-8)          # residual 1e-8 = 100 noise
    assert not accepted(Noisy(1e-7), 2.0)                  # noise above 1e-8 * 3
    assert not accepted(Noisy(1e-10, slope=0.95), 2.0)     # |1 - phi'| = 0.05 < 0.1


def test_a_root_beside_a_pole_of_the_subordination_point_is_accepted_at_the_noise_eq_14_42():
    # three atoms ⊞ the squared attention law at beta = 0.045732, gamma = 0.23081 (theory
    # section 14.33): at x = -1.06203791 the real root is w = -965.139, whose residual
    # stays 3e-7 whatever the step (the rounding of the attention law's h amplified next
    # to a zero of the atoms' G).  Newton at y = 0 from -965.13 is accepted as the
    # boundary fixed point of eq. (14.11) (it went to the continuation before) and equals
    # the continued value to 1e-9 (the noise over |w|: 3e-10)
    inner = freeattn.free_additive(
        freeattn.point_masses([-1.299, -0.075, 2.349], [0.132, 0.43, 0.438]),
        freeattn.attention_law(0.045732, 0.23081).squared())
    inner.intervals()
    x = np.array([-1.06203791])
    w, status = inner._axis_newton(x, np.array([-965.13 + 0j]))
    assert status[0] == 0
    cont = inner._continue(x, np.zeros(1))
    assert abs(w[0] - cont[0]) <= 1e-9 * abs(cont[0])


def test_a_subordination_point_on_its_own_laws_support_is_inside():
    # sample_covariance(attention(0.053471, 2.2562)², 0.60927) ⊞ (attention(0.0089429,
    # 5.7452)² ⊞ δ_1.075) (depth-2 campaign, seed 5, draw 1): over the upper part of the
    # band the unknown w lies on the first law's support [0, 0.0204], Im w ≈ 1.1e-7, below
    # the grid's threshold relative to the sum's scale while the density is ~4; the grid
    # saw a spurious edge at 1.09297 (a band of mass 0.0075 lost, caught by the mass
    # check).  Classified by Im G too (theory section 14.36): the upper edge is where
    # the density, solved at x + 1e-12 i independently of the support, vanishes between
    # 1.09550 (0.33) and 1.09552 (2e-8); mass 1 to 1e-12 (measured 5.3e-15)
    a = freeattn.sample_covariance(freeattn.attention_law(0.053471, 2.2562).squared(), 0.60927)
    b = freeattn.free_additive(freeattn.attention_law(0.0089429, 5.7452).squared(),
                               freeattn.point_masses([1.075], [1.0]))
    law = freeattn.free_additive(a, b)
    (lo, hi), = law.intervals()
    assert 1.09550 < hi < 1.09552
    dens = -law.stieltjes(np.array([1.0950, 1.09552]) + 1e-12j).imag / np.pi
    assert dens[0] > 0.1 and dens[1] < 1e-6
    assert law.accuracy().mass_error <= 1e-12


#: The upper edge of seed 1 / draw 38 (depth-3 campaign) from the curves against a fit of
#: rho**2 = A (e - x) + B (e - x)**2 to its density solved by the continuation of eq.
#: (14.3) at six points 2e-9 - 6.4e-8 inside (no curve): measured 2.0e-15 (x at the curve's
#: last sample, before eq. (14.53): 1.5e-11; before r = omega - f: up to 6e-11).
EDGE_FIT_RTOL = 2e-13


def test_a_gap_ending_at_a_constituents_edge_ends_at_the_zero_eq_14_53():
    # attention ⊞ (atoms ⊠ attention ⊠ sample covariance of attention): the curve ends
    # where the product's point reaches its upper edge, its last sample still in the gap
    law = freeattn.free_additive(
        freeattn.attention_law(0.065312, 0.18079).squared(),
        freeattn.free_multiplicative(
            freeattn.free_multiplicative(freeattn.point_masses([1.191, 2.285], [0.583, 0.417]),
                                         freeattn.attention_law(1.8224, 0.29215).squared()),
            freeattn.sample_covariance(freeattn.attention_law(0.57523, 0.52402).squared(),
                                       0.92829)))
    assert isinstance(law, AnalyticLaw)
    ((_, edge),) = law.intervals()
    ds = np.array([2e-9, 4e-9, 8e-9, 1.6e-8, 3.2e-8, 6.4e-8])
    xs = edge - ds
    w = law._continue(xs, np.zeros(xs.size), check=False)
    rho2 = (law._problem.cauchy(w, xs + 0j).imag / np.pi) ** 2
    # rho**2 = A t + B t**2, t = ds + shift: linear in (A, B) for a given shift, whose
    # best value a scan of its residual finds (to 1e-15 of the edge)
    def fit(shift):
        t = ds + shift
        m = np.c_[t, t * t] / rho2[:, None]
        coef, *_ = np.linalg.lstsq(m, np.ones(ds.size), rcond=None)
        return np.abs(m @ coef - 1.0).max()

    shifts = np.linspace(-1e-10, 1e-10, 2001)
    best = shifts[np.argmin([fit(s) for s in shifts])]
    assert abs(best) <= EDGE_FIT_RTOL * edge


def test_the_shift_of_eq_14_53():
    from freeattn.compose._sum_support import stationary_shift

    # s = d: the other laws' terms vanish, the zero is at the edge itself
    assert stationary_shift(1e-9, 1e-4, 1e-4) == pytest.approx(1e-9, rel=1e-15)
    # s = d (1 - rho) with rho = 1/2: a quarter of the distance
    assert stationary_shift(1e-9, 1e-4, 5e-5) == pytest.approx(2.5e-10, rel=1e-15)
    # the sample at the zero (s = 0) is the end; d not positive or not finite: no shift
    assert stationary_shift(1e-9, 1e-4, 0.0) == 0.0
    assert stationary_shift(1e-9, 0.0, 0.0) == 0.0
    assert stationary_shift(1e-9, np.nan, 1e-4) == 0.0
