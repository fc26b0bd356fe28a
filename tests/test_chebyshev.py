"""Tests of the piecewise-Chebyshev representation (freeattn.algebra._chebyshev),
theory eqs. (8.14)-(8.16), against closed forms."""

import math
from fractions import Fraction

import numpy as np
import pytest

from freeattn import (DEFAULT_OPTIONS, ConvergenceError, attention_law, free_additive,
                      marchenko_pastur, point_masses, sample_covariance, semicircle)
from freeattn.algebra._chebyshev import (build_representation, cauchy_integral, clenshaw, edge_power,
                                 first_kind_nodes, nodes_coefficients)
from freeattn.laws._law_base import Interval
from user_laws import UserArcsine

_cheb = np.polynomial.chebyshev


def _mp_density(c):
    lo, hi = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2

    def f(x):
        return np.sqrt(np.maximum((hi - x) * (x - lo), 0)) / (2 * math.pi * c * x)
    return f, lo, hi


def test_edge_power_eq_8_14():
    """eq. (8.14): exponent j/p -> map power p and g ~ s**(p eta + p - 1)."""
    assert edge_power(Fraction(1, 2)) == (2, 2)
    assert edge_power(Fraction(-1, 2)) == (2, 0)
    assert edge_power(Fraction(-2, 3)) == (3, 0)
    assert edge_power(Fraction(1, 3)) == (3, 3)
    assert edge_power(0) == (1, 0)
    with pytest.raises(ValueError, match="integrable"):
        edge_power(-1)


@pytest.mark.parametrize("c, exponents", [(0.5, (Fraction(1, 2), Fraction(1, 2))),
                                          (1.0, (Fraction(-1, 2), Fraction(1, 2)))])
def test_panel_map_makes_g_analytic_eq_8_14(c, exponents):
    """eq. (8.14): with the edge maps, the MP density (square-root edges, and the
    x**(-1/2) hard edge at c = 1) is represented by two panels of at most 81
    nodes, to rtol 1e-13 at interior points and 2e-10 at 1e-6 of the width from
    an edge (closed form, theory eq. (5.4); there the density itself is only
    eps * width/distance ~ 2e-10 well conditioned)."""
    f, lo, hi = _mp_density(c)
    rep = build_representation(f, [Interval(lo, hi, *exponents)], DEFAULT_OPTIONS,
                               expected_mass=1.0)
    assert len(rep.panels) == 2 and rep.degree <= 81
    x = np.linspace(lo, hi, 1001)[1:-1]
    np.testing.assert_allclose(rep.pdf(x), f(x), rtol=1e-13)
    near = np.array([lo + 1e-6 * (hi - lo), hi - 1e-6 * (hi - lo)])
    np.testing.assert_allclose(rep.pdf(near), f(near), rtol=2e-10)


def test_nested_nodes_and_dct_eq_8_14():
    """The first-kind nodes of n are nodes of 3n (no discarded solves, eq. (8.14)),
    and the DCT coefficients interpolate: chebval at the nodes gives the values."""
    n = 9
    small, big = first_kind_nodes(n), first_kind_nodes(3 * n)
    np.testing.assert_allclose(big[1::3], small, atol=1e-15)
    # and of 9 n (the jump of eq. (8.14)): nodes 9 j + 4
    np.testing.assert_allclose(first_kind_nodes(9 * n)[4::9], small, atol=1e-15)
    vals = np.exp(small)
    coef = nodes_coefficients(vals)
    np.testing.assert_allclose(_cheb.chebval(small, coef), vals, rtol=1e-14)
    assert clenshaw(list(coef), 0.3) == pytest.approx(_cheb.chebval(0.3, coef), rel=1e-14)


def test_a_slow_tail_jumps_to_nine_times_the_nodes_eq_8_14():
    """eq. (8.14): the MP(1, 1/2) density's two edge panels have tails ~1e-4 at 9
    nodes, whose cube misses cheb_tail_rtol, so both go to 81 nodes in the second
    round (2 density calls of 2 x 9 and 2 x 72 points; tripling took 3 calls of
    18, 36 and 108), and the result keeps the closed form's accuracy (1e-13
    relative inside, measured 3.2e-14) and its mass (1e-14, measured 0)."""
    f, lo, hi = _mp_density(0.5)
    calls = []

    def density(x):
        calls.append(x.size)
        return f(x)
    rep = build_representation(density, [Interval(lo, hi, Fraction(1, 2), Fraction(1, 2))],
                               DEFAULT_OPTIONS, expected_mass=1.0)
    assert calls == [18, 144]
    x = np.linspace(lo, hi, 1001)[1:-1]
    np.testing.assert_allclose(rep.pdf(x), f(x), rtol=1e-13)
    assert abs(rep.total - 1.0) <= EXACT_SAMPLES_MASS_ATOL


def test_the_floor_test_after_a_jump_compares_one_tripling_eq_8_14():
    """eq. (8.14) next to the ``x**(-1/2)`` edges of Bernoulli ⊞ Bernoulli (the
    arcsine law on [-2, 2], solved by subordination, whose samples carry the
    solver's rounding): the rounding floor (~2e-11 at 81 nodes) is accepted when
    the tail at 81 nodes no longer shrinks from the one at 27 (read from the 27
    nodes among the 81, ~7e-11).  Compared with the jump's starting tail at 9
    nodes (~3e-4) the floor looked like progress, and the panels went on to 243
    nodes, whose samples next to the edge carry ~3e-9 of rounding, and split into
    33 panels missing 3.7e-9 of the mass.  Now: 2 panels, mass 1 to 1e-11
    (measured 6.8e-13)."""
    ber = point_masses([-1.0, 1.0], [0.5, 0.5])
    law = free_additive(ber, point_masses([-1.0, 1.0], [0.5, 0.5]))
    rep = build_representation(law._density, law.interval_details(), DEFAULT_OPTIONS)
    assert len(rep.panels) == 2
    assert abs(rep.total - 1.0) <= 1e-11


#: The pole of the plateau test's density 1/(POLE - x) on [-1, 1]: Chebyshev
#: coefficients ~ rho**-k with rho = POLE + sqrt(POLE**2 - 1) = 2.26, so a fit
#: needs about 45 of them, more than 27 nodes resolve.
POLE = 1.35
#: Relative size of the deterministic "rounding" the plateau test adds to its samples.
SAMPLE_NOISE = 1e-13


def _noisy_pole(noise, calls):
    def density(x):
        calls.append(x.size)
        h = np.sin(x * 1.2345e7) * 43758.5453        # a hash of the abscissa in [0, 1)
        return (1 + noise * (h - np.floor(h) - 0.5)) / (POLE - x)
    return density


@pytest.mark.parametrize("plateau", [True, False])
def test_a_plateau_of_rounding_is_accepted_without_a_tripling_eq_8_14(monkeypatch, plateau):
    """eq. (8.14): samples of 1/(1.35 - x) with a relative noise of 1e-13 are fitted
    at 81 nodes, where the coefficients are flat from index ~36 on (the noise),
    though the tail at 27 nodes (~3e-9) was far above it: the plateau within the
    fit is the rounding floor, and no round of 243 nodes follows.  Without the
    plateau test (PLATEAU_MIN_NODES beyond cheb_max_nodes) the same build takes a
    third round (measured [18, 144, 162]).  The fit's error stays at the noise:
    within 10 x SAMPLE_NOISE of the exact density (measured 7.1e-14 both ways)."""
    import freeattn.algebra._chebyshev as cheb
    if not plateau:
        monkeypatch.setattr(cheb, "PLATEAU_MIN_NODES", 10 * DEFAULT_OPTIONS.cheb_max_nodes)
    calls = []
    rep = build_representation(_noisy_pole(SAMPLE_NOISE, calls),
                               [Interval(-1.0, 1.0, Fraction(0), Fraction(0))], DEFAULT_OPTIONS)
    assert len(calls) == (2 if plateau else 3)
    x = np.linspace(-0.99, 0.99, 1001)
    assert np.max(np.abs(rep.pdf(x) * (POLE - x) - 1.0)) <= 10 * SAMPLE_NOISE
    assert abs(rep.total - math.log((POLE + 1) / (POLE - 1))) <= 10 * SAMPLE_NOISE


def test_the_plateau_test_separates_rounding_from_decay_eq_8_14():
    """eq. (8.14): the last half of 81 coefficients is a plateau for noise (a flat
    block), not for a geometric decay, nor for an algebraic k**-4 (ratio 1.5**4 =
    5.1 between the third and the last quarter, above PLATEAU_RATIO = 4)."""
    from freeattn.algebra._chebyshev import _plateau
    k = np.arange(81.0)
    noise = np.random.default_rng(0).standard_normal(81) * 1e-13
    assert _plateau(np.where(k < 30, 0.5 ** k, noise))
    assert not _plateau(0.6 ** k)
    assert not _plateau((k + 1) ** -4.0)


def _crossover_density(x):
    # x**(-1/2) down to a crossover at A_CROSSOVER, constant below it: analytic in
    # the edge variable s of eq. (8.14), with a pole at s ~ -sqrt(A_CROSSOVER)
    return np.sqrt(1.0 - x) / (np.sqrt(x) + math.sqrt(A_CROSSOVER)) / 2.0


A_CROSSOVER = 1e-20


def _build_crossover():
    """The representation of the crossover density on [0, 1] (x**(-1/2) at 0) and the
    sizes of its density calls."""
    calls = []

    def density(x):
        calls.append(x.size)
        return _crossover_density(x)
    rep = build_representation(density, [Interval(0.0, 1.0, Fraction(-1, 2), Fraction(1, 2))],
                               DEFAULT_OPTIONS)
    return rep, calls


@pytest.mark.parametrize("deeper", [True, False])
def test_an_edge_panel_at_0_splits_deeper_each_time_eq_8_14(monkeypatch, deeper):
    """eq. (8.14) next to an edge at 0 whose density crosses over at 1e-20 (as the
    attention law's at small beta, a^{3/2}): each split of the edge panel doubles
    its quarterings (6, 12, 24) and a tail that misses the tolerance even at 243
    nodes splits at 81, so the build takes 7 rounds of density calls (measured);
    with 6 quarterings per split and the last tripling always tried, 12.  Either
    way the mass is the 30-digit mpmath quadrature (0.78539816112554850, 1e-14) and
    the density is exact to 1e-13 relative (measured 4.8e-14) from 1e-25 to 0.999;
    2e-13 for the counterfactual (measured 1.4e-13 at 1e-25, in 32 panels)."""
    import freeattn.algebra._chebyshev as chebyshev

    if not deeper:
        monkeypatch.setattr(chebyshev, "EDGE_SPLIT_MAX_LEVELS", chebyshev.EDGE_SPLIT_LEVELS)
        monkeypatch.setattr(chebyshev, "EARLY_SPLIT_MIN_NODES", 10 ** 9)
    rep, calls = _build_crossover()
    assert (len(calls) <= 8) == deeper
    import mpmath
    with mpmath.workdps(30):
        a = mpmath.mpf(A_CROSSOVER)
        mass = mpmath.quad(lambda t: mpmath.sqrt(1 - t) / (mpmath.sqrt(t) + mpmath.sqrt(a)) / 2,
                           [0, a, 1e-15, 1e-10, 1e-5, 1])
    assert abs(rep.total - float(mass)) <= 1e-14
    x = np.concatenate([np.logspace(-25, -1, 200), np.linspace(0.1, 0.999, 200)])
    np.testing.assert_allclose(rep.pdf(x), _crossover_density(x),
                               rtol=1e-13 if deeper else 2e-13)


@pytest.mark.parametrize("start", [81, 9])
def test_the_children_of_a_split_start_at_81_nodes_eq_8_14(monkeypatch, start):
    """eq. (8.14): the children of a panel that failed at n >= 81 nodes start at 81
    (SPLIT_START_NODES), not at 9: the crossover density of the test above builds in
    7 rounds of density calls instead of 12 (measured) with about the same points
    (4131 against 4059) and the same mass (the 30-digit quadrature, 1e-14)."""
    import freeattn.algebra._chebyshev as chebyshev

    monkeypatch.setattr(chebyshev, "SPLIT_START_NODES", start)
    rep, calls = _build_crossover()
    assert len(calls) == (7 if start == 81 else 12)
    assert abs(sum(calls) - 4100) <= 100
    assert abs(rep.total - 0.78539816112554850) <= 1e-14


#: Crossover of the finite density 1 + s/sqrt(s**2 + eps**2) at an edge at 0.
EPS_SMOOTH_CROSSOVER = 1e-6


def test_a_smooth_panel_at_0_grades_towards_it_eq_8_14():
    """eq. (8.14) for a density that is finite at an edge at 0 and crosses over at
    1e-6 there (as 2 s f(s**2), the singular values of a hard edge x**(-1/2)): the
    smooth panel at 0 is split in the edge panel's graded quarterings, 9 rounds of
    density calls (measured; halving it took 41).  The mass is the closed form
    sqrt(1 + eps**2) - eps + 1 (1e-14; measured 0) and the density exact to 1e-13
    relative from 1e-12 to 0.999."""
    eps = EPS_SMOOTH_CROSSOVER
    calls = []

    def density(s):
        calls.append(s.size)
        return 1.0 + s / np.sqrt(s * s + eps * eps)
    mass = math.sqrt(1.0 + eps * eps) - eps + 1.0
    rep = build_representation(density, [Interval(0.0, 1.0, Fraction(0), Fraction(0))],
                               DEFAULT_OPTIONS, expected_mass=mass)
    assert len(calls) <= 12
    assert abs(rep.total - mass) <= 1e-14
    s = np.concatenate([np.logspace(-12, -1, 200), np.linspace(0.1, 0.999, 200)])
    np.testing.assert_allclose(rep.pdf(s), density(s), rtol=1e-13)


def test_the_singular_values_mean_at_small_beta_eq_8_14():
    """The attention law's singular values at beta = 1e-8 (an odd moment: their own
    panels, graded towards 0 by eq. (8.14)) against the quadrature of
    2 t**2 f(t**2) over the squared law's density (scipy.integrate.quad on 31
    decades, relative 2e-14): within 1e-14 (measured 2.2e-16; 1.6e-13 when the
    smooth panel at 0 was halved, 31 panels instead of 20)."""
    from scipy.integrate import quad

    from freeattn import attention_law

    law = attention_law(1e-8, 1.0)
    sq = law.squared()
    top = math.sqrt(sq.support()[1])
    cuts = [0.0] + [top * 10.0 ** k for k in range(-30, 0)] + [top]
    ref = sum(quad(lambda t: 2 * t * t * sq.pdf(t * t), a, b, epsabs=0, epsrel=2e-14,
                   limit=200)[0] for a, b in zip(cuts[:-1], cuts[1:]))
    assert abs(law.mean() / ref - 1.0) <= 1e-14
    assert len(law._representation().panels) <= 24


@pytest.mark.parametrize("n", [1, 2, 3, 9, 81, 243])
def test_integral_and_nodes_derivative_primitives_eq_8_15(n):
    """The cumulative series of eq. (8.15) and the slope at the nodes that moves
    shifted samples back to them (eq. (8.14)) against numpy's chebint(lbnd=-1)
    (bit for bit) and
    chebval(chebder) (relative to the largest slope: 1e-13 at 81 nodes and
    1e-11 at 243, the n**2 conditioning of a derivative; measured 1.6e-14 and
    5.2e-13)."""
    from freeattn.algebra._chebyshev import integral_coefficients, nodes_derivative

    rng = np.random.default_rng(n)
    coef = rng.standard_normal(n)
    # the same roundings as chebint: the CDF of a panel is exactly 0 at its lower
    # end when chebval's is (the CDF below a support starting at 0, test_conformance)
    assert np.array_equal(integral_coefficients(coef), _cheb.chebint(coef, lbnd=-1.0))
    smooth = coef / np.arange(1, n + 1) ** 2
    ref = _cheb.chebval(first_kind_nodes(n), _cheb.chebder(smooth))
    err = np.max(np.abs(nodes_derivative(smooth) - ref)) / max(np.max(np.abs(ref)), 1e-300)
    assert err <= (1e-11 if n > 81 else 1e-13)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_tripling_that_makes_the_fit_worse_keeps_the_fit_before_eq_8_14(k):
    """eq. (8.14) next to the ``x**(-1/2)`` edges of the arcsine law shifted by
    ``k * 1e-12`` (Bernoulli ⊞ Bernoulli with one law's atoms moved; the engine
    benchmark's cold arcsine): at k = 1 the left edge panel's tail is 5.9e-12 at
    81 nodes, below the floor but shrunk by more than 8 from the 27 nodes among
    them (7.5e-11), so it was tripled; at 243 nodes, nearer the edge, the
    samples' rounding gave 3.0e-9, and the splits that followed missed 3.3e-9
    of the mass (28 panels).  A tripling that makes the tail worse keeps the fit
    before it when that one is at the floor: 2 panels, mass 1 to 1e-11
    (measured 4.7e-13, 4.4e-13, 3.3e-15)."""
    shift = (1.0 + k * 1e-12) - 1.0
    law = free_additive(point_masses([shift - 1.0, shift + 1.0], [0.5, 0.5]),
                        point_masses([-1.0, 1.0], [0.5, 0.5]))
    rep = build_representation(law._density, law.interval_details(), DEFAULT_OPTIONS)
    assert len(rep.panels) == 2
    assert abs(rep.total - 1.0) <= 1e-11


def test_cdf_is_the_exact_integral_eq_8_15():
    """eq. (8.15): the semicircle CDF from its representation equals the closed form
    1/2 + (t sqrt(1-t^2) + asin t)/pi, t = x/2 (atol 1e-15), and the quantile
    inverts it (inverse interpolant + one Newton step; atol 1e-14)."""
    sc = semicircle(1.0)
    rep = sc._representation()
    x = np.linspace(-2, 2, 801)
    t = x / 2
    exact = 0.5 + (t * np.sqrt(1 - t * t) + np.arcsin(t)) / math.pi
    np.testing.assert_allclose(rep.cdf(x), exact, atol=1e-15)
    q = np.linspace(0, 1, 401)
    np.testing.assert_allclose(rep.cdf(rep.quantile(q * rep.total, DEFAULT_OPTIONS)), q * rep.total,
                               atol=1e-14)


def test_mass_check_raises_eq_8_15():
    """A density that does not integrate to the expected mass raises
    ConvergenceError quoting the difference (it is never renormalized silently)."""
    f, lo, hi = _mp_density(0.5)
    with pytest.raises(ConvergenceError, match="integrates to"):
        build_representation(lambda x: 1.01 * f(x), [Interval(lo, hi)], DEFAULT_OPTIONS,
                             expected_mass=1.0)


def test_cauchy_integral_singularity_subtraction_eq_8_16():
    """eq. (8.16): int_{-1}^{1} g/(s - zeta) for g = 1 + s**2 equals the closed form
    (1 + zeta**2) log((1-zeta)/(-1-zeta)) + 2 zeta (rtol 1e-13) at points near and
    on the segment (read from above) and far from it, and the derivative equals
    the closed form too."""
    coef = _cheb.poly2cheb([1.0, 0.0, 1.0])
    zeta = np.array([0.3 + 1e-12j, 0.3 + 0j, -0.9 + 0.05j, 1.5 + 0.0j, 3.0 + 4.0j, 0.2 + 1.0j])

    def exact(z):
        L = np.log(1 - z) - np.log(-1 - z)
        on = (z.imag == 0) & (np.abs(z.real) < 1)
        with np.errstate(invalid="ignore"):
            L = np.where(on, np.log((1 - z.real) / (1 + z.real)) + 1j * np.pi, L)
        return (1 + z * z) * L + 2 * z, L
    val, der = cauchy_integral(coef, zeta, derivative=True)
    ref, L = exact(zeta)
    np.testing.assert_allclose(val, ref, rtol=1e-13)
    dref = 2 * zeta * L + (1 + zeta * zeta) * (-2 / (1 - zeta * zeta)) + 2
    np.testing.assert_allclose(der, dref, rtol=1e-12)


def test_cauchy_integral_outside_the_convergence_ellipse_eq_8_28():
    """eq. (8.28): for g = 1/(s - a), a = -1.05 (Chebyshev series converging inside
    the Bernstein ellipse rho_g = 1.37), the integral int g/(s - zeta) at points
    with rho(zeta) in (rho_g, 2) equals the closed form
    (L(zeta) - L(a))/(zeta - a), L(w) = log((1 - w)/(-1 - w)), rtol 1e-12 (its
    derivative 1e-11); singularity subtraction alone was off by 190% there
    (by 1e55 with the unchopped 400-term series).  Points inside rho_g keep the
    subtraction (checked at the same tolerance)."""
    a = -1.05
    n = 400
    nodes = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    coef = _cheb.chebfit(nodes, 1.0 / (nodes - a), n - 1)
    coef = coef[:np.flatnonzero(np.abs(coef) < 1e-16 * np.abs(coef).max())[0]]
    zeta = np.array([0.3 + 0.5j, 0.9 - 0.4j, -0.5 + 0.6j, 1.3 + 0j,      # rho 1.6-2.1
                     0.2 + 0.01j, 1.01 + 0j, 0.5 + 0j])                  # rho < rho_g

    def L(w):
        on = (w.imag == 0) & (np.abs(w.real) < 1)          # read from above: + i pi
        with np.errstate(invalid="ignore"):
            return np.where(on, np.log((1 - w.real) / (1 + w.real)) + 1j * np.pi,
                            np.log(1 - w) - np.log(-1 - w))
    La = L(np.array([a + 0j]))[0]
    ref = (L(zeta) - La) / (zeta - a)
    dref = (-2.0 / (1 - zeta ** 2) * (zeta - a) - (L(zeta) - La)) / (zeta - a) ** 2
    val, der = cauchy_integral(coef, zeta, derivative=True)
    np.testing.assert_allclose(val, ref, rtol=1e-12)
    np.testing.assert_allclose(der, dref, rtol=1e-11)


def test_representation_stieltjes_near_the_axis_eq_8_16():
    """eq. (8.16): the Cauchy transform of the MP representation equals MP's closed
    form (theory eq. (5.4)/(8.6)) at Im z = 1e-3, 1e-9 and on the axis inside the
    support (from above), rtol 1e-12, including next to the junction of two
    panels (the midpoint), where the ends 1 -+ zeta are computed without
    cancellation."""
    mp = marchenko_pastur(1.0, 0.5)
    lo, hi = mp.intervals()[0]
    mid = 0.5 * (lo + hi)
    x = np.concatenate([np.linspace(lo, hi, 7)[1:-1], mid + np.array([1e-12, 1e-6, -1e-9])])
    for eta in (1e-3, 1e-9, 0.0):
        zz = x + 1j * eta
        np.testing.assert_allclose(mp._stieltjes_from_representation(zz),
                                   mp._stieltjes_exact(zz), rtol=1e-12)


# --------------------------------------------------------------------------- log ends (eq. (8.18))

class _DTLaw:
    """The Dykema-Haagerup law of variance 1 (theory eq. (10.14)) with its closed forms:
    a law with a logarithmic end at 0 that needs no solver."""

    @staticmethod
    def log_end_density(t):
        # x f(x) = -Im G(x + i0) x/pi = -Im(1/T)/pi with T e^T = -1/x; T from log x
        from freeattn.attention._causal import _dt_kappa
        kap = _dt_kappa(np.asarray(t) - 1j * np.pi)          # kappa = 1/T at log(-z)
        kap = np.where(kap.imag > 0, kap.conj(), kap)
        return np.abs(kap.imag) / np.pi

    @staticmethod
    def density(x):
        from freeattn.attention._causal import _dt_density
        return _dt_density(x)


def test_log_end_map_eq_8_18():
    """The map x = e + c u exp(-1/u) of eq. (8.18): sigma_of inverts x_of (1e-13 in
    sigma; x of the first node far below the float range comes out e), its Jacobian
    matches central differences (rtol 1e-7), and log_distance is log(x - e)."""
    from freeattn.algebra._chebyshev import LogEndMap
    m = LogEndMap.between(1.0, 20.0, 1.0, 1.5)
    assert m.u_lo == 0.0 and m.x_of(1.0) == 1.5 and m.x_of(-1.0) == 1.0
    sig = np.linspace(-0.6, 0.95, 9)
    np.testing.assert_allclose(m.sigma_of(m.x_of(sig)), sig, atol=1e-13)
    at0 = LogEndMap.between(0.0, 20.0, 0.0, 0.5)        # end at 0: x - e without cancellation
    np.testing.assert_allclose(np.exp(at0.log_distance(sig)), at0.x_of(sig), rtol=1e-14)
    tiny = np.array([1e-300, 1e-30])
    np.testing.assert_allclose(np.exp(at0.log_distance(at0.sigma_of(tiny))), tiny, rtol=1e-11)
    h = 1e-6
    fd = (at0.x_of(sig + h) - at0.x_of(sig - h)) / (2 * h)
    np.testing.assert_allclose(at0.dx_dsigma(sig), fd, rtol=1e-7)
    assert m.log_distance(-1.0 + 1e-9) < -1e6                   # far below any float
    inner = LogEndMap.between(1.0, 20.0, 1.2, 1.5)
    assert inner.u_lo > 0 and abs(inner.x_of(-1.0) - 1.2) < 1e-15


def test_log_end_panel_is_exact_for_dykema_haagerup_eq_8_18():
    """A representation with a LogEnd lower end (eq. (8.18)) of the Dykema-Haagerup
    density (closed forms eq. (10.14)): the CDF at 1e-3, 1e-6, 1e-12 and 1e-300
    against (arg T + Im T/|T|^2)/pi to 1e-14 absolute, the density to 1e-11
    relative, quantiles invert the closed-form CDF to 1e-12 relative in x (1e-9 at
    1e-300, where x is ill-conditioned in q), and the
    CDF follows the log-end asymptotics F ~ 1/log(1/x) (10% at x = 1e-300)."""
    from freeattn.attention._causal import _dt_cdf
    from freeattn.algebra._chebyshev import LogEnd
    ivs = [Interval(0.0, math.e, LogEnd(1.0, 1e-12), Fraction(1, 2))]
    rep = build_representation(_DTLaw.density, ivs, DEFAULT_OPTIONS, expected_mass=1.0,
                               log_density=_DTLaw.log_end_density)
    assert rep.panels[0].map.kind == "logend" and len(rep.panels) == 2
    x = np.array([1e-300, 1e-12, 1e-6, 1e-3, 0.1, 0.5, 2.0])
    np.testing.assert_allclose(rep.cdf(x), _dt_cdf(x), atol=1e-14)
    np.testing.assert_allclose(rep.pdf(x), _DTLaw.density(x), rtol=1e-11)
    q = _dt_cdf(x)
    # x is ill-conditioned in q next to the end: dx/x = dq/(x f) ~ dq log(1/x)**2,
    # so 1e-16 in q is 5e-11 in x at 1e-300
    np.testing.assert_allclose(rep.quantile(q, DEFAULT_OPTIONS)[1:], x[1:], rtol=1e-12)
    assert rep.quantile(q[:1], DEFAULT_OPTIONS)[0] == pytest.approx(1e-300, rel=1e-9)
    assert rep.cdf(np.array([1e-300]))[0] == pytest.approx(1 / math.log(1e300), rel=0.1)
    assert rep.pdf(np.array([0.0]))[0] == np.inf


def test_log_end_needs_its_density_hook():
    """eq. (8.18): an interval with a LogEnd needs log_density (its nodes are below
    the float range), and only a lower end may be logarithmic."""
    from freeattn.algebra._chebyshev import LogEnd
    with pytest.raises(ValueError, match="log_density"):
        build_representation(_DTLaw.density, [Interval(0.0, math.e, LogEnd(1.0), Fraction(1, 2))],
                             DEFAULT_OPTIONS)
    with pytest.raises(ValueError, match="lower end"):
        build_representation(_DTLaw.density, [Interval(0.0, math.e, Fraction(1, 2), LogEnd(1.0))],
                             DEFAULT_OPTIONS, log_density=_DTLaw.log_end_density)
    with pytest.raises(ValueError, match="scale"):
        LogEnd(-1.0)


def test_a_density_that_never_converges_stops_at_the_panel_budget():
    """eq. (8.14): samples with relative noise 1e-8 (far above cheb_noise_rtol) never
    converge; instead of splitting every panel to panel_max_depth the fit raises a
    ConvergenceError once more than PANEL_BUDGET panels are open."""
    from freeattn.algebra._chebyshev import PANEL_BUDGET

    rng = np.random.default_rng(0)

    def noisy(x):
        return np.sqrt(x * (1.0 - x)) * (1.0 + 1e-8 * rng.standard_normal(x.shape))

    with pytest.raises(ConvergenceError, match=f"more than {PANEL_BUDGET} panels"):
        build_representation(noisy, [Interval(0.0, 1.0, Fraction(1, 2), Fraction(1, 2))],
                             DEFAULT_OPTIONS)


@pytest.mark.parametrize("lo,hi", [(-1.9570325829851645, -0.22666889614376862),
                                   (1.44, 2.86), (0.3, 0.9), (-2.0, 2.0)])
def test_singular_edges_away_from_0_keep_the_mass_eq_8_14(lo, hi):
    """eq. (8.14) next to an ``x**(-1/2)`` edge ``e != 0``: the nodes' abscissae are
    formed from ``s`` by half-angle formulas and their rounding is moved back to the
    nodes by one first-order step, and an affine image maps the base's panels
    instead of fitting ``f((y - shift)/scale)`` anew (whose rounding next to the edge
    cost the arcsine on [-1.96, -0.23] mapped by 0.79 + 2.39 x 5.3e-9 of its mass,
    and the build raised).  Mass 1 to 1e-12 (measured <= 8e-13), the density against
    the closed form to 1e-12 at interior points, and the affine law's panels are the
    base's."""
    base = UserArcsine(lo, hi)
    for shift, scale in ((0.0, 1.0), (0.7945846282036388, 2.3914254292433337), (1.0, -0.5)):
        law = base.affine(shift, scale) if (shift, scale) != (0.0, 1.0) else base
        assert abs(law.total_mass() - 1.0) <= 1e-12
        x = lo + (hi - lo) * np.array([0.01, 0.2, 0.5, 0.8, 0.99])
        exact = 1.0 / (np.pi * np.sqrt((hi - x) * (x - lo))) / abs(scale)
        np.testing.assert_allclose(law.pdf(shift + scale * x), exact, rtol=1e-12)
        if law is not base:
            coefs = sorted(len(p.coef) for p in law._representation().panels)
            assert coefs == sorted(len(p.coef) for p in base._representation().panels)


def test_a_discrete_pair_fits_its_panels_in_one_round_eq_8_14(monkeypatch):
    """eq. (8.14): the ⊞ of two discrete laws of few atoms (cheap solves per point)
    starts every panel at 81 nodes: Bernoulli ⊞ Bernoulli (the arcsine law) takes one
    call of its density solver (measured; two from 9 nodes, [18, 144]), and its
    representation agrees with the closed form 1/(pi sqrt(4 - x**2)) to 1e-13
    relative on 1001 interior points of [-1.99, 1.99] (measured 2.0e-15), its mass
    with 1 to mass_atol (a new law object: nothing is cached between laws)."""
    from freeattn.algebra._chebyshev import CHEAP_SOLVER_START_NODES
    from freeattn.compose._analytic import AnalyticLaw

    law = free_additive(point_masses([-1.0, 1.0], [0.5, 0.5]),
                        point_masses([-1.0, 1.0], [0.5, 0.5]))
    assert isinstance(law, AnalyticLaw) and law._first_panel_nodes() == CHEAP_SOLVER_START_NODES
    calls = []
    original = AnalyticLaw._density

    def counting(self, x):
        calls.append(x.size)
        return original(self, x)
    monkeypatch.setattr(AnalyticLaw, "_density", counting)
    rep = law._representation()
    assert len(calls) == 1
    x = np.linspace(-1.99, 1.99, 1001)
    assert rep.pdf(x) == pytest.approx(1.0 / (math.pi * np.sqrt(4.0 - x * x)), rel=1e-13)
    assert abs(rep.total - 1.0) <= DEFAULT_OPTIONS.mass_atol


def _per_panel_pdf(rep, x):
    """Representation.pdf as the panels give it one at a time (Panel.density)."""
    out = np.zeros(x.shape)
    idx = rep.locate(x)
    for j in np.unique(idx[idx >= 0]):
        sel = idx == j
        out[sel] = rep.panels[j].density(x[sel])
    return out


@pytest.mark.parametrize("make", [
    lambda: free_additive(semicircle(1.0), point_masses([-3.0, 3.0], [0.5, 0.5])),
    lambda: marchenko_pastur(1.0, 0.5).squared(),
    lambda: UserArcsine(-1.9570325829851645, -0.22666889614376862),
])
def test_the_batched_density_is_each_panels_own_eq_8_14(make, monkeypatch):
    """Representation.pdf evaluates the points of the edge and smooth panels holding at
    most BATCH_PANEL_POINTS of them in one zero-padded Clenshaw recurrence; leading
    zero coefficients pass through the recurrence exactly, so every value equals its
    panel's own Panel.density bit for bit: on 801 points over the support and 5%
    beyond, every panel end, and points 1e-18 to 1e-1 of the width from each edge
    (edge values 0 or inf included) -- the batch evaluates them (counted) -- and on
    20001 points, where every panel holds more and keeps its own series."""
    from freeattn.algebra._chebyshev import BATCH_PANEL_POINTS

    law = make()
    rep = law._representation()
    batch = rep._batch()
    assert batch is not None and len(rep.panels) > 1
    calls = []
    real = batch.density
    monkeypatch.setattr(batch, "density", lambda *a: calls.append(a[0].size) or real(*a))
    lo, hi = law.support()
    w = hi - lo
    steps = w * np.logspace(-18, -1, 60)
    extra = np.concatenate([[lo, hi], [p.lo for p in rep.panels], [p.hi for p in rep.panels],
                            lo + steps, hi - steps])
    for points in (801, 20001):
        x = np.concatenate([np.linspace(lo - 0.05 * w, hi + 0.05 * w, points), extra])
        calls.clear()
        np.testing.assert_array_equal(rep.pdf(x), _per_panel_pdf(rep, x))
        counts = np.bincount(rep.locate(x)[rep.locate(x) >= 0])
        if counts.max() <= BATCH_PANEL_POINTS:
            assert calls == [int(counts.sum())]
        else:
            assert points == 20001 and calls == []


def test_one_long_series_keeps_the_per_panel_loop_eq_8_14(monkeypatch):
    """BATCH_PAD_FACTOR: where padding every point's series to the longest would cost
    more than that factor times the panels' own lengths, the batched recurrence is
    not used (checked by making it raise), and the values are still the panels'."""
    from freeattn.algebra import _chebyshev

    law = free_additive(semicircle(1.0), point_masses([-3.0, 3.0], [0.5, 0.5]))
    rep = law._representation()
    batch = rep._batch()
    # pretend the longest series is 10 times its length: a padded cost of 10x
    longest = batch.degree_of(np.ones(len(rep.panels), dtype=bool))
    monkeypatch.setattr(batch, "degree_of", lambda panels: 10 * longest)

    def refuse(*args):
        raise AssertionError("the padded recurrence ran")
    monkeypatch.setattr(batch, "density", refuse)
    x = np.linspace(-4.4, 4.4, 501)
    assert _chebyshev.BATCH_PAD_FACTOR < 10
    np.testing.assert_array_equal(rep.pdf(x), _per_panel_pdf(rep, x))


def test_a_log_end_panel_keeps_its_own_map_beside_batched_panels_eq_8_18():
    """eq. (8.18): a log-end panel is not in the padded recurrence; beside it, the
    small panels of another density are.  The causal law's panels (a log end at 0)
    followed by the four panels of SC ⊞ {±3} moved by +20: every value on 801 points
    equals its panel's own, and the batch evaluated exactly the points of the panels
    that are not the log end (the causal law's right panel and the moved ones)."""
    from freeattn import causal_law
    from freeattn.algebra._chebyshev import Representation

    causal = causal_law(1.0, 1.0)._representation().panels
    assert any(p.map.kind == "logend" for p in causal)
    moved = [p.mapped(20.0, 1.0) for p in free_additive(
        semicircle(1.0), point_masses([-3.0, 3.0], [0.5, 0.5]))._representation().panels]
    rep = Representation(list(causal) + moved)
    batch = rep._batch()
    calls = []
    real = batch.density
    batch.density = lambda *a: calls.append(a[0].size) or real(*a)
    x = np.linspace(-0.5, 25.0, 801)
    np.testing.assert_array_equal(rep.pdf(x), _per_panel_pdf(rep, x))
    idx = rep.locate(x)
    kinds = np.array([p.map.kind for p in rep.panels])
    batched = (idx >= 0) & (kinds[np.clip(idx, 0, None)] != "logend")
    assert np.count_nonzero((idx >= 0) & ~batched) > 0          # the log end has points
    assert calls == [np.count_nonzero(batched)]


def test_graded_cuts_only_beside_a_gap_of_positive_width():
    """theory section 8.6: beside a narrow gap the edge panel spans 16 gaps and panels grow
    by 4 (cuts towards the edge); bands that touch (a gap of 0) or overlap by rounding
    get one panel, where the grading would never end (a build ran out of memory)."""
    from freeattn.algebra._chebyshev import NEAR_SPLIT_EDGE_GAPS, _graded_cuts

    gap = 1e-9
    cuts = _graded_cuts(1.0, 2.0, -1, gap)
    assert cuts[0] == 1.0 and cuts[1] == pytest.approx(1.0 + NEAR_SPLIT_EDGE_GAPS * gap,
                                                       rel=1e-12)
    assert cuts[-1] == 2.0 and np.all(np.diff(cuts) > 0)
    for gap in (0.0, -1e-20):
        assert _graded_cuts(1.0, 2.0, -1, gap) == [1.0, 2.0]
        assert _graded_cuts(1.0, 2.0, 1, gap) == [1.0, 2.0]


#: A band 3.4e-5 wide at 3.653 (the band of the depth-3 campaign's seed 55 / draw 44).
NOISY_BAND = (3.653, 1.7e-5)
#: Its mass from exact samples against 1 (measured 2.2e-16).
EXACT_SAMPLES_MASS_ATOL = 1e-14


def _noisy_semicircle(x, ulps):
    """The semicircle density on ``NOISY_BAND`` at abscissae perturbed by a deterministic
    pseudo-random ``ulps * eps * |x|`` (a hash of the float's bits): the rounding a
    density solved by Newton carries (eq. (8.38))."""
    c, r = NOISY_BAND
    bits = np.asarray(x, dtype=float).view(np.uint64)
    u = ((bits * np.uint64(2654435761)) % np.uint64(2 ** 32)).astype(float) / 2 ** 31 - 1.0
    xn = x * (1.0 + ulps * np.finfo(float).eps * u)
    return 2.0 / (np.pi * r * r) * np.sqrt(np.maximum(r * r - (xn - c) ** 2, 0.0))


def test_a_floor_a_tripling_confirms_is_accepted_up_to_eight_floors_eq_8_38(monkeypatch):
    from freeattn.algebra import _chebyshev

    c, r = NOISY_BAND
    bands = [Interval(c - r, c + r, Fraction(1, 2), Fraction(1, 2))]

    def build(ulps):
        return build_representation(lambda x: _noisy_semicircle(x, ulps), bands,
                                    DEFAULT_OPTIONS, expected_mass=1.0, zero_scale=c)

    # exact samples: no panel at a floor, the mass to rounding
    rep = build(0)
    assert not any(p.plateau for p in rep.panels)
    assert abs(rep.total - 1.0) <= 1e-14
    # 3000 ulps of noise in x: the tails plateau between the floor and 8 times it, the
    # panels are kept with their errors (measured: 2 panels, mass 4.9e-9 off, error 6.3e-8)
    rep = build(3000)
    assert len(rep.panels) <= 4 and any(p.plateau for p in rep.panels)
    assert abs(rep.total - 1.0) <= rep.error
    # the floor of eq. (8.14) alone splits those panels to the panel budget
    monkeypatch.setattr(_chebyshev, "PLATEAU_FLOOR_FACTOR", 1.0)
    with pytest.raises(ConvergenceError, match="panels"):
        build(3000)


@pytest.mark.slow
def test_a_sum_whose_density_plateaus_above_the_floor_builds_eq_8_38():
    # the depth-3 campaign's seed 55 / draw 44: 778 panels and 215 s before eq. (8.38)
    a = free_additive(point_masses([2.095], [1.0]),
                      attention_law(0.0028037, 4.5761).squared())
    b = free_additive(point_masses([1.558], [1.0]), sample_covariance(
        attention_law(0.063218, 2.9717).squared(), 7.3756))
    law = free_additive(a, b)
    acc = law.accuracy()
    # measured: 7 panels, mass 1.3e-8 off, stated error 1.0e-7
    assert acc.panels <= 16
    assert acc.mass_error <= acc.representation_error
    assert any(p.plateau for p in law._representation().panels)
