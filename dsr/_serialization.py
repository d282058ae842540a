"""Saving and loading models and ensembles in dsr's checksummed file format (`_io.py`).

The header names the class and the constructor's hyper-parameters (and the member count of
an ensemble); the payload is equinox's serialization of the arrays. `load` rebuilds the
structure from the header, then fills in the arrays.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
import math
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._checks import ArgumentTypeError, check_path
from ._ensemble import Ensemble
from ._io import FileFormatError, read_container, write_container
from ._registry import is_registered, name_of, resolve
from .models import AbstractModel


def _constructor(cls):
    """The constructor's parameter names of a model class."""
    return inspect.signature(cls.__init__).parameters


def _build(cls, hp: dict, dtype, key):
    kw = dict(hp, key=key)
    if "dtype" in _constructor(cls):
        kw["dtype"] = dtype
    return cls(**kw)


def hyperparameters(model: AbstractModel) -> dict:
    """`{"class": name, "hyperparameters": {...}}`: what rebuilds `model`'s structure — its
    registered class name, its static fields that are constructor parameters, and the dtype of
    its parameters (one rule for dsr's models and registered user models)."""
    cls = type(model)
    if not is_registered(cls):
        raise TypeError(f"cannot serialize {cls.__qualname__}: its class is not registered "
                        "(decorate it with @dsr.register).")
    params = _constructor(cls)
    hp = {f.name: getattr(model, f.name) for f in dataclasses.fields(model)
          if f.metadata.get("static", False) and f.name in params and f.name != "dtype"}
    leaf = next(x for x in jax.tree_util.tree_leaves(model) if eqx.is_inexact_array(x))
    hp["dtype"] = str(leaf.dtype)
    return {"class": name_of(cls), "hyperparameters": hp}


def _check_rebuilds(model, spec: dict, lead: int) -> None:
    """`cls(**hyperparameters, key=...)` must give `model`'s structure (`lead`: 1 for the
    stacked model of an ensemble, whose arrays have a member axis first) (a registered user
    model whose constructor does not take its static fields cannot be loaded)."""
    hp = dict(spec["hyperparameters"])
    dtype = jnp.dtype(hp.pop("dtype"))
    try:
        like = eqx.filter_eval_shape(lambda: _build(type(model), hp, dtype, jax.random.key(0)))
    except Exception as e:  # the user's constructor may raise anything
        raise ArgumentTypeError(f"`model`: {type(model).__qualname__}(**{hp}, key=...) does "
                                f"not rebuild it ({type(e).__name__}: {e}).") from None
    shape = lambda t, lead=0: [(x.shape[lead:], x.dtype)  # noqa: E731
                               for x in jax.tree_util.tree_leaves(t)
                               if eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)]
    same_tree = jax.tree_util.tree_structure(like) == jax.tree_util.tree_structure(model)
    got, want = shape(like), shape(model, lead)
    if same_tree and [s for s, _ in got] == [s for s, _ in want] and got != want:
        has = "takes `dtype=` but" if "dtype" in _constructor(type(model)) else \
            "takes no `dtype` argument and"
        raise ArgumentTypeError(f"`model`: {type(model).__qualname__}'s constructor {has} "
                                f"builds {got[0][1]} arrays; the model's are {dtype} (give "
                                "the constructor a `dtype=` keyword that it uses for every "
                                "array).")
    if not same_tree or got != want:
        raise ArgumentTypeError(f"`model`: {type(model).__qualname__}(**{hp}, key=...) builds "
                                "arrays of other shapes or dtypes than the model's; its static "
                                "fields must be the constructor's arguments.")


def model_spec(model) -> dict | None:
    """The structure of a model or an ensemble as JSON, or None if its class cannot be
    rebuilt from a header (not registered, e.g. `TTTModel`)."""
    members = model.n_members if isinstance(model, Ensemble) else None
    one = model.stacked if isinstance(model, Ensemble) else model  # same static fields
    try:
        spec = hyperparameters(one)
    except TypeError:
        return None
    return dict(spec, members=members)


def skeleton(spec: dict, path: str = "<file>", payload_bytes: int | None = None):
    """The structure a header describes, as a model (or ensemble) of `jax.ShapeDtypeStruct`
    leaves: built abstractly (`eqx.filter_eval_shape`), so nothing is allocated. With
    `payload_bytes`, the arrays' size (members × parameters × dtype size) must fit in it."""
    cls = resolve(spec.get("class") if isinstance(spec, dict) else None, "model", path,
                  "the header does not describe a dsr model")
    try:
        hp = dict(spec["hyperparameters"])
        dtype = jnp.dtype(hp.pop("dtype"))
        members = spec.get("members")
        if members is not None and (not isinstance(members, int) or isinstance(members, bool)
                                    or members < 1):
            raise ValueError(f"members: {members!r}")
        make = lambda k: _build(cls, hp, dtype, k)  # noqa: E731

        def build():
            if members is None:
                return make(jax.random.key(0))
            return Ensemble(eqx.filter_vmap(make)(jax.random.split(jax.random.key(0),
                                                                   members)), members)

        like = eqx.filter_eval_shape(build)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise FileFormatError(f"{path!r}: the header does not describe a dsr model ({e}).") \
            from None
    if payload_bytes is not None:
        need = array_bytes(like, dtype)
        if need > payload_bytes:
            raise FileFormatError(f"{path!r}: the header describes {need} bytes of arrays but "
                                  f"the payload has {payload_bytes} (the file is damaged or "
                                  "not written by dsr).")
    return like


def array_bytes(tree, dtype=None) -> int:
    """The bytes of the arrays of `tree` (abstract or not); floating arrays counted in
    `dtype` when given (the file's, which JAX may narrow without x64)."""
    total = 0
    for x in jax.tree_util.tree_leaves(tree):
        if eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct):
            item = x.dtype.itemsize
            if dtype is not None and jnp.issubdtype(x.dtype, jnp.inexact):
                item = max(item, jnp.dtype(dtype).itemsize)
            total += math.prod(x.shape) * item
    return total


def serialize(tree) -> bytes:
    buf = io.BytesIO()
    eqx.tree_serialise_leaves(buf, tree)
    return buf.getvalue()


_NUMERIC = "biufc"


def _checked_leaf(f, x):
    """Read one leaf as `eqx.default_deserialise_filter_spec` does, after checking its
    `.npy` header: the shape `x` has and a numeric dtype whose bytes the payload holds — so
    a damaged or crafted payload never allocates more than its own size."""
    if not (eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)):
        return eqx.default_deserialise_filter_spec(f, x)
    at = f.tell()
    try:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, _, dtype = read(f)  # (numpy bounds the header's length)
    except Exception as e:  # numpy raises ValueError or others for a damaged header
        raise ValueError(f"a damaged array header ({e})") from None
    left = len(f.getbuffer()) - f.tell()
    if dtype.kind not in _NUMERIC or tuple(shape) != tuple(x.shape):
        raise ValueError(f"an array of shape {tuple(shape)} and dtype {dtype} where the "
                         f"header gives shape {tuple(x.shape)}")
    if math.prod(shape) * dtype.itemsize > left:
        raise ValueError(f"an array of {math.prod(shape) * dtype.itemsize} bytes in the "
                         f"{left} bytes left")
    f.seek(at)
    return eqx.default_deserialise_filter_spec(f, x)


def deserialize(payload: bytes, like, path: str):
    """`like` (arrays or `jax.ShapeDtypeStruct`s) with its arrays read from `payload`, each
    checked before it is read; a mismatch or extra bytes are a `FileFormatError`."""
    buf = io.BytesIO(payload)
    try:
        out = eqx.tree_deserialise_leaves(buf, like, filter_spec=_checked_leaf)
        if buf.tell() != len(payload):
            raise ValueError(f"{len(payload) - buf.tell()} bytes after the last array")
    except Exception as e:  # equinox/numpy raise various errors for a mismatched payload
        while e.__cause__ is not None:  # equinox wraps the error with the leaf's path
            e = e.__cause__
        raise FileFormatError(f"{path!r}: the stored arrays do not match the structure in its "
                              f"header ({type(e).__name__}: {e}).") from None
    return out


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
        raise ArgumentTypeError(f"`model`: cannot save {type(model).__qualname__}: its class "
                                "is not registered (decorate it with @dsr.register; dsr's own "
                                "savable models are registered).")
    if isinstance(model, Ensemble):
        _check_rebuilds(model.stacked, spec, 1)
    else:
        _check_rebuilds(model, spec, 0)
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

    Both checksums are verified, and the header's sizes checked against the payload, before
    anything is built: damaged, truncated, foreign or crafted files raise
    [`dsr.FileFormatError`][] naming the file (a header claiming arrays larger than the file
    allocates nothing).

    **Arguments:**

    - `path`: the file.

    **Returns:** the model, or an [`dsr.Ensemble`][]."""
    path = check_path("path", path)
    header, payload = read_container(path, ("model", "ensemble"))
    return deserialize(payload, skeleton(header, path, len(payload)), path)


def load_extra(path: str | os.PathLike) -> dict:
    """The `extra` metadata saved with a model (e.g. the command line's standardization).

    **Arguments:**

    - `path`: a file written by [`dsr.save`][].

    **Returns:** the dict passed as `extra` (empty if none)."""
    header, _ = read_container(check_path("path", path), ("model", "ensemble"))
    return header.get("extra", {})
