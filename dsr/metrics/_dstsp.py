r"""State space divergence $D_{stsp}$: the public function and its result.

$D_{stsp} = \mathrm{KL}(\hat p \,\|\, \hat q)$ between two Gaussian mixtures with one component per
orbit point (Hess, Götz & Durstewitz (2026), "Parallel-in-Time Training of Recurrent Neural
Networks for Dynamical Systems Reconstruction", arXiv:2605.12683, App. G, Eqs. 66–70), estimated
by Monte Carlo with samples drawn from $\hat p$. Everything happens in *scaled* coordinates
$u = (x - \bar x)/s$ (per dimension, $s$ the kernel standard deviation), where every component is
a unit isotropic Gaussian and

$$\log \hat p(x) = \operatorname{logsumexp}_j\big(-\tfrac12 |u - u_j|^2\big) - \log T_1 - C,$$

with the same constant $C = \sum_d \log s_d + \tfrac d2 \log 2\pi$ for $\hat q$, so that it cancels
in the log-ratio. Densities never leave the log domain. The pieces: exact kernel sums
(`_kernel.py`), the grid and subsample approximations (`_dstsp_grid.py`, `_dstsp_subsample.py`),
the control variate that makes them unbiased (`_dstsp_cv.py`), and the GTF authors' binning
estimator (`_dstsp_bins.py`).

References: Hess, Brenner, Monfared & Durstewitz, "Generalized Teacher Forcing for Learning
Chaotic Dynamics", ICML 2023 (arXiv:2306.04406); Brenner et al., "Tractable dendritic RNNs for
reconstructing nonlinear dynamical systems", ICML 2022; Silverman, "Density estimation for
statistics and data analysis", 1986; Hershey & Olsen, "Approximating the KL divergence between
Gaussian mixture models", ICASSP 2007.
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import equinox as eqx
import jax
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from .._checks import (
    check_bool,
    check_choice,
    check_int,
    check_key,
    check_optional_int,
    check_real,
)
from ._bandwidth import kernel_bandwidth
from ._dstsp_bins import binned_divergence
from ._dstsp_cv import ExactLogRatio, check_size, control_variate, pilot_result, run_pilot
from ._dstsp_grid import grid_logratio
from ._dstsp_subsample import cheapest_evals, subsample_logratio
from ._embedding import delay_embed, embedding_window
from ._kernel import EvalBudget, kernel_sources, log_kernel_sums, n_distinct, n_kernel_evals
from ._orbits import collapse_note, divergence_reason, orbit_pair
from ._progress import Progress, want_progress

_Method = Literal["auto", "exact", "grid", "subsample", "bins"]
_METHODS = ("auto", "exact", "grid", "subsample", "bins")

#: The smallest `n_samples` accepted: the standard error needs a few samples.
MIN_SAMPLES = 10


class StateSpaceDivergence(eqx.Module):
    """Result of [`dsr.metrics.state_space_divergence`][]: unpacks as `value, stderr = result`.

    **Attributes:**

    - `value`: the estimate of $D_{stsp}$ (nats); `inf` for a diverged generated orbit.
    - `stderr`: total standard error of `value` as an estimate of $\\mathrm{KL}(\\hat p\\|\\hat q)$:
      Monte-Carlo error of the `n` samples combined with `approx_stderr` (NaN for `"bins"`,
      which has no Monte-Carlo part).
    - `approx_stderr`: standard error of `value` as an estimate of the brute-force value for the
      same samples (0 for `method="exact"`).
    - `method`: the estimator that ran (`"exact"`, `"grid"`, `"subsample"`, `"bins"`, or
      `"diverged"`).
    - `n_samples`: number of Monte-Carlo samples used.
    - `n_check`: samples evaluated by brute force for the control-variate correction.
    - `bandwidth`: kernel standard deviation per dimension (after embedding).
    - `status`: `"ok"`; `"diverged"` (non-finite or huge `x_gen`: `value = inf`);
      `"early_exit"` (the fast estimators' exact pilot already met `rtol`: a far-off orbit);
      `"budget"`
      (`max_evals` capped the work: fewer samples or checks than the accuracy target asked
      for, and `stderr` says how much that cost); `"empty"` (`"bins"`: no generated point
      inside the histogram box, `value = inf`).
    - `note`: a human-readable explanation (also of a collapsed `x_gen`), or `""`.
    """

    value: float
    stderr: float
    approx_stderr: float = 0.0
    method: str = eqx.field(static=True, default="exact")
    n_samples: int = eqx.field(static=True, default=0)
    n_check: int = eqx.field(static=True, default=0)
    bandwidth: tuple = eqx.field(static=True, default=())
    status: str = eqx.field(static=True, default="ok")
    note: str = eqx.field(static=True, default="")

    def __iter__(self):
        return iter((self.value, self.stderr))

    def __float__(self) -> float:
        return float(self.value)


def _check_embedding(embedding, x_true, x_gen):
    if embedding is None:
        return None
    try:
        m, tau = embedding
    except (TypeError, ValueError):
        raise ValueError(f"`embedding` must be a pair (m, tau); got {embedding!r}.") from None
    window = embedding_window(check_int("m", m, 1), check_int("tau", tau, 1))
    for name, x in (("x_true", x_true), ("x_gen", x_gen)):
        if x.shape[0] < window + 1:
            raise ValueError(
                f"`{name}` has {x.shape[0]} time steps, too few for the delay embedding "
                f"(m={m}, tau={tau}) which needs more than (m-1)*tau+1 = {window}."
            )
    return int(m), int(tau)


def _check_options(o: dict) -> dict:
    """Validate the scalar options (before any work); returns them normalised."""
    o["n_samples"] = check_int("n_samples", o["n_samples"], MIN_SAMPLES)
    check_choice("method", o["method"], _METHODS)
    if o["method"] != "bins" or o["key"] is not None:
        if o["key"] is None:
            raise ValueError(f"`key` is required for method={o['method']!r} (a PRNG key, "
                             "e.g. jax.random.key(0)).")
        o["key"] = check_key("key", o["key"])
    o["n_bins"] = check_int("n_bins", o["n_bins"], 1)
    for name in ("rtol", "mc_frac", "divergence_threshold"):
        o[name] = check_real(name, o[name], 0.0, lo_open=True)
    o["grid_spacing"] = check_real("grid_spacing", o["grid_spacing"], 0.0, 1.0, lo_open=True)
    o["subsample"] = check_optional_int("subsample", o["subsample"], 1)
    if o["max_evals"] is not None:
        o["max_evals"] = check_real("max_evals", o["max_evals"], 0.0, lo_open=True)
    if o["progress"] is not None:
        o["progress"] = check_bool("progress", o["progress"])
    return o


def _bins(x_true, x_gen, n_bins: int, note: str) -> StateSpaceDivergence:
    value, n_in = binned_divergence(x_true, x_gen, n_bins)
    if n_in == 0:
        msg = "no point of `x_gen` lies inside the histogram box of `x_true`; D_stsp = inf."
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return StateSpaceDivergence(math.inf, math.nan, 0.0, "bins", 0, 0, (), "empty",
                                    " ".join(filter(None, [msg, note])))
    return StateSpaceDivergence(value, math.nan, 0.0, "bins", 0, 0, (), "ok", note)


def _pick_method(method: str, n_pairs: float, d: int) -> str:
    if method == "auto":
        method = "exact" if n_pairs <= 2e9 else ("grid" if d <= 3 else "subsample")
    return method


def _affordable_samples(method, n, u_true, u_gen, budget) -> int:
    """The number of samples whose run of `method` fits the budget (at least `MIN_SAMPLES`;
    the grid's own work is not kernel sums, its exact check is capped later)."""
    T1, T2 = u_true.shape[0], u_gen.shape[0]
    if method == "exact":
        per, fixed = float(n_distinct(u_true) + n_distinct(u_gen)), 0.0
    elif method == "subsample":
        per, fixed = cheapest_evals(1, T1, T2), 1000.0 * (T1 + T2)
    else:
        return n
    if per * n + fixed <= budget.left or not math.isfinite(budget.left):
        return n
    return max(MIN_SAMPLES, int(max(budget.left - fixed, 0.0) // per))


def _exact(uq, u_true, u_gen, log_norm, bar) -> tuple[float, float]:
    bar.stage(f"D_stsp: exact kernel sums at {uq.shape[0]} Monte-Carlo samples")
    sources = kernel_sources([u_true, u_gen], np.float64)
    bar.add_total(n_kernel_evals(uq.shape[0], sources))
    lp, lq = log_kernel_sums(uq, sources, bar)
    e = lp - lq + log_norm
    return float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))


def _fast(method, uq, u_true, u_gen, key_rng, log_norm, o, budget, bar):
    """Grid or subsample approximation + control variate; returns a `Corrected`."""
    rng = np.random.default_rng(key_rng)
    exact = ExactLogRatio(u_true, u_gen)
    pilot = run_pilot(uq, exact, rng, log_norm, budget, bar)
    n = uq.shape[0]
    want = (o["rtol"], o["mc_frac"])
    early = pilot_result(pilot, n, o["rtol"])
    if early is not None:
        return early
    if method == "grid":
        a = grid_logratio(uq, u_true, u_gen, o["grid_spacing"], budget, bar)
    else:
        a = subsample_logratio(uq, u_true, u_gen, pilot.idx, pilot.e, o["subsample"],
                               lambda v: check_size(v, pilot, n, *want), budget, bar)
    return control_variate(a, uq, exact, pilot, rng, log_norm, want, budget, bar)


def _monte_carlo(x_true, x_gen, s, o, note) -> StateSpaceDivergence:
    """Samples from p̂ in scaled coordinates, then the exact or a fast estimator."""
    (T1, d), T2 = x_true.shape, x_gen.shape[0]
    n = o["n_samples"]
    center = x_true.mean(axis=0)
    u_true, u_gen = (x_true - center) / s, (x_gen - center) / s
    k_idx, k_eps, k_sub = jax.random.split(o["key"], 3)
    idx = np.asarray(jax.random.randint(k_idx, (n,), 0, T1))
    eps = np.asarray(jax.random.normal(k_eps, (n, d)), dtype=np.float64)
    uq = u_true[idx] + eps
    log_norm = math.log(T2) - math.log(T1)
    n_pairs = float(n) * (T1 + T2)
    method = _pick_method(o["method"], n_pairs, d)
    budget = EvalBudget(o["max_evals"])
    n_use = _affordable_samples(method, n, u_true, u_gen, budget)
    notes, status = [note] if note else [], "ok"
    if n_use < n:
        status = "budget"
        notes.append(f"`max_evals`={o['max_evals']:g} allows {n_use} of the {n} samples.")
        uq = uq[:n_use]
    key_rng = np.asarray(jax.random.randint(k_sub, (4,), 0, 2**31 - 1))
    common = {"method": method, "n_samples": n_use, "bandwidth": tuple(float(v) for v in s)}
    if method == "exact":
        with Progress(want_progress(o["progress"], n_pairs), "D_stsp", unit="kern") as bar:
            val, se = _exact(uq, u_true, u_gen, log_norm, bar)
        return StateSpaceDivergence(val, se, 0.0, n_check=n_use, status=status,
                                    note=" ".join(notes), **common)
    enabled = want_progress(o["progress"], n_pairs, 2e10)
    with Progress(enabled, f"D_stsp ({method})", unit="kern") as bar:
        res = _fast(method, uq, u_true, u_gen, key_rng, log_norm, o, budget, bar)
    if res.early_exit:
        status, common["n_samples"] = "early_exit", res.n_check
        notes.append(f"the exact pilot of {res.n_check} samples already has a standard error "
                     f"below rtol·|D| (an orbit far from the data); no more samples needed.")
    if res.capped:
        status = "budget"
        notes.append(f"`max_evals`={o['max_evals']:g} capped the exact check at "
                     f"{res.n_check} samples; approx_stderr is above the accuracy target.")
    return StateSpaceDivergence(res.value, res.stderr, res.approx_stderr, n_check=res.n_check,
                                status=status, note=" ".join(notes), **common)


def state_space_divergence(
    x_true: Float[ArrayLike, "T1 N"],
    x_gen: Float[ArrayLike, "T2 N"],
    *,
    n_samples: int = 1_000_000,
    bandwidth: str | float | Float[ArrayLike, " d"] = "silverman",
    embedding: tuple[int, int] | None = None,
    key: PRNGKeyArray | None = None,
    method: _Method = "auto",
    n_bins: int = 30,
    rtol: float = 2e-3,
    mc_frac: float = 0.25,
    grid_spacing: float = 0.25,
    subsample: int | None = None,
    divergence_threshold: float = 1e6,
    max_evals: float | None = 5e10,
    progress: bool | None = None,
) -> StateSpaceDivergence:
    r"""State space divergence $D_{stsp} = \mathrm{KL}(\hat p\,\|\,\hat q)$ (Hess, Götz &
    Durstewitz (2026), arXiv:2605.12683, App. G, Eqs. 66–70).

    $\hat p$ and $\hat q$ are Gaussian mixtures with one component $\mathcal N(x_t, \Sigma)$ per
    point of the true orbit (`T1` points) and of the generated orbit (`T2` points), with the same
    $\Sigma = \mathrm{diag}(s^2)$ for both. The KL divergence is estimated by Monte Carlo with
    `n_samples` samples drawn from $\hat p$, in log-sum-exp form.

    **Bandwidth convention.** `s` is the kernel *standard deviation* per dimension.
    `"silverman"`: $s_i = f\,\hat\sigma_i$ with $f = (T_1 (d+2)/4)^{-1/(d+4)}$ (Silverman's rule of
    thumb for the standard deviation), $\hat\sigma_i$ the sample standard deviation of the true
    orbit, `T1` its number of points and `d` the dimension — all *after* delay embedding. Both
    mixtures use this one $\Sigma$ (the true orbit's), as in the paper. (The paper's text reads
    $\Sigma = f\,\mathrm{diag}(\hat\sigma^2)$; we follow Silverman's rule, $\Sigma = f^2
    \mathrm{diag}(\hat\sigma^2)$ — pass `bandwidth=np.sqrt(f) * x.std(0)` for the other reading.)
    A float or a per-dimension array gives `s` directly, in data units.

    **Estimators** (`method`): `"exact"` is the blocked float64 brute force, `n·(T1+T2)` kernel
    evaluations. `"grid"` (d ≤ 3) and `"subsample"` are fast approximations turned into unbiased
    estimates of the exact value by a control variate: the brute force runs on a random subset
    whose size is chosen so that `approx_stderr ≤ max(rtol·|D|, mc_frac·MC-stderr)`. `"auto"`
    runs `"exact"` when `n·(T1+T2) ≤ 2·10^9`, else `"grid"` for d ≤ 3 and `"subsample"` above.

    **Literature-compatible variant** (`method="bins"`): the GTF authors' estimator (Hess,
    Brenner, Monfared & Durstewitz, ICML 2023, arXiv:2306.04406, and their code): a histogram
    with `n_bins` bins per dimension on the true orbit's box `[min − σ/10, max + σ/10]`, Laplace
    smoothing (α = 10⁻⁵) and the discrete KL divergence; deterministic (`key`, `n_samples`,
    `bandwidth` unused; `stderr` is NaN). Their code uses it for `N < 6` with 30 bins; above,
    a Gaussian mixture with fixed $\Sigma = \sigma^2 I$ (`σ² = 1` on standardised data), which
    is `bandwidth=math.sqrt(sigma2)` here; to reproduce it exactly also pass their sizes,
    `x_true[:10_000], x_gen[:10_000], n_samples=1000, method="exact"` (they evaluate in float32
    and drop samples whose density underflows; we stay in the log domain, so nothing is dropped).

    **Cost and accuracy** (`benchmarks/dstsp.py`, 2 shared CPU cores). At the paper's scale
    (T1 = 10^5, T2 = 3·10^5, n = 10^6) the brute force is 4·10^11 kernel evaluations (tens of
    minutes here). Lorenz-63, d = 3, `"grid"`: 8–9 CPU seconds, estimated error vs the brute
    force (`approx_stderr / value`) ≤ 10^-4 relative; at T1 = 10^4, n = 10^5 it matches the brute
    force to 2·10^-5 relative. Bursting neuron, delay-embedded to d = 14, `"subsample"`: 23 CPU
    seconds for a model orbit with D ≈ 0.15 (error ≈ 0.2 %); for a second orbit of the true
    system (D ≈ 10^-4) the pilot picks stride 8, ≈ 5·10^10 evaluations, 65 CPU seconds.

    **Bounded time.** Identical generated points (an orbit collapsed onto a fixed point or a
    short cycle) are merged into one weighted kernel (exact); the far tails of the mixtures
    come from merged sources, nearest neighbours or a coarse log-density grid (approximations,
    corrected by the control variate like the rest); and the fast estimators stop after their
    exact pilot (1,000 samples) when its standard error is already below `rtol·|D|` (an orbit
    far from the data, `status = "early_exit"`). So such orbits take seconds to tens of
    seconds, not the hour they could take before. Whatever the orbits, the brute-force work is
    capped at `max_evals` kernel evaluations (5·10^10, about a minute on 2 idle CPU cores;
    the costliest case above, the neuron's second true orbit, needs about that); when the
    cap bites, fewer samples or exact checks are used, `status` is `"budget"`, `note` says
    what was cut, and `stderr` includes the cost.

    **Diverged orbits.** A generated orbit with non-finite values, or with values farther than
    `divergence_threshold` true standard deviations from the true mean, gives `value = inf`,
    `status = "diverged"` and a `RuntimeWarning` (never an exception). Non-finite `x_true` is
    an error.

    **Arguments:**

    - `x_true`: true orbit, shape `(T1, N)` (or `(T1,)`).
    - `x_gen`: generated orbit, shape `(T2, N)`.
    - `n_samples`: Monte-Carlo samples from $\hat p$ (paper: 10^6; at least 10).
    - `bandwidth`: `"silverman"`, a float, or an array of shape `(d,)` (kernel std per dimension).
    - `embedding`: `(m, tau)` to delay-embed both orbits first ([`dsr.metrics.delay_embed`][]); then `d = m N`.
    - `key`: JAX PRNG key for the samples and the control-variate subsets (not needed for
      `"bins"`).
    - `method`: `"auto"`, `"exact"`, `"grid"`, `"subsample"` or `"bins"`.
    - `n_bins`: bins per dimension for `"bins"` (the GTF code's default: 30).
    - `rtol`, `mc_frac`: accuracy target of the fast estimators (see above).
    - `grid_spacing`: grid spacing in kernel stds for `"grid"`, in (0, 1].
    - `subsample`: fixed stride for `"subsample"` (default: chosen by a pilot run).
    - `divergence_threshold`: see *Diverged orbits*.
    - `max_evals`: upper bound on brute-force kernel evaluations (None: no bound).
    - `progress`: show a tqdm bar that names the step running (default: only when the call is
      expected to take seconds).

    **Returns:** a [`dsr.metrics.StateSpaceDivergence`][] with `value`, `stderr`, `approx_stderr`, `status`,
    `note`, …; it unpacks as `value, stderr = result` and converts with `float(result)`.

    ```python
    res = state_space_divergence(x_true, x_gen, key=jax.random.key(0))
    print(f"D_stsp = {res.value:.4f} ± {res.stderr:.4f} ({res.status})")
    ```
    """
    x_true, x_gen = orbit_pair(x_true, x_gen)
    o = _check_options({
        "n_samples": n_samples, "method": method, "key": key, "n_bins": n_bins, "rtol": rtol,
        "mc_frac": mc_frac, "divergence_threshold": divergence_threshold,
        "grid_spacing": grid_spacing, "subsample": subsample, "max_evals": max_evals,
        "progress": progress})
    embedding = _check_embedding(embedding, x_true, x_gen)
    xt, xg = (x_true, x_gen) if embedding is None else (
        delay_embed(x_true, *embedding), delay_embed(x_gen, *embedding))
    if o["method"] == "grid" and xt.shape[1] > 3:
        raise ValueError(f"`method='grid'` supports d <= 3 dimensions; got d = {xt.shape[1]}.")
    s = None if o["method"] == "bins" else kernel_bandwidth(bandwidth, xt)
    why = divergence_reason(x_gen, x_true, o["divergence_threshold"])
    if why is not None:
        msg = f"`x_gen` has diverged ({why}); returning D_stsp = inf."
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        return StateSpaceDivergence(math.inf, math.inf, 0.0, "diverged", o["n_samples"], 0, (),
                                    "diverged", msg)
    note = collapse_note(x_gen, x_true) or ""
    if o["method"] == "bins":
        return _bins(xt, xg, o["n_bins"], note)
    return _monte_carlo(xt, xg, s, o, note)
