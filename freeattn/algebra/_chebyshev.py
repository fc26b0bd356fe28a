"""Piecewise-Chebyshev representation of a density on its support.

Every law in freeattn evaluates its density, CDF, quantiles, quadrature and
(where it has no exact solver) its Stieltjes transform from this
representation, built once per law from the law's own exact density
(theory section 8.6).  Nothing here knows about random matrices: a
:class:`Representation` is made from a density function, the support
intervals and the behaviour of the density at each edge.

* **Edge behaviour is factored out by the panel map.**  Near an edge ``e``
  where the density behaves like ``|x - e|**eta`` with ``eta = j/p``, the
  variable ``s = (|x - e|/w)**(1/p)`` makes ``g(s) = f(x(s)) dx/ds`` analytic
  (theory eq. (8.14)): square-root edges and the ``x**(-1/2)`` hard edge take
  ``p = 2``, the ``x**(-2/3)`` edge of a product of square Wishart matrices
  ``p = 3``, a finite non-zero endpoint value ``p = 1``.
* **Logarithmic ends.**  A density ``~ A/((x - e) log(c/(x - e))**2)`` at an
  end ``e`` (declared by a :class:`LogEnd` edge descriptor) is not a power
  law; its panel uses ``x - e = c u exp(-1/u)`` with ``u`` linear in the panel
  variable (theory eq. (8.18), :class:`LogEndMap`), in which ``g = f dx/dsigma``
  is analytic at ``u = 0``.  Its nodes, which lie far below the float range
  next to ``e``, are sampled through ``log(x - e)`` (the ``log_density``
  argument of :func:`build_representation`), so the CDF and quantiles there
  are the exact series too.
* **Nested nodes.**  ``g`` is sampled at first-kind Chebyshev nodes; their
  number is tripled until the coefficient tail converges, and the nodes of
  ``n`` are nodes of ``3 n``, so no solve is discarded.
* **Everything exact on the series.**  The CDF is the exact integral of the
  series of ``g`` (theory eq. (8.15)); quantiles invert it through an inverse
  interpolant plus one Newton step; the Cauchy integral of a panel is a
  Chebyshev synthetic division plus a logarithm (theory eq. (8.16)), accurate
  arbitrarily close to the support.

Nothing in this module prints or does I/O.
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..core._errors import ConvergenceError

__all__ = [
    "edge_power",
    "LogEnd",
    "LogEndMap",
    "PanelMap",
    "Panel",
    "Representation",
    "build_representation",
    "cauchy_integral",
    "clenshaw",
]

_cheb = np.polynomial.chebyshev
_TINY = float(np.finfo(np.float64).tiny)
_EPS = float(np.finfo(np.float64).eps)

#: Largest denominator of an edge exponent (``|x - e|**(j/p)``) the panel maps
#: take: a float exponent is rounded to the nearest fraction with ``p <= 6``; an
#: exact one (a Fraction, e.g. ``-L/(L + 1)`` of a product of ``L`` laws with hard
#: edges, eq. (14.6)) is used as it is up to ``MAX_EXACT_EDGE_POWER``.
MAX_EDGE_POWER = 6
MAX_EXACT_EDGE_POWER = 128

#: Bernstein-ellipse parameter below which a Cauchy integral of a panel is
#: computed by singularity subtraction (eq. (8.16)); beyond it Gauss-Legendre
#: with ``FAR_EXTRA_NODES`` nodes beyond half the degree converges like
#: ``rho**(-2 m)`` < 4**-32.
NEAR_RHO = 2.0
FAR_EXTRA_NODES = 32

#: Coefficient tail at which a panel's inverse-CDF interpolant has converged
#: (theory eq. (8.15)); the quantile takes one Newton step from it.
INVERSE_TAIL_RTOL = 1e-9

#: Relative imaginary offset (to the support width) at which a real point is
#: evaluated by :meth:`Representation.cauchy` (the boundary value from above):
#: the transform moves by O(offset * log(offset)) ~ 4e-15 relative.
JUNCTION_OFFSET = 1e-16

#: Gauss-Legendre nodes beyond half a log-end panel's degree for its Cauchy
#: integral (see :meth:`Panel.cauchy`).
LOG_END_CAUCHY_EXTRA = 64

#: The check of a log-end panel's Cauchy quadrature uses about this many times
#: its nodes (:meth:`Panel.cauchy_error`).
LOG_END_CHECK_FACTOR = 3


#: Fraction of an interval covered by the first panel at a logarithmic end
#: (eq. (8.18)); the rest of the interval starts as one panel towards the other
#: end.  Measured on the causal law (beta = gamma = 1): the log-end panel to a
#: quarter of the interval needs 43-48 coefficients above 1e-12, the square-root
#: panel above it 46 above 2e-15 (81 nodes each); to the midpoint, 48-56 and 29.
LOG_END_FRACTION = 0.25

#: ``c = LOG_END_SCALE_FACTOR * scale`` in the log-end map ``x - e = c u exp(-1/u)``
#: (eq. (8.18)); any ``c`` gives an analytic ``g``, this one was the fastest of
#: 1, 3, 6, 20 on the causal law (fewest coefficients).
LOG_END_SCALE_FACTOR = 20.0


@dataclass(frozen=True)
class LogEnd:
    """Edge descriptor of a logarithmic end (theory eq. (8.18)).

    At the end ``e`` the density behaves like ``A/((x - e) log(scale/(x - e))**2)``
    (the mass below ``e + d`` is ``~ A/log(scale/d)``): no power map resolves it.

    Attributes
    ----------
    scale : float
        ``scale`` in the logarithm (the law's natural unit), > 0.
    sample_rtol : float
        Relative accuracy of the density samples next to this end (the law's
        solver noise there): a log-end panel has converged when its Chebyshev
        tail is below it.
    """

    scale: float
    sample_rtol: float = 1e-12

    def __post_init__(self):
        if not (np.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"LogEnd.scale must be a positive finite float, got {self.scale!r}")
        if not 0 < self.sample_rtol < 1:
            raise ValueError(f"LogEnd.sample_rtol must be in (0, 1), got {self.sample_rtol!r}")

    # Orders like the exponent -1 (``x**-1`` times a logarithm), so that a test
    # ``exponent < 0`` (a diverging end) reads it correctly.
    def __float__(self):
        return -1.0

    def __lt__(self, other):
        return -1.0 < float(other)

    def __le__(self, other):
        return -1.0 <= float(other)

    def __gt__(self, other):
        return -1.0 > float(other)

    def __ge__(self, other):
        return -1.0 >= float(other)


def _solve_v_log_v(R):
    """``v > 0`` with ``v + log v = R`` (any real ``R``), by Newton in ``w = log v``.

    ``e**w + w - R`` is increasing and convex, and the start (``w = R`` for
    ``R < 1``, ``log R`` otherwise) has a non-negative value, so Newton's
    iterates decrease monotonically to the root: 6 steps from ``log R`` reach
    ``eps`` for ``R >= 1`` (the error squares from ``O(log R/R)``).
    """
    R = np.asarray(R, dtype=float)
    w = np.where(R < 1.0, R, np.log(np.maximum(R, 1.0)))
    for _ in range(60):
        ew = np.exp(w)
        step = (ew + w - R) / (ew + 1.0)
        w = w - step
        if np.all(np.abs(step) <= 4e-16 * np.maximum(1.0, np.abs(w))):
            break
    return np.exp(w)


@dataclass(frozen=True)
class LogEndMap:
    """Panel map at a logarithmic end ``e`` (theory eq. (8.18)).

    ``x = e + c u exp(-1/u)``, ``u = u_lo + (u_hi - u_lo) (1 + sigma)/2``; the
    panel next to the end has ``u_lo = 0`` (``x = e``), the panels cut from it
    have ``u_lo > 0``.  ``lo`` and ``hi`` are the panel's ends in ``x`` (``hi``
    exactly the point the neighbouring panel starts at).
    """

    lo: float
    hi: float
    end: float
    c: float
    u_lo: float
    u_hi: float
    kind = "logend"
    power = 1

    @classmethod
    def between(cls, end, c, lo, hi):
        """The map on ``[lo, hi]`` (``lo == end`` for the panel at the end)."""
        u_lo = 0.0 if lo <= end else float(1.0 / _solve_v_log_v(np.log(c) - np.log(lo - end)))
        u_hi = float(1.0 / _solve_v_log_v(np.log(c) - np.log(hi - end)))
        return cls(float(lo), float(hi), float(end), float(c), u_lo, u_hi)

    @property
    def width(self):
        return self.hi - self.lo

    def u_of(self, sigma):
        return self.u_lo + (self.u_hi - self.u_lo) * (1.0 + np.asarray(sigma, dtype=float)) / 2.0

    def log_distance(self, sigma):
        """``log(x - e)`` at ``sigma`` (finite for every ``u > 0``, far below the float range)."""
        u = self.u_of(sigma)
        with np.errstate(divide="ignore"):
            return np.log(self.c) + np.log(u) - 1.0 / u

    def x_of(self, sigma):
        with np.errstate(under="ignore"):
            x = self.end + np.exp(self.log_distance(sigma))
        return np.clip(x, self.lo, self.hi)

    def u_at(self, x):
        """``u`` of points ``x`` of the panel (0 at the end), from ``log(x - e)``."""
        d = np.asarray(x, dtype=float) - self.end
        out = np.full(d.shape, self.u_lo)
        pos = d > 0
        if pos.any():
            out[pos] = 1.0 / _solve_v_log_v(np.log(self.c) - np.log(d[pos]))
        return np.clip(out, self.u_lo, self.u_hi)

    def sigma_of(self, x):
        """Inverse of :meth:`x_of` (``x`` clipped to the panel)."""
        x = np.clip(np.asarray(x, dtype=float), self.lo, self.hi)
        return 2.0 * (self.u_at(x) - self.u_lo) / (self.u_hi - self.u_lo) - 1.0

    def dx_dsigma(self, sigma):
        return self._jacobian(self.x_of(sigma) - self.end, self.u_of(sigma))

    def _jacobian(self, d, u):
        """``dx/dsigma = (x - e) (1/u + 1/u**2) (u_hi - u_lo)/2`` (0 at the end)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = d * (1.0 / u + 1.0 / (u * u)) * ((self.u_hi - self.u_lo) / 2.0)
        return np.where(u > 0, out, 0.0)

    def jacobian_factor(self, sigma):
        """``(dx/dsigma)/(x - e) = (1/u + 1/u**2)(u_hi - u_lo)/2`` (to scale ``(x - e) f``)."""
        u = self.u_of(sigma)
        with np.errstate(divide="ignore", over="ignore"):
            return (1.0 / u + 1.0 / (u * u)) * ((self.u_hi - self.u_lo) / 2.0)


def edge_power(exponent):
    """Panel-map power ``p`` and the order ``k`` of ``g ~ s**k`` at an edge.

    Parameters
    ----------
    exponent : float, Fraction or LogEnd
        ``eta`` in ``f(x) ~ |x - e|**eta`` (``1/2`` soft, ``-1/2`` hard,
        ``-2/3`` Fuss-Catalan, ``0`` finite); a :class:`LogEnd` has its own map
        (eq. (8.18)), in whose variable ``g`` is finite: ``(1, 0)``.

    Returns
    -------
    p : int
        Denominator of ``eta`` (``<= MAX_EDGE_POWER`` for a float ``eta``,
        ``<= MAX_EXACT_EDGE_POWER`` for an exact one).
    k : int
        ``p * eta + p - 1``: ``g = f dx/ds`` behaves like ``s**k`` (eq. (8.14)).
    """
    if isinstance(exponent, LogEnd):
        return 1, 0
    if isinstance(exponent, (Fraction, int)) and \
            Fraction(exponent).denominator <= MAX_EXACT_EDGE_POWER:
        frac = Fraction(exponent)
    else:
        frac = Fraction(exponent).limit_denominator(MAX_EDGE_POWER)
    if frac <= -1:
        raise ValueError(f"edge exponent must be > -1 (integrable), got {exponent!r}")
    p = frac.denominator
    return p, int(p * frac + p - 1)


# --------------------------------------------------------------------------- #
# Chebyshev primitives
# --------------------------------------------------------------------------- #

@lru_cache(maxsize=32)
def _node_angles(n):
    """``theta_j = pi (j + 1/2)/n``, ``cos theta_j`` and ``sin theta_j`` (read-only, cached)."""
    theta = np.pi * (np.arange(n) + 0.5) / n
    out = (theta, np.cos(theta), np.sin(theta))
    for a in out:
        a.setflags(write=False)
    return out


def first_kind_nodes(n):
    """First-kind Chebyshev nodes ``cos(pi (j + 1/2)/n)``, decreasing (read-only)."""
    return _node_angles(n)[1]


_FFT = []


def _dct_dst():
    """``(dct, dst)`` of pocketfft, the backend of ``scipy.fft``, called without its
    backend dispatch (the same transforms, ~6 instead of ~12 microseconds a call at
    81 points); scipy.fft is imported on first use, not with the package."""
    if not _FFT:
        try:
            from scipy.fft._pocketfft import dct, dst
        except ImportError:  # pragma: no cover - another layout: the public functions
            from scipy.fft import dct, dst
        _FFT.extend((dct, dst))
    return _FFT


def nodes_coefficients(values):
    """Chebyshev coefficients of the interpolant through first-kind nodes (DCT-II)."""
    dct = _dct_dst()[0]
    n = values.shape[-1]
    c = dct(values, type=2, axis=-1) / n
    c[..., 0] /= 2
    return c


def integral_coefficients(coef):
    """Chebyshev coefficients of ``int_{-1}^{sigma} sum_k coef[k] T_k`` (one more term):
    a panel's CDF series (theory eq. (8.15)).

    ``int T_0 = T_1``, ``int T_1 = T_2/4`` and ``int T_k = T_{k+1}/(2(k+1)) -
    T_{k-1}/(2(k-1))``: term ``k >= 1`` of the result is ``(c_{k-1} -
    c_{k+1})/(2k)`` (``c_0`` doubled for ``k = 1``), and term 0 makes the value
    at ``-1`` vanish -- ``numpy.polynomial.chebyshev.chebint(coef, lbnd=-1)``
    with the same roundings, without its per-term loop.
    """
    n = coef.size
    c = np.concatenate([coef, [0.0, 0.0]])
    k2 = 2.0 * np.arange(1, n + 1)
    out = np.empty(n + 1)
    out[1:] = c[:n] / k2 - c[2:] / k2
    out[1] = c[0] - c[2] / 2
    # the constant as chebint sets it, so that the series evaluates to 0 at -1 as
    # chebval rounds it (the CDF below a support that starts at 0 is exactly 0)
    out[0] = 0.0
    out[0] = -_cheb.chebval(-1.0, out)
    return out


def nodes_derivative(coef):
    """Derivative of ``sum_k coef[k] T_k`` at the first-kind nodes of ``n = coef.size``
    (the slope that moves shifted samples back to the nodes, theory eq. (8.14)).

    At ``x_j = cos theta_j``, ``T_k'(x_j) = k sin(k theta_j)/sin theta_j``, and
    ``sum_k k c_k sin(k theta_j)`` is a DST-III of ``k c_k``; the division by
    ``sin theta_j`` costs digits next to the ends (``~ n**2`` ulps relative), as
    a derivative's condition does.
    """
    dst = _dct_dst()[1]
    n = coef.size
    x = np.zeros(n)
    x[:n - 1] = np.arange(1, n) * coef[1:]
    return dst(x, type=3) / (2.0 * _node_angles(n)[2])


def clenshaw(coef, x):
    """``sum_k coef[k] T_k(x)`` for a Python scalar ``x`` (no numpy overhead)."""
    b1 = b2 = 0.0
    x2 = 2.0 * x
    for c in reversed(coef[1:]):
        b1, b2 = c + x2 * b1 - b2, b1
    return coef[0] + x * b1 - b2


def _tail(coef):
    """Largest coefficient of the last third, relative to the largest."""
    a = np.abs(coef)
    top = max(a.max(), _TINY)
    return float(a[-max(len(a) // 3, 2):].max() / top)


def _plateau(coef):
    """Whether the last half of the coefficients is flat (theory eq. (8.14)).

    True when the largest coefficient of the third quarter is at most
    ``PLATEAU_RATIO`` times the largest of the last quarter: the coefficients
    stopped decaying, as they do at the rounding floor of the samples.
    """
    a = np.abs(coef)
    half, three = len(a) // 2, (3 * len(a)) // 4
    return bool(a[half:three].max() <= PLATEAU_RATIO * a[three:].max())


def _chop(coef, rtol):
    """Drop trailing coefficients below ``rtol`` of the largest."""
    a = np.abs(coef)
    keep = np.nonzero(a > rtol * max(a.max(), _TINY))[0]
    last = int(keep[-1]) + 1 if keep.size else 1
    return coef[:max(last, 1)].copy()


@lru_cache(maxsize=64)
def gauss_legendre(n):
    """Gauss-Legendre nodes and weights on ``[-1, 1]`` (cached)."""
    if n <= 300:
        return np.polynomial.legendre.leggauss(n)
    from scipy.special import roots_legendre
    return roots_legendre(n)


def _integral_weights(n):
    """``int_{-1}^{1} T_k = 2/(1 - k**2)`` for even ``k``, 0 for odd."""
    k = np.arange(n)
    w = np.zeros(n)
    even = k % 2 == 0
    w[even] = 2.0 / (1.0 - k[even] ** 2)
    return w


def _divide(coef, zeta):
    """Synthetic division ``(g(s) - g(zeta))/(s - zeta)`` in the Chebyshev basis.

    Parameters
    ----------
    coef : ndarray, shape (n,)
        Real coefficients of ``g``.
    zeta : ndarray, shape (m,)
        Complex points.

    Returns
    -------
    d : ndarray, shape (max(n - 1, 1), m)
        Coefficients of the quotient at each point.
    value : ndarray, shape (m,)
        ``g(zeta)``.

    Notes
    -----
    From ``(s - zeta) q = g - g(zeta)`` with ``s T_0 = T_1`` and
    ``s T_k = (T_{k+1} + T_{k-1})/2``: ``d_{n-2} = 2 c_{n-1}``,
    ``d_{m-1} = 2 (c_m + zeta d_m) - d_{m+1}`` (``m >= 2``),
    ``d_0 = c_1 + zeta d_1 - d_2/2`` and ``g(zeta) = c_0 - d_1/2 + zeta d_0``:
    Clenshaw's recurrence, whose intermediates are the quotient (stable for
    ``zeta`` near ``[-1, 1]``, where it is used).
    """
    n = coef.size
    m = zeta.size
    if n == 1:
        return np.zeros((1, m), dtype=complex), np.full(m, coef[0] + 0j)
    d = np.zeros((n + 1, m), dtype=complex)        # d[n-1] = d[n] = 0
    d[n - 2] = 2.0 * coef[n - 1]
    for mm in range(n - 2, 1, -1):
        d[mm - 1] = 2.0 * (coef[mm] + zeta * d[mm]) - d[mm + 1]
    if n >= 3:
        d[0] = coef[1] + zeta * d[1] - d[2] / 2.0
    else:
        d[0] = coef[1]
    value = coef[0] - d[1] / 2.0 + zeta * d[0]
    return d[:n - 1], value


def _log_segment(zeta, ends=None):
    """``int_{-1}^{1} ds/(s - zeta) = log(1 - zeta) - log(-1 - zeta)`` (principal).

    A real ``zeta`` inside ``(-1, 1)`` is read from above (``zeta + i0``):
    the principal value plus ``i pi``.  (IEEE signed zeros cannot carry that
    side through ``1 - zeta``: ``0.0 - 0.0`` is ``+0.0``.)  ``ends`` may give
    ``(1 - zeta, -1 - zeta)`` computed without cancellation next to an end of
    the segment (see :meth:`PanelMap.roots`).
    """
    one_minus, minus_one_minus = (1.0 - zeta, -1.0 - zeta) if ends is None else ends
    out = np.log(one_minus) - np.log(minus_one_minus)
    on_cut = (zeta.imag == 0) & (np.abs(zeta.real) < 1)
    if on_cut.any():
        x = zeta.real[on_cut]
        out[on_cut] = np.log((1.0 - x) / (1.0 + x)) + 1j * np.pi
    return out


def _bernstein_rho(zeta):
    """Bernstein-ellipse parameter ``|zeta + sqrt(zeta**2 - 1)|`` (>= 1)."""
    r = zeta + np.sqrt(zeta - 1.0) * np.sqrt(zeta + 1.0)
    return np.maximum(np.abs(r), 1.0 / np.maximum(np.abs(r), _TINY))


def far_rule(coef):
    """Gauss-Legendre nodes ``t`` and ``g(t)`` times the weights, the rule that
    :func:`cauchy_integral` uses away from the segment (theory eq. (8.28); ``(n + 1)//2 +
    FAR_EXTRA_NODES`` nodes for ``n`` coefficients): it does not depend on
    ``zeta``, so a panel computes it once."""
    t, wt = gauss_legendre((coef.size + 1) // 2 + FAR_EXTRA_NODES)
    return t, _cheb.chebval(t, coef) * wt


def cauchy_integral(coef, zeta, derivative=False, ends=None, rule=None):
    """``int_{-1}^{1} g(s)/(s - zeta) ds`` (and its ``zeta``-derivative).

    Parameters
    ----------
    coef : ndarray
        Chebyshev coefficients of ``g`` (real).
    zeta : ndarray
        Complex points, 1-d.  A real ``zeta`` inside ``(-1, 1)`` is read from
        above (``zeta + i0``).
    derivative : bool
        Also return ``int g(s)/(s - zeta)**2 ds``.
    ends : tuple of ndarray, optional
        ``(1 - zeta, -1 - zeta)`` computed without cancellation (for ``zeta``
        next to an end of the segment, where the subtraction loses
        ``eps/|1 -+ zeta|`` relative accuracy).
    rule : tuple of ndarray, optional
        :func:`far_rule` of ``coef``, when the caller keeps it.

    Returns
    -------
    value : ndarray
    deriv : ndarray, only if ``derivative``

    Notes
    -----
    Near the segment (Bernstein parameter below ``NEAR_RHO``) the singularity is
    subtracted (theory eq. (8.16)): ``int g/(s - zeta) = int q + g(zeta) L`` with
    ``q = (g - g(zeta))/(s - zeta)`` a polynomial and ``L`` the logarithm of
    :func:`_log_segment`; the derivative subtracts twice.  A near point
    outside the ellipse on which the series converges (``|g(zeta)|`` large)
    takes Gauss-Legendre instead, by the error bounds of eq. (8.28).
    Elsewhere Gauss-Legendre is exact to rounding.
    """
    zeta = np.asarray(zeta, dtype=complex)
    out = np.empty(zeta.shape, dtype=complex)
    dout = np.empty(zeta.shape, dtype=complex) if derivative else None
    n_far = (coef.size + 1) // 2 + FAR_EXTRA_NODES
    rho = _bernstein_rho(zeta)
    near = rho < NEAR_RHO
    if near.any():
        # The subtraction needs g(zeta): outside the ellipse on which the series
        # converges it grows like (rho/rho_g)**n and the subtraction loses
        # eps |g(zeta)|, while Gauss-Legendre errs by |g(zeta)| rho**(-2 n_far)
        # (eq. (8.28)); each point takes the method with the smaller bound.
        d, gz = _divide(coef, zeta[near])
        size = float(np.abs(coef).sum())
        err_sub = _EPS * (np.abs(gz) + size)
        with np.errstate(over="ignore", under="ignore"):
            err_gl = (np.abs(gz) + size) * rho[near] ** (-2.0 * n_far)
        keep = ~(err_gl < err_sub)
        idx = np.flatnonzero(near)
        near[idx[~keep]] = False
        d, gz = d[:, keep], gz[keep]
    if near.any():
        zn = zeta[near]
        w = _integral_weights(d.shape[0])
        en = None if ends is None else (ends[0][near], ends[1][near])
        L = _log_segment(zn, en)
        out[near] = w @ d + gz * L
        if derivative:
            d2, dgz = _divide_complex(d, zn)
            w2 = _integral_weights(d2.shape[0])
            L1 = (-2.0 / (1.0 - zn * zn) if en is None else 2.0 / (en[0] * en[1]))
            dout[near] = gz * L1 + dgz * L + np.einsum("k,km->m", w2, d2)
    far = ~near
    if far.any():
        zf = zeta[far]
        t, gv = far_rule(coef) if rule is None else rule
        den = t[:, None] - zf[None, :]
        out[far] = (gv[:, None] / den).sum(axis=0)
        if derivative:
            dout[far] = (gv[:, None] / den ** 2).sum(axis=0)
    return (out, dout) if derivative else out


def _divide_complex(d, zeta):
    """Second synthetic division: quotient coefficients of per-point complex series.

    ``d`` has shape (n, m) (a series per point); returns the quotient of
    ``(q(s) - q(zeta))/(s - zeta)`` per point and ``q(zeta)``.
    """
    n, m = d.shape
    if n == 1:
        return np.zeros((1, m), dtype=complex), d[0].copy()
    e = np.zeros((n + 1, m), dtype=complex)
    e[n - 2] = 2.0 * d[n - 1]
    for mm in range(n - 2, 1, -1):
        e[mm - 1] = 2.0 * (d[mm] + zeta * e[mm]) - e[mm + 1]
    if n >= 3:
        e[0] = d[1] + zeta * e[1] - e[2] / 2.0
    else:
        e[0] = d[1]
    value = d[0] - e[1] / 2.0 + zeta * e[0]
    return e[:n - 1], value


# --------------------------------------------------------------------------- #
# Panels
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class PanelMap:
    """Map from the panel variable ``sigma`` in ``[-1, 1]`` to ``x`` in ``[lo, hi]``.

    ``kind`` is ``"left"`` (edge at ``lo``: ``x = lo + w s**p``,
    ``s = (1 + sigma)/2``), ``"right"`` (edge at ``hi``: ``x = hi - w s**p``,
    ``s = (1 - sigma)/2``) or ``"smooth"`` (``x`` linear in ``sigma``);
    ``x`` increases with ``sigma`` in every kind (theory eq. (8.14)).
    """

    lo: float
    hi: float
    kind: str
    power: int = 1

    @property
    def width(self):
        return self.hi - self.lo

    def x_of(self, sigma):
        w, p = self.width, self.power
        if self.kind == "left":
            return self.lo + w * ((1.0 + sigma) / 2.0) ** p
        if self.kind == "right":
            return self.hi - w * ((1.0 - sigma) / 2.0) ** p
        return self.lo + w * (1.0 + sigma) / 2.0

    def sigma_of(self, x):
        """Inverse of :meth:`x_of` (``x`` clipped to the panel)."""
        w, p = self.width, self.power
        x = np.clip(x, self.lo, self.hi)
        if self.kind == "left":
            s = (x - self.lo) / w
            return 2.0 * (s if p == 1 else s ** (1.0 / p)) - 1.0
        if self.kind == "right":
            s = (self.hi - x) / w
            return 1.0 - 2.0 * (s if p == 1 else s ** (1.0 / p))
        return 2.0 * (x - self.lo) / w - 1.0

    def s_of(self, x):
        """Distance variable ``s`` in ``[0, 1]`` of an edge map (``x - lo = w s**p`` for a
        left map), computed from ``x`` directly so that it keeps its relative
        precision next to the edge (``sigma = 2 s - 1`` rounds to ``-1`` there)."""
        w, p = self.width, self.power
        x = np.clip(x, self.lo, self.hi)
        d = (x - self.lo) / w if self.kind == "left" else (self.hi - x) / w
        return d if p == 1 else d ** (1.0 / p)

    def dx_ds_half(self, s):
        """``dx/dsigma = (w p / 2) s**(p - 1)`` as a function of ``s`` (edge maps)."""
        return self.width * self.power / 2.0 * s ** (self.power - 1)

    def dx_dsigma(self, sigma):
        w, p = self.width, self.power
        if self.kind == "left":
            return w * p / 2.0 * ((1.0 + sigma) / 2.0) ** (p - 1)
        if self.kind == "right":
            return w * p / 2.0 * ((1.0 - sigma) / 2.0) ** (p - 1)
        return np.full(np.shape(sigma), w / 2.0)

    def roots(self, z):
        """Panel-variable points ``sigma_k`` with ``x(sigma_k) = z`` and their weights.

        Returns ``(sigma, weight)`` of shape (p, m) such that
        ``1/(z - x(sigma)) = sum_k weight_k / (sigma - sigma_k)`` (partial
        fractions of ``1/(zeta**p - s**p)``; theory eq. (8.16)), and the
        ends ``(1 - sigma_k, -1 - sigma_k)`` computed from ``z`` without
        cancellation: with ``s**p = (z - lo)/w`` (left map),
        ``1 - s = ((hi - z)/w) / (1 + s + ... + s**(p-1))``.
        """
        w, p = self.width, self.power
        z = np.asarray(z, dtype=complex)
        from_lo = (z - self.lo) / w
        from_hi = (self.hi - z) / w
        if self.kind == "smooth":
            sig = 2.0 * from_lo - 1.0
            ends = ((2.0 * from_hi)[None, :], (-2.0 * from_lo)[None, :])
            return sig[None, :], np.full((1, z.size), -2.0 / w, dtype=complex), ends
        base, other = (from_lo, from_hi) if self.kind == "left" else (from_hi, from_lo)
        zeta = _principal_root(base, p)
        omega = np.exp(2j * np.pi * np.arange(p) / p)
        s = zeta[None, :] * omega[:, None]
        one_minus_s = 1.0 - s
        # For the principal root (the one on the panel) 1 - s cancels next to the
        # panel's far end; there 1 - s = (1 - s**p)/(1 + s + ... + s**(p-1)).
        geometric = sum(s[0] ** j for j in range(p))
        with np.errstate(divide="ignore", invalid="ignore"):
            one_minus_s[0] = np.where(np.abs(geometric) > 0.5, other / geometric, 1.0 - s[0])
        weight = -2.0 / (w * p) * s ** (1 - p)
        if self.kind == "left":
            sig = 2.0 * s - 1.0
            ends = (2.0 * one_minus_s, -2.0 * s)
        else:
            sig = 1.0 - 2.0 * s
            ends = (2.0 * s, -2.0 * one_minus_s)
        # A real z inside the panel is z + i0: the root on [-1, 1] moves up with z.
        real = (z.imag == 0)[None, :] & (sig.imag == 0)
        sig = np.where(real, sig.real + 0j, sig)
        return sig, weight, ends


def _principal_root(base, p):
    """``base**(1/p)`` with the principal branch, ``+0`` imaginary part kept."""
    if p == 1:
        return base
    if p == 2:
        return np.sqrt(base)
    return base ** (1.0 / p)


class Panel:
    """The Chebyshev series of ``g(sigma) = f(x(sigma)) dx/dsigma`` on one panel.

    Attributes
    ----------
    map : PanelMap
    coef : ndarray
        Chebyshev coefficients of ``g`` (chopped).
    cum : ndarray
        Coefficients of ``int_{-1}^{sigma} g`` (the CDF within the panel).
    mass : float
        ``int_{-1}^{1} g``.
    error : float
        Estimated absolute error of ``mass`` (coefficient tail times 2).
    lead : int
        ``g ~ s**lead`` at the panel's edge (0 for smooth panels).
    lo_exponent, hi_exponent : Fraction or None
        Density exponent at each end that is an edge of the support.
    """

    def __init__(self, pmap, coef, tail, lead, lo_exponent=None, hi_exponent=None):
        self.map = pmap
        self.coef = coef
        self.cum = integral_coefficients(coef)
        self.mass = float(np.sum(self.cum))                  # the value at sigma = 1
        self.error = 2.0 * tail * float(np.abs(coef).max(initial=0.0))
        #: Accepted at a floor above the rounding of its abscissae (eq. (8.38)).
        self.plateau = False
        self.lead = lead
        self.lo_exponent = lo_exponent
        self.hi_exponent = hi_exponent
        self._coef_list = self._cum_list = None
        self._inverse = None
        self._quad = {}                   # extra -> (nodes, weights) of quadrature()
        self._far = None                  # far_rule(coef), for cauchy()

    @property
    def coef_list(self):
        """``coef`` as Python floats, for the scalar Clenshaw recurrence (built on first use)."""
        if self._coef_list is None:
            self._coef_list = self.coef.tolist()
        return self._coef_list

    @property
    def cum_list(self):
        """``cum`` as Python floats (built on first use)."""
        if self._cum_list is None:
            self._cum_list = self.cum.tolist()
        return self._cum_list

    def edge_limit(self, end):
        """``lim |x - e|**(-eta) f(x)`` at the panel's end ``end = -1`` or ``1``.

        With ``|x - e| = w s**p`` and ``g = f dx/dsigma`` finite there, the limit
        is ``2 g(end) / (p w**(1/p))`` (theory eq. (8.14)); ``2 g / w`` on a
        smooth panel (``p = 1``).
        """
        m = self.map
        g = float(_cheb.chebval(end, self.coef))
        return 2.0 * g / (m.power * m.width ** (1.0 / m.power))

    def mapped(self, shift, scale):
        """This panel for ``shift + scale * X`` (theory eq. (8.7)), or None for a log end.

        ``g = f dx/dsigma`` is unchanged by the map (``f_y = f_x/|scale|``,
        ``dy = |scale| dx``); a negative scale reverses ``sigma``, which flips
        the odd coefficients and swaps the panel's ends.
        """
        m = self.map
        if m.kind == "logend":
            return None
        tail = self.error / (2.0 * max(float(np.abs(self.coef).max(initial=0.0)), _TINY))
        if scale > 0:
            pm = PanelMap(shift + scale * m.lo, shift + scale * m.hi, m.kind, m.power)
            return Panel(pm, self.coef.copy(), tail, self.lead, self.lo_exponent,
                         self.hi_exponent)
        kind = {"left": "right", "right": "left"}.get(m.kind, m.kind)
        pm = PanelMap(shift + scale * m.hi, shift + scale * m.lo, kind, m.power)
        coef = self.coef * (-1.0) ** np.arange(self.coef.size)
        return Panel(pm, coef, tail, self.lead, self.hi_exponent, self.lo_exponent)

    @property
    def lo(self):
        return self.map.lo

    @property
    def hi(self):
        return self.map.hi

    # -- evaluation ---------------------------------------------------------------
    def density(self, x):
        """``f(x) = g(sigma)/(dx/dsigma)`` at points of the panel.

        On an edge panel the Jacobian is taken from ``s`` computed from ``x``
        (:meth:`PanelMap.s_of`), so the density keeps its relative accuracy at
        ``x - lo`` far below ``eps * width`` (``sigma`` itself rounds to ``-1``).
        """
        if self.map.kind == "logend":
            return self._log_end_density(x)
        if self.map.kind not in ("left", "right"):
            sig = self.map.sigma_of(x)
            g = _cheb.chebval(sig, self.coef)
            with np.errstate(divide="ignore", invalid="ignore"):
                f = g / self.map.dx_dsigma(sig)
            return np.maximum(np.where(np.isfinite(f), f, 0.0), 0.0)
        sv = self.map.s_of(x)
        sig = 2.0 * sv - 1.0 if self.map.kind == "left" else 1.0 - 2.0 * sv
        g = _cheb.chebval(sig, self.coef)
        dx = self.map.dx_ds_half(sv)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = g / dx
        edge = dx == 0
        if edge.any():
            f = np.where(edge, self._edge_value(sig), f)
        return np.maximum(f, 0.0)

    def _log_end_density(self, x):
        """Density on a log-end panel (eq. (8.18)), the Jacobian from ``x - e`` itself
        (no underflow of ``x(sigma)``); ``inf`` at the end."""
        m = self.map
        x = np.asarray(x, dtype=float)
        u = m.u_at(x)
        sig = 2.0 * (u - m.u_lo) / (m.u_hi - m.u_lo) - 1.0
        g = _cheb.chebval(sig, self.coef)
        d = x - m.end
        with np.errstate(divide="ignore", invalid="ignore"):
            f = g / m._jacobian(d, u)
        return np.maximum(np.where(d > 0, f, np.inf), 0.0)

    def _edge_value(self, sig):
        """Density exactly at an edge end of the panel: 0, inf or the finite limit."""
        exponent = self.lo_exponent if self.map.kind == "left" else self.hi_exponent
        if exponent is None or exponent > 0:
            return np.zeros_like(sig)
        if exponent < 0:
            return np.full_like(sig, np.inf)
        return np.zeros_like(sig)

    def cdf(self, x):
        """Mass of ``[lo, x]`` within the panel."""
        sig = self.map.sigma_of(x)
        return np.clip(_cheb.chebval(sig, self.cum), 0.0, self.mass)

    # -- quantiles ------------------------------------------------------------------
    def _rho_of(self, t):
        """Inverse-interpolant variable for a mass ``t`` within the panel."""
        r = np.clip(t / self.mass, 0.0, 1.0)
        k = self.lead
        if self.map.kind == "left" and k > 0:
            return r ** (1.0 / (k + 1))
        if self.map.kind == "right" and k > 0:
            return 1.0 - np.clip((self.mass - t) / self.mass, 0.0, 1.0) ** (1.0 / (k + 1))
        return r

    def _solve_cdf(self, t, lo=None, hi=None, max_iter=80):
        """Safeguarded Newton for ``cdf(sigma) = t`` on ``[-1, 1]`` (vectorized)."""
        t = np.asarray(t, dtype=float)
        lo = np.full(t.shape, -1.0) if lo is None else lo.copy()
        hi = np.full(t.shape, 1.0) if hi is None else hi.copy()
        s = 0.5 * (lo + hi)
        active = np.arange(t.size)
        for _ in range(max_iter):
            sa = s[active]
            f = _cheb.chebval(sa, self.cum) - t[active]
            lo[active] = np.where(f < 0, sa, lo[active])
            hi[active] = np.where(f >= 0, sa, hi[active])
            g = _cheb.chebval(sa, self.coef)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = sa - f / g
            ok = np.isfinite(newton) & (newton > lo[active]) & (newton < hi[active])
            new = np.where(ok, newton, 0.5 * (lo[active] + hi[active]))
            s[active] = new
            active = active[np.abs(new - sa) > 4 * np.finfo(float).eps]
            if active.size == 0:
                return s
        k = int(active[0])
        raise ConvergenceError(
            f"CDF inversion on the panel [{self.lo!r}, {self.hi!r}] did not converge in "
            f"{max_iter} steps (target mass {t[k]!r})", point=float(t[k]), iterations=max_iter)

    def _build_inverse(self, options):
        """Chebyshev series of ``sigma`` as a function of ``rho`` (eq. (8.15))."""
        if self.mass <= 0:
            self._inverse = np.array([-1.0])
            return
        n = options.cheb_start_nodes
        values = None
        while True:
            tau = first_kind_nodes(n)
            rho = (1.0 + tau) / 2.0
            new = np.ones(n, dtype=bool) if values is None else (np.arange(n) % 3 != 1)
            vals = np.empty(n)
            if values is not None:
                vals[~new] = values
            k = self.lead
            if self.map.kind == "left" and k > 0:
                target = self.mass * rho[new] ** (k + 1)
            elif self.map.kind == "right" and k > 0:
                target = self.mass - self.mass * (1.0 - rho[new]) ** (k + 1)
            else:
                target = self.mass * rho[new]
            vals[new] = self._solve_cdf(target, max_iter=options.ppf_max_iter)
            values = vals
            coef = nodes_coefficients(values)
            tail = _tail(coef)
            # One Newton step follows the interpolant (quadratic: 1e-9 -> 1e-18), so
            # the inverse needs INVERSE_TAIL_RTOL only; its samples carry the CDF
            # series' ulp noise amplified near an edge, a floor around 1e-10.
            if tail <= INVERSE_TAIL_RTOL or n >= options.cheb_max_nodes:
                self._inverse = _chop(coef, INVERSE_TAIL_RTOL / 10)
                return
            n *= 3

    def quantile(self, t, options):
        """``x`` with panel mass ``t`` below it: inverse interpolant, one Newton step."""
        if self._inverse is None:
            self._build_inverse(options)
        rho = self._rho_of(t)
        sig = _cheb.chebval(2.0 * rho - 1.0, self._inverse)
        sig = np.clip(sig, -1.0, 1.0)
        f = _cheb.chebval(sig, self.cum) - t
        g = _cheb.chebval(sig, self.coef)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = f / g
        ok = np.isfinite(step) & (np.abs(step) < 1e-3)
        sig = np.clip(np.where(ok, sig - step, sig), -1.0, 1.0)
        return self.map.x_of(sig)

    # -- quadrature and Cauchy integrals ----------------------------------------------
    def quadrature(self, extra=0):
        """Gauss-Legendre nodes ``x`` and weights ``f(x) dx`` on the panel.

        Exact for ``phi(x) f(x)`` when ``phi(x(sigma))`` is a polynomial of
        degree ``<= extra`` in ``sigma`` (plus rounding).
        """
        if extra not in self._quad:
            n = (self.coef.size + extra) // 2 + 2
            t, wt = gauss_legendre(n)
            x, w = self.map.x_of(t), wt * _cheb.chebval(t, self.coef)
            x.setflags(write=False)
            w.setflags(write=False)
            self._quad[extra] = (x, w)
        return self._quad[extra]

    def cauchy(self, z, derivative=False):
        """``int f(x)/(z - x) dx`` over the panel (and its ``z``-derivative).

        A log-end panel (eq. (8.18)) is integrated by Gauss-Legendre quadrature
        in its variable with ``LOG_END_CAUCHY_EXTRA`` nodes beyond half its
        degree: exact to rounding for ``z`` away from the panel (its map has an
        essential singularity at the end, so there is no singularity
        subtraction); laws with a log end supply their own transform near it.
        """
        if self.map.kind == "logend":
            return self._log_end_cauchy(z, derivative, LOG_END_CAUCHY_EXTRA)
        sig, weight, ends = self.map.roots(z)
        total = np.zeros(z.shape, dtype=complex)
        dtotal = np.zeros(z.shape, dtype=complex) if derivative else None
        for k in range(sig.shape[0]):
            e = (ends[0][k], ends[1][k])
            if self._far is None:
                self._far = far_rule(self.coef)
            if derivative:
                c, dc = cauchy_integral(self.coef, sig[k], derivative=True, ends=e,
                                        rule=self._far)
                total += weight[k] * c
                dtotal += self._dweight(z, sig[k], weight[k], c, dc)
            else:
                total += weight[k] * cauchy_integral(self.coef, sig[k], ends=e, rule=self._far)
        return (total, dtotal) if derivative else total

    def _log_end_cauchy(self, z, derivative, extra):
        x, w = self.quadrature(extra)
        d = np.asarray(z, dtype=complex)[:, None] - x[None, :]
        total = (w[None, :] / d).sum(axis=1)
        return (total, -(w[None, :] / d ** 2).sum(axis=1)) if derivative else total

    def cauchy_error(self, z, value, deriv):
        """Estimated errors of :meth:`cauchy`'s ``value`` and ``deriv`` at ``z``.

        A log-end panel's quadrature is compared with a rule of about
        ``LOG_END_CHECK_FACTOR`` times as many nodes (theory section 8.9): the
        difference estimates the coarse rule's error where the finer one has
        converged.  Other panels are integrated to rounding (eqs. (8.16),
        (8.28)): zero.
        """
        z = np.asarray(z, dtype=complex)
        if self.map.kind != "logend":
            return np.zeros(z.shape), np.zeros(z.shape)
        n = self.coef.size
        extra = LOG_END_CHECK_FACTOR * (n + LOG_END_CAUCHY_EXTRA) - n
        f, df = self._log_end_cauchy(z, True, extra)
        return np.abs(value - f), np.abs(deriv - df)

    def _dweight(self, z, sig, weight, c, dc):
        """``d/dz [weight(z) C(sigma_k(z))]`` for one partial-fraction term."""
        m = self.map
        p, w = m.power, m.width
        if m.kind == "smooth":
            return weight * dc * (2.0 / w)
        s = (1.0 + sig) / 2.0 if m.kind == "left" else (1.0 - sig) / 2.0
        ds = 1.0 / (w * p * s ** (p - 1))
        if m.kind == "right":
            ds = -ds
        dsig = 2.0 * ds if m.kind == "left" else -2.0 * ds
        dweight = weight * (1 - p) / s * ds
        return dweight * c + weight * dc * dsig


# --------------------------------------------------------------------------- #
# Building
# --------------------------------------------------------------------------- #

class _Task:
    """A panel being fitted: its map, the node count so far and the samples."""

    def __init__(self, pmap, lead, exponents, depth, floor, options, zero_scale=None):
        self.map, self.lead, self.exponents = pmap, lead, exponents
        self.depth, self.floor = depth, floor
        #: For a density known to an absolute accuracy: the scale whose rounding an
        #: edge at 0 is sampled with (None: relative accuracy there, theory eq. (8.14)).
        self.zero_scale = zero_scale
        self.n = options.cheb_start_nodes
        #: Factor of the last growth of ``n`` (3 or 9): the old nodes are every
        #: ``growth``-th new one.
        self.growth = 3
        #: Quarterings of the next split, for an edge panel at 0.
        self.zero_levels = EDGE_SPLIT_LEVELS
        self.values = None
        #: ``sigma(x_k) - sigma_k`` of every node's rounded abscissa (edge maps at e != 0).
        self.shift = None
        self.prev_tail = np.inf
        #: The coefficients of the fit at ``n / 3`` nodes (before the last tripling).
        self.prev_coef = None
        # a log-end panel converges at the stated accuracy of its samples (eq. (8.18))
        self.tail_rtol = options.cheb_tail_rtol
        if pmap.kind == "logend":
            self.tail_rtol = max(self.tail_rtol, exponents[0].sample_rtol)

    def new_nodes(self):
        sig = first_kind_nodes(self.n)
        if self.values is None:
            return sig, np.ones(self.n, dtype=bool)
        # the nodes of n are nodes k = g j + (g - 1)/2 of g n (g = 3 or 9)
        return sig, np.arange(self.n) % self.growth != self.growth // 2

    def sample(self, new):
        """Abscissae, ``dx/dsigma`` and shifts of the new nodes (the shifts are None
        where they are 0).

        On an edge map at ``e != 0`` the abscissae are formed from ``s`` by
        half-angle formulas (``1 + sigma`` would keep only ``eps/s`` of ``s``)
        and ``shift`` is ``sigma`` of the rounded ``x`` minus the node: next to a
        singular edge the samples would otherwise carry ``eps |e| / (x - e)``
        (theory eq. (8.14)), which cost the arcsine on ``[-1.96, -0.23]`` 5e-9
        of its mass.
        """
        m = self.map
        sig = first_kind_nodes(self.n)[new]
        edge = m.lo if m.kind == "left" else m.hi
        if m.kind not in ("left", "right") or (edge == 0.0 and self.zero_scale is None):
            return m.x_of(sig), m.dx_dsigma(sig), None
        theta = _node_angles(self.n)[0][new]
        s = np.cos(theta / 2) ** 2 if m.kind == "left" else np.sin(theta / 2) ** 2
        x = m.lo + m.width * s ** m.power if m.kind == "left" else m.hi - m.width * s ** m.power
        if edge == 0.0:
            # an edge at 0 of a density known to an absolute accuracy is sampled as
            # an edge at e != 0 is: on the float grid of the law's scale
            x = (self.zero_scale + x) - self.zero_scale
        x = np.clip(x, m.lo, m.hi)
        s_r = m.s_of(x)
        return x, m.dx_ds_half(s_r), (2.0 if m.kind == "left" else -2.0) * (s_r - s)

    def panel(self, coef, tail):
        m = self.map
        lo_exp = self.exponents[0] if m.kind == "left" else None
        hi_exp = self.exponents[1] if m.kind == "right" else None
        return Panel(m, coef, tail, self.lead, lo_exp, hi_exp)

    def sliver(self):
        """A panel at most ``floor`` wide and not at a singular edge: kept, not split
        (theory eq. (8.14))."""
        m = self.map
        at_singular_edge = (m.kind == "left" and self.exponents[0] is not None
                            and self.exponents[0] < 0) or (
            m.kind == "right" and self.exponents[1] is not None and self.exponents[1] < 0)
        return not at_singular_edge and m.hi - m.lo <= self.floor

    def children(self, options):
        if self.depth + 1 > options.panel_max_depth:
            raise ConvergenceError(
                f"Chebyshev panels did not converge on [{self.map.lo!r}, {self.map.hi!r}] after "
                f"{self.depth} splits (tail above {options.cheb_tail_rtol:.1e} with "
                f"{options.cheb_max_nodes} nodes)", point=(self.map.lo, self.map.hi),
                iterations=self.depth)
        m, d = self.map, self.depth + 1
        args = (self.exponents, d, self.floor, options, self.zero_scale)
        lo, hi = m.lo, m.hi
        if m.kind == "logend":
            # halve the u range: both halves stay in the variable of eq. (8.18)
            cut = float(m.x_of(0.0))
            return [_Task(LogEndMap.between(m.end, m.c, lo, cut), 0, *args),
                    _Task(LogEndMap.between(m.end, m.c, cut, hi), 0, *args)]
        if m.kind in ("left", "right"):
            # EDGE_SPLIT_LEVELS quarterings at once towards an edge at 0, where a
            # narrow panel's abscissae keep their relative accuracy; elsewhere one
            # (the samples of a panel of width w next to e carry eps |e| / w, and
            # the arcsine's edge panels at +-2 missed 6e-9 of mass when narrower).
            # A split edge panel at 0 that fails again splits twice as deep (up to
            # EDGE_SPLIT_MAX_LEVELS): the attention law at beta = 1e-8 grades 25
            # decades down in 3 such splits instead of 7 (3 rounds of solves each).
            at_zero = (lo if m.kind == "left" else hi) == 0.0 and self.zero_scale is None
            levels = self.zero_levels if at_zero else 1
            offsets = [0.0] + [(hi - lo) / 4 ** k for k in range(levels, 0, -1)]
            offsets.append(hi - lo)
            if m.kind == "left":
                cuts = [lo + o for o in offsets[:-1]] + [hi]
                edge, rest = 0, range(1, len(cuts) - 1)
            else:
                cuts = [lo] + [hi - o for o in offsets[-2:0:-1]] + [hi]
                edge, rest = len(cuts) - 2, range(0, len(cuts) - 2)
            out = [_Task(PanelMap(cuts[edge], cuts[edge + 1], m.kind, m.power), self.lead, *args)]
            if at_zero:
                out[0].zero_levels = min(2 * levels, EDGE_SPLIT_MAX_LEVELS)
            out += [_Task(PanelMap(cuts[j], cuts[j + 1], "smooth", 1), 0, *args) for j in rest]
        elif lo == 0.0 and self.zero_scale is None and hi > 0.0:
            # A smooth panel at an edge at 0 (a finite density there, as the singular
            # values' 2 s f(s**2) over a hard edge x**(-1/2)) grades towards 0 as an
            # edge panel does: halving it took one round of solves per octave (30
            # rounds for the attention law's singular values at beta = 1e-8, whose
            # density has a crossover at 1e-17 of its support).
            levels = self.zero_levels
            cuts = [lo] + [hi / 4 ** k for k in range(levels, 0, -1)] + [hi]
            out = [_Task(PanelMap(u, v, "smooth", 1), 0, *args)
                   for u, v in zip(cuts[:-1], cuts[1:])]
            out[0].zero_levels = min(2 * levels, EDGE_SPLIT_MAX_LEVELS)
        else:
            mid = 0.5 * (lo + hi)
            out = [_Task(PanelMap(lo, mid, "smooth", 1), 0, *args),
                   _Task(PanelMap(mid, hi, "smooth", 1), 0, *args)]
        # The children of a panel that failed at n nodes start at min(n, 81): their
        # fits are as hard as the parent's (a graded edge is self-similar), and
        # starting at 9 costs a round of solves per split for the same 81 nodes.
        start = max(min(self.n, SPLIT_START_NODES), options.cheb_start_nodes)
        for t in out:
            t.n = start
        # a cut at the rounding of the ends leaves a panel of width 0 (mass 0)
        return [t for t in out if t.map.hi > t.map.lo]


#: Most panels a representation may use (:func:`_fit_all`).  Laws of the
#: library need 2-31, and 208 next to a cusp (the attention law at ``gamma =
#: 0.3`` within 1e-6 of the ``beta`` where its support splits, tests/test_laws.py);
#: a density whose samples never converge would otherwise split every panel to
#: ``panel_max_depth`` (the multi-head law at ``beta = 0.02`` ran for 8 minutes
#: before failing).
PANEL_BUDGET = 1024
#: :meth:`Representation.pdf` evaluates the points of the edge and smooth panels
#: holding at most this many of them in one padded Clenshaw recurrence (fewer
#: calls where each panel's own would be dominated by its per-call cost; a panel
#: with more points keeps its own series, whose scalar coefficients need no
#: per-point copy)
BATCH_PANEL_POINTS = 1024
#: ... when that recurrence's length times its points is at most this many times
#: the panels' own lengths times their points (one panel of a long series among
#: short ones keeps the per-panel loop).
BATCH_PAD_FACTOR = 2.0

#: The samples of a panel carry the rounding of their own abscissae: at
#: distance ``d`` from an edge or a cusp, ``f(x)`` is known to a relative
#: ``eps |x| / d`` at best, and a panel of width ``w ~ d`` is what resolves the
#: density there.  A tail that no longer shrinks on tripling and lies below
#: this factor times ``eps max(|lo|, |hi|) / w`` is that floor (theory
#: eq. (8.14)); it matters only for panels narrower than about ``1e-5 |x|``
#: (edges of a gap of relative width ``4e-10``: the attention law at
#: ``beta = 1e-3`` beside its support split).
ROUNDING_FLOOR_FACTOR = 64
#: ... but never a tail above this: a panel that noisy is split instead (the
#: arcsine's edge panel of width 3e-11 at 2 would otherwise keep a tail of 1e-3
#: and miss 6e-9 of mass).
ROUNDING_FLOOR_MAX = 1e-6
#: A split panel of a density known to an absolute rounding ``eps S`` whose bound
#: ``eps S / w`` exceeds this raises instead (:func:`_check_resolved`, theory section
#: 14.63).  The bound is pessimistic: a child at 1.26e-6 converged (the depth-4
#: campaign's seed 94 / draw 14, representation error 2.7e-6), while the splits of seed
#: 49 / draw 29 of depth 2 went on to panels 6e-17 wide (bound 129) for over 60 s; at
#: this margin that law raises in 2.5 s.
SPLIT_RESOLUTION_MAX = 1e-4
#: A tail confirmed as a floor by a tripling (it no longer shrinks) is accepted up to
#: this many times the floor above (never above ``ROUNDING_FLOOR_MAX``): a density
#: solved by Newton carries the rounding of its subordination point amplified by the
#: conditioning there, a few hundred ulps of ``x`` rather than 64 (the sum of the
#: depth-3 campaign's seed 55 / draw 44, with a band 3.4e-5 wide at 3.65, plateaued at
#: 3.4 times the floor and split its panels down to 1e-13 wide: 778 panels, 215 s;
#: theory eq. (8.38)).
PLATEAU_FLOOR_FACTOR = 8.0

#: A gap narrower than this fraction of the half-interval beside it is a support
#: about to split: the edge's square-root behaviour is confined to a few gaps
#: (a feature at ``s ~ sqrt(gap / w)`` of the edge map, below the spacing of
#: 243 first-kind nodes once ``gap / w < 1e-8``), so the panels are graded
#: towards the edge (:func:`_graded_cuts`).  Wider gaps are resolved by the
#: adaptive splitting.
NEAR_SPLIT_RTOL = 1e-6
#: Spacings of ``e`` between a float singular edge and the true one that the
#: mass check allows for (:func:`_edge_allowance`): half a spacing from the
#: correctly rounded edge, and the rest for an edge computed to a few ulps.
EDGE_ALLOWANCE_SPACINGS = 4.0

#: Relative error of a density computed to an absolute rounding ``eps * S`` of ``x`` on a
#: band of width ``W``, in units of ``eps * S / W`` (eq. (8.30)): the subordination
#: point's offset from the band keeps that many digits fewer (measured 3 on a sum of
#: an attention law at beta = 0.006 and three atoms: bands of 4e-5 ... 2e-4 at |x| ~ 3,
#: mass 2.2e-11 off).
NARROW_BAND_GAIN = 16.0
#: Quarterings of an edge panel at 0 in one split (:meth:`_Task.children`):
#: each round of samples is a solver call, and an edge panel there that does
#: not converge usually needs many (the attention law at ``beta = 1e-8``
#: grades down to 1.7e-25 of its support, a crossover of its ``x**(-1/2)``
#: edge); 6 against 1 cut its new law + pdf on 10**4 points from 14 C to 4.5 C.
EDGE_SPLIT_LEVELS = 6
#: Most quarterings of one split there (each later split doubles them).
EDGE_SPLIT_MAX_LEVELS = 24
#: Most nodes a split's children start with (:meth:`_Task.children`).
SPLIT_START_NODES = 81
#: Fewest nodes whose tail predicts a failure at ``cheb_max_nodes`` (a split
#: before the last tripling, :func:`_fit_all`).
EARLY_SPLIT_MIN_NODES = 27
#: Nodes of every panel's first fit for a law whose density solver costs more per
#: call than per point (a law's ``_first_panel_nodes``, theory eq. (8.14)): a
#: round of the rational tower's solves costs ~1 ms of fixed overhead and ~3 us
#: per point, and the panels of such laws converge at 19-45 nodes, so one round
#: at 81 replaces the rounds at 9 and 81 (27); the analytic laws of populations
#: and computed constituents, at 10-50 us per point, keep ``cheb_start_nodes``.
CHEAP_SOLVER_START_NODES = 81
#: Fewest nodes of a first fit (a panel started at more than
#: ``cheb_start_nodes``: a split's children, or a law's ``start_nodes``) whose
#: floor tests read the fit at a third of the nodes from its own samples.
FIRST_FIT_FLOOR_NODES = 27
#: Fewest nodes at which a flat last half of the coefficients below
#: ``cheb_noise_rtol`` is taken for the rounding floor without a tripling
#: (:func:`_plateau`): the plateau then spans at least 40 coefficients.
PLATEAU_MIN_NODES = 81
#: The last half of a fit's coefficients is a plateau when the largest of its
#: first half (the third quarter) is at most this times the largest of the last
#: quarter (the maxima of two blocks of rounding noise differ by up to 2.5 in
#: the attention law's panels beside its support split).  An algebraic decay
#: ``k**-q`` has the ratio ``1.5**q``: 4 admits ``q <= 3.4``, whose tail at 81
#: nodes is below ``cheb_noise_rtol = 1e-10`` only for a component below
#: ``1e-4`` of the largest coefficient.
PLATEAU_RATIO = 4.0
#: Width of the edge panel beside a narrow gap, in gaps.
NEAR_SPLIT_EDGE_GAPS = 16.0
#: Ratio of successive panel widths away from such an edge.
NEAR_SPLIT_GROWTH = 4.0


def _fit_all(density, tasks, options, log_density=None):
    """Fit every panel, all panels' new nodes in one density call per round.

    Each round samples the new nodes of every unfinished panel at once (the
    tripled first-kind nodes: those of ``n`` are nodes of ``3 n``), then each
    panel has converged (tail below ``cheb_tail_rtol``, or a rounding floor
    below ``cheb_noise_rtol`` that no longer shrinks), is tripled, or -- at
    ``cheb_max_nodes`` -- is split (theory eq. (8.14)).
    """
    done = []
    while tasks:
        pieces, xs, logs = [], [], []
        for task in tasks:
            sig, new = task.new_nodes()
            jac = shift = None
            if task.map.kind == "logend":
                logs.append(task.map.log_distance(sig[new]))
            else:
                x, jac, shift = task.sample(new)
                xs.append(x)
            pieces.append((sig, new, jac, shift))
        x = np.concatenate(xs) if xs else np.empty(0)
        dens = np.asarray(density(x), dtype=float) if x.size else np.empty(0)
        _check_finite(dens, x, "x")
        t = np.concatenate(logs) if logs else np.empty(0)
        # log-end nodes: (x - e) f(x) as a function of log(x - e) (eq. (8.18))
        end_dens = np.asarray(log_density(t), dtype=float) if t.size else np.empty(0)
        _check_finite(end_dens, t, "log(x - end)")
        pos = pos_end = 0
        following = []
        for task, (sig, new, jac, shift) in zip(tasks, pieces):
            cnt = int(new.sum())
            vals = np.empty(task.n)
            if task.values is not None:
                vals[~new] = task.values
            if task.map.kind == "logend":
                vals[new] = end_dens[pos_end:pos_end + cnt] * task.map.jacobian_factor(sig[new])
                pos_end += cnt
            else:
                vals[new] = dens[pos:pos + cnt] * jac
                pos += cnt
                if shift is not None:
                    full = np.zeros(task.n)
                    if task.shift is not None:
                        full[~new] = task.shift
                    full[new] = shift
                    task.shift = full
            task.values = vals
            coef = _shifted_coefficients(vals, task.shift)
            tail = _tail(coef)
            prev_tail, prev_coef = task.prev_tail, task.prev_coef
            if tail > task.tail_rtol and (task.growth == 9 or (
                    task.prev_coef is None and task.n % 3 == 0
                    and task.n >= FIRST_FIT_FLOOR_NODES)):
                # After a jump of 9, or at a first fit of many nodes: the fit at n/3
                # from the nodes of n/3 among those of n (no solve), so that the
                # floor tests compare one tripling.
                sub = slice(1, None, 3)
                prev_coef = _shifted_coefficients(
                    vals[sub], None if task.shift is None else task.shift[sub])
                prev_tail = _tail(prev_coef)
            floor = _noise_floor(task.map, options, task.zero_scale)
            if tail <= task.tail_rtol:
                done.append(task.panel(_chop(coef, options.cheb_tail_rtol / 4), tail))
            elif prev_tail <= floor and tail > prev_tail:
                # Tripling made it worse: the new nodes next to an edge e != 0 carry
                # more rounding (eps |e| / distance), so the fit at n/3, at the floor
                # already, is kept (splitting would only go nearer the edge).
                done.append(task.panel(_chop(prev_coef, prev_tail / 4), prev_tail))
            elif tail <= floor and tail > prev_tail / 8:
                # Rounding floor of the samples: no longer shrinking on tripling.
                done.append(task.panel(_chop(coef, tail / 4), tail))
            elif tail <= min(PLATEAU_FLOOR_FACTOR * floor, ROUNDING_FLOOR_MAX) and \
                    tail > prev_tail / 8:
                # The same, up to PLATEAU_FLOOR_FACTOR times the floor of the abscissae
                # (eq. (8.38)): the panel's error joins the mass check's allowance.
                panel = task.panel(_chop(coef, tail / 4), tail)
                panel.plateau = True
                done.append(panel)
            elif (task.n >= PLATEAU_MIN_NODES and tail <= options.cheb_noise_rtol
                  and _plateau(coef)):
                # The same floor seen within one fit: the coefficients stopped
                # decaying by half-way (a tripling would only add noise).
                done.append(task.panel(_chop(coef, tail / 4), tail))
            elif 3 * task.n <= options.cheb_max_nodes and not (
                    task.n >= EARLY_SPLIT_MIN_NODES and not task.sliver()
                    and tail ** (options.cheb_max_nodes / task.n) > task.tail_rtol):
                # (A tail whose geometric decay misses the tolerance even at
                # cheb_max_nodes is split now: a decay slower than geometric, as
                # next to an edge, only misses by more.)
                task.prev_tail, task.prev_coef = tail, coef
                # Geometric decay of the coefficients predicts a tail of tail**3 at
                # 3 n: where that still misses, 9 n nodes at once (one round of
                # solver calls fewer, eq. (8.14)).
                task.growth = 9 if (tail ** 3 > task.tail_rtol
                                    and 9 * task.n <= options.cheb_max_nodes) else 3
                task.n *= task.growth
                following.append(task)
            else:
                if task.sliver():
                    # A sliver next to a cusp: kept with its error estimate (eq. (8.14)).
                    done.append(task.panel(coef, tail))
                else:
                    children = task.children(options)
                    _check_resolved(children, task)
                    following.extend(children)
        tasks = following
        if len(done) + len(tasks) > PANEL_BUDGET:
            worst = max(tasks, key=lambda task: task.prev_tail)
            raise ConvergenceError(
                f"the density representation needs more than {PANEL_BUDGET} panels "
                f"({len(done)} converged, {len(tasks)} still splitting, e.g. "
                f"[{worst.map.lo!r}, {worst.map.hi!r}]): the density samples do not "
                f"converge to cheb_tail_rtol {options.cheb_tail_rtol:.1e} (eq. (8.14))",
                point=(worst.map.lo, worst.map.hi))
    done.sort(key=lambda p: p.lo)
    return done


def _check_resolved(children, parent):
    """Raise ``ConvergenceError`` where a split panel of a density known to an absolute
    rounding ``eps * zero_scale`` of ``x`` is narrower than that rounding resolves: the
    test of a whole band (eq. (8.30), :func:`build_representation`) applied to the
    pieces a split makes of it, with the margin ``SPLIT_RESOLUTION_MAX`` (theory section
    14.63).  Its samples then carry far more relative noise than any floor accepts, so
    each split would only make narrower and noisier panels, up to ``PANEL_BUDGET``."""
    for child in children:
        if child.zero_scale is None or child.map.kind == "logend":
            continue
        noise = band_rounding_noise(child.map.width, child.zero_scale)
        if noise > SPLIT_RESOLUTION_MAX:
            raise ConvergenceError(
                f"the density does not converge on [{parent.map.lo!r}, {parent.map.hi!r}] "
                f"(tail above {parent.tail_rtol:.1e}), and a split would make panels of "
                f"width {child.map.width:.3e}, narrower than the solver resolves: the "
                f"density is computed to {_EPS * child.zero_scale:.1e} of x, a relative "
                f"noise of {noise:.1e} > {SPLIT_RESOLUTION_MAX:.0e} (theory eq. (8.30), "
                f"section 14.63)", point=(parent.map.lo, parent.map.hi), residual=noise,
                tolerance=SPLIT_RESOLUTION_MAX)


def _shifted_coefficients(vals, shift):
    """Chebyshev coefficients of samples at the first-kind nodes (or, where ``shift``
    is nonzero, at ``sigma_k + shift_k``, moved to the nodes to first order: the
    shifts are a few ulps, so the slope needs few digits; theory eq. (8.14))."""
    coef = nodes_coefficients(vals)
    if shift is not None and np.any(shift):
        coef = nodes_coefficients(vals - nodes_derivative(coef) * shift)
    return coef


def _graded_cuts(a, b, side, gap):
    """Panel ends on ``[a, b]``, graded towards the edge beside a narrow gap (eq. (8.14)).

    ``side = -1``: the edge is ``a``, +1: ``b``.  Beside a gap of width ``gap``
    much narrower than the interval (a support about to split), the density
    is ``~ sqrt`` only within a few gaps of the edge and ``~ |x - e|**(1/3)``
    (the cusp it becomes) beyond: the edge panel spans ``NEAR_SPLIT_EDGE_GAPS``
    gaps and smooth panels grow by ``NEAR_SPLIT_GROWTH`` from it.  Otherwise
    ``[a, b]`` is one panel, as where the neighbouring band touches the edge (a gap
    of 0, which would grade without end).
    """
    if not 0.0 < gap < NEAR_SPLIT_RTOL * (b - a):
        return [a, b]
    width = NEAR_SPLIT_EDGE_GAPS * gap
    offsets = [0.0]
    while width < (b - a) / NEAR_SPLIT_GROWTH:
        offsets.append(width)
        width *= NEAR_SPLIT_GROWTH
    offsets.append(b - a)
    if side < 0:
        return [a + o for o in offsets[:-1]] + [b]
    return [a] + [b - o for o in offsets[-2::-1]]


def _noise_floor(pmap, options, zero_scale=None):
    """Largest tail accepted as the rounding floor of a panel's samples (eq. (8.14));
    for a density known to an absolute rounding ``eps * zero_scale`` of ``x``, at
    least that rounding over the panel's width (eq. (8.30))."""
    if pmap.kind == "logend":
        return options.cheb_noise_rtol
    scale = max(abs(pmap.lo), abs(pmap.hi), zero_scale or 0.0)
    floor = min(ROUNDING_FLOOR_FACTOR * _EPS * scale / pmap.width, ROUNDING_FLOOR_MAX)
    return max(options.cheb_noise_rtol, floor)


def _check_finite(values, points, name):
    """Raise ``ConvergenceError`` at the first non-finite density sample."""
    if values.shape != points.shape or not np.all(np.isfinite(values)):
        bad = ~np.isfinite(values) if values.shape == points.shape else np.ones(points.shape, bool)
        k = int(np.argmax(bad))
        raise ConvergenceError(f"density is not finite at {name}={points[k]!r} inside the support",
                               point=float(points[k]))


def build_representation(density, intervals, options, expected_mass=None, log_density=None,
                         zero_scale=None, start_nodes=None):
    """Panels for every support interval of a density.

    Parameters
    ----------
    density : callable
        ``density(x)`` for a 1-d float array of points strictly inside the
        support; returns the exact density there.
    intervals : sequence of Interval
        ``(lo, hi, lo_exponent, hi_exponent)``, increasing and disjoint.
    options : SolverOptions
    expected_mass : float, optional
        Mass of the continuous part; when given, a total mass that differs by
        more than ``options.mass_atol`` raises ``ConvergenceError``.
    log_density : callable, optional
        ``log_density(t)`` returns ``(x - e) f(x)`` at ``x = e + exp(t)`` for
        the lower end ``e`` of an interval whose ``lo_exponent`` is a
        :class:`LogEnd` (required for such intervals): the nodes of a log-end
        panel lie far below the float range next to ``e`` (eq. (8.18)).
    zero_scale : float, optional
        For a density computed to an absolute accuracy (a free additive
        convolution, whose solver resolves ``x`` to the rounding of its scale):
        an edge at 0 is then sampled on the float grid of ``zero_scale`` and
        given the mass allowance of such an edge, as an edge at ``e != 0`` is.
        By default an edge at 0 is sampled at relative accuracy (the
        scale-free laws with a hard edge there).
    start_nodes : int, optional
        Nodes of every panel's first fit (log-end panels excepted), at least
        ``options.cheb_start_nodes`` and at most ``options.cheb_max_nodes``:
        for a density whose solver costs more per call than per point, fewer
        rounds of calls at more nodes each (theory eq. (8.14)).  Default:
        ``options.cheb_start_nodes``.

    Returns
    -------
    Representation
    """
    if start_nodes is not None and not (isinstance(start_nodes, (int, np.integer))
                                        and start_nodes >= 1):
        raise ValueError(f"start_nodes must be a positive integer, got {start_nodes!r}")
    first = options.cheb_start_nodes if start_nodes is None else int(
        min(max(start_nodes, options.cheb_start_nodes), options.cheb_max_nodes))
    tasks = []
    for i, iv in enumerate(intervals):
        lo, hi = float(iv.lo), float(iv.hi)
        floor = options.panel_min_width_rtol * (hi - lo)
        exps = (iv.lo_exponent, iv.hi_exponent)
        if isinstance(exps[1], LogEnd):
            raise ValueError("a logarithmic end is supported at the lower end of an interval only")
        mid = 0.5 * (lo + hi)
        if isinstance(exps[0], LogEnd):
            if log_density is None:
                raise ValueError("an interval with a logarithmic end needs log_density")
            mid = lo + LOG_END_FRACTION * (hi - lo)
            tasks.append(_Task(LogEndMap.between(lo, LOG_END_SCALE_FACTOR * exps[0].scale, lo, mid),
                               0, exps, 0, floor, options, zero_scale))
            p_hi, k_hi = edge_power(exps[1])
            right = p_hi > 1 or k_hi != 0
            tasks.append(_Task(PanelMap(mid, hi, "right" if right else "smooth",
                                        p_hi if right else 1),
                               k_hi if right else 0, exps, 0, floor, options, zero_scale))
            continue
        p_lo, k_lo = edge_power(exps[0])
        p_hi, k_hi = edge_power(exps[1])
        left = p_lo > 1 or k_lo != 0
        right = p_hi > 1 or k_hi != 0
        gap_lo = lo - float(intervals[i - 1].hi) if i > 0 else np.inf
        gap_hi = float(intervals[i + 1].lo) - hi if i + 1 < len(intervals) else np.inf
        for a, b, side, gap in ((lo, mid, -1, gap_lo), (mid, hi, 1, gap_hi)):
            cuts = _graded_cuts(a, b, side, gap)
            for j, (u, v) in enumerate(zip(cuts[:-1], cuts[1:])):
                if not v > u:
                    continue            # a cut at the rounding of an edge (mass 0)
                at_edge = j == 0 if side < 0 else j == len(cuts) - 2
                edge = (left if side < 0 else right) and at_edge
                power, lead = (p_lo, k_lo) if side < 0 else (p_hi, k_hi)
                kind = ("left" if side < 0 else "right") if edge else "smooth"
                tasks.append(_Task(PanelMap(u, v, kind, power if edge else 1),
                                   lead if edge else 0, exps, 0, floor, options, zero_scale))
    for task in tasks:
        if task.map.kind != "logend":
            task.n = first
    if zero_scale is not None:
        # a density known to an absolute rounding of x (eq. (8.30)): a band of width W
        # carries eps * zero_scale / W of relative noise, which no fit takes for its
        # rounding floor beyond ROUNDING_FLOOR_MAX
        for iv in intervals:
            noise = band_rounding_noise(float(iv.hi) - float(iv.lo), zero_scale)
            if noise > ROUNDING_FLOOR_MAX:
                raise ConvergenceError(
                    f"the band [{float(iv.lo)!r}, {float(iv.hi)!r}] of width "
                    f"{float(iv.hi) - float(iv.lo):.3e} is narrower than the solver resolves: "
                    f"its density is computed to {_EPS * zero_scale:.1e} of x, a relative "
                    f"noise of {noise:.1e} > {ROUNDING_FLOOR_MAX:.0e} (theory eq. (8.30))",
                    residual=noise, tolerance=ROUNDING_FLOOR_MAX)
    rep = Representation(_fit_all(density, tasks, options, log_density))
    rep.edge_allowance = _edge_allowance(rep.panels, zero_scale) + _band_allowance(
        rep.panels, zero_scale) + sum(p.error for p in rep.panels if p.plateau)
    rep.error += rep.edge_allowance
    tol = options.mass_atol + rep.edge_allowance
    if expected_mass is not None and abs(rep.total - expected_mass) > tol:
        raise ConvergenceError(
            f"the density integrates to {rep.total!r} on its support where {expected_mass!r} "
            f"is expected (difference {rep.total - expected_mass:.3e} > mass_atol "
            f"{options.mass_atol:.1e} + edge allowance {rep.edge_allowance:.1e}); the "
            f"density solver or the support is off",
            residual=abs(rep.total - expected_mass), tolerance=tol)
    return rep


def band_rounding_noise(width, scale):
    """Relative noise ``eps * scale / width`` of a density computed to the absolute
    rounding of ``x`` at ``scale``, on a band of ``width`` (theory eq. (8.30))."""
    return _EPS * scale / width


def _band_allowance(panels, zero_scale):
    """Mass the absolute rounding of a density's solver leaves in narrow panels (eq. (8.30)).

    A solver that resolves ``x`` to ``eps * zero_scale`` (a free additive
    convolution) gives the density on a panel of width ``W`` (a band, or the
    graded panels next to an edge many decades below the scale) to a relative
    ``NARROW_BAND_GAIN * eps * zero_scale / W``; each panel's mass is allowed that
    fraction (0 without ``zero_scale``).
    """
    if zero_scale is None or not panels:
        return 0.0
    return sum(abs(p.mass) * NARROW_BAND_GAIN * _EPS * zero_scale / (p.hi - p.lo)
               for p in panels if p.hi > p.lo)


def _edge_allowance(panels, zero_scale=None):
    """Mass a float edge cannot place: ``c d**(1 + eta)/(1 + eta)`` at each singular edge.

    At an edge ``e`` with ``f ~ c |x - e|**eta``, ``eta = -1/p < 0`` (theory eq.
    (8.14)), the float edge is off the true one by up to half a spacing ``d``
    of ``e`` even when it is correctly rounded, and the mass between them,
    ``c d**(1 + eta)/(1 + eta)``, is ``4.7e-9`` for the arcsine at an edge
    ``+-2 + 1e-9`` (``c = 1/(2 pi)``): more than ``mass_atol``.  The allowance
    takes ``EDGE_ALLOWANCE_SPACINGS`` spacings; 0 at an edge at 0 (the
    spacings of ``zero_scale`` if given) and at every edge with ``eta >= 0``.
    """
    total = 0.0
    for panel in panels:
        m = panel.map
        for kind, eta, e, end in (("left", panel.lo_exponent, m.lo, -1.0),
                                  ("right", panel.hi_exponent, m.hi, 1.0)):
            if m.kind != kind or type(eta) is not Fraction or not eta < 0:
                continue
            if eta * m.power != -1:
                continue
            c = abs(panel.edge_limit(end))
            d = EDGE_ALLOWANCE_SPACINGS * float(np.spacing(
                abs(e) if e != 0.0 or zero_scale is None else zero_scale))
            total += c * d ** (1.0 + float(eta)) / (1.0 + float(eta))
    return total


class _PanelBatch:
    """The edge and smooth panels of a :class:`Representation` as arrays, so that
    :meth:`Panel.density` runs once for points of many panels.

    The Chebyshev series are padded with zeros to the longest; Clenshaw's
    recurrence (as in ``numpy.polynomial.chebyshev.chebval``) passes through
    leading zero coefficients exactly (``c - 0``, ``b + 0 * x``), so each
    point gets the value of its own panel's series bit for bit, as it does the
    map's ``s`` and Jacobian (the same expressions, grouped by the map's power).
    """

    _KINDS = {"smooth": 0, "left": 1, "right": 2}

    def __init__(self, panels, member):
        self.member = np.asarray(member, dtype=bool)
        maps = [p.map for p in panels]
        self.sizes = np.array([p.coef.size if m else 0 for p, m in zip(panels, member)])
        coef = np.zeros((int(self.sizes.max()), len(panels)))
        for j, (p, m) in enumerate(zip(panels, member)):
            if m:
                coef[:p.coef.size, j] = p.coef
        self.coef = coef
        self.lo = np.array([m.lo for m in maps])
        self.hi = np.array([m.hi for m in maps])
        self.width = np.array([m.width for m in maps])
        self.power = np.array([m.power for m in maps])
        self.kind = np.array([self._KINDS.get(m.kind, -1) for m in maps])
        self.powers = sorted({int(m.power) for m in maps if m.kind in ("left", "right")})
        # the Jacobian's factor: dx/ds_half at s = 1 (w p / 2, edge maps) and
        # dx/dsigma (w / 2, smooth maps), from PanelMap itself
        self.factor = np.array([0.0 if not mem else float(m.dx_ds_half(1.0))
                                if m.kind in ("left", "right") else float(m.dx_dsigma(0.0))
                                for m, mem in zip(maps, member)])
        # the density exactly at an edge end (0, or inf at a singular edge)
        self.edge = np.array([float(p._edge_value(np.zeros(1))[0]) if m else 0.0
                              for p, m in zip(panels, member)])

    def degree_of(self, panels):
        """Length of the longest series among the panels selected by the mask ``panels``."""
        return int(self.sizes[panels].max(initial=0))

    def density(self, x, j, panels):
        """:meth:`Panel.density` of panel ``j[k]`` at ``x[k]`` (edge and smooth panels,
        all among those selected by the mask ``panels``)."""
        lo, hi, w = self.lo[j], self.hi[j], self.width[j]
        kind, power = self.kind[j], self.power[j]
        xc = np.clip(x, lo, hi)
        right = kind == 2
        d = np.where(right, hi - xc, xc - lo) / w
        s = d.copy()
        dx = self.factor[j].copy()
        edge_map = kind > 0
        for p in self.powers:
            sel = edge_map & (power == p)
            if not sel.any():
                continue
            ds = d[sel]
            sv = ds if p == 1 else ds ** (1.0 / p)
            s[sel] = sv
            dx[sel] = dx[sel] * sv ** (p - 1)
        sig = np.where(kind == 0, 2.0 * (xc - lo) / w - 1.0,
                       np.where(right, 1.0 - 2.0 * s, 2.0 * s - 1.0))
        g = _cheb.chebval(sig, self.coef[:self.degree_of(panels), j], tensor=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = g / dx
        f = np.where(kind == 0, np.where(np.isfinite(f), f, 0.0), f)
        at_edge = edge_map & (dx == 0)
        if at_edge.any():
            f = np.where(at_edge, self.edge[j], f)
        return np.maximum(f, 0.0)


class Representation:
    """The panels of a density, in increasing order, with cumulative masses.

    Attributes
    ----------
    panels : list of Panel
    total : float
        Sum of the panel masses.
    error : float
        Sum of the panels' error estimates (absolute, in mass).
    """

    def __init__(self, panels):
        self.panels = panels
        self.starts = np.array([p.lo for p in panels])
        self.ends = np.array([p.hi for p in panels])
        masses = np.array([p.mass for p in panels])
        self.below = np.concatenate([[0.0], np.cumsum(masses)])
        self.total = float(self.below[-1])
        self.error = float(sum(p.error for p in panels))
        self._quad = {}
        self._batch_cache = False             # _batch(): not built yet

    @property
    def degree(self):
        """Largest number of coefficients of a panel."""
        return max((p.coef.size for p in self.panels), default=0)

    def locate(self, x):
        """Panel index of each point, -1 outside every panel."""
        idx = np.searchsorted(self.starts, x, side="right") - 1
        inside = (idx >= 0) & (x <= self.ends[np.clip(idx, 0, None)])
        return np.where(inside, idx, -1)

    def pdf(self, x):
        """Density at a 1-d float array of points (0 outside the panels).

        The points of the edge and smooth panels that hold at most
        ``BATCH_PANEL_POINTS`` of them are evaluated together
        (:class:`_PanelBatch`) where their series padded to the longest cost at
        most ``BATCH_PAD_FACTOR`` times their own; the values are those of
        :meth:`Panel.density`, bit for bit.
        """
        out = np.zeros(x.shape)
        idx = self.locate(x)
        inside = idx >= 0
        if not inside.any():
            return out
        counts = np.bincount(idx[inside], minlength=len(self.panels))
        own = counts > 0                   # the panels evaluated one by one
        batch = self._batch()
        if batch is not None and len(self.panels) > 1:
            # panels with few points (log-end panels keep their own map)
            few = batch.member & own & (counts <= BATCH_PANEL_POINTS)
            if np.count_nonzero(few) > 1:
                sel = np.flatnonzero(inside & few[np.clip(idx, 0, None)])
                if batch.degree_of(few) * sel.size <= BATCH_PAD_FACTOR * (
                        counts[few] @ batch.sizes[few]):
                    out[sel] = batch.density(x[sel], idx[sel], few)
                    own &= ~few
        for j in np.flatnonzero(own):
            sel = idx == j
            out[sel] = self.panels[j].density(x[sel])
        return out

    def _batch(self):
        """The :class:`_PanelBatch` of the edge and smooth panels (built on first use;
        None without such panels)."""
        if self._batch_cache is False:
            member = [p.map.kind != "logend" for p in self.panels]
            self._batch_cache = _PanelBatch(self.panels, member) if any(member) else None
        return self._batch_cache

    def pdf_scalar(self, x):
        """Density at one Python float (no numpy array overhead)."""
        j = int(np.searchsorted(self.starts, x, side="right")) - 1
        if j < 0 or x > self.ends[j]:
            return 0.0
        p = self.panels[j]
        m = p.map
        if m.kind not in ("left", "right"):
            return float(p.density(np.array([x]))[0])
        d = (x - m.lo) / m.width if m.kind == "left" else (m.hi - x) / m.width
        sv = d if m.power == 1 else d ** (1.0 / m.power)
        sig = 2.0 * sv - 1.0 if m.kind == "left" else 1.0 - 2.0 * sv
        dx = m.width * m.power / 2.0 * sv ** (m.power - 1)
        if dx == 0.0:
            return float(p._edge_value(np.array(sig)))
        return max(clenshaw(p.coef_list, sig) / dx, 0.0)

    def cdf_scalar(self, x):
        """Continuous mass below one Python float (no numpy array overhead)."""
        k = int(np.searchsorted(self.ends, x, side="right"))
        if k >= len(self.panels):
            return self.total
        if x < self.starts[k]:
            return float(self.below[k])
        p = self.panels[k]
        m = p.map
        if m.kind not in ("left", "right"):
            sig = float(m.sigma_of(np.array([x]))[0])
        else:
            d = (x - m.lo) / m.width if m.kind == "left" else (m.hi - x) / m.width
            sv = d if m.power == 1 else d ** (1.0 / m.power)
            sig = 2.0 * sv - 1.0 if m.kind == "left" else 1.0 - 2.0 * sv
        return float(self.below[k]) + min(max(clenshaw(p.cum_list, sig), 0.0), p.mass)

    def cdf(self, x):
        """Mass of the continuous part below each point of a 1-d float array."""
        k = np.searchsorted(self.ends, x, side="right")
        out = self.below[k].copy()
        idx = self.locate(x)
        inside = idx >= 0
        if not inside.any():
            return out
        # the panels holding points, from their counts (no sort of the indices)
        for j in np.flatnonzero(np.bincount(idx[inside], minlength=len(self.panels))):
            sel = (idx == j) & (x < self.ends[j])
            out[sel] = self.below[j] + self.panels[j].cdf(x[sel])
        return out

    def quantile(self, t, options):
        """``x`` with continuous mass ``t`` (in ``[0, total]``) below it."""
        j = np.clip(np.searchsorted(self.below, t, side="right") - 1, 0, len(self.panels) - 1)
        out = np.empty(t.shape)
        for jj in np.unique(j):
            sel = j == jj
            p = self.panels[jj]
            out[sel] = p.quantile(np.clip(t[sel] - self.below[jj], 0.0, p.mass), options)
        return out

    def quadrature(self, extra=0):
        """Concatenated nodes ``x`` and weights ``f(x) dx`` of every panel."""
        if extra not in self._quad:
            pairs = [p.quadrature(extra) for p in self.panels]
            self._quad[extra] = (np.concatenate([x for x, _ in pairs]),
                                 np.concatenate([w for _, w in pairs]))
        return self._quad[extra]

    def cauchy(self, z, derivative=False, error=False):
        """``int f(x)/(z - x) dx`` (and the derivative) for a 1-d complex array.

        With ``error``, also estimates of the absolute errors of the value and of
        the derivative (:meth:`Panel.cauchy_error`), appended to the result.
        A real ``z`` is read at ``z + i * JUNCTION_OFFSET * width`` (the boundary
        value from above): next to the junction of two panels each panel's
        logarithm nearly diverges and the two cancel, which needs the side of
        the cut that a real float cannot carry.
        """
        z = np.asarray(z, dtype=complex)
        if self.panels:
            # Only real points on a panel need the side; outside every panel G is
            # real and the point stays real.
            width = self.ends[-1] - self.starts[0]
            starts, ends = np.asarray(self.starts), np.asarray(self.ends)
            k = np.searchsorted(starts, z.real, side="right") - 1
            on = (k >= 0) & (z.real <= ends[np.clip(k, 0, None)])
            z = np.where((z.imag == 0) & on, z + 1j * JUNCTION_OFFSET * width, z)
        total = np.zeros(z.shape, dtype=complex)
        dtotal = np.zeros(z.shape, dtype=complex)
        err, derr = np.zeros(z.shape), np.zeros(z.shape)
        for p in self.panels:
            if derivative or error:
                c, dc = p.cauchy(z, derivative=True)
                dtotal += dc
            else:
                c = p.cauchy(z)
            total += c
            if error:
                e, de = p.cauchy_error(z, c, dc)
                err += e
                derr += de
        if not (derivative or error):
            return total
        out = (total, dtotal) if derivative else (total,)
        return out + (err, derr) if error else out
