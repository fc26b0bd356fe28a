"""freeattn side by side with peer libraries from PyPI: time and accuracy, one table.

Run ``python benchmarks/bench_peers.py`` (``--no-peers`` or ``--quick`` to time
freeattn alone; ``--peers freealg,rmtool`` for a subset).

Tasks (density on a grid of ``POINTS`` points spanning the support and 5% beyond it):

- ``MP density``: Marchenko-Pastur, ratio 0.5, variance 1;
- ``MP ⊞ SC``: MP(0.5) free-additively convolved with the semicircle of variance 1;
- ``MP ⊠ MP``: MP(1) free-multiplicatively convolved with MP(1), i.e. the law of the
  squared singular values of a product of two square Ginibre matrices (Fuss-Catalan
  of order 2), grid from 0.1% of the upper edge 27/4 up (the density is infinite at 0).

Accuracy is measured against benchmarks/reference_laws.py (mpmath at 30 digits;
closed forms for MP and Fuss-Catalan, the cubic equation of the Stieltjes transform
for MP ⊞ SC): the largest relative error at interior points (at least 1% of the
support's width from each edge) and the largest absolute error on the whole grid
(edges and outside points included).

freeattn runs in this environment.  Each peer runs in its own virtual environment
``benchmarks/.venvs/<peer>`` (created and filled with ``pip install <peer>==<pin>``
on first use; the peers' pins clash with each other and with freeattn's), through
benchmarks/peer_worker.py, which prints JSON.  A peer that cannot be installed or
fails is skipped with the reason printed; a task a library has no routine for is
listed as "not supported".  Timings: *first call* is the first evaluation in the
process (for a peer, a fresh process: it includes just-in-time compilation such as
numba's), then the min and median of timeit repeats of the whole task (build the
law, evaluate on the grid).  freeattn keeps built laws in a cache; so that it builds
the law at every call like the peers, each of its calls gets a parameter perturbed by
a relative ``k * 1e-12`` (k new at every call).

How freeattn does each task, with its public API only:
``freeattn.marchenko_pastur(1.0, 0.5).pdf(x)`` for MP; for MP ⊠ MP the beta -> 0
limit of the attention law at gamma = 1, where the squared law is theta2 = beta**2
times the two-Wishart product law:
``theta2 * attention_law(beta, 1).squared().pdf(theta2 * x)`` with ``beta = 1e-8``.
The law's own deviation from that limit is of relative order beta**2 (measured: the
largest interior error is 1.08 beta**2, near the upper edge, for beta from 1e-3 to
1e-6), so at 1e-8 it is below float round-off.  freeattn has no free additive
convolution with a semicircle, so MP ⊞ SC lists the peers alone.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
import venv

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402
import reference_laws  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
VENVS = HERE / ".venvs"
WORKER = HERE / "peer_worker.py"
# name on PyPI -> (pinned version, import name); the versions measured in RESULTS.md.
PEER_PINS = {"freealg": ("0.12.2", "freealg"), "scikit-rmt": ("2.1.1", "skrmt"),
             "rmtool": ("1.0.0", "rmtool")}
POINTS = 2000
QUICK_POINTS = 24
MP_RATIO = 0.5
MP_VARIANCE = 1.0
SC_VARIANCE = 1.0
# beta of the attention law used for the two-Wishart product (its beta -> 0 limit).
PRODUCT_BETA = 1e-8
# Interior points are at least this fraction of the support's width from each edge.
INTERIOR_MARGIN = 0.01
# An interior point whose relative error exceeds this is counted as wrong (a wrong
# branch or a smoothing artefact rather than round-off).
WRONG_POINT_REL_ERR = 1e-2
# The grid extends this fraction of the support's width beyond each edge.
GRID_OVERHANG = 0.05
INSTALL_TIMEOUT = 1800
WORKER_TIMEOUT = 1200
DEFAULT_JSON = "bench_peers.json"


def tasks(points):
    """The three tasks: name, parameters, support, grid, reference density."""
    a, b = reference_laws.marchenko_pastur_edges(MP_RATIO, MP_VARIANCE)
    lo, hi = reference_laws.mp_plus_semicircle_edges(MP_RATIO, SC_VARIANCE)
    fc_hi = reference_laws.FUSS_CATALAN2_EDGES[1]

    def grid(lower, upper):
        width = upper - lower
        return np.linspace(lower - GRID_OVERHANG * width, upper + GRID_OVERHANG * width, points)

    out = [
        {"task": "mp_density", "label": "MP density",
         "params": {"ratio": MP_RATIO, "variance": MP_VARIANCE, "s2": SC_VARIANCE},
         "support": (a, b), "x": grid(a, b)},
        {"task": "mp_plus_semicircle", "label": "MP ⊞ SC",
         "params": {"ratio": MP_RATIO, "variance": MP_VARIANCE, "s2": SC_VARIANCE},
         "support": (lo, hi), "x": grid(lo, hi)},
        {"task": "mp_times_mp", "label": "MP ⊠ MP",
         "params": {"ratio": 1.0, "variance": 1.0, "s2": SC_VARIANCE},
         "support": (0.0, fc_hi),
         "x": np.linspace(1e-3 * fc_hi, (1 + GRID_OVERHANG) * fc_hi, points)},
    ]
    references = {
        "mp_density": lambda x: reference_laws.marchenko_pastur_density(x, MP_RATIO, MP_VARIANCE),
        "mp_plus_semicircle": lambda x: reference_laws.mp_plus_semicircle_density(
            x, MP_RATIO, SC_VARIANCE),
        "mp_times_mp": reference_laws.fuss_catalan2_density,
    }
    for task in out:
        task["reference"] = references[task["task"]](task["x"])
    return out


def freeattn_evaluator(task, cold=True):
    """``(callable x -> density, None)`` for freeattn on a task, or ``(None, reason)``.

    ``cold``: perturb the law's parameter at every call (see the module docstring),
    so that freeattn's law cache cannot answer.
    """
    import freeattn

    params = task["params"]
    fresh = _common.cold_value if cold else float
    if task["task"] == "mp_density":
        if not hasattr(freeattn, "marchenko_pastur"):
            return None, "freeattn.marchenko_pastur not available in this checkout"
        return (lambda x: freeattn.marchenko_pastur(fresh(params["variance"]),
                                                    params["ratio"]).pdf(x), None)
    if task["task"] == "mp_times_mp":
        if not hasattr(freeattn, "attention_law"):
            return None, "freeattn.attention_law not available in this checkout"

        def product_density(x):
            beta = fresh(PRODUCT_BETA)
            law = freeattn.attention_law(beta, 1.0).squared()
            theta2 = freeattn.linear_coefficients(beta).theta2
            return theta2 * law.pdf(theta2 * np.asarray(x))

        return product_density, None
    return None, "not supported: freeattn has no free additive convolution with a semicircle"


def errors(density, task):
    """Largest relative error inside the support and largest absolute error overall."""
    density = np.asarray(density, dtype=float)
    ref = task["reference"]
    x = task["x"]
    lower, upper = task["support"]
    margin = INTERIOR_MARGIN * (upper - lower)
    interior = (x >= lower + margin) & (x <= upper - margin) & (ref > 0)
    if density.shape != ref.shape or not np.all(np.isfinite(density)):
        bad = int(np.sum(~np.isfinite(density))) if density.shape == ref.shape else -1
        return {"max_rel_err_interior": float("inf"), "max_abs_err": float("inf"),
                "note": f"non-finite values at {bad} points" if bad >= 0 else "wrong shape"}
    rel = np.abs(density[interior] / ref[interior] - 1)
    return {"max_rel_err_interior": float(np.max(rel)),
            "median_rel_err_interior": float(np.median(rel)),
            "points_off_interior": int(np.sum(rel > WRONG_POINT_REL_ERR)),
            "interior_points": int(np.sum(interior)),
            "max_abs_err": float(np.max(np.abs(density - ref)))}


def run_freeattn(task, repeat, quick):
    import freeattn

    row = {"task": task["label"], "library": f"freeattn {freeattn.__version__}"}
    evaluate, reason = freeattn_evaluator(task)
    if evaluate is None:
        row["note"] = reason
        return row
    x = task["x"]
    warm, _ = freeattn_evaluator(task, cold=False)
    try:
        start = time.perf_counter()
        density = warm(x)  # the exact parameters: the accuracy is measured on this call
        row["cold_seconds"] = time.perf_counter() - start
        row["time"] = _common.time_call(lambda: evaluate(x), repeat=repeat, quick=quick)
        row["warm"] = _common.time_call(lambda: warm(x), repeat=repeat, quick=quick)
        row["note"] = f"same law again (cached): {1e3 * row['warm']['min']:.3g} ms"
    except Exception as exc:  # reported in the table
        row["note"] = f"failed: {type(exc).__name__}: {exc}"
        return row
    row.update(errors(density, task))
    return row


def ensure_peer(peer, install_timeout):
    """The python of the peer's venv, installing it if needed; or ``(None, reason)``."""
    version, module = PEER_PINS[peer]
    env_dir = VENVS / peer
    python = env_dir / "bin" / "python"

    def importable():
        probe = subprocess.run([str(python), "-c", f"import {module}"],
                               capture_output=True, text=True, timeout=600)
        return probe.returncode == 0, probe.stderr.strip().splitlines()[-1:] or [""]

    if python.exists():
        ok, _ = importable()
        if ok:
            return python, None
    print(f"[peers] installing {peer}=={version} into {env_dir} ...", flush=True)
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"{peer}=={version}"],
            capture_output=True, text=True, timeout=install_timeout)
    except subprocess.TimeoutExpired:
        return None, f"pip install {peer}=={version} timed out after {install_timeout} s"
    except Exception as exc:
        return None, f"could not create the venv: {type(exc).__name__}: {exc}"
    if install.returncode != 0:
        last = [ln for ln in install.stderr.splitlines() if ln.strip()][-1:] or ["(no output)"]
        return None, f"pip install {peer}=={version} failed: {last[0]}"
    ok, err = importable()
    if not ok:
        return None, f"import {module} failed after install: {err[0]}"
    return python, None


def run_peer(python, peer, task, repeat, quick):
    """One row for one peer on one task (worker subprocess)."""
    version, _ = PEER_PINS[peer]
    row = {"task": task["label"], "library": f"{peer} {version}"}
    request = {"peer": peer, "task": task["task"], "params": task["params"],
               "x": task["x"].tolist(), "repeat": repeat, "quick": quick}
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.run([str(python), str(WORKER)], input=json.dumps(request),
                              capture_output=True, text=True, timeout=WORKER_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        row["note"] = f"failed: no answer within {WORKER_TIMEOUT} s"
        return row
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["(no output)"]
        row["note"] = f"failed: worker exit {proc.returncode}: {tail[0]}"
        return row
    if not answer["ok"]:
        row["note"] = ("not supported: " if answer.get("unsupported") else "failed: ") + answer["error"]
        return row
    row["cold_seconds"] = answer["cold_seconds"]
    row["time"] = answer["time"]
    row.update(errors(answer["density"], task))
    return row


def add_columns(rows):
    """Milliseconds and the time ratio to freeattn on the same task."""
    ours = {row["task"]: row["time"]["median"] for row in rows
            if row["library"].startswith("freeattn") and "time" in row}
    for row in rows:
        if "time" not in row:
            continue
        row["cold_ms"] = 1e3 * row["cold_seconds"]
        row["min_ms"] = 1e3 * row["time"]["min"]
        row["median_ms"] = 1e3 * row["time"]["median"]
        if row["task"] in ours:
            row["ratio_to_freeattn"] = row["time"]["median"] / ours[row["task"]]


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             f"Grid: {result['points']} points per task; reference: mpmath at "
             f"{reference_laws.DPS} digits (benchmarks/reference_laws.py). "
             "Times cover building the law and evaluating the density on the grid.", ""]
    for peer, reason in result["skipped_peers"].items():
        lines.append(f"- {peer} skipped: {reason}")
    if result["skipped_peers"]:
        lines.append("")
    columns = [("task", "task", ""), ("library", "library", ""),
               ("cold_ms", "first call (ms)", ".3g"), ("min_ms", "min (ms)", ".3g"),
               ("median_ms", "median (ms)", ".3g"),
               ("ratio_to_freeattn", "time / freeattn", ".3g"),
               ("median_rel_err_interior", "median rel. error (interior)", ".1e"),
               ("max_rel_err_interior", "max rel. error (interior)", ".1e"),
               ("points_off_interior", "interior points off by > 1%", "d"),
               ("max_abs_err", "max abs. error (grid)", ".1e"), ("note", "note", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    parser.add_argument("--no-peers", action="store_true",
                        help="time freeattn only (implied by --quick)")
    parser.add_argument("--peers", default=",".join(PEER_PINS),
                        help=f"comma-separated peers (default {','.join(PEER_PINS)})")
    parser.add_argument("--install-timeout", type=int, default=INSTALL_TIMEOUT,
                        help="seconds allowed for one peer's pip install")
    args = parser.parse_args(argv)
    points = QUICK_POINTS if args.quick else POINTS
    peers = [] if (args.no_peers or args.quick) else [p for p in args.peers.split(",") if p]
    unknown = sorted(set(peers) - set(PEER_PINS))
    if unknown:
        parser.error(f"unknown peers {unknown}; known: {sorted(PEER_PINS)}")

    task_list = tasks(points)
    pythons, skipped = {}, {}
    for peer in peers:
        python, reason = ensure_peer(peer, args.install_timeout)
        if python is None:
            print(f"[peers] skipping {peer}: {reason}", flush=True)
            skipped[peer] = reason
        else:
            pythons[peer] = python
    rows = []
    for task in task_list:
        rows.append(run_freeattn(task, args.repeat, args.quick))
        for peer, python in pythons.items():
            print(f"[peers] {peer}: {task['label']} ...", flush=True)
            rows.append(run_peer(python, peer, task, args.repeat, args.quick))
    add_columns(rows)
    result = {"benchmark": "peers", "quick": args.quick, "machine": _common.machine_info(),
              "points": points, "peers": peers, "skipped_peers": skipped, "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
