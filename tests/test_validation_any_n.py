"""Free-run validation for any number of channels (issue 30): the binning D_stsp on the
validation data for N ≤ 3 (unchanged) and on their 3 leading principal components for N > 3,
the status ranking of the score `keep="best"` minimizes (the status judged over
`status_steps`, default 4 × the validation length), and the free-run check of `fit` from the
validation context for at least that long."""

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._orbit_status import data_range
from dsr._training._validation import (STATUS_FACTOR, STATUS_PENALTY, make_validation,
                                       member_scores, n_bins, rank_score, validation_history)
from dsr.metrics._dstsp_bins import binned_divergence


def lorenz(n: int, seed: int = 0, dt: float = 0.01) -> np.ndarray:
    """A Lorenz-63 orbit (RK4, `n` steps after 500 of transient) from a random start."""
    def f(u):
        return np.array([10 * (u[1] - u[0]), u[0] * (28 - u[2]) - u[1],
                         u[0] * u[1] - 8 / 3 * u[2]])

    u = np.random.default_rng(seed).normal(size=3) + np.array([0.0, 0.0, 25.0])
    out = np.empty((n + 500, 3))
    for t in range(n + 500):
        k1 = f(u)
        k2 = f(u + dt / 2 * k1)
        k3 = f(u + dt / 2 * k2)
        k4 = f(u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[t] = u
    return out[500:]


def mixed(z: np.ndarray, n_channels: int, noise: float, seed: int) -> np.ndarray:
    """`z` (T, 3) standardized, mixed into `n_channels` by a fixed random matrix (the same for
    every seed), plus N(0, noise²) channel noise drawn with `seed` (N = 3: `z` itself)."""
    z = (z - z.mean(0)) / z.std(0)
    if n_channels == 3:
        return z
    mix = np.random.default_rng(0).normal(size=(3, n_channels)) / np.sqrt(3)
    return z @ mix + noise * np.random.default_rng(seed).normal(size=(len(z), n_channels))


def _pair(n_channels: int, n: int = 3000):
    """Held-out data and an independent stretch of the same process, both standardized by
    the held-out data's mean and std."""
    a, b = (mixed(lorenz(n, s), n_channels, 0.3, s) for s in (1, 2))
    mu, sd = a.mean(0), a.std(0)
    return (a - mu) / sd, (b - mu) / sd


def _validation(x: np.ndarray, status_steps=None):
    return make_validation(x, "best", None, [x], x.shape[1], np.float64, 32, 100,
                           status_steps)[1]


@pytest.mark.parametrize("n_channels", [3, 16, 64])
def test_score_ranks_matching_run_before_scaled_and_collapsed(n_channels):
    x_val, other = _pair(n_channels)
    val = _validation(x_val)
    gen = np.stack([other, 10 * other, 10 * x_val, np.zeros_like(other)])
    sc = member_scores(val, gen)
    assert sc["status"] == ["ok", "off", "off", "collapsed"]
    assert list(sc["code"]) == [0, 1, 1, 2]
    d = sc["D_stsp"]
    assert d[0] < 2.5 and np.all(d[1:] > 4 * d[0])  # the measure alone tells them apart
    assert sc["score"][0] == d[0] and np.all(sc["score"][1:] > STATUS_PENALTY)
    assert sc["score"][0] < np.min(sc["score"][1:])
    if n_channels > 3:
        assert val.settings["space"] == "pca3" and val.settings["n_bins"] == n_bins(3000, 3)


@pytest.mark.parametrize("n_channels", [1, 2, 3])
def test_low_dimensional_score_and_settings_are_unchanged(n_channels):
    x_val, other = (a[:, :n_channels] for a in _pair(3))
    val = _validation(x_val, status_steps=len(x_val))  # as before `status_steps` existed
    assert set(val.settings) == {"steps", "sha256", "keep", "every", "context", "n_bins"}
    assert _validation(x_val).settings["status_steps"] == STATUS_FACTOR * len(x_val)
    assert val.settings["n_bins"] == n_bins(*x_val.shape) and val.basis is None
    gen = np.stack([other, 0.5 * other])
    sc = member_scores(val, gen)
    for g, d in zip(gen, sc["D_stsp"]):  # what validation computed before issue 30
        assert d == binned_divergence(x_val, g, n_bins(*x_val.shape))[0]


def test_pca_space_is_fitted_on_the_validation_data():
    x_val, _ = _pair(16)
    val = _validation(x_val)
    proj = val.space(x_val)
    assert proj.shape == (3000, 3) and np.allclose(proj.mean(0), 0.0, atol=1e-10)
    var = np.linalg.eigvalsh(np.cov(x_val.T))[::-1]
    np.testing.assert_allclose(proj.var(0, ddof=1), var[:3], rtol=1e-8)
    # a mixture of 3 sources: the leading 3 components hold nearly all the signal
    assert var[:3].sum() / var.sum() > 0.8


def test_rank_score_orders_by_status_then_d_stsp():
    d = np.array([5.0, 0.1, 0.1, 0.1, 0.1, np.inf])
    code = np.array([0, 1, 2, 3, -1, 1])
    s = rank_score(d, code)
    np.testing.assert_array_equal(s, [5.0, STATUS_PENALTY + 0.1, STATUS_PENALTY + 0.1, np.inf,
                                      0.1, np.inf])


def test_validation_history_reads_status_and_old_records():
    old = [(5, {"val_D_stsp": 0.5, "val_D_H": 0.1})]  # written before statuses were
    new = [(10, {"val_D_stsp": 0.2, "val_D_H": 0.1, "val_status": 1}),
           (15, {"val_D_stsp": np.inf, "val_D_H": 1.0, "val_status": 3})]
    v = validation_history(old + new + [(15, {"loss": 1.0})], 1, False)
    np.testing.assert_array_equal(v["step"], [5, 10, 15])
    np.testing.assert_array_equal(v["status"], [-1, 1, 3])
    np.testing.assert_array_equal(v["score"], [0.5, STATUS_PENALTY + 0.2, np.inf])
    ens = [(5, {"val_D_stsp[0]": 0.5, "val_D_H[0]": 0.1, "val_status[0]": 0,
                "val_D_stsp[1]": 0.4, "val_D_H[1]": 0.1, "val_status[1]": 2})]
    v = validation_history(ens, 2, True)
    assert v["status"].shape == v["score"].shape == (2, 1)
    np.testing.assert_array_equal(v["score"][:, 0], [0.5, STATUS_PENALTY + 0.4])


def test_fit_records_status_and_score_in_pca_space():
    x = mixed(lorenz(2000), 8, 0.3, 0).astype(np.float32)
    ens = dsr.ensemble(lambda k: dsr.ClippedShPLRNN(8, 4, 16, key=k), 2, key=jax.random.key(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dsr.fit(ens, x, 0.1, steps=10, seq_len=30, batch_size=4, progress=False,
                      solver="sequential", monitor_every=0, validation=0.2, eval_every=5,
                      keep="best", key=jax.random.key(1))
    v, s = res.validation, res.settings["validation"]
    assert s["space"] == "pca3" and s["n_bins"] == n_bins(400, 3)
    assert v["status"].shape == v["score"].shape == v["D_stsp"].shape == (2, 2)
    assert set(np.unique(v["status"])) <= {0, 1, 2, 3}
    np.testing.assert_array_equal(v["score"], rank_score(v["D_stsp"], v["status"]))
    for i in range(2):
        finite = np.isfinite(v["score"][i])
        if finite.any():
            assert v["best_score"][i] == np.min(v["score"][i][finite])


@pytest.mark.parametrize("n_channels", [3, 16])
def test_status_is_judged_over_status_steps_and_measures_over_the_validation_length(n_channels):
    """A run that matches the data for the validation length and then leaves their range is
    "off" (it was "ok" when only the validation length was run); its D_stsp and D_H are those
    of its first validation length."""
    x_val, other = _pair(n_channels, 1500)
    val = _validation(x_val, status_steps=3 * len(x_val))
    later = np.concatenate([other, 10 * other, 10 * other])
    sc = member_scores(val, np.stack([later, np.concatenate([other] * 3)]))
    assert sc["status"] == ["off", "ok"] and sc["score"][0] > STATUS_PENALTY > sc["score"][1]
    assert sc["D_stsp"][0] == sc["D_stsp"][1] and sc["D_H"][0] == sc["D_H"][1]
    short = member_scores(_validation(x_val, status_steps=len(x_val)), other[None])
    assert short["status"] == ["ok"] and short["D_stsp"][0] == sc["D_stsp"][0]


def test_status_steps_is_checked():
    x = mixed(lorenz(600), 3, 0.3, 0)
    with pytest.raises(ValueError, match=r"`status_steps` \(100\) is below the validation "
                                         r"length \(600\)"):
        _validation(x, status_steps=100)
    with pytest.raises(TypeError, match="`status_steps` must be an int"):
        _validation(x, status_steps=2.5)
    with pytest.raises(ValueError, match="`status_steps`.*needs `validation=`"):
        make_validation(None, "last", None, [x], 3, np.float64, 32, 100, 2000)


def test_checkpoint_without_status_steps_resumes_with_the_validation_length(tmp_path):
    """A checkpoint written before `status_steps` existed (its status judged over the
    validation length, nothing recorded) resumes under the default bit-exactly as the same
    run with `status_steps` = that length; a recorded `status_steps` that differs from the
    call's is a settings difference."""
    x = mixed(lorenz(2000), 3, 0.3, 0).astype(np.float32)
    model = dsr.ShPLRNN(3, 3, 16, key=jax.random.key(0))
    kw = dict(alpha=0.2, seq_len=20, batch_size=4, solver="sequential", progress=False,
              monitor_every=0, validation=0.2, eval_every=3, keep="best",
              key=jax.random.key(1))
    n_val = 400
    ref = dsr.fit(model, x, steps=6, status_steps=n_val, **kw)
    assert "status_steps" not in ref.settings["validation"]
    ck = str(tmp_path / "old.ckpt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fit interrupted after ..."
        part = dsr.fit(model, x, steps=6, status_steps=n_val, checkpoint=ck,
                       callback=_stop_after(3), **kw)
    assert part.interrupted
    res = dsr.fit(model, x, steps=6, resume=ck, **kw)  # default status_steps
    assert "status_steps" not in res.settings["validation"]
    for a, b in zip(jax.tree_util.tree_leaves(eqx_arrays(ref.model)),
                    jax.tree_util.tree_leaves(eqx_arrays(res.model))):
        np.testing.assert_array_equal(a, b)
    new = str(tmp_path / "new.ckpt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dflt = dsr.fit(model, x, steps=6, checkpoint=new, callback=_stop_after(3), **kw)
    assert dflt.settings["validation"]["status_steps"] == STATUS_FACTOR * n_val
    with pytest.raises(ValueError, match="status_steps"):
        dsr.fit(model, x, steps=6, resume=new, status_steps=n_val, **kw)
    back = dsr.fit(model, x, steps=6, resume=new, status_steps=n_val,
                   resume_settings="checkpoint", **kw)
    assert back.settings["validation"]["status_steps"] == STATUS_FACTOR * n_val


def _stop_after(n):
    def cb(step, model):
        if step == n:
            raise KeyboardInterrupt

    return cb


def eqx_arrays(model):
    import equinox as eqx

    return eqx.filter(model, eqx.is_array)


def test_free_run_check_runs_from_validation_for_its_length():
    from test_recordings import _far_data, _rotation

    model, x = _rotation(), _far_data(3000)
    kw = dict(alpha=0.5, steps=2, seq_len=16, batch_size=2, learning_rate=1e-12,
              solver="sequential", monitor_every=2, progress=False)
    with pytest.warns(UserWarning, match="17 steps of the training data, run 1000 steps"):
        dsr.fit(model, x, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dsr.fit(model, x, validation=0.5, eval_every=2, **kw)
    msgs = [str(w.message) for w in caught if "free run of the model" in str(w.message)]
    assert msgs and "16 steps of the validation data, run 6000 steps" in msgs[0]
    assert res.free_run["status"] == "off" and res.validation["status"][0] == 1


@pytest.mark.slow
def test_64_channel_ensemble_selects_members_that_stay_in_range():
    """A 3-d chaotic system mixed into 64 noisy channels: the members kept by the validation
    score stay in the data's range over a free run 10× the validation length (measured: 4 of
    4 here, 3 of 4 with data seeds 1 and 2, ~2 min on 2 CPU cores)."""
    t0 = time.perf_counter()
    x = mixed(lorenz(12_500), 64, 0.3, 0)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    ens = dsr.ensemble(lambda k: dsr.ClippedShPLRNN(64, 16, 128, key=k), 4,
                       key=jax.random.key(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dsr.fit(ens, x, 0.2, steps=4000, seq_len=200, batch_size=16, learning_rate=3e-3,
                      noise=0.1, validation=0.2, keep="best", progress=False,
                      key=jax.random.key(2))
    assert res.settings["validation"]["space"] == "pca3"
    x_val = x[-2500:]
    tc = res.settings["validation"]["context"]
    ref = data_range(x)
    status = [dsr.orbit_status(np.asarray(dsr.generate(res.model[i], 10 * len(x_val),
                                                       context=jnp.asarray(x_val[:tc]),
                                                       check=False)), **ref).status
              for i in range(4)]
    print(f"statuses {status}, best scores {res.validation['best_score']}, "
          f"{time.perf_counter() - t0:.0f} s")
    assert status.count("ok") >= 3, status


def test_validation_too_short_for_d_h_is_refused_before_training():
    x = mixed(lorenz(400), 8, 0.3, 0)
    with pytest.raises(ValueError, match="`validation` gives 300 validation steps"):
        make_validation(x[:300], "best", None, [x], 8, np.float64, 32, 100)
