"""Finite-size study of causal attention: C (softmax) against Y_c (masked linear model).

Run ``python benchmarks/causal_finite_n.py`` (``--quick`` for a small smoke run).
Writes ``benchmarks/results/causal_finite_n.json`` and prints a markdown table.
The numbers are quoted in theory/10_causal.md, section 10.9.

For each ``beta`` in (0.5, 1, 1.5), ``gamma = 1`` and ``n`` in (500, 1000, 2000)
(and 4000 with ``--large``):

- ``R`` independent draws of ``C = diag(1..n)(A - M)/sqrt(n)`` and ``R`` of
  ``Y_c = L * (beta S + alpha W)/sqrt(n)`` (independent seeds), pooled;
- ``ks_C_Yc``: the two-sample Kolmogorov distance between the pools;
- ``ks_Yc_Yc``: the same between two independent pools of ``Y_c`` (the
  noise floor of the two-sample statistic at this ``n`` and ``R``);
- ``ks_C`` and ``ks_Yc``: the floor-aware distance of each pool to the
  limiting law (theory eq. (7.15), ``freeattn.montecarlo._statistics``), on
  ``x >= floor = 10 n eps max`` with the mass below the floor counted: below it
  squared singular values of a triangular matrix are not resolved in float64
  (they are counted correctly, not placed); the CDF is ``causal_law``'s
  (within 1e-13 of the exact CDF of eq. (10.13));
- ``above_edge``: the fraction of eigenvalues of ``C`` above the limiting edge;
- the rate of ``ks_C_Yc`` in ``n`` (``scipy.stats.linregress`` on log-log).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np
import scipy.stats

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402


def ks_two(a, b):
    return float(scipy.stats.ks_2samp(a, b).statistic)


def ks_law(ev, cdf, floor):
    """Floor-aware Kolmogorov distance, theory eq. (7.15)."""
    from freeattn.montecarlo._statistics import ks_distance_above_floor

    ev = np.sort(ev)
    return ks_distance_above_floor(ev, cdf(ev), floor, float(cdf(floor)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--large", action="store_true",
                        help="also n = 4000 with one draw per pool (minutes per beta)")
    parser.add_argument("--json", default=str(_common.RESULTS_DIR / "causal_finite_n.json"))
    args = parser.parse_args(argv)
    import freeattn
    import freeattn.attention._causal as causal
    from freeattn.montecarlo._causal_sampling import causal_spectrum
    from freeattn.montecarlo._statistics import resolution_floor

    betas = (1.0,) if args.quick else (0.5, 1.0, 1.5)
    sizes = ((100, 2), (200, 2)) if args.quick else ((500, 8), (1000, 4), (2000, 2))
    if args.large and not args.quick:
        sizes += ((4000, 1),)
    rows = []
    for beta in betas:
        edge = causal.causal_edge(beta, 1.0)

        cdf = freeattn.causal_law(beta, 1.0).cdf

        for n, reps in sizes:
            t0 = time.perf_counter()
            seed = int(1000 * beta) * 100_000 + n
            pools = {}
            for name, model, offset in (("C", "causal", 0), ("Yc", "causal_linear", 1),
                                        ("Yc2", "causal_linear", 2)):
                pools[name] = np.concatenate([
                    causal_spectrum(model, n, n, beta, rng=[seed, offset, r]) for r in range(reps)])
            floor = resolution_floor(n, max(p.max() for p in pools.values()))
            row = dict(beta=beta, n=n, draws=reps, edge=edge, floor=floor,
                       ks_C_Yc=ks_two(pools["C"], pools["Yc"]),
                       ks_Yc_Yc=ks_two(pools["Yc"], pools["Yc2"]),
                       ks_C=ks_law(pools["C"], cdf, floor),
                       ks_Yc=ks_law(pools["Yc"], cdf, floor),
                       above_edge_C=float(np.mean(pools["C"] > edge)),
                       above_edge_Yc=float(np.mean(pools["Yc"] > edge)),
                       max_C=float(pools["C"].max()), max_Yc=float(pools["Yc"].max()),
                       seconds=time.perf_counter() - t0)
            rows.append(row)
            print(json.dumps(row), flush=True)
    rates = {}
    for beta in betas:
        sel = [r for r in rows if r["beta"] == beta]
        fit = scipy.stats.linregress(np.log([r["n"] for r in sel]), np.log([r["ks_C_Yc"] for r in sel]))
        rates[str(beta)] = dict(slope=fit.slope, stderr=fit.stderr)
    out = dict(machine=_common.machine_info() if hasattr(_common, "machine_info") else {},
               rows=rows, rates=rates)
    pathlib.Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    print("| beta | n | draws | KS(C, Y_c) | KS(Y_c, Y_c') | KS(C, law) | KS(Y_c, law) | C above edge |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['beta']} | {r['n']} | {r['draws']} | {r['ks_C_Yc']:.4f} | {r['ks_Yc_Yc']:.4f} | "
              f"{r['ks_C']:.4f} | {r['ks_Yc']:.4f} | {100 * r['above_edge_C']:.2f}% |")
    for beta, fit in rates.items():
        print(f"beta={beta}: KS(C, Y_c) ~ n^{fit['slope']:.2f} (+- {fit['stderr']:.2f})")


if __name__ == "__main__":
    main()
