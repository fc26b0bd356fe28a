"""The levels of a composed law: affine, R- and S-levels, and the algebra of their atoms.

A composed law (theory section 8.3) is one *level* over a constituent law
``b``, with ``tau`` the subordination point:

* :class:`AffineLevel`: ``z = a + s tau``, ``G = G_b(tau)/s`` (eq. (8.7));
* :class:`RLevel`: ``z = tau + R_a(G_b(tau))``, ``G = G_b(tau)`` (eq. (8.8));
* :class:`SLevel`: ``w = tau G_b(tau) - 1``, ``z = tau / S_a(w)``,
  ``G = G_b(tau) S_a(w)`` (eq. (8.9)).

A level maps the subordination point and its derivatives, gives the
rational form of its map (for :class:`freeattn.algebra._curve.Curve`), its
atoms, its hard edge at 0 (eq. (8.13)) and its mpmath form.  The laws it is
applied to are used only through their methods (``atoms``,
``interval_details``, ``_stieltjes``, ``_series``): this module needs
no law class.  The moments of an R- or S-level, which need the law classes,
are computed by :func:`freeattn.compose._subordination.level_series`.

Nothing in this module prints or does I/O.
"""

from fractions import Fraction

import numpy as np

from ..core._errors import ConvergenceError
from ._chebyshev import LogEnd
from ._rational import cancel_common_roots, compose, padd, pmul, pscale

__all__ = [
    "AffineLevel",
    "RLevel",
    "SLevel",
    "edge_at_zero",
    "additive_atoms",
    "multiplicative_atoms",
]

_P = np.polynomial.polynomial

#: Marks a law that is not composed (has no structural ``_hard_edge``).
_NOT_COMPOSED = object()

#: Relative tolerance for "the non-zero masses of a product and its factor
#: agree" in the hard-edge rule of :meth:`SLevel.hard_edge` (masses are sums of
#: atoms computed in floating point).
HARD_EDGE_MASS_RTOL = 1e-12

#: A constant term of ``S``'s shifted denominator within this many ulps of
#: its coefficient sum is the pole at ``w = -1`` (:meth:`SLevel.apply_at_pole`).
POLE_SHIFT_ULPS = 64
_EPS = float(np.finfo(float).eps)


def _stacked_columns(polys):
    """Coefficient columns of several polynomials (increasing degree), the shorter
    ones padded with zeros at the top, highest degree first: the input of
    :func:`_horner_rows`."""
    m = max(len(c) for c in polys)
    coef = np.zeros((len(polys), m))
    for i, c in enumerate(polys):
        coef[i, :len(c)] = c
    return tuple(coef[:, j, None] for j in range(m - 1, -1, -1))


def _horner_rows(columns, v):
    """The polynomials of :func:`_stacked_columns` at ``v`` by one Horner pass over
    all of them (a row each): the same operations as ``numpy.polynomial.polynomial.
    polyval`` per polynomial (a padded zero stays an exact zero at finite ``v``)."""
    acc = columns[0] + v * 0
    for col in columns[1:]:
        acc = col + acc * v
    return acc


class AffineLevel:
    """``z = shift + scale * tau``, ``G = G_b(tau) / scale`` with ``scale > 0`` (eq. (8.7))."""

    kind = "affine"
    #: The point under the level is ``(z - shift)/scale``, a function of ``z``
    #: alone, not a subordination point (it is real with ``z``).
    subordinating = False
    fold_before_soft_end = False

    def __init__(self, shift, scale):
        self.shift = float(shift)
        self.scale = float(scale)

    def slope_at_infinity(self):
        """``lim dz/dtau`` as ``tau -> oo`` (the scale of the map's derivative)."""
        return self.scale

    def ray_reach(self):
        """How far beyond the constituent's support the level's own structure reaches
        in ``tau`` (theory section 8.5): none, ``tau`` is ``z`` moved and scaled."""
        return 0.0

    def apply(self, tau, gb, dtau, dgb):
        z = self.shift + self.scale * tau
        if dtau is None:
            return z, gb / self.scale, None, None
        return z, gb / self.scale, self.scale * dtau, dgb / self.scale

    def guess(self, z):
        return (z - self.shift) / self.scale

    def partner_point(self, z, tau, gb, g):
        return None

    def partner_check(self, point, tau, gb, g):
        return None

    def rational(self, n, d, a, b):
        return (padd(pscale(d, self.shift), pscale(n, self.scale)), d, a, pscale(b, self.scale))

    def atoms(self, constituent):
        loc, mass = constituent.atoms()
        return self.shift + self.scale * loc, mass

    def series(self, constituent, kmax, prec):
        """Moment series of ``shift + scale X`` (theory section 8.10), or ``None``."""
        from ._moment_series import affine_series

        base = constituent._series(kmax, prec)
        return None if base is None else affine_series(base, self.shift, self.scale, prec)

    def hard_edge(self, constituent):
        """A scaling keeps a hard edge at 0; a shift moves it away."""
        if self.shift != 0.0:
            return None
        eta = edge_at_zero(constituent)
        return eta if isinstance(eta, Fraction) else None

    def mp(self, mpmath):
        a, s = mpmath.mpf(self.shift), mpmath.mpf(self.scale)
        return lambda tau, gb: (a + s * tau, gb / s)

    def describe(self):
        return f"{self.shift:g} + {self.scale:g} x"


def affine_moments(shift, scale, sc, m):
    """Moments of ``shift + scale X`` from the normalized moments ``m_j`` of ``X/sc``."""
    from scipy.special import gammaln

    kmax = m.size - 1
    big = abs(shift) + abs(scale) * sc
    if big == 0:
        return 1.0, np.concatenate([[1.0], np.zeros(kmax)])
    p, q = shift / big, scale * sc / big          # |p| + |q| = 1
    out = np.empty(kmax + 1)
    for k in range(kmax + 1):
        j = np.arange(k + 1)
        logc = gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)
        with np.errstate(divide="ignore"):
            lp = np.where(k - j > 0, (k - j) * np.log(abs(p)) if p != 0 else -np.inf, 0.0)
            lq = np.where(j > 0, j * np.log(abs(q)) if q != 0 else -np.inf, 0.0)
        sign = np.where(((k - j) % 2 == 1) & (p < 0), -1.0, 1.0) * np.where(
            (j % 2 == 1) & (q < 0), -1.0, 1.0)
        out[k] = np.sum(sign * np.exp(logc + lp + lq) * m[:k + 1])
    return big, out


class RLevel:
    """Free additive convolution with a law of known R-transform (eq. (8.8))."""

    kind = "R"
    subordinating = True
    #: ``Phi' = 1 + R_a'(G_b) G_b'`` turns negative before a square-root or hard end
    #: of the constituent, where ``G_b'`` diverges: the gap grid reaches the rounding
    #: of the end (theory eqs. (8.35), (8.37)).
    fold_before_soft_end = True

    def __init__(self, transform, partner):
        self.transform = transform
        self.partner = partner

    def slope_at_infinity(self):
        """``lim dz/dtau = 1`` as ``tau -> oo`` (``R_a(G_b(tau)) -> R_a(0)``)."""
        return 1.0

    def ray_reach(self):
        """How far beyond the constituent's support the level's own structure reaches
        in ``tau`` (theory section 8.5): the partner's extent, where ``R_a(G_b(tau))``
        with ``G_b(tau) ~ 1/tau`` meets the singularities of ``R_a``."""
        lo, hi = self.partner.support()
        return max(abs(float(lo)), abs(float(hi)))

    def apply(self, tau, gb, dtau, dgb):
        if dtau is None:
            return tau + self.transform(gb), gb, None, None
        r, dr = self.transform.value_and_derivative(gb)
        return tau + r, gb, dtau + dr * dgb, dgb

    def guess(self, z):
        return z - self.transform.at_zero()

    def partner_point(self, z, tau, gb, g):
        """The partner's subordination point ``omega_1 = z - tau + 1/G`` (eq. (8.8))."""
        if _single_atom(self.partner):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return z - tau + 1.0 / g

    def partner_check(self, point, tau, gb, g):
        """Relative mismatch of ``G_a(omega_1) = G`` with the partner's true branch."""
        ga = _partner_g(self.partner, point)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(ga - g) / np.abs(g)

    def rational(self, n, d, a, b):
        rn, rd = compose(self.transform.num, self.transform.den, a, b)
        return padd(pmul(n, rd), pmul(d, rn)), pmul(d, rd), a, b

    def atoms(self, constituent):
        return additive_atoms(self.partner.atoms(), constituent.atoms())

    def hard_edge(self, constituent):
        return None

    def mp(self, mpmath):
        r = self.transform.mp_callable(mpmath)
        return lambda tau, gb: (tau + r(gb), gb)

    def describe(self):
        return f"⊞ {self.partner._describe()}"


class SLevel:
    """Free multiplicative convolution with a law of known S-transform (eq. (8.9))."""

    kind = "S"
    subordinating = True
    #: (no case known where eq. (8.35) is needed: the gap grid keeps its band stop)
    fold_before_soft_end = False

    def __init__(self, transform, partner):
        self.transform = transform
        self.partner = partner

    def slope_at_infinity(self):
        """``lim dz/dtau = 1/S_a(0)`` as ``tau -> oo`` (``w -> 0``), in modulus."""
        return abs(1.0 / self.transform.at_zero())

    def ray_reach(self):
        """How far beyond the constituent's support the level's own structure reaches
        in ``tau`` (theory section 8.5): none, ``w = tau G_b(tau) - 1`` is a function
        of ``tau`` on the constituent's scale."""
        return 0.0

    def apply(self, tau, gb, dtau, dgb):
        w = tau * gb - 1.0
        if dtau is None:
            sw = self.transform(w)
            return tau / sw, gb * sw, None, None
        sw, ds = self.transform.value_and_derivative(w)
        dsw = ds * (dtau * gb + tau * dgb)
        z = tau / sw
        dz = dtau / sw - tau * dsw / (sw * sw)
        return z, gb * sw, dz, dgb * sw + gb * dsw

    def apply_at_pole(self, tau, gb, dgb):
        """:meth:`apply` with ``S`` in ``v = 1 + w = tau G_b(tau)`` (theory eq. (8.27)).

        Next to a hard edge ``w -> -1``, a pole of ``S``; ``w = tau G_b - 1``
        would keep only ``eps/|v|`` of ``v`` (1e-4 relative at ``|v| =
        1e-12``), so ``S`` is re-expanded about ``w = -1`` (a Taylor shift of
        its coefficients; a constant term of the denominator within rounding
        of 0 is the pole itself and set to 0).  Returns ``(z, G, dz/dtau,
        dG/dtau)``.
        """
        if getattr(self, "_pole_polys", None) is None:
            shift = np.polynomial.Polynomial([-1.0, 1.0])
            pv = np.polynomial.Polynomial(self.transform.num)(shift).coef
            qv = np.polynomial.Polynomial(self.transform.den)(shift).coef
            if abs(qv[0]) <= POLE_SHIFT_ULPS * _EPS * float(np.abs(self.transform.den).sum()):
                qv[0] = 0.0
            self._pole_polys = _stacked_columns((pv, qv, _P.polyder(pv), _P.polyder(qv)))
        v = tau * gb
        dv = gb + tau * dgb
        num, den, dnum, dden = _horner_rows(self._pole_polys, v)
        sw = num / den
        dsw = (dnum * den - num * dden) / (den * den) * dv
        z = tau / sw
        return z, gb * sw, 1.0 / sw - tau * dsw / (sw * sw), dgb * sw + gb * dsw

    def guess(self, z):
        return z * self.transform.at_zero()

    def partner_point(self, z, tau, gb, g):
        """The partner's subordination point ``xi = z G_b(tau)/w`` (``xi G_a(xi) = tau
        G_b(tau)``, eq. (8.9))."""
        if _single_atom(self.partner):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return z * gb / (tau * gb - 1.0)

    def partner_check(self, point, tau, gb, g):
        """Relative mismatch of ``xi G_a(xi) = tau G_b(tau)`` with the partner's true branch."""
        ga = _partner_g(self.partner, point)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(point * ga - tau * gb) / np.abs(tau * gb)

    def partner_on_branch(self, z, tau, gb, g, rtol, infinite_ok):
        """The branch test of eq. (8.10) at the partner, per point: its
        subordination point :meth:`partner_point` in the closed upper half-plane
        and on the partner's own branch (:meth:`partner_check` within
        ``sqrt(rtol)``).  A point at infinity (the partner's transform at 0, ``w =
        0``) passes where ``infinite_ok``; all points pass for a one-atom partner."""
        point = self.partner_point(z, tau, gb, g)
        ok = np.ones(np.shape(z), dtype=bool)
        if point is None:
            return ok
        with np.errstate(all="ignore"):
            fin = np.isfinite(point)
            ok = (~fin if infinite_ok else np.zeros(fin.shape, dtype=bool)) | (
                fin & (point.imag >= -rtol * np.abs(point)))
            sel = np.flatnonzero(ok & fin)
            if sel.size:
                ps = point[sel]
                mism = self.partner_check(ps.real + 1j * np.maximum(ps.imag, 0.0),
                                          tau[sel], gb[sel], g[sel])
                ok[sel] &= mism <= np.sqrt(rtol)
        return ok

    def rational(self, n, d, a, b):
        wn = padd(pmul(n, a), -pmul(d, b))
        wd = pmul(d, b)
        wn, wd = cancel_common_roots(wn, wd)
        sn, sd = compose(self.transform.num, self.transform.den, wn, wd)
        return pmul(n, sd), pmul(d, sn), pmul(a, sn), pmul(b, sd)

    def atoms(self, constituent):
        return multiplicative_atoms(self.partner.atoms(), constituent.atoms())

    def hard_edge(self, constituent):
        """Exponent of the continuous density at 0 from the poles of ``S`` (eq. (8.13)).

        With ``r = 1 - nu({0})`` the non-zero mass of the result ``nu``,
        ``psi_nu`` tends to ``-r`` at the lower end of the support, where a pole
        of order ``p`` of ``S_nu = S_a S_b`` gives the density
        ``x**(-k/(k + 1))``, ``k = p - [r < 1]`` (an atom at 0 accounts for one
        order: ``MP(1, c)``, ``c > 1``, has a simple pole at ``-1/c`` and a soft
        edge).  The partner contributes the order of its ``S`` at ``-r``; the
        constituent contributes only when its own non-zero mass is ``r``: one
        for its atom at 0 if it has one, and ``j`` for its own hard edge
        ``x**(-j/(j + 1))``.  E.g. ``MP(1, 2) ⊠ MP(1, 2)`` (``r = 1/2``) has
        ``k = 1``, the edge ``x**(-1/2)`` of a square factor.
        """
        loc, mass = self.atoms(constituent)
        r = 1.0 - float(mass[loc == 0.0].sum())
        if r <= HARD_EDGE_MASS_RTOL:
            return None
        order = 0
        p = self.transform.den.copy()
        while p.size > 1 and abs(_P.polyval(-r, p)) <= \
                1e-12 * (np.abs(p) @ (r ** np.arange(p.size))):
            p = _deflate_exact(p, -r)
            order += 1
        lb, mb = constituent.atoms()
        rb = 1.0 - float(mb[lb == 0.0].sum())
        if abs(rb - r) <= HARD_EDGE_MASS_RTOL * r:
            order += int(rb < 1.0 - HARD_EDGE_MASS_RTOL)
            eta = edge_at_zero(constituent)
            if eta is LogEnd:
                return None             # a logarithmic end (eq. (8.18)) has no power to add
            if eta is not None:
                order += int(-eta / (1 + eta))
        k = order - int(r < 1.0 - HARD_EDGE_MASS_RTOL)
        if k <= 0:
            return None
        return Fraction(-k, k + 1)

    def mp(self, mpmath):
        s = self.transform.mp_callable(mpmath)

        def f(tau, gb):
            # w = tau G_b - 1 cancels next to a hard edge (w -> -1): formed with
            # twice the digits, so that S(w) keeps the working precision.
            with mpmath.workdps(2 * mpmath.mp.dps):
                sw = s(tau * gb - 1)
            return tau / sw, gb * sw
        return f

    def describe(self):
        return f"⊠ {self.partner._describe()}"


def edge_at_zero(law):
    """A law's exponent at a hard edge at 0 (a negative Fraction), or None (eq. (8.13)).

    A subordination law knows it structurally (its level's ``hard_edge``, kept
    as the attribute ``_hard_edge`` by
    :class:`freeattn.compose._subordination.SubordinationLaw`) without building
    its support; other laws are asked for
    their intervals.  ``LogEnd`` (the class) for a logarithmic end at 0.
    """
    hard = getattr(law, "_hard_edge", _NOT_COMPOSED)
    if hard is not _NOT_COMPOSED:
        return hard
    ivs = law.interval_details()
    if not ivs or ivs[0].lo != 0.0:
        return None
    if isinstance(ivs[0].lo_exponent, LogEnd):
        return LogEnd
    return Fraction(ivs[0].lo_exponent) if ivs[0].lo_exponent < 0 else None


#: A composed partner asked at more points than this at once solves its tower in one
#: batch (about 1 ms a call and 3 us a point, theory section 8.6) rather than by its
#: pair's Newton starts from neighbours, whose cost grows with the points.
PARTNER_PAIR_MAX_POINTS = 16


def _partner_g(partner, point):
    """``G`` of a level's partner at its subordination points, for the branch tests of
    eqs. (8.10), (8.34): a closed form directly; a composed partner by its own
    solver's pair, which starts from its solved neighbours (theory section 8.11)
    instead of solving its tower afresh at every test, else (where that raises) as
    before."""
    if (getattr(partner, "_closed_form", False) or not hasattr(partner, "_solver")
            or np.size(point) > PARTNER_PAIR_MAX_POINTS):
        return partner._stieltjes(point)
    try:
        return partner._stieltjes_pair(np.asarray(point, dtype=complex))[0]
    except ConvergenceError:
        return partner._stieltjes(point)


def _single_atom(law):
    loc, mass = law.atoms()
    return loc.size == 1 and not law.interval_details()


def _deflate_exact(p, r):
    n = p.size - 1
    out = np.zeros(n)
    acc = 0.0
    for k in range(n, 0, -1):
        acc = p[k] + acc * r
        out[k - 1] = acc
    return out


# --------------------------------------------------------------------------- #
# Atoms of compositions
# --------------------------------------------------------------------------- #

def additive_atoms(a_atoms, b_atoms):
    """Atoms of ``a ⊞ b``: ``x = u + v`` with ``a({u}) + b({v}) > 1`` (Bercovici-Voiculescu)."""
    (ua, ma), (ub, mb) = a_atoms, b_atoms
    loc, mass = [], []
    for u, p in zip(ua, ma):
        for v, q in zip(ub, mb):
            if p + q > 1.0:
                loc.append(u + v)
                mass.append(p + q - 1.0)
    return np.array(loc, dtype=float), np.array(mass, dtype=float)


def multiplicative_atoms(a_atoms, b_atoms):
    """Atoms of ``a ⊠ b`` on ``[0, oo)`` (Belinschi): ``max(a({0}), b({0}))`` at 0;
    ``x = u v != 0`` with ``a({u}) + b({v}) > 1``."""
    (ua, ma), (ub, mb) = a_atoms, b_atoms
    loc, mass = [], []
    zero = max(float(ma[ua == 0].sum()), float(mb[ub == 0].sum()))
    if zero > 0:
        loc.append(0.0)
        mass.append(zero)
    for u, p in zip(ua, ma):
        for v, q in zip(ub, mb):
            if u != 0 and v != 0 and p + q > 1.0:
                loc.append(u * v)
                mass.append(p + q - 1.0)
    return np.array(loc, dtype=float), np.array(mass, dtype=float)


