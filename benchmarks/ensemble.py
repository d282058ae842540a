"""Ensemble training: time per update of K members in one vmapped `dsr.fit` vs K models.

For each configuration and each K, `dsr.fit` trains an ensemble of K members for a few
updates; the statistic is the median wall time per update inside `fit` (everything a user
waits for: window sampling, the GTF-DEER solves, the optimizer, host bookkeeping), after the
first update (which compiles). K values are run interleaved, round after round, and the
median over rounds is reported. K separate fit loops cost K × the time of K = 1 per
round of updates; the speed-up is that over the ensemble's time.

    python -m benchmarks.ensemble [--quick] [--out results/ensemble]

Configurations: the demo's model (shPLRNN M = 3, L = 64, T = 200, batch 16, Lorenz-63)
and a Lorenz-96 model (M = 10, L = 128, T = 1024, batch 4, forced Lorenz-96).
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import data_gen
import dsr

from ._common import environment, fmt_s, markdown_table, new_figure, save_figure, write_json

CONFIGS = {
    "demo": dict(system="lorenz63", N=3, M=3, L=64, T=200, batch=16, alpha=0.1),
    "lorenz96": dict(system="lorenz96", N=6, M=10, L=128, T=1024, batch=4, alpha=0.08),
}


def _data(system: str) -> np.ndarray:
    return data_gen.generate(system, n_steps=20_000).train


def _time_one(cfg: dict, data, K: int, steps: int, solver) -> float:
    make = lambda k: dsr.ShPLRNN(cfg["N"], cfg["M"], cfg["L"], key=k)  # noqa: E731
    model = make(jax.random.key(0)) if K == 1 else dsr.ensemble(make, K, key=jax.random.key(0))
    res = dsr.fit(model, data, cfg["alpha"], steps=steps, seq_len=cfg["T"],
                  batch_size=cfg["batch"], solver=solver, progress=False, monitor_every=0,
                  key=jax.random.key(1))
    return float(np.median(res.history["wall_time"][1:]))


def run(name: str, Ks, steps: int, rounds: int, solver) -> dict:
    cfg = CONFIGS[name]
    data = _data(cfg["system"])
    times = {K: [] for K in Ks}
    t0 = time.perf_counter()
    for r in range(rounds):
        for K in Ks:
            times[K].append(_time_one(cfg, data, K, steps, solver))
        print(f"  {name}: round {r + 1}/{rounds} done ({time.perf_counter() - t0:.0f} s)")
    med = {K: float(np.median(v)) for K, v in times.items()}
    rows = [dict(K=K, t_update=med[K], ratio=med[K] / med[1], separate=K * med[1],
                 speedup=K * med[1] / med[K], raw=times[K]) for K in Ks]
    return dict(config=cfg, steps=steps, rounds=rounds, solver=repr(solver), rows=rows)


def table(result: dict) -> str:
    head = ["K", "ensemble, per update", "× one model", "K separate fits", "speed-up"]
    rows = [[r["K"], fmt_s(r["t_update"]), f"{r['ratio']:.2f}×", fmt_s(r["separate"]),
             f"{r['speedup']:.1f}×"] for r in result["rows"]]
    return markdown_table(head, rows)


def plot(results: dict, out) -> None:
    fig, axes = new_figure(len(results))
    for ax, (name, res) in zip(axes, results.items()):
        Ks = [r["K"] for r in res["rows"]]
        ax.plot(Ks, [r["t_update"] * 1e3 for r in res["rows"]], "o-", label="one ensemble fit")
        ax.plot(Ks, [r["separate"] * 1e3 for r in res["rows"]], "s--", label="K separate fits")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("members K")
        ax.set_ylabel("time per update [ms]")
        c = res["config"]
        ax.set_title(f"{name}: M={c['M']}, L={c['L']}, T={c['T']}, batch {c['batch']}",
                     fontsize=9)
        ax.legend(fontsize=8)
    save_figure(fig, out, "ensemble")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="demo configuration, K ≤ 16")
    p.add_argument("--out", default="results/ensemble")
    p.add_argument("--steps", type=int, default=None, help="updates per timed fit")
    p.add_argument("--rounds", type=int, default=None)
    a = p.parse_args(argv)
    names = ["demo"] if a.quick else ["demo", "lorenz96"]
    Ks = [1, 2, 4, 8, 16] if a.quick else [1, 2, 4, 8, 16, 32]
    steps = a.steps or (8 if a.quick else 20)
    rounds = a.rounds or (2 if a.quick else 3)
    solver = dsr.DEER()
    results = {n: run(n, Ks, steps, rounds, solver) for n in names}
    for n, res in results.items():
        print(f"\n### {n}\n\n{table(res)}")
    payload = dict(environment=environment(), results=results)
    write_json(a.out, "ensemble", payload)
    plot(results, a.out)
    return payload


if __name__ == "__main__":
    main()
