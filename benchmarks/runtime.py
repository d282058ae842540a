"""Training-step time of sequential GTF (BPTT) against GTF-DEER (Hess et al. 2026, Fig. 1A).

``python -m benchmarks.runtime [--quick] --out DIR`` measures the median time of one combined
forward + backward GTF training step — `jax.jit(jax.value_and_grad(loss))` with the MSE of
`z @ B.T` against `x[1:]`, compiled ahead of time (compilation excluded) — for

- `sequential`: `dsr.Sequential()`, a plain `lax.scan` with BPTT (the paper's baseline);
- `sequential_unroll`: `dsr.Sequential(unroll=U)`, the same loop unrolled U steps: a *tuned*
  baseline, reported beside the plain one so that no speedup rests on a weak baseline;
- `deer`: `dsr.DEER(jacobian="full")`, GTF-DEER with implicit gradients (`scan_method="auto"`:
  the fused sequential path on CPU, the associative scan on accelerators);
- `deer_associative`: `dsr.DEER(scan_method="associative")`, the O(log T)-depth path
  accelerators run, timed on any backend;
- `quasi`: `dsr.DEER(jacobian="diag")`, quasi-DEER,

on Lorenz-63 (N = 3, RK4, Δt = 0.01, standardized), shPLRNN with L = 50, batch B = 1,
α = 0.15, no warm-up, T = 128 … 32,768 in powers of 2 and M ∈ {4, 16, 64} (the paper's grid,
minus M = 128). DEER's cost depends on the model's dynamics (its Newton iteration count), so
each M first gets a shPLRNN briefly trained on Lorenz-63 by `dsr.fit` (`--train-steps`). The
methods of a cell are timed interleaved; every raw timing, the Newton iterations, the
convergence flag and the compiled executable's temporary memory go into ``DIR/runtime.json``;
``DIR/runtime.png`` plots time and speedup against T. The device is recorded: the script runs
unchanged on a GPU.

``python -m benchmarks.runtime --compare-before --out DIR`` times the solver as it was before
the solver-speed work (a frozen copy, `benchmarks/_reference/deer.py`) against the current one in
one process, interleaved (`benchmarks/_runtime/before_after.py`), and writes ``DIR/runtime_compare.json``
and ``.png``.
"""

from __future__ import annotations

import argparse
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp

import dsr

from . import _common as C
from ._runtime import before_after as _compare

METHODS = ("sequential", "sequential_unroll", "deer", "deer_associative", "quasi")


PARALLEL = ("deer", "deer_associative", "deer_chunked", "quasi")


def solver_for(method: str, unroll: int = 8) -> dsr.AbstractSolver:
    return {
        "sequential": lambda: dsr.Sequential(),
        "sequential_unroll": lambda: dsr.Sequential(unroll=unroll),
        "deer": lambda: dsr.DEER(jacobian="full"),
        "deer_associative": lambda: dsr.DEER(scan_method="associative"),
        "deer_chunked": lambda: dsr.DEER(scan_method="chunked"),
        "quasi": lambda: dsr.DEER(jacobian="diag"),
    }[method]()


def train_step_fn(static, solver, alpha: float):
    """`(params, x) -> ((loss, info), grads)`: one GTF forward + backward pass."""

    def loss(params, x):
        model = eqx.combine(params, static)
        z, info = dsr.gtf_forward(model, x, alpha, solver=solver)
        return jnp.mean((z @ model.B.T - x[1:]) ** 2), info

    return jax.value_and_grad(loss, has_aux=True)


def run(*, T=tuple(C.powers_of_two(128, 32768)), M=(4, 16, 64), methods=METHODS, repeats=9,
        alpha=0.15, hidden_dim=50, unroll=8, train_steps=300, train_seq_len=512,
        budget_s=30.0, max_call_s=60.0, out=None, deadline=None, verbose=True) -> dict:  # fmt: skip
    """Run the grid; returns (and with `out`, writes) the JSON payload.

    A method whose first call in a cell takes longer than `max_call_s` is recorded with that
    one timing (`"single": true`) and not run for the larger T of that M (`payload["skipped"]`).
    `deadline`: a `time.perf_counter()` value after which no further cell is started.
    """
    T, M, methods = list(T), list(M), list(methods)
    skipped = []
    data = C.lorenz63(max(max(T) + 1, 20_000))
    x_all = jnp.asarray(data)
    records, training = [], {}
    for m in M:
        if deadline is not None and time.perf_counter() > deadline:
            skipped += [dict(method=k, M=m, T=t, reason="deadline") for k in methods for t in T]
            continue
        t0 = time.perf_counter()
        model, info = C.trained_shplrnn(data, m, hidden_dim=hidden_dim, steps=train_steps,
                                        seq_len=min(train_seq_len, max(T)), alpha=alpha)  # fmt: skip
        training[m] = info
        if verbose:
            print(f"M={m}: trained {train_steps} steps in {time.perf_counter() - t0:.1f} s "
                  f"(loss {info['first_loss']} -> {info['final_loss']})", flush=True)
        params, static = eqx.partition(model, eqx.is_inexact_array)
        too_slow = set()
        for t in T:
            if deadline is not None and time.perf_counter() > deadline:
                skipped += [dict(method=k, M=m, T=t, reason="deadline") for k in methods]
                continue
            x = x_all[: t + 1]
            cases, meta, single = {}, {}, {}
            for method in methods:
                if method in too_slow:
                    skipped.append(dict(method=method, M=m, T=t))
                    continue
                fn = train_step_fn(static, solver_for(method, unroll), alpha)
                compiled, compile_s, mem = C.compile_fn(fn, params, x)
                t0 = time.perf_counter()
                (value, sinfo), _ = jax.block_until_ready(compiled(params, x))
                first_s = time.perf_counter() - t0
                if first_s > max_call_s:
                    single[method] = [first_s]
                    too_slow.add(method)
                else:
                    cases[method] = (compiled, (params, x))
                meta[method] = dict(first_call_s=first_s, single=method in single,
                    compile_s=compile_s, loss=float(value),
                    newton_iters=int(sinfo.iterations), converged=bool(sinfo.converged),
                    residual=float(sinfo.residual), finite=bool(sinfo.finite), **mem)  # fmt: skip
            times = {**C.time_interleaved(cases, repeats, budget_s), **single}
            peak = C.device_peak_bytes()
            for method in meta:
                records.append(dict(method=method, M=m, T=t, median_s=C.median(times[method]),
                                    min_s=min(times[method]), times_s=times[method],
                                    device_peak_bytes=peak, **meta[method]))  # fmt: skip
            if verbose:
                row = {r["method"]: r for r in records[-len(meta):]}
                seq = row.get("sequential", {}).get("median_s")
                print(f"M={m:<3d} T={t:<6d} " + "  ".join(
                    f"{k}={C.fmt_s(r['median_s'])}"
                    + (f" ({seq / r['median_s']:.2f}x, {r['newton_iters']} it"
                       + ("" if r["converged"] else ", NOT converged") + ")"
                       if k in PARALLEL and seq else "")
                    for k, r in row.items()), flush=True)  # fmt: skip
    payload = dict(
        benchmark="runtime", environment=C.environment(),
        settings=dict(T=T, M=M, methods=methods, repeats=repeats, alpha=alpha, batch_size=1,
                      hidden_dim=hidden_dim, obs_dim=3, warmup=0, dtype="float32",
                      unroll=unroll, budget_s=budget_s, data="lorenz63 RK4 dt=0.01 standardized",
                      solvers={k: repr(solver_for(k, unroll)) for k in methods},
                      max_call_s=max_call_s,
                      training={str(k): v for k, v in training.items()}),
        records=records, skipped=skipped)  # fmt: skip
    if out is not None:
        C.write_json(out, "runtime", payload)
        plot(payload, out)
    return payload


def _index(payload):
    return {(r["method"], r["M"], r["T"]): r for r in payload["records"]}


def table(payload: dict, M: int | None = None) -> str:
    """Median step time per method, speedups over the plain and the unrolled sequential
    baseline, and Newton iterations (`*`: not converged; `¹`: a single timed call)."""
    s = payload["settings"]
    idx = _index(payload)
    methods = s["methods"]
    par = [k for k in PARALLEL if k in methods]
    bases = [k for k in ("sequential", "sequential_unroll") if k in methods]
    header = ["M", "T"] + [k.replace("_", " ") for k in methods]
    header += [f"{k} speedup{' vs unrolled' if b != 'sequential' else ''}"
               for b in bases for k in par]  # fmt: skip
    header += [f"{k} iters" for k in par]

    def speed(b, k):
        if b is None or k is None:
            return "–"
        return f"{b['median_s'] / k['median_s']:.2f}×"

    rows = []
    for m in s["M"] if M is None else [M]:
        for t in s["T"]:
            r = {k: idx.get((k, m, t)) for k in methods}
            if all(v is None for v in r.values()):
                continue
            row = [m, t] + ["–" if r[k] is None else
                            C.fmt_s(r[k]["median_s"]) + ("¹" if r[k].get("single") else "")
                            for k in methods]  # fmt: skip
            row += [speed(r[b], r[k]) for b in bases for k in par]
            row += ["–" if r[k] is None else
                    f"{r[k]['newton_iters']}{'' if r[k]['converged'] else '*'}" for k in par]
            rows.append(row)
    return C.markdown_table(header, rows)


def plot(payload: dict, out) -> None:
    s = payload["settings"]
    idx = _index(payload)
    fig, (ax, ax2) = C.new_figure(2, width=5.0)
    styles = dict(sequential=("-", "o"), sequential_unroll=(":", "o"), deer=("--", "s"),
                  deer_associative=(":", "D"), deer_chunked=(":", "v"),
                  quasi=("-.", "^"))  # fmt: skip
    for i, m in enumerate(s["M"]):
        color = f"C{i}"
        for method in s["methods"]:
            pts = [(t, idx[(method, m, t)]["median_s"]) for t in s["T"] if (method, m, t) in idx]
            if pts:
                ls, mk = styles.get(method, ("-", "."))
                ax.loglog(*zip(*pts), ls, marker=mk, ms=3, color=color,
                          label=f"{method}, M={m}")  # fmt: skip
        for method in PARALLEL:
            pts = [(t, idx[("sequential", m, t)]["median_s"] / idx[(method, m, t)]["median_s"])
                   for t in s["T"] if (method, m, t) in idx and ("sequential", m, t) in idx]
            if pts:
                ls, mk = styles[method]
                ax2.loglog(*zip(*pts), ls, marker=mk, ms=3, color=color,
                           label=f"{method}, M={m}")  # fmt: skip
    env = payload["environment"]
    ax.set_title(f"forward+backward step ({env['backend']}: {env['device_kind'] or env['device']})",
                 fontsize=9)  # fmt: skip
    ax.set_xlabel("sequence length T")
    C.log2_axis(ax, s["T"])
    ax.set_ylabel("median time [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_title("speedup over sequential (lax.scan + BPTT)", fontsize=9)
    ax2.set_xlabel("sequence length T")
    C.log2_axis(ax2, s["T"])
    ax2.set_ylabel("t_sequential / t_method")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=6)
    C.save_figure(fig, out, "runtime")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.runtime",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--quick", action="store_true", help="small grid (about a minute on a CPU)")
    p.add_argument("--out", default="results/runtime", help="output folder")
    p.add_argument("--T-min", type=int, help="smallest T (default 128)")
    p.add_argument("--T-max", type=int, help="largest T (default 32768; --quick 2048)")
    p.add_argument("--M", type=int, nargs="+", help="latent sizes (default 4 16 64; --quick 4)")
    p.add_argument("--methods", nargs="+", choices=METHODS + ("deer_chunked",),
                   default=list(METHODS))
    p.add_argument("--repeats", type=int, help="timed calls per case (median; default 9, --quick 3)")
    p.add_argument("--alpha", type=float, default=0.15)
    p.add_argument("--unroll", type=int, default=8, help="unroll of the tuned sequential baseline")
    p.add_argument("--train-steps", type=int, help="GTF training steps per M before timing")
    p.add_argument("--budget", type=float, help="seconds of timing per cell before stopping early")
    p.add_argument("--max-call", type=float, default=60.0,
                   help="a method slower than this per call is timed once, then skipped for larger T")
    p.add_argument("--compare-before", action="store_true",
                   help="time the solver before/after the speed work (default M 4 16, T 32768)")
    p.add_argument("--groups", nargs="+", choices=_compare.GROUPS, default=list(_compare.GROUPS),
                   help="--compare-before: which groups to time")
    a = p.parse_args(argv)
    if a.compare_before:
        return _main_compare(a)
    T = C.powers_of_two(a.T_min or (256 if a.quick else 128),
                        a.T_max or (4096 if a.quick else 32768))  # fmt: skip
    T = T[::2] if a.quick and a.T_max is None else T
    M = a.M or ([4] if a.quick else [4, 16, 64])
    payload = run(T=T, M=M, methods=a.methods, repeats=a.repeats or (3 if a.quick else 9),
                  alpha=a.alpha, unroll=a.unroll,
                  train_steps=(60 if a.quick else 300) if a.train_steps is None else a.train_steps,
                  budget_s=a.budget or (5.0 if a.quick else 30.0), max_call_s=a.max_call,
                  out=a.out)  # fmt: skip
    print()
    print(table(payload))
    print(f"\nwrote {a.out}/runtime.json and {a.out}/runtime.png")
    return payload


def _main_compare(a):
    payload = _compare.compare(
        M=a.M or ([4] if a.quick else [4, 16]), T=a.T_max or (2048 if a.quick else 32768),
        groups=a.groups, repeats=a.repeats or (3 if a.quick else 7),
        train_steps=(60 if a.quick else 300) if a.train_steps is None else a.train_steps,
        budget_s=a.budget or (5.0 if a.quick else 60.0), out=a.out)  # fmt: skip
    print()
    print(_compare.table(payload))
    for m, r in _compare.ratios(payload).items():
        print(f"M={m}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items() if v is not None))
    print(f"\nwrote {a.out}/runtime_compare.json and {a.out}/runtime_compare.png")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
