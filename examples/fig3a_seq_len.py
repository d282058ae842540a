"""Fig. 3A: training sequence length T at a fixed number of observations per update B·T.

Reproduces the finding of Hess, Götz, Durstewitz (2026), *Parallel-in-Time Training of
Recurrent Neural Networks for Dynamical Systems Reconstruction*, arXiv:2605.12683, Sec. 5.3,
Fig. 3A, A1, A3 and App. H.3: with B·T fixed, shPLRNNs trained on longer sequences reconstruct
systems with a slow time scale better (lower D_stsp^DE), while RMSE(128) saturates early.

Systems: forced Lorenz-96 (N = 6, M = 10, L = 128, α = 0.08, MAR on M_r = 4 units,
`Regularization(4, 1, 1, 1e-4)`), with the forcing period shrunk from 15,000 to 1,500 steps
(`data_gen.lorenz96(preset="short_period")`) in the CPU setting and D_stsp^DE's delay scaled
with it (τ = 410 instead of 4,096, m = 3); the bursting neuron (standard preset, N = 2 (V, n),
inter-burst gap ≈ 3,400 steps, M = 6, L = 128, α = 0.4, (m, τ) = (7, 1024)). Warm-up T_w = T/2.
On a CPU the training recurrence is solved sequentially (`solver="sequential"`: the same
GTF gradients as GTF-DEER, faster there at these sizes); `--paper` uses GTF-DEER ("auto").
Every setting trains an ensemble of K members in one vmapped `dsr.fit`; every member is
evaluated from a 64-step context (the shortest T, so no model is warmed up longer than it was
trained on) on a free run of 3 × the evaluated test length.

    python -m examples.fig3a_seq_len [--quick | --paper] [--members K] [--steps S] [--out DIR]

Settings (`--quick` / default "cpu" / `--paper`): see `SETTINGS`. Writes `fig3a_seq_len.json`
(settings, one record per member, summary) and `fig3a_seq_len.png` into `--out`.
"""

from __future__ import annotations

import time

import jax
import numpy as np

import data_gen
import dsr
from dsr.metrics import median_mad
from examples import _findings as F

CONTEXT = 64
SETTINGS = {
    "quick": dict(T=[64, 256], BT=512, K=5, steps=150, n_data=20_000, n_test=6_000,
                  n_samples=5_000, neuron_T=[64, 512], neuron_data=40_000, neuron_test=20_000,
                  lorenz_preset="short_period", solver="sequential"),
    "cpu": dict(T=[64, 256, 1024, 2048], BT=4096, K=5, steps=4_000, n_data=100_000,
                n_test=30_000, n_samples=50_000, neuron_T=[64, 512, 4096],
                neuron_data=160_000, neuron_test=40_000, lorenz_preset="short_period",
                solver="sequential"),
    "paper": dict(T=[256, 512, 1024, 2048, 4096, 8192, 16384, 32768], BT=32_768, K=10,
                  steps=150_000, n_data=100_000, n_test=100_000, n_samples=1_000_000,
                  neuron_T=[256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
                  neuron_data=160_000, neuron_test=160_000, lorenz_preset="paper", solver="auto"),
}
SYSTEMS = {
    "lorenz96": dict(N=6, M=10, L=128, alpha=0.08, reg=dsr.Regularization(4, 1.0, 1.0, 1e-4)),
    "bursting_neuron": dict(N=2, M=6, L=128, alpha=0.4, reg=None),
}


def dataset(system: str, s: dict, seed: int):
    if system == "lorenz96":
        return data_gen.lorenz96(n_steps=s["n_data"], preset=s["lorenz_preset"], seed=seed,
                                 progress=False)
    return data_gen.bursting_neuron(n_steps=s["neuron_data"], seed=seed, progress=False)


def embedding(system: str, ds) -> tuple[int, int]:
    if system == "bursting_neuron":
        return (7, 1024)
    period = ds.meta["forcing_period_steps"]
    return (3, int(round(4096 * period / 15_000)))  # the paper's τ, scaled to the period


def slow_content(z_gen: np.ndarray, M_r: int, period: float) -> dict:
    """The MAR units' dominant slow period and its share of their variance (max over units)."""
    best = (float("nan"), 0.0)
    for j in range(z_gen.shape[-1] - M_r, z_gen.shape[-1]):
        p, frac = F.dominant_period(z_gen[:, j], min_period=period / 5)
        if frac > best[1]:
            best = (p, frac)
    return {"slow_period": best[0], "slow_power": best[1]}


def references(system: str, s: dict, ds, n_test: int, emb, seed: int) -> dict:
    """D_stsp^DE of reference orbits against the evaluated test data: the continuation of
    the (clean) test trajectory beyond the evaluated part — the floor this estimator reaches
    for the true system — and, for Lorenz-96, the same system without forcing (A = 0, no slow
    time scale; from another initial condition, in the data's standardization)."""
    test = np.asarray(ds.test[:n_test], np.float64)
    out = {"true system": float(F.state_space_divergence(
        test, np.asarray(ds.test[n_test:4 * n_test], np.float64), embedding=emb,
        n_samples=s["n_samples"], key=jax.random.key(seed)).value)}
    if system == "lorenz96":
        ref = data_gen.lorenz96(n_steps=3 * n_test, preset=s["lorenz_preset"], A=0.0,
                                noise=0.0, seed=seed + 101, progress=False)
        x = (ref.destandardize(ref.test) - np.asarray(ds.meta["mean"])) / np.asarray(
            ds.meta["std"])
        out["unforced (A = 0)"] = float(F.state_space_divergence(
            test, x, embedding=emb, n_samples=s["n_samples"], key=jax.random.key(seed)).value)
    return out


def run_setting(system, spec, T, s, ds, key, test, emb, checkpoint=None):
    B = max(1, s["BT"] // T)
    make = lambda k: dsr.ShPLRNN(spec["N"], spec["M"], spec["L"], key=k)  # noqa: E731
    res = F.train(make, s["K"], ds, key, checkpoint=checkpoint,
                  alpha=spec["alpha"], steps=s["steps"], seq_len=T,
                  batch_size=B, warmup=T // 2, regularization=spec["reg"], monitor_every=0,
                  solver=s["solver"])
    x_gen, z_gen = F.generate_members(res.model, test[:CONTEXT], 3 * len(test))
    records = []
    for i in range(s["K"]):
        rec = dict(system=system, setting=T, member=i, B=B, **F.fit_stats(res, i))
        rec.update(F.evaluate_member(res.model[i], x_gen[i], test, embedding=emb,
                                     n_samples=s["n_samples"], context=CONTEXT,
                                     key=jax.random.fold_in(key, 1000 + i)))
        if system == "lorenz96":
            rec.update(slow_content(z_gen[i], spec["reg"].mar_units,
                                    ds.meta["forcing_period_steps"]))
        records.append(rec)
    return records, x_gen, z_gen


def _trained(system, spec, T, s, ds, key, test, emb, checkpoint=None):
    """The records of one setting and the free run of its median member."""
    recs, x_gen, z_gen = run_setting(system, spec, T, s, ds, key, test, emb,
                                     checkpoint=checkpoint)
    med = int(np.argsort([r["D_stsp_DE"] for r in recs])[len(recs) // 2])
    n = plot_steps(ds)
    return recs, {"x": x_gen[med, :n].astype(np.float32), "z": z_gen[med, :n].astype(np.float32),
                  "member": np.asarray(med)}


def plot_steps(ds) -> int:
    """Steps of a free run the pictures show (and the records keep): four forcing periods, or
    four of the neuron's inter-burst gaps (≈ 3,400 steps)."""
    return int(4 * (ds.meta.get("forcing_period_steps") or 3400))


def run_system(system: str, s: dict, seed: int, out: str):
    spec = SYSTEMS[system]
    ds = dataset(system, s, seed)
    n_test = s["n_test"] if system == "lorenz96" else s["neuron_test"]
    test = np.asarray(ds.test[:n_test], np.float64)
    emb = embedding(system, ds)
    records, traces = [], {}
    Ts = s["T"] if system == "lorenz96" else s["neuron_T"]
    for j, T in enumerate(Ts):
        t0 = time.perf_counter()
        key = jax.random.key(seed * 1000 + j)
        recs, arr = F.cached(out, f"{system}_T{T}", dict(s, system=system, T=T, seed=seed),
                             _trained, system, spec, T, s, ds, key, test, emb)
        records += recs
        traces[T] = (arr["x"], arr["z"], int(arr["member"]))
        d = median_mad([r["D_stsp_DE"] for r in recs])
        print(f"  {system} T={T}: D_stsp^DE {F.fmt(d['median'])} ± {F.fmt(d['mad'])}, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    refs = references(system, s, ds, n_test, emb, seed)
    print(f"  {system} references: {refs}", flush=True)
    return records, traces, ds, test, emb, refs


def plot(results: dict, path: str) -> None:
    plt = F.pyplot()
    fig = plt.figure(figsize=(13, 9))
    for c, (system, (records, traces, ds, test, emb, refs)) in enumerate(results.items()):
        ax = fig.add_subplot(3, 2, 1 + c)
        F.panel(ax, records, "D_stsp_DE", log_x=True, color=f"C{c}")
        ax.set_yscale("log")
        for k, (name, v) in enumerate(refs.items()):
            ax.axhline(v, color="gray", ls=("--", ":")[k % 2], lw=1, label=name)
        ax.legend(fontsize=7)
        ax.set(title=f"A: {system}, D_stsp^DE (m, τ) = {emb}", xlabel="sequence length T")
        ax2 = fig.add_subplot(3, 2, 3 + c)
        F.panel(ax2, records, "RMSE_128", log_x=True, color=f"C{c}")
        ax2.set(title=f"{system}: RMSE(128) (Fig. A3)", xlabel="sequence length T")
        ax3 = fig.add_subplot(3, 2, 5 + c)
        Ts = list(traces)
        n = min(len(test) - CONTEXT, plot_steps(ds))
        ax3.plot(test[CONTEXT:CONTEXT + n, 0], "k", lw=0.4, label="data")
        lim = 3 * np.abs(test).max()
        for j, T in enumerate((Ts[0], Ts[-1])):
            x = np.clip(traces[T][0][:n, 0], -lim, lim)
            ax3.plot(x - 2 * lim * (j + 1), lw=0.4, color=f"C{j + 2}",
                     label=f"generated, T = {T} (member {traces[T][2]})")
        ax3.set(yticks=[], xlabel="steps after the 64-step context",
                title=f"C: {system}, x_1 (offset, clipped)")
        ax3.legend(fontsize=7, loc="upper right")
    F.save_figure(fig, path)


def plot_forcing(records, traces, ds, path: str) -> None:
    """Fig. A1: the MAR units of free runs next to the true forcing F(t)."""
    plt = F.pyplot()
    Ts = list(traces)
    period = ds.meta["forcing_period_steps"]
    n = int(4 * period)
    p = ds.meta["params"]
    t = np.arange(n) * ds.dt
    force = p["F0"] + p["A"] * np.sin(p["omega"] * (ds.meta["t0"][1] + (CONTEXT + t)))
    fig, axes = plt.subplots(len(Ts) + 1, 1, figsize=(11, 2 * (len(Ts) + 1)), sharex=True)
    axes[0].plot(force, "k")
    axes[0].set(title=f"true forcing F(t) (period {period} steps) over the test window",
                yticks=[])
    for ax, T in zip(axes[1:], Ts):
        z, member = traces[T][1], traces[T][2]
        for j in range(z.shape[1] - 4, z.shape[1]):
            u = z[:n, j]
            ax.plot((u - u.mean()) / (u.std() + 1e-12), lw=0.6)
        rec = next(r for r in records if r["setting"] == T and r["member"] == member)
        ax.set(yticks=[], title=f"T = {T}, member {member}: MAR units (standardized); slowest "
               f"period {F.fmt(rec['slow_period'])} steps, share {rec['slow_power']:.2f}")
    axes[-1].set_xlabel("generated step")
    F.save_figure(fig, path)


def main(argv=None):
    args = F.parser("fig3a_seq_len", __doc__).parse_args(argv)
    s = F.settings(args, SETTINGS)
    t_start = time.perf_counter()
    results = {sys_: run_system(sys_, s, args.seed, args.out) for sys_ in SYSTEMS}
    records = [r for res in results.values() for r in res[0]]
    summary = F.summarize(records, ["D_stsp_DE", "RMSE_128", "newton_iters_median",
                                    "final_loss"])
    print("\n" + F.table(summary, ["D_stsp_DE", "RMSE_128"], key="setting"))
    settings = dict(s, mode=F.mode(args), seed=args.seed, context=CONTEXT,
                    systems={k: dict(v, reg=repr(v["reg"])) for k, v in SYSTEMS.items()},
                    embeddings={k: v[4] for k, v in results.items()}, warmup="T/2",
                    references={k: v[5] for k, v in results.items()},
                    learning_rate=1e-3)
    js = F.write(args.out, "fig3a_seq_len", settings, records, summary, t_start)
    png = js[:-5] + ".png"
    plot(results, png)
    lr = results["lorenz96"]
    plot_forcing(lr[0], lr[1], lr[2], js[:-5] + "_forcing.png")
    print(f"saved {js}, {png} ({time.perf_counter() - t_start:.0f} s)")
    return records


if __name__ == "__main__":
    main()
