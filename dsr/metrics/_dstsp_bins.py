r"""The binning estimator of D_stsp, as in the GTF authors' code (the literature-compatible one).

Hess, Monfared, Brenner & Durstewitz, "Generalized Teacher Forcing for Learning Chaotic
Dynamics", ICML 2023 (arXiv:2306.04406), and its code release (`DurstewitzLab/GTF-shPLRNN`,
`src/measures/stsp_measure.jl`); Brenner et al., "Tractable dendritic RNNs for reconstructing
nonlinear dynamical systems", ICML 2022. Each orbit is binned into an `n_bins`-per-axis
histogram on the box `[min − σ/10, max + σ/10]` of the *true* orbit (per dimension, σ its
sample standard deviation), both histograms get Laplace smoothing
`p_k = (h_k + α) / (Σ h + α K)` with `α = 10⁻⁵` over all `K = n_bins^N` cells, and
`D_stsp = Σ_k p_k log(p_k / q_k)`. Bins are closed on the left; generated points outside the
box are dropped.

The `K` cells are never stored: only occupied cells are counted, and the `K − (occupied)`
empty cells, which all have the same smoothed masses, are added in closed form — exact, and
possible for any `N` (the GTF code uses it for `N < 6` and a Gaussian mixture above).
"""

from __future__ import annotations

import numpy as np

LAPLACE_ALPHA = 1e-5


def histogram_edges(x_true: np.ndarray, n_bins: int) -> list[np.ndarray]:
    """Per-dimension bin edges: `n_bins + 1` points from `min − σ/10` to `max + σ/10`."""
    sd = x_true.std(axis=0, ddof=1)
    lo = x_true.min(axis=0) - 0.1 * sd
    hi = x_true.max(axis=0) + 0.1 * sd
    return [np.linspace(lo[i], hi[i], n_bins + 1) for i in range(x_true.shape[1])]


def _cells(x: np.ndarray, edges: list[np.ndarray]) -> np.ndarray:
    """Integer cell coordinates (T_in, N) of the points inside the box (left-closed bins)."""
    n_bins = len(edges[0]) - 1
    idx = np.stack([np.searchsorted(e, x[:, i], side="right") - 1
                    for i, e in enumerate(edges)], axis=1)
    inside = np.all((idx >= 0) & (idx < n_bins), axis=1)
    return idx[inside]


def binned_divergence(x_true: np.ndarray, x_gen: np.ndarray, n_bins: int,
                      alpha: float = LAPLACE_ALPHA) -> tuple[float, int]:
    """`(D_stsp, number of generated points inside the box)`; the value is `inf` when no
    generated point lies in the box (the GTF code returns NaN there)."""
    edges = histogram_edges(x_true, n_bins)
    ct, cg = _cells(x_true, edges), _cells(x_gen, edges)
    if cg.shape[0] == 0:
        return float("inf"), 0
    both = np.concatenate([ct, cg]).astype(np.int64)
    rows = np.ascontiguousarray(both).view(np.dtype((np.void, 8 * both.shape[1]))).ravel()
    _, inv = np.unique(rows, return_inverse=True)
    inv = inv.ravel()
    m = int(inv.max()) + 1
    h = np.bincount(inv[: ct.shape[0]], minlength=m).astype(np.float64)
    g = np.bincount(inv[ct.shape[0]:], minlength=m).astype(np.float64)
    K = float(n_bins) ** x_true.shape[1]
    zp = h.sum() + alpha * K
    zq = g.sum() + alpha * K
    p, q = (h + alpha) / zp, (g + alpha) / zq
    p0, q0 = alpha / zp, alpha / zq
    kl = float(np.sum(p * np.log(p / q))) + (K - m) * p0 * float(np.log(p0 / q0))
    return kl, int(cg.shape[0])
