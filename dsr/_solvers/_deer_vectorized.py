"""DEER's vectorized (parallel) path: all T Jacobians at once, one parallel scan per solve.

With the associative scan of full Jacobians the arrays are kept in its storage order (`split_order(T)`:
every level's pairs are contiguous halves). Only the T·M vectors (z, inputs, residuals) are
permuted; the T Jacobians are evaluated in that order directly, so the T·M² array is never
gathered, and the adjoint reuses them as they are.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._associative import associative_forward, associative_reverse, split_order
from ._auto import auto_combine, auto_method
from ._scan import adjoint_scan, linear_scan
from ._base import Linearization, shift, time_take, vmap_step


def storage_order(method: str, T: int, M: int, full: bool) -> np.ndarray | None:
    """The time order of the vectorized path's arrays: `split_order(T)` for the
    associative scan of full Jacobians (None where that is the natural order), else None."""
    method = auto_method(T, M, full) if method == "auto" else method
    order = split_order(T)
    if method != "associative" or not full or np.array_equal(order, np.arange(T)):
        return None
    return order


def permute(tree, order):
    """Natural time order → storage order."""
    return tree if order is None else time_take(tree, order)


def unpermute(x, order):
    """Storage order → natural time order."""
    return x if order is None else jnp.take(x, np.argsort(order), axis=0)


def linearize(step, lin: Linearization, params, z0, z, us, diagonal, order):
    """`(F(z_{t-1}) − z_t, J_t)` for all steps, in storage order."""
    zprev, z, us = permute((shift(z0, z), z, us), order)
    f = vmap_step(step, params, zprev, us)
    return f - z, lin.evaluate(params, zprev, us, diagonal, order)


def newton_delta(J, r, method, chunk_size, order):
    """`Δz_t = J_t Δz_{t-1} + r_t` from `Δz_0 = 0` (J, r in storage order); natural Δz."""
    if order is None:
        return linear_scan(J, r, method=method, chunk_size=chunk_size)
    full = J.ndim == 3
    return unpermute(associative_forward(J, r, full, auto_combine(r.shape[-1]), True), order)


def adjoint(J, g, method, chunk_size, order):
    """The adjoint `μ_t = g_t + J_{t+1}ᵀ μ_{t+1}`, `μ_T = g_T` (J in storage order, g and μ
    natural): the reverse scan of `_scan.adjoint_scan`."""
    if order is None:
        return adjoint_scan(J, g, method=method, chunk_size=chunk_size)[0]
    full = J.ndim == 3
    # λ_{t-1} = g'_{t-1} + J_tᵀ λ_t with g' = (0, g_1, …, g_{T-1}) and λ_T = g_T folded into
    # g'_{T-1}; then μ = (λ_1, …, λ_{T-1}, g_T).
    J_last = J[int(np.argsort(order)[-1])]
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    gshift = gshift.at[-1].add(g[-1] @ J_last if full else J_last * g[-1])
    lam = associative_reverse(J, permute(gshift, order), full, auto_combine(g.shape[-1]), True)
    lam = unpermute(lam, order)
    return jnp.concatenate([lam[1:], g[-1:]], axis=0)


def evaluate_at(step, lin, params, z0, z_star, us, diagonal, order):
    """The T Jacobians at the fixed point, in storage order (for the adjoint)."""
    zprev, us = permute((shift(z0, z_star), us), order)
    return lin.evaluate(params, zprev, us, diagonal, order)


def step_vjp(step, params, z0, z_star, us, mu):
    """`μᵀ ∂F/∂(params, z_0, us)` summed over the steps (the implicit gradient's last part)."""
    zprev = shift(z0, z_star)
    _, vjp = jax.vjp(lambda p, zp, u: vmap_step(step, p, zp, u), params, zprev, us)
    dparams, dzprev, dus = vjp(mu)
    return dparams, dzprev[0], dus
