"""DEER's fused path, taken when the scan method resolves to `"sequential"` (`auto` on CPU).

The linearization (F and J at every step) is evaluated block by block *inside* the
sequential recurrence, so only a block of c Jacobians (c·M² numbers, cache-sized) exists at
a time instead of all T·M²: the same arithmetic with O(T·M) memory traffic (measured by
`benchmarks.runtime`; docs: Performance). Each phase of the `Linearization` is its own run of blocks
(the carry passes from one to the next), so a phase's constant factors stay unbatched.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._base import Linearization, shift, time_slice, vmap_step


def default_block_size(M: int, diagonal: bool = False) -> int:
    """Block length of the fused path: ≈ 32K Jacobian entries per block (M² per step, or M
    for quasi-DEER's diagonals), in [64, 512] (longer blocks measured no faster)."""
    c = 2 ** round(math.log2(max(32768 / (M if diagonal else M**2), 1.0)))
    return int(min(max(c, 64), 512))


def _blocks(x, n, c):
    """`(T, …) -> (n, c, …)`, padding the end by repeating the last entry (finite inputs)."""
    pad = n * c - x.shape[0]
    if pad:
        x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)
    return x.reshape((n, c) + x.shape[1:])


def _unblock(x, T):
    return x.reshape((-1,) + x.shape[2:])[:T]


def _layout(T, M, block, diagonal):
    c = min(block or default_block_size(M, diagonal), T)
    n = -(-T // c)
    return c, n, (lambda x: _blocks(x, n, c))


def _apply(J, x, diagonal):
    return J * x if diagonal else J @ x


def _apply_transposed(J, x, diagonal):
    return J * x if diagonal else x @ J


def newton_delta(step, lin: Linearization, params, z0, us, z, diagonal, block):
    """The Newton update Δz of `DEER.newton` (Δz_t = J_t Δz_{t-1} + F(z_{t-1}) − z_t,
    Δz_0 = 0), with F and J evaluated one block at a time inside the sequential scan."""
    T, M = z.shape
    zprev = shift(z0, z)
    delta = jnp.zeros((M,), z.dtype)
    parts = []
    for k, (lo, hi) in enumerate(lin.bounds(T)):
        jac = lin.function(k, diagonal)
        c, n, blk = _layout(hi - lo, M, block, diagonal)

        def body(d, xs, jac=jac):
            zp, zc, u = xs
            f = vmap_step(step, params, zp, u)
            J = vmap_step(jac, params, zp, u)

            def inner(d, jr):
                d = _apply(jr[0], d, diagonal) + jr[1]
                return d, d

            return jax.lax.scan(inner, d, (J, f - zc))

        xs = jax.tree_util.tree_map(blk, time_slice((zprev, z, us), lo, hi))
        delta, out = jax.lax.scan(body, delta, xs)
        delta = out.reshape(-1, M)[hi - lo - 1]  # the padded steps must not advance Δz
        parts.append(_unblock(out, hi - lo))
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=0)


def adjoint(step, lin: Linearization, params, z0, us, z_star, g, diagonal, block):
    """The implicit-gradient VJP (`_deer.implicit_fixed_point`) with J and the step's VJP
    evaluated one block at a time inside the reverse sequential scan; the parameter
    cotangents are summed in the carry. Returns `(dparams, dz0, dus)`."""
    T, M = z_star.shape
    zprev = shift(z0, z_star)
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    carry = (g[-1], jax.tree_util.tree_map(jnp.zeros_like, params))
    dus_parts, dz0 = [], None
    for k, (lo, hi) in reversed(list(enumerate(lin.bounds(T)))):
        carry, dzp0, dus = _adjoint_phase(step, lin.function(k, diagonal), params,
                                          time_slice((zprev, gshift, us), lo, hi), carry,
                                          diagonal, block)  # fmt: skip
        dus_parts.insert(0, dus)
        dz0 = dzp0
    dus = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *dus_parts)
    return carry[1], dz0, dus


def _adjoint_phase(step, jac, params, xs, carry, diagonal, block):
    """One phase of `adjoint`: the reverse scan over its blocks from `carry = (λ, dparams)`."""
    zprev, gshift, us = xs
    T, M = zprev.shape
    c, n, blk = _layout(T, M, block, diagonal)
    valid = (jnp.arange(n * c) < T).reshape(n, c)  # False on the padded steps

    def body(carry, xs):
        lam, dparams = carry
        zp, gs, u, ok = xs
        J = vmap_step(jac, params, zp, u)
        eye = jnp.ones((M,), J.dtype) if diagonal else jnp.eye(M, dtype=J.dtype)
        J = jnp.where(ok.reshape((c,) + (1,) * (J.ndim - 1)), J, eye)  # padding: λ passes
        gs = jnp.where(ok[:, None], gs, 0)

        def inner(lam_next, jg):  # μ_k = λ_{k+1};  λ_k = g'_k + J_kᵀ λ_{k+1}
            return _apply_transposed(jg[0], lam_next, diagonal) + jg[1], lam_next

        lam, mu = jax.lax.scan(inner, lam, (J, gs), reverse=True)
        mu = jnp.where(ok[:, None], mu, 0)
        _, vjp = jax.vjp(lambda p, zp_, u_: vmap_step(step, p, zp_, u_), params, zp, u)
        dp, dzp, du = vjp(mu)
        return (lam, jax.tree_util.tree_map(jnp.add, dparams, dp)), (dzp[0], du)

    xs = jax.tree_util.tree_map(blk, (zprev, gshift, us)) + (valid,)
    carry, (dzp0, dus) = jax.lax.scan(body, carry, xs, reverse=True)
    return carry, dzp0[0], jax.tree_util.tree_map(lambda x: _unblock(x, T), dus)
