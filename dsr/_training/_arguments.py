"""`fit`'s arguments and what they become, as typed, frozen records.

`FitArguments` is a `fit` call's keyword arguments as given (defaults equal to `fit`'s, which
`tests/test_layout.py` checks); `Counts` the validated integer settings; `RunOptions` what the
training loop needs beyond the compiled step (checkpointing, monitoring, the callback). Each
is built once and read by attribute, never by string key."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import jax
import optax

from .._regularization import Regularization
from .._schedule import AbstractSchedule
from .._solvers._base import AbstractSolver


@dataclasses.dataclass(frozen=True)
class FitArguments:
    """The keyword arguments of a `dsr.fit` call (see its docstring), unvalidated."""

    steps: int = 1000
    seq_len: int = 200
    batch_size: int = 16
    warmup: int = 0
    learning_rate: float = 5e-3
    optimizer: optax.GradientTransformation | None = None
    solver: AbstractSolver | str = "auto"
    regularization: Regularization | None = None
    inputs: Any = None
    key: jax.Array | None = None
    progress: bool = True
    checkpoint: str | os.PathLike | None = None
    checkpoint_every: int = 500
    resume: str | os.PathLike | None = None
    resume_settings: str = "check"
    callback: Callable[[int, Any], dict | None] | None = None
    eval_every: int | None = None
    alpha_every: int | None = None
    alpha_gamma: float | None = None
    max_failures: int = 5
    devices: Any = None
    monitor_every: int | None = None
    validation: Any = None
    keep: str = "last"
    status_steps: int | None = None
    schedule: AbstractSchedule | None = None
    noise: float = 0.0
    check_model: bool = True

    def replace(self, **changes) -> FitArguments:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class Counts:
    """The validated numeric settings of a call (`monitor_every` with its default filled in)."""

    steps: int
    seq_len: int
    batch_size: int
    warmup: int
    checkpoint_every: int
    max_failures: int
    eval_every: int | None
    monitor_every: int
    noise: float


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What the training loop reads besides the compiled step: where and how often it
    checkpoints, the checkpoint it resumes (`(path, header, payload)`), how often it calls the
    callback and checks free runs, and whether it shows progress."""

    checkpoint: str | None
    checkpoint_every: int
    resume: tuple[str, dict, Any] | None
    eval_every: int | None
    monitor_every: int
    callback: Callable[[int, Any], dict | None] | None
    progress: bool


