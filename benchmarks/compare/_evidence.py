"""The evidence for `dsr.fit`'s defaults: over every finished dsr sweep (one per system and
variant), how each setting of the grid fared — how often it was selected, and its median
validation score relative to the best setting of the same cell (1 = the best; a score of a
setting whose median member failed is ≥ 1000, the validation score's penalty)."""

from __future__ import annotations

import math

import numpy as np

from ._cells import read_number


#: How the tables name a grid axis.
SYMBOLS = dict(alpha="α", learning_rate="lr", noise="σ")


def setting_label(g: dict) -> str:
    """A grid setting as the tables write it: `α = 0.3, lr = 0.005, σ = 0.05`."""
    return ", ".join(f"{SYMBOLS.get(k, k)} = {v:g}"
                     if isinstance(v, (int, float)) else f"{k} = {v}" for k, v in g.items())


def evidence(cells: list[dict]) -> list[dict]:
    """One row per setting of the grid (the grid of the first dsr cell; cells with another
    grid are left out): `selected` (cells), `ratio_median` (median over cells of the
    setting's score / the cell's best), `within_1_5` (cells where that ratio ≤ 1.5), `cells`."""
    sweeps = [c for c in cells if c.get("sweep")]
    if not sweeps:
        return []
    grid = sweeps[0]["sweep"]["settings"]
    sweeps = [c for c in sweeps if c["sweep"]["settings"] == grid]
    ratios = np.full((len(sweeps), len(grid)), np.nan)
    selected = np.zeros(len(grid), int)
    for i, c in enumerate(sweeps):
        sc = np.array([float(read_number(v)) for v in c["sweep"]["setting_scores"]])
        best = np.nanmin(sc)
        ratios[i] = sc / best if best > 0 else np.where(sc == best, 1.0, np.inf)
        selected[c["sweep"]["selected"]] += 1
    rows = []
    for j, g in enumerate(grid):
        r = ratios[:, j]
        rows.append(dict(setting=g, label=setting_label(g), selected=int(selected[j]),
                         ratio_median=float(np.nanmedian(r)),
                         within_1_5=int(np.sum(r <= 1.5)), cells=len(sweeps)))
    return rows


def evidence_table(cells: list[dict]) -> list[str]:
    rows = evidence(cells)
    if not rows:
        return []
    md = ["\n**Which settings won** (over the finished dsr sweeps: per setting, the cells "
          "that selected it; the median over cells of its median validation score divided by "
          "the cell's best setting's; the cells where it was within 1.5 × the best)\n",
          "| setting | selected in | score / cell's best (median over cells) | within 1.5 × |",
          "|---|---|---|---|"]
    for r in rows:
        ratio = "∞" if math.isinf(r["ratio_median"]) else f"{r['ratio_median']:.3g}"
        md.append(f"| {r['label']} | {r['selected']} of {r['cells']} | {ratio} | "
                  f"{r['within_1_5']} of {r['cells']} |")
    return md
