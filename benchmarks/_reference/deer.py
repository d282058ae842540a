"""A frozen copy of GTF-DEER as it was before the solver-speed work (dsr commit 060a8c8).

Used only by ``python -m benchmarks.runtime --compare-before``, so that *before* and *after*
run in one process, interleaved, on the same models and data. Trimmed to what those
comparisons call: the vectorized (``scan_method="associative"``) and fused (``"sequential"``)
Newton paths and their adjoints, full and diagonal, and the GTF forcing that wraps them. The
code is deliberately left as it was (the full Jacobian `J − α J B⁺B` per step, the diagonal
as `jnp.diagonal` of the full Jacobian, the adjoint recomputing every Jacobian at z* and
reversing the scan by flipped, transposed copies, the batched-matmul associative combine).
Do not "fix" it: it is the baseline.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

# ------------------------------------------------------------------ scan kernels (old _scan)


def _sequential(A, b, z0, full):
    def body(z, ab):
        a, bt = ab
        z = (a @ z if full else a * z) + bt
        return z, z

    _, zs = jax.lax.scan(body, z0, (A, b))
    return zs


def _associative(A, b, z0, full):
    first = (A[0] @ z0) if full else A[0] * z0
    b = b.at[0].add(first)

    def combine(earlier, later):
        Ae, be = earlier
        Al, bl = later
        if full:
            return Al @ Ae, jnp.einsum("...ij,...j->...i", Al, be) + bl
        return Al * Ae, Al * be + bl

    _, zs = jax.lax.associative_scan(combine, (A, b))
    return zs


def _forward(A, b, z0, full, method):
    return _sequential(A, b, z0, full) if method == "sequential" else _associative(A, b, z0, full)


def _reverse(A, g, lamT, full, method):
    if method == "sequential":
        def body(lam, ag):
            a, gt = ag
            lam = (lam @ a if full else a * lam) + gt
            return lam, lam

        _, lams = jax.lax.scan(body, lamT, (A, g), reverse=True)
        return lams
    At = jnp.flip(A, axis=0)
    At = jnp.swapaxes(At, -1, -2) if full else At
    return jnp.flip(_forward(At, jnp.flip(g, 0), lamT, full, method), 0)


def _adjoint_scan(A, g, full, method):
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    lam = _reverse(A, gshift, g[-1], full, method)
    return jnp.concatenate([lam[1:], g[-1:]], axis=0)


# ------------------------------------------------------------------ solver (old _solver)


def _shift(z0, z):
    return jnp.concatenate([z0[None], z[:-1]], axis=0)


def _vstep(step, params, zprev, us):
    return jax.vmap(step, in_axes=(None, 0, 0))(params, zprev, us)


def _vjac(jac, params, zprev, us, diagonal):
    J = jax.vmap(jac, in_axes=(None, 0, 0))(params, zprev, us)
    return jnp.diagonal(J, axis1=-2, axis2=-1) if diagonal else J


def _block_size(M):
    c = 2 ** round(math.log2(max(32768 / M**2, 1.0)))
    return int(min(max(c, 64), 512))


def _blocks(x, n, c):
    pad = n * c - x.shape[0]
    if pad:
        x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)
    return x.reshape((n, c) + x.shape[1:])


def _unblock(x, T):
    return x.reshape((-1,) + x.shape[2:])[:T]


def _fused_newton_delta(step, jac, params, z0, us, z, diagonal):
    T, M = z.shape
    c = min(_block_size(M), T)
    n = -(-T // c)

    def body(delta, xs):
        zp, zc, u = xs
        f = _vstep(step, params, zp, u)
        J = _vjac(jac, params, zp, u, diagonal)

        def inner(d, jr):
            Jt, rt = jr
            d = (Jt * d if diagonal else Jt @ d) + rt
            return d, d

        return jax.lax.scan(inner, delta, (J, f - zc))

    blk = lambda x: _blocks(x, n, c)  # noqa: E731
    xs = (blk(_shift(z0, z)), blk(z), jax.tree_util.tree_map(blk, us))
    _, deltas = jax.lax.scan(body, jnp.zeros((M,), z.dtype), xs)
    return _unblock(deltas, T)


def _fused_adjoint(step, jac, params, z0, us, z_star, g, diagonal):
    T, M = z_star.shape
    c = min(_block_size(M), T)
    n = -(-T // c)
    blk = lambda x: _blocks(x, n, c)  # noqa: E731
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    valid = (jnp.arange(n * c) < T).reshape(n, c)
    xs = (blk(_shift(z0, z_star)), blk(gshift), jax.tree_util.tree_map(blk, us), valid)

    def body(carry, xs):
        lam, dparams = carry
        zp, gs, u, ok = xs
        J = _vjac(jac, params, zp, u, diagonal)
        eye = jnp.ones((M,), J.dtype) if diagonal else jnp.eye(M, dtype=J.dtype)
        J = jnp.where(ok.reshape((c,) + (1,) * (J.ndim - 1)), J, eye)
        gs = jnp.where(ok[:, None], gs, 0)

        def inner(lam_next, jg):
            Jt, gt = jg
            return (Jt * lam_next if diagonal else lam_next @ Jt) + gt, lam_next

        lam, mu = jax.lax.scan(inner, lam, (J, gs), reverse=True)
        mu = jnp.where(ok[:, None], mu, 0)
        _, vjp = jax.vjp(lambda p, zp_, u_: _vstep(step, p, zp_, u_), params, zp, u)
        dp, dzp, du = vjp(mu)
        return (lam, jax.tree_util.tree_map(jnp.add, dparams, dp)), (dzp[0], du)

    init = (g[-1], jax.tree_util.tree_map(jnp.zeros_like, params))
    (_, dparams), (dzp0, dus) = jax.lax.scan(body, init, xs, reverse=True)
    return dparams, dzp0[0], jax.tree_util.tree_map(lambda x: _unblock(x, T), dus)


class DEER(eqx.Module):
    """The old `dsr.DEER`, for `scan_method` in {"sequential" (fused), "associative"}."""

    jacobian: str = eqx.field(default="full", static=True)
    max_iter: int | None = eqx.field(default=None, static=True)
    fixed_iters: int | None = eqx.field(default=None, static=True)
    exact_adjoint: bool = eqx.field(default=False, static=True)
    scan_method: str = eqx.field(default="sequential", static=True)

    def newton(self, step, jac, params, z0, us, z_init):
        diagonal = self.jacobian == "diag"
        tol = 1e-10 if jnp.finfo(z_init.dtype).bits >= 64 else 1e-5
        fused = self.scan_method == "sequential"

        def newton_step(z):
            if fused:
                delta = _fused_newton_delta(step, jac, params, z0, us, z, diagonal)
            else:
                zprev = _shift(z0, z)
                f = _vstep(step, params, zprev, us)
                J = _vjac(jac, params, zprev, us, diagonal)
                delta = _forward(J, f - z, jnp.zeros_like(z0), not diagonal, self.scan_method)
            znew = z + delta
            done = jnp.max(jnp.abs(delta)) <= tol * jnp.maximum(1.0, jnp.max(jnp.abs(znew)))
            return znew, done, jnp.all(jnp.isfinite(znew))

        if self.fixed_iters is not None:
            def body(carry, _):
                z, _, finite = carry
                znew, done, fin = newton_step(z)
                return (znew, done, finite & fin), None

            init = (z_init, jnp.array(False), jnp.array(True))
            (z, done, finite), _ = jax.lax.scan(body, init, None, length=self.fixed_iters)
            iters = jnp.array(self.fixed_iters, jnp.int32)
        else:
            max_iter = self.max_iter or (1000 if diagonal else 100)

            def cond(carry):
                k, _, done, finite = carry
                return (k < max_iter) & ~done & finite

            def body(carry):
                k, z, _, _ = carry
                znew, done, finite = newton_step(z)
                return k + 1, znew, done, finite

            init = (jnp.array(0, jnp.int32), z_init, jnp.array(False), jnp.array(True))
            iters, z, done, finite = jax.lax.while_loop(cond, body, init)
        resid = jnp.max(jnp.abs(z - _vstep(step, params, _shift(z0, z), us)))
        return z, (iters, done & finite & jnp.isfinite(resid))

    def solve(self, step, jac, params, z0, us, z_init):
        z_star, info = self.newton(step, jac, *jax.lax.stop_gradient((params, z0, us, z_init)))
        diagonal = self.jacobian == "diag" and not self.exact_adjoint
        z = _implicit_fixed_point(step, jac, diagonal, self.scan_method)(params, z0, us, z_star)
        return z, info


def _implicit_fixed_point(step, jac, diagonal, scan_method):
    @jax.custom_vjp
    def fixed_point(params, z0, us, z_star):
        return z_star

    def fwd(params, z0, us, z_star):
        return z_star, (params, z0, us, z_star)

    def bwd(res, g):
        params, z0, us, z_star = res
        if scan_method == "sequential":
            dparams, dz0, dus = _fused_adjoint(step, jac, params, z0, us, z_star, g, diagonal)
            return dparams, dz0, dus, jnp.zeros_like(z_star)
        zprev = _shift(z0, z_star)
        J = _vjac(jac, params, zprev, us, diagonal)
        mu = _adjoint_scan(J, g, not diagonal, scan_method)
        _, vjp = jax.vjp(lambda p, zp, u: _vstep(step, p, zp, u), params, zprev, us)
        dparams, dzprev, dus = vjp(mu)
        return dparams, dzprev[0], dus, jnp.zeros_like(z_star)

    fixed_point.defvjp(fwd, bwd)
    return fixed_point


# ------------------------------------------------------------------ GTF (old _gtf)


def gtf_forward(model, x, alpha, *, warmup=0, solver=DEER()):
    """The old `dsr.gtf_forward` for one unbatched window `x` (T+1, N), no inputs."""
    T = x.shape[0] - 1
    params, static = eqx.partition(model, eqx.is_inexact_array)
    dtype = jnp.result_type(x, *jax.tree_util.tree_leaves(params))
    x = x.astype(dtype)
    Bp = jnp.linalg.pinv(model.B.astype(dtype))
    BpB = Bp @ model.B.astype(dtype)
    zbar = x @ Bp.T
    k = jnp.arange(T)
    alphas = jnp.where(k <= warmup, jnp.ones((), dtype), jnp.asarray(alpha, dtype))
    us = (zbar[:-1], jax.lax.stop_gradient(alphas))

    def forced(BpB, z, zb, a):
        return z - a * (BpB @ z) + a * zb

    def step(p, z, u):
        mparams, BpB = p
        zb, a = u
        return eqx.combine(mparams, static).step(forced(BpB, z, zb, a))

    def jac(p, z, u):
        mparams, BpB = p
        zb, a = u
        J = eqx.combine(mparams, static).jacobian(forced(BpB, z, zb, a))
        return J - a * (J @ BpB)

    return solver.solve(step, jac, (params, BpB), zbar[0], us, zbar[1:])
