"""Generalized teacher forcing (GTF): Hess et al. (2026), arXiv:2605.12683, Sec. 3.2, Eq. 8–9,
Alg. 3.

Teacher signals `z̄_t = B⁺ x_t`; forced state `z̃_t = P_α z_t + α z̄_t` with
`P_α = I − α B⁺B`; forced map `F̃(z_{t-1}) = F(z̃_{t-1})` with Jacobian `J_F(z̃_{t-1}) P_α`.
The warm-up states `t ≤ T_w` are forced with α = 1. `z_0 = z̄_0`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._checks import ArgumentTypeError, check_array, check_int, is_concrete
from ._solvers._deer import DEER
from ._solvers._base import AbstractSolver, Linearization, SolverInfo
from .models._base import AbstractGTFModel


def check_alpha(alpha) -> None:
    """`alpha` must lie in [0, 1] (checked when it is a concrete value)."""
    if isinstance(alpha, str) or alpha is None or isinstance(alpha, bool):
        raise ArgumentTypeError(f"`alpha` must be a number in [0, 1]; got {alpha!r}.")
    if is_concrete(alpha):
        a = np.asarray(alpha)
        if a.ndim != 0:
            raise ValueError(f"`alpha` must be a scalar; got shape {a.shape}.")
        if not (np.isfinite(a) and 0.0 <= float(a) <= 1.0):
            raise ValueError(f"`alpha` must lie in [0, 1]; got {float(a)!r}.")


def check_finite(name: str, x) -> None:
    if x is not None and is_concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")


def teacher_signals(model: AbstractGTFModel, x: Float[Array, "*T N"]) -> Float[Array, "*T M"]:
    """The teacher signals `z̄_t = B⁺ x_t` (Hess et al. 2026, Sec. 3.2).

    **Arguments:** `model`: a GTF model (its read-out `B`); `x`: observations `(..., T, N)`.

    **Returns:** `z̄`, `(..., T, M)`."""
    return x @ jnp.linalg.pinv(model.B).T


def forcing_alphas(T: int, alpha, warmup: int, dtype) -> Float[Array, " T"]:
    """The forcing strength of every step: α for `z̃_k`, k = 0..T-1, 1 during the warm-up.

    **Arguments:** `T`: steps; `alpha`: α; `warmup`: T_w (steps k ≤ T_w get 1); `dtype`.

    **Returns:** an array `(T,)`."""
    k = jnp.arange(T)
    return jnp.where(k <= warmup, jnp.ones((), dtype), jnp.asarray(alpha, dtype))


def _validate(model, x, alpha, warmup, solver, inputs):
    if not isinstance(model, AbstractGTFModel):
        raise TypeError(
            "`model` must be a model with a linear observation matrix B (an AbstractGTFModel,"
            f" e.g. dsr.ShPLRNN); got {type(model).__name__}."
        )
    if not isinstance(solver, AbstractSolver):
        raise TypeError(f"`solver` must be a dsr solver (DEER() or Sequential()); got {solver!r}.")
    if x.ndim not in (2, 3):
        raise ValueError(f"`x` must have shape (T+1, N) or (batch, T+1, N); got {x.shape}.")
    if x.shape[-1] != model.obs_dim:
        raise ValueError(
            f"`x` has {x.shape[-1]} observed dimensions but the model's obs_dim is {model.obs_dim}."
        )
    T = x.shape[-2] - 1
    if T < 1:
        raise ValueError(f"`x` needs at least 2 time steps (x_0 and one target); got {T + 1}.")
    check_alpha(alpha)
    check_int("warmup", warmup, 0, T - 1)
    check_finite("x", x)
    if model.input_dim:
        if inputs is None:
            raise ValueError(f"the model takes {model.input_dim} external inputs: pass `inputs`.")
        if inputs.shape[:-1] != x.shape[:-1] or inputs.shape[-1] != model.input_dim:
            raise ValueError(
                f"`inputs` must have shape {x.shape[:-1] + (model.input_dim,)}; got {inputs.shape}."
            )
        check_finite("inputs", inputs)
    elif inputs is not None:
        raise ValueError("`inputs` given but the model has input_dim = 0.")
    return T


def gtf_forward(
    model: AbstractGTFModel,
    x: Float[Array, "*batch T+1 N"],
    alpha: float | Float[Array, ""],
    *,
    warmup: int = 0,
    solver: AbstractSolver = DEER(),
    inputs: Float[Array, "*batch T+1 K"] | None = None,
) -> tuple[Float[Array, "*batch T M"], SolverInfo]:
    """The GTF-forced latent trajectory: `z_t = F(z̃_{t-1})`, t = 1..T, `z_0 = B⁺x_0`.

    **Arguments:**

    - `model`: a model with linear observation `B` (`dsr.ShPLRNN` or a user subclass of
      `dsr.AbstractGTFModel`).
    - `x`: observations `(T+1, N)` (`x_0` is the initial observation) or `(batch, T+1, N)`.
    - `alpha`: forcing strength α ∈ [0, 1].
    - `warmup`: T_w; the states `z̃_0..z̃_{T_w}` are forced with α = 1. The loss should
      cover `z[warmup:]`, i.e. t = T_w+1..T.
    - `solver`: `dsr.DEER(...)` (parallel Newton, implicit gradients) or
      `dsr.Sequential()` (`lax.scan`, BPTT); both compute the same trajectory.
    - `inputs`: external inputs `s_t` aligned with `x` (`s_0` unused), if the model has any.

    **Returns:** `(z, info)` with `z` of shape `(*batch, T, M)` and a `SolverInfo`.

    Example:
    ```python
    z, info = dsr.gtf_forward(model, x, 0.2)
    x_hat = z @ model.B.T
    ```
    """
    x = jnp.asarray(check_array("x", x, finite=False))
    _validate(model, x, alpha, warmup, solver, inputs)
    if x.ndim == 3:
        fn = lambda xb, sb: _gtf_single(model, xb, alpha, warmup, solver, sb)  # noqa: E731
        return jax.vmap(fn)(x, inputs)
    return _gtf_single(model, x, alpha, warmup, solver, inputs)


def _gtf_single(model, x, alpha, warmup, solver, inputs):
    T = x.shape[0] - 1
    params, static = eqx.partition(model, eqx.is_inexact_array)
    dtype = jnp.result_type(x, *jax.tree_util.tree_leaves(params))
    x = x.astype(dtype)
    Bp = jnp.linalg.pinv(model.B.astype(dtype))
    BpB = Bp @ model.B.astype(dtype)
    zbar = x @ Bp.T
    alphas = jax.lax.stop_gradient(forcing_alphas(T, alpha, warmup, dtype))
    s = None if inputs is None else jnp.asarray(inputs, dtype)[1:]
    us = (zbar[:-1], alphas, s)
    # P_α = I − α B⁺B per phase: warm-up (α = 1), then α. The Jacobian of the forced map is
    # J_F(z̃) P_α; models fold P_α into their factors (`jacobian_product`).
    eye = jnp.eye(model.latent_dim, dtype=dtype)
    a = jax.lax.stop_gradient(jnp.asarray(alpha, dtype))
    P = jax.lax.stop_gradient((eye - BpB, eye - a * BpB))

    def forced(BpB, z, zb, a):
        return z - a * (BpB @ z) + a * zb

    def step(p, z, u):
        mparams, BpB, _ = p
        m = eqx.combine(mparams, static)
        zb, a, st = u
        return m.step(forced(BpB, z, zb, a), st)

    def phase(k, diagonal):
        def jac(p, z, u):
            mparams, BpB, P = p
            m = eqx.combine(mparams, static)
            zb, a, st = u
            zt = forced(BpB, z, zb, a)
            if diagonal:
                return m.jacobian_product_diagonal(zt, P[k], st)
            return m.jacobian_product(zt, P[k], st)

        return jac

    # The first step's Jacobian is never used (it multiplies the fixed z_0), so without a
    # warm-up one phase (α) covers all steps.
    lengths = (warmup + 1, T - warmup - 1) if 0 < warmup < T - 1 else (T,)
    ks = (0, 1) if len(lengths) == 2 else ((0,) if warmup else (1,))
    lin = Linearization(full=tuple(phase(k, False) for k in ks),
                        diagonal=tuple(phase(k, True) for k in ks), lengths=lengths)  # fmt: skip
    z_init = solver.initial_guess(zbar[1:])
    return solver.solve(step, lin, (params, BpB, P), zbar[0], us, z_init)
