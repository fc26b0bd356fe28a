"""Elementary laws with closed forms: point masses, semicircle, Marchenko-Pastur.

They are the leaves every composed law starts from (theory section 8.2): each
knows its Stieltjes transform, density, moments and -- where they are rational
-- its R- and S-transforms, which the subordination engine
(:mod:`freeattn.compose._subordination`) uses directly.
"""

import math
from fractions import Fraction

import numpy as np

from ..core._checks import as_real_array, real_scalar
from ._law_base import FAR_RADIUS, HARD, SOFT, Interval, SpectralLaw
from ..algebra._moment_series import from_fractions, power_sums
from ..algebra._rational import RationalTransform

__all__ = [
    "PointMasses",
    "Semicircle",
    "MarchenkoPastur",
    "point_masses",
    "semicircle",
    "marchenko_pastur",
    "MP_RATIO_RANGE",
    "MAX_SCALE",
]

#: Ratios ``c = p/N`` served by :func:`marchenko_pastur` (and by
#: ``sample_covariance``): at ``c = 1e-6`` the needle of relative width
#: ``4 sqrt(c)`` already loses the 1e-10 mass accuracy of the CDF.
MP_RATIO_RANGE = (1e-4, 1e4)

#: Largest variance (or support scale) accepted: the edges ``v (1 + sqrt c)**2``
#: and the moments up to order 12 used far from the support must stay finite.
MAX_SCALE = 1e250

#: Relative tolerance on ``sum(weights) == 1`` for :func:`point_masses`.
WEIGHT_SUM_RTOL = 1e-12


def _sqrt_upper(w):
    """Principal square root, reading a real negative ``w`` on the upper lip: adding
    ``0j`` turns a signed zero ``-0.0`` (of either part) into ``+0.0`` and changes no
    other value, so a real ``w`` (complex, or a float array) has the imaginary part
    ``+0``."""
    return np.sqrt(w + 0j)


_real_scalar = real_scalar


def _positive(value, name, upper=MAX_SCALE):
    v = _real_scalar(value, name)
    if not 0 < v <= upper:
        raise ValueError(f"{name} must be in (0, {upper:g}], got {value!r}")
    return v


# --------------------------------------------------------------------------- #
# Point masses
# --------------------------------------------------------------------------- #

class PointMasses(SpectralLaw):
    """A finite mixture of atoms ``sum_i w_i delta_{a_i}``.

    Use :func:`point_masses` to build one.
    """

    _closed_form = True

    def __init__(self, values, weights, options=None):
        super().__init__(options)
        self.values = values
        self.weights = weights

    def _describe(self):
        return f"point masses {self.values.tolist()} with weights {self.weights.tolist()}"

    def _support_intervals(self):
        return ()

    def _atoms(self):
        return self.values, self.weights

    def _terms(self, z, powers):
        """``sum_i w_i / (z - a_i)**k`` for each ``k`` of ``powers`` (1 or 2), from one
        array of differences."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = z[:, None] - self.values[None, :]
            return [(self.weights[None, :] / (d if k == 1 else d ** 2)).sum(axis=1)
                    for k in powers]

    def _stieltjes_exact(self, z):
        return self._terms(z, (1,))[0]

    def _stieltjes_derivative(self, z):
        return -self._terms(z, (2,))[0]

    def _stieltjes_pair(self, zs):
        # G and G' from one difference z - a_i (the subordination polish calls this per
        # Newton step); a point in the far field keeps the series of SpectralLaw._stieltjes
        if (np.abs(zs) > FAR_RADIUS * self._scale()).any():
            return super()._stieltjes_pair(zs)
        g, s2 = self._terms(zs, (1, 2))
        return g, -s2

    def _mp_stieltjes(self, z):
        import mpmath
        return mpmath.fsum(mpmath.mpf(float(w)) / (z - mpmath.mpf(float(a)))
                           for a, w in zip(self.values, self.weights))

    def _moment_series(self, kmax, prec):
        # sum_i w_i a_i**n, exact for values and weights with small denominators
        # (theory eq. (8.22)), else fixed point.
        return power_sums(self.values, self.weights, kmax, prec)

    def _moment_fraction(self, k):
        return sum(Fraction(float(w)) * Fraction(float(a)) ** k
                   for a, w in zip(self.values, self.weights))

    # Transforms of a single atom (a shift or a dilation).
    def _r_transform(self):
        """``R(g) = a`` for a single atom at ``a``; ``None`` otherwise."""
        if self.values.size == 1:
            return RationalTransform([self.values[0]], [1.0], source=self)
        return None

    def _s_transform(self):
        """``S(w) = 1/a`` for a single atom at ``a > 0``; ``None`` otherwise."""
        if self.values.size == 1 and self.values[0] > 0:
            return RationalTransform([1.0], [self.values[0]], source=self)
        return None

    def _curve(self):
        if self.values.size > 8:
            return None
        from ..algebra._curve import Curve
        return Curve.leaf(self.values, self.weights)

    def affine(self, shift=0.0, scale=1.0):
        """The law of ``shift + scale * X``: again point masses (theory eq. (8.7)).

        So that compositions see a discrete law (a ⊞ of two discrete laws takes
        the exact support of theory eq. (14.20)); where rounding merges two
        mapped atoms, an :class:`AffineLaw` as for any law.
        """
        from ..laws._law_base import affine as _affine

        law = _affine(self, shift, scale)          # checks the arguments
        values = law.shift + law.scale * self.values
        if not (np.all(np.isfinite(values)) and np.unique(values).size == values.size
                and np.abs(values).max() <= MAX_SCALE):
            return law
        order = np.argsort(values)
        return PointMasses(values[order], self.weights[order], self.options)


def point_masses(values, weights=None, *, options=None):
    """The discrete law ``sum_i w_i delta_{a_i}``.

    Parameters
    ----------
    values : array_like, shape (k,)
        Atom locations (finite reals, a 1-d array); repeated values are merged.
    weights : array_like, shape (k,), optional
        Non-negative weights summing to 1 (to ``1e-12``); equal weights when
        omitted.
    options : SolverOptions, optional

    Returns
    -------
    PointMasses

    Raises
    ------
    TypeError, ValueError
        For non-real or non-finite values, negative weights, weights that do
        not sum to 1, ``values`` not 1-d, or shapes that do not match.

    Examples
    --------
    >>> law = point_masses([0.0, 1.0], [0.25, 0.75])
    >>> law.mean(), law.var()
    (0.75, 0.1875)
    >>> law.cdf([-1.0, 0.0, 0.5, 1.0]).tolist()
    [0.0, 0.25, 0.25, 1.0]
    """
    from ..core._options import check_options

    v = as_real_array(values, "values", finite=True)
    if v.ndim != 1:
        raise ValueError(f"values must be a 1-d array of atom locations, got shape {v.shape}")
    if v.size == 0:
        raise ValueError("values must hold at least one atom")
    if np.abs(v).max() > MAX_SCALE:
        raise ValueError(f"values must be at most {MAX_SCALE:g} in absolute value, got {values!r}")
    if weights is None:
        w = np.full(v.size, 1.0 / v.size)
    else:
        w = as_real_array(weights, "weights", finite=True)
        if w.shape != v.shape:
            raise ValueError(f"weights must have the shape of values {v.shape}, got {w.shape}")
        if (w < 0).any():
            raise ValueError(f"weights must be >= 0, got {weights!r}")
        if abs(w.sum() - 1.0) > WEIGHT_SUM_RTOL:
            raise ValueError(f"weights must sum to 1 (to {WEIGHT_SUM_RTOL:g}), got sum "
                             f"{w.sum()!r}")
        w = w / w.sum()
    order = np.argsort(v)
    v, w = v[order], w[order]
    uniq, inv = np.unique(v, return_inverse=True)
    merged = np.zeros(uniq.size)
    np.add.at(merged, inv, w)
    keep = merged > 0
    return PointMasses(uniq[keep], merged[keep], options=check_options(options))


# --------------------------------------------------------------------------- #
# Semicircle
# --------------------------------------------------------------------------- #

class Semicircle(SpectralLaw):
    """Wigner's semicircle law of variance ``v`` (support ``[-2 sqrt v, 2 sqrt v]``).

    Use :func:`semicircle` to build one.
    """

    _closed_form = True

    def __init__(self, variance, options=None):
        super().__init__(options)
        self.variance = variance
        self.radius = 2.0 * math.sqrt(variance)

    def _describe(self):
        return f"semicircle variance={self.variance}"

    def _support_intervals(self):
        return (Interval(-self.radius, self.radius, SOFT, SOFT),)

    def _density(self, x):
        r = self.radius
        return np.sqrt(np.maximum((r - x) * (r + x), 0.0)) / (2.0 * math.pi * self.variance)

    def _pdf_closed(self, x):
        return self._density(x)

    def _cdf_closed(self, x):
        r = self.radius
        t = np.clip(x / r, -1.0, 1.0)
        return 0.5 + (t * np.sqrt(1.0 - t * t) + np.arcsin(t)) / math.pi

    def _stieltjes_exact(self, z):
        r, v = self.radius, self.variance
        sq = _sqrt_upper(z - r) * _sqrt_upper(z + r)
        big = z + sq
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.abs(big) >= np.abs(z - sq), 2.0 / big, (z - sq) / (2.0 * v))

    def _mp_stieltjes(self, z):
        import mpmath
        v = mpmath.mpf(self.variance)
        r = 2 * mpmath.sqrt(v)
        sq = mpmath.sqrt(z - r) * mpmath.sqrt(z + r)
        big, small = z + sq, z - sq
        return 2 / big if abs(big) >= abs(small) else small / (2 * v)

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        # z = v G + 1/G  =>  G' = 1/(v - 1/G**2) = G**2/(v G**2 - 1): G' from G, one root
        g = self._stieltjes(z)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return g, g * g / (self.variance * g * g - 1.0)

    def _moment_series(self, kmax, prec):
        # m_{2j} = Catalan(j) v**j (theory eq. (8.6)), exact rationals.
        v = Fraction(self.variance)
        out, c, vj = [Fraction(1)], 1, Fraction(1)
        for n in range(1, kmax + 1):
            if n % 2:
                out.append(Fraction(0))
            else:
                j = n // 2
                c = c * 2 * (2 * j - 1) // (j + 1)
                vj *= v
                out.append(c * vj)
        return from_fractions(out, math.frexp(self.radius)[1], prec)

    def _moment_fraction(self, k):
        if k % 2:
            return Fraction(0)
        j = k // 2
        return math.comb(2 * j, j) // (j + 1) * Fraction(self.variance) ** j

    def _r_transform(self):
        """``R(g) = v g``."""
        return RationalTransform([0.0, self.variance], [1.0], source=self)

    def _s_transform(self):
        return None

    def _curve(self):
        # The semicircle is delta_0 ⊞ semicircle: z = tau + v/tau, G = 1/tau (eq. (8.8)).
        from ..algebra._curve import Curve
        from ..algebra._levels import RLevel
        return Curve.leaf([0.0], [1.0]).extend(RLevel(self._r_transform(), self))


def semicircle(variance=1.0, *, options=None):
    """Wigner's semicircle law of variance ``v``.

    Parameters
    ----------
    variance : float
        ``v > 0``; support ``[-2 sqrt(v), 2 sqrt(v)]``.
    options : SolverOptions, optional

    Returns
    -------
    Semicircle
        Density ``sqrt(4 v - x**2)/(2 pi v)``, ``G(z) = (z - sqrt(z**2 - 4 v))/(2 v)``,
        R-transform ``v g`` (theory eq. (8.6)).

    Examples
    --------
    >>> sc = semicircle(1.0)
    >>> sc.support()
    (-2.0, 2.0)
    >>> round(sc.pdf(0.0), 12), round(sc.moment(4), 12)     # 1/pi; Catalan C_2 = 2
    (0.318309886184, 2.0)
    """
    from ..core._options import check_options

    return Semicircle(_positive(variance, "variance"), options=check_options(options))


# --------------------------------------------------------------------------- #
# Marchenko-Pastur
# --------------------------------------------------------------------------- #

class MarchenkoPastur(SpectralLaw):
    """Marchenko-Pastur law of the eigenvalues of ``X X^T / N`` (entry variance ``v``, ratio ``c``).

    Use :func:`marchenko_pastur` to build one.

    Attributes
    ----------
    variance, ratio : float
    beta, gamma : None
        (Kept for the attention-law interface.)
    """

    beta = None
    gamma = None
    _closed_form = True

    def __init__(self, variance, ratio, options=None):
        super().__init__(options)
        self.variance = variance
        self.ratio = ratio
        r = math.sqrt(ratio)
        self._lo = variance * (1.0 - r) ** 2
        self._hi = variance * (1.0 + r) ** 2

    def _describe(self):
        return f"Marchenko-Pastur variance={self.variance}, ratio={self.ratio}"

    def _support_intervals(self):
        if self.ratio == 1.0:
            return (Interval(0.0, self._hi, HARD, SOFT),)
        return (Interval(self._lo, self._hi, SOFT, SOFT),)

    def _atoms(self):
        if self.ratio > 1.0:
            return np.array([0.0]), np.array([1.0 - 1.0 / self.ratio])
        return np.empty(0), np.empty(0)

    def _density(self, x):
        lo, hi = self._lo, self._hi
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.sqrt(np.maximum((hi - x) * (x - lo), 0.0)) / (
                2.0 * math.pi * self.variance * self.ratio * x)
        return f

    def _pdf_closed(self, x):
        # Closed form of theory eq. (5.4); 0 outside (lo, hi), inf at a hard edge 0.
        lo, hi = self._lo, self._hi
        inside = (x > lo) & (x < hi)
        out = np.zeros(x.shape)
        xi = x[inside]
        out[inside] = np.sqrt((hi - xi) * (xi - lo)) / (2.0 * math.pi * self.variance
                                                        * self.ratio * xi)
        if lo == 0.0:
            out[x == 0.0] = np.inf
        return out

    def stieltjes(self, z):
        """Cauchy-Stieltjes transform (see :meth:`SpectralLaw.stieltjes`).

        Raises
        ------
        ValueError
            Also when ``ratio == 1`` and ``z = 0``: the hard edge, where ``G``
            diverges like ``z**(-1/2)`` (as at an atom, no finite value exists).
        """
        if self.ratio == 1.0 and np.any(np.asarray(z) == 0):
            raise ValueError("z = 0 is the hard edge of a Marchenko-Pastur law with ratio 1, "
                             "where G diverges; evaluate at z != 0")
        return super().stieltjes(z)

    def _stieltjes_exact(self, z):
        v, c = self.variance, self.ratio
        lo, hi = self._lo, self._hi
        sq = _sqrt_upper(z - lo) * _sqrt_upper(z - hi)
        b = z - v * (1.0 - c)
        big = b + sq
        small = b - sq
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # Two forms of the same root (product of the roots is 1/(c v z)); the one
            # without cancellation, the second next to the pole of the atom at 0.
            return np.where(np.abs(big) >= np.abs(small), 2.0 / big, small / (2.0 * c * v * z))

    def _mp_stieltjes(self, z):
        import mpmath
        v, c = mpmath.mpf(self.variance), mpmath.mpf(self.ratio)
        lo, hi = v * (1 - mpmath.sqrt(c)) ** 2, v * (1 + mpmath.sqrt(c)) ** 2
        sq = mpmath.sqrt(z - lo) * mpmath.sqrt(z - hi)
        b = z - v * (1 - c)
        big, small = b + sq, b - sq
        return 2 / big if abs(big) >= abs(small) else small / (2 * c * v * z)

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        # c v z G**2 - (z - v(1-c)) G + 1 = 0 differentiated in z: G' from G, one root.
        v, c = self.variance, self.ratio
        g = self._stieltjes(z)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return g, -(c * v * g * g - g) / (2.0 * c * v * z * g - (z - v * (1.0 - c)))

    def _moment_series(self, kmax, prec):
        # Narayana moments (theory eq. (5.10)), exact rationals from the
        # recurrence of eq. (8.26).
        return from_fractions(self._narayana_fractions(kmax), math.frexp(self._hi)[1], prec)

    def _narayana_fractions(self, kmax):
        """``m_0 .. m_kmax`` exactly: ``m_n = v**n N_n(c)`` with the Narayana polynomial
        ``N_n(c) = sum_k N(n, k) c**(k-1)``, homogenized as ``T_n = q**(n-1) N_n(p/q)`` for
        ``c = p/q``: ``(n+1) T_n = (2n-1)(p+q) T_{n-1} - (n-2)(q-p)**2 T_{n-2}``
        (theory eq. (8.26))."""
        cache = self.__dict__.get("_narayana_cache")
        if cache is not None and len(cache) > kmax:
            return cache[:kmax + 1]
        v, c = Fraction(self.variance), Fraction(self.ratio)
        p, q = c.numerator, c.denominator
        T = [0, 1]
        for n in range(2, kmax + 1):
            num = (2 * n - 1) * (p + q) * T[n - 1] - (n - 2) * (q - p) ** 2 * T[n - 2]
            T.append(num // (n + 1))
        out = [Fraction(1)] + [T[n] * v ** n / Fraction(q) ** (n - 1) for n in range(1, kmax + 1)]
        self._narayana_cache = out
        return out

    def _moment_fraction(self, k):
        if k == 0:
            return Fraction(1)
        v, c = Fraction(self.variance), Fraction(self.ratio)
        return v ** k * sum(math.comb(k, j) * math.comb(k, j - 1) // k * c ** (j - 1)
                            for j in range(1, k + 1))

    def _r_transform(self):
        """``R(g) = v / (1 - c v g)``."""
        v, c = self.variance, self.ratio
        return RationalTransform([v], [1.0, -c * v], source=self)

    def _s_transform(self):
        """``S(w) = 1 / (v (1 + c w))``."""
        v, c = self.variance, self.ratio
        return RationalTransform([1.0], [v, c * v], source=self)

    def _curve(self):
        # MP(v, c) = MP(1, c) ⊠ delta_v, parametrized by t = 1/G (eq. (8.6)).
        from ..algebra._curve import Curve
        return Curve.marchenko_pastur(self.variance, self.ratio)


def marchenko_pastur(variance=1.0, ratio=1.0, *, options=None):
    """Marchenko-Pastur law of the eigenvalues of ``X X^T / N``.

    Parameters
    ----------
    variance : float
        Entry variance ``v > 0``.
    ratio : float, optional
        ``c = p/N`` in ``[1e-4, 1e4]`` (``MP_RATIO_RANGE``); an atom ``1 - 1/c``
        sits at 0 when ``c > 1``.
    options : SolverOptions, optional

    Returns
    -------
    MarchenkoPastur
        Support ``v (1 -+ sqrt(c))**2`` (theory eq. (5.4)); R-transform
        ``v/(1 - c v g)``, S-transform ``1/(v (1 + c w))`` (eq. (8.6)).

    Raises
    ------
    TypeError, ValueError
        For a non-real, non-finite or out-of-range variance or ratio.

    Examples
    --------
    >>> mp = marchenko_pastur(2.0)
    >>> mp.support()
    (0.0, 8.0)
    >>> round(float(mp.pdf(2.0)), 12)      # sqrt((8 - x) x)/(2 pi v x) at x = 2
    0.137832223855
    """
    from ..core._options import check_options

    c = _real_scalar(ratio, "ratio")
    if not MP_RATIO_RANGE[0] <= c <= MP_RATIO_RANGE[1]:
        raise ValueError(f"ratio must be in [{MP_RATIO_RANGE[0]}, {MP_RATIO_RANGE[1]}], "
                         f"got {ratio!r}")
    v = _positive(variance, "variance", upper=MAX_SCALE / (1.0 + math.sqrt(c)) ** 2)
    return MarchenkoPastur(v, c, options=check_options(options))
