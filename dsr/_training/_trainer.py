"""The training loop behind `dsr.fit`: state, history, checkpoints, callbacks, monitoring.

`Trainer` owns one run. Its state changes only by whole `TrainState` assignments (the step
counter inside), so an interrupt between any two statements leaves a consistent run: the
history is cut back to the state's step, and the checkpoint written then resumes bit-exactly.
"""

from __future__ import annotations

import time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._checkpoint import identity, restore, save_checkpoint
from .._ensemble import from_stack
from ._setup import Plan
from .._orbit_status import data_range, orbit_status
from .._generate import generate
from ._history import History
from .._lock import clean_stale_temporaries
from .._sharding import is_writer, process_count, to_host
from ._step import CHUNK, RECORD_DTYPES, StepRecord, TrainState, run_chunk
from ._validation import (eval_keys, eval_values, initial_best, kept_model, member_scores,
                          update_best)

#: The history's fields and their dtypes: each update's `StepRecord`, then its wall time.
HISTORY_DTYPES = {**RECORD_DTYPES, "wall_time": np.float64}
HISTORY_FIELDS = tuple(HISTORY_DTYPES)
#: The wall time a dispatch of updates aims at (seconds): long enough that returning to Python
#: costs nothing measurable, short enough for a live progress bar and a prompt Ctrl-C.
CHUNK_SECONDS = 0.5


@eqx.filter_jit
def initial_state(stacked, cfg, K: int, alpha0=None) -> TrainState:
    """The state before the first update (one compiled program, not one per operation);
    `alpha0`: a sweep's start α per member (default: the strategy's)."""
    params = eqx.filter(stacked, eqx.is_inexact_array)
    opt_state = eqx.filter_vmap(cfg.optimizer.init)(params)
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    alpha = (jnp.full((K,), cfg.alpha.initial(), dtype) if alpha0 is None
             else jnp.asarray(alpha0, dtype))
    return TrainState(stacked, opt_state, alpha,
                      jnp.zeros((K,), jnp.int32), jnp.zeros((K,), jnp.int32),
                      jnp.ones((K,), bool), jnp.zeros((), jnp.int32))


def _note(error: BaseException, text: str) -> None:
    if hasattr(error, "add_note"):  # Python ≥ 3.11: shown with the traceback
        error.add_note(text)
    else:
        warnings.warn(text, stacklevel=4)


class Trainer:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.cfg = plan.cfg
        self.history = History(HISTORY_FIELDS, plan.n_members, HISTORY_DTYPES)
        self.header = dict(plan.expected, members=plan.n_members)
        self.state = None
        self.free_run: list[dict] = [{} for _ in range(plan.n_members)]
        self.checkpoint_path = None
        self.best = None  # with validation: (params, score, step) per member
        self.validation_time = 0.0  # seconds spent in free-run validation (this process)
        self.writer = is_writer()  # process 0: the only one that writes files
        self.seconds_per_update = None  # measured on the last dispatch

    # ------------------------------------------------------------------ state

    def _initial_state(self) -> TrainState:
        return initial_state(self.plan.stacked, self.cfg, self.plan.n_members, self.plan.alpha0)

    def start(self) -> None:
        """The initial or resumed state, padded and placed on the devices."""
        state = self._initial_state()
        resume, ckpt = self.plan.options.resume, self.plan.options.checkpoint
        if self.writer and ckpt is not None:
            clean_stale_temporaries(ckpt)  # left by a killed writer of this host
        if self.plan.validation is not None:
            self.best = initial_best(self.plan.stacked, self.plan.n_members)
        if resume is not None:
            path, header, payload = resume
            # the history is cut back only in the file this process writes next (under its
            # lock); a checkpoint resumed into another file is only read
            own = self.writer and ckpt is not None and identity(ckpt) == identity(path)
            state, self.history, best = restore(path, header, payload, state,
                                                self.plan.n_members, self.best, truncate=own,
                                                history_dtypes=HISTORY_DTYPES)
            self.best = best if best is not None else self.best
        pl = self.plan.placement
        state = pl.pad(to_host(state))
        pad_mask = np.arange(pl.n_padded) < pl.n_members
        state = eqx.tree_at(lambda s: s.active, state, np.asarray(state.active) & pad_mask)
        self.state = pl.member_or_replicated(state)
        keys = pl.pad(self.plan.key_data)
        self.keys = jax.random.wrap_key_data(pl.members(keys), impl=self.plan.key_impl)
        self.windows = pl.replicated(self.plan.windows)
        members = self.plan.members
        self.members = None if members is None else pl.members(pl.pad(members))
        self._catch_up(int(self.state.step))

    # ------------------------------------------------------------------ updates

    def step(self) -> StepRecord | None:
        """One dispatch: the updates up to the next event (`chunk_length`) of all members in
        one program (fewer when every member has stopped); returns the last update's record
        (`(K,)` NumPy arrays), None if no member was active."""
        t0 = time.perf_counter()
        n = self.chunk_length(int(self.state.step))
        state, buf, done = run_chunk(self.state, self.keys, self.windows, self.cfg, np.int32(n),
                                     self.members)
        done = int(done)
        if not done:  # every member has stopped: nothing ran
            return None
        rows = to_host(buf)[:done]
        wall = (time.perf_counter() - t0) / done
        K = self.plan.n_members
        for row in rows:
            self.history.append(dict(StepRecord.unpack(row[:, :K])._asdict(),
                                     wall_time=np.full(K, wall)))
        self.state = state  # the only place the state advances
        self.seconds_per_update = wall
        return StepRecord.unpack(rows[-1][:, :K])

    def chunk_length(self, done: int) -> int:
        """Updates in the next dispatch: up to the next step at which something happens
        between updates (validation, callback, checkpoint, free-run check, the end), and
        about `CHUNK_SECONDS` of work (so the progress bar moves and an interrupt is seen),
        at most `CHUNK`."""
        o, val = self.plan.options, self.plan.validation
        events = [val.every if val is not None else 0,
                  o.eval_every if o.callback is not None else 0,
                  o.checkpoint_every if o.checkpoint is not None else 0, o.monitor_every]
        n = self.plan.steps - done
        for every in events:
            if every:
                n = min(n, every - done % every)
        if self.seconds_per_update is None:  # the first dispatch also compiles: keep it short
            return max(1, min(n, 8))
        return max(1, min(n, CHUNK, int(CHUNK_SECONDS / max(self.seconds_per_update, 1e-9))))

    # ------------------------------------------------------------------ the loop

    def current_model(self, kept: bool = False):
        """The model now, or (`kept`, with `keep="best"`) each member at its best
        validation step (where it has one)."""
        model = to_host(self.state.model)
        if kept and self.best is not None and self.plan.validation.keep == "best":
            model = kept_model(self.best, model)
        return from_stack(model, self.plan.n_members, self.plan.is_ensemble)

    def save(self) -> None:
        """Write the checkpoint (process 0 only; every process takes part in gathering the
        state, a collective under `jax.distributed`)."""
        path = self.plan.options.checkpoint
        if path is not None:
            self.history.truncate(int(self.state.step))
            state = self.plan.placement.unpad(to_host(self.state))
            if self.writer:
                save_checkpoint(path, state, self.history, self.header, self.best)
            self.checkpoint_path = str(path)

    def save_after_error(self, error: BaseException) -> None:
        """On an exception leaving the loop: save the state reached (when a checkpoint is
        configured) and say so in a note on `error`; a save that fails too is noted, never
        raised in place of `error`."""
        path = self.plan.options.checkpoint
        if path is None:
            return
        if process_count() > 1:  # gathering the state is a collective the others may not join
            _note(error, f"dsr.fit: no checkpoint saved after this error under "
                  f"jax.distributed; {str(path)!r} holds the last periodic one.")
            return
        try:
            self.save()
        except Exception as e:  # noqa: BLE001 — the original error is the one to raise
            _note(error, f"dsr.fit: saving the checkpoint {str(path)!r} after this error "
                  f"failed too ({type(e).__name__}: {e}); it holds the last one saved before.")
        else:
            _note(error, f"dsr.fit: checkpoint saved to {str(path)!r} at step "
                  f"{int(self.state.step)} before this error (continue with resume=...).")

    def after_step(self, done: int) -> None:
        o, val = self.plan.options, self.plan.validation
        if val is not None and done % val.every == 0:
            self.validate(done)
        if o.callback is not None and o.eval_every and done % o.eval_every == 0:
            out = o.callback(done, self.current_model())
            try:
                if out is not None and not isinstance(out, dict):
                    raise TypeError
                if out:
                    self.history.add_eval(done, out)  # converts the values first
            except (TypeError, ValueError):
                raise TypeError(f"`callback` must return a dict of numbers or None; got "
                                f"{out!r:.80} at step {done}.") from None
        if o.checkpoint is not None and done % o.checkpoint_every == 0:
            self.save()
        every = o.monitor_every
        if every and done % every == 0:
            self.monitor(done)

    def _catch_up(self, step: int) -> None:
        """Run the validation of a resumed `step` that an interrupt cut off (the state of
        that step was saved, its validation record was not)."""
        val = self.plan.validation
        if val is None or not step or step % val.every:
            return
        if not any(s == step and eval_keys(0 if self.plan.is_ensemble else None)[0] in v
                   for s, v in self.history.evals):
            self.validate(step)

    def validate(self, done: int) -> None:
        """Free-run every member from the validation context for `status_steps` (≥ the
        validation data's length); record binning D_stsp and D_H of its first validation
        length and the status of the whole run, and update each member's best (by
        `member_scores`' `score`: status first, then D_stsp)."""
        p, val = self.plan, self.plan.validation
        t0 = time.perf_counter()
        model = from_stack(self.state.model, p.placement.n_padded, True)
        gen = to_host(generate(model, val.status_steps, context=jnp.asarray(val.context),
                               check=False))[:p.n_members]
        sc = member_scores(val, gen)
        self.history.add_eval(done, eval_values(sc, p.n_members, p.is_ensemble))
        self.best = update_best(self.best, to_host(self.state.model), sc["score"], done)
        self.validation_time += time.perf_counter() - t0

    def _monitor_run(self) -> tuple[np.ndarray, int, str, list]:
        """`(context, steps, where, reference series)` of the free-run check: with validation
        data, from their context for at least `status_steps` (against training and validation
        data); without, from the training data's start for `min(max(4 T, 1000), 10000)`."""
        p, val = self.plan, self.plan.validation
        n = int(min(max(4 * p.windows.length, 1000), 10_000))
        if val is not None:
            return val.context, max(n, val.status_steps), "validation", p.series + [val.x]
        x = p.series[0]
        return x[:min(len(x) // 2, p.windows.length)], n, "training", p.series

    def monitor(self, done: int) -> None:
        """Run every member freely for a while from a data context and flag orbits that
        diverge, collapse or are off the data's range."""
        p = self.plan
        if p.stacked.input_dim:  # free runs need inputs beyond the data: not checked
            return
        ctx, n, where, series = self._monitor_run()
        gen = to_host(generate(from_stack(self.state.model, p.placement.n_padded, True), n,
                               context=jnp.asarray(ctx), check=False))
        ref = data_range(np.concatenate([np.asarray(s, np.float64) for s in series]))
        news = []
        for i in range(p.n_members):
            st = orbit_status(gen[i], **ref)
            if st.status != "ok" and self.free_run[i].get("status") != st.status:
                news.append((i, st))
            self.free_run[i] = dict(st.as_dict(), after_updates=done)
        if news:
            _warn_free_runs(news, p.is_ensemble, f"after {done} updates",
                            f"(context {len(ctx)} steps of the {where} data, run {n} steps)")


def _warn_free_runs(news: list, is_ensemble: bool, when: str, how: str) -> None:
    """One warning per free-run check, however many members turned bad: `news` is
    `[(member, OrbitStatus), ...]`."""
    i, st = news[0]
    if len(news) == 1:
        what = f"a free run of {f'member {i}' if is_ensemble else 'the model'} {st.describe()}"
    else:
        what = (f"the free runs of {len(news)} members are not ok ("
                + "; ".join(f"{j}: {o.status}" for j, o in news) + ")")
    warnings.warn(f"{when}, {what} {how}.", stacklevel=6)
