"""Coefficients of the Gaussian-equivalent linear model (numeric core).

See theory/02_coefficients.md.  The symbolic derivation (sympy) and the mpmath
path are added alongside; this module holds the float64 evaluation that the
solvers use.
"""

from dataclasses import dataclass

import numpy as np

from ._checks import as_real_array, check_beta
from ._tolerances import MAX_FLOAT_EXP_ARG

__all__ = [
    "LinearCoefficients",
    "linear_coefficients",
    "conditional_mean",
    "conditional_covariance",
    "gaussian_equivalent_covariance",
]

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


def _check_gram_beta(gram, beta):
    """Validate a key Gram matrix and a scalar ``beta``; return them as floats.

    ``gram`` must be a real, finite array of shape ``(..., n, n)`` with a
    non-negative diagonal (it is ``K K^T / d_qk``); ``beta`` a real scalar in
    ``(0, 26.64]``.
    """
    rho = as_real_array(gram, "gram")
    if rho.ndim < 2 or rho.shape[-1] != rho.shape[-2]:
        raise ValueError(f"gram must be a square matrix of shape (n, n) "
                         f"(or a stack (..., n, n)), got shape {rho.shape}")
    if not np.isfinite(rho).all():
        raise ValueError("gram must be finite (it is K K^T / d_qk)")
    if (np.diagonal(rho, axis1=-2, axis2=-1) < 0).any():
        raise ValueError("gram must have a non-negative diagonal "
                         "(rho_jj = |k_j|^2 / d_qk >= 0)")
    b = check_beta(beta)
    if b.ndim != 0:
        raise ValueError(f"beta must be a scalar here, got shape {b.shape}")
    return rho, float(b)


def _finite_or_raise(values, what, beta):
    if not np.isfinite(values).all():
        raise ValueError(f"{what} overflows float64 at beta={beta!r}: beta**2 * rho "
                         f"exceeds {MAX_FLOAT_EXP_ARG:.2f}; use a smaller beta "
                         f"(allowed range depends on gram) or the symbolic module")
    return values


def conditional_mean(gram, beta):
    """Conditional mean of a feature row ``f(S_i.)`` given the keys.

    With ``f(x) = exp(beta*x - beta**2/2) - 1`` and a query ``q ~ N(0, I)``,
    the score ``S_ij = q.k_j/sqrt(d_qk)`` is ``N(0, rho_jj)`` given the keys,
    so (theory eq. (3.5))::

        E[f(S_ij) | K] = exp(beta**2 * (rho_jj - 1) / 2) - 1.

    Parameters
    ----------
    gram : array_like, shape (n, n) or (..., n, n)
        Key Gram matrix ``rho = K K^T / d_qk``; only its diagonal is used.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.

    Returns
    -------
    numpy.ndarray, shape (n,) or (..., n)
        The mean of the *unscaled* row ``f(S_i.)``.  The row of
        ``Y_f = f(S)/sqrt(n)`` (SPEC section 3, item 3) has mean
        ``conditional_mean(gram, beta) / sqrt(n)``.

    Raises
    ------
    TypeError
        If ``gram`` or ``beta`` is not real.
    ValueError
        If ``gram`` is not square and finite with a non-negative diagonal, or
        ``beta`` is not in ``(0, 26.64]``.

    Examples
    --------
    >>> import numpy as np
    >>> conditional_mean(np.eye(3), 1.0)
    array([0., 0., 0.])
    >>> conditional_mean(np.diag([1.5, 1.0]), 2.0).round(6)
    array([1.718282, 0.      ])
    """
    rho, b = _check_gram_beta(gram, beta)
    diag = np.diagonal(rho, axis1=-2, axis2=-1)
    with np.errstate(over="ignore"):
        mean = np.expm1(0.5 * b * b * (diag - 1.0))
    return _finite_or_raise(mean, "conditional_mean", beta)


def conditional_covariance(gram, beta):
    """Exact conditional covariance ``Sigma_f`` of a feature row given the keys.

    Given the keys, ``(S_ij, S_ik)`` is a centred bivariate Gaussian with
    covariance ``[[rho_jj, rho_jk], [rho_jk, rho_kk]]``; the Gaussian moment
    generating function gives (theory eq. (4.2))::

        (Sigma_f)_jk = exp(beta**2 (rho_jj + rho_kk - 2) / 2) * (exp(beta**2 rho_jk) - 1).

    Parameters
    ----------
    gram : array_like, shape (n, n) or (..., n, n)
        Key Gram matrix ``rho = K K^T / d_qk`` (symmetric).
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.

    Returns
    -------
    numpy.ndarray, shape (n, n) or (..., n, n)
        Covariance of the *unscaled* row ``f(S_i.)``.  A row of
        ``Y_f = f(S)/sqrt(n)`` has covariance ``Sigma_f / n``.

    Raises
    ------
    TypeError
        If ``gram`` or ``beta`` is not real.
    ValueError
        If ``gram`` is not square and finite with a non-negative diagonal,
        ``beta`` is not in ``(0, 26.64]``, or the result overflows float64.

    Notes
    -----
    At ``rho = I`` the diagonal is ``theta1 = exp(beta**2) - 1`` (theory
    eq. (2.4)) and the off-diagonal vanishes.  ``expm1`` keeps the small
    off-diagonal entries (``rho_jk = O(d_qk**-1/2)``) accurate.

    Examples
    --------
    >>> import numpy as np
    >>> conditional_covariance(np.eye(2), 1.0).round(6)
    array([[1.718282, 0.      ],
           [0.      , 1.718282]])
    """
    rho, b = _check_gram_beta(gram, beta)
    x = b * b
    diag = np.diagonal(rho, axis1=-2, axis2=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.exp(0.5 * x * (diag - 1.0))
        cov = scale[..., :, None] * scale[..., None, :] * np.expm1(x * rho)
    return _finite_or_raise(cov, "conditional_covariance", beta)


def gaussian_equivalent_covariance(gram, beta):
    """Gaussian-equivalent covariance ``Sigma_G = theta2 rho + (theta1 - theta2) I``.

    The first-order Taylor replacement of ``Sigma_f`` at ``rho_jj = 1``,
    ``rho_jk = O(d_qk**-1/2)`` (theory eqs. (4.4)-(4.5))::

        Sigma_G = beta**2 * rho + (exp(beta**2) - 1 - beta**2) * I.

    Parameters
    ----------
    gram : array_like, shape (n, n) or (..., n, n)
        Key Gram matrix ``rho = K K^T / d_qk``.
    beta : float
        Inverse temperature, ``0 < beta <= 26.64``.

    Returns
    -------
    numpy.ndarray, shape (n, n) or (..., n, n)
        Unscaled covariance; a row of the linear model ``Y_lin`` (SPEC
        section 2) has covariance ``Sigma_G / n``.

    Raises
    ------
    TypeError
        If ``gram`` or ``beta`` is not real.
    ValueError
        If ``gram`` is not square and finite with a non-negative diagonal, or
        ``beta`` is not in ``(0, 26.64]``.

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_equivalent_covariance(np.array([[1.0, 0.1], [0.1, 1.0]]), 1.0).round(6)
    array([[1.718282, 0.1     ],
           [0.1     , 1.718282]])
    """
    rho, b = _check_gram_beta(gram, beta)
    c = _float_coefficients(b)
    eye = np.eye(rho.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        cov = c.theta2 * rho + c.alpha2 * eye
    return _finite_or_raise(cov, "gaussian_equivalent_covariance", beta)
