"""40-digit references for a band at an atom far below its sum's scale (theory section 14.38).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_atom_band_references.py

The law: ``a ⊞ b`` with ``a = 1e-6 * attention_law(0.5, 0.5).squared()`` (support
``[0, 2.3e-6]``) and ``b = sample_covariance(point_masses([1, 2], [1/2, 1/2]), 4)``
(an atom of mass 3/4 at 0, a band on ``[0.38, 14.2]``).  Next to 0 the atom spreads
into a band about as wide as ``a``'s support, ``1e-7`` of the sum's scale.

At five float points inside that band (the interior points of ``numpy.linspace(lo,
hi, 7)`` over freeattn's band ``[lo, hi]``) the density ``-Im G_a(w)/pi`` is solved
from eq. (14.1), ``w = z + h_b(z + h_a(w))`` with ``h = 1/G - u``, at ``z = x +
10**-34 i``, by ``mpmath.findroot`` at ``DPS`` = 40 digits; ``G_a`` and ``G_b`` are
the constituents' own mpmath transforms (``_mp_stieltjes``: the Marchenko-Pastur
closed form under the sample covariance's S-level of eq. (8.9), solved by
``findroot``, checked against their references in ``law_references.json`` and
``composition_references.json``).  freeattn supplies the starting points only.  The
band's edges solve ``w = phi(w, x)``, ``d phi/d w = 1`` (eq. (14.5)) for real ``(w,
x)`` at 40 digits (the derivative by ``mpmath.diff``), started from freeattn's bordered Newton (eq.
(14.5)) at the band's scale from ``10**-3`` of its width outside each edge.
A root is accepted when its residual is below ``10**-(DPS - 10) |w|``.  Written to
``tests/reference/atom_band_references.json`` as decimal strings (points as ``repr``
of the float).
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
from _axis_mp import axis_densities, edge, sum_phi

DPS = 40
OUT = pathlib.Path(__file__).with_name("atom_band_references.json")


def constituents():
    a = freeattn.attention_law(0.5, 0.5).squared().affine(0.0, 1e-6)
    b = freeattn.sample_covariance(freeattn.point_masses([1.0, 2.0], [0.5, 0.5]), 4.0)
    return a, b


def main():
    a, b = constituents()
    law = freeattn.free_additive(a, b)
    (lo, hi), _ = law.intervals()
    x = np.linspace(lo, hi, 7)[1:-1]
    w0 = law._solve(x.astype(complex))[0]
    mpmath.mp.dps = DPS
    phi = sum_phi(a, b)
    points = axis_densities(phi, a._mp_stieltjes, x, w0, DPS)
    edges = []
    for end, side in ((lo, -1.0), (hi, 1.0)):
        # freeattn's bordered Newton from 1e-3 of the width outside starts the solve
        # (at the band's scale, section 14.38)
        with law._problem_scale(hi - lo):
            res = law._edges(np.array([end + side * 1e-3 * (hi - lo)]),
                             np.array([end - side * 1e-3 * (hi - lo)]), 0)
        wo, xo = res.value[0]
        edges.append(mpmath.nstr(edge(phi, wo, xo, DPS), DPS))
    OUT.write_text(json.dumps({"dps": DPS, "points": points, "edges": edges}, indent=1) + "\n")
    print(json.dumps({"points": points, "edges": edges}, indent=1))


if __name__ == "__main__":
    main()
