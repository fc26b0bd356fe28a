"""Hermite bookkeeping of the exponential feature map, order by order.

``exp(beta*x - beta**2/2) = sum_k c_k He_k(x)`` with ``c_k = beta**k/k!``
(theory eq. (2.3)); order ``k`` carries the variance
``v_k = c_k**2 k! = beta**(2k)/k!`` (theory eq. (2.7)).  Order 0 is the common
mode, order 1 the linear part ``theta2 = v_1``, orders ``>= 2`` add up to the
noise variance ``alpha2`` (theory eq. (2.6)); truncating at order ``K`` keeps
``sum_{k=2}^K v_k`` of it (theory eq. (2.8)).

Every function has three paths behind one switch, as in
:func:`freeattn.linear_coefficients`: float64 (vectorized over ``beta``),
``exact=True`` (sympy, from :mod:`freeattn.attention._symbolic`) and ``dps=`` (mpmath).
"""

from dataclasses import dataclass

import numpy as np

from ..core._checks import check_int
from ._coefficients import (
    _check_exact_or_dps,
    _check_float_beta,
    _check_mp_inputs,
    _MP_GUARD_DIGITS,
    linear_coefficients,
)

__all__ = [
    "HermiteTable",
    "hermite_coefficients",
    "order_variances",
    "truncated_alpha2",
    "alpha2_fraction",
    "hermite_table",
]


def _check_inputs(beta, order, exact, dps):
    """All checks of the bookkeeping functions; returns ``(mode, beta, order, dps)``."""
    order = check_int(order, "order", minimum=0)
    _check_exact_or_dps(exact, dps)
    if exact:
        from ._symbolic import as_sympy_beta

        return "exact", as_sympy_beta(beta), order, None
    if dps is not None:
        dps, value = _check_mp_inputs(beta, dps)
        return "mp", value, order, dps
    return "float", _check_float_beta(beta), order, None


def _ratios_cumprod(b, order, squared):
    """``prod_{m=1}^k (b**p / m)`` for ``k = 0..order`` along a new last axis (p = 1 or 2)."""
    base = b * b if squared else b
    ratios = base[..., None] / np.arange(1, order + 1, dtype=np.float64)
    out = np.ones(b.shape + (order + 1,))
    out[..., 1:] = np.cumprod(ratios, axis=-1)
    return out


def _mp_terms(b, order, dps, squared):
    import mpmath

    with mpmath.workdps(dps + _MP_GUARD_DIGITS):
        base = b * b if squared else b
        terms = [mpmath.mpf(1)]
        for k in range(1, order + 1):
            terms.append(terms[-1] * base / k)
    with mpmath.workdps(dps):
        return [+t for t in terms]


def _order_terms(beta, order, exact, dps, squared):
    """``beta**k/k!`` (``squared=False``) or ``beta**(2k)/k!`` for ``k = 0..order``, any path."""
    mode, b, order, dps = _check_inputs(beta, order, exact, dps)
    if mode == "exact":
        from ._symbolic import BETA, derive_hermite_coefficient, derive_order_variance

        derive = derive_order_variance if squared else derive_hermite_coefficient
        return tuple(derive(k).subs(BETA, b) for k in range(order + 1))
    if mode == "mp":
        return _mp_terms(b, order, dps, squared=squared)
    return _ratios_cumprod(b, order, squared=squared)


def hermite_coefficients(beta, order, *, exact=False, dps=None):
    """Hermite coefficients ``c_k = beta**k / k!``, ``k = 0..order``.

    The coefficients of ``exp(beta*x - beta**2/2) = sum_k c_k He_k(x)`` in the
    probabilists' Hermite polynomials, theory eq. (2.3).  The first terms are
    ``1, beta, beta**2/2, beta**3/6, beta**4/24``.  The centred feature
    ``f = exp(beta*x - beta**2/2) - 1`` has the same coefficients except
    ``c_0 = 0``.

    Parameters
    ----------
    beta : float, array_like, or sympy expression
        Inverse temperature ``> 0`` (float path: at most 26.64).
    order : int
        Highest order ``>= 0``.
    exact : bool, optional
        Return a tuple of sympy expressions, derived by Gaussian projection.
    dps : int, optional
        Return a list of ``mpmath.mpf`` at ``dps`` digits.

    Returns
    -------
    numpy.ndarray, shape ``beta.shape + (order + 1,)``, or tuple, or list

    Raises
    ------
    TypeError
        If ``beta`` is not real or ``order`` is not an integer.
    ValueError
        If ``beta`` is out of range or ``order < 0``.

    Examples
    --------
    >>> hermite_coefficients(2.0, 4)
    array([1.        , 2.        , 2.        , 1.33333333, 0.66666667])
    >>> hermite_coefficients(1, 3, exact=True)
    (1, 1, 1/2, 1/6)
    """
    return _order_terms(beta, order, exact, dps, squared=False)


def order_variances(beta, order, *, exact=False, dps=None):
    """Variance carried by each Hermite order, ``v_k = beta**(2k) / k!``, ``k = 0..order``.

    ``v_k = c_k**2 E[He_k**2] = c_k**2 k!``, theory eq. (2.7).  The first
    terms are ``1, beta**2, beta**4/2, beta**6/6, beta**8/24``.  ``v_0 = 1`` is
    the squared common mode (not part of the centred feature); ``v_1`` is
    ``theta2``; ``sum_{k>=1} v_k = theta1`` and ``sum_{k>=2} v_k = alpha2``.

    Parameters
    ----------
    beta : float, array_like, or sympy expression
        Inverse temperature ``> 0`` (float path: at most 26.64).
    order : int
        Highest order ``>= 0``.
    exact : bool, optional
        Return sympy expressions.
    dps : int, optional
        Return ``mpmath.mpf`` values at ``dps`` digits.

    Returns
    -------
    numpy.ndarray, shape ``beta.shape + (order + 1,)``, or tuple, or list
        As :func:`hermite_coefficients`.

    Examples
    --------
    >>> order_variances(1.0, 4).round(6)
    array([1.      , 1.      , 0.5     , 0.166667, 0.041667])
    >>> import sympy as sp
    >>> order_variances(sp.Symbol("b"), 3, exact=True)
    (1, b**2, b**4/2, b**6/6)
    """
    return _order_terms(beta, order, exact, dps, squared=True)


def truncated_alpha2(beta, order, *, exact=False, dps=None):
    """Noise variance held by Hermite orders 2 to ``order``: ``sum_{k=2}^{order} beta**(2k)/k!``.

    Theory eq. (2.8); zero for ``order < 2``, tends to ``alpha2`` as
    ``order -> oo``.  The first partial sums are ``beta**4/2``,
    ``beta**4/2 + beta**6/6``, ...

    Parameters
    ----------
    beta : float, array_like, or sympy expression
        Inverse temperature ``> 0`` (float path: at most 26.64).
    order : int
        Highest order ``>= 0``.
    exact : bool, optional
        Return sympy expressions.
    dps : int, optional
        Return ``mpmath.mpf`` values at ``dps`` digits.

    Returns
    -------
    float, numpy.ndarray of shape ``beta.shape``, sympy expression or mpmath.mpf

    Examples
    --------
    >>> round(truncated_alpha2(1.0, 3), 12)
    0.666666666667
    >>> truncated_alpha2(1, 4, exact=True)
    17/24
    """
    mode, b, order, dps = _check_inputs(beta, order, exact, dps)
    if mode == "exact":
        import sympy

        return sympy.Add(*order_variances(b, order, exact=True)[2:])
    if mode == "mp":
        import mpmath

        with mpmath.workdps(dps + _MP_GUARD_DIGITS):
            total = mpmath.fsum(_mp_terms(b, order, dps + _MP_GUARD_DIGITS, squared=True)[2:])
        with mpmath.workdps(dps):
            return +total
    partial = _ratios_cumprod(b, order, squared=True)[..., 2:].sum(axis=-1)
    return float(partial) if partial.ndim == 0 else partial


def alpha2_fraction(beta, order, *, exact=False, dps=None):
    """Share of ``alpha2`` held by Hermite orders 2 to ``order``, in ``[0, 1]``.

    ``truncated_alpha2(beta, order) / alpha2`` (theory eqs. (2.6), (2.8)).
    It is 0 for ``order < 2`` and ``beta**4/2 / (exp(beta**2) - 1 - beta**2)``
    for ``order = 2``, which tends to 1 as ``beta -> 0``.  The float path
    clips rounding above 1.

    Parameters
    ----------
    beta : float, array_like, or sympy expression
        Inverse temperature ``> 0`` (float path: at most 26.64).
    order : int
        Highest order ``>= 0``.
    exact : bool, optional
        Return sympy expressions.
    dps : int, optional
        Return ``mpmath.mpf`` values at ``dps`` digits.

    Returns
    -------
    float, numpy.ndarray of shape ``beta.shape``, sympy expression or mpmath.mpf

    Examples
    --------
    >>> round(alpha2_fraction(1.0, 2), 6)
    0.696106
    >>> alpha2_fraction(1, 2, exact=True)
    1/(2*(-2 + E))
    """
    mode, b, order, dps = _check_inputs(beta, order, exact, dps)
    if mode == "exact":
        import sympy

        total = linear_coefficients(b, exact=True).alpha2
        return sympy.simplify(truncated_alpha2(b, order, exact=True) / total)
    if mode == "mp":
        import mpmath

        with mpmath.workdps(dps):
            return truncated_alpha2(b, order, dps=dps) / linear_coefficients(b, dps=dps).alpha2
    fraction = np.minimum(truncated_alpha2(b, order) / linear_coefficients(b).alpha2, 1.0)
    return float(fraction) if fraction.ndim == 0 else fraction


@dataclass(frozen=True)
class HermiteTable:
    """Order-by-order Hermite bookkeeping at one ``beta`` (float64).

    Attributes
    ----------
    beta : float
    orders : numpy.ndarray of int
        ``0..order``.
    coefficients : numpy.ndarray
        ``c_k = beta**k/k!``, theory eq. (2.3).
    variances : numpy.ndarray
        ``v_k = beta**(2k)/k!``, theory eq. (2.7).
    cumulative_alpha2 : numpy.ndarray
        ``sum_{m=2}^k v_m`` (0 for ``k < 2``), theory eq. (2.8).
    noise_fraction : numpy.ndarray
        ``cumulative_alpha2 / alpha2``.
    theta1, theta2, alpha2 : float
        The totals, theory eqs. (2.4)-(2.6).
    """

    beta: float
    orders: np.ndarray
    coefficients: np.ndarray
    variances: np.ndarray
    cumulative_alpha2: np.ndarray
    noise_fraction: np.ndarray
    theta1: float
    theta2: float
    alpha2: float


def hermite_table(beta, order):
    """Tabulate coefficients, variances and the cumulative share of ``alpha2``.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``0 < beta <= 26.64`` (a scalar).
    order : int
        Highest order ``>= 0``.

    Returns
    -------
    HermiteTable

    Raises
    ------
    TypeError
        If ``beta`` is not a real number or ``order`` is not an integer.
    ValueError
        If ``beta`` is out of range or not a scalar, or ``order < 0``.

    Examples
    --------
    >>> t = hermite_table(1.0, 3)
    >>> t.variances.round(4).tolist(), t.noise_fraction.round(4).tolist()
    ([1.0, 1.0, 0.5, 0.1667], [0.0, 0.0, 0.6961, 0.9281])
    """
    mode, b, order, _ = _check_inputs(beta, order, False, None)
    if b.ndim != 0:
        raise ValueError(f"beta must be a scalar for hermite_table, got shape {b.shape}")
    variances = order_variances(b, order)
    cumulative = np.concatenate([np.zeros(min(order + 1, 2)), np.cumsum(variances[2:])])
    c = linear_coefficients(b)
    fraction = np.minimum(cumulative / c.alpha2, 1.0)
    return HermiteTable(float(b), np.arange(order + 1), hermite_coefficients(b, order),
                        variances, cumulative, fraction, c.theta1, c.theta2, c.alpha2)
