"""Test configuration: float64 for exactness tests, a `getkey` fixture, `tree_allclose`."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture
def getkey():
    counter = itertools.count()
    base = jax.random.key(0)

    def _getkey():
        return jax.random.fold_in(base, next(counter))

    return _getkey


def tree_allclose(x, y, *, rtol=1e-10, atol=1e-12):
    xs, ts = jax.tree_util.tree_flatten(x)
    ys, ts2 = jax.tree_util.tree_flatten(y)
    if ts != ts2:
        return False
    return all(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol) for a, b in zip(xs, ys))


def rel_err(a, b):
    a = jnp.asarray(a)
    b = jnp.asarray(b)
    return float(jnp.max(jnp.abs(a - b)) / (jnp.max(jnp.abs(b)) + 1e-300))
