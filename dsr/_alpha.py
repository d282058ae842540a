"""The GTF forcing strength α as a strategy object (Hess et al. 2023, *Generalized Teacher
Forcing for Learning Chaotic Dynamics*, ICML, arXiv:2306.04406; Hess, Götz, Durstewitz
(2026), arXiv:2605.12683, Sec. 3.2 and Prop. 1).

- `ConstantAlpha(0.08)`: a fixed α (a float passed to `dsr.fit` means this).
- `AdaptiveAlpha()`: the GTF authors' aGTF: α starts at `alpha0 = 1` and, every `every = 5`
  updates, is compared with the estimate `α_est = max(0, 1 − 1/G)` of Prop. 1 along the
  current batch's teacher signals: `α ← α_est` if `α_est > α`, else
  `α ← γ α + (1 − γ) α_est` (γ = 0.999). `G` is their "product upper bound": per window the
  geometric mean over time of `‖J(z̄_t)‖₂`, maximum over the windows.

Both also hold the fallback rule of `dsr.fit`: after `max_failures` consecutive batches whose
GTF-DEER solve failed (re-solved sequentially), α rises by `failure_step`.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ._checks import check_int, check_optional_int, check_real
from ._gtf import check_alpha, teacher_signals
from .models._base import AbstractGTFModel


def estimate_alpha(
    model: AbstractGTFModel, x: Float[Array, "*batch T N"], *, max_points: int | None = None
) -> Float[Array, ""]:
    """The forcing strength that keeps GTF's gradients bounded (Hess et al. 2026, Prop. 1).

    `α_est = max(0, 1 − 1/G)`, `G = max_windows exp(mean_t log ‖J(z̄_t)‖₂)` over the
    teacher signals `z̄_t = B⁺x_t`, t ≥ 1 (the GTF authors' `product_upper_bound`).

    **Arguments:**

    - `model`: a GTF model (shPLRNN family).
    - `x`: observations `(T, N)` or windows `(B, T, N)`.
    - `max_points`: use at most this many time points per window (evenly strided); all by
      default.

    **Returns:** `α_est`, a scalar array in [0, 1].
    """
    x = x if x.ndim == 3 else x[None]
    x = x[:, 1:]
    stride = 1 if max_points is None else max(1, x.shape[1] // max_points)
    zbar = teacher_signals(model, x[:, ::stride])

    def log_norm(z):
        return jnp.log(jnp.maximum(jnp.linalg.norm(model.jacobian(z), ord=2), 1e-12))

    logs = jax.vmap(jax.vmap(log_norm))(zbar)
    G = jnp.max(jnp.exp(jnp.mean(logs, axis=1)))
    return jnp.clip(1.0 - 1.0 / G, 0.0, 1.0).astype(x.dtype)


class AbstractAlpha(eqx.Module):
    """A schedule for the GTF forcing strength α of one model.

    Subclasses implement `initial()` (α before the first update), `is_due(step)` (whether α
    is re-estimated before update `step`) and `updated(alpha, model, x, step, steps)` (the
    new α from the model, its next batch, the update index and the fit's total updates, so a
    schedule over training needs no counter of its own), and carry `failure_step` (the rise
    of α after `max_failures` failed solves in a row, see [`dsr.fit`][]; `fit`'s warning
    names it).
    """

    failure_step: eqx.AbstractVar[float]

    @abc.abstractmethod
    def initial(self) -> float:
        """α before the first update."""

    @abc.abstractmethod
    def is_due(self, step: Int[Array, ""]) -> Bool[Array, ""] | bool:
        """Whether α is re-estimated before update number `step` (0-based)."""

    @abc.abstractmethod
    def updated(self, alpha: Float[Array, ""], model: AbstractGTFModel,
                x: Float[Array, "B T+1 N"], step: Int[Array, ""], steps: int) -> Float[Array, ""]:
        """The new α before update `step` (0-based, an array inside the compiled update) of
        `steps` (the fit's total, a Python int), from the model and the batch it is about to
        be trained on."""


class ConstantAlpha(AbstractAlpha):
    """A fixed forcing strength `value` ∈ [0, 1].

    **Arguments:** `value`; `failure_step`: rise of α after repeated solver failures.
    """

    value: float = eqx.field(static=True)
    failure_step: float = eqx.field(default=0.05, static=True, kw_only=True)

    def __check_init__(self):
        check_alpha(self.value)
        check_real("failure_step", self.failure_step, 0.0, 1.0)

    def initial(self):
        return float(self.value)

    def is_due(self, step):
        return False

    def updated(self, alpha, model, x, step, steps):
        return alpha


class AdaptiveAlpha(AbstractAlpha):
    """aGTF: α from `alpha0`, re-estimated every `every` updates and relaxed at rate `gamma`.

    **Arguments:** `every` (5), `gamma` (0.999), `alpha0` (1.0), `max_points` (time points
    per window for the estimate; all by default), `failure_step` (0.05).

    Example: `dsr.fit(model, data, alpha=dsr.AdaptiveAlpha(every=5, gamma=0.999))`.
    """

    every: int = eqx.field(default=5, static=True)
    gamma: float = eqx.field(default=0.999, static=True)
    alpha0: float = eqx.field(default=1.0, static=True)
    max_points: int | None = eqx.field(default=None, static=True)
    failure_step: float = eqx.field(default=0.05, static=True, kw_only=True)

    def __check_init__(self):
        check_int("every", self.every, 1)
        check_real("gamma", self.gamma, 0.0, 1.0, lo_open=True)
        check_alpha(self.alpha0)
        check_optional_int("max_points", self.max_points, 1)
        check_real("failure_step", self.failure_step, 0.0, 1.0)

    def initial(self):
        return float(self.alpha0)

    def is_due(self, step):
        return (step + 1) % self.every == 0

    def updated(self, alpha, model, x, step, steps):
        est = estimate_alpha(model, x, max_points=self.max_points).astype(alpha.dtype)
        return jnp.where(est > alpha, est, self.gamma * alpha + (1.0 - self.gamma) * est)


def as_alpha(alpha, every: int | None = None, gamma: float | None = None) -> AbstractAlpha:
    """`fit`'s `alpha` argument as a strategy: a number means `ConstantAlpha`, the string
    `"adaptive"` an `AdaptiveAlpha` (with `every`/`gamma` when given)."""
    if isinstance(alpha, AbstractAlpha):
        return alpha
    if isinstance(alpha, str):
        if alpha != "adaptive":
            raise ValueError(f"`alpha` must be a number in [0, 1], 'adaptive' or a "
                             f"dsr.AdaptiveAlpha / dsr.ConstantAlpha; got {alpha!r}.")
        kw = {k: v for k, v in (("every", every), ("gamma", gamma)) if v is not None}
        return AdaptiveAlpha(**kw)
    check_alpha(alpha)
    return ConstantAlpha(float(alpha))
