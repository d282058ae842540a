"""Selective state-space model (a Mamba-2-style recurrence in the LSSM template),
Hess et al. (2026) Sec. 5.4 and App. H.4 (Eq. 72–73)."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_int, check_real
from .._solvers._scan import ScanMethod
from ..models._base import KAPPA, AbstractDataDrivenModel, AbstractSizedModel, check_sizes, uniform
from ..models._lssm import init_inputs, init_readout, scan_with_inputs


def _inv_softplus(y):
    return y + jnp.log(-jnp.expm1(-y))


class SelectiveSSM(AbstractSizedModel, AbstractDataDrivenModel):
    """The LSSM (Eq. 3) with its fixed linear recurrence replaced by a selective SSM, the
    core recurrence of a Mamba-2 block (Hess et al. 2026, Eq. 72–73, App. H.4):

        z_t = Ā_t z_{t-1} + Ū_t(x_{t-1}) + C s_t,     x̂_t = B relu(V z_t + b),

    per head h (of H), channel p (of P) and state index s (of S):

        Δ_t      = softplus(W_Δ x_{t-1} + b_Δ)                   ∈ R^H  (one step size per head)
        Ā_t[h]   = exp(Δ_t[h] A[h]),  A[h] = −exp(A_log[h]) < 0    (one scalar decay per head)
        u_t      = W_in x_{t-1} + b_in                            ∈ R^D  (input lifted to D = H·P)
        U_t[h]   = W_U[h] x_{t-1} + b_U[h]                        ∈ R^S  (data-dependent input)
        z_t[h, p, s] = Ā_t[h] z_{t-1}[h, p, s] + Δ_t[h] u_t[h, p] U_t[h, s].

    The latent state `z` (M = D·S = H·P·S, flattened head-major) is Mamba-2's per-head
    state matrix (P channels × S state size). The drive `Ū_t x_{t-1} = Δ_t u_t ⊗ U_t` is
    bilinear in `x_{t-1}`, so the effective free-running map (Eq. 4) is not limited to the
    rank of a fixed `U B` (App. H.4.1). The recurrence is still linear in `z` for given data,
    so teacher-forced training (`teacher_forced`) is ONE call of the scan backend with the
    time-varying diagonal multipliers `Ā_t`; at generation time the data `x_{t-1}` is
    replaced by the prediction `x̂_{t-1} = observe(z_{t-1})` (`step`, Eq. 4).

    Left out of the Mamba-2 block (not needed for the comparison of App. H.4, which replaces
    only the recurrence): the depth-wise causal convolution, the gating branch, the
    data-dependent output vector `C_t` and the output projection. Their role of reading
    out the state is taken by the LSSM's MLP read-out on the full state `z` (as in the
    paper, which keeps the read-out of Eq. 3).

    **Initialization** (App. E in spirit: the model starts as a stable, nearly linear
    LSSM): `A = −1` (`A_log = 0`); `b_Δ` such that the initial step sizes are log-uniform
    in `[dt_min, dt_max]` (Mamba's default, so `Ā ∈ [e^{−dt_max}, e^{−dt_min}]`);
    `W_Δ, W_U ~ U(±(1−κ)/√N)`, `b_U = 1`, so that initially `Δ_t ≈ Δ` and `U_t ≈ 1`, which is
    an LSSM with input matrix `Δ W_in`; `W_in ~ U(±1/√N)`, `b_in = 0`, so the integrated
    state is O(1); `C ~ U(±(1−κ)/√K)`; read-out as the LSSM: `B ~ U(±(1−κ)/√L)`,
    `V ~ U(±(1−κ)/√M)`, `b = 0`.

    **Arguments:**

    - `obs_dim` (N), `latent_dim` (M = D·S, must be divisible by `n_heads · state_size`),
      `hidden_dim` (L, read-out width).
    - `key`: PRNG key.
    - `n_heads` (H) and `state_size` (S, Mamba's `d_state`); the lifted width is
      `D = M / S` and every head has `P = D / H` channels.
    - `input_dim` (K): external inputs `s_t`, entering as `C s_t` like the LSSM.
    - `dt_min`, `dt_max`: range of the initial step sizes Δ; `kappa`: App. E scale.
    - `dtype`: parameter dtype.

    Example:
    ```python
    model = dsr.SelectiveSSM(6, 24, 64, n_heads=2, state_size=2, key=jax.random.key(0))
    z = model.teacher_forced(x)          # x: (T+1, 6) → z_1..z_T, one linear scan
    x_gen = dsr.generate(model, 1000, context=x[:512])
    ```

    References: Hess et al. (2026) Sec. 5.4, App. H.4 (Eq. 72–73); Dao & Gu (2024), *Transformers
    are SSMs* (Mamba-2); Gu & Dao (2024), *Mamba*.
    """

    W_in: Float[Array, "D N"]
    b_in: Float[Array, " D"]
    W_delta: Float[Array, "H N"]
    b_delta: Float[Array, " H"]
    A_log: Float[Array, " H"]
    W_U: Float[Array, "HS N"]
    b_U: Float[Array, " HS"]
    C: Float[Array, "M K"]
    B: Float[Array, "N L"]
    V: Float[Array, "L M"]
    b: Float[Array, " L"]
    n_heads: int = eqx.field(static=True)
    state_size: int = eqx.field(static=True)

    def __init__(self, obs_dim: int, latent_dim: int, hidden_dim: int, *, key: PRNGKeyArray,
                 n_heads: int = 2, state_size: int = 2, input_dim: int = 0, dt_min: float = 1e-3,
                 dt_max: float = 1e-1, kappa: float = KAPPA, dtype=jnp.float32):
        N, M, L, K = check_sizes(obs_dim, latent_dim, hidden_dim, input_dim)
        H, S = check_int("n_heads", n_heads, 1), check_int("state_size", state_size, 1)
        kappa = check_real("kappa", kappa, 0.0, 1.0, lo_open=True, hi_open=True)
        if M % (H * S):
            raise ValueError(
                f"`latent_dim` ({M}) must be divisible by n_heads · state_size = "
                f"{H} · {S} (the state is H heads × P channels × S state size)."
            )
        if not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < `dt_min` ≤ `dt_max`; got {dt_min!r}, {dt_max!r}.")
        D = M // S
        kin, kdw, kdt, ku, kc, kb, kv = jax.random.split(key, 7)
        eps = 1.0 - kappa
        self.W_in = uniform(kin, (D, N), 1.0 / math.sqrt(N), dtype)
        self.b_in = jnp.zeros((D,), dtype)
        self.W_delta = uniform(kdw, (H, N), eps / math.sqrt(N), dtype)
        log_dt = jax.random.uniform(kdt, (H,), dtype, math.log(dt_min), math.log(dt_max))
        self.b_delta = _inv_softplus(jnp.exp(log_dt)).astype(dtype)
        self.A_log = jnp.zeros((H,), dtype)
        self.W_U = uniform(ku, (H * S, N), eps / math.sqrt(N), dtype)
        self.b_U = jnp.ones((H * S,), dtype)
        self.C = init_inputs(kc, M, K, kappa, dtype)
        self.B, self.V, self.b = init_readout(kb, kv, N, L, M, kappa, dtype)
        self.set_sizes(N, M, L, K)
        self.n_heads, self.state_size = H, S

    @property
    def A(self) -> Float[Array, " H"]:
        """The per-head scalar decay rates `A = −exp(A_log) < 0`."""
        return -jnp.exp(self.A_log)

    @property
    def head_dim(self) -> int:
        """P, channels per head."""
        return self.latent_dim // (self.n_heads * self.state_size)

    def selection(
        self, x_prev: Float[Array, " N"]
    ) -> tuple[Float[Array, " M"], Float[Array, " M"]]:
        """The data-dependent recurrence of Eq. 72–73 for one step: the diagonal
        multiplier `Ā_t` and the drive `Ū_t x_{t-1} = Δ_t u_t ⊗ U_t`, both flattened to (M,).
        """
        H, S, P = self.n_heads, self.state_size, self.head_dim
        delta = jax.nn.softplus(self.W_delta @ x_prev + self.b_delta)  # (H,)
        a_bar = jnp.exp(delta * self.A)  # (H,)
        u = (self.W_in @ x_prev + self.b_in).reshape(H, P)
        U = (self.W_U @ x_prev + self.b_U).reshape(H, S)
        drive = delta[:, None, None] * u[:, :, None] * U[:, None, :]  # (H, P, S)
        return jnp.repeat(a_bar, P * S), drive.reshape(-1)

    def observe(self, z):
        return self.B @ jax.nn.relu(self.V @ z + self.b)

    def forced_step(
        self, z: Float[Array, " M"], x_prev: Float[Array, " N"], s: Float[Array, " K"] | None = None
    ) -> Float[Array, " M"]:
        """One step driven by an observation: `z_t = Ā_t(x_{t-1}) z_{t-1} + Ū_t(x_{t-1}) + C s_t`
        (Eq. 72)."""
        self._check_inputs(s)
        a_bar, drive = self.selection(x_prev)
        out = a_bar * z + drive
        if self.input_dim:
            out = out + self.C @ self.inputs_or_zeros(s, z.dtype)
        return out

    def step(self, z, s=None):
        """Free-running step (Eq. 4): the prediction `x̂_{t-1} = observe(z_{t-1})` replaces data."""
        return self.forced_step(z, self.observe(z), s)

    def teacher_forced(self, x: Float[Array, "T+1 N"], inputs: Float[Array, "T+1 K"] | None = None,
                       z0: Float[Array, " M"] | None = None, *,
                       method: ScanMethod = "auto") -> Float[Array, "T M"]:
        """Latents `z_1..z_T` driven by the data `x_0..x_{T-1}` (Eq. 72): the selection is
        computed for all steps at once, then ONE linear scan with the time-varying diagonal
        `Ā_t` (parallel over time). `inputs` (aligned with `x`) supplies `s_t`; `z0`
        defaults to zeros.
        """
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.obs_dim or x.shape[0] < 2:
            raise ValueError(
                f"`x` must have shape (T+1, {self.obs_dim}) with T ≥ 1; got {x.shape}."
            )
        self._check_inputs(inputs)
        a_bar, drive = jax.vmap(self.selection)(x[:-1])
        return scan_with_inputs(a_bar, drive, self.C, inputs, z0, method)

    def _check_inputs(self, s):
        if s is not None and not self.input_dim:
            raise ValueError(
                "external inputs were given but this SelectiveSSM has input_dim = 0; construct "
                "it with `input_dim=K` to use inputs."
            )
