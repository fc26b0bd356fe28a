"""The model registry (freeattn.montecarlo._models): models, draws, intermediates.

Models registered here are removed again at the end of each test.  The toy
models have laws known in closed form: an i.i.d. Gaussian ``n x n`` matrix
with entries of variance ``s^2/n`` has the Marchenko-Pastur law of ratio 1 and
variance ``s^2`` (Marchenko & Pastur 1967), and ``sqrt(n) A`` is the attention
model plus the rank-one common mode ``11^T/sqrt(n)`` (``A 1 = 1``).
"""

import numpy as np
import pytest

import freeattn
from freeattn.montecarlo import _models
from freeattn.montecarlo._models import Draw, Intermediate, Model


@pytest.fixture
def registered():
    """Register models for one test; unregister them afterwards."""
    names = []

    def register(model):
        freeattn.register_model(model)
        names.append(model.name)
        return model

    yield register
    for name in names:
        freeattn.unregister_model(name)


def _iid(draw):
    """W * scale / sqrt(n) from the linear model's noise stream."""
    return draw.take("linear_noise") * (draw.options.get("scale", 1.0) / np.sqrt(draw.n))


def _iid_law(beta, gamma, scale=1.0):
    return freeattn.marchenko_pastur(scale ** 2, 1.0)


IID = Model("iid_test", _iid, uses=("linear_noise",), law=_iid_law, reference=_iid_law,
            options={"scale": 1.0}, description="i.i.d. Gaussian / sqrt(n)")


def _uncentred(draw):
    """sqrt(n) A, whose top singular value sqrt(n) is the common mode."""
    return freeattn.montecarlo._sampling.softmax_rows(draw.take("scores"), draw.beta) * np.sqrt(draw.n)


UNCENTRED = Model("uncentred_test", _uncentred, uses=("scores",),
                  law=_models.single_head_law, reference=_models.same_variance_mp,
                  common_mode=1, outliers=1)


def _lawless(draw):
    return draw.take("linear_noise")


LAWLESS = Model("lawless_test", _lawless, uses=("linear_noise",))


def test_the_chain_is_registered_in_order():
    assert tuple(freeattn.MODELS)[:6] == freeattn.CHAIN_MODELS
    for name in freeattn.CHAIN_MODELS:
        model = freeattn.MODELS[name]
        assert model.name == name and model.law is not None
        assert model.equation.startswith("theory eq. (7.")
    # non-bulk parts of theory/07_validation.md, section 7.3 (eq. (7.8))
    assert [(freeattn.MODELS[m].zeros, freeattn.MODELS[m].outliers)
            for m in freeattn.CHAIN_MODELS] == [(1, 1), (0, 2), (0, 1), (0, 1), (0, 0), (0, 0)]
    with pytest.raises(TypeError):
        freeattn.MODELS["x"] = IID          # a read-only view


def test_registered_model_is_sampled_validated_and_listed(registered):
    """A registered model works everywhere a chain model does: sample_model,
    sample_chain (sharing the draw), validate with its own law and options."""
    registered(IID)
    assert "iid_test" in freeattn.MODELS
    y = freeattn.sample_model("iid_test", 50, 10, 1.0, rng=4)
    # the same stream as the linear model's noise W: y = W / sqrt(n)
    w = np.random.default_rng(4).spawn(4)[2].standard_normal((50, 50))
    np.testing.assert_allclose(y, w / np.sqrt(50), rtol=1e-15)
    both = freeattn.sample_chain(50, 10, 1.0, models=("iid_test", "linear"), rng=4)
    assert tuple(both) == ("linear", "iid_test")          # registry order
    np.testing.assert_array_equal(both["iid_test"], y)

    report = validate_iid(scale=2.0)
    res = report.results["iid_test"]
    assert report.options == {"scale": 2.0}
    # the law is MP(scale^2 = 4, 1): edge 16, m1 = 4, m2 = 2 * 16 (Catalan numbers)
    assert res.edge == pytest.approx(16.0, rel=1e-15)
    assert res.moments_exact[:2] == pytest.approx([4.0, 32.0], rel=1e-12)
    assert res.moments[0] == pytest.approx(4.0, rel=0.02)       # mean of n*draws entries^2
    assert res.ks < 3 * res.ks_noise                             # the right law, within noise


def validate_iid(scale):
    return freeattn.validate(1.0, 1.0, 200, 3, models=("iid_test",), rng=1, progress=False,
                             options={"scale": scale})


def test_register_rejects_bad_models(registered):
    registered(IID)
    with pytest.raises(ValueError, match="already registered"):
        freeattn.register_model(IID)
    with pytest.raises(TypeError, match="freeattn.Model"):
        freeattn.register_model("iid_test")
    with pytest.raises(ValueError, match="unknown intermediates"):
        freeattn.register_model(Model("x_test", _iid, uses=("nope",)))
    with pytest.raises(ValueError, match="name"):
        Model("a,b", _iid)
    with pytest.raises(ValueError, match="zeros"):
        Model("x_test", _iid, zeros=-1)
    with pytest.raises(TypeError, match="law"):
        Model("x_test", _iid, law=3)
    with pytest.raises(ValueError, match="unknown model"):
        freeattn.unregister_model("no_such_model")
    replacement = Model("iid_test", _iid, uses=("linear_noise",))
    assert freeattn.register_model(replacement, replace=True) is replacement
    assert freeattn.MODELS["iid_test"] is replacement


def test_common_mode_is_removed_and_the_rest_interlaces(registered):
    """eq. (7.14): sqrt(n) A = sqrt(n) A_perp + 11^T/sqrt(n) with A_perp 1 = 0, so
    M M^T = Y Y^T + 11^T: a rank-one positive perturbation, whose eigenvalues
    interlace those of the attention model (Weyl): a_i <= u_i <= a_{i+1}.  Removing
    the common mode (the top value, >= n) leaves a bulk as close to the law as the
    attention model's."""
    registered(UNCENTRED)
    n = 80
    chain = freeattn.sample_chain(n, n, 1.0, models=("attention", "uncentred_test"), rng=2)
    a = freeattn.squared_singular_values(chain["attention"])
    u = freeattn.squared_singular_values(chain["uncentred_test"])
    tol = 1e-10 * u[-1]
    assert np.all(a[:-1] <= u[:-1] + tol) and np.all(u[:-1] <= a[1:] + tol)
    assert u[-1] >= n * (1 - 1e-12)
    report = freeattn.validate(1.0, 1.0, n, 2, models=("attention", "uncentred_test"), rng=2,
                               progress=False)
    att, unc = report.results["attention"], report.results["uncentred_test"]
    assert unc.removed >= 2                              # the common mode of each draw
    assert unc.top_singular_values[0] >= unc.sqrt_n * (1 - 1e-12)
    assert unc.largest < 2 * unc.edge                    # the common mode is not in the bulk
    assert abs(unc.ks - att.ks) <= 2.5 / (n - 2)         # interlacing: one step of F_N apart


def test_model_without_law_reports_what_it_can(registered):
    """No law: distances, exact moments and edges are NaN (null in JSON), no value is
    an outlier; the moments, noise and top singular values are still measured."""
    registered(LAWLESS)
    report = freeattn.validate(1.0, 1.0, 40, 2, models=("lawless_test",), rng=0,
                               progress=False)
    res = report.results["lawless_test"]
    assert np.isnan(res.ks) and np.isnan(res.w1) and np.isnan(res.ks_mp) and np.isnan(res.edge)
    assert all(np.isnan(res.moments_exact)) and res.removed == 0
    assert res.ks_per_draw == (pytest.approx(np.nan, nan_ok=True),) * 2
    # W has entries of variance 1 (not 1/n): the mean squared singular value is n
    assert res.moments[0] == pytest.approx(40.0, rel=0.1)
    assert res.ks_noise > 0
    assert '"ks": null' in report.to_json()
    assert "  nan  " in report.to_text()


def test_unregistered_model_objects_are_accepted():
    """A Model object need not be registered to be sampled or validated."""
    y = freeattn.sample_model(IID, 6, 3, 1.0, rng=0)
    assert y.shape == (6, 6)
    report = freeattn.validate(1.0, 1.0, 30, 1, models=[IID, "linear"], rng=0, progress=False)
    assert tuple(report.results) == ("linear", "iid_test")
    # the header names the models whose law (and edge) is not the single-head law's
    assert "models with their own law, edge: iid_test 4.0000" in report.to_text()


def test_draw_shares_caches_and_releases_intermediates():
    """Within a draw an intermediate is built once and shared; take() hands out the
    cached array only when no later model needs it; after each model the draw keeps
    only what later models need; a rebuilt intermediate is identical (each has its
    own stream)."""
    draw = Draw(12, 5, 1.0, rng=3)
    scores = draw.get("scores")
    assert draw.get("scores") is scores and "keys" in draw._cache
    draw._pending = (freeattn.MODELS["linear"],)
    copy = draw.take("scores")
    assert copy is not scores and np.array_equal(copy, scores)
    draw._pending = ()
    assert draw.take("scores") is scores and "scores" not in draw._cache
    np.testing.assert_array_equal(draw.get("scores"), scores)          # rebuilt, same
    draw._pending = (freeattn.MODELS["sigma_g"],)
    draw._release()
    assert set(draw._cache) == {"keys"}            # sigma_g needs the gram matrix <- keys



def test_intermediates_registry_errors():
    with pytest.raises(ValueError, match="already registered"):
        freeattn.register_intermediate(Intermediate("scores", lambda d, r: None))
    with pytest.raises(ValueError, match="requires unknown"):
        freeattn.register_intermediate(Intermediate("x_test", lambda d, r: None,
                                                    requires=("nope",)))
    with pytest.raises(ValueError, match="already belongs"):
        freeattn.register_intermediate(Intermediate("x_test", lambda d, r: None,
                                                    stream="keys"))
    with pytest.raises(TypeError, match="Intermediate"):
        freeattn.register_intermediate("x_test")
    with pytest.raises(ValueError, match="unknown intermediate"):
        Draw(4, 2, 1.0, rng=0).get("nope")
    with pytest.raises(ValueError, match="unknown stream"):
        Draw(4, 2, 1.0, rng=0).stream("nope")


def test_new_intermediate_gets_its_own_stream():
    """A registered intermediate with a new stream is stream number len(streams)
    of a draw, independent of the chain's four streams (which stay the first four)."""
    name = "extra_noise_test"
    intermediate = Intermediate(name, lambda draw, rng: rng.standard_normal(3), stream=name)
    freeattn.register_intermediate(intermediate)
    try:
        index = _models.streams().index(name)
        assert index >= 4 and _models.streams()[:4] == ("keys", "queries", "linear_noise",
                                                         "row_noise")
        value = Draw(4, 2, 1.0, rng=5).get(name)
        expected = np.random.default_rng(5).spawn(index + 1)[index].standard_normal(3)
        np.testing.assert_array_equal(value, expected)
    finally:
        del _models._INTERMEDIATES[name]
        _models._STREAMS.remove(name)


def _tall(draw):
    """G/sqrt(n), G an n x n/2 i.i.d. N(0, 1) matrix: a tall model."""
    return draw.take("linear_noise")[:, :draw.n // 2] / np.sqrt(draw.n)


def _tall_law(beta, gamma):
    """The n eigenvalues of Y Y^T: an atom 1/2 at 0 and the Marchenko-Pastur law of
    G^T G/n (ratio 1/2): marchenko_pastur(1/2, 2), mean (n/2)/n = 1/2."""
    return freeattn.marchenko_pastur(0.5, 2.0)


def test_tall_model_compares_its_zeros_with_the_atom(registered):
    """eqs. (7.7), (7.9): a tall n x n/2 model has n/2 zero eigenvalues of Y Y^T, and
    its law an atom 1/2 at 0; the KS distance takes the CDF's left limit there, so the
    zeros match the atom (without the left limit the distance would be >= 1/2)."""
    registered(Model("tall_test", _tall, uses=("linear_noise",), law=_tall_law))
    y = freeattn.sample_model("tall_test", 100, 100, 1.0, rng=0)
    assert y.shape == (100, 50)
    spectrum = freeattn.MODELS["tall_test"].spectrum(y)
    assert len(spectrum) == 100 and np.all(spectrum[:50] == 0) and spectrum[50] > 0
    report = freeattn.validate(1.0, 1.0, 200, 3, models=("tall_test",), rng=0,
                               progress=False)
    res = report.results["tall_test"]
    assert _tall_law(1.0, 1.0).atom == 0.5
    assert res.ks < 0.05 and res.ks < 3 * res.ks_noise
    assert res.moments[0] == pytest.approx(0.5, rel=0.05)       # the atom counts in the mean
