r"""Control variate: a fast approximation made an unbiased estimate of the exact D_stsp.

The approximate log-ratio `a_i` is computed for all `n` samples, the exact log-ratio `e_i`
(float32 brute force) for a random subset of size `n_check`, and the estimate is
`mean(a) + mean_check(e − a)` — unbiased for the exact `n`-sample value. A pilot of 1,000
samples gives the variance of `e − a`, from which `n_check` is sized so that the standard error
of the correction (`approx_stderr`) is below `max(rtol·|D|, mc_frac·MC-stderr)`; the kernel
evaluation budget caps `n_check` (the result then says so). The error stays controlled at sizes
where the brute force is infeasible: it is measured on every call.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._kernel import EvalBudget, kernel_sources, log_kernel_sums, n_kernel_evals

_N_PILOT = 1000


class ExactLogRatio:
    """Exact unnormalised `log p̂(u) − log q̂(u)` (float32 brute force); sources built once."""

    def __init__(self, u_true: np.ndarray, u_gen: np.ndarray):
        self.sources = kernel_sources([u_true, u_gen], np.float32)

    def __call__(self, q: np.ndarray, bar=None) -> np.ndarray:
        lp, lq = log_kernel_sums(q, self.sources, bar)
        return lp - lq

    def evals(self, n_queries: int) -> float:
        return n_kernel_evals(n_queries, self.sources)


class Pilot(NamedTuple):
    """The pilot samples: indices, exact log-ratios, and the D and variance they estimate."""

    idx: np.ndarray
    e: np.ndarray
    d: float
    var_e: float


class Corrected(NamedTuple):
    """An estimate with its Monte-Carlo and approximation standard errors."""

    value: float
    stderr: float
    approx_stderr: float
    n_check: int
    capped: bool
    early_exit: bool = False


def pilot_result(pilot: Pilot, n: int, rtol: float) -> Corrected | None:
    """The pilot alone, when its standard error is already below `rtol·|D|` (an orbit far
    from the data: D in the hundreds), else None."""
    m = pilot.idx.size
    se = math.sqrt(pilot.var_e / m) if m > 1 else math.inf
    if m >= n or not se <= rtol * abs(pilot.d):
        return None
    return Corrected(pilot.d, se, 0.0, m, False, True)


def run_pilot(uq: np.ndarray, exact: ExactLogRatio, rng, log_norm: float,
              budget: EvalBudget, bar) -> Pilot:
    """Exact log-ratios at `min(n, 1000)` random samples."""
    n = uq.shape[0]
    idx = rng.choice(n, size=min(n, _N_PILOT), replace=False)
    bar.stage(f"D_stsp: pilot, exact kernel sums at {idx.size} samples")
    budget.spend(exact.evals(idx.size))
    bar.add_total(exact.evals(idx.size))
    e = exact(uq[idx], bar)
    var_e = float(np.var(e, ddof=1)) if idx.size > 1 else 0.0
    return Pilot(idx, e, float(e.mean()) + log_norm, var_e)


def check_size(var_corr: float, pilot: Pilot, n: int, rtol: float, mc_frac: float) -> int:
    """Exact checks needed so that the correction's standard error meets the target."""
    eta = max(rtol * abs(pilot.d), mc_frac * math.sqrt(pilot.var_e / n), 1e-300)
    return min(n, max(pilot.idx.size, math.ceil(var_corr / eta**2)))


def _std_err(v: np.ndarray) -> float:
    return float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan


def control_variate(a: np.ndarray, uq: np.ndarray, exact: ExactLogRatio, pilot: Pilot, rng,
                    log_norm: float, want: tuple[float, float], budget: EvalBudget,
                    bar) -> Corrected:
    """`mean(a) + mean_check(e − a)` with `n_check` from `check_size` (`want` = `(rtol,
    mc_frac)`), capped by the budget."""
    n = uq.shape[0]
    var_corr = float(np.var(pilot.e - a[pilot.idx], ddof=1)) if pilot.idx.size > 1 else 0.0
    n_check = check_size(var_corr, pilot, n, *want)
    per_query = exact.evals(1)
    cap = n
    if math.isfinite(budget.left) and per_query > 0:
        cap = min(n, pilot.idx.size + int(budget.left // per_query))
    capped = n_check > cap
    n_check = min(n_check, cap)
    bar.stage(f"D_stsp: exact check at {n_check} samples (control variate)")
    if n_check >= n:
        extra = np.setdiff1d(np.arange(n), pilot.idx)
    else:
        rest_pool = np.setdiff1d(np.arange(n), pilot.idx)
        extra = rng.choice(rest_pool, size=n_check - pilot.idx.size, replace=False)
    budget.spend(exact.evals(extra.size))
    bar.add_total(exact.evals(extra.size))
    e_extra = exact(uq[extra], bar)
    if n_check >= n:  # every sample is exact: no approximation left
        e_all = np.empty(n)
        e_all[pilot.idx] = pilot.e
        e_all[extra] = e_extra
        return Corrected(float(e_all.mean()) + log_norm, _std_err(e_all), 0.0, n, False)
    check = np.concatenate([pilot.idx, extra])
    diff = np.concatenate([pilot.e, e_extra]) - a[check]
    approx_se = 0.0
    if n_check > 1:
        approx_se = _std_err(diff) * math.sqrt(1.0 - n_check / n)
    value = float(a.mean()) + float(diff.mean()) + log_norm
    stderr = math.sqrt(_std_err(a) ** 2 + approx_se**2)
    return Corrected(value, stderr, approx_se, n_check, capped)
