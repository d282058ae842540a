"""Solver names (`"auto"`, `"deer"`, `"quasi"`, `"sequential"`) and what they resolve to."""

from __future__ import annotations

from ._base import AbstractSolver
from ._choice import auto_solver_name
from ._deer import DEER
from ._sequential import Sequential

SOLVER_NAMES = ("auto", "deer", "quasi", "sequential")


def resolve_solver(solver: AbstractSolver | str, latent_dim: int = 0,
                   backend: str | None = None, *, seq_len: int | None = None,
                   members: int = 1) -> AbstractSolver:
    """Map `solver` (an `AbstractSolver` or a name) to a solver object.

    `"deer"`: `DEER()`; `"quasi"`: `DEER(jacobian="diag")`; `"sequential"`: `Sequential()`.
    `"auto"`: the faster one for this backend, latent size, window length and ensemble size,
    from a measured table (`dsr/_solvers/_choice.py`; the measurements are on the
    documentation's Performance page, `python -m benchmarks.solver_choice`): on CPU the
    sequential solver, which was faster at 26 of 27 measured shapes (K ≤ 16, T ≤ 1,000,
    M ≤ 16; the 27th within noise); on accelerators GTF-DEER (full Jacobian), whose O(log T)-depth Newton steps are
    the point of the method (on one H200 it was faster at 7 of 8 shapes of the quick grid;
    other accelerators: reasoned, not measured).

    **Arguments:**

    - `solver`: a solver object (returned as is) or one of the names above.
    - `latent_dim`: M; `seq_len`: T; `members`: K — for `"auto"`.
    - `backend`: the JAX backend (default: the default device's).

    **Returns:** an [`dsr.AbstractSolver`][].
    """
    if isinstance(solver, AbstractSolver):
        return solver
    if not isinstance(solver, str) or solver not in SOLVER_NAMES:
        raise ValueError(
            f"`solver` must be a dsr solver (dsr.DEER(), dsr.Sequential()) or one of "
            f"{SOLVER_NAMES}; got {solver!r}.")
    if solver == "auto":
        solver = auto_solver_name(latent_dim, seq_len, members, backend)
    if solver == "deer":
        return DEER()
    if solver == "quasi":
        return DEER(jacobian="diag")
    return Sequential()
