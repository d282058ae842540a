"""Batched float64 ODE integration with diffrax (adaptive Runge–Kutta 4/5, App. F)."""

from __future__ import annotations

import functools
import re

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

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


def integrate(
    field, x0s, t0s, *, n_steps, dt, args=None, transient=0, solver="tsit5",
    rtol=1e-8, atol=1e-10, max_steps=None, progress=False,
) -> np.ndarray:  # fmt: skip
    """Integrate ``dx/dt = field(t, x, args)`` from each ``(x0s[b], t0s[b])`` in float64.

    Samples ``x(t0 + k·dt)`` for ``k = transient … transient + n_steps − 1``; returns a NumPy
    float64 array ``(B, n_steps, D)``. The batch is vmapped over one diffrax solve; float64 is
    switched on only inside this call (``jax.enable_x64``), global JAX config is left untouched.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver: unknown {solver!r}; known: {sorted(SOLVERS)}")
    if max_steps is None:  # generous bound on accepted+rejected steps; a while-loop bound only
        max_steps = max(4096, 64 * (n_steps + transient))
    with jax.enable_x64(True):
        x0s = jnp.asarray(np.asarray(x0s, dtype=np.float64))
        t0s = jnp.asarray(np.asarray(t0s, dtype=np.float64))
        args = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype=jnp.float64), args)
        ts = np.asarray(t0s)[:, None] + dt * np.arange(transient, transient + n_steps)
        fn = _compiled(field, solver, float(rtol), float(atol), int(max_steps), bool(progress))
        try:
            ys = fn(x0s, t0s, jnp.asarray(ts), jnp.float64(dt), args)
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
