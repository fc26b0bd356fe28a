"""Speed of the causal law: a new law + density on 10^4 points, and the edge.

Run ``python benchmarks/bench_causal.py`` (``--quick`` for a seconds-long smoke run).

For each ``(beta, gamma)`` it times, with :mod:`timeit` (min and median of repeats),
always *cold* (every call at a ``beta`` perturbed by a relative ``k * 1e-12``, so
no cache inside freeattn can answer and the time includes building the law):

- ``law + pdf``: ``freeattn.causal_law`` of a new ``beta`` (support, continuation
  atlas, the piecewise-Chebyshev representation of theory eqs. (8.14)-(8.18)) and
  its ``pdf`` on 10^4 points spanning the support (target <= 1 s);
- ``pdf (exact, 300 points)``: the density from the solver on 300 points of a
  new law (``freeattn.attention._causal.causal_density``);
- ``edge``: ``causal_edge`` of a new law (target <= 0.2 s).

Accuracy of the law (built once per case, not timed): the largest relative error
of ``law.pdf`` against the solver's density (``causal_density``) at 50 random
interior points and at ``theta1 * 1e-3, 1e-6, 1e-12, 1e-30`` (log end); the
largest absolute error of ``law.cdf`` against the exact CDF of the log
potential (theory eq. (10.13), ``causal_cdf``) at the same points; and
``max |cdf(ppf(q)) - q|`` on 200 levels.

Baseline, measured in the same run: ``numpy.linalg.eigvals`` of a fixed batch of
10^4 companion matrices (3 x 3), as in ``bench_law.py``; ratios are cold min /
baseline min.  To compare two versions of freeattn, run the script with each on
``PYTHONPATH``: each run times its own baseline.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

CASES = ((0.5, 1.0), (1.0, 1.0), (1.5, 1.0), (1.0, 0.3), (2.0, 5.0))
QUICK_CASES = ((1.0, 1.0),)
POINTS = 10_000
QUICK_POINTS = 200
TARGET_S = {"law + pdf": 1.0, "pdf (exact, 300 points)": None, "edge": 0.2}
DEFAULT_JSON = "bench_causal.json"
PROBES = 50
LOG_END_PROBES = (1e-3, 1e-6, 1e-12, 1e-30)


def _companion_batch(points):
    coeffs = np.random.default_rng(20261129).standard_normal((points, 3))
    batch = np.zeros((points, 3, 3))
    batch[:, 0, :] = -coeffs
    batch[:, 1, 0] = 1.0
    batch[:, 2, 1] = 1.0
    return batch


def accuracy(beta, gamma, probes):
    """Errors of ``causal_law`` against the solver (density) and eq. (10.13) (CDF)."""
    import freeattn
    from freeattn.attention import _causal

    law = freeattn.causal_law(beta, gamma)
    theta1 = float(np.expm1(beta * beta))
    ivs = law.intervals()
    upper = law.support()[1]
    x = np.sort(np.random.default_rng(7).uniform(1e-3, 0.999, probes)) * upper
    x = np.concatenate([theta1 * np.array(LOG_END_PROBES), x])
    x = x[[any(lo < v < hi for lo, hi in ivs) for v in x]]
    dens = _causal.causal_density(beta, gamma, x)
    pdf_err = float(np.max(np.abs(law.pdf(x) / dens - 1.0)))
    cdf_err = float(np.max(np.abs(law.cdf(x) - _causal.causal_cdf(beta, gamma, x))))
    q = np.linspace(0.002, 0.998, 200)
    ppf_err = float(np.max(np.abs(law.cdf(law.ppf(q)) - q)))
    return {"pdf_rel_error": pdf_err, "cdf_abs_error": cdf_err, "cdf_ppf_error": ppf_err}


def measure_case(beta, gamma, points, repeat, quick):
    import freeattn
    from freeattn.attention import _causal

    rows = []
    support = _causal.causal_support(beta, gamma)
    x = np.linspace(0.0, support.upper, points)
    x300 = np.linspace(0.0, support.upper, 300)[1:-1]

    def law_pdf():
        return freeattn.causal_law(_common.cold_value(beta), gamma).pdf(x)

    def pdf_exact():
        return _causal.causal_density(_common.cold_value(beta), gamma, x300)

    def edge():
        return _causal.causal_edge(_common.cold_value(beta), gamma)

    acc = accuracy(beta, gamma, 5 if quick else PROBES)
    for task, func in (("law + pdf", law_pdf), ("pdf (exact, 300 points)", pdf_exact),
                       ("edge", edge)):
        row = {"task": task, "beta": beta, "gamma": gamma, "target_s": TARGET_S[task]}
        try:
            row["cold"] = _common.time_call(func, repeat=repeat, quick=quick)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        if task == "law + pdf":
            row.update(acc)
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
             f"Cold calls (a new law each time). law + pdf: freeattn.causal_law and its pdf on "
             f"{result['points']} points. Errors of that law: pdf relative to the solver's "
             "density, cdf absolute to the exact CDF (eq. (10.13)), at 50 random interior "
             "points and 4 log-end points; |cdf(ppf(q)) - q| on 200 levels. Ratio: "
             "cold min / (10^4 batched 3x3 eigvals) min, timed in the same run.", ""]
    columns = [("task", "task", ""), ("beta", "beta", "g"), ("gamma", "gamma", "g"),
               ("cold_min_s", "cold min (s)", ".3f"), ("cold_median_s", "cold median (s)", ".3f"),
               ("baseline_ms", "eigvals 10^4 3x3 (ms)", ".2f"), ("ratio", "× baseline", ".0f"),
               ("pdf_rel_error", "pdf rel. err", ".1e"), ("cdf_abs_error", "cdf abs. err", ".1e"),
               ("cdf_ppf_error", "cdf(ppf) err", ".1e"), ("target_s", "target (s)", "g"),
               ("meets_target", "≤ target", ""), ("error", "error", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
