"""What `"auto"` picks for the scan backend, per backend: measured where measured.

`AUTO_TABLE[backend]` holds the choices measured on that backend (`benchmarks.scan` on CPU;
`benchmarks.device` on one NVIDIA H200 for "gpu"; it prints the entry for any accelerator).
A backend without an entry gets `REASONED_DEFAULT`, argued below but not measured.

An entry has
- `"full"`, `"diag"`: rules `(max_M, max_T, method)` for full and diagonal multipliers; the
  first rule with `M ≤ max_M` and `T ≤ max_T` wins (None: no limit);
- `"unrolled_M"`: `(lo, hi)`, the state sizes for which the associative combine multiplies
  its small matrices by an unrolled multiply-and-sum instead of a batched matmul;
- `"source"`: where the numbers come from.
"""

from __future__ import annotations

import jax

AUTO_TABLE: dict[str, dict] = {
    # `python -m benchmarks.scan`, T = 128…32,768, M = 4…64, full and diagonal, forward and
    # reverse: `lax.scan` compiles to a tight loop (≈ 20 ns per step for M = 4) and was the
    # fastest in all 60 cells, by 1.5–33× over `associative` and 2–400× over `chunked` (a
    # CPU has no idle parallel units to repay their extra work, and their T·M² or T·c·M
    # temporaries are memory-bound). The combine of `associative` (used on CPU only when asked
    # for): XLA:CPU's batched dot is fast only for some sizes (M = 2, 8, 10, 12); elsewhere
    # the unrolled form wins, by up to 15× at M = 4 (2.9 ms against 43 ms for T = 32,768)
    # and 3–6× at M = 16 (`python -m benchmarks.scan --combine`, forward and reverse).
    "cpu": {
        "full": ((None, None, "sequential"),),
        "diag": ((None, None, "sequential"),),
        "combine": {2: "matmul", 3: "unrolled", 4: "unrolled", 6: "unrolled", 8: "matmul",
                    10: "matmul", 12: "matmul", 16: "unrolled", 24: "unrolled",
                    32: "unrolled"},
        "source": "benchmarks.scan and benchmarks.scan --combine on a 2-vCPU AMD EPYC VM",
    },
    # `python -m benchmarks.device` (its `benchmarks.scan --combine` part) on one NVIDIA H200,
    # jax 0.11.2, float32, 2026-12-04 (docs/performance/gpu/scan.json): full multipliers,
    # M = 4, 16 × T = 1,024, 32,768 and M = 64 × T = 1,024 (the run's deadline came before
    # M = 64, T = 32,768), forward and reverse: `associative` was the fastest in all 10 cells,
    # 1.8–7.7× ahead of `chunked` (the reasoned default's pick for M > 32, 2.0–2.3× slower at
    # M = 64) and 15–367× ahead of `sequential` (≈ 5 µs per step). The combine: unrolled at
    # M = 4 (all four cells), matmul at M = 64 and, summed over T and direction, at M = 16
    # (unrolled won at T = 1,024). Diagonal multipliers were not reached: that rule is the
    # reasoned default's, not measured. Measured at JAX's default float32 matmul precision
    # (TF32 products on this GPU): measure again if the solvers change their precision.
    # JAX calls ROCm GPUs "gpu" too; only an NVIDIA H200 was measured.
    "gpu": {
        "full": ((None, None, "associative"),),
        "diag": ((None, None, "associative"),),
        "combine": {4: "unrolled", 16: "matmul", 64: "matmul"},
        "source": "benchmarks.device (benchmarks.scan --combine) on one NVIDIA H200: "
                  "docs/performance/gpu/scan.json (full multipliers and combine measured; "
                  "diagonal reasoned)",
    },
}

# Other accelerators (not measured; "gpu" above was, on one H200): depth matters most, so
# the O(log T)-depth associative scan, as DEER (Lim et al. 2024) and quasi-DEER use. For large
# full matrices the work T·M³ saturates the device; the chunked form composes each chunk once
# (≈ half the associative scan's up- and down-sweep matmuls) in batched matmuls. Small
# matrices: batched matmuls of 2×2…8×8 blocks use a GPU poorly, while the unrolled combine is
# one elementwise kernel.
REASONED_DEFAULT: dict = {
    "full": ((32, None, "associative"), (None, None, "chunked")),
    "diag": ((None, None, "associative"),),
    "combine": {8: "unrolled", 9: "matmul"},
    "source": "reasoned default (not measured)",
}


def auto_entry(backend: str | None = None) -> dict:
    """The table entry for `backend` (default: JAX's default backend)."""
    backend = jax.default_backend() if backend is None else backend
    return AUTO_TABLE.get(backend, REASONED_DEFAULT)


def auto_method(T: int, M: int, full: bool, backend: str | None = None) -> str:
    """The scan method `"auto"` resolves to for T steps of state size M."""
    for max_M, max_T, method in auto_entry(backend)["full" if full else "diag"]:
        if (max_M is None or M <= max_M) and (max_T is None or T <= max_T):
            return method
    return "associative"


def auto_combine(M: int, backend: str | None = None) -> str:
    """The associative combine for state size M: `"unrolled"` or `"matmul"` (the choice
    measured at the nearest size; ties go to the smaller one)."""
    table = {int(m): c for m, c in auto_entry(backend)["combine"].items()}  # JSON keys: str
    return table[min(table, key=lambda m: (abs(m - M), m))]
