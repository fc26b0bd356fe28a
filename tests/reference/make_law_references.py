"""High-precision references for the attention law (independent of freeattn's solver).

Run from the repository root:

    python tests/reference/make_law_references.py

It writes ``tests/reference/law_references.json`` with its working precision
and this command.  Everything here is computed with mpmath from the
*transcendental* Silverstein equation (theory eq. (5.3)) with the closed-form
Marchenko-Pastur transform of the population (eq. (5.5)); it uses neither the
polynomial form (5.6), nor the critical-point cubic (6.3), nor any freeattn
numerics:

* density: ``mpmath.findroot`` on ``z = -u**2 m_H(u)`` by continuation in
  ``Im z`` from ``Im z = 8 * scale`` (where ``u ~ z``) down to ``1e-30``;
* edges: sign changes of ``dx/du`` (``mpmath.diff``) on a grid of real ``u`` in
  the gaps of the population support, refined by ``findroot``;
* CDF: mass of ``[0, x]`` as ``Im`` of the contour integral of ``m`` over the
  upper half-circle from 0 to ``x`` (``mpmath.quad``, tanh-sinh), divided by pi.
"""

import json
import sys
from pathlib import Path

import mpmath

DPS = 40
CDF_DPS = 25
CASES = [
    (1.0, 1.0), (0.5, 0.1), (2.0, 0.02), (0.001, 1.0), (4.0, 1.0), (1.0, 50.0),
    (0.3, 0.5),
    # beside the support split: a gap of relative width 3.7e-10 at 4.3e-9
    (0.001, 0.9975556650172209),
]
DENSITY_FRACTIONS = ["0.001", "0.05", "0.25", "0.5", "0.75", "0.95", "0.999"]
CDF_FRACTIONS = ["0.3", "0.7"]


def population(beta, gamma):
    """Normalized population ``H = a + b MP_lam`` (units of theta1), eq. (5.5)."""
    beta = mpmath.mpf(beta)
    theta1 = mpmath.expm1(beta ** 2)
    a = (theta1 - beta ** 2) / theta1
    b = beta ** 2 / theta1
    lam = 1 / mpmath.mpf(gamma)
    return theta1, a, b, lam


def m_h(u, a, b, lam):
    """True-branch Stieltjes transform of ``a + b MP_lam`` at ``u``."""
    w = (u - a) / b
    lo, hi = (1 - mpmath.sqrt(lam)) ** 2, (1 + mpmath.sqrt(lam)) ** 2
    sq = mpmath.sqrt(w - lo) * mpmath.sqrt(w - hi)
    return 2 / (-(w + lam - 1) - sq) / b


def solve_u(z, a, b, lam, top):
    """``u(z)`` for ``Im z >= 0`` by continuation in ``Im z`` (eq. (5.3), c = 1)."""
    def f(u, zz):
        return -u * u * m_h(u, a, b, lam) - zz

    target = z.imag if z.imag > 0 else mpmath.mpf(10) ** -30
    eta = 8 * top
    u = mpmath.findroot(lambda v: f(v, mpmath.mpc(z.real, eta)), mpmath.mpc(z.real, eta))
    while eta > target:
        eta = max(eta / 3, target)
        u = mpmath.findroot(lambda v: f(v, mpmath.mpc(z.real, eta)), u)
    assert abs(f(u, mpmath.mpc(z.real, target))) < mpmath.mpf(10) ** (-(mpmath.mp.dps - 8))
    assert u.imag >= 0
    return u


def edges(a, b, lam):
    """Critical values of ``x(u) = -u**2 m_H(u)`` on real ``u`` off supp H."""
    lo = a + b * (1 - mpmath.sqrt(lam)) ** 2
    hi = a + b * (1 + mpmath.sqrt(lam)) ** 2

    def x_of(u):
        return (-u * u * m_h(mpmath.mpf(u), a, b, lam)).real

    def dx(u):
        return mpmath.diff(x_of, u)

    gaps = [(hi * (1 + mpmath.mpf(10) ** -12), 40 * hi)]
    if lam > 1:
        gaps += [(a * (1 + mpmath.mpf(10) ** -12), lo * (1 - mpmath.mpf(10) ** -12))]
    crit = []
    for g0, g1 in gaps:
        grid = [g0 * (g1 / g0) ** (mpmath.mpf(k) / 4000) for k in range(4001)]
        vals = [dx(u) for u in grid]
        for k in range(4000):
            if vals[k] * vals[k + 1] < 0:
                u = mpmath.findroot(dx, (grid[k], grid[k + 1]), solver="anderson")
                crit.append(x_of(u))
    return sorted(crit)


def density(x, a, b, lam, top):
    u = solve_u(mpmath.mpc(x, 0), a, b, lam, top)
    return (-1 / u).imag / mpmath.pi


def cdf(x, a, b, lam, top):
    """Mass of [0, x]: Im of the integral of m over the half-circle above [0, x]."""
    r = mpmath.mpf(x) / 2

    def integrand(phi):
        zeta = r + r * mpmath.expj(phi)
        dzeta = 1j * r * mpmath.expj(phi)
        u = solve_u(zeta, a, b, lam, top)
        return (-1 / u) * dzeta

    val = mpmath.quad(integrand, [mpmath.pi, mpmath.pi / 2, 0])
    return (val.imag / mpmath.pi)


def main():
    out = {"dps": DPS, "cdf_dps": CDF_DPS,
           "command": "python tests/reference/make_law_references.py",
           "units": "normalized: x / theta1 (theta1 = exp(beta**2) - 1)",
           "cases": []}
    for beta, gamma in CASES:
        with mpmath.workdps(DPS):
            theta1, a, b, lam = population(beta, gamma)
            crit = edges(a, b, lam)
            top = crit[-1]
            case = {"beta": beta, "gamma": gamma, "theta1": mpmath.nstr(theta1, DPS),
                    "critical_values": [mpmath.nstr(c, DPS) for c in crit], "density": []}
            # Support: [0, c0], [c1, c2], ... (hard edge at 0 for c = 1).
            ends = [mpmath.mpf(0)] + crit
            intervals = [(ends[k], ends[k + 1]) for k in range(0, len(ends) - 1, 2)]
            case["intervals"] = [[mpmath.nstr(lo, DPS), mpmath.nstr(hi, DPS)]
                                 for lo, hi in intervals]
            for lo, hi in intervals:
                for frac in DENSITY_FRACTIONS:
                    x = lo + (hi - lo) * mpmath.mpf(frac)
                    case["density"].append([mpmath.nstr(x, DPS),
                                            mpmath.nstr(density(x, a, b, lam, top), DPS)])
        case["cdf"] = []
        if beta >= 0.3:
            with mpmath.workdps(CDF_DPS):
                theta1, a, b, lam = population(beta, gamma)
                for frac in CDF_FRACTIONS:
                    x = mpmath.mpf(frac) * mpmath.mpf(case["critical_values"][-1])
                    case["cdf"].append([mpmath.nstr(x, CDF_DPS),
                                        mpmath.nstr(cdf(x, a, b, lam, top), CDF_DPS)])
        out["cases"].append(case)
        print(f"beta={beta} gamma={gamma}: {len(crit)} critical values", file=sys.stderr)
    path = Path(__file__).with_name("law_references.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
