"""Consistency of theory/, code and tests, equation by equation.

Every equation tagged ``\\tag{N.k}`` in ``theory/*.md`` must be checked by a
test: some file in ``tests/`` must mention ``eq. (N.k)`` (or ``eqs. (N.k)``) in a
docstring or comment next to the assertion that checks it.  Every equation
number cited by the code (``eq. (N.k)`` in ``freeattn/``) must exist in
``theory/``.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TAG = re.compile(r"\\tag\{(\d+\.\d+)\}")
# A citation may list several numbers: "eqs. (5.1), (5.2) and (5.4)".
CITE_LIST = re.compile(r"eqs?\.\s*((?:\(\d+\.\d+\)(?:\s*(?:,|and|-|to|–)\s*)?)+)")
NUMBER = re.compile(r"\((\d+\.\d+)\)")


def _tags():
    tags = {}
    for path in sorted((ROOT / "theory").glob("*.md")):
        for number in TAG.findall(path.read_text(encoding="utf-8")):
            tags.setdefault(number, []).append(path.name)
    return tags


def _cited(folder, pattern="*.py"):
    cited = set()
    for path in (ROOT / folder).rglob(pattern):
        text = path.read_text(encoding="utf-8")
        for group in CITE_LIST.findall(text):
            cited.update(NUMBER.findall(group))
    return cited


def test_theory_has_tagged_equations():
    # The notes exist and number their equations (issue 2: theory/ with numbered equations).
    assert len(_tags()) >= 10


def test_tags_are_unique():
    duplicated = {k: v for k, v in _tags().items() if len(v) > 1}
    assert not duplicated, f"equation numbers used twice: {duplicated}"


def test_tag_prefix_matches_file_number():
    # (N.k) lives in theory/NN_*.md, so a reader finds an equation from its number.
    for number, files in _tags().items():
        prefix = int(number.split(".")[0])
        assert all(f.startswith(f"{prefix:02d}_") for f in files), (number, files)


@pytest.mark.parametrize("number", sorted(_tags(), key=lambda s: tuple(map(int, s.split(".")))))
def test_every_equation_is_checked_by_a_test(number):
    assert number in _cited("tests"), (
        f"theory eq. ({number}) is not checked by any test (no 'eq. ({number})' in tests/)")


def test_code_cites_only_existing_equations():
    missing = sorted(_cited("freeattn") - set(_tags()))
    assert not missing, f"code cites equations that theory/ does not define: {missing}"
