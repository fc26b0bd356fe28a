"""Stacks of attention layers against 40-digit references (theory eqs. (13.2), (13.9)-(13.11)).

The references (``tests/reference/stack_references.json``) are written by
``tests/reference/make_stack_references.py`` with mpmath at 50 digits, stored
to 40, from the closed S-transform of the product (theory eqs. (13.9),
(13.10)): the upper edge is the critical value of ``chi`` (solved by
``findroot``), the density the continued root of ``chi(w) = 1/x``, the
hard-edge constant eq. (13.11).  They use no part of freeattn's solvers; the
script checked its moments against freeattn's exact ones (eq. (13.3)) to 30
digits and its density's mass and mean by quadrature (the numbers are in the
JSON's ``checks``).  Here the engine's ``attention_stack_law`` (the
subordination solve of theory eqs. (14.4), (14.6), (14.8)) is measured against
them.
"""

import json
import math
import pathlib
from fractions import Fraction

import numpy as np
import pytest

from freeattn.attention._stack_law import attention_stack_law

REFERENCE = pathlib.Path(__file__).parent / "reference" / "stack_references.json"
DATA = json.loads(REFERENCE.read_text())
CASES = DATA["cases"]

#: Upper edge, relative (the engine's fold of theory eq. (14.22), against the
#: critical value of eq. (13.10)).  Measured maximum 1.3e-15 (L = 2), 1.1e-15 (L = 3).
EDGE_RTOL = 1e-12
#: Density (``pdf``), relative, at the 19 fractions of the band stored.  Measured
#: maximum (eqs. (14.8), (14.21)) 3.1e-13 over the L = 2 cases, 6.3e-13 for L = 3
#: (the general path of eq. (14.4) for L = 2: 1.6e-11, at 0.999 of the band).
DENSITY_RTOL = 1e-10
#: Cauchy transform at two points off the axis inside the band and two real points
#: outside the support, relative.  Measured maximum 5.0e-16 (L = 2), 8.1e-16 (L = 3).
STIELTJES_RTOL = 1e-10
#: ``moment(k)``, k <= 6, against the references' 40 digits: the engine's moments
#: are exact series rounded to float (theory eqs. (8.21)-(8.24)); measured maximum
#: 6.7e-16 (L = 2) and 1.3e-15 (L = 3), a few ulps.
MOMENT_RTOL = 2e-15
#: The hard-edge constant C of eq. (13.11) against the engine's first panel
#: (``_edge_coefficient``).  Measured maximum 2.2e-16 (L = 2), 0 (L = 3).
HARD_EDGE_RTOL = 1e-12

FAST = ["L2_beta1_gamma1", "L2_beta0.5_gamma1", "L2_beta1_gamma0.5"]
SLOW = ["L2_mixed"]
DEEP = "L3_beta1_gamma1"

_LAWS = {}


def _law(name):
    if name not in _LAWS:
        case = CASES[name]
        _LAWS[name] = attention_stack_law([float(b) for b in case["betas"]],
                                          [float(g) for g in case["gammas"]],
                                          layers=case["layers"])
    return _LAWS[name]


def _floats(rows):
    return np.array([[float(v) for v in row] for row in rows])


def _edge_error(name):
    law = _law(name)
    (lo, hi), = law.intervals()
    ref = float(CASES[name]["intervals"][0][1])
    assert lo == 0.0                        # eq. (14.6): the support reaches 0
    return abs(hi / ref - 1.0)


def _density_error(name, rows=slice(None)):
    pts = _floats(CASES[name]["density"])[rows]
    got = _law(name).pdf(pts[:, 0])
    return float(np.max(np.abs(got / pts[:, 1] - 1.0)))


def _stieltjes_error(name):
    pts = _floats(CASES[name]["stieltjes"])
    z = pts[:, 0] + 1j * pts[:, 1]
    ref = pts[:, 2] + 1j * pts[:, 3]
    return float(np.max(np.abs(_law(name).stieltjes(z) / ref - 1.0)))


def _check_case(name, rows=slice(None)):
    case = CASES[name]
    law = _law(name)
    # edges: one band [0, x_+], x_+ = 1/chi(w*) (eq. (13.10))
    assert _edge_error(name) <= EDGE_RTOL
    # density at 0.001 .. 0.999 of the band (eq. (13.10)) and G (eq. (13.10))
    assert _density_error(name, rows) <= DENSITY_RTOL
    assert _stieltjes_error(name) <= STIELTJES_RTOL
    # exact moments (eq. (13.3)) against the reference series of eq. (13.10)
    ref = [float(m) for m in case["moments"]]
    got = [law.moment(k) for k in range(1, len(ref) + 1)]
    np.testing.assert_allclose(got, ref, rtol=MOMENT_RTOL, atol=0)
    # hard edge (eqs. (13.11), (14.6)): exponent -L/(L+1) exactly, and its constant
    iv = law.interval_details()[0]
    assert Fraction(iv.lo_exponent) == Fraction(case["hard_edge"]["exponent"])
    coef = float(case["hard_edge"]["coefficient"])
    assert abs(law._edge_coefficient() / coef - 1.0) <= HARD_EDGE_RTOL


def test_references_are_self_consistent():
    # the script's own checks, as stored: moments equal freeattn's exact ones (eq. (13.3))
    # to 30 digits, unit mass and the mean prod theta1 by quadrature to 1e-16, and
    # (13.11) approached like x**(1/(L+1)) at 1e-10, 1e-20, 1e-30 of the edge
    assert DATA["dps"] >= 40
    for name, case in CASES.items():
        checks = case["checks"]
        assert float(checks["moments_vs_freeattn_stack_moments_rel"]) <= 1e-30, name
        assert float(checks["quadrature_mass_minus_1"]) <= 1e-16, name
        assert float(checks["quadrature_mean_rel"]) <= 1e-16, name
        ratios = [float(r) for r in case["hard_edge"]["ratio_at_1e-10_1e-20_1e-30_of_edge"]]
        assert abs(ratios[2] - 1.0) < abs(ratios[1] - 1.0) < abs(ratios[0] - 1.0) < 0.1, name
        # the mean is the product of the layers' theta1 (eq. (13.3)), to the stored digits
        mean = np.prod([float(t) for t in case["theta1"]])
        assert abs(float(case["moments"][0]) / mean - 1.0) <= 1e-15, name
        assert len(case["density"]) == len(DATA["density_fractions"])


@pytest.mark.parametrize("name", FAST)
def test_two_layer_law_against_reference(name):
    _check_case(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_two_layer_law_per_layer_parameters_against_reference(name):
    # per-layer (beta, gamma) = (1, 1), (0.5, 0.5): the product of the two S_H of eq. (13.9)
    _check_case(name)


@pytest.mark.slow
def test_three_layer_law_against_reference():
    # eq. (13.10) with L = 3 (the engine's many-law system, eqs. (14.8), (14.21)), at
    # all 19 density points (measured <= 6.3e-13); the law costs about 0.1 s of CPU
    _check_case(DEEP)


#: Continuation levels (calls of Newton on eq. (14.8)) for one point of the three-layer
#: law: 17 measured with the predictor in the scaled unknowns z*omega (theory section
#: 14.8), 51 with the unscaled one.
CONTINUATION_LEVELS_MAX = 25


def test_three_layer_continuation_predicts_in_the_scaled_unknowns():
    # theory section 14.8: far from the axis omega ~ 1/z, so a level dividing y by 64
    # must start from the scaled secant, or Newton's damped steps do not reach it and
    # the level is retried; the point's value matches the warm solve (eq. (14.7))
    law = _law(DEEP)
    law.intervals()
    calls = []
    newton = law._newton

    def counting(om, t, steps, rtol):
        calls.append(t.size)
        return newton(om, t, steps, rtol)

    law._newton = counting
    try:
        om = law._continue(np.array([30.0]), np.zeros(1))
    finally:
        del law._newton
    assert len(calls) <= CONTINUATION_LEVELS_MAX
    warm, ok = law._solve_axis(np.array([30.0]))
    assert ok[0] and np.max(np.abs(warm - om) / np.abs(om)) <= 1e-12


def test_three_layer_table_reaches_the_edges():
    # theory section 14.16: the table of eq. (14.7) holds the narrowing rounds' points,
    # so a point 3e-9 (relative) below the upper edge is solved warm, without the
    # continuation; below the grid's first point the table reaches towards the hard
    # edge at 0 (its first point is at most 1e-11 of the grid's)
    law = _law(DEEP)
    (_, hi), = law.intervals()
    x = np.array([hi * (1 - 3e-9), hi * 0.999])
    warm, ok = law._solve_axis(x)
    assert ok.all()
    cont = law._continue(x, np.zeros(2))
    assert np.max(np.abs(warm - cont) / np.abs(cont)) <= NEAR_FOLD_RTOL
    from freeattn.compose._analytic import product_grid
    from freeattn.compose._chain import CHAIN_GRID
    grid0 = product_grid(law._bounds, CHAIN_GRID)[0]
    assert law._warm_x[0] <= 1e-11 * grid0


#: Next to a soft edge the density is ``c sqrt(x_+ - x) (1 + O(x_+ - x))`` (theory eq.
#: (14.9)), so pdf/sqrt(x_+ - x) at 4.4e-9 and 1e-8 (relative) below the edge equals its
#: value at 1e-6 to O(1e-6) plus the accuracy of the direct solve there: measured
#: 1.0e-6 and 1.0e-6.
SQRT_EDGE_RTOL = 1e-4
#: Agreement of two solves next to the fold (see the test): measured 9.3e-8.
NEAR_FOLD_RTOL = 1e-6


@pytest.mark.slow
def test_three_layer_law_solved_next_to_its_upper_edge():
    # eq. (14.8) next to a fold (theory section 14.9): at 4.4e-9 below the edge Newton's
    # last step is 1.2e-11 > CHAIN_ACCEPT_RTOL while the residual is at rounding; the
    # direct solve (no density representation) must accept it, not raise
    law = _law(DEEP)
    (_, hi), = law.intervals()
    x = hi * (1.0 - np.array([4.4e-9, 1e-8, 1e-6]))
    dens = law._density(x)
    g = law._stieltjes_exact(x.astype(complex))
    # the density solve and G at x + i0 (warm-started, theory eq. (14.7)) are two solves
    # of an ill-conditioned system next to the fold: measured 9.3e-8 apart at 4.4e-9
    # below the edge, 6.4e-10 at 1e-6 (about sqrt(eps) relative to the distance)
    assert np.all(dens > 0)
    np.testing.assert_allclose(dens, np.maximum(-g.imag, 0.0) / np.pi, rtol=NEAR_FOLD_RTOL)
    ratio = dens / np.sqrt(hi - x)
    assert np.max(np.abs(ratio[:2] / ratio[2] - 1.0)) <= SQRT_EDGE_RTOL


# ---------------------------------------------------------------------------
# Haar rotation at large N: the free product without free probability

#: Size and seeds of the Haar cross-check.  Measured KS distance of the eigenvalues of
#: T^{1/2} O T O^T T^{1/2} to the two-layer law at N = 1000: 0.0027-0.0031 (seeds 0-3;
#: 0.0018-0.0022 at N = 1500), of order 1/N, not 1/sqrt(N): the spectrum is rigid.
#: Two independent draws differ by 0.004.  The i.i.d. (bootstrap) width of a KS
#: distance from N values is about 1.36/sqrt(N) = 0.043 at 95%; the classical
#: (commuting) product of the same diagonals is 0.051 from the law.
HAAR_N = 1000
HAAR_SEEDS = (0, 1)
#: Bound on the KS distance: about three times the measured 0.0031.
HAAR_KS_MAX = 0.01
#: The commuting product must be farther than this (measured 0.051).
CLASSICAL_KS_MIN = 0.03


def _ks_to_law(values, law):
    v = np.sort(values)
    f = law.cdf(v)
    e = np.arange(1, v.size + 1) / v.size
    return float(np.max(np.maximum(np.abs(f - e), np.abs(f - (e - 1.0 / v.size)))))


@pytest.mark.slow
def test_two_layer_law_against_haar_rotation():
    # eq. (13.2) at L = 2 (beta = gamma = 1) without free probability: T = diag of the
    # single-layer law's quantiles (i + 1/2)/N, O Haar orthogonal (QR of a Gaussian with
    # the signs of diag(R)); T^{1/2} O T O^T T^{1/2} has, as N -> oo, the law nu ⊠ nu
    import freeattn

    one = freeattn.attention_law(1.0, 1.0).squared()
    law = _law("L2_beta1_gamma1")
    q = one.ppf((np.arange(HAAR_N) + 0.5) / HAAR_N)
    root = np.sqrt(q)
    for seed in HAAR_SEEDS:
        rng = np.random.default_rng(seed)
        o, r = np.linalg.qr(rng.standard_normal((HAAR_N, HAAR_N)))
        o *= np.sign(np.diag(r))
        ev = np.linalg.eigvalsh(root[:, None] * ((o * q) @ o.T) * root[None, :])
        assert _ks_to_law(ev, law) <= HAAR_KS_MAX, seed
    classical = q * np.random.default_rng(9).permutation(q)
    assert _ks_to_law(classical, law) >= CLASSICAL_KS_MIN


def test_table_points_beyond_the_support_may_fail_at_the_first_level():
    # the tables of theory section 14.16 continue points up to CHAIN_GAP_REACH times
    # beyond the support; at such |z| the factors' eta keep few digits and the first
    # level's Newton can miss CHAIN_LEVEL_RTOL (four attention laws, beta = 0.5: at
    # z = 3757.7 + 657.9i), which raised ConvergenceError for the whole law.  Such points
    # are optional: they come back as NaN (here the first level is made to fail at the
    # second point); any other point still raises
    import freeattn
    from freeattn.compose import _chain

    law = _law(DEEP)
    newton = law._newton
    first = _chain.CHAIN_LEVEL_STEPS * 4

    def failing(om, t, steps, rtol):
        new, ok = newton(om, t, steps, rtol)
        if steps == first and t.size == 2:
            ok = ok.copy()
            ok[1] = False
        return new, ok

    law._newton = failing
    try:
        x = np.array([30.0, 3000.0])
        om = law._continue(x, np.zeros(2), check=False, optional=np.array([False, True]))
        assert np.all(np.isfinite(om[:, 0])) and np.all(np.isnan(om[:, 1]))
        with pytest.raises(freeattn.ConvergenceError, match="far from the axis"):
            law._continue(x, np.zeros(2), check=False)
    finally:
        del law._newton


def test_equal_layers_are_solved_at_one_row_theory_14_18():
    # three equal layers: the unknowns of eq. (14.8) stay equal bit for bit (theory
    # section 14.18), so each Newton step evaluates the layer law at one row's points
    # (n, not 3 n); against the same system with the three factors as separate groups
    # (every row evaluated): G near and off the axis agree to 1e-13 (measured 9.1e-16)
    from freeattn.compose import _chain, _fixed_point

    law = _law(DEEP)
    law.intervals()
    # (20 + 0.3 i: near the axis, above the band where a point starts from its real
    # part, eq. (14.44) up to CHAIN_NEAR_AXIS_WIDE |x|, so that the three points are
    # solved in one batch)
    z = np.array([1.0 + 0.5j, 20.0 + 0.3j, 60.0 + 2.0j])
    assert z[1].imag > _chain.CHAIN_NEAR_AXIS_WIDE * z[1].real
    sizes = []
    row = law._group_rows[0]
    assert isinstance(row, _chain._LevelRow)       # eq. (14.21): the layer's own tau
    plain = row.map

    def counting(u):
        sizes.append(np.size(u))
        return plain(u)

    row.map = counting
    try:
        law._last = _fixed_point.WarmTable(_chain.CHAIN_WARM_TABLE)
        om = law._solve(z)
    finally:
        del row.map
    assert np.all(om == om[:1]) and sizes and max(sizes) == z.size
    g = law._g_from(om, z)
    f = law.factors[0]
    split = _chain.ProductChainLaw(law.factors)
    split._groups = tuple((f, [i]) for i in range(3))
    om2 = split._solve(z)
    ref = split._g_from(om2, z)
    assert np.max(np.abs(g / ref - 1.0)) <= 1e-13


#: The same law with every row's unknown its subordination point omega (each factor's
#: Cauchy transform solved by its tower, eq. (14.4)) against the rows of eq. (14.21):
#: G at points off and on the axis, relative.  Measured 1.9e-15 (L2_beta0.5_gamma1)
#: and 1.7e-15 (L2_mixed, two laws: the inner Newton of eq. (14.22)); the upper
#: edges 1.6e-15 and 7.8e-16.  A point on another sheet would be off by O(1).
ROWS_RTOL = 1e-13


@pytest.mark.parametrize("name", ["L2_beta0.5_gamma1", "L2_mixed"])
def test_level_rows_agree_with_omega_rows_eq_14_21(name):
    from freeattn.compose import _chain

    law = _law(name)
    assert all(isinstance(r, _chain._LevelRow) for r in law._rows)
    plain = _chain.ProductChainLaw(law.factors)
    rows = {id(f): _chain._OmegaRow(f) for f in law.factors}
    plain._rows = tuple(rows[id(f)] for f in law.factors)
    (lo, hi), = law.intervals()
    (lo2, hi2), = plain.intervals()
    assert lo2 == lo == 0.0 and abs(hi2 / hi - 1.0) <= EDGE_RTOL
    z = np.r_[hi * np.array([1e-6, 0.01, 0.3, 0.7, 0.99]) + 0j,
              hi * np.array([0.5 + 0.1j, 2.0 + 1.0j, 1.5, -1.0])]
    g, ref = law.stieltjes(z), plain.stieltjes(z)
    assert np.max(np.abs(g / ref - 1.0)) <= ROWS_RTOL


def test_fold_edge_eq_14_22_and_its_acceptance():
    # the upper edge from the real solution at 1e-3 above it (the continuation),
    # against eq. (13.10); started from a point 0.9 of the edge beyond it, the same
    # fold lies farther than 1.5 widths of the given cell and is refused (the
    # narrowing of eq. (14.9) takes over)
    law = _law(FAST[0])
    (_, hi), = law.intervals()
    ref = float(CASES[FAST[0]]["intervals"][0][1])
    x_out, x_in = np.array([hi * (1 + 1e-3)]), np.array([hi * (1 - 1e-3)])
    om = law._continue(x_out, np.zeros(1), check=False)
    xe, ok = law._fold_edges(x_out, om, x_in)
    assert ok[0] and abs(xe[0] / ref - 1.0) <= EDGE_RTOL
    far_out, far_in = np.array([hi * 1.9]), np.array([hi * 1.8])
    om = law._continue(far_out, np.zeros(1), check=False)
    xe, ok = law._fold_edges(far_out, om, far_in)
    assert not ok[0] and np.isnan(xe[0])


def test_deep_stack_eq_14_23():
    # eight layers: next to the hard edge prod omega_i and t eta**(L-1) leave the
    # float range (x = 1e-150: omega ~ t**(2/9) ~ 1e33, t eta**7 ~ 1e267 and beyond),
    # the relative last row of eq. (14.23) does not; the start's scale is the
    # moment radius, far below the bound prod sup_i (theory section 14.23)
    from freeattn.attention._stack_law import MAX_STACK_LAW_LAYERS

    law = attention_stack_law(1.0, 1.0, layers=8)
    # start's scale 8 x the moment radius, 1.0e4, against the bound 4.3e7 (the upper
    # edge is 2.3e3)
    assert law._start_scale() < 1e-3 * law._xscale
    (iv,) = law.interval_details()
    assert iv.lo == 0.0 and Fraction(iv.lo_exponent) == Fraction(-8, 9)
    # exact moments (theory eq. (13.3)): the mean is theta1**8, the mass 1 by quadrature
    assert abs(law.mean() / math.expm1(1.0) ** 8 - 1.0) <= MOMENT_RTOL
    assert abs(law.total_mass() - 1.0) <= 1e-12
    x = np.array([1e-150, 1e-60, 1e-20])
    om = law._continue(x, np.zeros(x.size))           # check=True: accepted or raises
    t = 1.0 / x.astype(complex)
    res, _, _, _ = law._system(om, t)
    assert np.all(np.isfinite(res)) and np.max(np.abs(res[-1])) <= 1e-13
    # x**(8/9) f(x) tends to the constant of eq. (13.11): the same to 1e-6 at the
    # two smallest points (the next term is O(x**(1/9)): 3e-3 at 1e-20 would not pass)
    c = -law._g_from(om, x + 0j).imag / np.pi * x ** (8 / 9)
    assert abs(c[0] / c[1] - 1.0) <= 1e-6
    with pytest.raises(ValueError, match="layers"):
        attention_stack_law(1.0, 1.0, layers=MAX_STACK_LAW_LAYERS + 1)
