"""DEER: parallel-in-time Newton iterations for `z_t = F(z_{t-1})`, with implicit gradients.

DEER (Lim et al. 2024; Hess et al. (2026), arXiv:2605.12683, Sec. 3.1.3, 4.1, Alg. 3) solves
the fixed-point problem `R(z) = z_t − F(z_{t-1}) = 0` by Newton's method; every Newton step
is the linear recurrence `Δz_t = J_t Δz_{t-1} + (F(z_{t-1}) − z_t)`, one call to the
shared scan backend. quasi-DEER (Gonzalez et al. 2024) keeps only `diag(J_t)`.

Gradients use the implicit function theorem (Hess et al. 2026, App. D): at the fixed point
`dL/dθ = Σ_t μ_tᵀ ∂F(z_{t-1}; θ)/∂θ` with the adjoint `μ_T = ∂L/∂z_T`,
`μ_{t-1} = ∂L/∂z_{t-1} + J_tᵀ μ_t` — one reverse scan plus one vmapped VJP of the step
function. The Newton loop is never differentiated. On the vectorized (parallel) path the
adjoint reuses the Jacobians of the last Newton iteration instead of recomputing them.
"""

from __future__ import annotations

from typing import Literal, get_args

import equinox as eqx
import jax
import jax.numpy as jnp

from . import _deer_fused as _fused

from . import _deer_vectorized as _parallel
from .._checks import check_int, check_optional_int, check_real
from ._auto import auto_method
from ._scan import METHODS, ScanMethod
from ._base import AbstractSolver, SolverInfo, as_linearization, shift, vmap_step


#: The Jacobian kinds: full (DEER) or diagonal (quasi-DEER).
Jacobian = Literal["full", "diag"]
JACOBIANS: tuple[str, ...] = get_args(Jacobian)
#: The initial guesses of the Newton iteration.
Init = Literal["pinv", "zeros", "normal"]
INITS: tuple[str, ...] = get_args(Init)


def _names(choices) -> str:
    """`'a', 'b' or 'c'`."""
    return ", ".join(map(repr, choices[:-1])) + f" or {choices[-1]!r}"


def _is_fused(scan_method: str, T: int, M: int, diagonal: bool) -> bool:
    method = auto_method(T, M, not diagonal) if scan_method == "auto" else scan_method
    return method == "sequential"


class DEER(AbstractSolver):
    """Parallel-in-time Newton solver (DEER), with full or diagonal ("quasi") Jacobians.

    **Arguments:**

    - `jacobian`: `"full"` (DEER) or `"diag"` (quasi-DEER).
    - `max_iter`: iteration cap (default 100 full, 1000 diag).
    - `tol`: stop when `max|Δz| ≤ tol · max(1, max|z|)`; default 1e-5 (float32) or
      1e-10 (float64). Full DEER converges quadratically, so the returned iterate is
      accurate far below `tol`.
    - `fixed_iters`: if set, run exactly this many iterations (no early stop; static
      cost, useful for batches and benchmarks).
    - `init`: the initial guess `gtf_forward` builds: `"pinv"` (teacher signals `B⁺x`),
      `"zeros"` or `"normal"` (N(0, 1), from `seed`).
    - `seed`: the PRNG seed of `init="normal"` (default 0).
    - `exact_adjoint`: **quasi-DEER's gradient.** With `jacobian="diag"` the adjoint scan
      uses the diagonal Jacobians too (`exact_adjoint=False`, Hess et al. (2026) Eq. 44):
      cheap, but *not the gradient of the loss*. On a shPLRNN trained on Lorenz-63 its
      relative error against the true (BPTT) gradient is O(1): median 0.9–1.0 over
      α ∈ [0, 1] for M = 3 and M = 10 (`python -m benchmarks.newton`). Pass
      `exact_adjoint=True` for the exact gradient (full Jacobians in the adjoint only; the
      forward stays quasi-DEER). Ignored for `jacobian="full"`, which is always exact.
    - `scan_method`, `chunk_size`: passed to `linear_scan`. When the method resolves to
      `"sequential"` (`"auto"` on CPU), the Newton step and the adjoint are fused: F and J
      are evaluated block by block (`chunk_size` steps, default `default_block_size(M)`)
      inside the sequential scan, so the T Jacobians are never stored at once (O(T·M)
      memory; same iterates up to rounding). Otherwise the adjoint reuses the last Newton
      iteration's Jacobians (evaluated at the previous iterate, within `tol` of z*:
      identical for piecewise-linear models such as the shPLRNN).
    - `throw`: raise (via `eqx.error_if`) when the solve did not converge.

    Example:
    ```python
    z, info = dsr.gtf_forward(model, x, 0.2, solver=dsr.DEER(jacobian="full"))
    quasi_exact = dsr.DEER(jacobian="diag", exact_adjoint=True)  # exact gradients
    ```

    **References:** Lim et al. (2024) *Parallelizing non-linear sequential models over the
    sequence length*; Gonzalez et al. (2024) *Towards scalable and stable parallelization of
    nonlinear RNNs*; Hess, Götz, Durstewitz (2026) *Parallel-in-Time Training of Recurrent
    Neural Networks for Dynamical Systems Reconstruction*, arXiv:2605.12683, Alg. 3, App. D.
    """

    jacobian: Jacobian = eqx.field(default="full", static=True)
    max_iter: int | None = eqx.field(default=None, static=True)
    tol: float | None = eqx.field(default=None, static=True)
    fixed_iters: int | None = eqx.field(default=None, static=True)
    init: Init = eqx.field(default="pinv", static=True)
    seed: int = eqx.field(default=0, static=True)
    exact_adjoint: bool = eqx.field(default=False, static=True)
    scan_method: ScanMethod = eqx.field(default="auto", static=True)
    chunk_size: int | None = eqx.field(default=None, static=True)
    throw: bool = eqx.field(default=False, static=True)

    def __check_init__(self):
        if self.jacobian not in JACOBIANS:
            raise ValueError(f"`jacobian` must be {_names(JACOBIANS)}; got {self.jacobian!r}.")
        if self.init not in INITS:
            raise ValueError(f"`init` must be {_names(INITS)}; got {self.init!r}.")
        if self.scan_method not in METHODS:
            raise ValueError(f"`scan_method` must be one of {METHODS}; got {self.scan_method!r}.")
        check_optional_int("max_iter", self.max_iter, 1)
        check_optional_int("fixed_iters", self.fixed_iters, 1)
        check_optional_int("chunk_size", self.chunk_size, 1)
        check_int("seed", self.seed)
        if self.tol is not None:
            check_real("tol", self.tol, 0.0, lo_open=True)

    @property
    def diagonal(self) -> bool:
        return self.jacobian == "diag"

    def _max_iter(self) -> int:
        if self.max_iter is not None:
            return self.max_iter
        return 1000 if self.diagonal else 100

    def _tol(self, dtype) -> float:
        if self.tol is not None:
            return self.tol
        return 1e-10 if jnp.finfo(dtype).bits >= 64 else 1e-5

    def initial_guess(self, zbar):
        """`"pinv"`: the teacher signals `z̄ = B⁺x`; `"zeros"`; `"normal"`: N(0, 1) from
        `seed` (the three guesses of the paper's Fig. 1B)."""
        if self.init == "pinv":
            return zbar
        if self.init == "zeros":
            return jnp.zeros_like(zbar)
        return jax.random.normal(jax.random.key(self.seed), zbar.shape, zbar.dtype)

    def newton(self, step, jac, params, z0, us, z_init):
        """The Newton loop alone (no gradient rule): returns `(z, SolverInfo, J)`, with `J`
        the Jacobians (or diagonals) of the last iteration on the vectorized path and None
        on the fused one."""
        lin = as_linearization(jac)
        diagonal = self.diagonal
        tol = self._tol(z_init.dtype)
        T, M = z_init.shape
        fused = _is_fused(self.scan_method, T, M, diagonal)
        order = _parallel.storage_order(self.scan_method, T, M, not diagonal)

        def newton_step(state):
            z, _ = state
            # Newton-update form of the DEER step: Δz_t = J_t Δz_{t-1} + (F(z_{t-1}) − z_t),
            # Δz_0 = 0, z ← z + Δz. Same iterate as `J_t z^new_{t-1} + (F − J_t z_{t-1})`
            # without the T batched mat-vecs `J_t z_{t-1}`, and Δz is the stopping quantity.
            if fused:
                J = None
                delta = _fused.newton_delta(step, lin, params, z0, us, z, diagonal,
                                            self.chunk_size)  # fmt: skip
            else:
                r, J = _parallel.linearize(step, lin, params, z0, z, us, diagonal, order)
                delta = _parallel.newton_delta(J, r, self.scan_method, self.chunk_size, order)
            znew = z + delta
            done = jnp.max(jnp.abs(delta)) <= tol * jnp.maximum(1.0, jnp.max(jnp.abs(znew)))
            return (znew, J), done, jnp.all(jnp.isfinite(znew))

        J0 = None if fused else jnp.zeros((T, M) if diagonal else (T, M, M), z_init.dtype)
        iters, (z, J), done, finite = self._loop(newton_step, (z_init, J0))
        resid = jnp.max(jnp.abs(z - vmap_step(step, params, shift(z0, z), us)))
        finite = finite & jnp.isfinite(resid)
        info = SolverInfo(iterations=iters, converged=done & finite, residual=resid, finite=finite)
        return z, info, J

    def _loop(self, newton_step, state):
        """Iterate `newton_step(state) -> (state, done, finite)`: a fixed number of times
        (`fixed_iters`) or until done, non-finite or `max_iter`."""
        if self.fixed_iters is not None:

            def body(carry, _):
                state, _, finite = carry
                state, done, finite_new = newton_step(state)
                return (state, done, finite & finite_new), None

            init = (state, jnp.array(False), jnp.array(True))
            (state, done, finite), _ = jax.lax.scan(body, init, None, length=self.fixed_iters)
            return jnp.array(self.fixed_iters, jnp.int32), state, done, finite
        max_iter = self._max_iter()

        def cond(carry):
            k, _, done, finite = carry
            return (k < max_iter) & ~done & finite

        def body(carry):
            k, state, _, _ = carry
            state, done, finite = newton_step(state)
            return k + 1, state, done, finite

        init = (jnp.array(0, jnp.int32), state, jnp.array(False), jnp.array(True))
        return jax.lax.while_loop(cond, body, init)

    def solve(self, step, jac, params, z0, us, z_init):
        lin = as_linearization(jac)
        with jax.default_matmul_precision(NEWTON_PRECISION):
            z_star, info, J = self.newton(
                step, lin, *jax.lax.stop_gradient((params, z0, us, z_init))
            )
        adjoint_diag = self.diagonal and not self.exact_adjoint
        if J is not None and adjoint_diag != self.diagonal:
            J = None  # quasi-DEER with the exact adjoint: the full Jacobians at z*
        rule = implicit_fixed_point(step, lin, adjoint_diag, self.scan_method, self.chunk_size)
        z = rule(params, z0, us, z_star, J)
        if self.throw:
            z = eqx.error_if(z, ~info.converged, "DEER did not converge; see SolverInfo.")
        return z, info


#: Matrix products of the Newton iterations and of the adjoint in full float32 precision:
#: on GPUs JAX's default runs float32 products in TF32 (10-bit mantissa), which left every
#: GTF-DEER solve on an H200 at its iteration cap with residual steps of 1e-4 > the 1e-5
#: tolerance; with "highest" it converged in 2 iterations (docs/performance.md, "On a GPU").
#: No effect on CPUs, whose float32 products are full precision anyway.
NEWTON_PRECISION = "highest"


def implicit_fixed_point(step, lin, diagonal, scan_method, chunk_size):
    """Identity on the fixed point `z_star`, with the implicit-function-theorem VJP.

    `J_star`: the Jacobians to use in the adjoint (the last Newton iteration's, in the
    vectorized path's storage order), or None to evaluate them at `z_star` (fused path:
    block by block inside the reverse scan)."""

    @jax.custom_vjp
    def fixed_point(params, z0, us, z_star, J_star):
        return z_star

    def fwd(params, z0, us, z_star, J_star):
        return z_star, (params, z0, us, z_star, J_star)

    def bwd(res, g):
        with jax.default_matmul_precision(NEWTON_PRECISION):
            return _bwd(res, g)

    def _bwd(res, g):
        params, z0, us, z_star, J = res
        zero = jnp.zeros_like(z_star), jax.tree_util.tree_map(jnp.zeros_like, J)
        if J is None and _is_fused(scan_method, *z_star.shape, diagonal):
            dparams, dz0, dus = _fused.adjoint(step, lin, params, z0, us, z_star, g, diagonal,
                                               chunk_size)  # fmt: skip
            return (dparams, dz0, dus) + zero
        order = _parallel.storage_order(scan_method, *z_star.shape, not diagonal)
        if J is None:
            J = _parallel.evaluate_at(step, lin, params, z0, z_star, us, diagonal, order)
        mu = _parallel.adjoint(J, g, scan_method, chunk_size, order)
        return _parallel.step_vjp(step, params, z0, z_star, us, mu) + zero

    fixed_point.defvjp(fwd, bwd)
    return fixed_point
