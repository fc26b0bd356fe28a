"""Bias and spread of ``freeattn.fit`` on real softmax attention (the tolerances of
tests/test_fit.py).

For each (n, beta) the script draws ``DRAWS`` independent attention matrices
``sqrt(n) (A - 11^T/n)`` at gamma = 1 (``freeattn.sample_model("attention", ...)``,
seeds 0..DRAWS-1), fits beta with gamma given (no bootstrap) and prints the mean
relative bias, the relative standard deviation and the largest relative error.
With ``--free-gamma`` it also fits gamma (``FREE_GAMMA_CASES``) and prints the
bias and spread of beta and of log gamma.
Run: ``python tests/reference/make_fit_calibration.py [--free-gamma]`` (a few minutes).
"""

import sys

import numpy as np

import freeattn

CASES = ((500, 0.5), (500, 1.0), (2000, 0.5), (2000, 1.0))
DRAWS = {500: 16, 2000: 8}
#: gamma fitted too (n = 500, d_qk = gamma n): (gamma, beta)
FREE_GAMMA_CASES = ((1.0, 0.5), (0.25, 0.5))
FREE_GAMMA_DRAWS = 6


def main():
    for n, beta in CASES:
        errors = []
        for seed in range(DRAWS[n]):
            y = freeattn.sample_model("attention", n, n, beta, rng=seed)
            result = freeattn.fit(freeattn.squared_singular_values(y), gamma=1.0, resamples=0)
            errors.append(result.beta / beta - 1.0)
        errors = np.array(errors)
        print(f"n={n} beta={beta}: draws={len(errors)} bias={errors.mean():+.4f} "
              f"sd={errors.std(ddof=1):.4f} max|err|={np.abs(errors).max():.4f}", flush=True)
    if "--free-gamma" not in sys.argv:
        return 0
    n = 500
    for gamma, beta in FREE_GAMMA_CASES:
        b_err, g_err = [], []
        for seed in range(FREE_GAMMA_DRAWS):
            y = freeattn.sample_model("attention", n, round(gamma * n), beta, rng=seed)
            result = freeattn.fit(freeattn.squared_singular_values(y), resamples=0)
            b_err.append(result.beta / beta - 1.0)
            g_err.append(np.log(result.gamma / gamma))
        b_err, g_err = np.array(b_err), np.array(g_err)
        print(f"free gamma n={n} gamma={gamma} beta={beta}: beta bias={b_err.mean():+.4f} "
              f"sd={b_err.std(ddof=1):.4f}; log gamma bias={g_err.mean():+.4f} "
              f"sd={g_err.std(ddof=1):.4f} max|log err|={np.abs(g_err).max():.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
