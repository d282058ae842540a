"""Exact Gaussian moments of LDS observations given the system (Isserlis' theorem).

Given `(A, c, Σ_w, σ_v)`, `y = (y_1 … y_T)` is a zero-mean Gaussian vector with covariance

    K_ab = c Cov(x_a, x_b) cᵀ + σ_v² δ_ab,   Cov(x_a, x_b) = A^{a−b} P_b  (a ≥ b),
    P_0 = I,   P_{t+1} = A P_t Aᵀ + Σ_w,

and every moment is a sum over pairings of products of `K` entries (Isserlis / Wick), the
tool of Vladarean, Zhang, Sra (2026), Theorem 4.1. `ar1_moments` gives the two
expectations of Theorem 4.1's step size conditionally on each system, so a Monte Carlo
estimate of `η*` only has to average over systems (Rao–Blackwellization), not over noise.
All in NumPy float64.
"""

from __future__ import annotations

import numpy as np


def observation_covariance(A, C, Sigma_w, sigma_v, n_steps: int) -> np.ndarray:
    """The covariance `K` `(B, T, T)` of `(y_1 … y_T)` for systems `A (B, d, d)`,
    `C (B, 1, d)`, `Sigma_w (B, d, d)`, `sigma_v` (scalar or `(B,)`), prior `x_0 ~ N(0, I)`."""
    A, Q = np.asarray(A, np.float64), np.asarray(Sigma_w, np.float64)
    c = np.asarray(C, np.float64)[:, 0]
    B, d = c.shape
    r2 = np.broadcast_to(np.asarray(sigma_v, np.float64) ** 2, (B,))
    K = np.zeros((B, n_steps, n_steps))
    P = np.broadcast_to(np.eye(d), (B, d, d)).copy()
    for b in range(n_steps):
        z = np.einsum("bij,bj->bi", P, c)  # Cov(x_a, x_b) cᵀ, walked forward in a
        for a in range(b, n_steps):
            K[:, a, b] = K[:, b, a] = np.einsum("bi,bi->b", c, z)
            z = np.einsum("bij,bj->bi", A, z)
        P = A @ P @ np.swapaxes(A, -1, -2) + Q
    idx = np.arange(n_steps)
    K[:, idx, idx] += r2[:, None]
    return K


def _pairings(items):
    """All perfect matchings of a list of even length (15 for six items)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for k in range(len(rest)):
        for tail in _pairings(rest[:k] + rest[k + 1:]):
            yield [(first, rest[k])] + tail


def gaussian_moment(K: np.ndarray, indices) -> np.ndarray:
    """`E[y_{i_1} ⋯ y_{i_{2m}}]` for `y ~ N(0, K)` (batched `K (B, T, T)`), by Isserlis'
    theorem. `indices` are integers or broadcastable integer arrays (for grids of moments);
    returns `(B,) + broadcast shape`."""
    idx = np.broadcast_arrays(*(np.asarray(i) for i in indices))
    total = 0.0
    for pairing in _pairings(list(range(len(idx)))):
        term = 1.0
        for p, q in pairing:
            term = term * K[:, idx[p], idx[q]]
        total = total + term
    return total


def ar1_moments(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per system, `E[f y_T]` and `E[f²]` for Theorem 4.1's feature
    `f = y_{T−1} S / (T−2)`, `S = Σ_{i=1}^{T−2} y_i y_{i+1}` (0-based: `u = T−2`, `w = T−1`)."""
    T = K.shape[-1]
    u, w = T - 2, T - 1
    i = np.arange(T - 2)
    m4 = gaussian_moment(K, (u, w, i, i + 1)).sum(-1)
    ii, jj = i[:, None], i[None, :]
    m6 = gaussian_moment(K, (u, u, ii, ii + 1, jj, jj + 1)).sum((-1, -2))
    return m4 / (T - 2), m6 / (T - 2) ** 2

