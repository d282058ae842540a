"""Observation-noise removal before training: Savitzky–Golay smoothing, per channel.

Noise in the observations enters generalized teacher forcing twice: in the targets (harmless
to a squared loss on average) and in the forcing signal `(1 − α) z + α x` (an errors-in-
variables bias: the learned map is fitted to noisy inputs). `denoise` removes most of it where
there is some and leaves noise-free channels untouched:

- **noise level** `σ̂` per channel: the median absolute deviation of the residual
  `x − S_7 x` of a 7-point (`NOISE_WINDOW`) Savitzky–Golay fit of degree `order`
  (Savitzky & Golay (1964), *Anal. Chem.* 36, 1627), scaled to a standard deviation (× 1.4826) and by
  `1 / sqrt(1 − h₀)`, the residual's share of white noise (`h₀`: the filter's centre
  weight). The median ignores the few samples where a fast feature (a spike) is not
  polynomial over 7 points;
- a channel with `σ̂ ≤ threshold ×` its std is left as it is;
- so is a channel where the 7-point fit already cuts into the signal: its residual, read as
  white noise, `s₇ = std(x − S_7 x) / sqrt(1 − h₀(7))`, exceeds `1.25 σ̂` (fast features,
  e.g. spikes, that the median ignores but the smoothing would blunt);
- otherwise the **window** is the largest odd `w ≤ max_window` (grown from 7) whose
  residual std stays within `tolerance × s₇ sqrt(1 − h₀(w))`, what the noise alone leaves:
  the discrepancy principle (Morozov (1966), *Soviet Math. Dokl.* 7, 414) — a wider window
  would smooth away signal. (`s₇`, not `σ̂`, is the reference: the same estimator at every
  window, so that the median's own scatter, several per cent on 2,000 samples, does not
  decide.)

The smoothing is `scipy.signal.savgol_filter` (edges: a polynomial fit to the window at
each end).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.signal import savgol_filter

#: The noise estimate's window (samples).
NOISE_WINDOW = 7
#: 1 / Φ⁻¹(3/4): a Gaussian's std from its median absolute deviation.
MAD_TO_STD = 1.4826
#: A noisy channel is left as it is where its 7-point residual is this much above `σ̂`.
BIAS_LIMIT = 1.25


class Denoised(NamedTuple):
    """`denoise`'s result: the series, each channel's noise estimate and window."""

    x: np.ndarray
    """The series, smoothed where a channel is noisy (the input's values elsewhere)."""
    noise: np.ndarray
    """`σ̂` per channel, in the data's units."""
    window: np.ndarray
    """The Savitzky–Golay window per channel; 0: the channel is left as it is."""


def _centre_weight(window: int, order: int) -> float:
    """`h₀`: the Savitzky–Golay filter's weight of the centre sample."""
    e = np.zeros(window)
    e[window // 2] = 1.0
    return float(savgol_filter(e, window, order)[window // 2])


def noise_level(x, order: int = 3) -> np.ndarray:
    """`σ̂` per channel of a `(T, N)` series (see the module)."""
    x = np.asarray(x, np.float64)
    r = x - savgol_filter(x, NOISE_WINDOW, order, axis=0)
    mad = np.median(np.abs(r - np.median(r, axis=0)), axis=0)
    return MAD_TO_STD * mad / np.sqrt(1.0 - _centre_weight(NOISE_WINDOW, order))


def _residual_noise(x: np.ndarray, window: int, order: int) -> float:
    """The residual of a `window`-point fit, read as white noise: its std / sqrt(1 − h₀)."""
    r = x - savgol_filter(x, window, order)
    return float(r.std() / np.sqrt(1.0 - _centre_weight(window, order)))


def _window(x: np.ndarray, sigma: float, order: int, tolerance: float, max_window: int) -> int:
    """The largest admissible window of one noisy channel (0 if none is)."""
    s7 = _residual_noise(x, NOISE_WINDOW, order)
    if s7 > BIAS_LIMIT * sigma:
        return 0
    best = NOISE_WINDOW
    for w in range(NOISE_WINDOW + 2, max_window + 1, 2):
        if _residual_noise(x, w, order) > tolerance * s7:
            break
        best = w
    return best


def _check(x, order, threshold, tolerance, max_window) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim not in (1, 2) or a.shape[0] == 0:
        raise ValueError(f"denoise: x must be a (T,) or (T, N) series; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("denoise: x has NaN or infinite values")
    if not (isinstance(order, int) and 1 <= order < NOISE_WINDOW):
        raise ValueError(f"denoise: order must be an integer in 1..{NOISE_WINDOW - 1}; got "
                         f"{order!r}")
    if not max_window >= NOISE_WINDOW or max_window % 2 == 0:
        raise ValueError(f"denoise: max_window must be odd and ≥ {NOISE_WINDOW}; got "
                         f"{max_window}")
    if a.shape[0] <= max_window:
        raise ValueError(f"denoise: x needs more than max_window = {max_window} samples; "
                         f"got {a.shape[0]}")
    if not threshold >= 0 or not tolerance >= 1:
        raise ValueError(f"denoise: threshold must be ≥ 0 and tolerance ≥ 1; got {threshold}, "
                         f"{tolerance}")
    return a


def denoise(x, *, order: int = 3, threshold: float = 0.01, tolerance: float = 1.05,
            max_window: int = 51) -> Denoised:
    """Savitzky–Golay smoothing of each noisy channel of `x` (`(T,)` or `(T, N)`), with the
    window from the discrepancy principle; noise-free channels come back unchanged (see the
    module). Smooth the training and the validation data each on its own.

    `order`: the polynomial degree of the Savitzky–Golay fits; `threshold`: a channel whose
    noise estimate is at most this fraction of its std is left as it is; `tolerance`: how far
    a window's residual may exceed the 7-point one (the discrepancy principle's factor);
    `max_window`: the widest window tried (odd, in samples).

    ```python
    d = dsr.denoise(noisy)          # d.x: the series to fit, d.noise, d.window per channel
    dsr.fit(model, d.x, ...)
    ```
    """
    a = _check(x, order, threshold, tolerance, max_window)
    x2 = np.asarray(a, np.float64).reshape(a.shape[0], -1)
    sigma = noise_level(x2, order)
    windows = np.zeros(x2.shape[1], int)
    dtype = a.dtype if np.issubdtype(a.dtype, np.floating) else np.float64
    out = np.array(a, dtype=dtype).reshape(x2.shape)  # a copy
    for j in range(x2.shape[1]):
        if sigma[j] > threshold * x2[:, j].std():
            windows[j] = _window(x2[:, j], sigma[j], order, tolerance, max_window)
        if windows[j]:
            out[:, j] = savgol_filter(x2[:, j], int(windows[j]), order).astype(out.dtype)
    return Denoised(out.reshape(a.shape), sigma, windows)
