"""Dyson systems: laws given by a fixed point ``w = Phi(w, z)`` in a few unknowns.

A :class:`DysonSystem` is the deterministic equivalent of a Gaussian matrix model
whose covariance is a sum of Kronecker products with commuting left factors
(theory section 9.12, eqs. (9.24)-(9.28)): a handful of complex unknowns per point
``z``, rational in the unknowns, with integrals against a spectral law.  Its
subclasses give ``Phi`` with the analytic Jacobian; this module solves it:

* damped Newton with continuation from far above the real axis down to it
  (:meth:`DysonSystem.solve_axis`, :meth:`DysonSystem.solve_upper`), sub-stages
  where a stage leaves the path;
* the edges of the support as the folds of the real system, where the Jacobian is
  singular (eq. (9.30), :meth:`DysonSystem.fold`, a bordered Newton).

:class:`DysonLaw` turns a system into a :class:`freeattn.SpectralLaw`: bands from a
scan of the density, edges by the fold, the top certified by following the real
solution out, the density ``Im m(x + i0)/pi``.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ..laws._law_base import (HARD, NESTED_SOLVE_FACTOR, QUADRATURE_EXTRA, TOWER_EVALUATION_COST,
                              Interval, SpectralLaw)
from ._fixed_point import EdgeProblem, SystemProblem, bordered_newton, newton_system

__all__ = ["DysonSystem", "DysonLaw", "law_nodes"]

#: Gauss-Legendre nodes beyond half a panel's degree for a continuous law integrated
#: against (the integrands of the Dyson systems are smooth on its support).
LAW_QUADRATURE_EXTRA = 2 * QUADRATURE_EXTRA

#: Relative residual ``|w - Phi(w, z)| / (1 + |w|)`` at which a point of the
#: Dyson system (9.25)-(9.29) is solved (a few ulps of the unknowns).
DYSON_RTOL = 1e-14
#: The residual of each unknown is relative to its size, floored at this fraction of
#: its value at ``z = oo`` (the key and value unknowns tend to 0 with ``x`` next to
#: the atom at 0, and the edges there depend on their relative accuracy).
DYSON_ERROR_FLOOR = 1e-12
#: A point whose Newton step is rejected (the residual no longer decreases) while the
#: step is below this (relative to ``1 + |w|``) is at the rounding noise of ``Phi``
#: (its terms cancel next to ``x = 0``, where ``m ~ -atom/x``) and is accepted there.
DYSON_STALL_RTOL = 1e-12
#: A stage of a continuation before the last one only has to stay on the path: its
#: relative residual must be below this (the last stage is solved to ``DYSON_RTOL``).
DYSON_PATH_RTOL = 1e-8
#: A continuation stage that leaves the path is redone over this many geometric
#: sub-stages, nested at most ``DYSON_SPLIT_DEPTH`` times.
DYSON_SPLIT = 4
DYSON_SPLIT_DEPTH = 3
#: Most Newton steps per continuation stage, and halvings of one step.
DYSON_NEWTON_STEPS = 40
DYSON_HALVINGS = 30
#: Continuation in ``Im z``: from ``DYSON_START_HEIGHT`` times the scale down by the
#: factor ``DYSON_HEIGHT_RATIO`` per stage to ``DYSON_FLOOR`` times the scale, then
#: the real axis itself (a stage that leaves the path is split, ``DYSON_SPLIT``).  With
#: 1/32 instead of 1/8 a 512-atom multi-head token law builds in 2.3 s instead of 3.4 s,
#: at the same accuracy (edges 4.3e-15, density 1.4e-13 over the isotropic campaign of
#: theory section 9.12).
DYSON_START_HEIGHT = 4.0
#: Points whose continuation leaves the path are followed again from starts this many
#: times higher (measured: a gap point at 149.5, beta = 2.7, lost the path from
#: 4 x 12268 and kept it from twice that).
DYSON_RESTART_FACTORS = (4.0, 64.0)
DYSON_HEIGHT_RATIO = 1.0 / 32
DYSON_FLOOR = 1e-14
#: Points of the scan for the bands (geometric from ``SCAN_LOW`` times the top of the
#: scan to 2% of it, linear above).  A lower edge below ``SCAN_LOW`` of the scale (a
#: geometry within about 1e-3 of a square factor) raises ConvergenceError.
SCAN_POINTS = 480
SCAN_LOW = 1e-6
SCAN_LINEAR_FROM = 0.02
#: The scan's first top is this many times the mean over the non-zero mass, doubled
#: until the real solution there is certified above the support.
SCAN_FIRST_TOP = 8.0
#: Where the first scan point lies in a band, the scan goes on down to
#: ``SCAN_FLOOR`` of the scale with ``SCAN_EXTRA`` geometric points.
SCAN_FLOOR = 1e-12
SCAN_EXTRA = 96
#: A scan point whose density is below this fraction of the scan's largest
#: density lies in a gap.
GAP_RTOL = 1e-9
#: Rounds of ``EDGE_SPLIT``-point sections of the bracket between a gap point and a
#: band point before the bordered Newton of eq. (9.30) (``17**4 = 8e4`` times
#: narrower), and that Newton's steps and tolerance (relative step in ``x``).
EDGE_ROUNDS = 4
EDGE_SPLIT = 16
EDGE_STEPS = 40
EDGE_RTOL = 1e-13
#: Relative finite-difference step of the derivative of ``det J`` in eq. (9.30)
#: (only the convergence rate depends on it: ``F`` and ``det J`` are exact).
EDGE_FD_STEP = 1e-6
#: The support's upper bound is certified by following the real solution from
#: the top edge out to ``UPPER_CERTIFY_FACTOR`` times it in ``UPPER_CERTIFY_STEPS``
#: geometric steps, every step converged and ``det J`` of one sign.
UPPER_CERTIFY_FACTOR = 1e8
#: ... starting this far (relative) above the top edge.
UPPER_CERTIFY_START = 1e-6
UPPER_CERTIFY_STEPS = 64



def law_nodes(tokens):
    """Nodes and weights of the token law ``G``: its atoms, plus Gauss-Legendre nodes
    on its panels (``LAW_QUADRATURE_EXTRA`` beyond half of each panel's degree)."""
    loc, mass = tokens.atoms()
    nodes, weights = [np.asarray(loc, float)], [np.asarray(mass, float)]
    if tokens.interval_details():
        rep = tokens._representation()
        x, w = rep.quadrature(LAW_QUADRATURE_EXTRA)
        nodes.append(np.asarray(x, float))
        weights.append(np.asarray(w, float) * (tokens._continuous_mass() / rep.total))
    g = np.concatenate(nodes)
    wt = np.concatenate(weights)
    return g, wt / wt.sum()


class _DysonProblem(SystemProblem):
    """A :class:`DysonSystem` at fixed points ``z`` as a :class:`SystemProblem`:
    the residual ``w - Phi(w, z)``, the Newton step from its Jacobian, ``m(z)``
    as the auxiliary output."""

    def __init__(self, system, real):
        self._system = system
        self._real = real

    def evaluate(self, w, z):
        f, jf, m = self._system.residual(w, z)
        try:
            step = np.linalg.solve(np.moveaxis(jf, -1, 0),
                                   np.moveaxis(f, -1, 0)[..., None])[..., 0].T
        except np.linalg.LinAlgError:
            # a singular Jacobian in the batch: no step anywhere in it (the points
            # stop where they are, and the caller's tolerance decides)
            step = np.full(f.shape, np.nan, dtype=complex)
        return f, (step.real + 0j if self._real else step), (m,)

    def error(self, f, w, extra):
        return self._system._error(f, w)

    def admissible(self, w, z, extra):
        if self._real:
            return np.ones(z.shape, dtype=bool)
        return ~((z.imag > 0) & (extra[0].imag < 0))


class DysonSystem:
    """``w = Phi(w, z)`` in ``k`` unknowns per point; subclasses implement :meth:`phi`.

    Subclasses set the attributes below (``far`` and ``floor`` by :meth:`_set_far`).

    Attributes
    ----------
    far : ndarray, shape (k,)
        ``w`` at ``z = oo``, the start of every continuation.
    floor : ndarray, shape (k,)
        Floor of each unknown's size in the relative residual.
    mean : float
        The law's mean (the first scale of the support search).
    z_index : int
        ``Phi`` depends on ``z`` through ``w[z_index] - z`` only, so
        ``d Phi/d z = -d Phi/d w[z_index]``.
    """

    z_index = 1

    def _set_far(self, far):
        self.far = np.asarray(far, float)
        self.floor = DYSON_ERROR_FLOOR * np.maximum(np.abs(self.far), np.finfo(float).tiny)

    def phi(self, w, z):
        """``(Phi, dPhi/dw, m)`` for ``w`` of shape ``(k, N)`` and ``z`` of shape ``(N,)``;
        ``m(z) = int dF(x)/(x - z)``."""
        raise NotImplementedError

    def start(self, n):
        return np.repeat(self.far[:, None], n, axis=1).astype(complex)

    def residual(self, w, z):
        val, jac, m = self.phi(w, z)
        f = w - val
        jf = np.eye(self.far.size)[:, :, None] - jac
        return f, jf, m

    def _error(self, f, w):
        """Largest relative residual of the unknowns (each against its own size,
        floored at ``DYSON_ERROR_FLOOR`` of its value at infinity)."""
        return np.max(np.abs(f) / (np.abs(w) + self.floor[:, None]), axis=0)

    def newton(self, w, z, steps=DYSON_NEWTON_STEPS, real=False):
        """Damped Newton on ``w = Phi(w, z)``; returns ``(w, m, error, converged)``.

        The shared strategy :func:`~._fixed_point.newton_system` with a
        backtracking line search (:class:`_DysonProblem`): a step is accepted
        where it lowers the residual and, above the real axis, keeps ``Im m``
        non-negative.  With ``real`` the iterates are kept real (the real system
        of eq. (9.30)).
        """
        res = newton_system(_DysonProblem(self, real), z, w, steps, DYSON_RTOL,
                            halvings=DYSON_HALVINGS, stall_rtol=DYSON_STALL_RTOL)
        return res.value, res.extra[0], res.residual, res.converged

    def _descend(self, w, zr, y_from, y_to, depth=0):
        """Newton at ``zr + i y_to`` from the solutions ``w`` at ``zr + i y_from``; points
        that do not stay on the path are redone over ``DYSON_SPLIT`` geometric sub-stages
        (at most ``DYSON_SPLIT_DEPTH`` times nested).  Returns ``(w, m, err, ok)``."""
        last = bool(np.all(y_to == 0))
        w1, m, err, conv = self.newton(w, zr + 1j * y_to)
        ok = conv if last else (conv | (err <= DYSON_PATH_RTOL))
        if ok.all() or depth >= DYSON_SPLIT_DEPTH:
            return w1, m, err, ok
        bad = ~ok
        wb, zb = w[:, bad], zr[bad]
        yf, yt = y_from[bad], y_to[bad]
        # sub-stages from y_from towards y_to (towards y_from * ratio when y_to = 0)
        low = np.where(yt > 0, yt, yf * DYSON_HEIGHT_RATIO)
        marks = yf * (low / yf) ** (np.arange(1, DYSON_SPLIT + 1)[:, None] / DYSON_SPLIT)
        y_prev = yf
        okb = np.ones(zb.size, bool)
        for y_next in marks:
            wb, mb, eb, ob = self._descend(wb, zb, y_prev, y_next, depth + 1)
            okb &= ob
            y_prev = y_next
        if np.any(yt == 0):
            wb, mb, eb, ob = self._descend(wb, zb, y_prev, yt, depth + 1)
            okb &= ob
        w1[:, bad], m[bad], err[bad], ok[bad] = wb, mb, eb, okb
        return w1, m, err, ok

    def _continue(self, zr, heights):
        """Follow ``zr + i y`` over the rows of ``heights`` (the first from the start at
        infinity); returns ``(w, m, err, ok)`` at the last row."""
        n = zr.size
        w = self.start(n)
        w, m, err, ok = self._descend(w, zr, heights[0] / DYSON_HEIGHT_RATIO, heights[0])
        for y_from, y_to in zip(heights[:-1], heights[1:]):
            w, m, err, conv = self._descend(w, zr, y_from, y_to)
            ok &= conv
        return w, m, err, ok

    def _heights(self, top, floor):
        heights = []
        y = top
        while y > floor:
            heights.append(y)
            y *= DYSON_HEIGHT_RATIO
        return heights

    def _restarted(self, zr, rows_from):
        """``_continue`` at the points ``zr`` over the heights ``rows_from(start, index)``,
        followed again from ``DYSON_RESTART_FACTORS`` times higher starts where a path
        fails; returns ``(w, m, error, converged)``."""
        out = None
        todo = np.arange(zr.size)
        for factor in (1.0,) + DYSON_RESTART_FACTORS:
            result = self._continue(zr[todo], rows_from(factor * DYSON_START_HEIGHT, todo))
            if out is None:
                out = result
            else:
                for full, part in zip(out, result):
                    full[..., todo] = part
            todo = todo[~result[3]]
            if not todo.size:
                break
        return out

    def solve_axis(self, x, scale):
        """Solve at ``x + i0`` (real ``x``) by continuation from ``x + i 4 scale``.

        Points whose path fails are followed again from ``DYSON_RESTART_FACTORS`` times
        higher starts.  Returns ``(w, m, error, converged)`` at the real axis.
        """
        x = np.asarray(x, float)

        def rows(start, todo):
            heights = self._heights(start * scale, DYSON_FLOOR * scale) + [0.0]
            return np.repeat(np.array(heights)[:, None], todo.size, axis=1)

        return self._restarted(x.astype(complex), rows)

    def solve_upper(self, z, scale):
        """Solve at points ``z`` with ``Im z > 0``, continued down from ``Re z + i 4 scale``
        (again from higher starts where the path fails, as :meth:`solve_axis`)."""
        z = np.asarray(z, complex)

        def rows(start, todo):
            target = z[todo].imag
            y = np.maximum(start * scale, target)
            out = [y]
            while np.any(y > target):
                y = np.maximum(y * DYSON_HEIGHT_RATIO, target)
                out.append(y)
            return np.array(out)

        return self._restarted(z.real.astype(complex), rows)

    # -- the real system and its folds (eq. (9.30)) ---------------------------------
    def real_det(self, w, x):
        """``det J`` of the real system at real ``(w, x)`` (1-d ``w``, scalar ``x``)."""
        _, jf, _ = self.residual(w.astype(complex)[:, None], np.array([complex(x)]))
        return float(np.linalg.det(jf[:, :, 0].real))

    def fold(self, w, x, scale):
        """Bordered Newton on ``F(w, x) = 0``, ``det J(w, x) = 0`` from a real start
        (eq. (9.30)), by the shared :func:`~._fixed_point.bordered_newton` with
        full steps; the solution row ``(w, x)``, or None if it does not converge."""
        res = bordered_newton(_DysonFold(self), np.concatenate([w.real, [x]])[None, :],
                              EDGE_STEPS, halvings=0)
        return res.value[0] if res.converged[0] else None


class _DysonFold(EdgeProblem):
    """The fold system of eq. (9.30) for :func:`~._fixed_point.bordered_newton`:
    rows ``v = (w, x)``, residuals ``(F(w, x), det J(w, x))`` with ``J`` the
    Jacobian of ``F`` in ``w`` (exact), its derivatives in ``w`` exact and in
    ``x`` from eq. (9.30), those of ``det J`` by central differences."""

    def __init__(self, system):
        self.system = system
        self.k = system.far.size

    def _evaluate(self, v):
        f, jf, _ = self.system.residual(v[:, :self.k].T.astype(complex), v[:, self.k] + 0j)
        jr = np.moveaxis(jf.real, 2, 0)                        # (n, k, k)
        with np.errstate(all="ignore"):
            out = np.concatenate([f.real.T, np.linalg.det(jr)[:, None]], axis=1)
        return out, jr

    def residual(self, v):
        out, _ = self._evaluate(v)
        return out, np.isfinite(out).all(axis=1), np.ones(v.shape[0])

    def jacobian(self, v, out):
        k, sysm = self.k, self.system
        _, jr = self._evaluate(v)
        jac = np.empty((v.shape[0], k + 1, k + 1))
        jac[:, :k, :k] = jr
        # d F/d x = -d Phi/d z = d Phi/d w[z_index] (eq. (9.30))
        jac[:, :k, k] = np.eye(k)[:, sysm.z_index] - jr[:, :, sysm.z_index]
        for j in range(k + 1):
            # steps relative to each unknown (the key and value unknowns and x
            # itself are small next to the atom at 0)
            h = EDGE_FD_STEP * (np.abs(v[:, j]) + (0.0 if j == k else sysm.floor[j]))
            up, dn = v.copy(), v.copy()
            up[:, j] += h
            dn[:, j] -= h
            jac[:, k, j] = (self._evaluate(up)[0][:, k] - self._evaluate(dn)[0][:, k]) / (2 * h)
        return jac

    def done(self, step, v):
        k = self.k
        return ((np.abs(step[:, k]) <= EDGE_RTOL * np.abs(v[:, k]))
                & (self.system._error(step[:, :k].T, v[:, :k].T) <= DYSON_STALL_RTOL))

    def accept(self, v, out, valid, size):
        return np.isfinite(v).all(axis=1)


class DysonLaw(SpectralLaw):
    """A :class:`freeattn.SpectralLaw` solved by a :class:`DysonSystem`.

    Subclasses set ``self.system`` and implement ``_describe``; ``atom_mass`` is
    the mass of an atom at 0, and ``hard_edge_at_zero`` says that the continuous
    part starts at 0 with a density ``~ x**(-1/2)`` (a square factor).
    """

    atom_mass = 0.0
    hard_edge_at_zero = False
    #: Newton on a system over the token law's atoms (eq. (14.51))
    _evaluation_cost = NESTED_SOLVE_FACTOR * TOWER_EVALUATION_COST

    def __init__(self, system, options):
        super().__init__(options)
        self.system = system
        self._edges = None

    # -- hooks -----------------------------------------------------------------------
    def _atoms(self):
        if self.atom_mass <= 0:
            return np.empty(0), np.empty(0)
        return np.array([0.0]), np.array([self.atom_mass])

    def _support_intervals(self):
        bands = self._band_edges()
        return tuple(Interval(lo, hi, lo_exponent=HARD) if lo == 0.0 else Interval(lo, hi)
                     for lo, hi in bands)

    def _density(self, x):
        x = np.asarray(x, float)
        out = np.empty(x.size)
        scale = self._band_edges()[-1][1]
        w, m, err, ok = self.system.solve_axis(x, scale)
        if not ok.all():
            bad = int(np.argmax(~ok))
            raise ConvergenceError(
                f"{self._describe()}: the Dyson system did not converge at x = {x[bad]!r} "
                f"(relative residual {err[bad]:.3g}, tolerance {DYSON_RTOL:g})")
        out[:] = m.imag / np.pi
        if np.any(out < 0):
            bad = int(np.argmin(out))
            raise ConvergenceError(
                f"{self._describe()}: negative density {out[bad]:.3g} at x = {x[bad]!r}: "
                f"the Dyson solve left the branch of the upper half-plane, or the scan "
                f"missed a gap of the support there")
        return out

    def _stieltjes_exact(self, z):
        z = np.asarray(z, complex)
        scale = self._band_edges()[-1][1]
        upper = z.imag >= 0
        zz = np.where(upper, z, np.conj(z))
        out = np.empty(z.shape, complex)
        off = zz.imag > 0
        if off.any():
            w, m, err, ok = self.system.solve_upper(zz[off], scale)
            if not ok.all():
                bad = int(np.argmax(~ok))
                raise ConvergenceError(
                    f"{self._describe()}: the Dyson system did not converge at "
                    f"z = {zz[off][bad]!r} (relative residual {err[bad]:.3g})")
            out[off] = -m
        if (~off).any():
            out[~off] = super()._stieltjes_from_representation(zz[~off])
        return np.where(upper, out, np.conj(out))

    # -- the support ------------------------------------------------------------------
    def _band_edges(self):
        if self._edges is None:
            self._edges = self._find_bands()
        return self._edges

    def _real_solution(self, x, scale):
        w, m, err, ok = self.system.solve_axis(np.array([x]), scale)
        return w[:, 0], m[0], bool(ok[0])

    def _find_bands(self):
        sys_ = self.system
        m1 = sys_.mean
        # a first scale: grow until the point is above the support (real solution,
        # certified below)
        top = SCAN_FIRST_TOP * m1 / max(1.0 - self.atom_mass, np.finfo(float).eps)
        for _ in range(60):
            w, m, ok = self._real_solution(top, top)
            if ok and abs(m.imag) <= GAP_RTOL * abs(m):
                break
            top *= 2.0
        else:
            raise ConvergenceError(f"{self._describe()}: no point above the support found "
                                   f"below x = {top!r}")
        split = SCAN_POINTS // 4
        x = np.concatenate([np.geomspace(top * SCAN_LOW, top * SCAN_LINEAR_FROM, split,
                                         endpoint=False),
                            np.linspace(top * SCAN_LINEAR_FROM, top, SCAN_POINTS - split)])
        w, m = self._scan(x, top)
        self._density_scale = m.imag.max()
        inside = m.imag > GAP_RTOL * self._density_scale
        if inside[0] and not self.hard_edge_at_zero:
            low = np.geomspace(top * SCAN_FLOOR, x[0], SCAN_EXTRA, endpoint=False)
            wl, ml = self._scan(low, top)
            x, w, m = np.concatenate([low, x]), np.concatenate([wl, w], axis=1), \
                np.concatenate([ml, m])
            self._density_scale = max(self._density_scale, ml.imag.max())
            inside = m.imag > GAP_RTOL * self._density_scale
        if not inside.any():
            raise ConvergenceError(f"{self._describe()}: the scan found no band")
        edges = []
        if self.hard_edge_at_zero:
            if not inside[0]:
                raise ConvergenceError(f"{self._describe()}: the density vanishes at "
                                       f"x = {x[0]!r}, next to its hard edge at 0")
            edges.append(0.0)
        changes = np.nonzero(np.diff(inside.astype(int)))[0]
        for i in changes:
            gap, band = (i, i + 1) if not inside[i] else (i + 1, i)
            edges.append(self._edge(x[gap], w[:, gap], x[band], top))
        if (inside[0] and not self.hard_edge_at_zero) or inside[-1]:
            raise ConvergenceError(f"{self._describe()}: the support reaches the end of the "
                                   f"scan [{x[0]!r}, {x[-1]!r}]")
        bands = list(zip(edges[0::2], edges[1::2]))
        self._certify_top(bands[-1][1], top)
        return bands

    def _scan(self, x, top):
        w, m, err, ok = self.system.solve_axis(x, top)
        if not ok.all():
            bad = int(np.argmax(~ok))
            raise ConvergenceError(
                f"{self._describe()}: the Dyson system did not converge at x = {x[bad]!r} "
                f"while scanning for the support (relative residual {err[bad]:.3g})")
        return w, m

    def _edge(self, xg, wg, xb, scale):
        """The fold between a gap point ``xg`` (real solution ``wg``) and a band point ``xb``.

        ``EDGE_ROUNDS`` rounds classify ``EDGE_SPLIT`` points of the bracket by their
        density (solved from above the axis, so on the branch); the bordered Newton of
        eq. (9.30) starts from the real solution at the last gap point, and its fold is
        accepted inside the scan's cell ``[xg, xb]``.
        """
        wg = wg.real.copy()
        cell = (min(xg, xb), max(xg, xb))
        for _ in range(EDGE_ROUNDS):
            xs = xg + (xb - xg) * np.arange(1, EDGE_SPLIT + 1) / (EDGE_SPLIT + 1)
            w, m = self._scan(xs, scale)
            band = m.imag > GAP_RTOL * self._density_scale
            first = int(np.argmax(band)) if band.any() else EDGE_SPLIT
            if first > 0:
                xg, wg = xs[first - 1], w[:, first - 1].real
            if first < EDGE_SPLIT:
                xb = xs[first]
        u = self.system.fold(wg, xg, scale)
        # the fold must lie in the scan's cell: the sections classify by a density
        # threshold, which a point within ~1e-8 of the edge can miss
        if u is None or not cell[0] <= u[-1] <= cell[1]:
            raise ConvergenceError(
                f"{self._describe()}: the bordered Newton of theory eq. (9.30) did not "
                f"converge to the edge between x = {xg!r} (gap) and {xb!r} (band)")
        return float(u[-1])

    def _certify_top(self, hi, scale):
        """Follow the real solution from just above ``hi`` out to ``1e8 hi``: no other band."""
        sys_ = self.system
        xs = np.geomspace(hi * (1 + UPPER_CERTIFY_START), hi * UPPER_CERTIFY_FACTOR,
                          UPPER_CERTIFY_STEPS)
        w, m, ok = self._real_solution(xs[0], scale)
        w = w.real
        sign = np.sign(sys_.real_det(w, xs[0]))
        for xk in xs[1:]:
            wk, mk, err, conv = sys_.newton(w.astype(complex)[:, None], np.array([complex(xk)]),
                                            real=True)
            if not conv[0] or np.sign(sys_.real_det(wk[:, 0].real, xk)) != sign:
                raise ConvergenceError(
                    f"{self._describe()}: the real solution above the top edge {hi!r} could "
                    f"not be followed to x = {xk!r}: the support above it is not certified")
            w = wk[:, 0].real
