"""Fixed-point problems of analytic subordination and their strategies.

A :class:`FixedPointProblem` is the subordination equation ``w = phi(w, z)``
of one free convolution (theory eqs. (14.1)-(14.4)), vectorized over points
``z``.  Three strategies solve it:

* :func:`iterate` -- the Belinschi-Bercovici iteration ``w <- phi(w, z)``,
  convergent from any start in the right half-plane when ``Im z != 0``
  (Belinschi & Bercovici 2007), used to reach the branch;
* :func:`newton` -- Newton on ``w - phi(w, z) = 0`` to polish to rounding,
  damped so that ``w`` never leaves its half-plane;
* :func:`bordered_newton` -- Newton on an :class:`EdgeProblem`, the real
  system ``F(w, x) = 0`` bordered by its fold condition (theory eq. (14.5)):
  the edges of the support are where the Jacobian of the fixed-point map is
  singular; :func:`edge_newton` is it for one ``w = phi(w, x)``, and the
  rectangular (eq. (16.8)) and Dyson (eq. (9.30)) folds run on it too;
* :func:`newton_system` -- damped Newton for a :class:`SystemProblem`, a system
  in several unknowns per point (the Dyson systems of theory eqs.
  (9.25)-(9.29), the many-law product system of eq. (14.8)), with a
  backtracking line search or a problem-specific damping.

Each returns a :class:`FixedPointResult` (value, residual, iterations,
converged).  :func:`polish_newton` is undamped Newton with guards for roots
already on their branch (the algebraic path's roots, theory eqs. (8.10),
(8.12), (8.27)); :func:`bracketed_newton` solves the real scalar equations of
the support searches (theory eqs. (14.17), (14.20)) inside sign-change brackets.
Where no derivative is at hand, :func:`bracketed_zeros` (Illinois) and
:func:`bracketed_maxima` (parabolic interpolation) search sign-change and peak
brackets (the gaps of eq. (14.20)), and :func:`secant` follows unbracketed
zeros (the folds of eq. (14.22)); the bracketed ones raise when a bracket does
not close.
"""

from dataclasses import dataclass

import numpy as np

from ..core._errors import ConvergenceError

__all__ = ["FixedPointResult", "FixedPointProblem", "SystemProblem", "EdgeProblem", "iterate",
           "newton", "newton_system", "bordered_newton", "edge_newton", "polish_newton",
           "bracketed_newton", "bracketed_zeros", "bracketed_maxima", "secant",
           "WarmTable"]

#: Relative residual ``|w - phi(w, z)| / (1 + |w|)`` at which a solve is converged
#: (a few ulps of the subordination point).
FIXED_POINT_RTOL = 1e-15
#: Most Belinschi-Bercovici iterations per call of :func:`iterate`.
MAX_ITERATIONS = 400
#: Most Newton steps per call of :func:`newton`.
MAX_NEWTON_STEPS = 40
#: A point of :func:`newton` whose full step is rejected while its error estimate is
#: below this (relative) is at the rounding noise of ``phi`` and stops there.
STALL_RTOL = 1e-12
#: :func:`newton` takes its last step without calling ``phi`` again where the step
#: before it was shorter than this (relative) and the error it predicts for
#: quadratic convergence is below the tolerance.
PREDICT_RTOL = 1e-8
#: Most successive halvings of a Newton step before :func:`newton` gives a point up.
MAX_HALVINGS = 30
#: Most bordered-Newton steps of :func:`edge_newton`.
MAX_EDGE_STEPS = 60
#: Relative step of the finite-difference Jacobian of the bordered system (the
#: step only changes the convergence rate, never the root: both equations are
#: evaluated exactly).
EDGE_FD_STEP = 1e-7
#: Relative size of the last bordered-Newton step at which an edge is accepted.
EDGE_RTOL = 4e-16
#: The same for an :class:`EdgeProblem` by default: the last step of ``x``, 64 ulps.
EDGE_STEP_RTOL = 64 * np.finfo(float).eps
#: Most halvings of a bordered-Newton step (:func:`bordered_newton`).
MAX_EDGE_HALVINGS = 40
#: A bordered-Newton point whose merit has not reached a new minimum for this
#: many rounds stops, unconverged (a start beside an edge with no fold, theory
#: section 14.31, oscillates there; a converging one sets a new minimum every
#: round or two).
EDGE_STALL_STEPS = 8
#: The final check of an edge: residual of the fixed-point equations relative to
#: the size of ``w``, and the fold condition (``1 - phi'`` or a determinant),
#: which the last step leaves at the rounding of the difference Jacobian.
EDGE_RESIDUAL_RTOL = 1e-10
EDGE_FOLD_ATOL = 1e-6
#: Most steps of :func:`bracketed_newton`, and the bracket width or Newton step
#: (relative to ``max(|x|, scale)``) at which it stops.
BRACKET_STEPS = 200
BRACKET_RTOL = 4e-16


@dataclass(frozen=True)
class FixedPointResult:
    """Outcome of a fixed-point solve.

    Attributes
    ----------
    value : ndarray
        The solution (complex ``w`` per point, or for :func:`edge_newton` the
        real pairs ``(w, x)``).
    residual : ndarray
        Per point: Newton's error estimate ``|w - phi| / |1 - phi'|``
        (:func:`newton`), the last step (:func:`iterate`), or ``|f| + |d|`` of
        the bordered system (:func:`edge_newton`).
    iterations : int
        Iterations (or Newton steps) used.
    converged : ndarray of bool
        Per point: residual below the tolerance.
    derivative : ndarray or None
        :func:`newton` only: ``d phi/d w`` at ``value`` (from the last evaluation,
        so a caller tests the root without calling ``phi`` again).
    extra : tuple or None
        :func:`newton_system` only: the problem's auxiliary outputs at ``value``
        (:meth:`SystemProblem.evaluate`).
    """

    value: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: np.ndarray
    derivative: np.ndarray = None
    extra: tuple = None


class FixedPointProblem:
    """``w = phi(w, z)``: subclasses implement :meth:`phi` (value and ``d phi/d w``).

    Attributes
    ----------
    sign : int
        ``+1`` when ``w`` lies in the closed upper half-plane for ``Im z > 0``,
        ``-1`` when in the lower one.
    scale : float
        Size of the problem's numbers (for relative tolerances).
    """

    sign = 1
    scale = 1.0

    def phi(self, w, z):
        """``(phi(w, z), d phi / d w)`` on 1-d complex arrays."""
        raise NotImplementedError

    def start(self, z):
        """A starting point for :func:`iterate`."""
        return z.astype(complex)


def _residual(problem, w, z):
    p, dp = problem.phi(w, z)
    return w - p, dp


def _tol(problem, w, system=False):
    return FIXED_POINT_RTOL * (problem.scale + _largest(np.abs(w), system))


def iterate(problem, z, w0=None, max_iterations=MAX_ITERATIONS):
    """Belinschi-Bercovici iteration ``w <- phi(w, z)`` (theory eq. (14.2)).

    Parameters
    ----------
    problem : FixedPointProblem
    z : ndarray
        Complex points off the real axis.
    w0 : ndarray, optional
        Start (default ``problem.start(z)``): shape ``z.shape``, or
        ``(k,) + z.shape`` for a system of ``k`` unknowns per point (such as
        the pair of eq. (16.6)), whose step and size are the largest over the
        components.
    max_iterations : int

    Returns
    -------
    FixedPointResult
    """
    w = problem.start(z) if w0 is None else w0.astype(complex).copy()
    system = w.ndim > z.ndim
    active = np.ones(z.shape, dtype=bool)
    res = np.full(z.shape, np.inf)
    it = 0
    for it in range(1, max_iterations + 1):
        if not active.any():
            break
        with np.errstate(all="ignore"):
            p, _ = problem.phi(w[..., active], z[active])
            step = _largest(np.abs(p - w[..., active]), system)
        w[..., active] = p
        res[active] = step
        idx = np.flatnonzero(active)
        active[idx[step <= _tol(problem, p, system)]] = False
    return FixedPointResult(w, res, it, res <= _tol(problem, w, system))


def _largest(a, system):
    """Per point: ``a`` itself, or for a system its largest component (leading axis)."""
    return np.max(a, axis=0) if system else a


def _newton_error(f, dp):
    """Newton's estimate ``|f / (1 - phi')|`` of the distance to the fixed point
    (0 where ``f = 0``)."""
    with np.errstate(all="ignore"):
        err = np.abs(f) / np.abs(1.0 - dp)
    return np.where(np.abs(f) == 0, 0.0, err)


def newton(problem, z, w0, max_steps=MAX_NEWTON_STEPS, rtol=FIXED_POINT_RTOL):
    """Damped Newton on ``w - phi(w, z) = 0`` (theory eq. (14.3)), one ``phi`` call per round.

    Every round evaluates ``phi`` once on all unfinished points: a point either
    tries its full Newton step or, where its last trial was rejected, half of
    that trial (the backtracking of all points shares the calls).  A trial is
    accepted when it is finite, in the problem's closed half-plane (a trial in
    the other half-plane is first projected onto the real axis, where a real
    root lies) and does not raise the residual above ``max(|f|, floor)`` with
    ``floor`` the rounding of ``phi`` (:data:`FIXED_POINT_RTOL`).  A point is
    converged when Newton's own error estimate ``|w - phi| / |1 - phi'|`` (the
    length of the next step) is below the tolerance -- where ``phi' -> 1`` a
    small residual does not mean a small error -- or when the residual is at
    the rounding of ``phi``, where a step would only follow rounding noise (at a
    degenerate point such as ``z -> 0`` for Bernoulli ⊞ Bernoulli, ``phi`` is the
    identity to rounding near the fixed point).  A point whose full step is
    rejected although its error estimate is below :data:`STALL_RTOL` stops
    there (the residual is rounding noise; ``residual`` reports the estimate),
    and so does a point after :data:`MAX_HALVINGS` halvings.

    Parameters
    ----------
    problem : FixedPointProblem
    z, w0 : ndarray
        Points and starting values (same shape).
    max_steps : int
        Most rounds (calls of ``phi`` after the one at ``w0``).
    rtol : float
        Relative error ``|w - phi| / |1 - phi'| / (scale + |w|)`` at which a
        point is converged (default :data:`FIXED_POINT_RTOL`).

    Returns
    -------
    FixedPointResult
        ``residual`` holds the estimated error ``|w - phi| / |1 - phi'|``.
    """
    def _size(w):
        return problem.scale + np.abs(w)

    def _done(f, err, w):
        # converged: the estimated error is below the tolerance, or the residual is
        # at the rounding of phi (a step would then only move w along rounding noise,
        # which where phi' -> 1 can be large)
        size = _size(w)
        return (err <= rtol * size) | (np.abs(f) <= FIXED_POINT_RTOL * size)

    w = w0.astype(complex).copy()
    with np.errstate(all="ignore"):
        f, dp = _residual(problem, w, z)
        step = f / (1.0 - dp)
    err = _newton_error(f, dp)
    active = ~_done(f, err, w) & np.isfinite(step)
    lam = np.ones(w.shape)
    err_prev = np.full(w.shape, np.inf)
    predicted = np.zeros(w.shape, dtype=bool)
    it = 0
    for it in range(1, max_steps + 1):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        wa, fa = w[idx], f[idx]
        cand = wa - lam[idx] * step[idx]
        wrong = problem.sign * cand.imag < 0
        cand[wrong] = cand[wrong].real
        with np.errstate(all="ignore"):
            fc, dc = _residual(problem, cand, z[idx])
        floor = FIXED_POINT_RTOL * _size(wa)
        good = np.isfinite(fc) & np.isfinite(dc) & (
            np.abs(fc) <= np.maximum(np.abs(fa), floor))
        acc, rej = idx[good], idx[~good]
        moved = np.abs(cand[good] - wa[good])
        full = lam[acc] == 1.0
        w[acc], f[acc], dp[acc] = cand[good], fc[good], dc[good]
        with np.errstate(all="ignore"):
            step[acc] = f[acc] / (1.0 - dp[acc])
        err_prev[acc[~full]] = np.inf
        err_prev[acc[full]], err[acc] = err[acc[full]], _newton_error(f[acc], dp[acc])
        # a full step that changed w by less than the tolerance also ends the solve
        stop_acc = _done(f[acc], err[acc], w[acc]) | ~np.isfinite(step[acc]) | (
            full & (moved <= rtol * _size(w[acc])))
        # quadratic convergence: after a step of length e_k following one of e_(k-1),
        # the next step leaves an error ~ e_k**3 / e_(k-1)**2; where that is below
        # the tolerance the next step is taken without another call of phi
        with np.errstate(all="ignore"):
            sz = _size(w[acc])
            pred = err[acc] ** 3 / err_prev[acc] ** 2
            free = ~stop_acc & full & (err[acc] <= PREDICT_RTOL * sz) & (pred <= rtol * sz)
        fi = acc[free]
        if fi.size:
            nw = w[fi] - step[fi]
            flip = problem.sign * nw.imag < 0
            nw[flip] = nw[flip].real
            w[fi], err[fi] = nw, pred[free]
            predicted[fi] = True
            stop_acc |= free
        lam[acc] = 1.0
        active[acc[stop_acc]] = False
        # a rejected full step from within STALL_RTOL is rounding noise: stop there
        stall = (lam[rej] == 1.0) & (err[rej] <= STALL_RTOL * _size(w[rej]))
        lam[rej] *= 0.5
        active[rej[stall | (lam[rej] < 0.5 ** MAX_HALVINGS)]] = False
    return FixedPointResult(w, err, it, _done(f, err, w) | predicted, dp)


class SystemProblem:
    """``F(w, z) = 0`` in ``k`` unknowns per point, ``w`` of shape ``(k, N)``.

    Subclasses implement :meth:`evaluate` and :meth:`error`; the other hooks
    have neutral defaults.
    """

    def evaluate(self, w, z):
        """``(f, step, extra)`` at unknowns ``w`` (``(k, N)``) and points ``z`` (``(N,)``).

        ``f`` is the residual, ``step`` the full Newton step (the next iterate is
        ``w - step``; NaN where the Jacobian is singular) and ``extra`` a tuple
        of auxiliary arrays whose last axis runs over the points.
        """
        raise NotImplementedError

    def error(self, f, w, extra):
        """Per point: the relative residual compared with the tolerance."""
        raise NotImplementedError

    def step_size(self, step, w, z):
        """Per point: the relative size of ``step`` taken to ``w`` (default
        :meth:`error` of the step), compared with ``step_rtol``.

        :func:`newton_system` calls it once per accepted step (and once for a
        point that stops in the line search), so a problem may keep per-point
        state here, indexed by ``z`` (a chord method's record of contraction).
        """
        return self.error(step, w, None)

    def damp(self, step, w):
        """The step actually tried from ``w`` (default: the full step)."""
        return step

    def admissible(self, w, z, extra):
        """Per point: ``w`` is on the branch sought (default: every point)."""
        return np.ones(w.shape[-1], dtype=bool)


def newton_system(problem, z, w0, max_steps, rtol, step_rtol=0.0, halvings=0,
                  stall_rtol=0.0, floor_rtol=0.0):
    """Damped Newton on a :class:`SystemProblem`, vectorized over the points.

    Each round tries the (damped, :meth:`SystemProblem.damp`) Newton step of
    every unfinished point.  With ``halvings > 0`` a trial is accepted when its
    error (:meth:`SystemProblem.error`) is finite, below ``max(error, rtol)``
    and admissible, else halved up to ``halvings`` times; a point none of whose
    trials is accepted (or whose step is not finite) stops there, and counts as
    converged when its step was below ``stall_rtol`` (the residual is then the rounding noise of ``F``).
    With ``halvings = 0`` every finite trial is accepted (the damping alone
    keeps the iterates on the branch).  A point is converged when its error is
    at most ``rtol``, or its last accepted step at most ``step_rtol``; a point
    whose error is at most ``floor_rtol`` (the rounding floor of ``F``) is
    converged as soon as a full step is rejected or fails to halve its error.

    Parameters
    ----------
    problem : SystemProblem
    z : ndarray, shape (N,)
    w0 : ndarray, shape (k, N)
        Starting values.
    max_steps : int
        Most rounds.
    rtol : float
        Error (:meth:`SystemProblem.error`) at which a point is converged.
    step_rtol : float
        Relative step (:meth:`SystemProblem.step_size`) at which a point is
        converged (0: not used).
    halvings : int
        Most halvings of a step in the line search (0: no line search).
    stall_rtol : float
        Relative step below which a point that stops in the line search is
        converged.
    floor_rtol : float
        Error at or below which the residual is rounding (0: not used).

    Returns
    -------
    FixedPointResult
        ``value`` of shape ``(k, N)``, ``residual`` the error per point,
        ``extra`` the problem's auxiliary outputs at ``value``.
    """
    w = np.array(w0, dtype=complex)
    f, step, extra = problem.evaluate(w, z)
    extra = tuple(np.array(e) for e in extra)
    err = problem.error(f, w, extra)
    conv = err <= rtol
    active = ~conv & np.isfinite(err)
    it = 0
    for it in range(1, max_steps + 1):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        w_old = w[:, idx]
        trial_step = problem.damp(step[:, idx], w_old)
        if not halvings:
            _plain_round(problem, z, w, f, step, err, extra, conv, active, idx, trial_step,
                         rtol, step_rtol, evaluate=it < max_steps)
            continue
        lam = np.ones(idx.size)
        # a non-finite step (a singular Jacobian) is not halved: the point stops there
        pending = np.all(np.isfinite(trial_step), axis=0)
        accepted = np.zeros(idx.size, dtype=bool)
        err_old = err[idx].copy()
        at_floor = err_old <= floor_rtol
        for h in range(halvings + 1):
            if not pending.any():
                break
            if h == 1 and at_floor.any():
                # at the rounding floor a rejected full step ends the solve
                conv[idx[pending & at_floor]] = True
                active[idx[pending & at_floor]] = False
                pending &= ~at_floor
                if not pending.any():
                    break
            sel = np.flatnonzero(pending)
            trial = w_old[:, sel] - lam[sel] * trial_step[:, sel]
            with np.errstate(all="ignore"):
                ft, st, xt = problem.evaluate(trial, z[idx[sel]])
                et = problem.error(ft, trial, xt)
            good = np.isfinite(et) & (et < np.maximum(err[idx[sel]], rtol))
            good &= problem.admissible(trial, z[idx[sel]], xt)
            acc, tacc = idx[sel[good]], sel[good]
            w[:, acc], f[:, acc], step[:, acc], err[acc] = (trial[:, good], ft[:, good],
                                                            st[:, good], et[good])
            for full, part in zip(extra, xt):
                full[..., acc] = part[..., good]
            conv[acc] = err[acc] <= rtol
            if step_rtol > 0:
                with np.errstate(all="ignore"):
                    moved = problem.step_size(lam[tacc] * trial_step[:, tacc], w[:, acc],
                                              z[acc])
                conv[acc] |= moved <= step_rtol
            pending[tacc] = False
            accepted[tacc] = True
            lam[pending] *= 0.5
        active[idx[~accepted]] = False
        stopped = idx[pending]
        if stopped.size:
            with np.errstate(all="ignore"):
                size = problem.step_size(trial_step[:, pending], w_old[:, pending], z[stopped])
            conv[stopped] = size <= stall_rtol
        # at the floor, an accepted step that did not halve the error ends the solve
        slow = at_floor & accepted & (err[idx] > 0.5 * err_old)
        conv[idx[slow]] = True
        active &= ~conv & np.isfinite(err)
    return FixedPointResult(w, err, it, conv, extra=extra)


def _plain_round(problem, z, w, f, step, err, extra, conv, active, idx, trial_step, rtol,
                 step_rtol, evaluate):
    """One round of :func:`newton_system` without a line search, in place.

    Every finite trial is taken (a non-finite one stops its point unconverged); a
    point whose step was below ``step_rtol`` is converged without another
    evaluation; the others are evaluated at the new iterate (unless this is the
    last round), converged where the error there is at most ``rtol``.
    """
    trial = w[:, idx] - trial_step
    ok = np.all(np.isfinite(trial), axis=0)
    active[idx[~ok]] = False
    acc = idx[ok]
    w[:, acc] = trial[:, ok]
    if step_rtol > 0:
        with np.errstate(all="ignore"):
            moved = problem.step_size(trial_step[:, ok], trial[:, ok], z[acc])
        conv[acc] = moved <= step_rtol
    active[acc] &= ~conv[acc]
    todo = acc[active[acc]]
    if not (evaluate and todo.size):
        return
    with np.errstate(all="ignore"):
        ft, st, xt = problem.evaluate(w[:, todo], z[todo])
        et = problem.error(ft, w[:, todo], xt)
    f[:, todo], step[:, todo], err[todo] = ft, st, et
    for full, part in zip(extra, xt):
        full[..., todo] = part
    conv[todo] = et <= rtol
    active[todo] = ~conv[todo] & np.isfinite(et)


class EdgeProblem:
    """A bordered system for edges of a support (theory eq. (14.5)).

    Real unknowns ``v = (w_1, ..., w_k, x)`` per point (rows of an ``(n, k + 1)``
    array); the residual rows are the real fixed-point equations ``F(w, x) = 0``
    followed by the fold condition (``1 - phi'`` or ``det(I - D phi)``), zero at
    an edge.  Subclasses implement :meth:`residual`; the others are defaults.

    Attributes
    ----------
    scale : float
        Size of the problem's numbers (for relative tolerances).
    x_scale : float or None
        Size of ``x`` where it differs from that of ``w`` (``0`` for a scale-free
        ``x``, as the point of a ⊠, whose edges can lie many decades below the
        size of ``w``); None: ``scale``.
    x_step_rtol : float
        Last step of ``x`` (relative to ``x_scale + |x|``) at which a point is done.
    w_step_rtol : float or None
        Also required of the steps of ``w`` (relative to ``scale + |w|``), if set.
    residual_rtol, fold_atol : float
        The final check: ``|F| <= residual_rtol * size`` and ``|fold| <= fold_atol``.
    """

    scale = 1.0
    x_scale = None
    x_step_rtol = EDGE_STEP_RTOL
    w_step_rtol = None
    residual_rtol = EDGE_RESIDUAL_RTOL
    fold_atol = EDGE_FOLD_ATOL

    def residual(self, v):
        """``(out, valid, size)``: residual rows ``(n, k + 1)``, whether each point is
        in the domain where the equations are real, and the size of its ``w``."""
        raise NotImplementedError

    def jacobian(self, v, out):
        """``(n, k + 1, k + 1)`` Jacobian: forward differences in one call of
        :meth:`residual` (the step ``EDGE_FD_STEP (scale + |v_j|)`` only changes the
        rate of convergence, never the root)."""
        n, dim = v.shape
        h = EDGE_FD_STEP * (self._column_scales(dim) + np.abs(v))
        shifted = [v] + [v + h[:, j:j + 1] * np.eye(dim)[j] for j in range(dim)]
        o_all, _, _ = self.residual(np.concatenate(shifted))
        o_all = o_all.reshape(dim + 1, n, dim)
        return np.stack([(o_all[j + 1] - o_all[0]) / h[:, j:j + 1] for j in range(dim)],
                        axis=2)

    def _column_scales(self, dim):
        """The size of each unknown: ``scale`` for ``w``, ``x_scale`` for ``x``."""
        scales = np.full(dim, float(self.scale))
        if self.x_scale is not None:
            scales[-1] = self.x_scale
        return scales

    def done(self, step, v):
        """Per point: the last step is below the step tolerances."""
        ok = np.abs(step[:, -1]) <= self.x_step_rtol * (
            self._column_scales(v.shape[1])[-1] + np.abs(v[:, -1]))
        if self.w_step_rtol is not None:
            ok &= np.all(np.abs(step[:, :-1]) <= self.w_step_rtol
                         * (self.scale + np.abs(v[:, :-1])), axis=1)
        return ok

    def accept(self, v, out, valid, size):
        """Per point: the final check of the residuals."""
        return (valid & np.all(np.abs(out[:, :-1]) <= self.residual_rtol * size[:, None], axis=1)
                & (np.abs(out[:, -1]) <= self.fold_atol))


def _edge_merit(out, size):
    return (np.abs(out[:, :-1]) / size[:, None]).sum(axis=1) + np.abs(out[:, -1])


def bordered_newton(problem, v0, max_steps=MAX_EDGE_STEPS, halvings=MAX_EDGE_HALVINGS):
    """Bordered Newton for edges: an :class:`EdgeProblem` from real starts ``v0``.

    Each round solves the Jacobian system of every unfinished point (a singular
    or non-finite one stops that point) and halves its step, at most
    ``halvings`` times, until the trial is valid and its merit
    ``sum |F|/size + |fold|`` at most doubles (``halvings = 0``: full steps).  A
    point is done when its step passes :meth:`EdgeProblem.done`; the result is
    then checked by :meth:`EdgeProblem.accept`.  A point stops unconverged where
    its system is singular, no halving gives an acceptable step, or its merit
    has set no new minimum for :data:`EDGE_STALL_STEPS` rounds.

    Returns
    -------
    FixedPointResult
        ``value`` the ``(n, k + 1)`` rows ``(w, x)``, ``residual`` the merit at
        ``value``, ``converged`` done and accepted.
    """
    v = np.array(v0, dtype=float)
    conv = np.zeros(v.shape[0], dtype=bool)
    # stopped unconverged: a singular system, no acceptable step, or a stall
    stopped = np.zeros(v.shape[0], dtype=bool)
    best = np.full(v.shape[0], np.inf)
    since = np.zeros(v.shape[0], dtype=int)
    it = 0
    for it in range(1, max_steps + 1):
        act = np.flatnonzero(~conv & ~stopped)
        if not act.size:
            break
        va = v[act]
        out, valid, size = problem.residual(va)
        jac = problem.jacobian(va, out)
        with np.errstate(all="ignore"):
            regular = (np.isfinite(jac).all(axis=(1, 2)) & np.isfinite(out).all(axis=1)
                       & (np.abs(np.linalg.det(jac)) > 0))
            step = np.zeros(va.shape)
            if regular.any():
                step[regular] = np.linalg.solve(jac[regular], out[regular][:, :, None])[:, :, 0]
        bad = ~regular | ~np.isfinite(step).all(axis=1)
        step[bad] = 0.0
        m0 = _edge_merit(out, size)
        better = m0 < best[act]
        best[act[better]] = m0[better]
        since[act] = np.where(better, 0, since[act] + 1)
        lam = np.ones(act.size)
        acc = bad.copy() if halvings else np.ones(act.size, dtype=bool)
        for _ in range(halvings):
            todo = ~acc
            if not todo.any():
                break
            oc, vc, sc = problem.residual(va[todo] - lam[todo, None] * step[todo])
            good = vc & (_edge_merit(oc, sc) <= 2.0 * m0[todo])
            t_idx = np.flatnonzero(todo)
            acc[t_idx[good]] = True
            lam[t_idx[~good]] *= 0.5
        lam[~acc] = 0.0
        taken = lam[:, None] * step
        v[act] = va - taken
        conv[act[problem.done(taken, va) & ~bad & (lam > 0)]] = True
        stopped[act[(bad | (lam == 0) | (since[act] >= EDGE_STALL_STEPS)) & ~conv[act]]] = True
    out, valid, size = problem.residual(v)
    ok = conv & problem.accept(v, out, valid, size)
    return FixedPointResult(v, _edge_merit(out, size), it, ok)


class _ScalarEdge(EdgeProblem):
    """The bordered system ``w = phi(w, x)``, ``1 = phi'(w, x)`` of a
    :class:`FixedPointProblem` (theory eq. (14.5))."""

    # the steps of x to a few ulps, and those of w to 1e-9 (w is only quadratic in
    # the error of x at a fold)
    x_step_rtol = 16 * EDGE_RTOL
    w_step_rtol = 1e-9
    #: ``|Im (w - phi)|`` (relative to the size) above which the point left the
    #: domain where the constituents' transforms are real
    real_rtol = 1e-8

    def __init__(self, problem, x_scale=None):
        self._problem = problem
        self.scale = problem.scale
        self.x_scale = x_scale

    def residual(self, v):
        w, x = v[:, 0], v[:, 1]
        with np.errstate(all="ignore"):
            p, dp = self._problem.phi(w.astype(complex), x.astype(complex))
            f, d = w - p, 1.0 - dp
            size = self.scale + np.abs(w)
            # a real fixed point needs real values: a complex phi means (w, x) left
            # the domain where the constituents' transforms are real
            valid = (np.abs(f.imag) <= self.real_rtol * size) & np.isfinite(f) & np.isfinite(d)
        return np.stack([f.real, d.real], axis=1), valid, size


def edge_newton(problem, w0, x0, max_steps=MAX_EDGE_STEPS, x_scale=None):
    """Bordered Newton for an edge: real ``(w, x)`` with ``w = phi(w, x)`` and
    ``d phi/d w (w, x) = 1`` (theory eq. (14.5)), by :func:`bordered_newton`.

    Parameters
    ----------
    problem : FixedPointProblem
    w0, x0 : ndarray
        Real starting pairs (1-d, same shape), e.g. the real solution at a point
        just outside the support.
    max_steps : int
    x_scale : float, optional
        Size of ``x`` (:attr:`EdgeProblem.x_scale`): ``0`` where ``x`` is scale-free
        (a ⊠); by default ``problem.scale``.

    Returns
    -------
    FixedPointResult
        ``value`` is an ``(n, 2)`` array of ``(w, x)``.
    """
    v0 = np.stack([np.asarray(w0, dtype=float), np.asarray(x0, dtype=float)], axis=1)
    return bordered_newton(_ScalarEdge(problem, x_scale), v0, max_steps)


def polish_newton(step_of, t, max_steps, rtol=0.0, stall_ratio=np.inf, accept=None,
                  active=None, counts=False):
    """Undamped Newton that polishes roots already on their branch (any shape of ``t``).

    Every round computes the steps of the unfinished points; a point takes its
    step when it is finite, no longer than ``stall_ratio`` times its previous
    step (a step that stops shrinking follows a multiple root or rounding
    noise) and ``accept`` allows it; otherwise it keeps its value and stops.
    A point also stops after a step of at most ``rtol |t|``.

    Parameters
    ----------
    step_of : callable
        ``step_of(t, idx)``: the Newton steps at the values ``t`` of the points
        ``idx`` (flat indices), the next iterate being ``t - step``.
    t : ndarray
        Starting values (copied).
    max_steps : int
    rtol : float
        Relative step at which a point is converged (0: only a rejected step
        stops it, so every accepted point takes ``max_steps`` steps).
    stall_ratio : float
    accept : callable, optional
        ``accept(t_new, t_old, idx)``: boolean per point (a branch or distance
        guard; it may record per-point state).
    active : ndarray of bool, optional
        The points to polish (default: the finite ones).
    counts : bool
        Also return the number of steps each point took.

    Returns
    -------
    ndarray
        The polished values, shape of ``t`` (and the counts, same shape).
    """
    shape = np.shape(t)
    t = np.array(t).ravel()                      # a copy
    act = np.isfinite(t) if active is None else np.asarray(active).ravel() & np.isfinite(t)
    stalls = stall_ratio != np.inf
    last = np.full(t.shape, np.inf) if stalls else None
    taken = np.zeros(t.shape, dtype=int) if counts else None
    idx = act.nonzero()[0]                      # the unfinished points, in order
    with np.errstate(all="ignore"):            # a step may overflow: then not finite
        for _ in range(max_steps):
            if not idx.size:
                break
            ta = t[idx]
            step = step_of(ta, idx)
            size = np.abs(step)
            tn = ta - step
            ok = np.isfinite(tn)
            if stalls:
                ok &= size <= stall_ratio * last[idx]
                last[idx] = size
            done = size <= rtol * np.abs(ta)
            if accept is not None:
                if ok.all():
                    # every point asks (the common case): no selection copies
                    ok = np.array(accept(tn, ta, idx), dtype=bool)
                elif ok.any():
                    sel = ok.nonzero()[0]
                    ok[sel] = accept(tn[sel], ta[sel], idx[sel])
            moved = idx[ok]
            t[moved] = tn[ok]
            if counts:
                taken[moved] += 1
            idx = idx[ok & ~done]
    return (t.reshape(shape), taken.reshape(shape)) if counts else t.reshape(shape)


def bracketed_newton(f_pair, lo, hi, flo, x0=None, scale=0.0, what="a bracketed equation"):
    """Zeros of real ``f`` in brackets ``[lo, hi]`` by Newton safeguarded with bisection.

    Parameters
    ----------
    f_pair : callable
        ``f_pair(x, idx)`` returns ``(f, f')`` at the points ``x`` of the
        brackets ``idx`` (the unfinished ones, indices into ``lo``).
    lo, hi : ndarray
        Brackets (either order): ``f(lo)`` has the sign of ``flo``, ``f(hi)`` the
        other sign.
    flo : ndarray
        The sign (or a value of that sign) of ``f`` at ``lo``.
    x0 : ndarray, optional
        Starts; those outside their bracket start at its middle, as all do
        without ``x0``.
    scale : float
        Absolute floor of the tolerance: a point stops at a Newton step or a
        bracket below ``BRACKET_RTOL * max(|x|, scale)``, or where ``f = 0``.
    what : str
        The equation, named in the error.

    Returns
    -------
    ndarray

    Raises
    ------
    ConvergenceError
        If a point is not solved within ``BRACKET_STEPS``.
    """
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    flo = np.asarray(flo)
    x = 0.5 * (lo + hi)
    if x0 is not None:
        x0 = np.asarray(x0, dtype=float)
        # a start at an end is kept: an inverse from the samples' interpolation lands
        # on the nearer sample when the value is within rounding of its value, and
        # f' there steers Newton at once (from the middle, the steps from the far
        # side overshoot a convex f and bisect: theory section 14.51)
        x = np.where((x0 >= np.minimum(lo, hi)) & (x0 <= np.maximum(lo, hi)), x0, x)
    act = np.arange(x.size)
    for _ in range(BRACKET_STEPS):
        xa = x[act]
        f, df = f_pair(xa, act)
        same = np.sign(f) == np.sign(flo[act])
        lo[act] = np.where(same, xa, lo[act])
        hi[act] = np.where(same, hi[act], xa)
        la, ha = lo[act], hi[act]
        with np.errstate(all="ignore"):
            step = xa - f / df
        inside = np.isfinite(step) & (step > np.minimum(la, ha)) & (step < np.maximum(la, ha))
        # A Newton correction below the tolerance that does not land strictly inside
        # the bracket (below an ulp of x, or just past the end x itself is) leaves x a
        # zero to the tolerance: bisecting instead halves the bracket down to the
        # tolerance from the far end, ~50 evaluations (theory section 14.51: the zero
        # of G of eq. (14.37) for a product of atoms took 52 solves, 2.7 s)
        tol = BRACKET_RTOL * np.maximum(np.abs(xa), scale)
        settled = ~inside & np.isfinite(step) & (np.abs(step - xa) <= tol)
        new = np.where((f == 0) | settled, xa, np.where(inside, step, 0.5 * (la + ha)))
        x[act] = new
        # done: a zero hit, a Newton step or the bracket at the rounding of x
        tol = BRACKET_RTOL * np.maximum(np.abs(new), scale)
        done = (f == 0) | settled | (inside & (np.abs(new - xa) <= tol)) | (
            np.abs(ha - la) <= tol)
        act = act[~done]
        if not act.size:
            return x
    raise ConvergenceError(
        f"safeguarded Newton on {what} did not converge in {BRACKET_STEPS} steps at "
        f"{act.size} of {x.size} points (e.g. x = {float(x[act[0]])!r}, bracket width "
        f"{float(abs(hi[act[0]] - lo[act[0]])):.3e})")


def _check_finite_values(method, what, values, points):
    """Raise the ConvergenceError of a bracketed search whose function is not finite
    at one of ``points`` (a NaN would otherwise steer the bracket to a wrong zero)."""
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))
        raise ConvergenceError(
            f"the {method} search for {what} met a non-finite value {values[k]!r} at "
            f"{float(points[k])!r}", point=float(points[k]))


def _unclosed(method, what, max_steps, act, lo, hi, rtol):
    """Raise the ConvergenceError of a bracketed search whose brackets ``act`` are open."""
    k = act[0]
    raise ConvergenceError(
        f"the {method} search for {what} did not converge in {max_steps} steps at "
        f"{act.size} of {lo.size} brackets (e.g. [{float(lo[k])!r}, {float(hi[k])!r}], "
        f"tolerance {rtol:.1e} relative)", point=(float(lo[k]), float(hi[k])),
        iterations=max_steps)


def bracketed_zeros(fun, a, b, fa, fb, rtol, scale=0.0, max_steps=BRACKET_STEPS,
                    what="a bracketed equation"):
    """Zeros of real ``fun`` in sign-change brackets by the Illinois method, where no
    derivative is at hand.

    Modified regula falsi: the next point is the secant point of the bracket (its
    midpoint where the secant point is not strictly inside); when the sign does
    not change the retained end's value is halved, so that an end cannot stay
    fixed and convergence is superlinear.

    Parameters
    ----------
    fun : callable
        ``fun(x, idx)``: the values at the points ``x`` of the brackets ``idx``
        (the unfinished ones, indices into ``a``).
    a, b : ndarray
        Brackets (either order); ``fa``, ``fb`` the values there, of opposite signs.
    rtol : float
        A bracket narrower than ``rtol * max(|a|, |b|, scale)`` is converged.
    scale : float
    max_steps : int
    what : str
        The equation, named in the error.

    Returns
    -------
    FixedPointResult
        ``value`` the brackets' midpoints, ``residual`` their widths.

    Raises
    ------
    ConvergenceError
        If a bracket is still wider than the tolerance after ``max_steps``, or
        ``fun`` is not finite at a point of a bracket.
    """
    a, b = np.array(a, dtype=float), np.array(b, dtype=float)
    fa, fb = np.array(fa, dtype=float), np.array(fb, dtype=float)
    act = np.arange(a.size)
    steps = 0
    while True:
        tol = rtol * np.maximum(np.maximum(np.abs(a[act]), np.abs(b[act])), scale)
        act = act[np.abs(b[act] - a[act]) > tol]
        if not act.size:
            break
        if steps == max_steps:
            _unclosed("Illinois", what, max_steps, act, a, b, rtol)
        steps += 1
        with np.errstate(all="ignore"):
            c = (a[act] * fb[act] - b[act] * fa[act]) / (fb[act] - fa[act])
        mid = 0.5 * (a[act] + b[act])
        lo, hi = np.minimum(a[act], b[act]), np.maximum(a[act], b[act])
        c = np.where(np.isfinite(c) & (c > lo) & (c < hi), c, mid)
        fc = np.asarray(fun(c, act), dtype=float)
        _check_finite_values("Illinois", what, fc, c)
        flip = np.sign(fc) != np.sign(fb[act])
        # the retained end: b's old side when the sign flips, else halve its value
        a[act] = np.where(flip, b[act], a[act])
        fa[act] = np.where(flip, fb[act], 0.5 * fa[act])
        b[act], fb[act] = c, fc
        hit = fc == 0
        a[act[hit]] = c[hit]
    return FixedPointResult(0.5 * (a + b), np.abs(b - a), steps, np.ones(a.shape, dtype=bool))


#: The golden-section fraction of :func:`bracketed_maxima`.
GOLDEN_FRACTION = 0.381966011250105
#: A bracket of :func:`bracketed_maxima` wider than this fraction of its width two
#: steps before takes a golden-section step (parabolic steps that land next to
#: the best point shrink the bracket from one side only, as Brent's safeguard
#: notes): at least a factor 0.62 every three steps.
PARABOLIC_SHRINK = 0.5


def bracketed_maxima(fun, a, b, c, fa, fb, fc, rtol, scale=0.0, max_steps=BRACKET_STEPS,
                     what="a bracketed maximum"):
    """Local maxima of real ``fun`` by successive parabolic interpolation, from brackets
    ``a < b < c`` with ``fun(b) >= fun(a), fun(c)`` (a golden-section step where the
    parabola's vertex is not usable: not finite, within the tolerance of an end or
    of ``b``, or the bracket has not halved in two steps).

    Parameters
    ----------
    fun : callable
        ``fun(x, idx)`` as for :func:`bracketed_zeros`.
    a, b, c, fa, fb, fc : ndarray
        The brackets and the values there.
    rtol, scale, max_steps, what
        As for :func:`bracketed_zeros`: converged when ``c - a <= 2 rtol
        max(|a|, |c|, scale)``.

    Returns
    -------
    FixedPointResult
        ``value`` the best points ``b``, ``residual`` the brackets' widths.

    Raises
    ------
    ConvergenceError
        If a bracket is still wider than the tolerance after ``max_steps``, or
        ``fun`` is not finite at a point of a bracket.
    """
    a, b, c = (np.array(v, dtype=float) for v in (a, b, c))
    fa, fb, fc = (np.array(v, dtype=float) for v in (fa, fb, fc))
    act = np.arange(a.size)
    widths = [np.full(a.shape, np.inf)] * 2          # c - a one and two steps before
    steps = 0
    while True:
        tol = rtol * np.maximum(np.maximum(np.abs(a[act]), np.abs(c[act])), scale)
        keep = (c[act] - a[act]) > 2 * tol
        act, tol = act[keep], tol[keep]
        if not act.size:
            break
        if steps == max_steps:
            _unclosed("parabolic", what, max_steps, act, a, c, rtol)
        steps += 1
        A, B, C, FA, FB, FC = a[act], b[act], c[act], fa[act], fb[act], fc[act]
        with np.errstate(all="ignore"):
            num = (B - A) ** 2 * (FB - FC) - (B - C) ** 2 * (FB - FA)
            den = (B - A) * (FB - FC) - (B - C) * (FB - FA)
            u = B - 0.5 * num / den
        gold = np.where(C - B > B - A, B + GOLDEN_FRACTION * (C - B),
                        B - GOLDEN_FRACTION * (B - A))
        usable = (np.isfinite(u) & (u > A + tol) & (u < C - tol) & (np.abs(u - B) > tol)
                  & (C - A <= PARABOLIC_SHRINK * widths[0][act]))
        widths = [widths[1], c - a]
        u = np.where(usable, u, gold)
        fu = np.asarray(fun(u, act), dtype=float)
        _check_finite_values("parabolic", what, fu, u)
        up = fu >= FB
        right = u > B
        # new bracket: the better of (u, B) in the middle
        na = np.where(up, np.where(right, B, A), np.where(right, A, u))
        nfa = np.where(up, np.where(right, FB, FA), np.where(right, FA, fu))
        nc = np.where(up, np.where(right, C, B), np.where(right, u, C))
        nfc = np.where(up, np.where(right, FC, FB), np.where(right, fu, FC))
        nb = np.where(up, u, B)
        nfb = np.where(up, fu, FB)
        a[act], b[act], c[act], fa[act], fb[act], fc[act] = na, nb, nc, nfa, nfb, nfc
    return FixedPointResult(b, c - a, steps, np.ones(a.shape, dtype=bool))


def secant(fun, x0, x1, f0, f1, rtol, max_steps, active=None):
    """Secant iterations for zeros of real ``fun`` at all points at once (no bracket).

    Every step evaluates ``fun`` at every point (a point that has converged or is
    inactive takes a step of 0), so that a caller may carry per-point state
    through ``fun``; a point converges at a step of at most ``rtol |x|``.  A
    step that is not finite (equal values at the two last iterates: a zero hit
    or a stall) stops the point where it is, and it counts as converged: the
    caller verifies the zero (the chain checks its edge on the branch).

    Parameters
    ----------
    fun : callable
        ``fun(x)``: the values at all points.
    x0, x1, f0, f1 : ndarray
        Two starts and the values there.
    rtol : float
    max_steps : int
    active : ndarray of bool, optional
        The points to solve (default: all).

    Returns
    -------
    FixedPointResult
        ``value`` the last iterates, ``residual`` the last steps, ``converged``
        where a step fell below the tolerance (never raised on: a secant has no
        bracket, so a caller that needs a zero checks ``converged``).
    """
    x0, x1 = np.array(x0, dtype=float), np.array(x1, dtype=float)
    done = np.zeros(x1.shape, dtype=bool) if active is None else ~np.asarray(active, dtype=bool)
    skipped = done.copy()
    last = np.full(x1.shape, np.inf)
    steps = 0
    for steps in range(1, max_steps + 1):
        with np.errstate(all="ignore"):
            step = f1 * (x1 - x0) / (f1 - f0)
        step = np.where(np.isfinite(step) & ~done, step, 0.0)
        x0, f0 = x1, f1
        x1 = x1 - step
        f1 = fun(x1)
        last = np.where(done, last, np.abs(step))
        done |= np.abs(step) <= rtol * np.abs(x1)
        if done.all():
            break
    return FixedPointResult(x1, last, steps, done & ~skipped)


#: :meth:`WarmTable.nearest` compares every pair of a query and the table's block (or its
#: buffer) directly up to this many pairs, and queries a k-d tree beyond (the block's built
#: once per fold of the buffer, 0.9 ms at 4096 points; the buffer's for the query): against
#: 4096 points a query of 5 points takes 55 µs by the tree and 86 µs directly, of 30 points
#: 58 µs and 504 µs; against a block of 8192 and a buffer of 400 points a query of 5 000
#: points 19 ms with the buffer searched directly, 13 ms by its tree.
WARM_TREE_PAIRS = 1 << 13


#: New points of a :class:`WarmTable` are searched directly until there are this many,
#: then join its k-d tree's block (rebuilt then, not at every query).
WARM_BUFFER = 512


class WarmTable:
    """Points solved before and their values, the latest first: the Newton starts of
    theory eqs. (8.34), (8.36), (14.15), (14.45) (the table: theory section 14.35).

    A host asks a nested law a few points at a time and each answer joins the table, so a
    k-d tree of the whole table would be rebuilt at every query (0.9 ms at 4096 points).
    New points wait in a buffer, searched directly, and join the tree's block when the
    buffer holds ``WARM_BUFFER`` (the block then keeps the latest ``size`` points): a
    query compares the buffer's nearest with the block's.

    Parameters
    ----------
    size : int
        Points kept in the block (the table holds at most ``size + WARM_BUFFER``).
    """

    def __init__(self, size):
        self.size = int(size)
        self._buf_z = self._main_z = np.empty(0, dtype=complex)
        self._buf_v = self._main_v = None
        self._tree = None

    def __len__(self):
        return self._buf_z.size + self._main_z.size

    def add(self, z, values):
        """Add points ``z`` (1-d) with ``values`` (their last axis the points)."""
        z = np.asarray(z, dtype=complex)
        if not z.size:
            return
        values = np.asarray(values)
        buf_v = values if self._buf_v is None else np.concatenate([values, self._buf_v],
                                                                  axis=-1)
        self._buf_z, self._buf_v = np.concatenate([z, self._buf_z]), buf_v
        if self._buf_z.size >= WARM_BUFFER:
            main_v = buf_v if self._main_v is None else np.concatenate([buf_v, self._main_v],
                                                                       axis=-1)
            self._main_z = np.concatenate([self._buf_z, self._main_z])[:self.size]
            self._main_v = main_v[..., :self.size]
            self._buf_z, self._buf_v, self._tree = np.empty(0, dtype=complex), None, None

    def contents(self):
        """``(points, values)`` of the whole table, the latest first."""
        parts = [(z, v) for z, v in ((self._buf_z, self._buf_v), (self._main_z, self._main_v))
                 if z.size]
        if not parts:
            return np.empty(0, dtype=complex), None
        return (np.concatenate([z for z, _ in parts]),
                np.concatenate([v for _, v in parts], axis=-1))

    def nearest(self, z):
        """``(points, values)``: the solved point nearest to each of ``z`` (1-d, the
        table not empty) and its values (a copy)."""
        z = np.asarray(z, dtype=complex)
        best = np.full(z.size, np.inf)
        pz = np.empty(z.size, dtype=complex)
        pv = None
        for table, vals, main in ((self._buf_z, self._buf_v, False),
                                  (self._main_z, self._main_v, True)):
            if not table.size:
                continue
            if table.size * z.size > WARM_TREE_PAIRS:
                from scipy.spatial import cKDTree

                # the block's tree is kept; the buffer's (at most WARM_BUFFER points,
                # asked by a large batch) is built for the query
                tree = self._tree if main else None
                if tree is None:
                    tree = cKDTree(np.c_[table.real, table.imag])
                    if main:
                        self._tree = tree
                dist, k = tree.query(np.c_[z.real, z.imag])
            else:
                d = np.abs(z[:, None] - table[None, :])
                k = np.argmin(d, axis=1)
                dist = d[np.arange(z.size), k]
            take = dist < best
            if pv is None:
                pv = np.empty(vals.shape[:-1] + (z.size,), dtype=vals.dtype)
            best[take], pz[take] = dist[take], table[k[take]]
            pv[..., take] = vals[..., k[take]]
        return pz, pv

