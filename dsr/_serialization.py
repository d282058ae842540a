"""Saving and loading models: a JSON header (class, hyperparameters) + equinox leaves."""

from __future__ import annotations

import json
import os
import tempfile

import equinox as eqx
import jax
import jax.numpy as jnp

from .baselines import SelectiveSSM
from .models import LSSM, AbstractModel, ClippedShPLRNN, ShPLRNN

_CLASSES = {"ShPLRNN": ShPLRNN, "ClippedShPLRNN": ClippedShPLRNN, "LSSM": LSSM,
            "SelectiveSSM": SelectiveSSM}


def hyperparameters(model: AbstractModel) -> dict:
    """The constructor arguments that rebuild `model`'s structure."""
    name = type(model).__name__
    if name not in _CLASSES:
        raise TypeError(f"cannot serialize {name}; supported: {sorted(_CLASSES)}.")
    hp = dict(obs_dim=model.obs_dim, latent_dim=model.latent_dim,
              hidden_dim=model.hidden_dim, input_dim=model.input_dim)
    if isinstance(model, (ShPLRNN, ClippedShPLRNN)):
        hp["rank"] = model.rank
    if isinstance(model, SelectiveSSM):
        hp.update(n_heads=model.n_heads, state_size=model.state_size)
    leaf = next(x for x in jax.tree_util.tree_leaves(model) if eqx.is_inexact_array(x))
    hp["dtype"] = str(leaf.dtype)
    return {"class": name, "hyperparameters": hp}


def skeleton(header: dict) -> AbstractModel:
    """An initialized model of the saved structure (its values are then overwritten)."""
    cls = _CLASSES[header["class"]]
    hp = dict(header["hyperparameters"])
    dtype = jnp.dtype(hp.pop("dtype"))
    return cls(**hp, key=jax.random.key(0), dtype=dtype)


def atomic_write(path: str, write) -> None:
    """Write through a temporary file and `os.replace`, so a failed write leaves nothing."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save(path: str, model: AbstractModel, *, extra: dict | None = None) -> None:
    """Save `model` to `path` (one file: a JSON line, then the serialized arrays)."""
    header = hyperparameters(model)
    header["extra"] = extra or {}

    def write(f):
        f.write((json.dumps(header) + "\n").encode())
        eqx.tree_serialise_leaves(f, model)

    atomic_write(path, write)


def load(path: str) -> AbstractModel:
    """Load a model saved by `dsr.save`."""
    with open(path, "rb") as f:
        header = json.loads(f.readline().decode())
        return eqx.tree_deserialise_leaves(f, skeleton(header))
