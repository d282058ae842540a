"""Regularization of the loss (Hess et al. 2026, App. E, Eq. 49–61)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .models import AbstractGTFModel, AbstractMARModel, AbstractModel


class Regularization(eqx.Module):
    """MAR on the last `M_r` latent units, L1 on their read-out, and the B conditioning term.

    The MAR terms of each model come from its `mar_terms` ([`dsr.models.AbstractMARModel`][]);
    the B terms apply to a model with a linear read-out `x̂ = B z` (an AbstractGTFModel).

    - MAR, shPLRNN (Eq. 50): `λ_MAR/M_r Σ_{i>M−M_r} (|1 − A_ii|^p + (1/L) Σ_j (γ_W |W_ij|^p
      + γ_V |V_ji|^p) + |h_i|^p)`, γ_W = 1/(3L), γ_V = 1/(3M).
    - MAR, LSSM (Eq. 61): `λ_MAR/M_r Σ_{i>M−M_r} (|1 − A_ii|^p + (1/N) Σ_j |U_ij|^p + |h_i|^p)`.
    - `L1(B) = λ1/(N M_r) Σ_i Σ_{j>M−M_r} |B_ij|^p` (Eq. 57, linear read-outs only).
    - `L2(B) = λ2/r Σ_i (σ_i(B) − 1)²` (Eq. 58, linear read-outs only).

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
        """Trace-time validation against a model: MAR needs an
        [`AbstractMARModel`][dsr.models.AbstractMARModel], the B terms a linear read-out (an
        [`AbstractGTFModel`][dsr.models.AbstractGTFModel]; ignored for an `AbstractMARModel`
        without one, such as the LSSM)."""
        if self.mar_units > model.latent_dim:
            raise ValueError(
                f"`mar_units` ({self.mar_units}) exceeds the latent dimension ({model.latent_dim})."
            )
        mar = isinstance(model, AbstractMARModel)
        if (self.lambda_mar and not mar) or ((self.lambda_l1 or self.lambda_l2) and not mar
                                             and not isinstance(model, AbstractGTFModel)):
            raise TypeError(f"Regularization: {type(model).__name__} is not an AbstractMARModel "
                            "(MAR) or an AbstractGTFModel (the B terms).")

    def __call__(self, model: AbstractModel) -> Float[Array, ""]:
        total = jnp.zeros(())
        Mr, p = self.mar_units, self.p
        pw = lambda a: jnp.abs(a) ** p  # noqa: E731
        if Mr and self.lambda_mar:
            total = total + self.lambda_mar / Mr * jnp.sum(model.mar_terms(Mr, p))
        if isinstance(model, AbstractGTFModel):
            if Mr and self.lambda_l1:
                total = total + self.lambda_l1 / (model.obs_dim * Mr) * jnp.sum(
                    pw(model.B[:, model.latent_dim - Mr:]))
            if self.lambda_l2:
                s = jnp.linalg.svd(model.B, compute_uv=False)
                total = total + self.lambda_l2 / s.shape[0] * jnp.sum((s - 1.0) ** 2)
        return total
