"""dsr against SINDy, an echo-state network and VAR(1) on dysts systems (`python -m benchmarks.compare`)."""
