"""The scan backend's methods against each other: where `linear_scan(method="auto")` comes from.

``python -m benchmarks.scan [--quick] --out DIR`` times `dsr.linear_scan` for every method
(`sequential`, `associative`, `chunked`) over a grid of sequence lengths T and state sizes M,
for full (T×M×M) and diagonal (T×M) multipliers, forward and reverse (the adjoint's
transposed recurrence). Each case is jitted and compiled ahead of time (excluded), warmed up,
and the methods of one cell are timed interleaved; the statistic is the median. It prints a
markdown table (time per method, the fastest, and what `auto` picks on this backend) and
writes ``DIR/scan.json`` (environment, settings, every raw timing) and ``DIR/scan.png``.

Multipliers are random but contracting (full: `0.9·I + 0.05·G/√M`; diagonal: U(0.5, 1)
with 10% exact zeros, as quasi-DEER diagonals have), so nothing overflows or goes denormal.
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np

from dsr import linear_scan
from dsr._scan import auto_method

from . import _common as C

METHODS = ("sequential", "associative", "chunked")
KINDS = ("full", "diag")
DIRECTIONS = ("forward", "reverse")


def _inputs(T, M, kind, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "full":
        A = 0.9 * np.eye(M) + 0.05 * rng.normal(size=(T, M, M)) / np.sqrt(M)
    else:
        A = rng.uniform(0.5, 1.0, size=(T, M))
        A[rng.uniform(size=(T, M)) < 0.1] = 0.0
    b = rng.normal(size=(T, M))
    z0 = rng.normal(size=M)
    return tuple(jnp.asarray(v, dtype) for v in (A, b, z0))


def run(*, T=(128, 512, 2048, 8192, 32768), M=(4, 16, 64), kinds=KINDS, directions=DIRECTIONS,
        methods=METHODS, repeats=7, dtype="float32", budget_s=20.0, out=None,
        verbose=True) -> dict:  # fmt: skip
    """Run the grid; returns (and with `out`, writes) the JSON payload."""
    dtype = jnp.dtype(dtype)
    backend = jax.default_backend()
    records, cells = [], []
    for kind in kinds:
        for m in M:
            for t in T:
                A, b, z0 = _inputs(t, m, kind, dtype)
                auto = auto_method(t, m, kind == "full", backend)
                cell = dict(kind=kind, M=m, T=t, auto=auto)
                for direction in directions:
                    cases, meta = {}, {}
                    for method in methods:
                        fn = lambda A, b, z0, method=method, rev=direction == "reverse": linear_scan(  # noqa: E731
                            A, b, z0, method=method, reverse=rev)
                        compiled, compile_s, mem = C.compile_fn(fn, A, b, z0)
                        cases[method] = (compiled, (A, b, z0))
                        meta[method] = dict(compile_s=compile_s, **mem)
                    times = C.time_interleaved(cases, repeats, budget_s)
                    meds = {k: C.median(v) for k, v in times.items()}
                    for method in methods:
                        records.append(dict(kind=kind, direction=direction, M=m, T=t,
                                            method=method, median_s=meds[method],
                                            min_s=min(times[method]), times_s=times[method],
                                            **meta[method]))  # fmt: skip
                    best = min(meds, key=meds.get)
                    cell[f"best_{direction}"] = best
                    if auto in meds:
                        cell[f"auto_over_best_{direction}"] = meds[auto] / meds[best]
                    if verbose:
                        print(f"{kind:4s} {direction:7s} M={m:<3d} T={t:<6d} "
                              + "  ".join(f"{k}={C.fmt_s(v):>9s}" for k, v in meds.items())
                              + f"  best={best} auto={auto}", flush=True)  # fmt: skip
                cells.append(cell)
    payload = dict(benchmark="scan", environment=C.environment(),
                   settings=dict(T=list(T), M=list(M), kinds=list(kinds),
                                 directions=list(directions), methods=list(methods),
                                 repeats=repeats, dtype=str(dtype), budget_s=budget_s),
                   records=records, cells=cells)  # fmt: skip
    if out is not None:
        C.write_json(out, "scan", payload)
        plot(payload, out)
    return payload


def table(payload: dict) -> str:
    """One row per (kind, M, T): median forward / reverse time per method, best, auto."""
    methods = payload["settings"]["methods"]
    dirs = payload["settings"]["directions"]
    idx = {(r["kind"], r["direction"], r["M"], r["T"], r["method"]): r["median_s"]
           for r in payload["records"]}  # fmt: skip
    header = ["kind", "M", "T"] + [f"{m} {d[:3]}" for d in dirs for m in methods]
    header += [f"best {d[:3]}" for d in dirs] + ["auto", "auto/best"]
    rows = []
    for c in payload["cells"]:
        key = (c["kind"], c["M"], c["T"])
        row = [c["kind"], c["M"], c["T"]]
        row += [C.fmt_s(idx.get((key[0], d, key[1], key[2], m))) for d in dirs for m in methods]
        row += [c.get(f"best_{d}", "") for d in dirs]
        ratio = [c[f"auto_over_best_{d}"] for d in dirs if f"auto_over_best_{d}" in c]
        row += [c["auto"], f"{max(ratio):.2f}" if ratio else "–"]
        rows.append(row)
    return C.markdown_table(header, rows)


def plot(payload: dict, out) -> None:
    s = payload["settings"]
    fig, axes = C.new_figure(len(s["M"]))
    colors = dict(sequential="C0", associative="C1", chunked="C2")
    for ax, m in zip(axes, s["M"]):
        for kind, marker in (("full", "o"), ("diag", "s")):
            if kind not in s["kinds"]:
                continue
            for method in s["methods"]:
                for direction, ls in (("forward", "-"), ("reverse", ":")):
                    pts = sorted((r["T"], r["median_s"]) for r in payload["records"]
                                 if r["M"] == m and r["kind"] == kind and r["method"] == method
                                 and r["direction"] == direction)  # fmt: skip
                    if not pts:
                        continue
                    label = f"{method} {kind}" if direction == "forward" else None
                    ax.loglog(*zip(*pts), ls, marker=marker, ms=3, color=colors.get(method),
                              alpha=1.0 if kind == "full" else 0.55, label=label)  # fmt: skip
        ax.set_title(f"linear_scan, M = {m} ({payload['environment']['backend']})")
        ax.set_xlabel("T")
        C.log2_axis(ax, s["T"])
        ax.set_ylabel("median time [s]  (solid fwd, dotted rev)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    C.save_figure(fig, out, "scan")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.scan", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small grid (about a minute on a CPU)")
    p.add_argument("--out", default="results/scan", help="output folder for scan.json/.png")
    p.add_argument("--T", type=int, nargs="+", help="sequence lengths")
    p.add_argument("--M", type=int, nargs="+", help="state sizes")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    p.add_argument("--repeats", type=int, help="timed calls per case (median)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    a = p.parse_args(argv)
    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    T = a.T or ([256, 4096] if a.quick else [128, 512, 2048, 8192, 32768])
    M = a.M or ([4, 16] if a.quick else [4, 16, 64])
    repeats = a.repeats or (5 if a.quick else 9)
    payload = run(T=T, M=M, kinds=a.kinds, methods=a.methods, repeats=repeats, dtype=a.dtype,
                  budget_s=5.0 if a.quick else 20.0, out=a.out)  # fmt: skip
    print()
    print(table(payload))
    print(f"\nwrote {a.out}/scan.json and {a.out}/scan.png")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
