"""SIGTERM as Ctrl-C during training, so a killed job still saves its checkpoint."""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def interrupt_on_sigterm():
    """Within the block, SIGTERM raises `KeyboardInterrupt` (main thread only; elsewhere,
    and where SIGTERM was ignored on purpose, nothing changes)."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGTERM) in (None, signal.SIG_IGN):
        yield
        return

    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
