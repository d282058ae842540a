"""Test-time training with key–value binding (TTT-KVB) as linear attention, Liu et al. (2026).

The inner loop keeps a fast weight `W` (the last, linear layer of the inner model
`f(x) = φ(x) W`) and, chunk by chunk, takes one step of gradient descent with momentum on
the Frobenius inner-product loss `𝓛_t = −⟨φ(K_t) W, V_t⟩_F` (Liu et al. 2026, Sec. 5.3, App. E.1,
H.2). Chunk t (tokens `tL … tL+L−1`) with learning rate `η_t` and momentum `α_t`:

    ΔW_t    = ∇_W 𝓛_t(W_t) + α_t ΔW_{t−1} = −φ(K_t)ᵀ V_t + α_t ΔW_{t−1},   ΔW_{−1} = 0
    W_{t+1} = W_t − η_t ΔW_t,                                               W_0 = `w0`
    O_t     = φ(Q_t) W_{t+1}           (the chunk reads the weight after its own update)

With a static kernel φ (only the last layer is updated, no weight normalization: the
reduction of Liu et al. (2026) Sec. 6.1, steps 1–2) this is linear attention (Theorem 3):

    O = φ(Q) W_0 + ((φ(Q) φ(K)ᵀ) ⊙ 𝒞^{↑L}) V,   𝒞_{ti} = Σ_{j=i}^{t} η_j Π_{s=i+1}^{j} α_s

(App. H.1), where `^{↑L}` expands the chunk mask to tokens (Kronecker product with
`1_{L×L}`): inside a chunk every query sees every key of its chunk; chunk size 1 is
token-level causal linear attention. Two forms compute the same thing:

- `form="recurrent"`: `lax.scan` over chunks, one inner-loop gradient step each (the
  gradient taken by `jax.grad` of the inner loss, exactly as a TTT implementation does).
  Only this form supports the non-reducible variants of App. I: updating the kernel
  weights too (`update_kernel=True`, I.1) and LaCT's weight normalization
  (`weight_norm=True`, E.4 / I.2).
- `form="parallel"`: the chunk-wise parallel form on the shared scan backend. Chunks are
  grouped into blocks of `m` chunks (`block_size` tokens). Inside a block the output is
  the dense masked product `((φ(Q) φ(K)ᵀ) ⊙ 𝒞_loc^{↑L}) V`, with the block's accumulation
  mask built from `decay_mask` (cumulative products, no division, so zero or negative
  momenta are fine). Across blocks the state pair (momentum `−ΔW`, weight `W`) is carried
  by two diagonal `linear_scan`s over the block summaries, and every query then reads the
  state that entered its block. No T×T matrix is formed; depth is ≈ `block + T/block`.
"""

from __future__ import annotations

import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._checks import check_int, check_optional_int
from .._scan import decay_mask, linear_scan

Form = Literal["parallel", "recurrent"]
_FORMS = ("parallel", "recurrent")
_DEFAULT_BLOCK = 64  # tokens per block of the parallel form (rounded to whole chunks)
_NORM_EPS = 1e-5  # LaCT's weight-norm epsilon


class SwiGLUKernel(eqx.Module):
    """LaCT's static SwiGLU kernel `φ(x) = silu(x W_gate) ⊙ (x W_up)` (Liu et al. 2026, Sec. 5.3,
    App. E.1, where `W_gate`, `W_up` are called `W_0`, `W_2`).

    **Arguments:** `w_gate`, `w_up`, both `(d_key, d_hidden)`. `SwiGLUKernel.random(d_key,
    d_hidden, key=...)` draws them from `U(±1/√d_key)`.
    """

    w_gate: Float[Array, "Dk Dh"]
    w_up: Float[Array, "Dk Dh"]

    def __check_init__(self):
        if jnp.ndim(self.w_gate) != 2 or jnp.shape(self.w_gate) != jnp.shape(self.w_up):
            raise ValueError(
                "`kernel` weights `w_gate` and `w_up` must both have shape (d_key, d_hidden); "
                f"got {jnp.shape(self.w_gate)} and {jnp.shape(self.w_up)}."
            )

    @staticmethod
    def random(d_key: int, d_hidden: int, *, key: PRNGKeyArray, dtype=None) -> SwiGLUKernel:
        """Weights drawn from `U(±1/√d_key)`."""
        dtype = jnp.result_type(float) if dtype is None else dtype
        kg, ku = jax.random.split(key)
        s = 1.0 / math.sqrt(d_key)
        return SwiGLUKernel(
            jax.random.uniform(kg, (d_key, d_hidden), dtype, -s, s),
            jax.random.uniform(ku, (d_key, d_hidden), dtype, -s, s),
        )

    @property
    def d_key(self) -> int:
        return self.w_gate.shape[0]

    @property
    def d_hidden(self) -> int:
        return self.w_gate.shape[1]

    def __call__(self, x: Float[Array, "*n Dk"]) -> Float[Array, "*n Dh"]:
        return jax.nn.silu(x @ self.w_gate) * (x @ self.w_up)


def _phi(kernel, x):
    return x if kernel is None else kernel(x)


def _cumsum(x, axis):
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
    return _cumsum(lr[:, None] * decay_mask(momentum), axis=0)


# ----------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------


def check_form(form, update_kernel, weight_norm, kernel):
    if form not in _FORMS:
        raise ValueError(f"`form` must be one of {_FORMS}; got {form!r}.")
    if update_kernel and kernel is None:
        raise ValueError(
            "`update_kernel=True` needs a kernel with weights (`kernel=SwiGLUKernel(...)`, "
            "or `kernel='swiglu'` for the layer); the identity kernel has none to update."
        )
    if form == "parallel":
        if update_kernel:
            raise ValueError(
                "`update_kernel=True` has no parallel form: updating the kernel φ makes the "
                "effective keys and queries depend on the history through nested "
                "nonlinearities, so the recurrence is no longer linear in the fast weights and "
                "no associative / chunked form exists (Liu et al. 2026, App. I.1). "
                "Use `form='recurrent'`."
            )
        if weight_norm:
            raise ValueError(
                "`weight_norm=True` has no parallel form: normalizing the fast weight after "
                "every update makes the state recurrence nonlinear (Norm(A + B) ≠ Norm(A) + "
                "Norm(B)), so no associative / chunked form exists (Liu et al. 2026, App. I.2). "
                "Use `form='recurrent'`."
            )


def _per_chunk(name, x, n, dtype):
    x = jnp.asarray(x, dtype)
    if x.ndim == 0:
        return jnp.broadcast_to(x, (n,))
    if x.shape != (n,):
        raise ValueError(
            f"`{name}` must be a scalar or have shape (n_chunks,) = ({n},) "
            f"(ceil(T / chunk_size)); got {x.shape}."
        )
    return x


# ----------------------------------------------------------------------------------------
# Recurrent form
# ----------------------------------------------------------------------------------------


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
    return -jnp.sum((_phi(kernel, K) @ W) * V)


def _recurrent(q, k, v, w0, lr, mom, L, kernel, update_kernel, weight_norm):
    T = q.shape[0]
    n = lr.shape[0]
    if not update_kernel:
        # A static kernel is applied to all tokens at once, outside the loop (a stronger
        # baseline; the loop itself is unchanged: identity kernel on φ(Q), φ(K)).
        q, k, kernel = _phi(kernel, q), _phi(kernel, k), None
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
        out = _phi(th, Qt) @ W  # O_t = φ_{t+1}(Q_t) W_{t+1}
        return (W, dW, th, dth), out

    dth0 = jax.tree_util.tree_map(jnp.zeros_like, kernel) if update_kernel else None
    carry = (w0, jnp.zeros_like(w0), kernel, dth0)
    _, out = jax.lax.scan(body, carry, (Qc, Kc, Vc, lr, mom))
    return out.reshape(n * L, -1)[:T]


# ----------------------------------------------------------------------------------------
# Parallel (chunk-wise) form
# ----------------------------------------------------------------------------------------


def _carry_method():
    # The carried state is Dh·Dv wide and there are only T / block steps: on CPU a plain
    # loop is fastest (the chunked scan's (c, c, Dh·Dv) decay tensors cost more than they
    # save); on accelerators the backend's own choice (a log-depth scan).
    return "sequential" if jax.default_backend() == "cpu" else "auto"


def _parallel(q, k, v, w0, lr, mom, L, kernel, block_size):
    T, Dv = v.shape
    n = lr.shape[0]
    m = max(1, (block_size or max(L, _DEFAULT_BLOCK)) // L)  # chunks per block
    m = min(m, n)
    nb = -(-n // m)
    B = m * L  # tokens per block
    Tp = nb * B
    phiq, phik = _phi(kernel, q), _phi(kernel, k)
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
    Cl = _cumsum(eta[:, :, None] * D, axis=1)
    P = jax.lax.associative_scan(jnp.multiply, alpha, axis=1)
    g = _cumsum(eta * P, axis=1)

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


# ----------------------------------------------------------------------------------------
# Public entry point
# ----------------------------------------------------------------------------------------


def ttt_linear(
    q: Float[ArrayLike, "T Dk"],
    k: Float[ArrayLike, "T Dk"],
    v: Float[ArrayLike, "T Dv"],
    *,
    chunk_size: int,
    w0: Float[ArrayLike, "Dh Dv"] | None = None,
    lr: Float[ArrayLike, ""] | Float[ArrayLike, " n_chunks"] = 1.0,
    momentum: Float[ArrayLike, ""] | Float[ArrayLike, " n_chunks"] = 0.0,
    form: Form = "parallel",
    kernel: SwiGLUKernel | None = None,
    update_kernel: bool = False,
    weight_norm: bool = False,
    block_size: int | None = None,
) -> Float[Array, "T Dv"]:
    """The TTT-KVB layer reduced to linear attention (Liu et al. 2026, Sec. 6.1), recurrent or
    chunk-wise parallel.

    Chunk t of length L (`chunk_size`; the last chunk may be shorter) takes one
    momentum-SGD step on `𝓛_t = −⟨φ(K_t) W, V_t⟩_F` and reads its output after the step:
    `ΔW_t = −φ(K_t)ᵀV_t + α_t ΔW_{t−1}`, `W_{t+1} = W_t − η_t ΔW_t`, `O_t = φ(Q_t) W_{t+1}`
    (App. H.2). Equivalently `O = φ(Q) W_0 + ((φ(Q)φ(K)ᵀ) ⊙ 𝒞^{↑L}) V` (App. H.1, see
    `accumulation_mask`). Unbatched; use `jax.vmap` for batches.

    **Arguments:**

    - `q`, `k`: queries and keys, `(T, Dk)`; `v`: values, `(T, Dv)`.
    - `chunk_size`: L ≥ 1, tokens per inner-loop step (1: token-level causal linear
      attention). T need not be a multiple of L.
    - `w0`: the initial fast weight `W_0`, `(Dh, Dv)` (Dh = Dk for the identity kernel,
      `kernel.d_hidden` otherwise); zeros if `None`.
    - `lr`, `momentum`: η and α per chunk, scalars or `(n_chunks,)` with
      `n_chunks = ceil(T / L)`. (α of the first chunk has no effect: ΔW_{−1} = 0.)
    - `form`: `"parallel"` (chunk-wise, on the scan backend) or `"recurrent"` (`lax.scan`
      over chunks, `jax.grad` of the inner loss).
    - `kernel`: `None` (identity φ) or a `SwiGLUKernel` (static; differentiable).
    - `update_kernel`: also update φ's weights by the same momentum SGD (App. I.1);
      recurrent form only.
    - `weight_norm`: after each update rescale every column of W (and, with
      `update_kernel`, of the kernel weights) to its initial ℓ2 norm, as LaCT does (App.
      E.4); recurrent form only. Needs non-zero initial columns.
    - `block_size`: parallel form only: tokens per block of the dense intra-block product,
      rounded down to whole chunks (at least one); default `max(L, 64)`.

    **Returns:** the outputs `O`, `(T, Dv)`.

    Example:
    ```python
    q, k, v = jax.random.normal(jax.random.key(0), (3, 100, 8))
    o = dsr.ttt_linear(q, k, v, chunk_size=16, lr=0.1, momentum=0.9)
    o_ref = dsr.ttt_linear(q, k, v, chunk_size=16, lr=0.1, momentum=0.9, form="recurrent")
    ```

    References: Theorem 3, Sec. 5.3, 6.1–6.2 and App. E, H, I of *TTT with KV binding is
    secretly linear attention* (Liu et al. (2026)).
    """
    chunk_size = check_int("chunk_size", chunk_size, 1)
    block_size = check_optional_int("block_size", block_size, 1)
    if kernel is not None and not isinstance(kernel, SwiGLUKernel):
        raise ValueError(
            "`kernel` must be None (identity) or a `SwiGLUKernel`; got "
            f"{kernel!r}. (The string 'swiglu' is for `TTTLinear(kernel=...)`.)"
        )
    check_form(form, update_kernel, weight_norm, kernel)
    q, k, v = jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)
    if q.ndim != 2:
        raise ValueError(f"`q` must have shape (T, Dk); got {q.shape}.")
    if q.shape[0] < 1:
        raise ValueError("`q` must have at least one token (T ≥ 1).")
    if k.shape != q.shape:
        raise ValueError(f"`k` must have the shape of `q`, {q.shape}; got {k.shape}.")
    if v.ndim != 2 or v.shape[0] != q.shape[0]:
        raise ValueError(f"`v` must have shape (T, Dv) with T = {q.shape[0]}; got {v.shape}.")
    T, Dk = q.shape
    Dv = v.shape[1]
    if kernel is not None and kernel.d_key != Dk:
        raise ValueError(
            f"`kernel` weights must have shape ({Dk}, d_hidden) to match `q`; "
            f"got {kernel.w_gate.shape}."
        )
    Dh = Dk if kernel is None else kernel.d_hidden
    leaves = [q, k, v, lr, momentum] + ([] if w0 is None else [w0])
    leaves += [] if kernel is None else [kernel.w_gate, kernel.w_up]
    dtype = jnp.result_type(*leaves)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(float)
    q, k, v = q.astype(dtype), k.astype(dtype), v.astype(dtype)
    if w0 is None:
        w0 = jnp.zeros((Dh, Dv), dtype)
    else:
        w0 = jnp.asarray(w0, dtype)
        if w0.shape != (Dh, Dv):
            raise ValueError(
                f"`w0` must have shape (Dh, Dv) = ({Dh}, {Dv}) "
                f"({'Dh = Dk' if kernel is None else 'Dh = kernel.d_hidden'}); got {w0.shape}."
            )
    if kernel is not None:
        kernel = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), kernel)
    n = -(-T // chunk_size)
    lr = _per_chunk("lr", lr, n, dtype)
    momentum = _per_chunk("momentum", momentum, n, dtype)
    if form == "recurrent":
        return _recurrent(q, k, v, w0, lr, momentum, chunk_size, kernel, update_kernel,
                          weight_norm)
    return _parallel(q, k, v, w0, lr, momentum, chunk_size, kernel, block_size)
