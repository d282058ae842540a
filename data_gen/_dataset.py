"""Data sets of the paper's benchmarks (App. F; SPEC §7): generation, noise, standardization, I/O.

Recipe shared by all ODE systems (App. F): integrate two trajectories (train, test) from
different initial conditions x0 (and start times t0 for forced systems) with an adaptive
Runge–Kutta 4/5 scheme, sample every Δt, cut a transient, keep the observed variables, add
Gaussian observation noise to the train trajectory only (std = ``noise`` × the clean per-variable
std; paper: 5%), and standardize both with the clean train trajectory's mean and std.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import uuid
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from ._integrate import SOLVERS, integrate
from ._systems import NEURON_PRESETS, NEURON_X0, SYSTEMS, interburst_gaps

FORMAT = "data_gen/1"
LONG_RUN = 50_000  # progress bar by default from this many integrated steps on


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("dsr")
    except Exception:
        try:
            import dsr

            return str(dsr.__version__)
        except Exception:
            return "unknown"


# ----------------------------------------------------------------------------- validation


def _int(name, v, *, minimum=1):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise TypeError(f"{name} must be an integer, got {v!r}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return int(v)


def _float(name, v, *, positive=False, nonneg=False):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def _check_params(params):
    out = {}
    for k, v in params.items():
        if isinstance(v, numbers.Integral) and not isinstance(v, bool):
            out[k] = int(v)
        else:
            out[k] = _float(f"parameter {k}", v)
    return out


def _dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype: not a NumPy dtype: {dtype!r}") from e
    if dt.kind != "f":
        raise TypeError(f"dtype must be a floating dtype, got {dt}")
    return dt


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


# ----------------------------------------------------------------------------- Dataset


@dataclasses.dataclass(eq=False)
class Dataset:
    """A generated data set.

    ``train`` / ``test``: arrays ``(T, N)`` (``(B, T, N)`` for batched sets such as ``lds``),
    standardized unless ``meta["standardized"]`` is False; ``dt``: sampling step; ``meta``: JSON
    metadata (system, params, dt, seed, noise, x0, t0, transient, mean, std, solver, rtol, atol,
    version, ...); ``arrays``: optional extra arrays (e.g. the LDS matrices), saved alongside.
    """

    train: np.ndarray
    test: np.ndarray
    dt: float
    meta: dict
    arrays: dict = dataclasses.field(default_factory=dict)

    def destandardize(self, x):
        """Undo the standardization: ``x * std + mean`` (float64)."""
        return np.asarray(x, np.float64) * np.asarray(self.meta["std"]) + np.asarray(
            self.meta["mean"]
        )

    def save(self, path) -> Path:
        """Write ``path`` (``.npz``: arrays + metadata JSON) and a readable ``.json`` sidecar.

        Both files are written to a temporary file in the target folder and moved into place with
        ``os.replace``, so an interrupted write never leaves a file that :func:`load` accepts.
        """
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        folder = _writable_folder(path.parent, "path")
        meta = dict(self.meta, dt=float(self.dt))
        text = json.dumps(meta, indent=2, sort_keys=True)
        arrays = {"train": self.train, "test": self.test, "meta": np.array(text)}
        arrays.update({f"arrays.{k}": v for k, v in self.arrays.items()})
        _atomic_write(folder / path.name, lambda f: _write_npz(f, arrays))
        _atomic_write(path.with_suffix(".json"), lambda f: f.write(text.encode() + b"\n"))
        return path

    def __repr__(self):
        return (
            f"Dataset({self.meta.get('system')!r}, train={self.train.shape}, "
            f"test={self.test.shape}, dt={self.dt}, dtype={self.train.dtype})"
        )


def _writable_folder(folder, name):
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{name}: cannot create output folder {str(folder)!r}: {e}") from e
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: output folder {str(folder)!r} is not writable")
    return folder


def _atomic_write(path, write):
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise ValueError(f"path: cannot write to {str(path.parent)!r}: {e}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_npz(f, arrays):
    """Like ``np.savez`` but byte-reproducible (fixed zip timestamps)."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
        for key, a in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as g:
                np.lib.format.write_array(g, np.asarray(a), allow_pickle=False)


def load(path) -> Dataset:
    """Read a data set written by :meth:`Dataset.save` (exact round trip)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"][()]))
            if meta.get("format") != FORMAT:
                raise ValueError(f"unknown format {meta.get('format')!r}")
            extra = {k[len("arrays.") :]: z[k] for k in z.files if k.startswith("arrays.")}
            train, test = z["train"], z["test"]
    except FileNotFoundError:
        raise
    except Exception as e:
        raise ValueError(f"path: {str(path)!r} is not a data_gen data set ({e})") from e
    return Dataset(train, test, meta["dt"], meta, extra)


# ----------------------------------------------------------------------------- ODE data sets


def _observed(observe, names):
    if observe is None:
        return list(range(len(names)))
    idx = []
    for o in [observe] if isinstance(observe, (str, int)) else observe:
        if isinstance(o, str):
            if o not in names:
                raise ValueError(f"observe: unknown variable {o!r}; known: {list(names)}")
            idx.append(names.index(o))
        else:
            i = _int("observe", o, minimum=0)
            if i >= len(names):
                raise ValueError(f"observe: index {i} out of range for {len(names)} variables")
            idx.append(i)
    if not idx:
        raise ValueError("observe: no variable selected")
    return idx


def _initial_states(x0, sample, rng, dim):
    """Two initial states (train, test): sampled, or x0 of shape (D,) (train) / (2, D)."""
    sampled = np.stack([np.asarray(sample(rng), np.float64) for _ in range(2)])
    if x0 is None:
        return sampled
    x0 = np.asarray(x0, np.float64)
    if x0.shape not in ((dim,), (2, dim)):
        raise ValueError(f"x0 must have shape ({dim},) or (2, {dim}), got {x0.shape}")
    if not np.all(np.isfinite(x0)):
        raise ValueError("x0 must be finite")
    return np.stack([x0, sampled[1]]) if x0.ndim == 1 else x0


def _simulate(
    name, field, params, *, dim, names, sample_x0, period=None, n_steps, dt, transient=0,
    x0=None, t0=None, observe=None, seed=0, noise=0.05, standardize=True, dtype="float32",
    solver="tsit5", rtol=1e-8, atol=1e-10, max_steps=None, progress=None, extra_meta=None,
) -> Dataset:  # fmt: skip
    n_steps = _int("n_steps", n_steps)
    transient = _int("transient", transient, minimum=0)
    dt = _float("dt", dt, positive=True)
    seed = _int("seed", seed, minimum=0)
    noise = _float("noise", noise, nonneg=True)
    rtol = _float("rtol", rtol, positive=True)
    atol = _float("atol", atol, positive=True)
    dtype = _dtype(dtype)
    if solver not in SOLVERS:
        raise ValueError(f"solver: unknown {solver!r}; known: {sorted(SOLVERS)}")
    params = _check_params(params)
    obs = _observed(observe, list(names))
    streams = np.random.SeedSequence(seed).spawn(3)  # independent: x0, t0, noise
    ic_rng, t0_rng, noise_rng = (np.random.default_rng(s) for s in streams)
    x0s = _initial_states(x0, lambda r: sample_x0(r, params), ic_rng, dim)
    if t0 is None:
        t0s = t0_rng.uniform(0.0, period, 2) if period else np.zeros(2)
    else:
        t0s = np.asarray(t0, np.float64)
        if t0s.shape not in ((), (2,)) or not np.all(np.isfinite(t0s)):
            raise ValueError(f"t0 must be a finite scalar or pair, got {t0!r}")
        t0s = np.broadcast_to(t0s, (2,)).copy()
    if progress is None:
        progress = n_steps + transient >= LONG_RUN
    ys = integrate(
        field, x0s, t0s, n_steps=n_steps, dt=dt, args=params, transient=transient,
        solver=solver, rtol=rtol, atol=atol, max_steps=max_steps, progress=progress,
    )  # fmt: skip
    clean = ys[:, :, obs]  # (2, T, N) float64
    mean, std = clean[0].mean(0), clean[0].std(0)
    std = np.where(std > 0, std, 1.0)
    train = clean[0] + noise_rng.normal(size=clean[0].shape) * (noise * std)
    test = clean[1]
    if standardize:
        train, test = (train - mean) / std, (test - mean) / std
    else:
        mean, std = np.zeros_like(mean), np.ones_like(std)
    meta = dict(
        format=FORMAT, system=name, params=params, dt=dt, n_steps=n_steps, seed=seed,
        noise=noise, noise_std=(noise * clean[0].std(0)), x0=x0s, t0=t0s, transient=transient,
        t_first=t0s + transient * dt, observed=obs, variables=[names[i] for i in obs],
        state_variables=list(names), standardized=bool(standardize), mean=mean, std=std,
        solver=solver, rtol=rtol, atol=atol, max_steps=max_steps, dtype=dtype.name,
        splits={"train": "noisy" if noise > 0 else "clean", "test": "clean"},
        version=_version(), **(extra_meta or {}),
    )  # fmt: skip
    return Dataset(train.astype(dtype), test.astype(dtype), dt, _jsonable(meta))


_COMMON_DOC = """
    Common keyword arguments: ``n_steps`` (kept samples per trajectory), ``dt``, ``transient``
    (samples integrated and discarded before the kept ones), ``seed`` (initial conditions, start
    times and noise), ``noise`` (train noise std as a fraction of the clean per-variable std,
    paper 0.05; the test trajectory stays clean), ``x0`` ((D,) for train or (2, D) for train and
    test; default: sampled), ``t0`` (scalar or pair), ``observe`` (indices or names of the observed
    variables), ``standardize`` (per variable with the clean train statistics), ``dtype``
    (default float32), ``solver`` ("tsit5", "dopri5", "dopri8"), ``rtol``/``atol`` (PID step-size
    controller, default 1e-8/1e-10, integration in float64), ``max_steps``, ``progress`` (tqdm
    bar; default on for runs of >= 50,000 steps).
"""


_OPTIONS = {"n_steps", "dt", "transient", "x0", "t0", "observe", "seed", "noise", "standardize",
            "dtype", "solver", "rtol", "atol", "max_steps", "progress"}  # fmt: skip


def _system_dataset(name, params, kw, extra_meta=None):
    sys_ = SYSTEMS[name]
    unknown = set(kw) - _OPTIONS
    if unknown:
        raise TypeError(f"{name}: unexpected keyword arguments {sorted(unknown)}")
    params = {**sys_.params, **params}
    chk = _check_params(params)
    names = sys_.names(chk)
    kw.setdefault("observe", sys_.observed)
    kw.setdefault("transient", sys_.transient)
    return _simulate(
        name, sys_.field, chk, dim=len(names), names=names, sample_x0=sys_.sample_x0,
        period=sys_.t0_period(chk) if sys_.t0_period else None, extra_meta=extra_meta, **kw,
    )  # fmt: skip


def lorenz63(n_steps=100_000, *, dt=0.01, sigma=10.0, rho=28.0, beta=8 / 3, **kw) -> Dataset:
    """Lorenz-63 (App. F, Eq. 62): σ=10, ρ=28, β=8/3, Δt=0.01, 100,000 steps.

    Default transient: 1,000 steps from a random x0 (the paper states none).
    """
    params = dict(sigma=sigma, rho=rho, beta=beta)
    return _system_dataset("lorenz63", params, dict(kw, n_steps=n_steps, dt=dt))


def lorenz96(
    n_steps=100_000, *, dt=5e-3, N=6, F0=14.0, A=12.0, omega=2 * math.pi / 75, **kw
) -> Dataset:
    """Forced Lorenz-96 (App. F, Eq. 63): N=6, F0=14, A=12, ω=2π/75, Δt=5e-3, 100,000 steps.

    The forcing period 2π/ω = 75 time units is 15,000 steps at Δt = 5e-3
    (``meta["forcing_period_steps"]``). t0 of each trajectory is drawn uniformly over one period.
    """
    N = _int("N", N, minimum=4)
    period = 2 * math.pi / _float("omega", omega, positive=True) / _float("dt", dt, positive=True)
    return _system_dataset(
        "lorenz96", dict(N=N, F0=F0, A=A, omega=omega), dict(kw, n_steps=n_steps, dt=dt),
        extra_meta={"forcing_period_steps": round(period, 9)},
    )  # fmt: skip


def bursting_neuron(
    n_steps=160_000, *, dt=0.025, preset="standard", full_state=False, **kw
) -> Dataset:
    """Bursting neuron (Durstewitz 2009; App. F, Eqs. 64–65; SPEC §7), state (V, n, h).

    Δt=0.025, 5000 time units of which the first 1000 (40,000 steps) are cut → 160,000 steps.
    Only V and n are observed (N = 2) unless ``full_state=True`` or ``observe`` is given.
    Presets: ``"standard"`` (τh=200, gM=25, Vh,M=−15: quiescent inter-burst gaps ≈ 3,360 steps,
    burst period ≈ 5,920) and ``"slow"`` (seed's Table A1 τh=1000, Vh,M=−18, with gM=30: gaps
    ≈ 13,580 steps, period ≈ 18,800); ``meta["interburst_gap_steps"]`` holds the median gap
    measured on the clean test trajectory. Any vector-field parameter (``C, I, g_L, E_L, g_Na,
    E_Na, Vh_Na, k_Na, g_K, E_K, Vh_K, k_K, tau_n, g_M, Vh_M, k_M, tau_h, g_NMDA, E_NMDA``) may be
    overridden by keyword. ``x0="paper"`` starts the train trajectory at the paper's
    (−24.4694, 0.0386, 0.0231).
    """
    if preset not in NEURON_PRESETS:
        raise ValueError(f"preset: unknown {preset!r}; known: {sorted(NEURON_PRESETS)}")
    params = {k: kw.pop(k) for k in list(kw) if k in NEURON_PRESETS[preset]}
    if isinstance(kw.get("x0"), str):
        if kw["x0"] != "paper":
            raise ValueError(f"x0: unknown {kw['x0']!r}; use 'paper' or an array")
        kw["x0"] = NEURON_X0
    if full_state:
        kw.setdefault("observe", (0, 1, 2))
    ds = _system_dataset(
        "bursting_neuron", {**NEURON_PRESETS[preset], **params}, dict(kw, n_steps=n_steps, dt=dt),
        extra_meta={"preset": preset},
    )  # fmt: skip
    if 0 in ds.meta["observed"]:  # measured on the clean test trajectory (None: no full gap)
        v = ds.destandardize(ds.test)[:, ds.meta["observed"].index(0)]
        gaps = interburst_gaps(v)[0]
        ds.meta["interburst_gap_steps"] = float(np.median(gaps)) if len(gaps) else None
    return ds


def from_vector_field(
    f: Callable, x0, *, args=None, dt, n_steps, name="custom", variables=None, **kw
) -> Dataset:
    """Data set from any vector field ``f(t, x, args)`` (diffrax convention), same recipe.

    ``x0``: an array (D,) (train; the test trajectory starts from it plus a unit Gaussian
    perturbation), (2, D) (train, test), or a callable ``rng -> (D,)`` sampling initial states
    from a NumPy Generator. ``args``: a dict of numeric parameters passed to ``f``.

    Example::

        def duffing(t, x, p):
            return jnp.stack([x[1], -p["d"] * x[1] + x[0] - x[0] ** 3])
        ds = data_gen.from_vector_field(duffing, [1.0, 0.0], args={"d": 0.2}, dt=0.05, n_steps=5000)
    """
    if not callable(f):
        raise TypeError(f"f must be callable f(t, x, args), got {type(f).__name__}")
    if args is not None and not isinstance(args, dict):
        raise TypeError("args must be a dict of numeric parameters (or None)")
    if callable(x0):
        draw, x0 = x0, None
        sample = lambda r, p: draw(r)  # noqa: E731
        dim = int(np.asarray(sample(np.random.default_rng(0), None)).shape[-1])
    else:
        x0 = np.asarray(x0, np.float64)
        if x0.ndim not in (1, 2) or x0.shape[-1] < 1:
            raise ValueError(f"x0 must have shape (D,) or (2, D), got {x0.shape}")
        dim, base = x0.shape[-1], x0.reshape(-1, x0.shape[-1])[0]
        sample = lambda r, p: base + r.normal(size=dim)  # noqa: E731
    names = tuple(variables) if variables is not None else tuple(f"x{i + 1}" for i in range(dim))
    if len(names) != dim:
        raise ValueError(f"variables: {len(names)} names for {dim} state variables")
    return _simulate(
        str(name), f, dict(args or {}), dim=dim, names=names, sample_x0=sample, x0=x0,
        n_steps=n_steps, dt=dt, **kw,
    )  # fmt: skip


for _fn in (lorenz63, lorenz96, bursting_neuron, from_vector_field):
    if _fn.__doc__:  # None under python -OO
        _fn.__doc__ += _COMMON_DOC


# ----------------------------------------------------------------------------- LDS (paper 002)


def lds(
    n_steps=30, *, n_sequences=1000, n_test=None, state_dim=5, obs_dim=1, rho=(0.5, 0.95),
    sigma_w=0.1, sigma_v=0.1, A=None, C=None, seed=0, standardize=False, dtype="float32",
) -> Dataset:  # fmt: skip
    """Random stable linear dynamical systems (papers/002): x_{t+1} = A x_t + w_t, y_t = C x_t + v_t

    One system per sequence for in-context learning: A = G·r/ρ(G) with G ~ N(0, 1/d) i.i.d. (a
    centrosymmetric law, A and −A equally likely) and spectral radius r ~ U(rho); C ~ N(0, 1/d);
    x_0 ~ N(0, I); w_t ~ N(0, σ_w² I), v_t ~ N(0, σ_v² I) (paper: T=30, d=5, scalar y). Pass
    ``A`` (d, d) and/or ``C`` (obs_dim, d) to fix the system. ``train``/``test`` have shape
    ``(n_sequences, n_steps, obs_dim)`` / ``(n_test, ...)``; the matrices and initial states are
    in ``arrays`` (``A_train``, ``C_train``, ``x0_train``, and ``*_test``).
    """
    n_steps = _int("n_steps", n_steps)
    n_seq = _int("n_sequences", n_sequences)
    n_test = max(1, n_seq // 10) if n_test is None else _int("n_test", n_test)
    d, m = _int("state_dim", state_dim), _int("obs_dim", obs_dim)
    seed = _int("seed", seed, minimum=0)
    sigma_w = _float("sigma_w", sigma_w, nonneg=True)
    sigma_v = _float("sigma_v", sigma_v, nonneg=True)
    lo, hi = (_float("rho", r, nonneg=True) for r in np.broadcast_to(rho, (2,)))
    if lo > hi:
        raise ValueError(f"rho must be a (low, high) range, got {rho!r}")
    dtype = _dtype(dtype)
    fixed = {}
    for key, val, shape in (("A", A, (d, d)), ("C", C, (m, d))):
        if val is not None:
            val = np.asarray(val, np.float64)
            if val.shape != shape or not np.all(np.isfinite(val)):
                raise ValueError(f"{key} must be a finite array of shape {shape}")
            fixed[key] = val
    rng = np.random.default_rng(seed)
    out, arrays = {}, {}
    for split, b in (("train", n_seq), ("test", n_test)):
        if "A" in fixed:
            As = np.broadcast_to(fixed["A"], (b, d, d)).copy()
        else:
            G = rng.normal(0.0, 1.0 / math.sqrt(d), (b, d, d))
            radius = np.abs(np.linalg.eigvals(G)).max(-1)
            As = G * (rng.uniform(lo, hi, b) / radius)[:, None, None]
        Cs = fixed.get("C", None)
        Cs = (np.broadcast_to(Cs, (b, m, d)).copy() if Cs is not None
              else rng.normal(0.0, 1.0 / math.sqrt(d), (b, m, d)))  # fmt: skip
        x = rng.normal(size=(b, d))
        arrays[f"x0_{split}"] = x.copy()
        ys = np.empty((b, n_steps, m))
        for t in range(n_steps):
            ys[:, t] = np.einsum("bmd,bd->bm", Cs, x) + sigma_v * rng.normal(size=(b, m))
            x = np.einsum("bij,bj->bi", As, x) + sigma_w * rng.normal(size=(b, d))
        out[split], arrays[f"A_{split}"], arrays[f"C_{split}"] = ys, As, Cs
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
        variables=[f"y{i + 1}" for i in range(m)], standardized=bool(standardize), mean=mean,
        std=std, solver="exact recurrence", rtol=None, atol=None, dtype=dtype.name,
        version=_version(),
    )  # fmt: skip
    return Dataset(train.astype(dtype), test.astype(dtype), 1.0, _jsonable(meta), arrays)


# ----------------------------------------------------------------------------- entry points

GENERATORS = {
    "lorenz63": lorenz63, "lorenz96": lorenz96, "bursting_neuron": bursting_neuron, "lds": lds,
}  # fmt: skip


def generate(name: str, **params) -> Dataset:
    """Generate the named benchmark data set (paper defaults, App. F); ``params`` override them."""
    if name not in GENERATORS:
        raise ValueError(f"name: unknown system {name!r}; known: {sorted(GENERATORS)}")
    return GENERATORS[name](**params)


def _resolve(system, params):
    if callable(system):
        if params:
            raise TypeError(f"unexpected keyword arguments {sorted(params)}; pass args={{...}}")
        return system, None, None
    if system not in SYSTEMS:
        raise ValueError(f"system: unknown ODE system {system!r}; known: {sorted(SYSTEMS)}")
    s = SYSTEMS[system]
    base = dict(s.params)
    if system == "bursting_neuron":
        preset = params.pop("preset", "standard")
        if preset not in NEURON_PRESETS:
            raise ValueError(f"preset: unknown {preset!r}; known: {sorted(NEURON_PRESETS)}")
        base = dict(NEURON_PRESETS[preset])
    unknown = set(params) - set(base)
    if unknown:
        raise ValueError(f"{system}: unknown parameters {sorted(unknown)}; known: {sorted(base)}")
    return s.field, _check_params({**base, **params}), s


def initial_conditions(system: str, n: int, *, seed=0, **params) -> np.ndarray:
    """``n`` random initial states ``(n, D)`` from the system's sampler (as :func:`generate`)."""
    _, p, s = _resolve(system, params)
    if s is None:
        raise TypeError("system: initial_conditions needs a registered system name")
    rng = np.random.default_rng(_int("seed", seed, minimum=0))
    return np.stack([s.sample_x0(rng, p) for _ in range(_int("n", n))])


def trajectories(
    system, x0s, n_steps: int, *, dt=None, t0=0.0, transient=0, solver="tsit5", rtol=1e-8,
    atol=1e-10, max_steps=None, progress=None, args=None, **params,
) -> np.ndarray:  # fmt: skip
    """Many raw (clean, full-state, float64) trajectories at once, vmapped over one diffrax solve.

    ``system``: a registered name (``params`` override its parameters, ``preset=`` for the neuron)
    or a vector field ``f(t, x, args)`` (``args`` passed through). ``x0s``: (B, D), e.g. from
    :func:`initial_conditions`; ``t0``: scalar or (B,). Returns ``(B, n_steps, D)``, sample k at
    time ``t0 + (transient + k)·dt``.
    """
    field, p, s = _resolve(system, params)
    if s is None:
        p = args
        if dt is None:
            raise ValueError("dt: required for a user vector field")
    dt = _float("dt", s.dt if dt is None else dt, positive=True)
    t0s = np.asarray(t0, np.float64)
    n_steps, transient = _int("n_steps", n_steps), _int("transient", transient, minimum=0)
    x0s = np.asarray(x0s, np.float64)
    if x0s.ndim != 2 or not np.all(np.isfinite(x0s)):
        raise ValueError(f"x0s must be a finite (B, D) array, got shape {x0s.shape}")
    if t0s.shape not in ((), (len(x0s),)) or not np.all(np.isfinite(t0s)):
        raise ValueError(f"t0 must be a finite scalar or ({len(x0s)},) array")
    t0s = np.broadcast_to(t0s, (len(x0s),))
    if progress is None:
        progress = n_steps + transient >= LONG_RUN
    return integrate(field, x0s, t0s, n_steps=n_steps, dt=dt, args=p, transient=transient,
                     solver=solver, rtol=_float("rtol", rtol, positive=True),
                     atol=_float("atol", atol, positive=True), max_steps=max_steps,
                     progress=progress)  # fmt: skip
