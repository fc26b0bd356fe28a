"""The shared fixed-point strategies (freeattn/compose/_fixed_point.py).

``newton_system`` is the Newton strategy of every system solver of the engine
(the Dyson systems of theory eqs. (9.25)-(9.29), the product system of eq.
(14.8), the rectangular system of eq. (16.7), the causal collocation of eq.
(10.11)); the generic solver of eq. (8.10) uses the scalar ``newton``, and the
rectangular iteration of eq. (16.6) the shared ``iterate`` on pairs.  The
test system below has a closed form, so every tolerance is against an exact
answer.
"""

import numpy as np
import pytest

import freeattn
from freeattn.attention import _causal
from freeattn.compose import (_chain, _dyson, _fixed_point, _generic_solver, _rational_solver,
                              _rectangular, _subordination)
from freeattn.attention._token_law import TokenHeadLaw
from freeattn.compose._fixed_point import FIXED_POINT_RTOL, SystemProblem, newton_system
from freeattn.core._options import DEFAULT_OPTIONS
from user_laws import UserArcsine

def _count_calls(monkeypatch, module, name):
    """Replace ``module.name`` (a shared strategy) by a wrapper that records its calls."""
    calls = []
    strategy = getattr(_fixed_point, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return strategy(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


A, B = 1.0, 2.0
#: The closed-form root is computed in floating point: the solutions must agree
#: with it to a few ulps of |w| ~ 1.
ROOT_ATOL = 1e-14


class _Coupled(SystemProblem):
    """``g1 = 1/(z - A g2)``, ``g2 = 1/(z - B g1)`` (a two-block semicircle system).

    Eliminating ``g2``: ``-B z g1**2 + (z**2 - A + B) g1 - z = 0``; the Stieltjes
    branch has ``Im g1 < 0`` for ``Im z > 0`` and ``g1 ~ 1/z`` at infinity.
    """

    def __init__(self):
        self.sizes = 0

    def evaluate(self, w, z):
        g1, g2 = w
        f = np.stack([g1 - 1.0 / (z - A * g2), g2 - 1.0 / (z - B * g1)])
        # Jacobian of f: d/dg1, d/dg2
        j11, j12 = np.ones_like(z), -A / (z - A * g2) ** 2
        j21, j22 = -B / (z - B * g1) ** 2, np.ones_like(z)
        det = j11 * j22 - j12 * j21
        step = np.stack([(j22 * f[0] - j12 * f[1]) / det, (j11 * f[1] - j21 * f[0]) / det])
        return f, step, (det,)

    def error(self, f, w, extra):
        return np.max(np.abs(f), axis=0) / (1.0 + np.max(np.abs(w), axis=0))

    def step_size(self, step, w, z):
        self.sizes += step.shape[1]
        return super().step_size(step, w, z)

    def admissible(self, w, z, extra):
        return np.all(w.imag <= 0, axis=0)


def _exact(z):
    a, b, c = -B * z, z ** 2 - A + B, -z
    disc = np.sqrt(b * b - 4 * a * c)
    roots = np.stack([(-b + disc) / (2 * a), (-b - disc) / (2 * a)])
    g1 = np.where(roots[0].imag < roots[1].imag, roots[0], roots[1])
    return np.stack([g1, 1.0 / (z - B * g1)])


Z = np.array([0.3 + 0.5j, -1.2 + 0.05j, 2.5 + 1e-3j, 4.0 + 2.0j])


def test_line_search_newton_reaches_the_closed_form():
    exact = _exact(Z)
    start = exact * (1.0 + 0.3 * np.exp(1j * np.arange(4)))
    start.imag = np.minimum(start.imag, 0.0)
    res = newton_system(_Coupled(), Z, start, 40, FIXED_POINT_RTOL, halvings=30,
                        stall_rtol=1e-12)
    assert res.converged.all()
    assert np.max(np.abs(res.value - exact)) <= ROOT_ATOL
    assert np.all(res.residual <= 1e-14)
    # the auxiliary output is the one at the returned value
    again = _Coupled().evaluate(res.value, Z)[2][0]
    assert np.max(np.abs(res.extra[0] - again)) <= 1e-14 * np.max(np.abs(again))


def test_damped_newton_without_line_search():
    class Damped(_Coupled):
        def damp(self, step, w):
            # no unknown moves by more than half its size
            big = np.max(np.abs(step) / (0.5 * np.abs(w)), axis=0)
            return step / np.maximum(big, 1.0)

    exact = _exact(Z)
    problem = Damped()
    # no line search and no half-plane test: the start must lie in the basin
    res = newton_system(problem, Z, exact * 1.1, 60, 1e-15, step_rtol=4e-16)
    assert res.converged.all()
    assert np.max(np.abs(res.value - exact)) <= ROOT_ATOL
    # step_size is called once per accepted step and point
    assert 0 < problem.sizes <= 60 * Z.size


def test_max_steps_is_honoured_and_reported():
    exact = _exact(Z)
    res = newton_system(_Coupled(), Z, exact * 1.5, 1, 1e-15, halvings=0)
    assert res.iterations == 1
    # one step from 50% off cannot reach rounding (quadratic convergence: ~0.25**2)
    assert not res.converged.any()
    assert np.max(np.abs(res.value - exact)) > 1e-6


def test_a_singular_step_stops_its_point_unconverged():
    class Singular(_Coupled):
        def evaluate(self, w, z):
            f, step, extra = super().evaluate(w, z)
            step[:, z == Z[0]] = np.nan    # as a singular Jacobian gives
            return f, step, extra

    exact = _exact(Z)
    start = exact * 1.01
    res = newton_system(Singular(), Z, start, 40, 1e-15, halvings=30, stall_rtol=1e-12)
    assert not res.converged[0] and np.array_equal(res.value[:, 0], start[:, 0])
    assert res.converged[1:].all()
    assert np.max(np.abs(res.value[:, 1:] - exact[:, 1:])) <= ROOT_ATOL


def test_the_rounding_floor_ends_a_point_without_halvings():
    class Noisy(_Coupled):
        # a residual that never goes below ~1e-13: rounding noise of an imagined F
        # (oscillating on the scale of 1e-16 in w, so no step can cancel it)
        def __init__(self):
            super().__init__()
            self.calls = 0

        def evaluate(self, w, z):
            self.calls += z.size
            f, step, extra = super().evaluate(w, z)
            return f + 1e-13 * (1 + 1j) * (2.0 + np.cos(1e16 * np.abs(w))), step, extra

    exact = _exact(Z)
    floor = Noisy()
    with_floor = newton_system(floor, Z, exact * 1.01, 40, 1e-15, halvings=30,
                               floor_rtol=1e-12)
    assert with_floor.converged.all()
    # the noise moves the root by ~1e-13: the points stop there
    assert np.max(np.abs(with_floor.value - exact)) <= 1e-11
    # without the floor the points halve their rejected steps 30 times first
    plain = Noisy()
    without = newton_system(plain, Z, exact * 1.01, 40, 1e-15, halvings=30)
    assert np.max(np.abs(without.value - exact)) <= 1e-11
    assert floor.calls + 25 * Z.size <= plain.calls


def test_system_problem_hooks_are_abstract():
    with pytest.raises(NotImplementedError):
        SystemProblem().evaluate(np.zeros((1, 1), complex), np.zeros(1, complex))
    with pytest.raises(NotImplementedError):
        SystemProblem().error(np.zeros((1, 1)), np.zeros((1, 1)), ())


@pytest.mark.parametrize("module, build", [
    (_dyson, lambda: freeattn.multihead_law(
        0.9, heads=2, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0,
        tokens=freeattn.marchenko_pastur(1.0, 0.4)).pdf(0.5)),
    (_chain, lambda: freeattn.free_multiplicative(
        freeattn.attention_law(0.8, 1.0).squared(),
        freeattn.attention_law(0.6, 1.0).squared()).pdf(0.5)),
    (_rectangular, lambda: freeattn.rectangular_free_additive(
        freeattn.marchenko_pastur(1.0, 1.0).singular_values(),
        freeattn.marchenko_pastur(2.0, 1.0).singular_values(), 0.5).pdf(1.0)),
    # a new causal law each time (the constructor, not the cached causal_law)
    (_causal, lambda: freeattn.CausalLaw(0.55, 1.5).pdf(0.3)),
])
def test_every_system_solver_runs_on_the_shared_strategy(monkeypatch, module, build):
    calls = _count_calls(monkeypatch, module, "newton_system")
    value = build()
    assert np.isfinite(value) and value > 0
    assert calls


def test_the_generic_solver_runs_on_the_shared_newton(monkeypatch):
    calls = _count_calls(monkeypatch, _generic_solver, "newton")
    # a population known only through its transform: the generic path of eq. (8.10)
    pop = freeattn.marchenko_pastur(1.0, 0.5).singular_values()
    law = freeattn.sample_covariance(pop, 0.3)
    assert isinstance(law._solver, _generic_solver.GenericSolver)
    g = law.stieltjes(np.array([0.5 + 1.0j]))
    assert calls and np.isfinite(g).all() and g[0].imag < 0


class _CoupledMap(_fixed_point.FixedPointProblem):
    """The map ``(g1, g2) -> (1/(z - A g2), 1/(z - B g1))`` of :class:`_Coupled` on pairs."""

    def phi(self, w, z):
        return np.stack([1.0 / (z - A * w[1]), 1.0 / (z - B * w[0])]), None


def test_iterate_on_a_pair_reaches_the_closed_form():
    """``iterate`` with two unknowns per point (leading axis, as for eq. (16.6)): from
    ``(1/z, 1/z)`` at ``Im z = 2``, where the map contracts (``|D phi| <= max(A, B)/Im(z)**2
    = 1/2``), it converges to the closed form to ROOT_ATOL; its residual is the
    largest component's last step, below FIXED_POINT_RTOL of the size."""
    z = np.linspace(-3.0, 3.0, 7) + 2.0j
    res = _fixed_point.iterate(_CoupledMap(), z, np.stack([1.0 / z, 1.0 / z]))
    assert res.value.shape == (2, 7) and res.converged.all()
    np.testing.assert_allclose(res.value, _exact(z), rtol=0, atol=ROOT_ATOL)
    assert np.all(res.residual <= FIXED_POINT_RTOL * (1.0 + np.max(np.abs(res.value), axis=0)))


def test_the_rectangular_iteration_runs_on_the_shared_iterate(monkeypatch):
    calls = _count_calls(monkeypatch, _rectangular, "iterate")
    law = freeattn.rectangular_free_additive(
        freeattn.marchenko_pastur(1.0, 1.0).singular_values(),
        freeattn.marchenko_pastur(2.0, 1.0).singular_values(), 0.4)
    value = law.pdf(1.0)
    assert calls and np.isfinite(value) and value > 0


class _CoupledEdge(_fixed_point.EdgeProblem):
    """The fold of :class:`_Coupled` on the real axis: rows ``(g1, g2, x)``, residuals
    ``g - phi(g, x)`` and ``det(I - D phi) = 1 - A B/((x - A g2)**2 (x - B g1)**2)``."""

    def residual(self, v):
        g1, g2, x = v.T
        d1, d2 = x - A * g2, x - B * g1
        out = np.stack([g1 - 1.0 / d1, g2 - 1.0 / d2, 1.0 - A * B / (d1 * d2) ** 2], axis=1)
        return out, np.isfinite(out).all(axis=1), 1.0 + np.maximum(np.abs(g1), np.abs(g2))


def test_bordered_newton_finds_the_closed_form_edges():
    """eq. (14.5) for a system: the support of the two-block law is where the
    discriminant (z**2 - A + B)**2 - 4 B z**2 of its quadratic vanishes, i.e. its
    edges are sqrt(B) -+ sqrt(A) and sqrt(A) + sqrt(B) (closed form).  From the real
    solution just outside each edge (the root nearest 1/x), the bordered Newton
    with its difference Jacobian lands on the edge to 4e-15 relative (a few ulps:
    the fold is a double root, so its residuals fix the edge to rounding), with
    the fold condition below EDGE_FOLD_ATOL."""
    edges = np.array([np.sqrt(B) - np.sqrt(A), np.sqrt(A) + np.sqrt(B)])
    x0 = edges * np.array([0.9, 1.1])
    a, b, c = -B * x0, x0 ** 2 - A + B, -x0
    roots = np.stack([(-b + np.sqrt(b * b - 4 * a * c)) / (2 * a),
                      (-b - np.sqrt(b * b - 4 * a * c)) / (2 * a)])
    g1 = roots[np.argmin(np.abs(roots - 1.0 / x0), axis=0), np.arange(2)]
    v0 = np.stack([g1, 1.0 / (x0 - B * g1), x0], axis=1)
    res = _fixed_point.bordered_newton(_CoupledEdge(), v0)
    assert res.converged.all()
    np.testing.assert_allclose(res.value[:, 2], edges, rtol=4e-15)
    out, _, _ = _CoupledEdge().residual(res.value)
    assert np.all(np.abs(out[:, 2]) <= _fixed_point.EDGE_FOLD_ATOL)


class _CyclingEdge(_fixed_point.EdgeProblem):
    """No fold at all: rows ``(w, x)``, residuals ``w`` and ``x**3 - 2 x + 2``, whose
    Newton iteration from ``x = 0`` is the textbook super-attracting 2-cycle 0 -> 1 -> 0
    (``N'(0) = f f''/f'**2 = 0``)."""

    def residual(self, v):
        w, x = v.T
        out = np.stack([w, x ** 3 - 2.0 * x + 2.0], axis=1)
        return out, np.isfinite(out).all(axis=1), np.ones(v.shape[0])


def test_a_bordered_newton_that_cycles_stops_after_its_stall_rounds(monkeypatch):
    """theory section 14.31: a start beside an edge with no fold oscillates; its merit
    (|f| = 2, 1, 2, 1, ...) sets new minima only in its last digits while the cycle
    settles (the difference Jacobian perturbs it at 1e-7), then none, so the point
    stops unconverged within 2 EDGE_STALL_STEPS rounds (measured 13) instead of
    running all of max_steps; without the rule (a stall count never reached) it runs
    all 60 rounds, each one transform call plus halvings.  The converging closed-form
    edges above are unaffected (same test file)."""
    start = np.array([[0.0, 0.0]])
    res = _fixed_point.bordered_newton(_CyclingEdge(), start, max_steps=60)
    assert not res.converged.any()
    assert res.iterations <= 2 * _fixed_point.EDGE_STALL_STEPS
    monkeypatch.setattr(_fixed_point, "EDGE_STALL_STEPS", 10 ** 9)
    assert _fixed_point.bordered_newton(_CyclingEdge(), start, max_steps=60).iterations == 60
    assert res.value[0, 1] == pytest.approx(0.0, abs=1e-6) or \
        res.value[0, 1] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("module, build", [
    # the Dyson system of the two-band token law (theory eq. (13.12)), built directly:
    # the engine solves this law itself now
    (_dyson, lambda: TokenHeadLaw(0.5, 0.25, freeattn.point_masses([0.5, 1.5]),
                                  DEFAULT_OPTIONS)),
    (_rectangular, lambda: freeattn.rectangular_free_additive(
        freeattn.point_masses([1.0, 2.0]), freeattn.point_masses([0.5, 1.5]), 0.3)),
    # a law known through its transform alone: the analytic edges of eq. (14.5) (a ⊠;
    # the bands of a ⊞ come from the curves of eq. (14.20) on the branches of eq. (14.37))
    (_fixed_point, lambda: freeattn.free_multiplicative(UserArcsine(0.5, 2.0),
                                                        freeattn.point_masses([1.0, 2.0]))),
])
def test_every_edge_solver_runs_on_the_bordered_newton(monkeypatch, module, build):
    calls = _count_calls(monkeypatch, module, "bordered_newton")
    law = build()
    assert len(law.intervals()) >= 1 and calls


def test_polish_newton_roots_stalls_and_guards():
    """polish_newton: the roots +-sqrt(2) of t**2 - 2 from +-1.4 to 2 ulps (closed
    form); at the double root of (t - 1)**2 Newton's steps halve, so with a stall
    ratio of 1/4 the second step is refused and the point keeps one step's value
    (1.5 from 2); a guard refusing steps that leave [0, 10] keeps the start of the
    point heading out (the root -sqrt(2) from 0.1: first step to 10.05)."""
    def square(ta, idx):
        return (ta * ta - 2.0) / (2.0 * ta)
    t = _fixed_point.polish_newton(square, np.array([1.4, -1.4]), 20, rtol=4e-16)
    np.testing.assert_allclose(t, [np.sqrt(2.0), -np.sqrt(2.0)], rtol=4.5e-16)

    def double(ta, idx):
        return (ta - 1.0) ** 2 / (2.0 * (ta - 1.0))
    t, n = _fixed_point.polish_newton(double, np.array([2.0]), 20, stall_ratio=0.25,
                                      counts=True)
    assert t[0] == 1.5 and n[0] == 1

    t, n = _fixed_point.polish_newton(square, np.array([0.1, 1.0]), 20, rtol=4e-16,
                                      accept=lambda tn, ta, idx: (tn >= 0) & (tn <= 10),
                                      counts=True)
    assert t[0] == 0.1 and n[0] == 0
    assert t[1] == pytest.approx(np.sqrt(2.0), rel=4.5e-16) and n[1] >= 4


@pytest.mark.parametrize("module", [_rational_solver, _subordination])
def test_the_algebraic_path_polishes_on_the_shared_newton(monkeypatch, module):
    calls = _count_calls(monkeypatch, module, "polish_newton")
    # a new tower each time (a variance no other test uses)
    law = freeattn.free_additive(freeattn.marchenko_pastur(1.0, 0.5), freeattn.semicircle(1.2345))
    assert law.pdf(1.0) > 0 and calls


# --------------------------------------------------------------------------- #
# Derivative-free strategies: closed-form zeros and maxima
# --------------------------------------------------------------------------- #

def test_bracketed_zeros_finds_closed_form_roots():
    """Illinois on x**3 - 2 (root 2**(1/3)), cos x (pi/2) and a zero at an end
    (x - 1 on [1, 3]): each to the bracket tolerance 1e-14 relative; a bracket that
    cannot close within max_steps raises with its numbers."""
    funs = [lambda x: x ** 3 - 2.0, np.cos, lambda x: x - 1.0]
    a, b = np.array([0.0, 1.0, 1.0]), np.array([2.0, 2.0, 3.0])

    def fun(x, idx):
        return np.array([funs[i](v) for i, v in zip(idx, x)])
    fa, fb = fun(a, np.arange(3)), fun(b, np.arange(3))
    r = _fixed_point.bracketed_zeros(fun, a, b, fa, fb, 1e-14)
    np.testing.assert_allclose(r.value, [2.0 ** (1 / 3), np.pi / 2, 1.0], rtol=2e-14)
    assert r.converged.all() and np.all(r.residual <= 1e-14 * 3.0) and r.iterations < 60
    with pytest.raises(freeattn.ConvergenceError, match="did not converge in 3 steps"):
        _fixed_point.bracketed_zeros(fun, a, b, fa, fb, 1e-14, max_steps=3)


#: Newton's quadratic convergence on exp(x) - 60 from 2.77 reaches the root's rounding
#: in about eight steps; bisecting the bracket's rest down to BRACKET_RTOL took 31.
NEWTON_EVALUATIONS = 12


def test_bracketed_newton_stops_at_a_sub_ulp_correction():
    """exp(x) - 60 on [0, 6] from 2.77 (convex: every Newton iterate after the first
    stays right of the root log 60, the bracket's left end far below it).  At the
    root's rounding the correction f/f' (about 1e-16 relative to e**x) is below an ulp
    of x ~ 4.1 and lands on the end x itself, not strictly inside: that is a zero to
    the tolerance, not a reason to bisect the bracket down to BRACKET_RTOL (31
    evaluations before, each a nested solve where f is a law's G: theory eq.
    (14.37)).  The root to 2 ulps (log 60 rounded)."""
    calls = []

    def f_pair(x, idx):
        calls.append(x.size)
        return np.exp(x) - 60.0, np.exp(x)
    x = _fixed_point.bracketed_newton(f_pair, np.array([0.0]), np.array([6.0]),
                                      np.array([-1.0]), x0=np.array([2.77]))
    assert abs(x[0] - np.log(60.0)) <= 2 * np.spacing(np.log(60.0))
    assert len(calls) <= NEWTON_EVALUATIONS


#: From a start at the bracket's end next to the root, Newton needs the evaluation
#: there and one step; from the middle of [log 60 - 1, end] it took 26.
START_AT_END_EVALUATIONS = 4


def test_bracketed_newton_keeps_a_start_at_the_bracket_end():
    """exp(x) - 60 on [log 60 - 1, log 60 + 4 ulps] from the upper end (an inverse of
    eq. (14.37) whose value is within rounding of a sample's starts at that sample,
    an end of its bracket).  That start was replaced by the middle, from where every
    Newton step of a convex f overshoots the end and bisection halves the bracket
    (26 evaluations); kept, f' there steers at once (theory section 14.51).  The
    root to the ulp."""
    r = np.log(60.0)
    hi = r + 4 * np.spacing(r)
    calls = []

    def f_pair(x, idx):
        calls.append(x.size)
        return np.exp(x) - 60.0, np.exp(x)
    x = _fixed_point.bracketed_newton(f_pair, np.array([r - 1.0]), np.array([hi]),
                                      np.array([-1.0]), x0=np.array([hi]))
    assert abs(x[0] - r) <= np.spacing(r)
    assert len(calls) <= START_AT_END_EVALUATIONS


def test_bracketed_searches_raise_on_a_non_finite_value():
    """A NaN met inside a bracket raises, naming the point, instead of steering the
    bracket (a NaN compares as neither sign nor as larger).  Zeros: log(x - 1) on
    [0.5, 3] with the value -0.01 given for 0.5 (where it is NaN): the first secant
    point 0.536 is below 1.  Maxima: -(x - 0.9)**2, NaN from 1 on, bracketed by
    (0, 0.9, 3) with -5 given for 3: the golden-section step goes to 1.70."""
    f = lambda x, idx: np.log(x - 1.0)                           # noqa: E731
    g = lambda x, idx: np.where(x < 1.0, -(x - 0.9) ** 2, np.nan)  # noqa: E731
    with np.errstate(invalid="ignore"):
        with pytest.raises(freeattn.ConvergenceError, match="non-finite value .* at 0.53"):
            _fixed_point.bracketed_zeros(f, np.array([0.5]), np.array([3.0]), np.array([-0.01]),
                                         np.array([np.log(2.0)]), 1e-14)
        with pytest.raises(freeattn.ConvergenceError, match="non-finite value .* at 1.70"):
            _fixed_point.bracketed_maxima(g, np.array([0.0]), np.array([0.9]), np.array([3.0]),
                                          np.array([-0.81]), np.array([0.0]), np.array([-5.0]),
                                          1e-9)


def test_bracketed_maxima_finds_closed_form_peaks():
    """Parabolic interpolation on -(x - 0.3)**2 (an exact parabola: the vertex at
    once), sin x (pi/2) and -cosh(x - 1) (1): each within 1e-9 relative of the
    peak, the tolerance at which the function's value is exact to ~1e-18; too few
    steps raise."""
    funs = [lambda x: -(x - 0.3) ** 2, np.sin, lambda x: -np.cosh(x - 1.0)]
    a, b, c = np.array([0.0, 1.0, 0.0]), np.array([0.5, 1.4, 0.7]), np.array([1.0, 2.0, 3.0])

    def fun(x, idx):
        return np.array([funs[i](v) for i, v in zip(idx, x)])
    ids = np.arange(3)
    r = _fixed_point.bracketed_maxima(fun, a, b, c, fun(a, ids), fun(b, ids), fun(c, ids), 1e-9)
    np.testing.assert_allclose(r.value, [0.3, np.pi / 2, 1.0], rtol=1e-8)
    assert r.converged.all() and np.all(r.residual <= 2e-9 * 3.0)
    with pytest.raises(freeattn.ConvergenceError, match="parabolic search"):
        _fixed_point.bracketed_maxima(fun, a, b, c, fun(a, ids), fun(b, ids), fun(c, ids),
                                      1e-9, max_steps=2)


def test_secant_carries_state_and_reports_convergence():
    """The secant on x**2 - q for q = 2, 9 (roots sqrt q, 1e-15 relative) from starts
    1 and 1.1, with a per-call counter carried through ``fun`` (every call sees all
    points); an inactive point is left at its start and not converged, and a point
    given too few steps is not converged."""
    q = np.array([2.0, 9.0, 4.0])
    calls = []

    def fun(x):
        calls.append(x.size)
        return x * x - q
    x0, x1 = np.ones(3), np.full(3, 1.1)
    r = _fixed_point.secant(fun, x0, x1, fun(x0), fun(x1), 1e-15, 40,
                            active=np.array([True, True, False]))
    np.testing.assert_allclose(r.value[:2], np.sqrt(q[:2]), rtol=1e-15)
    assert r.value[2] == 1.1 and r.converged.tolist() == [True, True, False]
    assert set(calls) == {3}
    short = _fixed_point.secant(fun, x0, x1, fun(x0), fun(x1), 1e-15, 2)
    assert not short.converged.any()


@pytest.mark.parametrize("name, build", [
    # the gaps of eq. (14.20): a three-band sum of discrete laws (zeros) and the
    # weighted Bernoulli sum, whose curves have local maxima near the margin
    ("bracketed_zeros", lambda: freeattn.free_additive(
        freeattn.point_masses([-1.0, 0.0, 2.0], [0.3, 0.3, 0.4]),
        freeattn.point_masses([0.0, 1.0], [0.5, 0.5])).intervals()),
    ("bracketed_maxima", lambda: freeattn.free_additive(
        freeattn.point_masses([-1.0, 1.0], [0.49, 0.51]),
        freeattn.point_masses([-1.0, 1.0], [0.5, 0.5])).intervals()),
])
def test_the_discrete_sum_search_runs_on_the_shared_strategies(monkeypatch, name, build):
    from freeattn.compose import _discrete_sum_support
    calls = _count_calls(monkeypatch, _discrete_sum_support, name)
    assert len(build()) >= 2 and calls


def test_the_chain_folds_run_on_the_shared_secant(monkeypatch):
    calls = _count_calls(monkeypatch, _chain, "secant")
    law = freeattn.free_multiplicative(freeattn.attention_law(0.7, 1.0).squared(),
                                       freeattn.attention_law(0.5, 1.0).squared())
    assert len(law.intervals()) == 1 and calls


def _random_seven_atom_sum():
    # the 4-band sum of tests/test_analytic.py's random 4-atom and 3-atom laws
    from test_analytic import random_seven_atom_pair
    return freeattn.free_additive(*random_seven_atom_pair())


@pytest.mark.parametrize("guarded", [True, False])
def test_parabolic_steps_that_do_not_shrink_give_way_to_golden_section(monkeypatch, guarded):
    """On one curve of eq. (14.20) of this sum the parabola's vertex keeps landing next
    to the best point, and the bracket [-0.256, -0.209] shrank from one side only:
    after 120 steps it was still 0.047 wide (then returned unconverged, now raised).
    With a golden-section step wherever a bracket has not halved in two steps, every
    search converges (the sum keeps its 4 bands)."""
    if not guarded:
        monkeypatch.setattr(_fixed_point, "PARABOLIC_SHRINK", np.inf)
        with pytest.raises(freeattn.ConvergenceError, match="parabolic search"):
            _random_seven_atom_sum().intervals()
    else:
        assert len(_random_seven_atom_sum().intervals()) == 4
