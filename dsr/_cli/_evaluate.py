"""`python -m dsr evaluate RUN_DIR --test TEST`: measures into `metrics.json`, pictures into
`plots/`; also what `fit --test` runs after training.

`evaluate` holds the run's lock (a `fit` of the same run in progress makes it refuse) and
records what it used: `metrics.json` and the config's `data.test` / `evaluation.test` name
the test file by absolute path and sha256, and `metrics.json` the model file's sha256 and
its number of updates."""

from __future__ import annotations

import os
import time

import jax
import numpy as np

from ..metrics._evaluate import free_run_length, sample_count
from .._ensemble import Ensemble
from .._serialization import load
from ._data import (Layout, Standardization, embed_series, load_recordings, model_units,
                    sha256)
from ._errors import CLIError
from ._models import check_run_imports
from ._measures import eval_settings, evaluate_run, free_runs, table
from ._options import EVAL_OPTIONS, OUTPUT, resolve
from ._plots import autocorrelation_delay, draw
from ._run import RunFolder, now, read_history, run_keys

#: Without test data, the pictures compare with at most this many training steps.
REFERENCE_STEPS = 20_000


def _tau(opts, x) -> int:
    if opts["embedding"]:
        return opts["embedding"][1]
    return 1 if x is None else autocorrelation_delay(x[:, 0])


def _draw(run, opts, std, names, dt, hist, x_ref, x_gens, label) -> None:
    t0 = time.perf_counter()
    paths = draw(run.plots, history=hist, x_ref=None if x_ref is None else std.invert(x_ref),
                 x_gens=None if x_gens is None else std.invert(x_gens), names=names, dt=dt,
                 tau=_tau(opts, x_ref),
                 context=opts["context_steps"], plot_steps=opts["plot_steps"],
                 ref_label=label)
    print(f"pictures ({time.perf_counter() - t0:.1f} s): " + ", ".join(paths))


def evaluate_and_draw(run: RunFolder, cfg: dict, model, test_x: np.ndarray, opts: dict,
                      std: Standardization, names, dt, key, hist) -> dict:
    """Evaluate every member on `test_x` (standardized), write `metrics.json`, print the
    table and draw the pictures against the test data."""
    n_gen = free_run_length(opts["gen_factor"], len(test_x))
    print(f"evaluation: {len(test_x)} test steps; free runs of {n_gen} steps after "
          f"{opts['context_steps']} context steps; D_stsp with "
          f"{sample_count(opts['n_samples'], len(test_x))} samples")
    report, x_gens = evaluate_run(model, test_x, dt, opts, key,
                                  channel=bool((cfg.get("data") or {}).get("delay_embed")))
    model_file = {"path": os.path.abspath(run.model), "sha256": sha256(run.model),
                  "steps_done": (cfg.get("fit") or {}).get("steps_done")}
    report.update(test=(cfg.get("data") or {}).get("test"), model=model_file, evaluated=now(),
                  units="standardized with the training data's mean and std"
                  if std.enabled else "the recording's units")
    run.write_json(run.metrics, report)
    print(table(report))
    for note in report["notes"]:
        print(f"note: {note}")
    print(f"evaluation: {report['wall_s']:.1f} s; saved {run.metrics}")
    if opts["plots"]:
        _draw(run, opts, std, names, dt, hist, test_x, x_gens, "test data")
    return report


def draw_reference(run: RunFolder, model, train_x, opts, std, names, dt, hist) -> None:
    """Pictures without test data: free runs compared with the (first) training series."""
    ref = train_x[:opts["context_steps"] + REFERENCE_STEPS]
    n = len(ref) - opts["context_steps"]
    one = model[0] if isinstance(model, Ensemble) else model
    if n < 10 or one.input_dim:  # no free runs: too short, or inputs would be needed
        return _draw(run, opts, std, names, dt, hist, None, None, "")
    settings = dict(eval_settings(opts), gen_factor=1)
    x_gens = free_runs(model, ref, dict(settings, warmup=opts["context_steps"]))[:, :n]
    _draw(run, opts, std, names, dt, hist, ref, x_gens, "training data")


def run_evaluate(flags: dict, config_path) -> int:
    run = RunFolder(flags["run_dir"])
    run.read_config()  # a run folder (else no lock file is made there)
    with run.lock():
        return _evaluate(run, flags, config_path)


def _evaluate(run: RunFolder, flags: dict, config_path) -> int:
    cfg = run.read_config()  # again, under the lock
    check_run_imports(cfg, flags, "evaluate", run.path)
    output = {o.name for o in OUTPUT}  # per command, not inherited from the fit
    base = {k: v for k, v in cfg["options"].items() if k not in output}
    opts, _ = resolve(EVAL_OPTIONS, flags, config_path, base=base)
    test = flags.get("test") or cfg["options"].get("test")
    if test is None:
        raise CLIError("evaluate: give the test recording with --test TEST (the run has none).")
    if cfg["options"].get("inputs"):
        raise CLIError("evaluate: evaluating input-driven models is not supported yet.")
    keys = cfg["options"].get("key") or [None, None]
    emb = cfg["data"].get("delay_embed")  # a one-channel test file, embedded as in training
    series = load_recordings([test], role="test", columns=cfg["options"].get("columns"),
                             key=keys[-1], like=None if emb else Layout.of_run(cfg))[0]
    if emb:
        series = embed_series(series, *emb)
    need = opts["context_steps"] + opts["n_rmse"]
    if len(series.x) < need:
        raise CLIError(f"{test}: {len(series.x)} time steps; the evaluation needs "
                       f"--context-steps + --n-rmse = {need}.")
    std = Standardization.from_dict(cfg["standardization"])
    model = load(run.model)
    cfg["data"]["test"] = series.info
    one = model[0] if isinstance(model, Ensemble) else model
    test_x = model_units(series, std, jax.tree_util.tree_leaves(one)[0].dtype)
    evaluate_and_draw(run, cfg, model, test_x, opts, std, cfg["data"]["names"],
                      cfg["data"]["dt"], run_keys(cfg["options"]["seed"])[2],
                      read_history(run.history))
    cfg["evaluation"] = {"test": series.info, "options": opts, "when": now()}
    run.write_config(cfg)
    return 0
