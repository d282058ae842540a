"""Test configuration: float64 for exactness tests and a `getkey` fixture (comparison
helpers are in `helpers.py`)."""

import itertools

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
