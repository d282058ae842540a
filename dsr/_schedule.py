"""Learning-rate schedules of `fit`'s default optimizer, as strategy objects.

`CosineDecay` (the default: cosine from the learning rate to a fraction of it) and
`ExponentialDecay` (geometric decay to an absolute floor, as the GTF authors train: 1e-3 to
1e-6 over the run; Hess, Monfared, Brenner & Durstewitz (2023), arXiv:2306.04406). Adding a
schedule is adding a class with `__call__(learning_rate, steps) -> optax schedule`.
"""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax.numpy as jnp
import optax


class AbstractSchedule(eqx.Module):
    """A learning-rate schedule: `schedule(learning_rate, steps)` is an optax schedule
    (update count ↦ learning rate)."""

    @abc.abstractmethod
    def __call__(self, learning_rate: float, steps: int) -> optax.Schedule:
        """The schedule for a run of `steps` updates starting at `learning_rate`."""


class CosineDecay(AbstractSchedule):
    """Cosine decay from the learning rate to `final_fraction ×` it over the run.

    **Arguments:** `final_fraction` in [0, 1] (default 0.02: to lr/50).
    """

    final_fraction: float = eqx.field(default=0.02, static=True)

    def __check_init__(self):
        if not 0.0 <= self.final_fraction <= 1.0:
            raise ValueError(f"`final_fraction` must be in [0, 1]; got {self.final_fraction}.")

    def __call__(self, learning_rate, steps):
        return optax.cosine_decay_schedule(learning_rate, max(steps, 1),
                                           alpha=self.final_fraction)


class ExponentialDecay(AbstractSchedule):
    """Exponential (geometric) decay from the learning rate to the absolute floor `final`,
    reached at the last update: `lr_t = lr · (final / lr)^(t / steps)`, never below `final`.

    **Arguments:** `final` > 0 (default 1e-6, the GTF authors'; above the learning rate the
    rate grows instead, so keep `final` ≤ `learning_rate`).
    """

    final: float = eqx.field(default=1e-6, static=True)

    def __check_init__(self):
        if not (isinstance(self.final, (int, float)) and self.final > 0 and
                math.isfinite(self.final)):
            raise ValueError(f"`final` must be a positive number; got {self.final!r}.")

    def __call__(self, learning_rate, steps):
        rate = math.log(self.final / learning_rate) / max(steps, 1)
        final = self.final

        def schedule(count):
            return jnp.maximum(learning_rate * jnp.exp(rate * count), final)

        return schedule
