"""Checkpoints: one JSON file per finished (system, variant, method) cell under `OUT/cells/`,
written atomically; the run's settings in `OUT/settings.json` (a rerun with other settings
into the same folder stops instead of mixing results)."""

from __future__ import annotations

import json
import math
import os

import numpy as np

from .._json import clean, read_number, write_json  # noqa: F401 (write_json re-exported)


def cell_path(out: str, system: str, variant: str, method: str) -> str:
    return os.path.join(out, "cells", f"{system}__{variant}__{method}.json")


def load_cell(out, system, variant, method):
    p = cell_path(out, system, variant, method)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def check_settings(out: str, settings: dict) -> None:
    p = os.path.join(out, "settings.json")
    if os.path.exists(p):
        with open(p) as f:
            old = json.load(f)
        keep = ("systems", "methods", "variants")  # a rerun may run more or fewer of them
        a = {k: v for k, v in old.items() if k not in keep}
        b = {k: v for k, v in json.loads(json.dumps(clean(settings))).items() if k not in keep}
        if a != b:
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            raise SystemExit(f"error: --out {out}: holds a run with other settings ({diff}); "
                             f"use another --out")
    write_json(p, settings)


def values(cell: dict, measure: str) -> np.ndarray:
    out = []
    for mem in cell["members"]:
        x = read_number(mem.get(measure, math.nan)) if not mem.get("failed") else math.nan
        out.append(math.nan if x is None else float(x))
    return np.asarray(out, np.float64)
