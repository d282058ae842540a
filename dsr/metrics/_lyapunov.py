r"""Lyapunov exponents by the QR (Benettin / Shimada–Nagashima) method on Jacobian products.

For a map $z_{t+1} = F(z_t)$ with Jacobians $J_t = \partial F / \partial z\,(z_t)$, the tangent
basis is propagated and re-orthonormalised every step, $J_t Q_{t-1} = Q_t R_t$, and
$\lambda_i = \frac{1}{n\,\Delta t}\sum_t \log |(R_t)_{ii}|$. Everything runs inside one
`jax.lax.scan` under `jit`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_int, check_real
from ._orbits import as_state


def _check_counts(n_steps, n_transient, dt):
    return (check_int("n_steps", n_steps, 1), check_int("n_transient", n_transient, 0),
            check_real("dt", dt, 0.0, lo_open=True))


def _qr_renormalise(v):
    """`J Q = Q' R`: the new orthonormal basis and `log |diag R|`."""
    q, r = jnp.linalg.qr(v)
    return q, jnp.log(jnp.abs(jnp.diagonal(r)))


def _norm_renormalise(v):
    """One tangent vector: `v / |v|` and `log |v|`."""
    nv = jnp.linalg.norm(v)
    return v / nv, jnp.log(nv)


@eqx.filter_jit
def _mean_log_growth(step, jacobian, z0, v0, n_steps, n_transient, renormalise):
    """`n_transient` steps of `step` from `z0`, then `n_steps` steps propagating the tangent
    basis `v ← renormalise(jacobian(z) @ v)`; the mean of the logged growth rates per step."""

    def transient(z, _):
        return step(z), None

    z, _ = jax.lax.scan(transient, z0, None, length=n_transient)

    def body(carry, _):
        z, v = carry
        v, logs = renormalise(jacobian(z) @ v)
        return (step(z), v), logs

    (_, _), logs = jax.lax.scan(body, (z, v0), None, length=n_steps)
    return jnp.sum(logs, axis=0) / n_steps


def lyapunov_spectrum(
    step: Callable[[Array], Array],
    jacobian: Callable[[Array], Array],
    z0: Float[ArrayLike, " M"],
    n_steps: int,
    *,
    dt: float = 1.0,
    n_transient: int = 1000,
    n_exponents: int | None = None,
) -> Float[Array, " k"]:
    r"""Lyapunov spectrum of a discrete map by the QR method.

    **Arguments:**

    - `step`: the map, `step(z) -> z_next`, shape `(M,) -> (M,)`.
    - `jacobian`: its Jacobian, `jacobian(z) -> (M, M)` (of `step` at `z`).
    - `z0`: initial state, shape `(M,)`.
    - `n_steps`: number of steps averaged over (after the transient).
    - `dt`: time per step; exponents are returned per unit time (`dt=1`: per step).
    - `n_transient`: steps run first (no averaging) to reach the attractor.
    - `n_exponents`: how many leading exponents (default all `M`).

    **Returns:** the `k` leading exponents, in descending order of the QR columns (sorted).

    ```python
    lams = lyapunov_spectrum(model.step, model.jacobian, z0, 10_000)
    ```
    """
    n_steps, n_transient, dt = _check_counts(n_steps, n_transient, dt)
    z0, k = as_state("z0", z0, n_exponents)
    q0 = jnp.eye(z0.shape[0], k, dtype=z0.dtype)
    lams = _mean_log_growth(step, jacobian, z0, q0, n_steps, n_transient, _qr_renormalise) / dt
    return jnp.sort(lams)[::-1]


def max_lyapunov(step: Callable[[Array], Array], jacobian: Callable[[Array], Array],
                 z0: Float[ArrayLike, " M"], n_steps: int, *, dt: float = 1.0,
                 n_transient: int = 1000) -> Float[Array, ""]:
    """Largest Lyapunov exponent of a discrete map (one renormalised tangent vector).

    **Arguments:** as [`dsr.metrics.lyapunov_spectrum`][] (`step`, `jacobian`, `z0`,
    `n_steps`, `dt`, `n_transient`); the tangent vector starts along `(1, 1, ..., 1)/sqrt(M)`.

    **Returns:** λ_max, a scalar per unit time.
    """
    n_steps, n_transient, dt = _check_counts(n_steps, n_transient, dt)
    z0, _ = as_state("z0", z0)
    v0 = jnp.ones_like(z0) / jnp.sqrt(z0.shape[0])
    return _mean_log_growth(step, jacobian, z0, v0, n_steps, n_transient, _norm_renormalise) / dt


def model_lyapunov_spectrum(model, z0: Float[ArrayLike, " M"], n_steps: int, *, dt: float = 1.0,
                            n_transient: int = 1000,
                            n_exponents: int | None = None) -> Float[Array, " k"]:
    """Lyapunov spectrum of a model's latent map, via `model.step(z)` and `model.jacobian(z)`.

    `model.step(z_prev) -> z_next` is the latent map and `model.jacobian(z_prev)` its `(M, M)`
    Jacobian. `dt` is the data's sampling interval, to compare with a continuous-time system
    (e.g. `dt=0.01` for the paper's Lorenz-63 data, λ_max ≈ 0.906 per time unit).

    **Arguments:** `model`; `z0`: the initial latent state `(M,)`; `n_steps`: steps after
    `n_transient` discarded ones; `dt`; `n_exponents`: how many (default all M).

    **Returns:** the exponents `(k,)`, largest first, per unit time.
    """
    return lyapunov_spectrum(
        model.step, model.jacobian, z0, n_steps, dt=dt, n_transient=n_transient,
        n_exponents=n_exponents,
    )


def _as_field(f, args):
    """Normalise `f(x)`, `f(t, x)` or `f(t, x, args)` to `g(t, x)`."""
    try:
        params = inspect.signature(f).parameters.values()
        n_req = sum(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
            for p in params
        )
    except (TypeError, ValueError):
        n_req = 2
    if n_req <= 1:
        return lambda t, x: f(x)
    if n_req == 2:
        return lambda t, x: f(t, x)
    return lambda t, x: f(t, x, args)


def rk4_step(g, t, x, dt):
    """One classical fourth-order Runge–Kutta step of `ẋ = g(t, x)` from `(t, x)`."""
    k1 = g(t, x)
    k2 = g(t + dt / 2, x + dt / 2 * k1)
    k3 = g(t + dt / 2, x + dt / 2 * k2)
    k4 = g(t + dt, x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class _RK4Map(eqx.Module):
    """The fixed-step RK4 flow map of a vector field, on the augmented state (t, x)."""

    field: Callable = eqx.field(static=True)
    dt: float

    def step(self, y):
        t, x = y[0], y[1:]
        return jnp.concatenate([(t + self.dt)[None], rk4_step(self.field, t, x, self.dt)])

    def jacobian(self, y):
        """`∂x_{n+1}/∂x_n` of one step (by `jax.jacfwd`; time is not a tangent direction)."""
        t, x = y[0], y[1:]
        return jax.jacfwd(lambda x_: rk4_step(self.field, t, x_, self.dt))(x)


def vector_field_lyapunov_spectrum(
    f: Callable,
    x0: Float[ArrayLike, " M"],
    dt: float,
    n_steps: int,
    *,
    n_transient: int = 1000,
    n_exponents: int | None = None,
    t0: float = 0.0,
    args=None,
) -> Float[Array, " k"]:
    r"""Lyapunov spectrum of an ODE $\dot x = f(t, x)$, per unit time.

    The flow is discretised by fixed-step RK4 with step `dt`; the Jacobian of one RK4 step comes
    from `jax.jacfwd`, and the QR method re-orthonormalises every step (all in one `lax.scan`).

    **Arguments:**

    - `f`: the vector field, `f(x)`, `f(t, x)` or `f(t, x, args)` (diffrax's convention).
    - `x0`: initial state, shape `(M,)`.
    - `dt`: RK4 step (also the time unit conversion).
    - `n_steps`: steps averaged over, after `n_transient` steps of transient.
    - `n_exponents`: how many leading exponents (default all `M`).
    - `t0`, `args`: start time and extra argument for non-autonomous / parametrised fields.

    **Returns:** the leading exponents, descending, per unit time.

    ```python
    def lorenz(x):
        return jnp.stack([10 * (x[1] - x[0]), x[0] * (28 - x[2]) - x[1],
                          x[0] * x[1] - 8 / 3 * x[2]])
    lams = vector_field_lyapunov_spectrum(lorenz, jnp.ones(3), 0.01, 50_000)
    # ≈ (0.906, 0.0, -14.57)
    ```
    """
    n_steps, n_transient, dt = _check_counts(n_steps, n_transient, dt)
    x0, k = as_state("x0", x0, n_exponents)
    rk = _RK4Map(_as_field(f, args), dt)
    y0 = jnp.concatenate([jnp.asarray([t0], x0.dtype), x0])
    q0 = jnp.eye(x0.shape[0], k, dtype=x0.dtype)
    lams = _mean_log_growth(rk.step, rk.jacobian, y0, q0, n_steps, n_transient,
                            _qr_renormalise) / dt
    return jnp.sort(lams)[::-1]
