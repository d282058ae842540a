"""The recurrent form of the TTT-KVB layer: `lax.scan` over chunks, one inner-loop gradient
step each, the gradient taken by `jax.grad` of the inner loss exactly as a TTT
implementation does (Liu et al. (2026), *Test-Time Training with KV Binding Is Secretly
Linear Attention*, App. E, H.2, I). The only form of the non-reducible variants: kernel
updates (App. I.1) and LaCT's weight normalization (App. E.4 / I.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._ttt_kernel import apply_kernel

_NORM_EPS = 1e-5  # LaCT's weight-norm epsilon


def _chunks(x, n, L):
    pad = n * L - x.shape[0]
    x = jnp.pad(x, ((0, pad), (0, 0)))
    return x.reshape(n, L, x.shape[-1])


def _col_norm(w):
    return jnp.sqrt(jnp.sum(w * w, axis=0, keepdims=True))


def _weight_norm(w, target):
    # LaCT: each output channel (column) is rescaled to its initial ℓ2 norm.
    return w / (_col_norm(w) + _NORM_EPS) * target


def _inner_loss(kernel, W, K, V):
    """The Frobenius inner-product loss `−⟨φ(K) W, V⟩_F` (Liu et al. 2026, App. E.1)."""
    return -jnp.sum((apply_kernel(kernel, K) @ W) * V)


def recurrent_form(q, k, v, w0, lr, mom, L, kernel, update_kernel, weight_norm):
    """`ttt_linear(form="recurrent")` on validated arrays: `lax.scan` over chunks of `L`
    tokens, one momentum-SGD step on the inner loss each (Liu et al. 2026, App. H.2;
    App. I.1 with `update_kernel`, App. E.4 with `weight_norm`)."""
    T = q.shape[0]
    n = lr.shape[0]
    if not update_kernel:
        # A static kernel is applied to all tokens at once, outside the loop (a stronger
        # baseline; the loop itself is unchanged: identity kernel on φ(Q), φ(K)).
        q, k, kernel = apply_kernel(kernel, q), apply_kernel(kernel, k), None
    Qc, Kc, Vc = _chunks(q, n, L), _chunks(k, n, L), _chunks(v, n, L)
    w0_norm = _col_norm(w0)
    th_norm = None if kernel is None else jax.tree_util.tree_map(_col_norm, kernel)
    grad_fn = jax.grad(_inner_loss, argnums=(0, 1) if update_kernel else 1)

    def body(carry, xs):
        W, dW, th, dth = carry
        Qt, Kt, Vt, eta, alpha = xs
        if update_kernel:  # App. I.1: φ's weights take the same momentum-SGD step
            gth, gW = grad_fn(th, W, Kt, Vt)
            dth = jax.tree_util.tree_map(lambda g, d: g + alpha * d, gth, dth)
            th = jax.tree_util.tree_map(lambda p, d: p - eta * d, th, dth)
        else:
            gW = grad_fn(th, W, Kt, Vt)
        dW = gW + alpha * dW  # App. H.2: ΔW_t = ∇𝓛 + α_t ΔW_{t−1}
        W = W - eta * dW  # W_{t+1} = W_t − η_t ΔW_t
        if weight_norm:  # App. E.4
            W = _weight_norm(W, w0_norm)
            if update_kernel:
                th = jax.tree_util.tree_map(_weight_norm, th, th_norm)
        out = apply_kernel(th, Qt) @ W  # O_t = φ_{t+1}(Q_t) W_{t+1}
        return (W, dW, th, dth), out

    dth0 = jax.tree_util.tree_map(jnp.zeros_like, kernel) if update_kernel else None
    carry = (w0, jnp.zeros_like(w0), kernel, dth0)
    _, out = jax.lax.scan(body, carry, (Qc, Kc, Vc, lr, mom))
    return out.reshape(n * L, -1)[:T]
