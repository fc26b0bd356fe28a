"""High-precision references for composed spectral laws (independent of freeattn).

Run from the repository root:

    python tests/reference/make_composition_references.py

It writes ``tests/reference/composition_references.json``: for every case of
``CASES`` below, the support (bands, atoms with their masses, edges), the density
at fixed fractions of each band, the CDF at a few points, the exact moments
m1..m6 and free cumulants k1..k6, and the Stieltjes transform at a few complex
points.  Values are decimal strings with ``DPS`` = 40 significant digits (the
CDF and the quadrature checks: ``CDF_DPS`` = 30 digits of working precision,
accurate to better than 1e-25); atom masses, moments and free cumulants are also
stored exactly.  Each case carries a one-line ``summary`` of the support found.
Nothing here imports freeattn: only sympy (exact algebra) and mpmath (arithmetic
at 40 digits).  It takes about 3.5 minutes (85 s of CPU) on the project's 2-core
machine.

Conventions
-----------
``G(z) = int dmu(x) / (z - x)``, ``G ~ 1/z`` at infinity, ``Im G < 0`` for
``Im z > 0``; density ``-Im G(x + i0) / pi``.

* ``semicircle(s2)``: support ``[-2 sqrt(s2), 2 sqrt(s2)]``, ``R(g) = s2 g``;
* ``marchenko_pastur(v, c)``: eigenvalues of ``X X^T / N`` (X p x N, entries of
  variance v, c = p/N), ``R(g) = v / (1 - c v g)``, ``S(w) = 1 / (v (1 + c w))``;
* ``point_masses(a, w)``: ``sum_i w_i delta_{a_i}``, ``G = sum_i w_i / (z - a_i)``;
* ``sample_covariance(H, c)``: eigenvalues of ``T^1/2 X X^T T^1/2 / N``, spectrum
  of T -> H, p/N -> c;
* ``free_additive(a, b) = a boxplus b`` and ``free_multiplicative(a, b) = a boxtimes b``.

Method
------
1. Algebraic equation.  Every law is described by an irreducible polynomial
   ``Q(z, G) = 0`` satisfied by its Stieltjes transform, derived with sympy:

   * semicircle: ``z = R(G) + 1/G``, i.e. ``s2 G^2 - z G + 1 = 0``;
   * Marchenko-Pastur: ``z = v / (1 - c v G) + 1/G`` (numerator);
   * point masses: ``G prod_i (z - a_i) - sum_i w_i prod_{j != i} (z - a_j) = 0``;
   * ``a boxplus b``, subordination (Biane): ``G = G_a(w1) = G_b(w2)`` with
     ``w1 + w2 = z + 1/G``.  When ``b`` has an explicit R-transform,
     ``w2 = R_b(G) + 1/G`` and so ``w1 = z - R_b(G)``: ``Q_a(z - R_b(G), G) = 0``;
     when both have one, ``z = R_a(G) + R_b(G) + 1/G``; when neither has (two
     atomic laws), ``w1`` is eliminated by the resultant of ``Q_a(w1, G)`` and
     ``Q_b(z + 1/G - w1, G)`` in ``w1``;
   * ``a boxtimes b``, S-transforms (Voiculescu): with ``psi(u) = sum_k m_k u^k``,
     ``chi = psi^{-1}``, ``S(w) = chi(w) (1 + w) / w``, and ``psi(1/z) = z G - 1``,
     a law's equation in ``(w, S)`` is ``Q((1 + w)/(w S), w S) = 0``; the product
     satisfies ``z w S_a(w) S_b(w) = 1 + w`` with ``w = z G - 1``.  When ``a`` has
     an explicit S-transform this gives ``Q_b(z S_a(w), G / S_a(w)) = 0``, and when
     both have one, ``z w S_a S_b = 1 + w``;
   * ``sample_covariance(H, c)``, Silverstein's equation (Silverstein & Bai 1995)
     in this sign convention: ``G(z) = int dH(t) / (z - t (1 - c + c z G))``, i.e.
     with ``u = 1 - c + c z G``: ``Q_H(z/u, u G) = 0``.  This derivation is
     independent of the boxtimes one; the script checks that both give the same
     polynomial for ``sample_covariance(H, c) = marchenko_pastur(1, c) boxtimes H``.

   The numerator is factored over Q and the factor carrying the Stieltjes branch
   (a root ``G`` with ``|z G - 1| < 1e-6`` at ``z = 10^10``) is kept: ``P(z, G)``.

2. Branch.  ``G(z)`` is the root of ``P(z, .)`` reached by continuation from
   ``z = x + i Y`` (``Y = 1000 (1 + sqrt(m2))``, where the root is picked next to
   the moment series ``sum_k m_k / z^(k+1)``) down the vertical line to the target
   ``Im z``: at each step ``mpmath.polyroots`` (40 digits) and the root nearest a
   predictor (quadratic extrapolation of ``log G`` in ``log Im z``); a step is
   accepted only when the nearest root is at most 0.1 times as far from the
   prediction as the second nearest, and moved by less than half its distance to
   the other roots, otherwise it is shortened (``Law.track``).  On the real axis
   the path goes down to ``Im z = 1e-30`` and takes a last step to ``Im z = 0``
   (the limit ``G(x + i0)``; that root must be a million times closer than any other).

3. Edges, bands and atoms.  Candidates are the real roots (sympy's exact real-root
   isolation, evaluated to 55 digits) of the discriminant of ``P`` in ``G`` and of its
   leading coefficient in ``G``.  A candidate is a left / right support edge when the
   density (continuation) is zero on one side and positive on the other, at a
   distance ``delta`` (``DELTA_REL`` times the scale, and well below the spacing of the
   candidates); both positive marks an interior point, both zero an outside point.
   (Where all roots of ``P(x, .)`` are real the density is 0 without continuation.)
   An atom can only sit where the leading coefficient vanishes; its mass is
   ``V(r) = lim (z - r) G(z)``, a root of the lowest-order part of ``P(z, V/(z - r))``
   at ``z -> r`` (exact, sympy); the Stieltjes branch's ``V`` (continued to
   ``z = r + i 1e-10`` and ``r + i 1e-20``) tells which root (``atom_mass``).

4. Density at ``DENSITY_FRACTIONS`` of each band, by the continuation of 2.  For the
   quadratures, the density at a real point is taken as the only root of ``P(x, .)``
   with a negative imaginary part (``P`` has real coefficients; the script checks at
   every density point that this agrees with the continuation, and falls back to the
   continuation where the root is not unique).

5. CDF ``F(x) = mu((-inf, x])`` (atoms included) at the midpoint and right end of
   each band and the midpoint of each gap: ``mpmath.quad`` (tanh-sinh) of the density
   at ``CDF_DPS`` digits over each half band, in the variable ``u`` with
   ``x = edge + (mid - edge) u^3`` (which removes the hard-edge singularities), with
   any real discriminant root inside a band as a breakpoint.  The total mass (atoms +
   all bands) must be 1 to 1e-25; ``m1`` and ``m2`` are also integrated and stored for
   comparison with the exact moments.

6. Moments and free cumulants, exact rationals, two independent ways that must
   agree: (A) from the constituents (free cumulants add under boxplus; S-transform
   power series multiply under boxtimes and for the sample covariance, with the MP
   free cumulants ``c^(n-1) v^n``, semicircle ``k2 = s2``, point masses' moments
   ``sum w a^k``); (B) the power series of ``P(z, G) = 0`` at ``z = infinity``.
   Free cumulants from moments by ``M(t) = C(t M(t))``.

7. Stieltjes transform at ``x + 0.1 i`` and ``x + 1e-3 i`` (``x`` the midpoint of each
   band) and at ``3 + 2 i``, by continuation; ``G(3 + 2i)`` is cross-checked against
   the quadrature ``sum atoms + int rho(x) dx / (z - x)`` at ``CDF_DPS`` digits.

Cross-checks against closed forms (stored under ``cross_checks``): case 2 against
Penson & Zyczkowski, Phys. Rev. E 83, 061118 (2011), eq. (11) with s = 2 and the
Fuss-Catalan moments ``binom(3k, k)/(2k + 1)``; case 8 against the arcsine law on
``[0, 2]``; case 9 against ``semicircle(3)``; every Marchenko-Pastur constituent
(and ``sample_covariance(delta_1, c)``) against the MP closed form, through the same
pipeline; the Silverstein and boxtimes polynomials against each other.
"""

import json
import sys
import time
from pathlib import Path

import mpmath
import sympy as sp

DPS = 40
CDF_DPS = 30
N_MOMENTS = 6
DENSITY_FRACTIONS = ["0.001", "0.01", "0.05", "0.25", "0.5", "0.75", "0.95", "0.99", "0.999"]
# Continuation: the real-axis path stops at ETA_FLOOR before its last step to Im z = 0.
ETA_FLOOR = mpmath.mpf(10) ** -30
# Candidate edges are classified by the density at +-DELTA_REL * scale (square-root
# edges: density ~ 1e-6 there, far above the ~1e-38 round-off of an outside point).
DELTA_REL = mpmath.mpf(10) ** -12
# Density threshold separating "positive" from "zero" in that classification.
POSITIVE_DENSITY = mpmath.mpf(10) ** -25

# Guard bits of mpmath.polyroots: enough to separate the nearly double roots met at
# 1e-12 from an edge (their distance ~1e-6); the root kept is Newton-polished.
ROOT_EXTRAPREC = 64

z, G = sp.symbols("z G")
W, OMEGA = sp.symbols("w omega")


# --------------------------------------------------------------------------- laws
def semicircle(variance):
    return {"op": "semicircle", "variance": variance}


def marchenko_pastur(variance, ratio):
    return {"op": "marchenko_pastur", "variance": variance, "ratio": ratio}


def point_masses(values, weights):
    return {"op": "point_masses", "values": list(values), "weights": list(weights)}


def free_additive(a, b):
    return {"op": "free_additive", "args": [a, b]}


def free_multiplicative(a, b):
    return {"op": "free_multiplicative", "args": [a, b]}


def sample_covariance(population, ratio):
    return {"op": "sample_covariance", "population": population, "ratio": ratio}


# Parameters are decimal strings (read exactly as rationals by the script; written
# to the JSON as numbers).
CASES = [
    {"id": "mp_plus_sc",
     "law": free_additive(marchenko_pastur("1", "0.5"), semicircle("1"))},
    {"id": "mp_times_mp_square",
     "law": free_multiplicative(marchenko_pastur("1", "1"), marchenko_pastur("1", "1"))},
    {"id": "mp_times_mp",
     "law": free_multiplicative(marchenko_pastur("1", "0.5"), marchenko_pastur("1", "0.25"))},
    {"id": "sc_two_atoms",
     "law": free_additive(semicircle("1"), point_masses(["-3", "3"], ["0.5", "0.5"]))},
    {"id": "sc_two_atoms_asym",
     "law": free_additive(semicircle("0.25"), point_masses(["0", "1"], ["0.3", "0.7"])),
     # Why it splits: with w = z - s2 G, z(w) = w + s2 G_b(w) is increasing somewhere
     # between the atoms iff min_w (0.3/w^2 + 0.7/(1 - w)^2) = (0.3^(1/3) + 0.7^(1/3))^3
     # = 3.777... < 1/s2 = 4 (equal weights would give 4: the threshold).
     "note": "Splits: z(w) = w + s2 G_b(w) has z'(w) = 1 - s2 (0.3/w^2 + 0.7/(w - 1)^2) > 0 "
             "between the atoms since min (0.3/w^2 + 0.7/(1 - w)^2) = "
             "(0.3^(1/3) + 0.7^(1/3))^3 = 3.777 < 1/s2 = 4; z'(1/2) = 0 gives the edge "
             "z(1/2) = 3/10 exactly. Each band carries one atom's mass."},
    {"id": "samplecov_two_atoms",
     "law": sample_covariance(point_masses(["1", "10"], ["0.5", "0.5"]), "0.1")},
    {"id": "samplecov_two_atoms_wide",
     "law": sample_covariance(point_masses(["1", "3"], ["0.4", "0.6"]), "1.5")},
    {"id": "bernoulli_plus_bernoulli",
     "law": free_additive(point_masses(["0", "1"], ["0.5", "0.5"]),
                          point_masses(["0", "1"], ["0.5", "0.5"]))},
    {"id": "sc_plus_sc",
     "law": free_additive(semicircle("1"), semicircle("2"))},
    {"id": "mp_times_atoms",
     "law": free_multiplicative(marchenko_pastur("1", "0.3"),
                                point_masses(["1", "4"], ["0.5", "0.5"]))},
]


def _q(text):
    return sp.Rational(text)


def _json_law(law):
    """The law description with numbers instead of decimal strings."""
    out = {}
    for key, value in law.items():
        if key == "op":
            out[key] = value
        elif key in ("args",):
            out[key] = [_json_law(v) for v in value]
        elif key == "population":
            out[key] = _json_law(value)
        elif isinstance(value, list):
            out[key] = [_number(v) for v in value]
        else:
            out[key] = _number(value)
    return out


def _number(text):
    value = sp.Rational(text)
    return int(value) if value.q == 1 else float(text)


# ------------------------------------------------------------ exact power series
def _series_mul(a, b, n):
    out = [sp.Integer(0)] * (n + 1)
    for i, ai in enumerate(a[:n + 1]):
        if ai == 0:
            continue
        for j, bj in enumerate(b[:n + 1 - i]):
            out[i + j] += ai * bj
    return out


def _series_compose(outer, inner, n):
    """outer(inner(t)) for inner(0) = 0, truncated at t^n."""
    assert inner[0] == 0
    out = [sp.Integer(0)] * (n + 1)
    power = [sp.Integer(1)] + [sp.Integer(0)] * n
    for k, ck in enumerate(outer[:n + 1]):
        if k > 0:
            power = _series_mul(power, inner, n)
        out = [o + ck * p for o, p in zip(out, power)]
    return out


def _series_reverse(f, n):
    """Compositional inverse g of f (f(0) = 0, f'(0) != 0): f(g(t)) = t mod t^(n+1)."""
    assert f[0] == 0 and f[1] != 0
    g = [sp.Integer(0), 1 / f[1]] + [sp.Integer(0)] * (n - 1)
    for k in range(2, n + 1):
        residual = _series_compose(f, g, k)[k]
        g[k] = -residual / f[1]
    return g


def moments_to_cumulants(m):
    """Free cumulants k1..kn from moments m1..mn: M(t) = C(t M(t)) (m[0] = 1)."""
    n = len(m) - 1
    tm = [sp.Integer(0)] + m[:n]                     # t M(t)
    kappa = [sp.Integer(1)] + [sp.Integer(0)] * n
    for k in range(1, n + 1):
        partial = _series_compose(kappa, tm, n)
        kappa[k] = m[k] - partial[k]
    return kappa


def cumulants_to_moments(kappa):
    n = len(kappa) - 1
    m = [sp.Integer(1)] + [sp.Integer(0)] * n
    for _ in range(n):
        tm = [sp.Integer(0)] + m[:n]
        m = _series_compose(kappa, tm, n)
    return m


def _s_series(m, n):
    """S-transform series of a law with moments m (m1 != 0): S = chi(w)(1 + w)/w."""
    chi = _series_reverse([sp.Integer(0)] + m[1:n + 2], n + 1)   # chi(w) = w/m1 + ...
    chi_over_w = chi[1:n + 2]
    return _series_mul(chi_over_w, [sp.Integer(1), sp.Integer(1)], n)


def _moments_from_s(s, n):
    chi = [sp.Integer(0)] + _series_mul(s, [(-1) ** k for k in range(n + 1)], n)  # w S/(1+w)
    psi = _series_reverse(chi, n)
    return [sp.Integer(1)] + psi[1:n + 1]


def constituent_moments(law, n=N_MOMENTS + 2):
    """Route A: exact moments m0..mn from the constituents' transforms."""
    op = law["op"]
    if op == "semicircle":
        kappa = [sp.Integer(1), sp.Integer(0), _q(law["variance"])] + [sp.Integer(0)] * (n - 2)
        return cumulants_to_moments(kappa)
    if op == "marchenko_pastur":
        v, c = _q(law["variance"]), _q(law["ratio"])
        return cumulants_to_moments([sp.Integer(1)] + [c ** (k - 1) * v ** k
                                                       for k in range(1, n + 1)])
    if op == "point_masses":
        vals = [_q(a) for a in law["values"]]
        wts = [_q(w) for w in law["weights"]]
        return [sum(w * a ** k for a, w in zip(vals, wts)) for k in range(n + 1)]
    if op == "free_additive":
        ka = moments_to_cumulants(constituent_moments(law["args"][0], n))
        kb = moments_to_cumulants(constituent_moments(law["args"][1], n))
        return cumulants_to_moments([sp.Integer(1)] + [x + y for x, y in zip(ka[1:], kb[1:])])
    if op in ("free_multiplicative", "sample_covariance"):
        if op == "free_multiplicative":
            a, b = law["args"]
        else:
            a, b = marchenko_pastur("1", law["ratio"]), law["population"]
        sa = _s_series(constituent_moments(a, n + 2), n)
        sb = _s_series(constituent_moments(b, n + 2), n)
        return _moments_from_s(_series_mul(sa, sb, n), n)
    raise ValueError(op)


def series_moments(poly, n=N_MOMENTS + 2):
    """Route B: moments from the expansion of P(z, G) = 0 at z = infinity."""
    t = sp.Symbol("t")
    ms = sp.symbols(f"m1:{n + 1}")
    terms = poly.terms()                      # ((i, j), c) for c z^i G^j
    shift = max(i - j for (i, j), _ in terms)
    known = {}
    for k in range(1, n + 1):
        m_series = 1 + sum(known[j] * t ** j for j in range(1, k)) + ms[k - 1] * t ** k
        expr = sp.expand(sum(c * t ** (j - i + shift) * m_series ** j
                             for (i, j), c in terms))
        ptn = sp.Poly(expr, t)
        coeffs = dict(zip([mono[0] for mono in ptn.monoms()], ptn.coeffs()))
        for order in range(0, max(coeffs) + 1):
            ck = sp.expand(coeffs.get(order, 0))
            if ck == 0:
                continue
            # A nonzero coefficient below the one fixing m_k: P has no branch with
            # these moments (m_1..m_{k-1} wrong, or no branch G ~ 1/z at all).
            assert ck.has(ms[k - 1]), f"order {order} of P(1/t, t M(t)) gives {ck}"
            sol = sp.solve(ck, ms[k - 1])
            assert len(sol) == 1, (k, ck)
            known[k] = sp.Rational(sol[0])
            break
        else:
            raise AssertionError(f"moment m{k} not determined by P")
    return [sp.Integer(1)] + [known[k] for k in range(1, n + 1)]


# ------------------------------------------------------- algebraic equations (sympy)
def _numer(expr):
    return sp.numer(sp.together(sp.expand(expr)))


def r_transform(law):
    """Explicit R-transform in G (or None)."""
    if law["op"] == "semicircle":
        return _q(law["variance"]) * G
    if law["op"] == "marchenko_pastur":
        v, c = _q(law["variance"]), _q(law["ratio"])
        return v / (1 - c * v * G)
    return None


def s_transform(law):
    """Explicit S-transform in W (or None)."""
    if law["op"] == "marchenko_pastur":
        v, c = _q(law["variance"]), _q(law["ratio"])
        return 1 / (v * (1 + c * W))
    return None


def raw_equation(law):
    """A polynomial in (z, G) vanishing on the law's Stieltjes transform (not reduced)."""
    op = law["op"]
    if op in ("semicircle", "marchenko_pastur"):
        return _numer(z - r_transform(law) - 1 / G)
    if op == "point_masses":
        vals = [_q(a) for a in law["values"]]
        wts = [_q(w) for w in law["weights"]]
        full = sp.Mul(*[(z - a) for a in vals])
        rest = sum(w * sp.Mul(*[(z - b) for j, b in enumerate(vals) if j != i])
                   for i, w in enumerate(wts))
        return sp.expand(G * full - rest)
    if op == "free_additive":
        a, b = law["args"]
        ra, rb = r_transform(a), r_transform(b)
        if ra is not None and rb is not None:
            return _numer(z - ra - rb - 1 / G)
        if rb is None:
            a, b, ra, rb = b, a, rb, ra
        if rb is not None:                      # Q_a(z - R_b(G), G) = 0
            return _numer(equation(a).subs(z, z - rb))
        qa, qb = equation(a), equation(b)       # resultant in w1
        first = qa.subs(z, OMEGA)
        second = _numer(qb.subs(z, z + 1 / G - OMEGA))
        return sp.resultant(first, second, OMEGA)
    if op in ("free_multiplicative", "sample_covariance"):
        if op == "sample_covariance":           # Silverstein: Q_H(z/u, u G), u = 1 - c + c z G
            c = _q(law["ratio"])
            u = 1 - c + c * z * G
            qh = equation(law["population"])
            return _numer(qh.subs({z: z / u, G: u * G}, simultaneous=True))
        a, b = law["args"]
        sa, sb = s_transform(a), s_transform(b)
        w_of_g = z * G - 1
        if sa is not None and sb is not None:   # z w S_a S_b = 1 + w
            return _numer((z * W * sa * sb - (1 + W)).subs(W, w_of_g))
        if sa is None:
            a, b, sa, sb = b, a, sb, sa
        if sa is not None:                      # Q_b(z S_a(w), G / S_a(w)) = 0
            s_val = sa.subs(W, w_of_g)
            qb = equation(b)
            return _numer(qb.subs({z: z * s_val, G: G / s_val}, simultaneous=True))
        raise NotImplementedError("boxtimes of two laws without explicit S-transform")
    raise ValueError(op)


_EQUATIONS = {}


def equation(law):
    """The irreducible factor P(z, G) carrying the Stieltjes branch (sympy expression)."""
    key = json.dumps(law, sort_keys=True)
    if key not in _EQUATIONS:
        _EQUATIONS[key] = _branch_factor(raw_equation(law))
    return _EQUATIONS[key]


def _branch_factor(expr):
    _, factors = sp.factor_list(sp.expand(expr), z, G)
    big = sp.Integer(10) ** 10
    chosen = []
    with mpmath.workdps(DPS):
        for fac, _mult in factors:
            poly = sp.Poly(fac, G)
            if poly.degree() < 1:
                continue
            coeffs = [mpmath.mpf(sp.Rational(c.subs(z, big)).p) / sp.Rational(c.subs(z, big)).q
                      for c in poly.all_coeffs()]
            roots = mpmath.polyroots(coeffs, maxsteps=200, extraprec=4 * mpmath.mp.prec)
            hits = [r for r in roots if abs(r * big - 1) < mpmath.mpf(10) ** -6]
            if hits:
                assert len(hits) == 1, fac
                chosen.append(fac)
    assert len(chosen) == 1, f"branch factor not unique: {chosen}"
    poly = sp.Poly(chosen[0], z, G)
    _, prim = poly.primitive()
    if sp.Poly(prim.as_expr(), G).LC().subs(z, big) < 0:
        prim = -prim
    return sp.expand(prim.as_expr())


# ------------------------------------------------------------ numerics (mpmath)
class Law:
    """Numerical evaluation of the branch of P(z, G) = 0 at the current precision."""

    def __init__(self, poly_expr, moments):
        self.expr = poly_expr
        pg = sp.Poly(poly_expr, G)
        self.coeff_polys = [sp.Poly(c, z) for c in pg.all_coeffs()]   # highest power first
        self.coeff_ints = [[int(a) for a in cp.all_coeffs()] for cp in self.coeff_polys]
        self.moments = moments
        self._shift_cache = {}
        self._last_roots = None
        self._density_cache = {}
        self.scale = 1 + mpmath.sqrt(mpmath.mpf(sp.Rational(moments[2]).p)
                                     / sp.Rational(moments[2]).q)

    def coeffs(self, zz):
        return [mpmath.polyval(c, zz) for c in self.coeff_ints]

    def roots(self, zz, init=None):
        return _roots(self.coeffs(zz), init)

    def polish(self, zz, g, cs=None):
        """Newton steps on P(zz, .) (or on the polynomial ``cs``) from g; checks the
        residual."""
        cs = self.coeffs(zz) if cs is None else cs
        dcs = [c * (len(cs) - 1 - k) for k, c in enumerate(cs[:-1])]
        for _ in range(4):
            p = mpmath.polyval(cs, g)
            dp = mpmath.polyval(dcs, g)
            if dp == 0:
                break
            g = g - p / dp
        size = sum(abs(c) * abs(g) ** (len(cs) - 1 - k) for k, c in enumerate(cs))
        assert abs(mpmath.polyval(cs, g)) <= size * mpmath.mpf(10) ** (-(mpmath.mp.dps - 6)), \
            (zz, g)
        return g

    def series(self, zz):
        return sum(mpmath.mpf(sp.Rational(m).p) / sp.Rational(m).q / zz ** (k + 1)
                   for k, m in enumerate(self.moments))

    def stieltjes(self, zz):
        """G(zz) on the Stieltjes branch by continuation from x + iY (Im zz >= 0)."""
        return self.track(zz)

    def track(self, zz, center=None):
        """Continuation of the Stieltjes branch down the line Re z = Re zz.

        Returns ``G(zz)``, or with ``center = a`` the value ``(zz - a) G(zz)`` (which
        tends to the mass of an atom at ``a`` as ``zz -> a``).  The tracked variable is
        ``V = G`` or ``V = (z - a) G``: next to an atom, two roots ``m/(z - a) + O(1)``
        agree to a relative ``|z - a|``, while their ``V`` differ by ``O(|z - a|)`` out of
        ``O(1)`` and move by as much per step, so that the steps stay long.

        A step from ``Im z = eta`` to ``eta / f`` is accepted when (a) the root nearest the
        predictor (quadratic extrapolation of ``log V`` in ``log eta``, exact for power
        laws) is at most 0.1 times as far from it as the second nearest, and (b) it moved
        by less than half the distance from the previous value to the previous other
        roots (so no step can land on a neighbouring root); otherwise ``f`` is reduced.
        """
        x, target = mpmath.re(zz), mpmath.im(zz)
        assert target >= 0
        assert center is None or target > 0

        def v_coeffs(z_here):
            # P(z, V/(z - a)) (z - a)^n: the coefficient of V^(n-j) is c_j(z) (z - a)^j.
            cs = self.coeffs(z_here)
            return cs if center is None else [c * (z_here - center) ** j for j, c in enumerate(cs)]

        top = 1000 * self.scale
        eta = max(top, 10 * target)
        here = mpmath.mpc(x, eta)
        roots = _roots(v_coeffs(here))
        guess = self.series(here) * (1 if center is None else here - center)
        dist = sorted(((abs(r - guess), r) for r in roots), key=lambda p: p[0])
        assert dist[0][0] < mpmath.mpf(10) ** -10 * abs(guess), dist
        assert len(dist) == 1 or dist[0][0] < mpmath.mpf(10) ** -3 * dist[1][0]
        v = dist[0][1]
        others = [r for r in roots if r != v]
        history = [(mpmath.log(eta), mpmath.log(v))]
        roots_here = roots
        stop = target if target > 0 else ETA_FLOOR
        factor = mpmath.mpf(4)
        steps = 0
        while eta > stop:
            new_eta = max(eta / factor, stop)
            s_new = mpmath.log(new_eta)
            pts = history[-3:]
            log_pred = mpmath.mpf(0)
            for i, (si, li) in enumerate(pts):
                basis = mpmath.mpf(1)
                for j, (sj, _) in enumerate(pts):
                    if j != i:
                        basis *= (s_new - sj) / (si - sj)
                log_pred += basis * li
            pred = mpmath.exp(log_pred)
            zn = mpmath.mpc(x, new_eta)
            cs = v_coeffs(zn)
            vs = _roots(cs, roots_here)
            order = sorted(range(len(vs)), key=lambda k: abs(vs[k] - pred))
            best = order[0]
            ok = len(vs) == 1 or abs(vs[best] - pred) < mpmath.mpf("0.1") * abs(vs[order[1]] - pred)
            if ok and others:
                ok = abs(vs[best] - v) < mpmath.mpf("0.5") * min(abs(o - v) for o in others)
            if not ok:
                factor = mpmath.sqrt(factor)
                assert factor > 1 + mpmath.mpf(10) ** -6, ("continuation stalled", zz, eta)
                continue
            v = self.polish(zn, vs[best], cs)
            others = [vs[k] for k in order[1:]]
            eta = new_eta
            log_v = mpmath.log(v)
            # Unwrap: the branch of log nearest the prediction.
            log_v += 2j * mpmath.pi * mpmath.nint(mpmath.im(log_pred - log_v) / (2 * mpmath.pi))
            history.append((s_new, log_v))
            roots_here = vs
            factor = min(factor ** 2, mpmath.mpf(4))
            steps += 1
            assert steps < 5000, ("continuation too long", zz, eta)
        g = v
        if target == 0:                         # last step to the real axis
            zn = mpmath.mpc(x, target)
            roots = self.roots(zn, roots_here)
            dist = sorted(((abs(r - g), r) for r in roots), key=lambda p: p[0])
            # The step is tiny (1e-30): the limit root must be unambiguous and the jump a
            # negligible fraction of |G| (it is about 1e-30 |G'(z)|).
            assert len(dist) == 1 or dist[0][0] < mpmath.mpf(10) ** -6 * dist[1][0], (zz, dist)
            assert dist[0][0] < mpmath.mpf(10) ** -12 * (1 + abs(g)), (zz, dist[:2])
            g = self.polish(zn, dist[0][1])
            return g
        return v

    def density(self, x):
        g = self.stieltjes(mpmath.mpc(x, 0))
        return max(-mpmath.im(g), 0) / mpmath.pi, g

    def density_for_classification(self, x):
        """Density at real x: exactly 0 when every root of P(x, .) is real (then so is
        G(x + i0), whichever root it is); otherwise by continuation.  Next to an atom, the
        continuation would have to tell apart two roots ``m/(z - a) + O(1)``, equal to a
        relative ``|z - a|``; there all roots are real and it is not needed."""
        roots = self.roots(mpmath.mpf(x))
        tol = mpmath.mpf(10) ** (-(mpmath.mp.dps // 2))
        if all(abs(mpmath.im(r)) <= tol * (1 + abs(r)) for r in roots):
            return mpmath.mpf(0)
        return self.density(x)[0]

    def shifted(self, edge):
        """Coefficients of P(edge + d, G) as polynomials in d (Taylor shift, exact when the
        edge is rational), so that points next to an edge are not rounded onto it."""
        key = mpmath.nstr(edge, DPS + 10)
        if key not in self._shift_cache:
            out = []
            with mpmath.workdps(DPS + 30):
                e = mpmath.mpf(edge)
                for cz in self.coeff_ints:
                    n = len(cz) - 1
                    # c(e + d) = sum_k c^(k)(e)/k! d^k, highest power of d first.
                    taylor = [mpmath.mpf(0)] * (n + 1)
                    for power, a in enumerate(reversed(cz)):          # a z^power
                        for k in range(power + 1):
                            taylor[k] += a * mpmath.binomial(power, k) * e ** (power - k)
                    out.append(list(reversed(taylor)))
            self._shift_cache[key] = out
        return self._shift_cache[key]

    def density_fast(self, x, edge=None):
        """Density from the only root of P(x, .) with Im G < 0 (continuation otherwise).

        With ``edge`` given, ``x`` is the offset ``d`` from it (see ``shifted``), and the
        roots are computed with ``log2(scale/|d|)`` more bits: next to a square-root edge
        two roots are ``~sqrt(d)`` apart, and polyroots needs its rounding noise
        (``eps / sqrt(d)``) below the original ``eps`` to converge."""
        key = (None if edge is None else mpmath.nstr(edge, DPS + 10), x)
        if key in self._density_cache:          # the quadratures share their nodes
            return self._density_cache[key]
        value = self._density_fast(x, edge)
        self._density_cache[key] = value
        return value

    def _density_fast(self, x, edge):
        if edge is not None:
            if x == 0:
                raise ValueError("density_fast: offset 0 from an edge")
            extra = 32 + max(0, int(mpmath.log(self.scale / abs(x), 2)))
            with mpmath.workprec(mpmath.mp.prec + extra):
                cs = [mpmath.polyval(c, x) for c in self.shifted(edge)]
                roots = _roots(cs, self._last_roots, ROOT_EXTRAPREC + extra)
                x = edge + x
        else:
            roots = self.roots(mpmath.mpf(x), self._last_roots)
        self._last_roots = roots
        tol = mpmath.mpf(10) ** (-(mpmath.mp.dps // 2))
        neg = [r for r in roots if mpmath.im(r) < -tol * (1 + abs(r))]
        if len(neg) == 1:
            return -mpmath.im(neg[0]) / mpmath.pi
        if not neg:
            return mpmath.mpf(0)
        return self.density(x)[0]


def _roots(coeffs, init=None, extraprec=ROOT_EXTRAPREC):
    """All roots of a polynomial (highest coefficient first): Durand-Kerner (mpmath
    polyroots) with ``extraprec`` guard bits, started from ``init`` (the roots at a
    nearby point, which saves most iterations) and, failing that, from mpmath's own
    start.  polyroots stops on an absolute tolerance (the working eps), so a very large
    root (next to an atom, ``|G| ~ 1/eta``) needs more guard bits: on failure the guard
    bits are raised, up to 2000.  A root that is kept is then Newton-polished
    (Law.polish)."""
    while coeffs[0] == 0:                   # the degree drops where P's leading coefficient is 0
        coeffs = coeffs[1:]
    # Guard bits for the size of the roots (Cauchy bound), as the tolerance is absolute.
    bound = 1 + max(abs(c / coeffs[0]) for c in coeffs[1:])
    extraprec += int(mpmath.log(bound, 2))
    if init is not None:
        try:
            return mpmath.polyroots(coeffs, maxsteps=100, extraprec=extraprec,
                                    roots_init=init)
        except mpmath.libmp.NoConvergence:
            pass
    while True:
        try:
            return mpmath.polyroots(coeffs, maxsteps=1000, extraprec=extraprec)
        except mpmath.libmp.NoConvergence:
            if extraprec > 2000:
                raise
            extraprec *= 4


def _mpf_of(rational, dps=DPS):
    rational = sp.Rational(rational)
    with mpmath.workdps(dps):
        return mpmath.mpf(rational.p) / rational.q


def real_roots_of(expr_z):
    """Real roots of a polynomial in z, exact isolation (sympy), as 50-digit mpf."""
    out = []
    if sp.Poly(expr_z, z).degree() < 1:
        return out
    for fac, _ in sp.factor_list(expr_z, z)[1]:
        pf = sp.Poly(fac, z)
        if pf.degree() < 1:
            continue
        for root in pf.real_roots():
            if root.is_Rational:
                out.append((mpmath.mpf(root.p) / root.q, root))
            else:
                out.append((mpmath.mpf(str(root.evalf(DPS + 15))), root))
    uniq = []
    for value, exact in sorted(out, key=lambda p: p[0]):
        if not uniq or abs(value - uniq[-1][0]) > mpmath.mpf(10) ** -(DPS + 5):
            uniq.append((value, exact))
    return uniq


def support(law_num):
    """Bands, atoms and the classified real discriminant roots."""
    disc = sp.factor(sp.discriminant(law_num.expr, G))
    lead = sp.Poly(law_num.expr, G).LC()
    cand_disc = real_roots_of(disc)
    cand_lead = real_roots_of(lead)
    cands = sorted({mpmath.nstr(v, DPS + 10): (v, e) for v, e in cand_disc + cand_lead}.values(),
                   key=lambda p: p[0])
    spacing = min([cands[k + 1][0] - cands[k][0] for k in range(len(cands) - 1)]
                  or [law_num.scale])
    delta = min(DELTA_REL * law_num.scale, spacing / 1000)
    classified = []
    for value, exact in cands:
        left = law_num.density_for_classification(value - delta)
        right = law_num.density_for_classification(value + delta)
        pos_l, pos_r = left > POSITIVE_DENSITY, right > POSITIVE_DENSITY
        kind = {(False, True): "left_edge", (True, False): "right_edge",
                (True, True): "interior", (False, False): "outside"}[(pos_l, pos_r)]
        root_of = [name for name, group in (("discriminant", cand_disc),
                                            ("leading_coefficient", cand_lead))
                   if any(abs(value - v) < delta for v, _ in group)]
        classified.append({"value": value, "exact": exact, "kind": kind, "from": root_of,
                           "density_left": left, "density_right": right})
    bands, start = [], None
    for item in classified:
        if item["kind"] == "left_edge":
            assert start is None, classified
            start = item["value"]
        elif item["kind"] == "right_edge":
            assert start is not None, classified
            bands.append((start, item["value"]))
            start = None
    assert start is None
    atoms = []
    for value, exact in cand_lead:
        mu, v_eta = atom_mass(law_num, value, exact)
        if mu != 0:
            atoms.append({"location": value, "location_exact": exact, "mass_exact": mu,
                          "mass": (_mpf_of(mu) if mu.is_Rational
                                   else mpmath.mpf(str(mu.evalf(DPS + 10)))),
                          "mass_by_continuation": v_eta})
    return disc, classified, bands, atoms


def atom_mass(law_num, value, exact):
    """Mass of the atom at a root ``a`` of P's leading coefficient (0 if none), exactly.

    With ``G = V/(z - a)``, ``Q(z, V) = P(z, V/(z - a)) (z - a)^n``; at ``z = a + t`` its
    lowest order in ``t`` is a polynomial ``q(V)`` whose roots are the possible values of
    ``V(a) = lim (z - a) G(z)``, the atom's mass.  The Stieltjes branch picks one: ``V`` is
    continued (``Law.track`` with ``center = a``) to ``z = a + i 1e-10`` and ``a + i 1e-20``,
    where it must approach one root of ``q`` (by a factor > 10 between the two, and be
    within 1e-6 of it).  The mass is that root, exact (sympy)."""
    assert exact.is_Rational, "atoms at irrational points are not implemented"
    t, v = sp.symbols("t V")
    n = sp.Poly(law_num.expr, G).degree()
    q_full = sp.expand(law_num.expr.subs(G, v / t).subs(z, exact + t) * t ** n)
    q_poly = sp.Poly(q_full, t)
    lowest = min(m[0] for m in q_poly.monoms())
    q = sp.Poly(q_poly.coeff_monomial(t ** lowest), v)
    candidates = sorted(set(q.all_roots()), key=lambda r: complex(r.evalf()).real)
    values = [mpmath.mpc(str(sp.re(c).evalf(DPS)), str(sp.im(c).evalf(DPS))) for c in candidates]
    # Two roots ~ m/(z - a) agree to a relative |z - a|: 20 more digits keep their V
    # apart at Im z = 1e-20.
    with mpmath.workdps(DPS + 20):
        v_far = law_num.track(mpmath.mpc(value, mpmath.mpf(10) ** -10), center=value)
        v_near = law_num.track(mpmath.mpc(value, mpmath.mpf(10) ** -20), center=value)
    k = min(range(len(values)), key=lambda i: abs(v_near - values[i]))
    d_far, d_near = abs(v_far - values[k]), abs(v_near - values[k])
    # V -> root like Im z (atom) or like (Im z)^alpha, alpha in (0, 1) (hard edge, root 0).
    assert d_near < mpmath.mpf(10) ** -6 and (d_near == 0 or d_far > 10 * d_near), \
        ("atom mass: V does not settle on a root of q", value, candidates, v_far, v_near)
    return sp.nsimplify(candidates[k]), v_near


def half_band_integral(f, edge, mid, classified):
    """int f(edge, d) dx (x = edge + d) from a band edge to an inner point ``mid``.

    The variable is ``u`` with ``d = (mid - edge) u^3``: every algebraic edge behaviour
    seen here becomes integrable to full precision by tanh-sinh (rho ~ |d|^(-2/3) turns
    into ~ u^0, |d|^(-1/2) into u^(1/2), square-root edges into u^(7/2)), and ``f``
    receives the offset ``d`` itself, never a point rounded onto the edge.  Interior
    discriminant roots are breakpoints."""
    span = mid - edge
    inner = sorted(mpmath.cbrt((c["value"] - edge) / span) for c in classified
                   if 0 < (c["value"] - edge) / span < 1)
    value, err = mpmath.quad(lambda u: f(edge, span * u ** 3) * 3 * span * u ** 2,
                             [0] + inner + [1], error=True)
    return value, err


def band_integral(f, lo, hi, classified):
    """Integrals of f over [lo, mid] and [mid, hi] (mid the band midpoint), error bound."""
    mid = (lo + hi) / 2
    left, e1 = half_band_integral(f, lo, mid, classified)
    right, e2 = half_band_integral(f, hi, mid, classified)
    return left, -right, e1 + e2


def quad_bands(law_num, bands, classified, weight):
    """Sum over bands of int weight(x) rho(x) dx, with its error estimate."""
    total, err = mpmath.mpf(0), mpmath.mpf(0)
    for lo, hi in bands:
        left, right, e = band_integral(
            lambda edge, d: weight(edge + d) * law_num.density_fast(d, edge), lo, hi, classified)
        total += left + right
        err += e
    return total, err


# ------------------------------------------------------------------ closed forms
def fuss_catalan2_density(x):
    """Penson & Zyczkowski (2011), eq. (11) with s = 2, 0 < x < 27/4."""
    root = 27 + 3 * mpmath.sqrt(81 - 12 * x)
    c2 = mpmath.cbrt(2)
    return (c2 * mpmath.sqrt(3) / (12 * mpmath.pi)
            * (c2 * root ** (mpmath.mpf(2) / 3) - 6 * mpmath.cbrt(x))
            / (x ** (mpmath.mpf(2) / 3) * mpmath.cbrt(root)))


def arcsine_density(x):
    return 1 / (mpmath.pi * mpmath.sqrt(x * (2 - x)))


def arcsine_cdf(x):
    return 2 * mpmath.asin(mpmath.sqrt(x / 2)) / mpmath.pi


def arcsine_stieltjes(zz):
    return 1 / (mpmath.sqrt(zz) * mpmath.sqrt(zz - 2))


def semicircle_density(x, s2):
    return mpmath.sqrt(4 * s2 - x * x) / (2 * mpmath.pi * s2)


def semicircle_cdf(x, s2):
    # 30 more digits: next to the edge, asin(x/r) and the square root cancel.
    with mpmath.workdps(mpmath.mp.dps + 30):
        r2 = 4 * s2
        return +(mpmath.mpf(1) / 2 + x * mpmath.sqrt(r2 - x * x) / (mpmath.pi * r2)
                 + mpmath.asin(x / mpmath.sqrt(r2)) / mpmath.pi)


def semicircle_stieltjes(zz, s2):
    r = 2 * mpmath.sqrt(s2)
    return (zz - mpmath.sqrt(zz - r) * mpmath.sqrt(zz + r)) / (2 * s2)


def mp_density(x, v, c):
    a, b = v * (1 - mpmath.sqrt(c)) ** 2, v * (1 + mpmath.sqrt(c)) ** 2
    return mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * c * v * x)


def _rel(a, b):
    return abs(a - b) / max(abs(b), mpmath.mpf(10) ** -300)


# -------------------------------------------------------------------- the driver
def _s(value, digits=DPS):
    return mpmath.nstr(value, digits, strip_zeros=False)


def _c(value, digits=DPS):
    return [_s(mpmath.re(value), digits), _s(mpmath.im(value), digits)]


def _exact_str(exact):
    return str(exact) if exact is not None and getattr(exact, "is_Rational", False) else None


def build_case(case):
    law = case["law"]
    t0 = time.time()
    poly = equation(law)
    m_a = constituent_moments(law)
    m_b = series_moments(sp.Poly(poly, z, G))
    assert [sp.nsimplify(a - b) for a, b in zip(m_a, m_b)] == [0] * len(m_a), (m_a, m_b)
    kappa = moments_to_cumulants(m_a)
    out = {"id": case["id"], "law": _json_law(law), "polynomial": str(poly),
           "degree_in_G": sp.Poly(poly, G).degree()}
    checks = {}
    with mpmath.workdps(DPS):
        num = Law(poly, m_a)
        disc, classified, bands, atoms = support(num)
        out["discriminant_in_G"] = str(disc)
        out["discriminant_real_roots"] = [
            {"value": _s(c["value"]), "exact": _exact_str(c["exact"]), "kind": c["kind"],
             "root_of": c["from"],
            
             "density_left": _s(c["density_left"], 10), "density_right": _s(c["density_right"], 10)}
            for c in classified]
        out["edges"] = [_s(v) for band in bands for v in band]
        out["bands"] = [[_s(lo), _s(hi)] for lo, hi in bands]
        out["atoms"] = [{"location": _s(a["location"]),
                         "location_exact": _exact_str(a["location_exact"]),
                         "mass": _s(a["mass"]), "mass_exact": str(a["mass_exact"]),
                         "mass_by_continuation_at_eta_1e-20":
                             _s(mpmath.re(a["mass_by_continuation"]), 20)}
                        for a in atoms]
        # Density table, by continuation; the quadrature's root rule checked against it.
        dens, worst_fast = [], mpmath.mpf(0)
        for k, (lo, hi) in enumerate(bands):
            for frac in DENSITY_FRACTIONS:
                x = lo + (hi - lo) * mpmath.mpf(frac)
                rho, g = num.density(x)
                assert rho > 0, (case["id"], x)
                worst_fast = max(worst_fast, _rel(num.density_fast(x), rho))
                dens.append({"band": k, "fraction": frac, "x": _s(x), "density": _s(rho),
                             "G": _c(g)})
        assert worst_fast < mpmath.mpf(10) ** -30, worst_fast
        checks["density_root_rule_vs_continuation_max_rel"] = _s(worst_fast, 3)
        # Gaps are empty, bands are not (continuation at midpoints).
        for k in range(len(bands) - 1):
            mid = (bands[k][1] + bands[k + 1][0]) / 2
            assert num.density(mid)[0] < POSITIVE_DENSITY, (case["id"], "gap", mid)
        out["density"] = dens
        stie = []
        for lo, hi in bands:
            mid = (lo + hi) / 2
            for eta in ("0.1", "0.001"):
                zz = mpmath.mpc(mid, mpmath.mpf(eta))
                stie.append({"z": _c(zz), "G": _c(num.stieltjes(zz))})
        z32 = mpmath.mpc(3, 2)
        g32 = num.stieltjes(z32)
        stie.append({"z": _c(z32), "G": _c(g32)})
        out["stieltjes"] = stie
    # CDF, masses and quadrature moments at CDF_DPS digits.
    with mpmath.workdps(CDF_DPS):
        num_c = Law(poly, m_a)
        bands_c = bands                     # edges keep their 40 digits (see Law.shifted)
        classified_c = classified
        atom_list = [(mpmath.mpf(mpmath.nstr(a["location"], DPS)),
                      mpmath.mpf(mpmath.nstr(a["mass"], DPS)))
                     for a in atoms]
        masses, errs = [], []
        halves = []
        for lo, hi in bands_c:
            left, right, e = band_integral(lambda edge, d: num_c.density_fast(d, edge),
                                           lo, hi, classified_c)
            halves.append(((lo + hi) / 2, left))
            masses.append(left + right)
            errs.append(e)

        def atoms_upto(x):
            return sum((m for loc, m in atom_list if loc <= x), mpmath.mpf(0))

        cdf = []
        for k, (lo, hi) in enumerate(bands_c):
            before = sum(masses[:k], mpmath.mpf(0))
            mid, left = halves[k]
            cdf.append({"x": _s(mid, CDF_DPS), "cdf": _s(atoms_upto(mid) + before + left, CDF_DPS),
                        "where": f"band {k} midpoint"})
            cdf.append({"x": _s(hi, CDF_DPS),
                        "cdf": _s(atoms_upto(hi) + before + masses[k], CDF_DPS),
                        "where": f"band {k} right edge"})
            if k + 1 < len(bands_c):
                gap_mid = (hi + bands_c[k + 1][0]) / 2
                cdf.append({"x": _s(gap_mid, CDF_DPS),
                            "cdf": _s(atoms_upto(gap_mid) + before + masses[k], CDF_DPS),
                            "where": f"gap {k} midpoint"})
        total = sum(masses, mpmath.mpf(0)) + sum((m for _, m in atom_list), mpmath.mpf(0))
        assert abs(total - 1) < mpmath.mpf(10) ** -25, (case["id"], total)
        out["cdf"] = cdf
        out["band_masses"] = [_s(m, CDF_DPS) for m in masses]
        out["quadrature_error_estimates"] = [_s(e, 3) for e in errs]
        out["total_mass"] = _s(total, CDF_DPS)
        qm = {}
        for power in (1, 2):
            val, _ = quad_bands(num_c, bands_c, classified_c, lambda x, p=power: x ** p)
            val += sum((m * loc ** power for loc, m in atom_list), mpmath.mpf(0))
            qm[f"m{power}"] = _s(val, CDF_DPS)
            exact = _mpf_of(m_a[power], CDF_DPS)
            assert abs(val - exact) < mpmath.mpf(10) ** -24 * (1 + abs(exact)), (case["id"], power)
        out["moments_by_quadrature"] = qm
        gq, _ = quad_bands(num_c, bands_c, classified_c, lambda x: 1 / (mpmath.mpc(3, 2) - x))
        gq += sum((m / (mpmath.mpc(3, 2) - loc) for loc, m in atom_list), mpmath.mpf(0))
        diff = abs(gq - g32)
        assert diff < mpmath.mpf(10) ** -24, (case["id"], gq, g32)
        checks["stieltjes_3_2i_vs_quadrature_abs"] = _s(diff, 3)
    with mpmath.workdps(DPS):
        out["moments"] = [{"k": k, "exact": str(m_a[k]), "value": _s(_mpf_of(m_a[k]))}
                          for k in range(1, N_MOMENTS + 1)]
        out["free_cumulants"] = [{"k": k, "exact": str(kappa[k]), "value": _s(_mpf_of(kappa[k]))}
                                 for k in range(1, N_MOMENTS + 1)]
    checks["moments_constituents_vs_series_of_P"] = f"equal as rationals (m1..m{len(m_a) - 1})"
    with mpmath.workdps(DPS):
        checks.update(closed_form_checks(case, out))
    out["cross_checks"] = checks
    with mpmath.workdps(DPS):
        out["summary"] = summary(case, out)
    out["seconds"] = round(time.time() - t0, 1)
    return out


def summary(case, out):
    """One sentence on the support found (bands, gaps, atoms, band masses)."""
    bands = [[mpmath.mpf(a), mpmath.mpf(b)] for a, b in out["bands"]]
    text = f"{len(bands)} band(s)"
    if len(bands) > 1:
        gaps = ", ".join(f"({mpmath.nstr(bands[k][1], 12)}, {mpmath.nstr(bands[k + 1][0], 12)})"
                         for k in range(len(bands) - 1))
        text += f"; gap(s) {gaps}, width(s) " + ", ".join(
            mpmath.nstr(bands[k + 1][0] - bands[k][1], 6) for k in range(len(bands) - 1))
    text += "; band masses " + ", ".join(mpmath.nstr(mpmath.mpf(m), 12) for m in out["band_masses"])
    if out["atoms"]:
        text += "; atoms " + ", ".join(f"{a['mass_exact']} at {a['location_exact']}"
                                       for a in out["atoms"])
    if case.get("note"):
        text += ". " + case["note"]
    return text


def closed_form_checks(case, out):
    """Agreement with closed forms where they exist (stored as max relative errors)."""
    res = {}
    case_id = case["id"]
    cdf_pts = [(mpmath.mpf(d["x"]), mpmath.mpf(d["cdf"])) for d in out["cdf"]]
    pts = [(mpmath.mpf(d["x"]), mpmath.mpf(d["density"])) for d in out["density"]]
    edges = [mpmath.mpf(e) for e in out["edges"]]
    if case_id == "mp_times_mp_square":
        worst = max(_rel(rho, fuss_catalan2_density(x)) for x, rho in pts)
        res["density_vs_penson_zyczkowski_max_rel"] = _s(worst, 3)
        assert worst < mpmath.mpf(10) ** -30
        assert abs(edges[0]) < mpmath.mpf(10) ** -35
        assert abs(edges[1] - mpmath.mpf(27) / 4) < mpmath.mpf(10) ** -35
        res["edges_vs_closed_form"] = "0 and 27/4"
        m = constituent_moments(case["law"])
        assert all(m[k] == sp.binomial(3 * k, k) / (2 * k + 1) for k in range(len(m)))
        res["moments_vs_fuss_catalan_numbers"] = "equal (binom(3k, k)/(2k + 1))"
    if case_id == "bernoulli_plus_bernoulli":
        worst = max(_rel(rho, arcsine_density(x)) for x, rho in pts)
        res["density_vs_arcsine_max_rel"] = _s(worst, 3)
        assert abs(edges[0]) < mpmath.mpf(10) ** -35 and abs(edges[1] - 2) < mpmath.mpf(10) ** -35
        res["edges_vs_closed_form"] = "0 and 2"
        assert worst < mpmath.mpf(10) ** -30
        worst_g = max(_rel(mpmath.mpc(*map(mpmath.mpf, s["G"])),
                           arcsine_stieltjes(mpmath.mpc(*map(mpmath.mpf, s["z"]))))
                      for s in out["stieltjes"])
        res["stieltjes_vs_arcsine_max_rel"] = _s(worst_g, 3)
        assert worst_g < mpmath.mpf(10) ** -30
        m = constituent_moments(case["law"])
        assert all(m[k] == sp.binomial(2 * k, k) / 2 ** k for k in range(len(m)))
        res["moments_vs_arcsine"] = "equal (binom(2k, k)/2^k)"
        worst_c = max(abs(f - arcsine_cdf(x)) for x, f in cdf_pts)
        res["cdf_vs_arcsine_max_abs"] = _s(worst_c, 3)
        assert worst_c < mpmath.mpf(10) ** -25
    if case_id == "sc_plus_sc":
        s2 = mpmath.mpf(3)
        worst = max(_rel(rho, semicircle_density(x, s2)) for x, rho in pts)
        res["density_vs_semicircle3_max_rel"] = _s(worst, 3)
        assert worst < mpmath.mpf(10) ** -30
        worst_g = max(_rel(mpmath.mpc(*map(mpmath.mpf, s["G"])),
                           semicircle_stieltjes(mpmath.mpc(*map(mpmath.mpf, s["z"])), s2))
                      for s in out["stieltjes"])
        res["stieltjes_vs_semicircle3_max_rel"] = _s(worst_g, 3)
        assert worst_g < mpmath.mpf(10) ** -30
        assert sp.expand(equation(case["law"]) - (3 * G ** 2 - z * G + 1)) == 0
        res["polynomial_vs_semicircle3"] = "identical: 3 G^2 - z G + 1"
        worst_c = max(abs(f - semicircle_cdf(x, s2)) for x, f in cdf_pts)
        res["cdf_vs_semicircle3_max_abs"] = _s(worst_c, 3)
        assert worst_c < mpmath.mpf(10) ** -25
        assert all(abs(e - r) < mpmath.mpf(10) ** -35
                   for e, r in zip(edges, [-2 * mpmath.sqrt(s2), 2 * mpmath.sqrt(s2)]))
        res["edges_vs_closed_form"] = "-+2 sqrt(3)"
    return res


def marchenko_pastur_checks():
    """The MP constituents (and sample_covariance(delta_1, c)) through the same pipeline."""
    rows = []
    for v, c in [("1", "0.5"), ("1", "1"), ("1", "0.25"), ("1", "0.3"), ("1", "1.5")]:
        law = marchenko_pastur(v, c)
        poly = equation(law)
        sc_poly = equation(sample_covariance(point_masses(["1"], ["1"]), c))
        assert sp.expand(poly - sc_poly) == 0, (poly, sc_poly)
        with mpmath.workdps(DPS):
            num = Law(poly, constituent_moments(law))
            _, _, bands, atoms = support(num)
            vv, cc = _mpf_of(_q(v)), _mpf_of(_q(c))
            lo, hi = vv * (1 - mpmath.sqrt(cc)) ** 2, vv * (1 + mpmath.sqrt(cc)) ** 2
            assert len(bands) == 1
            edge_err = max(abs(bands[0][0] - lo), abs(bands[0][1] - hi))
            worst = max(_rel(num.density(lo + (hi - lo) * mpmath.mpf(f))[0],
                             mp_density(lo + (hi - lo) * mpmath.mpf(f), vv, cc))
                        for f in DENSITY_FRACTIONS)
            atom = sum((a["mass"] for a in atoms), mpmath.mpf(0))
            atom_expected = max(1 - 1 / cc, 0)
            assert edge_err < mpmath.mpf(10) ** -35 and worst < mpmath.mpf(10) ** -30
            assert abs(atom - atom_expected) < mpmath.mpf(10) ** -30
            rows.append({"law": _json_law(law), "polynomial": str(poly),
                         "same_polynomial_as_sample_covariance_of_delta_1": True,
                         "edges_abs_err": _s(edge_err, 3), "density_max_rel_err": _s(worst, 3),
                         "atom_at_0": _s(atom, 10), "atom_expected": _s(atom_expected, 10)})
    return rows


def silverstein_vs_boxtimes():
    """sample_covariance(H, c) (Silverstein) against marchenko_pastur(1, c) boxtimes H."""
    rows = []
    for case in CASES:
        law = case["law"]
        if law["op"] == "sample_covariance":
            other = free_multiplicative(marchenko_pastur("1", law["ratio"]), law["population"])
        elif (law["op"] == "free_multiplicative" and law["args"][0]["op"] == "marchenko_pastur"
              and law["args"][1]["op"] == "point_masses" and law["args"][0]["variance"] == "1"):
            other = sample_covariance(law["args"][1], law["args"][0]["ratio"])
        else:
            continue
        same = sp.expand(equation(law) - equation(other)) == 0
        assert same, (case["id"], equation(law), equation(other))
        rows.append({"id": case["id"], "other_derivation": _json_law(other),
                     "same_polynomial": same})
    return rows


def main():
    start = time.time()
    out = {"dps": DPS, "cdf_dps": CDF_DPS,
           "command": "python tests/reference/make_composition_references.py",
           "conventions": "G(z) = int dmu(x)/(z - x), G ~ 1/z, Im G < 0 above the axis; "
                          "density = -Im G(x + i0)/pi; cdf(x) = mu((-inf, x]) with atoms; "
                          "polynomial P(z, G) = 0 holds on the Stieltjes branch",
           "density_fractions": DENSITY_FRACTIONS,
           "cases": []}
    out["marchenko_pastur_checks"] = marchenko_pastur_checks()
    print(f"MP checks done ({time.time() - start:.1f} s)", file=sys.stderr)
    out["silverstein_vs_boxtimes"] = silverstein_vs_boxtimes()
    for case in CASES:
        result = build_case(case)
        out["cases"].append(result)
        print(f"{case['id']}: {len(result['bands'])} band(s), {len(result['atoms'])} atom(s), "
              f"{result['seconds']} s", file=sys.stderr)
    out["runtime_seconds"] = round(time.time() - start, 1)
    path = Path(__file__).with_name("composition_references.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path} in {out['runtime_seconds']} s", file=sys.stderr)


if __name__ == "__main__":
    main()
