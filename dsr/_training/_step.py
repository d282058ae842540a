"""One training update of K stacked members (K = 1 for a single model), in three jitted parts.

1. `propose`: draw each member's windows, update α when due, and compute every member's
   loss, gradient and optimizer update with the configured solver (vmapped over members).
2. `_refine` (only when some member's solve failed): re-solve those members sequentially on
   the same batch; the others keep their proposal.
3. `commit`: apply each member's update if its loss and gradient are finite, and advance the
   per-member bookkeeping and the step counter together, in one new `TrainState`.

`run_chunk` runs 1–3 for many updates in one program (one dispatch and one host transfer per
chunk, not per update); 2 is a branch taken only by a batch that needs it.

Loss (Hess, Götz, Durstewitz (2026), arXiv:2605.12683, Eq. 59–60):
`MSE(x_{T_w+1:T}, x̂_{T_w+1:T}) + regularization`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._alpha import AbstractAlpha
from .._gtf import gtf_forward
from .._regularization import Regularization
from .._solvers._base import AbstractSolver, SolverInfo
from .._solvers._sequential import Sequential
from ._members import MemberSettings, masked, regularization_of, teacher_noise
from ._windows import Windows
from ..models import AbstractGTFModel, AbstractModel, AbstractTeacherForcedModel

#: The fields of an update's per-member record and the dtype each has in `fit`'s history
#: (the history file stores every value as float64). The one declaration: `StepRecord` and
#: the history's fields follow it.
RECORD_DTYPES: dict[str, Any] = {
    "loss": np.float64, "mse": np.float64, "alpha": np.float64, "newton_iters": np.int64,
    "converged": np.bool_, "applied": np.bool_, "fallback": np.bool_, "alpha_raised": np.bool_}


class StepRecord(NamedTuple("StepRecord", [(name, Any) for name in RECORD_DTYPES])):
    """One update's record, a `(K,)` array per field (`RECORD_DTYPES`): `loss`, `mse`,
    `alpha`, `newton_iters`, `converged` (the solve), `applied` (the update),
    `fallback` (the batch was re-solved sequentially), `alpha_raised`.

    Inside the jitted updates it travels packed as one `(fields, K)` array (`pack`), a
    chunk's records stacked, so a chunk costs one device-to-host transfer; `unpack` names the
    rows again."""

    __slots__ = ()

    def pack(self, dtype) -> Array:
        """The fields stacked into one `(fields, K)` array of `dtype`."""
        return jnp.stack([jnp.asarray(v).astype(dtype) for v in self])

    @classmethod
    def unpack(cls, packed) -> StepRecord:
        """The record of a `pack`ed array (rows in field order)."""
        return cls(*packed)


class StepConfig(eqx.Module):
    """Everything about an update but the data and the state. The strategies are pytrees:
    their static fields (all of dsr's own) are part of the compilation key, so equal settings
    reuse compilations, and any array a user's strategy holds is an argument, not a constant."""

    solver: AbstractSolver
    regularization: Regularization | None
    optimizer: optax.GradientTransformation = eqx.field(static=True)
    alpha: AbstractAlpha
    batch_size: int = eqx.field(static=True)
    warmup: int = eqx.field(static=True)
    max_failures: int = eqx.field(static=True)
    gtf: bool = eqx.field(static=True)
    noise: float = eqx.field(static=True, default=0.0)  # teacher-signal noise (data units)
    steps: int = eqx.field(static=True, default=0)  # the fit's total updates (for α strategies)


class TrainState(eqx.Module):
    """The whole state of a fit between two updates (members stacked on axis 0)."""

    model: AbstractModel
    opt_state: optax.OptState
    alpha: Float[Array, " K"]
    consecutive: Int[Array, " K"]  # consecutive batches whose solve failed
    skipped: Int[Array, " K"]  # consecutive updates not applied (non-finite)
    active: Bool[Array, " K"]  # False for padding and for members that diverged
    step: Int[Array, ""]


class Proposal(eqx.Module):
    """Candidate updates of all members for one batch."""

    model: AbstractModel
    opt_state: optax.OptState
    loss: Float[Array, " K"]
    mse: Float[Array, " K"]
    finite: Bool[Array, " K"]
    converged: Bool[Array, " K"]
    iters: Int[Array, " K"]
    fallback: Bool[Array, " K"]
    alpha: Float[Array, " K"]
    x: Float[Array, "K B T+1 N"]
    s: Float[Array, "K B T+1 S"] | None
    teacher: Float[Array, "K B T+1 N"] | None = None  # x plus noise (`noise` > 0)


def predict(model, x, alpha, s, solver, warmup):
    """Teacher-forced predictions `x̂_{1:T}` for windows `x` of shape (B, T+1, N)."""
    if isinstance(model, AbstractGTFModel):
        z, info = gtf_forward(model, x, alpha, warmup=warmup, solver=solver, inputs=s)
        return z @ model.B.T, info
    if isinstance(model, AbstractTeacherForcedModel):
        xhat = jax.vmap(model.predict_teacher_forced)(x, s)
        B = x.shape[0]
        info = SolverInfo(jnp.zeros(B, jnp.int32), jnp.ones(B, bool), jnp.zeros(B, x.dtype),
                          jnp.all(jnp.isfinite(xhat), axis=(1, 2)))
        return xhat, info
    raise TypeError(
        f"`model` ({type(model).__name__}) must be an AbstractGTFModel (trained by GTF) or an "
        "AbstractTeacherForcedModel (trained by teacher forcing).")


def loss_fn(model, x, alpha, s, solver, warmup, reg, teacher=None):
    """`MSE(x_{T_w+1:T}, x̂_{T_w+1:T}) + regularization` and `(mse, SolverInfo)`; the model
    is forced by `teacher` (noisy windows) when given, the targets stay `x`."""
    xhat, info = predict(model, x if teacher is None else teacher, alpha, s, solver, warmup)
    mse = jnp.mean((xhat[:, warmup:] - x[:, warmup + 1:]) ** 2)
    total = mse + (reg(model) if reg is not None else 0.0)
    return total, (mse, info)


def member_update(model, opt_state, x, s, alpha, cfg: StepConfig, solver: AbstractSolver,
                  teacher=None, ms: MemberSettings | None = None):
    """One member's candidate update: `(model, opt_state, loss, mse, finite, converged,
    iterations)`; the candidate is returned whether or not it is finite. `ms`: this member's
    sweep settings (λ, mask, learning-rate factor), None outside a sweep."""
    (loss, (mse, info)), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(
        model, x, alpha, s, solver, cfg.warmup, regularization_of(cfg.regularization, ms),
        teacher)
    grads = masked(grads, ms)
    params = eqx.filter(model, eqx.is_inexact_array)
    updates, new_opt = cfg.optimizer.update(grads, opt_state, params)
    new_model = eqx.apply_updates(model, masked(updates, ms, scale=True))
    leaves = jax.tree_util.tree_leaves(grads)
    finite = jnp.isfinite(loss) & jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in leaves]))
    return new_model, new_opt, loss, mse, finite, jnp.all(info.converged), jnp.max(info.iterations)


def _vupdate(state, x, s, alpha, cfg, solver, teacher=None, members=None):
    fn = lambda m, o, xb, sb, a, tb, ms: member_update(m, o, xb, sb, a, cfg, solver, tb, ms)  # noqa
    return eqx.filter_vmap(fn)(state.model, state.opt_state, x, s, alpha, teacher, members)


def _teacher(keys, step, x, noise: float):
    """Gaussian noise of std `noise` on the teacher signals (a stream apart from the
    windows'), or None (the GTF code's `gaussian_noise_level`)."""
    if not noise:
        return None
    return teacher_noise(keys, step, x, jnp.full(keys.shape[:1], noise, x.dtype))


def propose(state: TrainState, keys: PRNGKeyArray, windows: Windows, cfg: StepConfig,
            members: MemberSettings | None = None) -> Proposal:
    """Sample, update α when due, and propose every member's update with `cfg.solver`
    (`members`: a sweep's per-member settings); `fallback` marks the members whose solve
    failed."""
    x, s = jax.vmap(lambda k: windows.sample(k, state.step, cfg.batch_size))(keys)
    alpha = state.alpha
    due = cfg.alpha.is_due(state.step)  # a Python False for schedules that never change
    if cfg.gtf and due is not False:
        one = lambda a, m, xb: cfg.alpha.updated(a, m, xb, state.step, cfg.steps)  # noqa: E731
        new = lambda: eqx.filter_vmap(one)(alpha, state.model, x)  # noqa: E731
        alpha = jax.lax.cond(due, new, lambda: alpha)
    if members is not None and members.noise is not None:
        teacher = teacher_noise(keys, state.step, x, members.noise)
    else:
        teacher = _teacher(keys, state.step, x, cfg.noise)
    m, o, loss, mse, fin, conv, it = _vupdate(state, x, s, alpha, cfg, cfg.solver, teacher,
                                              members)
    # Members whose parallel solve failed (not converged or non-finite) get a sequential
    # re-solve (`refine`); `fallback` marks them.
    need = jnp.zeros_like(fin)
    if cfg.gtf and not isinstance(cfg.solver, Sequential):
        need = state.active & ~(fin & conv)
    return Proposal(m, o, loss, mse, fin, conv, it, need, alpha, x, s, teacher)


def _refine(state: TrainState, prop: Proposal, need: Bool[Array, " K"], cfg: StepConfig,
            members: MemberSettings | None = None) -> Proposal:
    """Re-solve the members in `need` sequentially on the same batch and α."""
    seq = _vupdate(state, prop.x, prop.s, prop.alpha, cfg, Sequential(), prop.teacher, members)
    pick = lambda a, b: _where(need, a, b)  # noqa: E731
    m, o = (jax.tree_util.tree_map(pick, new, old, is_leaf=lambda v: v is None)
            for new, old in ((seq[0], prop.model), (seq[1], prop.opt_state)))
    loss, mse, fin = (pick(a, b) for a, b in zip(seq[2:5], (prop.loss, prop.mse, prop.finite)))
    return Proposal(m, o, loss, mse, fin, prop.converged, prop.iters, need, prop.alpha, prop.x,
                    prop.s, prop.teacher)


def _where(mask, a, b):
    """Per member: `a` where `mask`, else `b` (non-array leaves are taken from `a`)."""
    if not eqx.is_array(a):
        return a
    return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


def commit(state: TrainState, prop: Proposal, cfg: StepConfig):
    """Apply the finite proposals of active members; return `(new_state, record)` with this
    step's `StepRecord`, packed `(fields, K)`."""
    applied = state.active & prop.finite
    keep = lambda new, old: _where(applied, new, old)  # noqa: E731
    model = jax.tree_util.tree_map(keep, prop.model, state.model)
    opt_state = jax.tree_util.tree_map(keep, prop.opt_state, state.opt_state)
    # A batch the sequential re-solve handled is a solver failure; after `max_failures` of
    # them in a row α rises (the GTF-forced system contracts for α large enough, Prop. 1).
    failed = prop.fallback & prop.finite
    consecutive = jnp.where(failed, state.consecutive + 1, 0)
    raise_alpha = (consecutive >= cfg.max_failures) & (prop.alpha < 1.0)
    alpha = jnp.where(raise_alpha, jnp.minimum(1.0, prop.alpha + cfg.alpha.failure_step),
                      prop.alpha)
    consecutive = jnp.where(raise_alpha, 0, consecutive)
    skipped = jnp.where(applied, 0, state.skipped + state.active)
    active = state.active & (skipped < 10 * cfg.max_failures)
    new = TrainState(model, opt_state, alpha.astype(state.alpha.dtype), consecutive, skipped,
                     active, state.step + 1)
    record = StepRecord(loss=prop.loss, mse=prop.mse, alpha=prop.alpha,
                        newton_iters=prop.iters, converged=prop.converged, applied=applied,
                        fallback=prop.fallback, alpha_raised=raise_alpha)
    return new, record.pack(state.alpha.dtype)


#: The most updates one dispatch of `run_chunk` runs (the length of its record buffer, a
#: static shape: every chunk of every `fit` with the same shapes is one compiled program).
CHUNK = 256


@eqx.filter_jit
def run_chunk(state: TrainState, keys: PRNGKeyArray, windows: Windows, cfg: StepConfig, n,
              members: MemberSettings | None = None):
    """`n` ≤ `CHUNK` updates in one program (a `lax.while_loop` over `propose`, `_refine`
    when some member's parallel solve failed, and `commit`; `members`: a sweep's
    per-member settings): `(state, records (CHUNK,
    fields, K), done)`, the first `done` rows of `records` being the updates' packed
    `StepRecord`s. It stops early when no member is active.

    The updates do not depend on where chunks start or end (the same program, the same
    body), so a run resumed from any step is bit-exact."""
    n_fields, K = len(RECORD_DTYPES), state.alpha.shape[0]
    arrays, static = eqx.partition(state, eqx.is_array)  # a loop carries arrays only
    parallel = cfg.gtf and not isinstance(cfg.solver, Sequential)

    def cond(carry):
        i, st, _ = carry
        return (i < n) & jnp.any(st.active)

    def body(carry):
        i, st, buf = carry
        st = eqx.combine(st, static)
        prop = propose(st, keys, windows, cfg, members)
        if parallel:  # the sequential re-solve runs only for a batch that needs it
            prop = jax.lax.cond(jnp.any(prop.fallback),
                                lambda p: _refine(st, p, p.fallback, cfg, members),
                                lambda p: p, prop)
        new, record = commit(st, prop, cfg)
        buf = jax.lax.dynamic_update_index_in_dim(buf, record, i, 0)
        return i + 1, eqx.filter(new, eqx.is_array), buf

    buf = jnp.zeros((CHUNK, n_fields, K), state.alpha.dtype)
    done, arrays, buf = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), arrays, buf))
    return eqx.combine(arrays, static), buf, done
