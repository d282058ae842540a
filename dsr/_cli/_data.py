"""Reading a user's recordings: `.npy` (T, N), `.csv` (optional header row, `--columns`) and
`.npz` (a `data_gen` data set, or one array chosen by `--key`), and standardizing them.

Every problem is one `CLIError` line that names the file and says what was expected: a
missing file, a 1-D series, a wrong shape, text in a numeric column, rows with NaN, values
beyond the model's float range, a damaged or inconsistent `.npy`/`.npz` header (checked
against the file size before anything is allocated).

**Columns.** A first row is a header when it holds no number, or when its numbers are the
column labels `0, 1, …` that pandas writes for an unnamed frame. Without `--columns`, these
columns are not variables (each is named in a printed note and in the run's config): a
leading unnamed / `index` / `Unnamed: 0` column (pandas' index), a column named `time` or
`t` (the time axis: its step is the recording's `dt` when uniform; an error names it when
not, unless the step is already known), and a column of strictly increasing integers (a
sample counter). **Further files** (test, context, validation, more training files, inputs)
are matched by column name when both they and the training data have a header — reordered
to the training order; missing or extra names are an error naming both — and by position
(the number of columns) otherwise.

**Orientation.** Time runs along the rows. A file with fewer rows than columns is read as it
is when a header names its columns, `--columns` picks them, or the run's variable count is
known (a further file); only a first training file without any of these is refused.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import math
import os
import re
import zipfile
import zlib

import numpy as np

from ._errors import CLIError

FORMATS = (".npy", ".csv", ".txt", ".tsv", ".npz")
TIME_NAMES = ("time", "t")  # `time` in any case, `t` lower case (`T` is often a temperature)


@dataclasses.dataclass
class Series:
    """One loaded file: `x` (T, N) float64, column `names`, `dt` (from a data_gen set or a
    uniform time column) and `info` (path, sha256, format, shape, array key, columns) for the
    run's config."""

    x: np.ndarray
    names: list[str]
    dt: float | None
    info: dict
    lines: np.ndarray | None = None  # CSV: the file line of every row (for messages)
    named: bool = False  # the names come from a header row
    time: str | None = None  # the time column's name
    irregular: str | None = None  # why the time column gives no step (not uniform, text)
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Layout:
    """What further files must match: the variables' `names`, whether they came from a
    header (`named`: then files with a header are matched by name), and the step `dt`."""

    names: list
    named: bool
    dt: float | None = None

    @classmethod
    def of(cls, s: Series) -> Layout:
        return cls(list(s.names), s.named, s.dt)

    @classmethod
    def of_run(cls, cfg: dict) -> Layout:
        data = cfg["data"]
        first = (data.get("files") or [{}])[0]
        named = first.get("named")
        if named is None:  # a run made before this was recorded: a CSV with its own names
            named = (first.get("format") in ("csv", "txt", "tsv")
                     and data["names"] != [f"x{j}" for j in range(len(data["names"]))])
        return cls(list(data["names"]), bool(named), data.get("dt"))


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


def _read_npy(f, size: int, path: str, what: str) -> np.ndarray:
    """One `.npy` array from the binary file `f` holding `size` bytes; its header (shape ×
    item size) is checked against the bytes present before anything is allocated."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = read(f)
    except (ValueError, OSError, EOFError, SyntaxError) as e:
        raise CLIError(f"{path}: {what} is not a readable .npy array "
                       f"({' '.join(str(e).split())[:120]}).") from None
    if dtype.hasobject:
        raise CLIError(f"{path}: {what} holds Python objects (dtype {dtype}); expected "
                       "numbers.")
    need = math.prod(shape) * dtype.itemsize
    have = size - f.tell()
    if need > have:
        raise CLIError(f"{path}: {what}'s header says shape {tuple(shape)} of {dtype} "
                       f"({need:,} bytes) but {max(have, 0):,} bytes follow; the file is "
                       "truncated or damaged.")
    data = f.read(need)
    if len(data) != need:
        raise CLIError(f"{path}: {what} is truncated ({len(data):,} of {need:,} bytes).")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


def _load_npy(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04":
            raise CLIError(f"{path}: is an .npz archive with an .npy name; rename it to .npz "
                           "(and pick the array with --key if it holds several).")
        f.seek(0)
        return _read_npy(f, os.fstat(f.fileno()).st_size, path, "the file")


_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
               NotImplementedError, RuntimeError)


def _npz_member(path: str, zf: zipfile.ZipFile, member: str, name: str) -> np.ndarray:
    try:
        info = zf.getinfo(member)
        with zf.open(info) as f:
            return _read_npy(f, info.file_size, path, f"the array {name!r}")
    except CLIError:
        raise
    except _ZIP_ERRORS as e:
        raise CLIError(f"{path}: the array {name!r} cannot be read; the archive is damaged "
                       f"({type(e).__name__}: {' '.join(str(e).split())[:120]}).") from None


def _npz_array(path: str, role: str, key: str | None):
    """`(array, dt, key)` from a `.npz`: a data_gen set's train/test, or the array `key`."""
    try:
        zf = zipfile.ZipFile(path)
    except _ZIP_ERRORS as e:
        with open(path, "rb") as f:
            if f.read(6) == b"\x93NUMPY":
                raise CLIError(f"{path}: is an .npy array with an .npz name; rename it to "
                               ".npy.") from None
        raise CLIError(f"{path}: not a readable .npz archive ({type(e).__name__}).") from None
    with zf:
        try:
            members = {(n[:-4] if n.endswith(".npy") else n): n for n in zf.namelist()}
        except _ZIP_ERRORS as e:
            raise CLIError(f"{path}: not a readable .npz archive ({type(e).__name__}).") \
                from None
        names = list(members)
        dataset = {"train", "test", "meta"} <= set(names)
        if key is None and dataset:
            key = "train" if role == "data" else "test"
        elif key is None and len(names) == 1:
            key = names[0]
        elif key is None:
            raise CLIError(f"{path}: holds the arrays {names}; choose one with --key NAME.")
        if key not in names:
            raise CLIError(f"{path}: has no array {key!r}; it holds {names}.")
        dt = None
        if dataset:
            try:
                meta = _npz_member(path, zf, members["meta"], "meta")
                dt = float(json.loads(str(meta[()])).get("dt"))
            except (CLIError, ValueError, TypeError, AttributeError, IndexError):
                dt = None
        return _npz_member(path, zf, members[key], key), dt, key


# ------------------------------------------------------------------------------ shapes


def _check_shape(path: str, a: np.ndarray) -> np.ndarray:
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number)
                                 or np.issubdtype(a.dtype, np.bool_)):
        raise CLIError(f"{path}: expected numbers; the array has dtype {a.dtype}.")
    if np.issubdtype(a.dtype, np.complexfloating):
        raise CLIError(f"{path}: expected real numbers; the array is complex.")
    if a.ndim == 1:
        raise CLIError(f"{path}: a 1-D series of {a.shape[0]} values; expected a (T, N) array "
                       "(time along rows, one column per variable) — for one variable save "
                       "x[:, None].")
    if a.ndim != 2:
        raise CLIError(f"{path}: expected a (T, N) array (time × variables); got shape "
                       f"{a.shape}.")
    return a.astype(np.float64)


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


def _check_finite(path: str, x: np.ndarray, lines) -> None:
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if bad.size:
        where = f"line {lines[bad[0]]}" if lines is not None else f"row {bad[0]}"
        raise CLIError(f"{path}: {bad.size} of {len(x)} rows contain NaN, inf or missing "
                       f"values (first: {where}); expected complete rows — remove or "
                       "interpolate them.")


def load_series(path: str, *, role: str = "data", columns=None, key: str | None = None,
                like: Layout | None = None) -> Series:
    """Read one recording file (see the module docstring); `like`: the layout of the run
    (or of the first file) that a further file is matched to."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CLIError(f"{path}: no such file.")
    if os.path.isdir(path):
        raise CLIError(f"{path}: is a folder; expected a recording file ({', '.join(FORMATS)}).")
    ext = os.path.splitext(path)[1].lower()
    dt, lines, used_key, table, header = None, None, None, None, None
    if ext == ".npy":
        x = _check_shape(path, _load_npy(path))
    elif ext == ".npz":
        raw, dt, used_key = _npz_array(path, role, key)
        x = _check_shape(path, raw)
    elif ext in (".csv", ".txt", ".tsv"):
        table = read_csv(path)
        x, header, lines = table.x, table.header, table.lines
    else:
        raise CLIError(f"{path}: unknown file type {ext or '(none)'}; expected one of "
                       f"{', '.join(FORMATS)}.")
    named = header is not None
    names = header if named else [f"x{j}" for j in range(x.shape[1])]
    notes = [n for n in [_check_orientation(path, x, named, columns, like)] if n]
    left: dict[int, str] = {}
    if columns is not None:
        idx = _select(path, names, columns)
        if like is not None and like.named and named and [names[j] for j in idx] != like.names:
            raise CLIError(f"{path}: --columns {','.join(columns)} picks "
                           f"{shown([names[j] for j in idx])} here; the training data has "
                           f"{shown(like.names)}; files with a header are matched by column "
                           "name — pick the columns by name.")
        time_j = next((j for j, n in enumerate(names) if named and _is_time_name(n)
                       and j not in idx), None)
    else:
        left = _not_variables(x, names, named, table)
        time_j = next((j for j, why in left.items() if why == "time"), None)
        if like is not None and like.named and named:
            if time_j is not None and names[time_j] in like.names:
                del left[time_j]
                time_j = None
            idx, note = _by_name(path, names, left, like)
            notes += [note] if note else []
        else:
            idx = [j for j in range(x.shape[1]) if j not in left]
            if (like is not None and len(idx) != len(like.names)
                    and x.shape[1] == len(like.names)):  # the run's count decides
                idx, left, time_j = list(range(x.shape[1])), {}, None
            if not idx:
                raise CLIError(f"{path}: no column is a variable — the columns "
                               f"{', '.join(f'{names[j]!r} ({why})' for j, why in left.items())} "
                               "are not; name the ones to use in --columns.")
        left = {j: why for j, why in left.items() if j not in idx}
        if any(why != "time" for why in left.values()):
            notes.append(_describe_left_out(names, left))
    _text_in(path, table, names, idx)
    x, used = x[:, idx], [names[j] for j in idx]
    _check_finite(path, x, lines)
    time, irregular = None, None
    if time_j is not None:
        time = names[time_j]
        if time_j in table.text:
            lineno, cell = table.text[time_j]
            step, irregular = None, f"holds text ({cell!r}, line {lineno})"
        else:
            step, irregular = _time_step(table.x[:, time_j], lines)
        dt = step if step is not None else dt
    info = dict(path=path, abspath=os.path.abspath(path), sha256=sha256(path),
                format=ext[1:], shape=list(x.shape), key=used_key, columns=used, named=named)
    if left or time is not None:
        info.update(left_out={names[j]: why for j, why in left.items()}, time_column=time)
    return Series(x, used, dt, info, lines, named, time, irregular, notes)


def _same_step(a: float, b: float) -> bool:
    return abs(a - b) <= 0.01 * max(abs(a), abs(b))


def _check_step(s: Series, step: float | None, source: str) -> None:
    """A time column against the step already known (`--dt`, the run's or the first
    file's); with none known, the column's own step must exist."""
    path = s.info["path"]
    if s.time is None:
        return
    if s.irregular is not None:
        if step is None:
            raise CLIError(f"{path}: column {s.time!r} (the time axis) {s.irregular}; expected "
                           "a constant step — resample the recording, or give --dt to set "
                           "the step (the column is then not used).")
        s.notes.append(f"column {s.time!r} is not a variable, nor the time axis: it "
                       f"{s.irregular}; the step is {step:g} ({source})")
        s.dt = step
    elif step is not None and not _same_step(s.dt, step):
        raise CLIError(f"{path}: column {s.time!r} (the time axis) steps by {s.dt:g}; "
                       f"expected {step:g} ({source}).")
    else:
        s.notes.append(f"column {s.time!r} is the time axis (not a variable): step {s.dt:g}")


def load_recordings(paths, *, role: str, columns=None, key=None, like: Layout | None = None,
                    dt: float | None = None, quiet: bool = False) -> list[Series]:
    """Several files of one role (several trajectories): same variables in each. `like`:
    the layout a further file must match (default: the first file's; see the module
    docstring); `dt`: the step given by --dt, which a time column must agree with. Notes
    on what was read (columns left out, the time axis, reordering) are printed."""
    out = []
    for p in paths:
        ref = like if like is not None else (Layout.of(out[0]) if out else None)
        s = load_series(p, role=role, columns=columns, key=key, like=ref)
        if ref is not None and len(s.names) != len(ref.names):
            hint = (f" — it has {len(ref.names)} rows: if time runs along its columns, "
                    "transpose it" if len(s.x) == len(ref.names) else "")
            raise CLIError(f"{p}: {len(s.names)} variables {shown(s.names)}; expected "
                           f"{len(ref.names)} like the training data {shown(ref.names)}{hint}.")
        if dt is not None:
            _check_step(s, dt, "--dt")
        elif ref is not None and ref.dt is not None:
            _check_step(s, ref.dt, "the training data's step")
        else:
            _check_step(s, None, "")
        for note in [] if quiet else s.notes:
            print(f"{p}: {note}")
        out.append(s)
    return out


def run_dt(option: float | None, series: list[Series]) -> float | None:
    """The run's step: `--dt`, else the files' (a data_gen set's or a time column's)."""
    return option if option is not None else next((s.dt for s in series if s.dt is not None),
                                                  None)


def model_units(s: Series, std: Standardization | None, dtype=None) -> np.ndarray:
    """`s.x` standardized (`std` None: as it is), checked to lie in the range of the model's
    float dtype (default float32, the models' default and so the command line's) before
    anything casts it."""
    dtype = np.float32 if dtype is None else dtype
    limit = float(np.finfo(dtype).max)
    x = s.x if std is None else std.apply(s.x)
    bad = np.argwhere(~(np.abs(x) <= limit))
    if bad.size:
        i, j = bad[0]
        where = f"line {s.lines[i]}" if s.lines is not None else f"row {i}"
        value = (f"{s.x[i, j]:g} is {x[i, j]:g} after standardization (with the training "
                 "data's mean and std), which is" if std is not None and std.enabled
                 else f"{s.x[i, j]:g} is")
        raise CLIError(f"{s.info['path']}: {where}, column {s.names[j]!r}: {value} beyond the "
                       f"range of the model's {np.dtype(dtype).name} numbers (±{limit:.3g}); "
                       "expected values on the scale of the training data.")
    return x


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and std; columns whose plain sums overflow (values beyond ~1e154)
    are computed after dividing by their largest magnitude."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = x.mean(axis=0), x.std(axis=0)
    big = ~(np.isfinite(mean) & np.isfinite(std))
    if big.any():
        scale = np.abs(x[:, big]).max(axis=0)
        xs = x[:, big] / scale
        mean[big], std[big] = xs.mean(axis=0) * scale, xs.std(axis=0) * scale
    return mean, std


@dataclasses.dataclass(frozen=True)
class Standardization:
    """`x ↦ (x − mean) / std` per variable (identity when disabled)."""

    mean: np.ndarray
    std: np.ndarray
    enabled: bool = True

    @classmethod
    def of(cls, series: list[Series], enabled: bool) -> Standardization:
        x = np.concatenate([s.x for s in series])
        if not enabled:
            return cls(np.zeros(x.shape[1]), np.ones(x.shape[1]), False)
        mean, std = _moments(x)
        flat = np.flatnonzero(~(std > 0))
        if flat.size:
            raise CLIError(f"{series[0].info['path']}: column {series[0].names[flat[0]]!r} is "
                           "constant; it carries no dynamics — leave it out with --columns.")
        return cls(mean, std, True)

    def apply(self, x):
        x = np.asarray(x, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            z = (x - self.mean) / self.std
            if not np.isfinite(z).all():  # x − mean overflowed (|x| and |mean| near 1e308)
                z = np.where(np.isfinite(z), z, x / self.std - self.mean / self.std)
        return z

    def invert(self, x):
        return np.asarray(x, np.float64) * self.std + self.mean

    def as_dict(self) -> dict:
        return {"enabled": self.enabled, "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Standardization:
        return cls(np.asarray(d["mean"], np.float64), np.asarray(d["std"], np.float64),
                   bool(d["enabled"]))


def embed_series(s: Series, m: int, tau: int) -> Series:
    """A one-column recording as its delay embedding `(x_t, x_{t-τ}, …, x_{t-(m-1)τ})`
    (column 0 is the original channel; rows start at `t = (m-1)τ`)."""
    from ..metrics import delay_embed

    if s.x.shape[1] != 1:
        raise CLIError(f"{s.info['path']}: --delay-embed needs one column; the file has "
                       f"{s.x.shape[1]} {s.names} (pick one with --columns).")
    if len(s.x) <= (m - 1) * tau + 1:
        raise CLIError(f"{s.info['path']}: {len(s.x)} rows; --delay-embed {m},{tau} needs "
                       f"more than {(m - 1) * tau + 1}.")
    name = s.names[0]
    names = [f"{name}(t)"] + [f"{name}(t-{j * tau})" for j in range(1, m)]
    return dataclasses.replace(s, x=np.asarray(delay_embed(s.x, m, tau)), names=names,
                               lines=None if s.lines is None else s.lines[(m - 1) * tau:])

