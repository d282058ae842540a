"""What every fitted model of the comparison is to the shared measures code: a map on its own
state, a warm-up from observed context and a read-out. One code path then generates, forecasts
and takes the Lyapunov exponent of every method and of the true system alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp


@dataclass
class Member:
    """`warm(context (W, N)) -> state` whose read-out predicts the observation right after the
    context; `step(state) -> state` one sampling interval; `observe(state) -> (N,)`."""

    warm: Callable
    step: Callable
    observe: Callable
    train_s: float = 0.0
    info: dict = field(default_factory=dict)


def rollout(m: Member, context, n: int):
    """`n` free-running observations after warming up on `context` (JAX, not jitted)."""

    def body(z, _):
        return m.step(z), m.observe(z)

    _, xs = jax.lax.scan(body, m.warm(jnp.asarray(context)), None, length=n)
    return xs


def rk4_map(f: Callable, dt: float, substeps: int) -> Callable:
    """The flow of `dx/dt = f(x)` over `dt` by `substeps` classical RK4 steps."""
    h = dt / substeps

    def one(x, _):
        k1 = f(x)
        k2 = f(x + 0.5 * h * k1)
        k3 = f(x + 0.5 * h * k2)
        k4 = f(x + h * k3)
        return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

    return lambda x: jax.lax.scan(one, x, None, length=substeps)[0]
