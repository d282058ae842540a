"""Model-based measures: RMSE(n) and `evaluate`."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from helpers import random_shplrnn


def self_generated(model, T, z0):
    def body(z, _):
        z = model.step(z)
        return z, model.B @ z

    _, x = jax.lax.scan(body, z0, None, length=T)
    return np.asarray(x)


def test_rmse_of_true_model_is_zero():
    model = random_shplrnn(3, 3, seed=1, scale=0.3, random_B=False)
    x = self_generated(model, 400, jnp.array([0.5, -0.3, 0.2]))
    r, per = dsr.metrics.rmse_n(model, x, 32, warmup=16, n_windows=10, key=jax.random.key(0),
                                return_all=True)
    assert per.shape == (10,) and r < 1e-10
    other = eqx.tree_at(lambda m: m.h, model, model.h + 0.1)
    assert dsr.metrics.rmse_n(other, x, 32, warmup=16, n_windows=10, key=jax.random.key(0)) > 1e-3


def test_rmse_bad_input():
    model = random_shplrnn(3, 3)
    x = np.zeros((50, 3))
    with pytest.raises(ValueError, match="`x_test`"):
        dsr.metrics.rmse_n(model, x[:, :2], 8, warmup=4, key=jax.random.key(0))
    with pytest.raises(ValueError, match="warmup"):
        dsr.metrics.rmse_n(model, x, 40, warmup=20, key=jax.random.key(0))


def test_evaluate_all_measures_and_divergence():
    model = random_shplrnn(3, 3, seed=2, scale=0.3, random_B=False)
    x = self_generated(model, 600, jnp.array([0.5, -0.3, 0.2]))
    out = dsr.metrics.evaluate(model, x, key=jax.random.key(0), warmup=32, n_rmse=16,
                               n_windows=5, n_samples=2000, lyapunov_steps=500)
    for k in ("D_stsp", "D_stsp_stderr", "D_H", "RMSE_n", "lambda_max", "settings"):
        assert k in out
    assert out["RMSE_n"] < 1e-8 and np.isfinite(out["lambda_max"]) and not out["diverged"]
    blown = eqx.tree_at(lambda m: m.A_bar, model, jnp.full(3, 5.0))
    blown = eqx.tree_at(lambda m: m.h, blown, jnp.full(3, 1e3))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = dsr.metrics.evaluate(blown, x, key=jax.random.key(0), warmup=32, n_rmse=16,
                                   n_windows=5, n_samples=2000, lyapunov_steps=500, gen_factor=1)
    assert out["D_stsp"] == np.inf and any("diverg" in str(x.message).lower() for x in w)
