"""Forward solvers for recurrences `z_t = F(z_{t-1}; θ, u_t)`: `Sequential` and `DEER`.

A solver receives a generic step function `step(params, z_prev, u_t) -> z_t`, its Jacobian
`jac(params, z_prev, u_t) -> (M, M)` with respect to `z_prev`, the parameters (a pytree of
arrays), `z0`, the per-step inputs `us` (a pytree with leading axis T) and an initial guess
for the trajectory (DEER only). It returns `(z_{1:T}, SolverInfo)`.

DEER (Lim et al. 2024; papers/001 Sec. 3.1.3, 4.1, Alg. 3) solves the fixed-point problem
`R(z) = z_t − F(z_{t-1}) = 0` by Newton's method; every Newton step is the linear
recurrence `z_t^{new} = J_t z_{t-1}^{new} + (F(z_{t-1}) − J_t z_{t-1})`, one call to the
shared scan backend. quasi-DEER (Gonzalez et al. 2024) keeps only `diag(J_t)`.

Gradients use the implicit function theorem (papers/001 App. D): at the fixed point
`dL/dθ = Σ_t μ_tᵀ ∂F(z_{t-1}; θ)/∂θ` with the adjoint `μ_T = ∂L/∂z_T`,
`μ_{t-1} = ∂L/∂z_{t-1} + J_tᵀ μ_t` — one reverse scan plus one vmapped VJP of the step
function. The Newton loop is never differentiated.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ._checks import check_int, check_optional_int, check_real
from ._scan import METHODS, adjoint_scan, auto_method, linear_scan

StepFn = Callable[[Any, Array, Any], Array]


class SolverInfo(eqx.Module):
    """Status of a forward solve.

    - `iterations`: Newton iterations taken (0 for `Sequential`).
    - `converged`: whether `max|Δz|` fell below the tolerance (always true for `Sequential`).
    - `residual`: final `max_t |z_t − F(z_{t-1})|`.
    - `finite`: whether every iterate stayed finite.
    """

    iterations: Int[Array, "*batch"]
    converged: Bool[Array, "*batch"]
    residual: Float[Array, "*batch"]
    finite: Bool[Array, "*batch"]


def _shift(z0, z):
    return jnp.concatenate([z0[None], z[:-1]], axis=0)


def _vstep(step, params, zprev, us):
    return jax.vmap(step, in_axes=(None, 0, 0))(params, zprev, us)


def _vjac(jac, params, zprev, us, diagonal):
    J = jax.vmap(jac, in_axes=(None, 0, 0))(params, zprev, us)
    return jnp.diagonal(J, axis1=-2, axis2=-1) if diagonal else J


# ---------------------------------------------------------------------------------------
# Fused path (taken when the scan method resolves to "sequential", e.g. "auto" on CPU):
# the linearization (F and J at every step) is evaluated block by block *inside* the
# sequential recurrence, so only a block of c Jacobians (c·M² numbers, cache-sized) exists
# at a time instead of all T·M²: the same arithmetic with O(T·M) memory traffic, 1.2–2×
# faster on CPU (`benchmarks.runtime`). The parallel methods keep the vectorized form.
# ---------------------------------------------------------------------------------------


def default_block_size(M: int) -> int:
    """Block length of the fused path: ≈ 32K Jacobian entries per block, in [64, 512]."""
    c = 2 ** round(math.log2(max(32768 / M**2, 1.0)))
    return int(min(max(c, 64), 512))


def _is_fused(scan_method: str, T: int, M: int, diagonal: bool) -> bool:
    method = auto_method(T, M, not diagonal) if scan_method == "auto" else scan_method
    return method == "sequential"


def _blocks(x, n, c):
    """`(T, …) -> (n, c, …)`, padding the end by repeating the last entry (finite inputs)."""
    pad = n * c - x.shape[0]
    if pad:
        x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)
    return x.reshape((n, c) + x.shape[1:])


def _unblock(x, T):
    return x.reshape((-1,) + x.shape[2:])[:T]


def _fused_newton_delta(step, jac, params, z0, us, z, diagonal, block):
    """The Newton update Δz of `DEER.newton` (Δz_t = J_t Δz_{t-1} + F(z_{t-1}) − z_t), with
    F and J evaluated one block at a time inside the sequential scan."""
    T, M = z.shape
    c = min(block or default_block_size(M), T)
    n = -(-T // c)

    def body(delta, xs):
        zp, zc, u = xs
        f = _vstep(step, params, zp, u)
        J = _vjac(jac, params, zp, u, diagonal)

        def inner(d, jr):
            Jt, rt = jr
            d = (Jt * d if diagonal else Jt @ d) + rt
            return d, d

        return jax.lax.scan(inner, delta, (J, f - zc))

    blk = lambda x: _blocks(x, n, c)  # noqa: E731
    xs = (blk(_shift(z0, z)), blk(z), jax.tree_util.tree_map(blk, us))
    _, deltas = jax.lax.scan(body, jnp.zeros((M,), z.dtype), xs)
    return _unblock(deltas, T)


def _fused_adjoint(step, jac, params, z0, us, z_star, g, diagonal, block):
    """The implicit-gradient VJP (see `_implicit_fixed_point`) with J and the step's VJP
    evaluated one block at a time inside the reverse sequential scan; the parameter
    cotangents are summed in the carry."""
    T, M = z_star.shape
    c = min(block or default_block_size(M), T)
    n = -(-T // c)
    blk = lambda x: _blocks(x, n, c)  # noqa: E731
    gshift = jnp.concatenate([jnp.zeros_like(g[:1]), g[:-1]], axis=0)
    valid = (jnp.arange(n * c) < T).reshape(n, c)  # False on the padded steps
    xs = (blk(_shift(z0, z_star)), blk(gshift), jax.tree_util.tree_map(blk, us), valid)

    def body(carry, xs):
        lam, dparams = carry
        zp, gs, u, ok = xs
        J = _vjac(jac, params, zp, u, diagonal)
        eye = jnp.ones((M,), J.dtype) if diagonal else jnp.eye(M, dtype=J.dtype)
        J = jnp.where(ok.reshape((c,) + (1,) * (J.ndim - 1)), J, eye)  # padding: λ passes
        gs = jnp.where(ok[:, None], gs, 0)

        def inner(lam_next, jg):  # μ_k = λ_{k+1};  λ_k = g'_k + J_kᵀ λ_{k+1}
            Jt, gt = jg
            return (Jt * lam_next if diagonal else lam_next @ Jt) + gt, lam_next

        lam, mu = jax.lax.scan(inner, lam, (J, gs), reverse=True)
        mu = jnp.where(ok[:, None], mu, 0)
        _, vjp = jax.vjp(lambda p, zp_, u_: _vstep(step, p, zp_, u_), params, zp, u)
        dp, dzp, du = vjp(mu)
        return (lam, jax.tree_util.tree_map(jnp.add, dparams, dp)), (dzp[0], du)

    init = (g[-1], jax.tree_util.tree_map(jnp.zeros_like, params))
    (_, dparams), (dzp0, dus) = jax.lax.scan(body, init, xs, reverse=True)
    return dparams, dzp0[0], jax.tree_util.tree_map(lambda x: _unblock(x, T), dus)


class AbstractSolver(eqx.Module):
    """A forward solver for `z_t = F(z_{t-1}; θ, u_t)`, t = 1..T."""

    @abc.abstractmethod
    def solve(
        self, step: StepFn, jac: StepFn, params: Any, z0: Array, us: Any, z_init: Array | None
    ) -> tuple[Float[Array, "T M"], SolverInfo]:
        """Return the trajectory `z_{1:T}` and a `SolverInfo`."""

    @abc.abstractmethod
    def initial_guess(self, zbar: Float[Array, "T M"]) -> Float[Array, "T M"] | None:
        """The initial trajectory of an iterative solver, given the teacher signals
        `z̄_{1:T}` (None for a solver that needs none)."""


class Sequential(AbstractSolver):
    """`lax.scan` over time; gradients by backpropagation through time (BPTT).

    The reference every parallel solver is tested against.

    **Arguments:**

    - `unroll`: steps per loop iteration passed to `lax.scan` (default 1). Unrolling cuts
      the per-step loop overhead: on CPU `unroll=8` made the shPLRNN forward+backward step
      1.2–1.5× faster for M ≤ 16 but ≈ 2× slower for M = 64 (`benchmarks.runtime`), and
      it lengthens compilation.
    """

    unroll: int = eqx.field(default=1, static=True)

    def __check_init__(self):
        check_int("unroll", self.unroll, 1)

    def initial_guess(self, zbar):
        return None

    def solve(self, step, jac, params, z0, us, z_init=None):
        def body(z, u):
            z = step(params, z, u)
            return z, z

        _, zs = jax.lax.scan(body, z0, us, unroll=self.unroll)
        info = SolverInfo(
            iterations=jnp.array(0, jnp.int32),
            converged=jnp.array(True),
            residual=jnp.zeros((), zs.dtype),
            finite=jnp.all(jnp.isfinite(zs)),
        )
        return zs, info


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
    - `exact_adjoint`: for `jacobian="diag"`, use the full Jacobian in the adjoint scan
      (exact gradient) instead of the diagonal one (papers/001 Eq. 44, approximate).
    - `scan_method`, `chunk_size`: passed to `linear_scan`. When the method resolves to
      `"sequential"` (`"auto"` on CPU), the Newton step and the adjoint are fused: F and J
      are evaluated block by block (`chunk_size` steps, default `default_block_size(M)`)
      inside the sequential scan, so the T Jacobians are never stored at once (O(T·M)
      memory; same iterates up to rounding).
    - `throw`: raise (via `eqx.error_if`) when the solve did not converge.

    Example:
    ```python
    z, info = dsr.gtf_forward(model, x, 0.2, solver=dsr.DEER(jacobian="full"))
    ```

    **References:** Lim et al. (2024) *Parallelizing non-linear sequential models over the
    sequence length*; Gonzalez et al. (2024) *Towards scalable and stable parallelization of
    nonlinear RNNs*; papers/001 Alg. 3 and App. D.
    """

    jacobian: Literal["full", "diag"] = eqx.field(default="full", static=True)
    max_iter: int | None = eqx.field(default=None, static=True)
    tol: float | None = eqx.field(default=None, static=True)
    fixed_iters: int | None = eqx.field(default=None, static=True)
    init: Literal["pinv", "zeros", "normal"] = eqx.field(default="pinv", static=True)
    seed: int = eqx.field(default=0, static=True)
    exact_adjoint: bool = eqx.field(default=False, static=True)
    scan_method: str = eqx.field(default="auto", static=True)
    chunk_size: int | None = eqx.field(default=None, static=True)
    throw: bool = eqx.field(default=False, static=True)

    def __check_init__(self):
        if self.jacobian not in ("full", "diag"):
            raise ValueError(f"`jacobian` must be 'full' or 'diag'; got {self.jacobian!r}.")
        if self.init not in ("pinv", "zeros", "normal"):
            raise ValueError(f"`init` must be 'pinv', 'zeros' or 'normal'; got {self.init!r}.")
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
        """The Newton loop alone (no gradient rule): returns `(z, SolverInfo)`."""
        diagonal = self.diagonal
        tol = self._tol(z_init.dtype)
        T, M = z_init.shape
        fused = _is_fused(self.scan_method, T, M, diagonal)

        def newton_step(z):
            # Newton-update form of the DEER step: Δz_t = J_t Δz_{t-1} + (F(z_{t-1}) − z_t),
            # Δz_0 = 0, z ← z + Δz. Same iterate as `J_t z^new_{t-1} + (F − J_t z_{t-1})`
            # without the T batched mat-vecs `J_t z_{t-1}`, and Δz is the stopping quantity.
            if fused:
                delta = _fused_newton_delta(step, jac, params, z0, us, z, diagonal,
                                            self.chunk_size)  # fmt: skip
            else:
                zprev = _shift(z0, z)
                f = _vstep(step, params, zprev, us)
                J = _vjac(jac, params, zprev, us, diagonal)
                delta = linear_scan(J, f - z, method=self.scan_method, chunk_size=self.chunk_size)
            znew = z + delta
            dz = jnp.max(jnp.abs(delta))
            finite = jnp.all(jnp.isfinite(znew))
            done = dz <= tol * jnp.maximum(1.0, jnp.max(jnp.abs(znew)))
            return znew, done, finite

        if self.fixed_iters is not None:

            def body(carry, _):
                z, done, finite = carry
                znew, done_new, finite_new = newton_step(z)
                return (znew, done_new, finite & finite_new), None

            init = (z_init, jnp.array(False), jnp.array(True))
            (z, done, finite), _ = jax.lax.scan(body, init, None, length=self.fixed_iters)
            iters = jnp.array(self.fixed_iters, jnp.int32)
        else:
            max_iter = self._max_iter()

            def cond(carry):
                k, _, done, finite = carry
                return (k < max_iter) & ~done & finite

            def body(carry):
                k, z, _, _ = carry
                znew, done, finite = newton_step(z)
                return k + 1, znew, done, finite

            init = (jnp.array(0, jnp.int32), z_init, jnp.array(False), jnp.array(True))
            iters, z, done, finite = jax.lax.while_loop(cond, body, init)
        resid = jnp.max(jnp.abs(z - _vstep(step, params, _shift(z0, z), us)))
        finite = finite & jnp.isfinite(resid)
        info = SolverInfo(iterations=iters, converged=done & finite, residual=resid, finite=finite)
        return z, info

    def solve(self, step, jac, params, z0, us, z_init):
        z_star, info = self.newton(
            step, jac, *jax.lax.stop_gradient((params, z0, us, z_init))
        )
        adjoint_diag = self.diagonal and not self.exact_adjoint
        z = _implicit_fixed_point(step, jac, adjoint_diag, self.scan_method, self.chunk_size)(
            params, z0, us, z_star
        )
        if self.throw:
            z = eqx.error_if(z, ~info.converged, "DEER did not converge; see SolverInfo.")
        return z, info


def _implicit_fixed_point(step, jac, diagonal, scan_method, chunk_size):
    """Identity on the fixed point `z_star`, with the implicit-function-theorem VJP."""

    @jax.custom_vjp
    def fixed_point(params, z0, us, z_star):
        return z_star

    def fwd(params, z0, us, z_star):
        return z_star, (params, z0, us, z_star)

    def bwd(res, g):
        params, z0, us, z_star = res
        if _is_fused(scan_method, *z_star.shape, diagonal):
            dparams, dz0, dus = _fused_adjoint(step, jac, params, z0, us, z_star, g, diagonal,
                                               chunk_size)  # fmt: skip
            return dparams, dz0, dus, jnp.zeros_like(z_star)
        zprev = _shift(z0, z_star)
        J = _vjac(jac, params, zprev, us, diagonal)
        # Adjoint μ_t = g_t + J_{t+1}ᵀ μ_{t+1}, μ_T = g_T: one reverse scan.
        mu, _ = adjoint_scan(J, g, method=scan_method, chunk_size=chunk_size)
        _, vjp = jax.vjp(lambda p, zp, u: _vstep(step, p, zp, u), params, zprev, us)
        dparams, dzprev, dus = vjp(mu)
        return dparams, dzprev[0], dus, jnp.zeros_like(z_star)

    fixed_point.defvjp(fwd, bwd)
    return fixed_point


SOLVER_NAMES = ("auto", "deer", "quasi", "sequential")


def resolve_solver(solver: AbstractSolver | str, latent_dim: int = 0,
                   backend: str | None = None) -> AbstractSolver:
    """Map `solver` (an `AbstractSolver` or a name) to a solver object.

    `"deer"`: `DEER()`; `"quasi"`: `DEER(jacobian="diag")`; `"sequential"`: `Sequential()`.
    `"auto"`: GTF-DEER (full Jacobian) on accelerators, where its O(log T)-depth Newton
    steps are the point of the method. On CPU, DEER when the latent dimension is small
    (M ≤ 8) — `benchmarks.runtime` measured its training step 1.4–2.4× faster than the
    sequential one for M = 4 at every T from 128 to 32,768 — and `Sequential()` otherwise
    (M = 16: DEER 0.4–0.55× as fast; M = 64: ≤ 0.08×), because the per-step work of DEER
    grows as M³ while the sequential loop's grows as M².
    """
    if isinstance(solver, AbstractSolver):
        return solver
    if not isinstance(solver, str) or solver not in SOLVER_NAMES:
        raise ValueError(
            f"`solver` must be a dsr solver (dsr.DEER(), dsr.Sequential()) or one of "
            f"{SOLVER_NAMES}; got {solver!r}.")
    if solver == "deer":
        return DEER()
    if solver == "quasi":
        return DEER(jacobian="diag")
    if solver == "sequential":
        return Sequential()
    backend = jax.default_backend() if backend is None else backend
    if backend != "cpu":
        return DEER()
    return DEER() if latent_dim <= 8 else Sequential()
