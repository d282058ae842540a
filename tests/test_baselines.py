"""Baselines of Hess et al. (2026), arXiv:2605.12683, Sec. 5.4: the selective SSM (Mamba-2 recurrence, Eq. 72–73) and the
TTT / linear-attention model: parallel training forward vs their own recurrences, causality,
warm start, training and generation."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import data_gen
import dsr
from dsr.baselines import SelectiveSSM
from dsr.baselines import TTTModel

T = 40  # one window length for all exactness tests (few distinct jit shapes)


def _randomize(model, key, names, scale=0.5):
    """O(1) random values for the read-out etc. (the App. E init is almost linear)."""
    keys = jax.random.split(key, len(names))
    for k, name in zip(keys, names):
        old = getattr(model, name)
        new = scale * jax.random.normal(k, old.shape, old.dtype)
        model = eqx.tree_at(lambda m, n=name: getattr(m, n), model, new)
    return model


def _ssm(key, input_dim=2):
    m = SelectiveSSM(3, 12, 7, n_heads=3, state_size=2, input_dim=input_dim, key=key,
                     dtype=jnp.float64)
    m = _randomize(m, jax.random.fold_in(key, 1),
                   ("W_delta", "b_delta", "A_log", "W_U", "b_U", "b_in", "B", "V", "b"))
    return m if not input_dim else _randomize(m, jax.random.fold_in(key, 2), ("C",))


def _ttt(key, **kw):
    m = TTTModel(3, 7, d_model=5, d_key=4, d_value=3, lr_init=0.2, block_size=8, key=key,
                 dtype=jnp.float64, **kw)
    return _randomize(m, jax.random.fold_in(key, 1), ("B", "V", "b", "b_e", "g"))


def test_selective_ssm_parallel_matches_loop(getkey):
    m = _ssm(getkey())
    x = jax.random.normal(getkey(), (T + 1, 3), jnp.float64)
    s = jax.random.normal(getkey(), (T + 1, 2), jnp.float64)
    z0 = jax.random.normal(getkey(), (12,), jnp.float64)

    @jax.jit
    def loop(z0):
        def body(z, xs):
            z = m.forced_step(z, *xs)
            return z, z

        return jax.lax.scan(body, z0, (x[:-1], s[1:]))[1]

    ref = loop(z0)
    scale = float(jnp.max(jnp.abs(ref)))
    assert scale > 0.1  # a non-trivial trajectory
    tf = eqx.filter_jit(SelectiveSSM.teacher_forced)
    np.testing.assert_allclose(tf(m, x, s, z0), ref, rtol=0, atol=1e-10 * scale)  # one scan

    @jax.jit
    def one_step(zt, xt, st):
        # Eq. 72 written out: per head Ā = exp(Δ A), drive Δ u ⊗ U
        delta = jax.nn.softplus(m.W_delta @ xt + m.b_delta)
        u = (m.W_in @ xt + m.b_in).reshape(3, 2)
        U = (m.W_U @ xt + m.b_U).reshape(3, 2)
        expect = (jnp.exp(delta * m.A)[:, None, None] * zt.reshape(3, 2, 2)
                  + delta[:, None, None] * u[:, :, None] * U[:, None, :]).reshape(-1) + m.C @ st
        # free-running step (Eq. 4): the prediction replaces the data
        free = m.forced_step(zt, m.observe(zt), st)
        return m.forced_step(zt, xt, st), expect, m.step(zt, st), free

    got, expect, free, free_ref = one_step(ref[5], x[6], s[7])
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(free, free_ref, rtol=1e-14)
    assert np.all(m.A < 0)
    # generation continues teacher forcing: warm-up on x_0..x_{T-1}, then step
    s_gen = jnp.concatenate([s[-1:], s[:3]])
    gen, zs = dsr.generate(m, 4, context=x[:-1], context_inputs=s[:-1], inputs=s_gen,
                           return_latents=True)
    np.testing.assert_allclose(zs[0], tf(m, x, s, jnp.zeros_like(z0))[-1], rtol=1e-10,
                               atol=1e-12)
    nxt = jax.jit(jax.vmap(m.step))(zs[:-1], s_gen[1:])
    np.testing.assert_allclose(zs[1:], nxt, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gen, jax.vmap(m.observe)(zs), rtol=1e-12)


def test_ttt_teacher_forced_matches_recurrence(getkey):
    m = _ttt(getkey())
    x = jax.random.normal(getkey(), (T + 1, 3), jnp.float64)
    predict = eqx.filter_jit(lambda m, x, form: m.predict_teacher_forced(x, form=form))

    @jax.jit
    def loop(x):
        def body(z, xt):
            z = m.forced_step(z, xt)
            return z, z

        return jax.lax.scan(body, m.initial_state(), x[:-1])

    z_last, zs = loop(x)
    ref = jax.vmap(m.observe)(zs)  # x̂_1..x̂_T from the token-by-token recurrence
    scale = float(jnp.max(jnp.abs(ref)))
    W, G, _ = m._split(z_last)
    assert scale > 0.1 and float(jnp.max(jnp.abs(W - m.layer.w0))) > 0.1  # W really moves
    assert float(jnp.max(jnp.abs(G))) > 0.01
    # parallel form (5 blocks of 8 tokens); tests/test_ttt.py checks it against the layer's
    # recurrent form
    np.testing.assert_allclose(predict(m, x, "parallel"), ref, rtol=0, atol=1e-10 * scale)
    # causal: x̂_t (row t-1) depends on x_0..x_{t-1} only
    a, b = predict(m, x, "parallel"), predict(m, x.at[20].add(1.0), "parallel")
    np.testing.assert_array_equal(a[:20], b[:20])
    assert float(jnp.max(jnp.abs(a[20] - b[20]))) > 1e-6
    # warm start in closed form = the state after the context, for any context length
    np.testing.assert_allclose(eqx.filter_jit(TTTModel.warm_start)(m, x[:1]), zs[0],
                               rtol=1e-10, atol=1e-10)
    # generation: the first prediction is x̂_T, then the free-running step
    gen, gz = dsr.generate(m, 3, context=x[:-1], return_latents=True)
    np.testing.assert_allclose(gz[0], z_last, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gen[0], ref[-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gz[1:], jax.jit(jax.vmap(m.step))(gz[:-1]), rtol=1e-10,
                               atol=1e-12)
    assert m.latent_dim == 2 * 4 * 3 + 3 == gz.shape[-1]


def test_bad_arguments(getkey):
    # same shapes as above: no new compilations
    with pytest.raises(ValueError, match="divisible"):
        SelectiveSSM(3, 10, 7, n_heads=3, state_size=2, key=getkey())
    m = SelectiveSSM(3, 12, 7, n_heads=3, state_size=2, key=getkey(), dtype=jnp.float64)
    x = jnp.ones((T + 1, 3))
    with pytest.raises(ValueError, match="input_dim = 0"):
        m.teacher_forced(x, jnp.ones((T + 1, 1)))
    with pytest.raises(ValueError, match="shape"):
        m.teacher_forced(x[:, :2])
    t = _ttt(getkey())
    with pytest.raises(ValueError, match="no external inputs"):
        t.predict_teacher_forced(x, jnp.ones((T + 1, 1)))
    with pytest.raises(ValueError, match="no external inputs"):
        t.step(jnp.zeros(t.latent_dim), jnp.ones(1))
    with pytest.raises(ValueError, match="context"):
        t.warm_start(x[:, :2])


@pytest.fixture(scope="module")
def lorenz96():
    ds = data_gen.lorenz96(n_steps=3000, transient=500, progress=False)
    return ds.train.astype(np.float32), ds.test.astype(np.float32)


@pytest.mark.parametrize("name", ["selective_ssm", "ttt"])
def test_baselines_train_and_generate(name, lorenz96):
    train, test = lorenz96
    key = jax.random.key(0)
    if name == "selective_ssm":
        model = SelectiveSSM(6, 12, 32, n_heads=2, state_size=2, key=key)
    else:
        model = TTTModel(6, 32, key=key)
    # compilation dominates: the steps themselves take milliseconds
    res = dsr.fit(model, train, steps=150, seq_len=48, batch_size=4, warmup=8,
                  learning_rate=2e-2, key=jax.random.key(1), progress=False)
    loss = res.history["loss"]
    assert np.all(res.history["applied"])
    assert np.mean(loss[-10:]) < 0.6 * np.mean(loss[:10])  # measured: 1.1 → 0.13 / 0.48
    x = dsr.generate(res.model, 200, context=jnp.asarray(test[:100]))
    assert x.shape == (200, 6) and bool(jnp.all(jnp.isfinite(x)))
