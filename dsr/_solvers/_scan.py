"""Shared scan backend: the linear recurrence `z_t = A_t z_{t-1} + b_t`.

One primitive serves DEER (each Newton step and the adjoint), the LSSM and the
TTT / linear-attention layer. `A_t` is either full (`(T, M, M)`) or diagonal (`(T, M)`);
the method is a strategy:

- `"sequential"`: `lax.scan`, depth T, work T·M² (full) or T·M (diagonal).
- `"associative"`: `lax.associative_scan` over affine maps `(A₂A₁, A₂b₁ + b₂)`,
  depth O(log T), work O(T·M³) (full); see `_associative.py` (its small-M unrolled combine
  and the reverse scan without flipped or transposed copies).
- `"chunked"`: the chunk-wise parallel form of Behrouz et al. /
  Liu et al. (2026), "Test-Time Training with KV Binding Is Secretly Linear Attention", App. H.
  T is split into chunks of length c. Diagonal: inside a chunk the contribution of
  step i to step j is the dense decay mask `C[j, i] = Π_{i<k≤j} a_k` (built by cumulative
  products, never by dividing them, so negative or zero multipliers are fine), applied as
  one batched product; full: the chunk's affine maps are composed by a short scan inside
  every chunk (all chunks at once). A scan over the T/c chunk summaries carries the state
  across chunks, and a last dense step fixes up every position. Depth c + T/c.
- `"auto"`: the fastest measured choice for the backend and size (`_auto.py`: a table of
  measured choices per backend, `benchmarks.scan` and the documentation's Performance page).

The reverse (transposed) recurrence `λ_{t-1} = g_{t-1} + A_tᵀ λ_t` is the same problem in
reversed time with transposed multipliers; it is what adjoints need. Reverse-mode
gradients of `linear_scan` are themselves one reverse scan (a custom VJP), so no method
stores its intermediate levels for backprop.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._associative import associative_forward, associative_reverse
from ._auto import auto_combine, auto_method as auto_method

ScanMethod = Literal["auto", "sequential", "associative", "chunked"]
#: The scan methods (the one list: `DEER(scan_method=...)` and the benchmarks read it).
METHODS: tuple[str, ...] = get_args(ScanMethod)


def _is_full(A, b) -> bool:
    if A.shape == b.shape:
        return False
    if A.shape == b.shape + (b.shape[-1],):
        return True
    raise ValueError(
        f"`A` must have shape {b.shape} (diagonal) or {b.shape + (b.shape[-1],)} (full) "
        f"to match `b` of shape {b.shape}; got {A.shape}."
    )


def default_chunk_size(T: int) -> int:
    """A power of two near √T, clipped to [4, 64]: balances depth c against T/c."""
    c = 2 ** round(math.log2(max(math.sqrt(T), 1.0)))
    return int(min(max(c, 4), 64))


# ----------------------------------------------------------------------------------------
# Forward kernels, all for unbatched A (T, M[, M]), b (T, M), z0 (M,); return z (T, M).
# ----------------------------------------------------------------------------------------


def _sequential(A, b, z0, full):
    def body(z, ab):
        a, bt = ab
        z = (a @ z if full else a * z) + bt
        return z, z

    _, zs = jax.lax.scan(body, z0, (A, b))
    return zs


def _fold_z0(A, b, z0, full):
    first = (A[0] @ z0) if full else A[0] * z0
    return b.at[0].add(first)


def _associative(A, b, z0, full):
    b = _fold_z0(A, b, z0, full)
    return associative_forward(A, b, full, auto_combine(b.shape[-1]))


def decay_mask(a: Float[Array, "c *d"]) -> Float[Array, "c c *d"]:
    """`C[j, i] = Π_{k=i+1}^{j} a_k` for `i ≤ j`, else 0 (the decay mask of
    Liu et al., App. H).

    Built by a cumulative product over j of `where(k > i, a_k, 1)`: no division, so
    negative and zero multipliers are exact. The product is a log-depth associative scan:
    `jnp.cumprod` lowers to a `reduce_window` that costs O(c) per entry on CPU.
    """
    c = a.shape[0]
    idx = jnp.arange(c)
    later = (idx[:, None] > idx[None, :]).reshape((c, c) + (1,) * (a.ndim - 1))
    X = jnp.where(later, a[:, None], jnp.ones_like(a[:, None]))
    C = jax.lax.associative_scan(jnp.multiply, X, axis=0)
    keep = (idx[:, None] >= idx[None, :]).reshape((c, c) + (1,) * (a.ndim - 1))
    return jnp.where(keep, C, jnp.zeros_like(C))


def _pad_chunks(A, b, c, full):
    T, M = b.shape
    n = -(-T // c)
    pad = n * c - T
    if pad:
        eye = jnp.broadcast_to(jnp.eye(M, dtype=A.dtype) if full else jnp.ones(M, A.dtype),
                               (pad,) + A.shape[1:])
        A = jnp.concatenate([A, eye], axis=0)
        b = jnp.concatenate([b, jnp.zeros((pad, M), b.dtype)], axis=0)
    return A.reshape((n, c) + A.shape[1:]), b.reshape(n, c, M), n


def _chunked(A, b, z0, full, chunk_size):
    T, M = b.shape
    c = min(chunk_size or default_chunk_size(T), T)
    b = _fold_z0(A, b, z0, full)
    Ac, bc, n = _pad_chunks(A, b, c, full)
    if full:
        # Compose inside every chunk (all chunks at once): P_j = A_j ⋯ A_1, local states.
        def body(carry, ab):
            P, z = carry
            a, bt = ab
            P = jnp.einsum("nij,njk->nik", a, P)
            z = jnp.einsum("nij,nj->ni", a, z) + bt
            return (P, z), (P, z)

        eye = jnp.broadcast_to(jnp.eye(M, dtype=A.dtype), (n, M, M))
        _, (P, zloc) = jax.lax.scan(
            body, (eye, jnp.zeros((n, M), b.dtype)),
            (jnp.moveaxis(Ac, 1, 0), jnp.moveaxis(bc, 1, 0)),
        )
        P = jnp.moveaxis(P, 0, 1)  # (n, c, M, M)
        zloc = jnp.moveaxis(zloc, 0, 1)  # (n, c, M)
    else:
        C = jax.vmap(decay_mask)(Ac)  # (n, c, c, M)
        zloc = jnp.einsum("njim,nim->njm", C, bc)
        P = jnp.cumprod(Ac, axis=1)  # (n, c, M)
    # Carry states across chunks: s_k = P_k,last s_{k-1} + zloc_k,last.
    starts = _sequential(P[:, -1], zloc[:, -1], jnp.zeros(M, b.dtype), full)
    starts = jnp.concatenate([jnp.zeros((1, M), b.dtype), starts[:-1]], axis=0)
    if full:
        z = zloc + jnp.einsum("ncij,nj->nci", P, starts)
    else:
        z = zloc + P * starts[:, None, :]
    return z.reshape(n * c, M)[:T]


def _forward_impl(A, b, z0, full, method, chunk_size):
    T, M = b.shape
    if method == "auto":
        method = auto_method(T, M, full)
    if method == "sequential":
        return _sequential(A, b, z0, full)
    if method == "associative":
        return _associative(A, b, z0, full)
    return _chunked(A, b, z0, full, chunk_size)


def _sequential_reverse(A, g, lamT, full):
    # λ_{t-1} = g_{t-1} + A_tᵀ λ_t in place (`lax.scan(reverse=True)`, `λ @ A_t`): no flipped
    # or transposed copy of A (docs: Performance, "Design measurements").
    def body(lam, ag):
        a, gt = ag
        lam = (lam @ a if full else a * lam) + gt
        return lam, lam

    _, lams = jax.lax.scan(body, lamT, (A, g), reverse=True)
    return lams


def _reverse_impl(A, g, lamT, full, method, chunk_size):
    T, M = g.shape
    method = auto_method(T, M, full) if method == "auto" else method
    if method == "sequential":
        return _sequential_reverse(A, g, lamT, full)
    last = (lamT @ A[-1]) if full else A[-1] * lamT  # fold λ_T into g_{T-1}
    g = g.at[-1].add(last)
    if method == "associative":
        # Row-vector combine and a suffix scan: no flipped or transposed copy of A.
        return associative_reverse(A, g, full, auto_combine(M))
    A = jnp.flip(A, axis=0)
    A = jnp.swapaxes(A, -1, -2) if full else A
    zero = jnp.zeros_like(lamT)
    return jnp.flip(_forward_impl(A, jnp.flip(g, 0), zero, full, method, chunk_size), 0)


def _differentiable(impl, bwd):
    """`impl(A, b, x0, full, method, chunk_size)` as a `jax.custom_vjp` (differentiable in
    `A, b, x0`) that saves `(A, x, x0)` and runs `bwd(full, method, chunk_size, (A, x, x0),
    cotangent)`: the forward and the reverse scan are each other's adjoint."""
    core = jax.custom_vjp(impl, nondiff_argnums=(3, 4, 5))

    def fwd(A, b, x0, full, method, chunk_size):
        x = impl(A, b, x0, full, method, chunk_size)
        return x, (A, x, x0)

    core.defvjp(fwd, bwd)
    return core


def _adjoint(A, g, full, method, chunk_size):
    """Adjoint of `z_t = A_t z_{t-1} + b_t` for output cotangents `g` (t = 1..T):
    `μ_t = g_t + A_{t+1}ᵀ μ_{t+1}`, `μ_T = g_T`. Returns `(μ, A_1ᵀ μ_1)`, the cotangents of
    `b` and `z0`. The reverse scan gives `λ_{t-1} = g'_{t-1} + A_tᵀ λ_t` with `λ_T = g_T`
    and `g' = (0, g_1, …, g_{T-1})`, so `μ = (λ_1, …, λ_{T-1}, g_T)` and `λ_0 = A_1ᵀ μ_1`."""
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    lam = _scan_core_reverse(A, gshift, g[-1], full, method, chunk_size)
    return jnp.concatenate([lam[1:], g[-1:]], axis=0), lam[0]


def adjoint_scan(A, g, *, method: ScanMethod = "auto", chunk_size: int | None = None):
    """`_adjoint` for unbatched `A` (full `(T, M, M)` or diagonal `(T, M)`) and `g` `(T, M)`."""
    return _adjoint(A, g, _is_full(A, g), method, chunk_size)


def _scan_bwd(full, method, chunk_size, res, g):
    A, z, z0 = res
    mu, dz0 = _adjoint(A, g, full, method, chunk_size)
    zprev = jnp.concatenate([z0[None], z[:-1]], axis=0)
    dA = mu[:, :, None] * zprev[:, None, :] if full else mu * zprev
    return dA, mu, dz0


def _scan_rev_bwd(full, method, chunk_size, res, h):
    A, lam, lamT = res
    # The cotangent ν of λ runs forward: ν_0 = h_0, ν_k = A_k ν_{k-1} + h_k; one more step
    # (offset 0) gives the λ_T cotangent A_T ν_{T-1}. dA_k = λ_k ν_{k-1}ᵀ (outer product).
    hshift = jnp.concatenate([h[1:], jnp.zeros_like(h[:1])], axis=0)
    nu_next = _scan_core(A, hshift, h[0], full, method, chunk_size)
    nu = jnp.concatenate([h[:1], nu_next[:-1]], axis=0)
    lam_next = jnp.concatenate([lam[1:], lamT[None]], axis=0)
    dA = lam_next[:, :, None] * nu[:, None, :] if full else lam_next * nu
    return dA, nu, nu_next[-1]


_scan_core = _differentiable(_forward_impl, _scan_bwd)
_scan_core_reverse = _differentiable(_reverse_impl, _scan_rev_bwd)


def linear_scan(
    A: Float[Array, "*batch T M"] | Float[Array, "*batch T M M"],
    b: Float[Array, "*batch T M"],
    z0: Float[Array, "*batch M"] | None = None,
    *,
    method: ScanMethod = "auto",
    reverse: bool = False,
    chunk_size: int | None = None,
) -> Float[Array, "*batch T M"]:
    """Solve a linear recurrence with time-varying full or diagonal multipliers.

    Forward (`reverse=False`): `z_t = A_t z_{t-1} + b_t` for t = 1..T from `z0`; returns
    `(z_1, …, z_T)`.

    Reverse (`reverse=True`), the transposed problem used by adjoints:
    `λ_{t-1} = b_{t-1} + A_tᵀ λ_t` for t = T..1 from `λ_T = z0`; here `b` holds
    `(g_0, …, g_{T-1})` and the result is `(λ_0, …, λ_{T-1})`.

    **Arguments:**

    - `A`: multipliers `(A_1, …, A_T)`, full `(*batch, T, M, M)` or diagonal `(*batch, T, M)`.
    - `b`: offsets, `(*batch, T, M)`.
    - `z0`: initial (or, reversed, terminal) state `(*batch, M)`; zeros if `None`.
    - `method`: `"sequential"`, `"associative"`, `"chunked"` or `"auto"`.
    - `reverse`: solve the reversed, transposed recurrence.
    - `chunk_size`: chunk length for `"chunked"` (default ≈ √T); T need not be a multiple.

    **Returns:** the states, same shape as `b`.

    Example:
    ```python
    z = dsr.linear_scan(jnp.full((5, 2), 0.5), jnp.ones((5, 2)), method="chunked")
    ```
    """
    A = jnp.asarray(A)
    b = jnp.asarray(b)
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}; got {method!r}.")
    if b.ndim < 2:
        raise ValueError(f"`b` must have shape (*batch, T, M); got {b.shape}.")
    if b.shape[-2] < 1:
        raise ValueError("`b` must have at least one time step (T ≥ 1).")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"`chunk_size` must be a positive int; got {chunk_size!r}.")
    full = _is_full(A, b)
    dtype = jnp.result_type(A, b) if z0 is None else jnp.result_type(A, b, z0)
    A = A.astype(dtype)
    b = b.astype(dtype)
    if z0 is None:
        z0 = jnp.zeros(b.shape[:-2] + b.shape[-1:], dtype)
    else:
        z0 = jnp.asarray(z0, dtype)
        if z0.shape != b.shape[:-2] + b.shape[-1:]:
            raise ValueError(
                f"`z0` must have shape {b.shape[:-2] + b.shape[-1:]}; got {z0.shape}."
            )
    core = _scan_core_reverse if reverse else _scan_core

    def fn(A, b, z0):
        return core(A, b, z0, full, method, chunk_size)

    for _ in range(b.ndim - 2):
        fn = jax.vmap(fn)
    return fn(A, b, z0)
