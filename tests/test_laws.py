"""Tests of the public spectral laws (freeattn.attention._laws) against closed forms.

Tolerances are quoted beside each check with the source of the expected value.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import freeattn
from freeattn import (ConvergenceError, attention_law, linearization_threshold, marchenko_pastur,
                      operator_norm)


def test_marchenko_pastur_density_closed_form():
    """MP density sqrt((x+ - x)(x - x-))/(2 pi v c x), theory eq. (5.4); rtol 1e-12."""
    for v, c in [(1.0, 1.0), (2.0, 0.3), (0.5, 2.5)]:
        mp = marchenko_pastur(v, c)
        lo, hi = v * (1 - np.sqrt(c)) ** 2, v * (1 + np.sqrt(c)) ** 2
        x = np.linspace(lo, hi, 403)[1:-1]
        exact = np.sqrt((hi - x) * (x - lo)) / (2 * np.pi * v * c * x)
        np.testing.assert_allclose(mp.pdf(x), exact, rtol=1e-12)
        assert mp.atom == pytest.approx(max(0.0, 1 - 1 / c), abs=1e-15)


def test_marchenko_pastur_fast_path_matches_the_silverstein_solver():
    """The MP pdf uses the closed form eq. (5.4); the general engine solving
    eq. (5.3) for H = delta_1 (sample_covariance of one atom, the S-level of
    theory eq. (8.9)) must give the same density and edges (rtol 1e-11: the
    engine's root loses digits near the square-root edges)."""
    for c in (0.3, 1.0, 2.5):
        engine = freeattn.sample_covariance(freeattn.point_masses([1.0]), c)
        (lo, hi), = engine.intervals()
        assert (lo, hi) == pytest.approx(marchenko_pastur(1.0, c).intervals()[0], rel=1e-14,
                                         abs=1e-300)
        x = np.linspace(lo, hi, 301)[1:-1]
        np.testing.assert_allclose(marchenko_pastur(1.0, c).pdf(x), engine._density(x),
                                   rtol=1e-11)
        assert engine.atom == pytest.approx(max(0.0, 1 - 1 / c), abs=1e-15)


def test_quarter_circle_beta_large():
    """At beta = 4 (alpha**2/theta1 = 1 - 2e-6) s/sqrt(theta1) is quarter-circle
    sqrt(4 - s**2)/pi (MP takes over, theory eq. (6.12)); atol 1e-4 set by the
    beta**2/theta1 = 1.8e-6 perturbation."""
    law = attention_law(4.0)
    scale = np.sqrt(freeattn.linear_coefficients(4.0).theta1)
    s = np.linspace(0.0, 1.99, 200)
    np.testing.assert_allclose(law.pdf(s * scale) * scale, np.sqrt(4 - s * s) / np.pi, atol=1e-4)


def test_squared_law_mass_mean_second_moment():
    """Mass 1 (1e-10), m1 = theta1 and m2 = 2 theta1**2 + beta**4/gamma (theory
    eqs. (5.11)-(5.12)) from the density by quadrature of the CDF expansion."""
    for beta, gamma in [(1.0, 1.0), (0.5, 0.1), (2.0, 0.02), (1.0, 50.0)]:
        sq = attention_law(beta, gamma).squared()
        assert sq.cdf(sq.support()[1]) == pytest.approx(1.0, abs=1e-10)
        assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
        theta1 = np.expm1(beta ** 2)
        assert sq.mean() == pytest.approx(theta1, rel=1e-14)
        assert sq.moment(2) == pytest.approx(2 * theta1 ** 2 + beta ** 4 / gamma, rel=1e-13)


def test_operator_norm_exceeds_mp():
    """The true edge is strictly above the MP edge 4 theta1 (theory eq. (6.5))."""
    for beta in (0.5, 1.0, 2.0):
        r = operator_norm(beta)
        assert r.squared_edge > r.mp_squared_edge
        assert r.norm == pytest.approx(np.sqrt(r.squared_edge), rel=1e-15)


# --------------------------------------------------------------------------- #
# Against the independent mpmath references (tests/reference/law_references.json,
# made by tests/reference/make_law_references.py at 40 digits, CDF at 25 digits)
# --------------------------------------------------------------------------- #

REFERENCE = json.loads((Path(__file__).parent / "reference" / "law_references.json").read_text())
REF_CASES = REFERENCE["cases"]
CASE_IDS = [f"beta={c['beta']},gamma={c['gamma']}" for c in REF_CASES]


@pytest.mark.parametrize("case", REF_CASES, ids=CASE_IDS)
def test_intervals_and_edges_against_mpmath_eq_6_4_6_5(case):
    """eq. (6.4) intervals and eq. (6.5) upper edge vs the mpmath critical values
    (40 dps); rtol 1e-12."""
    sq = attention_law(case["beta"], case["gamma"]).squared()
    theta1 = float(case["theta1"])
    ref = np.array(case["intervals"], dtype=float) * theta1
    got = np.array(sq.intervals())
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)
    r = operator_norm(case["beta"], case["gamma"])
    assert r.squared_edge == pytest.approx(ref[-1, 1], rel=1e-12)


@pytest.mark.parametrize("case", REF_CASES, ids=CASE_IDS)
def test_density_against_mpmath_eq_5_3_6_7(case):
    """Density (eq. (5.3) solved via the panels of eq. (6.7) plus a Newton step on
    eq. (5.6)) vs the mpmath transcendental solve: rtol 1e-12 at interior points
    (fractions 0.05-0.95 of each interval; measured <= 2.4e-14 on both the direct
    and the panel path) and rtol 1e-11 at 0.001 and 0.999 (measured <= 5.8e-13:
    the near-double root at a soft edge loses digits; 5.7e-12 at 0.999 of the band
    below the gap of relative width 3.7e-10 at beta = 1e-3, gamma = 0.99756)."""
    sq = attention_law(case["beta"], case["gamma"]).squared()
    theta1 = float(case["theta1"])
    pts = np.array(case["density"], dtype=float)
    x, ref = pts[:, 0], pts[:, 1]
    got = sq.pdf(x * theta1) * theta1
    per = len(pts) // len(case["intervals"])
    frac_index = np.arange(len(pts)) % per
    interior = (frac_index > 0) & (frac_index < per - 1)
    np.testing.assert_allclose(got[interior], ref[interior], rtol=1e-12)
    np.testing.assert_allclose(got[~interior], ref[~interior], rtol=1e-11)


@pytest.mark.parametrize("case", [c for c in REF_CASES if c["cdf"]],
                         ids=[i for c, i in zip(REF_CASES, CASE_IDS) if c["cdf"]])
def test_cdf_against_mpmath_contour_integral_eq_6_8(case):
    """CDF (eq. (6.8)) vs the mpmath contour integral of m (25 dps); atol 1e-12
    (measured <= 1.2e-14)."""
    sq = attention_law(case["beta"], case["gamma"]).squared()
    theta1 = float(case["theta1"])
    for x, ref in np.array(case["cdf"], dtype=float):
        assert sq.cdf(x * theta1) == pytest.approx(ref, abs=1e-12)


# --------------------------------------------------------------------------- #
# Closed forms and limits
# --------------------------------------------------------------------------- #

def test_fuss_catalan_limit_eq_5_14_eq_6_11():
    """beta -> 0 at gamma = 1: the squared law / beta^2 tends to the Fuss-Catalan
    law (eq. (5.14)) with edge 27/4 (eq. (6.11)); at beta = 1e-3 relative
    corrections are O(beta^2) = 1e-6.  Density checked against the
    Penson-Zyczkowski closed form of the Fuss-Catalan (s = 2) density (rtol 1e-5,
    measured 1e-6, away from 0 where the alpha^2 crossover lives)."""
    beta = 1e-3
    sq = attention_law(beta).squared()
    assert sq.support()[1] / beta ** 2 == pytest.approx(27 / 4, rel=1e-5)
    x = np.array([0.5, 1.0, 2.0, 4.0, 6.0])
    # Penson & Zyczkowski, Phys. Rev. E 83, 061118 (2011): Fuss-Catalan density, s = 2.
    r = np.sqrt(81 - 12 * x)
    fc = (2 ** (1 / 3) * np.sqrt(3) / (12 * np.pi)
          * (2 ** (1 / 3) * (27 + 3 * r) ** (2 / 3) - 6 * x ** (1 / 3))
          / (x ** (2 / 3) * (27 + 3 * r) ** (1 / 3)))
    np.testing.assert_allclose(sq.pdf(x * beta ** 2) * beta ** 2, fc, rtol=1e-5)
    # Fuss-Catalan moments 1, 3, 12, 55 (exact).
    for k, fcm in zip(range(1, 5), (1, 3, 12, 55)):
        assert sq.moment(k) / beta ** (2 * k) == pytest.approx(fcm, rel=1e-5)
    assert np.all(np.diff(sq.cdf(x * beta ** 2)) > 0)


def test_small_beta_atom_becomes_an_interval_eq_5_14():
    """eq. (5.14) with gamma < 1: the atom 1 - gamma of the beta -> 0 limit is, for
    beta > 0, a separate interval next to 0 at the scale alpha^2 ~ beta^4/2 that
    carries mass 1 - gamma (the population atom at alpha^2 separates exactly;
    atol 1e-12), down to beta = 1e-8 (scales 1e-32 and 1e-16 in one law)."""
    for beta in (1e-8, 1e-5, 1e-2):
        sq = attention_law(beta, 0.3).squared()
        iv = sq.intervals()
        assert len(iv) == 2 and iv[0][0] == 0.0
        assert iv[0][1] < 1e-3 * iv[1][0]
        assert sq.cdf(iv[0][1]) == pytest.approx(0.7, abs=1e-12)
        assert sq.total_mass() == pytest.approx(1.0, abs=1e-12)
        assert sq.moment(2) == pytest.approx(2 * sq.mean() ** 2 + beta ** 4 / 0.3, rel=1e-13)


def test_mp_takes_over_at_large_beta_eq_5_15_eq_6_12():
    """eq. (5.15)/(6.12): x_max/theta1 -> 4 from above; at beta = 4,
    x_max/theta1 - 4 is O(beta^2/theta1) ~ 1e-6 and positive for every beta."""
    for beta in (0.1, 0.5, 1.0, 2.0, 3.0, 4.0):
        r = operator_norm(beta)
        assert r.squared_edge > r.mp_squared_edge
    r = operator_norm(4.0)
    assert r.squared_edge / r.mp_squared_edge - 1 < 1e-5


def test_singular_value_law_quarter_circle_and_hard_edge_eq_6_6():
    """eq. (6.6): the singular-value density at 0 equals 2/(pi |kappa|) in units of
    sqrt(theta1), and the s-law is continuous there (rtol 1e-6 at s = 1e-7 scale).
    For MP(1, 1) the s-law is the quarter circle sqrt(4 - s^2)/pi (closed form)."""
    law = attention_law(1.0, 0.5)
    scale = np.sqrt(law.squared().variance)
    p0 = law.pdf(0.0)
    assert p0 == pytest.approx(law.pdf(1e-7 * scale), rel=1e-6)
    assert np.isfinite(p0) and p0 > 0
    quarter = freeattn.attention._laws.SingularValueLaw(marchenko_pastur(1.0))
    s = np.array([0.0, 0.5, 1.0, 1.9])
    np.testing.assert_allclose(quarter.pdf(s), np.sqrt(4 - s * s) / np.pi, rtol=1e-12)
    assert quarter.mean() == pytest.approx(8 / (3 * np.pi), rel=1e-12)   # eq. (6.9)


def test_odd_moment_quadrature_eq_6_9():
    """eq. (6.9): E[s] and E[s^3] from the panels equal direct adaptive quadrature
    of the density (scipy quad, rtol 1e-9)."""
    from scipy.integrate import quad

    law = attention_law(0.5, 0.1)
    for k in (1, 3):
        direct = sum(quad(lambda s: s ** k * law.pdf(s), lo, hi, limit=400, epsabs=0,
                          epsrel=1e-12)[0] for lo, hi in law.intervals())
        assert law.moment(k) == pytest.approx(direct, rel=1e-9)


def test_linearization_threshold_eq_6_10_eq_6_13():
    """eq. (6.10): at beta_*, squared_edge = n (rtol 1e-11); eq. (6.13):
    beta_* is slightly below sqrt(log(1 + n/4)) (within 1e-3 for n >= 1000)."""
    for n in (1000, 10 ** 5):
        t = linearization_threshold(n)
        assert operator_norm(t.beta).squared_edge == pytest.approx(n, rel=1e-11)
        approx = np.sqrt(np.log1p(n / 4))
        assert approx - 1e-3 < t.beta < approx
        assert t.norm == pytest.approx(np.sqrt(n))


# --------------------------------------------------------------------------- #
# Properties (hypothesis)
# --------------------------------------------------------------------------- #

PARAMS = st.sampled_from([(1.0, 1.0), (0.5, 0.1), (2.0, 0.02), (0.3, 0.5), (1.0, 50.0)])


@settings(max_examples=25, deadline=None)
@given(PARAMS, st.floats(0.0, 1.2))
def test_density_nonnegative_and_cdf_monotone(params, frac):
    """Density >= 0 and CDF non-decreasing in [0, 1] (any law, any point)."""
    sq = attention_law(*params).squared()
    top = sq.support()[1]
    x = np.array([frac * top, frac * top * (1 + 1e-3) + 1e-12])
    assert np.all(sq.pdf(x) >= 0)
    f = sq.cdf(x)
    assert 0 <= f[0] <= f[1] <= 1


@settings(max_examples=25, deadline=None)
@given(PARAMS, st.floats(1e-6, 1 - 1e-6))
def test_ppf_inverts_cdf(params, q):
    """cdf(ppf(q)) = q (atol 1e-12) and ppf(cdf(x)) = x inside the support (rtol 1e-9)."""
    law = attention_law(*params)
    sq = law.squared()
    x = sq.ppf(q)
    assert sq.cdf(x) == pytest.approx(q, abs=1e-12)
    if sq.pdf(x) * (sq.support()[1]) > 1e-3:
        assert sq.ppf(sq.cdf(x)) == pytest.approx(x, rel=1e-9)
    assert law.ppf(q) == pytest.approx(np.sqrt(x), rel=1e-15)


@settings(max_examples=25, deadline=None)
@given(PARAMS, st.floats(-3.0, 3.0), st.floats(1e-3, 3.0))
def test_stieltjes_upper_half_plane(params, re, im):
    """Im G(z) < 0 for Im z > 0 (convention G = int dnu/(z - x)), for both laws."""
    law = attention_law(*params)
    scale = law.squared().support()[1]
    zz = scale * complex(re, im)
    assert law.squared().stieltjes(zz).imag < 0
    assert law.stieltjes(np.sqrt(scale) * complex(re, im)).imag < 0


@pytest.mark.parametrize("params", [(1.0, 1.0), (0.5, 0.1)])
def test_stieltjes_at_infinity_and_mass(params):
    """G(z) ~ 1/z + m1/z^2 at infinity (rtol 1e-6 at |z| = 1e6 x support) and
    total mass 1 to 1e-10, for the squared and the singular-value laws."""
    law = attention_law(*params)
    sq = law.squared()
    for lw in (sq, law):
        zz = 1e6 * lw.support()[1] * (1 + 1j)
        assert lw.stieltjes(zz) * zz == pytest.approx(1 + lw.mean() / zz, rel=1e-9)
    assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
    assert law.cdf(law.support()[1]) == pytest.approx(1.0, abs=1e-10)


# --------------------------------------------------------------------------- #
# Monte Carlo of the linear model (theory eq. (1.4))
# --------------------------------------------------------------------------- #

def _kolmogorov(sample, cdf):
    x = np.sort(sample)
    f = cdf(x)
    k = np.arange(1, x.size + 1)
    return max(np.max(k / x.size - f), np.max(f - (k - 1) / x.size))


@pytest.mark.statistical
def test_linear_model_monte_carlo_eq_5_1():
    """eq. (5.1): squared singular values of Y_lin = (beta S + alpha W)/sqrt(n),
    n = 400, d = 100 (gamma = 0.25), beta = 1, 3 seeded draws pooled: the
    Kolmogorov distance to the law is < 0.02 (finite-n fluctuations of a
    spectrum are O(1/n); measured 0.0035), while the distance to the
    same-variance MP law is > 0.08 (measured 0.14): the test fails if the law
    were Marchenko-Pastur."""
    beta, gamma, n = 1.0, 0.25, 400
    d = int(gamma * n)
    co = freeattn.linear_coefficients(beta)
    rng = np.random.default_rng(20261129)
    eig = []
    for _ in range(3):
        q = rng.standard_normal((n, d))
        k = rng.standard_normal((n, d))
        w = rng.standard_normal((n, n))
        y = (beta * q @ k.T / np.sqrt(d) + co.alpha * w) / np.sqrt(n)
        eig.append(np.linalg.svd(y, compute_uv=False) ** 2)
    eig = np.concatenate(eig)
    sq = attention_law(beta, gamma).squared()
    dist = _kolmogorov(eig, sq.cdf)
    dist_mp = _kolmogorov(eig, marchenko_pastur(co.theta1).cdf)
    assert dist < 0.02
    assert dist_mp > 0.08


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("beta, gamma, exc, match", [
    (0.0, 1.0, ValueError, "beta"),
    (-1.0, 1.0, ValueError, "beta"),
    (float("nan"), 1.0, ValueError, "beta"),
    (5.0, 1.0, ValueError, "beta"),
    (30.0, 1.0, ValueError, "beta"),
    (1e-9, 1.0, ValueError, r"beta must be in \[1e-08, 4.0\]"),
    (1e-200, 0.5, ValueError, "beta"),
    (1j, 1.0, TypeError, "beta"),
    ("1", 1.0, TypeError, "beta"),
    (1.0, 0.0, ValueError, "gamma"),
    (1.0, -2.0, ValueError, "gamma"),
    (1.0, float("nan"), ValueError, "gamma"),
    (1.0, 2e4, ValueError, "gamma"),
    (1.0, 5e-5, ValueError, "gamma"),
    (1.0, 1e308, ValueError, "gamma"),
    (-1.0, 1.0, ValueError, r"beta must be in \[1e-08, 4.0\]"),
])
def test_bad_law_arguments(beta, gamma, exc, match):
    """Bad beta/gamma raise naming the argument (issue 3 ranges)."""
    with pytest.raises(exc, match=match):
        attention_law(beta, gamma)
    with pytest.raises(exc, match=match):
        operator_norm(beta, gamma)


@pytest.mark.parametrize("gamma", [0.02, 0.5, 1.0, 50.0])
def test_smallest_beta_keeps_every_interval(gamma):
    """At beta = MIN_LAW_BETA = 1e-8 the law is its beta -> 0 limit (theory eq. (6.11)):
    total mass 1 (1e-10) and, in units of theta1, the same intervals as at beta = 1e-6
    (the O(beta**2) difference is 1e-12, rtol 1e-9).  Regression: at beta ~ 1e-12 the
    score-carrying interval at gamma = 0.02 used to vanish without an error."""
    def scaled(beta):
        sq = attention_law(beta, gamma).squared()
        theta1 = np.expm1(beta ** 2)
        assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
        return np.array(sq.intervals()) / theta1
    small, ref = scaled(1e-8), scaled(1e-6)
    assert small.shape == ref.shape
    if gamma < 1:
        # The noise bulk near 0 has width alpha**2/theta1 * const ~ beta**2 (gamma < 1:
        # the population atom at alpha**2), so its edge shrinks by (1e-8/1e-6)**2.
        assert small[0, 1] / ref[0, 1] == pytest.approx(1e-4, rel=1e-6)
        small, ref = small[1:], ref[1:]
    np.testing.assert_allclose(small, ref, rtol=1e-9, atol=1e-12)


def test_singular_value_pdf_vanishes_beyond_the_support():
    """pdf of s is 2 s f(s**2): 0 beyond sqrt(upper edge), including at +inf (not NaN)."""
    law = attention_law(1.0)
    top = np.sqrt(law.squared().support()[1])
    assert law.pdf(np.inf) == 0.0
    np.testing.assert_array_equal(law.pdf([top * 1.01, 1e300]), [0.0, 0.0])


def test_bad_method_arguments():
    """Bad x, q, k, z raise naming the argument; NaN is rejected."""
    law = attention_law(1.0)
    sq = law.squared()
    with pytest.raises(ValueError, match="x"):
        sq.pdf(float("nan"))
    with pytest.raises(TypeError, match="x"):
        sq.cdf("a")
    with pytest.raises(ValueError, match="q"):
        sq.ppf(1.5)
    with pytest.raises(ValueError, match="k"):
        sq.moment(-1)
    with pytest.raises(TypeError, match="k"):
        law.moment(1.5)
    with pytest.raises(ValueError, match="z"):
        sq.stieltjes(1 - 1j)
    with pytest.raises(ValueError, match="z"):
        law.stieltjes(complex(np.nan, 1))
    with pytest.raises(ValueError, match="variance"):
        marchenko_pastur(-1.0)
    with pytest.raises(ValueError, match="ratio"):
        marchenko_pastur(1.0, 0.0)
    with pytest.raises(TypeError, match="n"):
        linearization_threshold(1000.0)
    with pytest.raises(ValueError, match="beyond"):
        linearization_threshold(10 ** 9)
    assert issubclass(ConvergenceError, ArithmeticError)


def test_shapes_preserved():
    """pdf/cdf/ppf keep the input shape; scalars give floats."""
    law = attention_law(1.0)
    x = np.linspace(0.1, 2.5, 12).reshape(3, 4)
    for f in (law.pdf, law.cdf, law.squared().pdf, law.squared().cdf):
        assert f(x).shape == (3, 4)
        assert isinstance(f(1.0), float)
    assert law.ppf(np.full((2, 5), 0.3)).shape == (2, 5)
    assert law.squared().stieltjes(np.full((2, 2), 1 + 1j)).shape == (2, 2)


def test_marchenko_pastur_cdf_with_atom_eq_5_4():
    """eq. (5.4) with c = 2.5: atom 0.6 at 0, CDF = atom + integral of the closed-form
    density (scipy quad, atol 1e-10), ppf(q) = 0 for q <= atom, mean v, var v^2 c."""
    from scipy.integrate import quad

    v, c = 1.5, 2.5
    mp = marchenko_pastur(v, c)
    lo, hi = v * (1 - np.sqrt(c)) ** 2, v * (1 + np.sqrt(c)) ** 2
    assert mp.support() == (0.0, pytest.approx(hi, rel=1e-14))
    assert mp.intervals()[0] == (pytest.approx(lo, rel=1e-14), pytest.approx(hi, rel=1e-14))

    def dens(x):
        return np.sqrt((hi - x) * (x - lo)) / (2 * np.pi * v * c * x)

    for x in (lo + 0.1, 0.5 * (lo + hi), hi - 0.1):
        ref = 0.6 + quad(dens, lo, x, epsabs=1e-13, limit=200)[0]
        assert mp.cdf(x) == pytest.approx(ref, abs=1e-10)
    assert mp.cdf(0.0) == pytest.approx(0.6, abs=1e-15)
    assert mp.cdf(-1e-9) == 0.0
    assert mp.ppf(0.3) == 0.0
    assert mp.mean() == pytest.approx(v, rel=1e-14)
    assert mp.var() == pytest.approx(v * v * c, rel=1e-14)


@pytest.mark.parametrize("beta, gamma", [(0.5, 0.1), (2.0, 0.02), (1e-3, 1.0)])
def test_cdf_monotone_on_dense_grid_eq_6_8(beta, gamma):
    """eq. (6.8): the CDF is non-decreasing on 2e4 points over the support (with
    its gaps and the graded hard-edge panels), 0 below and 1 above."""
    sq = attention_law(beta, gamma).squared()
    top = sq.support()[1]
    x = np.concatenate([np.geomspace(1e-12 * top, top, 10 ** 4), np.linspace(0, 1.1 * top, 10 ** 4)])
    f = sq.cdf(np.sort(x))
    assert np.all(np.diff(f) >= 0)
    assert sq.cdf(-1.0) == 0.0 and sq.cdf(1.1 * top) == 1.0


@settings(max_examples=12, deadline=None)
@given(st.floats(-3.0, np.log10(4.0)), st.floats(-4.0, 4.0))
def test_whole_parameter_range_mass_and_moments_eq_5_11_eq_5_12(log_beta, log_gamma):
    """Over beta in [1e-3, 4], gamma in [1e-4, 1e4] (log-uniform): total mass 1
    (1e-10), mean theta1 (eq. (5.11)) and second moment (eq. (5.12)) recovered by
    quadrature of the density panels (rtol 1e-10), edges from operator_norm equal
    the support's upper end (rtol 1e-12)."""
    beta, gamma = 10.0 ** log_beta, 10.0 ** log_gamma
    sq = attention_law(beta, gamma).squared()
    assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
    m1 = sq.expect(lambda x: x)
    m2 = sq.expect(lambda x: x * x)
    theta1 = np.expm1(beta ** 2)
    assert m1 == pytest.approx(theta1, rel=1e-10)
    assert m2 == pytest.approx(2 * theta1 ** 2 + beta ** 4 / gamma, rel=1e-10)
    assert operator_norm(beta, gamma).squared_edge == pytest.approx(sq.support()[1], rel=1e-12)


@pytest.mark.parametrize("beta", [0.7024817862, 0.7024827862, 0.7024837862])
def test_support_about_to_split_eq_6_4_eq_6_7(beta):
    """eqs. (6.4) and (6.7) at gamma = 0.3 within 1e-6 of the beta (~0.70248279,
    located by bisection on the number of intervals) where the support splits in
    two: the edges almost touch (a cusp, nearly triple roots), yet the panels
    converge, the mass is 1 (1e-10), the CDF is monotone and m2 is exact."""
    sq = attention_law(beta, 0.3).squared()
    assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
    x = np.linspace(0.0, sq.support()[1], 20001)
    assert np.all(np.diff(sq.cdf(x)) >= 0)
    assert np.all(np.isfinite(sq.pdf(x[1:])))
    assert sq.expect(lambda xx: xx * xx) == pytest.approx(sq.moment(2), rel=1e-9)


def test_stieltjes_far_from_the_support_uses_the_moment_series():
    """Beyond FAR_RADIUS * edge, G(z) = sum_k m_k / z**(k+1) (eq. (5.8)
    moments): it matches the polynomial-form solution where both are valid
    (rtol 1e-13) and stays finite up to |z| = 1e300 with z G(z) -> 1 (m_0 = 1)."""
    from freeattn.laws._law_base import FAR_RADIUS
    for beta, gamma in [(1.0, 1.0), (0.5, 0.1)]:
        sq = attention_law(beta, gamma).squared()
        edge = sq.support()[1]
        z = np.array([2.0, 10.0, 1e3]) * FAR_RADIUS * edge + 1j * edge
        direct = sq.normalized._solver.solve(z / sq.variance)[1] / sq.variance
        np.testing.assert_allclose(sq.stieltjes(z), direct, rtol=1e-13)
        huge = np.array([1e300, -1e300, 1e300j, 1e150 + 1e150j])
        np.testing.assert_allclose(sq.stieltjes(huge) * huge, 1.0, rtol=1e-12)


@pytest.mark.parametrize("ratio", [1e-4, 1e4])
def test_marchenko_pastur_ratio_range(ratio):
    """MP at the ends of MP_RATIO_RANGE keeps mass 1 (1e-12) and its closed-form edges
    (1 -+ sqrt c)**2 (eq. (5.4)); outside the range a ValueError names the ratio."""
    mp = marchenko_pastur(1.0, ratio)
    assert mp.total_mass() == pytest.approx(1.0, abs=1e-12)
    (lo, hi), = mp.intervals()
    assert (lo, hi) == pytest.approx(((1 - np.sqrt(ratio)) ** 2, (1 + np.sqrt(ratio)) ** 2),
                                     rel=1e-12)
    with pytest.raises(ValueError, match="ratio must be in"):
        marchenko_pastur(1.0, ratio * 0.5 if ratio < 1 else ratio * 2)


#: pdf from the analytic form of theory section 14.60 against the level's own: the two
#: forms' densities agree to 3e-14 (tests/test_level_fallback.py); this allows the
#: representation's fit of either (its stated error ~1e-10 at most in these tests).
FORMS_PDF_RTOL = 1e-10


def test_pdf_raises_on_a_root_below_the_real_axis(monkeypatch):
    """A boundary value with Im G > 0 (the conjugate, lower-sheet root) makes the
    level's density raise ConvergenceError naming the point; it is not clamped to density
    0 (the clamp only absorbs the rounding dust eq. (8.10) admits)."""
    options = freeattn.SolverOptions(branch_rtol=1.1e-7)      # a law of its own (no cache)
    sq = attention_law(0.9, 0.7, options=options).squared()
    solver = sq.normalized._solver
    true_solve = solver.solve
    x = 0.5 * (sq.support()[0] + sq.support()[1])
    monkeypatch.setattr(solver, "solve",
                        lambda z, **kw: tuple(np.conj(v) for v in true_solve(z, **kw)))
    with pytest.raises(ConvergenceError, match="not on the Stieltjes branch"):
        sq.normalized._level_density(np.array([0.5 * sum(sq.normalized.support())]))
    # the density then comes from the analytic subordination of the level's two laws
    # (theory section 14.60), not from the refused root: equal to the true solve's to
    # FORMS_PDF_RTOL (the representation's fit of either form's values; measured 0)
    value = sq.pdf(x)
    monkeypatch.undo()
    fresh = attention_law(0.9, 0.7, options=options).squared()
    np.testing.assert_allclose(value, fresh.pdf(x), rtol=FORMS_PDF_RTOL)


def test_ppf_raises_when_the_quantile_iteration_does_not_converge():
    """With the iteration budget cut to one step (SolverOptions.ppf_max_iter) the
    inversion of a panel's CDF (eq. (8.15)) cannot converge; ppf raises
    ConvergenceError instead of returning the unconverged iterate."""
    sq = attention_law(1.0, 1.0, options=freeattn.SolverOptions(ppf_max_iter=1)).squared()
    with pytest.raises(ConvergenceError, match="did not converge"):
        sq.ppf(0.37)


def test_hot_wide_law_next_to_its_hard_edge():
    """The case hypothesis found at beta = 4, gamma = 10 (log10 0.602, 1.0): the
    representation samples the density at 1.5e-21 of the support from the hard edge at
    0, where the coefficient roots give no branch root and the factored rescue
    (theory eq. (8.20)) is kept only if -Im G dominates G (as x^(-1/2) does): total
    mass 1 (1e-10) and the mean theta1 (eq. (5.11)) by quadrature (rtol 1e-10)."""
    beta = 10 ** 0.6020599913279623
    sq = attention_law(beta, 10.0).squared()
    assert sq.total_mass() == pytest.approx(1.0, abs=1e-10)
    assert sq.expect(lambda x: x) == pytest.approx(np.expm1(beta ** 2), rel=1e-10)


# --------------------------------------------------------------------------- #
# Next to the hard edge at 0 and beside a support split
# (tests/reference/hard_edge_references.json, made by
# tests/reference/make_hard_edge_references.py at 40 digits)
# --------------------------------------------------------------------------- #

HARD_EDGE_REFERENCE = json.loads(
    (Path(__file__).parent / "reference" / "hard_edge_references.json").read_text())


@pytest.mark.parametrize("case", HARD_EDGE_REFERENCE["hard_edge"],
                         ids=[f"beta={c['beta']},gamma={c['gamma']}"
                              for c in HARD_EDGE_REFERENCE["hard_edge"]])
def test_hard_edge_local_model_against_mpmath_eq_8_27(case):
    """G at 1e-40 ... 1e-7 of the extent from the hard edge, on three rays (real z,
    arg z = 0.3 and 3.0), from the local model's Newton (theory eq. (8.27)) vs the
    mpmath continuation along each ray: rtol 1e-13 (measured <= 7.0e-16; the
    expanded tower was off by 1.5e-10 at 1e-14 of the extent for beta = 1 and by
    all its digits at beta = 1e-8)."""
    sq = attention_law(case["beta"], case["gamma"]).squared().normalized
    rows = np.array(case["G"], dtype=float)
    z = rows[:, 0] + 1j * rows[:, 1]
    ref = rows[:, 2] + 1j * rows[:, 3]
    got = sq.stieltjes(z)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)


def test_density_representation_at_beta_1e_8_reaches_the_hard_edge():
    """At beta = 1.0000000960463697e-08 the edge panel next to 0 samples the density at
    3.8e-35 (the crossover of the x**(-1/2) edge is at a**(3/2) ~ 3.5e-25), where
    the tower found no root on the branch and the representation raised; with the
    local model it builds, and its mass is 1 to mass_atol (checked by the build)."""
    law = attention_law(1.0000000960463697e-08, 1.0)
    sq = law.squared()
    assert sq.cdf(sq.support()[1]) == pytest.approx(1.0, abs=1e-11)
    s = np.linspace(*law.support(), 2000)[1:-1]
    f = law.pdf(s)
    assert np.all(np.isfinite(f)) and np.all(f > 0)


def test_density_beside_a_support_split_eq_8_14():
    """beta = 1e-3, gamma = 0.9975556650172209: a gap of relative width 3.7e-10 at
    4.3e-9 (normalized).  The representation raised after 1024 panels; with the
    panels graded towards the two edges of the gap and the rounding floor of a
    narrow panel (theory eq. (8.14)) it builds.  Density at e (1 -+ 10**-k) vs
    mpmath, rtol max(1e-11, 2e-14 * 10**k): the solver's own samples lose digits
    like 1/distance there (measured 2.6e-12 ... 3.9e-7 below the gap and 2.9e-13 ...
    7.7e-7 above it for k = 3 ... 8, equal to the direct solve to 2x)."""
    case = HARD_EDGE_REFERENCE["split"]
    sq = attention_law(case["beta"], case["gamma"]).squared().normalized
    ivs = np.array(sq.intervals())
    edges = np.array(case["edges"], dtype=float)
    np.testing.assert_allclose([ivs[0, 1], ivs[1, 0]], edges, rtol=1e-12)
    for side, k, x, ref in case["density"]:
        got = float(sq.pdf(float(x)))
        assert got == pytest.approx(float(ref), rel=max(1e-11, 2e-14 * 10.0 ** k)), (side, k)
