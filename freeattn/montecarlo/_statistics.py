"""Statistics of the Monte Carlo validation (theory/07_validation.md, eqs. (7.8)-(7.13)).

Pure functions of spectra and laws, no sampling: the bulk of a spectrum
(eq. (7.8)), the Kolmogorov and Wasserstein-1 distances of an empirical law
to a law's CDF (eqs. (7.9), (7.10)), the bootstrap over draws of their
sampling noise (eq. (7.11)), the i.i.d. critical value shown for comparison
(eq. (7.12)), means with standard errors over draws, the finite-size rate
fitted with :func:`scipy.stats.linregress` (eq. (7.13)), and the Kolmogorov
distance above the float64 resolution floor of a spectrum (eq. (7.15)).  SciPy is imported
inside the functions that use it.
"""

import math

import numpy as np

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "EDGE_MARGIN_WIDTHS",
    "MOMENT_ORDERS",
    "NOISE_LEVEL",
    "TOP_VALUES",
    "W1_GRID_POINTS",
    "bootstrap_noise",
    "FLOOR_MULTIPLE",
    "fit_rate",
    "ks_distance",
    "ks_distance_above_floor",
    "resolution_floor",
    "ks_iid_critical",
    "ks_two_sample",
    "mean_and_se",
    "split_bulk",
    "top_singular_values",
    "w1_distance",
]

#: An outlier must exceed the predicted edge by this many multiples of
#: ``n**(-2/3)`` (relative; the factor 3 of theory eq. (7.8)): the largest bulk
#: eigenvalue fluctuates on the Tracy-Widom scale ``n**(-2/3)``, so a value
#: within a few such widths of the edge is not evidence of an outlier.
EDGE_MARGIN_WIDTHS = 3.0

#: Number of bootstrap resamples (over draws) of the sampling-noise reference
#: (theory eq. (7.11)); 400 resamples put the Monte Carlo error of a 95%
#: quantile at about 1% of its value.
BOOTSTRAP_RESAMPLES = 400

#: Level of the sampling-noise references (one-sided, upper quantile; theory
#: eqs. (7.11), (7.12)).
NOISE_LEVEL = 0.95

# Bootstrap resamples are processed in chunks of at most this many
# (resample x point) entries, about 32 MB of float64 per temporary array.
_BOOTSTRAP_CHUNK_ENTRIES = 2 ** 22

#: Points of the uniform grid added to the sample points for the W1 integral
#: (theory eq. (7.10)), so the integrand is resolved where samples are sparse.
W1_GRID_POINTS = 2048

#: Largest singular values reported per model (mean over draws).
TOP_VALUES = 3

#: Orders of the bulk moments reported per model.
MOMENT_ORDERS = (1, 2, 3)


def split_bulk(values, n, squared_edge, *, zeros=0, common_mode=0, outliers=0):
    """Split one draw's spectrum into bulk and the values the theory excludes.

    Parameters
    ----------
    values : ndarray
        Ascending squared singular values of one draw.
    n : int
        Matrix size (sets the Tracy-Widom margin ``n**(-2/3)``).
    squared_edge : float
        Predicted upper edge of the limiting squared law (NaN: no outlier
        is removed).
    zeros, common_mode, outliers : int
        The model's structural zeros (removed from the bottom), common-mode
        values (removed from the top) and outlier budget (see ``freeattn.Model``).

    Returns
    -------
    bulk : ndarray
        The retained values, ascending.
    removed : int
        How many values were removed (theory eq. (7.8)): the structural zeros,
        the common mode, and those of the next ``outliers`` largest values
        that exceed ``squared_edge * (1 + EDGE_MARGIN_WIDTHS * n**(-2/3))``.

    Examples
    --------
    >>> bulk, removed = split_bulk(np.array([0.0, 1.0, 2.0, 9.0]), 4, 4.0, zeros=1, outliers=1)
    >>> bulk, removed
    (array([1., 2.]), 2)
    """
    threshold = squared_edge * (1.0 + EDGE_MARGIN_WIDTHS * n ** (-2.0 / 3.0))
    top = len(values) - common_mode
    candidates = values[top - outliers:top] if outliers else values[:0]
    removed_top = common_mode + int(np.count_nonzero(candidates > threshold))
    return values[zeros:len(values) - removed_top], zeros + removed_top


def ks_distance(cdf_sorted, cdf_left_sorted=None):
    """KS distance of sorted points given their theoretical CDF values (theory eq. (7.9)).

    ``max_i max(i/N - F(x_(i)), F(x_(i)-) - (i-1)/N)`` over the ``N`` values
    ``x_(1) <= ... <= x_(N)``, ``F(x-)`` the left limit of the CDF.

    Parameters
    ----------
    cdf_sorted : array_like
        ``F(x_(i))``, ascending.
    cdf_left_sorted : array_like, optional
        ``F(x_(i)-)``; differs from ``F(x_(i))`` only at an atom of the law (a
        tall model's law has one at 0).  Default: ``cdf_sorted`` (no atom).

    Examples
    --------
    >>> ks_distance(np.array([0.5]))        # one point at the median
    0.5
    >>> # law with an atom 1/2 at 0 (uniform above); points 0, 0, 1/2, 1
    >>> cdf = np.array([0.5, 0.5, 0.75, 1.0])
    >>> ks_distance(cdf, cdf - 0.5 * (np.arange(4) < 2))
    0.25
    """
    cdf_sorted = np.asarray(cdf_sorted, dtype=float)
    left = cdf_sorted if cdf_left_sorted is None else np.asarray(cdf_left_sorted, dtype=float)
    m = len(cdf_sorted)
    upper = np.arange(1, m + 1) / m
    return float(max(np.max(upper - cdf_sorted), np.max(left - (upper - 1.0 / m))))


#: The resolution floor of theory eq. (7.15) in units of the rounding bound
#: ``n eps lambda_max`` of the Gram route (eq. (7.7)): a value computed above the
#: floor is off by at most a tenth of its size, so the distance above it moves by
#: at most ``F(x(1 + 1/K)) - F(x(1 - 1/K))``, ``K = FLOOR_MULTIPLE`` (below 3e-4 at
#: a logarithmic end, eq. (7.15)).
FLOOR_MULTIPLE = 10.0


def resolution_floor(n, largest):
    """``FLOOR_MULTIPLE * n * eps * largest``: values below it are counted, not placed
    (theory eqs. (7.7), (7.15)).

    Examples
    --------
    >>> float(resolution_floor(1000, 1.0) / np.finfo(float).eps)
    10000.0
    """
    return FLOOR_MULTIPLE * n * float(np.finfo(float).eps) * float(largest)


def ks_two_sample(a_sorted, b_sorted):
    """Two-sample Kolmogorov distance ``sup_x |F_a(x) - F_b(x)|`` of two empirical laws.

    The empirical CDFs are right-continuous steps that jump only at sample
    points, so the supremum is attained at one of them: both CDFs are
    evaluated at every point of either sample (theory eq. (7.9) with the
    second law empirical too).

    Parameters
    ----------
    a_sorted, b_sorted : ndarray
        The two samples, ascending, each non-empty.

    Returns
    -------
    float

    Examples
    --------
    >>> ks_two_sample(np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.5, 3.5]))  # 1/3 at x = 1
    0.3333333333333333
    >>> ks_two_sample(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    0.0
    """
    a_sorted = np.asarray(a_sorted, dtype=float)
    b_sorted = np.asarray(b_sorted, dtype=float)
    if a_sorted.size == 0 or b_sorted.size == 0:
        raise ValueError("both samples must be non-empty")
    points = np.concatenate([a_sorted, b_sorted])
    fa = np.searchsorted(a_sorted, points, side="right") / a_sorted.size
    fb = np.searchsorted(b_sorted, points, side="right") / b_sorted.size
    return float(np.max(np.abs(fa - fb)))


def ks_distance_above_floor(sorted_x, cdf_sorted, floor, cdf_floor):
    """Kolmogorov distance restricted to ``x >= floor`` (theory eq. (7.15)).

    ``max(|F_N(floor) - F(floor)|, max_{x_(i) >= floor} max(i/N - F(x_(i)),
    F(x_(i)) - (i-1)/N))``: the supremum of ``|F_N - F|`` over ``x >= floor``,
    where ``F_N`` counts every value (those below the floor included) but only
    the values above it are placed.  For a law without atoms.

    Parameters
    ----------
    sorted_x : ndarray
        The ``N`` pooled values, ascending.
    cdf_sorted : ndarray
        ``F(x_(i))``.
    floor : float
        The resolution floor (:func:`resolution_floor`).
    cdf_floor : float
        ``F(floor)``.

    Examples
    --------
    >>> # uniform law on [0, 1]; values 1e-20 (unresolved), 0.5, 0.9
    >>> x = np.array([1e-20, 0.5, 0.9])
    >>> round(ks_distance_above_floor(x, x, 1e-10, 1e-10), 12)   # 1/3 at the floor
    0.333333333233
    >>> round(ks_distance(x), 12)                                  # plain KS: the same here
    0.333333333333
    """
    sorted_x = np.asarray(sorted_x, dtype=float)
    cdf_sorted = np.asarray(cdf_sorted, dtype=float)
    m = len(sorted_x)
    below = int(np.count_nonzero(sorted_x < floor))
    d = abs(below / m - float(cdf_floor))
    if below < m:
        i = np.arange(below + 1, m + 1)
        f = cdf_sorted[below:]
        d = max(d, float(np.max(np.maximum(i / m - f, f - (i - 1) / m))))
    return float(d)


def w1_distance(sorted_x, cdf, support):
    """Wasserstein-1 distance ``int |F_N - F| dx`` (theory eq. (7.10)).

    ``F_N`` is constant between consecutive points of a grid made of the
    samples and ``W1_GRID_POINTS`` uniform points over ``support`` (and the
    samples' range); ``F`` is taken linear on each cell and ``|F_N - F|``
    integrated exactly there.

    Examples
    --------
    >>> uniform = lambda x: np.clip(x, 0.0, 1.0)
    >>> round(w1_distance(np.array([0.5]), uniform, (0.0, 1.0)), 12)
    0.25
    """
    lo = min(support[0], sorted_x[0])
    hi = max(support[1], sorted_x[-1])
    grid = np.union1d(sorted_x, np.linspace(lo, hi, W1_GRID_POINTS))
    f = np.asarray(cdf(grid), dtype=float)
    fn = np.searchsorted(sorted_x, grid[:-1], side="right") / len(sorted_x)
    a = fn - f[:-1]
    b = fn - f[1:]
    h = np.diff(grid)
    same = a * b >= 0
    denom = np.where(same, 1.0, np.abs(a) + np.abs(b))
    cell = np.where(same, 0.5 * np.abs(a + b), 0.5 * (a * a + b * b) / denom)
    return float(np.sum(h * cell))


def bootstrap_noise(bulks, rng, *, resamples=BOOTSTRAP_RESAMPLES, level=NOISE_LEVEL):
    """Bootstrap (over draws) of the sampling noise of the pooled law (theory eq. (7.11)).

    Resample the ``D`` draws with replacement ``resamples`` times (the
    multiplicities of resample ``b`` are ``rng.multinomial(D, [1/D]*D)``, all
    resamples drawn in one call), form each resampled pooled CDF ``F*_b``
    and return the ``level`` quantiles of ``sup |F*_b - F|`` and
    ``int |F*_b - F| dx``, ``F`` the pooled CDF of all draws.

    Parameters
    ----------
    bulks : sequence of ndarray
        Each draw's bulk values, ascending.
    rng : numpy.random.Generator
        Source of the resampling.
    resamples : int, optional
    level : float, optional

    Returns
    -------
    ks_noise, w1_noise : float
        NaN for a single draw.

    Examples
    --------
    >>> draw = np.linspace(0.1, 0.9, 5)
    >>> bootstrap_noise([draw, draw], np.random.default_rng(0))   # identical draws
    (0.0, 0.0)
    """
    draws = len(bulks)
    if draws < 2:
        return float("nan"), float("nan")
    pooled_sorted = np.sort(np.concatenate(bulks))
    counts = np.stack([np.searchsorted(b, pooled_sorted, side="right") for b in bulks])
    sizes = np.array([len(b) for b in bulks], dtype=float)
    observed = counts.sum(axis=0) / sizes.sum()
    widths = np.diff(pooled_sorted)
    weights = rng.multinomial(draws, np.full(draws, 1.0 / draws), size=resamples)
    ks, w1 = [], []
    chunk = max(1, _BOOTSTRAP_CHUNK_ENTRIES // max(len(pooled_sorted), 1))
    for start in range(0, resamples, chunk):
        w = weights[start:start + chunk].astype(float)
        resampled = (w @ counts) / (w @ sizes)[:, None]
        gap = np.abs(resampled - observed)
        ks.append(gap.max(axis=1))
        w1.append(gap[:, :-1] @ widths)
    return (float(np.quantile(np.concatenate(ks), level)),
            float(np.quantile(np.concatenate(w1), level)))


def ks_iid_critical(count, level=NOISE_LEVEL):
    """The i.i.d. KS critical value ``K^{-1}(level)/sqrt(count)`` (theory eq. (7.12)).

    ``K`` is the Kolmogorov distribution (:data:`scipy.stats.kstwobign`).
    Shown for comparison only: eigenvalues are not i.i.d.

    Examples
    --------
    >>> round(ks_iid_critical(10_000), 6)      # 1.358099/100
    0.013581
    """
    import scipy.stats

    return float(scipy.stats.kstwobign.ppf(level) / np.sqrt(count))


def mean_and_se(values):
    """Mean over draws and its standard error ``std(ddof=1)/sqrt(D)`` (NaN for ``D = 1``).

    Examples
    --------
    >>> mean_and_se([1.0, 3.0])              # std 1.414.../sqrt(2) = 1
    (2.0, 1.0)
    """
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float("nan")
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def top_singular_values(spectra, count=TOP_VALUES):
    """Mean over draws of the ``count`` largest singular values, largest first.

    Parameters
    ----------
    spectra : sequence of ndarray
        Ascending squared singular values, one array per draw.

    Examples
    --------
    >>> top_singular_values([np.array([1.0, 4.0, 9.0]), np.array([1.0, 4.0, 25.0])], 2)
    (4.0, 2.0)
    """
    tops = np.array([np.sqrt(np.sort(values)[::-1][:count]) for values in spectra])
    return tuple(float(t) for t in tops.mean(axis=0))


def fit_rate(ns, values):
    """OLS fit ``log D(n) = a + s log n`` and the standard error of ``s`` (theory eq. (7.13)).

    Computed with :func:`scipy.stats.linregress` on ``(log n, log D)``.

    Returns
    -------
    slope, slope_se, intercept : float
        ``slope_se`` is NaN with two sizes (no residual degrees of freedom);
        all three are NaN if a distance is not finite and positive (a model
        without a limit law has no distance to fit).

    Examples
    --------
    >>> slope, se, intercept = fit_rate((100, 400, 1600), (0.3, 0.15, 0.075))
    >>> round(slope, 12), round(se, 12)        # exactly n**-0.5
    (-0.5, 0.0)
    """
    values = np.asarray(values, dtype=float)
    if not (np.all(np.isfinite(values)) and np.all(values > 0)):
        return float("nan"), float("nan"), float("nan")
    import scipy.stats

    fit = scipy.stats.linregress(np.log(np.asarray(ns, dtype=float)), np.log(values))
    se = float(fit.stderr) if len(values) > 2 else math.nan
    return float(fit.slope), se, float(fit.intercept)
