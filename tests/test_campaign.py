"""A campaign over random compositions of depth 1-4 (theory sections 8.4, 14).

Hypothesis draws a tree of ⊞, ⊠, sample covariance and affine maps over the
elementary laws (Marchenko-Pastur, semicircle, point masses), a user-defined
law given by three hooks only (an arcsine law on ``[lo, hi]``: support with
its exponents, density, Cauchy transform) and an empirical population of 12
atoms.  Every law must either hold what free probability predicts for it, or
raise :class:`freeattn.ConvergenceError`; no other exception may leave the
engine:

* its mass is 1 (to ``mass_atol`` plus the edge allowance of theory eq.
  (8.14));
* its mean and variance are those of the constituents' free cumulants (the
  mean multiplies under ⊠, the first two free cumulants add under ⊞:
  theory eqs. (8.4), (5.8)), to ``MOMENT_RTOL``;
* the CDF is 0 below and 1 at the top of the support and never decreases,
  the density is never negative.

Factors of ⊠ and populations of a sample covariance are at most one
operation deep, and user-defined laws enter through ⊞ and affine maps only:
deeper products nest solvers whose cost multiplies.  On the 12 derandomized
draws of the suite every law is built and holds the invariants (1.2 s in
all).  The same strategy with 40 draws built 38 in the previous engine, two of
them in 126 s and 531 s, and raised ConvergenceError on two (benchmarks/RESULTS.md,
section 14); with the chain of theory eqs. (14.21)-(14.23) and ⊞ with a single
atom as a shift, all 40 build and hold the invariants, none slower than 30 s
(section 15).  Without the depth limit a draw of depth 4 took 126 s and another
raised after 64 s; the speed of such stacks is not solved.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import freeattn as fa
from freeattn import ConvergenceError
from user_laws import UserArcsine

#: Mean and variance of a composition against the constituents' formula,
#: relative to ``sqrt(E x**2)`` and ``E x**2``: exact moments where the law
#: has a moment series, quadrature of its representation otherwise (measured
#: <= 2e-12 on these draws).
MOMENT_RTOL = 1e-9


#: The empirical population: chi-square(3) quantiles at (k + 1/2)/12, plus 0.05.
EMPIRICAL = np.array([0.2716, 0.6427, 0.9518, 1.2590, 1.5811, 1.9322,
                      2.3263, 2.7862, 3.3501, 4.0976, 5.2183, 7.8650]) + 0.05


def _leaf(positive):
    """Strategy for a leaf spec (a law on ``(0, oo)`` when ``positive``)."""
    mp = st.tuples(st.just("mp"), st.floats(0.5, 2.0), st.floats(0.1, 3.0))
    sc = st.tuples(st.just("sc"), st.floats(0.2, 4.0))
    lo, hi = (0.2, 5.0) if positive else (-4.0, 4.0)
    pm = st.integers(1, 3).flatmap(lambda n: st.tuples(
        st.just("pm"),
        st.lists(st.floats(lo, hi), min_size=n, max_size=n, unique=True).filter(
            lambda v: len(v) < 2 or np.min(np.diff(np.sort(v))) > 0.05),
        st.lists(st.floats(0.1, 1.0), min_size=n, max_size=n)))
    user = st.tuples(st.just("user"), st.floats(-3.0, 1.0), st.floats(0.5, 3.0))
    emp = st.just(("emp",))
    # A user law under ⊠ or a sample covariance nests generic solvers whose cost
    # multiplies (a depth-4 draw took 126 s, see the module docstring): the
    # positive factors are the elementary and empirical laws.
    return st.one_of(mp, pm, emp) if positive else st.one_of(mp, sc, pm, user)


def _tree(depth, positive):
    """Strategy for a composition spec of depth ``depth``."""
    if depth == 0:
        return _leaf(positive)
    # Factors of ⊠ and populations are at most one operation deep: a ⊠ of two
    # discrete laws inside a sample covariance inside a ⊠ nests three solvers,
    # each calling the next at every Newton step (64 s for one draw, then
    # ConvergenceError); such stacks are measured in benchmarks/RESULTS.md.
    sub, sub_pos = _tree(depth - 1, positive), _tree(min(depth - 1, 1), True)
    ops = [st.tuples(st.just("mul"), sub_pos, _leaf(True)),
           st.tuples(st.just("cov"), sub_pos, st.floats(0.1, 3.0)),
           st.tuples(st.just("aff"), sub, st.floats(0.0 if positive else -2.0, 2.0),
                     st.floats(0.2, 3.0))]
    if not positive:
        ops.append(st.tuples(st.just("add"), sub, _leaf(False)))
    return st.one_of(*ops)


compositions = st.integers(1, 4).flatmap(lambda d: _tree(d, False))


def _product_moments(a, b):
    """``(m1, m2)`` of ``a ⊠ b``: ``phi(abab) = a2 b1**2 + a1**2 b2 - a1**2 b1**2``."""
    (a1, a2), (b1, b2) = a, b
    return a1 * b1, a2 * b1 * b1 + a1 * a1 * b2 - a1 * a1 * b1 * b1


def build(spec):
    """``(law, (m1, m2))`` of a spec: the law and its first two moments, exactly."""
    kind = spec[0]
    if kind == "mp":
        return fa.marchenko_pastur(spec[1], spec[2]), (spec[1], spec[1] ** 2 * (1 + spec[2]))
    if kind == "sc":
        return fa.semicircle(spec[1]), (0.0, spec[1])
    if kind == "pm":
        v, w = np.sort(np.array(spec[1])), np.array(spec[2]) / np.sum(spec[2])
        return fa.point_masses(v, w), (float(w @ v), float(w @ v ** 2))
    if kind == "user":
        lo, width = spec[1], spec[2]
        mid, r = lo + width / 2, width / 2
        return UserArcsine(lo, lo + width), (mid, mid * mid + r * r / 2)
    if kind == "emp":
        return fa.point_masses(EMPIRICAL), (float(EMPIRICAL.mean()),
                                            float((EMPIRICAL ** 2).mean()))
    a, ma = build(spec[1])
    if kind == "mul":
        b, mb = build(spec[2])
        return fa.free_multiplicative(a, b), _product_moments(ma, mb)
    if kind == "cov":
        return fa.sample_covariance(a, spec[2]), _product_moments(ma, (1.0, 1.0 + spec[2]))
    if kind == "aff":
        t, c = spec[2], spec[3]
        return a.affine(t, c), (t + c * ma[0], t * t + 2 * t * c * ma[0] + c * c * ma[1])
    b, mb = build(spec[2])
    return fa.free_additive(a, b), (ma[0] + mb[0], ma[1] + mb[1] + 2 * ma[0] * mb[0])


def _check(law, moments):
    lo, hi = law.support()
    width = max(hi - lo, 1e-3 * max(abs(lo), abs(hi), 1.0))
    ivs = law.intervals()
    allowance = law._representation().edge_allowance if ivs else 0.0
    assert abs(law.total_mass() - 1.0) <= law.options.mass_atol + allowance
    m1, m2 = moments
    assert abs(law.mean() - m1) <= MOMENT_RTOL * np.sqrt(m2)
    assert abs(law.var() - (m2 - m1 * m1)) <= MOMENT_RTOL * m2
    x = np.linspace(lo - 0.1 * width, hi + 0.1 * width, 401)
    f = law.cdf(x)
    assert f[0] == 0.0 and f[-1] == 1.0 and np.all(np.diff(f) >= 0)
    assert np.all(law.pdf(x) >= 0)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(compositions)
def test_random_compositions_of_depth_1_to_4_hold_or_raise_convergence_error(spec):
    """Every drawn composition (its spec printed by Hypothesis on failure) either
    satisfies the invariants of the module docstring or raises ConvergenceError,
    never another exception."""
    try:
        law, moments = build(spec)
        _check(law, moments)
    except ConvergenceError:
        pass


def test_a_user_law_plus_a_single_atom_is_its_shift():
    # ⊞ delta_s is the shift by s (theory eq. (8.8) with R = s): the user law's own
    # panels, mapped.  As an R-level it formed tau = x - s, which next to the
    # x**(-1/2) edges keeps no offset from them: a draw of the 40-draw
    # derandomized campaign (benchmarks/RESULTS.md section 15) integrated to 3e11
    user = UserArcsine(0.0, 0.5)
    s = 1.7796829243465369
    law = fa.free_additive(user, fa.point_masses([s]))
    (iv,) = law.interval_details()
    assert (iv.lo, iv.hi) == (s, s + 0.5)
    assert abs(law.total_mass() - 1.0) <= law.options.mass_atol
    # the closed-form density at offsets 1e-12 .. 0.25 from the lower edge, taken at
    # the float points' own offsets x - s (exact by Sterbenz's lemma); the
    # representation's edge panel, measured 6.7e-16 at most
    x = s + np.array([1e-12, 1e-6, 0.1, 0.25])
    d = x - s
    ref = 1.0 / (np.pi * np.sqrt(d * (0.5 - d)))
    assert np.max(np.abs(law.pdf(x) / ref - 1.0)) <= 1e-12
    m1, m2 = law.mean(), law.var()
    assert abs(m1 - (s + 0.25)) <= 1e-12 and abs(m2 - 0.5 ** 2 / 8) <= 1e-12
