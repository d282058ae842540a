"""The classes a file may name: one allow-list for `load`, checkpoints and stored settings.

A file (a saved model, a checkpoint's header) stores the *name* of each class it needs; reading
it resolves the name here and nowhere else — never by importing a module named in the file.
dsr's own classes are listed under their short names (`"ShPLRNN"`, `"DEER"`, so files written
before this registry still load); a user's class joins with [`dsr.register`][] under
`"<module>.<qualname>"`.
"""

from __future__ import annotations

import inspect

from ._alpha import AbstractAlpha, AdaptiveAlpha, ConstantAlpha
from ._solvers._deer import DEER
from ._io import FileFormatError
from ._regularization import Regularization
from ._schedule import AbstractSchedule, CosineDecay, ExponentialDecay
from ._solvers._base import AbstractSolver
from ._solvers._sequential import Sequential
from .baselines import SelectiveSSM
from .models import ALRNN, LSSM, AbstractModel, ClippedShPLRNN, ShPLRNN

#: The families a class can be registered in: what a file may name, per kind of setting.
FAMILIES = {"model": AbstractModel, "solver": AbstractSolver, "alpha": AbstractAlpha,
            "schedule": AbstractSchedule, "regularization": Regularization}

_BUILTIN = (ShPLRNN, ClippedShPLRNN, ALRNN, LSSM, SelectiveSSM, DEER, Sequential, ConstantAlpha,
            AdaptiveAlpha, CosineDecay, ExponentialDecay, Regularization)
_BY_NAME: dict[str, type] = {c.__name__: c for c in _BUILTIN}


def family_of(cls: type) -> str | None:
    """The family (`"model"`, `"solver"`, ...) `cls` belongs to, or None."""
    return next((f for f, base in FAMILIES.items() if issubclass(cls, base)), None)


def register(cls: type) -> type:
    """Let dsr's files name a class of yours: [`dsr.load`][] and checkpoints (`fit(...,
    checkpoint=...)`, `resume_settings="checkpoint"`) then rebuild it. Use it as a decorator on
    the class definition; the module that defines the class must be imported before a file
    naming it is read (a file never makes dsr import anything).

    The class must be a concrete subclass of one of the families: a model
    ([`dsr.AbstractModel`][dsr.models.AbstractModel] and its families, e.g.
    [`dsr.AbstractGTFModel`][dsr.models.AbstractGTFModel]), [`dsr.AbstractSolver`][],
    [`dsr.AbstractAlpha`][] or [`dsr.AbstractSchedule`][]. Its name in files is
    `f"{cls.__module__}.{cls.__qualname__}"`; registering a class of the same name again
    (re-running a module, a notebook cell) replaces the earlier one.

    What a file stores of it:

    - **a model**: its arrays, and its *static* fields that are also parameters of its
      constructor (the sizes; the file's dtype is passed as `dtype=` if the constructor takes
      it). [`dsr.load`][] rebuilds the structure as `cls(**those, key=...)` and fills in the
      arrays, so `cls(**static_fields, key=key)` must build a model of the same structure
      ([`dsr.save`][] checks this and says what differs).
    - **a solver, α strategy or schedule** (a setting of `fit`): each field that is a number,
      a string, None or a tuple/list of those, by value (rebuilt as `cls(**fields)`). Any other
      field (an array, an equinox module, a function) is stored as a SHA-256 fingerprint of its
      contents: resuming checks that the call's object is the same, and
      `resume_settings="checkpoint"` takes that field's object from the call (it cannot come
      from a file). Fitting needs no registration; resuming with
      `resume_settings="checkpoint"` rebuilds only registered classes.

    **Arguments:** `cls`: the class.

    **Returns:** `cls` (unchanged), so that `@dsr.register` can decorate the definition.
    """
    if not isinstance(cls, type) or family_of(cls) is None:
        raise TypeError(f"`register`: {cls!r} is not a subclass of "
                        f"{', '.join(b.__name__ for b in FAMILIES.values())}.")
    if inspect.isabstract(cls):
        raise TypeError(f"`register`: {cls.__qualname__} is abstract (it has abstract methods "
                        "or attributes); register the final class you instantiate.")
    if cls in _BUILTIN:
        return cls
    _BY_NAME[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


def name_of(cls: type) -> str:
    """The name files store for `cls`: its registered name, or — for a class that is not
    registered — the name it would be registered under."""
    if _BY_NAME.get(cls.__name__) is cls:
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def is_registered(cls: type) -> bool:
    return _BY_NAME.get(name_of(cls)) is cls


def resolve(name, family: str, path: str = "<file>", what: str = "") -> type:
    """The registered class named `name` in `family`; a one-line `FileFormatError` otherwise
    (`what`: how the message describes the file's problem, e.g. "the header does not describe
    a dsr model")."""
    cls = _BY_NAME.get(name) if isinstance(name, str) else None
    if cls is None or not issubclass(cls, FAMILIES[family]):
        what = what or "a class it names is unknown"
        raise FileFormatError(
            f"{path!r}: {what}: it names the {family} class {name!r}, which is not registered; "
            "import the module that defines it and call dsr.register(cls) first.")
    return cls
