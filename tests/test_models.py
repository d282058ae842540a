"""Models: parameters, analytic Jacobians, LSSM teacher forcing, initialization."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from helpers import random_shplrnn


def test_shplrnn_names_and_init(getkey):
    m = dsr.ShPLRNN(3, 5, 7, key=getkey())
    assert m.A.shape == (5,) and np.allclose(m.A, 0.9995)
    assert m.W.shape == (5, 7) and m.V.shape == (7, 5) and m.b.shape == (7,)
    assert m.h.shape == (5,) and m.C.shape == (5, 0) and m.B.shape == (3, 5)
    np.testing.assert_array_equal(m.B, np.eye(3, 5))
    assert float(jnp.max(jnp.abs(m.W))) <= 5e-4 / math.sqrt(7)
    assert float(jnp.max(jnp.abs(m.V))) <= 5e-4 / math.sqrt(5)
    low = dsr.ShPLRNN(3, 5, 7, rank=2, key=getkey())
    assert low.W.shape == (5, 7) and np.linalg.matrix_rank(np.asarray(low.W)) == 2


@pytest.mark.parametrize("kw", [{}, {"rank": 2}, {"input_dim": 2}])
def test_analytic_jacobian(kw):
    m = random_shplrnn(3, 4, seed=2, **kw)
    s = jnp.ones(2) if kw.get("input_dim") else None
    for seed in range(3):
        z = jax.random.normal(jax.random.key(seed), (4,), jnp.float64)
        np.testing.assert_allclose(m.jacobian(z, s), jax.jacfwd(lambda z: m.step(z, s))(z),
                                   rtol=1e-12, atol=1e-14)


def test_step_equation():
    m = random_shplrnn(3, 4, seed=3, input_dim=2)
    z, s = jnp.arange(4.0) / 4, jnp.array([0.5, -1.0])
    expect = m.A * z + m.W @ jax.nn.relu(m.V @ z + m.b) + m.C @ s + m.h
    np.testing.assert_allclose(m.step(z, s), expect, rtol=1e-12)


def test_lssm_teacher_forced_matches_loop(getkey):
    m = dsr.LSSM(3, 4, 6, key=getkey(), input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(getkey(), (20, 3), jnp.float64)
    s = jax.random.normal(getkey(), (20, 2), jnp.float64)
    z = jnp.zeros(4)
    out = []
    for t in range(1, 20):
        z = m.A * z + m.U @ x[t - 1] + m.C @ s[t] + m.h
        out.append(z)
    for method in ("sequential", "associative", "chunked"):
        np.testing.assert_allclose(m.teacher_forced(x, s, method=method), np.stack(out),
                                   rtol=1e-12, atol=1e-14)
    # free-running step replaces data by the prediction (Eq. 4)
    np.testing.assert_allclose(m.step(z, s[0]), m.A * z + m.U @ m.observe(z) + m.C @ s[0] + m.h)
    assert m.observe(z).shape == (3,)


def test_bad_model_args(getkey):
    with pytest.raises(ValueError, match="latent_dim"):
        dsr.ShPLRNN(3, 0, 5, key=getkey())
    with pytest.raises(ValueError, match="rank"):
        dsr.ShPLRNN(3, 3, 5, rank=0, key=getkey())


def test_sizes_are_static_fields():
    """The sizes (from `AbstractSizedModel`) stay static in every model class: only arrays
    are leaves, and the sizes are plain ints under `jax.jit`."""
    from dsr.baselines import SelectiveSSM, TTTModel

    key = jax.random.key(0)
    for m in (dsr.ShPLRNN(3, 4, 5, key=key), dsr.ClippedShPLRNN(3, 4, 5, key=key),
              dsr.LSSM(3, 4, 5, key=key), SelectiveSSM(3, 8, 5, key=key), TTTModel(3, 5, key=key)):
        assert all(isinstance(x, jax.Array) for x in jax.tree_util.tree_leaves(m)), type(m)
        seen = []
        jax.jit(lambda m: seen.append((m.obs_dim, m.latent_dim, m.hidden_dim, m.input_dim)))(m)
        assert all(isinstance(v, int) for v in seen[0]), (type(m), seen)
