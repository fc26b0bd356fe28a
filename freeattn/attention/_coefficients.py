"""Coefficients of the Gaussian-equivalent linear model, and the key-conditional moments.

Float64 (vectorized), mpmath (``dps=``) and sympy (``exact=True``, derived in
:mod:`freeattn.attention._symbolic`) evaluation of ``theta1``, ``theta2``, ``alpha``
(theory/02_coefficients.md), and the conditional mean and covariance of a
feature row given the keys together with their Gaussian-equivalent
replacement (theory/03_centering.md, theory/04_covariance.md).
"""

import fractions
import numbers
from dataclasses import dataclass

import numpy as np

from ..core._checks import MAX_FLOAT_BETA, as_real_array, check_beta, check_int
from ..core._tolerances import MAX_FLOAT_EXP_ARG

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


# Veltkamp's splitting constant 2**27 + 1: splits a float64 into two halves
# whose products are exact (Dekker's error-free product).
_SPLITTER = 134217729.0


def _square_with_error(b):
    """``b*b`` as an unevaluated sum ``hi + lo`` with ``hi = fl(b*b)`` (Dekker).

    ``exp(beta**2)`` amplifies the rounding error of ``beta**2`` by
    ``beta**2`` (up to 710); carrying ``lo`` as a first-order correction keeps
    ``theta1`` and ``alpha2`` accurate to a few ulp at every ``beta``.
    """
    hi = b * b
    c = _SPLITTER * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    lo = ((b_hi * b_hi - hi) + 2.0 * b_hi * b_lo) + b_lo * b_lo
    return hi, lo


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


#: Guard digits added to the working precision of the mpmath path.
_MP_GUARD_DIGITS = 10


def _check_float_beta(beta):
    """``beta`` for the float64 path: real, finite, ``0 < beta <= 26.64``.

    Beyond 26.64, ``exp(beta**2)`` overflows float64; the message points to
    the mpmath (``dps=``) and sympy (``exact=True``) paths.
    """
    if beta is None:
        raise TypeError("beta must be a real number or array of real numbers "
                        "(allowed range (0, 26.64] in float64), got None")
    b = check_beta(beta, upper=None)
    if (b > MAX_FLOAT_BETA).any():
        raise ValueError(
            f"beta must be in (0, {MAX_FLOAT_BETA:.4f}] for float64 evaluation "
            f"(exp(beta**2) overflows beyond), got {beta!r}; for larger beta use "
            f"linear_coefficients(beta, dps=30) (mpmath) or exact=True (sympy)")
    return b


def _float_coefficients(beta):
    b = _check_float_beta(beta)
    x, x_lo = _square_with_error(b)
    theta1 = np.expm1(x) + np.exp(x) * x_lo
    theta2 = x
    # eq. (2.6): theta1 >= theta2.  Where beta**2 is subnormal (beta < 1.5e-154) the
    # split error x_lo of the square is not representable and theta1 could fall an
    # ulp below theta2; the exact theta1 is beta**2 (1 + beta**2/2 + ...) >= theta2.
    theta1 = np.maximum(theta1, theta2)
    alpha2 = _exp_minus_1_minus_x(x) + np.expm1(x) * x_lo
    alpha = np.sqrt(alpha2)
    if b.ndim == 0:
        return LinearCoefficients(float(b), float(theta1), float(theta2),
                                  float(alpha2), float(alpha))
    return LinearCoefficients(b, theta1, theta2, alpha2, alpha)


def _check_mp_inputs(beta, dps):
    """Check ``beta`` (a real scalar) and ``dps`` for the mpmath path.

    Returns
    -------
    tuple
        ``(dps, beta)`` with ``beta`` an ``mpmath.mpf`` converted at
        ``dps + _MP_GUARD_DIGITS`` digits.
    """
    import mpmath
    import sympy

    dps = check_int(dps, "dps", minimum=1)
    if isinstance(beta, (str, bytes, bool, np.bool_)) or not (
            isinstance(beta, (numbers.Real, np.floating, np.integer, mpmath.mpf))
            or (isinstance(beta, sympy.Basic) and beta.is_number)):
        raise TypeError(f"beta must be a real scalar for the mpmath path (dps=...), "
                        f"allowed range (0, oo); got {type(beta).__name__} {beta!r}")
    with mpmath.workdps(dps + _MP_GUARD_DIGITS):
        if isinstance(beta, fractions.Fraction):
            value = mpmath.mpf(beta.numerator) / beta.denominator
        elif isinstance(beta, sympy.Basic):
            if beta.is_extended_real is False:
                raise TypeError(f"beta must be real, got {beta!r}")
            value = mpmath.mpf(sympy.Float(beta, mpmath.mp.dps))
        else:
            value = mpmath.mpf(beta)
    if not mpmath.isfinite(value) or value <= 0:
        raise ValueError(f"beta must be finite and > 0 (allowed range (0, oo)), got {beta!r}")
    return dps, value


def _check_exact_or_dps(exact, dps):
    """Reject ``exact=True`` together with ``dps=...``: the evaluation paths exclude each other."""
    if exact and dps is not None:
        raise ValueError("give either exact=True or dps=..., not both")


def _mp_coefficients(beta, dps):
    """``theta1``, ``theta2``, ``alpha2``, ``alpha`` as mpmath numbers at ``dps`` digits.

    ``expm1(x) - x`` (``x = beta**2``) cancels ``log10(2/x)`` digits for
    small ``x``; the working precision is raised by that many digits plus
    :data:`_MP_GUARD_DIGITS`, then the results are rounded to ``dps`` digits.
    """
    import mpmath

    dps, b = _check_mp_inputs(beta, dps)
    with mpmath.workdps(dps + _MP_GUARD_DIGITS):
        lost = max(0, int(mpmath.ceil(mpmath.log10(2 / (b * b)))))
    with mpmath.workdps(dps + _MP_GUARD_DIGITS + lost):
        x = b * b
        theta1 = mpmath.expm1(x)
        alpha2 = theta1 - x
        alpha = mpmath.sqrt(alpha2)
    with mpmath.workdps(dps):
        return LinearCoefficients(+b, +theta1, +x, +alpha2, +alpha)


def _exact_coefficients(beta):
    import sympy

    from ._symbolic import BETA, as_sympy_beta, derive_linear_coefficients

    b = as_sympy_beta(beta)
    derived = derive_linear_coefficients()
    theta1, theta2, alpha2 = (derived[name].subs(BETA, b)
                              for name in ("theta1", "theta2", "alpha2"))
    return LinearCoefficients(b, theta1, theta2, alpha2, sympy.sqrt(alpha2))


def linear_coefficients(beta, *, exact=False, dps=None):
    """Coefficients ``theta1``, ``theta2``, ``alpha`` of the linear model.

    The linear model ``Y_lin = (beta*S + alpha*W)/sqrt(n)`` has the same
    limiting singular-value law as ``sqrt(n) * A_perp`` (Hayase, Collins &
    Karakida, AISTATS 2026), with

    - ``theta1 = E[f(chi)^2] = exp(beta**2) - 1``, theory eq. (2.4);
    - ``theta2 = E[f'(chi)]^2 = beta**2``, theory eq. (2.5);
    - ``alpha2 = theta1 - theta2 = exp(beta**2) - 1 - beta**2``, theory eq. (2.6).

    Parameters
    ----------
    beta : float, array_like, or sympy expression
        Inverse temperature ``> 0``.  Float path: ``0 < beta <= 26.64``
        (``exp(beta**2)`` must be a finite float64), vectorized over arrays.
        ``exact=True``: a sympy symbol or number, an ``int``, a
        :class:`fractions.Fraction`, or a float (taken at its exact binary
        value).  ``dps``: a real scalar, any size.
    exact : bool, optional
        Return sympy expressions, derived symbolically (:mod:`._symbolic`).
    dps : int, optional
        Evaluate with mpmath at ``dps`` significant decimal digits (returns
        ``mpmath.mpf``; no upper limit on ``beta``).  Cannot be combined with
        ``exact``.

    Returns
    -------
    LinearCoefficients
        Floats (0-d input), arrays (array input), sympy expressions or mpmath
        numbers.

    Raises
    ------
    TypeError
        If ``beta`` is a string, bool, complex or not numeric.
    ValueError
        If ``beta <= 0``, NaN or infinite, or above 26.64 on the float path;
        if both ``exact`` and ``dps`` are given.

    Notes
    -----
    The float path computes ``theta1`` with ``expm1`` and ``alpha2`` with
    the series ``sum_{k>=2} x**k/k!`` (``x = beta**2 < 1``), so both keep full
    relative accuracy for small ``beta``.

    Examples
    --------
    >>> c = linear_coefficients(1.0)
    >>> round(c.theta1, 12), c.theta2
    (1.718281828459, 1.0)
    >>> linear_coefficients(0.5, exact=True).alpha2
    -5/4 + exp(1/4)
    >>> import mpmath
    >>> mpmath.nstr(linear_coefficients(30, dps=20).theta1, 20)
    '8.1940126239905154893e+390'
    """
    _check_exact_or_dps(exact, dps)
    if exact:
        return _exact_coefficients(beta)
    if dps is not None:
        return _mp_coefficients(beta, dps)
    return _float_coefficients(beta)


def _check_gram_beta(gram, beta):
    """Validate a key Gram matrix and a scalar ``beta``; return them as floats.

    ``gram`` must be a real, finite array of shape ``(..., n, n)`` with a
    non-negative diagonal (it is ``K K^T / d_qk``); ``beta`` a real scalar in
    ``(0, 26.64]``.
    """
    rho = as_real_array(gram, "gram", finite=True)
    if rho.ndim < 2 or rho.shape[-1] != rho.shape[-2]:
        raise ValueError(f"gram must be a square matrix of shape (n, n) "
                         f"(or a stack (..., n, n)), got shape {rho.shape}")
    if (np.diagonal(rho, axis1=-2, axis2=-1) < 0).any():
        raise ValueError("gram must have a non-negative diagonal "
                         "(rho_jj = |k_j|^2 / d_qk >= 0)")
    b = _check_float_beta(beta)
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
        ``Y_f = f(S)/sqrt(n)`` (theory eq. (7.2)) has mean
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
        # In place: one n x n array beyond the input (n = 4000 in validation).
        cov = np.multiply(rho, x)
        np.expm1(cov, out=cov)
        cov *= scale[..., :, None]
        cov *= scale[..., None, :]
    return _finite_or_raise(cov, "conditional_covariance", beta)


def gaussian_equivalent_covariance(gram, beta):
    """Gaussian-equivalent covariance ``Sigma_G = theta2 rho + (theta1 - theta2) I``.

    The first-order Taylor replacement of ``Sigma_f`` at ``rho_jj = 1``,
    ``rho_jk = O(d_qk**-1/2)`` (theory eqs. (4.4) and (4.5))::

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
        Unscaled covariance; a row of the linear model ``Y_lin`` (theory
        eqs. (1.4), (7.6)) has covariance ``Sigma_G / n``.

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
    with np.errstate(over="ignore", invalid="ignore"):
        cov = np.multiply(rho, c.theta2)
        np.einsum("...ii->...i", cov)[...] += c.alpha2
    return _finite_or_raise(cov, "gaussian_equivalent_covariance", beta)
