"""`python -m benchmarks.compare._probe_classes --runs DIR_A DIR_B [--where KEY=VALUE ...]
--out FILE`: the model class as one more axis of dsr's sweep, judged after the fact.

Two finished comparison runs trained the same grid on the same data and seeds with two dsr
models (e.g. `docs/compare/rerun`, the shPLRNN, and `docs/compare/rerun_clipped`, the clipped
shPLRNN). `_probe_rules` scored every member of both sweeps (its record, `--record`). Here the
settings of both sweeps that match `--where` (default: `learning_rate=0.005`, the learning rate
the first rerun selected in 14 of its 18 cells, so that the pooled grid has 2 models × 4 α =
8 settings, as many as SINDy's) are pooled into one grid, and the comparison's own rule
selects in it: per setting the median over its seeds of `dsr.fit`'s validation score, the
lowest wins. Nothing is trained and nothing is selected by the test. The selected members'
test scores (D_stsp, D_H, status, from the record) are set against the best other method of
the cell (SINDy, ESN, VAR(1): medians from `DIR_A/cells/`), and the issue's bar is counted:
cells where dsr's median is the best D_stsp, the best D_H, within 2 × of the best D_stsp, and
where its median member is not "ok". The same counts for each run alone, restricted the same
way and with its full grid, are printed beside them.

`--against DIR`: a run of that grid itself (`--dsr-grid alpha-model`, every member in the
record too) against the prediction, cell by cell, and setting by setting: the same setting,
seeds and training keys trained in a 12-member program instead of a 24-member one (float32
rounding differs), their median test D_stsp side by side.

What this is not: one sweep program with the model class as an axis (the members here were
trained in two programs, each with its own keys). What it measures is whether such a grid,
selected by the comparison's rule, would meet the bar with members trained this way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .._json import write_json

OTHERS = ("SINDy", "ESN", "VAR1")


def _medians_of_others(run: str, cell: str) -> dict:
    """`{"D_stsp": (method, median), "D_H": (method, median)}`: the best other method of a
    cell by each measure (its members' median)."""
    import numpy as np

    name, variant = cell.split("/")
    best = {"D_stsp": ("", np.inf), "D_H": ("", np.inf)}
    for meth in OTHERS:
        path = os.path.join(run, "cells", f"{name}__{variant}__{meth}.json")
        if not os.path.exists(path):
            continue
        with open(path) as fh:
            members = json.load(fh)["members"]
        for k in best:
            med = float(np.median([float(m[k]) for m in members]))
            if med < best[k][1]:
                best[k] = (meth, med)
    return best


def _matches(setting: dict, where: dict) -> bool:
    return all(abs(float(setting[k]) - v) <= 1e-12 * max(1.0, abs(v)) for k, v in where.items())


def pooled(cells: list[dict], where: dict) -> list[dict]:
    """The candidate settings of the pooled grid: one per (model, setting) matching `where`,
    each with its members (from the `_probe_rules` record)."""
    out = []
    for c in cells:
        model = c.get("model", "shPLRNN")
        for g, s in enumerate(_settings_of(c)):
            mem = [r for r in c["members"] if r["setting"] == g]
            if _matches(s, where):
                out.append(dict(model=model, setting=s, members=mem))
    return out


def _settings_of(cell: dict) -> list[dict]:
    """Every setting of a record's cell's sweep (from the run's
    `cells/SYSTEM__VARIANT__MODEL.json`)."""
    name = "__".join(cell["cell"].split("/")) + f"__{cell.get('model', 'shPLRNN')}.json"
    path = os.path.join(cell["run"], "cells", name)
    with open(path) as fh:
        return json.load(fh)["sweep"]["settings"]


def select(candidates: list[dict]) -> dict:
    """The comparison's rule: the lowest median validation score over a setting's seeds
    (ties: the first)."""
    import numpy as np

    med = [float(np.median([float(r["fit"]) for r in c["members"]])) for c in candidates]
    return candidates[int(np.argmin(med))] | dict(validation_median=min(med))


def judge(chosen: dict, best: dict) -> dict:
    """The selected members' test medians against the best other method."""
    import numpy as np

    mem = chosen["members"]
    d = float(np.median([float(r["test_D_stsp"]) for r in mem]))
    h = float(np.median([float(r["test_D_H"]) for r in mem]))
    statuses = [r["test_status"] for r in mem]
    return dict(model=chosen["model"], setting=chosen["setting"],
                validation_median=chosen["validation_median"],
                test_D_stsp=[float(r["test_D_stsp"]) for r in mem],
                test_D_H=[float(r["test_D_H"]) for r in mem], test_status=statuses,
                median_D_stsp=d, median_D_H=h, ratio_D_stsp=d / best["D_stsp"][1],
                ratio_D_H=h / best["D_H"][1],
                median_not_ok=sum(x != "ok" for x in statuses) > len(statuses) / 2)


def analyse(record: dict, runs: list[str], where: dict) -> dict:
    """Per cell found in every run: the pooled grid's choice and, for reference, each run's
    alone (restricted by `where`, and with its full grid)."""
    out = {}
    names = [k.split(":", 1)[1] for k in record if k.startswith(runs[0] + ":")]
    for cell in names:
        cs = [record.get(f"{r}:{cell}") for r in runs]
        if any(c is None for c in cs):
            continue
        best = _medians_of_others(runs[0], cell)
        row = dict(best_other={k: list(v) for k, v in best.items()},
                   pooled=judge(select(pooled(cs, where)), best))
        for r, c in zip(runs, cs):
            row[f"{r}|where"] = judge(select(pooled([c], where)), best)
            row[f"{r}|all"] = judge(select(pooled([c], {})), best)
        out[cell] = row
    return out


def counts(result: dict, key: str) -> dict:
    rows = [r[key] for r in result.values()]
    return dict(cells=len(rows), best_D_stsp=sum(r["ratio_D_stsp"] < 1 for r in rows),
                best_D_H=sum(r["ratio_D_H"] < 1 for r in rows),
                within_2x=sum(r["ratio_D_stsp"] <= 2 for r in rows),
                median_not_ok=sum(r["median_not_ok"] for r in rows))


def table(result: dict, runs: list[str]) -> str:
    head = ("| system | variant | pooled grid selects | dsr median D_stsp (× best other) | "
            "best other D_stsp | dsr median D_H (× best other) | best other D_H | "
            + " | ".join(f"{os.path.basename(r)} alone, same subset" for r in runs) + " |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for cell, r in result.items():
        p, b = r["pooled"], r["best_other"]
        s = ", ".join(f"{k} {v:g}" for k, v in p["setting"].items())
        alone = [f"{r[f'{x}|where']['ratio_D_stsp']:.2g} ×" for x in runs]
        lines.append(f"| {cell.replace('/', ' | ')} | {p['model']}, {s} | "
                     f"{p['median_D_stsp']:.3g} ({p['ratio_D_stsp']:.2g} ×) | "
                     f"{b['D_stsp'][0]} {b['D_stsp'][1]:.3g} | {p['median_D_H']:.3g} "
                     f"({p['ratio_D_H']:.2g} ×) | {b['D_H'][0]} {b['D_H'][1]:.3g} | "
                     + " | ".join(alone) + " |")
    return "\n".join(lines)


def _key(cand: dict) -> tuple:
    return cand["setting"].get("model", cand["model"]), float(cand["setting"]["alpha"])


def _fold(a: float, b: float) -> float:
    """max(a/b, b/a); 1 for two infinities, inf for one."""
    import math

    if math.isinf(a) or math.isinf(b):
        return 1.0 if a == b else math.inf
    return max(a / b, b / a)


def against(record: dict, runs: list[str], run: str, where: dict, result: dict) -> dict:
    """The pooled grid trained for real (`run`, `--dsr-grid alpha-model`) against its
    prediction: per cell the selected setting and ratio of both; per (cell, setting) the
    median test D_stsp of the same setting, seeds and keys trained in the two programs
    (`fold`: the larger over the smaller), and the same per member."""
    import numpy as np

    cells, pairs, members = {}, [], []
    for cell, pred in result.items():
        real = record.get(f"{run}:{cell}")
        if real is None:
            continue
        best = _medians_of_others(runs[0], cell)
        got = judge(select(pooled([real], {})), best)
        cells[cell] = dict(predicted=dict(model=pred["pooled"]["model"],
                                          setting=pred["pooled"]["setting"],
                                          ratio_D_stsp=pred["pooled"]["ratio_D_stsp"]),
                           run=dict(setting=got["setting"], ratio_D_stsp=got["ratio_D_stsp"],
                                    ratio_D_H=got["ratio_D_H"], test_status=got["test_status"]))
        mine = {_key(c): c for c in pooled([real], {})}
        for r in runs:
            for c in pooled([record[f"{r}:{cell}"]], where):
                twin = mine.get(_key(c))
                if twin is None:
                    continue
                a = [float(m["test_D_stsp"]) for m in c["members"]]
                b = [float(m["test_D_stsp"]) for m in twin["members"]]
                pairs.append(dict(cell=cell, model=_key(c)[0], alpha=_key(c)[1],
                                  before=a, after=b,
                                  fold=_fold(float(np.median(a)), float(np.median(b)))))
                members += [_fold(x, y) for x, y in zip(a, b)]
    folds = [p["fold"] for p in pairs]
    return dict(cells=cells, pairs=pairs, summary=dict(
        settings=len(folds), median_fold=float(np.median(folds)) if folds else None,
        settings_within_2x=sum(f <= 2 for f in folds), members=len(members),
        member_median_fold=float(np.median(members)) if members else None,
        members_within_2x=sum(f <= 2 for f in members)))


def _parse_where(items: list[str], p: argparse.ArgumentParser) -> dict:
    where = {}
    for it in items:
        k, _, v = it.partition("=")
        try:
            where[k.replace("-", "_")] = float(v)
        except ValueError:
            p.error(f"--where: KEY=NUMBER (e.g. learning_rate=0.005); got {it!r}")
    return where


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_classes",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", nargs="+", required=True, metavar="DIR",
                   help="finished comparison runs of the same grid, one dsr model each; the "
                        "first one's cells give the other methods")
    p.add_argument("--record", default="docs/compare/probe_rules.json", metavar="FILE",
                   help="the `_probe_rules` record with every member of those runs")
    p.add_argument("--where", nargs="*", default=["learning_rate=0.005"], metavar="KEY=VALUE",
                   help="the settings of each run that enter the pooled grid")
    p.add_argument("--against", metavar="DIR",
                   help="a run of the pooled grid itself (--dsr-grid alpha-model), its cells "
                        "in the record: set against the prediction, setting by setting")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON result")
    a = p.parse_args(argv)
    if len(a.runs) < 2:
        p.error("--runs: at least two runs")
    if not os.path.exists(a.record):
        p.error(f"--record {a.record}: no record there (run _probe_rules first)")
    where = _parse_where(a.where, p)
    with open(a.record) as fh:
        record = json.load(fh)
    result = analyse(record, a.runs, where)
    if not result:
        p.error(f"--runs: no cell of {a.runs[0]} is in the record for every run")
    summary = {k: counts(result, k) for k in
               ["pooled"] + [f"{r}|{w}" for r in a.runs for w in ("where", "all")]}
    out = dict(runs=a.runs, where=where, rule="median over seeds of dsr.fit's validation "
               "score, lowest wins", summary=summary, cells=result)
    if a.against:
        out["against"] = dict(run=a.against, **against(record, a.runs, a.against, where,
                                                        result))
    write_json(a.out, out)
    print(table(result, a.runs))
    for k, v in summary.items():
        print(f"{k}: {v}")
    if a.against:
        for cell, c in out["against"]["cells"].items():
            print(f"{cell}: predicted {c['predicted']['model']} {c['predicted']['setting']} "
                  f"{c['predicted']['ratio_D_stsp']:.2g}x; run {c['run']['setting']} "
                  f"{c['run']['ratio_D_stsp']:.2g}x")
        print(f"same setting, two programs: {out['against']['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
