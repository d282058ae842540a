"""Adaptive forcing strength α (Hess et al. 2023, the GTF paper; SPEC §3).

Proposition 1 of papers/001: the forced system is contracting when
`α > α* = 1 − 1/σ̃_max`. `σ̃` is estimated along the teacher signals by
`G = max_batch exp(mean_t log ‖J(z̄_t)‖₂)` (geometric mean of Jacobian norms), giving
`α_est = max(0, 1 − 1/G)`. Every k steps `α ← α_est` if `α_est > α`, else
`α ← γα + (1 − γ)α_est`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._gtf import teacher_signals
from .models._base import AbstractGTFModel


def estimate_alpha(
    model: AbstractGTFModel, x: Float[Array, "*batch T N"], *, max_points: int = 512
) -> Float[Array, ""]:
    """`α_est = max(0, 1 − 1/G)` from the Jacobians along the teacher signals of `x`."""
    x = x if x.ndim == 3 else x[None]
    stride = max(1, x.shape[1] // max_points)
    zbar = teacher_signals(model, x[:, ::stride])

    def log_norm(z):
        return jnp.log(jnp.maximum(jnp.linalg.norm(model.jacobian(z), ord=2), 1e-12))

    logs = jax.vmap(jax.vmap(log_norm))(zbar)
    G = jnp.max(jnp.exp(jnp.mean(logs, axis=1)))
    return jnp.clip(1.0 - 1.0 / G, 0.0, 1.0)


def update_alpha(alpha: float, alpha_est: float, gamma: float = 0.999) -> float:
    """Raise α at once when the estimate is larger, otherwise relax it slowly (rate γ)."""
    if alpha_est > alpha:
        return float(alpha_est)
    return float(gamma * alpha + (1.0 - gamma) * alpha_est)
