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
    assert [r["task"] for r in rows] == ["pdf", "cdf", "edge"] * len(bench.QUICK_CASES)
    for row in rows:
        assert "error" not in row, row.get("error")
        assert _positive_finite(row["cold"]) and _positive_finite(row["warm"])
        assert row["cold_median_ms"] > 0 and math.isfinite(row["ratio_cubic roots"])
        assert row["meets_target"] in ("yes", "no")
    for name in ("| pdf |", "| cdf |", "| edge |", "× cubic roots", "× MP closed form"):
        assert name in out


def test_bench_peers_quick_without_peers(capsys):
    bench = _load("bench_peers")
    result = bench.main(["--quick"])
    out = capsys.readouterr().out
    assert result["peers"] == [] and result["skipped_peers"] == {}
    rows = {r["task"]: r for r in result["rows"]}
    assert list(rows) == ["MP density", "MP ⊞ SC", "MP ⊠ MP"]
    assert rows["MP ⊞ SC"]["note"].startswith("not supported")
    for task in ("MP density", "MP ⊠ MP"):
        row = rows[task]
        assert _positive_finite(row["time"]), row.get("note")
        # freeattn's MP is a closed form; the product law is a fixed-point solve.
        # Errors against the 30-digit references: round-off level, not a loose check.
        assert row["max_rel_err_interior"] < 1e-6
        assert row["max_abs_err"] < 1e-4
    assert "| MP ⊠ MP | freeattn" in out


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
    assert row["note"].startswith("not supported: scikit-rmt has no free convolution")
    row = bench.run_peer(sys.executable, "rmtool", task, repeat=1, quick=True)
    if importlib.util.find_spec("rmtool") is None:
        assert row["note"].startswith("failed: ModuleNotFoundError")
        assert "time" not in row
    else:  # rmtool installed here: the worker must then time it, not fail
        assert _positive_finite(row["time"]), row.get("note")
