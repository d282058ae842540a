"""Linear state-space model with MLP read-out (LSSM), Hess et al. (2026) Eq. 3–4."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_key, check_real
from .._solvers._scan import ScanMethod, linear_scan
from ._base import (KAPPA, AbstractDataDrivenModel, AbstractMARModel, AbstractSizedModel,
                    check_sizes, uniform)


def init_readout(kB, kV, obs_dim, hidden_dim, latent_dim, kappa, dtype):
    """The MLP read-out `x̂ = B relu(V z + b)` by App. E: B ~ U(±(1−κ)/√L),
    V ~ U(±(1−κ)/√M), b = 0. Returns `(B, V, b)`."""
    eps = 1.0 - kappa
    B = uniform(kB, (obs_dim, hidden_dim), eps / math.sqrt(hidden_dim), dtype)
    V = uniform(kV, (hidden_dim, latent_dim), eps / math.sqrt(latent_dim), dtype)
    return B, V, jnp.zeros((hidden_dim,), dtype)


def init_inputs(key, latent_dim, input_dim, kappa, dtype):
    """`C ~ U(±(1−κ)/√K)` (App. E), an empty (M, 0) matrix without inputs."""
    if not input_dim:
        return jnp.zeros((latent_dim, 0), dtype)
    return uniform(key, (latent_dim, input_dim), (1.0 - kappa) / math.sqrt(input_dim), dtype)


def scan_with_inputs(A, drive, C, inputs, z0, method):
    """`z_t = A_t ⊙ z_{t-1} + drive_t + C s_t` for t = 1..T, one call of the scan backend;
    `inputs` (`(T+1, K)`, aligned with the data, `s_t = inputs[t]`) are required when C has
    K > 0 columns and ignored otherwise. `z0` defaults to zeros."""
    if C.shape[1]:
        if inputs is None:
            T, K = drive.shape[0], C.shape[1]
            raise ValueError(f"`inputs` of shape ({T + 1}, {K}) are required.")
        drive = drive + inputs[1:] @ C.T
    return linear_scan(A, drive, z0, method=method)


class LSSM(AbstractSizedModel, AbstractDataDrivenModel, AbstractMARModel):
    """`z_t = A ⊙ z_{t-1} + U x_{t-1} + C s_t + h`, `x̂_t = B relu(V z_t + b)` (Eq. 3).

    Training is linear in z: the teacher signal `x_{t-1}` enters through U, so the whole
    teacher-forced sequence is one call of the scan backend (`teacher_forced`). At
    generation time `x_{t-1}` is replaced by the prediction `x̂_{t-1}` (Eq. 4), which is
    the free-running map `step`.

    **Arguments:** `obs_dim` (N), `latent_dim` (M), `hidden_dim` (L, read-out width),
    `key`, `input_dim` (K), `kappa` (App. E init).

    **References:** Hess, Götz, Durstewitz (2026), arXiv:2605.12683, Eq. 3–4.
    """

    A_bar: Float[Array, " M"]
    U: Float[Array, "M N"]
    C: Float[Array, "M K"]
    h: Float[Array, " M"]
    B: Float[Array, "N L"]
    V: Float[Array, "L M"]
    b: Float[Array, " L"]

    def __init__(self, obs_dim: int, latent_dim: int, hidden_dim: int, *, key: PRNGKeyArray,
                 input_dim: int = 0, kappa: float = KAPPA, dtype=jnp.float32):
        N, M, L, K = check_sizes(obs_dim, latent_dim, hidden_dim, input_dim)
        kappa = check_real("kappa", kappa, 0.0, 1.0, lo_open=True, hi_open=True)
        key = check_key("key", key)
        kU, kC, kB, kV = jax.random.split(key, 4)
        eps = 1.0 - kappa
        self.A_bar = jnp.full((M,), math.atanh(kappa), dtype)
        self.U = uniform(kU, (M, N), eps / math.sqrt(N), dtype)
        self.C = init_inputs(kC, M, K, kappa, dtype)
        self.h = jnp.zeros((M,), dtype)
        self.B, self.V, self.b = init_readout(kB, kV, N, L, M, kappa, dtype)
        self.set_sizes(N, M, L, K)

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
            out = out + self.C @ self.inputs_or_zeros(s, z.dtype)
        return out

    def mar_terms(self, n_units, p):
        """Eq. 61: `|1 − A_ii|^p + (1/N) Σ_j |U_ij|^p + |h_i|^p`."""
        r = slice(self.latent_dim - n_units, None)
        pw = lambda a: jnp.abs(a) ** p  # noqa: E731
        conn = jnp.sum(pw(self.U[r]), axis=1) / self.obs_dim
        return pw(1.0 - self.A[r]) + conn + pw(self.h[r])

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
        drive = x[:-1] @ self.U.T + self.h
        A = jnp.broadcast_to(self.A, drive.shape).astype(drive.dtype)
        return scan_with_inputs(A, drive, self.C, inputs, z0, method)
