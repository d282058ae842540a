"""Benchmarks, run from a checkout as `python -m benchmarks.NAME` (not in the wheel).

- entry points (one module each, the name is the command): `runtime`, `scan`, `newton`,
  `ensemble`, `device` (solver and scan timings, Hess et al. 2026 Fig. 1), `dstsp` and
  `validation` (the cost of the measures), `ttt`, `datagen`; `overhead`;
- `compare/`: the method comparison (`python -m benchmarks.compare`), a family of its own;
- `_runtime/`: the before/after solver timing that `runtime --compare-before` runs;
- `_reference/`: frozen reference code (the old GTF-DEER), the *before* of that timing;
- `_common.py`: timing, environment record, data, figures; `_json.py`: the one JSON writer.
"""
