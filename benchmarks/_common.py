"""Shared helpers of the freeattn benchmark scripts: timing, tables, machine, JSON.

The scripts in this folder are run as ``python benchmarks/<script>.py``; each puts
this folder on ``sys.path`` and imports this module.  Nothing here imports freeattn,
so the peer worker (which runs in a peer's own virtual environment) may use it too.
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import os
import pathlib
import platform
import statistics
import timeit

HERE = pathlib.Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"

# A timing repeats one call until a batch lasts at least this long (seconds), so that
# timer resolution and call overhead stay negligible for micro-second operations.
MIN_BATCH_SECONDS = 0.05
# Calls slower than this are timed one at a time, with fewer repeats.
SLOW_CALL_SECONDS = 1.0


# Relative step between the parameters of successive "cold" calls (see cold_value):
# every call gets a new parameter, so no cache can answer; over a run (< 10^5 calls)
# the parameter moves by < 1e-7 relative, which does not change the work of a call.
COLD_STEP = 1e-12
_COLD_CALLS = itertools.count(1)


def cold_value(value):
    """``value * (1 + k * COLD_STEP)`` with ``k`` new at every call in this process."""
    return value * (1.0 + COLD_STEP * next(_COLD_CALLS))


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads(argv):
    """Apply ``--blas-threads N`` from ``argv`` to the environment (before numpy loads).

    Only the thread counts are set; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are left
    as the environment has them.
    """
    for i, arg in enumerate(argv):
        value = None
        if arg == "--blas-threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--blas-threads="):
            value = arg.split("=", 1)[1]
        if value is not None and value.isdigit() and int(value) > 0:
            for name in BLAS_THREAD_VARIABLES:
                os.environ[name] = value


def time_call(func, *, repeat=5, quick=False):
    """Time ``func()``; return ``{"min": s, "median": s, "number": k, "repeat": r}``.

    Uses :class:`timeit.Timer`: the number of calls per batch is chosen by
    ``autorange`` (at least ``MIN_BATCH_SECONDS`` per batch), the batch is repeated
    ``repeat`` times, and the per-call minimum and median over batches are reported.
    In quick mode (smoke tests) every call is timed once, twice.
    """
    timer = timeit.Timer(func)
    if quick:
        times = timer.repeat(repeat=2, number=1)
        number = 1
    else:
        first = timer.timeit(number=1)
        if first >= SLOW_CALL_SECONDS:
            number = 1
            times = [first] + timer.repeat(repeat=max(repeat - 2, 1), number=1)
        else:
            number = 1
            while number * first < MIN_BATCH_SECONDS and number < 10**6:
                number *= 2
            times = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return {"min": min(times), "median": statistics.median(times),
            "number": number, "repeat": len(times)}


# The baseline C of the composition benchmarks: LAPACK eigenvalues of this many 3 x 3
# companion matrices in one batched numpy.linalg.eigvals call (the roots of one cubic
# per point, the least a density defined by a polynomial equation costs).
BASELINE_POINTS = 10_000
BASELINE_SEED = 20261129


def companion_batch(points=BASELINE_POINTS):
    """``points`` companion matrices of fixed random monic cubics, shape (points, 3, 3)."""
    import numpy as np

    coeffs = np.random.default_rng(BASELINE_SEED).standard_normal((points, 3))
    batch = np.zeros((points, 3, 3))
    batch[:, 0, :] = -coeffs
    batch[:, 1, 0] = 1.0
    batch[:, 2, 1] = 1.0
    return batch


def time_eigvals_baseline(points=BASELINE_POINTS, *, repeat=5, quick=False):
    """Time C: one ``numpy.linalg.eigvals`` call on ``companion_batch(points)``."""
    import numpy as np

    batch = companion_batch(points)
    return time_call(lambda: np.linalg.eigvals(batch), repeat=repeat, quick=quick)


def machine_info():
    """Date, machine and library versions of this run, as a JSON-ready dict."""
    import numpy as np
    import scipy

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    blas = ""
    try:
        config = np.show_config(mode="dicts")
        blas_info = config["Build Dependencies"]["blas"]
        blas = f"{blas_info.get('name', '')} {blas_info.get('version', '')}".strip()
    except Exception:  # numpy < 1.25 has no mode="dicts"; the field is informative only
        blas = "unknown"
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "blas": blas,
        "openblas_env": {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")},
        "blas_threads_env": {k: os.environ[k] for k in BLAS_THREAD_VARIABLES if k in os.environ},
        "load_average_1min": os.getloadavg()[0],
    }


def machine_line(info):
    """One markdown line describing the machine of a run."""
    env = ", ".join(f"{k}={v}" for k, v in sorted(
        {**info["openblas_env"], **info.get("blas_threads_env", {})}.items())) or "none"
    return (f"Measured {info['date_utc']} on {info['cores']} cores ({info['cpu']}), "
            f"Python {info['python']}, numpy {info['numpy']}, scipy {info['scipy']}, "
            f"BLAS {info['blas']}; BLAS environment: {env}; "
            f"1-minute load average at the end of the run: {info['load_average_1min']:.2f}.")


def format_value(value, spec):
    """Format a table cell; None and non-finite numbers print as a dash."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    return format(value, spec)


def markdown_table(columns, rows):
    """Render ``rows`` (dicts) as a markdown table.

    ``columns`` is a list of ``(key, header, format_spec)``; a missing key prints a dash.
    """
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(format_value(row.get(k), spec) for k, _, spec in columns) + " |"
            for row in rows]
    return "\n".join([head, rule] + body)


def write_json(path, payload):
    """Write ``payload`` as indented JSON to ``path`` (parents created)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def add_common_arguments(parser, default_json):
    """The options every benchmark script takes."""
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and one repeat: checks that the script runs "
                             "(used by tests/test_benchmarks_smoke.py); numbers are not "
                             "meaningful")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timing repeats per measurement (default 5)")
    parser.add_argument("--json", default=None,
                        help=f"where to write the JSON results (default {default_json} "
                             "for full runs, none for --quick)")


def json_target(args, default_json):
    """The JSON path of a run: --json if given, the default for full runs, else None."""
    if args.json:
        return pathlib.Path(args.json)
    if args.quick:
        return None
    return RESULTS_DIR / default_json


def publish(result, render, args, default_json):
    """Render ``result`` to markdown (stored under "markdown"), print it, write the JSON."""
    result["markdown"] = render(result)
    print(result["markdown"], flush=True)
    target = json_target(args, default_json)
    if target is not None:
        print(f"\nJSON written to {write_json(target, result)}")
    return result
