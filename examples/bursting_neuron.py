"""Bursting neuron (V, n observed; h hidden): one shPLRNN trained by GTF-DEER on long sequences.

Mirrors Hess et al. (2026) Fig. 3A/C (bursting-neuron panels): a shPLRNN (M = 6) is trained by GTF-DEER
with α = 0.4 and warm-up T_w = T/2 on the 'standard' preset of the Durstewitz (2009) model
(SPEC §7: inter-burst gaps ≈ 3,400 steps at Δt = 0.025), evaluated by D_stsp^DE with the
paper's delay embedding (m, τ) = (7, 1024) and RMSE(128), and its free-running membrane
potential V is plotted against the data.

Scale reduction (paper → here): 160,000 → 40,000 steps of data (≈ 7 bursts); T up to 32,768 →
T = 4,096 with B = 1 (about one burst cycle per window); L = 128 kept; 10 seeds × long training
→ 1 seed × 2,000 updates (learning rate 3e-3, cosine decay); D_stsp samples 10^6 → 10^5.
Regularization (not stated for this data set in the paper; our choice): MAR on the last 2 of
the 6 latent units, `Regularization(2, 1.0, 1.0, 1e-4)`. Generation and every RMSE window start
from a 1,024-step warm-up on test data. `--quick` uses 12,000 steps, T = 1,024 and
(m, τ) = (7, 256). Measured here (2 CPU cores shared with other jobs): 1.2 min (`--quick`:
18 s).

What to expect at this scale: the paper reports RMSE(128) = 0.047 ± 0.003. In our run (seed 0)
the free-running model bursts with about the right shape and a slightly longer period:
D_stsp^DE ≈ 1.6, RMSE(128) ≈ 0.14. Training at this scale is fragile: with an earlier state of
the library (different float rounding in the Jacobian) the same settings gave a model that
spikes tonically instead (D_stsp^DE ≈ 19, RMSE(128) ≈ 0.10).

    python -m examples.bursting_neuron [--quick] [--steps 2000] [--out DIR]
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

import data_gen
import dsr
from examples import _common

REG = dsr.Regularization(2, 1.0, 1.0, 1e-4)
CONTEXT = 1024


def main(argv=None):
    p = _common.parser("bursting_neuron", __doc__)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--alpha", type=float, default=0.4)
    p.add_argument("--n-samples", type=int, default=100_000)
    args = p.parse_args(argv)
    n_data, embedding = 40_000, (7, 1024)
    if args.quick:
        n_data, embedding = 12_000, (7, 256)
        args.steps, args.seq_len, args.hidden, args.n_samples = 100, 1024, 64, 20_000
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()

    ds = data_gen.bursting_neuron(n_steps=n_data, preset="standard", seed=args.seed,
                                  progress=False)
    k_model, k_fit, k_eval = jax.random.split(jax.random.key(args.seed), 3)
    model = dsr.ShPLRNN(2, 6, args.hidden, key=k_model)
    T = args.seq_len
    res = dsr.fit(model, ds, alpha=args.alpha, steps=args.steps, seq_len=T,
                  batch_size=args.batch_size, warmup=T // 2, learning_rate=3e-3, solver=dsr.DEER(),
                  regularization=REG, key=k_fit, progress=False)
    m, x_gen = _common.evaluate(res.model, ds.test, key=k_eval, embedding=embedding,
                                n_samples=args.n_samples, warmup=CONTEXT)
    row = {"T": T, "B": args.batch_size, **_common.fit_summary(res), **m}

    print(f"\nBursting neuron (standard preset, N = 2), {args.steps} steps; "
          f"D_stsp^DE with (m, τ) = {embedding}")
    print(_common.table([row], ["B", "T", "final_loss", "newton_iters_median", "fallback_frac",
                                "D_stsp", "D_stsp_stderr", "RMSE_128", "train_s"]))
    png = os.path.join(args.out, "bursting_neuron.png")
    plot(ds, x_gen, res.history, png)
    js = os.path.join(args.out, "bursting_neuron.json")
    _common.write_json(js, {
        "experiment": "Hess et al. (2026) Fig. 3A/C (bursting neuron), small scale", "runs": [row],
        "settings": {"n_data": n_data, "preset": "standard", "latent": 6, "hidden": args.hidden,
                     "alpha": args.alpha, "steps": args.steps, "seq_len": T, "warmup": T // 2,
                     "batch_size": args.batch_size, "learning_rate": 3e-3,
                     "regularization": repr(REG), "context": CONTEXT, "embedding": embedding,
                     "n_samples": args.n_samples, "seed": args.seed,
                     "interburst_gap_steps": ds.meta.get("interburst_gap_steps")},
    }, t_start)
    print(f"\nsaved {png}, {js} ({time.perf_counter() - t_start:.0f} s)")


def plot(ds, x_gen, history, path):
    plt = _common.pyplot()
    fig, ax = plt.subplots(3, 1, figsize=(12, 7), gridspec_kw={"height_ratios": [2, 2, 1]})
    n = min(len(ds.test) - CONTEXT, 20_000)
    t = np.arange(n) * ds.dt
    ax[0].plot(t, ds.test[CONTEXT:CONTEXT + n, 0], color="k", lw=0.4)
    ax[0].set(title="data (test): V, after the 1,024-step context", ylabel="V (standardized)")
    ax[1].plot(t, x_gen[:n, 0], color="C3", lw=0.4)
    ax[1].set(title="shPLRNN, free-running from the same context", ylabel="V (standardized)",
              ylim=ax[0].get_ylim())
    ax[1].set_xlabel("time")
    ax[2].semilogy(history["loss"], lw=0.5)
    ax[2].set(xlabel="training step", ylabel="loss")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
