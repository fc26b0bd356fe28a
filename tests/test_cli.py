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
from freeattn._cli import DEFAULT_LAW_POINTS, main

# Relative tolerance of the 8-significant-digit tables.
TABLE_RTOL = 1e-7


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
    # Closed form at beta = 1.5: theta1 = exp(2.25) - 1 (SPEC section 2).
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
    # (SPEC section 2), so its share is 0.5/(e - 2).
    assert float(rows[2]["noise_fraction"]) == pytest.approx(0.5 / (np.e - 2), rel=1e-15)


def test_coeffs_exact_reads_decimals_as_rationals(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "0.1", "--exact", "--format", "json")
    assert code == 0
    data = json.loads(out)
    # Exact closed forms at beta = 1/10 (SPEC section 2).
    assert data["beta"] == "1/10"
    assert data["theta2"] == "1/100"
    assert data["alpha2"] == "-101/100 + exp(1/100)"


def test_coeffs_exact_order_lists_rational_coefficients(capsys):
    code, out, _ = run(capsys, "coeffs", "--beta", "1/2", "--exact", "--order", "3")
    assert code == 0
    # c_k = beta**k/k! and v_k = beta**(2k)/k! at beta = 1/2 (SPEC section 2).
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
