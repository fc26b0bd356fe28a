"""40-digit references for the analytic subordination path (theory section 14).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_analytic_references.py

It writes ``tests/reference/analytic_references.json``: for each case the edges
of every band (the real solutions ``(w, x)`` of the fold condition, theory
eq. (14.5)) and the density ``-Im G(x + i0)/pi`` at the midpoint and the
quarter points of every band (the complex solution of eq. (14.1) or (14.4)),
as decimal strings with ``DPS`` = 40 digits of working precision.

Method: each equation is solved by ``mpmath.findroot`` at ``DPS`` digits with
its own mpmath transcription of the subordination maps (sums over the atoms,
the Marchenko-Pastur transform in closed form); only the *starting points* come
from freeattn's float solver, so the references check freeattn's digits, not
its choice of branch (the branch is checked by the tests: mass 1, moments, and
the Bernoulli case against the closed-form arcsine law).  Each root is accepted
when the residual is below ``10**-(DPS - 5)``.

The 500-atom population: ``numpy.random.default_rng(1).chisquare(3, 500)``,
equal weights 1/500, stored in the JSON (``atoms``) so the test does not
depend on NumPy's generator.
"""

import json
import pathlib

import mpmath
import numpy as np

import freeattn
import freeattn.compose._fixed_point
from freeattn.compose._analytic import analytic_additive, analytic_multiplicative

DPS = 40
OUT = pathlib.Path(__file__).with_name("analytic_references.json")


def _g_atoms(vals, wts, u):
    return mpmath.fsum(w / (u - a) for a, w in zip(vals, wts))


def _g_mp(v, c, u):
    lo, hi = v * (1 - mpmath.sqrt(c)) ** 2, v * (1 + mpmath.sqrt(c)) ** 2
    sq = mpmath.sqrt(u - lo) * mpmath.sqrt(u - hi)
    if mpmath.im(u) == 0 and mpmath.re(u) < lo:
        sq = -mpmath.sqrt((lo - u) * (hi - u))
    b = u - v * (1 - c)
    # the root with G ~ 1/u: (b - sq)/(2 c v u) with sq ~ u at infinity
    return (b - sq) / (2 * c * v * u)


def additive_phi(ga, gb):
    def phi(w, x):
        ha = 1 / ga(w) - w
        w2 = x + ha
        return x + 1 / gb(w2) - w2
    return phi


def multiplicative_phi(ga, gb):
    def k(g, w):
        return 1 / w - 1 / g(1 / w)

    def phi(w, x):
        u = 1 / x
        return u * k(gb, u * k(ga, w))
    return phi


def edges_and_density(law, phi, g_out):
    pr = law._problem
    out = {"edges": [], "density": []}
    for lo, hi in law.intervals():
        for e, side in ((lo, -1.0), (hi, 1.0)):
            xo = e + side * 1e-7 * law._xscale
            w = float(law._continue(np.array([xo]), np.zeros(1))[0].real)
            res = freeattn.compose._fixed_point.edge_newton(pr, np.array([w]), np.array([xo]))
            w0, x0 = res.value[0]

            def eqs(w, x):
                return [w - phi(w, x), 1 - mpmath.diff(lambda v: phi(v, x), w)]
            sol = mpmath.findroot(eqs, (mpmath.mpf(w0), mpmath.mpf(x0)))
            r = eqs(sol[0], sol[1])
            assert abs(r[0]) + abs(r[1]) < mpmath.mpf(10) ** (5 - DPS) * 1e5, r
            out["edges"].append(mpmath.nstr(sol[1], DPS))
        for f in (0.25, 0.5, 0.75):
            x = lo + f * (hi - lo)
            w = complex(law._continue(np.array([x]), np.zeros(1))[0])
            sol = mpmath.findroot(lambda v: v - phi(v, mpmath.mpf(x)), mpmath.mpc(w))
            assert abs(sol - phi(sol, mpmath.mpf(x))) < mpmath.mpf(10) ** (5 - DPS)
            g = g_out(sol, mpmath.mpf(x))
            out["density"].append([repr(x), mpmath.nstr(-mpmath.im(g) / mpmath.pi, DPS)])
    return out


def main():
    mpmath.mp.dps = DPS
    cases = {}
    # three-band discrete sum
    av, aw = [-1, 0, 2], [mpmath.mpf(3) / 10, mpmath.mpf(3) / 10, mpmath.mpf(4) / 10]
    bv, bw = [0, 1], [mpmath.mpf(1) / 2, mpmath.mpf(1) / 2]
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    ga = lambda u: _g_atoms(av, aw, u)  # noqa: E731
    gb = lambda u: _g_atoms(bv, bw, u)  # noqa: E731
    cases["three_band"] = edges_and_density(analytic_additive(a, b), additive_phi(ga, gb),
                                            lambda w, x: ga(w))
    # 500-atom population, ratio 1/2
    t = np.random.default_rng(1).chisquare(3, 500)
    pv = [mpmath.mpf(float(v)) for v in t]
    pw = [mpmath.mpf(1) / 500] * 500
    gm = lambda u: _g_mp(mpmath.mpf(1), mpmath.mpf(1) / 2, u)  # noqa: E731
    gp = lambda u: _g_atoms(pv, pw, u)  # noqa: E731
    law = analytic_multiplicative(freeattn.marchenko_pastur(1.0, 0.5),
                                  freeattn.point_masses(t, np.full(500, 1 / 500)))
    case = edges_and_density(law, multiplicative_phi(gm, gp),
                             lambda w, x: (1 / x) * gm(1 / w) / w)
    case["atoms"] = [repr(float(v)) for v in t]
    cases["population_500"] = case
    OUT.write_text(json.dumps({"dps": DPS, "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
