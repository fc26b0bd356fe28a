"""Finite head width: the paper's law and the harmonic Gaussian equivalent against softmax attention.

Run ``python benchmarks/finite_width.py [--quick]``.  For each ``(n, d, beta)``
it samples softmax attention ``sqrt(n)(A - 11^T/n)`` (``draws`` draws, seeds
``1..draws``) and reports, as two-sample / one-sample Kolmogorov distances of
the pooled squared singular values:

- ``paper``: the paper's law, ``attention_law(beta, d/n).squared()``
  (one-sample KS);
- ``gaussian``: :func:`freeattn.finite_width_law` with ``noise="gaussian"``
  (the harmonic Gaussian equivalent, theory eq. (15.6)), ``draws`` draws on
  ``rng=1000``, two-sample KS;
- ``signed``: the same with ``noise="signed"`` (the default, eq. (15.8));
- ``noise``: the two-sample KS between attention on seeds ``1..draws`` and on
  seeds ``2001..`` (the Monte Carlo noise floor of the two model columns);

and the seconds one draw of the default (signed) predictor takes (one thread).  The table is the one
in ``docs/finite_width.md`` and theory note 15, section 15.4; the JSON goes to
``benchmarks/results/finite_width.json``.

``--narrow`` instead measures the narrow heads of theory section 15.5 with degree 3
kept as a Gaussian product (``exact_degrees=3``, theory eq. (15.10)) next to the default
(``exact_degrees=2``), both noises, at ``(512, 16, 0.5)``, ``(512, 16, 1.0)`` and
``(256, 8, 0.5)`` (JSON: ``benchmarks/results/finite_width_narrow.json``), with the CPU
time of one draw of each signed predictor as a ratio to C (10^4 batched 3 x 3 LAPACK
``eigvals``, ``benchmarks/_common.py``, timed in the same run with ``time.process_time``).

``--sequence`` instead runs :func:`freeattn.validate` on the sequence of approximations
of theory section 15.3 and the harmonic models (registry models ``hermite2``,
``hermite3``, ``row_variance``, ``harmonic_equivalent``, ``harmonic_signed``, all compared
with sampled attention) and prints, per point, the two-sample KS of each to attention, the
paper's law's KS (attention's row) and the floor, as the report gives them (``draws``
draws, ``rng=2026``; JSON: ``benchmarks/results/finite_width_sequence.json``).

``--regime`` instead prints the points around the edges of the regime in which the
trained-model report uses the predictor (theory eq. (12.11),
``freeattn.interop._analyze.finite_width_regime``), without the Gaussian version, and with
``floor error``: ``|KS(signed, law) - KS(attention, law)|``, how far the finite-size floor
of theory eq. (12.12) computed from the predictor is from the one sampled from attention.
"""

import argparse
import json
import pathlib
import sys
import time

import numpy as np
from scipy.special import logsumexp
from scipy.stats import ks_2samp, kstest

import freeattn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _common  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
GRID = [(512, 16, 0.5), (512, 16, 1.0), (512, 32, 0.5), (512, 32, 1.0), (512, 32, 1.5),
        (512, 64, 0.5), (512, 64, 1.0), (512, 128, 1.0), (1024, 64, 0.5), (1024, 64, 1.0)]
QUICK = [(512, 32, 0.5), (512, 32, 1.0)]
SEQUENCE = [(512, 32, 0.5), (512, 32, 1.0), (512, 64, 1.0), (512, 16, 0.5)]
SEQUENCE_NAMES = ("hermite2", "hermite3", "row_variance", "harmonic_equivalent",
                  "harmonic_signed")
NARROW = [(512, 16, 0.5), (512, 16, 1.0), (256, 8, 0.5)]
REGIME = [(256, 32, 0.5), (256, 32, 1.0), (256, 32, 1.4), (256, 16, 0.5), (256, 16, 1.0),
          (256, 64, 1.0), (256, 128, 1.0), (512, 32, 1.4), (1024, 32, 1.0)]


def attention_spectrum(n, d, beta, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d))
    k = rng.standard_normal((n, d))
    logits = beta * (q @ k.T) / np.sqrt(d)
    a = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return freeattn.squared_singular_values(np.sqrt(n) * (a - 1.0 / n))


def row(n, d, beta, draws, *, gaussian=True):
    att = np.concatenate([attention_spectrum(n, d, beta, s) for s in range(1, draws + 1)])
    other = np.concatenate([attention_spectrum(n, d, beta, 2000 + s)
                            for s in range(1, draws + 1)])
    paper = freeattn.attention_law(beta, d / n).squared()
    start = time.perf_counter()
    signed = freeattn.finite_width_law(beta, n=n, d=d, draws=draws, noise="signed", rng=1000)
    seconds = (time.perf_counter() - start) / draws
    out = {"n": n, "d": d, "beta": beta, "draws": draws,
           "paper": float(kstest(att, paper.cdf).statistic),
           "signed": float(ks_2samp(att, signed.values).statistic),
           "noise": float(ks_2samp(att, other).statistic),
           "floor_error": abs(float(kstest(signed.values, paper.cdf).statistic)
                              - float(kstest(att, paper.cdf).statistic)),
           "seconds_per_draw": seconds}
    if gaussian:
        law = freeattn.finite_width_law(beta, n=n, d=d, draws=draws, noise="gaussian", rng=1000)
        out["gaussian"] = float(ks_2samp(att, law.values).statistic)
    return out


def _cpu_seconds(func, repeat=3):
    """Least CPU time (``time.process_time``) of ``repeat`` calls of ``func``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        func()
        best = min(best, time.process_time() - start)
    return best


def narrow_row(n, d, beta, draws):
    """KS to attention of the harmonic models with ``exact_degrees`` 2 and 3 (eq. (15.10))."""
    att = np.concatenate([attention_spectrum(n, d, beta, s) for s in range(1, draws + 1)])
    other = np.concatenate([attention_spectrum(n, d, beta, 2000 + s)
                            for s in range(1, draws + 1)])
    out = {"n": n, "d": d, "beta": beta, "draws": draws,
           "N2": freeattn.montecarlo._finite_width.harmonic_dimension(d, 2),
           "N3": freeattn.montecarlo._finite_width.harmonic_dimension(d, 3),
           "paper": float(kstest(att, freeattn.attention_law(beta, d / n).squared().cdf)
                          .statistic),
           "noise": float(ks_2samp(att, other).statistic)}
    for noise in ("gaussian", "signed"):
        for exact in (2, 3):
            law = freeattn.finite_width_law(beta, n=n, d=d, draws=draws, noise=noise,
                                            exact_degrees=exact, rng=1000)
            out[f"{noise}_{exact}"] = float(ks_2samp(att, law.values).statistic)
    baseline = _cpu_seconds(lambda: np.linalg.eigvals(_common.companion_batch()))
    for exact in (2, 3):
        seconds = _cpu_seconds(lambda: freeattn.finite_width_law(
            beta, n=n, d=d, draws=1, noise="signed", exact_degrees=exact, rng=7), repeat=2)
        out[f"draw_over_C_{exact}"] = seconds / baseline
    out["C_seconds"] = baseline
    return out


def narrow_table(draws, quick=False):
    """The rows of ``--narrow`` (theory section 15.5)."""
    print("| n | d | beta | N_2 | N_3 | paper's law | (15.6) | (15.6) + deg. 3 | (15.8) "
          "| (15.8) + deg. 3 | noise floor | draw / C (15.8) | draw / C (+ deg. 3) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n, d, beta in ([(64, 8, 0.5)] if quick else NARROW):
        r = narrow_row(n, d, beta, draws)
        rows.append(r)
        print(f"| {n} | {d} | {beta} | {r['N2']} | {r['N3']} | {r['paper']:.3f} | "
              f"{r['gaussian_2']:.3f} | {r['gaussian_3']:.3f} | {r['signed_2']:.3f} | "
              f"{r['signed_3']:.3f} | {r['noise']:.3f} | {r['draw_over_C_2']:.0f} | "
              f"{r['draw_over_C_3']:.0f} |", flush=True)
    return rows


def sequence_table(draws, quick=False):
    """The rows of ``--sequence``: what ``validate`` reports for theory section 15.3's models."""
    print("| n | d | beta | paper's law | + He_2 | + He_3 | (15.1) own row variance "
          "| (15.6) | (15.8) | floor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n, d, beta in ([(64, 16, 0.5)] if quick else SEQUENCE):
        report = freeattn.validate(beta, d / n, n, draws, models=SEQUENCE_NAMES, rng=2026,
                                   progress=False)
        r = {"n": n, "d": d, "beta": beta, "draws": draws,
             "paper": report.results["attention"].ks,
             "floor": report.results["harmonic_signed"].ks_compared_floor}
        r.update({m: report.results[m].ks_compared for m in SEQUENCE_NAMES})
        rows.append(r)
        print(f"| {n} | {d} | {beta} | {r['paper']:.3f} | "
              + " | ".join(f"{r[m]:.3f}" for m in SEQUENCE_NAMES)
              + f" | {r['floor']:.3f} |", flush=True)
    return rows


def regime_table(draws):
    """The rows of ``--regime``: the predictor around the edges of theory eq. (12.11)."""
    from freeattn.interop._analyze import finite_width_regime

    print("| n | d | beta | eq. (12.11) | paper's law | (15.8) signed | noise floor "
          "| floor error |")
    print("|---|---|---|---|---|---|---|---|")
    for n, d, beta in REGIME:
        r = row(n, d, beta, draws, gaussian=False)
        inside = "yes" if finite_width_regime(beta, n, d) else "no"
        print(f"| {n} | {d} | {beta} | {inside} | {r['paper']:.3f} | {r['signed']:.3f} | "
              f"{r['noise']:.3f} | {r['floor_error']:.3f} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two rows only")
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--regime", action="store_true",
                        help="the points around the edges of theory eq. (12.11) instead")
    parser.add_argument("--narrow", action="store_true",
                        help="narrow heads with degree 3 kept (theory eq. (15.10)) instead")
    parser.add_argument("--sequence", action="store_true",
                        help="validate's report for the models of theory section 15.3 instead")
    args = parser.parse_args(argv)
    if args.sequence:
        rows = sequence_table(args.draws, quick=args.quick)
        if not args.quick:
            (HERE / "results" / "finite_width_sequence.json").write_text(
                json.dumps({"machine": _common.machine_info(), "rows": rows}, indent=1))
        return 0
    if args.narrow:
        rows = narrow_table(args.draws, quick=args.quick)
        if not args.quick:
            (HERE / "results" / "finite_width_narrow.json").write_text(
                json.dumps({"machine": _common.machine_info(), "rows": rows}, indent=1))
        return 0
    if args.regime:
        regime_table(args.draws)
        return 0
    rows = []
    print("| n | d | beta | paper's law | (15.6) gaussian | (15.8) signed | noise floor "
          "| s / draw |")
    print("|---|---|---|---|---|---|---|---|")
    for n, d, beta in (QUICK if args.quick else GRID):
        r = row(n, d, beta, args.draws)
        rows.append(r)
        print(f"| {n} | {d} | {beta} | {r['paper']:.3f} | {r['gaussian']:.3f} | "
              f"{r['signed']:.3f} | {r['noise']:.3f} | {r['seconds_per_draw']:.2f} |", flush=True)
    if not args.quick:
        (HERE / "results" / "finite_width.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
