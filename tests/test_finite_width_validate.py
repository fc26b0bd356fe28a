"""Finite head width in the validation report, the sequence of approximations of theory
section 15.3 as registry models, and degree 3 kept for narrow heads (theory note 15).

The statistical tests are seeded (``rng=0``) at sizes CI affords (``n = 256``,
``d = 32``, 2 draws); each tolerance is a named constant with the measurement it comes
from (the numbers of ``validate`` at that seed, which ``benchmarks/finite_width.py``
reproduces at larger sizes).
"""

import csv
import io
import json
import math

import numpy as np
import pytest
from scipy.special import eval_gegenbauer, roots_jacobi
from scipy.stats import ks_2samp

import freeattn
from freeattn.montecarlo import _statistics as stats
from freeattn.montecarlo._finite_width import (SEQUENCE_MODELS, gegenbauer_coefficients,
                                               gegenbauer_polynomial, harmonic_dimension,
                                               harmonic_equivalent_matrix,
                                               harmonic_noise_variance, hermite_noise_variance,
                                               hermite_truncation_matrix, row_variance_matrix)

# The CI point of theory section 15.4 at n = 256 (d = 32, gamma = 1/8), 2 draws, rng = 0.
N, D, DRAWS, SEED = 256, 32, 2, 0

#: harmonic_signed against attention at (256, 32, 0.5), rng = 0: measured KS 0.0163 with a
#: floor of 0.0176 (ratio 0.92; over rng = 0..4 the ratio was 0.92, 1.76, 2.05, 0.91, 0.68:
#: the floor is one realisation of a two-sample distance at 2 x 256 values).  Asserted: the
#: ratio is below 2, where theory section 15.4 says the model holds (beta = 0.5, d = 32).
MAX_RATIO_WHERE_IT_HOLDS = 2.0
#: The paper's law is 0.0984 from attention at the same point, 6.0 times the model's
#: distance (5.6 to 6.1 over the five seeds above, 0.098-0.112 in absolute terms).
#: Asserted: at least 4 times, and at least 4 times the floor.
MIN_LAW_OVER_MODEL = 4.0
#: Gauss-Jacobi nodes for the cosine law (15.2), as in tests/test_finite_width.py (the
#: 200-node rule integrates e^{xt} times a polynomial of degree <= 6 to ~1e-14 at x <= 40).
QUADRATURE_NODES = 200


def _cosine_rule(d):
    t, w = roots_jacobi(QUADRATURE_NODES, (d - 3) / 2, (d - 3) / 2)
    return t, w / w.sum()


@pytest.fixture(scope="module")
def signed_report():
    return freeattn.validate(0.5, D / N, N, DRAWS, models=("harmonic_signed",), rng=SEED,
                             progress=False)


# --- 1. validate: models without a law against sampled attention ----------------------

@pytest.mark.statistical
def test_validate_gives_harmonic_signed_its_distance_to_attention(signed_report):
    # theory section 15.4, eq. (15.8): at (256, 32, 0.5) the signed harmonic model is within
    # the Monte Carlo floor of attention and the paper's law is not.
    r = signed_report.results["harmonic_signed"]
    assert r.compared_with == "attention"
    assert math.isnan(r.ks)                                 # no limit law of its own
    assert r.ks_compared_ratio == pytest.approx(r.ks_compared / r.ks_compared_floor, rel=1e-15)
    assert r.ks_compared < MAX_RATIO_WHERE_IT_HOLDS * r.ks_compared_floor
    assert r.ks_compared_law > MIN_LAW_OVER_MODEL * r.ks_compared
    assert r.ks_compared_law > MIN_LAW_OVER_MODEL * r.ks_compared_floor
    # attention was added (it was not asked for), and its row's KS is the one quoted
    assert list(signed_report.results) == ["attention", "harmonic_signed"]
    assert r.ks_compared_law == signed_report.results["attention"].ks
    assert signed_report.results["attention"].compared_with == ""


def test_report_outputs_carry_the_sampled_comparison(signed_report):
    """json, csv and text show the same comparison fields; the chain's rows have none."""
    r = signed_report.results["harmonic_signed"]
    data = json.loads(signed_report.to_json())["results"]
    assert data["harmonic_signed"]["ks_compared"] == r.ks_compared
    assert data["harmonic_signed"]["compared_with"] == "attention"
    assert data["attention"]["ks_compared"] is None                 # NaN -> null
    rows = {row["model"]: row for row in csv.DictReader(io.StringIO(signed_report.to_csv()))}
    assert float(rows["harmonic_signed"]["ks_compared_floor"]) == r.ks_compared_floor
    assert rows["attention"]["compared_with"] == ""
    text = signed_report.to_text()
    assert "Sampled comparisons" in text and f"{r.ks_compared:.4f}" in text
    assert f"{r.ks_compared_ratio:.2f}" in text
    assert "harmonic_signed nan" not in text.splitlines()[0]        # no NaN "own edge"


def test_sampled_distance_is_the_two_sample_ks_of_the_pooled_bulks():
    """ks_compared and its floor are two-sample KS distances of pooled bulks (theory eq. (7.9)
    with an empirical second law): rebuilt here from the draws validate runs (draw i on the
    i-th child of the root seed, the floor on children draws + 1 ...), checked against scipy."""
    from freeattn.montecarlo._draws import run_draw
    n, d, draws = 64, 16, 2
    report = freeattn.validate(0.5, d / n, n, draws, models=("harmonic_equivalent",), rng=7,
                               progress=False)
    root = np.random.SeedSequence(7)
    main = [run_draw(n, d, 0.5, ("attention", "harmonic_equivalent"), s)
            for s in root.spawn(draws)]
    root.spawn(1)
    floor = [run_draw(n, d, 0.5, ("attention",), s) for s in root.spawn(draws)]
    # attention's bulk drops its structural zero (and no outlier at this size: removed == 2)
    assert report.results["attention"].removed == draws
    att = np.concatenate([s["attention"][1:] for s in main])
    twin = np.concatenate([s["attention"][1:] for s in floor])
    model = np.concatenate([s["harmonic_equivalent"] for s in main])
    r = report.results["harmonic_equivalent"]
    assert r.ks_compared == pytest.approx(ks_2samp(model, att).statistic, abs=1e-15)
    assert r.ks_compared_floor == pytest.approx(ks_2samp(att, twin).statistic, abs=1e-15)


def test_two_sample_ks_matches_scipy():
    # theory eq. (7.9), both laws empirical: scipy.stats.ks_2samp on seeded samples of
    # unequal sizes, with ties.
    rng = np.random.default_rng(1)
    a = np.sort(np.round(rng.standard_normal(300), 1))
    b = np.sort(np.round(rng.standard_normal(170) + 0.2, 1))
    assert stats.ks_two_sample(a, b) == pytest.approx(ks_2samp(a, b).statistic, abs=1e-15)
    with pytest.raises(ValueError, match="non-empty"):
        stats.ks_two_sample(a, a[:0])


def test_compare_with_is_checked():
    def sample(draw):
        return draw.take("linear_noise") / np.sqrt(draw.n)

    with pytest.raises(ValueError, match="compare_with"):
        freeattn.Model("self_compared", sample, uses=("linear_noise",), compare_with="self_compared")
    with pytest.raises(ValueError, match="compare_with"):
        freeattn.Model("empty_compared", sample, uses=("linear_noise",), compare_with="")
    orphan = freeattn.Model("orphan_example", sample, uses=("linear_noise",),
                            compare_with="no_such_model")
    with pytest.raises(ValueError, match="no_such_model"):
        freeattn.validate(1.0, 1.0, 8, 1, models=(orphan,), progress=False)


def test_cli_validate_shows_the_comparison(capsys):
    from freeattn.cli._cli import main
    code = main(["validate", "--beta", "0.5", "--gamma", "0.25", "--n", "32", "--draws", "2",
                 "--seed", "3", "--models", "harmonic_signed", "--no-progress"])
    out = capsys.readouterr().out
    expected = freeattn.validate(0.5, 0.25, 32, 2, models=("harmonic_signed",), rng=3,
                                 progress=False)
    assert code == 0 and out.strip() == expected.to_text()
    assert "Sampled comparisons" in out


# --- 2. the sequence of approximations (theory section 15.3) ---------------------------

def test_hermite_noise_variance_closed_forms():
    # theory eq. (15.9): alpha_m^2 = e^{beta^2} - 1 - sum_{k<=m} beta^{2k}/k! (eq. (2.4) for
    # theta1); at beta = 1e-3 the tail is beta^8/4! (1 + beta^2/5 + ...), no cancellation.
    assert hermite_noise_variance(1.0, 1) == pytest.approx(math.e - 2, rel=1e-14)
    assert hermite_noise_variance(0.5, 2) == pytest.approx(
        math.exp(0.25) - 1 - 0.25 - 0.25 ** 2 / 2, rel=1e-12)
    assert hermite_noise_variance(1e-3, 3) == pytest.approx(1e-24 / 24, rel=1e-6)


def test_hermite_order_one_is_the_linear_model():
    # theory eq. (15.9) at m = 1 is the linear model (7.6): (beta S + alpha W)/sqrt(n), alpha^2 =
    # theta1 - beta^2, rebuilt from the same generator (Q, K, then W), to rounding.
    n, d, beta = 40, 8, 0.7
    y = hermite_truncation_matrix(n, d, beta, order=1, rng=5)
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    w = rng.standard_normal((n, n))
    alpha = np.sqrt(np.expm1(beta ** 2) - beta ** 2)
    np.testing.assert_allclose(y, (beta * q @ k.T / np.sqrt(d) + alpha * w) / np.sqrt(n),
                               rtol=1e-12, atol=1e-14)
    # order 3 adds beta^2 He_2(S)/2 + beta^3 He_3(S)/6 with He_2 = s^2 - 1, He_3 = s^3 - 3 s
    y3 = hermite_truncation_matrix(n, d, beta, order=3, rng=5)
    s = q @ k.T / np.sqrt(d)
    expected = (beta * s + beta ** 2 * (s * s - 1) / 2 + beta ** 3 * (s ** 3 - 3 * s) / 6
                + np.sqrt(hermite_noise_variance(beta, 3)) * w) / np.sqrt(n)
    np.testing.assert_allclose(y3, expected, rtol=1e-12, atol=1e-14)


def test_row_variance_model_second_moment():
    # theory eq. (15.1): given q_i, E[(e^{beta s - beta^2 r^2/2} - 1)^2] = e^{beta^2 r_i^2} - 1, and
    # over r^2 ~ chi^2_d/d, E[e^{beta^2 r^2}] = (1 - 2 beta^2/d)^{-d/2}.  Row by row against the
    # row's own r_i (rebuilt from the generator: Q first); the mean over 300 x 300 entries has
    # relative sd ~ 2% (measured spread over seeds), tolerance 6%.
    n, d, beta = 300, 16, 0.5
    y = row_variance_matrix(n, d, beta, rng=9)
    q = np.random.default_rng(9).standard_normal((n, d))
    r2 = np.einsum("ij,ij->i", q, q) / d
    assert n * np.mean(y ** 2) == pytest.approx(np.mean(np.expm1(beta ** 2 * r2)), rel=0.06)
    assert n * np.mean(y ** 2) == pytest.approx((1 - 2 * beta ** 2 / d) ** (-d / 2) - 1,
                                                rel=0.06)
    # rows have conditional mean 0 given q_i: |mean| below 5 standard errors
    rowsum = y.sum(axis=1) * np.sqrt(n) / n
    se = np.sqrt(np.expm1(beta ** 2 * r2) / n)
    assert np.mean(np.abs(rowsum) / se) < 5 * np.sqrt(2 / np.pi) * 1.5


@pytest.mark.parametrize("name", SEQUENCE_MODELS)
def test_sequence_models_are_registered_and_reproducible(name):
    model = freeattn.MODELS[name]
    assert model.compare_with == "attention" and model.law is None
    a = freeattn.sample_model(name, 48, 12, 1.0, rng=2)
    b = freeattn.sample_model(name, 48, 12, 1.0, rng=2)
    assert a.shape == (48, 48) and np.array_equal(a, b)
    assert not np.array_equal(a, freeattn.sample_model(name, 48, 12, 1.0, rng=3))


#: The sequence at (256, 32, 1.0), rng = 0, 2 draws: measured KS to attention 0.1325 (paper's
#: law), 0.0896 (+ He_2), 0.0504 (+ He_3), 0.0142 (own row variance, eq. (15.1)), with a
#: floor of 0.0135.  Consecutive gaps 0.043, 0.039, 0.036 are 3 floors each; asserted:
#: each step closer than the previous by at least SEQUENCE_GAP (1.5 floors of 0.0135).
SEQUENCE_GAP = 0.02
#: (15.1) is at the floor (ratio 1.05); asserted below 2 floors.
ROW_VARIANCE_MAX_RATIO = 2.0


@pytest.mark.statistical
def test_distances_shrink_along_the_sequence():
    # theory section 15.3, eqs. (7.6), (15.9), (15.1): linear (the paper's law) -> + He_2 ->
    # + He_3 -> the kernel with the row's own variance.
    report = freeattn.validate(1.0, D / N, N, DRAWS, models=SEQUENCE_MODELS, rng=SEED,
                               progress=False)
    paper = report.results["attention"].ks
    ks = [report.results[m].ks_compared for m in SEQUENCE_MODELS]
    steps = [paper] + ks
    assert all(a - b > SEQUENCE_GAP for a, b in zip(steps, steps[1:])), steps
    assert report.results["row_variance"].ks_compared_ratio < ROW_VARIANCE_MAX_RATIO


# --- 3. degree 3 as a Gaussian product (theory eq. (15.10)) ----------------------------

@pytest.mark.parametrize("d", [8, 16])
def test_degree_three_polynomial_and_coefficient(d):
    # eq. (15.3): P_3 = ((d+2)t^3 - 3t)/(d-1) has P_3(1) = 1 and E[P_3 P_m] = delta_3m/N_3 under
    # the cosine law (15.2); eq. (15.4): c_3 = N_3 E[e^{xt} P_3(t)] (Gauss-Jacobi quadrature,
    # rtol 1e-10 as in tests/test_finite_width.py).  Cross-checked with scipy's Gegenbauer.
    t, w = _cosine_rule(d)
    p3 = gegenbauer_polynomial(t, d, 3)
    lam = d / 2 - 1
    np.testing.assert_allclose(p3, eval_gegenbauer(3, lam, t) / eval_gegenbauer(3, lam, 1.0),
                               rtol=1e-12, atol=1e-14)
    for m in range(4):
        expected = 1 / harmonic_dimension(d, 3) if m == 3 else 0.0
        assert np.sum(w * p3 * gegenbauer_polynomial(t, d, m)) == pytest.approx(expected,
                                                                                abs=1e-13)
    x = np.array([0.3, 2.0, 9.0])
    (c3,) = gegenbauer_coefficients(x, d, degrees=(3,))
    quad = harmonic_dimension(d, 3) * np.sum(w * np.exp(np.outer(x, t)) * p3, axis=1)
    np.testing.assert_allclose(c3, quad, rtol=1e-10)


@pytest.mark.parametrize("d", [8, 16])
def test_degree_four_remainder_variance(d):
    # eq. (15.10): with degree 3 kept, the noise variance is v(x) - c_3(x)^2/N_3, the mean
    # square over the cosine law of R_4 = e^{xt} - sum_{l<=3} c_l P_l(t) (quadrature, rtol 1e-8,
    # plus the documented absolute rounding floor 1e-14 c_0(2x) of the subtraction: at
    # x = 0.8, d = 16 the variance is 4e-8 and the two differ by 1.7e-15).
    t, w = _cosine_rule(d)
    x = np.array([0.8, 3.0, 7.0])[:, None]
    c = gegenbauer_coefficients(x, d, degrees=range(4))
    remainder = np.exp(x * t) - sum(c[l] * gegenbauer_polynomial(t, d, l) for l in range(4))
    v4 = harmonic_noise_variance(x[:, 0], d, exact_degrees=3)
    (second,) = gegenbauer_coefficients(2 * x[:, 0], d, degrees=(0,))
    np.testing.assert_allclose(np.sum(w * remainder ** 2, axis=1), v4, rtol=1e-8,
                               atol=1e-14 * second.min())
    v3 = harmonic_noise_variance(x[:, 0], d)
    np.testing.assert_allclose(v3 - v4, c[3][:, 0] ** 2 / harmonic_dimension(d, 3), rtol=1e-8)


@pytest.mark.parametrize("noise", ["gaussian", "signed"])
def test_degree_three_model_keeps_the_kernel_variance(noise):
    # eqs. (15.5), (15.10): keeping degree 3 as a product moves variance from the noise to the
    # product, so n E[Y^2] is still the mean of e^{-beta^2 r^2}(c_0(2x) - c_0(x)^2) over the
    # draw's norms (rebuilt from the generator: Q, K first); 300^2 entries, relative sd ~ 1%,
    # tolerance 4% as in tests/test_finite_width.py.
    n, d, beta = 300, 8, 1.0
    y = harmonic_equivalent_matrix(n, d, beta, noise=noise, exact_degrees=3, rng=11)
    rng = np.random.default_rng(11)
    r = np.linalg.norm(rng.standard_normal((n, d)), axis=1) / np.sqrt(d)
    rho = np.linalg.norm(rng.standard_normal((n, d)), axis=1) / np.sqrt(d)
    x = beta * np.sqrt(d) * np.outer(r, rho)
    (c0,) = gegenbauer_coefficients(x, d, degrees=(0,))
    (c0_2x,) = gegenbauer_coefficients(2 * x, d, degrees=(0,))
    profile = np.exp(-beta ** 2 * r ** 2)[:, None] * (c0_2x - c0 ** 2)
    assert n * np.mean(y ** 2) == pytest.approx(np.mean(profile), rel=0.04)


def test_exact_degrees_option_and_checks():
    # the default is unchanged (eq. (15.6)); 3 is a model option of validate; others raise
    a = harmonic_equivalent_matrix(32, 8, 0.5, rng=1)
    assert np.array_equal(a, harmonic_equivalent_matrix(32, 8, 0.5, exact_degrees=2, rng=1))
    assert not np.array_equal(a, harmonic_equivalent_matrix(32, 8, 0.5, exact_degrees=3, rng=1))
    for bad in (1, 4, True, "3"):
        with pytest.raises(ValueError, match="exact_degrees"):
            harmonic_equivalent_matrix(32, 8, 0.5, exact_degrees=bad, rng=1)
    with pytest.raises(ValueError, match="exact_degrees"):
        freeattn.validate(0.5, 0.25, 32, 1, models=("harmonic_signed",),
                          options={"exact_degrees": 5}, progress=False)
    report = freeattn.validate(0.5, 0.25, 32, 1, models=("harmonic_signed",),
                               options={"exact_degrees": 3}, rng=0, progress=False)
    assert report.options == {"exact_degrees": 3}
    law = freeattn.finite_width_law(0.5, n=32, d=8, draws=1, exact_degrees=3, rng=0)
    assert "degrees <= 3" in law.description


#: (n, d, beta) = (256, 8, 0.5), 2 draws, rng = 0 (theory section 15.5, N_3 = 112 < n): measured
#: KS of harmonic_signed to attention 0.1407 by default and 0.0108 with exact_degrees=3,
#: floor 0.0212 (rng = 1, 2: 0.146 / 0.016 and 0.169 / 0.032 with floors 0.014 and 0.031).
#: Asserted: the default above 4 floors, degree 3 kept below 2 floors.
NARROW_DEFAULT_MIN_RATIO = 4.0
NARROW_DEGREE3_MAX_RATIO = 2.0


@pytest.mark.slow
@pytest.mark.statistical
def test_degree_three_product_fixes_the_narrowest_head():
    # theory eq. (15.10), section 15.5: at d = 8 degree 3 is structured; keeping it as a
    # Gaussian product of width N_3 brings the signed model (15.8) to the floor.
    n, d = 256, 8
    runs = {exact: freeattn.validate(0.5, d / n, n, DRAWS, models=("harmonic_signed",),
                                     rng=SEED, options={"exact_degrees": exact},
                                     progress=False).results["harmonic_signed"]
            for exact in (2, 3)}
    assert runs[2].ks_compared_floor == runs[3].ks_compared_floor      # same attention draws
    assert runs[2].ks_compared_ratio > NARROW_DEFAULT_MIN_RATIO
    assert runs[3].ks_compared_ratio < NARROW_DEGREE3_MAX_RATIO


def test_narrow_benchmark_row_runs_at_a_tiny_size():
    # benchmarks/finite_width.py --narrow (the table of theory section 15.5, eq. (15.10)): one
    # row at n = 64 has every distance in (0, 1] and positive cost ratios to C.
    from conftest import load_script
    module = load_script("benchmarks/finite_width.py")
    row = module.narrow_row(64, 8, 0.5, 1)
    assert row["N3"] == 112
    assert all(0 < row[key] <= 1 for key in ("paper", "noise", "gaussian_2", "gaussian_3",
                                             "signed_2", "signed_3"))
    assert row["draw_over_C_2"] > 0 and row["draw_over_C_3"] > 0
