"""Choosing a delay embedding `(m, τ)` for a one-channel recording from the data.

The documented rule (Fraser & Swinney (1986), *Phys. Rev. A* 33, 1134; Kennel, Brown &
Abarbanel (1992), *Phys. Rev. A* 45, 3403):

- `τ`: the first local minimum of the time-delayed mutual information `I(x_t; x_{t+τ})`
  (a 32-bin histogram estimate), searched up to `max_tau`; if there is none, the first `τ`
  where `I` falls below `I(1)/e`, else `max_tau`;
- `m`: the smallest `m ≤ max_dim` whose fraction of false nearest neighbours (a neighbour in
  `m` dimensions whose distance grows by more than `R_TOL ×` in `m + 1`, or beyond
  `A_TOL ×` the series' std) is below `FNN_FRACTION`; if none is, the `m` with the lowest
  fraction.
"""

from __future__ import annotations

import numpy as np

R_TOL = 10.0
A_TOL = 2.0
FNN_FRACTION = 0.05
MI_BINS = 32


def mutual_information(x, max_tau: int) -> np.ndarray:
    """`I(x_t; x_{t+τ})` in nats for `τ = 0..max_tau` (histogram estimate)."""
    x = np.asarray(x, np.float64).ravel()
    edges = np.linspace(x.min(), x.max() + 1e-12, MI_BINS + 1)
    b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, MI_BINS - 1)
    out = np.empty(max_tau + 1)
    for tau in range(max_tau + 1):
        joint = np.bincount(b[:len(b) - tau] * MI_BINS + b[tau:], minlength=MI_BINS ** 2)
        p = joint.reshape(MI_BINS, MI_BINS) / joint.sum()
        px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
        nz = p > 0
        out[tau] = float(np.sum(p[nz] * np.log(p[nz] / (px @ py)[nz])))
    return out


def choose_tau(x, max_tau: int = 100) -> int:
    """The delay `τ` of the rule above."""
    mi = mutual_information(x, max_tau)
    for t in range(1, max_tau):
        if mi[t] < mi[t - 1] and mi[t] <= mi[t + 1]:
            return t
    below = np.flatnonzero(mi[1:] < mi[1] / np.e)
    return int(below[0]) + 1 if below.size else max_tau


def _embed(x: np.ndarray, m: int, tau: int) -> np.ndarray:
    n = len(x) - (m - 1) * tau
    return np.stack([x[(m - 1 - j) * tau:(m - 1 - j) * tau + n] for j in range(m)], 1)


def false_neighbours(x, m: int, tau: int, n_points: int = 2000, seed: int = 0) -> float:
    """The fraction of false nearest neighbours of `m`-dimensional delay vectors."""
    from scipy.spatial import cKDTree

    x = np.asarray(x, np.float64).ravel()
    full = _embed(x, m + 1, tau)  # column 0 is the newest value x_t
    now, nxt = full[:, 1:], full[:, 0]
    idx = np.random.default_rng(seed).choice(len(now), min(n_points, len(now)), replace=False)
    dist, nn = cKDTree(now).query(now[idx], k=2)
    d, j = dist[:, 1], nn[:, 1]
    grow = np.abs(nxt[idx] - nxt[j])
    false = (grow > R_TOL * np.maximum(d, 1e-12)) | (np.hypot(d, grow) > A_TOL * x.std())
    return float(np.mean(false))


def choose_embedding(x, *, max_dim: int = 10, max_tau: int = 100) -> tuple[int, int]:
    """`(m, τ)` for a one-channel series `x` by the documented rule (module docstring).

    **Arguments:** `x`: a series (T,) or (T, 1); `max_dim`, `max_tau`: search limits.

    **Returns:** `(m, tau)`, integers ≥ 1.
    """
    x = np.asarray(x, np.float64)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise ValueError(f"`x` must be one channel, (T,) or (T, 1); got shape {x.shape}.")
    if len(x) < 10 * max_tau:
        raise ValueError(f"`x` has {len(x)} steps; choosing an embedding needs at least "
                         f"10 × max_tau = {10 * max_tau}.")
    tau = choose_tau(x, max_tau)
    fractions = [false_neighbours(x, m, tau) for m in range(1, max_dim + 1)]
    ok = [m for m, f in zip(range(1, max_dim + 1), fractions) if f < FNN_FRACTION]
    return (ok[0] if ok else int(np.argmin(fractions)) + 1), tau
