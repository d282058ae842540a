"""A bounds-checked `.npy` / `.npz` reader: headers checked against the file size before
anything is allocated; a `data_gen` data set's `dt`; a (T, N) shape."""

from __future__ import annotations

import json
import os
import math
import zipfile
import zlib

import numpy as np

from .._errors import CLIError


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
