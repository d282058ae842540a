"""`Sequential`: the reference solver, `lax.scan` with backpropagation through time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._checks import check_int
from ._base import AbstractSolver, SolverInfo


class Sequential(AbstractSolver):
    """`lax.scan` over time; gradients by backpropagation through time (BPTT).

    The reference every parallel solver is tested against.

    **Arguments:**

    - `unroll`: steps per loop iteration passed to `lax.scan` (default 1). Unrolling cuts
      the per-step loop overhead for small latent sizes but slows large ones and lengthens
      compilation (measured on the documentation's Performance page).
    """

    unroll: int = eqx.field(default=1, static=True)

    def __check_init__(self):
        check_int("unroll", self.unroll, 1)

    def initial_guess(self, zbar):
        return None

    def solve(self, step, jac, params, z0, us, z_init=None):
        def body(z, u):
            z = step(params, z, u)
            return z, z

        _, zs = jax.lax.scan(body, z0, us, unroll=self.unroll)
        info = SolverInfo(
            iterations=jnp.array(0, jnp.int32),
            converged=jnp.array(True),
            residual=jnp.zeros((), zs.dtype),
            finite=jnp.all(jnp.isfinite(zs)),
        )
        return zs, info
