"""``causal_law``: the limiting causal-attention law on the spectral-law base.

The law of the squared singular values of ``C = diag(1..n)(A - M)/sqrt(n)``
(theory/10_causal.md).  :class:`CausalLaw` implements the hooks of
:class:`freeattn.laws._law_base.SpectralLaw` from the solver of
:mod:`freeattn.attention._causal`:

- ``_support_intervals``: the intervals of eq. (10.17) (one, or two for a
  split support);
- ``_density``: the exact density (eq. (10.12));
- ``_stieltjes_exact``: ``G`` by the law's own solver;
- ``_moments_exact``: the moment recursion of eq. (10.16), orders up to
  ``MAX_MOMENT_ORDER = 12`` (float64; its terms do not cancel: measured
  against the contour integral of the solver's ``G`` to 1.1e-14 at order 12,
  tests/test_moments_exact.py); higher orders are quadrature of the
  representation (theory eq. (8.25), accurate to about 1e-11: 1.1e-11 at
  order 60).

The end at 0 is not a power law: the density diverges like
``1/(x log(theta1/x)**2)`` (eq. (10.18)).  The law declares it as a
:class:`freeattn.algebra._chebyshev.LogEnd` edge (scale ``theta1``) and gives the base
``x f(x)`` as a function of ``log x`` (``_log_end_density``), so that the
base's log-end panel (theory eq. (8.18)) is sampled exactly down to
``x = exp(-40000) theta1``; the CDF and quantiles there are the exact
integral of that panel's series, like every other panel's.
"""

from functools import lru_cache

import numpy as np

from . import _causal
from ..algebra._chebyshev import LogEnd
from ..laws._law_base import POINTWISE_EVALUATION_COST, SOFT, Interval, SpectralLaw
from ..core._options import DEFAULT_OPTIONS

__all__ = ["CausalLaw", "causal_law"]

#: Relative accuracy of the density samples of the log-end panel (the
#: ``sample_rtol`` of its LogEnd edge, theory eq. (8.18)): the solver's values of
#: ``x f(x)`` there carry 1e-14..1e-13 relative noise (layer grids of 49-81
#: nodes), so the panel's Chebyshev tail levels off at that height; 1e-12 stops
#: the tripling at 81 nodes (measured: 43-48 coefficients above it).
END_SAMPLE_RTOL = 1e-12

#: Chebyshev tail at which a panel of the bulk has converged (the engine's
#: ``cheb_tail_rtol`` for this law): the solver's density values carry
#: 1e-15..3e-15 relative noise (the coefficients of a panel level off there),
#: so the engine's default 2e-15 would be met only by luck and the panel would
#: be tripled to 243 nodes to detect the floor.
BULK_SAMPLE_RTOL = 1e-14

#: The composition solvers take ``G`` from the representation's Cauchy
#: integral where its error bound (theory eq. (8.28) and section 8.9: the
#: log-end panel's quadrature checked against a finer rule) is below this
#: relative to ``|G|``, and from the law's own solver (eq. (10.12), one
#: boundary-value problem per point) elsewhere.  Measured at 210 points of
#: C+ and of the gaps (``beta = 0.55``, ``gamma = 1.5``): 185 taken, within
#: 8.7e-13 of the solver (the largest 1e-8 of the width past the upper edge).
REPRESENTATION_TRANSFORM_RTOL = 1e-13


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

    # the boundary-value problem of theory section 10.5 is solved point by point
    _pointwise_transform = True
    _evaluation_cost = POINTWISE_EVALUATION_COST

    def __init__(self, beta, gamma, options=None):
        super().__init__(DEFAULT_OPTIONS.with_(cheb_tail_rtol=BULK_SAMPLE_RTOL)
                         if options is None else options)
        self.beta = float(beta)
        self.gamma = float(gamma)
        self._solver, self.theta1 = _causal._law(self.beta, self.gamma)

    def __repr__(self):
        return f"CausalLaw(beta={self.beta!r}, gamma={self.gamma!r})"

    # -- hooks ----------------------------------------------------------------------
    def _support_intervals(self):
        # The end at 0 is logarithmic (eq. (10.18)): a LogEnd edge of scale theta1
        # (theory eq. (8.18)); every other end is a square-root edge (eq. (10.17)).
        out = []
        for lo, hi in self._solver.intervals():
            lo_exp = LogEnd(self.theta1, END_SAMPLE_RTOL) if lo == 0.0 else SOFT
            out.append(Interval(lo * self.theta1, hi * self.theta1, lo_exp, SOFT))
        return tuple(out)

    def _density(self, x):
        dens, _ = _causal._real_axis(self._solver, np.asarray(x, dtype=float) / self.theta1, False)
        return dens / self.theta1

    def _log_end_density(self, t):
        """``x f(x)`` at ``x = exp(t)`` next to the log end (theory eq. (8.18)).

        ``x f(x) = lambda rho(lambda)`` (scale-free) ``= -Im(kappa b(0))/pi`` by
        eq. (10.12), solved at ``log lambda = t - log theta1`` directly, so the
        nodes far below the float range are exact too.
        """
        log_lam = np.asarray(t, dtype=float) - np.log(self.theta1)
        xf = np.empty(log_lam.shape)
        for idx, st, grid in _causal._solver_points(self._solver, log_lam):
            if idx.size:
                xf[idx] = -np.imag(st.kap * st.b[:, 0]) / np.pi
        return xf

    def _stieltjes_exact(self, z):
        return _causal.stieltjes_values(self._solver, self.theta1, z)

    def _stieltjes_pair(self, zs):
        """``(G, G')`` for the composition solvers: the representation's Cauchy
        integral where its error bound is below ``REPRESENTATION_TRANSFORM_RTOL``
        of ``|G|``, the law's solver elsewhere (``G'`` always from the
        representation, as for every law without an exact derivative)."""
        rep = self._representation()
        mass = self._continuous_mass() / rep.total
        g, dg, err, _ = rep.cauchy(zs, derivative=True, error=True)
        g, dg = g * mass, dg * mass
        exact = ~(err * mass <= REPRESENTATION_TRANSFORM_RTOL * np.abs(g))
        if exact.any():
            g[exact] = self._stieltjes(zs[exact])
        return g, dg

    def _moments_exact(self, kmax):
        # the recursion of eq. (10.16) up to its order; beyond it moment() integrates
        # the representation (eq. (8.25))
        if kmax > _causal.MAX_MOMENT_ORDER:
            return None
        unit = _causal._unit_moments(self._solver.a2, self._solver.b2, self.gamma, kmax) \
            if kmax >= 1 else np.empty(0)
        return self.theta1, np.concatenate([[1.0], unit])


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
    from ..core._options import check_options

    b, g = _causal._check_args(beta, gamma)
    return _causal_law(b, g, None if options is None else check_options(options))
