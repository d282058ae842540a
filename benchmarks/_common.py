"""Shared pieces of the benchmarks: environment record, timing, data, a trained model, output.

Timing rule (every benchmark): each case is jitted and compiled ahead of time
(`jax.jit(f).lower(*args).compile()`, compile time recorded but excluded), called once to
warm up, then all cases of one grid cell are timed *interleaved* (`case1, case2, …, case1,
case2, …`) so that load from other processes hits them alike; the statistic is the median.
Every raw timing goes into the JSON.
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import _json

import jax
import numpy as np


# ------------------------------------------------------------------------------ environment


def environment() -> dict:
    """Device, backend and versions: what a reader needs to compare numbers across machines."""
    import equinox
    import jaxlib

    import dsr

    dev = jax.devices()[0]
    return {
        "backend": jax.default_backend(),
        "device": str(dev),
        "device_kind": getattr(dev, "device_kind", ""),
        "device_count": jax.device_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "equinox": equinox.__version__,
        "numpy": np.__version__,
        "dsr": getattr(dsr, "__version__", "?"),
        "x64": bool(jax.config.jax_enable_x64),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# ------------------------------------------------------------------------------ timing


def compile_fn(fn: Callable, *args) -> tuple[Callable, float, dict]:
    """`jax.jit(fn)` compiled for `args`: `(compiled, compile_seconds, memory)`.

    `memory` is the compiled executable's memory analysis (bytes of temporaries, arguments,
    outputs; available on CPU and GPU) plus, where the device reports it, its current peak.
    """
    t = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t
    return compiled, compile_s, memory_of(compiled)


def memory_of(compiled) -> dict:
    out = {}
    try:
        m = compiled.memory_analysis()
        for k in ("temp_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
                  "generated_code_size_in_bytes"):  # fmt: skip
            v = getattr(m, k, None)
            if v is not None:
                out[k.replace("_size_in_bytes", "_bytes")] = int(v)
    except Exception:  # not every backend implements it
        pass
    return out


def device_peak_bytes() -> int | None:
    """The device allocator's peak (GPU/TPU; monotone over the process), else None."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:
        return None
    return None if not stats else int(stats.get("peak_bytes_in_use", 0)) or None


def _call(fn, args):
    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t


def time_interleaved(cases: dict[str, tuple[Callable, tuple]], repeats: int,
                     budget_s: float | None = None) -> dict[str, list[float]]:  # fmt: skip
    """Seconds per call of every case, interleaved round by round, after one warm-up call each.

    `cases` maps a name to `(compiled_fn, args)`. With `budget_s`, stops after the round in
    which the budget ran out (at least 3 rounds), so a slow cell cannot stall a grid.
    """
    for fn, args in cases.values():
        jax.block_until_ready(fn(*args))  # warm-up (allocations, caches)
    times: dict[str, list[float]] = {k: [] for k in cases}
    start = time.perf_counter()
    for r in range(repeats):
        for k, (fn, args) in cases.items():
            times[k].append(_call(fn, args))
        if budget_s is not None and r >= 2 and time.perf_counter() - start > budget_s:
            break
    return times


def median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs)))


# ------------------------------------------------------------------------------ data, model


def rk4_step(f, x, dt):
    """One classical RK4 step of `ẋ = f(x)` (NumPy or JAX arrays alike): the benchmarks' one
    reference integrator."""
    k1 = f(x)
    k2 = f(x + dt / 2 * k1)
    k3 = f(x + dt / 2 * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def lorenz63(n: int, *, dt: float = 0.01, transient: int = 1000, x0=(1.0, 1.0, 1.0),
             dtype=np.float32) -> np.ndarray:  # fmt: skip
    """`n` samples of Lorenz-63 (σ=10, ρ=28, β=8/3) by RK4 at step `dt`, standardized."""

    def f(x):
        return np.array([10.0 * (x[1] - x[0]), x[0] * (28.0 - x[2]) - x[1],
                         x[0] * x[1] - 8.0 / 3.0 * x[2]])

    x = np.asarray(x0, np.float64)
    out = np.empty((n, 3))
    for i in range(transient + n):
        x = rk4_step(f, x, dt)
        if i >= transient:
            out[i - transient] = x
    return ((out - out.mean(0)) / out.std(0)).astype(dtype)


def trained_shplrnn(data: np.ndarray, latent_dim: int, *, hidden_dim: int = 50, steps: int = 300,
                    seq_len: int = 128, batch_size: int = 16, alpha: float = 0.15,
                    learning_rate: float = 2e-3, seed: int = 0):  # fmt: skip
    """A shPLRNN briefly trained on `data` by `dsr.fit` (GTF, α fixed). Returns
    `(model, info dict)`.

    The benchmarks need a model with non-trivial dynamics (DEER's iteration count depends on
    them, Hess et al. (2026) App. H.1), not a good one: a few hundred steps suffice.
    """
    import dsr

    model = dsr.ShPLRNN(data.shape[-1], latent_dim, hidden_dim, key=jax.random.key(seed))
    t = time.perf_counter()
    result = dsr.fit(model, data, alpha, steps=steps, seq_len=seq_len, batch_size=batch_size,
                     learning_rate=learning_rate, solver="auto", key=jax.random.key(seed),
                     progress=False)  # fmt: skip
    losses = [float(v) for v in np.asarray(result.history["loss"]).ravel()]
    info = dict(steps=steps, seq_len=seq_len, batch_size=batch_size, alpha=alpha,
                learning_rate=learning_rate, hidden_dim=hidden_dim, seed=seed, trainer="dsr.fit",
                first_loss=losses[0] if losses else None,
                final_loss=float(np.mean(losses[-10:])) if losses else None,
                train_s=time.perf_counter() - t)  # fmt: skip
    return result.model, info


# ------------------------------------------------------------------------------ output


def write_json(out: str | os.PathLike, name: str, payload: dict) -> Path:
    """`OUT/NAME.json`, by the benchmarks' one JSON writer (`_json.py`)."""
    return _json.write_json(Path(out) / f"{name}.json", payload)


def new_figure(ncols: int, *, width: float = 4.2, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def log2_axis(ax, ticks: Sequence[int]) -> None:
    """Log-2 x axis labelled with the plain values (128, 512, …)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(ticks)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(t) for t in ticks], rotation=45, fontsize=7)


def save_figure(fig, out: str | os.PathLike, name: str) -> Path:
    import matplotlib.pyplot as plt

    path = Path(out) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_s(s: float | None) -> str:
    """Seconds as a short human string (µs / ms / s)."""
    if s is None or not np.isfinite(s):
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def powers_of_two(lo: int, hi: int) -> list[int]:
    out, t = [], lo
    while t <= hi:
        out.append(t)
        t *= 2
    return out
