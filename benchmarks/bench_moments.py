"""Cost and accuracy of the exact moments of composed laws (theory section 8.10).

Run ``python benchmarks/bench_moments.py`` (``--quick``: one case at order 20, one
timing, for the smoke test).  Every time is a ratio to C, one batched LAPACK
``numpy.linalg.eigvals`` call on 10^4 companion 3 x 3 matrices
(``_common.time_eigvals_baseline``), timed in the same run right before each case.

Each timed call builds a new law (*cold*: a parameter perturbed by
``_common.cold_value``, so no cache answers, and the law is then in fixed point,
theory eq. (8.24)) and computes ``moment(k)``; the *exact* column times the law
with the parameter as given (rational parameters: exact arithmetic, eq. (8.22)).
Cases:

* ``MP(1, 1/2) ⊞ semicircle(1)``, orders 50, 100, 150, 200;
* ``semicircle(1/16) ⊞ (delta_-1 + delta_1)/2``, orders 100, 200;
* ``multihead_law(1, heads=4, gamma_k=gamma_v=1/2, gamma_o=1)``, orders 100, 150, 200
  (a four-level tower; no exact column: its parameters are transcendental).

The row also gives the relative error of the float64 recursion this replaced
(``free_cumulants_to_moments`` and ``moments_to_free_cumulants`` on floats) at
the same order, against the exact moment.  Ratios are min over min.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

DEFAULT_JSON = "bench_moments.json"
QUICK_ORDER = 20


def cases(quick):
    """``[(name, builder(cold), orders, has_exact, float_recursion or None)]``."""
    import freeattn as fa

    def mp_sc(cold):
        v = _common.cold_value(1.0) if cold else 1.0
        return fa.free_additive(fa.marchenko_pastur(v, 0.5), fa.semicircle(1.0))

    def sc_bern(cold):
        v = _common.cold_value(1 / 16) if cold else 1 / 16
        return fa.free_additive(fa.semicircle(v), fa.point_masses([-1.0, 1.0]))

    def multihead(cold):
        # beta, not a ratio: ratios within 1e-9 of a tie are snapped to it (and cached)
        b = _common.cold_value(1.0) if cold else 1.0
        return fa.multihead_law(b, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)

    def additive_float(a, b):
        def old(k):
            ka = fa.moments_to_free_cumulants(np.array([a.moment(j) for j in range(1, k + 1)]))
            kb = fa.moments_to_free_cumulants(np.array([b.moment(j) for j in range(1, k + 1)]))
            return float(fa.free_cumulants_to_moments(ka + kb)[k])
        return old

    mp_sc_old = additive_float(fa.marchenko_pastur(1.0, 0.5), fa.semicircle(1.0))
    sc_bern_old = additive_float(fa.semicircle(1 / 16), fa.point_masses([-1.0, 1.0]))
    if quick:
        return [("MP(1, 1/2) ⊞ semicircle(1)", mp_sc, [QUICK_ORDER], True, mp_sc_old)]
    return [("MP(1, 1/2) ⊞ semicircle(1)", mp_sc, [50, 100, 150, 200], True, mp_sc_old),
            ("semicircle(1/16) ⊞ Bernoulli", sc_bern, [100, 200], True, sc_bern_old),
            ("multihead_law(1, h=4, 1/2, 1/2, 1)", multihead, [100, 150, 200], False, None)]


def measure(name, build, k, has_exact, old, repeat, quick):
    """One row: C, then cold ``moment(k)`` (fixed point), the exact one, the old error."""
    row = {"law": name, "k": k}
    try:
        reference = build(False).moment(k)
        row["moment"] = reference
        if old is not None and reference != 0:
            row["float_recursion_error"] = abs(old(k) / reference - 1.0)
        row["baseline_time"] = _common.time_eigvals_baseline(repeat=repeat, quick=quick)
        row["time"] = _common.time_call(lambda: build(True).moment(k), repeat=repeat,
                                        quick=quick)
        if has_exact:
            # a new law each call: the leaves and compositions are new objects, so
            # their moment caches are empty
            row["exact_time"] = _common.time_call(lambda: build(False).moment(k),
                                                  repeat=repeat, quick=quick)
    except Exception as exc:  # reported in the table, the other cases still run
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def add_ratios(rows):
    for row in rows:
        if "time" not in row:
            continue
        row["min_ms"] = 1e3 * row["time"]["min"]
        row["c_ms"] = 1e3 * row["baseline_time"]["min"]
        row["ratio"] = row["time"]["min"] / row["baseline_time"]["min"]
        if "exact_time" in row:
            row["exact_ms"] = 1e3 * row["exact_time"]["min"]
            row["exact_ratio"] = row["exact_time"]["min"] / row["baseline_time"]["min"]


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             "`moment(k)` of a new law: fixed point (cold: a parameter perturbed at every "
             "call) and exact (the rational parameters, a new law at every call). C: one "
             f"`numpy.linalg.eigvals` call on {_common.BASELINE_POINTS} companion 3 x 3 "
             "matrices, timed right before each case; `× C` = min / C's min. Old error: "
             "relative error of the float64 cumulant recursion at the same order.", ""]
    columns = [("law", "law", ""), ("k", "k", "d"), ("moment", "m_k", ".6e"),
               ("min_ms", "fixed (ms)", ".1f"), ("ratio", "fixed × C", ".1f"),
               ("exact_ms", "exact (ms)", ".1f"), ("exact_ratio", "exact × C", ".1f"),
               ("c_ms", "C (ms)", ".2f"), ("float_recursion_error", "old error", ".1e"),
               ("error", "failure", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    args = parser.parse_args(argv)
    rows = [measure(name, build, k, has_exact, old, args.repeat, args.quick)
            for name, build, orders, has_exact, old in cases(args.quick) for k in orders]
    add_ratios(rows)
    result = {"benchmark": "moments", "quick": args.quick, "rows": rows,
              "machine": _common.machine_info()}
    return _common.publish(result, render, args, DEFAULT_JSON)


if __name__ == "__main__":
    main()
