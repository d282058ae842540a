"""Per-member training settings of a sweep: what differs between the members of one vmapped
`fit` besides their parameters and windows (a `dsr.Grid`'s settings, as arrays over members).

- the learning rate: each member's optimizer update is scaled by `lr / learning_rate` (the
  default optimizer's step is proportional to its learning rate, Adam-family and schedule
  alike, so this is that member's learning rate; 1 where they are equal);
- the teacher-signal noise σ (per member, in the data's units);
- the regularization weights λ (the loss is linear in each);
- the model size: a mask of 1 on the member's own parameters and 0 on its zero padding,
  applied to the gradient (before clipping and the optimizer) and to the update, so the
  padding stays exactly zero;
- the forcing strength α is the member's entry of `TrainState.alpha` (its start value).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._regularization import Regularization
from .._sweep._build import Sweep
from .._sweep._grid import LAMBDAS
from .._sweep._select import RULE
from ..models import AbstractGTFModel, AbstractModel


class MemberSettings(eqx.Module):
    """Arrays over the members (None: every member uses the fit's own setting)."""

    lr_scale: Float[Array, " K"] | None = None
    noise: Float[Array, " K"] | None = None
    lambdas: Float[Array, "K S"] | None = None  # one column per swept λ (`lambda_keys`)
    mask: AbstractModel | None = None
    lambda_keys: tuple = eqx.field(static=True, default=())


def member_settings(sweep: Sweep, learning_rate: float, dtype):
    """`(MemberSettings, α₀ per member or None)` of a sweep's members."""
    rows = [sweep.setting(i) for i in range(sweep.n_members)]
    keys = sweep.grid.keys

    def column(name, scale=1.0):
        return (np.asarray([r[name] / scale for r in rows], dtype) if name in keys else None)

    lam_keys = tuple(k for k in LAMBDAS if k in keys)
    lambdas = (np.stack([column(k) for k in lam_keys], axis=1) if lam_keys else None)
    ms = MemberSettings(lr_scale=column("learning_rate", learning_rate),
                        noise=column("noise"), lambdas=lambdas,
                        mask=None if sweep.mask is None else jax.tree_util.tree_map(
                            lambda m: np.asarray(m, dtype), sweep.mask),
                        lambda_keys=lam_keys)
    return ms, column("alpha")


def regularization_of(reg: Regularization | None, ms: MemberSettings | None):
    """The loss's regularization term of one member: `reg`, or — with swept λ — `reg` with
    those λ at 0 plus `Σ_j λ_j · term_j` (each term at λ = 1; the loss is linear in λ)."""
    if ms is None or ms.lambdas is None:
        return reg
    fixed = {k: (0.0 if k in ms.lambda_keys else getattr(reg, k)) for k in LAMBDAS}
    base = Regularization(reg.mar_units, **fixed, p=reg.p)
    units = [Regularization(reg.mar_units, **{k: 1.0}, p=reg.p) for k in ms.lambda_keys]

    def term(model):
        out = base(model)
        for j, unit in enumerate(units):
            out = out + ms.lambdas[j] * unit(model)
        return out
    return term


def masked(tree, ms: MemberSettings | None, scale: bool = False):
    """`tree` (gradients or updates of one member) times its mask, and — with `scale` — its
    learning-rate factor."""
    if ms is None:
        return tree
    if ms.mask is not None:
        mask = eqx.filter(ms.mask, eqx.is_inexact_array)
        tree = jax.tree_util.tree_map(lambda g, m: g * m.astype(g.dtype), tree, mask)
    if scale and ms.lr_scale is not None:
        tree = jax.tree_util.tree_map(lambda u: u * ms.lr_scale.astype(u.dtype), tree)
    return tree


def teacher_noise(keys, step, x, noise):
    """Per member: the windows `x` plus N(0, σ_k²) noise (σ_k = `noise[k]`; the same stream
    as a single `fit` with `noise=σ_k`)."""
    def one(k, xb, sigma):
        k = jax.random.fold_in(jax.random.fold_in(k, step), 0x6E6F6973)
        return xb + sigma.astype(xb.dtype) * jax.random.normal(k, xb.shape, xb.dtype)
    return jax.vmap(one)(keys, x, jnp.asarray(noise))


def check_sweep(sweep: Sweep, one, validation, regularization) -> dict:
    """Refuse the sweeps one program cannot train (before anything is compiled); return the
    sweep's entry of `fit`'s settings."""
    keys = sweep.grid.keys
    if validation is None:
        raise ValueError("`model` is a dsr.Sweep: it selects its setting on free-run "
                         "validation, so pass `validation=` (held-out data or a fraction).")
    if "alpha" in keys and not isinstance(one, AbstractGTFModel):
        raise ValueError(f"`Grid` alpha: {type(one).__name__} is not trained by generalized "
                         "teacher forcing; α has no effect (drop it from the grid).")
    lam = [k for k in LAMBDAS if k in keys]
    if lam and regularization is None:
        raise ValueError(f"`Grid` {lam[0]}: pass `regularization=dsr.Regularization(...)` "
                         "(its mar_units and p); the grid sets the swept weights per member.")
    if sweep.grid.sizes and regularization is not None:
        raise ValueError("`Grid` hidden_dim / latent_dim with `regularization`: the MAR terms "
                         "depend on the model's size (and its last units), so a padded member "
                         "is not regularized as the smaller model; sweep sizes without it or "
                         "in separate fits.")
    return dict(grid=sweep.grid.to_config(), runs=sweep.runs, rule=RULE)
