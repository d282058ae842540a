"""Checkpoints: one JSON file per finished (system, variant, method) cell under `OUT/cells/`,
written atomically; the run's settings in `OUT/settings.json` (a rerun with other settings
into the same folder stops instead of mixing results)."""

from __future__ import annotations

import json
import math
import os
import tempfile


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf", "nan": JSON has no literal for them
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items() if _jsonable(x)}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return _clean(v.item())
    return v


def _jsonable(x) -> bool:
    return not callable(x)


def write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(_clean(obj), f, indent=1)
    os.replace(tmp, path)


def read_number(v):
    return float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v


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
        b = {k: v for k, v in json.loads(json.dumps(_clean(settings))).items() if k not in keep}
        if a != b:
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            raise SystemExit(f"error: --out {out}: holds a run with other settings ({diff}); "
                             f"use another --out")
    write_json(p, settings)
