"""Speed of the limiting law: pdf and cdf on 10^4 points, and the edge (operator norm).

Run ``python benchmarks/bench_law.py`` (``--quick`` for a seconds-long smoke run).

For each ``(beta, gamma)`` it times, with :mod:`timeit` (min and median of repeats):

- ``pdf``: ``freeattn.attention_law(beta, gamma).squared().pdf(x)`` on 10^4 points
  spanning the support ``[lower, upper]`` of the squared law (target <= 20 ms);
- ``cdf``: the same with ``.cdf(x)`` (target <= 100 ms);
- ``edge``: ``freeattn.operator_norm(beta, gamma)`` (target <= 2 ms);
- ``fit`` and ``fit+bootstrap``: ``freeattn.fit`` of the ``n`` squared singular values
  of one draw of ``sample_model("attention", n, n, 1.0)`` at ``gamma = 1`` given,
  without and with the default 200 bootstrap resamples (no target; reported as
  ratios to the same baselines, timed right before).

Each is timed twice.  *Cold*: every call builds a new law for a ``beta`` perturbed by
a relative ``k * 1e-12`` (k counts all cold calls of the run), so no cache inside freeattn can answer
and the time includes building the law.  *Warm*: the same law object is asked again
(the time a user sees when evaluating one law repeatedly).  For ``fit``, cold calls
scale the spectrum by a new ``1 + k * 1e-12`` (so every law the search builds is new),
warm calls fit the same values again (the laws' cache answers).  The targets are checked
on the cold median, the conservative number.

Baselines, measured in the same run and reported as ratios:

- ``cubic roots``: ``numpy.linalg.eigvals`` of a fixed batch of 10^4 companion
  matrices (3 x 3) -- the roots of one cubic per point by LAPACK, what any density
  given by a polynomial equation for its Stieltjes transform costs at least; a
  fixed, single-threaded cost of a few ms, the order of the targets, so the ratios
  carry over to other machines (a multi-threaded LAPACK call such as a 200 x 200
  eigvalsh was tried first and rejected: its time swings 30x with the machine's load);
- ``MP closed form``: the Marchenko-Pastur density
  ``sqrt((b-x)(x-a))/(2 pi c v x)`` in numpy on the same 10^4 points -- the floor
  a law given in closed form would cost.

Only freeattn's public API is used.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

# The five cases of issue 3, and two from the range the composable engine opened
# (gamma in [1e-4, 1e4]: long contexts, gamma = d_head / n, and the opposite end).
CASES = ((0.5, 1.0), (1.0, 1.0), (1.0, 0.25), (2.0, 4.0), (1.0, 0.05), (1.0, 1e-3), (1.0, 1e3))
QUICK_CASES = ((1.0, 1.0),)
POINTS = 10_000
QUICK_POINTS = 200
TARGET_MS = {"pdf": 20.0, "cdf": 100.0, "edge": 2.0}
BASELINE_NAMES = ("cubic roots", "MP closed form")
DEFAULT_JSON = "bench_law.json"
#: Spectrum sizes of the fit rows (n values of one n x n draw) and the draw's seed.
FIT_SIZES = (500, 2000)
QUICK_FIT_SIZES = (100,)
FIT_BETA = 1.0
FIT_SEED = 0
#: Bootstrap resamples of the ``fit+bootstrap`` row (freeattn.fit's default; quick: fewer).
FIT_RESAMPLES = 200
QUICK_FIT_RESAMPLES = 20


def baselines(points, repeat, quick):
    """Time the two baselines; return ``{name: timing}``."""
    companions = _common.companion_batch(points)
    ratio, variance = 0.5, 1.0
    a = variance * (1 - math.sqrt(ratio)) ** 2
    b = variance * (1 + math.sqrt(ratio)) ** 2
    x = np.linspace(a, b, points)

    def mp_closed_form():
        inside = (x > a) & (x < b)
        out = np.zeros_like(x)
        xi = x[inside]
        out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * np.pi * ratio * variance * xi)
        return out

    cubic_name, closed_form_name = BASELINE_NAMES
    return {
        cubic_name: _common.time_call(lambda: np.linalg.eigvals(companions), repeat=repeat,
                                      quick=quick),
        closed_form_name: _common.time_call(mp_closed_form, repeat=repeat, quick=quick),
    }


def _cold_caller(beta, gamma, make):
    """A zero-argument callable that builds a fresh law/edge at a new beta each call."""
    import freeattn

    return lambda: make(freeattn, _common.cold_value(beta), gamma)


def measure_case(beta, gamma, points, repeat, quick):
    """Rows (one per task) for one ``(beta, gamma)``."""
    import freeattn

    law = freeattn.attention_law(beta, gamma).squared()
    lower, upper = law.support()
    x = np.linspace(lower, upper, points)
    tasks = {
        "pdf": (lambda fa, b, g: fa.attention_law(b, g).squared().pdf(x), lambda: law.pdf(x)),
        "cdf": (lambda fa, b, g: fa.attention_law(b, g).squared().cdf(x), lambda: law.cdf(x)),
        "edge": (lambda fa, b, g: fa.operator_norm(b, g), lambda: freeattn.operator_norm(beta, gamma)),
    }
    rows = []
    for task, (cold_make, warm) in tasks.items():
        row = {"task": task, "beta": beta, "gamma": gamma,
               "points": points if task != "edge" else None, "target_ms": TARGET_MS[task]}
        try:
            row["cold"] = _common.time_call(_cold_caller(beta, gamma, cold_make),
                                            repeat=repeat, quick=quick)
            row["warm"] = _common.time_call(warm, repeat=repeat, quick=quick)
        except Exception as exc:  # reported in the table, the other cases still run
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def measure_fit(n, repeat, quick):
    """Rows ``fit`` and ``fit+bootstrap`` for a spectrum of ``n`` values."""
    import freeattn

    values = freeattn.squared_singular_values(
        freeattn.sample_model("attention", n, n, FIT_BETA, rng=FIT_SEED))
    resamples = QUICK_FIT_RESAMPLES if quick else FIT_RESAMPLES
    rows = []
    for task, count in (("fit", 0), ("fit+bootstrap", resamples)):
        row = {"task": task, "beta": FIT_BETA, "gamma": 1.0, "points": n, "target_ms": None}

        def cold(count=count):
            return freeattn.fit(values * _common.cold_value(1.0), gamma=1.0, resamples=count,
                                rng=0)

        def warm(count=count):
            return freeattn.fit(values, gamma=1.0, resamples=count, rng=0)

        try:
            row["cold"] = _common.time_call(cold, repeat=repeat, quick=quick)
            warm()
            row["warm"] = _common.time_call(warm, repeat=repeat, quick=quick)
        except Exception as exc:  # reported in the table, the other rows still run
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def add_ratios(rows, base):
    """Fill in milliseconds, ratios (min / baseline min) and the target verdict."""
    for row in rows:
        if "cold" not in row:
            continue
        row["cold_min_ms"] = 1e3 * row["cold"]["min"]
        row["cold_median_ms"] = 1e3 * row["cold"]["median"]
        row["warm_min_ms"] = 1e3 * row["warm"]["min"]
        for name, timing in base.items():
            row[f"{name}_min_ms"] = 1e3 * timing["min"]
            row[f"ratio_{name}"] = row["cold"]["min"] / timing["min"]
        if row["target_ms"] is not None:
            row["meets_target"] = "yes" if row["cold_median_ms"] <= row["target_ms"] else "no"


def render(result):
    """The markdown of a run: machine line, how to read it, one table."""
    lines = [_common.machine_line(result["machine"]), "",
             f"{result['points']} points spanning the support of the squared law. Cold: a new "
             "law per call (no cache can answer); warm: the same law object again. Ratios are "
             "cold min / baseline min, the baselines timed right before each (beta, gamma); "
             "the target is checked on the cold median.", ""]
    columns = [("task", "task", ""), ("beta", "beta", "g"), ("gamma", "gamma", "g"),
               ("cold_min_ms", "cold min (ms)", ".3f"),
               ("cold_median_ms", "cold median (ms)", ".3f"),
               ("warm_min_ms", "warm min (ms)", ".3f")]
    for name in BASELINE_NAMES:
        columns += [(f"{name}_min_ms", f"{name} (ms)", ".3f"), (f"ratio_{name}", f"× {name}", ".2f")]
    columns += [("target_ms", "target (ms)", "g"), ("meets_target", "≤ target", ""),
                ("error", "error", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    points = QUICK_POINTS if args.quick else POINTS
    cases = QUICK_CASES if args.quick else CASES
    rows = []
    for beta, gamma in cases:
        base = baselines(points, args.repeat, args.quick)
        case_rows = measure_case(beta, gamma, points, args.repeat, args.quick)
        add_ratios(case_rows, base)
        for row in case_rows:
            row["baselines"] = base
        rows.extend(case_rows)
    for n in QUICK_FIT_SIZES if args.quick else FIT_SIZES:
        base = baselines(points, args.repeat, args.quick)
        fit_rows = measure_fit(n, args.repeat, args.quick)
        add_ratios(fit_rows, base)
        for row in fit_rows:
            row["baselines"] = base
        rows.extend(fit_rows)
    result = {"benchmark": "law", "quick": args.quick, "machine": _common.machine_info(),
              "points": points, "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
