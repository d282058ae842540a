"""Abstract model interfaces: every model is one of two families.

- `AbstractGTFModel`: a linear observation `x̂_t = B z_t`; trained by generalized teacher
  forcing, whose forced latent trajectory the solvers (GTF-DEER, sequential) compute from
  `step` and its analytic `jacobian` (shPLRNN, clipped shPLRNN, AL-RNN).
- `AbstractTeacherForcedModel`: the data drive the latents directly (the LSSM's `U x_{t-1}`,
  the baselines' token recurrences), so the whole teacher-forced prediction is one parallel
  pass, `predict_teacher_forced`; `warm_start` reads a context.

Both generate by iterating the free-running `step` and reading out with `observe`.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._checks import check_int

#: App. E initialization constant κ: Ā = artanh(κ) and weights of scale (1 − κ)/√dim, so an
#: initial model is close to the identity map with long time scales.
KAPPA = 0.9995


class AbstractModel(eqx.Module):
    """A latent recurrent model `z_t = F(z_{t-1}, s_t)`, `x̂_t = G(z_t)`.

    `step` is the free-running (closed-loop) latent map used for generation and Lyapunov
    exponents; `observe` maps latents to observations; `jacobian` is `∂F/∂z`.
    """

    obs_dim: eqx.AbstractVar[int]
    latent_dim: eqx.AbstractVar[int]
    input_dim: eqx.AbstractVar[int]

    @abc.abstractmethod
    def step(self, z: Float[Array, " M"], s: Float[Array, " K"] | None = None) -> Float[Array, " M"]:
        """One free-running step `z_t = F(z_{t-1}, s_t)`."""

    @abc.abstractmethod
    def observe(self, z: Float[Array, " M"]) -> Float[Array, " N"]:
        """The observation model `x̂ = G(z)`."""

    @abc.abstractmethod
    def jacobian(self, z: Float[Array, " M"], s: Float[Array, " K"] | None = None) -> Float[Array, "M M"]:
        """`∂F/∂z` of the free-running step at `z`."""

    def inputs_or_zeros(self, s, dtype) -> Float[Array, " K"]:
        """`s`, or zeros of length `input_dim` when `s` is None."""
        return jnp.zeros((self.input_dim,), dtype) if s is None else s


class AbstractSizedModel(AbstractModel):
    """A model whose sizes are static fields: `obs_dim` (N), `latent_dim` (M), `hidden_dim`
    (L, the width of its hidden layer or read-out) and `input_dim` (K, 0 without external
    inputs). Combined with one of the families below, listed first so that its static
    fields override the families' abstract declarations (`class LSSM(AbstractSizedModel,
    AbstractDataDrivenModel)`); `set_sizes` fills the fields in `__init__`."""

    obs_dim: int = eqx.field(static=True)
    latent_dim: int = eqx.field(static=True)
    hidden_dim: int = eqx.field(static=True)
    input_dim: int = eqx.field(static=True)

    def set_sizes(self, obs_dim: int, latent_dim: int, hidden_dim: int, input_dim: int):
        """Fill the size fields (inside `__init__` only, where the fields can be set)."""
        self.obs_dim, self.latent_dim = obs_dim, latent_dim
        self.hidden_dim, self.input_dim = hidden_dim, input_dim


def check_sizes(obs_dim, latent_dim, hidden_dim, input_dim) -> tuple[int, int, int, int]:
    """Validated `(N, M, L, K)`: `obs_dim`, `latent_dim`, `hidden_dim` ≥ 1, `input_dim` ≥ 0."""
    return (check_int("obs_dim", obs_dim, 1), check_int("latent_dim", latent_dim, 1),
            check_int("hidden_dim", hidden_dim, 1), check_int("input_dim", input_dim, 0))


class AbstractGTFModel(AbstractModel):
    """A model with a linear observation `x̂_t = B z_t`, trained by generalized teacher
    forcing (Hess et al. 2026, Eq. 8): the forcing uses the teacher signals `z̄_t = B⁺ x_t`.

    The contract is three things: `step`, its analytic `jacobian` and the read-out matrix
    `B`. The Jacobian's diagonal (quasi-DEER) and its products with GTF's forcing projection
    are concrete defaults that form the dense Jacobian; a model with a factored Jacobian
    overrides them for speed (the shPLRNN does). Never `jax.jacfwd` on the hot path;
    [`dsr.check_model`][] compares every one of these methods with `jax.jacfwd` of `step`.
    """

    B: eqx.AbstractVar[Float[Array, "N M"]]

    def jacobian_diagonal(self, z: Float[Array, " M"], s: Float[Array, " K"] | None = None) -> Float[Array, " M"]:
        """The diagonal of `jacobian(z, s)` (default: forms the Jacobian; override it with a
        form that does not)."""
        return jnp.diagonal(self.jacobian(z, s))

    def jacobian_product(self, z: Float[Array, " M"], P: Float[Array, "M M"],
                         s: Float[Array, " K"] | None = None) -> Float[Array, "M M"]:
        """`jacobian(z, s) @ P` for a matrix `P` that is constant over time (GTF's forcing
        projection `P_α`, Hess et al. (2026) Eq. 9). The default forms the Jacobian; a
        factored Jacobian folds `P` into its factors once instead of one M×M×M product per
        step."""
        return self.jacobian(z, s) @ P

    def jacobian_product_diagonal(self, z: Float[Array, " M"], P: Float[Array, "M M"],
                                  s: Float[Array, " K"] | None = None) -> Float[Array, " M"]:
        """`diag(jacobian(z, s) @ P)` (quasi-DEER under GTF); the default forms the
        Jacobian."""
        return jnp.sum(self.jacobian(z, s) * P.T, axis=-1)

    def observe(self, z):
        return self.B @ z


#: The methods of `AbstractGTFModel` that are concrete defaults a subclass may override (the
#: exception to the abstract-or-final rule, which `tests/test_extension.py` checks).
OVERRIDABLE = ("jacobian_diagonal", "jacobian_product", "jacobian_product_diagonal")


class AbstractMARModel(AbstractModel):
    """A model that manifold-attractor regularization ([`dsr.Regularization`][], Hess et al.
    2026 App. E) applies to: its latent map has a diagonal linear part `A`, a bias `h` and
    connections into each latent unit, and MAR pulls the regularized units towards `A = 1`,
    `h = 0` and no connections (a line attractor). Combine it with a family
    (`class MyModel(AbstractSizedModel, AbstractGTFModel, AbstractMARModel)`)."""

    @abc.abstractmethod
    def mar_terms(self, n_units: int, p: int) -> Float[Array, " Mr"]:
        """The MAR penalty of each of the last `n_units` latent units,
        `|1 − A_ii|^p + (connections into unit i) + |h_i|^p`, with `p` ∈ {1, 2}; the
        regularizer scales their sum by `λ_MAR / n_units` (Eq. 50 for the shPLRNN, Eq. 61
        for the LSSM)."""


class AbstractTeacherForcedModel(AbstractModel):
    """A model whose latents the data drive directly during training (teacher forcing),
    so that all T predictions of a window come from one parallel pass."""

    @abc.abstractmethod
    def predict_teacher_forced(
        self, x: Float[Array, "T+1 N"], inputs: Float[Array, "T+1 K"] | None = None
    ) -> Float[Array, "T N"]:
        """Predictions `x̂_1..x̂_T`, `x̂_t` from `x_0..x_{t-1}` (and the inputs)."""

    @abc.abstractmethod
    def warm_start(
        self, context: Float[Array, "Tc N"], inputs: Float[Array, "Tc+1 K"] | None = None
    ) -> Float[Array, " M"]:
        """The latent state after reading `context`, whose observation predicts `x_{Tc}`."""

    def jacobian(self, z, s=None):
        """`∂F/∂z` of the free-running step by forward-mode autodiff (these models' closed
        loop runs through a nonlinear read-out, so there is no cheaper closed form)."""
        return jax.jacfwd(lambda z_: self.step(z_, s))(z)


class AbstractDataDrivenModel(AbstractTeacherForcedModel):
    """A teacher-forced model whose latents, driven by the data, are one call of the scan
    backend (`teacher_forced`), read out by `observe` (the LSSM template, Eq. 3)."""

    @abc.abstractmethod
    def teacher_forced(
        self, x: Float[Array, "T+1 N"], inputs: Float[Array, "T+1 K"] | None = None
    ) -> Float[Array, "T M"]:
        """Latents `z_1..z_T` driven by `x_0..x_{T-1}`."""

    def predict_teacher_forced(self, x, inputs=None):
        return jax.vmap(self.observe)(self.teacher_forced(x, inputs))

    def warm_start(self, context, inputs=None):
        x = jnp.concatenate([context, jnp.zeros_like(context[:1])], axis=0)
        return self.teacher_forced(x, inputs)[-1]


def uniform(key, shape, scale, dtype=jnp.float32):
    """U(−scale, scale) (App. E initialization)."""
    return jax.random.uniform(key, shape, dtype, -scale, scale)


def parameter_dtype(model) -> jnp.dtype:
    """The dtype of a model's parameters (its first inexact array; float32 if it has none)."""
    leaves = [x for x in jax.tree_util.tree_leaves(model) if eqx.is_inexact_array(x)]
    return leaves[0].dtype if leaves else jnp.dtype(jnp.float32)
