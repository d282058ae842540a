"""File names of the command line's data sets: one name per variant, so variants never collide.

A name is the system, its preset (for systems with presets) and every option that differs from
its default, as ``key=value`` (``key`` alone for a switched-on flag, ``no_key`` for a switched-off
one), in a fixed order: ``lorenz63_observe=x_rho=35``,
``lorenz96_short_period_n_steps=20000_seed=1``, ``bursting_neuron_slow_full_state``. Options
that do not change the data (``progress``) are left out.
"""

from __future__ import annotations

import inspect
import numbers
import re

import numpy as np

from ._recipe import simulate
from ._registry import GENERATORS
from ._systems import SYSTEMS

FIRST = ("full_state", "observe")  # then the vector-field / generator parameters, sorted
LAST = ("n_steps", "dt", "transient", "seed", "noise", "x0", "t0", "standardize", "dtype",
        "solver", "rtol", "atol", "max_steps")  # fmt: skip
IGNORED = ("preset", "progress", "period", "extra_meta")


def _keyword_defaults(fn) -> dict:
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.default is not p.empty}  # fmt: skip


def generator_defaults(name, preset=None) -> dict:
    """Every keyword argument ``generate(name, ...)`` accepts, with its default value."""
    defaults = {}
    system = SYSTEMS.get(name)
    if system is not None:
        defaults.update(_keyword_defaults(simulate), transient=system.transient)
    defaults.update(_keyword_defaults(GENERATORS[name]))
    if system is not None and system.presets:
        presets = system.presets
        defaults.update(presets.get(preset or system.default_preset, system.params))
    elif system is not None:
        defaults.update(system.params)
    return defaults


def _same(value, default) -> bool:
    if isinstance(value, (bool, np.bool_)) or isinstance(default, (bool, np.bool_)):
        return type(value) is type(default) and value == default
    if isinstance(value, numbers.Real) and isinstance(default, numbers.Real):
        return float(value) == float(default)
    if isinstance(value, str) and isinstance(default, str):
        return value == default
    return False


def _text(x) -> str:
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        x = float(x)
        return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(x))


def _token(key, value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return key if value else f"no_{key}"
    if isinstance(value, (list, tuple)):
        return f"{key}=" + "+".join(_text(v) for v in value)
    return f"{key}={_text(value)}"


def _rank(key):
    if key in FIRST:
        return (0, FIRST.index(key), "")
    if key in LAST:
        return (2, LAST.index(key), "")
    return (1, 0, key)


def variant_stem(name, options) -> str:
    """The file stem of ``generate(name, **options)``'s data set (without ``.npz``)."""
    system = SYSTEMS.get(name)
    preset = options.get("preset")
    defaults = generator_defaults(name, preset)
    parts = [name]
    if system is not None and system.presets:
        parts.append(preset or system.default_preset)
    for key in sorted(options, key=_rank):
        value = options[key]
        if key in IGNORED or (key in defaults and _same(value, defaults[key])):
            continue
        parts.append(_token(key, value))
    return "_".join(parts)
