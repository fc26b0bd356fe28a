"""The batched roots of the rational towers' polynomials (theory section 8.4,
eq. (8.29)): Cardano's and Ferrari's formulas with a backward check, and the
companion-matrix eigenvalues where the check fails; the first fit at 81 nodes
of a law solved on its tower (eq. (8.14))."""

import mpmath
import numpy as np
import pytest

import freeattn.algebra._rational as rational
from freeattn import (DEFAULT_OPTIONS, attention_law, free_additive, free_multiplicative,
                      marchenko_pastur, point_masses, semicircle)
from freeattn.algebra._chebyshev import build_representation
from freeattn.algebra._rational import _closed_form_roots, _companion_roots, batched_roots

#: Relative accuracy of a simple root after the formula and two Newton steps,
#: against mpmath at 50 digits (measured 1.0e-14 on random cubics and quartics).
ROOT_RTOL = 1e-13
#: mpmath's working precision for the reference roots (digits).
REFERENCE_DPS = 50


def _reference_roots(monic):
    """Roots of ``t**d + sum_k monic[k] t**k`` at REFERENCE_DPS digits (mpmath)."""
    with mpmath.workdps(REFERENCE_DPS):
        coeffs = [mpmath.mpf(1)] + [mpmath.mpf(float(c)) for c in monic[::-1]]
        return [complex(r) for r in mpmath.polyroots(coeffs, maxsteps=200, extraprec=200)]


def _matched_error(roots, reference):
    """Largest relative distance from each reference root to a distinct computed one."""
    left = list(roots)
    worst = 0.0
    for r in reference:
        k = int(np.argmin([abs(r - t) for t in left]))
        worst = max(worst, abs(r - left.pop(k)) / abs(r))
    return worst


@pytest.mark.parametrize("degree", [3, 4])
def test_closed_form_roots_match_mpmath_eq_8_29(degree):
    """eq. (8.29): on 40 random real cubics/quartics (numpy.random.default_rng(7),
    standard normal coefficients, real roots and complex pairs) every column
    passes the backward check and every root is within ROOT_RTOL of mpmath's."""
    monic = np.random.default_rng(7).standard_normal((degree, 40))
    roots, ok = _closed_form_roots(monic)
    assert ok.all()
    for j in range(monic.shape[1]):
        assert _matched_error(roots[:, j], _reference_roots(monic[:, j])) <= ROOT_RTOL


def test_the_backward_check_sends_a_lost_root_to_the_companion_matrix_eq_8_29(monkeypatch):
    """eq. (8.29): a column whose formula roots lost a root (two estimates on one
    root, as at a near-double root) misses the check and is solved by the companion
    matrix; the others keep the formula's roots.  The quartics have the roots
    {1, 2, 3, 4} and {-1, 0.5, 2, 5}; the formula is made to return 1 twice for
    the first."""
    true = [np.array([1.0, 2.0, 3.0, 4.0]), np.array([-1.0, 0.5, 2.0, 5.0])]
    coeffs = np.array([np.poly(r)[::-1] for r in true]).T        # lowest first, monic
    original = rational._quartic_roots

    def lossy(a, b, c, d):
        roots = original(a, b, c, d)
        roots[:, 0] = [1.0, 1.0, 3.0, 4.0]
        return roots
    monkeypatch.setattr(rational, "_quartic_roots", lossy)
    _, ok = _closed_form_roots(coeffs[:-1])
    assert list(ok) == [False, True]
    roots = batched_roots(coeffs)
    for j, r in enumerate(true):
        assert np.sort(roots[:, j].real) == pytest.approx(r, rel=1e-13, abs=1e-13)
        assert np.all(np.abs(roots[:, j].imag) <= 1e-13)


def test_complex_coefficients_and_other_degrees_take_the_companion_matrix_eq_8_29():
    """eq. (8.29) applies to real coefficients of degree 3 and 4 only: a point off the
    real axis (complex coefficients) and a quintic give exactly the companion
    matrix's eigenvalues."""
    rng = np.random.default_rng(3)
    cplx = rng.standard_normal((5, 6)) + 1j * rng.standard_normal((5, 6))
    cplx[-1] = 1.0
    assert np.array_equal(batched_roots(cplx), _companion_roots(cplx[:-1]))
    quintic = rng.standard_normal((6, 6))
    quintic[-1] = 1.0
    assert np.array_equal(batched_roots(quintic), _companion_roots(quintic[:-1]))


def test_a_tower_law_fits_its_panels_in_one_round_eq_8_14():
    """eq. (8.14): a law solved on its rational tower starts every panel at 81 nodes
    (CHEAP_SOLVER_START_NODES), where MP ⊞ SC converges: one call of its density
    solver (measured; at 9 nodes first, two), and the representation agrees with
    the tower solved directly at 201 interior points to 1e-13 (the representation's
    tolerance 2e-15 of the largest coefficient, and the solver's rounding)."""
    law = free_additive(marchenko_pastur(1.0, 0.5), semicircle(1.0))
    calls = []

    def density(x):
        calls.append(x.size)
        return law._density(x)
    assert law._first_panel_nodes() == 81
    rep = build_representation(density, law.interval_details(), law.options,
                               start_nodes=law._first_panel_nodes())
    assert len(calls) == 1
    (lo, hi), = law.intervals()
    x = np.linspace(lo, hi, 203)[1:-1]
    assert rep.pdf(x) == pytest.approx(law._density(x), rel=1e-13)
    calls.clear()
    build_representation(density, law.interval_details(), law.options)
    assert len(calls) == 2


def test_start_nodes_is_checked_and_clipped_eq_8_14():
    """eq. (8.14): start_nodes must be a positive integer, and is clipped to
    [cheb_start_nodes, cheb_max_nodes]."""
    law = free_additive(marchenko_pastur(1.0, 0.5), semicircle(1.0))
    for bad in (0, -3, 2.5, "81"):
        with pytest.raises(ValueError, match="start_nodes"):
            build_representation(law._density, law.interval_details(), DEFAULT_OPTIONS,
                                 start_nodes=bad)
    calls = []

    def density(x):
        calls.append(x.size)
        return law._density(x)
    build_representation(density, law.interval_details(), DEFAULT_OPTIONS, start_nodes=10 ** 6)
    assert calls[0] == 2 * DEFAULT_OPTIONS.cheb_max_nodes        # two panels at 243


def test_the_attention_law_beside_its_split_builds_in_one_round_eq_8_14(monkeypatch):
    """eq. (8.14) beside the support split of the attention law (beta = 1e-3,
    gamma = 0.9975556650172209, a gap of relative width 3.7e-10): its 45 graded
    panels start at 81 nodes and end there, at their rounding floor (read from the
    fit's own nodes at a third, or as a plateau) -- one round of tower solves
    (measured; three before the plateau test and the first fit at 81).  The mass
    check of the build holds (mass_atol).  beta carries a relative 1e-12 so that
    attention_law's cache cannot answer with a law built by another test."""
    import freeattn.compose._rational_solver as rs
    calls = []
    original = rs.RationalSolver.solve

    def counting(self, z, **kwargs):
        calls.append(z.size)
        return original(self, z, **kwargs)
    law = attention_law(1e-3 * (1 + 1e-12), 0.9975556650172209).squared()
    monkeypatch.setattr(rs.RationalSolver, "solve", counting)
    rep = law._representation()
    assert len(calls) == 1
    assert abs(rep.total - law._continuous_mass()) <= law.options.mass_atol + rep.edge_allowance


def test_eigvals_is_numpy_eigvals_without_its_argument_handling(capfd):
    """``eigvals`` calls the gufunc behind ``numpy.linalg.eigvals`` (LAPACK geev): the
    same eigenvalues bit for bit, as complex numbers, for float and complex, single
    and stacked matrices; a NaN entry raises numpy's own LinAlgError without reaching
    LAPACK (whose argument check would print "illegal value" on stderr)."""
    rng = np.random.default_rng(12)
    cases = (rng.standard_normal((3, 3)), rng.standard_normal((5, 4, 4)), np.diag([1.0, 2.0]),
             rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3)))
    for a in cases:
        got = rational.eigvals(a)
        assert got.dtype == np.complex128
        assert np.array_equal(got, np.linalg.eigvals(a).astype(complex))
    capfd.readouterr()
    for bad in (np.array([[np.nan, 1.0], [0.0, 1.0]]), np.full((2, 3, 3), np.inf + 0j)):
        with pytest.raises(np.linalg.LinAlgError):
            rational.eigvals(bad)
    assert "illegal value" not in capfd.readouterr().err


def test_all_roots_is_numpy_roots_of_the_reversed_coefficients():
    """``all_roots`` builds numpy.roots' companion matrix without its argument
    handling: the same eigenvalues, bit for bit, with leading zeros dropped and
    trailing ones (lowest-degree zeros) returned as roots at 0."""
    rng = np.random.default_rng(11)
    for poly in ([0.0, 0.0, 1.0, -3.0, 2.0], [2.0, -1.0, 0.5, 0.0, 0.0],
                 list(rng.standard_normal(7)), [5.0], [0.0, 0.0]):
        ref = np.roots(np.asarray(poly)[::-1])
        got = rational.all_roots(np.asarray(poly))
        assert np.array_equal(got, ref.astype(complex))


def test_the_branch_does_not_depend_on_the_order_of_the_roots_eq_8_10():
    """eq. (8.10): a ⊠ with a single atom c (a scaling, whose partner points are real
    with z) ties the scores of the branch root and of the real roots at 0 inside the
    support; the tie goes to the candidate with a density.  With the formula's root
    order (real roots first) the density of point_masses([1.361...]) ⊠ (the squared
    attention law at beta = 0.308, gamma = 7) was 0 from 1e-3 to 1e-13 (measured);
    it is the scaled law's, f(x/c)/c, within 1e-12 relative (closed form of the
    scaling, theory eq. (8.7); measured 6.7e-16), whichever order the root finder
    returns."""
    c = 1.361036378195878
    att = attention_law(0.30831884682437966, 7.0).squared()
    # with options the S-level is built (without, the affine scaling of eq. (8.7))
    law = free_multiplicative(point_masses([c], [1.0]), att, options=att.options)
    x = 10.0 ** -np.arange(2.0, 14.0)
    ref = att.pdf(x / c) / c
    assert law._density(x) == pytest.approx(ref, rel=1e-12)
    solver = law._solver
    z = x.astype(complex)
    coeffs = solver.num[:, None] - z[None, :] * solver.den[:, None]
    roots = solver._newton(coeffs, batched_roots(coeffs))
    for order in (slice(None), slice(None, None, -1)):
        _, g, _, _, _, _ = solver._select(roots[order], z)
        assert -g.imag / np.pi == pytest.approx(ref, rel=1e-12)     # measured 6.7e-16


#: The scaled law ``s b`` against ``b``'s own edges times ``s`` and ``f(x/s)/s``: the same
#: float operations in another order (measured equal), to a few ulps.
SCALING_EDGE_RTOL = 1e-15
SCALING_PDF_RTOL = 1e-14


def test_a_single_atom_times_a_law_is_its_scaling_eq_8_7():
    """``point_masses([s]) ⊠ b`` is ``s b`` (eq. (8.7)): as an S-level, MP(1.6425,
    2.2333) ⊠ point_masses([3.132]) took the conjugate root at x = 16.29 (Im G =
    +0.041) and raised (the depth-3 campaign's seed 10 / draw 24).  Against the
    closed form f(x/s)/s: the same float operations, to 1e-14 (measured equal)."""
    s = 3.132
    mp = marchenko_pastur(1.6425, 2.2333)
    for law in (free_multiplicative(point_masses([s], [1.0]), mp),
                free_multiplicative(mp, point_masses([s], [1.0]))):
        lo, hi = law.intervals()[0]
        mlo, mhi = mp.intervals()[0]
        assert lo == pytest.approx(s * mlo, rel=SCALING_EDGE_RTOL)
        assert hi == pytest.approx(s * mhi, rel=SCALING_EDGE_RTOL)
        x = np.array([1.5, 10.0, 16.2865679394651, 31.9])
        assert law.pdf(x) == pytest.approx(mp.pdf(x / s) / s, rel=SCALING_PDF_RTOL)
        loc, mass = law.atoms()
        assert loc.tolist() == [0.0]
        assert mass[0] == pytest.approx(1 - 1 / 2.2333, rel=SCALING_EDGE_RTOL)

