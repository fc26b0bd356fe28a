"""Monte Carlo validation of the limiting law, model by model.

:func:`validate` samples registered models (the proof chain by default, theory
section 7.1) from shared randomness, extracts the bulk of the squared singular
values, and measures its distance to each model's limiting law and to the
Marchenko-Pastur law it is contrasted with; :func:`convergence` repeats this
over sizes and fits the rate.  The draws run in :mod:`freeattn.montecarlo._draws`, the
statistics are in :mod:`freeattn.montecarlo._statistics` (theory/07_validation.md,
eqs. (7.8)-(7.13)), and the reports render through :mod:`freeattn.core._render`.
"""

import dataclasses
import math
import time

import numpy as np

from . import _statistics as stats
from ..core._checks import ATTENTION_BETA, Integer, Real, key_width
from ..attention._coefficients import linear_coefficients
from ._draws import (DrawError, ValidationInterrupted, check_progress, root_seed, run_draws,
                     seed_dict)
from ._models import (CHAIN_MODELS, GAMMA_RANGE, check_options, resolve_models,
                      same_variance_mp, single_head_law)
from ..core._render import Column, Document, Table, jsonable, render, to_json

__all__ = [
    "ConvergenceReport",
    "DrawError",
    "ValidationInterrupted",
    "ModelResult",
    "RateFit",
    "ValidationReport",
    "convergence",
    "validate",
]


@dataclasses.dataclass(frozen=True)
class ModelResult:
    """Distances of one model's pooled bulk spectrum to its law and to MP.

    Attributes
    ----------
    model : str
        Registered model name.
    ks, w1 : float
        Kolmogorov and Wasserstein-1 distances of the pooled bulk squared
        singular values to the model's limiting law (theory eqs. (7.9),
        (7.10)); NaN for a model without a law.  For a model with
        ``floor=True`` (the causal models) the Kolmogorov distances are taken
        above the float64 resolution floor (eq. (7.15)).
    ks_mp, w1_mp : float
        The same distances to the model's reference law
        (``marchenko_pastur(theta1, 1.0)`` for the proof chain).
    ks_noise, w1_noise : float
        Sampling-noise references: 95% bootstrap quantiles over draws of the
        distance of the resampled pooled distribution to the observed one
        (theory eq. (7.11)); NaN with a single draw.
    ks_iid : float
        The 5% critical value ``K^{-1}(0.95)/sqrt(N)`` of the KS test for as
        many i.i.d. points as the pooled bulk (``N``) -- shown for comparison
        only: eigenvalues are not i.i.d. (theory eq. (7.12)).
    ks_per_draw : tuple of float
        The KS distance of each draw's bulk alone.
    moments, moments_se : tuple of float
        Mean over draws of ``mean(lambda**k)``, ``k = 1, 2, 3``, over the bulk,
        and its standard error ``std(ddof=1)/sqrt(draws)`` (NaN with a single
        draw).
    moments_exact, moments_mp : tuple of float
        The moments of the limiting law and of the reference law.
    largest, largest_se : float
        Mean over draws of the largest bulk value and its standard error.
    edge, mp_edge : float
        Upper edges of the model's law and of its reference law
        (``4 theta1`` for MP).
    above_edge : int
        Bulk values above ``edge``, summed over draws (edge fluctuations and
        finite-size heavy-tail eigenvalues; kept in the bulk).
    removed : int
        Values removed as non-bulk, summed over draws (theory eq. (7.8)).
    top_singular_values : tuple of float
        Mean over draws of the largest singular values of the full matrix
        (before any removal), largest first, to compare with ``sqrt(edge)``
        and ``sqrt(n)``.
    sqrt_n : float
        ``sqrt(n)``, the common mode of the uncentred ``sqrt(n) A``.
    compared_with : str
        For a model with ``compare_with`` (``freeattn.Model``; the finite-width
        models of theory note 15, which have no limit law): the model its
        sampled spectrum is compared with, e.g. ``"attention"``; ``""``
        otherwise (and the four fields below are NaN).
    ks_compared : float
        Two-sample Kolmogorov distance between the pooled bulk of this model
        and that of ``compared_with`` over the same draws (each on its own
        random streams).
    ks_compared_floor : float
        Its noise floor: the two-sample distance between the pooled bulk of
        ``compared_with`` and its pooled bulk over ``draws`` independent
        draws (one realisation; the two samples have the sizes of the
        comparison above, so under "same law" the comparison is of this size).
    ks_compared_ratio : float
        ``ks_compared / ks_compared_floor``.
    ks_compared_law : float
        The ``ks`` of ``compared_with`` to its own limiting law (for
        ``"attention"``: the paper's law ``attention_law(beta, gamma).squared()``),
        for comparison with ``ks_compared``.
    """

    model: str
    ks: float
    w1: float
    ks_mp: float
    w1_mp: float
    ks_noise: float
    w1_noise: float
    ks_iid: float
    ks_per_draw: tuple
    moments: tuple
    moments_se: tuple
    moments_exact: tuple
    moments_mp: tuple
    largest: float
    largest_se: float
    edge: float
    mp_edge: float
    above_edge: int
    removed: int
    top_singular_values: tuple
    sqrt_n: float
    compared_with: str = ""
    ks_compared: float = math.nan
    ks_compared_floor: float = math.nan
    ks_compared_ratio: float = math.nan
    ks_compared_law: float = math.nan

    @property
    def beats_mp(self):
        """Whether the limiting law is closer than MP in both KS and W1."""
        return self.ks < self.ks_mp and self.w1 < self.w1_mp


def _moment_cell(k):
    return lambda r: f"{r.moments[k - 1]:.4g} ({r.moments_exact[k - 1]:.4g})"


# (csv/json name, text label, text format of the ModelResult) per column
_REPORT_COLUMNS = (
    ("model", "model", lambda r: r.model),
    ("ks", "KS", lambda r: f"{r.ks:.4f}"),
    ("ks_noise", "KS noise", lambda r: f"{r.ks_noise:.4f}"),
    ("ks_mp", "KS to MP", lambda r: f"{r.ks_mp:.4f}"),
    ("w1", "W1", lambda r: f"{r.w1:.4f}"),
    ("w1_noise", "W1 noise", lambda r: f"{r.w1_noise:.4f}"),
    ("w1_mp", "W1 to MP", lambda r: f"{r.w1_mp:.4f}"),
    ("m2", "m2 (exact)", _moment_cell(2)),
    ("m3", "m3 (exact)", _moment_cell(3)),
    ("largest_over_edge", "largest / edge", lambda r: f"{r.largest / r.edge:.3f}"),
    ("top_over_sqrt_n", "top s / sqrt(n)",
     lambda r: f"{r.top_singular_values[0] / r.sqrt_n:.3f}"),
    ("removed", "removed", lambda r: f"{r.removed}"),
)

# Scalar fields of a ModelResult, one csv column each (tuples get one column per entry).
_CSV_SCALARS = ("ks", "w1", "ks_mp", "w1_mp", "ks_noise", "w1_noise", "ks_iid", "largest",
                "largest_se", "edge", "mp_edge", "above_edge", "removed", "sqrt_n",
                "compared_with", "ks_compared", "ks_compared_floor", "ks_compared_ratio",
                "ks_compared_law")

# The table of sampled comparisons (models with ``compare_with``), text and markdown only;
# the csv and json carry the same fields with every other number of the model.
_COMPARED_COLUMNS = (
    ("model", "model", lambda r: r.model),
    ("compared_with", "compared with", lambda r: r.compared_with),
    ("ks_compared", "KS", lambda r: f"{r.ks_compared:.4f}"),
    ("ks_compared_floor", "KS floor", lambda r: f"{r.ks_compared_floor:.4f}"),
    ("ks_compared_ratio", "KS / floor", lambda r: f"{r.ks_compared_ratio:.2f}"),
    ("ks_compared_law", "its KS to law", lambda r: f"{r.ks_compared_law:.4f}"),
    ("law_over_ks", "law / KS", lambda r: f"{r.ks_compared_law / r.ks_compared:.2f}"
     if r.ks_compared > 0 else "nan"),
)


def _results_table(results):
    """The text/markdown table: one row per model, cells formatted from the result."""
    columns = [Column(name, label, format=fmt, align="left" if name == "model" else "right")
               for name, label, fmt in _REPORT_COLUMNS]
    # every cell is computed from the whole result, so each row holds the result itself
    return Table(columns, [[r] * len(columns) for r in results])


def _compared_table(results):
    """The text/markdown table of the sampled comparisons, one row per model with one."""
    columns = [Column(name, label, format=fmt,
                      align="left" if name in ("model", "compared_with") else "right")
               for name, label, fmt in _COMPARED_COLUMNS]
    return Table(columns, [[r] * len(columns) for r in results if r.compared_with])


def _results_csv(results):
    """The csv table: every number of every ModelResult, full precision."""
    names = ["model", *_CSV_SCALARS]
    rows = []
    for r in results:
        row = [r.model] + [getattr(r, f) for f in _CSV_SCALARS]
        for field, size in (("moments", 3), ("moments_se", 3), ("moments_exact", 3),
                            ("moments_mp", 3), ("top_singular_values", stats.TOP_VALUES)):
            values = tuple(getattr(r, field)) + (None,) * size
            row += list(values[:size])
        rows.append(row)
    for field, size in (("moments", 3), ("moments_se", 3), ("moments_exact", 3),
                        ("moments_mp", 3), ("top_singular_values", stats.TOP_VALUES)):
        names += [f"{field}_{i + 1}" for i in range(size)]
    return Table(names, rows)


@dataclasses.dataclass(frozen=True)
class ValidationReport:
    """Result of :func:`validate`.

    Attributes
    ----------
    beta, gamma : float
        Parameters of the laws (``gamma`` is the sampled ratio ``d_qk/n``).
    n, d_qk, draws : int
        Matrix size, key width ``round(gamma * n)`` and number of draws.
    seed : dict
        ``{"entropy": ..., "spawn_key": ...}`` of the root seed
        ``SeedSequence(entropy, spawn_key=spawn_key)``: draw ``i`` used its
        child ``spawn_key + (i,)``, and the bootstrap of model ``m`` the
        seed sequence with spawn key ``spawn_key + (draws, crc32(m))``
        (``zlib.crc32`` of the name), so a model's result does not depend on
        the other models asked for.  When a requested model is compared with a
        sampled model (``freeattn.Model.compare_with``), the noise floor of that
        comparison samples the compared model on ``draws`` further children
        ``spawn_key + (draws + 1 + i,)``.
    theta1, edge, mp_edge : float
        ``exp(beta**2) - 1``, the squared edge of the single-head law
        ``attention_law(beta, gamma)`` and ``4 theta1`` (each model's own
        edges are in its :class:`ModelResult`).
    results : dict
        Model name -> :class:`ModelResult`, in registry order.
    options : dict
        Model options the run was given (see ``freeattn.Model.options``).
    seconds : float
        Wall time of the run (not part of equality).
    """

    beta: float
    gamma: float
    n: int
    d_qk: int
    draws: int
    seed: dict
    theta1: float
    edge: float
    mp_edge: float
    results: dict
    options: dict = dataclasses.field(default_factory=dict)
    seconds: float = dataclasses.field(default=float("nan"), compare=False)

    def to_dict(self):
        """A JSON-ready dict of everything in the report (NaN and inf -> None)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "results"}
        out["results"] = {name: dataclasses.asdict(r) for name, r in self.results.items()}
        return jsonable(out)

    def _header_line(self):
        line = (f"freeattn validation: beta={self.beta:g}, gamma={self.gamma:g}, "
                f"n={self.n}, d_qk={self.d_qk}, draws={self.draws}; "
                f"predicted squared edge {self.edge:.4f} (MP {self.mp_edge:.4f})")
        own = [f"{r.model} {r.edge:.4f}" for r in self.results.values()
               if not (r.edge == self.edge or math.isnan(r.edge))]
        if own:
            line += "; models with their own law, edge: " + ", ".join(own)
        lawless = [r.model for r in self.results.values()
                   if math.isnan(r.edge) and not r.compared_with]
        if lawless:
            line += "; without a limit law (no distance): " + ", ".join(lawless)
        return line

    def document(self):
        """The report as a :class:`freeattn.core._render.Document` (any format).

        Text and markdown show one table of every model and, when some model
        is compared with a sampled model (``freeattn.Model.compare_with``), a
        second table of those comparisons; csv and json hold every field of
        every :class:`ModelResult` (the comparison fields are NaN/null and
        ``compared_with`` empty for the other models).
        """
        results = list(self.results.values())
        blocks = [self._header_line(), _results_table(results)]
        if any(r.compared_with for r in results):
            blocks += ["", f"Sampled comparisons (models without a limit law): two-sample KS "
                           f"of the pooled bulks over the same {self.draws} draws; floor: the "
                           f"compared model against {self.draws} independent draws of itself; "
                           f"'its KS to law': the compared model's distance to its own law",
                       _compared_table(results)]
        return Document(blocks, data=self.to_dict(), csv=_results_csv(results))

    def to_json(self, indent=2):
        """The report as a JSON string (non-finite numbers as ``null``).

        Parameters
        ----------
        indent : int or None, optional
            Indentation of :func:`json.dumps`; ``None`` writes one line.

        Returns
        -------
        str
        """
        return to_json(self.to_dict(), indent=indent)

    def to_text(self):
        """A plain-text table, one row per model."""
        return render(self.document(), "text")

    def to_markdown(self):
        """A Markdown table, one row per model."""
        return render(self.document(), "markdown")

    def to_csv(self):
        """Every number of every model, one csv row per model, full precision."""
        return render(self.document(), "csv")

    def __str__(self):
        return self.to_text()


def _law_range_error(name, value, lo, hi, extra=""):
    return ValueError(f"{name} must be in [{lo}, {hi}] (the range of the limiting law){extra}, "
                      f"got {value!r}")


#: ``gamma`` before rounding: any positive ratio; the sampled ratio ``d_qk/n``
#: must then lie in the law's range (checked in :func:`_check_validate_args`).
POSITIVE_GAMMA = Real(0.0, math.inf, low_closed=False, high_closed=False)


def _with_compared(models):
    """``models`` and every model they are compared with (``Model.compare_with``),
    in registry order."""
    from ._models import MODELS

    while True:
        names = {m.name for m in models}
        missing = []
        for model in models:
            target = model.compare_with
            if target is None or target in names or target in missing:
                continue
            if target not in MODELS:
                raise ValueError(f"model {model.name!r} is compared with {target!r}, which "
                                 f"is not registered; registered models: "
                                 f"{', '.join(MODELS)}")
            missing.append(target)
        if not missing:
            return models
        models = resolve_models(list(models) + missing)


def _check_validate_args(beta, gamma, n, draws, models, progress, options=None):
    """All checks of :func:`validate`'s arguments; return them normalized."""
    b = ATTENTION_BETA.check(beta, "beta")
    g = POSITIVE_GAMMA.check(gamma, "gamma")
    n = Integer(2).check(n, "n")
    draws = Integer(1).check(draws, "draws")
    models = _with_compared(resolve_models(models))
    options = check_options(options, models)
    check_progress(progress)
    # d_qk/n is within 1/(2n) of gamma, so a gamma beyond the law's range by
    # more than that can never sample an allowed ratio (and gamma * n could
    # overflow a float before rounding).
    if g > GAMMA_RANGE[1] + 0.5 / n:
        raise _law_range_error("gamma", gamma, GAMMA_RANGE[0], GAMMA_RANGE[1])
    d_qk = key_width(g, n)
    # The samples have width ratio d_qk/n; the law they are compared with must
    # be the law at that ratio, which is gamma itself when gamma*n is an integer.
    ratio = d_qk / n
    if not GAMMA_RANGE[0] <= ratio <= GAMMA_RANGE[1]:
        raise _law_range_error("gamma", gamma, GAMMA_RANGE[0], GAMMA_RANGE[1],
                               f": the sampled ratio d_qk/n = {d_qk}/{n} = {ratio:.6g} "
                               f"is outside it")
    for model in models:
        smallest = model.zeros + model.common_mode + model.outliers + 1
        if n < smallest:
            raise ValueError(f"n must be >= {smallest} for model {model.name!r} (it removes "
                             f"up to {smallest - 1} non-bulk values), got {n}")
        model.check_sizes(n, d_qk, options)
    return b, ratio, n, d_qk, draws, models, options


def _ks(law, sorted_x, floor=None):
    """KS distance to ``law`` (theory eq. (7.9)), with the left limit of its CDF at
    its atom at 0 (``law.atom``; the squared values of a tall model are 0 there);
    with a ``floor``, the distance above the resolution floor (eq. (7.15))."""
    cdf = np.asarray(law.cdf(sorted_x), dtype=float)
    if floor is not None:
        return stats.ks_distance_above_floor(sorted_x, cdf, floor, float(law.cdf(floor)))
    atom = float(getattr(law, "atom", 0.0) or 0.0)
    return stats.ks_distance(cdf, cdf - atom * (sorted_x <= 0.0) if atom else None)


def _split(model, spectra, n, edge):
    """Each draw's ``(bulk, removed)`` (theory eq. (7.8)) with outliers judged against ``edge``."""
    return [stats.split_bulk(values, n, edge, zeros=model.zeros,
                             common_mode=model.common_mode, outliers=model.outliers)
            for values in spectra]


def _model_result(model, spectra, n, law, reference, rng, split_edge=math.nan):
    """Statistics of one model from its per-draw ascending spectra.

    Without a law, outliers are judged against ``split_edge`` (the edge of the
    law of the model it is compared with, NaN: none is removed).
    """
    edge = float(law.support()[1]) if law is not None else math.nan
    mp_edge = float(reference.support()[1]) if reference is not None else math.nan
    split = _split(model, spectra, n, edge if law is not None else split_edge)
    bulks = [b for b, _ in split]
    pooled = np.sort(np.concatenate(bulks))

    # a model whose spectrum reaches below the float64 resolution is compared above
    # the floor, with the mass below it counted (theory eq. (7.15))
    floor = (stats.resolution_floor(n, pooled[-1]) if model.floor and pooled.size else None)

    def distances(target):
        if target is None:
            return math.nan, math.nan
        return (_ks(target, pooled, floor),
                stats.w1_distance(pooled, target.cdf, target.support()))

    ks, w1 = distances(law)
    ks_mp, w1_mp = distances(reference)
    ks_per_draw = tuple(_ks(law, b, floor) if law is not None else math.nan for b in bulks)
    ks_noise, w1_noise = stats.bootstrap_noise(bulks, rng)
    moment_stats = [stats.mean_and_se([np.mean(b ** k) for b in bulks])
                    for k in stats.MOMENT_ORDERS]
    largest, largest_se = stats.mean_and_se([b[-1] for b in bulks])

    def moments(target):
        return tuple(float(target.moment(k)) if target is not None else math.nan
                     for k in stats.MOMENT_ORDERS)

    return ModelResult(
        model=model.name,
        ks=ks,
        w1=w1,
        ks_mp=ks_mp,
        w1_mp=w1_mp,
        ks_noise=ks_noise,
        w1_noise=w1_noise,
        ks_iid=stats.ks_iid_critical(len(pooled)),
        ks_per_draw=ks_per_draw,
        moments=tuple(m for m, _ in moment_stats),
        moments_se=tuple(s for _, s in moment_stats),
        moments_exact=moments(law),
        moments_mp=moments(reference),
        largest=largest,
        largest_se=largest_se,
        edge=edge,
        mp_edge=mp_edge,
        above_edge=int(sum(np.count_nonzero(b > edge) for b in bulks)),
        removed=int(sum(r for _, r in split)),
        top_singular_values=stats.top_singular_values(spectra),
        sqrt_n=float(np.sqrt(n)),
    )


def _bootstrap_seed(base, model):
    return np.random.SeedSequence(base.entropy, spawn_key=base.spawn_key + (model.stream_key(),),
                                  pool_size=base.pool_size)


def _compared_fields(model, compared, spectra, floor_spectra, n, split_edge, results):
    """The sampled-comparison fields of ``model``'s :class:`ModelResult` (see its
    ``compared_with``): two-sample KS to ``compared`` over the same draws, the floor
    of ``compared`` against its independent draws, their ratio, ``compared``'s own KS."""

    def pooled(which, per_draw, edge):
        return np.sort(np.concatenate([b for b, _ in _split(which, per_draw, n, edge)]))

    own_edge = results[compared.name].edge
    mine = pooled(model, [s[model.name] for s in spectra],
                  results[model.name].edge if not math.isnan(results[model.name].edge)
                  else split_edge)
    theirs = pooled(compared, [s[compared.name] for s in spectra], own_edge)
    twins = pooled(compared, [s[compared.name] for s in floor_spectra], own_edge)
    ks = stats.ks_two_sample(mine, theirs)
    floor = stats.ks_two_sample(theirs, twins)
    return dict(compared_with=compared.name, ks_compared=ks, ks_compared_floor=floor,
                ks_compared_ratio=ks / floor if floor > 0 else math.inf,
                ks_compared_law=results[compared.name].ks)


def _validate(beta, gamma, n, d_qk, draws, models, options, root, executor, progress):
    start = time.perf_counter()
    seed = seed_dict(root)
    draw_seeds = root.spawn(draws)
    bootstrap_base = root.spawn(1)[0]
    # the noise floor of sampled comparisons: the compared models on independent draws
    floor_seeds = root.spawn(draws)
    # laws before draws: a law that cannot be computed fails before a long run
    laws = {m.name: (m.limit_law(beta, gamma, options), m.reference_law(beta, gamma, options))
            for m in models}
    single = single_head_law(beta, gamma)
    theta1 = float(linear_coefficients(beta).theta1)
    by_name = {m.name: m for m in models}
    compared = tuple(m for m in models if any(x.compare_with == m.name for x in models))
    spectra = run_draws(n, d_qk, beta, models, draw_seeds, executor, progress, options)
    floor_spectra = (run_draws(n, d_qk, beta, compared, floor_seeds, executor, progress,
                               options) if compared else [])

    def split_edge(m):
        law = laws[m.compare_with][0] if m.compare_with else None
        return float(law.support()[1]) if law is not None else math.nan

    results = {m.name: _model_result(m, [s[m.name] for s in spectra], n, *laws[m.name],
                                     np.random.default_rng(_bootstrap_seed(bootstrap_base, m)),
                                     split_edge(m))
               for m in models}
    for m in models:
        if m.compare_with:
            results[m.name] = dataclasses.replace(results[m.name], **_compared_fields(
                m, by_name[m.compare_with], spectra, floor_spectra, n, split_edge(m), results))
    return ValidationReport(beta=beta, gamma=gamma, n=n, d_qk=d_qk, draws=draws,
                            seed=seed, theta1=theta1, edge=float(single.support()[1]),
                            mp_edge=float(same_variance_mp(beta, gamma).support()[1]),
                            results=results, options=dict(options),
                            seconds=time.perf_counter() - start)


def validate(beta, gamma=1.0, n=1000, draws=10, *, models=CHAIN_MODELS, rng=None,
             executor=None, progress=None, options=None):
    """Compare sampled spectra of registered models with their limiting laws.

    Parameters
    ----------
    beta : float
        Inverse temperature, in the range of the limiting law
        (``MIN_LAW_BETA <= beta <= MAX_LAW_BETA``, ``[1e-8, 4]``).
    gamma : float, optional
        Width ratio; ``d_qk = round(gamma * n)``.  The samples are compared with
        the law at the sampled ratio ``d_qk / n`` (equal to ``gamma`` when
        ``gamma * n`` is an integer), which is what the report's ``gamma`` holds;
        it must lie in the law's range ``GAMMA_RANGE``.
    n : int, optional
        Matrix size, ``n >= 2`` (and larger than the non-bulk values a model
        removes).
    draws : int, optional
        Independent draws, ``>= 1``; their bulk values are pooled.
    models : sequence of str, optional
        Names from ``freeattn.MODELS`` (default: the proof chain,
        :data:`freeattn.CHAIN_MODELS`).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Root seed.  Draw ``i`` uses the ``i``-th child of
        ``SeedSequence(rng).spawn(draws)``, so the report is the same whatever
        the executor.
    executor : None, "process", int or concurrent.futures.Executor, optional
        ``None`` runs the draws in this process; ``"process"`` or an int uses a
        local :class:`~concurrent.futures.ProcessPoolExecutor` (with that many
        workers); any object with ``submit`` is used as is, e.g.
        ``dask.distributed.Client(...).get_executor()`` for a cluster (a dask
        ``Client`` itself is accepted and converted with ``get_executor()``).
    progress : None or bool, optional
        Show a tqdm bar; ``None`` shows it only when stderr is a terminal.
    options : mapping, optional
        Model options (``freeattn.Model.options``) of the requested models.

    Returns
    -------
    ValidationReport

    Raises
    ------
    TypeError, ValueError
        On bad arguments (``n < 2``, ``draws < 1``, ``d_qk < 1``, ``beta`` or
        ``gamma`` outside the law's range, non-integer sizes, unknown models,
        a bad ``rng``), naming the argument.
    DrawError
        If a draw fails, or the executor's ``submit()`` raises; it names the
        draw and its seed and carries the finished draws in ``.completed``.
    ValidationInterrupted
        On a ``KeyboardInterrupt`` (Ctrl-C) while the draws run: a
        ``KeyboardInterrupt`` subclass that carries the finished draws in
        ``.completed`` (and the unfinished ones in ``.not_run``), as
        ``DrawError`` does.

    Notes
    -----
    Memory is ``O(n**2)`` per worker (a few ``n x n`` arrays at a time).  See
    theory/07_validation.md for the statistics.  Each draw's linear algebra is
    multithreaded by BLAS; with a process pool of as many workers as cores, set
    ``OPENBLAS_NUM_THREADS=1`` (or ``OMP_NUM_THREADS=1``) before starting Python
    so the workers do not oversubscribe the cores.

    Examples
    --------
    >>> report = validate(1.0, n=40, draws=2, models=("linear",), rng=0, progress=False)
    >>> r = report.results["linear"]
    >>> bool(r.ks < r.ks_mp), report.d_qk
    (True, 40)
    """
    beta, gamma, n, d_qk, draws, models, options = _check_validate_args(
        beta, gamma, n, draws, models, progress, options)
    return _validate(beta, gamma, n, d_qk, draws, models, options, root_seed(rng), executor,
                     progress)


@dataclasses.dataclass(frozen=True)
class RateFit:
    """Least-squares fit ``log(distance) = intercept + slope * log(n)``.

    Attributes
    ----------
    model, metric : str
        Model and distance (``"ks"`` or ``"w1"``).
    ns : tuple of int
    values : tuple of float
        The distances at each ``n``.
    slope, slope_se : float
        Fitted exponent and its standard error (theory eq. (7.13)); the
        standard error is NaN with only two sizes.
    intercept : float
    """

    model: str
    metric: str
    ns: tuple
    values: tuple
    slope: float
    slope_se: float
    intercept: float


def _fit_rate(model, metric, ns, values):
    """:class:`RateFit` of the log-log slope (theory eq. (7.13))."""
    slope, se, intercept = stats.fit_rate(ns, values)
    return RateFit(model, metric, tuple(int(v) for v in ns),
                   tuple(float(v) for v in values), slope, se, intercept)


def _slope_cell(fit):
    return f"{fit.slope:.2f} +/- {fit.slope_se:.2f}"


@dataclasses.dataclass(frozen=True)
class ConvergenceReport:
    """Result of :func:`convergence`.

    Attributes
    ----------
    beta, gamma : float
    ns : tuple of int
    draws : int
    seed : dict
        Root seed; size ``ns[i]`` used its ``i``-th spawned child as the
        root seed of its :class:`ValidationReport`.
    reports : tuple of ValidationReport
        One per size.
    fits : dict
        Model name -> ``{"ks": RateFit, "w1": RateFit}``.
    seconds : float
        Wall time (not part of equality).
    """

    beta: float
    gamma: float
    ns: tuple
    draws: int
    seed: dict
    reports: tuple
    fits: dict
    seconds: float = dataclasses.field(default=float("nan"), compare=False)

    def to_dict(self):
        """A JSON-ready dict (NaN and inf -> None)."""
        return jsonable({
            "beta": self.beta, "gamma": self.gamma, "ns": self.ns, "draws": self.draws,
            "seed": self.seed, "seconds": self.seconds,
            "fits": {m: {k: dataclasses.asdict(f) for k, f in fits.items()}
                     for m, fits in self.fits.items()},
            "reports": [r.to_dict() for r in self.reports],
        })

    def document(self):
        """The report as a :class:`freeattn.core._render.Document` (any format)."""
        columns = [Column("model", align="left")]
        for metric, label in (("ks", "KS"), ("w1", "W1")):
            columns += [Column(f"{metric}_n{n}", f"{label} n={n}", format="{:.4f}")
                        for n in self.ns]
            columns.append(Column(f"{metric}_slope", f"{label} slope", format="{:.2f}"))
            columns.append(Column(f"{metric}_slope_se", "+/-", format="{:.2f}"))
        rows = []
        for model, fits in self.fits.items():
            row = [model]
            for metric in ("ks", "w1"):
                fit = fits[metric]
                row += list(fit.values) + [fit.slope, fit.slope_se]
            rows.append(row)
        header = (f"freeattn convergence: beta={self.beta:g}, gamma={self.gamma:g}, "
                  f"draws={self.draws}; distance ~ n**slope")
        return Document([header, Table(columns, rows)], data=self.to_dict())

    def to_json(self, indent=2):
        """The report as a JSON string (non-finite numbers as ``null``).

        Parameters
        ----------
        indent : int or None, optional
            Indentation of :func:`json.dumps`; ``None`` writes one line.

        Returns
        -------
        str
        """
        return to_json(self.to_dict(), indent=indent)

    def to_text(self):
        """A plain-text table, one row per model."""
        return render(self.document(), "text")

    def to_markdown(self):
        """A Markdown table, one row per model."""
        return render(self.document(), "markdown")

    def to_csv(self):
        """Distances and fitted slopes, one csv row per model."""
        return render(self.document(), "csv")

    def __str__(self):
        return self.to_text()


def convergence(beta, gamma=1.0, ns=(250, 500, 1000, 2000), draws=10, *,
                models=CHAIN_MODELS, rng=None, executor=None, progress=None, options=None):
    """Distances to the limiting law as ``n`` grows, with fitted rates.

    Parameters
    ----------
    beta, gamma : float
        As in :func:`validate`.
    ns : sequence of int, optional
        At least two distinct sizes, each ``>= 2``.
    draws : int, optional
        Draws per size.
    models, rng, executor, progress, options
        As in :func:`validate`; size ``ns[i]`` uses the ``i``-th child of the
        root seed.

    Returns
    -------
    ConvergenceReport
        With a :class:`RateFit` of ``log(distance)`` against ``log(n)`` for the
        KS and W1 distances of every model (theory eq. (7.13)).

    Raises
    ------
    TypeError, ValueError
        On bad arguments; ``DrawError`` if a draw fails, ``ValidationInterrupted``
        (a ``KeyboardInterrupt``, with the finished draws of the size being run) on
        an interrupt.
    """
    if isinstance(ns, (str, bytes)):
        raise TypeError(f"ns must be a sequence of integers, got {ns!r}")
    try:
        ns = tuple(ns)
    except TypeError:
        raise TypeError(f"ns must be a sequence of integers, got {ns!r}") from None
    checked = [_check_validate_args(beta, gamma, n, draws, models, progress, options)
               for n in ns]
    if len(set(ns)) < 2:
        raise ValueError(f"ns must hold at least two distinct sizes, got {ns}")
    start = time.perf_counter()
    root = root_seed(rng)
    seed = seed_dict(root)
    children = root.spawn(len(ns))
    reports = tuple(_validate(*args, child, executor, progress)
                    for args, child in zip(checked, children))
    resolved = checked[0][5]
    fits = {m.name: {metric: _fit_rate(m.name, metric, ns,
                                       [getattr(r.results[m.name], metric) for r in reports])
                     for metric in ("ks", "w1")}
            for m in resolved}
    return ConvergenceReport(beta=checked[0][0], gamma=checked[0][1], ns=ns,
                             draws=checked[0][4], seed=seed, reports=reports, fits=fits,
                             seconds=time.perf_counter() - start)
