"""Composable laws by subordination: sample covariance, free ⊞ and ⊠.

Every composed law here has the form (theory section 8.3)

    z = Phi(tau),  G(z) = g(tau),   tau = the subordination point in C+,

where ``Phi`` and ``g`` are built from a *constituent* law ``b`` (through its
Stieltjes transform ``G_b(tau)``) and an explicit *level* transform:

* an affine map, ``z = a + s tau``, ``G = G_b(tau)/s`` (eq. (8.7));
* an R-level (free additive convolution with a law ``a`` whose R-transform is
  known), ``z = tau + R_a(G_b(tau))``, ``G = G_b(tau)`` (eq. (8.8));
* an S-level (free multiplicative convolution with a law ``a`` whose
  S-transform is known), ``w = tau G_b(tau) - 1``, ``z = tau / S_a(w)``,
  ``G = G_b(tau) S_a(w)`` (eq. (8.9)); the sample-covariance law with ratio
  ``c`` is the S-level of ``MP(1, c)``, ``S(w) = 1/(1 + c w)``, which is
  Silverstein's equation (5.3).

When every level of a law, down to its point-mass leaves, is rational, the
Stieltjes graph ``(z, G)`` is a rational curve ``z = Z(t)``, ``G = G(t)`` in
the leaf variable ``t`` (:class:`freeattn.algebra._curve.Curve`; the levels
are in :mod:`freeattn.algebra._levels`): ``Z(t) = z`` is a polynomial
equation solved in batches (companion eigenvalues), the Stieltjes branch is
the root whose subordination points all lie in the closed upper half-plane
(eq. (8.10)), and the edges are real critical points of ``Z`` (eqs.
(8.11)-(8.12)).  Other laws use the generic Newton path with continuation in
``Im z`` (:class:`GenericSolver`), with edges from the zeros of ``Phi'`` on
the gaps of the constituent's support.

Nothing in this module prints or does I/O.
"""

import math
from fractions import Fraction

import numpy as np

from ..algebra._chebyshev import ROUNDING_FLOOR_MAX, band_rounding_noise
from ..algebra._levels import AffineLevel, RLevel, SLevel, _single_atom
from ..core._errors import ConvergenceError
from ..laws._law_base import (NESTED_SOLVE_FACTOR, TOWER_EVALUATION_COST, Interval,
                              SpectralLaw, outside_bands)

from ._moments import additive_series, multiplicative_series

__all__ = [
    "SubordinationLaw",
    "sample_covariance",
    "free_additive",
    "free_multiplicative",
    "compose_affine",
]

from ._fixed_point import WarmTable, polish_newton
from ._generic_solver import GenericSolver

#: Secant steps of ``mpmath.findroot`` in the arbitrary-precision path (it
#: starts from the float solution, so a few dozen suffice; the margin covers
#: starts next to a hard edge, where the float point has few correct digits).
MP_MAX_STEPS = 200

#: Real points outside the support closer than this (relative to the law's
#: scale) to an edge take ``G`` from the representation's Cauchy integral: the
#: leaf roots there are nearly double (error ~ sqrt(eps / distance)).
NEAR_EDGE_RTOL = 1e-9

#: Newton steps from the local-model seed next to a hard edge
#: (:meth:`SubordinationLaw._hard_edge_solve`): where ``|tau|`` is far below
#: ``dist(0, supp b)`` the seed is off by that ratio and three steps reach
#: rounding; farther out the steps may not converge and the point is left to
#: the tower (the residual test decides).
HARD_EDGE_NEWTON_STEPS = 6
#: ... and a point stops once its step is within this many ulps of ``|tau|``.
HARD_EDGE_STEP_ULPS = 4
#: The polish of the outermost level (:meth:`SubordinationLaw._polish`): this many
#: Newton steps, each at most this long relative to ``|tau|`` (a longer one heads
#: for another root, and the point keeps the tower's value).
POLISH_STEPS = 2
POLISH_STEP_RTOL = 1e-6
#: A level over a closed-form or nested constituent solves an off-axis point by Newton on
#: ``Phi(tau) = z`` (eq. (8.10)) from the subordination point of its nearest solved
#: point when they are within ``LEVEL_WARM_RTOL`` of ``|z|`` (section 8.11): at most
#: ``LEVEL_WARM_STEPS`` steps, converged at a step of ``LEVEL_WARM_STEP_RTOL |tau|``,
#: kept where ``tau`` and the partner's point lie strictly inside the upper half-plane
#: (``LEVEL_WARM_INSIDE_RTOL`` of their modulus) and the partner's transform agrees
#: there.  The latest ``LEVEL_WARM_TABLE`` solved points are kept as starts.
LEVEL_WARM_RTOL = 0.05
#: ... and within ``GENERIC_WARM_RTOL`` over a constituent without a tower, whose cold
#: solve (the continuation of eq. (8.10), some 20-30 evaluations of the constituent)
#: costs more than the warm steps a farther start may waste: the certificate, not
#: the start, decides which root is kept.
GENERIC_WARM_RTOL = 0.5
LEVEL_WARM_STEPS = 8
LEVEL_WARM_STEP_RTOL = 1e-14
LEVEL_WARM_INSIDE_RTOL = 1e-6
LEVEL_WARM_TABLE = 4096
#: A hard-edge root is accepted when ``|Phi(tau) - z|`` is within this many
#: ulps of ``|z|`` (measured: 1.4e-16 relative at ``z = 3.8e-35``).
HARD_EDGE_RESIDUAL_ULPS = 64

#: Inside a band (farther than ``INTERIOR_MARGIN`` of its width from its edges) the
#: density is positive: a solve giving ``f(x) * width`` below ``INTERIOR_DENSITY_FLOOR``
#: there took a real root on another sheet, and raises instead of being fitted.  A
#: true density at that distance from an edge of exponent ``p <= 3/2`` is at least
#: ``1e-9 / width``; the wrong sheet of a tower of a small-``beta`` attention law
#: times three Marchenko-Pastur laws gave 1e-57 to 1e-99 (its representation
#: split panels for 167 s before it gave up).
INTERIOR_MARGIN = 1e-6
INTERIOR_DENSITY_FLOOR = 1e-30

_EPS = float(np.finfo(float).eps)

from ._rational_solver import _TINY, HARD_EDGE_MODEL_RTOL, RationalSolver

# --------------------------------------------------------------------------- #
# Moments of compositions
# --------------------------------------------------------------------------- #

def level_series(level, constituent, kmax, prec):
    """Moment series of ``level`` applied to ``constituent`` (``None``: not exact).

    An R-level is a free additive convolution (eqs. (8.2)-(8.3)), an S-level a
    free multiplicative one (eqs. (8.4)-(8.5)); other levels (affine, and the
    multi-head companion level) give their own ``series`` (theory section 8.10).
    """
    if level.kind == "R":
        return additive_series(level.partner, constituent, kmax, prec)
    if level.kind == "S":
        return multiplicative_series(level.partner, constituent, kmax, prec)
    series = getattr(level, "series", None)
    return None if series is None else series(constituent, kmax, prec)


# --------------------------------------------------------------------------- #
# The composed law
# --------------------------------------------------------------------------- #

def _warm_newton_steps(values, zk, u):
    """Newton on ``Z(u) = zk`` from ``u`` (updated in place), ``values(u) = (Z, dZ/du)``,
    at most ``LEVEL_WARM_STEPS`` steps (eqs. (8.34), (8.36)); returns the points whose
    last step was within ``LEVEL_WARM_STEP_RTOL`` of ``|u|``."""
    act = np.arange(zk.size)
    conv = np.zeros(zk.size, dtype=bool)
    with np.errstate(all="ignore"):
        for _ in range(LEVEL_WARM_STEPS):
            ua = u[act]
            zz, dz = values(ua)
            step = (zz - zk[act]) / dz
            ok = np.isfinite(step)
            u[act[ok]] = ua[ok] - step[ok]
            small = ok & (np.abs(step) <= LEVEL_WARM_STEP_RTOL * np.abs(ua))
            conv[act[small]] = True
            act = act[ok & ~small]
            if not act.size:
                break
    return conv


class SubordinationLaw(SpectralLaw):
    """A law defined by one level over a constituent law (eqs. (8.7)-(8.9)).

    Build it with :func:`sample_covariance`, :func:`free_additive`,
    :func:`free_multiplicative` or :meth:`SpectralLaw.affine`.

    Attributes
    ----------
    level : AffineLevel, RLevel or SLevel
    constituent : SpectralLaw
    """

    def __init__(self, level, constituent, options=None, name=None):
        super().__init__(options if options is not None else constituent.options)
        self.level = level
        self.constituent = constituent
        self._name = name
        base_curve = constituent._curve()
        curve = None
        if base_curve is not None and getattr(getattr(level, "transform", None), "rational",
                                              True):
            curve = base_curve.extend(level)
            if curve.degree > self.options.max_rational_degree:
                curve = None
        self._curve_cache = curve
        self._boundary_cache = None
        hard = level.hard_edge(constituent)
        self._hard_edge = hard
        if curve is not None:
            self._solver = RationalSolver(curve, self.options, hard)
            if getattr(constituent, "_closed_form", False):
                self._solver.polisher = self._polish
            if hard is not None and hard < 0 and level.kind == "S" and (
                    getattr(constituent, "_closed_form", False)
                    or _order_at_hard_edge(constituent, hard) is not None):
                self._solver.hard_edge_branch = self._hard_edge_branch
        else:
            self._solver = GenericSolver(level, constituent, self.options)

    def _polish(self, tau, z, g, derivative=False):
        """Two Newton steps on the outermost level ``Phi(tau) = z`` (eq. (8.10)).

        The leaf variable of a rational tower loses relative accuracy where a
        subordination point is the small difference of larger numbers (next to
        the hard edge ``tau -> 0``: ``eps/|tau|``); the outermost level with
        the constituent's closed-form transform has no such cancellation.
        Points where a step would leave the upper half-plane or grow keep the
        tower's value.  Returns ``(G, taken)``: ``taken`` marks the points whose
        ``G`` comes from the two steps; with ``derivative``, ``(G, G', taken)``,
        ``G' = (dG/dtau)/(dz/dtau)`` at the polished ``tau`` (NaN where not taken).
        """
        b = self.constituent
        level = self.level
        ok = np.isfinite(tau) & (tau != 0)
        tau = np.where(ok, tau, 1.0)
        rtol = self.options.branch_rtol

        exact = np.zeros(tau.shape, dtype=bool)

        def step_of(ta, idx):
            gb, dgb = b._stieltjes_pair(ta)          # one solve for G and G'
            zz, _, dz, _ = level.apply(ta, gb, np.ones_like(ta), dgb)
            return (zz - z[idx]) / dz

        def accept(tn, ta, idx):
            ok = ((np.abs(ta - tn) <= POLISH_STEP_RTOL * np.abs(ta))
                  & (tn.imag >= -rtol * np.abs(ta)))
            exact[idx] = ok & (tn == ta)
            return ok
        tau, steps = polish_newton(step_of, tau, POLISH_STEPS, accept=accept, active=ok,
                                   counts=True)
        # every step taken, or the last one taken exactly 0 (Newton's fixed point:
        # the point stops there, converged, not refused)
        ok &= (steps == POLISH_STEPS) | exact
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if derivative:
                gb, dgb = b._stieltjes_pair(tau)
                _, gg, dz, dg = level.apply(tau, gb, np.ones_like(tau), dgb)
                dg = dg / dz
            else:
                gb = b._stieltjes(tau)
                _, gg, _, _ = level.apply(tau, gb, None, None)     # G only
        taken = ok & np.isfinite(gg)
        if derivative:
            taken &= np.isfinite(dg)
            return np.where(taken, gg, g), np.where(taken, dg, np.nan), taken
        return np.where(taken, gg, g), taken

    def _hard_edge_branch(self, z):
        """``G`` of :meth:`_hard_edge_solve` (the solver's hook, theory eq. (8.27))."""
        return self._hard_edge_solve(z)[0]

    def _hard_edge_values(self, z):
        """:meth:`_hard_edge_solve` at points the solver already took from it; a NaN
        there (which the same inputs cannot give) raises instead of leaking."""
        out = self._hard_edge_solve(z)
        bad = ~np.isfinite(out[0]) | ~np.isfinite(out[1])
        if bad.any():
            k = int(np.argmax(bad))
            raise ConvergenceError(f"the hard-edge model of eq. (8.27) lost its root at "
                                   f"z={z[k]!r}", point=complex(z[k]))
        return out

    def _hard_edge_solve(self, z):
        """``G`` next to the hard edge at 0 from its local model (theory eq. (8.27)).

        With the constituent's support away from 0, ``G_b(tau) -> G_b(0)``
        (finite) as ``tau -> 0`` and the outermost S-level ``z = Phi(tau)``
        has a zero of order ``m = 1/(1 + eta)`` there (``G ~ z**eta``,
        ``eta`` the hard-edge exponent): ``Phi(tau) ~ C tau**m``.  ``C`` is
        read off ``Phi`` at a probe of the size of the root, the seed is the
        root of ``C tau**m = z`` in the upper half-plane, and Newton on the
        level (:meth:`SLevel.apply_at_pole`) with the closed-form constituent
        polishes it (the tower's
        expanded polynomial keeps no digits there: a point at ``4e-35`` of the
        extent, the attention law at ``beta = 1e-8``).  Returns ``(G, G',
        tau)``, NaN where the seed does not converge to the branch (``Im tau
        >= 0``, ``Im G <= 0``, residual a few ulps of ``|z|``).
        """
        b, level = self.constituent, self.level
        lo = b.support()[0]
        nan = np.full(z.shape, np.nan + 0j)
        if lo > 0:
            m = 1 / (1 + Fraction(self._hard_edge))
            if m.denominator != 1:
                return nan, nan, nan
            m = int(m)
        else:
            # the constituent's own hard edge, G_b ~ tau**eta_b (eq. (8.31))
            m = _order_at_hard_edge(b, self._hard_edge)
            if m is None:
                return nan, nan, nan

        def phi(tau):
            # G_b(conj tau) = conj G_b(tau): a seed or step a rounding below the axis
            # (a real z left of 0, whose tau is real) is read on the upper side
            low = tau.imag < 0
            gb, dgb = b._stieltjes_pair(np.where(low, np.conj(tau), tau))
            gb, dgb = np.where(low, np.conj(gb), gb), np.where(low, np.conj(dgb), dgb)
            return level.apply_at_pole(tau, gb, dgb)

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # Probe at the size of the root: Phi ~ C tau**m with C ~ Phi(tau_p)/tau_p**m
            # (|tau| ~ |z/G_b(0)|**(1/m) with G_b(0) finite, ~ |z| at the constituent's
            # own hard edge, where Phi ~ tau/S(-1), eq. (8.31))
            if lo > 0:
                gb0 = b._stieltjes(np.zeros(1, dtype=complex))[0]
                probe = 1j * np.abs(z / gb0) ** (1.0 / m)
            else:
                probe = 1j * np.abs(z)
            c = phi(probe)[0] / probe ** m
            roots = (z / c) ** (1.0 / m) * np.exp(2j * np.pi * np.arange(m)[:, None] / m)
            tau = np.take_along_axis(roots, np.argmax(roots.imag, axis=0)[None, :], 0)[0]

            def step_of(ta, idx):
                zz, _, dz, _ = phi(ta)
                return (zz - z[idx]) / dz
            tau = polish_newton(step_of, tau, HARD_EDGE_NEWTON_STEPS,
                                HARD_EDGE_STEP_ULPS * _EPS)
            zz, gg, dz, dg = phi(tau)
            dgdz = dg / dz
            rtol = self.options.branch_rtol
            ok = (np.isfinite(gg) & np.isfinite(dgdz)
                  & (np.abs(zz - z) <= HARD_EDGE_RESIDUAL_ULPS * _EPS * np.abs(z))
                  & (tau.imag >= -rtol * np.abs(tau)) & (gg.imag <= rtol * np.abs(gg)))
            # The branch test of eq. (8.10) at the partner (a point at infinity fails)
            if ok.any():
                sel = np.flatnonzero(ok)
                gb = b._stieltjes(tau[sel])
                ok[sel] = level.partner_on_branch(z[sel], tau[sel], gb, gg[sel], rtol,
                                                  infinite_ok=False)
        return (np.where(ok, gg, nan), np.where(ok, dgdz, nan), np.where(ok, tau, nan))

    @property
    def _pointwise_transform(self):
        return self.constituent._pointwise_transform

    @property
    def _additive_level_terms(self):
        # an R-level whose real values are each a Newton over a nested law (eq. (8.8))
        if (isinstance(self.level, RLevel) and self.level.partner is not None
                and isinstance(self._solver, GenericSolver)):
            return self.level.partner, self.constituent
        return None

    @property
    def _evaluation_cost(self):
        # a tower's roots, or the level's Newton over the constituent (eq. (14.51))
        if isinstance(self._solver, RationalSolver):
            return TOWER_EVALUATION_COST
        return NESTED_SOLVE_FACTOR * (self.constituent._evaluation_cost + 1.0)

    def _describe(self):
        if self._name:
            return self._name
        return f"{self.constituent._describe()} {self.level.describe()}"

    def _curve(self):
        return self._curve_cache

    # -- hooks ---------------------------------------------------------------------
    def _support_intervals(self):
        ivs = self._solver.support()
        if len(ivs) > 1:
            # An interval around an atom at the rounding of the support's extent,
            # beside a band, is that atom spread by the solver's rounding (its critical
            # points next to the atom's double zero; theory section 8.5): dropped, as
            # an atom is (a product's atom at 0 for an S-level; for an R-level a sum's
            # atom, eq. (8.8))
            atoms = np.asarray(self.level.atoms(self.constituent)[0], dtype=float)
            reach = self.options.edge_merge_rtol * max(abs(ivs[0].lo), abs(ivs[-1].hi))
            ivs = tuple(iv for iv in ivs if not np.any(
                (atoms > iv.lo) & (atoms < iv.hi)
                & (np.maximum(atoms - iv.lo, iv.hi - atoms) <= reach)))
        if self.level.kind == "S" and ivs and ivs[0].lo < 0:
            # A product of laws on [0, oo) lives on [0, oo): a lower edge below 0
            # is 0 computed with rounding (a double zero of Z'); beyond rounding
            # it is an error, not a law.
            first = ivs[0]
            if -first.lo > self.options.edge_merge_rtol * max(abs(first.hi), _TINY):
                raise ConvergenceError(
                    f"lower edge {first.lo!r} of a law on [0, oo) is below 0 by more than "
                    f"rounding (edge_merge_rtol {self.options.edge_merge_rtol:.1e})")
            ivs = (Interval(0.0, first.hi, first.lo_exponent, first.hi_exponent),) + \
                tuple(ivs[1:])
        if not ivs:
            # A law without a continuous part is all atoms: otherwise the support
            # search missed its bands.
            atom_mass = float(np.sum(self.level.atoms(self.constituent)[1]))
            if atom_mass < 1.0 - self.options.mass_atol:
                raise ConvergenceError(
                    f"found no support interval, but the atoms carry only {atom_mass!r} of "
                    f"the mass (missing {1.0 - atom_mass:.3e} > mass_atol "
                    f"{self.options.mass_atol:.1e}): the critical points of the tower were "
                    f"not resolved (eq. (8.12))")
        return ivs

    def _atoms(self):
        return self.level.atoms(self.constituent)

    def _log_end_density(self, t):
        """A logarithmic end kept from the constituent (eq. (8.13)) is not resolved.

        Its panel (theory eq. (8.18)) samples ``x f(x)`` at ``x - e`` far below
        the float range, where the subordination point of eq. (8.10) is not a
        float either; the composition raises instead of fitting the end wrongly.
        """
        raise ConvergenceError(
            f"{self._describe()}: the edge kept from {self.constituent._describe()}'s "
            f"logarithmic end (theory section 8.9) needs the density at distances below "
            f"the float range, which the subordination solver (eq. (8.10)) cannot "
            f"evaluate; the composed law is supported only where its edges are not "
            f"logarithmic (e.g. a free additive convolution with this law)")

    def _first_panel_nodes(self):
        # the rational tower's solve costs more per call than per point (eq. (8.14))
        from ..algebra._chebyshev import CHEAP_SOLVER_START_NODES

        return None if isinstance(self._solver, GenericSolver) else CHEAP_SOLVER_START_NODES

    def _density(self, x):
        try:
            return self._level_density(x)
        except ConvergenceError as err:
            # a solve that left the branch (a real root inside a band): the batch from
            # the analytic subordination of the level's two laws (theory section
            # 14.60), once this law's own support is known, under the same interior
            # check; where that form cannot be built or solved, the level's own error
            if not self._interval_cache:
                raise
            try:
                other = self._analytic_form()
                if other is not None:
                    f = other._density(x)
                    self._check_interior(x, f)
                    return f
            except ConvergenceError:
                pass
            raise err

    def _analytic_form(self):
        """The analytic subordination (eqs. (14.1), (14.4)) of the level's partner and
        the constituent, for a level with a partner (built, with its own support, when
        first asked), else None."""
        partner = getattr(self.level, "partner", None)
        if partner is None:
            return None
        form = self.__dict__.get("_analytic_form_cache")
        if form is None:
            from ._analytic import analytic_additive, analytic_multiplicative

            build = analytic_multiplicative if _is_s_level(self) else analytic_additive
            form = build(partner, self.constituent, options=self.options)
            form.interval_details()
            self._analytic_form_cache = form
        return form

    def _level_density(self, x):
        z = x.astype(complex)
        if isinstance(self._solver, GenericSolver):
            g = self._generic_boundary(z)
        else:
            _, g = self._solver.solve(z, leaf=False)
        bad = ~np.isfinite(g) | (g.imag > self.options.branch_rtol * np.abs(g))
        if bad.any():
            k = int(np.argmax(bad))
            raise ConvergenceError(
                f"density at x={x[k]!r}: G={g[k]!r} is not on the Stieltjes branch "
                f"(Im G must be <= 0)", point=float(x[k]))
        f = np.maximum(-g.imag, 0.0) / math.pi
        self._check_interior(x, f)
        return f

    def _check_interior(self, x, f):
        """Raise where the density inside a band is below ``INTERIOR_DENSITY_FLOOR``
        (once the bands are known: never during their own search)."""
        for iv in self.__dict__.get("_interval_cache") or ():
            w = float(iv.hi) - float(iv.lo)
            inside = (x > iv.lo + INTERIOR_MARGIN * w) & (x < iv.hi - INTERIOR_MARGIN * w)
            low = inside & ~(f * w >= INTERIOR_DENSITY_FLOOR)
            if low.any():
                k = int(np.argmax(low))
                # a band narrower than the rounding of the support's size allows (eq.
                # (8.30)) is the likely cause: say so
                size = max(abs(float(v)) for v in self.support())
                noise = band_rounding_noise(w, size)
                why = (f"; the band is {w:.3e} wide on a support reaching "
                       f"{size:.3e}, a relative rounding of "
                       f"{noise:.1e} of x there, above {ROUNDING_FLOOR_MAX:.0e}: narrower "
                       f"than a solver resolving x to the support's rounding sees (theory "
                       f"eq. (8.30))" if noise > ROUNDING_FLOOR_MAX else "")
                raise ConvergenceError(
                    f"density {f[k]!r} at x={x[k]!r} inside the band [{iv.lo!r}, {iv.hi!r}]: "
                    f"the solve took a real root on another sheet (INTERIOR_DENSITY_FLOOR "
                    f"{INTERIOR_DENSITY_FLOOR:.0e} of the band's width, eq. (8.10)){why}",
                    point=float(x[k]))

    def _stieltjes_exact(self, z):
        near = self._near_edge_outside(z)
        out = np.empty(z.shape, dtype=complex)
        if (~near).any():
            try:
                out[~near] = self._solved_g(z[~near])
            except ConvergenceError:
                # Real points off the support where the solver found no branch
                # (the tower of MP^⊠3 at 5.6e-17, below its support [0.032, 0.32],
                # where its subordination points degenerate): G is real there and
                # the Cauchy integral of the representation (eq. (8.16)) gives it.
                off = ~near & self._outside_real(z)
                if not off.any():
                    raise
                rest = ~near & ~off
                if rest.any():
                    out[rest] = self._solved_g(z[rest])
                near = near | off
        if near.any():
            out[near] = self._stieltjes_from_representation(z[near])
        return out

    def _solved_g(self, z):
        """``G`` from the solver alone (a rational tower's leaf need not be polished)."""
        if isinstance(self._solver, RationalSolver):
            return self._solver.solve(z, leaf=False)[1]
        return self._solver.solve(z)[1]

    def _off_support(self, z):
        """Real points outside every interval of the support (False without intervals)."""
        ivs = self.intervals()
        return (z.imag == 0) & bool(ivs) & outside_bands(z.real, ivs)

    def _outside_real(self, z):
        """Real points off the support and away from its atoms."""
        return self._off_support(z) & ~np.isin(z.real, self.atoms()[0])

    def _near_edge_outside(self, z):
        """Real points outside the support within ``NEAR_EDGE_RTOL`` of an edge.

        There the leaf roots are nearly double and keep about half the digits, so
        ``G`` is the Cauchy integral of the representation instead (theory
        eq. (8.16); real and accurate to rounding next to an edge).
        """
        off = self._off_support(z)
        if not off.any():
            return off
        ends = np.asarray(self.intervals(), dtype=float).ravel()
        dist = np.min(np.abs(z.real[:, None] - ends[None, :]), axis=1)
        return off & (dist <= NEAR_EDGE_RTOL * self._scale())

    def _generic_boundary(self, z):
        """Boundary values on the support, warm-started from earlier solves.

        The subordination point is continuous along the support, so each new
        point starts Newton from the points already solved (interpolated);
        points that fail the branch test are solved by continuation.
        """
        cache = self._boundary_cache
        if cache is None or cache[0].size < 2:
            tau, g = self._solver.solve(z)
        else:
            xs, taus = cache
            guess = np.interp(z.real, xs, taus.real) + 1j * np.interp(z.real, xs, taus.imag)
            tau, g = self._solver.solve(z, guess=guess)
        if cache is None:
            xs, taus = z.real, tau
        else:
            xs, taus = np.concatenate([cache[0], z.real]), np.concatenate([cache[1], tau])
        order = np.argsort(xs)
        self._boundary_cache = (xs[order], taus[order])
        return g

    def _stieltjes_derivative(self, z):
        return self._stieltjes_pair(z)[1]

    def _stieltjes_pair(self, z):
        """``G`` and ``G' = (dG/dtau)/(dz/dtau)`` from one solve; at real points off the
        support where the solver finds no branch, both from the representation (eq.
        (8.16)), as :meth:`_stieltjes_exact` does, once the support is known.

        Kept for a host's repeated questions (:meth:`SpectralLaw._memoized_pair`);
        a new solve (the tower's, or Newton from a neighbour certified by eq. (8.34))
        gives a kept answer again to rounding.
        """
        return self._memoized_pair(np.asarray(z), self._unmemoized_pair)

    def _unmemoized_pair(self, z):
        try:
            return self._solved_pair(z)
        except ConvergenceError:
            if self._interval_cache is None:
                raise                   # within the support's own search
            off = self._outside_real(z)
            if not off.any():
                raise
            return self._pair_beside_solver(z, self._solved_pair, off)

    def _solved_pair(self, z):
        """:meth:`_stieltjes_pair` from the solver alone (the tower's roots, or the
        generic solver's continuation), each off-axis point first by Newton from a
        solved neighbour where eq. (8.34) certifies the root (:meth:`_warm_pair`), or,
        for a tower without a closed-form outermost level, any point by Newton on the
        tower from a neighbour's leaf where eq. (8.36) (or, real in a gap, eq. (8.11))
        certifies the root (:meth:`_warm_leaf_pair`)."""
        z = np.asarray(z, dtype=complex)
        g, dg, done = self._warm_pair(z)
        if "_leaf_table" in self.__dict__ and not done.all():
            todo = np.flatnonzero(~done)
            g[todo], dg[todo], done[todo] = self._warm_leaf_pair(z[todo])
        rest = np.flatnonzero(~done)
        if rest.size:
            cold = (self._tower_pair if isinstance(self._solver, RationalSolver)
                    else self._continued_pair)
            g[rest], dg[rest] = cold(z[rest])
        return g, dg

    def _continued_pair(self, z):
        """``(G, G')`` from the generic solver's continuation in ``Im z`` (eq. (8.10));
        the subordination points (of the real points too) enter the table of
        :meth:`_warm_pair`."""
        tau, g = self._solver.solve(z)
        _, _, dz, dg = self._solver._phi(tau)
        up = np.flatnonzero(z.imag >= 0)
        if up.size:
            self._remember("_warm_table", z[up], tau[up])
        with np.errstate(divide="ignore", invalid="ignore"):
            return g, dg / dz

    def _tower_pair(self, z):
        """``(G, G')`` from the tower's roots (eqs. (8.10)-(8.11)); the outermost
        subordination points of the off-axis points enter the table of
        :meth:`_warm_pair`."""
        # G' from the polisher where it gives G (the closed-form outermost level,
        # eq. (8.10)), else from the tower's stages at the polished leaf
        t, g, dg = self._solver.solve(z, leaf=False, derivative=True)
        need = np.flatnonzero(np.isnan(dg) & np.isfinite(t))
        if need.size:
            _, _, dzs, dgs = self._solver.curve.stages(t[need])
            with np.errstate(divide="ignore", invalid="ignore"):
                dg[need] = dgs[-1] / dzs[-1]
        edge = ~np.isfinite(t)          # solved next to the hard edge, without a leaf
        if edge.any():
            g[edge], dg[edge] = self._hard_edge_values(z[edge])[:2]
        # (real points too: strictly inside in a band, eqs. (8.34), (8.36), or real in a
        # gap, eq. (8.11))
        up = np.flatnonzero(np.isfinite(t) & (z.imag >= 0))
        if up.size:
            if self._solver.polisher is not None:
                tau = self._solver.curve.stages(t[up], derivatives=False)[0][-2]
                self._remember("_warm_table", z[up], tau)
            else:
                self._remember("_leaf_table", z[up], t[up])
        return g, dg

    def _warm_leaf_pair(self, z):
        """``(G, G', done)`` for a tower whose outermost level has no closed-form
        constituent (no polisher): the points within ``LEVEL_WARM_RTOL`` of a solved
        one, by Newton on the factored tower ``Z(t) = z`` from its leaf variable, where
        eq. (8.36) certifies the root (off the axis, and on it inside a band: the
        fixed point strictly inside the half-plane is unique there too), or, on the
        axis in a gap, eq. (8.11) (:meth:`_leaf_certified`).

        Eq. (8.34) level by level: a leaf with every stage's point and every partner's
        point strictly inside the upper half-plane, each partner's transform agreeing
        there and ``Im G < 0`` is the root the tower's selection of eq. (8.10) takes,
        whatever the start.  Points next to the hard edge (the local model of eq. (8.27)
        serves them) are left to the tower.
        """
        g = np.full(z.shape, np.nan + 0j)
        dg = np.full(z.shape, np.nan + 0j)
        done = np.zeros(z.shape, dtype=bool)
        solver = self._solver
        off = z.imag >= 0
        if solver.hard_edge_branch is not None and solver.extent is not None:
            off &= np.abs(z) > HARD_EDGE_MODEL_RTOL * solver.extent
        k, t = self._starts("_leaf_table", z, np.flatnonzero(off))
        if not k.size:
            return g, dg, done
        zk = z[k]

        def values(ta):
            zs, _, dzs, _ = solver.curve.stages(ta)
            return zs[-1], dzs[-1]
        sel = np.flatnonzero(_warm_newton_steps(values, zk, t))
        if not sel.size:
            return g, dg, done
        ok, gg, dgg = self._leaf_certified(zk[sel], t[sel])
        good = sel[ok]
        g[k[good]], dg[k[good]] = gg[ok], dgg[ok]
        done[k[good]] = True
        if good.size:
            self._remember("_leaf_table", zk[good], t[good])
        return g, dg, done

    def _leaf_certified(self, z, t):
        """``(ok, G, G')`` at leaf variables ``t`` (updated in place) of points ``z``:
        ``ok`` where eq. (8.36) certifies the Stieltjes branch, or, at a real point
        whose leaf Newton left real (to the branch tolerance, then made real), eq.
        (8.11): every level increasing and every partner's point on its branch."""
        curve = self._solver.curve
        eps = LEVEL_WARM_INSIDE_RTOL
        rtol = self.options.branch_rtol
        real = (z.imag == 0) & (np.abs(t.imag) <= rtol * np.abs(t))
        t[real] = t[real].real
        with np.errstate(all="ignore"):
            zs, gs, dzs, dgs = curve.stages(t)
            g, dg = gs[-1], dgs[-1] / dzs[-1]
            ok = np.isfinite(g) & np.isfinite(dg) & (g.imag < 0) & ~real
            # the leaf and every subordinating stage's point (the point under an outermost
            # affine or companion level is a function of z, as in the selection)
            inner = (zs[:-2] if curve.levels and not curve.levels[-1].subordinating
                     else zs[:-1])
            for pt in [t] + inner:
                ok &= pt.imag > eps * np.abs(pt)
            exact = zs[:-1] + [z]
            for level, k, pt in curve.partner_points(exact, gs):
                fin = np.isfinite(pt)           # a point at infinity restricts nothing
                ok &= ~fin | (pt.imag > eps * np.abs(pt))
                chk = np.flatnonzero(ok & fin)
                if chk.size:
                    mism = level.partner_check(pt[chk], exact[k - 1][chk], gs[k - 1][chk],
                                               gs[k][chk])
                    ok[chk] &= mism <= np.sqrt(rtol)
            up = real & np.isfinite(g) & np.isfinite(dg)
            up &= np.all(np.stack(dzs).real > 0, axis=0)
            k = np.flatnonzero(up)
            if k.size:
                up[k] = curve.partner_valid([v[k] for v in zs], [v[k] for v in gs], rtol)
            ok |= up
            g[up], dg[up] = g[up].real, dg[up].real
        return ok, g, dg

    def _remember(self, name, z, values):
        """Keep solved points (off the axis, and real ones of a tower's level) and their
        values, the latest first, in the table ``name`` (a :class:`WarmTable`):
        ``"_warm_table"`` the outermost subordination points (the starts of
        :meth:`_warm_pair`), ``"_leaf_table"`` the tower's leaf variables (those of
        :meth:`_warm_leaf_pair`)."""
        keep = np.isfinite(values)
        table = self.__dict__.get(name)
        if table is None:
            table = WarmTable(LEVEL_WARM_TABLE)
            setattr(self, name, table)
        table.add(z[keep], values[keep])

    def _starts(self, name, z, off):
        """The points ``off`` of ``z`` within ``LEVEL_WARM_RTOL`` (``GENERIC_WARM_RTOL``
        without a tower) of a point kept in the
        table ``name`` (:meth:`_remember`), and that point's value: ``(k, values)``,
        empty where the table is."""
        table = self.__dict__.get(name)
        if table is None or not len(table) or not off.size:
            return off[:0], np.empty(0, dtype=complex)
        zt, vt = table.nearest(z[off])
        rtol = (LEVEL_WARM_RTOL if isinstance(self._solver, RationalSolver)
                else GENERIC_WARM_RTOL)
        near = np.abs(z[off] - zt) <= rtol * np.abs(z[off])
        return off[near], vt[near]

    def _warm_pair(self, z):
        """``(G, G', done)``: the points within ``LEVEL_WARM_RTOL`` (``GENERIC_WARM_RTOL``
        over a nested constituent) of a solved one, by Newton on the outermost level
        from its subordination point (theory section 8.11, eq. (8.34); on or a rounding
        above the axis in a gap eq. (8.11)), where the root is certified; ``done`` marks
        them.  The real points are started apart from the others.

        For ``Im z > 0`` the subordination points of eq. (8.10) are the unique ones in
        the open upper half-plane on both transforms' principal branches (the
        Denjoy-Wolff point of the subordination map): a root with ``tau`` and the
        partner's point strictly inside it and the partner's transform equal to ``G``
        there is the solution whatever the start, as the tower's branch selection
        would give.
        """
        g = np.full(z.shape, np.nan + 0j)
        dg = np.full(z.shape, np.nan + 0j)
        done = np.zeros(z.shape, dtype=bool)
        # real points apart from the others: a nested constituent asked on the axis
        # may raise, which leaves only that group to the solver
        for group in (np.flatnonzero(z.imag > 0), np.flatnonzero(z.imag == 0)):
            k, tau = self._starts("_warm_table", z, group)
            if not k.size:
                continue
            zk = z[k]
            try:
                conv = self._warm_newton(zk, tau)
                sel = np.flatnonzero(conv)
                if not sel.size:
                    continue
                ok, gg, dgg = self._certified(zk[sel], tau[sel])
            except ConvergenceError:
                # a nested constituent not solved at a step's point: the solver decides
                continue
            good = sel[ok]
            g[k[good]], dg[k[good]] = gg[ok], dgg[ok]
            done[k[good]] = True
            if good.size:
                self._remember("_warm_table", z[k[good]], tau[good])
        return g, dg, done

    def _warm_newton(self, zk, tau):
        """Newton on the outermost level at ``zk`` from ``tau`` (updated in place) for
        :meth:`_warm_pair`; returns the points whose last step was within
        ``LEVEL_WARM_STEP_RTOL`` of ``|tau|``."""
        b = self.constituent

        def values(ta):
            gb, dgb = b._pair_or_far(ta)
            zz, _, dz, _ = self._level_values(ta, gb, dgb)
            return zz, dz
        return _warm_newton_steps(values, zk, tau)

    def _level_values(self, tau, gb, dgb):
        """``(z, G, dz/dtau, dG/dtau)`` of the outermost level at ``tau``: an S-level's
        in ``v = tau G_b`` (:meth:`SLevel.apply_at_pole`, eq. (8.27)), which keeps its
        digits next to the hard edge where ``w = v - 1 -> -1``."""
        if hasattr(self.level, "apply_at_pole"):
            return self.level.apply_at_pole(tau, gb, dgb)
        return self.level.apply(tau, gb, np.ones_like(tau), dgb)

    def _certified(self, z, tau):
        """``(ok, G, G')`` at outermost subordination points ``tau`` (updated in place) of
        points ``z``: ``ok`` where eq. (8.34) certifies the Stieltjes branch (``tau``
        and the partner's point strictly inside the upper half-plane, the partner's
        transform agreeing there, ``Im G < 0``), or, at a real point whose ``tau``
        Newton left real (to the branch tolerance, then made real), eq. (8.11): the
        constituent's and the partner's transforms real there, the partner's on its
        branch, and ``dz/dtau > 0``.  A point at most the branch tolerance above the
        axis whose ``tau`` lies in the closed upper half-plane within that tolerance of
        the axis is certified by eq. (8.11) too and keeps its complex ``G`` (theory
        section 8.11)."""
        b, level = self.constituent, self.level
        rtol = self.options.branch_rtol
        # eq. (8.11) also at points a little above a gap (Im z <= r|z|, as a host's
        # subordination point in its own gap is), whose tau stays in the closed upper
        # half-plane within r|tau| of the axis; only the real ones are made real
        flat = np.abs(tau.imag) <= rtol * np.abs(tau)
        real = (z.imag == 0) & flat
        near = real | ((z.imag <= rtol * np.abs(z)) & (tau.imag >= 0) & flat)
        tau[real] = tau[real].real
        with np.errstate(all="ignore"):
            gb, dgb = b._pair_or_far(tau)
            _, g, dz, dg = self._level_values(tau, gb, dgb)
            dg = dg / dz
            fin = np.isfinite(g) & np.isfinite(dg)
            ok = (fin & (g.imag < 0) & ~real
                  & (tau.imag > LEVEL_WARM_INSIDE_RTOL * np.abs(tau)))
            up = (fin & near & (np.abs(gb.imag) <= rtol * np.abs(gb)) & (dz.real > 0)
                  & (np.abs(dz.imag) <= rtol * np.abs(dz)))
            point = level.partner_point(z, tau, gb, g)
            if point is not None:
                ok &= np.isfinite(point) & (point.imag > LEVEL_WARM_INSIDE_RTOL * np.abs(point))
                chk = np.flatnonzero(ok)
                if chk.size:
                    mism = level.partner_check(point[chk], tau[chk], gb[chk], g[chk])
                    ok[chk] &= mism <= np.sqrt(rtol)
                # a real point's partner point is real; a point at infinity (the
                # partner's transform at 0) is consistent with every law
                sel = np.flatnonzero(up & np.isfinite(point))
                if sel.size:
                    mism = level.partner_check(point[sel].real + 0j, tau[sel], gb[sel], g[sel])
                    up[sel] &= mism <= rtol
            ok |= up
            # only the real points are made real: the others keep their complex G
            made_real = up & real
            g[made_real], dg[made_real] = g[made_real].real, dg[made_real].real
        return ok, g, dg

    def _moment_series(self, kmax, prec):
        return level_series(self.level, self.constituent, kmax, prec)

    def _tau(self, z):
        """Float outermost subordination point at each ``z`` (1-d)."""
        if isinstance(self._solver, RationalSolver):
            t, _ = self._solver.solve(z)
            tau = self._solver.curve.stages(t, derivatives=False)[0][-2]
            edge = ~np.isfinite(t)          # solved next to the hard edge, without a leaf
            if edge.any():
                tau[edge] = self._hard_edge_values(z[edge])[2]
            return tau
        return self._solver.solve(z)[0]

    def _mp_stieltjes(self, z):
        """Solve ``Phi(tau) = z`` with ``mpmath.findroot`` (eq. (8.10)) at the working precision.

        Started from the float solution (or, when that fails, from the
        continuation of the float solver at ``Re z + i``), it is an
        independent solve of the transcendental equation with the
        constituent's arbitrary-precision transform; the residual is checked
        against ``mp_tolerance`` of the working precision.
        """
        import mpmath
        from ..core._tolerances import mp_tolerance

        phi = self.level.mp(mpmath)
        b = self.constituent
        zc = complex(z)
        try:
            start = complex(self._tau(np.array([zc]))[0])
        except ConvergenceError:
            start = complex(self._tau(np.array([complex(zc.real, max(zc.imag, 1.0))]))[0])

        def f(tau):
            return phi(tau, b._mp_stieltjes(tau))[0] - z

        tau = mpmath.findroot(f, mpmath.mpc(start.real, start.imag), verify=False,
                              maxsteps=MP_MAX_STEPS)
        tol = mp_tolerance(mpmath.mp.dps) * (abs(z) + abs(tau))
        res = abs(f(tau))
        # Next to an edge the root is nearly double and its imaginary part is
        # only sqrt(tol)-accurate.
        if res > tol or tau.imag < -mpmath.sqrt(tol) * abs(tau):
            raise ConvergenceError(
                f"mpmath subordination solve at z={complex(z)!r}: residual {float(res):.3e} "
                f"(tolerance {float(tol):.1e}), tau={complex(tau)!r}", point=complex(z),
                residual=float(res), tolerance=float(tol))
        return phi(tau, b._mp_stieltjes(tau))[1]

    def _r_transform(self):
        if self.level.kind != "R":
            return None
        rb = self.constituent._r_transform()
        if rb is None:
            return None
        return self.level.transform.plus(rb, source=self)

    def _s_transform(self):
        if self.level.kind != "S":
            return None
        sb = self.constituent._s_transform()
        if sb is None:
            return None
        return self.level.transform.times(sb, source=self)


# --------------------------------------------------------------------------- #
# Public compositions
# --------------------------------------------------------------------------- #

#: Point-mass populations with more atoms than this go to the analytic path of
#: theory section 14 (the algebraic tower costs 4.9 s at 400 atoms and fails at
#: 1000); at most this many keep the algebraic path, which the tests check.
ANALYTIC_MIN_ATOMS = 400


def _order_at_hard_edge(constituent, eta):
    """Order ``m`` of the zero of an S-level's ``Phi`` at ``tau = 0`` over a constituent
    whose support starts at 0 with the density ``~ x**eta_b`` (eq. (8.31)):
    ``m = eta_b/eta`` when it is the integer 1 (``S(-1)`` finite: ``Phi ~ tau/S(-1)``),
    else None (no local model)."""
    ivs = constituent.interval_details()
    if not ivs or float(ivs[0].lo) != 0.0:
        return None
    eta_b = ivs[0].lo_exponent
    if not isinstance(eta_b, Fraction) or not eta_b < 0 or Fraction(eta_b) != Fraction(eta):
        return None
    return 1


def _check_law(law, name):
    if not isinstance(law, SpectralLaw):
        raise TypeError(f"{name} must be a freeattn law (SpectralLaw), got {type(law).__name__}")
    return law


def _check_nonnegative(law, name):
    if _nested_product(law):
        # a product of laws each checked on [0, oo) when it was formed (theory
        # section 14.39): its support is not located for this
        return
    lo = law.support()[0]
    if lo < 0:
        raise ValueError(f"{name} must be a law on [0, inf) for a free multiplicative "
                         f"convolution (sample covariance), but its support starts at {lo!r}")


def compose_affine(law, shift, scale):
    """``shift + scale * X`` as a subordination level (``scale > 0``)."""
    return SubordinationLaw(AffineLevel(shift, scale), law)


def sample_covariance(population, ratio, *, options=None):
    """Limiting eigenvalue law of a sample covariance matrix with any population.

    The law of the eigenvalues of the ``p x p`` matrix
    ``T^{1/2} X X^T T^{1/2} / N``, ``X`` a ``p x N`` matrix of i.i.d. N(0, 1)
    entries, ``p/N -> ratio``, the spectrum of ``T`` tending to
    ``population`` (Marchenko & Pastur 1967; Silverstein & Bai 1995).  It is
    ``marchenko_pastur(1, ratio) ⊠ population``: Silverstein's equation (5.3)
    is the S-level of theory eq. (8.9) with ``S(w) = 1/(1 + ratio w)``.

    Parameters
    ----------
    population : SpectralLaw
        Any law on ``[0, oo)``, including one computed by freeattn.
    ratio : float
        ``c = p/N`` in ``[1e-4, 1e4]``; an atom of mass ``1 - 1/c`` sits at 0
        when ``c > 1`` (and the population has no larger atom at 0).
    options : SolverOptions, optional

    Returns
    -------
    SubordinationLaw

    Raises
    ------
    TypeError
        If ``population`` is not a law.
    ValueError
        If the population has mass below 0 or ``ratio`` is out of range.

    Examples
    --------
    >>> import freeattn
    >>> pop = freeattn.point_masses([1.0, 10.0], [0.5, 0.5])
    >>> law = freeattn.sample_covariance(pop, 0.1)
    >>> len(law.intervals())                      # two bands, one per population atom
    2
    >>> round(law.mean(), 12)                     # the population mean
    5.5
    """
    from ..laws._elementary import marchenko_pastur
    from ..core._options import check_options

    _check_law(population, "population")
    _check_nonnegative(population, "population")
    from ..laws._elementary import PointMasses
    if isinstance(population, PointMasses) and population.values.size > ANALYTIC_MIN_ATOMS \
            and population.values.min() > 0:
        # Many atoms: the algebraic tower has degree ~ atoms; analytic subordination
        # (theory eqs. (14.4)-(14.5)) costs linear in them.
        from ._analytic import analytic_multiplicative
        return analytic_multiplicative(marchenko_pastur(1.0, ratio), population,
                                       options=None if options is None else
                                       check_options(options))
    return free_multiplicative(marchenko_pastur(1.0, ratio), population,
                               options=None if options is None else check_options(options))


def free_additive(a, b, *, options=None):
    """Free additive convolution ``a ⊞ b``: the law of ``A + U B U^*`` (``U`` Haar).

    Computed by subordination, ``G(z) = G_b(omega(z))``: where ``a`` has a
    rational R-transform (semicircle, Marchenko-Pastur, or a free additive
    convolution of those), by the R-level ``z = omega + R_a(G_b(omega))`` (theory
    eq. (8.8)) over ``b``, except over a sum that is itself solved by analytic
    subordination (a sum of sums, theory section 14.54); otherwise by the analytic
    subordination of the two Cauchy transforms (theory eqs. (14.1)-(14.5)).  A
    single atom ``s`` shifts the other law by ``s``.

    Parameters
    ----------
    a, b : SpectralLaw
        Any laws with a Cauchy transform.
    options : SolverOptions, optional

    Returns
    -------
    SpectralLaw
        A ``SubordinationLaw``, ``AnalyticLaw`` or ``AffineLaw``.

    Examples
    --------
    >>> import freeattn
    >>> law = freeattn.free_additive(freeattn.semicircle(1.0), freeattn.semicircle(2.0))
    >>> round(law.var(), 12), [round(v, 10) for v in law.support()]   # semicircle(3)
    (3.0, [-3.4641016151, 3.4641016151])
    """
    from ..core._options import check_options

    _check_law(a, "a")
    _check_law(b, "b")
    opts = check_options(options) if options is not None else a.options
    for atom, other in ((a, b), (b, a)):
        if options is None and _single_atom(atom):
            # ⊞ delta_s is the shift by s (R = s, theory eq. (8.8)): the other law's
            # representation mapped exactly, where a level would form tau = z - s and
            # lose the offsets from the edges (a user law's x**(-1/2) edges)
            return other.affine(float(atom.atoms()[0][0]), 1.0)
    ra, rb = a._r_transform(), b._r_transform()
    if ra is None and rb is None:
        # Neither law has a rational R-transform: analytic subordination of the two
        # Cauchy transforms, theory eqs. (14.1)-(14.5).
        from ._analytic import analytic_additive
        return analytic_additive(a, b, options=opts)
    if ra is None:
        a, b, ra = b, a, rb
    # Collapse R-levels: (c ⊞ d) ⊞ a = d ⊞ (R_a + R_c).
    if isinstance(b, SubordinationLaw) and b.level.kind == "R" and getattr(
            ra, "rational", True) and getattr(b.level.transform, "rational", True):
        partner = free_additive(a, b.level.partner) if ra.source is not None else None
        combined = ra.plus(b.level.transform, source=partner)
        return SubordinationLaw(RLevel(combined, partner), b.constituent, opts)
    from ._analytic import AnalyticLaw, analytic_additive
    if isinstance(b, AnalyticLaw) and not b.multiplicative:
        # a rational R-transform over a sum solved by analytic subordination: a sum of
        # sums (theory section 14.54), whose support comes from the curves of every
        # term (eq. (14.50)); as an R-level its generic solver would continue every
        # point in Im z through the nested sum
        return analytic_additive(a, b, options=opts)
    return SubordinationLaw(RLevel(ra, a), b, opts)


def free_multiplicative(a, b, *, options=None):
    """Free multiplicative convolution ``a ⊠ b`` of laws on ``[0, oo)``.

    The law of ``A^{1/2} U B U^* A^{1/2}``.  A single atom ``s > 0`` times an
    elementary law ``b`` is the scaled law ``s b`` (theory eq. (8.7)).  With a
    rational S-transform of ``a``, by one S-level: ``w = tau G_b(tau) - 1``, ``z = tau / S_a(w)``,
    ``G(z) = G_b(tau) S_a(w)`` (theory eq. (8.9)); products of such levels
    collapse into one.  Without one, by analytic subordination (theory
    eqs. (14.4)-(14.6)), or the many-law system of eq. (14.8) in all the
    factors: for three or more (an S-level over an attention law counting as
    its partner and its constituent, eq. (14.49)), for S-levels over
    closed-form constituents (attention laws, eq. (14.21)), for a rational
    S-transform times a product that is itself such a system (a sample
    covariance of a product of attention laws: one more factor, its level kept
    for the density where the system stalls, section 14.41), and for a
    collapsed level whose hard edge at 0 its tower cannot resolve (theory
    section 14.24).  A tall tower (degree at least 5) or one over a constituent
    whose bands lie decades apart has its support located and its density probed
    inside every band when it is built, and falls back where either raises
    (theory section 8.5): to the system of eq. (14.8) in its factors when they are
    three or more (section 14.64), else to eqs. (14.4)-(14.6).

    Parameters
    ----------
    a, b : SpectralLaw
        Laws on ``[0, oo)`` with positive means.
    options : SolverOptions, optional

    Returns
    -------
    SpectralLaw
        A ``SubordinationLaw``, ``AnalyticLaw``, ``ProductChainLaw`` or ``AffineLaw``.

    Raises
    ------
    ValueError
        If a law has mass below 0.

    Examples
    --------
    >>> import freeattn
    >>> mp = freeattn.marchenko_pastur(1.0, 1.0)
    >>> fc = freeattn.free_multiplicative(mp, mp)       # Fuss-Catalan: moments 1, 3, 12
    >>> [round(fc.moment(k), 10) for k in (1, 2, 3)], round(fc.support()[1], 12)
    ([1.0, 3.0, 12.0], 6.75)
    """
    from ..core._options import check_options

    _check_law(a, "a")
    _check_law(b, "b")
    _check_nonnegative(a, "a")
    _check_nonnegative(b, "b")
    opts = check_options(options) if options is not None else a.options
    for atom, other in ((a, b), (b, a)):
        loc, mass = atom.atoms()
        if (options is None and loc.size == 1 and mass[0] == 1.0 and loc[0] > 0
                and other._evaluation_cost < NESTED_SOLVE_FACTOR):
            # ⊠ delta_s (s > 0) of an elementary law is its scaling by s (S = 1/s, theory
            # eq. (8.9)): its representation mapped exactly (theory section 8.4); as an
            # S-level, MP(1.6425, 2.2333) ⊠ delta_3.132 took the conjugate root on the
            # axis.  A composed law keeps the atom as a factor of its level or system.
            return other.affine(0.0, float(loc[0]))
    sa, sb = a._s_transform(), b._s_transform()
    if sa is None and sb is None:
        # Neither law has a rational S-transform: analytic subordination, theory
        # eqs. (14.4)-(14.6) for two factors, one system in all of them (eq. (14.8))
        # when a factor is itself such a product; an S-level operand that is no
        # explicit row (eq. (14.21)) then enters it as its factors (eq. (14.49))
        from ._analytic import analytic_multiplicative
        from ._chain import ProductChainLaw, _LevelRow

        parts = _product_factors(a) + _product_factors(b)
        rows = _system_factors(a) + _system_factors(b)
        if len(parts) > 2 or all(isinstance(_LevelRow.of(p), _LevelRow) for p in parts):
            # one system in all the factors; for two S-levels over closed-form
            # constituents (attention laws) it is the explicit eq. (14.21)
            return ProductChainLaw(rows, opts)
        if len(rows) > 2:
            # two laws, one an S-level: the system in their factors, with the two-law
            # subordination of eq. (14.4) where it finds no solution (section 14.39)
            return ProductChainLaw(rows, opts, two_laws=(a, b))
        return analytic_multiplicative(a, b, options=opts)
    if (sa is None and _nested_product(a)) or (sb is None and _nested_product(b)):
        # a rational S-level over a system (a sample covariance of a product of
        # attention laws): one more factor of the system, not a level solved over it
        # point by point (theory section 14.41); the level answers where the system stalls
        from ._chain import ProductChainLaw

        return ProductChainLaw(_system_factors(a) + _system_factors(b), opts, two_laws=(a, b),
                               form=lambda a, b: _collapsed_product(a, b, sa, sb, opts))
    law = _deep_hard_edge_as_chain(_collapsed_product(a, b, sa, sb, opts), opts)
    law = _discrete_tower_as_chain(law, opts)
    if isinstance(law, SubordinationLaw) and (_scales_apart(law.constituent)
                                             or _tall_tower(law)):
        # a constituent whose bands lie decades apart, or a tall tower: the tower's
        # critical points (eq. (8.12)) and roots can be lost among roots of every
        # size; its support is located now and its density probed inside every band,
        # and a failure falls back to the system of all the factors or, for two, to
        # analytic subordination (theory eq. (14.4), section 14.64)
        try:
            _probe_bands(law)
        except ConvergenceError:
            rows = _system_factors(a) + _system_factors(b)
            if len(rows) > 2:
                # three or more factors: the one system in all of them (eq. (14.8)),
                # with the two-law subordination of eq. (14.4) where it stalls (theory
                # section 14.64)
                from ._chain import ProductChainLaw

                return ProductChainLaw(rows, opts, two_laws=(a, b))
            from ._analytic import analytic_multiplicative

            return analytic_multiplicative(a, b, options=opts)
    return law


#: A constituent whose narrowest band is below this fraction of its extent has
#: bands decades apart (an attention law at small beta: ``[0, 5.3e-12]`` beside
#: ``[3.4e-6, 3.1e-5]``), where a ⊠'s tower can lose its critical points.
SCALES_APART_RTOL = 1e-6


#: Fractions of each band's width at which a tall tower's density is probed before
#: the tower is kept (:func:`_probe_bands`).
PROBE_FRACTIONS = (0.01, 0.15, 0.5, 0.85, 0.99)
#: A band on ``(0, oo)`` spanning more than ``PROBE_LOG_RATIO`` is also probed at
#: ``lo (hi/lo)**f`` for these fractions ``f`` (the width's fractions all lie in its top
#: decades; theory section 14.60: a tower's lower edge of a band spanning 4.7 decades was
#: 1.3 times too low, its density 0 just above it).
PROBE_LOG_RATIO = 10.0
PROBE_LOG_FRACTIONS = (0.01, 0.1, 0.5)


def _tall_tower(law):
    """Whether ``law`` is solved on a rational tower of degree at least
    ``EDGE_SEED_MIN_DEGREE`` (whose expanded coefficients can cancel)."""
    from ._rational_solver import EDGE_SEED_MIN_DEGREE, RationalSolver

    solver = law._solver
    return isinstance(solver, RationalSolver) and solver.curve.degree >= EDGE_SEED_MIN_DEGREE


def _probe_bands(law):
    """``law``'s support, and its own density (the tower's solve, not the analytic form
    of section 14.60) at ``PROBE_FRACTIONS`` of every band and, in a band on ``(0, oo)``
    spanning decades, at ``PROBE_LOG_FRACTIONS`` of its logarithmic extent (raises
    :class:`ConvergenceError` where either fails)."""
    ivs = law.interval_details()
    if ivs:
        lo = np.array([float(iv.lo) for iv in ivs])
        hi = np.array([float(iv.hi) for iv in ivs])
        x = [(lo[:, None] + np.outer(hi - lo, PROBE_FRACTIONS)).ravel()]
        wide = (lo > 0) & (hi > PROBE_LOG_RATIO * lo)
        if wide.any():
            # the bottom decades of a band spanning many (eq. (8.12)'s critical points
            # there are the ones lost among roots of every size)
            ratio = hi[wide] / lo[wide]
            x.append((lo[wide][:, None] * ratio[:, None] ** np.array(PROBE_LOG_FRACTIONS))
                     .ravel())
        law._level_density(np.concatenate(x))


def _scales_apart(law):
    """Whether ``law``'s narrowest band is below ``SCALES_APART_RTOL`` of its extent."""
    ivs = law.interval_details()
    if len(ivs) < 2:
        return False
    extent = max(abs(float(ivs[0].lo)), abs(float(ivs[-1].hi)))
    return min(float(iv.hi) - float(iv.lo) for iv in ivs) < SCALES_APART_RTOL * extent


def _collapsed_product(a, b, sa, sb, opts):
    """``a ⊠ b`` as one S-level (theory section 8.3): at least one of the
    S-transforms ``sa``, ``sb`` is rational; the S-levels of ``b`` are merged."""
    if sa is None:
        a, b, sa = b, a, sb
    if isinstance(b, SubordinationLaw) and b.level.kind == "S" and getattr(
            sa, "rational", True) and getattr(b.level.transform, "rational", True):
        partner = free_multiplicative(a, b.level.partner)
        combined = sa.times(b.level.transform, source=partner)
        return SubordinationLaw(SLevel(combined, partner), b.constituent, opts)
    return SubordinationLaw(SLevel(sa, a), b, opts)


#: A collapsed S-level whose density is ``~ x**(-k/(k + 1))`` at 0 with ``k`` at
#: least this, over a constituent whose support reaches 0 (no local model of
#: eq. (8.27)), is solved as the many-law system of eq. (14.8) instead: its tower
#: keeps no digits next to 0 (``MP(e - 1, 1)^⊠3`` lost the branch at ``x ~ 1e-51``,
#: ``MP(1, 1)^⊠4`` at ``x ~ 1e-30``; theory section 14.24).
CHAIN_HARD_EDGE_ORDER = 3


def _product_factors(law, levels=False):
    """The factors of a ``⊠``: a chain's, an analytic product's two, and with
    ``levels`` those of a collapsed S-level (its partner's and its constituent),
    flattened; ``[law]`` for any other law."""
    from ._analytic import AnalyticLaw
    from ._chain import ProductChainLaw

    if isinstance(law, ProductChainLaw):
        return list(law.factors)
    if isinstance(law, AnalyticLaw) and law.multiplicative:
        return [law.a, law.b]
    if levels and _is_s_level(law):
        return (_product_factors(law.level.partner, levels)
                + _product_factors(law.constituent, levels))
    return [law]


def _is_s_level(law):
    """Whether ``law`` is an S-level law (the pole form of eq. (8.27)): ``partner ⊠
    constituent`` by eq. (8.9)."""
    return isinstance(law, SubordinationLaw) and hasattr(law.level, "apply_at_pole")


def _system_factors(law):
    """``law``'s rows in the system of eq. (14.8): its factors (:func:`_product_factors`),
    and in place of an S-level that is no explicit row of eq. (14.21) (its constituent
    not in closed form: an attention law's level over a partner) its partner's and its
    constituent's, recursively (theory eq. (14.49), section 14.39)."""
    from ._chain import _LevelRow

    rows = []
    for part in _product_factors(law):
        if _is_s_level(part) and not isinstance(_LevelRow.of(part), _LevelRow):
            rows += _system_factors(part.level.partner) + _system_factors(part.constituent)
        else:
            rows.append(part)
    return rows


def _nested_product(law):
    """Whether ``law`` is a ``⊠`` solved numerically in its factors (the system of eq.
    (14.8) or the subordination of eq. (14.4))."""
    from ._analytic import AnalyticLaw
    from ._chain import ProductChainLaw

    return isinstance(law, ProductChainLaw) or (isinstance(law, AnalyticLaw)
                                                and law.multiplicative)


#: A tall tower of at least three factors over atoms on ``(0, oo)`` whose lowest band
#: starts below this fraction of its upper end is solved as the system of eq. (14.8)
#: (:func:`_discrete_tower_as_chain`): the tower's edges keep its absolute rounding
#: ``eps S`` (eq. (8.30)), ``eps S/lo`` relative to the lowest edge ``lo``, 2.2e-12 at
#: this fraction (theory section 14.62).
TOWER_CHAIN_SPAN = 1e-4


def _discrete_tower_as_chain(law, opts):
    """``law``, or the many-law system of eq. (14.8) in its factors where ``law`` is a level
    of at least three factors over a discrete constituent on ``(0, oo)`` that is either a
    tall tower (:func:`_tall_tower`) whose lowest band starts below ``TOWER_CHAIN_SPAN`` of
    its upper end, or no tower at all (the level's generic solver; theory section 14.62):
    there the level's edge and density next to the atom at 0 keep only its absolute
    rounding, or lose the branch.  The system has no other form to fall back to (the
    level is the inaccurate one there): where it stalls it raises.  A tower whose support
    is not located stays (the probe of :func:`free_multiplicative` decides)."""
    from ..laws._elementary import PointMasses
    from ._chain import ProductChainLaw
    from ._rational_solver import RationalSolver

    if not (_is_s_level(law) and isinstance(law.constituent, PointMasses)
            and law.constituent.values.min() > 0):
        return law
    factors = _product_factors(law, levels=True)
    if len(factors) < 3:
        return law
    if isinstance(law._solver, RationalSolver):
        # a tower: the system only where it is tall and its lowest band lies decades below
        # its scale (a level without a tower, solved by its generic solver point by point,
        # always: seed 106 / draw 31 of the depth-3 campaign put its lower edge at 6.19e-8
        # where eq. (14.67) has 1.17e-7)
        if not _tall_tower(law):
            return law
        try:
            ivs = law.interval_details()
        except ConvergenceError:
            return law
        if not ivs or not 0.0 < float(ivs[0].lo) < TOWER_CHAIN_SPAN * float(ivs[-1].hi):
            return law
    return ProductChainLaw(factors, opts)


def _deep_hard_edge_as_chain(law, opts):
    """``law``, or the many-law system of its factors (:data:`CHAIN_HARD_EDGE_ORDER`)."""
    from ._chain import ProductChainLaw

    eta = law._hard_edge
    if not isinstance(eta, Fraction) or law.constituent.support()[0] > 0:
        return law
    if -eta / (1 + eta) < CHAIN_HARD_EDGE_ORDER:
        return law
    factors = _product_factors(law, levels=True)
    return ProductChainLaw(factors, opts) if len(factors) > 2 else law
