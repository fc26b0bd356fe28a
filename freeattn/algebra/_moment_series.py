"""Moment sequences in exact rational or fixed-point integer arithmetic (theory section 8.10).

The moments of a composed law follow from those of its constituents by the
moment-cumulant relation (theory eq. (8.3)), series reversion (eq. (8.5)) and
the binomial expansion of an affine map.  Those recursions cancel: the free
cumulants of a law on ``[-1, 1]`` grow like ``4**n`` while its moments stay
below 1, so a float64 evaluation loses about a digit every few orders (theory
eq. (8.24)).  Here every sequence is a list of Python integers
(:class:`MomentSeries`, eq. (8.21)):

* *exact* (``prec == 0``): ``m_n = nums[n] * unit**n`` with ``unit`` a
  positive :class:`fractions.Fraction`; the moment-cumulant relation has
  integer coefficients and weight ``n``, so the integers stay integers and no
  digit is lost (eq. (8.22));
* *fixed point* (``prec > 0``): ``m_n = nums[n] * 2**(e n - prec)`` with
  ``2**e`` a bound of the support, i.e. ``nums[n] / 2**prec`` is the moment in
  units of ``2**(e n)``, rounded to ``prec`` fractional bits -- the mantissa
  arithmetic of mpmath at one common exponent, so that a whole recursion
  runs on integers.

The recursions are evaluated online, one anti-diagonal of the table of powers
``[z**j] M(z)**s`` per order (eq. (8.23)), in ``K**3/6`` integer products for
``K`` orders.  Callers choose the precision and check the result by repeating
the computation at a higher one (:func:`agree`,
:func:`freeattn.laws._law_base.verified_series`).

Nothing here does I/O.
"""

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "EXACT_MAX_UNIT_BITS",
    "MomentSeries",
    "affine_series",
    "agree",
    "compound_poisson_series",
    "free_additive_series",
    "free_cumulant_series",
    "free_multiplicative_series",
    "from_fractions",
    "nice_fraction",
    "power_sums",
    "scaled_series",
    "times_constant",
]

#: A law's moments are kept as exact rationals when their common unit
#: ``1/D`` (``m_n D**n`` an integer for every ``n``) has ``D <= 2**EXACT_MAX_UNIT_BITS``,
#: and a parameter counts as rational when its denominator is within the same
#: bound: ``1/2``, ``1/16``, integers.  A float such as ``0.3`` is the dyadic
#: rational ``5404319552844595 / 2**54``, whose powers add 54 bits per order
#: to every integer; such laws use fixed point instead.
EXACT_MAX_UNIT_BITS = 32
_EXACT_MAX_DENOMINATOR = 1 << EXACT_MAX_UNIT_BITS


def _rshift(x, p):
    """``x / 2**p`` rounded to the nearest integer (``p >= 0``)."""
    if p <= 0:
        return x
    return (x + (1 << (p - 1))) >> p


def _rdiv(x, d):
    """``x / d`` rounded to the nearest integer (``d > 0``)."""
    return (2 * x + d) // (2 * d)


def _unit_above(x):
    """A Fraction ``M 2**E >= x`` with an 8-bit mantissa ``M`` (within 1% of ``x > 0``).

    Units of this form keep the integers of a fixed-point series short while
    bounding the moments tightly (theory eq. (8.21)).
    """
    x = Fraction(x)
    if x <= 0:
        return Fraction(1)
    E = x.numerator.bit_length() - x.denominator.bit_length() - UNIT_MANTISSA_BITS
    scaled = x / Fraction(2) ** E                  # in [2**(bits-1), 2**(bits+1)]
    M = -((-scaled.numerator) // scaled.denominator)   # ceil
    return M * Fraction(2) ** E


#: Bits of the mantissa of a fixed-point unit (:func:`_unit_above`).
UNIT_MANTISSA_BITS = 8


def nice_fraction(x):
    """``x`` as a Fraction when its denominator is at most ``2**EXACT_MAX_UNIT_BITS``.

    Parameters
    ----------
    x : float, int or Fraction

    Returns
    -------
    Fraction or None
    """
    f = Fraction(x)
    return f if f.denominator <= _EXACT_MAX_DENOMINATOR else None


def _fraction_gcd(a, b):
    """The largest ``g`` with ``a/g`` and ``b/g`` integers (positive Fractions)."""
    num = math.gcd(a.numerator * b.denominator, b.numerator * a.denominator)
    return Fraction(num, a.denominator * b.denominator)


def _log2_abs(x):
    """``log2 |x|`` of a non-zero integer (as a float, for any size)."""
    bits = abs(x).bit_length()
    cut = max(bits - 60, 0)
    return math.log2(abs(x) >> cut) + cut


class MomentSeries:
    """Moments ``m_0, ..., m_K`` of a law as integers (theory eq. (8.21)).

    ``m_n = nums[n] * unit**n / 2**prec`` with ``unit`` a positive Fraction:
    exact rationals when ``prec == 0``; fixed point with ``prec`` fractional
    bits otherwise, ``unit`` then close to the radius of the support (so that
    ``nums[n] / 2**prec``, the moment in units of ``unit**n``, is at most
    about 1).  The same container holds free cumulants
    (:func:`free_cumulant_series`).

    Parameters
    ----------
    nums : list of int
    prec : int
        Fractional bits (0: exact).
    unit : Fraction
    """

    __slots__ = ("nums", "prec", "unit")

    def __init__(self, nums, prec, unit):
        self.nums = [int(v) for v in nums]
        self.prec = int(prec)
        self.unit = Fraction(unit)

    @property
    def exact(self):
        """True for exact rationals (``prec == 0``)."""
        return self.prec == 0

    @property
    def order(self):
        """``K``: the highest order held."""
        return len(self.nums) - 1

    def truncated(self, kmax):
        """The first ``kmax + 1`` entries (the recursions are online, so a longer
        computation agrees with a shorter one on the common entries)."""
        if kmax >= self.order:
            return self
        return MomentSeries(self.nums[:kmax + 1], self.prec, self.unit)

    def fraction(self, n):
        """The value ``m_n`` as an exact Fraction (of the rounded integer when fixed)."""
        return self.nums[n] * self.unit ** n / (1 << self.prec)

    def log2_abs(self, n):
        """``log2 |m_n|`` (``-inf`` for 0), without forming the number."""
        x = self.nums[n]
        if x == 0:
            return -math.inf
        return _log2_abs(x) - self.prec + n * (_log2_abs(self.unit.numerator)
                                               - _log2_abs(self.unit.denominator))

    def to_float(self, n, what="moment"):
        """``m_n`` correctly rounded to float64.

        Raises
        ------
        OverflowError
            If ``|m_n|`` is beyond the float64 range (the message names ``n``).
        """
        try:
            return float(self.fraction(n))
        except OverflowError:
            raise OverflowError(f"{what} k={n} is about 10**{self.log2_abs(n) * math.log10(2):.1f}, "
                                f"beyond the float64 range") from None

    def radius(self):
        """``max_{1 <= n <= K} |m_n|**(1/n)`` (a lower bound of the support radius; 0 if all vanish)."""
        best = -math.inf
        for n in range(1, len(self.nums)):
            best = max(best, self.log2_abs(n) / n)
        return 0.0 if best == -math.inf else 2.0 ** best

    def scaled_floats(self):
        """``(scale, m_n / scale**n)`` in float64 with ``scale`` about the largest
        ``|m_n|**(1/n)`` (each normalized moment at most about 1)."""
        rho = self.radius()
        unit = _unit_above(rho) if rho > 0 else Fraction(1)
        ratio = self.unit / unit
        out = np.empty(len(self.nums))
        for n, x in enumerate(self.nums):
            out[n] = float(x * ratio ** n / (1 << self.prec))
        return float(unit), out

    def fixed(self, prec, unit=None):
        """The same sequence in fixed point with ``prec`` bits and the given unit:
        ``nums[n] (unit_old/unit)**n 2**(prec - prec_old)``, exact rational powers,
        then rounded.  The default unit is the series' own, or for an exact series
        one just above its radius (so that no entry is left in the last bits)."""
        if unit is None:
            unit = self.unit if not self.exact else _unit_above(self.radius() or 1.0)
        unit = Fraction(unit)
        ratio = self.unit / unit
        if self.prec == prec and ratio == 1:
            return self
        p, q = ratio.numerator, ratio.denominator
        shift = prec - self.prec
        out, pn, qn = [], 1, 1
        for x in self.nums:
            num, den = x * pn, qn
            if shift >= 0:
                num <<= shift
            else:
                den <<= -shift
            out.append(num if den == 1 else _rdiv(num, den))
            pn *= p
            qn *= q
        return MomentSeries(out, prec, unit)

    def tightened(self):
        """A fixed-point series moved to the unit :func:`_unit_above` of its radius.

        A unit much above the radius would leave the high moments in the last
        bits of the integers; the next operation then starts from moments
        known to ``2**-prec`` of their size.  Exact series are returned as they are.
        """
        if self.exact:
            return self
        rho = self.radius()
        if rho == 0:
            return self
        return self.fixed(self.prec, _unit_above(rho))

    def __repr__(self):
        kind = "exact" if self.exact else f"{self.prec}-bit"
        return f"MomentSeries({kind}, order {self.order}, unit {self.unit})"


# --------------------------------------------------------------------------- #
# Construction
# --------------------------------------------------------------------------- #

def _graded_unit(values, limit=_EXACT_MAX_DENOMINATOR):
    """``D`` with ``values[n] * D**n`` an integer for every ``n >= 1``, or ``None``
    once ``D`` exceeds ``limit`` (``None``: no limit).

    Built up order by order: the part ``r`` of the denominator of
    ``values[n]`` not yet covered by ``D**n`` multiplies ``D`` by its largest
    perfect root of degree at most ``n`` (``r = t**j`` with ``j <= n``
    divides ``t**n``).
    """
    D = 1
    for n, v in enumerate(values):
        if n == 0:
            continue
        den = Fraction(v).denominator
        r = den // math.gcd(den, D ** n)
        if r == 1:
            continue
        if limit is not None and r.bit_length() > n * limit.bit_length():
            return None
        for j in range(min(n, r.bit_length()), 0, -1):
            t = _iroot(r, j)
            if t ** j == r:
                D *= t
                break
        if limit is not None and D > limit:
            return None
    return D


def _iroot(x, j):
    """``floor(x**(1/j))`` for integers ``x >= 0``, ``j >= 1``."""
    if j == 1 or x < 2:
        return x
    t = max(int(round(x ** (1.0 / j))), 1) if x.bit_length() < 1000 else \
        1 << (x.bit_length() // j + 1)
    while True:
        nxt = ((j - 1) * t + x // t ** (j - 1)) // j
        if nxt >= t:
            break
        t = nxt
    while t ** j > x:
        t -= 1
    while (t + 1) ** j <= x:
        t += 1
    return t


def from_fractions(values, radius, prec):
    """A series from exact moments ``[1, m_1, ..., m_K]`` (Fractions or ints).

    Exact when the common unit ``1/D`` (:func:`_graded_unit`) has
    ``D <= 2**EXACT_MAX_UNIT_BITS``, else rounded to fixed point with
    ``prec`` bits in a unit just above ``radius``.

    Parameters
    ----------
    values : sequence of Fraction or int
        ``values[0]`` must be 1.
    radius : float
        The radius of the support (``max |x|``).
    prec : int
        Bits of the fixed-point fallback.

    Returns
    -------
    MomentSeries
    """
    values = [Fraction(v) for v in values]
    D = _graded_unit(values)
    if D is not None:
        nums = [1] + [int(v * D ** n) for n, v in enumerate(values) if n > 0]
        return MomentSeries(nums, 0, Fraction(1, D))
    unit = _unit_above(radius) if radius > 0 else Fraction(1)
    out = []
    for n, v in enumerate(values):
        v = v / unit ** n
        out.append(_rdiv(v.numerator << prec, v.denominator))
    return MomentSeries(out, prec, unit)


#: Discrete laws with more atoms than this use fixed point (the exact
#: integers grow with the number of atoms as well as the order).
EXACT_MAX_ATOMS = 64

#: Extra bits carried by powers accumulated over many orders (each rounded
#: product adds half a unit of the last place).
POWER_GUARD_BITS = 32


def power_sums(values, weights, kmax, prec):
    """Moments ``sum_i w_i a_i**n`` of a discrete law (exact when every value and weight is
    a :func:`nice_fraction` and there are at most :data:`EXACT_MAX_ATOMS` atoms).

    Parameters
    ----------
    values, weights : sequence of float
    kmax, prec : int

    Returns
    -------
    MomentSeries
    """
    vals = [Fraction(float(a)) for a in values]
    wts = [Fraction(float(w)) for w in weights]
    if all(nice_fraction(a) is not None for a in vals) and \
            all(nice_fraction(w) is not None for w in wts) and len(vals) <= EXACT_MAX_ATOMS:
        d = math.lcm(*[a.denominator for a in vals])
        g = math.lcm(*[w.denominator for w in wts])
        alpha = [int(a * d) for a in vals]
        beta = [int(w * g) for w in wts]
        nums = [1]
        powers = list(beta)
        gpow = 1
        for n in range(1, kmax + 1):
            powers = [p * a for p, a in zip(powers, alpha)]
            nums.append(sum(powers) * gpow)
            gpow *= g
        return MomentSeries(nums, 0, Fraction(1, d * g))
    # Fixed point: powers of a_i / unit accumulated with guard bits.
    radius = max((abs(a) for a in vals), default=Fraction(0))
    unit = _unit_above(radius) if radius > 0 else Fraction(1)
    guard = prec + POWER_GUARD_BITS
    half = 1 << (guard - 1)
    A = np.array([_rdiv((a / unit).numerator << guard, (a / unit).denominator) for a in vals],
                 dtype=object)
    cur = np.array([_rdiv(w.numerator << guard, w.denominator) for w in wts], dtype=object)
    nums = [1 << prec]
    for n in range(1, kmax + 1):
        cur = (cur * A + half) >> guard
        nums.append(_rshift(int(np.sum(cur)), guard - prec))
    return MomentSeries(nums, prec, unit)


# --------------------------------------------------------------------------- #
# Integer kernels (theory eq. (8.23))
# --------------------------------------------------------------------------- #

def _moment_cumulant_kernel(values, P, to_moments):
    """Free cumulants -> moments (``to_moments``) or moments -> free cumulants.

    ``values[0..K]`` are integers in one unit, fixed point with ``P`` bits
    (``P == 0``: exact).  With ``pw[s, j] = [z**j] M(z)**s`` the moments are
    ``m_n = sum_{s=1}^{n} kappa_s pw[s, n - s]`` (eq. (8.23)); ``pw[s, n - s]``
    needs ``m_0 .. m_{n-s}`` only, so order ``n`` adds one anti-diagonal.
    """
    K = len(values) - 1
    one = 1 << P
    if to_moments:
        kappa = np.array([0] + [int(v) for v in values[1:]], dtype=object)
        m = [one] + [0] * K
    else:
        m = [one] + [int(v) for v in values[1:]]
        kappa = np.zeros(K + 1, dtype=object)
    mrev = np.zeros(K + 1, dtype=object)
    pw = np.zeros((K + 1, K + 1), dtype=object)
    for n in range(1, K + 1):
        mrev[K - (n - 1)] = m[n - 1]
        pw[1, n - 1] = m[n - 1]
        for s in range(2, n + 1):
            j = n - s
            pw[s, j] = one if j == 0 else _rshift(int(np.dot(mrev[K - j:], pw[s - 1, :j + 1])), P)
        s_idx = np.arange(1, n + 1)
        diag = pw[s_idx, n - s_idx]
        if to_moments:
            m[n] = _rshift(int(np.dot(kappa[1:n + 1], diag)), P)
        else:
            acc = int(np.dot(kappa[1:n], diag[:-1])) if n > 1 else 0
            kappa[n] = m[n] - _rshift(acc, P)
    return m if to_moments else [int(v) for v in kappa]


def _reversion_kernel(f, P):
    """Coefficients ``g[0..K]`` (``g[0] = 0``) of the inverse of ``f = sum f[n] z**n``.

    ``f[0]`` is ignored and ``f[1] != 0``; fixed point with ``P`` bits, or
    exact (``P == 0``) when ``f[1] == 1``.  ``[z**n] f(g(z)) = 0`` for
    ``n >= 2`` gives ``g_n = -(sum_{s=2}^{n} f_s [z**n] g**s) / f_1`` with the
    powers online as in :func:`_moment_cumulant_kernel` (eqs. (8.5), (8.23)).
    """
    K = len(f) - 1
    one = 1 << P
    F1 = int(f[1])
    if F1 == 0:
        raise ZeroDivisionError("series reversion needs a non-zero linear coefficient")
    if P == 0 and F1 != 1:
        raise ValueError("exact series reversion needs a unit linear coefficient")
    fs = np.array([0] + [int(v) for v in f[1:]], dtype=object)
    g = [0] * (K + 1)
    if K == 0:
        return g
    g[1] = _rdiv(one * one, F1) if P else 1
    grev = np.zeros(K + 1, dtype=object)         # grev[K - i] = g[i]
    pw = np.zeros((K + 1, K + 1), dtype=object)  # pw[s, n] = [z**n] g**s
    pw[1, 1] = g[1]
    grev[K - 1] = g[1]
    for n in range(2, K + 1):
        for s in range(2, n + 1):
            # [z**n] g**s = sum_{i=1}^{n-s+1} g_i [z**(n-i)] g**(s-1)
            L = n - s + 1
            pw[s, n] = _rshift(int(np.dot(grev[K - L:K], pw[s - 1, s - 1:n])), P)
        acc = int(np.dot(fs[2:n + 1], pw[2:n + 1, n]))
        g[n] = -_rdiv(acc, F1) if P else -acc
        pw[1, n] = g[n]
        grev[K - n] = g[n]
    return g


# --------------------------------------------------------------------------- #
# Operations on series
# --------------------------------------------------------------------------- #

def _common(a, b, prec, unit):
    """``(A, B, P, unit)``: integer lists of ``a`` and ``b`` in one unit.

    Exact when both are exact (``unit`` the Fraction gcd of the units, so that
    the rescaling is by integer powers); otherwise fixed point with ``prec``
    bits in the given ``unit``.
    """
    K = min(a.order, b.order)
    a, b = a.truncated(K), b.truncated(K)
    if a.exact and b.exact:
        u = _fraction_gcd(a.unit, b.unit)
        out = []
        for s in (a, b):
            r = s.unit / u
            r, rn = r.numerator, 1
            nums = []
            for x in s.nums:
                nums.append(x * rn)
                rn *= r
            out.append(nums)
        return out[0], out[1], 0, u
    return a.fixed(prec, unit).nums, b.fixed(prec, unit).nums, prec, Fraction(unit)


#: Orders of the short trial run that sets the working unit of a fixed-point
#: operation (:func:`_trial_unit`).
TRIAL_ORDER = 16


def _trial_unit(op, a, b, prec, bound):
    """The working unit of a fixed-point operation: the radius seen in a short run.

    Fixed point carries ``2**-prec`` absolute in units of ``unit**n``; a unit
    above the radius ``r`` of the result leaves ``m_n`` at ``(r/unit)**n``
    and loses ``n log2(unit/r)`` bits, a unit below it only lengthens the
    integers.  The largest ``|m_n|**(1/n)``, ``n <= TRIAL_ORDER``, of a run in
    the a-priori ``bound`` is below ``r`` and close to it (theory eq. (8.24)).
    """
    second = isinstance(b, MomentSeries)
    K = min(a.order, b.order) if second else a.order
    if K <= TRIAL_ORDER:
        return bound
    trial = op(a.truncated(TRIAL_ORDER), b.truncated(TRIAL_ORDER) if second else b, prec, bound)
    if trial is None:
        return bound
    rho = trial.radius()
    return _unit_above(rho) if rho > 0 else bound


def free_additive_series(a, b, prec):
    """Moments of ``a ⊞ b``: free cumulants add (theory eqs. (8.2), (8.3), (8.23)).

    Parameters
    ----------
    a, b : MomentSeries
    prec : int
        Bits of the fixed-point arithmetic when either input is not exact
        (in the unit ``unit_a + unit_b``, a bound of the support of ``a ⊞ b``).

    Returns
    -------
    MomentSeries
    """
    unit = None
    if not (a.exact and b.exact):
        unit = _trial_unit(_additive, a, b, prec, _unit_above(a.unit + b.unit))
    return _additive(a, b, prec, unit).tightened()


def _additive(a, b, prec, unit):
    A, B, P, u = _common(a, b, prec, unit)
    ka = _moment_cumulant_kernel(A, P, to_moments=False)
    kb = _moment_cumulant_kernel(B, P, to_moments=False)
    m = _moment_cumulant_kernel([x + y for x, y in zip(ka, kb)], P, to_moments=True)
    return MomentSeries(m, P, u)


def free_cumulant_series(a):
    """Free cumulants ``kappa_1 .. kappa_K`` of a series (entry 0 is 1), same unit (eq. (8.3))."""
    k = _moment_cumulant_kernel(a.nums, a.prec, to_moments=False)
    k[0] = 1 << a.prec
    return MomentSeries(k, a.prec, a.unit)


def scaled_series(a, factor, prec):
    """Moments of ``factor * X`` for ``factor > 0``: the same integers in the unit
    ``factor * unit`` (exact when ``a`` is exact and ``factor`` a :func:`nice_fraction`,
    else in fixed point with ``prec`` bits)."""
    f = Fraction(factor)
    if f <= 0:
        raise ValueError("factor must be positive")
    if a.exact and nice_fraction(f) is None:
        a = a.fixed(prec)
    return MomentSeries(a.nums, a.prec, a.unit * f)


def times_constant(a, t, prec):
    """``t * m_n`` for ``n >= 1`` (``m_0`` stays 1): zero padding ``t mu + (1 - t) delta_0``.

    Exact when ``a`` is exact and ``t`` a :func:`nice_fraction`
    (``m_n t = N_n p q**(n-1) (unit/q)**n`` for ``t = p/q``), otherwise fixed
    point with ``prec`` bits in the same unit.
    """
    t = Fraction(t)
    if a.exact and nice_fraction(t) is not None:
        p, q = t.numerator, t.denominator
        nums, qn = [a.nums[0]], 1
        for x in a.nums[1:]:
            nums.append(x * p * qn)
            qn *= q
        return MomentSeries(nums, 0, a.unit / q)
    x = a.fixed(prec)
    nums = [x.nums[0]] + [_rdiv(v * t.numerator, t.denominator) for v in x.nums[1:]]
    return MomentSeries(nums, prec, x.unit)


def compound_poisson_series(b, variance, ratio, prec):
    """Moments of ``MP(v, c) ⊠ b``: the companion is compound free Poisson (eq. (5.8)).

    ``kappa_n = c v**n m_n(b)`` are the free cumulants of
    ``c (MP ⊠ b) + (1 - c) delta_0``; its moments divided by ``c`` (``n >= 1``)
    are those of ``MP(v, c) ⊠ b`` (eqs. (8.3), (8.23)).  Exact when ``b`` is
    exact and ``v``, ``c`` are :func:`nice_fraction`\\ s.

    Parameters
    ----------
    b : MomentSeries
    variance, ratio : float
    prec : int

    Returns
    -------
    MomentSeries
    """
    v, c = Fraction(variance), Fraction(ratio)
    if b.exact and nice_fraction(v) is not None and nice_fraction(c) is not None:
        return _compound_poisson(b, (v, c), prec, None)
    # a-priori bound of the support: v (1 + sqrt c)**2 unit_b
    edge = _unit_above(Fraction(float(variance) * (1.0 + math.sqrt(float(ratio))) ** 2))
    unit = _trial_unit(_compound_poisson, b, (v, c), prec, _unit_above(edge * b.unit))
    return _compound_poisson(b, (v, c), prec, unit).tightened()


def _compound_poisson(b, vc, prec, unit):
    v, c = vc
    if unit is None:
        kappa = times_constant(scaled_series(b, v, prec), c, prec)
    else:
        kappa = times_constant(scaled_series(b.fixed(prec), v, prec).fixed(prec, unit), c, prec)
    m = _moment_cumulant_kernel(kappa.nums, kappa.prec, to_moments=True)
    return times_constant(MomentSeries(m, kappa.prec, kappa.unit), 1 / c, prec)


def free_multiplicative_series(a, b, prec):
    """Moments of ``a ⊠ b`` of two laws on ``[0, oo)`` with positive means (eqs. (8.4), (8.5)).

    With ``psi(z) = sum x_n (u z)**n`` in the unit ``u`` of each series, the
    reverted series ``zeta = u chi`` are multiplied as
    ``zeta_a zeta_b (1 + w)/w = u_a u_b chi_{a⊠b}`` and reverted back, all in
    fixed point with ``prec`` bits (the linear coefficients are not 1, so
    there is no exact path).

    Returns
    -------
    MomentSeries or None
        ``None`` when a mean is not positive.
    """
    K = min(a.order, b.order)
    a, b = a.truncated(K).fixed(prec), b.truncated(K).fixed(prec)
    if K == 0:
        return MomentSeries([1 << prec], prec, a.unit * b.unit)
    if a.nums[1] <= 0 or b.nums[1] <= 0:
        return None
    unit = _trial_unit(_multiplicative, a, b, prec, a.unit * b.unit)
    return _multiplicative(a, b, prec, unit).tightened()


def _multiplicative(a, b, prec, unit):
    K = min(a.order, b.order)
    A, B = a.nums, b.nums
    za = _reversion_kernel([0] + A[1:], prec)
    zb = _reversion_kernel([0] + B[1:], prec)
    za_arr = np.array(za, dtype=object)
    zb_rev = np.array(zb[::-1], dtype=object)       # zb_rev[K - i] = zb[i]
    # p_n = sum_{i=1}^{n-1} za_i zb_{n-i}, n = 2 .. K+1
    p = [0] * (K + 2)
    for n in range(2, K + 2):
        lo, hi = max(1, n - K), min(n - 1, K)
        if lo > hi:
            continue
        p[n] = _rshift(int(np.dot(za_arr[lo:hi + 1], zb_rev[K - (n - lo):K - (n - hi) + 1])),
                       prec)
    # chi_n = p_{n+1} + p_n is u_a u_b chi_{a⊠b}; times unit/(u_a u_b) it reverts to the
    # moments in units of unit**n.
    r = unit / (a.unit * b.unit)
    chi = [0] + [_rdiv((p[n + 1] + p[n]) * r.numerator, r.denominator) for n in range(1, K + 1)]
    x = _reversion_kernel(chi, prec)
    x[0] = 1 << prec
    return MomentSeries(x, prec, unit)


def affine_series(a, shift, scale, prec):
    """Moments of ``shift + scale X``: ``sum_j C(n, j) shift**(n-j) scale**j m_j``.

    Exact when ``a`` is exact and ``shift``, ``scale`` are :func:`nice_fraction`\\ s
    (unit ``u' = gcd(|shift|, |scale| u)``, integer ``shift/u'`` and
    ``scale u/u'``); otherwise fixed point in a unit ``u' >= |shift| + |scale| u``.

    Parameters
    ----------
    a : MomentSeries
    shift, scale : float
    prec : int

    Returns
    -------
    MomentSeries
    """
    s0, s1 = Fraction(shift), Fraction(scale)
    K = a.order
    if a.exact and nice_fraction(s0) is not None and nice_fraction(s1) is not None:
        parts = [abs(v) for v in (s0, s1 * a.unit) if v != 0]
        if not parts:
            return MomentSeries([1] + [0] * K, 0, Fraction(1))
        u = parts[0] if len(parts) == 1 else _fraction_gcd(*parts)
        A, B = s0 / u, s1 * a.unit / u
        A, B = A.numerator, B.numerator              # integers by the choice of u
        pa, pb = [1], [1]
        for _ in range(K):
            pa.append(pa[-1] * A)
            pb.append(pb[-1] * B)
        Y = [pb[j] * a.nums[j] for j in range(K + 1)]
    else:
        x = a.fixed(prec)
        bound = _unit_above(abs(s0) + abs(s1) * x.unit)
        unit = _trial_unit(_affine_fixed, x, (s0, s1), prec, bound)
        return _affine_fixed(x, (s0, s1), prec, unit).tightened()
    return _binomial_sum(pa, Y, 0, u, K)


def _affine_fixed(x, shift_scale, prec, unit):
    """Fixed-point affine moments in ``unit``: powers of ``shift/unit`` and
    ``scale unit_x/unit`` with guard bits, then the binomial sum."""
    s0, s1 = shift_scale
    K = x.order
    p, q = s0 / unit, s1 * x.unit / unit
    guard = prec + POWER_GUARD_BITS
    Pp = _rdiv(p.numerator << guard, p.denominator)
    Qq = _rdiv(q.numerator << guard, q.denominator)
    pa, pb = [1 << guard], [1 << guard]
    for _ in range(K):
        pa.append(_rshift(pa[-1] * Pp, guard))
        pb.append(_rshift(pb[-1] * Qq, guard))
    pa = [_rshift(v, guard - prec) for v in pa]
    Y = [_rshift(pb[j] * x.nums[j], guard) for j in range(K + 1)]
    return _binomial_sum(pa, Y, prec, unit, K)


def _binomial_sum(pa, Y, P, unit, K):
    """``sum_j C(n, j) pa[n - j] Y[j]`` for ``n = 0..K`` (rounded by ``2**-P``)."""
    Y = np.array(Y, dtype=object)
    pa_rev = np.array(pa[::-1], dtype=object)        # pa_rev[K - i] = pa[i]
    out = []
    row = np.array([1], dtype=object)                # binomials C(n, j)
    for n in range(K + 1):
        if n:
            row = np.concatenate([row, [0]]) + np.concatenate([[0], row])
        w = row * pa_rev[K - n:]                     # C(n, j) shift**(n - j)
        out.append(_rshift(int(np.dot(w, Y[:n + 1])), P))
    if P == 0:
        out[0] = 1
    return MomentSeries(out, P, unit)


# --------------------------------------------------------------------------- #
# Verification
# --------------------------------------------------------------------------- #

def agree(lo, hi, rel_bits, abs_bits):
    """Whether two evaluations of one series agree entry by entry.

    ``hi`` is the evaluation at the higher precision.  An entry agrees when
    ``|lo - hi| <= 2**-rel_bits |hi|`` or ``|lo - hi| <= 2**-abs_bits unit**n``.
    Exact series always agree.

    Parameters
    ----------
    lo, hi : MomentSeries
    rel_bits, abs_bits : int

    Returns
    -------
    bool
    """
    if lo.exact or hi.exact:
        return True
    if lo.order != hi.order:
        raise ValueError("the two evaluations have different orders")
    if lo.unit != hi.unit:
        lo = lo.fixed(hi.prec, hi.unit)
    d = hi.prec - lo.prec
    floor = 1 << max(hi.prec - abs_bits, 0)
    for x, y in zip(lo.nums, hi.nums):
        x = x << d if d >= 0 else _rshift(x, -d)
        diff = abs(x - y)
        if diff <= floor or (diff << rel_bits) <= abs(y):
            continue
        return False
    return True
