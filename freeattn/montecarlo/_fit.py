"""Fitting the inverse temperature (and the width ratio) to an observed spectrum.

Given the squared singular values of a centred, rescaled attention matrix
``sqrt(n) * (A - 11^T/n)``, :func:`fit` finds the ``beta`` (and, when it is not
given, ``gamma = d_qk/n``) whose limiting law (theory eqs. (5.1), (5.5)) is
closest in Kolmogorov distance to the empirical law of the values (theory
eq. (11.9)); the start is the exact-moment estimate ``beta = sqrt(log(1 +
m1))`` of eq. (11.8) (and ``gamma = beta**4 / (m2 - 2 m1**2)``, eq. (5.12)),
the search sequential linear programming on the 2n functions whose largest
is the distance (see ``SLP_DIFF_STEP``).  A percentile bootstrap over the
values gives an interval for ``beta``, and the same minimum-distance fit over the
Marchenko-Pastur family gives the distance a user would see if the layer were
an i.i.d. matrix.  No I/O, no plotting.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..core._checks import ATTENTION_GAMMA, Integer, Probability, as_real_array, rng_generator
from ..core._errors import ConvergenceError
from ..attention._laws import MAX_LAW_BETA, _attention_squared, attention_law
from ._statistics import ks_distance

__all__ = ["FitResult", "fit"]

#: Smallest and largest beta searched.  Below 1e-3 the law in units of theta1 is
#: its beta -> 0 limit to O(beta**2) = 1e-6 (theory eq. (6.11)), so beta is not
#: identifiable from a spectrum beyond its scale; above MAX_LAW_BETA the law is
#: Marchenko-Pastur to 1.8e-6 (see ``freeattn.attention._laws``).
FIT_BETA_RANGE = (1e-3, MAX_LAW_BETA)

#: Range of gamma searched when it is fitted: two decades on each side of 1
#: (a head of width 64 at n = 6400 is gamma = 0.01).  Outside it the law's
#: dependence on gamma is below the sampling noise of any practical n.
FIT_GAMMA_RANGE = (1e-2, 1e2)

#: Points of the coarse log-gamma grid when gamma is fitted, at the moment
#: estimate of beta (the mean fixes theta1 whatever gamma is, theory eq.
#: (11.8)): from the grid point nearest the moment estimate of gamma (eq.
#: (5.12)) the grid is walked down to a local minimum, where the search starts.
#: Its spacing, 1.15 in log gamma, is wider than the error of the moment
#: estimate of gamma on softmax attention (0.03-0.5 in log gamma, measured on
#: six draws at n = 200-500, gamma = 0.1-10), and the grid spans
#: FIT_GAMMA_RANGE: a poor moment estimate (outliers inflate the second moment)
#: costs a few more points of the walk.
COARSE_GAMMA_POINTS = 9

#: Points of the coarse log-ratio grid of the Marchenko-Pastur fit (at variance
#: the sample mean, the MP mean), from MP_MIN_RATIO to 1.
COARSE_POINTS = 13

#: Relative accuracy in beta (absolute in log beta) of the minimization.  The
#: measured spread of the estimate at n = 2000 is 7e-4 to 1.2e-3 relative
#: (module docstring of tests/test_fit.py), so 1e-4 is below the statistical error.
FIT_XTOL = 1e-4
#: Accuracy in log gamma when gamma is fitted: the measured spread of log gamma
#: at n = 500 is 0.012 (tests/test_fit.py), twelve times more.
GAMMA_XTOL = 1e-3
#: Accuracy in log ratio of the Marchenko-Pastur fit.
MP_RATIO_XTOL = 1e-3

#: First trust-region half-widths of the search, in log beta and log gamma (and
#: in log variance and log ratio for Marchenko-Pastur): 10% in beta covers the
#: moment start's error but for outliers (one outlier of size 40 at n = 500
#: moves it by 8%); half the coarse spacing in log gamma.  The box grows when
#: the linear model is good (see SLP_EXPAND).
START_RADIUS_BETA = 0.1
START_RADIUS_GAMMA = 0.5

#: The minimum of eq. (11.9) is found by sequential linear programming with a
#: trust region (the minimax method of K. Madsen, "An algorithm for minimax
#: solution of overdetermined systems of non-linear equations", J. Inst. Maths
#: Applics 16 (1975) 321-328): the KS distance is the largest of the 2n smooth
#: functions ``i/n - F(x_(i))`` and ``F(x_(i)) - (i-1)/n`` of the parameters
#: (log beta, and log gamma when it is fitted); each step linearizes all of
#: them (the Jacobian of the CDF values by forward differences, one law per
#: parameter) and solves the linear program ``min_d max_j (r_j + g_j . d)``
#: over the trust-region box.  The minimum is generically a vertex where
#: m + 1 of the functions are equal (m parameters), where the iteration
#: converges quadratically.
#:
#: Forward-difference step of the Jacobian, in the log parameters: the law's
#: CDF is accurate to ~1e-12 (its representation), so the quotient carries
#: ~1e-7 of rounding and O(1e-5) of truncation, relative -- far below what
#: moves the linearized minimum by a tolerance.
SLP_DIFF_STEP = 1e-5
#: A step is accepted when it achieves SLP_ACCEPT of the decrease the linear
#: model predicts; the box then doubles (up to SLP_MAX_RADIUS times its first
#: size) if the step reached its boundary and achieved SLP_EXPAND of the
#: prediction.  A rejected step shrinks the box to SLP_SHRINK times the step.
SLP_ACCEPT = 0.01
SLP_EXPAND = 0.75
SLP_SHRINK = 0.25
SLP_MAX_RADIUS = 4.0
#: Predicted decrease below which the current point is the minimum (the CDF
#: values, hence the distances, are accurate to ~1e-12).
SLP_PRED_FLOOR = 1e-12
#: Most linear programs of one search (a fit and its Marchenko-Pastur fit
#: together solved 4-14 on 25 draws of softmax attention, n = 60-2000; the bound
#: turns a runaway into a ConvergenceError).
SLP_MAX_STEPS = 100

#: Bootstrap resamples for the interval (percentile bootstrap); 200 resamples
#: put the Monte Carlo error of a 2.5% quantile at about a tenth of the
#: interval's half-width.
DEFAULT_RESAMPLES = 200

#: Most bootstrap resamples accepted.  At 10**4 resamples the Monte Carlo error
#: of a 2.5% quantile is sqrt(0.025 * 0.975 / 10**4) = 0.16% in probability, far
#: below the interval's own width; more resamples only cost time (about 25 KS
#: distances of n points each per resample).
MAX_RESAMPLES = 10_000

#: The domains of ``level`` (open: a level of 0 or 1 has no interval) and of
#: ``resamples``.
LEVEL = Probability()
RESAMPLES = Integer(0, MAX_RESAMPLES)

#: The bootstrap draws its resample counts in batches of at most this many
#: entries (resamples x values), so memory stays at a few arrays of 2**20 floats
#: (8 MiB each) whatever ``resamples`` and ``n`` are.
BOOTSTRAP_BATCH_ENTRIES = 2**20

#: The bootstrap refits on a grid of beta values around the estimate (the law's
#: CDF at the observed values is computed once per grid point and shared by
#: every resample): BOOTSTRAP_GRID_POINTS points over +-BOOTSTRAP_GRID_HALFWIDTH
#: relative, refined by a parabola through the best point and its neighbours
#: (spacing 0.67% of beta; the bootstrap spread measured at n = 500 is ~2%, and
#: +-8% covers 3.5 of it before any widening).
#: The grid widens (doubling) while more than BOOTSTRAP_EDGE_FRACTION of the
#: resamples land on its ends, at most BOOTSTRAP_WIDENINGS times.
BOOTSTRAP_GRID_POINTS = 25
BOOTSTRAP_GRID_HALFWIDTH = 0.08
BOOTSTRAP_EDGE_FRACTION = 0.01
BOOTSTRAP_WIDENINGS = 4

#: Smallest Marchenko-Pastur ratio searched for the best MP law (its variance
#: is searched within a factor MP_VARIANCE_FACTOR of the sample mean, the MP
#: mean).
MP_MIN_RATIO = 1e-3
MP_VARIANCE_FACTOR = 3.0

#: Fewest values accepted: a KS distance of fewer than 10 points cannot tell
#: laws apart (its 95% critical value is above 0.4).
MIN_VALUES = 10

#: Scale check.  The fitted laws have mean theta1 = exp(beta**2) - 1 (theory
#: eq. (11.8)), from 1.0e-6 at beta = FIT_BETA_RANGE[0] to 8.9e6 at
#: FIT_BETA_RANGE[1].  Values whose mean lies more than a factor
#: MEAN_SCALE_FACTOR outside that range are the spectrum of no law searched
#: (e.g. values not rescaled by ``sqrt(n)``, or in the wrong units) and are
#: rejected; the factor leaves room for outliers above the edge (which pull the
#: mean up; theory section 11.10) and for the sampling noise of the mean.
MEAN_SCALE_FACTOR = 10.0


@dataclass(frozen=True)
class FitResult:
    """The attention law fitted to an observed spectrum (:func:`fit`).

    Attributes
    ----------
    beta : float
        Minimum-Kolmogorov-distance estimate of the inverse temperature
        (theory eq. (11.9)).
    gamma : float
        The given ``gamma``, or its estimate when it was fitted.
    interval : tuple of float
        Percentile-bootstrap interval for ``beta`` at ``level`` (resampling
        the values; with ``gamma`` fitted, the interval is conditional on the
        fitted ``gamma``); it always contains ``beta``.
    ks : float
        Kolmogorov distance of the values to the fitted law.
    ks_mp : float
        Kolmogorov distance to the closest Marchenko-Pastur law (variance and
        ratio ``c <= 1`` both fitted).
    mp_variance, mp_ratio : float
        That Marchenko-Pastur law.
    beta_moment : float
        The exact-moment estimate ``sqrt(log(1 + mean))`` (theory eq. (11.8)),
        the start of the search; it is pulled up by outliers, the KS fit is not.
    n : int
        Number of values.
    gamma_fitted : bool
        Whether ``gamma`` was estimated.
    level : float
        Level of ``interval``.
    resamples : int
        Bootstrap resamples behind ``interval`` (0: no interval).
    method : str
        ``"min-ks"``.
    """

    beta: float
    gamma: float
    interval: tuple
    ks: float
    ks_mp: float
    mp_variance: float
    mp_ratio: float
    beta_moment: float
    n: int
    gamma_fitted: bool
    level: float
    resamples: int
    method: str = "min-ks"

    @property
    def law(self):
        """The fitted law of the squared singular values (an :class:`AttentionLaw`)."""
        return attention_law(self.beta, self.gamma).squared()

    @property
    def mp_law(self):
        """The closest Marchenko-Pastur law."""
        from ..laws._elementary import marchenko_pastur

        return marchenko_pastur(self.mp_variance, self.mp_ratio)


def _check_values(values):
    x = as_real_array(values, "squared_singular_values", finite=True)
    if x.ndim != 1:
        raise ValueError(f"squared_singular_values must be a 1-d array, got shape {x.shape}")
    if x.size < MIN_VALUES:
        raise ValueError(f"squared_singular_values must hold at least {MIN_VALUES} values, "
                         f"got {x.size}")
    if (x < 0).any():
        raise ValueError(f"squared_singular_values must be >= 0 (squares), got minimum "
                         f"{x.min():.6g}; pass singular values squared")
    if not (x > 0).any():
        raise ValueError("squared_singular_values are all 0: no spectrum to fit")
    positive = x[x > 0]
    if positive.min() == positive.max():
        raise ValueError(f"squared_singular_values are constant ({positive[0]:.6g}, apart "
                         "from zeros): no law of positive spread fits them")
    lo, hi = _mean_range()
    mean = float(x.mean())
    if not (lo <= mean <= hi):
        raise ValueError(f"squared_singular_values have mean {mean:.6g}, outside "
                         f"[{lo:.3g}, {hi:.3g}] (the mean exp(beta**2) - 1 of the laws "
                         f"searched, beta in {FIT_BETA_RANGE}, widened by a factor "
                         f"{MEAN_SCALE_FACTOR:g}); pass the squared singular values of "
                         "sqrt(n) * (A - 1/n)")
    return np.sort(x)


def _mean_range():
    """Means accepted by the scale check (``MEAN_SCALE_FACTOR``)."""
    lo, hi = (math.expm1(b * b) for b in FIT_BETA_RANGE)
    return lo / MEAN_SCALE_FACTOR, hi * MEAN_SCALE_FACTOR


def moment_beta(mean):
    """``beta`` whose law has mean ``mean``: ``sqrt(log(1 + mean))`` (theory eq. (11.8))."""
    return math.sqrt(math.log1p(mean))


class _Distances:
    """KS distances of the sorted values to a family of laws, one law per parameter point.

    ``cdf(p)`` is the family's CDF at the sorted values ``x`` for the tuple of
    (log) parameters ``p``; each point's CDF and distance are computed once.
    """

    def __init__(self, cdf, n):
        self._cdf = cdf
        self.upper = np.arange(1, n + 1) / n
        self.lower = self.upper - 1.0 / n
        self.cache = {}

    def __call__(self, p):
        """``(cdf, distance)`` at the point ``p``."""
        key = tuple(float(v) for v in p)
        if key not in self.cache:
            f = np.asarray(self._cdf(key), dtype=float)
            self.cache[key] = (f, ks_distance(f))
        return self.cache[key]

    def residuals(self, f):
        """The 2n functions whose largest is the distance (theory eq. (7.9))."""
        return np.concatenate([self.upper - f, f - self.lower])

    def best(self):
        """``(point, distance)`` of the smallest distance evaluated."""
        key = min(self.cache, key=lambda k: self.cache[k][1])
        return key, self.cache[key][1]


def _jacobian(distances, p, f, upper):
    """Forward differences of the CDF values in each parameter (backward at the upper end)."""
    columns = []
    for k in range(len(p)):
        q = list(p)
        h = SLP_DIFF_STEP if p[k] + SLP_DIFF_STEP <= upper[k] else -SLP_DIFF_STEP
        q[k] = p[k] + h
        columns.append((distances(q)[0] - f) / (q[k] - p[k]))
    return np.column_stack(columns)


def _linear_step(c, g, radius, lo, hi, p):
    """``(d, t)`` minimizing ``max_j (c_j + g_j . d)`` over ``lo <= d <= hi``, ``|d| <= radius``
    (the linearized distance at the point ``p``).

    Rows that cannot reach the optimum are dropped first: every row's least value
    over the box, ``c_j - |g_j| . radius``, bounds the optimum from below, so a row
    whose largest value lies under that bound is never active.
    """
    from scipy.optimize import linprog

    reach = np.abs(g) @ radius
    keep = c + reach >= np.max(c - reach)
    m = g.shape[1]
    bounds = [(float(max(-r, a)), float(min(r, b))) for r, a, b in zip(radius, lo, hi)]
    res = linprog(np.r_[np.zeros(m), 1.0], A_ub=np.column_stack([g[keep], -np.ones(keep.sum())]),
                  b_ub=-c[keep], bounds=bounds + [(None, None)], method="highs")
    if res.status != 0:
        raise ConvergenceError(f"the linear program of the KS search failed at {tuple(p)} "
                               f"(log parameters), box {radius}: {res.message}",
                               point=tuple(p))
    return res.x[:m], float(res.x[m])


def _minimize_ks(distances, start, lower, upper, radius, xtol):
    """Minimum of the KS distance over the box ``[lower, upper]`` of parameters.

    Sequential linear programming in a trust region from ``start`` (see
    ``SLP_DIFF_STEP``); stops when an accepted step or the box is below ``xtol``
    in every parameter, or when the linear model predicts no decrease.  Returns
    ``(point, distance)``, the best point evaluated (of this search or before,
    on the same ``distances``).
    """
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    xtol = np.asarray(xtol, float)
    first = np.asarray(radius, float)
    radius = first.copy()
    p = np.clip(np.asarray(start, float), lower, upper)
    f, dist = distances(p)
    jac = _jacobian(distances, p, f, upper)
    for _ in range(SLP_MAX_STEPS):
        c = distances.residuals(f)
        d, t = _linear_step(c, np.vstack([-jac, jac]), radius, lower - p, upper - p, p)
        predicted = dist - t
        if predicted <= SLP_PRED_FLOOR:
            return distances.best()
        q = np.clip(p + d, lower, upper)
        fq, dq = distances(q)
        ratio = (dist - dq) / predicted
        reach = float(np.max(np.abs(d) / radius))
        if ratio >= SLP_ACCEPT:
            p, f, dist = q, fq, dq
            if np.all(np.abs(d) <= xtol):
                return distances.best()
            if ratio >= SLP_EXPAND and reach >= 0.99:
                radius = np.minimum(2.0 * radius, SLP_MAX_RADIUS * first)
            jac = _jacobian(distances, p, f, upper)
        else:
            radius = SLP_SHRINK * reach * radius
            if np.all(radius <= xtol):
                return distances.best()
    point, best = distances.best()
    raise ConvergenceError(f"the KS search did not converge in {SLP_MAX_STEPS} steps: at "
                           f"{point} (log parameters) distance {best:.6g}, box {radius}, "
                           f"tolerance {xtol}", point=point, residual=best,
                           iterations=SLP_MAX_STEPS)


def _attention_distances(x, gamma=None):
    """:class:`_Distances` to the attention laws, parameters ``(log beta,)`` at the given
    ``gamma`` or ``(log beta, log gamma)``."""
    if gamma is None:
        def cdf(p):
            return _attention_squared(math.exp(p[0]), math.exp(p[1])).cdf(x)
    else:
        def cdf(p):
            return _attention_squared(math.exp(p[0]), gamma).cdf(x)
    return _Distances(cdf, x.size)


_LOG_BETA_RANGE = tuple(math.log(b) for b in FIT_BETA_RANGE)
_LOG_GAMMA_RANGE = tuple(math.log(g) for g in FIT_GAMMA_RANGE)


def _fit_beta(x, gamma, start):
    """Minimum-KS ``(beta, ks)`` at fixed ``gamma`` (theory eq. (11.9))."""
    (log_beta,), ks = _minimize_ks(_attention_distances(x, gamma), (math.log(start),),
                                   (_LOG_BETA_RANGE[0],), (_LOG_BETA_RANGE[1],),
                                   (START_RADIUS_BETA,), (FIT_XTOL,))
    return math.exp(log_beta), ks


def moment_gamma(beta, mean, second):
    """``gamma`` whose law at ``beta`` has the second moment ``second`` (theory eq. (5.12)).

    ``m2 = 2 theta1**2 + beta**4 / gamma`` with ``theta1`` the mean, so
    ``gamma = beta**4 / (m2 - 2 m1**2)``; ``inf`` when the excess is not positive
    (the spectrum is no wider than Marchenko-Pastur's, the ``gamma -> oo`` limit).
    """
    excess = second - 2.0 * mean * mean
    return beta ** 4 / excess if excess > 0 else math.inf


def _grid_walk(value, grid, k):
    """A local minimum of ``value`` over the indices of ``grid``, walking from index ``k``."""
    best = value(grid[k])
    while True:
        steps = [(value(grid[j]), j) for j in (k - 1, k + 1) if 0 <= j < len(grid)]
        lowest, j = min(steps)
        if lowest >= best:
            return grid[k]
        best, k = lowest, j


def _fit_beta_gamma(x, start, gamma_start):
    """Minimum-KS ``(beta, gamma, ks)`` over both (theory eq. (11.9)).

    On a coarse log-gamma grid at the moment estimate ``start`` of beta (the mean
    fixes theta1 for every gamma, eq. (11.8)), a walk from the grid point nearest
    the moment estimate ``gamma_start`` (eq. (5.12)) to a local minimum; the
    search starts there.
    """
    distances = _attention_distances(x)
    u = math.log(start)
    grid = np.linspace(*_LOG_GAMMA_RANGE, COARSE_GAMMA_POINTS)
    v_start = min(max(math.log(gamma_start), grid[0]), grid[-1])
    v = float(_grid_walk(lambda v: distances((u, v))[1], grid,
                         int(np.argmin(np.abs(grid - v_start)))))
    (log_beta, log_gamma), ks = _minimize_ks(
        distances, (u, v), (_LOG_BETA_RANGE[0], _LOG_GAMMA_RANGE[0]),
        (_LOG_BETA_RANGE[1], _LOG_GAMMA_RANGE[1]), (START_RADIUS_BETA, START_RADIUS_GAMMA),
        (FIT_XTOL, GAMMA_XTOL))
    return math.exp(log_beta), math.exp(log_gamma), ks


def _fit_mp(x):
    """Closest Marchenko-Pastur law in KS: ``(variance, ratio, ks)``.

    Parameters ``(log variance, log ratio)``; the variance within a factor
    ``MP_VARIANCE_FACTOR`` of the sample mean (the MP mean), the ratio in
    ``[MP_MIN_RATIO, 1]``; the search starts at the best point of a coarse
    log-ratio grid at variance the mean.
    """
    from ..laws._elementary import MarchenkoPastur

    def cdf(p):
        # a scale family: the CDF of MP(v, c) at x is that of MP(1, c) at x / v
        return MarchenkoPastur(1.0, math.exp(p[1])).cdf(x / math.exp(p[0]))

    distances = _Distances(cdf, x.size)
    u = math.log(float(x.mean()))
    spread = math.log(MP_VARIANCE_FACTOR)
    grid = np.linspace(math.log(MP_MIN_RATIO), 0.0, COARSE_POINTS)
    coarse = [distances((u, v))[1] for v in grid]
    v = float(grid[int(np.argmin(coarse))])
    (log_var, log_ratio), ks = _minimize_ks(
        distances, (u, v), (u - spread, math.log(MP_MIN_RATIO)), (u + spread, 0.0),
        (START_RADIUS_BETA, START_RADIUS_GAMMA), (FIT_XTOL, MP_RATIO_XTOL))
    return math.exp(log_var), math.exp(log_ratio), ks


def _bootstrap_ks(cdf_grid, counts, n):
    """KS distances ``[resample, grid point]`` of resampled empirical laws.

    ``cdf_grid[j, i]`` is the law's CDF at the ``i``-th sorted value for grid
    point ``j``; ``counts[b, i]`` the multiplicity of that value in resample
    ``b``.  The resampled empirical CDF jumps only at the observed values, so
    the supremum of eq. (7.9) is attained there.
    """
    upper = np.cumsum(counts, axis=1) / n
    lower = np.concatenate([np.zeros((counts.shape[0], 1)), upper[:, :-1]], axis=1)
    out = np.empty((counts.shape[0], cdf_grid.shape[0]))
    for j, f in enumerate(cdf_grid):
        out[:, j] = np.maximum(np.max(upper - f, axis=1), np.max(f - lower, axis=1))
    return out


def _resampled_ks(cdf_grid, n, resamples, gen):
    """``_bootstrap_ks`` over ``resamples`` resamples, drawn in batches of at most
    ``BOOTSTRAP_BATCH_ENTRIES`` counts (the same stream as one call would draw)."""
    batch = max(1, BOOTSTRAP_BATCH_ENTRIES // n)
    p = np.full(n, 1.0 / n)
    out = []
    for done in range(0, resamples, batch):
        counts = gen.multinomial(n, p, size=min(batch, resamples - done))
        out.append(_bootstrap_ks(cdf_grid, counts, n))
    return np.concatenate(out)


def _grid_estimates(ks, grid):
    """Minimizers of each row of ``ks`` over ``grid``, refined by a parabola through
    the best point and its neighbours; also the index of the best point."""
    k = np.argmin(ks, axis=1)
    inner = np.clip(k, 1, len(grid) - 2)
    rows = np.arange(len(k))
    f0, f1, f2 = ks[rows, inner - 1], ks[rows, inner], ks[rows, inner + 1]
    curvature = f0 - 2.0 * f1 + f2
    shift = np.where(curvature > 0, 0.5 * (f0 - f2) / np.where(curvature > 0, curvature, 1.0),
                     0.0)
    step = grid[1] - grid[0]
    estimates = grid[inner] + np.clip(shift, -1.0, 1.0) * step
    return np.where(k == inner, estimates, grid[k]), k


def _bootstrap_interval(x, beta, gamma, level, resamples, gen):
    """Percentile-bootstrap interval for beta at fixed gamma (see the constants).

    The replicates use the grid estimator (one CDF per grid point shared by every
    resample), which differs from the search's estimate ``beta`` by up to a
    fraction of the grid step.  So the replicates are measured from the grid estimator on
    the original values, the quantiles are put around ``beta``, and the interval
    is widened to ``beta`` if the replicates all fall on one side of it.
    """
    n = x.size
    state = gen.bit_generator.state          # every widening resamples the same counts
    halfwidth = BOOTSTRAP_GRID_HALFWIDTH
    # Grid offsets j/m, j = -m..m: doubling the half-width (exact in floating point)
    # puts every other point of the wider grid on a point of the narrower one, whose
    # CDF is reused.
    m = (BOOTSTRAP_GRID_POINTS - 1) // 2
    offsets = np.arange(-m, m + 1) / m
    cdfs = {}
    for _ in range(BOOTSTRAP_WIDENINGS + 1):
        grid = beta * (1.0 + halfwidth * offsets)
        grid = grid[(grid >= FIT_BETA_RANGE[0]) & (grid <= FIT_BETA_RANGE[1])]
        for b in grid:
            if float(b) not in cdfs:
                cdfs[float(b)] = _attention_squared(float(b), gamma).cdf(x)
        cdf_grid = np.array([cdfs[float(b)] for b in grid])
        gen.bit_generator.state = state
        estimates, k = _grid_estimates(_resampled_ks(cdf_grid, n, resamples, gen), grid)
        at_edge = np.mean((k == 0) | (k == len(grid) - 1))
        if at_edge <= BOOTSTRAP_EDGE_FRACTION or halfwidth >= 0.5:
            break
        halfwidth *= 2.0
    (centre,), _ = _grid_estimates(_bootstrap_ks(cdf_grid, np.ones((1, n)), n), grid)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(estimates - centre, [tail, 1.0 - tail]) + beta
    return float(min(lo, beta)), float(max(hi, beta))


def fit(squared_singular_values, *, gamma=None, level=0.95, resamples=DEFAULT_RESAMPLES,
        rng=None):
    """Fit the attention law to an observed spectrum: estimate ``beta`` (and ``gamma``).

    Parameters
    ----------
    squared_singular_values : array_like, shape (n,)
        Squared singular values of the centred, rescaled attention matrix
        ``sqrt(n) * (A - 11^T/n)`` (e.g. :func:`freeattn.squared_singular_values`
        of ``sqrt(n) * (A - 1/n)``); the one structural zero may be included.
        At least 10 values, all finite and ``>= 0``, not all equal, with a
        mean inside the scale of the laws searched (``MEAN_SCALE_FACTOR``).
    gamma : float, optional
        ``d_qk / n`` in ``[1e-4, 1e4]``; ``None`` fits it in ``[1e-2, 1e2]``
        (``FIT_GAMMA_RANGE``).
    level : float, optional
        Level of the bootstrap interval, in ``(0, 1)``.
    resamples : int, optional
        Bootstrap resamples, in ``[0, MAX_RESAMPLES]`` (``10**4``; ``0``: no
        interval, ``(nan, nan)``).
    rng : None, int or numpy.random.Generator, optional
        Source of the bootstrap resampling (``numpy.random.default_rng``).

    Returns
    -------
    FitResult

    Raises
    ------
    TypeError, ValueError
        For non-real, non-finite, negative, too few, all-zero or constant
        values, values whose mean is outside the scale of every law searched,
        or an out-of-range ``gamma``, ``level`` or ``resamples``.

    Notes
    -----
    The estimate minimizes the Kolmogorov distance (theory eq. (11.9)) to the
    law of theory eqs. (5.1), (5.5), starting from the exact-moment value
    ``sqrt(log(1 + m1))`` (eq. (11.8)).  The distance is the largest of the
    ``2n`` smooth functions ``i/n - F(x_(i))``, ``F(x_(i)) - (i-1)/n`` of the
    parameters; each step of the search linearizes all of them (forward
    differences, one law per parameter) and minimizes the largest by a linear
    program in a trust region (the minimax method of Madsen 1975), which
    converges quadratically to the vertex where the minimum generically lies.
    With ``gamma=None`` the parameters are ``log beta`` and ``log gamma``; the
    search starts on a coarse log-gamma grid walked down from the moment value
    ``beta**4 / (m2 - 2 m1**2)`` of eq. (5.12).  On 25 draws of softmax
    attention (``n = 60-2000``) it built 5-9 laws with ``gamma`` given and
    9-21 with ``gamma`` fitted (30 on a draw at ``d_qk = 15`` the law fits
    badly); ``benchmarks/bench_fit.py`` times it.  The minimum distance is robust to a
    few outliers above the edge (each moves the empirical CDF by ``1/n``),
    which the moment estimate is not.  Bias and spread measured on real softmax
    attention at ``gamma = 1`` (``tests/test_fit.py``, relative to ``beta``):
    at ``n = 500`` bias -0.8% (``beta = 0.5``) and -2.0% (``beta = 1``), spread
    (standard deviation) 0.3% and 0.5%; at ``n = 2000`` bias -0.2% and -0.6%,
    spread 0.07% and 0.12%.  The bias is the finite-``n`` softmax effect (the
    law is the ``n -> oo`` limit), not the estimator's.

    The bootstrap resamples the values (i.i.d.) and refits each resample on a
    grid of ``beta``; its percentile interval is centred on the estimate (the
    replicates are measured from the grid fit of the original values) and
    always contains it.  The resample counts are drawn in batches, so memory
    does not grow with ``resamples``.  Eigenvalues are far more rigid
    than i.i.d. points, so the interval is very conservative for the sampling
    noise: at ``beta = 1`` its half-width was measured at 4.5% (``n = 500``) and
    2.3% (``n = 2000``) of ``beta``, 10 and 20 times the measured spread of
    the estimate over independent matrices.  It does not include the
    finite-``n`` bias of the softmax.

    Examples
    --------
    >>> import numpy as np, freeattn
    >>> y = freeattn.sample_model("attention", 300, 300, 1.0, rng=1)
    >>> result = freeattn.fit(freeattn.squared_singular_values(y), gamma=1.0, rng=0)
    >>> bool(abs(result.beta - 1.0) < 0.1), bool(result.ks < result.ks_mp)
    (True, True)
    """
    x = _check_values(squared_singular_values)
    if gamma is not None:
        gamma = ATTENTION_GAMMA.check(gamma, "gamma")
    level = LEVEL.check(level, "level")
    resamples = RESAMPLES.check(resamples, "resamples")
    gen = rng_generator(rng)

    beta_moment = moment_beta(float(x.mean()))
    start = min(max(beta_moment, FIT_BETA_RANGE[0]), FIT_BETA_RANGE[1])
    if gamma is None:
        gamma_moment = moment_gamma(start, float(x.mean()), float(np.mean(x * x)))
        beta, gamma_hat, ks = _fit_beta_gamma(x, start, gamma_moment)
    else:
        (beta, ks), gamma_hat = _fit_beta(x, gamma, start), gamma
    if resamples:
        interval = _bootstrap_interval(x, beta, gamma_hat, level, resamples, gen)
    else:
        interval = (math.nan, math.nan)
    mp_variance, mp_ratio, ks_mp = _fit_mp(x)
    return FitResult(beta=beta, gamma=gamma_hat, interval=interval, ks=ks, ks_mp=ks_mp,
                     mp_variance=mp_variance, mp_ratio=mp_ratio, beta_moment=beta_moment,
                     n=int(x.size), gamma_fitted=gamma is None, level=level,
                     resamples=resamples)

