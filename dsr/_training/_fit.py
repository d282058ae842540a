"""Training: `dsr.fit(model, data, alpha=0.08)` — GTF-DEER for the shPLRNN family, teacher
forcing for the LSSM family; one model or a whole `Ensemble` in one vmapped program (Hess,
Götz, Durstewitz (2026), *Parallel-in-Time Training of Recurrent Neural Networks for
Dynamical Systems Reconstruction*, arXiv:2605.12683, Alg. 1 and 3, App. E, H)."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax

from .. import _lock
from .._cache import enable_compilation_cache
from .._alpha import AbstractAlpha
from ._checkpoint import identity, read_header
from .._ensemble import Ensemble
from .._sweep._build import Sweep
from ._setup import default_optimizer as default_optimizer
from ._arguments import FitArguments
from ._setup import make_plan
from .._regularization import Regularization
from .._schedule import AbstractSchedule
from .._sharding import is_writer, to_host
from ._signals import interrupt_on_sigterm
from .._solvers._base import AbstractSolver
from ._trainer import Trainer
from ._validation import validation_history
from .._sweep._select import select
from ..models import AbstractModel


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What [`dsr.fit`][] returns.

    **Attributes:**

    - `model`: the trained model (an `Ensemble` if one was trained).
    - `history`: per-update arrays `loss` (total), `mse`, `alpha`, `newton_iters` (max over
      the batch), `converged`, `applied` (update applied), `fallback` (batch re-solved
      sequentially), `alpha_raised`, each `(steps,)` for a model and `(K, steps)` for an
      ensemble; `wall_time` (seconds per update, `(steps,)`); and `eval`, a list of
      `(step, dict)` from the callback.
    - `settings`: every setting that changes the result (JSON).
    - `alpha`: the final forcing strength (a float, or one per member).
    - `interrupted`: stopped by Ctrl-C / SIGTERM; `checkpoint`: the last checkpoint written.
    - `stopped`: members that diverged even sequentially and were frozen (a bool, or one per
      member); `free_run`: the last free-run check (`status` "ok", "diverged" or
      "collapsed" or "off", `step`, `size`, `reason`, `after_updates`), a dict or one per
      member.
    - `validation` (with `validation=`): `step` (E,), and of each validation free run
      (`(E,)`, or `(K, E)` for an ensemble) the binning `D_stsp` (on the data for N ≤ 3, on
      their 3 leading principal components for N > 3), `D_H`, `status` (0 ok, 1 off,
      2 collapsed, 3 diverged; -1 in records of older versions) and `score` (what
      `keep="best"` minimizes: D_stsp if ok, 1000 + D_stsp if off or collapsed, inf if
      diverged); `best_step` and `best_score` (each member's best validation step and
      score; -1 and inf before any finite score), `keep`, and `seconds` (time spent
      validating in this call).
    - `sweep` (when `model` was a [`dsr.Sweep`][]): a [`dsr.SweepResult`][] — every member's
      setting and validation score, the median per setting, the selected setting and every
      trained member. `model` is then the selected setting's members (an `Ensemble`, at
      their own size); `history`, `alpha`, `stopped` and `free_run` cover every member of
      the sweep (member `i` has setting `i // runs`, seed `i % runs`).
    """

    model: Any
    history: dict
    settings: dict
    alpha: Any
    interrupted: bool = False
    checkpoint: str | None = None
    stopped: Any = False
    free_run: Any = None
    validation: dict | None = None
    sweep: Any = None


def _progress_bar(trainer: Trainer, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    desc = "fit" if trainer.plan.n_members == 1 else f"fit {trainer.plan.n_members} members"
    return tqdm(total=trainer.plan.steps, initial=len(trainer.history), desc=desc,
                dynamic_ncols=True)


def _show(bar, record, before, done, steps):
    bar.update(done - before)
    if done // 10 == before // 10 and done != steps:
        return
    loss, alpha, iters = record.loss, record.alpha, record.newton_iters
    post = dict(loss=f"{np.nanmedian(loss):.4g}", alpha=f"{np.median(alpha):.3f}",
                iters=int(np.max(iters)))
    if len(loss) > 1:
        worst = int(np.nanargmax(np.where(np.isfinite(loss), loss, np.inf)))
        post = dict(median_loss=post["loss"], worst=f"#{worst} {loss[worst]:.3g}",
                    alpha=post["alpha"], iters=post["iters"])
    bar.set_postfix(post)


def _loop(trainer: Trainer, bar) -> bool:
    """Train to the end and save the final checkpoint; returns whether it was interrupted
    (Ctrl-C / SIGTERM at any point, the final save included, saves the state reached). Any
    other exception saves the state reached too, then propagates."""
    steps, K = trainer.plan.steps, trainer.plan.n_members
    try:
        done = int(trainer.state.step)
        while done < steps:
            record = None
            if np.any(to_host(trainer.state.active)[:K]):
                record = trainer.step()
            if record is None:  # every member stopped (none active, nothing ran)
                _warn_all_stopped(trainer)
                break
            before, done = done, int(trainer.state.step)
            trainer.after_step(done)
            if bar is not None:
                _show(bar, record, before, done, steps)
        if steps > 0:
            trainer.save()
    except KeyboardInterrupt:
        done = int(trainer.state.step)
        trainer.save()
        where = f"; checkpoint saved to {trainer.checkpoint_path!r} (resume with resume=...)" \
            if trainer.checkpoint_path else ""
        warnings.warn(f"fit interrupted after {done} steps{where}", stacklevel=3)
        return True
    except BaseException as e:
        trainer.save_after_error(e)
        raise
    return False


def _warn_all_stopped(trainer):
    warnings.warn(
        f"fit stopped after {int(trainer.state.step)} steps: the last "
        f"{10 * trainer.cfg.max_failures} updates had a non-finite loss or gradient even with "
        "the sequential solver, so the model itself diverges on the data (lower the learning "
        "rate, raise alpha, or re-initialize).", stacklevel=4)


def _result(trainer: Trainer, interrupted: bool) -> FitResult:
    p, K = trainer.plan, trainer.plan.n_members
    hist = trainer.history.arrays(squeeze=not p.is_ensemble)
    if p.is_ensemble:  # one wall time per update, shared by the members
        hist["wall_time"] = hist["wall_time"][0]
    state = to_host((trainer.state.alpha, trainer.state.active))  # (gathered from every process)
    alpha, active = state[0][:K], state[1][:K]
    skipped = int(np.sum(~hist["applied"])) if hist["applied"].size else 0
    if skipped:
        warnings.warn(f"{skipped} of {hist['applied'].size} member updates were skipped "
                      "(non-finite loss or gradient).", stacklevel=3)
    raised = int(np.sum(hist["alpha_raised"])) if hist["alpha_raised"].size else 0
    if raised:
        step = float(p.cfg.alpha.failure_step)
        warnings.warn(f"alpha was raised by {step:g} {raised} time(s) after "
                      f"{p.settings['max_failures']} "
                      "consecutive batches whose parallel solve failed (history['alpha_raised']); "
                      f"final alpha {np.round(alpha.astype(float), 3).tolist()}.", stacklevel=3)
    one = (lambda a: a) if p.is_ensemble else (lambda a: a[0])  # noqa: E731
    val = None
    if p.validation is not None:
        val = validation_history(trainer.history.evals, K, p.is_ensemble)
        val.update(best_step=one(trainer.best[2]), best_score=one(trainer.best[1]),
                   keep=p.validation.keep, seconds=trainer.validation_time)
    model, sweep = trainer.current_model(kept=True), None
    if p.sweep is not None:
        sweep, model = select(p.sweep, val, model)
    return FitResult(model=model, history=hist, settings=p.settings,
                     alpha=one(alpha.astype(float)) if p.is_ensemble else float(alpha[0]),
                     interrupted=interrupted, checkpoint=trainer.checkpoint_path,
                     stopped=one(~active) if p.is_ensemble else bool(~active[0]),
                     free_run=trainer.free_run if p.is_ensemble else trainer.free_run[0],
                     validation=val, sweep=sweep)


def fit(
    model: AbstractModel | Ensemble | Sweep,
    data: Any,
    alpha: float | str | AbstractAlpha = 0.3,
    *,
    steps: int = 1000,
    seq_len: int = 200,
    batch_size: int = 16,
    warmup: int = 0,
    learning_rate: float = 5e-3,
    optimizer: optax.GradientTransformation | None = None,
    solver: AbstractSolver | str = "auto",
    regularization: Regularization | None = None,
    inputs: Any = None,
    key: jax.Array | None = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 500,
    resume: str | os.PathLike | None = None,
    resume_settings: str = "check",
    callback: Callable[[int, Any], dict | None] | None = None,
    eval_every: int | None = None,
    alpha_every: int | None = None,
    alpha_gamma: float | None = None,
    max_failures: int = 5,
    devices: Any = None,
    monitor_every: int | None = None,
    validation: Any = None,
    keep: str = "last",
    status_steps: int | None = None,
    schedule: AbstractSchedule | None = None,
    noise: float = 0.0,
    check_model: bool = True,
) -> FitResult:
    """Train a model (or every member of an `Ensemble`) on random windows of `seq_len + 1`
    observations: generalized teacher forcing for the shPLRNN family (solved by GTF-DEER or
    sequentially), teacher forcing for the LSSM family.

    **Arguments:**

    - `model`: a dsr model or a `dsr.Ensemble` (all members in one vmapped update; member `i`
      draws its windows from `jax.random.split(key, K)[i]`, so it reaches the parameters
      `fit(ens[i], ..., key=jax.random.split(key, K)[i])` reaches alone); or a
      [`dsr.Sweep`][] (a `dsr.Grid` of settings × seeds, one vmapped program): each member
      trains with its setting of the grid in place of `alpha` (its start α with an adaptive
      `alpha`), `learning_rate` (its optimizer update scaled by `lr / learning_rate`),
      `noise` and the λ of `regularization`, at its own model size (zero padding, masked),
      and seed `r` draws its windows from `jax.random.split(key, runs)[r]` — so a member
      reaches what `fit(sweep.member(i), ..., key=jax.random.split(key, runs)[r])` with its
      setting reaches alone. Needs `validation`; the result is the setting with the best
      median validation score over its seeds (`FitResult.sweep`).
    - `data`: an array (T, N), a list of arrays, or a `data_gen.Dataset` (its `train`).
    - `alpha`: GTF forcing strength — a number in [0, 1] (`dsr.ConstantAlpha`), `"adaptive"`
      or a `dsr.AdaptiveAlpha(every, gamma, alpha0)` (aGTF). Unused by the LSSM family.
      `alpha_every` / `alpha_gamma` set `every` / `gamma` of `"adaptive"`. The defaults of
      `alpha` (0.3), `seq_len` (200) and `learning_rate` (5e-3) are the setting that did best
      over the 18 sweeps of `benchmarks.compare` (docs: Training, "Defaults").
    - `steps`: updates; `seq_len`: T; `batch_size`: windows per update; `warmup`: T_w < T
      (forced with α = 1, left out of the loss).
    - `learning_rate` / `optimizer`: default RAdam, cosine decay to lr/50, clipping at 10;
      `schedule`: the default optimizer's learning-rate schedule, a `dsr.CosineDecay()`
      (the default) or `dsr.ExponentialDecay(final=1e-6)` (the GTF authors').
    - `noise`: Gaussian noise augmentation of the teacher signals (the GTF code's
      `gaussian_noise_level`): every update the windows that force the model get fresh
      N(0, noise²) noise, in the data's units; the loss targets stay clean. 0: none.
    - `solver`: `dsr.DEER(...)`, `dsr.Sequential()`, or `"deer"`, `"quasi"`,
      `"sequential"`, `"auto"` (see `dsr.resolve_solver`).
    - `regularization`: a `dsr.Regularization` (MAR, L1(B), L2(B)); `inputs`: external
      inputs aligned with `data`; `key`: PRNG key (same key ⇒ same run).
    - `progress`: tqdm bar (loss, or median loss and the worst member; α; Newton iterations).
    - `checkpoint`: file, written every `checkpoint_every` updates, at the end, on
      Ctrl-C / SIGTERM and before any other exception leaves the training loop (which is then
      re-raised); its history goes to `<checkpoint>.history`. An existing file that is not a
      dsr checkpoint is never overwritten, and a symbolic link at either path is refused. The
      run holds a lock (`<checkpoint>.lock`), so a second `fit` on the same file refuses,
      naming the process that writes it. Under `jax.distributed` only process 0 writes it
      (and its history and lock); the others never touch the files.
    - `resume`: a checkpoint to continue from —
      bit-exactly, if model, data and settings are the checkpoint's. Without `checkpoint`,
      the run keeps writing to the resumed file (unless it is read-only or a link: then it
      warns that no checkpoint is saved). The model, the data
      and `steps` ≥ the checkpoint's step are checked before anything is compiled; for the
      other settings `resume_settings` says what happens when they differ: `"check"` (an
      error listing the differences), `"checkpoint"` (continue with the stored settings —
      `alpha`, `steps`, `seq_len`, `batch_size`, `warmup`, `learning_rate`, solver,
      regularization, `max_failures`, `key` and the default optimizer; a user's optimizer
      must be passed again) or `"call"` (continue with this call's, with a warning).
    - `callback(step, model) -> dict` every `eval_every` updates (kept in `history["eval"]`).
    - `max_failures`: after this many consecutive batches whose parallel solve failed (each
      re-solved sequentially), α rises by the strategy's `failure_step`.
    - `devices`: None (default device), `"all"` or a list: shard an ensemble's members
      over the devices (also across hosts after `jax.distributed.initialize()`).
    - `monitor_every`: every so many updates (default: a quarter of `steps`; 0: never) run
      the model freely from a data context (with `validation`: from the validation context,
      for at least `status_steps`) and warn if the orbit diverges, collapses
      or is off the data's range (`dsr.orbit_status`).
    - `validation`: free-run validation on held-out data — a (T, N) array, a
      `data_gen.Dataset` (its `test`), or a fraction in (0, 1) of the training data taken
      from the end of its last series. Every `eval_every` updates (default: `steps // 20`)
      each member runs freely from a context of the first tenth of it (at most `seq_len`
      steps) for `status_steps`; the binning D_stsp of its first validation length, D_H
      (per channel, averaged) and the whole run's `dsr.orbit_status` go into `history["eval"]` and
      `FitResult.validation`. For N ≤ 3 the D_stsp bins the data's space
      (`min(30, ⌊T^(1/N)⌋)`, at least 4, bins per axis); for N > 3 it bins the validation
      data's 3 leading principal components (the same projection for the run;
      `min(30, ⌊T^(1/3)⌋)` bins per axis; `settings["validation"]["space"] = "pca3"`).
      The free-run check (`monitor_every`) then starts from the validation context and runs
      at least `status_steps`.
    - `status_steps`: the length of each validation free run, over which its status is
      judged (default: 4 × the validation length; at least the validation length); the
      D_stsp and D_H are those of its first validation length. An orbit that leaves the
      data's range only after the validation length is then "off", not "ok".
    - `keep`: `"last"` (the parameters after the last update) or `"best"` (each member's
      parameters at its lowest validation score: status first — D_stsp for an "ok" run,
      1000 + D_stsp for an "off" or "collapsed" one, so it ranks after every "ok" one, and
      a diverged one is never kept; kept in the checkpoint, so resume keeps them; needs
      `validation`).
    - `check_model`: for a model class defined outside dsr, compare its analytic Jacobians
      with autodiff once, before compiling ([`dsr.check_model`][]; a `ValueError` naming the
      method that disagrees); `False` skips the check.

    An update whose loss or gradient is non-finite is never applied; a member with
    `10 × max_failures` such updates in a row is frozen (`FitResult.stopped`).

    **Returns:** a `FitResult`.

    Example:
    ```python
    ds = data_gen.lorenz63()
    model = dsr.ShPLRNN(3, 3, 50, key=jax.random.key(0))
    result = dsr.fit(model, ds, alpha=0.08, steps=2000, seq_len=200, batch_size=16)
    ```
    """
    enable_compilation_cache()
    args = FitArguments(
        steps=steps, seq_len=seq_len, batch_size=batch_size, warmup=warmup,
        learning_rate=learning_rate, optimizer=optimizer, solver=solver,
        regularization=regularization, inputs=inputs, key=key, progress=progress,
        checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
        resume_settings=resume_settings, callback=callback, eval_every=eval_every,
        alpha_every=alpha_every, alpha_gamma=alpha_gamma, max_failures=max_failures,
        devices=devices, monitor_every=monitor_every, validation=validation, keep=keep,
        status_steps=status_steps, schedule=schedule, noise=noise, check_model=check_model)
    plan = make_plan(model, data, alpha, args)
    ckpt = plan.options.checkpoint
    with _lock.exclusive(identity(ckpt) if ckpt is not None else None,
                         enabled=ckpt is not None and is_writer()):
        plan = _replan_if_changed(plan, model, data, alpha, args)
        trainer = Trainer(plan)
        trainer.start()
        bar = _progress_bar(trainer, progress)
        try:
            with interrupt_on_sigterm():
                interrupted = _loop(trainer, bar)
        finally:
            if bar is not None:
                bar.close()
        return _result(trainer, interrupted)


def _replan_if_changed(plan, model, data, alpha, args: FitArguments):
    """The plan again if the checkpoint it resumes was rewritten between planning and
    taking the lock (by a writer that has finished since)."""
    resume = plan.options.resume
    if resume is None:
        return plan
    path, header, payload = resume
    try:
        now = read_header(path)
    except ValueError:
        now = None
    if now == (header, payload):
        return plan
    return make_plan(model, data, alpha, args)
