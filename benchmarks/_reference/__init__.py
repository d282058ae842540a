"""Frozen reference code, kept only as the *before* of before/after timings: `deer.py` is
GTF-DEER as it was before the solver-speed work (dsr commit 060a8c8). Never fixed or tidied."""
