"""Saving and loading models and ensembles in dsr's checksummed file format (`_io.py`).

The header names the class and the constructor's hyper-parameters (and the member count of
an ensemble); the payload is equinox's serialization of the arrays. `load` rebuilds the
structure from the header, then fills in the arrays.
"""

from __future__ import annotations

import io
import json
import os

import equinox as eqx
import jax
import jax.numpy as jnp

from ._checks import ArgumentTypeError, check_path
from ._ensemble import Ensemble
from ._io import FileFormatError, read_container, write_container
from .baselines import SelectiveSSM
from .models import LSSM, AbstractModel, AbstractShPLRNN, ClippedShPLRNN, ShPLRNN

_CLASSES = {c.__name__: c for c in (ShPLRNN, ClippedShPLRNN, LSSM, SelectiveSSM)}


def hyperparameters(model: AbstractModel) -> dict:
    """`{"class": name, "hyperparameters": {...}}`: what rebuilds `model`'s structure."""
    name = type(model).__name__
    if name not in _CLASSES:
        raise TypeError(f"cannot serialize {name}; supported: {sorted(_CLASSES)}.")
    hp = dict(obs_dim=model.obs_dim, latent_dim=model.latent_dim,
              hidden_dim=model.hidden_dim, input_dim=model.input_dim)
    if isinstance(model, AbstractShPLRNN):
        hp["rank"] = model.rank
    if isinstance(model, SelectiveSSM):
        hp.update(n_heads=model.n_heads, state_size=model.state_size)
    leaf = next(x for x in jax.tree_util.tree_leaves(model) if eqx.is_inexact_array(x))
    hp["dtype"] = str(leaf.dtype)
    return {"class": name, "hyperparameters": hp}


def model_spec(model) -> dict | None:
    """The structure of a model or an ensemble as JSON, or None if its class cannot be
    rebuilt from a header (e.g. `TTTModel`)."""
    members = model.n_members if isinstance(model, Ensemble) else None
    one = model.stacked if isinstance(model, Ensemble) else model  # same static fields
    try:
        spec = hyperparameters(one)
    except TypeError:
        return None
    return dict(spec, members=members)


def skeleton(spec: dict, path: str = "<file>"):
    """A model (or ensemble) of the saved structure; its values are then overwritten."""
    try:
        cls = _CLASSES[spec["class"]]
        hp = dict(spec["hyperparameters"])
        dtype = jnp.dtype(hp.pop("dtype"))
        make = lambda k: cls(**hp, key=k, dtype=dtype)  # noqa: E731
        if spec.get("members") is None:
            return make(jax.random.key(0))
        return Ensemble(eqx.filter_vmap(make)(jax.random.split(jax.random.key(0),
                                                               spec["members"])),
                        spec["members"])
    except (KeyError, TypeError, ValueError) as e:
        raise FileFormatError(f"{path!r}: the header does not describe a dsr model ({e}).") \
            from None


def serialize(tree) -> bytes:
    buf = io.BytesIO()
    eqx.tree_serialise_leaves(buf, tree)
    return buf.getvalue()


def deserialize(payload: bytes, like, path: str):
    """`like` with its arrays read from `payload`; a mismatch is a `FileFormatError`."""
    try:
        return eqx.tree_deserialise_leaves(io.BytesIO(payload), like)
    except Exception as e:  # equinox/numpy raise various errors for a mismatched payload
        raise FileFormatError(f"{path!r}: the stored arrays do not match the structure in its "
                              f"header ({type(e).__name__}: {e}).") from None


def save(path: str | os.PathLike, model, *, extra: dict | None = None) -> None:
    """Save a model or an [`dsr.Ensemble`][] to `path`, one checksummed file (atomic write).

    **Arguments:**

    - `path`: the file.
    - `model`: the model or ensemble.
    - `extra`: JSON-serializable metadata stored in the header (e.g. data statistics; read
      back by [`dsr.load_extra`][]).

    **Returns:** None. Read the file back with [`dsr.load`][].
    """
    path = check_path("path", path)
    if os.path.isdir(path):
        raise ValueError(f"`path` {path!r} is a folder; give a file name.")
    if not isinstance(model, (AbstractModel, Ensemble)):
        raise ArgumentTypeError(f"`model` must be a dsr model or Ensemble; got "
                                f"{type(model).__name__}.")
    spec = model_spec(model)
    if spec is None:
        raise ArgumentTypeError(f"`model`: cannot save {type(model).__name__}; supported: "
                                f"{sorted(_CLASSES)}.")
    if extra is not None:
        if not isinstance(extra, dict):
            raise ArgumentTypeError(f"`extra` must be a dict or None; got {type(extra).__name__}.")
        try:
            json.dumps(extra)
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"`extra` must be JSON-serializable ({e}).") from None
    kind = "ensemble" if isinstance(model, Ensemble) else "model"
    write_container(path, kind, dict(spec, extra=extra or {}), serialize(model))


def load(path: str | os.PathLike):
    """Load a model or ensemble saved by [`dsr.save`][].

    Both checksums are verified before anything is built: damaged, truncated or foreign files
    raise [`dsr.FileFormatError`][] naming the file.

    **Arguments:**

    - `path`: the file.

    **Returns:** the model, or an [`dsr.Ensemble`][]."""
    path = check_path("path", path)
    header, payload = read_container(path, ("model", "ensemble"))
    return deserialize(payload, skeleton(header, path), path)


def load_extra(path: str | os.PathLike) -> dict:
    """The `extra` metadata saved with a model (e.g. the command line's standardization).

    **Arguments:**

    - `path`: a file written by [`dsr.save`][].

    **Returns:** the dict passed as `extra` (empty if none)."""
    header, _ = read_container(check_path("path", path), ("model", "ensemble"))
    return header.get("extra", {})
