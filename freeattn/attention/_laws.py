"""The attention law, its operator norm and the linearization threshold.

The law of the squared singular values of ``sqrt(n) * A_perp`` is the
sample-covariance law with ratio 1 and population
``H = alpha**2 + beta**2 * MP_{1/gamma}`` (theory eqs. (5.1), (5.5)); on the
composable engine that is

    sample_covariance(marchenko_pastur(1, 1/gamma).affine(alpha**2, beta**2), 1)

-- a rational tower (theory section 8.4) whose defining polynomial is the
quartic (5.6).  The law is solved in units of ``theta1`` (which keeps
``beta = 1e-4`` and ``beta = 4`` equally well conditioned) and scaled back.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core._checks import ATTENTION_BETA, ATTENTION_GAMMA, Integer
from ._coefficients import linear_coefficients
from ..laws._elementary import MarchenkoPastur, marchenko_pastur
from ..compose._subordination import sample_covariance
from ..laws._law_base import AffineLaw, SingularValueLaw

__all__ = [
    "AttentionLaw",
    "EigenvalueLaw",
    "SingularValueLaw",
    "OperatorNorm",
    "LinearizationThreshold",
    "attention_law",
    "marchenko_pastur",
    "operator_norm",
    "linearization_threshold",
    "MIN_LAW_BETA",
    "MAX_LAW_BETA",
    "GAMMA_RANGE",
    "check_law_args",
]

#: Accuracy range of the laws in beta.  Beyond it ``exp(beta**2)`` still fits in
#: float64 up to beta ~ 26.6, but ``theta2/theta1 = beta**2/(exp(beta**2) - 1)``
#: < 1.8e-6 and the law is Marchenko-Pastur of variance theta1 to that order.
MAX_LAW_BETA = ATTENTION_BETA.high
#: Smallest beta served by the laws.  In units of theta1 the noise weight is
#: ``alpha**2/theta1 ~ beta**2/2``; at beta = 1e-8 the law equals its
#: beta -> 0 limit (theory eq. (6.11)) to O(beta**2) = 1e-16.
MIN_LAW_BETA = ATTENTION_BETA.low

#: Range of gamma = d_qk/n served by the laws: down to 1e-4 (long contexts:
#: d_head = 64 at n = 128k is 5e-4) and up to 1e4.
GAMMA_RANGE = ATTENTION_GAMMA.range

#: The spectral laws are instances of the base class; the historical name of
#: the eigenvalue law's class is kept for ``isinstance`` checks.
from ..laws._law_base import SpectralLaw as EigenvalueLaw  # noqa: E402


def check_law_args(beta, gamma):
    """``beta`` and ``gamma`` checked against :data:`ATTENTION_BETA` and
    :data:`ATTENTION_GAMMA` (the public entry points' one check; the functions
    below them take floats in range)."""
    return ATTENTION_BETA.check(beta, "beta"), ATTENTION_GAMMA.check(gamma, "gamma")


class AttentionLaw(AffineLaw):
    """Law of the squared singular values of ``sqrt(n) * A_perp`` (an eigenvalue law).

    ``theta1 * nu`` with ``nu`` the normalized sample-covariance law of theory
    eqs. (5.1), (5.5); built by :func:`attention_law` (``.squared()``).

    Attributes
    ----------
    beta, gamma : float
    variance : float
        ``theta1``, the mean of the law.
    ratio : float
        1 (the aspect ratio of the sample covariance).
    normalized : SpectralLaw
        The law in units of ``theta1``.

    Examples
    --------
    >>> sq = attention_law(0.5, 0.1).squared()
    >>> [tuple(round(v, 4) for v in iv) for iv in sq.intervals()]   # split support
    [(0.0, 0.1223), (0.8956, 5.4819)]
    >>> round(sq.cdf(0.5), 12)                  # the noise bulk carries 1 - gamma
    0.9
    >>> round(sq.ppf(0.85), 4), round(float(sq.cdf(sq.ppf(0.85))), 12)
    (0.0924, 0.85)
    >>> g = sq.stieltjes(1j)
    >>> g.imag < 0
    True
    """

    ratio = 1.0

    def __init__(self, beta, gamma, normalized, theta1):
        super().__init__(normalized, 0.0, theta1)
        self.beta = beta
        self.gamma = gamma
        self.variance = theta1
        self.normalized = normalized

    def _describe(self):
        return f"squared singular-value law beta={self.beta}, gamma={self.gamma}"

    def squared(self):
        """Return ``self`` (the eigenvalue law is the law of the squared singular values)."""
        return self


def _attention_population(beta, gamma):
    """Population ``H = a + b MP_{1/gamma}`` of eq. (5.5) in units of theta1, and theta1."""
    c = linear_coefficients(beta)
    mp = MarchenkoPastur(1.0, 1.0 / gamma)
    return mp.affine(c.alpha2 / c.theta1, c.theta2 / c.theta1), c.theta1


@lru_cache(maxsize=64)
def _attention_squared(beta, gamma, options=None):
    pop, theta1 = _attention_population(beta, gamma)
    return AttentionLaw(beta, gamma, sample_covariance(pop, 1.0, options=options), theta1)


def attention_law(beta, gamma=1.0, *, tokens=None, options=None):
    """Limiting law of the singular values of ``sqrt(n) * A_perp``.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``1e-8 <= beta <= 4`` (``MIN_LAW_BETA``, ``MAX_LAW_BETA``).
    gamma : float, optional
        ``d_qk / n``, in ``[1e-4, 1e4]`` (``GAMMA_RANGE``).
    tokens : SpectralLaw or None, optional
        Spectral law (mean 1) of the token Gram ``X X^T/D`` for tokens with
        equal norms; ``None`` (isotropic tokens, ``X X^T/D = I``) is the law
        below.  Otherwise the law of theory eq. (13.7), built by
        :func:`freeattn.attention._token_law.token_attention_law`.
    options : SolverOptions, optional
        Tolerances of the engine (:data:`freeattn.DEFAULT_OPTIONS`).

    Returns
    -------
    SingularValueLaw
        ``.squared()`` is the law of ``s**2``: the sample-covariance law with
        ratio 1 and population ``alpha**2 + beta**2 * MP_{1/gamma}`` (theory
        eqs. (5.1), (5.5)), an :class:`AttentionLaw`.

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
    from ..core._options import check_options

    b, g = check_law_args(beta, gamma)
    if tokens is not None:
        from ._token_law import check_tokens, is_unit_point_mass, token_attention_law

        if not is_unit_point_mass(check_tokens(tokens)):
            return token_attention_law(b, g, tokens, options=options)
    return _attention_singular(b, g, None if options is None else check_options(options))


@lru_cache(maxsize=64)
def _attention_singular(beta, gamma, options=None):
    return SingularValueLaw(_attention_squared(beta, gamma, options))


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
    law = _attention_squared(beta, gamma)
    return float(law.normalized.interval_details()[-1].hi), law.variance


def operator_norm(beta, gamma=1.0):
    """Operator norm of the linear model: the upper edge of the support.

    Computed from the critical points of the inverse map (theory eqs.
    (6.2)-(6.3), (8.12)), not from the density.

    Parameters
    ----------
    beta : float
        ``1e-8 <= beta <= 4``.
    gamma : float, optional
        ``d_qk / n`` in ``[1e-4, 1e4]``.

    Returns
    -------
    OperatorNorm

    Examples
    --------
    >>> r = operator_norm(1.0)
    >>> round(r.squared_edge, 6), round(r.mp_squared_edge, 6)
    (9.009543, 6.873127)
    """
    b, g = check_law_args(beta, gamma)
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


#: Relative accuracy in beta of the linearization threshold (brentq).
THRESHOLD_RTOL = 1e-13


def linearization_threshold(n, gamma=1.0):
    """Inverse temperature where the bulk edge meets the common mode ``sqrt(n)``.

    Parameters
    ----------
    n : int
        Context length, ``n >= 2``.
    gamma : float, optional
        ``d_qk / n`` in ``[1e-4, 1e4]``.

    Returns
    -------
    LinearizationThreshold

    Raises
    ------
    ValueError
        If the threshold lies beyond ``beta = 4`` (``n`` too large) or below
        ``beta = 1e-8``.

    Examples
    --------
    >>> t = linearization_threshold(1000)
    >>> round(t.beta, 6)
    2.350522
    """
    from scipy.optimize import brentq

    n = Integer(2).check(n, "n")
    g = ATTENTION_GAMMA.check(gamma, "gamma")
    log_n = math.log(n)

    def gap(b):
        edge, theta1 = _normalized_upper_edge(b, g)
        return math.log(edge * theta1) - log_n

    lo, hi = MIN_LAW_BETA, MAX_LAW_BETA
    if gap(lo) > 0:
        raise ValueError(f"n = {n} is too small: the edge exceeds n already at beta = {lo}")
    if gap(hi) < 0:
        raise ValueError(f"n = {n} is too large: the threshold lies beyond beta = {MAX_LAW_BETA} "
                         f"(the edge there is {math.exp(gap(hi) + log_n):.4g} < n)")
    beta = brentq(gap, lo, hi, xtol=THRESHOLD_RTOL, rtol=THRESHOLD_RTOL)
    return LinearizationThreshold(n=n, gamma=g, beta=float(beta), norm=float(np.sqrt(n)))
