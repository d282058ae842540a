"""TTT-KVB as linear attention (Liu et al. (2026), "Test-Time Training with KV Binding Is Secretly Linear Attention"): recurrent vs chunk-wise parallel form."""

import functools
import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel_err
from hypothesis import given, settings, strategies as st
from jax.test_util import check_grads

from dsr.baselines import SwiGLUKernel, ttt_linear
from dsr.baselines._ttt_parallel import accumulation_mask
from dsr.baselines._ttt_layer import TTTLinear

T, DK, DV, DH = 13, 3, 2, 4
ARGNAMES = ("q", "k", "v", "w0", "lr", "momentum", "kernel")
# Jitted once per static configuration: eager op-by-op dispatch is slower than compiling.
jttt = jax.jit(ttt_linear, static_argnames=("chunk_size", "form", "update_kernel",
                                            "weight_norm", "block_size"))


def make(seed, L, swiglu):
    """Random inputs; momenta include exact zeros and negatives, learning rates both signs."""
    rng = np.random.default_rng(seed)
    n = -(-T // L)
    mom = rng.uniform(-1.2, 1.2, n)
    mom[rng.uniform(size=n) < 0.25] = 0.0
    kernel = None
    if swiglu:
        kernel = SwiGLUKernel(jnp.asarray(rng.normal(size=(DK, DH))),
                              jnp.asarray(rng.normal(size=(DK, DH))))
    dh = DH if swiglu else DK
    return dict(
        q=jnp.asarray(rng.normal(size=(T, DK))),
        k=jnp.asarray(rng.normal(size=(T, DK))),
        v=jnp.asarray(rng.normal(size=(T, DV))),
        w0=jnp.asarray(rng.normal(size=(dh, DV))),
        lr=jnp.asarray(rng.uniform(-1.0, 1.5, n)),
        momentum=jnp.asarray(mom),
        kernel=kernel,
    ), jnp.asarray(rng.normal(size=(T, DV)))


@functools.partial(jax.jit, static_argnames=("L", "form", "block_size"))
def value_and_grads(args, ct, *, L, form, block_size=None):
    def loss(args):
        o = ttt_linear(args["q"], args["k"], args["v"], w0=args["w0"], lr=args["lr"],
                       momentum=args["momentum"], kernel=args["kernel"], chunk_size=L,
                       form=form, block_size=block_size)
        return jnp.sum(o * ct), o

    (_, o), grads = jax.value_and_grad(loss, has_aux=True)(args)
    return o, grads


def np_mask(lr, mom):
    """App. H.1 by its definition: 𝒞[t, i] = Σ_{j=i}^{t} η_j Π_{s=i+1}^{j} α_s."""
    n = len(lr)
    C = np.zeros((n, n))
    for t in range(n):
        for i in range(t + 1):
            C[t, i] = sum(lr[j] * np.prod(mom[i + 1 : j + 1]) for j in range(i, t + 1))
    return C


def dense_reference(args, L):
    """O = φ(Q) W_0 + ((φ(Q) φ(K)ᵀ) ⊙ 𝒞^{↑L}) V, with the T×T matrix formed explicitly."""
    phi = (lambda x: x) if args["kernel"] is None else args["kernel"]
    fq, fk = np.asarray(phi(args["q"])), np.asarray(phi(args["k"]))
    C = np_mask(np.asarray(args["lr"]), np.asarray(args["momentum"]))
    chunk = np.arange(T) // L
    return fq @ np.asarray(args["w0"]) + ((fq @ fk.T) * C[chunk][:, chunk]) @ np.asarray(args["v"])


def test_accumulation_mask_matches_definition():
    lr = np.array([0.5, -1.0, 2.0, 0.3, 1.1])
    mom = np.array([0.7, 0.0, -1.5, 0.9, 0.0])
    np.testing.assert_allclose(accumulation_mask(jnp.asarray(lr), jnp.asarray(mom)),
                               np_mask(lr, mom), rtol=1e-14, atol=1e-15)


# (chunk size L, parallel block in chunks, SwiGLU kernel): L = 1 (token-level), L ∤ T,
# L > T; several blocks with a padded last block, one chunk per block.
CASES = [(1, 4, True), (3, 2, False), (4, 1, True), (20, None, False)]


@pytest.mark.parametrize("L,m,swiglu", CASES)
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_parallel_equals_recurrent(L, m, swiglu, seed):
    args, ct = make(seed, L, swiglu)
    o_rec, g_rec = value_and_grads(args, ct, L=L, form="recurrent")
    o_par, g_par = value_and_grads(args, ct, L=L, form="parallel",
                                   block_size=None if m is None else m * L)
    assert rel_err(o_par, o_rec) < 1e-10
    assert rel_err(o_rec, dense_reference(args, L)) < 1e-10
    for name in ARGNAMES:
        for gp, gr in zip(jax.tree_util.tree_leaves(g_par[name]),
                          jax.tree_util.tree_leaves(g_rec[name])):
            assert rel_err(gp, gr) < 1e-10, name
    # α of the first chunk multiplies ΔW_{−1} = 0: no effect in either form.
    assert float(jnp.abs(g_par["momentum"][0])) < 1e-12


def test_token_level_is_causal_linear_attention():
    args, _ = make(0, 1, False)
    o = jttt(args["q"], args["k"], args["v"], chunk_size=1)  # η = 1, α = 0, W_0 = 0
    q, k, v = (np.asarray(args[n]) for n in "qkv")
    ref = np.stack([sum((q[t] @ k[i]) * v[i] for i in range(t + 1)) for t in range(T)])
    np.testing.assert_allclose(o, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["parallel", "recurrent"])
def test_chunk_reads_its_own_update(form):
    """A query sees every key of its own chunk (read after the update), none of later ones."""
    args, _ = make(1, 4, False)
    f = functools.partial(jttt, chunk_size=4, lr=0.7, momentum=0.5, form=form)
    o = f(args["q"], args["k"], args["v"])
    o3 = f(args["q"], args["k"], args["v"].at[3].add(1.0))  # last token of chunk 0
    o4 = f(args["q"], args["k"], args["v"].at[4].add(1.0))  # first token of chunk 1
    assert np.all(np.abs(o3[0] - o[0]) > 1e-6)
    np.testing.assert_array_equal(o4[:4], o[:4])


def test_gradient_finite_differences():
    args, _ = make(2, 3, True)
    ker = args["kernel"]

    @jax.jit
    def f(lr, momentum):
        return ttt_linear(args["q"], args["k"], args["v"], w0=args["w0"], lr=lr,
                          momentum=momentum, chunk_size=3, block_size=6, kernel=ker)

    check_grads(f, (args["lr"], args["momentum"]), order=1,
                              modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-6)


# ----------------------------------------------------------------------------------------
# Non-reducible variants (App. I): recurrent only
# ----------------------------------------------------------------------------------------


def test_app_i_variants_recurrent_only():
    args, _ = make(3, 4, True)
    common = dict(w0=args["w0"], lr=0.3, momentum=0.6, chunk_size=4, kernel=args["kernel"])
    qkv = (args["q"], args["k"], args["v"])
    static = jttt(*qkv, form="recurrent", **common)
    for opts in ({"update_kernel": True}, {"weight_norm": True},
                 {"update_kernel": True, "weight_norm": True}):
        out = jttt(*qkv, form="recurrent", **opts, **common)
        assert out.shape == (T, DV) and bool(jnp.all(jnp.isfinite(out)))
        assert rel_err(out, static) > 1e-3  # a different operator than the reducible one
        name = next(iter(opts))
        with pytest.raises(ValueError, match=f"`{name}=True` has no parallel form"):
            ttt_linear(*qkv, form="parallel", **opts, **common)
    g = jax.grad(lambda v: jnp.sum(jttt(*qkv[:2], v, form="recurrent", update_kernel=True,
                                        weight_norm=True, **common) ** 2))(args["v"])
    assert bool(jnp.all(jnp.isfinite(g)))
    with pytest.raises(ValueError, match="`update_kernel=True` needs a kernel"):
        ttt_linear(*qkv, chunk_size=4, form="recurrent", update_kernel=True)


def test_app_i_one_chunk_by_hand():
    """One chunk (L = T): the definitions of App. I.1 (kernel step) and E.4 (weight norm)."""
    args, _ = make(4, T, True)
    q, k, v, w0, ker = (args[n] for n in ("q", "k", "v", "w0", "kernel"))
    eta = 0.4
    W1 = w0 + eta * ker(k).T @ v  # W_1 = W_0 − η ∇_W 𝓛, 𝓛 = −⟨φ(K) W, V⟩
    g_th = jax.grad(lambda th: -jnp.sum((th(k) @ w0) * v))(ker)
    ker1 = jax.tree_util.tree_map(lambda p, g: p - eta * g, ker, g_th)
    run = functools.partial(jttt, q, k, v, w0=w0, lr=eta, momentum=0.9, chunk_size=T,
                            kernel=ker, form="recurrent")
    np.testing.assert_allclose(run(update_kernel=True), ker1(q) @ W1, rtol=1e-12)

    def norm(w, ref):
        return w / (np.linalg.norm(w, axis=0) + 1e-5) * np.linalg.norm(ref, axis=0)

    np.testing.assert_allclose(run(weight_norm=True), ker(q) @ norm(W1, w0), rtol=1e-12)


# ----------------------------------------------------------------------------------------
# The layer
# ----------------------------------------------------------------------------------------


def test_layer_vmap_jit_and_forms_agree(getkey):
    layer = TTTLinear(5, DK, DV, chunk_size=4, kernel="swiglu", d_hidden=DH, key=getkey())
    x = jax.random.normal(getkey(), (2, T, 5), jnp.float64)

    def run(layer, x, form):
        return jax.vmap(lambda xi: layer(xi, form=form))(x)

    @eqx.filter_jit
    @eqx.filter_value_and_grad(has_aux=True)
    def loss_and_grad(layer, x):
        y = run(layer, x, "parallel")
        return jnp.sum(y**2), y

    (_, y_par), grads = loss_and_grad(layer, x)
    y_rec = eqx.filter_jit(run)(layer, x, "recurrent")
    assert y_par.shape == (2, T, DV)
    assert rel_err(y_par, y_rec) < 1e-10
    # Per-sample rows differ (the batch is not mixed up) and gradients reach every parameter;
    # parameter gradients of the two forms are compared in test_parallel_equals_recurrent.
    assert rel_err(y_par[0], y_par[1]) > 1e-3
    for g in jax.tree_util.tree_leaves(grads):
        assert bool(jnp.all(jnp.isfinite(g))) and float(jnp.max(jnp.abs(g))) > 0
    lr, mom = layer.chunk_rates(x[0])
    assert lr.shape == mom.shape == (4,) and bool(jnp.all(lr > 0) & jnp.all((mom > 0) & (mom < 1)))


def test_layer_variants(getkey):
    x = jax.random.normal(getkey(), (T, 5), jnp.float64)
    layer = TTTLinear(5, DK, DV, chunk_size=1, kernel="identity", momentum=False,
                      weight_norm=True, form="recurrent", key=getkey())
    assert eqx.filter_jit(layer)(x).shape == (T, DV)
    layer = TTTLinear(5, DK, DV, chunk_size=4, kernel="swiglu", update_kernel=True,
                      form="recurrent", key=getkey())
    assert bool(jnp.all(jnp.isfinite(eqx.filter_jit(layer)(x))))
    with pytest.raises(ValueError, match="no parallel form"):
        layer(x, form="parallel")
    with pytest.raises(ValueError, match="no parallel form"):
        TTTLinear(5, DK, DV, chunk_size=4, kernel="swiglu", update_kernel=True, key=getkey())


# ----------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------


def test_bad_input(getkey):
    q = jnp.ones((T, DK))
    v = jnp.ones((T, DV))
    ker = SwiGLUKernel(jnp.ones((DK, DH)), jnp.ones((DK, DH)))
    bad = [
        ("chunk_size", dict(chunk_size=0)),
        ("chunk_size", dict(chunk_size=2.0)),
        ("form", dict(form="associative")),
        ("kernel", dict(kernel="swiglu")),
        ("w0", dict(w0=jnp.ones((DH, DV)))),
        ("w0", dict(w0=jnp.ones((DK, DV)), kernel=ker)),
        ("lr", dict(lr=jnp.ones(5))),  # n_chunks = 4 for L = 4
        ("momentum", dict(momentum=jnp.ones((4, 1)))),
        ("block_size", dict(block_size=0)),
    ]
    for name, kw in bad:
        kw = {"chunk_size": 4, **kw}
        with pytest.raises(ValueError, match=f"`{name}`"):
            ttt_linear(q, q, v, **kw)
    with pytest.raises(ValueError, match="`k`"):
        ttt_linear(q, jnp.ones((T, DK + 1)), v, chunk_size=4)
    with pytest.raises(ValueError, match="`v`"):
        ttt_linear(q, q, jnp.ones((T + 1, DV)), chunk_size=4)
    with pytest.raises(ValueError, match="`q`"):
        ttt_linear(jnp.ones(T), jnp.ones(T), v, chunk_size=4)
    with pytest.raises(ValueError, match="`kernel`"):
        ttt_linear(q, q, v, chunk_size=4, kernel=SwiGLUKernel(jnp.ones((DK + 1, 2)),
                                                              jnp.ones((DK + 1, 2))))
    with pytest.raises(ValueError, match="`kernel`"):
        SwiGLUKernel(jnp.ones((DK, 2)), jnp.ones((DK, 3)))
    with pytest.raises(ValueError, match="`kernel`"):
        TTTLinear(5, 3, 2, chunk_size=4, kernel="gelu", key=getkey())
    with pytest.raises(ValueError, match="`chunk_size`"):
        TTTLinear(5, 3, 2, chunk_size=0, key=getkey())
    with pytest.raises(ValueError, match="`form`"):
        TTTLinear(5, 3, 2, chunk_size=2, form="fast", key=getkey())
    with pytest.raises(ValueError, match="`x`"):
        TTTLinear(5, 3, 2, chunk_size=2, key=getkey())(jnp.ones((T, 4)))


# ----------------------------------------------------------------------------------------
# Benchmark
# ----------------------------------------------------------------------------------------


def test_benchmark_quick(tmp_path):
    from benchmarks import ttt as bench

    bench.main(["--quick", "--out", str(tmp_path), "--T", "32", "--chunk", "4",
                "--dim", "4", "--repeats", "2"])
    res = json.loads((tmp_path / "ttt.json").read_text())
    assert {"device", "backend", "jax_version", "settings", "results"} <= set(res)
    assert len(res["results"]) == 2  # T × chunk × form
    for r in res["results"]:
        assert all(np.isfinite(t) and t > 0 for t in r["times_s"])
        assert np.isfinite(r["tokens_per_s"]) and r["tokens_per_s"] > 0
    assert (tmp_path / "ttt.png").stat().st_size > 0
