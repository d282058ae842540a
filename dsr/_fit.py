"""Training: `dsr.fit(model, data, alpha=0.08)` (papers/001 Alg. 1 and 3, App. E, H)."""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._alpha import estimate_alpha, update_alpha
from ._gtf import check_alpha, gtf_forward
from ._regularization import Regularization
from ._serialization import atomic_write, hyperparameters
from ._solver import AbstractSolver, Sequential, SolverInfo, resolve_solver
from .models import AbstractGTFModel, AbstractModel, AbstractTeacherForcedModel



@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit` returns.

    - `model`: the trained model.
    - `history`: per-step arrays `loss` (total), `mse`, `alpha`, `newton_iters` (max over the
      batch), `converged`, `applied` (update applied), `fallback` (batch re-solved
      sequentially), `wall_time` (seconds per step); and `eval`, a list of
      `(step, dict)` from the callback.
    - `settings`: every setting used (JSON-serializable).
    - `alpha`: the final forcing strength; `interrupted`: stopped by Ctrl-C/SIGTERM;
      `checkpoint`: path of the last checkpoint written, if any.
    """

    model: AbstractModel
    history: dict
    settings: dict
    alpha: float
    interrupted: bool = False
    checkpoint: str | None = None


# ------------------------------------------------------------------------------ validation


def _as_series(name, data, obs_dim, dtype):
    if hasattr(data, "train") and not isinstance(data, np.ndarray):
        data = data.train
    if isinstance(data, (list, tuple)):
        series = list(data)
    else:
        series = [data]
    if not series:
        raise ValueError(f"`{name}` is empty.")
    out = []
    for i, s in enumerate(series):
        a = np.asarray(s)
        if a.ndim != 2:
            raise ValueError(f"`{name}` must be (T, N) arrays; series {i} has shape {a.shape}.")
        if obs_dim is not None and a.shape[1] != obs_dim:
            raise ValueError(
                f"`{name}` has {a.shape[1]} dimensions (series {i}) but the model's obs_dim is "
                f"{obs_dim}."
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"`{name}` contains non-finite values (NaN or inf) in series {i}.")
        out.append(a.astype(dtype))
    return out


def _check_int(name, v, lo):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
        raise ValueError(f"`{name}` must be an int ≥ {lo}; got {v!r}.")


def _model_dtype(model):
    leaves = [x for x in jax.tree_util.tree_leaves(model) if eqx.is_inexact_array(x)]
    return leaves[0].dtype if leaves else jnp.float32


# ------------------------------------------------------------------------------ loss / step


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
        "AbstractTeacherForcedModel (trained by teacher forcing)."
    )


def loss_fn(model, x, alpha, s, solver, warmup, reg):
    """`MSE(x_{T_w+1:T}, x̂_{T_w+1:T}) + regularization` (papers/001 Eq. 59–60)."""
    xhat, info = predict(model, x, alpha, s, solver, warmup)
    mse = jnp.mean((xhat[:, warmup:] - x[:, warmup + 1:]) ** 2)
    total = mse + (reg(model) if reg is not None else 0.0)
    return total, (mse, info)


@eqx.filter_jit
def _train_step(model, opt_state, x, s, alpha, solver, warmup, reg, optimizer):
    (loss, (mse, info)), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(
        model, x, alpha, s, solver, warmup, reg
    )
    params = eqx.filter(model, eqx.is_inexact_array)
    updates, new_opt = optimizer.update(grads, opt_state, params)
    new_model = eqx.apply_updates(model, updates)
    finite = jnp.isfinite(loss) & jnp.all(jnp.stack(
        [jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]))
    ok = finite & jnp.all(info.converged)
    pick = lambda a, b: jnp.where(ok, a, b) if eqx.is_array(a) else a  # noqa: E731
    model = jax.tree_util.tree_map(pick, new_model, model)
    opt_state = jax.tree_util.tree_map(pick, new_opt, opt_state)
    return model, opt_state, loss, mse, ok, jnp.max(info.iterations), jnp.all(info.converged)


def default_optimizer(learning_rate: float, steps: int) -> optax.GradientTransformation:
    """RAdam with cosine decay from `learning_rate` to `learning_rate/50` and gradient
    clipping at norm 10 (the paper decays 5e-5 → 1e-6 over 150k updates)."""
    schedule = optax.cosine_decay_schedule(learning_rate, max(steps, 1), alpha=0.02)
    return optax.chain(optax.clip_by_global_norm(10.0), optax.radam(schedule))


# ------------------------------------------------------------------------------ fit


class _Windows:
    """Random training windows of length T+1 from one or more series."""

    def __init__(self, series, inputs, length, seed):
        self.series, self.inputs, self.length = series, inputs, length
        counts = np.array([len(s) - length + 1 for s in series])
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.seed = seed

    def batch(self, step, batch_size):
        rng = np.random.default_rng([self.seed, step])
        idx = rng.integers(0, self.offsets[-1], size=batch_size)
        which = np.searchsorted(self.offsets, idx, side="right") - 1
        starts = idx - self.offsets[which]
        x = np.stack([self.series[w][a:a + self.length] for w, a in zip(which, starts)])
        s = None
        if self.inputs is not None:
            s = np.stack([self.inputs[w][a:a + self.length] for w, a in zip(which, starts)])
        return x, s


def _save_checkpoint(path, model, opt_state, step, alpha, history, settings, consecutive):
    header = {"step": step, "alpha": alpha, "consecutive_failures": consecutive,
              "history": {k: (v if k == "eval" else list(map(float, v))) for k, v in history.items()},
              "settings": settings, "model": hyperparameters(model) if _serializable(model) else None}

    def write(f):
        f.write((json.dumps(header, default=str) + "\n").encode())
        eqx.tree_serialise_leaves(f, (model, opt_state))

    atomic_write(path, write)


def _serializable(model):
    try:
        hyperparameters(model)
        return True
    except TypeError:
        return False


def _load_checkpoint(path, model, opt_state):
    with open(path, "rb") as f:
        header = json.loads(f.readline().decode())
        model, opt_state = eqx.tree_deserialise_leaves(f, (model, opt_state))
    return header, model, opt_state


def fit(
    model: AbstractModel,
    data: Any,
    alpha: float | str = 0.08,
    *,
    steps: int = 1000,
    seq_len: int = 256,
    batch_size: int = 16,
    warmup: int = 0,
    learning_rate: float = 1e-3,
    optimizer: optax.GradientTransformation | None = None,
    solver: AbstractSolver | str = "auto",
    regularization: Regularization | None = None,
    inputs: Any = None,
    key: jax.Array | None = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 500,
    resume: str | os.PathLike | None = None,
    callback: Callable[[int, AbstractModel], dict | None] | None = None,
    eval_every: int | None = None,
    alpha_every: int = 10,
    alpha_gamma: float = 0.999,
    max_failures: int = 5,
) -> FitResult:
    """Train `model` on `data` by generalized teacher forcing (shPLRNN) or teacher forcing
    through U (LSSM), on random windows of `seq_len + 1` observations.

    **Arguments:**

    - `model`: `dsr.ShPLRNN`, `dsr.LSSM` or any `AbstractGTFModel`.
    - `data`: an array (T, N), a list of arrays, or a `data_gen.Dataset` (its `train`).
    - `alpha`: GTF forcing strength α ∈ [0, 1], or `"adaptive"` (SPEC §3; re-estimated
      every `alpha_every` steps with relaxation rate `alpha_gamma`). Unused by the LSSM.
    - `steps`: parameter updates; `seq_len`: T (predicted steps per window);
      `batch_size`: windows per update; `warmup`: T_w (steps forced with α = 1 and left out
      of the loss); must satisfy `warmup < seq_len`.
    - `learning_rate` / `optimizer`: defaults to `default_optimizer` (RAdam, cosine decay,
      clipping).
    - `solver`: `dsr.DEER(...)`, `dsr.Sequential()`, or a name: `"deer"`, `"quasi"`,
      `"sequential"`, `"auto"` (DEER on accelerators; on CPU DEER for M ≤ 8, else sequential;
      see `resolve_solver`).
    - `regularization`: a `dsr.Regularization` (MAR, L1(B), L2(B)).
    - `inputs`: external inputs aligned with `data` (same structure), if the model has any.
    - `key`: PRNG key for window sampling (same key ⇒ same run).
    - `progress`: tqdm bar with loss, α and Newton iterations.
    - `checkpoint`: path; written every `checkpoint_every` steps, at the end, and on
      Ctrl-C/SIGTERM. `resume`: a checkpoint path to continue from (same model structure,
      data, key and settings give the same parameters as an uninterrupted run).
    - `callback(step, model) -> dict`: called every `eval_every` steps (e.g. D_stsp, RMSE).
    - `max_failures`: after this many consecutive steps whose DEER solve failed (not
      converged or non-finite; such a batch is re-solved with `Sequential()`), α is raised
      by 0.05 with a warning.

    A step whose loss or gradient is non-finite is never applied; after `10 × max_failures`
    such steps in a row (the model diverges even sequentially) fit stops with a warning and
    returns what it has.

    **Returns:** a `FitResult`.

    Example:
    ```python
    ds = data_gen.lorenz63()
    model = dsr.ShPLRNN(3, 3, 50, key=jax.random.key(0))
    result = dsr.fit(model, ds, alpha=0.08, steps=2000, seq_len=200, batch_size=16)
    ```
    """
    # ---- validation, all before any compilation
    if not isinstance(model, AbstractModel):
        raise TypeError(f"`model` must be a dsr model; got {type(model).__name__}.")
    _check_int("steps", steps, 0)
    _check_int("seq_len", seq_len, 1)
    _check_int("batch_size", batch_size, 1)
    _check_int("checkpoint_every", checkpoint_every, 1)
    _check_int("alpha_every", alpha_every, 1)
    _check_int("max_failures", max_failures, 1)
    if eval_every is not None:
        _check_int("eval_every", eval_every, 1)
    if not isinstance(warmup, numbers.Integral) or isinstance(warmup, bool) or not 0 <= warmup < seq_len:
        raise ValueError(f"`warmup` must be an int with 0 ≤ warmup < seq_len = {seq_len}; got {warmup!r}.")
    adaptive = alpha == "adaptive"
    if not adaptive:
        if isinstance(alpha, str):
            raise ValueError(f"`alpha` must be a number in [0, 1] or 'adaptive'; got {alpha!r}.")
        check_alpha(alpha)
    if not 0.0 < alpha_gamma <= 1.0:
        raise ValueError(f"`alpha_gamma` must lie in (0, 1]; got {alpha_gamma!r}.")
    if not (isinstance(learning_rate, numbers.Real) and learning_rate > 0 and math.isfinite(learning_rate)):
        raise ValueError(f"`learning_rate` must be a positive number; got {learning_rate!r}.")
    solver_obj = resolve_solver(solver, model.latent_dim)
    if regularization is not None:
        if not isinstance(regularization, Regularization):
            raise TypeError("`regularization` must be a dsr.Regularization or None.")
        regularization.check(model)
    dtype = _model_dtype(model)
    series = _as_series("data", data, model.obs_dim, dtype)
    shortest = min(len(s) for s in series)
    if shortest < seq_len + 1:
        raise ValueError(
            f"`data` is too short: a series has {shortest} steps but seq_len + 1 = {seq_len + 1} "
            "are needed per window."
        )
    inp = None
    if model.input_dim:
        if inputs is None:
            raise ValueError(f"the model takes {model.input_dim} external inputs: pass `inputs`.")
        inp = _as_series("inputs", inputs, model.input_dim, dtype)
        if [len(s) for s in inp] != [len(s) for s in series]:
            raise ValueError("`inputs` must have the same lengths as `data`.")
    elif inputs is not None:
        raise ValueError("`inputs` given but the model has input_dim = 0.")
    if resume is not None and not os.path.exists(resume):
        raise ValueError(f"`resume`: no checkpoint at {os.fspath(resume)!r}.")
    if checkpoint is not None:
        folder = os.path.dirname(os.path.abspath(checkpoint))
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise ValueError(f"`checkpoint`: folder {folder!r} is not writable.")

    key = jax.random.key(0) if key is None else key
    seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
    windows = _Windows(series, inp, seq_len + 1, seed)
    optimizer = default_optimizer(learning_rate, steps) if optimizer is None else optimizer
    opt_state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))
    alpha_val = 0.0 if adaptive else float(alpha)
    settings = dict(
        alpha=alpha, steps=steps, seq_len=seq_len, batch_size=batch_size, warmup=warmup,
        learning_rate=learning_rate, optimizer="default" if optimizer is None else repr(optimizer),
        solver=repr(solver_obj), regularization=repr(regularization), seed=seed,
        model=type(model).__name__, backend=jax.default_backend(), alpha_every=alpha_every,
        alpha_gamma=alpha_gamma, max_failures=max_failures,
    )
    history: dict = {k: [] for k in ("loss", "mse", "alpha", "newton_iters", "converged",
                                     "applied", "fallback", "wall_time")}
    history["eval"] = []
    start, consecutive = 0, 0
    if resume is not None:
        header, model, opt_state = _load_checkpoint(resume, model, opt_state)
        start, alpha_val = int(header["step"]), float(header["alpha"])
        consecutive = int(header.get("consecutive_failures", 0))
        for k, v in header["history"].items():
            history[k] = list(v)
    gtf = isinstance(model, AbstractGTFModel)
    reg = regularization
    last_ckpt = None
    interrupted = False

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=start, desc="fit", dynamic_ncols=True)

    old_handler = None
    if signal.getsignal(signal.SIGTERM) is not None and _in_main_thread():
        def _on_term(signum, frame):
            raise KeyboardInterrupt("SIGTERM")

        old_handler = signal.signal(signal.SIGTERM, _on_term)
    completed, skipped_run = start, 0
    try:
        for step in range(start, steps):
            t0 = time.perf_counter()
            xb, sb = windows.batch(step, batch_size)
            xb = jnp.asarray(xb)
            sb = None if sb is None else jnp.asarray(sb)
            if gtf and adaptive and step % alpha_every == 0:
                est = float(estimate_alpha(model, xb))
                alpha_val = est if step == 0 and start == 0 else update_alpha(alpha_val, est, alpha_gamma)
            a = jnp.asarray(alpha_val, dtype)
            model_new, opt_new, loss, mse, ok, iters, conv = _train_step(
                model, opt_state, xb, sb, a, solver_obj, warmup, reg, optimizer)
            fallback = False
            if gtf and not bool(ok) and not isinstance(solver_obj, Sequential):
                fallback = True
                model_new, opt_new, loss, mse, ok, _, _ = _train_step(
                    model, opt_state, xb, sb, a, Sequential(), warmup, reg, optimizer)
                # Only a batch that the sequential solve handles is a DEER failure; if that
                # one is non-finite too, the model itself has blown up (counted as skipped).
                consecutive = consecutive + 1 if bool(ok) else 0
                if consecutive >= max_failures and alpha_val < 1.0:
                    alpha_val = min(1.0, alpha_val + 0.05)
                    consecutive = 0
                    warnings.warn(
                        f"GTF-DEER failed to converge on {max_failures} consecutive batches; "
                        f"raising alpha to {alpha_val:.3f}.", stacklevel=2)
            else:
                consecutive = 0
            skipped_run = 0 if bool(ok) else skipped_run + 1
            model, opt_state = model_new, opt_new
            ok = bool(ok)
            history["loss"].append(float(loss))
            history["mse"].append(float(mse))
            history["alpha"].append(alpha_val)
            history["newton_iters"].append(int(iters))
            history["converged"].append(bool(conv))
            history["applied"].append(ok)
            history["fallback"].append(fallback)
            history["wall_time"].append(time.perf_counter() - t0)
            done = completed = step + 1
            if callback is not None and eval_every is not None and done % eval_every == 0:
                out = callback(done, model)
                if out:
                    history["eval"].append((done, {k: float(v) for k, v in out.items()}))
            if checkpoint is not None and done % checkpoint_every == 0:
                _save_checkpoint(checkpoint, model, opt_state, done, alpha_val, history, settings,
                                 consecutive)
                last_ckpt = os.fspath(checkpoint)
            if skipped_run >= 10 * max_failures:
                warnings.warn(
                    f"fit stopped after {completed} steps: the last {skipped_run} updates had a "
                    "non-finite loss or gradient even with the sequential solver, so the model "
                    "itself diverges on the data (lower the learning rate, raise alpha, or "
                    "re-initialize).", stacklevel=2)
                break
            if bar is not None:
                bar.update(1)
                if done % 10 == 0 or done == steps:
                    bar.set_postfix(loss=f"{float(loss):.4g}", alpha=f"{alpha_val:.3f}",
                                    iters=int(iters))
    except KeyboardInterrupt:
        interrupted = True
        n = len(history["loss"])  # a step counts once its update and history are both in
        if n > completed:
            for v in history.values():
                del v[completed:]
        if checkpoint is not None:
            _save_checkpoint(checkpoint, model, opt_state, completed, alpha_val, history,
                             settings, consecutive)
            last_ckpt = os.fspath(checkpoint)
        warnings.warn(
            f"fit interrupted after {completed} steps"
            + (f"; checkpoint saved to {last_ckpt!r} (resume with resume=...)" if last_ckpt else ""),
            stacklevel=2)
    finally:
        if bar is not None:
            bar.close()
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)
    if not interrupted and checkpoint is not None and steps > start:
        _save_checkpoint(checkpoint, model, opt_state, steps, alpha_val, history, settings,
                         consecutive)
        last_ckpt = os.fspath(checkpoint)
    hist = {k: (v if k == "eval" else np.asarray(v)) for k, v in history.items()}
    n_failed = int(np.sum(~hist["applied"].astype(bool))) if len(hist["applied"]) else 0
    if n_failed:
        warnings.warn(f"{n_failed} of {len(hist['applied'])} updates were skipped "
                      "(non-finite loss or gradient).", stacklevel=2)
    return FitResult(model=model, history=hist, settings=settings, alpha=alpha_val,
                     interrupted=interrupted, checkpoint=last_ckpt)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
