"""40-digit references for a band of a sum with an end next to 0 (theory section 14.55).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_near_zero_band_references.py

The law: ``a ⊞ b`` with ``a = point_masses([0, 1], [0.85, 0.15])`` and ``b =
marchenko_pastur(1, 2.9) ⊠ marchenko_pastur(0.01, 3)`` (an atom 2/3 at 0, a band on
``[1.1e-5, 0.151]``).  Next to 0 the sum has the band ``[4.33e-6, 0.130]``: its width is
0.11 of the sum's scale 1.15, its lower end ``3.8e-6`` of it.

At points ``lo (1 + d)`` for ``d`` in ``D`` (from ``10**-3`` of the lower end above it to
the band's middle) the density ``-Im G_a(w)/pi`` is solved from eq. (14.1), ``w = z +
h_b(z + h_a(w))`` with ``h = 1/G - u``, at ``z = x + 10**-34 i``, by ``mpmath.findroot``
at ``DPS`` = 40 digits; ``G_a`` and ``G_b`` are the constituents' own mpmath transforms
(``_mp_stieltjes``: the atoms' sum and the product's S-transform equation, solved by
``findroot``, checked against their references in ``law_references.json`` and
``composition_references.json``).  freeattn supplies the starting points only.  The
lower edge solves ``w = phi(w, x)``, ``d phi/d w = 1`` (eq. (14.5)) for real ``(w, x)`` at
40 digits (the derivative by ``mpmath.diff``), started from freeattn's edge.  A root is
accepted when its residual is below ``10**-(DPS - 10) |w|``.  Written to
``tests/reference/near_zero_band_references.json`` as decimal strings (points as
``repr`` of the float).
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
from _axis_mp import axis_densities, edge, sum_phi

DPS = 40
OUT = pathlib.Path(__file__).with_name("near_zero_band_references.json")
#: relative offsets of the points above the lower end
D = (1e-3, 1e-2, 0.1, 1.0, 10.0, 1e3, 1e4)


def law():
    a = freeattn.point_masses([0.0, 1.0], [0.85, 0.15])
    b = freeattn.free_multiplicative(freeattn.marchenko_pastur(1.0, 2.9),
                                     freeattn.marchenko_pastur(0.01, 3.0))
    return freeattn.free_additive(a, b)


def main():
    s = law()
    a, b = s.a, s.b
    lo, hi = s.intervals()[0]
    x = lo * (1.0 + np.array(D))
    assert x[-1] < hi
    w0 = s._solve(x.astype(complex))[0]
    mpmath.mp.dps = DPS
    phi = sum_phi(a, b)
    points = axis_densities(phi, a._mp_stieltjes, x, w0, DPS)
    # the lower edge: real (w, x) with w = phi(w, x) and phi' = 1, from freeattn's edge
    # and its real subordination point just below it
    wo = s._solve(np.array([lo * (1.0 - 1e-6)], dtype=complex))[0][0].real
    x_e = edge(phi, wo, lo, DPS)
    OUT.write_text(json.dumps({"dps": DPS, "points": points, "edge": mpmath.nstr(x_e, DPS)},
                              indent=1) + "\n")
    print(json.dumps({"points": points, "edge": mpmath.nstr(x_e, DPS)}, indent=1))


if __name__ == "__main__":
    main()
