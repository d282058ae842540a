"""dsr: per cell and model class (shPLRNN, clipped shPLRNN, AL-RNN) one sweep, the same number
of validation-scored settings as SINDy's grid (`GRID`: 8), `runs` seeds each (`--runs`),
all of them trained in ONE vmapped `dsr.fit` (`dsr.sweep`), with free-run validation on the
validation split SINDy and the ESN are tuned on and `keep="best"`. `dsr.fit` selects the
setting with the best median validation score over its seeds; that setting's `runs` members
are the method's members (every one reported, with its setting), and the whole sweep table
(every member's setting and validation score) goes into the cell's JSON. Training is
checkpointed, so an interrupted cell resumes mid-training.

The grid (`--dsr-grid`, `GRIDS`): `alpha-lr` (the default) α × learning rate, the two
settings the window probe found to decide whether Thomas reconstructs; `alpha-noise` α ×
teacher-signal noise σ ∈ {0, 0.05} (0.05: the noisy variant's observation-noise level) at
lr = 5 · 10⁻³, the learning rate the `alpha-lr` rerun selected in 14 of its 18 cells;
`alpha-model` α × model class {shPLRNN, clipped shPLRNN} at that learning rate: one program
per class (12 members each: the cost of one 24-member program), the same seeds in each, and
the comparison's rule selects over the 8 settings of both (run it with `--methods shPLRNN`:
the method names the family, each member's class is in its record).
`--dsr-denoise`: the training and the validation split are each smoothed by `dsr.denoise`
before the sweep (Savitzky–Golay per noisy channel, the window by the discrepancy principle;
noise-free channels, so the clean variant, are left exactly as they are); the test is not
(`--denoise-all`: the other methods' data too, `_run`).
Fixed (`SETTINGS`): T = 200 (two dysts periods at 100 samples per
period) and L = 256 hidden units (better than 64 on all three probed systems; the window probe,
`_probe_windows` and `docs/compare/probe_windows.json`), batch 16, the sequential solver
(faster than GTF-DEER on a CPU, `docs/performance.md`); the shPLRNNs with M = N latent
units, the AL-RNN with M = max(20, N) latent units of which the last P = 6 are rectified (its
setting on the paper's Lorenz-63 set, `tests/test_models.py`).
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

import dsr

from ._member import Member

SETTINGS = dict(hidden=256, seq_len=200, batch_size=16, solver="sequential")
#: α and learning rate when the grid does not set them (`alpha-lr` sets both: not used).
BASE = dict(alpha=0.1, learning_rate=2e-3)
#: The sweep: 8 settings, as many as SINDy's grid (`_sindy.GRID`); `--quick`: `SMALL_GRID`.
GRID = dict(alpha=(0.05, 0.1, 0.2, 0.3), learning_rate=(2e-3, 5e-3))
SMALL_GRID = dict(alpha=(0.1, 0.2))
#: `--dsr-grid` name → (grid, the fit options it does not sweep).
#: `alpha-model`: the model class as an axis (one program per class, `dsr_members`).
CLASSES = ("shPLRNN", "clipped_shPLRNN")
GRIDS = {"alpha-lr": (GRID, BASE),
         "alpha-noise": (dict(alpha=GRID["alpha"], noise=(0.0, 0.05)),
                         dict(alpha=0.1, learning_rate=5e-3)),
         "alpha-model": (dict(model=CLASSES, alpha=GRID["alpha"]),
                         dict(alpha=0.1, learning_rate=5e-3))}
ALRNN_SIZES = dict(latent=20, relu_units=6)


def _shplrnn(cls):
    def make(N, key, hidden_dim=SETTINGS["hidden"], latent_dim=None):
        return cls(N, latent_dim or N, hidden_dim, key=key)

    return make


def _alrnn(N, key, latent_dim=None, hidden_dim=None):
    return dsr.ALRNN(N, latent_dim or max(ALRNN_SIZES["latent"], N),
                     ALRNN_SIZES["relu_units"], key=key)


#: The comparison's dsr methods: name → the model of one member, from N, a key and the
#: grid's size keys (`hidden_dim`, `latent_dim`) if it has any.
MODELS = {"shPLRNN": _shplrnn(dsr.ShPLRNN), "clipped_shPLRNN": _shplrnn(dsr.ClippedShPLRNN),
          "ALRNN": _alrnn}


def grid_of(settings: dict) -> tuple[dict, dict]:
    """The sweep's grid and the fit options it leaves fixed (`settings["dsr_grid"]`)."""
    name = settings.get("dsr_grid", "alpha-lr")
    if settings.get("grid") == "small":  # --quick: 2 settings (alpha-model: one α per class)
        if name == "alpha-model":
            return dict(model=CLASSES, alpha=SMALL_GRID["alpha"][:1]), GRIDS[name][1]
        return SMALL_GRID, BASE
    return GRIDS[name]


def as_member(m, train_s: float, info: dict) -> Member:
    """One fitted dsr model as the comparison's `Member` (warm start, map, read-out)."""
    return Member(warm=lambda ctx: dsr.warm_start(m, ctx), step=m.step, observe=m.observe,
                  train_s=train_s, info=info)


def _per_member(x, n: int) -> list:
    """A `FitResult` field that is one value or one per member, as a list of `n`."""
    a = np.atleast_1d(np.asarray(x))
    return [a[i].item() if a.size == n else a.ravel()[0].item() for i in range(n)]


def denoised(data) -> tuple[dict, dict]:
    """The data with its training and validation splits through `dsr.denoise`, and a record
    of it (noise estimate and window per channel and split)."""
    out, rec = dict(data), {}
    for split in ("train", "val"):
        d = dsr.denoise(data[split])
        out[split] = d.x
        rec[split] = dict(noise=[float(v) for v in d.noise], window=[int(w) for w in d.window])
    return out, rec


def member_factory(model: str, N: int, settings: dict):
    """One member of `model` from a key and the grid's size keys, with `--dsr-hidden`'s L
    (`settings["dsr_hidden"]`) where the run set it, `SETTINGS["hidden"]` otherwise."""
    hidden = settings.get("dsr_hidden", SETTINGS["hidden"])
    return lambda key, **size: MODELS[model](N, key, **{"hidden_dim": hidden, **size})


def _train(data, settings: dict, model: str, axes: dict, base: dict, checkpoint: str,
           seed: int):
    """One sweep program of `model` over `axes`, trained by `dsr.fit` (resumed from
    `checkpoint` if it exists): `(FitResult, wall s of all sessions, wall s of earlier
    sessions, resumed)`."""
    sw = dsr.sweep(member_factory(model, data["train"].shape[1], settings), dsr.Grid(**axes),
                   runs=settings["runs"], key=jax.random.key(seed))
    t0 = time.perf_counter()
    resume = checkpoint if os.path.exists(checkpoint) else None
    wall_file = checkpoint + ".wall_s"  # training time of earlier, interrupted sessions
    before = float(open(wall_file).read()) if resume and os.path.exists(wall_file) else 0.0
    res = dsr.fit(sw, data["train"], **base,
                  steps=settings["steps"], seq_len=SETTINGS["seq_len"],
                  batch_size=SETTINGS["batch_size"], solver=SETTINGS["solver"],
                  validation=data["val"], keep="best", status_steps=status_steps(data, settings),
                  key=jax.random.key(seed + 1),
                  progress=False, checkpoint=checkpoint, resume=resume)
    wall = before + time.perf_counter() - t0
    with open(wall_file, "w") as f:
        f.write(repr(wall))
    if res.interrupted:  # Ctrl-C / SIGTERM: the checkpoint is saved; stop, do not score it
        raise KeyboardInterrupt(f"dsr.fit interrupted; rerun to resume from {checkpoint}")
    return res, wall, before, resume is not None


def status_steps(data, settings: dict) -> int:
    """The validation free runs' status length: `--dsr-status-factor` (recorded as
    `dsr_status_factor`) × the validation length; 1 × in runs without it (every run
    before `dsr.fit`'s default became 4 ×: their results stay reproducible)."""
    return int(settings.get("dsr_status_factor", 1)) * len(data["val"])


def class_checkpoint(checkpoint: str, model: str, pooled: bool) -> str:
    """The checkpoint of one class's program (`X.ckpt` → `X.MODEL.ckpt` when the grid has a
    `model` axis; `checkpoint` itself otherwise)."""
    return checkpoint[:-len(".ckpt")] + f".{model}.ckpt" if pooled else checkpoint


def pooled_table(parts: list) -> tuple[list, list, list, int]:
    """`(settings, setting scores, rows, selected)` of the class programs' sweeps
    (`[(model, SweepResult), ...]`) as one grid
    (`model` first, then each program's settings; member and setting indices offset): the
    comparison's rule over all of them, the lowest median validation score (ties: the
    first; NaN as inf), as `dsr.fit` selects within one program."""
    settings, scores, rows = [], [], []
    n_set = n_mem = 0
    for model, t in parts:
        settings += [dict(model=model, **g) for g in t.settings]
        scores += [float(v) for v in np.asarray(t.setting_scores)]
        rows += [dict(model=model, **dict(r, member=int(r["member"]) + n_mem,
                                          setting=int(r["setting"]) + n_set)) for r in t.rows]
        n_set, n_mem = n_set + len(t.settings), n_mem + len(t.rows)
    sel = int(np.argmin(np.where(np.isnan(scores), np.inf, scores)))
    return settings, scores, rows, sel


def dsr_members(data, settings: dict, method: str, checkpoint: str,
                seed: int) -> tuple[list[Member], dict]:
    """The selected setting's members and the cell's sweep record. A grid with a `model`
    axis (`alpha-model`) trains one program per class (`class_checkpoint`), the same seeds
    in each, and selects over both programs' settings by the same rule."""
    runs = settings["runs"]
    data, smoothing = denoised(data) if settings.get("dsr_denoise") else (data, None)
    axes, base = grid_of(settings)
    axes = dict(axes)
    pooled = "model" in axes
    classes = axes.pop("model", (method,))
    parts, walls = [], []
    for model in classes:
        res, wall, before, resumed = _train(data, settings, model, axes, base,
                                            class_checkpoint(checkpoint, model, pooled), seed)
        parts.append((model, res))
        walls.append(dict(model=model, wall_s=wall, earlier_s=before, resumed=resumed,
                          members=len(res.sweep.rows),
                          validation_s=(res.validation or {}).get("seconds")))
    if pooled:
        all_settings, scores, rows, sel = pooled_table([(m, r.sweep) for m, r in parts])
        keys = ["model", *parts[0][1].sweep.keys]
    else:
        t = parts[0][1].sweep
        all_settings, scores, rows, sel = ([dict(g) for g in t.settings],
                                           [float(v) for v in np.asarray(t.setting_scores)],
                                           [dict(r) for r in t.rows], int(t.selected))
        keys = list(t.keys)
    wall = sum(w["wall_s"] for w in walls)
    resumed = any(w["resumed"] for w in walls)
    stopped = [x for _, res in parts for x in _per_member(res.stopped, len(res.sweep.rows))]
    chosen = {k: v for k, v in all_settings[sel].items() if k != "model"}
    members, offset = [], 0
    for model, res in parts:  # the selected setting's members, from their class's program
        t = res.sweep
        for i in range(len(t.rows)):
            r = rows[offset + i]
            if r["setting"] != sel:
                continue
            m = t.member(i)
            members.append(as_member(m, wall / runs, dict(
                SETTINGS, **dict(base, **chosen), steps=settings["steps"], setting=sel,
                seed=int(r["seed"]), member=int(r["member"]), model=type(m).__name__,
                val_score=r.get("score"), val_D_stsp=r.get("D_stsp"), val_D_H=r.get("D_H"),
                val_status=r.get("status"), best_step=r.get("step"), resumed=resumed,
                frozen=bool(stopped[int(r["member"])]), sweep_wall_s=wall)))
        offset += len(t.rows)
    rule = str(parts[0][1].sweep.rule)
    if pooled:
        rule += ("; the settings of one program per model class (the same seeds), pooled "
                 "and selected by this rule together")
    fit = dict(SETTINGS, steps=settings["steps"], members_trained=len(rows), wall_s=wall,
               earlier_s=sum(w["earlier_s"] for w in walls), resumed=resumed,
               validation_s=walls[0]["validation_s"] if len(walls) == 1 else
               sum(w["validation_s"] or 0.0 for w in walls), denoise=smoothing,
               validation=dict(split="the last fifth of the training series (the one SINDy "
                                     "and the ESN are tuned on)", n=len(data["val"]),
                               keep="best", status_steps=status_steps(data, settings)))
    if pooled:
        fit["programs"] = walls
    record = dict(sweep=dict(keys=keys, settings=all_settings, runs=runs, rule=rule,
                             selected=sel, setting_scores=scores, rows=rows), fit=fit)
    return members, record
