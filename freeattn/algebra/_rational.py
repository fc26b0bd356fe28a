"""Rational transforms and polynomial helpers of the subordination engine.

Polynomials are coefficient arrays, lowest degree first (numpy.polynomial
convention).  A :class:`RationalTransform` is an R- or S-transform that is a
rational function (semicircle, Marchenko-Pastur, a single atom, and their
sums or products); composing such transforms with a law keeps the law's
Stieltjes graph rational (theory section 8.4), so its defining equation is a
polynomial whose roots are found in batches.
"""

import numpy as np

__all__ = [
    "RationalTransform",
    "pmul",
    "padd",
    "pscale",
    "compose",
    "cancel_common_roots",
    "batched_roots",
]

_P = np.polynomial.polynomial

#: Relative size of ``num(r)`` at a real root ``r`` of ``den`` below which
#: ``t - r`` is a common factor of the two and is divided out (structural
#: factors such as ``t - v`` of a Marchenko-Pastur level vanish to rounding).
CANCEL_RTOL = 1e-11

#: A root of a denominator counts as real when ``|Im r| <= this * max(1, |r|)``.
CANCEL_IMAG_RTOL = 1e-9


def _arr(p):
    if type(p) is np.ndarray and p.dtype == np.float64 and p.ndim == 1:
        return p
    return np.atleast_1d(np.asarray(p, dtype=float))


def trim(p):
    """Drop trailing (highest-degree) exact zeros, keeping at least one coefficient."""
    p = _arr(p)
    last = p.size
    while last > 1 and p[last - 1] == 0.0:
        last -= 1
    return p[:last].copy()


def pmul(p, q):
    return trim(np.convolve(_arr(p), _arr(q)))


def padd(p, q):
    p, q = _arr(p), _arr(q)
    if p.size < q.size:
        p, q = q, p
    out = p.copy()
    out[:q.size] += q
    return trim(out)


def pscale(p, s):
    return trim(_arr(p) * s)


def ppow(p, k):
    out = np.array([1.0])
    for _ in range(k):
        out = pmul(out, p)
    return out


def compose(num, den, xn, xd):
    """``R(x)`` for ``R = num/den`` and ``x = xn/xd``, as ``(N, D)`` polynomials.

    ``R(x) = sum_j n_j xn**j xd**(q-j) / sum_j d_j xn**j xd**(q-j)`` with
    ``q = max(deg num, deg den)``.
    """
    num, den = _arr(num), _arr(den)
    q = max(num.size, den.size) - 1
    powers_n = [np.array([1.0])]
    powers_d = [np.array([1.0])]
    for _ in range(q):
        powers_n.append(pmul(powers_n[-1], xn))
        powers_d.append(pmul(powers_d[-1], xd))
    out_n = np.array([0.0])
    out_d = np.array([0.0])
    for j in range(q + 1):
        term = pmul(powers_n[j], powers_d[q - j])
        if j < num.size and num[j] != 0:
            out_n = padd(out_n, term * num[j])
        if j < den.size and den[j] != 0:
            out_d = padd(out_d, term * den[j])
    return out_n, out_d


def _deflate(p, r):
    """``p(t) / (t - r)`` for a root ``r`` (synthetic division, remainder dropped)."""
    n = p.size - 1
    out = np.zeros(n)
    acc = 0.0
    for k in range(n, 0, -1):
        acc = p[k] + acc * r
        out[k - 1] = acc
    return out


def cancel_common_roots(num, den):
    """Divide ``num`` and ``den`` by their common real linear factors.

    Returns
    -------
    (num, den) : ndarray
    """
    num, den = trim(num), trim(den)
    changed = True
    while changed and den.size > 1 and num.size > 1:
        changed = False
        for r in np.roots(den[::-1]):
            if abs(r.imag) > CANCEL_IMAG_RTOL * max(1.0, abs(r)):
                continue
            r = r.real
            scale = np.abs(num) @ (abs(r) ** np.arange(num.size))
            if abs(_P.polyval(r, num)) <= CANCEL_RTOL * scale:
                num, den = trim(_deflate(num, r)), trim(_deflate(den, r))
                changed = True
                break
    return num, den


def batched_roots(coeffs):
    """All roots of a batch of polynomials (companion-matrix eigenvalues).

    Parameters
    ----------
    coeffs : ndarray, shape (d + 1, m)
        Coefficients, lowest degree first, one column per polynomial; the
        highest must not vanish.

    Returns
    -------
    ndarray, shape (d, m)
    """
    coeffs = np.asarray(coeffs)
    d = coeffs.shape[0] - 1
    m = coeffs.shape[1]
    lead = coeffs[-1]
    monic = coeffs[:-1] / lead                     # (d, m)
    if d == 1:
        return -monic
    dtype = complex if np.iscomplexobj(monic) and np.any(monic.imag) else float
    comp = np.zeros((m, d, d), dtype=dtype)
    comp[:, 0, :] = -(monic[::-1].T if dtype is complex else monic[::-1].T.real)
    idx = np.arange(1, d)
    comp[:, idx, idx - 1] = 1.0
    return np.linalg.eigvals(comp).T.astype(complex)


def hval(coef, x):
    """Horner evaluation of ``sum_k coef[k] x**k`` for a tuple of Python floats.

    Faster than ``numpy.polynomial.polynomial.polyval`` for the low degrees
    of the transforms (no array conversion per call).
    """
    acc = coef[-1]
    if len(coef) == 1:
        return acc + 0.0 * x
    for a in coef[-2::-1]:
        acc = acc * x + a
    return acc


def _derivative_tuple(coef):
    return tuple(k * c for k, c in enumerate(coef))[1:] or (0.0,)


class RationalTransform:
    """A rational R- or S-transform ``num(x)/den(x)``.

    Parameters
    ----------
    num, den : array_like
        Coefficients, lowest degree first.
    source : SpectralLaw, optional
        The law whose transform this is (for its atoms and moments).
    """

    def __init__(self, num, den, source=None):
        self.num = trim(num)
        self.den = trim(den)
        self.source = source
        self._n = tuple(float(c) for c in self.num)
        self._d = tuple(float(c) for c in self.den)
        self._dn = _derivative_tuple(self._n)
        self._dd = _derivative_tuple(self._d)

    def __call__(self, x):
        return hval(self._n, x) / hval(self._d, x)

    def value_and_derivative(self, x):
        """``(R(x), R'(x))``."""
        n, d = hval(self._n, x), hval(self._d, x)
        dn, dd = hval(self._dn, x), hval(self._dd, x)
        return n / d, (dn * d - n * dd) / (d * d)

    def derivative(self, x):
        return self.value_and_derivative(x)[1]

    def at_zero(self):
        """The value at 0 (``R(0) = m_1``, ``S(0) = 1/m_1``)."""
        return self._n[0] / self._d[0]

    def plus(self, other, source=None):
        """``self + other`` (the R-transform of a free additive convolution)."""
        num = padd(pmul(self.num, other.den), pmul(other.num, self.den))
        den = pmul(self.den, other.den)
        num, den = cancel_common_roots(num, den)
        return RationalTransform(num, den, source)

    def times(self, other, source=None):
        """``self * other`` (the S-transform of a free multiplicative convolution)."""
        num, den = cancel_common_roots(pmul(self.num, other.num), pmul(self.den, other.den))
        return RationalTransform(num, den, source)

    def mp_callable(self, mpmath):
        """The same function in mpmath arithmetic."""
        num = [mpmath.mpf(float(c)) for c in self.num]
        den = [mpmath.mpf(float(c)) for c in self.den]

        def f(x):
            return mpmath.polyval(num[::-1], x) / mpmath.polyval(den[::-1], x)
        return f
