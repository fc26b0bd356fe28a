"""40-digit references for the series of ``G`` next to an atom (theory eq. (14.58)).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_near_atom_references.py

The law ``b = MP(1.9122, 2.8291) ⊠ MP(1.8987, 2.1882)`` has an atom of mass
``1 - 1/2.8291`` at 0 and a band on ``[0.0897, 47.9]``.  Its ``G`` comes from the
S-transforms ``S(w) = 1/(sigma^2 (1 + lambda w))`` of the two Marchenko-Pastur laws:
with ``psi(z) = z G(z) - 1`` and ``u = 1/z``, ``psi`` is the root of the cubic

    psi = u sigma_1^2 sigma_2^2 (1 + psi)(1 + lambda_1 psi)(1 + lambda_2 psi)

that continues ``psi ~ m_1 u`` from infinity, taken here as the root nearest
freeattn's value (checked against freeattn away from the atom, where both agree to
rounding).  ``G`` and ``G'`` (``mpmath.diff``) at three points next to the atom are
written at ``DPS`` digits.

The sum ``a ⊞ b`` with ``a = attention_law(0.01559, 0.49683).squared()`` (the
depth-2 campaign's seed 18 / draw 4) has a band ``[3.07e-9, 3.55e-8]`` at ``b``'s
atom.  At five float points inside it (the interior points of ``numpy.linspace(lo,
hi, 7)`` over freeattn's band) the density ``-Im G_a(w)/pi`` is solved from eq.
(14.1), ``w = z + h_b(z + h_a(w))`` with ``h = 1/G - u``, at ``z = x + 10**-34 i``, by
``mpmath.findroot`` at ``DPS`` digits: ``G_a`` is the attention law's own mpmath
transform, ``G_b`` the cubic above.  The band's edges solve ``w = phi(w, x)``,
``d phi / d w = 1`` (eq. (14.5)) for real ``(w, x)``, started from freeattn's edges
and its real subordination points just outside them.  A root is accepted when its
residual is below ``10**-(DPS - 10) |w|``.  Written to
``tests/reference/near_atom_references.json`` as decimal strings (points as ``repr``
of the float).
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
from _axis_mp import axis_densities

DPS = 40
OUT = pathlib.Path(__file__).with_name("near_atom_references.json")
MP1 = ("1.9122", "2.8291")
MP2 = ("1.8987", "2.1882")
PRODUCT_POINTS = [complex(1e-8, 1e-8), complex(1e-9, 1e-9), complex(-8.9e-9, 2.1e-8)]


def laws():
    a = freeattn.attention_law(0.01559, 0.49683).squared()
    b = freeattn.free_multiplicative(freeattn.marchenko_pastur(float(MP1[0]), float(MP1[1])),
                                     freeattn.marchenko_pastur(float(MP2[0]), float(MP2[1])))
    return a, b


def product_g(z, near):
    """``G_b(z)`` from the cubic, the root nearest ``near``."""
    s1, l1 = (mpmath.mpf(v) for v in MP1)
    s2, l2 = (mpmath.mpf(v) for v in MP2)
    z = mpmath.mpc(z)
    k = s1 * s2 / z
    # psi - k (1 + psi)(1 + l1 psi)(1 + l2 psi) = 0, highest power first
    coeffs = [-k * l1 * l2, -k * (l1 + l2 + l1 * l2), 1 - k * (1 + l1 + l2), -k]
    roots = mpmath.polyroots(coeffs, maxsteps=400, extraprec=4 * DPS)
    return min(((1 + p) / z for p in roots), key=lambda g: abs(g - near))


def main():
    a, b = laws()
    mpmath.mp.dps = DPS
    for z in (1 + 1j, 10 + 0.5j):            # away from the atom: the branch
        near = complex(b.stieltjes(z))
        assert abs(complex(product_g(z, near)) - near) < 1e-14 * abs(near)
    product = []
    for z in PRODUCT_POINTS:
        near = complex(b.stieltjes(z))
        g = product_g(z, near)
        dg = mpmath.diff(lambda v: product_g(v, complex(g)), mpmath.mpc(z))
        product.append([repr(z), mpmath.nstr(g, DPS), mpmath.nstr(dg, DPS)])

    law = freeattn.free_additive(a, b)
    lo, hi = law.intervals()[0]
    x = np.linspace(lo, hi, 7)[1:-1]
    with law._problem_scale(hi):
        w0 = law._boundary(x)

    def g_b(u):
        return product_g(u, complex(b.stieltjes(complex(u) if mpmath.im(u) >= 0
                                                else complex(mpmath.conj(u)))))

    def phi(w, z):
        u = z + 1 / a._mp_stieltjes(w) - w
        return z + 1 / g_b(u) - u

    points = axis_densities(phi, a._mp_stieltjes, x, w0, DPS)
    print(json.dumps({"product": product, "points": points}, indent=1))
    OUT.write_text(json.dumps({"dps": DPS, "product": product, "points": points},
                              indent=1) + "\n")


if __name__ == "__main__":
    main()
