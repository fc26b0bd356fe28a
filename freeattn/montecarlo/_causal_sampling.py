"""Samplers for causal (masked) softmax attention and its masked linear model.

Two models (theory/10_causal.md, eqs. (10.1)-(10.3)):

``"causal"``
    ``C = diag(1, ..., n) (A - M) / sqrt(n)`` with the causal softmax
    ``A_ij = exp(beta s_ij) / sum_{k <= i} exp(beta s_ik)`` (``j <= i``, else 0)
    and its row means ``M_ij = 1{j <= i}/i``;
``"causal_linear"``
    ``Y_c = L * (beta S + alpha W) / sqrt(n)``, ``L`` the lower-triangular
    all-ones mask (diagonal included), ``alpha**2 = exp(beta**2) - 1 - beta**2``.

Both are entries of the Monte Carlo registry (:data:`freeattn.MODELS`, names
``"causal"`` and ``"causal_linear"``) and sample from a :class:`freeattn.Draw`,
so they share the keys, the scores ``S = Q K^T/sqrt(d_qk)`` and the noise ``W``
with the proof-chain models of the same draw: ``causal_matrix("causal", ...,
rng=s)`` and ``causal_matrix("causal_linear", ..., rng=s)`` differ by the
model, not by the randomness.  Their limiting law is
:func:`freeattn.causal_law`.
"""

import numpy as np

from ..core._checks import MAX_FLOAT_BETA
from ._models import Draw, Model, _sample_linear, register_model
from ._sampling import _check_sizes, squared_singular_values

__all__ = [
    "CAUSAL_MODELS",
    "causal_attention",
    "causal_matrix",
    "causal_spectrum",
]

#: The causal models, by name.
CAUSAL_MODELS = ("causal", "causal_linear")


def _upper_mask(n):
    """Boolean mask of the strictly upper triangle (``j > i``)."""
    idx = np.arange(n)
    return idx[None, :] > idx[:, None]


def _causal_softmax(scores, beta):
    """Causal row softmax of ``beta * scores``, overwriting ``scores``.

    Entries above the diagonal are set to ``-inf`` before the row maximum is
    subtracted (the maximum over ``j <= i``), so every exponent is ``<= 0``,
    the largest is exactly 0, and the masked entries become exact zeros.
    """
    upper = _upper_mask(scores.shape[0])
    scores[upper] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scores *= beta
        np.exp(scores, out=scores)
    scores[upper] = 0.0
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


def causal_attention(n, d_qk, beta, *, rng=None, keys=None):
    """Sample a causal softmax attention matrix ``A`` (theory eq. (10.1)).

    Parameters
    ----------
    n : int
        Number of tokens, ``n >= 2``.
    d_qk : int
        Query/key width, ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn with i.i.d. N(0, 1) entries if omitted.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        Lower triangular, non-negative, each row summing to 1.

    Raises
    ------
    TypeError, ValueError
        On bad sizes, ``beta``, ``keys`` or ``rng`` (the message names the argument).

    Examples
    --------
    >>> A = causal_attention(5, 3, 1.0, rng=0)
    >>> bool(np.allclose(A.sum(axis=1), 1.0)), bool(np.all(np.triu(A, 1) == 0)), A[0, 0]
    (True, True, np.float64(1.0))
    """
    n, d_qk, b = _check_sizes(n, d_qk, beta, beta_upper=MAX_FLOAT_BETA)
    draw = Draw(n, d_qk, b, rng=rng, keys=keys)
    return _causal_softmax(draw.take("scores"), b)


def causal_matrix(model, n, d_qk, beta, *, rng=None, keys=None, rescale=True):
    """Sample a causal model: ``C`` (``"causal"``) or ``Y_c`` (``"causal_linear"``).

    Parameters
    ----------
    model : {"causal", "causal_linear"}
        See the module docstring (theory eqs. (10.1), (10.3)).
    n, d_qk : int
        Sizes, ``n >= 2``, ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`; the same ``rng`` gives both
        models from the same scores.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn if omitted.
    rescale : bool, optional
        ``"causal"`` only: ``False`` returns the unscaled ``sqrt(n) (A - M)``,
        which has no limit law (its mean squared singular value grows like
        ``theta1 log n``, theory eq. (10.2)).

    Returns
    -------
    numpy.ndarray, shape (n, n)
        Lower triangular.

    Raises
    ------
    TypeError, ValueError
        On a bad model name, size, ``beta``, ``keys``, ``rescale`` or ``rng``.

    Examples
    --------
    >>> C = causal_matrix("causal", 6, 6, 1.0, rng=0)
    >>> bool(np.allclose(C.sum(axis=1), 0.0)), bool(np.all(np.triu(C, 1) == 0))
    (True, True)
    >>> Y = causal_matrix("causal_linear", 6, 6, 1.0, rng=0)
    >>> bool(np.all(np.triu(Y, 1) == 0))
    True
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a name from {CAUSAL_MODELS}, got {model!r}")
    if model not in CAUSAL_MODELS:
        raise ValueError(f"unknown model {model!r}; allowed: {CAUSAL_MODELS}")
    if not isinstance(rescale, (bool, np.bool_)):
        raise TypeError(f"rescale must be True or False, got {rescale!r}")
    if not rescale and model != "causal":
        raise ValueError("rescale=False applies to the 'causal' model only")
    n, d_qk, b = _check_sizes(n, d_qk, beta, beta_upper=MAX_FLOAT_BETA)
    draw = Draw(n, d_qk, b, rng=rng, keys=keys)
    if model == "causal_linear":
        return _sample_causal_linear(draw)
    if rescale:
        return _sample_causal(draw)
    a = _causal_softmax(draw.take("scores"), b)
    a -= ~_upper_mask(n) / np.arange(1, n + 1, dtype=float)[:, None]
    a *= np.sqrt(n)
    return a


def _sample_causal(draw):
    """``C = (diag(1..n) A - L)/sqrt(n)`` from the draw's scores (theory eq. (10.1))."""
    n = draw.n
    a = _causal_softmax(draw.take("scores"), draw.beta)
    # row i of diag(i) A has mean 1 over j <= i
    a *= np.arange(1, n + 1, dtype=float)[:, None]
    a -= ~_upper_mask(n)
    a /= np.sqrt(n)
    return a


def _sample_causal_linear(draw):
    """``Y_c = L * (beta S + alpha W)/sqrt(n)`` from the draw (theory eq. (10.3)): the
    linear model of eq. (7.6) with the causal mask."""
    y = _sample_linear(draw)
    y[_upper_mask(draw.n)] = 0.0
    return y


def causal_squared_law(beta, gamma):
    """``causal_law(beta, gamma)``: the limit law of both causal models (theory note 10)."""
    from ..attention._causal_law import causal_law

    return causal_law(beta, gamma)


def causal_spectrum(model, n, d_qk, beta, *, rng=None, keys=None, rescale=True):
    """Squared singular values of one draw of a causal model, ascending.

    The matrix of :func:`causal_matrix` followed by
    :func:`freeattn.squared_singular_values` (eigenvalues of ``Y Y^T`` by
    LAPACK ``syevr``; theory eq. (7.7)).

    Parameters
    ----------
    model : {"causal", "causal_linear"}
        As :func:`causal_matrix`.
    n, d_qk : int
        Sizes, ``n >= 2``, ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn if omitted.
    rescale : bool, optional
        ``"causal"`` only: ``False`` uses the unscaled matrix (see :func:`causal_matrix`).

    Returns
    -------
    numpy.ndarray, shape (n,)
        float64, ascending, ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        As :func:`causal_matrix`.

    Examples
    --------
    >>> ev = causal_spectrum("causal_linear", 50, 50, 1.0, rng=1)
    >>> ev.shape, bool(np.all(np.diff(ev) >= 0))
    ((50,), True)
    """
    return squared_singular_values(causal_matrix(model, n, d_qk, beta, rng=rng, keys=keys,
                                                 rescale=rescale))


for _model in (
        Model("causal", _sample_causal, uses=("scores",), law=causal_squared_law,
              description="diag(1..n)(A - M)/sqrt(n), A the causal softmax, M its row means",
              equation="theory eq. (10.1)", floor=True),
        Model("causal_linear", _sample_causal_linear, uses=("linear_noise", "scores"),
              law=causal_squared_law,
              description="L * (beta S + alpha W)/sqrt(n), the masked linear model",
              equation="theory eq. (10.3)", floor=True)):
    register_model(_model)
