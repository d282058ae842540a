"""Argument validation at the public boundary: one place, one message style.

Every check names the argument and says what was expected and what was given:
``"`steps` must be an integer ≥ 0; got 1.5."``. Counts accept every integer type (Python,
NumPy, 0-d integer arrays) and reject `bool`. A wrong *type* raises `ArgumentTypeError`,
which is both a `TypeError` and a `ValueError` (as NumPy's `AxisError` is both), so code
that catches either keeps working; a wrong *value* raises `ValueError`.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence

import jax
import numpy as np


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (catchable as `TypeError` or `ValueError`)."""


def _got(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_integer(value) -> bool:
    """Whether `value` is an integer of any integer type (bools excluded)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, (np.ndarray, jax.Array)) and value.ndim == 0 and (
        np.issubdtype(value.dtype, np.integer))


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """`value` as a Python int, checked to lie in `[lo, hi]`."""
    if not is_integer(value):
        bound = f" ≥ {lo}" if lo is not None else ""
        raise ArgumentTypeError(f"`{name}` must be an integer{bound}; got {_got(value)}.")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if hi is None:
            want = f"≥ {lo}"
        elif lo is None:
            want = f"≤ {hi}"
        else:
            want = f"in [{lo}, {hi}]"
        raise ValueError(f"`{name}` must be an integer {want}; got {v}.")
    return v


def check_optional_int(name: str, value, lo: int | None = None, hi: int | None = None):
    """`None`, or `check_int(name, value, lo, hi)`."""
    return None if value is None else check_int(name, value, lo, hi)


def check_real(name: str, value, lo: float | None = None, hi: float | None = None, *,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real number (any real type, not bool) in the given interval, as a float."""
    is_real = isinstance(value, numbers.Real) or (
        isinstance(value, (np.ndarray, jax.Array)) and value.ndim == 0
        and (np.issubdtype(value.dtype, np.floating) or np.issubdtype(value.dtype, np.integer)))
    if not is_real or isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"`{name}` must be a real number; got {_got(value)}.")
    v = float(value)
    below = lo is not None and (v <= lo if lo_open else v < lo)
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if not math.isfinite(v) or below or above:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise ValueError(f"`{name}` must be a finite number in {left}{lo_s}, {hi_s}{right}; "
                         f"got {_got(value)}.")
    return v


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"`{name}` must be True or False; got {_got(value)}.")
    return bool(value)


def check_choice(name: str, value, choices: Sequence):
    """`value` must be one of `choices` (compared with `==`, so strings are fine)."""
    if not any(isinstance(value, type(c)) and value == c for c in choices):
        raise ValueError(f"`{name}` must be one of {tuple(choices)}; got {_got(value)}.")
    return value


def check_key(name: str, key) -> jax.Array:
    """A JAX PRNG key: a typed key (`jax.random.key`) or a raw `uint32[2]` one."""
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.ndim != 0:
            raise ValueError(f"`{name}` must be a single PRNG key; got a key array of shape "
                             f"{key.shape}.")
        return key
    if (isinstance(key, (jax.Array, np.ndarray)) and key.dtype == np.uint32
            and key.shape == (2,)):
        return key
    raise ArgumentTypeError(
        f"`{name}` must be a PRNG key, e.g. jax.random.key(0); got {_got(key)}.")


def check_array(name: str, value, *, ndim: int | Sequence[int] | None = None,
                finite: bool = True, min_len: int | None = None, floating: bool = True):
    """`value` as a NumPy or JAX array with the given number of dimensions; real-valued
    (unless `floating=False`), finite (unless `finite=False`) and with at least `min_len`
    entries along its first axis."""
    try:
        arr = value if isinstance(value, jax.Array) else np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"`{name}` must be an array; got {_got(value)} ({e}).") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or np.issubdtype(arr.dtype, np.bool_)):
        raise ArgumentTypeError(f"`{name}` must be a numeric array; got dtype {arr.dtype}.")
    if floating and np.issubdtype(arr.dtype, np.complexfloating):
        raise ArgumentTypeError(f"`{name}` must be real-valued; got dtype {arr.dtype}.")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(map(str, allowed))
            raise ValueError(f"`{name}` must have {want} dimensions; got shape {arr.shape}.")
    if min_len is not None and (arr.ndim == 0 or arr.shape[0] < min_len):
        got = arr.shape[0] if arr.ndim else "a scalar"
        raise ValueError(f"`{name}` needs at least {min_len} entries along its first axis; "
                         f"got {got}.")
    if finite and not isinstance(arr, jax.core.Tracer) and not bool(np.all(np.isfinite(arr))):
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    return arr


def check_path(name: str, value) -> str:
    """A file path (`str` or `os.PathLike`), as a `str`."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentTypeError(f"`{name}` must be a file path (str or os.PathLike); got "
                                f"{_got(value)}.")
    path = os.fspath(value)
    if not isinstance(path, str) or not path:
        raise ValueError(f"`{name}` must be a non-empty file path; got {_got(value)}.")
    return path


def check_float_dtype(name: str, value) -> None:
    """`value` (an array) must have a floating dtype."""
    dtype = np.asarray(value).dtype if not hasattr(value, "dtype") else value.dtype
    if not np.issubdtype(dtype, np.floating):
        raise ArgumentTypeError(f"`{name}` must be a floating-point array; got dtype {dtype}.")


def is_concrete(x) -> bool:
    """False for a tracer (inside `jit`/`vmap`), where value checks must be skipped."""
    return not isinstance(x, jax.core.Tracer)
