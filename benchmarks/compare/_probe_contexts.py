"""`python -m benchmarks.compare._probe_contexts --run DIR --orbits-record FILE [--cells
SYSTEM/VARIANT ...] [--contexts C] --out FILE`: does a member's validation score rank it as
the test does, and would free runs from several contexts of the validation split rank better?

For each named cell of comparison run `DIR` whose dsr sweep `_probe_orbits --sweep` scored on
several test orbits (`--orbits-record`, its JSON), every member of the sweep (resumed from the
run's checkpoints at the parameters `keep="best"` kept: nothing is trained) runs freely from
`C` contexts of the validation split, evenly spaced from its start to its end (each as long as
`dsr.fit`'s validation context; the first is `fit`'s own), for `fit`'s status length, and is
scored by `dsr.fit`'s own validation score (binning D_stsp of the first validation length,
"off"/"collapsed" after every "ok", diverged inf). The rules compared, each selecting the
setting with the best median over its seeds:

- `fit`: the score `dsr.fit` recorded (what the comparison selected by);
- `fit_D_H`: the validation D_H `dsr.fit` recorded at the same step (status-penalized alike);
- `context 0`: the first context's score recomputed here (a different program: float32
  rounding may move a chaotic run);
- `mean`, `median`: over the `C` contexts.

Per rule: Spearman's rank correlation of the members' scores with their mean test D_stsp over
the orbits (finite ones), and the selected setting's median test D_stsp against the best other
method's on the same orbits. And the score's own reliability: the rank correlation of context
0's scores with context 1's, and of `fit`'s recorded scores with context 0 recomputed. Results
accumulate in one JSON per `--out`, keyed by run and cell; a table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from .._json import write_json
from ._probe_reselect import read_run

RULES = ("fit", "fit_D_H", "context 0", "mean", "median")


def _penalized(rows: list, key: str) -> np.ndarray:
    """`key` of the recorded sweep rows, "off"/"collapsed" ranked after every "ok", diverged
    inf (`dsr.fit`'s `rank_score`, applied to another measure)."""
    from dsr._training._validation import STATUS_CODES, rank_score

    return rank_score([float(r[key]) for r in rows], [STATUS_CODES[r["status"]] for r in rows])


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = np.isfinite(a) & np.isfinite(b)
    return float(spearmanr(a[ok], b[ok])[0]) if ok.sum() > 2 else float("nan")


def context_scores(run: str, s: dict, name: str, variant: str, n_contexts: int) -> tuple:
    """`(rows, scores)`: the cell's recorded sweep rows and every member's `dsr.fit`
    validation score from each of `n_contexts` contexts, `(members, n_contexts)`."""
    from dsr._training._validation import make_validation, member_scores

    from ._dsr_method import SETTINGS, as_member, status_steps
    from ._probe_reselect import _free_run, finished_cell

    _, fit_data, table = finished_cell(run, s, name, variant)
    val = np.asarray(fit_data["val"])
    _, v = make_validation(val, "best", None, [np.asarray(fit_data["train"])], val.shape[1],
                           val.dtype, SETTINGS["seq_len"], s["steps"],
                           status_steps(fit_data, s))
    tc = len(v.context)
    starts = np.linspace(0, len(val) - tc, n_contexts).round().astype(int)
    scores = np.empty((len(table.rows), n_contexts))
    for i in range(len(table.rows)):
        m = as_member(table.member(i), 0.0, {})
        for j, t0 in enumerate(starts):
            gen = _free_run(m, val[t0:t0 + tc], v.status_steps)
            scores[i, j] = member_scores(v, gen[None])["score"][0]
    return table.rows, scores


def score_cell(run: str, s: dict, cell: str, orbits_cell: dict, orbits_sweep: dict,
               n_contexts: int) -> dict:
    """One cell's record: every member's context scores, and per rule its rank correlation
    with the members' test D_stsp over the orbits (`orbits_sweep`) and the setting it selects,
    against the best other method on the same orbits (`orbits_cell`)."""
    from ._probe_orbits import row

    t0 = time.perf_counter()
    rows, sc = context_scores(run, s, *cell.split("/"), n_contexts)
    test = np.array([float(m["D_stsp"]) for m in orbits_sweep["members"]])
    setting = np.array([int(r["setting"]) for r in rows])
    other = row(orbits_cell)
    by_rule = {"fit": np.array([float(r["score"]) for r in rows]),
               "fit_D_H": _penalized(rows, "D_H"), "context 0": sc[:, 0],
               "mean": sc.mean(axis=1), "median": np.median(sc, axis=1)}
    rules = {}
    for k, v in by_rule.items():
        med = [float(np.median(v[setting == g])) for g in range(setting.max() + 1)]
        sel = int(np.argmin(med))
        d = float(np.median(test[setting == sel]))
        rules[k] = dict(spearman=_spearman(v, test), selected=sel, median_D_stsp=d,
                        ratio=d / other["other_D_stsp"])
    return dict(run=run, cell=cell, contexts=n_contexts, orbits=orbits_sweep["orbits"],
                scores=sc.tolist(), best_other=other["best_other"],
                best_other_D_stsp=other["other_D_stsp"], rules=rules,
                reliability=dict(context_0_vs_1=_spearman(sc[:, 0], sc[:, 1]),
                                 recorded_vs_context_0=_spearman(by_rule["fit"], sc[:, 0])),
                seconds=time.perf_counter() - t0)


def table(cells: list) -> str:
    head = ("| run | row | contexts | " + " | ".join(f"{k}: ρ, × best other" for k in RULES)
            + " | ρ context 0 vs 1 | ρ recorded vs recomputed |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cells:
        r = [f"{c['rules'][k]['spearman']:+.2f}, {c['rules'][k]['ratio']:.3g} ×" for k in RULES]
        rel = c["reliability"]
        lines.append(f"| {c['run'].replace('docs/compare/', '')} | {c['cell']} | {c['contexts']} | "
                     + " | ".join(r) + f" | {rel['context_0_vs_1']:+.2f} | "
                     f"{rel['recorded_vs_context_0']:+.2f} |")
    return "\n".join(lines)


def summary(cells: list) -> list[str]:
    """Per rule: rows selected within 2 × and below 1 × the best other method, and the
    median of the rows' rank correlations."""
    out = []
    for k in RULES:
        ratios = [c["rules"][k]["ratio"] for c in cells]
        rho = np.nanmedian([c["rules"][k]["spearman"] for c in cells])
        out.append(f"{k:>9}: within 2 × {sum(x <= 2 for x in ratios)}/{len(cells)}, below the "
                   f"best other {sum(x < 1 for x in ratios)}/{len(cells)}, median ρ {rho:+.2f}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_contexts",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, metavar="DIR", help="a comparison run's --out")
    p.add_argument("--orbits-record", required=True, metavar="FILE",
                   help="_probe_orbits' JSON holding the cells' --sweep records")
    p.add_argument("--cells", nargs="*", metavar="SYSTEM/VARIANT",
                   help="default: every cell of the run with a --sweep record there")
    p.add_argument("--contexts", type=int, default=5, metavar="C",
                   help="validation contexts per member (default 5)")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record (appended)")
    a = p.parse_args(argv)
    if a.contexts < 2:
        p.error(f"--contexts must be ≥ 2; got {a.contexts}")
    if not os.path.exists(a.orbits_record):
        p.error(f"--orbits-record {a.orbits_record}: no such file")
    with open(a.orbits_record) as fh:
        orbits = json.load(fh)
    s, cells, record = read_run(p, a.run, a.cells, a.out)
    if not a.cells:  # every cell of the run that has a --sweep record
        cells = [c for c in cells if f"{a.run}:{c}:sweep" in orbits]
    for c in cells:
        if f"{a.run}:{c}:sweep" not in orbits:
            p.error(f"--orbits-record {a.orbits_record}: no --sweep record of {a.run}:{c} "
                    "(run _probe_orbits --sweep on it first)")
    for c in cells:
        key = f"{a.run}:{c}"
        if key not in record or record[key]["contexts"] != a.contexts:
            record[key] = score_cell(a.run, s, c, orbits[key], orbits[key + ":sweep"],
                                     a.contexts)
            write_json(a.out, record)
    done = [record[f"{a.run}:{c}"] for c in cells]
    print(table(done))
    print("\n".join(summary(done)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
