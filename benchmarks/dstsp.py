"""D_stsp estimators: time and accuracy at the paper's scale (Hess, Götz & Durstewitz (2026),
arXiv:2605.12683, App. G).

    python -m benchmarks.dstsp [--quick] [--collapsed] --out DIR

Cases: Lorenz-63 (d = 3) and the delay-embedded bursting neuron (2 observed variables,
m = 7, tau = 1024, d = 14), each with a "same" generated orbit (same system, other initial
condition: D ≈ 0) and a "model" orbit (perturbed parameter). For each case:

- at a size where brute force is feasible (T1 = 10^4, T2 = 3·10^4, n = 10^5): `exact` and the
  fast method, with the relative error of the fast value against the exact one;
- at full size (T1 = 10^5, T2 = 3·10^5, n = 10^6): the fast method, whose error against the
  (infeasible) brute force is estimated on every call by its control variate: `approx_stderr`
  is the standard error of the fast value as an estimate of the exact value for the same samples.

Writes DIR/dstsp.json and prints a table. Data are generated here (RK4 in JAX), independent of
`data_gen`.

`--collapsed`: instead, the orbits a failed model produces, against Lorenz-63 test data
(T1 = 10^5, T2 = 3·10^5, the default n = 10^6; `--quick`: T1 = 2·10^4): stuck at a fixed
point, on a period-5 cycle, converging to a fixed point (no two points identical), far off
(shifted by 50 standard deviations), and the binning estimator; wall time, value, status and
note of each. Writes DIR/dstsp_collapsed.json.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from dsr.metrics import state_space_divergence

from ._common import rk4_step
from ._json import write_json

jax.config.update("jax_enable_x64", True)

# --------------------------------------------------------------------------------------------
# systems
# --------------------------------------------------------------------------------------------

NEURON = dict(
    C=6.0, I=0.0, g_L=8.0, E_L=-80.0, g_Na=20.0, E_Na=60.0, Vh_Na=-20.0, k_Na=15.0,
    g_K=10.0, E_K=-90.0, Vh_K=-25.0, k_K=5.0, tau_n=1.0, g_M=25.0, Vh_M=-15.0, k_M=5.0,
    tau_h=200.0, g_NMDA=10.2, E_NMDA=0.0,
)  # fmt: skip


def _sig(v, vh, k):
    return 1.0 / (1.0 + jnp.exp((vh - v) / k))


def neuron_field(x, p):
    v, n, h = x[0], x[1], x[2]
    dv = (
        p["I"] - p["g_L"] * (v - p["E_L"])
        - p["g_Na"] * _sig(v, p["Vh_Na"], p["k_Na"]) * (v - p["E_Na"])
        - p["g_K"] * n * (v - p["E_K"]) - p["g_M"] * h * (v - p["E_K"])
        - p["g_NMDA"] / (1.0 + 0.33 * jnp.exp(-0.0625 * v)) * (v - p["E_NMDA"])
    ) / p["C"]  # fmt: skip
    return jnp.stack([dv, (_sig(v, p["Vh_K"], p["k_K"]) - n) / p["tau_n"],
                      (_sig(v, p["Vh_M"], p["k_M"]) - h) / p["tau_h"]])


def lorenz_field(x, p):
    return jnp.stack([p["sigma"] * (x[1] - x[0]), x[0] * (p["rho"] - x[2]) - x[1],
                      x[0] * x[1] - p["beta"] * x[2]])


def integrate(field, p, x0, dt, n, transient):
    f = lambda x: field(x, p)  # noqa: E731

    def step(x, _):
        x = rk4_step(f, x, dt)
        return x, x

    _, xs = jax.jit(lambda x: jax.lax.scan(step, x, None, length=n + transient))(
        jnp.asarray(x0, jnp.float64)
    )
    return np.asarray(xs[transient:])


def make_data(T1_full: int):
    T2_full = 3 * T1_full
    lor = dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0)
    data = {}
    data["lorenz63"] = dict(
        true=integrate(lorenz_field, lor, (1.0, 1.0, 1.0), 0.01, T1_full, 1_000),
        same=integrate(lorenz_field, lor, (-3.0, 2.0, 20.0), 0.01, T2_full, 1_000),
        model=integrate(lorenz_field, {**lor, "rho": 30.0}, (-3.0, 2.0, 20.0), 0.01, T2_full,
                        1_000),
        embedding=None, note="Lorenz-63, dt=0.01; model: rho=30",
    )
    w = 6 * 1024
    obs = lambda x: x[:, :2]  # noqa: E731  (V, n): h is not observed
    data["neuron_DE"] = dict(
        true=obs(integrate(neuron_field, NEURON, (-24.4694, 0.0386, 0.0231), 0.025, T1_full + w,
                           40_000)),
        same=obs(integrate(neuron_field, NEURON, (-40.0, 0.05, 0.03), 0.025, T2_full + w, 40_000)),
        embedding=(7, 1024),
        note=("bursting neuron (V, n), dt=0.025, DE m=7 tau=1024; model: the 'same' orbit with "
              "a smooth amplitude error (V scaled by 1.1 about its mean, n shifted by 0.05 std); "
              "a parameter change moves the bursting cycle off the true one entirely (D ~ 20)"),
    )  # fmt: skip
    same = data["neuron_DE"]["same"]
    mean, sd = same.mean(0), same.std(0)
    model = same.copy()
    model[:, 0] = mean[0] + 1.1 * (same[:, 0] - mean[0])
    model[:, 1] = same[:, 1] + 0.05 * sd[1]
    data["neuron_DE"]["model"] = model
    return data


# --------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------


def run_one(case, d, kind, x_true, x_gen, T1, n, method, embedding, key):
    w = 0 if embedding is None else (embedding[0] - 1) * embedding[1]
    xt, xg = x_true[: T1 + w], x_gen[: 3 * T1 + w]
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = state_space_divergence(xt, xg, n_samples=n, key=key, method=method, embedding=embedding,
                                 progress=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return dict(case=case, d=d, orbit=kind, method=res.method, T1=T1, T2=3 * T1, n=n,
                time_s=wall, cpu_s=cpu, value=res.value, stderr=res.stderr,
                approx_stderr=res.approx_stderr, n_check=res.n_check)


def collapsed_orbits(x: np.ndarray, T2: int) -> dict:
    """Generated orbits of failed models, against the true orbit `x`."""
    lor = dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0)
    fp = np.array([6 * np.sqrt(2), 6 * np.sqrt(2), 27.0], np.float32).astype(np.float64)
    rng = np.random.default_rng(0)
    return {
        "fixed_point": np.tile(fp, (T2, 1)),
        "cycle_5": np.tile(x[::997][:5].astype(np.float32).astype(np.float64), (T2 // 5, 1)),
        "converging": fp + 1e-6 * rng.normal(size=(T2, 3)) * np.exp(-np.arange(T2) / T2)[:, None],
        "far_off": integrate(lorenz_field, lor, (-3.0, 2.0, 20.0), 0.01, T2, 1_000)
        + 50 * x.std(0),
    }


def run_collapsed(args, out: pathlib.Path) -> None:
    T1 = 20_000 if args.quick else 100_000
    lor = dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0)
    x = integrate(lorenz_field, lor, (1.0, 1.0, 1.0), 0.01, T1, 1_000)
    rows = []
    runs = [(k, y, "auto") for k, y in collapsed_orbits(x, 3 * T1).items()]
    runs.append(("fixed_point", runs[0][1], "bins"))
    for kind, y, method in runs:
        t0 = time.perf_counter()
        res = state_space_divergence(x, y, key=jax.random.key(0), method=method, progress=False)
        wall = time.perf_counter() - t0
        rows.append(dict(orbit=kind, T1=T1, T2=len(y), n=res.n_samples, method=res.method,
                         wall_s=wall, value=res.value, stderr=res.stderr, n_check=res.n_check,
                         status=res.status, note=res.note))
        print(f"{kind:12s} {res.method:9s} {wall:8.1f} s  D = {res.value:10.4f} ± "
              f"{res.stderr:.2e}  {res.status}  {res.note}", flush=True)
    meta = dict(quick=args.quick, cpu_count=os.cpu_count(), loadavg=os.getloadavg(),
                jax=jax.__version__, platform=platform.platform())
    write_json(out / "dstsp_collapsed.json", dict(meta=meta, rows=rows), indent=2, default=float)
    print(f"\nwrote {out / 'dstsp_collapsed.json'}  (load average {meta['loadavg'][0]:.1f})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    ap.add_argument("--collapsed", action="store_true",
                    help="orbits of failed models (fixed point, cycle, far off): time bounds")
    ap.add_argument("--out", default="results/dstsp")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.collapsed:
        return run_collapsed(args, out)

    if args.quick:
        small, full = (2_000, 20_000), (20_000, 200_000)
    else:
        small, full = (10_000, 100_000), (100_000, 1_000_000)
    data = make_data(full[0])
    key = jax.random.key(0)
    rows = []
    print(f"{'case':10s} {'d':>3s} {'orbit':6s} {'method':10s} {'T1':>7s} {'T2':>7s} {'n':>8s} "
          f"{'time[s]':>8s} {'value':>11s} {'stderr':>9s} {'approx_se':>9s} {'rel.err':>10s}")

    def show(r, rel, est=False):
        rel_s = "—" if rel is None else (f"~{rel:.2%}" if est else f"{rel:+.3%}")
        print(f"{r['case']:10s} {r['d']:3d} {r['orbit']:6s} {r['method']:10s} {r['T1']:7d} "
              f"{r['T2']:7d} {r['n']:8d} {r['time_s']:8.1f} {r['value']:11.6f} {r['stderr']:9.2e} "
              f"{r['approx_stderr']:9.2e} {rel_s:>10s}", flush=True)

    for case, dd in data.items():
        emb = dd["embedding"]
        d = 3 if emb is None else 2 * emb[0]
        fast = "grid" if d <= 3 else "subsample"
        for kind in ("same", "model"):
            # feasible size: exact reference and the fast method on the same samples
            T1, n = small
            ex = run_one(case, d, kind, dd["true"], dd[kind], T1, n, "exact", emb, key)
            show(ex, None)
            fa = run_one(case, d, kind, dd["true"], dd[kind], T1, n, fast, emb, key)
            fa["rel_err_vs_exact"] = (fa["value"] - ex["value"]) / abs(ex["value"])
            fa["abs_err_vs_exact"] = fa["value"] - ex["value"]
            fa["exact_value"] = ex["value"]
            show(fa, fa["rel_err_vs_exact"])
            rows += [ex, fa]
            # full size: fast only; error vs the brute force estimated by the control variate
            T1, n = full
            fu = run_one(case, d, kind, dd["true"], dd[kind], T1, n, fast, emb, key)
            fu["est_rel_err_1sigma"] = fu["approx_stderr"] / abs(fu["value"])
            fu["exact_pairs"] = float(n) * 4 * T1
            show(fu, fu["est_rel_err_1sigma"], est=True)
            rows.append(fu)

    meta = dict(
        quick=args.quick, cpu_count=os.cpu_count(), platform=platform.platform(),
        jax=jax.__version__, loadavg=os.getloadavg(),
        note=("rel.err: fast vs exact for the same samples; '~x%' at full size is "
              "approx_stderr/value, the control variate's estimate (1 sigma) of the error vs the "
              "infeasible brute force. "
              "stderr is the total Monte-Carlo standard error of D_stsp."),
        cases={k: v["note"] for k, v in data.items()},
    )
    write_json(out / "dstsp.json", dict(meta=meta, rows=rows), indent=2, default=float)
    print(f"\nwrote {out / 'dstsp.json'}  (load average {meta['loadavg'][0]:.1f} on "
          f"{meta['cpu_count']} cores)")
    if any(not math.isfinite(r["value"]) for r in rows):
        raise SystemExit("non-finite D_stsp")


if __name__ == "__main__":
    main()
