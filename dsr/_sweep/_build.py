"""`dsr.sweep`: the members of a sweep — every setting of a `Grid` times `runs` seeds — as one
stacked ensemble. Members of a smaller model size are padded with zeros to the largest, and a
mask (1 on the member's own parameters, 0 on the padding) keeps the padding at zero during
training, so a padded member computes exactly what the smaller model computes alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import ArgumentTypeError, check_int, check_key
from .._ensemble import Ensemble
from ..models import AbstractModel
from ._grid import Grid


def _leaves(model):
    """Every leaf of `model`'s arrays, None for its other fields (the same order for two
    models of one class whatever their sizes, which are static fields of the tree's
    structure)."""
    return jax.tree_util.tree_flatten(eqx.filter(model, eqx.is_array),
                                      is_leaf=lambda x: x is None)


def _map(fn, a: AbstractModel, b: AbstractModel) -> AbstractModel:
    """`fn(leaf of a, leaf of b)` for every array leaf, in `b`'s structure."""
    la, _ = _leaves(a)
    lb, tb = _leaves(b)
    if len(la) != len(lb):
        raise ValueError(f"{type(a).__name__} and {type(b).__name__} have different fields")
    arrays = jax.tree_util.tree_unflatten(tb, [None if y is None else fn(x, y)
                                               for x, y in zip(la, lb)])
    return eqx.combine(arrays, eqx.filter(b, eqx.is_array, inverse=True))


def _pad_leaf(small, big):
    if small.ndim != big.ndim or any(a > b for a, b in zip(small.shape, big.shape)):
        raise ValueError(f"a parameter of shape {small.shape} does not fit into {big.shape}")
    return jnp.pad(small, [(0, b - a) for a, b in zip(small.shape, big.shape)])


def pad_model(small: AbstractModel, big: AbstractModel) -> AbstractModel:
    """`small`'s parameters in the corner of `big`'s shapes (zeros elsewhere); the static
    fields (sizes) are `big`'s."""
    return _map(_pad_leaf, small, big)


def mask_of(small: AbstractModel, big: AbstractModel) -> AbstractModel:
    """1 where `pad_model(small, big)` holds `small`'s parameters, 0 on the padding."""
    return _map(lambda s, b: _pad_leaf(jnp.ones_like(s), b), small, big)


def unpad_model(padded: AbstractModel, template: AbstractModel) -> AbstractModel:
    """The inverse of `pad_model`: `padded`'s parameters cut to `template`'s shapes."""
    return _map(lambda p, t: p[tuple(slice(0, n) for n in t.shape)], padded, template)


def _check_padding(small: AbstractModel, padded: AbstractModel, sizes: dict) -> None:
    """`padded` (`small` zero-padded) must step and observe as `small` does (on a random
    state): true for the shPLRNN family; a class where it is not (the AL-RNN's rectified
    units are the last ones) is refused here rather than trained wrongly."""
    M, Mp = small.latent_dim, padded.latent_dim
    z = jax.random.normal(jax.random.key(1), (M,), jax.tree_util.tree_leaves(small)[0].dtype)
    zp = jnp.pad(z, (0, Mp - M))
    s = jnp.zeros((small.input_dim,), z.dtype) if small.input_dim else None
    step, step_p = small.step(z, s), padded.step(zp, s)
    ok = (bool(jnp.allclose(step, step_p[:M], rtol=1e-5, atol=1e-6))
          and bool(jnp.all(step_p[M:] == 0))
          and bool(jnp.allclose(small.observe(z), padded.observe(zp), rtol=1e-5, atol=1e-6)))
    if not ok:
        raise ValueError(f"`make_model`: {type(small).__name__} with {sizes} does not compute "
                         "the same when padded with zeros to the largest size, so its sizes "
                         "cannot be swept in one program; sweep them in separate fits.")


@dataclasses.dataclass(frozen=True, eq=False)
class Sweep:
    """The members of a sweep, made by [`dsr.sweep`][]: `ensemble` (every member, padded to
    the largest size; member `i` has setting `i // runs` and seed `i % runs`), `grid`,
    `runs`, `mask` (a stacked model of 0/1, or None when no size is swept) and `templates`
    (one model per setting, at its own size, to cut a member back to). Train it with
    [`dsr.fit`][]."""

    ensemble: Ensemble
    mask: AbstractModel | None
    grid: Grid
    runs: int
    templates: tuple

    @property
    def n_members(self) -> int:
        return self.ensemble.n_members

    def setting(self, i: int) -> dict:
        """The setting of member `i`."""
        return self.grid.settings[i // self.runs]

    def member(self, i: int, stacked: AbstractModel | None = None) -> AbstractModel:
        """Member `i` of `stacked` (default: the untrained members) at its own size."""
        ens = self.ensemble if stacked is None else Ensemble(stacked, self.n_members)
        return unpad_model(ens[i], self.templates[i // self.runs])


def _models(make_model, grid: Grid, keys) -> list[list[AbstractModel]]:
    """`make_model(key, **sizes)` per setting and seed (one call per distinct size)."""
    made: dict[tuple, list] = {}
    out = []
    for setting in grid.settings:
        sizes = {k: setting[k] for k in grid.sizes}
        tag = tuple(sizes.items())
        if tag not in made:
            made[tag] = [make_model(k, **sizes) for k in keys]
            for m in made[tag]:
                if not isinstance(m, AbstractModel):
                    raise ArgumentTypeError(f"`make_model` must return a dsr model; got "
                                            f"{type(m).__name__}.")
        out.append(made[tag])
    return out


def _largest(models: list[list[AbstractModel]]) -> AbstractModel:
    """The member with the most parameters (the largest size: the grid is a product, so
    the setting with every size at its largest exists)."""
    flat = [m for ms in models for m in ms]
    return max(flat, key=lambda m: sum(np.size(a) for a in jax.tree_util.tree_leaves(
        eqx.filter(m, eqx.is_array))))


def sweep(make_model: Callable[..., AbstractModel], grid: Grid, runs: int = 1, *,
          key) -> Sweep:
    """The members of a sweep: for every setting of `grid` and each of `runs` seeds,
    `make_model(k, **sizes)` with `k = jax.random.split(key, runs)[seed]` (the same
    initial keys for every setting, so settings are compared on the same seeds) and `sizes`
    the grid's `hidden_dim` / `latent_dim` of that setting (none if not swept).

    **Returns:** a [`dsr.Sweep`][]; `dsr.fit(sweep, data, validation=...)` trains all
    `len(grid) × runs` members as one ensemble (one vmapped program), each with its own
    setting, and selects.

    Example:
    ```python
    make = lambda key, hidden_dim: dsr.ShPLRNN(3, 3, hidden_dim, key=key)
    sw = dsr.sweep(make, dsr.Grid(alpha=(0.05, 0.1), hidden_dim=(32, 64)), runs=2,
                   key=jax.random.key(0))
    result = dsr.fit(sw, data, validation=0.2, keep="best", steps=2000)
    result.sweep.rows     # every member's setting and validation score
    result.model          # the selected setting's members, an Ensemble
    ```
    """
    if not isinstance(grid, Grid):
        raise ArgumentTypeError(f"`grid` must be a dsr.Grid; got {type(grid).__name__}.")
    runs = check_int("runs", runs, 1)
    key = check_key("key", key)
    if not callable(make_model):
        raise ArgumentTypeError(f"`make_model` must be a function (key, **sizes) -> model; "
                                f"got {make_model!r}.")
    models = _models(make_model, grid, jax.random.split(key, runs))
    big = _largest(models)
    members, masks, templates = [], [], []
    for setting, ms in zip(grid.settings, models):
        padded = [pad_model(m, big) for m in ms]
        if grid.sizes:
            _check_padding(ms[0], padded[0], {k: setting[k] for k in grid.sizes})
        members += padded
        masks += [mask_of(m, big) for m in ms]
        templates.append(ms[0])
    ens = Ensemble.from_members(members)
    mask = Ensemble.from_members(masks).stacked if grid.sizes else None
    return Sweep(ens, mask, grid, runs, tuple(templates))
