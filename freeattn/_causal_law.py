"""``causal_law``: the limiting causal-attention law on the spectral-law base.

The law of the squared singular values of ``C = diag(1..n)(A - M)/sqrt(n)``
(theory/10_causal.md).  :class:`CausalLaw` implements the hooks of
:class:`freeattn._law_base.SpectralLaw` from the solver of
:mod:`freeattn._causal`:

- ``_support_intervals``: the intervals of eq. (10.17) (one, or two for a
  split support);
- ``_density``: the exact density (eq. (10.12));
- ``_stieltjes_exact``: ``G`` by the law's own solver;
- ``_moments_exact``: the moment recursion of eq. (10.16).

The end at 0 is not a power law: the density diverges like
``1/(x log(theta1/x)**2)`` (eq. (10.18)), which no panel map of the base
(``x - lo = w s**p``) resolves.  The representation therefore gets one panel
of its own on ``(0, x_c]``, ``x_c = theta1 exp(-LOG_END_DECADES)``, in the
variable ``u`` of ``x = x_c (u/u_c) exp(1/u_c - 1/u)`` (``u_c = 1/LOG_END_DECADES``,
``u`` in ``(0, u_c]``).  Near 0 the law is the Dykema-Haagerup law at a shifted
point, whose CDF is analytic in ``1/Re T`` with ``T e^T = -theta1/x``; that
variable is ``u`` up to an analytic change, so ``f(x) dx/du`` is analytic at
``u = 0`` (it tends to ``1/u_c``... times ``A = 1``) and its Chebyshev series
converges geometrically.  Everything else (panels on ``[x_c, edge]``, CDF,
quantiles, quadrature) is the base's.
"""

from functools import lru_cache

import numpy as np
from numpy.polynomial import chebyshev as _cheb

from . import _causal
from ._chebyshev import (Panel, Representation, build_representation, first_kind_nodes,
                         gauss_legendre, nodes_coefficients)
from ._errors import ConvergenceError
from ._law_base import SOFT, Interval, SpectralLaw

__all__ = ["CausalLaw", "causal_law"]

#: The log-end panel covers x <= theta1 * exp(-LOG_END_DECADES) (natural log):
#: below 2.5e-3 theta1, where the boundary-layer regime of eq. (10.18) has set in
#: for gamma >= 0.3 (for smaller gamma the panel's series simply needs more terms).
LOG_END_DECADES = 6.0

#: Fit of the log-end panel: first-kind Chebyshev nodes, tripled from
#: END_START_NODES up to END_MAX_NODES until the coefficient tail is below
#: END_TAIL_RTOL relative -- the level of the solver's own noise (measured: the
#: series of g levels off at 1e-14..1e-13 of its largest coefficient).
END_START_NODES = 48
END_MAX_NODES = 432
END_TAIL_RTOL = 1e-12

#: Gauss-Legendre nodes beyond the panel's degree for the Cauchy integral of
#: the log-end panel (evaluated by quadrature; exact for z away from [0, x_c]).
END_CAUCHY_EXTRA = 64


class _LogEndMap:
    """``x = x_c (u/u_c) exp(1/u_c - 1/u)``, ``u = u_c (1 + sigma)/2``, on ``(0, x_c]``."""

    kind = "logend"
    power = 1

    def __init__(self, hi, u_c):
        self.lo = 0.0
        self.hi = float(hi)
        self.u_c = float(u_c)

    @property
    def width(self):
        return self.hi

    def x_of(self, sigma):
        u = self.u_c * (1.0 + np.asarray(sigma, dtype=float)) / 2.0
        with np.errstate(divide="ignore", under="ignore", over="ignore"):
            x = self.hi * (u / self.u_c) * np.exp(1.0 / self.u_c - 1.0 / u)
        return np.where(u > 0, x, 0.0)

    def sigma_of(self, x):
        """Inverse of :meth:`x_of`: ``v + log v = R`` for ``v = 1/u`` (Lambert W)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, self.hi)
        out = np.full(x.shape, -1.0)
        pos = x > 0
        R = 1.0 / self.u_c - np.log(self.u_c) + np.log(self.hi) - np.log(x[pos])
        v = R - np.log(R)
        for _ in range(8):                       # Newton on v + log v = R (v >= 1/u_c)
            v = v - (v + np.log(v) - R) / (1.0 + 1.0 / v)
        out[pos] = 2.0 / (self.u_c * v) - 1.0
        return out

    def dx_dsigma(self, sigma):
        u = self.u_c * (1.0 + np.asarray(sigma, dtype=float)) / 2.0
        x = self.x_of(sigma)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = x * (1.0 / u + 1.0 / (u * u)) * (self.u_c / 2.0)
        return np.where(u > 0, d, 0.0)


class _LogEndPanel(Panel):
    """A base panel on the log-end map; its Cauchy integral by quadrature."""

    def _edge_value(self, sig):
        return np.full_like(np.asarray(sig, dtype=float), np.inf)

    def cauchy(self, z, derivative=False):
        n = (self.coef.size + END_CAUCHY_EXTRA) // 2 + 2
        t, wt = gauss_legendre(n)
        x = self.map.x_of(t)
        w = wt * _cheb.chebval(t, self.coef)
        z = np.asarray(z, dtype=complex)
        d = z[:, None] - x[None, :]
        total = (w[None, :] / d).sum(axis=1)
        if derivative:
            return total, -(w[None, :] / d ** 2).sum(axis=1)
        return total


class CausalLaw(SpectralLaw):
    """Limiting law of the squared singular values of causal attention (theory note 10).

    Instances come from :func:`causal_law`; the constructor is private.

    Attributes
    ----------
    beta, gamma : float
    theta1 : float
        ``exp(beta**2) - 1``; the law's mean is ``theta1/2``.

    Examples
    --------
    >>> law = causal_law(1.0, 1.0)
    >>> round(law.mean() / law.theta1, 12), [round(v, 5) for v in law.support()]
    (0.5, [0.0, 5.52391])
    >>> round(float(law.cdf(1.0)), 6)
    0.702227
    """

    def __init__(self, beta, gamma, options=None):
        super().__init__(options)
        self.beta = float(beta)
        self.gamma = float(gamma)
        self._solver, self.theta1 = _causal._law(beta, gamma)

    def __repr__(self):
        return f"CausalLaw(beta={self.beta!r}, gamma={self.gamma!r})"

    # -- hooks ----------------------------------------------------------------------
    def _support_intervals(self):
        # The end at 0 is logarithmic, not a power law; HARD-like -1/2 is the
        # nearest exponent an Interval can state (read only by generic moment
        # quadrature; the representation of that end is the law's own panel).
        out = []
        for lo, hi in self._solver.intervals():
            lo_exp = -SOFT if lo == 0.0 else SOFT
            out.append(Interval(lo * self.theta1, hi * self.theta1, lo_exp, SOFT))
        return tuple(out)

    def _density(self, x):
        dens, _ = _causal._real_axis(self._solver, np.asarray(x, dtype=float) / self.theta1, False)
        return dens / self.theta1

    def _stieltjes_exact(self, z):
        return _causal.causal_stieltjes(self.beta, self.gamma, z)

    def _moments_exact(self, kmax):
        if kmax > _causal.MAX_MOMENT_ORDER:
            return None
        unit = _causal._unit_moments(self._solver.a2, self._solver.b2, self.gamma, kmax) \
            if kmax >= 1 else np.empty(0)
        return self.theta1, np.concatenate([[1.0], unit])

    def _end_values(self, sigma):
        """``g = f(x) dx/dsigma`` on the log-end panel, from ``log x`` (no underflow).

        ``x f(x) = lambda rho(lambda)`` (scale-free) ``= -Im(kappa b(0))/pi`` by
        eq. (10.12), computed from ``log lambda`` so that the nodes next to
        ``u = 0`` (``x`` far below the float range) are exact too.
        """
        m = self._end_map
        u = m.u_c * (1.0 + np.asarray(sigma, dtype=float)) / 2.0
        log_lam = np.log(m.hi / self.theta1) + np.log(u / m.u_c) + 1.0 / m.u_c - 1.0 / u
        xf = np.empty(u.shape)
        for idx, st, grid in _causal._solver_points(self._solver, log_lam):
            if idx.size:
                xf[idx] = -np.imag(st.kap * st.b[:, 0]) / np.pi
        return xf * (1.0 / u + 1.0 / (u * u)) * (m.u_c / 2.0)

    def _fit_end(self):
        """Chebyshev series of ``g`` on the log-end panel: nodes tripled from
        ``END_START_NODES`` until the last quarter of the coefficients is below
        ``END_TAIL_RTOL`` of the largest (at most ``END_MAX_NODES``)."""
        n = END_START_NODES
        while True:
            coef = nodes_coefficients(self._end_values(first_kind_nodes(n)))
            scale = float(np.max(np.abs(coef)))
            tail = float(np.max(np.abs(coef[-(n // 4):]))) / scale
            if tail <= END_TAIL_RTOL:
                keep = np.flatnonzero(np.abs(coef) > END_TAIL_RTOL * scale / 4)
                return coef[:keep[-1] + 1], tail
            if 3 * n > END_MAX_NODES:
                raise ConvergenceError(
                    f"the log-end panel (0, {self._end_map.hi!r}] of {self!r} did not converge: "
                    f"coefficient tail {tail:.2e} > {END_TAIL_RTOL:.0e} with {n} nodes",
                    residual=tail, tolerance=END_TAIL_RTOL, iterations=n)
            n *= 3

    def _representation(self):
        if self._rep is None:
            x_c = self.theta1 * np.exp(-LOG_END_DECADES)
            self._end_map = _LogEndMap(x_c, 1.0 / LOG_END_DECADES)
            coef, tail = self._fit_end()
            end = _LogEndPanel(self._end_map, coef, tail, 0)
            ivs = list(self.interval_details())
            first = ivs[0]
            ivs[0] = Interval(x_c, first.hi, 0, first.hi_exponent)
            rest = build_representation(self._density, ivs, self.options,
                                        expected_mass=1.0 - end.mass)
            self._rep = Representation([end] + list(rest.panels))
        return self._rep


@lru_cache(maxsize=32)
def _causal_law(beta, gamma, options):
    return CausalLaw(beta, gamma, options)


def causal_law(beta, gamma=1.0, *, options=None):
    """Limiting law of the squared singular values of causal softmax attention.

    The law of ``C = diag(1..n)(A - M)/sqrt(n)`` and of the masked linear
    model ``Y_c = L * (beta S + alpha W)/sqrt(n)`` as ``n -> oo`` with
    ``d_qk/n = gamma`` (theory eqs. (10.1), (10.3), (10.5)).

    Parameters
    ----------
    beta : float
        Inverse temperature in ``[1e-8, 4]`` (``CAUSAL_BETA_RANGE``).
    gamma : float, optional
        ``d_qk/n`` in ``[0.1, 10]`` (``CAUSAL_GAMMA_RANGE``).
    options : SolverOptions, optional
        Tolerances of the engine's representation.

    Returns
    -------
    CausalLaw
        A spectral law (``pdf``, ``cdf``, ``ppf``, ``moment``, ``support``,
        ``stieltjes``, ...).

    Raises
    ------
    TypeError, ValueError
        For non-real or out-of-range ``beta`` or ``gamma``.
    ConvergenceError
        If the boundary-value problem or the representation fails its
        tolerance.

    Examples
    --------
    >>> law = causal_law(1.0)
    >>> q = law.ppf([0.01, 0.5, 0.99])
    >>> bool(q[0] < 1e-30), round(float(law.cdf(q[1])), 10)
    (True, 0.5)
    """
    from ._options import check_options

    b, g = _causal._check_args(beta, gamma)
    return _causal_law(b, g, None if options is None else check_options(options))
