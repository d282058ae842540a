"""Loading recordings: one file (`load_series`) and several of one role
(`load_recordings`), with the time step checked across them."""

from __future__ import annotations

import os

import numpy as np

from .._errors import CLIError
from ._arrays import _check_shape, _load_npy, _npz_array
from ._columns import (_by_name, _check_orientation, _describe_left_out, _is_time_name,
                       _not_variables, _select, _time_step, shown)
from ._csv import _text_in, read_csv
from ._series import Layout, Series, sha256

FORMATS = (".npy", ".csv", ".txt", ".tsv", ".npz")


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
