"""Tests of the attention sampler and the proof-chain samplers (freeattn.montecarlo._sampling).

Expected values come from the definitions in theory sections 1.1-1.3 and
theory/07_validation.md; tolerances are stated next to each check.
"""

import numpy as np
import pytest
import scipy.linalg

import freeattn
from freeattn import CHAIN_MODELS, sample_attention, sample_chain, sample_model
from freeattn import squared_singular_values
from freeattn.montecarlo._sampling import gaussian_rows, scores_product, softmax_rows


# ---------------------------------------------------------------- attention


def test_attention_rows_are_probability_vectors():
    """eq. (7.1): A = softmax_rows(beta Q K^T / sqrt(d_qk)) is row-stochastic."""
    a = sample_attention(50, 20, 1.5, rng=0)
    assert a.shape == (50, 50)
    assert (a >= 0).all()
    np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=0, atol=1e-13)


def test_attention_matches_direct_softmax():
    """eq. (7.1) against a direct softmax of the same scores (moderate beta, no overflow)."""
    n, d, beta = 30, 7, 0.8
    streams = np.random.default_rng(5).spawn(4)
    k = streams[0].standard_normal((n, d))
    q = streams[1].standard_normal((n, d))
    e = np.exp(beta * q @ k.T / np.sqrt(d))
    np.testing.assert_allclose(sample_attention(n, d, beta, rng=5),
                               e / e.sum(axis=1, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("beta", [20.0, 1e3, 1e300])
def test_attention_stable_at_large_beta(beta):
    """No NaN, no overflow warning (warnings are errors here), rows still sum to 1;
    as beta -> oo each row tends to the indicator of its largest score."""
    with np.errstate(all="raise"):
        a = sample_attention(64, 16, beta, rng=1)
    assert np.isfinite(a).all()
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)
    if beta >= 1e300:   # every score gap is >= 1e-15, so all but the top weight underflow
        assert np.array_equal(a.max(axis=1), np.ones(64))


def test_softmax_handles_ties_and_infinite_products():
    scores = np.array([[1.0, 1.0, -1e308], [0.0, -1.0, -2.0]])
    out = softmax_rows(scores.copy(), 1e10)
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])


def test_attention_float32():
    a = sample_attention(40, 10, 2.0, rng=3, dtype=np.float32)
    assert a.dtype == np.float32
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-5)


def test_attention_reproducible_and_default_rng_convention():
    a1 = sample_attention(20, 5, 1.0, rng=11)
    a2 = sample_attention(20, 5, 1.0, rng=np.random.default_rng(11))
    assert np.array_equal(a1, a2)
    assert not np.array_equal(a1, sample_attention(20, 5, 1.0, rng=12))


# ---------------------------------------------------------------- chain models


def _streams(seed):
    return np.random.default_rng(seed).spawn(4)


def test_chain_models_follow_their_definitions():
    """Rebuild every model from the same four streams, eqs. (7.1)-(7.6)."""
    n, d, beta, seed = 40, 25, 1.1, 7
    s = _streams(seed)
    k = s[0].standard_normal((n, d))
    q = s[1].standard_normal((n, d))
    w = s[2].standard_normal((n, n))
    z = s[3].standard_normal((n, n))
    scores = q @ k.T / np.sqrt(d)
    rho = k @ k.T / d
    c = freeattn.linear_coefficients(beta)
    e = np.exp(beta * scores)
    a = e / e.sum(axis=1, keepdims=True)
    f = np.expm1(beta * scores - beta ** 2 / 2) / np.sqrt(n)
    mean = np.expm1(beta ** 2 * (np.diag(rho) - 1) / 2) / np.sqrt(n)
    sig_f = (np.exp(beta ** 2 * (np.diag(rho)[:, None] + np.diag(rho)[None, :] - 2) / 2)
             * np.expm1(beta ** 2 * rho))
    sig_g = beta ** 2 * rho + c.alpha2 * np.eye(n)
    expected = {
        "attention": np.sqrt(n) * (a - 1.0 / n),                                 # eq. (7.1)
        "normalized": f,                                                         # eq. (7.2)
        "centered": f - mean[None, :],                                           # eq. (7.3)
        "sigma_f": z @ np.linalg.cholesky(sig_f).T / np.sqrt(n),                 # eq. (7.4)
        "sigma_g": z @ np.linalg.cholesky(sig_g).T / np.sqrt(n),                 # eq. (7.5)
        "linear": (beta * scores + c.alpha * w) / np.sqrt(n),                    # eq. (7.6)
    }
    chain = sample_chain(n, d, beta, rng=seed)
    assert tuple(chain) == CHAIN_MODELS
    for model in CHAIN_MODELS:
        np.testing.assert_allclose(chain[model], expected[model], rtol=1e-9, atol=1e-12,
                                   err_msg=model)
        np.testing.assert_array_equal(sample_model(model, n, d, beta, rng=seed),
                                      chain[model], err_msg=model)


def test_chain_models_use_given_keys():
    n, d = 12, 6
    keys = np.random.default_rng(0).standard_normal((n, d))
    y1 = sample_model("sigma_g", n, d, 1.0, rng=1, keys=keys)
    y2 = sample_model("sigma_g", n, d, 1.0, rng=2, keys=keys)
    y3 = sample_model("sigma_g", n, d, 1.0, rng=1)
    assert not np.array_equal(y1, y2)
    assert not np.array_equal(y1, y3)
    with pytest.raises(ValueError, match="keys"):
        sample_model("linear", n, d, 1.0, keys=keys[:, :3])


@pytest.mark.statistical
def test_chain_entry_moments():
    """Entry-level moments of each model against their definitions (eqs. (7.1)-(7.6)).

    Every model has rows of (conditional) covariance ~ Sigma/n with diagonal
    theta1 = e^{beta^2} - 1 (theory eq. (2.4)), so n * mean(Y_ij^2) -> theta1, and
    zero mean.  n = 300, one draw: the relative standard error of the second
    moment is about sqrt(Var(f^2)/n^2)/theta1 ~ 0.01 at beta = 0.7, so rtol = 0.05.
    """
    n, beta = 300, 0.7
    theta1 = np.expm1(beta ** 2)
    chain = sample_chain(n, n, beta, rng=2026)
    for model, y in chain.items():
        assert abs(y.mean()) * np.sqrt(n) < 0.05, model
        np.testing.assert_allclose(n * np.mean(y ** 2), theta1, rtol=0.05, err_msg=model)
    # centring: A_perp 1 = 0 exactly; the centred model's column means shrink
    np.testing.assert_allclose(chain["attention"].sum(axis=1), 0.0, atol=1e-10)


@pytest.mark.statistical
def test_linear_and_sigma_g_have_the_same_law():
    """eq. (7.5): given K, the rows of Y_lin are N(0, Sigma_G/n) -- compare the
    sample covariance of the rows of both (n = 200 rows, d = 50) with Sigma_G/n."""
    n, d, beta = 200, 50, 1.0
    keys = np.random.default_rng(9).standard_normal((n, d))
    sig_g = freeattn.gaussian_equivalent_covariance(keys @ keys.T / d, beta) / n
    for model in ("linear", "sigma_g"):
        rows = np.vstack([sample_model(model, n, d, beta, rng=s, keys=keys)
                          for s in range(10)])
        cov = rows.T @ rows / rows.shape[0]
        # 2000 rows: entrywise standard error <= sqrt(2/2000) * max diag = 0.032 * max diag
        assert np.abs(cov - sig_g).max() < 5 * 0.032 * sig_g.diagonal().max(), model


def test_gaussian_rows_cholesky_and_clipped_fallback():
    """eq. (7.4): Z L^T with L L^T = cov; a PSD matrix that fails Cholesky on
    round-off gets the clipped eigen factor, a non-PSD one raises."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((6, 6))
    cov = np.cov(rng.standard_normal((6, 20))) + np.eye(6)
    np.testing.assert_allclose(gaussian_rows(z, cov), z @ np.linalg.cholesky(cov).T,
                               rtol=1e-12, atol=1e-13)
    v = rng.standard_normal((6, 3))
    low_rank = v @ v.T   # rank 3: Cholesky fails
    rows = gaussian_rows(np.eye(6), low_rank)   # Z = I: the rows are L^T
    np.testing.assert_allclose(rows.T @ rows, low_rank, atol=1e-12)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        gaussian_rows(np.eye(2), np.diag([1.0, -1.0]))


def test_covariance_round_off_tolerance_is_100_n_eps():
    """Section 7.1 of theory/07_validation.md: an eigenvalue down to
    -100 n eps lambda_max is round-off and is clipped to 0; one ten times more
    negative means the matrix is not a covariance.  diag(1, -10 n eps) and
    diag(1, -1000 n eps) (n = 2) sit a factor 10 on either side of the tolerance."""
    eps = np.finfo(float).eps
    rows = gaussian_rows(np.eye(2), np.diag([1.0, -10 * 2 * eps]))
    np.testing.assert_array_equal(rows.T @ rows, np.diag([1.0, 0.0]))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        gaussian_rows(np.eye(2), np.diag([1.0, -1000 * 2 * eps]))


# ---------------------------------------------------------------- spectrum


def test_squared_singular_values_match_svdvals():
    """eq. (7.7): Gram eigenvalues agree with squared svdvals to 1e-13 * lambda_max."""
    y = sample_model("attention", 200, 200, 1.0, rng=4)
    ours = squared_singular_values(y)
    ref = np.sort(scipy.linalg.svdvals(y) ** 2)
    assert np.all(np.diff(ours) >= 0) and ours[0] >= 0
    assert np.abs(ours - ref).max() < 1e-13 * ref[-1]
    rect = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(squared_singular_values(rect),
                               np.sort(scipy.linalg.svdvals(rect) ** 2), atol=1e-10)
    np.testing.assert_allclose(squared_singular_values(rect.T),
                               np.sort(scipy.linalg.svdvals(rect) ** 2), atol=1e-10)


def test_attention_model_has_one_structural_zero():
    """sqrt(n) A_perp = sqrt(n) A (I - 11^T/n) has an exact zero singular value (eq. (7.8))."""
    values = squared_singular_values(sample_model("attention", 100, 100, 1.0, rng=0))
    assert values[0] < 1e-12 * values[-1] < values[1]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n=1, d_qk=3, beta=1.0), ValueError, "n must be"),
    (dict(n=10, d_qk=0, beta=1.0), ValueError, "d_qk must be"),
    (dict(n=10.0, d_qk=3, beta=1.0), TypeError, "n must be"),
    (dict(n=10, d_qk=3.5, beta=1.0), TypeError, "d_qk must be"),
    (dict(n=10, d_qk=3, beta=0.0), ValueError, "beta"),
    (dict(n=10, d_qk=3, beta=-1.0), ValueError, "beta"),
    (dict(n=10, d_qk=3, beta=float("nan")), ValueError, "beta"),
    (dict(n=10, d_qk=3, beta=float("inf")), ValueError, "beta"),
    (dict(n=10, d_qk=3, beta="1"), TypeError, "beta"),
    (dict(n=True, d_qk=3, beta=1.0), TypeError, "n must be"),
])
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        sample_attention(**kwargs)
    with pytest.raises(error, match=match):
        sample_model("linear", **kwargs)


@pytest.mark.parametrize("rng, error", [("abc", TypeError), (-1, ValueError),
                                        (1.5, TypeError), (True, TypeError),
                                        (object(), TypeError)])
def test_bad_rng_is_named(rng, error):
    """A bad seed is a TypeError/ValueError naming rng and what it may be, not
    numpy's SeedSequence message."""
    for sample in (lambda: sample_attention(10, 3, 1.0, rng=rng),
                   lambda: sample_model("linear", 10, 3, 1.0, rng=rng),
                   lambda: sample_chain(10, 3, 1.0, rng=rng)):
        with pytest.raises(error, match="rng must be None, a non-negative integer"):
            sample()


def test_seed_sequence_is_a_seed():
    """The same SeedSequence object gives the same matrix twice (it is copied, not
    spawned from), as the same integer does; a Generator advances."""
    seed = np.random.SeedSequence(8)
    first = sample_model("linear", 8, 4, 1.0, rng=seed)
    np.testing.assert_array_equal(sample_model("linear", 8, 4, 1.0, rng=seed), first)
    np.testing.assert_array_equal(sample_model("linear", 8, 4, 1.0, rng=8), first)
    generator = np.random.default_rng(8)
    np.testing.assert_array_equal(sample_model("linear", 8, 4, 1.0, rng=generator), first)
    assert not np.array_equal(sample_model("linear", 8, 4, 1.0, rng=generator), first)


def test_bad_model_and_dtype():
    with pytest.raises(ValueError, match="unknown model"):
        sample_model("softmax", 10, 3, 1.0)
    with pytest.raises(TypeError, match="model"):
        sample_model(3, 10, 3, 1.0)
    with pytest.raises(ValueError, match="at least one"):
        sample_chain(10, 3, 1.0, models=())
    with pytest.raises(TypeError, match="dtype"):
        sample_attention(10, 3, 1.0, dtype=np.int64)
    with pytest.raises(ValueError, match="beta"):
        sample_model("sigma_f", 10, 3, 30.0)   # exp(beta**2) overflows float64
    with pytest.raises(ValueError, match="2-d"):
        squared_singular_values(np.ones(3))
    # inf entries, or finite entries whose Gram matrix overflows, used to give NaN values
    with pytest.raises(ValueError, match="finite"):
        squared_singular_values(np.array([[np.inf, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="overflows"):
        squared_singular_values(np.full((2, 3), 1e200))
    with pytest.raises(ValueError, match="NaN"):
        squared_singular_values(np.array([[np.nan, 1.0], [1.0, 1.0]]))


def test_float32_softmax_rejects_a_beta_it_cannot_hold():
    """beta beyond float32's range would turn 0 * inf into NaN rows: a clear error
    naming beta instead; the largest float32 beta still gives rows summing to 1."""
    with pytest.raises(ValueError, match="beta must be finite in float32"):
        freeattn.sample_attention(20, 10, 1e39, dtype=np.float32)
    A = freeattn.sample_attention(20, 10, 3e38, dtype=np.float32, rng=0)
    assert np.isfinite(A).all()
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_scores_product_through_scipy_blas(dtype, rtol):
    """scores_product(q, k) is q @ k.T (same dtype, C-contiguous), formed by SciPy's gemm on
    Fortran views so that sampling and spectrum share one BLAS thread pool."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((9, 4)).astype(dtype)
    k = rng.standard_normal((6, 4)).astype(dtype)
    out = scores_product(q, k)
    assert out.dtype == dtype and out.flags["C_CONTIGUOUS"] and out.shape == (9, 6)
    np.testing.assert_allclose(out, q @ k.T, rtol=rtol, atol=rtol)
