"""Test-time-training (TTT / linear-attention) baseline in the LSSM template, Liu et al. (2026)
Sec. 6 (the TTT layer) and Hess et al. (2026) Sec. 5.4 (the comparison it serves)."""

from __future__ import annotations

import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_int
from .._solvers._scan import linear_scan
from ..models._base import KAPPA, AbstractSizedModel, AbstractTeacherForcedModel, uniform
from ..models._lssm import init_readout
from ._ttt import Form
from ._ttt_kernel import apply_kernel
from ._ttt_layer import TTTLinear

_NORM_EPS = 1e-6


class TTTModel(AbstractSizedModel, AbstractTeacherForcedModel):
    """The LSSM template (Eq. 3 of Hess et al. (2026)) with its linear recurrence replaced by a
    token-level TTT layer (Liu et al. (2026): TTT with key–value binding, reduced to linear
    attention, Sec. 6.1; parallel form, Sec. 6.2):

        e_t = W_e x_t + b_e                                  (affine lift to d_model)
        q_t, k_t, v_t = W_q e_t, W_k e_t, W_v e_t;  η_t, α_t from e_t     (`TTTLinear`)
        G_t     = φ(k_t)ᵀ v_t + α_t G_{t−1}                   (G = −ΔW, the momentum)
        W_{t+1} = W_t + η_t G_t
        o_t     = φ(q_t) W_{t+1}
        x̂_{t+1} = B relu(V RMSNorm(o_t) + b)                 (the LSSM's MLP read-out)

    Chunk size 1 (one inner-loop step per token), so the layer is exactly causal: the
    prediction `x̂_{t+1}` depends on `x_0..x_t` only. (A larger chunk would let a token's
    output read keys and values of later tokens of its chunk, i.e. the data it is asked
    to predict, so it is not offered.) The term `φ(q_t) W_0` is a static linear map of
    `x_t`; the rest is causal linear attention over the history.

    - Training, `predict_teacher_forced(x)`: all tokens at once with the chunk-wise
      parallel form of `ttt_linear` (Liu et al. 2026, App. H).
    - Generation: the free-running state is the flat vector
      `z = (vec W_{t+1}, vec G_t, o_t)` of size `latent_dim = 2·Dh·Dv + Dv`;
      `observe(z) = B relu(V o + b)` and `step(z)` feeds `x̂ = observe(z)` back as the next
      token. `warm_start(context)` builds z after the context in closed form (two reverse
      scans for the weights of each key–value pair, no loop over tokens), so that
      `dsr.generate(model, n, context=x)` returns `x̂_{Tc}, x̂_{Tc+1}, …`.

    The fast weight has no forgetting (linear attention without decay): `W` keeps
    accumulating `η_t G_t`. The layer output is therefore RMS-normalized before the
    read-out, `RMSNorm(o) = g ⊙ o / √(mean(o²) + ε)` (as TTT-Linear and LaCT normalize the
    inner model's output; `output_norm=False` turns it off). The normalized output does not
    depend on the scale of `W`, so the growing sum acts as a running average of the key–value
    products, and free-running roll-outs stay bounded (without it, the feedback
    `x̂ → k, v → W → o → x̂` is quadratic and roll-outs blow up in finite time). Roll-outs
    much longer than the training windows still leave the training distribution (the
    weight of `W_0` fades); that is a property of this baseline.

    **Initialization:** lift `W_e ~ U(±1/√N)`, `b_e = 0`; `TTTLinear`'s own init
    (projections `U(±1/√d_model)`, `W_0 ~ U(±1/√Dh)`), with a small inner learning rate
    `lr_init` so that training starts near the static map `φ(q) W_0`; read-out as the LSSM
    (App. E): `B ~ U(±(1−κ)/√L)`, `V ~ U(±(1−κ)/√Dv)`, `b = 0`; norm gain `g = 1`.

    **Arguments:**

    - `obs_dim` (N), `hidden_dim` (L, read-out width).
    - `key`: PRNG key.
    - `d_model`: lift width; `d_key` (Dk), `d_value` (Dv, default `d_key`): the layer's
      widths; `kernel`: `"identity"` or `"swiglu"` (hidden width `d_hidden`, Dh).
    - `lr_init`, `momentum_init`: initial inner learning rate η and momentum α (both are
      data-dependent, learned); `momentum=False` fixes α = 0.
    - `block_size`: tokens per block of the parallel form (see `dsr.ttt_linear`).
    - `output_norm`: RMS-normalize the layer output (learned gain `g`, init 1).
    - `kappa`: App. E scale; `dtype`: parameter dtype.

    External inputs are not supported (`input_dim = 0`; giving `inputs` raises).

    Example:
    ```python
    model = dsr.TTTModel(6, 64, key=jax.random.key(0))
    xhat = model.predict_teacher_forced(x)       # x: (T+1, 6) → x̂_1..x̂_T
    x_gen = dsr.generate(model, 1000, context=x[:512])
    ```

    References: Liu et al. (2026) (Theorem 3, Sec. 6.1–6.2, App. H); Hess et al. (2026) Sec. 5.4.
    """

    W_e: Float[Array, "Dm N"]
    b_e: Float[Array, " Dm"]
    layer: TTTLinear
    B: Float[Array, "N L"]
    V: Float[Array, "L Dv"]
    b: Float[Array, " L"]
    g: Float[Array, " Dv"] | None
    output_norm: bool = eqx.field(static=True)

    def __init__(
        self,
        obs_dim: int,
        hidden_dim: int,
        *,
        key: PRNGKeyArray,
        d_model: int = 16,
        d_key: int = 8,
        d_value: int | None = None,
        kernel: Literal["identity", "swiglu"] = "identity",
        d_hidden: int | None = None,
        momentum: bool = True,
        lr_init: float = 0.01,
        momentum_init: float = 0.5,
        block_size: int | None = None,
        output_norm: bool = True,
        kappa: float = KAPPA,
        dtype=jnp.float32,
    ):
        obs_dim, hidden_dim = check_int("obs_dim", obs_dim, 1), check_int("hidden_dim", hidden_dim, 1)
        d_model = check_int("d_model", d_model, 1)
        d_value = d_key if d_value is None else d_value
        N, L = obs_dim, hidden_dim
        ke, kl, kb, kv = jax.random.split(key, 4)
        self.W_e = uniform(ke, (d_model, N), 1.0 / math.sqrt(N), dtype)
        self.b_e = jnp.zeros((d_model,), dtype)
        self.layer = TTTLinear(d_model, d_key, d_value, chunk_size=1, kernel=kernel, key=kl,
                               d_hidden=d_hidden, momentum=momentum, lr_init=lr_init,
                               momentum_init=momentum_init, block_size=block_size, dtype=dtype)
        self.B, self.V, self.b = init_readout(kb, kv, N, L, d_value, kappa, dtype)
        self.output_norm = bool(output_norm)
        self.g = jnp.ones((d_value,), dtype) if output_norm else None
        Dh = self.layer.w0.shape[0]
        self.set_sizes(N, 2 * Dh * d_value + d_value, L, 0)

    # ---------------------------------------------------------------- pieces

    @property
    def d_fast(self) -> tuple[int, int]:
        """The fast weight's shape (Dh, Dv)."""
        return self.layer.w0.shape

    def _phi(self, x):
        return apply_kernel(self.layer.kernel, x)

    def _tokens(self, x):
        return x @ self.W_e.T + self.b_e

    def _readout(self, o):
        if self.output_norm:
            o = self.g * o * jax.lax.rsqrt(jnp.mean(o * o) + _NORM_EPS)
        return self.B @ jax.nn.relu(self.V @ o + self.b)

    def _split(self, z):
        Dh, Dv = self.d_fast
        n = Dh * Dv
        return z[:n].reshape(Dh, Dv), z[n:2 * n].reshape(Dh, Dv), z[2 * n:]

    @staticmethod
    def _join(W, G, o):
        return jnp.concatenate([W.reshape(-1), G.reshape(-1), o])

    def _check_inputs(self, s):
        if s is not None:
            raise ValueError(
                "TTTModel takes no external inputs (input_dim = 0); got `inputs`/`s`."
            )

    # ---------------------------------------------------------------- AbstractModel

    def observe(self, z):
        """`x̂ = B relu(V RMSNorm(o) + b)`, from the layer output `o` stored at the end of `z`."""
        return self._readout(self._split(z)[2])

    def forced_step(
        self, z: Float[Array, " M"], x_prev: Float[Array, " N"], s: None = None
    ) -> Float[Array, " M"]:
        """One token of the TTT recurrence driven by the observation `x_prev`:
        `G ← φ(k)ᵀv + α G`, `W ← W + η G`, `o ← φ(q) W` (one inner-loop step, chunk size 1)."""
        self._check_inputs(s)
        W, G, _ = self._split(z)
        e = self._tokens(x_prev)
        lay = self.layer
        q, k, v = lay.q_proj(e), lay.k_proj(e), lay.v_proj(e)
        lr, mom = lay.chunk_rates(e[None])
        G = jnp.outer(self._phi(k), v) + mom[0] * G
        W = W + lr[0] * G
        return self._join(W, G, self._phi(q) @ W)

    def step(self, z, s=None):
        """Free-running step: the prediction `observe(z)` is the next token."""
        return self.forced_step(z, self.observe(z), s)

    def initial_state(self) -> Float[Array, " M"]:
        """The state before any token: `W = W_0`, `G = 0`, `o = 0`."""
        Dh, Dv = self.d_fast
        w0 = self.layer.w0
        return self._join(w0, jnp.zeros_like(w0), jnp.zeros((Dv,), w0.dtype))

    # ---------------------------------------------------------------- training / warm-up

    def layer_outputs(
        self, x: Float[Array, "T N"], *, form: Form = "parallel"
    ) -> Float[Array, "T Dv"]:
        """The TTT layer's outputs `o_0..o_{T-1}` for the tokens `x_0..x_{T-1}`."""
        return self.layer(self._tokens(x), form=form)

    def predict_teacher_forced(
        self,
        x: Float[Array, "T+1 N"],
        inputs: None = None,
        *,
        form: Form = "parallel",
    ) -> Float[Array, "T N"]:
        """Predictions `x̂_1..x̂_T`, `x̂_t` from `x_0..x_{t-1}` (causal), all at once with the
        parallel form of the TTT layer (`form="recurrent"`: its token-by-token reference)."""
        self._check_inputs(inputs)
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.obs_dim or x.shape[0] < 2:
            raise ValueError(
                f"`x` must have shape (T+1, {self.obs_dim}) with T ≥ 1; got {x.shape}."
            )
        return jax.vmap(self._readout)(self.layer_outputs(x[:-1], form=form))

    def warm_start(
        self, context: Float[Array, "Tc N"], inputs: None = None
    ) -> Float[Array, " M"]:
        """The state after reading the context `x_0..x_{Tc-1}`, whose observation is the
        prediction `x̂_{Tc}`.

        Closed form of the recurrence: with `c_i = Σ_{j≥i} η_j Π_{s=i+1}^{j} α_s` and
        `d_i = Π_{s=i+1}^{Tc-1} α_s` (two reverse diagonal scans, `c_i = η_i + α_{i+1} c_{i+1}`,
        `d_i = α_{i+1} d_{i+1}`), `W_{Tc} = W_0 + Σ_i c_i φ(k_i)ᵀ v_i`,
        `G_{Tc-1} = Σ_i d_i φ(k_i)ᵀ v_i`, `o = φ(q_{Tc-1}) W_{Tc}`.
        """
        self._check_inputs(inputs)
        context = jnp.asarray(context)
        if context.ndim != 2 or context.shape[1] != self.obs_dim or context.shape[0] < 1:
            raise ValueError(f"`context` must have shape (Tc, {self.obs_dim}) with Tc ≥ 1; "
                             f"got {context.shape}.")
        lay = self.layer
        e = self._tokens(context)
        q, k, v = jax.vmap(lay.q_proj)(e), jax.vmap(lay.k_proj)(e), jax.vmap(lay.v_proj)(e)
        lr, mom = lay.chunk_rates(e)  # chunk size 1: one (η, α) per token
        Tc = context.shape[0]
        a = jnp.concatenate([mom[1:], jnp.ones((1,), mom.dtype)])  # α_{i+1}, (Tc,)
        last = (jnp.arange(Tc) == Tc - 1).astype(lr.dtype)
        cd = linear_scan(jnp.stack([a, a], -1), jnp.stack([lr, last], -1), reverse=True)
        pk = self._phi(k)
        W = lay.w0 + jnp.einsum("th,t,tv->hv", pk, cd[:, 0], v)
        G = jnp.einsum("th,t,tv->hv", pk, cd[:, 1], v)
        return self._join(W, G, self._phi(q[-1]) @ W)
