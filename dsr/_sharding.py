"""Placing an ensemble's members on devices with `jax.sharding`.

With more than one device the member axis is sharded over a 1-D `Mesh(devices,
("ensemble",))` with `PartitionSpec("ensemble")`; K is padded to a multiple of the device
count (the padded members are inactive copies of member 0 and are dropped at the end) and
the data are replicated. Placement goes through `jax.make_array_from_callback`, which also
works across hosts after `jax.distributed.initialize()`: every process builds the same host
arrays and each device receives its shard.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def process_index() -> int:
    """This process's index under `jax.distributed` (0 without it)."""
    return jax.process_index()


def process_count() -> int:
    return jax.process_count()


def is_writer() -> bool:
    """Whether this process writes files: process 0 only, so that under `jax.distributed`
    a checkpoint and its history have one writer, and the other processes never touch
    them."""
    return process_index() == 0


def resolve_devices(devices) -> list | None:
    """`None` (the default device, no sharding), `"all"` (`jax.devices()`) or a list of
    devices from `jax.devices()`."""
    if devices is None:
        return None
    available = jax.devices()
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"`devices` must be None, 'all' or a list of jax devices; "
                             f"got {devices!r}.")
        return list(available)
    try:
        devices = list(devices)
    except TypeError:
        raise ValueError(f"`devices` must be None, 'all' or a list of jax devices; "
                         f"got {devices!r}.") from None
    if not devices:
        raise ValueError("`devices` names no device (an empty list).")
    for d in devices:
        if d not in available:
            raise ValueError(f"`devices`: {d!r} is not one of jax.devices() = {available}.")
    if len(set(devices)) != len(devices):
        raise ValueError("`devices` lists a device more than once.")
    return devices


class Placement:
    """Where the members live: `mesh` (None for one device) and the padded member count."""

    def __init__(self, n_members: int, devices: list | None):
        self.n_members = n_members
        self.mesh = None
        if devices is not None and len(devices) > 1 and n_members > 1:
            self.mesh = Mesh(np.array(devices), ("ensemble",))
        n_dev = 1 if self.mesh is None else len(devices)
        self.n_padded = int(math.ceil(n_members / n_dev) * n_dev)

    def pad(self, tree):
        """Pad the member axis (the leading axis of every array that is not a scalar) to
        `n_padded` with copies of member 0."""
        extra = self.n_padded - self.n_members

        def one(x):
            if not eqx.is_array(x) or np.ndim(x) == 0 or not extra:
                return x
            x = np.asarray(x)
            return np.concatenate([x, np.repeat(x[:1], extra, 0)])

        return jax.tree_util.tree_map(one, tree)

    def unpad(self, tree):
        """Drop the padded members (host arrays whose leading axis is `n_padded`)."""
        if self.n_padded == self.n_members:
            return tree

        def one(x):
            if eqx.is_array(x) and np.ndim(x) and np.shape(x)[0] == self.n_padded:
                return x[:self.n_members]
            return x

        return jax.tree_util.tree_map(one, tree)

    def _put(self, tree, spec):
        if self.mesh is None:
            return jax.tree_util.tree_map(lambda x: jax.device_put(x) if eqx.is_array(x)
                                          else x, tree)
        sharding = NamedSharding(self.mesh, spec)

        def put(x):
            if not eqx.is_array(x):
                return x
            host = np.asarray(x)
            return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

        return jax.tree_util.tree_map(put, tree)

    def members(self, tree):
        """Place a tree whose arrays have a leading member axis of length `n_padded`."""
        return self._put(tree, PartitionSpec("ensemble"))

    def replicated(self, tree):
        return self._put(tree, PartitionSpec())

    def member_or_replicated(self, tree):
        """Member-sharded for arrays with the member axis, replicated for the rest (scalars)."""
        if self.mesh is None:
            return self._put(tree, None)
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        placed = [self.members(x) if eqx.is_array(x) and np.ndim(x) and
                  np.shape(x)[0] == self.n_padded else self.replicated(x) for x in leaves]
        return jax.tree_util.tree_unflatten(treedef, placed)


def to_host(tree):
    """Bring arrays to host NumPy, gathering shards from every process if needed."""
    def get(x):
        if not isinstance(x, jax.Array):
            return x
        if not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    return jax.tree_util.tree_map(get, tree)
