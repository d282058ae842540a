"""Reading a CSV recording: the delimiter, whether the first row is a header, numeric
cells (text in a numeric column is a one-line error naming the line)."""

from __future__ import annotations

import csv
import dataclasses
import io
import re

import numpy as np

from .._errors import CLIError


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _delimiter(sample: str) -> str | None:
    """`,`, `;` or tab if the sample uses one; None: whitespace-separated."""
    for d in (",", ";", "\t"):
        if d in sample:
            return d
    return None


def _csv_rows(path: str):
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise CLIError(f"{path}: not a text file; expected a CSV of numbers (T rows × N "
                       "columns).") from None
    delim = _delimiter(text[:8192])
    lines = io.StringIO(text)
    rows = csv.reader(lines, delimiter=delim) if delim else (ln.split() for ln in lines)
    for lineno, row in enumerate(rows, start=1):
        row = [c.strip() for c in row]
        if not any(row) or row[0].startswith("#"):
            continue
        yield lineno, row


_INT = re.compile(r"[0-9]+")


def _is_header(row: list[str], following: list[str] | None) -> bool:
    """A row without numbers, or pandas' labels of an unnamed frame: `0,1,…` after optional
    leading names or an empty index cell (`,0,1`). A lone `0` is a header only when the next
    row is not integers too (else it is the first value of an integer series)."""
    lead = 0
    while lead < len(row) and not (row[lead] and _is_number(row[lead])):
        lead += 1
    tail = row[lead:]
    if not tail:
        return True
    if tail != [str(j) for j in range(len(tail))]:
        return False
    if lead or len(tail) >= 2:
        return True
    return following is not None and not all(_INT.fullmatch(c) for c in following)


@dataclasses.dataclass
class _Table:
    x: np.ndarray  # (T, C) float64, NaN where a cell is empty or text
    header: list[str] | None
    lines: np.ndarray
    text: dict  # column → (line, cell) of its first non-numeric cell


def read_csv(path: str) -> _Table:
    """The cells of a CSV (a first row as described in `_is_header` is the header); text
    cells are recorded per column, and reported only if their column is used."""
    rows = list(_csv_rows(path))
    header = None
    if rows and _is_header(rows[0][1], rows[1][1] if len(rows) > 1 else None):
        header = rows.pop(0)[1]
        dup = next((n for n in header if header.count(n) > 1), None)
        if dup is not None:
            raise CLIError(f"{path}: the header names the column {dup!r} more than once; "
                           "expected one name per column.")
    if not rows:
        raise CLIError(f"{path}: no data rows; expected T rows of N numbers.")
    width = len(header) if header is not None else len(rows[0][1])
    values, lines, text = [], [], {}
    for lineno, row in rows:
        if len(row) != width:
            what = "the header" if header is not None else "the first row"
            raise CLIError(f"{path}: line {lineno} has {len(row)} fields; expected {width} "
                           f"(as {what}).")
        parsed = []
        for j, c in enumerate(row):
            try:
                parsed.append(float(c) if c else np.nan)
            except ValueError:
                parsed.append(np.nan)
                text.setdefault(j, (lineno, c))
        values.append(parsed)
        lines.append(lineno)
    return _Table(np.asarray(values, np.float64), header, np.asarray(lines), text)


def _text_in(path: str, table: _Table | None, names, idx) -> None:
    for j in idx if table is not None else ():
        if j in table.text:
            lineno, c = table.text[j]
            col = repr(names[j]) if table.header is not None else str(j)
            raise CLIError(f"{path}: line {lineno}, column {col}: {c!r} is not a number; "
                           "expected numeric columns (one header row is allowed).")


# ------------------------------------------------------------------------------ .npy / .npz
