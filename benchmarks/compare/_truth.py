"""The true system as a `Member` (the floor of every measure that needs a map: RMSE(n), valid
prediction time, the largest Lyapunov exponent by the same code as for the models).
Its map is `System.flow_map`: RK4 on the JAX field, or on dysts' NumPy right-hand side through
a host callback (the fallback)."""

from __future__ import annotations

import jax.numpy as jnp

from ._member import Member

SUBSTEPS = 20


def truth_member(system, data) -> Member:
    mean, std = jnp.asarray(data["mean"]), jnp.asarray(data["std"])
    flow = system.flow_map(SUBSTEPS)
    info = {"substeps": SUBSTEPS, "map": system.info()["floor_map"]}
    if system.post is None:
        return Member(warm=lambda ctx: flow(ctx[-1] * std + mean), step=flow,
                      observe=lambda x: (x - mean) / std, info=info)
    # Post-processed coordinates (sin of an angle, ...) do not determine the raw state: the
    # true system starts from its own raw state at the context's last point, looked up in the
    # test trajectory (every context the measures use is a window of it).
    post = system.post[1]
    test, raw = jnp.asarray(data["test"]), jnp.asarray(data["test_raw"], jnp.float32)

    def warm(ctx):
        i = jnp.argmin(jnp.sum((test - ctx[-1]) ** 2, axis=1))
        return flow(raw[i])

    return Member(warm=warm, step=flow, observe=lambda x: (post(x) - mean) / std,
                  info=dict(info, warm="raw state looked up in the test trajectory"))
