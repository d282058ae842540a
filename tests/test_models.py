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


# ------------------------------------------------------------------------------ AL-RNN

#: What a reconstruction of the paper's Lorenz-63 set must reach (the Python and the command
#: line tests alike): D_stsp (10^4 samples) well below an unfit model's (> 1; a limit cycle
#: or fixed point gives ≈ 1.8) and λ_max within 15 % of Lorenz-63's 0.906 per time unit.
RECONSTRUCTED_DSTSP, TRUE_LAMBDA = 0.3, 0.906


def test_alrnn_step_jacobian_and_init():
    m = dsr.ALRNN(2, 5, 2, key=jax.random.key(0), input_dim=3, dtype=jnp.float64)
    assert m.A.shape == (5,) and m.W.shape == (5, 5) and m.C.shape == (5, 3)
    np.testing.assert_array_equal(m.B, np.eye(2, 5))
    np.testing.assert_allclose(m.A, 0.9995)
    m = eqx_tree_at_random(m)
    z, s = jnp.array([-1.0, 2.0, -0.5, -0.3, 0.7]), jnp.arange(3.0)
    phi = jnp.concatenate([z[:3], jax.nn.relu(z[3:])])  # the last P = 2 units rectified
    np.testing.assert_allclose(m.step(z, s), m.A * z + m.W @ phi + m.C @ s + m.h, rtol=1e-12)
    np.testing.assert_allclose(m.jacobian(z, s), jax.jacfwd(lambda u: m.step(u, s))(z),
                               rtol=1e-12)
    dsr.check_model(m)
    linear = dsr.ALRNN(2, 4, 0, key=jax.random.key(1), dtype=jnp.float64)
    z = jnp.array([-1.0, -2.0, 0.5, -3.0])
    np.testing.assert_allclose(linear.step(z), linear.A * z + linear.W @ z, rtol=1e-12)
    for bad, match in (((2, 1, 0), "latent_dim"), ((2, 3, 4), "relu_units"),
                       ((2, 3, -1), "relu_units")):
        with pytest.raises(ValueError, match=match):
            dsr.ALRNN(*bad, key=jax.random.key(0))


def eqx_tree_at_random(model):
    """`model` with every parameter array replaced by random values (so that each term of
    the step and the Jacobian is visible)."""
    import equinox as eqx

    arrays, static = eqx.partition(model, eqx.is_inexact_array)
    leaves, tree = jax.tree_util.tree_flatten(arrays)
    keys = jax.random.split(jax.random.key(7), len(leaves))
    new = [jax.random.normal(k, p.shape, p.dtype) for k, p in zip(keys, leaves)]
    return eqx.combine(jax.tree_util.tree_unflatten(tree, new), static)


def test_alrnn_uses_only_the_public_contract():
    """`dsr/models/_alrnn.py` imports from dsr only names that are public (`dsr.X` or
    `dsr.models.X`, the same object), as a user's model would."""
    import ast
    import pathlib

    import dsr.models
    from dsr.models import _alrnn

    tree = ast.parse(pathlib.Path(_alrnn.__file__).read_text())
    imported = []
    for node in ast.walk(tree):
        from_dsr = node.level or (node.module or "").startswith("dsr") \
            if isinstance(node, ast.ImportFrom) else False
        if from_dsr:
            imported += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("dsr") for a in node.names)
    assert imported, "the AL-RNN imports its base classes"
    for module, name in imported:
        obj = getattr(_alrnn, name)
        assert getattr(dsr, name, None) is obj or getattr(dsr.models, name, None) is obj, \
            f"{module}.{name} is not a public dsr name"
    assert {name for _, name in imported} <= {"AbstractGTFModel", "AbstractMARModel"}
    # the three-method contract: none of the derived methods is overridden
    for method in ("jacobian_diagonal", "jacobian_product", "jacobian_product_diagonal"):
        assert method not in vars(dsr.ALRNN)


def test_alrnn_save_load_and_mar(tmp_path):
    m = dsr.ALRNN(3, 6, 2, key=jax.random.key(0))
    dsr.save(tmp_path / "a.eqx", m)
    back = dsr.load(tmp_path / "a.eqx")
    assert type(back) is dsr.ALRNN and back.relu_units == 2
    for u, v in zip(jax.tree_util.tree_leaves(m), jax.tree_util.tree_leaves(back)):
        np.testing.assert_array_equal(u, v)
    assert m.mar_terms(2, 2).shape == (2,)


@pytest.mark.slow  # 4000 GTF-DEER updates on CPU (≈ 5 min)
def test_alrnn_reconstructs_lorenz63():
    """`dsr.ALRNN` (M = 20, P = 6) trained by GTF-DEER on the paper's Lorenz-63 set reproduces
    its attractor (D_stsp) and its largest Lyapunov exponent."""
    import data_gen

    ds = data_gen.lorenz63()
    model = dsr.ALRNN(3, 20, 6, key=jax.random.key(0))
    res = dsr.fit(model, ds, alpha=0.1, steps=4000, seq_len=200, batch_size=16,
                  learning_rate=3e-3, solver=dsr.DEER(), progress=False)
    s = dsr.metrics.evaluate(res.model, ds, key=jax.random.key(1), n_samples=10_000,
                             lyapunov_steps=10_000, progress=False)
    assert not s["diverged"]
    assert s["D_stsp"] < RECONSTRUCTED_DSTSP, s["D_stsp"]
    assert abs(s["lambda_max"] - TRUE_LAMBDA) < 0.15 * TRUE_LAMBDA, s["lambda_max"]
