"""Free-running generation after a warm-up on observed context (Hess, Götz, Durstewitz (2026),
arXiv:2605.12683, Sec. 4.2, Eq. 4), for models and ensembles."""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._cache import enable_compilation_cache
from ._checks import ArgumentTypeError, check_array, check_bool, check_int, is_concrete
from ._ensemble import Ensemble
from ._orbit_status import COLLAPSE_MIN_STEPS, data_range, orbit_status
from ._gtf import gtf_forward
from ._solvers._base import AbstractSolver
from ._solvers._sequential import Sequential
from .models import AbstractGTFModel, AbstractModel, AbstractTeacherForcedModel
from .models._base import parameter_dtype


def warm_start(
    model: AbstractModel,
    context: Float[Array, "Tc N"],
    *,
    context_inputs: Float[Array, "Tc K"] | None = None,
    solver: AbstractSolver = Sequential(),
) -> Float[Array, " M"]:
    """The latent state that predicts the observation right after `context`.

    **Arguments:** `model`; `context`: observations `(Tc, N)`; `context_inputs`: their
    inputs; `solver`: solves the forced context (GTF family).

    **Returns:** the latent state `(M,)`.

    shPLRNN family: GTF with α = 1 over the context, `z_{Tc} = F(z̃_{Tc-1})`.
    `context_inputs` holds `s_0..s_{Tc}` (or `s_0..s_{Tc-1}`, then `s_{Tc} = 0`).
    Teacher-forced family (LSSM, baselines): the model's own `warm_start` (for the LSSM,
    teacher forcing through U over the whole context, Eq. 3).
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


def _check_args(model, n_steps, context, z0, inputs, context_inputs):
    n_steps = check_int("n_steps", n_steps, 1)
    if (context is None) == (z0 is None):
        raise ValueError("pass exactly one of `context` (observations) or `z0` (latent state).")
    if model.input_dim and inputs is None:
        raise ValueError(f"the model takes {model.input_dim} external inputs: pass `inputs`.")
    if not model.input_dim and (inputs is not None or context_inputs is not None):
        raise ValueError("`inputs` / `context_inputs` given but the model has input_dim = 0.")
    if inputs is not None:
        inputs = check_array("inputs", inputs, ndim=(2, 3))
        if inputs.shape[-1] != model.input_dim or inputs.shape[-2] < n_steps:
            raise ValueError(f"`inputs` must have shape (n_steps ≥ {n_steps}, "
                             f"{model.input_dim}); got {inputs.shape}.")
    if context is not None:
        context = check_array("context", context, ndim=(2, 3))
        if context.shape[-1] != model.obs_dim or context.shape[-2] < 1:
            raise ValueError(f"`context` must have shape (Tc ≥ 1, {model.obs_dim}) or (batch, "
                             f"Tc, {model.obs_dim}); got {context.shape}.")
    else:
        z0 = check_array("z0", z0, ndim=(1, 2))
        if z0.shape[-1] != model.latent_dim:
            raise ValueError(f"`z0` must have shape ({model.latent_dim},) or (batch, "
                             f"{model.latent_dim}); got {z0.shape}.")
    return n_steps, context, z0, inputs


def _generate_one(model, n_steps, context, z0, inputs, context_inputs):
    dtype = parameter_dtype(model)
    if context is not None:
        context = jnp.asarray(context, dtype)

        def one(c, s, cs):
            if cs is not None:  # s_{Tc}, the input of the first generated step
                cs = jnp.concatenate([cs, s[:1]], axis=0)
            return _rollout(model, warm_start(model, c, context_inputs=cs), n_steps, s, True)

        return (jax.vmap(one) if context.ndim == 3 else one)(context, inputs, context_inputs)
    z0 = jnp.asarray(z0, dtype)
    one = lambda z, s: _rollout(model, z, n_steps, s, False)  # noqa: E731
    return (jax.vmap(one) if z0.ndim == 2 else one)(z0, inputs)


@eqx.filter_jit
def _generate_program(model, n_steps, context, z0, inputs, context_inputs, members: bool):
    """The warm-up and the free run as one compiled program (vmapped over the members of a
    stacked ensemble when `members`)."""
    if members:
        fn = lambda m: _generate_one(m, n_steps, context, z0, inputs, context_inputs)  # noqa
        return eqx.filter_vmap(fn)(model)
    return _generate_one(model, n_steps, context, z0, inputs, context_inputs)


def _warn_bad_orbits(xs, context):
    """Warn about generated orbits that diverge, collapse or run off the context's range
    (checked on the host; the range only from a context of at least `COLLAPSE_MIN_STEPS`
    steps)."""
    if not is_concrete(xs):
        return
    x = np.asarray(xs, np.float64)
    flat = x.reshape((-1,) + x.shape[-2:])
    if context is not None:
        ref = data_range(context)
        if np.size(context) < COLLAPSE_MIN_STEPS * x.shape[-1]:  # too short for a range
            ref.update(lo=None, hi=None)
    else:  # no reference: only non-finite orbits are flagged
        ref = dict(scale=float("inf"), std=0.0, lo=None, hi=None)
    bad = [(i, st) for i, st in ((i, orbit_status(o, **ref)) for i, o in enumerate(flat))
           if st.status != "ok"]
    if bad:
        i, st = bad[0]
        which = f"orbit {i}" if len(flat) > 1 else "the orbit"
        warnings.warn(f"generate: {len(bad)} of {len(flat)} generated orbits are not usable; "
                      f"{which} {st.describe()}.", stacklevel=3)


def generate(
    model: AbstractModel | Ensemble,
    n_steps: int,
    *,
    context: Float[Array, "*batch Tc N"] | None = None,
    z0: Float[Array, "*batch M"] | None = None,
    inputs: Float[Array, "*batch n K"] | None = None,
    context_inputs: Float[Array, "*batch Tc K"] | None = None,
    return_latents: bool = False,
    check: bool = True,
):
    """Generate a free-running orbit (for an `Ensemble`: one per member, vmapped).

    With `context` (observations `x_0..x_{Tc-1}`), the model is first warmed up on them
    (`warm_start`) and the result are the predictions `x̂_{Tc}, …, x̂_{Tc+n-1}`. With `z0`
    instead, the result is `x̂_1..x̂_n` of `z_t = F(z_{t-1})`. Batched over a leading axis
    of `context`/`z0`.

    **Arguments:** `model` or `Ensemble`; `n_steps` ≥ 1; `context` or `z0` (exactly one);
    `inputs` `s_t` for the generated steps; `context_inputs` for the warm-up;
    `return_latents`; `check`: warn when an orbit diverges (non-finite, or far beyond the
    context's amplitude), collapses to a fixed point, or is off the context's range (see
    `dsr.orbit_status`; a context of at least 200 steps is needed for that).

    **Returns:** observations `(*batch, n_steps, N)` — `(K, *batch, n_steps, N)` for an
    ensemble of K — and the latents `(…, n_steps, M)` if `return_latents`.

    Example:
    ```python
    x_gen = dsr.generate(model, 10_000, context=x_test[:512])
    ```
    """
    enable_compilation_cache()
    check_bool("return_latents", return_latents)
    check_bool("check", check)
    is_ens = isinstance(model, Ensemble)
    one = model.stacked if is_ens else model  # (static fields and dimensions only)
    if not isinstance(one, AbstractModel):
        raise ArgumentTypeError(f"`model` must be a dsr model or Ensemble; got "
                                f"{type(model).__name__}.")
    n_steps, context, z0, inputs = _check_args(one, n_steps, context, z0, inputs, context_inputs)
    xs, zs = _generate_program(model.stacked if is_ens else model, n_steps, context, z0,
                               inputs, context_inputs, is_ens)
    if check:
        _warn_bad_orbits(xs, context)
    return (xs, zs) if return_latents else xs
