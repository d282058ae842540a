"""In-context predictors of `y_T` from `y_1 … y_{T−1}` (Vladarean, Zhang, Sra (2026), Sec. 3–4).

Each takes a batch of scalar sequences `y` `(B, T)` (or `(B, T, 1)`) whose last entry `y_T`
is the target (never read) and returns `ŷ_T`, `(B,)`:

- `one_step_gd(y, eta)`: one gradient step of size η from `w = 0` on the AR(1) loss
  `L_1(w) = 1/(2(T−2)) Σ_{t=1}^{T−2} (y_{t+1} − w y_t)²`, then `ŷ_T = w_1 y_{T−1}`:
  `ŷ_T = η y_{T−1} S / (T−2)`, `S = Σ_{i=1}^{T−2} y_i y_{i+1}` (Theorem 4.1's predictor).
- `ar_least_squares(y, s)`: the minimizer of the AR(s) loss (in-context OLS), `ŷ_T = ŵᵀ ȳ_{T−s}`.
- `optimal_eta_ar1(...)`: Theorem 4.1's step size `η* = (T−2) E[y_{T−1} y_T S] / E[y_{T−1}² S²]`
  by Monte Carlo over systems, with the conditional moments exact (Isserlis), or plainly
  over sequences (the minimizer of `E[(ŷ_T − y_T)²]` over η for `one_step_gd`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._checks import ArgumentTypeError, check_choice, check_int, check_key, check_real
from ._moments import ar1_moments, observation_covariance
from ._sampling import LAW_ARGUMENTS, system_law
from ._tokens import check_sequences, check_window, token_matrix


def one_step_gd(y: Float[ArrayLike, "B T"], eta: float) -> Float[Array, " B"]:
    """One GD step from 0 on the AR(1) loss, then predict: `ŷ_T = η y_{T−1} S / (T−2)`
    (Vladarean et al. (2026), Theorem 4.1).

    **Arguments:** `y`: scalar sequences `(B, T)`, `T ≥ 3` (`y_T` is not read); `eta`: the
    step size η (a real number).

    **Returns:** `ŷ_T`, `(B,)`.
    """
    y = check_sequences("y", y)
    eta = check_real("eta", eta)
    return eta * _gd_feature(y)


def _gd_feature(y):
    """`y_{T−1} S / (T−2)` with `S = Σ_{i=1}^{T−2} y_i y_{i+1}`."""
    T = y.shape[1]
    S = jnp.sum(y[:, : T - 2] * y[:, 1: T - 1], axis=1)
    return y[:, T - 2] * S / (T - 2)


@jax.jit
def _lstsq_predict(features, targets, test):
    def one(X, z, x):
        w = jnp.linalg.lstsq(X, z)[0]
        return x @ w

    return jax.vmap(one)(features, targets, test)


def ar_least_squares(y: Float[ArrayLike, "B T"], s: int) -> Float[Array, " B"]:
    """In-context ordinary least squares on the AR(s) loss
    `L_s(w) = 1/(2(T−s−1)) Σ_{t=1}^{T−s−1} (y_{t+s} − wᵀ ȳ_t)²`, `ȳ_t = (y_t, …, y_{t+s−1})`,
    then `ŷ_T = ŵᵀ ȳ_{T−s}` (Vladarean et al. (2026), Eq. 3).

    `ŵ` is `jnp.linalg.lstsq`'s solution (the minimum-norm one when `T − s − 1 < s`).

    **Arguments:** `y`: scalar sequences `(B, T)` (`y_T` is not read); `s`: window,
    `1 ≤ s ≤ T − 2`.

    **Returns:** `ŷ_T`, `(B,)`.
    """
    y = check_sequences("y", y)
    s = check_window(s, y.shape[1])
    tokens = token_matrix(y, s)
    return _lstsq_predict(tokens[:, :-1, :s], tokens[:, :-1, s], tokens[:, -1, :s])


class MonteCarloEstimate(NamedTuple):
    """A Monte Carlo estimate.

    **Attributes:** `value`, its standard error `stderr`, and `n_samples`."""

    value: float
    stderr: float
    n_samples: int


def _ratio(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sequence `f y_T` and `f²` for the feature `f = y_{T−1} S / (T−2)`."""
    T = y.shape[1]
    feat = y[:, T - 2] * np.sum(y[:, : T - 2] * y[:, 1: T - 1], axis=1) / (T - 2)
    return feat * y[:, T - 1], feat * feat


def optimal_eta_ar1(
    y: Float[ArrayLike, "B T"] | None = None,
    *,
    key: PRNGKeyArray | None = None,
    n_samples: int = 20_000,
    method: str = "isserlis",
    batch_size: int = 2_000,
    lengths=None,
    **law,
) -> MonteCarloEstimate | list[MonteCarloEstimate]:
    """Theorem 4.1's optimal step size `η* = (T−2) E[y_{T−1} y_T S] / E[y_{T−1}² S²]`,
    `S = Σ_{i=1}^{T−2} y_i y_{i+1}` (Vladarean et al. (2026), Eq. 15), by Monte Carlo.

    `η*` minimizes `E[(one_step_gd(y, η) − y_T)²]`: it is the ratio `E[f y_T] / E[f²]` for
    the feature `f = y_{T−1} S / (T−2)`.

    - `method="isserlis"` (default): draw `n_samples` systems (`sample_lds`'s law) and take
      `E[f y_T | system]`, `E[f² | system]` exactly by Isserlis' theorem on the
      observations' covariance (the paper's tool), so only the systems are sampled: a far
      smaller error than `"plain"` for the same number of draws.
    - `method="plain"`: the sample means of `f y_T` and `f²` over `n_samples` sequences.
    - `y` given: the plain estimate from these sequences `(B, T)` (the law is unused).

    The standard error is the delta method's, `std(a − η̂ b) / (√N · mean(b))` for the
    per-draw numerators `a` and denominators `b`. Statistics are float64 (NumPy).

    **Arguments:** `y` (optional sequences); `key`, `n_samples` (N), `method`;
    `batch_size`: draws per chunk; `lengths`: optional sequence lengths `3 ≤ T' ≤ T`: then
    η* is estimated for each (for the prefixes `y_1 … y_{T'}` of the same draws); `**law`:
    the law's keywords as for `sample_lds` (`n_steps` = T (default 30), `state_dim`,
    `setting`, `rho`, `sigma_w`, `sigma_v`).

    **Returns:** a `MonteCarloEstimate` (`value` = η̂*, `stderr`, `n_samples`), or a list of
    them, one per entry of `lengths`.
    """
    single = lengths is None
    if y is not None:
        y = np.asarray(check_sequences("y", y), np.float64)
        lengths = _check_lengths(lengths, y.shape[1])
        parts = [[_ratio(y[:, :t]) for t in lengths]]
    else:
        if key is None:
            raise ValueError("`key` must be given when `y` is None (to draw sequences).")
        key = check_key("key", key)
        n_samples = check_int("n_samples", n_samples, 2)
        check_choice("method", method, ("isserlis", "plain"))
        batch_size = check_int("batch_size", batch_size, 1)
        unknown = sorted(set(law) - set(LAW_ARGUMENTS))
        if unknown:
            raise ArgumentTypeError(f"`{unknown[0]}` is not an argument of `optimal_eta_ar1` "
                                    f"(the law's are {LAW_ARGUMENTS}).")
        law = system_law(**law)
        lengths = _check_lengths(lengths, law.n_steps)
        parts = []
        for i, start in enumerate(range(0, n_samples, batch_size)):
            b = min(batch_size, n_samples - start)
            batch = law.sample(jax.random.fold_in(key, i), b, jnp.result_type(float))
            if method == "plain":
                yb = np.asarray(batch.y, np.float64)
                parts.append([_ratio(yb[:, :t]) for t in lengths])
            else:
                K = observation_covariance(batch.A, batch.C, batch.Sigma_w, batch.sigma_v,
                                           law.n_steps)
                parts.append([ar1_moments(K[:, :t, :t]) for t in lengths])
    out = [_estimate(np.concatenate([p[i][0] for p in parts]),
                     np.concatenate([p[i][1] for p in parts])) for i in range(len(lengths))]
    return out[0] if single else out


def _check_lengths(lengths, T):
    if lengths is None:
        return [T]
    return [check_int(f"lengths[{i}]", t, 3, T) for i, t in enumerate(lengths)]


def _estimate(num, den) -> MonteCarloEstimate:
    eta = float(np.mean(num) / np.mean(den))
    n = num.shape[0]
    stderr = float(np.std(num - eta * den) / (np.sqrt(n) * np.mean(den))) if n > 1 else np.inf
    return MonteCarloEstimate(eta, stderr, n)
