"""The attention predictor as a Krylov method on the AR(s) loss (Vladarean, Zhang, Sra (2026),
Sec. 4.3).

With the context statistics of one sequence, `H = ∇²L_s = (1/n) Σ ȳ_i ȳ_iᵀ`,
`g = ∇L_s(0) = −(1/n) Σ ȳ_i y_{i+s}` and `γ = (1/n) Σ y_{i+s}²` (the blocks of the token
covariance `Σ̂ = [[H, −g], [−gᵀ, γ]]`), the layer predicts `ŷ_T = wᵀ ȳ_{T−s}` with

    w = P H q + ξ₁ P g + ξ₂ p,

`P = W_QK[:s, :s]ᵀ`, `q = W_V[s, :s]`, `ξ₁ = −W_V[s, s]`, `p = W_QK[s, :s]` and the
data-dependent scalar `ξ₂ = −gᵀ q + γ W_V[s, s]`. Two steps of preconditioned CG from
`w_0 = 0` with preconditioner `P⁻¹` give `w_2 = τ₁ P H P g + τ₂ P g`: the second terms
agree up to scale, and the paper compares the first ones, `P H q` and `P H P g`, by their
cosine similarity (0.88–0.93 reported for AR(4)).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._checks import ArgumentTypeError
from ._attention import LinearSelfAttention
from ._tokens import check_sequences, check_window, token_matrix


class KrylovTerms(NamedTuple):
    """The three terms of the attention's in-context weight `w`, each `(B, s)`.

    **Attributes:** `hessian = P H q`, `gradient = ξ₁ P g`, `correction = ξ₂ p`; and `pcg = P H P g`, the
    two-step PCG direction; `test` is `ȳ_{T−s}` (so `ŷ_T = test · Σ terms`)."""

    hessian: Float[Array, "B s"]
    gradient: Float[Array, "B s"]
    correction: Float[Array, "B s"]
    pcg: Float[Array, "B s"]
    test: Float[Array, "B s"]


@jax.jit
def _terms(w_qk, w_v, tokens):
    s = tokens.shape[-1] - 1
    ctx = tokens[:, :-1]
    n = ctx.shape[1]
    feats, labels = ctx[..., :s], ctx[..., s]
    H = jnp.einsum("bik,bil->bkl", feats, feats) / n
    g = -jnp.einsum("bik,bi->bk", feats, labels) / n
    gamma = jnp.einsum("bi,bi->b", labels, labels) / n
    P = w_qk[:s, :s].T
    q, u_s, p = w_v[s, :s], w_v[s, s], w_qk[s, :s]
    hessian = jnp.einsum("kl,blm,m->bk", P, H, q)
    gradient = -u_s * jnp.einsum("kl,bl->bk", P, g)
    xi2 = -g @ q + gamma * u_s
    correction = xi2[:, None] * p[None, :]
    Pg = jnp.einsum("kl,bl->bk", P, g)
    pcg = jnp.einsum("kl,blm,bm->bk", P, H, Pg)
    return KrylovTerms(hessian, gradient, correction, pcg, tokens[:, -1, :s])


def krylov_terms(model: LinearSelfAttention, y: Float[ArrayLike, "B T"]) -> KrylovTerms:
    """The decomposition `w = P H q + ξ₁ P g + ξ₂ p` of the model's in-context weight for each
    sequence of `y` `(B, T)`, with the two-step PCG direction `P H P g` (see the module notes).

    **Arguments:** `model`: a trained [`dsr.icl.LinearSelfAttention`][]; `y`: sequences `(B, T)`.

    **Returns:** a [`dsr.icl.KrylovTerms`][].
    """
    if not isinstance(model, LinearSelfAttention):
        raise ArgumentTypeError(
            f"`model` must be a LinearSelfAttention; got {type(model).__name__}.")
    y = check_sequences("y", y)
    check_window(model.s, y.shape[1])
    tokens = token_matrix(y.astype(jnp.result_type(y, model.w_qk)), model.s)
    return _terms(model.w_qk, model.w_v, tokens)


def pcg_cosine(model: LinearSelfAttention, y: Float[ArrayLike, "B T"]) -> Float[Array, " B"]:
    """Per sequence, the cosine similarity between the attention's Hessian term `P H q` and
    the two-step PCG direction `P H P g` (Vladarean et al. (2026), Sec. 4.3).

    **Arguments:** `model`; `y`: sequences `(B, T)`.

    **Returns:** the cosines `(B,)`."""
    t = krylov_terms(model, y)
    num = jnp.sum(t.hessian * t.pcg, axis=-1)
    den = jnp.linalg.norm(t.hessian, axis=-1) * jnp.linalg.norm(t.pcg, axis=-1)
    return num / jnp.where(den > 0, den, 1.0)
