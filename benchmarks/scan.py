"""The scan backend's methods against each other: where `linear_scan(method="auto")` comes from.

``python -m benchmarks.scan [--quick] --out DIR`` times `dsr.linear_scan` for every method
(`sequential`, `associative`, `chunked`) over a grid of sequence lengths T and state sizes M,
for full (T×M×M) and diagonal (T×M) multipliers, forward and reverse (the adjoint's
transposed recurrence). Each case is jitted and compiled ahead of time (excluded), warmed up,
and the methods of one cell are timed interleaved; the statistic is the median. It prints a
markdown table (time per method, the fastest, and what `auto` picks on this backend) and
writes ``DIR/scan.json`` (environment, settings, every raw timing) and ``DIR/scan.png``.

With ``--combine`` the full-matrix cells also time the associative kernel with each of its
two combines, `associative:matmul` (batched matmuls) and `associative:unrolled` (an unrolled
multiply-and-sum), whatever `auto_combine` would pick: where `_auto.AUTO_TABLE`'s
`"combine"` entries come from.

Multipliers are random but contracting (full: `0.9·I + 0.05·G/√M`; diagonal: U(0.5, 1)
with 10% exact zeros, as quasi-DEER diagonals have), so nothing overflows or goes denormal.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from dsr import linear_scan
from dsr._solvers._associative import associative_forward, associative_reverse
from dsr._solvers._auto import auto_combine
from dsr._solvers._scan import auto_method

from . import _common as C

METHODS = ("sequential", "associative", "chunked")
KINDS = ("full", "diag")
DIRECTIONS = ("forward", "reverse")
COMBINES = ("associative:matmul", "associative:unrolled")


def _case(method, reverse):
    """`(A, b, z0) -> states` for a method or an `associative:<combine>` variant."""
    if ":" not in method:
        return lambda A, b, z0: linear_scan(A, b, z0, method=method, reverse=reverse)
    combine = method.split(":")[1]
    if reverse:  # fold λ_T into g_{T-1}
        return lambda A, b, z0: associative_reverse(A, b.at[-1].add(z0 @ A[-1]), True, combine)
    return lambda A, b, z0: associative_forward(A, b.at[0].add(A[0] @ z0), True, combine)


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
        methods=METHODS, combine=False, repeats=7, dtype="float32", budget_s=20.0, out=None,
        deadline=None, verbose=True) -> dict:  # fmt: skip
    """Run the grid; returns (and with `out`, writes) the JSON payload. `deadline`: a
    `time.perf_counter()` value after which no further cell is started (`skipped`)."""
    dtype = jnp.dtype(dtype)
    backend = jax.default_backend()
    records, cells, skipped = [], [], []
    for kind in kinds:
        for m in M:
            for t in T:
                if deadline is not None and time.perf_counter() > deadline:
                    skipped.append(dict(kind=kind, M=m, T=t))
                    continue
                A, b, z0 = _inputs(t, m, kind, dtype)
                auto = auto_method(t, m, kind == "full", backend)
                cell = dict(kind=kind, M=m, T=t, auto=auto,
                            auto_combine=auto_combine(m, backend) if kind == "full" else None)
                variants = list(methods) + (list(COMBINES) if combine and kind == "full" else [])
                for direction in directions:
                    cases, meta = {}, {}
                    for method in variants:
                        fn = _case(method, direction == "reverse")
                        compiled, compile_s, mem = C.compile_fn(fn, A, b, z0)
                        cases[method] = (compiled, (A, b, z0))
                        meta[method] = dict(compile_s=compile_s, **mem)
                    times = C.time_interleaved(cases, repeats, budget_s)
                    meds = {k: C.median(v) for k, v in times.items()}
                    for method in variants:
                        records.append(dict(kind=kind, direction=direction, M=m, T=t,
                                            method=method, median_s=meds[method],
                                            min_s=min(times[method]), times_s=times[method],
                                            **meta[method]))  # fmt: skip
                    best = min((k for k in meds if ":" not in k), key=meds.get)
                    cell[f"best_{direction}"] = best
                    if combine and kind == "full":
                        cell[f"best_combine_{direction}"] = min(COMBINES, key=meds.get).split(":")[1]
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
                                 combine=combine, repeats=repeats, dtype=str(dtype),
                                 budget_s=budget_s),
                   records=records, cells=cells, skipped=skipped)  # fmt: skip
    if out is not None:
        C.write_json(out, "scan", payload)
        plot(payload, out)
    return payload


def table(payload: dict) -> str:
    """One row per (kind, M, T): median forward / reverse time per method, best, auto."""
    methods = list(payload["settings"]["methods"])
    if payload["settings"].get("combine"):
        methods += list(COMBINES)
    dirs = payload["settings"]["directions"]
    idx = {(r["kind"], r["direction"], r["M"], r["T"], r["method"]): r["median_s"]
           for r in payload["records"]}  # fmt: skip
    header = ["kind", "M", "T"] + [f"{m} {d[:3]}" for d in dirs for m in methods]
    header += [f"best {d[:3]}" for d in dirs] + ["auto", "auto/best"]
    rows = []
    for c in payload["cells"]:
        key = (c["kind"], c["M"], c["T"])  # "–" for a combine variant of a diagonal cell
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
    p.add_argument("--combine", action="store_true",
                   help="also time the associative kernel's matmul and unrolled combines (full)")
    a = p.parse_args(argv)
    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    T = a.T or ([256, 4096] if a.quick else [128, 512, 2048, 8192, 32768])
    M = a.M or ([4, 16] if a.quick else [4, 16, 64])
    repeats = a.repeats or (5 if a.quick else 9)
    payload = run(T=T, M=M, kinds=a.kinds, methods=a.methods, combine=a.combine,
                  repeats=repeats, dtype=a.dtype, budget_s=5.0 if a.quick else 20.0,
                  out=a.out)  # fmt: skip
    print()
    print(table(payload))
    print(f"\nwrote {a.out}/scan.json and {a.out}/scan.png")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])


def suggested_entry(payload: dict) -> dict:
    """An `_auto.AUTO_TABLE` entry from a run: per kind, rules `(max_M, max_T, method)` with
    the fastest of forward + reverse at each measured (M, T) (None, no limit, for the
    largest M and T); with `--combine`, the faster combine per M (summed over T and
    directions)."""
    med = {}
    for r in payload["records"]:
        key = (r["kind"], r["M"], r["T"], r["method"])
        med[key] = med.get(key, 0.0) + r["median_s"]
    s = payload["settings"]
    entry = {"source": f"benchmarks.scan on {payload['environment']['device_kind'] or payload['environment']['device']}"}
    for kind in s["kinds"]:
        rules = []
        for m in sorted(s["M"]):
            Ts = sorted({t for (k, mm, t, _) in med if k == kind and mm == m})
            for i, t in enumerate(Ts):
                best = min(s["methods"], key=lambda x: med.get((kind, m, t, x), float("inf")))
                rules.append([None if m == max(s["M"]) else m, t if i < len(Ts) - 1 else None,
                              best])  # fmt: skip
        entry[kind] = rules
    if s.get("combine"):
        comb = {}
        for (kind, m, t, method), v in med.items():
            if ":" in method:
                comb.setdefault(m, {}).setdefault(method.split(":")[1], 0.0)
                comb[m][method.split(":")[1]] += v
        entry["combine"] = {m: min(c, key=c.get) for m, c in sorted(comb.items())}
    return entry
