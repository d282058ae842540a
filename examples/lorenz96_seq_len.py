"""Forced Lorenz-96: short vs long training sequences at a fixed number of samples per update.

Mirrors Hess et al. (2026) Fig. 3A (Lorenz-96 panel) and Fig. A3: shPLRNNs (M = 10) are trained by
GTF-DEER (α = 0.08, warm-up T_w = T/2, MAR regularization `Regularization(4, 1.0, 1.0, 1e-4)`)
on sequences of length T with B·T held fixed, and compared by D_stsp^DE with the paper's delay
embedding (m, τ) = (3, 4096) and by RMSE(128). The sinusoidal forcing (period 15,000 steps) is
not observed; only a model whose context reaches far enough can infer it.

Scale reduction (paper → here): 100,000 → 40,000 steps of data (2.7 forcing periods); B·T =
32,768 with T = 256 … 32,768 → B·T = 2,048 with (B, T) ∈ {(16, 128), (4, 512), (1, 2,048)};
L = 128 → 64; 10 seeds × long training → 1 seed × 1,200 updates (learning rate 3e-3, cosine
decay); D_stsp samples 10^6 → 10^5. Every model is warmed up on the same 1,024 test
observations before generating (D_stsp: 3 × the test length) and before each RMSE window.
`--quick` uses 12,000 steps of data and a shorter delay, (m, τ) = (3, 1024), because the
paper's embedding spans 8,192 steps. Measured here (2 CPU cores shared with other jobs):
1.5 min (`--quick`: 17 s).

What to expect at this scale: every T here is far below the forcing period (15,000 steps) and
1,200 updates are a tiny fraction of the paper's budget. In our run (seed 0) the T = 128
model diverged (D_stsp^DE = inf), T = 512 and T = 2,048 gave D_stsp^DE ≈ 12 and ≈ 9.7 and
RMSE(128) ≈ 1.3 and 1.1 — the paper's direction, from one seed, and far from its
RMSE(128) = 0.27 ± 0.02; the generated orbits are chaotic but miss the slow amplitude
modulation caused by the forcing (cf. the paper's Fig. A1B).

    python -m examples.lorenz96_seq_len [--quick] [--steps 1200] [--hidden 64] [--out DIR]
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

import data_gen
import dsr
from examples import _common

CONFIGS = [(16, 128), (4, 512), (1, 2048)]  # (B, T), B·T = 2048
REG = dsr.Regularization(4, 1.0, 1.0, 1e-4)  # M_r, λ_MAR, λ1, λ2 (Hess et al. 2026, App. H.4.2)
CONTEXT = 1024  # warm-up for generation and RMSE(128)


def main(argv=None):
    p = _common.parser("lorenz96_seq_len", __doc__)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--alpha", type=float, default=0.08)
    p.add_argument("--solver", default="deer", choices=["deer", "auto", "sequential"])
    p.add_argument("--n-samples", type=int, default=100_000)
    args = p.parse_args(argv)
    configs, n_data, embedding = CONFIGS, 40_000, (3, 4096)
    if args.quick:
        configs, n_data, embedding = [(8, 64), (1, 512)], 12_000, (3, 1024)
        args.steps, args.n_samples = 60, 20_000
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()

    ds = data_gen.lorenz96(n_steps=n_data, seed=args.seed, progress=False)
    k_model, k_fit, k_eval = jax.random.split(jax.random.key(args.seed), 3)
    rows, x_gens = [], {}
    for B, T in configs:
        model = dsr.ShPLRNN(6, 10, args.hidden, key=k_model)
        res = dsr.fit(model, ds, alpha=args.alpha, steps=args.steps, seq_len=T, batch_size=B,
                      warmup=T // 2, learning_rate=3e-3, solver=args.solver, regularization=REG,
                      key=k_fit, progress=False)
        m, x_gens[T] = _common.evaluate(res.model, ds.test, key=k_eval, embedding=embedding,
                                        n_samples=args.n_samples, warmup=CONTEXT)
        rows.append({"B": B, "T": T, "T_w": T // 2, **_common.fit_summary(res), **m})
        print(f"  (B, T) = ({B}, {T}): {rows[-1]['train_s']:.0f} s", flush=True)

    print(f"\nForced Lorenz-96, B·T = {configs[0][0] * configs[0][1]}, {args.steps} steps, "
          f"D_stsp^DE with (m, τ) = {embedding}")
    print(_common.table(rows, ["B", "T", "T_w", "final_loss", "newton_iters_median",
                               "fallback_frac", "D_stsp", "D_stsp_stderr", "RMSE_128",
                               "train_s"]))
    png = os.path.join(args.out, "lorenz96_seq_len.png")
    plot(rows, ds.test, x_gens, png)
    js = os.path.join(args.out, "lorenz96_seq_len.json")
    _common.write_json(js, {
        "experiment": "Hess et al. (2026) Fig. 3A (Lorenz-96), small scale", "runs": rows,
        "settings": {"n_data": n_data, "configs": configs, "latent": 10, "hidden": args.hidden,
                     "alpha": args.alpha, "steps": args.steps, "learning_rate": 3e-3,
                     "solver": args.solver, "regularization": repr(REG), "context": CONTEXT,
                     "embedding": embedding, "n_samples": args.n_samples, "seed": args.seed},
    }, t_start)
    print(f"\nsaved {png}, {js} ({time.perf_counter() - t_start:.0f} s)")


def plot(rows, x_test, x_gens, path):
    plt = _common.pyplot()
    fig = plt.figure(figsize=(12, 7))
    Ts = [r["T"] for r in rows]
    for i, (key, title) in enumerate((("D_stsp", "A: D_stsp^DE"), ("RMSE_128", "B: RMSE(128)"))):
        ax = fig.add_subplot(2, 2, i + 1)
        v = np.array([r[key] for r in rows], float)
        ax.plot(Ts, np.where(np.isfinite(v), v, np.nan), "o-")
        ax.set(xscale="log", xlabel="training sequence length T", title=title + " (inf: omitted)")
        if np.isfinite(v).any():
            ax.set_yscale("log")
    ax = fig.add_subplot(2, 1, 2)
    n, lim = len(x_test) - CONTEXT, 1.5 * np.abs(x_test).max()
    ax.plot(x_test[CONTEXT:, 0], color="k", lw=0.3, label="data (test)")
    for j, T in enumerate((Ts[0], Ts[-1])):
        ax.plot(np.clip(x_gens[T][:n, 0], -lim, lim) - 2 * lim * (j + 1), lw=0.3,
                color=f"C{j + 1}", label=f"generated, trained with T = {T}")
    ax.set(xlabel="step after the 1,024-step context", yticks=[],
           title="C: x_1, data and free-running models (offset; clipped)")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
