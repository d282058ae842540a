"""Free-running generation after a warm-up on observed context (papers/001 Sec. 4.2, Eq. 4)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._gtf import check_finite, gtf_forward
from ._solver import AbstractSolver, Sequential
from .models import AbstractGTFModel, AbstractModel, AbstractTeacherForcedModel


def warm_start(
    model: AbstractModel,
    context: Float[Array, "Tc N"],
    *,
    context_inputs: Float[Array, "Tc K"] | None = None,
    solver: AbstractSolver = Sequential(),
) -> Float[Array, " M"]:
    """The latent state that predicts the observation right after `context`.

    shPLRNN (and any `AbstractGTFModel`): GTF with α = 1 over the context,
    `z_{Tc} = F(z̃_{Tc-1})`. `context_inputs` holds `s_0..s_{Tc}` (or `s_0..s_{Tc-1}`, then
    `s_{Tc} = 0`). LSSM: teacher forcing through U over the whole context
    (Eq. 3), `z_{Tc} = A z_{Tc-1} + U x_{Tc-1} + h`.
    """
    x = jnp.concatenate([context, jnp.zeros_like(context[:1])], axis=0)
    s = context_inputs
    if s is not None and s.shape[0] == context.shape[0]:  # no input for the first prediction
        s = jnp.concatenate([s, jnp.zeros_like(s[:1])], axis=0)
    if isinstance(model, AbstractTeacherForcedModel):
        return model.warm_start(context, s)
    if isinstance(model, AbstractGTFModel):
        z, _ = gtf_forward(model, x, 1.0, solver=solver, inputs=s)
        return z[-1]
    raise TypeError(f"no warm-up rule for {type(model).__name__}; pass `z0` instead.")


@eqx.filter_jit
def _rollout(model, z_first, n_steps, inputs, first_is_state):
    def body(z, s):
        z = model.step(z, s)
        return z, z

    if first_is_state:  # z_first is already the first generated state
        s_rest = None if inputs is None else inputs[1:]
        _, rest = jax.lax.scan(body, z_first, s_rest, length=n_steps - 1)
        zs = jnp.concatenate([z_first[None], rest], axis=0)
    else:
        _, zs = jax.lax.scan(body, z_first, inputs, length=n_steps)
    return jax.vmap(model.observe)(zs), zs


def generate(
    model: AbstractModel,
    n_steps: int,
    *,
    context: Float[Array, "*batch Tc N"] | None = None,
    z0: Float[Array, "*batch M"] | None = None,
    inputs: Float[Array, "*batch n K"] | None = None,
    context_inputs: Float[Array, "*batch Tc K"] | None = None,
    return_latents: bool = False,
):
    """Generate a free-running orbit.

    With `context` (observations `x_0..x_{Tc-1}`), the model is first warmed up on them
    (GTF with α = 1 for the shPLRNN, teacher forcing for the LSSM, or the model's own
    `warm_start(context, inputs)` method) and the result are the
    predictions `x̂_{Tc}, …, x̂_{Tc+n-1}`. With `z0` instead, the result is
    `x̂_1..x̂_n` of `z_t = F(z_{t-1})`. Batched over a leading axis of `context`/`z0`.

    **Arguments:** `model`; `n_steps` ≥ 1; `context` or `z0` (exactly one); `inputs`
    `s_t` for the generated steps; `context_inputs` for the warm-up; `return_latents`.

    **Returns:** observations `(*batch, n_steps, N)`, and the latents `(*batch, n_steps, M)`
    if `return_latents`.

    Example:
    ```python
    x_gen = dsr.generate(model, 10_000, context=x_test[:512])
    ```
    """
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or n_steps < 1:
        raise ValueError(f"`n_steps` must be a positive int; got {n_steps!r}.")
    if (context is None) == (z0 is None):
        raise ValueError("pass exactly one of `context` (observations) or `z0` (latent state).")
    if model.input_dim and inputs is None:
        raise ValueError(f"the model takes {model.input_dim} external inputs: pass `inputs`.")
    if context is not None:
        context = jnp.asarray(context)
        if context.ndim not in (2, 3) or context.shape[-1] != model.obs_dim:
            raise ValueError(
                f"`context` must have shape (Tc, {model.obs_dim}) or (batch, Tc, {model.obs_dim});"
                f" got {context.shape}."
            )
        if context.shape[-2] < 1:
            raise ValueError("`context` needs at least one observation.")
        check_finite("context", context)
        batched = context.ndim == 3

        def one(c, s, cs):
            if cs is not None:  # s_{Tc}, the input of the first generated step
                cs = jnp.concatenate([cs, s[:1]], axis=0)
            return _rollout(model, warm_start(model, c, context_inputs=cs), n_steps, s, True)

        fn = jax.vmap(one) if batched else one
        xs, zs = fn(context, inputs, context_inputs)
    else:
        z0 = jnp.asarray(z0)
        if z0.ndim not in (1, 2) or z0.shape[-1] != model.latent_dim:
            raise ValueError(f"`z0` must have shape ({model.latent_dim},) or (batch, "
                             f"{model.latent_dim}); got {z0.shape}.")
        one = lambda z, s: _rollout(model, z, n_steps, s, False)  # noqa: E731
        fn = jax.vmap(one) if z0.ndim == 2 else one
        xs, zs = fn(z0, inputs)
    return (xs, zs) if return_latents else xs
