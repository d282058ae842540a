"""Shared machinery of the paper-findings scripts (fig2_jacobians, fig3a_seq_len,
fig3b_models): train one ensemble per setting, evaluate every member, write one record per
member, summarize by median ± MAD, and draw the paper's panel layout.

Every member is reported; a member whose free-running orbit diverges gets D = inf and
`"diverged": true` (it is counted, never dropped). MAD is the median absolute deviation from
the median, over all members (inf when more than half diverged).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import warnings
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import dsr
from dsr.metrics import median_mad, rmse_n, state_space_divergence
from examples._common import json_default, pyplot, write_json

__all__ = ["pyplot", "state_space_divergence"]  # used by the scripts through this module

MODES = ("quick", "cpu", "paper")
_REDRAW = [False]  # set by `settings(args, ...)`: `cached` then never trains


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m examples.{name}",
                                description=doc.strip().splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="a few minutes: checks the pipeline")
    g.add_argument("--paper", action="store_true", help="the paper's settings (needs a GPU)")
    p.add_argument("--out", default=os.path.join("results", "findings", name))
    p.add_argument("--members", type=int, default=None, help="members K per setting")
    p.add_argument("--steps", type=int, default=None, help="updates per member")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--redraw", action="store_true",
                   help="redraw the tables and pictures from the records kept under --out "
                        "(parts/) without training; fails naming the first setting not kept")
    return p


def mode(args) -> str:
    return "quick" if args.quick else "paper" if args.paper else "cpu"


def cached(out: str, tag: str, settings: dict, compute: Callable[..., tuple[list, dict]],
           *args):
    """`compute(*args) -> (records, arrays)` for one setting, done once: the result is kept under
    `out/parts/` with a hash of `settings`, so a rerun with the same `--out` and settings
    (after an interruption, or to redraw) starts at the first setting not yet finished.
    `compute` gets `checkpoint=`, a file for `train` under `out/parts/` named with that hash:
    an interrupted setting resumes from its last checkpoint (deleted once it is done)."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    stem = os.path.join(out, "parts", f"{tag.replace(' ', '_').replace('=', '')}")
    if os.path.exists(stem + ".json") and os.path.exists(stem + ".npz"):
        with open(stem + ".json") as f:
            saved = json.load(f)
        if saved.get("settings_sha256") == digest.hexdigest():
            with np.load(stem + ".npz") as z:
                return saved["records"], {k: z[k] for k in z.files}
    if _REDRAW[0]:
        raise SystemExit(f"--redraw: no record of setting {tag!r} with these settings under "
                         f"{os.path.join(out, 'parts')} (run without --redraw to train it)")
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    checkpoint = f"{stem}.{digest.hexdigest()[:12]}.ckpt"
    records, arrays = compute(*args, checkpoint=checkpoint)
    np.savez_compressed(stem + ".tmp.npz", **arrays)
    os.replace(stem + ".tmp.npz", stem + ".npz")
    with open(stem + ".tmp", "w") as f:
        json.dump({"settings_sha256": digest.hexdigest(), "records": records}, f,
                  default=json_default)
    os.replace(stem + ".tmp", stem + ".json")
    for leftover in (checkpoint, checkpoint + ".history"):
        if os.path.exists(leftover):
            os.remove(leftover)
    return records, arrays


def settings(args, table: dict) -> dict:
    """The mode's settings from `table`, with `--members` and `--steps` applied."""
    _REDRAW[0] = bool(getattr(args, "redraw", False))
    s = dict(table[mode(args)])
    s["K"] = args.members or s["K"]
    s["steps"] = args.steps or s["steps"]
    return s


def save_figure(fig, path: str, suptitle: str | None = None) -> None:
    """Lay out and save `fig`; `suptitle` goes in a strip of its own above the panels (a plain
    `fig.suptitle` before `tight_layout` would overlap the top row's titles)."""
    top = 1.0
    if suptitle:
        h = fig.get_figheight()  # inches: the strip is ~0.35 in whatever the figure's height
        fig.suptitle(suptitle, fontsize=9, y=1 - 0.08 / h, va="top")
        top = 1 - 0.35 / h
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110)
    pyplot().close(fig)




def train(make: Callable, K: int, data, key, checkpoint: str | None = None,
          **fit_kw) -> dsr.FitResult:
    """One ensemble of K members `make(k)`, trained in one vmapped `dsr.fit`; with
    `checkpoint`, saved there every 500 updates and resumed from it if it exists."""
    k_init, k_fit = jax.random.split(key)
    ens = dsr.ensemble(make, K, key=k_init)
    resume = checkpoint if checkpoint is not None and os.path.exists(checkpoint) else None
    if resume:
        print(f"  resuming from {checkpoint}", flush=True)
    with warnings.catch_warnings():  # free-run warnings are recorded in the records instead
        warnings.simplefilter("ignore", UserWarning)
        return dsr.fit(ens, data, key=k_fit, progress=False, checkpoint=checkpoint,
                       checkpoint_every=500, resume=resume, **fit_kw)


def generate_members(ens: dsr.Ensemble, context: np.ndarray, n: int):
    """Free runs of every member `(K, n, N)` and their latents `(K, n, M)` (float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        x, z = dsr.generate(ens, n, context=jnp.asarray(context), return_latents=True)
    return np.asarray(x, np.float64), np.asarray(z, np.float64)


def evaluate_member(model, x_gen, test, *, embedding, n_samples, context, key) -> dict:
    """D_stsp (delay-embedded if `embedding`) of a generated orbit and RMSE(128)."""
    k1, k2 = jax.random.split(key)
    diverged = not bool(np.all(np.isfinite(x_gen))) or float(np.abs(x_gen).max()) > 1e3
    name = "D_stsp_DE" if embedding else "D_stsp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = float("inf") if diverged else float(state_space_divergence(
            test, x_gen, embedding=embedding, n_samples=n_samples, key=k1).value)
        rmse = float(rmse_n(model, test, 128, warmup=context, key=k2))
    return {name: d, "RMSE_128": rmse, "diverged": diverged}


def fit_stats(res: dsr.FitResult, i: int) -> dict:
    """Training statistics of member i."""
    h = res.history
    tail = max(1, h["loss"].shape[1] // 10)
    return {"final_loss": float(np.mean(h["loss"][i, -tail:])),
            "newton_iters_median": float(np.median(h["newton_iters"][i])),
            "fallback_frac": float(np.mean(h["fallback"][i])),
            "skipped_frac": float(np.mean(~h["applied"][i])),
            "stopped": bool(np.asarray(res.stopped)[i]),
            "step_s_median": float(np.median(h["wall_time"][1:])),
            "train_s": float(np.sum(h["wall_time"]))}


def summarize(records: list[dict], measures: list[str], key: str = "setting") -> list[dict]:
    """One row per setting: median, MAD and diverged count of every measure."""
    rows = []
    for sys_, s in dict.fromkeys((r["system"], r[key]) for r in records):
        rs = [r for r in records if r[key] == s and r["system"] == sys_]
        row = {key: s, "system": sys_, "members": len(rs),
               "diverged": int(sum(r["diverged"] for r in rs))}
        for m in measures:
            d = median_mad([r[m] for r in rs])
            row[m], row[m + "_mad"] = d["median"], d["mad"]
        rows.append(row)
    return rows


def fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "inf"
        return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
    return str(v)


def table(rows: list[dict], measures: list[str], key: str = "setting") -> str:
    head = ["system", key, "members", "diverged"] + [f"{m} (median ± MAD)" for m in measures]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["system"], fmt(r[key]), str(r["members"]), str(r["diverged"])]
        cells += [f"{fmt(r[m])} ± {fmt(r[m + '_mad'])}" for m in measures]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def panel(ax, records: list[dict], measure: str, *, log_x: bool, label: str | None = None,
          color=None, offset: float = 0.0):
    """Median ± MAD of `measure` against the setting, members as dots, diverged members as
    red crosses at the top (the paper's layout)."""
    settings = list(dict.fromkeys(r["setting"] for r in records))
    xs = np.arange(len(settings), dtype=float) + offset if not log_x else np.asarray(
        settings, float) * 2 ** offset
    top = max([r[measure] for r in records if np.isfinite(r[measure])] or [1.0]) * 1.5
    for x, s in zip(xs, settings):
        vals = np.array([r[measure] for r in records if r["setting"] == s], float)
        fin = vals[np.isfinite(vals)]
        ax.plot(np.full(len(fin), x), fin, ".", color=color, alpha=0.4, ms=4)
        ax.plot(np.full(int(np.sum(~np.isfinite(vals))), x), np.full(
            int(np.sum(~np.isfinite(vals))), top), "x", color="red", ms=7)
    stats = [median_mad([r[measure] for r in records if r["setting"] == s]) for s in settings]
    med = np.array([d["median"] for d in stats])
    mad = np.array([d["mad"] for d in stats])
    ok = np.isfinite(med)
    ax.errorbar(xs[ok], med[ok], yerr=np.where(np.isfinite(mad[ok]), mad[ok], 0), fmt="o-",
                color=color, capsize=3, label=label)
    if log_x:
        ax.set_xscale("log", base=2)
        ax.set_xticks(np.asarray(settings, float), [str(s) for s in settings])
    else:
        ax.set_xticks(xs, [str(s) for s in settings])
    ax.set_ylabel(measure.replace("_", " "))
    return top


def write(out: str, name: str, settings: dict, records: list[dict], summary: list[dict],
          t_start: float) -> str:
    """`out/<name>.json`: settings, one record per member, summary, runtime, environment."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{name}.json")
    write_json(path, {"settings": settings, "records": records, "summary": summary}, t_start)
    return path


def dominant_period(z: np.ndarray, min_period: float) -> tuple[float, float]:
    """The period (steps) of the strongest spectral peak of `z` (T,) longer than
    `min_period`, and the fraction of the (detrended) variance in that peak's ±1 bins."""
    z = np.asarray(z, np.float64) - np.mean(z)
    if not np.all(np.isfinite(z)) or np.std(z) == 0:
        return float("nan"), 0.0
    p = np.abs(np.fft.rfft(z * np.hanning(len(z)))) ** 2
    f = np.fft.rfftfreq(len(z))
    band = (f > 0) & (f < 1.0 / min_period)
    if not band.any():
        return float("nan"), 0.0
    i = np.flatnonzero(band)[np.argmax(p[band])]
    frac = float(p[max(i - 1, 1):i + 2].sum() / p[1:].sum())
    return float(1.0 / f[i]), frac
