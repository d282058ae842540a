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

from ._checkpoint import restore, save_checkpoint
from ._ensemble import from_stack
from ._fit_setup import Plan
from ._free_run import orbit_status
from ._generate import generate
from ._history import History
from ._io import clean_stale_temporaries
from ._sharding import to_host
from ._train_step import FIELDS, TrainState, commit_jit, propose_and_commit, refine

HISTORY_FIELDS = FIELDS + ("wall_time",)
FALLBACK = FIELDS.index("fallback")


class Trainer:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.cfg = plan.cfg
        self.history = History(HISTORY_FIELDS, plan.n_members)
        self.header = dict(plan.expected, members=plan.n_members)
        self.state = None
        self.free_run: list[dict] = [{} for _ in range(plan.n_members)]
        self.checkpoint_path = None

    # ------------------------------------------------------------------ state

    def _initial_state(self) -> TrainState:
        p, K = self.plan, self.plan.n_members
        params = eqx.filter(p.stacked, eqx.is_inexact_array)
        opt_state = eqx.filter_vmap(p.cfg.optimizer.init)(params)
        dtype = jax.tree_util.tree_leaves(params)[0].dtype
        return TrainState(p.stacked, opt_state, jnp.full((K,), p.cfg.alpha.initial(), dtype),
                          jnp.zeros((K,), jnp.int32), jnp.zeros((K,), jnp.int32),
                          jnp.ones((K,), bool), jnp.zeros((), jnp.int32))

    def start(self) -> None:
        """The initial or resumed state, padded and placed on the devices."""
        state = self._initial_state()
        resume = self.plan.options["resume"]
        for path in {self.plan.options["checkpoint"], resume and resume[0]} - {None}:
            clean_stale_temporaries(path)  # left by a killed writer
        if resume is not None:
            path, header, payload = resume
            state, self.history = restore(path, header, payload, state, self.plan.n_members)
        pl = self.plan.placement
        state = pl.pad(to_host(state))
        pad_mask = np.arange(pl.n_padded) < pl.n_members
        state = eqx.tree_at(lambda s: s.active, state, np.asarray(state.active) & pad_mask)
        self.state = pl.member_or_replicated(state)
        keys = pl.pad(self.plan.key_data)
        self.keys = jax.random.wrap_key_data(pl.members(keys), impl=self.plan.key_impl)
        self.windows = pl.replicated(self.plan.windows)

    # ------------------------------------------------------------------ one update

    def step(self) -> np.ndarray:
        """One update of all members; returns the record `(fields, K)`."""
        t0 = time.perf_counter()
        prop, new_state, record = propose_and_commit(self.state, self.keys, self.windows,
                                                     self.cfg)
        row = to_host(record)
        if np.any(row[FALLBACK]):
            prop = refine(self.state, prop, prop.fallback, self.cfg)
            new_state, record = commit_jit(self.state, prop, self.cfg)
            row = to_host(record)
        row = row[:, :self.plan.n_members]
        wall = np.full((1, self.plan.n_members), time.perf_counter() - t0)
        self.history.append(np.concatenate([row, wall]))
        self.state = new_state  # the only place the state advances
        return row

    # ------------------------------------------------------------------ the loop

    def current_model(self):
        return from_stack(to_host(self.state.model), self.plan.n_members,
                          self.plan.is_ensemble)

    def save(self) -> None:
        path = self.plan.options["checkpoint"]
        if path is not None:
            self.history.truncate(int(self.state.step))
            save_checkpoint(path, to_host(self.state), self.history, self.header)
            self.checkpoint_path = str(path)

    def after_step(self, done: int) -> None:
        o = self.plan.options
        if o["callback"] is not None and o["eval_every"] and done % o["eval_every"] == 0:
            out = o["callback"](done, self.current_model())
            try:
                if out is not None and not isinstance(out, dict):
                    raise TypeError
                if out:
                    self.history.add_eval(done, out)  # converts the values first
            except (TypeError, ValueError):
                raise TypeError(f"`callback` must return a dict of numbers or None; got "
                                f"{out!r:.80} at step {done}.") from None
        if o["checkpoint"] is not None and done % o["checkpoint_every"] == 0:
            self.save()
        every = o["monitor_every"]
        if every and done % every == 0:
            self.monitor(done)

    def monitor(self, done: int) -> None:
        """Run every member freely for a while from a data context and flag orbits that
        diverge or collapse."""
        p = self.plan
        x = p.series[0]
        ctx = x[:min(len(x) // 2, p.windows.length)]
        n = int(min(max(4 * p.windows.length, 1000), 10_000))
        if p.stacked.input_dim:  # free runs need inputs beyond the data: not checked
            return
        gen = to_host(generate(from_stack(self.state.model, p.placement.n_padded, True), n,
                               context=jnp.asarray(ctx), check=False))
        scale, std = float(np.abs(x).max()), x.std(axis=0)
        for i in range(p.n_members):
            st = orbit_status(gen[i], scale, std)
            if st.status != "ok" and self.free_run[i].get("status") != st.status:
                who = f"member {i}" if p.is_ensemble else "the model"
                warnings.warn(f"after {done} updates, a free run of {who} {st.describe()} "
                              f"(context {len(ctx)} steps, run {n} steps).", stacklevel=5)
            self.free_run[i] = dict(st.as_dict(), after_updates=done)
