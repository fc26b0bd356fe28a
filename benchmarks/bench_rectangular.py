"""Speed of the rectangular free additive convolution (theory note 16): a new law + pdf on 2000 points.

Run ``python benchmarks/bench_rectangular.py`` (``--quick``: one case, 50 points, one
timing, for the smoke test).  Every time is a ratio to C, one batched LAPACK
``numpy.linalg.eigvals`` call on 10^4 companion 3 x 3 matrices
(``_common.time_eigvals_baseline``), timed in the same run right before each case.

Cases (``rectangular_free_additive(a, b, ratio)``):

* ``MP_sv(1, 1/2) ⊞_1/2 MP_sv(1, 1/2)`` and ``MP_sv(1, 1) ⊞_1 MP_sv(1, 1)``: two
  Gaussian matrices, whose sum is the Gaussian law of variance 2 (theory eq. (16.13));
  the row also reports the largest relative error of the density against that
  closed form at interior points (5% to 95% of the support);
* ``point_masses([1, 3], [0.3, 0.7]) ⊞_0.3 MP_sv(0.09, 0.3)``: information plus
  noise with two bands (eq. (16.14));
* ``point_masses([1/2, 3/2]) ⊞_1/2 point_masses([1])``: two discrete laws (the Monte
  Carlo case of tests/test_rectangular.py);
* full runs only: ``attention_law(1, 1) ⊞_1 MP_sv(1/4, 1)``, the singular values of
  attention plus Gaussian noise, the use the convolution was built for.

Each timed call builds a new law (*cold*: a variance or an atom perturbed by
``_common.cold_value``, so no cache answers), finds its support and evaluates ``pdf``
on 2000 points spanning the support and 5% beyond each end.  Ratios are min over min.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

POINTS = 2000
QUICK_POINTS = 50
# The grid extends this fraction of the support's width beyond each edge.
GRID_OVERHANG = 0.05
# Interior points (fractions of the support) where the Gaussian cases are checked.
CHECK_FRACTIONS = np.linspace(0.05, 0.95, 19)
DEFAULT_JSON = "bench_rectangular.json"


def cases(quick):
    """``[(name, builder(cold), closed form or None)]``; ``cold`` perturbs a parameter."""
    import freeattn as fa

    def sv(variance, ratio):
        return fa.marchenko_pastur(variance, ratio).singular_values()

    def gauss(ratio):
        def build(cold):
            v = _common.cold_value(1.0) if cold else 1.0
            return fa.rectangular_free_additive(sv(v, ratio), sv(1.0, ratio), ratio)
        return build, (lambda: sv(2.0, ratio))

    def ipn(cold):
        v = _common.cold_value(0.09) if cold else 0.09
        return fa.rectangular_free_additive(fa.point_masses([1.0, 3.0], [0.3, 0.7]),
                                            sv(v, 0.3), 0.3)

    def atoms(cold):
        lo = _common.cold_value(0.5) if cold else 0.5
        return fa.rectangular_free_additive(fa.point_masses([lo, 1.5]),
                                            fa.point_masses([1.0]), 0.5)

    def attention(cold):
        v = _common.cold_value(0.25) if cold else 0.25
        return fa.rectangular_free_additive(fa.attention_law(1.0, 1.0), sv(v, 1.0), 1.0)

    g_half, g_half_ref = gauss(0.5)
    g_one, g_one_ref = gauss(1.0)
    out = [("MP_sv(1, 1/2) ⊞_1/2 MP_sv(1, 1/2)", g_half, g_half_ref)]
    if quick:
        return out
    return out + [("MP_sv(1, 1) ⊞_1 MP_sv(1, 1)", g_one, g_one_ref),
                  ("atoms [1, 3] ⊞_0.3 MP_sv(0.09, 0.3)", ipn, None),
                  ("atoms [1/2, 3/2] ⊞_1/2 atom [1]", atoms, None),
                  ("attention_law(1, 1) ⊞_1 MP_sv(1/4, 1)", attention, None)]


def measure(name, build, reference, points, repeat, quick):
    """One row: C, then a new law + pdf on ``points`` points; the error for a closed form."""
    row = {"law": name, "points": points}
    try:
        law = build(False)
        lo, hi = law.support()
        width = hi - lo
        x = np.linspace(lo - GRID_OVERHANG * width, hi + GRID_OVERHANG * width, points)
        row["bands"] = len(law.intervals())
        if reference is not None:
            ref = reference()
            s = lo + CHECK_FRACTIONS * width
            row["max_rel_error"] = float(np.max(np.abs(law.pdf(s) / ref.pdf(s) - 1.0)))

        def call():
            new = build(True)
            new.support()
            return new.pdf(x)
        row["baseline_time"] = _common.time_eigvals_baseline(repeat=repeat, quick=quick)
        row["time"] = _common.time_call(call, repeat=repeat, quick=quick)
    except Exception as exc:  # reported in the table, the other cases still run
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def add_ratios(rows):
    for row in rows:
        if "time" not in row:
            continue
        row["min_ms"] = 1e3 * row["time"]["min"]
        row["median_ms"] = 1e3 * row["time"]["median"]
        row["c_ms"] = 1e3 * row["baseline_time"]["min"]
        row["ratio"] = row["time"]["min"] / row["baseline_time"]["min"]


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             "A new law + its density on "
             f"{result['points']} points (cold: a parameter perturbed at every call). C: one "
             f"`numpy.linalg.eigvals` call on {_common.BASELINE_POINTS} companion 3 x 3 "
             "matrices, timed right before each case; `× C` = min / C's min. Error: largest "
             "relative difference of the density from the closed form at interior points.",
             ""]
    columns = [("law", "law", ""), ("bands", "bands", "d"), ("min_ms", "min (ms)", ".1f"),
               ("median_ms", "median (ms)", ".1f"), ("c_ms", "C (ms)", ".2f"),
               ("ratio", "× C", ".1f"), ("max_rel_error", "error", ".1e"),
               ("error", "failure", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    points = QUICK_POINTS if args.quick else POINTS
    rows = [measure(name, build, ref, points, args.repeat, args.quick)
            for name, build, ref in cases(args.quick)]
    add_ratios(rows)
    result = {"benchmark": "rectangular", "quick": args.quick, "points": points,
              "rows": rows, "machine": _common.machine_info()}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
