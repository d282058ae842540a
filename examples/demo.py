"""`make demo`: Lorenz-63 → an ensemble of 4 shPLRNNs trained by GTF → every member
evaluated (median ± MAD) → pictures, all under `results/demo/`, in about a minute on a
laptop CPU.

It runs the command line a user would type (`python -m dsr fit ... --test ...`) in three
phases, each announced with what it does and timed:

1. data — Lorenz-63 as in Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. F (Δt = 0.01,
   5 % noise on the train part, standardized), 20,000 train and 10,000 test steps, written to
   `results/demo/lorenz63.npz`;
2. training, evaluation and pictures in one `fit` — K = 4 shPLRNNs (M = 3, L = 64, α = 0.1,
   T = 200, batch 16, 2,000 updates, lr 3·10⁻³) trained together as one vmapped ensemble
   with the solver `auto` picks (sequential on a CPU, GTF-DEER on a GPU); then D_stsp
   (10⁵ Monte-Carlo samples: the default for 10,000 test steps), D_H, RMSE(128) and λ_max
   of every member on the test trajectory, their median ± MAD, and the pictures (loss,
   time series, state space, power spectra) in `results/demo/run/plots/`;
3. for reference, one *untrained* shPLRNN evaluated the same way (10⁴ samples: its D_stsp
   is large and needs no precision; its free run collapses to a fixed point).

    python -m examples.demo [--steps 2000] [--runs 4] [--out results/demo]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
import warnings

import jax

import data_gen
import dsr
from dsr.metrics import evaluate

TRUE_LAMBDA = 0.906  # Lorenz-63, per time unit
UNTRAINED_SAMPLES = 10_000
TRAIN_STEPS, TEST_STEPS = 20_000, 10_000


def phase(n: int, title: str, what: str) -> float:
    print(f"\n[{n}/3] {title}: {what}", flush=True)
    return time.perf_counter()


def run_cli(args: list[str]) -> None:
    print("$ python -m dsr " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", "dsr"] + args, check=True)


def untrained_row(ds, key) -> tuple[dict, list]:
    """The measures of an untrained shPLRNN on the test steps, and the warnings they raised
    (an untrained model's free run collapses to a fixed point)."""
    model = dsr.ShPLRNN(3, 3, 64, key=key)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = evaluate(model, ds, key=key, n_samples=UNTRAINED_SAMPLES)
    notes = sorted({str(w.message).split(";")[-1].strip() for w in caught})
    return {k: r[k] for k in ("D_stsp", "D_H", "RMSE_n", "lambda_max")}, notes


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m examples.demo",
                                description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--runs", type=int, default=4, help="ensemble members K")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join("results", "demo"))
    args = p.parse_args(argv)
    times = {}
    run = os.path.join(args.out, "run")
    data = os.path.join(args.out, "lorenz63.npz")

    t0 = phase(1, "data", f"Lorenz-63 (App. F), {TRAIN_STEPS:,} train + {TEST_STEPS:,} test "
               "steps")
    ds = data_gen.lorenz63(n_steps=TRAIN_STEPS, seed=args.seed)
    ds = dataclasses.replace(ds, test=ds.test[:TEST_STEPS])
    ds.save(data)
    print(f"{data}: train {ds.train.shape}, test {ds.test.shape}, dt = {ds.dt}")
    times["data"] = time.perf_counter() - t0

    t0 = phase(2, "training, evaluation and pictures", f"{args.runs} shPLRNNs (M=3, L=64) as "
               f"one ensemble, {args.steps} GTF updates each; D_stsp, D_H, RMSE(128), λ_max "
               "per member on the test trajectory, median ± MAD; the pictures")
    run_cli(["fit", data, "--test", data, "--model", "shplrnn", "--latent-dim", "3",
             "--hidden-dim", "64", "--runs", str(args.runs), "--alpha", "0.1", "--steps",
             str(args.steps), "--seq-len", "200", "--batch-size", "16", "--lr", "3e-3",
             "--seed", str(args.seed), "--force", "--out", run])
    times["training_evaluation_pictures"] = time.perf_counter() - t0

    t0 = phase(3, "reference", f"one untrained shPLRNN (App. E init) on the {TEST_STEPS:,} "
               f"test steps, D_stsp with {UNTRAINED_SAMPLES:,} samples")
    ref, notes = untrained_row(ds, jax.random.key(args.seed + 1))
    print("  " + ", ".join(f"{k} = {v:.4g}" for k, v in ref.items()))
    for note in notes:
        print(f"  ({note})")
    print(f"  true Lorenz-63 λ_max = {TRUE_LAMBDA} per time unit")
    times["untrained_reference"] = time.perf_counter() - t0

    with open(os.path.join(run, "metrics.json")) as f:
        metrics = json.load(f)
    with open(os.path.join(run, "config.json")) as f:
        fit_wall = json.load(f)["fit"]["wall_s"]
    summary = {"steps": args.steps, "runs": args.runs, "seconds": dict(times, fit=fit_wall),
               "summary": metrics["summary"], "members": metrics["members"],
               "untrained": ref, "true_lambda_max": TRUE_LAMBDA}
    with open(os.path.join(args.out, "demo.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print("\ntimes: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
          + f" (of which training {fit_wall:.0f} s)")
    print(f"saved: {run}/ (config.json, model.eqx, checkpoint, history.csv, metrics.json, "
          f"plots/), {args.out}/demo.json")


if __name__ == "__main__":
    main()
