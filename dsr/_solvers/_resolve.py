"""Solver names (`"auto"`, `"deer"`, `"quasi"`, `"sequential"`) and what they resolve to."""

from __future__ import annotations

import jax

from ._base import AbstractSolver
from ._deer import DEER
from ._sequential import Sequential

SOLVER_NAMES = ("auto", "deer", "quasi", "sequential")


def resolve_solver(solver: AbstractSolver | str, latent_dim: int = 0,
                   backend: str | None = None) -> AbstractSolver:
    """Map `solver` (an `AbstractSolver` or a name) to a solver object.

    `"deer"`: `DEER()`; `"quasi"`: `DEER(jacobian="diag")`; `"sequential"`: `Sequential()`.
    `"auto"`: GTF-DEER (full Jacobian) on accelerators, where its O(log T)-depth Newton
    steps are the point of the method. On CPU, DEER when the latent dimension is small
    (M ≤ 8) and `Sequential()` otherwise, because the per-step work of DEER grows as M³
    while the sequential loop's grows as M² (the measurements are on the documentation's
    Performance page, `python -m benchmarks.runtime`).

    **Arguments:**

    - `solver`: a solver object (returned as is) or one of the names above.
    - `latent_dim`: M, for `"auto"` on CPU.
    - `backend`: the JAX backend (default: the default device's).

    **Returns:** an [`dsr.AbstractSolver`][].
    """
    if isinstance(solver, AbstractSolver):
        return solver
    if not isinstance(solver, str) or solver not in SOLVER_NAMES:
        raise ValueError(
            f"`solver` must be a dsr solver (dsr.DEER(), dsr.Sequential()) or one of "
            f"{SOLVER_NAMES}; got {solver!r}.")
    if solver == "deer":
        return DEER()
    if solver == "quasi":
        return DEER(jacobian="diag")
    if solver == "sequential":
        return Sequential()
    backend = jax.default_backend() if backend is None else backend
    if backend != "cpu":
        return DEER()
    return DEER() if latent_dim <= 8 else Sequential()
