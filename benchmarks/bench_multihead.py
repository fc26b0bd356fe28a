"""Speed of the multi-head law: a new law + pdf on 10^4 points, against the single-head law.

Run ``python benchmarks/bench_multihead.py`` (``--quick`` for a seconds-long smoke run).

For each case ``(beta, heads, gamma_k, gamma_v, gamma_o)`` it times, with
:mod:`timeit` (min and median of repeats), two *cold* calls -- each builds a new
law for a ``beta`` perturbed by a relative ``k * 1e-12`` (``_common.cold_value``),
so no cache inside freeattn can answer:

- ``multihead``: ``freeattn.multihead_law(beta, heads=..., ...).pdf(x)`` on 10^4
  points spanning the law's support (theory eq. (9.13): a tower of three
  sample-covariance levels over the single-head population);
- ``single head``: ``freeattn.attention_law(beta, gamma_k).squared().pdf(x)`` on
  10^4 points spanning its support -- the single-head law's cost, timed right
  before, in the same run.

The ratio (multihead min / single-head min) is the figure to read; the target is
<= 5.  Only freeattn's public API is used.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

# The Monte Carlo case, its gamma_v <-> gamma_o swap, more heads with wide
# values, a hot two-head case (no atom), the geometry at small and large beta,
# and a square factor (h d_v = d_o < n: hard edge at 0, theory eq. (9.22)).
CASES = ((1.0, 4, 0.5, 0.5, 1.0), (1.0, 4, 0.5, 1.0, 0.5), (0.5, 8, 2.0, 4.0, 0.5),
         (2.0, 2, 0.2, 3.0, 1.5), (0.25, 4, 0.5, 0.5, 1.0), (3.0, 4, 0.5, 0.5, 1.0),
         (1.0, 4, 0.5, 0.5, 0.5))
QUICK_CASES = ((1.0, 4, 0.5, 0.5, 1.0),)
POINTS = 10_000
QUICK_POINTS = 200
TARGET_RATIO = 5.0
DEFAULT_JSON = "bench_multihead.json"


def measure_case(beta, heads, gamma_k, gamma_v, gamma_o, points, repeat, quick):
    """One row: cold multi-head law + pdf and cold single-head law + pdf."""
    import freeattn

    law = freeattn.multihead_law(beta, heads=heads, gamma_k=gamma_k, gamma_v=gamma_v,
                                 gamma_o=gamma_o)
    x_multi = np.linspace(*law.support(), points)
    single = freeattn.attention_law(beta, gamma_k).squared()
    x_single = np.linspace(*single.support(), points)

    def multihead():
        b = _common.cold_value(beta)
        return freeattn.multihead_law(b, heads=heads, gamma_k=gamma_k, gamma_v=gamma_v,
                                      gamma_o=gamma_o).pdf(x_multi)

    def single_head():
        return freeattn.attention_law(_common.cold_value(beta), gamma_k).squared().pdf(x_single)

    row = {"beta": beta, "heads": heads, "gamma_k": gamma_k, "gamma_v": gamma_v,
           "gamma_o": gamma_o, "points": points, "target_ratio": TARGET_RATIO}
    try:
        row["single"] = _common.time_call(single_head, repeat=repeat, quick=quick)
        row["multihead"] = _common.time_call(multihead, repeat=repeat, quick=quick)
    except Exception as exc:  # reported in the table, the other cases still run
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    row["single_min_ms"] = 1e3 * row["single"]["min"]
    row["multihead_min_ms"] = 1e3 * row["multihead"]["min"]
    row["multihead_median_ms"] = 1e3 * row["multihead"]["median"]
    row["ratio"] = row["multihead"]["min"] / row["single"]["min"]
    row["meets_target"] = "yes" if row["ratio"] <= TARGET_RATIO else "no"
    return row


def render(result):
    """The markdown of a run: machine line, how to read it, one table."""
    lines = [_common.machine_line(result["machine"]), "",
             f"New law + pdf on {result['points']} points spanning the support (cold: a new "
             "law per call). Ratio: multi-head min / single-head "
             "(attention_law(beta, gamma_k).squared()) min, timed in the same run.", ""]
    columns = [("beta", "beta", "g"), ("heads", "heads", "d"), ("gamma_k", "gamma_k", "g"),
               ("gamma_v", "gamma_v", "g"), ("gamma_o", "gamma_o", "g"),
               ("single_min_ms", "single head min (ms)", ".2f"),
               ("multihead_min_ms", "multi-head min (ms)", ".2f"),
               ("multihead_median_ms", "multi-head median (ms)", ".2f"),
               ("ratio", "ratio", ".2f"), ("target_ratio", "target", "g"),
               ("meets_target", "≤ target", ""), ("error", "error", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    points = QUICK_POINTS if args.quick else POINTS
    cases = QUICK_CASES if args.quick else CASES
    rows = [measure_case(*case, points, args.repeat, args.quick) for case in cases]
    result = {"benchmark": "multihead", "quick": args.quick,
              "machine": _common.machine_info(), "points": points, "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
