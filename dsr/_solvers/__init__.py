"""The solver family: the solver interface (`_base`), `Sequential`, `DEER` and its two
Newton paths (`_deer_vectorized`, `_deer_fused`), resolving names (`_resolve`), and the
shared scan backend (`_scan`, `_associative`, `_auto`)."""
