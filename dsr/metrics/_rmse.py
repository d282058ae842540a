"""Short-term forecast error RMSE(n) (Hess, Götz & Durstewitz (2026), arXiv:2605.12683, Eq. 71)."""

from __future__ import annotations

import jax
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from .._checks import ArgumentTypeError, check_bool, check_int, check_key
from .._generate import generate
from ..models import AbstractModel
from ._orbits import as_model_input, as_orbit


def check_model(model) -> AbstractModel:
    """`model` must be a dsr model (an `AbstractModel`)."""
    if not isinstance(model, AbstractModel):
        raise ArgumentTypeError(f"`model` must be a dsr model (an AbstractModel); got "
                                f"{type(model).__name__}.")
    return model


def rmse_n(
    model: AbstractModel,
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
    (as written in Eq. 71; divide by √N for a per-dimension RMSE). (The GTF authors' code
    reports a different quantity, `prediction_error`: the per-element MSE of the `n`-th step
    only, from every start of the series.)

    **Arguments:** `model`; `x_test` `(T, N)` (finite); `n`, `warmup`, `n_windows`: integers
    ≥ 1 with `warmup + n ≤ T`; `key`: PRNG key for the window starts; `return_all`.

    **Returns:** the mean over windows (a float; a window whose forecast diverges counts as
    `inf`); with `return_all`, also the per-window values.
    """
    model = check_model(model)
    x = as_orbit("x_test", x_test, min_steps=1, n_dims=model.obs_dim, like="the model's `obs_dim`")
    n, warmup = check_int("n", n, 1), check_int("warmup", warmup, 1)
    n_windows = check_int("n_windows", n_windows, 1)
    key = check_key("key", key)
    return_all = check_bool("return_all", return_all)
    if x.shape[0] < warmup + n:
        raise ValueError(
            f"`x_test` has {x.shape[0]} steps; warmup + n = {warmup + n} are needed per window."
        )
    starts = np.asarray(jax.random.randint(key, (n_windows,), warmup, x.shape[0] - n + 1))
    ctx = np.stack([x[s - warmup:s] for s in starts])
    tgt = np.stack([x[s:s + n] for s in starts])
    pred = np.asarray(generate(model, n, context=as_model_input(model, ctx)), np.float64)
    per = np.sqrt(np.mean(np.sum((pred - tgt) ** 2, axis=-1), axis=-1))
    per = np.where(np.isfinite(per), per, np.inf)
    return (float(np.mean(per)), per) if return_all else float(np.mean(per))
