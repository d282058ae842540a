"""The converters of the command line's options: each turns a value from a flag or a config
file into the option's value, or raises one `CLIError` line naming where it came from."""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from ._errors import CLIError
from ._models import MODELS, is_user_model

#: The largest integer an option takes (a C `long`: `jax.random.key` and NumPy take no more).
INT_MAX = 2**63 - 1


def integer(lo: int | None = None, optional: bool = False, hi: int = INT_MAX) -> Callable:
    def convert(label, v):
        if optional and (v is None or (isinstance(v, str) and v.lower() == "none")):
            return None
        try:
            if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
                raise ValueError
            n = int(v) if not isinstance(v, str) else int(v.strip().replace("_", ""))
        except (TypeError, ValueError):
            raise CLIError(f"{label} must be an integer; got {v!r}.") from None
        if lo is not None and n < lo:
            raise CLIError(f"{label} must be an integer ≥ {lo}; got {n}.")
        if n > hi:
            span = f"in [{lo}, {hi}]" if lo is not None else f"≤ {hi}"
            raise CLIError(f"{label} must be an integer {span}"
                           f"{' (2^63 − 1)' if hi == INT_MAX else ''}; got {n}.")
        return n
    return convert


def auto_or(convert: Callable) -> Callable:
    """`"auto"`, or what `convert` accepts."""
    def convert_or_auto(label, v):
        if isinstance(v, str) and v.strip().lower() == "auto":
            return "auto"
        return convert(label, v)
    return convert_or_auto


def _float(lo: float = 0.0, optional: bool = False) -> Callable:
    def convert(label, v):
        if optional and (v is None or (isinstance(v, str) and v.lower() == "none")):
            return None
        try:
            x = float(v) if not isinstance(v, bool) else None
        except (TypeError, ValueError):
            x = None
        if x is None:
            raise CLIError(f"{label} must be a number; got {v!r}.")
        if not (math.isfinite(x) and x > lo):
            raise CLIError(f"{label} must be a finite number > {lo:g}; got {v!r}.")
        return x
    return convert


def _choice(*choices) -> Callable:
    def convert(label, v):
        if not isinstance(v, str) or v.lower() not in choices:
            raise CLIError(f"{label} must be one of {', '.join(choices)}; got {v!r}.")
        return v.lower()
    return convert


def _model(label, v):
    """A built-in model name, or `MODULE:CLASS` (a class of a module `--import` names)."""
    if isinstance(v, str) and is_user_model(v.strip()):
        module, _, name = v.strip().partition(":")
        if module and name and all(p.isidentifier() for p in module.split(".") + name.split(".")):
            return v.strip()
        raise CLIError(f"{label} must be one of {', '.join(MODELS)} or MODULE:CLASS (e.g. "
                       f"mypkg.models:MyRNN); got {v!r}.")
    return _choice(*MODELS)(label, v)


def _alpha(label, v):
    if isinstance(v, str) and v.strip().lower() == "adaptive":
        return "adaptive"
    try:
        x = float(v)
        if isinstance(v, bool) or not 0.0 <= x <= 1.0:
            raise ValueError
    except (TypeError, ValueError):
        raise CLIError(f"{label} must be a number in [0, 1] or 'adaptive'; got {v!r}.") from None
    return x


def _list(label, v) -> list[str] | None:
    if v is None:
        return None
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, (list, tuple)) or not all(isinstance(s, (str, int)) for s in items):
        raise CLIError(f"{label} must be a list of names or indices; got {v!r}.")
    out = [str(s).strip() for s in items if str(s).strip()]
    if not out:
        raise CLIError(f"{label} is empty.")
    return out


def _paths(label, v) -> list[str] | None:
    if v is None:
        return None
    items = [v] if isinstance(v, (str, os.PathLike)) else v
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, (str, os.PathLike))
                                                       for p in items):
        raise CLIError(f"{label} must be a file name or a list of file names; got {v!r}.")
    return [os.fspath(p) for p in items]


def _path(label, v) -> str | None:
    if v is None or isinstance(v, (str, os.PathLike)):
        return None if v is None else os.fspath(v)
    raise CLIError(f"{label} must be a file or folder name; got {v!r}.")


def _embedding(label, v):
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none")):
        return None
    parts = v.split(",") if isinstance(v, str) else v
    try:
        m, tau = (int(str(p).strip()) for p in parts)
        if m < 1 or tau < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise CLIError(f"{label} must be 'm,tau' (two integers ≥ 1, e.g. 3,10); got {v!r}.") \
            from None
    return [m, tau]


def _validation(label, v):
    """None, a fraction in (0, 1) of the training data (its end), or a file name."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise CLIError(f"{label} must be a file name or a fraction in (0, 1); got {v!r}.")
    try:
        f = float(v)
    except (TypeError, ValueError):
        return _path(label, v)
    if not 0 < f < 1:
        raise CLIError(f"{label} as a fraction must be in (0, 1); got {v!r}.")
    return f


def _nonnegative(label, v):
    """A finite number ≥ 0."""
    if not isinstance(v, bool) and isinstance(v, (int, float, str)):
        try:
            if float(v) == 0:
                return 0.0
        except ValueError:
            pass
    return _float()(label, v)


def _schedule(label, v):
    """'cosine' or 'exponential[:FINAL]' (FINAL: the learning rate at the end, default 1e-6)."""
    text = str(v).strip().lower()
    name, _, final = text.partition(":")
    try:
        if name == "cosine" and not final:
            return "cosine"
        if name in ("exponential", "exp") and float(final or 1e-6) > 0:
            return f"exponential:{float(final or 1e-6):g}"
    except ValueError:
        pass
    raise CLIError(f"{label} must be 'cosine' or 'exponential[:FINAL]' (e.g. exponential:1e-6); "
                   f"got {v!r}.")


def schedule_object(text: str):
    """The `dsr` schedule of an `--lr-schedule` value (None: the default cosine)."""
    from .._schedule import ExponentialDecay

    return None if text == "cosine" else ExponentialDecay(float(text.partition(":")[2]))


def _delay_embed(label, v):
    """None, 'auto' or [m, tau]."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none")):
        return None
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    return _embedding(label, v)


def _bool(label, v):
    if isinstance(v, bool):
        return v
    raise CLIError(f"{label} must be true or false; got {v!r}.")


def _alpha_value(label, v):
    x = _alpha(label, v)
    if x == "adaptive":
        raise CLIError(f"{label}: a sweep takes numbers (with --alpha adaptive they are the "
                       "aGTF start values); got 'adaptive'.")
    return x


#: The options `fit --sweep` can vary within one program: the key (an option's name without
#: its dashes), the `dsr.Grid` setting it becomes and its values' converter.
SWEEP_KEYS: dict[str, tuple[str, Callable]] = {
    "alpha": ("alpha", _alpha_value), "lr": ("learning_rate", _float()),
    "noise": ("noise", _nonnegative), "hidden-dim": ("hidden_dim", integer(1)),
    "latent-dim": ("latent_dim", integer(1))}


def _sweep(label, v) -> dict | None:
    """`KEY=V1,V2 ...` (flags) or `{KEY: [V1, V2]}` (a config file) → `{KEY: [values]}`,
    each value converted as its option's; KEY as on the command line (`hidden-dim`)."""
    if v is None:
        return None
    if isinstance(v, str):
        v = v.split()
    items = v.items() if isinstance(v, dict) else []
    if isinstance(v, (list, tuple)):
        try:
            items = [tuple(s.split("=", 1)) for s in v if isinstance(s, str)]
        except ValueError:
            items = []
        if len(items) != len(v) or any(len(i) != 2 for i in items):
            raise CLIError(f"{label} takes KEY=V1,V2,... items, e.g. alpha=0.05,0.1 "
                           f"lr=1e-3,3e-3; got {' '.join(map(str, v))!r}.")
    out = {}
    for key, values in items:
        key = str(key).strip().replace("_", "-")
        if key not in SWEEP_KEYS:
            raise CLIError(f"{label}: {key!r} cannot be swept in one program; sweepable: "
                           f"{', '.join(SWEEP_KEYS)} (other options: separate runs).")
        if key in out:
            raise CLIError(f"{label}: {key} is given twice.")
        values = values.split(",") if isinstance(values, str) else values
        if not isinstance(values, (list, tuple)) or not values:
            raise CLIError(f"{label}: {key} needs values, e.g. {key}=V1,V2.")
        conv = SWEEP_KEYS[key][1]
        out[key] = [conv(f"{label} {key}", x.strip() if isinstance(x, str) else x)
                    for x in values]
        if len(set(out[key])) != len(out[key]):
            raise CLIError(f"{label}: {key} repeats a value ({out[key]}).")
    if not out:
        raise CLIError(f"{label} is empty; give KEY=V1,V2 items.")
    return out
