"""The Monte Carlo models: one registry of every random matrix freeattn samples.

A *model* (:class:`Model`) is one small object that says

- how to sample its matrix from a :class:`Draw` -- the shared randomness of
  one draw, with a cache of the intermediates that several models use (the
  keys, the scores ``S = Q K^T/sqrt(d_qk)``, the key Gram matrix, the noise
  matrices), so that models sampled from one draw differ by the model and not
  by the randomness (theory/07_validation.md, section 7.1);
- what of its spectrum is not bulk: structural zeros, a common mode, at most
  how many outliers above the edge (theory eq. (7.8));
- which law its squared singular values should follow (or ``None``), and the
  law it is contrasted with (by default Marchenko-Pastur with the same mean).

The six models of the proof chain (theory section 1.3; eqs. (7.1)-(7.6))
are the first entries of the registry (:data:`MODELS`); :func:`register_model`
adds more (causal and multi-head attention are entries of the same kind).
:func:`freeattn.validate`, :func:`freeattn.convergence`, the figures and the
command line take any registered name.
"""

import dataclasses
import types
import zlib
from typing import Callable, Mapping, Optional

import numpy as np

from ..core._checks import MAX_FLOAT_BETA
from ..attention._coefficients import (conditional_covariance, conditional_mean,
                                       gaussian_equivalent_covariance, linear_coefficients)
# The one place where the Monte Carlo layer reads the range of the limiting laws.
from ..attention._laws import (GAMMA_RANGE, MAX_LAW_BETA, MIN_LAW_BETA,  # noqa: F401 (read by _validation)
                               attention_law, marchenko_pastur)
from ._sampling import (_STREAMS, _check_sizes, gaussian_rows, key_gram, row_spectrum,
                        scores_product, softmax_rows, spawn_seeds, streams)  # noqa: F401

__all__ = [
    "CHAIN_MODELS",
    "Draw",
    "Intermediate",
    "MODELS",
    "Model",
    "register_intermediate",
    "register_model",
    "sample_chain",
    "unregister_model",
    "sample_model",
]

#: The models of the proof chain, in the proof's order (theory eqs. (7.1)-(7.6)).
CHAIN_MODELS = ("attention", "normalized", "centered", "sigma_f", "sigma_g", "linear")


# ---------------------------------------------------------------------------
# intermediates and the draw


@dataclasses.dataclass(frozen=True)
class Intermediate:
    """A quantity several models of one draw share, built once per draw.

    Attributes
    ----------
    name : str
        Key under which :meth:`Draw.get` returns it.
    build : callable
        ``build(draw, rng) -> numpy.ndarray``; ``rng`` is a fresh
        :class:`numpy.random.Generator` on the intermediate's own stream (the
        same numbers every call), or ``None`` without a stream.
    requires : tuple of str
        Other intermediates ``build`` reads (so the draw keeps them until
        this one is built).
    stream : str or None
        Name of the random stream it draws from; each stream belongs to one
        intermediate, so rebuilding an intermediate gives the same array.
    """

    name: str
    build: Callable
    requires: tuple = ()
    stream: Optional[str] = None


_INTERMEDIATES = {}


def register_intermediate(intermediate):
    """Add an :class:`Intermediate` (and its stream, if new) to every draw.

    Parameters
    ----------
    intermediate : Intermediate
        A name not yet registered; the intermediates it requires must be.

    Raises
    ------
    TypeError
        If ``intermediate`` is not an :class:`Intermediate`.
    ValueError
        If its name is taken, it requires an unknown intermediate, or its
        stream already belongs to another intermediate.
    """
    if not isinstance(intermediate, Intermediate):
        raise TypeError(f"intermediate must be a freeattn.Intermediate, got "
                        f"{type(intermediate).__name__}")
    if intermediate.name in _INTERMEDIATES:
        raise ValueError(f"intermediate {intermediate.name!r} is already registered")
    unknown = [r for r in intermediate.requires if r not in _INTERMEDIATES]
    if unknown:
        raise ValueError(f"intermediate {intermediate.name!r} requires unknown "
                         f"intermediates {unknown}; registered: {sorted(_INTERMEDIATES)}")
    if intermediate.stream is not None:
        owners = [i.name for i in _INTERMEDIATES.values() if i.stream == intermediate.stream]
        if owners:
            raise ValueError(f"stream {intermediate.stream!r} already belongs to "
                             f"intermediate {owners[0]!r}")
        if intermediate.stream not in _STREAMS:
            _STREAMS.append(intermediate.stream)
    _INTERMEDIATES[intermediate.name] = intermediate
    return intermediate


class Draw:
    """The randomness of one draw and the intermediates built from it.

    Parameters
    ----------
    n, d_qk : int
        Number of tokens and query/key width.
    beta : float
        Inverse temperature.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Seed of the draw; stream ``i`` (:func:`streams`) is its ``i``-th spawned
        child, as in ``numpy.random.default_rng(rng).spawn``.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K`` to use instead of drawing it.
    options : mapping, optional
        Extra model parameters (see :attr:`Model.options`).

    Notes
    -----
    A model's ``sample(draw)`` reads shared intermediates with :meth:`get`
    (do not modify the array) or :meth:`take` (an array the model may
    overwrite: the cached one when no later model of the draw needs it, else
    a copy).  While several models are sampled from one draw
    (:func:`sample_chain`), intermediates that no later model needs are
    dropped after each model, so only a handful of ``n x n`` arrays are alive
    at a time (for the whole chain and its spectra the peak is 8.4 ``n x n``
    float64 arrays, measured with tracemalloc at ``n = d_qk = 2000``: 1.1 GB
    at ``n = 4000``).
    """

    def __init__(self, n, d_qk, beta, *, rng=None, keys=None, options=None):
        self.n = n
        self.d_qk = d_qk
        self.beta = beta
        self.options = types.MappingProxyType(dict(options or {}))
        self._seeds, self._bit_generator = spawn_seeds(rng, len(_STREAMS))
        self._keys = None if keys is None else _checked_keys(keys, n, d_qk)
        self._cache = {}
        self._pending = ()

    @property
    def coefficients(self):
        """``linear_coefficients(beta)``: ``theta1``, ``theta2``, ``alpha``."""
        return linear_coefficients(self.beta)

    def stream(self, name):
        """A fresh generator on stream ``name`` (the same numbers on every call).

        Parameters
        ----------
        name : str
            A random stream of the draw (streams are declared by the registered
            :class:`Intermediate` objects).

        Returns
        -------
        numpy.random.Generator

        Raises
        ------
        ValueError
            If the stream is unknown or was registered after this draw was created.
        """
        try:
            seed = self._seeds[_STREAMS.index(name)]
        except ValueError:
            raise ValueError(f"unknown stream {name!r}; streams: {tuple(_STREAMS)}") from None
        except IndexError:
            raise ValueError(f"stream {name!r} was registered after this draw was "
                             f"created") from None
        return np.random.Generator(self._bit_generator(seed))

    def get(self, name):
        """The shared intermediate ``name`` (built on first use); do not modify it.

        Parameters
        ----------
        name : str
            A registered :class:`Intermediate`.

        Returns
        -------
        object
            What the intermediate's ``build`` returned (cached for this draw).

        Raises
        ------
        ValueError
            If no intermediate of that name is registered.
        """
        if name not in self._cache:
            try:
                intermediate = _INTERMEDIATES[name]
            except KeyError:
                raise ValueError(f"unknown intermediate {name!r}; registered: "
                                 f"{sorted(_INTERMEDIATES)}") from None
            rng = None if intermediate.stream is None else self.stream(intermediate.stream)
            self._cache[name] = intermediate.build(self, rng)
        return self._cache[name]

    def take(self, name):
        """The intermediate ``name`` as an array the caller may overwrite.

        A copy when a later model of the draw still needs the intermediate;
        otherwise the cached array itself, which leaves the cache.

        Parameters
        ----------
        name : str
            A registered :class:`Intermediate`.

        Returns
        -------
        numpy.ndarray
        """
        value = self.get(name)
        if name in self._needed_later():
            return value.copy()
        del self._cache[name]
        return value

    def _closure(self, names, out):
        for name in names:
            if name not in out:
                out.add(name)
                if name not in self._cache:
                    self._closure(_INTERMEDIATES[name].requires, out)
        return out

    def _needed_later(self):
        needed = set()
        for model in self._pending:
            self._closure(model.uses, needed)
        return needed

    def _release(self):
        needed = self._needed_later()
        for name in [k for k in self._cache if k not in needed]:
            del self._cache[name]


def _checked_keys(keys, n, d_qk):
    from ..core._checks import as_real_array

    k = as_real_array(keys, "keys", finite=True)
    if k.shape != (n, d_qk):
        raise ValueError(f"keys must have shape (n, d_qk) = ({n}, {d_qk}), got {k.shape}")
    return k


def _build_keys(draw, rng):
    """Keys ``K``: ``n x d_qk`` i.i.d. N(0, 1) (theory eq. (7.1)), or the given ones."""
    if draw._keys is not None:
        return draw._keys
    return rng.standard_normal((draw.n, draw.d_qk))


def _build_scores(draw, rng):
    """Scores ``S = Q K^T/sqrt(d_qk)``, ``Q`` i.i.d. N(0, 1) (theory eq. (7.1))."""
    q = rng.standard_normal((draw.n, draw.d_qk))
    q *= 1.0 / np.sqrt(draw.d_qk)
    return scores_product(q, draw.get("keys"))


def _build_features(draw, rng):
    """``Y_f = f(S)/sqrt(n)``, ``f(x) = exp(beta x - beta**2/2) - 1`` (theory eq. (7.2))."""
    beta, scores = draw.beta, draw.get("scores")
    try:
        with np.errstate(over="raise"):
            features = np.expm1(beta * scores - 0.5 * beta * beta)
    except FloatingPointError:
        raise FloatingPointError(
            f"f(S) = expm1(beta*S - beta**2/2) overflows float64 at beta={beta} "
            f"(largest score {float(np.max(scores)):.3g}); the feature models "
            f"need a smaller beta, the attention model alone has no limit") from None
    features /= np.sqrt(draw.n)
    return features


def _build_gram(draw, rng):
    """Key Gram matrix ``rho = K K^T/d_qk`` (theory eq. (7.3))."""
    return key_gram(draw.get("keys"))


def _build_row_noise(draw, rng):
    """``Z/sqrt(n)``, ``Z`` ``n x n`` i.i.d. N(0, 1): shared by eqs. (7.4) and (7.5)."""
    noise = rng.standard_normal((draw.n, draw.n))
    noise /= np.sqrt(draw.n)
    return noise


def _build_linear_noise(draw, rng):
    """``W``, ``n x n`` i.i.d. N(0, 1), the noise of the linear model (theory eq. (7.6))."""
    return rng.standard_normal((draw.n, draw.n))


for _intermediate in (
        Intermediate("keys", _build_keys, stream="keys"),
        Intermediate("scores", _build_scores, requires=("keys",), stream="queries"),
        Intermediate("features", _build_features, requires=("scores",)),
        Intermediate("gram", _build_gram, requires=("keys",)),
        Intermediate("row_noise", _build_row_noise, stream="row_noise"),
        Intermediate("linear_noise", _build_linear_noise, stream="linear_noise")):
    register_intermediate(_intermediate)


# ---------------------------------------------------------------------------
# the model object and the registry


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """One Monte Carlo model: how to sample it and what its spectrum should be.

    Attributes
    ----------
    name : str
        Registry key (used by ``validate(models=...)`` and ``--models``).
    sample : callable
        ``sample(draw) -> numpy.ndarray`` of shape ``(n, k)``, an array the
        caller owns, from a :class:`Draw`.
    uses : tuple of str
        The intermediates ``sample`` reads from the draw (those of the
        intermediates it builds are followed automatically).
    law : callable or None
        ``law(beta, gamma, **options)`` -> the limiting law of the squared
        singular values (an object with ``cdf``, ``moment``, ``support``,
        ``ppf`` and ``pdf``, such as ``attention_law(beta, gamma).squared()``);
        ``None`` for a model without a limit law.
    reference : callable or None
        ``reference(beta, gamma, **options)`` -> the law the model is
        contrasted with; ``None`` means Marchenko-Pastur with the mean of
        ``law`` (ratio 1).
    zeros : int
        Structural zeros at the bottom of the spectrum, always removed.
    common_mode : int
        Values at the top that are a deterministic low-rank part (a common
        mode of order ``sqrt(n)``, as the top value of the uncentred
        ``sqrt(n) A``, theory eq. (7.14)), always removed.
    outliers : int
        At most this many further top values are removed, and only those
        beyond the edge margin of theory eq. (7.8).
    description : str
        One line: what the matrix is.
    equation : str
        Where it is defined, e.g. ``"theory eq. (7.1)"``.
    options : mapping
        Extra parameters of the model and their defaults (e.g. a number of
        heads); ``validate(..., options=...)`` sets them, ``sample`` reads
        ``draw.options`` and ``law``/``reference`` receive them as keywords.
    spectrum : callable, optional
        ``spectrum(matrix)`` -> ascending squared singular values; ``None``
        (the default) takes the ``n`` eigenvalues of ``Y Y^T`` (theory
        eq. (7.7)), zeros included for a tall matrix.
    floor : bool
        The spectrum has a fraction of values below the float64 resolution
        (a triangular matrix has exponentially small singular values): the
        Kolmogorov distances of the report are taken above the resolution
        floor, with the mass below it counted (theory eq. (7.15)).
    check : callable, optional
        ``check(n, d_qk, **options)`` raises ``ValueError`` (naming the
        argument) if the model cannot be sampled at these sizes, e.g. a key
        width that the number of heads does not divide; ``validate`` and
        ``convergence`` call it before any draw.  ``None``: every size works.
    compare_with : str or None
        Name of a registered model whose *sampled* spectrum this one is compared
        with, for a model without a limit law (e.g. ``"attention"`` for the
        finite-width models of theory note 15).  :func:`freeattn.validate`
        then samples that model too (on its own streams of the same draws, and
        on as many independent draws for the noise floor) and reports the
        two-sample Kolmogorov distance of the pooled bulks, the floor, their
        ratio and the compared model's own distance to its law
        (:class:`freeattn.montecarlo._validation.ModelResult`).  Without a law
        of its own, the model's outliers are judged against the compared
        model's edge.  ``None``: no sampled comparison.
    """

    name: str
    sample: Callable
    uses: tuple = ()
    law: Optional[Callable] = None
    reference: Optional[Callable] = None
    zeros: int = 0
    common_mode: int = 0
    outliers: int = 0
    description: str = ""
    equation: str = ""
    options: Mapping = dataclasses.field(default_factory=dict)
    spectrum: Optional[Callable] = None
    floor: bool = False
    check: Optional[Callable] = None
    compare_with: Optional[str] = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or "," in self.name:
            raise ValueError(f"model name must be a non-empty string without commas, "
                             f"got {self.name!r}")
        if self.compare_with is not None and (
                not isinstance(self.compare_with, str) or not self.compare_with
                or self.compare_with == self.name):
            raise ValueError(f"model {self.name!r}: compare_with must be None or the name "
                             f"of another model, got {self.compare_with!r}")
        if not callable(self.sample):
            raise TypeError(f"model {self.name!r}: sample must be callable")
        for field in ("law", "reference", "check"):
            value = getattr(self, field)
            if value is not None and not callable(value):
                raise TypeError(f"model {self.name!r}: {field} must be callable or None")
        for field in ("zeros", "common_mode", "outliers"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"model {self.name!r}: {field} must be an integer >= 0, "
                                 f"got {value!r}")
        if self.spectrum is None:
            object.__setattr__(self, "spectrum", row_spectrum)
        elif not callable(self.spectrum):
            raise TypeError(f"model {self.name!r}: spectrum must be callable or None")
        object.__setattr__(self, "uses", tuple(self.uses))
        # a plain dict (not a mapping proxy): models are pickled to worker processes
        object.__setattr__(self, "options", dict(self.options))

    def __repr__(self):
        return f"Model({self.name!r})"

    def model_options(self, options=None):
        """This model's options: its defaults updated with those it declares from ``options``.

        Parameters
        ----------
        options : dict, optional
            Options for any models; keys this model does not declare are ignored.

        Returns
        -------
        dict
        """
        values = dict(self.options)
        values.update({k: v for k, v in (options or {}).items() if k in self.options})
        return values

    def check_sizes(self, n, d_qk, options=None):
        """Raise ``ValueError`` if the model cannot be sampled at ``n``, ``d_qk``.

        Parameters
        ----------
        n, d_qk : int
            Number of tokens and query/key width.
        options : dict, optional
            The model's options (see :meth:`model_options`).

        Raises
        ------
        ValueError
            From the model's ``check`` hook, naming the argument.
        """
        if self.check is not None:
            self.check(n, d_qk, **self.model_options(options))

    def limit_law(self, beta, gamma, options=None):
        """The law the squared singular values should follow, or ``None``.

        Parameters
        ----------
        beta, gamma : float
            Inverse temperature and width ratio ``d_qk / n``.
        options : dict, optional
            Model options (see :meth:`model_options`).

        Returns
        -------
        SpectralLaw or None
            ``None`` for a model without a limit law.
        """
        if self.law is None:
            return None
        return self.law(beta, gamma, **self.model_options(options))

    def reference_law(self, beta, gamma, options=None):
        """The law the model is contrasted with (Marchenko-Pastur by default), or ``None``.

        By default Marchenko-Pastur with ratio 1 and the mean of the limit law
        as its variance.

        Parameters
        ----------
        beta, gamma : float
            Inverse temperature and width ratio ``d_qk / n``.
        options : dict, optional
            Model options (see :meth:`model_options`).

        Returns
        -------
        SpectralLaw or None
            ``None`` for a model without a limit law or reference.
        """
        if self.reference is not None:
            return self.reference(beta, gamma, **self.model_options(options))
        law = self.limit_law(beta, gamma, options)
        return None if law is None else marchenko_pastur(float(law.mean()), 1.0)

    def stream_key(self):
        """A stable integer derived from the name (the model's bootstrap stream)."""
        return zlib.crc32(self.name.encode("utf-8"))


_REGISTRY = {}

#: Read-only view of the registry: model name -> :class:`Model`, in
#: registration order (the order of reports and figures).
MODELS = types.MappingProxyType(_REGISTRY)


def register_model(model, *, replace=False):
    """Add a :class:`Model` to the registry (:data:`MODELS`).

    Parameters
    ----------
    model : Model
    replace : bool, optional
        Allow replacing a registered model of the same name.

    Returns
    -------
    Model
        ``model`` (so the function can decorate a definition).

    Raises
    ------
    TypeError
        If ``model`` is not a :class:`Model`.
    ValueError
        If the name is taken (and ``replace`` is false) or the model uses an
        unknown intermediate.

    Examples
    --------
    >>> import numpy as np, freeattn
    >>> def iid(draw):                     # an i.i.d. Gaussian matrix / sqrt(n)
    ...     return draw.take("linear_noise") / np.sqrt(draw.n)
    >>> model = freeattn.Model("iid_example", iid, uses=("linear_noise",),
    ...                        law=lambda beta, gamma: freeattn.marchenko_pastur(1.0, 1.0))
    >>> freeattn.register_model(model) is model, "iid_example" in freeattn.MODELS
    (True, True)
    >>> freeattn.sample_model("iid_example", 3, 3, 1.0, rng=0).shape
    (3, 3)
    >>> freeattn.unregister_model("iid_example") is model
    True
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a freeattn.Model, got {type(model).__name__}")
    if model.name in _REGISTRY and not replace:
        raise ValueError(f"model {model.name!r} is already registered (pass replace=True)")
    unknown = [u for u in model.uses if u not in _INTERMEDIATES]
    if unknown:
        raise ValueError(f"model {model.name!r} uses unknown intermediates {unknown}; "
                         f"registered: {sorted(_INTERMEDIATES)}")
    _REGISTRY[model.name] = model
    return model


def unregister_model(name):
    """Remove the model ``name`` from the registry and return it.

    Parameters
    ----------
    name : str
        A registered model (a key of :data:`freeattn.MODELS`).

    Returns
    -------
    Model
        The model removed.

    Raises
    ------
    ValueError
        If no model of that name is registered.
    """
    try:
        return _REGISTRY.pop(name)
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {name!r}; registered models: {_known()}") from None


def _known():
    return ", ".join(_REGISTRY)


def resolve_models(models):
    """Names or :class:`Model` objects -> a tuple of models, in registry order.

    Raises
    ------
    TypeError, ValueError
        On a non-string name, an unknown name, an empty selection or a repeat.
    """
    if isinstance(models, (str, Model)):
        models = (models,)
    try:
        models = tuple(models)
    except TypeError:
        raise TypeError(f"models must be a model name or a sequence of names from "
                        f"freeattn.MODELS ({_known()}), got {models!r}") from None
    resolved = []
    for model in models:
        if isinstance(model, Model):
            unknown = [u for u in model.uses if u not in _INTERMEDIATES]
            if unknown:
                raise ValueError(f"model {model.name!r} uses unknown intermediates {unknown}; "
                                 f"registered: {sorted(_INTERMEDIATES)}")
            resolved.append(model)
        elif not isinstance(model, str):
            raise TypeError(f"model names must be strings from freeattn.MODELS ({_known()}), "
                            f"got {model!r}")
        elif model not in _REGISTRY:
            raise ValueError(f"unknown model {model!r}; registered models: {_known()}")
        else:
            resolved.append(_REGISTRY[model])
    if not resolved:
        raise ValueError(f"models must name at least one of the registered models ({_known()})")
    names = [m.name for m in resolved]
    if len(set(names)) != len(names):
        raise ValueError(f"models must not repeat a name, got {tuple(names)}")
    order = {name: i for i, name in enumerate(_REGISTRY)}
    position = {m.name: i for i, m in enumerate(resolved)}

    def key(model):
        registered = _REGISTRY.get(model.name) is model
        return (0, order[model.name]) if registered else (1, position[model.name])

    return tuple(sorted(resolved, key=key))


def check_options(options, models):
    """Check ``validate``'s ``options`` against the models; return a plain dict."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping of model option names to values, "
                        f"got {type(options).__name__}")
    declared = {k for m in models for k in m.options}
    unknown = sorted(k for k in options if k not in declared)
    if unknown:
        raise ValueError(f"options {unknown} are not options of the models "
                         f"{[m.name for m in models]} (their options: {sorted(declared)})")
    return dict(options)


def iter_models(n, d_qk, beta, models, rng, *, keys=None, options=None):
    """Yield ``(model, matrix)`` for resolved ``models`` sampled from one draw.

    The consumer should drop each matrix before asking for the next one: the
    draw then holds only the intermediates later models still need.
    """
    draw = Draw(n, d_qk, beta, rng=rng, keys=keys, options=options)
    for i, model in enumerate(models):
        draw._pending = models[i + 1:]
        matrix = model.sample(draw)
        draw._release()
        yield model, matrix


# ---------------------------------------------------------------------------
# the proof chain (theory section 1.3; eqs. (7.1)-(7.6))


def _sample_attention(draw):
    """``sqrt(n) (A - 11^T/n)``, ``A = softmax_rows(beta S)`` (theory eq. (7.1))."""
    a = softmax_rows(draw.take("scores"), draw.beta)
    a -= 1.0 / draw.n
    a *= np.sqrt(draw.n)
    return a


def _sample_normalized(draw):
    """``Y_f = f(S)/sqrt(n)`` (theory eq. (7.2))."""
    return draw.take("features")


def _sample_centered(draw):
    """``Y_f`` minus its conditional mean ``1 m^T/sqrt(n)`` given ``K`` (theory eq. (7.3))."""
    features = draw.take("features")
    keys = draw.get("keys")
    # conditional_mean reads only the diagonal |k_j|^2/d_qk of the Gram
    # matrix, so a diagonal matrix saves the n^2 d_qk product
    rho = np.diag(np.einsum("ij,ij->i", keys, keys) / draw.d_qk)
    features -= conditional_mean(rho, draw.beta)[None, :] / np.sqrt(draw.n)
    return features


def _sample_sigma_f(draw):
    """Gaussian rows ``Z L_f^T/sqrt(n)``, ``L_f L_f^T = Sigma_f`` (theory eq. (7.4))."""
    return gaussian_rows(draw.get("row_noise"), conditional_covariance(draw.get("gram"),
                                                                        draw.beta))


def _sample_sigma_g(draw):
    """Gaussian rows ``Z L_G^T/sqrt(n)``, ``L_G L_G^T = Sigma_G`` (theory eq. (7.5))."""
    return gaussian_rows(draw.get("row_noise"),
                         gaussian_equivalent_covariance(draw.get("gram"), draw.beta))


def _sample_linear(draw):
    """``(beta S + alpha W)/sqrt(n)`` (theory eq. (7.6))."""
    noise = draw.take("linear_noise")
    noise *= draw.coefficients.alpha
    scores = draw.take("scores")
    scores *= draw.beta
    noise += scores
    del scores
    noise /= np.sqrt(draw.n)
    return noise


def single_head_law(beta, gamma):
    """``attention_law(beta, gamma).squared()``: the law of the whole chain."""
    return attention_law(beta, gamma).squared()


def same_variance_mp(beta, gamma):
    """``marchenko_pastur(theta1, 1)``: i.i.d. entries of the chain's variance
    ``theta1 = exp(beta**2) - 1`` (theory eq. (2.4))."""
    return marchenko_pastur(float(linear_coefficients(beta).theta1), 1.0)


def _chain_model(name, sample, uses, description, equation, *, zeros=0, outliers=0):
    return Model(name, sample, uses=uses, law=single_head_law, reference=same_variance_mp,
                 zeros=zeros, outliers=outliers, description=description, equation=equation)


# Non-bulk parts (theory eq. (7.8)): "attention": sqrt(n) A_perp = sqrt(n) A (I - P)
# has an exact zero, and the conditional column mean survives the projection as a
# rank-one term; "normalized" carries the conditional mean 1 m^T/sqrt(n) and the
# row factor a 1^T/sqrt(n), a_i = |q_i|^2/d_qk - 1 (the spike of Sigma_f along 1);
# "centered" and "sigma_f" keep that spike; "sigma_g" and "linear" have none.
for _model in (
        _chain_model("attention", _sample_attention, ("scores",),
                     "sqrt(n) (A - 11^T/n), A = softmax_rows(beta S)", "theory eq. (7.1)",
                     zeros=1, outliers=1),
        _chain_model("normalized", _sample_normalized, ("features",),
                     "f(S)/sqrt(n), f(x) = exp(beta x - beta^2/2) - 1", "theory eq. (7.2)",
                     outliers=2),
        _chain_model("centered", _sample_centered, ("features", "keys"),
                     "f(S)/sqrt(n) minus its conditional mean given K", "theory eq. (7.3)",
                     outliers=1),
        _chain_model("sigma_f", _sample_sigma_f, ("row_noise", "gram"),
                     "Gaussian rows with the exact conditional covariance Sigma_f",
                     "theory eq. (7.4)", outliers=1),
        _chain_model("sigma_g", _sample_sigma_g, ("row_noise", "gram"),
                     "Gaussian rows with covariance Sigma_G = beta^2 rho + alpha^2 I",
                     "theory eq. (7.5)"),
        _chain_model("linear", _sample_linear, ("linear_noise", "scores"),
                     "(beta S + alpha W)/sqrt(n), the linear model", "theory eq. (7.6)")):
    register_model(_model)


# ---------------------------------------------------------------------------
# public samplers


def sample_chain(n, d_qk, beta, *, models=CHAIN_MODELS, rng=None, keys=None):
    """Sample several registered models from one shared draw of the randomness.

    Parameters
    ----------
    n, d_qk : int
        Number of tokens ``n >= 2`` and query/key width ``d_qk >= 1``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64`` (``exp(beta**2)`` must be a
        finite float64).
    models : sequence of str, optional
        Names from :data:`MODELS` (default: the proof chain,
        :data:`CHAIN_MODELS`).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.
    keys : array_like, shape (n, d_qk), optional
        Key matrix ``K``; drawn with i.i.d. N(0, 1) entries if omitted.

    Returns
    -------
    dict
        Model name -> matrix (``n x n`` for the chain models), in registry
        order; for the chain, matrices whose squared singular values
        approximate the limiting law (theory eqs. (7.1)-(7.6)).

    Raises
    ------
    TypeError, ValueError
        On bad sizes, ``beta``, model names, ``rng`` or ``keys``;
        ``FloatingPointError`` if ``f(S)`` overflows float64.

    Notes
    -----
    The draw is split into independent streams spawned from ``rng``: the
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
    resolved = resolve_models(models)
    return {model.name: matrix
            for model, matrix in iter_models(n, d_qk, b, resolved, rng, keys=keys)}


def sample_model(model, n, d_qk, beta, *, rng=None, keys=None):
    """Sample one registered model, e.g. one model of the proof chain (theory section 7.1).

    Parameters
    ----------
    model : str or Model
        A name from :data:`MODELS`; the proof chain's are

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
        On a bad model name, size, ``beta``, ``rng`` or ``keys``.

    Notes
    -----
    The same ``rng`` gives the same matrix as ``sample_chain(..., rng=rng)[model]``.

    Examples
    --------
    >>> Y = sample_model("attention", 6, 6, 1.0, rng=0)
    >>> bool(np.allclose(Y.sum(axis=1), 0.0))
    True
    """
    if not isinstance(model, (str, Model)):
        raise TypeError(f"model must be a single name from freeattn.MODELS ({_known()}), "
                        f"got {model!r}")
    (resolved,) = resolve_models(model)
    n, d_qk, b = _check_sizes(n, d_qk, beta, beta_upper=MAX_FLOAT_BETA)
    return next(iter_models(n, d_qk, b, (resolved,), rng, keys=keys))[1]
