"""The TTT / linear-attention layer as an Equinox module (Liu et al. 2026, Sec. 6.1–6.2)."""

from __future__ import annotations

import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_int, check_optional_int
from ._ttt import Form, check_form, ttt_linear
from ._ttt_kernel import SwiGLUKernel

_KERNELS = ("identity", "swiglu")


def _inv_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


def _logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


class TTTLinear(eqx.Module):
    """A single-head TTT-KVB layer: projections `q = x W_q`, `k = x W_k`, `v = x W_v`, then
    `ttt_linear` (Liu et al. 2026, Sec. 6.1: only the last inner-loop layer W is updated; φ is a
    static kernel, identity or LaCT's SwiGLU).

    The per-chunk learning rate and momentum are data-dependent, as in LaCT, but computed
    once per chunk from the chunk's mean input `x̄_t`:
    `η_t = softplus(w_η · x̄_t + b_η)`, `α_t = sigmoid(w_α · x̄_t + b_α)` (α = 0 if
    `momentum=False`); `b_η`, `b_α` start at `lr_init`, `momentum_init`.

    **Arguments:**

    - `d_model`, `d_key`, `d_value`: input width, key/query width Dk, output width Dv.
    - `chunk_size`: tokens per inner-loop step (1: token-level causal).
    - `kernel`: `"identity"` or `"swiglu"` (hidden width `d_hidden`, default `d_key`).
    - `form`: `"parallel"` (default) or `"recurrent"`; `__call__(x, form=...)` overrides.
    - `momentum`: learn a per-chunk momentum α (else α = 0).
    - `update_kernel`, `weight_norm`: the non-reducible variants of Liu et al. (2026) App. I
      (recurrent form only; asking for them with `form="parallel"` raises).
    - `block_size`: the parallel form's block length (see `ttt_linear`).
    - `key`: PRNG key. `dtype`: parameter dtype (default: JAX's default float).

    `__call__(x)` maps `(T, d_model) → (T, d_value)`; vmap it for batches.

    Example:
    ```python
    layer = dsr.TTTLinear(16, 8, 8, chunk_size=4, kernel="swiglu", key=jax.random.key(0))
    y = jax.vmap(layer)(jnp.ones((2, 30, 16)))  # (2, 30, 8)
    ```
    """

    q_proj: eqx.nn.Linear
    k_proj: eqx.nn.Linear
    v_proj: eqx.nn.Linear
    lr_proj: eqx.nn.Linear
    momentum_proj: eqx.nn.Linear | None
    w0: Float[Array, "Dh Dv"]
    kernel: SwiGLUKernel | None
    d_model: int = eqx.field(static=True)
    d_key: int = eqx.field(static=True)
    d_value: int = eqx.field(static=True)
    chunk_size: int = eqx.field(static=True)
    form: str = eqx.field(static=True)
    update_kernel: bool = eqx.field(static=True)
    weight_norm: bool = eqx.field(static=True)
    block_size: int | None = eqx.field(static=True)

    def __init__(
        self,
        d_model: int,
        d_key: int,
        d_value: int,
        *,
        chunk_size: int,
        kernel: Literal["identity", "swiglu"] = "identity",
        key: PRNGKeyArray,
        d_hidden: int | None = None,
        form: Form = "parallel",
        momentum: bool = True,
        lr_init: float = 0.1,
        momentum_init: float = 0.5,
        update_kernel: bool = False,
        weight_norm: bool = False,
        block_size: int | None = None,
        dtype=None,
    ):
        for name, val in (("d_model", d_model), ("d_key", d_key), ("d_value", d_value),
                          ("chunk_size", chunk_size)):
            check_int(name, val, 1)
        check_optional_int("d_hidden", d_hidden, 1)
        check_optional_int("block_size", block_size, 1)
        if kernel not in _KERNELS:
            raise ValueError(f"`kernel` must be one of {_KERNELS}; got {kernel!r}.")
        check_form(form, update_kernel, weight_norm, None if kernel == "identity" else kernel)
        if not lr_init > 0:
            raise ValueError(f"`lr_init` must be positive; got {lr_init!r}.")
        if not 0 < momentum_init < 1:
            raise ValueError(f"`momentum_init` must lie in (0, 1); got {momentum_init!r}.")
        dtype = jnp.result_type(float) if dtype is None else dtype
        kq, kk, kv, kl, km, kw, kphi = jax.random.split(key, 7)
        self.q_proj = eqx.nn.Linear(d_model, d_key, use_bias=False, key=kq, dtype=dtype)
        self.k_proj = eqx.nn.Linear(d_model, d_key, use_bias=False, key=kk, dtype=dtype)
        self.v_proj = eqx.nn.Linear(d_model, d_value, use_bias=False, key=kv, dtype=dtype)
        lr_proj = eqx.nn.Linear(d_model, "scalar", key=kl, dtype=dtype)
        self.lr_proj = eqx.tree_at(lambda m: m.bias, lr_proj,
                                   jnp.asarray(_inv_softplus(lr_init), dtype))
        if momentum:
            mp = eqx.nn.Linear(d_model, "scalar", key=km, dtype=dtype)
            self.momentum_proj = eqx.tree_at(lambda m: m.bias, mp,
                                             jnp.asarray(_logit(momentum_init), dtype))
        else:
            self.momentum_proj = None
        if kernel == "swiglu":
            d_hidden = d_key if d_hidden is None else d_hidden
            self.kernel = SwiGLUKernel.random(d_key, d_hidden, key=kphi, dtype=dtype)
        else:
            if d_hidden is not None:
                raise ValueError("`d_hidden` is only used with `kernel='swiglu'`.")
            d_hidden = d_key
            self.kernel = None
        s = 1.0 / math.sqrt(d_hidden)
        self.w0 = jax.random.uniform(kw, (d_hidden, d_value), dtype, -s, s)
        self.d_model, self.d_key, self.d_value = d_model, d_key, d_value
        self.chunk_size = chunk_size
        self.form = form
        self.update_kernel = bool(update_kernel)
        self.weight_norm = bool(weight_norm)
        self.block_size = block_size

    def __check_init__(self):
        check_form(self.form, self.update_kernel, self.weight_norm, self.kernel)

    def chunk_rates(
        self, x: Float[Array, "T d_model"]
    ) -> tuple[Float[Array, " n_chunks"], Float[Array, " n_chunks"]]:
        """The per-chunk learning rates η and momenta α for the input `x`."""
        T = x.shape[0]
        L = self.chunk_size
        n = -(-T // L)
        xs = jnp.pad(x, ((0, n * L - T), (0, 0))).reshape(n, L, -1).sum(axis=1)
        counts = jnp.minimum(L, T - L * jnp.arange(n)).astype(x.dtype)
        xbar = xs / counts[:, None]
        lr = jax.nn.softplus(jax.vmap(self.lr_proj)(xbar))
        if self.momentum_proj is None:
            mom = jnp.zeros_like(lr)
        else:
            mom = jax.nn.sigmoid(jax.vmap(self.momentum_proj)(xbar))
        return lr, mom

    def __call__(
        self, x: Float[Array, "T d_model"], *, form: Form | None = None
    ) -> Float[Array, "T d_value"]:
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.d_model:
            raise ValueError(
                f"`x` must have shape (T, d_model) = (T, {self.d_model}); got {x.shape} "
                "(vmap the layer for batches)."
            )
        if x.shape[0] < 1:
            raise ValueError("`x` must have at least one token (T ≥ 1).")
        lr, mom = self.chunk_rates(x)
        return ttt_linear(
            jax.vmap(self.q_proj)(x),
            jax.vmap(self.k_proj)(x),
            jax.vmap(self.v_proj)(x),
            chunk_size=self.chunk_size,
            w0=self.w0,
            lr=lr,
            momentum=mom,
            form=self.form if form is None else form,
            kernel=self.kernel,
            update_kernel=self.update_kernel,
            weight_norm=self.weight_norm,
            block_size=self.block_size,
        )
