"""Shared test helpers: random, non-trivial float64 models, a reference RK4 integrator and a
tolerance comparison of pytrees; the tiny shapes and signal the command-line tests share."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dsr


def random_shplrnn(N, M, L=12, *, seed=0, rank=None, input_dim=0, scale=0.5, random_B=True):
    """A shPLRNN with O(1) weights (the App. E init is almost linear)."""
    k = jax.random.split(jax.random.key(seed), 8)
    m = dsr.ShPLRNN(N, M, L, key=k[0], rank=rank, input_dim=input_dim, dtype=jnp.float64)
    n = lambda i, shape, s: s * jax.random.normal(k[i], shape, jnp.float64)  # noqa: E731
    m = eqx.tree_at(lambda m: m.A_bar, m, n(1, (M,), 0.5))
    if rank is None:
        m = eqx.tree_at(lambda m: m.W_L, m, n(2, (M, L), scale / L**0.5))
    else:
        m = eqx.tree_at(lambda m: (m.W_L, m.W_R), m, (n(2, (M, rank), 1.0), n(3, (rank, L), scale / L**0.5)))
    m = eqx.tree_at(lambda m: (m.V, m.b, m.h), m, (n(4, (L, M), 1.0), n(5, (L,), 0.5), n(6, (M,), 0.2)))
    if input_dim:
        m = eqx.tree_at(lambda m: m.C, m, n(7, (M, input_dim), 0.3))
    if random_B:
        m = eqx.tree_at(lambda m: m.B, m, jnp.eye(N, M) + n(7, (N, M), 0.3))
    return m


def rk4_step(f, x, dt):
    """One classical RK4 step of `ẋ = f(x)` (NumPy or JAX arrays alike)."""
    k1 = f(x)
    k2 = f(x + dt / 2 * k1)
    k3 = f(x + dt / 2 * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def rk4_orbit(f, x0, dt, n, transient):
    """`n` float64 states of `ẋ = f(x)` by fixed-step RK4 from `x0`, after `transient` steps
    (one `lax.scan`)."""

    def step(x, _):
        x = rk4_step(f, x, dt)
        return x, x

    _, xs = jax.lax.scan(step, jnp.asarray(x0, jnp.float64), None, length=n + transient)
    return np.asarray(xs[transient:])


def tree_allclose(a, b, rtol=1e-10, atol=1e-12):
    """Same structure and every leaf close, `|a − b| ≤ atol + rtol |b|` elementwise
    (`eqx.tree_equal` with tolerances)."""
    return bool(eqx.tree_equal(a, b, rtol=rtol, atol=atol))


def rel_err(a, b):
    """`max |a − b| / max |b|` (0 for empty arrays): the error relative to the scale of `b`."""
    a, b = np.asarray(a), np.asarray(b)
    if b.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-300))


def assert_tree_rel(a, b, tol):
    """`rel_err(u, v) < tol` for every pair of leaves of two pytrees of the same structure."""
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb), (len(la), len(lb))
    for u, v in zip(la, lb):
        assert rel_err(u, v) < tol, (np.shape(u), rel_err(u, v))


#: `python -m dsr fit` options small enough that one compile serves a whole CLI test file.
CLI_FAST = ["--runs", "2", "--hidden-dim", "8", "--seq-len", "16", "--batch-size", "2",
            "--steps", "4", "--checkpoint-every", "2", "--monitor-every", "0", "--no-progress"]
#: `evaluate` options to match.
CLI_EVAL = ["--n-samples", "500", "--context-steps", "32", "--n-rmse", "8", "--gen-factor",
            "1", "--lyapunov-steps", "100", "--plot-steps", "50", "--no-progress"]


def cli_signal(n, phase=0.0):
    """A noisy two-variable oscillation `(n, 2)`; `phase` shifts it and picks the noise."""
    t = np.arange(n) * 0.1 + phase
    rng = np.random.default_rng(int(phase * 10))
    return np.stack([np.sin(t), np.cos(0.7 * t) + 0.3 * np.sin(t)], 1) + 0.02 * rng.normal(
        size=(n, 2))
