"""Monte Carlo models of attention stacks and of attention on anisotropic tokens.

Stacks (theory/13_stacks.md, section 13.1-13.3): the product
``B_L ... B_1`` of centred attention matrices ``B_l = sqrt(n) (A_l - 11^T/n)``,

``"stack"``
    independent layers: ``A_l = softmax_rows(beta S_l)``, ``S_l = Q_l K_l^T/sqrt(d_qk)``
    with fresh i.i.d. N(0, 1) queries and keys per layer (theory eq. (13.1));
``"stack_linear"``
    the product of the layers' linear models ``(beta S_l + alpha W_l)/sqrt(n)``,
    same ``S_l``;
``"stack_residual"``
    coupled layers with residual and LayerNorm,
    ``X_{l+1} = LN(X_l + A_l X_l W_V,l)``, ``Q_l = X_l W_Q,l``, ``K_l = X_l W_K,l``
    (theory eq. (13.4));
``"stack_plain"``
    coupled, no residual: ``X_{l+1} = B_l X_l / sqrt(theta1)`` (a counterexample,
    theory section 13.3);
``"stack_pure"``
    coupled pure attention ``X_{l+1} = LN(A_l X_l W_V,l)`` (a counterexample: rank
    collapse, theory section 13.3).

Every stack model takes the option ``layers`` (default 2) and names the law it is
compared with, :func:`freeattn.attention_stack_law` at that depth (for
``layers = 1`` the single-layer law).  Tokens are ``n x D`` with ``D = n``, the
first layer's ``X_1 = sqrt(D) O`` with ``O`` Haar orthogonal (``X_1 X_1^T/D = I``),
weights ``W_Q, W_K`` i.i.d. N(0, 1/D) (``D x d_qk``), ``W_V`` i.i.d. N(0, 1/D)
(``D x D``); LN removes each token's feature mean and scales it to norm ``sqrt(D)``.

Tokens (theory section 13.4): one layer with ``Q = F H_Q``, ``K = F H_K``,
``F F^T = G`` the token Gram ``X X^T/D``, ``H`` i.i.d. N(0, 1):

``"tokens_rotated"``
    ``G = D^{-1/2} O diag(g) O^T D^{-1/2}``, ``g`` half ``1 - s``, half ``1 + s``
    (option ``spread = s``, default 0.5), ``O`` Haar, ``D = diag(O diag(g) O^T)``
    (equal token norms);
``"tokens_wishart"``
    ``G`` the Gram of ``n x D`` i.i.d. Gaussian tokens with each row scaled to
    norm ``sqrt(D)`` (equal norms), ``n/D`` = option ``wishart_ratio`` (default 0.5);
``"tokens_diagonal"``
    ``G = diag(g)``: unequal token norms (the documented counterexample);

each with its ``*_linear`` twin ``(beta S + alpha W)/sqrt(n)`` on the same
``S``.  Their law is ``attention_law(beta, gamma, tokens=...)`` (theory
eq. (13.7)); they are contrasted with the isotropic law.
"""

import functools

import numpy as np

from ..core._checks import check_int
from ..attention._coefficients import linear_coefficients
from ._models import Intermediate, Model, register_intermediate, register_model
from ._sampling import softmax_rows
from ._multihead_models import register_token_models

__all__ = [
    "STACK_MODELS",
    "TOKEN_MODELS",
    "layer_norm",
    "stack_law_for_model",
    "token_gram_law",
    "token_law_for_model",
]

#: The stack models, by name.
STACK_MODELS = ("stack", "stack_linear", "stack_residual", "stack_plain", "stack_pure")
#: The anisotropic-token models, by name.
TOKEN_MODELS = ("tokens_rotated", "tokens_rotated_linear", "tokens_wishart",
                "tokens_wishart_linear", "tokens_diagonal", "tokens_diagonal_linear")

#: Default depth of the stack models.
DEFAULT_LAYERS = 2
#: Default half-width ``s`` of the two-point token spectrum ``{1 - s, 1 + s}``.
DEFAULT_SPREAD = 0.5
#: Default ``n/D`` of the Wishart tokens.
DEFAULT_WISHART_RATIO = 0.5
#: Largest ``n/dim`` of the Wishart token models: above 1 the Gram is
#: rank-deficient (``MP(1, ratio)``, an atom ``1 - 1/ratio`` at 0).
MAX_WISHART_RATIO = 4.0
#: At most this many top values of a stack's spectrum are treated as outliers
#: (one conditional-mean spike per layer can survive the centring, theory eq. (7.8)).
STACK_OUTLIERS = 4


def layer_norm(x):
    """LayerNorm without parameters: each row centred and scaled to norm ``sqrt(D)``.

    Parameters
    ----------
    x : numpy.ndarray, shape (n, D)

    Returns
    -------
    numpy.ndarray, shape (n, D)
        New array; every row has mean 0 and ``sum(row**2) = D``.

    Examples
    --------
    >>> y = layer_norm(np.array([[1.0, 2.0, 3.0]]))
    >>> bool(np.isclose(y.sum(), 0.0)), bool(np.isclose((y**2).sum(), 3.0))
    (True, True)
    """
    y = x - x.mean(axis=1, keepdims=True)
    y *= np.sqrt(x.shape[1] / np.einsum("ij,ij->i", y, y))[:, None]
    return y


# ---------------------------------------------------------------------------
# the randomness of a stack: one seed per draw, spawned into one stream per layer


def _build_stack_seed(draw, rng):
    """Entropy of the stack's layer streams (stream ``"stack"``)."""
    return int(rng.integers(0, 2 ** 63 - 1))


def _token_factor(kind, draw, rng):
    """``F`` with ``F F^T = G`` for the token models of ``kind`` (own stream per kind)."""
    n = draw.n
    if kind == "wishart":
        ratio = float(draw.options.get("wishart_ratio", DEFAULT_WISHART_RATIO))
        dim = max(1, int(round(n / ratio)))
        x = rng.standard_normal((n, dim))
        x *= 1.0 / np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
        return x
    s = float(draw.options.get("spread", DEFAULT_SPREAD))
    g = np.where(np.arange(n) < n // 2, 1.0 - s, 1.0 + s)
    if kind == "diagonal":
        return np.diag(np.sqrt(g))
    o = _haar_orthogonal(n, rng)
    f = o * np.sqrt(g)[None, :]
    f *= 1.0 / np.sqrt(np.einsum("ij,ij->i", f, f))[:, None]
    return f


def _token_scores(kind, draw, rng):
    """``S = F H_Q (F H_K)^T / sqrt(d_qk)``, ``H`` i.i.d. N(0, 1) (theory eq. (13.5))."""
    f = draw.get(f"token_factor_{kind}")
    hq = rng.standard_normal((f.shape[1], draw.d_qk))
    hk = rng.standard_normal((f.shape[1], draw.d_qk))
    return (f @ hq) @ (f @ hk).T / np.sqrt(draw.d_qk)


TOKEN_KINDS = ("rotated", "wishart", "diagonal")

register_intermediate(Intermediate("stack_seed", _build_stack_seed, stream="stack"))
for _kind in TOKEN_KINDS:
    register_intermediate(Intermediate(f"token_factor_{_kind}",
                                       functools.partial(_token_factor, _kind),
                                       stream=f"tokens_{_kind}"))
    register_intermediate(Intermediate(f"token_scores_{_kind}",
                                       functools.partial(_token_scores, _kind),
                                       requires=(f"token_factor_{_kind}",),
                                       stream=f"token_scores_{_kind}"))


def _haar_orthogonal(n, rng):
    """Haar orthogonal ``n x n`` (QR of a Gaussian matrix with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    q *= np.sign(np.diag(r))[None, :]
    return q


def _layer_generators(draw, extra=0):
    """One generator per layer (child ``l`` of the draw's stack seed), plus ``extra``."""
    layers = int(draw.options.get("layers", DEFAULT_LAYERS))
    seq = np.random.SeedSequence(draw.get("stack_seed"))
    return [np.random.default_rng(s) for s in seq.spawn(layers + extra)]


def _centred(a):
    a -= 1.0 / a.shape[0]
    a *= np.sqrt(a.shape[0])
    return a


def _layer_draw(gen, n, d_qk):
    """One layer's Gaussian matrices, always drawn in the same order (coupling)."""
    hq = gen.standard_normal((n, d_qk))
    hk = gen.standard_normal((n, d_qk))
    noise = gen.standard_normal((n, n))
    value = gen.standard_normal((n, n)) / np.sqrt(n)
    return hq, hk, noise, value


def _sample_stack(draw, linear=False):
    """``B_L ... B_1`` with independent layers (theory eq. (13.1)), or its linear twin."""
    n, d, beta = draw.n, draw.d_qk, draw.beta
    alpha = float(linear_coefficients(beta).alpha)
    out = None
    for gen in _layer_generators(draw):
        hq, hk, noise, _ = _layer_draw(gen, n, d)
        s = hq @ hk.T / np.sqrt(d)
        if linear:
            b = (beta * s + alpha * noise) / np.sqrt(n)
        else:
            b = _centred(softmax_rows(s, beta))
        out = b if out is None else b @ out
    return out


def _sample_stack_linear(draw):
    return _sample_stack(draw, linear=True)


def _sample_coupled(draw, update):
    """``B_L ... B_1`` of coupled layers, tokens updated by ``update(x, a, b, w_v)``."""
    n, d, beta = draw.n, draw.d_qk, draw.beta
    *gens, token_gen = _layer_generators(draw, extra=1)
    x = np.sqrt(n) * _haar_orthogonal(n, token_gen)
    theta1 = float(linear_coefficients(beta).theta1)
    out = None
    for gen in gens:
        hq, hk, _, value = _layer_draw(gen, n, d)
        q = x @ hq / np.sqrt(n)
        k = x @ hk / np.sqrt(n)
        a = softmax_rows(q @ k.T / np.sqrt(d), beta)
        b = _centred(a.copy())
        x = update(x, a, b, value, theta1)
        out = b if out is None else b @ out
    return out


def _sample_stack_residual(draw):
    """Coupled residual + LayerNorm layers (theory eq. (13.4))."""
    return _sample_coupled(draw, lambda x, a, b, v, t: layer_norm(x + a @ x @ v))


def _sample_stack_plain(draw):
    """Coupled layers without residual, ``X_{l+1} = B_l X_l/sqrt(theta1)`` (section 13.3)."""
    return _sample_coupled(draw, lambda x, a, b, v, t: b @ x / np.sqrt(t))


def _sample_stack_pure(draw):
    """Coupled pure attention, ``X_{l+1} = LN(A_l X_l W_V)`` (section 13.3)."""
    return _sample_coupled(draw, lambda x, a, b, v, t: layer_norm(a @ x @ v))


def stack_law_for_model(beta, gamma, *, layers=DEFAULT_LAYERS):
    """``attention_stack_law(beta, gamma, layers=layers)``: the law every stack model names."""
    from ..attention._stack_law import attention_stack_law

    return attention_stack_law(beta, gamma, layers=layers)


def stack_reference(beta, gamma, *, layers=DEFAULT_LAYERS):
    """``MP(theta1, 1)`` folded ``layers`` times by ⊠: i.i.d. layers of the same variance."""
    from ..laws._elementary import marchenko_pastur
    from ..compose._subordination import free_multiplicative

    mp = marchenko_pastur(float(linear_coefficients(beta).theta1), 1.0)
    law = mp
    for _ in range(int(layers) - 1):
        law = free_multiplicative(law, mp)
    return law


def _check_layers(n, d_qk, *, layers=DEFAULT_LAYERS):
    from ..attention._stack_law import MAX_STACK_LAYERS

    layers = check_int(layers, "layers", minimum=1)
    if layers > MAX_STACK_LAYERS:
        raise ValueError(f"layers must be in [1, {MAX_STACK_LAYERS}], got {layers}")


# ---------------------------------------------------------------------------
# token models


def _sample_tokens(kind, draw):
    """``sqrt(n) (A - 11^T/n)`` on the token scores (theory eq. (13.5))."""
    return _centred(softmax_rows(draw.take(f"token_scores_{kind}"), draw.beta))


def _sample_tokens_linear(kind, draw):
    """``(beta S + alpha W)/sqrt(n)`` on the token scores (theory eq. (13.6))."""
    s = draw.take(f"token_scores_{kind}")
    s *= draw.beta
    s += float(linear_coefficients(draw.beta).alpha) * draw.get("linear_noise")
    s /= np.sqrt(draw.n)
    return s


def token_gram_law(kind, spread=DEFAULT_SPREAD, wishart_ratio=DEFAULT_WISHART_RATIO):
    """The limit spectral law ``G`` of the token Gram of the models of ``kind``.

    Two-point ``{1 - spread, 1 + spread}`` (rotated, diagonal) or
    ``MP(1, wishart_ratio)`` (Wishart: rows normalized, which leaves the limit law).
    """
    from ..laws._elementary import marchenko_pastur, point_masses

    if kind == "wishart":
        return marchenko_pastur(1.0, float(wishart_ratio))
    return point_masses([1.0 - float(spread), 1.0 + float(spread)])


def token_law_for_model(kind, beta, gamma, *, spread=DEFAULT_SPREAD,
                        wishart_ratio=DEFAULT_WISHART_RATIO):
    """``attention_law(beta, gamma, tokens=G).squared()`` for the models' ``G``."""
    from ..attention._laws import attention_law

    return attention_law(beta, gamma,
                         tokens=token_gram_law(kind, spread, wishart_ratio)).squared()


def token_reference(beta, gamma, **options):
    """The isotropic law ``attention_law(beta, gamma).squared()``."""
    from ..attention._laws import attention_law

    return attention_law(beta, gamma).squared()


def _check_tokens(n, d_qk, *, spread=DEFAULT_SPREAD, wishart_ratio=DEFAULT_WISHART_RATIO):
    if not 0.0 <= float(spread) < 1.0:
        raise ValueError(f"spread must be in [0, 1), got {spread!r}")
    if not 0.0 < float(wishart_ratio) <= MAX_WISHART_RATIO:
        raise ValueError(f"wishart_ratio must be in (0, {MAX_WISHART_RATIO}], got "
                         f"{wishart_ratio!r}")


_STACK_OPTIONS = {"layers": DEFAULT_LAYERS}


def _stack_model(name, sample, description, equation, outliers):
    return Model(name, sample, uses=("stack_seed",), law=stack_law_for_model,
                 reference=stack_reference, zeros=1 if outliers else 0, outliers=outliers,
                 description=description, equation=equation, options=dict(_STACK_OPTIONS),
                 check=_check_layers)


def _token_model(name, kind, linear):
    options = {"spread": DEFAULT_SPREAD, "wishart_ratio": DEFAULT_WISHART_RATIO}
    scores = f"token_scores_{kind}"
    uses = (scores, "linear_noise") if linear else (scores,)
    what = {"rotated": "Haar-rotated two-point Gram, equal norms",
            "wishart": "Wishart Gram, rows normalized",
            "diagonal": "diagonal two-point Gram, unequal norms"}[kind]
    kind_of = "linear model" if linear else "sqrt(n)(A - 11^T/n)"
    sample = functools.partial(_sample_tokens_linear if linear else _sample_tokens, kind)
    return Model(name, sample, uses=uses,
                 law=functools.partial(token_law_for_model, kind), reference=token_reference,
                 zeros=0 if linear else 1, outliers=0 if linear else 1,
                 description=f"{kind_of} with tokens of {what}",
                 equation="theory eq. (13.6)" if linear else "theory eq. (13.5)",
                 options=options, check=_check_tokens)


for _model in (
        _stack_model("stack", _sample_stack, "B_L ... B_1, independent attention layers",
                     "theory eq. (13.1)", STACK_OUTLIERS),
        _stack_model("stack_linear", _sample_stack_linear,
                     "product of the layers' linear models", "theory eq. (13.1)", 0),
        _stack_model("stack_residual", _sample_stack_residual,
                     "B_L ... B_1, coupled layers X <- LN(X + A X W_V)", "theory eq. (13.4)",
                     STACK_OUTLIERS),
        _stack_model("stack_plain", _sample_stack_plain,
                     "B_L ... B_1, coupled layers X <- B X/sqrt(theta1) (counterexample)",
                     "theory section 13.3", STACK_OUTLIERS),
        _stack_model("stack_pure", _sample_stack_pure,
                     "B_L ... B_1, coupled layers X <- LN(A X W_V) (counterexample)",
                     "theory section 13.3", STACK_OUTLIERS),
        _token_model("tokens_rotated", "rotated", False),
        _token_model("tokens_rotated_linear", "rotated", True),
        _token_model("tokens_wishart", "wishart", False),
        _token_model("tokens_wishart_linear", "wishart", True),
        _token_model("tokens_diagonal", "diagonal", False),
        _token_model("tokens_diagonal_linear", "diagonal", True)):
    register_model(_model)

# the multi-head models on the same token factors (theory section 9.12)
register_token_models(DEFAULT_SPREAD, DEFAULT_WISHART_RATIO, token_gram_law, _check_tokens)
