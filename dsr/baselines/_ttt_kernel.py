"""LaCT's static SwiGLU kernel φ of the TTT-KVB inner model (Liu et al. (2026), *Test-Time
Training with KV Binding Is Secretly Linear Attention*, Sec. 5.3, App. E.1)."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray


class SwiGLUKernel(eqx.Module):
    """LaCT's static SwiGLU kernel `φ(x) = silu(x W_gate) ⊙ (x W_up)` (Liu et al. 2026, Sec. 5.3,
    App. E.1, where `W_gate`, `W_up` are called `W_0`, `W_2`).

    **Arguments:** `w_gate`, `w_up`, both `(d_key, d_hidden)`. `SwiGLUKernel.random(d_key,
    d_hidden, key=...)` draws them from `U(±1/√d_key)`.
    """

    w_gate: Float[Array, "Dk Dh"]
    w_up: Float[Array, "Dk Dh"]

    def __check_init__(self):
        if jnp.ndim(self.w_gate) != 2 or jnp.shape(self.w_gate) != jnp.shape(self.w_up):
            raise ValueError(
                "`kernel` weights `w_gate` and `w_up` must both have shape (d_key, d_hidden); "
                f"got {jnp.shape(self.w_gate)} and {jnp.shape(self.w_up)}."
            )

    @staticmethod
    def random(d_key: int, d_hidden: int, *, key: PRNGKeyArray, dtype=None) -> SwiGLUKernel:
        """Weights drawn from `U(±1/√d_key)`."""
        dtype = jnp.result_type(float) if dtype is None else dtype
        kg, ku = jax.random.split(key)
        s = 1.0 / math.sqrt(d_key)
        return SwiGLUKernel(
            jax.random.uniform(kg, (d_key, d_hidden), dtype, -s, s),
            jax.random.uniform(ku, (d_key, d_hidden), dtype, -s, s),
        )

    @property
    def d_key(self) -> int:
        return self.w_gate.shape[0]

    @property
    def d_hidden(self) -> int:
        return self.w_gate.shape[1]

    def __call__(self, x: Float[Array, "*n Dk"]) -> Float[Array, "*n Dh"]:
        return jax.nn.silu(x @ self.w_gate) * (x @ self.w_up)


def apply_kernel(kernel, x):
    """`φ(x)`: the identity for `kernel=None`."""
    return x if kernel is None else kernel(x)
