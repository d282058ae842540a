"""Training checkpoints: the whole `TrainState` in one checksummed file, the history beside it.

A checkpoint's header holds the model's structure, the data's SHA-256, every setting that
changes the result, the step, and the extent and checksum of the history file
(`<checkpoint>.history`, see `_history.py`). `resume` reads the header first — before
anything is compiled — and says which settings differ from the call.
"""

from __future__ import annotations

import os

from ._history import History
from ._io import FileFormatError, read_container, write_container
from ._serialization import deserialize, serialize


def history_path(path: str) -> str:
    return os.fspath(path) + ".history"


def save_checkpoint(path: str, state, history: History, header: dict) -> None:
    """Append the new history rows, then write the state atomically (in this order, so a
    checkpoint never points at rows that are not on disk)."""
    rows, digest = history.flush(history_path(path))
    head = dict(header, step=int(state.step), eval=history.evals,
                history={"rows": rows, "sha256": digest, "fields": list(history.fields)})
    write_container(path, "checkpoint", head, serialize(state))


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


def check_compatible(path: str, header: dict, spec, data_sha256: str, members: int) -> None:
    """The model structure and the data must be those of the checkpoint."""
    problems = []
    if spec is not None and header.get("model") is not None and header["model"] != spec:
        problems.append(f"model: checkpoint {header['model']}, call {spec}")
    if header.get("members") != members:
        problems.append(f"members: checkpoint {header.get('members')}, call {members}")
    if header.get("data_sha256") != data_sha256:
        problems.append("data: the training data differ from the checkpoint's "
                        "(SHA-256 mismatch)")
    if problems:
        raise ValueError(f"`resume`: {path!r} belongs to another run: " + "; ".join(problems))


def restore(path: str, header: dict, payload: bytes, like_state, n_members: int):
    """`(state, history)` from a verified checkpoint; `like_state` gives the structure."""
    state = deserialize(payload, like_state, path)
    h = header.get("history") or {}
    try:
        history = History.restore(history_path(path), tuple(h["fields"]), n_members,
                                  int(h["rows"]), h["sha256"])
    except KeyError:
        raise FileFormatError(f"{path!r}: the header has no history record.") from None
    if len(history) != int(header["step"]):
        raise FileFormatError(f"{path!r}: {len(history)} history rows for step "
                              f"{header['step']}.")
    history.evals = [(int(s), dict(d)) for s, d in header.get("eval", [])]
    return state, history
