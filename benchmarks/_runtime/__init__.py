"""Parts of the runtime benchmarks: `before_after.py` times the frozen reference solver
(`benchmarks/_reference/`) against dsr's, interleaved in one process
(`python -m benchmarks.runtime --compare-before`)."""
