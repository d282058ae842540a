"""Abstract model interfaces."""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class AbstractModel(eqx.Module):
    """A latent recurrent model `z_t = F(z_{t-1}, s_t)`, `x̂_t = G(z_t)`.

    `step` is the free-running (closed-loop) latent map used for generation and
    Lyapunov exponents; `observe` maps latents to observations.
    """

    obs_dim: eqx.AbstractVar[int]
    latent_dim: eqx.AbstractVar[int]
    input_dim: eqx.AbstractVar[int]

    @abc.abstractmethod
    def step(self, z: Float[Array, " M"], s: Float[Array, " K"] | None = None) -> Float[Array, " M"]:
        """One free-running step `z_t = F(z_{t-1}, s_t)`."""

    @abc.abstractmethod
    def observe(self, z: Float[Array, " M"]) -> Float[Array, " N"]:
        """The observation model `x̂ = G(z)`."""

    def jacobian(self, z: Float[Array, " M"], s: Float[Array, " K"] | None = None) -> Float[Array, "M M"]:
        """`∂F/∂z` at `z` (generic: forward-mode autodiff; models override analytically)."""
        return jax.jacfwd(lambda z_: self.step(z_, s))(z)

    def _input(self, s, dtype):
        if s is None:
            return jnp.zeros((self.input_dim,), dtype)
        return s


class AbstractGTFModel(AbstractModel):
    """A model with a linear observation `x̂_t = B z_t`, trained by generalized teacher
    forcing (papers/001 Eq. 8): the forcing uses the teacher signals `z̄_t = B⁺ x_t`."""

    @property
    @abc.abstractmethod
    def B(self) -> Float[Array, "N M"]:
        """The observation matrix."""

    def observe(self, z):
        return self.B @ z


def uniform(key, shape, scale, dtype=jnp.float32):
    """U(−scale, scale) (papers/001 App. E)."""
    return jax.random.uniform(key, shape, dtype, -scale, scale)
