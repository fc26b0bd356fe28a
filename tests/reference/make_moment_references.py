"""High-order moments of composed laws by contour integrals of their Stieltjes transforms.

Run from the repository root:

    python tests/reference/make_moment_references.py

It writes ``tests/reference/moment_references.json``.  The moments come from
the Cauchy integral of ``G`` on a circle ``|z| = R`` around the support,

    m_k = (1 / 2 pi i) oint z**k G(z) dz = R**(k+1) / N sum_j e^{i (k+1) theta_j} G(R e^{i theta_j}),

the trapezoid rule on ``N`` equispaced angles (``theta_j = 2 pi (j + 1/2)/N``,
conjugate pairs, so half of them are solved).  Its error is the aliasing of
``m_{k+N}``: below ``(r/R)**N`` relative to ``R**k`` for a support in
``[-r, r]``; the sum cancels ``k log10(R/r)`` digits, so the working
precision is ``DPS = 60`` digits and every value below is good to at least
the ``digits`` stored with it (the agreement of ``N`` and ``2 N`` points for
the closed-form cases, 30 digits; the solver's residual tolerance
``10**-(DPS - 5)`` and the cancellation for the law-solver cases).

No moment recursion is used, so the values check the library's moment
recursions (theory section 8.10) independently:

* ``mp_half_plus_semicircle``: ``MP(1, 1/2) ⊞ semicircle(1)``,
  ``G = G_MP(z - G)`` (the semicircle's ``R(g) = g``), ``G_MP`` in closed
  form, solved by ``mpmath.findroot`` from the fixed-point iterate;
* ``semicircle_16_plus_bernoulli``: ``semicircle(1/16) ⊞ (delta_-1 + delta_1)/2``,
  ``G = G_B(z - G/16)`` with ``G_B(w) = w/(w**2 - 1)``;
* ``multihead``: ``freeattn.multihead_law(1, heads=4, gamma_k=gamma_v=1/2,
  gamma_o=1)``, ``G`` from the law's own arbitrary-precision solver of its
  subordination tower (``_mp_stieltjes``, the hook of ``stieltjes_mp``, theory
  section 8.8, at points exactly on the circle; a solve of the subordination
  equations, not of moments);
* ``causal``: ``freeattn.causal_law(1, 1)``, ``G`` from the float boundary-value
  solver (``freeattn.attention._causal.causal_stieltjes``), float64 sums on
  ``R = 1.05 r`` with 1024 points: good to about ``1e-10`` (the solver's
  ``1e-14`` times the cancellation ``1.05**60 = 19``, aliasing
  ``1.05**-1024 = 2e-22``; the same sum on ``R = 1.1 r`` agrees to 1.3e-10).

It takes about 55 s of CPU (the multi-head and causal solves dominate).
"""

import json
import pathlib
import sys

import mpmath
import numpy as np

DPS = 60
OUT = pathlib.Path(__file__).with_name("moment_references.json")


def _g_mp(w, v, c):
    """Stieltjes transform of MP(v, c) in mpmath, the branch with G ~ 1/w."""
    lo, hi = v * (1 - mpmath.sqrt(c)) ** 2, v * (1 + mpmath.sqrt(c)) ** 2
    sq = mpmath.sqrt(w - lo) * mpmath.sqrt(w - hi)
    b = w - v * (1 - c)
    big, small = b + sq, b - sq
    return 2 / big if abs(big) >= abs(small) else small / (2 * c * v * w)


def _solve_fixed_point(step, z):
    """``G = step(G, z)``: iterate from ``1/z``, then polish with findroot."""
    g = 1 / z
    for _ in range(200):
        g_new = step(g, z)
        if abs(g_new - g) < mpmath.mpf(10) ** (-20) * abs(g):
            g = g_new
            break
        g = g_new
    return mpmath.findroot(lambda t: t - step(t, z), g, tol=mpmath.mpf(10) ** (-(DPS - 5)))


def _contour_moments(g_upper, radius, ks, n_points):
    """Trapezoid rule on ``|z| = radius``: moments ``m_k`` for ``k in ks``.

    ``g_upper(z)`` is evaluated on the upper half; the lower half is its conjugate.
    """
    radius = mpmath.mpf(radius)
    half = n_points // 2
    thetas = [2 * mpmath.pi * (j + mpmath.mpf(1) / 2) / n_points for j in range(half)]
    values = [g_upper(radius * mpmath.expj(t)) for t in thetas]
    out = {}
    for k in ks:
        acc = mpmath.mpf(0)
        for t, g in zip(thetas, values):
            acc += 2 * mpmath.re(mpmath.expj((k + 1) * t) * g)
        out[k] = radius ** (k + 1) * acc / n_points
    return out


def closed_form_case(step, radius, ks, n_points):
    """Moments at ``n_points`` and ``2 n_points``; their agreement gives the digits."""
    coarse = _contour_moments(lambda z: _solve_fixed_point(step, z), radius, ks, n_points)
    fine = _contour_moments(lambda z: _solve_fixed_point(step, z), radius, ks, 2 * n_points)
    rows = []
    for k in ks:
        err = abs(coarse[k] - fine[k])
        scale = max(abs(fine[k]), mpmath.mpf(radius) ** k * mpmath.mpf(10) ** (-DPS + 10))
        digits = int(min(30, -mpmath.log10(err / scale))) if err else 30
        rows.append({"k": k, "moment": mpmath.nstr(fine[k], 40), "digits": digits})
    return rows


def main():
    mpmath.mp.dps = DPS
    out = {"dps": DPS, "command": "python tests/reference/make_moment_references.py",
           "method": "trapezoid rule for the Cauchy integral of G on |z| = R", "cases": {}}

    half = mpmath.mpf(1) / 2
    out["cases"]["mp_half_plus_semicircle"] = {
        "law": "free_additive(marchenko_pastur(1, 0.5), semicircle(1))", "radius": 6.5,
        "rows": closed_form_case(lambda g, z: _g_mp(z - g, 1, half), 6.5,
                                 [1, 2, 10, 60, 80, 120, 150], 600)}

    def bernoulli_step(g, z):
        w = z - g / 16
        return w / (w * w - 1)
    out["cases"]["semicircle_16_plus_bernoulli"] = {
        "law": "free_additive(semicircle(1/16), point_masses([-1, 1], [0.5, 0.5]))",
        "radius": 2.0,
        "rows": closed_form_case(bernoulli_step, 2.0, [2, 4, 40, 100], 600)}

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import freeattn
    from freeattn.attention import _causal

    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)
    radius = 1.5 * law.support()[1]
    n = 160
    ks = [1, 2, 20, 100, 150]
    # the law's mpmath hook (what stieltjes_mp calls) at points exactly on the circle
    with mpmath.workdps(DPS):
        mh = _contour_moments(law._mp_stieltjes, radius, ks, n)
    # digits: the solver's residual 10**-(DPS - 5) times the cancellation (R/r)**k, and the
    # aliasing (r/R)**n = 1.5**-160 ~ 1e-28 relative to R**k
    rows = []
    for k in ks:
        loss = float(k * mpmath.log10(radius / law.support()[1]))
        digits = int(min(25, DPS - 10 - loss))
        rows.append({"k": k, "moment": mpmath.nstr(mh[k], 40), "digits": digits})
    out["cases"]["multihead"] = {
        "law": "multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)",
        "radius": float(radius), "points": n, "rows": rows}

    # causal: float solver, float sums
    edge = freeattn.causal_law(1.0, 1.0).support()[1]
    radius_c = 1.05 * edge
    nc = 1024
    theta = 2 * np.pi * (np.arange(nc // 2) + 0.5) / nc
    zc = radius_c * np.exp(1j * theta)
    gc = _causal.causal_stieltjes(1.0, 1.0, zc)
    rows = []
    for k in (1, 2, 12, 30, 60):
        val = radius_c ** (k + 1) * np.sum(2 * (np.exp(1j * (k + 1) * theta) * gc).real) / nc
        rows.append({"k": k, "moment": repr(float(val)), "digits": 10})
    out["cases"]["causal"] = {"law": "causal_law(1.0, 1.0)", "radius": float(radius_c),
                              "points": nc, "rows": rows}

    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
