"""Sampling primitives: softmax attention, Gaussian rows, spectra, seeds.

The models of the proof chain (theory section 1.3; theory/07_validation.md, eqs.
(7.1)-(7.6)) are entries of the model registry in :mod:`freeattn.montecarlo._models`;
this module holds what they are built from: the row softmax, the score
product, the key Gram matrix, Gaussian rows with a given covariance, the
squared singular values of theory eq. (7.7), and the one check of an ``rng``
argument.  SciPy is imported inside the functions that use it, so that
``import freeattn`` (and the command line's ``--help``) does not pay for it.
"""

import numpy as np

from ..core._checks import as_real_array, check_int, check_positive, check_rng  # noqa: F401 (re-exported)
from ..core._tolerances import FLOAT_EPS

__all__ = [
    "sample_attention",
    "squared_singular_values",
]

# A covariance factor falls back from Cholesky to a clipped eigendecomposition
# when Cholesky fails; eigenvalues down to -_COVARIANCE_CLIP * n * eps * lambda_max
# are round-off of a positive semi-definite matrix and are set to 0, anything more
# negative (or a NaN eigenvalue) means the matrix is not a covariance and raises
# (theory/07_validation.md, section 7.1).  The eigenvalues of a symmetric matrix
# are computed with backward error ~ n * eps * |lambda|_max; 100 leaves room for
# the round-off of forming the covariance itself.
_COVARIANCE_CLIP = 100.0

# Stream i of a draw is the i-th child of the draw's seed sequence; the first
# four are those of the proof chain, in this order (so sample_attention and
# every chain model see the same keys and queries).  The model registry
# (:mod:`freeattn.montecarlo._models`) appends the streams of new intermediates.
_STREAMS = ["keys", "queries", "linear_noise", "row_noise"]


def streams():
    """Names of the random streams of a draw, in spawn order."""
    return tuple(_STREAMS)


def spawn_seeds(rng, count):
    """``count`` independent child seed sequences of ``rng`` and the bit generator type.

    Exactly the seeds of ``numpy.random.default_rng(rng).spawn(count)``: for an
    integer or seed-sequence ``rng`` the children ``0..count-1`` of its seed
    sequence (so the first children do not depend on ``count``), for a
    Generator the next ``count`` children (the generator advances).
    """
    generator = np.random.default_rng(check_rng(rng))
    bit_generator = generator.bit_generator
    return bit_generator.seed_seq.spawn(count), type(bit_generator)


def _check_sizes(n, d_qk, beta, *, beta_upper=None):
    """All checks of the samplers' common arguments in one place."""
    n = check_int(n, "n", minimum=2)
    d_qk = check_int(d_qk, "d_qk", minimum=1)
    b = check_positive(beta, "beta", upper=beta_upper,
                       upper_name=None if beta_upper is None else
                       "exp(beta**2) must be finite in float64")
    if b.ndim != 0:
        raise ValueError(f"beta must be a scalar, got an array of shape {b.shape}")
    return n, d_qk, float(b)


def scores_product(q, k):
    """``q @ k.T`` (C-ordered) through SciPy's BLAS, the library of the spectrum.

    numpy and SciPy wheels each bundle their own OpenBLAS; after a numpy ``@``
    its idle threads keep spinning and, on two cores, the LAPACK call of the
    spectrum that follows runs at half speed (measured at n = 1000: 86-149 ms
    instead of 50 ms).  Doing the product in SciPy's BLAS keeps one thread pool.
    ``k.T`` and ``q.T`` are Fortran-contiguous views, so nothing is copied; the
    product is formed as ``(k q^T)`` in Fortran order, whose transpose is the
    C-ordered ``q k^T``.
    """
    import scipy.linalg

    gemm = scipy.linalg.get_blas_funcs("gemm", (q, k))
    return gemm(1.0, k.T, q.T, trans_a=True).T



def softmax_rows(scores, beta):
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
        If ``n`` or ``d_qk`` is not an integer, ``beta`` is not real, or
        ``rng`` is not a seed or generator.
    ValueError
        If ``n < 2``, ``d_qk < 1``, ``beta`` is not finite and positive, or
        ``rng`` is a negative integer.

    Notes
    -----
    ``Q`` and ``K`` have i.i.d. N(0, 1) entries (theory eqs. (1.1),
    (7.1)).  The softmax subtracts each row's maximum score before scaling
    by ``beta`` (see ``softmax_rows``), so it is stable for every finite
    ``beta``: at ``beta = 1e300`` each row is the indicator of its maximum.
    The keys and queries are drawn from the same streams as in
    :func:`freeattn.sample_chain`, so ``sample_model("attention", ..., rng=seed)``
    is ``sqrt(n) * (sample_attention(..., rng=seed) - 1/n)``.

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
    names = streams()
    seeds, bit_generator = spawn_seeds(rng, len(names))
    keys_rng, queries_rng = (np.random.Generator(bit_generator(seeds[names.index(name)]))
                             for name in ("keys", "queries"))
    k = keys_rng.standard_normal((n, d_qk), dtype=dtype.type)
    q = queries_rng.standard_normal((n, d_qk), dtype=dtype.type)
    q *= dtype.type(1.0 / np.sqrt(d_qk))
    return softmax_rows(scores_product(q, k), dtype.type(b))


def gaussian_rows(noise, cov):
    """``Z L^T`` with ``L L^T = cov``: rows ``N(0, cov)`` from ``Z`` (theory eq. (7.4)).

    ``L`` is the Cholesky factor, applied with BLAS ``trmm`` as
    ``(L Z^T)^T`` (half the flops of a general product, no copy of ``Z``).
    If Cholesky fails (a covariance that is only semi-definite to round-off),
    ``L = V diag(sqrt(lambda))`` from the eigendecomposition, with eigenvalues
    in ``[-_COVARIANCE_CLIP * n * eps * lambda_max, 0)`` clipped to 0; a more
    negative eigenvalue raises ``ValueError``.
    """
    import scipy.linalg
    from scipy.linalg import blas

    try:
        factor = scipy.linalg.cholesky(cov, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        values, vectors = scipy.linalg.eigh(cov, check_finite=False)
        floor = -_COVARIANCE_CLIP * cov.shape[0] * FLOAT_EPS * max(values[-1], 0.0)
        if not values[0] >= floor:   # also catches NaN
            raise ValueError(f"covariance is not positive semi-definite: smallest "
                             f"eigenvalue {values[0]:.3e} < {floor:.3e}") from None
        return noise @ (vectors * np.sqrt(np.clip(values, 0.0, None))).T
    return blas.dtrmm(1.0, factor, noise.T, side=0, lower=1).T



def key_gram(k):
    """``K K^T / d_qk`` as a full symmetric matrix (theory eq. (7.3))."""
    from scipy.linalg import blas

    d_qk = k.shape[1]
    upper = blas.dsyrk(1.0 / d_qk, k.T, trans=1)
    return np.triu(upper) + np.triu(upper, 1).T


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
    import scipy.linalg
    from scipy.linalg import blas

    y = as_real_array(matrix, "matrix", finite=True)
    if y.ndim != 2 or min(y.shape) < 1:
        raise ValueError(f"matrix must be a non-empty 2-d array, got shape {y.shape}")
    if y.shape[0] > y.shape[1]:
        y = y.T
    gram = blas.dsyrk(1.0, np.asarray(y.T, order="F"), trans=1)
    # The diagonal holds the squared row norms: if one overflows, the
    # eigenvalues below would be NaN.
    if not np.isfinite(np.diagonal(gram)).all():
        raise ValueError("matrix is too large: its Gram matrix Y Y^T overflows float64")
    values = scipy.linalg.eigvalsh(gram, lower=False, overwrite_a=True, check_finite=False)
    return np.clip(values, 0.0, None)


def row_spectrum(matrix):
    """The ``m`` eigenvalues of ``Y Y^T`` for an ``m x k`` matrix ``Y``, ascending.

    For ``m <= k`` these are the squared singular values; for ``m > k`` the
    ``m - k`` zero eigenvalues of the Gram matrix are prepended, so that a
    model whose law has an atom at 0 (a tall matrix) is compared value for
    value (theory eq. (7.7)).

    Examples
    --------
    >>> row_spectrum(np.ones((3, 1)))
    array([0., 0., 3.])
    """
    values = squared_singular_values(matrix)
    rows = np.shape(matrix)[0]
    if len(values) < rows:
        values = np.concatenate([np.zeros(rows - len(values)), values])
    return values
