"""The measures, one code path for every method and for the true system (the floor).

On the free-running orbit (warm-up on the first `WARMUP` test points, then as many free steps
as the rest of the test trajectory) against the rest of the test trajectory:
`D_stsp` (Monte-Carlo Gaussian-mixture KL, `dsr.metrics.state_space_divergence`),
`D_stsp_bins` (the GTF authors' histogram variant, 30 bins per axis for N < 6, 8 above),
`D_H` (power-spectrum Hellinger distance), `diverged` / `collapsed` (dsr's orbit checks).
From the model's map: `lambda_max` (one renormalised tangent vector pushed by `jax.jvp`,
per unit time) and `lambda_err = |lambda_max - lambda_ref|` against dysts' estimate;
forecasts from `N_WINDOWS` test windows: `RMSE_n` (error at step `n_rmse`, standardized
units, averaged over windows) and `VPT` (valid prediction time: first step at which the
window's RMSE over variables exceeds `VPT_THRESHOLD`, in Lyapunov times of the reference
exponent, median over windows).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dsr.metrics import power_spectrum_distance, state_space_divergence
from dsr.metrics._evaluate import orbit_report

from ._member import Member, rollout

WARMUP = 50
N_WINDOWS = 50
VPT_THRESHOLD = 0.5
LYAP_STEPS = 3000
LYAP_TRANSIENT = 300
MEASURES = ("D_stsp", "D_stsp_bins", "D_H", "lambda_err", "RMSE_n", "VPT", "train_s")
LOWER_IS_BETTER = {"D_stsp": True, "D_stsp_bins": True, "D_H": True, "lambda_err": True,
                   "RMSE_n": True, "VPT": False, "train_s": True}


def window_starts(T: int, horizon: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(T - WARMUP - horizon, size=min(n, T - WARMUP - horizon),
                              replace=False))


def forecast_errors(m: Member, x: np.ndarray, horizon: int, starts) -> np.ndarray:
    """`(windows, horizon)` RMSE over variables of the forecast after each window's warm-up."""
    idx = np.asarray(starts)[:, None] + np.arange(WARMUP)[None]
    ctx = jnp.asarray(x[idx])
    tgt = np.stack([x[s + WARMUP: s + WARMUP + horizon] for s in starts])
    pred = np.asarray(jax.jit(jax.vmap(lambda c: rollout(m, c, horizon)))(ctx), np.float64)
    with np.errstate(all="ignore"):
        err = np.sqrt(np.mean((pred - tgt) ** 2, axis=-1))
    return np.where(np.isfinite(err), err, np.inf)


def validation_score(m: Member, val: np.ndarray, horizon: int, seed: int = 0) -> float:
    """Tuning criterion: mean forecast RMSE over `horizon` steps on validation windows
    (capped at 10 per step so that one diverged window does not make every setting `inf`)."""
    starts = window_starts(len(val), horizon, 20, seed)
    err = np.minimum(forecast_errors(m, val, horizon, starts), 10.0)
    return float(np.mean(err))


def valid_time(err: np.ndarray, dt: float, lyap: float) -> np.ndarray:
    """Per window: steps until the error first exceeds the threshold, × dt × λ."""
    over = err > VPT_THRESHOLD
    steps = np.where(over.any(1), over.argmax(1), err.shape[1])
    return steps * dt * lyap


def max_lyapunov_jvp(step, z0, n_steps: int, n_transient: int, dt: float) -> float:
    """Largest Lyapunov exponent of the map `step` per unit time: one tangent vector, started
    along `(1, ..., 1)/sqrt(M)`, pushed by `jax.jvp` and renormalised every step; the mean log
    growth after `n_transient` steps, / dt (the algorithm of `dsr.metrics.max_lyapunov`,
    without forming the Jacobian: the ESN's reservoir state has 400 dimensions)."""

    def body(carry, _):
        z, v = carry
        z2, w = jax.jvp(step, (z,), (v,))
        n = jnp.linalg.norm(w)
        return (z2, w / n), jnp.log(n)

    z0 = jnp.asarray(z0)
    v0 = jnp.ones_like(z0) / jnp.sqrt(z0.shape[0])
    _, logs = jax.jit(lambda z, v: jax.lax.scan(body, (z, v), None,
                                                length=n_steps + n_transient))(z0, v0)
    return float(jnp.mean(logs[n_transient:]) / dt)


def lyapunov(m: Member, context: np.ndarray, dt: float) -> float:
    z0 = m.warm(jnp.asarray(context))
    if not bool(jnp.all(jnp.isfinite(z0))):
        return float("nan")
    lam = max_lyapunov_jvp(m.step, z0, LYAP_STEPS, LYAP_TRANSIENT, dt)
    return lam if math.isfinite(lam) else float("nan")


def orbit_measures(x_true: np.ndarray, x_gen: np.ndarray, key) -> dict:
    """Measures on one free orbit (also for the floor's independent trajectory)."""
    rep = orbit_report(x_true, x_gen)
    out = {"diverged": bool(rep["diverged"]), "collapsed": rep["status"] == "collapsed",
           "status": rep["status"], "notes": list(rep["notes"])}
    if rep["diverged"]:
        return dict(out, D_stsp=math.inf, D_stsp_bins=math.inf, D_H=1.0)
    n_bins = 30 if x_true.shape[1] < 6 else 8
    d = state_space_divergence(x_true, x_gen, n_samples=20_000, key=key, progress=False)
    b = state_space_divergence(x_true, x_gen, method="bins", n_bins=n_bins)
    return dict(out, D_stsp=float(d.value), D_stsp_stderr=float(d.stderr),
                D_stsp_bins=float(b.value), D_H=float(power_spectrum_distance(x_true, x_gen)))


def member_measures(m: Member, data: dict, dt: float, lyap_ref: float, settings: dict,
                    key) -> dict:
    test = data["test"]
    x_true = test[WARMUP:].astype(np.float64)
    x_gen = np.asarray(jax.jit(lambda c: rollout(m, c, len(x_true)))(test[:WARMUP]), np.float64)
    out = orbit_measures(x_true, x_gen, key)
    lam = lyapunov(m, test[:WARMUP], dt)
    out["lambda_max"] = lam
    out["lambda_ref"] = lyap_ref
    out["lambda_err"] = abs(lam - lyap_ref) if math.isfinite(lam) else math.inf
    H = settings["horizon"]
    err = forecast_errors(m, test, H, window_starts(len(test), H, N_WINDOWS, 1))
    n = settings["n_rmse"]
    out["RMSE_n"] = float(np.mean(err[:, n - 1]))
    out["RMSE_curve"] = [float(v) for v in np.mean(np.minimum(err, 1e6), 0)]
    out["VPT"] = float(np.median(valid_time(err, dt, lyap_ref)))
    out["train_s"] = float(m.train_s)
    return out
