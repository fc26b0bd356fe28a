"""50-digit references for products of two discrete laws on (0, oo) (theory section 14.28).

Run from the repository root:

    PYTHONPATH=.:tests/reference python tests/reference/make_discrete_product_references.py

Cases: two products whose supports have a gap narrower than the locator grid of
theory section 14.10 (found by eq. (14.34), missed by the grid):

- ``narrow_pole_gap``: ``point_masses([2.136, 2.904], [0.75, 0.25]) ⊠
  point_masses([1.201, 2.475, 2.532, 2.846], [...])`` (the weight 0.75 at 2.532:
  a pole edge at ``2.904 * 2.532``), a gap of about 2e-7 beside that pole edge;
- ``narrow_gap``: a 4-atom by 3-atom product with a gap of about 6e-4 inside the
  grid's first band;
- ``two_by_two``: ``point_masses([1, 2], [0.3, 0.7]) ⊠ point_masses([1, 3], [0.6, 0.4])``.

Every square-root edge solves, by ``mpmath.findroot`` at ``DPS`` = 50 digits, the
fold of eq. (14.34) in its own unknowns ``(y_1, y_2, f)``:
``F_a(y_1) + f y_1 = 0``, ``F_b(y_2) + f y_2 = 0``,
``(F_a'(y_1) - 1)(F_b'(y_2) - 1) = (1 + f)**2``, and the edge is
``x = (1 + f) y_1 y_2`` (the secant method in ``f``, each point solved on its
branch at every step); freeattn's support supplies the starting point only.  A pole edge is the product of its two atoms (exact in mpmath).  The
density ``-Im G/pi`` at the middle of every band, and at ``10**-3`` of a gap's
width inside the bands on either side of every gap, is solved on the mpmath
transcription of eq. (14.4) in ``tests/reference/make_analytic_references.py``
(a different formulation: the subordination point of ``a``), started from
freeattn's continued solution; a root is accepted when its residual is below
``10**-(DPS - 5)`` and ``Im G < 0``.  At the middle of every gap the same
equation gives a real root (density 0 to ``10**-(DPS - 10)``).  Written to
``tests/reference/discrete_product_references.json`` as decimal strings, with the
atoms and weights (``repr`` of the floats).
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
from freeattn.compose._discrete_product_support import _ProductBranches

from make_analytic_references import _g_atoms, multiplicative_phi

DPS = 50
OUT = pathlib.Path(__file__).with_name("discrete_product_references.json")
#: relative depth (of a gap's width) of the density points beside a gap
GAP_DEPTH = 1e-3
CASES = {
    "narrow_pole_gap": ([2.136, 2.904], [0.75, 0.25],
                        [1.201, 2.475, 2.532, 2.846],
                        [0.10246001760136869, 0.006445322794143134, 0.75, 0.1410946596044882]),
    "narrow_gap": ([0.644, 0.813, 1.93, 2.832],
                   [0.19229024064948552, 0.30000000000000004, 0.3432333320649627,
                    0.16447642728555176],
                   [0.646, 0.702, 0.92], [0.1796186026675551, 0.12038139733244488, 0.7]),
    "two_by_two": ([1.0, 2.0], [0.3, 0.7], [1.0, 3.0], [0.6, 0.4]),
}


def build(case):
    """The freeattn law of a case (weights as stored, normalized by freeattn)."""
    av, aw, bv, bw = CASES[case]
    return freeattn.free_multiplicative(freeattn.point_masses(av, aw),
                                        freeattn.point_masses(bv, bw))


def _mp_law(values, weights):
    v = [mpmath.mpf(repr(t)) for t in values]
    w = [mpmath.mpf(repr(p)) for p in weights]
    total = mpmath.fsum(w)
    return v, [p / total for p in w]


def _fold(av, aw, bv, bw, start):
    """The fold of eq. (14.34) at 50 digits from ``start = (y1, y2, f)``."""
    def F(v, w, y):
        return 1 / _g_atoms(v, w, y)

    def dF(v, w, y):
        g = _g_atoms(v, w, y)
        return mpmath.fsum(p / (y - t) ** 2 for t, p in zip(v, w)) / g ** 2

    points = [mpmath.mpf(start[0]), mpmath.mpf(start[1])]

    def criterion(f):
        # the two points on their branches at this f (from the last ones), then the
        # fold condition
        points[0] = mpmath.findroot(lambda y: F(av, aw, y) + f * y, points[0])
        points[1] = mpmath.findroot(lambda y: F(bv, bw, y) + f * y, points[1])
        y1, y2 = points
        return (dF(av, aw, y1) - 1) * (dF(bv, bw, y2) - 1) - (1 + f) ** 2
    f0 = mpmath.mpf(start[2])
    f = mpmath.findroot(criterion, (f0, f0 + mpmath.mpf(10) ** -10 * (1 + abs(f0))))
    r = criterion(f)
    y1, y2 = points
    res = [F(av, aw, y1) + f * y1, F(bv, bw, y2) + f * y2, r]
    assert max(abs(v) for v in res) < mpmath.mpf(10) ** (5 - DPS), res
    return (1 + f) * y1 * y2


def _density(law, phi, ga, x):
    w = complex(law._continue(np.array([float(x)]), np.zeros(1))[0])
    sol = mpmath.findroot(lambda v: v - phi(v, x), mpmath.mpc(w))
    assert abs(sol - phi(sol, x)) < mpmath.mpf(10) ** (5 - DPS), (x, sol)
    # eq. (14.4): G(z) = u G_a(1/omega_1)/omega_1 with u = 1/z
    g = ga(1 / sol) / (sol * x)
    return -mpmath.im(g) / mpmath.pi


def _curve_start(law, edge):
    """``(y1, y2, f)`` on the curve of eq. (14.34) through ``edge``: the real
    subordination point of ``a`` just outside the edge gives ``y1``, eq. (14.4)
    gives ``y2`` and the common value ``f``."""
    (av, aw), (bv, bw) = (law.a.values, law.a.weights), (law.b.values, law.b.weights)
    a, b = _ProductBranches(av, aw), _ProductBranches(bv, bw)
    w = complex(law._continue(np.array([edge]), np.zeros(1))[0]).real
    y1 = 1.0 / w
    f = -float(1.0 / np.sum(a.law.w / (y1 - a.law.t))) / y1
    # y2 from x = (1 + f) y1 y2
    y2 = edge / ((1.0 + f) * y1)
    return y1, y2, f, (a, b)


def main():
    mpmath.mp.dps = DPS
    out = {}
    for case, (av, aw, bv, bw) in CASES.items():
        law = build(case)
        ma, mb = _mp_law(av, aw), _mp_law(bv, bw)
        ga = lambda u, ma=ma: _g_atoms(ma[0], ma[1], u)  # noqa: E731
        gb = lambda u, mb=mb: _g_atoms(mb[0], mb[1], u)  # noqa: E731
        phi = multiplicative_phi(ga, gb)
        edges = []
        for iv in law.interval_details():
            for e, expo in ((iv.lo, iv.lo_exponent), (iv.hi, iv.hi_exponent)):
                if expo < 0:
                    # a pole edge: the product of two atoms whose masses sum to 1
                    i = int(np.argmin(np.abs(np.outer(law.a.values, law.b.values) - e)))
                    s = ma[0][i // len(bv)] * mb[0][i % len(bv)]
                    edges.append(["pole", mpmath.nstr(s, DPS)])
                    continue
                y1, y2, f, _ = _curve_start(law, e)
                edges.append(["fold", mpmath.nstr(_fold(*ma, *mb, (y1, y2, f)), DPS)])
        bands = list(law.intervals())
        density = []
        for lo, hi in bands:
            x = mpmath.mpf(repr((lo + hi) / 2))
            density.append([repr(float(x)), mpmath.nstr(_density(law, phi, ga, x), DPS)])
        gaps = []
        for (_, hi0), (lo1, _) in zip(bands[:-1], bands[1:]):
            width = lo1 - hi0
            mid = mpmath.mpf(repr((hi0 + lo1) / 2))
            d0 = _density(law, phi, ga, mid)
            assert abs(d0) < mpmath.mpf(10) ** (10 - DPS), (case, mid, d0)
            gaps.append(repr(float(mid)))
            for x in (hi0 - GAP_DEPTH * width, lo1 + GAP_DEPTH * width):
                xm = mpmath.mpf(repr(x))
                d = _density(law, phi, ga, xm)
                assert d > 0, (case, x, d)
                density.append([repr(x), mpmath.nstr(d, DPS)])
        out[case] = {"a": [list(map(repr, av)), list(map(repr, aw))],
                     "b": [list(map(repr, bv)), list(map(repr, bw))],
                     "edges": edges, "density": density, "gap_middles": gaps}
    OUT.write_text(json.dumps({"dps": DPS, "cases": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
