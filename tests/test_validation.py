"""Tests of the Monte Carlo validation (freeattn.montecarlo._validation, freeattn.montecarlo._draws).

The report fields are recomputed independently of the implementation: the
spectra from the documented seeds with LAPACK's SVD (not the Gram-eigenvalue
route validate uses), the statistics with SciPy (kstest, ks_2samp,
wasserstein_distance, kstwobign) or by hand, and the laws' moments and edges
from closed forms (theory eqs. (2.4), (5.11), (5.12) and the Marchenko-Pastur
law).  A field computed wrong fails one of them; the end-to-end checks use
small n (30-400) to stay within budget.
"""

import concurrent.futures
import json
import zlib

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

import freeattn
from freeattn import CHAIN_MODELS, DrawError, ValidationReport, convergence, validate
from freeattn.montecarlo._draws import run_draw


def _without_time(report):
    out = report.to_dict()
    out.pop("seconds")
    return out


# ---------------------------------------------------------------- every field, recomputed

BETA, GAMMA, N, DRAWS, SEED = 1.0, 1.0, 60, 3, 3
FIELD_MODELS = ("attention", "normalized", "linear")
# Non-bulk parts from theory/07_validation.md, section 7.3: (zeros, outlier budget).
NON_BULK = {"attention": (1, 1), "normalized": (0, 2), "linear": (0, 0)}
THETA1 = np.expm1(BETA ** 2)                      # theory eq. (2.4)


@pytest.fixture(scope="module")
def field_report():
    return validate(BETA, GAMMA, N, DRAWS, models=FIELD_MODELS, rng=SEED, progress=False)


@pytest.fixture(scope="module")
def spectra():
    """Per model, the ascending squared singular values of each draw: draw i is
    sampled from the i-th child of SeedSequence(SEED) (the documented seeding) and
    its spectrum taken with scipy.linalg.svdvals (LAPACK gesdd)."""
    out = {m: [] for m in FIELD_MODELS}
    for child in np.random.SeedSequence(SEED).spawn(DRAWS):
        for model, y in freeattn.sample_chain(N, N, BETA, models=FIELD_MODELS,
                                              rng=child).items():
            out[model].append(np.sort(scipy.linalg.svdvals(y) ** 2))
    return out


def _edge():
    return freeattn.operator_norm(BETA, GAMMA).squared_edge


def _bulk(values, model):
    """eq. (7.8) by hand: drop the zeros, then those of the budgeted top values above
    edge * (1 + 3 n^(-2/3))."""
    zeros, budget = NON_BULK[model]
    threshold = _edge() * (1 + 3 * N ** (-2 / 3))
    kept = values[zeros:]
    outliers = int(np.sum(kept[len(kept) - budget:] > threshold)) if budget else 0
    return kept[:len(kept) - outliers]


@pytest.fixture(scope="module")
def bulks(spectra):
    return {m: [_bulk(v, m) for v in spectra[m]] for m in FIELD_MODELS}


def _mp_cdf(x, variance):
    """Marchenko-Pastur CDF at ratio 1 in closed form: with t = x/variance,
    F = (2/pi) (arcsin(sqrt(t)/2) + sqrt(t (4 - t))/4) on [0, 4] (integrate the
    density sqrt(t(4-t))/(2 pi t) with t = 4 sin^2)."""
    t = np.clip(np.asarray(x, dtype=float) / variance, 0.0, 4.0)
    return (2 / np.pi) * (np.arcsin(np.sqrt(t) / 2) + np.sqrt(t * (4 - t)) / 4)


def _w1_midpoint(sorted_x, cdf, upper, cells=200_000):
    """eq. (7.10) by the midpoint rule on a fine grid that contains every sample, so
    F_N is constant on each cell: an implementation-independent reference."""
    grid = np.union1d(sorted_x, np.linspace(0.0, max(upper, sorted_x[-1]), cells))
    mid = 0.5 * (grid[1:] + grid[:-1])
    fn = np.searchsorted(sorted_x, mid, side="right") / len(sorted_x)
    return float(np.sum(np.abs(fn - cdf(mid)) * np.diff(grid)))


def test_spectra_are_the_documented_draws(field_report, spectra, bulks):
    """The independent spectra are the report's draws: the bulk sizes add up to
    n * draws - removed for every model (so the recomputations below compare like
    with like)."""
    for model in FIELD_MODELS:
        assert sum(len(b) for b in bulks[model]) == N * DRAWS - field_report.results[model].removed


def test_report_level_fields(field_report):
    r = field_report
    assert isinstance(r, ValidationReport)
    assert (r.beta, r.gamma, r.n, r.d_qk, r.draws) == (BETA, GAMMA, N, N, DRAWS)
    assert r.seed == {"entropy": SEED, "spawn_key": []}
    assert r.theta1 == pytest.approx(THETA1, rel=1e-15)
    assert r.edge == pytest.approx(_edge(), rel=1e-15)
    assert r.mp_edge == pytest.approx(4 * THETA1, rel=1e-15)      # MP edge 4 theta1
    assert r.options == {}
    assert tuple(r.results) == FIELD_MODELS                        # registry order
    assert r == ValidationReport(**{**r.__dict__, "seconds": -1.0})   # time not compared


def test_removed_and_above_edge(field_report, spectra, bulks):
    """eq. (7.8): removed counts zeros and outliers; above_edge counts the bulk values
    beyond the edge, and this configuration has some (so a field stuck at 0 fails)."""
    edge = _edge()
    for model in FIELD_MODELS:
        res = field_report.results[model]
        assert res.model == model
        assert res.removed == N * DRAWS - sum(len(b) for b in bulks[model])
        assert res.above_edge == sum(int(np.sum(b > edge)) for b in bulks[model])
    assert field_report.results["attention"].removed > DRAWS      # a zero per draw + outliers
    assert field_report.results["attention"].above_edge > 0
    assert field_report.results["normalized"].above_edge > 0


def test_distances_to_the_law_and_to_mp(field_report, bulks):
    """eqs. (7.9)-(7.10): KS by scipy.stats.kstest, W1 by a midpoint rule, to the law
    and to MP(theta1, 1) in closed form; per-draw KS by kstest of each draw."""
    law = freeattn.attention_law(BETA, GAMMA).squared()
    for model in FIELD_MODELS:
        res = field_report.results[model]
        pooled = np.sort(np.concatenate(bulks[model]))
        assert res.ks == pytest.approx(scipy.stats.kstest(pooled, law.cdf).statistic, rel=1e-9)
        assert res.ks_mp == pytest.approx(
            scipy.stats.kstest(pooled, lambda x: _mp_cdf(x, THETA1)).statistic, rel=1e-9)
        assert res.w1 == pytest.approx(_w1_midpoint(pooled, law.cdf, _edge()), rel=1e-3)
        assert res.w1_mp == pytest.approx(
            _w1_midpoint(pooled, lambda x: _mp_cdf(x, THETA1), 4 * THETA1), rel=1e-3)
        assert res.ks_per_draw == pytest.approx(
            [scipy.stats.kstest(b, law.cdf).statistic for b in bulks[model]], rel=1e-9)


def test_noise_references(field_report, bulks):
    """eq. (7.11): the bootstrap of each model uses the seed documented in
    ValidationReport (spawn key (draws, crc32(model)) under the root seed); redone here
    the slow way with scipy's two-sample KS and Wasserstein distances, 400 resamples,
    95% quantiles.  eq. (7.12): ks_iid = K^{-1}(0.95)/sqrt(N), N the pooled bulk size."""
    for model in FIELD_MODELS:
        res = field_report.results[model]
        seed = np.random.SeedSequence(SEED, spawn_key=(DRAWS, zlib.crc32(model.encode())))
        weights = np.random.default_rng(seed).multinomial(DRAWS, [1 / DRAWS] * DRAWS,
                                                          size=400)
        pooled = np.concatenate(bulks[model])
        ks, w1 = [], []
        for w in weights:
            resampled = np.concatenate([np.repeat(b, k) for b, k in zip(bulks[model], w)])
            ks.append(scipy.stats.ks_2samp(resampled, pooled, method="asymp").statistic)
            w1.append(scipy.stats.wasserstein_distance(resampled, pooled))
        assert res.ks_noise == pytest.approx(np.quantile(ks, 0.95), rel=1e-9)
        assert res.w1_noise == pytest.approx(np.quantile(w1, 0.95), rel=1e-9)
        assert res.ks_iid == pytest.approx(
            scipy.stats.kstwobign.ppf(0.95) / np.sqrt(len(pooled)), rel=1e-12)
        assert res.ks_iid == pytest.approx(1.35810 / np.sqrt(len(pooled)), rel=1e-5)


def test_moments_and_their_standard_errors(field_report, bulks):
    """Bulk moments: mean over draws of mean(lambda^k), standard error
    std(ddof=1)/sqrt(draws); exact ones m1 = theta1, m2 = 2 theta1^2 + beta^4/gamma
    (theory eqs. (5.11), (5.12)); MP(theta1, 1) has theta1^k times the Catalan
    numbers 1, 2, 5."""
    law = freeattn.attention_law(BETA, GAMMA).squared()
    for model in FIELD_MODELS:
        res = field_report.results[model]
        per_draw = np.array([[np.mean(b ** k) for b in bulks[model]] for k in (1, 2, 3)])
        assert res.moments == pytest.approx(per_draw.mean(axis=1), rel=1e-9)
        assert res.moments_se == pytest.approx(
            per_draw.std(axis=1, ddof=1) / np.sqrt(DRAWS), rel=1e-7)
        assert res.moments_exact[:2] == pytest.approx(
            [THETA1, 2 * THETA1 ** 2 + BETA ** 4 / GAMMA], rel=1e-10)
        assert res.moments_exact[2] == pytest.approx(law.moment(3), rel=1e-12)
        assert res.moments_mp == pytest.approx(
            [THETA1, 2 * THETA1 ** 2, 5 * THETA1 ** 3], rel=1e-12)


def test_edges_largest_and_top_singular_values(field_report, spectra, bulks):
    """largest: mean (and standard error) over draws of the largest bulk value;
    top_singular_values: mean over draws of the three largest singular values of the
    full matrix, largest first (svdvals returns them descending)."""
    for model in FIELD_MODELS:
        res = field_report.results[model]
        largest = np.array([b[-1] for b in bulks[model]])
        assert res.largest == pytest.approx(largest.mean(), rel=1e-9)
        assert res.largest_se == pytest.approx(largest.std(ddof=1) / np.sqrt(DRAWS), rel=1e-7)
        top = np.mean([np.sqrt(v[::-1][:3]) for v in spectra[model]], axis=0)
        assert res.top_singular_values == pytest.approx(top, rel=1e-9)
        assert res.top_singular_values[0] > res.top_singular_values[2]
        assert res.edge == pytest.approx(_edge(), rel=1e-15)
        assert res.mp_edge == pytest.approx(4 * THETA1, rel=1e-15)
        assert res.sqrt_n == pytest.approx(np.sqrt(N), rel=1e-15)
        assert res.beats_mp == (res.ks < res.ks_mp and res.w1 < res.w1_mp)


def test_report_renderings_carry_the_fields(field_report):
    """json (NaN -> null, full precision), csv (one row per model, every scalar) and
    the text/markdown tables show the numbers of the report."""
    data = json.loads(field_report.to_json())
    rows = {row["model"]: row for row in __import__("csv").DictReader(
        __import__("io").StringIO(field_report.to_csv()))}
    text, md = field_report.to_text(), field_report.to_markdown()
    for model, res in field_report.results.items():
        assert data["results"][model]["w1_noise"] == res.w1_noise
        assert data["results"][model]["top_singular_values"] == list(res.top_singular_values)
        assert float(rows[model]["ks_iid"]) == res.ks_iid
        assert float(rows[model]["moments_se_2"]) == res.moments_se[1]
        assert int(rows[model]["above_edge"]) == res.above_edge
        assert f"{res.ks:.4f}" in text and f"| {model} | {res.ks:.4f} |" in md
    assert data["seed"] == {"entropy": SEED, "spawn_key": []}
    assert str(field_report) == text


def test_single_draw_has_no_noise_and_json_writes_null():
    """One draw: no bootstrap and no standard errors (NaN), written as JSON null."""
    report = validate(1.0, 1.0, 30, 1, models=("linear",), rng=0, progress=False)
    res = report.results["linear"]
    assert np.isnan(res.ks_noise) and np.isnan(res.w1_noise) and np.isnan(res.largest_se)
    assert all(np.isnan(res.moments_se))
    data = json.loads(report.to_json())
    assert data["results"]["linear"]["ks_noise"] is None
    assert "NaN" not in report.to_json()


# ---------------------------------------------------------------- convergence fields


@pytest.fixture(scope="module")
def conv_report():
    return convergence(1.0, 1.0, ns=(30, 60, 90), draws=2, models=("attention", "linear"),
                       rng=9, progress=False)


def test_convergence_fields(conv_report):
    """eq. (7.13): size ns[i] is validate(...) with the i-th child of the root seed;
    each fit is numpy.polyfit of (log n, log distance) with the residual standard
    error computed by hand."""
    rep = conv_report
    assert (rep.beta, rep.gamma, rep.ns, rep.draws) == (1.0, 1.0, (30, 60, 90), 2)
    assert rep.seed == {"entropy": 9, "spawn_key": []}
    children = np.random.SeedSequence(9).spawn(3)
    for n, child, report in zip(rep.ns, children, rep.reports):
        assert report == validate(1.0, 1.0, n, 2, models=("attention", "linear"), rng=child,
                                  progress=False)
    assert tuple(rep.fits) == ("attention", "linear")
    x = np.log(rep.ns)
    for model, fits in rep.fits.items():
        for metric in ("ks", "w1"):
            fit = fits[metric]
            values = [getattr(r.results[model], metric) for r in rep.reports]
            assert (fit.model, fit.metric, fit.ns) == (model, metric, rep.ns)
            assert fit.values == tuple(values)
            slope, intercept = np.polyfit(x, np.log(values), 1)
            residuals = np.log(values) - intercept - slope * x
            se = np.sqrt(residuals @ residuals / (len(x) - 2) / np.sum((x - x.mean()) ** 2))
            assert fit.slope == pytest.approx(slope, rel=1e-10)
            assert fit.intercept == pytest.approx(intercept, rel=1e-10)
            assert fit.slope_se == pytest.approx(se, rel=1e-8)


def test_reports_record_the_clock_between_start_and_end(monkeypatch):
    """A report's ``seconds`` is the difference of the module's clock between the start
    and the end of the run (read from a fake clock: no wall-clock time is asserted)."""
    from conftest import FakeClock
    from freeattn.montecarlo import _validation

    clock = FakeClock()
    monkeypatch.setattr(_validation, "time", clock)
    r = validate(1.0, 1.0, 20, 1, models=("attention",), rng=3, progress=False)
    assert r.seconds == clock.readings[-1] - clock.readings[0] == 1.25
    clock.readings.clear()
    rep = convergence(1.0, 1.0, ns=(20, 30), draws=1, models=("attention",), rng=3,
                      progress=False)
    assert len(clock.readings) >= 2
    assert rep.seconds == clock.readings[-1] - clock.readings[0]


def test_convergence_renderings(conv_report):
    rep = conv_report
    assert "attention" in rep.to_text() and "| linear |" in rep.to_markdown()
    data = json.loads(rep.to_json())
    assert data["fits"]["linear"]["ks"]["ns"] == [30, 60, 90]
    assert data["fits"]["linear"]["ks"]["slope"] == rep.fits["linear"]["ks"].slope
    rows = list(__import__("csv").DictReader(__import__("io").StringIO(rep.to_csv())))
    assert [r["model"] for r in rows] == ["attention", "linear"]
    assert float(rows[1]["w1_slope"]) == rep.fits["linear"]["w1"].slope
    again = convergence(1.0, 1.0, ns=(30, 60, 90), draws=2, models=("attention", "linear"),
                        rng=9, progress=False)
    assert again == rep


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def small_report():
    return validate(1.0, 1.0, 60, 3, rng=123, progress=False)


def test_report_has_every_chain_model(small_report):
    assert tuple(small_report.results) == CHAIN_MODELS
    for res in small_report.results.values():
        assert len(res.ks_per_draw) == 3
        # the centred models carry no common mode: top singular value well below sqrt(n)
        assert res.top_singular_values[0] < 0.8 * res.sqrt_n


def test_common_mode_of_uncentred_attention():
    """A 1 = 1, so sqrt(n) A has a singular value >= sqrt(n) (the common mode),
    and centring removes it: sqrt(n) A_perp stays far below sqrt(n) (eq. (7.1))."""
    n = 200
    a = freeattn.sample_attention(n, n, 1.0, rng=0)
    top = np.sqrt(freeattn.squared_singular_values(np.sqrt(n) * a)[-1])
    assert top >= np.sqrt(n) * (1 - 1e-12)
    centred = np.sqrt(freeattn.squared_singular_values(
        freeattn.sample_model("attention", n, n, 1.0, rng=0))[-1])
    assert centred < 0.5 * np.sqrt(n)


def test_reproducible_across_executors(small_report):
    """Same seed -> identical report: serial, a process pool, and a thread pool."""
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        parallel = validate(1.0, 1.0, 60, 3, rng=123, executor=pool, progress=False)
    assert _without_time(parallel) == _without_time(small_report)
    assert parallel == small_report
    threads = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    try:
        threaded = validate(1.0, 1.0, 60, 3, rng=np.random.SeedSequence(123),
                            executor=threads, progress=False)
    finally:
        threads.shutdown()
    assert _without_time(threaded) == _without_time(small_report)


def test_model_result_does_not_depend_on_the_other_models(small_report):
    """Each model has its own streams (draws and bootstrap): asking for a subset
    of the chain reproduces those models' results exactly."""
    subset = validate(1.0, 1.0, 60, 3, models=("sigma_f", "attention"), rng=123,
                      progress=False)
    assert tuple(subset.results) == ("attention", "sigma_f")   # registry order
    for model in ("attention", "sigma_f"):
        assert subset.results[model] == small_report.results[model]


def test_process_executor_by_name_and_count():
    serial = validate(0.8, 0.5, 40, 2, models=("linear",), rng=5, progress=False)
    by_name = validate(0.8, 0.5, 40, 2, models=("linear",), rng=5, executor="process",
                       progress=False)
    by_count = validate(0.8, 0.5, 40, 2, models=("linear",), rng=5, executor=2,
                        progress=False)
    assert serial == by_name == by_count
    assert serial.d_qk == 20


def test_dask_local_cluster(small_report):
    """A real dask.distributed LocalCluster (one in-process worker) gives the same report."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        report = validate(1.0, 1.0, 60, 3, rng=123, executor=client.get_executor(),
                          progress=False)
        direct = validate(1.0, 1.0, 60, 3, models=("linear",), rng=123, executor=client,
                          progress=False)
    assert _without_time(report) == _without_time(small_report)
    assert direct.results["linear"] == small_report.results["linear"]


class _FailingExecutor(concurrent.futures.Executor):
    """Runs calls in-process; the call with index ``fail_index`` fails in its future,
    or (``in_submit=True``) its submit() itself raises."""

    def __init__(self, fail_index, in_submit=False):
        self.fail_index = fail_index
        self.in_submit = in_submit
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):
        index, self.calls = self.calls, self.calls + 1
        if index == self.fail_index and self.in_submit:
            raise RuntimeError("cluster lost")
        future = concurrent.futures.Future()
        if index == self.fail_index:
            future.set_exception(MemoryError("worker lost"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


def test_failing_draw_is_reported_with_its_seed_and_keeps_the_rest():
    with pytest.raises(DrawError) as info:
        validate(1.0, 1.0, 30, 4, models=("linear",), rng=77,
                 executor=_FailingExecutor(2), progress=False)
    err = info.value
    child = np.random.SeedSequence(77).spawn(4)[2]
    assert err.index == 2
    assert err.seed == {"entropy": 77, "spawn_key": list(child.spawn_key)}
    assert "draw 2" in str(err) and "77" in str(err) and "MemoryError" in str(err)
    assert sorted(err.completed) == [0, 1, 3] and err.not_run == ()
    assert isinstance(err.__cause__, MemoryError)
    # a finished draw is exactly the one its seed replays
    replay = run_draw(30, 30, 1.0, ("linear",), np.random.SeedSequence(77).spawn(4)[3])
    assert np.array_equal(err.completed[3]["linear"], replay["linear"])


def test_executor_whose_submit_raises_gives_a_draw_error_with_the_finished_draws():
    """An executor's submit() that raises (a lost cluster) is a DrawError naming the
    draw, not an unwrapped exception; the draws submitted before it are kept."""
    executor = _FailingExecutor(2, in_submit=True)
    with pytest.raises(DrawError) as info:
        validate(1.0, 1.0, 30, 5, models=("linear",), rng=78, executor=executor,
                 progress=False)
    err = info.value
    assert err.index == 2 and "RuntimeError: cluster lost" in str(err)
    assert sorted(err.completed) == [0, 1] and err.not_run == (3, 4)
    assert "2 not submitted" in str(err)
    assert isinstance(err.__cause__, RuntimeError)
    assert executor.calls == 3                      # nothing submitted after the failure
    replay = run_draw(30, 30, 1.0, ("linear",), np.random.SeedSequence(78).spawn(5)[1])
    assert np.array_equal(err.completed[1]["linear"], replay["linear"])


class _InterruptingSampler:
    """A sampler that raises KeyboardInterrupt (as Ctrl-C would) on its k-th call."""

    def __init__(self, k):
        self.k, self.calls = k, 0

    def __call__(self, draw):
        self.calls += 1
        if self.calls == self.k:
            raise KeyboardInterrupt
        return draw.take("linear_noise") / np.sqrt(draw.n)


@pytest.mark.parametrize("executor", [None, "threads"])
def test_an_interrupt_keeps_the_finished_draws(executor):
    """A KeyboardInterrupt in the 3rd of 5 draws is a ValidationInterrupted (still a
    KeyboardInterrupt) carrying draws 0 and 1, each exactly the draw its seed replays
    (it used to lose every finished draw); serial and on a thread pool, where the
    interrupt surfaces through the future."""
    from freeattn import ValidationInterrupted

    sampler = _InterruptingSampler(3)
    model = freeattn.Model("interrupting_test", sampler, uses=("linear_noise",),
                           law=lambda beta, gamma: freeattn.marchenko_pastur(1.0, 1.0))
    freeattn.register_model(model)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1) if executor else None
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            validate(1.0, 1.0, 30, 5, models=("interrupting_test",), rng=79,
                     executor=pool, progress=False)
        calls = sampler.calls
        sampler.k = -1                                # never again: replay the draws
        seeds = np.random.SeedSequence(79).spawn(5)
        replays = [run_draw(30, 30, 1.0, ("interrupting_test",), seeds[i]) for i in (0, 1)]
    finally:
        freeattn.unregister_model("interrupting_test")
        if pool is not None:
            pool.shutdown()
    err = info.value
    assert isinstance(err, ValidationInterrupted)
    assert sorted(err.completed) == [0, 1]
    assert err.failures == []
    if executor is None:
        assert err.index == 2 and err.not_run == (2, 3, 4)
        assert err.seed == {"entropy": 79, "spawn_key": list(seeds[2].spawn_key)}
        assert calls == 3                             # nothing ran after the interrupt
    else:
        assert err.index is None and 2 in err.not_run and set(err.not_run) <= {2, 3, 4}
    assert "2 draw(s) finished" in str(err)
    for i in (0, 1):
        assert np.array_equal(err.completed[i]["interrupting_test"],
                              replays[i]["interrupting_test"])


def test_progress_bar(capsys):
    validate(1.0, 1.0, 20, 2, models=("linear",), rng=1, progress=True)
    assert "draw" in capsys.readouterr().err
    validate(1.0, 1.0, 20, 2, models=("linear",), rng=1, progress=False)
    assert capsys.readouterr().err == ""
    validate(1.0, 1.0, 20, 2, models=("linear",), rng=1)   # stderr is not a tty here
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((1.0, 1.0, 1, 2), {}, ValueError, "n must be"),
    ((1.0, 1.0, 50.0, 2), {}, TypeError, "n must be"),
    ((1.0, 1.0, 50, 0), {}, ValueError, "draws must be"),
    ((1.0, 1.0, 50, 2.5), {}, TypeError, "draws must be"),
    ((0.0, 1.0, 50, 2), {}, ValueError, "beta"),
    ((-1.0, 1.0, 50, 2), {}, ValueError, "beta"),
    ((1.0, 0.0, 50, 2), {}, ValueError, "gamma"),
    ((1.0, 0.001, 50, 2), {}, ValueError, "d_qk"),
    ((1.0, 1e308, 10, 2), {}, ValueError, r"gamma must be in \["),   # used to overflow
    ((1.0, float("inf"), 10, 2), {}, ValueError, "gamma"),
    ((1.0, 1.0, 2, 2), {"models": ("attention",)}, ValueError, "n must be >= 3"),
    ((1.0, 1.0, 50, 2), {"models": ("bogus",)}, ValueError, "unknown model"),
    ((1.0, 1.0, 50, 2), {"models": ()}, ValueError, "at least one"),
    ((1.0, 1.0, 50, 2), {"options": {"heads": 2}}, ValueError, "options"),
    ((1.0, 1.0, 50, 2), {"options": [1]}, TypeError, "options"),
    ((1.0, 1.0, 50, 2), {"executor": "threads"}, ValueError, "executor"),
    ((1.0, 1.0, 50, 2), {"executor": 0}, ValueError, "executor"),
    ((1.0, 1.0, 50, 2), {"executor": object()}, TypeError, "executor"),
    ((1.0, 1.0, 50, 2), {"rng": "seed"}, TypeError, "rng"),
    ((1.0, 1.0, 50, 2), {"rng": -1}, ValueError, "rng"),
    ((1.0, 1.0, 50, 2), {"rng": 1.5}, TypeError, "rng"),
    ((1.0, 1.0, 50, 2), {"rng": True}, TypeError, "rng"),
    ((1.0, 1.0, 50, 2), {"progress": "yes"}, TypeError, "progress"),
])
def test_validate_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        validate(*args, **kwargs)


def test_convergence_bad_input():
    with pytest.raises(ValueError, match="two distinct"):
        convergence(1.0, ns=(50, 50), draws=1)
    with pytest.raises(ValueError, match="n must be"):
        convergence(1.0, ns=(1, 50), draws=1)
    with pytest.raises(TypeError, match="ns"):
        convergence(1.0, ns=50, draws=1)
    with pytest.raises(TypeError, match="ns"):
        convergence(1.0, ns="50", draws=1)


# ---------------------------------------------------------------- statistical


@pytest.mark.statistical
def test_attention_follows_the_theory_not_marchenko_pastur():
    """The honest test (theory/07_validation.md, eqs. (7.9)-(7.12)).

    n = d_qk = 300, beta = 1, 4 draws, fixed seed.  The attention spectrum's KS
    distance to the same-variance MP law exceeds its KS distance to the theory by
    more than 3 bootstrap noise widths (95% quantiles; measured 4.6-6.8 widths over
    seeds 0-4), and the MP distances are more than twice the theory's in KS and
    W1 -- with the laws swapped every inequality reverses.
    Measured at this seed (n = 300): KS 0.03 (noise 0.007) vs KS to MP 0.08.
    """
    r = validate(1.0, 1.0, 300, 4, models=("attention", "linear"), rng=20261129,
                 progress=False).results
    att = r["attention"]
    assert att.ks_mp - att.ks > 3 * att.ks_noise
    assert att.ks_mp > 2 * att.ks and att.w1_mp > 2 * att.w1
    assert att.beats_mp
    # the Gaussian linear model (the theorem's own model) is within its sampling noise
    # plus the O(1/n) finite-size bias of a sample-covariance law: KS <= 2 * noise
    lin = r["linear"]
    assert lin.ks <= 2 * lin.ks_noise
    assert lin.ks_mp > 5 * lin.ks


@pytest.mark.statistical
def test_attention_distance_shrinks_with_n():
    """eq. (7.13): the attention model's distance to the theory decays (measured
    slope about -0.6 at beta = 1, theory/07_validation.md), beyond sampling noise,
    while its distance to MP stays above the law-to-law gap minus the KS to theory."""
    rep = convergence(1.0, 1.0, ns=(100, 400), draws=4, models=("attention",), rng=11,
                      progress=False)
    small, large = (r.results["attention"] for r in rep.reports)
    assert large.ks < 0.7 * small.ks
    # each noise is a 95% quantile, so their sum bounds the noise of the difference
    assert small.ks - large.ks > small.ks_noise + large.ks_noise
    assert rep.fits["attention"]["ks"].slope < -0.3
    assert large.ks_mp > 2 * large.ks


def test_law_is_taken_at_the_sampled_width_ratio():
    """gamma = 0.03, n = 50 samples d_qk = round(1.5) = 2 keys, so the samples have
    ratio 2/50 = 0.04; the report (and the law it compares with) must use 0.04:
    its predicted edge equals operator_norm(1, 0.04), not operator_norm(1, 0.03)."""
    report = validate(1.0, gamma=0.03, n=50, draws=1, models=("linear",), rng=1,
                      progress=False)
    assert report.d_qk == 2
    assert report.gamma == 0.04
    assert report.edge == pytest.approx(freeattn.operator_norm(1.0, 0.04).squared_edge,
                                        rel=1e-15)
    assert report.results["linear"].edge == report.edge


def test_validate_checks_the_range_of_the_law():
    """beta in [MIN_LAW_BETA, MAX_LAW_BETA] and the sampled ratio d_qk/n in
    GAMMA_RANGE, the range where the law is computed (read from the laws, so these
    checks follow it): both ends are accepted, just outside is rejected -- before
    anything is sampled (the sizes below would take hours)."""
    from freeattn.montecarlo._models import GAMMA_RANGE, MAX_LAW_BETA, MIN_LAW_BETA
    from freeattn.montecarlo._validation import _check_validate_args

    lo, hi = GAMMA_RANGE
    n_lo = int(round(4 / lo))                   # d_qk = 4 keys: ratio exactly lo
    assert _check_validate_args(1.0, lo, n_lo, 1, ("linear",), False)[1] == pytest.approx(lo)
    assert _check_validate_args(1.0, hi, 4, 1, ("linear",), False)[1] == hi
    assert _check_validate_args(MAX_LAW_BETA, 1.0, 4, 1, ("linear",), False)[0] == MAX_LAW_BETA
    assert _check_validate_args(MIN_LAW_BETA, 1.0, 4, 1, ("linear",), False)[0] == MIN_LAW_BETA
    for kwargs, match in [(dict(beta=MAX_LAW_BETA * 1.01), "beta"),
                          (dict(beta=MIN_LAW_BETA / 2), "beta"),
                          (dict(gamma=lo / 2, n=int(round(2 / lo))), "gamma"),   # d_qk = 1
                          (dict(gamma=hi * 1.2), "gamma")]:
        args = dict(beta=1.0, gamma=1.0, n=40, draws=1, models=("linear",), rng=0,
                    progress=False)
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            validate(**args)
