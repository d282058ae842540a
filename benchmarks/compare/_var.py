"""VAR(1) by least squares: `x_{t+1} = A x_t + c` (the linear floor among the methods)."""

from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np

from ._member import Member


def fit_var(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(A, c)` minimising `sum_t |x_{t+1} - A x_t - c|^2` over one trajectory `x (T, N)`."""
    x = np.asarray(x, np.float64)
    X = np.concatenate([x[:-1], np.ones((len(x) - 1, 1))], axis=1)
    W, *_ = np.linalg.lstsq(X, x[1:], rcond=None)
    return W[:-1].T, W[-1]


def var_members(data, k: int, settings: dict) -> list[Member]:
    t0 = time.perf_counter()
    A, c = fit_var(data["train"])
    A, c = jnp.asarray(A, jnp.float32), jnp.asarray(c, jnp.float32)
    step = lambda x: A @ x + c  # noqa: E731
    return [Member(warm=lambda ctx: step(ctx[-1]), step=step, observe=lambda x: x,
                   train_s=time.perf_counter() - t0,
                   info={"spectral_radius": float(np.max(np.abs(np.linalg.eigvals(A))))})]
