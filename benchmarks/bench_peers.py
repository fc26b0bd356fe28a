"""freeattn side by side with peer libraries from PyPI: time and accuracy, one table.

Run ``python benchmarks/bench_peers.py`` (``--no-peers`` or ``--quick`` to time
freeattn alone; ``--peers freealg,rmtool`` for a subset).

Tasks -- each builds a new law and evaluates its density on a grid of ``POINTS``
points spanning the support and 5% beyond it:

- ``MP density``: Marchenko-Pastur, ratio 0.5, variance 1
  (``freeattn.marchenko_pastur(1, 0.5)``), also timed as its bare closed form in numpy;
- ``MP ⊞ SC``: ``free_additive(marchenko_pastur(1, 0.5), semicircle(1))``;
- ``MP ⊠ MP``: ``free_multiplicative(marchenko_pastur(1, 1), marchenko_pastur(1, 1))``,
  the squared singular values of a product of two square Ginibre matrices
  (Fuss-Catalan of order 2); grid from 0.1% of the upper edge 27/4 up (the density
  is infinite at 0);
- ``sample cov. {1, 10}``: ``sample_covariance(point_masses([1, 10], [0.5, 0.5]), 0.1)``,
  two bands;
- ``SC ⊞ {±3}``: ``free_additive(semicircle(1), point_masses([-3, 3], [0.5, 0.5]))``,
  two bands (split support).

Baseline C: the cost of 10^4 batched 3 x 3 ``numpy.linalg.eigvals`` (companion
matrices of cubics, benchmarks/_common.py), timed in this process right before each
library's measurement of each task; "x C" is the library's minimum over C's minimum.
The composable engine's targets (benchmarks/README.md): per composed task, relative density error
<= 1e-12 at interior points, every band found, new law + density <= 2 C, and faster
than the fastest peer.

Accuracy is measured against benchmarks/reference_laws.py (mpmath at 30 digits:
closed forms for MP and Fuss-Catalan, the cubic equation of the Stieltjes transform
for the other three): the largest and median relative error at interior points (at
least 1% of a band's width from each of its edges), the number of interior points
off by more than 1% (a wrong branch or smoothing, not round-off) and the largest
absolute error on the whole grid (edges, gaps and outside points included).  Bands:
freeattn's ``law.intervals()``, a peer's own support routine where it has one
(see benchmarks/peer_worker.py), else the runs of positive density on the grid; a
band is found when the count matches the reference and every edge is within 1% of
the support's width of the reference edge ("max edge error" is the largest
distance, absolute).

freeattn runs in this environment.  Each peer runs in its own virtual environment
``benchmarks/.venvs/<peer>`` (created and filled with ``pip install <peer>==<pin>``
on first use; the peers' pins clash with each other and with freeattn's), through
benchmarks/peer_worker.py, which prints JSON.  A peer that cannot be installed or
fails is skipped with the reason printed; a task a library has no routine for is
listed as "not supported".  Timings: *first call* is the first evaluation in the
process (for a peer, a fresh process: it includes just-in-time compilation such as
numba's; for freeattn, the first call of the task in this process), then the min
and median of timeit repeats of the whole task (build the law, evaluate on the
grid).  freeattn may keep built laws in a cache; so that it builds the law at every
call like the peers, each of its timed calls gets a parameter perturbed by a
relative ``k * 1e-12`` (k new at every call; ``_common.cold_value``): a variance or
a population value, never a ratio of 1, whose perturbation would change the law's
edge type.  The peers keep no cache between law objects (rmtool's sympy keeps its
expression cache between calls, which can only favour rmtool).
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
# Two-atom population of the sample-covariance task and its ratio p/N.
SAMPLECOV = {"values": [1.0, 10.0], "weights": [0.5, 0.5], "ratio": 0.1}
# Two atoms added (free additive convolution) to the semicircle of variance s2.
SC_ATOMS = {"values": [-3.0, 3.0], "weights": [0.5, 0.5], "s2": SC_VARIANCE}
# Interior points are at least this fraction of a band's width from each of its edges.
INTERIOR_MARGIN = 0.01
# An interior point whose relative error exceeds this is counted as wrong (a wrong
# branch or a smoothing artefact rather than round-off).
WRONG_POINT_REL_ERR = 1e-2
# A band counts as found when each of its edges is within this fraction of the
# support's width of the reference edge (and the number of bands matches).
BAND_EDGE_TOLERANCE = 1e-2
# The grid extends this fraction of the support's width beyond each edge.
GRID_OVERHANG = 0.05
# The composable engine's targets for the four composed tasks (benchmarks/README.md).
TARGET_REL_ERR = 1e-12
TARGET_X_C = 2.0
COMPOSED_TASKS = ("mp_plus_semicircle", "mp_times_mp", "samplecov_two_atoms",
                  "sc_plus_two_atoms")
INSTALL_TIMEOUT = 1800
WORKER_TIMEOUT = 1800
DEFAULT_JSON = "bench_peers.json"


def _grid(lower, upper, points):
    width = upper - lower
    return np.linspace(lower - GRID_OVERHANG * width, upper + GRID_OVERHANG * width, points)


def tasks(points):
    """The five tasks: name, label, parameters, reference bands, grid, reference density."""
    mp_edges = reference_laws.marchenko_pastur_edges(MP_RATIO, MP_VARIANCE)
    mpsc_edges = reference_laws.mp_plus_semicircle_edges(MP_RATIO, SC_VARIANCE)
    fc_hi = reference_laws.FUSS_CATALAN2_EDGES[1]
    cov = reference_laws.samplecov_two_atoms_edges(SAMPLECOV["values"], SAMPLECOV["weights"],
                                                   SAMPLECOV["ratio"])
    sca = reference_laws.sc_two_atoms_edges(SC_ATOMS["s2"], SC_ATOMS["values"][1])

    def pairs(edges):
        return [tuple(edges[k:k + 2]) for k in range(0, len(edges), 2)]

    mp_params = {"ratio": MP_RATIO, "variance": MP_VARIANCE, "s2": SC_VARIANCE}
    out = [
        {"task": "mp_density", "label": "MP density", "params": mp_params,
         "bands": [mp_edges], "x": _grid(*mp_edges, points)},
        {"task": "mp_plus_semicircle", "label": "MP ⊞ SC", "params": mp_params,
         "bands": [mpsc_edges], "x": _grid(*mpsc_edges, points)},
        {"task": "mp_times_mp", "label": "MP ⊠ MP",
         "params": {"ratio": 1.0, "variance": 1.0},
         "bands": [(0.0, fc_hi)],
         "x": np.linspace(1e-3 * fc_hi, (1 + GRID_OVERHANG) * fc_hi, points)},
        {"task": "samplecov_two_atoms", "label": "sample cov. {1, 10}", "params": SAMPLECOV,
         "bands": pairs(cov), "x": _grid(cov[0], cov[-1], points)},
        {"task": "sc_plus_two_atoms", "label": "SC ⊞ {±3}", "params": SC_ATOMS,
         "bands": pairs(sca), "x": _grid(sca[0], sca[-1], points)},
    ]
    references = {
        "mp_density": lambda x: reference_laws.marchenko_pastur_density(x, MP_RATIO, MP_VARIANCE),
        "mp_plus_semicircle": lambda x: reference_laws.mp_plus_semicircle_density(
            x, MP_RATIO, SC_VARIANCE),
        "mp_times_mp": reference_laws.fuss_catalan2_density,
        "samplecov_two_atoms": lambda x: reference_laws.samplecov_two_atoms_density(
            x, SAMPLECOV["values"], SAMPLECOV["weights"], SAMPLECOV["ratio"]),
        "sc_plus_two_atoms": lambda x: reference_laws.sc_two_atoms_density(
            x, SC_ATOMS["s2"], SC_ATOMS["values"][1]),
    }
    for task in out:
        task["reference"] = references[task["task"]](task["x"])
    return out


def freeattn_builder(task):
    """``make(fresh) -> law`` for freeattn on a task (public API only).

    ``fresh`` maps the perturbed parameter: ``_common.cold_value`` for the timed
    calls, ``float`` for the exact law whose accuracy is measured.
    """
    import freeattn as fa

    p = task["params"]
    name = task["task"]
    if name == "mp_density":
        return lambda fresh: fa.marchenko_pastur(fresh(p["variance"]), p["ratio"])
    if name == "mp_plus_semicircle":
        return lambda fresh: fa.free_additive(fa.marchenko_pastur(p["variance"], p["ratio"]),
                                              fa.semicircle(fresh(p["s2"])))
    if name == "mp_times_mp":
        return lambda fresh: fa.free_multiplicative(
            fa.marchenko_pastur(fresh(p["variance"]), p["ratio"]),
            fa.marchenko_pastur(p["variance"], p["ratio"]))
    if name == "samplecov_two_atoms":
        return lambda fresh: fa.sample_covariance(
            fa.point_masses([fresh(p["values"][0])] + list(p["values"][1:]), p["weights"]),
            p["ratio"])
    if name == "sc_plus_two_atoms":
        return lambda fresh: fa.free_additive(fa.semicircle(fresh(p["s2"])),
                                              fa.point_masses(p["values"], p["weights"]))
    raise ValueError(f"unknown task {name!r}")


def mp_closed_form(x, ratio=MP_RATIO, variance=MP_VARIANCE):
    """The bare Marchenko-Pastur density ``sqrt((b-x)(x-a))/(2 pi c v x)`` in numpy."""
    root = ratio ** 0.5
    a = variance * (1.0 - root) ** 2
    b = variance * (1.0 + root) ** 2
    inside = (x > a) & (x < b)
    out = np.zeros_like(x)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * np.pi * ratio * variance * xi)
    return out


def errors(density, task):
    """Relative errors at interior points, wrong points and the largest absolute error."""
    density = np.asarray(density, dtype=float)
    ref = task["reference"]
    x = task["x"]
    interior = np.zeros(x.shape, dtype=bool)
    for lower, upper in task["bands"]:
        margin = INTERIOR_MARGIN * (upper - lower)
        interior |= (x >= lower + margin) & (x <= upper - margin)
    interior &= ref > 0
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


def grid_bands(x, density):
    """Runs of positive density on the grid, as ``[(first x, last x), ...]``."""
    positive = np.asarray(density) > 0
    if not positive.any():
        return []
    idx = np.flatnonzero(positive)
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate([[idx[0]], idx[breaks + 1]])
    ends = np.concatenate([idx[breaks], [idx[-1]]])
    return [(float(x[s]), float(x[e])) for s, e in zip(starts, ends)]


def band_check(bands, task, source):
    """``bands_found`` ("2/2"), ``bands_ok``, ``max_edge_err`` against the reference."""
    ref = task["bands"]
    width = ref[-1][1] - ref[0][0]
    out = {"band_source": source, "bands": [list(b) for b in bands],
           "bands_found": f"{len(bands)}/{len(ref)}"}
    if len(bands) != len(ref):
        out["bands_ok"] = "no"
        return out
    if source == "grid":
        # Grid points only resolve an edge to the grid step: the count is the check.
        step = float(task["x"][1] - task["x"][0])
        ok = all(abs(b[0] - r[0]) <= 2 * step + BAND_EDGE_TOLERANCE * width
                 and abs(b[1] - r[1]) <= 2 * step + BAND_EDGE_TOLERANCE * width
                 for b, r in zip(bands, ref))
    else:
        err = max(max(abs(b[0] - r[0]), abs(b[1] - r[1])) for b, r in zip(bands, ref))
        out["max_edge_err"] = float(err)
        ok = err <= BAND_EDGE_TOLERANCE * width
    out["bands_ok"] = "yes" if ok else "no"
    return out


def _baseline(repeat, quick):
    return _common.time_eigvals_baseline(repeat=repeat, quick=quick)


def run_freeattn(task, repeat, quick):
    import freeattn

    row = {"task": task["label"], "task_id": task["task"],
           "library": f"freeattn {freeattn.__version__}"}
    make = freeattn_builder(task)
    x = task["x"]
    try:
        start = time.perf_counter()
        law = make(float)  # the exact parameters: the accuracy is measured on this law
        density = law.pdf(x)
        row["cold_seconds"] = time.perf_counter() - start
        bands = law.intervals()
        row["baseline"] = _baseline(repeat, quick)
        row["time"] = _common.time_call(lambda: make(_common.cold_value).pdf(x),
                                        repeat=repeat, quick=quick)
        row["warm"] = _common.time_call(lambda: law.pdf(x), repeat=repeat, quick=quick)
        row["note"] = f"same law again: {1e3 * row['warm']['min']:.3g} ms"
    except Exception as exc:  # reported in the table
        row["note"] = f"failed: {type(exc).__name__}: {exc}"
        return row
    row.update(band_check(bands, task, "law.intervals()"))
    row.update(errors(density, task))
    return row


def run_closed_form(task, repeat, quick):
    """The MP task's floor: its closed form in numpy on the same grid."""
    row = {"task": task["label"], "task_id": task["task"], "library": "numpy closed form"}
    x = task["x"]
    start = time.perf_counter()
    density = mp_closed_form(x)
    row["cold_seconds"] = time.perf_counter() - start
    row["baseline"] = _baseline(repeat, quick)
    row["time"] = _common.time_call(lambda: mp_closed_form(x), repeat=repeat, quick=quick)
    row["note"] = "sqrt((b-x)(x-a))/(2 pi c v x), edges known"
    row.update(band_check(grid_bands(x, density), task, "grid"))
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
    row = {"task": task["label"], "task_id": task["task"], "library": f"{peer} {version}"}
    request = {"peer": peer, "task": task["task"], "params": task["params"],
               "x": task["x"].tolist(), "repeat": repeat, "quick": quick}
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    baseline = _baseline(repeat, quick)
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
    row["baseline"] = baseline
    row["baseline_in_peer_process"] = answer["baseline"]
    row["cold_seconds"] = answer["cold_seconds"]
    row["time"] = answer["time"]
    if answer.get("bands") is not None:
        row.update(band_check(answer["bands"], task, answer["band_source"]))
    else:
        row.update(band_check(grid_bands(task["x"], answer["density"]), task, "grid"))
        if answer.get("band_error"):
            row["note"] = f"support routine failed: {answer['band_error']}"
    row.update(errors(answer["density"], task))
    return row


def add_columns(rows):
    """Milliseconds, the ratio to C (min over min) and the time ratio to freeattn."""
    ours = {row["task"]: row["time"]["min"] for row in rows
            if row["library"].startswith("freeattn") and "time" in row}
    for row in rows:
        if "time" not in row:
            continue
        row["cold_ms"] = 1e3 * row["cold_seconds"]
        row["min_ms"] = 1e3 * row["time"]["min"]
        row["median_ms"] = 1e3 * row["time"]["median"]
        row["baseline_ms"] = 1e3 * row["baseline"]["min"]
        row["x_c"] = row["time"]["min"] / row["baseline"]["min"]
        if row["task"] in ours:
            row["ratio_to_freeattn"] = row["time"]["min"] / ours[row["task"]]


def summarize(rows, task_list):
    """One line per composed task: freeattn against the targets and the fastest peer."""
    summary = []
    for task in task_list:
        mine = [r for r in rows if r["task_id"] == task["task"]]
        ours = next((r for r in mine if r["library"].startswith("freeattn")), None)
        if ours is None or "x_c" not in ours:
            continue
        line = {"task": task["label"], "freeattn_x_c": ours["x_c"],
                "freeattn_ms": ours["min_ms"],
                "max_rel_err_interior": ours.get("max_rel_err_interior"),
                "bands_ok": ours.get("bands_ok")}
        if task["task"] in COMPOSED_TASKS:
            line["meets_accuracy"] = "yes" if ours["max_rel_err_interior"] <= TARGET_REL_ERR else "no"
            line["meets_speed"] = "yes" if ours["x_c"] <= TARGET_X_C else "no"
        peers = [r for r in mine if "x_c" in r and not r["library"].startswith(("freeattn", "numpy"))]
        if peers:
            fastest = min(peers, key=lambda r: r["x_c"])
            line["fastest_peer"] = fastest["library"]
            line["fastest_peer_x_c"] = fastest["x_c"]
            line["fastest_peer_rel_err"] = fastest.get("max_rel_err_interior")
            line["faster_than_peers"] = "yes" if ours["x_c"] < fastest["x_c"] else "no"
        summary.append(line)
    return summary


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             f"Grid: {result['points']} points per task; reference: mpmath at "
             f"{reference_laws.DPS} digits (benchmarks/reference_laws.py). Times cover "
             "building a new law and evaluating the density on the grid; C = 10⁴ batched "
             "3×3 `numpy.linalg.eigvals`, timed right before each row; × C = min / C min.", ""]
    for peer, reason in result["skipped_peers"].items():
        lines.append(f"- {peer} skipped: {reason}")
    if result["skipped_peers"]:
        lines.append("")
    columns = [("task", "task", ""), ("library", "library", ""),
               ("cold_ms", "first call (ms)", ".3g"), ("min_ms", "min (ms)", ".3g"),
               ("median_ms", "median (ms)", ".3g"), ("baseline_ms", "C (ms)", ".3g"),
               ("x_c", "× C", ".3g"), ("bands_found", "bands", ""),
               ("band_source", "bands from", ""), ("max_edge_err", "max edge error", ".1e"),
               ("max_rel_err_interior", "max rel. error (interior)", ".1e"),
               ("median_rel_err_interior", "median rel. error (interior)", ".1e"),
               ("points_off_interior", "interior points off by > 1%", "d"),
               ("max_abs_err", "max abs. error (grid)", ".1e"), ("note", "note", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    lines += ["", f"Targets for the four composed tasks: max rel. error ≤ {TARGET_REL_ERR:g}, "
              f"every band found, new law + density ≤ {TARGET_X_C:g} C, faster than the "
              "fastest peer (both as × C).", ""]
    columns = [("task", "task", ""), ("freeattn_ms", "freeattn min (ms)", ".3g"),
               ("freeattn_x_c", "freeattn × C", ".3g"),
               ("max_rel_err_interior", "freeattn max rel. error", ".1e"),
               ("bands_ok", "bands found", ""), ("meets_accuracy", "≤ 1e-12", ""),
               ("meets_speed", f"≤ {TARGET_X_C:g} C", ""),
               ("fastest_peer", "fastest peer", ""), ("fastest_peer_x_c", "its × C", ".3g"),
               ("fastest_peer_rel_err", "its max rel. error", ".1e"),
               ("faster_than_peers", "freeattn faster", "")]
    lines.append(_common.markdown_table(columns, result["summary"]))
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
        print(f"[peers] freeattn: {task['label']} ...", flush=True)
        rows.append(run_freeattn(task, args.repeat, args.quick))
        if task["task"] == "mp_density":
            rows.append(run_closed_form(task, args.repeat, args.quick))
        for peer, python in pythons.items():
            print(f"[peers] {peer}: {task['label']} ...", flush=True)
            rows.append(run_peer(python, peer, task, args.repeat, args.quick))
    add_columns(rows)
    result = {"benchmark": "peers", "quick": args.quick, "machine": _common.machine_info(),
              "points": points, "peers": peers, "skipped_peers": skipped, "rows": rows,
              "summary": summarize(rows, task_list)}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
