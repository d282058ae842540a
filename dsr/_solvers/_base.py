"""The solver interface for recurrences `z_t = F(z_{t-1}; θ, u_t)`.

A solver receives a generic step function `step(params, z_prev, u_t) -> z_t`, the step's
Jacobian with respect to `z_prev` (a per-step function `jac(params, z_prev, u_t) -> (M, M)`,
or a `Linearization` that also gives the diagonal and splits time into phases), the
parameters (a pytree of arrays), `z0`, the per-step inputs `us` (a pytree with leading axis
T) and an initial guess for the trajectory (iterative solvers only). It returns
`(z_{1:T}, SolverInfo)`.

`Sequential` (`_sequential.py`) is the reference: `lax.scan` with backpropagation through
time.
`DEER` (`_deer.py`) is the parallel-in-time Newton solver with implicit gradients.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int


StepFn = Callable[[Any, Array, Any], Array]


class SolverInfo(eqx.Module):
    """Status of a forward solve.

    **Attributes:**

    - `iterations`: Newton iterations taken (0 for `Sequential`).
    - `converged`: whether `max|Δz|` fell below the tolerance (always true for `Sequential`).
    - `residual`: final `max_t |z_t − F(z_{t-1})|`.
    - `finite`: whether every iterate stayed finite.
    """

    iterations: Int[Array, "*batch"]
    converged: Bool[Array, "*batch"]
    residual: Float[Array, "*batch"]
    finite: Bool[Array, "*batch"]


class Linearization(eqx.Module):
    """The step's Jacobian `∂F(z_{t-1}; u_t)/∂z_{t-1}`, as a solver evaluates it.

    Time is split into consecutive phases of static `lengths`; the steps of phase k use
    `full[k]` (and `diagonal[k]`, the Jacobian's diagonal, for quasi-DEER). Each function is
    vmapped over its phase with the parameters unbatched, so whatever a phase's Jacobian
    computes from the parameters alone (GTF folds its forcing projection `P_α` into the
    model's factors) is built once per evaluation, not once per step. GTF uses two phases
    when there is a warm-up (α = 1, then α).

    The Jacobian of the first step (t = 1, which multiplies the fixed `z_0`) is never used:
    Newton's `Δz_0 = 0`, and `∂L/∂z_0` comes from the step's VJP.

    **Arguments:**

    - `full`: per-phase functions `(params, z_prev, u_t) -> (M, M)`.
    - `diagonal`: per-phase functions `(params, z_prev, u_t) -> (M,)`, or None (then the
      diagonal of `full`).
    - `lengths`: steps per phase (they sum to T); None for one phase.
    """

    full: tuple[StepFn, ...]
    diagonal: tuple[StepFn, ...] | None = None
    lengths: tuple[int, ...] | None = eqx.field(default=None, static=True)

    def bounds(self, T: int) -> list[tuple[int, int]]:
        """`[lo, hi)` of every phase, for T steps."""
        lengths = (T,) if self.lengths is None else self.lengths
        if sum(lengths) != T or len(lengths) != len(self.full):
            raise ValueError(f"phase lengths {lengths} do not cover T = {T} steps.")
        ends = [sum(lengths[: k + 1]) for k in range(len(lengths))]
        return [(e - n, e) for e, n in zip(ends, lengths)]

    def function(self, k: int, diagonal: bool) -> StepFn:
        """The per-step function of phase k, full or diagonal."""
        if not diagonal:
            return self.full[k]
        if self.diagonal is not None:
            return self.diagonal[k]
        full = self.full[k]
        return lambda p, z, u: jnp.diagonal(full(p, z, u))

    def evaluate(self, params, zprev: Float[Array, "T M"], us, diagonal: bool, order=None):
        """All T Jacobians `(T, M, M)` (or their diagonals `(T, M)`) at `zprev`.

        `order`: `zprev` and `us` are stored in this permutation of time (storage slot s
        holds step `order[s]`), and so is the result."""
        T = zprev.shape[0]
        bounds = self.bounds(T)
        if order is None or len(bounds) == 1:
            parts = [vmap_step(self.function(k, diagonal), params, *time_slice((zprev, us), lo, hi))
                     for k, (lo, hi) in enumerate(bounds)]  # fmt: skip
            return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=0)
        slots = [np.nonzero((order >= lo) & (order < hi))[0] for lo, hi in bounds]
        parts = [vmap_step(self.function(k, diagonal), params, *time_take((zprev, us), idx))
                 for k, idx in enumerate(slots)]  # fmt: skip
        return jnp.take(jnp.concatenate(parts, axis=0), np.argsort(np.concatenate(slots)), axis=0)


def as_linearization(jac: StepFn | Linearization) -> Linearization:
    """`jac` as a `Linearization` (a per-step function becomes one phase)."""
    return jac if isinstance(jac, Linearization) else Linearization(full=(jac,))


def shift(z0, z):
    """`(z_0, z_1, …, z_{T-1})` from `z_0` and `z_{1:T}`: the previous state of every step."""
    return jnp.concatenate([z0[None], z[:-1]], axis=0)


def vmap_step(fn: StepFn, params, zprev, us):
    """`fn(params, zprev_t, u_t)` for every step t (params unbatched)."""
    return jax.vmap(fn, in_axes=(None, 0, 0))(params, zprev, us)


def time_slice(tree, lo: int, hi: int):
    """Steps `lo..hi-1` of every leaf of `tree` (leading time axis)."""
    return jax.tree_util.tree_map(lambda x: x[lo:hi], tree)


def time_take(tree, idx):
    """The steps `idx` (a static index array) of every leaf of `tree`."""
    return jax.tree_util.tree_map(lambda x: jnp.take(x, idx, axis=0), tree)


class AbstractSolver(eqx.Module):
    """A forward solver for `z_t = F(z_{t-1}; θ, u_t)`, t = 1..T.

    Subclasses implement `solve(step, jac, params, z0, us, z_init) -> (z_{1:T}, SolverInfo)`
    and `initial_guess(zbar)`; see the documentation's Internals page ("Adding a solver").
    """

    @abc.abstractmethod
    def solve(
        self, step: StepFn, jac: StepFn | Linearization, params: Any, z0: Array, us: Any,
        z_init: Array | None,
    ) -> tuple[Float[Array, "T M"], SolverInfo]:
        """Return the trajectory `z_{1:T}` and a `SolverInfo`. `jac` is the per-step
        Jacobian function or a `Linearization`."""

    @abc.abstractmethod
    def initial_guess(self, zbar: Float[Array, "T M"]) -> Float[Array, "T M"] | None:
        """The initial trajectory of an iterative solver, given the teacher signals
        `z̄_{1:T}` (None for a solver that needs none)."""
