"""Monte Carlo validation of the limiting law along the proof chain.

:func:`validate` samples every model of the chain (SPEC section 3) from shared
randomness, extracts the bulk of the squared singular values, and measures its
distance to the limiting law and to the same-variance Marchenko-Pastur law;
:func:`convergence` repeats this over sizes and fits the rate.  The statistics
and the reasons for them are in theory/07_validation.md, eqs. (7.8)-(7.12).
"""

import concurrent.futures
import dataclasses
import json
import math
import sys
import time

import numpy as np
import scipy.stats

from ._checks import check_int, check_positive
from ._coefficients import linear_coefficients
from ._laws import (GAMMA_RANGE, MAX_LAW_BETA, MIN_LAW_BETA, attention_law, marchenko_pastur,
                    operator_norm)
from ._sampling import CHAIN_MODELS, _check_models, _iter_chain, squared_singular_values

__all__ = [
    "ConvergenceReport",
    "DrawError",
    "ModelResult",
    "RateFit",
    "ValidationReport",
    "bulk_values",
    "convergence",
    "run_draw",
    "validate",
]

#: Squared singular values that the theory puts outside the bulk, per model
#: (theory eq. (7.8)): ``(structural zeros, at most this many outliers above
#: the edge)``.  "attention": ``sqrt(n) A_perp = sqrt(n) A (I - 11^T/n)`` has an
#: exact zero, and the conditional column mean survives the projection as a
#: rank-one term; "normalized" carries the conditional mean ``1 m^T/sqrt(n)``
#: and the row factor ``a 1^T/sqrt(n)``, ``a_i = |q_i|^2/d_qk - 1`` (the spike
#: of ``Sigma_f`` along ``1``); "centered" and "sigma_f" keep that spike;
#: "sigma_g" and "linear" have none.
NON_BULK = {
    "attention": (1, 1),
    "normalized": (0, 2),
    "centered": (0, 1),
    "sigma_f": (0, 1),
    "sigma_g": (0, 0),
    "linear": (0, 0),
}

#: An outlier must exceed the predicted edge by this many multiples of
#: ``n**(-2/3)`` (relative; the factor 3 of theory eq. (7.8)): the largest bulk
#: eigenvalue fluctuates on the Tracy-Widom scale ``n**(-2/3)``, so a value
#: within a few such widths of the edge is not evidence of an outlier.
EDGE_MARGIN_WIDTHS = 3.0

#: Number of bootstrap resamples (over draws) of the sampling-noise reference
#: (theory eq. (7.11)); 400 resamples put the Monte Carlo error of a 95%
#: quantile at about 1% of its value.
BOOTSTRAP_RESAMPLES = 400

#: Level of the sampling-noise references (one-sided, upper quantile; theory
#: eqs. (7.11), (7.12)).
NOISE_LEVEL = 0.95

# Bootstrap resamples are processed in chunks of at most this many
# (resample x point) entries, about 32 MB of float64 per temporary array.
_BOOTSTRAP_CHUNK_ENTRIES = 2 ** 22

#: Points of the uniform grid added to the sample points for the W1 integral
#: (theory eq. (7.10)), so the integrand is resolved where samples are sparse.
W1_GRID_POINTS = 2048

#: Largest singular values reported per model (mean over draws).
TOP_VALUES = 3

_MOMENTS = (1, 2, 3)


class DrawError(RuntimeError):
    """A draw of a Monte Carlo validation failed.

    Attributes
    ----------
    index : int
        Index of the (first) failed draw.
    seed : dict
        ``{"entropy": ..., "spawn_key": ...}`` of that draw's
        :class:`numpy.random.SeedSequence`, enough to replay it with
        :func:`run_draw`.
    completed : dict
        Draw index -> spectra (``run_draw`` output) of every draw that finished.
    failures : list of tuple
        ``(index, seed, exception)`` for every failed draw.
    """

    def __init__(self, message, *, index, seed, completed, failures):
        super().__init__(message)
        self.index = index
        self.seed = seed
        self.completed = completed
        self.failures = failures


def _seed_dict(seed_seq):
    return {"entropy": seed_seq.entropy, "spawn_key": list(seed_seq.spawn_key)}


def run_draw(n, d_qk, beta, models, seed):
    """Sample the requested chain models once and return their spectra.

    This is one unit of work of :func:`validate`, run on the executor.

    Parameters
    ----------
    n, d_qk : int
        Sizes.
    beta : float
        Inverse temperature.
    models : tuple of str
        Names from :data:`CHAIN_MODELS`.
    seed : numpy.random.SeedSequence or int
        Seed of this draw.

    Returns
    -------
    dict
        Model name -> ascending squared singular values (length ``n``).

    Examples
    --------
    >>> spectra = run_draw(20, 20, 1.0, ("linear",), 0)
    >>> spectra["linear"].shape
    (20,)
    """
    return {model: squared_singular_values(matrix)
            for model, matrix in _iter_chain(n, d_qk, beta, models, seed, None)}


def bulk_values(values, model, n, squared_edge):
    """Split one draw's spectrum into bulk and the values the theory excludes.

    Parameters
    ----------
    values : ndarray
        Ascending squared singular values of one draw of ``model``.
    model : str
        Name from :data:`CHAIN_MODELS`.
    n : int
        Matrix size.
    squared_edge : float
        Predicted upper edge of the limiting squared law.

    Returns
    -------
    bulk : ndarray
        The retained values, ascending.
    removed : int
        How many values were removed (theory eq. (7.8)): the model's structural
        zeros, and those of its at most ``NON_BULK[model][1]`` largest values
        that exceed ``squared_edge * (1 + EDGE_MARGIN_WIDTHS * n**(-2/3))``.

    Examples
    --------
    >>> bulk, removed = bulk_values(np.array([0.0, 1.0, 2.0, 9.0]), "attention", 4, 4.0)
    >>> bulk, removed
    (array([1., 2.]), 2)
    """
    zeros, max_outliers = NON_BULK[model]
    threshold = squared_edge * (1.0 + EDGE_MARGIN_WIDTHS * n ** (-2.0 / 3.0))
    top = values[len(values) - max_outliers:] if max_outliers else values[:0]
    outliers = int(np.count_nonzero(top > threshold))
    bulk = values[zeros:len(values) - outliers]
    return bulk, zeros + outliers


@dataclasses.dataclass(frozen=True)
class ModelResult:
    """Distances of one model's pooled bulk spectrum to the limit and to MP.

    Attributes
    ----------
    model : str
        Name from :data:`CHAIN_MODELS`.
    ks, w1 : float
        Kolmogorov and Wasserstein-1 distances of the pooled bulk squared
        singular values to the limiting law (theory eqs. (7.9), (7.10)).
    ks_mp, w1_mp : float
        The same distances to ``marchenko_pastur(theta1, 1.0)``.
    ks_noise, w1_noise : float
        Sampling-noise references: 95% bootstrap quantiles over draws of the
        distance of the resampled pooled distribution to the observed one
        (theory eq. (7.11)); NaN with a single draw.
    ks_iid : float
        The 5% critical value of the KS test for as many i.i.d. points -- shown
        for comparison only: eigenvalues are not i.i.d. (theory eq. (7.12)).
    ks_per_draw : tuple of float
        The KS distance of each draw alone.
    moments, moments_se : tuple of float
        Mean over draws of ``mean(lambda**k)``, ``k = 1, 2, 3``, over the bulk,
        and its standard error over draws (NaN with a single draw).
    moments_exact, moments_mp : tuple of float
        The moments of the limiting law and of the MP law.
    largest, largest_se : float
        Mean over draws of the largest bulk value and its standard error.
    edge, mp_edge : float
        Predicted upper edge of the squared law and the MP edge ``4 theta1``.
    above_edge : int
        Bulk values above ``edge``, summed over draws (edge fluctuations and
        finite-size heavy-tail eigenvalues; kept in the bulk).
    removed : int
        Values removed as non-bulk, summed over draws (theory eq. (7.8)).
    top_singular_values : tuple of float
        Mean over draws of the largest singular values of the full matrix
        (before any removal), to compare with ``sqrt(edge)`` and ``sqrt(n)``.
    sqrt_n : float
        ``sqrt(n)``, the common mode of the uncentred ``sqrt(n) A``.
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

    @property
    def beats_mp(self):
        """Whether the limiting law is closer than MP in both KS and W1."""
        return self.ks < self.ks_mp and self.w1 < self.w1_mp


def _json_float(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _json_float(value)
    return value


_TABLE_COLUMNS = (
    ("model", "model", "{}"),
    ("KS", "ks", "{:.4f}"),
    ("KS noise", "ks_noise", "{:.4f}"),
    ("KS to MP", "ks_mp", "{:.4f}"),
    ("W1", "w1", "{:.4f}"),
    ("W1 noise", "w1_noise", "{:.4f}"),
    ("W1 to MP", "w1_mp", "{:.4f}"),
    ("m2 (exact)", "m2", "{}"),
    ("m3 (exact)", "m3", "{}"),
    ("largest / edge", "largest_ratio", "{:.3f}"),
    ("top s / sqrt(n)", "top_ratio", "{:.3f}"),
    ("removed", "removed", "{}"),
)


def _row(result):
    cells = []
    for _, key, fmt in _TABLE_COLUMNS:
        if key in ("m2", "m3"):
            k = int(key[1]) - 1
            cells.append(f"{result.moments[k]:.4g} ({result.moments_exact[k]:.4g})")
        elif key == "largest_ratio":
            cells.append(fmt.format(result.largest / result.edge))
        elif key == "top_ratio":
            cells.append(fmt.format(result.top_singular_values[0] / result.sqrt_n))
        else:
            cells.append(fmt.format(getattr(result, key)))
    return cells


def _text_table(header, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


@dataclasses.dataclass(frozen=True)
class ValidationReport:
    """Result of :func:`validate`.

    Attributes
    ----------
    beta, gamma : float
        Parameters of the law.
    n, d_qk, draws : int
        Matrix size, key width ``round(gamma * n)`` and number of draws.
    seed : dict
        ``{"entropy": ..., "spawn_key": ...}`` of the root seed; draw ``i``
        used its ``i``-th spawned child.
    theta1, edge, mp_edge : float
        ``exp(beta**2) - 1``, the predicted squared edge and ``4 theta1``.
    results : dict
        Model name -> :class:`ModelResult`, in chain order.
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
    seconds: float = dataclasses.field(default=float("nan"), compare=False)

    def to_dict(self):
        """A JSON-ready dict of everything in the report (NaN -> None)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "results"}
        out["results"] = {name: dataclasses.asdict(r) for name, r in self.results.items()}
        return _jsonable(out)

    def to_json(self, indent=2):
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def _header_line(self):
        return (f"freeattn validation: beta={self.beta:g}, gamma={self.gamma:g}, "
                f"n={self.n}, d_qk={self.d_qk}, draws={self.draws}; "
                f"predicted squared edge {self.edge:.4f} (MP {self.mp_edge:.4f})")

    def to_text(self):
        """A plain-text table, one row per model."""
        header = [c[0] for c in _TABLE_COLUMNS]
        rows = [_row(r) for r in self.results.values()]
        return self._header_line() + "\n" + _text_table(header, rows)

    def to_markdown(self):
        """A Markdown table, one row per model."""
        header = [c[0] for c in _TABLE_COLUMNS]
        rows = [_row(r) for r in self.results.values()]
        return self._header_line() + "\n\n" + _markdown_table(header, rows)

    def __str__(self):
        return self.to_text()


def _check_validate_args(beta, gamma, n, draws, models, progress):
    """All checks of :func:`validate`'s arguments; return them normalized."""
    b = check_positive(beta, "beta", upper=MAX_LAW_BETA)
    g = check_positive(gamma, "gamma")
    if b.ndim or g.ndim:
        raise ValueError("beta and gamma must be scalars")
    if float(b) < MIN_LAW_BETA:
        raise ValueError(f"beta must be in [{MIN_LAW_BETA}, {MAX_LAW_BETA}] (the range of the "
                         f"limiting law), got {beta!r}")
    n = check_int(n, "n", minimum=2)
    draws = check_int(draws, "draws", minimum=1)
    d_qk = int(round(float(g) * n))
    if d_qk < 1:
        raise ValueError(f"gamma * n must round to d_qk >= 1, got gamma={float(g)!r}, n={n}")
    # The samples have width ratio d_qk/n; the law they are compared with must
    # be the law at that ratio, which is gamma itself when gamma*n is an integer.
    g = d_qk / n
    if not GAMMA_RANGE[0] <= g <= GAMMA_RANGE[1]:
        raise ValueError(f"gamma: the sampled ratio d_qk/n = {d_qk}/{n} = {g:.6g} must be in "
                         f"[{GAMMA_RANGE[0]}, {GAMMA_RANGE[1]}] (the range of the limiting "
                         f"law); got gamma={gamma!r}")
    models = _check_models(models)
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {progress!r}")
    return float(b), float(g), n, d_qk, draws, models


def _root_seed(rng):
    """A fresh root :class:`numpy.random.SeedSequence` from ``rng``."""
    if isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key,
                                      pool_size=rng.pool_size)
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(int(rng.integers(2 ** 63)))
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        if rng is not None and rng < 0:
            raise ValueError(f"rng must be a non-negative integer seed, got {rng}")
        return np.random.SeedSequence(None if rng is None else int(rng))
    raise TypeError(f"rng must be None, an int, a numpy SeedSequence or Generator, "
                    f"got {type(rng).__name__}")


class _SerialExecutor(concurrent.futures.Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # reported per draw by the caller
            future.set_exception(exc)
        return future


def _resolve_executor(executor):
    """``(executor, owned)``: owned executors are shut down after the run."""
    if executor is None:
        return _SerialExecutor(), True
    if isinstance(executor, str):
        if executor != "process":
            raise ValueError(f"executor must be None, 'process', an int >= 1 or an "
                             f"Executor, got {executor!r}")
        return concurrent.futures.ProcessPoolExecutor(), True
    if isinstance(executor, (int, np.integer)) and not isinstance(executor, bool):
        workers = check_int(int(executor), "executor", minimum=1)
        return concurrent.futures.ProcessPoolExecutor(max_workers=workers), True
    if (not isinstance(executor, concurrent.futures.Executor)
            and callable(getattr(executor, "get_executor", None))):
        # a dask.distributed Client: its submit() returns dask futures, so use the
        # concurrent.futures view of it
        return executor.get_executor(), False
    if callable(getattr(executor, "submit", None)):
        return executor, False
    raise TypeError(f"executor must be None, 'process', an int or an object with a "
                    f"submit() method (a concurrent.futures.Executor, or a dask "
                    f"Client's get_executor()), got {type(executor).__name__}")


def _progress_bar(progress, total, desc):
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="draw", file=sys.stderr, leave=False)


def _run_draws(n, d_qk, beta, models, seeds, executor, progress):
    """Run every draw on the executor; return ``index -> spectra`` in order."""
    pool, owned = _resolve_executor(executor)
    bar = _progress_bar(progress, len(seeds), f"validate n={n}")
    completed, failures = {}, []
    try:
        if isinstance(pool, _SerialExecutor):
            # one at a time, so the progress bar moves while the draws run
            futures = ((pool.submit(run_draw, n, d_qk, beta, models, seed), i)
                       for i, seed in enumerate(seeds))
        else:
            submitted = {pool.submit(run_draw, n, d_qk, beta, models, seed): i
                         for i, seed in enumerate(seeds)}
            futures = ((f, submitted[f])
                       for f in concurrent.futures.as_completed(submitted))
        for future, i in futures:
            try:
                completed[i] = future.result()
            except Exception as exc:  # collected; reported below with its seed
                failures.append((i, _seed_dict(seeds[i]), exc))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if owned:
            pool.shutdown(wait=True)
    if failures:
        failures.sort(key=lambda item: item[0])
        index, seed, exc = failures[0]
        raise DrawError(f"draw {index} of {len(seeds)} failed (seed entropy "
                        f"{seed['entropy']}, spawn_key {tuple(seed['spawn_key'])}): "
                        f"{type(exc).__name__}: {exc}; {len(failures)} draw(s) failed, "
                        f"{len(completed)} finished (see .completed)",
                        index=index, seed=seed, completed=completed,
                        failures=failures) from exc
    return [completed[i] for i in range(len(seeds))]


def _ks_from_cdf(cdf_sorted):
    """KS distance of sorted points with theoretical CDF values (eq. (7.9))."""
    m = len(cdf_sorted)
    upper = np.arange(1, m + 1) / m
    return float(max(np.max(upper - cdf_sorted), np.max(cdf_sorted - (upper - 1.0 / m))))


def _w1_to_cdf(sorted_x, cdf, support):
    """Wasserstein-1 distance ``int |F_N - F| dx`` (theory eq. (7.10)).

    ``F_N`` is constant between consecutive points of a grid made of the
    samples and ``W1_GRID_POINTS`` uniform points over the support; ``F`` is
    taken linear on each cell and ``|F_N - F|`` integrated exactly there.
    """
    lo = min(support[0], sorted_x[0])
    hi = max(support[1], sorted_x[-1])
    grid = np.union1d(sorted_x, np.linspace(lo, hi, W1_GRID_POINTS))
    f = np.asarray(cdf(grid), dtype=float)
    fn = np.searchsorted(sorted_x, grid[:-1], side="right") / len(sorted_x)
    a = fn - f[:-1]
    b = fn - f[1:]
    h = np.diff(grid)
    same = a * b >= 0
    denom = np.where(same, 1.0, np.abs(a) + np.abs(b))
    cell = np.where(same, 0.5 * np.abs(a + b), 0.5 * (a * a + b * b) / denom)
    return float(np.sum(h * cell))


def _bootstrap_noise(bulks, pooled_sorted, rng):
    """95% bootstrap quantiles (over draws) of the KS and W1 distances of the
    resampled pooled distribution to the observed one (theory eq. (7.11))."""
    draws = len(bulks)
    if draws < 2:
        return float("nan"), float("nan")
    counts = np.stack([np.searchsorted(b, pooled_sorted, side="right") for b in bulks])
    sizes = np.array([len(b) for b in bulks], dtype=float)
    observed = counts.sum(axis=0) / sizes.sum()
    widths = np.diff(pooled_sorted)
    weights = rng.multinomial(draws, np.full(draws, 1.0 / draws), size=BOOTSTRAP_RESAMPLES)
    ks, w1 = [], []
    chunk = max(1, _BOOTSTRAP_CHUNK_ENTRIES // max(len(pooled_sorted), 1))
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        w = weights[start:start + chunk].astype(float)
        resampled = (w @ counts) / (w @ sizes)[:, None]
        gap = np.abs(resampled - observed)
        ks.append(gap.max(axis=1))
        w1.append(gap[:, :-1] @ widths)
    return (float(np.quantile(np.concatenate(ks), NOISE_LEVEL)),
            float(np.quantile(np.concatenate(w1), NOISE_LEVEL)))


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float("nan")
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def _model_result(model, spectra, n, law, mp, edge, mp_edge, rng):
    """Statistics of one model from its per-draw ascending spectra."""
    split = [bulk_values(values, model, n, edge) for values in spectra]
    bulks = [b for b, _ in split]
    removed = sum(r for _, r in split)
    pooled = np.concatenate(bulks)
    order = np.argsort(pooled, kind="stable")
    pooled_sorted = pooled[order]
    cdf_sorted = np.asarray(law.cdf(pooled_sorted), dtype=float)
    cdf_pooled = np.empty_like(cdf_sorted)
    cdf_pooled[order] = cdf_sorted
    ks_draws, start = [], 0
    for b in bulks:
        ks_draws.append(_ks_from_cdf(np.sort(cdf_pooled[start:start + len(b)])))
        start += len(b)
    ks_noise, w1_noise = _bootstrap_noise(bulks, pooled_sorted, rng)
    moment_stats = [_mean_se([np.mean(b ** k) for b in bulks]) for k in _MOMENTS]
    largest, largest_se = _mean_se([b[-1] for b in bulks])
    top = np.mean([np.sqrt(values[::-1][:TOP_VALUES]) for values in spectra], axis=0)
    return ModelResult(
        model=model,
        ks=_ks_from_cdf(cdf_sorted),
        w1=_w1_to_cdf(pooled_sorted, law.cdf, law.support()),
        ks_mp=_ks_from_cdf(np.asarray(mp.cdf(pooled_sorted), dtype=float)),
        w1_mp=_w1_to_cdf(pooled_sorted, mp.cdf, mp.support()),
        ks_noise=ks_noise,
        w1_noise=w1_noise,
        ks_iid=float(scipy.stats.kstwobign.ppf(NOISE_LEVEL) / np.sqrt(len(pooled))),
        ks_per_draw=tuple(ks_draws),
        moments=tuple(m for m, _ in moment_stats),
        moments_se=tuple(s for _, s in moment_stats),
        moments_exact=tuple(float(law.moment(k)) for k in _MOMENTS),
        moments_mp=tuple(float(mp.moment(k)) for k in _MOMENTS),
        largest=largest,
        largest_se=largest_se,
        edge=edge,
        mp_edge=mp_edge,
        above_edge=int(sum(np.count_nonzero(b > edge) for b in bulks)),
        removed=int(removed),
        top_singular_values=tuple(float(t) for t in top),
        sqrt_n=float(np.sqrt(n)),
    )


def _laws(beta, gamma):
    """The limiting squared law, the MP comparison law, and their upper edges."""
    theta1 = float(linear_coefficients(beta).theta1)
    norm = operator_norm(beta, gamma)
    return (attention_law(beta, gamma).squared(), marchenko_pastur(theta1, 1.0),
            theta1, float(norm.squared_edge), float(norm.mp_squared_edge))


def _validate(beta, gamma, n, d_qk, draws, models, root, executor, progress):
    start = time.perf_counter()
    seed = _seed_dict(root)
    draw_seeds = root.spawn(draws)
    # one bootstrap stream per chain model, so a model's result does not depend
    # on which other models were asked for
    bootstrap_seeds = dict(zip(CHAIN_MODELS, root.spawn(1)[0].spawn(len(CHAIN_MODELS))))
    law, mp, theta1, edge, mp_edge = _laws(beta, gamma)
    spectra = _run_draws(n, d_qk, beta, models, draw_seeds, executor, progress)
    results = {model: _model_result(model, [s[model] for s in spectra], n, law, mp,
                                    edge, mp_edge,
                                    np.random.default_rng(bootstrap_seeds[model]))
               for model in CHAIN_MODELS if model in models}
    return ValidationReport(beta=beta, gamma=gamma, n=n, d_qk=d_qk, draws=draws,
                            seed=seed, theta1=theta1, edge=edge, mp_edge=mp_edge,
                            results=results, seconds=time.perf_counter() - start)


def validate(beta, gamma=1.0, n=1000, draws=10, *, models=CHAIN_MODELS, rng=None,
             executor=None, progress=None):
    """Compare sampled spectra of the proof chain with the limiting law.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``1e-8 <= beta <= 4`` (the range of the law).
    gamma : float, optional
        Width ratio; ``d_qk = round(gamma * n)``.  The samples are compared with
        the law at the sampled ratio ``d_qk / n`` (equal to ``gamma`` when
        ``gamma * n`` is an integer), which is what the report's ``gamma`` holds;
        it must lie in ``[0.02, 50]``.
    n : int, optional
        Matrix size, ``n >= 2``.
    draws : int, optional
        Independent draws, ``>= 1``; their bulk values are pooled.
    models : sequence of str, optional
        Names from :data:`CHAIN_MODELS`.
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

    Returns
    -------
    ValidationReport

    Raises
    ------
    TypeError, ValueError
        On bad arguments (``n < 2``, ``draws < 1``, ``d_qk < 1``, ``beta <= 0``,
        non-integer sizes, unknown models).
    DrawError
        If a draw fails; it names the draw and its seed and carries the
        finished draws in ``.completed``.

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
    beta, gamma, n, d_qk, draws, models = _check_validate_args(beta, gamma, n, draws,
                                                                models, progress)
    return _validate(beta, gamma, n, d_qk, draws, models, _root_seed(rng), executor,
                     progress)


@dataclasses.dataclass(frozen=True)
class RateFit:
    """Least-squares fit ``log(distance) = intercept + slope * log(n)``.

    Attributes
    ----------
    model, metric : str
        Chain model and distance (``"ks"`` or ``"w1"``).
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
    """OLS fit of the log-log slope with its standard error (theory eq. (7.13))."""
    x = np.log(np.asarray(ns, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean()) / sxx)
    intercept = float(y.mean() - slope * x.mean())
    dof = len(x) - 2
    if dof > 0:
        resid = y - intercept - slope * x
        se = float(np.sqrt(resid @ resid / dof / sxx))
    else:
        se = float("nan")
    return RateFit(model, metric, tuple(int(v) for v in ns),
                   tuple(float(v) for v in values), slope, se, intercept)


@dataclasses.dataclass(frozen=True)
class ConvergenceReport:
    """Result of :func:`convergence`.

    Attributes
    ----------
    beta, gamma : float
    ns : tuple of int
    draws : int
    seed : dict
        Root seed; size ``ns[i]`` used its ``i``-th spawned child.
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
        """A JSON-ready dict (NaN -> None)."""
        return _jsonable({
            "beta": self.beta, "gamma": self.gamma, "ns": self.ns, "draws": self.draws,
            "seed": self.seed, "seconds": self.seconds,
            "fits": {m: {k: dataclasses.asdict(f) for k, f in fits.items()}
                     for m, fits in self.fits.items()},
            "reports": [r.to_dict() for r in self.reports],
        })

    def to_json(self, indent=2):
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def _table(self):
        header = ["model"] + [f"KS n={n}" for n in self.ns] + ["KS slope"] + \
                 [f"W1 n={n}" for n in self.ns] + ["W1 slope"]
        rows = []
        for model, fits in self.fits.items():
            row = [model]
            for metric in ("ks", "w1"):
                fit = fits[metric]
                row += [f"{v:.4f}" for v in fit.values]
                row.append(f"{fit.slope:.2f} +/- {fit.slope_se:.2f}")
            rows.append(row)
        return header, rows

    def _header_line(self):
        return (f"freeattn convergence: beta={self.beta:g}, gamma={self.gamma:g}, "
                f"draws={self.draws}; distance ~ n**slope")

    def to_text(self):
        """A plain-text table, one row per model."""
        return self._header_line() + "\n" + _text_table(*self._table())

    def to_markdown(self):
        """A Markdown table, one row per model."""
        return self._header_line() + "\n\n" + _markdown_table(*self._table())

    def __str__(self):
        return self.to_text()


def convergence(beta, gamma=1.0, ns=(250, 500, 1000, 2000), draws=10, *,
                models=CHAIN_MODELS, rng=None, executor=None, progress=None):
    """Distances to the limiting law as ``n`` grows, with fitted rates.

    Parameters
    ----------
    beta, gamma : float
        As in :func:`validate`.
    ns : sequence of int, optional
        At least two distinct sizes, each ``>= 2``.
    draws : int, optional
        Draws per size.
    models, rng, executor, progress
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
        On bad arguments; ``DrawError`` if a draw fails.
    """
    try:
        ns = tuple(ns)
    except TypeError:
        raise TypeError(f"ns must be a sequence of integers, got {ns!r}") from None
    checked = []
    for n in ns:
        checked.append(_check_validate_args(beta, gamma, n, draws, models, progress))
    if len(set(ns)) < 2:
        raise ValueError(f"ns must hold at least two distinct sizes, got {ns}")
    start = time.perf_counter()
    root = _root_seed(rng)
    seed = _seed_dict(root)
    children = root.spawn(len(ns))
    reports = tuple(_validate(*args, child, executor, progress)
                    for args, child in zip(checked, children))
    models = checked[0][-1]
    fits = {model: {metric: _fit_rate(model, metric, ns,
                                      [getattr(r.results[model], metric) for r in reports])
                    for metric in ("ks", "w1")}
            for model in CHAIN_MODELS if model in models}
    return ConvergenceReport(beta=checked[0][0], gamma=checked[0][1], ns=ns,
                             draws=checked[0][4], seed=seed, reports=reports, fits=fits,
                             seconds=time.perf_counter() - start)
