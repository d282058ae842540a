"""Settings as reproducible text: strategy objects ↔ JSON-able dicts.

Solvers, α schedules, learning-rate schedules and regularizers are equinox modules;
`to_config` writes one as `{"class": name, field: value}` and `from_config` rebuilds it from
the registry (`_registry.py`), so a checkpoint header names every setting exactly and the same
call always writes the same text (no reprs with memory addresses). A field that is not plain
configuration (an array, a module, a function: a user's strategy may hold one) is written as a
fingerprint of its contents, `{"sha256": ...}`: compared, never rebuilt from the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

import equinox as eqx
import jax
import numpy as np

from ._registry import name_of, resolve

_PLAIN = (bool, int, float, str)


def _plain(v) -> bool:
    if v is None or isinstance(v, _PLAIN):
        return True
    return isinstance(v, (tuple, list)) and all(_plain(x) for x in v)


def fingerprint(value) -> dict:
    """`{"sha256": ...}` of a value that is not plain configuration: the paths, dtypes,
    shapes and bytes of its array leaves, the values of its plain leaves, the qualified
    names of any other leaf (e.g. functions) and the tree structure (static fields included;
    memory addresses removed)."""
    h = hashlib.sha256()
    leaves = jax.tree_util.tree_leaves_with_path(value)
    h.update(type(value).__qualname__.encode())
    h.update(re.sub(r" at 0x[0-9a-fA-F]+", "", str(jax.tree_util.tree_structure(value))).encode())
    for path, leaf in leaves:
        h.update(jax.tree_util.keystr(path).encode())
        if eqx.is_array(leaf) or isinstance(leaf, np.ndarray | np.generic):
            a = np.asarray(leaf)
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        elif _plain(leaf):
            h.update(repr(leaf).encode())
        else:
            name = getattr(leaf, "__qualname__", type(leaf).__qualname__)
            h.update(f"{type(leaf).__module__}.{name}".encode())
    return {"sha256": h.hexdigest()}


def _is_fingerprint(v) -> bool:
    return isinstance(v, dict) and set(v) == {"sha256"}


def to_config(obj: eqx.Module | None) -> dict | None:
    """`{"class": registered name, <field>: <value>, ...}`; plain fields (numbers, strings,
    None, tuples of those) by value, any other field as its `fingerprint`."""
    if obj is None:
        return None
    out: dict[str, Any] = {"class": name_of(type(obj))}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        out[f.name] = (list(v) if isinstance(v, tuple) else v) if _plain(v) else fingerprint(v)
    return out


def from_config(config: dict | None, family: str, call: eqx.Module | None = None,
                path: str = "<file>") -> eqx.Module | None:
    """Rebuild what `to_config` wrote, from the classes registered in `family`. A field
    stored as a fingerprint is taken from `call` (the object the caller passed), which must
    have the same fingerprint."""
    if config is None:
        return None
    fields = dict(config)
    cls = resolve(fields.pop("class"), family, path)
    for k, v in fields.items():
        if _is_fingerprint(v):
            have = getattr(call, k, None) if type(call) is cls else None
            if have is None or _plain(have) or fingerprint(have) != v:
                raise ValueError(f"{cls.__qualname__}.{k} is not plain configuration, so it "
                                 "is not stored in the file; pass the same object in the call.")
            fields[k] = have
        elif isinstance(v, list):
            fields[k] = tuple(v)
    return cls(**fields)


def describe_optimizer(optimizer, default_spec: dict | None) -> dict:
    """The optimizer as text: the default's parameters, or the class of a user's optimizer
    (an optax transformation has no readable configuration)."""
    if default_spec is not None:
        return dict(default_spec, kind="default")
    return {"kind": "user", "type": type(optimizer).__name__}
