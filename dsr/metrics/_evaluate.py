"""All measures of a trained model on a data set (papers/001 App. G)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray

from .._generate import generate
from ._dstsp import state_space_divergence
from ._lyapunov import lyapunov_spectrum
from ._rmse import rmse_n
from ._spectrum import power_spectrum_distance

#: Delay embeddings (m, τ) used by the paper for D_stsp^DE (App. G).
PAPER_EMBEDDINGS = {
    "lorenz96": (3, 4096),
    "bursting_neuron": (7, 1024),
    "lorenz63_partial": (3, 10),
}


def default_embedding(dataset, obs_dim: int):
    system = (getattr(dataset, "meta", None) or {}).get("system")
    if system == "lorenz63" and obs_dim < 3:
        return PAPER_EMBEDDINGS["lorenz63_partial"]
    return PAPER_EMBEDDINGS.get(system)


def evaluate(
    model,
    dataset,
    *,
    key: PRNGKeyArray,
    warmup: int = 512,
    n_rmse: int = 128,
    n_windows: int = 100,
    n_samples: int = 1_000_000,
    embedding="paper",
    gen_factor: int = 3,
    smoothing: float = 20.0,
    lyapunov_steps: int = 20_000,
) -> dict:
    """Warm up on the test data, generate a free orbit of `gen_factor ×` the test length and
    return every measure with the settings used.

    **Arguments:** `model`; `dataset`: a `data_gen.Dataset` (uses `test`, `dt`, `meta`) or a
    test array (T, N); `key`; `warmup`: context length for the warm-up and for RMSE(n);
    `n_rmse`, `n_windows`: RMSE(n) settings; `n_samples`: D_stsp Monte-Carlo samples;
    `embedding`: `"paper"` (App. G settings for the system, none for fully observed
    Lorenz-63), `None` or `(m, τ)`; `smoothing`: D_H kernel width; `lyapunov_steps`.

    **Returns:** a dict with `D_stsp`, `D_stsp_stderr`, `D_H`, `RMSE_n`, `lambda_max` (per
    time unit when the data set has `dt`, else per step), `diverged`, and `settings`.
    """
    x = np.asarray(getattr(dataset, "test", dataset))
    dt = float(getattr(dataset, "dt", 1.0) or 1.0)
    if embedding == "paper":
        embedding = default_embedding(dataset, x.shape[1])
    if embedding is not None and (embedding[0] - 1) * embedding[1] >= x.shape[0] // 2:
        warnings.warn(f"embedding {embedding} too long for {x.shape[0]} test steps; dropped.",
                      stacklevel=2)
        embedding = None
    k1, k2, k3 = jax.random.split(key, 3)
    dtype = jnp.asarray(jax.tree_util.tree_leaves(model)[0]).dtype
    n_gen = gen_factor * x.shape[0]
    x_gen, z_gen = generate(model, n_gen, context=jnp.asarray(x[:warmup], dtype),
                            return_latents=True)
    x_gen = np.asarray(x_gen, np.float64)
    diverged = not bool(np.all(np.isfinite(x_gen)))
    d = state_space_divergence(x, x_gen, n_samples=n_samples, embedding=embedding, key=k1)
    dh = power_spectrum_distance(x, x_gen, smoothing=smoothing)
    rm = rmse_n(model, x, n_rmse, warmup=warmup, n_windows=n_windows, key=k2)
    lam = float("nan")
    if not diverged:
        z0 = z_gen[-1]
        lam = float(lyapunov_spectrum(model.step, model.jacobian, z0, lyapunov_steps, dt=dt,
                                      n_transient=1000, n_exponents=1)[0])
    return {
        "D_stsp": float(d.value), "D_stsp_stderr": float(d.stderr), "D_H": float(dh),
        "RMSE_n": rm, "lambda_max": lam, "diverged": diverged,
        "settings": {"warmup": warmup, "n_rmse": n_rmse, "n_windows": n_windows,
                     "n_samples": n_samples, "embedding": embedding, "n_gen": n_gen,
                     "smoothing": smoothing, "dt": dt, "lyapunov_steps": lyapunov_steps},
    }
