"""Moments, free cumulants and power-series reversion (theory eqs. (8.2)-(8.5)).

Float inputs use ``O(K**3)`` BLAS matrix-vector products of lower triangular
Toeplitz matrices (``K`` = order): fast, but the conversions cancel, and a
float64 evaluation loses about a digit every few orders (theory eq. (8.24)).
Integers and ``fractions.Fraction`` are converted exactly, on integers in a
common unit with the online recursion of eq. (8.23)
(:mod:`freeattn.algebra._moment_series`); other exact numbers (sympy, mpmath)
take a pure Python path with the same formulas.  The laws' own moments never
use the float path (:meth:`freeattn.SpectralLaw.moment`).
"""

import numbers
from fractions import Fraction

import numpy as np

__all__ = [
    "free_cumulants_to_moments",
    "moments_to_free_cumulants",
    "series_reversion",
]


def _is_exact(seq):
    return any(not isinstance(v, (float, np.floating)) and not
               (isinstance(v, numbers.Integral) and not isinstance(v, bool)) for v in seq) \
        or all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in seq)


def _rational(seq):
    """True when every entry is an int or a Fraction (the fast exact path)."""
    return all(isinstance(v, (numbers.Integral, Fraction)) and not isinstance(v, bool)
               for v in seq)


def _to_graded(values):
    """``(D, nums)`` with ``values[n] = nums[n] / D**n`` (``values[0]`` first)."""
    from ._moment_series import _graded_unit

    D = _graded_unit(values, limit=None)
    return D, [int(Fraction(v) * D ** n) for n, v in enumerate(values)]


def _from_graded(D, nums):
    out = []
    for n, x in enumerate(nums):
        q = Fraction(x, D ** n)
        out.append(int(q) if q.denominator == 1 else q)
    return out


def _check_sequence(values, name):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}")
    seq = list(values)
    if not seq:
        raise ValueError(f"{name} must not be empty")
    for v in seq:
        if isinstance(v, (bool, str, bytes)) or v is None:
            raise TypeError(f"{name} must hold numbers, got {v!r}")
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v!r}")
    return seq


def _toeplitz_powers_diagonal(coef, shift):
    """``[w**(n + shift)] C(w)**(n + 1)`` for ``n = 0 .. K-1`` (float path).

    ``coef`` holds ``C(w)`` up to degree ``K - 1 + shift``.
    """
    from scipy.linalg import toeplitz

    size = coef.size
    T = toeplitz(coef, np.zeros(size))
    v = np.zeros(size)
    v[0] = 1.0
    out = np.empty(size - shift)
    for n in range(size - shift):
        v = T @ v
        out[n] = v[n + shift]
    return out


def free_cumulants_to_moments(kappa):
    """Moments ``m_0, ..., m_K`` from free cumulants ``kappa_1, ..., kappa_K``.

    Uses Lagrange inversion of ``M(z) = 1 + R(z M(z))``,
    ``R(w) = sum_s kappa_s w**s``: ``m_n = [w**n] (1 + R(w))**(n+1) / (n + 1)``
    (theory eq. (8.3)).

    Parameters
    ----------
    kappa : sequence
        ``kappa[0]`` is ``kappa_1``.  Floats give a float array (float64
        recursion: digits are lost at high orders, theory eq. (8.24));
        integers, fractions or sympy numbers give an exact list.

    Returns
    -------
    ndarray or list
        ``[m_0, m_1, ..., m_K]`` with ``m_0 = 1``.

    Examples
    --------
    >>> free_cumulants_to_moments([1, 1, 1, 1])     # free Poisson: Catalan numbers
    [1, 1, 2, 5, 14]
    >>> free_cumulants_to_moments([0, 1, 0, 0])     # semicircle
    [1, 0, 1, 0, 2]
    """
    seq = _check_sequence(kappa, "kappa")
    if _rational(seq):
        from ._moment_series import _moment_cumulant_kernel

        D, nums = _to_graded([1] + list(seq))
        return _from_graded(D, _moment_cumulant_kernel(nums, 0, to_moments=True))
    if _is_exact(seq):
        K = len(seq)
        base = [1] + list(seq)
        out = [1]
        power = [1] + [0] * K
        for n in range(1, K + 1):
            power = [sum(base[i] * power[j - i] for i in range(j + 1)) for j in range(K + 1)]
            # power = base**n here; we need [w**n] base**(n+1): one more product.
            coeff = sum(base[i] * power[n - i] for i in range(n + 1))
            out.append(_exact_div(coeff, n + 1))
        return out
    k = np.asarray(seq, dtype=float)
    coef = np.concatenate([[1.0], k])
    m = _toeplitz_powers_diagonal(coef, 0) / np.arange(1, coef.size + 1)
    m[0] = 1.0
    return m


def _exact_div(a, b):
    if isinstance(a, numbers.Integral):
        q = Fraction(a, b)
        return int(q) if q.denominator == 1 else q
    return a / b


def series_reversion(coef):
    """Compositional inverse of ``f(z) = sum_{n>=1} coef[n-1] z**n`` (``coef[0] != 0``).

    Lagrange inversion: ``[w**n] f^{-1}(w) = [z**(n-1)] (z/f(z))**n / n``
    (theory eq. (8.5)).

    Parameters
    ----------
    coef : array_like
        ``[f_1, f_2, ..., f_K]``.

    Returns
    -------
    ndarray
        ``[g_1, ..., g_K]`` with ``g = f^{-1}``.

    Examples
    --------
    >>> series_reversion([1.0, -1.0, 0.0])       # z - z**2 -> Catalan generating fn
    array([1., 1., 2.])
    """
    f = np.asarray(_check_sequence(coef, "coef"), dtype=float)
    if f[0] == 0:
        raise ValueError("coef[0] (the linear coefficient) must be non-zero")
    # h(z) = z / f(z) = 1 / (f_1 + f_2 z + ...), as a series to order K-1.
    h = _series_inverse(f)
    g = _toeplitz_powers_diagonal(h, 0)          # [z**n] h**(n+1), n = 0..K-1
    return g / np.arange(1, f.size + 1)


def _series_inverse(a):
    """``1/a(z)`` as a power series of the same length (``a[0] != 0``)."""
    out = np.zeros(a.size)
    out[0] = 1.0 / a[0]
    for n in range(1, a.size):
        out[n] = -np.dot(a[1:n + 1], out[n - 1::-1][:n]) / a[0]
    return out


def moments_to_free_cumulants(moments):
    """Free cumulants ``kappa_1, ..., kappa_K`` from moments ``m_1, ..., m_K``.

    Inverts ``M(z) = 1 + R(z M(z))`` (theory eq. (8.3)): with
    ``y(z) = z M(z)`` and its inverse ``z(y)``, ``1 + R(y) = y / z(y)``.

    Parameters
    ----------
    moments : sequence
        ``[m_1, ..., m_K]`` (``m_0 = 1`` implied).  Exact inputs give an exact
        list; floats a float array (float64 recursion, theory eq. (8.24)).

    Returns
    -------
    ndarray or list

    Examples
    --------
    >>> moments_to_free_cumulants([1, 2, 5, 14])    # Catalan: free Poisson
    [1, 1, 1, 1]
    >>> moments_to_free_cumulants([0, 1, 0, 2])     # semicircle
    [0, 1, 0, 0]
    """
    seq = _check_sequence(moments, "moments")
    if _rational(seq):
        from ._moment_series import _moment_cumulant_kernel

        D, nums = _to_graded([1] + list(seq))
        return _from_graded(D, _moment_cumulant_kernel(nums, 0, to_moments=False))[1:]
    if _is_exact(seq):
        K = len(seq)
        kappa = []
        for n in range(1, K + 1):
            # m_n = kappa_n + (terms with kappa_1..kappa_{n-1}): solve for kappa_n.
            trial = free_cumulants_to_moments(kappa + [0])
            kappa.append(seq[n - 1] - trial[n])
        return kappa
    m = np.asarray(seq, dtype=float)
    y = np.concatenate([[1.0], m])               # y(z)/z = M(z): coefficients of y
    zinv = series_reversion(y)                   # z(y) = sum zinv[n-1] y**n
    # 1 + R(y) = y / z(y) = 1 / (zinv_1 + zinv_2 y + ...)
    r = _series_inverse(zinv)
    return r[1:].copy() if r.size > 1 else np.zeros(0)
