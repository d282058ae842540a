"""Is a free-running orbit usable? Flags orbits that diverge or collapse to a fixed point.

A model can fit its teacher-forced loss well and still, run freely, blow up (to 1e26 on
real recordings) or settle on a fixed point: neither shows in the loss. `orbit_status`
classifies a generated orbit against the data's scale; `fit` checks a short free run of
every member periodically and `generate` checks what it returns, both with a warning that
names the step and the size.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: An orbit whose amplitude exceeds this many times the data's is called diverged.
DIVERGED_FACTOR = 1e3
#: An orbit whose last half varies less than this fraction of the data's std has collapsed.
COLLAPSED_FRACTION = 1e-3
#: Orbits shorter than this are too short to call collapsed.
COLLAPSE_MIN_STEPS = 200


@dataclasses.dataclass(frozen=True)
class OrbitStatus:
    """Whether a free-running orbit is healthy, as [`dsr.orbit_status`][] found it.

    **Attributes:** `status`: `"ok"`, `"diverged"` (non-finite or `> DIVERGED_FACTOR ×` the data's
    amplitude; `step` is the first such step) or `"collapsed"` (the last half of the orbit
    varies by less than `COLLAPSED_FRACTION ×` the data's std); `size`: max |x| over the
    orbit (diverged) or the last half's std relative to the data's (collapsed)."""

    status: str
    step: int | None = None
    size: float | None = None

    def describe(self) -> str:
        if self.status == "diverged":
            return f"diverged at step {self.step} (|x| reached {self.size:.3g})"
        if self.status == "collapsed":
            return f"collapsed to a fixed point (last half's std = {self.size:.2g} × the data's)"
        return "ok"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def orbit_status(x: np.ndarray, scale: float, std: float | np.ndarray = 1.0) -> OrbitStatus:
    """Classify a generated orbit as ok, diverged or collapsed.

    **Arguments:**

    - `x`: the generated orbit `(T, N)`.
    - `scale`: the data's amplitude (max |x| of the data).
    - `std`: the data's per-dimension std (a number or `(N,)`).

    **Returns:** an [`dsr.OrbitStatus`][]."""
    x = np.asarray(x, np.float64)
    bad = ~np.isfinite(x).all(axis=-1) | (np.abs(x).max(axis=-1, initial=0.0)
                                           > DIVERGED_FACTOR * scale)
    if bad.any():
        first = int(np.argmax(bad))
        finite = x[np.isfinite(x)]
        size = float(np.abs(finite).max()) if finite.size else float("inf")
        return OrbitStatus("diverged", first, size if np.isfinite(x).all() else float("inf"))
    tail = x[len(x) // 2:]
    rel = float(np.max(np.std(tail, axis=0) / np.maximum(np.asarray(std, np.float64), 1e-300)))
    if len(x) >= COLLAPSE_MIN_STEPS and rel < COLLAPSED_FRACTION:
        return OrbitStatus("collapsed", None, rel)
    return OrbitStatus("ok")
