"""Ensembles: K models of one class in one module, stacked on a leading member axis.

An `Ensemble` is what `eqx.filter_vmap` over a model constructor returns, wrapped: every
array leaf of `stacked` has a leading axis of length K. `dsr.fit`, `dsr.generate`,
`dsr.metrics.evaluate` and `dsr.save` accept it wherever they accept a model, and run all
members in one vmapped (and, over several devices, sharded) program.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from ._checks import ArgumentTypeError, check_int, check_key, is_integer
from .models import AbstractModel


def _leading(tree) -> set[int]:
    return {x.shape[0] if x.ndim else -1 for x in jax.tree_util.tree_leaves(tree)
            if eqx.is_array(x)}


class Ensemble(eqx.Module):
    """K members of one model class; member `i` is `ens[i]`, an ordinary model.

    Build it with [`dsr.ensemble`][] `(make_model, n, key=key)` or
    `Ensemble.from_members(models)`.
    `len(ens)`, iteration and `ens.members` give the members; `ens.stacked` is the model whose
    array leaves carry the member axis.

    Example:
    ```python
    ens = dsr.ensemble(lambda k: dsr.ShPLRNN(3, 3, 64, key=k), 8, key=jax.random.key(0))
    result = dsr.fit(ens, data, alpha=0.1, steps=2000)    # one vmapped fit for all 8
    x_gen = dsr.generate(result.model, 10_000, context=x_test[:512])   # (8, 10000, 3)
    ```
    """

    stacked: AbstractModel
    n_members: int = eqx.field(static=True)

    def __check_init__(self):
        if not isinstance(self.stacked, AbstractModel):
            raise ArgumentTypeError(
                f"an Ensemble holds dsr models; got {type(self.stacked).__name__}.")
        check_int("n_members", self.n_members, 1)
        if _leading(self.stacked) != {self.n_members}:
            raise ValueError(
                f"every array of an ensemble's stacked model must have a leading member axis "
                f"of length {self.n_members}; got leading sizes {sorted(_leading(self.stacked))}.")

    @staticmethod
    def from_members(models: Sequence[AbstractModel]) -> Ensemble:
        """Stack models of one class and one structure (shapes, dtypes, static fields)."""
        models = list(models)
        if not models:
            raise ValueError("`models` must contain at least one model.")
        first = models[0]
        for i, m in enumerate(models):
            if type(m) is not type(first):
                raise ArgumentTypeError(
                    f"`models` must all be of one class; model 0 is {type(first).__name__}, "
                    f"model {i} is {type(m).__name__}.")
            if not _same_structure(first, m):
                raise ValueError(f"`models` must have one structure (shapes, dtypes and "
                                 f"hyper-parameters); model {i} differs from model 0.")
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs) if eqx.is_array(xs[0])
                                         else xs[0], *models)
        return Ensemble(stacked, len(models))

    def __len__(self) -> int:
        return self.n_members

    def __getitem__(self, i) -> AbstractModel:
        if not is_integer(i):
            raise ArgumentTypeError(f"an ensemble index must be an integer; got {i!r}.")
        i = int(i)
        if not -self.n_members <= i < self.n_members:
            raise IndexError(f"ensemble index {i} out of range for {self.n_members} members.")
        return jax.tree_util.tree_map(lambda x: x[i] if eqx.is_array(x) else x, self.stacked)

    def __iter__(self) -> Iterator[AbstractModel]:
        return (self[i] for i in range(self.n_members))

    @property
    def members(self) -> list[AbstractModel]:
        """The members as a list of ordinary models."""
        return list(self)


def _same_structure(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    if ta != tb:
        return False
    return all((x.shape, x.dtype) == (y.shape, y.dtype) if eqx.is_array(x) else x == y
               for x, y in zip(la, lb))


def ensemble(make_model: Callable[[PRNGKeyArray], AbstractModel], n: int, *,
             key: PRNGKeyArray) -> Ensemble:
    """`n` models `make_model(k)` for `k` in `jax.random.split(key, n)`, built in one
    `eqx.filter_vmap` and stacked: member `i` equals `make_model(jax.random.split(key, n)[i])`.

    **Arguments:**

    - `make_model`: `make_model(key) -> model`, a dsr model.
    - `n`: the number of members, ≥ 1.
    - `key`: split into the members' keys.

    **Returns:** an [`dsr.Ensemble`][].
    """
    n = check_int("n", n, 1)
    key = check_key("key", key)
    if not callable(make_model):
        raise ArgumentTypeError(f"`make_model` must be a function key -> model; got "
                                f"{make_model!r}.")
    keys = jax.random.split(key, n)
    stacked = eqx.filter_vmap(make_model)(keys)
    if not isinstance(stacked, AbstractModel):
        raise ArgumentTypeError(f"`make_model` must return a dsr model; got "
                                f"{type(stacked).__name__}.")
    return Ensemble(stacked, n)


def as_stack(model) -> tuple[AbstractModel, int, bool]:
    """`(stacked model, K, is_ensemble)`: a single model becomes a stack of one."""
    if isinstance(model, Ensemble):
        return model.stacked, model.n_members, True
    return _add_member_axis(model), 1, False


@eqx.filter_jit
def _add_member_axis(model):
    """`model` as a stack of one (one compiled program, not one per array)."""
    return jax.tree_util.tree_map(lambda x: x[None] if eqx.is_array(x) else x, model)


@eqx.filter_jit
def _first_member(stacked):
    return jax.tree_util.tree_map(lambda x: x[0] if eqx.is_array(x) else x, stacked)


def from_stack(stacked: AbstractModel, n_members: int, is_ensemble: bool):
    """Inverse of `as_stack` (dropping padded members beyond `n_members`)."""
    if not is_ensemble:
        return _first_member(stacked)
    cut = jax.tree_util.tree_map(lambda x: x[:n_members] if eqx.is_array(x) else x, stacked)
    return Ensemble(cut, n_members)
