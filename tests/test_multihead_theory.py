"""Checks of theory/09_multihead.md: S-transform algebra (sympy), moments, and the
mpmath references of tests/reference/make_multihead_references.py.

The references (40 digits, written by that script) hold every multi-head law
computed twice, by the S-transform polynomial and by the nested fixed point;
the tests below check what the theory says about them (atoms, means, variance
ratios, sharing, the head-average law) and that the two formulations agree.
"""

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp

import freeattn

REFERENCE = json.loads((Path(__file__).parent / "reference"
                        / "multihead_references.json").read_text())
MULTIHEAD = REFERENCE["multihead"]
HEAD_AVERAGE = REFERENCE["head_average"]

w, z = sp.symbols("w z")


@pytest.fixture(autouse=True)
def _reference_precision():
    """The references hold 40-digit decimals: read and compare them at 45 digits."""
    with mpmath.workdps(45):
        yield


def _moments_to_s(moments, order):
    """S-transform series (to ``w**(order-1)``) of a law with the given moments."""
    psi = sum(m * z ** (k + 1) for k, m in enumerate(moments[:order]))
    chi = _inverse(psi, z, w, order)
    return sp.expand(sp.series(chi * (1 + w) / w, w, 0, order).removeO())


def _s_to_moments(s_series, order):
    chi = sp.expand(sp.series(s_series * w / (1 + w), w, 0, order + 1).removeO())
    psi = _inverse(chi, w, z, order)
    return [sp.expand(psi.coeff(z, k)) for k in range(1, order + 1)]


def _inverse(f, var, new, order):
    coeffs = [f.coeff(var, k) for k in range(order + 1)]
    unknowns = sp.symbols(f"c1:{order + 1}")
    g = sum(u * new ** (k + 1) for k, u in enumerate(unknowns))
    comp = sp.expand(sum(coeffs[k] * g ** k for k in range(1, order + 1)))
    sol = {}
    for k in range(1, order + 1):
        eq = comp.coeff(new, k).subs(sol) - (1 if k == 1 else 0)
        sol[unknowns[k - 1]] = sp.solve(eq, unknowns[k - 1])[0]
    return sum(sol[u] * new ** (k + 1) for k, u in enumerate(unknowns))


def _free_moments(kappa, order):
    """Moments from free cumulants (theory eq. (5.9))."""
    m = [sp.Integer(1)]
    for n in range(1, order + 1):
        def comp(total, parts):
            if parts == 0:
                return sp.Integer(1) if total == 0 else sp.Integer(0)
            return sum(m[i] * comp(total - i, parts - 1) for i in range(total + 1))
        m.append(sp.expand(sum(kappa[s] * comp(n - s, s) for s in range(1, n + 1))))
    return m[1:]


def _compound_poisson_moments(moments, c, lam, order):
    """Moments of pi(c mu, lam) from its free cumulants lam c^k m_k(mu) (eq. (9.4))."""
    kappa = [None] + [lam * c ** k * moments[k - 1] for k in range(1, order + 1)]
    return _free_moments(kappa, order)


ORDER = 4
MU = sp.symbols("mu1:5", positive=True)


# ---------------------------------------------------------------- S-transforms


def test_s_transform_of_compound_poisson():
    """eq. (9.10): S of pi(c mu, lam) is S_mu(w/lam) / (c (lam + w)), for a generic law
    mu given by its first four moments (free cumulants of eq. (9.4))."""
    c, lam = sp.symbols("c lam", positive=True)
    target = _compound_poisson_moments(list(MU), c, lam, ORDER)
    s_mu = _moments_to_s(list(MU), ORDER)
    s_pi = sp.series(s_mu.subs(w, w / lam) / (c * (lam + w)), w, 0, ORDER).removeO()
    got = _s_to_moments(s_pi, ORDER)
    for a, b in zip(got, target):
        assert sp.simplify(a - b) == 0


def test_s_transform_of_marchenko_pastur():
    """eq. (9.10): S_MP(v, c)(w) = 1/(v (1 + c w)); MP moments are Narayana (eq. (5.10))."""
    v, c = sp.symbols("v c", positive=True)
    narayana = [sum(c ** r / (r + 1) * sp.binomial(j, r) * sp.binomial(j - 1, r)
                    for r in range(j)) * v ** j for j in range(1, ORDER + 1)]
    got = _s_to_moments(sp.series(1 / (v * (1 + c * w)), w, 0, ORDER).removeO(), ORDER)
    for a, b in zip(got, narayana):
        assert sp.simplify(a - b) == 0


def _chain_s(levels, s_h):
    """Compose eq. (9.10) over the levels: returns S_F(w) as an expression."""
    def compose(k, arg):
        if k < 0:
            return s_h(arg)
        c, lam = levels[k]
        return compose(k - 1, arg / lam) / (c * (lam + arg))
    return compose(len(levels) - 1, w)


def test_s_transform_of_the_multihead_chain():
    """eq. (9.11): composing eqs. (9.7)-(9.9) through (9.10) gives
    S_F(w) = S_H(w/h) / ((gamma_O + w)(1 + w/gamma_V)(1 + w/h))."""
    h, gv, go = sp.symbols("h gamma_V gamma_O", positive=True)
    s_h = sp.Function("S_H")
    levels = [(gv / h, h / gv), (go / gv, gv / go), (1, go)]
    composed = _chain_s(levels, s_h)
    closed = s_h(w / h) / ((go + w) * (1 + w / gv) * (1 + w / h))
    assert sp.simplify(composed - closed) == 0


def test_single_free_multiplicative_convolution():
    """eq. (9.12): lifting F to dimension h n turns eq. (9.11) into
    S_H * S_MP(1, h) * S_MP(1, h/gamma_V) * S_MP(gamma_O/h, h/gamma_O)."""
    h, gv, go = sp.symbols("h gamma_V gamma_O", positive=True)
    s_h = sp.Function("S_H")

    def s_f(arg):
        return s_h(arg / h) / ((go + arg) * (1 + arg / gv) * (1 + arg / h))

    # comp_t nu has S_nu(w/t)(1 + w)/(t + w); F_up = comp_{1/h} F
    t = 1 / h
    lifted = s_f(w / t) * (1 + w) / (t + w)

    def s_mp(v, c):
        return 1 / (v * (1 + c * w))

    product = s_h(w) * s_mp(1, h) * s_mp(1, h / gv) * s_mp(go / h, h / go)
    assert sp.simplify(lifted - product) == 0


def test_companion_commutes_with_sample_covariance():
    """eq. (9.13): SC(comp_t mu, c) = comp_t SC(mu, c t), with SC(mu, c) = mu ⊠ MP(1, c);
    and the chain (9.13) has the S-transform (9.11)."""
    t, c = sp.symbols("t c", positive=True)
    s_mu = sp.Function("S_mu")

    def comp(s, tt):
        return lambda arg: s(arg / tt) * (1 + arg) / (tt + arg)

    def sc(s, cc):
        return lambda arg: s(arg) / (1 + cc * arg)

    lhs = sc(comp(s_mu, t), c)(w)
    rhs = comp(sc(s_mu, c * t), t)(w)
    assert sp.simplify(lhs - rhs) == 0
    h, gv, go = sp.symbols("h gamma_V gamma_O", positive=True)
    s_h = sp.Function("S_H")
    inner = sc(sc(sc(s_h, h / gv), h / go), h)
    scaled = lambda arg: inner(arg) / (go / h)  # noqa: E731 - S of (gamma_O/h) L
    chain = comp(scaled, h)(w)
    closed = s_h(w / h) / ((go + w) * (1 + w / gv) * (1 + w / h))
    assert sp.simplify(chain - closed) == 0


def test_level_equation_reduces_to_marchenko_pastur():
    """eq. (9.5) with mu = delta_1, c = 1: pi(delta_1, lam) = MP(lam, 1/lam) (both have
    S = 1/(lam + w), eq. (9.10)), so freeattn.marchenko_pastur's Stieltjes transform
    solves the level equation, on the branch Im g < 0."""
    lam, u = 0.4, 2.0 + 0.5j
    # pi(delta_1, lam) = MP(lam, 1/lam) (eq. (9.10): both have S = 1/(lam + w))
    g = complex(freeattn.marchenko_pastur(lam, 1 / lam).stieltjes(u))
    phi = (1 - lam) / g + lam / g ** 2 * (1 / (1 / g - 1))
    assert abs(phi - u) < 1e-12
    assert g.imag < 0


def _reference_module():
    from conftest import load_script
    return load_script("tests/reference/make_multihead_references.py")


def test_algebraic_curve_and_its_parametrization():
    """eq. (9.15): the reference script's polynomial P(G, x) from eq. (9.11) has degree 8
    for the issue's chain and its rational parametrization lies on it (the constructor
    checks P(G(y), x(y)) = 0 in exact rationals); for one level with ratio 1 (the head
    average) P is the single-head quartic (5.6) with c = 1, G = -m."""
    ref = _reference_module()
    lam_k, levels = ref.multihead_chain(4, "0.5", "0.5", "1")
    assert ref.STransformCurve(lam_k, levels).degree == 8
    lam_k, levels = ref.head_average_chain(4, "0.5", 4)
    curve = ref.STransformCurve(lam_k, levels)
    assert curve.degree == 4
    G, x, a, b = curve.symbols
    lam = sp.Rational(lam_k)
    quartic = (lam * a * b * x ** 2 * G ** 4 - lam * b * x ** 2 * G ** 3
               - (a - b * (lam - 1)) * x * G ** 2 + x * G - 1)
    for xv, av, bv in [(sp.Rational(3, 2), sp.Rational(1, 3), sp.Rational(2, 5)),
                       (sp.Rational(-1, 7), sp.Rational(5, 4), sp.Rational(3, 8))]:
        ours = [c.subs({x: xv, a: av, b: bv}) for c in curve.coefficients]
        theirs = sp.Poly(quartic.subs({x: xv, a: av, b: bv}), G).all_coeffs()
        ratio = [o / t for o, t in zip(ours, theirs) if t != 0]
        assert len(ours) == len(theirs) and all(r == ratio[0] for r in ratio)


# ---------------------------------------------------------------- moments


def _chain_moments(heads, gamma_k, gamma_v, gamma_o, order=2):
    th1, th2 = sp.symbols("theta1 theta2", positive=True)
    lam = heads / gamma_k
    a, b = th1 - th2, th2
    narayana = [sum(lam ** r / (r + 1) * sp.binomial(j, r) * sp.binomial(j - 1, r)
                    for r in range(j)) for j in range(1, order + 1)]
    mh = [sp.expand(sum(sp.binomial(k, j) * a ** (k - j) * b ** j * ([1] + narayana)[j]
                        for j in range(k + 1))) for k in range(1, order + 1)]
    m = mh
    for c, l in [(gamma_v / heads, heads / gamma_v), (gamma_o / gamma_v, gamma_v / gamma_o),
                 (1, gamma_o)]:
        m = _compound_poisson_moments(m, c, l, order)
    return m, th1, th2


def test_mean_and_variance_ratio_symbolic():
    """eqs. (9.16), (9.17), and the nesting (9.6)-(9.9): with symbolic h and ratios,
    m1 = gamma_O theta1 and m2/m1^2 - 1 = 1/h + 1/gamma_V + 1/gamma_O + theta2^2/(gamma_K theta1^2),
    through the levels of eqs. (9.6), (9.7), (9.8) and (9.9)."""
    h, gk, gv, go = sp.symbols("h gamma_K gamma_V gamma_O", positive=True)
    (m1, m2), th1, th2 = _chain_moments(h, gk, gv, go)
    assert sp.simplify(m1 - go * th1) == 0
    ratio = 1 / h + 1 / gv + 1 / go + th2 ** 2 / (gk * th1 ** 2)
    assert sp.simplify(m2 / m1 ** 2 - 1 - ratio) == 0


@pytest.mark.parametrize("case", MULTIHEAD, ids=lambda c: c["name"])
def test_reference_moments_match_closed_forms(case):
    """eqs. (9.16), (9.17) against the reference's exact moments (40 digits; the
    script derives m1-m4 two ways and asserts they agree)."""
    m = [mpmath.mpf(v) for v in case["moments"]]
    th1, th2 = mpmath.mpf(case["theta1"]), mpmath.mpf(case["theta2"])
    h, gk, gv, go = (mpmath.mpf(case[k]) for k in ("heads", "gamma_k", "gamma_v", "gamma_o"))
    assert abs(m[0] - go * th1) < mpmath.mpf(10) ** -35 * m[0]
    ratio = 1 / h + 1 / gv + 1 / go + th2 ** 2 / (gk * th1 ** 2)
    assert abs(m[1] / m[0] ** 2 - 1 - ratio) < mpmath.mpf(10) ** -35


# ---------------------------------------------------------------- the references


@pytest.mark.parametrize("case", MULTIHEAD + HEAD_AVERAGE, ids=lambda c: c["name"])
def test_reference_formulations_agree(case):
    """eqs. (9.5)-(9.9) (nested fixed point) against eqs. (9.11), (9.15) (S-transform
    polynomial): densities, Stieltjes values and edges agree to 1e-30 relative."""
    for row in case["density"]:
        fa, fb = mpmath.mpf(row[1]), mpmath.mpf(row[2])
        assert abs(fa - fb) <= mpmath.mpf(10) ** -30 * abs(fa)
        assert fa > 0
    edges_a = [e for band in case["intervals"] for e in band]
    for ea, eb in zip(edges_a, case["edges_nested"]):
        ea, eb = mpmath.mpf(ea), mpmath.mpf(eb)
        assert abs(ea - eb) <= mpmath.mpf(10) ** -30 * max(abs(ea), 1)
    for key in ("edge", "density", "stieltjes"):
        assert float(case["agreement"][key]) < 1e-30


@pytest.mark.parametrize("case", MULTIHEAD + HEAD_AVERAGE, ids=lambda c: c["name"])
def test_reference_atom_and_masses(case):
    """eq. (9.14): atom 1 - min(1, gamma_V, gamma_O) (0 for the head average); the
    reference's Re x G(x) at x = 1e-12 i * edge reproduces it (to O(1e-24) below a soft
    lower edge, O(|x|^(1/3)) at a hard edge), and atom plus the band masses (cosine series,
    or Gauss-Legendre quadrature after a substitution that makes the x^(-k/(k+1)) of
    eq. (9.22) analytic, at 20 digits) is 1."""
    if "gamma_v" in case:
        atom = 1 - min(1.0, float(case["gamma_v"]), float(case["gamma_o"]))
    else:
        atom = 0.0
    assert float(case["atom"]) == pytest.approx(atom, abs=1e-30)
    # near a hard edge at 0 the density ~ x^(-2/3) leaves x G(x) ~ |x|^(1/3) = 1e-4
    tol = 1e-3 if case["hard_edge_at_zero"] else 1e-18
    assert float(case["atom_from_stieltjes"]) == pytest.approx(atom, abs=tol)
    assert abs(float(case["mass_defect"])) < 1e-14


def test_value_and_output_ratios_swap_to_a_scaling():
    """eq. (9.11): swapping gamma_V and gamma_O multiplies S_F by gamma_O/gamma_V, so the
    reference law at (gamma_V, gamma_O) = (1, 0.5) is that at (0.5, 1) scaled by 1/2:
    edges halve and densities double (40-digit references, agreement to 1e-35)."""
    a, b = (next(c for c in MULTIHEAD if c["name"] == name)
            for name in ("mc_issue", "gamma_o_below_1"))
    assert (a["gamma_v"], a["gamma_o"]) == (b["gamma_o"], b["gamma_v"])
    for band_a, band_b in zip(a["intervals"], b["intervals"]):
        for ea, eb in zip(band_a, band_b):
            assert abs(mpmath.mpf(ea) / 2 - mpmath.mpf(eb)) < mpmath.mpf(10) ** -35
    for ra, rb in zip(a["density"], b["density"]):
        assert abs(mpmath.mpf(ra[0]) / 2 - mpmath.mpf(rb[0])) < mpmath.mpf(10) ** -35
        assert abs(2 * mpmath.mpf(ra[1]) - mpmath.mpf(rb[1])) < mpmath.mpf(10) ** -35 * mpmath.mpf(rb[1])


@pytest.mark.parametrize("case", HEAD_AVERAGE, ids=lambda c: c["name"])
def test_head_average_is_single_head_law(case):
    """eq. (9.19): the head-average law is the single-head law at
    gamma_eff = kv_groups gamma_K / heads (freeattn.attention_law, itself checked against
    tests/reference/law_references.json to 1e-12): densities and upper edge of the
    40-digit reference agree with it to 1e-10 relative."""
    gamma_eff = int(case["kv_groups"]) * float(case["gamma_k"]) / int(case["heads"])
    assert float(sp.Rational(case["gamma_effective"])) == pytest.approx(gamma_eff, rel=1e-15)
    law = freeattn.attention_law(float(case["beta"]), gamma_eff).squared()
    x = np.array([float(r[0]) for r in case["density"]])
    ref = np.array([float(r[1]) for r in case["density"]])
    np.testing.assert_allclose(law.pdf(x), ref, rtol=1e-10)
    assert law.support()[1] == pytest.approx(float(case["intervals"][-1][1]), rel=1e-12)


def test_head_average_ks_between_sharing_cases():
    """eq. (9.20): Kolmogorov distance between the head-average laws of independent
    (gamma_eff = 0.5) and shared (0.125) keys at beta = 1, h = 4, gamma_K = 0.5:
    0.1288... from the reference (20-digit quadrature), recomputed here from
    freeattn.attention_law's CDF on a grid around the reference's crossing point."""
    entry = REFERENCE["head_average_ks"][0]
    assert entry["laws"] == ["mc_issue_independent", "mc_issue_shared"]
    ks = float(entry["ks"])
    assert ks == pytest.approx(0.1288, abs=5e-4)
    lo = freeattn.attention_law(1.0, 0.5).squared()
    hi = freeattn.attention_law(1.0, 0.125).squared()
    at = float(entry["at"])
    x = np.linspace(0.8 * at, 1.2 * at, 4001)
    got = np.max(np.abs(lo.cdf(x) - hi.cdf(x)))
    assert got == pytest.approx(ks, abs=1e-9)


@pytest.mark.parametrize("case", MULTIHEAD, ids=lambda c: c["name"])
def test_reference_stieltjes_is_a_stieltjes_transform(case):
    """eqs. (9.4), (9.9): at the recorded points Im z > 0 the reference G has Im G < 0 and
    |G - 1/z| is below (m1 + sqrt(m2))/|z|^2-ish bounds (G ~ 1/z + m1/z^2)."""
    m1, m2 = float(case["moments"][0]), float(case["moments"][1])
    for re_z, im_z, re_g, im_g in case["stieltjes"]:
        zz = complex(float(re_z), float(im_z))
        g = complex(float(re_g), float(im_g))
        assert g.imag < 0
        # |G(z)| <= 1/dist(z, support) <= 1/Im z
        assert abs(g) <= 1 / zz.imag * (1 + 1e-12)
        if abs(zz) > 3 * float(case["intervals"][-1][1]):
            assert abs(g - 1 / zz - m1 / zz ** 2) < 4 * m2 / abs(zz) ** 3
