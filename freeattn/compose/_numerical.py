"""Numerical R- and S-transforms: any law's transform by inverting its Stieltjes transform.

``R(g) = omega - 1/g`` with ``G_a(omega) = g`` (theory eq. (8.8)) and
``S(w) = (1 + w)/(w xi)`` with ``xi G_a(xi) = 1 + w`` (eq. (8.9)), used by
:func:`freeattn.free_additive` and :func:`freeattn.free_multiplicative` when a
law has no rational transform.

Nothing in this module prints or does I/O.
"""

import numpy as np

from ..algebra._cumulants import moments_to_free_cumulants, series_reversion

__all__ = ["numerical_r_transform", "numerical_s_transform"]

_TINY = float(np.finfo(float).tiny)
_EPS = float(np.finfo(float).eps)


class _NumericalTransform:
    """R- or S-transform of a law evaluated by inverting its Stieltjes transform.

    ``R(g) = omega - 1/g`` with ``G_a(omega) = g`` (eq. (8.8)); ``S(w) =
    (1 + w)/(w xi)`` with ``xi G_a(xi) = 1 + w`` (eq. (8.9)).  The inverse is
    found by Newton's method, continued from the expansion point (``g = 0``:
    ``omega ~ 1/g + m_1``; ``w = 0``: ``xi ~ m_1/w``) along a straight path;
    on the real line it is the monotone inverse on the outer gaps of the
    support (the continuation from the expansion point), ``nan`` beyond the
    range there.
    """

    rational = False

    def __init__(self, law, kind):
        self.law = law
        self.source = law
        self.kind = kind
        self.mean = law.mean()
        if kind == "S" and self.mean <= 0:
            raise ValueError("a free multiplicative convolution needs laws with a positive mean")
        self.lo, self.hi = law.support()
        self.scale = max(abs(self.lo), abs(self.hi), _TINY)
        self._coef = None

    def _h(self, y):
        """``h(y)`` and ``h'(y)``: ``G`` for R, ``y G(y)`` for S."""
        g = self.law._stieltjes(y)
        dg = self.law._stieltjes_derivative(y)
        if self.kind == "R":
            return g, dg
        return y * g, g + y * dg

    def _target(self, x):
        return x if self.kind == "R" else 1.0 + x

    def _start(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 / x + self.mean if self.kind == "R" else self.mean / x

    def _invert(self, x):
        x = np.asarray(x, dtype=complex)
        out = np.full(x.shape, np.nan + 0j)
        real = x.imag == 0
        if real.any():
            out[real] = self._invert_real(x[real].real)
        if (~real).any():
            out[~real] = self._invert_complex(x[~real])
        return out

    def _invert_complex(self, x):
        y = None
        for s in CONTINUATION_PATH:
            xs = s * x
            y = self._start(xs) if y is None else y
            y = self._newton(y, self._target(xs))
        h, _ = self._h(y)
        res = np.abs(h - self._target(x)) / np.maximum(np.abs(self._target(x)), _TINY)
        return np.where(res <= 1e-10, y, np.nan)

    def _newton(self, y, v):
        for _ in range(40):
            h, dh = self._h(y)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                step = (h - v) / dh
            step = np.where(np.isfinite(step), step, 0)
            new = y - step
            for _ in range(30):
                out = new.imag < 0
                if not out.any():
                    break
                step = np.where(out, step / 2, step)
                new = y - step
            y = new
            if np.all(np.abs(step) <= 8 * _EPS * np.abs(y)):
                break
        return y

    def _invert_real(self, x):
        """Monotone inverse on the outer gap reached from the expansion point (vectorized)."""
        out = np.full(x.shape, np.nan)
        lo, hi, scale = self.lo, self.hi, self.scale
        v = self._target(x)
        if self.kind == "R":
            right, left = x > 0, x < 0
        else:
            right, left = x > 0, (x > -1) & (x < 0)
        edge_left = lo if self.kind == "R" else min(lo, 0.0)
        for mask, edge, sign in ((right, hi, 1.0), (left, edge_left, -1.0)):
            if not mask.any():
                continue
            vm = v[mask]
            near = np.full(vm.shape, edge + sign * 16 * _EPS * scale)
            far = np.full(vm.shape, edge + sign * scale)
            fn = self._h_real(near) - vm
            ff = self._h_real(far) - vm
            for _ in range(1100):
                grow = np.isfinite(fn) & (fn * ff > 0) & (np.abs(far) < 1e300)
                if not grow.any():
                    break
                far = np.where(grow, edge + 4.0 * (far - edge), far)
                ff = np.where(grow, self._h_real(far) - vm, ff)
            ok = np.isfinite(fn) & np.isfinite(ff) & (fn * ff <= 0)
            a, b, fa = near.copy(), far.copy(), fn.copy()
            y = 0.5 * (a + b)
            for _ in range(200):
                with np.errstate(all="ignore"):
                    h, dh = self._h(y.astype(complex))
                fy = h.real - vm
                left_half = fa * fy <= 0
                b = np.where(left_half, y, b)
                a = np.where(left_half, a, y)
                fa = np.where(left_half, fa, fy)
                with np.errstate(all="ignore"):
                    newton = y - fy / dh.real
                inside = np.isfinite(newton) & (newton > np.minimum(a, b)) & (
                    newton < np.maximum(a, b))
                new = np.where(inside, newton, 0.5 * (a + b))
                done = np.abs(new - y) <= 4 * _EPS * np.maximum(np.abs(y), scale)
                y = new
                if np.all(done | ~ok):
                    break
            out[mask] = np.where(ok, y, np.nan)
        return out

    def _h_real(self, y):
        with np.errstate(all="ignore"):
            return self._h(np.asarray(y, dtype=complex))[0].real

    def _series(self):
        """Coefficients of ``R(g) = sum kappa_{n+1} g**n`` or of ``S(w)`` at 0 (eq. (8.5))."""
        if self._coef is None:
            sc, m = self.law._scaled_moments(SERIES_TERMS + 1)
            m = np.asarray(m, dtype=float)
            if self.kind == "R":
                kappa = moments_to_free_cumulants(m[1:]) * sc ** np.arange(1, m.size)
                self._coef = kappa[:SERIES_TERMS]
            else:
                chi = series_reversion(m[1:] * sc ** np.arange(1, m.size))  # chi_1 .. chi_K
                # S(w) = chi(w)(1 + w)/w = sum_n (chi_{n+1} + chi_n) w**n, chi_0 = 0.
                c = chi[:SERIES_TERMS].copy()
                c[1:] += chi[:SERIES_TERMS - 1]
                self._coef = c
        return self._coef

    def value_and_derivative(self, x):
        x = np.asarray(x, dtype=complex)
        small = np.abs(x) * (self.scale if self.kind == "R" else 1.0) <= SERIES_RADIUS
        if small.all():
            return self._series_value(x)
        y = self._invert(np.where(small, 1.0 + 0j, x))
        ok = np.isfinite(y)
        h, dh = self._h(np.where(ok, y, 1.0 + 1j))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.kind == "R":
                val = y - 1.0 / x
                der = 1.0 / dh + 1.0 / (x * x)
            else:
                dy = 1.0 / dh
                val = (1.0 + x) / (x * y)
                der = (x * y - (1.0 + x) * (y + x * dy)) / (x * y) ** 2
        val, der = np.where(ok, val, np.nan), np.where(ok, der, np.nan)
        if small.any():
            sv, sd = self._series_value(x[small])
            val[small], der[small] = sv, sd
        return val, der

    def _series_value(self, x):
        c = self._series()
        val = np.zeros(x.shape, dtype=complex)
        der = np.zeros(x.shape, dtype=complex)
        for n in range(c.size - 1, -1, -1):
            der = der * x + val
            val = val * x + c[n]
        return val, der

    def __call__(self, x):
        return self.value_and_derivative(x)[0]

    def mp_callable(self, mpmath):
        """The transform at the working precision: ``findroot`` on the law's mp transform."""
        law = self.law

        def h(y):
            g = law._mp_stieltjes(y)
            return g if self.kind == "R" else y * g

        def f(x):
            target = x if self.kind == "R" else 1 + x
            start = complex(self._invert(np.array([complex(x)]))[0])
            y = mpmath.findroot(lambda yy: h(yy) - target, mpmath.mpc(start.real, start.imag))
            return y - 1 / x if self.kind == "R" else (1 + x) / (x * y)
        return f

    def at_zero(self):
        """``R(0) = m_1`` or ``S(0) = 1/m_1``."""
        return self.mean if self.kind == "R" else 1.0 / self.mean


#: Terms of the power series of a numerical R- or S-transform used next to its
#: expansion point, and the radius (``|g| * scale`` for R, ``|w|`` for S) within
#: which it replaces the inversion (whose ``omega - 1/g`` cancels there); the
#: series converge in a disk of radius about ``1/(6 scale)`` (R) and ``1/4`` (S),
#: so the truncation error is below ``(6 * SERIES_RADIUS)**SERIES_TERMS`` ~ 1e-22.
SERIES_TERMS = 24
SERIES_RADIUS = 0.02

#: Fractions of the way from the expansion point at which the numerical
#: inverse of a Stieltjes transform is re-solved (continuation path).
CONTINUATION_PATH = (1e-3, 1e-2, 0.1, 0.3, 0.6, 1.0)


def numerical_r_transform(law):
    """The R-transform of any law, by inverting its Stieltjes transform (eq. (8.8))."""
    return _NumericalTransform(law, "R")


def numerical_s_transform(law):
    """The S-transform of any law on ``[0, oo)`` (eq. (8.9))."""
    return _NumericalTransform(law, "S")
