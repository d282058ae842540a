"""Batched float64 ODE integration with diffrax (adaptive Runge–Kutta 4/5, as in Hess, Götz,
Durstewitz (2026), "Parallel-in-Time Training of Recurrent Neural Networks for Dynamical Systems
Reconstruction", arXiv:2605.12683, App. F)."""

from __future__ import annotations

import functools
import re

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from dsr._cache import enable_compilation_cache
from dsr._checks import ArgumentTypeError, check_array, check_bool, check_choice, check_int
from dsr._checks import check_optional_int, check_real

SOLVERS = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}


@functools.lru_cache(maxsize=64)
def _compiled(field, solver, rtol, atol, max_steps, progress):
    """One jitted, vmapped solve per (field, static settings); parameters stay traced."""
    term = diffrax.ODETerm(field)
    meter = diffrax.TqdmProgressMeter(refresh_steps=2000) if progress else diffrax.NoProgressMeter()

    def one(x0, t0, ts, dt, args):  # ts is data, so t1 = ts[-1] bit-exactly (no fused re-compute)
        sol = diffrax.diffeqsolve(
            term, SOLVERS[solver](), t0, ts[-1], dt, x0, args,
            saveat=diffrax.SaveAt(ts=ts),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            max_steps=max_steps, progress_meter=meter,
        )  # fmt: skip
        return sol.ys

    return eqx.filter_jit(jax.vmap(one, in_axes=(0, 0, 0, None, None)))


def check_field(name, field, dim, args=None):
    """`field(t, x, args)` must be callable and map a state `(dim,)` to a real array `(dim,)`.

    Traced abstractly (`jax.eval_shape`: no compilation, no integration), so a field of the
    wrong output shape is reported here instead of being broadcast by the solver.
    """
    if not callable(field):
        raise TypeError(f"`{name}` must be a callable f(t, x, args); got {type(field).__name__}.")
    with jax.enable_x64(True):
        x = jax.ShapeDtypeStruct((dim,), jnp.float64)
        t = jax.ShapeDtypeStruct((), jnp.float64)
        try:
            p = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype=jnp.float64), args)
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"`args` must be a pytree of numbers or arrays; got "
                                    f"{args!r} ({e}).") from None
        try:
            out = jax.eval_shape(field, t, x, p)
        except Exception as e:
            raise ValueError(f"`{name}` fails on a state of shape ({dim},): "
                             f"{type(e).__name__}: {e}") from e
    if not isinstance(out, jax.ShapeDtypeStruct):
        got = f"a {type(out).__name__}"
    elif out.shape != (dim,) or not jnp.issubdtype(out.dtype, jnp.floating):
        got = f"shape {out.shape}, dtype {out.dtype}"
    else:
        return
    raise ValueError(f"`{name}` must return a real array of the state's shape ({dim},); "
                     f"got {got}.")


def integrate(
    field, x0s, t0s, *, n_steps, dt, args=None, transient=0, solver="tsit5",
    rtol=1e-8, atol=1e-10, max_steps=None, progress=False,
) -> np.ndarray:  # fmt: skip
    """Integrate `dx/dt = field(t, x, args)` from each `(x0s[b], t0s[b])` in float64.

    The batch is vmapped over one diffrax solve; float64 is switched on only inside this call
    (`jax.enable_x64`), the global JAX config is left untouched. All arguments are checked
    before anything is compiled.

    **Arguments:**

    - `field`: the vector field `field(t, x, args)`; `args`: passed through.
    - `x0s`: initial states `(B, D)`; `t0s`: start times `(B,)`.
    - `n_steps`: kept samples; `dt`: sampling step; `transient`: samples discarded first.
    - `solver`: `"tsit5"`, `"dopri5"` or `"dopri8"`; `rtol`, `atol`: the PID step-size
      controller's tolerances; `max_steps`: the solver's step cap; `progress`: tqdm bar.

    **Returns:** a NumPy float64 array `(B, n_steps, D)` of the samples `x(t0 + k·dt)` for
    `k = transient … transient + n_steps − 1`.
    """
    enable_compilation_cache()
    x0s = np.asarray(check_array("x0s", x0s, ndim=2, min_len=1), np.float64)
    t0s = np.asarray(check_array("t0s", t0s, ndim=1), np.float64)
    if t0s.shape != (len(x0s),):
        raise ValueError(f"`t0s` must have shape ({len(x0s)},) (one start time per initial "
                         f"state); got {t0s.shape}.")
    if x0s.shape[1] < 1:
        raise ValueError(f"`x0s` must have at least one state variable; got shape {x0s.shape}.")
    check_field("field", field, x0s.shape[1], args)
    n_steps, transient = check_int("n_steps", n_steps, 1), check_int("transient", transient, 0)
    dt = check_real("dt", dt, 0, lo_open=True)
    check_choice("solver", solver, tuple(SOLVERS))
    rtol = check_real("rtol", rtol, 0, lo_open=True)
    atol = check_real("atol", atol, 0, lo_open=True)
    max_steps = check_optional_int("max_steps", max_steps, 1)
    progress = check_bool("progress", progress)
    if max_steps is None:  # generous bound on accepted+rejected steps; a while-loop bound only
        max_steps = max(4096, 64 * (n_steps + transient))
    with jax.enable_x64(True):
        ts = t0s[:, None] + dt * np.arange(transient, transient + n_steps)
        args = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype=jnp.float64), args)
        fn = _compiled(field, solver, rtol, atol, max_steps, progress)
        try:
            ys = fn(jnp.asarray(x0s), jnp.asarray(t0s), jnp.asarray(ts), jnp.float64(dt), args)
            ys = np.asarray(jax.block_until_ready(ys))
        except Exception as e:  # diffrax raises an EqxRuntimeError on max_steps / failures
            found = re.findall(r"EquinoxRuntimeError: (.+)", str(e))
            msg = found[-1] if found else str(e).strip().splitlines()[-1]
            raise RuntimeError(
                f"ODE solve failed: {msg} (see the max_steps, rtol and atol options)"
            ) from e
    if not np.all(np.isfinite(ys)):
        raise RuntimeError("ODE solve produced non-finite values (trajectory diverged)")
    return ys
