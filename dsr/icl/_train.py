"""Training a `LinearSelfAttention` on fresh random LDS batches (Vladarean, Zhang, Sra (2026),
Sec. 5: the context loss `L(θ) = E[½ (ŷ_T − y_T)²]`, AdamW with gradient clipping, linear
warm-up and cosine annealing, a new batch of systems every step)."""

from __future__ import annotations

import time
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import PRNGKeyArray

from .._checks import ArgumentTypeError, check_bool, check_choice, check_int, check_key, check_real
from ._attention import FORMS, LinearSelfAttention, predict_tokens
from ._sampling import SystemLaw, system_law
from ._tokens import check_window, token_matrix

_CHUNK = 100  # optimizer steps per compiled `lax.scan` (and per progress-bar update)


class TrainResult(NamedTuple):
    """What [`dsr.icl.train`][] returns.

    **Attributes:** the trained `model`, the per-step training `loss` (½ MSE on that step's
    batch, NumPy `(steps,)`), the `settings` used and the wall time `train_s`."""

    model: LinearSelfAttention
    loss: np.ndarray
    settings: dict
    train_s: float


def optimizer(learning_rate: float, steps: int, warmup: int, weight_decay: float,
              clip_norm: float) -> optax.GradientTransformation:
    """AdamW after global-norm clipping; linear warm-up to `learning_rate`, then cosine
    annealing to 1% of it at `steps`."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, learning_rate, warmup_steps=warmup, decay_steps=max(steps, warmup + 1),
        end_value=0.01 * learning_rate)
    return optax.chain(optax.clip_by_global_norm(clip_norm),
                       optax.adamw(schedule, weight_decay=weight_decay))


def default_form() -> str:
    """The layer form `train` uses by default: `"recurrent"` on CPU, else `"parallel"`."""
    return "recurrent" if jax.default_backend() == "cpu" else "parallel"


def context_loss(model, batch_y, s, form):
    """`½ mean (ŷ_T − y_T)²` on a batch of sequences `(B, T)`."""
    pred = predict_tokens(model, token_matrix(batch_y, s), form)
    return 0.5 * jnp.mean((pred - batch_y[:, -1]) ** 2)


@eqx.filter_jit
def _run_chunk(model, opt_state, keys, law: SystemLaw, batch_size, form, opt):
    s = model.s
    dtype = model.w_qk.dtype

    def step(carry, key):
        model, opt_state = carry
        y = law.sample(key, batch_size, dtype).y
        loss, grads = eqx.filter_value_and_grad(context_loss)(model, y, s, form)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return (eqx.apply_updates(model, updates), opt_state), loss

    (model, opt_state), losses = jax.lax.scan(step, (model, opt_state), keys)
    return model, opt_state, losses


def train(
    model: LinearSelfAttention,
    *,
    steps: int,
    batch_size: int,
    key: PRNGKeyArray,
    n_steps: int = 30,
    state_dim: int = 5,
    setting: str = "a",
    rho: tuple[float, float] = (0.5, 0.95), sigma_w: float = 0.1, sigma_v: float = 0.1,
    learning_rate: float = 0.05,
    warmup: int | None = None,
    weight_decay: float = 1e-4,
    clip_norm: float = 1.0,
    form: str | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train a `LinearSelfAttention` to predict `y_T` from `y_1 … y_{T−1}` of random noisy
    LDS sequences (Vladarean, Zhang, Sra (2026), Sec. 5), drawing a fresh batch of systems
    (`sample_lds`) at every step.

    **Arguments:**

    - `model`: the `LinearSelfAttention` to train (its `s` must satisfy `s ≤ n_steps − 2`).
    - `steps`: optimizer steps; `batch_size`: sequences per step; `key`: PRNG key.
    - `n_steps` (T), `state_dim` (d), `setting`, `rho`, `sigma_w`, `sigma_v`: the system
      law, as in `sample_lds` (paper: T = 30, d = 5).
    - `learning_rate`: AdamW's peak rate (0.01 trains AR(3) too slowly; 0.03–0.1 work);
      `warmup`: linear warm-up steps (default 5% of `steps`), then cosine annealing to 1%
      of the peak; `weight_decay`: AdamW's decoupled weight decay; `clip_norm`: global
      gradient-norm clipping.
    - `form`: the layer's form, `"parallel"` or `"recurrent"` (same result); default
      `"recurrent"` on CPU (faster there: the sequences are short), `"parallel"` on
      accelerators.
    - `progress`: show a tqdm bar with the running loss.

    **Returns:** a [`dsr.icl.TrainResult`][] (`model`, per-step `loss`, `settings`, `train_s`).
    """
    if not isinstance(model, LinearSelfAttention):
        raise ArgumentTypeError(
            f"`model` must be a LinearSelfAttention; got {type(model).__name__}.")
    steps = check_int("steps", steps, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    key = check_key("key", key)
    law = system_law(n_steps=n_steps, state_dim=state_dim, setting=setting, rho=rho,
                     sigma_w=sigma_w, sigma_v=sigma_v)
    check_window(model.s, law.n_steps)
    learning_rate = check_real("learning_rate", learning_rate, 0.0, lo_open=True)
    warmup = steps // 20 if warmup is None else check_int("warmup", warmup, 0, steps)
    weight_decay = check_real("weight_decay", weight_decay, 0.0)
    clip_norm = check_real("clip_norm", clip_norm, 0.0, lo_open=True)
    form = default_form() if form is None else check_choice("form", form, FORMS)
    progress = check_bool("progress", progress)

    opt = optimizer(learning_rate, steps, warmup, weight_decay, clip_norm)
    opt_state = opt.init(eqx.filter(model, eqx.is_array))
    keys = jax.random.split(key, steps)
    losses = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"train AR({model.s})", dynamic_ncols=True)
    t0 = time.perf_counter()
    try:
        for start in range(0, steps, _CHUNK):
            chunk = keys[start: start + _CHUNK]
            model, opt_state, loss = _run_chunk(model, opt_state, chunk, law, batch_size,
                                                form, opt)
            losses.append(np.asarray(loss))
            if bar is not None:
                bar.update(len(chunk))
                bar.set_postfix(loss=f"{float(np.mean(losses[-1])):.4g}")
    finally:
        if bar is not None:
            bar.close()
    settings = dict(steps=steps, batch_size=batch_size, **law._asdict(),
                    learning_rate=learning_rate, warmup=warmup, weight_decay=weight_decay,
                    clip_norm=clip_norm, form=form, s=model.s)
    settings["rho"] = list(settings["rho"])
    return TrainResult(model, np.concatenate(losses), settings, time.perf_counter() - t0)
