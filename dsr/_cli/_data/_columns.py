"""What the columns of a recording mean: the time axis, an index or counter (not
variables), `--columns`, matching a further file's columns to the training data's by name,
and the orientation (time along the rows)."""

from __future__ import annotations

import numpy as np

from .._errors import CLIError
from ._series import Layout

TIME_NAMES = ("time", "t")  # `time` in any case, `t` lower case (`T` is often a temperature)


def _check_orientation(path: str, x: np.ndarray, named: bool, columns, like) -> str | None:
    """Refuse what cannot be a (T, N) recording; returns a note on the rule that read a file
    with fewer rows than columns as it is."""
    T, C = x.shape
    if T == 1:
        raise CLIError(f"{path}: one row of {C} value(s) — a single time step; expected T ≥ 2 "
                       "rows (time steps) × N columns (variables)" +
                       (" (for one variable over time, write its values as one column)."
                        if C > 1 and not named else "."))
    if T == 0 or C == 0:
        raise CLIError(f"{path}: an empty array of shape {x.shape}; expected T rows (time "
                       "steps) × N columns (variables).")
    if T >= C:
        return None
    if like is not None:
        return (f"{T} rows × {C} columns read as {T} time steps (the run has "
                f"{len(like.names)} variables)")
    if named:
        return f"{T} rows × {C} columns read as {T} time steps (the header names the columns)"
    if columns is not None:
        return f"{T} rows × {C} columns read as {T} time steps (--columns picks the columns)"
    raise CLIError(f"{path}: {T} rows but {C} columns; with no header naming the columns and "
                   "no run to compare with, time must run along the longer axis — transpose "
                   f"the array if time runs along its columns, or, if it holds {T} time steps "
                   f"of {C} variables, name them (a header row, or --columns).")


# ------------------------------------------------------------------------------ columns


def _is_time_name(name: str) -> bool:
    return name.lower() == TIME_NAMES[0] or name == TIME_NAMES[1]


def _is_counter(col: np.ndarray) -> bool:
    """Strictly increasing integers over at least 3 rows: a sample index, not a variable."""
    return (len(col) >= 3 and bool(np.all(np.isfinite(col))) and bool(np.all(col == np.round(col)))
            and bool(np.all(np.diff(col) > 0)))


def _not_variables(x, names, named, table) -> dict[int, str]:
    """`{column: why}` for the columns that are not variables (see the module docstring)."""
    out = {}
    for j, name in enumerate(names):
        if named and j == 0 and (name == "" or name.lower() == "index" or name == "Unnamed: 0"):
            out[j] = "an index column"
        elif named and _is_time_name(name) and "time" not in out.values():
            out[j] = "time"
        elif (table is None or j not in table.text) and _is_counter(x[:, j]):
            out[j] = "a counter: strictly increasing integers"
    return out


def _describe_left_out(names, left: dict[int, str]) -> str:
    parts = [f"{names[j]!r} ({why})" for j, why in left.items() if why != "time"]
    return ("not variables, left out: " + ", ".join(parts) +
            " — name a column in --columns to use it")


def shown(names: list, most: int = 8) -> str:
    """A list of column names for a message: the first few of a long one."""
    if len(names) <= most:
        return str(list(names))
    return f"[{', '.join(map(repr, names[:most - 2]))}, …, {names[-1]!r}] ({len(names)})"


def _select(path: str, names, columns) -> list[int]:
    idx = []
    for c in columns:
        if c in names:
            idx.append(names.index(c))
        elif c.lstrip("-").isdigit() and -len(names) <= int(c) < len(names):
            idx.append(int(c) % len(names))
        else:
            raise CLIError(f"{path}: no column {c!r}; columns are {names} (or indices 0.."
                           f"{len(names) - 1}).")
    return idx


def _by_name(path: str, names, left: dict[int, str], like: Layout) -> tuple[list[int], str]:
    """The columns of `like.names`, in that order; other columns must be droppable."""
    missing = [n for n in like.names if n not in names]
    extra = [n for j, n in enumerate(names) if n not in like.names and j not in left]
    if missing or extra:
        what = "; ".join(w for w in (f"missing {missing}" if missing else "",
                                     f"extra {extra}" if extra else "") if w)
        raise CLIError(f"{path}: has the columns {shown(names)}; the training data has "
                       f"{shown(like.names)} "
                       f"({what}); files with a header are matched by column name — rename "
                       "the columns, or choose them with --columns.")
    idx = [names.index(n) for n in like.names]
    note = "" if idx == sorted(idx) else (
        f"columns matched by name: the file's order {[names[j] for j in sorted(idx)]} is "
        f"read as {like.names}")
    return idx, note


def _time_step(t: np.ndarray, lines) -> tuple[float | None, str | None]:
    """`(dt, None)` for a uniform time column, `(None, why not)` otherwise."""
    where = (lambda i: f"line {lines[i]}") if lines is not None else (lambda i: f"row {i}")
    d = np.diff(t)
    bad = np.flatnonzero(~(d > 0))
    if bad.size:
        return None, f"is not strictly increasing ({where(bad[0] + 1)})"
    step = np.median(d)
    off = np.flatnonzero(np.abs(d - step) > 0.1 * step)
    if off.size:
        return None, (f"is not uniformly sampled: steps from {d.min():g} to {d.max():g} "
                      f"(first irregular step: {d[off[0]]:g} at {where(off[0] + 1)})")
    dt = (t[-1] - t[0]) / (len(t) - 1)
    return float(dt), None
