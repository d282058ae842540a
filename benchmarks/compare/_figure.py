"""The figures: one picture per variant (`compare_clean.png`, `compare_noisy.png`), one panel
per measure (rows); per system the methods side by side, every member a dot, the floor (true
system) a black bar. Diverged values (∞) are drawn at the top edge as crosses."""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._measures import MEASURES  # noqa: E402
from ._cells import values  # noqa: E402

COLORS = {"shPLRNN": "tab:blue", "clipped_shPLRNN": "tab:cyan", "SINDy": "tab:orange",
          "ALRNN": "tab:purple", "ESN": "tab:green", "VAR1": "tab:gray"}
LOG = {"D_stsp_bins", "lambda_err", "RMSE_n", "train_s"}


def figure_paths(out: str, s: dict) -> dict[str, str]:
    """Variant → the path of its picture under `out`."""
    return {v: os.path.join(out, f"compare_{v}.png") for v in s["variants"]}


def figures(cells, s, out: str) -> dict[str, str]:
    """One picture per variant of the run (`figure_paths`); returns them."""
    paths = figure_paths(out, s)
    for v, path in paths.items():
        figure(cells, s, v, path)
    return paths


def figure(cells, s, v: str, path: str) -> None:
    """The picture of variant `v`: one panel per measure, one column."""
    by = {(c["system"], c["variant"], c["method"]): c for c in cells}
    methods, systems = list(s["methods"]), list(s["systems"])
    fig, axes = plt.subplots(len(MEASURES), 1, squeeze=False,
                             figsize=(max(8, 1.3 * len(systems)), 2.3 * len(MEASURES)))
    w = 0.8 / len(methods)
    for i, meas in enumerate(MEASURES):
        ax = axes[i, 0]
        allv = [x for c in cells if c["variant"] == v for x in values(c, meas)
                if math.isfinite(x)]
        top = max(allv) * (1.5 if meas in LOG else 1.1) if allv else 1.0
        for si, name in enumerate(systems):
            f = by.get((name, v, "floor"))
            if f is not None and meas != "train_s":
                fv = values(f, meas)
                if np.isfinite(fv).any():
                    ax.hlines(np.nanmedian(fv), si - 0.45, si + 0.45, color="k", lw=1)
            for mi, m in enumerate(methods):
                c = by.get((name, v, m))
                if c is None:
                    continue
                x = si - 0.4 + w * (mi + 0.5)
                vals = values(c, meas)
                jit = np.linspace(-w / 4, w / 4, len(vals)) if len(vals) > 1 else [0.0]
                fin = np.isfinite(vals)
                ax.scatter(np.asarray(x + np.asarray(jit))[fin], vals[fin], s=12,
                           color=COLORS.get(m), label=m if si == 0 else None, zorder=3)
                if (~fin & ~np.isnan(vals)).any():
                    ax.scatter(np.asarray(x + np.asarray(jit))[~fin & ~np.isnan(vals)],
                               np.full((~fin & ~np.isnan(vals)).sum(), top), marker="x",
                               color=COLORS.get(m), zorder=3)
        if meas in LOG and allv and min(allv) > 0:
            ax.set_yscale("log")
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels(systems if i == len(MEASURES) - 1 else [], rotation=30,
                           fontsize=7)
        ax.set_ylabel(meas, fontsize=8)
        if i == 0:
            ax.set_title(f"{v} data (black bar: true system)", fontsize=9)
    axes[0, 0].legend(fontsize=6, ncol=len(methods), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
