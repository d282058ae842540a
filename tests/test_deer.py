"""GTF-DEER against sequential GTF with BPTT: trajectories and gradients, float64."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from helpers import assert_tree_rel, random_shplrnn, rel_err

T = 40
fwd = eqx.filter_jit(dsr.gtf_forward)  # one compilation per shape/solver, α traced


def data(N, seed=1, T=T, batch=None):
    shape = (T + 1, N) if batch is None else (batch, T + 1, N)
    return jax.random.normal(jax.random.key(seed), shape, jnp.float64)


@pytest.mark.parametrize("N,M", [(3, 2), (3, 3), (2, 4)])
@pytest.mark.parametrize("warmup", [0, 9])
def test_deer_equals_sequential(N, M, warmup):
    model = random_shplrnn(N, M, seed=N + M)
    x = data(N, batch=2)
    for alpha in (0.08, 0.5, 1.0):
        alpha = jnp.asarray(alpha)
        zs, _ = fwd(model, x, alpha, warmup=warmup, solver=dsr.Sequential())
        zd, info = fwd(model, x, alpha, warmup=warmup, solver=dsr.DEER())
        assert zd.shape == (2, T, M)
        assert bool(jnp.all(info.converged)), (alpha, info)
        assert rel_err(zd, zs) < 1e-10


def test_sequential_matches_manual_loop():
    model = random_shplrnn(3, 4, seed=3)
    x = data(3)
    alpha, warmup = 0.3, 5
    Bp = np.linalg.pinv(np.asarray(model.B))
    z = Bp @ np.asarray(x[0])
    out = []
    for t in range(1, T + 1):
        a = 1.0 if t - 1 <= warmup else alpha
        zt = z - a * Bp @ np.asarray(model.B) @ z + a * Bp @ np.asarray(x[t - 1])
        z = np.asarray(model.step(jnp.asarray(zt)))
        out.append(z)
    zs, _ = dsr.gtf_forward(model, x, alpha, warmup=warmup, solver=dsr.Sequential())
    np.testing.assert_allclose(zs, np.stack(out), rtol=1e-12, atol=1e-12)


def loss_fn(model, x, solver, alpha=0.3, warmup=6, inputs=None):
    z, _ = dsr.gtf_forward(model, x, alpha, warmup=warmup, solver=solver, inputs=inputs)
    xhat = z @ model.B.T
    return jnp.mean((xhat[..., warmup:, :] - x[..., warmup + 1 :, :]) ** 2)


@eqx.filter_jit
def grads(model, x, solver, **kw):
    return eqx.filter_grad(loss_fn)(model, x, solver, **kw)


@pytest.mark.parametrize("kind", ["full", "lowrank", "inputs"])
def test_implicit_gradient_equals_bptt(kind):
    N, M = 3, 4
    kw = {}
    if kind == "lowrank":
        model = random_shplrnn(N, M, seed=5, rank=2)
    elif kind == "inputs":
        model = random_shplrnn(N, M, seed=6, input_dim=2)
        kw["inputs"] = data(2, seed=9)
    else:
        model = random_shplrnn(N, M, seed=4)
    x = data(N)
    g_seq = grads(model, x, dsr.Sequential(), **kw)
    g_deer = grads(model, x, dsr.DEER(), **kw)
    assert_tree_rel(g_deer, g_seq, 1e-8)
    # every parameter gets a non-trivial gradient
    for leaf in jax.tree_util.tree_leaves(g_deer):
        assert leaf.size == 0 or float(jnp.max(jnp.abs(leaf))) > 0


def test_implicit_gradient_finite_differences():
    model = random_shplrnn(3, 3, seed=7)
    x = data(3)
    g = grads(model, x, dsr.DEER())
    f = eqx.filter_jit(lambda m: loss_fn(m, x, dsr.DEER()))  # noqa: E731
    eps = 1e-6
    for get, idx in [(lambda m: m.W_L, (1, 2)), (lambda m: m.V, (3, 0)), (lambda m: m.A_bar, (1,)),
                     (lambda m: m.B, (2, 1)), (lambda m: m.h, (0,))]:
        base = get(model)
        plus = eqx.tree_at(get, model, base.at[idx].add(eps))
        minus = eqx.tree_at(get, model, base.at[idx].add(-eps))
        fd = (f(plus) - f(minus)) / (2 * eps)
        assert abs(float(get(g)[idx]) - float(fd)) < 1e-6 * max(1.0, abs(float(fd)))


def test_vmap_grad_equals_grad_vmap():
    model = random_shplrnn(3, 4, seed=8)
    x = data(3, batch=3)
    batch_mean = grads(model, x, dsr.DEER())  # grad of the batched (vmapped) loss
    per = jax.vmap(lambda xb: grads(model, xb, dsr.DEER()))(x)
    mean_of_per = jax.tree_util.tree_map(lambda a: jnp.mean(a, axis=0), per)
    assert_tree_rel(batch_mean, mean_of_per, 1e-10)
    per_seq = jax.vmap(lambda xb: grads(model, xb, dsr.Sequential()))(x)
    assert_tree_rel(per, per_seq, 1e-8)


def test_jit_grad_quasi_and_exact_adjoint():
    model = random_shplrnn(3, 3, seed=10)
    x = data(3)
    alpha = 0.6
    zs, _ = dsr.gtf_forward(model, x, alpha, solver=dsr.Sequential())
    quasi = dsr.DEER(jacobian="diag")
    zq, iq = jax.jit(lambda m, x: dsr.gtf_forward(m, x, alpha, solver=quasi))(model, x)
    _, ifull = dsr.gtf_forward(model, x, alpha)
    assert bool(iq.converged) and rel_err(zq, zs) < 1e-9
    assert int(iq.iterations) > int(ifull.iterations)
    # exact adjoint: BPTT gradient
    g_seq = grads(model, x, dsr.Sequential(), alpha=alpha)
    g_exact = jax.jit(lambda m: grads(m, x, dsr.DEER(jacobian="diag", exact_adjoint=True),
                                      alpha=alpha))(model)
    assert_tree_rel(g_exact, g_seq, 1e-7)
    # diagonal adjoint: the paper's Eq. 44, re-derived here with a NumPy loop
    g_diag = grads(model, x, quasi, alpha=alpha, warmup=0)
    g_ref = diag_adjoint_reference(model, x, alpha)
    assert_tree_rel(g_diag, g_ref, 1e-8)


def diag_adjoint_reference(model, x, alpha):
    params, static = eqx.partition(model, eqx.is_inexact_array)
    zs, _ = dsr.gtf_forward(model, x, alpha, solver=dsr.Sequential())
    Bp = jnp.linalg.pinv(model.B)
    P = jnp.eye(model.latent_dim) - alpha * Bp @ model.B
    zbar = x @ Bp.T
    zprev = jnp.concatenate([zbar[:1], zs[:-1]])
    g = jax.grad(lambda z: jnp.mean((z @ model.B.T - x[1:]) ** 2))(zs)
    lam = np.zeros_like(np.asarray(g))
    lam[-1] = g[-1]
    for t in range(T - 2, -1, -1):  # λ_t = g_t + diag(J̃_{t+1}) λ_{t+1}
        zt = P @ zprev[t + 1] + alpha * zbar[t + 1]
        Jd = jnp.diagonal(model.jacobian(zt) @ P)
        lam[t] = g[t] + Jd * lam[t + 1]

    def total(p):
        m = eqx.combine(p, static)
        Bp_ = jnp.linalg.pinv(m.B)
        P_ = jnp.eye(m.latent_dim) - alpha * Bp_ @ m.B
        zb = x @ Bp_.T
        zp = jnp.concatenate([zb[:1], jax.lax.stop_gradient(zs[:-1])])
        F = jax.vmap(lambda z, b: m.step(P_ @ z + alpha * b))(zp, zb[:-1])
        direct = jnp.mean((jax.lax.stop_gradient(zs) @ m.B.T - x[1:]) ** 2)
        return jnp.sum(F * lam) + direct

    return eqx.combine(jax.grad(total)(params), static)


def test_iterations_on_self_generated_data():
    """M = N, large α, data from the model itself: converged in ≤ 3 (paper: 2)."""
    N = M = 3
    model = random_shplrnn(N, M, seed=11, random_B=False)
    z = jnp.array([0.3, -0.2, 0.5])
    xs = []
    for _ in range(T + 1):
        xs.append(model.B @ z)
        z = model.step(z)
    x = jnp.stack(xs)
    counts = {}
    for alpha in (0.5, 0.9, 1.0):
        _, info = fwd(model, x, jnp.asarray(alpha))
        counts[alpha] = int(info.iterations)
        assert bool(info.converged) and counts[alpha] <= 3, counts


def test_divergence_is_reported():
    model = random_shplrnn(3, 3, seed=12, scale=6.0)
    model = eqx.tree_at(lambda m: m.A_bar, model, jnp.full(3, 3.0))  # A ≈ 1, strongly expanding
    x = data(3, T=200)
    J = jax.vmap(model.jacobian)(x[:, :3] * 3)
    assert float(jnp.max(jnp.linalg.norm(J, ord=2, axis=(1, 2)))) > 1.5
    _, info = dsr.gtf_forward(model, x, 0.0, solver=dsr.DEER(max_iter=8))
    assert not bool(info.converged)
    assert int(info.iterations) == 8 or not bool(info.finite)
    # non-finite iterates are flagged, not hidden
    huge = eqx.tree_at(lambda m: m.W_L, model, model.W_L * 1e150)
    _, info = dsr.gtf_forward(huge, x, 0.0, solver=dsr.DEER(max_iter=50, init="normal"))
    assert not bool(info.finite) and not bool(info.converged)


def test_fixed_iterations_and_inits():
    model = random_shplrnn(3, 5, seed=13)
    x = data(3)
    zs, _ = dsr.gtf_forward(model, x, 0.5, solver=dsr.Sequential())
    for init in ("pinv", "zeros", "normal"):
        z, info = dsr.gtf_forward(model, x, 0.5, solver=dsr.DEER(init=init, fixed_iters=30))
        assert int(info.iterations) == 30 and bool(info.converged)
        assert rel_err(z, zs) < 1e-10


def test_bad_input():
    model = random_shplrnn(3, 3)
    x = data(3)
    with pytest.raises(ValueError, match="obs_dim"):
        dsr.gtf_forward(model, data(2), 0.1)
    with pytest.raises(ValueError, match="`alpha`"):
        dsr.gtf_forward(model, x, 1.5)
    with pytest.raises(ValueError, match="`alpha`"):
        dsr.gtf_forward(model, x, -0.1)
    with pytest.raises(ValueError, match="`warmup`"):
        dsr.gtf_forward(model, x, 0.1, warmup=T)
    with pytest.raises(ValueError, match="`x`"):
        dsr.gtf_forward(model, x.at[3, 1].set(jnp.nan), 0.1)
    with pytest.raises(ValueError, match="`x`"):
        dsr.gtf_forward(model, x[None, None], 0.1)
    with pytest.raises(ValueError, match="`jacobian`"):
        dsr.DEER(jacobian="banded")
    with pytest.raises(TypeError, match="`solver`"):
        dsr.gtf_forward(model, x, 0.1, solver="deer")
    with pytest.raises(ValueError, match="inputs"):
        dsr.gtf_forward(random_shplrnn(3, 3, input_dim=2), x, 0.1)


@pytest.mark.parametrize("scan_method,chunk_size", [("sequential", 7), ("sequential", None),
                                                    ("associative", None), ("chunked", 8)])
@pytest.mark.parametrize("jacobian", ["full", "diag"])
def test_scan_methods_agree(scan_method, chunk_size, jacobian):
    """Every scan method (the fused, blocked sequential path with a block that does not
    divide T, and the vectorized parallel ones) gives the sequential trajectory and the
    BPTT gradient (exact adjoint for quasi-DEER)."""
    model = random_shplrnn(3, 4, seed=11)
    x = data(3, seed=4)
    solver = dsr.DEER(jacobian=jacobian, scan_method=scan_method, chunk_size=chunk_size,
                      exact_adjoint=True)
    zs, _ = fwd(model, x, jnp.asarray(0.4), warmup=3, solver=dsr.Sequential())
    zd, info = fwd(model, x, jnp.asarray(0.4), warmup=3, solver=solver)
    assert bool(info.converged) and rel_err(zd, zs) < 1e-10
    assert_tree_rel(grads(model, x, solver), grads(model, x, dsr.Sequential()), 1e-9)


# ---------------------------------------------------------------- the fast paths (issue 15)


@pytest.mark.parametrize("kind", ["full", "lowrank", "inputs", "clipped"])
def test_jacobian_products_and_diagonals(kind):
    """The analytic `jacobian_diagonal`, `jacobian_product` (J P, P folded into the factors)
    and `jacobian_product_diagonal` (diag(J P)) against forming J, and the base-class
    defaults (what a user model without overrides gets) against the same."""
    N, M = 3, 5
    if kind == "clipped":
        base = random_shplrnn(N, M, seed=21)
        model = dsr.ClippedShPLRNN(N, M, 12, key=jax.random.key(0), dtype=jnp.float64)
        model = eqx.tree_at(lambda m: (m.A_bar, m.W_L, m.V, m.b), model,
                            (base.A_bar, base.W_L, base.V, base.b))
    else:
        model = random_shplrnn(N, M, seed=22, rank=2 if kind == "lowrank" else None,
                               input_dim=2 if kind == "inputs" else 0)
    s = jnp.array([0.3, -1.1]) if kind == "inputs" else None
    k1, k2 = jax.random.split(jax.random.key(5))
    P = jnp.eye(M) - 0.37 * jax.random.normal(k1, (M, M)) / M
    for z in jax.random.normal(k2, (4, M)) * 2.0:
        J = model.jacobian(z, s)
        np.testing.assert_allclose(J, jax.jacfwd(lambda v: model.step(v, s))(z), atol=1e-12)
        np.testing.assert_allclose(model.jacobian_diagonal(z, s), jnp.diagonal(J), atol=1e-12)
        np.testing.assert_allclose(model.jacobian_product(z, P, s), J @ P, atol=1e-12)
        np.testing.assert_allclose(model.jacobian_product_diagonal(z, P, s), jnp.diagonal(J @ P),
                                   atol=1e-12)
        np.testing.assert_allclose(dsr.AbstractGTFModel.jacobian_product(model, z, P, s), J @ P,
                                   atol=1e-12)
        np.testing.assert_allclose(dsr.AbstractGTFModel.jacobian_product_diagonal(model, z, P, s),
                                   jnp.diagonal(J @ P), atol=1e-12)


@pytest.mark.parametrize("scan_method", ["associative", "chunked"])
@pytest.mark.parametrize("T_", [32, 37])
def test_parallel_adjoint_reuses_newton_jacobians(scan_method, T_):
    """The vectorized path's adjoint runs on the last Newton iteration's Jacobians (kept in
    the associative scan's storage order): the BPTT gradient, with and without a warm-up
    (two Jacobian phases), for T a power of two (every level in split order) and odd T."""
    model = random_shplrnn(3, 4, seed=23)
    x = data(3, seed=6, T=T_)
    solver = dsr.DEER(scan_method=scan_method)
    for warmup in (0, 5):
        g_seq = grads(model, x, dsr.Sequential(), warmup=warmup)
        assert_tree_rel(grads(model, x, solver, warmup=warmup), g_seq, 1e-9)


def test_quasi_diagonal_adjoint_on_parallel_path():
    """quasi-DEER's Eq. 44 adjoint on the associative path (reused diagonal Jacobians)
    equals the NumPy re-derivation, as on the fused path."""
    model = random_shplrnn(3, 3, seed=10)
    x = data(3)
    quasi = dsr.DEER(jacobian="diag", scan_method="associative")
    g_diag = grads(model, x, quasi, alpha=0.6, warmup=0)
    assert_tree_rel(g_diag, diag_adjoint_reference(model, x, 0.6), 1e-8)


def test_warmup_over_the_whole_window():
    """`warmup = T − 1`: every step forced with α = 1 (one phase, the α = 1 projection)."""
    model = random_shplrnn(2, 4, seed=24)
    x = data(2, seed=7)
    for solver in (dsr.DEER(), dsr.DEER(scan_method="associative"), dsr.DEER(jacobian="diag")):
        zs, _ = dsr.gtf_forward(model, x, 0.3, warmup=T - 1, solver=dsr.Sequential())
        zd, info = dsr.gtf_forward(model, x, 0.3, warmup=T - 1, solver=solver)
        assert bool(info.converged) and rel_err(zd, zs) < 1e-10


def test_linearization_phases_and_storage_order():
    """`Linearization.evaluate` with two phases, natural and in a permuted storage order,
    against evaluating every step by hand; a plain per-step function is one phase."""
    from dsr._solvers._associative import split_order
    from dsr._solvers._base import Linearization, as_linearization

    Tn, M = 12, 3
    zprev = jax.random.normal(jax.random.key(1), (Tn, M))
    us = jnp.arange(Tn, dtype=jnp.float64)
    f0 = lambda p, z, u: jnp.outer(z, z) * p + u  # noqa: E731
    f1 = lambda p, z, u: -jnp.outer(z, z) * p - u  # noqa: E731
    lin = Linearization(full=(f0, f1), lengths=(5, Tn - 5))
    expect = jnp.stack([(f0 if t < 5 else f1)(2.0, zprev[t], us[t]) for t in range(Tn)])
    np.testing.assert_allclose(lin.evaluate(2.0, zprev, us, False), expect)
    np.testing.assert_allclose(lin.evaluate(2.0, zprev, us, True),
                               jnp.diagonal(expect, axis1=1, axis2=2))
    order = split_order(Tn)
    got = lin.evaluate(2.0, zprev[order], us[order], False, order)
    np.testing.assert_allclose(got, expect[order])
    assert as_linearization(f0).bounds(Tn) == [(0, Tn)]
    with pytest.raises(ValueError, match="phase lengths"):
        lin.bounds(Tn + 1)
