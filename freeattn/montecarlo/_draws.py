"""Running Monte Carlo draws: seeds, executors, progress and failures.

One *draw* samples the requested models once from a shared draw of the
randomness (:func:`run_draw`) and returns their spectra.  :func:`run_draws`
runs many on any ``concurrent.futures``-style executor (a local process pool,
a thread pool, a Dask cluster's executor), shows a tqdm progress bar, and
turns failures -- of a draw, or of the executor's ``submit()`` -- into one
:class:`DrawError` that names the first failed draw and its seed and keeps
every finished draw; an interrupt (Ctrl-C) becomes a
:class:`ValidationInterrupted`, still a ``KeyboardInterrupt``, that keeps them
the same way.  Draw ``i`` always uses the ``i``-th child of the root
seed, so results do not depend on the executor.
"""

import concurrent.futures
import sys

import numpy as np

from ..core._checks import check_int
from ._models import iter_models, resolve_models
from ._sampling import check_rng

__all__ = ["DrawError", "ValidationInterrupted", "root_seed", "run_draw", "run_draws",
           "seed_dict"]


class DrawError(RuntimeError):
    """A draw of a Monte Carlo validation failed.

    Attributes
    ----------
    index : int
        Index of the (first) failed draw.
    seed : dict
        ``{"entropy": ..., "spawn_key": ...}`` of that draw's
        :class:`numpy.random.SeedSequence`, enough to replay it with
        ``freeattn.montecarlo._draws.run_draw``.
    completed : dict
        Draw index -> spectra (``run_draw`` output) of every draw that finished.
    failures : list of tuple
        ``(index, seed, exception)`` for every failed draw (a draw whose
        submission to the executor raised counts as failed).
    not_run : tuple of int
        Draws never submitted because the executor's ``submit()`` raised
        before them.
    """

    def __init__(self, message, *, index, seed, completed, failures, not_run=()):
        super().__init__(message)
        self.index = index
        self.seed = seed
        self.completed = completed
        self.failures = failures
        self.not_run = tuple(not_run)


class ValidationInterrupted(KeyboardInterrupt):
    """A Monte Carlo validation was interrupted (Ctrl-C, SIGINT) between or during draws.

    A subclass of ``KeyboardInterrupt``, so an interrupt still stops the program
    (``except Exception`` does not catch it); catch it to keep the draws that
    finished, which it carries the way :class:`DrawError` does.

    Attributes
    ----------
    index : int or None
        Index of the draw that was running when the interrupt came (serial
        runs), or ``None`` (an executor: several may have been running).
    seed : dict or None
        That draw's seed (``{"entropy": ..., "spawn_key": ...}``), or ``None``.
    completed : dict
        Draw index -> spectra (``run_draw`` output) of every draw that finished
        before the interrupt.
    failures : list of tuple
        ``(index, seed, exception)`` of draws that had failed before it.
    not_run : tuple of int
        Draws that did not finish (cancelled, or never started).
    """

    def __init__(self, message, *, index, seed, completed, failures, not_run=()):
        super().__init__(message)
        self.index = index
        self.seed = seed
        self.completed = completed
        self.failures = failures
        self.not_run = tuple(not_run)


def seed_dict(seed_seq):
    """``{"entropy": ..., "spawn_key": [...]}`` of a seed sequence (JSON-ready)."""
    return {"entropy": seed_seq.entropy, "spawn_key": list(seed_seq.spawn_key)}


def root_seed(rng):
    """A fresh root :class:`numpy.random.SeedSequence` from ``rng``.

    An int (or sequence of ints) or ``None`` is the entropy; a seed sequence
    is copied; a Generator or BitGenerator is asked for one 63-bit integer
    (so it advances).

    Raises
    ------
    TypeError, ValueError
        If ``rng`` is not a seed or generator (naming ``rng``).
    """
    rng = check_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, (np.random.Generator, np.random.BitGenerator)):
        return np.random.SeedSequence(int(np.random.default_rng(rng).integers(2 ** 63)))
    if isinstance(rng, (int, np.integer)):
        return np.random.SeedSequence(int(rng))
    return np.random.SeedSequence(rng)


def run_draw(n, d_qk, beta, models, seed, options=None):
    """Sample the requested models once and return their spectra.

    This is one unit of work of :func:`freeattn.validate`, run on the executor.

    Parameters
    ----------
    n, d_qk : int
        Sizes.
    beta : float
        Inverse temperature.
    models : sequence of str or freeattn.Model
        Registered names or model objects.
    seed : numpy.random.SeedSequence or int
        Seed of this draw.
    options : mapping, optional
        Model options (see ``freeattn.Model.options``).

    Returns
    -------
    dict
        Model name -> ascending squared singular values (the model's
        ``spectrum``, ``n`` values for the chain).

    Examples
    --------
    >>> spectra = run_draw(20, 20, 1.0, ("linear",), 0)
    >>> spectra["linear"].shape
    (20,)
    """
    return {model.name: model.spectrum(matrix)
            for model, matrix in iter_models(n, d_qk, beta, resolve_models(models), seed,
                                             options=options)}


class _SerialExecutor(concurrent.futures.Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # reported per draw by the caller
            future.set_exception(exc)
        return future


def resolve_executor(executor):
    """``(executor, owned)``: owned executors are shut down after the run.

    Raises
    ------
    TypeError, ValueError
        On an executor that is none of ``None``, ``"process"``, an int
        ``>= 1`` or an object with ``submit``.
    """
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


def check_progress(progress):
    """``progress`` must be None, True or False."""
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {progress!r}")
    return progress


def _progress_bar(progress, total, desc):
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="draw", file=sys.stderr, leave=False)


def _submit_all(pool, task, seeds, failures):
    """Submit every draw; stop at the first ``submit()`` that raises.

    Returns ``(futures, not_run)``: ``{future: index}`` of the submitted draws
    and the indices never submitted.  The draw whose submission raised is
    recorded in ``failures``.
    """
    submitted = {}
    for i, seed in enumerate(seeds):
        try:
            submitted[pool.submit(*task(seed))] = i
        except Exception as exc:  # a broken pool or a lost cluster: keep what runs
            failures.append((i, seed_dict(seed), exc))
            return submitted, tuple(range(i + 1, len(seeds)))
    return submitted, ()


def run_draws(n, d_qk, beta, models, seeds, executor, progress, options=None):
    """Run every draw on the executor; return the list of spectra in draw order.

    Raises
    ------
    DrawError
        If a draw failed or could not be submitted; it carries the finished
        draws in ``.completed``.
    ValidationInterrupted
        On a ``KeyboardInterrupt`` (Ctrl-C) while the draws run; it carries the
        finished draws in ``.completed`` and the unfinished ones in ``.not_run``.
    """
    models = resolve_models(models)
    pool, owned = resolve_executor(executor)
    bar = _progress_bar(progress, len(seeds), f"validate n={n}")
    completed, failures, not_run = {}, [], ()
    running = [None]                     # the draw a serial run is in

    def collect(future, i):
        try:
            completed[i] = future.result()
        except Exception as exc:  # collected; reported below with its seed
            failures.append((i, seed_dict(seeds[i]), exc))
        if bar is not None:
            bar.update(1)

    def task(seed):
        return (run_draw, n, d_qk, beta, models, seed, dict(options) if options else None)

    interrupted = False
    try:
        if isinstance(pool, _SerialExecutor):
            # one at a time, so the progress bar moves while the draws run
            for i, seed in enumerate(seeds):
                running[0] = i
                collect(pool.submit(*task(seed)), i)
            running[0] = None
        else:
            submitted, not_run = _submit_all(pool, task, seeds, failures)
            for future in concurrent.futures.as_completed(submitted):
                collect(future, submitted[future])
    except KeyboardInterrupt as exc:
        interrupted = True
        interrupt = exc
    finally:
        if bar is not None:
            bar.close()
        if owned:
            pool.shutdown(wait=True, cancel_futures=interrupted)
    if interrupted:
        raise _interrupted(running[0], seeds, completed, failures) from interrupt
    if failures:
        failures.sort(key=lambda item: item[0])
        index, seed, exc = failures[0]
        skipped = f", {len(not_run)} not submitted" if not_run else ""
        raise DrawError(f"draw {index} of {len(seeds)} failed (seed entropy "
                        f"{seed['entropy']}, spawn_key {tuple(seed['spawn_key'])}): "
                        f"{type(exc).__name__}: {exc}; {len(failures)} draw(s) failed, "
                        f"{len(completed)} finished{skipped} (see .completed)",
                        index=index, seed=seed, completed=completed,
                        failures=failures, not_run=not_run) from exc
    return [completed[i] for i in range(len(seeds))]


def _interrupted(index, seeds, completed, failures):
    """The :class:`ValidationInterrupted` of a run stopped at draw ``index`` (or None)."""
    failed = {i for i, _, _ in failures}
    not_run = tuple(i for i in range(len(seeds)) if i not in completed and i not in failed)
    at = "" if index is None else f" during draw {index}"
    return ValidationInterrupted(
        f"interrupted{at} of {len(seeds)}: {len(completed)} draw(s) finished, "
        f"{len(not_run)} not (see .completed)", index=index,
        seed=None if index is None else seed_dict(seeds[index]), completed=completed,
        failures=sorted(failures, key=lambda item: item[0]), not_run=not_run)
