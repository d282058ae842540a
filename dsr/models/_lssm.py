"""Linear state-space model with MLP readout (LSSM), papers/001 Eq. 3–4."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._scan import ScanMethod, linear_scan
from ._base import AbstractModel, uniform
from ._shplrnn import KAPPA


class LSSM(AbstractModel):
    """`z_t = A ⊙ z_{t-1} + U x_{t-1} + C s_t + h`, `x̂_t = B relu(V z_t + b)` (Eq. 3).

    Training is linear in z: the teacher signal `x_{t-1}` enters through U, so the whole
    teacher-forced sequence is one call of the scan backend (`teacher_forced`). At
    generation time `x_{t-1}` is replaced by the prediction `x̂_{t-1}` (Eq. 4), which is
    the free-running map `step`.

    **Arguments:** `obs_dim` (N), `latent_dim` (M), `hidden_dim` (L, readout width),
    `key`, `input_dim` (K), `kappa` (App. E init).
    """

    A_bar: Float[Array, " M"]
    U: Float[Array, "M N"]
    C: Float[Array, "M K"]
    h: Float[Array, " M"]
    B: Float[Array, "N L"]
    V: Float[Array, "L M"]
    b: Float[Array, " L"]
    obs_dim: int = eqx.field(static=True)
    latent_dim: int = eqx.field(static=True)
    hidden_dim: int = eqx.field(static=True)
    input_dim: int = eqx.field(static=True)

    def __init__(self, obs_dim: int, latent_dim: int, hidden_dim: int, *, key: PRNGKeyArray,
                 input_dim: int = 0, kappa: float = KAPPA, dtype=jnp.float32):
        for name, v in (("obs_dim", obs_dim), ("latent_dim", latent_dim), ("hidden_dim", hidden_dim)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"`{name}` must be a positive int; got {v!r}.")
        if not isinstance(input_dim, int) or input_dim < 0:
            raise ValueError(f"`input_dim` must be a non-negative int; got {input_dim!r}.")
        N, M, L, K = obs_dim, latent_dim, hidden_dim, input_dim
        kU, kC, kB, kV = jax.random.split(key, 4)
        eps = 1.0 - kappa
        self.A_bar = jnp.full((M,), math.atanh(kappa), dtype)
        self.U = uniform(kU, (M, N), eps / math.sqrt(N), dtype)
        self.C = uniform(kC, (M, K), eps / math.sqrt(K), dtype) if K else jnp.zeros((M, 0), dtype)
        self.h = jnp.zeros((M,), dtype)
        self.B = uniform(kB, (N, L), eps / math.sqrt(L), dtype)
        self.V = uniform(kV, (L, M), eps / math.sqrt(M), dtype)
        self.b = jnp.zeros((L,), dtype)
        self.obs_dim, self.latent_dim, self.hidden_dim, self.input_dim = N, M, L, K

    @property
    def A(self) -> Float[Array, " M"]:
        """The diagonal of A, `tanh(Ā)`."""
        return jnp.tanh(self.A_bar)

    def observe(self, z):
        return self.B @ jax.nn.relu(self.V @ z + self.b)

    def step(self, z, s=None):
        """Free-running step (Eq. 4): the prediction `x̂_{t-1} = G(z_{t-1})` replaces data."""
        out = self.A * z + self.U @ self.observe(z) + self.h
        if self.input_dim:
            out = out + self.C @ self._input(s, z.dtype)
        return out

    def teacher_forced(
        self,
        x: Float[Array, "T+1 N"],
        inputs: Float[Array, "T+1 K"] | None = None,
        z0: Float[Array, " M"] | None = None,
        *,
        method: ScanMethod = "auto",
    ) -> Float[Array, "T M"]:
        """Latents `z_1..z_T` driven by the data `x_0..x_{T-1}` (Eq. 3), one linear scan.

        `inputs` (aligned with `x`) supplies `s_t`; `z0` defaults to zeros.
        """
        T = x.shape[0] - 1
        drive = x[:-1] @ self.U.T + self.h
        if self.input_dim:
            if inputs is None:
                raise ValueError(f"`inputs` of shape ({T + 1}, {self.input_dim}) are required.")
            drive = drive + inputs[1:] @ self.C.T
        A = jnp.broadcast_to(self.A, (T, self.latent_dim)).astype(drive.dtype)
        return linear_scan(A, drive, z0, method=method)
