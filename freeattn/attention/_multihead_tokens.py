"""The multi-head law for tokens with a non-isotropic Gram (theory section 9.12).

``multihead_law(..., tokens=G)`` with a token-Gram law ``G`` other than the unit
point mass reaches :class:`TokenMultiheadLaw`.  Queries, keys *and values* are
``G^{1/2}`` times i.i.d. Gaussian matrices, so the value projection sees the
token Gram from the same side as the keys, and the law is no longer a chain of
sample-covariance laws (eq. (9.13)).  It is the solution of the Dyson system
(9.25)-(9.29): four unknowns per point ``z``, integrals of rational functions
against ``G`` (its atoms, or Gauss-Legendre nodes on its panels), solved by
Newton with the analytic Jacobian along a continuation from far above the
real axis; edges are where the Jacobian of the real system is singular
(eq. (9.30)), found by a bordered Newton.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ..laws._law_base import QUADRATURE_EXTRA, Interval, SpectralLaw
from ._coefficients import linear_coefficients

__all__ = ["TokenMultiheadLaw", "TokenMultiheadSystem", "token_nodes"]

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
#: the real axis itself.
DYSON_START_HEIGHT = 4.0
DYSON_HEIGHT_RATIO = 0.125
DYSON_FLOOR = 1e-14
#: Points of the scan for the bands (geometric from ``SCAN_LOW`` times the top of the
#: scan to 2% of it, linear above).  A lower edge below ``SCAN_LOW`` of the scale (a
#: geometry within about 1e-3 of a square factor) raises ConvergenceError.
SCAN_POINTS = 480
SCAN_LOW = 1e-6
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
UPPER_CERTIFY_STEPS = 64
#: Gauss-Legendre nodes beyond half a panel's degree for a continuous token law
#: (the integrands of (9.26) are smooth on the token law's support).
TOKEN_QUADRATURE_EXTRA = 2 * QUADRATURE_EXTRA


def token_nodes(tokens):
    """Nodes and weights of the token law ``G``: its atoms, plus Gauss-Legendre nodes
    on its panels (``TOKEN_QUADRATURE_EXTRA`` beyond half of each panel's degree)."""
    loc, mass = tokens.atoms()
    nodes, weights = [np.asarray(loc, float)], [np.asarray(mass, float)]
    if tokens.interval_details():
        rep = tokens._representation()
        x, w = rep.quadrature(TOKEN_QUADRATURE_EXTRA)
        nodes.append(np.asarray(x, float))
        weights.append(np.asarray(w, float) * (tokens._continuous_mass() / rep.total))
    g = np.concatenate(nodes)
    wt = np.concatenate(weights)
    return g, wt / wt.sum()


class TokenMultiheadSystem:
    """The Dyson system (9.25)-(9.29) of multi-head attention on tokens of Gram law ``G``.

    Unknowns ``w = (e1, e2, g_V, eps)`` per point ``z``; :meth:`phi` returns
    ``Phi(w, z)``, its Jacobian and ``m(z) = int dF(x)/(x - z)``.

    Parameters
    ----------
    theta2, alpha2 : float
        ``beta**2`` and ``alpha**2`` of eqs. (2.4)-(2.6) (``theta2 = 0`` is the
        noise-only model used by the tests).
    heads : int
    gamma_k, gamma_v, gamma_o : float
    nodes, weights : ndarray
        A quadrature of ``G`` (:func:`token_nodes`).
    """

    def __init__(self, theta2, alpha2, heads, gamma_k, gamma_v, gamma_o, nodes, weights):
        self.b2, self.a2 = float(theta2), float(alpha2)
        self.h = float(heads)
        self.gk, self.gv, self.go = float(gamma_k), float(gamma_v), float(gamma_o)
        self.g = np.asarray(nodes, float)
        self.wt = np.asarray(weights, float)
        self.gpow = np.array([self.wt * self.g ** k for k in range(5)])   # w g^k, k = 0..4
        g2 = float(self.gpow[2].sum())
        #: ``w`` at ``z -> oo`` (eq. (9.29)) and the mean ``m1`` of eq. (9.31).
        self.far = np.array([self.b2 * self.go * g2, self.a2 * self.go, 1.0,
                             self.h / self.gk * g2])
        self.mean = self.go * (self.a2 + self.b2 * g2)
        self.floor = DYSON_ERROR_FLOOR * np.maximum(np.abs(self.far), np.finfo(float).tiny)

    def phi(self, w, z):
        """``(Phi, dPhi/dw, m)`` for ``w`` of shape ``(4, N)`` and ``z`` of shape ``(N,)``.

        ``dPhi/dw`` has shape ``(4, 4, N)`` (``[i, j]``: ``d Phi_i / d w_j``);
        ``d Phi/d z = -d Phi/d e2`` (``z`` enters as ``e2 - z`` only).
        """
        e1, e2, gv_, eps = w
        gk, gv, go, h, b2, a2 = self.gk, self.gv, self.go, self.h, self.b2, self.a2
        P = self.gpow
        n = z.shape[0]
        zero = np.zeros(n, complex)
        one = np.ones(n, complex)

        def vec(*parts):
            return np.array(parts)

        # eq. (9.25): the rows' integrals phi_k = <g^k / (e2 - z + e1 g)>
        q = 1.0 / ((e2 - z)[:, None] + e1[:, None] * self.g[None, :])
        q2 = q * q
        s = [q @ P[k] for k in (0, 1)]
        t = [q2 @ P[k] for k in (0, 1, 2)]
        phi1, phi2 = s[1], s[0]
        dphi1 = vec(-t[2], -t[1], zero, zero)
        dphi2 = vec(-t[1], -t[0], zero, zero)
        u1, u2 = b2 * phi1, a2 * phi2
        du1, du2 = b2 * dphi1, a2 * dphi2
        # eq. (9.28): the output and value levels
        go_ = 1.0 - (gv / go) * (1.0 - gv_)
        dgo = vec(zero, zero, (gv / go) * one, zero)
        dgv = vec(zero, zero, one, zero)
        a = (go / h) * go_ * gv_
        da = (go / h) * (gv_ * dgo + go_ * dgv)
        deps = vec(zero, zero, zero, one)
        # eq. (9.26): the key level
        tt = a * u1
        dtt = u1 * da + a * du1
        den = 1.0 + tt * eps
        dden = eps * dtt + tt * deps
        B = tt / den
        dB = (dtt - B * dden) / den
        A = a * u2
        dA = u2 * da + a * du2
        r = 1.0 / (1.0 + A[:, None] * self.g[None, :] + B[:, None] * self.g[None, :] ** 2)
        r2 = r * r
        S1, S2 = r @ P[1], r @ P[2]
        T2, T3, T4 = r2 @ P[2], r2 @ P[3], r2 @ P[4]
        dS1 = -(T2 * dA + T3 * dB)
        dS2 = -(T3 * dA + T4 * dB)
        eps_new = (h / gk) * S2
        deps_new = (h / gk) * dS2
        p1 = (gk / h) * eps / den
        dp1 = (gk / h) * (deps - (eps / den) * dden) / den
        p2, dp2 = S1, dS1
        # eq. (9.27): the values' population and the new g_V, e1, e2
        pi = u1 * p1 + u2 * p2
        dpi = p1 * du1 + u1 * dp1 + p2 * du2 + u2 * dp2
        k = go / gv
        X = 1.0 + k * go_ * pi
        gv_new = 1.0 / X
        dgv_new = -(k * (pi * dgo + go_ * dpi)) / (X * X)
        e1_new = b2 * h * a * p1
        de1 = b2 * h * (p1 * da + a * dp1)
        e2_new = a2 * h * a * p2
        de2 = a2 * h * (p2 * da + a * dp2)
        val = vec(e1_new, e2_new, gv_new, eps_new)
        jac = np.array([de1, de2, dgv_new, deps_new])
        return val, jac, phi2

    def start(self, n):
        return np.repeat(self.far[:, None], n, axis=1).astype(complex)

    def residual(self, w, z):
        val, jac, m = self.phi(w, z)
        f = w - val
        jf = np.eye(4)[:, :, None] - jac
        return f, jf, m

    def _error(self, f, w):
        """Largest relative residual of the four unknowns (each against its own size,
        floored at ``DYSON_ERROR_FLOOR`` of its value at infinity)."""
        return np.max(np.abs(f) / (np.abs(w) + self.floor[:, None]), axis=0)

    def newton(self, w, z, steps=DYSON_NEWTON_STEPS, real=False):
        """Damped Newton on ``w = Phi(w, z)``; returns ``(w, m, error, converged)``.

        With ``real`` the iterates are kept real (the real system of eq. (9.30)).
        """
        w = w.copy()
        f, jf, m = self.residual(w, z)
        err = self._error(f, w)
        active = err > DYSON_RTOL
        at_noise = np.zeros(z.shape[0], bool)
        for _ in range(steps):
            if not active.any():
                break
            idx = np.nonzero(active)[0]
            try:
                step = np.linalg.solve(np.moveaxis(jf[:, :, idx], -1, 0),
                                       np.moveaxis(f[:, idx], -1, 0)[..., None])[..., 0].T
            except np.linalg.LinAlgError:
                break
            if real:
                step = step.real
            size = self._error(step, w[:, idx])
            lam = np.ones(idx.size)
            pending = np.ones(idx.size, bool)
            for _ in range(DYSON_HALVINGS):
                trial = w[:, idx] - lam * step
                ft, jt, mt = self.residual(trial, z[idx])
                et = self._error(ft, trial)
                good = pending & np.isfinite(et) & (et < np.maximum(err[idx], DYSON_RTOL))
                if not real:
                    good &= ~((z[idx].imag > 0) & (mt.imag < 0))
                sel = idx[good]
                w[:, sel] = trial[:, good]
                f[:, sel], jf[:, :, sel], m[sel], err[sel] = (ft[:, good], jt[:, :, good],
                                                              mt[good], et[good])
                pending &= ~good
                if not pending.any():
                    break
                lam = np.where(pending, lam * 0.5, lam)
            stalled = idx[pending]
            active[stalled] = False
            at_noise[stalled] = size[pending] <= DYSON_STALL_RTOL
            active &= err > DYSON_RTOL
        return w, m, err, (err <= DYSON_RTOL) | at_noise

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

    def solve_axis(self, x, scale):
        """Solve at ``x + i0`` (real ``x``) by continuation from ``x + i 4 scale``.

        Returns ``(w, m, error, converged)`` at the real axis.
        """
        x = np.asarray(x, float)
        heights = []
        y = DYSON_START_HEIGHT * scale
        while y > DYSON_FLOOR * scale:
            heights.append(y)
            y *= DYSON_HEIGHT_RATIO
        heights.append(0.0)
        rows = np.repeat(np.array(heights)[:, None], x.size, axis=1)
        return self._continue(x.astype(complex), rows)

    def solve_upper(self, z, scale):
        """Solve at points ``z`` with ``Im z > 0`` by continuation down from ``Re z + i 4 scale``."""
        z = np.asarray(z, complex)
        y = np.maximum(DYSON_START_HEIGHT * scale, z.imag)
        rows = [y]
        while np.any(y > z.imag):
            y = np.maximum(y * DYSON_HEIGHT_RATIO, z.imag)
            rows.append(y)
        return self._continue(z.real.astype(complex), np.array(rows))

    # -- the real system and its folds (eq. (9.30)) ---------------------------------
    def real_det(self, w, x):
        """``det J`` of the real system at real ``(w, x)`` (1-d ``w``, scalar ``x``)."""
        _, jf, _ = self.residual(w.astype(complex)[:, None], np.array([complex(x)]))
        return float(np.linalg.det(jf[:, :, 0].real))

    def fold(self, w, x, scale):
        """Bordered Newton on ``F(w, x) = 0``, ``det J(w, x) = 0`` from a real start."""
        u = np.concatenate([w.real, [x]]).astype(float)

        def system(u):
            wz = u[:4].astype(complex)[:, None]
            f, jf, _ = self.residual(wz, np.array([complex(u[4])]))
            return np.concatenate([f[:, 0].real, [np.linalg.det(jf[:, :, 0].real)]]), jf

        for _ in range(EDGE_STEPS):
            fu, jf = system(u)
            jac = np.empty((5, 5))
            jac[:4, :4] = jf[:, :, 0].real
            # d F / d x = -d Phi/d z = d Phi / d e2 (eq. (9.30)): column 1 of dPhi/dw
            jac[:4, 4] = np.eye(4)[:, 1] - jf[:, 1, 0].real
            for j in range(5):
                # steps relative to each unknown (the key and value unknowns and x
                # itself are small next to the atom at 0)
                hstep = EDGE_FD_STEP * (abs(u[j]) + (0.0 if j == 4 else self.floor[j]))
                up, dn = u.copy(), u.copy()
                up[j] += hstep
                dn[j] -= hstep
                jac[4, j] = (system(up)[0][4] - system(dn)[0][4]) / (2 * hstep)
            try:
                du = np.linalg.solve(jac, fu)
            except np.linalg.LinAlgError:
                return None
            u = u - du
            if not np.all(np.isfinite(u)):
                return None
            if abs(du[4]) <= EDGE_RTOL * abs(u[4]) and \
                    np.all(self._error(du[:4, None], u[:4, None]) <= DYSON_STALL_RTOL):
                return u
        return None


class TokenMultiheadLaw(SpectralLaw):
    """Law of the eigenvalues of ``MHA_perp MHA_perp^T`` for tokens of Gram law ``G``.

    Built by :func:`freeattn.multihead_law` with ``tokens=G`` (theory section
    9.12); the atom at 0 is ``1 - min(1, gamma_v, gamma_o)`` (eq. (9.14)) and
    the continuous part has soft edges found as the folds of eq. (9.30).

    Attributes
    ----------
    beta, heads, kv_groups, gamma_k, gamma_v, gamma_o, tokens
        The arguments.
    theta1 : float
    system : TokenMultiheadSystem
    """

    def __init__(self, beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, tokens, options):
        super().__init__(options)
        c = linear_coefficients(beta)
        self.beta, self.heads, self.kv_groups = beta, heads, kv_groups
        self.gamma_k, self.gamma_v, self.gamma_o = gamma_k, gamma_v, gamma_o
        self.tokens = tokens
        self.theta1 = float(c.theta1)
        nodes, weights = token_nodes(tokens)
        self.system = TokenMultiheadSystem(float(c.theta2), float(c.alpha2), heads, gamma_k,
                                           gamma_v, gamma_o, nodes, weights)
        self._edges = None

    def _describe(self):
        return (f"multi-head law beta={self.beta:g}, heads={self.heads}, "
                f"gamma_k={self.gamma_k:g}, gamma_v={self.gamma_v:g}, "
                f"gamma_o={self.gamma_o:g}, kv_groups={self.kv_groups}, tokens={self.tokens!r}")

    # -- hooks -----------------------------------------------------------------------
    def _atoms(self):
        mass = 1.0 - min(1.0, self.gamma_v, self.gamma_o)
        if mass <= 0:
            return np.empty(0), np.empty(0)
        return np.array([0.0]), np.array([mass])

    def _support_intervals(self):
        return tuple(Interval(lo, hi) for lo, hi in self._band_edges())

    def _density(self, x):
        x = np.asarray(x, float)
        out = np.empty(x.size)
        scale = self._band_edges()[-1][1]
        w, m, err, ok = self.system.solve_axis(x, scale)
        if not ok.all():
            bad = int(np.argmax(~ok))
            raise ConvergenceError(
                f"{self._describe()}: the Dyson system (theory eqs. (9.25)-(9.29)) did not "
                f"converge at x = {x[bad]!r} (relative residual {err[bad]:.3g}, tolerance "
                f"{DYSON_RTOL:g})")
        out[:] = m.imag / np.pi
        if np.any(out < 0):
            bad = int(np.argmin(out))
            raise ConvergenceError(
                f"{self._describe()}: negative density {out[bad]:.3g} at x = {x[bad]!r}: "
                f"the Dyson solve left the branch of the upper half-plane")
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
        top = 8.0 * m1 / min(1.0, self.gamma_v, self.gamma_o)
        for _ in range(60):
            w, m, ok = self._real_solution(top, top)
            if ok and abs(m.imag) <= GAP_RTOL * abs(m):
                break
            top *= 2.0
        else:
            raise ConvergenceError(f"{self._describe()}: no point above the support found "
                                   f"below x = {top!r}")
        x = np.concatenate([np.geomspace(top * SCAN_LOW, top * 0.02, SCAN_POINTS // 4,
                                         endpoint=False),
                            np.linspace(top * 0.02, top, SCAN_POINTS - SCAN_POINTS // 4)])
        w, m = self._scan(x, top)
        self._density_scale = m.imag.max()
        inside = m.imag > GAP_RTOL * self._density_scale
        if inside[0]:
            low = np.geomspace(top * SCAN_FLOOR, x[0], SCAN_EXTRA, endpoint=False)
            wl, ml = self._scan(low, top)
            x, w, m = np.concatenate([low, x]), np.concatenate([wl, w], axis=1), \
                np.concatenate([ml, m])
            self._density_scale = max(self._density_scale, ml.imag.max())
            inside = m.imag > GAP_RTOL * self._density_scale
        if not inside.any():
            raise ConvergenceError(f"{self._describe()}: the scan found no band")
        edges = []
        changes = np.nonzero(np.diff(inside.astype(int)))[0]
        for i in changes:
            gap, band = (i, i + 1) if not inside[i] else (i + 1, i)
            edges.append(self._edge(x[gap], w[:, gap], x[band], top))
        if inside[0] or inside[-1]:
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
        if u is None or not cell[0] <= u[4] <= cell[1]:
            raise ConvergenceError(
                f"{self._describe()}: the bordered Newton of theory eq. (9.30) did not "
                f"converge to the edge between x = {xg!r} (gap) and {xb!r} (band)")
        return float(u[4])

    def _certify_top(self, hi, scale):
        """Follow the real solution from just above ``hi`` out to ``1e8 hi``: no other band."""
        sys_ = self.system
        xs = np.geomspace(hi * (1 + 1e-6), hi * UPPER_CERTIFY_FACTOR, UPPER_CERTIFY_STEPS)
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
