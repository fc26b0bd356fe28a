"""Public spectral laws: attention, its squares, Marchenko-Pastur, edges.

The law of the squared singular values of ``sqrt(n) * A_perp`` is the
sample-covariance law of theory eq. (5.1) with ratio ``c = 1`` and population
``H = alpha**2 + beta**2 * MP_{1/gamma}`` (eq. (5.5)); the engine is
:class:`freeattn._solver.SampleCovarianceLaw`.  Internally every law is solved
in units of its variance (``theta1`` for attention, ``variance`` for
Marchenko-Pastur), which keeps ``beta = 1e-3`` and ``beta = 4`` equally well
conditioned, and scaled back on output.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ._checks import as_real_array, check_beta, check_int, check_positive
from ._coefficients import linear_coefficients
from ._errors import ConvergenceError
from ._solver import (AffineMarchenkoPasturPopulation, PointMassPopulation,
                      SampleCovarianceLaw, build_panels, poly_eval)
from ._tolerances import (BRANCH_RESIDUAL_RTOL, FAST_PATH_MAX_STEP, PDF_DIRECT_MAX_POINTS,
                          PPF_MAX_ITER,
                          STIELTJES_SERIES_RADIUS, STIELTJES_SERIES_TERMS,
                          PPF_STEP_ATOL, QUADRATURE_EXTRA_NODES, THRESHOLD_RTOL)

__all__ = [
    "EigenvalueLaw",
    "SingularValueLaw",
    "OperatorNorm",
    "LinearizationThreshold",
    "attention_law",
    "marchenko_pastur",
    "operator_norm",
    "linearization_threshold",
]

#: Accuracy range of the laws in beta (issue 3).  Beyond it exp(beta**2)
#: still fits in float64 up to beta ~ 26.6, but the law is Marchenko-Pastur
#: to all printed digits.
MAX_LAW_BETA = 4.0
#: Smallest beta served by the laws.  The law is computed in units of theta1;
#: below ~1e-11 the split support at gamma = 0.02 is lost in the polynomial
#: coefficients (alpha**2/theta2 ~ beta**2/2 underflows against 1), so the
#: range stops three decades earlier.  At beta = 1e-8 the law equals its
#: beta -> 0 limit (theory eq. (6.11)) to O(beta**2) = 1e-16.
MIN_LAW_BETA = 1e-8

#: Ratios c = p/N served by marchenko_pastur: the support has relative width
#: 4 sqrt(c) (c < 1), and at c = 1e-6 the CDF expansion of that needle already
#: loses its 1e-10 mass accuracy (measured: 5.7e-11 at 1e-6, 1e-14 at 1e-4).
MP_RATIO_RANGE = (1e-4, 1e4)

#: Range of gamma = d_qk/n served by the laws (issue 3).
GAMMA_RANGE = (0.02, 50.0)


def _scalar(arr, name):
    """``float(arr)`` for a 0-d checked array; TypeError naming ``name`` otherwise."""
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a real scalar, got array of shape {arr.shape}")
    return float(arr)


def _check_gamma(gamma):
    g = _scalar(as_real_array(gamma, "gamma"), "gamma")
    if not (GAMMA_RANGE[0] <= g <= GAMMA_RANGE[1]):
        raise ValueError(f"gamma must be in [{GAMMA_RANGE[0]}, {GAMMA_RANGE[1]}], got {gamma!r}")
    return g


def _check_law_args(beta, gamma):
    b = _scalar(check_beta(beta), "beta")
    if b > MAX_LAW_BETA:
        raise ValueError(f"beta must be in [{MIN_LAW_BETA}, {MAX_LAW_BETA}] for the spectral laws "
                         f"(beyond it theta2/theta1 = beta**2/(exp(beta**2) - 1) < 1.8e-6 and the "
                         f"law is Marchenko-Pastur of variance theta1 to that relative order), "
                         f"got {beta!r}")
    if b < MIN_LAW_BETA:
        raise ValueError(f"beta must be in [{MIN_LAW_BETA}, {MAX_LAW_BETA}] for the spectral laws "
                         f"(below it the law in units of theta1 is its beta -> 0 limit, the "
                         f"two-Wishart product law, to better than 1e-16), got {beta!r}")
    return b, _check_gamma(gamma)


class EigenvalueLaw:
    """Law of the eigenvalues of a sample covariance (here: of ``s**2``).

    Instances come from :func:`attention_law` (``.squared()``) and
    :func:`marchenko_pastur`; the constructor is private.

    Attributes
    ----------
    beta, gamma : float or None
        Parameters of the attention law (``None`` for Marchenko-Pastur).
    variance, ratio : float
        Mean of the law (``theta1`` for attention) and ``c = p/N``.
    atom : float
        Mass at 0.

    Examples
    --------
    >>> sq = attention_law(0.5, 0.1).squared()
    >>> [tuple(round(v, 4) for v in iv) for iv in sq.intervals()]   # split support
    [(0.0, 0.1223), (0.8956, 5.4819)]
    >>> round(sq.cdf(0.5), 12)                  # the noise bulk carries 1 - gamma
    0.9
    >>> round(sq.ppf(0.9), 4)
    0.1223
    >>> g = sq.stieltjes(1j)
    >>> g.imag < 0
    True
    """

    def __init__(self, engine, scale, *, beta=None, gamma=None, name="law"):
        self._engine = engine
        self._scale = float(scale)
        self.beta = beta
        self.gamma = gamma
        self.variance = float(scale)
        self.ratio = engine.ratio
        self.atom = float(engine.atom)
        self._name = name
        self._panel_cache = None

    def __repr__(self):
        return f"<{self._name}: support {self.support()}>"

    # -- support ----------------------------------------------------------------
    def intervals(self):
        """Every interval of the support of the continuous part.

        Returns
        -------
        tuple of (float, float)
            ``(lo, hi)`` pairs, increasing; edges from the critical values of the
            Silverstein equation (theory eq. (6.1)-(6.4)).
        """
        return tuple((lo * self._scale, hi * self._scale) for lo, hi in self._engine.intervals())

    def support(self):
        """``(lower, upper)``: smallest and largest point of the support.

        The lower end is 0 when there is an atom at 0.
        """
        iv = self.intervals()
        lower = 0.0 if self.atom > 0 else iv[0][0]
        return (lower, iv[-1][1])

    # -- Chebyshev panels (cached per law) -------------------------------------------
    def _panels(self):
        """Panels of all support intervals, in order, with the mass below each."""
        if self._panel_cache is None:
            panels = []
            for lo, hi in self._engine.intervals():
                panels.extend(build_panels(self._engine, lo, hi))
            masses = np.array([p.mass for p in panels])
            below = self.atom + np.concatenate([[0.0], np.cumsum(masses)[:-1]])
            starts = np.array([p.lo for p in panels])
            self._panel_cache = (panels, below, starts, self.atom + masses.sum())
        return self._panel_cache

    def _locate(self, xs):
        """Index of the panel holding each normalized point, -1 outside the support."""
        panels, _, starts, _ = self._panels()
        idx = np.searchsorted(starts, xs, side="right") - 1
        ends = np.array([p.hi for p in panels])
        inside = (idx >= 0) & (xs <= ends[np.clip(idx, 0, None)])
        return np.where(inside, idx, -1)

    def total_mass(self):
        """Atom plus the integrals of all panels: 1 up to the expansion error."""
        return float(self._panels()[3])

    # -- density ----------------------------------------------------------------
    def pdf(self, x):
        """Density of the continuous part (the atom, if any, is excluded).

        Parameters
        ----------
        x : array_like
            Real points.

        Returns
        -------
        ndarray or float
            Same shape as ``x``; 0 outside the support, ``inf`` at a hard edge.

        Raises
        ------
        TypeError, ValueError
            If ``x`` is not real or contains NaN.
        ConvergenceError
            If a point's root is off the Stieltjes branch or not finite (the
            message quotes the point and the root).

        Notes
        -----
        ``f(x) = Im(-1/u(x + i0)) / (pi c)`` with ``u`` the Stieltjes-branch
        root of the Silverstein equation, theory eqs. (5.3) and (5.6).  The
        root is started from the cached Chebyshev panels of eq. (6.7) and
        polished by Newton's method; a point whose polished root fails the
        branch test is re-solved from all roots (:func:`select_branch`).  Up to
        ``PDF_DIRECT_MAX_POINTS`` points on a law whose panels are not built yet
        are solved from all roots directly instead.  Marchenko-Pastur uses its
        closed form, theory eq. (5.4).
        """
        x = as_real_array(x, "x")
        xs = x.ravel() / self._scale
        out = np.zeros(xs.shape)
        hard = self._engine.intervals()[0][0] == 0.0
        inside = np.zeros(xs.shape, dtype=bool)
        for lo, hi in self._engine.intervals():
            inside |= (xs > lo) & (xs < hi)
        if isinstance(self._engine.population, PointMassPopulation):
            # Marchenko-Pastur: the closed form of theory eq. (5.4), v = 1 here
            # (the scale is applied below); no root finding.
            c = self.ratio
            lo, hi = (1.0 - np.sqrt(c)) ** 2, (1.0 + np.sqrt(c)) ** 2
            xi = xs[inside]
            out[inside] = np.sqrt((hi - xi) * (xi - lo)) / (2.0 * np.pi * c * xi)
        else:
            out[inside] = self._root_density(xs[inside])
        if hard:
            out[xs == 0.0] = np.inf
        out = out / self._scale
        return out.reshape(x.shape) if x.ndim else float(out[0])

    def _root_density(self, xs):
        """Normalized density at interior points from the Stieltjes-branch root."""
        if self._panel_cache is None and xs.size <= PDF_DIRECT_MAX_POINTS:
            # A few points on a law not yet expanded are solved directly.
            u = self._engine.solve_u(xs.astype(complex))
        else:
            panels = self._panels()[0]
            idx = self._locate(xs)
            u = np.empty(idx.shape, dtype=complex)
            for j in np.unique(idx):
                sel = idx == j
                u[sel] = self._polish(xs[sel], panels[j].u(xs[sel]))
        # select_branch admits Im u down to -BRANCH_RESIDUAL_RTOL |u| (real roots
        # with rounding dust); such a root has density 0.  Anything below, or a
        # non-finite u, is a wrong branch and raises instead of reading as 0.
        bad = ~np.isfinite(u) | (u.imag < -BRANCH_RESIDUAL_RTOL * np.abs(u)) | (u == 0)
        if bad.any():
            k = int(np.argmax(bad))
            raise ConvergenceError(
                f"density at x={xs[k] * self._scale!r}: root u={u[k]!r} is not on the "
                f"Stieltjes branch (Im u < -{BRANCH_RESIDUAL_RTOL:.1e} |u|, zero or non-finite)",
                point=xs[k] * self._scale, tolerance=BRANCH_RESIDUAL_RTOL)
        return np.maximum(u.imag, 0.0) / (u.real ** 2 + u.imag ** 2) / (np.pi * self.ratio)

    def _polish(self, x, u):
        """One Newton step on the polynomial form; fall back to a full solve."""
        coeffs = self._engine.population.silverstein_polynomial(x.astype(complex), self.ratio)
        p, dp = poly_eval(coeffs, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = p / dp
        small = np.isfinite(step) & (np.abs(step) <= FAST_PATH_MAX_STEP * np.abs(u))
        # Near an edge the root is almost double; keep the interpolant there.
        near_edge = np.abs(u.imag) < FAST_PATH_MAX_STEP ** 0.5 * np.abs(u)
        u = np.where(small & ~near_edge, u - step, u)
        bad = ~small & ~near_edge
        if bad.any():
            u[bad] = self._engine.solve_u(x[bad].astype(complex))
        return u

    # -- Stieltjes transform ------------------------------------------------------
    def stieltjes(self, z):
        """Cauchy-Stieltjes transform ``G(z) = int dnu(x)/(z - x)``.

        Parameters
        ----------
        z : array_like
            Complex points with ``Im z >= 0``; a real ``z`` means ``z + i0``.

        Returns
        -------
        ndarray or complex
            Same shape as ``z``.  ``G(z) ~ 1/z`` at infinity, ``Im G < 0`` for
            ``Im z > 0``.

        Raises
        ------
        ValueError
            If ``Im z < 0`` or ``z`` is NaN.
        """
        zarr = _check_z(z)
        zs = zarr.ravel() / self._scale
        g = np.empty(zs.shape, dtype=complex)
        zero = zs == 0
        if zero.any():
            if self.atom > 0 or self.intervals()[0][0] == 0.0:
                raise ValueError("z = 0 is a singular point of this law's Stieltjes transform")
        # Far from the support the polynomial form overflows; there the moment
        # series G(z) = sum_k m_k / z**(k+1) (moments from eq. (5.8)) converges
        # geometrically with ratio upper/|z| < 1/STIELTJES_SERIES_RADIUS.
        far = np.abs(zs) > STIELTJES_SERIES_RADIUS * self._engine.intervals()[-1][1]
        near = ~zero & ~far
        if near.any():
            g[near] = -self._engine.stieltjes(zs[near])
        if far.any():
            moments = self._engine.moments(STIELTJES_SERIES_TERMS)
            with np.errstate(over="ignore", under="ignore"):
                inv = 1.0 / zs[far]
                acc = np.zeros(inv.shape, dtype=complex)
                for m in moments[::-1]:
                    acc = acc * inv + m
                g[far] = acc * inv
        g = g / self._scale
        return g.reshape(zarr.shape) if zarr.ndim else complex(g[0])

    # -- moments ----------------------------------------------------------------
    def moment(self, k):
        """Moment ``E[x**k]`` from the free-cumulant series (theory eq. (5.8)-(5.10)).

        Parameters
        ----------
        k : int
            Order, ``k >= 0``.

        Returns
        -------
        float
        """
        k = check_int(k, "k", minimum=0)
        return float(self._engine.moments(k)[k]) * self._scale ** k

    def mean(self):
        """First moment (``theta1`` for the attention law, eq. (5.11))."""
        return self.moment(1)

    def var(self):
        """Variance ``m2 - m1**2`` (eq. (5.12))."""
        m = self._engine.moments(2)
        return float(m[2] - m[1] ** 2) * self._scale ** 2

    # -- CDF and quantiles ----------------------------------------------------------
    def cdf(self, x):
        """Cumulative distribution function (atom included).

        Parameters
        ----------
        x : array_like

        Returns
        -------
        ndarray or float
            Same shape as ``x``, non-decreasing, in ``[0, 1]``.

        Notes
        -----
        On each panel the CDF is the exact integral of the Chebyshev series of
        ``f(x(s)) dx/ds`` (theory eq. (6.8)); panel masses accumulate.
        """
        x = as_real_array(x, "x")
        xs = x.ravel() / self._scale
        panels, below, starts, total = self._panels()
        ends = np.array([p.hi for p in panels])
        # Mass of everything to the left of x, whole panels first (the atom at 0
        # counts from x = 0 on).
        k = np.searchsorted(ends, xs, side="right")          # panels entirely below
        out = np.where(xs >= 0, np.append(below, total)[k], 0.0)
        idx = self._locate(xs)
        for j in np.unique(idx[idx >= 0]):
            sel = (idx == j) & (xs < ends[j])
            p = panels[j]
            out[sel] = below[j] + np.clip(p.cdf_of_s(p.s_of_x(xs[sel])), 0.0, p.mass)
        out = np.clip(out / total, 0.0, 1.0)
        return out.reshape(x.shape) if x.ndim else float(out[0])

    def ppf(self, q):
        """Quantile function, the inverse of :meth:`cdf`.

        Parameters
        ----------
        q : array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        ndarray or float
            Smallest ``x`` with ``cdf(x) >= q``.

        Raises
        ------
        TypeError, ValueError
            If ``q`` is not real, contains NaN or lies outside ``[0, 1]``.
        ConvergenceError
            If the safeguarded Newton iteration does not reach ``PPF_STEP_ATOL``
            within ``PPF_MAX_ITER`` steps.
        """
        q = as_real_array(q, "q")
        if ((q < 0) | (q > 1)).any():
            raise ValueError(f"q must be in [0, 1], got {q!r}")
        qs = q.ravel()
        panels, below, _, total = self._panels()
        target = qs * total
        j = np.clip(np.searchsorted(below, target, side="left") - 1, 0, len(panels) - 1)
        out = np.empty(qs.shape)
        for jj in np.unique(j):
            sel = j == jj
            p = panels[jj]
            t = np.clip(target[sel] - below[jj], 0.0, p.mass)
            out[sel] = p.x_of_s(_invert_panel_cdf(p, t))
        out[target <= self.atom] = 0.0 if self.atom > 0 else panels[0].lo
        out = out * self._scale
        return out.reshape(q.shape) if q.ndim else float(out[0])

    def squared(self):
        """Return ``self`` (an eigenvalue law is already the squared law)."""
        return self


def _check_z(z):
    """``z`` as a complex array: numeric, not NaN, ``Im z >= 0``."""
    zarr = np.asarray(z)
    if zarr.dtype.kind not in "iufc":
        raise TypeError(f"z must be a complex number or array, got {z!r}")
    zarr = zarr.astype(complex)
    if np.isnan(zarr).any():
        raise ValueError(f"z must not be NaN, got {z!r}")
    if (zarr.imag < 0).any():
        raise ValueError("z must lie in the closed upper half-plane (Im z >= 0), "
                         f"got {z!r}")
    return zarr


def _invert_panel_cdf(panel, target):
    """Solve ``cdf_of_s(s) = target`` on the panel by safeguarded Newton steps."""
    a, b = panel.s_range
    grid = np.linspace(a, b, 2 * panel.cdf_coef.size + 9)
    fgrid = np.maximum.accumulate(panel.cdf_of_s(grid))
    idx = np.clip(np.searchsorted(fgrid, target), 1, grid.size - 1)
    lo, hi = grid[idx - 1], grid[idx]
    flo, fhi = fgrid[idx - 1], fgrid[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(fhi > flo, lo + (target - flo) / (fhi - flo) * (hi - lo), lo)
    active = np.arange(s.size)
    for _ in range(PPF_MAX_ITER):
        sa, ta = s[active], target[active]
        f = panel.cdf_of_s(sa) - ta
        lo[active] = np.where(f < 0, sa, lo[active])
        hi[active] = np.where(f >= 0, sa, hi[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = sa - f / panel.g_of_s(sa)
        ok = np.isfinite(newton) & (newton > lo[active]) & (newton < hi[active])
        new = np.where(ok, newton, 0.5 * (lo[active] + hi[active]))
        s[active] = new
        active = active[np.abs(new - sa) > PPF_STEP_ATOL]
        if active.size == 0:
            return s
    k = int(active[0])
    raise ConvergenceError(
        f"quantile iteration on the panel [{panel.lo!r}, {panel.hi!r}] did not converge in "
        f"{PPF_MAX_ITER} steps (target mass {target[k]!r}, bracket [{lo[k]!r}, {hi[k]!r}])",
        point=float(panel.x_of_s(s[k])), tolerance=PPF_STEP_ATOL, iterations=PPF_MAX_ITER)


class SingularValueLaw:
    """Law of the singular values ``s`` of ``sqrt(n) * A_perp`` (``s >= 0``).

    Built on the law of ``s**2`` (:meth:`squared`): ``pdf(s) = 2 s f(s**2)``,
    ``cdf(s) = F(s**2)``, ``ppf(q) = sqrt(F^{-1}(q))``.

    Examples
    --------
    >>> law = attention_law(1.0)
    >>> [round(v, 6) for v in law.support()]
    [0.0, 3.00159]
    >>> round(law.pdf(0.0), 6)                  # finite at 0, theory eq. (6.6)
    0.562783
    >>> round(law.moment(2), 10) == round(law.squared().mean(), 10)
    True
    """

    def __init__(self, squared_law):
        self._sq = squared_law
        self.beta = squared_law.beta
        self.gamma = squared_law.gamma
        self.atom = squared_law.atom
        self._stieltjes_nodes = None

    def __repr__(self):
        return (f"<singular-value law beta={self.beta}, gamma={self.gamma}: "
                f"support {self.support()}>")

    def squared(self):
        """The law of ``s**2`` (an :class:`EigenvalueLaw`)."""
        return self._sq

    def intervals(self):
        """Support intervals: square roots of those of the squared law."""
        return tuple((float(np.sqrt(lo)), float(np.sqrt(hi))) for lo, hi in self._sq.intervals())

    def support(self):
        """``(lower, upper)``."""
        lo, hi = self._sq.support()
        return (float(np.sqrt(lo)), float(np.sqrt(hi)))

    def pdf(self, s):
        """Density of ``s``: ``2 s f(s**2)``; finite at ``s = 0`` (theory eq. (6.6)).

        Parameters
        ----------
        s : array_like

        Returns
        -------
        ndarray or float
        """
        s = as_real_array(s, "s")
        flat = s.ravel()
        out = np.zeros(flat.shape)
        # Points beyond the support (including +inf, where s * f(s**2) would be
        # inf * 0) have density 0.
        pos = (flat > 0) & (flat <= np.sqrt(self._sq.support()[1]))
        if pos.any():
            out[pos] = 2.0 * flat[pos] * np.asarray(self._sq.pdf(flat[pos] ** 2))
        zero = flat == 0
        if zero.any() and self._sq._engine.intervals()[0][0] == 0.0:
            coef = self._sq._engine.population.hard_edge_coefficient()
            out[zero] = 2.0 * coef / np.sqrt(self._sq._scale)
        return out.reshape(s.shape) if s.ndim else float(out[0])

    def cdf(self, s):
        """CDF of ``s``: ``F(s**2)`` for ``s >= 0``, 0 below."""
        s = as_real_array(s, "s")
        out = np.where(s >= 0, self._sq.cdf(np.where(s >= 0, s, 0.0) ** 2), 0.0)
        return out if s.ndim else float(out)

    def ppf(self, q):
        """Quantiles of ``s``: ``sqrt`` of the squared law's quantiles."""
        return np.sqrt(self._sq.ppf(q))

    def moment(self, k):
        """``E[s**k]``; even ``k`` exact from eq. (5.8), odd ``k`` by eq. (6.9)."""
        k = check_int(k, "k", minimum=0)
        if k % 2 == 0:
            return self._sq.moment(k // 2)
        return _half_moment(self._sq, k)

    def mean(self):
        """``E[s]``."""
        return self.moment(1)

    def var(self):
        """``E[s**2] - E[s]**2``."""
        return self.moment(2) - self.moment(1) ** 2

    def stieltjes(self, z):
        """``G(z) = int dnu_s(s)/(z - s)`` for ``Im z > 0`` or real ``z`` off the support.

        Computed by Gauss-Legendre quadrature on the cached Chebyshev panels
        (eq. (6.7)); accurate to about 1e-12 when ``z`` is at least a few
        percent of the support width away from the support.
        """
        zarr = _check_z(z)
        zs = zarr.ravel()
        on_axis = zs.imag == 0
        for lo, hi in self.intervals():
            if np.any(on_axis & (zs.real >= lo) & (zs.real <= hi)):
                raise ValueError("real z inside the support is not supported for the "
                                 "singular-value law; pass Im z > 0")
        if self._stieltjes_nodes is None:
            pairs = list(_panel_quadrature(self._sq, extra=0))
            nodes = np.concatenate([x for x, _ in pairs])
            self._stieltjes_nodes = (np.sqrt(self._sq._scale * nodes),
                                     np.concatenate([w for _, w in pairs]))
        sv, w = self._stieltjes_nodes
        total = (w[None, :] / (zs[:, None] - sv[None, :])).sum(axis=1)
        if self.atom > 0:
            total += self.atom / zs
        return total.reshape(zarr.shape) if zarr.ndim else complex(total[0])


def _panel_quadrature(sq, extra):
    """Gauss-Legendre nodes ``x`` (normalized) and weights ``f(x) dx`` per panel.

    On each panel the integrand ``g(s)`` is a polynomial in ``s``, and so is
    ``g(s) * x(s)**(k/2)`` for a hard-edge ``left`` panel (``x = w s**2``);
    ``extra`` adds nodes for such polynomial factors (theory eq. (6.9)).
    """
    for p in sq._panels()[0]:
        t, wt = _gauss_legendre(p.g_coef.size + extra + QUADRATURE_EXTRA_NODES)
        a, b = p.s_range
        sv = a + (b - a) * (t + 1) / 2
        yield p.x_of_s(sv), wt * (b - a) / 2 * p.g_of_s(sv)


@lru_cache(maxsize=32)
def _gauss_legendre(n):
    """Gauss-Legendre nodes and weights on [-1, 1] (cached: panels share sizes)."""
    return np.polynomial.legendre.leggauss(n)


def _half_moment(sq, k):
    """``E[x**(k/2)]`` for odd ``k`` by Gauss-Legendre on the panels (eq. (6.9))."""
    total = sum(np.sum(x ** (k / 2) * w) for x, w in _panel_quadrature(sq, extra=k))
    return float(total * sq._scale ** (k / 2))


# --------------------------------------------------------------------------- #
# Constructors
# --------------------------------------------------------------------------- #

def _attention_population(beta, gamma):
    """Population ``H`` of eq. (5.5) in units of ``theta1``, and ``theta1``."""
    c = linear_coefficients(beta)
    pop = AffineMarchenkoPasturPopulation(shift=c.alpha2 / c.theta1,
                                          scale=c.theta2 / c.theta1, ratio=1.0 / gamma)
    return pop, c.theta1


@lru_cache(maxsize=64)
def _attention_squared(beta, gamma):
    pop, theta1 = _attention_population(beta, gamma)
    return EigenvalueLaw(SampleCovarianceLaw(pop, 1.0), theta1, beta=beta, gamma=gamma,
                         name=f"squared singular-value law beta={beta}, gamma={gamma}")


def attention_law(beta, gamma=1.0):
    """Limiting law of the singular values of ``sqrt(n) * A_perp``.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``1e-8 <= beta <= 4`` (``MIN_LAW_BETA``, ``MAX_LAW_BETA``).
    gamma : float, optional
        ``d_qk / n``, in ``[0.02, 50]``.

    Returns
    -------
    SingularValueLaw
        ``.squared()`` is the law of ``s**2``: the sample-covariance law with
        ratio 1 and population ``alpha**2 + beta**2 * MP_{1/gamma}`` (theory
        eqs. (5.1), (5.5)).

    Raises
    ------
    TypeError, ValueError
        For non-real or out-of-range ``beta`` or ``gamma``.
    ConvergenceError
        If the fixed-point equation is not solved to its tolerance at some
        point (the message quotes the point and the residual).

    Examples
    --------
    >>> law = attention_law(1.0)
    >>> sq = law.squared()
    >>> round(sq.mean(), 10), round(sq.moment(2), 10)   # theta1, 2 theta1^2 + 1
    (1.7182818285, 6.904984884)
    >>> [round(v, 6) for v in sq.support()]
    [0.0, 9.009543]
    >>> round(float(sq.cdf(sq.support()[1])), 12)
    1.0
    """
    b, g = _check_law_args(beta, gamma)
    return _attention_singular(b, g)


@lru_cache(maxsize=64)
def _attention_singular(beta, gamma):
    return SingularValueLaw(_attention_squared(beta, gamma))


@lru_cache(maxsize=64)
def _marchenko_pastur(variance, ratio):
    return EigenvalueLaw(SampleCovarianceLaw(PointMassPopulation(1.0), ratio), variance,
                         name=f"Marchenko-Pastur variance={variance}, ratio={ratio}")


def marchenko_pastur(variance, ratio=1.0):
    """Marchenko-Pastur law of the eigenvalues of ``X X^T / N``.

    Parameters
    ----------
    variance : float
        Entry variance ``> 0``.
    ratio : float, optional
        ``c = p/N`` in ``[1e-4, 1e4]`` (``MP_RATIO_RANGE``); an atom ``1 - 1/c``
        sits at 0 when ``c > 1``.

    Returns
    -------
    EigenvalueLaw
        Support ``variance * (1 -+ sqrt(c))**2`` (theory eq. (5.4)).

    Examples
    --------
    >>> mp = marchenko_pastur(2.0)
    >>> mp.support()
    (0.0, 8.0)
    >>> round(float(mp.pdf(2.0)), 12)      # sqrt((8 - x) x)/(2 pi v x) at x = 2
    0.137832223855
    """
    v = _scalar(check_positive(variance, "variance"), "variance")
    c = _scalar(check_positive(ratio, "ratio"), "ratio")
    if not MP_RATIO_RANGE[0] <= c <= MP_RATIO_RANGE[1]:
        raise ValueError(f"ratio must be in [{MP_RATIO_RANGE[0]}, {MP_RATIO_RANGE[1]}], "
                         f"got {ratio!r}")
    return _marchenko_pastur(v, c)


@dataclass(frozen=True)
class OperatorNorm:
    """Upper edge of the attention law beside the Marchenko-Pastur edge.

    Attributes
    ----------
    beta, gamma : float
    squared_edge : float
        Upper edge of the law of ``s**2`` (theory eq. (6.5)).
    norm : float
        ``sqrt(squared_edge)``: limit of the operator norm of ``sqrt(n) A_perp``.
    mp_squared_edge : float
        ``4 theta1``, the same-variance Marchenko-Pastur edge.
    mp_norm : float
        ``2 sqrt(theta1)``.
    """

    beta: float
    gamma: float
    squared_edge: float
    norm: float
    mp_squared_edge: float
    mp_norm: float


def _normalized_upper_edge(beta, gamma):
    pop, theta1 = _attention_population(beta, gamma)
    return float(pop.critical_values(1.0)[-1]), theta1


def operator_norm(beta, gamma=1.0):
    """Operator norm of the linear model: the upper edge of the support.

    Computed from the edge equation (theory eqs. (6.2)-(6.3)), not from the
    density.

    Parameters
    ----------
    beta : float
        ``1e-8 <= beta <= 4``.
    gamma : float, optional
        ``d_qk / n`` in ``[0.02, 50]``.

    Returns
    -------
    OperatorNorm

    Examples
    --------
    >>> r = operator_norm(1.0)
    >>> round(r.squared_edge, 6), round(r.mp_squared_edge, 6)
    (9.009543, 6.873127)
    """
    b, g = _check_law_args(beta, gamma)
    edge, theta1 = _normalized_upper_edge(b, g)
    sq = edge * theta1
    return OperatorNorm(beta=b, gamma=g, squared_edge=sq, norm=float(np.sqrt(sq)),
                        mp_squared_edge=4 * theta1, mp_norm=float(2 * np.sqrt(theta1)))


@dataclass(frozen=True)
class LinearizationThreshold:
    """``beta`` at which the bulk edge of ``sqrt(n) A`` reaches ``sqrt(n)``.

    Attributes
    ----------
    n : int
    gamma : float
    beta : float
        Solution of ``squared_edge(beta) = n`` (theory eq. (6.10)).
    norm : float
        ``sqrt(n)``, the common-mode singular value (= the bulk norm there).
    """

    n: int
    gamma: float
    beta: float
    norm: float


def linearization_threshold(n, gamma=1.0):
    """Inverse temperature where the bulk edge meets the common mode ``sqrt(n)``.

    Parameters
    ----------
    n : int
        Context length, ``n >= 2``.
    gamma : float, optional
        ``d_qk / n`` in ``[0.02, 50]``.

    Returns
    -------
    LinearizationThreshold

    Raises
    ------
    ValueError
        If the threshold lies beyond ``beta = 4``.

    Examples
    --------
    >>> t = linearization_threshold(1000)
    >>> round(t.beta, 6)
    2.350522
    """
    from scipy.optimize import brentq

    n = check_int(n, "n", minimum=2)
    g = _check_gamma(gamma)

    def gap(b):
        edge, theta1 = _normalized_upper_edge(b, g)
        return np.log(edge * theta1) - np.log(n)

    lo, hi = MIN_LAW_BETA, MAX_LAW_BETA
    if gap(lo) > 0:
        raise ValueError(f"n = {n} is too small: the edge exceeds n already at beta = {lo}")
    if gap(hi) < 0:
        raise ValueError(f"n = {n} is too large: the threshold lies beyond beta = {MAX_LAW_BETA}")
    beta = brentq(gap, lo, hi, xtol=THRESHOLD_RTOL, rtol=THRESHOLD_RTOL)
    return LinearizationThreshold(n=n, gamma=g, beta=float(beta), norm=float(np.sqrt(n)))
