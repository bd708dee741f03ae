"""CSV and text tables: one row per line, numbers as integers or decimals, written back exactly."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from .._validate import expect_map, field_int, field_str, short
from ..errors import CorruptDataError
from ._signal import SOURCE_PIECE, Signal

#: Field separators tried on the first data line, in this order; none of them: whitespace.
CSV_DELIMITERS = (",", ";", "\t")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.I)


#: How a CSV column's numbers are written, when every field of it has one form (the writer then
#: gives back the same text): canonical integers, or decimals with a fixed number of digits after
#: the point (the decimal float mode then codes them as integers, ``ubpe.frontend.floatcodes``).
_CANONICAL_INT = re.compile(r"-?(0|[1-9]\d*)\Z")
_FIXED_DECIMALS = re.compile(r"-?(0|[1-9]\d*)\.(\d+)\Z")
#: Most digits after the point a fixed-decimal column may have (float64's exact decimals).
MAX_CSV_DECIMALS = 15


def _column_format(texts: list[str]) -> str:
    """How every field of one column is written: "d" (canonical integers), the digits after the
    point of decimals that all have that many (e.g. "2"), or "r" (any other form: written back
    as Python's shortest repr of the float)."""
    if all(_CANONICAL_INT.match(t) for t in texts):
        return "d"
    first = _FIXED_DECIMALS.match(texts[0]) if texts else None
    if first is not None and len(first.group(2)) <= MAX_CSV_DECIMALS:
        d = len(first.group(2))
        if all((m := _FIXED_DECIMALS.match(t)) is not None and len(m.group(2)) == d for t in texts):
            return str(d)
    return "r"


def _is_number(field: str) -> bool:
    return bool(_INT.match(field) or _FLOAT.fullmatch(field))


def _split(line: str, delimiter: str) -> list[str]:
    return line.split() if delimiter == " " else [t.strip() for t in line.split(delimiter)]


def read(name: str, column: int | str | None = None) -> Signal:
    with open(name, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not a UTF-8 text file ({e}); read binary files with --dtype or --bytes") from None
    lines = [(i, line.split("#", 1)[0].strip()) for i, line in enumerate(text.splitlines(), 1)]
    lines = [(i, line) for i, line in lines if line]
    if not lines:
        if column is not None:
            raise ValueError(f"{name}: no columns to select (the file holds no values)")
        return Signal(np.zeros(0, dtype=np.int64), None, {"format": "csv"})
    delimiter = next((d for d in CSV_DELIMITERS if d in lines[0][1]), " ")
    rows = [(i, _split(line, delimiter)) for i, line in lines]
    header: list[str] | None = None
    if not all(_is_number(t) for t in rows[0][1]):
        header, rows = rows[0][1], rows[1:]
    width = len(header) if header is not None else len(rows[0][1])
    for i, fields in rows:
        if len(fields) != width:
            first = "the header" if header is not None else f"line {rows[0][0]}"
            raise ValueError(f"{name}: line {i}: {len(fields)} fields, but {first} has {width} "
                             f"(separator {delimiter!r})")
    flat = header is None and len(rows) == 1  # one line of values: a flat sequence
    index = _csv_column(name, column, header, 1 if flat else width)
    if flat:
        fields = [(rows[0][0], j, t) for j, t in enumerate(rows[0][1])]
        n_cols = 1
    else:
        cols = range(width) if index is None else [index]
        fields = [(i, j, row[j]) for i, row in rows for j in cols]
        n_cols = len(cols)
    values = _parse_numbers(name, fields, header)
    if n_cols > 1:
        values = values.reshape(-1, n_cols)
    source: dict[str, Any] = {"format": "csv", "delimiter": delimiter, "columns": 1 if flat else width}
    if values.dtype.kind == "f":  # each column's written form, so that the writer gives the same text
        by_column: dict[int, list[str]] = {}
        for _, j, t in fields:
            by_column.setdefault(j, []).append(t)
        source["formats"] = ",".join(_column_format(by_column[j]) for j in sorted(by_column))
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        source["newline"] = "\r\n"
    if header is not None:
        line = delimiter.join(header) if delimiter != " " else " ".join(header)
        if len(line) <= SOURCE_PIECE:
            source["header"] = line
        else:
            warnings.warn(f"{name}: the header line has {len(line)} characters, more than the {SOURCE_PIECE} a "
                          "container keeps: it will not be written back", stacklevel=3)
    if index is not None and not flat:
        source["column"] = index
    return Signal(values, None, source)


def _csv_column(name: str, column: int | str | None, header: list[str] | None, width: int) -> int | None:
    """The 0-based index ``column`` selects (a header name, or an index), None for all."""
    if column is None:
        return None
    if isinstance(column, str):
        if header is not None and column in header:
            return header.index(column)
        if not column.strip().isdigit():
            names = ", ".join(map(repr, header)) if header is not None else "none: the file has no header line"
            raise ValueError(f"{name}: no column named {column!r} (columns: {names})")
        column = int(column)
    if isinstance(column, bool) or not isinstance(column, (int, np.integer)):
        raise TypeError(f"column must be a name (str) or a 0-based index (int), got {type(column).__name__}")
    if not 0 <= column < width:
        raise ValueError(f"{name}: column index {column} is out of range: the file has {width} column(s), "
                         f"indices 0 to {width - 1}")
    return int(column)


def _parse_numbers(name: str, fields: list[tuple[int, int, str]], header: list[str] | None) -> np.ndarray:
    """int64 if every field is an integer, float64 if some are floats; errors name line and column."""
    texts = [t for _, _, t in fields]
    try:
        return np.array(texts).astype(np.int64) if texts else np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        pass
    is_float = False
    for line, col, t in fields:
        where = f"{name}: line {line}, column {col if header is None else repr(header[col])}"
        if _INT.match(t):
            if not -(2**63) <= int(t) < 2**63:
                raise ValueError(f"{where}: {t} does not fit in a 64-bit integer")
        elif _FLOAT.fullmatch(t):
            is_float = True
        else:
            raise ValueError(f"{where}: {t!r} is not a number" if t else f"{where}: empty field")
    if is_float:  # compress needs step=/bits= (--step/--bits) unless they lie on an exact grid
        return np.array([float(t) for t in texts], dtype=np.float64)
    return np.array(texts).astype(np.int64)  # pragma: no cover (the fast path took these)


_CSV_KEYS = ("format", "delimiter", "columns")


def check_source(source: dict) -> dict:
    where = "source (csv metadata)"
    expect_map(source, where, _CSV_KEYS, ("header", "column", "formats", "newline"))
    field_str(source, "delimiter", where=where, choices=(*CSV_DELIMITERS, " "))
    width = field_int(source, "columns", 1, 2**31, where=where)
    if "column" in source:
        field_int(source, "column", 0, width - 1, where=where)
    if "newline" in source:
        field_str(source, "newline", where=where, choices=("\r\n",))
    if "formats" in source:
        forms = field_str(source, "formats", where=where).split(",")
        if len(forms) not in (1, width) or not all(f in ("d", "r") or (f.isdigit() and 1 <= int(f) <= MAX_CSV_DECIMALS)
                                                   for f in forms):
            raise CorruptDataError(f"{where}: 'formats' {short(source['formats'])} does not describe "
                                   f"{width} column(s)")
    if "header" in source:
        names = _split(field_str(source, "header", where=where), source["delimiter"])
        if len(names) != width or not all(names) or "\n" in source["header"] or "#" in source["header"]:
            raise CorruptDataError(f"{where}: the header {short(source['header'])} does not name "
                                   f"{width} column(s)")
    return source


def _format_number(v: Any, form: str = "r") -> str:
    """``v`` written as a column of ``form`` writes it (:func:`_column_format`)."""
    if form == "d":
        return str(int(v)) if isinstance(v, float) and v == v and abs(v) != float("inf") else str(v)
    if form != "r" and isinstance(v, float):
        return f"{v:.{int(form)}f}"
    return repr(float(v)) if isinstance(v, float) else str(v)


def to_bytes(values: np.ndarray, name: str, source: dict | None) -> bytes:
    if values.dtype.kind not in "iubf":
        raise TypeError(f"{name}: CSV output holds numbers, got dtype {values.dtype}")
    items = values.astype(np.int64) if values.dtype.kind == "b" else values
    if items.ndim not in (1, 2):
        raise ValueError(f"{name}: CSV output holds 1-D or 2-D data, got shape {values.shape}")
    delimiter, head, forms, newline = ",", None, None, "\n"
    if source is not None:
        delimiter = source["delimiter"]
        newline = source.get("newline", "\n")
        if "formats" in source:
            forms = source["formats"].split(",")
        if "header" in source:
            names = _split(source["header"], delimiter)
            if "column" in source and items.ndim == 1:
                head = names[source["column"]]
            elif len(names) == (items.shape[1] if items.ndim == 2 else 1):
                head = source["header"]
    lines = [head] if head is not None else []
    if items.ndim == 1:
        form = forms[source["column"]] if forms and "column" in source and len(forms) > 1 else (
            forms[0] if forms and len(forms) == 1 else "r")
        lines += (_format_number(v, form) for v in items.tolist())
    elif forms is not None and len(forms) == items.shape[1]:
        lines += (delimiter.join(_format_number(v, f) for v, f in zip(row, forms)) for row in items.tolist())
    else:
        lines += (delimiter.join(map(_format_number, row)) for row in items.tolist())
    return "".join(line + newline for line in lines).encode("utf-8")
