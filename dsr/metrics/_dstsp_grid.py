r"""Grid (binned) approximation of the two mixtures' log-densities, for d ≤ 3.

Both mixtures are binned on a regular grid in scaled coordinates (spacing δ, a fraction of a
kernel std) with quadratic-spline (TSC) weights, which add exactly δ²/4 of variance to every
point; the grid is then convolved (FFT, per axis) with a sampled Gaussian of variance
1 − δ²/4, so the first two moments of every kernel are exact. Log-densities at the samples come
from tricubic Lagrange interpolation of the log-grid. Queries whose stencil touches nodes of
negligible density (far tails, where relative accuracy would be lost) are evaluated on
sources merged on a lattice (so that an orbit collapsed onto a fixed point is a single
source): by brute force when that is cheap, else — for many such queries, as a far-off orbit
gives — from a coarse grid of exact log-densities, else from their nearest sources
(`tail_log_sums`) with brute force where those cannot certify the value.

The result is an approximation: the control variate (`control_variate`) turns it into an
unbiased estimate of the exact value.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.fft

from ._kernel import EvalBudget, KernelSources, log_kernel_sums, tail_log_sums

_GRID_R = 8.0  # kernel support kept on the grid (in kernel stds)
_GRID_FLOOR = math.exp(-10.0)  # nodes below this (unnormalised) density are "tails"
_GRID_MAX_CELLS = 2.5e7
_LATTICES = (1e-3, 1e-2, 1e-1)  # lattice cells (kernel stds) for merging the tail sources
_TAIL_BRUTE = 5e8  # at most this many kernel evaluations for the tails (≈ seconds)
_TAIL_GRID = 65_536  # more tail queries than this: log-densities from a coarse log-grid
_TAIL_NODES = 3e9  # kernel evaluations for its nodes
_TAIL_SPACING = (0.5, 4.0)  # its spacing (kernel stds): the finest that fits, at most the latter


def _tsc_bin(u: np.ndarray, lo: np.ndarray, delta: float, shape: tuple) -> np.ndarray:
    """Quadratic-spline (TSC) assignment; every point gets variance exactly δ²/4 per axis."""
    d = u.shape[1]
    g = (u - lo) / delta
    i0 = np.rint(g).astype(np.int64)
    t = g - i0
    w = [0.5 * (0.5 - t) ** 2, 0.75 - t**2, 0.5 * (0.5 + t) ** 2]  # offsets -1, 0, +1
    keep = np.all((i0 >= 1) & (i0 <= np.asarray(shape) - 2), axis=1)
    i0, w = i0[keep], [wk[keep] for wk in w]
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    base = i0 @ strides
    size = int(np.prod(shape))
    grid = np.zeros(size)
    for offs in np.ndindex(*(3,) * d):
        idx = base + sum((o - 1) * strides[a] for a, o in enumerate(offs))
        wt = np.prod([w[o][:, a] for a, o in enumerate(offs)], axis=0)
        grid += np.bincount(idx, weights=wt, minlength=size)
    return grid.reshape(shape)


def _gauss_smooth(grid: np.ndarray, delta: float) -> np.ndarray:
    """Convolve every axis with the sampled Gaussian of variance 1 − δ²/4 (so, with TSC, 1)."""
    v = 1.0 - delta**2 / 4.0
    m = math.ceil(_GRID_R / delta)
    taps = np.exp(-0.5 * (np.arange(-m, m + 1) * delta) ** 2 / v) / math.sqrt(v)
    for ax in range(grid.ndim):
        n = grid.shape[ax]
        nfft = scipy.fft.next_fast_len(n + 2 * m, real=True)
        kf = np.zeros(nfft)
        kf[: m + 1] = taps[m:]
        kf[nfft - m :] = taps[:m]
        gf = scipy.fft.rfft(grid, n=nfft, axis=ax, workers=-1)
        shape = [1] * grid.ndim
        shape[ax] = -1
        gf *= scipy.fft.rfft(kf).reshape(shape)
        grid = scipy.fft.irfft(gf, n=nfft, axis=ax, workers=-1)
        grid = np.take(grid, np.arange(n), axis=ax)
    return grid


def _lagrange4(t: np.ndarray) -> np.ndarray:
    """Cubic Lagrange weights on nodes −1, 0, 1, 2 for t ∈ [0, 1): shape (..., 4)."""
    return np.stack(
        [
            -t * (t - 1) * (t - 2) / 6,
            (t + 1) * (t - 1) * (t - 2) / 2,
            -(t + 1) * t * (t - 2) / 2,
            (t + 1) * t * (t - 1) / 6,
        ],
        axis=-1,
    )


def _grid_interp(loggrid: np.ndarray, reliable: np.ndarray, uq: np.ndarray, lo, delta):
    """Tricubic Lagrange interpolation of the log-grid; returns (values, ok-mask)."""
    nq, d = uq.shape
    shape = np.asarray(loggrid.shape)
    g = (uq - lo) / delta
    i0 = np.floor(g).astype(np.int64)
    inside = np.all((i0 >= 1) & (i0 <= shape - 3), axis=1)
    i0 = np.clip(i0, 1, shape - 3)
    t = g - i0
    w = _lagrange4(t)  # (nq, d, 4)
    strides = np.cumprod((1,) + tuple(loggrid.shape[::-1]))[:-1][::-1]
    flat = loggrid.reshape(-1)
    rflat = reliable.reshape(-1)
    base = i0 @ strides
    val = np.zeros(nq)
    ok = inside.copy()
    for offs in np.ndindex(*(4,) * d):
        idx = base + sum((o - 1) * strides[a] for a, o in enumerate(offs))
        wt = np.prod([w[:, a, o] for a, o in enumerate(offs)], axis=0)
        val += wt * flat[idx]
        ok &= rflat[idx]
    return val, ok


def _grid_delta(uq: np.ndarray, spacing: float) -> float:
    """The spacing, widened until the grid has at most `_GRID_MAX_CELLS` nodes."""
    extent = (uq.max(axis=0) - uq.min(axis=0)) + 2 * _GRID_R + 1.0
    delta = spacing
    while np.prod(np.ceil(extent / delta) + 1) > _GRID_MAX_CELLS:
        delta *= 1.25
    return delta


def lattice_merge(u: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Points merged per lattice cell of side `eps` (centroids, multiplicities); `(u, None)`
    when no two points share a cell."""
    keys = np.floor(u / eps).astype(np.int64)
    rows = np.ascontiguousarray(keys).view(np.dtype((np.void, 8 * u.shape[1]))).ravel()
    _, first, inv, counts = np.unique(rows, return_index=True, return_inverse=True,
                                      return_counts=True)
    if first.size == u.shape[0]:
        return u, None
    cent = np.stack([np.bincount(inv.ravel(), weights=u[:, a]) for a in range(u.shape[1])], 1)
    return cent / counts[:, None], counts.astype(np.float64)


def _brute_tails(uq, pts, w, budget: EvalBudget, bar) -> np.ndarray:
    cost = float(uq.shape[0]) * pts.shape[0]
    budget.spend(cost)
    bar.add_total(cost)
    return log_kernel_sums(uq, [KernelSources(pts, np.float32, w)], bar)[0]


def _tail_grid(uq: np.ndarray, pts: np.ndarray, w, budget: EvalBudget, bar) -> np.ndarray | None:
    """Log-sums at many tail queries from a coarse grid of log-sums: exact (brute-force) values
    at the nodes, tricubic interpolation at the queries (far from the sources the log-density
    is close to a quadratic, which cubic interpolation reproduces). The spacing is the finest
    whose nodes fit `_TAIL_NODES` kernel evaluations (and 1 node per 8 queries); None when it
    would exceed `_TAIL_SPACING[1]` kernel stds."""
    nq, d = uq.shape
    max_nodes = min(nq / 8, min(_TAIL_NODES, 0.5 * budget.left) / pts.shape[0])
    h = _TAIL_SPACING[0]
    while True:
        lo = uq.min(axis=0) - 1.5 * h
        shape = tuple(int(k) for k in np.ceil((uq.max(axis=0) - lo) / h).astype(np.int64) + 3)
        if np.prod(shape, dtype=float) <= max_nodes:
            break
        if h > _TAIL_SPACING[1]:
            return None
        h *= 1.1
    axes = [lo[a] + h * np.arange(n) for a, n in enumerate(shape)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    bar.stage(f"D_stsp: far tails of {nq} samples (log-density grid, spacing {h:.2g})")
    loggrid = _brute_tails(nodes, pts, w, budget, bar).reshape(shape)
    return _grid_interp(loggrid, np.ones(shape, dtype=bool), uq, lo, h)[0]


def _tails(uq: np.ndarray, u_src: np.ndarray, budget: EvalBudget, bar) -> np.ndarray:
    """Tail log-sums on lattice-merged sources: brute force when that is cheap (few merged
    sources, e.g. an orbit collapsing onto a fixed point; the lattice is coarsened up to a
    tenth of a kernel std to get there); else, for many queries, a coarse log-density grid;
    else the nearest neighbours on the finest lattice, with brute force for the uncertified
    ones when affordable."""
    cap = min(_TAIL_BRUTE, 0.5 * budget.left)
    fits = None
    for eps in _LATTICES[::-1]:  # coarse to fine: the finest lattice within the cap
        merged = lattice_merge(u_src, eps)
        if float(uq.shape[0]) * merged[0].shape[0] > cap:
            break
        fits = merged
    if fits is not None:
        return _brute_tails(uq, *fits, budget, bar)
    pts, w = lattice_merge(u_src, _LATTICES[0])
    if uq.shape[0] > _TAIL_GRID:
        val = _tail_grid(uq, pts, w, budget, bar)
        if val is not None:
            return val
    val, cert = tail_log_sums(uq, pts, w)
    rest = np.flatnonzero(~cert)
    if rest.size and float(rest.size) * pts.shape[0] <= cap:
        val[rest] = _brute_tails(uq[rest], pts, w, budget, bar)
    return val


def grid_logratio(uq: np.ndarray, u_true: np.ndarray, u_gen: np.ndarray, spacing: float,
                  budget: EvalBudget, bar) -> np.ndarray:
    """Approximate unnormalised `log p̂ − log q̂` at every query (d ≤ 3)."""
    delta = _grid_delta(uq, spacing)
    lo = uq.min(axis=0) - 2 * delta - _GRID_R
    hi = uq.max(axis=0) + 3 * delta + _GRID_R
    shape = tuple(int(k) for k in np.ceil((hi - lo) / delta).astype(np.int64) + 1)
    logs = []
    for u_src in (u_true, u_gen):
        bar.stage("D_stsp: binned densities on a grid")
        grid = _gauss_smooth(_tsc_bin(u_src, lo, delta, shape), delta)
        loggrid = np.log(np.maximum(grid, _GRID_FLOOR * 1e-3))
        vals, ok = _grid_interp(loggrid, grid > _GRID_FLOOR, uq, lo, delta)
        bad = np.flatnonzero(~ok)
        if bad.size:
            bar.stage(f"D_stsp: far tails of {bad.size} samples (nearest neighbours)")
            vals[bad] = _tails(uq[bad], u_src, budget, bar)
        logs.append(vals)
    return logs[0] - logs[1]
