"""O(log T)-depth scans over affine maps, the parallel kernel of `linear_scan`.

Forward: step t is the map `z ↦ A_t z + b_t`. The maps of steps (2j, 2j+1) are composed
(`(A_{2j+1} A_{2j}, A_{2j+1} b_{2j} + b_{2j+1})`), the half-length problem is solved
recursively and one more step each gives the remaining states: the recursive-doubling scan
of `lax.associative_scan`, written out so that only what the trajectory needs is computed
(no prefix products of A, no padded interleaves). Reverse (the adjoint's transposed recurrence
`λ_{t-1} = g_{t-1} + A_tᵀ λ_t`): the mirror image in row-vector form `λᵀ ↦ λᵀ A_t + gᵀ`,
so A is never flipped or transposed (those copies cost a large share of the reverse scan;
docs: Performance, "Design measurements").

The small matrix products are batched matmuls or, for small M, unrolled multiply-and-sum
loops that XLA fuses into one elementwise kernel (`_auto.auto_combine`, chosen per backend
by measurement; docs: Performance).

For full matrices both scans keep every level in `split_order`: the pairs `(2j, 2j+1)` are the two contiguous
halves of the array, so no level slices with a stride (strided operands slow XLA:CPU's
products down several times); a caller that builds A itself can build it in that order.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

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


def split_order(n: int) -> np.ndarray:
    """The storage order in which every level's pairs `(2j, 2j+1)` are the two contiguous
    halves: `[2·s, 2·s + 1]` with s the order of the half-length level, recursively while
    the length is even (bit reversal for powers of two); natural order for odd n."""
    if n % 2 or n == 1:
        return np.arange(n)
    sub = split_order(n // 2)
    return np.concatenate([2 * sub, 2 * sub + 1])


def _split(n):
    return n > 1 and n % 2 == 0


def _halves(x, split, identity):
    """`(x_{2j}, x_{2j+1})`; natural storage pads an odd n with `identity` at the end."""
    if split:
        h = x.shape[0] // 2
        return x[:h], x[h:]
    if x.shape[0] % 2:
        x = jnp.concatenate([x, identity[None].astype(x.dtype)], axis=0)
    x = x.reshape((-1, 2) + x.shape[1:])
    return x[:, 0], x[:, 1]


def _neighbour(x, split, offset):
    """`x` at natural index `j + offset` (offset ±1) for every j, zero past either end."""
    h = x.shape[0]
    zero = jnp.zeros_like(x[:1])
    if not split:
        return jnp.concatenate([zero, x[:-1]] if offset < 0 else [x[1:], zero], axis=0)
    nat = split_order(h)
    pos = np.argsort(nat)
    other = nat + offset
    idx = np.where((other >= 0) & (other < h), pos[np.clip(other, 0, h - 1)], h)
    return jnp.take(jnp.concatenate([x, zero], axis=0), idx, axis=0, unique_indices=False)


def _assemble(even, odd, split, n):
    if split:
        return jnp.concatenate([even, odd], axis=0)
    return jnp.stack([even, odd], axis=1).reshape((-1,) + even.shape[1:])[:n]


def _identity(A, full):
    M = A.shape[-1]
    return (jnp.eye(M) if full else jnp.ones((M,))), jnp.zeros((M,))


def associative_forward(A, b, full: bool, combine: Combine, stored: bool = False):
    """`z_t = A_t z_{t-1} + b_t` from `z_0 = 0` (fold a nonzero z_0 into b_1 first).

    `stored`: A and b are given, and z returned, in `split_order(T)` (a caller that builds
    A itself, as DEER does, saves the T·M² gather)."""
    return _entry(_forward, A, b, full, combine, stored)


def associative_reverse(A, g, full: bool, combine: Combine, stored: bool = False):
    """`λ_{t-1} = g_{t-1} + A_tᵀ λ_t` from `λ_T = 0`; returns `(λ_0, …, λ_{T-1})`
    (`stored`: as `associative_forward`)."""
    return _entry(_reverse, A, g, full, combine, stored)


def _entry(kernel, A, b, full, combine, stored):
    """Run `kernel` in split storage for full A (diagonal A: natural order, whose strided
    slices fuse into the elementwise combine and measured as fast), converting the order of
    the inputs and the result as `stored` asks."""
    n = b.shape[0]
    if not _split(n):
        return kernel(A, b, full, combine, False)
    order = split_order(n)
    if full:
        if stored:
            # The barrier keeps XLA from moving the halves' slices in front of the reshape
            # that made A (T, M, M) (DEER's Jacobians come from a (T, M²) matmul): a slice of
            # that reshape is not fused into the combine, so one half was copied every level.
            return kernel(jax.lax.optimization_barrier(A), b, full, combine, True)
        A, b = jnp.take(A, order, axis=0), jnp.take(b, order, axis=0)
        return jnp.take(kernel(A, b, full, combine, True), np.argsort(order), axis=0)
    if not stored:
        return kernel(A, b, full, combine, False)
    inverse = np.argsort(order)
    A, b = jnp.take(A, inverse, axis=0), jnp.take(b, inverse, axis=0)
    return jnp.take(kernel(A, b, full, combine, False), order, axis=0)


def _level(A, b, full, combine, split, reverse):
    """One level of the scan, stored in `split_order` (`split`) or naturally.

    Forward (`z ↦ A_t z + b_t`): the maps of steps (2j, 2j+1) are composed to
    `(A_{2j+1} A_{2j}, A_{2j+1} b_{2j} + b_{2j+1})`, the half-length level gives z at the odd
    steps and one more step each, from `z_{2j−1}`, gives the even ones. Reverse
    (`λᵀ ↦ λᵀ A_t + gᵀ`, row-vector form, so A is never flipped or transposed): the roles of
    the two halves swap — pairs compose to `(A_{2j+1} A_{2j}, g_{2j+1} A_{2j} + g_{2j})`, the
    half-length level gives λ at the even steps and one more step each, from `λ_{2j+2}`,
    gives the odd ones. In both, `first` is the half the recursion does not solve."""
    n = b.shape[0]
    if n == 1:
        return b
    eyeA, zero = _identity(A, full)
    (Ae, Ao), (be, bo) = _halves(A, split, eyeA), _halves(b, split, zero)
    sub = split and _split(n // 2)

    def apply(X, y):  # one step's linear part: X y (forward) or yᵀ X (reverse)
        if not full:
            return X * y
        return vecmat(y, X, combine) if reverse else matvec(X, y, combine)

    (A1, b1), (A2, b2) = ((Ao, bo), (Ae, be)) if reverse else ((Ae, be), (Ao, bo))
    pair = matmul(Ao, Ae, combine) if full else Ao * Ae
    x2 = _level(pair, apply(A2, b1) + b2, full, combine, sub, reverse)
    x1 = apply(A1, _neighbour(x2, sub, +1 if reverse else -1)) + b1
    return _assemble(x2, x1, split, n) if reverse else _assemble(x1, x2, split, n)


_forward = functools.partial(_level, reverse=False)
_reverse = functools.partial(_level, reverse=True)
