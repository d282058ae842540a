"""One run: for every system and variant, the data, the floor and every method's members."""

from __future__ import annotations

import math
import os
import time

import jax
import numpy as np

from ._cells import cell_path, load_cell, write_json
from ._dsr_method import MODELS as DSR_MODELS, denoised, dsr_members
from ._esn import esn_members
from ._measures import member_measures, orbit_measures, validation_score, WARMUP, lyapunov
from ._sindy import sindy_members
from ._systems import get_system, make_data
from ._truth import truth_member
from ._var import var_members

METHODS = ("shPLRNN", "clipped_shPLRNN", "ALRNN", "SINDy", "ESN", "VAR1")
#: A run without `--methods` (`--quick` runs all): one dsr sweep per cell fits the 3-hour
#: budget of a 2-core CPU; the clipped shPLRNN and the AL-RNN sweep the same way on request.
DEFAULT_METHODS = ("shPLRNN", "SINDy", "ESN", "VAR1")
VARIANTS = {"clean": 0.0, "noisy": 0.05}


def _members(method, data, s, system, out, name, variant):
    """`(members, record)`: the method's fitted members and what the cell's JSON keeps about
    the method's tuning beyond them (dsr: the whole sweep table; others: the smoothing of
    `--denoise-all`, if any)."""
    if method in DSR_MODELS:
        ck = os.path.join(out, "ckpt", f"{name}__{variant}__{method}.ckpt")
        os.makedirs(os.path.dirname(ck), exist_ok=True)
        return dsr_members(data, s, method, ck, s["seed"])
    data, smoothing = denoised(data) if s.get("denoise_all") else (data, None)
    record = {} if smoothing is None else dict(denoise=smoothing)
    score = lambda m: validation_score(m, data["val"], s["horizon"])  # noqa: E731
    if method == "SINDy":
        return sindy_members(data, s["members"], dict(s, dt=system.dt), score), record
    if method == "ESN":
        return esn_members(data, s["members"], s, score), record
    if method == "VAR1":
        return var_members(data, s["members"], s), record
    raise ValueError(method)


SPREAD_WARN = 10.0


def spread(data) -> float:
    """How far (in clean train stds) the test and floor trajectories reach: far beyond a few,
    the three initial conditions do not share one attractor (or the system drifts)."""
    return float(max(np.abs(data["test"]).max(), np.abs(data["floor"]).max()))


def run_cell(out, name, variant, method, system, data, s, lyap_ref, log):
    if load_cell(out, name, variant, method) is not None:
        log(f"  {method}: done before (checkpoint), skipped")
        return
    t0 = time.perf_counter()
    record = {}
    if method == "floor":
        m = truth_member(system, data)
        meas = member_measures(m, data, system.dt, lyap_ref, s, jax.random.key(7))
        orb = orbit_measures(data["test"][WARMUP:], data["floor"][WARMUP:], jax.random.key(7))
        meas.update(orb)
        meas["train_s"] = 0.0
        members = [dict(meas, info=m.info)]
    else:
        try:
            ms, record = _members(method, data, s, system, out, name, variant)
            members = []
            for i, m in enumerate(ms):
                r = member_measures(m, data, system.dt, lyap_ref, s, jax.random.key(100 + i))
                members.append(dict(r, info=m.info))
        except Exception as e:  # a failed method is a result, not a crash of the comparison
            log(f"  {method}: FAILED {type(e).__name__}: {e}")
            members = [dict(failed=True, error=f"{type(e).__name__}: {e}")]
    info = dict(system.info(), max_abs_std=spread(data))
    cell = dict(system=name, variant=variant, method=method, members=members,
                # + dsr's training in earlier, interrupted sessions (resumed from a checkpoint)
                wall_s=time.perf_counter() - t0 + record.get("fit", {}).get("earlier_s", 0.0),
                lambda_ref=lyap_ref, system_info=info,
                **record)
    write_json(cell_path(out, name, variant, method), cell)
    log(f"  {method}: {len(members)} member(s), {cell['wall_s']:.1f} s")


def run(out: str, s: dict, log=print) -> None:
    methods = ("floor",) + tuple(s["methods"])
    for name in s["systems"]:
        system = None
        for variant in s["variants"]:
            if all(load_cell(out, name, variant, m) is not None for m in methods):
                log(f"{name} ({variant}): all {len(methods)} cells done before (checkpoint), "
                    f"skipped")  # no data set needed
                continue
            if system is None:
                system = get_system(name, s["pts_per_period"], s.get("numpy_rhs", False))
            t0 = time.perf_counter()
            data = make_data(system, s["n_train"], s["n_test"], s["transient"],
                             VARIANTS[variant], s["seed"])
            log(f"{name} ({variant}), dt = {system.dt:.4g}, data by {system.integrator} "
                f"({time.perf_counter() - t0:.1f} s)"
                + (f"; fallback: {system.field_note}" if system.field_note else "")
                + (f"; initial perturbation ×{system.ic_shrink:g}" if system.ic_shrink != 1
                   else ""))
            if spread(data) > SPREAD_WARN:
                log(f"  warning: the test / floor trajectories reach {spread(data):.3g} train "
                    f"stds: the initial conditions may not share one attractor")
            lyap_ref = system.lyap_ref
            if not math.isfinite(lyap_ref):  # no dysts estimate: the true field's own, same code
                lyap_ref = lyapunov(truth_member(system, data), data["test"][:WARMUP], system.dt)
            for method in methods:
                run_cell(out, name, variant, method, system, data, s, lyap_ref, log)
