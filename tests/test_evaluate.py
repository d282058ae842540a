"""Model-based measures: RMSE(n) and `evaluate`."""

import time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import random_shplrnn

import dsr


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
    assert {x.filename for x in w} == {__file__}  # the caller's line, not dsr's


def test_evaluate_collapsed_orbit_is_fast_and_reported():
    # a contracting model: the free run sits on a fixed point within a few hundred steps
    model = random_shplrnn(3, 3, seed=2, scale=0.3, random_B=False)
    x = self_generated(model, 600, jnp.array([0.5, -0.3, 0.2]))
    still = eqx.tree_at(lambda m: (m.A_bar, m.W_L), model, (jnp.full(3, 0.1), model.W_L * 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # D_H: constant dimensions
        out = dsr.metrics.evaluate(still, x, key=jax.random.key(0), warmup=32, n_rmse=16,
                                   n_windows=5, n_samples=2000, lyapunov_steps=500)
    assert out["status"] == "collapsed" and "fixed point" in out["notes"][0]
    assert np.isfinite(out["D_stsp"]) and out["D_stsp"] > 1.0 and out["D_H"] > 0.3
    assert not out["diverged"] and out["D_stsp_status"] == "ok"


_M = random_shplrnn(3, 3, seed=2, scale=0.3, random_B=False)
_XT = np.random.default_rng(0).normal(size=(600, 3))
_KEY = jax.random.key(0)


def _ev(**kw):
    base = {"key": _KEY, "warmup": 32, "n_rmse": 16, "n_windows": 5, "n_samples": 2000,
            "lyapunov_steps": 500}
    data = kw.pop("dataset", _XT)
    return lambda: dsr.metrics.evaluate(kw.pop("model", _M), data, **{**base, **kw})


def _rm(model=_M, x=_XT, n=8, **kw):
    return lambda: dsr.metrics.rmse_n(model, x, n, **{"warmup": 4, "key": _KEY, **kw})


BAD_EVALUATE_INPUTS = {
    "evaluate_key_int": (_ev(key=0), TypeError, "key"),
    "evaluate_n_samples_1": (_ev(n_samples=1), ValueError, "n_samples"),
    "evaluate_smoothing_str": (_ev(smoothing="20"), TypeError, "smoothing"),
    "evaluate_gen_factor_0": (_ev(gen_factor=0), ValueError, "gen_factor"),
    "evaluate_gen_factor_bool": (_ev(gen_factor=True), TypeError, "gen_factor"),
    "evaluate_warmup_float": (_ev(warmup=32.0), TypeError, "warmup"),
    "evaluate_warmup_too_long": (_ev(warmup=590), ValueError, "warmup"),
    "evaluate_n_windows_0": (_ev(n_windows=0), ValueError, "n_windows"),
    "evaluate_lyapunov_bool": (_ev(lyapunov_steps=True), TypeError, "lyapunov_steps"),
    "evaluate_embedding_str": (_ev(embedding="auto"), ValueError, "embedding"),
    "evaluate_embedding_single": (_ev(embedding=(3,)), ValueError, "embedding"),
    "evaluate_embedding_tau_0": (_ev(embedding=(2, 0)), ValueError, "tau"),
    "evaluate_progress_str": (_ev(progress="no"), TypeError, "progress"),
    "evaluate_model_str": (_ev(model="shplrnn"), TypeError, "model"),
    "evaluate_data_dims": (_ev(dataset=_XT[:, :2]), ValueError, "dataset"),
    "evaluate_data_nan": (_ev(dataset=np.where(_XT > 2, np.nan, _XT)), ValueError, "dataset"),
    "evaluate_data_short": (_ev(dataset=_XT[:100], warmup=8, n_rmse=8), ValueError, "dataset"),
    "rmse_model_str": (_rm(model="m"), TypeError, "model"),
    "rmse_x_nan": (_rm(x=np.where(_XT > 2, np.nan, _XT)), ValueError, "x_test"),
    "rmse_x_3d": (_rm(x=_XT[None]), ValueError, "x_test"),
    "rmse_n_0": (_rm(n=0), ValueError, "n"),
    "rmse_n_bool": (_rm(n=True), TypeError, "n"),
    "rmse_warmup_str": (_rm(warmup="4"), TypeError, "warmup"),
    "rmse_n_windows_float": (_rm(n_windows=1.5), TypeError, "n_windows"),
    "rmse_key_int": (_rm(key=0), TypeError, "key"),
    "rmse_return_all_str": (_rm(return_all="yes"), TypeError, "return_all"),
}


@pytest.mark.parametrize("case", sorted(BAD_EVALUATE_INPUTS))
def test_bad_evaluate_inputs_raise_fast(case):
    fn, exc, name = BAD_EVALUATE_INPUTS[case]
    t0 = time.perf_counter()
    with pytest.raises(exc, match=f"`{name}`"):
        fn()
    assert time.perf_counter() - t0 < 2.0


def test_rmse_integer_types():
    x = self_generated(_M, 200, jnp.array([0.5, -0.3, 0.2]))
    ref = dsr.metrics.rmse_n(_M, x, 8, warmup=4, n_windows=3, key=_KEY)
    got = dsr.metrics.rmse_n(_M, x, np.int64(8), warmup=np.int32(4), n_windows=np.uint8(3),
                             key=_KEY)
    assert got == ref


def test_cli_evaluation_reuses_the_orbits_evaluate_generated():
    """`evaluate(..., return_orbits=True)` returns the free runs its measures used; the
    CLI's binned D_stsp and pictures use them and equal what generating them again gives."""
    from dsr._cli._measures import binned_dstsp, eval_settings, evaluate_run, free_runs

    model = random_shplrnn(2, 3, seed=3, scale=0.3, random_B=False)
    x = self_generated(model, 320, jnp.array([0.5, -0.3, 0.2]))
    opts = dict(context_steps=16, n_rmse=8, n_samples=500, embedding=None, gen_factor=1,
                lyapunov_steps=50, progress=False)
    settings, key = eval_settings(opts), jax.random.key(0)
    ens = dsr.Ensemble.from_members([model, eqx.tree_at(lambda m: m.h, model, model.h + 1e-9)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the orbits collapse, as the data do
        for m in (model, ens):
            report, x_gens = evaluate_run(m, x, None, opts, key)
            again = free_runs(m, x, settings)  # what the CLI generated a second time before
            assert x_gens.dtype == np.float64 and x_gens.shape == again.shape == (len(again),
                                                                                    320, 2)
            assert np.array_equal(x_gens, again)
            bins, _ = binned_dstsp(x, again, None, key)
            assert [r["D_stsp_bins"] for r in report["members"]] == bins
