"""Training, generation, checkpoints and serialization."""

import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._training._setup import default_optimizer
from dsr._training._step import StepConfig, member_update
from helpers import random_shplrnn, rk4_step


def lorenz_data(n=3000, dt=0.01):
    def f(x):
        return np.array([10 * (x[1] - x[0]), x[0] * (28 - x[2]) - x[1], x[0] * x[1] - 8 / 3 * x[2]])

    x, out = np.array([1.0, 1.0, 1.0]), []
    for i in range(n + 500):
        x = rk4_step(f, x, dt)
        if i >= 500:
            out.append(x)
    out = np.array(out)
    return (out - out.mean(0)) / out.std(0)


X = lorenz_data()
KW = dict(seq_len=30, batch_size=4, progress=False)


def test_training_reduces_loss():
    model = dsr.ShPLRNN(3, 3, 20, key=jax.random.key(0))
    res = dsr.fit(model, X.astype(np.float32), 0.1, steps=200, learning_rate=2e-2,
                  solver=dsr.DEER(), key=jax.random.key(1), **dict(KW, batch_size=8))
    loss = res.history["loss"]
    assert loss.shape == (200,) and np.all(res.history["applied"])
    assert np.mean(loss[-10:]) < 0.25 * np.mean(loss[:10])
    assert np.mean(res.history["mse"][-10:]) < 0.05  # fixed quality (measured 0.020)
    assert np.all(res.history["newton_iters"] >= 2)
    # the trained model predicts one step ahead better than the untrained one
    x = jnp.asarray(X[:200], jnp.float32)
    err = lambda m: float(jnp.mean((dsr.generate(m, 1, context=x[:-1])[0] - x[-1]) ** 2))  # noqa
    assert err(res.model) < err(model)


def test_deer_and_sequential_give_same_update():
    model = random_shplrnn(3, 4, seed=0)
    opt = default_optimizer(1e-3, 10)
    state = opt.init(eqx.filter(model, eqx.is_inexact_array))
    xb = jnp.asarray(np.stack([X[:31], X[100:131]]))
    a = jnp.asarray(0.3)
    cfg = StepConfig(dsr.DEER(), dsr.Regularization(2, 1.0, 1.0, 1e-2), opt,
                     dsr.ConstantAlpha(0.3), 2, 5, 5, True)
    out = [eqx.filter_jit(member_update)(model, state, xb, None, a, cfg, s)
           for s in (dsr.DEER(), dsr.Sequential())]
    (m1, _, l1, *_), (m2, _, l2, *_) = out
    assert abs(float(l1) - float(l2)) < 1e-12
    for u, v in zip(jax.tree_util.tree_leaves(m1), jax.tree_util.tree_leaves(m2)):
        np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-12)


def test_checkpoint_resume_equals_uninterrupted(tmp_path):
    model = dsr.ShPLRNN(3, 3, 10, key=jax.random.key(2), dtype=jnp.float64)
    kw = dict(KW, steps=12, solver="sequential", key=jax.random.key(3), learning_rate=1e-2)
    full = dsr.fit(model, X, 0.2, **kw)
    ck = tmp_path / "run.ckpt"
    part = dsr.fit(model, X, 0.2, **dict(kw, steps=12), checkpoint=ck, checkpoint_every=5,
                   callback=_stop_after(7), eval_every=1)
    assert part.interrupted and os.path.exists(ck)
    resumed = dsr.fit(model, X, 0.2, **kw, resume=ck)
    for u, v in zip(jax.tree_util.tree_leaves(full.model), jax.tree_util.tree_leaves(resumed.model)):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_allclose(resumed.history["loss"], full.history["loss"])


def _stop_after(n):
    def cb(step, model):
        if step == n:
            raise KeyboardInterrupt
        return None

    return cb


def test_adaptive_alpha_and_lssm():
    model = dsr.ShPLRNN(3, 3, 10, key=jax.random.key(4))
    res = dsr.fit(model, X.astype(np.float32), "adaptive", steps=20, alpha_every=5, **KW)
    assert 0.0 <= res.history["alpha"].min() and res.history["alpha"].max() <= 1.0
    lssm = dsr.LSSM(3, 8, 16, key=jax.random.key(5))
    res = dsr.fit(lssm, [X[:1500].astype(np.float32), X[1500:].astype(np.float32)], steps=150,
                  warmup=10, learning_rate=3e-2, **dict(KW, batch_size=8))
    # measured: 0.95 → 0.45
    assert np.mean(res.history["loss"][-20:]) < 0.7 * np.mean(res.history["loss"][:20])


def test_generate_matches_manual_loop():
    m = random_shplrnn(3, 4, seed=6, scale=0.2)
    ctx = jnp.asarray(X[:20])
    x, z = dsr.generate(m, 7, context=ctx, return_latents=True)
    Bp = jnp.linalg.pinv(m.B)
    P = jnp.eye(4) - Bp @ m.B
    zt = Bp @ ctx[0]
    for t in range(1, 20):
        zt = m.step(P @ zt + Bp @ ctx[t - 1])
    zt = P @ zt + Bp @ ctx[-1]
    ref = []
    for _ in range(7):
        zt = m.step(zt)
        ref.append(m.B @ zt)
    np.testing.assert_allclose(x, np.stack(ref), rtol=1e-10, atol=1e-12)
    xb = dsr.generate(m, 7, context=jnp.stack([ctx, ctx]))
    np.testing.assert_allclose(xb[1], x, rtol=1e-12)
    x0 = dsr.generate(m, 3, z0=jnp.zeros(4))
    np.testing.assert_allclose(x0[0], m.B @ m.step(jnp.zeros(4)), rtol=1e-12)
    lssm = dsr.LSSM(3, 4, 5, key=jax.random.key(0), dtype=jnp.float64)
    xl = dsr.generate(lssm, 4, context=ctx)
    zl = lssm.teacher_forced(jnp.concatenate([ctx, ctx[:1]]))[-1]
    np.testing.assert_allclose(xl[0], lssm.observe(zl), rtol=1e-12)
    np.testing.assert_allclose(xl[1], lssm.observe(lssm.step(zl)), rtol=1e-12)


def test_save_load_roundtrip(tmp_path):
    for m in (random_shplrnn(3, 4, seed=7, rank=2), dsr.LSSM(2, 3, 4, key=jax.random.key(1)),
              dsr.SelectiveSSM(2, 8, 4, key=jax.random.key(2))):
        path = tmp_path / f"{type(m).__name__}.eqx"
        dsr.save(path, m)
        m2 = dsr.load(path)
        assert type(m2) is type(m)
        for u, v in zip(jax.tree_util.tree_leaves(m), jax.tree_util.tree_leaves(m2)):
            np.testing.assert_array_equal(u, v)


def test_bad_input_before_compilation():
    model = dsr.ShPLRNN(3, 3, 10, key=jax.random.key(0))
    bad = X.copy()
    bad[5, 1] = np.nan
    cases = [
        (dict(data=bad), "`data`"),
        (dict(data=X[:20]), "too short"),
        (dict(data=X[:, :2]), "obs_dim"),
        (dict(alpha=1.2), "`alpha`"),
        (dict(alpha="big"), "`alpha`"),
        (dict(warmup=30), "`warmup`"),
        (dict(batch_size=0), "`batch_size`"),
        (dict(solver="fast"), "`solver`"),
    ]
    for over, match in cases:
        kw = dict(data=X, alpha=0.1, steps=1, seq_len=30, batch_size=2, progress=False)
        kw.update(over)
        with pytest.raises(ValueError, match=match):
            dsr.fit(model, **kw)
    with pytest.raises(ValueError, match="`n_steps`"):
        dsr.generate(model, 0, z0=jnp.zeros(3))
    with pytest.raises(ValueError, match="exactly one"):
        dsr.generate(model, 3)


def test_nonfinite_steps_are_not_applied():
    model = dsr.ShPLRNN(3, 3, 10, key=jax.random.key(0))
    model = eqx.tree_at(lambda m: m.W_L, model, model.W_L * 1e30)
    model = eqx.tree_at(lambda m: m.V, model, model.V * 1e30)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = dsr.fit(model, X.astype(np.float32), 0.0, steps=3, solver="sequential", **KW)
    assert not res.history["applied"].any()
    for u, v in zip(jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(res.model)):
        np.testing.assert_array_equal(u, v)


def test_auto_solver_choice():
    from dsr._solvers._resolve import resolve_solver

    # the measured CPU table (benchmarks.solver_choice): sequential at every measured shape
    for M, T, K in ((3, 64, 1), (3, 200, 4), (16, 1000, 16)):
        assert isinstance(resolve_solver("auto", M, "cpu", seq_len=T, members=K),
                          dsr.Sequential)
    assert isinstance(resolve_solver("auto", 64, "gpu"), dsr.DEER)  # measured (one H200, quick)
    assert isinstance(resolve_solver("auto", 64, "tpu"), dsr.DEER)  # reasoned, not measured
    assert resolve_solver("quasi", 10).jacobian == "diag"


def test_raising_alpha_after_failed_solves_warns():
    """`max_failures` failed parallel solves in a row raise α by 0.05, and fit says so."""
    model = dsr.ShPLRNN(3, 3, 20, key=jax.random.key(0))
    with pytest.warns(UserWarning, match="alpha was raised by 0.05"):
        res = dsr.fit(model, X.astype(np.float32), 0.1, steps=4, max_failures=1,
                      solver=dsr.DEER(max_iter=2, tol=1e-30), monitor_every=0,
                      key=jax.random.key(1), **KW)
    assert res.history["alpha_raised"].any() and res.alpha > 0.1


def test_auto_solver_rules_first_match_wins(monkeypatch):
    from dsr._solvers import _choice

    rules = ((8, 500, 4, "deer"), (None, None, None, "sequential"))
    monkeypatch.setitem(_choice.SOLVER_TABLE, "testbackend", {"rules": rules, "source": "test"})
    pick = lambda M, T, K: _choice.auto_solver_name(M, T, K, "testbackend")  # noqa: E731
    assert pick(8, 500, 4) == "deer" and pick(3, 64, 1) == "deer"
    assert pick(9, 500, 4) == pick(8, 501, 4) == pick(8, 500, 5) == "sequential"
    assert pick(3, None, 1) == "sequential"  # T unknown: a T-bounded rule does not apply
    assert _choice.auto_solver_name(3, 64, 1, "unmeasured") == "deer"  # the reasoned default
