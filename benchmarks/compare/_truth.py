"""The true system as a `Member` (the floor of every measure that needs a map: RMSE(n), valid
prediction time, the largest Lyapunov exponent by the same code as for the models)."""

from __future__ import annotations

import jax.numpy as jnp

from ._member import Member, rk4_map

SUBSTEPS = 20


def truth_member(system, data) -> Member:
    mean, std = jnp.asarray(data["mean"]), jnp.asarray(data["std"])
    flow = rk4_map(system.jnp_field(), system.dt, SUBSTEPS)
    return Member(warm=lambda ctx: flow(ctx[-1] * std + mean), step=flow,
                  observe=lambda x: (x - mean) / std, info={"substeps": SUBSTEPS})
