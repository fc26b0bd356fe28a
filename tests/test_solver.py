"""Tests of the Silverstein engine (freeattn._solver) and of the algebra of
theory/05_fixed_point.md and theory/06_edges.md, symbolically with sympy where
the statement is an identity."""

import numpy as np
import pytest
import sympy as sp

from freeattn import ConvergenceError
from freeattn._solver import (AffineMarchenkoPasturPopulation, PointMassPopulation,
                              SampleCovarianceLaw, free_cumulants_to_moments, select_branch)

a, b, lam, z, u, c, t, M = sp.symbols("a b lambda z u c t M")


def test_silverstein_inverse_form_eq_5_3():
    """eq. (5.3): z = -1/mbar + c int t dH/(1 + t mbar) with u = -1/mbar becomes
    z = u(1-c) - c u^2 m_H(u), checked for a two-atom H with sympy."""
    t1, t2, w1 = sp.symbols("t1 t2 w1", positive=True)
    mbar = -1 / u
    standard = -1 / mbar + c * (w1 * t1 / (1 + t1 * mbar) + (1 - w1) * t2 / (1 + t2 * mbar))
    m_h = w1 / (t1 - u) + (1 - w1) / (t2 - u)
    assert sp.simplify(standard - (u * (1 - c) - c * u ** 2 * m_h)) == 0


def test_mbar_relation_eq_5_2():
    """eq. (5.2): for MP with c = 2 the law's m(z) from mbar matches the closed
    form Stieltjes transform of MP (atom 1/2 at 0); rtol 1e-12."""
    law = SampleCovarianceLaw(PointMassPopulation(1.0), 2.0)
    zz = np.array([1.0 + 0.5j, 3.0 + 0.1j, -1.0 + 2.0j])
    m = law.stieltjes(zz)
    # MP, v = 1, ratio c: c z m^2 + (z + c - 1) m + 1 = 0 (Bai & Silverstein 2010, eq. 3.1.1)
    np.testing.assert_allclose(2 * zz * m * m + (zz + 1) * m + 1, 0, atol=1e-12)
    assert np.all(m.imag > 0)


def test_mp_population_transform_eq_5_5():
    """eq. (5.5): M(w) solves lambda w M^2 + (w + lambda - 1) M + 1 = 0, behaves
    as -1/w, and equals the integral of the MP density (scipy quad, rtol 1e-9)."""
    from scipy.integrate import quad

    pop = AffineMarchenkoPasturPopulation(0.0, 1.0, 2.5)
    lo, hi = (1 - np.sqrt(2.5)) ** 2, (1 + np.sqrt(2.5)) ** 2
    w = np.array([0.7 + 0.3j, 5.0 + 0.01j, -2.0 + 1.0j, 1e6 + 1.0j])
    mw = pop.mp_stieltjes(w)
    np.testing.assert_allclose(2.5 * w * mw ** 2 + (w + 1.5) * mw + 1, 0, atol=1e-12)
    assert abs(mw[-1] * w[-1] + 1) < 1e-5

    def dens(x):
        return np.sqrt((hi - x) * (x - lo)) / (2 * np.pi * 2.5 * x)

    w0 = 2.0 + 0.5j
    re = quad(lambda x: (dens(x) / (x - w0)).real, lo, hi, epsabs=1e-13)[0]
    im = quad(lambda x: (dens(x) / (x - w0)).imag, lo, hi, epsabs=1e-13)[0]
    atom = (1 - 1 / 2.5) / (0 - w0)
    assert pop.mp_stieltjes(np.array([w0]))[0] == pytest.approx(re + 1j * im + atom, rel=1e-9)


def test_quartic_form_eq_5_6():
    """eq. (5.6): inserting M = b R/(c u^2) into the MP quadratic at w = (u-a)/b
    gives the quartic; the c = 1 expansion is the one in the notes; the engine's
    coefficients agree at random points (rtol 1e-14)."""
    r = u * (1 - c) - z
    mm = b * r / (c * u ** 2)
    w = (u - a) / b
    quad_ = lam * w * mm ** 2 + (w + lam - 1) * mm + 1
    quartic = (lam * b * (u - a) * r ** 2 + (u - a + b * (lam - 1)) * c * r * u ** 2
               + c ** 2 * u ** 4)
    assert sp.simplify(quad_ * c ** 2 * u ** 4 - quartic) == 0
    c1 = (u ** 4 - z * u ** 3 - (b * (lam - 1) - a) * z * u ** 2 + lam * b * z ** 2 * u
          - lam * a * b * z ** 2)
    assert sp.expand(quartic.subs(c, 1) - c1) == 0
    pop = AffineMarchenkoPasturPopulation(0.3, 0.7, 4.0)
    zz = np.array([0.5 + 0.2j, 2.0 + 0j])
    for cc in (1.0, 0.4):
        coeffs = pop.silverstein_polynomial(zz, cc)
        poly = sp.Poly(sp.expand(quartic.subs({a: 0.3, b: 0.7, lam: 4.0, c: cc})), u)
        for k, zk in enumerate(zz):
            expected = [complex(cf.subs(z, zk)) for cf in poly.all_coeffs()]
            got = [complex(np.broadcast_to(cf, zz.shape)[k]) for cf in coeffs]
            np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)


def test_branch_selection_eq_5_7():
    """eq. (5.7): of the four roots of (5.6) the selected one is in C+ and solves the
    transcendental equation; the other roots do not (residual > 1e-3), and a set
    of candidates without an admissible root leads to ConvergenceError."""
    pop = AffineMarchenkoPasturPopulation(0.2, 0.8, 10.0)
    law = SampleCovarianceLaw(pop, 1.0)
    zz = np.array([0.5 + 0.0j, 2.0 + 0.3j, 5.0 + 1e-3j])
    from freeattn._solver import poly_roots, silverstein_residual
    roots = poly_roots(pop.silverstein_polynomial(zz, 1.0))
    best, res = select_branch(roots, zz, pop, 1.0)
    assert np.all(res < 1e-10) and np.all(best.imag > 0)
    for k in range(zz.size):
        others = [r for r in roots[:, k] if abs(r - best[k]) > 1e-8]
        resid = np.abs(silverstein_residual(np.array(others), zz[k], pop, 1.0))
        assert np.all((resid > 1e-3) | (np.array(others).imag < 0))

    class WrongSheet(AffineMarchenkoPasturPopulation):
        def stieltjes(self, uu):                      # deliberately not the true m_H
            return -super().stieltjes(uu)

    bogus = SampleCovarianceLaw(WrongSheet(0.2, 0.8, 10.0), 1.0)
    with pytest.raises(ConvergenceError, match="residual") as info:
        bogus.solve_u(np.array([2.0 + 0.3j]))
    assert info.value.residual > info.value.tolerance


def test_free_cumulants_eq_5_8_5_9_narayana_eq_5_10():
    """eqs. (5.8), (5.9) and (5.10): with kappa_k = c^(k-1) (H = delta_1) the moment-cumulant
    recursion gives the Narayana polynomials (MP moments); exact in sympy."""
    cc = sp.Symbol("c")
    m = free_cumulants_to_moments([cc ** (k - 1) for k in range(1, 6)])
    narayana = [1] + [sum(cc ** r * sp.binomial(j, r) * sp.binomial(j - 1, r) / (r + 1)
                          for r in range(j)) for j in range(1, 6)]
    assert all(sp.expand(x - y) == 0 for x, y in zip(m, narayana))
    pop = AffineMarchenkoPasturPopulation(0.0, 1.0, 3.0)
    expected = [float(sp.sympify(x).subs(cc, 3)) for x in narayana[:5]]
    np.testing.assert_allclose(pop.moments(4), expected, rtol=1e-15)


def _series_moments(kmax):
    """Moments from the power series of (5.6) at z = oo: m = -sum m_k z^(-k-1)."""
    y = sp.Symbol("y")                                  # y = 1/z
    ms = sp.symbols(f"m1:{kmax + 1}")
    mser = -(y + sum(ms[k - 1] * y ** (k + 1) for k in range(1, kmax + 1)))
    # m-form of (5.6) at c = 1, multiplied by y^2 (z = 1/y)
    expr = sp.expand(lam * a * b * mser ** 4 + lam * b * mser ** 3
                     - (a - b * (lam - 1)) * y * mser ** 2 - y * mser - y ** 2)
    sol = {}
    for order in range(3, kmax + 3):
        coeff = sp.expand(expr.coeff(y, order)).subs(sol)
        unknown = ms[order - 3]
        sol[unknown] = sp.solve(coeff, unknown)[0]
    return [sp.simplify(sol[ms[k]]) for k in range(kmax)]


def test_moments_from_series_eq_5_11_5_12_5_13():
    """eqs. (5.11), (5.12) and (5.13): the series of (5.6) at infinity gives m1 = theta1,
    m2 = 2 theta1^2 + beta^4/gamma, m3 = 5 theta1^3 + 6 theta1 beta^4/gamma +
    beta^6/gamma^2 (theta1 = a + b, b = beta^2, lambda = 1/gamma), and these equal
    the free-cumulant moments of eq. (5.8)-(5.10); exact in sympy."""
    m1, m2, m3, m4 = _series_moments(4)
    th = a + b
    assert sp.simplify(m1 - th) == 0
    assert sp.simplify(m2 - (2 * th ** 2 + lam * b ** 2)) == 0
    assert sp.simplify(m3 - (5 * th ** 3 + 6 * lam * b ** 2 * th + lam ** 2 * b ** 3)) == 0
    h = [sp.Integer(1)] + [sp.expand(sum(sp.binomial(k, j) * a ** (k - j) * b ** j
                                         * (1 if j == 0 else sum(lam ** r * sp.binomial(j, r)
                                                                 * sp.binomial(j - 1, r) / (r + 1)
                                                                 for r in range(j)))
                                         for j in range(k + 1))) for k in range(1, 5)]
    fc = free_cumulants_to_moments(h[1:])
    for k, mk in enumerate((m1, m2, m3, m4), start=1):
        assert sp.simplify(fc[k] - mk) == 0


def test_beta_to_zero_limit_eq_5_14_fuss_catalan():
    """eq. (5.14): a = 0, b = 1 in the m-form of (5.6) gives
    lambda z^2 G^3 + (1-lambda) z G^2 - z G + 1 = 0 (G = -m); at lambda = 1 its
    series has the Fuss-Catalan moments 1, 3, 12, 55 (Banica et al. 2011)."""
    mm = sp.Symbol("m")
    mform = (lam * a * b * z ** 2 * mm ** 4 + lam * b * z ** 2 * mm ** 3
             - (a - b * (lam - 1)) * z * mm ** 2 - z * mm - 1)
    g = sp.Symbol("G")
    reduced = sp.expand(-mform.subs({a: 0, b: 1}).subs(mm, -g))
    assert sp.expand(reduced - (lam * z ** 2 * g ** 3 + (1 - lam) * z * g ** 2 - z * g + 1)) == 0
    fc = _series_moments(4)
    assert [sp.simplify(x.subs({a: 0, b: 1, lam: 1})) for x in fc] == [1, 3, 12, 55]


def test_parametrisation_and_edge_cubic_eq_6_2_6_3():
    """eqs. (6.2) and (6.3): w(t) inverts the MP quadratic, and for c = 1 the numerator
    of dx/dt is -u times the cubic (6.3) over t (lambda t + 1)^2; sympy."""
    w = -((lam - 1) * t + 1) / (t * (lam * t + 1))
    assert sp.simplify(lam * w * t ** 2 + (w + lam - 1) * t + 1) == 0
    uu = a + b * w
    x = -uu ** 2 * t / b
    cubic = (2 * b * (lam * (lam - 1) * t ** 2 + 2 * lam * t + 1) + a * t * (lam * t + 1) ** 2
             - b * ((lam - 1) * t + 1) * (lam * t + 1))
    assert sp.simplify(sp.diff(x, t) + uu * cubic / (b * t * (lam * t + 1) ** 2)) == 0


def test_support_complement_eq_6_1():
    """eq. (6.1): real u off supp H with x'(u) > 0 map outside the support, and
    points inside the support have density > 0 (beta = 0.5, gamma = 0.1, split)."""
    from freeattn._coefficients import linear_coefficients
    co = linear_coefficients(0.5)
    pop = AffineMarchenkoPasturPopulation(co.alpha2 / co.theta1, co.theta2 / co.theta1, 10.0)
    law = SampleCovarianceLaw(pop, 1.0)
    iv = law.intervals()
    assert len(iv) == 2
    hi_h = pop.shift + pop.scale * (1 + np.sqrt(10.0)) ** 2
    lo_h = pop.shift + pop.scale * (1 - np.sqrt(10.0)) ** 2
    uu = np.concatenate([np.linspace(pop.shift * 1.001, lo_h * 0.999, 400),
                         np.linspace(hi_h * 1.001, 30 * hi_h, 400)])
    xu = (-uu ** 2 * pop.stieltjes(uu + 0j)).real
    dx = np.gradient(xu, uu)
    inc = xu[dx > 0]
    for lo, hi in iv:
        assert not np.any((inc > lo + 1e-9) & (inc < hi - 1e-9))
    mids = [0.5 * (lo + hi) for lo, hi in iv]
    assert np.all(law.density(np.array(mids)) > 0)


def test_hard_edge_coefficient_eq_6_6():
    """eq. (6.6): u = kappa sqrt(z) in the quartic gives kappa^4 - (b(lambda-1) - a)
    kappa^2 - lambda a b = 0 at order z^2 (sympy); sqrt(x) f(x) -> 1/(pi |kappa|)
    numerically (rtol 1e-6 at x = 1e-14); MP value 1/pi."""
    k, zz = sp.symbols("kappa zeta", positive=True)
    quartic = (u ** 4 - z * u ** 3 - (b * (lam - 1) - a) * z * u ** 2 + lam * b * z ** 2 * u
               - lam * a * b * z ** 2)
    lead = sp.expand(quartic.subs({u: k * zz, z: zz ** 2})).coeff(zz, 4)
    assert sp.expand(lead - (k ** 4 - (b * (lam - 1) - a) * k ** 2 - lam * a * b)) == 0
    pop = AffineMarchenkoPasturPopulation(0.4, 0.6, 3.0)
    law = SampleCovarianceLaw(pop, 1.0)
    x = 1e-14
    assert np.sqrt(x) * law.density(np.array([x]))[0] == pytest.approx(
        pop.hard_edge_coefficient(), rel=1e-6)
    assert PointMassPopulation(1.0).hard_edge_coefficient() == pytest.approx(1 / np.pi)


def test_mpmath_path_matches_float():
    """stieltjes_mp (40 dps, eq. (5.3) by continuation) agrees with the float solver
    at Im z > 0 (rtol 1e-13)."""
    pop = AffineMarchenkoPasturPopulation(0.3, 0.7, 2.0)
    law = SampleCovarianceLaw(pop, 1.0)
    zz = 1.3 + 0.2j
    ref = complex(law.stieltjes_mp(zz, dps=40))
    assert law.stieltjes(np.array([zz]))[0] == pytest.approx(ref, rel=1e-13)


class _OpaquePopulation:
    """A population that only knows its Stieltjes transform (no polynomial form),
    standing in for a nested, non-algebraic population (SPEC section 5)."""

    def __init__(self, population):
        self._population = population

    def stieltjes(self, uu):
        return self._population.stieltjes(uu)


@pytest.mark.parametrize("beta, gamma", [(1.0, 1.0), (0.5, 0.1), (2.0, 0.02)])
def test_continuation_path_matches_polynomial_path_eq_5_3(beta, gamma):
    """eq. (5.3) solved by Newton with continuation in Im z (no polynomial, m_H'
    by central differences) equals the polynomial path with branch selection
    (rtol 1e-12), on the support, off it and above the axis."""
    from freeattn._coefficients import linear_coefficients
    co = linear_coefficients(beta)
    pop = AffineMarchenkoPasturPopulation(co.alpha2 / co.theta1, co.theta2 / co.theta1, 1 / gamma)
    law = SampleCovarianceLaw(pop, 1.0)
    generic = SampleCovarianceLaw(_OpaquePopulation(pop), 1.0)
    iv = law.intervals()
    x = np.concatenate([np.linspace(lo, hi, 23)[1:-1] for lo, hi in iv]
                       + [np.array([1.1 * iv[-1][1], 3 * iv[-1][1]])])
    zz = np.concatenate([x + 0j, x + 0.1j])
    np.testing.assert_allclose(generic.solve_u(zz), law.solve_u(zz), rtol=1e-12)


def test_real_z_off_support_takes_increasing_branch_eq_6_1():
    """eq. (6.1): for real x above the support the Stieltjes value is the real root
    with x'(u) > 0, which equals the limit from above (mpmath at Im z = 1e-15,
    stieltjes_mp's offset 10**-(dps//2) at 30 dps; rtol 1e-12) although other real roots of (5.6) solve (5.3) too."""
    from freeattn._coefficients import linear_coefficients
    co = linear_coefficients(1.0)
    pop = AffineMarchenkoPasturPopulation(co.alpha2 / co.theta1, co.theta2 / co.theta1, 1.0)
    law = SampleCovarianceLaw(pop, 1.0)
    x = 1.1 * law.intervals()[-1][1]
    ref = complex(law.stieltjes_mp(x, dps=30))
    got = law.stieltjes(np.array([x + 0j]))[0]
    assert got.real == pytest.approx(ref.real, rel=1e-12)
    assert abs(got.imag) < 1e-12
