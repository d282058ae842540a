"""`check_model`: a model's analytic Jacobians against `jax.jacfwd` of its `step`.

A wrong analytic Jacobian does not stop training: GTF-DEER still converges (slower) to the
right trajectory, so the loss is right, but the implicit gradients that reuse the Jacobians
are wrong, silently. `check_model` compares every analytic method of the contract with
forward-mode autodiff of `step` at a few random states and inputs, at the model's own
parameters and at random parameters of the same shapes (at App. E's near-identity
initialization a wrong nonlinear part can be smaller than rounding), and raises one line
naming the first method that disagrees. `dsr.fit` calls it once, before compiling, for model
classes defined outside dsr (`fit(..., check_model=False)` skips it).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from ._checks import check_int, check_key
from ._ensemble import Ensemble
from .models._base import AbstractGTFModel, AbstractModel, parameter_dtype


def _errors(model, zs, ss, P):
    """Per method, the largest `|analytic − jacfwd|` over the points relative to
    `1 + max|jacfwd|`."""

    def at(z, s):
        ref = jax.jacfwd(lambda z_: model.step(z_, s))(z)
        out = {"jacobian": (model.jacobian(z, s), ref)}
        if isinstance(model, AbstractGTFModel):
            refP = ref @ P
            out["jacobian_diagonal"] = (model.jacobian_diagonal(z, s), jnp.diagonal(ref))
            out["jacobian_product"] = (model.jacobian_product(z, P, s), refP)
            out["jacobian_product_diagonal"] = (model.jacobian_product_diagonal(z, P, s),
                                                jnp.diagonal(refP))
        return out

    pairs = jax.vmap(at)(zs, ss)
    return {name: jnp.max(jnp.abs(jnp.asarray(a, r.dtype) - r)) / (1.0 + jnp.max(jnp.abs(r)))
            for name, (a, r) in pairs.items()}


def _randomized(model, key):
    """The model with every parameter array replaced by `p + N(0, 1/fan_in)` noise: the
    analytic Jacobian must hold for any parameters, and noise of this scale makes every
    term of it visible above rounding."""
    arrays, static = eqx.partition(model, eqx.is_inexact_array)
    leaves, tree = jax.tree_util.tree_flatten(arrays)
    keys = jax.random.split(key, max(1, len(leaves)))
    noisy = [p + jax.random.normal(k, p.shape, p.dtype) / jnp.sqrt(max(1, p.shape[-1]))
             if p.ndim else p for k, p in zip(keys, leaves)]
    return eqx.combine(jax.tree_util.tree_unflatten(tree, noisy), static)


@eqx.filter_jit
def _all_errors(model, key, n_points):
    dtype = parameter_dtype(model)
    M, K = model.latent_dim, model.input_dim
    kz, ks, kp, km = jax.random.split(key, 4)
    zs = jax.random.normal(kz, (n_points, M), dtype)
    ss = jax.random.normal(ks, (n_points, K), dtype)
    P = jax.random.normal(kp, (M, M), dtype) / jnp.sqrt(M)
    if not K:
        ss = None
    given = _errors(model, zs, ss, P)
    rand = _errors(_randomized(model, km), zs, ss, P)
    return given, rand


def check_model(model: AbstractModel | Ensemble, *, key: PRNGKeyArray | None = None,
                n_points: int = 4) -> None:
    """Check a model's analytic Jacobians against `jax.jacfwd` of its `step`.

    Compares `jacobian` and, for a GTF model
    ([`dsr.AbstractGTFModel`][dsr.models.AbstractGTFModel]), `jacobian_diagonal`, `jacobian_product` and `jacobian_product_diagonal` (with a random
    projection `P`) at `n_points` random states `z ~ N(0, I)` (and random inputs when the
    model takes them), at the model's parameters and at randomly perturbed ones, in the
    model's dtype. The tolerance is `√eps` of the dtype (1.5e-8 in float64, 3.5e-4 in
    float32) relative to `1 + max|∂step/∂z|`. `dsr.fit` runs this once for model classes
    defined outside dsr.

    **Arguments:**

    - `model`: a model (an ensemble: its first member).
    - `key`: PRNG key of the states, inputs and perturbations (default `jax.random.key(0)`).
    - `n_points`: states to check at.

    **Returns:** None.

    **Raises:** `ValueError`, one line naming the method that disagrees and by how much.

    Example:
    ```python
    dsr.check_model(dsr.ShPLRNN(3, 3, 16, key=jax.random.key(0)))   # passes silently
    ```
    """
    if isinstance(model, Ensemble):
        model = model[0]
    if not isinstance(model, AbstractModel):
        raise TypeError(f"`model` must be a dsr model or Ensemble; got {type(model).__name__}.")
    n_points = check_int("n_points", n_points, 1)
    key = check_key("key", jax.random.key(0) if key is None else key)
    tol = float(jnp.sqrt(jnp.finfo(parameter_dtype(model)).eps))
    given, rand = jax.device_get(_all_errors(model, key, n_points))
    name = type(model).__qualname__
    for where, errors in (("its parameters", given), ("random parameters", rand)):
        for method, err in errors.items():
            if not err <= tol:  # NaN fails too
                raise ValueError(
                    f"{name}.{method} disagrees with jax.jacfwd of {name}.step at "
                    f"{where}: relative error {float(err):.3g} > {tol:.1e} (check its "
                    "analytic form; a wrong Jacobian gives wrong gradients silently).")
