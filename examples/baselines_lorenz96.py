"""Baselines on the forced Lorenz-96 system (Hess et al. 2026, Sec. 5.4, Fig. 3B, at small scale).

Trains four models with the same budget (steps, sequence length, batch size, learning
rate, warm-up) on a short forced Lorenz-96 data set (App. F, N = 6):

- shPLRNN (M = 10, L = 64) by GTF-DEER, α = 0.08 (solver "auto");
- LSSM (Eq. 3, M = 10, L = 64), teacher forcing through U on the scan backend;
- SelectiveSSM (Eq. 72–73, the Mamba-2 recurrence in the LSSM template), M = 24;
- TTTModel (token-level TTT / linear-attention layer in the LSSM template),

then evaluates each on the clean test trajectory with `dsr.metrics.evaluate` (D_stsp on the
paper's delay embedding (m, τ) = (3, 4096), RMSE(128), D_H, λ_max) and prints a table of
D_stsp, RMSE(128), training time and number of parameters. Writes `baselines.json` and
`baselines.png` (true vs generated orbits, D_stsp per model) to `--out`.

    python -m examples.baselines_lorenz96 [--quick] [--steps 3000] [--out DIR]

The paper trains on 81,920-step sequences for 150,000 updates on a GPU; this is a small
CPU-scale rehearsal of the same comparison, not a reproduction of Fig. 3B's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import data_gen
import dsr
from dsr.metrics import evaluate
from dsr.baselines import SelectiveSSM
from dsr.baselines import TTTModel

NAMES = ("shPLRNN", "LSSM", "SelectiveSSM", "TTTModel")


def n_params(model) -> int:
    leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
    return int(sum(x.size for x in leaves))


def build(name, key):
    if name == "shPLRNN":
        return dsr.ShPLRNN(6, 10, 64, key=key)
    if name == "LSSM":
        return dsr.LSSM(6, 10, 64, key=key)
    if name == "SelectiveSSM":
        return SelectiveSSM(6, 24, 64, n_heads=2, state_size=2, key=key)
    if name == "TTTModel":
        return TTTModel(6, 64, d_model=16, d_key=8, key=key)
    raise ValueError(name)


def plot(x_true, gens, rows, path, embedded):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(gens) + 1
    fig = plt.figure(figsize=(12, 1.6 * n + 0.5))
    grid = fig.add_gridspec(n, 3)
    t = np.arange(len(x_true))
    series = [("data (test)", x_true)] + list(gens.items())
    for i, (name, x) in enumerate(series):
        ax = fig.add_subplot(grid[i, :2])
        ax.plot(t[:len(x)], x[:, 0], lw=0.3, color="C0" if i == 0 else f"C{i}")
        ax.set_ylabel(name, fontsize=8)
        ax.set_ylim(-4, 4)
        if i < n - 1:
            ax.set_xticklabels([])
    ax.set_xlabel("step (x_1; forcing period 15,000 steps)")
    ax = fig.add_subplot(grid[:, 2])
    names = list(rows)
    vals = [rows[k]["D_stsp"] for k in names]
    finite = [v for v in vals if np.isfinite(v)]
    top = 2 * max(finite) if finite else 1.0
    ax.bar(range(len(names)), [v if np.isfinite(v) else top for v in vals],
           color=[f"C{i + 1}" for i in range(len(names))],
           hatch=["" if np.isfinite(v) else "//" for v in vals])
    for i, v in enumerate(vals):
        if not np.isfinite(v):
            ax.text(i, top, "diverged", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    ax.set_yscale("log")
    ax.set_title("D_stsp" + (" (delay-embedded)" if embedded else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny run (≤ 60 s) to check the pipeline")
    p.add_argument("--n-steps", type=int, default=20_000, help="data length (train and test)")
    p.add_argument("--steps", type=int, default=3000, help="parameter updates per model")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--warmup", type=int, default=32, help="T_w: steps left out of the loss")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--alpha", type=float, default=0.08, help="GTF forcing (shPLRNN only)")
    p.add_argument("--n-samples", type=int, default=100_000, help="D_stsp Monte-Carlo samples")
    p.add_argument("--models", default=",".join(NAMES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/examples/baselines_lorenz96")
    args = p.parse_args(argv)
    if args.quick:
        args.n_steps, args.steps, args.seq_len, args.batch_size = 6000, 60, 64, 8
        args.warmup, args.n_samples = 16, 10_000
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in NAMES:
            p.error(f"--models: unknown {n!r}; choose from {NAMES}")
    os.makedirs(args.out, exist_ok=True)

    t0 = time.perf_counter()
    ds = data_gen.lorenz96(n_steps=args.n_steps, seed=args.seed, progress=False)
    print(f"data: forced Lorenz-96, train {ds.train.shape} (5% noise), test {ds.test.shape}, "
          f"dt={ds.dt} ({time.perf_counter() - t0:.1f} s)")
    budget = dict(steps=args.steps, seq_len=args.seq_len, batch_size=args.batch_size,
                  warmup=args.warmup, learning_rate=args.lr)
    print("budget (all models): " + ", ".join(f"{k}={v}" for k, v in budget.items()))
    key = jax.random.key(args.seed)
    rows, gens = {}, {}
    lyap_steps = 2000 if args.quick else 10_000
    # the paper's delay embedding (m, τ) = (3, 4096) needs (m-1)τ < T_test / 2
    embedding = "paper" if args.n_steps // 2 > 2 * 4096 else None
    for i, name in enumerate(names):
        k_model, k_fit, k_eval = jax.random.split(jax.random.fold_in(key, i), 3)
        model = build(name, k_model)
        t0 = time.perf_counter()
        res = dsr.fit(model, ds, args.alpha, solver="auto", key=k_fit, progress=False, **budget)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ev = evaluate(res.model, ds, key=k_eval, n_samples=args.n_samples,
                      lyapunov_steps=lyap_steps, embedding=embedding)
        eval_s = time.perf_counter() - t0
        loss = res.history["loss"]
        rows[name] = dict(
            D_stsp=ev["D_stsp"], D_stsp_stderr=ev["D_stsp_stderr"], RMSE_128=ev["RMSE_n"],
            D_H=ev["D_H"], lambda_max=ev["lambda_max"], diverged=ev["diverged"],
            train_seconds=train_s, eval_seconds=eval_s, n_params=n_params(res.model),
            loss_first=float(np.mean(loss[:20])), loss_last=float(np.mean(loss[-20:])),
            skipped_updates=int(np.sum(~res.history["applied"].astype(bool))),
            solver=res.settings["solver"], eval_settings=ev["settings"],
        )
        gens[name] = np.asarray(dsr.generate(res.model, min(len(ds.test), 20_000),
                                             context=jnp.asarray(ds.test[:512])), np.float64)
        r = rows[name]
        print(f"{name:<13} trained {train_s:6.1f} s (loss {r['loss_first']:.3f} → "
              f"{r['loss_last']:.3f}), evaluated {eval_s:5.1f} s")

    print(f"\n{'model':<13} {'D_stsp':>14} {'RMSE(128)':>10} {'D_H':>6} {'λ_max':>7} "
          f"{'train s':>8} {'#params':>8}")
    for name, r in rows.items():
        d = f"{r['D_stsp']:.3f}±{r['D_stsp_stderr']:.3f}"
        flag = " (diverged)" if r["diverged"] else ""
        print(f"{name:<13} {d:>14} {r['RMSE_128']:>10.3f} {r['D_H']:>6.3f} "
              f"{r['lambda_max']:>7.3f} {r['train_seconds']:>8.1f} {r['n_params']:>8d}{flag}")

    summary = {"budget": budget, "alpha_shPLRNN": args.alpha, "n_steps_data": args.n_steps,
               "quick": args.quick, "seed": args.seed, "backend": jax.default_backend(),
               "results": rows}
    with open(os.path.join(args.out, "baselines.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    png = os.path.join(args.out, "baselines.png")
    plot(np.asarray(ds.test[:20_000]), gens, rows, png, embedding is not None)
    print(f"\nsaved {args.out}/baselines.json, {png}")


if __name__ == "__main__":
    main()
