"""The multi-head Monte Carlo models of the registry (theory eqs. (9.1), (9.2), (9.19)).

The models ``multihead``, ``multihead_linear``, ``head_average``,
``head_average_linear`` and the anisotropic-token models
``multihead_tokens_rotated``, ``multihead_tokens_wishart`` (and their
``_linear`` variants, theory section 9.12) of :data:`freeattn.MODELS`, registered when this
module is imported (the package :mod:`freeattn.montecarlo` imports it).  Their
samplers are those of :mod:`freeattn.montecarlo._multihead_sampling`, their
limiting laws those of :mod:`freeattn.attention._multihead`.
"""

import functools

import numpy as np

from ..attention._multihead import (_check_heads, head_average_law, mean_and_rank_matched_mp,
                                    multihead_law)
from ._models import Intermediate, Model, register_intermediate, register_model, same_variance_mp
from ._multihead_sampling import multihead_factor, sample_head_average_map

# ---------------------------------------------------------------------------
# Monte Carlo models (the registry of freeattn.MODELS)
#
# validate(beta, gamma, n, ...) samples a model at n tokens and key width
# d_qk = round(gamma n); for these models gamma is gamma_k = heads d_k / n, so
# each head has d_k = d_qk / heads keys.  The options (Model.options) are the
# number of heads, kv_groups, and for the multi-head output gamma_v (None:
# gamma_v = gamma_k) and gamma_o.  The widths d_k, d_v = gamma_v n / heads and
# d_o = gamma_o n must be integers (Model.check), so that the law is the one at
# the sampled ratios.

#: The registered multi-head models, by name.
MULTIHEAD_MODEL_NAMES = ("multihead", "multihead_linear", "head_average",
                         "head_average_linear", "multihead_tokens_rotated",
                         "multihead_tokens_rotated_linear", "multihead_tokens_wishart",
                         "multihead_tokens_wishart_linear")

#: Relative distance of ``gamma_v n / heads`` (or ``gamma_o n``) to an integer
#: below which it counts as one (a ratio given as a decimal such as 0.1 times
#: n = 1200 is 120 up to rounding).
WIDTH_INTEGER_RTOL = 1e-9

_MULTIHEAD_OPTIONS = {"heads": 4, "kv_groups": None, "gamma_v": None, "gamma_o": 1.0}
_HEAD_AVERAGE_OPTIONS = {"heads": 4, "kv_groups": None}
#: The token models' options: those of the multi-head models with ``gamma_o = 3/4`` (so
#: that the default ``gamma = 1`` has no square factor), and the token spectrum's
#: (:func:`register_token_models` adds ``spread`` and ``wishart_ratio``).
_TOKEN_OPTIONS = dict(_MULTIHEAD_OPTIONS, gamma_o=0.75)


def _width(value, n, name, per):
    """``value * n / per`` as an integer ``>= 1``; ValueError naming ``name`` otherwise."""
    width = value * n / per
    rounded = round(width)
    if rounded < 1 or abs(width - rounded) > WIDTH_INTEGER_RTOL * max(width, 1.0):
        raise ValueError(f"{name} * n / {'heads' if per != 1 else '1'} must be an integer "
                         f">= 1 (the sampled width), got {name}={value!r}, n={n}"
                         + (f", heads={per}" if per != 1 else ""))
    return int(rounded)


def _key_width(n, d_qk, heads, kv_groups):
    h, _ = _check_heads(heads, kv_groups)
    if d_qk % h:
        raise ValueError(f"gamma * n = d_qk = {d_qk} must be divisible by heads={h} "
                         f"(gamma is gamma_k = heads d_k / n; n={n})")
    return d_qk // h


def _multihead_widths(n, d_qk, heads, kv_groups, gamma_v, gamma_o):
    d_k = _key_width(n, d_qk, heads, kv_groups)
    gv = d_qk / n if gamma_v is None else gamma_v
    d_v = _width(gv, n, "gamma_v", heads)
    d_o = _width(gamma_o, n, "gamma_o", 1)
    return d_k, d_v, d_o


def _check_multihead_model(n, d_qk, heads, kv_groups, gamma_v, gamma_o):
    """``Model.check`` of the multi-head models: integer widths."""
    _multihead_widths(n, d_qk, heads, kv_groups, gamma_v, gamma_o)


def _check_head_average_model(n, d_qk, heads, kv_groups):
    """``Model.check`` of the head-average models: ``heads`` divides ``d_qk``."""
    _key_width(n, d_qk, heads, kv_groups)


def _build_multihead_seed(draw, rng):
    """Entropy of the draw's multi-head streams (four 64-bit words of stream ``multihead``).

    Every multi-head model of a draw seeds its sampler with
    ``SeedSequence(entropy)``, so the softmax and linear models of one draw
    share keys, queries, values and ``W_O`` (they differ by the model only).
    """
    return rng.integers(0, 2 ** 63, size=4, dtype=np.int64)


def _draw_seed(draw):
    return np.random.SeedSequence([int(v) for v in draw.get("multihead_seed")])


def _sample_multihead(draw, model, kind=None, defaults=_MULTIHEAD_OPTIONS):
    # draw.options holds the caller's options only: the defaults are the model's
    o = draw.options
    heads = o.get("heads", defaults["heads"])
    kv_groups = o.get("kv_groups")
    d_k, d_v, d_o = _multihead_widths(draw.n, draw.d_qk, heads, kv_groups, o.get("gamma_v"),
                                      o.get("gamma_o", defaults["gamma_o"]))
    factor = None if kind is None else draw.get(f"token_factor_{kind}")
    return multihead_factor(draw.n, heads, d_k, d_v, d_o, draw.beta, kv_groups=kv_groups,
                            model=model, token_factor=factor, rng=_draw_seed(draw))


def _sample_multihead_tokens(kind, model, draw):
    """``MHA_perp`` on tokens of Gram ``F F^T`` (theory section 9.12), as a factor."""
    return _sample_multihead(draw, model, kind, _TOKEN_OPTIONS)


def _sample_multihead_attention(draw):
    """``MHA_perp`` of softmax heads (theory eq. (9.1)) as an ``n x r`` factor of its Gram."""
    return _sample_multihead(draw, "attention")


def _sample_multihead_linear(draw):
    """``MHA_perp`` with Gaussian-equivalent heads (theory eq. (9.2)), as a factor."""
    return _sample_multihead(draw, "linear")


def _sample_head_average(draw, model):
    o = draw.options
    heads = o.get("heads", _HEAD_AVERAGE_OPTIONS["heads"])
    d_k = _key_width(draw.n, draw.d_qk, heads, o.get("kv_groups"))
    return sample_head_average_map(draw.n, heads, d_k, draw.beta, kv_groups=o.get("kv_groups"),
                                   model=model, rng=_draw_seed(draw))


def _sample_head_average_attention(draw):
    """``sqrt(n h)(mean_r A_r - 11^T/n)`` of softmax heads (theory eq. (9.19))."""
    return _sample_head_average(draw, "attention")


def _sample_head_average_linear(draw):
    """The head-averaged map of the Gaussian-equivalent heads (theory eq. (9.19))."""
    return _sample_head_average(draw, "linear")


def multihead_model_law(beta, gamma, heads, kv_groups, gamma_v, gamma_o):
    """:func:`multihead_law` at ``gamma_k = gamma`` (``gamma_v = None``: ``gamma``)."""
    return multihead_law(beta, heads=heads, gamma_k=gamma,
                         gamma_v=gamma if gamma_v is None else gamma_v, gamma_o=gamma_o,
                         kv_groups=kv_groups)


def multihead_model_reference(beta, gamma, heads, kv_groups, gamma_v, gamma_o):
    """Marchenko-Pastur law with the multi-head law's mean and rank (theory eqs. (9.14), (9.16))."""
    return mean_and_rank_matched_mp(beta, gamma if gamma_v is None else gamma_v, gamma_o)


def multihead_tokens_model_law(token_gram_law, kind, beta, gamma, heads, kv_groups, gamma_v,
                               gamma_o, spread, wishart_ratio):
    """:func:`multihead_law` with ``tokens`` the models' Gram law (theory section 9.12)."""
    return multihead_law(beta, heads=heads, gamma_k=gamma,
                         gamma_v=gamma if gamma_v is None else gamma_v, gamma_o=gamma_o,
                         kv_groups=kv_groups,
                         tokens=token_gram_law(kind, spread, wishart_ratio))


def multihead_tokens_model_reference(beta, gamma, heads, kv_groups, gamma_v, gamma_o,
                                     spread, wishart_ratio):
    """The isotropic :func:`multihead_law` at the same widths."""
    return multihead_model_law(beta, gamma, heads, kv_groups, gamma_v, gamma_o)


def _check_multihead_tokens_model(check_tokens, n, d_qk, heads, kv_groups, gamma_v, gamma_o,
                                  spread, wishart_ratio):
    """``Model.check`` of the token models: integer widths and a token spectrum."""
    _multihead_widths(n, d_qk, heads, kv_groups, gamma_v, gamma_o)
    check_tokens(n, d_qk, spread=spread, wishart_ratio=wishart_ratio)


def head_average_model_law(beta, gamma, heads, kv_groups):
    """:func:`head_average_law` at ``gamma_k = gamma``."""
    return head_average_law(beta, heads=heads, gamma_k=gamma, kv_groups=kv_groups)


def head_average_model_reference(beta, gamma, heads, kv_groups):
    """``marchenko_pastur(theta1, 1)``: i.i.d. entries of the map's variance (eq. (5.11))."""
    return same_variance_mp(beta, gamma)


def _register_models():
    register_intermediate(Intermediate("multihead_seed", _build_multihead_seed,
                                       stream="multihead"))
    uses = ("multihead_seed",)
    # Non-bulk parts (theory eq. (7.8)): the softmax heads' conditional column
    # means survive the centring as one rank-one term 1 u^T of MHA_perp (one
    # possible outlier); the head-averaged softmax map has the exact zero of
    # A_perp 1 = 0 and the same rank-one term.  Zeros of MHA_perp by rank are
    # the atom of the law and stay in the spectrum.
    for model in (
            Model("multihead", _sample_multihead_attention, uses=uses, law=multihead_model_law,
                  reference=multihead_model_reference, outliers=1,
                  description="[A_1perp V_1, ..., A_hperp V_h] W_O, softmax heads "
                              "(kv_groups: MHA, GQA, MQA)",
                  equation="theory eq. (9.1)", options=_MULTIHEAD_OPTIONS,
                  check=_check_multihead_model),
            Model("multihead_linear", _sample_multihead_linear, uses=uses,
                  law=multihead_model_law, reference=multihead_model_reference,
                  description="multi-head output with Gaussian-equivalent heads "
                              "(beta S_r + alpha W_r)/n",
                  equation="theory eq. (9.2)", options=_MULTIHEAD_OPTIONS,
                  check=_check_multihead_model),
            Model("head_average", _sample_head_average_attention, uses=uses,
                  law=head_average_model_law, reference=head_average_model_reference, zeros=1, outliers=1,
                  description="sqrt(n h)(mean_r A_r - 11^T/n), softmax heads",
                  equation="theory eq. (9.19)", options=_HEAD_AVERAGE_OPTIONS,
                  check=_check_head_average_model),
            Model("head_average_linear", _sample_head_average_linear, uses=uses,
                  law=head_average_model_law, reference=head_average_model_reference,
                  description="head-averaged map of Gaussian-equivalent heads",
                  equation="theory eq. (9.19)", options=_HEAD_AVERAGE_OPTIONS,
                  check=_check_head_average_model)):
        register_model(model)


_register_models()


def register_token_models(spread, wishart_ratio, token_gram_law, check_tokens):
    """Register ``multihead_tokens_{rotated,wishart}`` and their ``_linear`` variants.

    Called by :mod:`freeattn.montecarlo._stack_sampling`, which owns the token
    factors, their Gram laws (``token_gram_law``) and the check of their options
    (``check_tokens``), after its own registrations (so the registry's streams keep
    their order, and seeded results theirs).
    """
    uses = ("multihead_seed",)
    options = dict(_TOKEN_OPTIONS, spread=spread, wishart_ratio=wishart_ratio)
    what = {"rotated": "Haar-rotated two-point Gram, equal norms",
            "wishart": "Wishart Gram, rows normalized"}
    for kind in ("rotated", "wishart"):
        for model, linear in (("attention", False), ("linear", True)):
            name = f"multihead_tokens_{kind}" + ("_linear" if linear else "")
            heads_of = ("Gaussian-equivalent heads" if linear else "softmax heads")
            register_model(Model(
                name, functools.partial(_sample_multihead_tokens, kind, model),
                uses=uses + (f"token_factor_{kind}",),
                law=functools.partial(multihead_tokens_model_law, token_gram_law, kind),
                reference=multihead_tokens_model_reference, outliers=0 if linear else 1,
                description=f"multi-head output, {heads_of}, tokens of {what[kind]}",
                equation="theory eq. (9.23)", options=dict(options),
                check=functools.partial(_check_multihead_tokens_model, check_tokens)))
