"""Coefficients of the Gaussian-equivalent linear model (numeric core).

See theory/02_coefficients.md.  The symbolic derivation (sympy) and the mpmath
path are added alongside; this module holds the float64 evaluation that the
solvers use.
"""

from dataclasses import dataclass

import numpy as np

from ._checks import check_beta

__all__ = ["LinearCoefficients", "linear_coefficients"]

# Below this value of x = beta**2, expm1(x) - x loses relative accuracy to
# cancellation; the Taylor series sum_{k>=2} x**k / k! is used instead.  At
# x = 1 the series needs 20 terms to reach float64 precision (1/20! < 1e-18).
_SERIES_CUTOFF = 1.0
_SERIES_TERMS = 22


def _exp_minus_1_minus_x(x):
    """``exp(x) - 1 - x`` in float64 without cancellation, elementwise."""
    x = np.asarray(x, dtype=np.float64)
    small = np.atleast_1d(x < _SERIES_CUTOFF)
    out = np.atleast_1d(np.expm1(x) - x)
    if small.any():
        xs = np.atleast_1d(x)[small]
        term = xs * xs / 2.0
        total = term.copy()
        for k in range(3, _SERIES_TERMS + 1):
            term = term * xs / k
            total = total + term
        out[small] = total
    return out.reshape(x.shape)


@dataclass(frozen=True)
class LinearCoefficients:
    """Coefficients of the linear model ``Y_lin = (beta*S + alpha*W)/sqrt(n)``.

    Attributes
    ----------
    beta : float or ndarray
        Inverse temperature.
    theta1 : float or ndarray
        ``E[f(chi)**2] = exp(beta**2) - 1``, theory eq. (2.4).
    theta2 : float or ndarray
        ``E[f'(chi)]**2 = beta**2``, theory eq. (2.5).
    alpha2 : float or ndarray
        ``theta1 - theta2 = exp(beta**2) - 1 - beta**2``, theory eq. (2.6).
    alpha : float or ndarray
        ``sqrt(alpha2)``.
    """

    beta: object
    theta1: object
    theta2: object
    alpha2: object
    alpha: object


def _float_coefficients(beta):
    b = check_beta(beta)
    x = b * b
    theta1 = np.expm1(x)
    theta2 = x
    alpha2 = _exp_minus_1_minus_x(x)
    alpha = np.sqrt(alpha2)
    if b.ndim == 0:
        return LinearCoefficients(float(b), float(theta1), float(theta2),
                                  float(alpha2), float(alpha))
    return LinearCoefficients(b, theta1, theta2, alpha2, alpha)


def linear_coefficients(beta, *, exact=False):
    """Coefficients ``theta1``, ``theta2``, ``alpha`` of the linear model.

    Parameters
    ----------
    beta : float or array_like
        Inverse temperature, ``0 < beta <= 26.64`` in float64.
    exact : bool, optional
        Return sympy expressions instead of floats.

    Returns
    -------
    LinearCoefficients

    Examples
    --------
    >>> c = linear_coefficients(1.0)
    >>> round(c.theta1, 12), c.theta2
    (1.718281828459, 1.0)
    """
    if exact:
        raise NotImplementedError("exact=True is provided by the symbolic module")
    return _float_coefficients(beta)
