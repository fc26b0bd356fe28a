"""The presentation layer (freeattn.core._render): one description, four formats, one JSON policy.

Expected outputs are written out by hand for tiny inputs.
"""

import csv
import dataclasses
import io
import json
import math

import numpy as np
import pytest

from freeattn.core._render import (Column, Document, Record, Table, format_number, jsonable, render,
                              to_json)


def test_json_policy_non_finite_is_null():
    """NaN, +inf and -inf become null wherever they sit; numpy types become Python
    ones; tuples become lists; dataclasses become objects; keys become strings."""

    @dataclasses.dataclass
    class Point:
        x: float
        y: tuple

    value = {1: np.array([0.5, np.nan]), "p": Point(np.float32(2.0), (np.inf, -np.inf)),
             "n": np.int64(3), "b": np.bool_(True), "s": "text"}
    assert jsonable(value) == {"1": [0.5, None], "p": {"x": 2.0, "y": [None, None]},
                               "n": 3, "b": True, "s": "text"}
    text = to_json({"a": float("nan"), "b": [1.0, float("inf")]}, indent=None)
    assert text == '{"a": null, "b": [1.0, null]}'
    # finite floats keep every bit
    x = 0.1 + 0.2
    assert json.loads(to_json([x]))[0] == x


def test_table_in_every_format():
    table = Table([Column("model", align="left"), Column("ks", "KS", format="{:.3f}"), "n"],
                  [["attention", 0.12345, 10], ["linear", float("nan"), 2]])
    assert render(table, "text").splitlines() == [
        "model         KS   n",
        "---------  -----  --",
        "attention  0.123  10",
        "linear       nan   2",
    ]
    assert render(table, "markdown").splitlines() == [
        "| model | KS | n |",
        "|---|---:|---:|",
        "| attention | 0.123 | 10 |",
        "| linear | nan | 2 |",
    ]
    rows = list(csv.reader(io.StringIO(render(table, "csv"))))
    assert rows == [["model", "ks", "n"], ["attention", "0.12345", "10"],
                    ["linear", "nan", "2"]]
    assert math.isnan(float(rows[2][1]))           # what float() reads back
    assert json.loads(render(table, "json")) == [{"model": "attention", "ks": 0.12345, "n": 10},
                                                 {"model": "linear", "ks": None, "n": 2}]


def test_record_in_every_format():
    record = Record([("beta", 1.0), ("theta1", np.e - 1), ("edge", np.inf)], title="coefficients",
                    notes=("a note",))
    assert render(record, "text").splitlines() == [
        "coefficients", "beta    1", "theta1  1.7182818", "edge    inf", "a note"]
    assert json.loads(render(record, "json")) == {"beta": 1.0, "theta1": np.e - 1, "edge": None}
    assert render(record, "csv").splitlines() == ["beta,theta1,edge",
                                                  f"1.0,{np.e - 1!r},inf"]
    assert "| theta1 | 1.7182818 |" in render(record, "markdown")


def test_document_blocks_and_explicit_payloads():
    table = Table(["x"], [[1.0]])
    doc = Document(["title", "", Record([("a", 1)]), table], data={"x": [1.0]}, csv=table)
    assert render(doc, "text") == "title\n\na  1\nx\n-\n1"
    assert render(doc, "json") == to_json({"x": [1.0]})
    assert render(doc, "csv") == "x\n1.0"
    # markdown: text lines form a paragraph, blocks are separated by blank lines
    assert render(Document(["one", "two", table]), "markdown") == "one\ntwo\n\n| x |\n|---:|\n| 1 |"
    with pytest.raises(ValueError, match="explicit data"):
        render(Document([table, Record([("a", 1)])]), "json")
    with pytest.raises(ValueError, match="csv block"):
        render(Document([table, table]), "csv")
    with pytest.raises(ValueError, match="format must be one of"):
        render(table, "xml")


def test_format_number():
    assert format_number(1 / 3) == "0.33333333"
    assert format_number(3) == "3" and format_number(True) == "True"
    assert format_number(None) == "None" and format_number("1/48") == "1/48"
    assert format_number(float("-inf")) == "-inf"
