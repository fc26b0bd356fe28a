"""Speed of the causal law: a new law + density on 10^4 points, and the edge.

Run ``python benchmarks/bench_causal.py`` (``--quick`` for a seconds-long smoke run).

For each ``(beta, gamma)`` it times, with :mod:`timeit` (min and median of repeats),
always *cold* (every call at a ``beta`` perturbed by a relative ``k * 1e-12``, so
no cache inside freeattn can answer and the time includes building the law):

- ``pdf (interpolant)``: a new law, its density at ~130 Chebyshev nodes (exact
  solver, ``freeattn._causal.causal_density``) and a piecewise Chebyshev
  interpolant of it (``density/sqrt(edge distance)`` in ``sqrt(edge distance)``
  next to each square-root edge, ``lambda * density`` in ``log lambda`` towards the
  log end at 0), evaluated on 10^4 points spanning the support (target <= 1 s) --
  the work the spectral-law base will do, done here until the base lands; the
  maximum relative error of the interpolant against the exact density at 50
  random points is reported;
- ``pdf (exact, 300 points)``: the density from the solver on 300 points of a
  new law (what the interpolant costs, minus its evaluation);
- ``edge``: ``causal_edge`` of a new law (target <= 0.2 s).

Baseline, measured in the same run: ``numpy.linalg.eigvals`` of a fixed batch of
10^4 companion matrices (3 x 3), as in ``bench_law.py``; ratios are cold min /
baseline min.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

CASES = ((0.5, 1.0), (1.0, 1.0), (1.5, 1.0), (1.0, 0.3), (2.0, 5.0))
QUICK_CASES = ((1.0, 1.0),)
POINTS = 10_000
QUICK_POINTS = 200
TARGET_S = {"pdf (interpolant)": 1.0, "pdf (exact, 300 points)": None, "edge": 0.2}
DEFAULT_JSON = "bench_causal.json"
# Chebyshev degrees of the two charts of each interval (see module docstring).
DEGREE_EDGE = 48
DEGREE_LOG = 80
LOG_FLOOR = -30.0      # lambda/theta1 below exp(LOG_FLOOR) is solved exactly


def _companion_batch(points):
    coeffs = np.random.default_rng(20261129).standard_normal((points, 3))
    batch = np.zeros((points, 3, 3))
    batch[:, 0, :] = -coeffs
    batch[:, 1, 0] = 1.0
    batch[:, 2, 1] = 1.0
    return batch


def interpolant(beta, gamma):
    """A piecewise Chebyshev interpolant of the density of a new causal law."""
    from numpy.polynomial import Chebyshev

    from freeattn import _causal

    support = _causal.causal_support(beta, gamma)
    pieces = []
    charts = []
    for lo, hi in support.intervals:
        if lo == 0.0:
            split = 0.25 * hi
            charts.append(("log", math.log(hi) + LOG_FLOOR, math.log(split), lo, hi))
            charts.append(("top", 0.0, math.sqrt(hi - split), lo, hi))
        else:
            mid = 0.5 * (lo + hi)
            charts.append(("bottom", 0.0, math.sqrt(mid - lo), lo, hi))
            charts.append(("top", 0.0, math.sqrt(hi - mid), lo, hi))
    # one batched exact call for the nodes of all charts
    nodes, owners = [], []
    for k, (kind, a, b, lo, hi) in enumerate(charts):
        deg = DEGREE_LOG if kind == "log" else DEGREE_EDGE
        t = np.cos(np.pi * (np.arange(deg + 1) + 0.5) / (deg + 1))
        s = 0.5 * (a + b) + 0.5 * (b - a) * t
        x = np.exp(s) if kind == "log" else (hi - s * s if kind == "top" else lo + s * s)
        nodes.append(x)
        owners.append((k, s, deg))
    values = _causal.causal_density(beta, gamma, np.concatenate(nodes))
    start = 0
    for (k, s, deg), x in zip(owners, nodes):
        kind, a, b, lo, hi = charts[k]
        v = values[start:start + x.size]
        start += x.size
        f = v * x if kind == "log" else v / s
        pieces.append((kind, a, b, lo, hi, Chebyshev.fit(s, f, deg, domain=[a, b])))

    def pdf(x):
        x = np.asarray(x, dtype=float)
        out = np.zeros_like(x)
        done = np.zeros(x.shape, bool)
        for kind, a, b, lo, hi, series in pieces:
            if kind == "log":
                sel = (x > math.exp(a)) & (x <= math.exp(b)) & ~done
                out[sel] = series(np.log(x[sel])) / x[sel]
            elif kind == "top":
                s = np.sqrt(np.clip(hi - x, 0.0, None))
                sel = (x <= hi) & (s <= b) & (x > lo) & ~done
                out[sel] = series(s[sel]) * s[sel]
            else:
                s = np.sqrt(np.clip(x - lo, 0.0, None))
                sel = (x >= lo) & (s <= b) & ~done
                out[sel] = series(s[sel]) * s[sel]
            done |= sel
        tiny = (x > 0) & ~done & (x < support.intervals[0][1])
        if tiny.any():
            out[tiny] = _causal.causal_density(beta, gamma, x[tiny])
        return out

    return pdf, support


def measure_case(beta, gamma, points, repeat, quick):
    from freeattn import _causal

    rows = []
    support = _causal.causal_support(beta, gamma)
    x = np.linspace(0.0, support.upper, points)
    x300 = np.linspace(0.0, support.upper, 300)[1:-1]

    def pdf_interp():
        pdf, _ = interpolant(_common.cold_value(beta), gamma)
        return pdf(x)

    def pdf_exact():
        return _causal.causal_density(_common.cold_value(beta), gamma, x300)

    def edge():
        return _causal.causal_edge(_common.cold_value(beta), gamma)

    # accuracy of the interpolant against the exact solver at 50 random interior points
    pdf, _ = interpolant(beta, gamma)
    probe = np.sort(np.random.default_rng(7).uniform(1e-3, 0.999, 50 if not quick else 5)) * support.upper
    exact = _causal.causal_density(beta, gamma, probe)
    keep = exact > 0
    err = float(np.max(np.abs(pdf(probe[keep]) / exact[keep] - 1.0)))
    for task, func in (("pdf (interpolant)", pdf_interp), ("pdf (exact, 300 points)", pdf_exact),
                       ("edge", edge)):
        row = {"task": task, "beta": beta, "gamma": gamma, "target_s": TARGET_S[task]}
        try:
            row["cold"] = _common.time_call(func, repeat=repeat, quick=quick)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        if task == "pdf (interpolant)":
            row["max_rel_error"] = err
        rows.append(row)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    points = QUICK_POINTS if args.quick else POINTS
    cases = QUICK_CASES if args.quick else CASES
    repeat = 1 if args.quick else min(args.repeat, 3)
    rows = []
    companions = _companion_batch(points)
    for beta, gamma in cases:
        base = _common.time_call(lambda: np.linalg.eigvals(companions), repeat=args.repeat,
                                 quick=args.quick)
        for row in measure_case(beta, gamma, points, repeat, args.quick):
            row["baseline_ms"] = 1e3 * base["min"]
            if "cold" in row:
                row["cold_min_s"] = row["cold"]["min"]
                row["cold_median_s"] = row["cold"]["median"]
                row["ratio"] = row["cold"]["min"] / base["min"]
                if row["target_s"] is not None:
                    row["meets_target"] = "yes" if row["cold_median_s"] <= row["target_s"] else "no"
            rows.append(row)
    result = {"benchmark": "causal", "quick": args.quick, "machine": _common.machine_info(),
              "points": points, "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             f"Cold calls (a new law each time). pdf (interpolant): new law + density on "
             f"{result['points']} points through a piecewise Chebyshev interpolant of ~130 exact "
             "values; max rel. error of the interpolant at 50 random interior points. Ratio: "
             "cold min / (10^4 batched 3x3 eigvals) min, timed in the same run.", ""]
    columns = [("task", "task", ""), ("beta", "beta", "g"), ("gamma", "gamma", "g"),
               ("cold_min_s", "cold min (s)", ".3f"), ("cold_median_s", "cold median (s)", ".3f"),
               ("baseline_ms", "eigvals 10^4 3x3 (ms)", ".2f"), ("ratio", "× baseline", ".0f"),
               ("max_rel_error", "interp. max rel. err", ".1e"), ("target_s", "target (s)", "g"),
               ("meets_target", "≤ target", ""), ("error", "error", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
