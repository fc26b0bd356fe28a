"""Per-head diagnosis of trained attention against the law (theory section 12).

The numpy core of ``freeattn.torch.analyze`` and ``freeattn analyze``.  Given,
per layer, the tokens ``X`` entering the attention (``n x E``) and, per head,
the queries and keys that the model computes from them (biases included),
every head gets one row: its inverse temperature from the weights (eq. (12.1))
and from the actual scores (eq. (12.3)), the token statistics that the law
assumes away (eqs. (12.4)-(12.6)), attention sinks (eq. (12.7)), and the
distances of the squared singular values of ``sqrt(n) (A - 11^T/n)`` to

* the law ``attention_law(beta, d/n)`` at the head's score spread,
* the head's own Gaussian-equivalent linear surrogate (eq. (12.9)),
* a finite-size null model: softmax attention with Gaussian queries and keys
  at the same ``n``, ``d`` and ``beta`` (eq. (12.8)), sampled, whose own
  distance to the law is the part of the gap finite size alone explains,
* the finite-width prediction of that null model,
  :func:`freeattn.finite_width_law` (theory note 15), where it is accurate
  (eqs. (12.11), (12.12)),
* the Marchenko-Pastur law of the same variance.

A head is *in regime* (eq. (12.10)) when every assumption of the law holds to
the stated tolerances.  This module is pure numpy (plus the BERT forward
pass of :func:`bert_attention_inputs`); reading checkpoints and text lives in
``freeattn/interop/_checkpoint.py``, PyTorch modules in ``freeattn/interop/_analyze_torch.py``.
"""

import math
from dataclasses import dataclass, fields

import numpy as np

__all__ = [
    "AnalysisReport",
    "HeadProjections",
    "HeadRow",
    "TokenStatistics",
    "bert_attention_inputs",
    "bert_layers",
    "finite_width_regime",
    "head_rows",
    "linear_surrogate_spectrum",
    "null_distance",
    "null_spectrum",
    "score_beta",
    "sink_statistics",
    "token_statistics",
    "weight_beta",
]

#: A key is an attention sink when its share of the attention exceeds this many
#: times the larger of ``1/n`` (uniform attention) and the largest key share of
#: the finite-size null model at the head's ``n``, ``d``, ``beta`` (eq. (12.7)):
#: Gaussian keys of large norm also draw attention, and only an excess over
#: them is the model's doing.
SINK_RATIO = 4.0

#: Tokens are isotropic when ``||X X^T/c - I||_2`` is at most this (eq. (12.5)).
#: Beyond it the queries of different tokens are correlated through the Gram
#: matrix and the law (which assumes ``X X^T = c I``, theory eq. (11.2)) does
#: not apply; with ``n > E`` the deviation is at least 1 (``X X^T`` is singular).
ISOTROPY_TOLERANCE = 0.1

#: The finite-size null model may be at most this far (KS) from the law for the
#: law to be a usable reference at the head's ``n`` and ``d`` (eq. (12.10)).  At
#: (n, d, beta) = (512, 32, 1) the null model is 0.17 from the law, at
#: (2048, 128, 1) 0.06 (seeded Monte Carlo, tests/test_analyze.py).
FINITE_SIZE_TOLERANCE = 0.05

#: Largest inverse temperature the law is solved at (theory section 8).
LAW_BETA_MAX = 4.0

#: Largest inverse temperature the Marchenko-Pastur reference is drawn at
#: (its variance ``exp(beta^2) - 1`` is 1e43 there; beyond, it says nothing).
MP_BETA_MAX = 10.0

#: Largest inverse temperature the null model is sampled at (softmax is then one-hot
#: to float64 precision for every row but ties; heads beyond are sampled here).
NULL_BETA_MAX = 40.0

#: Draws of the finite-size null model per head (their spectra are pooled).
NULL_DRAWS = 2

#: The finite-width prediction (theory note 15) is used only at ``n >=`` this
#: (eq. (12.11)).  At ``n = 512, 1024`` it is 0.007-0.021 (KS, 4 draws) from softmax
#: attention for ``d = 32-64``, ``beta <= 1`` (theory section 15.4); at ``n = 256``,
#: ``d = 32`` it is 0.021 / 0.030 / 0.039 at ``beta`` = 0.5 / 1 / 1.4 against a noise
#: floor of 0.013-0.015 (``benchmarks/finite_width.py --regime``).
FINITE_WIDTH_MIN_N = 512

#: Narrowest head the prediction is used at (eq. (12.11)): at ``d = 16``, ``n = 512`` it
#: is 0.029-0.038 from attention against a floor of 0.008 (theory section 15.5).
FINITE_WIDTH_MIN_D = 32

#: Widest head the prediction is used at (eq. (12.11)): at ``d = 128``, ``n = 512``,
#: ``beta = 1`` it is 0.025 from attention against a floor of 0.005 (theory section 15.5:
#: with ``N_2 >> n`` degree 2 is noise-like and its Gaussian product is the wrong model).
FINITE_WIDTH_MAX_D = 64

#: Degree 3 of the harmonic expansion must be noise-like (eq. (12.11)): its dimension
#: ``N_3`` at least this many times ``n`` (theory eq. (15.3), section 15.5: it holds at
#: ``N_3/n = 5.8``, (n, d) = (1024, 32), 0.010 against a floor of 0.008, and fails at 1.6,
#: (512, 16)).
FINITE_WIDTH_DEGREE3_RATIO = 5.0

#: The prediction is used only at ``beta <`` this (eq. (12.11)): at ``beta = 1.5``,
#: ``(n, d) = (512, 32)`` it is 0.028 from attention against a floor of 0.015 and the
#: error grows with ``beta`` (theory section 15.5).
FINITE_WIDTH_BETA_LIMIT = 1.5

#: Draws of the finite-width prediction per head (pooled, as the null model's).
FINITE_WIDTH_DRAWS = 2

#: What the report does with the finite-width prediction (eq. (12.12)): nothing
#: (``"off"``), the per-head distance to it where it is in regime (``"column"``), or that
#: and also the floor ``D_null`` computed from it instead of the sampled null model
#: (``"floor"``).
FINITE_WIDTH_CHOICES = ("off", "column", "floor")


@dataclass(frozen=True)
class HeadProjections:
    """The query and key projections of one head, ``q = W_Q x + b_Q``.

    Attributes
    ----------
    wq, wk : numpy.ndarray, shape (d, E)
        Rows of the projection weights that belong to the head (``nn.Linear``
        convention: ``q = x @ wq.T + bq``).
    bq, bk : numpy.ndarray, shape (d,)
        The head's biases (zeros when the module has none).
    """

    wq: np.ndarray
    bq: np.ndarray
    wk: np.ndarray
    bk: np.ndarray

    @property
    def width(self):
        """The head width ``d``."""
        return self.wq.shape[0]

    def queries_keys(self, x):
        """Queries and keys of the head, biases included.

        Parameters
        ----------
        x : numpy.ndarray, shape (n, E)
            Tokens, one per row.

        Returns
        -------
        tuple of numpy.ndarray
            ``(Q, K)``, each ``n x d``.
        """
        return x @ self.wq.T + self.bq, x @ self.wk.T + self.bk


def _check_tokens(x, name="x"):
    x = np.asarray(x)
    if x.dtype.kind not in "fiu" or x.dtype.kind == "b":
        raise TypeError(f"{name} must be a real array, got dtype {x.dtype}")
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"{name} must be a 2-d array of n >= 2 tokens (rows), got shape "
                         f"{x.shape}")
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    return x


def weight_beta(wq, wk, scale):
    """Inverse temperature of a head from its weights (theory eq. (12.1)).

    Parameters
    ----------
    wq, wk : array_like, shape (d, E)
        The head's query and key weights (``q = W_Q x``).
    scale : float
        ``c``, the mean squared token norm ``tr(X X^T)/n``.

    Returns
    -------
    float
        ``beta_W = (c/E) ||W_Q^T W_K||_F / sqrt(d)``: the standard deviation of
        the bilinear scores ``x_i^T W_Q^T W_K x_j / sqrt(d)`` over isotropic
        tokens of squared norm ``c``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> wq, wk = rng.standard_normal((2, 256, 64)) / 8.0      # N(0, 1/E), E = 64
    >>> round(weight_beta(wq, wk, 64.0), 1)                  # c = E: beta close to 1
    1.0
    """
    wq, wk = np.asarray(wq, dtype=float), np.asarray(wk, dtype=float)
    if wq.ndim != 2 or wq.shape != wk.shape:
        raise ValueError(f"wq and wk must be 2-d arrays of one shape (d, E), got {wq.shape} "
                         f"and {wk.shape}")
    d, e = wq.shape
    return float(scale / e * np.linalg.norm(wq.T @ wk) / math.sqrt(d))


def _bias_beta(wk, bq, scale):
    """Spread of the query-bias tilt ``b_Q^T W_K x_j / sqrt(d)`` (theory eq. (12.2))."""
    d, e = wk.shape
    return float(math.sqrt(scale / e) * np.linalg.norm(wk.T @ bq) / math.sqrt(d))


def _weight_rank(wq, wk):
    """Effective rank of ``W_Q^T W_K`` (participation ratio of its squared singular values)."""
    # W_Q^T = U_Q R_Q, W_K^T = U_K R_K (thin QR): W_Q^T W_K = U_Q (R_Q R_K^T) U_K^T has the
    # singular values of the d x d matrix R_Q R_K^T
    rq = np.linalg.qr(wq.T, mode="r")
    rk = np.linalg.qr(wk.T, mode="r")
    s2 = np.linalg.svd(rq @ rk.T, compute_uv=False) ** 2
    return float(s2.sum() ** 2 / np.sum(s2 ** 2))


def score_beta(scores):
    """Inverse temperature of a head from its actual scores (theory eq. (12.3)).

    Parameters
    ----------
    scores : array_like, shape (n, n)
        ``q_i^T k_j / sqrt(d)``.

    Returns
    -------
    float
        The root mean square of the scores with each row's mean removed (a
        row shift cancels in the softmax).

    Examples
    --------
    >>> s = np.array([[1.0, -1.0], [3.0, 1.0]])
    >>> score_beta(s)
    1.0
    """
    s = np.asarray(scores, dtype=float)
    centred = s - s.mean(axis=1, keepdims=True)
    return float(np.sqrt(np.mean(centred ** 2)))


@dataclass(frozen=True)
class TokenStatistics:
    """What the law assumes about the tokens, measured (theory eqs. (12.4)-(12.6)).

    Attributes
    ----------
    n, embed_dim : int
        Number of tokens and their width ``E``.
    scale : float
        ``c = tr(X X^T)/n``.
    effective_rank : float
        ``(tr G)^2 / tr(G^2)`` of the Gram matrix ``G = X X^T`` (eq. (12.4));
        ``min(n, E)`` for orthonormal tokens.
    mean_energy : float
        ``n ||mean token||^2 / ||X||_F^2`` (eq. (12.4)); about ``1/E`` for
        centred random tokens.
    gram_deviation : float
        ``||X X^T/c - I_n||_2`` (eq. (12.5)); at least 1 when ``n > E``.
    norm_spread : float
        Standard deviation over mean of the squared token norms (eq. (12.6)).
    isotropic : bool
        ``gram_deviation <= ISOTROPY_TOLERANCE``.
    """

    n: int
    embed_dim: int
    scale: float
    effective_rank: float
    mean_energy: float
    gram_deviation: float
    norm_spread: float
    isotropic: bool


def token_statistics(x):
    """Token statistics of ``X`` (theory eqs. (12.4)-(12.6)).

    Parameters
    ----------
    x : array_like, shape (n, E)
        One token per row.

    Returns
    -------
    TokenStatistics

    Examples
    --------
    >>> q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((64, 16)))
    >>> t = token_statistics(4.0 * q.T)                 # 16 orthogonal tokens, norm 4
    >>> t.scale, round(t.effective_rank, 9), t.gram_deviation < 1e-12, t.isotropic
    (16.0, 16.0, True, True)
    """
    x = _check_tokens(x)
    n, e = x.shape
    norms = np.sum(x * x, axis=1)
    total = float(norms.sum())
    if total <= 0.0:
        raise ValueError("x must not be all zero (its Gram matrix has trace 0)")
    c = total / n
    sv2 = np.linalg.svd(x, compute_uv=False) ** 2       # the non-zero spectrum of X X^T
    eff = float(total ** 2 / np.sum(sv2 ** 2))
    deviation = float(np.max(np.abs(sv2 / c - 1.0)))
    if n > sv2.size:                                   # X X^T has n - rank(X) zeros
        deviation = max(deviation, 1.0)
    mean = x.mean(axis=0)
    return TokenStatistics(
        n=n, embed_dim=e, scale=c, effective_rank=eff,
        mean_energy=float(n * (mean @ mean) / total), gram_deviation=deviation,
        norm_spread=float(norms.std() / norms.mean()),
        isotropic=bool(deviation <= ISOTROPY_TOLERANCE))


def _softmax_rows(scores):
    s = scores - scores.max(axis=1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(axis=1, keepdims=True)
    return a


def _centred_squared_singular_values(attention):
    """Sorted squared singular values of ``sqrt(n)(A - 11^T/n)`` without the structural
    zero (``A 1 = 1`` makes the centred matrix rank ``n - 1``)."""
    n = attention.shape[0]
    y = math.sqrt(n) * (attention - 1.0 / n)
    values = np.linalg.eigvalsh(y @ y.T)
    return np.sort(np.clip(values, 0.0, None))[1:]


def sink_statistics(attention):
    """Attention-sink statistics of one head (theory eq. (12.7)).

    Parameters
    ----------
    attention : array_like, shape (n, n)
        Row-stochastic attention weights.

    Returns
    -------
    key : int
        The key receiving the largest share of the attention.
    mass : float
        That share, ``max_j (1/n) sum_i A_ij`` (``1/n`` for uniform attention).
    top_energy : float
        Share of the largest squared singular value of ``sqrt(n)(A - 11^T/n)``
        in their sum.

    Examples
    --------
    >>> a = np.full((4, 4), 0.1); a[:, 0] = 0.7        # every query on key 0
    >>> key, mass, top = sink_statistics(a)
    >>> key, round(mass, 12), round(top, 12)
    (0, 0.7, 1.0)
    """
    a = np.asarray(attention, dtype=float)
    share = a.mean(axis=0)
    key = int(np.argmax(share))
    values = _centred_squared_singular_values(a)
    total = float(values.sum())
    top = float(values[-1] / total) if total > 0 else 0.0
    return key, float(share[key]), top


def null_spectrum(n, d, beta, *, draws=NULL_DRAWS, rng=None):
    """Finite-size null model: softmax attention with Gaussian queries and keys
    (theory eq. (12.8)).

    Parameters
    ----------
    n, d : int
        Tokens and head width.
    beta : float
        Inverse temperature, ``0 <= beta <= NULL_BETA_MAX`` (40).
    draws : int, optional
        Independent draws, pooled.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    numpy.ndarray
        The sorted squared singular values of ``sqrt(n)(A - 11^T/n)`` of every
        draw, ``draws * (n - 1)`` values.

    Examples
    --------
    >>> null_spectrum(64, 16, 1.0, draws=2, rng=0).shape
    (126,)
    """
    from ..core._checks import check_int

    n = check_int(n, "n", minimum=2)
    d = check_int(d, "d", minimum=1)
    draws = check_int(draws, "draws", minimum=1)
    if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= beta <= NULL_BETA_MAX):
        raise ValueError(f"beta must be a real number in [0, {NULL_BETA_MAX:g}], got {beta!r}")
    return _null_sample(n, d, beta, draws, np.random.default_rng(rng))[0]


def _null_sample(n, d, beta, draws, rng):
    """Pooled sorted null spectrum and the largest key share of any draw (eq. (12.7))."""
    out, share = [], 0.0
    for _ in range(draws):
        q, k = rng.standard_normal((2, n, d))
        attention = _softmax_rows(beta * (q @ k.T) / math.sqrt(d))
        out.append(_centred_squared_singular_values(attention))
        share = max(share, float(attention.mean(axis=0).max()))
    return np.sort(np.concatenate(out)), share




def linear_surrogate_spectrum(scores, *, rng=None):
    """The head's own Gaussian-equivalent linear surrogate (theory eq. (12.9)).

    Parameters
    ----------
    scores : array_like, shape (n, n)
        The head's scores ``q_i^T k_j / sqrt(d)``.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    numpy.ndarray
        Sorted squared singular values of ``(T + alpha W)/sqrt(n)``, ``T`` the
        row-centred scores, ``W`` i.i.d. N(0, 1), ``alpha^2 = exp(b^2) - 1 - b^2``
        at ``b = score_beta(scores)`` (the smallest value dropped, like the
        structural zero of the softmax).

    Examples
    --------
    >>> s = np.random.default_rng(1).standard_normal((32, 32))
    >>> linear_surrogate_spectrum(s, rng=0).shape
    (31,)
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"scores must be a square 2-d array, got shape {s.shape}")
    n = s.shape[0]
    b = score_beta(s)
    alpha = math.sqrt(max(math.expm1(b * b) - b * b, 0.0))
    w = np.random.default_rng(rng).standard_normal((n, n))
    y = (s - s.mean(axis=1, keepdims=True) + alpha * w) / math.sqrt(n)
    values = np.sort(np.clip(np.linalg.eigvalsh(y @ y.T), 0.0, None))
    return values[1:]


def _ks_two_sample(a, b):
    """Two-sample Kolmogorov-Smirnov distance of two sorted samples (theory eq. (7.9))."""
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def _w1_two_sample(a, b):
    from scipy.stats import wasserstein_distance

    return float(wasserstein_distance(a, b))


def _law_distances(law, values):
    from ..montecarlo import _statistics as stats
    from ..montecarlo._validation import _ks

    return _ks(law, values), stats.w1_distance(values, law.cdf, law.support())


def null_distance(n, d, beta, *, draws=NULL_DRAWS, rng=None):
    """KS distance of the finite-size null model to the law (theory eqs. (12.8), (7.9)).

    Parameters
    ----------
    n, d : int
        Tokens and head width.
    beta : float
        Inverse temperature in ``(0, 4]``.
    draws : int, optional
        Draws pooled into one sample.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    float
        ``sup |F_null - F_law|`` with ``F_law`` the CDF of
        ``attention_law(beta, d/n).squared()``: the distance that finite ``n`` and
        ``d`` alone put between a head and the law.

    Examples
    --------
    >>> null_distance(256, 512, 1.0, rng=0) < 0.05      # a wide head: the law holds
    True
    """
    from ..attention._laws import attention_law

    law = attention_law(beta, d / n).squared()
    return _law_distances(law, null_spectrum(n, d, beta, draws=draws, rng=rng))[0]


def finite_width_regime(beta, n, d):
    """Whether the finite-width prediction is used at ``(n, d, beta)`` (theory eq. (12.11)).

    Parameters
    ----------
    beta : array_like
        Inverse temperature (the head's ``beta_scores``).
    n, d : array_like of int
        Tokens and head width.

    Returns
    -------
    numpy.ndarray or numpy.bool_
        True where ``n >= FINITE_WIDTH_MIN_N`` (512),
        ``FINITE_WIDTH_MIN_D <= d <= FINITE_WIDTH_MAX_D`` (32-64),
        ``N_3(d) >= FINITE_WIDTH_DEGREE3_RATIO * n`` (degree 3 of the harmonic
        expansion noise-like, theory eq. (15.3)) and
        ``0 < beta < FINITE_WIDTH_BETA_LIMIT`` (1.5): the points where
        :func:`freeattn.finite_width_law` is measured within about twice the
        Monte Carlo noise of softmax attention (theory sections 15.4, 15.5).
        Broadcast over the arguments.

    Raises
    ------
    ValueError
        If an argument is not finite, or ``n`` or ``d`` is not a positive integer.

    Examples
    --------
    >>> finite_width_regime(1.0, 512, 32), finite_width_regime(1.0, 256, 32)
    (np.True_, np.False_)
    >>> finite_width_regime([0.5, 1.5, 1.0], 512, [32, 32, 16]).tolist()
    [True, False, False]
    """
    b = np.asarray(beta, dtype=float)
    values = {}
    for name, value in (("n", n), ("d", d)):
        a = np.asarray(value)
        if a.dtype.kind not in "iu" or np.any(a < 1):
            raise ValueError(f"{name} must be a positive integer (or an array of them), got "
                             f"{value!r}")
        values[name] = a.astype(np.int64)
    if not np.all(np.isfinite(b)):
        raise ValueError(f"beta must be finite, got {beta!r}")
    n, d = values["n"], values["d"]
    # N_3 = C(d + 2, 3) - C(d, 1) (theory eq. (15.3)), in int64: d is capped at 2^20 (far
    # above FINITE_WIDTH_MAX_D) so that d^3 cannot overflow
    w = np.minimum(d, 2 ** 20)
    n3 = w * (w + 1) * (w + 2) // 6 - w
    return ((n >= FINITE_WIDTH_MIN_N) & (d >= FINITE_WIDTH_MIN_D) & (d <= FINITE_WIDTH_MAX_D)
            & (n3 >= FINITE_WIDTH_DEGREE3_RATIO * n) & (b > 0.0)
            & (b < FINITE_WIDTH_BETA_LIMIT))


@dataclass(frozen=True)
class HeadRow:
    """One head of one layer, measured against the law (theory section 12).

    Attributes
    ----------
    layer, head : int
    n, width : int
        Tokens per window and head width ``d``.
    gamma : float
        ``d/n``.
    beta_weights : float
        Eq. (12.1) at the tokens' measured scale ``c``.
    beta_frobenius : float
        ``||W_Q^T W_K||_F / sqrt(d)``: eq. (12.1) at ``c = E`` (unit-variance
        coordinates), a property of the weights alone.
    beta_variance : float
        ``c sigma_Q sigma_K`` from the mean squares of the head's weight entries
        (eq. (11.3), what ``freeattn.torch.compare`` uses): equal to
        ``beta_weights`` for i.i.d. weights, larger when ``W_Q^T W_K`` is
        concentrated on few directions.
    weight_rank : float
        Effective rank ``(sum s_k^2)^2 / sum s_k^4`` of ``W_Q^T W_K`` (``s_k`` its
        singular values; at most ``d``), eq. (12.4) applied to the weights.
    beta_bias : float
        Spread of the query-bias tilt, eq. (12.2).
    beta_scores : float
        Eq. (12.3): the spread of the actual scores; the law, the null model and
        the surrogate are taken at this ``beta``.
    threshold : float
        ``linearization_threshold(n, gamma).beta`` (4 when it lies beyond).
    effective_rank, mean_energy, gram_deviation, norm_spread : float
        Token statistics of the layer's input, eqs. (12.4)-(12.6).
    isotropic : bool
    sink_key : int
        Position of the most attended key (0 is [CLS] for BERT text).
    sink_mass, top_energy : float
        Eq. (12.7).
    null_sink_mass : float
        The largest key share in the null model's draws.
    sink : bool
        ``sink_mass > SINK_RATIO * max(1/n, null_sink_mass)`` (eq. (12.7)).
    ks_law, w1_law : float
        Distances to ``attention_law(beta_scores, gamma)`` (NaN when
        ``beta_scores > LAW_BETA_MAX``).
    ks_linear, w1_linear : float
        Two-sample distances to the head's linear surrogate, eq. (12.9) (NaN when
        ``beta_scores > MP_BETA_MAX``: its noise variance overflows).
    ks_null, w1_null : float
        Two-sample distances to the finite-size null model, eq. (12.8).
    finite_regime : bool
        Eq. (12.11): the finite-width prediction of theory note 15 is accurate at
        the head's ``n``, ``d`` and ``beta_scores``.
    ks_finite, w1_finite : float
        Two-sample distances to the finite-width prediction,
        :func:`freeattn.finite_width_law` at the head's ``n``, ``d`` and
        ``beta_scores`` (eq. (12.12)); NaN outside its regime or when the report
        is made with ``finite_width="off"``.
    ks_null_law : float
        The null model's own KS distance to the law: the finite-size floor.
    null_law_source : str
        How ``ks_null_law`` was obtained: ``"sampled"`` (the null model's
        draws, eq. (12.8)), ``"finite-width"`` (the prediction, eq. (12.12), only
        in its regime and with ``finite_width="floor"``) or ``"none"`` (no law).
    ks_mp, w1_mp : float
        Distances to the Marchenko-Pastur law of variance ``exp(beta^2) - 1``
        (NaN when ``beta_scores > MP_BETA_MAX``).
    in_regime : bool
        Eq. (12.10): every assumption of the law holds.
    regime : str
        ``"in regime"`` or the assumptions that fail, ``;``-separated.
    values : numpy.ndarray
        The measured squared singular values (all windows pooled).
    null_values : numpy.ndarray
        The null model's.
    """

    layer: int
    head: int
    n: int
    width: int
    gamma: float
    beta_weights: float
    beta_frobenius: float
    beta_variance: float
    weight_rank: float
    beta_bias: float
    beta_scores: float
    threshold: float
    effective_rank: float
    mean_energy: float
    gram_deviation: float
    norm_spread: float
    isotropic: bool
    sink_key: int
    sink_mass: float
    top_energy: float
    null_sink_mass: float
    sink: bool
    ks_law: float
    w1_law: float
    ks_linear: float
    w1_linear: float
    ks_null: float
    w1_null: float
    finite_regime: bool
    ks_finite: float
    w1_finite: float
    ks_null_law: float
    null_law_source: str
    ks_mp: float
    w1_mp: float
    in_regime: bool
    regime: str
    values: np.ndarray
    null_values: np.ndarray


#: Columns of :meth:`AnalysisReport.records` (every field but the spectra).
COLUMNS = tuple(f.name for f in fields(HeadRow) if f.name not in ("values", "null_values"))

#: The dtype of each column in :meth:`AnalysisReport.to_pandas` (from the field's type;
#: strings stay pandas' default for text, ``object`` or ``str``).
_PANDAS_DTYPES = {f.name: {int: "int64", float: "float64", bool: "bool", str: None}[f.type]
                  for f in fields(HeadRow) if f.name in COLUMNS}


def _threshold(n, gamma):
    from ..attention._laws import linearization_threshold

    try:
        return float(linearization_threshold(n, gamma).beta)
    except ValueError:                       # beyond beta = 4: the law's range binds first
        return LAW_BETA_MAX


def _check_finite_width(finite_width):
    if finite_width not in FINITE_WIDTH_CHOICES:
        raise ValueError(f"finite_width must be one of {FINITE_WIDTH_CHOICES}, got "
                         f"{finite_width!r}")
    return finite_width


def head_rows(layer, windows, *, null_draws=NULL_DRAWS, finite_width="column", rng=None):
    """Rows of every head of one layer (theory section 12).

    Parameters
    ----------
    layer : int
        The layer's index (reported).
    windows : sequence of (x, heads)
        Per window of text: the layer's input tokens ``x`` (``n x E``) and a
        sequence of ``(head, q, k, projections)``: the head's index, its queries
        and keys as the model computed them (``n x d``, biases included) and its
        :class:`HeadProjections` (for eqs. (12.1), (12.2)).  Every window must
        have the same ``n`` and heads.
    null_draws : int, optional
        Draws of the null model per head.
    finite_width : {"column", "floor", "off"}, optional
        Where the finite-width prediction is in regime (eq. (12.11)):
        ``"column"`` gives the head's distance to it (``ks_finite``,
        ``w1_finite``); ``"floor"`` also computes the floor ``ks_null_law`` from
        it instead of from the sampled null model (eq. (12.12)); ``"off"`` does
        neither.  Outside the regime the floor is always the sampled one.
    rng : None, int or numpy.random.Generator, optional
        Seeds the null model and the surrogate; the prediction's draws are
        seeded by children spawned from it (``Generator.spawn``), so they leave
        the other columns unchanged.

    Returns
    -------
    list of HeadRow
        Spectra of all windows pooled; scalar statistics averaged over windows.

    Raises
    ------
    ValueError
        If ``windows`` is empty, the windows differ in ``n``, or
        ``finite_width`` is not one of ``FINITE_WIDTH_CHOICES``.
    """
    from ..laws._elementary import marchenko_pastur
    from ..core._errors import ConvergenceError
    from ..attention._laws import attention_law
    from ..montecarlo._finite_width import finite_width_law

    finite_width = _check_finite_width(finite_width)
    rng = np.random.default_rng(rng)
    if not windows:
        raise ValueError("windows must hold at least one window")
    stats = [token_statistics(x) for x, _ in windows]
    n = stats[0].n
    c_mean = float(np.mean([t.scale for t in stats]))
    if any(t.n != n for t in stats):
        raise ValueError(f"every window must have the same number of tokens, got "
                         f"{[t.n for t in stats]}")
    rows = []
    for index in range(len(windows[0][1])):
        head, _, _, proj = windows[0][1][index]
        d = proj.width
        values, linear, sinks = [], [], []
        values_list = windows
        beta_s, beta_w, beta_b = [], [], []
        for (x, heads), t in zip(windows, stats):
            _, q, k, p = heads[index]
            scores = (np.asarray(q, dtype=float) @ np.asarray(k, dtype=float).T) / math.sqrt(d)
            attention = _softmax_rows(scores)
            values.append(_centred_squared_singular_values(attention))
            if score_beta(scores) <= MP_BETA_MAX:
                linear.append(linear_surrogate_spectrum(scores, rng=rng))
            sinks.append(sink_statistics(attention))
            beta_s.append(score_beta(scores))
            beta_w.append(weight_beta(p.wq, p.wk, t.scale))
            beta_b.append(_bias_beta(p.wk, p.bq, t.scale))
        values = np.sort(np.concatenate(values))
        linear = np.sort(np.concatenate(linear)) if len(linear) == len(values_list) else None
        beta = float(np.mean(beta_s))
        gamma = d / n
        null, null_share = _null_sample(n, d, min(beta, NULL_BETA_MAX), null_draws, rng)
        finite = bool(finite_width_regime(beta, n, d))
        predicted = None
        ks_finite = w1_finite = math.nan
        if finite and finite_width != "off":                  # eq. (12.12)
            predicted = finite_width_law(beta, n, d, draws=FINITE_WIDTH_DRAWS, rng=rng).values
            ks_finite = _ks_two_sample(values, predicted)
            w1_finite = _w1_two_sample(values, predicted)
        ks_law = w1_law = ks_null_law = math.nan
        source = "none"
        if beta <= LAW_BETA_MAX:
            try:
                law = attention_law(beta, gamma).squared()
                ks_law, w1_law = _law_distances(law, values)
                if finite_width == "floor" and predicted is not None:
                    ks_null_law, source = _law_distances(law, predicted)[0], "finite-width"
                else:
                    ks_null_law, source = _law_distances(law, null)[0], "sampled"
            except (ValueError, ConvergenceError):        # reported as NaN, reason below
                pass
        ks_mp = w1_mp = math.nan
        if beta <= MP_BETA_MAX:
            try:
                ks_mp, w1_mp = _law_distances(marchenko_pastur(math.expm1(beta * beta), 1.0),
                                              values)
            except (ValueError, ConvergenceError):
                pass
        key = int(np.bincount([s[0] for s in sinks]).argmax())
        mass = float(np.mean([s[1] for s in sinks]))
        top = float(np.mean([s[2] for s in sinks]))
        threshold = _threshold(n, gamma)
        isotropic = all(t.isotropic for t in stats)
        reasons = []
        if beta > LAW_BETA_MAX:
            reasons.append(f"beta {beta:.3g} > {LAW_BETA_MAX:g} (no law)")
        elif beta > threshold:
            reasons.append(f"beta {beta:.3g} > threshold {threshold:.3g}")
        if not isotropic:
            reasons.append("tokens not isotropic")
        sink = bool(mass > SINK_RATIO * max(1.0 / n, null_share))
        if sink:
            reasons.append(f"sink at key {key}")
        if beta <= LAW_BETA_MAX and not math.isfinite(ks_law):
            reasons.append("law unsolved")
        elif math.isfinite(ks_null_law) and ks_null_law > FINITE_SIZE_TOLERANCE:
            reasons.append(f"finite size (null model {ks_null_law:.2f} from the law)")
        rows.append(HeadRow(
            layer=int(layer), head=int(head), n=n, width=d, gamma=gamma,
            beta_weights=float(np.mean(beta_w)),
            beta_frobenius=weight_beta(proj.wq, proj.wk, proj.wq.shape[1]),
            beta_variance=c_mean * math.sqrt(float(np.mean(proj.wq ** 2))
                                             * float(np.mean(proj.wk ** 2))),
            weight_rank=_weight_rank(proj.wq, proj.wk), beta_bias=float(np.mean(beta_b)),
            beta_scores=beta, threshold=threshold,
            effective_rank=float(np.mean([t.effective_rank for t in stats])),
            mean_energy=float(np.mean([t.mean_energy for t in stats])),
            gram_deviation=float(np.mean([t.gram_deviation for t in stats])),
            norm_spread=float(np.mean([t.norm_spread for t in stats])),
            isotropic=isotropic, sink_key=key, sink_mass=mass, top_energy=top,
            null_sink_mass=null_share, sink=sink, ks_law=ks_law, w1_law=w1_law,
            ks_linear=math.nan if linear is None else _ks_two_sample(values, linear),
            w1_linear=math.nan if linear is None else _w1_two_sample(values, linear),
            ks_null=_ks_two_sample(values, null), w1_null=_w1_two_sample(values, null),
            finite_regime=finite, ks_finite=ks_finite, w1_finite=w1_finite,
            ks_null_law=ks_null_law, null_law_source=source, ks_mp=ks_mp, w1_mp=w1_mp,
            in_regime=not reasons, regime="; ".join(reasons) or "in regime",
            values=values, null_values=null))
    return rows


@dataclass(frozen=True)
class AnalysisReport:
    """Per-head analysis of a model (one :class:`HeadRow` per layer and head).

    Attributes
    ----------
    rows : tuple of HeadRow
    source : str
        What was analyzed (checkpoint, module) and on which tokens.
    windows : int
        Windows of ``n`` tokens whose spectra were pooled.
    """

    rows: tuple
    source: str = ""
    windows: int = 1

    def records(self):
        """The rows as dictionaries of :data:`COLUMNS` (no spectra)."""
        return [{name: getattr(row, name) for name in COLUMNS} for row in self.rows]

    def to_pandas(self):
        """The rows as a :class:`pandas.DataFrame` (needs pandas).

        Returns
        -------
        pandas.DataFrame
            One row per head, the columns :data:`COLUMNS` in order, with the
            dtypes of the :class:`HeadRow` fields (``int64``, ``float64``,
            ``bool``; ``regime`` and ``null_law_source`` as strings), also for
            an empty report.

        Raises
        ------
        ImportError
            Without pandas (:meth:`records` gives the same rows).
        """
        try:
            import pandas
        except ImportError:
            raise ImportError("AnalysisReport.to_pandas needs pandas: pip install pandas; "
                              "records() gives the same rows as dictionaries") from None
        records = self.records()
        return pandas.DataFrame({name: pandas.Series([r[name] for r in records],
                                                     dtype=_PANDAS_DTYPES[name])
                                 for name in COLUMNS}, columns=list(COLUMNS))

    def layer_medians(self, column="ks_law"):
        """Median of a column over each layer's heads (NaN rows skipped).

        Parameters
        ----------
        column : str, optional
            One of :data:`COLUMNS` with numeric values.

        Returns
        -------
        dict
            ``{layer: median}``.
        """
        out = {}
        for layer in sorted({r.layer for r in self.rows}):
            v = np.array([getattr(r, column) for r in self.rows if r.layer == layer], float)
            v = v[np.isfinite(v)]
            out[layer] = float(np.median(v)) if v.size else math.nan
        return out

    def summary(self):
        """Plain-language lines: what matches, what does not, and why."""
        rows = self.rows
        count = len(rows)
        lines = [f"{count} heads analyzed ({self.source}); {sum(r.in_regime for r in rows)} in "
                 f"regime of the law (theory eq. (12.10))"]
        ks = np.array([r.ks_law for r in rows], float)
        floor = np.array([r.ks_null_law for r in rows], float)
        if np.isfinite(ks).any():
            lines.append(f"KS to the law: median {np.nanmedian(ks):.3f} (range "
                         f"{np.nanmin(ks):.3f}-{np.nanmax(ks):.3f}); the finite-size null "
                         f"model alone is {np.nanmedian(floor):.3f} from it (median)")
        finite = np.array([r.ks_finite for r in rows], float)
        lines.append(f"finite-width prediction (theory note 15) in regime for "
                     f"{sum(r.finite_regime for r in rows)} of {count} heads (eq. (12.11))"
                     + (f"; KS to it: median {np.nanmedian(finite):.3f} (range "
                        f"{np.nanmin(finite):.3f}-{np.nanmax(finite):.3f})"
                        if np.isfinite(finite).any() else ""))
        lines.append(f"beta from the scores > linearization threshold: "
                     f"{sum(r.beta_scores > r.threshold for r in rows)} of {count}; "
                     f"non-isotropic tokens: {sum(not r.isotropic for r in rows)} of {count}; "
                     f"attention sinks: {sum(r.sink for r in rows)} of {count}")
        return lines


# ---------------------------------------------------------------------------
# BERT-style checkpoints (weights as a mapping of arrays)

_SELF = "encoder.layer.{}.attention.self."


def _prefix(weights):
    """The name prefix of the encoder weights (``""`` or e.g. ``"bert."``)."""
    for name in weights:
        if "encoder.layer.0.attention.self.query.weight" in name:
            return name[:name.index("encoder.layer.0.")]
    raise ValueError("weights has no BERT-style 'encoder.layer.0.attention.self.query.weight' "
                     "entry")


def _layer_count(weights, prefix):
    count = 0
    while f"{prefix}{_SELF.format(count)}query.weight" in weights:
        count += 1
    return count


def bert_layers(weights, num_heads):
    """Per layer, the :class:`HeadProjections` of every head of a BERT-style mapping.

    Parameters
    ----------
    weights : mapping of str to array_like
        Hugging Face ``BertModel`` names (``encoder.layer.L.attention.self.query.weight``,
        ``...query.bias``, ``key``), as in a ``.safetensors`` file.
    num_heads : int
        Heads per layer (``num_attention_heads`` of the config).

    Returns
    -------
    list of list of HeadProjections

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> w = {f"encoder.layer.0.attention.self.{p}.{t}": rng.standard_normal(s)
    ...      for p in ("query", "key") for t, s in (("weight", (8, 8)), ("bias", (8,)))}
    >>> [[h.width for h in layer] for layer in bert_layers(w, 2)]
    [[4, 4]]
    """
    from ..core._checks import check_int

    num_heads = check_int(num_heads, "num_heads", minimum=1)
    prefix = _prefix(weights)
    layers = []
    for layer in range(_layer_count(weights, prefix)):
        base = prefix + _SELF.format(layer)
        w = {p: np.asarray(weights[f"{base}{p}.weight"], dtype=np.float64) for p in ("query", "key")}
        b = {p: np.asarray(weights[f"{base}{p}.bias"], dtype=np.float64)
             if f"{base}{p}.bias" in weights else np.zeros(w[p].shape[0]) for p in w}
        e = w["query"].shape[0]
        if e % num_heads:
            raise ValueError(f"num_heads = {num_heads} must divide the projection width {e}")
        d = e // num_heads
        layers.append([HeadProjections(w["query"][r * d:(r + 1) * d], b["query"][r * d:(r + 1) * d],
                                       w["key"][r * d:(r + 1) * d], b["key"][r * d:(r + 1) * d])
                       for r in range(num_heads)])
    return layers


def _layer_norm(x, gain, bias, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gain + bias


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def bert_attention_inputs(weights, config, ids):
    """The tokens entering every attention layer of a BERT encoder (numpy forward pass).

    Parameters
    ----------
    weights : mapping of str to array_like
        Hugging Face ``BertModel`` weight names (see :func:`bert_layers`).
    config : mapping
        ``num_attention_heads``, ``layer_norm_eps`` (default 1e-12) and
        ``hidden_act`` (``"gelu"``, the exact erf form).
    ids : array_like of int, shape (n,)
        Token ids of one sequence (token type 0, no padding).

    Returns
    -------
    inputs : list of numpy.ndarray
        ``inputs[L]`` is the ``n x E`` input of layer ``L``'s self-attention
        (float64).
    output : numpy.ndarray
        The last hidden state.

    Notes
    -----
    Post-LayerNorm BERT (Devlin et al., 2019): embeddings (word + position +
    type) and LayerNorm; per layer ``h = LN(x + O(attn(x)))``,
    ``x' = LN(h + W_2 gelu(W_1 h))``; attention ``softmax(Q K^T/sqrt(d)) V``.
    """
    act = config.get("hidden_act", "gelu")
    if act != "gelu":
        raise ValueError(f"config hidden_act must be 'gelu' (exact), got {act!r}")
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or ids.size < 2:
        raise ValueError(f"ids must be a 1-d integer array of at least 2 token ids, got "
                         f"shape {ids.shape} dtype {ids.dtype}")
    p = _prefix(weights)

    def w(name):
        return np.asarray(weights[p + name], dtype=np.float64)

    n = ids.size
    positions = w("embeddings.position_embeddings.weight").shape[0]
    if n > positions:
        raise ValueError(f"ids must hold at most {positions} tokens (the position table), "
                         f"got {n}")
    x = w("embeddings.word_embeddings.weight")[ids] \
        + w("embeddings.position_embeddings.weight")[:n] \
        + w("embeddings.token_type_embeddings.weight")[0]
    x = _layer_norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), eps)
    inputs = []
    for layer in range(_layer_count(weights, p)):
        inputs.append(x)
        base = f"encoder.layer.{layer}."

        def lin(name, h):
            return h @ w(base + name + ".weight").T + w(base + name + ".bias")

        q, k, v = (lin(f"attention.self.{t}", x) for t in ("query", "key", "value"))
        d = q.shape[1] // heads
        context = np.empty_like(v)
        for r in range(heads):
            sl = slice(r * d, (r + 1) * d)
            context[:, sl] = _softmax_rows(q[:, sl] @ k[:, sl].T / math.sqrt(d)) @ v[:, sl]
        h = _layer_norm(x + lin("attention.output.dense", context),
                        w(base + "attention.output.LayerNorm.weight"),
                        w(base + "attention.output.LayerNorm.bias"), eps)
        x = _layer_norm(h + lin("output.dense", _gelu(lin("intermediate.dense", h))),
                        w(base + "output.LayerNorm.weight"), w(base + "output.LayerNorm.bias"),
                        eps)
    return inputs, x
