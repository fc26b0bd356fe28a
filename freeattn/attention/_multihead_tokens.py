"""The multi-head law for tokens with a non-isotropic Gram (theory section 9.12).

``multihead_law(..., tokens=G)`` with a token-Gram law ``G`` other than the unit
point mass reaches :class:`TokenMultiheadLaw`.  Queries, keys *and values* are
``G^{1/2}`` times i.i.d. Gaussian matrices, so the value projection sees the
token Gram from the same side as the keys, and the law is no longer a chain of
sample-covariance laws (eq. (9.13)).  It is the solution of the Dyson system
(9.25)-(9.29): four unknowns per point ``z``, integrals of rational functions
against ``G`` (its atoms, or Gauss-Legendre nodes on its panels).  This module
gives ``Phi`` and its analytic Jacobian; :mod:`freeattn.compose._dyson` solves it
(Newton along a continuation from far above the real axis; edges where the
Jacobian of the real system is singular, eq. (9.30), by a bordered Newton).
"""

import numpy as np

from ..compose._dyson import DysonLaw, DysonSystem, law_nodes as token_nodes
from ._coefficients import linear_coefficients

__all__ = ["TokenMultiheadLaw", "TokenMultiheadSystem", "token_nodes"]


class TokenMultiheadSystem(DysonSystem):
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
        self._set_far([self.b2 * self.go * g2, self.a2 * self.go, 1.0, self.h / self.gk * g2])
        self.mean = self.go * (self.a2 + self.b2 * g2)

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

class TokenMultiheadLaw(DysonLaw):
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

    def __init__(self, beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, tokens, options,
                 hard_edge_at_zero=False):
        c = linear_coefficients(beta)
        self.beta, self.heads, self.kv_groups = beta, heads, kv_groups
        self.gamma_k, self.gamma_v, self.gamma_o = gamma_k, gamma_v, gamma_o
        self.tokens = tokens
        self.theta1 = float(c.theta1)
        nodes, weights = token_nodes(tokens)
        super().__init__(TokenMultiheadSystem(float(c.theta2), float(c.alpha2), heads, gamma_k,
                                              gamma_v, gamma_o, nodes, weights), options)
        self.atom_mass = 1.0 - min(1.0, gamma_v, gamma_o)        # eq. (9.14)
        # one head with gamma_v, gamma_o > 1: the hard edge x**(-1/2) of eq. (9.22)
        # (multihead_law decides, one_head_square_map)
        self.hard_edge_at_zero = bool(hard_edge_at_zero)

    def _describe(self):
        return (f"multi-head law beta={self.beta:g}, heads={self.heads}, "
                f"gamma_k={self.gamma_k:g}, gamma_v={self.gamma_v:g}, "
                f"gamma_o={self.gamma_o:g}, kv_groups={self.kv_groups}, tokens={self.tokens!r}")

