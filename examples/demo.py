"""`make demo`: Lorenz-63 → shPLRNN trained by GTF-DEER → evaluation → plot.

Generates the paper's Lorenz-63 data set (App. F), trains a shPLRNN (M = 3, L = 64) by
GTF-DEER for a few minutes on this CPU, evaluates D_stsp, D_H, RMSE(128) and the largest
Lyapunov exponent next to the untrained model, saves the model, a checkpoint and a PNG of
the true vs generated attractor under `results/demo/`.

    python -m examples.demo [--steps 6000] [--out results/demo]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import numpy as np

import data_gen
import dsr
from dsr.metrics import evaluate

TRUE_LAMBDA = 0.906  # Lorenz-63, per time unit


def plot(x_true, x_gen, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(10, 4.5))
    for i, (x, title) in enumerate(((x_true, "data (test)"), (x_gen, "shPLRNN, free-running"))):
        ax = fig.add_subplot(1, 2, i + 1, projection="3d")
        ax.plot(*x[:, :3].T, lw=0.3, color="C0" if i == 0 else "C3")
        ax.set_title(title)
        ax.set_xticks([]), ax.set_yticks([]), ax.set_zticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--seq-len", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/demo")
    p.add_argument("--n-samples", type=int, default=100_000, help="D_stsp Monte-Carlo samples")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    t0 = time.perf_counter()
    ds = data_gen.lorenz63(seed=args.seed)
    print(f"data: Lorenz-63, train {ds.train.shape}, test {ds.test.shape}, dt={ds.dt} "
          f"({time.perf_counter() - t0:.1f} s)")
    key_model, key_fit, key_eval = jax.random.split(jax.random.key(args.seed), 3)
    model0 = dsr.ShPLRNN(3, 3, 64, key=key_model)

    t0 = time.perf_counter()
    res = dsr.fit(model0, ds, alpha=args.alpha, steps=args.steps, seq_len=args.seq_len,
                  batch_size=args.batch_size, learning_rate=2e-3, solver=dsr.DEER(),
                  key=key_fit, checkpoint=os.path.join(args.out, "checkpoint.ckpt"),
                  checkpoint_every=500)
    train_s = time.perf_counter() - t0
    h = res.history
    print(f"trained {args.steps} steps in {train_s:.0f} s; loss {h['loss'][0]:.4f} → "
          f"{np.mean(h['loss'][-50:]):.4f}; Newton iterations (median) "
          f"{np.median(h['newton_iters']):.0f}")
    dsr.save(os.path.join(args.out, "model.eqx"), res.model)

    rows = {}
    for name, m in (("untrained", model0), ("trained", res.model)):
        rows[name] = evaluate(m, ds, key=key_eval, n_samples=args.n_samples)
    print(f"\n{'model':<10} {'D_stsp':>10} {'D_H':>7} {'RMSE(128)':>10} {'λ_max':>8}")
    for name, r in rows.items():
        print(f"{name:<10} {r['D_stsp']:>10.4f} {r['D_H']:>7.3f} {r['RMSE_n']:>10.3f} "
              f"{r['lambda_max']:>8.3f}")
    print(f"{'Lorenz-63':<10} {'':>10} {'':>7} {'':>10} {TRUE_LAMBDA:>8.3f}")

    x_gen = np.asarray(dsr.generate(res.model, 20_000, context=ds.test[:512]))
    png = os.path.join(args.out, "attractor.png")
    plot(ds.test[:20_000], x_gen, png)
    summary = {"train_seconds": train_s, "steps": args.steps, "alpha": args.alpha,
               "measures": rows, "true_lambda_max": TRUE_LAMBDA}
    with open(os.path.join(args.out, "demo.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    print(f"\nsaved {png}, {args.out}/model.eqx, {args.out}/demo.json")


if __name__ == "__main__":
    main()
