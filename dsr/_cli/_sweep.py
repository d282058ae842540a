"""`python -m dsr fit DATA --sweep alpha=0.05,0.1 lr=1e-3,3e-3 --runs 2 --validation 0.2`:
the grid of the swept options (their product) times `--runs` seeds, trained as one sweep
(`dsr.sweep` + `dsr.fit`, one program); the best setting's members are the run's model, and
every member's setting and scores go to `sweep.csv` and `sweep.png` in the run folder."""

from __future__ import annotations

import json
import os

import numpy as np

from .._io import write_bytes
from .._sweep._build import sweep
from .._sweep._grid import Grid
from ._converters import SWEEP_KEYS
from ._errors import CLIError

CSV, PICTURE = "sweep.csv", "sweep.png"


def grid_of(opts: dict) -> Grid:
    """The `dsr.Grid` of `--sweep` (keys in the order given)."""
    return Grid(**{SWEEP_KEYS[k][0]: tuple(v) for k, v in opts["sweep"].items()})


def check_sweep_options(opts: dict, given: set | None = None) -> None:
    """What a sweep needs from the other options, before anything runs."""
    if not opts.get("sweep"):
        return
    if opts["validation"] is None:
        raise CLIError("--sweep selects the best setting on free-run validation: give "
                       "--validation FRACTION (e.g. 0.2) or --validation FILE.")
    for key in opts["sweep"]:
        if given is not None and key.replace("-", "_") in given:
            raise CLIError(f"--sweep {key}=... and --{key} both given; the sweep sets it.")


def build_sweep(opts: dict, make, key):
    """The run's `dsr.Sweep`: `make(key, **sizes)` per setting and seed."""
    return sweep(make, grid_of(opts), opts["runs"], key=key)


def _label(setting: dict) -> str:
    return " ".join(f"{k}={v:g}" for k, v in setting.items())


def write_sweep(run, res) -> dict:
    """`sweep.csv` (one row per member: its setting under the command line's keys, then the
    scores) and `sweep.png`; returns the sweep's record for `config.json`."""
    s = res.sweep
    names = {SWEEP_KEYS[k][0]: k for k in SWEEP_KEYS}
    text = s.to_csv()
    head, rest = text.split("\n", 1)
    head = ",".join(names.get(c, c) for c in head.split(","))
    write_bytes(os.path.join(run.path, CSV), (head + "\n" + rest).encode())
    _draw(os.path.join(run.path, PICTURE), s, names)
    cli = lambda st: {names[k]: v for k, v in st.items()}  # noqa: E731
    return {"selected": s.selected, "setting": cli(s.setting),
            "members": list(s.selected_members), "rule": s.rule,
            "setting_scores": [None if not np.isfinite(v) else float(v)
                               for v in s.setting_scores],
            "settings": [cli(st) for st in s.settings], "runs": s.runs, "csv": CSV,
            "picture": PICTURE}


def _draw(path: str, s, names: dict) -> None:
    """Validation score per setting (members as dots, the median as a bar; the selected
    setting highlighted); off-scale (inf) members drawn at the top edge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    G = len(s.settings)
    scores = np.array([r["score"] for r in s.rows], float).reshape(G, s.runs)
    finite = scores[np.isfinite(scores)]
    top = finite.max() * 1.5 if finite.size else 1.0
    fig, ax = plt.subplots(figsize=(max(5.0, 0.5 * G + 2), 4.2), layout="constrained")
    for g in range(G):
        color = "C3" if g == s.selected else "C0"
        y = np.where(np.isfinite(scores[g]), scores[g], top)
        ax.scatter(np.full(s.runs, g) + np.linspace(-0.12, 0.12, s.runs), y, s=18,
                   color=color, zorder=3)
        if np.isfinite(s.setting_scores[g]):
            ax.hlines(s.setting_scores[g], g - 0.3, g + 0.3, color=color, lw=2)
    labels = [_label({names[k]: v for k, v in st.items()}) for st in s.settings]
    ax.set_xticks(range(G), labels, rotation=60 if G > 4 else 0, ha="right" if G > 4 else "center",
                  fontsize=7)
    if finite.size and finite.min() > 0 and top / finite.min() > 20:
        ax.set_yscale("log")
    ax.set_ylabel("validation score\n(lower: better)")
    ax.set_title(f"sweep: {G} settings × {s.runs} seeds; selected: {labels[s.selected]} "
                 "(median, red)", fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def describe(opts: dict) -> str:
    """One line for the run's description."""
    g = grid_of(opts)
    return (f"sweep: {len(g)} settings × {opts['runs']} runs = {len(g) * opts['runs']} members "
            f"in one program ({json.dumps(opts['sweep'])})")
