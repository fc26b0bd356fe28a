"""40-digit references for sums of two weighted Bernoulli laws (theory eqs. (14.28)-(14.29)).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_discrete_sum_references.py

``point_masses([-1, 1], [1/2 - e, 1/2 + e]) ⊞ point_masses([-1, 1])`` for
``e = 10**-2, 10**-3, 10**-5`` has two bands around an atom of mass ``e`` at 0
(and one at 2).  Next to the inner edges the subordination point of the weighted
law tends to infinity.  The edges and the densities at the quarter points of each
band and at ``10**-6`` of the band's width inside each edge are solved by
``mpmath.findroot`` at ``DPS`` = 40 digits with the transcription of
``tests/reference/make_analytic_references.py`` (eq. (14.1), the unknown being
the symmetric law's subordination point); freeattn supplies the starting points
only; an edge whose fold solve leaves its start (``EDGE_MATCH``) is solved again
with the weighted law's point as the unknown (eq. (14.29)).  Written to ``tests/reference/discrete_sum_references.json`` as decimal
strings.
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
from freeattn.compose._analytic import analytic_additive

from make_analytic_references import _g_atoms, additive_phi, edges_and_density

DPS = 40
OUT = pathlib.Path(__file__).with_name("discrete_sum_references.json")
#: the weight offsets ``e`` (exact decimals)
OFFSETS = ("0.01", "0.001", "0.00001")
#: relative depth of the extra points inside each edge
EDGE_DEPTH = 1e-6
#: a fold solve must end this close to freeattn's edge it started from (1e-6 of
#: the spread 2): two inner edges 4e-5 apart can exchange roots
EDGE_MATCH = 2e-6


def main():
    mpmath.mp.dps = DPS
    cases = {}
    sym_v, sym_w = [-1, 1], [mpmath.mpf(1) / 2] * 2
    g_sym = lambda u: _g_atoms(sym_v, sym_w, u)  # noqa: E731
    for text in OFFSETS:
        e = mpmath.mpf(text)
        wv, ww = [-1, 1], [mpmath.mpf(1) / 2 - e, mpmath.mpf(1) / 2 + e]
        g_wt = lambda u, ww=ww: _g_atoms(wv, ww, u)  # noqa: E731
        sym = freeattn.point_masses([-1.0, 1.0])
        wt = freeattn.point_masses([-1.0, 1.0], [0.5 - float(text), 0.5 + float(text)])
        law = analytic_additive(sym, wt)
        phi = additive_phi(g_sym, g_wt)
        case = edges_and_density(law, phi, lambda w, x: g_sym(w))
        # the fold solve of each edge must stay at the edge it started from (EDGE_MATCH)
        starts = [v for iv in law.intervals() for v in iv]
        for k, (ref, start) in enumerate(zip(case["edges"], starts)):
            if abs(float(ref) - start) > EDGE_MATCH:
                # then in the mirrored unknown (the weighted law's point), eq. (14.29)
                mirror = analytic_additive(wt, sym)
                phi2 = additive_phi(g_wt, g_sym)
                lo_hi = law.intervals()[k // 2]
                side = -1.0 if k % 2 == 0 else 1.0
                xo = start + side * 1e-7 * (lo_hi[1] - lo_hi[0])
                w = float(mirror._continue(np.array([xo]), np.zeros(1))[0].real)

                def eqs(w, x):
                    return [w - phi2(w, x), 1 - mpmath.diff(lambda v: phi2(v, x), w)]
                sol = mpmath.findroot(eqs, (mpmath.mpf(w), mpmath.mpf(start)))
                assert abs(float(sol[1]) - start) <= EDGE_MATCH, (sol, start)
                case["edges"][k] = mpmath.nstr(sol[1], DPS)
        for lo, hi in law.intervals():
            for x in (lo + EDGE_DEPTH * (hi - lo), hi - EDGE_DEPTH * (hi - lo)):
                w = complex(law._continue(np.array([x]), np.zeros(1))[0])
                sol = mpmath.findroot(lambda v: v - phi(v, mpmath.mpf(x)), mpmath.mpc(w))
                # (relative: next to an inner edge |w| reaches ~100)
                assert abs(sol - phi(sol, mpmath.mpf(x))) < mpmath.mpf(10) ** (5 - DPS) * (
                    1 + abs(sol)), (text, x, sol)
                g = g_sym(sol)
                case["density"].append([repr(x), mpmath.nstr(-mpmath.im(g) / mpmath.pi, DPS)])
        cases[text] = case
    OUT.write_text(json.dumps({"dps": DPS, "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
