"""The almost-linear RNN (AL-RNN; Brenner, Hemmer, Monfared, Durstewitz, NeurIPS 2024).

`z_t = A ⊙ z_{t-1} + W Φ*(z_{t-1}) + C s_t + h`, `x̂_t = B z_t`, with a ReLU on only the last
P of the M units. Written as a user would write a model: it imports only public names
(`dsr.AbstractGTFModel`, `dsr.models.AbstractMARModel`) and implements the three-method
contract — `step`, `jacobian` and the read-out `B` — plus MAR's per-unit terms; the
Jacobian's diagonal and the forcing-projection products are the family's defaults
(`tests/test_models.py` checks that this module imports nothing private).
"""

from __future__ import annotations

import math
import operator

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._base import AbstractGTFModel, AbstractMARModel


def _size(name: str, value, lo: int) -> int:
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"`{name}` must be an integer; got {value!r}.") from None
    if n < lo:
        raise ValueError(f"`{name}` must be an integer ≥ {lo}; got {n}.")
    return n


class ALRNN(AbstractGTFModel, AbstractMARModel):
    """The almost-linear RNN: `z_t = A ⊙ z_{t-1} + W Φ*(z_{t-1}) + C s_t + h`, `x̂_t = B z_t`,
    `Φ*(z) = (z_1, …, z_{M−P}, relu(z_{M−P+1}), …, relu(z_M))`.

    Only the last P = `relu_units` of the M latent units are rectified, so the model has at
    most 2^P linear subregions (P = 0: a linear model), which makes a trained model readable
    as a small symbolic code. A is a diagonal (a vector), W is M×M. The observed variables
    are the first N latents at the start (`B = [I_N 0]`, the authors' setting, forced by
    GTF); B is trained like the other parameters.

    Initialization (as App. E of Hess et al. 2026 for the shPLRNN, κ = 0.9995): A = κ·1,
    W ~ U(±(1−κ)/√M), C ~ U(±(1−κ)/√K), h = 0, close to the identity map.

    **Arguments:**

    - `obs_dim` (N), `latent_dim` (M ≥ N), `relu_units` (P, 0 ≤ P ≤ M).
    - `key`: PRNG key; `input_dim` (K): external inputs, 0 for none; `kappa`: init scale;
      `dtype`: of the parameters.

    Example:
    ```python
    model = dsr.ALRNN(3, 20, 2, key=jax.random.key(0))     # N = 3, M = 20, P = 2
    z1 = model.step(jnp.ones(20))
    ```

    **References:** Brenner, Hemmer, Monfared, Durstewitz (2024), *Almost-Linear RNNs Yield
    Highly Interpretable Symbolic Codes in Dynamical Systems Reconstruction*, NeurIPS.
    """

    A: Float[Array, " M"]
    W: Float[Array, "M M"]
    h: Float[Array, " M"]
    C: Float[Array, "M K"]
    B: Float[Array, "N M"]
    obs_dim: int = eqx.field(static=True)
    latent_dim: int = eqx.field(static=True)
    relu_units: int = eqx.field(static=True)
    input_dim: int = eqx.field(static=True)

    def __init__(self, obs_dim: int, latent_dim: int, relu_units: int, *, key: PRNGKeyArray,
                 input_dim: int = 0, kappa: float = 0.9995, dtype=jnp.float32):
        N, M = _size("obs_dim", obs_dim, 1), _size("latent_dim", latent_dim, 1)
        P, K = _size("relu_units", relu_units, 0), _size("input_dim", input_dim, 0)
        if M < N:
            raise ValueError(f"`latent_dim` must be ≥ `obs_dim` ({N}); got {M}.")
        if P > M:
            raise ValueError(f"`relu_units` must be ≤ `latent_dim` ({M}); got {P}.")
        if not 0.0 < float(kappa) < 1.0:
            raise ValueError(f"`kappa` must be in (0, 1); got {kappa!r}.")
        kW, kC = jax.random.split(key)
        eps = 1.0 - float(kappa)
        self.A = jnp.full((M,), float(kappa), dtype)
        self.W = jax.random.uniform(kW, (M, M), dtype, -eps / math.sqrt(M), eps / math.sqrt(M))
        self.h = jnp.zeros((M,), dtype)
        scale = eps / math.sqrt(max(K, 1))
        self.C = jax.random.uniform(kC, (M, K), dtype, -scale, scale)
        self.B = jnp.eye(N, M, dtype=dtype)
        self.obs_dim, self.latent_dim, self.relu_units, self.input_dim = N, M, P, K

    def _linear(self) -> Float[Array, " M"]:
        """1 on the linear units, 0 on the rectified ones (a constant of the sizes)."""
        M, P = self.latent_dim, self.relu_units
        return (jnp.arange(M) < M - P)

    def slope(self, z: Float[Array, " M"]) -> Float[Array, " M"]:
        """`Φ*'(z)`: 1 on the linear units, `1[z_i > 0]` on the rectified ones."""
        return (self._linear() | (z > 0)).astype(z.dtype)

    def phi(self, z: Float[Array, " M"]) -> Float[Array, " M"]:
        """`Φ*(z)`: identity on the first M − P units, ReLU on the last P."""
        return jnp.where(self._linear(), z, jax.nn.relu(z))

    def step(self, z, s=None):
        out = self.A * z + self.W @ self.phi(z) + self.h
        if self.input_dim:
            s = jnp.zeros((self.input_dim,), z.dtype) if s is None else s
            out = out + self.C @ s
        return out

    def jacobian(self, z, s=None):
        """`diag(A) + W diag(Φ*'(z))` (analytic)."""
        return jnp.diag(self.A) + self.W * self.slope(z)

    def mar_terms(self, n_units, p):
        """`|1 − A_ii|^p + (1/M) Σ_j |W_ij|^p + |h_i|^p` for the last `n_units` units."""
        r = slice(self.latent_dim - n_units, None)
        pw = lambda a: jnp.abs(a) ** p  # noqa: E731
        return pw(1.0 - self.A[r]) + jnp.mean(pw(self.W[r]), axis=1) + pw(self.h[r])
