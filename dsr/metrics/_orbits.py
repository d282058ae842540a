"""Validation and diagnosis of the orbits (and states) every measure takes: one place for all.

Convention for bad values: *true* data with NaN/inf are an error (`ValueError` naming the
argument); a *generated* orbit with NaN/inf (or astronomically large values) is a diverged
model, which the measures report as a flagged value (`inf` for D_stsp, `1` for D_H) with a
`RuntimeWarning`, never an exception.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import ArgumentTypeError, check_array, check_optional_int


def as_orbit(name: str, x, *, min_steps: int = 2, finite: bool = True,
             n_dims: int | None = None, like: str = "`x_true`") -> np.ndarray:
    """`x` as a float64 `(T, N)` NumPy array (a 1-D series becomes `(T, 1)`).

    Raises naming `name` when `x` is not a real array of 1 or 2 dimensions, has fewer than
    `min_steps` rows, has not `n_dims` columns (as `like`, e.g. "`x_true`"), or (with
    `finite`) contains NaN or inf.
    """
    arr = check_array(name, x, ndim=(1, 2), finite=False)
    if np.issubdtype(arr.dtype, np.bool_):
        raise ArgumentTypeError(f"`{name}` must be a real-valued array; got dtype bool.")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if n_dims is not None and arr.shape[1] != n_dims:
        raise ValueError(f"`{name}` must have {n_dims} dimensions (columns), as {like}; "
                         f"got shape {arr.shape}.")
    if arr.shape[0] < min_steps:
        raise ValueError(f"`{name}` needs at least {min_steps} time steps; got {arr.shape[0]}.")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    return arr


def orbit_pair(x_true, x_gen, *, min_steps: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A true orbit (finite) and a generated orbit of the same dimension (may be non-finite)."""
    x_true = as_orbit("x_true", x_true, min_steps=min_steps)
    x_gen = as_orbit("x_gen", x_gen, min_steps=min_steps, finite=False, n_dims=x_true.shape[1])
    return x_true, x_gen


def true_scale(x_true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and a positive per-dimension scale (the std; `max(|mean|, 1)` where it is 0)."""
    mu = x_true.mean(axis=0)
    sd = x_true.std(axis=0)
    return mu, np.where(sd > 0, sd, np.maximum(np.abs(mu), 1.0))


def divergence_reason(x_gen: np.ndarray, x_true: np.ndarray,
                      threshold: float | None = None) -> str | None:
    """Why `x_gen` counts as diverged, or None: non-finite values, or (with `threshold`)
    values more than `threshold` true standard deviations from the true mean."""
    if not np.all(np.isfinite(x_gen)):
        return "non-finite values"
    if threshold is not None:
        mu, scale = true_scale(x_true)
        with np.errstate(over="ignore"):
            if np.any(np.abs(x_gen - mu) > threshold * scale):
                return f"values more than {threshold:g} standard deviations from the true mean"
    return None


def cycle_period(x_gen: np.ndarray, x_true: np.ndarray, *, max_period: int = 64,
                 window: int = 256) -> int | None:
    """The period `p ≤ max_period` of a generated orbit that has collapsed to a fixed point
    (`p = 1`) or a short cycle, judged on its last `window` steps, else None.

    Two states count as equal within `1e-5` true standard deviations (plus `1e-6 |mean|`, for
    float32 rounding): cheap, O(max_period · window · N).
    """
    T = x_gen.shape[0]
    if T < 2 or not np.all(np.isfinite(x_gen[-min(T, window + max_period):])):
        return None
    mu, scale = true_scale(x_true)
    tol = 1e-5 * scale + 1e-6 * np.abs(mu)
    for p in range(1, min(max_period, T - 1) + 1):
        w = min(window, T - p)
        if np.all(np.abs(x_gen[T - w:] - x_gen[T - w - p:T - p]) <= tol):
            return p
    return None


def collapse_note(x_gen: np.ndarray, x_true: np.ndarray) -> str | None:
    """A sentence for a generated orbit that sits on a fixed point or a short cycle, or None."""
    p = cycle_period(x_gen, x_true)
    if p is None:
        return None
    what = "a fixed point" if p == 1 else f"a cycle of period {p}"
    return f"`x_gen` has collapsed to {what} (its last steps repeat)."


def as_state(name: str, z, n_exponents=None):
    """A state vector `(M,)` (a JAX array, floating; integer input is cast) and the number
    `k` of Lyapunov exponents asked for, `1 ≤ k ≤ M` (all `M` when `n_exponents` is None).

    Works on tracers (inside `jit`/`vmap`), where only shapes and dtypes are checked."""
    z = check_array(name, z, ndim=1, finite=True)
    z = jnp.asarray(z)
    if not jnp.issubdtype(z.dtype, jnp.floating):
        z = z.astype(float)
    M = z.shape[0]
    k = check_optional_int("n_exponents", n_exponents, 1, M)
    return z, M if k is None else k


def as_model_input(model, x: np.ndarray) -> jax.Array:
    """Observations cast to the model's floating dtype (that of its first array leaf)."""
    leaves = [a for a in jax.tree_util.tree_leaves(model) if isinstance(a, jax.Array)]
    dtype = leaves[0].dtype if leaves else jnp.float32
    return jnp.asarray(x, dtype)
