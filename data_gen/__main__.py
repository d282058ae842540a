"""``python -m data_gen SYSTEM [SYSTEM ...] --out DIR [options]`` — write the paper's data sets.

``paper`` stands for all four sets of Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. F
(lorenz63, lorenz96, bursting_neuron standard and slow). One ``.npz`` (+ ``.json`` sidecar) per
data set, named after the system, its preset and every option that differs from its default
(e.g. ``lorenz63_observe=x_rho=35.npz``); an existing file is only replaced with ``--force``.
The written paths are printed. Bad input: one line on stderr and exit code 2 (systems, presets,
option and parameter names and existing files are checked for all data sets before the first is
generated; values when each is generated, before it is integrated); a failed solve or write:
one line and exit code 1.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from ._dataset import writable_folder
from ._filenames import generator_defaults, variant_stem
from ._registry import GENERATORS, generate
from ._systems import SYSTEMS

PAPER = [("lorenz63", {}), ("lorenz96", {"preset": "paper"}),
         ("bursting_neuron", {"preset": "standard"}), ("bursting_neuron", {"preset": "slow"})]
FLAGS = {"n_steps": "--n-steps", "dt": "--dt", "transient": "--transient", "seed": "--seed",
         "noise": "--noise", "preset": "--preset", "full_state": "--full-state",
         "observe": "--observe", "dtype": "--dtype", "rtol": "--rtol", "atol": "--atol",
         "solver": "--solver", "standardize": "--no-standardize", "path": "--out"}  # fmt: skip
NOT_LDS = ("dt", "transient", "noise", "rtol", "atol", "solver", "observe")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _param(text):
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def _parser():
    ap = _Parser(prog="python -m data_gen", description=(__doc__ or "").split("\n")[0])
    ap.add_argument("systems", nargs="+", metavar="SYSTEM",
                    help=f"one or more of {sorted(GENERATORS)} or 'paper'")
    ap.add_argument("--out", required=True, help="output folder (created if missing)")
    ap.add_argument("--force", action="store_true", help="replace existing files")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the files that would be written, generate nothing")
    ap.add_argument("--n-steps", type=int, help="kept samples per trajectory (paper default)")
    ap.add_argument("--dt", type=float, help="sampling step (paper default)")
    ap.add_argument("--transient", type=int, help="samples discarded before the kept ones")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, help="train noise, fraction of clean std (0.05)")
    ap.add_argument("--preset", help="lorenz96: paper (default), short_period; "
                    "bursting_neuron: standard (default), slow")
    ap.add_argument("--full-state", action="store_true", help="bursting_neuron: keep V, n, h")
    ap.add_argument("--observe", help="comma-separated observed variables, e.g. x or 0,1")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rtol", type=float)
    ap.add_argument("--atol", type=float)
    ap.add_argument("--solver", choices=["tsit5", "dopri5", "dopri8"])
    ap.add_argument("--no-standardize", action="store_true")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--param", type=_param, action="append", default=[],
                    help="KEY=VALUE parameter override (repeatable), e.g. F0=10")  # fmt: skip
    return ap


def _jobs(ap, a):
    """``[(system, {"preset": ...}), ...]`` from the SYSTEM arguments and ``--preset``."""
    jobs = []
    for name in a.systems:
        if name == "paper":
            if a.preset is not None:
                ap.error("--preset does not combine with 'paper' (it writes fixed presets)")
            jobs += PAPER
        elif name in GENERATORS:
            presets = SYSTEMS[name].presets if name in SYSTEMS else None
            if presets and a.preset is not None and a.preset not in presets:
                ap.error(f"--preset: {name} has presets {sorted(presets)}; got {a.preset!r}")
            jobs.append((name, {"preset": a.preset} if presets and a.preset else {}))
        else:
            ap.error(f"SYSTEM: unknown system {name!r}; known: {sorted(GENERATORS)} or 'paper'")
    if a.preset is not None and not any("preset" in extra for _, extra in jobs):
        ap.error(f"--preset: none of {a.systems} has presets")
    if a.full_state and not any(name == "bursting_neuron" for name, _ in jobs):
        ap.error("--full-state applies to bursting_neuron only")
    return jobs


def _options(ap, a, name, extra):
    """The keyword arguments of ``generate(name, ...)`` given on the command line."""
    kw = dict(seed=a.seed, dtype=a.dtype, n_steps=a.n_steps, dt=a.dt, transient=a.transient,
              noise=a.noise, rtol=a.rtol, atol=a.atol, solver=a.solver)  # fmt: skip
    kw = {k: v for k, v in kw.items() if v is not None}
    if a.observe:
        kw["observe"] = [int(o) if o.isdigit() else o for o in map(str.strip, a.observe.split(","))]
    for k in NOT_LDS if name == "lds" else ():
        if k in kw:
            ap.error(f"{FLAGS[k]} does not apply to lds")
    if name == "bursting_neuron" and a.full_state:
        kw["full_state"] = True
    kw.update(extra)
    seen = set()
    for key, value in a.param:
        if key in kw or key in seen:
            given = FLAGS.get(key, f"--param {key}") if key not in seen else f"--param {key}"
            ap.error(f"--param {key}: also given as {given}")
        seen.add(key)
        kw[key] = value
    known = generator_defaults(name, kw.get("preset"))
    unknown = sorted(set(kw) - set(known) - {"preset"})
    if unknown:
        ap.error(f"--param {unknown[0]}: not a parameter of {name}; known: "
                 f"{sorted(set(known) - set(FLAGS) - {'progress', 'period', 'extra_meta'})}")
    kw["standardize"] = not a.no_standardize and kw.get("standardize", name != "lds")
    return kw


def _cli_message(message, params):
    """A library message with argument names replaced by the options that set them."""
    def flag(m):
        name = m.group(1)
        return f"--param {name}" if name in params else FLAGS.get(name, m.group(0))

    return re.sub(r"`([A-Za-z_][A-Za-z0-9_]*)`", flag, message)


def _plan(ap, a):
    """``{path: (system, options)}`` of the files to write, checked against existing files."""
    out = Path(a.out)
    if not a.dry_run:
        try:
            writable_folder(out, "--out")
        except ValueError as e:
            ap.error(str(e))
    plan = {}
    for name, extra in _jobs(ap, a):
        kw = _options(ap, a, name, extra)
        plan.setdefault(out / f"{variant_stem(name, kw)}.npz", (name, kw))
    existing = [p for p in plan if p.exists() or p.with_suffix(".json").exists()]
    if a.dry_run:
        for path in plan:
            note = " (exists: needs --force)" if path in existing and not a.force else ""
            print(f"would write {path} + {path.with_suffix('.json')}{note}")
        return {}
    if existing and not a.force:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        ap.error(f"{existing[0]} exists{more}; pass --force to overwrite")
    return plan


def main(argv=None):
    ap = _parser()
    a = ap.parse_args(argv)
    plan = _plan(ap, a)
    params = {key for key, _ in a.param}
    for path, (name, kw) in plan.items():
        if name != "lds":
            kw = dict(kw, progress=False if a.no_progress else None)
        try:
            ds = generate(name, **kw)
        except (ValueError, TypeError) as e:
            ap.error(f"{name}: {_cli_message(str(e), params)}")
        except RuntimeError as e:
            ap.exit(1, f"{ap.prog}: error: {name}: {e}\n")
        try:
            ds.save(path)
        except (OSError, ValueError) as e:
            ap.exit(1, f"{ap.prog}: error: cannot write {path}: {e}\n")
        print(f"wrote {path} (train {ds.train.shape}, test {ds.test.shape}, dt={ds.dt}) "
              f"+ {path.with_suffix('.json')}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("python -m data_gen: interrupted")
