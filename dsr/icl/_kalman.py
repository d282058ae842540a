"""The Kalman filter's one-step prediction of a scalar LDS with known parameters.

For `x_0 ~ N(0, I)`, `y_t = c x_t + v_t`, `x_{t+1} = A x_t + w_t`, `v_t ~ N(0, σ_v²)`,
`w_t ~ N(0, Σ_w)` (the conventions of `data_gen.lds` and `sample_lds`), the filter gives
the conditional mean `ŷ_{t|t−1} = E[y_t | y_1 … y_{t−1}]`, the optimal (minimum mean
squared error) predictor with the true system — the reference of Vladarean, Zhang, Sra
(2026), Sec. 5, and of Du et al. (2023).

Own implementation (`lax.scan` over time, Joseph-form covariance update), not dynamax's
`lgssm_filter`: dynamax 1.0.3 needs `tfp-nightly` and `fastprogress`, whose current release
pulls in a web framework (python-fasthtml, starlette, uvicorn); that is too much for a
six-line recursion. It is tested against an independent NumPy filter and against exact
Gaussian conditioning on the joint covariance of `(y_1 … y_T)` in float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_array, check_bool
from ._tokens import check_sequences


def _filter(y, A, c, Q, r2):
    """One-step predictions `ŷ_{t|t−1}`, t = 1 … T, for one sequence (prior N(0, I))."""
    d = A.shape[0]
    eye = jnp.eye(d, dtype=A.dtype)

    def step(carry, yt):
        m, P = carry
        pred = c @ m
        Pc = P @ c
        S = c @ Pc + r2
        K = Pc / S
        m = m + K * (yt - pred)
        J = eye - jnp.outer(K, c)
        P = J @ P @ J.T + r2 * jnp.outer(K, K)
        m, P = A @ m, A @ P @ A.T + Q
        return (m, 0.5 * (P + P.T)), pred

    _, preds = jax.lax.scan(step, (jnp.zeros(d, A.dtype), eye), y)
    return preds


_batched_filter = jax.jit(jax.vmap(_filter))


def _system(name, value, shape, B):
    """`value` broadcast to `(B,) + shape`; it may be given for one system or per sequence."""
    arr = jnp.asarray(check_array(name, value))
    if arr.shape == shape:
        return jnp.broadcast_to(arr, (B,) + shape)
    if arr.shape == (B,) + shape:
        return arr
    want = f"{shape} or {(B,) + shape}"
    raise ValueError(f"`{name}` must have shape {want}; got {arr.shape}.")


def kalman(
    y: Float[ArrayLike, "B T"],
    A: Float[ArrayLike, "*B d d"],
    C: Float[ArrayLike, "*B 1 d"],
    Sigma_w: Float[ArrayLike, "*B d d"],
    sigma_v: Float[ArrayLike, "*B"],
    *,
    all_steps: bool = False,
) -> Float[Array, " B"] | Float[Array, "B T"]:
    """The Kalman one-step predictor with the true system: `ŷ_T = E[y_T | y_1 … y_{T−1}]`.

    **Arguments:**

    - `y`: scalar sequences `(B, T)` (or `(B, T, 1)`); `y_T` is not read.
    - `A`: `(d, d)`, or `(B, d, d)` for one system per sequence.
    - `C`: `(1, d)` or `(B, 1, d)` (scalar observations only).
    - `Sigma_w`: the process covariance, `(d, d)` or `(B, d, d)`.
    - `sigma_v`: the observation noise standard deviation, a scalar or `(B,)`.
    - `all_steps`: return every one-step prediction `ŷ_{t|t−1}`, t = 1 … T (`ŷ_1 = 0`,
      the prior mean), instead of the last.

    The prior is `x_0 ~ N(0, I)` with `y_1 = c x_0 + v_1`, as `data_gen.lds` and
    `sample_lds` draw it.

    **Returns:** `ŷ_T`, `(B,)`; with `all_steps=True`, `(B, T)`.
    """
    all_steps = check_bool("all_steps", all_steps)
    y = check_sequences("y", y, min_len=1)
    B = y.shape[0]
    A = jnp.asarray(check_array("A", A, ndim=(2, 3)))
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"`A` must be square, (d, d) or (B, d, d); got shape {A.shape}.")
    d = A.shape[-1]
    C = jnp.asarray(check_array("C", C, ndim=(1, 2, 3)))
    if C.shape[-1] == d and C.ndim >= 2 and C.shape[-2] != 1 and C.shape[:-2] in ((), (B,)):
        raise ValueError(
            f"`C` must have shape (1, d) = (1, {d}) or (B, 1, d): the filter is for scalar "
            f"observations; got shape {C.shape} ({C.shape[-2]} observed variables).")
    A = _system("A", A, (d, d), B)
    C = _system("C", C, (1, d), B)
    Q = _system("Sigma_w", Sigma_w, (d, d), B)
    r = _system("sigma_v", sigma_v, (), B)
    if bool(jnp.any(r < 0)):
        raise ValueError("`sigma_v` must be ≥ 0 (a standard deviation).")
    dtype = jnp.result_type(y, A, C, Q, r)
    y, A, C, Q, r = (x.astype(dtype) for x in (y, A, C, Q, r))
    preds = _batched_filter(y, A, C[:, 0], Q, r**2)
    return preds if all_steps else preds[:, -1]
