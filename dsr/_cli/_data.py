"""Reading a user's recordings: `.npy` (T, N), `.csv` (optional header row, `--columns`) and
`.npz` (a `data_gen` data set, or one array chosen by `--key`), and standardizing them.

Every problem is one `CLIError` line that names the file and says what was expected: a
missing file, a 1-D series, a wrong shape, text in a numeric column, rows with NaN.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import zipfile

import numpy as np

from ._errors import CLIError

FORMATS = (".npy", ".csv", ".txt", ".tsv", ".npz")


@dataclasses.dataclass
class Series:
    """One loaded file: `x` (T, N) float64, column `names`, `dt` (from a data_gen set) and
    `info` (path, sha256, format, shape, array key) for the run's config."""

    x: np.ndarray
    names: list[str]
    dt: float | None
    info: dict
    lines: np.ndarray | None = None  # CSV: the file line of every row (for messages)


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


def read_csv(path: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """`(x, names, line numbers)`; a first row without any number is the header."""
    header, values, lines = None, [], []
    for lineno, row in _csv_rows(path):
        if header is None and not values and not any(_is_number(c) for c in row if c):
            header = row
            continue
        width = len(header) if header is not None else len(values[0]) if values else len(row)
        if len(row) != width:
            what = "the header" if header is not None else "the first row"
            raise CLIError(f"{path}: line {lineno} has {len(row)} fields; expected {width} "
                           f"(as {what}).")
        parsed = []
        for j, c in enumerate(row):
            try:
                parsed.append(float(c) if c else np.nan)
            except ValueError:
                col = repr(header[j]) if header is not None else str(j)
                raise CLIError(f"{path}: line {lineno}, column {col}: {c!r} is not a number; "
                               "expected numeric columns (one header row is allowed).") from None
        values.append(parsed)
        lines.append(lineno)
    if not values:
        raise CLIError(f"{path}: no data rows; expected T rows of N numbers.")
    names = header if header is not None else [f"x{j}" for j in range(len(values[0]))]
    return np.asarray(values, np.float64), names, np.asarray(lines)


def _npz_array(path: str, role: str, key: str | None):
    """`(array, dt)` from a `.npz`: a data_gen set's train/test, or the array `key`."""
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise CLIError(f"{path}: not a readable .npz archive ({type(e).__name__}).") from None
    with z:
        names = list(z.files)
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
                dt = float(json.loads(str(z["meta"][()])).get("dt"))
            except (ValueError, TypeError, AttributeError):
                dt = None
        return z[key], dt, key


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
    if a.shape[0] < a.shape[1]:
        raise CLIError(f"{path}: {a.shape[0]} time steps but {a.shape[1]} variables; expected "
                       "time along the rows (T, N) — transpose the array if time runs along "
                       "the columns.")
    return a.astype(np.float64)


def _select(path: str, x, names, columns):
    if columns is None:
        return x, names
    idx = []
    for c in columns:
        if c in names:
            idx.append(names.index(c))
        elif c.lstrip("-").isdigit() and -len(names) <= int(c) < len(names):
            idx.append(int(c) % len(names))
        else:
            raise CLIError(f"{path}: no column {c!r}; columns are {names} (or indices 0.."
                           f"{len(names) - 1}).")
    return x[:, idx], [names[i] for i in idx]


def _check_finite(path: str, x: np.ndarray, lines) -> None:
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if bad.size:
        where = f"line {lines[bad[0]]}" if lines is not None else f"row {bad[0]}"
        raise CLIError(f"{path}: {bad.size} of {len(x)} rows contain NaN, inf or missing "
                       f"values (first: {where}); expected complete rows — remove or "
                       "interpolate them.")


def load_series(path: str, *, role: str = "data", columns=None, key: str | None = None
                ) -> Series:
    """Read one recording file (see the module docstring)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CLIError(f"{path}: no such file.")
    if os.path.isdir(path):
        raise CLIError(f"{path}: is a folder; expected a recording file ({', '.join(FORMATS)}).")
    ext = os.path.splitext(path)[1].lower()
    dt, lines, used_key = None, None, None
    if ext == ".npy":
        try:
            raw = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise CLIError(f"{path}: not a readable .npy array ({e}).") from None
        x, names = _check_shape(path, raw), None
    elif ext == ".npz":
        raw, dt, used_key = _npz_array(path, role, key)
        x, names = _check_shape(path, raw), None
    elif ext in (".csv", ".txt", ".tsv"):
        x, names, lines = read_csv(path)
        x = _check_shape(path, x)
    else:
        raise CLIError(f"{path}: unknown file type {ext or '(none)'}; expected one of "
                       f"{', '.join(FORMATS)}.")
    names = names if names is not None else [f"x{j}" for j in range(x.shape[1])]
    x, names = _select(path, x, names, columns)
    _check_finite(path, x, lines)
    info = dict(path=path, abspath=os.path.abspath(path), sha256=sha256(path),
                format=ext[1:], shape=list(x.shape), key=used_key, columns=names)
    return Series(x, names, dt, info, lines)


def load_recordings(paths, *, role: str, columns=None, key=None, like: list[str] | None = None
                    ) -> list[Series]:
    """Several files of one role (several trajectories): same variables in each; `like`:
    the training data's column names, which a test or context file must match in number."""
    out = []
    for p in paths:
        s = load_series(p, role=role, columns=columns, key=key)
        ref = like if like is not None else (out[0].names if out else None)
        if ref is not None and len(s.names) != len(ref):
            raise CLIError(f"{p}: {len(s.names)} variables {s.names}; expected {len(ref)} "
                           f"like the training data {ref}.")
        out.append(s)
    return out


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
        std = x.std(axis=0)
        flat = np.flatnonzero(~(std > 0))
        if flat.size:
            raise CLIError(f"{series[0].info['path']}: column {series[0].names[flat[0]]!r} is "
                           "constant; it carries no dynamics — leave it out with --columns.")
        return cls(x.mean(axis=0), std, True)

    def apply(self, x):
        return (np.asarray(x, np.float64) - self.mean) / self.std

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
    from ..metrics._embedding import delay_embed

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

