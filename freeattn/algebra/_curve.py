"""The rational curve of a composed law (theory eqs. (8.10)-(8.12)).

When every level of a law, down to its point-mass leaves, is rational, the
Stieltjes graph ``(z, G)`` is a rational curve ``z = Z(t)``, ``G = G(t)`` in
the leaf variable ``t``: :class:`Curve` holds the leaf
(:class:`PointMassLeaf` or :class:`MarchenkoPasturLeaf`), the levels
(:mod:`freeattn.algebra._levels`) and the polynomials of each stage, and
evaluates the stages and the partners' subordination points.  The solver
that finds the Stieltjes branch on it is
:class:`freeattn.compose._subordination.RationalSolver`.

Nothing in this module prints or does I/O.
"""

import numpy as np

from ._rational import cancel_common_roots, padd, pmul, trim

__all__ = ["Curve", "PointMassLeaf", "MarchenkoPasturLeaf"]

class PointMassLeaf:
    """Leaf ``sum_i w_i delta_{a_i}``: ``z_0 = t``, ``G_0 = sum_i w_i/(t - a_i)``."""

    def __init__(self, values, weights):
        self.values = np.asarray(values, dtype=float)
        self.weights = np.asarray(weights, dtype=float)
        b = np.array([1.0])
        for a in self.values:
            b = pmul(b, [-a, 1.0])
        a_poly = np.array([0.0])
        for i, wi in enumerate(self.weights):
            term = np.array([wi])
            for j, aj in enumerate(self.values):
                if j != i:
                    term = pmul(term, [-aj, 1.0])
            a_poly = padd(a_poly, term)
        self.polys = (np.array([0.0, 1.0]), np.array([1.0]), trim(a_poly), trim(b))

    def eval(self, t, derivatives):
        if self.values.size == 1:
            inv = 1.0 / (t - self.values[0])
            g = self.weights[0] * inv
            dg = -g * inv if derivatives else None
        else:
            diff = t[..., None] - self.values
            g = (self.weights / diff).sum(axis=-1)
            dg = -(self.weights / diff ** 2).sum(axis=-1) if derivatives else None
        return t, g, (np.ones_like(t) if derivatives else None), dg


class MarchenkoPasturLeaf:
    """Leaf ``MP(v, c)`` in the variable ``t = 1/G`` (theory eq. (8.6)).

    ``z_0 = t (t + v(1 - c))/(t - c v)``, ``G_0 = 1/t``.  Structure next to
    the atom at 0 (``c > 1``) or the hard edge (``c = 1``) lives at ``t -> 0``,
    where floats keep their relative precision (a point-mass leaf at ``v``
    would put it at ``t - v(1 - c) -> 0``, lost to rounding below
    ``eps * v``).
    """

    def __init__(self, variance, ratio):
        self.p = variance * (1.0 - ratio)
        self.q = variance * ratio
        self.polys = (np.array([0.0, self.p, 1.0]), np.array([-self.q, 1.0]),
                      np.array([1.0]), np.array([0.0, 1.0]))

    def eval(self, t, derivatives):
        p, q = self.p, self.q
        den = t - q
        z = t * (t + p) / den
        g = 1.0 / t
        if not derivatives:
            return z, g, None, None
        dz = (t * t - 2.0 * q * t - p * q) / (den * den)
        return z, g, dz, -g * g


class Curve:
    """The Stieltjes graph of a rational tower, parametrized by the leaf variable ``t``.

    Stage 0 is the leaf (point masses, or a Marchenko-Pastur law in
    ``t = 1/G``); stage ``k`` applies ``levels[k-1]`` to stage ``k - 1``.
    ``polys[k]`` holds ``(N_k, D_k, A_k, B_k)`` with ``z_k = N_k/D_k`` and
    ``G_k = A_k/B_k`` (common real linear factors cancelled).
    """

    def __init__(self, leaf, levels, polys):
        self.leaf_law = leaf
        self.levels = levels
        self.polys = polys

    @property
    def degree(self):
        n, d = self.polys[-1][0], self.polys[-1][1]
        return max(n.size, d.size) - 1

    @classmethod
    def leaf(cls, values, weights):
        leaf = PointMassLeaf(values, weights)
        return cls(leaf, [], [leaf.polys])

    @classmethod
    def marchenko_pastur(cls, variance, ratio):
        leaf = MarchenkoPasturLeaf(variance, ratio)
        return cls(leaf, [], [leaf.polys])

    def extend(self, level):
        n, d, a, b = self.polys[-1]
        n2, d2, a2, b2 = level.rational(n, d, a, b)
        n2, d2 = cancel_common_roots(n2, d2)
        a2, b2 = cancel_common_roots(a2, b2)
        return Curve(self.leaf_law, self.levels + [level], self.polys + [(n2, d2, a2, b2)])

    # -- evaluation along the tower --------------------------------------------------
    def stages(self, t, derivatives=True):
        """Values (and ``t``-derivatives) of every stage, in factored form.

        Returns lists ``z``, ``g``, ``dz``, ``dg`` of arrays shaped like ``t``
        (stage 0 first); the derivative lists hold ``None`` when
        ``derivatives`` is false.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z, g, dz, dg = self.leaf_law.eval(t, derivatives)
            zs, gs, dzs, dgs = [z], [g], [dz], [dg]
            for level in self.levels:
                z, g, dz, dg = level.apply(z, g, dz, dg)
                zs.append(z)
                gs.append(g)
                dzs.append(dz)
                dgs.append(dg)
        return zs, gs, dzs, dgs

    def z_of(self, t):
        return self.stages(t, derivatives=False)[0][-1]

    def mp_stages_of(self, mpmath):
        """``t -> (Z(t), G(t))`` in mpmath, at its working precision, for a
        Marchenko-Pastur leaf (eq. (8.6)) and the levels' own mpmath forms (the
        references' evaluator)."""
        leaf = self.leaf_law
        if not isinstance(leaf, MarchenkoPasturLeaf):
            raise TypeError("mp_stages_of needs a Marchenko-Pastur leaf")
        p, q = mpmath.mpf(leaf.p), mpmath.mpf(leaf.q)
        levels = [level.mp(mpmath) for level in self.levels]

        def stages(t):
            z, g = t * (t + p) / (t - q), 1 / t
            for level in levels:
                z, g = level(z, g)
            return z, g
        return stages

    def mp_z_of(self, mpmath):
        """``t -> Z(t)`` of :meth:`mp_stages_of`."""
        stages = self.mp_stages_of(mpmath)
        return lambda t: stages(t)[0]

    def partner_points(self, zs, gs):
        """The partners' subordination points of every level, ``[(level, k, point)]``."""
        out = []
        for k, level in enumerate(self.levels, start=1):
            pt = level.partner_point(zs[k], zs[k - 1], gs[k - 1], gs[k])
            if pt is not None:
                out.append((level, k, pt))
        return out

    def partner_valid(self, zs, gs, rtol):
        """On the real line: every partner point is on its partner's true branch (eq. (8.11))."""
        ok = np.ones(np.shape(zs[0]), dtype=bool)
        for level, k, pt in self.partner_points(zs, gs):
            flat = np.ravel(pt)
            good = np.isfinite(flat)
            # A partner point at infinity is the partner's transform at 0 (G = 0, or
            # w = 0 for an S-level): consistent with every law.
            mism = np.zeros(flat.shape)
            if good.any():
                mism[good] = level.partner_check(flat[good] + 0j, np.ravel(zs[k - 1])[good],
                                                 np.ravel(gs[k - 1])[good],
                                                 np.ravel(gs[k])[good])
            ok &= (mism <= rtol).reshape(ok.shape)
        return ok


