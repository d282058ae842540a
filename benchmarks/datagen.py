"""Time the paper-size data generation with diffrax vs scipy ``solve_ivp``.

The data sets are those of Hess, Götz, Durstewitz (2026), "Parallel-in-Time Training of Recurrent
Neural Networks for Dynamical Systems Reconstruction", arXiv:2605.12683, App. F, plus the
short-period forced Lorenz-96 preset.

``python -m benchmarks.datagen [--quick] --out DIR`` prints a markdown table and writes
``DIR/datagen.json``. Both integrate the same two trajectories (train, test: same x0, t0,
transient and sample times) in float64 with an adaptive Runge–Kutta 4/5 pair at the same
tolerances (diffrax Tsit5 + PID controller, jitted and vmapped; scipy RK45 with ``t_eval``).
"diffrax" (best of two warm runs) includes noise and standardization, without progress bar;
"first" includes JIT compilation; scipy is timed once.
The last column is how long (from t0) the two solutions stay within 1% of the signal's std: the
whole run for the bursting neuron, a few Lyapunov times for the chaotic systems.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import data_gen
from data_gen import SYSTEMS

from ._json import write_json

CASES = [("lorenz63", {}), ("lorenz96", {"preset": "paper"}),
         ("lorenz96", {"preset": "short_period"}), ("bursting_neuron", {"preset": "standard"}),
         ("bursting_neuron", {"preset": "slow"})]  # fmt: skip


def _scipy(ds):
    m, s = ds.meta, SYSTEMS[ds.meta["system"]]
    f = lambda t, x: s.field(t, x, m["params"], xp=np)  # noqa: E731
    out = []
    for b in range(2):
        ts = m["t0"][b] + ds.dt * np.arange(m["transient"], m["transient"] + m["n_steps"])
        sol = solve_ivp(f, (m["t0"][b], ts[-1]), m["x0"][b], method="RK45", t_eval=ts,
                        rtol=m["rtol"], atol=m["atol"])  # fmt: skip
        out.append(sol.y.T)
    return np.stack(out)


def run(quick=False, rtol=1e-8, atol=1e-10):
    rows = []
    for name, kw in CASES:
        n = SYSTEMS[name].n_steps // (20 if quick else 1)
        tr = SYSTEMS[name].transient // (20 if quick else 1)
        kw = dict(kw, n_steps=n, transient=tr, rtol=rtol, atol=atol, progress=False)
        t = time.perf_counter()
        data_gen.generate(name, **kw)
        first = time.perf_counter() - t
        warm = math.inf
        for _ in range(2):  # best of two warm runs (the machine may be shared)
            t = time.perf_counter()
            ds = data_gen.generate(name, **kw)
            warm = min(warm, time.perf_counter() - t)
        t = time.perf_counter()
        ref = _scipy(ds)
        sp = time.perf_counter() - t
        obs = ds.meta["observed"]
        ref = ref[1][:, obs]  # the test trajectory is clean: compare it with scipy's
        dev = np.abs(ds.destandardize(ds.test) - ref).max(1) / ref.std(0).max()
        bad = np.flatnonzero(dev > 1e-2)  # chaotic systems: the two solvers decorrelate
        horizon = (tr + (bad[0] if len(bad) else n)) * ds.dt
        label = name + (f" ({kw['preset']})" if "preset" in kw else "")
        rows.append(dict(system=label, n_steps=n, transient=tr, dt=ds.dt, trajectories=2,
                         diffrax_first_s=first, diffrax_s=warm, scipy_rk45_s=sp,
                         speedup=sp / warm, agree_until=horizon, agree_all=not len(bad),
                         interburst_gap_steps=ds.meta.get("interburst_gap_steps")))  # fmt: skip
        print(f"{label}: diffrax {warm:.2f} s (first {first:.2f} s), scipy {sp:.2f} s", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.datagen", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="1/20 of the paper lengths")
    ap.add_argument("--out", default="results/datagen")
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--atol", type=float, default=1e-10)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = run(a.quick, a.rtol, a.atol)
    head = (
        "| system | steps kept (+transient) | Δt | diffrax Tsit5 [s] | first call incl. JIT [s] "
        "| scipy RK45 [s] | speedup | diffrax ≈ scipy (1%) up to t − t0 |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        agree = "whole run" if r["agree_all"] else f"{r['agree_until']:.1f} time units"
        lines.append(
            f"| {r['system']} | {r['n_steps']:,} (+{r['transient']:,}) | {r['dt']} "
            f"| {r['diffrax_s']:.2f} | {r['diffrax_first_s']:.2f} | {r['scipy_rk45_s']:.2f} "
            f"| {r['speedup']:.1f}× | {agree} |"
        )
    print("\n".join(lines))
    versions = {k: _v(k) for k in ("jax", "diffrax", "scipy", "numpy")}
    info = dict(quick=a.quick, rtol=a.rtol, atol=a.atol, cpus=os.cpu_count(), rows=rows,
                machine=platform.processor() or platform.machine(), versions=versions)  # fmt: skip
    write_json(out / "datagen.json", info, indent=2)
    print(f"wrote {out / 'datagen.json'}")


def _v(pkg):
    from importlib.metadata import version

    return version(pkg)


if __name__ == "__main__":
    main()
