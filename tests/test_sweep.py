"""Sweeps: `dsr.Grid` × seeds in one vmapped `fit`. Every member, whatever its setting and
size, must equal that setting trained alone (float64, the same keys, to 1e-12), a sweep must
resume bit-exactly, and the selection must follow the validation scores."""

import os
import subprocess
import sys
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._sweep._build import mask_of, pad_model, unpad_model

jax.config.update("jax_enable_x64", True)

INIT, KEY, RUNS = jax.random.key(0), jax.random.key(5), 2
KW = dict(steps=12, seq_len=16, batch_size=3, progress=False, monitor_every=0,
          solver="sequential", validation=0.25, keep="last", eval_every=6)


def data(n=1600, N=3):
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=(n, N)), axis=0) * 0.05
    return (x - x.mean(0)) / x.std(0)


def make(key, hidden_dim=6, latent_dim=3):
    return dsr.ShPLRNN(3, latent_dim, hidden_dim, key=key, dtype=jnp.float64)


def alone(i, sw, fit_kw, make_model=make, **base):
    """Member `i` of `sw` trained by itself with its setting."""
    st = sw.setting(i)
    seed = i % sw.runs
    sizes = {k: st[k] for k in ("hidden_dim", "latent_dim") if k in st}
    model = make_model(jax.random.split(INIT, sw.runs)[seed], **sizes)
    kw = dict(KW, **fit_kw)
    kw.update({k: st[k] for k in ("learning_rate", "noise") if k in st})
    alpha = base.pop("alpha", 0.1)
    if "alpha" in st:
        alpha = (st["alpha"] if not isinstance(alpha, dsr.AdaptiveAlpha)
                 else dsr.AdaptiveAlpha(alpha0=st["alpha"], every=alpha.every))
    if any(k.startswith("lambda_") for k in st):
        r = kw["regularization"]
        kw["regularization"] = dsr.Regularization(
            r.mar_units, **{k: st.get(k, getattr(r, k)) for k in
                            ("lambda_mar", "lambda_l1", "lambda_l2")}, p=r.p)
    return dsr.fit(model, data(), alpha, key=jax.random.split(KEY, sw.runs)[seed], **kw)


def assert_members_equal(res, sw, fit_kw, members, **base):
    for i in members:
        ref = alone(i, sw, fit_kw, **base)
        got = res.sweep.member(i)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref.model)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.history["loss"][i], ref.history["loss"], rtol=0,
                                   atol=1e-12)


# --------------------------------------------------------------------------------- the grid

def test_grid_is_the_product_last_key_fastest():
    g = dsr.Grid(alpha=(0.05, 0.1), learning_rate=[1e-3, 3e-3, 1e-2])
    assert len(g) == 6 and g.keys == ("alpha", "learning_rate")
    assert g.settings[1] == {"alpha": 0.05, "learning_rate": 3e-3}
    assert dsr.Grid(noise=0.1).settings == [{"noise": 0.1}]
    assert g == dsr.Grid(alpha=(0.05, 0.1), learning_rate=(1e-3, 3e-3, 1e-2))


@pytest.mark.parametrize("kw, match", [
    (dict(), "at least one setting"),
    (dict(seq_len=(64, 128)), "cannot be swept in one program"),
    (dict(alpha=(0.1, 1.5)), "alpha"),
    (dict(learning_rate=(0.0,)), "learning_rate"),
    (dict(hidden_dim=(8, 8.5)), "hidden_dim"),
    (dict(noise=(0.1, 0.1)), "repeated"),
    (dict(alpha=()), "at least one value"),
])
def test_grid_refuses_bad_settings(kw, match):
    with pytest.raises(ValueError, match=match):
        dsr.Grid(**kw)


def test_padding_round_trip_and_mask():
    small, big = make(INIT, 4, 3), make(INIT, 8, 5)
    padded = pad_model(small, big)
    assert padded.V.shape == (8, 5) and padded.hidden_dim == 8 and padded.latent_dim == 5
    back = unpad_model(padded, small)
    assert bool(eqx.tree_equal(back, small))
    mask = mask_of(small, big)
    assert float(mask.V.sum()) == 4 * 3 and float(mask.B.sum()) == 3 * 3


def test_sweep_refuses_sizes_a_class_cannot_pad():
    with pytest.raises(ValueError, match="padded with zeros"):
        dsr.sweep(lambda key, latent_dim: dsr.ALRNN(3, latent_dim, 2, key=key),
                  dsr.Grid(latent_dim=(4, 6)), key=INIT)


def test_sweep_needs_validation_and_regularization_for_lambdas():
    sw = dsr.sweep(make, dsr.Grid(alpha=(0.1, 0.2)), key=INIT)
    with pytest.raises(ValueError, match="validation"):
        dsr.fit(sw, data(), steps=2, progress=False)
    sw = dsr.sweep(make, dsr.Grid(lambda_mar=(0.1, 1.0)), key=INIT)
    with pytest.raises(ValueError, match="regularization"):
        dsr.fit(sw, data(), steps=2, seq_len=16, progress=False, validation=0.25)


# ------------------------------------------------------- every member equals it trained alone

def test_members_equal_their_setting_trained_alone_sizes_lr_alpha_noise():
    """Masked hidden and latent sizes, learning rate, α and teacher noise per member."""
    grid = dsr.Grid(alpha=(0.1, 0.3), learning_rate=(1e-3, 3e-3), noise=(0.0, 0.05),
                    hidden_dim=(4, 8), latent_dim=(3, 5))
    sw = dsr.sweep(make, grid, runs=RUNS, key=INIT)
    res = dsr.fit(sw, data(), 0.1, key=KEY, learning_rate=1e-3, **KW)
    assert res.sweep.models.n_members == len(grid) * RUNS == 64
    # the smallest, the largest and mixed members, both seeds
    assert_members_equal(res, sw, {}, members=(0, 37, 63))


@pytest.mark.slow  # ≈ 25 s; the fast suite keeps the sizes / lr / α / noise case
def test_members_equal_alone_with_adaptive_alpha_and_swept_lambda():
    reg = dsr.Regularization(1, lambda_mar=0.5, lambda_l1=0.0, lambda_l2=1e-3)
    grid = dsr.Grid(alpha=(0.5, 1.0), lambda_mar=(0.0, 2.0))
    sw = dsr.sweep(make, grid, runs=RUNS, key=INIT)
    adaptive = dsr.AdaptiveAlpha(every=3)
    res = dsr.fit(sw, data(), adaptive, key=KEY, regularization=reg, **KW)
    assert_members_equal(res, sw, dict(regularization=reg), members=(1, 6), alpha=adaptive)


# --------------------------------------------------------------------------- the selection

def test_selection_is_the_best_median_setting_and_the_rows_say_so():
    grid = dsr.Grid(alpha=(0.05, 0.2, 0.6))
    sw = dsr.sweep(make, grid, runs=3, key=INIT)
    res = dsr.fit(sw, data(), key=KEY, **dict(KW, keep="best"))
    s = res.sweep
    scores = np.array([r["score"] for r in s.rows]).reshape(3, 3)
    np.testing.assert_array_equal(s.setting_scores, np.median(scores, axis=1))
    assert s.selected == int(np.argmin(s.setting_scores))
    assert s.selected_members == tuple(range(3 * s.selected, 3 * s.selected + 3))
    assert isinstance(res.model, dsr.Ensemble) and res.model.n_members == 3
    np.testing.assert_array_equal(scores.ravel(), res.validation["best_score"])
    for i, m in zip(s.selected_members, res.model):
        assert bool(eqx.tree_equal(m, s.member(i)))
    csv = s.to_csv().splitlines()
    assert csv[0].startswith("member,setting,seed,alpha,score,D_stsp,D_H,status,step")
    assert len(csv) == 10 and all(line.endswith(",1") == (int(line.split(",")[1]) == s.selected)
                                  for line in csv[1:])
    assert res.settings["sweep"]["grid"] == {"alpha": [0.05, 0.2, 0.6]}
    assert "median" in s.rule and res.settings["sweep"]["rule"] == s.rule


def test_sweep_resumes_bit_exactly_after_an_interrupt(tmp_path):
    grid = dsr.Grid(alpha=(0.1, 0.3), hidden_dim=(4, 8))
    sw = dsr.sweep(make, grid, runs=RUNS, key=INIT)
    kw = dict(KW, keep="best", eval_every=1)
    ref = dsr.fit(sw, data(), key=KEY, **kw)

    def stop(step, model):
        if step == 7:
            raise KeyboardInterrupt
    ck = str(tmp_path / "sweep.ckpt")
    with pytest.warns(UserWarning, match="interrupted"):
        cut = dsr.fit(sw, data(), key=KEY, checkpoint=ck, callback=stop, **kw)
    assert cut.interrupted
    res = dsr.fit(sw, data(), key=KEY, resume=ck, **kw)
    for a, b in zip(jax.tree_util.tree_leaves(res.sweep.models),
                    jax.tree_util.tree_leaves(ref.sweep.models)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(res.history["loss"], ref.history["loss"])


@pytest.mark.slow  # subprocess start-ups
def test_killed_sweep_resumes_bit_exactly(tmp_path):
    from fault_worker import ALPHA, FIT_KW, SWEEP_KW, arrays, data as fault_data, make_sweep
    from test_reliability import kill_and_resume

    steps = 24
    ref = arrays(dsr.fit(make_sweep(), fault_data(), ALPHA, steps=steps, **dict(FIT_KW, **SWEEP_KW)))
    cache = str(tmp_path / "cache")
    os.makedirs(cache)
    folder = tmp_path / "run"
    folder.mkdir()
    got, stats = kill_and_resume(folder, 3, steps, cache, seed=2,
                                 extra_env=dict(FAULT_WORKER_SWEEP="1"))
    print("sweep fault test:", stats)
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


SHARDED = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import dsr
    assert len(jax.devices()) == 4
    rng = np.random.default_rng(0)
    X = np.cumsum(rng.normal(size=(1600, 3)), 0) * 0.05
    make = lambda key, hidden_dim: dsr.ShPLRNN(3, 3, hidden_dim, key=key, dtype=jnp.float64)
    grid = dsr.Grid(learning_rate=(1e-3, 3e-3), noise=(0.0, 0.1, 0.2), hidden_dim=(4, 8))
    sw = dsr.sweep(make, grid, runs=1, key=jax.random.key(1))   # 12 members: 3 per device
    kw = dict(seq_len=16, batch_size=2, steps=4, progress=False, solver="sequential",
              key=jax.random.key(2), monitor_every=0, validation=0.25, eval_every=2)
    a = dsr.fit(sw, X, 0.2, **kw)
    odd = dsr.sweep(make, dsr.Grid(noise=(0.0, 0.1, 0.2), hidden_dim=(4, 8)), runs=1,
                    key=jax.random.key(1))   # 6 members: padded to 8 on 4 devices
    c = dsr.fit(odd, X, 0.2, **kw)
    d = dsr.fit(odd, X, 0.2, devices="all", **kw)
    np.testing.assert_allclose(c.history["loss"], d.history["loss"], rtol=1e-10, atol=1e-13)
    b = dsr.fit(sw, X, 0.2, devices="all", **kw)
    for u, v in zip(jax.tree_util.tree_leaves(a.sweep.models),
                    jax.tree_util.tree_leaves(b.sweep.models)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-13)
    assert a.sweep.selected == b.sweep.selected
    print("SHARDED-OK")
""")


@pytest.mark.slow  # a subprocess with 4 host devices, ≈ 1 min
def test_sharded_sweep_equals_unsharded_on_four_cpu_devices():
    """Per-member settings and masks are placed with their members (member-sharded)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True,
                         env=env, timeout=600)
    assert "SHARDED-OK" in out.stdout, out.stderr[-3000:]
