"""Free runs on recordings: the "off" status (bounded but outside the data's range),
free-run validation with best-keeping, learning-rate schedules, noise, delay embedding."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._orbit_status import data_range


def _rotation(theta=0.3, offset=1000.0):
    """A shPLRNN whose free run is `z' = R z` (a rotation about 0) while |z| < `offset`."""
    m = dsr.ShPLRNN(2, 2, 2, key=jax.random.key(0))
    c, s = np.cos(theta), np.sin(theta)
    R = jnp.array([[c, -s], [s, c]], jnp.float32)
    b = jnp.full(2, offset, jnp.float32)
    return eqx.tree_at(lambda m: (m.A_bar, m.W_L, m.V, m.b, m.h, m.B), m,
                       (jnp.zeros(2), R, jnp.eye(2), b, -R @ b, jnp.eye(2)))


def _far_data(n=2000, center=40.0):
    """A unit circle around (center, center): the rotation model, warmed up on it, circles
    the origin at radius ≈ 57, far outside the data but bounded."""
    t = 0.3 * np.arange(n)
    return (np.stack([np.cos(t), np.sin(t)], 1) + center).astype(np.float32)


def test_orbit_status_off_rule():
    x = _far_data()
    ref = data_range(x)
    assert dsr.orbit_status(x, **ref).status == "ok"
    assert dsr.orbit_status(x + 10.0, **ref).status == "off"  # 10 std beyond the extent
    wide = 40.0 + 3.5 * (x - 40.0)  # beyond the extent by 3.5 std, variance 12×
    st = dsr.orbit_status(wide, **ref)
    assert st.status == "off" and st.reason == "variance" and "variance" in st.describe()
    assert dsr.orbit_status(x + 10.0, ref["scale"], ref["std"]).status == "ok"  # no extent


def test_bounded_orbit_far_outside_is_off_in_generate_evaluate_and_fit():
    model, x = _rotation(), _far_data()
    gen = np.asarray(dsr.generate(model, 2000, context=jnp.asarray(x[:300]), check=False))
    assert np.all(np.isfinite(gen)) and np.abs(gen).max() < 100  # bounded
    with pytest.warns(UserWarning, match="off the data's range"):
        dsr.generate(model, 2000, context=jnp.asarray(x[:300]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = dsr.metrics.evaluate(model, x, key=jax.random.key(0), warmup=300, n_rmse=16,
                                   n_windows=4, n_samples=2000, lyapunov_steps=200,
                                   gen_factor=1)
    assert out["status"] == "off" and not out["diverged"] and "range" in out["notes"][0]
    with pytest.warns(UserWarning, match="off the data's range"):
        res = dsr.fit(model, x, alpha=0.5, steps=2, seq_len=16, batch_size=2,
                      learning_rate=1e-12, solver="sequential", monitor_every=2,
                      progress=False)
    assert res.free_run["status"] == "off" and res.free_run["reason"] == "extent"


def _lorenz():
    from test_fit import lorenz_data

    return lorenz_data().astype(np.float32)


def _spiked(spike_at=25):
    """Adam at 1e-2, then a learning-rate spike that wrecks the model from `spike_at` on."""
    import optax

    lr = lambda n: jnp.where(n < spike_at, 1e-2, 3.0)  # noqa: E731
    return optax.chain(optax.clip_by_global_norm(10.0), optax.adam(lr))


VKW = dict(seq_len=30, batch_size=4, progress=False, solver="sequential", monitor_every=0,
           validation=0.2, eval_every=5, key=jax.random.key(1))


def _leaves(m):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(eqx.filter(m, eqx.is_array))]


def test_keep_best_returns_the_best_validation_step():
    model, opt = dsr.ShPLRNN(3, 3, 20, key=jax.random.key(0)), _spiked()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dsr.fit(model, _lorenz(), 0.1, steps=40, optimizer=opt, keep="best", **VKW)
        last = dsr.fit(model, _lorenz(), 0.1, steps=40, optimizer=opt, keep="last", **VKW)
    v = res.validation
    assert list(v["step"]) == [5, 10, 15, 20, 25, 30, 35, 40]
    assert v["D_stsp"].shape == v["D_H"].shape == (8,) and res.settings["validation"]["keep"]
    best = int(v["best_step"])
    assert 0 < best < 25 and v["best_score"] == np.min(v["D_stsp"])
    assert np.all(~np.isfinite(v["D_stsp"][v["step"] > 25]))  # the spike wrecked it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = dsr.fit(model, _lorenz(), 0.1, steps=best, optimizer=opt, keep="last",
                      **dict(VKW, eval_every=best))
    for a, b in zip(_leaves(res.model), _leaves(ref.model)):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(res.model), _leaves(last.model)))


def test_validation_and_best_survive_checkpoint_resume(tmp_path):
    ens = dsr.ensemble(lambda k: dsr.ShPLRNN(3, 3, 20, key=k), 2, key=jax.random.key(0))
    opt = _spiked()
    kw = dict(VKW, optimizer=opt, keep="best", steps=40, checkpoint_every=5)

    def stop(step, model):
        if step == 20:
            raise KeyboardInterrupt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = dsr.fit(ens, _lorenz(), 0.1, checkpoint=tmp_path / "a.ckpt", **kw)
        cut = dsr.fit(ens, _lorenz(), 0.1, checkpoint=tmp_path / "b.ckpt", callback=stop, **kw)
        assert cut.interrupted and list(cut.validation["step"]) == [5, 10, 15, 20]
        res = dsr.fit(ens, _lorenz(), 0.1, checkpoint=tmp_path / "b.ckpt",
                      resume=tmp_path / "b.ckpt", **kw)
    for a, b in zip(_leaves(full.model), _leaves(res.model)):
        np.testing.assert_array_equal(a, b)
    for k in ("step", "D_stsp", "D_H", "best_step", "best_score"):
        np.testing.assert_array_equal(full.validation[k], res.validation[k])
    assert full.validation["D_stsp"].shape == (2, 8)


def test_cli_validation_and_keep_best_are_recorded(tmp_path):
    from dsr._cli import main

    t = 0.1 * np.arange(1500)
    np.save(tmp_path / "x.npy", np.stack([np.sin(t), np.cos(0.7 * t)], 1))
    argv = ["fit", str(tmp_path / "x.npy"), "--hidden-dim", "8", "--seq-len", "16",
            "--batch-size", "2", "--steps", "4", "--monitor-every", "0", "--no-progress",
            "--no-plots", "--validation", "0.3", "--keep", "best", "--eval-every", "2",
            "--lr-schedule", "exponential:1e-5", "--noise", "0.05",
            "--out", str(tmp_path / "run")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    import json

    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["options"]["validation"] == 0.3 and cfg["options"]["keep"] == "best"
    v = cfg["fit"]["validation"]
    assert v["step"] == [2, 4] and len(v["D_stsp"][0]) == 2 and v["keep"] == "best"
    assert cfg["fit"]["settings"]["validation"]["fraction"] == 0.3
    assert cfg["fit"]["settings"]["optimizer"]["schedule"]["final"] == 1e-5
    assert cfg["fit"]["settings"]["noise"] == 0.05 and cfg["options"]["noise"] == 0.05


def test_exponential_schedule_reaches_its_floor_and_is_recorded(tmp_path):
    sched = dsr.ExponentialDecay(final=1e-6)(1e-3, 100)
    np.testing.assert_allclose([sched(0), sched(50), sched(100), sched(200)],
                               [1e-3, np.sqrt(1e-9), 1e-6, 1e-6], rtol=1e-5)
    model = dsr.ShPLRNN(3, 3, 8, key=jax.random.key(0))
    kw = dict(seq_len=16, batch_size=2, progress=False, monitor_every=0, solver="sequential",
              steps=4, checkpoint_every=2)
    ckpt = tmp_path / "s.ckpt"
    res = dsr.fit(model, _lorenz(), 0.1, schedule=dsr.ExponentialDecay(1e-5), checkpoint=ckpt,
                  **kw)
    assert res.settings["optimizer"]["schedule"] == {"class": "ExponentialDecay",
                                                     "final": 1e-5}
    again = dsr.fit(model, _lorenz(), 0.1, resume=ckpt, resume_settings="checkpoint",
                    **dict(kw, checkpoint=None))
    assert again.settings == res.settings
    with pytest.raises(ValueError, match="final"):
        dsr.ExponentialDecay(final=-1.0)


@pytest.mark.parametrize("embed", ["3,4", "auto"])
def test_delay_embed_one_column_csv_trains_and_generates(tmp_path, embed):
    from dsr._cli import main

    t = 0.1 * np.arange(1500)
    np.savetxt(tmp_path / "ecg.csv", np.sin(t) + 0.3 * np.sin(2.3 * t), header="ecg",
               comments="", fmt="%.6g")
    run = tmp_path / "run"
    argv = ["fit", str(tmp_path / "ecg.csv"), "--delay-embed", embed, "--hidden-dim", "8",
            "--seq-len", "16", "--batch-size", "2", "--steps", "2", "--monitor-every", "0",
            "--no-progress", "--no-plots", "--out", str(run)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
        import json

        cfg = json.loads((run / "config.json").read_text())
        m, tau = cfg["data"]["delay_embed"]
        assert cfg["data"]["names"][0] == "ecg(t)" and len(cfg["data"]["names"]) == m
        if embed == "3,4":
            assert (m, tau) == (3, 4)
        assert main(["generate", str(run), "--steps", "50", "--context",
                     str(tmp_path / "ecg.csv"), "--out", str(tmp_path / "g.npy")]) == 0
    assert np.load(tmp_path / "g.npy").shape == (50, m)
    assert np.load(tmp_path / "g_channel.npy").shape == (50,)
    if embed == "auto":
        return
    with warnings.catch_warnings():  # evaluate reports the recorded channel's own D_H too
        warnings.simplefilter("ignore")
        assert main(["evaluate", str(run), "--test", str(tmp_path / "ecg.csv"), "--n-samples",
                     "500", "--context-steps", "32", "--n-rmse", "8", "--gen-factor", "1",
                     "--lyapunov-steps", "50", "--no-progress", "--no-plots"]) == 0
    rep = json.loads((run / "metrics.json").read_text())
    assert "D_H_channel" in rep["summary"] and rep["summary"]["D_H_channel"]["n"] == 1
    assert all("D_H_channel" in r for r in rep["members"])


@pytest.mark.slow
def test_recording_example_quick_on_the_synthetic_ecg(tmp_path):
    import json
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # `examples` is a folder of scripts, not an installed package
        sys.path.insert(0, root)
    from examples import recording

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = recording.main(["--synthetic", "--quick", "--out", str(tmp_path)])
    out = json.loads((tmp_path / "recording.json").read_text())
    names = [r["name"] for r in out["rows"]]
    assert names[:2] == ["member 0", "member 1"] and "VAR(1)" in names
    (tau, sweep), = out["sweeps"].items()  # one delay: a sweep of α × noise × 2 seeds
    assert int(tau) == out["embedding"]["tau"] and len(sweep["rows"]) == 2 * 2
    assert {r["noise"] for r in sweep["rows"]} == {0.0, 0.05}
    assert "floor (training part)" in names and len(rows) == len(names)
    assert (tmp_path / "recording.png").stat().st_size > 0
    assert {"D_stsp", "D_H", "rr_mean", "rr_std", "premature", "status"} <= set(out["rows"][0])
    assert out["validation_s"] > 0 and len(out["validation"]["step"]) >= 1


def test_teacher_noise_changes_training_is_recorded_and_resumes(tmp_path):
    model = dsr.ShPLRNN(3, 3, 8, key=jax.random.key(0))
    kw = dict(seq_len=16, batch_size=2, progress=False, monitor_every=0, solver="sequential",
              steps=4, checkpoint_every=2)
    clean = dsr.fit(model, _lorenz(), 0.1, **kw)
    noisy = dsr.fit(model, _lorenz(), 0.1, noise=0.1, checkpoint=tmp_path / "n.ckpt", **kw)
    assert noisy.settings["noise"] == 0.1 and "noise" not in clean.settings
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(clean.model),
                                                         _leaves(noisy.model)))
    np.testing.assert_array_equal(clean.history["mse"].shape, noisy.history["mse"].shape)
    again = dsr.fit(model, _lorenz(), 0.1, noise=0.1, **kw)
    for a, b in zip(_leaves(noisy.model), _leaves(again.model)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="noise"):
        dsr.fit(model, _lorenz(), 0.1, noise=-1.0, **kw)
