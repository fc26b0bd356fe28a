"""Support of the free multiplicative convolution of two finite discrete laws on
``(0, oo)`` (theory section 14.28).

For ``a = sum_i p_i delta_{s_i}`` and ``b = sum_j q_j delta_{t_j}`` (every atom
positive) a real solution of eq. (14.4) at real ``x`` is, in the points
``y = 1/omega``, a pair ``(y_1, y_2)`` with a common value
``F_a(y_1)/y_1 = F_b(y_2)/y_2 = -f`` and ``x = (1 + f) y_1 y_2``; it is the
boundary fixed point of eq. (14.4), and ``x`` lies outside the support of
``a ⊠ b``, exactly where

    phi_x' = (F_a'(y_1) - 1) (F_b'(y_2) - 1) / (1 + f)**2 < 1   (theory eq. (14.34)).

In ``omega`` the equation ``F_a(y)/y = -f`` is ``F_nu(omega) = m f`` for the
probability law ``nu = sum_i (p_i / (m s_i)) delta_{1/s_i}`` (``m = sum_i
p_i/s_i``, eq. (14.35)): its branches are those of a discrete law, each mapped
onto the whole line, and the curves, their sampling and the search for the zeros
of eq. (14.34) are those of the sum (``curve_bands``, theory section 14.19).

Nothing in this module prints or does I/O.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ._discrete_sum_support import (ATOM_MARGIN, CURVE_SAMPLES, MAX_CURVES,
                                    TAIL_FACTOR, TAIL_MIN_REACH, TAIL_SAMPLES, _Branches,
                                    curve_bands)

__all__ = ["discrete_product_edges"]

#: Relative offsets from ``f = -1`` sampled on every curve: there a point on the
#: branch through ``omega = 0`` passes through ``y = oo``, and on the curve where
#: both do, ``x`` through infinity (the curve is cut there, theory section 14.28).
NEAR_WRAP = (1e-2, 1e-4)
#: The tails reach at most this many times the parameter scale: where the limit
#: of eq. (14.34) at an end is within ``TAIL_FACTOR / TAIL_CAP`` of the margin, a
#: zero beyond it is not resolved (theory section 14.28).
TAIL_CAP = 1e12


class _ProductBranches:
    """A discrete law on ``(0, oo)`` seen by eq. (14.34): its ``F`` in ``y`` and the
    reciprocal law ``nu`` of eq. (14.35), whose branches in ``omega = 1/y`` carry
    the curves."""

    def __init__(self, values, weights):
        self.law = _Branches(values, weights)
        t, w = self.law.t, self.law.w
        self.m = float(np.sum(w / t))
        # m_{-2}/m_{-1}**2 - 1 = F'(0) - 1 >= 0 (eq. (14.36)), summed without cancellation
        centred = 1.0 / t - self.m
        self.slope0 = float(np.sum(w * centred ** 2)) / self.m ** 2
        self.recip = _Branches(1.0 / t, (w / t) / self.m)
        self.count = t.size
        # branch k of nu (increasing in omega) holds the atom 1/s of the k-th largest s
        self.atom = t[::-1]
        self.weight = w[::-1]
        self.scale = float(self.recip.t[-1] - self.recip.t[0]) / self.m

    def points(self, f, k, guess=None):
        """``(y, omega)`` on branch ``k`` with ``F(y)/y = -f`` (eq. (14.35))."""
        om = self.recip.inverse(self.m * f, k, guess)
        with np.errstate(divide="ignore"):
            y = 1.0 / om
        return np.where(f == 0, self.atom[k], y), om

    def inner_limit(self, k, side):
        """As ``f -> side * oo`` on branch ``k``: None on an outer branch (``y -> 0``),
        else the zero of ``G`` that ``y`` tends to and ``|G'|`` there."""
        outer, p = self.recip.end(k, side)
        if outer:
            return None
        y = 1.0 / p
        return y, float(np.sum(self.law.w / (y - self.law.t) ** 2))


def discrete_product_edges(a_values, a_weights, b_values, b_weights):
    """Bands of ``a ⊠ b`` for two finite discrete laws on ``(0, oo)`` (theory eq. (14.34)).

    Parameters
    ----------
    a_values, a_weights, b_values, b_weights : ndarray
        Distinct positive atoms and their weights (each summing to 1), at least
        two atoms each and at most ``MAX_CURVES`` pairs.

    Returns
    -------
    list of (float, float, bool, bool)
        The bands of the continuous part, increasing, each with whether its lower
        and upper edge is a pole edge (``x = s_i t_j`` with ``p_i + q_j = 1``).
        An atom of the product (``p_i + q_j > 1``, at ``s_i t_j``) lies in a gap.

    Raises
    ------
    ValueError
        If an atom is not positive or a law has fewer than two atoms.
    ConvergenceError
        As :func:`~freeattn.compose._discrete_sum_support.curve_bands`, or if a
        band reaches 0 (which positive atoms exclude).
    """
    for name, v in (("a_values", a_values), ("b_values", b_values)):
        v = np.asarray(v, dtype=float)
        if v.size < 2 or not np.all(v > 0):
            raise ValueError(f"{name} must hold at least two positive atoms, got {v!r}")
    a, b = _ProductBranches(a_values, a_weights), _ProductBranches(b_values, b_weights)
    if a.count * b.count > MAX_CURVES:
        raise ValueError(f"at most {MAX_CURVES} pairs of atoms, got {a.count} x {b.count}")
    spread = max(a.scale, b.scale)
    xscale = float(a.law.t[-1] * b.law.t[-1])
    theta = np.pi * (np.arange(1, CURVE_SAMPLES + 1) / (CURVE_SAMPLES + 1) - 0.5)
    # f = 0 (both points atoms) and the neighbourhood of the wrap f = -1 are sampled
    near = np.array(NEAR_WRAP)
    scales = {spread, min(a.scale, b.scale)}
    fs = np.unique(np.concatenate([np.tan(theta) * s for s in scales]
                                  + [[0.0], -1.0 - near, -1.0 + near]))
    fs = fs[fs != -1.0]
    kk, ll = np.meshgrid(np.arange(a.count), np.arange(b.count), indexing="ij")
    kk, ll = kk.ravel(), ll.ravel()
    grow = np.linspace(0.0, 1.0, TAIL_SAMPLES + 1)[1:]
    rows, piece = [], []
    for k, l in zip(kk.tolist(), ll.tolist()):
        tails = []
        for side in (-1, 1):
            lim = _end_slope(a, b, k, l, side)
            end = fs[0] if side < 0 else fs[-1]
            factor = TAIL_MIN_REACH
            if lim is not None:
                # eq. (14.34) tends to the limit (1 - L)/(1 + L) with O(1/f)
                # corrections: its last zero lies within ~ spread/|limit| (theory
                # section 14.28), and the tail reaches TAIL_FACTOR times beyond that
                rel = abs(1.0 - lim) / (1.0 + lim)
                far = spread * (TAIL_CAP if rel == 0 else min(TAIL_CAP, TAIL_FACTOR / rel))
                factor = max(factor, far / abs(end))
            tails.append(end * factor ** grow)
        f = np.concatenate([tails[0][::-1], fs, tails[1]])
        if k == 0 and l == 0:
            # both points on the branch through omega = 0: x passes through infinity
            # at f = -1, and the curve is cut there into two
            rows += [f[f < -1.0], f[f > -1.0]]
            piece += [(k, l, "below"), (k, l, "above")]
        else:
            rows.append(f)
            piece.append((k, l, None))
    width = max(r.size for r in rows)
    fpad = np.full((len(rows), width), np.inf)
    for r, v in enumerate(rows):
        fpad[r, :v.size] = v
    ck = np.array([p[0] for p in piece])
    cl = np.array([p[1] for p in piece])
    last = {}

    def s_and_x(f, rows):
        k, l = ck[rows], cl[rows]
        prev = last.get(np.shape(f))
        y1, w1 = a.points(f, k, None if prev is None else prev[0])
        y2, w2 = b.points(f, l, None if prev is None else prev[1])
        last.clear()
        last[np.shape(f)] = (w1, w2)
        # eq. (14.34) relative to its terms: (1 + f)**2 d_a d_b against e_a e_b
        # (d = 1/F', e = d - 1 <= 0, each free of cancellation; F' - 1 = -e/d)
        g = -f
        with np.errstate(all="ignore"):
            da, ea, ra = a.law.parts(y1, g * y1)
            db, eb, rb = b.law.parts(y2, g * y2)
            c2 = (1.0 + f) ** 2
            p, q = c2 * da * db, ea * eb
            size = p + q
            rel = np.where(size == 0, 0.0, (p - q) / size)
            # x = (1 + f) y_1 y_2 = (y_1 - F_a(y_1)) y_2, the larger point's factor
            # taken as its y - F(y) (finite where y passes through infinity)
            x = np.where(np.abs(y1) >= np.abs(y2), ra * y2, rb * y1)
        return rel, x

    pair = a.weight[ck] + b.weight[cl]
    has_atoms = np.array([p[2] != "below" for p in piece])
    pole_x = np.where(has_atoms & (np.abs(pair - 1.0) <= ATOM_MARGIN),
                      a.atom[ck] * b.atom[cl], np.nan)

    def limit(r, side):
        k, l, part = piece[r]
        if part == "below" and side > 0:
            return -np.inf
        if part == "above" and side < 0:
            return np.inf
        return _limit(a, b, k, l, side)

    bands = curve_bands(fpad, s_and_x, limit, pole_x, spread, xscale, "eq. (14.34)")
    if bands and not bands[0][0] > 0:
        raise ConvergenceError(f"eq. (14.34) gave a band reaching 0 for positive atoms: "
                               f"{bands!r}")
    return bands


def _end_slope(a, b, k, l, side):
    """``lim phi_x'`` as ``f -> side * oo`` on curve ``(k, l)`` when one point tends
    to 0 and the other to a zero ``p`` of its ``G`` (eq. (14.36)); else None."""
    ia, ib = a.inner_limit(k, side), b.inner_limit(l, side)
    if (ia is None) == (ib is None):
        return None
    outer, (p, dg) = (a, ib) if ia is None else (b, ia)
    return outer.slope0 * dg * p * p


def _limit(a, b, k, l, side):
    """``lim x`` as ``f -> side * oo`` on curve ``(k, l)`` (theory section 14.28)."""
    ia, ib = a.inner_limit(k, side), b.inner_limit(l, side)
    if ia is None and ib is None:
        return 0.0               # both points tend to 0: x -> 0
    if ia is None:
        return ib[0] / a.m       # x -> p / m_{-1} of the outer law
    if ib is None:
        return ia[0] / b.m
    raise ConvergenceError(
        f"eq. (14.34) is positive at the end of the inner curve ({k}, {l}): the samples "
        f"do not reach its limit")
