"""Fixed-point problems of analytic subordination and their strategies.

A :class:`FixedPointProblem` is the subordination equation ``w = phi(w, z)``
of one free convolution (theory eqs. (14.1)-(14.4)), vectorized over points
``z``.  Three strategies solve it:

* :func:`iterate` -- the Belinschi-Bercovici iteration ``w <- phi(w, z)``,
  convergent from any start in the right half-plane when ``Im z != 0``
  (Belinschi & Bercovici 2007), used to reach the branch;
* :func:`newton` -- Newton on ``w - phi(w, z) = 0`` to polish to rounding,
  damped so that ``w`` never leaves its half-plane;
* :func:`edge_newton` -- bordered Newton on the real system
  ``w = phi(w, x)``, ``1 = d phi/d w`` (theory eq. (14.5)): the edges of the
  support are where the Jacobian of the fixed-point map is singular.

Each returns a :class:`FixedPointResult` (value, residual, iterations,
converged).
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["FixedPointResult", "FixedPointProblem", "iterate", "newton", "edge_newton"]

#: Relative residual ``|w - phi(w, z)| / (1 + |w|)`` at which a solve is converged
#: (a few ulps of the subordination point).
FIXED_POINT_RTOL = 1e-15
#: Most Belinschi-Bercovici iterations per call of :func:`iterate`.
MAX_ITERATIONS = 400
#: Most Newton steps per call of :func:`newton`.
MAX_NEWTON_STEPS = 40
#: Most bordered-Newton steps of :func:`edge_newton`.
MAX_EDGE_STEPS = 60
#: Relative step of the finite-difference Jacobian of the bordered system (the
#: step only changes the convergence rate, never the root: both equations are
#: evaluated exactly).
EDGE_FD_STEP = 1e-7
#: Relative size of the last bordered-Newton step at which an edge is accepted.
EDGE_RTOL = 4e-16


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
    """

    value: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: np.ndarray


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


def _tol(problem, w):
    return FIXED_POINT_RTOL * (problem.scale + np.abs(w))


def iterate(problem, z, w0=None, max_iterations=MAX_ITERATIONS):
    """Belinschi-Bercovici iteration ``w <- phi(w, z)`` (theory eq. (14.2)).

    Parameters
    ----------
    problem : FixedPointProblem
    z : ndarray
        Complex points off the real axis.
    w0 : ndarray, optional
        Start (default ``problem.start(z)``).
    max_iterations : int

    Returns
    -------
    FixedPointResult
    """
    w = problem.start(z) if w0 is None else w0.astype(complex).copy()
    active = np.ones(z.shape, dtype=bool)
    res = np.full(z.shape, np.inf)
    it = 0
    for it in range(1, max_iterations + 1):
        if not active.any():
            break
        with np.errstate(all="ignore"):
            p, _ = problem.phi(w[active], z[active])
        step = np.abs(p - w[active])
        w[active] = p
        res[active] = step
        idx = np.flatnonzero(active)
        active[idx[step <= _tol(problem, p)]] = False
    return FixedPointResult(w, res, it, res <= _tol(problem, w))


def _newton_error(f, dp):
    """Newton's estimate ``|f / (1 - phi')|`` of the distance to the fixed point
    (0 where ``f = 0``)."""
    with np.errstate(all="ignore"):
        err = np.abs(f) / np.abs(1.0 - dp)
    return np.where(np.abs(f) == 0, 0.0, err)


def newton(problem, z, w0, max_steps=MAX_NEWTON_STEPS, rtol=FIXED_POINT_RTOL):
    """Damped Newton on ``w - phi(w, z) = 0`` (theory eq. (14.3)).

    A step that would take ``w`` into the wrong half-plane, or increase the
    residual, is halved (up to 30 times).  A point is converged when Newton's
    own error estimate ``|w - phi| / |1 - phi'|`` (the length of the next
    step) is below the tolerance -- where ``phi' -> 1`` a small residual does
    not mean a small error -- or when the residual is at the rounding of
    ``phi`` (:data:`FIXED_POINT_RTOL`), where a step would only follow rounding
    noise (at a degenerate point such as ``z -> 0`` for Bernoulli ⊞ Bernoulli,
    ``phi`` is the identity to rounding near the fixed point).

    Parameters
    ----------
    problem : FixedPointProblem
    z, w0 : ndarray
        Points and starting values (same shape).
    max_steps : int
    rtol : float
        Relative error ``|w - phi| / |1 - phi'| / (scale + |w|)`` at which a
        point is converged (default :data:`FIXED_POINT_RTOL`).

    Returns
    -------
    FixedPointResult
        ``residual`` holds the estimated error ``|w - phi| / |1 - phi'|``.
    """
    def _tol(problem, w):
        return rtol * (problem.scale + np.abs(w))

    def _done(f, err, w):
        # converged: the estimated error is below the tolerance, or the residual is
        # at the rounding of phi (a step would then only move w along rounding noise,
        # which where phi' -> 1 can be large)
        return (err <= _tol(problem, w)) | (np.abs(f) <= FIXED_POINT_RTOL * (
            problem.scale + np.abs(w)))

    w = w0.astype(complex).copy()
    with np.errstate(all="ignore"):
        f, dp = _residual(problem, w, z)
    err = _newton_error(f, dp)
    active = ~_done(f, err, w)
    it = 0
    for it in range(1, max_steps + 1):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        wa, za, fa, da = w[idx], z[idx], f[idx], dp[idx]
        with np.errstate(all="ignore"):
            step = fa / (1.0 - da)
        lam = np.ones(idx.size)
        new = wa - step
        ok = np.zeros(idx.size, dtype=bool)
        fn = np.empty(idx.size, dtype=complex)
        dn = np.empty(idx.size, dtype=complex)
        floor = FIXED_POINT_RTOL * (problem.scale + np.abs(wa))
        for _ in range(30):
            todo = ~ok
            if not todo.any():
                break
            cand = wa[todo] - lam[todo] * step[todo]
            with np.errstate(all="ignore"):
                fc, dc = _residual(problem, cand, za[todo])
            good = np.isfinite(fc) & (problem.sign * cand.imag >= 0) & (
                np.abs(fc) <= np.maximum(np.abs(fa[todo]), floor[todo]))
            t = np.flatnonzero(todo)
            ok[t[good]] = True
            new[t[good]] = cand[good]
            fn[t[good]] = fc[good]
            dn[t[good]] = dc[good]
            lam[t[~good]] *= 0.5
        # points with no acceptable step stop where they are
        moved = np.abs(new - wa)
        w[idx[ok]] = new[ok]
        f[idx[ok]] = fn[ok]
        dp[idx[ok]] = dn[ok]
        err[idx] = _newton_error(f[idx], dp[idx])
        # a full step that changed w by less than the tolerance also ends the solve
        done = ~ok | _done(f[idx], err[idx], w[idx]) | (
            ok & (lam == 1.0) & (moved <= _tol(problem, w[idx])))
        active[idx[done]] = False
    return FixedPointResult(w, err, it, _done(f, err, w))


def edge_newton(problem, w0, x0, max_steps=MAX_EDGE_STEPS):
    """Bordered Newton for an edge: real ``(w, x)`` with ``w = phi(w, x)`` and
    ``d phi/d w (w, x) = 1`` (theory eq. (14.5)).

    Parameters
    ----------
    problem : FixedPointProblem
    w0, x0 : ndarray
        Real starting pairs (1-d, same shape), e.g. the real solution at a point
        just outside the support.
    max_steps : int

    Returns
    -------
    FixedPointResult
        ``value`` is an ``(n, 2)`` array of ``(w, x)``.
    """
    w = np.asarray(w0, dtype=float).copy()
    x = np.asarray(x0, dtype=float).copy()
    s = problem.scale

    def system(w, x):
        with np.errstate(all="ignore"):
            p, dp = problem.phi(w.astype(complex), x.astype(complex))
        f, d = w - p, 1.0 - dp
        # a real fixed point needs real values: a complex phi means (w, x) left the
        # domain where the constituents' transforms are real
        valid = (np.abs(f.imag) <= 1e-8 * (s + np.abs(w))) & np.isfinite(f) & np.isfinite(d)
        return f.real, d.real, valid

    def merit(f, d, w):
        return np.abs(f) / (s + np.abs(w)) + np.abs(d)

    conv = np.zeros(w.shape, dtype=bool)
    res = np.full(w.shape, np.inf)
    it = 0
    for it in range(1, max_steps + 1):
        act = ~conv
        if not act.any():
            break
        wa, xa = w[act], x[act]
        f, d, _ = system(wa, xa)
        hw = EDGE_FD_STEP * (s + np.abs(wa))
        hx = EDGE_FD_STEP * (s + np.abs(xa))
        fw, dw, _ = system(wa + hw, xa)
        fx, dx, _ = system(wa, xa + hx)
        j11, j12 = (fw - f) / hw, (fx - f) / hx
        j21, j22 = (dw - d) / hw, (dx - d) / hx
        det = j11 * j22 - j12 * j21
        with np.errstate(all="ignore"):
            sw = (f * j22 - j12 * d) / det
            sx = (j11 * d - j21 * f) / det
        bad = ~np.isfinite(sw) | ~np.isfinite(sx)
        sw[bad] = 0.0
        sx[bad] = 0.0
        m0 = merit(f, d, wa)
        lam = np.ones(wa.size)
        acc = bad.copy()
        for _ in range(40):
            todo = ~acc
            if not todo.any():
                break
            wc, xc = wa - lam * sw, xa - lam * sx
            fc, dc, vc = system(wc, xc)
            good = todo & vc & (merit(fc, dc, wc) <= 2.0 * m0)
            acc |= good
            lam[todo & ~good] *= 0.5
        lam[~acc] = 0.0
        sw, sx = lam * sw, lam * sx
        w[act] = wa - sw
        x[act] = xa - sx
        res[act] = m0
        idx = np.flatnonzero(act)
        small = (np.abs(sx) <= EDGE_RTOL * (s + np.abs(xa)) * 16) & (
            np.abs(sw) <= 1e-9 * (s + np.abs(wa)))
        conv[idx[small & ~bad & (lam > 0)]] = True
        if (bad | (lam == 0)).all():
            break
    f, d, valid = system(w, x)
    ok = conv & valid & (np.abs(f) <= 1e-10 * (s + np.abs(w))) & (np.abs(d) <= 1e-6)
    return FixedPointResult(np.stack([w, x], axis=1), np.abs(f) + np.abs(d), it, ok)
