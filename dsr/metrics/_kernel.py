r"""Exact Gaussian kernel sums $\log \sum_j w_j \exp(-\tfrac12 |u - u_j|^2)$ in scaled coordinates.

Two evaluators, both exact:

- the blocked brute force (JAX, online running-max log-sum-exp, float32 or float64), on a
  small thread pool: XLA releases the GIL, one query chunk per core;
- the `k` nearest sources (a k-d tree) with a certified bound on the rest, for queries in the
  far tails of a mixture.

Identical source points (a generated orbit that sits on a fixed point or a short cycle) are
merged into one source of weight `w_j` = their multiplicity — exact, and it turns the cost of
a collapsed orbit from `T2` kernels per query into a handful.
"""

from __future__ import annotations

import concurrent.futures
import os

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

_BQ = 512  # queries per block
_BS = 2048  # sources per block
_CHUNK = 16 * _BQ  # queries per host call (progress granularity)
_N_THREADS = max(1, min(4, os.cpu_count() or 1))


def _lse_chunk_impl(q, src, c):
    """`q` (nq, d), nq % _BQ == 0; `src` (ns, d), ns % _BS == 0; `c` = log w − |s|²/2
    (−inf: padding)."""
    d = q.shape[1]
    dtype = q.dtype
    sb = src.reshape(-1, _BS, d)
    cb = c.reshape(-1, _BS)

    def one(qq):
        qn = 0.5 * jnp.sum(qq * qq, axis=1)

        def body(carry, blk):
            m, acc = carry
            s, cc = blk
            a = qq @ s.T + cc[None, :]
            m_new = jnp.maximum(m, jnp.max(a, axis=1))
            acc = acc * jnp.exp(m - m_new) + jnp.sum(jnp.exp(a - m_new[:, None]), axis=1)
            return (m_new, acc), None

        init = (jnp.full(_BQ, -jnp.inf, dtype), jnp.zeros(_BQ, dtype))
        (m, acc), _ = jax.lax.scan(body, init, (sb, cb))
        return m + jnp.log(acc) - qn

    return jax.lax.map(one, q.reshape(-1, _BQ, d)).reshape(-1)


_lse_chunk = jax.jit(_lse_chunk_impl)


def merge_duplicates(u: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct rows of `u` in order of first occurrence and their multiplicities; the
    multiplicities are None (and `u` is returned as is) when every row is distinct."""
    if u.shape[0] < 2 or np.unique(u[:, 0]).size == u.shape[0]:  # cheap common case
        return u, None
    rows = np.ascontiguousarray(u).view(np.dtype((np.void, u.dtype.itemsize * u.shape[1])))
    _, first, counts = np.unique(rows.ravel(), return_index=True, return_counts=True)
    if first.size == u.shape[0]:
        return u, None
    order = np.argsort(first)
    return u[first[order]], counts[order]


def n_distinct(u: np.ndarray) -> int:
    """The number of distinct rows of `u`."""
    pts, _ = merge_duplicates(u)
    return pts.shape[0]


class KernelSources:
    """A source set prepared for the brute-force kernel in one dtype (float32 or float64).

    Identical rows of `u` are merged (exact), unless `weights` (multiplicities) are given.
    `n` is the number of points (the total weight), `n_distinct` the number of kernels
    evaluated per query.
    """

    def __init__(self, u: np.ndarray, dtype, weights: np.ndarray | None = None):
        if weights is None:
            self.n = u.shape[0]
            pts, counts = merge_duplicates(u)
        else:
            self.n = float(np.sum(weights))
            pts, counts = u, weights
        ns, d = pts.shape
        pad = (-ns) % _BS
        src = np.zeros((ns + pad, d), dtype=dtype)
        src[:ns] = pts
        c = np.full(ns + pad, -np.inf)
        c[:ns] = -0.5 * np.sum(pts.astype(np.float64) ** 2, axis=1)
        if counts is not None:
            c[:ns] += np.log(counts)
        self.n_distinct = ns
        self.dtype = dtype
        with jax.enable_x64(dtype == np.float64 or bool(jax.config.jax_enable_x64)):
            self.src = jnp.asarray(src, dtype=dtype)
            self.c = jnp.asarray(c.astype(dtype), dtype=dtype)


def kernel_sources(us: list[np.ndarray], dtype) -> list[KernelSources]:
    """`KernelSources` for each array of `us`."""
    return [KernelSources(u, dtype) for u in us]


def log_kernel_sums(uq: np.ndarray, sources: list[KernelSources], bar=None) -> list[np.ndarray]:
    """Unnormalised $\\log \\sum_j w_j e^{-|u - u_j|^2/2}$ at each query for each source set,
    as float64 arrays. `bar` (a `Progress`) advances by the kernel evaluations done."""
    nq, d = uq.shape
    if nq == 0:
        return [np.zeros(0) for _ in sources]
    dtype = sources[0].dtype
    outs = [np.empty(nq) for _ in sources]
    x64 = dtype == np.float64 or bool(jax.config.jax_enable_x64)  # thread-local setting

    def run(start):
        with jax.enable_x64(x64):
            stop = min(start + _CHUNK, nq)
            m = stop - start
            mp = _BQ
            while mp < m:  # few distinct shapes -> few compilations
                mp *= 2
            q = np.zeros((mp, d), dtype=dtype)
            q[:m] = uq[start:stop]
            qj = jnp.asarray(q, dtype=dtype)
            for out, s in zip(outs, sources):
                out[start:stop] = np.asarray(_lse_chunk(qj, s.src, s.c), dtype=np.float64)[:m]
                if bar is not None:
                    bar.update(m * s.n_distinct)

    starts = range(0, nq, _CHUNK)
    if len(starts) == 1 or _N_THREADS == 1:
        for start in starts:
            run(start)
    else:
        with concurrent.futures.ThreadPoolExecutor(_N_THREADS) as pool:
            for fut in [pool.submit(run, start) for start in starts]:
                fut.result()
    return outs


def n_kernel_evals(n_queries: int, sources: list[KernelSources]) -> float:
    """Kernel evaluations of `log_kernel_sums` for `n_queries` queries."""
    return float(n_queries) * sum(s.n_distinct for s in sources)


class EvalBudget:
    """Bookkeeping of brute-force kernel evaluations against an upper bound (None: none)."""

    def __init__(self, max_evals: float | None):
        self.max_evals = max_evals
        self.used = 0.0

    @property
    def left(self) -> float:
        return float("inf") if self.max_evals is None else max(self.max_evals - self.used, 0.0)

    def spend(self, k: float) -> None:
        self.used += float(k)


def tail_log_sums(uq: np.ndarray, u_src: np.ndarray, weights: np.ndarray | None = None,
                  tol: float = 1e-9, max_second: int = 65_536,
                  eps: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The same log-sums from the `k` nearest sources; returns `(values, certified)`.

    The sources beyond the `k`-th neighbour contribute at most `W_rest · exp(-r_k²/2)`; a value
    is certified (exact to `tol` relative) when that bound is below `tol` times the partial
    sum. `k = 64`, then `1024` for the queries not certified with 64 if there are at most
    `max_second` of them (a far-off orbit leaves them all uncertified; the second pass would
    cost minutes). Uncertified values are lower bounds (the partial sums). `eps > 0` makes the
    neighbour search approximate (neighbours within `(1 + eps)` of the true distances, much
    faster for queries far from every source); the bound then uses `r_k / (1 + eps)`.
    """
    n_src = u_src.shape[0]
    logw = np.zeros(n_src) if weights is None else np.log(weights)
    w_tot = float(n_src if weights is None else np.sum(weights))
    tree = scipy.spatial.cKDTree(u_src)
    val = np.empty(len(uq))
    ok = np.zeros(len(uq), dtype=bool)
    todo = np.arange(len(uq))
    for k in (64, 1024):
        k = min(k, n_src)
        for start in range(0, todo.size, 16384):
            sel = todo[start : start + 16384]
            dist, idx = tree.query(uq[sel], k=k, workers=-1, eps=eps)
            dist, idx = dist.reshape(sel.size, k), idx.reshape(sel.size, k)
            e = -0.5 * dist**2 + logw[idx]
            m = e.max(axis=1)
            val[sel] = m + np.log(np.exp(e - m[:, None]).sum(axis=1))
            w_rest = w_tot - (float(k) if weights is None else weights[idx].sum(axis=1))
            with np.errstate(divide="ignore"):
                rest = np.log(np.maximum(w_rest, 0.0)) - 0.5 * (dist[:, -1] / (1 + eps)) ** 2
            ok[sel] = (n_src <= k) | ((rest - val[sel]) < np.log(tol))
        todo = np.flatnonzero(~ok)
        if todo.size == 0 or n_src <= k or todo.size > max_second:
            break
    return val, ok
