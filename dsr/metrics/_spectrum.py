r"""Power-spectrum Hellinger distance $D_H$ (Mikhaeil et al. 2022; Hess et al. 2023)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.ndimage
from jaxtyping import ArrayLike, Float

from ._dstsp import _as_orbit


def _as_series(x, name: str) -> np.ndarray:
    return _as_orbit(x, name, min_steps=0)


def _spectra(x: np.ndarray, length: int, smoothing: float) -> np.ndarray:
    """Gaussian-smoothed power spectra per dimension, averaged over segments: (N, length//2+1).

    Rows of a constant dimension are all zero.
    """
    T, N = x.shape
    x = x - x.mean(axis=0)
    sd = x.std(axis=0)
    x = x / np.where(sd > 0, sd, 1.0)
    n_seg = T // length
    segs = x[: n_seg * length].reshape(n_seg, length, N)
    ps = (np.abs(np.fft.rfft(segs, axis=1)) ** 2).mean(axis=0).T  # (N, F)
    ps[:, 0] = 0.0  # the mean is not part of the dynamics
    if smoothing > 0:
        ps = scipy.ndimage.gaussian_filter1d(ps, smoothing, axis=1, mode="nearest")
    return ps


def power_spectrum_distance(
    x_true: Float[ArrayLike, "T1 N"],
    x_gen: Float[ArrayLike, "T2 N"],
    *,
    smoothing: float = 20.0,
) -> float:
    r"""Hellinger distance between smoothed, normalised power spectra, averaged over dimensions.

    Per dimension, each series is standardised, its power spectrum $|\mathrm{FFT}|^2$ computed
    (without the zero frequency), smoothed with a Gaussian kernel of `smoothing` frequency bins,
    and normalised to a probability vector; then
    $D_H = \sqrt{1 - \sum_\omega \sqrt{p(\omega) q(\omega)}} \in [0, 1]$, and $D_H$ is averaged
    over the `N` dimensions, as in Mikhaeil et al. (2022) and Hess et al. (2023).

    If the two series differ in length, both are cut into non-overlapping segments of the
    shorter length `L = min(T1, T2)` and the periodograms of the segments are averaged (Welch's
    method without overlap), so both spectra live on the same `L//2 + 1` frequencies; the
    remainder of the longer series is dropped.

    A generated series with non-finite values (a diverged orbit) gives the maximal distance
    `1.0` and a `RuntimeWarning`; so does a dimension of `x_gen` that is constant (no spectral
    content) — it counts as distance 1 for that dimension.

    **Arguments:**

    - `x_true`: true series, shape `(T1, N)` or `(T1,)`.
    - `x_gen`: generated series, shape `(T2, N)` or `(T2,)`.
    - `smoothing`: standard deviation of the Gaussian smoothing, in frequency bins (default 20).

    **Returns:** a Python float in `[0, 1]`; `D_H(x, x) = 0`.

    ```python
    dh = power_spectrum_distance(x_true, x_gen)
    ```

    **References:** Mikhaeil, Monfared & Durstewitz, "On the difficulty of learning chaotic
    dynamics with RNNs", NeurIPS 2022; Hess, Monfared, Brenner & Durstewitz, "Generalized Teacher
    Forcing for Learning Chaotic Dynamics", ICML 2023.
    """
    x_true = _as_series(x_true, "x_true")
    x_gen = _as_series(x_gen, "x_gen")
    if not np.all(np.isfinite(x_true)):
        raise ValueError("`x_true` contains non-finite values (nan or inf).")
    if x_gen.shape[1] != x_true.shape[1]:
        raise ValueError(
            f"`x_gen` has {x_gen.shape[1]} dimensions but `x_true` has {x_true.shape[1]}."
        )
    if not (smoothing >= 0) or not math.isfinite(smoothing):
        raise ValueError(f"`smoothing` must be finite and >= 0, got {smoothing}.")
    length = min(x_true.shape[0], x_gen.shape[0])
    if length < 4:
        raise ValueError(f"`x_true` and `x_gen` need at least 4 time steps, got {length}.")
    if not np.all(np.isfinite(x_gen)):
        warnings.warn("`x_gen` has diverged (non-finite values); returning D_H = 1.",
                      RuntimeWarning, stacklevel=2)
        return 1.0
    p = _spectra(x_true, length, smoothing)
    q = _spectra(x_gen, length, smoothing)
    p_tot = p.sum(axis=1)
    q_tot = q.sum(axis=1)
    if np.any(p_tot <= 0):
        raise ValueError("`x_true` has a constant dimension; its power spectrum is empty.")
    if np.any(q_tot <= 0):
        warnings.warn("`x_gen` has a constant dimension; its D_H counts as 1.",
                      RuntimeWarning, stacklevel=2)
    p = p / p_tot[:, None]
    dists = np.ones(x_true.shape[1])
    ok = q_tot > 0
    q = q[ok] / q_tot[ok, None]
    # 1 - Σ sqrt(p q) = ½ Σ (sqrt p - sqrt q)² for normalised p, q: exact zero for p = q
    h2 = 0.5 * np.sum((np.sqrt(p[ok]) - np.sqrt(q)) ** 2, axis=1)
    dists[ok] = np.sqrt(np.clip(h2, 0.0, 1.0))
    return float(dists.mean())
