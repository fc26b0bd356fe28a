"""Rectangular free additive convolution ``⊞_λ`` by operator-valued subordination.

For ``p x n`` matrices ``A, B`` (``p/n -> λ`` in ``(0, 1]``), bi-unitarily
invariant and independent, the law of the singular values of ``A + B`` is
``a ⊞_λ b`` (Benaych-Georges 2009).  Theory note 16: the Hermitizations
``[[0, X], [X*, 0]]`` are free with amalgamation over the diagonal algebra
``D = C ⊕ C``; their ``D``-valued Cauchy transform has the closed form of eq.
(16.2) in the Cauchy transform of the squared singular values; the
subordination map of eq. (16.5) (Belinschi, Mai & Speicher 2017) is iterated
from any start, polished by Newton on ``C**2`` (eq. (16.7)) and continued to the
real axis; the edges are the real folds of the fixed-point map, where
``det(I - Df) = 0`` (eq. (16.8); at ``λ = 1`` the symmetric form (16.9)), solved by
bordered Newton.

The solver here is the two-component analogue of the scalar one of
:mod:`freeattn.compose._analytic` and :mod:`freeattn.compose._fixed_point`
(theory section 14); only the chunked sum over atoms (``ATOM_BLOCK``) is
repeated from there, the rest is written for ``C**2``.
"""

import math
from fractions import Fraction

import numpy as np

from ..core._checks import as_real_array, real_scalar
from ..core._errors import ConvergenceError
from ..core._options import check_options
from ._fixed_point import (FIXED_POINT_RTOL, EdgeProblem, FixedPointProblem, SystemProblem,
                           bordered_newton, iterate, newton_system)
from ..laws._law_base import (FAR_RADIUS, FAR_TERMS, HARD, NESTED_SOLVE_FACTOR, SOFT,
                              AffineLaw, Interval, SingularValueLaw, SpectralLaw)

__all__ = ["RectangularLaw", "RectangularSquaredLaw", "rectangular_free_additive",
           "rectangular_cumulants", "rectangular_moments"]

#: (The relative residual ``max|w - f(w)| / (scale + |w|)`` at which a fixed point
#: is converged is the shared ``FIXED_POINT_RTOL`` of the fixed-point strategies.)
#: Newton stops when its step is below this fraction of ``scale + |w|``: the
#: residual has reached its rounding floor (which, with the conditioning of
#: ``I - Df``, can lie a few times above ``FIXED_POINT_RTOL``).
NEWTON_STEP_RTOL = 4 * np.finfo(float).eps
#: A residual below this fraction of ``scale + |w|`` is at its rounding floor: a
#: full Newton step that does not lower it ends the solve (no halvings).
NEWTON_FLOOR_RTOL = 1e-13
#: Most iterations of eq. (16.6) per call (far from the axis it contracts fast;
#: it only has to reach the basin of Newton).
MAX_ITERATIONS = 400
#: Most Newton steps of eq. (16.7) per call, and halvings of a rejected step (a
#: step cut below 1/256 means the start is outside the basin: the continuation
#: then retries the level from closer, which is cheaper than more halvings).
MAX_NEWTON_STEPS = 40
MAX_HALVINGS = 8
#: The bordered Newton of the edge system (16.8) takes the shared defaults of
#: :class:`~._fixed_point.EdgeProblem`: steps of ``x`` down to 64 ulps, residuals
#: to 1e-10 of the scale and ``|det(I - Df)|`` to 1e-6 (near a fold it is only
#: known to ``sqrt(eps)`` through the rounding of ``w``).
#: A real fixed point has ``|Im f| <= REAL_RTOL (scale + |w|)``: beyond it the
#: point left the domain where the constituents' transforms are real.
REAL_RTOL = 1e-8
#: Points of the grid on which the support is located before each edge is solved
#: from eq. (16.8) (gaps narrower than the grid spacing can be missed; the mass
#: check of the representation then fails loudly).
SUPPORT_GRID = 1200
#: The grid starts this fraction of the scale above 0 (``b = 0`` is singular).
GRID_START_RTOL = 1e-6
#: ``max |Im w|`` relative to ``|w| + scale`` above which a real point is taken as
#: inside the support (a start for the edge solve, never the answer).
INSIDE_RTOL = 1e-7
#: Continuation ``b = x + i y``: ``y = CONT_START * scale``, divided by a factor
#: that starts at ``CONT_FACTOR``, doubles after a solved level up to
#: ``CONT_MAX_FACTOR`` and falls to its square root after a failed one (below
#: ``CONT_MIN_FACTOR`` the point is given up), until ``y < CONT_STOP * scale``;
#: then ``y`` is set to its target.
CONT_START = 1.0
CONT_FACTOR = 4.0
CONT_MAX_FACTOR = 8.0
CONT_MIN_FACTOR = 1.0 + 1e-3
CONT_STOP = 1e-15
#: A continued solution must have ``Im w_j >= Im b - BRANCH_RTOL (scale + |w|)``
#: (the subordination point satisfies ``Im w >= Im b``, eq. (16.6)); the slack is
#: rounding.
BRANCH_RTOL = 1e-13
#: Bisections of a grid cell holding an edge before the bordered Newton is tried
#: again, when it did not converge from the grid point outside the support.
EDGE_BISECTIONS = 20
#: An edge where ``|1/G_mu_a|`` at the subordination point is below this fraction
#: of ``scale**2`` is a pole of ``G``: a density ``~ |s - e|**(-1/2)`` (theory
#: section 16.8).
POLE_EDGE_RTOL = 1e-6
#: Relative residual at which a boundary value (``y = 0``) is accepted.
BOUNDARY_RTOL = 1e-11
#: Beyond this multiple of the top of the support of ``mu``, ``1/G_mu - zeta`` is
#: summed from the moment series (``FAR_TERMS`` terms: truncation below
#: ``SERIES_RADIUS**-(FAR_TERMS + 1)`` = 1e-26 relative).
SERIES_RADIUS = 100.0
#: Complex entries per block of the chunked sum over atoms.
ATOM_BLOCK = 2 ** 20
#: Mass below which a candidate atom of eq. (16.10) is absent (rounding of sums of
#: masses that should cancel).
ATOM_MASS_ATOL = 1e-14
#: Highest order of the exact moments (rectangular cumulants, eq. (16.12)); beyond it
#: quadrature of the representation.  The series reversion in floating point loses
#: digits with the order: against the same series at 50 digits (two atoms ⊞_0.3
#: Marchenko-Pastur) <= 2.4e-14 relative up to order 8, 1.3e-12 at order 12.
EXACT_MOMENT_ORDER = 8
#: Most steps of ``mpmath.findroot`` in the arbitrary-precision path (Newton from
#: the float solution doubles the digits at every step).
MP_MAX_STEPS = 50
#: Imaginary part, relative to the scale, below which ``Im b`` counts as 0 and
#: the solve is continued from above instead of iterated.
ITERATE_MIN_IM_RTOL = 1e-3


def _upper_sqrt(u):
    """Principal square root in the closed upper half-plane (real negatives read from above)."""
    u = np.asarray(u, dtype=complex)
    return np.sqrt(np.where(u.imag == 0, u.real + 0j, u))


# --------------------------------------------------------------------------- #
# The constituents: G of the squared singular values, eq. (16.2)
# --------------------------------------------------------------------------- #

class _Squared:
    """``G_mu`` of ``mu``, the law of ``s**2`` for ``s ~ law``, anywhere off ``supp mu``.

    Three routes: the atoms ``s_i**2`` of a discrete law (a chunked sum); the
    squared law of a :class:`SingularValueLaw` (its own solver); any other law
    on ``[0, oo)`` through ``G_mu(r**2) = (G_s(r) - G_s(-r)) / (2 r)`` (eq. (16.3)).
    Positive dilations ``c s`` are unwrapped: ``G_mu(zeta) = G_base(zeta/c**2)/c**2``.
    """

    def __init__(self, law):
        from ..laws._elementary import PointMasses

        factor = 1.0
        base = law
        while isinstance(base, AffineLaw) and base.shift == 0.0 and base.scale > 0:
            factor *= base.scale
            base = base.base
        self.law = law
        self.factor = factor
        self.c2 = factor * factor
        if isinstance(base, PointMasses):
            self.kind = "atoms"
            self.values = np.asarray(base.values, dtype=float)
            self.t = (factor * self.values) ** 2
            self.m = np.asarray(base.weights, dtype=float)
        elif isinstance(base, SingularValueLaw):
            self.kind = "squared"
            self.sq = base.squared()
        else:
            self.kind = "generic"
            self.sv = law
        self._far = None
        self._moments = None
        loc, mass = law.atoms()
        self.atom_t = loc ** 2
        self.atom_m = mass

    def pair(self, zeta):
        """``(G_mu(zeta), G_mu'(zeta))`` for a 1-d complex array (``G(conj u) = conj G(u)``)."""
        zeta = np.asarray(zeta, dtype=complex)
        low = zeta.imag < 0
        v = np.where(low, np.conj(zeta), zeta)
        with np.errstate(all="ignore"):
            if self.kind == "atoms":
                g = np.empty(v.shape, dtype=complex)
                d = np.empty(v.shape, dtype=complex)
                step = max(1, ATOM_BLOCK // max(self.t.size, 1))
                for i in range(0, v.size, step):
                    r = 1.0 / (v[i:i + step, None] - self.t[None, :])
                    g[i:i + step] = r @ self.m
                    d[i:i + step] = -(r * r) @ self.m
            elif self.kind == "squared":
                gs, ds = self._squared_pair(v / self.c2)
                g, d = gs / self.c2, ds / self.c2 ** 2
            else:
                g, d = self._generic_pair(v)
        return np.where(low, np.conj(g), g), np.where(low, np.conj(d), d)

    def _squared_pair(self, v):
        """The squared law's ``(G, G')``; beyond ``FAR_RADIUS`` times its scale from its
        moment series with moments computed once (the far-field rule of
        ``SpectralLaw._stieltjes``, which recomputes them at every call)."""
        far = np.abs(v) > FAR_RADIUS * self.sq._scale()
        if far.any() and self._far is None:
            exact = self.sq._moments_exact(FAR_TERMS)
            self._far = (False,) if exact is None else (True,) + tuple(exact)
        if not far.any() or not self._far[0]:
            return self.sq._stieltjes_pair(v)
        g = np.empty(v.shape, dtype=complex)
        d = np.empty(v.shape, dtype=complex)
        if (~far).any():
            g[~far], d[~far] = self.sq._stieltjes_pair(v[~far])
        _, scale, m = self._far
        u = scale / v[far]
        acc = np.zeros(u.shape, dtype=complex)
        dacc = np.zeros(u.shape, dtype=complex)
        for k in range(len(m) - 1, -1, -1):          # sum_k m_k u**(k+1), u = scale/v
            acc = acc * u + m[k]
            dacc = dacc * u + (k + 1) * m[k]
        g[far] = acc * u / scale
        d[far] = -dacc * u * u / scale ** 2
        return g, d

    def _generic_pair(self, v):
        """Eq. (16.3) for ``Im v >= 0``: ``r = sqrt(v)`` in the first quadrant."""
        r = _upper_sqrt(v)
        gp, dp = self.sv._stieltjes_pair(r)
        # G_s(-r) = conj G_s(-conj r), -conj r in the closed upper half-plane
        gm, dm = self.sv._stieltjes_pair(-np.conj(r))
        gm, dm = np.conj(gm), np.conj(dm)
        g = (gp - gm) / (2.0 * r)
        d = ((dp + dm) / (2.0 * r) - (gp - gm) / (2.0 * r * r)) / (2.0 * r)
        return g, d

    def reciprocal(self, zeta):
        """``(q, q', q - zeta)`` with ``q = 1/G_mu``, ``q' = -G_mu'/G_mu**2``.

        At an atom ``t_j`` of mass ``m_j``: ``(0, 1/m_j, -t_j)``.  ``q - zeta``
        (the ``h`` of eq. (16.4)) is formed without cancellation:
        ``q - zeta = -e/G_mu`` with ``e = zeta G_mu - 1 = int t/(zeta - t) dmu``,
        summed over the atoms of a discrete law, and from the moment series
        ``e = sum_k m_k/zeta**k`` beyond ``SERIES_RADIUS`` times the support of
        ``mu`` for the others (where ``1/G_mu - zeta`` would lose
        ``log10 |zeta|/scale`` digits).
        """
        zeta = np.asarray(zeta, dtype=complex)
        g, d = self.pair(zeta)
        with np.errstate(all="ignore"):
            q, dq = 1.0 / g, -d / (g * g)
            r = q - zeta
            if self.kind == "atoms":
                e = np.empty(zeta.shape, dtype=complex)
                step = max(1, ATOM_BLOCK // max(self.t.size, 1))
                for i in range(0, zeta.size, step):
                    e[i:i + step] = (1.0 / (zeta[i:i + step, None] - self.t[None, :])) @ (
                        self.m * self.t)
                r = -e / g
            else:
                far = np.abs(zeta) > SERIES_RADIUS * self._top()
                if far.any():
                    mom = self._series_moments()
                    u = self._top() / zeta[far]
                    e = np.zeros(u.shape, dtype=complex)
                    for mk in mom[::-1]:
                        e = (e + mk) * u
                    r[far] = -zeta[far] * e / (1.0 + e)
        pole = ~np.isfinite(g)
        if pole.any():
            for k in np.flatnonzero(pole):
                hit = self.atom_t == zeta[k]
                if hit.any():
                    q[k], dq[k], r[k] = 0.0, 1.0 / float(self.atom_m[hit][0]), -zeta[k]
        return q, dq, r

    def mp_g(self, zeta):
        """``G_mu(zeta)`` at the working mpmath precision (the constituent's own
        arbitrary-precision transform; ``G(conj u) = conj G(u)``)."""
        import mpmath

        if zeta.imag < 0:
            return mpmath.conj(self.mp_g(mpmath.conj(zeta)))
        c2 = mpmath.mpf(self.factor) ** 2
        if self.kind == "atoms":
            return mpmath.fsum(mpmath.mpf(float(m)) / (zeta - c2 * mpmath.mpf(float(v)) ** 2)
                               for v, m in zip(self.values, self.m))
        if self.kind == "squared":
            return self.sq._mp_stieltjes(zeta / c2) / c2
        r = mpmath.sqrt(zeta)
        if r.real < 0:
            r = -r
        minus = mpmath.conj(self.sv._mp_stieltjes(-mpmath.conj(r)))
        return (self.sv._mp_stieltjes(r) - minus) / (2 * r)

    def _top(self):
        """Largest point of the support of ``mu`` (the squared law)."""
        return max(float(self.law.support()[1]) ** 2, np.finfo(float).tiny)

    def _series_moments(self):
        """``E[(s**2/top)**k]``, ``k = 1..FAR_TERMS`` (cached)."""
        if self._moments is None:
            self._moments = _even_moments(self, FAR_TERMS, self._top())
        return self._moments


# --------------------------------------------------------------------------- #
# The fixed-point problem on C**2, eqs. (16.4)-(16.8)
# --------------------------------------------------------------------------- #

class _Problem:
    """``w = f_b(w) = b + h_b(b + h_a(w))`` on ``C**2`` (theory eq. (16.5)).

    ``w = (w1, w2)`` are the two diagonal entries of the ``D``-valued point; the
    map is vectorized over points (each component a 1-d array).
    """

    def __init__(self, a, b, ratio, scale):
        self.a, self.b, self.lam, self.scale = a, b, ratio, scale
        #: At ratio 1 the map commutes with the swap of the two blocks, so for
        #: ``b1 = b2`` the fixed point has ``w1 = w2`` (eq. (16.9)); it is kept
        #: exactly symmetric (the scaling ``(t w1, w2/t)`` that leaves
        #: ``w1 w2`` alone is nearly a symmetry of ``f_b`` for small ``|b|``, along
        #: which an unconstrained solve drifts).
        self.sym = ratio == 1.0

    def h(self, c, w1, w2):
        """``h(w) = F(w) - w`` of one constituent and its Jacobian (eqs. (16.4), (16.7))."""
        lam = self.lam
        zeta = w1 * w2
        q, dq, r = c.reciprocal(zeta)
        with np.errstate(all="ignore"):
            den = (1.0 - lam) * q + lam * zeta
            h1 = r / w2                          # q/w2 - w1
            h2 = lam * w2 * r / den              # w2 q/den - w2
            j11 = dq - 1.0
            j12 = dq * w1 / w2 - q / (w2 * w2)
            j21 = lam * w2 * w2 * (zeta * dq - q) / (den * den)
            j22 = ((1.0 - lam) * q * q + lam * zeta * zeta * dq) / (den * den) - 1.0
        return h1, h2, (j11, j12, j21, j22)

    def phi(self, w1, w2, b1, b2):
        """``f_b(w)`` and its Jacobian ``Df = Dh_b(u) Dh_a(w)``, ``u = b + h_a(w)``."""
        a1, a2, (p11, p12, p21, p22) = self.h(self.a, w1, w2)
        u1, u2 = b1 + a1, b2 + a2
        c1, c2, (q11, q12, q21, q22) = self.h(self.b, u1, u2)
        with np.errstate(all="ignore"):
            jac = (q11 * p11 + q12 * p21, q11 * p12 + q12 * p22,
                   q21 * p11 + q22 * p21, q21 * p12 + q22 * p22)
        if self.sym:
            return b1 + c1, b1 + c1, (jac[0], jac[1], jac[1], jac[0])
        return b1 + c1, b2 + c2, jac

    def g1(self, w1, w2):
        """``G_1 = w2 G_mu_a(w1 w2)`` of ``A + B`` at its subordination point (eq. (16.2))."""
        q = self.a.reciprocal(w1 * w2)[0]
        with np.errstate(all="ignore"):
            return w2 / q


class _RectangularIteration(FixedPointProblem):
    """The map ``w -> f_b(w)`` of eq. (16.6) on pairs (leading axis), for :func:`iterate`."""

    def __init__(self, pr):
        self._pr = pr
        self.scale = pr.scale

    def phi(self, w, b):
        f1, f2, _ = self._pr.phi(w[0], w[1], b, b)
        return np.stack([f1, f2]), None


def _iterate(pr, b, w1, w2, max_iterations=MAX_ITERATIONS):
    """The iteration ``w <- f_b(w)`` of eq. (16.6), convergent for ``Im b > 0`` from
    any start: the shared Belinschi-Bercovici :func:`iterate` on the pair."""
    w = iterate(_RectangularIteration(pr), b, np.stack([w1, w2]), max_iterations).value
    return w[0], w[1]


class _RectangularNewton(SystemProblem):
    """``w - f_b(w) = 0`` in ``C**2`` (eq. (16.7)) as a
    :class:`~._fixed_point.SystemProblem`: the Newton step solves the 2 x 2
    Jacobian ``1 - Df`` (along ``(1, 1)`` for a symmetric problem, where the
    eigenvalue is ``1 - Df11 - Df12``), both components stay in the closed
    upper half-plane."""

    def __init__(self, pr):
        self._pr = pr

    def evaluate(self, w, b):
        pr = self._pr
        f1, f2, jac = pr.phi(w[0], w[1], b, b)
        with np.errstate(all="ignore"):
            r1, r2 = w[0] - f1, w[1] - f2
            a11, a12, a21, a22 = 1.0 - jac[0], -jac[1], -jac[2], 1.0 - jac[3]
            if pr.sym:
                s1 = r1 / (a11 + a12)
                s2 = s1
            else:
                det = a11 * a22 - a12 * a21
                s1 = (a22 * r1 - a12 * r2) / det
                s2 = (a11 * r2 - a21 * r1) / det
        return np.stack([r1, r2]), np.stack([s1, s2]), ()

    def _size(self, w):
        return self._pr.scale + np.max(np.abs(w), axis=0)

    def error(self, f, w, extra):
        return np.max(np.abs(f), axis=0) / self._size(w)

    def admissible(self, w, b, extra):
        return np.all(w.imag >= 0, axis=0)


def _newton(pr, b, w1, w2, max_steps=MAX_NEWTON_STEPS):
    """Damped Newton on ``w - f_b(w) = 0`` in ``C**2`` (eq. (16.7)), by the shared
    strategy :func:`~._fixed_point.newton_system` (:class:`_RectangularNewton`).

    A step that takes a component below the real axis, or raises the residual
    ``max |w - f_b(w)|``, is halved; a point with no acceptable step stops, and
    so does a point whose step is at rounding (``NEWTON_STEP_RTOL``) or whose
    residual, already at its rounding floor (``NEWTON_FLOOR_RTOL``), a step does
    not halve.  Returns ``(w1, w2, residual)``.
    """
    res = newton_system(_RectangularNewton(pr), b, np.stack([w1, w2]).astype(complex),
                        max_steps, FIXED_POINT_RTOL, step_rtol=NEWTON_STEP_RTOL,
                        halvings=MAX_HALVINGS, floor_rtol=NEWTON_FLOOR_RTOL)
    w = res.value
    with np.errstate(invalid="ignore"):
        resid = res.residual * (pr.scale + np.maximum(np.abs(w[0]), np.abs(w[1])))
    return w[0], w[1], resid


def _solve_at(pr, x, y_final, polish_real=False):
    """Subordination point at ``b = (x + i y, x + i y)`` by continuation in ``y``.

    From ``y = CONT_START * scale`` (iteration (16.6), then Newton (16.7)) down
    to ``y_final`` (``>= 0``), each level started from the last.  The ratio of
    successive levels adapts per point: it starts at ``CONT_FACTOR``, doubles
    (up to ``CONT_MAX_FACTOR``) after a level that Newton solves and falls to its
    square root after one it does not (the level is then retried from the last
    solution); a solution with ``Im w < Im b`` is off the branch (eq. (16.6)) and
    rejected.  With ``polish_real``, points of the axis whose solution is real to
    ``INSIDE_RTOL`` are polished in real arithmetic (outside the support the
    fixed point is real).  Raises ``ConvergenceError`` with the numbers when a
    point cannot be continued or its final residual is above ``BOUNDARY_RTOL``.
    """
    s = pr.scale
    x = np.asarray(x, dtype=float)
    y_final = np.asarray(y_final, dtype=float)
    y = np.maximum(CONT_START * s, y_final)
    b = x + 1j * y
    w1, w2 = _iterate(pr, b, b + 1j * s, b + 1j * s)
    w1, w2, res = _newton(pr, b, w1, w2)
    fac = np.full(x.shape, CONT_FACTOR)
    done = y == y_final
    while not done.all():
        act = np.flatnonzero(~done)
        ya = np.maximum(y[act] / fac[act], y_final[act])
        ya = np.where(ya < CONT_STOP * s, y_final[act], ya)
        ba = x[act] + 1j * ya
        n1, n2, nres = _newton(pr, ba, w1[act], w2[act])
        size = s + np.maximum(np.abs(n1), np.abs(n2))
        with np.errstate(invalid="ignore"):
            good = ((nres <= BOUNDARY_RTOL * size) & (n1.imag >= ya - BRANCH_RTOL * size)
                    & (n2.imag >= ya - BRANCH_RTOL * size))
        acc = act[good]
        w1[acc], w2[acc], res[acc], y[acc] = n1[good], n2[good], nres[good], ya[good]
        fac[acc] = np.minimum(2.0 * fac[acc], CONT_MAX_FACTOR)
        rej = act[~good]
        fac[rej] = np.sqrt(fac[rej])
        stuck = rej[fac[rej] < CONT_MIN_FACTOR]
        if stuck.size:
            k = int(stuck[0])
            bk = complex(x[k] + 1j * y[k] / fac[k] ** 2)
            raise ConvergenceError(
                f"rectangular subordination solve: the continuation towards b=({x[k]!r} + "
                f"{float(y_final[k])!r}j) stalls at Im b = {float(y[k]):.3e}, where Newton "
                f"(theory eq. (16.7)) leaves a residual {float(nres[~good][0]):.3e}",
                point=bk, residual=float(nres[~good][0]))
        done = y == y_final
    tol = BOUNDARY_RTOL * (s + np.maximum(np.abs(w1), np.abs(w2)))
    # On the axis outside the support the fixed point is real; next to an edge the
    # continuation ends a rounding-sized Im w off it (a nearly double root), so with
    # ``polish_real`` (the Stieltjes transform on the axis) the nearly real points are
    # polished by Newton in real arithmetic, kept if it converges.
    size = s + np.maximum(np.abs(w1), np.abs(w2))
    with np.errstate(invalid="ignore"):
        near = np.flatnonzero((y_final == 0) & (np.maximum(np.abs(w1.imag), np.abs(w2.imag))
                                                <= INSIDE_RTOL * size) & (res <= tol))
    if polish_real and near.size:
        r1, r2, rres = _newton(pr, x[near] + 0j, w1[near].real + 0j, w2[near].real + 0j)
        with np.errstate(invalid="ignore"):
            real = ((r1.imag == 0) & (r2.imag == 0)
                    & (rres <= BOUNDARY_RTOL * (s + np.maximum(np.abs(r1), np.abs(r2)))))
        k = near[real]
        w1[k], w2[k], res[k] = r1[real], r2[real], rres[real]
    bad = ~(res <= tol)
    if bad.any():
        k = int(np.argmax(bad))
        raise ConvergenceError(
            f"rectangular subordination solve at b=({x[k] + 1j * y[k]!r}, "
            f"{x[k] + 1j * y[k]!r}): residual {res[k]:.3e} > {tol[k]:.1e} (theory eq. (16.5))",
            point=complex(x[k] + 1j * y[k]), residual=float(res[k]), tolerance=float(tol[k]))
    return w1, w2


def _solve_complex(pr, z):
    """Subordination point at ``b = (z, z)`` for ``z`` in the closed first quadrant."""
    z = np.asarray(z, dtype=complex)
    w1 = np.empty(z.shape, dtype=complex)
    w2 = np.empty(z.shape, dtype=complex)
    high = z.imag >= ITERATE_MIN_IM_RTOL * pr.scale
    if high.any():
        zh = z[high]
        a1, a2 = _iterate(pr, zh, zh + 1j * pr.scale, zh + 1j * pr.scale)
        a1, a2, res = _newton(pr, zh, a1, a2)
        with np.errstate(invalid="ignore"):
            bad = ~(res <= BOUNDARY_RTOL * (pr.scale + np.maximum(np.abs(a1), np.abs(a2))))
        if bad.any():
            a1[bad], a2[bad] = _solve_at(pr, zh[bad].real, zh[bad].imag)
        w1[high], w2[high] = a1, a2
    if (~high).any():
        w1[~high], w2[~high] = _solve_at(pr, z[~high].real, z[~high].imag, polish_real=True)
    return w1, w2


class _RectangularEdge(EdgeProblem):
    """The edge system of eq. (16.8) (eq. (16.9) at ratio 1) at real points ``v`` (rows).

    ``ratio < 1``: ``v = (w1, w2, x)``, residuals ``w - f_x(w)`` and
    ``det(I - Df)``.  ``ratio = 1``: ``w1 = w2 = w`` (the map commutes with the
    swap of the two blocks), ``v = (w, x)``, residuals ``w - f_x(w, w)_1`` and
    ``1 - (Df_11 + Df_12)``, the eigenvalue of ``Df`` along ``(1, 1)``.
    """

    def __init__(self, pr):
        self._pr = pr
        self.scale = pr.scale
        self.sym = pr.lam == 1.0

    def residual(self, v):
        pr = self._pr
        w1 = v[:, 0].astype(complex)
        w2 = w1 if self.sym else v[:, 1].astype(complex)
        b = v[:, -1].astype(complex)
        with np.errstate(all="ignore"):
            f1, f2, j = pr.phi(w1, w2, b, b)
            r1, r2 = w1 - f1, w2 - f2
            size = self.scale + np.maximum(np.abs(w1), np.abs(w2))
            if self.sym:
                fold = 1.0 - (j[0] + j[1])
                out = np.stack([r1.real, fold.real], axis=1)
            else:
                fold = (1.0 - j[0]) * (1.0 - j[3]) - j[1] * j[2]
                out = np.stack([r1.real, r2.real, fold.real], axis=1)
            valid = (np.isfinite(r1) & np.isfinite(r2) & np.isfinite(fold)
                     & (np.abs(r1.imag) <= REAL_RTOL * size)
                     & (np.abs(r2.imag) <= REAL_RTOL * size))
        return out, valid, size


def _edge_newton(pr, w1, w2, x):
    """Bordered Newton for an edge: the real fold of eq. (16.8) (eq. (16.9) at ratio 1).

    Started from the real subordination point ``(w1, w2)`` at a point ``x``
    just outside the support, by the shared :func:`bordered_newton` (its
    Jacobian a difference quotient: only the rate depends on it, the residuals
    are exact).  Returns ``(w1, w2, x, converged)``.
    """
    problem = _RectangularEdge(pr)
    cols = [np.asarray(w1, float)] + ([] if problem.sym else [np.asarray(w2, float)])
    res = bordered_newton(problem, np.stack(cols + [np.asarray(x, float)], axis=1))
    v = res.value
    e1 = v[:, 0]
    e2 = e1 if problem.sym else v[:, 1]
    return e1, e2, v[:, -1], res.converged


# --------------------------------------------------------------------------- #
# Moments: rectangular free cumulants, eqs. (16.11)-(16.12)
# --------------------------------------------------------------------------- #

def _mul(a, b, n):
    """Product of two power series truncated after ``z**n``."""
    return np.convolve(a, b)[:n + 1]


def _reversion(f, n):
    """Compositional inverse ``g`` of ``f = z + f_2 z**2 + ...`` up to ``z**n``."""
    g = np.zeros(n + 1)
    g[1] = 1.0
    for _ in range(n):
        acc = np.zeros(n + 1)
        power = np.zeros(n + 1)
        power[0] = 1.0
        for k in range(1, n + 1):
            power = _mul(power, g, n)
            if k >= 2:
                acc += f[k] * power
        g = -acc
        g[1] += 1.0
    return g


def _reciprocal_series(a, n):
    """``1/a`` up to ``z**n`` for a series with ``a_0 != 0``."""
    a = np.concatenate([np.asarray(a, dtype=float), np.zeros(n + 1)])[:n + 1]
    out = np.zeros(n + 1)
    out[0] = 1.0 / a[0]
    for k in range(1, n + 1):
        out[k] = -np.dot(a[1:k + 1], out[k - 1::-1]) / a[0]
    return out


def _quadratic_series(rhs, lam, n):
    """``x`` with ``(1 + lam) x + lam x**2 = rhs``, ``x(0) = 0`` (fixed point, one order a pass)."""
    x = np.zeros(n + 1)
    for _ in range(n + 1):
        x = (rhs - lam * _mul(x, x, n)) / (1.0 + lam)
    return x


def rectangular_cumulants(moments, ratio):
    """Rectangular free cumulants ``c_2, c_4, ..., c_2n`` from ``E[s**2], ..., E[s**2n]``.

    Benaych-Georges' rectangular R-transform (theory eq. (16.11)):
    ``M(z) = sum_k E[s**2k] z**k``, ``H(z) = z (ratio M + 1)(M + 1)``,
    ``C(w) = sum_k c_2k w**k`` solves ``(ratio C + 1)(C + 1) = w / H^{-1}(w)``.

    Parameters
    ----------
    moments : array_like
        ``E[s**2k]``, ``k = 1..n``.
    ratio : float

    Returns
    -------
    ndarray
        ``c_2k``, ``k = 1..n``.
    """
    mom = np.asarray(moments, dtype=float)
    n = mom.size
    lam = float(ratio)
    m = np.concatenate([[0.0], mom])
    t = (1.0 + lam) * m + lam * _mul(m, m, n)              # T(M(z)) - 1
    t[0] += 1.0
    h = np.concatenate([[0.0], t])                         # H(z), orders 0..n+1
    hinv = _reversion(h, n + 1)
    k = _reciprocal_series(hinv[1:], n)                    # w / H^{-1}(w)
    k[0] -= 1.0
    return _quadratic_series(k, lam, n)[1:]


def rectangular_moments(cumulants, ratio):
    """``E[s**2], ..., E[s**2n]`` from the rectangular free cumulants (theory eq. (16.11)).

    The inverse of :func:`rectangular_cumulants`.

    Parameters
    ----------
    cumulants : array_like
        ``c_2k``, ``k = 1..n``.
    ratio : float

    Returns
    -------
    ndarray
        ``E[s**2k]``, ``k = 1..n``.

    Examples
    --------
    >>> rectangular_moments([1.0, 0.0], 0.5)        # MP(1, 1/2): E s^2 = 1, E s^4 = 1 + λ
    array([1. , 1.5])
    """
    c = np.concatenate([[0.0], np.asarray(cumulants, dtype=float)])
    n = c.size - 1
    lam = float(ratio)
    k = (1.0 + lam) * c + lam * _mul(c, c, n)              # T(C) - 1
    k[0] += 1.0
    hinv = np.concatenate([[0.0], _reciprocal_series(k, n)])   # w / T(C(w))
    h = _reversion(hinv, n + 1)
    t = h[1:].copy()                                       # H(z)/z = T(M(z))
    t[0] -= 1.0
    return _quadratic_series(t, lam, n)[1:]


def _even_moments(c, kmax, scale2):
    """``E[(s**2/scale2)**k]``, ``k = 1..kmax``, of a constituent (its own moments)."""
    if c.kind == "atoms":
        return np.array([float(np.sum(c.m * (c.t / scale2) ** k)) for k in range(1, kmax + 1)])
    if c.kind == "squared":
        sc, m = c.sq._scaled_moments(kmax)
        ratio = sc * c.c2 / scale2
        return np.asarray(m[1:], dtype=float) * ratio ** np.arange(1, kmax + 1)
    return np.array([c.sv.moment(2 * k) / scale2 ** k for k in range(1, kmax + 1)])


# --------------------------------------------------------------------------- #
# The laws
# --------------------------------------------------------------------------- #

class RectangularSquaredLaw(SpectralLaw):
    """The law of the squared singular values of ``A + B`` (an eigenvalue law on ``[0, oo)``).

    Built by :func:`rectangular_free_additive` (its ``.squared()``); every
    :class:`SpectralLaw` method works.  ``G(zeta) = G_1(sqrt zeta, sqrt zeta) /
    sqrt(zeta)`` with ``G_1`` the first diagonal entry of the ``D``-valued
    Cauchy transform of ``A + B`` at its subordination point (theory eqs.
    (16.2), (16.3), (16.5)).

    Attributes
    ----------
    a, b : SpectralLaw
        The singular-value laws of ``A`` and ``B``.
    ratio : float
        ``λ = p/n``.
    """

    @property
    def _evaluation_cost(self):
        # Newton on the rectangular system over both laws (eq. (14.51))
        return NESTED_SOLVE_FACTOR * (self.a._evaluation_cost + self.b._evaluation_cost)

    def __init__(self, a, b, ratio, options=None):
        super().__init__(options)
        self.a, self.b, self.ratio = a, b, ratio
        ha, hb = a.support()[1], b.support()[1]
        la, lb = a.support()[0], b.support()[0]
        # Weyl: s_min(A + B) >= s_min(A) - ||B||, ||A + B|| <= ||A|| + ||B||.
        self._bounds = (max(0.0, la - hb, lb - ha), ha + hb)
        self._xscale = max(ha + hb, np.finfo(float).tiny)
        self._problem = _Problem(_Squared(a), _Squared(b), ratio, self._xscale)

    def _describe(self):
        def short(law):
            text = law._describe()
            return text if len(text) <= 60 else text[:57] + "..."
        return (f"squared singular values of ({short(self.a)}) ⊞_{self.ratio:g} "
                f"({short(self.b)})")

    # -- solves ---------------------------------------------------------------------------
    def _boundary(self, s):
        """``(w1, w2)`` at ``b = (s + i0, s + i0)`` for real ``s > 0``."""
        s = np.asarray(s, dtype=float)
        return _solve_at(self._problem, s, np.zeros(s.size))

    def _inside(self, w1, w2):
        size = self._xscale + np.maximum(np.abs(w1), np.abs(w2))
        return np.maximum(np.abs(w1.imag), np.abs(w2.imag)) > INSIDE_RTOL * size

    # -- hooks ----------------------------------------------------------------------------
    def _atoms(self):
        return _sum_atoms(self.a.atoms(), self.b.atoms(), self.ratio)

    def _support_intervals(self):
        pr = self._problem
        lo, hi = self._bounds
        pad = 1e-3 * self._xscale
        start = max(lo - pad, GRID_START_RTOL * self._xscale)
        xs = np.linspace(start, hi + pad, SUPPORT_GRID)
        w1, w2 = self._boundary(xs)
        inside = self._inside(w1, w2)
        if not inside.any():
            raise ConvergenceError(
                f"no point of the support of {self._describe()} found on a grid of {xs.size} "
                f"points over [{start!r}, {hi + pad!r}]")
        if inside[-1]:
            raise ConvergenceError(
                f"the support of {self._describe()} reaches the end of its bounding interval "
                f"{hi + pad!r} (the norm bound ||A|| + ||B||): the solve is wrong")
        from_zero = bool(inside[0])
        if from_zero and self.ratio != 1.0:
            raise ConvergenceError(
                f"the support of {self._describe()} reaches 0 at ratio {self.ratio!r} < 1: "
                f"a lower edge at 0 is handled at ratio 1 only (theory section 16.9)",
                point=float(xs[0]))
        idx = np.flatnonzero(np.diff(inside.astype(int)))
        kinds = ["lo" if not inside[i] else "hi" for i in idx]
        x_out = np.array([xs[i] if not inside[i] else xs[i + 1] for i in idx])
        x_in = np.array([xs[i + 1] if not inside[i] else xs[i] for i in idx])
        # a "lo" edge lies above the grid point outside the support, a "hi" one below
        side = np.array([1.0 if k == "lo" else -1.0 for k in kinds])
        o1, o2 = self._boundary(x_out)
        e1, e2, xe, ok = _edge_newton(pr, o1.real, o2.real, x_out)
        ok &= side * (xe - x_out) >= 0
        if not ok.all():
            # bisect the cells whose edge the grid point did not reach (or where the
            # bordered Newton went to the fold across a narrow gap), then retry
            retry = np.flatnonzero(~ok)
            bo, bi = x_out[retry], x_in[retry]
            for _ in range(EDGE_BISECTIONS):
                mid = 0.5 * (bo + bi)
                ins = self._inside(*self._boundary(mid))
                bi = np.where(ins, mid, bi)
                bo = np.where(ins, bo, mid)
            r1, r2 = self._boundary(bo)
            f1, f2, fx, fok = _edge_newton(pr, r1.real, r2.real, bo)
            fok &= side[retry] * (fx - bo) >= 0
            e1[retry], e2[retry], xe[retry], ok[retry] = f1, f2, fx, fok
            x_out[retry] = bo
        if not ok.all():
            k = int(np.argmin(ok))
            raise ConvergenceError(
                f"edge of {self._describe()} near s={float(x_out[k])!r}: bordered Newton on "
                f"theory eq. (16.8) did not converge",
                point=float(x_out[k]))
        edges = []
        self._s_edges = []
        if from_zero:
            edges.append((0.0, "lo", HARD))
        q = pr.a.reciprocal((e1 * e2).astype(complex))[0]
        for k in range(len(kinds)):
            pole = abs(q[k]) < POLE_EDGE_RTOL * self._xscale ** 2
            edges.append((float(xe[k]), kinds[k], Fraction(-1, 2) if pole else SOFT))
        edges.sort(key=lambda e: e[0])
        ivs = []
        if len(edges) % 2:
            raise ConvergenceError(f"edges of {self._describe()} do not pair into intervals: "
                                   f"{edges!r}")
        for j in range(0, len(edges), 2):
            (x0, k0, e0), (x1, k1, e1_) = edges[j], edges[j + 1]
            if k0 != "lo" or k1 != "hi" or not x0 < x1:
                raise ConvergenceError(
                    f"edges of {self._describe()} do not pair into intervals: {edges!r}")
            ivs.append(Interval(x0 * x0, x1 * x1, e0, e1_))
            self._s_edges.extend([x0, x1])
        return tuple(ivs)

    def _root(self, t):
        """``s = sqrt(t)`` with its distance to the nearest edge kept to rounding.

        ``sqrt(t)`` next to an edge ``e`` loses the relative accuracy of ``s - e``
        (``t - e**2`` is exact, its square root is not); the density there
        depends on that distance, so ``s = e + (t - e**2)/(sqrt(t) + e)`` from
        the nearest edge in ``s`` (``e**2`` is the edge of this law).
        """
        t = np.asarray(t, dtype=float)
        s = np.sqrt(t)
        edges = np.array(self._s_edges_list())
        if edges.size == 0 or t.size == 0:
            return s
        k = np.argmin(np.abs(t[:, None] - (edges * edges)[None, :]), axis=1)
        e = edges[k]
        near = e > 0
        s = np.where(near, e + (t - e * e) / (s + e), s)
        return s

    def _s_edges_list(self):
        self.interval_details()
        return self._s_edges

    def _density(self, t):
        """``-Im G_1(s + i0)/(pi s)`` at ``s = sqrt(t)`` (theory eq. (16.3))."""
        s = self._root(t)
        return self._density_s(s) / (2.0 * s)

    def _density_s(self, s):
        """Density of the singular values, ``-2 Im G_1(s + i0)/pi`` (theory eq. (16.3))."""
        s = np.asarray(s, dtype=float)
        w1, w2 = self._boundary(s)
        g1 = self._problem.g1(w1, w2)
        return 2.0 * np.maximum(-g1.imag, 0.0) / math.pi

    def _stieltjes_exact(self, zeta):
        zeta = np.asarray(zeta, dtype=complex)
        out = np.empty(zeta.shape, dtype=complex)
        zero = zeta == 0
        if zero.any():
            out[zero] = self._stieltjes_from_representation(zeta[zero])
        nz = ~zero
        if nz.any():
            z = _upper_sqrt(zeta[nz])
            w1, w2 = _solve_complex(self._problem, z)
            with np.errstate(all="ignore"):
                out[nz] = self._problem.g1(w1, w2) / z
        return out

    def _stieltjes_pair(self, zs):
        return self._stieltjes(zs), SpectralLaw._stieltjes_derivative(self, zs)

    def _mp_stieltjes(self, zeta):
        """Eq. (16.5) solved by ``mpmath.findroot`` at the working precision.

        Started from the float subordination point, with the constituents'
        arbitrary-precision transforms; the residual is checked against
        ``mp_tolerance`` of the working precision.
        """
        import mpmath
        from ..core._tolerances import mp_tolerance

        lam = mpmath.mpf(self.ratio)
        pr = self._problem
        z = mpmath.sqrt(zeta)
        if z.imag < 0 or (z.imag == 0 and z.real < 0):
            z = -z
        zc = complex(z)
        w1, w2 = _solve_complex(pr, np.array([zc]))

        def h(c, u1, u2):
            g = c.mp_g(u1 * u2)
            q = 1 / g
            return q / u2 - u1, u2 * q / ((1 - lam) * q + lam * u1 * u2) - u2

        def residual(u1, u2):
            a1, a2 = h(pr.a, u1, u2)
            c1, c2 = h(pr.b, z + a1, z + a2)
            return [u1 - z - c1, u2 - z - c2]

        if pr.sym:
            u1 = mpmath.findroot(lambda u: residual(u, u)[0], mpmath.mpc(complex(w1[0])),
                                 verify=False, maxsteps=MP_MAX_STEPS)
            u2 = u1
        else:
            start = (mpmath.mpc(complex(w1[0])), mpmath.mpc(complex(w2[0])))
            root = mpmath.findroot(residual, start, verify=False, maxsteps=MP_MAX_STEPS)
            u1, u2 = root[0], root[1]
        tol = mp_tolerance(mpmath.mp.dps) * (abs(z) + abs(u1) + abs(u2))
        res = max(abs(v) for v in residual(u1, u2))
        if res > tol:
            raise ConvergenceError(
                f"mpmath rectangular subordination solve at zeta={complex(zeta)!r}: residual "
                f"{float(res):.3e} (tolerance {float(tol):.1e}) (theory eq. (16.5))",
                point=complex(zeta), residual=float(res), tolerance=float(tol))
        return u2 * pr.a.mp_g(u1 * u2) / z

    def _moments_exact(self, kmax):
        """Moments from the additivity of rectangular free cumulants (theory eq. (16.12)),
        up to order ``EXACT_MOMENT_ORDER`` (``None`` beyond: quadrature)."""
        if kmax > EXACT_MOMENT_ORDER:
            return None
        scale2 = self._xscale ** 2
        if kmax == 0:
            return scale2, np.ones(1)
        pr = self._problem
        cum = sum(rectangular_cumulants(_even_moments(c, kmax, scale2), self.ratio)
                  for c in (pr.a, pr.b))
        return scale2, np.concatenate([[1.0], rectangular_moments(cum, self.ratio)])


class RectangularLaw(SingularValueLaw):
    """``a ⊞_λ b``: the law of the singular values of ``A + B`` (theory note 16).

    Built by :func:`rectangular_free_additive`; ``.squared()`` is the
    :class:`RectangularSquaredLaw` of the squared singular values.  Every
    :class:`SpectralLaw` method works (through the eigenvalue <->
    singular-value map of theory eq. (8.17)).

    Attributes
    ----------
    a, b : SpectralLaw
    ratio : float
    """

    def __init__(self, squared_law):
        SpectralLaw.__init__(self, squared_law.options)
        self._sq = squared_law
        self.a, self.b, self.ratio = squared_law.a, squared_law.b, squared_law.ratio
        self.beta = None
        self.gamma = None

    def _describe(self):
        def short(law):
            text = law._describe()
            return text if len(text) <= 60 else text[:57] + "..."
        return f"({short(self.a)}) ⊞_{self.ratio:g} ({short(self.b)})"

    def _density(self, s):
        # directly in s: through s**2 the distance to an edge would lose its digits
        return self._sq._density_s(s)

    def pdf_mp(self, x, dps=40):
        """Density at one point with mpmath at ``dps`` digits: ``2 s f(s**2)`` from the
        squared law's arbitrary-precision solve of eq. (16.5) (no quadrature).

        Parameters
        ----------
        x : float
        dps : int, optional

        Returns
        -------
        mpmath.mpf
        """
        import mpmath

        from ..laws._law_base import MP_GUARD_DIGITS

        xv = as_real_array(x, "x", finite=True)
        if xv.ndim != 0:
            raise TypeError("pdf_mp takes one real point x")
        s = float(xv)
        if s <= 0:
            return mpmath.mpf(self.pdf(s))      # 0 below 0; the edge value at 0
        with mpmath.workdps(dps + MP_GUARD_DIGITS):
            sm = mpmath.mpf(s)
            eta = mpmath.mpf(10) ** (-(dps + 5)) * self._sq._scale()
            g = self._sq._mp_stieltjes(mpmath.mpc(sm * sm, eta))
            value = max(-2 * sm * g.imag / mpmath.pi, mpmath.mpf(0))
        with mpmath.workdps(dps):
            return +value


def _sum_atoms(atoms_a, atoms_b, ratio):
    """Atoms of ``a ⊞_λ b`` (theory eq. (16.10)).

    At 0: ``a({0}) + b({0}) - 1``; at an atom ``s > 0`` of one law:
    ``mass(s) + 2 * (mass of the other at 0) - 2``; each kept when positive.
    """
    (la, ma), (lb, mb) = atoms_a, atoms_b
    a0 = float(ma[la == 0.0].sum())
    b0 = float(mb[lb == 0.0].sum())
    loc, mass = [], []
    zero = a0 + b0 - 1.0
    if zero > ATOM_MASS_ATOL:
        loc.append(0.0)
        mass.append(zero)
    for (lx, mx), other0 in (((la, ma), b0), ((lb, mb), a0)):
        for s, m in zip(lx, mx):
            if s > 0:
                value = m + 2.0 * other0 - 2.0
                if value > ATOM_MASS_ATOL:
                    loc.append(float(s))
                    mass.append(value)
    return np.array(loc), np.array(mass)


def _check_singular_law(law, name):
    if not isinstance(law, SpectralLaw):
        raise TypeError(f"{name} must be a freeattn law (SpectralLaw) of singular values, got "
                        f"{type(law).__name__}")
    lo = law.support()[0]
    if lo < 0:
        raise ValueError(f"{name} must be a law of singular values, on [0, inf), but its "
                         f"support starts at {lo!r}")
    return law


def rectangular_free_additive(a, b, ratio, *, options=None):
    """Rectangular free additive convolution ``a ⊞_λ b`` (theory note 16).

    The limiting law of the singular values of ``A + B`` for independent
    ``p x n`` matrices ``A = U_A D_A V_A*``, ``B = U_B D_B V_B*`` with Haar
    ``U``, ``V`` and ``p/n -> ratio``, from the laws ``a`` and ``b`` of the
    singular values of ``A`` and ``B`` (Benaych-Georges 2009), solved by the
    operator-valued subordination of Belinschi, Mai & Speicher (2017) over
    ``C ⊕ C`` (theory eqs. (16.2)-(16.8)).

    Parameters
    ----------
    a, b : SpectralLaw
        Laws of singular values, on ``[0, oo)`` (for example
        ``marchenko_pastur(v, ratio).singular_values()`` for a Gaussian
        matrix with entry variance ``v/n``, ``point_masses`` for a
        deterministic spectrum, ``attention_law(beta, gamma)``).
    ratio : float
        ``λ = p/n`` in ``(0, 1]``.
    options : SolverOptions, optional
        Tolerances of the representation (:data:`freeattn.DEFAULT_OPTIONS`).

    Returns
    -------
    RectangularLaw
        The singular-value law; ``.squared()`` is the law of the squared
        singular values (a :class:`RectangularSquaredLaw`).

    Raises
    ------
    TypeError
        If ``a`` or ``b`` is not a law, or ``ratio`` is not a real number.
    ValueError
        If ``ratio`` is outside ``(0, 1]`` or a law has mass below 0.
    ConvergenceError
        From the first method that needs the support or the density, if a
        solve does not reach its tolerance (the message quotes the numbers).

    Notes
    -----
    The support is located on a grid and each edge solved exactly as a fold of
    the fixed-point map (theory eq. (16.8)); see theory section 16.9 for the
    cases that raise ``ConvergenceError`` (a support reaching 0 at
    ``ratio < 1``, an edge that is not a fold).

    Examples
    --------
    Two independent square Gaussian matrices (entry variance ``1/n``) add to one
    of variance ``2/n``: the quarter-circle law scaled by ``sqrt(2)``.

    >>> import freeattn
    >>> qc = freeattn.marchenko_pastur(1.0, 1.0).singular_values()
    >>> law = freeattn.rectangular_free_additive(qc, qc, 1.0)
    >>> [round(v, 12) for v in law.support()]                  # [0, 2 sqrt(2)]
    [0.0, 2.828427124746]
    >>> print(f"{float(law.pdf(1.0)):.12f}")                  # sqrt(8 - s**2)/(2 pi) at 1
    0.421084399348
    >>> law.squared().interval_details()[0].lo_exponent       # hard edge of MP(2, 1)
    Fraction(-1, 2)

    A deterministic ``p x n`` matrix with singular values 1 plus Gaussian noise of
    variance ``1/n`` at ``p/n = 1/2`` (the information-plus-noise law, theory eq.
    (16.14)):

    >>> noise = freeattn.marchenko_pastur(1.0, 0.5).singular_values()
    >>> ipn = freeattn.rectangular_free_additive(freeattn.point_masses([1.0]), noise, 0.5)
    >>> [round(v, 12) for v in ipn.support()]
    [0.5, 2.257891983987]
    >>> round(ipn.squared().mean(), 12)                         # E s**2 adds: 1 + 1
    2.0
    """
    _check_singular_law(a, "a")
    _check_singular_law(b, "b")
    lam = real_scalar(ratio, "ratio")
    if not 0.0 < lam <= 1.0:
        raise ValueError(f"ratio must be in (0, 1] (p/n with p <= n), got {ratio!r}")
    opts = check_options(options) if options is not None else a.options
    return RectangularLaw(RectangularSquaredLaw(a, b, lam, opts))
