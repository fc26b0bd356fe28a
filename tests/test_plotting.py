"""freeattn.plotting (issue 5): each figure at tiny sizes, drawn under Agg.

The curves a figure draws are compared with the library functions they come
from (equal to round-off: the figure must show the theory, not an
approximation of it); labels, legends and the number of panels are checked
so that a figure cannot silently lose its axes labels or a panel.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import freeattn
from freeattn import plotting

# A second evaluation of the law may differ from the first in the last bits (the
# solver's Newton polish): plotted data must equal the library to round-off.
ROUNDOFF_RTOL = 1e-13


def _labelled(ax):
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def _line(ax, label):
    matches = [line for line in ax.get_lines() if line.get_label() == label]
    assert matches, f"no line labelled {label!r}: {[l.get_label() for l in ax.get_lines()]}"
    return matches[0]


def test_importing_freeattn_does_not_import_matplotlib():
    code = ("import sys, freeattn, freeattn.plotting, freeattn.cli._cli; "
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "False"


def test_law_vs_mp_draws_the_theory_and_both_edges():
    betas = (0.5, 1.5)
    fig = plotting.figure_law_vs_mp(betas, points=60)
    assert len(fig.axes) == 2
    for ax, beta in zip(fig.axes, betas):
        assert _labelled(ax)
        law = freeattn.attention_law(beta).squared()
        theory = _line(ax, "predicted law")
        x, y = theory.get_data()
        np.testing.assert_allclose(y, law.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        mp = freeattn.marchenko_pastur(freeattn.linear_coefficients(beta).theta1)
        x, y = _line(ax, r"Marchenko-Pastur, variance $\theta_1$").get_data()
        np.testing.assert_allclose(y, mp.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        # The vertical edge markers sit at the operator norm's squared edges.
        norm = freeattn.operator_norm(beta)
        verticals = {float(line.get_xdata()[0]) for line in ax.get_lines()
                     if len(set(line.get_xdata())) == 1}
        assert norm.squared_edge in verticals and norm.mp_squared_edge in verticals
        assert norm.squared_edge > norm.mp_squared_edge     # theory eq. (6.12)
        assert ax.get_legend() is not None


def test_edge_figure_matches_operator_norm_and_threshold():
    betas = np.linspace(0.5, 3.0, 6)
    ns = (10**3, 10**5)
    fig = plotting.figure_edge(betas, ns=ns)
    (ax,) = fig.axes
    assert _labelled(ax) and ax.get_yscale() == "log"
    x, y = ax.get_lines()[0].get_data()
    np.testing.assert_array_equal(x, betas)
    np.testing.assert_allclose(y, [freeattn.operator_norm(b).norm for b in betas], rtol=ROUNDOFF_RTOL, atol=0)
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(dots) == len(ns)
    for dot, n in zip(dots, ns):
        threshold = freeattn.linearization_threshold(n)
        assert dot.get_xdata()[0] == threshold.beta
        # The threshold is where the bulk edge reaches the common mode sqrt(n).
        assert threshold.norm == pytest.approx(np.sqrt(n), rel=1e-9)


def test_gamma_figure_has_density_and_cdf_per_gamma():
    gammas = (0.5, 2.0)
    fig = plotting.figure_gamma(1.0, gammas, points=50)
    ax_pdf, ax_cdf = fig.axes
    assert _labelled(ax_pdf) and _labelled(ax_cdf)
    for i, gamma in enumerate(gammas):
        law = freeattn.attention_law(1.0, gamma).squared()
        x, y = ax_cdf.get_lines()[i].get_data()
        np.testing.assert_allclose(y, law.cdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        x, y = ax_pdf.get_lines()[i].get_data()
        np.testing.assert_allclose(y, law.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)


def test_chain_figure_histograms_and_quantile_panel():
    n, draws = 30, 2
    samples = plotting.chain_samples(1.0, n, draws=draws, rng=0)
    assert tuple(samples) == freeattn.CHAIN_MODELS
    assert all(v.shape == (n * draws,) for v in samples.values())
    fig = plotting.figure_chain(1.0, n, draws=draws, samples=samples)
    histograms, quantiles = fig.axes[:-1], fig.axes[-1]
    assert len(histograms) == len(freeattn.CHAIN_MODELS)
    law = freeattn.attention_law(1.0).squared()
    for ax, model in zip(histograms, freeattn.CHAIN_MODELS):
        assert _labelled(ax) and model in ax.get_title()
        assert len(ax.patches) == plotting.HISTOGRAM_BINS
        x, y = _line(ax, "predicted law").get_data()
        np.testing.assert_allclose(y, law.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        # The theory curve is drawn above the histogram.
        assert _line(ax, "predicted law").get_zorder() > ax.patches[0].get_zorder()
    assert _labelled(quantiles)
    x, y = _line(quantiles, freeattn.CHAIN_MODELS[0]).get_data()
    np.testing.assert_allclose(x, law.ppf(plotting.QUANTILE_LEVELS), rtol=ROUNDOFF_RTOL, atol=0)
    np.testing.assert_array_equal(
        y, np.quantile(samples[freeattn.CHAIN_MODELS[0]], plotting.QUANTILE_LEVELS))


def test_chain_samples_are_reproducible_from_the_seed():
    a = plotting.chain_samples(1.0, 12, draws=2, models=("attention", "linear"), rng=5)
    b = plotting.chain_samples(1.0, 12, draws=2, models=("attention", "linear"), rng=5)
    np.testing.assert_array_equal(a["attention"], b["attention"])
    np.testing.assert_array_equal(a["linear"], b["linear"])
    # ... and they are validate's draws: draw i from the i-th child of the seed.
    from freeattn.montecarlo._draws import run_draw

    children = np.random.SeedSequence(5).spawn(2)
    np.testing.assert_array_equal(a["linear"], np.concatenate(
        [run_draw(12, 12, 1.0, ("linear",), child)["linear"] for child in children]))


def test_chain_samples_check_their_arguments_like_validate():
    with pytest.raises(ValueError, match="n"):
        plotting.chain_samples(1.0, 1, draws=1)
    with pytest.raises(ValueError, match="model"):
        plotting.chain_samples(1.0, 10, draws=1, models=("softmax",))


@pytest.mark.slow
def test_convergence_figure_one_curve_per_beta_and_model():
    fig = plotting.figure_convergence(betas=(0.5, 1.0), ns=(20, 40), draws=1,
                                      models=("attention",), rng=0)
    (ax,) = fig.axes
    assert _labelled(ax)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert len(labels) == 4          # 2 betas x (theory, Marchenko-Pastur)
    for line in ax.get_lines():
        np.testing.assert_array_equal(line.get_xdata(), [20, 40])
        assert np.all((line.get_ydata() > 0) & (line.get_ydata() <= 1))


def test_figures_are_found_by_number_and_name():
    assert plotting._spec("2") is plotting._spec("law-vs-mp") is plotting._spec(2)
    with pytest.raises(ValueError, match="figure must be one of"):
        plotting._spec(str(len(plotting.FIGURES) + 1))


def test_save_and_reproduce_write_pngs(tmp_path):
    paths = plotting.reproduce(tmp_path, only=["5", "law-vs-mp"])
    assert [p.name for p in paths] == ["fig5_gamma.png", "fig2_law_vs_mp.png"]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_chain_samples_do_not_depend_on_the_executor():
    from concurrent.futures import ThreadPoolExecutor

    serial = plotting.chain_samples(1.0, 10, draws=3, models=("attention",), rng=9)
    with ThreadPoolExecutor(2) as pool:
        parallel = plotting.chain_samples(1.0, 10, draws=3, models=("attention",), rng=9,
                                          executor=pool)
    np.testing.assert_array_equal(serial["attention"], parallel["attention"])


def test_chain_figure_grid_adapts_to_the_number_of_models():
    """Rows of three histograms, as many rows as the models need; the quantile panel
    spans every row.  Two models: one row; seven (the chain and one more): three rows."""
    from freeattn.montecarlo._models import Model, same_variance_mp, single_head_law

    small = plotting.chain_samples(1.0, 20, draws=1, models=("attention", "linear"), rng=0)
    fig = plotting.figure_chain(1.0, 20, draws=1, samples=small)
    assert len(fig.axes) == 3
    assert fig.axes[-1].get_subplotspec().rowspan == range(0, 1)

    extra = Model("linear_copy_test", freeattn.MODELS["linear"].sample,
                  uses=("linear_noise", "scores"), law=single_head_law,
                  reference=same_variance_mp)
    freeattn.register_model(extra)
    try:
        samples = plotting.chain_samples(1.0, 20, draws=1,
                                         models=freeattn.CHAIN_MODELS + ("linear_copy_test",),
                                         rng=0)
        fig = plotting.figure_chain(1.0, 20, draws=1, samples=samples)
    finally:
        freeattn.unregister_model("linear_copy_test")
    histograms, quantiles = fig.axes[:-1], fig.axes[-1]
    assert len(histograms) == 7
    assert [ax.get_subplotspec().rowspan.start for ax in histograms] == [0, 0, 0, 1, 1, 1, 2]
    assert quantiles.get_subplotspec().rowspan == range(0, 3)
    assert histograms[-1].get_title() == "7. linear_copy_test"
    # the extra model samples what "linear" samples, from the same draw
    np.testing.assert_array_equal(samples["linear_copy_test"], samples["linear"])


def test_chain_figure_draws_each_models_own_law():
    """A model with another law gets that law's density in its panel."""
    from freeattn.montecarlo._models import Model

    def iid(draw):
        return draw.take("linear_noise") / np.sqrt(draw.n)

    def mp_one(beta, gamma):
        return freeattn.marchenko_pastur(1.0, 1.0)

    model = Model("iid_plot_test", iid, uses=("linear_noise",), law=mp_one)
    freeattn.register_model(model)
    try:
        fig = plotting.figure_chain(1.0, 20, draws=1, models=("linear", "iid_plot_test"),
                                    rng=0)
    finally:
        freeattn.unregister_model("iid_plot_test")
    x, y = _line(fig.axes[1], "predicted law").get_data()
    np.testing.assert_allclose(y, freeattn.marchenko_pastur(1.0, 1.0).pdf(x),
                               rtol=ROUNDOFF_RTOL, atol=0)
    x, y = _line(fig.axes[0], "predicted law").get_data()
    np.testing.assert_allclose(y, freeattn.attention_law(1.0).squared().pdf(x),
                               rtol=ROUNDOFF_RTOL, atol=0)


def test_output_path_rules(tmp_path):
    """The file save_figure writes, decided (and checked) before drawing: missing
    folders are an error (not created), a suffix-less path gets .png, an existing
    folder gets the figure's file name, a suffix matplotlib cannot write is an error."""
    with pytest.raises(ValueError, match="does not exist"):
        plotting.output_path(3, tmp_path / "missing" / "x.png")
    assert not (tmp_path / "missing").exists()
    assert plotting.output_path(3, tmp_path / "x") == tmp_path / "x.png"
    assert plotting.output_path("gamma", tmp_path) == tmp_path / "fig5_gamma.png"
    assert plotting.output_path(2, tmp_path / "x.pdf") == tmp_path / "x.pdf"
    with pytest.raises(ValueError, match="suffix '.docx'"):
        plotting.output_path(2, tmp_path / "x.docx")
    path = plotting.save_figure(3, tmp_path / "edge")
    assert path == tmp_path / "edge.png" and path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(not pathlib.Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_unwritable_output_fails_before_anything_is_drawn(monkeypatch):
    """/proc passes os.access for root but refuses new files: save_figure(3, '/proc/a.png')
    used to draw for 17 s and then fail in PIL.  The path is now tried first; the
    ValueError names it, and the figure was never made (make_figure not called)."""
    calls = []
    monkeypatch.setattr(plotting, "make_figure", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match="out: cannot write /proc/freeattn_probe.png"):
        plotting.save_figure(3, "/proc/freeattn_probe.png")
    assert calls == []


def test_the_output_probe_leaves_files_as_they_were(tmp_path, monkeypatch):
    """The probe creates and removes a new file, leaves an existing one unchanged,
    and refuses a path that is not a regular file -- all before drawing."""
    calls = []
    monkeypatch.setattr(plotting, "make_figure", lambda *a, **k: calls.append(a))
    assert plotting.output_path(3, tmp_path / "new.png") == tmp_path / "new.png"
    assert list(tmp_path.iterdir()) == []
    old = tmp_path / "old.png"
    old.write_bytes(b"kept")
    assert plotting.output_path(3, old) == old and old.read_bytes() == b"kept"
    fifo = tmp_path / "pipe.png"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match="not a regular file"):
            plotting.save_figure(3, fifo)
    assert calls == []


def test_reproduce_only_and_sizes_are_checked_before_drawing(tmp_path):
    """only=[] is an error (None draws all five); a string is one figure name (not its
    characters); jobs must be an integer >= 1 -- all before any file is written."""
    with pytest.raises(ValueError, match="at least one figure"):
        plotting.reproduce(tmp_path, only=[])
    with pytest.raises(ValueError, match="got 'g'"):
        plotting.reproduce(tmp_path, only="g")
    with pytest.raises(ValueError, match="jobs must be an integer >= 1"):
        plotting.reproduce(tmp_path, only=["edge", "chain"], jobs=0)
    with pytest.raises(TypeError, match="jobs"):
        plotting.make_figure("chain", jobs=True)
    with pytest.raises(TypeError, match="unexpected size"):
        plotting.reproduce(tmp_path, only=3, job=2)
    assert list(tmp_path.iterdir()) == []
    assert [p.name for p in plotting.reproduce(tmp_path, only="law-vs-mp")] == \
        ["fig2_law_vs_mp.png"]
    assert [p.name for p in plotting.reproduce(tmp_path, only=3)] == ["fig3_edge.png"]


def test_causal_figure_histograms_laws_and_log_end():
    """Figure 6 at n = 40, one draw: two histograms (C, eq. (10.1), and Y_c,
    eq. (10.3)) of the samples given, the causal law's density and CDF, the
    non-causal law and MP with mean theta1/2 drawn from the library to round-off,
    the CDF panel on a log axis with the resolution floor of eq. (7.15)."""
    from freeattn.montecarlo._statistics import resolution_floor

    n = 40
    samples = plotting.chain_samples(1.0, n, draws=1, models=("causal", "causal_linear"), rng=3)
    fig = plotting.figure_causal(1.0, n, draws=1, samples=samples, points=60)
    ax, ax_cdf = fig.axes
    assert _labelled(ax) and _labelled(ax_cdf) and ax_cdf.get_xscale() == "log"
    assert len(ax.patches) == 2                              # two step histograms
    law = freeattn.causal_law(1.0, 1.0)
    lines = {line.get_label(): line for line in ax.get_lines()}
    x, y = lines["causal law"].get_data()
    np.testing.assert_allclose(y, law.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
    x, y = lines["non-causal law"].get_data()
    np.testing.assert_allclose(y, freeattn.attention_law(1.0, 1.0).squared().pdf(x),
                               rtol=ROUNDOFF_RTOL, atol=0)
    mp = [line for label, line in lines.items() if label.startswith("Marchenko")][0]
    x, y = mp.get_data()
    np.testing.assert_allclose(y, freeattn.marchenko_pastur(law.mean(), 1.0).pdf(x),
                               rtol=ROUNDOFF_RTOL, atol=0)
    cdf_lines = {line.get_label(): line for line in ax_cdf.get_lines()}
    x, y = cdf_lines["causal law"].get_data()
    np.testing.assert_allclose(y, law.cdf(x), rtol=ROUNDOFF_RTOL, atol=0)
    floor = resolution_floor(n, max(samples["causal"].max(), samples["causal_linear"].max()))
    assert cdf_lines["float64 floor, eq. (7.15)"].get_xdata()[0] == pytest.approx(floor)
    assert plotting._spec("causal") is plotting._spec(6)


def test_multihead_figure_draws_the_law_mp_and_head_averages():
    """Figure 7 at a tiny size: three multi-head panels with the law of eq. (9.9) and the
    mean- and rank-matched Marchenko-Pastur law, and a head-average panel with the two
    laws of eq. (9.19); the curves equal the library's."""
    from freeattn.attention._multihead import mean_and_rank_matched_mp

    fig = plotting.figure_multihead(n=64, draws=1, rng=0, points=50)
    assert len(fig.axes) == 4
    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)
    mp = mean_and_rank_matched_mp(1.0, 0.5, 1.0)
    for ax in fig.axes[:3]:
        assert _labelled(ax) and ax.get_legend() is not None
        (theory,) = [l for l in ax.get_lines() if l.get_label().startswith("predicted law")]
        x, y = theory.get_data()
        np.testing.assert_allclose(y, law.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        (ref,) = [l for l in ax.get_lines() if l.get_label().startswith("Marchenko-Pastur")]
        x, y = ref.get_data()
        np.testing.assert_allclose(y, mp.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
        # the histogram of the non-zero half integrates to the non-zero fraction 1/2
        # (rank h d_v = n/2; a few values may lie beyond the plotted 1.08 * edge)
        (bars,) = ax.patches
        values, edges, _ = bars.get_data()
        area = float(np.sum(values * np.diff(edges)))
        assert 0.45 <= area <= 0.5 + 1e-12, area
    ax = fig.axes[3]
    assert _labelled(ax)
    for g in (4, 1):
        avg = freeattn.head_average_law(1.0, heads=4, gamma_k=0.5, kv_groups=g)
        (line,) = [l for l in ax.get_lines() if f"= {avg.gamma:g}" in l.get_label()]
        x, y = line.get_data()
        np.testing.assert_allclose(y, avg.pdf(x), rtol=ROUNDOFF_RTOL, atol=0)
    assert "multihead" in [spec.name for spec in plotting.FIGURES.values()]
