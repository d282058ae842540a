"""O(log T)-depth scans over affine maps, the parallel kernel of `linear_scan`.

Forward: step t is the map `z ↦ A_t z + b_t`. The maps of steps (2j, 2j+1) are composed
(`(A_{2j+1} A_{2j}, A_{2j+1} b_{2j} + b_{2j+1})`), the half-length problem is solved
recursively and one more step each gives the remaining states: the recursive-doubling scan
of `lax.associative_scan`, written out so that only what the trajectory needs is computed
(no prefix products of A, no padded interleaves; 1.3–1.7× faster than
`lax.associative_scan` on CPU at T = 32,768). Reverse (the adjoint's transposed recurrence
`λ_{t-1} = g_{t-1} + A_tᵀ λ_t`): the mirror image in row-vector form `λᵀ ↦ λᵀ A_t + gᵀ`,
so A is never flipped or transposed (those copies were ≈ 30% of the reverse scan at M = 16).

The small matrix products are batched matmuls or, for small M, unrolled multiply-and-sum
loops that XLA fuses into one elementwise kernel (`_auto.auto_combine`; XLA:CPU's batched
dot is slow for 4 ≤ M ≤ 6: 7–10× slower than the unrolled form at M = 4).
"""

from __future__ import annotations

import jax.numpy as jnp

Combine = str  # "matmul" or "unrolled"


def matmul(X, Y, combine: Combine):
    """`X @ Y` over leading batch axes; `"unrolled"`: a sum of M broadcast products."""
    if combine == "matmul":
        return X @ Y
    out = X[..., :, 0:1] * Y[..., 0:1, :]
    for k in range(1, X.shape[-1]):
        out = out + X[..., :, k : k + 1] * Y[..., k : k + 1, :]
    return out


def matvec(X, y, combine: Combine):
    """`X @ y` (column vector y) over leading batch axes."""
    if combine == "matmul":
        return jnp.einsum("...ij,...j->...i", X, y)
    out = X[..., :, 0] * y[..., 0:1]
    for k in range(1, X.shape[-1]):
        out = out + X[..., :, k] * y[..., k : k + 1]
    return out


def vecmat(y, X, combine: Combine):
    """`yᵀ X` (row vector y) over leading batch axes."""
    if combine == "matmul":
        return jnp.einsum("...j,...jk->...k", y, X)
    out = y[..., 0:1] * X[..., 0, :]
    for k in range(1, X.shape[-2]):
        out = out + y[..., k : k + 1] * X[..., k, :]
    return out


def _pairs(x, identity):
    """`(x_{2j}, x_{2j+1})` for j < ⌈n/2⌉, padding an odd n with `identity` at the end."""
    if x.shape[0] % 2:
        x = jnp.concatenate([x, identity[None].astype(x.dtype)], axis=0)
    x = x.reshape((-1, 2) + x.shape[1:])
    return x[:, 0], x[:, 1]


def _interleave(even, odd, n):
    """`(even_0, odd_0, even_1, odd_1, …)`, the first n."""
    return jnp.stack([even, odd], axis=1).reshape((-1,) + even.shape[1:])[:n]


def _identity(A, full):
    M = A.shape[-1]
    return (jnp.eye(M) if full else jnp.ones((M,))), jnp.zeros((M,))


def associative_forward(A, b, full: bool, combine: Combine):
    """`z_t = A_t z_{t-1} + b_t` from `z_0 = 0` (fold a nonzero z_0 into b_1 first), by
    recursive pairing: the maps of steps (2j, 2j+1) are composed, the half-length problem
    gives z at the odd steps, one more step each gives the even ones. Depth O(log T)."""
    n = b.shape[0]
    if n == 1:
        return b
    eyeA, zero = _identity(A, full)
    (Ae, Ao), (be, bo) = _pairs(A, eyeA), _pairs(b, zero)
    if full:
        zo = associative_forward(matmul(Ao, Ae, combine), matvec(Ao, be, combine) + bo,
                                 full, combine)  # fmt: skip
    else:
        zo = associative_forward(Ao * Ae, Ao * be + bo, full, combine)
    zprev = jnp.concatenate([jnp.zeros_like(zo[:1]), zo[:-1]], axis=0)  # z_{2j-1}
    ze = (matvec(Ae, zprev, combine) if full else Ae * zprev) + be
    return _interleave(ze, zo, n)


def associative_reverse(A, g, full: bool, combine: Combine):
    """`λ_{t-1} = g_{t-1} + A_tᵀ λ_t` from `λ_T = 0`; returns `(λ_0, …, λ_{T-1})`.

    The mirror image of `associative_forward` in row-vector form (`λᵀ ↦ λᵀ A_t + gᵀ`,
    pairs composed as `(A_{2j+1} A_{2j}, g_{2j+1} A_{2j} + g_{2j})`), so A is never
    flipped or transposed."""
    n = g.shape[0]
    if n == 1:
        return g
    eyeA, zero = _identity(A, full)
    (Ae, Ao), (ge, go) = _pairs(A, eyeA), _pairs(g, zero)
    if full:
        lam_e = associative_reverse(matmul(Ao, Ae, combine), vecmat(go, Ae, combine) + ge,
                                    full, combine)  # fmt: skip
    else:
        lam_e = associative_reverse(Ao * Ae, Ae * go + ge, full, combine)
    lam_next = jnp.concatenate([lam_e[1:], jnp.zeros_like(lam_e[:1])], axis=0)  # λ_{2j+2}
    lam_o = (vecmat(lam_next, Ao, combine) if full else Ao * lam_next) + go
    return _interleave(lam_e, lam_o, n)
