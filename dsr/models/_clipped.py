"""The clipped shPLRNN: bounded orbits by construction (Hess et al. 2023, GTF paper)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from .._checks import check_int
from ._base import KAPPA
from ._shplrnn import AbstractShPLRNN, init_shplrnn


class ClippedShPLRNN(AbstractShPLRNN):
    """`z_t = A ⊙ z_{t-1} + W [relu(V z_{t-1} + b) − relu(V z_{t-1})] + C s_t + h`,
    `x̂_t = B z_t`.

    The hidden layer `relu(u + b) − relu(u)` is bounded (by `|b|` per unit), so for
    `max|A| < 1` every orbit stays bounded: free-running models trained on real recordings
    cannot diverge. Same interface, analytic Jacobian
    `diag(A) + W diag(1[Vz + b > 0] − 1[Vz > 0]) V`, GTF-DEER and low rank as `ShPLRNN`.
    Initialization as `ShPLRNN` (App. E) except `b ~ U(±1/√L)`, as in the GTF authors' code
    (with `b = 0` the hidden layer would vanish).

    **Arguments:** as `dsr.ShPLRNN`.

    **References:** Hess, Monfared, Brenner, Durstewitz (2023), *Generalized Teacher Forcing
    for Learning Chaotic Dynamics*, ICML 2023 (arXiv:2306.04406).
    """

    def __init__(self, obs_dim: int, latent_dim: int, hidden_dim: int, *, key: PRNGKeyArray,
                 rank: int | None = None, input_dim: int = 0, kappa: float = KAPPA,
                 dtype=jnp.float32):
        L = check_int("hidden_dim", hidden_dim, 1)
        init_shplrnn(self, obs_dim, latent_dim, L, key, rank, input_dim, kappa, dtype,
                     b_scale=1.0 / math.sqrt(L))

    def phi(self, u):
        return jax.nn.relu(u + self.b) - jax.nn.relu(u)

    def slope(self, u):
        return (u + self.b > 0).astype(u.dtype) - (u > 0).astype(u.dtype)
