"""The one summary of a measure over the members of an ensemble: median and MAD, with one
convention for members whose measure is infinite or undefined."""

from __future__ import annotations

import math

import numpy as np


def median_mad(values) -> dict:
    """Median and median absolute deviation of one measure over the members.

    The convention, the same for the library, the command line, the examples and the
    benchmarks:

    - `inf` is a *diverged* member (its D_stsp, D_H or RMSE is infinitely bad): it is kept,
      so a median is `inf` once more than half the members diverged, and the MAD is then
      `inf` too; fewer diverged members only widen the MAD
      (`median(|v - median|)`, the infinite deviations counted);
    - `NaN` or `None` is a measure *undefined* for that member (e.g. a measure that does not
      apply to it, or a method that produced no model): it is left out, and counted.

    **Arguments:**

    - `values`: the members' values (any iterable of numbers, `None` allowed).

    **Returns:**

    A dict: `median`, `mad`, `n` (members that entered), `n_inf` (of them infinite) and
    `n_undefined` (left out). With no member left, `median` and `mad` are `NaN`.
    """
    raw = [math.nan if v is None else float(v) for v in values]
    v = np.asarray(raw, np.float64)
    used = v[~np.isnan(v)]
    out = {"n": int(used.size), "n_inf": int(np.isinf(used).sum()),
           "n_undefined": int(v.size - used.size)}
    if used.size == 0:
        return {"median": math.nan, "mad": math.nan, **out}
    med = float(np.median(used))
    if not math.isfinite(med):
        return {"median": med, "mad": math.inf, **out}
    return {"median": med, "mad": float(np.median(np.abs(used - med))), **out}


#: The orbit statuses counted in a summary (see `dsr.orbit_status`), as `n_<status>`.
COUNTED = ("diverged", "collapsed", "off")


def summarize_members(measures: dict, status) -> dict:
    """The summary of an ensemble's evaluation: [`median_mad`][dsr.metrics.median_mad] of
    every measure in `measures` (name → the members' values), `members`, and the number of
    members of each orbit status but "ok": `n_diverged`, `n_collapsed`, `n_off`."""
    status = list(status)
    out = {m: median_mad(v) for m, v in measures.items()}
    out["members"] = len(status)
    out.update({f"n_{s}": sum(x == s for x in status) for s in COUNTED})
    return out
