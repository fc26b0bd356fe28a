"""50-digit edges of two tall rational towers (theory section 8.5).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_tall_tower_references.py

The laws:

* ``small_beta_product``: ``(attention_law(0.0049132, 0.11897)² ⊠ MP(0.54487, 1.4861))
  ⊠ (MP(1.5532, 2.5113) ⊠ MP(1.3734, 0.31796))`` (the depth-2 campaign's seed 14 /
  draw 48), one S-level tower of degree 14 whose expanded coefficients lose their
  low-order terms to cancellation.
* ``multihead_beta_0.05``: ``multihead_law(0.05, heads=4, gamma_k=0.5, gamma_v=0.5,
  gamma_o=1)``.

Each edge is ``x_e = Z(t_e)`` at a real zero ``t_e`` of ``Z'`` (eq. (8.12)), with
``Z`` the tower evaluated level by level in mpmath at ``DPS`` digits
(``Curve.mp_z_of``: the levels' own mpmath forms, ``level.mp``, and the leaf's closed
form ``z = t (t + p)/(t - q)``, ``G = 1/t`` of eq. (8.6)); ``Z'`` by ``mpmath.diff``,
its zero by ``mpmath.findroot`` (secant) from freeattn's float leaf points of the edges
(freeattn supplies the starting points only).  A zero is accepted when ``|Z'(t_e)|`` is below
``10**-(DPS - 15)`` of ``|Z'|`` at ``t_e (1 + 10**-3)``.  The parameters are the
laws' float parameters, read as exact binary numbers.  The multi-head law's edges
are the critical values of the exact sympy curve of
``tests/reference/make_multihead_references.py`` (``STransformCurve``, ``beta =
1/20`` exactly) nearest freeattn's float edges (within ``10**-10``).
Written to ``tests/reference/tall_tower_references.json`` as
decimal strings.
"""

import json
import pathlib

import mpmath

import freeattn

DPS = 50
OUT = pathlib.Path(__file__).with_name("tall_tower_references.json")


def small_beta_product():
    att = freeattn.attention_law(0.0049132, 0.11897).squared()
    a = freeattn.free_multiplicative(att, freeattn.marchenko_pastur(0.54487, 1.4861))
    b = freeattn.free_multiplicative(freeattn.marchenko_pastur(1.5532, 2.5113),
                                     freeattn.marchenko_pastur(1.3734, 0.31796))
    from freeattn.compose._subordination import _collapsed_product
    return _collapsed_product(a, b, a._s_transform(), b._s_transform(), a.options)


def multihead():
    return freeattn.multihead_law(0.05, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)


def edges(law):
    solver = law._solver
    solver.support()
    z_of = solver.curve.mp_z_of(mpmath)
    out = []
    for x, te, _, _ in solver.soft_edges:
        def dz(t):
            return mpmath.diff(z_of, t)
        tc = mpmath.findroot(dz, mpmath.mpf(te))
        scale = abs(dz(tc * (1 + mpmath.mpf(10) ** -3)))
        if not abs(dz(tc)) <= mpmath.mpf(10) ** -(DPS - 15) * scale:
            raise AssertionError(f"Z' = {dz(tc)} at the edge next to {x}")
        out.append(z_of(tc))
    return sorted(out)


def multihead_edges():
    """The exact curve's critical values nearest the float edges of the law."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import make_multihead_references as mh

    lam_k, levels = mh.multihead_chain(4, "0.5", "0.5", "1")
    _, theta2, alpha2 = mh.coefficients("0.05")
    crit = [c[0] for c in mh.STransformCurve(lam_k, levels).critical_points(alpha2, theta2)]
    out = []
    for x in (v for iv in multihead().intervals() for v in iv):
        best = min(crit, key=lambda c: abs(c - x))
        if abs(best - x) > mpmath.mpf(10) ** -10 * abs(x):
            raise AssertionError(f"no critical value next to the edge {x}: {best}")
        out.append(best)
    return out


def main():
    mpmath.mp.dps = DPS
    rec = {"dps": DPS, "command": "PYTHONPATH=. python tests/reference/"
           "make_tall_tower_references.py", "laws": {}}
    rec["laws"]["small_beta_product"] = [mpmath.nstr(e, DPS)
                                         for e in edges(small_beta_product())]
    rec["laws"]["multihead_beta_0.05"] = [mpmath.nstr(e, DPS) for e in multihead_edges()]
    OUT.write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
