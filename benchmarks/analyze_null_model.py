"""Noise of the finite-size null model (theory eq. (12.8)) at the geometries the tests use.

Prints, per (n, d, beta), the KS distance of the pooled null spectrum to the law over
independent seeds: mean, standard deviation, min and max.  The bands asserted in
tests/test_analyze.py come from this run (numbers in docs/analyze.md).

Run: PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/analyze_null_model.py
"""

import time

import numpy as np

from freeattn.interop._analyze import NULL_DRAWS, null_distance

CASES = [(512, 32, 1.0, NULL_DRAWS, 20), (2048, 128, 1.0, 1, 5), (256, 512, 1.0, NULL_DRAWS, 20),
         (1024, 32, 1.0, NULL_DRAWS, 5), (2048, 32, 1.0, 1, 5)]


def main():
    for n, d, beta, draws, seeds in CASES:
        start = time.process_time()
        ks = np.array([null_distance(n, d, beta, draws=draws, rng=seed) for seed in range(seeds)])
        cpu = (time.process_time() - start) / seeds
        print(f"n={n:5d} d={d:4d} beta={beta:.2f} draws={draws} seeds={seeds}: KS mean "
              f"{ks.mean():.4f} sd {ks.std(ddof=1):.4f} min {ks.min():.4f} max {ks.max():.4f} "
              f"({cpu:.2f} s CPU per seed)")


if __name__ == "__main__":
    main()
