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

from ._checkpoint import check_compatible, differences, read_header, restore, save_checkpoint
from ._ensemble import from_stack
from ._fit_setup import Plan
from ._free_run import orbit_status
from ._generate import generate
from ._history import History
from ._sharding import to_host
from ._train_step import FIELDS, TrainState, commit_jit, propose_and_commit, refine

HISTORY_FIELDS = FIELDS + ("wall_time",)
FALLBACK = FIELDS.index("fallback")


class Trainer:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.cfg = plan.cfg
        self.history = History(HISTORY_FIELDS, plan.n_members)
        self.header = dict(model=plan.spec, members=plan.n_members,
                           data_sha256=plan.data_sha256, settings=plan.settings)
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
        if resume is not None:
            state = self._resume(resume, state)
        pl = self.plan.placement
        state = pl.pad(to_host(state))
        pad_mask = np.arange(pl.n_padded) < pl.n_members
        state = eqx.tree_at(lambda s: s.active, state, np.asarray(state.active) & pad_mask)
        self.state = pl.member_or_replicated(state)
        keys = pl.pad(self.plan.key_data)
        self.keys = jax.random.wrap_key_data(pl.members(keys), impl=self.plan.key_impl)
        self.windows = pl.replicated(self.plan.windows)

    def _resume(self, path, like: TrainState) -> TrainState:
        header, payload = read_header(path)
        check_compatible(path, header, self.plan.spec, self.plan.data_sha256,
                         self.plan.n_members)
        diff = differences(header.get("settings", {}), self.plan.settings)
        mode = self.plan.options["resume_settings"]
        if diff and mode == "check":
            raise ValueError(f"`resume`: {path!r} was written with other settings — "
                             + "; ".join(diff) + ". Pass resume_settings='checkpoint' to "
                             "continue with the stored ones or 'call' to use this call's.")
        if diff and mode == "call":
            warnings.warn("resuming with this call's settings, which differ from the "
                          "checkpoint's: " + "; ".join(diff), stacklevel=3)
        if int(header["step"]) > self.plan.steps:
            raise ValueError(f"`steps` ({self.plan.steps}) is below the checkpoint's step "
                             f"({header['step']}); resuming cannot go back.")
        state, self.history = restore(path, header, payload, like, self.plan.n_members)
        return state

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
            if out:
                self.history.evals.append((done, {k: float(v) for k, v in out.items()}))
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
