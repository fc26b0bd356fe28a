"""``SpectralLaw.to_scipy``: the SciPy object agrees with the law's own methods.

One conformance suite over laws of every kind the library builds: the attention law
(one interval, and a split support), its singular-value law, Marchenko-Pastur, and
laws with an atom at 0 (a tall sample covariance, a zero-padded law).  The SciPy
methods delegate to the law, so the expected values are the law's own, to round-off
(rtol 1e-12) unless SciPy integrates numerically (``expect`` with bounds: quad's
tolerance, 1e-8).
"""

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

import freeattn

LAWS = {
    "attention": lambda: freeattn.attention_law(1.0, 1.0).squared(),
    "attention_split": lambda: freeattn.attention_law(0.5, 0.1).squared(),
    "singular_values": lambda: freeattn.attention_law(1.0, 0.5),
    "marchenko_pastur": lambda: freeattn.marchenko_pastur(2.0, 0.5),
    "mp_atom": lambda: freeattn.marchenko_pastur(1.0, 2.0),
    "zero_padded": lambda: freeattn.attention_law(0.8, 1.0).squared().zero_padded(0.6),
}
ATOMIC = ("mp_atom", "zero_padded")
RTOL = 1e-12


@pytest.fixture(params=sorted(LAWS))
def case(request):
    law = LAWS[request.param]()
    return request.param, law, law.to_scipy()


def test_is_a_scipy_distribution(case):
    _, law, dist = case
    assert isinstance(dist, scipy.stats.rv_continuous) and dist.law is law
    lower, upper = law.support()
    assert dist.b == upper and dist.a <= lower


def test_cdf_sf_ppf_isf_agree_and_round_trip(case):
    _, law, dist = case
    lower, upper = law.support()
    x = np.linspace(lower, upper, 41)[1:-1]
    np.testing.assert_allclose(dist.cdf(x), law.cdf(x), rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(dist.sf(x), law.sf(x), rtol=RTOL, atol=1e-15)
    q = np.linspace(0.01, 0.99, 33)
    np.testing.assert_allclose(dist.ppf(q), law.ppf(q), rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(dist.isf(q), law.isf(q), rtol=RTOL, atol=1e-15)
    above = q[q > law.atom]                  # cdf(ppf(q)) = q off the atom
    np.testing.assert_allclose(dist.cdf(dist.ppf(above)), above, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dist.pdf(x), law.pdf(x), rtol=RTOL, atol=1e-15)
    assert dist.cdf(upper) == 1.0 and dist.cdf(lower - 1.0) == 0.0


def test_moments_interval_and_expect(case):
    _, law, dist = case
    assert dist.mean() == pytest.approx(law.mean(), rel=RTOL)
    assert dist.var() == pytest.approx(law.var(), rel=RTOL)
    assert dist.moment(3) == pytest.approx(law.moment(3), rel=RTOL)
    lo, hi = dist.interval(0.9)
    assert lo == pytest.approx(law.ppf(0.05), rel=RTOL, abs=1e-15)
    assert hi == pytest.approx(law.ppf(0.95), rel=RTOL)
    assert dist.expect(lambda x: x ** 2) == pytest.approx(law.moment(2), rel=1e-10)
    assert dist.expect() == pytest.approx(law.mean(), rel=1e-10)
    # with bounds: quad on the continuous part plus the atoms inside the bounds
    median = float(law.ppf((1 + law.atom) / 2))      # a point of the continuous part
    lower = dist.expect(lambda x: np.ones_like(x), ub=median)
    assert lower == pytest.approx(law.cdf(median), abs=1e-8)
    upper = dist.expect(lambda x: x, lb=median, conditional=True)
    below = dist.expect(lambda x: x, ub=median)
    assert below + upper * law.sf(median) == pytest.approx(law.mean(), rel=1e-8)


def test_loc_scale_and_freezing(case):
    _, law, dist = case
    frozen = dist(loc=1.0, scale=2.0)
    x = np.array([0.2, 0.5, 0.8]) * law.support()[1]
    np.testing.assert_allclose(frozen.cdf(1.0 + 2.0 * x), law.cdf(x), rtol=RTOL, atol=1e-15)
    assert frozen.mean() == pytest.approx(1.0 + 2.0 * law.mean(), rel=RTOL)
    assert frozen.dist.law is law


def test_rvs_is_inverse_transform_with_scipy_random_state(case):
    """rvs(random_state=seed) is law.ppf of SciPy's uniforms for that seed, and a large
    sample is close to the law (KS below 1.63/sqrt(N), the 1% critical value)."""
    name, law, dist = case
    sample = dist.rvs(size=4000, random_state=5)
    u = np.random.RandomState(5).uniform(size=4000)
    np.testing.assert_array_equal(sample, law.ppf(u))
    generated = dist.rvs(size=5, random_state=np.random.default_rng(1))
    np.testing.assert_array_equal(generated, law.ppf(np.random.default_rng(1).uniform(size=5)))
    if name not in ATOMIC:
        assert scipy.stats.kstest(sample, dist.cdf).statistic < 1.63 / np.sqrt(4000)
    else:                                    # the atom's share (binomial, 5 sd)
        share = np.mean(sample == 0.0)
        assert abs(share - law.atom) < 5 * np.sqrt(law.atom * (1 - law.atom) / 4000)


@pytest.mark.parametrize("name", ATOMIC)
def test_an_atom_at_zero_is_a_mixed_distribution(name):
    """cdf(0) is the atom, ppf below the atom is 0, pdf is the continuous part (it
    integrates to 1 - atom), entropy raises."""
    law = LAWS[name]()
    dist = law.to_scipy()
    atom = law.atom
    assert atom > 0 and dist.a < 0.0
    assert dist.cdf(0.0) == pytest.approx(atom, rel=RTOL)
    assert dist.ppf(atom / 2) == 0.0
    total = sum(scipy.integrate.quad(dist.pdf, a, b, limit=200)[0] for a, b in law.intervals())
    assert total == pytest.approx(1.0 - atom, abs=1e-7)
    with pytest.raises(ValueError, match="atoms"):
        dist.entropy()


def test_entropy_of_a_continuous_law():
    """Differential entropy of MP(1, 1) from SciPy's quadrature on the law's pdf agrees
    with the law's own quadrature of -log pdf (1e-6: quad near the x**(-1/2) edge)."""
    law = freeattn.marchenko_pastur(1.0, 0.5)
    dist = law.to_scipy()
    reference = law.expect(lambda x: -np.log(law.pdf(x)))
    assert dist.entropy() == pytest.approx(reference, rel=1e-6)
