r"""Power-spectrum Hellinger distance $D_H$ (Mikhaeil et al. 2022; Hess et al. 2023)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.ndimage
from jaxtyping import ArrayLike, Float

from .._checks import check_real
from ._orbits import divergence_reason, orbit_pair

#: The shortest series accepted: `max(MIN_LENGTH, 16 · smoothing)` time steps.
MIN_LENGTH = 16


def min_length(smoothing: float) -> int:
    """The shortest series whose spectrum is not flattened by the smoothing: more than
    `8 · smoothing` frequency bins, i.e. `16 · smoothing` time steps (and at least 16)."""
    return max(MIN_LENGTH, math.ceil(16 * smoothing))


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
        ps = scipy.ndimage.gaussian_filter1d(ps, smoothing, axis=1, mode="reflect")
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
    content) — it counts as distance 1 for that dimension. Non-finite `x_true` is an error.

    **Minimum length.** Both series need at least `max(16, 16 · smoothing)` time steps (320
    for the default): a spectrum of fewer than `8 · smoothing` frequency bins is flattened by
    the smoothing, and `D_H` tends to 0 whatever the series.

    **Literature compatibility.** For series of equal length this is the GTF authors'
    `power_spectrum_error` (code release of Hess et al. 2023, `src/measures/pse.jl`):
    standardise, `|rfft|²`, Gaussian smoothing with reflecting boundaries (kernel radius
    4σ, as `scipy.ndimage.gaussian_filter1d`), normalise, Hellinger distance, mean over
    dimensions.

    **Arguments:**

    - `x_true`: true series, shape `(T1, N)` or `(T1,)`.
    - `x_gen`: generated series, shape `(T2, N)` or `(T2,)`.
    - `smoothing`: standard deviation of the Gaussian smoothing, in frequency bins (default 20,
      the GTF code's default; 0: none).

    **Returns:** a Python float in `[0, 1]`; `D_H(x, x) = 0`.

    ```python
    dh = power_spectrum_distance(x_true, x_gen)
    ```

    **References:** Mikhaeil, Monfared & Durstewitz, "On the difficulty of learning chaotic
    dynamics with RNNs", NeurIPS 2022; Hess, Brenner, Monfared & Durstewitz, "Generalized Teacher
    Forcing for Learning Chaotic Dynamics", ICML 2023 (arXiv:2306.04406).
    """
    x_true, x_gen = orbit_pair(x_true, x_gen)
    smoothing = check_real("smoothing", smoothing, 0.0)
    length = min(x_true.shape[0], x_gen.shape[0])
    if length < min_length(smoothing):
        name = "x_true" if x_true.shape[0] <= x_gen.shape[0] else "x_gen"
        raise ValueError(
            f"`{name}` has {length} time steps; with `smoothing`={smoothing:g} the power "
            f"spectrum needs at least {min_length(smoothing)} (16 × smoothing, at least "
            f"{MIN_LENGTH}) — shorter spectra are flattened by the smoothing and D_H → 0.")
    why = divergence_reason(x_gen, x_true)
    if why is not None:
        warnings.warn(f"`x_gen` has diverged ({why}); returning D_H = 1.",
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
