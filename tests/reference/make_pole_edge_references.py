"""50-digit references for the densities next to pole edges (theory section 14.27).

Run from the repository root:

    PYTHONPATH=.:tests/reference python tests/reference/make_pole_edge_references.py

Cases (the atoms' masses sum to 1 in pairs, so the density diverges as
``|x - x_e|**(-1/2)`` at the pair's sum or product ``x_e``):

- ``sum``: ``point_masses([0, 1, 3], [1/4, 1/2, 1/4]) ⊞ point_masses([0, 2])``, pole
  edges at 1 and 3;
- ``product``: ``point_masses([1, 2]) ⊠ point_masses([1, 3])``, pole edges at 1, 2, 3, 6;
- ``weighted_product``: ``point_masses([1, 2], [0.3, 0.7]) ⊠ point_masses([1, 3],
  [0.7, 0.3])``, pole edges at 1 and 6 (and an atom 0.4 at 2);
- ``inexact_product``: ``point_masses([0.1, 0.7]) ⊠ point_masses([0.3, 1.1])``, pole
  edges at the four products of the float atoms, none of them a float;
- ``close_edges`` (written under ``close_cases``): ``point_masses([-1 - 1e-10, 1]) ⊞
  point_masses([-1, 1])``, the arcsine with a gap of width 1e-10 opened at 0 between
  the pole edges ``-1e-10`` (of the atoms ``-1 - 1e-10`` and 1) and 0 (of 1 and -1):
  two pairs whose sums lie within 1e-10 of each other, and offsets that follow
  ``sqrt(delta)`` only far inside the gap's width.

At the float points ``x = fl(x_e + side 10**-k w)`` (``x_e`` the float edge, ``w`` the
band's width, ``k = 4, 6, ..., 14``, inside the band) the density ``-Im G/pi`` at
``x + (x_e* - x_e) + i0`` (``x_e*`` the exact sum or product of the float atoms: the
translation of theory section 14.27, 0 in the first three cases) is solved by
``mpmath.findroot`` at ``DPS`` = 50 digits on the mpmath transcription of eq. (14.1)
or (14.4) of ``tests/reference/make_analytic_references.py``; freeattn supplies the
starting point only (the subordination point from the offset model of eq. (14.32)
or (14.33)).  A root is accepted when its residual is below ``10**-(DPS - 5)`` and
``Im G < 0``.  Written to ``tests/reference/pole_edge_references.json`` as decimal
strings (the points as ``repr`` of the float), with the cases' atoms and weights.
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn

from make_analytic_references import _g_atoms, additive_phi, multiplicative_phi

DPS = 50
OUT = pathlib.Path(__file__).with_name("pole_edge_references.json")
DEPTHS = (4, 6, 8, 10, 12, 14)
CASES = {
    "sum": (([0, 1, 3], ["0.25", "0.5", "0.25"]), ([0, 2], ["0.5", "0.5"]), False),
    "product": (([1, 2], ["0.5", "0.5"]), ([1, 3], ["0.5", "0.5"]), True),
    "weighted_product": (([1, 2], ["0.3", "0.7"]), ([1, 3], ["0.7", "0.3"]), True),
    "inexact_product": (([0.1, 0.7], ["0.5", "0.5"]), ([0.3, 1.1], ["0.5", "0.5"]), True),
}
CLOSE_CASES = {
    "close_edges": (([-1.0 - 1e-10, 1.0], ["0.5", "0.5"]), ([-1.0, 1.0], ["0.5", "0.5"]),
                    False),
}


def build(case):
    """The freeattn law of a case."""
    (av, aw), (bv, bw), mul = {**CASES, **CLOSE_CASES}[case]
    a = freeattn.point_masses([float(v) for v in av], [float(w) for w in aw])
    b = freeattn.point_masses([float(v) for v in bv], [float(w) for w in bw])
    return freeattn.free_multiplicative(a, b) if mul else freeattn.free_additive(a, b)


def _start(model, delta, xa):
    """The offset model's own root at ``xa`` (the start of mpmath's solve): from the
    reference point scaled by sqrt, or from the continuation ladder where that fails."""
    try:
        d_ref, s_ref = model._reference_point()
        start = s_ref * np.sqrt(delta / d_ref)
    except freeattn.ConvergenceError:
        start = model._ladder_start(delta)
    s1, _, _, ok = model._solve_at(delta, start)
    if not ok.all():
        s1, _, _, ok = model._solve_at(delta, model._ladder_start(delta))
    assert ok.all()
    return s1[0]


def references(cases):
    out = {}
    for case, ((av, aw), (bv, bw), mul) in cases.items():
        amv, amw = [mpmath.mpf(float(v)) for v in av], [mpmath.mpf(w) for w in aw]
        bmv, bmw = [mpmath.mpf(float(v)) for v in bv], [mpmath.mpf(w) for w in bw]
        ga = lambda u, v=amv, w=amw: _g_atoms(v, w, u)  # noqa: E731
        gb = lambda u, v=bmv, w=bmw: _g_atoms(v, w, u)  # noqa: E731
        phi = (multiplicative_phi if mul else additive_phi)(ga, gb)
        law = build(case)
        points = []
        for model in law._pole_edges():
            iv = next(iv for iv in law.interval_details()
                      if model.edge in (float(iv.lo), float(iv.hi)))
            width = float(iv.hi) - float(iv.lo)
            for k in DEPTHS:
                x = model.edge + model.side * 10.0 ** -k * width
                xa = np.array([x])
                delta = model.offset(xa)
                s1 = _start(model, delta, xa)
                zeta = mpmath.mpf(model.oa.atom) + mpmath.mpc(s1)
                start = 1 / zeta if mul else zeta
                pa, pb = mpmath.mpf(model.oa.atom), mpmath.mpf(model.ob.atom)
                exact = pa * pb if mul else pa + pb
                xm = mpmath.mpf(x) + (exact - mpmath.mpf(model.edge))
                sol = mpmath.findroot(lambda v: v - phi(v, xm), start)
                assert abs(sol - phi(sol, xm)) < mpmath.mpf(10) ** (5 - DPS)
                g = (1 / xm) * ga(1 / sol) / sol if mul else ga(sol)
                assert mpmath.im(g) < 0
                points.append([repr(x), mpmath.nstr(-mpmath.im(g) / mpmath.pi, DPS), k])
        out[case] = {"a": [[float(v) for v in av], [float(w) for w in aw]],
                     "b": [[float(v) for v in bv], [float(w) for w in bw]],
                     "multiplicative": mul, "points": points}
    return out


def main():
    mpmath.mp.dps = DPS
    payload = {"dps": DPS, "depths": list(DEPTHS), "cases": references(CASES),
               "close_cases": references(CLOSE_CASES)}
    OUT.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
