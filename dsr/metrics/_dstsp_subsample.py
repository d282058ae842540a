r"""Subsampled-orbit approximation of the log-ratio, for any dimension.

Every mixture is replaced by its orbit subsampled with stride `w` (offset `w//2`), a coarser
quadrature of the same orbit measure. `w` is chosen from a pilot run to minimise the total
cost (the approximation for all samples plus the exact check that the control variate needs),
within the evaluation budget. The stride approximation needs orbits that are smooth at the
sampling step (as model orbits are); for rough orbits (e.g. observation noise) no stride pays
and the cost approaches the brute force.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ._kernel import EvalBudget, kernel_sources, log_kernel_sums

_STRIDES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
_MIN_POINTS = 50  # a strided orbit keeps at least this many points per stride


def _approx(q: np.ndarray, u_true: np.ndarray, u_gen: np.ndarray, w: int, bar) -> np.ndarray:
    st, sg = u_true[w // 2 :: w], u_gen[w // 2 :: w]
    sources = kernel_sources([st, sg], np.float32)
    lp, lq = log_kernel_sums(q, sources, bar)
    return lp - lq + math.log(len(u_true) / len(st)) - math.log(len(u_gen) / len(sg))


def subsample_logratio(uq: np.ndarray, u_true: np.ndarray, u_gen: np.ndarray,
                       pilot: np.ndarray, e_pilot: np.ndarray, stride: int | None,
                       n_check: Callable[[float], int], budget: EvalBudget, bar) -> np.ndarray:
    """Approximate unnormalised `log p̂ − log q̂` at every query from strided orbits.

    **Arguments:** the queries `uq` and both scaled orbits; the pilot indices and their exact
    log-ratios `e_pilot`; a fixed `stride` or None (chosen here); `n_check(var)`, the number
    of exact checks the control variate needs for a correction variance `var`; the budget.
    """
    T1, T2 = u_true.shape[0], u_gen.shape[0]
    n = uq.shape[0]

    def cost_all(w):  # kernel evaluations of the approximation for all queries
        return n * (math.ceil(T1 / w) + math.ceil(T2 / w))

    if stride is None:
        best, best_cost = 1, float(n) * (T1 + T2)
        for w in _STRIDES:
            if min(T1, T2) < _MIN_POINTS * w:
                break
            a_p = _approx(uq[pilot], u_true, u_gen, w, bar)
            budget.spend(cost_all(w) * len(pilot) / n)
            var_corr = float(np.var(e_pilot - a_p, ddof=1))
            cost = cost_all(w) + n_check(var_corr) * (T1 + T2)
            if cost < best_cost or (cost_all(best) > 0.5 * budget.left and w > best):
                best, best_cost = w, cost
        stride = best
    budget.spend(cost_all(stride))
    bar.add_total(cost_all(stride))
    bar.stage(f"D_stsp: kernel sums on the orbits subsampled with stride {stride}")
    return _approx(uq, u_true, u_gen, stride, bar)


def cheapest_evals(n: int, T1: int, T2: int) -> float:
    """Kernel evaluations of the approximation at the largest stride allowed."""
    w = max([1] + [w for w in _STRIDES if min(T1, T2) >= _MIN_POINTS * w])
    return float(n) * (math.ceil(T1 / w) + math.ceil(T2 / w))
