"""`python -m benchmarks.compare._probe_reselect --run DIR --cells SYSTEM/VARIANT ...
[--run-len N] --out FILE`: would a steadier validation score have selected a better setting?

For each named dsr cell of a comparison run (its settings from `DIR/settings.json`, its
trained sweep from the checkpoint `DIR/ckpt/SYSTEM__VARIANT__MODEL.ckpt`, MODEL the run's
dsr model, resumed, so nothing is trained again), every member of the sweep (each at the
parameters `keep="best"` kept) runs freely for `--run-len` steps (default 8,000, four times
the validation split) from the first tenth of the validation split (at most 200 steps, as
`dsr.fit`'s validation), and is scored against the rest of the validation split by
the test's measure, the Gaussian-mixture D_stsp (20,000 Monte-Carlo samples; an "off" or
"collapsed" run ranks after every "ok" one, a diverged one is inf), instead of `dsr.fit`'s
binning D_stsp of a validation-length run. The setting with the best median over its seeds is
selected again, and its members are scored on the test trajectory as the comparison does
(D_stsp, D_H, status over the 8,000-step test run). The data are the run's own (smoothed by
`dsr.denoise` where the run did). Results accumulate in one JSON per `--out`, keyed by run
and cell; a line per cell is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from .._json import write_json

CONTEXT = 200  # at most; a tenth of the validation split
PENALTY = 1000.0


def dsr_model(s: dict) -> str:
    """The run's dsr model (the first of its `--methods` that is one: "shPLRNN",
    "clipped_shPLRNN", ...)."""
    from ._dsr_method import MODELS

    names = [m for m in s["methods"] if m in MODELS]
    if not names:
        raise SystemExit(f"error: the run's methods {s['methods']} hold no dsr model")
    return names[0]


class PooledSweep:
    """The class programs' `SweepResult`s of a grid with a `model` axis as one table (the
    rows, settings, selection and `member(i)` a one-class `SweepResult` has)."""

    def __init__(self, parts: list):
        from ._dsr_method import pooled_table

        self.settings, self.setting_scores, self.rows, self.selected = pooled_table(parts)
        self._parts = [t for _, t in parts]

    def member(self, i: int):
        for t in self._parts:
            if i < len(t.rows):
                return t.member(i)
            i -= len(t.rows)
        raise IndexError(i)


def _resumed(src: str, model: str, axes: dict, base: dict, s: dict, data: dict,
             ckpt_dir: str):
    """One class program's `SweepResult`, resumed from a copy of its finished checkpoint
    (`_dsr_method._train`, the comparison's own call: nothing is trained again)."""
    from ._dsr_method import _train

    if not os.path.exists(src):
        raise SystemExit(f"error: --cells: no checkpoint {src}")
    ck = os.path.join(ckpt_dir, os.path.basename(src))
    for ext in ("", ".history"):
        if os.path.exists(src + ext):
            shutil.copyfile(src + ext, ck + ext)
    return _train(data, s, model, axes, base, ck, s["seed"])[0].sweep


def _sweep_result(run: str, s: dict, name: str, variant: str, data: dict, ckpt_dir: str):
    """The cell's `SweepResult` (a `PooledSweep` when the grid sweeps the model class),
    resumed from copies of its finished checkpoints."""
    from ._dsr_method import class_checkpoint, grid_of

    method = dsr_model(s)
    src = os.path.join(run, "ckpt", f"{name}__{variant}__{method}.ckpt")
    axes, base = grid_of(s)
    axes = dict(axes)
    classes = axes.pop("model", None)
    if classes is None:
        return _resumed(src, method, axes, base, s, data, ckpt_dir)
    return PooledSweep([(m, _resumed(class_checkpoint(src, m, True), m, axes, base, s, data,
                                     ckpt_dir)) for m in classes])


def _free_run(m, context, n: int):
    import jax
    import numpy as np

    from ._member import rollout

    return np.asarray(jax.jit(lambda c: rollout(m, c, n))(context), np.float64)


def ok_score(r: dict) -> float:
    """An orbit's D_stsp with "off"/"collapsed" ranked after every "ok" and diverged as inf."""
    if r["status"] == "ok":
        return r["D_stsp"]
    return float("inf") if r["diverged"] else PENALTY + r["D_stsp"]


def finished_cell(run: str, s: dict, name: str, variant: str) -> tuple[dict, dict, object]:
    """`(data, fit_data, sweep table)` of a finished dsr cell: the run's data, what dsr was
    fitted on (smoothed where the run did) and its `SweepResult`, resumed (nothing trained)."""
    from ._dsr_method import denoised
    from ._run import VARIANTS
    from ._systems import get_system, make_data

    data = make_data(get_system(name, s["pts_per_period"]), s["n_train"], s["n_test"],
                     s["transient"], VARIANTS[variant], s["seed"])
    fit_data = denoised(data)[0] if s.get("dsr_denoise") else data
    with tempfile.TemporaryDirectory() as tmp:
        table = _sweep_result(run, s, name, variant, fit_data, tmp)
    return data, fit_data, table


def reselect(run: str, s: dict, name: str, variant: str, run_len: int) -> dict:
    import jax
    import numpy as np

    from ._dsr_method import as_member
    from ._measures import WARMUP, orbit_measures

    t0 = time.perf_counter()
    data, fit_data, table = finished_cell(run, s, name, variant)
    val = np.asarray(fit_data["val"], np.float64)
    ctx = min(CONTEXT, len(val) // 10)
    scores, statuses = [], []
    for i in range(len(table.rows)):
        m = as_member(table.member(i), 0.0, {})
        r = orbit_measures(val[ctx:], _free_run(m, fit_data["val"][:ctx], run_len),
                           jax.random.key(7))
        scores.append(ok_score(r))
        statuses.append(r["status"])
    setting = [int(r["setting"]) for r in table.rows]
    medians = [float(np.median([scores[i] for i in range(len(scores)) if setting[i] == g]))
               for g in range(len(table.settings))]
    new = int(np.argmin(medians))
    test = data["test"]
    members = []
    for k, i in enumerate(i for i in range(len(scores)) if setting[i] == new):
        m = as_member(table.member(i), 0.0, {})
        r = orbit_measures(np.asarray(test[WARMUP:], np.float64),
                           _free_run(m, test[:WARMUP], len(test) - WARMUP),
                           jax.random.key(100 + k))
        members.append(dict(member=i, D_stsp=r["D_stsp"], D_H=r["D_H"], status=r["status"]))
    return dict(run=run, cell=f"{name}/{variant}", run_len=run_len,
                selected_before=int(table.selected), selected=new,
                setting=dict(table.settings[new]), scores=scores, statuses=statuses,
                setting_medians=medians, test=members, seconds=time.perf_counter() - t0)


def read_run(p: argparse.ArgumentParser, run: str, cells, out: str) -> tuple[dict, list, dict]:
    """`(settings, cells, record)` of a probe's arguments: the settings of comparison run `run`
    (an error naming `--run` where it has none), its `cells` (default: every one of the run;
    each checked, an error naming `--cells`) and the record accumulated at `out` (empty if
    none yet)."""
    settings = os.path.join(run, "settings.json")
    if not os.path.exists(settings):
        p.error(f"--run {run}: no comparison run there (no settings.json)")
    with open(settings) as fh:
        s = json.load(fh)
    cells = cells or [f"{n}/{v}" for n in s["systems"] for v in s["variants"]]
    for c in cells:
        if c.count("/") != 1 or c.split("/")[1] not in ("clean", "noisy"):
            p.error(f"--cells: SYSTEM/clean or SYSTEM/noisy; got {c!r}")
    record = {}
    if os.path.exists(out):
        with open(out) as fh:
            record = json.load(fh)
    return s, cells, record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_reselect",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, metavar="DIR", help="a comparison run's --out")
    p.add_argument("--cells", nargs="+", required=True, metavar="SYSTEM/VARIANT")
    p.add_argument("--run-len", type=int, default=8000, metavar="N",
                   help="free-run steps per validation score (default 8000)")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record (appended)")
    a = p.parse_args(argv)
    if a.run_len < 320:  # D_H's shortest series (dsr.metrics.power_spectrum_distance)
        p.error(f"--run-len must be ≥ 320; got {a.run_len}")
    s, cells, record = read_run(p, a.run, a.cells, a.out)
    for c in cells:
        r = reselect(a.run, s, *c.split("/"), a.run_len)
        record[f"{a.run}:{c}"] = r
        write_json(a.out, record)
        t = r["test"]
        ds = ", ".join(f"{m['D_stsp']:.3g}" for m in t)
        print(f"{c}: setting {r['selected_before']} -> {r['selected']} {r['setting']}; test "
              f"D_stsp {ds} ({'/'.join(m['status'] for m in t)}); {r['seconds']:.0f} s",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
