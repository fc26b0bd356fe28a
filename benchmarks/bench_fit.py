"""Speed of ``freeattn.fit``: gamma fitted (with and without the bootstrap) and gamma given.

Run ``python benchmarks/bench_fit.py`` (``--quick`` for a seconds-long smoke run).

For each spectrum -- the ``n`` squared singular values of one draw of
``sample_model("attention", n, round(gamma * n), beta, rng=SEED)`` -- it times, with
:mod:`timeit` (min and median of repeats), three *cold* calls:

- ``fit, gamma fitted``: ``freeattn.fit(values, resamples=0)`` (the minimum of theory
  eq. (11.9) over beta and gamma, and the closest Marchenko-Pastur law);
- ``fit+bootstrap, gamma fitted``: the same with the default 200 bootstrap resamples;
- ``fit, gamma given``: ``freeattn.fit(values, gamma=gamma, resamples=0)``.

Cold calls scale the values by a new ``1 + k * 1e-12`` each time
(``_common.cold_value``), so every law the search builds is new and no cache inside
freeattn can answer.  Each row also records the estimate of the last cold call
(beta, gamma, the KS distance to the fitted law and to the closest
Marchenko-Pastur law; the scaling moves them by ~1e-12), so that two
runs -- e.g. before and after a change of the search -- can be compared for accuracy
as well as speed.

Each row also gives the least CPU time (``time.process_time``) of its cold calls,
which other jobs on the machine inflate far less than the wall-clock times.

Baseline, measured right before each spectrum's rows and reported as a ratio:
``C``, one ``numpy.linalg.eigvals`` call on 10^4 companion matrices of cubics
(``_common.time_eigvals_baseline``, the baseline of bench_peers).  Only freeattn's
public API is used, so the script times any version of the library.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

#: Spectra ``(n, beta, gamma)``: the calibration geometry of tests/test_fit.py at
#: n = 300 and 500, a split support (gamma = 0.25), a hot head (beta = 1) and n = 2000.
CASES = ((300, 0.5, 1.0), (500, 0.5, 0.25), (500, 1.0, 0.5), (2000, 0.5, 1.0))
QUICK_CASES = ((100, 0.5, 1.0),)
SEED = 100
RESAMPLES = 200
QUICK_RESAMPLES = 20
TASKS = ("fit, gamma fitted", "fit+bootstrap, gamma fitted", "fit, gamma given")
DEFAULT_JSON = "bench_fit.json"


def measure_case(n, beta, gamma, repeat, quick):
    """Rows (one per task) for one spectrum."""
    import freeattn

    values = freeattn.squared_singular_values(
        freeattn.sample_model("attention", n, round(gamma * n), beta, rng=SEED))
    resamples = QUICK_RESAMPLES if quick else RESAMPLES
    kwargs = {TASKS[0]: {"resamples": 0}, TASKS[1]: {"resamples": resamples, "rng": 0},
              TASKS[2]: {"gamma": gamma, "resamples": 0}}
    rows = []
    for task in TASKS:
        row = {"task": task, "n": n, "beta": beta, "gamma": gamma}

        results, cpu = [], []

        def cold(options=kwargs[task]):
            start = time.process_time()
            results.append(freeattn.fit(values * _common.cold_value(1.0), **options))
            cpu.append(time.process_time() - start)

        try:
            row["cold"] = _common.time_call(cold, repeat=repeat, quick=quick)
        except Exception as exc:  # reported in the table, the other rows still run
            row["error"] = f"{type(exc).__name__}: {exc}"
        else:
            last = results[-1]
            row["cpu_min_ms"] = 1e3 * min(cpu)
            row.update(beta_hat=last.beta, gamma_hat=last.gamma, ks=last.ks, ks_mp=last.ks_mp)
        rows.append(row)
    return rows


def add_ratios(rows, base):
    """Milliseconds and the ratio (cold min / C min)."""
    for row in rows:
        row["baseline"] = base
        row["c_min_ms"] = 1e3 * base["min"]
        if "cold" in row:
            row["cold_min_ms"] = 1e3 * row["cold"]["min"]
            row["cold_median_ms"] = 1e3 * row["cold"]["median"]
            row["ratio_c"] = row["cold"]["min"] / base["min"]


def render(result):
    """The markdown of a run: machine line, how to read it, one table."""
    lines = [_common.machine_line(result["machine"]), "",
             "Cold calls (values scaled by a new 1 + k 1e-12, so no law is cached). C: one "
             "numpy.linalg.eigvals call on 10^4 companion matrices of cubics, timed right "
             "before each spectrum; × C is the cold min over C's min; CPU min is the least "
             "process CPU time of the cold calls.", ""]
    columns = [("task", "task", ""), ("n", "n", "d"), ("beta", "beta", "g"),
               ("gamma", "gamma", "g"), ("cold_min_ms", "cold min (ms)", ".1f"),
               ("cold_median_ms", "cold median (ms)", ".1f"), ("c_min_ms", "C (ms)", ".2f"),
               ("ratio_c", "× C", ".1f"), ("cpu_min_ms", "CPU min (ms)", ".1f"),
               ("beta_hat", "beta hat", ".6f"),
               ("gamma_hat", "gamma hat", ".5f"), ("ks", "KS", ".6f"),
               ("ks_mp", "KS to MP", ".6f"), ("error", "error", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    rows = []
    for n, beta, gamma in QUICK_CASES if args.quick else CASES:
        base = _common.time_eigvals_baseline(repeat=args.repeat, quick=args.quick)
        case_rows = measure_case(n, beta, gamma, args.repeat, args.quick)
        add_ratios(case_rows, base)
        rows.extend(case_rows)
    result = {"benchmark": "fit", "quick": args.quick, "machine": _common.machine_info(),
              "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
