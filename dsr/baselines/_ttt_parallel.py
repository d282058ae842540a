"""The chunk-wise parallel form of the TTT-KVB layer and its accumulation mask (Liu et al.
(2026), *Test-Time Training with KV Binding Is Secretly Linear Attention*, Theorem 3,
Sec. 6.2, App. H.1).

Chunks are grouped into blocks of `m` chunks (`block_size` tokens). Inside a block the
output is the dense masked product `((φ(Q) φ(K)ᵀ) ⊙ 𝒞_loc^{↑L}) V`, with the block's
accumulation mask built from `decay_mask` (cumulative products, no division, so zero or
negative momenta are fine). Across blocks the state pair (momentum `−ΔW`, weight `W`) is
carried by two diagonal `linear_scan`s over the block summaries, and every query then reads
the state that entered its block. No T×T matrix is formed; depth is ≈ `block + T/block`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._solvers._scan import decay_mask, linear_scan
from ._ttt_kernel import apply_kernel

_DEFAULT_BLOCK = 64  # tokens per block of the parallel form (rounded to whole chunks)


def prefix_sum(x, axis):
    """Inclusive prefix sum along `axis`."""
    # Log-depth prefix sum; `jnp.cumsum` lowers to an O(n)-per-entry `reduce_window` on CPU.
    return jax.lax.associative_scan(jnp.add, x, axis=axis)


def accumulation_mask(
    lr: Float[Array, " N"], momentum: Float[Array, " N"]
) -> Float[Array, "N N"]:
    """The chunk-level mask of Liu et al. (2026) App. H.1,
    `𝒞[t, i] = Σ_{j=i}^{t} η_j Π_{s=i+1}^{j} α_s` for `i ≤ t`, else 0.

    `W_{t+1} = W_0 + Σ_{i≤t} 𝒞[t, i] φ(K_i)ᵀ V_i`. Built as a cumulative sum over j of
    `η_j · decay_mask(α)[j, i]`: no division, so zero or negative momenta are exact.
    """
    return prefix_sum(lr[:, None] * decay_mask(momentum), axis=0)


def _carry_method():
    # The carried state is Dh·Dv wide and there are only T / block steps: on CPU a plain
    # loop is fastest (the chunked scan's (c, c, Dh·Dv) decay tensors cost more than they
    # save); on accelerators the backend's own choice (a log-depth scan).
    return "sequential" if jax.default_backend() == "cpu" else "auto"


def parallel_form(q, k, v, w0, lr, mom, L, kernel, block_size):
    """`ttt_linear(form="parallel")` on validated arrays: blocks of `block_size` tokens
    (whole chunks of `L`), a dense masked product inside each block and two diagonal
    `linear_scan`s across blocks (Liu et al. 2026, App. H.1)."""
    T, Dv = v.shape
    n = lr.shape[0]
    m = max(1, (block_size or max(L, _DEFAULT_BLOCK)) // L)  # chunks per block
    m = min(m, n)
    nb = -(-n // m)
    B = m * L  # tokens per block
    Tp = nb * B
    phiq, phik = apply_kernel(kernel, q), apply_kernel(kernel, k)
    Dh = phiq.shape[-1]

    def blocks(x):
        return jnp.pad(x, ((0, Tp - T), (0, 0))).reshape(nb, B, x.shape[-1])

    phiq, phik, V = blocks(phiq), blocks(phik), blocks(v)  # padded V = 0: no contribution
    # Padded chunks are identities of the recurrence: η = 0 (no step), α = 1 (keep momentum).
    eta = jnp.pad(lr, (0, nb * m - n)).reshape(nb, m)
    alpha = jnp.pad(mom, (0, nb * m - n), constant_values=1).reshape(nb, m)

    # Block-local coefficients (local chunk index τ, j, i ∈ [0, m)):
    #   D[τ, i] = Π_{s=i+1}^{τ} α_s                 momentum decay (decay_mask)
    #   Cl[τ, i] = Σ_{j=i}^{τ} η_j D[j, i]          App. H.1 mask restricted to the block
    #   P[j]    = Π_{s=0}^{j} α_s                   decay of the momentum entering the block
    #   g[τ]    = Σ_{j=0}^{τ} η_j P[j]              its weight in W_{τ+1}
    # so that, with (M_in, W_in) the momentum −ΔW and weight entering the block,
    #   W_{τ+1} = W_in + g[τ] M_in + Σ_i Cl[τ, i] φ(K_i)ᵀ V_i,
    #   M_out   = P[m−1] M_in + Σ_i D[m−1, i] φ(K_i)ᵀ V_i.
    D = jax.vmap(decay_mask)(alpha)  # (nb, m, m)
    Cl = prefix_sum(eta[:, :, None] * D, axis=1)
    P = jax.lax.associative_scan(jnp.multiply, alpha, axis=1)
    g = prefix_sum(eta * P, axis=1)

    def tokens(c):  # chunk weights → token weights (…, m) → (…, m·L)
        return jnp.repeat(c, L, axis=-1)

    # Block summaries: what each block adds to the momentum and to the weight.
    SM = jnp.einsum("bph,bp,bpv->bhv", phik, tokens(D[:, -1, :]), V)
    SW = jnp.einsum("bph,bp,bpv->bhv", phik, tokens(Cl[:, -1, :]), V)
    # Across blocks, on the shared scan backend (diagonal multipliers):
    #   M_out^b = P^b[m−1] M_out^{b−1} + SM^b,   W_out^b = W_out^{b−1} + g^b[m−1] M_in^b + SW^b.
    HV = Dh * Dv
    method = _carry_method()
    M_out = linear_scan(jnp.broadcast_to(P[:, -1:], (nb, HV)), SM.reshape(nb, HV),
                        method=method)
    M_in = jnp.concatenate([jnp.zeros((1, HV), M_out.dtype), M_out[:-1]], axis=0)
    W_out = linear_scan(jnp.ones((nb, HV), M_out.dtype), g[:, -1:] * M_in + SW.reshape(nb, HV),
                        w0.reshape(HV), method=method)
    if m == 1:
        # One chunk per block: the mask is the constant η_t, so the whole output of the
        # block is φ(Q_t) W_{t+1} (the cheaper order of the same product).
        out = jnp.einsum("bph,bhv->bpv", phiq, W_out.reshape(nb, Dh, Dv))
    else:
        W_in = jnp.concatenate([w0.reshape(1, HV), W_out[:-1]], axis=0).reshape(nb, Dh, Dv)
        M_in = M_in.reshape(nb, Dh, Dv)
        # Intra-block: ((φ(Q) φ(K)ᵀ) ⊙ Cl^{↑L}) V, one batched dense product.
        Cup = tokens(jnp.repeat(Cl, L, axis=1))  # (nb, B, B)
        S = jnp.einsum("bph,bqh->bpq", phiq, phik) * Cup
        out = (
            jnp.einsum("bpq,bqv->bpv", S, V)
            + jnp.einsum("bph,bhv->bpv", phiq, W_in)
            + tokens(g)[..., None] * jnp.einsum("bph,bhv->bpv", phiq, M_in)
        )
    return out.reshape(Tp, Dv)[:T]
