"""The offset model at pole edges of ⊞ and ⊠ (theory section 14.27, eqs. (14.30)-(14.33))."""

import json
import pathlib

import mpmath
import numpy as np
import pytest

import freeattn
from freeattn.compose import _pole_edge
from freeattn.compose._analytic import _cauchy_pair
from freeattn.compose._pole_edge import PoleEdge, _AtomOffset, pole_edge_pair

EPS = np.finfo(float).eps
#: Density next to a pole edge against the 50-digit references: measured at most
#: 2.0e-15 relative over the four cases (tests/reference/make_pole_edge_references.py).
POLE_DENSITY_RTOL = 1e-14
#: The general solve at 1e-10 of the band's width from a pole edge, measured
#: 3e-7 - 1.1e-5 off: the counterfactual the model is needed for.
GENERAL_MISS_AT_1E_10 = 1e-7

_REF = json.loads((pathlib.Path(__file__).parent / "reference"
                   / "pole_edge_references.json").read_text())


def _law(case):
    c = _REF["cases"][case]
    a, b = freeattn.point_masses(*c["a"]), freeattn.point_masses(*c["b"])
    if c["multiplicative"]:
        return freeattn.free_multiplicative(a, b)
    return freeattn.free_additive(a, b)


@pytest.mark.parametrize("case", sorted(_REF["cases"]))
def test_densities_next_to_pole_edges_against_50_digit_references(case):
    # eq. (14.32) and eq. (14.33) at 1e-4 ... 1e-14 of the band's width inside every
    # pole edge
    law = _law(case)
    pts = _REF["cases"][case]["points"]
    x = np.array([float(p[0]) for p in pts])
    ref = np.array([float(p[1]) for p in pts])
    depth = np.array([p[2] for p in pts])
    assert np.max(np.abs(law._density(x) / ref - 1.0)) <= POLE_DENSITY_RTOL
    # the general solve of eq. (14.1)/(14.4) at the same points keeps ~1e-15/d
    general = np.abs(law._general_density(x[depth == 10]) / ref[depth == 10] - 1.0)
    assert general.max() > GENERAL_MISS_AT_1E_10
    # mass 1 (atoms included) to rounding: measured at most 2.2e-16
    assert abs(law.total_mass() - 1.0) <= 1e-14


def test_the_product_of_two_free_projections_builds_eq_14_33():
    # p, q free projections of trace 1/2: the law of pqp is (1/2) delta_0 plus
    # 1/(2 pi sqrt(x (1 - x))) on [0, 1] (closed form); its x**(-1/2) edge at 1 is a
    # pole edge of the atoms 1, 1.  Before eq. (14.33) its mass check failed by 1.3e-7.
    proj = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_multiplicative(proj, freeattn.point_masses([0.0, 1.0], [0.5, 0.5]))
    # measured 7.5e-15 (the hard edge at 0 keeps its own digits, eq. (14.6))
    assert abs(law.total_mass() - 1.0) <= 1e-13
    x = 1.0 - 10.0 ** -np.arange(4, 15)        # 1 - x exact in floats
    ref = 1.0 / (2.0 * np.pi * np.sqrt(x * (1.0 - x)))
    # eq. (14.33): measured 4.4e-16
    assert np.max(np.abs(law._density(x) / ref - 1.0)) <= POLE_DENSITY_RTOL
    # the CDF below the edge, 1/2 + arcsin(sqrt(x))/pi (closed form), by the panels
    mpmath.mp.dps = 30
    cdf_ref = [float(mpmath.mpf(1) / 2 + mpmath.asin(mpmath.sqrt(mpmath.mpf(v))) / mpmath.pi)
               for v in x]
    assert np.max(np.abs(law.cdf(x) - cdf_ref)) <= 1e-13


def test_the_arcsine_next_to_its_edges_eq_14_32():
    # Bernoulli ⊞ Bernoulli: 1/(pi sqrt(4 - x**2)) (closed form); 2 - x exact
    ber = freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(ber, ber)
    d = 10.0 ** -np.arange(4, 15)
    x = np.concatenate([2.0 - d, -2.0 + d])
    ref = 1.0 / (np.pi * np.sqrt((2.0 - x) * (2.0 + x)))
    assert np.max(np.abs(law._density(x) / ref - 1.0)) <= POLE_DENSITY_RTOL
    assert np.abs(law._general_density(np.array([2.0 - 1e-10])) * np.pi
                  * np.sqrt(1e-10 * (4.0 - 1e-10)) - 1.0)[0] > GENERAL_MISS_AT_1E_10
    # mass 1 to rounding (6.8e-13 with the general solve; measured 2.2e-16)
    assert abs(law.total_mass() - 1.0) <= 1e-14


def test_a_product_pole_edge_is_the_rounded_product_of_its_atoms():
    # the fold of eq. (14.5) finds the edges to a few ulps; a pole edge is put at the
    # float nearest the product of its two atoms (section 14.27)
    law = _law("inexact_product")
    edges = [v for iv in law.intervals() for v in iv]
    assert edges == [0.1 * 0.3, 0.1 * 1.1, 0.7 * 0.3, 0.7 * 1.1]
    assert [m.edge for m in law._pole_edges()] == edges


@pytest.mark.parametrize("s", [1e-3 + 2e-3j, 3e-8j, -2e-12 + 1e-12j])
def test_the_offset_form_of_F_eq_14_30(s):
    # eq. (14.30): F(alpha + s) = s/(m + s R) against 1/G at 40 digits, for a discrete law (R
    # summed over the other atoms) and Marchenko-Pastur with ratio 2 (an atom 1/2 at
    # 0; R = G - m/s); G and F' = -G'/G**2 by mpmath (its closed form, differentiated)
    mpmath.mp.dps = 40
    su = mpmath.mpc(s)
    pm = freeattn.point_masses([0.2, 0.5, 1.7], [0.25, 0.45, 0.3])
    g_pm = lambda u: sum(mpmath.mpf(w) / (u - mpmath.mpf(a))  # noqa: E731
                         for a, w in zip((0.2, 0.5, 1.7), (0.25, 0.45, 0.3)))

    def g_mp(u):
        # G of MP(1, 2): (u - (1 - c) - sqrt((u - lo)(u - hi)))/(2 c u), branch ~ 1/u
        c = mpmath.mpf(2)
        lo, hi = (1 - mpmath.sqrt(c)) ** 2, (1 + mpmath.sqrt(c)) ** 2
        sq = mpmath.sqrt(u - lo) * mpmath.sqrt(u - hi)
        return (u - (1 - c) - sq) / (2 * c * u)
    cases = [(pm, 0.5, 0.45, g_pm, 1e-15), (freeattn.marchenko_pastur(1.0, 2.0), 0.0, 0.5, g_mp,
                                            1e-13)]
    for law, atom, mass, g, rtol in cases:
        off = _AtomOffset(law, atom, mass, _cauchy_pair)
        lin, quad, df, f = off.values(np.array([s]))
        u = mpmath.mpf(atom) + su
        f_ref = 1 / g(u)
        df_ref = -mpmath.diff(g, u) / g(u) ** 2
        assert abs(complex(f[0]) - complex(f_ref)) <= rtol * abs(complex(f_ref))
        assert abs(lin[0] + quad[0] - f[0]) <= 4 * EPS * abs(f[0])
        assert abs(complex(df[0]) - complex(df_ref)) <= 1e-8 * abs(complex(df_ref))


def test_the_linear_coefficient_eq_14_31():
    # eq. (14.31): kappa = (m_a + m_b - 1)/(m_a m_b) with the numerator exact (Fraction of the
    # float masses): 0 for 0.5 + 0.5, -5.55e-17/0.21 for the floats 0.7 + 0.3
    from fractions import Fraction

    pm = freeattn.point_masses([0.0, 1.0], [0.3, 0.7])

    def model(ma, mb):
        return PoleEdge(pm, 1.0, ma, pm, 0.0, mb, False, 1.0, -1, 1e-3, 1e-9, None,
                        _cauchy_pair)
    for ma, mb in [(0.5, 0.5), (0.7, 0.3), (0.3, 0.7), (0.1, 0.9), (0.4, 0.4)]:
        exact = (Fraction(ma) + Fraction(mb) - 1) / (Fraction(ma) * Fraction(mb))
        assert model(ma, mb).kappa == pytest.approx(float(exact), rel=4 * EPS, abs=0.0)
    assert model(0.5, 0.5).kappa == 0.0 and model(0.7, 0.3).kappa != 0.0


@pytest.mark.parametrize("case", ["sum", "product"])
def test_the_offset_residual_vanishes_at_the_40_digit_solution_eqs_14_32_14_33(case):
    # eq. (14.32) (the sum) and eq. (14.33) (the product): each term of the residual
    # is O(delta) = O(s**2); at the offsets of a 40-digit
    # solution of eq. (14.1)/(14.4) (rounded to floats) it is a few roundings of that
    # size, while a wrong term would leave O(delta)
    mpmath.mp.dps = 40
    c = _REF["cases"][case]
    law = _law(case)
    (av, aw), (bv, bw) = c["a"], c["b"]
    ga = lambda u: sum(mpmath.mpf(w) / (u - mpmath.mpf(v)) for v, w in zip(av, aw))  # noqa: E731
    gb = lambda u: sum(mpmath.mpf(w) / (u - mpmath.mpf(v)) for v, w in zip(bv, bw))  # noqa: E731
    for model in law._pole_edges():
        x = model.edge + model.side * 1e-8
        xm = mpmath.mpf(x)
        xa = np.array([x])
        delta = model.offset(xa)
        d_ref, s_ref = model._reference_point()
        s_start = model._newton(s_ref * np.sqrt(delta / d_ref), delta, xa)[0][0]
        alpha = mpmath.mpf(model.oa.atom)
        if c["multiplicative"]:
            # zeta_a (zeta_b - F_b(zeta_b)) = x with zeta_b = x/(zeta_a - F_a(zeta_a))
            def eq(za):
                zb = xm / (za - 1 / ga(za))
                return za * (zb - 1 / gb(zb)) - xm
        else:
            # F_a(w_a) = F_b(x + F_a(w_a) - w_a)
            def eq(wa):
                return 1 / ga(wa) - 1 / gb(xm + 1 / ga(wa) - wa)
        za = mpmath.findroot(eq, alpha + mpmath.mpc(s_start))
        s1 = np.array([complex(za - alpha)])
        res, _, _, s2, size = model.residual(s1, delta, xa)
        # the terms are of the order of delta (checked) and cancel to rounding
        assert size[0] <= 100 * (abs(delta[0]) + abs(s1[0]) ** 2 + abs(s2[0]) ** 2)
        assert abs(res[0]) <= 64 * EPS * size[0]
        # and the solution's offsets: s_a of the model's Newton within 1e-14
        assert abs(s_start - s1[0]) <= 1e-14 * abs(s1[0])


def test_pole_edge_pair_finds_the_atoms_or_none():
    a = freeattn.point_masses([0.0, 1.0, 3.0], [0.25, 0.5, 0.25])
    b = freeattn.point_masses([0.0, 2.0], [0.5, 0.5])
    assert pole_edge_pair(a, b, 1.0, False, 5.0) == (1.0, 0.5, 0.0, 0.5)
    assert pole_edge_pair(a, b, 3.0, False, 5.0) == (1.0, 0.5, 2.0, 0.5)
    assert pole_edge_pair(a, b, 2.5, False, 5.0) is None
    c = freeattn.point_masses([1.0, 2.0], [0.3, 0.7])
    d = freeattn.point_masses([1.0, 3.0], [0.7, 0.3])
    assert pole_edge_pair(c, d, 6.0, True, 6.0) == (2.0, 0.7, 3.0, 0.3)
    assert pole_edge_pair(freeattn.semicircle(1.0), b, 1.0, False, 5.0) is None


def test_an_offset_model_that_does_not_converge_raises(monkeypatch):
    # one Newton step cannot reach the relative step of POLE_STEP_RTOL from the general
    # solve's start: ConvergenceError naming the equations, never a silent value
    monkeypatch.setattr(_pole_edge, "POLE_NEWTON_STEPS", 1)
    law = _law("product")
    with pytest.raises(freeattn.ConvergenceError, match=r"offset model .* \(14\.32\)-\(14\.33\)"):
        law._density(np.array([1.0 + 1e-9]))


def test_a_gap_beside_a_pole_edge_of_a_product_is_found():
    # point_masses([0.621, 1.55, 2.454, 2.898], ...) ⊠ point_masses([1.384, 2.705], [.6, .4]):
    # the atoms 2.454 (0.6) and 2.705 (0.4) make a pole edge at their product with a
    # gap of width 1.5e-3 on its left, between grid points of the support search;
    # the grid missed it (4 bands, the mass check raised by 1.6e-7) until the
    # points beside each candidate pole edge were added (section 14.27)
    a = freeattn.point_masses([0.621, 1.55, 2.454, 2.898],
                              [0.047819373035085516, 0.1372437827565878, 0.6, 0.2149368442083267])
    b = freeattn.point_masses([1.384, 2.705], [0.6, 0.4])
    law = freeattn.free_multiplicative(a, b)
    ivs = law.interval_details()
    assert len(ivs) == 5
    assert ivs[4].lo == 2.454 * 2.705 and ivs[4].lo_exponent == -0.5
    gap = 0.5 * (float(ivs[3].hi) + float(ivs[4].lo))
    # the general solve in the gap: a real subordination point (density 0)
    assert law._general_density(np.array([gap]))[0] == 0.0
    # atom 0.2 at 2.454 * 1.384 (masses 0.6 + 0.6 - 1); measured 2.2e-16
    assert abs(law.total_mass() - 1.0) <= 1e-13


def _campaign(seed, n):
    """Random ⊞ (even) and ⊠ (odd) of two 2-4-atom laws, each with a pair of atoms
    whose masses sum to 1 (a pole edge)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        mul = len(out) % 2 == 1
        ka, kb = rng.integers(2, 5, size=2)
        m = float(rng.choice([0.5, 0.25, 0.75, 0.3, 0.6, 0.4]))
        wa = np.concatenate([[m], rng.dirichlet(np.ones(ka - 1)) * (1 - m)])
        wb = np.concatenate([[1 - m], rng.dirichlet(np.ones(kb - 1)) * m])
        lo, hi = (0.2, 3.0) if mul else (-2.0, 2.0)
        va, vb = np.round(rng.uniform(lo, hi, ka), 3), np.round(rng.uniform(lo, hi, kb), 3)
        if len(set(va)) < ka or len(set(vb)) < kb:
            continue
        out.append((freeattn.point_masses(va, wa / wa.sum()),
                    freeattn.point_masses(vb, wb / wb.sum()), mul))
    return out


@pytest.mark.slow
def test_random_sums_and_products_with_pole_edges():
    # 12 laws of numpy.random.default_rng(3): before section 14.27, 6 raised
    # ConvergenceError (mass checks missed by 1e-8 - 1e-7, the offset-free solve next
    # to the pole edges); now all build with the mass 1 to 1e-12 (measured 2.9e-15).
    # Over 400 such laws (seeds 0-9, 40 each) all build with the mass 1 to 1e-12
    # (measured 1.8e-13 for ⊞, 2.7e-14 for ⊠); before the exact support of a
    # discrete ⊠ (section 14.28) two ⊠ raised (a gap of 2.2e-7 beside its pole edge
    # and an ordinary gap of 5.6e-4, both missed by the grid:
    # tests/test_discrete_product.py).
    for a, b, mul in _campaign(3, 12):
        law = freeattn.free_multiplicative(a, b) if mul else freeattn.free_additive(a, b)
        assert abs(law.total_mass() - 1.0) <= 1e-12


#: Next to two pole edges facing each other across a gap of width ``gap`` (scale
#: ``scale`` of the law), the equations' atom differences keep ~ eps scale / gap of
#: the density (theory section 14.27): the tolerance is 4 times that, 1.8e-5 at the
#: gap 1e-10 of the close_edges case (measured 1.7e-6, 0.39 of eps scale / gap).
CLOSE_EDGE_FACTOR = 4.0


def test_pole_edges_facing_each_other_across_a_narrow_gap_eq_14_32():
    # point_masses([-1 - 1e-10, 1]) ⊞ point_masses([-1, 1]): pole edges at -1e-10 (atoms
    # -1 - 1e-10 and 1) and 0 (atoms 1 and -1), both pairs within the pair tolerance of
    # either edge.  Before: the edge at 0 took the pair of -1e-10 and the build raised
    # ConvergenceError.  Against the 50-digit references of make_pole_edge_references.py:
    # at the outer edges -2 - 1e-10 and 2 within POLE_DENSITY_RTOL (measured 2.2e-16);
    # at the facing edges within CLOSE_EDGE_FACTOR eps scale / gap.
    c = _REF["close_cases"]["close_edges"]
    a, b = freeattn.point_masses(*c["a"]), freeattn.point_masses(*c["b"])
    law = freeattn.free_additive(a, b)
    (lo1, hi1), (lo2, hi2) = law.intervals()
    gap, scale = lo2 - hi1, hi2 - lo1
    assert gap == pytest.approx(1e-10, rel=1e-5)
    pairs = {m.edge: (m.oa.atom, m.ob.atom) for m in law._pole_edges()}
    assert pairs[0.0] == (1.0, -1.0) and pairs[hi1] == (-1.0 - 1e-10, 1.0)
    x = np.array([float(p[0]) for p in c["points"]])
    ref = np.array([float(p[1]) for p in c["points"]])
    err = np.abs(law._density(x) / ref - 1.0)
    facing = (x > hi1 - 0.5) & (x < lo2 + 0.5)
    assert np.max(err[~facing]) <= POLE_DENSITY_RTOL
    assert np.max(err[facing]) <= CLOSE_EDGE_FACTOR * EPS * scale / gap
    # measured 1.5e-14 (the mass check of the build is mass_atol = 1e-11)
    assert abs(law.total_mass() - 1.0) <= 1e-13


@pytest.mark.parametrize("gap", [3e-11, 1e-10, 3e-10, 1e-9])
def test_the_facing_pole_edges_build_at_every_gap(gap):
    # the gaps at which the build raised (the pair's choice, then the sqrt scaling of
    # the reference point, eq. (14.31)); measured mass errors 9.3e-15 ... 3.9e-14
    law = freeattn.free_additive(freeattn.point_masses([-1.0 - gap, 1.0], [0.5, 0.5]),
                                 freeattn.point_masses([-1.0, 1.0], [0.5, 0.5]))
    assert len(law.intervals()) == 2
    assert abs(law.total_mass() - 1.0) <= 1e-13


def test_the_continuation_ladder_tracks_the_branch_eq_14_31():
    # theory section 14.27: from reach towards the facing pole edge at 0 (gap 1e-10)
    # every rung of the ladder is on the Stieltjes branch (Im s_a > 0) and the
    # exponent of s_a ~ delta**p tends to 1/2 below the gap's width (measured
    # 0.5000 between the last two rungs at 2e-17 and 2e-19)
    law = freeattn.free_additive(freeattn.point_masses([-1.0 - 1e-10, 1.0], [0.5, 0.5]),
                                 freeattn.point_masses([-1.0, 1.0], [0.5, 0.5]))
    model = next(m for m in law._pole_edges() if m.edge == 0.0)
    rungs = model._ladder_to(1e-18)
    d = np.array([r[0] for r in rungs])
    s = np.array([r[1] for r in rungs])
    assert np.all(s.imag > 0) and np.all(np.diff(d) < 0) and d[-1] <= 1e-18
    p = np.log(abs(s[-1] / s[-2])) / np.log(d[-1] / d[-2])
    assert p == pytest.approx(0.5, abs=1e-3)


def test_random_facing_pole_edges_build():
    # 40 random ⊞ and ⊠ of two-atom laws with masses 1/2 (every pair of atoms a pole
    # pair), atoms on a grid with one of them moved by a relative 1e-13 ... 1e-5
    # (numpy.random.default_rng(1)): pole edges facing each other across gaps down to
    # 1e-13 of the scale.  Before the nearest pair and the ladder of theory section
    # 14.27, 6 of these 40 raised (10 of 200 over the seeds 0-4); now all build with
    # the mass within 1e-12 (measured 1.3e-13).
    rng = np.random.default_rng(1)
    for _ in range(40):
        mul = bool(rng.integers(2))
        grid = np.arange(1, 6) if mul else np.arange(-3, 4)
        a = np.sort(rng.choice(grid, 2, replace=False)).astype(float)
        b = np.sort(rng.choice(grid, 2, replace=False)).astype(float)
        a[rng.integers(2)] *= 1 + 10.0 ** rng.uniform(-13, -5) * rng.choice([-1, 1])
        pa, pb = freeattn.point_masses(a, [0.5, 0.5]), freeattn.point_masses(b, [0.5, 0.5])
        law = freeattn.free_multiplicative(pa, pb) if mul else freeattn.free_additive(pa, pb)
        assert abs(law.total_mass() - 1.0) <= 1e-12, (mul, a, b)
