"""The documentation runs: its code blocks run in the test suite, and the site builds.

- ```python blocks in docs/*.md and README.md are doctests (``>>>`` prompts and their
  expected output); all blocks of one page share a namespace, in page order (the
  tutorial, docs/tutorial.md, is one of these pages).
- ```console blocks hold ``$ freeattn ...`` commands followed by their
  output; each command runs through ``freeattn.cli._cli.main`` and its output
  must match the page (whitespace-normalized).
- ```bash blocks are shown, not run (installs, long Monte Carlo runs).
- The Sphinx site (docs/conf.py) builds with warnings as errors, and its API
  reference has a page for every public name and every command.
- Relative links between the docs (and into theory/ and docs/figures/) point
  at files that exist.
"""

import argparse
import doctest
import importlib.util
import io
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from freeattn.cli._cli import build_parser, main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# The README is a page too: its example runs once the draft is integrated.
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", flags=re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")

OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _blocks(path, language):
    return [body for lang, body in FENCE.findall(path.read_text(encoding="utf-8"))
            if lang == language]


def _ids(paths):
    return [p.name for p in paths]


PYTHON_PAGES = [p for p in PAGES if _blocks(p, "python")]
CONSOLE_PAGES = [p for p in PAGES if _blocks(p, "console")]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_ids(PYTHON_PAGES))
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # examples that write files write them here
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    globs = {"__name__": "__docs__"}
    for i, body in enumerate(_blocks(page, "python")):
        assert ">>>" in body, f"{page.name} python block {i} is not in doctest form"
        test = parser.get_doctest(body, globs, f"{page.name}[{i}]", str(page), 0)
        output = io.StringIO()
        runner.run(test, out=output.write, clear_globs=False)
        assert runner.failures == 0, output.getvalue()
        globs = test.globs               # DocTest copies its globals: carry them on
    assert runner.tries > 0


def _console_commands(body):
    """``[(argv, expected output)]`` of the ``$ freeattn ...`` commands of a block."""
    commands = []
    for line in body.splitlines():
        if line.startswith("$ "):
            argv = shlex.split(line[2:])
            assert argv[0] == "freeattn", line
            commands.append((argv[1:], []))
        else:
            commands[-1][1].append(line)
    return [(argv, "\n".join(lines)) for argv, lines in commands]


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=_ids(CONSOLE_PAGES))
def test_console_blocks_print_what_the_page_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for body in _console_commands_of(page):
        for argv, expected in body:
            out = io.StringIO()
            assert main(argv, stdout=out) == 0, argv
            assert out.getvalue().split() == expected.split(), (
                f"{page.name}: output of freeattn {' '.join(argv)} changed:\n"
                f"{out.getvalue()}")


def _console_commands_of(page):
    return [_console_commands(body) for body in _blocks(page, "console")]


def test_the_tutorial_runs_as_a_page():
    # The tutorial's blocks run through test_python_blocks_run like every page's.
    assert DOCS / "tutorial.md" in PYTHON_PAGES
    assert len(_blocks(DOCS / "tutorial.md", "python")) >= 6


LINKED_PAGES = PAGES + [DOCS / "api" / "cli.md"] + sorted((DOCS / "theory").glob("*.md"))


@pytest.mark.parametrize("page", LINKED_PAGES, ids=[str(p.relative_to(DOCS)) if DOCS in p.parents
                                                    else p.name for p in LINKED_PAGES])
def test_relative_links_resolve(page):
    # The README draft is written for the repository root, where it will live.
    base = ROOT if page.name == "README.md" else page.parent
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (base / target).resolve().exists(), f"{page.name}: broken link {target}"


def test_every_theory_note_is_a_page_of_the_site():
    notes = sorted(p.name for p in (ROOT / "theory").glob("*.md"))
    stubs = sorted(p.name for p in (DOCS / "theory").glob("*.md"))
    assert notes == stubs, "add a stub docs/theory/NAME.md that includes theory/NAME.md"
    for name in stubs:
        text = (DOCS / "theory" / name).read_text(encoding="utf-8")
        assert f"```{{include}} ../../theory/{name}\n```" in text, name


#: Seconds the site build may take before the test says so; the build takes about 20 s
#: on the project's 2-core machine (tests/test_docs.py builds it once per session).
SITE_BUILD_BUDGET = 120.0


def _require_sphinx():
    """Skip without the ``docs`` extra, except under CI (``FREEATTN_CI``), where it fails."""
    if importlib.util.find_spec("sphinx") is None:
        if os.environ.get("FREEATTN_CI"):
            pytest.fail("Sphinx is missing: CI installs the docs extra (.ci/run)")
        pytest.skip('the site build needs the docs extra: pip install ".[docs]"')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built with warnings as errors from a copy of docs/ and theory/.

    A copy, so that autosummary's generated pages (docs/api/generated/) never land in
    the working tree and pages of names that no longer exist cannot linger.
    """
    _require_sphinx()
    work = tmp_path_factory.mktemp("site")
    shutil.copytree(DOCS, work / "docs", ignore=shutil.ignore_patterns("_build", "generated"))
    shutil.copytree(ROOT / "theory", work / "theory")
    out = work / "html"
    start = time.perf_counter()
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(work / "docs"), str(out)],
        capture_output=True, text=True, cwd=work)
    seconds = time.perf_counter() - start
    assert build.returncode == 0, f"sphinx-build failed:\n{build.stdout}\n{build.stderr}"
    assert build.stderr.strip() == "", build.stderr     # -q: only warnings reach stderr
    return out, seconds


@pytest.mark.docs
def test_site_builds_with_warnings_as_errors(site):
    out, seconds = site
    for page in ["index", "tutorial", "quickstart", "predict", "validate", "plot",
                 "gallery", "api/index", "api/cli", "theory/README", "theory/05_fixed_point"]:
        assert (out / f"{page}.html").is_file(), page
    assert seconds < SITE_BUILD_BUDGET, f"the site took {seconds:.0f} s to build"


@pytest.mark.docs
def test_site_renders_the_theory_equations(site):
    """Every display equation of the theory notes, with its \\tag{N.k}, is a math block
    of the built page (MathJax typesets it in the browser)."""
    out, _ = site
    for note in sorted((ROOT / "theory").glob("[0-9]*.md")):
        text = note.read_text(encoding="utf-8")
        html = (out / "theory" / f"{note.stem}.html").read_text(encoding="utf-8")
        tags = re.findall(r"\\tag\{(\d+\.\d+)\}", text)
        assert tags, note.name
        for tag in tags:
            assert f"\\tag{{{tag}}}" in html, f"{note.name}: eq. ({tag}) not rendered"
        assert html.count('class="math notranslate nohighlight"') >= text.count("$$") // 2


@pytest.mark.docs
def test_site_links_the_theory_notes_from_the_guides(site):
    out, _ = site
    html = (out / "predict.html").read_text(encoding="utf-8")
    assert 'href="theory/05_fixed_point.html' in html


@pytest.mark.docs
def test_api_reference_covers_every_public_name_and_command(site):
    import freeattn
    from freeattn import plotting

    out, _ = site
    index = (out / "api" / "index.html").read_text(encoding="utf-8")
    names = [f"freeattn.{name}" for name in freeattn.__all__ if not name.startswith("__")]
    names += [f"freeattn.plotting.{name}" for name in plotting.__all__]
    for name in names:
        page = out / "api" / "generated" / f"{name}.html"
        assert page.is_file(), f"no API page for {name}: add it to docs/api/index.rst"
        assert f'id="{name}"' in page.read_text(encoding="utf-8"), name
        assert f'href="generated/{name}.html' in index, name
    cli = (out / "api" / "cli.html").read_text(encoding="utf-8")
    commands = next(action.choices for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    assert len(commands) >= 9
    for command, parser in commands.items():
        section = cli.split(f'id="freeattn-{command}"', 1)[1].split("<h3>", 2)[1]  # heading to next command
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in section, f"freeattn {command} {option}"
