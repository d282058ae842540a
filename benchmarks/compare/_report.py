"""Collect the cells into `compare.json`, write and print the tables (median ± MAD over members,
wins per measure) and draw the figures (one per variant)."""

from __future__ import annotations

import math
import os


from dsr.metrics import median_mad

from ._cells import load_cell, read_number, values, write_json
from ._evidence import evidence_table, setting_label
from ._measures import LOWER_IS_BETTER, MEASURES

DSR = ("shPLRNN", "clipped_shPLRNN", "ALRNN")
UNITS = {"D_stsp": "", "D_stsp_bins": "", "D_H": "", "lambda_err": "1/time",
         "RMSE_n": "std. units", "VPT": "Lyapunov times", "train_s": "s"}


def collect(out: str, s: dict) -> list[dict]:
    cells = []
    for name in s["systems"]:
        for v in s["variants"]:
            for m in ("floor",) + tuple(s["methods"]):
                c = load_cell(out, name, v, m)
                if c is not None:
                    cells.append(c)
    return cells


def _fmt(med, mad) -> str:
    if math.isnan(med):
        return "—"
    if math.isinf(med):
        return "∞"
    f = (lambda v: f"{v:.3g}")  # noqa: E731
    return f(med) if mad == 0 or math.isnan(mad) else f"{f(med)} ± {f(mad)}"


def systems_info(cells: list[dict]) -> dict:
    """Per system, how its data set and floor were made (from its cells; older runs did not
    record it)."""
    out = {}
    for c in cells:
        if c.get("system_info") and c["system"] not in out:
            out[c["system"]] = dict(c["system_info"], lambda_ref=c.get("lambda_ref"))
    return out


def systems_table(cells: list[dict], s: dict) -> list[str]:
    info = systems_info(cells)
    md = ["\n**Systems** (how each data set and the floor's map were made)\n",
          "| system | D | Δt | λ_ref | data integrated by | floor's map | observed |",
          "|---|---|---|---|---|---|---|"]
    for n in s["systems"]:
        i = info.get(n)
        if i is None:
            md.append(f"| {n} | (not recorded) | | | | | |")
            continue
        lam = read_number(i.get("lambda_ref"))
        lam = "—" if lam is None or not math.isfinite(float(lam)) else f"{float(lam):.3g}"
        why = f"; jax.numpy copy not used: {i['fallback_reason']}" if i.get("fallback_reason") \
            else ""
        obs = "dysts post-processed coordinates" if i.get("postprocessed") else "state"
        if i.get("ic_shrink") not in (None, 1.0):
            obs += f"; initial perturbation ×{i['ic_shrink']:g}"
        far = read_number(i.get("max_abs_std"))
        if far is not None and not float(far) <= 10:  # also nan / inf
            obs += f"; ⚠ test / floor reach {float(far):.3g} train stds"
        md.append(f"| {n} | {i['dim']} | {i['dt']:.4g} | {lam} | {i['integrator']}{why} | "
                  f"{i['floor_map']} | {obs} |")
    return md


def sweep_table(cells: list[dict], s: dict) -> list[str]:
    """Per dsr cell: the selected setting, its median validation score, the next best
    setting's, and each reported member's best validation step (of `steps`)."""
    rows = [c for c in cells if c.get("sweep")]
    if not rows:
        return []
    md = ["\n**dsr's sweeps** (per cell: the setting `dsr.fit` selected by the median "
          "validation score over its seeds, of the grid's "
          f"{len(rows[0]['sweep']['settings'])}; the runner-up; each reported member's best "
          "validation step; every member of every setting is in the cell's JSON)\n",
          "| system | variant | method | selected | its score | runner-up, score | best steps |",
          "|---|---|---|---|---|---|---|"]
    for c in rows:
        sw = c["sweep"]
        sc = [float(read_number(v)) for v in sw["setting_scores"]]
        order = sorted(range(len(sc)), key=lambda i: (math.isnan(sc[i]), sc[i]))
        sel = sw["selected"]
        other = next((i for i in order if i != sel), None)
        runner = "—" if other is None else f"{setting_label(sw['settings'][other])}: " \
                                           f"{sc[other]:.3g}"
        steps = ", ".join(str(m.get("info", {}).get("best_step")) for m in c["members"])
        md.append(f"| {c['system']} | {c['variant']} | {c['method']} | "
                  f"{setting_label(sw['settings'][sel])} | {sc[sel]:.3g} | {runner} | "
                  f"{steps} (of {c.get('fit', {}).get('steps', '?')}) |")
    return md


def members_table(cells: list[dict], s: dict) -> list[str]:
    """Every reported member of every dsr cell, one row each: its setting and seed, test
    D_stsp, D_H and status, its validation score and best step (the other methods' members
    are in the figures and the cells' JSON)."""
    rows = [c for c in cells if c["method"] in DSR]
    if not rows:
        return []
    md = ["\n**Every dsr member** (the selected setting's seeds; test measures)\n",
          "| system | variant | method | member (seed) | setting | D_stsp | D_H | status | "
          "validation score | best step |", "|---|---|---|---|---|---|---|---|---|---|"]
    f = (lambda v: "—" if v is None else f"{float(v):.3g}")  # noqa: E731
    for c in rows:
        for m in c["members"]:
            i = m.get("info", {})
            g = {k: read_number(i[k]) for k in ("alpha", "learning_rate", "noise") if k in i}
            if "model" in c.get("sweep", {}).get("keys", ()):  # the class is swept too
                g = dict(model=i.get("model", "?"), **g)
            md.append(f"| {c['system']} | {c['variant']} | {c['method']} | "
                      f"{i.get('member', '?')} ({i.get('seed', '?')}) | {setting_label(g)} | "
                      f"{f(m.get('D_stsp'))} | {f(m.get('D_H'))} | {m.get('status')} | "
                      f"{f(read_number(i.get('val_score')))} | {i.get('best_step', '—')} |")
    return md


BAD = ("diverged", "collapsed", "off")


def bar_row(by: dict, n: str, v: str, d: str, methods: list) -> dict:
    """Issue 30's bar on one row for dsr method `d`: the medians of D_stsp and D_H of every
    method, `d`'s median D_stsp over the best other method's (`ratio`), its members' statuses
    and `ok` (ratio ≤ 2 and fewer than half the members diverged, collapsed or off)."""
    others = [m for m in methods if m != d]
    meds = {meas: {m: median_mad(values(by[(n, v, m)], meas))["median"] for m in methods}
            for meas in ("D_stsp", "D_H")}
    best = {meas: all(not ms[d] > ms[m] for m in others if not math.isnan(ms[m]))
            for meas, ms in meds.items()}
    med = meds["D_stsp"]
    top = min((med[m] for m in others if not math.isnan(med[m])), default=math.nan)
    ratio = med[d] / top if top > 0 else math.inf if not math.isnan(top) else 0.0
    st = [x.get("status") for x in by[(n, v, d)]["members"]]
    bad = 2 * sum(x in BAD or x is None for x in st) >= len(st)
    return dict(ratio=ratio, best=best, statuses=st, median_not_ok=bad,
                ok=bool(ratio <= 2 and not bad))


def bar_table(cells: list[dict], s: dict) -> list[str]:
    """Issue 30's bar, per dsr method: on how many rows (every method finished) it has the
    best median D_stsp and D_H, its median D_stsp over the best other method's (≤ 2 on every
    row), and the rows where half of its members or more are diverged, collapsed or off (its
    median member then is)."""
    by = {(c["system"], c["variant"], c["method"]): c for c in cells}
    methods = list(s["methods"])
    rows = [(n, v) for n in s["systems"] for v in s["variants"]
            if all((n, v, m) in by for m in methods)]
    md = []
    for d in (m for m in methods if m in DSR):
        best = {"D_stsp": 0, "D_H": 0}
        worst, bad = (0.0, None), []
        for n, v in rows:
            r = bar_row(by, n, v, d, methods)
            for meas in best:
                best[meas] += r["best"][meas]
            if not r["ratio"] <= worst[0]:
                worst = (r["ratio"], f"{n} {v}")
            if r["median_not_ok"]:
                bad.append(f"{n} {v} ({', '.join(str(x) for x in r['statuses'])})")
        if not md:
            md = ["\n**Issue 30's bar** (rows with every method finished: best median D_stsp "
                  "and D_H on at least half; median D_stsp within 2 × the best other "
                  "method's on every row; no row whose median member is diverged, collapsed "
                  "or off)\n",
                  "| dsr method | rows | best D_stsp | best D_H | worst D_stsp / best other's "
                  "| rows with half the members or more diverged / collapsed / off |",
                  "|---|---|---|---|---|---|"]
        md.append(f"| {d} | {len(rows)} | {best['D_stsp']} | {best['D_H']} | "
                  f"{worst[0]:.3g} ({worst[1]}) | {'; '.join(bad) or 'none'} |")
    return md


def tables(cells: list[dict], s: dict) -> tuple[str, dict, dict]:
    by = {(c["system"], c["variant"], c["method"]): c for c in cells}
    methods = list(s["methods"])
    rows = [(n, v) for n in s["systems"] for v in s["variants"]
            if any((n, v, m) in by for m in methods)]
    wins = {meas: {m: 0 for m in methods} for meas in MEASURES}
    md, losses = systems_table(cells, s) + sweep_table(cells, s) + evidence_table(cells), []
    for meas in MEASURES:
        cols = ["floor"] + methods if meas != "train_s" else methods
        md.append(f"\n**{meas}**" + (f" ({UNITS[meas]})" if UNITS[meas] else "")
                  + (" — lower is better" if LOWER_IS_BETTER[meas] else " — higher is better"))
        md.append("\n| system | variant | " + " | ".join(cols) + " |")
        md.append("|---|---|" + "---|" * len(cols))
        for n, v in rows:
            cells_txt, meds = [], {}
            for m in cols:
                c = by.get((n, v, m))
                if c is None:
                    cells_txt.append("(not run)")
                    continue
                summary = median_mad(values(c, meas))
                med, mad = summary["median"], summary["mad"]
                if m != "floor" and not math.isnan(med):
                    meds[m] = med
                cells_txt.append(_fmt(med, mad))
            if meds and all((n, v, m) in by for m in methods):
                best = (min if LOWER_IS_BETTER[meas] else max)(meds, key=meds.get)
                wins[meas][best] += 1
                ours = {m: meds[m] for m in meds if m in DSR}
                if best not in DSR and ours and meas != "train_s":
                    top = (min if LOWER_IS_BETTER[meas] else max)(ours, key=ours.get)
                    losses.append(f"| {n} | {v} | {meas} | {best} {meds[best]:.3g} | "
                                  f"{top} {ours[top]:.3g} |")
                cells_txt = [f"**{t}**" if c == best else t for c, t in zip(cols, cells_txt)]
            md.append(f"| {n} | {v} | " + " | ".join(cells_txt) + " |")
    md.append("\n**Wins per measure** (best median among the methods, per system and variant; "
              "rows with every method finished)\n")
    md.append("| measure | " + " | ".join(methods) + " |")
    md.append("|---|" + "---|" * len(methods))
    for meas in MEASURES:
        md.append(f"| {meas} | " + " | ".join(str(wins[meas][m]) for m in methods) + " |")
    md.append("\n**Where dsr loses** (rows where another method has the best median; "
              "training time left out)\n")
    md.append("| system | variant | measure | best method, median | best dsr model, median |")
    md.append("|---|---|---|---|---|")
    md.extend(losses or ["| (none) | | | | |"])
    md.append("\n**Diverged / collapsed members** (of all members run)\n")
    md.append("| method | members | diverged | collapsed | failed | cells | wall time (s) |")
    md.append("|---|---|---|---|---|---|---|")
    wall = {}
    for m in ["floor"] + methods:
        cs = [c for c in cells if c["method"] == m]
        mem = [x for c in cs for x in c["members"]]
        wall[m] = sum(c["wall_s"] for c in cs)
        md.append(f"| {m} | {len(mem)} | {sum(bool(x.get('diverged')) for x in mem)} | "
                  f"{sum(bool(x.get('collapsed')) for x in mem)} | "
                  f"{sum(bool(x.get('failed')) for x in mem)} | {len(cs)} | {wall[m]:.0f} |")
    md.extend(bar_table(cells, s))
    md.extend(members_table(cells, s))
    return "\n".join(md) + "\n", wins, wall


def report(out: str, s: dict, log=print) -> dict:
    cells = collect(out, s)
    md, wins, wall = tables(cells, s)
    n_expected = len(s["systems"]) * len(s["variants"]) * (1 + len(s["methods"]))
    result = dict(settings=s, complete=len(cells) == n_expected, n_cells=len(cells),
                  n_cells_expected=n_expected, wins=wins, wall_s_per_method=wall,
                  systems=systems_info(cells), cells=cells)
    write_json(os.path.join(out, "compare.json"), result)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(md)
    from ._figure import figures

    pngs = figures(cells, s, out)
    log(md)
    log(f"{len(cells)} of {n_expected} cells; wrote {out}/compare.json, table.md, "
        + ", ".join(os.path.basename(p) for p in pngs.values()))
    return result
