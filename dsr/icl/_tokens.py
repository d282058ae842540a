"""Scalar sequences and their AR(s) token construction (Vladarean, Zhang, Sra (2026), Sec. 3).

A sequence `y_1 … y_T` gives `n = T − s − 1` context tokens and one test token, each of
width `s + 1`:

    token t (t = 1 … n):  (ȳ_t, y_{t+s}),   ȳ_t = (y_t, …, y_{t+s−1}),
    test token:           (ȳ_{T−s}, 0),

i.e. the columns of the paper's input matrix `Y_0` (here the rows of a `(n + 1, s + 1)`
array, the `(tokens, features)` layout of `dsr.ttt_linear`). The label of the test token,
`y_T`, is the target and is never read.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_array, check_int


def check_sequences(name: str, y, *, min_len: int = 3) -> Float[Array, "B T"]:
    """A batch of scalar sequences, `(B, T)` or `(B, T, 1)`, as a floating `(B, T)` array.

    Raises (naming `name`) for other shapes, non-scalar observations `(B, T, m > 1)`,
    non-finite values and sequences shorter than `min_len`.
    """
    arr = check_array(name, y, ndim=(2, 3))
    if arr.ndim == 3:
        if arr.shape[-1] != 1:
            raise ValueError(
                f"`{name}` must hold scalar observations, shape (B, T) or (B, T, 1); got "
                f"shape {arr.shape} ({arr.shape[-1]} observed variables per step).")
        arr = arr[..., 0]
    if arr.shape[0] < 1:
        raise ValueError(f"`{name}` must hold at least one sequence; got shape {arr.shape}.")
    if arr.shape[1] < min_len:
        raise ValueError(f"`{name}` must have at least {min_len} steps per sequence (axis 1); "
                         f"got shape {arr.shape}.")
    arr = jnp.asarray(arr)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.result_type(float))
    return arr


def check_window(s, n_steps: int) -> int:
    """The AR window `s`: an integer with `1 ≤ s ≤ T − 2` (at least one context token)."""
    s = check_int("s", s, 1)
    if s > n_steps - 2:
        raise ValueError(
            f"`s` must be at most T − 2 = {n_steps - 2} for sequences of T = {n_steps} steps "
            f"(the AR(s) loss needs T − s − 1 ≥ 1 context tokens); got {s}.")
    return s


def token_matrix(y: Float[Array, "B T"], s: int) -> Float[Array, "B n+1 s+1"]:
    """The AR(s) tokens of a batch (no validation): row `t` is `(y_t, …, y_{t+s})`, the last
    row the test token `(y_{T−s}, …, y_{T−1}, 0)`."""
    T = y.shape[1]
    n = T - s - 1
    rows = jnp.stack([y[:, j: j + n + 1] for j in range(s + 1)], axis=-1)
    return rows.at[:, -1, -1].set(0.0)


def ar_tokens(y: Float[ArrayLike, "B T"], s: int) -> Float[Array, "B n+1 s+1"]:
    """The AR(s) token construction of Vladarean et al. (2026), Sec. 3 (the columns of `Y_0`).

    **Arguments:** `y`: scalar sequences `(B, T)` or `(B, T, 1)`; `s`: window, `1 ≤ s ≤ T − 2`.

    **Returns:** `(B, T − s, s + 1)`: the `n = T − s − 1` context tokens `(ȳ_t, y_{t+s})`
    and, last, the test token `(ȳ_{T−s}, 0)`.
    """
    y = check_sequences("y", y)
    return token_matrix(y, check_window(s, y.shape[1]))
