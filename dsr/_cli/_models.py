"""The model a run trains: a built-in name or a user's class, and how the command line builds
it from the sizes.

`--model` is a built-in name (`clipped`, `shplrnn`, `alrnn`, `lssm`) or `MODULE:CLASS`, a
model class of a module that `--import MODULE` names. dsr imports only what `--import`
names, on every command: a run folder records the import and the class, and `evaluate`,
`generate` and `fit --resume` of that run need the same `--import` again (a run folder never
makes dsr import code by itself).

**The constructor protocol.** The command line builds every model, built-in or not, as

    cls(obs_dim=N, latent_dim=M, key=key, **sizes)

with N the number of variables, M `--latent-dim` (default N), and `sizes` the constructor's
keyword parameters among `hidden_dim` (`--hidden-dim`), `relu_units` (`--relu-units`),
`rank` (`--rank`) and `input_dim` (the column count of `--inputs`, 0 without). A size option
set to anything but its default for a constructor without that parameter is an error, and so
is a required constructor parameter the command line cannot fill; the class is registered
(`dsr.register`) so that the run's model can be saved.
"""

from __future__ import annotations

import importlib
import inspect

from .._registry import register
from ..models import ALRNN, LSSM, AbstractModel, ClippedShPLRNN, ShPLRNN
from ._errors import CLIError

#: `--model` names and their classes (the first is the default).
MODEL_CLASSES = {"clipped": ClippedShPLRNN, "shplrnn": ShPLRNN, "alrnn": ALRNN, "lssm": LSSM}
MODELS = tuple(MODEL_CLASSES)

#: Constructor parameter → the option that sets it (`input_dim` comes from `--inputs`).
SIZE_OPTIONS = {"hidden_dim": "hidden_dim", "relu_units": "relu_units", "rank": "rank"}


def import_modules(modules) -> None:
    """Import the modules `--import` names (one-line error if one cannot be imported)."""
    for name in modules or ():
        try:
            importlib.import_module(name)
        except Exception as e:  # the user's module may raise anything
            raise CLIError(f"--import {name}: cannot import it ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}).") from None


def is_user_model(name: str) -> bool:
    return ":" in name


def model_class(name: str, imports) -> type:
    """The class `--model` names; a user's class is looked up in a module `--import` named
    (and imported), and registered."""
    if not is_user_model(name):
        return MODEL_CLASSES[name]
    module, _, qualname = name.partition(":")
    if module not in (imports or ()):
        raise CLIError(f"--model {name}: give --import {module} (dsr imports only the modules "
                       "--import names).")
    import_modules([module])
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and issubclass(obj, AbstractModel)):
        raise CLIError(f"--model {name}: {module} has no dsr model class {qualname!r}.")
    if inspect.isabstract(obj):
        raise CLIError(f"--model {name}: {qualname} is abstract.")
    return register(obj)


def check_run_imports(cfg: dict, flags: dict, command: str, run_path: str) -> None:
    """A run of a user's model needs the run's `--import` modules given again; import them."""
    options = cfg.get("options") or {}
    model, needed = str(options.get("model") or ""), list(options.get("import") or [])
    given = list(flags.get("import") or [])
    missing = [m for m in needed if m not in given]
    if missing:
        raise CLIError(f"{command} {run_path}: the run's model {model} is defined outside dsr; "
                       f"give --import {','.join(missing)} (a run folder never makes dsr import "
                       "code by itself).")
    import_modules(given)
    if is_user_model(model):
        model_class(model, given)


def constructor_sizes(cls: type, opts: dict, n_inputs: int, defaults: dict) -> dict:
    """The size keywords of the constructor protocol that `cls` takes, from the options."""
    params = inspect.signature(cls.__init__).parameters
    label = opts["model"]
    kw = {}
    for param, option in SIZE_OPTIONS.items():
        value = opts.get(option)
        if param in params:
            if value is not None:
                kw[param] = value
        elif value != defaults.get(option):
            flag = "--" + option.replace("_", "-")
            raise CLIError(f"{flag}: the model {label} ({cls.__qualname__}) takes no "
                           f"{param}.")
    if "input_dim" in params:
        kw["input_dim"] = n_inputs
    elif n_inputs:
        raise CLIError(f"--inputs: the model {label} ({cls.__qualname__}) takes no input_dim.")
    filled = set(kw) | {"self", "obs_dim", "latent_dim", "key", "dtype"}
    missing = [p.name for p in params.values() if p.name not in filled
               and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        known = {v: "--" + k.replace("_", "-") for k, v in SIZE_OPTIONS.items()}
        hint = ", ".join(known.get(m, m) for m in missing)
        raise CLIError(f"--model {label}: {cls.__qualname__}'s constructor needs {hint}, which "
                       "the command line does not set (see the constructor protocol in "
                       "docs/internals.md).")
    return kw
