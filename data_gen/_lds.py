"""Random stable linear dynamical systems for in-context learning, after "On learning linear
dynamical systems in context with attention layers" (ICLR 2026, OpenReview os7OLubIMI).
"""

from __future__ import annotations

import math

import numpy as np

from dsr._checks import check_array, check_bool, check_int, check_real

from ._dataset import FORMAT, Dataset, jsonable, package_version
from ._recipe import check_dtype


def _radius_range(rho):
    """``rho``: a spectral radius or a ``(low, high)`` range of them, as two floats."""
    if isinstance(rho, np.ndarray):
        rho = rho.tolist()
    pair = list(rho) if isinstance(rho, (list, tuple)) else [rho, rho]
    if len(pair) != 2:
        raise ValueError(f"`rho` must be a spectral radius or a (low, high) range; got {rho!r}.")
    lo, hi = (check_real("rho", r, 0) for r in pair)
    if lo > hi:
        raise ValueError(f"`rho` must be a (low, high) range with low ≤ high; got {rho!r}.")
    return lo, hi


def _fixed_matrices(A, C, d, m) -> dict:
    fixed = {}
    for key, val, shape in (("A", A, (d, d)), ("C", C, (m, d))):
        if val is not None:
            val = np.asarray(check_array(key, val, ndim=2), np.float64)
            if val.shape != shape:
                raise ValueError(f"`{key}` must be a finite array of shape {shape}; got "
                                 f"{val.shape}.")
            fixed[key] = val
    return fixed


def _sample_split(rng, b, n_steps, d, m, lo, hi, sigma_w, sigma_v, fixed):
    """``b`` sequences ``(b, n_steps, m)``, each from its own system; the matrices, x0."""
    if "A" in fixed:
        As = np.broadcast_to(fixed["A"], (b, d, d)).copy()
    else:
        G = rng.normal(0.0, 1.0 / math.sqrt(d), (b, d, d))
        radius = np.abs(np.linalg.eigvals(G)).max(-1)
        As = G * (rng.uniform(lo, hi, b) / radius)[:, None, None]
    if "C" in fixed:
        Cs = np.broadcast_to(fixed["C"], (b, m, d)).copy()
    else:
        Cs = rng.normal(0.0, 1.0 / math.sqrt(d), (b, m, d))
    x = rng.normal(size=(b, d))
    x0 = x.copy()
    ys = np.empty((b, n_steps, m))
    for t in range(n_steps):
        ys[:, t] = np.einsum("bmd,bd->bm", Cs, x) + sigma_v * rng.normal(size=(b, m))
        x = np.einsum("bij,bj->bi", As, x) + sigma_w * rng.normal(size=(b, d))
    return ys, As, Cs, x0


def lds(
    n_steps=30, *, n_sequences=1000, n_test=None, state_dim=5, obs_dim=1, rho=(0.5, 0.95),
    sigma_w=0.1, sigma_v=0.1, A=None, C=None, seed=0, standardize=False, dtype="float32",
) -> Dataset:  # fmt: skip
    """Random stable linear dynamical systems: `x_{t+1} = A x_t + w_t`, `y_t = C x_t + v_t`.

    One system per sequence for in-context learning (Vladarean, Zhang, Sra (2026), *On
    learning linear dynamical systems in context with attention layers*, ICLR 2026):
    `A = G·r/ρ(G)` with `G ~ N(0, 1/d)` i.i.d. (a centrosymmetric law, A and −A equally
    likely) and spectral radius `r ~ U(rho)`; `C ~ N(0, 1/d)`; `x_0 ~ N(0, I)`;
    `w_t ~ N(0, σ_w² I)`, `v_t ~ N(0, σ_v² I)` (paper: T = 30, d = 5, scalar y).

    **Arguments:**

    - `n_steps`: T; `n_sequences`: training sequences; `n_test`: test sequences (default
      `n_sequences // 10`).
    - `state_dim`: d; `obs_dim`: the observation's size; `rho`: the range of the spectral
      radius; `sigma_w`, `sigma_v`: the noise levels.
    - `A` `(d, d)` and/or `C` `(obs_dim, d)`: fix the system.
    - `seed`; `standardize`; `dtype`.

    **Returns:** a [`data_gen.Dataset`][] whose `train` / `test` have shape
    `(n_sequences, n_steps, obs_dim)` / `(n_test, ...)`; the matrices and initial states are
    in `arrays` (`A_train`, `C_train`, `x0_train`, and `*_test`).
    """
    n_steps = check_int("n_steps", n_steps, 1)
    n_seq = check_int("n_sequences", n_sequences, 1)
    n_test = max(1, n_seq // 10) if n_test is None else check_int("n_test", n_test, 1)
    d, m = check_int("state_dim", state_dim, 1), check_int("obs_dim", obs_dim, 1)
    seed = check_int("seed", seed, 0)
    sigma_w, sigma_v = check_real("sigma_w", sigma_w, 0), check_real("sigma_v", sigma_v, 0)
    lo, hi = _radius_range(rho)
    standardize, dtype = check_bool("standardize", standardize), check_dtype(dtype)
    fixed = _fixed_matrices(A, C, d, m)
    rng = np.random.default_rng(seed)
    out, arrays = {}, {}
    for split, b in (("train", n_seq), ("test", n_test)):
        ys, As, Cs, x0 = _sample_split(rng, b, n_steps, d, m, lo, hi, sigma_w, sigma_v, fixed)
        out[split], arrays[f"x0_{split}"] = ys, x0
        arrays[f"A_{split}"], arrays[f"C_{split}"] = As, Cs
    flat = out["train"].reshape(-1, m)
    mean, std = (flat.mean(0), flat.std(0)) if standardize else (np.zeros(m), np.ones(m))
    std = np.where(std > 0, std, 1.0)
    train, test = ((out[s] - mean) / std for s in ("train", "test"))
    params = dict(
        n_sequences=n_seq, n_test=n_test, state_dim=d, obs_dim=m, rho=[lo, hi], sigma_w=sigma_w,
        sigma_v=sigma_v, fixed_A=A is not None, fixed_C=C is not None,
    )  # fmt: skip
    meta = dict(
        format=FORMAT, system="lds", params=params, dt=1.0, n_steps=n_steps, seed=seed,
        noise=0.0, x0="arrays['x0_train'], arrays['x0_test']", t0=[0.0, 0.0], transient=0,
        variables=[f"y{i + 1}" for i in range(m)], standardized=standardize, mean=mean,
        std=std, solver="exact recurrence", rtol=None, atol=None, dtype=dtype.name,
        version=package_version(),
    )  # fmt: skip
    return Dataset(train.astype(dtype), test.astype(dtype), 1.0, jsonable(meta), arrays)

