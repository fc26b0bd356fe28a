"""Monte Carlo evidence of theory/13_stacks.md: two-sample KS distances between models.

Run:  PYTHONPATH=. python benchmarks/stack_evidence.py [n] [draws]

For each pair of registered models the squared singular values of ``draws``
seeded draws (structural zeros removed) are pooled and compared with
``scipy.stats.ks_2samp``; the noise floor is the KS distance between two
independent sets of draws of the same model (seeds 0.. and 1000..), reported
as the mean over three seed pairs.  Prints one line per comparison.
"""

import sys

import numpy as np
from scipy.stats import ks_2samp

from freeattn.montecarlo._models import iter_models, resolve_models


def pooled(models, n, beta, seeds, options):
    out = {m: [] for m in models}
    resolved = resolve_models(models)
    for seed in seeds:
        for model, matrix in iter_models(n, n, beta, resolved, seed, options=options):
            values = model.spectrum(matrix)
            out[model.name].append(values[model.zeros:])
    return {k: np.concatenate(v) for k, v in out.items()}


def ks(a, b):
    return ks_2samp(a, b, method="asymp").statistic


def main(n=400, draws=3):
    seeds_a = list(range(draws))
    seeds_b = list(range(1000, 1000 + draws))
    for beta in (1.0, 0.5):
        for layers in (2, 3):
            opts = {"layers": layers}
            names = ("stack", "stack_linear", "stack_residual", "stack_plain", "stack_pure")
            a = pooled(names, n, beta, seeds_a, opts)
            floor = np.mean([ks(pooled(("stack",), n, beta, [s], opts)["stack"],
                                pooled(("stack",), n, beta, [s + 500], opts)["stack"])
                             for s in range(3)]) / np.sqrt(draws)
            b = pooled(("stack",), n, beta, seeds_b, opts)["stack"]
            print(f"beta={beta} L={layers} n={n} draws={draws}: noise(stack vs stack)="
                  f"{ks(a['stack'], b):.4f} (1-draw floor/sqrt(draws) {floor:.4f}); "
                  + "; ".join(f"stack vs {k}={ks(a['stack'], a[k]):.4f}"
                              for k in names[1:]))
    for beta in (1.0, 0.5):
        names = ("linear", "tokens_rotated", "tokens_rotated_linear", "tokens_wishart",
                 "tokens_wishart_linear", "tokens_diagonal", "tokens_diagonal_linear")
        a = pooled(names, n, beta, seeds_a, {})
        b = pooled(names, n, beta, seeds_b, {})
        print(f"beta={beta} tokens n={n} draws={draws}: "
              + "; ".join(f"noise {k}={ks(a[k], b[k]):.4f}" for k in names[1::2]))
        for kind in ("rotated", "wishart", "diagonal"):
            att, lin = a[f"tokens_{kind}"], a[f"tokens_{kind}_linear"]
            print(f"  {kind}: attention vs linear={ks(att, lin):.4f}; "
                  f"linear vs isotropic linear={ks(lin, b['linear']):.4f}; "
                  f"attention vs isotropic linear={ks(att, b['linear']):.4f}")


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
