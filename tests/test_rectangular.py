"""Rectangular free additive convolution ⊞_λ (theory note 16, freeattn/compose/_rectangular.py).

References: tests/reference/rectangular_references.json, written at 30 digits by
tests/reference/make_rectangular_references.py (closed forms, the
Dozier-Silverstein equation, exact rational rectangular cumulants).
"""

import json
import math
import pathlib
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
from scipy.stats import kstest

import freeattn
from freeattn.compose import _rectangular as rect
from freeattn.core._blas import single_thread_blas

REF = json.loads((pathlib.Path(__file__).parent / "reference" /
                  "rectangular_references.json").read_text(encoding="utf-8"))
#: Density against the 30-digit references at interior points (fractions 0.05..0.95
#: of the support; measured <= 3e-14).
DENSITY_RTOL = 1e-10
#: Edges (bordered Newton on eq. (16.8)/(16.9)) against the references, absolute
#: on edges of size ~1 (measured <= 4e-16).
EDGE_ATOL = 1e-12
#: Moments of the representation (quadrature) and of the cumulant path (eq.
#: (16.12)) against exact rationals (measured <= 2e-14 up to order 8).
MOMENT_RTOL = 1e-12


def _sv_gauss(variance, ratio):
    return freeattn.marchenko_pastur(variance, ratio).singular_values()


@lru_cache(maxsize=None)
def _gauss_sum(ratio):
    g = _sv_gauss(1.0, ratio)
    return freeattn.rectangular_free_additive(g, g, ratio)


@lru_cache(maxsize=None)
def _mc_law():
    return freeattn.rectangular_free_additive(freeattn.point_masses([0.5, 1.5]),
                                              freeattn.point_masses([1.0]), 0.5)


@pytest.mark.parametrize("case", REF["gaussian"], ids=lambda c: f"ratio={c['ratio']}")
def test_gaussian_sum_is_the_scaled_quarter_circle(case):
    # eq. (16.13): two independent Gaussian matrices of variance 1/n add to one of
    # variance 2/n, so MP_sv(1, λ) ⊞_λ MP_sv(1, λ) = sqrt(2) MP_sv(1, λ); closed form
    # at 30 digits.  Edges from the fold of eq. (16.8) (λ < 1) or (16.9) (λ = 1).
    ratio = float(case["ratio"])
    law = _gauss_sum(ratio)
    (lo, hi), = law.intervals()
    ref_lo, ref_hi = (float(e) for e in case["edges"])
    assert abs(lo - ref_lo) <= EDGE_ATOL and abs(hi - ref_hi) <= EDGE_ATOL
    s = np.array([float(p) for p in case["points"]])
    ref = np.array([float(d) for d in case["density"]])
    assert np.max(np.abs(law.pdf(s) / ref - 1.0)) <= DENSITY_RTOL
    # eq. (16.3): the density straight from the subordination point, -2 Im G_1/pi
    assert np.max(np.abs(law._density(s) / ref - 1.0)) <= DENSITY_RTOL
    if ratio == 1.0:
        # the quarter circle sqrt(8 - s^2)/(2 pi): finite at the lower end 0
        iv = law.interval_details()[0]
        assert iv.lo == 0.0 and iv.lo_exponent == 0
        assert abs(law.pdf(0.0) - math.sqrt(8.0) / (2 * math.pi)) <= 1e-12


@pytest.mark.parametrize("case", REF["information_plus_noise"],
                         ids=lambda c: f"R={c['values']}-ratio={c['ratio']}")
def test_information_plus_noise_against_dozier_silverstein(case):
    # eq. (16.14): (point masses) ⊞_λ Gaussian is the information-plus-noise law,
    # solved at 30 digits from the Dozier-Silverstein equation.
    ratio = float(case["ratio"])
    law = freeattn.rectangular_free_additive(
        freeattn.point_masses([float(v) for v in case["values"]],
                              [float(w) for w in case["weights"]]),
        _sv_gauss(float(case["sigma2"]), ratio), ratio)
    edges = np.array(law.intervals()).ravel()
    ref_edges = np.array([float(e) for e in case["edges"]])
    assert edges.shape == ref_edges.shape
    assert np.max(np.abs(edges - ref_edges)) <= EDGE_ATOL
    s = np.array([float(p) for p in case["points"]])
    ref = np.array([float(d) for d in case["density"]])
    assert np.max(np.abs(law.pdf(s) / ref - 1.0)) <= DENSITY_RTOL
    assert abs(law.total_mass() - 1.0) <= 1e-11


def test_pole_edge_of_two_partial_isometries():
    # eq. (16.9): at λ = 1 the fold of the symmetric fixed point; δ_1 ⊞_1 δ_1 is the
    # arcsine law (Bernoulli ⊞ Bernoulli, theory section 16.8): singular-value density
    # 2/(pi sqrt(4 - s^2)) on [0, 2], whose upper edge is a pole of G (exponent -1/2).
    law = freeattn.rectangular_free_additive(freeattn.point_masses([1.0]),
                                             freeattn.point_masses([1.0]), 1.0)
    iv, = law.interval_details()
    assert iv.lo == 0.0 and abs(iv.hi - 2.0) <= EDGE_ATOL
    assert iv.lo_exponent == 0 and iv.hi_exponent == -0.5
    s = np.array([0.1, 0.7, 1.3, 1.9])
    ref = 2.0 / (math.pi * np.sqrt(4.0 - s * s))
    assert np.max(np.abs(law._density(s) / ref - 1.0)) <= DENSITY_RTOL
    # eq. (16.8) at λ < 1: the same two atoms give soft edges (measured by the same
    # bordered Newton on the 3 x 3 system), and the mass is 1
    soft = freeattn.rectangular_free_additive(freeattn.point_masses([1.0]),
                                              freeattn.point_masses([1.0]), 0.3)
    iv, = soft.interval_details()
    assert iv.lo_exponent == 0.5 and iv.hi_exponent == 0.5
    assert abs(soft.total_mass() - 1.0) <= 1e-11


def test_closed_form_d_valued_cauchy_transform_of_a_matrix():
    # eq. (16.2): E_D[(b - H)^{-1}] of the Hermitization of an explicit 3 x 5 matrix
    # against b2 G_mu(b1 b2) and (1 - λ + λ b1 b2 G_mu)/b2, mu its squared singular values.
    rng = np.random.default_rng(7)
    p, n = 3, 5
    x = rng.standard_normal((p, n))
    h = np.block([[np.zeros((p, p)), x], [x.T, np.zeros((n, n))]])
    b1, b2 = 0.3 + 0.7j, -1.1 + 0.2j
    res = np.linalg.inv(np.diag([b1] * p + [b2] * n) - h)
    g1, g2 = np.trace(res[:p, :p]) / p, np.trace(res[p:, p:]) / n
    sv = np.linalg.svd(x, compute_uv=False)
    c = rect._Squared(freeattn.point_masses(sv))
    gmu = c.pair(np.array([b1 * b2]))[0][0]
    lam = p / n
    # eq. (16.1): E_D is the pair of normalized block traces, and tau = (λ G_1 + G_2)/(1 + λ)
    assert abs(np.trace(res) / (p + n) - (lam_ := p / n) * g1 / (1 + lam_) - g2 / (1 + lam_)) \
        <= 1e-14
    assert abs(g1 - b2 * gmu) <= 1e-14 * abs(g1)
    assert abs(g2 - (1 - lam + lam * b1 * b2 * gmu) / b2) <= 1e-14 * abs(g2)
    # eq. (16.4): h = G^{-1} - b componentwise, from the cancellation-free form
    h1, h2, _ = rect._Problem(c, c, lam, 1.0).h(c, np.array([b1]), np.array([b2]))
    assert abs(h1[0] - (1 / g1 - b1)) <= 1e-13 and abs(h2[0] - (1 / g2 - b2)) <= 1e-13


def test_iteration_from_any_start_and_newton_polish():
    # eq. (16.6): the iteration converges to the same subordination point from far
    # starts in the upper half-plane, with Im w >= Im b; eq. (16.7): Newton from a
    # perturbed point returns to it at rounding.
    law = _mc_law().squared()
    pr = law._problem
    b = np.full(4, 1.2 + 0.3j)
    starts = np.array([1j, 50j, 3 + 0.01j, -20 + 2j])
    w1, w2 = rect._iterate(pr, b, starts, starts[::-1].copy())
    assert np.ptp(w1) <= 1e-12 and np.ptp(w2) <= 1e-12
    assert (w1.imag >= 0.3).all() and (w2.imag >= 0.3).all()
    n1, n2, res = rect._newton(pr, b[:1], w1[:1] * (1 + 1e-3), w2[:1] * (1 - 1e-3))
    assert abs(n1[0] - w1[0]) <= 1e-13 and abs(n2[0] - w2[0]) <= 1e-13 and res[0] <= 1e-14
    # the scalar read-out eq. (16.3): G of the squared law is G_1(z, z)/z
    z = 1.2 + 0.3j
    g = law.stieltjes(z * z)
    assert abs(g - pr.g1(w1[:1], w2[:1])[0] / z) <= 1e-14 * abs(g)


def test_ratio_one_is_the_free_sum_of_the_symmetrizations():
    # eq. (16.3) at λ = 1: G_1(z, z) of ν_A ⊞_1 ν_B is G of sym(ν_A) ⊞ sym(ν_B),
    # here from the scalar subordination of theory note 14 (an independent solver).
    from freeattn.compose._analytic import analytic_additive

    a, b = freeattn.point_masses([0.5, 1.5]), freeattn.point_masses([0.3, 1.0], [0.4, 0.6])
    law = freeattn.rectangular_free_additive(a, b, 1.0).squared()
    sym_a = freeattn.point_masses([-1.5, -0.5, 0.5, 1.5], [0.25] * 4)
    sym_b = freeattn.point_masses([-1.0, -0.3, 0.3, 1.0], [0.3, 0.2, 0.2, 0.3])
    ref = analytic_additive(sym_a, sym_b)
    z = np.array([0.4 + 0.5j, 1.7 + 0.05j, 2.0 + 1.0j])
    w1, w2 = rect._solve_complex(law._problem, z)
    g1 = law._problem.g1(w1, w2)
    assert np.max(np.abs(g1 / ref._solve(z)[1] - 1.0)) <= 1e-12
    # and on the axis, the density 2 f_sym
    s = np.array([0.9, 1.6, 2.2])
    assert np.max(np.abs(law._density_s(s) / (2 * ref._density(s)) - 1.0)) <= 1e-11


def test_moments_from_rectangular_cumulants():
    # eqs. (16.11)-(16.12): E[s^2k] of the sum from exact rational cumulants (the
    # reference script) against the law's quadrature of its representation and its
    # own float cumulant path.
    ref = np.array([float(Fraction(q)) for q in REF["moments"]["even_moments"]])
    sq = _mc_law().squared()
    k = ref.size
    quad = sq._quadrature_moments(k) * sq._scale() ** np.arange(k + 1)
    assert np.max(np.abs(quad[1:] / ref - 1.0)) <= MOMENT_RTOL
    exact = sq.moments(k)
    assert np.max(np.abs(exact[1:] / ref - 1.0)) <= MOMENT_RTOL
    # order 2 and 4 by hand (eq. (16.12)): m2 adds, m4 = m4a + m4b + 2 (1 + λ) m2a m2b
    m2a, m4a, m2b, m4b, lam = 1.25, (0.5 ** 4 + 1.5 ** 4) / 2, 1.0, 1.0, 0.5
    assert abs(exact[1] - (m2a + m2b)) <= 1e-14
    assert abs(exact[2] - (m4a + m4b + 2 * (1 + lam) * m2a * m2b)) <= 1e-13
    # Gaussian: the only non-zero rectangular cumulant is c_2 = variance
    mp = freeattn.marchenko_pastur(0.7, 0.3).moments(6)[1:]
    c = rect.rectangular_cumulants(mp, 0.3)
    assert abs(c[0] - 0.7) <= 1e-15 and np.max(np.abs(c[1:])) <= 1e-14
    back = rect.rectangular_moments(c, 0.3)
    assert np.max(np.abs(back / mp - 1.0)) <= 1e-14


def test_atoms_where_the_dimension_count_forces_them():
    # eq. (16.10): δ_1 ⊞_λ (0.7 δ_0 + 0.3 δ_1) has an atom at 1 of mass
    # 1 + 2 * 0.7 - 2 = 0.4; a matrix draw has exactly 0.4 p singular values 1
    # (a dimension count), and the continuous part integrates to the rest.
    b = freeattn.point_masses([0.0, 1.0], [0.7, 0.3])
    law = freeattn.rectangular_free_additive(freeattn.point_masses([1.0]), b, 0.5)
    loc, mass = law.atoms()
    assert loc.tolist() == [1.0] and abs(mass[0] - 0.4) <= 1e-15
    assert abs(law.total_mass() - 1.0) <= 1e-11
    rng = np.random.default_rng(3)
    p, n = 100, 200
    with single_thread_blas():
        sv = _draw(rng, np.ones(p), np.r_[np.zeros(70), np.ones(30)], p, n)
    assert int(np.sum(np.abs(sv - 1.0) <= 1e-9)) == 40


def _frame(rng, n, p):
    """``n x p`` with orthonormal columns, Haar distributed (QR with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((n, p)))
    return q * np.sign(np.diag(r))


def _draw(rng, sa, sb, p, n):
    """Singular values of ``U_A diag(sa) V_A* + U_B diag(sb) V_B*`` (Haar ``U``, ``V``)."""
    a = (_frame(rng, p, p) * sa) @ _frame(rng, n, p).T
    b = (_frame(rng, p, p) * sb) @ _frame(rng, n, p).T
    return np.linalg.svd(a + b, compute_uv=False)


#: Kolmogorov distance of 2 draws of p = 400 singular values to the law.  The
#: noise floor of this size, measured over 20 seeds: 0.0051 on average (largest
#: 0.0062) for Gaussian 400 x 800 matrices against their closed form, and 0.0053
#: (largest 0.0069) for this case; the bound is about twice the largest.
MC_KS_BOUND = 0.015


@pytest.mark.statistical
def test_monte_carlo_two_atoms_plus_a_partial_isometry():
    # The law of theory section 16 against A + B with A = U diag(1/2, 3/2) V*,
    # B = U' [I 0] V'* (Haar, independent), p = 400, n = 800: the distance is at the
    # noise floor, and the law at a neighbouring ratio is not.
    rng = np.random.default_rng(2026)
    p, n = 400, 800
    with single_thread_blas():
        sv = np.concatenate([_draw(rng, np.repeat([0.5, 1.5], p // 2), np.ones(p), p, n)
                             for _ in range(2)])
    law = _mc_law()
    assert kstest(sv, law.cdf).statistic <= MC_KS_BOUND
    other = freeattn.rectangular_free_additive(freeattn.point_masses([0.5, 1.5]),
                                               freeattn.point_masses([1.0]), 0.6)
    assert kstest(sv, other.cdf).statistic > 2 * MC_KS_BOUND


def test_every_law_method_works_on_the_gaussian_sum():
    # the whole SpectralLaw interface, against the closed-form sqrt(2) MP_sv(1, 1/2)
    law = _gauss_sum(0.5)
    ref = _sv_gauss(2.0, 0.5)
    s = np.linspace(0.3, 2.6, 23)
    assert np.max(np.abs(law.cdf(s) - ref.cdf(s))) <= 1e-13
    q = np.array([0.01, 0.3, 0.5, 0.9, 0.999])
    assert np.max(np.abs(law.ppf(q) - ref.ppf(q))) <= 1e-12
    assert abs(law.mean() - ref.mean()) <= 1e-12 and abs(law.var() - ref.var()) <= 1e-12
    assert np.allclose(law.moments(4), ref.moments(4), rtol=1e-12, atol=0)
    z = np.array([1 + 1j, 0.5 + 1e-3j, 3.0 + 0j, -1 + 0.5j])
    assert np.max(np.abs(law.stieltjes(z) / ref.stieltjes(z) - 1.0)) <= 1e-12
    sq = law.squared()
    assert isinstance(sq, rect.RectangularSquaredLaw) and sq.support() == pytest.approx(
        ref.squared().support(), abs=1e-12)
    assert abs(sq.moment(3) - ref.squared().moment(3)) <= 1e-12
    draws = law.rvs(5, rng=1)
    assert np.array_equal(draws, law.ppf(np.random.default_rng(1).random(5)))
    assert law.ratio == 0.5 and "⊞_0.5" in repr(law)


def test_mpmath_path_agrees_with_the_closed_form():
    # eq. (16.5) solved by mpmath.findroot at 30 digits, against the closed form
    law = _gauss_sum(0.5)
    import mpmath

    got = law.pdf_mp(1.0, dps=30)
    with mpmath.workdps(30):
        v, lam = mpmath.mpf(2), mpmath.mpf("0.5")
        a, b = v * (1 - mpmath.sqrt(lam)) ** 2, v * (1 + mpmath.sqrt(lam)) ** 2
        ref = 2 * mpmath.sqrt((b - 1) * (1 - a)) / (2 * mpmath.pi * lam * v)
        assert abs(got / ref - 1) <= mpmath.mpf(10) ** -25


@pytest.mark.parametrize("ratio", [0.0, -0.5, 1.5, float("nan"), float("inf")])
def test_ratio_outside_the_range_is_a_value_error(ratio):
    g = _sv_gauss(1.0, 0.5)
    with pytest.raises(ValueError, match="ratio"):
        freeattn.rectangular_free_additive(g, g, ratio)


def test_bad_laws_raise_naming_the_argument():
    g = _sv_gauss(1.0, 0.5)
    with pytest.raises(ValueError, match=r"^b must be a law of singular values"):
        freeattn.rectangular_free_additive(g, freeattn.semicircle(1.0), 0.5)
    with pytest.raises(ValueError, match=r"^a must be a law of singular values"):
        freeattn.rectangular_free_additive(freeattn.point_masses([-1.0, 1.0]), g, 0.5)
    with pytest.raises(TypeError, match=r"^a must be a freeattn law"):
        freeattn.rectangular_free_additive([1.0, 2.0], g, 0.5)
    with pytest.raises(TypeError, match="ratio"):
        freeattn.rectangular_free_additive(g, g, "0.5")


def test_support_reaching_zero_below_ratio_one_raises():
    # theory section 16.9: a lower edge at 0 is handled at ratio 1 only.  With
    # a = δ_0 (A = 0) the sum is B itself, here a law whose support starts at 0.
    b = freeattn.marchenko_pastur(1.0, 1.0).singular_values()      # support [0, 2]
    law = freeattn.rectangular_free_additive(freeattn.point_masses([0.0]), b, 0.5)
    with pytest.raises(freeattn.ConvergenceError, match="reaches 0"):
        law.intervals()
