"""One presentation layer: text, markdown, csv and json from one description.

Results are described as data -- a :class:`Document` made of free text lines,
name/value :class:`Record` s and :class:`Table` s of raw values -- and
:func:`render` prints that description in any of :data:`FORMATS`.  The
command line and the validation reports both render through it, so a number
looks the same, and follows the same JSON policy, wherever it is printed.

Policy
------
- **json**: non-finite floats (NaN, +inf, -inf) are written as ``null`` (JSON
  has no such numbers; ``json.dumps`` would write the invalid tokens ``NaN``
  and ``Infinity``); numpy scalars and arrays become Python numbers and
  lists, tuples become lists, dataclasses become objects of their fields,
  mapping keys become strings.  Finite floats keep full float64 precision.
- **csv**: floats in full float64 precision (``repr``), non-finite ones as
  ``nan``, ``inf``, ``-inf`` (what Python's ``float()`` and pandas read back),
  ``None`` as an empty cell.
- **text** and **markdown**: numbers with :data:`TABLE_DIGITS` significant
  digits unless a column gives its own format.
"""

import csv
import dataclasses
import io
import json
import math
from typing import Callable, Optional, Union

import numpy as np

__all__ = ["Column", "Document", "FORMATS", "Record", "Table", "jsonable", "render",
           "to_json"]

#: Output formats of :func:`render`.
FORMATS = ("text", "markdown", "csv", "json")

#: Significant digits of numbers in text and markdown; csv and json carry
#: full float64 precision.
TABLE_DIGITS = 8


def jsonable(value):
    """``value`` as JSON-ready Python data, non-finite floats as ``None``.

    Examples
    --------
    >>> jsonable({"x": np.array([1.0, np.inf]), 2: (np.float32(0.5), float("nan"))})
    {'x': [1.0, None], '2': [0.5, None]}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return x if math.isfinite(x) else None
    return value


def to_json(value, indent=2):
    """``json.dumps`` of :func:`jsonable` ``(value)`` (strict: no NaN tokens)."""
    return json.dumps(jsonable(value), indent=indent, allow_nan=False)


def format_number(value, digits=TABLE_DIGITS):
    """Human-readable value: ``digits`` significant digits for floats, others as ``str``."""
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{x:.{digits}g}"


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return value


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of a :class:`Table`.

    Attributes
    ----------
    name : str
        Machine name: the csv header and the json key.
    label : str, optional
        Header in text and markdown (default: ``name``).
    format : str or callable, optional
        Text/markdown cell: a ``str.format`` pattern such as ``"{:.4f}"`` or a
        function of the value (default: :data:`TABLE_DIGITS` digits).
    align : {"right", "left"}
        Alignment in text and markdown.
    """

    name: str
    label: Optional[str] = None
    format: Union[str, Callable, None] = None
    align: str = "right"

    def header(self):
        return self.name if self.label is None else self.label

    def cell(self, value):
        if self.format is None:
            return format_number(value)
        if callable(self.format):
            return self.format(value)
        return self.format.format(value)


def _column(column):
    return column if isinstance(column, Column) else Column(str(column))


@dataclasses.dataclass(frozen=True)
class Table:
    """Rows of raw values under named columns.

    Attributes
    ----------
    columns : tuple of Column or str
    rows : tuple of tuple
        One value per column (raw: numbers stay numbers until rendered).
    """

    columns: tuple
    rows: tuple

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(_column(c) for c in self.columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))

    def records(self):
        """The rows as ``{name: value}`` dicts (the json form of a table)."""
        names = [c.name for c in self.columns]
        return [dict(zip(names, row)) for row in self.rows]


@dataclasses.dataclass(frozen=True)
class Record:
    """Name/value pairs, with optional title and note lines (text/markdown only)."""

    pairs: tuple
    title: Optional[str] = None
    notes: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "pairs", tuple(tuple(p) for p in self.pairs))
        object.__setattr__(self, "notes", tuple(self.notes))


_MISSING = object()


@dataclasses.dataclass(frozen=True)
class Document:
    """What a command or a report shows, independent of the format.

    Attributes
    ----------
    blocks : tuple
        Text lines (``str``, ``""`` for a blank line), :class:`Record` s and
        :class:`Table` s, in reading order (text and markdown).
    data : object, optional
        The json payload (default: the single record as an object, or the
        single table as a list of objects).
    csv : Table or Record, optional
        What csv prints (default: the single table, else the single record).
    """

    blocks: tuple
    data: object = _MISSING
    csv: Union[Table, Record, None] = None

    def __post_init__(self):
        object.__setattr__(self, "blocks", tuple(self.blocks))

    def _structured(self):
        return [b for b in self.blocks if isinstance(b, (Table, Record))]

    def json_data(self):
        if self.data is not _MISSING:
            return self.data
        structured = self._structured()
        if len(structured) != 1:
            raise ValueError("a document with several records or tables needs explicit data")
        block = structured[0]
        return dict(block.pairs) if isinstance(block, Record) else block.records()

    def csv_block(self):
        if self.csv is not None:
            return self.csv
        tables = [b for b in self.blocks if isinstance(b, Table)]
        records = [b for b in self.blocks if isinstance(b, Record)]
        if len(tables) == 1:
            return tables[0]
        if not tables and len(records) == 1:
            return records[0]
        raise ValueError("a document without exactly one table or record needs a csv block")


def _justify(text, width, align):
    return text.ljust(width) if align == "left" else text.rjust(width)


def _text_table(table):
    header = [c.header() for c in table.columns]
    body = [[c.cell(v) for c, v in zip(table.columns, row)] for row in table.rows]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    aligns = [c.align for c in table.columns]

    def line(cells):
        return "  ".join(_justify(x, w, a) for x, w, a in zip(cells, widths, aligns)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in body])


def _markdown_table(table):
    header = [c.header() for c in table.columns]
    rule = ["---" if c.align == "left" else "---:" for c in table.columns]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    out += ["| " + " | ".join(c.cell(v) for c, v in zip(table.columns, row)) + " |"
            for row in table.rows]
    return "\n".join(out)


def _text_record(record):
    width = max((len(str(k)) for k, _ in record.pairs), default=0)
    lines = [record.title] if record.title else []
    lines += [f"{str(k).ljust(width)}  {format_number(v)}".rstrip() for k, v in record.pairs]
    return "\n".join(lines + list(record.notes))


def _markdown_record(record):
    table = Table((Column("quantity", align="left"), Column("value")), record.pairs)
    parts = [record.title] if record.title else []
    parts.append(_markdown_table(table))
    parts += list(record.notes)
    return "\n\n".join(parts)


def _csv(block):
    if isinstance(block, Record):
        block = Table([k for k, _ in block.pairs], [[v for _, v in block.pairs]])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([c.name for c in block.columns])
    for row in block.rows:
        writer.writerow([_csv_cell(v) for v in row])
    return buffer.getvalue().rstrip("\n")


def render(document, fmt="text"):
    """Render a :class:`Document` (or a single :class:`Table` / :class:`Record`).

    Parameters
    ----------
    document : Document, Table or Record
    fmt : {"text", "markdown", "csv", "json"}

    Returns
    -------
    str
        Without a trailing newline.

    Raises
    ------
    ValueError
        On an unknown format.

    Examples
    --------
    >>> table = Table(["x", "pdf"], [[0.0, float("inf")], [1.0, 0.25]])
    >>> print(render(table, "text"))
    x   pdf
    -  ----
    0   inf
    1  0.25
    >>> print(render(table, "json"))
    [
      {
        "x": 0.0,
        "pdf": null
      },
      {
        "x": 1.0,
        "pdf": 0.25
      }
    ]
    >>> print(render(table, "csv"))
    x,pdf
    0.0,inf
    1.0,0.25
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if isinstance(document, (Table, Record)):
        document = Document((document,))
    if fmt == "json":
        return to_json(document.json_data())
    if fmt == "csv":
        return _csv(document.csv_block())
    if fmt == "text":
        return "\n".join(_text_table(b) if isinstance(b, Table) else
                         _text_record(b) if isinstance(b, Record) else str(b)
                         for b in document.blocks)
    # markdown: consecutive text lines form one paragraph; blocks are separated
    # by blank lines (a table needs them)
    paragraphs, lines = [], []
    for block in document.blocks:
        if isinstance(block, (Table, Record)) or not str(block):
            if lines:
                paragraphs.append("\n".join(lines))
                lines = []
            if isinstance(block, Table):
                paragraphs.append(_markdown_table(block))
            elif isinstance(block, Record):
                paragraphs.append(_markdown_record(block))
        else:
            lines.append(str(block))
    if lines:
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)
