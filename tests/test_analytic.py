"""Analytic subordination engine (theory section 14, freeattn/compose/_analytic.py)."""

import json
import math
import pathlib
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import freeattn
from freeattn.compose import _analytic
from freeattn.compose._analytic import AnalyticLaw, analytic_additive, analytic_multiplicative
from freeattn.compose._fixed_point import FixedPointProblem, edge_newton, iterate, newton
from freeattn.compose._sum_support import LawBranches

BER = freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])
#: Closed form (theory section 14.5): Bernoulli ⊞ Bernoulli is the arcsine law on
#: [-2, 2], density 1/(pi sqrt(4 - x^2)), G(z) = 1/sqrt(z^2 - 4).
ARCSINE_RTOL = 1e-10


def _arcsine():
    # two equal laws that are distinct objects: the two-law map of eq. (14.1), whose
    # closed forms the tests below use (one object twice takes eq. (14.19))
    return freeattn.free_additive(BER, freeattn.point_masses([-1.0, 1.0], [0.5, 0.5]))


def test_arcsine_is_an_analytic_law_with_exact_edges():
    law = _arcsine()
    assert isinstance(law, AnalyticLaw)
    (lo, hi), = law.intervals()
    # closed form: the support is [-2, 2]; the bordered Newton of eq. (14.5)
    assert abs(lo + 2.0) <= 1e-12 and abs(hi - 2.0) <= 1e-12
    iv = law.interval_details()[0]
    assert float(iv.lo_exponent) == -0.5 and float(iv.hi_exponent) == -0.5


def test_arcsine_density_and_stieltjes_closed_form():
    # eq. (14.1) solved by eq. (14.2) then eq. (14.3), against the closed form.
    law = _arcsine()
    x = np.linspace(-1.99, 1.99, 41)
    exact = 1.0 / (math.pi * np.sqrt(4.0 - x ** 2))
    direct = law._density(x)
    assert np.max(np.abs(direct / exact - 1.0)) <= ARCSINE_RTOL
    z = np.array([1j, 0.5 + 0.1j, -3.0 + 2j, 3.0 + 0j])
    g_exact = 1.0 / (np.sqrt(z - 2.0) * np.sqrt(z + 2.0))
    assert np.max(np.abs(law.stieltjes(z) / g_exact - 1.0)) <= 1e-12
    assert abs(law.total_mass() - 1.0) <= 1e-10
    assert abs(law.var() - 2.0) <= 1e-10                     # variances add


def test_iteration_converges_from_any_start():
    # eq. (14.2): the Belinschi-Bercovici iteration from far starts reaches the
    # closed-form subordination point (z - sqrt(z^2-4))... the root with Im >= Im z.
    law = _arcsine()
    z = np.full(4, 0.3 + 0.5j)
    w0 = np.array([1j, 100j, 5.0 + 0.01j, -40.0 + 3j])
    res = iterate(law._problem, z, w0)
    assert res.converged.all()
    root = (z + np.sqrt(z - 2) * np.sqrt(z + 2)) / 2
    root = np.where(root.imag >= z.imag, root, z - root)
    assert np.max(np.abs(res.value - root)) <= 1e-12


def test_newton_polishes_to_rounding():
    # eq. (14.3): Newton from a rough start converges to residual at rounding.
    law = _arcsine()
    z = np.array([0.7 + 1e-3j, -1.5 + 1e-6j])
    root = (z + np.sqrt(z - 2) * np.sqrt(z + 2)) / 2
    res = newton(law._problem, z, root * (1 + 1e-3))
    assert res.converged.all() and np.max(np.abs(res.value - root)) <= 1e-13


def _mp_edge(a, b, w, x):
    """Independent 40-digit solve of eq. (14.5) for two discrete laws."""
    mpmath.mp.dps = 40

    def h(law, u):
        g = mpmath.fsum(mpmath.mpf(float(m)) / (u - mpmath.mpf(float(t)))
                        for t, m in zip(law.values, law.weights))
        return 1 / g - u

    def phi(w, x):
        return x + h(b, x + h(a, w))

    def eqs(w, x):
        return [w - phi(w, x), 1 - mpmath.diff(lambda v: phi(v, x), w)]

    sol = mpmath.findroot(eqs, (mpmath.mpf(w), mpmath.mpf(x)))
    return float(sol[1])


def test_three_band_discrete_sum_edges():
    # The silent-wrong-support case: three bands, edges from eq. (14.5), checked
    # by an independent 40-digit mpmath solve of the same fold condition started
    # from the float edge, and the mass/moments against the exact ones.
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    assert len(ivs) == 3
    ws = np.array([ivs[0][0], ivs[0][1], ivs[1][0], ivs[1][1], ivs[2][0], ivs[2][1]])
    # the subordination point at each edge from the real continuation just outside
    for e in ws:
        side = -1 if e in (ivs[0][0], ivs[1][0], ivs[2][0]) else 1
        xo = e + side * 1e-4
        w = law._continue(np.array([xo]), np.zeros(1))[0].real
        res = edge_newton(law._problem, np.array([w]), np.array([xo]))
        ref = _mp_edge(a, b, res.value[0, 0], res.value[0, 1])
        assert abs(e - ref) <= 1e-12 * 3
    assert abs(law.total_mass() - 1.0) <= 1e-10
    m1 = 0.3 * -1 + 0.4 * 2 + 0.5
    assert abs(law.mean() - m1) <= 1e-10


def _two_amplitude_density(x, eps):
    """Closed form: ``a = (delta_{-1-eps} + delta_1)/2`` is ``(1 + eps/2) U - eps/2`` and
    ``b = V`` for free symmetries ``U, V``, so ``lambda = x + eps/2`` has
    ``lambda**2 = a1**2 + a2**2 + 2 a1 a2 cos(theta)``, ``theta`` uniform (``UV`` is Haar):
    density ``|lambda| / (pi sqrt((lambda**2 - (a1 - a2)**2)((a1 + a2)**2 - lambda**2)))``
    on ``|a1 - a2| <= |lambda| <= a1 + a2`` (``a1 = 1 + eps/2``, ``a2 = 1``)."""
    a1, a2 = 1.0 + eps / 2, 1.0
    lam = x + eps / 2
    return np.abs(lam) / (np.pi * np.sqrt((lam ** 2 - (a1 - a2) ** 2) * ((a1 + a2) ** 2 - lam ** 2)))


def test_gaps_of_a_sum_of_two_discrete_laws_eq_14_20():
    # eq. (14.20) against the closed form above: bands [-2 - eps, -eps] and [0, 2], all
    # four edges pole edges (p_i + q_j = 1; edges at sums of atoms), for gaps of width
    # 1e-3 and 1e-7 -- 0.3 and 3e-5 of the locator's grid cell (4/1200), which returned
    # one band [-2 - eps, 2] for both; Bernoulli ⊞ Bernoulli (eps = 0) keeps one band:
    # there the curve omega_2 = -1/omega_1 has x = 0 and eq. (14.20) = 0 all along
    from freeattn.compose._discrete_sum_support import discrete_sum_edges

    b = (np.array([-1.0, 1.0]), np.array([0.5, 0.5]))
    assert discrete_sum_edges(*b, *b) == [(-2.0, 2.0, True, True)]
    for eps in (1e-3, 1e-7):
        a = (np.array([-1.0 - eps, 1.0]), np.array([0.5, 0.5]))
        bands = discrete_sum_edges(*a, *b)
        assert [bd[2:] for bd in bands] == [(True, True), (True, True)]
        edges = np.array([bd[:2] for bd in bands])
        ref = np.array([[-2.0 - eps, (-1.0 - eps) + 1.0], [0.0, 2.0]])
        assert np.max(np.abs(edges - ref)) <= 4 * np.finfo(float).eps
        law = freeattn.free_additive(freeattn.point_masses(*a), freeattn.point_masses(*b))
        assert np.allclose(np.array(law.intervals()), ref, rtol=0, atol=1e-15)
        x = np.r_[np.linspace(-2.0 - eps, -eps, 7)[1:-1], np.linspace(0.0, 2.0, 7)[1:-1]]
        assert np.max(np.abs(law._density(x) / _two_amplitude_density(x, eps) - 1)) <= 1e-12
        # the continued density in the middle of the gap is 0 up to where the continuation
        # stops (measured 2.4e-13 and 5.1e-9), against about 8 just inside the bands
        w = law._continue(np.array([-eps / 2]), np.zeros(1), check=False)
        g = law._g(w, np.array([-eps / 2 + 0j]))
        assert -g[0].imag / np.pi <= 1e-7
    # a sum with an atom (0.6 + 0.6 > 1): X = 2P - 1 for a projection P of trace
    # alpha = 0.4, and the sum of two free projections of trace alpha <= 1/2 has an atom
    # 1 - 2 alpha at 0 and its continuous part on 1 +- 2 sqrt(alpha (1 - alpha)), so the
    # band is [-2 sqrt(0.96), 2 sqrt(0.96)] (square-root edges) and the atom, at -2 with
    # mass 0.2, lies in the gap below it (eq. (14.20) is 0.6 + 0.6 - 1 > 0 at f = 0)
    c = (np.array([-1.0, 1.0]), np.array([0.6, 0.4]))
    bands = discrete_sum_edges(*c, *c)
    edge = 2.0 * np.sqrt(0.96)
    assert len(bands) == 1 and bands[0][2:] == (False, False)
    assert abs(bands[0][0] + edge) <= 4e-16 * edge and abs(bands[0][1] - edge) <= 4e-16 * edge
    law = freeattn.free_additive(freeattn.point_masses(*c), freeattn.point_masses(*c))
    loc, mass = law.atoms()
    assert loc.tolist() == [-2.0] and abs(mass[0] - 0.2) <= 1e-15
    assert abs(law.total_mass() - 1.0) <= 1e-12


def test_pole_edges_of_eq_14_20_are_not_searched(monkeypatch):
    # a zero of eq. (14.20) in a cell next to the parameter of two atoms whose masses
    # sum to 1 is the pole edge, the exact sum of the atoms; its search (22 Illinois
    # calls of eq. (14.20) for Bernoulli ⊞ Bernoulli, half of the law's build) is
    # skipped, the square-root edges are still searched, and the bands are the ones of
    # the test above
    from freeattn.compose import _discrete_sum_support
    from freeattn.compose._discrete_sum_support import discrete_sum_edges

    sizes = []
    original = _discrete_sum_support.bracketed_zeros

    def recording(fun, a, *args, **kwargs):
        sizes.append(np.size(a))
        return original(fun, a, *args, **kwargs)

    monkeypatch.setattr(_discrete_sum_support, "bracketed_zeros", recording)
    b = (np.array([-1.0, 1.0]), np.array([0.5, 0.5]))
    assert discrete_sum_edges(*b, *b) == [(-2.0, 2.0, True, True)]
    a = (np.array([-1.0 - 1e-3, 1.0]), np.array([0.5, 0.5]))
    assert [bd[2:] for bd in discrete_sum_edges(*a, *b)] == [(True, True), (True, True)]
    assert sizes == []
    c = (np.array([-1.0, 1.0]), np.array([0.6, 0.4]))
    bands = discrete_sum_edges(*c, *c)
    assert len(bands) == 1 and bands[0][2:] == (False, False) and sum(sizes) == 2


def test_inverse_branches_of_eq_14_20_two_ways():
    # the inverse branches F^{-1}(f) of section 14.19: the companion-matrix roots and
    # the bracketed Newton that takes over where they do not settle solve the same
    # equation F(omega) = f on the same branch (one root per branch): they agree to
    # rounding (measured 5.6e-16 relative), and F(omega) = f to 1e-12 of max(|f|, 1)
    # (measured 5.8e-14: next to a pole of F its slope multiplies the rounding of omega)
    from freeattn.compose._discrete_sum_support import _Branches

    br = _Branches(np.array([-1.0, 0.3, 2.0]), np.array([0.2, 0.5, 0.3]))
    f = np.repeat(np.array([-50.0, -1.0, -1e-3, 0.0, 2e-3, 0.7, 40.0]), 3)
    k = np.tile(np.arange(3), 7)
    fast = br.inverse(f, k)
    assert fast is not None and np.all((fast > br.left[k]) & (fast < br.right[k]))
    br._companion_roots = lambda f, k: None
    slow = br.inverse(f, k)
    assert np.max(np.abs(slow - fast) / np.maximum(np.abs(fast), 1.0)) <= 1e-14
    g, _ = br._g_dg(slow)
    with np.errstate(divide="ignore"):
        assert np.all(np.abs(1.0 / g - f) <= 1e-12 * np.maximum(np.abs(f), 1.0))


def test_a_zero_of_eq_14_20_in_a_curve_tail_eq_14_20():
    # three-atom laws (numpy.random.default_rng(0): sorted normal atoms, Dirichlet(5)
    # weights): the upper edge of the first band is a zero of eq. (14.20) at f = 58.1 on
    # the curve (2, 0), beyond the tan samples (|f| <= 40); there eq. (14.20) decays as
    # C/f**2 and the tail samples reach it.  Against the grid locator's bordered Newton
    # (eq. (14.5)): all six edges agree (measured 1.5e-16; without the tail samples the
    # edge was the curve's limit m_a + p_0(b) = -0.8529758, 1.9e-5 off)
    from freeattn.compose._discrete_sum_support import discrete_sum_edges

    rng = np.random.default_rng(0)
    a = np.sort(rng.normal(size=3))
    aw = rng.dirichlet(5 * np.ones(3))
    b = np.sort(rng.normal(size=3))
    bw = rng.dirichlet(5 * np.ones(3))
    edges = np.array([bd[:2] for bd in discrete_sum_edges(a, aw, b, bw)])
    grid = freeattn.free_additive(freeattn.point_masses(a, aw), freeattn.point_masses(b, bw))
    grid._discrete_pair = lambda: None
    grid._curve_support = lambda: None                 # the grid locator of section 14.10
    ref = np.array(grid.intervals())
    assert edges.shape == ref.shape == (3, 2)
    assert np.max(np.abs(edges - ref)) <= 1e-12
    # the curves on the branches of any law (eq. (14.37)) give the same edges
    general = freeattn.free_additive(freeattn.point_masses(a, aw), freeattn.point_masses(b, bw))
    general._discrete_pair = lambda: None
    assert np.max(np.abs(np.array(general.intervals()) - edges)) <= 1e-12


def random_seven_atom_pair():
    """A 4-atom and a 3-atom law drawn at random (numpy.random.default_rng(123), the
    130th pair of a sweep of 150), whose sum has 4 bands."""
    a = freeattn.point_masses(
        [-2.373505328789821, -1.6562870450835865, -0.5275605692929677, 0.7834963426188257],
        [0.1686359163824936, 0.2454302744876984, 0.4931268072730448, 0.09280700185676323])
    b = freeattn.point_masses([0.28746848774987566, 1.066445578841451, 1.8629576784654418],
                              [0.40458296686842016, 0.2964335578366635, 0.2989834752949164])
    return a, b


def test_random_discrete_sum_with_a_gap_the_grid_missed_eq_14_20():
    # 4-atom ⊞ 3-atom laws drawn at random (numpy.random.default_rng(123), the 130th
    # pair of a sweep of 150: sums without atoms had a gap the grid locator missed in
    # 6 of 44): eq. (14.20) gives 4 bands, the grid 3, merging the first two across
    # the gap [-1.2418078, -1.2416637] of width 1.4e-4 (a grid cell is 3.9e-3 here).
    # The continued density (eq. (14.3), independent of the support) is 0 in its
    # middle and positive in every band, and the representation has mass 1
    a, b = random_seven_atom_pair()
    law = freeattn.free_additive(a, b)
    ivs = law.intervals()
    grid = freeattn.free_additive(a, b)
    grid._discrete_pair = lambda: None
    grid._curve_support = lambda: None                 # the grid locator of section 14.10
    assert len(ivs) == 4 and len(grid.intervals()) == 3
    # the curves on the branches of any law (eq. (14.37)) find the gap too
    general = freeattn.free_additive(a, b)
    general._discrete_pair = lambda: None
    assert np.max(np.abs(np.array(general.intervals()) - np.array(ivs))) <= 1e-12
    assert abs(ivs[0][1] + 1.2418078) <= 1e-7 and abs(ivs[1][0] + 1.2416637) <= 1e-7
    gaps = np.array([0.5 * (p[1] + q[0]) for p, q in zip(ivs, ivs[1:])])
    mids = np.array([0.5 * (lo + hi) for lo, hi in ivs])
    pts = np.r_[gaps, mids]
    w = law._continue(pts, np.zeros(pts.size), check=False)
    dens = -law._g(w, pts.astype(complex)).imag / np.pi
    assert np.all(dens[:gaps.size] <= 1e-12) and np.all(dens[gaps.size:] > 0.1)
    assert abs(law.total_mass() - 1.0) <= 1e-12


def test_bad_input_is_a_type_error():
    with pytest.raises(TypeError, match="a must be a freeattn law"):
        analytic_additive(1.0, BER)


def test_fixed_point_problem_is_abstract():
    with pytest.raises(NotImplementedError):
        FixedPointProblem().phi(np.zeros(1, complex), np.zeros(1, complex))


def test_multiplicative_identity_and_two_atom_population():
    # eq. (14.4): with b = delta_1 the fixed point is u = 1/z and G = G_a.

    mp = freeattn.marchenko_pastur(1.0, 0.5)
    one = analytic_multiplicative(mp, freeattn.point_masses([1.0]))
    z = np.array([0.3 + 0.2j, 2.0 + 1j, 5.0 + 1e-3j])
    res = iterate(one._problem, z)
    assert res.converged.all() and np.max(np.abs(res.value * z - 1.0)) <= 1e-14
    g = one._problem.cauchy(res.value, z)
    assert np.max(np.abs(g / mp.stieltjes(z) - 1.0)) <= 1e-13
    # MP(1, 1/2) ⊠ (two atoms) against the algebraic path (the degree-3 Silverstein
    # equation, whose edges are roots of its discriminant, theory note 08): edges by
    # eq. (14.5), G off the axis, mass and mean.
    pop = freeattn.point_masses([1.0, 3.0], [0.5, 0.5])
    law = analytic_multiplicative(mp, pop)
    ref = freeattn.sample_covariance(pop, 0.5)
    assert np.allclose(law.intervals(), ref.intervals(), rtol=1e-12, atol=0)
    zz = np.array([0.5 + 0.01j, 3.0 + 1e-6j, 0.05 + 0j])
    assert np.max(np.abs(law.stieltjes(zz) / ref.stieltjes(zz) - 1.0)) <= 1e-11
    assert abs(law.total_mass() - 1.0) <= 1e-10
    assert abs(law.mean() - 2.0) <= 1e-10


def test_marchenko_pastur_hard_edge_stieltjes_raises():
    # G of MP(1, 1) is (z - sqrt(z^2 - 4z))/(2z) ~ z**(-1/2) at 0: no value there.
    with pytest.raises(ValueError, match="hard edge"):
        freeattn.marchenko_pastur(1.0, 1.0).stieltjes(0.0)
    g = freeattn.marchenko_pastur(1.0, 1.0).stieltjes(-1.0)     # closed form at z = -1
    assert abs(g - (1.0 - math.sqrt(5.0)) / 2.0) <= 1e-15


_REF = None


def _ref(case):
    import json
    import pathlib

    global _REF
    if _REF is None:
        path = pathlib.Path(__file__).parent / "reference" / "analytic_references.json"
        _REF = json.loads(path.read_text())["cases"]
    return _REF[case]


#: Accuracy against the 40-digit references of tests/reference/make_analytic_references.py
#: (eqs. (14.1), (14.4), (14.5) solved by mpmath.findroot at 40 digits).
EDGE_RTOL = 1e-12
DENSITY_RTOL = 1e-10


def _check_against(law, case, representation=True):
    ref = _ref(case)
    edges = np.array([e for iv in law.intervals() for e in iv])
    ref_edges = np.array([float(e) for e in ref["edges"]])
    assert edges.shape == ref_edges.shape
    assert np.max(np.abs(edges - ref_edges) / np.abs(ref_edges).max()) <= EDGE_RTOL
    x = np.array([float(p[0]) for p in ref["density"]])
    f = np.array([float(p[1]) for p in ref["density"]])
    assert np.max(np.abs(law._density(x) / f - 1.0)) <= DENSITY_RTOL
    if representation:
        assert np.max(np.abs(law.pdf(x) / f - 1.0)) <= DENSITY_RTOL


def test_three_band_against_mpmath_reference():
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    _check_against(freeattn.free_additive(a, b), "three_band")


@pytest.mark.slow
def test_a_free_sum_with_an_edge_at_zero_is_sampled_on_its_scale_eq_8_14():
    """Bernoulli{0, 1} ⊞ Bernoulli{0, 1} is the arcsine law on [0, 2] (closed form
    1/(pi sqrt(x (2 - x))), CDF arccos(1 - x)/pi).  Its density is solved to an
    absolute accuracy in x (eq. (14.3)), so its edge at 0 is sampled on the float
    grid of its scale as an edge at e != 0 is (eq. (8.14)): at most 6 panels
    (3 to 5 measured, as the rounding of h in eq. (14.28) varies), mass 1 to 1e-12,
    pdf to 1e-10 relative down to x = 1e-10 and CDF to 1e-12.  Sampled at
    relative accuracy it took 84 panels and missed 2.4e-9 of its mass (the solve
    at x = 1e-14 is 2% off)."""
    ber = freeattn.point_masses([0.0, 1.0])
    law = freeattn.free_additive(ber, ber)
    assert isinstance(law, AnalyticLaw) and law.intervals() == ((0.0, 2.0),)
    acc = law.accuracy()
    assert acc.panels <= 6 and acc.mass_error <= 1e-12
    x = np.concatenate([np.geomspace(1e-10, 1e-2, 9), np.linspace(0.01, 1.99, 199)])
    np.testing.assert_allclose(law.pdf(x), 1 / (np.pi * np.sqrt(x * (2 - x))), rtol=1e-10)
    np.testing.assert_allclose(law.cdf(x), np.arccos(1 - x) / np.pi, rtol=0, atol=1e-12)


def test_continuation_levels_accept_the_rounding_floor_next_to_a_fold_eq_14_27():
    """A continuation level (eq. (14.3)) whose residual is at the rounding floor of
    eq. (14.27) is solved: next to a fold Newton's error estimate is that floor over
    |1 - phi'| and cannot meet the level tolerance.  sample_covariance of 5000
    chi-square(3) atoms (seed 3) at ratio 0.5 raised ConvergenceError while
    building its density, at x = 0.0072950103908 (1.8e-12 inside the band edge
    0.0072950103926: 'stalled at y = 7e-16'; 30 000 and 50 000 atoms failed the
    same way for two seeds in three).  Now the density integrates to 1 (1e-12);
    there and at 4 times the distance to the edge it follows the square-root edge
    (ratio 2 to 1%), with the residual of eq. (14.4) at the floor."""
    t = np.random.default_rng(3).chisquare(3, 5000)
    law = freeattn.sample_covariance(freeattn.point_masses(t, np.full(t.size, 1 / t.size)), 0.5)
    assert isinstance(law, AnalyticLaw)
    assert abs(law.total_mass() - 1.0) <= 1e-12
    x = np.array([0.007295010390809776])
    band = [iv for iv in law.intervals() if iv[0] < x[0] < iv[1]]
    assert len(band) == 1 and band[0][1] - x[0] < 1e-11
    d = band[0][1] - x[0]
    f1, f4 = law.pdf(np.array([x[0], band[0][1] - 4 * d]))
    assert f4 / f1 == pytest.approx(2.0, rel=1e-2)          # sqrt(4 d)/sqrt(d)
    w = law._boundary(x)
    assert _analytic._at_rounding_floor(law._problem, w, law._pz(x.astype(complex)))


#: (3.473, 4.663) ⊠ (1.821, 4.09) atoms: its G has one zero in the gap between its band
#: [6.34, 7.73] and its atom 14.2; omega runs to infinity there.
ZERO_GAP_PRODUCT = (([3.473, 4.663], [0.689, 0.311]), ([1.821, 4.09], [0.206, 0.794]))
#: The secant through G at +-1e-7 of the zero: G'' ~ 1e-2 leaves its zero within
#: G'' d**2 / G' ~ 1e-15 of the true one, a few ulps of x ~ 8.6.
ZERO_SECANT_STEP = 1e-7
ZERO_RTOL = 4e-15
#: G next to its zero against G'(zero)(x - zero): the rounding of G's sums (~1e-17)
#: and the secant's slope to its own second order.
ZERO_G_ATOL = 1e-15


def test_a_repelling_root_is_not_the_subordination_point_section_14_50():
    """Within 3e-9 past the zero of G of a product of atoms (omega -> infinity), a
    continuation level's Newton converged to the real root w = 0.2165 with phi' = 9.8,
    a repelling fixed point (section 14.50: omega contracts), and the solve returned
    G = -3.44 with G' = +24 at a real point off the support (G decreases there);
    LawBranches then raised ('F falls') and the bracketed search for the zero of G
    stopped at that discontinuity, 2.9e-9 before the zero.  Now no level takes a root
    with |phi'| > 1 + CONTRACTION_SLACK (eq. (14.56)): the continuation there raises rather than
    answer, the law's G there comes from its representation (eq. (8.16)), and the
    zero of eq. (14.37) agrees with the secant of G through +-1e-7 of it."""
    (va, wa), (vb, wb) = ZERO_GAP_PRODUCT
    law = freeattn.free_multiplicative(freeattn.point_masses(va, wa),
                                       freeattn.point_masses(vb, wb))
    assert isinstance(law, AnalyticLaw)
    x_bad = 8.632826468821088             # where the old solve gave G = -3.44
    try:
        w = law._continue(np.array([x_bad]), np.zeros(1))
    except freeattn.ConvergenceError:
        pass
    else:
        _, dphi, _ = law._problem.phi_arguments(w, law._pz(np.array([x_bad + 0j])))
        assert abs(dphi[0]) <= 1.0 + _analytic.CONTRACTION_SLACK
    branches = LawBranches(law, lambda lw, u: lw._pair_or_far(u))
    zero = [b[1] for b in branches.branches if b[3] == "zero"]
    assert len(zero) == 1
    p = zero[0]
    xs = np.array([p - ZERO_SECANT_STEP, p + ZERO_SECANT_STEP])
    g = law._pair_or_far(xs + 0j)[0].real
    secant = xs[0] - g[0] * (xs[1] - xs[0]) / (g[1] - g[0])
    assert abs(p - secant) <= ZERO_RTOL * p
    slope = (g[1] - g[0]) / (xs[1] - xs[0])
    assert slope < 0
    gx = law.stieltjes(x_bad)
    assert abs(gx - slope * (x_bad - secant)) <= ZERO_G_ATOL


#: G(x + i y) against G(x + i0) for y <= 1e-12: |G'| ~ 380 there moves G by y |G'|
#: (measured 3.8e-10 at y = 1e-12, 1.9e-12 at y <= 1e-20); the wrong root was 4 off.
NEAR_AXIS_G_ATOL = 1e-9


def test_a_repelling_root_off_the_axis_is_continued_eq_14_56():
    """Inside a band of (1.593, 2.68, 1.237, 1.23) ⊠ (3.432, 4.234, 2.793, 3.279) atoms,
    at z = x + i y with y from 1e-12 down to 1.9e-30 (the depth-2 campaign's seed 24 /
    draw 48 asked it so), the iteration of eq. (14.2) had not reached omega(z) after its
    24 rounds and Newton went on to the real root w = 0.387 where phi' = 1.24 (eq.
    (14.56)): G = -1.4057 + 1.6e-13 i (Im G > 0, no Stieltjes value) where G(x + i0) =
    -1.2168 - 4.0720 i, and the sum above it then took density 1e-24 at points of its
    band.  A repelling root is now continued; G(x + i y) agrees with the solve on the axis
    (an independent path, eq. (14.7)) and has Im G < 0."""
    law = freeattn.free_multiplicative(
        freeattn.point_masses([1.593, 2.68, 1.237, 1.23], [0.357, 0.514, 0.064, 0.065]),
        freeattn.point_masses([3.432, 4.234, 2.793, 3.279], [0.188, 0.176, 0.177, 0.459]))
    assert isinstance(law, AnalyticLaw)
    x = 8.79399817
    z = x + 1j * np.array([1e-12, 1e-20, 1.9e-30])
    g = law.stieltjes(z)
    axis = AnalyticLaw(law.a, law.b, True)._solve(np.array([x + 0j]))[1][0]
    assert axis.imag < -4.0                   # inside the band: density 1.296
    assert np.all(np.abs(g - axis) <= NEAR_AXIS_G_ATOL)
    assert np.all(g.imag < 0)


def test_discrete_h_without_cancellation_eq_14_28():
    """``h = 1/G - u`` and ``h'`` of a three-atom law by eq. (14.28) against 40-digit
    mpmath (direct sums and mpmath.diff): 1e-14 relative at |u| = 1e6, where the
    direct difference ``1/G - u`` is 2e-10 off, and next to an atom."""
    law = freeattn.point_masses([-1.0, 0.3, 2.0], [0.2, 0.3, 0.5])
    u = np.array([1e6 + 1j, -3e5 + 2j, 1e3 - 1e-9j, 0.5 + 1e-3j, -3 - 2j, 0.3 + 1e-9j])
    h, dh = _analytic._atom_h_pair(law, u)
    f, _ = _analytic._reciprocal_pair(law, u)
    with mpmath.workdps(40):
        def g(v):
            return mpmath.fsum(mpmath.mpf(float(m)) / (v - mpmath.mpf(float(a)))
                               for a, m in zip(law.values, law.weights))
        ref = [complex(1 / g(mpmath.mpc(v)) - mpmath.mpc(v)) for v in u]
        dref = [complex(mpmath.diff(lambda t: 1 / g(t) - t, mpmath.mpc(v))) for v in u]
    ref, dref = np.array(ref), np.array(dref)
    assert np.max(np.abs(h / ref - 1)) <= 1e-14
    assert np.max(np.abs(dh / dref - 1)) <= 1e-12
    # the direct difference loses the digits of |u|/|h| at |u| = 1e6
    assert abs((f[0] - u[0]) / ref[0] - 1) > 1e-12


def test_terms_of_eq_14_20_without_cancellation_eq_14_28():
    """``1/F'``, ``1/F' - 1`` and ``u - F(u)`` of a weighted Bernoulli law on its
    outer branch at ``|u| = 1e4`` and next to its pole (``G = 0``), against 40-digit
    mpmath: 1e-13 relative, where ``1/F' - 1`` is ~ 1e-8 (the direct difference of
    ``G**2/(-G')`` and 1 keeps ~ 8 digits of it)."""
    from freeattn.compose._discrete_sum_support import _Branches

    t, w = np.array([-1.0, 1.0]), np.array([0.499, 0.501])
    br = _Branches(t, w)
    pole_offset = 1e-6
    u = np.array([1e4, -3e4, br.poles[0] + pole_offset, 0.5])
    with mpmath.workdps(40):
        def g(v):
            return mpmath.fsum(mpmath.mpf(float(m)) / (v - mpmath.mpf(float(a)))
                               for a, m in zip(t, w))

        def dg(v):
            return -mpmath.fsum(mpmath.mpf(float(m)) / (v - mpmath.mpf(float(a))) ** 2
                                for a, m in zip(t, w))
        vs = [mpmath.mpf(float(v)) for v in u]
        f = np.array([float(1 / g(v)) for v in vs])
        d_ref = np.array([float(g(v) ** 2 / -dg(v)) for v in vs])
        e_ref = np.array([float(g(v) ** 2 / -dg(v) - 1) for v in vs])
        r_ref = np.array([float(v - 1 / g(v)) for v in vs])
    d, e, r = br.parts(u, f)
    assert np.max(np.abs(d / d_ref - 1)) <= 1e-13
    assert np.max(np.abs(e / e_ref - 1)) <= 1e-13
    # u - F(u) is used on the larger of the two points only: next to the pole it
    # carries the rounding of G there (7e-11 relative measured: about
    # g_rounding max|t_j|/|u - p| with the relative rounding g_rounding of G's
    # terms; bound 10 times that)
    g_rounding = 1e-16
    assert np.max(np.abs(r / r_ref - 1)[[0, 1, 3]]) <= 1e-13
    assert abs(r[2] / r_ref[2] - 1) <= 10 * g_rounding * np.max(np.abs(t)) / pole_offset
    g0, dg0 = br._g_dg(u[:1])
    assert abs(e_ref[0]) < 1e-7 and abs((g0[0] ** 2 / -dg0[0] - 1) / e_ref[0] - 1) > 1e-12


#: Density at 1e-6 of a band's width inside its edges (see _check_weighted_bernoulli).
NEAR_EDGE_DENSITY_RTOL = 1e-9


def _weighted_bernoulli(offset):
    ref = json.loads((pathlib.Path(__file__).parent / "reference"
                      / "discrete_sum_references.json").read_text())["cases"][offset]
    e = float(offset)
    sym = freeattn.point_masses([-1.0, 1.0])
    wt = freeattn.point_masses([-1.0, 1.0], [0.5 - e, 0.5 + e])
    return ref, sym, wt


def _check_weighted_bernoulli(offset):
    ref, sym, wt = _weighted_bernoulli(offset)
    x = np.array([float(p[0]) for p in ref["density"]])
    f = np.array([float(p[1]) for p in ref["density"]])
    ref_edges = np.array([float(v) for v in ref["edges"]])
    for law in (freeattn.free_additive(wt, sym), freeattn.free_additive(sym, wt)):
        assert isinstance(law, AnalyticLaw)
        # atoms of mass e at 0 and 2 (weights 1/2 + e and 1/2 add to 1 + e)
        loc, mass = law.atoms()
        np.testing.assert_allclose(loc, [0.0, 2.0], atol=1e-15)
        # (the float weights 1/2 +- e carry e to 7e-12 relative at e = 1e-5)
        np.testing.assert_allclose(mass, [float(offset)] * 2, rtol=1e-10)
        assert law.accuracy().mass_error <= 1e-11
        # the quarter points (the first 6) to DENSITY_RTOL; at 1e-6 of a band's width
        # inside an edge the density is 1e-3 of its size in the band and the
        # boundary solve's error (1e-11 of |w|, eq. (14.7)) is amplified by that:
        # NEAR_EDGE_DENSITY_RTOL (2.3e-10 measured)
        for values in (law._density(x), law.pdf(x)):
            err = np.abs(values / f - 1.0)
            assert np.max(err[:6]) <= DENSITY_RTOL
            assert np.max(err[6:]) <= NEAR_EDGE_DENSITY_RTOL
        got = np.array([v for iv in law.intervals() for v in iv])
        assert np.max(np.abs(got - ref_edges)) / 2.0 <= EDGE_RTOL


def test_weighted_bernoulli_sums_against_mpmath_reference_eqs_14_28_14_29():
    """``point_masses([-1, 1], [1/2 - e, 1/2 + e]) ⊞ point_masses([-1, 1])``, both
    orders, against the 40-digit references of
    tests/reference/make_discrete_sum_references.py: next to the inner edges one
    subordination point tends to infinity.  With ``h = 1/G - u`` (rounding
    ``|u|/|h|`` too large) and without the mirrored formulation every case raised
    ``ConvergenceError`` (e = 1e-2 at 9e-9 of an edge); now the densities at the
    quarter points agree to 1e-10 (1e-14 measured), at 1e-6 of each band inside
    its edges to 1e-9 (2.3e-10 measured), and the edges to 1e-12 of the spread
    (1.1e-16 measured)."""
    _check_weighted_bernoulli("0.01")
    _check_weighted_bernoulli("0.00001")


@pytest.mark.slow
def test_weighted_bernoulli_sum_e_1e_3_eqs_14_20_14_28_14_29():
    """e = 1e-3: densities (3.4e-11 measured) and edges (1.1e-16 of the spread).  The
    inner edges used to come out at the tail limit 2e of a curve of eq. (14.20),
    1e-9 off: there eq. (14.20) is ~ 4e**2/f**2 and crosses zero where it is
    ~ 1e-13, the old absolute margin; it is now taken relative to its terms, each
    summed without cancellation (theory section 14.26)."""
    _check_weighted_bernoulli("0.001")


def test_500_atom_population_against_mpmath_reference():
    # eq. (14.4)-(14.5): sample_covariance of a 500-atom population (> 400 atoms: the
    # analytic path), against the 40-digit reference.
    t = np.array([float(v) for v in _ref("population_500")["atoms"]])
    law = freeattn.sample_covariance(freeattn.point_masses(t, np.full(t.size, 1 / t.size)), 0.5)
    assert isinstance(law, AnalyticLaw)
    # the density solve and the piecewise-Chebyshev representation built from it
    # (warm starts at y = 0, eq. (14.7))
    _check_against(law, "population_500")
    assert abs(law.total_mass() - 1.0) <= 1e-12
    assert abs(law.mean() - t.mean()) <= 1e-10 * t.mean()


@pytest.mark.slow
def test_random_discrete_sums_solve_or_raise_convergence_error():
    # A small hypothesis campaign over free sums of two random discrete laws
    # (2-3 atoms each, weights bounded away from 0): each either solves -- unit mass,
    # a non-negative density, mean and variance adding (free cumulants of order 1, 2)
    # -- or raises ConvergenceError; never another exception.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    atoms = st.lists(st.tuples(st.floats(-3, 3), st.floats(0.15, 1.0)), min_size=2,
                     max_size=3, unique_by=lambda p: round(p[0], 1))

    solved = []

    @settings(max_examples=10, deadline=None, derandomize=True)
    @given(atoms, atoms)
    def check(pa, pb):
        def law(p):
            v = np.array([q[0] for q in p])
            w = np.array([q[1] for q in p])
            return freeattn.point_masses(v, w / w.sum())
        a, b = law(pa), law(pb)
        try:
            c = freeattn.free_additive(a, b)
            mass = c.total_mass()
            x = np.linspace(*c.support(), 50)
            dens = c.pdf(x)
        except freeattn.ConvergenceError:
            return
        assert abs(mass - 1.0) <= 1e-9
        assert np.all(dens >= 0)
        assert abs(c.mean() - a.mean() - b.mean()) <= 1e-9 * (1 + abs(a.mean()) + abs(b.mean()))
        assert abs(c.var() - a.var() - b.var()) <= 1e-8 * (1 + a.var() + b.var())
        # the bands (eq. (14.20)): the continued density is
        # positive in the middle of every band and 0 in the middle of every gap
        ivs = c.intervals()
        mids = np.array([0.5 * (lo + hi) for lo, hi in ivs])
        gaps = np.array([0.5 * (p[1] + q[0]) for p, q in zip(ivs, ivs[1:])])
        pts = np.r_[mids, gaps]
        w = c._continue(pts, np.zeros(pts.size), check=False)
        dens_c = -c._g(w, pts.astype(complex)).imag / np.pi
        assert np.all(dens_c[:mids.size] > 1e-6) and np.all(dens_c[mids.size:] <= 1e-7)
        solved.append(len(ivs))

    check()
    print("solved", len(solved), "bands", solved)
    assert solved                      # the campaign is not vacuous


@pytest.mark.slow
def test_random_populations_bands_and_gaps_eqs_14_17_14_18():
    # A small hypothesis campaign over MP(1, c) ⊠ (random positive atoms), whose bands
    # come from eqs. (14.17)-(14.18): each either solves -- unit mass, and the continued
    # density (theory eq. (14.3), independent of the support) positive in the middle of
    # every band and 0 in the middle of every gap -- or raises ConvergenceError
    from hypothesis import given, settings
    from hypothesis import strategies as st

    solved = []

    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(st.integers(2, 60), st.floats(0.05, 0.95), st.integers(0, 2 ** 31 - 1))
    def check(k, c, seed):
        rng = np.random.default_rng(seed)
        t = np.exp(rng.normal(0.0, 1.5, k))
        w = rng.dirichlet(np.ones(k))
        law = analytic_multiplicative(freeattn.marchenko_pastur(1.0, c),
                                      freeattn.point_masses(t, w))
        try:
            ivs = law.intervals()
            mass = law.total_mass()
        except freeattn.ConvergenceError:
            return
        assert abs(mass - 1.0) <= 1e-9
        mids = np.array([0.5 * (lo + hi) for lo, hi in ivs])
        gaps = np.array([0.5 * (p[1] + q[0]) for p, q in zip(ivs, ivs[1:])])
        pts = np.r_[mids, gaps]
        w_ = law._continue(pts, np.zeros(pts.size), check=False)
        dens = -law._g(w_, pts.astype(complex)).imag / np.pi
        assert np.all(dens[:mids.size] > 0) and np.all(
            dens[mids.size:] <= 1e-7 * dens[:mids.size].max())
        solved.append(len(ivs))

    check()
    print("solved", len(solved), "bands", solved)
    assert solved                      # the campaign is not vacuous


# ---------------------------------------------------------------------------
# Newton's error estimate, warm starts, hard edges, products of many laws


def test_degenerate_point_keeps_the_continued_value():
    # eq. (14.3): at z = 0 the map of Bernoulli ⊞ Bernoulli is the identity
    # (phi(w) = z - 1/(z - 1/w)), so Newton's step is rounding noise there; the
    # solver keeps the continued value and the closed form 1/(2 pi) holds -- also
    # after the support search has filled the table of warm starts, whose
    # interpolated start Newton would keep (6.1e-14 off before the probe of
    # DEGENERATE_PROBE sent the point to the continuation)
    law = _arcsine()
    law.intervals()
    assert law._warm_x.size > 2
    assert abs(law._density(np.array([0.0]))[0] * 2 * math.pi - 1.0) <= 1e-14
    assert abs(law.pdf(0.0) * 2 * math.pi - 1.0) <= 1e-14
    problem = law._problem
    w, dp = problem.phi(np.array([0.3 + 0.9j]), np.array([0.0 + 0j]))
    assert abs(w[0] - (0.3 + 0.9j)) <= 1e-15 and abs(dp[0] - 1.0) <= 1e-15


def test_warm_start_agrees_with_the_continuation():
    # eq. (14.7): Newton at y = 0 from interpolated neighbours gives the continued
    # subordination point (the fixed point inside the half-plane is unique).
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(a, b)
    law.interval_details()                         # seeds the warm starts
    x = np.array([-0.5, 0.3, 0.6, 2.5, 2.9])
    warm = law._boundary(x)
    cold = law._continue(x, np.zeros(x.size))
    assert np.max(np.abs(warm - cold) / np.abs(cold)) <= 1e-12


def test_routing_of_laws_without_rational_transforms():
    # theory section 14: free_additive / free_multiplicative of two laws without a
    # rational R- or S-transform solve eqs. (14.1)/(14.4); a product of three,
    # eq. (14.8).
    from freeattn.compose._chain import ProductChainLaw

    c = freeattn.point_masses([1.0, 2.0], [0.5, 0.5])
    d = freeattn.point_masses([1.0, 3.0], [0.25, 0.75])
    assert isinstance(freeattn.free_additive(c, d), AnalyticLaw)
    two = freeattn.free_multiplicative(c, d)
    assert isinstance(two, AnalyticLaw)
    three = freeattn.free_multiplicative(two, c)
    assert isinstance(three, ProductChainLaw) and len(three.factors) == 3
    # mean of a ⊠ product: the product of the means (theory eq. (8.4))
    assert abs(three.mean() - 1.5 * 2.5 * 1.5) <= 1e-12


@pytest.mark.slow
def test_attention_product_has_a_hard_edge_and_exact_moments():
    # eq. (14.6): attention ⊠ attention (beta = gamma = 1); each factor's density
    # ~ x**(-1/2) at 0 (a pole of order 1 of S), so the product's ~ x**(-2/3).
    from freeattn.attention._stack_law import stack_moments

    att = freeattn.attention_law(1.0, 1.0).squared()
    # free_multiplicative takes eq. (14.21) for two attention laws
    # (tests/test_stack_references.py); this is the general path of eq. (14.4)
    law = analytic_multiplicative(att, att)
    assert isinstance(law, AnalyticLaw)
    (iv,) = law.interval_details()
    assert iv.lo == 0.0 and iv.lo_exponent == Fraction(-2, 3)
    assert abs(law.total_mass() - 1.0) <= 1e-12
    # exact moments (theory eq. (13.3)) against quadrature of the solved density
    m1, m2 = (float(v) for v in stack_moments(1.0, 1.0, 2, 2))
    assert abs(law.mean() - math.expm1(1.0) ** 2) <= 1e-12 * m1
    scale, q2 = law._quadrature_moment(2, scaled=False)
    assert abs(scale ** 2 * q2 / m2 - 1.0) <= 1e-10
    # G' by the chain rule (eq. (14.4)) against a central difference: with G solved
    # to ~1e-13 relative, the difference quotient carries |G|/(h |G'|) ~ 1e5 times
    # that (truncation h**2 ~ 1e-10), hence 1e-6; a wrong derivative is off by O(1)
    z = np.array([3.0 + 0.5j, 20.0 + 1j])
    g, dg = law._stieltjes_pair(z)
    h = 1e-5
    fd = (law._stieltjes_pair(z + h)[0] - law._stieltjes_pair(z - h)[0]) / (2 * h)
    assert np.max(np.abs(dg / fd - 1.0)) <= 1e-6


@pytest.mark.slow
def test_product_chain_of_three_marchenko_pastur_laws():
    # eqs. (14.8)-(14.9) against the closed forms of the Fuss-Catalan law MP(1)^⊠3: upper edge
    # (L + 1)**(L + 1) / L**L = 256/27, density ~ x**(-3/4) at 0 (eq. (14.6)), and
    # against the algebraic path of theory section 8 (which collapses the S-levels).
    from freeattn.compose._chain import product_chain

    mp = freeattn.marchenko_pastur(1.0, 1.0)
    law = product_chain([mp, mp, mp])
    (iv,) = law.interval_details()
    assert iv.lo == 0.0 and iv.lo_exponent == Fraction(-3, 4)
    assert abs(iv.hi - 256 / 27) <= 1e-13 * 256 / 27
    # the collapsed S-level itself (free_multiplicative takes the chain for this
    # hard edge of order 3, theory section 14.24)
    from freeattn.compose._subordination import _collapsed_product

    s = mp._s_transform()
    two = _collapsed_product(mp, mp, s, s, mp.options)
    ref = _collapsed_product(two, mp, two._s_transform(), s, mp.options)
    assert type(ref).__name__ == "SubordinationLaw"
    x = np.linspace(0.01, 9.4, 60)
    assert np.max(np.abs(law._density(x) / ref.pdf(x) - 1.0)) <= 1e-10
    assert abs(law.total_mass() - 1.0) <= 1e-12
    # G' of the chain (implicit differentiation of eq. (14.8)) against a central
    # difference (tolerance as in the attention product test above)
    z = np.array([2.0 + 0.3j, 12.0 + 1j])
    g, dg = law._stieltjes_pair(z)
    h = 1e-5
    fd = (law._stieltjes_pair(z + h)[0] - law._stieltjes_pair(z - h)[0]) / (2 * h)
    assert np.max(np.abs(dg / fd - 1.0)) <= 1e-6
    assert np.max(np.abs(g / ref.stieltjes(z) - 1.0)) <= 1e-12


#: The warm solves of eqs. (14.15)-(14.16) against the cold continuation of section
#: 14.8 at the same points: both stop Newton at a step of CHAIN_FINAL_RTOL = 1e-14,
#: so they agree to about that where they land on the same solution (measured
#: 1.0e-14 relative off the axis, 2.8e-15 on it) and by O(1) where a warm root were
#: another solution.
WARM_AGREEMENT_RTOL = 1e-12


def test_product_chain_warm_starts_eq_14_15_eq_14_16():
    # MP(1, 0.01)^⊠2 ⊠ (δ_1 + δ_20)/2 has two bands, so the real axis has a gap,
    # a region below the support and one above it (all three tables of eq. (14.16))
    from freeattn.compose._chain import product_chain

    mp = freeattn.marchenko_pastur(1.0, 0.01)
    law = product_chain([mp, mp, freeattn.point_masses([1.0, 20.0], [0.5, 0.5])])
    (a0, a1), (b0, b1) = law.intervals()
    assert a1 < b0
    # off the axis: a first call seeds the table, a second one nearby is warm
    z0 = np.r_[np.linspace(0.5, 30.0, 40)] + 0.05j
    law._stieltjes_exact(z0)
    z = z0 * (1 + 1e-3) + 0.01j
    cold = law._g_from(law._continue(z.real, z.imag), z)
    n_table = len(law._last)
    warm = law._stieltjes_exact(z)
    assert np.max(np.abs(warm / cold - 1.0)) <= WARM_AGREEMENT_RTOL
    # the warm path was taken: the table grew by the new points only (no cold ones)
    assert len(law._last) == n_table + z.size
    # on the axis: inside both bands, in the gap, below and above the support
    x = np.r_[np.linspace(a0, a1, 9)[1:-1], np.linspace(b0, b1, 9)[1:-1],
              np.linspace(a1, b0, 9)[2:-2], 0.6 * a0, 1.05 * b1]
    om, acc = law._solve_axis(x)
    assert acc.sum() >= x.size - 2                 # all but points too close to an edge
    ref = law._continue(x[acc], np.zeros(int(acc.sum())))
    g_warm = law._g_from(om[:, acc], x[acc].astype(complex))
    g_cold = law._g_from(ref, x[acc].astype(complex))
    assert np.max(np.abs(g_warm / g_cold - 1.0)) <= WARM_AGREEMENT_RTOL
    # a point next to an edge is never taken from the gap table (eq. (14.16)'s distance
    # condition); it starts from the edge's fold (eq. (14.54)), whose root agrees with
    # the continuation to the fold's conditioning (eps/sqrt(1e-9): 7e-12)
    from freeattn.compose import _chain

    assert _chain.CHAIN_FOLD_REACH > 1e-9
    folds = law._folds
    law._folds = tuple(a[..., :0] for a in folds)
    _, acc_edge = law._solve_axis(np.array([b1 * (1 + 1e-9)]))
    assert not acc_edge.any()
    law._folds = folds
    xe = np.array([b1 * (1 + 1e-9)])
    om_e, acc_edge = law._solve_axis(xe)
    assert acc_edge.all()
    g_e = law._g_from(om_e, xe.astype(complex))
    g_c = law._g_from(law._continue(xe, np.zeros(1)), xe.astype(complex))
    assert abs(g_e[0] / g_c[0] - 1.0) <= 8 * np.finfo(float).eps / np.sqrt(1e-9)


def test_product_chain_bad_input():
    from freeattn.compose._chain import product_chain

    mp = freeattn.marchenko_pastur(1.0, 1.0)
    with pytest.raises(ValueError, match="at least two"):
        product_chain([mp])
    with pytest.raises(TypeError, match=r"factors\[1\]"):
        product_chain([mp, 3.0])
    with pytest.raises(ValueError, match=r"factors\[0\].*\[0, inf\)"):
        product_chain([freeattn.semicircle(1.0), mp])


@pytest.mark.slow
def test_a_gap_narrower_than_a_grid_cell_is_found():
    # eq. (14.5): 1000 chi-square(3) atoms at ratio 1/2 have a gap of width 5.2e-4 at
    # x = 0.0449 (a direct scan at spacing 5e-7 puts it at [0.0449125, 0.0454285]),
    # narrower than two cells of the locator's grid: both of its edges start from the
    # one grid point inside it, and the edge that converges outside its cell is
    # re-solved from a bisected cell.
    t = np.random.default_rng(1).chisquare(3, 1000)
    law = freeattn.sample_covariance(freeattn.point_masses(t, np.full(1000, 1e-3)), 0.5)
    ivs = law.intervals()
    assert all(a[1] < b[0] for a, b in zip(ivs, ivs[1:]))          # no touching bands
    gap = [(a[1], b[0]) for a, b in zip(ivs, ivs[1:]) if a[1] < 0.0452 < b[0]]
    assert len(gap) == 1
    assert abs(gap[0][0] - 0.0449125) <= 5e-7 and abs(gap[0][1] - 0.0454285) <= 5e-7
    # every gap is outside the support: the subordination point is real there
    mids = np.array([(a[1] + b[0]) / 2 for a, b in zip(ivs, ivs[1:])])
    w = law._continue(mids, np.zeros(mids.size), check=False)
    assert np.all(np.abs(w.imag) <= 1e-9 * np.abs(w))


def test_population_edges_eq_14_17_against_the_algebraic_path():
    # eq. (14.17) for two atoms against the algebraic path of theory section 8 (a
    # degree-3 Silverstein curve, edges by its discriminant): two bands at c = 0.05,
    # one at c = 0.3; both solve to rounding (measured agreement at most 2.5e-16 relative)
    from freeattn.compose._population_support import population_edges

    pop = freeattn.point_masses([1.0, 3.0], [0.5, 0.5])
    for c, bands in ((0.05, 2), (0.3, 1)):
        ref = np.array(freeattn.sample_covariance(pop, c).intervals())
        got = np.array(population_edges(c, np.array([3.0, 1.0]), np.array([0.5, 0.5])))
        assert got.shape == (bands, 2)
        assert np.max(np.abs(got - ref) / ref) <= 4 * np.finfo(float).eps


def test_intervals_skipped_by_the_bound_eq_14_18_hold_no_zero_of_x_prime():
    # eq. (14.18) is an upper bound of x'(m) (eq. (14.17)): on every interval between
    # poles that it declares free of zeros, x' sampled at 64 interior points (Chebyshev
    # points of the second kind, clustered at the poles) is negative; and the edges
    # with the skipped intervals equal, to the last bit, those with every interval
    # sampled (BOUND_NEIGHBOURS = 0 leaves the bound 1/v**2 > 0: nothing is skipped)
    from freeattn.compose import _population_support as ps

    rng = np.random.default_rng(3)
    cases = [(rng.chisquare(3, 400), np.full(400, 1 / 400)),
             (np.exp(rng.normal(0.0, 2.0, 300)), rng.dirichlet(np.ones(300))),
             (np.r_[rng.uniform(1.0, 1.01, 100), rng.uniform(5.0, 5.01, 150)],
              np.full(250, 1 / 250))]
    frac = 0.5 * (1 - np.cos(np.pi * np.arange(1, 65) / 65))
    for t, w in cases:
        order = np.argsort(t)
        t, w = t[order], w[order]
        for c in (0.05, 0.5, 0.95):
            free = ps._free_of_zeros(c, t, w)
            p = -1.0 / t
            assert 0 < free.sum() < free.size          # the bound both skips and keeps
            a, b = p[:-1][free], p[1:][free]
            m = (a[:, None] + (b - a)[:, None] * frac[None, :]).ravel()
            assert np.all(ps._pole_sums(m, c, t, w, (1,))[1] < 0)
            fast = ps.population_edges(c, t, w)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(ps, "BOUND_NEIGHBOURS", 0)
                assert not ps._free_of_zeros(c, t, w).any()
                assert ps.population_edges(c, t, w) == fast


@pytest.mark.slow
def test_a_gap_holding_no_grid_point_is_found_eq_14_17():
    # 1000 chi-square(3) atoms (the second draw of default_rng(1)) at ratio 1/2: the
    # gap [0.0049513597, 0.0049575874] is 0.14 of the grid cell there and holds no grid
    # point (the grid locator returned 7 bands and the density representation then
    # raised); eq. (14.17) gives 8 bands, and the subordination point is real (outside
    # the support) in the middle of the narrow gap and complex in the bands around it
    rng = np.random.default_rng(1)
    rng.chisquare(3, 500)
    t = rng.chisquare(3, 1000)
    law = freeattn.sample_covariance(freeattn.point_masses(t, np.full(1000, 1e-3)), 0.5)
    ivs = law.intervals()
    assert len(ivs) == 8
    (a0, a1), (b0, b1) = ivs[0], ivs[1]
    assert abs(a1 - 0.0049513597) <= 1e-10 and abs(b0 - 0.0049575874) <= 1e-10
    x = np.array([0.5 * (a1 + b0), 0.5 * (a0 + a1), 0.5 * (b0 + b1)])
    w = law._continue(x, np.zeros(3), check=False)
    assert abs(w[0].imag) <= 1e-9 * abs(w[0]) and np.all(np.abs(w[1:].imag) > 1e-3 * np.abs(w[1:]))
    assert abs(law.total_mass() - 1.0) <= 1e-12


def test_hard_edge_exponent_rule_and_its_errors():
    # eq. (14.6): orders q = 1 (MP(1, 1), density ~ x**(-1/2)) add; a factor whose
    # support starts above 0 adds nothing; no factor at 0, or another end, raises
    from freeattn.compose._analytic import hard_edge_exponent

    mp = freeattn.marchenko_pastur(1.0, 1.0)
    away = freeattn.marchenko_pastur(1.0, 0.25)                 # support [0.25, 2.25]
    assert hard_edge_exponent([mp, mp], "test") == Fraction(-2, 3)
    assert hard_edge_exponent([mp, away], "test") == Fraction(-1, 2)
    with pytest.raises(freeattn.ConvergenceError, match="no factor"):
        hard_edge_exponent([away, away], "test")


# ---------------------------------------------------------------------------
# Solves at y = 0 without the continuation (theory sections 14.11-14.14)


def _arcsine_roots(x):
    """The two real fixed points of Bernoulli ⊞ Bernoulli at real |x| > 2 (closed form):
    phi_x(w) = x - 1/(x - 1/w), roots (x +- sqrt(x^2 - 4))/2, phi' = (x - w)^2/w^2."""
    r = math.sqrt(x * x - 4.0)
    return (x + r) / 2, (x - r) / 2


def test_one_law_twice_solves_the_symmetric_equation_eq_14_19():
    # eq. (14.19): for a ⊞ a the two subordination points are equal and
    # w = z + h_a(w); for Bernoulli, h(w) = -1/w, so at z = 0 the root is w = i
    # (G(i) = -i/2: density 1/(2 pi), closed form), and at real x = 3 the accepted
    # root is (3 + sqrt 5)/2 (closed form, as for eq. (14.1)) with phi' = 1/w**2,
    # whose square is the two-law map's phi' there.
    from freeattn.compose._analytic import (_Multiplicative, _SymmetricAdditive,
                                            _SymmetricMultiplicative)

    law = freeattn.free_additive(BER, BER)
    assert isinstance(law._problem, _SymmetricAdditive)
    r = newton(law._problem, np.array([0.0 + 0j]), np.array([0.5 + 0.5j]))
    assert abs(r.value[0] - 1j) <= 1e-15
    assert abs(law._density(np.array([0.0]))[0] * 2 * math.pi - 1.0) <= 1e-14
    good, _ = _arcsine_roots(3.0)
    w = law._axis(np.array([3.0]), np.array([2.5 + 0j]), check=True)
    assert abs(w[0] - good) <= 1e-14
    two = _arcsine()
    r2 = newton(two._problem, np.array([3.0 + 0j]), np.array([2.5 + 0j]))
    r1 = newton(law._problem, np.array([3.0 + 0j]), np.array([2.5 + 0j]))
    assert abs(r1.value[0] - r2.value[0]) <= 1e-14
    assert abs(law._problem.phi(r1.value, np.array([3.0 + 0j]))[1][0] ** 2
               - two._problem.phi(r2.value, np.array([3.0 + 0j]))[1][0]) <= 1e-14
    # the closed-form arcsine law from the symmetric equation, edges and density
    (lo, hi), = law.intervals()
    assert abs(lo + 2.0) <= 1e-12 and abs(hi - 2.0) <= 1e-12
    x = np.linspace(-1.99, 1.99, 41)
    ref = 1.0 / (np.pi * np.sqrt(4.0 - x * x))
    assert np.max(np.abs(law.pdf(x) / ref - 1.0)) <= ARCSINE_RTOL
    # ⊠: attention ⊠ attention (beta = gamma = 1) by eq. (14.19) and by the two-law
    # map of eq. (14.4), at points off the axis (G and G') and on it (the density)
    att = freeattn.attention_law(1.0, 1.0).squared()
    sym = analytic_multiplicative(att, att)
    assert isinstance(sym._problem, _SymmetricMultiplicative)
    gen = analytic_multiplicative(att, att)
    gen._problem = _Multiplicative(att, att, gen._problem.scale)
    z = np.array([0.3 + 0.2j, 1.0 + 1e-3j, 20.0 + 0.5j, -1.0 + 2.0j])
    for f in ("stieltjes", "_stieltjes_derivative"):
        a, b = getattr(sym, f)(z), getattr(gen, f)(z)
        assert np.max(np.abs(a - b) / np.abs(b)) <= 1e-12
    x = np.array([0.05, 1.0, 5.0, 20.0])
    assert np.max(np.abs(sym._density(x) / gen._density(x) - 1.0)) <= 1e-12


def test_a_repelling_real_root_is_rejected_and_the_attracting_one_accepted():
    # eq. (14.11): at x = 3, outside [-2, 2], omega(x + i0) = (3 + sqrt 5)/2 with
    # phi' = ((3 - w)/w)^2 = 0.0213 < 1; the other real root (3 - sqrt 5)/2 has
    # phi' = 46.98 > 1 (repelling).  Newton from 0.4 converges to the repelling root,
    # which the test rejects; from 2.5 to the attracting one, which it accepts.
    law = _arcsine()
    good, bad = _arcsine_roots(3.0)
    x = np.array([3.0, 3.0])
    r = newton(law._problem, x.astype(complex), np.array([0.4 + 0j, 2.5 + 0j]))
    assert abs(r.value[0] - bad) <= 1e-14 and abs(r.value[1] - good) <= 1e-14
    # (phi' comes from the last evaluation, before the step the quadratic prediction
    # takes without calling phi: accurate to the previous step)
    assert abs(r.derivative[0].real / (((3.0 - bad) / bad) ** 2) - 1.0) <= 1e-5
    assert r.derivative[0].real > 1 > r.derivative[1].real
    w, status = law._classify_axis(x, r)
    assert status.tolist() == [-1, 0]
    # the rejected point is solved by eq. (14.14) / the continuation instead, and the
    # whole solve from the bad start returns the attracting root (closed form)
    w = law._axis(np.array([3.0]), np.array([0.4 + 0j]), check=True)
    assert abs(w[0] - good) <= 1e-14


def test_a_real_root_is_the_boundary_value_for_the_product_sign_convention():
    # eq. (14.11) for ⊠ (sign = -1): at x in a gap of MP(1, 1/2) ⊠ (two atoms), the
    # accepted real root w0 (phi' < 1) is the limit of the continued omega(x + i y),
    # which lies in the lower half-plane with (omega(x + iy) - w0)/(i y) -> dw/dz =
    # -u^2 eta_b'(v)/(1 - phi') real and < 0 (the test's derivation).

    law = analytic_multiplicative(freeattn.point_masses([1.0, 6.0], [0.5, 0.5]),
                                  freeattn.marchenko_pastur(1.0, 0.1))
    ivs = law.intervals()
    assert len(ivs) == 2
    x = np.array([0.5 * (ivs[0][1] + ivs[1][0])])
    cont = law._continue(x, np.zeros(1))
    r = newton(law._problem, x.astype(complex), cont.real + 0j)
    w0, status = law._classify_axis(x, r)
    assert status[0] == 0 and r.derivative[0].real < 1
    assert abs(w0[0] - cont[0]) <= 1e-12 * abs(cont[0])
    y = 1e-7 * x
    wy = law._continue(x, y)
    slope = ((wy - w0) / (1j * y))[0]
    assert wy[0].imag < 0 and slope.real < 0 and abs(slope.imag) <= 1e-4 * abs(slope)


def test_margin_against_a_split_double_root():
    # eq. (14.13): at the fold x = 2 of the arcsine law (w_f = 1, phi' = 1), adding
    # delta = 1e-15 to phi (a rounding of phi) turns the double real root into a
    # conjugate pair with Im w * |1 - phi'| = 2 delta: Newton finds the member inside
    # the half-plane, and the margin eps = 1e-12 rejects it.
    law = _arcsine()
    delta = 1e-15

    class Perturbed(type(law._problem)):
        def phi(self, w, z):
            p, d = super().phi(w, z)
            return p + delta, d

    pr = Perturbed(law.a, law.b, law._problem.scale)
    x = np.array([2.0])
    r = newton(pr, x.astype(complex), np.array([1.0 + 1e-6j]))
    assert r.value[0].imag > 0 and abs(r.value[0] - 1.0) <= 1e-6
    height = r.value[0].imag * abs(1 - r.derivative[0])
    assert 0.5 <= height / (2 * delta) <= 2.0     # delta plus phi's own rounding
    assert height <= 1e-12 * (pr.scale + abs(r.value[0]))     # below the margin
    # a genuine interior point: x = 1.9, closed form w = (x + i sqrt(4 - x^2))/2
    w, status = law._axis_newton(np.array([1.9]), np.array([0.95 + 0.3j]))
    assert status[0] == 1 and abs(w[0] - (1.9 + 1j * math.sqrt(4 - 1.9 ** 2)) / 2) <= 1e-14


def test_locator_solves_most_grid_points_without_the_continuation():
    # eq. (14.12): the three-band sum; every grid point classified (the same inside/
    # outside pattern as the full continuation at every point), with the continuation
    # run on the coarse points only (plus the few rejected ones), and eq. (14.14)
    # solves a point next to an edge from its rejected root.
    from freeattn.compose import _analytic

    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(a, b)
    lo, hi = law._bounds
    pad = 1e-3 * law._xscale
    xs = np.linspace(lo - pad, hi + pad, _analytic.SUPPORT_GRID)
    calls = []
    original = law._continue

    def counting(x, y, check=True):
        calls.append(np.size(x))
        return original(x, y, check)

    law._continue = counting
    w = law._locate(xs)
    del law._continue
    full = law._continue(xs, np.zeros(xs.size), check=False)
    pr = law._problem

    def inside(v):
        return np.abs(v.imag) > _analytic.INSIDE_RTOL * (pr.scale + np.abs(v))

    assert np.array_equal(inside(w), inside(full))
    assert np.max(np.abs(w - full) / (pr.scale + np.abs(full))) <= 1e-10
    coarse = xs.size // _analytic.LOCATOR_STRIDE + 1
    assert sum(calls) <= coarse + 20
    # eq. (14.14): next to the edge e (the float edge of eq. (14.5)), a point 1e-13
    # inside fails the margin of eq. (14.13) but is solved from its rejected root, as
    # the whole continuation solves it: there |1 - phi'| ~ 1e-6, so the root carries
    # the rounding of phi times 1e6 (~1e-10 relative) in either solve
    e = law.intervals()[2][1]
    xe = np.array([e - 1e-13 * law._xscale])
    w0 = law._continue(xe, np.zeros(1), check=False)
    r = newton(law._problem, xe.astype(complex), w0)
    assert law._classify_axis(xe, r)[1][0] == -1
    we, ok = law._near_axis(xe, w0)
    assert ok[0] and abs(we[0] - law._continue(xe, np.zeros(1))[0]) <= 1e-9 * abs(we[0])


def test_near_axis_steps_are_capped_and_the_second_runs_where_the_first_solved(monkeypatch):
    # theory section 14.47: both Newtons of eq. (14.14) take at most WARM_NEWTON_STEPS
    # rounds, and the one at y = 0 only at the points the first solved; a start that
    # is not finite is not solved by the first and never reaches the second
    a = freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4])
    b = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    law = freeattn.free_additive(a, b)
    e = law.intervals()[2][1]
    xe = np.array([e - 1e-13 * law._xscale, e - 2e-13 * law._xscale])
    w0 = law._continue(xe, np.zeros(2), check=False)
    expected, ok_all = law._near_axis(xe, w0)
    assert ok_all.all()
    seen = []
    original = _analytic.newton

    def recording(problem, z, start, *args, **kwargs):
        seen.append((np.size(z), kwargs.get("max_steps")))
        return original(problem, z, start, *args, **kwargs)

    monkeypatch.setattr(_analytic, "newton", recording)
    w0[1] = complex(np.nan, np.nan)
    we, ok = law._near_axis(xe, w0)
    assert seen == [(2, _analytic.WARM_NEWTON_STEPS), (1, _analytic.WARM_NEWTON_STEPS)]
    assert ok.tolist() == [True, False] and we[0] == expected[0]


def test_shifted_arcsine_builds_with_the_edge_allowance_eq_8_14():
    """Bernoulli ⊞ (Bernoulli + delta) is the arcsine law shifted by delta, with
    ``x**(-1/2)`` edges at ``+-2 + delta``.  A float edge there is off the true one
    by up to half a spacing, which holds ``2 c sqrt(d)`` of mass (``c = 1/(2 pi)``:
    4.7e-9 at ``d = 2.2e-16``), more than ``mass_atol``: the build raised for delta
    = 2e-9 (and, through ``affine``, for other shifts).  Now ``PointMasses.affine``
    stays discrete (the exact support of eq. (14.20)), the mass check allows
    ``EDGE_ALLOWANCE_SPACINGS`` spacings at each singular edge away from 0, and
    every one of 58 constructions in a sweep builds (8 shifts here); the density matches the closed form
    ``1/(pi sqrt(4 - (x - delta)**2))`` to 1e-10 (measured 1.8e-11)."""
    from freeattn.algebra._chebyshev import EDGE_ALLOWANCE_SPACINGS
    from freeattn.laws._elementary import PointMasses

    assert isinstance(BER.affine(1e-9, 1.0), PointMasses)
    assert BER.affine(0.5, -2.0).values.tolist() == [-1.5, 2.5]
    # (a sweep of 29 shifts, 58 constructions, all build; these include the ones
    # that raised or warned: 2e-9 through affine and 1e-9 as point masses on the
    # mass check, 3.2e-7 on a panel of width 0 at an evaluation)
    for delta in (1e-12, 1e-9, 2e-9, 3.162277660168379e-07, 1e-4, 0.1, -1e-9, -1e-3):
        for other in (BER.affine(delta, 1.0),
                      freeattn.point_masses([-1.0 + delta, 1.0 + delta], [0.5, 0.5])):
            law = freeattn.free_additive(BER, other)
            x = np.linspace(-1.9, 1.9, 9) + delta
            exact = 1.0 / (math.pi * np.sqrt(4.0 - (x - delta) ** 2))
            assert np.max(np.abs(law.pdf(x) / exact - 1.0)) <= 1e-10, delta
            rep = law._representation()
            assert all(p.map.hi > p.map.lo for p in rep.panels)
            assert abs(rep.total - 1.0) <= law.options.mass_atol + rep.edge_allowance
    # the allowance itself: 2 c sqrt(d) at each of the two edges, c = 1/(2 pi)
    law = _arcsine()
    rep = law._representation()
    d = EDGE_ALLOWANCE_SPACINGS * np.spacing(2.0)
    assert rep.edge_allowance == pytest.approx(2 * 2 * np.sqrt(d) / (2 * math.pi), rel=1e-6)


def test_hard_edge_exponent_counts_the_atoms_at_zero_eq_14_24():
    # theory eq. (14.24): only the factors whose non-zero mass r_i equals the
    # product's r = min r_i are singular at w = -r, each with a pole of order [r_i < 1]
    # (its atom at 0) plus q (a continuous part ~ x**(-q/(q+1)) at 0); k = p - [r < 1]
    from freeattn.compose._analytic import hard_edge_exponent

    proj = freeattn.point_masses([0.0, 1.0], [0.5, 0.5])
    half = freeattn.marchenko_pastur(1.0, 2.0)            # atom 1/2 at 0, soft edge
    square = freeattn.marchenko_pastur(1.0, 1.0)          # x**(-1/2) at 0, no atom
    assert hard_edge_exponent([proj, proj], "P ⊠ P") == Fraction(-1, 2)
    assert hard_edge_exponent([half, half], "MP ⊠ MP") == Fraction(-1, 2)
    assert hard_edge_exponent([proj, proj, half], "three") == Fraction(-2, 3)
    assert hard_edge_exponent([square, square, square], "FC") == Fraction(-3, 4)
    # a factor with more non-zero mass is regular at -r: MP(1, 1) ⊠ MP(1, 2) has k = 0
    with pytest.raises(freeattn.ConvergenceError, match="reaches 0"):
        hard_edge_exponent([square, half], "MP(1,1) ⊠ MP(1,2)")
    # two free projections of trace 1/2: (1/2) delta_0 plus the density
    # 1/(2 pi sqrt(x (1 - x))) on [0, 1] (the arcsine law with weight 1/2); the direct
    # solve (eq. (14.4)) at interior points, measured 4.7e-14
    law = freeattn.free_multiplicative(proj, freeattn.point_masses([0.0, 1.0], [0.5, 0.5]))
    (iv,) = law.interval_details()
    assert iv.lo == 0.0 and iv.lo_exponent == Fraction(-1, 2) and iv.hi == 1.0
    x = np.array([1e-12, 1e-8, 1e-3, 0.1, 0.5, 0.9, 0.999])
    ref = 1.0 / (2.0 * np.pi * np.sqrt(x * (1.0 - x)))
    assert np.max(np.abs(law._density(x) / ref - 1.0)) <= 1e-12


@pytest.mark.parametrize("L", [3, 4, 5])
def test_deep_marchenko_pastur_products_take_the_chain(L):
    # MP(1)^⊠L for L >= 3: the collapsed S-level's tower keeps no digits next to its
    # hard edge x**(-L/(L+1)) over a constituent reaching 0, so free_multiplicative
    # solves eq. (14.8) in the L factors instead.  Against the Fuss-Catalan closed
    # forms: the upper edge (L + 1)**(L + 1)/L**L (fold of eq. (14.22); measured
    # 1.2e-15 and 2.0e-15 for L = 4, 5), m2 = binomial(2 L + 2, 2)/(2 L + 1) = L + 1 by quadrature of
    # the density (1e-10), the mass 1 (1e-12)
    from freeattn.compose._chain import ProductChainLaw

    mp = freeattn.marchenko_pastur(1.0, 1.0)
    law = mp
    for _ in range(L - 1):
        law = freeattn.free_multiplicative(law, mp)
    assert isinstance(law, ProductChainLaw) and len(law.factors) == L
    (iv,) = law.interval_details()
    assert iv.lo == 0.0 and iv.lo_exponent == Fraction(-L, L + 1)
    edge = (L + 1) ** (L + 1) / L ** L
    assert abs(iv.hi / edge - 1.0) <= 1e-12
    assert abs(law.total_mass() - 1.0) <= 1e-12
    scale, q2 = law._quadrature_moment(2, scaled=False)
    assert abs(scale ** 2 * q2 / (L + 1) - 1.0) <= 1e-10


@pytest.mark.statistical
def test_three_discrete_laws_with_an_atom_against_a_haar_rotated_product():
    # three 2-3-atom laws (numpy.random.default_rng(11), fourth draw, the atoms and
    # weights below): four bands and an atom at 1.5809 * 2.2902 * 1.7282 of mass
    # 0.6957 + 0.6400 + 0.8413 - 2 (theory eq. (8.13)); next to one of its folds the
    # continuation stalls and Newton's last step to the axis is taken under the
    # continuation's acceptance (theory section 14.22).  Against the squared singular
    # values of the Haar-rotated product of D1, D2, D3 (quantile diagonals) at N = 800
    # (seed 0): band masses within 0.01 (measured 1.2e-3 at most; the atom's
    # multiplicity and the rounding of the weights to 1/N move them by O(1/N)),
    # mass 1 (1e-12)
    a = freeattn.point_masses([1.0203301876338406, 1.5809010628227274, 2.235912883149371],
                              [0.1036072040022326, 0.6957074230069956, 0.20068537299077174])
    b = freeattn.point_masses([1.0800949603707881, 1.4208042100585268, 2.2902249684551497],
                              [0.14209940182297445, 0.21785733087313658, 0.6400432673038889])
    c = freeattn.point_masses([1.7282231510642787, 2.0521314400778015],
                              [0.8413200674096711, 0.15867993259032884])
    law = freeattn.free_multiplicative(freeattn.free_multiplicative(a, b), c)
    ivs = law.intervals()
    assert len(ivs) == 4 and abs(law.total_mass() - 1.0) <= 1e-12
    loc, mass = law.atoms()
    assert loc.size == 1 and abs(loc[0] / (1.5809010628227274 * 2.2902249684551497
                                            * 1.7282231510642787) - 1.0) <= 1e-14
    assert abs(mass[0] - (0.6957074230069956 + 0.6400432673038889 + 0.8413200674096711
                          - 2.0)) <= 1e-14
    n = 800
    gen = np.random.default_rng(0)

    def quantiles(law_):
        return np.repeat(law_.values, np.diff(np.round(np.r_[0.0, np.cumsum(law_.weights)] * n)
                                              .astype(int)))

    def haar():
        q, r = np.linalg.qr(gen.standard_normal((n, n)))
        return q * np.sign(np.diag(r))[None, :]

    gram = np.diag(quantiles(a))
    for d in (quantiles(b), quantiles(c)):
        s = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
        m = (np.sqrt(d)[:, None] * haar()) * np.sqrt(s)[None, :]
        gram = m @ m.T
    ev = np.linalg.eigvalsh(gram)
    for lo, hi in ivs:
        mc = np.mean((ev >= lo - 1e-9) & (ev <= hi + 1e-9))
        assert abs(mc - (law.cdf(hi) - law.cdf(lo))) <= 0.01


def test_the_nearest_solved_point_directly_and_by_a_tree():
    # a WarmTable compares pairs directly up to WARM_TREE_PAIRS and by a k-d tree
    # beyond, new points in a buffer until WARM_BUFFER of them join the tree's block:
    # the nearest point (and its values) of every query equal the brute-force search
    # over the table's contents (random points, no ties), before and after the buffer
    # folds in, for queries on both sides of the threshold; the block keeps the latest
    # ``size`` points
    from freeattn.compose import _fixed_point

    rng = np.random.default_rng(7)
    table = _fixed_point.WarmTable(4096)
    big = _fixed_point.WARM_TREE_PAIRS // 4096 + 5
    # a batch large enough that its pairs with a buffer of 250-300 points also go by a
    # tree (a host's batch of hundreds of points)
    huge = 2 * _fixed_point.WARM_TREE_PAIRS // 250
    for chunk in (3000, 300, 250, 1500, 40):
        pts = rng.standard_normal(chunk) + 1j * rng.random(chunk)
        table.add(pts, np.stack([pts * 2, pts * 3]))
        zs, vals = table.contents()
        assert np.array_equal(vals, np.stack([zs * 2, zs * 3]))
        for m in (1, big, huge):
            z = rng.standard_normal(m) + 1j * rng.random(m)
            near, v = table.nearest(z)
            ref = zs[np.argmin(np.abs(z[:, None] - zs[None, :]), axis=1)]
            np.testing.assert_array_equal(near, ref)
            np.testing.assert_array_equal(v, np.stack([ref * 2, ref * 3]))
    assert 1 * 4096 <= _fixed_point.WARM_TREE_PAIRS < big * 4096
    assert len(table) <= 4096 + _fixed_point.WARM_BUFFER
    # the latest points first: the last chunk heads the contents
    np.testing.assert_array_equal(table.contents()[0][:40], pts)


def test_off_axis_points_start_from_their_nearest_solved_point_eq_14_45(monkeypatch):
    # a nested law is called at points far (3 to 3000 times |z|) from every point it
    # solved: Newton from the nearest of its latest solved points, kept clearly inside
    # the half-plane (eq. (14.45) for two laws), instead of the iteration of eq. (14.2);
    # G equal to a fresh law's cold solve to 1e-13 (measured 7.1e-16), without one
    # call of the iteration
    def build():
        return freeattn.free_multiplicative(
            freeattn.point_masses([4.683, 1.917, 2.943], [0.31, 0.524, 0.166]),
            freeattn.attention_law(0.023588, 6.0332).squared())

    law = build()
    assert isinstance(law, AnalyticLaw)
    law.intervals()
    law._solve(np.array([3.0 + 1.0j, 5.0 + 0.5j]))
    z = np.array([0.2 + 0.05j, 12.0 + 3.0j, 1.0 + 1e-3j, 1e-3 + 1e-4j, 0.004 + 1e-6j])
    calls = []
    plain = _analytic.iterate

    def counting(*args, **kwargs):
        calls.append(1)
        return plain(*args, **kwargs)

    monkeypatch.setattr(_analytic, "iterate", counting)
    _, g = law._solve(z)
    assert not calls
    monkeypatch.setattr(_analytic, "iterate", plain)
    cold = build()
    cold.intervals()
    _, ref = cold._solve(z)
    assert np.max(np.abs(g / ref - 1.0)) <= 1e-13
