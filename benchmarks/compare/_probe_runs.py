"""`python -m benchmarks.compare._probe_runs --runs DIR [DIR ...] [--orbits-record FILE] --out
FILE`: how often does each row pass issue 30's bar over complete comparison runs, and how
likely is one more run to pass every row?

For each run folder (its `compare.json`) and each dsr method in it, per row (system,
variant): dsr's median test D_stsp over the best other method's and whether the row passes
the bar (`_report.bar_row`: ratio ≤ 2, the median member neither diverged, collapsed nor
off). A dsr cell that a later run copied (the same members' test scores on the same row)
counts once, in the first run that has it. Per row the share of its distinct cells that
pass; their product over the rows is what the chance of one more run passing every row
would be if rows were independent and the runs draws from one distribution. They are
neither (each run changed one thing; a row's cells share its data and seeds), so the
product is an order of magnitude, not a probability. A table is printed.

`--orbits-record` (`_probe_orbits`' JSON): for the runs it has, the bar on the mean over its
test orbits (`_probe_orbits.row`), against the best other method and against the larger of
the best other method and the true system from another initial condition (the floor: where
a method scores below the true system, it follows the test orbit rather than the attractor).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from .._json import write_json
from ._report import DSR, bar_row


def read_rows(run: str) -> list[dict]:
    """Every row of one finished run (every method's cell present) and dsr method, with the
    bar's verdict and the dsr members' test D_stsp (the key for copied cells)."""
    path = os.path.join(run, "compare.json")
    if not os.path.isfile(path):
        raise SystemExit(f"_probe_runs: --runs {run}: no compare.json there (a finished "
                         f"comparison run's folder was expected)")
    with open(path) as f:
        d = json.load(f)
    s, by = d["settings"], {(c["system"], c["variant"], c["method"]): c for c in d["cells"]}
    methods = list(s["methods"])
    out = []
    for n in s["systems"]:
        for v in s["variants"]:
            if not all((n, v, m) in by for m in methods):
                continue
            for dm in (m for m in methods if m in DSR):
                r = bar_row(by, n, v, dm, methods)
                scores = tuple(f"{float(x.get('D_stsp', math.nan)):.6g}"
                               for x in by[(n, v, dm)]["members"])
                out.append(dict(run=run, method=dm, system=n, variant=v, ratio=r["ratio"],
                                statuses=r["statuses"], ok=r["ok"], members=scores))
    return out


def pass_rates(rows: list[dict]) -> tuple[dict, float]:
    """Per row `(system, variant)`: its distinct cells (a copy counts once) and the share that
    pass; and the product of those shares over the rows."""
    per: dict = {}
    for r in rows:
        cells = per.setdefault(f"{r['system']} {r['variant']}", [])
        if all(c["members"] != r["members"] for c in cells):
            cells.append(r)
    rates = {k: dict(cells=c, passed=sum(x["ok"] for x in c), n=len(c)) for k, c in per.items()}
    product = math.prod(x["passed"] / x["n"] for x in rates.values()) if rates else math.nan
    return rates, product


def table(rates: dict, product: float) -> str:
    lines = ["| row | distinct cells: ratio (run where it first is; ✗: not passed) | passed |",
             "|---|---|---|"]
    for k, x in rates.items():
        cells = ", ".join(f"{c['ratio']:.3g} ({os.path.basename(c['run'].rstrip('/'))})"
                          f"{'' if c['ok'] else ' ✗'}" for c in x["cells"])
        lines.append(f"| {k} | {cells} | {x['passed']} of {x['n']} |")
    lines.append(f"\nProduct of the rows' pass shares: {product:.3g}")
    return "\n".join(lines)


def orbit_rows(record: dict, runs: list) -> list[dict]:
    """Per run of `runs` and row that `record` (`_probe_orbits`' JSON) scored on its test
    orbits: dsr's median over its members' means, the best other method's, the floor's
    mean, and the bar against the best other and against max(best other, floor)."""
    from ._probe_orbits import row

    out = []
    for run in runs:
        for key, cell in record.items():
            if key.rsplit(":", 1)[0] != run.rstrip("/") or "methods" not in cell:
                continue
            r = row(cell)
            floor = float(cell["floor"]["D_stsp"])
            against_floor = r["D_stsp"] / max(r["other_D_stsp"], floor)
            out.append(dict(run=run, cell=cell["cell"], dsr=r["D_stsp"],
                            best_other=r["best_other"], other=r["other_D_stsp"], floor=floor,
                            ratio=r["ratio"], ok=bool(r["ratio"] <= 2 and not r["not_ok"]),
                            ratio_floor=against_floor,
                            ok_floor=bool(against_floor <= 2 and not r["not_ok"])))
    return out


def orbit_table(rows: list[dict]) -> str:
    lines = ["| run | rows | pass: × best other | pass: × max(best other, true system) | rows "
             "that miss (× best other; × max) |", "|---|---|---|---|---|"]
    for run in dict.fromkeys(r["run"] for r in rows):
        rr = [r for r in rows if r["run"] == run]
        miss = "; ".join(f"{r['cell']} ({r['ratio']:.3g}; {r['ratio_floor']:.3g})"
                         for r in rr if not (r["ok"] and r["ok_floor"]))
        lines.append(f"| {os.path.basename(run.rstrip('/'))} | {len(rr)} | "
                     f"{sum(r['ok'] for r in rr)} | {sum(r['ok_floor'] for r in rr)} | "
                     f"{miss or 'none'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_runs",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", nargs="+", required=True, help="finished comparison run folders")
    p.add_argument("--orbits-record", help="_probe_orbits' JSON: the bar on several orbits")
    p.add_argument("--out", required=True, help="the JSON record to write")
    a = p.parse_args(argv)
    rows = [r for run in a.runs for r in read_rows(run)]
    rates, product = pass_rates(rows)
    orbits = []
    if a.orbits_record:
        if not os.path.isfile(a.orbits_record):
            raise SystemExit(f"_probe_runs: --orbits-record {a.orbits_record}: no such file")
        with open(a.orbits_record) as f:
            orbits = orbit_rows(json.load(f), a.runs)
    write_json(a.out, dict(runs=a.runs, rows=rows, rates=rates, product=product,
                           orbits=orbits))
    print(table(rates, product))
    if orbits:
        print("\nOn the test orbits of `--orbits-record`:\n")
        print(orbit_table(orbits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
