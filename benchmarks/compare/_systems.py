"""The systems of the comparison: dysts systems (see `_dysts`: the right-hand side re-bound to
jax.numpy and integrated by `data_gen`'s diffrax integrator where that reproduces dysts' own
values, else dysts' NumPy right-hand side integrated by scipy), and Lorenz-96 from `data_gen`.

dysts' parameters, initial condition and period are used, and its coordinate post-processing
(19 systems map an angle or phase coordinate, which grows or diffuses without bound, to its
sine or cosine, as dysts' `make_trajectory` does by default) is applied to the observations.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _dysts
from ._dysts import NotSupported

# Default set: different kinds of chaos (polynomial, piecewise-linear, trigonometric,
# exponential (YuWang), a neuron, a 4-D hyperchaotic one) and Lorenz-96 from data_gen.
DEFAULT_SYSTEMS = ("Lorenz", "Rossler", "Thomas", "Halvorsen", "Chua", "HindmarshRose",
                   "YuWang", "HyperRossler", "Lorenz96")
QUICK_SYSTEMS = ("Lorenz", "Thomas")
# Four more, named before the rerun of issue 30 and not tuned on (`--extra`): dysts flows the
# data step handles (`--check-systems`: diffrax on the jax.numpy copy, test and floor within 5
# train stds), of kinds outside the default set: a quadratic 3-D convection model
# (Rucklidge), a 4-D hyperchaotic quadratic one (HyperBao), a 6-D neural network with
# sigmoid-type terms (Hopfield) and a 3-D magnetosphere model with tanh and a fractional
# power (WindmiReduced).
EXTRA_SYSTEMS = ("Rucklidge", "HyperBao", "Hopfield", "WindmiReduced")
L96 = "Lorenz96"  # data_gen's field, not dysts' (dysts has its own `Lorenz96`)
DIFFRAX = "diffrax Tsit5 (jax.numpy copy of the dysts right-hand side)"
IC_SHRINK = (1.0, 0.1, 0.01)


def dysts_names() -> list[str]:
    """Every continuous-time system name in dysts."""
    return _dysts.flow_names()


@functools.lru_cache(maxsize=16)
def get_system(name: str, pts_per_period: int, numpy_rhs: bool = False) -> "System":
    """One `System` per settings in a process: `check_systems` builds it, `run` reuses it."""
    return System(name, pts_per_period, numpy_rhs)


def check_systems(names, numpy_rhs: bool = False, pts_per_period: int = 100) -> list[str]:
    """The `--systems` names, checked before anything long runs: each must be a dysts flow this
    comparison supports (or `Lorenz96`); one line naming the system and why otherwise."""
    names = list(names)
    if len(set(names)) != len(names):
        raise SystemExit(f"error: --systems: names repeated in {names}")
    for n in names:
        if n == L96:
            continue
        try:
            get_system(n, pts_per_period, numpy_rhs)
        except KeyError:
            raise SystemExit(f"error: --systems: {n!r} is not a dysts system (nor {L96!r}); "
                             f"known: {', '.join(dysts_names())}") from None
        except NotSupported as e:
            raise SystemExit(f"error: --systems: {n!r} is not supported: {e}") from None
    return names


class System:
    """One system: its sampling `dt`, `x0`, dysts' largest Lyapunov exponent estimate
    (`lyap_ref`, NaN where there is none), `trajectories` (raw float64) and `flow_map` (the
    RK4 map of the floor). `field` is the JAX vector field, or None where the fallback (dysts'
    NumPy right-hand side, `np_rhs`) is used (for every dysts system with `numpy_rhs`);
    `info()` says which, for the JSON."""

    def __init__(self, name: str, pts_per_period: int, numpy_rhs: bool = False):
        self.name = name
        self.np_rhs = None
        self.field_note = ""
        self.integrator = None  # set by `trajectories`
        self.ic_shrink = None  # set by `make_data`
        self.post = None  # (numpy, jax) post-processing of the raw state into observations
        self._cache = {}
        if name == L96:
            from data_gen._registry import resolve_system

            field, p, _ = resolve_system("lorenz96", {"A": 0.0})
            self.field, self.args = field, p
            self.dim = int(p["N"])
            self.x0 = np.full(self.dim, float(p["F0"])) + 0.1 * np.arange(self.dim)
            self.period = 1.5  # no dysts period: a few multiples of the error-growth time
            self.lyap_ref = float("nan")
            self.kind = "data_gen lorenz96, N=6, F=14, A=0 (autonomous)"
        else:
            s = _dysts.load(name)  # KeyError / NotSupported
            self.dysts = s
            self.x0 = np.asarray(s.ic, np.float64).reshape(-1)
            self.dim = self.x0.size
            if s.period is None or not np.isfinite(float(s.period)) or float(s.period) <= 0:
                raise NotSupported("dysts gives it no period, so no points-per-period sampling")
            self.period = float(s.period)
            pts = _dysts.probe_points(s)
            try:
                self.np_rhs = _dysts.NumpyRHS(s, pts)
            except Exception as e:
                raise NotSupported(f"its dysts right-hand side fails at perturbed initial "
                                   f"conditions ({type(e).__name__}: {e})") from None
            with np.errstate(all="ignore"):
                finite = np.all(np.isfinite(self.np_rhs(pts)))
            if not finite:
                raise NotSupported("its dysts right-hand side is not finite at perturbed "
                                   "initial conditions")
            _dysts.check_autonomous(self.np_rhs, pts, self.period)
            field = _dysts.jax_field(s)
            why = ("--numpy-rhs" if numpy_rhs else
                   _dysts.field_mismatch(field, self.np_rhs, pts))
            self.field, self.args = (field, None) if why is None else (None, None)
            self.field_note = why or ""
            self.post = _dysts.postprocessing(s)
            self.lyap_ref = float(getattr(s, "maximum_lyapunov_estimated", np.nan) or np.nan)
            self.kind = "dysts"
        self.dt = self.period / pts_per_period

    def trajectories(self, x0s, n_steps: int, transient: int) -> np.ndarray:
        """Raw float64 trajectories `(B, n_steps, D)` from `x0s` (diffrax where the JAX field
        is used and its solve succeeds, else scipy on dysts' own right-hand side)."""
        x0s = np.asarray(x0s, np.float64)
        key = (x0s.tobytes(), n_steps, transient)
        if key in self._cache:
            return self._cache[key]
        raw = None
        if self.field is not None:
            from data_gen._integrate import integrate

            self.field_note = ""  # (a note of an earlier call's diffrax failure)
            try:
                raw = integrate(self.field, x0s, np.zeros(len(x0s)), n_steps=n_steps,
                                dt=self.dt, args=self.args, transient=transient, rtol=1e-9,
                                atol=1e-11, max_steps=200_000)
            except RuntimeError as e:
                if self.np_rhs is None:
                    raise
                self.field_note = f"diffrax failed ({e})"
            if raw is not None and self.np_rhs is not None:  # the copy again, on the attractor
                pts = raw[:, :: max(1, n_steps // 32)].reshape(-1, self.dim)
                why = _dysts.field_mismatch(self.field, self.np_rhs, pts)
                if why is not None:
                    self.field, raw = None, None
                    self.field_note = why + " on the trajectory"
            if raw is not None:
                self.integrator = DIFFRAX if self.np_rhs is not None else "diffrax Tsit5"
        if raw is None:
            raw, method = _dysts.solve_scipy(self.np_rhs, self.dysts, x0s, n_steps, self.dt,
                                             transient)
            self.integrator = f"scipy solve_ivp {method} (dysts' NumPy right-hand side)"
            if self.field is not None:  # diffrax failed: is the copy still right for the floor?
                pts = raw[:, :: max(1, n_steps // 32)].reshape(-1, self.dim)
                why = _dysts.field_mismatch(self.field, self.np_rhs, pts)
                if why is not None:
                    self.field = None
                    self.field_note += f"; {why} on the trajectory"
        self._cache[key] = raw
        return raw

    def flow_map(self, substeps: int):
        """`x -> x(t + dt)` by `substeps` RK4 steps, a JAX function: of the JAX field, or (the
        fallback) of dysts' NumPy right-hand side through a host callback. Autonomous systems
        only (checked), so t = 0."""
        from ._member import rk4_map

        if self.field is not None:
            return rk4_map(lambda x: self.field(0.0, x, self.args), self.dt, substeps)
        return _dysts.host_rk4_map(self.np_rhs, self.dt, substeps)

    def info(self) -> dict:
        """What the JSON records about how this system was made."""
        return dict(dim=self.dim, dt=self.dt, period=self.period, source=self.kind,
                    integrator=self.integrator,
                    floor_map=("RK4 on the JAX field" if self.field is not None else
                               "RK4 on dysts' NumPy right-hand side (host callback)"),
                    fallback_reason=self.field_note or None,
                    rhs_vectorized=None if self.np_rhs is None else self.np_rhs.vectorized,
                    postprocessed=self.post is not None, ic_shrink=self.ic_shrink)


def perturbed_trajectories(system: System, u: np.ndarray, n_steps: int,
                           transient: int) -> tuple[np.ndarray, np.ndarray, float]:
    """`(raw, x0s, shrink)`: the true system's float64 trajectories `(B, n_steps, D)` from
    `x0s` = dysts' x0 + shrink × 0.1 (|x0| + 1) × `u` (one row per trajectory), `shrink` the
    first of `IC_SHRINK` whose solve succeeds (a perturbation that leaves the basin blows the
    solve up: smaller); an error if none does or the solve is not finite."""
    scale = 0.1 * (np.abs(system.x0) + 1.0)
    errors = []
    for shrink in IC_SHRINK:
        x0s = system.x0 + shrink * scale * u
        try:
            raw = system.trajectories(x0s, n_steps, transient)
            break
        except RuntimeError as e:
            errors.append(f"×{shrink:g}: {e}")
    else:
        raise RuntimeError(f"{system.name}: the true system's solve failed from the perturbed "
                           f"initial conditions (perturbation " + "; ".join(errors) + ")")
    if not np.all(np.isfinite(raw)):
        raise RuntimeError(f"{system.name}: the true system's solve is not finite")
    return raw, x0s, shrink


def observed(system: System, raw: np.ndarray) -> np.ndarray:
    """What is observed of raw states: dysts' post-processed coordinates where it has them."""
    return raw if system.post is None else system.post[0](raw)


def make_data(system: System, n_train: int, n_test: int, transient: int, noise: float,
              seed: int) -> dict:
    """Train (its last fifth is the validation split), test and an independent floor trajectory
    from three initial conditions; standardized with the clean train mean and std; `noise`:
    Gaussian observation noise (fraction of the clean std) on train and validation only.
    The initial conditions are dysts' plus 0.1 (|x0| + 1) × N(0, 1), the perturbation shrunk
    by 10 (and 100) where the solve from it fails (it left the basin: `ic_shrink` in `info`).
    Observations are dysts' post-processed coordinates where it has them; `test_raw` is the raw
    state of the test trajectory (the floor's warm-up needs it then)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((3, system.dim))
    raw, x0s, system.ic_shrink = perturbed_trajectories(system, u, max(n_train, n_test),
                                                        transient)
    obs = observed(system, raw)
    train, test, floor = obs[0, :n_train], obs[1, :n_test], obs[2, :n_test]
    mean, std = train.mean(0), train.std(0)
    std = np.where(std > 0, std, 1.0)
    z = lambda x: ((x - mean) / std).astype(np.float32)  # noqa: E731
    train_s = z(train)
    if noise:
        train_s = train_s + (noise * rng.standard_normal(train_s.shape)).astype(np.float32)
    n_val = n_train // 5
    return dict(train=train_s[:-n_val], val=train_s[-n_val:], test=z(test), floor=z(floor),
                mean=mean, std=std, x0s=x0s, test_raw=raw[1, :n_test])
