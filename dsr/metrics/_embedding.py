"""Delay embedding of a multivariate time series (Takens; Hess, Götz & Durstewitz (2026),
arXiv:2605.12683, App. G, Eq. 69)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_int


def embedding_window(m: int, tau: int) -> int:
    """Number of time steps one delay vector spans, `(m - 1) * tau + 1`."""
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1)
    return (m - 1) * tau + 1


def delay_embed(x: Float[ArrayLike, "T N"], m: int, tau: int) -> Float[Array, "T-(m-1)*tau m*N"]:
    r"""Delay embedding $\xi_t = (x_t, x_{t-\tau}, \dots, x_{t-(m-1)\tau})$.

    **Arguments:**

    - `x`: time series of shape `(T, N)` (a 1-D series is read as `(T, 1)`).
    - `m`: embedding dimension (number of delayed copies), an integer `m >= 1`.
    - `tau`: delay in time steps, an integer `tau >= 1`.

    **Returns:**

    An array of shape `(T - (m-1)*tau, m*N)`. Row `i` is the delay vector of time
    `t = i + (m-1)*tau`; its first `N` entries are `x_t`, the next `N` are `x_{t-tau}`, and so
    on down to `x_{t-(m-1)tau}`. NumPy input gives a NumPy array, anything else a JAX array.

    **Raises:** `ValueError` when the series is shorter than the window `(m-1)*tau + 1`.

    ```python
    xi = delay_embed(x, m=3, tau=10)  # (T - 20, 3 N)
    ```
    """
    window = embedding_window(m, tau)
    m, tau = int(m), int(tau)
    xp = np if isinstance(x, np.ndarray) or not isinstance(x, jax.Array) else jnp
    x = xp.asarray(x)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"`x` must have shape (T, N) or (T,), got shape {x.shape}.")
    T = x.shape[0]
    if T < window:
        raise ValueError(
            f"`x` has {T} time steps, fewer than the embedding window (m-1)*tau+1 = {window} "
            f"(m={m}, tau={tau})."
        )
    n_out = T - (window - 1)
    cols = [x[(m - 1 - k) * tau : (m - 1 - k) * tau + n_out] for k in range(m)]
    return xp.concatenate(cols, axis=1)
