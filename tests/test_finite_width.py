"""Tests of the finite-width harmonic Gaussian equivalent (theory note 15)."""

import numpy as np
import pytest
from scipy.special import roots_jacobi
from scipy.stats import ks_2samp

import freeattn
from freeattn.montecarlo._finite_width import (EmpiricalSpectrumLaw, _gaussian_product,
                                    finite_width_law, gegenbauer_coefficients,
                                    harmonic_dimension, harmonic_equivalent_matrix,
                                    harmonic_noise_variance)
from freeattn.montecarlo._sampling import squared_singular_values

# Gauss-Jacobi nodes for the cosine law (15.2); 200 nodes integrate e^{x t} times a
# polynomial of degree <= 4 to ~1e-14 relative for x <= 60 (the error of a
# 200-node rule is that of the degree-400 Taylor remainder of e^{xt}).
QUADRATURE_NODES = 200
QUADRATURE_RTOL = 1e-10


def _cosine_rule(d):
    t, w = roots_jacobi(QUADRATURE_NODES, (d - 3) / 2, (d - 3) / 2)
    return t, w / w.sum()


def _legendre(d):
    return [lambda t: np.ones_like(t), lambda t: t, lambda t: (d * t ** 2 - 1) / (d - 1)]


def _attention(n, d, beta, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d))
    k = rng.standard_normal((n, d))
    logits = beta * q @ k.T / np.sqrt(d)
    a = np.exp(logits - logits.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    return squared_singular_values(np.sqrt(n) * (a - 1.0 / n))


# --- eq. (15.3): harmonic dimensions and orthogonality -------------------------------

def test_harmonic_dimensions_closed_forms():
    # eq. (15.3): N_1 = d, N_2 = (d + 2)(d - 1)/2; N_3 at d = 3 is 2*3 + 1 = 7 (the
    # dimension of degree-l harmonics on S^2 is 2l + 1).
    for d in (3, 8, 32, 128):
        assert harmonic_dimension(d, 0) == 1
        assert harmonic_dimension(d, 1) == d
        assert harmonic_dimension(d, 2) == (d + 2) * (d - 1) // 2
    assert [harmonic_dimension(3, l) for l in range(6)] == [1, 3, 5, 7, 9, 11]


@pytest.mark.parametrize("d", [8, 32])
def test_legendre_orthogonality(d):
    # eq. (15.3): E[P_l P_m] = delta_lm / N_l under the cosine law (15.2).
    t, w = _cosine_rule(d)
    p = _legendre(d)
    for a in range(3):
        for b in range(3):
            value = np.sum(w * p[a](t) * p[b](t))
            expected = 1.0 / harmonic_dimension(d, a) if a == b else 0.0
            assert value == pytest.approx(expected, abs=1e-13)


def test_cosine_law_matches_sampled_directions():
    # eq. (15.2): the cosine of two Gaussian directions has variance 1/d and fourth
    # moment 3/(d(d + 2)); 20000 seeded pairs at d = 16, tolerance 5 standard errors.
    d = 16
    rng = np.random.default_rng(3)
    u = rng.standard_normal((20000, d))
    v = rng.standard_normal((20000, d))
    t = np.sum(u * v, axis=1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert abs(np.mean(t ** 2) - 1 / d) < 5 * np.std(t ** 2) / np.sqrt(t.size)
    assert abs(np.mean(t ** 4) - 3 / (d * (d + 2))) < 5 * np.std(t ** 4) / np.sqrt(t.size)


# --- eq. (15.4): Bessel form of the coefficients -------------------------------------

@pytest.mark.parametrize("d", [4, 16, 32, 128])
def test_coefficients_match_quadrature(d):
    # eq. (15.4) against Gauss-Jacobi quadrature of c_l = N_l E[e^{xt} P_l(t)].
    t, w = _cosine_rule(d)
    x = np.array([1e-2, 0.7, 3.0, 11.0, 40.0])
    bessel = gegenbauer_coefficients(x, d)
    for degree, p in enumerate(_legendre(d)):
        quad = harmonic_dimension(d, degree) * np.sum(
            w * np.exp(np.outer(x, t)) * p(t), axis=1)
        # quadrature of P_2 cancels at small x: absolute floor 1e-12 N_l
        np.testing.assert_allclose(bessel[degree], quad, rtol=QUADRATURE_RTOL,
                                   atol=1e-12 * harmonic_dimension(d, degree))


def test_coefficients_small_argument():
    # eq. (15.4) as x -> 0: c_0 = 1 + x^2/(2d), c_1 = x (1 + O(x^2)), c_2 = N_2 x^2/(d(d+2)) (1+O(x^2))
    # (Taylor expansion of E[e^{xt} P_l(t)] with E t^2 = 1/d, E t^4 = 3/(d(d+2))).
    d, x = 32, 1e-4
    c0, c1, c2 = gegenbauer_coefficients([x], d)
    assert c0[0] == pytest.approx(1 + x ** 2 / (2 * d), rel=1e-14)
    assert c1[0] == pytest.approx(x, rel=1e-7)
    e_p2_t2 = (d * 3 / (d * (d + 2)) - 1 / d) / (d - 1)
    assert c2[0] == pytest.approx(harmonic_dimension(d, 2) * x ** 2 / 2 * e_p2_t2, rel=1e-7)


# --- eq. (15.5): the residual variance ------------------------------------------------

@pytest.mark.parametrize("d", [8, 32])
def test_noise_variance_is_the_tail_of_the_series(d):
    # eq. (15.5): v equals the sum over l >= 3 of c_l^2 / N_l, by quadrature of the
    # degree-3 to degree-60 Gegenbauer components (the series converges fast at x <= 6).
    from scipy.special import eval_gegenbauer
    lam = d / 2 - 1
    t, w = _cosine_rule(d)
    x = np.array([0.5, 2.0, 6.0])
    tail = np.zeros_like(x)
    for degree in range(3, 60):
        p = eval_gegenbauer(degree, lam, t) / eval_gegenbauer(degree, lam, 1.0)
        norm = np.sum(w * p * p)
        c = np.sum(w * np.exp(np.outer(x, t)) * p, axis=1) / norm
        tail += c ** 2 * norm
    # rtol 1e-8, plus the documented absolute rounding floor 1e-14 c_0(2x) of the subtraction
    (second,) = gegenbauer_coefficients(2 * x, d, degrees=(0,))
    np.testing.assert_allclose(harmonic_noise_variance(x, d), tail, rtol=1e-8,
                               atol=1e-14 * second.max())


# --- eq. (15.7): reduction to the paper's coefficients -----------------------------

@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_wide_head_limit_recovers_the_paper_coefficients(beta):
    # eq. (15.7): at d = 1e4 the harmonic coefficients are those of note 02 (beta,
    # beta^4/2, theta1 = e^{beta^2} - 1) up to O(1/d) = 1e-4 (relative tolerance 2e-3).
    d = 10_000
    x = beta * np.sqrt(d)
    c0, c1, c2 = gegenbauer_coefficients([x], d)
    (c0_2x,) = gegenbauer_coefficients([2 * x], d, degrees=(0,))
    assert np.exp(-beta ** 2 / 2) * c1[0] / np.sqrt(d) == pytest.approx(beta, rel=2e-3)
    assert np.exp(-beta ** 2) * c2[0] ** 2 / harmonic_dimension(d, 2) == pytest.approx(
        beta ** 4 / 2, rel=2e-3)
    assert np.exp(-beta ** 2) * (c0_2x[0] - c0[0] ** 2) == pytest.approx(
        np.expm1(beta ** 2), rel=2e-3)


# --- eq. (15.6): the model and its sampler -------------------------------------------

def test_gaussian_product_second_moments():
    # eq. (15.6): G H^T / N_2 (sampled through the Bartlett factor when N_2 >= n) has
    # entry variance 1/N_2, so squared Frobenius norm n^2/N_2 (relative sd ~ sqrt(2/n^2 +
    # 2/(n N_2)) < 1e-2 at these sizes; tolerance 2%).
    rng = np.random.default_rng(7)
    for n, width in ((100, 400), (100, 50)):
        x = _gaussian_product(n, width, rng)
        assert np.sum(x * x) == pytest.approx(n * n / width, rel=0.02)
        # spectrum of X X^T: the product of two free Poisson laws of ratios 1 and n/width has
        # m2/m1^2 = 1 + 1 + n/width (free cumulants add); tolerance 10% at n = 100
        ev = np.linalg.eigvalsh(x @ x.T) * width / n
        ratio = np.mean(ev ** 2) / np.mean(ev) ** 2
        assert ratio == pytest.approx(2 + n / width, rel=0.1)


def test_model_entry_variance_matches_attention_kernel():
    # eqs. (15.5) and (15.6): given the norms, n E[Y_ij^2] = e^{-beta^2 r_i^2}(c_0(2x) - c_0(x)^2),
    # the conditional variance of F in eq. (15.1) minus its degree-0 part.  The draw's norms
    # are rebuilt from the same seed (the sampler draws Q, then K, first); the remaining
    # randomness (directions, G, H, W) averages over 300^2 entries: relative sd ~ 1%,
    # tolerance 4%.
    n, d, beta = 300, 16, 1.0
    y = harmonic_equivalent_matrix(n, d, beta, rng=np.random.default_rng(11))
    rng = np.random.default_rng(11)
    r = np.linalg.norm(rng.standard_normal((n, d)), axis=1) / np.sqrt(d)
    rho = np.linalg.norm(rng.standard_normal((n, d)), axis=1) / np.sqrt(d)
    x = beta * np.sqrt(d) * np.outer(r, rho)
    (c0,) = gegenbauer_coefficients(x, d, degrees=(0,))
    (c0_2x,) = gegenbauer_coefficients(2 * x, d, degrees=(0,))
    profile = np.exp(-beta ** 2 * r ** 2)[:, None] * (c0_2x - c0 ** 2)
    assert n * np.mean(y ** 2) == pytest.approx(np.mean(profile), rel=0.04)
    # row by row the profile is followed too (each row: n entries, relative sd ~ 10%)
    ratio = np.mean(y ** 2, axis=1) * n / np.mean(profile, axis=1)
    assert abs(np.median(ratio) - 1) < 0.05


def test_finite_width_law_interface():
    law = finite_width_law(0.5, n=64, d=16, draws=2, rng=0)
    assert isinstance(law, EmpiricalSpectrumLaw)
    assert law.values.size == 128
    assert float(law.cdf(law.support()[1])) == 1.0
    assert float(law.cdf(-1.0)) == 0.0
    grid = np.linspace(0.0, law.support()[1] * 1.5, 4001)
    # the reflected kernel density integrates to 1 on [0, inf) (trapezoid error ~1e-4 on
    # this grid, tolerance 1e-3) and vanishes below 0
    mass = np.trapezoid(law.pdf(grid), grid)
    assert mass == pytest.approx(1.0, abs=1e-3)
    assert float(law.pdf(-0.5)) == 0.0
    # seeded: the same rng gives the same law
    assert np.array_equal(law.values, finite_width_law(0.5, n=64, d=16, draws=2, rng=0).values)


@pytest.mark.parametrize("kwargs, error", [
    (dict(beta=0.0, n=64, d=16), ValueError), (dict(beta=2.5, n=64, d=16), ValueError),
    (dict(beta="1", n=64, d=16), TypeError), (dict(beta=1.0, n=64.0, d=16), TypeError),
    (dict(beta=1.0, n=64, d=2), ValueError), (dict(beta=1.0, n=1, d=16), ValueError)])
def test_bad_input(kwargs, error):
    with pytest.raises(error):
        finite_width_law(**kwargs)


def test_registered_model_samples_the_harmonic_model():
    # The registry entry samples eq. (15.6): its mean squared singular value (the squared
    # Frobenius norm over n) matches the mean conditional variance E[e^{-beta^2 r^2}(c_0(2x) -
    # c_0(x)^2)] over the chi norm laws (4e4 seeded norm pairs, relative sd ~ 1%); one 200 x 200
    # draw at d = 16 has relative sd ~ 6% from its 200 + 200 norms: tolerance 20%.
    assert "harmonic_equivalent" in freeattn.MODELS
    n, d, beta = 200, 16, 1.0
    y = freeattn.sample_model("harmonic_equivalent", n, d, beta, rng=4)
    rng = np.random.default_rng(12)
    r = np.sqrt(rng.chisquare(d, 40000) / d)
    x = beta * np.sqrt(d) * r * np.sqrt(rng.chisquare(d, 40000) / d)
    (c0,) = gegenbauer_coefficients(x, d, degrees=(0,))
    (c0_2x,) = gegenbauer_coefficients(2 * x, d, degrees=(0,))
    expected = np.mean(np.exp(-beta ** 2 * r ** 2) * (c0_2x - c0 ** 2))
    assert np.mean(squared_singular_values(y)) == pytest.approx(expected, rel=0.2)
    with pytest.raises(ValueError, match="d_qk"):
        freeattn.validate(0.5, gamma=2 / 128, n=128, draws=1, models=("harmonic_equivalent",))


# --- Monte Carlo: where (15.6) holds and where it does not (theory section 15.5) ---------

@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["gaussian", "signed"])
def test_model_beats_the_paper_at_a_narrow_head(noise):
    # theory section 15.4, eqs. (15.6) and (15.8): at (n, d, beta) = (256, 32, 0.5), 2 draws
    # each (attention seeds 1, 2; model rng = 5), measured KS 0.014 for both noises with an
    # attention-vs-attention floor of 0.014, and 0.117 for the paper's law.  Tolerance:
    # model < 0.04 (about 3x the floor), paper > 0.08.
    from scipy.stats import kstest
    n, d, beta = 256, 32, 0.5
    att = np.concatenate([_attention(n, d, beta, s) for s in (1, 2)])
    law = finite_width_law(beta, n=n, d=d, draws=2, noise=noise, rng=5)
    paper = freeattn.attention_law(beta, d / n).squared()
    assert ks_2samp(att, law.values).statistic < 0.04
    assert kstest(att, paper.cdf).statistic > 0.08


@pytest.mark.statistical
@pytest.mark.parametrize("d, beta, noise, measured", [
    (8, 0.5, "gaussian", 0.148), (8, 0.5, "signed", 0.148), (32, 2.0, "gaussian", 0.098)])
def test_model_fails_outside_its_regime(d, beta, noise, measured):
    # theory section 15.5: at n = 256 the models miss attention when degree 3 is
    # structured (d = 8: N_3 = 112 < n), and (15.6) also when the softmax is hot
    # (beta = 2); measured KS 0.148, 0.148 and 0.098 (2 draws each, seeds as above) against
    # floors of 0.010 and 0.023.  Asserted: KS > 0.06, more than twice the floor.
    n = 256
    att = np.concatenate([_attention(n, d, beta, s) for s in (1, 2)])
    law = finite_width_law(beta, n=n, d=d, draws=2, noise=noise, rng=5)
    assert ks_2samp(att, law.values).statistic > 0.06


def test_signed_remainder_is_the_exact_kernel_tail():
    # eq. (15.8): with the signs all +1 the signed model's rest equals e^{xt} - c_0 - c_1 t -
    # c_2 P_2(t); its conditional mean square over t is v(x) of eq. (15.5).  Checked by
    # Gauss-Jacobi quadrature over the cosine law (15.2).
    d = 16
    t, w = _cosine_rule(d)
    x = np.array([0.8, 3.0, 7.0])[:, None]
    c0, c1, c2 = gegenbauer_coefficients(x, d)
    remainder = np.exp(x * t) - c0 - c1 * t - c2 * (d * t * t - 1) / (d - 1)
    np.testing.assert_allclose(np.sum(w * remainder ** 2, axis=1),
                               harmonic_noise_variance(x[:, 0], d), rtol=1e-8)


def test_noise_kind_is_checked():
    with pytest.raises(ValueError, match="noise"):
        harmonic_equivalent_matrix(16, 8, 0.5, noise="uniform", rng=0)


def test_benchmark_row_runs_at_a_tiny_size(monkeypatch):
    # benchmarks/finite_width.py (the script behind the table of theory section 15.4): one
    # row at n = 64 has the three distances in (0, 1] and, with a fake clock that
    # advances 1.25 s at every reading, the time per draw read off it.
    from conftest import FakeClock, load_script
    module = load_script("benchmarks/finite_width.py")
    clock = FakeClock()
    monkeypatch.setattr(module, "time", clock)
    row = module.row(64, 16, 0.5, 1)
    assert all(0 < row[key] <= 1 for key in ("paper", "gaussian", "signed", "noise"))
    assert row["seconds_per_draw"] == (clock.readings[-1] - clock.readings[0]) / 1 == 1.25
