"""Kernel bandwidth of the D_stsp mixtures: Silverman's rule of thumb, or given.

Silverman, "Density estimation for statistics and data analysis", 1986: for a Gaussian kernel
in `d` dimensions, the standard deviation `f·σ̂_i` with `f = (T (d + 2) / 4)^(-1/(d + 4))`.
"""

from __future__ import annotations

import numpy as np

from .._checks import ArgumentTypeError


def _silverman_factor(T: int, d: int) -> float:
    return (T * (d + 2) / 4.0) ** (-1.0 / (d + 4))


def kernel_bandwidth(bandwidth, x_true: np.ndarray) -> np.ndarray:
    """The kernel standard deviation per dimension: Silverman's rule (`"silverman"`) on
    `x_true`, or the float / per-dimension array given; raises naming `bandwidth` (or
    `x_true`, for a constant dimension)."""
    T, d = x_true.shape
    bad = f"`bandwidth` must be 'silverman', a float or an array; got {bandwidth!r}."
    if isinstance(bandwidth, str):
        if bandwidth != "silverman":
            raise ValueError(bad)
        sd = x_true.std(axis=0, ddof=1)
        if np.any(sd <= 0) or not np.all(np.isfinite(sd)):
            raise ValueError(
                "`x_true` has a constant dimension; Silverman's rule gives a zero bandwidth. "
                "Pass `bandwidth=` explicitly."
            )
        return _silverman_factor(T, d) * sd
    try:
        s = np.asarray(bandwidth)
        if s.dtype == np.bool_:
            raise TypeError
        s = s.astype(np.float64)
    except (TypeError, ValueError):
        raise ArgumentTypeError(bad) from None
    if s.ndim == 0:
        s = np.full(d, float(s))
    if s.shape != (d,):
        raise ValueError(f"`bandwidth` must be a scalar or have shape ({d},); got shape {s.shape}.")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"`bandwidth` must be finite and positive; got {s}.")
    return s
