"""Training checkpoints: the whole `TrainState` in one checksummed file, the history beside it.

A checkpoint's header holds the model's structure (class, hyper-parameters and the shape of
every array), the data's SHA-256, every setting that changes the result, the step, and the
extent and checksum of the history file (`<checkpoint>.history`, see `_history.py`). `fit`
reads the header first — before anything is compiled — and says what differs from the call
(`check_resume`).
"""

from __future__ import annotations

import os

import equinox as eqx
import jax
import numpy as np

from .._config import from_config
from ._history import History
from .._io import FileFormatError, read_container, write_container
from .._serialization import deserialize, serialize

#: Settings that describe the model, not the run: they cannot be taken from a checkpoint.
MODEL_SETTINGS = ("members", "dtype")


def history_path(path: str) -> str:
    return os.fspath(path) + ".history"


def identity(path) -> str:
    """What makes two checkpoint paths the same file: the real path (links, `..` and
    relative paths resolved)."""
    return os.path.realpath(os.fspath(path))


def structure(model, lead: int | None = None) -> list[str]:
    """The class and the dtype and shape of every array of a stacked model, as text
    (`lead`: the member axis to prepend, for a model that is not stacked)."""
    extra = [] if lead is None else [lead]
    leaves = jax.tree_util.tree_leaves_with_path(model)
    arrays = [f"{jax.tree_util.keystr(k)}: {v.dtype}{extra + list(v.shape)}" for k, v in leaves
              if eqx.is_array(v)]
    return [type(model).__name__] + arrays


def stored_arguments(path: str, stored: dict, call_optimizer, call_settings: dict,
                     call=None, call_schedule=None) -> dict:
    """The `fit` arguments that reproduce a checkpoint's stored settings. The default
    optimizer is rebuilt from its learning rate and steps; a user's optimizer cannot be read
    back from a file, so it must be the call's (of the same type). Strategies are rebuilt
    from the registry (`_registry.py`); a field of theirs that the file holds only as a
    fingerprint comes from the call's object (`call`: the validated call, with `strategy`,
    `solver`, `regularization`; `call_schedule`: its schedule)."""
    mine = lambda name: getattr(call, name, None)  # noqa: E731
    opt = stored.get("optimizer") or {}
    schedule = None
    if opt.get("kind") == "default":
        optimizer = None
        if opt.get("schedule") is not None:
            schedule = from_config(opt["schedule"], "schedule", call_schedule, path)
    elif opt == call_settings.get("optimizer"):
        optimizer = call_optimizer
    else:
        raise ValueError(f"`resume_settings='checkpoint'`: {path!r} was trained with a user "
                         f"optimizer ({opt.get('type')}), which cannot be restored from a file; "
                         "pass that optimizer as `optimizer=` (and resume_settings='call' for "
                         "any other difference).")
    try:
        return dict(
            alpha=from_config(stored["alpha"], "alpha", mine("strategy"), path),
            alpha_every=None, alpha_gamma=None,
            solver=from_config(stored["solver"], "solver", mine("solver"), path),
            regularization=from_config(stored["regularization"], "regularization",
                                       mine("regularization"), path),
            optimizer=optimizer, schedule=schedule, learning_rate=float(stored["learning_rate"]),
            noise=float(stored.get("noise", 0.0)),
            **_stored_status_steps(stored, mine("validation")),
            key=jax.random.wrap_key_data(np.asarray(stored["key"], np.uint32),
                                         impl=stored["key_impl"]),
            **{k: int(stored[k]) for k in ("steps", "seq_len", "batch_size", "warmup",
                                           "max_failures")})
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"`resume_settings='checkpoint'`: the settings stored in {path!r} "
                         f"cannot be restored ({type(e).__name__}: {e}).") from None


def _stored_status_steps(stored: dict, validation) -> dict:
    """`{"status_steps": n}` of a checkpoint with validation (the validation length where
    the file records none: it was judged over that); `{}` without validation."""
    val = stored.get("validation")
    if not isinstance(val, dict) or validation is None:
        return {}
    return {"status_steps": int(val.get("status_steps", validation.n_steps))}


def save_checkpoint(path: str, state, history: History, header: dict, best=None) -> None:
    """Append the new history records, then write the state (and, with free-run validation,
    the best parameters, scores and steps `best`) atomically (in this order, so a checkpoint
    never points at records that are not on disk)."""
    record = history.flush(history_path(path))
    head = dict(header, step=int(state.step), history=dict(record, fields=list(history.fields)))
    if best is not None:
        head["best"] = True
    write_container(path, "checkpoint", head,
                    serialize(state if best is None else (state, best)))


def read_header(path: str) -> tuple[dict, bytes]:
    """The verified header and payload of a checkpoint file."""
    return read_container(os.fspath(path), ("checkpoint",))


def differences(stored: dict, current: dict) -> list[str]:
    """`"name: checkpoint X, call Y"` for every setting that differs."""
    out = []
    for k in sorted(set(stored) | set(current)):
        if stored.get(k) != current.get(k):
            out.append(f"{k}: checkpoint {stored.get(k)!r}, call {current.get(k)!r}")
    return out


def check_compatible(path: str, header: dict, expected: dict) -> None:
    """The model (class, hyper-parameters, array shapes), the member count, the dtype and
    the data (`expected`: what the trainer would write) must be the checkpoint's."""
    problems = _model_differences(header.get("model"), expected["model"])
    if not problems and header.get("structure") != expected["structure"]:
        problems.append(_structure_difference(header.get("structure"), expected["structure"]))
    for k in MODEL_SETTINGS:
        a, b = header.get("settings", {}).get(k), expected["settings"][k]
        if a != b and not any(p.startswith(f"{k}:") for p in problems):
            problems.append(f"{k}: checkpoint {a!r}, call {b!r}")
    if header.get("data_sha256") != expected["data_sha256"]:
        problems.append("data: the training data (or inputs) differ from the checkpoint's "
                        "(SHA-256 mismatch)")
    if problems:
        raise ValueError(f"`resume`: {path!r} belongs to another run — " + "; ".join(problems)
                         + ". Pass the model and data it was trained with.")


def _model_differences(stored, current) -> list[str]:
    """`"name: checkpoint X, call Y"` for the class, each hyper-parameter and the members."""
    if not isinstance(stored, dict) or not isinstance(current, dict):
        return []  # a model class without a header description: the structure decides
    if stored.get("class") != current.get("class"):
        return [f"model class: checkpoint {stored.get('class')}, call {current.get('class')}"]
    hs, hc = stored.get("hyperparameters", {}), current.get("hyperparameters", {})
    out = [f"{k}: checkpoint {hs.get(k)!r}, call {hc.get(k)!r}"
           for k in sorted(set(hs) | set(hc)) if hs.get(k) != hc.get(k)]
    if stored.get("members") != current.get("members"):
        what = lambda m: "a single model" if m is None else f"an ensemble of {m}"  # noqa: E731
        out.append(f"members: checkpoint {what(stored.get('members'))}, call "
                   f"{what(current.get('members'))}")
    return out


def _structure_difference(stored, current) -> str:
    if not isinstance(stored, list) or not stored:
        return "model arrays: the checkpoint does not record them"
    if stored[0] != current[0]:
        return f"model class: checkpoint {stored[0]}, call {current[0]}"
    diff = [f"{a} vs {b}" for a, b in zip(stored[1:], current[1:]) if a != b]
    if len(stored) != len(current):
        diff.append(f"{len(stored) - 1} arrays vs {len(current) - 1}")
    return "model arrays (checkpoint vs call): " + ", ".join(diff[:4])


def restore(path: str, header: dict, payload: bytes, like_state, n_members: int,
            like_best=None, truncate: bool = True, history_dtypes=None):
    """`(state, history, best)` from a verified checkpoint; `like_state` (and `like_best`, the
    validation's best parameters, scores and steps) give the structure; `best` is None for a
    checkpoint written without validation. `truncate`: cut the history file to what the
    checkpoint covers (only for the file this run writes next, under its lock);
    `history_dtypes`: the history fields' dtypes (see `History`)."""
    best = None
    if header.get("best"):
        if like_best is None:
            raise ValueError(f"`resume`: {path!r} was written with free-run validation; pass "
                             "the same `validation=` to continue it.")
        state, best = deserialize(payload, (like_state, like_best), path)
    elif like_best is not None and int(header.get("step", 0)) > 0:
        raise ValueError(f"`resume`: {path!r} was written without free-run validation; "
                         "resume it without `validation=`.")
    else:
        state = deserialize(payload, like_state, path)
    h = header.get("history")
    if not isinstance(h, dict) or not isinstance(h.get("fields"), list):
        raise FileFormatError(f"{path!r}: the header has no history record.")
    history = History.restore(history_path(path), tuple(h["fields"]), n_members, h, truncate,
                              dtypes=history_dtypes)
    if len(history) != int(header["step"]) or int(state.step) != int(header["step"]):
        raise FileFormatError(f"{path!r}: {len(history)} history rows and a state at step "
                              f"{int(state.step)} for step {header['step']}.")
    return state, history, best
