"""The spectral-law base: every public method built once from a few hooks.

A *spectral law* is a probability law on the real line with a continuous part
on finitely many intervals and finitely many atoms -- the limiting eigenvalue
law of a random matrix.  :class:`SpectralLaw` implements ``pdf``, ``cdf``,
``sf``, ``ppf``, ``isf``, ``moment``, ``mean``, ``var``, ``median``,
``support``, ``intervals``, ``atoms``, ``stieltjes``, ``rvs`` and
``free_cumulants`` from the hooks a concrete law provides (theory section 8):

``_support_intervals()``
    the intervals of the continuous part, each with the exponent of the
    density at its two edges (:class:`Interval`);
``_atoms()``
    locations and masses of the atoms;
``_density(x)``
    the exact density at points strictly inside the support (the law's own
    solver); it feeds the piecewise-Chebyshev representation
    (:mod:`freeattn.algebra._chebyshev`) that the generic methods evaluate;
``_stieltjes_exact(z)`` (optional)
    the Stieltjes transform from the law's own solver;
``_moment_series(k, prec)`` (optional)
    the moments ``m_0 .. m_k`` as a :class:`freeattn.algebra._moment_series.MomentSeries`:
    exact rationals, or fixed point with ``prec`` bits (theory section 8.10);
    :meth:`SpectralLaw.moment` evaluates it at two precisions and keeps the
    result only when they agree (:func:`verified_series`);
``_moments_exact(k)`` (optional, legacy)
    moments as floats, ``(scale, [m_j / scale**j])``, for a law whose own
    recursion is stable in float64 (used when there is no moment series).

Laws built from others -- scalings, affine maps, the eigenvalue <->
singular-value map, free convolutions -- are laws of the same kind.

Conventions (theory eq. (8.1)): ``G(z) = int dmu(x)/(z - x)``, ``G ~ 1/z`` at
infinity, ``Im G < 0`` for ``Im z > 0``; density ``-Im G(x + i0)/pi``.
"""

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.polynomial import polynomial as npoly

from ..algebra._chebyshev import LogEnd, build_representation, edge_power  # noqa: F401  (LogEnd re-exported)
from ..algebra._rational import RationalTransform, compose, padd, pmul
from ..core._checks import as_real_array, check_int, real_scalar, rng_generator
from ..core._errors import ConvergenceError
from ..core._options import DEFAULT_OPTIONS

__all__ = [
    "Interval",
    "LawAccuracy",
    "SpectralLaw",
    "check_rng",
    "check_z",
    "AffineLaw",
    "SingularValueLaw",
    "ZeroPaddedLaw",
    "affine",
]

_LOG_MAX = math.log(np.finfo(np.float64).max)

#: Soft (square-root) edge exponent, the generic behaviour of a density at the
#: edge of its support (theory eq. (8.13)).
SOFT = Fraction(1, 2)
#: Hard edge ``x**(-1/2)`` of a square sample covariance at 0.
HARD = Fraction(-1, 2)

#: Beyond ``|z| > FAR_RADIUS * (largest |x| of the support)`` the Stieltjes
#: transform of a law with exact moments is summed from its moment series
#: ``sum_k m_k / z**(k+1)``; with ``FAR_TERMS`` terms the truncation error is
#: below ``FAR_RADIUS**-(FAR_TERMS + 1)`` = 1e-52 relative.
FAR_RADIUS = 1e4
FAR_TERMS = 12
#: Points closer than ``EDGE_CDF_RTOL`` of the interval's width to one of its
#: edges get the CDF (and the survival function) as the integral of the density
#: from that edge, Gauss-Legendre in the edge variable ``s`` with
#: ``x = edge + d s**p``, ``p = 1/(1 + eta)`` (theory eq. (8.19)): the global
#: formula there carries an absolute rounding error ``~eps`` on a value
#: ``~(d/width)**(1 + eta)``, which breaks monotonicity by an ulp.
EDGE_CDF_RTOL = 1e-6
#: Gauss-Legendre nodes of that edge integral (the integrand is constant to
#: ``O(d/width)`` in ``s``; 16 nodes make its error negligible).
EDGE_CDF_NODES = 16
#: The edge integral replaces the global value only when the two agree to this
#: absolute tolerance (a few ulps of 1, the global formula's rounding).
EDGE_CDF_AGREE = 64 * np.finfo(float).eps

#: Within ``NEAR_ATOM_RTOL`` of ``d`` from an atom ``s`` (``d`` its distance to the rest
#: of the support) ``G`` is ``m/(z - s)`` plus its regular part's Taylor series
#: (theory eq. (14.58)): a solver resolves ``z`` to an absolute rounding of its own
#: terms, so ``G ~ m/(z - s)`` kept ``eps/|z - s|`` relative (a product of two
#: Marchenko-Pastur laws at ``z = 1e-8 (1 + i)``: 1.4e-8 off).  ``NEAR_ATOM_TERMS``
#: terms, from ``NEAR_ATOM_NODES`` points on the circle of radius
#: ``NEAR_ATOM_RADIUS * d`` (aliasing ``4**-32``), checked at half that radius to
#: ``NEAR_ATOM_CHECK_RTOL`` or the solver's loss there (where the check misses, the
#: solver serves as before).
NEAR_ATOM_RTOL = 1e-3
NEAR_ATOM_TERMS = 24
NEAR_ATOM_NODES = 32
NEAR_ATOM_RADIUS = 0.25
NEAR_ATOM_CHECK_RTOL = 1e-12
#: ... or this many times the solver's own loss there, ``eps * scale / |z - s|``.
NEAR_ATOM_CHECK_ULPS = 64

#: Beyond ``VERY_FAR_RADIUS`` times the scale ``G(z) = 1/z`` to double precision
#: (the next term ``m_1/z**2`` is below ``2**-60`` relative), for every law.
VERY_FAR_RADIUS = 2.0 ** 60

#: Agreement of two successive node doublings at which a quadrature moment is
#: accepted (sums over thousands of Gauss-Legendre nodes carry ~1e-13 of
#: rounding; measured against exact moments up to order 600: <= 1.5e-13), and
#: the most doublings tried.  The agreement is relative to ``|E[X**k]|`` plus
#: ``MOMENT_QUADRATURE_ATOL`` times ``E[|X|**k]``: a moment that cancels (an
#: odd moment of a symmetric law, the mean of a centred one) is accepted at
#: the rounding level of the sum of its absolute terms (theory eq. (8.25)).
MOMENT_QUADRATURE_RTOL = 1e-11
MOMENT_QUADRATURE_ATOL = 1e-11
MOMENT_QUADRATURE_DOUBLINGS = 6

#: Working precision of the fixed-point moment recursions (theory eq. (8.24)):
#: ``EXACT_START_BITS + EXACT_BITS_PER_ORDER * k`` bits for order ``k``.  The
#: recursions lose about ``log2(16) = 4`` bits per order at worst (free
#: cumulants of a law on ``[-1, 1]`` are below ``16**n``; measured losses are
#: 0.4-1.3 bits per order, tests/test_moments_exact.py), so the start is
#: usually enough and otherwise doubled.
EXACT_START_BITS = 96
EXACT_BITS_PER_ORDER = 1
#: The check run uses this many more bits; two runs that agree to
#: ``2**-EXACT_REL_BITS`` (relative) or ``2**-EXACT_ABS_BITS`` (absolute, in
#: units of ``2**(e k)``, ``2**e`` a bound of the support) give the result of
#: the more precise one, whose error is then below that (the error of a
#: fixed-point recursion scales like ``2**-prec``).
EXACT_CHECK_BITS = 32
EXACT_REL_BITS = 62
EXACT_ABS_BITS = 120
#: Most doublings of the precision before :class:`ConvergenceError`.
EXACT_MAX_DOUBLINGS = 3
#: Fixed-point series kept per law (one per precision; exact series are kept always).
SERIES_CACHE_SIZE = 4
#: A law nested in another keeps its last answers ``(G, G')`` at this many point
#: sets of at most ``PAIR_MEMO_MAX_POINTS`` points (``SpectralLaw._memoized_pair``):
#: the nested sum (attention ⊞ attention) ⊞ three atoms asked its attention laws the
#: same points again in 34 % of 10478 calls (benchmarks/RESULTS.md section 35).
PAIR_MEMO_SIZE = 8
PAIR_MEMO_MAX_POINTS = 64

#: Guard digits added to the working precision of the mpmath path.
MP_GUARD_DIGITS = 10

#: Gauss-Legendre nodes beyond half a panel's degree used by :meth:`SpectralLaw.expect`:
#: exact for integrands that are polynomials of degree up to ``2 * QUADRATURE_EXTRA``
#: in the panel variable times the density's series.
QUADRATURE_EXTRA = 32


#: Cost of one solve of an algebraic tower's roots (eqs. (8.10)-(8.11)) on a small
#: batch, in evaluations of a closed form (theory eq. (14.51)): about 1 ms for an
#: attention law against 0.05 ms for the Marchenko-Pastur law.
TOWER_EVALUATION_COST = 20.0
#: Evaluations of its constituents per evaluation of a law solved by Newton on a
#: fixed-point equation (a nested subordination, a product's system; theory eq.
#: (14.51)): 4.2 ms for (two atoms ⊞ attention) against 1.0 ms for the attention law.
NESTED_SOLVE_FACTOR = 4.0
#: Cost of a transform solved as a boundary-value problem at each point (the
#: causal law, theory section 10.5): seconds for hundreds of points.
POINTWISE_EVALUATION_COST = 1000.0


@dataclass(frozen=True)
class Interval:
    """An interval of the continuous part of a law's support.

    Attributes
    ----------
    lo, hi : float
        Ends, ``lo < hi``.
    lo_exponent, hi_exponent : Fraction
        ``eta`` in ``density ~ |x - edge|**eta`` at each end: ``1/2`` for a
        soft edge, ``-1/2`` for the hard edge of a square sample covariance,
        ``-2/3`` for a product of two square ones, ``0`` for a finite non-zero
        end value (theory eq. (8.13)); at a lower end, a :class:`LogEnd` for a
        density ``~ 1/((x - lo) log(scale/(x - lo))**2)`` (theory eq. (8.18)).
    """

    lo: float
    hi: float
    lo_exponent: Fraction = SOFT
    hi_exponent: Fraction = SOFT

    def __iter__(self):
        yield self.lo
        yield self.hi


@dataclass(frozen=True)
class LawAccuracy:
    """Achieved accuracy of a law's piecewise-Chebyshev representation.

    Attributes
    ----------
    mass_error : float
        ``|atoms + integral of the density - 1|``.
    representation_error : float
        Sum over panels of the estimated error of each panel's mass (from the
        Chebyshev coefficient tails).
    panels : int
        Number of panels.
    max_degree : int
        Largest number of Chebyshev coefficients of a panel.
    """

    mass_error: float
    representation_error: float
    panels: int
    max_degree: int


def check_z(z):
    """``z`` as a 1-d complex array and its shape; TypeError/ValueError named ``z``."""
    arr = np.asarray(z)
    if arr.dtype.kind not in "iufc" or arr.dtype.kind == "b":
        raise TypeError(f"z must be a complex number or array, got {z!r}")
    arr = arr.astype(complex)
    if np.isnan(arr).any():
        raise ValueError(f"z must not be NaN, got {z!r}")
    if (arr.imag < 0).any():
        raise ValueError(f"z must lie in the closed upper half-plane (Im z >= 0), got {z!r}")
    return arr.ravel(), arr.shape


def check_rng(rng):
    """A ``numpy.random.Generator`` from ``rng`` (:func:`freeattn.core._checks.rng_generator`)."""
    return rng_generator(rng)


def _out(values, shape):
    """Reshape a flat result; a 0-d input gives a Python scalar."""
    if shape == ():
        v = values[0]
        return complex(v) if np.iscomplexobj(values) else float(v)
    return values.reshape(shape)


def outside_bands(x, bands):
    """Where real ``x`` lies outside every closed band ``(lo, hi)`` of ``bands``."""
    out = np.ones(np.shape(x), dtype=bool)
    for lo, hi in bands:
        out &= ~((x >= lo) & (x <= hi))
    return out


def _far_series(unit, m, z, derivative=False):
    """``(G,)`` or ``(G, G')`` at ``z`` from scaled moments ``m_k / unit**k`` (the far
    field ``G = sum_k m_k / z**(k+1)`` of theory section 8.2 and its derivative,
    eq. (14.47)), by Horner's rule in ``unit / z``."""
    w = unit / z
    acc = np.zeros(w.shape, dtype=complex)
    dacc = np.zeros(w.shape, dtype=complex) if derivative else None
    for k in range(m.size - 1, -1, -1):
        acc = acc * w + m[k]
        if derivative:
            dacc = dacc * w + (k + 1) * m[k]
    g = acc * w / unit
    return (g, -dacc * (w / unit) ** 2) if derivative else (g,)


def _merged_pair(zs, part, rest):
    """``(G, G')`` at ``zs``: ``part = (mask, G, G')`` at the points of ``mask``, the
    pair ``rest(z)`` at the others."""
    mask, gp, dp = part
    g = np.empty(zs.shape, dtype=complex)
    d = np.empty(zs.shape, dtype=complex)
    g[mask], d[mask] = gp, dp
    if not mask.all():
        g[~mask], d[~mask] = rest(zs[~mask])
    return g, d


class SpectralLaw:
    """A probability law on the real line: continuous part on intervals, plus atoms.

    Subclasses implement the hooks described in the module docstring; every
    public method below works for every law.  Laws are immutable; the
    representation is built on first use and cached.

    Parameters
    ----------
    options : SolverOptions, optional
        Tolerances of the engine (:data:`freeattn.DEFAULT_OPTIONS`).

    Notes
    -----
    Theory section 8: the density, CDF and quantiles are evaluated on the
    piecewise-Chebyshev representation of eqs. (8.14)-(8.15) built from the
    exact density; laws with closed forms (Marchenko-Pastur, the semicircle)
    use them for ``pdf`` and ``cdf``.
    """

    #: Whether the law's Cauchy transform is solved point by point (a boundary-value
    #: problem per point, as the causal law's), so that a method that samples it on
    #: hundreds of real points costs seconds (theory section 14.29).
    _pointwise_transform = False
    #: Whether the law's Cauchy transform is itself a composition's fixed point
    #: (an analytic subordination or a product chain): its zeros on the real line
    #: are what a sum with it solves, not data (theory eq. (14.43)).
    _nested_solve = False
    #: ``(a, b)`` where the law is ``a ⊞ b`` solved by analytic subordination (the
    #: constituents of eq. (14.43)), else None.
    _additive_constituents = None
    #: ``(partner, constituent)`` where the law is ``partner ⊞ constituent`` solved by
    #: Newton on an R-level over a nested law (eq. (8.8)), else None.
    _additive_level_terms = None
    #: Relative cost of one evaluation of the Cauchy transform on a small batch of
    #: points (theory eq. (14.51)): 1 for a closed form or a law of atoms; the laws
    #: solved point by point override it.  It orders the terms of a sum of sums.
    _evaluation_cost = 1.0

    def __init__(self, options=None):
        self.options = DEFAULT_OPTIONS if options is None else options
        self._rep = None
        self._atom_cache = None
        self._interval_cache = None
        self._support_cache = None
        self._pieces_cache = None

    # -- hooks --------------------------------------------------------------------
    def _support_intervals(self):
        """Tuple of :class:`Interval` (continuous part), increasing."""
        raise NotImplementedError

    def _atoms(self):
        """``(locations, masses)`` as float arrays (possibly empty)."""
        return np.empty(0), np.empty(0)

    def _density(self, x):
        """Exact density at points strictly inside the support (1-d float array)."""
        raise NotImplementedError(f"{type(self).__name__} has no density solver")

    def _log_end_density(self, t):
        """``(x - e) f(x)`` at ``x = e + exp(t)`` next to a :class:`LogEnd` lower end ``e``
        (1-d float array ``t``, far below the float range allowed); laws with a
        logarithmic end implement it (theory eq. (8.18))."""
        raise NotImplementedError(f"{type(self).__name__} has no logarithmic end")

    def _stieltjes_exact(self, z):
        """Exact ``G(z)`` for a 1-d complex array, or ``None`` when not available."""
        return None

    def _moments_exact(self, kmax):
        """``(scale, array of m_j / scale**j, j = 0..kmax)`` or ``None`` (legacy float hook)."""
        return None

    def _moment_series(self, kmax, prec):
        """The moments ``m_0..m_kmax`` as a ``MomentSeries`` (exact, or fixed point with
        ``prec`` bits), or ``None`` when the law has no exact moments (theory eq. (8.21))."""
        return None

    def _pdf_closed(self, x):
        """Closed-form density on a 1-d float array (all real x), or ``None``."""
        return None

    def _cdf_closed(self, x):
        """Closed-form CDF of the continuous part on a 1-d float array, or ``None``."""
        return None

    def _curve(self):
        """The rational Stieltjes graph (:class:`freeattn.algebra._curve.Curve`) or ``None``."""
        return None

    def _r_transform(self):
        """The R-transform as a :class:`freeattn.algebra._rational.RationalTransform`, or ``None``."""
        return None

    def _s_transform(self):
        """The S-transform as a :class:`freeattn.algebra._rational.RationalTransform`, or ``None``."""
        return None

    def _edge_coefficient(self):
        """``lim (x - lo)**(-eta) f(x)`` at the lower end of the first interval.

        From the first panel's Chebyshev series: with ``x - lo = w s**p`` and
        ``g = f dx/dsigma`` finite at the edge, the limit is
        ``2 g(-1) / (p w**(1/p))`` (theory eq. (8.14)).
        """
        return self._representation().panels[0].edge_limit(-1.0)

    # -- support --------------------------------------------------------------------
    def interval_details(self):
        """The support intervals of the continuous part with their edge exponents.

        Returns
        -------
        tuple of Interval
        """
        if self._interval_cache is None:
            self._interval_cache = tuple(self._support_intervals())
        return self._interval_cache

    def intervals(self):
        """Every interval of the support of the continuous part.

        Returns
        -------
        tuple of (float, float)
            ``(lo, hi)`` pairs, increasing.
        """
        return tuple((float(iv.lo), float(iv.hi)) for iv in self.interval_details())

    def atoms(self):
        """Locations and masses of the atoms.

        Returns
        -------
        locations : ndarray
            The atoms' locations, increasing.
        masses : ndarray
            Their masses, in the same order; they sum to at most 1.
        """
        if self._atom_cache is None:
            loc, mass = self._atoms()
            loc = np.asarray(loc, dtype=float)
            mass = np.asarray(mass, dtype=float)
            order = np.argsort(loc)
            self._atom_cache = (loc[order], mass[order])
        loc, mass = self._atom_cache
        return loc.copy(), mass.copy()

    @property
    def atom(self):
        """Mass of the atom at 0 (0.0 when there is none)."""
        loc, mass = self.atoms()
        return float(mass[loc == 0.0].sum())

    def support(self):
        """``(lower, upper)``: smallest and largest point of the support (atoms included)."""
        if self._support_cache is None:
            ends = [v for iv in self.interval_details() for v in (iv.lo, iv.hi)]
            loc, mass = self.atoms()
            ends += list(loc[mass > 0])
            self._support_cache = (float(min(ends)), float(max(ends)))
        return self._support_cache

    def _continuous_mass(self):
        return 1.0 - float(self.atoms()[1].sum())

    # -- representation -------------------------------------------------------------
    def _representation(self):
        if self._rep is None:
            ivs = self.interval_details()
            self._rep = build_representation(self._density, ivs, self.options,
                                             expected_mass=self._continuous_mass() if ivs else None,
                                             log_density=self._log_end_density,
                                             zero_scale=self._absolute_scale(),
                                             start_nodes=self._first_panel_nodes())
        return self._rep

    def _first_panel_nodes(self):
        """Nodes of the representation's first fit of each panel (hook; None: the
        option ``cheb_start_nodes``).  A law whose density solver has a fixed cost
        per call well above its cost per point asks for more, so that the build
        takes fewer rounds of calls (theory eq. (8.14))."""
        return None

    def _absolute_scale(self):
        """The scale to whose rounding the density solver resolves ``x``, for a law
        whose density is known to an absolute accuracy only (hook; None: relative
        accuracy next to 0, as the closed forms and the scale-free products)."""
        return None

    def total_mass(self):
        """Atoms plus the integral of the density: 1 up to the representation error."""
        if not self.interval_details():
            return float(self.atoms()[1].sum())
        return float(self.atoms()[1].sum()) + self._representation().total

    def accuracy(self):
        """The achieved accuracy of the law's representation.

        Returns
        -------
        LawAccuracy
        """
        if not self.interval_details():
            return LawAccuracy(abs(float(self.atoms()[1].sum()) - 1.0), 0.0, 0, 0)
        rep = self._representation()
        return LawAccuracy(abs(self.total_mass() - 1.0), rep.error, len(rep.panels), rep.degree)

    # -- density ---------------------------------------------------------------------
    def pdf(self, x):
        """Density of the continuous part (atoms are not included).

        Parameters
        ----------
        x : array_like
            Real points.

        Returns
        -------
        float or ndarray
            Same shape as ``x``; 0 outside the support, ``inf`` at an edge where
            the density diverges.

        Raises
        ------
        TypeError, ValueError
            If ``x`` is not real or contains NaN.
        ConvergenceError
            If building the representation fails its accuracy checks.
        """
        if type(x) is float and x == x:
            return self._pdf_scalar(x)
        arr = as_real_array(x, "x")
        flat = self._clip_far(arr.ravel())
        closed = self._pdf_closed(flat)
        if closed is not None:
            out = closed
        elif not self.interval_details():
            out = np.zeros(flat.shape)
        else:
            out = self._representation().pdf(flat)
        return _out(out, arr.shape)

    def _clip_far(self, flat):
        """Points far outside the support moved to a point outside it nearer by.

        ``pdf``, ``cdf`` and ``sf`` are constant outside the support, so the
        values are unchanged; the closed forms and maps then never see numbers
        whose squares or quotients overflow (e.g. ``x = 1e300``).
        """
        lo, hi = self.support()
        pad = max(hi - lo, abs(lo), abs(hi), np.finfo(float).tiny)
        return np.clip(flat, lo - pad, hi + pad)

    def _pdf_scalar(self, x):
        """Density at one (non-NaN) Python float: the scalar path of :meth:`pdf`."""
        if not self.interval_details():
            return 0.0
        lo, hi = self.support()
        if x < lo or x > hi:
            return 0.0
        if type(self)._pdf_closed is SpectralLaw._pdf_closed:
            return self._representation().pdf_scalar(x)
        return float(self._pdf_closed(np.array([x]))[0])

    def _cdf_scalar(self, x):
        """CDF at one (non-NaN) Python float: the scalar path of :meth:`cdf`."""
        lo, hi = self.support()
        if x >= hi:
            return 1.0
        if x < lo:
            return 0.0
        for iv in self.interval_details():
            reach = EDGE_CDF_RTOL * (iv.hi - iv.lo)
            if 0 < x - iv.lo <= reach or 0 < iv.hi - x <= reach:
                return float(self.cdf(np.array([x]))[0])     # eq. (8.19)
        loc, mass = self.atoms()
        total = float(mass[loc <= x].sum()) if loc.size else 0.0
        if self.interval_details():
            if type(self)._cdf_closed is SpectralLaw._cdf_closed:
                rep = self._representation()
                total += rep.cdf_scalar(x) * (self._continuous_mass() / rep.total)
            else:
                total += float(self._continuous_cdf(np.array([x]))[0])
        return min(max(total, 0.0), 1.0)

    # -- distribution function --------------------------------------------------------
    def _atom_mass_below(self, flat, inclusive=True):
        loc, mass = self.atoms()
        if loc.size == 0:
            return np.zeros(flat.shape)
        cum = np.concatenate([[0.0], np.cumsum(mass)])
        k = np.searchsorted(loc, flat, side="right" if inclusive else "left")
        return cum[k]

    def _edge_integrals(self, flat):
        """Near-edge points and the density's integral between each and its edge.

        Returns ``(index, side, interval, integral)`` arrays: ``side`` is ``-1``
        for a lower edge (the integral runs from ``lo`` to ``x``) and ``+1`` for
        an upper edge (from ``x`` to ``hi``); theory eq. (8.19).
        """
        empty = (np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0, dtype=int),
                 np.zeros(0))
        ivs = self.interval_details()
        if not ivs or flat.size == 0:
            return empty
        idx, side, which, dist, power = [], [], [], [], []
        for k, iv in enumerate(ivs):
            reach = EDGE_CDF_RTOL * (iv.hi - iv.lo)
            for sgn, edge, eta in ((-1, iv.lo, iv.lo_exponent), (1, iv.hi, iv.hi_exponent)):
                if isinstance(eta, LogEnd) or not float(eta) > -1:
                    continue            # a log end's CDF is exact through its own map (8.18)
                d = (flat - edge) if sgn < 0 else (edge - flat)
                sel = np.nonzero((d > 0) & (d <= reach))[0]
                if sel.size:
                    idx.append(sel)
                    side.append(np.full(sel.size, sgn))
                    which.append(np.full(sel.size, k))
                    dist.append(d[sel])
                    power.append(np.full(sel.size, 1.0 / (1.0 + float(eta))))
        if not idx:
            return empty
        idx, side, which = np.concatenate(idx), np.concatenate(side), np.concatenate(which)
        dist, power = np.concatenate(dist), np.concatenate(power)
        t, w = np.polynomial.legendre.leggauss(EDGE_CDF_NODES)
        sn = (1.0 + t) / 2.0                                        # nodes on (0, 1)
        spow = sn[None, :] ** power[:, None]
        edges = np.array([ivs[k].lo if sg < 0 else ivs[k].hi for k, sg in zip(which, side)])
        xs = edges[:, None] - side[:, None] * dist[:, None] * spow
        dens = np.asarray(self.pdf(xs.ravel()), dtype=float).reshape(xs.shape)
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            jac = dist[:, None] * power[:, None] * spow / sn[None, :]    # dx/ds
            # Subnormal distances underflow (x = e, inf * 0): NaN, and the global
            # value stays (the agreement test of _edge_corrected fails).
            integral = (dens * jac) @ (w / 2.0)
        return idx, side, which, integral

    def _edge_corrected(self, flat, out, raw, lower):
        """``out`` (the CDF if ``lower`` else the survival function, from the global
        formula ``raw``) with the points next to an edge from eq. (8.19): the
        value at the edge plus or minus the density's integral from it."""
        idx, side, which, integral = self._edge_integrals(flat)
        if idx.size == 0:
            return out
        ivs = self.interval_details()
        ends = {}
        for k in np.unique(which):
            iv = ivs[k]
            at = raw(np.array([iv.lo, np.nextafter(iv.hi, -np.inf)]))
            ends[k] = (float(at[0]), float(at[1]))
        out = np.array(out, dtype=float, copy=True)
        sign = 1.0 if lower else -1.0
        for j, (i, sg, k) in enumerate(zip(idx, side, which)):
            at_lo, at_hi = ends[k]
            val = at_lo + sign * integral[j] if sg < 0 else at_hi - sign * integral[j]
            # The edge integral assumes the density's edge power law holds over
            # [e, e + d]; where the law crosses over to another power below that
            # scale (e.g. x**(-2/3) -> x**(-1/2) at beta -> 0), it disagrees with the
            # global formula by more than rounding, and the global value stays.
            if abs(val - out[i]) <= EDGE_CDF_AGREE:
                out[i] = val
        return out

    def _continuous_cdf(self, flat):
        closed = self._cdf_closed(flat)
        if closed is not None:
            return closed
        if not self.interval_details():
            return np.zeros(flat.shape)
        rep = self._representation()
        return rep.cdf(flat) * (self._continuous_mass() / rep.total)

    def cdf(self, x):
        """Cumulative distribution function ``P(X <= x)`` (atoms included).

        Parameters
        ----------
        x : array_like

        Returns
        -------
        float or ndarray
            Same shape as ``x``, non-decreasing, in ``[0, 1]``.

        Notes
        -----
        On each panel the continuous part is the exact integral of the
        Chebyshev series of theory eq. (8.15); panel masses accumulate.  The
        continuous part is scaled by ``(1 - atoms)/total`` so that the CDF
        reaches 1 exactly; ``accuracy().mass_error`` reports the difference.
        """
        if type(x) is float and x == x:
            return self._cdf_scalar(x)
        arr = as_real_array(x, "x")
        flat = self._clip_far(arr.ravel())
        out = self._edge_corrected(flat, self._cdf_raw(flat), self._cdf_raw, lower=True)
        out = np.where(flat >= self.support()[1], 1.0, np.clip(out, 0.0, 1.0))
        return _out(out, arr.shape)

    def _cdf_raw(self, flat):
        """The CDF from the global formula (no edge integrals)."""
        out = self._continuous_cdf(flat) + self._atom_mass_below(flat)
        return np.where(flat >= self.support()[1], 1.0, np.clip(out, 0.0, 1.0))

    def sf(self, x):
        """Survival function ``P(X > x) = 1 - cdf(x)``.

        Computed as the mass above ``x`` (not ``1 - cdf``), so small upper
        tails keep their relative accuracy.

        Parameters
        ----------
        x : array_like

        Returns
        -------
        float or ndarray
            Same shape as ``x``, non-increasing, in ``[0, 1]``.
        """
        arr = as_real_array(x, "x")
        flat = self._clip_far(arr.ravel())
        out = self._edge_corrected(flat, self._sf_raw(flat), self._sf_raw, lower=False)
        return _out(np.clip(out, 0.0, 1.0), arr.shape)

    def _sf_raw(self, flat):
        """The survival function from the global formula (no edge integrals)."""
        loc, mass = self.atoms()
        atoms_above = float(mass.sum()) - self._atom_mass_below(flat)
        if self.interval_details():
            closed = self._cdf_closed(flat)
            cmass = self._continuous_mass()
            if closed is not None:
                cont = cmass - closed
            else:
                rep = self._representation()
                cont = (rep.total - rep.cdf(flat)) * (cmass / rep.total)
        else:
            cont = np.zeros(flat.shape)
        out = np.clip(cont + atoms_above, 0.0, 1.0)
        return np.where(flat >= self.support()[1], 0.0, out)

    def _check_q(self, q):
        arr = as_real_array(q, "q")
        if ((arr < 0) | (arr > 1)).any():
            raise ValueError(f"q must be in [0, 1], got {q!r}")
        return arr

    def ppf(self, q):
        """Quantile function: the smallest ``x`` with ``cdf(x) >= q``.

        Parameters
        ----------
        q : array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float or ndarray

        Raises
        ------
        ValueError
            If ``q`` is outside ``[0, 1]`` or NaN.
        ConvergenceError
            If the inversion of a panel's CDF does not converge.

        Notes
        -----
        Each panel carries an inverse interpolant of its CDF in a variable
        that removes the edge power (theory eq. (8.15)); one Newton step on the
        exact series polishes it.
        """
        arr = self._check_q(q)
        return _out(self._quantile(arr.ravel(), upper=False), arr.shape)

    def isf(self, q):
        """Inverse survival function: ``x`` with ``sf(x) = q``.

        Computed from the upper tail, so ``isf(1e-12)`` keeps its accuracy.

        Parameters
        ----------
        q : array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float or ndarray

        Raises
        ------
        ValueError
            If ``q`` is outside ``[0, 1]`` or NaN.
        """
        arr = self._check_q(q)
        return _out(self._quantile(arr.ravel(), upper=True), arr.shape)

    def _pieces(self):
        """Atoms and panels in order of position, with the mass below each piece (cached)."""
        if self._pieces_cache is None:
            self._pieces_cache = self._build_pieces()
        return self._pieces_cache

    def _build_pieces(self):
        loc, mass = self.atoms()
        pieces = []                               # (position, order, kind, index, mass)
        for i, (a, m) in enumerate(zip(loc, mass)):
            if m > 0:
                pieces.append((a, 0, "atom", i, m))
        if self.interval_details():
            rep = self._representation()
            scale = self._continuous_mass() / rep.total
            for j, p in enumerate(rep.panels):
                pieces.append((p.lo, 1, "panel", j, p.mass * scale))
        pieces.sort(key=lambda t: (t[0], t[1]))
        masses = np.array([t[4] for t in pieces])
        return pieces, np.concatenate([[0.0], np.cumsum(masses)])

    def _quantile(self, q, upper):
        pieces, cum = self._pieces()
        total = cum[-1]
        if upper:
            # Mass above the quantile is q: locate from the top.
            target = total - q * total
            tail = q * total
        else:
            target = q * total
        k = np.clip(np.searchsorted(cum, target, side="left") - 1, 0, len(pieces) - 1)
        out = np.empty(q.shape)
        rep = self._representation() if self.interval_details() else None
        scale = self._continuous_mass() / rep.total if rep is not None else 1.0
        for kk in np.unique(k):
            sel = k == kk
            pos, _, kind, index, m = pieces[kk]
            if kind == "atom":
                out[sel] = pos
                continue
            panel = rep.panels[index]
            if upper:
                above_piece = total - cum[kk + 1]
                u = np.clip((tail[sel] - above_piece) / scale, 0.0, panel.mass)
                t = panel.mass - u
            else:
                t = np.clip((target[sel] - cum[kk]) / scale, 0.0, panel.mass)
            out[sel] = panel.quantile(t, self.options)
        lo, hi = self.support()
        out = np.clip(out, lo, hi)
        if upper:
            out[q == 1.0] = lo
            out[q == 0.0] = hi
        else:
            out[q == 0.0] = lo
            out[q == 1.0] = hi
        return out

    def median(self):
        """``ppf(0.5)``."""
        return self.ppf(0.5)

    # -- moments --------------------------------------------------------------------
    def _scale(self):
        lo, hi = self.support()
        return max(abs(lo), abs(hi), np.finfo(float).tiny)

    def _series(self, kmax, prec):
        """``_moment_series`` with a per-law cache (exact series, and the last few fixed ones).

        The recursions are online (theory eq. (8.23)), so a longer series at
        the same precision serves a shorter request.
        """
        cache = self.__dict__.setdefault("_series_cache", {})
        if cache.get("none"):
            return None
        for key in (0, prec):
            hit = cache.get(key)
            if hit is not None and hit.order >= kmax:
                return hit.truncated(kmax)
        series = self._moment_series(kmax, prec)
        if series is None:
            cache["none"] = True         # no moment series (a property of the law's make-up)
            return None
        return self._store_series(series, prec)

    def _store_series(self, series, prec):
        """Keep ``series`` (computed at ``prec``, or exact) in the law's cache; returns it."""
        cache = self.__dict__.setdefault("_series_cache", {})
        key = 0 if series.exact else prec
        if key and key not in cache:
            fixed = [k for k in cache if isinstance(k, int) and k]
            if len(fixed) >= SERIES_CACHE_SIZE:
                del cache[fixed[0]]
        cache[key] = series
        return series

    def _verified_series(self, kmax, kind="moments"):
        """The law's moments (or free cumulants, ``kind="cumulants"``) to order ``kmax``,
        exact or verified at two precisions (:func:`verified_series`); ``None`` without
        a moment series."""
        from ..algebra._moment_series import free_cumulant_series

        cache = self.__dict__.setdefault("_verified_cache", {})
        hit = cache.get(kind)
        if hit is not None and hit.order >= kmax:
            return hit.truncated(kmax)
        if kind == "moments":
            def compute(prec):
                return self._series(kmax, prec)
        else:
            def compute(prec):
                series = self._series(kmax, prec)
                return None if series is None else free_cumulant_series(series)
        if cache.get("none"):
            return None
        series = verified_series(compute, kmax, self._describe())
        if series is None:
            cache["none"] = True         # no moment series, whatever the order
        else:
            cache[kind] = series
        return series

    def _exact_scaled_moments(self, kmax):
        """``(scale, m_j / scale**j)`` from exact moments only (the moment series or the
        legacy hook), ``None`` when the law has neither."""
        if kmax > self.options.max_exact_moment_order:
            return None
        floats = self.__dict__.setdefault("_scaled_float_cache", {})
        if kmax in floats:
            return floats[kmax]
        series = self._verified_series(kmax)
        if series is not None:
            scale, m = series.scaled_floats()
            m.setflags(write=False)          # shared by every later call
            floats[kmax] = (scale, m)
            return scale, m
        cache = self.__dict__.setdefault("_legacy_moment_cache", {})
        hit = cache.get("moments")
        if hit is not None and hit[1].size > kmax:
            return hit[0], hit[1][:kmax + 1]
        exact = self._moments_exact(kmax)
        if exact is not None:
            cache["moments"] = (exact[0], np.asarray(exact[1], dtype=float))
        return exact

    def _scaled_moments(self, kmax):
        """``(scale, m_j / scale**j for j = 0..kmax)``: exact when available."""
        exact = self._exact_scaled_moments(kmax)
        if exact is not None:
            return exact
        return self._scale(), self._quadrature_moments(kmax)

    def _quadrature_moments(self, kmax):
        """Normalized moments ``m_j / scale**j``, ``j <= kmax``, by quadrature (atoms added)."""
        return np.array([self._quadrature_moment(k) for k in range(kmax + 1)])

    def _quadrature_moment(self, k, scaled=True):
        """``E[(X/scale)**k]`` by Gauss-Legendre on the panels plus the atoms.

        ``x(sigma)**k`` is a polynomial of degree ``p k`` in the panel variable,
        but it is concentrated where ``|x|`` is largest, within ``~ 1/sqrt(k)``
        of it; the node count starts at ``~ p (min(k, 64) + 8 sqrt(k))`` and
        doubles until two successive sums agree to ``MOMENT_QUADRATURE_RTOL``
        of the moment plus ``MOMENT_QUADRATURE_ATOL`` of the absolute moment
        ``E[|X/scale|**k]`` (theory eq. (8.25)).  The sum is taken relative to
        its largest term (no underflow for large ``k``); with ``scaled=False``
        it returns ``(scale', v)`` with ``E[X**k] = v scale'**k``.  ``k = 0``
        is the total mass, 1.
        """
        scale = self._scale()
        if k == 0:
            return (scale, 1.0) if not scaled else 1.0
        loc, mass = self.atoms()
        parts = [(loc, mass)] if loc.size else []
        if self.interval_details():
            rep = self._representation()
            fac = self._continuous_mass() / rep.total
            power = max(edge_power(e)[0] for iv in self.interval_details()
                        for e in (iv.lo_exponent, iv.hi_exponent))
            extra = int(power * min(k, 64) + 8 * power * math.sqrt(k))
            prev = None
            for _ in range(MOMENT_QUADRATURE_DOUBLINGS):
                x, w = rep.quadrature(extra)
                eff, val, absval = _power_sum(parts + [(x, w * fac)], k, scale)
                if prev is not None:
                    ratio = (eff / prev[0]) ** k
                    if abs(val * ratio - prev[1]) <= MOMENT_QUADRATURE_RTOL * abs(prev[1]) + \
                            MOMENT_QUADRATURE_ATOL * max(absval * ratio, prev[2]):
                        break
                prev, extra = (eff, val, absval), 2 * extra + 16
            else:
                raise ConvergenceError(
                    f"moment k={k}: quadrature did not settle with {extra} extra nodes per panel",
                    point=k)
        else:
            eff, val, _ = _power_sum(parts, k, scale)
        if not scaled:
            return eff, val
        return val * (eff / scale) ** k

    def expect(self, func):
        """``E[func(X)]`` by Gauss-Legendre quadrature on the panels plus the atoms.

        Parameters
        ----------
        func : callable
            Vectorized real function of ``x``; it should be smooth on each
            support interval (the quadrature is exact for polynomials of
            moderate degree in the panel variable, theory eq. (8.15)).

        Returns
        -------
        float

        Examples
        --------
        >>> import freeattn
        >>> mp = freeattn.marchenko_pastur(1.0, 0.5)
        >>> round(mp.expect(lambda x: x ** 2), 12)       # 1 + c
        1.5
        """
        loc, mass = self.atoms()
        total = float(np.sum(np.asarray(func(loc), dtype=float) * mass)) if loc.size else 0.0
        if self.interval_details():
            rep = self._representation()
            x, w = rep.quadrature(QUADRATURE_EXTRA)
            total += float(np.sum(np.asarray(func(x), dtype=float) * w)) * (
                self._continuous_mass() / rep.total)
        return total

    def _moment_exact_single(self, k):
        """``(scale, E[(X/scale)**k])`` for one high order, or ``None`` (hook)."""
        return None

    def _moment_fraction(self, k):
        """``E[X**k]`` as an exact Fraction from a closed form, or ``None`` (hook)."""
        return None

    def moment(self, k):
        """Moment ``E[X**k]``.

        Where the law has a moment series (every elementary law, and the
        affine maps, zero paddings, ``⊞`` and ``⊠`` built from such laws) and
        ``k <= options.max_exact_moment_order``, the moment is exact: rational
        arithmetic when the parameters are rationals with small denominators,
        otherwise fixed point at a precision growing with ``k``, evaluated twice
        and kept when the two agree to ``2**-62`` (theory eqs. (8.21)-(8.24));
        the float returned is then the moment correctly rounded (or within an
        ulp).  The elementary laws have closed forms at every order.  Other
        laws and orders use Gauss-Legendre quadrature on the representation:
        accurate to about ``1e-11`` of the moment plus ``1e-11`` of
        ``E[|X|**k]`` (theory eq. (8.25)), or ``ConvergenceError``.

        Parameters
        ----------
        k : int
            Order, ``k >= 0``.

        Returns
        -------
        float

        Raises
        ------
        OverflowError
            If ``|E[X**k]|`` exceeds the float64 range (the message gives its
            base-10 logarithm).
        ConvergenceError
            If the quadrature does not settle, or the fixed-point evaluations
            do not agree up to the largest precision tried.

        Examples
        --------
        >>> import math, freeattn
        >>> sc = freeattn.semicircle(1.0)
        >>> law = freeattn.free_additive(sc, sc)          # semicircle of variance 2
        >>> law.moment(40) == math.comb(40, 20) // 21 * 2.0 ** 20   # Catalan(20) 2**20
        True
        """
        k = check_int(k, "k", minimum=0)
        if k == 0:
            return 1.0
        if k <= self.options.max_exact_moment_order:
            series = self._verified_series(k)
            if series is not None:
                return series.to_float(k)
            exact = self._exact_scaled_moments(k)
            if exact is not None:
                scale, m = exact
                return _rescale(float(m[k]), scale, k)
        exact = self._moment_fraction(k)
        if exact is not None:
            return _fraction_to_float(exact, k)
        single = self._moment_exact_single(k)
        if single is None:
            scale, v = self._quadrature_moment(k, scaled=False)
        else:
            scale, v = single
        return _rescale(v, scale, k)

    def moments(self, kmax):
        """Moments ``m_0, ..., m_kmax`` as an array (same sources as :meth:`moment`).

        Parameters
        ----------
        kmax : int
            Highest order, ``kmax >= 0``.

        Returns
        -------
        ndarray, shape (kmax + 1,)
        """
        kmax = check_int(kmax, "kmax", minimum=0)
        low = min(kmax, self.options.max_exact_moment_order)
        series = self._verified_series(low)
        if series is not None:
            head = [series.to_float(k) for k in range(low + 1)]
        else:
            scale, m = self._scaled_moments(low)
            head = [_rescale(float(v), scale, k) for k, v in enumerate(m)]
        return np.array(head + [self.moment(k) for k in range(low + 1, kmax + 1)])

    def mean(self):
        """First moment."""
        return self.moment(1)

    def var(self):
        """Variance ``m2 - m1**2`` (the second free cumulant; exact where the moments are)."""
        series = self._verified_series(2, kind="cumulants") if \
            self.options.max_exact_moment_order >= 2 else None
        if series is not None:
            return series.to_float(2, what="variance")
        scale, m = self._scaled_moments(2)
        return float((m[2] - m[1] ** 2) * scale ** 2)

    def std(self):
        """Standard deviation."""
        return math.sqrt(self.var())

    def free_cumulants(self, kmax):
        """Free cumulants ``kappa_1, ..., kappa_kmax`` (theory eqs. (8.2)-(8.3)).

        Exact (then rounded) where :meth:`moment` is, else from the float
        moments.

        Parameters
        ----------
        kmax : int
            Highest order, ``kmax >= 1``.

        Returns
        -------
        ndarray
            ``[kappa_1, ..., kappa_kmax]``.
        """
        from ..algebra._cumulants import moments_to_free_cumulants

        kmax = check_int(kmax, "kmax", minimum=1)
        if kmax <= self.options.max_exact_moment_order:
            series = self._verified_series(kmax, kind="cumulants")
            if series is not None:
                return np.array([series.to_float(n, what="free cumulant")
                                 for n in range(1, kmax + 1)])
        scale, m = self._scaled_moments(kmax)
        kappa = moments_to_free_cumulants(np.asarray(m[1:], dtype=float))
        return kappa * float(scale) ** np.arange(1, kmax + 1)

    # -- Stieltjes transform -------------------------------------------------------------
    def stieltjes(self, z):
        """Cauchy-Stieltjes transform ``G(z) = int dmu(x)/(z - x)``.

        Parameters
        ----------
        z : array_like
            Complex points with ``Im z >= 0``; a real ``z`` means ``z + i0``
            (the boundary value from above inside the support); ``inf`` gives 0.

        Returns
        -------
        complex or ndarray
            ``G ~ 1/z`` at infinity, ``Im G < 0`` for ``Im z > 0``.

        Raises
        ------
        ValueError
            If ``Im z < 0``, ``z`` is NaN, ``z`` is an atom (a pole), or ``z`` is an
            end of the support where the density does not vanish (exponent ``<= 0``
            in :class:`Interval`, or a :class:`LogEnd`), where ``G`` diverges.
        """
        zs, shape = check_z(z)
        out = np.zeros(zs.shape, dtype=complex)
        finite = np.isfinite(zs)
        loc, mass = self.atoms()
        if loc.size and np.isin(zs, loc[mass > 0]).any():
            raise ValueError(f"z is an atom of the law (a pole of G): atoms at {loc.tolist()}")
        real = finite & (zs.imag == 0)
        if real.any():
            ends = self._divergent_ends()
            hit = np.isin(zs.real[real], ends)
            if hit.any():
                raise ValueError(
                    f"z = {float(zs.real[real][hit][0])!r} is an end of the support where the "
                    f"density does not vanish (a hard edge), where G diverges: such ends at "
                    f"{ends.tolist()}; evaluate next to it")
        if finite.any():
            out[finite] = self._stieltjes(zs[finite])
        return _out(out, shape)

    def _divergent_ends(self):
        """Ends of the support's intervals where ``G`` has no finite boundary value: a
        density exponent ``<= 0`` or a :class:`LogEnd` there (``int dmu(x)/|x - e|``
        diverges; theory section 14.58)."""
        ends = []
        for iv in self.interval_details():
            for x, e in ((iv.lo, iv.lo_exponent), (iv.hi, iv.hi_exponent)):
                if isinstance(e, LogEnd) or e <= 0:
                    ends.append(x)
        return np.array(ends, dtype=float)

    def _stieltjes(self, zs):
        """``G`` at finite points of the closed upper half-plane (``inf`` at an atom);
        next to an atom from its series (:meth:`_near_atom_pair`)."""
        near = self._near_atom_pair(zs)
        if near is None:
            return self._stieltjes_away(zs)
        mask, g, _ = near
        out = np.empty(zs.shape, dtype=complex)
        out[mask] = g
        if not mask.all():
            out[~mask] = self._stieltjes_away(zs[~mask])
        return out

    def _stieltjes_away(self, zs):
        """:meth:`_stieltjes` without the series next to the atoms."""
        size, scale = np.abs(zs), self._scale()
        if size.size and size.max() <= FAR_RADIUS * scale:
            # every point within the exact transform's reach (the common case)
            exact = self._stieltjes_exact(zs)
            if exact is not None:
                return np.asarray(exact, dtype=complex)
        out = np.empty(zs.shape, dtype=complex)
        very_far = size > VERY_FAR_RADIUS * scale
        if very_far.any():
            out[very_far] = 1.0 / zs[very_far]
            if very_far.all():
                return out
            out[~very_far] = self._stieltjes(zs[~very_far])
            return out
        exact_mom = None
        far = size > FAR_RADIUS * scale
        if far.any():
            exact_mom = self._exact_scaled_moments(FAR_TERMS)
        if exact_mom is not None and far.any():
            out[far] = _far_series(*exact_mom, zs[far])[0]
            rest = ~far
        else:
            rest = np.ones(zs.shape, dtype=bool)
        if rest.any():
            exact = self._stieltjes_exact(zs[rest])
            if exact is None:
                exact = self._stieltjes_from_representation(zs[rest])
            out[rest] = exact
        return out

    def _pair_or_far(self, zs):
        """``(G, G')`` from :meth:`_stieltjes_pair`; where that raises
        :class:`ConvergenceError`, from the moment series at the points beyond
        ``FAR_RADIUS`` times the support's extent (:meth:`_far_pair`, theory eq.
        (14.47)) and from the solver at the others (which may raise again).  The
        rule by which a host asks a nested law anywhere in the plane.  Next to an
        atom, from its series (:meth:`_near_atom_pair`)."""
        near = self._near_atom_pair(zs)
        if near is not None:
            return _merged_pair(zs, near, self._pair_or_far)
        try:
            return self._stieltjes_pair(zs)
        except ConvergenceError:
            far = self._far_pair(zs)
            if far is None:
                raise
        return _merged_pair(zs, far, self._stieltjes_pair)

    def _near_atom_windows(self):
        """``(s, m, d)`` for every atom ``s`` of mass ``m`` at a distance ``d > 0`` from
        the rest of the support (its bands and the other atoms), once the support is
        known and the law has a band; an empty list otherwise, and for a law in closed
        form (kept once found)."""
        kept = self.__dict__.get("_near_atom_windows_kept")
        if kept is not None:
            return kept
        if getattr(self, "_closed_form", False):
            # a closed form keeps its relative digits next to its atoms
            self._near_atom_windows_kept = []
            return []
        if self._interval_cache is None:
            return []
        ivs = self._interval_cache
        loc, mass = self.atoms()
        out = []
        if ivs and loc.size:
            lo = np.array([float(iv.lo) for iv in ivs])
            hi = np.array([float(iv.hi) for iv in ivs])
            for k, (s_, m) in enumerate(zip(loc, mass)):
                d = np.min(np.maximum(lo - s_, s_ - hi))      # <= 0 inside a band
                others = np.delete(loc, k)
                if others.size:
                    d = min(d, np.min(np.abs(others - s_)))
                if m > 0 and d > 0:
                    out.append((float(s_), float(m), float(d)))
        self._near_atom_windows_kept = out
        return out

    def _near_atom_pair(self, zs):
        """``(near, G, G')``: the points of ``zs`` within ``NEAR_ATOM_RTOL`` of ``d`` from
        an atom (:meth:`_near_atom_windows`) and ``G``, ``G'`` there from eq. (14.58),
        or None where no point is that near."""
        windows = self._near_atom_windows()
        if not windows or not zs.size:
            return None
        near = np.zeros(zs.shape, dtype=bool)
        which = np.full(zs.shape, -1)
        for k, (s_, _, d) in enumerate(windows):
            dist = np.abs(zs - s_)
            # (the atom itself keeps the solver's answer, inf)
            sel = ~near & (dist <= NEAR_ATOM_RTOL * d) & (dist > 0)
            if sel.any() and self._near_atom_coefficients(k) is not None:
                which[sel] = k
                near |= sel
        if not near.any():
            return None
        g = np.empty(zs.shape, dtype=complex)
        dg = np.empty(zs.shape, dtype=complex)
        for k, (s_, m, _) in enumerate(windows):
            sel = which == k
            if not sel.any():
                continue
            c = self._near_atom_coefficients(k)
            t = zs[sel] - s_
            with np.errstate(over="ignore"):       # (a pole: inf within 1e-154 of s)
                q = m / t
                g[sel] = q + npoly.polyval(t, c)
                dg[sel] = -q / t + npoly.polyval(t, npoly.polyder(c))
        return near, g[near], dg[near]

    def _near_atom_coefficients(self, k):
        """Taylor coefficients at the atom of window ``k`` of ``G(z) - m/(z - s)``
        (eq. (14.58)): the trapezoidal rule on the circle ``|z - s| = r`` from
        ``NEAR_ATOM_NODES`` values (the upper half solved, the lower its conjugate),
        checked against the solver at ``r/2``; None (the solver then serves those points
        as before) where the solver fails on the circle or the check misses."""
        kept = self.__dict__.setdefault("_near_atom_kept", {})
        if k in kept:
            return kept[k]
        kept[k] = None
        s_, m, d = self._near_atom_windows()[k]
        r = NEAR_ATOM_RADIUS * d
        n = NEAR_ATOM_NODES
        theta = np.pi * (np.arange(n // 2) + 0.5) / (n // 2)        # (0, pi)
        up = s_ + r * np.exp(1j * theta)
        probe = np.array([s_ + 0.5 * r * np.exp(1j * np.pi / 3)])
        try:
            g = self._stieltjes_away(np.concatenate([up, probe]))
        except ConvergenceError:
            return None
        reg = g[:-1] - m / (up - s_)
        # the lower half: R(conj z) = conj R(z)
        ang = np.concatenate([theta, -theta])
        vals = np.concatenate([reg, np.conj(reg)])
        j = np.arange(NEAR_ATOM_TERMS)
        t = probe - s_
        with np.errstate(all="ignore"):
            # (a radius whose powers underflow gives infinite coefficients: refused below)
            c = (np.exp(-1j * np.outer(j, ang)) @ vals) / vals.size / r ** j
            c = c.real + 0j                   # real on the axis off the support
            series = m / t + npoly.polyval(t, c)
            err = float(abs(series[0] - g[-1]) / abs(g[-1]))
        # the solver's own loss at the probe, eps * scale / |z - s|, bounds the check
        allowed = max(NEAR_ATOM_CHECK_RTOL,
                      NEAR_ATOM_CHECK_ULPS * np.finfo(float).eps * self._scale() / (0.5 * r))
        if err <= allowed and np.all(np.isfinite(c)):
            kept[k] = c
        return kept[k]

    def _far_pair(self, zs):
        """``(far, G, G')``: the points of ``zs`` beyond ``FAR_RADIUS`` times the
        support's extent and ``G``, ``G'`` there from the moment series (theory eq.
        (14.47)), or ``None`` where the law has no exact moments, no point is that far
        or its support is not known yet (it is not computed for this: a nested law's
        support costs a solve of its own).

        A composed law's solver is built for its support's neighbourhood; a host's
        subordination point can lie ``1e15`` times beyond it (the partner of an
        atom), where the series is exact to rounding.
        """
        if self._interval_cache is None:
            return None
        far = np.abs(zs) > FAR_RADIUS * self._scale()
        if not far.any():
            return None
        exact = self._exact_scaled_moments(FAR_TERMS)
        if exact is None:
            return None
        return (far,) + _far_series(*exact, zs[far], derivative=True)

    def _stieltjes_from_representation(self, zs):
        loc, mass = self.atoms()
        g = np.zeros(zs.shape, dtype=complex)
        if self.interval_details():
            rep = self._representation()
            g += rep.cauchy(zs) * (self._continuous_mass() / rep.total)
        for a, m in zip(loc, mass):
            g += m / (zs - a)
        return g

    # -- arbitrary precision ---------------------------------------------------------
    def stieltjes_mp(self, z, dps=40):
        """``G(z)`` at one point with mpmath at ``dps`` significant digits.

        The same protocol as the float path, in mpmath arithmetic: closed
        forms for the elementary laws, the subordination equation solved by
        ``mpmath.findroot`` (started from the float solution, residual checked
        against the working precision) for composed laws, quadrature of the
        density for transforms without an algebraic transform (theory
        section 8.8).

        Parameters
        ----------
        z : complex
            ``Im z >= 0``; a real ``z`` means ``z + i0``, taken as
            ``z + i * 10**-(dps + 5) * scale``.
        dps : int
            Decimal digits, ``>= 15``.

        Returns
        -------
        mpmath.mpc

        Raises
        ------
        ConvergenceError
            If a subordination solve does not reach the precision.
        """
        import mpmath

        dps = check_int(dps, "dps", minimum=15)
        zc, _ = check_z(z)
        if zc.size != 1:
            raise TypeError("stieltjes_mp takes one point z (a complex scalar)")
        zc = complex(zc[0])
        if not np.isfinite(zc):
            raise ValueError(f"z must be finite, got {z!r}")
        with mpmath.workdps(dps + MP_GUARD_DIGITS):
            zm = mpmath.mpc(zc.real, zc.imag)
            if zm.imag == 0:
                zm = mpmath.mpc(zm.real, mpmath.mpf(10) ** (-(dps + 5)) * self._scale())
            g = self._mp_stieltjes(zm)
        with mpmath.workdps(dps):
            return +g

    def pdf_mp(self, x, dps=40):
        """Density at one real point with mpmath at ``dps`` digits (``-Im G(x + i0)/pi``).

        Parameters
        ----------
        x : float
            One real point.
        dps : int, optional
            Significant decimal digits of the evaluation (see :meth:`stieltjes_mp`).

        Returns
        -------
        mpmath.mpf
        """
        import mpmath

        xv = as_real_array(x, "x", finite=True)
        if xv.ndim != 0:
            raise TypeError("pdf_mp takes one real point x")
        g = self.stieltjes_mp(complex(float(xv)), dps)
        with mpmath.workdps(dps):
            return max(-g.imag / mpmath.pi, mpmath.mpf(0))

    def _mp_stieltjes(self, z):
        """``G(z)`` in the current mpmath precision (hook; default: density quadrature)."""
        import mpmath

        total = mpmath.mpc(0)
        loc, mass = self.atoms()
        for a, m in zip(loc, mass):
            total += mpmath.mpf(m) / (z - mpmath.mpf(a))
        for iv in self.interval_details():
            dens = self._mp_density_function()
            total += mpmath.quad(lambda t: dens(t) / (z - t),
                                 [mpmath.mpf(iv.lo), mpmath.mpf(iv.hi)])
        return total

    def _mp_density_function(self):
        raise NotImplementedError(f"{type(self).__name__} has no arbitrary-precision path")

    def _stieltjes_pair(self, zs):
        """``(G(z), G'(z))`` at finite points (one solve where the law can share it)."""
        return self._stieltjes(zs), self._stieltjes_derivative(zs)

    def _memoized_pair(self, zs, compute):
        """``compute(zs)`` (a pair of arrays), or the copy of an answer kept from the
        last ``PAIR_MEMO_SIZE`` calls at the same points (bit for bit the same array).

        A law nested in another is asked the same few points again by its host's
        fixed-point strategies (the derivative at a converged point, the Cauchy
        transform there): for at most ``PAIR_MEMO_MAX_POINTS`` points the answer is
        kept.  Only answers are kept; a call that raises is asked again.
        """
        if zs.size > PAIR_MEMO_MAX_POINTS:
            return compute(zs)
        key = (zs.shape, zs.dtype.str, zs.tobytes())
        memo = self.__dict__.setdefault("_pair_memo", {})
        kept = memo.get(key)
        if kept is None:
            g, d = compute(zs)
            if len(memo) >= PAIR_MEMO_SIZE:
                del memo[next(iter(memo))]          # the oldest answer
            memo[key] = (g.copy(), d.copy())
            return g, d
        return kept[0].copy(), kept[1].copy()

    def _pair_beside_solver(self, zs, solved, off):
        """``(G, G')`` from ``solved(z)`` except at the points ``off`` (real points where
        the law's solver found no root), which take both from the representation's
        Cauchy integral and the atoms (theory eq. (8.16))."""
        g = np.empty(zs.shape, dtype=complex)
        d = np.empty(zs.shape, dtype=complex)
        if (~off).any():
            g[~off], d[~off] = solved(zs[~off])
        g[off] = self._stieltjes_from_representation(zs[off])
        d[off] = SpectralLaw._stieltjes_derivative(self, zs[off])
        return g, d

    def _stieltjes_derivative(self, zs):
        """``G'(z)`` (generic: from the representation and the atoms)."""
        loc, mass = self.atoms()
        d = np.zeros(zs.shape, dtype=complex)
        if self.interval_details():
            rep = self._representation()
            d += rep.cauchy(zs, derivative=True)[1] * (self._continuous_mass() / rep.total)
        for a, m in zip(loc, mass):
            d -= m / (zs - a) ** 2
        return d

    # -- sampling ---------------------------------------------------------------------
    def rvs(self, size=None, rng=None):
        """Independent samples by inverse-transform sampling.

        Parameters
        ----------
        size : int or tuple of int, optional
            Output shape, non-negative integers (``None``: one float).
        rng : int, numpy.random.Generator or None
            Seed or generator (``numpy.random.default_rng``).

        Returns
        -------
        float or ndarray

        Raises
        ------
        TypeError, ValueError
            If ``size`` is not an integer or a tuple of integers (bools
            excluded), or holds a negative one.
        """
        size = _check_size(size)
        gen = check_rng(rng)
        if size is None:
            return float(self.ppf(gen.random()))
        return self.ppf(gen.random(size))

    # -- transforms -------------------------------------------------------------------
    def squared(self):
        """The law of the squared singular values.

        An eigenvalue law (of a Gram matrix ``Y Y^T``) already is the law of
        the squared singular values of ``Y``, so this returns ``self``; the
        singular-value law (:meth:`singular_values`) returns the eigenvalue law.
        """
        return self

    def singular_values(self):
        """The law of ``sqrt(X)`` for a law on ``[0, oo)`` (eigenvalues -> singular values).

        Returns
        -------
        SingularValueLaw
        """
        return SingularValueLaw(self)

    def affine(self, shift=0.0, scale=1.0):
        """The law of ``shift + scale * X``.

        Parameters
        ----------
        shift : float
        scale : float
            Non-zero; a negative scale reflects the law.

        Returns
        -------
        SpectralLaw
        """
        return affine(self, shift, scale)

    def zero_padded(self, t):
        """``t * law + (1 - t) delta_0``: the law after a change of dimension.

        The non-zero eigenvalues of ``A B`` (``p x p``) and ``B A`` (``N x N``,
        ``N = t p``) coincide, so their laws differ by zeros (theory eq. (9.4)).

        Parameters
        ----------
        t : float
            Ratio of the dimensions, ``> 0``; ``t > 1`` removes zeros (the law
            must have at least ``1 - 1/t`` at 0).

        Returns
        -------
        ZeroPaddedLaw

        Examples
        --------
        >>> import freeattn
        >>> law = freeattn.marchenko_pastur(1.0, 0.5).zero_padded(0.5)
        >>> law.atom, round(law.mean(), 12)
        (0.5, 0.5)
        """
        value = real_scalar(t, "t")
        if value <= 0:
            raise ValueError(f"t must be > 0, got {t!r}")
        return ZeroPaddedLaw(self, value)

    def scaled(self, factor):
        """The law of ``factor * X`` (a dilation).

        Parameters
        ----------
        factor : float
            Non-zero; a negative factor reflects the law (see :meth:`affine`).

        Returns
        -------
        SpectralLaw
        """
        return self.affine(0.0, factor)

    def to_scipy(self):
        """This law as a :mod:`scipy.stats` distribution (an ``rv_continuous``).

        Every SciPy method delegates to the law: ``cdf``, ``sf``, ``ppf``,
        ``isf``, ``rvs`` (inverse transform with SciPy's ``random_state``),
        moments (exact where the law has them), ``expect`` (the law's
        quadrature), so ``interval``, ``loc``/``scale``, freezing and SciPy's
        plotting helpers work with freeattn's accuracy.

        Returns
        -------
        freeattn.laws._scipy.ScipyLaw
            A ``scipy.stats.rv_continuous``; the law is its ``.law``.

        Notes
        -----
        A law with atoms becomes a mixed distribution: ``cdf``, ``ppf``,
        ``rvs``, moments and ``expect`` include the atoms, ``pdf`` is the
        density of the continuous part only (as :meth:`pdf`), and an atom at
        the lower end of the support moves SciPy's support end ``a`` to the
        float just below it, so that ``cdf(atom)`` is its mass; ``entropy``
        raises ``ValueError`` for such a law.

        Examples
        --------
        >>> import freeattn
        >>> dist = freeattn.marchenko_pastur(1.0, 0.5).to_scipy()
        >>> round(float(dist.mean()), 12), round(float(dist.var()), 12)   # v and c v**2
        (1.0, 0.5)
        >>> lo, hi = dist.interval(1.0)
        >>> round(float(lo), 12), round(float(hi), 12)   # (1 -+ sqrt(0.5))**2
        (0.085786437627, 2.914213562373)
        >>> padded = freeattn.marchenko_pastur(1.0, 0.5).zero_padded(0.5).to_scipy()
        >>> float(padded.cdf(0.0)), float(padded.ppf(0.25))   # the atom 1/2 at 0
        (0.5, 0.0)
        """
        from ._scipy import ScipyLaw

        return ScipyLaw(self)

    def __repr__(self):
        return f"<{self._describe()}: support {self.support()}>"

    def _describe(self):
        return type(self).__name__


def _power_sum(parts, k, scale):
    """``sum w (x/scale)**k`` over ``(x, w)`` parts as ``(scale', v, a)`` with the largest
    term of size 1 (``sum = v (scale'/scale)**k``; ``a`` the same for ``sum |w| |x/scale|**k``),
    so that no term underflows."""
    x = np.concatenate([p[0] for p in parts]) / scale
    w = np.concatenate([p[1] for p in parts])
    keep = (x != 0) & (w != 0)
    if not keep.any():
        return scale, 0.0, 0.0
    x, w = x[keep], w[keep]
    logs = k * np.log(np.abs(x))
    top = logs.max()
    sign = np.where((x < 0) & (k % 2 == 1), -1.0, 1.0)
    terms = w * np.exp(logs - top)
    v = float(np.sum(sign * terms))
    return (scale * math.exp(top / k) if k else scale), v, float(np.sum(np.abs(terms)))


def _fraction_to_float(value, k):
    """A Fraction correctly rounded to float64; OverflowError naming ``k`` beyond the range."""
    try:
        return float(value)
    except OverflowError:
        log10 = (value.numerator.bit_length() - value.denominator.bit_length()) * math.log10(2)
        raise OverflowError(f"moment k={k} is about 10**{log10:.1f}, beyond the float64 "
                            f"range") from None


def _rescale(v, scale, k):
    """``v * scale**k`` correctly rounded (exact product of the two floats); OverflowError
    naming ``k`` beyond float64."""
    if v == 0.0:
        return 0.0
    log_abs = k * math.log(scale) + math.log(abs(v))
    if log_abs > _LOG_MAX + 1.0:
        raise OverflowError(f"moment k={k} is about 10**{log_abs / math.log(10):.1f}, beyond "
                            f"the float64 range")
    return _fraction_to_float(Fraction(v) * Fraction(scale) ** k, k)


def verified_series(compute, kmax, what="the law"):
    """A moment series at a precision that it is right to (theory eq. (8.24)).

    ``compute(prec)`` gives the series (a ``MomentSeries``) with ``prec``-bit
    fixed point, or an exact one, or ``None``.  A fixed-point result is
    recomputed with ``EXACT_CHECK_BITS`` more bits and returned when the two
    agree (:func:`freeattn.algebra._moment_series.agree`); otherwise the
    precision is doubled, at most ``EXACT_MAX_DOUBLINGS`` times.

    Parameters
    ----------
    compute : callable
    kmax : int
        Highest order (sets the starting precision).
    what : str
        Name of the law for the error message.

    Returns
    -------
    MomentSeries or None

    Raises
    ------
    ConvergenceError
        If no two successive precisions agree.
    """
    from ..algebra._moment_series import agree

    prec = EXACT_START_BITS + EXACT_BITS_PER_ORDER * int(kmax)
    lo = compute(prec)
    if lo is None or lo.exact:
        return lo
    nxt = prec + EXACT_CHECK_BITS
    for _ in range(EXACT_MAX_DOUBLINGS + 1):
        hi = compute(nxt)
        if hi is None or hi.exact:
            return hi
        if agree(lo, hi, EXACT_REL_BITS, EXACT_ABS_BITS):
            return hi
        lo, nxt = hi, 2 * nxt
    raise ConvergenceError(
        f"moments of {what} up to order {kmax}: the fixed-point recursion did not settle "
        f"(two precisions up to {nxt // 2} bits disagree beyond 2**-{EXACT_REL_BITS})",
        point=kmax)


def solver_error(what, point, residual, tolerance, iterations=None):
    """A :class:`ConvergenceError` quoting the numbers."""
    msg = (f"{what} at z={point!r}: relative residual {residual:.3e} > tolerance "
           f"{tolerance:.1e}")
    return ConvergenceError(msg, point=point, residual=float(residual), tolerance=tolerance,
                            iterations=iterations)


def _check_size(size):
    """``size`` of :meth:`rvs`: None, a non-negative int, or a tuple of them."""
    if size is None:
        return None
    dims = size if isinstance(size, (tuple, list)) else (size,)
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"size must be a non-negative integer or a tuple of them, got "
                            f"{size!r}")
        if dim < 0:
            raise ValueError(f"size must be a non-negative integer or a tuple of them, got "
                             f"{size!r}")
    return tuple(int(d) for d in dims) if isinstance(size, (tuple, list)) else int(size)


# --------------------------------------------------------------------------- #
# Laws as transforms of other laws: affine maps, the eigenvalue <-> singular-value
# map and zero padding.  A transform is a wrapper around a law, not a flag inside
# it: it maps the support, the atoms, the density and the Stieltjes transform of
# its base law (theory section 8.5), and it composes further like any law.  The
# wrappers live next to the base because its methods (affine, singular_values,
# zero_padded) build them.
# --------------------------------------------------------------------------- #

#: Below ``|z|**2 <= _TINY_SQ * scale**2`` the square ``z**2`` underflows against the
#: support, and the singular-value law's transform is taken from its representation.
_TINY_SQ = 1e-280

#: Digits of the working precision kept below the offset ``eta`` at which the
#: squared law's boundary value is taken in the mpmath path (the density at
#: ``x + i eta`` differs from the boundary value by O(eta)).
MP_AXIS_DIGITS = 5


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
    a = real_scalar(shift, "shift")
    s = real_scalar(scale, "scale")
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

    @property
    def _pointwise_transform(self):
        return self.base._pointwise_transform

    @property
    def _evaluation_cost(self):
        return self.base._evaluation_cost

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

    def _representation(self):
        """The base's panels mapped to ``shift + scale * X`` (theory eq. (8.7)).

        Fitting the affine law's own density would sample the base at
        ``(y - shift)/scale``, whose rounding next to a singular edge of the
        base is ``eps |y| / (x - e)`` relative (the arcsine on ``[-1.96, -0.23]``
        mapped by ``0.79 + 2.39 x`` missed 5.3e-9 of its mass), and would fit
        the same density twice.  A base with a logarithmic end is fitted anew.
        """
        if self._rep is None:
            from ..algebra._chebyshev import Representation

            base = self.base._representation()
            panels = [p.mapped(self.shift, self.scale) for p in base.panels]
            if any(p is None or not p.hi > p.lo for p in panels):
                return super()._representation()
            if self.scale < 0:
                panels.reverse()
            rep = Representation(panels)
            rep.edge_allowance = getattr(base, "edge_allowance", 0.0)
            rep.error = base.error
            self._rep = rep
        return self._rep

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
        from ..algebra._levels import affine_moments

        exact = self.base._moments_exact(kmax)
        if exact is None:
            return None
        sc, m = exact
        return affine_moments(self.shift, self.scale, sc, np.asarray(m, dtype=float))

    def _moment_series(self, kmax, prec):
        from ..algebra._moment_series import affine_series

        base = self.base._series(kmax, prec)
        return None if base is None else affine_series(base, self.shift, self.scale, prec)

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
        from ..algebra._levels import AffineLevel
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

    @property
    def _pointwise_transform(self):
        return self._sq._pointwise_transform

    @property
    def _evaluation_cost(self):
        return self._sq._evaluation_cost

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

    @property
    def _pointwise_transform(self):
        return self.base._pointwise_transform

    @property
    def _evaluation_cost(self):
        return self.base._evaluation_cost

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

    def _moment_series(self, kmax, prec):
        from ..algebra._moment_series import times_constant

        base = self.base._series(kmax, prec)
        return None if base is None else times_constant(base, self.t, prec)

    def _mp_stieltjes(self, z):
        import mpmath
        t = mpmath.mpf(self.t)
        return t * self.base._mp_stieltjes(z) + (1 - t) / z


#: Mass at 0 below which a zero-padded law has no atom there (rounding of 1 - t).
ZERO_MASS_ATOL = 1e-14
