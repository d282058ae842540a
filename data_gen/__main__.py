"""``python -m data_gen SYSTEM [SYSTEM ...] --out DIR [options]`` — write the paper's data sets.

``paper`` stands for all four App. F sets (lorenz63, lorenz96, bursting_neuron standard and
slow). One ``.npz`` (+ ``.json`` sidecar) per data set; the written paths are printed.
"""

from __future__ import annotations

import argparse
import ast
import sys

from ._dataset import GENERATORS, _writable_folder, generate

PAPER = [("lorenz63", {}), ("lorenz96", {}), ("bursting_neuron", {"preset": "standard"}),
         ("bursting_neuron", {"preset": "slow"})]  # fmt: skip


def _param(text):
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--param expects KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m data_gen", description=__doc__.split("\n")[0])
    ap.add_argument("systems", nargs="+", metavar="SYSTEM",
                    help=f"one or more of {sorted(GENERATORS)} or 'paper'")
    ap.add_argument("--out", required=True, help="output folder (created if missing)")
    ap.add_argument("--n-steps", type=int, help="kept samples per trajectory (paper default)")
    ap.add_argument("--dt", type=float, help="sampling step (paper default)")
    ap.add_argument("--transient", type=int, help="samples discarded before the kept ones")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, help="train noise, fraction of clean std (0.05)")
    ap.add_argument("--preset", choices=["standard", "slow"], help="bursting_neuron preset")
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
    a = ap.parse_args(argv)
    jobs = []
    for name in a.systems:
        if name == "paper":
            jobs += PAPER
        elif name in GENERATORS:
            neuron = name == "bursting_neuron" and a.preset
            jobs.append((name, {"preset": a.preset} if neuron else {}))
        else:
            ap.error(f"SYSTEM: unknown system {name!r}; known: {sorted(GENERATORS)} or 'paper'")
    try:
        out = _writable_folder(a.out, "--out")
    except ValueError as e:
        ap.error(str(e))
    common = dict(n_steps=a.n_steps, dt=a.dt, transient=a.transient, noise=a.noise, rtol=a.rtol,
                  atol=a.atol, solver=a.solver)  # fmt: skip
    common = {k: v for k, v in common.items() if v is not None}
    if a.observe:
        common["observe"] = [int(o) if o.isdigit() else o for o in a.observe.split(",")]
    for name, extra in jobs:
        kw = dict(seed=a.seed, dtype=a.dtype, **common, **dict(a.param), **extra)
        if name == "lds":
            for k in ("dt", "transient", "noise", "rtol", "atol", "solver", "observe"):
                if kw.pop(k, None) is not None:
                    ap.error(f"--{k.replace('_', '-')} does not apply to lds")
            kw["standardize"] = not a.no_standardize and kw.get("standardize", False)
        else:
            kw["standardize"] = not a.no_standardize
            kw["progress"] = False if a.no_progress else None
            if name == "bursting_neuron" and a.full_state:
                kw["full_state"] = True
        try:
            ds = generate(name, **kw)
        except (ValueError, TypeError) as e:
            ap.error(f"{name}: {e}")
        stem = name + (f"_{extra.get('preset') or 'standard'}" if name == "bursting_neuron" else "")
        path = ds.save(out / f"{stem}.npz")
        print(f"wrote {path} (train {ds.train.shape}, test {ds.test.shape}, dt={ds.dt}) "
              f"+ {path.with_suffix('.json')}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
