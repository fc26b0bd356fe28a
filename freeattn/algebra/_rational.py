"""Rational transforms and polynomial helpers of the subordination engine.

Polynomials are coefficient arrays, lowest degree first (numpy.polynomial
convention).  A :class:`RationalTransform` is an R- or S-transform that is a
rational function (semicircle, Marchenko-Pastur, a single atom, and their
sums or products); composing such transforms with a law keeps the law's
Stieltjes graph rational (theory section 8.4), so its defining equation is a
polynomial whose roots are found in batches.
"""

import numpy as np

try:  # the gufunc behind numpy.linalg.eigvals (LAPACK geev), see eigvals below
    from numpy.linalg import _umath_linalg
except ImportError:  # pragma: no cover - a numpy without it: numpy.linalg.eigvals
    _umath_linalg = None

__all__ = [
    "RationalTransform",
    "pmul",
    "padd",
    "pscale",
    "compose",
    "cancel_common_roots",
    "batched_roots",
    "all_roots",
    "eigvals",
]

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


def eigvals(a):
    """Complex eigenvalues of a float or complex square matrix, or a stack of them.

    The values of ``numpy.linalg.eigvals(a).astype(complex)`` (the same LAPACK
    ``geev`` through the same gufunc), without that function's argument
    handling, which costs ~17 microseconds a call against ~4 for a 3 x 3 matrix
    (the engine makes a dozen such calls per law).  Input with a NaN or
    infinity (which LAPACK would report on stderr), or a ``geev`` that did not
    converge (NaN eigenvalues), goes through ``numpy.linalg.eigvals`` itself,
    which raises ``LinAlgError``.
    """
    a = np.asarray(a)
    if (_umath_linalg is not None and a.dtype in (np.float64, np.complex128)
            and np.isfinite(a).all()):
        with np.errstate(all="ignore"):
            w = _umath_linalg.eigvals(a, signature="d->D" if a.dtype == np.float64 else "D->D")
        if np.isfinite(w).all():
            return w
    return np.linalg.eigvals(a).astype(complex)


def all_roots(poly):
    """Every root of a polynomial (lowest first): ``numpy.roots`` of the reversed
    coefficients (the same companion matrix, without its argument handling)."""
    c = np.asarray(poly, dtype=float)[::-1]
    nz = np.flatnonzero(c)
    if nz.size == 0:
        return np.empty(0, dtype=complex)
    zeros = np.zeros(c.size - 1 - nz[-1], dtype=complex)          # roots at 0
    c = c[nz[0]:nz[-1] + 1]
    d = c.size - 1
    if d < 1:
        return zeros
    comp = np.zeros((d, d))
    comp[0] = -c[1:] / c[0]
    comp[np.arange(1, d), np.arange(d - 1)] = 1.0
    return np.concatenate([eigvals(comp), zeros])


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
        coef = num.tolist()
        size = [abs(c) for c in coef]
        for r in all_roots(den):
            if abs(r.imag) > CANCEL_IMAG_RTOL * max(1.0, abs(r)):
                continue
            r = r.real
            if abs(hval(coef, r)) <= CANCEL_RTOL * hval(size, abs(r)):
                num, den = trim(_deflate(num, r)), trim(_deflate(den, r))
                changed = True
                break
    return num, den


#: Newton steps on every closed-form root of a cubic or quartic before its
#: backward check (:func:`batched_roots`): Cardano's and Ferrari's formulas
#: lose up to half the digits of a root to cancellation, which two quadratic
#: steps restore for a simple root.
CLOSED_FORM_NEWTON_STEPS = 2
#: A closed-form root set is kept when the elementary symmetric functions of
#: its roots reproduce the monic coefficients (theory eq. (8.29)) within this fraction of the
#: same functions of the roots' moduli (the rounding of forming them is
#: ``~ d eps`` of that); a root lost to a neighbour (two estimates converging
#: to one root) changes a coefficient by a relative amount of the order of the
#: roots' distance, and the batch's column then goes to the companion matrix.
CLOSED_FORM_BACKWARD_RTOL = 1e-10


def _cubic_roots(b, c, d):
    """The three roots of ``u**3 + b u**2 + c u + d`` (Cardano, complex arithmetic)."""
    p = c - b * b / 3.0
    q = (2.0 * b * b - 9.0 * c) * b / 27.0 + d
    disc = np.sqrt(q * q / 4.0 + p * p * p / 27.0)
    # the larger of -q/2 +- disc: no cancellation in the cube root's argument
    s = np.where(np.abs(-q / 2.0 + disc) >= np.abs(-q / 2.0 - disc), -q / 2.0 + disc,
                 -q / 2.0 - disc)
    w = np.power(s, 1.0 / 3.0)
    omega = complex(-0.5, 0.5 * np.sqrt(3.0))
    ws = np.stack([w, w * omega, w * omega.conjugate()])
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(ws != 0, ws - p / (3.0 * ws), 0.0)
    return u - b / 3.0


def _quartic_roots(a, b, c, d):
    """The four roots of ``y**4 + a y**3 + b y**2 + c y + d`` (Ferrari, complex arithmetic).

    With ``y = x - a/4`` the depressed quartic ``x**4 + p x**2 + q x + r`` is
    ``(x**2 + p/2 + m)**2 - (s x - q/(2 s))**2``, ``s = sqrt(2 m)``, for a root
    ``m`` of the resolvent cubic ``m**3 + p m**2 + (p**2/4 - r) m - q**2/8``
    (the largest one, away from 0 where ``q/(2 s)`` cancels).
    """
    p = b - 3.0 * a * a / 8.0
    q = c - a * b / 2.0 + a * a * a / 8.0
    r = d - a * c / 4.0 + a * a * b / 16.0 - 3.0 * (a * a) * (a * a) / 256.0
    ms = _cubic_roots(p, p * p / 4.0 - r, -q * q / 8.0)
    m = ms[np.argmax(np.abs(ms), axis=0), np.arange(ms.shape[1])]
    s = np.sqrt(2.0 * m)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(s != 0, q / (2.0 * s), 0.0)
    d1 = np.sqrt(s * s - 4.0 * (p / 2.0 + m + h))
    d2 = np.sqrt(s * s - 4.0 * (p / 2.0 + m - h))
    return np.stack([s + d1, s - d1, -s + d2, -s - d2]) / 2.0 - a / 4.0


def _closed_form_roots(monic):
    """Roots of monic cubics/quartics by formula, Newton-polished, with the backward
    check of theory eq. (8.29).

    ``monic`` is ``(d, m)`` (lowest first, the leading 1 left out), ``d`` 3 or
    4.  Returns ``(roots, ok)``: ``ok`` is False in the columns whose roots miss
    the backward check (``CLOSED_FORM_BACKWARD_RTOL``) or are not finite.
    """
    d = monic.shape[0]
    c = monic.astype(complex)
    with np.errstate(all="ignore"):
        if d == 3:
            roots = _cubic_roots(c[2], c[1], c[0])
        else:
            roots = _quartic_roots(c[3], c[2], c[1], c[0])
        for _ in range(CLOSED_FORM_NEWTON_STEPS):
            p = roots + c[d - 1]
            dp = np.ones_like(roots)
            for k in range(d - 2, -1, -1):
                dp = dp * roots + p
                p = p * roots + c[k]
            step = p / dp
            roots = np.where(np.isfinite(step), roots - step, roots)
        # elementary symmetric functions of the roots and of their moduli
        e = [np.ones(roots.shape[1], dtype=complex)] + [0.0] * d
        ea = [np.ones(roots.shape[1])] + [0.0] * d
        for j in range(d):
            rj, aj = roots[j], np.abs(roots[j])
            for k in range(j + 1, 0, -1):
                e[k] = e[k] - rj * e[k - 1]
                ea[k] = ea[k] + aj * ea[k - 1]
        ok = np.all(np.isfinite(roots), axis=0)
        for k in range(1, d + 1):
            # prod (x - r_j) = sum_k e[k] x**(d - k): e[k] is the coefficient of x**(d-k)
            ok &= np.abs(e[k] - c[d - k]) <= CLOSED_FORM_BACKWARD_RTOL * ea[k]
    return roots, ok


def batched_roots(coeffs):
    """All roots of a batch of polynomials.

    Cubics and quartics with real coefficients are solved by formula
    (Cardano, Ferrari) and two Newton steps, each column checked backward (the
    elementary symmetric functions of its roots reproduce its coefficients,
    theory eq. (8.29), ``CLOSED_FORM_BACKWARD_RTOL``); other degrees and the columns that miss the
    check take the companion-matrix eigenvalues (LAPACK, backward stable).

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
    lead = coeffs[-1]
    monic = coeffs[:-1] / lead                     # (d, m)
    if d == 1:
        return -monic
    real = not (np.iscomplexobj(monic) and np.any(monic.imag))
    if real and d in (3, 4):
        roots, ok = _closed_form_roots(monic.real)
        if not ok.all():
            roots[:, ~ok] = _companion_roots(monic[:, ~ok])
        return roots
    return _companion_roots(monic)


def _companion_roots(monic):
    """Eigenvalues of the companion matrices of monic polynomials ``(d, m)``; NaN for
    a column with a coefficient that is not finite (a point where a nested law's
    transform is not defined: its solver rejects the NaN roots, LAPACK never sees them)."""
    d, m = monic.shape
    bad = ~np.isfinite(monic).all(axis=0)
    if bad.any():
        roots = np.full((d, m), np.nan + 0j)
        if not bad.all():
            roots[:, ~bad] = _companion_roots(monic[:, ~bad])
        return roots
    dtype = complex if np.iscomplexobj(monic) and np.any(monic.imag) else float
    comp = np.zeros((m, d, d), dtype=dtype)
    comp[:, 0, :] = -(monic[::-1].T if dtype is complex else monic[::-1].T.real)
    idx = np.arange(1, d)
    comp[:, idx, idx - 1] = 1.0
    return eigvals(comp).T


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
