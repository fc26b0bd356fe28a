"""The documentation runs (issue 5: "the code blocks in the docs run in the test suite").

- ```python blocks in docs/*.md and README.md are doctests (``>>>`` prompts and their
  expected output); all blocks of one page share a namespace, in page order.
- ```console blocks hold ``$ freeattn ...`` commands followed by their
  output; each command runs through ``freeattn._cli.main`` and its output
  must match the page (whitespace-normalized).
- ```bash blocks are shown, not run (installs, long Monte Carlo runs).
- docs/api.md is generated from the docstrings by docs/build_api.py and must
  be up to date.
- Relative links between the docs (and into theory/ and docs/figures/) point
  at files that exist.
"""

import doctest
import importlib.util
import io
import pathlib
import re
import shlex

import pytest

from freeattn._cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# The README is a page too: its example runs once the draft is integrated.
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "api.md") + [ROOT / "README.md"]
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


def test_api_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("build_api", DOCS / "build_api.py")
    build_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_api)
    expected = build_api.render()
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == expected, "docs/api.md is out of date: run python docs/build_api.py"


@pytest.mark.parametrize("page", PAGES + [DOCS / "api.md"], ids=_ids(PAGES) + ["api.md"])
def test_relative_links_resolve(page):
    # The README draft is written for the repository root, where it will live.
    base = ROOT if page.name == "README.md" else page.parent
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (base / target).resolve().exists(), f"{page.name}: broken link {target}"


def test_api_reference_covers_every_public_name_and_command():
    import freeattn
    from freeattn import plotting

    text = (DOCS / "api.md").read_text(encoding="utf-8")
    for name in freeattn.__all__:
        if not name.startswith("__"):
            assert f"### `freeattn.{name}`" in text, name
    for name in plotting.__all__:
        assert f"### `freeattn.plotting.{name}`" in text, name
    for command in ("coeffs", "law", "edge", "threshold", "validate", "plot", "reproduce"):
        assert f"### `freeattn {command}`" in text, command
    # numpydoc section underlines must not leak into markdown as setext headings.
    assert "\n----------\n" not in text
