"""Evaluating a run on test data: every member's measures and their median ± MAD.

D_stsp (the Gaussian-mixture KL of Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. G;
D_stsp^DE with a delay embedding), D_H, RMSE(n) and λ_max come from
`dsr.metrics.evaluate` (for an ensemble: all members at once). Beside it, where the (embedded) dimension is below 6, the
binned D_stsp of the GTF authors' code (30 bins per axis, Laplace smoothing) — the number
to compare with the literature — from one free run per member.
"""

from __future__ import annotations

import dataclasses
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from ..metrics._evaluate import free_run_length
from .._ensemble import Ensemble
from .._generate import generate
from ..metrics import (evaluate, power_spectrum_distance, state_space_divergence,
                       summarize_members)


MEASURES = ("D_stsp", "D_stsp_bins", "D_H", "RMSE_n", "lambda_max")
#: The GTF authors' code bins D_stsp below this many dimensions (a GMM above).
BINS_MAX_DIM = 5
N_BINS = 30


@dataclasses.dataclass
class TestSet:
    """What `dsr.metrics.evaluate` reads from a data set: `test` (T, N), `dt`, `meta`."""

    test: np.ndarray
    dt: float | None = None
    meta: dict = dataclasses.field(default_factory=dict)


def eval_settings(opts: dict) -> dict:
    """The keyword arguments of `dsr.metrics.evaluate` from the CLI options."""
    emb = opts["embedding"]
    return dict(warmup=opts["context_steps"], n_rmse=opts["n_rmse"], n_samples=opts["n_samples"],
                embedding=None if emb is None else tuple(emb), gen_factor=opts["gen_factor"],
                lyapunov_steps=opts["lyapunov_steps"])


PER_MEMBER = ("D_stsp", "D_stsp_stderr", "D_H", "RMSE_n", "lambda_max", "diverged", "status",
              "notes")


def evaluate_members(model, test: TestSet, *, key, settings: dict, progress: bool
                     ) -> tuple[list[dict], dict, np.ndarray]:
    """`dsr.metrics.evaluate` of the model or ensemble (all members' free runs in one
    vmapped generation): one dict per member, the settings used, and the free runs
    `(K, gen_factor·T, N)` (float64) the measures were computed from."""
    res = evaluate(model, test, key=key, progress=progress, return_orbits=True, **settings)
    if not isinstance(model, Ensemble):
        return [res], res["settings"], res["orbits"][None]
    return ([{k: res[k][i] for k in PER_MEMBER} for i in range(len(model))], res["settings"],
            res["orbits"])


def free_runs(model, x_test: np.ndarray, settings: dict) -> np.ndarray:
    """`(K, gen_factor·T, N)` free runs from the context `x_test[:warmup]`, as `evaluate`
    draws them (for the pictures without test data; with test data `evaluate` returns its
    own)."""
    dtype = jax.tree_util.tree_leaves(model)[0].dtype
    x = generate(model, free_run_length(settings["gen_factor"], len(x_test)), check=False,
                 context=jnp.asarray(x_test[:settings["warmup"]], dtype))
    x = np.asarray(x, np.float64)
    return x if isinstance(model, Ensemble) else x[None]


def binned_dstsp(x_test, x_gens, embedding, key) -> tuple[list, str | None]:
    """The GTF authors' binned D_stsp per member, or Nones and the reason it is missing."""
    d = x_test.shape[1] * (1 if embedding is None else embedding[0])
    if d > BINS_MAX_DIM:
        return [None] * len(x_gens), (f"binned D_stsp skipped: {d} dimensions (the GTF "
                                      f"authors bin only up to {BINS_MAX_DIM}).")
    out = []
    for x in x_gens:
        r = state_space_divergence(x_test, x, method="bins", n_bins=N_BINS, key=key,
                                   embedding=embedding)
        out.append(float(r.value))
    return out, None


def channel_spectra(x_test, x_gens, rows) -> list[float]:
    """D_H of the original channel (column 0 of a delay embedding) per member; inf for a
    diverged member."""
    return [math.inf if r["diverged"] or not np.all(np.isfinite(x[:, :1])) else
            float(power_spectrum_distance(x_test[:, :1], x[:, :1]))
            for x, r in zip(x_gens, rows)]


def _member_row(i: int, r: dict, bins) -> dict:
    row = {"member": i, **{m: float(r[m]) for m in PER_MEMBER[:5]}, "D_stsp_bins": bins,
           "diverged": bool(r["diverged"]), "status": r["status"]}
    if r.get("notes"):
        row["notes"] = list(r["notes"])
    return row


def evaluate_run(model, x_test: np.ndarray, dt, opts: dict, key, channel: bool = False
                 ) -> tuple[dict, np.ndarray]:
    """`(report, free runs (K, n, N))`: per-member measures, their summary and settings;
    with `channel` (a delay-embedded run) also D_H of the recorded channel (column 0)."""
    t0 = time.perf_counter()
    settings = eval_settings(opts)
    rows, used, x_gens = evaluate_members(model, TestSet(x_test, dt), key=key,
                                          settings=settings, progress=opts["progress"])
    bins, note = binned_dstsp(x_test, x_gens, settings["embedding"], key)
    members = [_member_row(i, r, b) for i, (r, b) in enumerate(zip(rows, bins))]
    measures = list(MEASURES)
    if channel:  # the measures of the recorded channel itself, too
        for row, d in zip(members, channel_spectra(x_test, x_gens, members)):
            row["D_H_channel"] = d
        measures.append("D_H_channel")
    summary = summarize_members({m: [row[m] for row in members] for m in measures},
                                [row["status"] for row in members])
    emb = settings["embedding"]
    report = {"D_stsp_kind": "D_stsp" if emb is None else f"D_stsp^DE (m={emb[0]}, "
              f"tau={emb[1]})", "members": members, "summary": summary,
              "settings": dict(used, n_bins=N_BINS),
              "notes": [note] if note else [], "wall_s": time.perf_counter() - t0}
    return report, x_gens


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def table(report: dict) -> str:
    """Members and `median ± MAD` as a plain-text table."""
    cols = [("D_stsp", "D_stsp"), ("D_stsp_bins", "D_stsp(bins)"), ("D_H", "D_H"),
            ("RMSE_n", f"RMSE({report['settings'].get('n_rmse', 'n')})"),
            ("lambda_max", "λ_max")]
    if "D_H_channel" in report["summary"]:
        cols.insert(3, ("D_H_channel", "D_H(channel)"))
    head = ["member"] + [c[1] for c in cols] + ["status"]
    rows = [[str(r["member"])] + [_fmt(r[c]) for c, _ in cols] + [r["status"]]
            for r in report["members"]]
    s = report["summary"]
    rows.append(["median±MAD"] + [
        "–" if not s[c]["n"] else f"{_fmt(s[c]['median'])}±{_fmt(s[c]['mad'])}"
        for c, _ in cols] + [f"{s['n_diverged']} diverged, {s['n_collapsed']} collapsed, "
                        f"{s['n_off']} off"])
    widths = [max(len(r[j]) for r in [head] + rows) for j in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head] + rows)
