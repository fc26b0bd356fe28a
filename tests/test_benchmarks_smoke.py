"""Smoke tests of the benchmark scripts in benchmarks/ (their --quick mode, no peer venvs).

The scripts' timings are not asserted against targets here (that is what RESULTS.md
reports); these tests check that each script runs, produces the expected rows and
finite positive times, and that the mpmath references agree with their closed forms.
"""

import importlib
import importlib.util
import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import freeattn

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def _positive_finite(timing):
    return (math.isfinite(timing["min"]) and math.isfinite(timing["median"])
            and 0 < timing["min"] <= timing["median"])


def test_time_call_reports_min_le_median():
    common = _load("_common")
    timing = common.time_call(lambda: sum(range(100)), repeat=3)
    assert timing["repeat"] == 3 and timing["number"] >= 1
    assert _positive_finite(timing)


def test_markdown_table_shape_and_dashes():
    common = _load("_common")
    text = common.markdown_table([("a", "A", ".2f"), ("b", "B", "")],
                                 [{"a": 1.0}, {"a": float("nan"), "b": "x"}])
    lines = text.splitlines()
    assert lines[0] == "| A | B |"
    assert lines[2] == "| 1.00 | — |"
    assert lines[3] == "| — | x |"


def test_references_agree_with_closed_forms():
    """benchmarks/reference_laws.py, mpmath at 30 digits: the Fuss-Catalan closed form
    (Penson & Zyczkowski 2011) against its cubic, MP boxplus SC at s2 -> 0 against the
    MP closed form, and the mass of MP boxplus SC; tolerances are round-off of 30-digit
    (first) and float (second) arithmetic and of 15-digit quadrature (third)."""
    ref = _load("reference_laws")
    worst = ref.self_check()
    assert worst["fuss_catalan2_closed_vs_cubic"] < 1e-25
    assert worst["mp_plus_sc_vs_mp_at_s2_0"] < 1e-14
    assert worst["mp_plus_sc_mass_minus_1"] < 1e-12
    # MP(0.5) at x = 1: rho = sqrt((b-1)(1-a))/(2 pi 0.5) with a, b = (1 -+ r)^2,
    # r = sqrt(0.5), and (b-1)(1-a) = 4 r^2 - r^4 = 7/4, so rho(1) = sqrt(7/4)/pi.
    assert ref.marchenko_pastur_density(np.array([1.0]), 0.5)[0] == pytest.approx(
        math.sqrt(1.75) / math.pi, rel=1e-15)


def test_bench_law_quick(capsys):
    bench = _load("bench_law")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    rows = result["rows"]
    assert [r["task"] for r in rows] == (["pdf", "cdf", "edge"] * len(bench.QUICK_CASES)
                                         + ["fit", "fit+bootstrap"] * len(bench.QUICK_FIT_SIZES))
    for row in rows:
        assert "error" not in row, row.get("error")
        assert _positive_finite(row["cold"]) and _positive_finite(row["warm"])
        assert row["cold_median_ms"] > 0 and math.isfinite(row["ratio_cubic roots"])
        if row["task"].startswith("fit"):
            assert row["target_ms"] is None and row["points"] == bench.QUICK_FIT_SIZES[0]
        else:
            assert row["meets_target"] in ("yes", "no")
    for name in ("| pdf |", "| cdf |", "| edge |", "| fit |", "| fit+bootstrap |", "× cubic roots",
                 "× MP closed form"):
        assert name in out


def test_bench_peers_quick_without_peers(capsys):
    bench = _load("bench_peers")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    assert result["peers"] == [] and result["skipped_peers"] == {}
    labels = ["MP density", "MP ⊞ SC", "MP ⊠ MP", "sample cov. {1, 10}", "SC ⊞ {±3}"]
    ours = {r["task"]: r for r in result["rows"] if r["library"].startswith("freeattn")}
    assert list(ours) == labels
    (closed,) = [r for r in result["rows"] if r["library"] == "numpy closed form"]
    for row in list(ours.values()) + [closed]:
        assert _positive_finite(row["time"]), row.get("note")
        assert _positive_finite(row["baseline"]) and row["x_c"] > 0
        # Errors against the 30-digit references of benchmarks/reference_laws.py. The
        # engine's own accuracy (about 1e-14) is checked in tests/test_composition_
        # references.py; 1e-10 checks the benchmark's plumbing: a grid, band list or
        # reference that does not match its task gives errors of order 1.
        assert row["max_rel_err_interior"] < 1e-10
        assert row["max_abs_err"] < 1e-10
        assert row["bands_ok"] == "yes", row["bands"]
    # Two bands for the two-atom tasks (the references' edges, benchmarks/reference_laws.py).
    assert ours["sample cov. {1, 10}"]["bands_found"] == "2/2"
    assert ours["SC ⊞ {±3}"]["bands_found"] == "2/2"
    assert [s["task"] for s in result["summary"]] == labels
    for line in result["summary"][1:]:
        assert line["meets_accuracy"] in ("yes", "no") and line["meets_speed"] in ("yes", "no")
    assert "| MP ⊠ MP | freeattn" in out and "| SC ⊞ {±3} | freeattn" in out


def test_grid_bands_and_band_check():
    """Bands read from a density on a grid, and the verdict against reference edges:
    hand-made inputs (two runs of positive values; a band list with one edge off)."""
    bench = _load("bench_peers")
    x = np.linspace(0.0, 10.0, 11)
    density = np.array([0, 1, 1, 0, 0, 0, 0, 2, 2, 2, 0], dtype=float)
    assert bench.grid_bands(x, density) == [(1.0, 2.0), (7.0, 9.0)]
    task = {"bands": [(1.0, 2.0), (7.0, 9.0)], "x": x}
    check = bench.band_check([(1.0, 2.0), (7.0, 9.0)], task, "support routine")
    assert check["bands_found"] == "2/2" and check["bands_ok"] == "yes"
    assert check["max_edge_err"] == 0.0
    # An edge 0.5 off is 6% of the support's width 8 (> BAND_EDGE_TOLERANCE = 1%).
    check = bench.band_check([(1.0, 2.0), (7.5, 9.0)], task, "support routine")
    assert check["bands_ok"] == "no" and check["max_edge_err"] == 0.5
    check = bench.band_check([(1.0, 9.0)], task, "grid")
    assert check["bands_found"] == "1/2" and check["bands_ok"] == "no"


def test_bench_compose_quick(capsys):
    bench = _load("bench_compose")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    rows = result["rows"]
    names = [name for name, _, _ in bench.laws()]
    tasks = ["pdf", "cdf", "ppf", "pdf (1 point)", "cdf (1 point)", "ppf (1 point)"]
    assert [(r["law"], r["task"]) for r in rows[:-1]] == [(n, t) for n in names for t in tasks]
    assert rows[-1]["task"] == "new law + pdf"
    for row in rows:
        assert "error" not in row, row.get("error")
        assert _positive_finite(row["time"]) and _positive_finite(row["baseline_time"])
        assert row["ratio"] > 0 and row["target"] == bench.TARGETS[row["task"]]
        if row["target"] is not None:
            assert row["meets_target"] in ("yes", "no")
    # freeattn's MP density and the bare closed form agree to round-off (same formula).
    assert rows[-1]["max_abs_diff"] < 1e-14
    assert "| pdf (1 point) |" in out and "new law + pdf" in out


def test_bench_sampling_quick(capsys):
    bench = _load("bench_sampling")
    result = bench.main(["--quick"])
    capsys.readouterr()
    (block,) = result["sizes"]
    assert block["n"] == bench.QUICK_N
    assert [r["model"] for r in block["rows"]] == list(freeattn.CHAIN_MODELS)
    for row in block["rows"]:
        assert "error" not in row, row.get("error")
        for key in ("svdvals", "gram eigvalsh", "sample", "spectrum", "draw"):
            assert _positive_finite(row[key]) and row[key]["repeat"] == row["rounds"]
        assert row["ratio_svdvals"] > 0 and math.isfinite(row["ratio_gram eigvalsh"])
    assert block["rows"][0]["meets_target"] in ("yes", "no")


def test_bench_script_runs_as_a_command(tmp_path):
    """The README's command line form: a subprocess, --quick, JSON written where asked."""
    target = tmp_path / "sampling.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_sampling.py"), "--quick",
                           "--json", str(target)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| attention |" in proc.stdout
    payload = json.loads(target.read_text(encoding="utf-8"))
    assert payload["benchmark"] == "sampling" and payload["quick"] is True


def test_peer_worker_reports_unsupported_and_failures():
    """The worker answers in JSON in every case: a task the peer has no routine for is
    "not supported" (before the peer is even imported), and a peer that cannot be
    imported here (the peers live in their own venvs) is a "failed" row with the reason."""
    bench = _load("bench_peers")
    task = bench.tasks(8)[2]  # MP boxtimes MP
    row = bench.run_peer(sys.executable, "scikit-rmt", task, repeat=1, quick=True)
    assert row["note"].startswith("not supported: scikit-rmt has the Marchenko-Pastur law only")
    row = bench.run_peer(sys.executable, "rmtool", task, repeat=1, quick=True)
    if importlib.util.find_spec("rmtool") is None:
        assert row["note"].startswith("failed: ModuleNotFoundError")
        assert "time" not in row
    else:  # rmtool installed here: the worker must then time it, not fail
        assert _positive_finite(row["time"]), row.get("note")


def test_bench_multihead_quick(capsys):
    bench = _load("bench_multihead")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    (row,) = result["rows"]
    assert "error" not in row, row.get("error")
    assert _positive_finite(row["single"]) and _positive_finite(row["multihead"])
    assert math.isfinite(row["ratio"]) and row["meets_target"] in ("yes", "no")
    assert "multi-head min (ms)" in out


def test_bench_fit_quick(capsys):
    """The fit benchmark's three rows at the quick size: finite positive times, a finite
    ratio to C and the estimate of each fit (gamma given: the given gamma)."""
    bench = _load("bench_fit")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    rows = result["rows"]
    assert [r["task"] for r in rows] == list(bench.TASKS) * len(bench.QUICK_CASES)
    for row in rows:
        assert "error" not in row, row.get("error")
        assert _positive_finite(row["cold"]) and math.isfinite(row["ratio_c"])
        assert 0 < row["ks"] < row["ks_mp"]
    assert rows[2]["gamma_hat"] == bench.QUICK_CASES[0][2]
    assert "| fit, gamma fitted |" in out and "× C" in out


def test_bench_startup_quick(capsys):
    """One round of the start-up benchmark: four timed rows, the baseline first with
    ratio 1, and the heavy-module column filled for each command."""
    bench = _load("bench_startup")
    result = bench.main(["--quick", "--rounds", "1"])
    out = capsys.readouterr().out
    rows = result["rows"]
    assert [r["task"] for r in rows] == [name for name, _, _ in bench.COMMANDS]
    assert rows[0]["ratio"] == 1.0
    for row in rows:
        assert math.isfinite(row["median_s"]) and 0 < row["min_s"] <= row["median_s"]
        assert row["heavy_modules"]
    assert all(r["meets_target"] in ("yes", "no") for r in rows[1:])
    assert "× import numpy" in out


def test_bench_rectangular_quick(capsys):
    """One case of benchmarks/bench_rectangular.py: a finite ratio to C, the bands, and the
    density against the Gaussian closed form (theory eq. (16.13)) at round-off."""
    bench = _load("bench_rectangular")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    (row,) = result["rows"]
    assert "error" not in row, row.get("error")
    assert _positive_finite(row["time"]) and _positive_finite(row["baseline_time"])
    assert row["ratio"] > 0 and row["bands"] == 1
    assert row["max_rel_error"] < 1e-12
    assert "| MP_sv(1, 1/2) ⊞_1/2 MP_sv(1, 1/2) |" in out


def test_bench_moments_quick(capsys):
    """One case of benchmarks/bench_moments.py: finite ratios to C for the fixed-point and
    the exact moment, and the moment itself (MP(1, 1/2) ⊞ semicircle(1), k = 20) equal to
    the exact rational rounded (theory eq. (8.22))."""
    bench = _load("bench_moments")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    (row,) = result["rows"]
    assert "error" not in row, row.get("error")
    assert _positive_finite(row["time"]) and _positive_finite(row["exact_time"])
    assert row["ratio"] > 0 and row["exact_ratio"] > 0
    law = freeattn.free_additive(freeattn.marchenko_pastur(1.0, 0.5), freeattn.semicircle(1.0))
    assert row["moment"] == float(law._verified_series(20).fraction(20))
    assert "| MP(1, 1/2) ⊞ semicircle(1) | 20 |" in out


def test_campaign_quick(capsys):
    """Five draws of benchmarks/campaign.py: every draw either builds (mass error at
    most mass_atol plus allowances, 1e-10 here) or raises ConvergenceError; no other
    exception leaves the engine, and the report counts them."""
    bench = _load("campaign")
    result = bench.main(["--quick"])
    rows = result["rows"]
    assert len(rows) == 5
    for row in rows:
        assert row["outcome"] in ("built", "ConvergenceError"), row
        if row["outcome"] == "built":
            assert row["mass_error"] <= 1e-10
    assert "of 5 built" in capsys.readouterr().out


def test_campaign_replay(tmp_path, capsys):
    """``campaign.py --replay`` runs the recorded draws again (those over
    ``--slower-than`` seconds), under their seeds and draw numbers, with the recorded
    outcome beside the new one."""
    import json

    bench = _load("campaign")
    law = "fa.free_additive(fa.semicircle(1.0), fa.point_masses([-3.0, 3.0], [0.5, 0.5]))"
    recorded = {"depth": 1, "rows": [
        {"law": law, "outcome": "built", "bands": 2, "seconds": 9.0, "seed": 4, "draw": 28},
        {"law": law, "outcome": "built", "bands": 2, "seconds": 0.5, "seed": 4, "draw": 29}]}
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(recorded))
    result = bench.main(["--replay", str(path), "--slower-than", "1", "--json",
                         str(tmp_path / "replay.json")])
    (row,) = result["rows"]
    assert (row["seed"], row["draw"], row["recorded_seconds"]) == (4, 28, 9.0)
    assert row["outcome"] == row["recorded_outcome"] == "built"
    assert row["bands"] == row["recorded_bands"] == 2
    assert json.loads((tmp_path / "replay.json").read_text())["rows"][0]["draw"] == 28
    assert "1 of 1 built" in capsys.readouterr().out

