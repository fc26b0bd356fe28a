"""The tree code for sums over many atoms (theory eqs. (14.25)-(14.26))."""

import mpmath
import numpy as np
import pytest

import freeattn
from freeattn.compose import _analytic, _atom_tree, _population_support
from freeattn.compose._atom_tree import TREE_MIN_ATOMS, AtomTree

#: The truncation (14.26) is below 1e-16 of the sum of the moduli of the terms;
#: the rounding of the Horner sums and of the leaves' direct sums adds a few
#: ulps per level: 1e-14 of that sum of moduli is the tolerance.
TREE_SUM_RTOL = 1e-14
#: mpmath digits of the reference sums (twice the float digits).
REFERENCE_DPS = 30


def _population(k, seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.chisquare(3, size=k))
    weights = rng.random(k)
    return values, weights / weights.sum()


def _points(values, seed):
    rng = np.random.default_rng(seed)
    x = np.r_[rng.uniform(-1.0, values.max() + 1.0, 6), values[[0, 7, -1]] + 1e-9,
              0.5 * (values[100] + values[101])]
    y = np.r_[10.0 ** rng.uniform(-14, 0, 6), 1e-12, 0.0, 1e-3, 0.0]
    return x + 1j * y


def _reference(values, weights, v, q):
    with mpmath.workdps(REFERENCE_DPS):
        out, moduli = [], []
        for z in v:
            zm = mpmath.mpc(z.real, z.imag)
            terms = [mpmath.mpf(float(m)) / (zm - mpmath.mpf(float(a))) ** (q + 1)
                     for a, m in zip(values, weights)]
            out.append(complex(mpmath.fsum(terms)))
            moduli.append(float(mpmath.fsum(abs(t) for t in terms)))
    return np.array(out), np.array(moduli)


@pytest.mark.parametrize("q", [0, 1, 2, 3])
def test_power_sums_match_mpmath(q):
    # every order of eq. (14.25), against 30-digit sums, inside and above the support
    values, weights = _population(2500, 1)
    tree = AtomTree(values, weights)
    assert tree.depth >= 5                      # far nodes on several levels
    v = _points(values, 2)
    got = tree.power_sums(v, q)[q]
    ref, moduli = _reference(values, weights, v, q)
    assert np.all(np.abs(got - ref) <= TREE_SUM_RTOL * moduli)


def test_sums_match_direct_on_many_atoms():
    # (G, G') of the tree and of the direct blocked sum, 20 000 atoms, 200 points
    values, weights = _population(20000, 3)
    rng = np.random.default_rng(4)
    v = rng.uniform(-1, values.max() + 1, 200) + 1j * 10.0 ** rng.uniform(-15, 1, 200)
    g, dg = AtomTree(values, weights).sums(v)
    g0, dg0 = _analytic._atom_sums(values, weights, v)
    mod0 = np.abs(1.0 / (v[:, None] - values)) @ weights
    mod1 = np.abs(1.0 / (v[:, None] - values) ** 2) @ weights
    assert np.all(np.abs(g - g0) <= TREE_SUM_RTOL * mod0)
    assert np.all(np.abs(dg - dg0) <= TREE_SUM_RTOL * mod1)


def test_repeated_values_and_unsorted_input():
    # nodes of one repeated value (half-width 0) have only M_0; input order is free
    values = np.repeat([0.5, 2.0, 3.0], 400)
    weights = np.full(values.size, 1.0 / values.size)
    perm = np.random.default_rng(5).permutation(values.size)
    v = np.array([1.0 + 0.1j, 2.5 + 1e-8j, -3.0 + 0j, 40.0 + 2j])
    g, dg = AtomTree(values[perm], weights[perm], leaf=16).sums(v)
    exact = sum(1.0 / 3.0 / (v - a) for a in (0.5, 2.0, 3.0))
    dexact = -sum(1.0 / 3.0 / (v - a) ** 2 for a in (0.5, 2.0, 3.0))
    np.testing.assert_allclose(g, exact, rtol=TREE_SUM_RTOL, atol=0)
    np.testing.assert_allclose(dg, dexact, rtol=TREE_SUM_RTOL, atol=0)


def test_point_on_an_atom_is_not_finite():
    values, weights = _population(3000, 6)
    g, dg = AtomTree(values, weights).sums(np.array([values[10] + 0j, values[10] + 1j]))
    assert not np.isfinite(g[0]) and np.isfinite(g[1]) and np.isfinite(dg[1])


def test_population_edges_tree_matches_direct(monkeypatch):
    # the support of MP(1, 1/2) ⊠ (5000 atoms) by the tree and by the direct sums
    # of eq. (14.17): the same bands, edges within 1e-12 of the scale
    values, weights = _population(5000, 7)
    tree_edges = _population_support.population_edges(0.5, values, weights)
    monkeypatch.setattr(_population_support, "TREE_MIN_ATOMS", 10 ** 9)
    direct_edges = _population_support.population_edges(0.5, values, weights)
    assert len(tree_edges) == len(direct_edges) > 1
    scale = direct_edges[-1][1]
    assert np.max(np.abs(np.array(tree_edges) - np.array(direct_edges))) <= 1e-12 * scale


def test_sample_covariance_over_many_atoms_uses_the_tree(monkeypatch):
    # the law of a 5000-atom population: Stieltjes values off the axis and the
    # boundary density inside a band agree with the direct sums to 1e-12
    values, weights = _population(5000, 8)
    pop = freeattn.point_masses(values, weights)
    law = freeattn.sample_covariance(pop, 0.5)
    assert values.size >= TREE_MIN_ATOMS
    bands = law.intervals()
    x = np.linspace(bands[-1][0], bands[-1][1], 9)[1:-1]
    z = x + 0.05j
    g_tree = law.stieltjes(z)
    f_tree = law._density(x)
    assert "_atom_tree" in pop.__dict__          # the tree was built and kept
    monkeypatch.setattr(_analytic, "TREE_MIN_ATOMS", 10 ** 9)
    monkeypatch.setattr(_population_support, "TREE_MIN_ATOMS", 10 ** 9)
    direct = freeattn.sample_covariance(freeattn.point_masses(values, weights), 0.5)
    np.testing.assert_allclose(g_tree, direct.stieltjes(z), rtol=1e-12, atol=0)
    np.testing.assert_allclose(f_tree, direct._density(x), rtol=1e-12, atol=0)
    # the mean of a sample covariance is the population mean (eq. (8.4))
    assert law.mean() == pytest.approx(float(values @ weights), rel=1e-12)


def test_tree_constants_are_consistent():
    # eq. (14.26) at the chosen order and separation is below 1e-16 of the node's
    # sum of moduli for every order used
    import math
    eta, p_max = _atom_tree.TREE_SEPARATION, _atom_tree.TREE_ORDER
    for q in range(4):
        tail = sum(math.comb(p + q, q) * eta ** -p for p in range(p_max, p_max + 400))
        assert tail * (1 + 1 / eta) ** (q + 1) < 1e-16


def test_density_next_to_the_edge_of_a_narrow_band_over_many_atoms(monkeypatch):
    # 20 000 chi-square(3) atoms, ratio 1/2: the band of an isolated small atom
    # ends at x ~ 3.6e-3; at 4.4e-9 of its width below that edge the residual of
    # eq. (14.4) stays at the rounding of the 20 000-term sums (1.3e-13 of |w|,
    # above the plain fold floor), and the density follows the square-root edge
    n = 20000
    t = np.random.default_rng(1).chisquare(3, n) * 1.0000001
    law = freeattn.sample_covariance(freeattn.point_masses(t, np.full(n, 1.0 / n)), 0.5)
    lo, hi = next(b for b in law.intervals() if b[0] < 3.574e-3 < b[1])
    width = hi - lo
    d = np.array([1e-4, 4.419391089448186e-09]) * width
    f = law._density(hi - d)
    # f ~ A sqrt(hi - x) (1 + O((hi - x)/width)): the ratio to 1e-4 relative
    assert f[1] / f[0] == pytest.approx(np.sqrt(d[1] / d[0]), rel=1e-3)
    # without the conditioning of the sums in the floor, this point raises in the
    # formulation of eq. (14.4); the mirrored one of eq. (14.29), population ⊠ MP,
    # solves it to the same value
    monkeypatch.setattr(_analytic, "_sum_condition", lambda args: 1.0)
    mirrored = freeattn.sample_covariance(freeattn.point_masses(t, np.full(n, 1.0 / n)), 0.5)
    mirrored.intervals()
    assert mirrored._density(hi - d[1:])[0] == pytest.approx(f[1], rel=1e-6)
    monkeypatch.setattr(_analytic.AnalyticLaw, "_mirror", lambda self: None)
    fresh = freeattn.sample_covariance(freeattn.point_masses(t, np.full(n, 1.0 / n)), 0.5)
    fresh.intervals()
    with pytest.raises(freeattn.ConvergenceError):
        fresh._density(hi - d[1:])


def test_sum_condition_of_eq_14_27_closed_form():
    # two atoms +-1 of mass 1/2 at u = i y: G = -i y/(1 + y**2), the moduli sum to
    # 1/sqrt(1 + y**2), so kappa = sqrt(1 + y**2)/y (>= 1; 1 for a law without atoms)
    law = freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])
    y = np.array([1e-3, 0.5, 10.0])
    kappa = _analytic._sum_condition(((law, 1j * y), (freeattn.semicircle(1.0), 1j * y)))
    np.testing.assert_allclose(kappa, np.maximum(np.sqrt(1 + y ** 2) / y, 1.0), rtol=1e-14)
    # the cap keeps the floor of eq. (14.27) at the boundary tolerance
    assert _analytic.SUM_CONDITION_MAX * _analytic.FOLD_RESIDUAL_RTOL == pytest.approx(
        _analytic.BOUNDARY_RTOL, rel=1e-15)


@pytest.mark.parametrize("values, weights, match", [
    ([], [], "non-empty"),
    ([1.0, 2.0], [1.0], "non-empty"),
    ([1.0, np.nan], [0.5, 0.5], "finite"),
    ([1.0, 2.0], [1.5, -0.5], ">= 0"),
])
def test_tree_rejects_bad_atoms(values, weights, match):
    with pytest.raises(ValueError, match=match):
        AtomTree(np.array(values), np.array(weights))


def test_tree_rejects_orders_above_three():
    tree = AtomTree(np.arange(10.0), np.full(10, 0.1))
    with pytest.raises(ValueError, match="qmax"):
        tree.power_sums(np.array([0.5j]), 4)
