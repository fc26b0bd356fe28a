"""Exact moments of composed laws (theory section 8.10, eqs. (8.21)-(8.26)).

References: closed forms (Catalan, Fuss-Catalan, central binomial, Narayana
numbers, free cumulants of the Bernoulli law), and
``tests/reference/moment_references.json`` from
``tests/reference/make_moment_references.py`` (contour integrals of each law's
Stieltjes transform at 60 digits, no moment recursion; digits stated per
value).  Each test below was a defect of the float64 recursions: the value
it checks was wrong or raised before.
"""

import json
import math
import pathlib
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import freeattn
from freeattn.algebra import _moment_series as ms
from freeattn.algebra._cumulants import free_cumulants_to_moments, moments_to_free_cumulants
from freeattn.attention._stack_law import free_multiplicative_moments, single_layer_moments
from freeattn.core._errors import ConvergenceError
from freeattn.laws._law_base import (EXACT_ABS_BITS, EXACT_CHECK_BITS, EXACT_REL_BITS,
                                     Interval, SpectralLaw, verified_series)

REF = json.loads((pathlib.Path(__file__).parent / "reference" / "moment_references.json")
                 .read_text(encoding="utf-8"))

#: Two ulps: a correctly rounded moment differs from the reference's (rounded)
#: value by at most one ulp of each.
ULP2 = 2 * np.finfo(float).eps
#: Per order k, relative: a law whose tower parameters are floats computed by numpy/scipy
#: (the multi-head population) carries their rounding, ~1 ulp, into m_k amplified about k
#: times (m_k is a degree-k polynomial in them). Measured: 2 ulps for m_150 on one machine,
#: 21 ulps (4.7e-15) on another with numpy 2.4.6 / scipy 1.17.1; bound k ulps.
ULP_PER_ORDER = np.finfo(float).eps


def _ref(case, k):
    row = next(r for r in REF["cases"][case]["rows"] if r["k"] == k)
    with mpmath.workdps(REF["dps"]):
        return mpmath.mpf(row["moment"]), row["digits"]


def _close(value, reference, rtol):
    return abs(mpmath.mpf(value) - reference) <= rtol * abs(reference)


# ---------------------------------------------------------------------------
# the measured defects, against the contour-integral references


def test_mp_plus_semicircle_is_exact_at_high_orders():
    """eq. (8.22): MP(1, 1/2) ⊞ semicircle(1) has rational parameters, so its moments are
    exact rationals (the float recursion gave -8.2e84 at k = 150, 0.095 relative error at
    120); rounded to float64 they match the contour integrals (19-30 digits) to 2 ulps."""
    law = freeattn.free_additive(freeattn.marchenko_pastur(1, 0.5), freeattn.semicircle(1))
    assert law._verified_series(150).exact
    for k in (1, 2, 10, 60, 80, 120, 150):
        ref, digits = _ref("mp_half_plus_semicircle", k)
        assert digits >= 17
        assert _close(law.moment(k), ref, ULP2), k


def test_semicircle_plus_bernoulli_is_exact():
    """eq. (8.22): semicircle(1/16) ⊞ (delta_-1 + delta_1)/2 at k = 100 is 2.38e11 (the
    float recursion: -3.5e19); the exact rational agrees with the 30-digit contour
    integral to 1e-25, and the odd moments are exactly 0 (a symmetric law)."""
    law = freeattn.free_additive(freeattn.semicircle(1 / 16),
                                 freeattn.point_masses([-1, 1], [0.5, 0.5]))
    series = law._verified_series(100)
    assert series.exact
    for k in (2, 4, 40, 100):
        ref, _ = _ref("semicircle_16_plus_bernoulli", k)
        exact = series.fraction(k)
        with mpmath.workdps(40):
            assert abs(mpmath.mpf(exact.numerator) / exact.denominator - ref) < 1e-25 * ref
        assert _close(law.moment(k), ref, ULP2)
    assert law.moment(99) == 0.0 and law.moment(1) == 0.0


def test_multihead_moment_150_is_verified_fixed_point():
    """eqs. (8.21), (8.24): the multi-head law's population has transcendental float
    parameters, so its tower runs in fixed point verified at two precisions; m_150 =
    1.05e192 (the float recursion: 0.0) matches the contour integral of the law's own
    60-digit Stieltjes solver (23 digits) to k ulps (the rounding of its float
    parameters, see ULP_PER_ORDER)."""
    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)
    for k in (150, 100, 20, 2, 1):
        ref, digits = _ref("multihead", k)
        assert digits >= 17
        assert _close(law.moment(k), ref, max(ULP2, k * ULP_PER_ORDER)), k
    assert not law._verified_series(150).exact


def test_causal_moments_recursion_then_quadrature():
    """eq. (8.25) beyond the order 12 of the recursion (10.16): m_60 of the causal law (it
    raised an error naming k = 0) agrees with the contour integral of the solver's G
    (10 digits) to 1e-9; m_12 from the recursion to 1e-13; m_0 = 1."""
    law = freeattn.causal_law(1.0, 1.0)
    assert law.moment(0) == 1.0
    ref, _ = _ref("causal", 60)
    assert _close(law.moment(60), ref, 1e-9)
    ref, _ = _ref("causal", 30)
    assert _close(law.moment(30), ref, 1e-9)


class _Arcsine(SpectralLaw):
    """The arcsine law 1/(pi sqrt(4 - x**2)) on [-2, 2] from three hooks only."""

    def _support_intervals(self):
        return (Interval(-2.0, 2.0, Fraction(-1, 2), Fraction(-1, 2)),)

    def _density(self, x):
        return 1.0 / (np.pi * np.sqrt((2.0 - x) * (2.0 + x)))

    def _stieltjes_exact(self, z):
        w = np.where(z.imag == 0, z.real + 0j, z)
        return 1.0 / (np.sqrt(w - 2) * np.sqrt(w + 2))


def _abs_moment_arcsine(k):
    """E|X|**k of the arcsine law on [-2, 2]: 2**k Gamma((k+1)/2) / (sqrt(pi) Gamma(k/2 + 1))."""
    return 2.0 ** k * math.gamma((k + 1) / 2) / (math.sqrt(math.pi) * math.gamma(k / 2 + 1))


def test_user_law_with_mean_zero_has_moments():
    """eq. (8.25): a law given by its density and G only (every moment raised: the
    quadrature check was relative, and the mean is 0).  Even moments C(2k, k) to
    1e-11; odd moments 0 to 1e-11 E|X|**k (the stated accuracy)."""
    law = _Arcsine()
    for k in (1, 3, 5):
        assert abs(law.moment(k)) <= 1e-11 * _abs_moment_arcsine(k)
    for k in (1, 2, 3):
        assert law.moment(2 * k) == pytest.approx(math.comb(2 * k, k), rel=1e-11)
    assert law.var() == pytest.approx(2.0, rel=1e-11)


def test_user_law_sum_has_the_moments_of_its_cumulants():
    """eq. (8.22): arcsine ⊞ arcsine has free cumulants twice the arcsine's (kappa_2 = 2,
    kappa_4 = -2, kappa_6 = 4), so m_2 = 4, m_4 = kappa_4 + 2 kappa_2**2 = 28,
    m_6 = kappa_6 + 6 kappa_4 kappa_2 + 5 kappa_2**3 = 232 (quadrature, 1e-10)."""
    law = _Arcsine()
    total = freeattn.free_additive(law, law)
    assert [total.moment(k) for k in (2, 4, 6)] == pytest.approx([4, 28, 232], rel=1e-10)
    assert abs(total.mean()) <= 1e-10


class _Undefined(_Arcsine):
    """The arcsine law with G undefined (NaN) left of -2.5 on the real axis."""

    def _stieltjes_exact(self, z):
        g = super()._stieltjes_exact(z)
        return np.where((z.imag == 0) & (z.real < -2.5), np.nan, g)


def test_undefined_transform_raises_convergence_error_not_scipy_value_error():
    """eq. (8.12): where Phi' is not finite the support edge cannot be bracketed; the
    engine raised SciPy's ValueError from brentq (the CLI's 'bad usage')."""
    law = freeattn.free_additive(freeattn.semicircle(1.0), _Undefined())
    with np.errstate(invalid="ignore"), pytest.raises(ConvergenceError,
                                                      match="cannot be bracketed"):
        law.support()


# ---------------------------------------------------------------------------
# closed forms


def test_semicircle_sums_have_catalan_moments():
    """eq. (8.22): semicircle(1) ⊞ semicircle(2) = semicircle(3): m_2j = C_j 3**j exactly
    up to the default max_exact_moment_order; semicircle(0.3) ⊞ semicircle(0.5) (fixed
    point, eq. (8.24)) has m_100 = C_50 (0.3 + 0.5)**50 of the floats, to 2 ulps."""
    exact = freeattn.free_additive(freeattn.semicircle(1.0), freeattn.semicircle(2.0))
    moments = exact.moments(200)
    for j in range(101):
        assert moments[2 * j] == float(math.comb(2 * j, j) // (j + 1) * Fraction(3) ** j)
        assert j == 100 or moments[2 * j + 1] == 0.0
    fixed = freeattn.free_additive(freeattn.semicircle(0.3), freeattn.semicircle(0.5))
    v = Fraction(0.3) + Fraction(0.5)
    target = float(math.comb(100, 50) // 51 * v ** 50)
    assert fixed.moment(100) == pytest.approx(target, rel=ULP2)


def test_fuss_catalan_products_are_exact():
    """eqs. (8.4), (5.8): MP(1,1) ⊠ MP(1,1) and MP(1,1)^{⊠3} (nested, and as one product
    chain of theory eq. (14.8)) are compound free Poisson chains with exact moments
    C(3n, n)/(2n + 1) and C(4n, n)/(3n + 1)."""
    from freeattn.compose._chain import product_chain

    mp = freeattn.marchenko_pastur(1.0, 1.0)
    two = freeattn.free_multiplicative(mp, mp)
    three = freeattn.free_multiplicative(mp, two)
    chain = product_chain([mp, mp, mp])
    assert two._verified_series(60).exact and chain._verified_series(60).exact
    for n in (1, 2, 10, 60):
        assert two.moment(n) == float(Fraction(math.comb(3 * n, n), 2 * n + 1))
        assert three.moment(n) == float(Fraction(math.comb(4 * n, n), 3 * n + 1))
        assert chain.moment(n) == three.moment(n)


def test_bernoulli_sum_is_the_arcsine_law():
    """eq. (8.22): (delta_-1 + delta_1)/2 ⊞ itself is the arcsine law on [-2, 2], moments
    C(2k, k) (two discrete laws: the analytic path of theory section 14, whose moments
    come from the exact series, rounded twice: 2 ulps)."""
    b = freeattn.point_masses([-1.0, 1.0])
    law = freeattn.free_additive(b, b)
    for k in (1, 2, 5, 25, 50):
        assert law.moment(2 * k) == pytest.approx(math.comb(2 * k, k), rel=ULP2)
        assert law.moment(2 * k - 1) == 0.0


def test_free_cumulants_and_variance_are_exact():
    """eqs. (8.2), (8.22): the cumulants of semicircle(1/16) ⊞ Bernoulli are
    1/16 + 1, -1, 2, -5 at orders 2, 4, 6, 8 (Bernoulli: (-1)**(n-1) C_{n-1} at 2n);
    the variance of a law shifted by 1e6 is exact (m2 - m1**2 in floats loses 12
    digits)."""
    law = freeattn.free_additive(freeattn.semicircle(1 / 16),
                                 freeattn.point_masses([-1, 1], [0.5, 0.5]))
    kappa = law.free_cumulants(8)
    assert kappa.tolist() == [0.0, 1.0625, 0.0, -1.0, 0.0, 2.0, 0.0, -5.0]
    mp = freeattn.marchenko_pastur(0.7, 0.3)
    assert mp.affine(1e6, 1.0).var() == pytest.approx(mp.var(), rel=ULP2)
    assert mp.var() == pytest.approx(0.7 ** 2 * 0.3, rel=ULP2)


# ---------------------------------------------------------------------------
# the machinery


def test_kernels_against_non_crossing_partitions():
    """eq. (8.23): the online recursion against eq. (8.22) evaluated by brute force over
    NC(n) (n <= 6, random rational cumulants), both directions, and the reversion of
    z - z**2 (Catalan numbers)."""
    rng = np.random.default_rng(3)
    kappa = [Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 9))) for _ in range(6)]

    def set_partitions(elements):
        if not elements:
            yield []
            return
        first, rest = elements[0], elements[1:]
        for p in set_partitions(rest):
            for i in range(len(p)):
                yield p[:i] + [[first] + p[i]] + p[i + 1:]
            yield [[first]] + p

    def crossing(p):
        return any(a < b < c < d for x in p for y in p if x is not y
                   for a in x for c in x for b in y for d in y)

    def nc_partitions(n):
        return [p for p in set_partitions(list(range(n))) if not crossing(p)]

    assert [len(nc_partitions(n)) for n in range(1, 7)] == [1, 2, 5, 14, 42, 132]
    brute = [Fraction(1)] + [sum((math.prod(kappa[len(b) - 1] for b in p)
                                  for p in nc_partitions(n)), Fraction(0)) for n in range(1, 7)]
    assert free_cumulants_to_moments(kappa) == brute
    assert moments_to_free_cumulants(brute[1:]) == kappa
    assert ms._reversion_kernel([0, 1, -1, 0, 0, 0, 0, 0], 0) == [0, 1, 1, 2, 5, 14, 42, 132]
    # the fixed-point kernels at 80 bits reproduce the exact ones to rounding
    P = 80
    catalan = [math.comb(2 * n, n) // (n + 1) for n in range(12)]
    fixed = ms._moment_cumulant_kernel([1 << P] * 12, P, to_moments=True)
    assert [round(x / 2 ** P) for x in fixed] == catalan


def test_fixed_point_matches_exact_and_the_check_catches_too_few_bits():
    """eqs. (8.21), (8.24): MP(1, 1/2) ⊞ semicircle(1) from its exact leaves converted to
    fixed point agrees with the exact series to 2**-62 at p(120) bits and passes the
    two-run check; at 40 bits the values are wrong and the check fails."""
    mp = freeattn.marchenko_pastur(1, 0.5)._series(120, 0)
    sc = freeattn.semicircle(1)._series(120, 0)
    exact = ms.free_additive_series(mp, sc, 0)
    assert exact.exact

    def fixed(prec):
        return ms.free_additive_series(mp.fixed(prec), sc.fixed(prec), prec)

    p = 96 + 120
    lo, hi = fixed(p), fixed(p + EXACT_CHECK_BITS)
    assert ms.agree(lo, hi, EXACT_REL_BITS, EXACT_ABS_BITS)
    for n in (60, 120):
        assert abs(hi.fraction(n) - exact.fraction(n)) <= 2.0 ** -62 * abs(exact.fraction(n))
    bad_lo, bad_hi = fixed(40), fixed(40 + EXACT_CHECK_BITS)
    assert abs(bad_lo.fraction(120) - exact.fraction(120)) > 2.0 ** -40 * exact.fraction(120)
    assert not ms.agree(bad_lo, bad_hi, EXACT_REL_BITS, EXACT_ABS_BITS)


def test_verified_series_raises_when_precisions_never_agree():
    """eq. (8.24): a computation whose result depends on the precision beyond rounding is
    refused with ConvergenceError after the doublings."""
    noise = random.Random(0)

    def compute(prec):
        # m_1 = 1/3 plus a relative 2**-20 of noise that changes from run to run
        return ms.MomentSeries([1 << prec, (1 << prec) // 3 + noise.getrandbits(prec - 20)],
                               prec, Fraction(1))
    with pytest.raises(ConvergenceError, match="did not settle"):
        verified_series(compute, 1)


def test_narayana_recurrence():
    """eq. (8.26): the integer recurrence for T_n = q**(n-1) N_n(p/q) gives the Narayana
    sums of eq. (5.10) (c = 3/8, v = 5/4, n <= 40); beyond max_exact_moment_order the
    closed form is used, exact then rounded (k = 300)."""
    law = freeattn.marchenko_pastur(1.25, 0.375)
    c, v = Fraction(3, 8), Fraction(5, 4)

    def narayana(n):
        return v ** n * sum(Fraction(math.comb(n, j) * math.comb(n, j - 1), n) * c ** (j - 1)
                            for j in range(1, n + 1))
    got = law._narayana_fractions(40)
    assert got == [Fraction(1)] + [narayana(n) for n in range(1, 41)]
    assert law.moment(300) == float(narayana(300))


def test_orders_beyond_the_limit_use_quadrature():
    """eqs. (8.24), (8.25): with max_exact_moment_order = 8, m_8 is exact and m_10 comes
    from quadrature of the representation, within its stated 1e-11."""
    opts = freeattn.DEFAULT_OPTIONS.with_(max_exact_moment_order=8)
    law = freeattn.free_additive(freeattn.marchenko_pastur(1, 0.5, options=opts),
                                 freeattn.semicircle(1, options=opts), options=opts)
    ref, _ = _ref("mp_half_plus_semicircle", 10)
    exact = freeattn.free_additive(freeattn.marchenko_pastur(1, 0.5), freeattn.semicircle(1))
    assert law.moment(8) == exact.moment(8)
    assert _close(law.moment(10), ref, 1e-11)


def test_discrete_law_fixed_point_and_float_products():
    """eqs. (8.21), (8.24): weights 0.3/0.7 are not small-denominator rationals, so the
    power sums run in fixed point; they match the exact sums of the floats to 2**-60.
    Float moment sequences multiplied by free_multiplicative_moments give the exact
    product of the floats, rounded (the old float reversion is not)."""
    law = freeattn.point_masses([0.5, 2.0], [0.3, 0.7])
    series = law._series(50, 200)
    assert not series.exact
    w, a = [Fraction(0.3), Fraction(0.7)], [Fraction(0.5), Fraction(2.0)]
    for n in (1, 10, 50):
        exact = w[0] * a[0] ** n + w[1] * a[1] ** n
        assert abs(series.fraction(n) - exact) <= 2.0 ** -60 * exact
    got = free_multiplicative_moments([0.3, 0.2, 0.17], [1.5, 3.0, 7.0])
    exact = free_multiplicative_moments([Fraction(x) for x in (0.3, 0.2, 0.17)],
                                        [Fraction(x) for x in (1.5, 3.0, 7.0)])
    assert got == [float(x) for x in exact]


def test_stack_moments():
    """eqs. (8.4), (13.3): the moments of two- and three-layer stacks (products without
    rational S-transforms: fixed-point reversions) are those of the ⊠ of the single-layer
    moments (float moment sequences, multiplied exactly and rounded), to 1e-14."""
    one = single_layer_moments(1.0, 1.0, 6)
    two = free_multiplicative_moments(one, one)
    three = free_multiplicative_moments(two, one)
    for layers, expected in ((2, two), (3, three)):
        law = freeattn.attention_stack_law(1.0, 1.0, layers=layers)
        np.testing.assert_allclose([law.moment(k) for k in range(1, 7)], expected, rtol=1e-14)
