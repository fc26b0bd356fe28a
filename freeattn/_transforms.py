"""Laws as transforms of other laws: affine maps and the eigenvalue <-> singular-value map.

A transform is a wrapper around a law, not a flag inside it: it maps the
support, the atoms, the density and the Stieltjes transform of its base law
(theory section 8.5), and it composes further like any law.
"""

import math
from fractions import Fraction

import numpy as np

from ._law_base import Interval, LogEnd, SpectralLaw
from ._rational import RationalTransform, compose, pmul, padd

__all__ = ["AffineLaw", "SingularValueLaw", "ZeroPaddedLaw", "affine"]

#: Below ``|z|**2 <= _TINY_SQ * scale**2`` the square ``z**2`` underflows against the
#: support, and the singular-value law's transform is taken from its representation.
_TINY_SQ = 1e-280

#: Digits of the working precision kept below the offset ``eta`` at which the
#: squared law's boundary value is taken in the mpmath path (the density at
#: ``x + i eta`` differs from the boundary value by O(eta)).
MP_AXIS_DIGITS = 5


def _finite_scalar(value, name):
    from ._checks import real_scalar
    return real_scalar(value, name)


def affine(law, shift=0.0, scale=1.0):
    """The law of ``shift + scale * X`` for ``X ~ law`` (``scale != 0``).

    Parameters
    ----------
    law : SpectralLaw
    shift, scale : float

    Returns
    -------
    AffineLaw

    Raises
    ------
    ValueError
        If ``scale == 0`` or an argument is not finite.
    """
    a = _finite_scalar(shift, "shift")
    s = _finite_scalar(scale, "scale")
    if s == 0.0:
        raise ValueError("scale must be non-zero (a zero scale collapses the law to a point)")
    if isinstance(law, AffineLaw):
        return AffineLaw(law.base, a + s * law.shift, s * law.scale)
    return AffineLaw(law, a, s)


class AffineLaw(SpectralLaw):
    """The law of ``shift + scale * X`` (theory eq. (8.7)).

    Attributes
    ----------
    base : SpectralLaw
    shift, scale : float
    """

    def __init__(self, base, shift, scale):
        super().__init__(base.options)
        self.base = base
        self.shift = shift
        self.scale = scale

    @property
    def _closed_form(self):
        return getattr(self.base, "_closed_form", False)

    def _describe(self):
        return f"{self.shift:g} + {self.scale:g} * ({self.base._describe()})"

    def _to_base(self, y):
        return (y - self.shift) / self.scale

    # -- hooks ----------------------------------------------------------------------
    def _support_intervals(self):
        out = []
        for iv in self.base.interval_details():
            lo = self.shift + self.scale * iv.lo
            hi = self.shift + self.scale * iv.hi
            if self.scale > 0:
                lo_e = iv.lo_exponent
                if isinstance(lo_e, LogEnd):
                    lo_e = LogEnd(lo_e.scale * self.scale, lo_e.sample_rtol)
                out.append(Interval(lo, hi, lo_e, iv.hi_exponent))
            else:
                out.append(Interval(hi, lo, iv.hi_exponent, iv.lo_exponent))
        return tuple(sorted(out, key=lambda iv: iv.lo))

    def _atoms(self):
        loc, mass = self.base.atoms()
        return self.shift + self.scale * loc, mass

    def _density(self, y):
        return self.base._density(self._to_base(y)) / abs(self.scale)

    def _log_end_density(self, t):
        # (y - lo') f_y(y) = (x - lo) f(x) with log(x - lo) = t - log(scale)
        return self.base._log_end_density(np.asarray(t) - math.log(self.scale))

    def _pdf_closed(self, y):
        if not self.base.interval_details():
            return np.zeros(y.shape)
        return np.asarray(self.base.pdf(self._to_base(y)), dtype=float).reshape(y.shape) / abs(
            self.scale)

    def _pdf_scalar(self, y):
        return self.base._pdf_scalar((y - self.shift) / self.scale) / abs(self.scale)

    def _cdf_scalar(self, y):
        x = (y - self.shift) / self.scale
        if self.scale > 0:
            return self.base._cdf_scalar(x)
        # P(a + s X <= y) = P(X >= x) for s < 0.
        loc, mass = self.base.atoms()
        at = float(mass[loc == x].sum()) if loc.size else 0.0
        return min(max(1.0 - self.base._cdf_scalar(x) + at, 0.0), 1.0)

    def _cdf_closed(self, y):
        x = self._to_base(y)
        if not self.base.interval_details():
            return np.zeros(y.shape)
        fc = self.base._continuous_cdf(x)
        return fc if self.scale > 0 else self.base._continuous_mass() - fc

    def _stieltjes_exact(self, z):
        w = self._to_base(z)
        if self.scale > 0:
            return self.base._stieltjes(w) / self.scale
        return np.conj(self.base._stieltjes(np.conj(w))) / self.scale

    def _mp_stieltjes(self, z):
        import mpmath
        a, s = mpmath.mpf(self.shift), mpmath.mpf(self.scale)
        w = (z - a) / s
        if self.scale > 0:
            return self.base._mp_stieltjes(w) / s
        return mpmath.conj(self.base._mp_stieltjes(mpmath.conj(w))) / s

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        w = self._to_base(z)
        if self.scale > 0:
            g, dg = self.base._stieltjes_pair(w)
            return g / self.scale, dg / self.scale ** 2
        g, dg = self.base._stieltjes_pair(np.conj(w))
        return np.conj(g) / self.scale, np.conj(dg) / self.scale ** 2

    def _moments_exact(self, kmax):
        from ._subordination import affine_moments

        exact = self.base._moments_exact(kmax)
        if exact is None:
            return None
        sc, m = exact
        return affine_moments(self.shift, self.scale, sc, np.asarray(m, dtype=float))

    def _quantile(self, q, upper):
        if self.scale > 0:
            return self.shift + self.scale * self.base._quantile(q, upper)
        return self.shift + self.scale * self.base._quantile(q, not upper)

    # -- composition hooks ------------------------------------------------------------------
    def _curve(self):
        if self.scale <= 0:
            return None
        curve = self.base._curve()
        if curve is None:
            return None
        from ._subordination import AffineLevel
        return curve.extend(AffineLevel(self.shift, self.scale))

    def _r_transform(self):
        r = self.base._r_transform()
        if r is None:
            return None
        # R_{a + s X}(g) = a + s R_X(s g).
        s, a = self.scale, self.shift
        num, den = compose(r.num, r.den, np.array([0.0, s]), np.array([1.0]))
        return RationalTransform(padd(pmul(den, [a]), pmul(num, [s])), den, source=self)

    def _s_transform(self):
        if self.shift != 0.0 or self.scale <= 0:
            return None
        sx = self.base._s_transform()
        if sx is None:
            return None
        # S_{s X}(w) = S_X(w) / s.
        return RationalTransform(sx.num, sx.den * self.scale, source=self)


class SingularValueLaw(SpectralLaw):
    """Law of ``s = sqrt(x)`` for ``x`` an eigenvalue law on ``[0, oo)`` (theory eq. (8.17)).

    ``pdf(s) = 2 s f(s**2)``, ``cdf(s) = F(s**2)``, ``ppf(q) = sqrt(F^{-1}(q))``;
    even moments are the eigenvalue law's moments, odd moments and the
    Stieltjes transform come from the law's own piecewise-Chebyshev
    representation (built on first use from the eigenvalue law's exact
    density).

    Parameters
    ----------
    squared_law : SpectralLaw
        The law of ``s**2``.
    """

    def __init__(self, squared_law):
        super().__init__(squared_law.options)
        lo = squared_law.support()[0]
        if lo < 0:
            raise ValueError(f"singular values need an eigenvalue law on [0, inf); this law's "
                             f"support starts at {lo!r}")
        self._sq = squared_law
        self.beta = getattr(squared_law, "beta", None)
        self.gamma = getattr(squared_law, "gamma", None)

    def _describe(self):
        return f"singular values of ({self._sq._describe()})"

    def squared(self):
        """The law of ``s**2``."""
        return self._sq

    # -- hooks ---------------------------------------------------------------------
    def _support_intervals(self):
        out = []
        for iv in self._sq.interval_details():
            if isinstance(iv.lo_exponent, LogEnd):
                # F_s(s) = F(s**2) ~ A/log(scale/s**2) = (A/2)/log(sqrt(scale)/s) (eq. (8.18))
                lo_e = LogEnd(math.sqrt(iv.lo_exponent.scale), iv.lo_exponent.sample_rtol)
            else:
                lo_e = iv.lo_exponent if iv.lo > 0 else 2 * Fraction(iv.lo_exponent) + 1
            out.append(Interval(math.sqrt(iv.lo), math.sqrt(iv.hi), lo_e, iv.hi_exponent))
        return tuple(out)

    def _atoms(self):
        loc, mass = self._sq.atoms()
        return np.sqrt(loc), mass

    def _density(self, s):
        return 2.0 * s * self._sq._density(s * s)

    def _log_end_density(self, t):
        # s f_s(s) = 2 s**2 f(s**2) = 2 [x f(x)] at log x = 2 log s
        return 2.0 * self._sq._log_end_density(2.0 * np.asarray(t))

    def _square(self, s):
        """``s**2``, with each edge of this law mapped to its squared law's edge exactly.

        ``sqrt(hi)**2`` can round to a point an ulp inside ``hi``, where a soft
        edge's density is the square root of rounding noise; the edge itself
        has density 0 (or its edge value).
        """
        with np.errstate(under="ignore", over="ignore"):
            sq = s * s
        for iv in self._sq.interval_details():
            for edge in (iv.lo, iv.hi):
                sq = np.where(s == math.sqrt(edge), edge, sq)
        return sq

    def _pdf_closed(self, s):
        out = np.zeros(s.shape)
        sq = self._square(s)
        pos = (s > 0) & (sq > 0) & (s <= math.sqrt(self._sq.support()[1]))
        if pos.any():
            out[pos] = 2.0 * s[pos] * np.asarray(self._sq.pdf(sq[pos]), dtype=float)
        zero = (s >= 0) & (sq == 0)
        if zero.any() and self._sq.interval_details():
            iv = self._sq.interval_details()[0]
            if iv.lo == 0.0 and isinstance(iv.lo_exponent, LogEnd):
                out[zero] = np.inf
            elif iv.lo == 0.0:
                eta = Fraction(iv.lo_exponent)
                if 2 * eta + 1 < 0:
                    out[zero] = np.inf
                elif 2 * eta + 1 == 0:
                    out[zero] = 2.0 * self._sq._edge_coefficient()
        return out

    def _pdf_scalar(self, s):
        sq = float(self._square(np.float64(s)))
        if s > 0 and sq > 0 and s <= math.sqrt(self._sq.support()[1]):
            return 2.0 * s * self._sq._pdf_scalar(sq)
        return float(self._pdf_closed(np.array([s]))[0])

    def _cdf_scalar(self, s):
        return self._sq._cdf_scalar(s * s) if s >= 0 else 0.0

    def _cdf_closed(self, s):
        if not self._sq.interval_details():
            return np.zeros(s.shape)
        return np.where(s >= 0, self._sq._continuous_cdf(np.where(s >= 0, s, 0.0) ** 2), 0.0)

    def _quantile(self, q, upper):
        return np.sqrt(np.maximum(self._sq._quantile(q, upper), 0.0))

    def _stieltjes_exact(self, z):
        """``G_s(z) = 2 z G_x(z**2) + G_s(-z)`` for ``Re z >= 0`` (theory eq. (8.17)).

        The first term uses the squared law's own solver; ``-z`` is then at
        least ``|z|`` away from the support ``[0, oo)``, where the
        representation's quadrature is accurate.  For ``Re z < 0`` the
        representation is used directly (``z`` is away from the support except
        next to 0, where the singularity is subtracted).
        """
        out = np.empty(z.shape, dtype=complex)
        right = z.real >= 0
        if right.any():
            zr = z[right]
            loc, mass = self.atoms()
            tiny = np.abs(zr) ** 2 <= _TINY_SQ * max(self.support()[1], 1.0) ** 2
            g = np.empty(zr.shape, dtype=complex)
            big = ~tiny
            if big.any():
                zb = zr[big]
                g[big] = 2.0 * zb * self._sq._stieltjes(zb * zb) + \
                    self._stieltjes_from_representation(-zb)
            if tiny.any():
                g[tiny] = self._stieltjes_from_representation(zr[tiny])
            out[right] = g
        if (~right).any():
            out[~right] = self._stieltjes_from_representation(z[~right])
        return out

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        """``G_s`` and ``G_s'`` from one solve of the squared law (eq. (8.17))."""
        g = np.empty(z.shape, dtype=complex)
        dg = np.empty(z.shape, dtype=complex)
        right = (z.real >= 0) & (np.abs(z) ** 2 > _TINY_SQ * max(self.support()[1], 1.0) ** 2)
        if right.any():
            zr = z[right]
            w = zr * zr
            gx, dgx = self._sq._stieltjes_pair(w)
            rep, drep = self._representation_pair(-zr)
            g[right] = 2.0 * zr * gx + rep
            dg[right] = 2.0 * gx + 4.0 * w * dgx - drep
        if (~right).any():
            g[~right], dg[~right] = self._representation_pair(z[~right])
        return g, dg

    def _mp_stieltjes(self, z):
        """Eq. (8.17) at the working precision: ``2 z G_x(z**2) + G_s(-z)`` for
        ``Re z >= 0``, with ``G_s(-z)`` by tanh-sinh quadrature of the density
        (``-z`` is at least ``|z|`` from the support, so the integrand is smooth)."""
        if z.real < 0:
            return SpectralLaw._mp_stieltjes(self, z)
        return 2 * z * self._sq._mp_stieltjes(z * z) + SpectralLaw._mp_stieltjes(self, -z)

    def _mp_density_function(self):
        """``f_s(s) = 2 s f_x(s**2)`` with the squared law's boundary value at the working
        precision (its ``_mp_stieltjes`` just above the axis)."""
        import mpmath

        sq = self._sq

        def dens(s):
            eta = mpmath.mpf(10) ** (-(mpmath.mp.dps - MP_AXIS_DIGITS)) * sq._scale()
            g = sq._mp_stieltjes(mpmath.mpc(s * s, eta))
            return 2 * s * max(-g.imag / mpmath.pi, 0)
        return dens

    def _representation_pair(self, z):
        return (self._stieltjes_from_representation(z),
                SpectralLaw._stieltjes_derivative(self, z))

    def moment(self, k):
        """``E[s**k]``: even orders from the squared law, odd ones by quadrature (eq. (8.17)).

        Parameters
        ----------
        k : int
            Order, ``k >= 0``.

        Returns
        -------
        float
        """
        from ._checks import check_int

        k = check_int(k, "k", minimum=0)
        if k % 2 == 0:
            return self._sq.moment(k // 2)
        return super().moment(k)

    def var(self):
        """``E[s**2] - E[s]**2``."""
        return self._sq.moment(1) - self.moment(1) ** 2


class ZeroPaddedLaw(SpectralLaw):
    """``t mu + (1 - t) delta_0``: the eigenvalue law after a change of dimension.

    If ``mu`` is the eigenvalue law of an ``N x N`` matrix ``B A`` and ``A B``
    is ``p x p`` with ``N = t p``, the law of ``A B`` is ``t mu + (1 - t)
    delta_0`` (theory eq. (9.4)): the non-zero eigenvalues are shared.  With
    ``t > 1`` zeros are removed, which needs ``mu({0}) >= 1 - 1/t``.

    Parameters
    ----------
    base : SpectralLaw
    t : float
        ``> 0``.
    """

    def __init__(self, base, t):
        super().__init__(base.options)
        self.base = base
        self.t = t
        loc, mass = base.atoms()
        zero = float(mass[loc == 0.0].sum()) * t + (1.0 - t)
        if zero < -ZERO_MASS_ATOL:
            raise ValueError(f"t = {t!r} removes more mass at 0 than the law has "
                             f"({float(mass[loc == 0.0].sum())!r} at 0; at most 1 - 1/t = "
                             f"{1 - 1 / t!r} can be removed)")

    def _describe(self):
        return f"{self.t:g} * ({self.base._describe()}) + {1 - self.t:g} * delta_0"

    def _support_intervals(self):
        return self.base.interval_details()

    def _atoms(self):
        loc, mass = self.base.atoms()
        mass = mass * self.t
        at_zero = loc == 0.0
        zero = float(mass[at_zero].sum()) + (1.0 - self.t)
        loc, mass = loc[~at_zero], mass[~at_zero]
        if zero > ZERO_MASS_ATOL:
            loc, mass = np.append(loc, 0.0), np.append(mass, zero)
        return loc, mass

    def _density(self, x):
        return self.t * self.base._density(x)

    def _pdf_closed(self, x):
        return self.t * np.asarray(self.base.pdf(x), dtype=float).reshape(x.shape)

    def _pdf_scalar(self, x):
        return self.t * self.base._pdf_scalar(x)

    def _cdf_closed(self, x):
        return self.t * self.base._continuous_cdf(x)

    def _stieltjes_exact(self, z):
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.t * self.base._stieltjes(z) + (1.0 - self.t) / z

    def _stieltjes_pair(self, z):
        g, dg = self.base._stieltjes_pair(z)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.t * g + (1.0 - self.t) / z, self.t * dg - (1.0 - self.t) / (z * z)

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _moments_exact(self, kmax):
        exact = self.base._moments_exact(kmax)
        if exact is None:
            return None
        sc, m = exact
        m = np.asarray(m, dtype=float) * self.t
        m[0] = 1.0
        return sc, m

    def _mp_stieltjes(self, z):
        import mpmath
        t = mpmath.mpf(self.t)
        return t * self.base._mp_stieltjes(z) + (1 - t) / z


#: Mass at 0 below which a zero-padded law has no atom there (rounding of 1 - t).
ZERO_MASS_ATOL = 1e-14
