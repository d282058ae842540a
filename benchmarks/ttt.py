"""Tokens per second of the TTT layer: recurrent vs chunk-wise parallel form.

``python -m benchmarks.ttt [--quick] --out DIR`` times `ttt_linear` in both forms over a
grid of sequence lengths T and chunk sizes L (Liu et al. 2026, Sec. 6.2 / Table 2 report up to
4× for the parallel form on a GPU), prints a markdown table and writes ``DIR/ttt.json``
(device, backend, versions, settings, raw timings) and ``DIR/ttt.png``. Each case is
jitted and compiled first (compile time is recorded but excluded), run once to warm up, then
timed `--repeats` times, the two forms alternating run by run; tokens/s = batch·T / median
time. Forward pass (inference
throughput, as in the paper) unless ``--grad`` (forward + backward w.r.t. q, k, v).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from dsr.baselines import SwiGLUKernel, ttt_linear

from ._json import write_json

FORMS = ("recurrent", "parallel")


def _case(T, L, form, a, key):
    dtype = jnp.dtype(a.dtype)
    kq, kk, kv, kw, kp = jax.random.split(key, 5)
    shape = (a.batch, T, a.dim)
    q, k, v = (jax.random.normal(kk_, shape, dtype) / np.sqrt(a.dim) for kk_ in (kq, kk, kv))
    kernel = None
    if a.kernel == "swiglu":
        kernel = SwiGLUKernel.random(a.dim, a.dim, key=kp, dtype=dtype)
    w0 = jax.random.normal(kw, (a.dim, a.dim), dtype) / np.sqrt(a.dim)
    n = -(-T // L)
    lr = jnp.full((n,), 1e-2, dtype)
    mom = jnp.full((n,), 0.5, dtype)
    f = functools.partial(ttt_linear, chunk_size=L, form=form, kernel=kernel,
                          block_size=a.block)
    fwd = jax.vmap(lambda q, k, v: f(q, k, v, w0=w0, lr=lr, momentum=mom))
    if a.grad:
        fn = jax.jit(jax.grad(lambda q, k, v: jnp.sum(fwd(q, k, v) ** 2), argnums=(0, 1, 2)))
    else:
        fn = jax.jit(fwd)
    return fn, (q, k, v)


def _compile(fn, args):
    t = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(compiled(*args))  # warm-up
    return compiled, compile_s


def run(a):
    results = []
    key = jax.random.key(0)
    for T in a.T:
        for L in a.chunk:
            cases = {}
            for form in FORMS:
                fn, args = _case(T, L, form, a, key)
                cases[form] = (*_compile(fn, args), args)
            # The forms alternate run by run, so that load from elsewhere hits both alike.
            times = {form: [] for form in FORMS}
            for _ in range(a.repeats):
                for form in FORMS:
                    compiled, _, args = cases[form]
                    t = time.perf_counter()
                    jax.block_until_ready(compiled(*args))
                    times[form].append(time.perf_counter() - t)
            for form in FORMS:
                med = float(np.median(times[form]))
                results.append({"T": T, "chunk_size": L, "form": form,
                                "compile_s": cases[form][1], "times_s": times[form],
                                "median_s": med, "min_s": min(times[form]),
                                "tokens_per_s": a.batch * T / med})
                print(f"T={T:>6} L={L:>4} {form:>9}: {med * 1e3:9.3f} ms  "
                      f"({a.batch * T / med:,.0f} tok/s)", flush=True)
    return results


def table(results):
    by = {(r["T"], r["chunk_size"], r["form"]): r for r in results}
    keys = sorted({(r["T"], r["chunk_size"]) for r in results})
    lines = ["| T | chunk L | recurrent [tok/s] | parallel [tok/s] | speedup |",
             "|---:|---:|---:|---:|---:|"]
    for T, L in keys:
        rec, par = by[(T, L, "recurrent")], by[(T, L, "parallel")]
        lines.append(f"| {T:,} | {L} | {rec['tokens_per_s']:,.0f} | {par['tokens_per_s']:,.0f} "
                     f"| {par['tokens_per_s'] / rec['tokens_per_s']:.2f}× |")
    return "\n".join(lines)


def plot(results, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    chunks = sorted({r["chunk_size"] for r in results})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, L in enumerate(chunks):
        c = colors[i % len(colors)]
        sel = {f: sorted((r["T"], r["tokens_per_s"]) for r in results
                         if r["chunk_size"] == L and r["form"] == f) for f in FORMS}
        for f, ls in zip(FORMS, ("--", "-")):
            Ts, tps = zip(*sel[f])
            ax1.plot(Ts, tps, ls, marker="o", color=c, label=f"L={L} {f}")
        Ts = [t for t, _ in sel["parallel"]]
        speed = [p / r for (_, p), (_, r) in zip(sel["parallel"], sel["recurrent"])]
        ax2.plot(Ts, speed, marker="o", color=c, label=f"L={L}")
    ax1.set(xscale="log", yscale="log", xlabel="T", ylabel="tokens / s",
            title="throughput (solid: parallel, dashed: recurrent)")
    ax2.axhline(1.0, color="gray", lw=0.8)
    ax2.set(xscale="log", xlabel="T", ylabel="parallel / recurrent", title="speedup")
    ax1.legend(fontsize=7, ncol=2)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ttt",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small grid, a few seconds")
    ap.add_argument("--out", default="results/ttt")
    ap.add_argument("--T", type=int, nargs="+", help="sequence lengths")
    ap.add_argument("--chunk", type=int, nargs="+", help="chunk sizes L")
    ap.add_argument("--dim", type=int, help="Dk = Dv = Dh (default 64, quick 32)")
    ap.add_argument("--kernel", choices=("identity", "swiglu"), default="swiglu")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--block", type=int, default=None, help="parallel block size (tokens)")
    ap.add_argument("--repeats", type=int, help="timed runs per case (default 9, quick 5)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--grad", action="store_true", help="time forward + backward")
    a = ap.parse_args(argv)
    a.T = a.T or ([256, 1024] if a.quick else [1024, 4096, 16384])
    a.chunk = a.chunk or ([1, 16, 64] if a.quick else [1, 16, 64, 256])
    a.dim = a.dim or (32 if a.quick else 64)
    a.repeats = a.repeats or (5 if a.quick else 9)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run(a)
    print(table(results))
    dev = jax.devices()[0]
    settings = dict(quick=a.quick, T=a.T, chunk_sizes=a.chunk, d_key=a.dim, d_value=a.dim,
                    d_hidden=a.dim, kernel=a.kernel, batch=a.batch, block_size=a.block,
                    repeats=a.repeats, dtype=a.dtype, mode="forward+backward" if a.grad
                    else "forward", statistic="median", compile_excluded=True)
    info = dict(device=f"{dev.platform}: {dev.device_kind}", backend=jax.default_backend(),
                jax_version=jax.__version__, cpus=os.cpu_count(),
                machine=platform.processor() or platform.machine(), settings=settings,
                results=results)
    write_json(out / "ttt.json", info, indent=2)
    plot(results, out / "ttt.png",
         f"ttt_linear ({a.kernel}, D={a.dim}, batch {a.batch}, {settings['mode']}, "
         f"{a.dtype}) on {info['device']}")
    print(f"wrote {out / 'ttt.json'} and {out / 'ttt.png'}")
    return info


if __name__ == "__main__":
    main()
