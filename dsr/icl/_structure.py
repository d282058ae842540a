"""The weight structure of Theorem 4.1 and Lemma 4.1 (Vladarean, Zhang, Sra (2026), Sec. 4).

Indices are 0-based, features `0 … s−1` first and the label `s` last. The prediction reads
only the label row `u = W_V[s, :]` of the value matrix and the feature columns
`Q = W_QK[:, :s]` (the test token's label slot is 0):

    ŷ_T = (1/n) Σ_i (uᵀ y_i) (y_iᵀ Q ȳ_{T−s}) = Σ_{j,k,l} u_j Q_{kl} Σ̂_{jk} ȳ_{T−s, l},

with `Σ̂ = (1/n) Σ_i y_i y_iᵀ` over the context tokens. The other entries (rows `0 … s−1` of
`W_V`, the label column of `W_QK`) never reach the prediction; they receive no gradient
("inert") and are predicted zero.

**Centrosymmetry → checkerboard.** If A and −A are equally likely, `((−1)^t y_t)` has the
law of `(y_t)`, so every odd-order-in-parity moment vanishes and `u_j Q_{kl}` can only
help the prediction where `j + k + l + s` is even (Lemma 4.1's banded structure; its
blocks `B_0`, `B_1` alternate with the parity of `s + j`). A single value row `u` then
splits into two classes ("families") of the Lemma's parameters:

- family 0: `u_j ≠ 0` only where `s + j` is even (so `u_s`, the label–label entry, is
  in), `Q_{kl} ≠ 0` only where `k + l` is even. For s = 1 this is Theorem 4.1:
  `W_V = [[0, 0], [0, ·]]`, `W_QK = [[·, 0], [0, 0]]`.
- family 1: `s + j` odd and `k + l` odd (the key and value roles swapped). For s = 1 it
  computes the same predictor (`W_V[1, 0] · W_QK[1, 0] · y_{T−1} S / n`).

Training from a random initialization lands in either; `family_of` tells which.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._checks import ArgumentTypeError, check_choice, check_int
from ._attention import LinearSelfAttention

FAMILIES = (0, 1)


def predicted_pattern(s: int, *, family: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 4.1's non-zero pattern of `(W_QK, W_V)` for window `s` (Theorem 4.1 for s = 1).

    **Arguments:** `s`: the AR window (≥ 1); `family`: 0 (the label–label entry of `W_V`
    is in; Theorem 4.1's) or 1 (the key/value-swapped class), see the module notes.

    **Returns:** two boolean `(s + 1, s + 1)` arrays, True where an entry may be non-zero.
    """
    s = check_int("s", s, 1)
    check_choice("family", family, FAMILIES)
    D = s + 1
    j = np.arange(D)
    qk = np.zeros((D, D), bool)
    qk[:, :s] = ((j[:, None] + j[None, :s]) % 2) == family
    v = np.zeros((D, D), bool)
    v[s] = ((s + j) % 2) == family
    return qk, v


def relevant_entries(s: int) -> tuple[np.ndarray, np.ndarray]:
    """The entries of `(W_QK, W_V)` that reach the prediction: `W_QK[:, :s]`, `W_V[s, :]`.

    **Arguments:** `s`: the AR window.

    **Returns:** two boolean masks, for `W_QK` and `W_V`."""
    s = check_int("s", s, 1)
    qk = np.zeros((s + 1, s + 1), bool)
    qk[:, :s] = True
    v = np.zeros((s + 1, s + 1), bool)
    v[s] = True
    return qk, v


def _weights(model):
    if not isinstance(model, LinearSelfAttention):
        raise ArgumentTypeError(
            f"`model` must be a LinearSelfAttention; got {type(model).__name__}.")
    return np.asarray(model.w_qk, np.float64), np.asarray(model.w_v, np.float64)


def family_of(model: LinearSelfAttention) -> int:
    """The family whose pattern holds more of the weight (the product of the value row's
    and the feature columns' squared norms inside each family's pattern).

    **Arguments:** `model`: a [`dsr.icl.LinearSelfAttention`][].

    **Returns:** 0 or 1."""
    qk, v = _weights(model)
    mass = []
    for f in FAMILIES:
        pq, pv = predicted_pattern(model.s, family=f)
        mass.append(np.sum(qk[pq] ** 2) * np.sum(v[pv] ** 2))
    return int(np.argmax(mass))


def structure_ratio(model: LinearSelfAttention, *, family: int | None = None) -> float:
    """How far the weights are from Lemma 4.1's pattern: the largest off-pattern entry among
    the relevant ones (those that reach the prediction) divided by the largest on-pattern
    entry, for `W_QK` and `W_V` after balancing their scales (the prediction is invariant
    under `(W_QK, W_V) → (W_QK / λ, λ W_V)`, so each is divided by its largest on-pattern
    entry). 0 for weights exactly in the pattern.

    **Arguments:** `model`; `family`: defaults to `family_of(model)`.

    **Returns:** the ratio, a float.
    """
    qk, v = _weights(model)
    family = family_of(model) if family is None else check_choice("family", family, FAMILIES)
    rq, rv = relevant_entries(model.s)
    ratios = []
    for w, pat, rel in zip((qk, v), predicted_pattern(model.s, family=family), (rq, rv)):
        on = np.max(np.abs(w[pat]))
        off = np.abs(w[rel & ~pat])
        ratios.append(float(np.max(off) / on) if off.size else 0.0)
    return max(ratios)


def project(model: LinearSelfAttention, *, family: int | None = None) -> LinearSelfAttention:
    """`model` with every entry outside `predicted_pattern(s, family=family)` set to zero
    (`family` defaults to `family_of(model)`).

    **Arguments:** `model`; `family`: 0, 1 or None.

    **Returns:** the projected [`dsr.icl.LinearSelfAttention`][]."""
    family = family_of(model) if family is None else check_choice("family", family, FAMILIES)
    pq, pv = predicted_pattern(model.s, family=family)
    return eqx.tree_at(lambda m: (m.w_qk, m.w_v), model,
                       (jnp.where(pq, model.w_qk, 0), jnp.where(pv, model.w_v, 0)))


def implied_eta(model: LinearSelfAttention) -> float:
    """The GD step size an AR(1) model implements: the coefficient of `y_{T−1} S / n` in its
    prediction, `η = W_V[1, 1] W_QK[0, 0] + W_V[1, 0] W_QK[1, 0]` (Theorem 4.1; the second
    term is family 1's). Only for `s = 1`.

    **Arguments:** `model`: an AR(1) [`dsr.icl.LinearSelfAttention`][].

    **Returns:** η, a float."""
    qk, v = _weights(model)
    if model.s != 1:
        raise ValueError(f"`model` must be an AR(1) model (s = 1) for a GD step size; got "
                         f"s = {model.s}.")
    return float(v[1, 1] * qk[0, 0] + v[1, 0] * qk[1, 0])
