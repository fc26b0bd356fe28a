"""The registries (law families, gallery figures, commands) and the command-line conventions.

Each list the library keeps -- the law families, the figures, the subcommands -- is read
from one registry; these tests check that every place that shows a list shows the
registry's, and that every subcommand follows the same conventions (--format, --output,
--seed default 0, "(default: ...)" in its help, exit code 2 on bad input).  Expected
numbers are closed forms (theta1 = e^{beta^2} - 1; the multi-head mean theta1 gamma_o,
theory eq. (9.16); the causal moments of eq. (10.16)) at round-off tolerance.
"""

import argparse
import json
import math
import pathlib
import re

import numpy as np
import pytest

import freeattn
from freeattn import FAMILIES, plotting
from freeattn.core._checks import ATTENTION_BETA, ATTENTION_GAMMA, CAUSAL_BETA, CAUSAL_GAMMA
from freeattn.cli._cli import DEFAULT_SEED, build_parser, main

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A second evaluation of a law may differ from the first in the last bits (Newton
# polish of the solver); moments of the same representation agree to round-off.
ROUNDOFF_RTOL = 1e-12

#: Parameters at which every family is built (the multi-head ones at the geometry of
#: theory section 9.10).
FAMILY_PARAMS = {
    "law": {"beta": 1.0, "gamma": 1.0},
    "multihead": {"beta": 1.0, "heads": 4, "gamma_k": 0.5, "gamma_v": 0.5, "gamma_o": 1.0},
    "head-average": {"beta": 1.0, "heads": 4, "gamma_k": 0.5},
    "causal": {"beta": 1.0, "gamma": 1.0},
}


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


# ---------------------------------------------------------------------------
# law families


def test_every_attention_family_is_registered_with_what_it_describes():
    assert set(FAMILY_PARAMS) == set(FAMILIES)
    assert FAMILIES["law"].describes == "singular values"
    assert FAMILIES["multihead"].describes == "eigenvalues"
    assert FAMILIES["head-average"].describes == "squared singular values"
    assert FAMILIES["causal"].describes == "squared singular values"


@pytest.mark.parametrize("name", sorted(FAMILY_PARAMS))
def test_every_family_offers_both_views_consistently(name):
    """view="singular_values" is the law of s, view="squared" that of s^2: the second
    moment of the first is the mean of the second (theory eq. (8.17))."""
    family = FAMILIES[name]
    params = FAMILY_PARAMS[name]
    squared = family.law(view="squared", **params)
    singular = family.law(view="singular_values", **params)
    assert isinstance(singular, freeattn.SingularValueLaw)
    assert singular.moment(2) == pytest.approx(squared.mean(), rel=ROUNDOFF_RTOL)
    assert singular.support()[1] == pytest.approx(math.sqrt(squared.support()[1]),
                                                  rel=ROUNDOFF_RTOL)
    assert singular.atom == pytest.approx(squared.atom, abs=1e-15)


@pytest.mark.parametrize("name, builder", [
    ("law", freeattn.attention_law), ("multihead", freeattn.multihead_law),
    ("head-average", freeattn.head_average_law), ("causal", freeattn.causal_law)])
def test_the_native_view_is_what_the_entry_point_returns(name, builder):
    """Nothing public changes: the entry points keep their return types, and the default
    view of a family is exactly the entry point's law."""
    family = FAMILIES[name]
    law = family.law(**FAMILY_PARAMS[name])
    direct = builder(**FAMILY_PARAMS[name])
    assert type(law) is type(direct)
    assert law.mean() == pytest.approx(direct.mean(), rel=ROUNDOFF_RTOL)


def test_family_means_match_their_closed_forms():
    theta1 = math.expm1(1.0)
    assert FAMILIES["law"].law(view="squared", beta=1.0).mean() == pytest.approx(
        theta1, rel=ROUNDOFF_RTOL)                                    # E s^2 = theta1
    multihead = FAMILIES["multihead"].law(**{**FAMILY_PARAMS["multihead"], "gamma_o": 0.5})
    assert multihead.mean() == pytest.approx(theta1 * 0.5, rel=ROUNDOFF_RTOL)  # eq. (9.16)
    from freeattn.attention._causal import causal_moments

    causal = FAMILIES["causal"].law(beta=1.0, gamma=1.0)
    assert causal.mean() == pytest.approx(causal_moments(1.0, 1.0, 1)[0], rel=1e-10)


def test_family_law_rejects_unknown_parameters_and_views():
    with pytest.raises(TypeError, match="unexpected heads"):
        FAMILIES["law"].law(beta=1.0, heads=2)
    with pytest.raises(TypeError, match="needs the parameters beta"):
        FAMILIES["causal"].law()
    with pytest.raises(ValueError, match="view must be one of squared, singular_values"):
        FAMILIES["law"].law(view="eigen", beta=1.0)
    with pytest.raises(ValueError, match="already registered"):
        freeattn.register_family(FAMILIES["law"])


@pytest.mark.parametrize("name, beta_domain, gamma_domain", [
    ("law", ATTENTION_BETA, ATTENTION_GAMMA), ("causal", CAUSAL_BETA, CAUSAL_GAMMA)])
def test_the_domains_declared_once_are_those_the_laws_enforce(name, beta_domain, gamma_domain):
    """The registry's domains are the laws' own: the ends are accepted, just outside them
    is a ValueError naming the argument and the range (the builders read the domains)."""
    family = FAMILIES[name]
    domains = {p.name: p.domain for p in family.parameters}
    assert domains == {"beta": beta_domain, "gamma": gamma_domain}
    for value in (beta_domain.high * 1.001, beta_domain.low * 0.999):
        with pytest.raises(ValueError, match=r"beta must be in \[1e-08, 4\.0\]"):
            family.law(beta=value)
    for value in (gamma_domain.high * 1.001, gamma_domain.low * 0.999):
        with pytest.raises(ValueError, match="gamma must be in " + re.escape(
                f"[{gamma_domain.low}, {gamma_domain.high}]")):
            family.law(beta=1.0, gamma=value)
    from freeattn.attention._causal import CAUSAL_BETA_RANGE, CAUSAL_GAMMA_RANGE
    from freeattn.attention._laws import GAMMA_RANGE, MAX_LAW_BETA, MIN_LAW_BETA

    assert (MIN_LAW_BETA, MAX_LAW_BETA) == ATTENTION_BETA.range
    assert GAMMA_RANGE == ATTENTION_GAMMA.range
    assert CAUSAL_BETA_RANGE == CAUSAL_BETA.range and CAUSAL_GAMMA_RANGE == CAUSAL_GAMMA.range


# ---------------------------------------------------------------------------
# figures


def test_figure_registry_is_numbered_and_named_once():
    numbers = [spec.number for spec in plotting.FIGURES.values()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert list(plotting.FIGURES) == [str(k) for k in numbers]
    names = [spec.name for spec in plotting.FIGURES.values()]
    assert len(set(names)) == len(names)
    for spec in plotting.FIGURES.values():
        assert getattr(plotting, spec.function.__name__) is spec.function
        assert spec.function.__name__ in plotting.__all__
        assert spec.monte_carlo == bool(spec.defaults)
    with pytest.raises(ValueError, match="already registered"):
        plotting.gallery_figure(1, "chain", "again")(lambda: None)


def test_every_list_of_figures_is_the_registry(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")          # no line breaks inside a name
    specs = list(plotting.FIGURES.values())
    # the gallery page shows every file once, in the registry's order
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    shown = re.findall(r"figures/(fig\d+_[a-z_]+\.png)", gallery)
    assert shown == [spec.filename for spec in specs]
    # the module docstring's numbered list
    listed = re.findall(r"^(\d+)\. ``([a-z-]+)``", plotting.__doc__, flags=re.M)
    assert listed == [(str(s.number), s.name) for s in specs]
    # the command line's help of plot and reproduce (generated from the registry)
    commands = subcommands()
    for command in ("plot", "reproduce"):
        text = " ".join(commands[command].format_help().split())
        assert plotting.figure_list() in text, command
    # reproduce draws exactly the registry
    assert [s.number for s in plotting._check_only(None)] == [s.number for s in specs]


# ---------------------------------------------------------------------------
# command-line conventions


RANDOM_COMMANDS = {"validate", "fit", "plot", "reproduce", "analyze"}


def test_every_command_is_a_registry_entry():
    from freeattn.cli._cli import commands

    names = [c.name for c in commands()]
    assert names == list(subcommands())
    assert set(FAMILIES) <= set(names)


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_command_takes_format_output_and_the_seed_convention(command):
    parser = subcommands()[command]
    actions = {opt: a for a in parser._actions for opt in a.option_strings}
    assert set(actions["--format"].choices) >= {"text", "markdown", "csv", "json"}
    assert actions["--format"].default == "text"
    assert "--output" in actions and actions["--output"].default is None
    if command in RANDOM_COMMANDS:
        assert actions["--seed"].default == DEFAULT_SEED == 0
    else:
        assert "--seed" not in actions
    if command in FAMILIES:
        for option in ("--points", "--at", "--view"):
            assert option in actions, (command, option)


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_help_writes_defaults_one_way(command, monkeypatch):
    """Every option with a default shows it as "(default: X)", none in brackets."""
    monkeypatch.setenv("COLUMNS", "1000")          # no line breaks inside a default
    parser = subcommands()[command]
    text = " ".join(parser.format_help().split())
    assert "[default" not in text and "[registry" not in text
    for action in parser._actions:
        if action.option_strings and action.help and action.default not in (
                None, False, argparse.SUPPRESS):
            assert f"(default: {action.default})" in text, (command, action.dest)


#: One bad invocation per command (bad input to the library or to the parser).
BAD_INPUT = {
    "coeffs": (["--beta", "-1"], "beta"),
    "law": (["--beta", "5"], "beta"),
    "multihead": (["--beta", "1", "--heads", "4", "--gamma-k", "0.5", "--gamma-v", "0.5",
                   "--gamma-o", "1", "--kv-groups", "3"], "kv_groups"),
    "head-average": (["--beta", "1", "--heads", "4", "--gamma-k", "0"], "gamma_k"),
    "causal": (["--beta", "1", "--gamma", "20"], "gamma"),
    "edge": (["--beta", "0"], "beta"),
    "threshold": (["--n", "1"], "n"),
    "validate": (["--beta", "1", "--n", "1"], "n"),
    "fit": (["does_not_exist.npy"], "does not exist"),
    "torch-init": (["--embed-dim", "64", "--heads", "4", "--n", "65"], "--embed-dim"),
    "models": (["--format", "xml"], "--format"),
    "plot": (["99"], "figure must be one of"),
    "reproduce": (["--only", "nine"], "figure must be one of"),
    "analyze": (["does_not_exist.safetensors"], "does not exist"),
    "stack": (["--layers", "0"], "--layers"),
    "tokens": (["--spread", "2"], "tokens must be a law on [0, inf)"),
}


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_bad_input_exits_2_with_one_line_for_every_command(capsys, command):
    argv, fragment = BAD_INPUT[command]
    code, out, err = run(capsys, command, *argv)
    assert code == 2 and fragment in err and "Traceback" not in err and out == ""


def test_fit_with_absurd_resamples_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "good.npy"
    np.save(path, np.linspace(0.1, 5.0, 50))
    code, out, err = run(capsys, "fit", str(path), "--gamma", "0.5", "--resamples",
                         "100000000")
    assert code == 2 and "--resamples" in err and "Traceback" not in err and out == ""


def test_torch_init_accepts_n_up_to_embed_dim(capsys):
    code, out, _ = run(capsys, "torch-init", "--embed-dim", "64", "--heads", "4", "--n", "64",
                       "--format", "json")
    assert code == 0 and json.loads(out)["n"] == 64


def test_output_writes_what_the_terminal_would_show(capsys, tmp_path):
    code, shown, _ = run(capsys, "coeffs", "--beta", "0.5", "--format", "csv")
    path = tmp_path / "coeffs.csv"
    code2, out, _ = run(capsys, "coeffs", "--beta", "0.5", "--format", "csv",
                        "--output", str(path))
    assert code == code2 == 0
    assert path.read_text() == shown and out.strip() == f"wrote {path}"
    code, out, err = run(capsys, "edge", "--beta", "1", "--output", str(tmp_path / "no" / "x"))
    assert code == 2 and "--output" in err and "does not exist" in err


def test_deprecated_switches_still_work_and_warn(capsys, tmp_path):
    argv = ["validate", "--beta", "1", "--n", "20", "--draws", "2", "--models", "linear",
            "--no-progress"]
    code, new, err = run(capsys, *argv, "--format", "markdown")
    assert code == 0 and "deprecated" not in err
    code, old, err = run(capsys, *argv, "--markdown")
    assert code == 0 and old == new and "--markdown is deprecated" in err
    code, out, err = run(capsys, *argv, "--json", "-")
    assert code == 0 and json.loads(out)["n"] == 20 and "--json - is deprecated" in err
    path = tmp_path / "edge.png"
    code, out, err = run(capsys, "plot", "edge", "--out", str(path))
    assert code == 0 and path.is_file() and "--out is deprecated; use --output" in err


def test_seed_default_is_the_same_draw_as_seed_0(capsys):
    argv = ["validate", "--beta", "1", "--n", "20", "--draws", "2", "--models", "linear",
            "--no-progress", "--format", "json"]
    _, default, _ = run(capsys, *argv)
    _, zero, _ = run(capsys, *argv, "--seed", "0")
    _, one, _ = run(capsys, *argv, "--seed", "1")
    ks = [json.loads(t)["results"]["linear"]["ks"] for t in (default, zero, one)]
    assert ks[0] == ks[1] != ks[2]


def test_causal_table_matches_the_causal_law(capsys):
    law = freeattn.causal_law(1.0, 1.0)
    code, out, _ = run(capsys, "causal", "--beta", "1", "--at", "0.5,1,3", "--format", "json")
    assert code == 0
    data = json.loads(out)
    np.testing.assert_allclose(data["table"]["pdf"], law.pdf([0.5, 1, 3]), rtol=1e-13)
    np.testing.assert_allclose(data["table"]["cdf"], law.cdf([0.5, 1, 3]), rtol=1e-13)
    code, out, _ = run(capsys, "causal", "--beta", "1", "--points", "4", "--view",
                       "singular-values", "--format", "json")
    data = json.loads(out)
    s = np.linspace(0, math.sqrt(law.support()[1]), 4)
    np.testing.assert_allclose(data["table"]["x"], s, rtol=1e-13)
    np.testing.assert_allclose(data["table"]["cdf"], law.cdf(s ** 2), rtol=1e-12, atol=1e-15)


def test_head_average_command_matches_the_library(capsys):
    law = freeattn.head_average_law(1.0, heads=4, gamma_k=0.5)
    code, out, _ = run(capsys, "head-average", "--beta", "1", "--heads", "4", "--gamma-k",
                       "0.5", "--at", "1,2", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["mean"] == pytest.approx(law.mean(), rel=ROUNDOFF_RTOL)
    np.testing.assert_allclose(data["table"]["cdf"], law.cdf([1.0, 2.0]), rtol=1e-13)


# ---------------------------------------------------------------------------
# reproduce


def _no_drawing(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a figure was drawn before the output path was checked")

    monkeypatch.setattr(plotting, "save_figure", fail)


def test_reproduce_into_a_file_fails_before_drawing(capsys, tmp_path, monkeypatch):
    _no_drawing(monkeypatch)
    target = tmp_path / "a_file"
    target.write_text("x")
    code, out, err = run(capsys, "reproduce", "--output", str(target))
    assert code == 2 and "is a file" in err and "Traceback" not in err
    code, out, err = run(capsys, "reproduce", "--output", str(tmp_path / "no" / "deeper"))
    assert code == 2 and "parent folder" in err
    with pytest.raises(ValueError, match="is a file"):
        plotting.reproduce(target)


def test_reproduce_defaults_to_the_working_directory_with_one_blas_thread(
        capsys, tmp_path, monkeypatch):
    from threadpoolctl import threadpool_info

    monkeypatch.chdir(tmp_path)
    seen = []
    original = plotting.save_figure

    def save(*args, **kwargs):
        seen.append([info["num_threads"] for info in threadpool_info()
                     if info["user_api"] == "blas"])
        return original(*args, **kwargs)

    monkeypatch.setattr(plotting, "save_figure", save)
    code, out, err = run(capsys, "reproduce", "--only", "gamma")
    assert code == 0 and (tmp_path / "fig5_gamma.png").is_file()
    assert out.strip() == "wrote fig5_gamma.png"
    assert "figures" in err                       # the progress bar, on stderr
    assert seen and all(threads == [1] * len(threads) for threads in seen)


def test_a_registered_family_gets_a_command_with_the_common_options(capsys):
    """As docs/contributing.md shows (its example runs in tests/test_docs.py): one
    registry entry gives a command; the squared law of 2*s has mean 4*theta1 exactly."""
    from freeattn.core._checks import Real

    freeattn.register_family(freeattn.Family(
        "scaled-law", "squared singular values of scale * sqrt(n)*(A - 11^T/n)",
        lambda beta, scale=2.0: freeattn.attention_law(beta).squared().scaled(scale ** 2),
        "squared singular values",
        (freeattn.Parameter("beta", ATTENTION_BETA, required=True, help="beta"),
         freeattn.Parameter("scale", Real(0.0, 1e3, low_closed=False), default=2.0,
                            help="the scale"))))
    try:
        code, out, _ = run(capsys, "scaled-law", "--beta", "1", "--scale", "2",
                           "--at", "1", "--format", "json")
        assert code == 0 and json.loads(out)["mean"] == pytest.approx(
            4 * math.expm1(1.0), rel=ROUNDOFF_RTOL)
        code, _, err = run(capsys, "scaled-law", "--beta", "1", "--scale", "0")
        assert code == 2 and "scale must be in (0.0, 1000.0]" in err
    finally:
        FAMILIES.pop("scaled-law", None)
    assert "scaled-law" not in subcommands()


def test_every_monte_carlo_figure_takes_what_reproduce_passes():
    """reproduce passes rng, executor and the size argument to every Monte Carlo figure
    (a figure without ``executor`` made ``freeattn reproduce`` exit 2 after drawing seven)."""
    import inspect

    for spec in plotting.FIGURES.values():
        if spec.monte_carlo:
            params = inspect.signature(spec.function).parameters
            assert {"rng", "executor", "draws"} <= set(params), spec.name
            assert (spec.size_argument or "n") in params, spec.name
