"""Samplers for softmax attention and for every model of the proof chain.

The proof of Gaussian equivalence (Hayase, Collins & Karakida, AISTATS 2026)
replaces the centred attention matrix ``sqrt(n) * (A - 11^T/n)`` by simpler
matrices one step at a time (SPEC section 3; theory/07_validation.md, eqs.
(7.1)-(7.6)).  This module samples each of them from *one* draw of the queries
and keys, so that differences between consecutive models are differences of
the models and not of the randomness, and computes their squared singular
values with the routine chosen in theory/07_validation.md, eq. (7.7).
"""

import numpy as np
import scipy.linalg
from scipy.linalg import blas as _blas

from ._checks import MAX_FLOAT_BETA, as_real_array, check_beta, check_int, check_positive
from ._coefficients import (conditional_covariance, conditional_mean,
                            gaussian_equivalent_covariance, linear_coefficients)
from ._tolerances import FLOAT_EPS

__all__ = [
    "CHAIN_MODELS",
    "sample_attention",
    "sample_chain",
    "sample_model",
    "squared_singular_values",
]

#: The models of the proof chain, in the proof's order (SPEC section 3, items 1-6).
CHAIN_MODELS = ("attention", "normalized", "centered", "sigma_f", "sigma_g", "linear")

# One draw uses four independent streams spawned from the caller's generator, in
# this order, so that sample_model(m, rng=seed) equals sample_chain(rng=seed)[m]
# whichever models are asked for.
_KEYS, _QUERIES, _LINEAR_NOISE, _ROW_NOISE = range(4)
_STREAMS = 4

# A covariance factor falls back from Cholesky to a clipped eigendecomposition
# when Cholesky fails; eigenvalues down to -_COVARIANCE_CLIP * n * eps * lambda_max
# are round-off of a positive semi-definite matrix and are set to 0, anything more
# negative (or a NaN eigenvalue) means the matrix is not a covariance and raises
# (theory/07_validation.md, section 7.1).
_COVARIANCE_CLIP = 100.0


def _check_sizes(n, d_qk, beta, *, beta_upper=None):
    """All checks of the samplers' common arguments in one place."""
    n = check_int(n, "n", minimum=2)
    d_qk = check_int(d_qk, "d_qk", minimum=1)
    if beta_upper is None:
        b = check_positive(beta, "beta")
    else:
        b = check_beta(beta, upper=beta_upper)
    if b.ndim != 0:
        raise ValueError(f"beta must be a scalar, got an array of shape {b.shape}")
    return n, d_qk, float(b)


def _streams(rng):
    return np.random.default_rng(rng).spawn(_STREAMS)


def _draw_keys(streams, n, d_qk, keys):
    if keys is None:
        return streams[_KEYS].standard_normal((n, d_qk))
    k = as_real_array(keys, "keys", finite=True)
    if k.shape != (n, d_qk):
        raise ValueError(f"keys must have shape (n, d_qk) = ({n}, {d_qk}), got {k.shape}")
    return k


def _scores(q, k):
    """``q @ k.T`` (C-ordered) through SciPy's BLAS, the library of the spectrum.

    numpy and SciPy wheels each bundle their own OpenBLAS; after a numpy ``@``
    its idle threads keep spinning and, on two cores, the LAPACK call of the
    spectrum that follows runs at half speed (measured at n = 1000: 86-149 ms
    instead of 50 ms).  Doing the product in SciPy's BLAS keeps one thread pool.
    ``k.T`` and ``q.T`` are Fortran-contiguous views, so nothing is copied; the
    product is formed as ``(k q^T)`` in Fortran order, whose transpose is the
    C-ordered ``q k^T``.
    """
    gemm = scipy.linalg.get_blas_funcs("gemm", (q, k))
    return gemm(1.0, k.T, q.T, trans_a=True).T


def _softmax_rows(scores, beta):
    """Row softmax of ``beta * scores``, overwriting ``scores``.

    The row maximum of ``scores`` is subtracted *before* multiplying by
    ``beta``, so every exponent is ``<= 0`` and the largest one is exactly 0:
    nothing overflows for any finite ``beta`` (products that underflow to
    ``-inf`` give weight 0) and each row sum lies in ``[1, n]``.
    """
    scores -= scores.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", under="ignore"):
        scores *= beta
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
    return scores


def sample_attention(n, d_qk, beta, *, rng=None, dtype=np.float64):
    """Sample a softmax attention matrix ``A = softmax_rows(beta * Q K^T / sqrt(d_qk))``.

    Parameters
    ----------
    n : int
        Number of tokens, ``n >= 2``.
    d_qk : int
        Query/key width, ``d_qk >= 1``.
    beta : float
        Inverse temperature, any finite ``beta > 0``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    dtype : {numpy.float64, numpy.float32}, optional
        Floating type of the queries, keys and result.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        Non-negative, each row summing to 1.

    Raises
    ------
    TypeError
        If ``n`` or ``d_qk`` is not an integer, or ``beta`` is not real.
    ValueError
        If ``n < 2``, ``d_qk < 1`` or ``beta`` is not finite and positive.

    Notes
    -----
    ``Q`` and ``K`` have i.i.d. N(0, 1) entries (SPEC section 1; theory
    eq. (7.1)).  The softmax subtracts each row's maximum score before scaling
    by ``beta`` (see ``_softmax_rows``), so it is stable for every finite
    ``beta``: at ``beta = 1e300`` each row is the indicator of its maximum.
    The keys and queries are drawn from the same streams as in
    :func:`sample_chain`, so ``sample_model("attention", ..., rng=seed)`` is
    ``sqrt(n) * (sample_attention(..., rng=seed) - 1/n)``.

    Examples
    --------
    >>> A = sample_attention(4, 3, 1.0, rng=0)
    >>> A.shape, bool(np.allclose(A.sum(axis=1), 1.0)), bool((A >= 0).all())
    ((4, 4), True, True)
    """
    n, d_qk, b = _check_sizes(n, d_qk, beta)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise TypeError(f"dtype must be numpy.float64 or numpy.float32, got {dtype}")
    if b > float(np.finfo(dtype).max):
        raise ValueError(f"beta must be finite in {dtype} (at most {np.finfo(dtype).max:.3g}), "
                         f"got {beta!r}")
    streams = _streams(rng)
    k = streams[_KEYS].standard_normal((n, d_qk), dtype=dtype.type)
    q = streams[_QUERIES].standard_normal((n, d_qk), dtype=dtype.type)
    q *= dtype.type(1.0 / np.sqrt(d_qk))
    return _softmax_rows(_scores(q, k), dtype.type(b))


def _gaussian_rows(noise, cov):
    """``Z L^T`` with ``L L^T = cov``: rows ``N(0, cov)`` from ``Z`` (theory eq. (7.4)).

    ``L`` is the Cholesky factor, applied with BLAS ``trmm`` as
    ``(L Z^T)^T`` (half the flops of a general product, no copy of ``Z``).
    If Cholesky fails (a covariance that is only semi-definite to round-off),
    ``L = V diag(sqrt(lambda))`` from the eigendecomposition, with eigenvalues
    in ``[-_COVARIANCE_CLIP * n * eps * lambda_max, 0)`` clipped to 0; a more
    negative eigenvalue raises ``ValueError``.
    """
    try:
        factor = scipy.linalg.cholesky(cov, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        values, vectors = scipy.linalg.eigh(cov, check_finite=False)
        floor = -_COVARIANCE_CLIP * cov.shape[0] * FLOAT_EPS * max(values[-1], 0.0)
        if not values[0] >= floor:   # also catches NaN
            raise ValueError(f"covariance is not positive semi-definite: smallest "
                             f"eigenvalue {values[0]:.3e} < {floor:.3e}") from None
        return noise @ (vectors * np.sqrt(np.clip(values, 0.0, None))).T
    return _blas.dtrmm(1.0, factor, noise.T, side=0, lower=1).T


def _gram(k):
    """``K K^T / d_qk`` as a full symmetric matrix (theory eq. (7.3))."""
    d_qk = k.shape[1]
    upper = _blas.dsyrk(1.0 / d_qk, k.T, trans=1)
    return np.triu(upper) + np.triu(upper, 1).T


def _iter_chain(n, d_qk, beta, models, rng, keys):
    """Yield ``(model, matrix)`` for the requested models from one shared draw.

    Shared intermediates (scores, features, key Gram matrix, row noise) are
    computed once; with the consumer dropping each yielded matrix, a handful of
    ``n x n`` arrays are alive at a time (1.24 GB peak for the whole chain and
    its spectra at ``n = d_qk = 4000``).
    """
    wanted = set(models)
    streams = _streams(rng)
    root_n = np.sqrt(n)
    coeffs = linear_coefficients(beta)
    needs_scores = wanted & {"attention", "normalized", "centered", "linear"}
    needs_gram = wanted & {"sigma_f", "sigma_g"}
    k = _draw_keys(streams, n, d_qk, keys)
    scores = None
    if needs_scores:
        q = streams[_QUERIES].standard_normal((n, d_qk))
        q *= 1.0 / np.sqrt(d_qk)
        scores = _scores(q, k)
        del q
    gram = _gram(k) if needs_gram else None
    features = None
    row_noise = None
    for model in CHAIN_MODELS:
        if model not in wanted:
            continue
        # the last model that needs an intermediate takes it over (no copy)
        later = set(CHAIN_MODELS[CHAIN_MODELS.index(model) + 1:]) & wanted
        if model == "attention":
            scores_needed = bool(later & {"normalized", "centered", "linear"})
            a = _softmax_rows(scores.copy() if scores_needed else scores, beta)
            scores = scores if scores_needed else None
            a -= 1.0 / n
            a *= root_n
            yield model, a
            del a
        elif model in ("normalized", "centered"):
            if features is None:
                try:
                    with np.errstate(over="raise"):
                        features = np.expm1(beta * scores - 0.5 * beta * beta)
                except FloatingPointError:
                    raise FloatingPointError(
                        f"f(S) = expm1(beta*S - beta**2/2) overflows float64 at beta={beta} "
                        f"(largest score {float(np.max(scores)):.3g}); the feature models "
                        f"need a smaller beta, the attention model alone has no limit"
                    ) from None
                features /= root_n
                if "linear" not in later:
                    scores = None
            if model == "normalized":
                yield model, features.copy() if "centered" in later else features
            else:
                # conditional_mean reads only the diagonal |k_j|^2/d_qk of the Gram
                # matrix, so a diagonal matrix saves the n^2 d_qk product
                rho = np.diag(np.einsum("ij,ij->i", k, k) / d_qk)
                features -= conditional_mean(rho, beta)[None, :] / root_n
                del rho
                yield model, features
            if "centered" not in later:
                features = None
        elif model in ("sigma_f", "sigma_g"):
            if row_noise is None:
                row_noise = streams[_ROW_NOISE].standard_normal((n, n))
                row_noise /= root_n
            if model == "sigma_f":
                cov = conditional_covariance(gram, beta)
            else:
                cov = gaussian_equivalent_covariance(gram, beta)
            rows = _gaussian_rows(row_noise, cov)
            del cov
            yield model, rows
        else:
            noise = streams[_LINEAR_NOISE].standard_normal((n, n))
            noise *= coeffs.alpha
            scores *= beta
            noise += scores
            scores = None
            noise /= root_n
            yield model, noise


def _check_models(models):
    if isinstance(models, str):
        models = (models,)
    try:
        models = tuple(models)
    except TypeError:
        raise TypeError(f"models must be a model name or a sequence of names from "
                        f"{CHAIN_MODELS}, got {models!r}") from None
    for model in models:
        if not isinstance(model, str):
            raise TypeError(f"model names must be strings from {CHAIN_MODELS}, "
                            f"got {model!r}")
        if model not in CHAIN_MODELS:
            raise ValueError(f"unknown model {model!r}; allowed: {CHAIN_MODELS}")
    if not models:
        raise ValueError(f"models must name at least one of {CHAIN_MODELS}")
    if len(set(models)) != len(models):
        raise ValueError(f"models must not repeat a name, got {models}")
    return models


def sample_chain(n, d_qk, beta, *, models=CHAIN_MODELS, rng=None, keys=None):
    """Sample the models of the proof chain from one shared draw of the randomness.

    Parameters
    ----------
    n, d_qk : int
        Number of tokens ``n >= 2`` and query/key width ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64`` (``exp(beta**2)`` must be a
        finite float64).
    models : sequence of str, optional
        Names from :data:`CHAIN_MODELS`.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn with i.i.d. N(0, 1) entries if omitted.

    Returns
    -------
    dict
        Model name -> ``n x n`` float64 matrix whose squared singular values
        approximate the limiting law (theory eqs. (7.1)-(7.6)).

    Raises
    ------
    TypeError, ValueError
        On bad sizes, ``beta``, model names or ``keys``;
        ``FloatingPointError`` if ``f(S)`` overflows float64.

    Notes
    -----
    The draw is split into four independent streams spawned from ``rng``: the
    keys ``K``, the queries ``Q`` (so ``S = Q K^T/sqrt(d_qk)`` is shared by
    ``"attention"``, ``"normalized"``, ``"centered"`` and ``"linear"``), the
    noise ``W`` of ``"linear"``, and the Gaussian matrix ``Z`` shared by
    ``"sigma_f"`` and ``"sigma_g"`` (their rows are ``Z L^T/sqrt(n)`` with
    ``L L^T`` the covariance, so these two differ only by the covariance).
    ``"sigma_g"`` and ``"linear"`` have the same law given ``K`` (theory
    eq. (7.5)); they differ in the coupling: ``"linear"`` reuses the scores.

    Examples
    --------
    >>> chain = sample_chain(5, 4, 1.0, rng=1)
    >>> tuple(chain) == CHAIN_MODELS, chain["linear"].shape
    (True, (5, 5))
    """
    n, d_qk, b = _check_sizes(n, d_qk, beta, beta_upper=MAX_FLOAT_BETA)
    models = _check_models(models)
    return dict(_iter_chain(n, d_qk, b, models, rng, keys))


def sample_model(model, n, d_qk, beta, *, rng=None, keys=None):
    """Sample one model of the proof chain (SPEC section 3), centred and rescaled.

    Parameters
    ----------
    model : str
        One of :data:`CHAIN_MODELS`:

        ``"attention"``
            ``sqrt(n) * (A - 11^T/n)``, theory eq. (7.1);
        ``"normalized"``
            ``Y_f = f(S)/sqrt(n)``, ``f(x) = exp(beta x - beta**2/2) - 1``, eq. (7.2);
        ``"centered"``
            ``Y_f`` minus its conditional mean given ``K``, eq. (7.3);
        ``"sigma_f"``
            Gaussian rows ``N(0, Sigma_f/n)``, eq. (7.4);
        ``"sigma_g"``
            Gaussian rows ``N(0, Sigma_G/n)``, eq. (7.5);
        ``"linear"``
            ``(beta S + alpha W)/sqrt(n)``, eq. (7.6).
    n, d_qk : int
        Sizes, ``n >= 2``, ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn if omitted.

    Returns
    -------
    numpy.ndarray, shape (n, n)

    Raises
    ------
    TypeError, ValueError
        On a bad model name, size, ``beta`` or ``keys``.

    Notes
    -----
    The same ``rng`` gives the same matrix as ``sample_chain(..., rng=rng)[model]``.

    Examples
    --------
    >>> Y = sample_model("attention", 6, 6, 1.0, rng=0)
    >>> bool(np.allclose(Y.sum(axis=1), 0.0))
    True
    """
    models = _check_models((model,) if isinstance(model, str) else model)
    if len(models) != 1:
        raise TypeError(f"model must be a single name from {CHAIN_MODELS}, got {model!r}")
    n, d_qk, b = _check_sizes(n, d_qk, beta, beta_upper=MAX_FLOAT_BETA)
    return next(_iter_chain(n, d_qk, b, models, rng, keys))[1]


def squared_singular_values(matrix):
    """Squared singular values of a real matrix, ascending (theory eq. (7.7)).

    Computed as the eigenvalues of the Gram matrix ``Y Y^T`` (BLAS ``syrk``,
    then LAPACK ``syevr`` through :func:`scipy.linalg.eigvalsh`), which is
    1.6-2.3 times faster than :func:`scipy.linalg.svdvals` at ``n = 1000`` and
    agrees with its squares to ``1e-14 * lambda_max`` (theory/07_validation.md).
    Round-off below 0 is clipped to 0 (a Gram matrix is positive
    semi-definite, so a negative value can only be round-off).

    Parameters
    ----------
    matrix : array_like, shape (m, k)

    Returns
    -------
    numpy.ndarray, shape (min(m, k),)

    Raises
    ------
    TypeError
        If ``matrix`` is not real.
    ValueError
        If ``matrix`` is not a non-empty 2-d array, contains NaN or inf, or
        its Gram matrix overflows float64.

    Examples
    --------
    >>> squared_singular_values(np.diag([3.0, 1.0, 2.0]))
    array([1., 4., 9.])
    """
    y = as_real_array(matrix, "matrix", finite=True)
    if y.ndim != 2 or min(y.shape) < 1:
        raise ValueError(f"matrix must be a non-empty 2-d array, got shape {y.shape}")
    if y.shape[0] > y.shape[1]:
        y = y.T
    gram = _blas.dsyrk(1.0, np.asarray(y.T, order="F"), trans=1)
    # The diagonal holds the squared row norms: if one overflows, the
    # eigenvalues below would be NaN.
    if not np.isfinite(np.diagonal(gram)).all():
        raise ValueError("matrix is too large: its Gram matrix Y Y^T overflows float64")
    values = scipy.linalg.eigvalsh(gram, lower=False, overwrite_a=True, check_finite=False)
    return np.clip(values, 0.0, None)
