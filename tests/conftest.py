"""Test configuration: float64 for exactness tests and a `getkey` fixture (comparison
helpers are in `helpers.py`)."""

import itertools
import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture
def getkey():
    counter = itertools.count()
    base = jax.random.key(0)

    def _getkey():
        return jax.random.fold_in(base, next(counter))

    return _getkey

# JAX's persistent compilation cache, which `fit`, `generate` and `evaluate` turn on by
# default, stays off in the tests (and in the processes they start), so that each test
# compiles what it runs; tests/test_cache.py checks the cache itself in its own processes.
os.environ["DSR_CACHE_DIR"] = "off"
