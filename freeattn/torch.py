"""From a PyTorch attention layer to its predicted spectrum (optional extra ``[torch]``).

``freeattn.torch.compare(module, tokens)`` reads a
:class:`torch.nn.MultiheadAttention` (or a plain set of ``q``, ``k``, ``v``,
``o`` weight arrays), derives each head's effective inverse temperature and
width ratio from the weights' actual variances and the token Gram matrix
(theory eqs. (11.2)-(11.4)), runs the module's own forward pass on the tokens
and compares the measured spectra with the predicted laws: per head the
squared singular values of ``sqrt(n) (A_r - 11^T/n)`` against
``attention_law(beta_r, d/n)``, and the centred output (eq. (11.6)) against
the multi-head law scaled by eq. (11.7).

PyTorch is imported inside the functions that need it; the core of freeattn
never imports it, and :func:`default_init_parameters` (the formulas of
eq. (11.10), used by ``freeattn torch-init``) works without it.

``freeattn.torch.analyze(model, tokens)`` analyzes every attention head of a
pretrained model (a BERT-style ``.safetensors`` checkpoint, a weight mapping or
a module holding ``nn.MultiheadAttention`` / BERT-style self-attention) on real
text, against the law, the head's own linear surrogate, a finite-size null
model and Marchenko-Pastur, with the regime diagnostics of theory section 12.
"""

import copy
import math
import warnings
from dataclasses import dataclass

import numpy as np

from .interop._analyze import AnalysisReport, HeadProjections, HeadRow
from .interop._analyze_torch import analyze, bert_module
from .core._errors import ConvergenceError

__all__ = [
    "BiasWarning",
    "TokenGramWarning",
    "TokenLawFallbackWarning",
    "TokenNormWarning",
    "LayerParameters",
    "Outlier",
    "HeadReport",
    "OutputReport",
    "TorchReport",
    "analyze",
    "bert_module",
    "AnalysisReport",
    "HeadRow",
    "HeadProjections",
    "compare",
    "default_init_parameters",
    "effective_parameters",
    "orthonormal_tokens",
]

#: Largest relative deviation ``||Gamma/c - I||_2`` of the token Gram matrix
#: ``Gamma = X X^T`` (``c = tr Gamma / n``) accepted silently.  Tokens made
#: orthonormal in float32 deviate by ~1e-6; Gaussian tokens by ~2 sqrt(n/E),
#: which changes the law (theory eq. (11.2)), so anything visible is reported.
GRAM_TOLERANCE = 1e-3

#: Largest relative deviation ``max_i |‖x_i‖²/mean_j ‖x_j‖² - 1|`` of the tokens'
#: squared norms accepted silently.  The anisotropic law (theory eq. (13.7))
#: needs equal norms (theory section 13.4): with a diagonal Gram of spread 0.5
#: attention leaves its linear model by KS 0.055-0.15 at n = 400.  Gaussian tokens of
#: width E deviate by ~ 3 sqrt(2/E) at the largest of a few hundred tokens.
TOKEN_NORM_TOLERANCE = 0.1

#: An outlier is *localized* when both singular vectors put more than this
#: fraction of their mass on one token (theory eq. (11.12)).
LOCALIZATION_THRESHOLD = 0.5


class BiasWarning(UserWarning):
    """The module has a non-zero query bias, which the law does not model (eq. (11.5))."""


class TokenGramWarning(UserWarning):
    """The tokens are not orthonormal up to a scale (theory eq. (11.2))."""


class TokenNormWarning(UserWarning):
    """The tokens' norms are unequal beyond ``TOKEN_NORM_TOLERANCE`` (theory section 13.4).

    The Gaussian equivalence behind the token-Gram law (theory eq. (13.7)) needs
    tokens of equal norm; with unequal norms attention leaves its linear model.
    """


class TokenLawFallbackWarning(UserWarning):
    """The token-Gram law (theory eq. (13.7)) could not be built; the isotropic law is used."""


def _torch():
    try:
        import torch
    except ImportError:                      # pragma: no cover - torch is in the test extra
        raise ImportError("freeattn.torch needs PyTorch: pip install 'freeattn[torch]'") \
            from None
    return torch


@dataclass(frozen=True)
class LayerParameters:
    """Effective parameters of an attention layer (theory eqs. (11.3), (11.4), (11.7)).

    Attributes
    ----------
    embed_dim, heads, n : int
        ``E``, ``h`` and the number of tokens.
    token_scale : float
        ``c = tr(X X^T)/n``, the mean squared token norm.
    betas : tuple of float
        ``beta_eff`` of each head (eq. (11.3)).
    beta : float
        Their mean (the multi-head law's ``beta``).
    gamma : float
        ``d/n`` of one head.
    gamma_k, gamma_v, gamma_o : float
        ``E/n`` each (eq. (11.4)).
    output_scale : float
        ``s**2 = c sigma_V**2 E sigma_O**2`` (eq. (11.7)): the factor between
        the eigenvalues of the module's centred output and those of the
        multi-head law.
    query_variance, key_variance, value_variance, output_variance : float
        Mean squares of the weight entries (over all heads).
    """

    embed_dim: int
    heads: int
    n: int
    token_scale: float
    betas: tuple
    beta: float
    gamma: float
    gamma_k: float
    gamma_v: float
    gamma_o: float
    output_scale: float
    query_variance: float
    key_variance: float
    value_variance: float
    output_variance: float


def _check_sizes(embed_dim, heads, n):
    from .core._checks import check_int

    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    heads = check_int(heads, "heads", minimum=1)
    n = check_int(n, "n", minimum=2)
    if embed_dim % heads:
        raise ValueError(f"heads must divide embed_dim, got embed_dim={embed_dim}, "
                         f"heads={heads}")
    return embed_dim, heads, n


def default_init_parameters(embed_dim, heads, n, *, scale=None):
    """Effective parameters of a default-initialized ``nn.MultiheadAttention`` (eq. (11.10)).

    Parameters
    ----------
    embed_dim, heads : int
        ``E`` and ``h`` (``h`` divides ``E``).
    n : int
        Number of tokens, ``>= 2``.
    scale : float, optional
        ``c`` with ``X X^T = c I_n``; default ``E`` (tokens of squared norm
        ``E``, as after a LayerNorm).

    Returns
    -------
    LayerParameters
        ``beta_eff = c/(2E)`` for every head, ``gamma = (E/h)/n``,
        ``gamma_k = gamma_v = gamma_o = E/n``, ``output_scale = c/(6E)``.

    Notes
    -----
    ``in_proj_weight`` is ``xavier_uniform_`` (variance ``1/(2E)``),
    ``out_proj.weight`` the ``nn.Linear`` default (variance ``1/(3E)``), the
    biases 0 (theory eq. (11.10)).  No PyTorch needed.

    Examples
    --------
    >>> p = default_init_parameters(1024, 8, 512)
    >>> p.beta, p.gamma, p.gamma_o, round(p.output_scale, 12)
    (0.5, 0.25, 2.0, 0.166666666667)
    """
    from .core._checks import check_positive

    embed_dim, heads, n = _check_sizes(embed_dim, heads, n)
    c = float(embed_dim) if scale is None else float(check_positive(scale, "scale"))
    in_var, out_var = 1.0 / (2 * embed_dim), 1.0 / (3 * embed_dim)
    beta = c * in_var
    return LayerParameters(
        embed_dim=embed_dim, heads=heads, n=n, token_scale=c, betas=(beta,) * heads,
        beta=beta, gamma=embed_dim / heads / n, gamma_k=embed_dim / n, gamma_v=embed_dim / n,
        gamma_o=embed_dim / n, output_scale=c * in_var * embed_dim * out_var,
        query_variance=in_var, key_variance=in_var, value_variance=in_var,
        output_variance=out_var)


def orthonormal_tokens(n, embed_dim, *, scale=None, rng=None):
    """Tokens ``X`` (``n x E``) with ``X X^T = c I_n``: the inputs the law assumes (eq. (11.2)).

    Parameters
    ----------
    n, embed_dim : int
        ``n <= E``.
    scale : float, optional
        ``c``; default ``E``.
    rng : None, int or numpy.random.Generator, optional
        Seed of the random orthonormal frame (QR of a Gaussian matrix).

    Returns
    -------
    numpy.ndarray, shape (n, embed_dim), float64

    Examples
    --------
    >>> x = orthonormal_tokens(4, 6, scale=2.0, rng=0)
    >>> bool(np.allclose(x @ x.T, 2.0 * np.eye(4)))
    True
    """
    from .core._checks import check_int, check_positive
    from .laws._law_base import check_rng

    n = check_int(n, "n", minimum=1)
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    if n > embed_dim:
        raise ValueError(f"n must be <= embed_dim for orthonormal tokens, got n={n}, "
                         f"embed_dim={embed_dim}")
    c = float(embed_dim) if scale is None else float(check_positive(scale, "scale"))
    gen = check_rng(rng)
    q, r = np.linalg.qr(gen.standard_normal((embed_dim, n)))
    q *= np.sign(np.diagonal(r))
    return math.sqrt(c) * q.T


# ---------------------------------------------------------------------------
# reading a module


def _is_module(obj):
    torch = _torch()
    return isinstance(obj, torch.nn.MultiheadAttention)


def _module_from_weights(weights, heads):
    """An ``nn.MultiheadAttention`` (bias-free) carrying the arrays ``q, k, v, o``."""
    torch = _torch()
    if heads is None:
        raise TypeError("heads must be given (an integer) with a weight mapping")
    missing = [key for key in ("q", "k", "v", "o") if key not in weights]
    if missing:
        raise ValueError(f"module as a mapping must have the keys 'q', 'k', 'v', 'o' "
                         f"(arrays E x E, y = x @ W.T), missing {missing}")
    arrays = {}
    for key in ("q", "k", "v", "o"):
        value = weights[key]
        arr = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else \
            np.asarray(value)
        if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
            raise TypeError(f"weight {key!r} must be a real array, got dtype {arr.dtype}")
        arrays[key] = arr.astype(np.float64)
    embed_dim = arrays["q"].shape[0] if arrays["q"].ndim == 2 else -1
    for key, arr in arrays.items():
        if arr.ndim != 2 or arr.shape != (embed_dim, embed_dim):
            raise ValueError(f"weight {key!r} must be a square 2-d array E x E (all four the "
                             f"same E), got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"weight {key!r} must be finite")
    embed_dim, heads, _ = _check_sizes(embed_dim, heads, 2)
    module = torch.nn.MultiheadAttention(embed_dim, heads, bias=False, dtype=torch.float64)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.from_numpy(
            np.concatenate([arrays["q"], arrays["k"], arrays["v"]])))
        module.out_proj.weight.copy_(torch.from_numpy(arrays["o"]))
    return module


def _check_parameters(module):
    """Every parameter of ``module`` real and finite (named as ``module.<name>``)."""
    torch = _torch()
    for name, value in module.named_parameters():
        if value.is_complex() or not value.is_floating_point():
            raise TypeError(f"module.{name} must be a real floating-point tensor, got dtype "
                            f"{value.dtype}")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"module.{name} must be finite (it holds NaN or infinite "
                             f"entries)")


def _check_module(module):
    _check_parameters(module)
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("module must not use add_bias_kv or add_zero_attn (extra key/value "
                         "rows are not part of the model of theory eq. (11.1))")
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise ValueError(f"module must have kdim = vdim = embed_dim for self-attention, got "
                         f"kdim={module.kdim}, vdim={module.vdim}, "
                         f"embed_dim={module.embed_dim}")


def _projections(module):
    """``(W_Q, W_K, W_V, b_Q, b_K, b_V)`` as tensors (biases None when absent)."""
    e = module.embed_dim
    if module._qkv_same_embed_dim:
        w = module.in_proj_weight
        wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
    else:
        wq, wk, wv = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
    b = module.in_proj_bias
    bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
    return wq, wk, wv, bq, bk, bv


def _tokens(tokens, embed_dim, dtype):
    torch = _torch()
    if isinstance(tokens, torch.Tensor):
        if tokens.is_complex() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be a real array or tensor, got dtype {tokens.dtype}")
        x = tokens.detach()
    else:
        arr = np.asarray(tokens)
        if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
            raise TypeError(f"tokens must be a real array or tensor, got dtype {arr.dtype}")
        x = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float64))
    if x.ndim != 2:
        raise ValueError(f"tokens must be a 2-d array (n tokens x embed_dim), got shape "
                         f"{tuple(x.shape)}")
    if x.shape[1] != embed_dim:
        raise ValueError(f"tokens must have embed_dim = {embed_dim} columns, got shape "
                         f"{tuple(x.shape)}")
    if x.shape[0] < 2:
        raise ValueError(f"tokens must have at least 2 rows (tokens), got {x.shape[0]}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("tokens must be finite")
    return x.to(dtype)


def _token_gram(x64):
    """``c = tr(X X^T)/n`` and the relative deviation ``||Gamma/c - I||_2`` (eq. (11.2)).

    Linear algebra of the torch path runs in torch (its own thread pool): mixing
    it with SciPy's OpenBLAS after a forward pass was measured 50-100 times
    slower on two cores (a 512 x 512 eigh: 2.2 s instead of 30 ms).
    """
    torch = _torch()
    x = torch.from_numpy(np.ascontiguousarray(x64))
    gram = x @ x.T
    n = gram.shape[0]
    c = float(torch.trace(gram)) / n
    if not math.isfinite(c):
        raise ValueError("tokens are too large: tr(X X^T) overflows float64")
    if c <= 0:
        raise ValueError("tokens are all zero: the token Gram matrix has trace 0")
    deviation = float(torch.linalg.matrix_norm(gram / c - torch.eye(n, dtype=gram.dtype), 2))
    return c, deviation


def _token_gram_law(x64, warn=True):
    """Spectral law (mean 1) of ``X X^T/c`` as point masses, or ``None`` if isotropic.

    ``None`` when ``||X X^T/c - I||_2 <= GRAM_TOLERANCE`` (theory eq. (11.2));
    warns :class:`TokenNormWarning` when the squared norms deviate from their
    mean by more than ``TOKEN_NORM_TOLERANCE`` (theory section 13.4).
    """
    from .laws._elementary import point_masses

    torch = _torch()
    c, deviation = _token_gram(x64)
    x = torch.from_numpy(np.ascontiguousarray(x64))
    norms = (x * x).sum(dim=1).numpy() / c
    spread = float(np.max(np.abs(norms - 1.0)))
    if warn and spread > TOKEN_NORM_TOLERANCE:
        warnings.warn(f"token norms are unequal: max_i |‖x_i‖²/mean - 1| = {spread:.3g} > "
                      f"TOKEN_NORM_TOLERANCE = {TOKEN_NORM_TOLERANCE}; the token-Gram law "
                      f"assumes equal norms (theory section 13.4) and attention may not "
                      f"follow it", TokenNormWarning, stacklevel=3)
    if deviation <= GRAM_TOLERANCE:
        return None
    values = np.clip(torch.linalg.eigvalsh(x @ x.T).numpy() / c, 0.0, None)
    # eigenvalues at the rounding level of the largest one are the Gram's kernel
    values[values <= np.finfo(float).eps * len(values) * values.max()] = 0.0
    return point_masses(values / values.mean())


def _head_law(beta, gamma, tokens):
    """``attention_law(beta, gamma, tokens=tokens).squared()``, isotropic on ConvergenceError."""
    from .attention._laws import attention_law

    if tokens is None:
        return attention_law(beta, gamma).squared()
    try:
        return attention_law(beta, gamma, tokens=tokens).squared()
    except ConvergenceError as exc:
        warnings.warn(f"the token-Gram law (theory eq. (13.7)) could not be built "
                      f"({exc}); falling back to the isotropic law attention_law(beta, "
                      f"gamma), which assumes X X^T = c I", TokenLawFallbackWarning,
                      stacklevel=4)
        return attention_law(beta, gamma).squared()


def _squared_singular_values(y):
    """Squared singular values of a float64 tensor, ascending (as numpy)."""
    torch = _torch()
    gram = y @ y.T if y.shape[0] <= y.shape[1] else y.T @ y
    values = torch.linalg.eigvalsh(gram).numpy()
    return np.clip(values, 0.0, None)


def _mean_square(tensor):
    return float((tensor.detach().to(dtype=_torch().float64) ** 2).mean())


def _effective(module, x64, warn=True):
    """LayerParameters of ``module`` on tokens ``x64`` (float64 numpy)."""
    e, h = module.embed_dim, module.num_heads
    n = x64.shape[0]
    d = e // h
    c, deviation = _token_gram(x64)
    if warn and deviation > GRAM_TOLERANCE:
        why = (f"n = {n} > embed_dim = {e}, so X X^T has rank <= {e} < n" if n > e else
               "the tokens are not orthogonal or not of equal norm")
        warnings.warn(f"token Gram matrix X X^T is not c I_n: ||X X^T/c - I||_2 = "
                      f"{deviation:.3g} > {GRAM_TOLERANCE} ({why}); the predicted laws use "
                      f"c = tr(X X^T)/n = {c:.6g} and assume orthonormal tokens "
                      f"(theory eq. (11.2)); use freeattn.torch.orthonormal_tokens",
                      TokenGramWarning, stacklevel=3)
    wq, wk, wv, bq, _, _ = _projections(module)
    if warn and bq is not None and bool((bq != 0).any()):
        torch = _torch()
        tilts = []
        with torch.no_grad():
            for r in range(h):
                k = torch.nn.functional.linear(torch.from_numpy(x64), wk[r * d:(r + 1) * d]
                                               .to(torch.float64))
                tilts.append(float((k @ bq[r * d:(r + 1) * d].to(torch.float64)).std())
                             / math.sqrt(d))
        warnings.warn(f"module has a non-zero query bias: it tilts every row of the scores "
                      f"by the same key-dependent vector (std {max(tilts):.3g} in log-weight "
                      f"units, largest over heads), which the law does not model (theory "
                      f"eq. (11.5)); key, value and output biases are accounted for exactly",
                      BiasWarning, stacklevel=3)
    betas = tuple(c * math.sqrt(_mean_square(wq[r * d:(r + 1) * d])
                                * _mean_square(wk[r * d:(r + 1) * d])) for r in range(h))
    v_var, o_var = _mean_square(wv), _mean_square(module.out_proj.weight)
    return LayerParameters(
        embed_dim=e, heads=h, n=n, token_scale=c, betas=betas,
        beta=float(np.mean(betas)), gamma=d / n, gamma_k=e / n, gamma_v=e / n, gamma_o=e / n,
        output_scale=c * v_var * e * o_var, query_variance=_mean_square(wq),
        key_variance=_mean_square(wk), value_variance=v_var, output_variance=o_var)


def _as_module(module, heads):
    if heads is not None:
        from .core._checks import check_int

        heads = check_int(heads, "heads", minimum=1)
    if isinstance(module, dict) or hasattr(module, "keys") and not _is_module(module):
        return _module_from_weights(module, heads)
    if not _is_module(module):
        raise TypeError(f"module must be a torch.nn.MultiheadAttention or a mapping of "
                        f"weight arrays 'q', 'k', 'v', 'o', got {type(module).__name__}")
    if heads is not None and heads != module.num_heads:
        raise ValueError(f"heads={heads} does not match module.num_heads = "
                         f"{module.num_heads}")
    _check_module(module)
    return module


def effective_parameters(module, tokens, *, heads=None):
    """Effective ``beta``, ``gamma`` and output scale of a layer on given tokens.

    Parameters
    ----------
    module : torch.nn.MultiheadAttention or mapping
        The layer, or a mapping with arrays ``'q'``, ``'k'``, ``'v'``, ``'o'``
        (``E x E``, acting as ``y = x @ W.T`` like ``nn.Linear``).
    tokens : array_like or torch.Tensor, shape (n, embed_dim)
        One token per row.
    heads : int, optional
        Number of heads (required with a mapping).

    Returns
    -------
    LayerParameters
        ``beta_eff_r = c sigma_Q,r sigma_K,r`` from the weights' mean squares
        and ``c = tr(X X^T)/n`` (theory eqs. (11.2)-(11.4)), ``output_scale``
        of eq. (11.7).

    Warns
    -----
    TokenGramWarning
        If ``X X^T`` is not ``c I_n`` to ``GRAM_TOLERANCE`` (e.g. ``n > E``).
    BiasWarning
        If the query bias is not zero (eq. (11.5)).
    """
    module = _as_module(module, heads)
    torch = _torch()
    x = _tokens(tokens, module.embed_dim, torch.float64)
    return _effective(module, x.numpy())


# ---------------------------------------------------------------------------
# measuring


@dataclass(frozen=True)
class Outlier:
    """A squared singular value above the predicted edge, and where it lives (eq. (11.12)).

    Attributes
    ----------
    value : float
        The squared singular value.
    query, key : int
        Token indices of the largest components of the left (query) and
        right (key) singular vectors.
    query_weight, key_weight : float
        Those largest squared components (1: all the mass on one token).
    localized : bool
        Both weights above ``LOCALIZATION_THRESHOLD``: one query/key pair.
    """

    value: float
    query: int
    key: int
    query_weight: float
    key_weight: float
    localized: bool


@dataclass(frozen=True)
class HeadReport:
    """One head: predicted law against the spectrum of the module's attention weights.

    Attributes
    ----------
    head : int
    beta, gamma : float
        Effective parameters (theory eqs. (11.3), (11.4)).
    law : AttentionLaw
        ``attention_law(beta, gamma).squared()``.
    ks, w1 : float
        Kolmogorov and Wasserstein-1 distances of the measured squared singular
        values of ``sqrt(n) (A_r - 11^T/n)`` (the structural zero removed) to
        ``law`` (theory eqs. (7.9), (7.10)).
    ks_mp, w1_mp : float
        The same to the Marchenko-Pastur law of the same mean ``theta1``
        (ratio 1), the law of i.i.d. entries.
    edge : float
        Predicted upper edge of ``law``.
    largest : float
        Largest measured squared singular value.
    outliers : tuple of Outlier
        Values above ``edge (1 + 3 n**(-2/3))`` (theory eq. (7.8)).
    values : numpy.ndarray
        The measured squared singular values, ascending (``n - 1``).
    """

    head: int
    beta: float
    gamma: float
    law: object
    ks: float
    w1: float
    ks_mp: float
    w1_mp: float
    edge: float
    largest: float
    outliers: tuple
    values: np.ndarray


@dataclass(frozen=True)
class OutputReport:
    """The centred output ``MHA_perp`` (eq. (11.6)) against the multi-head law (eq. (11.7)).

    Attributes
    ----------
    beta, gamma_k, gamma_v, gamma_o, output_scale : float
        Parameters of the prediction.
    law : SpectralLaw or None
        ``freeattn.multihead_law(beta, heads=h, gamma_k=..., gamma_v=...,
        gamma_o=...)`` scaled by ``output_scale``; ``None`` when it cannot be
        built (``law_error`` says why; then ``ks``, ``w1`` and ``edge`` are NaN).
    ks, w1 : float
        Distances of the ``n`` eigenvalues of ``MHA_perp MHA_perp^T`` (zeros
        included) to ``law``.
    ks_mp, w1_mp : float
        The same to ``MP(s**2 theta1 gamma_o, 1/gamma_o)``, the law of an
        output with i.i.d. entries of the same mean (eq. (11.7)).
    edge, largest : float
        Predicted upper edge and largest measured eigenvalue.
    outliers : int
        Eigenvalues above ``edge (1 + 3 n**(-2/3))`` (0 without a law).
    values : numpy.ndarray
        The ``n`` measured eigenvalues, ascending.
    law_error : str
        Why ``law`` is ``None`` although :func:`freeattn.multihead_law` exists
        (it raised: a temperature or geometry its towers do not solve, theory
        section 9.11); empty otherwise.
    token_law : bool
        ``law`` is the multi-head law for the tokens' Gram spectrum (theory
        section 9.12); ``False`` for isotropic tokens, or where that law is
        not available (a square factor ``n >= E``, a rank-deficient Gram, or a
        failed solve: :class:`TokenLawFallbackWarning`).
    """

    beta: float
    gamma_k: float
    gamma_v: float
    gamma_o: float
    output_scale: float
    law: object
    ks: float
    w1: float
    ks_mp: float
    w1_mp: float
    edge: float
    largest: float
    outliers: int
    values: np.ndarray
    law_error: str = ""
    token_law: bool = False


@dataclass(frozen=True)
class TorchReport:
    """What :func:`compare` measured.

    Attributes
    ----------
    parameters : LayerParameters
    heads : tuple of HeadReport
    output : OutputReport
    dtype : str
        ``"float32"`` or ``"float64"``: the precision of the forward pass.
    """

    parameters: LayerParameters
    heads: tuple
    output: OutputReport
    dtype: str

    def summary(self):
        """Per-head rows ``(head, beta, gamma, ks, ks_mp, outliers, localized)``."""
        return [(h.head, h.beta, h.gamma, h.ks, h.ks_mp, len(h.outliers),
                 sum(o.localized for o in h.outliers)) for h in self.heads]


def _distances(law, sorted_values):
    from .montecarlo import _statistics as stats
    from .montecarlo._validation import _ks

    return _ks(law, sorted_values), stats.w1_distance(sorted_values, law.cdf, law.support())


def _outlier_threshold(edge, n):
    from .montecarlo._statistics import EDGE_MARGIN_WIDTHS

    return edge * (1.0 + EDGE_MARGIN_WIDTHS * n ** (-2.0 / 3.0))


def _head_report(r, attention, beta, gamma, law=None):
    """Report of head ``r`` from its attention weights (``n x n`` float64 tensor)."""
    from .laws._elementary import marchenko_pastur
    from .attention._laws import attention_law

    torch = _torch()
    n = attention.shape[0]
    y = math.sqrt(n) * (attention - 1.0 / n)
    values = _squared_singular_values(y)[1:]          # the structural zero (rank n - 1)
    law = attention_law(beta, gamma).squared() if law is None else law
    edge = float(law.support()[1])
    ks, w1 = _distances(law, values)
    ks_mp, w1_mp = _distances(marchenko_pastur(law.mean(), 1.0), values)
    threshold = _outlier_threshold(edge, n)
    outliers = []
    count = int(np.count_nonzero(values > threshold))
    if count:
        u, s, vt = (t.numpy() for t in torch.linalg.svd(y))
        for k in range(count):
            qw, kw = u[:, k] ** 2, vt[k] ** 2
            i, j = int(np.argmax(qw)), int(np.argmax(kw))
            outliers.append(Outlier(
                value=float(s[k] ** 2), query=i, key=j, query_weight=float(qw[i]),
                key_weight=float(kw[j]),
                localized=bool(qw[i] > LOCALIZATION_THRESHOLD and kw[j] > LOCALIZATION_THRESHOLD)))
    return HeadReport(head=r, beta=beta, gamma=gamma, law=law, ks=ks, w1=w1, ks_mp=ks_mp,
                      w1_mp=w1_mp, edge=edge, largest=float(values[-1]),
                      outliers=tuple(outliers), values=values)


def _output_report(params, centred, gram_law=None):
    import freeattn

    from .attention._coefficients import linear_coefficients
    from .laws._elementary import marchenko_pastur

    n = centred.shape[0]
    values = np.zeros(n)
    measured = _squared_singular_values(centred)
    values[n - measured.size:] = measured            # n values, zeros included
    theta1 = float(linear_coefficients(params.beta).theta1)
    mp = marchenko_pastur(params.output_scale * theta1 * params.gamma_o, 1.0 / params.gamma_o)
    ks_mp, w1_mp = _distances(mp, values)
    builder = getattr(freeattn, "multihead_law", None)
    law, ks, w1, edge, outliers, law_error = None, math.nan, math.nan, math.nan, 0, ""
    kwargs = dict(heads=params.heads, gamma_k=params.gamma_k, gamma_v=params.gamma_v,
                  gamma_o=params.gamma_o)
    token_law = False
    if builder is not None and gram_law is not None:
        try:
            law = builder(params.beta, tokens=gram_law, **kwargs).scaled(params.output_scale)
            token_law = True
        except (ValueError, ConvergenceError) as exc:
            warnings.warn(f"the multi-head law for the tokens' Gram (theory section 9.12) is "
                          f"not available ({type(exc).__name__}: {exc}); the output is "
                          f"compared with the isotropic multi-head law, which assumes "
                          f"X X^T = c I", TokenLawFallbackWarning, stacklevel=3)
    if builder is not None and law is None:
        try:
            law = builder(params.beta, **kwargs).scaled(params.output_scale)
        except (ValueError, ConvergenceError) as exc:
            # a geometry or temperature the multi-head law's towers do not solve
            # (theory section 9.11): reported instead of failing
            law_error = f"{type(exc).__name__}: {exc}"
    if law is not None:
        ks, w1 = _distances(law, values)
        edge = float(law.support()[1])
        outliers = int(np.count_nonzero(values > _outlier_threshold(edge, n)))
    return OutputReport(beta=params.beta, gamma_k=params.gamma_k, gamma_v=params.gamma_v,
                        gamma_o=params.gamma_o, output_scale=params.output_scale, law=law,
                        ks=ks, w1=w1, ks_mp=ks_mp, w1_mp=w1_mp, edge=edge,
                        largest=float(values[-1]), outliers=outliers, values=values,
                        law_error=law_error, token_law=token_law)


def _forward(module, x):
    """``(out, weights, centred)`` of the module's own forward pass (eq. (11.6))."""
    torch = _torch()
    e = module.embed_dim
    _, _, wv, _, _, bv = _projections(module)
    training = module.training
    module.eval()                                  # no dropout on the weights
    try:
        with torch.no_grad():
            out, weights = module(x, x, x, need_weights=True, average_attn_weights=False)
            values = torch.nn.functional.linear(x, wv, bv)
            centred = out - module.out_proj(values.mean(dim=0))
    finally:
        module.train(training)
    if weights is None or tuple(weights.shape) != (module.num_heads, x.shape[0], x.shape[0]):
        raise ValueError(f"module returned attention weights of shape "
                         f"{None if weights is None else tuple(weights.shape)}, expected "
                         f"({module.num_heads}, {x.shape[0]}, {x.shape[0]}) with "
                         f"embed_dim={e}")
    for what, tensor in (("attention weights", weights), ("output", centred)):
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"the forward pass at {x.dtype} overflowed: the module's {what} "
                             f"are not finite; tokens (largest |entry| "
                             f"{float(x.abs().max()):.3g}) or the module's weights are too "
                             f"large for this dtype")
    return out, weights, centred


def compare(module, tokens, *, heads=None, dtype=None):
    """Predicted against measured spectra of an attention layer on given tokens.

    Parameters
    ----------
    module : torch.nn.MultiheadAttention or mapping
        The layer (``kdim = vdim = embed_dim``, no ``add_bias_kv`` /
        ``add_zero_attn``), or a mapping with arrays ``'q'``, ``'k'``, ``'v'``,
        ``'o'`` (each ``E x E``, acting as ``y = x @ W.T``), which is loaded
        into a bias-free ``nn.MultiheadAttention``.  The module is not changed
        (a copy runs at ``dtype``; dropout is off during the pass).
    tokens : array_like or torch.Tensor, shape (n, embed_dim)
        One token per row.  With ``X X^T = c I_n`` (theory eq. (11.2), see
        :func:`orthonormal_tokens`) each head is compared with the isotropic
        law; otherwise with ``attention_law(beta, gamma, tokens=G)``, ``G`` the
        spectrum of ``X X^T/c`` (theory eq. (13.7)), falling back to the
        isotropic law with a :class:`TokenLawFallbackWarning` where that law
        raises :class:`freeattn.ConvergenceError`.
    heads : int, optional
        Number of heads; required with a mapping, checked against a module.
    dtype : {None, "float32", "float64", torch.float32, torch.float64}, optional
        Precision of the forward pass (default: the module's).

    Returns
    -------
    TorchReport
        ``parameters`` (eqs. (11.3), (11.4), (11.7)), one :class:`HeadReport`
        per head and an :class:`OutputReport` for the centred output.

    Raises
    ------
    TypeError
        If ``module`` is neither a ``MultiheadAttention`` nor a mapping, a
        mapping comes without ``heads``, ``heads`` is not an integer (bools
        excluded), or ``tokens``/weights/the module's parameters are not real
        (complex tensors included).
    ValueError
        On wrong shapes (``tokens`` not ``n x embed_dim``, non-square or
        mismatched weight arrays), ``heads`` not dividing ``embed_dim`` or not
        matching the module, unsupported module options, non-finite tokens or
        parameters, a forward pass that overflows at ``dtype``, or an effective
        ``beta`` or ``gamma`` outside the laws' range.
    ImportError
        Without PyTorch.

    Warns
    -----
    TokenGramWarning
        Tokens not orthonormal up to a scale (the prediction uses the measured
        ``c = tr(X X^T)/n``; the shape of the Gram is not corrected).
    BiasWarning
        A non-zero query bias (key, value and output biases are accounted for
        exactly, theory eq. (11.5)).
    TokenNormWarning
        Token norms unequal beyond ``TOKEN_NORM_TOLERANCE`` (the token-Gram
        law needs equal norms, theory section 13.4).
    TokenLawFallbackWarning
        The token-Gram law could not be built; the isotropic law was used.

    Notes
    -----
    Per head, the squared singular values of ``sqrt(n) (A_r - 11^T/n)`` from the
    module's own attention weights (``need_weights=True,
    average_attn_weights=False``) are compared with
    ``attention_law(beta_r, d/n)`` (eq. (11.3)); values above the edge are
    reported with their localization (eq. (11.12)).  The centred output is
    ``out - out_proj(mean value row)`` (eq. (11.6)); its ``n`` eigenvalues are
    compared with ``freeattn.multihead_law`` scaled by ``s**2`` (eq. (11.7))
    when this freeattn provides it.

    Examples
    --------
    >>> import torch, freeattn.torch as ft
    >>> _ = torch.manual_seed(0)
    >>> layer = torch.nn.MultiheadAttention(64, 2)
    >>> x = ft.orthonormal_tokens(32, 64, scale=128.0, rng=0)   # beta_eff = c/(2E) = 1
    >>> report = ft.compare(layer, x)
    >>> [round(h.beta, 2) for h in report.heads], report.heads[0].gamma
    ([1.0, 1.0], 1.0)
    """
    torch = _torch()
    module = _as_module(module, heads)
    if dtype is None:
        dtype = module.out_proj.weight.dtype
    elif isinstance(dtype, str):
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        dtype = getattr(torch, dtype)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    x = _tokens(tokens, module.embed_dim, torch.float64)
    params = _effective(module, x.numpy())
    work = copy.deepcopy(module).to(dtype)
    _, weights, centred = _forward(work, x.to(dtype))
    weights = weights.to(torch.float64)
    gram_law = _token_gram_law(x.numpy())
    head_reports = tuple(_head_report(r, weights[r], params.betas[r], params.gamma,
                                      _head_law(params.betas[r], params.gamma, gram_law))
                         for r in range(params.heads))
    output = _output_report(params, centred.to(torch.float64), gram_law)
    return TorchReport(parameters=params, heads=head_reports, output=output,
                       dtype=str(dtype).replace("torch.", ""))
