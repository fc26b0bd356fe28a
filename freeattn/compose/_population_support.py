"""Support of a sample-covariance law over an atomic population (theory section 14.17).

For ``mu = MP(1, c) ⊠ H`` with ``H = sum_k w_k delta_{t_k}`` (``t_k > 0``) and
``0 < c < 1``, the companion Stieltjes transform inverts to

    x(m) = -1/m + c sum_k w_k t_k / (1 + t_k m)          (theory eq. (14.17))

and ``(0, oo)`` minus the support is the image of ``{m < 0 : x'(m) > 0}`` away
from the poles ``m = -1/t_k`` (Silverstein & Choi 1995).  The edges are the
values of ``x`` at the zeros of ``x'``; each interval between consecutive
poles is sampled on its own, so a gap is found however narrow it is compared
with the spread of the atoms (the grid locator of theory section 14.10 can
miss one that holds no grid point), except the intervals that the bound of
theory eq. (14.18) proves free of zeros of ``x'`` (most of them: the cost is
about linear in the number of atoms).

Nothing in this module prints or does I/O.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ._atom_tree import TREE_MIN_ATOMS, AtomTree
from ._fixed_point import bracketed_newton

__all__ = ["population_edges"]

#: Samples of ``x'`` inside each interval between consecutive poles (clustered
#: towards both poles, where ``x' -> -oo``), and on the unbounded interval
#: left of the first pole (geometric in the distance to it).
POLE_INTERVAL_SAMPLES = 16
OUTER_SAMPLES = 64
#: The samples left of the first pole ``p`` lie at ``p (1 + u)``, ``u`` geometric in
#: ``[1/OUTER_REACH, OUTER_REACH]``.
OUTER_REACH = 1e12
#: Shrinks (by ``POLE_SHRINK_FACTOR`` each) of the distance to a pole in search of
#: ``x' <= 0`` next to it.
POLE_SHRINKS = 40
POLE_SHRINK_FACTOR = 16.0
#: Entries (points x atoms) per block of the sums over atoms.
SUM_BLOCK = 2 ** 16
#: Sub-intervals of each interval between consecutive poles, and neighbouring
#: poles on each side, in the upper bound of ``x'`` of theory eq. (14.18) that
#: proves an interval free of zeros of ``x'`` without sampling it.
BOUND_PIECES = 8
BOUND_NEIGHBOURS = 4
#: An interval is sampled unless its bound (14.18) is below ``-BOUND_SLACK / v**2``
#: on every sub-interval (margin for the rounding of the bound).
BOUND_SLACK = 1e-9


def _pole_sums(m, c, t, w, orders, tree=None):
    """``x^{(j)}(m)`` for ``j`` in ``orders`` (0 to 3), eq. (14.17), at 1-d ``m``.

    With ``tree`` (an :class:`AtomTree` over the poles ``-1/t_k`` with the weights
    ``w_k``) the sums ``sum_k w_k (t_k / (1 + t_k m))**(j + 1)
    = sum_k w_k / (m + 1/t_k)**(j + 1)`` come from its expansion (eq. (14.25)).
    """
    out = {j: np.empty(m.shape) for j in orders}
    with np.errstate(all="ignore"):
        base = {0: -1.0 / m, 1: 1.0 / m ** 2, 2: -2.0 / m ** 3, 3: 6.0 / m ** 4}
    sign = {0: 1.0, 1: -1.0, 2: 2.0, 3: -6.0}
    if tree is not None:
        with np.errstate(all="ignore"):
            power = tree.power_sums(m, max(orders))
            for j in orders:
                out[j] = base[j] + c * sign[j] * power[j].real
        return out
    step = max(1, SUM_BLOCK // max(t.size, 1))
    for s in range(0, m.size, step):
        mb = m[s:s + step, None]
        with np.errstate(all="ignore"):
            u = t[None, :] / (1.0 + t[None, :] * mb)          # t_k / (1 + t_k m)
            p = u * w[None, :]
            for j in range(4):
                if j in out:
                    out[j][s:s + step] = base[j][s:s + step] + c * sign[j] * p.sum(axis=1)
                p = p * u
    return out


def _free_of_zeros(c, t, w):
    """Which intervals between consecutive poles ``-1/t_k < -1/t_{k+1}`` have
    ``x' < 0`` throughout, by the bound of theory eq. (14.18) (``t`` increasing).

    On ``[u, v]`` inside such an interval, ``1/m**2 <= 1/v**2`` and each term
    ``w_k/(m + 1/t_k)**2`` of eq. (14.17) is at least ``w_k`` over the largest
    squared distance from ``[u, v]`` to the pole; keeping only the
    ``BOUND_NEIGHBOURS`` poles on each side gives an upper bound of ``x'``.
    Cost ``O(K)``.
    """
    k = t.size
    if k < 2:
        return np.zeros(0, dtype=bool)
    p = -1.0 / t
    a, b = p[:-1], p[1:]
    frac = np.linspace(0.0, 1.0, BOUND_PIECES + 1)
    u = a[:, None] + (b - a)[:, None] * frac[None, :-1]
    v = a[:, None] + (b - a)[:, None] * frac[None, 1:]
    v = np.minimum(v, b[:, None])
    near = np.zeros(u.shape)
    idx = np.arange(k - 1)
    for j in range(BOUND_NEIGHBOURS):
        for kk in (idx - j, idx + 1 + j):
            ok = (kk >= 0) & (kk < k)
            kc = np.clip(kk, 0, k - 1)
            pk = p[kc][:, None]
            far = np.maximum(np.abs(u - pk), np.abs(v - pk))
            near += np.where(ok[:, None], w[kc][:, None] / far ** 2, 0.0)
    top = 1.0 / v ** 2
    return np.all(top - c * near < -BOUND_SLACK * top, axis=1)


def population_edges(ratio, values, weights):
    """Support intervals of ``MP(1, ratio) ⊠ sum_k w_k delta_{t_k}`` (theory eq. (14.17)).

    Parameters
    ----------
    ratio : float
        ``0 < ratio < 1``.
    values, weights : ndarray
        Distinct atoms ``t_k > 0`` and their weights (summing to 1).

    Returns
    -------
    list of (float, float)
        The bands, increasing; every edge is a soft (square-root) edge.

    Raises
    ------
    ConvergenceError
        If the zeros of ``x'`` do not alternate into bands (a sampled interval
        holding more sign changes than the samples resolve), or a zero or a
        maximum of ``x'`` is not solved by :func:`bracketed_newton`.
    """
    c = float(ratio)
    order = np.argsort(values)
    t = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    poles = -1.0 / t                                   # ascending: -1/t_min < ... < -1/t_max < 0
    tree = AtomTree(poles, w) if t.size >= TREE_MIN_ATOMS else None

    def sums(x, orders):
        return _pole_sums(x, c, t, w, orders, tree)

    # sample points: left of the first pole (geometric), between poles, and
    # between the last pole and 0 (clustered at both ends); piece k is
    # (ends[k-1], ends[k]), and the pieces between poles that eq. (14.18) proves
    # free of zeros of x' are not sampled
    frac = 0.5 * (1.0 - np.cos(np.pi * np.arange(1, POLE_INTERVAL_SAMPLES + 1)
                               / (POLE_INTERVAL_SAMPLES + 1)))
    ends = np.r_[poles, 0.0]
    keep = np.flatnonzero(~np.r_[_free_of_zeros(c, t, w), False]) + 1
    inner = (ends[keep - 1, None] + (ends[keep] - ends[keep - 1])[:, None]
             * frac[None, :]).ravel()
    outer = poles[0] * (1.0 + np.geomspace(1.0 / OUTER_REACH, OUTER_REACH, OUTER_SAMPLES))[::-1]
    m = np.r_[outer, inner]
    piece = np.r_[np.zeros(outer.size, dtype=int), np.repeat(keep, POLE_INTERVAL_SAMPLES)]
    d1 = sums(m, (1,))[1]

    def d1_pair(x, idx):
        s = sums(x, (1, 2))
        return s[1], s[2]

    def d2_pair(x, idx):
        s = sums(x, (2, 3))
        return s[2], s[3]

    # x' = -oo at a pole: where the sample next to a pole is already positive, a zero
    # lies between them; a point closer to the pole with x' <= 0 brackets it
    first = np.r_[True, piece[1:] != piece[:-1]]
    last = np.r_[piece[1:] != piece[:-1], True]
    extra_m, extra_piece = [], []
    for side, idx in (("left", np.flatnonzero(first & (piece >= 1) & (d1 > 0))),
                      ("right", np.flatnonzero(last & (piece < ends.size - 1) & (d1 > 0)))):
        if not idx.size:
            continue
        k = piece[idx]
        pole = ends[k - 1] if side == "left" else ends[k]
        gap = m[idx] - pole
        found = np.zeros(idx.size, dtype=bool)
        pt = m[idx].copy()
        for _ in range(POLE_SHRINKS):
            gap = np.where(found, gap, gap / POLE_SHRINK_FACTOR)
            trial = pole + gap
            neg = sums(trial, (1,))[1] <= 0
            pt = np.where(~found & neg, trial, pt)
            found |= neg
            if found.all():
                break
        if not found.all():
            raise ConvergenceError(
                f"x'(m) of eq. (14.17) stays positive next to the pole m = "
                f"{float(pole[np.argmin(found)])!r} (ratio={c!r})")
        extra_m.append(pt)
        extra_piece.append(k)
    def insert(m, piece, d1, new_m, new_piece):
        """The samples with ``new_m`` added, sorted by piece, then ``m``."""
        m = np.r_[m, new_m]
        piece = np.r_[piece, new_piece]
        d1 = np.r_[d1, sums(new_m, (1,))[1]]
        srt = np.lexsort((m, piece))
        return m[srt], piece[srt], d1[srt]

    if extra_m:
        m, piece, d1 = insert(m, piece, d1, np.concatenate(extra_m), np.concatenate(extra_piece))
    # the maxima of x' between samples: a sampled local maximum is refined (zero of
    # x'' between its neighbours) and inserted, so that a hump above 0 narrower than
    # the sampling still shows as two sign changes
    same_left = np.r_[False, piece[1:] == piece[:-1]]
    same_right = np.r_[piece[:-1] == piece[1:], False]
    # (a sampled maximum above 0 is already a sign change on each side)
    peak = np.flatnonzero(same_left & same_right & (d1 >= np.r_[-np.inf, d1[:-1]])
                          & (d1 >= np.r_[d1[1:], -np.inf]) & (d1 <= 0))
    if peak.size:
        lo, hi = m[peak - 1], m[peak + 1]
        slo = d2_pair(lo, None)[0]
        shi = d2_pair(hi, None)[0]
        ok = np.sign(slo) != np.sign(shi)
        mp = m[peak].copy()
        if ok.any():
            mp[ok] = bracketed_newton(d2_pair, lo[ok], hi[ok], slo[ok], what="eq. (14.17)")
        m, piece, d1 = insert(m, piece, d1, mp, piece[peak])
    # zeros of x' between consecutive samples of one piece; at the poles x' = -oo,
    # at m -> 0- it is +oo and at m -> -oo it is (1 - c)/m**2 > 0
    pos = d1 > 0
    change = np.flatnonzero((piece[1:] == piece[:-1]) & (pos[1:] != pos[:-1]))
    zeros = bracketed_newton(d1_pair, m[change], m[change + 1], d1[change],
                             what="eq. (14.17)") if change.size \
        else np.empty(0)
    rising = ~pos[change]                               # x' from <= 0 to > 0: a band ends
    # the first piece starts positive (m -> -oo) and the last ends positive (m -> 0-);
    # a piece bounded by poles starts and ends negative
    if not (pos[0] and pos[-1]):
        raise ConvergenceError(
            f"x'(m) of eq. (14.17) has the wrong sign at the ends of the real line "
            f"(ratio={c!r}): the sampling did not reach the limits m -> -oo, m -> 0-")
    xs = sums(zeros, (0,))[0]
    kinds = np.where(rising, "hi", "lo")
    if kinds.size % 2 or np.any(kinds[0::2] != "lo") or np.any(kinds[1::2] != "hi") \
            or np.any(np.diff(xs) <= 0):
        raise ConvergenceError(
            f"the zeros of x'(m) of eq. (14.17) do not alternate into bands "
            f"(ratio={c!r}, {t.size} atoms): {list(zip(kinds.tolist(), xs.tolist()))[:8]}")
    return [(float(a), float(b)) for a, b in zip(xs[0::2], xs[1::2])]
