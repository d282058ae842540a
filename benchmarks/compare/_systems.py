"""The systems of the comparison: dysts right-hand sides integrated by `data_gen`'s diffrax
integrator, and Lorenz-96 from `data_gen`.

A dysts system's `_rhs(*x, t, *params)` is written against NumPy (`np.sin`, `np.abs`, ...).
Without numba it is a plain Python function, so a copy of it whose global `np` is
`jax.numpy` is a JAX vector field: it is traced once and integrated by diffrax (Tsit5, PID,
float64, rtol 1e-9) for all initial conditions in one vmapped solve, instead of dysts' own
integrator (scipy `solve_ivp` calling the Python function point by point, very slow without
numba). dysts' parameters, initial condition and period are used; its coordinate
post-processing (a few systems) is not applied.
"""

from __future__ import annotations

import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np

# Default set: different kinds of chaos (polynomial, piecewise-linear, trigonometric,
# exponential (YuWang), a neuron, a 4-D hyperchaotic one) and Lorenz-96 from data_gen.
DEFAULT_SYSTEMS = ("Lorenz", "Rossler", "Thomas", "Halvorsen", "Chua", "HindmarshRose",
                   "YuWang", "HyperRossler", "Lorenz96")
QUICK_SYSTEMS = ("Lorenz", "Thomas")
L96 = "Lorenz96"  # data_gen's field, not dysts' (dysts has its own `Lorenz96`)


def _dysts():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Numba not installed": we do not use its integrator
        import dysts.flows as flows
    return flows


def dysts_names() -> list[str]:
    """Every continuous-time system name in dysts."""
    import dysts.systems

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(dysts.systems.get_attractor_list("continuous"))


def check_systems(names) -> list[str]:
    """The `--systems` names, checked before anything long runs."""
    names = list(names)
    known = None
    for n in names:
        if n == L96:
            continue
        flows = _dysts()
        if not (hasattr(flows, n) and isinstance(getattr(flows, n), type)):
            known = known or dysts_names()
            raise SystemExit(f"error: --systems: {n!r} is not a dysts system (nor {L96!r}); "
                             f"known: {', '.join(known)}")
        sys = getattr(flows, n)()
        System(n, 30)  # traces the right-hand side once (a clear error if it cannot)
        if getattr(sys, "delay", False):
            raise SystemExit(f"error: --systems: {n!r} is a delay equation; only ODEs are "
                             f"supported")
    if len(set(names)) != len(names):
        raise SystemExit(f"error: --systems: names repeated in {names}")
    return names


class System:
    """One system: `field(t, x, args)` (JAX), `x0`, sampling `dt`, dysts' largest Lyapunov
    exponent estimate (`lyap_ref`, NaN where there is none)."""

    def __init__(self, name: str, pts_per_period: int):
        self.name = name
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
            s = getattr(_dysts(), name)()
            f = type(s)._rhs
            f = getattr(f, "py_func", f)
            g = types.FunctionType(f.__code__, {**f.__globals__, "np": jnp}, f.__name__,
                                   f.__defaults__, f.__closure__)
            plist = [float(v) if np.ndim(v) == 0 else jnp.asarray(v) for v in s.param_list]

            def field(t, x, args, g=g, plist=plist):
                return jnp.stack(jnp.broadcast_arrays(*g(*x, t, *plist)))

            try:  # the NumPy right-hand side traced with jax.numpy
                jax.eval_shape(lambda x: field(0.0, x, None),
                               jax.ShapeDtypeStruct(np.shape(s.ic), jnp.float32))
            except Exception as e:
                raise SystemExit(f"error: --systems: {name!r}: its dysts right-hand side does "
                                 f"not trace with jax.numpy ({type(e).__name__}: {e}); this "
                                 f"comparison integrates with diffrax only") from None
            self.field, self.args = field, None
            self.x0 = np.asarray(s.ic, np.float64)
            self.dim = self.x0.size
            self.period = float(s.period)
            self.lyap_ref = float(getattr(s, "maximum_lyapunov_estimated", np.nan) or np.nan)
            self.kind = "dysts"
        self.dt = self.period / pts_per_period

    def trajectories(self, x0s, n_steps: int, transient: int) -> np.ndarray:
        """Raw float64 trajectories `(B, n_steps, D)` from `x0s`."""
        from data_gen._integrate import integrate

        x0s = np.asarray(x0s, np.float64)
        return integrate(self.field, x0s, np.zeros(len(x0s)), n_steps=n_steps, dt=self.dt,
                         args=self.args, transient=transient, rtol=1e-9, atol=1e-11,
                         max_steps=200_000)

    def jnp_field(self):
        """`x -> dx/dt` at t = 0 (the systems here are autonomous), for RK4 maps."""
        return lambda x: self.field(0.0, x, self.args)


def make_data(system: System, n_train: int, n_test: int, transient: int, noise: float,
              seed: int) -> dict:
    """Train (its last fifth is the validation split), test and an independent floor trajectory
    from three initial conditions; standardized with the clean train mean and std; `noise`:
    Gaussian observation noise (fraction of the clean std) on train and validation only."""
    rng = np.random.default_rng(seed)
    scale = 0.1 * (np.abs(system.x0) + 1.0)
    x0s = system.x0 + scale * rng.standard_normal((3, system.dim))
    raw = system.trajectories(x0s, max(n_train, n_test), transient)
    if not np.all(np.isfinite(raw)):
        raise RuntimeError(f"{system.name}: the true system's solve is not finite")
    train, test, floor = raw[0, :n_train], raw[1, :n_test], raw[2, :n_test]
    mean, std = train.mean(0), train.std(0)
    std = np.where(std > 0, std, 1.0)
    z = lambda x: ((x - mean) / std).astype(np.float32)  # noqa: E731
    train_s = z(train)
    if noise:
        train_s = train_s + (noise * rng.standard_normal(train_s.shape)).astype(np.float32)
    n_val = n_train // 5
    return dict(train=train_s[:-n_val], val=train_s[-n_val:], test=z(test), floor=z(floor),
                mean=mean, std=std, x0s=x0s)
