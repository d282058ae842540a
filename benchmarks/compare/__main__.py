"""`python -m benchmarks.compare [--quick] [--systems NAME ... | --extra] [--methods ...]
[--members K] [--runs R] [--steps N] [--dsr-grid NAME] [--dsr-denoise | --denoise-all]
[--dsr-status-factor F] [--dsr-hidden L] --out DIR`: dsr (a validation-scored
sweep of shPLRNN ensembles by GTF, per cell) against SINDy, an echo-state network and VAR(1)
on dysts systems and Lorenz-96, clean and with 5 % observation noise; every member of every
method in `DIR/compare.json`, a table (`DIR/table.md`, printed) and one figure per variant
(`DIR/compare_clean.png`, `DIR/compare_noisy.png`). Finished (system, variant, method) cells
are checkpointed under `DIR/cells/` (and dsr's training under `DIR/ckpt/`): rerunning the
same command resumes.
`--check-systems` makes only the data sets (no training) and says, per system, how or why not.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ._cells import check_settings
from ._run import DEFAULT_METHODS, METHODS, VARIANTS
from ._systems import DEFAULT_SYSTEMS, EXTRA_SYSTEMS, QUICK_SYSTEMS, check_systems

DEFAULT = dict(members=4, runs=3, steps=3000, n_train=10_000, n_test=8_000, pts_per_period=100,
               transient=2_000, horizon=400, n_rmse=25, seed=0, grid="full")
QUICK = dict(DEFAULT, members=2, runs=2, steps=60, n_train=2_500, n_test=2_000, horizon=100,
             transient=500, variants=["clean"], grid="small")


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help=f"{len(QUICK_SYSTEMS)} systems, K = 2, {QUICK['steps']} updates")
    p.add_argument("--systems", nargs="+", metavar="NAME",
                   help="dysts system names (or Lorenz96 = data_gen's); default: "
                        + " ".join(DEFAULT_SYSTEMS))
    p.add_argument("--extra", action="store_true",
                   help="the four systems named before the rerun and not tuned on instead of "
                        "the default set: " + " ".join(EXTRA_SYSTEMS))
    p.add_argument("--methods", nargs="+", choices=METHODS,
                   help="default: " + " ".join(DEFAULT_METHODS) + " (--quick: all of them)")
    p.add_argument("--variants", nargs="+", choices=tuple(VARIANTS),
                   help="clean and/or noisy (5 %% Gaussian observation noise on the training "
                        "data); default: both (--quick: clean)")
    p.add_argument("--members", type=int, metavar="K",
                   help="ensemble members / seeds of the ESN")
    p.add_argument("--runs", type=int, metavar="R",
                   help="dsr: seeds per setting of its sweep (the selected setting's R "
                        "members are reported)")
    p.add_argument("--dsr-grid", choices=("alpha-lr", "alpha-noise", "alpha-model"),
                   help="dsr's 8 settings: α {0.05, 0.1, 0.2, 0.3} × lr {2e-3, 5e-3} "
                        "(alpha-lr, the default), × teacher noise σ {0, 0.05} at lr 5e-3 "
                        "(alpha-noise) or × model class {shPLRNN, clipped_shPLRNN} at lr 5e-3 "
                        "(alpha-model; with --methods naming shPLRNN as dsr's only model)")
    p.add_argument("--dsr-denoise", action="store_true",
                   help="dsr trains and validates on its data smoothed by dsr.denoise "
                        "(Savitzky-Golay, per noisy channel; a no-op on noise-free data)")
    p.add_argument("--denoise-all", action="store_true",
                   help="every method (SINDy, the ESN and VAR(1) too) trains and is tuned on "
                        "the data smoothed by dsr.denoise")
    p.add_argument("--steps", type=int, metavar="N",
                   help="dsr training updates (of every member of its sweep)")
    p.add_argument("--dsr-status-factor", type=int, metavar="F",
                   help="dsr's validation free runs judge their status over F x the "
                        "validation length (dsr.fit's status_steps; default 1, as every "
                        "recorded run; dsr.fit's own default is 4)")
    p.add_argument("--dsr-hidden", type=int, metavar="L",
                   help="dsr's hidden units L of the shPLRNN classes (default 256, as every "
                        "recorded run; the AL-RNN keeps its own sizes)")
    p.add_argument("--numpy-rhs", action="store_true",
                   help="for every dysts system use dysts' own NumPy right-hand side (scipy "
                        "solve_ivp for the data, RK4 through a host callback for the floor), "
                        "the fallback otherwise taken only where its jax.numpy copy does not "
                        "trace or disagrees: slower, a cross-check")
    p.add_argument("--check-systems", action="store_true",
                   help="train nothing: only make the data set of each --systems name (default: "
                        "every dysts flow), each in its own process (≤ 300 s), and say how or "
                        "why not, one line each, in DIR/check_systems.json")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--report-only", action="store_true",
                   help="train nothing: tables and figure from the cells already in DIR "
                        "(e.g. while a run is still going)")
    p.add_argument("--docs", metavar="PAGE",
                   help="also write the tables and figure into this markdown page")
    p.add_argument("--section", default="compare", metavar="NAME",
                   help="with --docs: the page's section to fill, between <!-- NAME:begin --> "
                        "and <!-- NAME:end --> (default: compare)")
    a = p.parse_args(argv)
    _check(p, a)
    return a


def _check(p, a) -> None:
    """`parse`'s checks across options: each a usage error naming the flags."""
    for opt in ("members", "runs", "steps", "dsr_status_factor", "dsr_hidden"):
        v = getattr(a, opt)
        if v is not None and v < 1:
            p.error(f"--{opt.replace('_', '-')} must be ≥ 1; got {v}")
    if a.section != "compare" and not a.docs:
        p.error("--section needs --docs PAGE")
    if not a.section.replace("_", "").replace("-", "").isalnum():
        p.error(f"--section: letters, digits, - and _ only; got {a.section!r}")
    if a.quick and a.dsr_grid == "alpha-noise":
        p.error("--dsr-grid alpha-noise: --quick sweeps its own small grid (α 0.1, 0.2)")
    if a.dsr_grid == "alpha-model":
        from ._dsr_method import MODELS

        named = a.methods or (METHODS if a.quick else DEFAULT_METHODS)
        dsr_methods = [m for m in named if m in MODELS]
        if dsr_methods != ["shPLRNN"]:
            p.error("--dsr-grid alpha-model sweeps the model class itself: --methods must name "
                    f"shPLRNN as dsr's only model; got {dsr_methods}")
    if a.dsr_denoise and a.denoise_all:
        p.error("--dsr-denoise and --denoise-all: give one of them (--denoise-all includes dsr)")
    if a.extra and a.systems:
        p.error("--extra and --systems: give one of them")


def main(argv=None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    base = QUICK if a.quick else DEFAULT
    if a.check_systems:
        from ._check import check_systems_run
        from ._systems import dysts_names

        names = a.systems or dysts_names()
        s = dict(base, numpy_rhs=True) if a.numpy_rhs else dict(base)
        rows = check_systems_run(names, s, a.out)
        return 0 if all(r["status"].startswith("ok") for r in rows) else 1
    named = EXTRA_SYSTEMS if a.extra else (QUICK_SYSTEMS if a.quick else DEFAULT_SYSTEMS)
    systems = check_systems(a.systems or named, a.numpy_rhs, base["pts_per_period"])
    s = dict(base, systems=systems,
             methods=list(a.methods or (METHODS if a.quick else DEFAULT_METHODS)),
             quick=a.quick)
    if a.numpy_rhs:  # recorded only when set: the settings of earlier runs stay valid
        s["numpy_rhs"] = True
    s["variants"] = list(a.variants or s.get("variants", VARIANTS))
    for opt in ("members", "runs", "steps"):
        if getattr(a, opt) is not None:
            s[opt] = getattr(a, opt)
    if a.dsr_grid in ("alpha-noise", "alpha-model"):  # recorded only when set: earlier runs
        s["dsr_grid"] = a.dsr_grid
    if a.dsr_status_factor is not None:  # recorded only when set: earlier runs stay valid
        s["dsr_status_factor"] = a.dsr_status_factor
    if a.dsr_denoise or a.denoise_all:  # recorded only when set: earlier runs stay valid
        s["dsr_denoise"] = True
    if a.denoise_all:
        s["denoise_all"] = True
    from ._dsr_method import SETTINGS, grid_of

    axes, base = grid_of(s)
    s["dsr"] = dict(SETTINGS, grid=axes, unless_in_grid=base)  # recorded, and checked
    if a.dsr_hidden is not None:  # recorded only when set: earlier runs stay valid
        s["dsr_hidden"] = s["dsr"]["hidden"] = a.dsr_hidden
    if a.report_only and not os.path.exists(os.path.join(a.out, "settings.json")):
        raise SystemExit(f"error: --out {a.out}: no run there (no settings.json)")
    if a.docs:
        from ._docs import check_page

        check_page(a.docs, a.section)
    os.makedirs(a.out, exist_ok=True)
    check_settings(a.out, s)
    from ._report import report
    from ._run import run

    t0 = time.perf_counter()
    log_path = os.path.join(a.out, "log.txt")

    def log(msg):
        line = f"[{time.perf_counter() - t0:7.1f} s] {msg}"
        print(line, flush=True)
        with open(log_path, "a") as f:
            f.write(line + "\n")

    cmd = f"python -m benchmarks.compare {' '.join(sys.argv[1:] if argv is None else argv)}"
    if a.report_only:
        result = report(a.out, s, print)
    else:
        log(cmd)
        try:
            run(a.out, s, log)
        except KeyboardInterrupt as e:
            log(f"interrupted ({e}); the same command resumes")
            return 130
        result = report(a.out, s, log)
    if a.docs:
        from ._docs import write_docs

        write_docs(a.docs, a.out, result, cmd, a.section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
