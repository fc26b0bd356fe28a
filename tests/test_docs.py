"""The documentation runs: its code blocks run in the test suite, and the site builds.

- ```python blocks in docs/*.md and README.md are doctests (``>>>`` prompts and their
  expected output); all blocks of one page share a namespace, in page order (the
  tutorial, docs/tutorial.md, is one of these pages).  Each page runs as plain
  ``python -m doctest PAGE`` reads it: the whole page is one docstring, with no
  option flags (a closing fence right under an expected output would be read as
  output), so every python block ends with a blank line; an example that needs a
  flag says so inline (``# doctest: +ELLIPSIS``).  Without PyTorch, outside CI
  (``FREEATTN_CI``), a page runs up to its first block that imports torch and the
  test is then skipped; under CI a missing torch fails.
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

import pytest

from freeattn.cli._cli import build_parser, main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# The README is a page too: its example runs once the draft is integrated.
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", flags=re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")

#: Option flags of the page doctests: none, as plain ``python -m doctest PAGE``.
OPTIONS = 0


def _blocks(path, language):
    return [body for lang, body in FENCE.findall(path.read_text(encoding="utf-8"))
            if lang == language]


def _ids(paths):
    return [p.name for p in paths]


PYTHON_PAGES = [p for p in PAGES if _blocks(p, "python")]
CONSOLE_PAGES = [p for p in PAGES if _blocks(p, "console")]


def _first_torch_line(page):
    """Line (0-based) of the first python block of ``page`` that imports torch, or None."""
    text = page.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        if match.group(1) == "python" and re.search(r"^>>> import torch", match.group(2),
                                                    flags=re.M):
            return text.count("\n", 0, match.start())
    return None


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_ids(PYTHON_PAGES))
def test_python_blocks_run(page, tmp_path, monkeypatch):
    """The page passes plain ``python -m doctest PAGE`` (see the module docstring)."""
    monkeypatch.chdir(tmp_path)          # examples that write files write them here
    for i, body in enumerate(_blocks(page, "python")):
        assert ">>>" in body, f"{page.name} python block {i} is not in doctest form"
        assert body.endswith("\n\n"), (f"{page.name} python block {i}: a blank line must "
                                        f"end the block (plain doctest reads the fence "
                                        f"as expected output otherwise)")
    test = doctest.DocTestParser().get_doctest(page.read_text(encoding="utf-8"),
                                               {"__name__": "__docs__"}, page.name,
                                               str(page), 0)
    dropped = 0
    torch_line = _first_torch_line(page)
    if torch_line is not None and importlib.util.find_spec("torch") is None:
        if os.environ.get("FREEATTN_CI"):
            pytest.fail(f"PyTorch is missing: CI installs the torch extra ({page.name})")
        kept = [ex for ex in test.examples if ex.lineno < torch_line]
        dropped, test.examples = len(test.examples) - len(kept), kept
    output = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    runner.run(test, out=output.write)
    assert runner.failures == 0, output.getvalue()
    assert runner.tries > 0 or dropped
    if dropped:
        pytest.skip(f"{page.name}: {dropped} examples from line {torch_line + 1} on need "
                    f"PyTorch (pip install \".[torch]\"); the {runner.tries} before passed")


def test_a_fence_under_the_output_fails_plain_doctest():
    """Why the blank line: plain doctest reads a closing fence that follows an expected
    output as part of that output, so the example fails; with the blank line it passes."""
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=OPTIONS)
    for text, failures in (("```python\n>>> 1 + 1\n2\n```\n", 1),
                           ("```python\n>>> 1 + 1\n2\n\n```\n", 0)):
        before = runner.failures
        runner.run(parser.get_doctest(text, {}, "fence", None, 0), out=lambda _: None)
        assert runner.failures - before == failures, text


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
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(work / "docs"), str(out)],
        capture_output=True, text=True, cwd=work)
    assert build.returncode == 0, f"sphinx-build failed:\n{build.stdout}\n{build.stderr}"
    assert build.stderr.strip() == "", build.stderr     # -q: only warnings reach stderr
    return out


@pytest.mark.docs
def test_site_builds_with_warnings_as_errors(site):
    out = site
    for page in ["index", "tutorial", "quickstart", "predict", "validate", "plot",
                 "gallery", "api/index", "api/cli", "theory/README", "theory/05_fixed_point"]:
        assert (out / f"{page}.html").is_file(), page


@pytest.mark.docs
def test_site_renders_the_theory_equations(site):
    """Every display equation of the theory notes, with its \\tag{N.k}, is a math block
    of the built page (MathJax typesets it in the browser)."""
    out = site
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
    out = site
    html = (out / "predict.html").read_text(encoding="utf-8")
    assert 'href="theory/05_fixed_point.html' in html


@pytest.mark.docs
def test_api_reference_covers_every_public_name_and_command(site):
    import freeattn
    from freeattn import plotting

    out = site
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
