"""The accelerator run, prepared for the day a device is lent: ``python -m benchmarks.device``.

One call, under 8 minutes on a GPU, of

1. the training-step grid of `benchmarks.runtime` (M = 4, 16, 64; T = 1,024 … 32,768;
   sequential BPTT, GTF-DEER with the associative and with the chunked scan, quasi-DEER),
2. the scan-method comparison of `benchmarks.scan` with both associative combines
   (`--combine`), from which it derives the `_auto.AUTO_TABLE` entry for this backend,
3. `benchmarks.ensemble`, if that module exists (in a subprocess with the time left),

each part stopping at its deadline (what was not reached is listed as skipped). Writes
``DIR/device.json`` (environment, the headline speedup at M = 4, T = 32,768 next to the
paper's 870×, the suggested auto-table entry, where each part's JSON lies),
``DIR/device.png`` (speedup over sequential against T), each part's own JSON and PNG in
``DIR/runtime``, ``DIR/scan``, ``DIR/ensemble``, and prints the tables. ``--quick`` runs a tiny
grid (a minute on a CPU) to check the script itself.
"""

from __future__ import annotations

import os

# The ensemble part runs in a subprocess that needs device memory too.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from . import _common as C  # noqa: E402
from . import runtime, scan  # noqa: E402

PAPER_SPEEDUP = 870.0  # Hess et al. (2026) Fig. 1A: M = 4, T = 32,768, RTX 6000 Blackwell
METHODS = ("sequential", "deer_associative", "deer_chunked", "quasi")


def _grids(quick: bool) -> dict:
    if quick:
        return dict(runtime=dict(T=[64], M=[2], methods=list(METHODS), repeats=2, train_steps=0,
                                 budget_s=2.0, max_call_s=30.0),
                    scan=dict(T=[40], M=[2], repeats=2, budget_s=2.0),
                    deadlines=(240.0, 330.0, 400.0))  # fmt: skip
    return dict(runtime=dict(T=[1024, 4096, 16384, 32768], M=[4, 16, 64], methods=list(METHODS),
                             repeats=5, train_steps=100, budget_s=3.0, max_call_s=8.0),
                scan=dict(T=[1024, 32768], M=[4, 16, 64], repeats=5, budget_s=2.0),
                deadlines=(270.0, 390.0, 450.0))  # fmt: skip


def _ensemble(out: Path, quick: bool, seconds: float) -> dict:
    if importlib.util.find_spec("benchmarks.ensemble") is None:
        return dict(status="skipped", reason="benchmarks.ensemble does not exist")
    if seconds < 20:
        return dict(status="skipped", reason=f"only {seconds:.0f} s left")
    cmd = [sys.executable, "-m", "benchmarks.ensemble", "--out", str(out / "ensemble")]
    cmd += ["--quick"] if quick else []
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired as e:
        return dict(status="timeout", seconds=seconds, stdout=(e.stdout or "")[-4000:])
    return dict(status="ok" if done.returncode == 0 else f"exit {done.returncode}",
                command=" ".join(cmd), stdout=done.stdout[-6000:], stderr=done.stderr[-3000:])


def headline(rt: dict) -> dict:
    """Speedup of GTF-DEER (associative) over sequential BPTT at M = 4 and the largest T."""
    idx = {(r["method"], r["M"], r["T"]): r["median_s"] for r in rt["records"]}
    T = max(rt["settings"]["T"])
    M = 4 if 4 in rt["settings"]["M"] else min(rt["settings"]["M"])
    seq, deer = idx.get(("sequential", M, T)), idx.get(("deer_associative", M, T))
    return dict(M=M, T=T, sequential_s=seq, deer_s=deer, paper_speedup=PAPER_SPEEDUP,
                speedup=None if not (seq and deer) else seq / deer)  # fmt: skip


def plot(rt: dict, out: Path) -> None:
    """Speedup over sequential BPTT against T, per M and parallel method."""
    idx = {(r["method"], r["M"], r["T"]): r["median_s"] for r in rt["records"]}
    fig, (ax,) = C.new_figure(1, width=5.5)
    marks = dict(deer_associative="s", deer_chunked="v", quasi="^")
    for i, m in enumerate(rt["settings"]["M"]):
        for method, mk in marks.items():
            pts = [(t, idx[("sequential", m, t)] / idx[(method, m, t)]) for t in rt["settings"]["T"]
                   if (method, m, t) in idx and ("sequential", m, t) in idx]  # fmt: skip
            if pts:
                ax.loglog(*zip(*pts), "-", marker=mk, ms=4, color=f"C{i}", label=f"{method}, M={m}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(PAPER_SPEEDUP, color="k", lw=0.6, ls=":", label="paper, M=4, T=32,768")
    C.log2_axis(ax, rt["settings"]["T"])
    env = rt["environment"]
    ax.set_title(f"GTF training step, speedup over BPTT ({env['device_kind'] or env['device']})",
                 fontsize=9)  # fmt: skip
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("t_sequential / t_method")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    C.save_figure(fig, out, "device")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.device", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny grid: checks the script (CPU)")
    p.add_argument("--out", default="results/device", help="output folder")
    a = p.parse_args(argv)
    out, start = Path(a.out), time.perf_counter()
    g = _grids(a.quick)
    d_runtime, d_scan, d_all = (start + d for d in g["deadlines"])
    rt = runtime.run(**g["runtime"], out=out / "runtime", deadline=d_runtime)
    sc = scan.run(**g["scan"], combine=True, out=out / "scan", deadline=d_scan)
    ens = _ensemble(out, a.quick, d_all - time.perf_counter())
    entry = scan.suggested_entry(sc)
    payload = dict(benchmark="device", environment=C.environment(), headline=headline(rt),
                   suggested_auto_entry=entry, ensemble=ens,
                   parts=dict(runtime=str(out / "runtime" / "runtime.json"),
                              scan=str(out / "scan" / "scan.json")),
                   skipped=dict(runtime=rt["skipped"], scan=sc["skipped"]),
                   wall_s=time.perf_counter() - start)  # fmt: skip
    C.write_json(out, "device", payload)
    plot(rt, out)
    print("\n" + runtime.table(rt) + "\n\n" + scan.table(sc))
    h = payload["headline"]
    if h["speedup"]:
        print(f"\nM = {h['M']}, T = {h['T']}: GTF-DEER {h['speedup']:.1f}× faster than sequential "
              f"BPTT (paper: {PAPER_SPEEDUP:.0f}×)")
    print(f"ensemble: {ens['status']}" + (f" ({ens.get('reason')})" if ens.get("reason") else ""))
    print("\nsuggested dsr/_auto.py AUTO_TABLE entry for this backend:\n"
          + json.dumps({C.environment()["backend"]: entry}, indent=1))  # fmt: skip
    print(f"\nwrote {out}/device.json and {out}/device.png in {payload['wall_s']:.0f} s")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
