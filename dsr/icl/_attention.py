"""One linear self-attention layer on AR(s) tokens (Vladarean, Zhang, Sra (2026), Eq. 5).

Single layer, single head, no softmax, no output projection, `W_QK = W_Kᵀ W_Q` merged:

    Z = Y + W_V Y M (Yᵀ W_QK Y) / n,      M = diag(1, …, 1, 0),   n = T − s − 1,

on the token matrix `Y` (columns = tokens, see `ar_tokens`); the prediction is the label
entry of the test column, `ŷ_T = Z[s, n]` (0-based). `M` removes the test token from the
keys and values.

**Mapping onto the shared linear-attention code.** With rows as tokens (`Yr = Yᵀ`), the
causal form of this layer is exactly `dsr.ttt_linear` with the identity kernel, one token
per chunk, learning rate `1/n` and no momentum:

    q_j = W_QK y_j,   k_i = y_i,   v_i = M_ii W_V y_i,
    O_j = (1/n) Σ_{i ≤ j} (k_i · q_j) v_i   (= φ(Q_j) W_{j+1} of the TTT recurrence),

so `y_iᵀ W_QK y_j = k_i · q_j` and no adapter is needed: the recurrent (`lax.scan`) and
chunk-wise parallel (dense masked product on the scan backend) forms of `ttt_linear` are
the two forms of this layer. The test column sees every context token, so its output is
the paper's (non-causal) formula; the context columns get causal outputs, which the loss
never reads.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._checks import check_choice, check_int, check_key, check_real
from ..baselines import ttt_linear
from ._tokens import check_sequences, check_window, token_matrix

FORMS = ("parallel", "recurrent")


def attend(w_qk, w_v, tokens, form):
    """The layer on one token matrix `(N, D)` (rows = tokens, last row = test token):
    returns `Z` with rows as tokens, `(N, D)`."""
    N = tokens.shape[0]
    n = N - 1
    q = tokens @ w_qk.T
    mask = jnp.ones((N, 1), tokens.dtype).at[-1].set(0.0)
    v = (tokens @ w_v.T) * mask
    out = ttt_linear(q, tokens, v, chunk_size=1, lr=1.0 / n, momentum=0.0, form=form)
    return tokens + out


@eqx.filter_jit
def attend_batch(w_qk, w_v, tokens, form):
    """`attend` over a batch of token matrices `(B, N, D)` (jitted; `form` is static)."""
    return jax.vmap(lambda t: attend(w_qk, w_v, t, form))(tokens)


class LinearSelfAttention(eqx.Module):
    """A single linear self-attention layer for in-context AR(s) prediction
    (Vladarean, Zhang, Sra (2026), Eq. 5): `Z = Y + W_V Y M (Yᵀ W_QK Y) / n`.

    **Arguments:**

    - `s`: the AR window (tokens have width `s + 1`: `s` features and one label).
    - `key`: PRNG key for the initialization; every entry of `W_QK` and `W_V` is drawn
      from N(0, `init_scale`²).
    - `init_scale`: the initial weight scale (default 0.01: the entries that never reach the
      prediction, rows `0 … s−1` of `W_V` and the label column of `W_QK`, stay small).
    - `dtype`: parameter dtype (default: JAX's default float).

    **Attributes:** `w_qk` (the merged `W_QK`) and `w_v` (`W_V`), both `(s + 1, s + 1)`,
    indexed as in the paper with features first and the label last.

    `model(y)` maps scalar sequences `(B, T)` (or `(B, T, 1)`) to the predictions `ŷ_T`,
    `(B,)`; `y_T` itself is not read. `model.forward(y)` returns the whole output `Z`.

    Example:
    ```python
    model = dsr.icl.LinearSelfAttention(1, key=jax.random.key(0))
    y = dsr.icl.sample_lds(jax.random.key(1), 512).y     # (512, 30)
    y_hat = model(y)                                      # predictions of y_30, (512,)
    ```
    """

    w_qk: Float[Array, "D D"]
    w_v: Float[Array, "D D"]

    def __init__(self, s: int, *, key: PRNGKeyArray, init_scale: float = 0.01, dtype=None):
        s = check_int("s", s, 1)
        key = check_key("key", key)
        init_scale = check_real("init_scale", init_scale, 0.0)
        dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
        kq, kv = jax.random.split(key)
        D = s + 1
        self.w_qk = init_scale * jax.random.normal(kq, (D, D), dtype)
        self.w_v = init_scale * jax.random.normal(kv, (D, D), dtype)

    def __check_init__(self):
        D = jnp.shape(self.w_qk)
        if len(D) != 2 or D[0] != D[1] or D[0] < 2 or jnp.shape(self.w_v) != D:
            raise ValueError(
                "`w_qk` and `w_v` must both be square (s + 1, s + 1) with s ≥ 1; got "
                f"{jnp.shape(self.w_qk)} and {jnp.shape(self.w_v)}.")

    @property
    def s(self) -> int:
        """The AR window."""
        return self.w_qk.shape[0] - 1

    def _inputs(self, y, form):
        check_choice("form", form, FORMS)
        y = check_sequences("y", y)
        check_window(self.s, y.shape[1])
        return token_matrix(y.astype(jnp.result_type(y, self.w_qk)), self.s)

    def forward(self, y: Float[ArrayLike, "B T"], *, form: str = "parallel"
                ) -> Float[Array, "B n+1 s+1"]:
        """The layer's output `Z` (rows = tokens, the last row the test token) for scalar
        sequences `y` `(B, T)`; `form` is `"parallel"` or `"recurrent"` (same result)."""
        return attend_batch(self.w_qk, self.w_v, self._inputs(y, form), form)

    def __call__(self, y: Float[ArrayLike, "B T"], *, form: str = "parallel"
                 ) -> Float[Array, " B"]:
        """The predictions `ŷ_T = Z[s, n]` for scalar sequences `y` `(B, T)`."""
        return self.forward(y, form=form)[:, -1, -1]


def predict_tokens(model: LinearSelfAttention, tokens, form: str = "parallel"):
    """`ŷ_T` from ready token matrices `(B, N, s + 1)` (no validation; for training)."""
    return jax.vmap(lambda t: attend(model.w_qk, model.w_v, t, form)[-1, -1])(tokens)
