"""Short-term forecast error RMSE(n), papers/001 Eq. 71."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from .._generate import generate


def rmse_n(
    model,
    x_test: Float[ArrayLike, "T N"],
    n: int = 128,
    *,
    warmup: int,
    n_windows: int = 100,
    key: PRNGKeyArray,
    return_all: bool = False,
):
    """`RMSE(n) = sqrt((1/n) Σ_{k=1}^{n} ‖x_k − G(F^k(z_0))‖²)` averaged over windows (Eq. 71).

    Each of `n_windows` windows starts at a random index `t_i ≥ warmup`; its initial state
    comes from a warm-up on the `warmup` preceding observations (GTF with α = 1 for the
    shPLRNN, teacher forcing through U for the LSSM; `dsr.generate(context=...)`), then the
    model runs freely for `n` steps. ‖·‖ is the Euclidean norm over the N observed dimensions
    (as written in Eq. 71; divide by √N for a per-dimension RMSE).

    **Returns:** the mean over windows (a float); with `return_all`, also the per-window
    values.
    """
    x = np.asarray(x_test)
    if x.ndim != 2 or x.shape[1] != model.obs_dim:
        raise ValueError(f"`x_test` must have shape (T, {model.obs_dim}); got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("`x_test` contains non-finite values (NaN or inf).")
    for name, v, lo in (("n", n, 1), ("warmup", warmup, 1), ("n_windows", n_windows, 1)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
            raise ValueError(f"`{name}` must be an int ≥ {lo}; got {v!r}.")
    if x.shape[0] < warmup + n:
        raise ValueError(
            f"`x_test` has {x.shape[0]} steps; warmup + n = {warmup + n} are needed per window."
        )
    starts = np.asarray(jax.random.randint(key, (n_windows,), warmup, x.shape[0] - n + 1))
    ctx = np.stack([x[s - warmup:s] for s in starts])
    tgt = np.stack([x[s:s + n] for s in starts])
    dtype = jnp.asarray(jax.tree_util.tree_leaves(model)[0]).dtype
    pred = np.asarray(generate(model, n, context=jnp.asarray(ctx, dtype)), np.float64)
    per = np.sqrt(np.mean(np.sum((pred - tgt) ** 2, axis=-1), axis=-1))
    per = np.where(np.isfinite(per), per, np.inf)
    return (float(np.mean(per)), per) if return_all else float(np.mean(per))
