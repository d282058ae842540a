"""Shared test helpers: random, non-trivial float64 models."""

import equinox as eqx
import jax
import jax.numpy as jnp

import dsr


def random_shplrnn(N, M, L=12, *, seed=0, rank=None, input_dim=0, scale=0.5, random_B=True):
    """A shPLRNN with O(1) weights (the App. E init is almost linear)."""
    k = jax.random.split(jax.random.key(seed), 8)
    m = dsr.ShPLRNN(N, M, L, key=k[0], rank=rank, input_dim=input_dim, dtype=jnp.float64)
    n = lambda i, shape, s: s * jax.random.normal(k[i], shape, jnp.float64)  # noqa: E731
    m = eqx.tree_at(lambda m: m.A_bar, m, n(1, (M,), 0.5))
    if rank is None:
        m = eqx.tree_at(lambda m: m.W_L, m, n(2, (M, L), scale / L**0.5))
    else:
        m = eqx.tree_at(lambda m: (m.W_L, m.W_R), m, (n(2, (M, rank), 1.0), n(3, (rank, L), scale / L**0.5)))
    m = eqx.tree_at(lambda m: (m.V, m.b, m.h), m, (n(4, (L, M), 1.0), n(5, (L,), 0.5), n(6, (M,), 0.2)))
    if input_dim:
        m = eqx.tree_at(lambda m: m.C, m, n(7, (M, input_dim), 0.3))
    if random_B:
        m = eqx.tree_at(lambda m: m.B, m, jnp.eye(N, M) + n(7, (N, M), 0.3))
    return m
