"""The ``freeattn`` command line (issue 5): every subcommand through ``main([...])``.

The numbers a command prints are compared with the library functions it wraps
(same inputs, so the expected values come from the public API; tolerance: the
printed precision -- 8 significant digits in tables, full float64 in csv/json).
"""

import csv
import io
import json
import subprocess
import sys

import numpy as np
import pytest

import freeattn
from freeattn.cli._cli import DEFAULT_LAW_POINTS, main

# Relative tolerance of the 8-significant-digit tables.
TABLE_RTOL = 1e-7
# csv/json print full float64; a second evaluation of the law may differ from the
# first in the last bits (the solver's Newton polish), so compare to round-off.
ROUNDOFF_RTOL = 1e-13


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def table_value(text, key):
    """The number after ``key`` at the start of a line of a name/value table."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == key:
            return float(parts[1])
    raise AssertionError(f"{key!r} not in output:\n{text}")


# ---------------------------------------------------------------------------
# coeffs


def test_coeffs_table_matches_library(capsys):
    code, out, err = run(capsys, "coeffs", "--beta", "1.5")
    assert code == 0 and err == ""
    expected = freeattn.linear_coefficients(1.5)
    for name in ("theta1", "theta2", "alpha2", "alpha"):
        assert table_value(out, name) == pytest.approx(getattr(expected, name),
                                                       rel=TABLE_RTOL)
    # Closed form at beta = 1.5: theta1 = exp(2.25) - 1, theory eq. (2.4).
    assert table_value(out, "theta1") == pytest.approx(np.expm1(2.25), rel=TABLE_RTOL)


def test_coeffs_json_and_csv_parse_to_full_precision(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "0.5", "--format", "json")
    assert code == 0
    data = json.loads(out)
    expected = freeattn.linear_coefficients(0.5)
    assert data["theta1"] == expected.theta1 and data["alpha"] == expected.alpha
    code, out, _ = run(capsys, "coeffs", "--beta", "0.5", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1
    assert float(rows[0]["alpha2"]) == expected.alpha2


def test_coeffs_order_table_matches_hermite_table(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "1", "--order", "4", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    table = freeattn.hermite_table(1.0, 4)
    assert [int(r["order"]) for r in rows] == list(range(5))
    assert [float(r["variance"]) for r in rows] == table.variances.tolist()
    # Closed form: order 2 carries beta**4/2 of alpha2 = e - 2 at beta = 1
    # (theory eqs. (2.6) and (2.7)), so its share is 0.5/(e - 2).
    assert float(rows[2]["noise_fraction"]) == pytest.approx(0.5 / (np.e - 2), rel=1e-15)


def test_coeffs_exact_reads_decimals_as_rationals(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "0.1", "--exact", "--format", "json")
    assert code == 0
    data = json.loads(out)
    # Exact closed forms at beta = 1/10, theory eqs. (2.5) and (2.6).
    assert data["beta"] == "1/10"
    assert data["theta2"] == "1/100"
    assert data["alpha2"] == "-101/100 + exp(1/100)"


def test_coeffs_exact_order_lists_rational_coefficients(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "1/2", "--exact", "--order", "3")
    assert code == 0
    # c_k = beta**k/k! and v_k = beta**(2k)/k! at beta = 1/2, theory eqs. (2.3) and (2.7).
    last = out.strip().splitlines()[-1].split()
    assert last == ["3", "1/48", "1/384"]


@pytest.mark.parametrize("argv, fragment", [
    (["coeffs", "--beta", "-1"], "beta"),           # library ValueError, names the argument
    (["coeffs", "--beta", "nan"], "beta"),
    (["coeffs", "--beta", "30"], "beta"),           # exp(900) overflows float64
    (["coeffs", "--beta", "abc"], "--beta"),        # argparse type error
    (["coeffs", "--beta", "1e400"], "beta"),         # parses to inf, rejected by name
    (["coeffs", "--beta", "1", "--order", "-1"], "--order"),
    (["coeffs"], "--beta"),                          # missing required option
    (["coeffs", "--beta", "1", "--format", "xml"], "--format"),
    (["nosuchcommand"], "invalid choice"),
])
def test_bad_usage_exits_2_without_traceback(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert fragment in err
    assert "Traceback" not in err and out == ""


def test_help_exits_0_and_shows_defaults(capsys):
    code, out, _ = run(capsys, "law", "--help")
    assert code == 0
    assert "(default: 1.0)" in out          # --gamma
    assert f"(default: {DEFAULT_LAW_POINTS})" in out
    assert "(required)" in out              # --beta


def test_numerical_failure_exits_1_with_message(capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise freeattn.ConvergenceError("edge solve stalled: residual 1e-3 > tol 1e-12",
                                        residual=1e-3, tolerance=1e-12)

    monkeypatch.setattr(freeattn, "linear_coefficients", fail)
    code, out, err = run(capsys, "coeffs", "--beta", "1")
    assert code == 1
    assert "numerical failure" in err and "residual 1e-3" in err
    assert "Traceback" not in err and out == ""


def test_python_dash_m_help_runs():
    result = subprocess.run([sys.executable, "-m", "freeattn", "--help"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0
    for command in ("coeffs", "law", "edge", "threshold", "validate", "plot", "reproduce"):
        assert command in result.stdout


# ---------------------------------------------------------------------------
# law, edge, threshold


def test_law_default_summary_matches_library(capsys):
    """`freeattn law --beta 1` (the README's main job): edges, moments, a table."""
    code, out, err = run(capsys, "law", "--beta", "1")
    assert code == 0 and err == ""
    law = freeattn.attention_law(1.0)
    norm = freeattn.operator_norm(1.0)
    assert f"operator norm          {norm.norm:.8g}" in out
    assert f"squared edge           {norm.squared_edge:.8g}" in out
    # Known moments of the squared law, theory eqs. (5.11) and (5.12): m1 = e - 1 and
    # m2 = 2*theta1**2 + beta**4/gamma, printed to 8 significant digits.
    theta1 = np.e - 1
    assert f"{theta1:.8g}, {2 * theta1**2 + 1:.8g}" in out
    table = out.strip().splitlines()[-DEFAULT_LAW_POINTS:]
    values = np.array([[float(v) for v in line.split()] for line in table])
    grid = np.linspace(*law.support(), DEFAULT_LAW_POINTS)
    np.testing.assert_allclose(values[:, 0], grid, rtol=TABLE_RTOL)
    np.testing.assert_allclose(values[:, 1], law.pdf(grid), rtol=TABLE_RTOL, atol=1e-300)
    np.testing.assert_allclose(values[:, 2], law.cdf(grid), rtol=TABLE_RTOL, atol=1e-300)
    assert values[0, 2] == 0 and values[-1, 2] == 1


def test_law_csv_at_points_with_mp_is_exact(capsys):
    code, out, _ = run(capsys, "law", "--beta", "0.8", "--gamma", "2", "--squared",
                       "--at", "0.25,1,2", "--compare-mp", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    x = np.array([float(r["x"]) for r in rows])
    np.testing.assert_array_equal(x, [0.25, 1.0, 2.0])
    law = freeattn.attention_law(0.8, 2.0).squared()
    mp = freeattn.marchenko_pastur(freeattn.linear_coefficients(0.8).theta1, 1.0)
    # csv carries full float64 precision: equal to the library up to the
    # solver's round-off (ROUNDOFF_RTOL), not to 8 digits.
    for column, values in (("pdf", law.pdf(x)), ("cdf", law.cdf(x)),
                           ("mp_pdf", mp.pdf(x)), ("mp_cdf", mp.cdf(x))):
        np.testing.assert_allclose([float(r[column]) for r in rows], values,
                                   rtol=ROUNDOFF_RTOL, atol=0)


def test_law_json_singular_values_with_mp_change_of_variables(capsys):
    code, out, _ = run(capsys, "law", "--beta", "1", "--points", "5", "--compare-mp",
                       "--format", "json")
    assert code == 0
    data = json.loads(out)
    law = freeattn.attention_law(1.0)
    assert data["variable"] == "s" and data["atom"] == law.atom
    assert data["support"] == list(law.support())
    assert data["moments_squared"]["1"] == pytest.approx(np.e - 1, rel=1e-12)
    s = np.array(data["table"]["x"])
    np.testing.assert_allclose(data["table"]["pdf"], law.pdf(s), rtol=ROUNDOFF_RTOL, atol=0)
    # MP for s = sqrt(lambda): density 2 s p(s^2), CDF F(s^2) (change of
    # variables; checked away from s = 0, where 2 s p(s^2) has a finite limit).
    mp = freeattn.marchenko_pastur(np.e - 1, 1.0)
    np.testing.assert_allclose(data["table"]["mp_pdf"][1:], 2 * s[1:] * mp.pdf(s[1:] ** 2),
                               rtol=1e-12)
    np.testing.assert_allclose(data["table"]["mp_cdf"], mp.cdf(s * s), rtol=1e-12)


def test_edge_json_matches_operator_norm(capsys):
    code, out, _ = run(capsys, "edge", "--beta", "1.5", "--gamma", "0.5", "--format", "json")
    assert code == 0
    data = json.loads(out)
    norm = freeattn.operator_norm(1.5, 0.5)
    assert data["norm"] == norm.norm and data["squared_edge"] == norm.squared_edge
    # MP edge 4*theta1 and the true edge beyond it, theory eq. (6.12).
    assert data["mp_squared_edge"] == pytest.approx(4 * np.expm1(2.25), rel=1e-15)
    assert data["norm_over_mp_norm"] > 1


def test_threshold_table_and_csv(capsys):
    code, out, _ = run(capsys, "threshold", "--n", "1000,100000", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    for row, n in zip(rows, (1000, 100000)):
        t = freeattn.linearization_threshold(n)
        assert int(row["n"]) == n and float(row["beta"]) == t.beta
        # Definition: the bulk edge norm equals the common mode sqrt(n) there.
        assert float(row["norm"]) == pytest.approx(np.sqrt(n), rel=1e-9)
    code, out, _ = run(capsys, "threshold", "--n", "1000")
    assert code == 0 and f"{freeattn.linearization_threshold(1000).beta:.8g}" in out


@pytest.mark.parametrize("argv, fragment", [
    (["law", "--beta", "1", "--gamma", "0"], "gamma"),
    (["law", "--beta", "1", "--points", "3", "--at", "1,2"], "not allowed with"),
    (["law", "--beta", "1", "--at", "1,x"], "--at"),
    (["edge", "--beta", "0"], "beta"),
    (["threshold", "--n", "1"], "n"),
])
def test_law_edge_threshold_bad_usage(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and fragment in err
    assert "Traceback" not in err and out == ""


# ---------------------------------------------------------------------------
# validate, plot, reproduce


def test_validate_small_run_text_and_json_match_the_library(capsys, tmp_path):
    path = tmp_path / "report.json"
    argv = ["validate", "--beta", "1", "--n", "40", "--draws", "2", "--seed", "3",
            "--models", "attention,linear", "--json", str(path), "--no-progress"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and "Traceback" not in err
    expected = freeattn.validate(1.0, 1.0, 40, 2, models=("attention", "linear"), rng=3,
                                 progress=False)
    data = json.loads(path.read_text())
    # Same seed, same draws: the CLI's report is the library's report.
    for model in ("attention", "linear"):
        assert data["results"][model]["ks"] == expected.results[model].ks
        assert data["results"][model]["ks_mp"] == expected.results[model].ks_mp
    assert "attention" in out and "linear" in out and f"wrote {path}" in out
    assert expected.to_text().splitlines()[0] in out


def test_validate_json_to_stdout_parses(capsys):
    code, out, _ = run(capsys, "validate", "--beta", "0.5", "--n", "20", "--draws", "2",
                       "--seed", "0", "--models", "linear", "--json", "-")
    assert code == 0
    data = json.loads(out)
    assert data["n"] == 20 and data["draws"] == 2 and list(data["results"]) == ["linear"]


@pytest.mark.parametrize("argv, fragment", [
    (["validate", "--beta", "1", "--n", "1"], "n"),               # library: n >= 2
    (["validate", "--beta", "1", "--n", "20", "--models", "attn"], "attn"),
    (["validate", "--beta", "1", "--draws", "0"], "--draws"),
])
def test_validate_bad_usage(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and fragment in err and "Traceback" not in err


def test_plot_writes_the_figure_and_rejects_unknown_ones(capsys, tmp_path):
    path = tmp_path / "edge.png"
    code, out, err = run(capsys, "plot", "edge", "--out", str(path))
    assert code == 0 and out.strip() == f"wrote {path}"
    assert path.read_bytes()[:4] == b"\x89PNG"
    code, out, err = run(capsys, "plot", "99", "--out", str(tmp_path / "x.png"))
    assert code == 2 and "figure must be one of" in err and "Traceback" not in err


def test_reproduce_only_writes_into_the_folder(capsys, tmp_path):
    code, out, _ = run(capsys, "reproduce", "--out", str(tmp_path), "--only", "3,gamma")
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig3_edge.png", "fig5_gamma.png"]
    assert out.count("wrote") == 2


def test_failed_draw_exits_1_with_its_message(capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise freeattn.DrawError("draw 3 (seed {'entropy': 1, 'spawn_key': [3]}) failed: "
                                 "LinAlgError", index=3, seed={"entropy": 1},
                                 completed={}, failures=[])

    monkeypatch.setattr(freeattn, "validate", fail)
    code, out, err = run(capsys, "validate", "--beta", "1", "--n", "10", "--draws", "4")
    assert code == 1
    assert "numerical failure" in err and "draw 3" in err and "Traceback" not in err


def test_closed_pipe_is_not_an_error():
    """`freeattn law ... | head` must not print an error when head exits."""
    result = subprocess.run(
        f"{sys.executable} -m freeattn law --beta 1 --points 20000 | head -n 1",
        shell=True, capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.startswith("Limiting law")
    assert result.stderr == ""


def test_validate_checks_the_json_path_before_running(capsys, tmp_path, monkeypatch):
    """An unwritable --json path is a usage error (exit 2) raised before any draw runs,
    so a long run is never thrown away at the end."""
    calls = []
    monkeypatch.setattr(freeattn, "validate", lambda *a, **k: calls.append(a))
    code = main(["validate", "--beta", "1", "--n", "2000", "--draws", "50",
                 "--json", str(tmp_path / "missing" / "report.json")])
    assert code == 2
    assert calls == []                         # rejected before any draw was run
    err = capsys.readouterr().err
    assert "--json" in err and "does not exist" in err and "Traceback" not in err


def test_law_points_has_an_upper_bound(capsys):
    """--points is capped (MAX_LAW_POINTS): a huge table is a usage error, not an OOM kill."""
    from freeattn.cli._cli import MAX_LAW_POINTS

    assert main(["law", "--beta", "1", "--points", str(MAX_LAW_POINTS + 1)]) == 2
    assert "expected an integer in [1, " in capsys.readouterr().err


# ---------------------------------------------------------------------------
# audit regressions, formats, startup


def test_validate_gamma_out_of_range_is_a_usage_error(capsys):
    """gamma = 1e308 used to overflow round(gamma * n) into a traceback (exit 1); it is
    a usage error naming gamma and the law's range."""
    code, out, err = run(capsys, "validate", "--beta", "1", "--gamma", "1e308", "--n", "10")
    assert code == 2 and out == ""
    from freeattn.montecarlo._models import GAMMA_RANGE

    assert f"gamma must be in [{GAMMA_RANGE[0]}, {GAMMA_RANGE[1]}]" in err
    assert "Traceback" not in err


def test_coeffs_order_is_bounded(capsys):
    """--order is capped (MAX_ORDER, MAX_EXACT_ORDER) instead of running for hours."""
    from freeattn.cli._cli import MAX_EXACT_ORDER, MAX_ORDER

    code, _, err = run(capsys, "coeffs", "--beta", "1", "--order", "100000000")
    assert code == 2 and f"expected an integer in [0, {MAX_ORDER}]" in err
    code, _, err = run(capsys, "coeffs", "--beta", "1", "--exact", "--order", "100000")
    assert code == 2 and "--order" in err
    code, _, err = run(capsys, "coeffs", "--beta", "1", "--exact", "--order",
                       str(MAX_EXACT_ORDER + 1))
    assert code == 2 and f"--order must be in [0, {MAX_EXACT_ORDER}] with --exact" in err
    code, out, _ = run(capsys, "coeffs", "--beta", "1", "--order", str(MAX_ORDER),
                       "--format", "csv")
    assert code == 0 and len(out.strip().splitlines()) == MAX_ORDER + 2


def test_the_order_bound_loses_no_nonzero_term():
    """Why MAX_ORDER = 3000: at the largest beta of the float path (exp(beta^2) finite)
    the order variances beta^(2k)/k! (theory eq. (2.7)) underflow to 0 before k = 3000,
    so a longer table would only add zero rows."""
    from freeattn.core._checks import MAX_FLOAT_BETA
    from freeattn.cli._cli import MAX_ORDER

    table = freeattn.hermite_table(MAX_FLOAT_BETA, MAX_ORDER)
    nonzero = np.flatnonzero(table.variances)
    assert 2000 < nonzero[-1] < MAX_ORDER - 100
    assert np.all(table.coefficients[nonzero[-1]:] == 0)


def test_validate_json_into_a_folder_fails_before_running(capsys, tmp_path, monkeypatch):
    """--json naming a folder passed the pre-run check and failed after the run."""
    calls = []
    monkeypatch.setattr(freeattn, "validate", lambda *a, **k: calls.append(a))
    code = main(["validate", "--beta", "1", "--n", "2000", "--draws", "50",
                 "--json", str(tmp_path)])
    assert code == 2
    assert calls == []                         # rejected before any draw was run
    err = capsys.readouterr().err
    assert "--json" in err and "is a folder" in err and "Traceback" not in err


def test_json_policy_writes_null_for_non_finite_values(capsys):
    """One JSON policy: the squared law's density is infinite at 0 (the hard edge,
    gamma = 1), written as null -- law --format json used to write the string "inf"."""
    code, out, _ = run(capsys, "law", "--beta", "1", "--squared", "--points", "3",
                       "--format", "json")
    assert code == 0
    assert "inf" not in out.lower() and "nan" not in out.lower()
    data = json.loads(out)
    assert data["table"]["x"][0] == 0.0 and data["table"]["pdf"][0] is None
    assert freeattn.attention_law(1.0).squared().pdf(0.0) == np.inf
    code, out, _ = run(capsys, "validate", "--beta", "1", "--n", "20", "--draws", "1",
                       "--seed", "0", "--models", "linear", "--format", "json")
    assert code == 0 and json.loads(out)["results"]["linear"]["ks_noise"] is None


def test_validate_formats_render_the_same_report(capsys):
    expected = freeattn.validate(1.0, 1.0, 30, 2, models=("attention", "linear"), rng=4,
                                 progress=False)
    argv = ["validate", "--beta", "1", "--n", "30", "--draws", "2", "--seed", "4",
            "--models", "attention,linear", "--no-progress"]
    code, out, _ = run(capsys, *argv, "--format", "csv")
    assert code == 0
    rows = {row["model"]: row for row in csv.DictReader(io.StringIO(out))}
    for model in ("attention", "linear"):
        result = expected.results[model]
        assert float(rows[model]["ks"]) == result.ks
        assert float(rows[model]["top_singular_values_1"]) == result.top_singular_values[0]
    code, out, _ = run(capsys, *argv, "--markdown")
    assert code == 0 and out.strip() == expected.to_markdown()
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.strip() == expected.to_text()


def test_models_command_lists_the_registry(capsys):
    code, out, _ = run(capsys, "models", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(freeattn.MODELS)
    assert rows[0] == {"name": "attention", "law": True, "zeros": 1, "common_mode": 0,
                       "outliers": 1, "compare_with": None, "defined": "theory eq. (7.1)",
                       "matrix": freeattn.MODELS["attention"].description}
    code, out, _ = run(capsys, "models")
    assert code == 0 and all(name in out for name in freeattn.CHAIN_MODELS)


def test_plot_out_into_a_missing_folder_is_an_error(capsys, tmp_path):
    """--out in a folder that does not exist is a usage error, and the folder is not
    created (it used to be, silently)."""
    target = tmp_path / "missing" / "x.png"
    code, out, err = run(capsys, "plot", "3", "--out", str(target))
    assert code == 2 and out == ""
    assert "does not exist" in err and "Traceback" not in err
    assert not target.parent.exists()


def test_plot_out_without_suffix_writes_and_reports_a_png(capsys, tmp_path):
    """A suffix-less --out gets .png (matplotlib's default format), and the path
    printed is the file written (it used to name a file that did not exist)."""
    code, out, _ = run(capsys, "plot", "3", "--out", str(tmp_path / "edge"))
    written = tmp_path / "edge.png"
    assert code == 0 and out.strip() == f"wrote {written}"
    assert written.read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(capsys, "plot", "3", "--out", str(tmp_path / "edge.xyz"))
    assert code == 2 and "'.xyz'" in err and ".png" in err


def test_startup_does_not_import_the_heavy_libraries():
    """--help and --version answer without importing scipy.stats, matplotlib, sympy,
    tqdm or dask (imported lazily where used); before, scipy.stats alone made
    `freeattn --version` take seconds.  Timings are in the report, not asserted."""
    code = ("import sys, io, contextlib; from freeattn.cli._cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    codes = [main(['--version']), main(['--help']), main(['validate', '--help'])]\n"
            "heavy = ('scipy.stats', 'matplotlib', 'sympy', 'tqdm', 'dask')\n"
            "print(codes, sorted(m for m in sys.modules if m.split('.')[0] in "
            "('matplotlib', 'sympy', 'tqdm', 'dask') or m == 'scipy.stats'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.strip() == "[0, 0, 0] []"


def test_multihead_table_and_json_match_the_library(capsys):
    """`freeattn multihead`: summary and table of multihead_law (theory eqs. (9.14),
    (9.16), (9.17)); json carries full float64, the table 8 significant digits."""
    argv = ["multihead", "--beta", "1", "--heads", "4", "--gamma-k", "0.5", "--gamma-v",
            "0.5", "--gamma-o", "1"]
    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    assert f"atom at 0              {law.atom:.8g}" in out
    assert f"{law.support()[1]:.8g}" in out
    table = out.strip().splitlines()[-DEFAULT_LAW_POINTS:]
    values = np.array([[float(v) for v in line.split()] for line in table])
    grid = np.linspace(*law.support(), DEFAULT_LAW_POINTS)
    np.testing.assert_allclose(values[:, 1], law.pdf(grid), rtol=TABLE_RTOL, atol=1e-300)
    np.testing.assert_allclose(values[:, 2], law.cdf(grid), rtol=TABLE_RTOL, atol=1e-300)
    code, out, _ = run(capsys, *argv, "--kv-groups", "1", "--at", "1,2", "--compare-mp",
                       "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["kv_groups"] == 1 and data["atom"] == 0.5
    assert data["mean"] == pytest.approx(np.e - 1, rel=1e-13)           # eq. (9.16)
    theta1 = np.e - 1
    assert data["variance_ratio"] == pytest.approx(3.25 + 1 / (0.5 * theta1 ** 2), rel=1e-12)
    np.testing.assert_allclose(data["table"]["cdf"], law.cdf([1.0, 2.0]), rtol=ROUNDOFF_RTOL)
    mp = freeattn.marchenko_pastur(theta1, 2.0)       # same mean and rank 1/2
    np.testing.assert_allclose(data["table"]["mp_cdf"], mp.cdf([1.0, 2.0]), rtol=1e-14)
    code, out, _ = run(capsys, *argv, "--points", "3", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 3 and float(rows[0]["cdf"]) == 0.5


def test_multihead_token_spread_is_the_token_law(capsys):
    """`freeattn multihead --token-spread S`: the law of theory section 9.12 with the
    token Gram spectrum {1 - S, 1 + S}; its mean is eq. (9.31)."""
    argv = ["multihead", "--beta", "1", "--heads", "4", "--gamma-k", "0.5", "--gamma-v",
            "0.5", "--gamma-o", "1", "--token-spread", "0.5", "--at", "1,2", "--format",
            "json"]
    law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0,
                                 tokens=freeattn.point_masses([0.5, 1.5]))
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["token_spread"] == 0.5
    assert data["mean"] == pytest.approx(np.e - 2 + 1.25, rel=1e-13)    # eq. (9.31)
    np.testing.assert_allclose(data["table"]["cdf"], law.cdf([1.0, 2.0]), rtol=ROUNDOFF_RTOL)


@pytest.mark.parametrize("extra, fragment", [
    (["--token-spread", "1.5"], "--token-spread"),
    (["--kv-groups", "3"], "kv_groups must divide heads"),
    (["--gamma-o", "nan"], "gamma_o"),
    (["--heads", "0"], "--heads"),
])
def test_multihead_bad_usage(capsys, extra, fragment):
    argv = ["multihead", "--beta", "1", "--heads", "4", "--gamma-k", "0.5", "--gamma-v",
            "0.5", "--gamma-o", "1"]
    code, out, err = run(capsys, *argv, *extra)
    assert code == 2 and fragment in err and out == ""
