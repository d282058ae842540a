"""Standardization with the training data's mean and std, and the model's units (values
checked against the model's float range)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._errors import CLIError
from ._series import Series


def model_units(s: Series, std: Standardization | None, dtype=None) -> np.ndarray:
    """`s.x` standardized (`std` None: as it is), checked to lie in the range of the model's
    float dtype (default float32, the models' default and so the command line's) before
    anything casts it."""
    dtype = np.float32 if dtype is None else dtype
    limit = float(np.finfo(dtype).max)
    x = s.x if std is None else std.apply(s.x)
    bad = np.argwhere(~(np.abs(x) <= limit))
    if bad.size:
        i, j = bad[0]
        where = f"line {s.lines[i]}" if s.lines is not None else f"row {i}"
        value = (f"{s.x[i, j]:g} is {x[i, j]:g} after standardization (with the training "
                 "data's mean and std), which is" if std is not None and std.enabled
                 else f"{s.x[i, j]:g} is")
        raise CLIError(f"{s.info['path']}: {where}, column {s.names[j]!r}: {value} beyond the "
                       f"range of the model's {np.dtype(dtype).name} numbers (±{limit:.3g}); "
                       "expected values on the scale of the training data.")
    return x


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and std; columns whose plain sums overflow (values beyond ~1e154)
    are computed after dividing by their largest magnitude."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = x.mean(axis=0), x.std(axis=0)
    big = ~(np.isfinite(mean) & np.isfinite(std))
    if big.any():
        scale = np.abs(x[:, big]).max(axis=0)
        xs = x[:, big] / scale
        mean[big], std[big] = xs.mean(axis=0) * scale, xs.std(axis=0) * scale
    return mean, std


@dataclasses.dataclass(frozen=True)
class Standardization:
    """`x ↦ (x − mean) / std` per variable (identity when disabled)."""

    mean: np.ndarray
    std: np.ndarray
    enabled: bool = True

    @classmethod
    def of(cls, series: list[Series], enabled: bool) -> Standardization:
        x = np.concatenate([s.x for s in series])
        if not enabled:
            return cls(np.zeros(x.shape[1]), np.ones(x.shape[1]), False)
        mean, std = _moments(x)
        flat = np.flatnonzero(~(std > 0))
        if flat.size:
            raise CLIError(f"{series[0].info['path']}: column {series[0].names[flat[0]]!r} is "
                           "constant; it carries no dynamics — leave it out with --columns.")
        return cls(mean, std, True)

    def apply(self, x):
        x = np.asarray(x, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            z = (x - self.mean) / self.std
            if not np.isfinite(z).all():  # x − mean overflowed (|x| and |mean| near 1e308)
                z = np.where(np.isfinite(z), z, x / self.std - self.mean / self.std)
        return z

    def invert(self, x):
        return np.asarray(x, np.float64) * self.std + self.mean

    def as_dict(self) -> dict:
        return {"enabled": self.enabled, "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Standardization:
        return cls(np.asarray(d["mean"], np.float64), np.asarray(d["std"], np.float64),
                   bool(d["enabled"]))
