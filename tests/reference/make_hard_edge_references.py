"""mpmath references next to the hard edge and beside a support split of the attention law.

Run from the repository root:

    python tests/reference/make_hard_edge_references.py

It writes ``tests/reference/hard_edge_references.json`` (40 digits).  Like
``make_law_references.py`` it uses only the transcendental Silverstein
equation (theory eq. (5.3)) with the closed-form Marchenko-Pastur transform of
the population (eq. (5.5)), ``x = -u**2 m_H(u)`` in normalized units, and no
freeattn numerics:

* ``G = 1/u`` at ``z = extent * 10**-k * exp(i phi)`` next to the hard edge at
  0, where ``u`` is the root of ``-u**2 m_H(u) = z`` that ``mpmath.findroot``
  reaches from ``u = sqrt(-z / m_H(0))`` (solved for ``v = u / sqrt(-z /
  m_H(0))`` with the residual relative to ``z``; the script asserts ``Im u >=
  0``, real only in a gap of the support, and the residual);
* the density ``-Im(1/u)/pi`` beside the gap of ``beta = 1e-3``, ``gamma =
  0.9975556650172209`` (relative width 3.7e-10 at 4.3e-9), at ``e (1 -+ 10**-k)``
  from both edges of the gap, with ``u`` continued in ``Im z`` as in
  ``make_law_references.py``.
"""

import json
from pathlib import Path

import mpmath

from make_law_references import edges, m_h, population, solve_u

DPS = 40
HARD_EDGE_CASES = [(1e-8, 1.0), (1e-8, 3.0), (1e-8, 0.5), (1.0, 1.0), (0.5, 50.0)]
HARD_EDGE_EXPONENTS = [40, 30, 20, 14, 10, 7]
PHASES = ["0", "0.3", "3.0"]
SPLIT_CASE = (1e-3, 0.9975556650172209)
SPLIT_EXPONENTS = [3, 4, 5, 6, 7, 8]
NEWTON_STEPS = 60
RAY_STEPS_PER_DECADE = 8
#: Relative residual every reference root must reach (the references are
#: compared with float64 results; measured 1e-41 to 8e-27 along the rays).
RESIDUAL_DIGITS = 24


def hard_edge_ray(extent, phi, a, b, lam):
    """``{k: (z, G)}`` along ``z = extent 10**-k e^{i phi}``, ``k = 40 ... 7``.

    At ``k = 40`` the start is the local model ``u = sqrt(-z / m_H(0))`` (upper
    half-plane root); each step of ``10**(1/8)`` in ``|z|`` starts from ``u`` scaled
    by its square root (continuation along the ray keeps the branch).  Newton
    (``mpmath.diff`` for the derivative) on ``v = u / s`` with the residual
    relative to ``z``.
    """
    m0 = m_h(mpmath.mpf(0), a, b, lam)
    out, u = {}, None
    top, bottom = max(HARD_EDGE_EXPONENTS), min(HARD_EDGE_EXPONENTS)
    for j in range(RAY_STEPS_PER_DECADE * (top - bottom) + 1):
        k = mpmath.mpf(top) - mpmath.mpf(j) / RAY_STEPS_PER_DECADE
        z = extent * mpmath.mpf(10) ** -k * mpmath.expj(mpmath.mpf(phi))
        s = mpmath.sqrt(-z / m0)
        if s.imag < 0:
            s = -s
        ratio = mpmath.mpf(10) ** (mpmath.mpf(1) / (2 * RAY_STEPS_PER_DECADE))
        start = mpmath.mpc(1, 1e-6) if u is None else u * ratio / s
        v = start
        for _ in range(NEWTON_STEPS):
            def f(v):
                return (-(s * v) ** 2 * m_h(s * v, a, b, lam) - z) / z
            step = f(v) / mpmath.diff(f, v)
            v -= step
            if abs(step) < mpmath.mpf(10) ** -(DPS - 4) * abs(v):
                break
        u = s * v
        # real in a gap of the support (beta = 1e-8, gamma = 0.5: [0, 1e-16] and [0.057, 8.8])
        assert u.imag > -mpmath.mpf(10) ** -(DPS - 5) * abs(u), (phi, k, u, z)
        res = abs(-u * u * m_h(u, a, b, lam) - z) / abs(z)
        assert res < mpmath.mpf(10) ** -RESIDUAL_DIGITS, (phi, k, res)
        if j % RAY_STEPS_PER_DECADE == 0:
            out[int(k)] = (z, 1 / u)
    return out


def main():
    out = {"dps": DPS, "command": "python tests/reference/make_hard_edge_references.py",
           "units": "normalized: x / theta1", "hard_edge": [], "split": {}}
    with mpmath.workdps(DPS):
        for beta, gamma in HARD_EDGE_CASES:
            theta1, a, b, lam = population(beta, gamma)
            extent = edges(a, b, lam)[-1]
            rows = []
            for phi in PHASES:
                ray = hard_edge_ray(extent, phi, a, b, lam)
                for k in HARD_EDGE_EXPONENTS:
                    z, g = ray[k]
                    rows.append([mpmath.nstr(z.real, DPS), mpmath.nstr(z.imag, DPS),
                                 mpmath.nstr(g.real, DPS), mpmath.nstr(g.imag, DPS)])
            out["hard_edge"].append({"beta": beta, "gamma": gamma,
                                     "extent": mpmath.nstr(extent, DPS), "G": rows})
        beta, gamma = SPLIT_CASE
        theta1, a, b, lam = population(beta, gamma)
        crit = edges(a, b, lam)
        e1, e2, top = crit[0], crit[1], crit[-1]
        rows = []
        for side, e in ((-1, e1), (1, e2)):
            for k in SPLIT_EXPONENTS:
                x = e * (1 + side * mpmath.mpf(10) ** -k)
                u = solve_u(mpmath.mpc(x, 0), a, b, lam, top)
                rows.append([side, k, mpmath.nstr(x, DPS), mpmath.nstr((-1 / u).imag / mpmath.pi,
                                                                       DPS)])
        out["split"] = {"beta": beta, "gamma": gamma, "edges": [mpmath.nstr(e1, DPS),
                                                                mpmath.nstr(e2, DPS)],
                        "density": rows}
    path = Path(__file__).with_name("hard_edge_references.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
