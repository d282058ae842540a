"""Shared helpers of the example scripts: command line, evaluation, table, plot and JSON output."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import dsr
from dsr.metrics import rmse_n, state_space_divergence


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    """`--quick`, `--out results/examples/<name>`, `--seed`; the caller adds its own options."""
    p = argparse.ArgumentParser(prog=f"python -m examples.{name}", description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny run (≤ 40 s) to check the script")
    p.add_argument("--out", default=os.path.join("results", "examples", name))
    p.add_argument("--seed", type=int, default=0)
    return p


def fit_summary(res: dsr.FitResult) -> dict:
    """Training statistics of one `dsr.fit` run (the loss is averaged over the last 10%)."""
    h = res.history
    tail = max(1, len(h["loss"]) // 10)
    return {
        "final_loss": float(np.mean(h["loss"][-tail:])),
        "newton_iters_median": float(np.median(h["newton_iters"])),
        "newton_iters_max": int(np.max(h["newton_iters"])),
        "fallback_frac": float(np.mean(h["fallback"])),
        "skipped_frac": float(np.mean(~h["applied"].astype(bool))),
        "train_s": float(np.sum(h["wall_time"])),
        "step_s_median": float(np.median(h["wall_time"][1:])) if len(h["wall_time"]) > 1 else None,
    }


def evaluate(model, x_test, *, key, embedding, n_samples, warmup=512, n_rmse=128,
             gen_factor=3) -> tuple[dict, np.ndarray]:
    """D_stsp^DE and RMSE(n) (App. G): warm up on `x_test[:warmup]`, generate `gen_factor ×`
    the test length, compare with the whole test orbit. Returns (measures, generated orbit)."""
    x = np.asarray(x_test)
    k1, k2 = jax.random.split(key)
    x_gen = np.asarray(dsr.generate(model, gen_factor * len(x), context=jnp.asarray(x[:warmup])),
                       np.float64)
    with warnings.catch_warnings():  # a diverged orbit gives D_stsp = inf with a RuntimeWarning
        warnings.simplefilter("ignore", RuntimeWarning)
        d = state_space_divergence(x, x_gen, embedding=embedding, n_samples=n_samples, key=k1)
        rmse = rmse_n(model, x, n_rmse, warmup=warmup, key=k2)
    return {"D_stsp": float(d.value), "D_stsp_stderr": float(d.stderr), f"RMSE_{n_rmse}": rmse,
            "diverged": not bool(np.all(np.isfinite(x_gen)))}, x_gen


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table of `rows` (dicts) restricted to `columns`."""
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.3g}" if (np.isfinite(v) and abs(v) >= 1e-3) or v == 0 else f"{v:.2e}"
        return str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_json(path: str, payload: dict, t_start: float) -> None:
    """`payload` plus runtime and environment, to `path`."""
    payload = dict(payload, runtime_s=time.perf_counter() - t_start,
                   environment={"backend": jax.default_backend(), "cpu_count": os.cpu_count(),
                                "jax": jax.__version__, "platform": platform.platform()})
    with open(path, "w") as f:
        json.dump(payload, f, indent=2, default=_json_default)


def _json_default(o):
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
