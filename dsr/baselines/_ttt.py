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

from typing import Literal

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_int, check_optional_int
from ._ttt_kernel import SwiGLUKernel
from ._ttt_parallel import parallel_form
from ._ttt_recurrent import recurrent_form

Form = Literal["parallel", "recurrent"]
_FORMS = ("parallel", "recurrent")


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
        return recurrent_form(q, k, v, w0, lr, momentum, chunk_size, kernel, update_kernel,
                              weight_norm)
    return parallel_form(q, k, v, w0, lr, momentum, chunk_size, kernel, block_size)
