"""Samplers for multi-head attention with value/output projections and K/V sharing.

The models are those of theory/09_multihead.md: ``heads`` softmax heads
``A_r = softmax_rows(beta Q_r K_r^T / sqrt(d_k))`` with values ``V_r``, the
centred output ``MHA_perp = [A_1perp V_1, ..., A_hperp V_h] W_O`` (theory
eq. (9.1)), its Gaussian-equivalent model with ``A_rperp`` replaced by
``(beta S_r + alpha W_r)/n`` (eq. (9.2)), and the head-averaged map
``sqrt(n h) (mean_r A_r - 11^T/n)`` (eq. (9.19)).  With ``kv_groups = g``
the heads form ``g`` consecutive groups of ``heads/g``; the heads of a group
share one key matrix and one value matrix (``g = heads``: multi-head
attention, ``g = 1``: multi-query attention, in between: grouped-query
attention).  Queries (and the noise of the linear model) are never shared.
"""

import numpy as np
import scipy.linalg
from scipy.linalg import blas as _blas
from scipy.linalg import lapack as _lapack

from ..core._checks import MAX_FLOAT_BETA, check_int, check_positive
from ..attention._coefficients import linear_coefficients
from ._sampling import check_rng, scores_product, softmax_rows, squared_singular_values

__all__ = [
    "MULTIHEAD_MODELS",
    "multihead_factor",
    "sample_head_average",
    "sample_head_average_map",
    "sample_multihead",
    "sample_multihead_output",
]

#: ``"attention"``: real softmax heads; ``"linear"``: each centred head replaced
#: by its Gaussian-equivalent linear model (theory eq. (9.2)).
MULTIHEAD_MODELS = ("attention", "linear")

# One draw uses five independent streams spawned from the caller's generator, in
# this order; heads (or groups) draw from their stream one after the other.  The
# two models share keys, queries, values and the output projection, so with the
# same rng they differ only by the model.
_KEYS, _QUERIES, _VALUES, _OUTPUT, _NOISE = range(5)
_STREAMS = 5


def _generator_streams(rng):
    """``np.random.default_rng(rng).spawn(5)``; a bad ``rng`` raises naming ``rng``."""
    return np.random.default_rng(check_rng(rng)).spawn(_STREAMS)


def _check_common(n, heads, d_k, beta, kv_groups, model):
    """Checks shared by all samplers; returns the normalized arguments."""
    n = check_int(n, "n", minimum=2)
    heads = check_int(heads, "heads", minimum=1)
    d_k = check_int(d_k, "d_k", minimum=1)
    if kv_groups is None:
        kv_groups = heads
    kv_groups = check_int(kv_groups, "kv_groups", minimum=1)
    if heads % kv_groups:
        raise ValueError(f"kv_groups must divide heads (1 <= kv_groups <= heads, "
                         f"heads % kv_groups == 0), got kv_groups={kv_groups}, heads={heads}")
    if not isinstance(model, str):
        raise TypeError(f"model must be one of {MULTIHEAD_MODELS}, got {model!r}")
    if model not in MULTIHEAD_MODELS:
        raise ValueError(f"unknown model {model!r}; allowed: {MULTIHEAD_MODELS}")
    b = check_positive(beta, "beta", upper=MAX_FLOAT_BETA if model == "linear" else None,
                       upper_name="alpha = sqrt(exp(beta**2) - 1 - beta**2) must be finite "
                                  "in float64" if model == "linear" else None)
    if b.ndim != 0:
        raise ValueError(f"beta must be a scalar, got an array of shape {b.shape}")
    return n, heads, d_k, float(b), kv_groups


def _gaussian_rows(stream, n, width, factor):
    """``H`` (``n x width``, i.i.d. N(0, 1)), or ``F H`` for a token factor ``F`` (theory
    section 9.12: ``X W`` with ``W`` i.i.d. N(0, 1/D) is ``F H``, ``F = X/sqrt(D)``)."""
    if factor is None:
        return stream.standard_normal((n, width))
    return factor @ stream.standard_normal((factor.shape[1], width))


def _centred_heads(n, heads, d_k, beta, kv_groups, model, streams, factor=None):
    """Yield ``(group, Y_r)`` with ``Y_r`` the centred head ``A_rperp`` (or its model).

    ``"attention"``: ``A_r - 11^T/n``; ``"linear"``: ``(beta S_r + alpha W_r)/n``
    (theory eq. (9.2)).  Each group's keys are drawn when its first head comes.
    With a token factor ``F`` the queries and keys are ``F H``.
    """
    per_group = heads // kv_groups
    alpha = linear_coefficients(beta).alpha if model == "linear" else None
    keys = None
    for r in range(heads):
        group = r // per_group
        if r % per_group == 0:
            keys = _gaussian_rows(streams[_KEYS], n, d_k, factor)
        q = _gaussian_rows(streams[_QUERIES], n, d_k, factor)
        q *= 1.0 / np.sqrt(d_k)
        scores = scores_product(q, keys)
        del q
        if model == "attention":
            y = softmax_rows(scores, beta)
            y -= 1.0 / n
        else:
            y = streams[_NOISE].standard_normal((n, n))
            y *= alpha
            scores *= beta
            y += scores
            y *= 1.0 / n
        del scores
        yield group, y


def _check_multihead(n, heads, d_k, d_v, d_o, beta, kv_groups, model):
    n, heads, d_k, b, kv_groups = _check_common(n, heads, d_k, beta, kv_groups, model)
    d_v = check_int(d_v, "d_v", minimum=1)
    d_o = check_int(d_o, "d_o", minimum=1)
    return n, heads, d_k, d_v, d_o, b, kv_groups


def _head_outputs(n, heads, d_k, d_v, beta, kv_groups, model, streams, factor=None):
    """``M = [Y_1 V_1, ..., Y_h V_h]`` (n x heads*d_v, Fortran order) and ``W_O``."""
    m = np.empty((n, heads * d_v), order="F")
    values = None
    last_group = -1
    for r, (group, y) in enumerate(_centred_heads(n, heads, d_k, beta, kv_groups, model,
                                                  streams, factor)):
        if group != last_group:
            values = np.asfortranarray(_gaussian_rows(streams[_VALUES], n, d_v, factor))
            last_group = group
        # y is C-ordered, so y.T is a Fortran view: M_r = (y.T)^T V through BLAS
        m[:, r * d_v:(r + 1) * d_v] = _blas.dgemm(1.0, y.T, values, trans_a=True)
        del y
    return m


def _check_token_factor(token_factor, n):
    """``token_factor`` as a finite float ``n x D`` array, or ``None``."""
    if token_factor is None:
        return None
    f = np.asarray(token_factor)
    if f.dtype.kind not in "fiu":
        raise TypeError(f"token_factor must be a real array, got dtype {f.dtype}")
    if f.ndim != 2 or f.shape[0] != n or f.shape[1] < 1:
        raise ValueError(f"token_factor must have shape (n, D) = ({n}, D >= 1), got "
                         f"{f.shape}")
    f = np.asarray(f, float)
    if not np.all(np.isfinite(f)):
        raise ValueError("token_factor must be finite")
    return f


def _output_projection(heads, d_v, d_o, streams):
    w_o = streams[_OUTPUT].standard_normal((heads * d_v, d_o))
    w_o *= 1.0 / np.sqrt(heads * d_v)
    return np.asfortranarray(w_o)


def _triangular_factor(m):
    """Upper-triangular ``R`` with ``R^T R = M^T M`` (``M`` tall, Fortran order).

    Cholesky of the Gram matrix (BLAS ``syrk``, LAPACK ``potrf``): level-3
    operations, which keep their speed when the machine's cores are shared;
    LAPACK ``geqrf`` was measured 100 times slower than single-threaded there
    (12 s instead of 0.12 s at 1200 x 600).  The head outputs are well
    conditioned (their smallest singular value is of the order of the
    largest), so the Gram matrix loses nothing that matters; if Cholesky
    fails anyway (a numerically rank-deficient ``M``), QR takes over.
    """
    gram = _blas.dsyrk(1.0, m, trans=1)
    factor, info = _lapack.dpotrf(gram, lower=0, clean=1, overwrite_a=1)
    if info == 0:
        return factor
    factor = scipy.linalg.qr(m, mode="r", check_finite=False)[0]
    return np.asfortranarray(np.triu(factor[:m.shape[1]]))


def sample_multihead_output(n, heads, d_k, d_v, d_o, beta, *, kv_groups=None,
                            model="attention", token_factor=None, rng=None):
    """Sample the centred multi-head output ``MHA_perp`` (theory eq. (9.1)).

    Parameters
    ----------
    n : int
        Number of tokens, ``n >= 2``.
    heads : int
        Number of heads ``h >= 1``.
    d_k, d_v, d_o : int
        Query/key width per head, value width per head and output width, each ``>= 1``.
    beta : float
        Inverse temperature, finite and ``> 0`` (at most 26.64 for ``"linear"``).
    kv_groups : int, optional
        Number of distinct key/value sets; must divide ``heads``.  ``None``
        (default) means ``heads`` (no sharing); ``1`` is multi-query attention.
    model : {"attention", "linear"}, optional
        Softmax heads, or their Gaussian-equivalent linear model (eq. (9.2)).
    token_factor : numpy.ndarray, shape (n, D), optional
        ``F = X/sqrt(D)`` for tokens ``X`` (``n x D``): queries, keys and
        values are ``F H`` with ``H`` i.i.d. N(0, 1), i.e. ``X W`` with
        weights N(0, 1/D), and the token Gram is ``F F^T`` (theory section
        9.12).  ``None`` (default): isotropic tokens, ``F F^T = I``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    numpy.ndarray, shape (n, d_o)
        ``[A_1perp V_1, ..., A_hperp V_h] W_O`` with ``A_perp = A - 11^T/n`` and
        ``W_O = G_O / sqrt(heads d_v)``.

    Raises
    ------
    TypeError
        If a size, ``kv_groups`` or ``model`` has the wrong type, or ``rng``
        is not a seed or generator.
    ValueError
        If a size is out of range, ``kv_groups`` does not divide ``heads``,
        ``beta`` is NaN, infinite or not positive, ``model`` is unknown, or
        ``token_factor`` is not a finite ``n x D`` array.

    Notes
    -----
    ``Q_r, K_r`` (``n x d_k``), ``V_r`` (``n x d_v``) and ``G_O``
    (``heads d_v x d_o``) have i.i.d. N(0, 1) entries, from independent
    streams spawned from ``rng`` (keys, queries, values, output, linear-model
    noise).  The eigenvalues of ``MHA_perp MHA_perp^T`` follow the law of
    theory eqs. (9.6)-(9.9) as ``n -> oo`` for every ``kv_groups`` (eq. (9.18)).

    Examples
    --------
    >>> y = sample_multihead_output(8, 2, 3, 2, 5, 1.0, rng=0)
    >>> y.shape
    (8, 5)
    """
    n, heads, d_k, d_v, d_o, b, kv_groups = _check_multihead(n, heads, d_k, d_v, d_o, beta,
                                                            kv_groups, model)
    factor = _check_token_factor(token_factor, n)
    streams = _generator_streams(rng)
    m = _head_outputs(n, heads, d_k, d_v, b, kv_groups, model, streams, factor)
    w_o = _output_projection(heads, d_v, d_o, streams)
    return _blas.dgemm(1.0, m, w_o)


def sample_multihead(n, heads, d_k, d_v, d_o, beta, *, kv_groups=None, model="attention",
                     token_factor=None, rng=None):
    """Eigenvalues of ``MHA_perp MHA_perp^T``: ``n`` values, zeros included (eq. (9.1)).

    Parameters
    ----------
    n, heads, d_k, d_v, d_o, beta, kv_groups, model, token_factor, rng
        As in :func:`sample_multihead_output`; the same ``rng`` gives the
        spectrum of the same matrix.

    Returns
    -------
    numpy.ndarray, shape (n,)
        Ascending float64.  The ``n - min(n, heads d_v, d_o)`` eigenvalues
        that vanish by rank are exact zeros; the rest are computed from the
        smallest Gram matrix available.

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_multihead_output`.

    Notes
    -----
    With ``M = [A_1perp V_1, ...]`` (``n x heads d_v``) and ``p = heads d_v``:
    if ``p < min(n, d_o)``, ``M = Q R`` with ``R`` upper triangular and the
    non-zero eigenvalues are the squared singular values of ``R W_O``
    (``p x d_o``, BLAS ``trmm``), since
    ``M W_O W_O^T M^T = Q (R W_O)(R W_O)^T Q^T``; ``R`` is the Cholesky factor
    of ``M^T M`` (see ``_triangular_factor``);
    otherwise they are the squared singular values of ``M W_O``
    (:func:`freeattn.squared_singular_values`).  The atom of the limit law,
    ``1 - min(1, gamma_v, gamma_o)`` (theory eq. (9.14)), is then the fraction
    of exact zeros up to ``1/n``.

    Examples
    --------
    >>> lam = sample_multihead(12, 2, 3, 2, 12, 1.0, rng=0)
    >>> lam.shape, int((lam == 0).sum())   # rank <= heads * d_v = 4
    ((12,), 8)
    """
    n, heads, d_k, d_v, d_o, b, kv_groups = _check_multihead(n, heads, d_k, d_v, d_o, beta,
                                                            kv_groups, model)
    factor = _check_token_factor(token_factor, n)
    streams = _generator_streams(rng)
    m = _head_outputs(n, heads, d_k, d_v, b, kv_groups, model, streams, factor)
    w_o = _output_projection(heads, d_v, d_o, streams)
    p = heads * d_v
    if p < min(n, d_o):
        r = _triangular_factor(m)
        del m
        values = squared_singular_values(_blas.dtrmm(1.0, r, w_o, side=0, lower=0))
    else:
        values = squared_singular_values(_blas.dgemm(1.0, m, w_o))
        del m
    out = np.zeros(n)
    out[n - values.size:] = values
    return out


def multihead_factor(n, heads, d_k, d_v, d_o, beta, *, kv_groups=None, model="attention",
                     token_factor=None, rng=None):
    """An ``n x r`` matrix ``B`` with ``B B^T = MHA_perp MHA_perp^T`` and ``r`` its width.

    Parameters
    ----------
    n, heads, d_k, d_v, d_o, beta, kv_groups, model, token_factor, rng
        As in :func:`sample_multihead_output`; the same ``rng`` gives the same
        matrix ``MHA_perp``.

    Returns
    -------
    numpy.ndarray, shape (n, r)
        With ``p = heads d_v``: if ``p < min(n, d_o)``, ``B = M C`` with ``M``
        the head outputs (``n x p``) and ``C`` the Cholesky factor of
        ``W_O W_O^T`` (``p x p``), so ``r = p``; otherwise ``B = MHA_perp``
        itself (``r = d_o``).  Either way ``r >= min(n, p, d_o)`` (the rank),
        and :func:`freeattn.montecarlo._sampling.row_spectrum` of ``B`` gives the ``n``
        eigenvalues of ``MHA_perp MHA_perp^T`` with the ``n - r`` vanishing
        ones as exact zeros (the atom of theory eq. (9.14)).

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_multihead_output`.

    Examples
    --------
    >>> b = multihead_factor(12, 2, 3, 2, 12, 1.0, rng=0)
    >>> y = sample_multihead_output(12, 2, 3, 2, 12, 1.0, rng=0)
    >>> b.shape, bool(np.allclose(b @ b.T, y @ y.T))
    ((12, 4), True)
    """
    n, heads, d_k, d_v, d_o, b, kv_groups = _check_multihead(n, heads, d_k, d_v, d_o, beta,
                                                            kv_groups, model)
    factor = _check_token_factor(token_factor, n)
    streams = _generator_streams(rng)
    m = _head_outputs(n, heads, d_k, d_v, b, kv_groups, model, streams, factor)
    w_o = _output_projection(heads, d_v, d_o, streams)
    if heads * d_v < min(n, d_o):
        gram = _blas.dsyrk(1.0, w_o, lower=1)         # W_O W_O^T, lower triangle
        factor, info = _lapack.dpotrf(gram, lower=1, clean=1, overwrite_a=1)
        if info == 0:
            return _blas.dtrmm(1.0, factor, m, side=1, lower=1)
    return _blas.dgemm(1.0, m, w_o)


def sample_head_average_map(n, heads, d_k, beta, *, kv_groups=None, model="attention",
                            rng=None):
    """Sample the head-averaged map ``sqrt(n heads) (mean_r A_r - 11^T/n)`` (eq. (9.19)).

    Parameters
    ----------
    n, heads, d_k : int
        Tokens ``n >= 2``, heads ``>= 1`` and key width per head ``>= 1``.
    beta : float
        Inverse temperature, finite and ``> 0`` (at most 26.64 for ``"linear"``).
    kv_groups : int, optional
        Number of distinct key sets (must divide ``heads``); ``None`` means ``heads``.
    model : {"attention", "linear"}, optional
        Softmax heads, or ``(beta S_r + alpha W_r)/n`` in place of ``A_r - 11^T/n``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`; same streams as
        :func:`sample_multihead_output` (values and output are not drawn).

    Returns
    -------
    numpy.ndarray, shape (n, n)

    Raises
    ------
    TypeError, ValueError
        On bad sizes, ``kv_groups``, ``beta``, ``model`` or ``rng``.

    Notes
    -----
    ``sqrt(n h) (Abar - 11^T/n) = h^{-1/2} sum_r sqrt(n) A_rperp``.  Its squared
    singular values follow the single-head attention law at ratio
    ``kv_groups d_k / n`` (theory eq. (9.19)): ``heads d_k / n`` for
    independent keys, ``d_k / n`` when all heads share one key matrix.

    Examples
    --------
    >>> y = sample_head_average_map(6, 3, 2, 1.0, kv_groups=1, rng=0)
    >>> bool(np.allclose(y.sum(axis=1), 0.0))
    True
    """
    n, heads, d_k, b, kv_groups = _check_common(n, heads, d_k, beta, kv_groups, model)
    streams = _generator_streams(rng)
    total = None
    for _, y in _centred_heads(n, heads, d_k, b, kv_groups, model, streams):
        if total is None:
            total = y
        else:
            total += y
    total *= np.sqrt(n / heads)
    return total


def sample_head_average(n, heads, d_k, beta, *, kv_groups=None, model="attention", rng=None):
    """Squared singular values of the head-averaged map (``n`` values, eq. (9.19)).

    Parameters
    ----------
    n, heads, d_k, beta, kv_groups, model, rng
        As in :func:`sample_head_average_map`.

    Returns
    -------
    numpy.ndarray, shape (n,)
        Ascending float64.

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_head_average_map`.

    Examples
    --------
    >>> sample_head_average(10, 2, 3, 1.0, rng=0).shape
    (10,)
    """
    return squared_singular_values(sample_head_average_map(
        n, heads, d_k, beta, kv_groups=kv_groups, model=model, rng=rng))
