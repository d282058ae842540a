"""`make demo`: Lorenz-63 → an ensemble of 4 shPLRNNs trained by GTF-DEER → every member
evaluated (median ± MAD) → pictures, all under `results/demo/`.

It runs the command line a user would type (`python -m dsr fit ...`, `python -m dsr
evaluate ...`) in four phases, each announced with what it does and timed:

1. data — the Lorenz-63 data set of Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. F
   (100,000 train and 100,000 test steps, Δt = 0.01, 5 % noise on the train part), written
   to `results/demo/lorenz63.npz`;
2. training — K = 4 shPLRNNs (M = 3, L = 64, α = 0.1, T = 200, batch 16) trained together as
   one vmapped ensemble by GTF-DEER; checkpoint, model and history in `results/demo/run/`;
3. evaluation — D_stsp (10^5 Monte-Carlo samples), D_H, RMSE(128) and λ_max of every member
   on the test trajectory, and their median ± MAD; for reference one *untrained* shPLRNN,
   evaluated on the first 10^4 test steps with 10^4 samples (its D_stsp is large and needs
   no precision; its free run collapses to a fixed point);
4. pictures — loss, time series, state space and power spectra in `results/demo/run/plots/`.

    python -m examples.demo [--steps 6000] [--runs 4] [--out results/demo]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
import warnings

import jax

import data_gen
import dsr
from dsr.metrics import evaluate

TRUE_LAMBDA = 0.906  # Lorenz-63, per time unit
UNTRAINED_SAMPLES = 10_000
UNTRAINED_STEPS = 10_000


def phase(n: int, title: str, what: str) -> float:
    print(f"\n[{n}/4] {title}: {what}", flush=True)
    return time.perf_counter()


def run_cli(args: list[str]) -> None:
    print("$ python -m dsr " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", "dsr"] + args, check=True)


def untrained_row(ds, key) -> tuple[dict, list]:
    """The measures of an untrained shPLRNN on the first `UNTRAINED_STEPS` test steps, and
    the warnings they raised (an untrained model's free run collapses to a fixed point)."""
    model = dsr.ShPLRNN(3, 3, 64, key=key)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        short = types.SimpleNamespace(test=ds.test[:UNTRAINED_STEPS], dt=ds.dt, meta=ds.meta)
        r = evaluate(model, short, key=key, n_samples=UNTRAINED_SAMPLES)
    notes = sorted({str(w.message).split(";")[-1].strip() for w in caught})
    return {k: r[k] for k in ("D_stsp", "D_H", "RMSE_n", "lambda_max")}, notes


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m examples.demo",
                                description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--runs", type=int, default=4, help="ensemble members K")
    p.add_argument("--n-samples", type=int, default=100_000, help="D_stsp samples per member")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join("results", "demo"))
    args = p.parse_args(argv)
    times = {}
    run = os.path.join(args.out, "run")
    data = os.path.join(args.out, "lorenz63.npz")

    t0 = phase(1, "data", "Lorenz-63 (App. F), 100,000 train + 100,000 test steps")
    ds = data_gen.lorenz63(seed=args.seed)
    ds.save(data)
    print(f"{data}: train {ds.train.shape}, test {ds.test.shape}, dt = {ds.dt}")
    times["data"] = time.perf_counter() - t0

    t0 = phase(2, "training", f"{args.runs} shPLRNNs (M=3, L=64) as one ensemble, "
               f"{args.steps} GTF-DEER updates each")
    run_cli(["fit", data, "--model", "shplrnn", "--latent-dim", "3", "--hidden-dim", "64",
             "--runs", str(args.runs), "--alpha", "0.1", "--steps", str(args.steps),
             "--seq-len", "200", "--batch-size", "16", "--lr", "2e-3", "--solver", "deer",
             "--seed", str(args.seed), "--no-plots", "--force", "--out", run])
    times["training"] = time.perf_counter() - t0

    t0 = phase(3, "evaluation + 4 pictures", "D_stsp, D_H, RMSE(128), λ_max per member on "
               "the test trajectory, median ± MAD; then the pictures")
    run_cli(["evaluate", run, "--test", data, "--n-samples", str(args.n_samples)])
    times["evaluation_and_pictures"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    print(f"\nreference: one untrained shPLRNN (App. E init) on the first {UNTRAINED_STEPS} "
          f"test steps, D_stsp with only {UNTRAINED_SAMPLES} samples:")
    ref, notes = untrained_row(ds, jax.random.key(args.seed + 1))
    print("  " + ", ".join(f"{k} = {v:.4g}" for k, v in ref.items()))
    for note in notes:
        print(f"  ({note})")
    print(f"  true Lorenz-63 λ_max = {TRUE_LAMBDA} per time unit")
    times["untrained_reference"] = time.perf_counter() - t0

    with open(os.path.join(run, "metrics.json")) as f:
        metrics = json.load(f)
    summary = {"steps": args.steps, "runs": args.runs, "seconds": times,
               "summary": metrics["summary"], "members": metrics["members"],
               "untrained": ref, "true_lambda_max": TRUE_LAMBDA}
    with open(os.path.join(args.out, "demo.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print("\ntimes: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print(f"saved: {run}/ (config.json, model.eqx, checkpoint, history.csv, metrics.json, "
          f"plots/), {args.out}/demo.json")


if __name__ == "__main__":
    main()
