"""JAX's persistent compilation cache, turned on by `fit`, `generate`, `evaluate` and
`data_gen`'s integration.

A fresh Python process otherwise compiles every program again (seconds per program on a
CPU). dsr points JAX's cache at a per-user folder the first time one of its entry points runs:

- `DSR_CACHE_DIR=/some/folder`: that folder;
- `DSR_CACHE_DIR=off` (or `0`, `false`, `no`, empty): dsr leaves JAX's cache alone;
- otherwise `$XDG_CACHE_HOME/dsr/jax` (default `~/.cache/dsr/jax`).

If you configured JAX's cache yourself (`jax_compilation_cache_dir` set), dsr changes
nothing. When dsr sets the folder it also lowers `jax_persistent_cache_min_compile_time_secs`
(1 s by default) to 0.2 s, unless you changed it, so that dsr's smaller programs are kept.
Both are process-wide JAX settings: they apply to every program compiled after the first
`fit`, `generate`, `evaluate` or data set of the process. The folder holds only compiled programs and
can be deleted at any time. `compilation_cache_dir()` says which folder is in use.
"""

from __future__ import annotations

import os
import threading

import jax

ENV = "DSR_CACHE_DIR"
_OFF = {"", "0", "off", "false", "no", "none"}
#: Programs that compile faster than this are not written to the cache (seconds).
MIN_COMPILE_SECONDS = 0.2
_JAX_DEFAULT_MIN_SECONDS = 1.0

_lock = threading.Lock()
_checked = False


def default_folder() -> str:
    """`$XDG_CACHE_HOME/dsr/jax`, or `~/.cache/dsr/jax`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dsr", "jax")


def compilation_cache_dir() -> str | None:
    """The folder JAX's persistent compilation cache uses now (None: off)."""
    return jax.config.jax_compilation_cache_dir or None


def enable_compilation_cache() -> str | None:
    """Turn JAX's persistent compilation cache on (once per process; see the module's
    docstring for the rules) and return its folder, or None when it stays off."""
    global _checked
    with _lock:
        if _checked:
            return compilation_cache_dir()
        _checked = True
        value = os.environ.get(ENV)
        if value is not None and value.strip().lower() in _OFF:
            return compilation_cache_dir()
        if jax.config.jax_compilation_cache_dir:  # the user's own setting wins
            return compilation_cache_dir()
        folder = os.path.abspath(os.path.expanduser(value or default_folder()))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:  # an unwritable home: run without the cache
            return None
        if not os.access(folder, os.W_OK):
            return None
        jax.config.update("jax_compilation_cache_dir", folder)
        if jax.config.jax_persistent_cache_min_compile_time_secs == _JAX_DEFAULT_MIN_SECONDS:
            jax.config.update("jax_persistent_cache_min_compile_time_secs",
                              MIN_COMPILE_SECONDS)
        return folder
