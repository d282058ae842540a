"""Regularization of the loss (Hess et al. 2026, App. E, Eq. 49–61)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .models import LSSM, AbstractModel, AbstractShPLRNN


class Regularization(eqx.Module):
    """MAR on the last `M_r` latent units, L1 on their read-out, and the B conditioning term.

    - MAR, shPLRNN (Eq. 50): `λ_MAR/M_r Σ_{i>M−M_r} (|1 − A_ii|^p + (1/L) Σ_j (γ_W |W_ij|^p
      + γ_V |V_ji|^p) + |h_i|^p)`, γ_W = 1/(3L), γ_V = 1/(3M).
    - MAR, LSSM (Eq. 61): `λ_MAR/M_r Σ_{i>M−M_r} (|1 − A_ii|^p + (1/N) Σ_j |U_ij|^p + |h_i|^p)`.
    - `L1(B) = λ1/(N M_r) Σ_i Σ_{j>M−M_r} |B_ij|^p` (Eq. 57, shPLRNN only).
    - `L2(B) = λ2/r Σ_i (σ_i(B) − 1)²` (Eq. 58, shPLRNN only).

    **Arguments:** `mar_units` (M_r), `lambda_mar`, `lambda_l1`, `lambda_l2`, `p` ∈ {1, 2}.
    The paper's forced Lorenz-96 setting is `Regularization(4, 1.0, 1.0, 1e-4)`.
    """

    mar_units: int = eqx.field(default=0, static=True)
    lambda_mar: float = eqx.field(default=0.0, static=True)
    lambda_l1: float = eqx.field(default=0.0, static=True)
    lambda_l2: float = eqx.field(default=0.0, static=True)
    p: int = eqx.field(default=2, static=True)

    def __check_init__(self):
        if not isinstance(self.mar_units, int) or self.mar_units < 0:
            raise ValueError(f"`mar_units` must be a non-negative int; got {self.mar_units!r}.")
        if self.p not in (1, 2):
            raise ValueError(f"`p` must be 1 or 2; got {self.p!r}.")
        for name in ("lambda_mar", "lambda_l1", "lambda_l2"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"`{name}` must be ≥ 0; got {getattr(self, name)!r}.")

    def check(self, model: AbstractModel) -> None:
        """Trace-time validation against a model."""
        if self.mar_units > model.latent_dim:
            raise ValueError(
                f"`mar_units` ({self.mar_units}) exceeds the latent dimension ({model.latent_dim})."
            )
        if not isinstance(model, (AbstractShPLRNN, LSSM)) and (
            self.lambda_mar or self.lambda_l1 or self.lambda_l2
        ):
            raise TypeError(f"Regularization supports the shPLRNN family and the LSSM, not {type(model).__name__}.")

    def __call__(self, model: AbstractModel) -> Float[Array, ""]:
        total = jnp.zeros(())
        Mr, p = self.mar_units, self.p
        pw = lambda a: jnp.abs(a) ** p  # noqa: E731
        if Mr and self.lambda_mar:
            r = slice(model.latent_dim - Mr, None)
            if isinstance(model, AbstractShPLRNN):
                L, M = model.hidden_dim, model.latent_dim
                conn = (jnp.sum(pw(model.W[r]), axis=1) / (3 * L)
                        + jnp.sum(pw(model.V[:, r]), axis=0) / (3 * M)) / L
            else:
                conn = jnp.sum(pw(model.U[r]), axis=1) / model.obs_dim
            terms = pw(1.0 - model.A[r]) + conn + pw(model.h[r])
            total = total + self.lambda_mar / Mr * jnp.sum(terms)
        if isinstance(model, AbstractShPLRNN):
            if Mr and self.lambda_l1:
                total = total + self.lambda_l1 / (model.obs_dim * Mr) * jnp.sum(
                    pw(model.B[:, model.latent_dim - Mr:]))
            if self.lambda_l2:
                s = jnp.linalg.svd(model.B, compute_uv=False)
                total = total + self.lambda_l2 / s.shape[0] * jnp.sum((s - 1.0) ** 2)
        return total
