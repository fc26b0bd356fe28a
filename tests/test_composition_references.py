"""Checks of tests/reference/composition_references.json against itself and closed forms.

The JSON is written by ``python tests/reference/make_composition_references.py``
(sympy for the algebraic equations and exact moments, mpmath at 40 digits for
edges, densities and Stieltjes values, tanh-sinh quadrature at 30 digits for the
CDF).  These tests do not use freeattn's laws: they check that the stored numbers
are what they claim to be, so that tests of the library can trust them.

Tolerances (named below) follow the stated precisions: 40-digit values are
compared at ``TOL_40`` (1e-30, leaving 10 digits for the closed forms' own
round-off next to the hard edges), quadrature results at ``TOL_QUAD`` (1e-24, the
30-digit quadrature claims better than 1e-25), and float references at ``TOL_FLOAT``.
"""

import importlib
import json
import pathlib
import sys
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference" / "composition_references.json"
DATA = json.loads(REFERENCE.read_text())
CASES = {case["id"]: case for case in DATA["cases"]}
DPS = 40
TOL_40 = mpmath.mpf(10) ** -30
TOL_QUAD = mpmath.mpf(10) ** -24
# Float references (benchmarks/reference_laws.py) are evaluated at float(x); next to
# an edge (fraction 0.001 of a band) rounding x to a double moves the density by
# about 1e-16 |x| |rho'/rho| ~ 1e-13 relative.
TOL_FLOAT = 1e-11

z_sym, g_sym = sp.symbols("z G")


def _mp(text):
    return mpmath.mpf(text)


def _mpc(pair):
    return mpmath.mpc(_mp(pair[0]), _mp(pair[1]))


def _poly_terms(text):
    return [(i, j, int(c)) for (i, j), c in sp.Poly(sp.sympify(text), z_sym, g_sym).terms()]


def _poly_value(terms, zz, gg):
    """P(zz, gg) and the sum of the moduli of its terms (the scale of its round-off)."""
    vals = [c * zz ** i * gg ** j for i, j, c in terms]
    return sum(vals), sum(abs(v) for v in vals)


def _moments_to_cumulants(m):
    """Free cumulants from moments m[0] = 1, m[1..n]: M(t) = C(t M(t)), exact."""
    n = len(m) - 1

    def mul(a, b):
        out = [Fraction(0)] * (n + 1)
        for i, ai in enumerate(a):
            for j, bj in enumerate(b[:n + 1 - i]):
                out[i + j] += ai * bj
        return out

    tm = [Fraction(0)] + m[:n]
    kappa = [Fraction(0)] * (n + 1)
    for k in range(1, n + 1):
        total, power = Fraction(0), [Fraction(1)] + [Fraction(0)] * n
        for j in range(1, k):
            power = mul(power, tm)
            total += kappa[j] * power[k]
        kappa[k] = m[k] - total
    return kappa[1:]


def _exact_moments(case):
    return [Fraction(1)] + [Fraction(m["exact"]) for m in case["moments"]]


def _law_moments(law, n):
    """Moments 0..n of a base law in closed form."""
    if law["op"] == "point_masses":
        vals = [Fraction(str(a)) for a in law["values"]]
        wts = [Fraction(str(w)) for w in law["weights"]]
        return [sum(w * a ** k for a, w in zip(vals, wts)) for k in range(n + 1)]
    raise ValueError(law["op"])


def _law_cumulants(law, n):
    """Free cumulants 1..n of a base law: semicircle k2 = s2, Marchenko-Pastur (a free
    Poisson law of rate 1/c and jump c v) k_n = c^(n-1) v^n, point masses from moments."""
    if law["op"] == "semicircle":
        return [Fraction(0), Fraction(str(law["variance"]))] + [Fraction(0)] * (n - 2)
    if law["op"] == "marchenko_pastur":
        v, c = Fraction(str(law["variance"])), Fraction(str(law["ratio"]))
        return [c ** (k - 1) * v ** k for k in range(1, n + 1)]
    return _moments_to_cumulants(_law_moments(law, n))


def test_every_case_is_present():
    assert list(CASES) == [
        "mp_plus_sc", "mp_times_mp_square", "mp_times_mp", "sc_two_atoms",
        "sc_two_atoms_asym", "samplecov_two_atoms", "samplecov_two_atoms_wide",
        "bernoulli_plus_bernoulli", "sc_plus_sc", "mp_times_atoms"]
    assert DATA["dps"] == DPS
    for case in DATA["cases"]:
        assert len(case["density"]) == 9 * len(case["bands"])


@pytest.mark.parametrize("case_id", list(CASES))
def test_total_mass_is_one(case_id):
    """Atoms plus the quadrature of the density over the bands: the CDF at the last
    right edge is 1 (to TOL_QUAD), and so is the sum of band masses and atoms."""
    case = CASES[case_id]
    with mpmath.workdps(DPS):
        assert case["cdf"][-1]["where"].endswith("right edge")
        assert abs(_mp(case["cdf"][-1]["cdf"]) - 1) < TOL_QUAD
        atoms = sum((_mp(a["mass"]) for a in case["atoms"]), mpmath.mpf(0))
        bands = sum((_mp(m) for m in case["band_masses"]), mpmath.mpf(0))
        assert abs(atoms + bands - 1) < TOL_QUAD
        values = [_mp(p["cdf"]) for p in case["cdf"]]
        assert values == sorted(values)


@pytest.mark.parametrize("case_id", list(CASES))
def test_quadrature_moments_match_exact_moments(case_id):
    """m1 = int x dmu and m2 = int x^2 dmu by 30-digit quadrature (atoms included)
    against the exact rationals, to TOL_QUAD (relative to 1 + |m|)."""
    case = CASES[case_id]
    with mpmath.workdps(DPS):
        for k in (1, 2):
            exact = Fraction(case["moments"][k - 1]["exact"])
            exact = mpmath.mpf(exact.numerator) / exact.denominator
            got = _mp(case["moments_by_quadrature"][f"m{k}"])
            assert abs(got - exact) < TOL_QUAD * (1 + abs(exact))


@pytest.mark.parametrize("case_id", list(CASES))
def test_free_cumulants_follow_from_moments(case_id):
    """Stored k1..k6 are the free cumulants of the stored m1..m6 (M(t) = C(t M(t)))."""
    case = CASES[case_id]
    kappa = _moments_to_cumulants(_exact_moments(case))
    assert kappa == [Fraction(k["exact"]) for k in case["free_cumulants"]]


@pytest.mark.parametrize("case_id", [c for c in CASES if CASES[c]["law"]["op"] == "free_additive"])
def test_free_cumulants_add(case_id):
    """Free cumulants of a boxplus b are those of a plus those of b (closed forms of
    the constituents; exact)."""
    case = CASES[case_id]
    a, b = case["law"]["args"]
    expected = [x + y for x, y in zip(_law_cumulants(a, 6), _law_cumulants(b, 6))]
    assert [Fraction(k["exact"]) for k in case["free_cumulants"]] == expected


def _first_two_moments(law):
    if law["op"] == "marchenko_pastur":
        v, c = Fraction(str(law["variance"])), Fraction(str(law["ratio"]))
        return v, v * v * (1 + c)
    m = _law_moments(law, 2)
    return m[1], m[2]


@pytest.mark.parametrize("case_id", [c for c in CASES if CASES[c]["law"]["op"]
                                     in ("free_multiplicative", "sample_covariance")])
def test_product_moments(case_id):
    """For free a, b: E(ab) = m1(a) m1(b) and
    m2(a boxtimes b) = m2(a) m1(b)^2 + m1(a)^2 m2(b) - m1(a)^2 m1(b)^2 (exact);
    sample_covariance(H, c) = marchenko_pastur(1, c) boxtimes H."""
    case = CASES[case_id]
    law = case["law"]
    if law["op"] == "sample_covariance":
        a = {"op": "marchenko_pastur", "variance": 1, "ratio": law["ratio"]}
        b = law["population"]
    else:
        a, b = law["args"]
    (a1, a2), (b1, b2) = _first_two_moments(a), _first_two_moments(b)
    m = _exact_moments(case)
    assert m[1] == a1 * b1
    assert m[2] == a2 * b1 ** 2 + a1 ** 2 * b2 - a1 ** 2 * b1 ** 2


@pytest.mark.parametrize("case_id", list(CASES))
def test_stored_values_solve_the_stored_equation(case_id):
    """Every stored G (density points, Stieltjes points) is a root of the stored P(z, G)
    with Im G < 0, and the density is -Im G / pi (40 digits, to TOL_40)."""
    case = CASES[case_id]
    terms = _poly_terms(case["polynomial"])
    with mpmath.workdps(DPS):
        for point in case["density"]:
            x, g = _mp(point["x"]), _mpc(point["G"])
            value, size = _poly_value(terms, x, g)
            assert abs(value) <= TOL_40 * size
            assert g.imag < 0
            rho = _mp(point["density"])
            assert abs(-g.imag / mpmath.pi - rho) <= TOL_40 * rho
        for point in case["stieltjes"]:
            zz, g = _mpc(point["z"]), _mpc(point["G"])
            value, size = _poly_value(terms, zz, g)
            assert abs(value) <= TOL_40 * size
            assert g.imag < 0


@pytest.mark.parametrize("case_id", list(CASES))
def test_edges_are_discriminant_roots(case_id):
    """Each edge is a real root of the stored discriminant of P in G (to TOL_40
    relative to the size of its terms), and the bands are ordered and disjoint."""
    case = CASES[case_id]
    disc = sp.Poly(sp.sympify(case["discriminant_in_G"]), z_sym)
    coeffs = [int(c) for c in disc.all_coeffs()]
    with mpmath.workdps(DPS):
        edges = [_mp(e) for e in case["edges"]]
        assert edges == sorted(edges) and len(set(edges)) == len(edges)
        assert [[_mp(a), _mp(b)] for a, b in case["bands"]] == [
            edges[k:k + 2] for k in range(0, len(edges), 2)]
        for e in edges:
            size = sum(abs(c) * abs(e) ** k for k, c in enumerate(reversed(coeffs)))
            assert abs(mpmath.polyval(coeffs, e)) <= TOL_40 * size


@pytest.mark.parametrize("case_id", ["sc_two_atoms", "sc_two_atoms_asym"])
def test_semicircle_plus_atoms_edges_are_critical_values(case_id):
    """Subordination: G = G_b(w), z = w + s2 G_b(w) on the real w axis off the atoms;
    the edges are the values z(w) at the real critical points (z'(w) = 0), found here
    independently with mpmath.  Case 5 splits: z'(1/2) = 0 gives the edge 3/10."""
    case = CASES[case_id]
    sc, atoms = case["law"]["args"]
    with mpmath.workdps(DPS):
        s2 = mpmath.mpf(str(sc["variance"]))
        a = [mpmath.mpf(str(v)) for v in atoms["values"]]
        w = [mpmath.mpf(str(v)) for v in atoms["weights"]]
        # z'(w) = 1 - s2 sum_i w_i/(w - a_i)^2 = 0, i.e.
        # (w - a0)^2 (w - a1)^2 = s2 (w0 (w - a1)^2 + w1 (w - a0)^2); highest power first.
        p0, p1 = [1, -2 * a[0], a[0] ** 2], [1, -2 * a[1], a[1] ** 2]
        lhs = [sum(p0[i] * p1[k - i] for i in range(3) if 0 <= k - i < 3) for k in range(5)]
        rhs = [0, 0] + [s2 * (w[0] * p1[k] + w[1] * p0[k]) for k in range(3)]
        crit = [r.real for r in mpmath.polyroots([l - r for l, r in zip(lhs, rhs)], maxsteps=200,
                                                  extraprec=200) if abs(r.imag) < TOL_40]
        values = sorted(c + s2 * sum(wi / (c - ai) for ai, wi in zip(a, w)) for c in crit)
        edges = [_mp(e) for e in case["edges"]]
        assert len(values) == len(edges) == 4
        assert max(abs(v - e) for v, e in zip(values, edges)) < TOL_40
        if case_id == "sc_two_atoms_asym":
            assert abs(edges[2] - mpmath.mpf(3) / 10) < TOL_40


@pytest.mark.parametrize("case_id", ["samplecov_two_atoms", "samplecov_two_atoms_wide",
                                     "mp_times_atoms"])
def test_sample_covariance_edges_are_critical_values(case_id):
    """Silverstein & Choi (1995): with the companion transform m, the inverse map
    x(m) = -1/m + c sum_i w_i t_i / (1 + t_i m) has the support edges among its values
    at real critical points; each stored edge is one of them (mpmath, to TOL_40)."""
    case = CASES[case_id]
    law = case["law"]
    if law["op"] == "sample_covariance":
        pop, c = law["population"], law["ratio"]
    else:
        pop, c = law["args"][1], law["args"][0]["ratio"]
    with mpmath.workdps(DPS):
        c = mpmath.mpf(str(c))
        t = [mpmath.mpf(str(v)) for v in pop["values"]]
        w = [mpmath.mpf(str(v)) for v in pop["weights"]]

        def x_of(m):
            return -1 / m + c * sum(wi * ti / (1 + ti * m) for ti, wi in zip(t, w))

        # x'(m) = 1/m^2 - c sum_i w_i t_i^2 / (1 + t_i m)^2 = 0, times m^2 prod (1 + t_i m)^2:
        q0, q1 = [t[0] ** 2, 2 * t[0], 1], [t[1] ** 2, 2 * t[1], 1]   # (1 + t m)^2, highest first
        prod = [sum(q0[i] * q1[k - i] for i in range(3) if 0 <= k - i < 3) for k in range(5)]
        rest = [c * (w[0] * t[0] ** 2 * q1[k] + w[1] * t[1] ** 2 * q0[k]) for k in range(3)]
        poly = [p - (rest[k] if k < 3 else 0) for k, p in enumerate(prod)]   # m^2 * rest
        crit = [r.real for r in mpmath.polyroots(poly, maxsteps=200, extraprec=200)
                if abs(r.imag) < TOL_40 and r.real != 0]
        values = [x_of(m) for m in crit]
        for e in case["edges"]:
            assert min(abs(v - _mp(e)) for v in values) < TOL_40


def test_fuss_catalan_closed_form():
    """mp_times_mp_square = Fuss-Catalan law of order 2: density against Penson &
    Zyczkowski, Phys. Rev. E 83, 061118 (2011), eq. (11) with s = 2 (TOL_40), edges
    0 and 27/4, moments binom(3k, k)/(2k + 1)."""
    case = CASES["mp_times_mp_square"]
    with mpmath.workdps(DPS):
        for point in case["density"]:
            x = _mp(point["x"])
            root = 27 + 3 * mpmath.sqrt(81 - 12 * x)
            c2 = mpmath.cbrt(2)
            rho = (c2 * mpmath.sqrt(3) / (12 * mpmath.pi)
                   * (c2 * root ** (mpmath.mpf(2) / 3) - 6 * mpmath.cbrt(x))
                   / (x ** (mpmath.mpf(2) / 3) * mpmath.cbrt(root)))
            assert abs(_mp(point["density"]) - rho) <= TOL_40 * rho
        assert [_mp(e) for e in case["edges"]] == [0, mpmath.mpf(27) / 4]
    moments = [Fraction(m["exact"]) for m in case["moments"]]
    assert moments == [Fraction(int(sp.binomial(3 * k, k)), 2 * k + 1) for k in range(1, 7)]
    assert case["atoms"] == []


def test_arcsine_closed_form():
    """bernoulli_plus_bernoulli = arcsine law on [0, 2]: density 1/(pi sqrt(x(2 - x))),
    CDF (2/pi) asin(sqrt(x/2)) (TOL_QUAD), G = 1/(sqrt(z) sqrt(z - 2)) (TOL_40),
    moments binom(2k, k)/2^k, no atoms."""
    case = CASES["bernoulli_plus_bernoulli"]
    with mpmath.workdps(DPS):
        for point in case["density"]:
            x = _mp(point["x"])
            rho = 1 / (mpmath.pi * mpmath.sqrt(x * (2 - x)))
            assert abs(_mp(point["density"]) - rho) <= TOL_40 * rho
        for point in case["cdf"]:
            x = _mp(point["x"])
            cdf = 2 * mpmath.asin(mpmath.sqrt(x / 2)) / mpmath.pi
            assert abs(_mp(point["cdf"]) - cdf) < TOL_QUAD
        for point in case["stieltjes"]:
            zz = _mpc(point["z"])
            g = 1 / (mpmath.sqrt(zz) * mpmath.sqrt(zz - 2))
            assert abs(_mpc(point["G"]) - g) <= TOL_40 * abs(g)
        assert [_mp(e) for e in case["edges"]] == [0, 2]
    moments = [Fraction(m["exact"]) for m in case["moments"]]
    assert moments == [Fraction(int(sp.binomial(2 * k, k)), 2 ** k) for k in range(1, 7)]
    assert case["atoms"] == []


def test_semicircle_sum_closed_form():
    """sc_plus_sc = semicircle(3): density sqrt(12 - x^2)/(6 pi), CDF, G (TOL_40 /
    TOL_QUAD), edges -+2 sqrt(3), moments 0, 3, 0, 18, 0, 135, cumulants (0, 3, 0, ...)."""
    case = CASES["sc_plus_sc"]
    with mpmath.workdps(DPS):
        r = 2 * mpmath.sqrt(3)
        for point in case["density"]:
            x = _mp(point["x"])
            rho = mpmath.sqrt(r * r - x * x) / (6 * mpmath.pi)
            assert abs(_mp(point["density"]) - rho) <= TOL_40 * rho
        for point in case["cdf"]:
            x = _mp(point["x"])
            with mpmath.workdps(DPS + 30):      # asin and sqrt cancel next to the edge
                rr = 2 * mpmath.sqrt(3)
                cdf = (mpmath.mpf(1) / 2 + x * mpmath.sqrt(rr * rr - x * x) / (mpmath.pi * rr * rr)
                       + mpmath.asin(x / rr) / mpmath.pi)
            assert abs(_mp(point["cdf"]) - cdf) < TOL_QUAD
        for point in case["stieltjes"]:
            zz = _mpc(point["z"])
            g = (zz - mpmath.sqrt(zz - r) * mpmath.sqrt(zz + r)) / 6
            assert abs(_mpc(point["G"]) - g) <= TOL_40 * abs(g)
        edges = [_mp(e) for e in case["edges"]]
        assert abs(edges[0] + r) < TOL_40 and abs(edges[1] - r) < TOL_40
    assert [Fraction(m["exact"]) for m in case["moments"]] == [0, 3, 0, 18, 0, 135]
    assert [Fraction(k["exact"]) for k in case["free_cumulants"]] == [0, 3, 0, 0, 0, 0]


def test_sample_covariance_atom_at_zero():
    """samplecov_two_atoms_wide (c = 3/2): atom 1 - 1/c = 1/3 at 0, nowhere else."""
    case = CASES["samplecov_two_atoms_wide"]
    assert [(a["location_exact"], a["mass_exact"]) for a in case["atoms"]] == [("0", "1/3")]
    with mpmath.workdps(DPS):
        assert abs(_mp(case["atoms"][0]["mass"]) - mpmath.mpf(1) / 3) < TOL_40
    for case_id, case in CASES.items():
        if case_id != "samplecov_two_atoms_wide":
            assert case["atoms"] == [], case_id


def test_closed_form_marchenko_pastur_parts():
    """The script's MP constituents went through the same pipeline: edges within 1e-35
    of v (1 -+ sqrt(c))^2, density within TOL_40 of the closed form, atom 1 - 1/c."""
    rows = DATA["marchenko_pastur_checks"]
    assert len(rows) >= 4
    for row in rows:
        assert float(row["edges_abs_err"]) < 1e-35
        assert float(row["density_max_rel_err"]) < float(TOL_40)
        assert abs(float(row["atom_at_0"]) - float(row["atom_expected"])) < 1e-9


def _reference_laws():
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("reference_laws")


@pytest.mark.parametrize("case_id, name, edges_name", [
    ("sc_two_atoms", "sc_two_atoms_density", "sc_two_atoms_edges"),
    ("samplecov_two_atoms", "samplecov_two_atoms_density", "samplecov_two_atoms_edges"),
    ("mp_plus_sc", None, "mp_plus_semicircle_edges"),
])
def test_benchmark_references_agree(case_id, name, edges_name):
    """benchmarks/reference_laws.py (30-digit cubic roots, unique-root branch rule) against
    this JSON (40-digit continuation): edges to 1e-15 relative, density to TOL_FLOAT."""
    ref = _reference_laws()
    case = CASES[case_id]
    if case_id == "mp_plus_sc":
        edges = ref.mp_plus_semicircle_edges(0.5, 1.0)
        density = ref.mp_plus_semicircle_density([float(p["x"]) for p in case["density"]], 0.5, 1.0)
    else:
        edges = getattr(ref, edges_name)()
        density = getattr(ref, name)([float(p["x"]) for p in case["density"]])
    assert len(edges) == len(case["edges"])
    for got, want in zip(edges, case["edges"]):
        assert abs(got - float(want)) <= 1e-15 * max(1.0, abs(float(want)))
    for got, point in zip(density, case["density"]):
        want = float(point["density"])
        assert abs(got - want) <= TOL_FLOAT * want
