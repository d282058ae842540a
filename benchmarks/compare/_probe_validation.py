"""`python -m benchmarks.compare._probe_validation [--systems NAME ...] --out FILE`: how well
the validation score that selects dsr's setting can tell good models from bad ones, measured
on the true system itself.

The comparison's data (clean and noisy variant, seed 0): the validation split (the last 2,000
training samples) is what `dsr.fit(validation=...)` scores free runs against. Here the "free
runs" are pieces of the true system's own independent (floor) trajectory, which a perfect
model would reproduce:

- `val_score`: `dsr.fit`'s validation D_stsp (binning, `n_bins(T, 3)` bins per axis, on the
  leading 3 principal components where N > 3), each of the four 2,000-step pieces of the
  true trajectory against the validation split — the score a perfect member would get — and
  the whole 8,000 steps against it (a free run 4 × as long);
- `test_D_stsp`: the comparison's test measure (Gaussian-mixture D_stsp, 20,000 Monte-Carlo
  samples) of the same pieces and of all 8,000 steps against the clean test trajectory.

If the true system's validation score scatters over a range as wide as the sweep's members'
scores, the selection among settings is decided by that scatter. `--run DIR` puts the
members' scores of a comparison run beside it (from `DIR/cells/*__shPLRNN.json`: the range
over its 24 members, and the selected setting's median). One JSON with every number; a
table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._systems import DEFAULT_SYSTEMS

PIECES = 4


def probe_one(name: str, variant: str) -> dict:
    import jax
    import numpy as np

    from dsr._training._validation import PCA_DIMS, n_bins, principal_axes
    from dsr.metrics import state_space_divergence
    from dsr.metrics._dstsp_bins import binned_divergence

    from ._run import VARIANTS
    from ._systems import get_system, make_data

    s = get_system(name, 100)
    d = make_data(s, 10_000, 8_000, 2_000, VARIANTS[variant], 0)
    val, floor, test = (np.asarray(d[k], np.float64) for k in ("val", "floor", "test"))
    if val.shape[1] > PCA_DIMS:  # as dsr.fit's validation does
        mean, basis = principal_axes(val)
        space = lambda x: (x - mean) @ basis  # noqa: E731
    else:
        space = lambda x: x  # noqa: E731
    bins = n_bins(len(val), min(val.shape[1], PCA_DIMS))
    n = len(val)
    pieces = [floor[i * n:(i + 1) * n] for i in range(PIECES)]
    vscore = lambda x: float(binned_divergence(space(val), space(x), bins)[0])  # noqa: E731

    def gmm(x):
        return float(state_space_divergence(test, x, n_samples=20_000, key=jax.random.key(7),
                                            progress=False).value)

    return dict(system=name, variant=variant, n_val=n, bins=bins,
                val_score_pieces=[vscore(p) for p in pieces], val_score_whole=vscore(floor),
                test_D_stsp_pieces=[gmm(p) for p in pieces], test_D_stsp_whole=gmm(floor))


def sweep_scores(run: str, name: str, variant: str) -> dict | None:
    """The sweep's validation scores in a comparison run's dsr cell (None: no such cell)."""
    path = os.path.join(run, "cells", f"{name}__{variant}__shPLRNN.json")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        sw = json.load(fh)["sweep"]
    scores = sorted(float(r["score"]) for r in sw["rows"])
    return dict(run=run, member_min=scores[0], member_max=scores[-1],
                selected_setting_median=float(sw["setting_scores"][sw["selected"]]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_validation",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS), metavar="NAME")
    p.add_argument("--run", metavar="DIR", help="a comparison run whose sweeps' scores to show")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record")
    a = p.parse_args(argv)
    rows = []
    print("| system | variant | validation score of the true system: 4 pieces of 2,000 steps "
          "(8,000) | test D_stsp of the same (8,000) | sweep members' validation scores "
          "(selected setting's median) |\n|---|---|---|---|---|")
    for name in a.systems:
        for variant in ("clean", "noisy"):
            r = probe_one(name, variant)
            r["sweep"] = sw = sweep_scores(a.run, name, variant) if a.run else None
            rows.append(r)
            f = lambda v: ", ".join(f"{x:.3g}" for x in v)  # noqa: E731
            members = ("" if sw is None else f"{sw['member_min']:.3g} – {sw['member_max']:.3g} "
                       f"({sw['selected_setting_median']:.3g})")
            print(f"| {name} | {variant} | {f(r['val_score_pieces'])} "
                  f"({r['val_score_whole']:.3g}) | {f(r['test_D_stsp_pieces'])} "
                  f"({r['test_D_stsp_whole']:.3g}) | {members} |", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(dict(command="python -m benchmarks.compare._probe_validation " +
                       " ".join(sys.argv[1:] if argv is None else argv), rows=rows), fh,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
