"""What `"auto"` picks for the scan backend, per backend: measured where measured.

`AUTO_TABLE[backend]` holds the choices measured on that backend (`benchmarks.scan` on CPU;
`benchmarks.device` prints the entry for an accelerator, to be pasted here). A backend
without an entry gets `REASONED_DEFAULT`, argued below but not measured.

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
}

# Accelerators (not measured yet): depth matters most, so the O(log T)-depth associative
# scan, as DEER (Lim et al. 2024) and quasi-DEER use. For large full matrices the work T·M³
# saturates the device; the chunked form composes each chunk once (≈ half the associative
# scan's up- and down-sweep matmuls) in batched matmuls. Small matrices: batched matmuls of
# 2×2…8×8 blocks use a GPU poorly, while the unrolled combine is one elementwise kernel.
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
