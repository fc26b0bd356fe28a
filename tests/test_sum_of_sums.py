"""A sum of sums located from the curves of all its terms (theory section 14.40,
eq. (14.50)) and arranged by the cost of its terms (section 14.42, eq. (14.51)), and a
level that asks a nested system far from its support by its moments (eq. (14.47)).

Closed forms: the free sum of ``n`` symmetric Bernoulli laws on {-1, 1} is the
Kesten-McKay law, supported on ``|x| <= 2 sqrt(n - 1)`` with density
``n sqrt(4 (n - 1) - x**2) / (2 pi (n**2 - x**2))``.  Where no closed form exists
the independent check is the two-law curves of eq. (14.20) on the nested law
(section 14.29), which sample the nested law's own subordination solve.
"""

import numpy as np
import pytest

import freeattn
from freeattn.compose._analytic import AnalyticLaw, _additive_terms, _cauchy_pair
from freeattn.compose._discrete_sum_support import sum_criterion
from freeattn.compose._sum_support import (LawBranches, curve_keys, law_branches,
                                           law_sum_edges)
from freeattn.laws._law_base import NESTED_SOLVE_FACTOR, TOWER_EVALUATION_COST

EPS = np.finfo(float).eps
BERNOULLI = ([-1.0, 1.0], [0.5, 0.5])
#: Interior density of the Kesten-McKay laws: measured 3.7e-16 at the quarter points.
KM_DENSITY_RTOL = 1e-14
#: The two-law curves (sampling the nested law's solve) against eq. (14.50):
#: measured 2.7e-15 absolute on supports of size ~10.
NESTED_CURVES_ATOL = 1e-13
#: The mass error of a built law (its representation's integral against 1): measured
#: 2.4e-14 for seed 2 / draw 20.
MASS_ATOL = 1e-12
#: Moments of a density (Gauss-Legendre in the angle) against the exact moments:
#: measured 4.9e-16 for seed 3 / draw 18 of the depth-3 campaign.
MOMENT_RTOL = 1e-12
#: The system of eq. (14.8) far from its support (its omega-rows' eta from the moment
#: tail, eq. (14.52)) against the moment series of eq. (14.47): measured 0 in G and
#: 4.5e-16 in G' at z = -5.25e5 + 181i.
FAR_SYSTEM_RTOL = 1e-13
#: A sum of sums arranged by eq. (14.51) against the arrangement given, built directly:
#: the same curves of eq. (14.50) give the edges (measured equal); the densities are two
#: solves of one law (measured 2.3e-15 at the quarter points).
ARRANGED_EDGE_ATOL = 1e-13
ARRANGED_DENSITY_RTOL = 1e-12


def _old_two_law_criterion(w1, parts1, w2, parts2):
    """Eq. (14.20) as written for two laws before eq. (14.50) (section 14.26)."""
    (da, ea, ra), (db, eb, rb) = parts1, parts2
    first = np.abs(ea) <= np.abs(eb)
    s = np.where(first, ea + db, da + eb)
    size = np.where(first, np.abs(ea) + db, da + np.abs(eb))
    with np.errstate(all="ignore"):
        rel = np.where(size == 0, 0.0, s / size)
    x = np.where(np.abs(w1) >= np.abs(w2), w2 + ra, w1 + rb)
    return rel, x


def test_the_criterion_of_two_laws_is_eq_14_20_bit_for_bit():
    # random parts, with ties in |e| and |w| and a vanishing size: the n-law sum of
    # eq. (14.50) reduces to the two-law formula exactly (same terms, same order)
    rng = np.random.default_rng(0)
    m = 400
    w1, w2 = rng.normal(size=m), rng.normal(size=m)
    d1, d2 = rng.uniform(0, 1, m), rng.uniform(0, 1, m)
    d2[:40] = d1[:40]                       # |e| ties
    w2[40:80] = -w1[40:80]                  # |w| ties
    d1[80:90] = d2[80:90] = 1.0             # size 0
    r1, r2 = rng.normal(size=m), rng.normal(size=m)
    p1, p2 = (d1, d1 - 1.0, r1), (d2, d2 - 1.0, r2)
    rel, x = sum_criterion((w1, w2), (p1, p2))
    rel0, x0 = _old_two_law_criterion(w1, p1, w2, p2)
    assert np.array_equal(rel, rel0) and np.array_equal(x, x0)


@pytest.mark.parametrize("n", [3, 4])
def test_kesten_mckay_laws_as_sums_of_sums_eq_14_50(n):
    # n free symmetries: the nested sum's terms are n Bernoulli laws; its support
    # from eq. (14.50) is [-2 sqrt(n - 1), 2 sqrt(n - 1)] (closed form), measured
    # correctly rounded (the two-law curves on the nested law were 7e-16 off at n = 4)
    b = freeattn.point_masses(*BERNOULLI)
    law = b
    for _ in range(n - 1):
        law = freeattn.free_additive(law, b)
    assert isinstance(law, AnalyticLaw) and len(_additive_terms(law)) == n
    edge = 2.0 * np.sqrt(n - 1.0)
    ((lo, hi),) = law.intervals()
    assert abs(hi - edge) <= EPS * edge and abs(lo + edge) <= EPS * edge
    assert law_sum_edges(*[LawBranches(b, _cauchy_pair)] * n) == [(lo, hi, False, False)]
    x = edge * np.array([-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75])
    ref = n * np.sqrt(4.0 * (n - 1) - x ** 2) / (2.0 * np.pi * (n ** 2 - x ** 2))
    np.testing.assert_allclose(law.pdf(x), ref, rtol=KM_DENSITY_RTOL)


@pytest.mark.parametrize("c_atoms", [([-8.0, 8.0], [0.6, 0.4]),
                                     ([-5.0, 0.0, 5.0], [0.45, 0.1, 0.45])])
def test_a_sum_of_sums_agrees_with_the_two_law_curves_eq_14_50(c_atoms):
    # (three atoms ⊞ two atoms) ⊞ c: the bands of eq. (14.50) on the three terms
    # against eq. (14.20) on (the nested law, c) — the same bands, 2 and 3 of them
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(freeattn.free_additive(a, b), freeattn.point_masses(*c_atoms))
    bands = law.intervals()
    two_law = law_sum_edges(LawBranches(law.a, _cauchy_pair), LawBranches(law.b, _cauchy_pair))
    assert len(bands) == len(two_law) == len(c_atoms[0])
    np.testing.assert_allclose([v for iv in bands for v in iv[:2]],
                               [v for iv in two_law for v in iv[:2]], rtol=0,
                               atol=NESTED_CURVES_ATOL)
    # the warm starts of eq. (14.7) come from the grid's points inside the bands only
    assert law._warm_x.size
    assert all(any(lo < x < hi for lo, hi in bands) for x in law._warm_x)


#: A term's real G, G' solved in one batch against the same points solved among others
#: (Newton's last step rounds with the batch; measured 0 to 1.1e-16 relative).
KEPT_PAIR_RTOL = 1e-14


@pytest.mark.slow
def test_a_terms_branches_are_built_once_and_each_point_solved_once_eq_14_37():
    # the curves of eq. (14.50) read a term's branches from every sum that holds it, and
    # ask its G again at points they asked before: both are kept with the term
    prod = freeattn.free_multiplicative(
        freeattn.point_masses([4.78, 2.923, 3.086], [0.492, 0.127, 0.381]),
        freeattn.point_masses([4.796, 1.017, 4.98, 3.427], [0.118, 0.184, 0.627, 0.071]))
    asked = []

    def pair(law, u):
        asked.append(np.array(u))
        return _cauchy_pair(law, u)

    br = law_branches(prod, pair)
    assert law_branches(prod, pair) is br
    assert law_branches(prod, _cauchy_pair) is not br
    # real points in the product's gaps and beyond its support
    (lo, _), (_, hi) = prod.intervals()[0], prod.intervals()[-1]
    gaps = [(a[1], b[0]) for a, b in zip(prod.intervals()[:-1], prod.intervals()[1:])]
    u = np.array([lo - 1.0, 0.5 * sum(gaps[0]), hi + 1.0])
    asked.clear()
    g1, d1 = br.values(u)
    assert [a.size for a in asked] == [3]
    v = np.r_[u[1:], hi + 2.0]
    asked.clear()
    g2, d2 = br.values(v)
    assert [a.real.tolist() for a in asked] == [[hi + 2.0]]
    np.testing.assert_array_equal(g2[:2], g1[1:])
    # the kept values are the solver's at those points
    g, d = _cauchy_pair(prod, v.astype(complex))
    np.testing.assert_allclose(g2, g.real, rtol=KEPT_PAIR_RTOL)
    np.testing.assert_allclose(d2, d.real, rtol=KEPT_PAIR_RTOL)


def test_terms_of_a_sum_and_curves_of_their_branches():
    a = freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])
    b = freeattn.point_masses([0.0, 2.0], [0.25, 0.75])
    c = freeattn.attention_law(1.0, 0.5).squared()
    ab = freeattn.free_additive(a, b)
    nested = freeattn.free_additive(ab, freeattn.free_additive(a, c))
    assert _additive_terms(nested) == [a, b, a, c]
    # a product is one term: its own subordination, not a sum
    prod = freeattn.free_multiplicative(c, c)
    assert _additive_terms(freeattn.free_additive(prod, a)) == [prod, a]
    # the curves are exactly the choices of one branch of each law with a common
    # range of F (eq. (14.37)), checked against all pairs
    la, lb = LawBranches(a, _cauchy_pair), LawBranches(b, _cauchy_pair)
    keys = curve_keys(la, [lb])
    for key in keys:
        (lo1, hi1), (lo2, hi2) = la.value_bounds(key[0]), lb.value_bounds(key[1])
        assert max(lo1, lo2) < min(hi1, hi2)
    every = [(k, l) for k in range(la.count) for l in range(lb.count)]
    missing = set(every) - set(keys)
    for k, l in missing:
        (lo1, hi1), (lo2, hi2) = la.value_bounds(k), lb.value_bounds(l)
        assert not max(lo1, lo2) < min(hi1, hi2)


def test_the_depth_2_draw_whose_support_took_14_s_eq_14_50():
    # benchmarks/campaign.py --depth 2, seed 2 / draw 20: (three atoms ⊞ attention) ⊞
    # attention took 14.9 s, 14 s of them in the two-law curves' samples of the nested
    # law; its edges as recorded then (5bb9759, two-law curves of section 14.29),
    # measured equal to 5e-16
    law = freeattn.free_additive(
        freeattn.free_additive(
            freeattn.point_masses([-1.299, -0.075, 2.349], [0.132, 0.43, 0.438]),
            freeattn.attention_law(0.045732, 0.23081).squared()),
        freeattn.attention_law(0.1429, 0.36835).squared())
    recorded = [(-1.294760789322174, -1.237152760844652),
                (-0.0746457437061967, 0.04310888289413602),
                (2.349330243704081, 2.472126975129292)]
    bands = law.intervals()
    np.testing.assert_allclose([v for iv in bands for v in iv[:2]],
                               [v for iv in recorded for v in iv], rtol=0,
                               atol=NESTED_CURVES_ATOL)
    # the density integrates to 1 (the campaign's check)
    assert law.accuracy().mass_error < MASS_ATOL


def test_a_level_over_a_system_asks_it_far_away_by_its_moments_eq_14_47(monkeypatch):
    # depth-3 campaign, seed 3 / draw 18: semicircle(3.7054) ⊞ (sample covariance of an
    # attention law ⊠ two laws of atoms), a four-factor system on [0, 1.24] under an
    # R-level. The level's support search asked the system at z = -5.25e5 + 181i, where
    # its continuation missed 1e-11 (5.0e-10) and the build raised; beyond 1e4 times its
    # support the moment series of eq. (14.47) answers, as it does for a ⊞ host. (The
    # system itself solves there since its omega-rows take eta from the moment tail, eq.
    # (14.52): to FAR_SYSTEM_RTOL of the series.)
    # Moments 1-4 of the density against the exact ones (MOMENT_RTOL).
    law = freeattn.free_additive(
        freeattn.free_multiplicative(
            freeattn.sample_covariance(freeattn.attention_law(0.15497, 6.0968).squared(),
                                       0.18593),
            freeattn.free_multiplicative(freeattn.point_masses([3.623, 3.743], [0.113, 0.887]),
                                         freeattn.point_masses([1.895, 3.33, 2.972],
                                                               [0.533, 0.339, 0.128]))),
        freeattn.semicircle(3.7054))
    system = law.constituent
    system.intervals()
    far = np.array([complex(-525474.0836674907, 181.48024447697867)])
    mask, gf, dgf = system._far_pair(far)
    assert mask.all()
    gsys, dgsys = system._pair_or_far(far)
    np.testing.assert_allclose(gsys, gf, rtol=FAR_SYSTEM_RTOL)
    np.testing.assert_allclose(dgsys, dgf, rtol=FAR_SYSTEM_RTOL)
    # a solver that raises there (made to, as the system did before eq. (14.52)): the
    # series answers
    own = system._stieltjes_pair

    def failing(zs):
        if np.any(np.abs(zs) > 1e5):
            raise freeattn.ConvergenceError("made to fail far away")
        return own(zs)

    monkeypatch.setattr(system, "_stieltjes_pair", failing)
    g, dg = system._pair_or_far(far)
    assert g[0] == gf[0] and dg[0] == dgf[0]
    monkeypatch.undo()
    # nearer, the solver's own answers (a second solve starts from the first one's
    # tables: equal to rounding, measured 5e-17)
    near = np.array([0.6 + 0.01j, 2.0 + 0.5j])
    np.testing.assert_allclose(system._pair_or_far(near)[0], system._stieltjes_pair(near)[0],
                               rtol=4 * EPS)
    ((lo, hi),) = law.intervals()
    x, w = np.polynomial.legendre.leggauss(200)
    # the density has square-root edges: Gauss-Legendre in the angle of x = mid + half cos
    theta = 0.5 * np.pi * (x + 1.0)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    pts = mid + half * np.cos(theta)
    dens = law.pdf(pts) * half * np.sin(theta) * 0.5 * np.pi
    for k in range(1, 5):
        np.testing.assert_allclose(np.sum(w * dens * pts ** k), law.moment(k), rtol=MOMENT_RTOL)


def test_a_sum_of_sums_puts_its_costliest_term_outermost_eq_14_51():
    # two atoms ⊞ (attention ⊞ three atoms): the nested sum's Newton would multiply the
    # attention law's tower; built as (two atoms ⊞ three atoms) ⊞ attention
    k, t = NESTED_SOLVE_FACTOR, TOWER_EVALUATION_COST
    two = freeattn.point_masses([-0.654, -0.861], [0.851, 0.149])
    three = freeattn.point_masses([0.0, 0.1, 0.25], [0.3, 0.3, 0.4])
    att = freeattn.attention_law(1.0, 0.5).squared()
    law = freeattn.free_additive(two, freeattn.free_additive(att, three))
    assert att._evaluation_cost == t and two._evaluation_cost == 1.0
    assert att in (law.a, law.b)
    nested = law.b if law.a is att else law.a
    assert _additive_terms(nested) == [two, three]
    # eq. (14.51): k (c(a) + c(b)) at each nested sum
    assert nested._evaluation_cost == k * 2.0
    assert law._evaluation_cost == k * (t + k * 2.0)
    # the arrangement as given, built directly: the same law (bands and density)
    given = AnalyticLaw(two, AnalyticLaw(att, three, False), False)
    assert given._evaluation_cost == k * (1.0 + k * (t + 1.0))
    bands, ref = law.intervals(), given.intervals()
    assert len(bands) == len(ref)
    np.testing.assert_allclose([v for iv in bands for v in iv[:2]],
                               [v for iv in ref for v in iv[:2]], rtol=0,
                               atol=ARRANGED_EDGE_ATOL)
    x = np.array([lo + f * (hi - lo) for lo, hi in bands for f in (0.25, 0.5, 0.75)])
    np.testing.assert_allclose(law.pdf(x), given.pdf(x), rtol=ARRANGED_DENSITY_RTOL)


def test_a_sum_of_sums_of_equal_costs_keeps_its_order_eq_14_51():
    # every term a law of atoms (cost 1): no arrangement is cheaper than the given one
    ber = freeattn.point_masses(*BERNOULLI)
    other = freeattn.point_masses([0.0, 2.0], [0.25, 0.75])
    inner = freeattn.free_additive(ber, other)
    law = freeattn.free_additive(inner, ber)
    assert {id(law.a), id(law.b)} == {id(inner), id(ber)}
    # two towers on each side: (a ⊞ b) ⊞ (c ⊞ d) costs k(2kT + 2kT) = 16T, the
    # costliest term outermost k(T + k(T + 2kT)) = 52T: kept as given
    atts = [freeattn.attention_law(b, 0.5).squared() for b in (0.5, 0.7, 0.9, 1.1)]
    left = freeattn.free_additive(atts[0], atts[1])
    right = freeattn.free_additive(atts[2], atts[3])
    law = freeattn.free_additive(left, right)
    assert {id(law.a), id(law.b)} == {id(left), id(right)}


def test_a_sum_with_a_semicircle_over_a_nested_law_has_its_terms_as_curves_eq_14_50():
    # semicircle ⊞ (two atoms ⊠ two atoms) is an R-level (eq. (8.8)) solved by Newton over
    # the nested product: its real values cost a solve each; as a term of a sum of sums
    # it enters the curves of eq. (14.50) as its two laws (depth-3 campaign, seed 3 /
    # draw 20: the support 16.3 -> 7.2 s, the same edges to 4.4e-16)
    sc = freeattn.semicircle(0.5)
    prod = freeattn.free_multiplicative(freeattn.point_masses([1.0, 2.0], [0.3, 0.7]),
                                        freeattn.point_masses([1.0, 3.0], [0.6, 0.4]))
    level = freeattn.free_additive(sc, prod)
    assert level._additive_level_terms == (sc, prod)
    atoms = freeattn.point_masses([-3.0, 0.0, 5.0], [0.3, 0.3, 0.4])
    nested = freeattn.free_additive(level, atoms)
    assert _additive_terms(nested, levels=True) == [sc, prod, atoms]
    assert _additive_terms(nested) == [level, atoms]             # its arrangement's terms
    # a level solved by its tower keeps its real values (one root solve each)
    att = freeattn.attention_law(1.0, 0.5).squared()
    tower = freeattn.free_additive(sc, att)
    assert tower._additive_level_terms is None
    assert _additive_terms(freeattn.free_additive(tower, atoms), levels=True) == [tower, atoms]


#: ``Im G(x + iy)/y`` at two heights outside the support, where it tends to
#: ``int dmu/(x - t)**2`` (measured equal to 1e-9 at 1e-7 beyond the edge).
OUTSIDE_RATIO_RTOL = 1e-3
#: The density's square-root law at an edge: ``f(e - 4d)/f(e - d) = 2`` (measured
#: 6.6e-8 off at d = 1e-6 of an edge at 116).
SQRT_EDGE_RTOL = 1e-4


@pytest.mark.slow
def test_a_rational_r_transform_over_a_sum_is_a_sum_of_sums_section_14_54():
    # the fresh depth-4 campaign's seed 6 / draw 7: (attention ⊞ a product of atoms) ⊞
    # (semicircle ⊞ MP) was an R-level over the nested sum, solved by the generic
    # solver: its upper edge 6.4e-6 above the one its own transform gives off the axis,
    # and 60 s; as a sum of sums (analytic subordination, eq. (14.50)) 1.3 s
    x = freeattn.free_additive(
        freeattn.attention_law(0.084546, 5.5392).squared(),
        freeattn.free_multiplicative(freeattn.free_multiplicative(
            freeattn.point_masses([4.386, 4.449, 3.963, 4.073], [0.145, 0.588, 0.233, 0.034]),
            freeattn.marchenko_pastur(1.3854, 2.847)),
            freeattn.point_masses([1.169, 4.023], [0.624, 0.376])))
    y = freeattn.free_additive(freeattn.semicircle(0.51824),
                               freeattn.marchenko_pastur(1.8557, 1.7196))
    law = freeattn.free_additive(x, y)
    assert isinstance(law, AnalyticLaw) and not law.multiplicative
    ivs = law.intervals()
    assert len(ivs) == 2
    e = ivs[-1][1]

    def ratios(at):
        return [-law.stieltjes(np.array([at + 1j * h]))[0].imag / h for h in (1e-9, 1e-10)]

    # off the axis (where the subordination point is unique, eq. (14.2)): 1e-7 beyond
    # the edge Im G/y is the same at both heights (outside), 1e-7 inside it grows as
    # 1/y (a density)
    out, inside = ratios(e + 1e-7), ratios(e - 1e-7)
    assert out[1] == pytest.approx(out[0], rel=OUTSIDE_RATIO_RTOL)
    assert inside[1] == pytest.approx(10 * inside[0], rel=OUTSIDE_RATIO_RTOL)
    f = law.pdf(np.array([e - 1e-6, e - 4e-6]))
    assert f[1] / f[0] == pytest.approx(2.0, rel=SQRT_EDGE_RTOL)
    total = law._representation().total + float(np.sum(law.atoms()[1]))
    assert abs(total - 1.0) <= MASS_ATOL
