"""What `solver="auto"` should pick: the training update's cost with DEER and with the
sequential solver over the shapes users train (ensembles, short windows, small M).

    python -m benchmarks.solver_choice [--quick] [--out results/solver_choice]

Each cell times the minimal hand-written training loop of `benchmarks.overhead` (one jitted
`lax.scan` over updates of the GTF loss, RAdam, B = 16 windows, L = 64, N = 3; `K` members
vmapped) with `dsr.DEER()` and with `dsr.Sequential()`, per update (difference of two run
lengths, minimum of repeats, the two solvers interleaved), and says which is faster. The
table printed at the end is the entry to paste into `dsr/_solvers/_choice.py` for this
backend (rules `(max_M, max_T, max_K, solver)`, first match wins).

Output: a table on stdout, `OUT/solver_choice.json` and `OUT/solver_choice.png`.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import dsr
from benchmarks._common import environment, write_json
from benchmarks.overhead import lorenz_data, make_model, optimizer, per_update, reference_loop

GRID = dict(K=(1, 4, 16), T=(64, 200, 1000), M=(3, 8, 16))
QUICK = dict(K=(1, 4), T=(64, 200), M=(3, 16))


def cell(data, K: int, T: int, M: int, seconds: float, repeats: int) -> dict:
    """Both solvers' per-update time; the run lengths are chosen so that the longer run of
    the slower solver lasts about `seconds`."""
    model, opt = make_model(M, K), optimizer()
    runs = {name: reference_loop(model, data, solver, opt, K, T=T, dynamic=True)
            for name, solver in (("deer", dsr.DEER()), ("sequential", dsr.Sequential()))}
    slowest = 0.0
    for run in runs.values():  # compile, then a first estimate
        run(2)
        t = time.perf_counter()
        run(4)
        slowest = max(slowest, (time.perf_counter() - t) / 4)
    n2 = int(min(400, max(8, seconds / slowest)))
    n1 = max(2, n2 // 4)
    res = per_update(runs, n1, n2, repeats)
    d, s = res["deer"]["per_update_s"], res["sequential"]["per_update_s"]
    return dict(K=K, T=T, M=M, n=[n1, n2], deer_s=d, sequential_s=s, faster="deer" if d < s else
                "sequential", raw={k: v["raw"] for k, v in res.items()})


def rules(cells: list[dict]) -> list[tuple]:
    """The smallest rule list `(max_M, max_T, max_K, solver)` that reproduces every cell's
    winner: DEER for the cells it wins when they form a box of small M, T, K; otherwise the
    single solver that wins most cells (the table says so in its `source`)."""
    deer = [c for c in cells if c["faster"] == "deer"]
    if not deer:
        return [(None, None, None, "sequential")]
    box = tuple(max(c[k] for c in deer) for k in ("M", "T", "K"))
    inside = [c for c in cells if all(c[k] <= b for k, b in zip(("M", "T", "K"), box))]
    if all(c["faster"] == "deer" for c in inside):
        return [(*box, "deer"), (None, None, None, "sequential")]
    most = "deer" if len(deer) * 2 > len(cells) else "sequential"
    return [(None, None, None, most)]


def table(cells: list[dict]) -> str:
    out = ["| K | T | M | DEER ms/update | sequential ms/update | faster (ratio) |",
           "|---|---|---|---|---|---|"]
    for c in cells:
        d, s = 1e3 * c["deer_s"], 1e3 * c["sequential_s"]
        out.append(f"| {c['K']} | {c['T']} | {c['M']} | {d:.2f} | {s:.2f} | {c['faster']} "
                   f"({max(d, s) / min(d, s):.2f}×) |")
    return "\n".join(out)


def figure(cells: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Ks = sorted({c["K"] for c in cells})
    fig, axes = plt.subplots(1, len(Ks), figsize=(3.2 * len(Ks), 3.0), squeeze=False)
    for ax, K in zip(axes[0], Ks):
        for T in sorted({c["T"] for c in cells}):
            row = sorted((c for c in cells if c["K"] == K and c["T"] == T), key=lambda c: c["M"])
            ax.plot([c["M"] for c in row], [c["deer_s"] / c["sequential_s"] for c in row],
                    "o-", label=f"T={T}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"K = {K}")
        ax.set_xlabel("M")
    axes[0][0].set_ylabel("DEER / sequential time")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.solver_choice", description=__doc__)
    p.add_argument("--quick", action="store_true", help="a smaller grid, fewer updates")
    p.add_argument("--out", default=os.path.join("results", "solver_choice"))
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seconds", type=float, default=1.5,
                   help="about how long the longer timed run of a cell lasts")
    a = p.parse_args(argv)
    grid = QUICK if a.quick else GRID
    seconds = 0.3 if a.quick else a.seconds
    data = lorenz_data(20_000)
    cells = []
    for K in grid["K"]:
        for T in grid["T"]:
            for M in grid["M"]:
                c = cell(data, K, T, M, seconds, a.repeats)
                cells.append(c)
                print(f"K={K:2d} T={T:4d} M={M:2d}: DEER {1e3 * c['deer_s']:.2f} ms, "
                      f"sequential {1e3 * c['sequential_s']:.2f} ms → {c['faster']}", flush=True)
    payload = {"benchmark": "solver_choice", "environment": environment(),
               "settings": dict(grid=grid, seconds=seconds, repeats=a.repeats),
               "records": cells, "rules": rules(cells)}
    print(table(cells))
    print("rules (max_M, max_T, max_K, solver):", payload["rules"])
    write_json(a.out, "solver_choice", payload)
    figure(cells, os.path.join(a.out, "solver_choice.png"))
    return payload


if __name__ == "__main__":
    main()
