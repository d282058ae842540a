"""`python -m benchmarks.compare._probe_windows [--systems NAME ...] [--windows T ...]
[--steps N] [--members K] [--model M] [--alpha A] [--lr LR] [--hidden L] [--latent M]
[--noise S] --out DIR`: how dsr's window length T (and, on request, α, the learning rate,
the model's sizes, noise augmentation) changes what it reconstructs, with the comparison's
own data (clean variant) and measures, so its numbers sit next to `docs/compare.md`'s.

Per system and T: one K-member ensemble (`dsr.fit`, by default α = 0.1, lr 2e-3, M = N,
L = 64, batch 16, the same number of updates for every T, `solver="sequential"`, no
validation), every member scored
by `_measures.member_measures` (D_stsp, D_H, status, λ error, VPT, RMSE_n) and by the
comparison's validation score (`validation_score`: forecast RMSE on the validation split),
and the training wall time. One JSON per (system, T) under `DIR/runs/` (a rerun skips the
finished ones) and all of them in `DIR/probe.json`; a table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DEFAULT_SYSTEMS = ("Lorenz", "Thomas", "Rossler")
WINDOWS = (64, 200, 1000)
KEEP = ("D_stsp", "D_stsp_bins", "D_H", "status", "diverged", "collapsed", "lambda_max",
        "lambda_err", "VPT", "RMSE_n")


def probe_one(name: str, T: int, s: dict, model: str, steps: int, k: int, alpha: float,
              lr: float, hidden: int, latent: int, noise: float = 0.0) -> dict:
    import jax
    import numpy as np

    import dsr

    from ._dsr_method import SETTINGS, as_member
    from ._measures import member_measures, validation_score
    from ._systems import get_system, make_data

    system = get_system(name, s["pts_per_period"])
    data = make_data(system, s["n_train"], s["n_test"], s["transient"], 0.0, s["seed"])
    N = data["train"].shape[1]
    cls = {"shPLRNN": dsr.ShPLRNN, "clipped_shPLRNN": dsr.ClippedShPLRNN}[model]
    M = max(N, latent)
    ens = dsr.ensemble(lambda key: cls(N, M, hidden, key=key), k, key=jax.random.key(s["seed"]))
    t0 = time.perf_counter()
    res = dsr.fit(ens, data["train"], alpha=alpha, steps=steps, seq_len=T,
                  batch_size=SETTINGS["batch_size"], learning_rate=lr,
                  solver="sequential", key=jax.random.key(s["seed"] + 1), progress=False,
                  noise=noise)
    jax.block_until_ready(res.model)
    wall = time.perf_counter() - t0
    members = []
    for i in range(k):
        m = as_member(res.model[i], wall / k, {})
        r = member_measures(m, data, system.dt, system.lyap_ref, s, jax.random.key(100 + i))
        row = {key: r[key] for key in KEEP}
        row["val_score"] = validation_score(m, data["val"], s["horizon"])
        members.append(row)
    med = {meas: float(np.median([float(m[meas]) for m in members]))
           for meas in ("D_stsp", "D_H", "lambda_err", "VPT", "val_score")}
    return dict(system=name, T=T, model=model, steps=steps, alpha=alpha, learning_rate=lr,
                hidden=hidden, latent=M, noise=noise, members=members, median=med,
                train_s=wall, s_per_update=wall / steps, dt=system.dt, period=system.period,
                samples_per_period=system.period / system.dt)


def table(rows: list[dict]) -> str:
    """The runs as a markdown table (median over members; each member's D_stsp)."""
    g = lambda x: f"{float(x):.3g}"  # noqa: E731  (JSON keeps inf / nan as strings)
    out = ["| system | T | α | lr | L | M | noise | D_stsp (median; members) | D_H | status | "
           "λ err | VPT | val score | train (s) |", "|" + "---|" * 14]
    for r in rows:
        ms, med = r["members"], r["median"]
        out.append(f"| {r['system']} | {r['T']} | {g(r['alpha'])} | {g(r['learning_rate'])} | "
                   f"{r['hidden']} | {r['latent']} | {g(r.get('noise', 0))} | "
                   f"{g(med['D_stsp'])} ({' / '.join(g(m['D_stsp']) for m in ms)}) | "
                   f"{g(med['D_H'])} | {', '.join(m['status'] for m in ms)} | "
                   f"{g(med['lambda_err'])} | {g(med['VPT'])} | {g(med['val_score'])} | "
                   f"{float(r['train_s']):.0f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_windows",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS))
    p.add_argument("--windows", nargs="+", type=int, default=list(WINDOWS))
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--members", type=int, default=2)
    p.add_argument("--model", default="shPLRNN", choices=("shPLRNN", "clipped_shPLRNN"))
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--hidden", type=int, default=64, help="L")
    p.add_argument("--latent", type=int, default=0, help="M (at least N; default N)")
    p.add_argument("--noise", type=float, default=0.0, help="dsr.fit's noise augmentation")
    p.add_argument("--out", required=True)
    a = p.parse_args(sys.argv[1:] if argv is None else argv)

    from .._json import write_json
    from .__main__ import DEFAULT

    s = dict(DEFAULT)
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    rows = []
    for name in a.systems:
        for T in a.windows:
            tag = f"{a.model}__{a.steps}__a{a.alpha:g}_lr{a.lr:g}_L{a.hidden}_M{a.latent}" + (
                f"_noise{a.noise:g}" if a.noise else "")
            path = os.path.join(a.out, "runs", f"{name}__T{T}__{tag}.json")
            if os.path.exists(path):
                with open(path) as f:
                    rows.append(json.load(f))
                print(f"{name} T={T}: done before", flush=True)
                continue
            r = probe_one(name, T, s, a.model, a.steps, a.members, a.alpha, a.lr, a.hidden,
                          a.latent, a.noise)
            write_json(path, r)
            rows.append(r)
            st = ",".join(m["status"] for m in r["members"])
            print(f"{name} T={T}: D_stsp {r['median']['D_stsp']:.3g} D_H "
                  f"{r['median']['D_H']:.3g} [{st}] train {r['train_s']:.0f} s", flush=True)
    everything = []  # every run in DIR/runs, of this and earlier invocations (each its settings)
    for f in sorted(os.listdir(os.path.join(a.out, "runs"))):
        with open(os.path.join(a.out, "runs", f)) as fh:
            everything.append(json.load(fh))
    write_json(os.path.join(a.out, "probe.json"),
               dict(settings=dict(s, members=a.members, solver="sequential", batch_size=16,
                                  variant="clean"), runs=everything))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
