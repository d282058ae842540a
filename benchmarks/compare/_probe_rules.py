"""`python -m benchmarks.compare._probe_rules --run DIR [--cells SYSTEM/VARIANT ...] --out FILE`:
which validation rule would have selected dsr's settings best?

For every dsr cell of a finished comparison run (its trained sweep resumed from
`DIR/ckpt/SYSTEM__VARIANT__MODEL.ckpt`, MODEL the run's dsr model, so nothing is trained again), EVERY member of the
sweep (each at the parameters `keep="best"` kept) is scored by five validation rules:

- `fit`: `dsr.fit`'s own score (binning D_stsp of a validation-length free run; what the
  comparison selects by);
- `fit_4x`: `fit`'s score with the status of the `gmm` run (4 × the validation length, the
  same context): "off"/"collapsed" rank after "ok", "diverged" is inf — what `dsr.fit`
  scores since its `status_steps` default (4 ×), up to which step `keep="best"` kept; on a
  run trained with `--dsr-status-factor 4`, `fit` already is that rule and `fit_4x` only
  re-judges the status with the probe's own run (read `fit` there);
- `gmm`: the Gaussian-mixture D_stsp of an 8,000-step free run (`--run-len`) from the
  split's first tenth against the rest of it (`_probe_reselect`'s score; "off"/"collapsed"
  rank after "ok");
- `forecast`: the mean forecast RMSE over `horizon` steps on 20 validation windows
  (`_measures.validation_score`: the criterion SINDy and the ESN are tuned by);
- `gmm_all`: `gmm`'s free run against the whole observed series, training and validation
  split (10,000 samples instead of 2,000): not the comparison's protocol, which selects on
  the validation split alone, but a test of whether a longer reference selects better;

and on the test trajectory as the comparison scores its members (D_stsp, D_H, status). The
first four see the validation split only. Each rule selects the setting with the best
median over its seeds; the record has, per rule, the selected setting, its members' test
scores and their median against the best other method of the same cell. The members' test
scores are for the diagnosis only: nothing here selects by them, and the best setting by the
test (`by_test`) is reported as what it is, the most any rule could reach with these
members. Results accumulate in one JSON per `--out`, keyed by run and cell; `--table` prints
its markdown table and per-rule counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .._json import write_json
from ._probe_reselect import (CONTEXT, PENALTY, _free_run, dsr_model, finished_cell, read_run,
                              ok_score)

RULES = ("fit", "fit_4x", "gmm", "forecast", "gmm_all")
GMM_RUN = 8000


def _best_other(run: str, name: str, variant: str) -> tuple[str, float]:
    import numpy as np

    best = ("", np.inf)
    for meth in ("SINDy", "ESN", "VAR1"):
        path = os.path.join(run, "cells", f"{name}__{variant}__{meth}.json")
        if os.path.exists(path):
            with open(path) as fh:
                med = float(np.median([float(m["D_stsp"]) for m in json.load(fh)["members"]]))
            if med < best[1]:
                best = (meth, med)
    return best


def score_cell(run: str, s: dict, name: str, variant: str, run_len: int = GMM_RUN) -> dict:
    import jax
    import numpy as np

    from ._dsr_method import as_member
    from ._measures import WARMUP, orbit_measures, validation_score

    t0 = time.perf_counter()
    data, fit_data, table = finished_cell(run, s, name, variant)
    val = np.asarray(fit_data["val"], np.float64)
    test = np.asarray(data["test"], np.float64)
    ctx = min(CONTEXT, len(val) // 10)
    observed = np.concatenate([np.asarray(fit_data["train"], np.float64), val])
    members = []
    for i, row in enumerate(table.rows):
        m = as_member(table.member(i), 0.0, {})
        free = _free_run(m, fit_data["val"][:ctx], run_len)
        g = orbit_measures(val[ctx:], free, jax.random.key(7))
        g_all = orbit_measures(observed, free, jax.random.key(7))
        t = orbit_measures(test[WARMUP:], _free_run(m, data["test"][:WARMUP],
                                                    len(test) - WARMUP), jax.random.key(100))
        fit_score = row.get("score")
        members.append(dict(member=i, setting=int(row["setting"]),
                            fit=np.inf if fit_score is None else float(fit_score),
                            gmm=ok_score(g), gmm_status=g["status"],
                            gmm_all=ok_score(g_all),
                            forecast=validation_score(m, fit_data["val"], s["horizon"]),
                            test_D_stsp=t["D_stsp"], test_D_H=t["D_H"],
                            test_status=t["status"]))
    other, other_med = _best_other(run, name, variant)
    rules = {}
    for rule in RULES:
        r = select(members, rule, other_med)
        rules[rule] = dict(r, setting=dict(table.settings[r["selected"]]))
    return dict(run=run, cell=f"{name}/{variant}", model=dsr_model(s),
                selected_by_fit=int(table.selected),
                best_other=other, best_other_D_stsp=other_med, members=members, rules=rules,
                seconds=time.perf_counter() - t0)


def member_score(r: dict, rule: str) -> float:
    """Member record `r`'s score by `rule` (`fit_4x` derived from `fit` and `gmm_status`)."""
    if rule != "fit_4x":
        return float(r[rule])
    if r["gmm_status"] == "diverged":
        return float("inf")
    return float(r["fit"]) + (PENALTY if r["gmm_status"] != "ok" else 0.0)


def select(members: list, rule: str, other_med: float) -> dict:
    """The setting `rule` selects (lowest median score over its seeds) and its members'
    test scores against the best other method's median D_stsp."""
    import numpy as np

    n_set = max(r["setting"] for r in members) + 1
    med = [float(np.median([member_score(r, rule) for r in members if r["setting"] == g]))
           for g in range(n_set)]
    sel = int(np.argmin(med))
    mine = [r for r in members if r["setting"] == sel]
    d = float(np.median([float(r["test_D_stsp"]) for r in mine]))
    return dict(selected=sel, medians=med, test_D_stsp=[r["test_D_stsp"] for r in mine],
                test_status=[r["test_status"] for r in mine], median_D_stsp=d,
                median_D_H=float(np.median([float(r["test_D_H"]) for r in mine])),
                ratio=d / other_med)


def _rule(cell: dict, rule: str) -> dict:
    """`select` of a recorded cell (recomputed: records older than a rule lack it)."""
    return select(cell["members"], rule, cell["best_other_D_stsp"])


def _not_ok(statuses) -> bool:
    """The median member is not "ok": more than half of them are not."""
    return sum(x != "ok" for x in statuses) > len(statuses) / 2


def by_test(cell: dict) -> dict:
    """The diagnosis no rule can reach: per setting the median test D_stsp of its members;
    the best of them against the best other method, and how many settings and members are
    within 2 x of it (is a better selection enough, or must the training improve?)."""
    import numpy as np

    m, other = cell["members"], cell["best_other_D_stsp"]
    n_set = max(r["setting"] for r in m) + 1
    med = [float(np.median([float(r["test_D_stsp"]) for r in m if r["setting"] == g]))
           for g in range(n_set)]
    return dict(setting=int(np.argmin(med)), ratio=min(med) / other, settings=n_set,
                settings_within_2x=sum(x <= 2 * other for x in med), members=len(m),
                members_within_2x=sum(float(r["test_D_stsp"]) <= 2 * other for r in m))


def summary(record: dict, runs: list[str] | None = None) -> list[str]:
    """Per run and rule: cells whose selected median is best / within 2x / not ok, and the
    same for the best setting by the test (`by_test`)."""
    import numpy as np

    out = []
    for run in sorted({r["run"] for r in record.values()} if runs is None else runs):
        cells = [r for r in record.values() if r["run"] == run]
        for rule in RULES + ("by test",):
            if rule == "by test":
                ratios, bad = [by_test(c)["ratio"] for c in cells], 0
            else:
                sel = [_rule(c, rule) for c in cells]
                ratios = [r["ratio"] for r in sel]
                bad = sum(_not_ok(r["test_status"]) for r in sel)
            out.append(f"{run} {rule:>8}: best {sum(x < 1 for x in ratios)}/{len(cells)}, "
                       f"within 2x {sum(x <= 2 for x in ratios)}/{len(cells)}, median ratio "
                       f"{np.median(ratios):.3g}, median member not ok in {bad}")
    return out


def table(record: dict) -> str:
    """Markdown: one row per cell, each rule's ratio to the best other method and the
    best setting by the test."""
    head = ("| run | system | variant | best other | " + " | ".join(RULES)
            + " | best setting by the test | settings within 2x | members within 2x |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in record.values():
        t = by_test(c)
        name, variant = c["cell"].split("/")
        r = [f"{_rule(c, k)['ratio']:.2g} x" for k in RULES]
        run = c["run"].replace("docs/compare/", "")
        lines.append(f"| {run} | {name} | {variant} | {c['best_other']} "
                     f"{c['best_other_D_stsp']:.3g} | " + " | ".join(r)
                     + f" | {t['ratio']:.2g} x | {t['settings_within_2x']}/{t['settings']} | "
                     f"{t['members_within_2x']}/{t['members']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_rules",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, metavar="DIR", help="a comparison run's --out")
    p.add_argument("--cells", nargs="*", metavar="SYSTEM/VARIANT",
                   help="default: every dsr cell of the run")
    p.add_argument("--run-len", type=int, default=GMM_RUN, metavar="N",
                   help=f"free-run steps of the `gmm` score (default {GMM_RUN})")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record (appended)")
    p.add_argument("--table", action="store_true",
                   help="print the record's markdown table (every run in --out) and stop")
    a = p.parse_args(argv)
    if a.table:
        if not os.path.exists(a.out):
            p.error(f"--out {a.out}: no record there")
        with open(a.out) as fh:
            record = json.load(fh)
        print(table(record))
        print("\n".join(summary(record)))
        return 0
    if a.run_len < 320:  # D_H's shortest series (dsr.metrics.power_spectrum_distance)
        p.error(f"--run-len must be ≥ 320; got {a.run_len}")
    s, cells, record = read_run(p, a.run, a.cells, a.out)
    for c in cells:
        if f"{a.run}:{c}" in record:
            continue
        r = score_cell(a.run, s, *c.split("/"), a.run_len)
        record[f"{a.run}:{c}"] = r
        write_json(a.out, record)
        print(f"{c}: " + "; ".join(f"{k} -> {v['selected']} {v['median_D_stsp']:.3g} "
                                    f"({v['ratio']:.2g}x {r['best_other']})"
                                    for k, v in r["rules"].items())
              + f"; {r['seconds']:.0f} s", flush=True)
    print("\n".join(summary(record, [a.run])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
