"""A level solved by Newton from a neighbour's subordination point, certified by
theory eq. (8.34) (section 8.11): over a closed-form constituent and over a nested law;
a tower without a closed-form outermost constituent from a neighbour's leaf, eq. (8.36).

Independent checks: the tower's own solve of the same points (eqs. (8.10)-(8.11)),
every other root of the tower's polynomial, which eq. (8.34) must refuse, and the
generic solver's continuation in ``Im z`` (eq. (8.10)).
"""

import numpy as np
import pytest

import freeattn
from freeattn.algebra._rational import batched_roots
from freeattn.compose import _subordination
from freeattn.compose._fixed_point import WarmTable
from freeattn.compose._generic_solver import GenericSolver
from freeattn.compose._subordination import SubordinationLaw
from freeattn.core._errors import ConvergenceError

#: Newton from a neighbour against the tower at the same points: two solves of one
#: root, each to a few ulps; measured 3.4e-16 (G) and 6.1e-16 (G') for the attention
#: law, 1.4e-16 and 3.3e-16 for MP ⊞ semicircle (the points of the first test); the
#: selected root's tau against the tower's own, 7.2e-16. The same bound for a level over
#: a nested law against the generic solver's continuation: measured 2.0e-16 and 4.4e-16.
WARM_VS_TOWER_RTOL = 1e-13


def _levels():
    att = freeattn.attention_law(1.0, 1.0).squared().base          # an S-level
    rsum = freeattn.free_additive(freeattn.marchenko_pastur(1.0, 0.5),
                                  freeattn.semicircle(1.0))          # an R-level
    for law in (att, rsum):
        assert isinstance(law, SubordinationLaw) and law._solver.polisher is not None
    return att, rsum


@pytest.mark.parametrize("which", [0, 1])
def test_a_neighbours_newton_agrees_with_the_tower_eq_8_34(which):
    law = _levels()[which]
    lo, hi = law.support()
    z0 = np.array([lo + 0.3 * (hi - lo) + 0.05j, hi + 0.5 + 0.2j, 0.5 * (lo + hi) + 1e-3j])
    _against_tower(law, law._warm_pair, z0, z0 * (1 + 2e-3) + 1e-4j)


def _against_tower(law, warm, z0, z):
    """The points ``z0`` solved (by the tower: the table's starts), then ``warm`` at
    ``z``: every point served, ``(G, G')`` equal to the tower's at the same points;
    returns that ``G``."""
    law._solved_pair(z0)
    g, dg, done = warm(z)
    assert done.all()
    g_t, dg_t = law._tower_pair(z)
    np.testing.assert_allclose(g, g_t, rtol=WARM_VS_TOWER_RTOL)
    np.testing.assert_allclose(dg, dg_t, rtol=WARM_VS_TOWER_RTOL)
    return g


def test_points_far_from_every_solved_one_and_on_the_axis_go_to_the_tower():
    law = _levels()[0]
    law._solved_pair(np.array([1.0 + 0.1j]))
    z = np.array([1.0 * (1 + 2 * _subordination.LEVEL_WARM_RTOL) + 0.1j, 1.0 + 0j])
    _, _, done = law._warm_pair(z)
    assert not done.any()


@pytest.mark.parametrize("which", [0, 1])
def test_eq_8_34_refuses_every_other_root_of_the_tower(which):
    # at points inside, beside and far from the support, each root of the tower's
    # polynomial gives an outermost subordination point: eq. (8.34) accepts the one the
    # tower selects and no other
    law = _levels()[which]
    lo, hi = law.support()
    z = np.array([lo + 0.4 * (hi - lo) + 1e-2j, hi + 0.3 + 0.05j, 3 * hi + 2.0j])
    solver = law._solver
    coeffs = solver.num[:, None] - z[None, :] * solver.den[:, None]
    roots = solver._newton(coeffs, batched_roots(coeffs))           # (degree, points)
    t_sel, g_sel = solver.solve(z)[:2]
    tau_sel = solver.curve.stages(t_sel, derivatives=False)[0][-2]
    for j in range(z.size):
        taus = solver.curve.stages(roots[:, j], derivatives=False)[0][-2]
        ok, g, _ = law._certified(np.full(taus.size, z[j]), taus)
        assert ok.sum() == 1
        assert abs(taus[ok][0] - tau_sel[j]) <= WARM_VS_TOWER_RTOL * abs(tau_sel[j])
        assert abs(g[ok][0] - g_sel[j]) <= WARM_VS_TOWER_RTOL * abs(g_sel[j])


@pytest.mark.parametrize("table", ["_warm_table", "_leaf_table"])
def test_a_refused_warm_root_falls_back_to_the_tower(table):
    # a start that Newton takes to another root (the table made to hold the conjugate
    # of the branch's subordination point, eq. (8.34): it converges to tau = 0.699 -
    # 0.653i, in the lower half-plane; or of the tower's leaf, eq. (8.36)): the
    # certificate refuses it, the tower answers
    if table == "_warm_table":
        law = _levels()[0]
        z0 = np.array([1.0 + 0.2j])
        warm = law._warm_pair
    else:
        law = _tower_level()
        lo, hi = law.support()
        z0 = np.array([0.5 * (lo + hi) + 0.1 * hi * 1j])
        warm = law._warm_leaf_pair
    law._solved_pair(z0)
    zs, values = getattr(law, table).contents()
    conjugated = WarmTable(_subordination.LEVEL_WARM_TABLE)
    conjugated.add(zs, np.conj(values))
    setattr(law, table, conjugated)
    z = z0 * (1 + 1e-3)
    _, _, done = warm(z)
    assert not done.any()
    g2, dg2 = law._solved_pair(z)
    g_t, dg_t = law._tower_pair(z)
    np.testing.assert_allclose(g2, g_t, rtol=WARM_VS_TOWER_RTOL)
    np.testing.assert_allclose(dg2, dg_t, rtol=WARM_VS_TOWER_RTOL)


def _generic_level():
    """An R-level over a nested product (no tower: the generic solver of eq. (8.10))."""
    inner = freeattn.free_multiplicative(freeattn.attention_law(1.0, 1.0).squared(),
                                         freeattn.point_masses([1.0, 2.0], [0.5, 0.5]))
    law = freeattn.free_additive(freeattn.semicircle(1.0), inner)
    assert isinstance(law, SubordinationLaw) and isinstance(law._solver, GenericSolver)
    return law


def _against_continuation(law, z):
    """:meth:`_warm_pair` at ``z``: every point served, ``(G, G')`` equal to the generic
    solver's continuation at the same points; returns that ``G``."""
    g, dg, done = law._warm_pair(z)
    assert done.all()
    tau, g_c = law._solver.solve(z)
    _, _, dz, dg_c = law._solver._phi(tau)
    np.testing.assert_allclose(g, g_c, rtol=WARM_VS_TOWER_RTOL)
    np.testing.assert_allclose(dg, dg_c / dz, rtol=WARM_VS_TOWER_RTOL)
    return g


def test_a_level_over_a_nested_law_from_a_neighbour_agrees_with_the_continuation():
    # the generic solver's continuation in Im z (eq. (8.10)) against Newton from a
    # neighbour certified by eq. (8.34); measured 2.0e-16 (G) and 4.4e-16 (G')
    law = _generic_level()
    lo, hi = law.support()
    z0 = np.array([lo + 0.3 * (hi - lo) + 0.05j, hi + 0.5 + 0.2j, 0.5 * (lo + hi) + 1e-3j])
    law._solved_pair(z0)                                  # the continuation: the starts
    z = z0 * (1 + 2e-3) + 1e-4j
    _against_continuation(law, z)


def test_a_level_over_a_nested_law_on_and_next_to_the_axis_from_a_neighbour_eq_8_11():
    # real points inside the support (eq. (8.34)) and outside it (eq. (8.11)), and points
    # 1e-20 |x| above the axis outside it (eq. (8.11) at their real part, tau within the
    # branch tolerance of the axis: a host's subordination point in its own gap), moved
    # by 1e-3 from points the continuation solved: every one served, equal to the
    # continuation's (measured 3.5e-16 in G, 5.5e-15 in G')
    law = _generic_level()
    lo, hi = law.support()
    x0 = np.r_[lo + (hi - lo) * np.array([0.2, 0.5, 0.9]), hi + np.array([0.3, 2.0]),
               lo - np.array([0.4, 3.0])]
    z0 = np.r_[x0 + 0j, x0[3:] + 1e-20j * np.abs(x0[3:])]
    law._solved_pair(z0)
    z = z0.real * (1 + 1e-3) + 1j * z0.imag
    g = _against_continuation(law, z)
    assert np.all(g[3:7].imag == 0) and np.all(g[:3].imag < 0)
    # above the axis G keeps its (tiny) imaginary part, of the sign of the branch
    assert np.all(g[7:].imag <= 0) and np.all(np.abs(g[7:].imag) <= 1e-18 * np.abs(g[7:]))


def test_a_level_over_a_nested_law_starts_from_a_farther_neighbour():
    # GENERIC_WARM_RTOL (0.5) over a nested law, LEVEL_WARM_RTOL (0.05) over a tower:
    # points 23 % from solved ones are served warm over the nested law, equal to its
    # continuation (measured 3.8e-16), and left to the tower over a closed-form one
    law = _generic_level()
    lo, hi = law.support()
    z1 = np.array([lo + 0.5 * (hi - lo) + 0.1j, hi + 1.0 + 0.1j])
    law._solved_pair(z1)
    z = z1 * 1.3
    assert np.all(np.abs(z - z1) > 4 * _subordination.LEVEL_WARM_RTOL * np.abs(z))
    assert np.all(np.abs(z - z1) < _subordination.GENERIC_WARM_RTOL * np.abs(z))
    g, _, done = law._warm_pair(z)
    assert done.all()
    np.testing.assert_allclose(g, law._solver.solve(z)[1], rtol=WARM_VS_TOWER_RTOL)
    tower = _levels()[1]
    lo, hi = tower.support()
    z1 = np.array([lo + 0.5 * (hi - lo) + 0.1j, hi + 1.0 + 0.1j])
    tower._solved_pair(z1)
    assert not tower._warm_pair(z1 * 1.3)[2].any()


def test_the_continuations_stages_are_solved_loosely_its_target_exactly_eq_8_10(monkeypatch):
    # the stages of the continuation to CONTINUATION_STAGE_RTOL (1e-3), the target to the
    # Newton tolerance: the same root as with every stage solved to the Newton
    # tolerance (measured 7e-17 in tau, 1.6e-16 in G) in fewer evaluations of the
    # constituent (measured 32 against 46)
    from freeattn.compose import _generic_solver

    law = _generic_level()
    lo, hi = law.support()
    z = np.array([0.3 + 1e-3j, hi + 0.2 + 1e-6j, lo + 0.1 * (hi - lo) + 1e-8j])
    calls = []
    phi = GenericSolver._phi
    monkeypatch.setattr(GenericSolver, "_phi",
                        lambda self, t, *a, **k: calls.append(t.size) or phi(self, t, *a, **k))
    t1, g1 = law._solver.solve(z)
    loose = len(calls)
    monkeypatch.setattr(_generic_solver, "CONTINUATION_STAGE_RTOL", law.options.newton_rtol)
    t2, g2 = law._solver.solve(z)
    assert len(calls) - loose > loose
    np.testing.assert_allclose(t1, t2, rtol=WARM_VS_TOWER_RTOL)
    np.testing.assert_allclose(g1, g2, rtol=WARM_VS_TOWER_RTOL)


def test_a_nested_constituent_that_raises_leaves_the_point_to_the_continuation(monkeypatch):
    # a step's point where the nested law is not solved: no point is taken warm and
    # the solver's own continuation answers
    law = _generic_level()
    z0 = np.array([1.0 + 0.2j])
    law._solved_pair(z0)
    z = z0 * (1 + 1e-3)
    expected = law._solved_pair(z)

    def refuse(zs):
        raise ConvergenceError("made to fail", point=complex(zs.ravel()[0]), residual=1.0,
                               tolerance=0.0)

    monkeypatch.setattr(law.constituent, "_pair_or_far", refuse)
    _, _, done = law._warm_pair(z)
    assert not done.any()
    monkeypatch.undo()
    np.testing.assert_allclose(law._solved_pair(z)[0], expected[0], rtol=WARM_VS_TOWER_RTOL)


def _tower_level():
    """A sample covariance of an attention law: its levels and the attention law's in one
    tower, no closed-form outermost constituent (no polisher): eq. (8.36)."""
    from freeattn.compose._rational_solver import RationalSolver

    law = freeattn.sample_covariance(freeattn.attention_law(0.062015, 2.1168).squared(),
                                     1.7529)
    assert isinstance(law, SubordinationLaw) and isinstance(law._solver, RationalSolver)
    assert law._solver.polisher is None
    return law


def test_a_towers_leaf_from_a_neighbour_agrees_with_the_tower_eq_8_36():
    # Newton on the factored tower from a neighbour's leaf against the tower's roots at
    # the same points (measured 1.6e-15 in G and 2.7e-15 in G')
    law = _tower_level()
    lo, hi = law.support()
    z0 = np.array([lo + 0.3 * (hi - lo) + 0.05j, hi * 1.2 + 0.2j, 0.5 * (lo + hi) + 1e-3j])
    _against_tower(law, law._warm_leaf_pair, z0, z0 * (1 + 2e-3) + 1e-4j)
    # the leaves' table, not the subordination points' (no polisher)
    assert "_warm_table" not in law.__dict__ and "_leaf_table" in law.__dict__


def test_eq_8_36_refuses_every_other_root_of_the_tower():
    # each root of the tower's polynomial at points inside, beside and far from the
    # support: eq. (8.36) accepts the one the tower selects and no other
    law = _tower_level()
    lo, hi = law.support()
    z = np.array([lo + 0.4 * (hi - lo) + 1e-2 * hi * 1j, hi * 1.1 + 0.05j, 3 * hi + 2.0j])
    solver = law._solver
    coeffs = solver.num[:, None] - z[None, :] * solver.den[:, None]
    roots = solver._newton(coeffs, batched_roots(coeffs))           # (degree, points)
    assert roots.shape[0] >= 4
    t_sel, g_sel = solver.solve(z)[:2]
    for j in range(z.size):
        ok, g, _ = law._leaf_certified(np.full(roots.shape[0], z[j]), roots[:, j])
        assert ok.sum() == 1
        assert abs(roots[ok, j][0] - t_sel[j]) <= WARM_VS_TOWER_RTOL * abs(t_sel[j])
        assert abs(g[ok][0] - g_sel[j]) <= WARM_VS_TOWER_RTOL * abs(g_sel[j])


def _axis_against_tower(law, warm, x0, inside):
    """Real points ``x0`` (the first ``inside`` in the support) solved, then ``warm`` at
    the points moved by 1e-3: every one served, ``G`` real outside and with a density
    inside, ``(G, G')`` equal to the tower's at the same points; returns those points."""
    x = x0 * (1 + 1e-3)
    g = _against_tower(law, warm, x0 + 0j, x + 0j)
    assert np.all(g[inside:].imag == 0) and np.all(g[:inside].imag < 0)
    return x


def test_a_towers_leaf_on_the_axis_agrees_with_the_tower_eqs_8_11_8_36():
    # real points inside the bands (eq. (8.36): the leaf strictly inside) and outside
    # the support (eq. (8.11): a real leaf with every level increasing), each moved by
    # 1e-3 from a solved one, against the tower at the same points (measured 1.1e-15 /
    # 4.4e-16 in G, 1.6e-15 / 1.1e-15 in G', inside / outside)
    law = _tower_level()
    lo, hi = law.support()
    x0 = np.r_[lo + (hi - lo) * np.array([0.1, 0.4, 0.8]), hi * np.array([1.1, 1.5, 3.0]),
               -hi * np.array([0.2, 1.0])]
    _axis_against_tower(law, law._warm_leaf_pair, x0, 3)


def test_eq_8_11_refuses_every_other_real_root_of_the_tower():
    # at real points outside the support every real root of the tower's polynomial is
    # a candidate: the certificate of eq. (8.11) keeps the one the tower selects
    law = _tower_level()
    lo, hi = law.support()
    z = np.array([hi * 1.2, hi * 4.0, -0.5 * hi]) + 0j
    solver = law._solver
    coeffs = solver.num[:, None] - z[None, :] * solver.den[:, None]
    roots = solver._newton(coeffs, batched_roots(coeffs))
    t_sel, g_sel = solver.solve(z)[:2]
    for j in range(z.size):
        r = roots[:, j].copy()
        ok, g, _ = law._leaf_certified(np.full(r.size, z[j]), r)
        # several real roots (measured 5, 5 and 3 of 7), one kept
        assert np.sum(np.abs(roots[:, j].imag) <= 1e-12 * np.abs(roots[:, j])) >= 2
        assert ok.sum() == 1
        assert abs(r[ok][0] - t_sel[j].real) <= WARM_VS_TOWER_RTOL * abs(t_sel[j])
        assert abs(g[ok][0] - g_sel[j]) <= WARM_VS_TOWER_RTOL * abs(g_sel[j])


@pytest.mark.parametrize("which", [0, 1])
def test_a_level_on_the_axis_from_a_neighbour_eqs_8_11_8_34(which):
    # real points inside the support (eq. (8.34): tau strictly inside) and outside it
    # (eq. (8.11): tau real, the transforms real, dz/dtau > 0), moved by 1e-3 from
    # solved ones, against the tower (measured within 5.5e-15 in G and 1.4e-14 in G'
    # on three such levels); and every other real root of the tower refused there
    law = _levels()[which]
    lo, hi = law.support()
    x0 = np.r_[lo + (hi - lo) * np.array([0.2, 0.5, 0.9]), hi + np.array([0.3, 2.0]),
               lo - np.array([0.4, 3.0])]
    x = _axis_against_tower(law, law._warm_pair, x0, 3)
    solver = law._solver
    z = x[3:] + 0j
    coeffs = solver.num[:, None] - z[None, :] * solver.den[:, None]
    roots = solver._newton(coeffs, batched_roots(coeffs))
    tau_sel = solver.curve.stages(solver.solve(z)[0], derivatives=False)[0][-2]
    for j in range(z.size):
        taus = solver.curve.stages(roots[:, j], derivatives=False)[0][-2]
        ok, _, _ = law._certified(np.full(taus.size, z[j]), taus.copy())
        # (2 to 4 real roots at these points, measured)
        assert np.sum(np.abs(roots[:, j].imag) <= 1e-12 * np.abs(roots[:, j])) >= 2
        assert ok.sum() == 1
        assert abs(taus[ok][0].real - tau_sel[j].real) <= WARM_VS_TOWER_RTOL * abs(tau_sel[j])


def test_a_composed_partner_is_asked_by_its_own_pair_eq_8_34(monkeypatch):
    # MP ⊠ sample_covariance(MP): an S-level whose partner is itself a tower. The branch
    # tests of eqs. (8.10), (8.34) ask the partner's G at its subordination points; in
    # calls of at most PARTNER_PAIR_MAX_POINTS points by its own pair, which starts from
    # its solved neighbours (section 8.11), instead of solving its tower afresh: at 40
    # points moved by 1e-3 from points solved 10 at a time, asked 10 at a time, the
    # partner's tower solves no point (40 before), and G, G' are the same bit for bit
    from freeattn.algebra import _levels

    def law_and_points():
        law = freeattn.free_multiplicative(
            freeattn.marchenko_pastur(0.72379, 0.28852),
            freeattn.sample_covariance(freeattn.marchenko_pastur(0.7341, 1.7113), 1.5279))
        assert isinstance(law.level.partner, SubordinationLaw)
        lo, hi = law.support()
        z0 = np.linspace(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo), 40) + 0.05j * (hi - lo)
        return law, z0

    def solve_twice():
        law, z0 = law_and_points()
        solver = law.level.partner._solver
        solved = []
        tower = solver.solve
        monkeypatch.setattr(solver, "solve",
                            lambda z, *a, **k: solved.append(np.size(z)) or tower(z, *a, **k))
        for c in np.array_split(z0, 4):
            law._stieltjes_pair(c)
        solved.clear()
        chunks = np.array_split(z0 * (1 + 1e-3), 4)
        assert max(c.size for c in chunks) <= _levels.PARTNER_PAIR_MAX_POINTS
        pairs = [law._stieltjes_pair(c) for c in chunks]
        return (np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]),
                sum(solved))

    g, dg, solved = solve_twice()
    assert solved == 0
    monkeypatch.setattr(_levels, "_partner_g", lambda partner, point: partner._stieltjes(point))
    g_old, dg_old, solved_old = solve_twice()
    assert solved_old == 40
    np.testing.assert_array_equal(g, g_old)
    np.testing.assert_array_equal(dg, dg_old)
