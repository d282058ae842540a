"""Fig. 3B: linear vs nonlinear training recurrence on the forced Lorenz-96 system.

Reproduces the comparison of Hess, Götz, Durstewitz (2026), *Parallel-in-Time Training of
Recurrent Neural Networks for Dynamical Systems Reconstruction*, arXiv:2605.12683, Sec. 5.4,
Fig. 3B, A2 and App. H.4: with the same budget, the LSSM (linear latent recurrence, Eq. 3) and
a shPLRNN whose W has rank r = N fail to capture the limiting dynamics of the forced
Lorenz-96 system, while r = N + 1 and the full-rank shPLRNN succeed; a Mamba-2-style
selective SSM is the modern-SSM baseline.

Same data, evaluation and budget as `examples.fig3a_seq_len` at its longest Lorenz-96
sequence length (CPU setting: forcing period 1,500 steps, T = 2,048, B = 2, T_w = T/2,
M = 10, L = 128, α = 0.08, MAR on 4 units for the shPLRNNs and (Eq. 61) the LSSM). One
ensemble of K members per model, in one vmapped `dsr.fit`.

    python -m examples.fig3b_models [--quick | --paper] [--members K] [--steps S] [--out DIR]
"""

from __future__ import annotations

import time

import jax
import numpy as np

import data_gen
import dsr
from dsr.metrics import median_mad
from examples import _findings as F
from examples.fig3a_seq_len import CONTEXT, embedding, references, slow_content

SETTINGS = {
    "quick": dict(T=256, B=2, K=5, steps=150, n_data=20_000, n_test=6_000, n_samples=5_000,
                  lorenz_preset="short_period", solver="sequential"),
    "cpu": dict(T=2048, B=2, K=5, steps=4_000, n_data=100_000, n_test=30_000,
                n_samples=50_000, lorenz_preset="short_period", solver="sequential"),
    "paper": dict(T=81_920, B=1, K=10, steps=150_000, n_data=100_000, n_test=100_000,
                  n_samples=1_000_000, lorenz_preset="paper", solver="auto"),
}
N, M, L = 6, 10, 128
MAR = dsr.Regularization(4, 1.0, 1.0, 1e-4)
MODELS = {  # name: (constructor, regularization, has MAR units to inspect)
    "LSSM": (lambda k: dsr.LSSM(N, M, L, key=k), dsr.Regularization(4, 1.0), False),
    "shPLRNN r=N": (lambda k: dsr.ShPLRNN(N, M, L, key=k, rank=N), MAR, True),
    "shPLRNN r=N+1": (lambda k: dsr.ShPLRNN(N, M, L, key=k, rank=N + 1), MAR, True),
    "shPLRNN": (lambda k: dsr.ShPLRNN(N, M, L, key=k), MAR, True),
    "selective SSM": (lambda k: dsr.SelectiveSSM(N, 12, L, n_heads=2, state_size=2, key=k),
                      None, False),
}


def run_model(name, s, ds, test, emb, key, checkpoint=None):
    make, reg, has_mar = MODELS[name]
    res = F.train(make, s["K"], ds, key, checkpoint=checkpoint,
                  alpha=0.08, steps=s["steps"], seq_len=s["T"],
                  batch_size=s["B"], warmup=s["T"] // 2, regularization=reg, monitor_every=0,
                  solver=s["solver"])
    x_gen, z_gen = F.generate_members(res.model, test[:CONTEXT], 3 * len(test))
    records = []
    for i in range(s["K"]):
        rec = dict(system="lorenz96", setting=name, member=i, **F.fit_stats(res, i))
        rec.update(F.evaluate_member(res.model[i], x_gen[i], test, embedding=emb,
                                     n_samples=s["n_samples"], context=CONTEXT,
                                     key=jax.random.fold_in(key, 1000 + i)))
        if has_mar:
            rec.update(slow_content(z_gen[i], MAR.mar_units, ds.meta["forcing_period_steps"]))
        records.append(rec)
    med = int(np.argsort([r["D_stsp_DE"] for r in records])[len(records) // 2])
    return records, (x_gen[med], med)

#: Steps of the median members' free runs kept (float32) for the picture.
PLOT_STEPS = 6000


def _trained(name, s, ds, test, emb, key, checkpoint=None):
    recs, (x, med) = run_model(name, s, ds, test, emb, key, checkpoint=checkpoint)
    return recs, {"x": x[:PLOT_STEPS].astype(np.float32), "member": np.asarray(med)}


def plot(records, traces, test, refs, path):
    plt = F.pyplot()
    fig = plt.figure(figsize=(13, 8))
    ax = fig.add_subplot(2, 2, 1)
    F.panel(ax, records, "D_stsp_DE", log_x=False, color="C0")
    for k, (name, v) in enumerate(refs.items()):
        ax.axhline(v, color="gray", ls=("--", ":")[k % 2], lw=1, label=name)
    ax.legend(fontsize=7)
    ax.set(title="B: D_stsp^DE on the forced Lorenz-96 system (lower is better)")
    ax.tick_params(axis="x", labelsize=8)
    ax2 = fig.add_subplot(2, 2, 2)
    F.panel(ax2, records, "RMSE_128", log_x=False, color="C1")
    ax2.set(title="RMSE(128)")
    ax2.tick_params(axis="x", labelsize=8)
    ax3 = fig.add_subplot(2, 1, 2)
    n = min(len(test) - CONTEXT, PLOT_STEPS)
    lim = 3 * np.abs(test).max()
    ax3.plot(test[CONTEXT:CONTEXT + n, 0], "k", lw=0.4, label="data")
    for j, (name, (x, member)) in enumerate(traces.items()):
        ax3.plot(np.clip(x[:n, 0], -lim, lim) - 2 * lim * (j + 1), lw=0.4, color=f"C{j + 2}",
                 label=f"{name} (member {member})")
    ax3.set(yticks=[], xlabel="steps after the 64-step context",
            title="Fig. A2: x_1 of the median member of each model (offset, clipped)")
    ax3.legend(fontsize=7, loc="upper right", ncol=3)
    F.save_figure(fig, path)


def main(argv=None):
    args = F.parser("fig3b_models", __doc__).parse_args(argv)
    s = F.settings(args, SETTINGS)
    t_start = time.perf_counter()
    ds = data_gen.lorenz96(n_steps=s["n_data"], preset=s["lorenz_preset"], seed=args.seed,
                           progress=False)
    test = np.asarray(ds.test[:s["n_test"]], np.float64)
    emb = embedding("lorenz96", ds)
    records, traces = [], {}
    for j, name in enumerate(MODELS):
        t0 = time.perf_counter()
        key = jax.random.key(args.seed * 100 + j)
        recs, arr = F.cached(args.out, name, dict(s, model=name, seed=args.seed),
                             _trained, name, s, ds, test, emb, key)
        traces[name] = (arr["x"], int(arr["member"]))
        records += recs
        d = median_mad([r["D_stsp_DE"] for r in recs])
        print(f"  {name}: D_stsp^DE {F.fmt(d['median'])} ± {F.fmt(d['mad'])}, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    refs = references("lorenz96", s, ds, s["n_test"], emb, args.seed)
    summary = F.summarize(records, ["D_stsp_DE", "RMSE_128", "final_loss"])
    print("\n" + F.table(summary, ["D_stsp_DE", "RMSE_128"]))
    settings = dict(s, mode=F.mode(args), seed=args.seed, context=CONTEXT, embedding=emb,
                    references=refs, alpha=0.08, warmup="T/2", N=N, M=M, L=L,
                    models={k: dict(regularization=repr(v[1])) for k, v in MODELS.items()},
                    learning_rate=1e-3)
    js = F.write(args.out, "fig3b_models", settings, records, summary, t_start)
    plot(records, traces, test, refs, js[:-5] + ".png")
    print(f"saved {js} ({time.perf_counter() - t_start:.0f} s)")
    return records


if __name__ == "__main__":
    main()
