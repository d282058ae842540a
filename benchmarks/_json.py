"""The benchmarks' one JSON writer: atomic (a temporary file, then `os.replace`), strict JSON
(non-finite floats as the strings "inf", "-inf", "nan", which `read_number` turns back),
NumPy and JAX scalars and arrays as plain numbers and lists, paths as strings; callables in a
mapping are left out."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path


def clean(v):
    """`v` as plain JSON values (see the module docstring)."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf", "nan": JSON has no literal for them
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if not callable(x)}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    if hasattr(v, "tolist") and hasattr(v, "ndim"):  # NumPy / JAX arrays and scalars
        return clean(v.tolist())
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return clean(v.item())
    return v


def write_json(path: str | os.PathLike, obj, *, indent: int = 1, default=None) -> Path:
    """Write `obj` to `path` atomically (its folder is created); returns the path.
    `default`: as `json.dump`'s, for other objects (none by default: a `TypeError`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(clean(obj), f, indent=indent, default=default)
        f.write("\n")
    os.replace(tmp, path)
    return path


def read_number(v):
    """A number written by `write_json` (the strings "inf", "-inf", "nan" as floats)."""
    return float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v
