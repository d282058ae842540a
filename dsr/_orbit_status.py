"""Is a free-running orbit usable? Flags orbits that diverge, collapse to a fixed point, or
stay bounded but off the data's range.

A model can fit its teacher-forced loss well and still, run freely, blow up (to 1e26 on
real recordings), settle on a fixed point, or oscillate bounded but far outside the data
(an orbit 40x the data's range): none shows in the loss. `orbit_status`
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
#: An orbit that leaves the data's extent `[min, max]` by more than this many data standard
#: deviations (in any dimension) is called off.
OFF_STDS = 5.0
#: ... as is one whose last half has a variance more than this factor above or below the
#: data's (in any dimension).
OFF_VARIANCE_RATIO = 10.0


def off_reason(x: np.ndarray, lo, hi, std) -> tuple[str, float] | None:
    """Why a finite orbit `x` (T, N) is off the data's range, with its size, or None.

    The rule (one for `fit`'s monitor, `generate`'s warning and `evaluate`): the orbit leaves
    the data's extent `[lo, hi]` by more than `OFF_STDS` data standard deviations `std` in
    some dimension, or the variance of its last half differs from the data's by more than a
    factor `OFF_VARIANCE_RATIO` in some dimension (orbits shorter than `COLLAPSE_MIN_STEPS`
    are judged on the extent only)."""
    x = np.asarray(x, np.float64)
    std = np.maximum(np.broadcast_to(np.asarray(std, np.float64), x.shape[-1:]), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.maximum(np.asarray(lo, np.float64) - x.min(axis=0),
                         x.max(axis=0) - np.asarray(hi, np.float64)) / std
    if np.max(out) > OFF_STDS:
        return "extent", float(np.max(out))
    if len(x) >= COLLAPSE_MIN_STEPS:
        ratio = (np.std(x[len(x) // 2:], axis=0) / std) ** 2
        worst = float(ratio[np.argmax(np.abs(np.log(np.maximum(ratio, 1e-300))))])
        if not 1 / OFF_VARIANCE_RATIO <= worst <= OFF_VARIANCE_RATIO:
            return "variance", worst
    return None


@dataclasses.dataclass(frozen=True)
class OrbitStatus:
    """Whether a free-running orbit is healthy, as [`dsr.orbit_status`][] found it.

    **Attributes:** `status`: `"ok"`, `"diverged"` (non-finite or `> DIVERGED_FACTOR ×` the data's
    amplitude; `step` is the first such step), `"collapsed"` (the last half of the orbit
    varies by less than `COLLAPSED_FRACTION ×` the data's std) or `"off"` (bounded, but
    outside the data's range: see `off_reason`); `size`: max |x| over the orbit (diverged),
    the last half's std relative to the data's (collapsed), the excursion beyond the data's
    extent in data standard deviations or the variance ratio (off, `reason` says which)."""

    status: str
    step: int | None = None
    size: float | None = None
    reason: str | None = None

    def describe(self) -> str:
        if self.status == "diverged":
            return f"diverged at step {self.step} (|x| reached {self.size:.3g})"
        if self.status == "collapsed":
            return f"collapsed to a fixed point (last half's std = {self.size:.2g} × the data's)"
        if self.status == "off":
            if self.reason == "extent":
                return (f"is off the data's range (it leaves the data's extent by "
                        f"{self.size:.3g} standard deviations)")
            return (f"is off the data's range (its last half's variance is {self.size:.3g} × "
                    "the data's)")
        return "ok"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def orbit_status(x: np.ndarray, scale: float, std: float | np.ndarray = 1.0, *,
                 lo=None, hi=None) -> OrbitStatus:
    """Classify a generated orbit as ok, diverged, collapsed or off.

    **Arguments:**

    - `x`: the generated orbit `(T, N)`.
    - `scale`: the data's amplitude (max |x| of the data).
    - `std`: the data's per-dimension std (a number or `(N,)`).
    - `lo`, `hi`: the data's per-dimension min and max, for the "off" check (without them
      only "diverged" and "collapsed" are told).

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
    if lo is not None and hi is not None:
        off = off_reason(x, lo, hi, std)
        if off is not None:
            return OrbitStatus("off", None, off[1], off[0])
    return OrbitStatus("ok")


def data_range(x: np.ndarray) -> dict:
    """The reference `orbit_status` needs from data `x` (T, N): `scale`, `std`, `lo`, `hi`."""
    x = np.asarray(x, np.float64).reshape(-1, np.shape(x)[-1])
    return dict(scale=float(np.abs(x).max()) or 1.0, std=x.std(axis=0) if len(x) > 1 else 1.0,
                lo=x.min(axis=0), hi=x.max(axis=0))
