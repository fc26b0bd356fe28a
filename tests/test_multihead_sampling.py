"""Tests of the multi-head samplers (freeattn.montecarlo._multihead_sampling) and Monte Carlo
checks of theory/09_multihead.md.

Definitions are rebuilt here from the same random streams; the statistical tests
compare sampled spectra with the 40-digit reference laws of
tests/reference/multihead_references.json (CDF tables at 20 digits, interpolated)
and with freeattn.attention_law for the head average.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.interpolate
import scipy.stats

import freeattn
from freeattn.montecarlo._multihead_sampling import (
    MULTIHEAD_MODELS,
    sample_head_average,
    sample_head_average_map,
    sample_multihead,
    sample_multihead_output,
)

REFERENCE = json.loads((Path(__file__).parent / "reference"
                        / "multihead_references.json").read_text())
CASES = {case["name"]: case for case in REFERENCE["multihead"]}


def _ks_from_cdf(cdf_sorted):
    """KS distance of sorted samples with their CDF values (no atoms; theory eq. (7.9))."""
    m = len(cdf_sorted)
    upper = np.arange(1, m + 1) / m
    return float(max(np.max(upper - cdf_sorted), np.max(cdf_sorted - (upper - 1.0 / m))))


def _bootstrap_noise(draws, pooled_sorted, rng, resamples=400):
    """95% bootstrap quantile (over draws) of the KS distance between the resampled
    pooled empirical CDF and the observed one (the noise width of theory eq. (7.11));
    returns (width, None)."""
    counts = np.stack([np.searchsorted(d, pooled_sorted, side="right") for d in draws])
    sizes = np.array([len(d) for d in draws], dtype=float)
    observed = counts.sum(axis=0) / sizes.sum()
    weights = rng.multinomial(len(draws), np.full(len(draws), 1.0 / len(draws)),
                              size=resamples).astype(float)
    resampled = (weights @ counts) / (weights @ sizes)[:, None]
    return float(np.quantile(np.abs(resampled - observed).max(axis=1), 0.95)), None


def _streams(seed):
    return np.random.default_rng(seed).spawn(5)


def _rebuild(n, heads, d_k, d_v, d_o, beta, kv_groups, model, seed):
    """MHA_perp from its definition (theory eqs. (9.1), (9.2)), same streams as the sampler."""
    keys, queries, values, output, noise = _streams(seed)
    per_group = heads // kv_groups
    alpha = freeattn.linear_coefficients(beta).alpha
    blocks = []
    for r in range(heads):
        if r % per_group == 0:
            k = keys.standard_normal((n, d_k))
        q = queries.standard_normal((n, d_k)) / np.sqrt(d_k)
        s = q @ k.T
        if model == "attention":
            e = np.exp(beta * s)
            a_perp = e / e.sum(axis=1, keepdims=True) - 1.0 / n
        else:
            a_perp = (beta * s + alpha * noise.standard_normal((n, n))) / n
        blocks.append((r // per_group, a_perp))
    vs = {}
    m = []
    for group, a_perp in blocks:
        if group not in vs:
            vs[group] = values.standard_normal((n, d_v))
        m.append(a_perp @ vs[group])
    w_o = output.standard_normal((heads * d_v, d_o)) / np.sqrt(heads * d_v)
    return np.hstack(m) @ w_o


# ---------------------------------------------------------------- definitions


@pytest.mark.parametrize("model", MULTIHEAD_MODELS)
@pytest.mark.parametrize("kv_groups", [3, 1, None])
def test_output_follows_definition(model, kv_groups):
    """eqs. (9.1), (9.2): [A_1perp V_1, ..., A_hperp V_h] W_O (or its linear model), with
    the heads of a group sharing K and V, rebuilt from the same five streams."""
    n, heads, d_k, d_v, d_o, beta, seed = 40, 3, 5, 4, 9, 0.9, 11
    got = sample_multihead_output(n, heads, d_k, d_v, d_o, beta, kv_groups=kv_groups,
                                  model=model, rng=seed)
    want = _rebuild(n, heads, d_k, d_v, d_o, beta, kv_groups or heads, model, seed)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def test_sharing_changes_the_matrix_not_the_streams():
    """kv_groups = 1 (MQA) and 3 (MHA) share the first group's keys and values and all
    queries, so the first head's block of M is the same; the others differ."""
    n, heads = 30, 3
    full = _rebuild(n, heads, 4, 2, 6, 1.0, heads, "linear", 5)
    shared = _rebuild(n, heads, 4, 2, 6, 1.0, 1, "linear", 5)
    assert not np.allclose(full, shared)
    np.testing.assert_allclose(sample_multihead_output(n, heads, 4, 2, 6, 1.0, kv_groups=1,
                                                       model="linear", rng=5), shared,
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("dims", [(50, 4, 6, 5, 30), (50, 4, 6, 20, 30), (40, 2, 3, 30, 70),
                                  (30, 1, 4, 40, 10)])
def test_eigenvalues_and_exact_zeros(dims):
    """eq. (9.14) at finite n: the n eigenvalues of MHA_perp MHA_perp^T, of which
    n - min(n, heads d_v, d_o) are exact zeros (and the rest positive), equal numpy's
    eigvalsh of the Gram matrix to 1e-13 of the largest."""
    n, heads, d_k, d_v, d_o = dims
    y = sample_multihead_output(n, heads, d_k, d_v, d_o, 1.2, rng=3)
    lam = sample_multihead(n, heads, d_k, d_v, d_o, 1.2, rng=3)
    ref = np.clip(np.linalg.eigvalsh(y @ y.T), 0, None)
    assert lam.shape == (n,) and lam.dtype == np.float64
    assert np.all(np.diff(lam) >= 0)
    np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-13 * ref.max())
    rank = min(n, heads * d_v, d_o)
    assert int((lam == 0).sum()) >= n - rank
    # h = 1 and d_v >= n: A_perp 1 = 0 costs one more dimension (rank n - 1)
    assert int((lam > 1e-12 * lam.max()).sum()) >= rank - 1


def test_head_average_follows_definition():
    """eq. (9.19): sqrt(n h)(mean_r A_r - 11^T/n) from the same key/query streams, and its
    linear model h^(-1/2) sum_r (beta S_r + alpha W_r)/sqrt(n); rows sum to 0 for softmax."""
    n, heads, d_k, beta, seed = 30, 4, 3, 1.1, 2
    keys, queries, _, _, noise = _streams(seed)
    alpha = freeattn.linear_coefficients(beta).alpha
    total_soft = np.zeros((n, n))
    total_lin = np.zeros((n, n))
    for r in range(heads):
        if r % 2 == 0:
            k = keys.standard_normal((n, d_k))
        s = queries.standard_normal((n, d_k)) @ k.T / np.sqrt(d_k)
        e = np.exp(beta * s)
        total_soft += e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(sample_head_average_map(n, heads, d_k, beta, kv_groups=2, rng=seed),
                               np.sqrt(n * heads) * (total_soft / heads - 1.0 / n), atol=1e-12)
    keys, queries, _, _, noise = _streams(seed)
    for r in range(heads):
        if r % 2 == 0:
            k = keys.standard_normal((n, d_k))
        s = queries.standard_normal((n, d_k)) @ k.T / np.sqrt(d_k)
        total_lin += (beta * s + alpha * noise.standard_normal((n, n))) / np.sqrt(n)
    got = sample_head_average_map(n, heads, d_k, beta, kv_groups=2, model="linear", rng=seed)
    np.testing.assert_allclose(got, total_lin / np.sqrt(heads), atol=1e-12)
    lam = sample_head_average(n, heads, d_k, beta, kv_groups=2, rng=seed)
    np.testing.assert_allclose(lam, np.sort(np.linalg.svd(
        sample_head_average_map(n, heads, d_k, beta, kv_groups=2, rng=seed),
        compute_uv=False) ** 2), atol=1e-12)


def test_reproducible_and_default_rng_convention():
    a = sample_multihead(20, 2, 3, 3, 10, 1.0, rng=4)
    b = sample_multihead(20, 2, 3, 3, 10, 1.0, rng=np.random.default_rng(4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, sample_multihead(20, 2, 3, 3, 10, 1.0, rng=5))


def test_large_beta_is_stable():
    """Softmax with the row maximum removed: no overflow at beta = 50."""
    with np.errstate(all="raise"):
        lam = sample_multihead(30, 2, 4, 3, 10, 50.0, rng=0)
    assert np.isfinite(lam).all()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, error, word", [
    (dict(heads=2.0), TypeError, "heads"),
    (dict(heads=0), ValueError, "heads"),
    (dict(heads=True), TypeError, "heads"),
    (dict(kv_groups=3), ValueError, "kv_groups"),
    (dict(kv_groups=0), ValueError, "kv_groups"),
    (dict(kv_groups=1.0), TypeError, "kv_groups"),
    (dict(n=1), ValueError, "n"),
    (dict(d_k=0), ValueError, "d_k"),
    (dict(d_v=0), ValueError, "d_v"),
    (dict(d_o=-1), ValueError, "d_o"),
    (dict(d_o=3.5), TypeError, "d_o"),
    (dict(beta=float("nan")), ValueError, "beta"),
    (dict(beta=-1.0), ValueError, "beta"),
    (dict(beta=float("inf")), ValueError, "beta"),
    (dict(beta="1"), TypeError, "beta"),
    (dict(beta=[1.0, 2.0]), ValueError, "beta"),
    (dict(model="softmax"), ValueError, "model"),
    (dict(model=1), TypeError, "model"),
    (dict(model="linear", beta=30.0), ValueError, "beta"),
    (dict(rng="seed"), TypeError, "rng"),
    (dict(rng=-3), ValueError, "rng"),
])
def test_bad_input_names_the_argument(kwargs, error, word):
    args = dict(n=10, heads=4, d_k=3, d_v=2, d_o=5, beta=1.0)
    args.update(kwargs)
    extra = {k: args.pop(k) for k in ("kv_groups", "model", "rng") if k in args}
    with pytest.raises(error, match=word):
        sample_multihead(args["n"], args["heads"], args["d_k"], args["d_v"], args["d_o"],
                         args["beta"], **extra)
    if word not in ("d_v", "d_o"):
        with pytest.raises(error, match=word):
            sample_head_average(args["n"], args["heads"], args["d_k"], args["beta"], **extra)


# ---------------------------------------------------------------- Monte Carlo


def _reference_cdf(case):
    """CDF of a reference law: atom at 0 plus a monotone (PCHIP) interpolant of the
    20-digit CDF table on each band (cosine grids, 129 nodes per band)."""
    table = np.array([[float(x), float(f)] for x, f in case["cdf_table"]])
    atom = float(case["atom"])
    bands = [(float(lo), float(hi)) for lo, hi in case["intervals"]]
    pieces = []
    start = 0
    for lo, hi in bands:
        stop = start + int(np.sum((table[start:, 0] >= lo) & (table[start:, 0] <= hi)))
        x, f = table[start:stop].T
        keep = np.concatenate([[True], np.diff(x) > 0])
        pieces.append((lo, hi, scipy.interpolate.PchipInterpolator(x[keep], f[keep])))
        start = stop

    def cdf(x):
        x = np.asarray(x, dtype=float)
        out = np.where(x >= 0, atom, 0.0)
        for lo, hi, interp in pieces:
            inside = (x >= lo) & (x <= hi)
            out = np.where(inside, interp(np.clip(x, lo, hi)), out)
            out = np.where(x > hi, float(interp(hi)), out)
        return out

    return cdf


def _ks(samples, cdf):
    """KS distance of pooled samples (exact zeros included) to a CDF with an atom at 0:
    at the zeros the left limit of the CDF is 0 (theory eq. (7.9) with the jump)."""
    x = np.sort(samples)
    f = cdf(x)
    m = len(x)
    upper = np.arange(1, m + 1) / m
    left = np.where(x > 0, f, 0.0)
    return float(max(np.max(upper - f), np.max(left - (upper - 1.0 / m))))


def _matched_mp_cdf(mean, rank_fraction):
    """Marchenko-Pastur law with the same mean and atom: MP(mean, 1/rank_fraction)."""
    law = freeattn.marchenko_pastur(mean, 1.0 / rank_fraction)
    return lambda x: np.asarray(law.cdf(np.asarray(x, dtype=float)), dtype=float)


def _distances_and_noise(spectra, cdf, mp_cdf):
    """Pooled spectrum, its KS distances to a law and to a Marchenko-Pastur law, and the
    bootstrap noise width (seeded) of the pooled empirical CDF."""
    pooled = np.concatenate(spectra)
    noise, _ = _bootstrap_noise([np.sort(s) for s in spectra], np.sort(pooled),
                                np.random.default_rng(0))
    return pooled, _ks(pooled, cdf), _ks(pooled, mp_cdf), noise


def _spectra(kv_groups, draws, seed, model="attention", n=320):
    """Issue's ratios at n = 320: h = 4, d_K = d_V = n/8, d_O = n (gamma_K = gamma_V = 0.5,
    gamma_O = 1)."""
    seeds = np.random.SeedSequence(seed).spawn(draws)
    return [sample_multihead(n, 4, n // 8, n // 8, n, 1.0, kv_groups=kv_groups, model=model,
                             rng=s) for s in seeds]


@pytest.mark.statistical
@pytest.mark.parametrize("kv_groups", [4, 2, 1])
def test_multihead_spectrum_follows_the_law(kv_groups):
    """eqs. (9.6)-(9.9), (9.18): softmax MHA (kv_groups 4), GQA (2) and MQA (1) at
    n = 320, 6 seeded draws, against the reference law 'mc_issue' (beta = 1, h = 4,
    gamma_K = gamma_V = 0.5, gamma_O = 1), KS over all n eigenvalues with the atom at 0.
    Measured (seed 2024): KS to the law 0.0108-0.0116 with a bootstrap noise width (95%,
    over draws) of 0.0052-0.0063; KS to the rank- and mean-matched Marchenko-Pastur law
    0.121-0.122 (twice these on the non-zero half). Asserted: KS < 4 noise widths and
    below 1/5 of the MP distance, KS_MP > 0.09, and exactly half the eigenvalues zero."""
    case = CASES["mc_issue"]
    spectra = _spectra(kv_groups, 6, 2024)
    pooled, ks, ks_mp, noise = _distances_and_noise(
        spectra, _reference_cdf(case), _matched_mp_cdf(float(case["moments"][0]), 0.5))
    assert ks < 4 * noise, (ks, noise)
    assert ks < ks_mp / 5, (ks, ks_mp)
    assert ks_mp > 0.09, ks_mp
    # the atom is exact: half of the eigenvalues vanish by rank (eq. (9.14))
    assert np.mean(pooled == 0) == 0.5


@pytest.mark.statistical
def test_sharing_leaves_the_multihead_law_unchanged():
    """eq. (9.18): two-sample KS between the pooled MHA and MQA spectra (6 draws each,
    independent seeds, n = 320) is at the sampling-noise floor. Measured: 0.006;
    the 95% two-sample KS quantile for the nonzero halves (1/2 of 1920 vs 1920 values,
    as if independent) is 0.044, and draws are not independent values, so the floor asserted
    is the bootstrap noise width of the two samples added (about 0.012)."""
    mha = _spectra(4, 6, 7)
    mqa = _spectra(1, 6, 8)
    a, b = np.concatenate(mha), np.concatenate(mqa)
    ks = scipy.stats.ks_2samp(a, b).statistic
    rng = np.random.default_rng(1)
    noise_a, _ = _bootstrap_noise([np.sort(s) for s in mha], np.sort(a), rng)
    noise_b, _ = _bootstrap_noise([np.sort(s) for s in mqa], np.sort(b), rng)
    assert ks < noise_a + noise_b, (ks, noise_a, noise_b)


@pytest.mark.statistical
def test_linear_model_follows_the_law():
    """eq. (9.2): the Gaussian-equivalent model (A_perp -> (beta S + alpha W)/n) at n = 320,
    4 draws, against the same reference law. Measured: KS 0.0037 (noise width 0.0055),
    KS_MP 0.114. Asserted: KS < 0.015, KS_MP > 0.09."""
    case = CASES["mc_issue"]
    spectra = _spectra(4, 4, 99, model="linear")
    pooled = np.concatenate(spectra)
    ks = _ks(pooled, _reference_cdf(case))
    ks_mp = _ks(pooled, _matched_mp_cdf(float(case["moments"][0]), 0.5))
    assert ks < 0.015 and ks_mp > 0.09, (ks, ks_mp)


@pytest.mark.statistical
def test_moments_match_closed_forms():
    """eqs. (9.16), (9.17) by Monte Carlo (softmax, MQA, n = 320, 6 draws): mean of the
    eigenvalues theta1 gamma_O = 1.7183 and m2/m1^2 - 1 = 3.25 + 2 theta2^2/theta1^2 = 3.927;
    tolerance 4 standard errors over draws plus the O(1/n) bias (measured at n = 320:
    mean within 1%, ratio within 2%)."""
    spectra = _spectra(1, 6, 31)
    theta1 = np.e - 1
    means = np.array([s.mean() for s in spectra])
    ratios = np.array([np.mean(s ** 2) / np.mean(s) ** 2 - 1 for s in spectra])
    se_mean = means.std(ddof=1) / np.sqrt(len(means))
    se_ratio = ratios.std(ddof=1) / np.sqrt(len(ratios))
    assert abs(means.mean() - theta1) < 4 * se_mean + 0.02 * theta1
    want = 0.25 + 2 + 1 + 2 / theta1 ** 2
    assert abs(ratios.mean() - want) < 4 * se_ratio + 0.04 * want


@pytest.mark.statistical
def test_row_covariance_given_keys_values_and_output():
    """eq. (9.3): in the linear model, given K, V and W_O the rows of MHA_perp are
    i.i.d. N(0, T), T = W_O^T C W_O, C = diag(V_r^T Sigma_G,r V_r)/n^2. Rebuilt from the
    sampler's streams (n = 3000 rows, d_O = 3): the empirical row covariance matches T
    entrywise within 5 standard errors sqrt((T_ii T_jj + T_ij^2)/n)."""
    n, heads, d_k, d_v, d_o, beta, seed = 3000, 2, 40, 3, 3, 1.0, 17
    y = sample_multihead_output(n, heads, d_k, d_v, d_o, beta, model="linear", rng=seed)
    keys, _, values, output, _ = _streams(seed)
    coeffs = freeattn.linear_coefficients(beta)
    blocks = []
    for _ in range(heads):
        k = keys.standard_normal((n, d_k))
        v = values.standard_normal((n, d_v))
        sigma_g = coeffs.theta2 * (k @ k.T) / d_k + coeffs.alpha2 * np.eye(n)
        blocks.append(v.T @ sigma_g @ v / n ** 2)
    c = np.zeros((heads * d_v, heads * d_v))
    for r, block in enumerate(blocks):
        c[r * d_v:(r + 1) * d_v, r * d_v:(r + 1) * d_v] = block
    w_o = output.standard_normal((heads * d_v, d_o)) / np.sqrt(heads * d_v)
    t = w_o.T @ c @ w_o
    emp = y.T @ y / n
    se = np.sqrt((np.outer(np.diag(t), np.diag(t)) + t ** 2) / n)
    assert np.all(np.abs(emp - t) < 5 * se), (emp, t)


@pytest.mark.statistical
@pytest.mark.parametrize("model", MULTIHEAD_MODELS)
def test_head_average_law_depends_on_sharing(model):
    """eq. (9.19): the head-averaged map (beta = 1, h = 4, d_K = n/8, n = 320, 4 draws)
    follows the single-head law at gamma_eff = 0.5 with independent keys and at 0.125
    with one shared key, and not the other one (the two laws are 0.129 apart,
    eq. (9.20)). Linear model (eq. (9.2)), measured: own 0.0045 (independent) and 0.0043
    (shared), other 0.128 and 0.130; asserted own < 0.015, other > 0.1. Softmax adds the
    single-head finite-width gap, largest for the shared key (one head of width
    d_K = 40): measured own 0.032 / other 0.127 (independent), own 0.097 / other 0.151
    (shared; at n = 1200 own 0.035, and a single softmax head of width 150 is 0.050 from
    the same law, so the gap is the softmax's, not the law's); asserted own < other/3
    (independent) and own < other - 0.03 (shared)."""
    n = 320
    laws = {g: freeattn.attention_law(1.0, g * 0.5 / 4).squared() for g in (4, 1)}
    for g in (4, 1):
        seeds = np.random.SeedSequence(50 + g).spawn(4)
        pooled = np.sort(np.concatenate([sample_head_average(n, 4, n // 8, 1.0, kv_groups=g,
                                                             model=model, rng=s)
                                         for s in seeds]))
        own = _ks_from_cdf(np.asarray(laws[g].cdf(pooled)))
        other = _ks_from_cdf(np.asarray(laws[5 - g].cdf(pooled)))
        if model == "linear":
            assert own < 0.015 and other > 0.1, (g, own, other)
        elif g == 4:
            assert own < other / 3, (g, own, other)
        else:
            assert own < other - 0.03, (g, own, other)


@pytest.mark.statistical
def test_square_output_spectrum_follows_the_hard_edge_law():
    """eq. (9.22): h d_V = d_O = n/2 (h = 4, d_K = d_V = n/8, d_O = n/2 at n = 320,
    beta = 1, softmax, 6 seeded draws), the square-factor case of a default PyTorch layer
    with n > E: the pooled spectrum (half of it exact zeros) against
    freeattn.multihead_law, which has the atom 1/2 and a hard edge x^(-1/2) at 0.
    Measured (seed 5): KS 0.0090 with a bootstrap noise width of 0.0047; KS to the rank-
    and mean-matched Marchenko-Pastur law 0.167. Asserted: KS < 4 noise widths and below
    1/5 of the MP distance, KS_MP > 0.12, exactly half the eigenvalues zero."""
    n = 320
    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=0.5)
    seeds = np.random.SeedSequence(5).spawn(6)
    spectra = [sample_multihead(n, 4, n // 8, n // 8, n // 2, 1.0, rng=s) for s in seeds]
    pooled, ks, ks_mp, noise = _distances_and_noise(
        spectra, lambda x: np.asarray(law.cdf(x), dtype=float),
        _matched_mp_cdf(law.mean(), 0.5))
    assert ks < 4 * noise, (ks, noise)
    assert ks < ks_mp / 5, (ks, ks_mp)
    assert ks_mp > 0.12, ks_mp
    assert np.mean(pooled == 0) == 0.5
