"""A dysts system as this comparison uses it.

dysts writes each right-hand side against NumPy, either as a static `_rhs(*x, t, *params)` or
as an instance method `rhs(self, X, t)` that may call other methods of its class (`diode`,
`_rotlet`, ...). Without numba these are plain Python, so copies of them whose global `np` is
`jax.numpy` (and whose `max(a, b)` / `min(a, b)` are elementwise) are JAX vector fields:
traced once, integrated by `data_gen`'s diffrax integrator. Such a copy is used only where it
traces and gives dysts' own NumPy values (checked at perturbed initial conditions and again
on the integrated trajectory).

Where it does not (item assignment, conditionals on values, NumPy-only calls, ...), the
**fallback** is dysts' own right-hand side: integrated by scipy's `solve_ivp` (LSODA, which
switches between non-stiff Adams and stiff BDF steps by itself; Radau, dysts' own default,
where LSODA fails; dysts' Jacobian where it has one; the same tolerances and sampling), and,
for the true-system floor and the Lyapunov reference, stepped by the same RK4 map as the JAX
fields but on the host (`jax.pure_callback`, its tangent by central finite differences of
that map in float64). The same scipy integrator makes the data where the diffrax solve fails
(a stiff system past its step cap); the copy then still serves the floor if it agrees on
that trajectory.

Refused, with one line naming the system and why, before anything trains: delay equations
(`DynSysDelay`: the state is a history, not a point), discrete maps (`dysts.maps`) and
non-autonomous right-hand sides (depending on t explicitly: the models here are autonomous
maps).
"""

from __future__ import annotations

import builtins
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np

RTOL, ATOL = 1e-9, 1e-11
MAX_EVALS = 2_000_000  # right-hand side evaluations per trajectory before a method gives up


class NotSupported(Exception):
    """A dysts name this comparison refuses (the message says why)."""


def _quiet_import():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Numba not installed": we do not need it
        import dysts.base as base
        import dysts.flows as flows
        import dysts.maps as maps
    return base, flows, maps


def flow_names() -> list[str]:
    """Every continuous-time dysts system name (ODEs and delay equations)."""
    _quiet_import()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import dysts.systems

        return sorted(dysts.systems.get_attractor_list("continuous"))


def load(name: str):
    """The dysts instance, or `NotSupported` / `KeyError` (not a dysts name)."""
    base, flows, maps = _quiet_import()
    cls = getattr(flows, name, None)
    if isinstance(cls, type) and issubclass(cls, base.DynSysDelay):
        raise NotSupported("a delay differential equation (dysts DynSysDelay): its state is "
                           "the history over the last τ, not a point, and every method here "
                           "is a map on points")
    if isinstance(cls, type) and issubclass(cls, base.DynSys):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls()
    mcls = getattr(maps, name, None)
    if isinstance(mcls, type) and issubclass(mcls, base.DynMap):
        raise NotSupported("a discrete map (dysts.maps), not a flow; this comparison samples "
                           "ODEs by points per period")
    raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# dysts' own NumPy right-hand side, batched


def _overrides_rhs(s) -> bool:
    base, _, _ = _quiet_import()
    return type(s).rhs is not base.DynSys.rhs


def _stack(out, batch: tuple) -> np.ndarray:
    """dysts' output (a tuple of components, some maybe constants, or an array) as `(D, *batch)`."""
    if isinstance(out, (tuple, list)):
        parts = [np.asarray(o, np.float64) for o in out]
        return np.stack(np.broadcast_arrays(*parts, np.zeros(batch))[:-1])
    return np.asarray(out, np.float64)


class NumpyRHS:
    """`f(X (B, D), t) -> (B, D)` float64 from dysts' own `rhs`: one call on the whole batch
    where dysts' code is elementwise (checked against a loop over points), else the loop."""

    def __init__(self, s, probe: np.ndarray):
        self.s, self.dim = s, probe.shape[1]
        self._T = _overrides_rhs(s)  # `rhs(X (D, B))` vs the base `rhs(X (B, D))`
        self.vectorized = False
        with np.errstate(all="ignore"):
            loop = self._loop(probe, 0.0)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                vec = self._vec(probe, 0.0)
            self.vectorized = vec.shape == loop.shape and np.allclose(
                vec, loop, rtol=1e-12, atol=1e-12, equal_nan=True)
        except Exception:
            pass

    def one(self, x: np.ndarray, t: float) -> np.ndarray:
        out = self.s.rhs(np.asarray(x, np.float64), t)
        a = np.asarray(out, np.float64) if not isinstance(out, (tuple, list)) else None
        if a is None:
            try:
                a = np.array(out, dtype=np.float64)
            except ValueError:
                a = _stack(out, ())
        return a.reshape(self.dim)

    def _loop(self, X, t):
        return np.stack([self.one(x, t) for x in X])

    def _vec(self, X, t):
        X = np.asarray(X, np.float64)
        out = self.s.rhs(X.T, t) if self._T else self.s.rhs(X, t)
        try:  # fast path: a tuple of (B,) components, or a (D, B) array
            a = np.array(out, dtype=np.float64)
            if a.shape == (self.dim, len(X)):
                return a.T
        except ValueError:  # components of different shapes (a constant among them)
            pass
        return _stack(out, (len(X),)).reshape(self.dim, len(X)).T

    def __call__(self, X, t=0.0) -> np.ndarray:
        """Floating-point warnings are the caller's (`np.errstate`)."""
        return self._vec(X, t) if self.vectorized else self._loop(X, t)


def probe_points(s, n: int = 16, seed: int = 12345) -> np.ndarray:
    """Perturbed initial conditions, as `make_data` draws them."""
    x0 = np.asarray(s.ic, np.float64)
    rng = np.random.default_rng(seed)
    return x0 + 0.1 * (np.abs(x0) + 1.0) * rng.standard_normal((n, x0.size))


def check_autonomous(f: NumpyRHS, pts: np.ndarray, period: float) -> None:
    with np.errstate(all="ignore"):
        a = f(pts, 0.0)
        bs = [f(pts, t) for t in (0.377 * period, 1.234)]
    for b in bs:
        if not np.allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True):
            raise NotSupported("non-autonomous: its right-hand side depends on t explicitly, "
                               "and every method here is an autonomous map")


# ---------------------------------------------------------------------------------------------
# the jax.numpy copy


def _max(*a, **k):
    return jnp.maximum(*a) if len(a) == 2 and not k else builtins.max(*a, **k)


def _min(*a, **k):
    return jnp.minimum(*a) if len(a) == 2 and not k else builtins.min(*a, **k)


def _jnp_copy(f):
    while isinstance(f, staticmethod):  # `@staticmethod @staticjit`: wrapped twice
        f = f.__func__
    f = getattr(f, "py_func", f)  # a numba dispatcher's Python function
    g = {**f.__globals__, "np": jnp, "max": _max, "min": _min}
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)


def _jnp_view(s):
    """The instance with its class's own functions (dysts.flows) re-bound to jax.numpy."""
    v = types.SimpleNamespace()
    for klass in reversed(type(s).__mro__):
        if klass.__module__ != type(s).__module__:
            continue
        for k, a in vars(klass).items():
            if isinstance(a, staticmethod):
                setattr(v, k, _jnp_copy(a.__func__))
            elif isinstance(a, types.FunctionType):
                setattr(v, k, types.MethodType(_jnp_copy(a), v))
            elif not k.startswith("__"):
                setattr(v, k, a)
    for k, a in vars(s).items():
        setattr(v, k, a)
    return v


def jax_field(s):
    """`field(t, x, args)` from the jax.numpy copy (not yet checked)."""
    if _overrides_rhs(s):
        rhs = _jnp_view(s).rhs

        def field(t, x, args, rhs=rhs):
            out = rhs(x, t)
            if isinstance(out, (tuple, list)):
                return jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(o, x.dtype) for o in out]))
            return jnp.asarray(out, x.dtype).reshape(x.shape)
    else:
        g = _jnp_copy(type(s)._rhs)
        plist = [float(v) if np.ndim(v) == 0 else jnp.asarray(v) for v in s.param_list]

        def field(t, x, args, g=g, plist=plist):
            return jnp.stack(jnp.broadcast_arrays(*g(*x, t, *plist)))
    return field


def field_mismatch(field, f: NumpyRHS, pts: np.ndarray) -> str | None:
    """None where the JAX field traces and equals dysts' NumPy values at `pts`; else why not."""
    with np.errstate(all="ignore"):
        want = f(pts, 0.0)
    try:
        with jax.enable_x64(True):
            got = np.asarray(jax.jit(jax.vmap(lambda x: field(0.0, x, None)))(
                jnp.asarray(pts, jnp.float64)))
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"does not trace with jax.numpy ({type(e).__name__}: {msg[:120]})"
    if got.shape != want.shape:
        return f"its jax.numpy copy gives shape {got.shape}, dysts {want.shape}"
    ok = np.isfinite(want)
    if not np.array_equal(ok, np.isfinite(got)) or not np.allclose(
            got[ok], want[ok], rtol=1e-7, atol=1e-9 * (1 + np.abs(want[ok]).max(initial=0))):
        return "its jax.numpy copy disagrees with dysts' NumPy values"
    return None


def postprocessing(s):
    """dysts' coordinate post-processing (angles and phases to `sin`/`cos`, a few systems), as
    `(numpy (..., D) -> (..., D), jax (D,) -> (D,))`, or None where the system has none. The
    JAX one is the jax.numpy copy where it equals NumPy's, else a host callback."""
    if not hasattr(s, "_postprocessing"):
        return None

    def np_post(X):
        X = np.asarray(X, np.float64)
        return np.moveaxis(_stack(s._postprocessing(*np.moveaxis(X, -1, 0)), X.shape[:-1]),
                           0, -1)

    fn = _jnp_view(s)._postprocessing

    def jax_post(x):
        return jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(o, x.dtype) for o in fn(*x)]))

    pts = probe_points(s)
    try:
        with jax.enable_x64(True):
            got = np.asarray(jax.jit(jax.vmap(jax_post))(jnp.asarray(pts)))
        ok = np.allclose(got, np_post(pts), rtol=1e-7, atol=1e-9)
    except Exception:
        ok = False
    if not ok:
        def jax_post(x):  # noqa: F811
            return jax.pure_callback(lambda a: np_post(a).astype(a.dtype),
                                     jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                     vmap_method="expand_dims")
    return np_post, jax_post


# ---------------------------------------------------------------------------------------------
# the fallback: scipy on dysts' own right-hand side


class _Stalled(Exception):
    pass


def solve_scipy(f: NumpyRHS, s, x0s, n_steps: int, dt: float, transient: int):
    """`(B, n_steps, D)` float64 samples at `dt · (transient … transient + n_steps − 1)`, and
    the method used ("LSODA", or "Radau" where LSODA fails)."""
    from scipy.integrate import solve_ivp

    t_eval = dt * np.arange(transient, transient + n_steps)
    jac = None
    if s.has_jacobian():
        jac = (lambda t, x: np.asarray(s.jac(x, t), np.float64))
    out, used = [], set()
    for x0 in np.asarray(x0s, np.float64):
        why = []
        for method in ("LSODA", "Radau"):
            n = [0]

            def fun(t, x):
                n[0] += 1
                if n[0] > MAX_EVALS:
                    raise _Stalled
                return f.one(x, t)

            kw = {} if jac is None else dict(jac=jac)
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sol = solve_ivp(fun, (0.0, t_eval[-1]), x0, method=method, t_eval=t_eval,
                                    rtol=RTOL, atol=ATOL, **kw)
            except _Stalled:
                why.append(f"{method}: past {MAX_EVALS:,} right-hand side evaluations")
                continue
            if sol.status == 0 and sol.y.shape[1] == n_steps and np.all(np.isfinite(sol.y)):
                out.append(sol.y.T)
                used.add(method)
                break
            ts = np.asarray(sol.t)
            at = f" at t = {ts[-1]:.4g} of {t_eval[-1]:.4g}" if ts.size else ""
            why.append(f"{method}: {sol.message if sol.status else 'not finite'}{at}")
        else:
            raise RuntimeError("scipy solve_ivp failed (" + "; ".join(why) + ")")
    return np.stack(out), "+".join(sorted(used))


# ---------------------------------------------------------------------------------------------
# the fallback's map for the floor: RK4 on the host


def host_rk4_map(f: NumpyRHS, dt: float, substeps: int):
    """The RK4 map of `rk4_map` (same `dt`, `substeps`) on dysts' NumPy right-hand side, as a
    JAX function of a state `(D,)` (vmappable, jit-able); its JVP by central differences of
    the same map, in float64."""
    h = dt / substeps

    def flow64(z):  # (B, D) float64
        for _ in range(substeps):
            k1 = f(z)
            k2 = f(z + 0.5 * h * k1)
            k3 = f(z + 0.5 * h * k2)
            k4 = f(z + h * k3)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return z

    def host(x):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            z = flow64(x.reshape(-1, x.shape[-1]).astype(np.float64))
        return z.reshape(x.shape).astype(x.dtype)

    def host_jvp(x, v):
        x, v = np.asarray(x), np.asarray(v)
        D = x.shape[-1]
        z, w = x.reshape(-1, D).astype(np.float64), v.reshape(-1, D).astype(np.float64)
        nv = np.linalg.norm(w, axis=1, keepdims=True)
        eps = 1e-6 * (1 + np.linalg.norm(z, axis=1, keepdims=True)) / np.where(nv > 0, nv, 1)
        with np.errstate(all="ignore"):
            y = flow64(np.concatenate([z, z + eps * w, z - eps * w]))
        B = len(z)
        dy = (y[B:2 * B] - y[2 * B:]) / (2 * eps)
        return (y[:B].reshape(x.shape).astype(x.dtype), dy.reshape(x.shape).astype(x.dtype))

    @jax.custom_jvp
    def step(x):
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method="expand_dims")

    @step.defjvp
    def _(primals, tangents):
        (x,), (v,) = primals, tangents
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        y, w = jax.pure_callback(host_jvp, (shape, shape), x, v, vmap_method="broadcast_all")
        return y, w

    return step
