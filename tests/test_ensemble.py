"""Ensembles: K members in one vmapped fit, equal to K solo fits; sharding; files."""

import os
import subprocess
import sys
import textwrap
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from helpers import assert_tree_rel
from test_fit import X

KW = dict(seq_len=20, batch_size=2, steps=6, progress=False, learning_rate=1e-2,
          solver=dsr.DEER(), monitor_every=0)
KEY = jax.random.key(7)


def make(k):
    return dsr.ShPLRNN(3, 3, 8, key=k, dtype=jnp.float64)


def test_ensemble_container():
    ens = dsr.ensemble(make, 3, key=KEY)
    keys = jax.random.split(KEY, 3)
    assert len(ens) == 3 and len(ens.members) == 3
    for i, m in enumerate(ens):
        assert isinstance(m, dsr.ShPLRNN)
        assert eqx.tree_equal(m, make(keys[i]))
    assert eqx.tree_equal(ens[-1], ens[2])
    assert eqx.tree_equal(dsr.Ensemble.from_members(ens.members), ens)
    with pytest.raises(IndexError, match="out of range"):
        ens[3]
    with pytest.raises(TypeError, match="integer"):
        ens[1.0]
    with pytest.raises(ValueError, match="`n`"):
        dsr.ensemble(make, 0, key=KEY)
    with pytest.raises(TypeError, match="one class"):
        dsr.Ensemble.from_members([make(KEY), dsr.LSSM(3, 3, 8, key=KEY)])
    with pytest.raises(ValueError, match="one structure"):
        dsr.Ensemble.from_members([make(KEY), dsr.ShPLRNN(3, 4, 8, key=KEY)])
    with pytest.raises(ValueError, match="`devices`"):
        dsr.fit(ens, X, 0.2, **dict(KW, devices=[]))
    with pytest.raises(ValueError, match="`devices`"):
        dsr.fit(ens, X, 0.2, **dict(KW, devices="gpu0"))


def test_member_equals_solo_and_bad_member_is_isolated():
    ens = dsr.ensemble(make, 3, key=KEY)
    keys = jax.random.split(KEY, 3)
    res = dsr.fit(ens, X, 0.2, key=KEY, **KW)
    assert res.history["loss"].shape == (3, 6) and res.history["wall_time"].shape == (6,)
    solo = [dsr.fit(ens[i], X, 0.2, key=keys[i], **KW) for i in (0, 2)]
    for i, s in zip((0, 2), solo):
        assert_tree_rel(res.model[i], s.model, 1e-8)
        np.testing.assert_allclose(res.history["loss"][i], s.history["loss"], rtol=1e-8)
    # member 1 with huge weights: never applied, others unchanged by its presence
    bad = eqx.tree_at(lambda e: e.stacked.W_L, ens, ens.stacked.W_L.at[1].multiply(1e30))
    bad = eqx.tree_at(lambda e: e.stacked.V, bad, bad.stacked.V.at[1].multiply(1e30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res_bad = dsr.fit(bad, X, 0.2, key=KEY, **KW)
    assert not res_bad.history["applied"][1].any()
    assert res_bad.history["applied"][[0, 2]].all()
    assert res_bad.history["fallback"][1].all()
    assert eqx.tree_equal(res_bad.model[1], bad[1])
    for i in (0, 2):
        assert_tree_rel(res_bad.model[i], res.model[i], 1e-8)


def _stop_after(n):
    def cb(step, model):
        if step == n:
            raise KeyboardInterrupt
        return {"step": step}

    return cb


def test_ensemble_checkpoint_resume_and_files(tmp_path):
    ens = dsr.ensemble(make, 2, key=KEY)
    kw = dict(KW, steps=9, solver="sequential")
    full = dsr.fit(ens, X, 0.2, key=KEY, **kw)
    ck = tmp_path / "ens.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = dsr.fit(ens, X, 0.2, key=KEY, checkpoint=ck, checkpoint_every=3,
                       callback=_stop_after(5), eval_every=1, **kw)
    assert part.interrupted and part.history["loss"].shape == (2, 5)
    resumed = dsr.fit(ens, X, 0.2, key=KEY, resume=ck, **kw)
    assert eqx.tree_equal(resumed.model, full.model)
    np.testing.assert_array_equal(resumed.history["loss"], full.history["loss"])
    path = tmp_path / "ens.eqx"
    dsr.save(path, resumed.model)
    back = dsr.load(path)
    assert isinstance(back, dsr.Ensemble) and eqx.tree_equal(back, resumed.model)
    x = dsr.generate(back, 50, context=X[:30])
    assert x.shape == (2, 50, 3)
    np.testing.assert_allclose(x[1], dsr.generate(back[1], 50, context=X[:30]), rtol=1e-12)
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]


SHARDED = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax, jax.numpy as jnp, numpy as np, equinox as eqx
    jax.config.update("jax_enable_x64", True)
    import dsr
    assert len(jax.devices()) == 4
    rng = np.random.default_rng(0)
    X = np.cumsum(rng.normal(size=(400, 3)), 0) * 0.05
    ens = dsr.ensemble(lambda k: dsr.ShPLRNN(3, 3, 8, key=k, dtype=jnp.float64), 6,
                       key=jax.random.key(1))
    kw = dict(seq_len=16, batch_size=2, steps=4, progress=False, solver=dsr.DEER(),
              key=jax.random.key(2), monitor_every=0)
    a = dsr.fit(ens, X, 0.2, **kw)
    b = dsr.fit(ens, X, 0.2, devices="all", **kw)
    for u, v in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-13)
    assert b.history["loss"].shape == (6, 4)
    print("SHARDED-OK")
""")


def test_sharded_equals_unsharded_on_four_cpu_devices():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True,
                         env=env, timeout=600)
    assert "SHARDED-OK" in out.stdout, out.stderr[-3000:]


def test_evaluate_ensemble_per_member_and_summary():
    """Member i of `evaluate(ens)` equals `evaluate(ens[i])` with key split(key, K)[i]; a
    member whose orbit blows up counts as diverged (D_stsp = inf) in the summary."""
    ens = dsr.ensemble(make, 2, key=KEY)
    bad = eqx.tree_at(lambda m: m.W_L, ens[1], jnp.full_like(ens[1].W_L, jnp.inf))
    ens = dsr.Ensemble.from_members([ens[0], bad, ens[0]])
    kw = dict(n_samples=1000, warmup=20, n_rmse=10, n_windows=4, lyapunov_steps=200,
              embedding=None, smoothing=1.0)
    key = jax.random.key(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = dsr.metrics.evaluate(ens, X[:400], key=key, **kw)
        solo = dsr.metrics.evaluate(ens[2], X[:400], key=jax.random.split(key, 3)[2], **kw)
    assert out["D_stsp"].shape == (3,) and out["diverged"].tolist() == [False, True, False]
    assert np.isinf(out["D_stsp"][1])
    for m in ("D_stsp", "D_H", "RMSE_n", "lambda_max"):
        np.testing.assert_allclose(out[m][2], solo[m], rtol=1e-8)
    s = out["summary"]
    assert s["members"] == 3 and s["n_diverged"] == 1
    assert s["D_stsp"]["n"] == 3 and s["D_stsp"]["median"] == pytest.approx(
        float(np.median(out["D_stsp"])))


def test_free_run_warnings_are_one_per_check_for_many_members():
    def bad(k):  # A ≈ 1 and h = 10: every free run drifts off the data's range
        m = make(k)
        return eqx.tree_at(lambda m: (m.A_bar, m.h), m,
                           (10 * jnp.ones_like(m.A_bar), 10 * jnp.ones_like(m.h)))

    ens = dsr.ensemble(bad, 3, key=KEY)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dsr.fit(ens, X, **dict(KW, steps=2, learning_rate=1e-9, solver="sequential",
                               monitor_every=1))
    runs = [str(x.message) for x in w if "free run" in str(x.message)]
    assert len(runs) == 1, runs  # the status does not change after the first check
    assert "3 members" in runs[0] and all(f"{i}: " in runs[0] for i in range(3))
