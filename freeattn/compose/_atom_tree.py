"""Cauchy sums over many atoms by a one-dimensional tree code (theory section 14.25).

The Cauchy transform of a discrete law ``sum_j m_j delta_{a_j}`` and its derivative,

    G(v) = sum_j m_j / (v - a_j),    G'(v) = -sum_j m_j / (v - a_j)**2,

cost ``O(points x atoms)`` when summed directly.  Here the sorted atoms are
split into a binary tree of contiguous index ranges.  A node with centre ``c``
and half-width ``r`` that is far from ``v`` (``|v - c| >= TREE_SEPARATION * r``)
contributes its multipole expansion (theory eq. (14.25))

    sum_{j in node} m_j / (v - a_j) = (1 / (v - c)) sum_p M_p u**p,
    u = r / (v - c),   M_p = sum_{j in node} m_j ((a_j - c) / r)**p,

truncated after ``TREE_ORDER`` terms (the truncation bound is eq. (14.26)); a
node close to ``v`` is opened, and the leaves reached are summed directly.
The cost per point grows like the logarithm of the number of atoms.

Nothing in this module prints or does I/O.
"""

import math

import numpy as np

__all__ = ["AtomTree", "TREE_MIN_ATOMS", "sums_nearest_apart"]

#: Populations with at least this many atoms are summed by the tree (below it
#: the direct sum over cache-sized blocks is faster; measured crossover about
#: 2000 atoms at 40 points a call, 1000 at 400 points).
TREE_MIN_ATOMS = 2048
#: Atoms per leaf (at most; the leaves hold between half and all of it).
TREE_LEAF = 64
#: A node is far from ``v`` when ``|v - c| >= TREE_SEPARATION * r``: then
#: ``|u| <= 1/TREE_SEPARATION`` and every ``|(a_j - c)/(v - c)| <= |u|``.
TREE_SEPARATION = 3.0
#: Terms of the expansion: the truncation of ``S_3`` (the highest order used),
#: bounded by eq. (14.26), is ``2.5e-17`` of the node's mass over ``|v - c|**4``,
#: below ``1e-16`` of the sum of the moduli of the node's terms.
TREE_ORDER = 44
#: ``binom(p + q, q)``, the coefficients of the expansion of ``S_q`` (eq. (14.25)).
_BINOMIAL = [np.array([math.comb(p + q, q) for p in range(TREE_ORDER)], dtype=float)
             for q in range(4)]


def sums_nearest_apart(x, t, w):
    """``G``, ``H`` and ``c_j = t_j G - H`` of atoms ``t`` with weights ``w`` (theory
    eq. (14.28)).

    ``x`` holds ``x_j = 1/(u - t_j)`` on its last axis (real or complex);
    ``G = sum_j w_j x_j``, ``H = sum_j w_j t_j x_j`` and
    ``c_j = sum_k w_k (t_j - t_k) x_k``, with the term of the atom nearest to ``u``
    (the largest ``|x_j|``) summed apart: next to that atom ``t_n G - H`` would
    cancel it.  Returns ``(G, H, c)``.
    """
    n = np.argmax(np.abs(x), axis=-1)[..., None]
    xn = np.take_along_axis(x, n, -1)
    tn, wn = t[n], w[n]
    rest = x.copy()
    np.put_along_axis(rest, n, 0.0, -1)
    g_rest, h_rest = rest @ w, (rest * t) @ w
    g = g_rest + (wn * xn)[..., 0]
    h = h_rest + (wn * tn * xn)[..., 0]
    c = (t * g_rest[..., None] - h_rest[..., None]) + wn * xn * (t - tn)
    return g, h, c


class AtomTree:
    """Multipole tree over the atoms of a discrete law (theory eqs. (14.25)-(14.26)).

    Parameters
    ----------
    values, weights : ndarray
        Atom locations (real) and masses (nonnegative), any order.
    leaf : int, optional
        Atoms per leaf, at most.
    """

    def __init__(self, values, weights, leaf=TREE_LEAF):
        a = np.asarray(values, dtype=float).ravel()
        m = np.asarray(weights, dtype=float).ravel()
        if a.size == 0 or a.shape != m.shape:
            raise ValueError(f"values and weights must be non-empty 1-d arrays of one "
                             f"length, got {a.shape} and {m.shape}")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(m)) and np.all(m >= 0)):
            # the bound (14.26) uses |M_p| <= M_0, which needs m_j >= 0
            raise ValueError("values must be finite and weights finite and >= 0")
        order = np.argsort(a, kind="stable")
        a, m = a[order], m[order]
        k = a.size
        depth = 0
        while k > leaf * 2 ** depth:
            depth += 1
        self.depth = depth
        # Index ranges level by level: node i of level l has children 2i, 2i+1.
        bounds = [np.array([0, k])]
        for _ in range(depth):
            b = bounds[-1]
            mid = (b[:-1] + b[1:]) // 2
            nb = np.empty(2 * b.size - 1, dtype=int)
            nb[0::2], nb[1::2] = b, mid
            bounds.append(nb)
        self.centre, self.radius, moments = [], [], []
        for b in bounds:
            lo, hi = b[:-1], b[1:] - 1
            c = 0.5 * (a[lo] + a[hi])
            r = 0.5 * (a[hi] - a[lo])
            # a node of one repeated value: every moment but M_0 vanishes
            r = np.where(r > 0, r, np.maximum(np.abs(c), 1.0))
            node = np.repeat(np.arange(lo.size), b[1:] - b[:-1])
            t = (a - c[node]) / r[node]
            mom = np.empty((lo.size, TREE_ORDER))
            term = m.copy()
            for p in range(TREE_ORDER):
                mom[:, p] = np.add.reduceat(term, b[:-1])
                term *= t
            self.centre.append(c)
            self.radius.append(r)
            moments.append(mom)
        sizes_per_level = [c.size for c in self.centre]
        self.offset = np.concatenate([[0], np.cumsum(sizes_per_level)])
        self.centre = np.concatenate(self.centre)
        self.radius = np.concatenate(self.radius)
        moments = np.concatenate(moments)
        # binom(p + q, q) M_p, one contiguous row per p (eq. (14.25))
        self._scaled = [np.ascontiguousarray((moments * _BINOMIAL[q][None, :]).T)
                        for q in range(4)]
        # leaves padded to a rectangle (padding: mass 0 at the leaf's first atom)
        b = bounds[-1]
        sizes = b[1:] - b[:-1]
        width = int(sizes.max())
        idx = b[:-1, None] + np.arange(width)[None, :]
        pad = np.arange(width)[None, :] >= sizes[:, None]
        idx = np.where(pad, b[:-1, None], idx)
        self.leaf_values = a[idx]
        self.leaf_weights = np.where(pad, 0.0, m[idx])

    def sums(self, v):
        """``(G(v), G'(v))`` at complex points ``v`` (any shape).

        Points on an atom give a non-finite value, as the direct sum does.
        """
        s0, s1 = self.power_sums(v, 1)
        return s0, -s1

    def power_sums(self, v, qmax):
        """``S_q(v) = sum_j m_j / (v - a_j)**(q + 1)`` for ``q = 0..qmax`` (eq. (14.25)).

        Parameters
        ----------
        v : array_like
            Complex (or real) points, any shape.
        qmax : int
            Highest order, 0 to 3.

        Returns
        -------
        list of ndarray
            ``S_0, ..., S_qmax``, complex, of the shape of ``v``.
        """
        if qmax not in range(len(_BINOMIAL)):
            raise ValueError(f"qmax must be 0, 1, 2 or 3, got {qmax!r}")
        v = np.asarray(v, dtype=complex)
        shape = v.shape
        v = v.ravel()
        out = [np.zeros(v.size, dtype=complex) for _ in range(qmax + 1)]
        tgt = np.arange(v.size)
        node = np.zeros(v.size, dtype=int)
        far_tgt, far_node = [], []
        with np.errstate(all="ignore"):
            for level in range(self.depth + 1):
                if tgt.size == 0:
                    break
                off = self.offset[level]
                dv = v[tgt] - self.centre[off + node]
                if level == self.depth:
                    break
                far = np.abs(dv) >= TREE_SEPARATION * self.radius[off + node]
                far_tgt.append(tgt[far])
                far_node.append(off + node[far])
                near = ~far
                tgt = np.repeat(tgt[near], 2)
                node = np.repeat(2 * node[near], 2)
                node[1::2] += 1
            if tgt.size:
                self._direct(out, v, tgt, node)
            if far_tgt:
                self._far(out, v, np.concatenate(far_tgt), np.concatenate(far_node))
        return [o.reshape(shape) for o in out]

    def _far(self, out, v, tgt, node):
        # the expansion of every order (eq. (14.25)), all levels at once:
        # S_q = (v - c)**-(q + 1) sum_p binom(p + q, q) M_p u**p, |u| <= 1/3
        dv = v[tgt] - self.centre[node]
        u = self.radius[node] / dv
        inv = 1.0 / dv
        powers = np.empty((TREE_ORDER, u.size), dtype=complex)
        powers[0] = 1.0
        powers[1:] = u
        np.cumprod(powers, axis=0, out=powers)
        scale = inv
        for q, o in enumerate(out):
            sq = np.einsum("pk,pk->k", self._scaled[q][:, node], powers)
            _accumulate(o, tgt, sq * scale)
            scale = scale * inv

    def _direct(self, out, v, tgt, node):
        a = self.leaf_values[node]
        m = self.leaf_weights[node]
        inv = 1.0 / (v[tgt, None] - a)
        # padding entries (mass 0) count nothing, even on an atom (0 * inf)
        live = m > 0
        term = np.where(live, m * inv, 0.0)
        for q, o in enumerate(out):
            if q:
                term = np.where(live, term * inv, 0.0)
            _accumulate(o, tgt, term.sum(axis=1))


def _accumulate(out, index, values):
    """``out[index] += values`` with repeated indices, for complex arrays."""
    n = out.size
    out += (np.bincount(index, values.real, minlength=n)
            + 1j * np.bincount(index, values.imag, minlength=n))
