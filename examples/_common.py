"""Shared helpers of the example scripts: command line, table, plot and JSON output."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax
import numpy as np

import dsr


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    """`--quick`, `--out results/examples/<name>`, `--seed`; the caller adds its own options."""
    p = argparse.ArgumentParser(prog=f"python -m examples.{name}", description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny run (≤ 40 s) to check the script")
    p.add_argument("--out", default=os.path.join("results", "examples", name))
    p.add_argument("--seed", type=int, default=0)
    return p


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
                   environment={"backend": jax.default_backend(), "device": str(jax.devices()[0]),
                                "cpu_count": os.cpu_count(), "jax": jax.__version__,
                                "dsr": dsr.__version__, "platform": platform.platform()})
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, default=json_default)


def json_default(o):
    """numpy scalars and arrays as JSON numbers and lists; anything else as its str."""
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
