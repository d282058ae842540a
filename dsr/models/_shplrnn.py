"""Shallow piecewise-linear RNNs: the shPLRNN (Hess et al. 2026, Eq. 5) and its template.

`z_t = A ⊙ z_{t-1} + W φ(V z_{t-1}) + C s_t + h`, `x̂_t = B z_t`. The template
`AbstractShPLRNN` holds the parameters, the step and the analytic Jacobians; the final
classes choose the nonlinearity `φ` and its slope (`ShPLRNN`: `relu(u + b)`;
`ClippedShPLRNN`: `relu(u + b) − relu(u)`).
"""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_key, check_optional_int, check_real
from ._base import (KAPPA, AbstractGTFModel, AbstractMARModel, AbstractSizedModel, check_sizes,
                    uniform)


class AbstractShPLRNN(AbstractSizedModel, AbstractGTFModel, AbstractMARModel):
    """`z_t = A ⊙ z_{t-1} + W φ(V z_{t-1}) + C s_t + h`, `x̂_t = B z_t`.

    `A = tanh(Ā)` is a diagonal stored as the vector `A_bar`. With `rank=r`, `W = W_L W_R`
    (`W_L`: M×r, `W_R`: r×L). Subclasses define `phi(u)` (with `u = V z`) and its slope.
    """

    A_bar: Float[Array, " M"]
    W_L: Float[Array, "M R"]
    W_R: Float[Array, "R L"] | None
    V: Float[Array, "L M"]
    b: Float[Array, " L"]
    C: Float[Array, "M K"]
    h: Float[Array, " M"]
    B: Float[Array, "N M"]
    rank: int | None = eqx.field(static=True)

    @abc.abstractmethod
    def phi(self, u: Float[Array, " L"]) -> Float[Array, " L"]:
        """The hidden-layer nonlinearity at `u = V z`."""

    @abc.abstractmethod
    def slope(self, u: Float[Array, " L"]) -> Float[Array, " L"]:
        """`dφ/du` at `u = V z` (piecewise constant)."""

    @property
    def A(self) -> Float[Array, " M"]:
        """The diagonal of A, `tanh(Ā)`."""
        return jnp.tanh(self.A_bar)

    @property
    def W(self) -> Float[Array, "M L"]:
        """W (the product `W_L W_R` for a low-rank model)."""
        return self.W_L if self.W_R is None else self.W_L @ self.W_R

    def _Wmul(self, u):
        return self.W_L @ u if self.W_R is None else self.W_L @ (self.W_R @ u)

    def step(self, z, s=None):
        out = self.A * z + self._Wmul(self.phi(self.V @ z)) + self.h
        if self.input_dim:
            out = out + self.C @ self.inputs_or_zeros(s, z.dtype)
        return out

    def _factored(self, z, right, base):
        """`base + W diag(φ'(Vz)) right` for an (L, M) matrix `right` (V, or V P) and an
        (M, M) `base` (diag(A), or diag(A) P), as `Σ_l d_l W_{:,l} right_{l,:} + 1·base`: the
        outer products come from parameters alone, so under `vmap` over time they are built
        once and all T products are one `(T, L+1) @ (L+1, M·M)` matmul, with no `(T, L, M)`
        temporary and no second pass over the T·M² result to add `base` (memory-bound at
        M = 16; docs: Performance, "Design measurements")."""
        d = self.slope(self.V @ z).astype(z.dtype)
        left = self.W_L.T if self.W_R is None else self.W_R.T  # (L, M) or (L, r)
        outer = left[:, :, None] * right[:, None, :]
        if self.W_R is not None:
            return base + self.W_L @ jnp.tensordot(d, outer, axes=1)
        ones = jnp.ones((1,), d.dtype)
        return jnp.tensordot(jnp.concatenate([d, ones]),
                             jnp.concatenate([outer, base[None]], axis=0), axes=1)

    def jacobian(self, z, s=None):
        """`J(z) = diag(A) + W diag(φ'(Vz)) V` (analytic)."""
        return self._factored(z, self.V, jnp.diag(self.A))

    def jacobian_product(self, z, P, s=None):
        """`J(z) P = diag(A) P + W diag(φ'(Vz)) (V P)`: P folded into the factors (`V P` and
        the outer products are built once under `vmap`), so no per-step M×M×M product."""
        return self._factored(z, self.V @ P, self.A[:, None] * P)

    def jacobian_diagonal(self, z, s=None):
        """`diag J(z) = A + (W ⊙ Vᵀ) φ'(Vz)`: one (M, L) mat-vec, the matrix from the
        parameters alone (built once under `vmap` over time)."""
        return self._factored_diagonal(z, self.A, self.V)

    def jacobian_product_diagonal(self, z, P, s=None):
        """`diag(J(z) P) = A ⊙ diag(P) + (W ⊙ (V P)ᵀ) φ'(Vz)`: one (M, L) mat-vec per step,
        the matrix built once under `vmap` (under vmap over T: one `(T, L) @ (L, M)` matmul,
        against `(T, L) @ (L, M²)` for the full Jacobian)."""
        return self._factored_diagonal(z, self.A * jnp.diagonal(P), self.V @ P)

    def mar_terms(self, n_units, p):
        """Eq. 50: `|1 − A_ii|^p + (1/L) Σ_j (γ_W |W_ij|^p + γ_V |V_ji|^p) + |h_i|^p`,
        γ_W = 1/(3L), γ_V = 1/(3M)."""
        r = slice(self.latent_dim - n_units, None)
        pw = lambda a: jnp.abs(a) ** p  # noqa: E731
        L, M = self.hidden_dim, self.latent_dim
        conn = (jnp.sum(pw(self.W[r]), axis=1) / (3 * L)
                + jnp.sum(pw(self.V[:, r]), axis=0) / (3 * M)) / L
        return pw(1.0 - self.A[r]) + conn + pw(self.h[r])

    def _factored_diagonal(self, z, base, right):
        d = self.slope(self.V @ z).astype(z.dtype)
        return base + (self.W * right.T) @ d


def init_shplrnn(model, obs_dim, latent_dim, hidden_dim, key, rank, input_dim, kappa, dtype,
                 b_scale=0.0):
    """Set the fields of a shPLRNN-family model by App. E (κ = `kappa`): Ā = artanh(κ),
    W ~ U(±(1−κ)/√L), V ~ U(±(1−κ)/√M), C ~ U(±(1−κ)/√K), h = 0, B = [I_N 0] (M ≥ N);
    b ~ U(±b_scale) (0 for the shPLRNN)."""
    N, M, L, K = check_sizes(obs_dim, latent_dim, hidden_dim, input_dim)
    rank = check_optional_int("rank", rank, 1)
    kappa = check_real("kappa", kappa, 0.0, 1.0, lo_open=True, hi_open=True)
    key = check_key("key", key)
    kW, kW2, kV, kC = jax.random.split(key, 4)
    eps = 1.0 - kappa
    model.A_bar = jnp.full((M,), math.atanh(kappa), dtype)
    if rank is None:
        model.W_L, model.W_R = uniform(kW, (M, L), eps / math.sqrt(L), dtype), None
    else:
        s = math.sqrt(eps / math.sqrt(L))
        model.W_L, model.W_R = uniform(kW, (M, rank), s, dtype), uniform(kW2, (rank, L), s, dtype)
    model.V = uniform(kV, (L, M), eps / math.sqrt(M), dtype)
    kb = jax.random.fold_in(key, 4)
    model.b = uniform(kb, (L,), b_scale, dtype) if b_scale else jnp.zeros((L,), dtype)
    model.C = uniform(kC, (M, K), eps / math.sqrt(K), dtype) if K else jnp.zeros((M, 0), dtype)
    model.h = jnp.zeros((M,), dtype)
    model.B = jnp.eye(N, M, dtype=dtype)  # [I_N 0] for M ≥ N; [I_M; 0] for M < N
    model.set_sizes(N, M, L, K)
    model.rank = rank


class ShPLRNN(AbstractShPLRNN):
    """`z_t = A ⊙ z_{t-1} + W relu(V z_{t-1} + b) + C s_t + h`, `x̂_t = B z_t` (Eq. 5).

    Initialization follows App. E (κ = 0.9995): close to the identity, so the model starts
    with long time scales.

    **Arguments:**

    - `obs_dim` (N), `latent_dim` (M), `hidden_dim` (L); `rank`: optional low rank of W;
      `input_dim` (K): external inputs, 0 for none; `key`: PRNG key; `kappa`: init scale.

    Example:
    ```python
    model = dsr.ShPLRNN(3, 3, 50, key=jax.random.key(0))
    z1 = model.step(jnp.ones(3))
    ```

    **References:** Hess, Götz, Durstewitz (2026), *Parallel-in-Time Training of Recurrent
    Neural Networks for Dynamical Systems Reconstruction*, arXiv:2605.12683, Eq. 5.
    """

    def __init__(self, obs_dim: int, latent_dim: int, hidden_dim: int, *, key: PRNGKeyArray,
                 rank: int | None = None, input_dim: int = 0, kappa: float = KAPPA,
                 dtype=jnp.float32):
        init_shplrnn(self, obs_dim, latent_dim, hidden_dim, key, rank, input_dim, kappa, dtype)

    def phi(self, u):
        return jax.nn.relu(u + self.b)

    def slope(self, u):
        return u + self.b > 0
