"""`dsr.fit` against a minimal hand-written training loop, per update; time to the first
update, cold and warm; `evaluate`'s time.

    python -m benchmarks.overhead [--quick] [--out results/overhead]

**Per update.** The reference is what a user writes by hand: one jitted program that runs
`lax.scan` over updates, each drawing B random windows of T + 1 steps, computing the GTF loss
(`dsr.gtf_forward`, the same solver) and its gradient, and applying one optax update (the
same optimizer object `fit` gets). `K` members are `vmap`ped. `dsr.fit` gets the same model,
data, α, windows' shape, solver and optimizer, with `progress=False, monitor_every=0` (no
progress bar and no free-run checks: its defaults add those, and they are not update cost).
The cost per update of each is the difference between runs of `n2` and `n1` updates divided
by `n2 − n1`, after a warm-up run of each length (so compilation is excluded, as for a
compiled hand-written loop); the runs of both are interleaved and the minimum of `repeats`
is taken (the machine may be shared: ratios are from one process, one run).

**First update.** In a fresh Python process (imports done, data made) the time of a 1-update
`fit` of the README's model (shPLRNN N = M = 3, L = 64, DEER, T = 200, batch 16) — cold
(an empty compilation cache) and warm (the same cache again, a new process).

**evaluate.** `dsr.metrics.evaluate` with its defaults on a 10,000-step 3-d test set.

Output: a table on stdout, `OUT/overhead.json` and `OUT/overhead.png`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import dsr
from benchmarks._common import environment, write_json

ALPHA, L, N, T, B, LR = 0.1, 64, 3, 200, 16, 1e-3


def lorenz_data(n: int = 20_000, dt: float = 0.01, seed: int = 0) -> np.ndarray:
    """A standardized Lorenz-63 orbit (RK4 in NumPy: no diffrax compile in the timings)."""
    def f(x):
        return np.array([10 * (x[1] - x[0]), x[0] * (28 - x[2]) - x[1],
                         x[0] * x[1] - 8 / 3 * x[2]])
    x = np.random.default_rng(seed).normal(size=3) + np.array([1.0, 1.0, 20.0])
    out = np.empty((n + 1000, 3))
    for i in range(n + 1000):
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[i] = x
    out = out[1000:]
    return ((out - out.mean(0)) / out.std(0)).astype(np.float32)


def optimizer() -> optax.GradientTransformation:
    """The optimizer both loops use (RAdam with clipping, as `fit`'s default, constant lr)."""
    return optax.chain(optax.clip_by_global_norm(10.0), optax.radam(LR))


def make_model(M: int, K: int):
    make = lambda k: dsr.ShPLRNN(N, M, L, key=k)  # noqa: E731
    return make(jax.random.key(0)) if K == 1 else dsr.ensemble(make, K, key=jax.random.key(0))


def solver_of(name: str):
    return dsr.Sequential() if name == "sequential" else dsr.DEER()


# ------------------------------------------------------------------ the hand-written loop


def reference_loop(model, data: np.ndarray, solver, opt, K: int, T: int = T, B: int = B,
                   dynamic: bool = False):
    """`run(n)`: n updates of every member by one jitted `lax.scan` (compiled per n), on
    batches of `B` windows of `T + 1` steps; `dynamic`: a `lax.fori_loop` whose length is an
    argument instead (one compilation for every n)."""
    data = jnp.asarray(data)
    starts = len(data) - T

    def loss(m, x):
        z, _ = dsr.gtf_forward(m, x, ALPHA, solver=solver)
        return jnp.mean((z @ m.B.T - x[:, 1:]) ** 2)

    def update(m, o, key):
        idx = jax.random.randint(key, (B,), 0, starts)
        x = data[idx[:, None] + jnp.arange(T + 1)]
        g = eqx.filter_grad(loss)(m, x)
        u, o = opt.update(g, o, eqx.filter(m, eqx.is_inexact_array))
        return eqx.apply_updates(m, u), o

    members = model.stacked if K > 1 else jax.tree_util.tree_map(
        lambda a: a[None] if eqx.is_array(a) else a, model)
    params, static = eqx.partition(members, eqx.is_array)
    opt0 = jax.vmap(lambda p: opt.init(eqx.filter(eqx.combine(p, static),
                                                  eqx.is_inexact_array)))(params)

    @eqx.filter_jit
    def train(params, opt_state, keys):
        def body(carry, ks):
            p, o = carry
            step = lambda pi, oi, k: update(eqx.combine(pi, static), oi, k)  # noqa: E731
            m, o = jax.vmap(step)(p, o, ks)
            return (eqx.filter(m, eqx.is_array), o), None
        return jax.lax.scan(body, (params, opt_state), keys)[0]

    @eqx.filter_jit
    def train_dynamic(params, opt_state, key, n):
        def body(i, carry):
            p, o = carry
            ks = jax.random.split(jax.random.fold_in(key, i), K)
            step = lambda pi, oi, k: update(eqx.combine(pi, static), oi, k)  # noqa: E731
            m, o = jax.vmap(step)(p, o, ks)
            return eqx.filter(m, eqx.is_array), o
        return jax.lax.fori_loop(0, n, body, (params, opt_state))

    def run(n: int):
        if dynamic:
            out = train_dynamic(params, opt0, jax.random.key(1), jnp.int32(n))
        else:
            out = train(params, opt0, jax.random.split(jax.random.key(1), (n, K)))
        jax.block_until_ready(out)
    return run


def fit_run(model, data, solver, opt):
    def run(n: int):
        res = dsr.fit(model, data, ALPHA, steps=n, seq_len=T, batch_size=B, solver=solver,
                      optimizer=opt, progress=False, monitor_every=0, key=jax.random.key(1))
        jax.block_until_ready(jax.tree_util.tree_leaves(res.model))
    return run


def per_update(runs: dict, n1: int, n2: int, repeats: int) -> dict:
    """Per-update seconds of each run, `(t(n2) − t(n1)) / (n2 − n1)`, minimum over repeats,
    the runs interleaved."""
    for run in runs.values():  # warm-up: compile both lengths
        run(n1)
        run(n2)
    times = {name: {n1: [], n2: []} for name in runs}
    for _ in range(repeats):
        for n in (n1, n2):
            for name, run in runs.items():
                t = time.perf_counter()
                run(n)
                times[name][n].append(time.perf_counter() - t)
    return {name: {"per_update_s": (min(t[n2]) - min(t[n1])) / (n2 - n1),
                   "raw": {str(k): v for k, v in t.items()}} for name, t in times.items()}


# ------------------------------------------------------------------ first update, evaluate

_FIRST = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import jax, dsr
    data = np.load(sys.argv[1])
    model = dsr.ShPLRNN(3, 3, 64, key=jax.random.key(0))
    t = time.perf_counter()
    first = []
    cb = lambda step, m: first.append(time.perf_counter() - t) or None
    dsr.fit(model, data, alpha=0.1, steps=1, seq_len=200, batch_size=16, learning_rate=2e-3,
            solver=dsr.DEER(), progress=False, callback=cb, eval_every=1)
    print(json.dumps({"first_update_s": first[0], "fit_s": time.perf_counter() - t}))
""")


def first_update(data: np.ndarray) -> dict:
    """Cold and warm time to the first update, each in a fresh process sharing one new,
    empty cache folder (`DSR_CACHE_DIR`)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npy")
        np.save(path, data)
        env = dict(os.environ, DSR_CACHE_DIR=os.path.join(tmp, "cache"))
        out = {}
        for name in ("cold", "warm"):
            p = subprocess.run([sys.executable, "-c", _FIRST, path], env=env, check=True,
                               capture_output=True, text=True)
            out[name] = json.loads(p.stdout.strip().splitlines()[-1])
        return out


def evaluate_time(data: np.ndarray, steps: int, keys: int = 5, paper: bool = True) -> dict:
    """`evaluate` on a 10,000-step test set, of a model trained `steps` updates: with its
    defaults (timed twice: the first call compiles; D_stsp with `keys` keys, its Monte-Carlo
    spread) and at the paper's scale (`dsr.metrics.PAPER_EVALUATION`, one key)."""
    model = dsr.ShPLRNN(3, 3, 64, key=jax.random.key(0))
    model = dsr.fit(model, data[:-10_000], ALPHA, steps=steps, seq_len=T, batch_size=B,
                    learning_rate=3e-3, progress=False).model
    test = data[-10_000:]

    def run(key, **kw):
        t = time.perf_counter()
        r = dsr.metrics.evaluate(model, test, key=jax.random.key(key), progress=False, **kw)
        return {"s": time.perf_counter() - t, "D_stsp": r["D_stsp"], "D_H": r["D_H"],
                "D_stsp_stderr": r["D_stsp_stderr"], "status": r["status"],
                "lambda_max": r["lambda_max"],
                "settings": {k: v for k, v in r["settings"].items()
                             if isinstance(v, (int, float, str)) or v is None}}
    out = {"defaults": [run(k) for k in range(keys)]}
    if paper:
        out["paper"] = run(0, **dsr.metrics.PAPER_EVALUATION)
    d = np.array([r["D_stsp"] for r in out["defaults"]])
    out["defaults_D_stsp"] = {"mean": float(d.mean()), "sd": float(d.std(ddof=1))}
    return out


# ------------------------------------------------------------------ output


def table(payload: dict) -> str:
    rows = ["| solver | K | M | minimal loop ms/update | dsr.fit ms/update | ratio |",
            "|---|---|---|---|---|---|"]
    for c in payload["records"]:
        ref, fit = c["reference"]["per_update_s"], c["fit"]["per_update_s"]
        rows.append(f"| {c['solver']} | {c['K']} | {c['M']} | {1e3 * ref:.2f} | "
                    f"{1e3 * fit:.2f} | {fit / ref:.2f}× |")
    f = payload.get("first_update")
    if f:
        rows.append("")
        rows.append(f"first update (README model, fresh process): cold "
                    f"{f['cold']['first_update_s']:.2f} s (whole 1-update fit "
                    f"{f['cold']['fit_s']:.2f} s), warm {f['warm']['first_update_s']:.2f} s "
                    f"({f['warm']['fit_s']:.2f} s)")
    e = payload.get("evaluate")
    if e:
        d = e["defaults"]
        p = e.get("paper") or {"s": float("nan"), "D_stsp": float("nan"),
                               "D_stsp_stderr": float("nan"), "settings": {"n_samples": "-"}}
        rows.append(f"evaluate, 10,000-step 3-d test set: defaults ({d[0]['settings']['n_samples']}"
                    f" samples, {d[0]['settings']['n_gen']}-step free run) first call "
                    f"{d[0]['s']:.2f} s, then {np.median([r['s'] for r in d[1:]]):.2f} s; "
                    f"paper scale ({p['settings']['n_samples']} samples) {p['s']:.2f} s")
        rows.append(f"D_stsp: defaults {e['defaults_D_stsp']['mean']:.4g} ± "
                    f"{e['defaults_D_stsp']['sd']:.2g} (sd over {len(d)} keys), paper scale "
                    f"{p['D_stsp']:.4g} ± {p['D_stsp_stderr']:.2g} (stderr)")
    return "\n".join(rows)


def figure(payload: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = payload["records"]
    labels = [f"{c['solver'][:3]} K={c['K']} M={c['M']}" for c in cases]
    ref = [1e3 * c["reference"]["per_update_s"] for c in cases]
    fit = [1e3 * c["fit"]["per_update_s"] for c in cases]
    x = np.arange(len(cases))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.bar(x - 0.2, ref, 0.4, label="minimal jitted loop")
    ax.bar(x + 0.2, fit, 0.4, label="dsr.fit")
    for i, (r, f) in enumerate(zip(ref, fit)):
        ax.text(i + 0.2, f, f"{f / r:.2f}×", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, labels, rotation=20, fontsize=8)
    ax.set_ylabel("ms per update")
    ax.set_title(f"per-update cost ({payload['environment']['backend']}; T={T}, B={B}, L={L})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help="K = 1 and M = 3 only, fewer updates (a smoke run)")
    p.add_argument("--out", default=os.path.join("results", "overhead"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-first", action="store_true", help="no first-update measurement")
    p.add_argument("--skip-evaluate", action="store_true", help="no evaluate measurement")
    a = p.parse_args(argv)
    data = lorenz_data(6_000 if a.quick else 30_000)
    n1, n2 = (10, 30) if a.quick else (100, 400)
    grid = [(s, K, M) for s in ("sequential", "deer") for K in (1, 8) for M in (3, 16)]
    if a.quick:
        grid = [(s, 1, 3) for s in ("sequential", "deer")]
    cases = []
    for s, K, M in grid:
        model, opt = make_model(M, K), optimizer()
        runs = {"reference": reference_loop(model, data, solver_of(s), opt, K),
                "fit": fit_run(model, data, solver_of(s), opt)}
        res = per_update(runs, n1, n2, a.repeats)
        cases.append(dict(solver=s, K=K, M=M, n1=n1, n2=n2, **res))
        r = res["fit"]["per_update_s"] / res["reference"]["per_update_s"]
        print(f"{s:10s} K={K} M={M:2d}: reference {1e3 * res['reference']['per_update_s']:.2f}"
              f" ms, fit {1e3 * res['fit']['per_update_s']:.2f} ms ({r:.2f}×)", flush=True)
    payload = {"benchmark": "overhead", "environment": environment(),
               "settings": dict(alpha=ALPHA, L=L, N=N, T=T, B=B, lr=LR, repeats=a.repeats,
                                n1=n1, n2=n2), "records": cases}
    if not a.skip_first:
        payload["first_update"] = first_update(data)
    if not a.skip_evaluate:
        payload["evaluate"] = evaluate_time(lorenz_data(30_000, seed=1), 50 if a.quick else 2000,
                                            keys=2 if a.quick else 5, paper=not a.quick)
    print(table(payload))
    write_json(a.out, "overhead", payload)
    figure(payload, os.path.join(a.out, "overhead.png"))
    return payload


if __name__ == "__main__":
    main()
