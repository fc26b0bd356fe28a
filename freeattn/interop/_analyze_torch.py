"""``freeattn.torch.analyze``: every attention head of a model, against the law.

Adapters from a model to the per-layer inputs of :func:`freeattn.interop._analyze.head_rows`
(the tokens entering each attention layer and, per head, the queries and keys
the model computes from them, biases included):

* a BERT-style checkpoint: a ``.safetensors`` file (``config.json`` beside it),
  a :class:`freeattn.interop._checkpoint.Checkpoint`, or a plain mapping of weight
  arrays with Hugging Face ``BertModel`` names; the forward pass runs in numpy
  (:func:`freeattn.interop._analyze.bert_attention_inputs`), PyTorch is not needed;
* a list of layers, each a list of :class:`freeattn.interop._analyze.HeadProjections`
  (tokens given as an array, fed to every layer);
* a :class:`torch.nn.Module` holding :class:`torch.nn.MultiheadAttention` or
  BERT-style self-attention modules (``query``, ``key``, ``value`` linear
  layers and ``num_attention_heads``, as Hugging Face ``BertSelfAttention``);
  the queries and keys come from the module's own projections, and with token
  ids the inputs of every attention module are captured by forward pre-hooks
  during the model's own forward pass.

:func:`bert_module` builds such a module (:class:`BertEncoder`, PyTorch) from a
checkpoint: the second implementation of the forward pass that the numpy one
is checked against.
"""

import copy
import math
import os
from collections.abc import Mapping

import numpy as np

from . import _analyze as core
from . import _checkpoint as ckpt

__all__ = ["analyze", "attention_modules", "bert_module", "module_projections",
           "module_queries_keys", "DEFAULT_N", "DEFAULT_WINDOWS"]

#: Tokens per window of text (BERT's position table allows 512).
DEFAULT_N = 256

#: Windows of text whose spectra are pooled.
DEFAULT_WINDOWS = 1


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("analyzing a torch.nn.Module needs PyTorch: "
                          "pip install 'freeattn[torch]'") from None
    return torch


def _is_module(obj):
    try:
        import torch
    except ImportError:
        return False
    return isinstance(obj, torch.nn.Module)


def _is_bert_attention(module):
    return all(hasattr(module, a) for a in ("query", "key", "value", "num_attention_heads"))


def attention_modules(model):
    """The attention modules of ``model`` in registration order.

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    list of (str, torch.nn.Module)
        ``nn.MultiheadAttention`` and BERT-style self-attention modules with
        their qualified names.
    """
    torch = _torch()
    return [(name, m) for name, m in model.named_modules()
            if isinstance(m, torch.nn.MultiheadAttention) or _is_bert_attention(m)]


def _mha_weights(module):
    e = module.embed_dim
    if not module._qkv_same_embed_dim:
        wq, wk = module.q_proj_weight, module.k_proj_weight
    else:
        wq, wk = module.in_proj_weight[:e], module.in_proj_weight[e:2 * e]
    b = module.in_proj_bias
    bq, bk = (None, None) if b is None else (b[:e], b[e:2 * e])
    return wq, bq, wk, bk, module.num_heads


def _bert_weights(module):
    return (module.query.weight, module.query.bias, module.key.weight, module.key.bias,
            int(module.num_attention_heads))


def module_projections(module):
    """The :class:`HeadProjections` of every head of an attention module (float64).

    Parameters
    ----------
    module : torch.nn.MultiheadAttention or BERT-style self-attention

    Returns
    -------
    list of HeadProjections
    """
    torch = _torch()
    if isinstance(module, torch.nn.MultiheadAttention):
        wq, bq, wk, bk, h = _mha_weights(module)
    elif _is_bert_attention(module):
        wq, bq, wk, bk, h = _bert_weights(module)
    else:
        raise TypeError(f"module must be a torch.nn.MultiheadAttention or a BERT-style "
                        f"self-attention (query/key/value), got {type(module).__name__}")

    def arr(t, size):
        return np.zeros(size) if t is None else t.detach().to(torch.float64).cpu().numpy()

    wq, wk = arr(wq, None), arr(wk, None)
    bq, bk = arr(bq, wq.shape[0]), arr(bk, wk.shape[0])
    d = wq.shape[0] // h
    return [core.HeadProjections(wq[r * d:(r + 1) * d], bq[r * d:(r + 1) * d],
                                 wk[r * d:(r + 1) * d], bk[r * d:(r + 1) * d])
            for r in range(h)]


def module_queries_keys(module, x):
    """Per head ``(Q, K)`` as the module computes them, in float64.

    Parameters
    ----------
    module : torch.nn.MultiheadAttention or BERT-style self-attention
    x : array_like or torch.Tensor, shape (n, E)
        The tokens entering the module.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        ``n x d`` queries and keys of every head, biases included.  A BERT-style
        module runs its own ``query`` and ``key`` layers (on a float64 copy);
        ``nn.MultiheadAttention`` its in-projection (``F.linear`` with
        ``in_proj_weight``, as its forward does).
    """
    torch = _torch()
    x = torch.as_tensor(np.asarray(x, dtype=np.float64)) if not isinstance(x, torch.Tensor) \
        else x.detach().to(torch.float64)
    work = copy.deepcopy(module).to(torch.float64)
    with torch.no_grad():
        if isinstance(work, torch.nn.MultiheadAttention):
            wq, bq, wk, bk, h = _mha_weights(work)
            q, k = torch.nn.functional.linear(x, wq, bq), torch.nn.functional.linear(x, wk, bk)
        elif _is_bert_attention(work):
            h = int(work.num_attention_heads)
            q, k = work.query(x), work.key(x)
        else:
            raise TypeError(f"module must be a torch.nn.MultiheadAttention or a BERT-style "
                            f"self-attention, got {type(module).__name__}")
    q, k = q.numpy(), k.numpy()
    d = q.shape[1] // h
    return [(q[:, r * d:(r + 1) * d], k[:, r * d:(r + 1) * d]) for r in range(h)]


# ---------------------------------------------------------------------------
# a BERT encoder in PyTorch (the second implementation of the forward pass)


def _bert_classes():
    torch = _torch()
    nn = torch.nn

    class BertSelfAttention(nn.Module):
        """``softmax(Q K^T/sqrt(d)) V`` per head, with ``query``/``key``/``value`` layers."""

        def __init__(self, hidden, heads):
            super().__init__()
            self.num_attention_heads = heads
            self.attention_head_size = hidden // heads
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))

        def forward(self, x):
            n, e = x.shape[-2:]
            h, d = self.num_attention_heads, self.attention_head_size

            def split(t):
                return t.reshape(*t.shape[:-1], h, d).transpose(-3, -2)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
            return (probs @ v).transpose(-3, -2).reshape(*x.shape[:-2], n, e)

    class BertLayer(nn.Module):
        def __init__(self, hidden, heads, intermediate, eps):
            super().__init__()
            self.attention = nn.Module()
            self.attention.self = BertSelfAttention(hidden, heads)
            self.attention.output = nn.Module()
            self.attention.output.dense = nn.Linear(hidden, hidden)
            self.attention.output.LayerNorm = nn.LayerNorm(hidden, eps=eps)
            self.intermediate = nn.Module()
            self.intermediate.dense = nn.Linear(hidden, intermediate)
            self.output = nn.Module()
            self.output.dense = nn.Linear(intermediate, hidden)
            self.output.LayerNorm = nn.LayerNorm(hidden, eps=eps)

        def forward(self, x):
            a = self.attention
            h = a.output.LayerNorm(x + a.output.dense(a.self(x)))
            f = self.output.dense(torch.nn.functional.gelu(self.intermediate.dense(h)))
            return self.output.LayerNorm(h + f)

    class BertEncoder(nn.Module):
        """A post-LayerNorm BERT encoder with Hugging Face ``BertModel`` parameter names."""

        def __init__(self, config):
            super().__init__()
            e, eps = int(config["hidden_size"]), float(config.get("layer_norm_eps", 1e-12))
            self.embeddings = nn.Module()
            self.embeddings.word_embeddings = nn.Embedding(int(config["vocab_size"]), e)
            self.embeddings.position_embeddings = nn.Embedding(
                int(config["max_position_embeddings"]), e)
            self.embeddings.token_type_embeddings = nn.Embedding(
                int(config.get("type_vocab_size", 2)), e)
            self.embeddings.LayerNorm = nn.LayerNorm(e, eps=eps)
            self.encoder = nn.Module()
            self.encoder.layer = nn.ModuleList(
                BertLayer(e, int(config["num_attention_heads"]), int(config["intermediate_size"]),
                          eps) for _ in range(int(config["num_hidden_layers"])))
            self.tokenizer_file = None

        def forward(self, ids):
            emb = self.embeddings
            n = ids.shape[-1]
            x = emb.word_embeddings(ids) + emb.position_embeddings.weight[:n] \
                + emb.token_type_embeddings.weight[0]
            x = emb.LayerNorm(x)
            for layer in self.encoder.layer:
                x = layer(x)
            return x

    return BertEncoder


def bert_module(checkpoint, *, dtype="float64"):
    """A PyTorch BERT encoder holding a checkpoint's weights.

    Parameters
    ----------
    checkpoint : str, pathlib.Path or Checkpoint
        As :func:`freeattn.interop._checkpoint.load_checkpoint` reads it (``"minilm"``
        for the installed all-MiniLM-L6-v2).
    dtype : {"float64", "float32"}, optional

    Returns
    -------
    torch.nn.Module
        ``forward(ids)`` gives the last hidden state; ``tokenizer_file`` is the
        checkpoint's ``tokenizer.json`` (used by :func:`analyze` for text).
    """
    torch = _torch()
    if dtype not in ("float64", "float32"):
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    c = checkpoint if isinstance(checkpoint, ckpt.Checkpoint) else ckpt.load_checkpoint(checkpoint)
    model = _bert_classes()(c.config)
    prefix = core._prefix(c.weights)
    state = {name: torch.from_numpy(c.weights[prefix + name]) for name in model.state_dict()}
    model.load_state_dict(state)
    model.to(getattr(torch, dtype)).eval()
    model.tokenizer_file = c.tokenizer_file
    return model


# ---------------------------------------------------------------------------
# the driver


def _float_tokens(tokens):
    a = np.asarray(tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens)
    return a.ndim == 2 and a.dtype.kind == "f"


def _text_windows(tokens, tokenizer_file, n, windows, cls_id, sep_id):
    """Windows of token ids from ``tokens`` (None: the default corpus; str: text; ids)."""
    if tokens is None or isinstance(tokens, str):
        if tokenizer_file is None:
            raise ValueError("tokens must be token ids or an n x E array: the model has no "
                             "tokenizer.json to tokenize text with")
        text = ckpt.default_corpus() if tokens is None else tokens
        ids = ckpt.tokenize(text, tokenizer_file)
    else:
        ids = np.asarray(tokens)
        if ids.dtype.kind not in "iu" or ids.ndim != 1:
            raise TypeError(f"tokens must be None, a str, a 1-d array of token ids or an "
                            f"n x E float array, got dtype {ids.dtype} shape {ids.shape}")
    return ckpt.token_windows(ids, n, windows, cls_id=cls_id, sep_id=sep_id)


def _special_ids(tokenizer_file):
    if tokenizer_file is None:
        return None, None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None, None
    tok = Tokenizer.from_file(str(tokenizer_file))
    return tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")


def _select(index, wanted):
    return wanted is None or index in wanted


def _windows_from_projections(layers, inputs_per_window, layer_filter, head_filter):
    """``{layer: [(x, [(head, q, k, proj), ...]), ...]}`` from weights and layer inputs."""
    out = {}
    for L, heads in enumerate(layers):
        if not _select(L, layer_filter):
            continue
        out[L] = []
        for inputs in inputs_per_window:
            x = inputs[L]
            chosen = [(r, *p.queries_keys(x), p) for r, p in enumerate(heads)
                      if _select(r, head_filter)]
            out[L].append((x, chosen))
    return out


def _single_sequence(t, name):
    """The ``n x E`` tokens of a captured attention input of batch size one."""
    if t.ndim == 3:
        if t.shape[0] == 1:
            t = t[0]
        elif t.shape[1] == 1:                   # nn.MultiheadAttention's (n, batch, E)
            t = t[:, 0]
    if t.ndim != 2:
        raise ValueError(f"attention module {name!r} received input of shape "
                         f"{tuple(t.shape)}; expected one sequence (n x E)")
    return t


def _check_selection(per_layer, layer_filter, head_filter, layer_count):
    if layer_filter is not None and not layer_filter <= set(range(layer_count)):
        raise ValueError(f"layers must be in 0..{layer_count - 1}, got "
                         f"{sorted(layer_filter)}")
    if head_filter is not None:
        for layer, windows in per_layer.items():
            found = {h for h, *_ in windows[0][1]}
            if not head_filter <= found:
                raise ValueError(f"heads must be indices of layer {layer}'s heads "
                                 f"(0..{len(found) + len(head_filter - found) - 1} at most), "
                                 f"got {sorted(head_filter)}")


def _module_windows(model, tokens, n, windows, layer_filter, head_filter):
    torch = _torch()
    mods = attention_modules(model)
    if not mods:
        raise ValueError("model holds no nn.MultiheadAttention or BERT-style self-attention "
                         "module")
    if _float_tokens(tokens):
        x = np.asarray(tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens,
                       dtype=np.float64)
        inputs_per_window = [[x] * len(mods)]
        source = f"tokens {x.shape[0]} x {x.shape[1]} fed to every attention module"
    else:
        tok_file = getattr(model, "tokenizer_file", None)
        cls_id, sep_id = _special_ids(tok_file)
        ids_windows = _text_windows(tokens, tok_file, n, windows, cls_id, sep_id)
        captured = {}

        def hook(name):
            def capture(module, args, kwargs):
                t = args[0] if args else kwargs.get("hidden_states", kwargs.get("query"))
                captured[name] = _single_sequence(t.detach(), name)
            return capture

        handles = [m.register_forward_pre_hook(hook(name), with_kwargs=True) for name, m in mods]
        inputs_per_window = []
        training = model.training
        model.eval()
        try:
            for ids in ids_windows:
                captured.clear()
                with torch.no_grad():
                    model(torch.as_tensor(ids)[None])
                inputs_per_window.append([captured[name].to(torch.float64).cpu().numpy()
                                          for name, _ in mods])
        finally:
            for handle in handles:
                handle.remove()
            model.train(training)
        source = "default corpus (pydoc_data.topics)" if tokens is None else "given text"
    out = {}
    for L, (_, m) in enumerate(mods):
        if not _select(L, layer_filter):
            continue
        proj = module_projections(m)
        out[L] = []
        for inputs in inputs_per_window:
            qk = module_queries_keys(m, inputs[L])
            out[L].append((inputs[L], [(r, q, k, proj[r]) for r, (q, k) in enumerate(qk)
                                       if _select(r, head_filter)]))
    _check_selection(out, layer_filter, head_filter, len(mods))
    return out, f"{type(model).__name__}; {source}"


def _checkpoint_windows(c, tokens, n, windows, layer_filter, head_filter, num_heads):
    heads = num_heads if num_heads is not None else c.config["num_attention_heads"]
    layers = core.bert_layers(c.weights, heads)
    if _float_tokens(tokens):
        x = np.asarray(tokens, dtype=np.float64)
        per_window = [[x] * len(layers)]
        source = f"tokens {x.shape[0]} x {x.shape[1]} fed to every layer"
    else:
        cls_id, sep_id = _special_ids(c.tokenizer_file)
        config = dict(c.config, num_attention_heads=heads)
        per_window = [core.bert_attention_inputs(c.weights, config, ids)[0]
                      for ids in _text_windows(tokens, c.tokenizer_file, n, windows, cls_id,
                                               sep_id)]
        source = ("default corpus (pydoc_data.topics)" if tokens is None else "given text")
    out = _windows_from_projections(layers, per_window, layer_filter, head_filter)
    _check_selection(out, layer_filter, head_filter, len(layers))
    return out, source


def analyze(model, tokens=None, *, n=DEFAULT_N, windows=DEFAULT_WINDOWS, layers=None, heads=None,
            num_heads=None, null_draws=core.NULL_DRAWS, finite_width="column", rng=0):
    """Every attention head of a model on real text, against the law and null models.

    Parameters
    ----------
    model : str, path, Checkpoint, mapping, list of layers or torch.nn.Module
        A BERT-style ``.safetensors`` checkpoint (``config.json`` beside it;
        ``"minilm"`` for the installed all-MiniLM-L6-v2), a mapping of weight
        arrays with Hugging Face ``BertModel`` names (give ``num_heads``), a
        list of layers each a list of ``HeadProjections`` (give ``tokens`` as an
        array), or a PyTorch module holding attention modules.
    tokens : None, str, array of int or array of float, optional
        ``None``: the default corpus (``pydoc_data.topics``) tokenized with the
        model's ``tokenizer.json``; a str: text, tokenized the same way; a 1-d
        integer array: token ids; an ``n x E`` float array: tokens fed directly
        to every attention layer (e.g. LayerNorm'd Gaussian tokens).
    n : int, optional
        Tokens per window of text (``[CLS]`` and ``[SEP]`` included).
    windows : int, optional
        Consecutive windows of text; their spectra are pooled per head.
    layers, heads : iterable of int, optional
        Only these layers / heads (default all).
    num_heads : int, optional
        Heads per layer of a weight mapping (a checkpoint's config gives it).
    null_draws : int, optional
        Draws of the finite-size null model per head.
    finite_width : {"column", "floor", "off"}, optional
        Use of the finite-width prediction (:func:`freeattn.finite_width_law`)
        where it is in regime (theory eqs. (12.11), (12.12)): the head's
        distance to it (``"column"``), that and the finite-size floor
        ``ks_null_law`` computed from it instead of the sampled null model
        (``"floor"``), or neither (``"off"``).
    rng : None, int or numpy.random.Generator, optional
        Seeds the null models, the surrogates and the predictions (default 0:
        reproducible).

    Returns
    -------
    freeattn.interop._analyze.AnalysisReport
        One row per layer and head: ``layer``, ``head``, ``beta_weights``,
        ``beta_scores``, ``gamma``, the token statistics, ``sink``, ``ks_law``,
        ``ks_linear``, ``ks_null``, ``ks_finite``, ``ks_null_law`` (with
        ``null_law_source``), ``ks_mp`` (and W1), ``finite_regime``,
        ``in_regime`` with the reasons in ``regime`` (theory section 12).

    Raises
    ------
    TypeError
        If ``model`` or ``tokens`` is of an unsupported kind.
    ValueError
        If the text is too short for the windows, the model has no attention
        modules, text is given to a model without a tokenizer, or
        ``finite_width`` is not one of ``"column"``, ``"floor"``, ``"off"``.
    ImportError
        Without ``safetensors``/``tokenizers`` (the ``[models]`` extra) when a
        checkpoint or text is read, or without PyTorch for a module.

    Examples
    --------
    >>> import numpy as np
    >>> from freeattn.interop._analyze import HeadProjections
    >>> rng = np.random.default_rng(0)
    >>> wq, wk = rng.standard_normal((2, 256, 128)) / np.sqrt(128)   # d = 256, E = 128
    >>> head = HeadProjections(wq, np.zeros(256), wk, np.zeros(256))
    >>> x = np.sqrt(128) * np.linalg.qr(rng.standard_normal((128, 128)))[0]  # c = E
    >>> row = analyze([[head]], x, rng=1).rows[0]
    >>> round(row.beta_weights, 2), row.isotropic, row.sink, row.ks_law < 0.1
    (1.0, True, False, True)
    """
    from ..core._checks import check_int

    n = check_int(n, "n", minimum=3)
    windows = check_int(windows, "windows", minimum=1)
    core._check_finite_width(finite_width)
    layer_filter = None if layers is None else {int(v) for v in layers}
    head_filter = None if heads is None else {int(v) for v in heads}
    if _is_module(model):
        per_layer, source = _module_windows(model, tokens, n, windows, layer_filter, head_filter)
    elif isinstance(model, (str, os.PathLike, ckpt.Checkpoint)) or isinstance(model, Mapping):
        if isinstance(model, ckpt.Checkpoint):
            c, name = model, str(model.directory)
        elif isinstance(model, Mapping):
            if num_heads is None:
                raise TypeError("a weight mapping needs num_heads (heads per layer)")
            c, name = ckpt.Checkpoint(weights=dict(model), config={
                "num_attention_heads": num_heads}, directory=None), "weight mapping"
        else:
            c, name = ckpt.load_checkpoint(model), str(model)
        per_layer, source = _checkpoint_windows(c, tokens, n, windows, layer_filter,
                                                head_filter, num_heads)
        source = f"{name}; {source}"
    elif isinstance(model, (list, tuple)):
        if not _float_tokens(tokens):
            raise TypeError("a list of layers of HeadProjections needs tokens as an n x E "
                            "float array")
        x = np.asarray(tokens, dtype=np.float64)
        per_layer = _windows_from_projections(model, [[x] * len(model)], layer_filter,
                                              head_filter)
        _check_selection(per_layer, layer_filter, head_filter, len(model))
        source = f"{len(model)} layers of head projections; tokens {x.shape[0]} x {x.shape[1]}"
    else:
        raise TypeError(f"model must be a checkpoint path, a Checkpoint, a weight mapping, a "
                        f"list of layers or a torch.nn.Module, got {type(model).__name__}")
    rng = np.random.default_rng(rng)
    rows = []
    for L in sorted(per_layer):
        rows.extend(core.head_rows(L, per_layer[L], null_draws=null_draws,
                                   finite_width=finite_width, rng=rng))
    count = len(next(iter(per_layer.values()))) if per_layer else 0
    return core.AnalysisReport(rows=tuple(rows), source=source, windows=count)
