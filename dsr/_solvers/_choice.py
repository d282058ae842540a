"""What `solver="auto"` trains with, per backend: measured where measured.

`SOLVER_TABLE[backend]` holds rules `(max_M, max_T, max_K, solver)` for the latent size M,
the window length T and the ensemble size K of a training update; the first rule whose
bounds all hold wins (None: no bound). `source` says where the numbers come from
(`python -m benchmarks.solver_choice` prints the rules for the machine it runs on). A backend
without an entry gets `REASONED_SOLVER`, argued below but not measured.
"""

from __future__ import annotations

import jax

SOLVER_TABLE: dict[str, dict] = {
    # `python -m benchmarks.solver_choice` (the training update of a hand-written loop, RAdam,
    # B = 16, L = 64, N = 3), K = 1, 4, 16 × T = 64, 200, 1000 × M = 3, 8, 16: the sequential
    # solver was faster in 26 of 27 cells, by 1.16–19× (the 27th, K = 4, T = 64, M = 3,
    # DEER by 1.15×, within the machine's noise; docs/performance/solver_choice.json). A CPU
    # has no idle parallel units to repay DEER's Newton iterations (each one a full pass plus
    # an M × M Jacobian per step), and a batch of windows vectorizes the sequential loop.
    "cpu": {"rules": ((None, None, None, "sequential"),),
            "source": "benchmarks.solver_choice (K ≤ 16, T ≤ 1000, M ≤ 16, batch 16) on a "
                      "2-vCPU AMD EPYC VM: docs/performance/solver_choice.json"},
    # `python -m benchmarks.solver_choice --quick` on one NVIDIA H200 (jax 0.11.2, float32,
    # 2026-12-04; docs/performance/gpu/solver_choice.json), K = 1, 4 × T = 64, 200 × M = 3, 16:
    # DEER was faster in 7 of 8 cells, by 1.11–2.73× (the 8th, K = 4, T = 200, M = 16:
    # sequential by 1.09×); the full grid (K = 16, T = 1,000, M = 8) was not run. The DEER
    # solves ran at JAX's default float32 matmul precision, with which GTF-DEER did not reach
    # its tolerance on this GPU (docs/performance.md, "On a GPU (one H200)").
    "gpu": {"rules": ((None, None, None, "deer"),),
            "source": "benchmarks.solver_choice --quick (K ≤ 4, T ≤ 200, M = 3, 16, batch 16) "
                      "on one NVIDIA H200: docs/performance/gpu/solver_choice.json"},
}

# Other accelerators (not measured; "gpu" above was, on one H200): DEER's
# O(log T)-depth Newton steps are what the method is for (Hess, Götz, Durstewitz (2026),
# arXiv:2605.12683); a sequential loop leaves a GPU idle for all but tiny batches.
REASONED_SOLVER: dict = {"rules": ((None, None, None, "deer"),),
                         "source": "reasoned default (not measured)"}


def solver_entry(backend: str | None = None) -> dict:
    """The table entry for `backend` (default: JAX's default backend)."""
    backend = jax.default_backend() if backend is None else backend
    return SOLVER_TABLE.get(backend, REASONED_SOLVER)


def auto_solver_name(M: int, T: int | None = None, K: int = 1,
                     backend: str | None = None) -> str:
    """`"deer"` or `"sequential"`: what `"auto"` trains with for latent size `M`, windows of
    `T` steps (None: unknown, only rules without a T bound apply) and `K` members."""
    for max_M, max_T, max_K, name in solver_entry(backend)["rules"]:
        if ((max_M is None or M <= max_M) and (max_K is None or K <= max_K)
                and (max_T is None or (T is not None and T <= max_T))):
            return name
    return "deer"
