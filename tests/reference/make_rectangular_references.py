"""30-digit references for the rectangular free additive convolution (theory note 16).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_rectangular_references.py

It writes ``tests/reference/rectangular_references.json`` with, as decimal
strings at ``DPS`` = 30 digits of working precision:

- ``gaussian``: two independent ``p x n`` Gaussian matrices with entry variance
  ``1/n`` add to one of variance ``2/n`` (theory eq. (16.13)), so
  ``MP_sv(1, λ) ⊞_λ MP_sv(1, λ)`` is the singular-value law of ``MP(2, λ)``: its
  edges ``sqrt(2) (1 -+ sqrt(λ))`` and the closed-form density
  ``2 s sqrt((B - s**2)(s**2 - A)) / (2 pi λ v s**2)`` (``v = 2``,
  ``A, B = v (1 -+ sqrt(λ))**2``) at fixed fractions of the support;
- ``information_plus_noise``: ``(point masses) ⊞_λ MP_sv(σ², λ)``, the singular
  values of ``R + σ X/sqrt(n)`` with ``R`` of fixed singular values: the
  Dozier-Silverstein equation (theory eq. (16.14)) for the Stieltjes transform
  ``m`` of the squared singular values, solved by ``mpmath.findroot`` at the
  points (branch ``Im m > 0``), and the edges as the real solutions ``(m, z)``
  of ``P(m, z) = 0 = dP/dm`` (two roots meet);
- ``moments``: ``E[s**2k]``, ``k = 1..8``, of ``point_masses([1/2, 3/2]) ⊞_{1/2}
  point_masses([1])`` (the Monte Carlo case of the tests) in exact rational
  arithmetic from the additivity of the rectangular free cumulants (theory
  eqs. (16.11)-(16.12), a series computation with ``fractions.Fraction``, written
  here independently of ``freeattn/compose/_rectangular.py``).

Only the *starting points* of the Dozier-Silverstein solves come from
freeattn's float solver (``-G`` of the squared law and the edges), so the
references check freeattn's digits on an equation freeattn does not solve;
each root is accepted when its residual is below ``10**-(DPS - 5)``.
"""

import json
import pathlib
from fractions import Fraction

import mpmath

import freeattn

DPS = 30
OUT = pathlib.Path(__file__).with_name("rectangular_references.json")
#: Fractions of the support (lo + f (hi - lo)) at which densities are stored.
FRACTIONS = ("0.05", "0.25", "0.5", "0.75", "0.95")
GAUSSIAN_RATIOS = ("1", "0.5", "0.2")
#: (singular values of R, weights, noise variance sigma^2, ratio)
INFO_CASES = (
    (("1",), ("1",), "1", "0.5"),
    (("1.5",), ("1",), "0.5", "1"),
    (("1", "3"), ("0.3", "0.7"), "0.09", "0.3"),
)
MOMENT_ORDER = 8


def _s(x):
    return mpmath.nstr(x, DPS, min_fixed=-5, max_fixed=5)


def gaussian():
    out = []
    for lam_s in GAUSSIAN_RATIOS:
        lam = mpmath.mpf(lam_s)
        v = mpmath.mpf(2)
        r = mpmath.sqrt(lam)
        lo_s, hi_s = mpmath.sqrt(v) * (1 - r), mpmath.sqrt(v) * (1 + r)
        a, b = v * (1 - r) ** 2, v * (1 + r) ** 2
        points, dens = [], []
        for f in FRACTIONS:
            s = lo_s + mpmath.mpf(f) * (hi_s - lo_s)
            x = s * s
            points.append(s)
            dens.append(2 * s * mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * lam * v * x))
        out.append({"ratio": lam_s, "edges": [_s(lo_s), _s(hi_s)],
                    "points": [_s(p) for p in points], "density": [_s(d) for d in dens]})
    return out


def _ds(values, weights, sig2, lam):
    """``P(m, z) = m - sum_i w_i / (t_i/(1 + σ² λ m) - (1 + σ² λ m) z + σ² (1 - λ))``."""
    ts = [mpmath.mpf(v) ** 2 for v in values]
    ws = [mpmath.mpf(w) for w in weights]
    sig2, lam = mpmath.mpf(sig2), mpmath.mpf(lam)

    def p(m, z):
        u = 1 + sig2 * lam * m
        return m - mpmath.fsum(w / (t / u - u * z + sig2 * (1 - lam)) for t, w in zip(ts, ws))
    return p


def information_plus_noise():
    out = []
    for values, weights, sig2, lam in INFO_CASES:
        law = freeattn.rectangular_free_additive(
            freeattn.point_masses([float(v) for v in values], [float(w) for w in weights]),
            freeattn.marchenko_pastur(float(sig2), float(lam)).singular_values(), float(lam))
        sq = law.squared()
        p = _ds(values, weights, sig2, lam)
        tol = mpmath.mpf(10) ** (-(DPS - 5))
        edges = []
        for lo, hi in law.intervals():
            for e in (lo, hi):
                if e == 0.0:
                    edges.append(mpmath.mpf(0))
                    continue
                z0 = e * e
                m0 = -complex(sq.stieltjes(z0)).real
                sol = mpmath.findroot(
                    [lambda m, z: p(m, z), lambda m, z: mpmath.diff(lambda mm: p(mm, z), m)],
                    (mpmath.mpf(m0), mpmath.mpf(z0)))
                m_e, z_e = sol[0], sol[1]
                assert abs(p(m_e, z_e)) < tol, (values, e)
                edges.append(mpmath.sqrt(z_e))
        points, dens = [], []
        for k in range(0, len(edges), 2):
            lo_s, hi_s = edges[k], edges[k + 1]
            for f in FRACTIONS:
                s = lo_s + mpmath.mpf(f) * (hi_s - lo_s)
                x = s * s
                g0 = complex(sq.stieltjes(float(x)))
                m = mpmath.findroot(lambda mm: p(mm, x), mpmath.mpc(-g0.real, -g0.imag))
                assert abs(p(m, x)) < tol and m.imag > 0, (values, s, m)
                points.append(s)
                dens.append(2 * s * m.imag / mpmath.pi)
        out.append({"values": list(values), "weights": list(weights), "sigma2": sig2,
                    "ratio": lam, "edges": [_s(e) for e in edges],
                    "points": [_s(q) for q in points], "density": [_s(d) for d in dens]})
    return out


# --- exact rectangular cumulants (theory eqs. (16.11)-(16.12)) -------------------

def _mul(a, b, n):
    return [sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(n + 1)]


def _reversion(f, n):
    """``g`` with ``f(g(w)) = w`` for ``f = z + f_2 z**2 + ...`` (orders 0..n)."""
    g = [Fraction(0)] * (n + 1)
    g[1] = Fraction(1)
    for _ in range(n):
        acc = [Fraction(0)] * (n + 1)
        power = [Fraction(1)] + [Fraction(0)] * n
        for k in range(1, n + 1):
            power = _mul(power, g, n)
            if k >= 2:
                acc = [x + f[k] * y for x, y in zip(acc, power)]
        g = [-x for x in acc]
        g[1] += 1
    return g


def _inverse(a, n):
    a = list(a) + [Fraction(0)] * (n + 1)
    out = [Fraction(0)] * (n + 1)
    out[0] = 1 / a[0]
    for k in range(1, n + 1):
        out[k] = -sum(a[j] * out[k - j] for j in range(1, k + 1)) / a[0]
    return out


def _quadratic(rhs, lam, n):
    """``x`` with ``(1 + lam) x + lam x**2 = rhs``, ``x_0 = 0``, order by order."""
    x = [Fraction(0)] * (n + 1)
    for k in range(1, n + 1):
        sq = sum(x[i] * x[k - i] for i in range(1, k))
        x[k] = (rhs[k] - lam * sq) / (1 + lam)
    return x


def cumulants(moments, lam):
    n = len(moments)
    m = [Fraction(0)] + list(moments)
    mm = _mul(m, m, n)
    t = [(1 + lam) * m[i] + lam * mm[i] for i in range(n + 1)]
    t[0] += 1
    h = [Fraction(0)] + t
    hinv = _reversion(h, n + 1)
    k = _inverse(hinv[1:], n)
    k[0] -= 1
    return _quadratic(k, lam, n)[1:]


def moments_from(cum, lam):
    n = len(cum)
    c = [Fraction(0)] + list(cum)
    cc = _mul(c, c, n)
    k = [(1 + lam) * c[i] + lam * cc[i] for i in range(n + 1)]
    k[0] += 1
    hinv = [Fraction(0)] + _inverse(k, n)
    h = _reversion(hinv, n + 1)
    t = h[1:]
    t[0] -= 1
    return _quadratic(t, lam, n)[1:]


def moments():
    lam = Fraction(1, 2)
    n = MOMENT_ORDER
    ma = [(Fraction(1, 2) ** (2 * k) + Fraction(3, 2) ** (2 * k)) / 2 for k in range(1, n + 1)]
    mb = [Fraction(1)] * n
    total = [x + y for x, y in zip(cumulants(ma, lam), cumulants(mb, lam))]
    mom = moments_from(total, lam)
    return {"a": {"values": ["0.5", "1.5"], "weights": ["0.5", "0.5"]},
            "b": {"values": ["1"], "weights": ["1"]}, "ratio": "0.5",
            "even_moments": [f"{q.numerator}/{q.denominator}" for q in mom]}


def main():
    with mpmath.workdps(DPS):
        payload = {"dps": DPS, "gaussian": gaussian(),
                   "information_plus_noise": information_plus_noise(), "moments": moments()}
    OUT.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
