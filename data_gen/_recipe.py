"""The recipe shared by all ODE data sets (Hess, Götz, Durstewitz (2026), "Parallel-in-Time
Training of Recurrent Neural Networks for Dynamical Systems Reconstruction", arXiv:2605.12683,
App. F).

Integrate two trajectories (train, test) from different initial conditions x0 (and start times
t0 for forced systems) with an adaptive Runge–Kutta 4/5 scheme, sample every Δt, cut a
transient, keep the observed variables, add Gaussian observation noise to the train trajectory
only (std = ``noise`` × the clean per-variable std; paper: 5%), and standardize both with the
clean train trajectory's mean and std. Every argument is checked before anything is integrated.
"""

from __future__ import annotations

import numpy as np

from dsr._checks import ArgumentTypeError, check_array, check_bool, check_choice, check_int
from dsr._checks import check_optional_int, check_real, is_integer

from ._dataset import FORMAT, Dataset, jsonable, package_version
from ._integrate import SOLVERS, integrate

LONG_RUN = 50_000  # progress bar by default from this many integrated steps on

COMMON_DOC = """
    **Common keyword arguments** (every ODE data set):

    - `n_steps`: kept samples per trajectory; `dt`: sampling step; `transient`: samples
      integrated and discarded before the kept ones.
    - `seed`: initial conditions, start times and noise.
    - `noise`: train noise std as a fraction of the clean per-variable std (paper 0.05; the
      test trajectory stays clean).
    - `x0`: `(D,)` for train or `(2, D)` for train and test (default: sampled); `t0`: scalar
      or pair.
    - `observe`: indices or names of the observed variables.
    - `standardize`: per variable with the clean train statistics; `dtype`: default float32.
    - `solver`: `"tsit5"`, `"dopri5"` or `"dopri8"`; `rtol` / `atol`: the PID step-size
      controller's tolerances (default 1e-8 / 1e-10; integration in float64); `max_steps`.
    - `progress`: tqdm bar (default: on for runs of ≥ 50,000 steps).
"""

OPTIONS = {"n_steps", "dt", "transient", "x0", "t0", "observe", "seed", "noise", "standardize",
           "dtype", "solver", "rtol", "atol", "max_steps", "progress"}  # fmt: skip


def check_dtype(dtype) -> np.dtype:
    """``dtype`` as a floating NumPy dtype."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise ArgumentTypeError(f"`dtype` must be a floating NumPy dtype such as 'float32'; "
                                f"got {dtype!r}.")
    return dt


def check_params(params) -> dict:
    """Numeric parameters: integers stay integers, everything else a finite float."""
    out = {}
    for k, v in params.items():
        if not isinstance(k, str):
            raise ArgumentTypeError(f"parameter names must be strings; got {k!r}.")
        out[k] = int(v) if is_integer(v) else check_real(k, v)
    return out


def observed_indices(observe, names) -> list:
    """Indices of the observed variables, from names and/or indices (None: all)."""
    if observe is None:
        return list(range(len(names)))
    single = isinstance(observe, str) or is_integer(observe)
    try:
        items = [observe] if single else list(observe)
    except TypeError:
        raise ArgumentTypeError(f"`observe` must be variable names or indices; got "
                                f"{observe!r}.") from None
    idx = []
    for o in items:
        if isinstance(o, str):
            if o not in names:
                raise ValueError(f"`observe`: unknown variable {o!r}; known: {list(names)}.")
            idx.append(names.index(o))
        else:
            idx.append(check_int("observe", o, 0, len(names) - 1))
    if not idx:
        raise ValueError("`observe` selects no variable.")
    if len(set(idx)) < len(idx):
        raise ValueError(f"`observe` names a variable twice; got {observe!r}.")
    return idx


def initial_states(x0, sample, rng, dim) -> np.ndarray:
    """Two initial states (train, test): sampled, or x0 of shape (D,) (train) / (2, D)."""
    sampled = np.stack([np.asarray(sample(rng), np.float64) for _ in range(2)])
    if sampled.shape != (2, dim) or not np.all(np.isfinite(sampled)):
        raise ValueError(f"`x0`: the sampler must return finite states of shape ({dim},); "
                         f"got shape {sampled.shape[1:]}.")
    if x0 is None:
        return sampled
    x0 = np.asarray(check_array("x0", x0, ndim=(1, 2)), np.float64)
    if x0.shape not in ((dim,), (2, dim)):
        raise ValueError(f"`x0` must have shape ({dim},) or (2, {dim}); got {x0.shape}.")
    return np.stack([x0, sampled[1]]) if x0.ndim == 1 else x0


def start_times(t0, period, rng) -> np.ndarray:
    """Two start times: drawn uniformly over one forcing ``period`` (else 0), or ``t0``."""
    if t0 is None:
        return rng.uniform(0.0, period, 2) if period else np.zeros(2)
    t0s = np.asarray(check_array("t0", t0, ndim=(0, 1)), np.float64)
    if t0s.shape not in ((), (2,)):
        raise ValueError(f"`t0` must be a scalar or a pair (train, test); got shape {t0s.shape}.")
    return np.broadcast_to(t0s, (2,)).copy()


def _check_options(n_steps, dt, transient, seed, noise, standardize, dtype, solver, rtol, atol,
                   max_steps, progress) -> dict:  # fmt: skip
    n_steps = check_int("n_steps", n_steps, 1)
    transient = check_int("transient", transient, 0)
    if progress is None:
        progress = n_steps + transient >= LONG_RUN
    return dict(
        n_steps=n_steps, transient=transient, dt=check_real("dt", dt, 0, lo_open=True),
        seed=check_int("seed", seed, 0), noise=check_real("noise", noise, 0),
        standardize=check_bool("standardize", standardize), dtype=check_dtype(dtype),
        solver=check_choice("solver", solver, tuple(SOLVERS)),
        rtol=check_real("rtol", rtol, 0, lo_open=True),
        atol=check_real("atol", atol, 0, lo_open=True),
        max_steps=check_optional_int("max_steps", max_steps, 1),
        progress=check_bool("progress", progress),
    )  # fmt: skip


def _noisy_standardized(clean, noise, standardize, rng):
    """Train (+ noise) and test from the clean ``(2, T, N)`` pair, standardized by train."""
    mean, std = clean[0].mean(0), clean[0].std(0)
    std = np.where(std > 0, std, 1.0)
    train = clean[0] + rng.normal(size=clean[0].shape) * (noise * std)
    test = clean[1]
    if standardize:
        train, test = (train - mean) / std, (test - mean) / std
    else:
        mean, std = np.zeros_like(mean), np.ones_like(std)
    return train, test, mean, std


def simulate(
    name, field, params, *, dim, names, sample_x0, period=None, n_steps, dt, transient=0,
    x0=None, t0=None, observe=None, seed=0, noise=0.05, standardize=True, dtype="float32",
    solver="tsit5", rtol=1e-8, atol=1e-10, max_steps=None, progress=None, extra_meta=None,
) -> Dataset:  # fmt: skip
    """A train/test data set of ``dx/dt = field(t, x, params)`` by the App. F recipe.

    **Arguments:** the system (``name``, ``field``, ``params``, state ``dim`` and ``names``,
    ``sample_x0(rng, params)``, forcing ``period`` or None) and the options of ``COMMON_DOC``.

    **Returns:** a `Dataset` with the metadata needed to reproduce it.
    """
    o = _check_options(n_steps, dt, transient, seed, noise, standardize, dtype, solver, rtol,
                       atol, max_steps, progress)  # fmt: skip
    params = check_params(params)
    obs = observed_indices(observe, list(names))
    streams = np.random.SeedSequence(o["seed"]).spawn(3)  # independent: x0, t0, noise
    ic_rng, t0_rng, noise_rng = (np.random.default_rng(s) for s in streams)
    x0s = initial_states(x0, lambda r: sample_x0(r, params), ic_rng, dim)
    t0s = start_times(t0, period, t0_rng)
    ys = integrate(
        field, x0s, t0s, n_steps=o["n_steps"], dt=o["dt"], args=params,
        transient=o["transient"], solver=o["solver"], rtol=o["rtol"], atol=o["atol"],
        max_steps=o["max_steps"], progress=o["progress"],
    )  # fmt: skip
    clean = ys[:, :, obs]  # (2, T, N) float64
    train, test, mean, std = _noisy_standardized(clean, o["noise"], o["standardize"], noise_rng)
    meta = dict(
        format=FORMAT, system=name, params=params, dt=o["dt"], n_steps=o["n_steps"],
        seed=o["seed"], noise=o["noise"], noise_std=(o["noise"] * clean[0].std(0)), x0=x0s,
        t0=t0s, transient=o["transient"], t_first=t0s + o["transient"] * o["dt"], observed=obs,
        variables=[names[i] for i in obs], state_variables=list(names),
        standardized=o["standardize"], mean=mean, std=std, solver=o["solver"], rtol=o["rtol"],
        atol=o["atol"], max_steps=o["max_steps"], dtype=o["dtype"].name,
        splits={"train": "noisy" if o["noise"] > 0 else "clean", "test": "clean"},
        version=package_version(), **(extra_meta or {}),
    )  # fmt: skip
    return Dataset(train.astype(o["dtype"]), test.astype(o["dtype"]), o["dt"], jsonable(meta))
