"""The shared scan backend against a float64 NumPy loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dsr
from dsr._solvers._scan import auto_method, decay_mask

METHODS = ["sequential", "associative", "chunked"]


def np_forward(A, b, z0):
    full = A.ndim == 3
    z, out = np.array(z0), []
    for t in range(b.shape[0]):
        z = (A[t] @ z if full else A[t] * z) + b[t]
        out.append(z)
    return np.stack(out)


def np_reverse(A, g, lamT):
    full = A.ndim == 3
    lam, out = np.array(lamT), [None] * g.shape[0]
    for t in range(g.shape[0], 0, -1):
        lam = g[t - 1] + (A[t - 1].T @ lam if full else A[t - 1] * lam)
        out[t - 1] = lam
    return np.stack(out)


def make(rng, T, M, full, zero_frac=0.2):
    if full:
        A = rng.normal(size=(T, M, M)) / np.sqrt(M)
    else:
        A = rng.uniform(-1.2, 1.2, size=(T, M))
        A[rng.uniform(size=(T, M)) < zero_frac] = 0.0  # exact zeros (quasi-DEER diagonals)
    return A, rng.normal(size=(T, M)), rng.normal(size=M)


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("T,M,c", [(1, 1, None), (1, 3, 4), (13, 1, 4), (37, 3, 8), (64, 2, 16)])
def test_methods_match_numpy(full, T, M, c):
    rng = np.random.default_rng(T * 10 + M)
    A, b, z0 = make(rng, T, M, full)
    ref = np_forward(A, b, z0)
    g = rng.normal(size=(T, M))
    rref = np_reverse(A, g, z0)
    for method in METHODS + ["auto"]:
        out = dsr.linear_scan(A, b, z0, method=method, chunk_size=c)
        np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-11)
        rout = dsr.linear_scan(A, g, z0, method=method, chunk_size=c, reverse=True)
        np.testing.assert_allclose(rout, rref, rtol=1e-10, atol=1e-11)


@settings(max_examples=8, deadline=None)
@given(T=st.integers(1, 24), M=st.integers(1, 3), c=st.integers(1, 7), full=st.booleans(),
       seed=st.integers(0, 10**6))
def test_chunked_hypothesis(T, M, c, full, seed):
    rng = np.random.default_rng(seed)
    A, b, z0 = make(rng, T, M, full)
    for method in ("chunked",):
        out = dsr.linear_scan(A, b, z0, method=method, chunk_size=c)
        np.testing.assert_allclose(out, np_forward(A, b, z0), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("full", [False, True])
def test_batched(full):
    rng = np.random.default_rng(0)
    A, b, z0 = zip(*[make(rng, 9, 3, full) for _ in range(4)])
    A, b, z0 = np.stack(A), np.stack(b), np.stack(z0)
    for method in METHODS:
        out = dsr.linear_scan(A, b, z0, method=method, chunk_size=4)
        for i in range(4):
            np.testing.assert_allclose(out[i], np_forward(A[i], b[i], z0[i]), rtol=1e-10)


@pytest.mark.parametrize("full", [False, True])
def test_gradients_agree_across_methods(full):
    rng = np.random.default_rng(1)
    A, b, z0 = (jnp.asarray(v) for v in make(rng, 11, 3, full))
    w = jnp.asarray(rng.normal(size=(11, 3)))

    def loss(A, b, z0, method, reverse=False):
        return jnp.sum(jnp.sin(dsr.linear_scan(A, b, z0, method=method, chunk_size=4,
                                               reverse=reverse)) * w)

    def ref_loss(A, b, z0):  # plain autodiff through lax.scan
        def body(z, ab):
            z = (ab[0] @ z if full else ab[0] * z) + ab[1]
            return z, z
        return jnp.sum(jnp.sin(jax.lax.scan(body, z0, (A, b))[1]) * w)

    ref = jax.grad(ref_loss, argnums=(0, 1, 2))(A, b, z0)
    for method in METHODS:
        got = jax.grad(loss, argnums=(0, 1, 2))(A, b, z0, method)
        for r, g_ in zip(ref, got):
            np.testing.assert_allclose(g_, r, rtol=1e-9, atol=1e-11)
    rev = [jax.grad(loss, argnums=(0, 1, 2))(A, b, z0, m, True) for m in METHODS]
    for other in rev[1:]:
        for r, g_ in zip(rev[0], other):
            np.testing.assert_allclose(g_, r, rtol=1e-9, atol=1e-11)


def test_reverse_is_transpose_of_forward():
    rng = np.random.default_rng(2)
    A, b, z0 = (jnp.asarray(v) for v in make(rng, 10, 3, True))
    g = jnp.asarray(rng.normal(size=(10, 3)))
    _, vjp = jax.vjp(lambda b, z0: dsr.linear_scan(A, b, z0, method="sequential"), b, z0)
    db, dz0 = vjp(g)
    gshift = jnp.concatenate([jnp.zeros((1, 3)), g[:-1]])
    lam = dsr.linear_scan(A, gshift, g[-1], reverse=True)
    np.testing.assert_allclose(lam[0], dz0, rtol=1e-10)
    np.testing.assert_allclose(jnp.concatenate([lam[1:], g[-1:]]), db, rtol=1e-10)


def test_decay_mask_no_division():
    a = jnp.array([0.5, 0.0, -2.0, 3.0])
    C = decay_mask(a)
    expect = np.zeros((4, 4))
    for j in range(4):
        for i in range(j + 1):
            expect[j, i] = np.prod(np.asarray(a)[i + 1 : j + 1])
    np.testing.assert_allclose(C, expect)


def test_auto_method_is_a_method():
    for backend in ("cpu", "gpu"):
        for full in (False, True):
            assert auto_method(4096, 16, full, backend) in METHODS


def test_bad_input():
    with pytest.raises(ValueError, match="`A`"):
        dsr.linear_scan(jnp.ones((5, 3, 2)), jnp.ones((5, 3)))
    with pytest.raises(ValueError, match="`method`"):
        dsr.linear_scan(jnp.ones((5, 3)), jnp.ones((5, 3)), method="fast")
    with pytest.raises(ValueError, match="`z0`"):
        dsr.linear_scan(jnp.ones((5, 3)), jnp.ones((5, 3)), jnp.ones(2))
    with pytest.raises(ValueError, match="`chunk_size`"):
        dsr.linear_scan(jnp.ones((5, 3)), jnp.ones((5, 3)), chunk_size=0)


@pytest.mark.parametrize("full", [False, True])
def test_reverse_gradients_match_autodiff(full):
    """The reverse scan's own VJP against plain autodiff through a reversed `lax.scan`."""
    rng = np.random.default_rng(3)
    A, g, lamT = (jnp.asarray(v) for v in make(rng, 9, 3, full))
    w = jnp.asarray(rng.normal(size=(9, 3)))

    def ref(A, g, lamT):
        def body(lam, ag):
            lam = (ag[0].T @ lam if full else ag[0] * lam) + ag[1]
            return lam, lam
        return jnp.sum(jnp.sin(jax.lax.scan(body, lamT, (A, g), reverse=True)[1]) * w)

    expect = jax.grad(ref, argnums=(0, 1, 2))(A, g, lamT)
    for method in METHODS:
        got = jax.grad(lambda A, g, l: jnp.sum(jnp.sin(dsr.linear_scan(
            A, g, l, method=method, chunk_size=4, reverse=True)) * w), argnums=(0, 1, 2))(A, g, lamT)
        for e, r in zip(expect, got):
            np.testing.assert_allclose(r, e, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("full", [False, True])
def test_associative_kernels_unrolled_equals_matmul(full):
    """The recursive-doubling kernels: unrolled combine = matmul combine = NumPy loop,
    forward and reverse, natural and split storage (`stored=True`), for lengths with every
    mix of split and natural levels (powers of two, 2^k·odd, odd)."""
    from dsr._solvers._associative import associative_forward, associative_reverse, split_order

    rng = np.random.default_rng(7)
    for T in (1, 2, 7, 12, 16, 40):
        for M in (1, 4):
            A, b, _ = make(rng, T, M, full)
            fwd = np_forward(A, b, np.zeros(M))
            rev = np_reverse(A, b, np.zeros(M))
            order = split_order(T)
            assert sorted(order) == list(range(T))
            for combine in ("matmul", "unrolled"):
                got = associative_forward(jnp.asarray(A), jnp.asarray(b), full, combine)
                np.testing.assert_allclose(got, fwd, rtol=1e-10, atol=1e-12)
                got = associative_reverse(jnp.asarray(A), jnp.asarray(b), full, combine)
                np.testing.assert_allclose(got, rev, rtol=1e-10, atol=1e-12)
                As, bs = jnp.asarray(A[order]), jnp.asarray(b[order])
                got = associative_forward(As, bs, full, combine, stored=True)
                np.testing.assert_allclose(got, fwd[order], rtol=1e-10, atol=1e-12)
                got = associative_reverse(As, bs, full, combine, stored=True)
                np.testing.assert_allclose(got, rev[order], rtol=1e-10, atol=1e-12)


def test_split_order_pairs_are_halves():
    """In `split_order(n)` the pairs (2j, 2j+1) of every split level are the two halves."""
    from dsr._solvers._associative import split_order

    for n in (2, 8, 24):
        o = split_order(n)
        h = n // 2
        np.testing.assert_array_equal(o[h:], o[:h] + 1)
        np.testing.assert_array_equal(o[:h] // 2, split_order(h))
    np.testing.assert_array_equal(split_order(5), np.arange(5))


def test_auto_table():
    """`auto` reads the measured tables for CPU and GPU and the reasoned default elsewhere."""
    from dsr._solvers._auto import AUTO_TABLE, REASONED_DEFAULT, auto_combine, auto_entry

    assert auto_entry("cpu") is AUTO_TABLE["cpu"]
    assert auto_entry("gpu") is AUTO_TABLE["gpu"]
    assert auto_entry("some-accelerator") is REASONED_DEFAULT
    for backend in ("cpu", "gpu", "some-accelerator"):
        for M in (1, 3, 4, 7, 8, 16, 100):
            assert auto_combine(M, backend) in ("matmul", "unrolled")
    assert auto_method(32768, 4, True, "cpu") == "sequential"
    assert auto_method(32768, 4, True, "gpu") == "associative"
    assert auto_method(32768, 64, True, "gpu") == "associative"  # measured on one H200
    assert auto_combine(4, "gpu") == "unrolled" and auto_combine(64, "gpu") == "matmul"
    assert auto_method(32768, 64, True, "some-accelerator") == "chunked"  # reasoned
