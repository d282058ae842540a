"""`python -m benchmarks.compare._probe_orbits --run DIR [--orbits K] [--cells SYSTEM/VARIANT ...]
--out FILE`: a finished comparison run's members scored on K test orbits instead of one.

On one 8,000-step test orbit the true system itself can score worse than a model (HyperRössler
clean: the floor 2.82, SINDy 0.886), so one orbit does not resolve the issue's factor 2. Here
the measure changes, not the models or the selection: every reported member of every method of
each cell of run `DIR` — dsr's selected setting resumed from the run's checkpoints (copied;
nothing is trained, the selection is the run's own, by the validation split), SINDy, the ESN
and VAR(1) refitted by the run's own code with its settings and seeds — is scored on K test
orbits. Orbit 0 is the run's test trajectory (its scores reproduce the recorded ones: a check,
printed); orbits 1 … K-1 start from new initial conditions drawn as the run's (`make_data`'s
perturbation of dysts' x0, shrunk where the solve fails as there, numpy seed `ORBIT_SEED`),
the same transient, length and standardization; the floor gets K independent trajectories the
same way, floor k scored against test orbit k. Per orbit the comparison's own
`orbit_measures` (warm-up on the first `WARMUP` points, a free run as long as the rest); per
member the mean over the orbits of D_stsp (inf if any diverged) and of D_H, and a status
(`member_status`). `--sweep` also scores every setting of the cells' dsr sweeps on the same
orbits (and prints, per row, the selected setting and the best one by the orbits). Results
accumulate in one JSON per `--out`, keyed by run and cell; `--table` prints the markdown
tables and the bar's counts.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

import numpy as np

from .._json import write_json
from ._evidence import SYMBOLS
from ._probe_reselect import read_run

ORBIT_SEED = 1
OTHERS = ("SINDy", "ESN", "VAR1")


def new_orbits(system, data: dict, n: int, n_test: int, transient: int) -> tuple:
    """`(tests, floors, shrink)`: `tests` and `floors` each `(n, n_test, N)` float32,
    standardized like `data`: the true system from `2 n` new initial conditions, drawn as
    `make_data` draws its own (`perturbed_trajectories`), numpy seed `ORBIT_SEED`."""
    from ._systems import observed, perturbed_trajectories

    u = np.random.default_rng(ORBIT_SEED).standard_normal((2 * n, system.dim))
    raw, _, shrink = perturbed_trajectories(system, u, n_test, transient)
    z = ((observed(system, raw) - data["mean"]) / data["std"]).astype(np.float32)
    return z[:n], z[n:], shrink


def member_status(statuses: list[str]) -> str:
    """"diverged" if any orbit diverged, else "ok" when at least half the orbits are, else the
    most frequent other status."""
    if "diverged" in statuses:
        return "diverged"
    if 2 * statuses.count("ok") >= len(statuses):
        return "ok"
    return Counter(s for s in statuses if s != "ok").most_common(1)[0][0]


def _kept(r: dict) -> dict:
    """What is kept of one orbit's measures."""
    return dict(D_stsp=r["D_stsp"], D_H=r["D_H"], status=r["status"])


def _summary(orbits: list[dict]) -> dict:
    d = [float(o["D_stsp"]) for o in orbits]
    return dict(orbits=orbits, D_stsp=float(np.mean(d)) if np.all(np.isfinite(d)) else np.inf,
                D_H=float(np.mean([float(o["D_H"]) for o in orbits])),
                status=member_status([o["status"] for o in orbits]))


def _score(m, tests: list, key_index: int) -> dict:
    import jax

    from ._measures import WARMUP, orbit_measures
    from ._probe_reselect import _free_run

    out = []
    for x in tests:
        x_true = np.asarray(x[WARMUP:], np.float64)
        out.append(_kept(orbit_measures(x_true, _free_run(m, x[:WARMUP], len(x_true)),
                                        jax.random.key(key_index))))
    return _summary(out)


def _copied_checkpoints(run: str, name: str, variant: str, tmp: str) -> None:
    """The cell's dsr checkpoints (every class program, history and wall time) copied into
    `tmp/ckpt`, so that resuming them there leaves the run's own untouched."""
    os.makedirs(os.path.join(tmp, "ckpt"), exist_ok=True)
    for f in glob.glob(os.path.join(run, "ckpt", f"{name}__{variant}__*")):
        shutil.copyfile(f, os.path.join(tmp, "ckpt", os.path.basename(f)))


def _orbits(s: dict, name: str, variant: str, n_orbits: int) -> tuple:
    """`(system, data, tests, floors, shrink)`: the run's data and `n_orbits` test and floor
    trajectories, the run's own first (`score_cell` and `score_sweep` share one)."""
    from ._run import VARIANTS
    from ._systems import get_system, make_data

    system = get_system(name, s["pts_per_period"], s.get("numpy_rhs", False))
    data = make_data(system, s["n_train"], s["n_test"], s["transient"], VARIANTS[variant],
                     s["seed"])
    tests, floors, shrink = new_orbits(system, data, n_orbits - 1, s["n_test"],
                                       s["transient"])
    return system, data, [data["test"], *tests], [data["floor"], *floors], shrink


def _reproduced(members: list) -> list[int]:
    """`[members whose orbit-0 D_stsp equals the recorded one, members with a record]`."""
    same = [abs(r["orbits"][0]["D_stsp"] - r["recorded_D_stsp"])
            <= 1e-6 * max(1.0, abs(r["recorded_D_stsp"])) for r in members
            if r["recorded_D_stsp"] is not None and np.isfinite(r["recorded_D_stsp"])]
    return [sum(same), len(same)]


def missing_checkpoints(run: str, s: dict, cells: list) -> list[str]:
    """The cells (`SYSTEM/VARIANT`) whose dsr sweep has no checkpoint under `run/ckpt`:
    resuming nothing would train the sweep again, which is not this probe's job."""
    from ._dsr_method import MODELS

    if not any(m in MODELS for m in s["methods"]):
        return []
    return [c for c in cells if not glob.glob(os.path.join(
        run, "ckpt", "{}__{}__*.ckpt".format(*c.split("/"))))]


def score_cell(run: str, s: dict, name: str, variant: str, orbits: tuple, log=print) -> dict:
    """Every method's members and the floor of one cell on its test `orbits` (`_orbits`)."""
    import jax

    from ._cells import load_cell
    from ._dsr_method import MODELS as DSR_MODELS
    from ._measures import WARMUP, orbit_measures
    from ._run import _members

    t0 = time.perf_counter()
    system, data, tests, floors, shrink = orbits
    fl = [orbit_measures(np.asarray(t[WARMUP:], np.float64), np.asarray(f[WARMUP:], np.float64),
                         jax.random.key(7)) for t, f in zip(tests, floors)]
    cell = dict(run=run, cell=f"{name}/{variant}", orbits=len(tests), orbit_seed=ORBIT_SEED,
                ic_shrink=dict(run=system.ic_shrink, new=shrink),
                floor=_summary([_kept(r) for r in fl]), methods={}, reproduced={})
    rec_floor = load_cell(run, name, variant, "floor")
    if rec_floor is not None:
        log(f"  floor: orbit 0 {fl[0]['D_stsp']:.6g}, recorded "
            f"{float(rec_floor['members'][0]['D_stsp']):.6g}")
    for method in s["methods"]:
        rec = (load_cell(run, name, variant, method) or {}).get("members", [])
        with tempfile.TemporaryDirectory() as tmp:
            if method in DSR_MODELS:
                _copied_checkpoints(run, name, variant, tmp)
            ms, _ = _members(method, data, s, system, tmp, name, variant)
        members = []
        for i, m in enumerate(ms):
            r = _score(m, tests, 100 + i)
            r["recorded_D_stsp"] = float(rec[i]["D_stsp"]) if i < len(rec) else None
            members.append(r)
        cell["methods"][method] = members
        cell["reproduced"][method] = _reproduced(members)
        log(f"  {method}: {len(members)} member(s), orbit 0 reproduces the recorded D_stsp in "
            "{} of {}".format(*cell["reproduced"][method]))
    cell["seconds"] = time.perf_counter() - t0
    return cell


def score_sweep(run: str, s: dict, name: str, variant: str, tests: list) -> dict:
    """Every member of the cell's dsr sweep (every setting, resumed: nothing trained) on the
    same test orbits `tests`, member `seed` k with Monte-Carlo key 100 + k as the selected
    setting's members: per setting the median of its members' means over the orbits."""
    from ._dsr_method import as_member
    from ._probe_reselect import finished_cell

    t0 = time.perf_counter()
    table = finished_cell(run, s, name, variant)[2]
    members = []
    for i, r in enumerate(table.rows):
        m = _score(as_member(table.member(i), 0.0, {}), tests, 100 + int(r["seed"]))
        members.append(dict(m, member=i, setting=int(r["setting"]), seed=int(r["seed"])))
    n_set = len(table.settings)
    med = [float(np.median([m["D_stsp"] for m in members if m["setting"] == g]))
           for g in range(n_set)]
    return dict(run=run, cell=f"{name}/{variant}", orbits=len(tests), selected=int(table.selected),
                settings=[dict(g) for g in table.settings], setting_medians=med,
                members=members, seconds=time.perf_counter() - t0)


def _median(members: list, key: str) -> float:
    return float(np.median([float(m[key]) for m in members]))


def row(cell: dict, orbit: int | None = None) -> dict:
    """The bar's quantities of one cell: on the mean over orbits (`orbit=None`) or on one
    orbit (`orbit=0`: the run's own test)."""
    meth = {k: [m if orbit is None else _kept(m["orbits"][orbit]) for m in v]
            for k, v in cell["methods"].items()}
    dsr_name = next(k for k in meth if k not in OTHERS)
    mine = meth[dsr_name]
    others = {k: v for k, v in meth.items() if k in OTHERS}
    best_d = min(others, key=lambda k: _median(others[k], "D_stsp"))
    best_h = min(others, key=lambda k: _median(others[k], "D_H"))
    d, dh = _median(mine, "D_stsp"), _median(mine, "D_H")
    od, oh = _median(others[best_d], "D_stsp"), _median(others[best_h], "D_H")
    return dict(dsr=dsr_name, D_stsp=d, D_H=dh, best_other=best_d, other_D_stsp=od,
                best_other_H=best_h, other_D_H=oh, ratio=d / od,
                best_D_stsp=d < od, best_D_H=dh < oh,
                not_ok=sum(m["status"] != "ok" for m in mine) >= len(mine) / 2,
                members_ok=sum(m["status"] == "ok" for m in mine), members=len(mine))


def counts(cells: list, orbit: int | None = None) -> dict:
    rows = [row(c, orbit) for c in cells]
    return dict(rows=len(rows), best_D_stsp=sum(r["best_D_stsp"] for r in rows),
                best_D_H=sum(r["best_D_H"] for r in rows),
                within_2x=sum(r["ratio"] <= 2 for r in rows),
                worst_ratio=max(r["ratio"] for r in rows),
                median_not_ok=sum(r["not_ok"] for r in rows),
                members_ok=sum(r["members_ok"] for r in rows),
                members=sum(r["members"] for r in rows))


def _g(x: float) -> str:
    x = float(x)
    return "inf" if not np.isfinite(x) else f"{x:.3g}"


def _mad(v) -> float:
    v = np.asarray(v, np.float64)
    return float(np.median(np.abs(v - np.median(v))))


def table(cells: list) -> str:
    """Markdown: per row the floor, each method's median of the members' orbit means, dsr's
    every member, and the ratios on 8 orbits and on the run's one orbit."""
    head = ("| system | variant | floor | dsr members (mean over orbits) | dsr median ± MAD | "
            "SINDy | ESN | VAR(1) | × best other (all orbits) | × best other (orbit 0) | "
            "D_H dsr (× best other) | dsr members ok |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cells:
        r, r0 = row(c), row(c, 0)
        name, variant = c["cell"].split("/")
        mine = c["methods"][r["dsr"]]
        med = {k: _g(_median(v, "D_stsp")) for k, v in c["methods"].items()}
        lines.append(
            f"| {name} | {variant} | {_g(c['floor']['D_stsp'])} | "
            + ", ".join(_g(m["D_stsp"]) for m in mine)
            + f" | {_g(r['D_stsp'])} ± {_g(_mad([m['D_stsp'] for m in mine]))} | "
            + " | ".join(med.get(k, "–") for k in OTHERS)
            + f" | {r['ratio']:.3g} × {r['best_other']} | {r0['ratio']:.3g} × "
            f"{r0['best_other']} | {_g(r['D_H'])} ({r['D_H'] / r['other_D_H']:.2g} × "
            f"{r['best_other_H']}) | {r['members_ok']}/{r['members']} |")
    return "\n".join(lines)


def _setting_name(st: dict) -> str:
    model = st.get("model")
    cls = "" if model is None else ("clipped, " if model.startswith("clipped") else "plain, ")
    return cls + ", ".join(f"{SYMBOLS.get(k, k)} {v:g}" for k, v in st.items() if k != "model")


def sweep_table(pairs: list) -> str:
    """Markdown: per row (`(cell record, its --sweep record)` pairs) the setting the
    validation split selected and the best setting by the orbits' test, each as its median
    against the best other method's, and how many settings are within 2 × of it."""
    head = ("| system | variant | best other | selected (validation) | × best other | "
            "best by the test | × best other | settings within 2 × |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c, w in pairs:
        r = row(c)
        ratios = [float(m) / r["other_D_stsp"] for m in w["setting_medians"]]
        best = int(np.argmin(ratios))
        name, variant = c["cell"].split("/")
        lines.append(f"| {name} | {variant} | {r['best_other']} {_g(r['other_D_stsp'])} | "
                     f"{_setting_name(w['settings'][w['selected']])} | "
                     f"{ratios[w['selected']]:.3g} × | {_setting_name(w['settings'][best])} | "
                     f"{ratios[best]:.3g} × | {sum(x <= 2 for x in ratios)}/{len(ratios)} |")
    return "\n".join(lines)


def count_lines(cells: list) -> list[str]:
    out = []
    for label, orbit in (("mean over the orbits", None), ("orbit 0 (the run's test)", 0)):
        k = counts(cells, orbit)
        out.append(f"- {label}: best median D_stsp {k['best_D_stsp']}/{k['rows']}, best median "
                   f"D_H {k['best_D_H']}/{k['rows']}, within 2 × {k['within_2x']}/{k['rows']} "
                   f"(worst {k['worst_ratio']:.3g} ×), rows whose median member is not ok "
                   f"{k['median_not_ok']}, members ok {k['members_ok']}/{k['members']}")
    return out


def _score_cells(a, s: dict, cells: list, record: dict, orbits) -> None:
    for c in cells:
        key = f"{a.run}:{c}"
        if key in record and record[key]["orbits"] == a.orbits:
            print(f"{c}: done before, skipped", flush=True)
            continue
        print(f"{c}:", flush=True)
        record[key] = score_cell(a.run, s, *c.split("/"), orbits(c),
                                 log=lambda x: print(x, flush=True))
        write_json(a.out, record)
        r = row(record[key])
        print(f"  dsr median {r['D_stsp']:.3g} = {r['ratio']:.3g} × {r['best_other']} "
              f"(orbit 0: {row(record[key], 0)['ratio']:.3g} ×); "
              f"{record[key]['seconds']:.0f} s", flush=True)


def _score_sweeps(a, s: dict, cells: list, record: dict, orbits) -> None:
    """`--sweep`: every setting of each cell's dsr sweep, against the best other method's
    median on the same orbits (the cell's own record, scored first if missing)."""
    _score_cells(a, s, cells, record, orbits)
    for c in cells:
        key = f"{a.run}:{c}:sweep"
        if key not in record or record[key]["orbits"] != a.orbits:
            record[key] = score_sweep(a.run, s, *c.split("/"), orbits(c)[2])
            write_json(a.out, record)
        w, other = record[key], row(record[f"{a.run}:{c}"])
        print(f"{c}, every setting of dsr's sweep on {a.orbits} orbits (median of the "
              f"members' means; {other['best_other']} {other['other_D_stsp']:.3g}):")
        for g, (st, med) in enumerate(zip(w["settings"], w["setting_medians"])):
            ds = ", ".join(_g(m["D_stsp"]) for m in w["members"] if m["setting"] == g)
            mark = " (selected)" if g == w["selected"] else ""
            print(f"  {g} {st}{mark}: {ds}; median {_g(med)} = "
                  f"{float(med) / other['other_D_stsp']:.3g} ×", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_orbits",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, metavar="DIR", help="a comparison run's --out")
    p.add_argument("--orbits", type=int, default=8, metavar="K",
                   help="test orbits per member, the run's own first (default 8)")
    p.add_argument("--cells", nargs="*", metavar="SYSTEM/VARIANT",
                   help="default: every cell of the run")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record (appended)")
    p.add_argument("--sweep", action="store_true",
                   help="also every member of every setting of the cells' dsr sweeps")
    p.add_argument("--table", action="store_true",
                   help="print the record's table and counts for --run; score nothing")
    a = p.parse_args(argv)
    if a.orbits < 1:
        p.error(f"--orbits must be ≥ 1; got {a.orbits}")
    s, cells, record = read_run(p, a.run, a.cells, a.out)
    missing = [] if a.table else missing_checkpoints(a.run, s, cells)
    if missing:
        p.error(f"--run {a.run}: no dsr checkpoint under {os.path.join(a.run, 'ckpt')} for "
                f"{', '.join(missing)} (checkpoints are not committed: the probe runs in the "
                f"checkout that ran the comparison)")
    if not a.table:  # each cell's data and orbits made once, for its record and its sweep
        orbits = functools.cache(lambda c: _orbits(s, *c.split("/"), a.orbits))
        (_score_sweeps if a.sweep else _score_cells)(a, s, cells, record, orbits)
    done = [record[f"{a.run}:{c}"] for c in cells if f"{a.run}:{c}" in record]
    if done:
        print(table(done))
        print("\n".join(count_lines(done)))
    pairs = [(record[f"{a.run}:{c}"], record[f"{a.run}:{c}:sweep"]) for c in cells
             if f"{a.run}:{c}:sweep" in record and f"{a.run}:{c}" in record]
    if pairs and (a.sweep or a.table):
        print(sweep_table(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
