"""Settings as reproducible text: strategy objects ↔ JSON-able dicts.

Solvers, α schedules and regularizers are equinox modules whose fields are static
configuration (numbers, strings); `to_config` writes one as `{"class": name, field: value}`
and `from_config` rebuilds it, so a checkpoint header names every setting exactly and the same
call always writes the same text (no reprs with memory addresses).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import equinox as eqx


def to_config(obj: eqx.Module | None) -> dict | None:
    """`{"class": type name, <field>: <value>, ...}` for a module of static fields."""
    if obj is None:
        return None
    out: dict[str, Any] = {"class": type(obj).__name__}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if not (v is None or isinstance(v, (bool, int, float, str))):
            raise TypeError(f"{type(obj).__name__}.{f.name} is not plain configuration "
                            f"({type(v).__name__}).")
        out[f.name] = v
    return out


def from_config(config: dict | None, classes: dict[str, type]) -> eqx.Module | None:
    """Rebuild what `to_config` wrote, from the classes named in `classes`."""
    if config is None:
        return None
    fields = dict(config)
    name = fields.pop("class")
    if name not in classes:
        raise ValueError(f"unknown class {name!r} in stored settings; known: {sorted(classes)}.")
    return classes[name](**fields)


def describe_optimizer(optimizer, default_spec: dict | None) -> dict:
    """The optimizer as text: the default's parameters, or the class of a user's optimizer
    (an optax transformation has no readable configuration)."""
    if default_spec is not None:
        return dict(default_spec, kind="default")
    return {"kind": "user", "type": type(optimizer).__name__}
