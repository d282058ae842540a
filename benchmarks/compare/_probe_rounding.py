"""`python -m benchmarks.compare._probe_rounding [--steps N ...] [--float64] --out FILE`: is
the same member, trained in a smaller or a larger sweep program, the same model?

One setting (α 0.1, lr 5 · 10⁻³) of a shPLRNN (M = 3, L = 64) on Lorenz-63 (`data_gen`), 2
seeds, trained by `dsr.fit` once in a sweep of that setting alone and once in a sweep of
three α (0.1, 0.2, 0.3): the same initial parameters, training keys and batches, so the
two differ in nothing but the rounding of the vmapped arithmetic (2 members against 6).
Per step count the largest parameter difference of each seed's two copies, and the
Gaussian-mixture D_stsp of an 8,000-step free run of each copy against the test split. In
float64 the copies agree to rounding (`tests/test_sweep.py` asserts 1e-12); in float32 a
difference of one unit in the last place grows with training, as a different seed's would.
"""

from __future__ import annotations

import argparse
import sys

from .._json import write_json


def _train(x, alphas, steps: int, dtype):
    import jax

    import dsr

    make = lambda key: dsr.ShPLRNN(3, 3, 64, key=key, dtype=dtype)  # noqa: E731
    sw = dsr.sweep(make, dsr.Grid(alpha=alphas), runs=2, key=jax.random.key(0))
    res = dsr.fit(sw, x, steps=steps, seq_len=50, batch_size=16, learning_rate=5e-3,
                  solver="sequential", validation=0.2, keep="last", key=jax.random.key(1),
                  progress=False)
    return [res.sweep.member(i) for i in (0, 1)]


def _d_stsp(m, test) -> float:
    import jax
    import numpy as np

    from ._dsr_method import as_member
    from ._measures import WARMUP, orbit_measures
    from ._probe_reselect import _free_run

    run = _free_run(as_member(m, 0.0, {}), test[:WARMUP], len(test) - WARMUP)
    return float(orbit_measures(np.asarray(test[WARMUP:], np.float64), run,
                                jax.random.key(100))["D_stsp"])


def probe(steps: list[int], float64: bool) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import data_gen

    dtype = jnp.float64 if float64 else jnp.float32
    ds = data_gen.generate("lorenz63", n_steps=12_000, seed=0)
    x = np.asarray(ds.train, np.float64)
    mu, sd = x.mean(0), x.std(0)
    train = jnp.asarray((x - mu) / sd, dtype)
    test = np.asarray((np.asarray(ds.test, np.float64) - mu) / sd)[:8400]
    rows = []
    for n in steps:
        alone, among = _train(train, (0.1,), n, dtype), _train(train, (0.1, 0.2, 0.3), n, dtype)
        for seed, (a, b) in enumerate(zip(alone, among)):
            diff = max(float(jnp.max(jnp.abs(p - q)))
                       for p, q in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b))
                       if hasattr(p, "size") and p.size)
            rows.append(dict(steps=n, seed=seed, dtype=str(jnp.dtype(dtype)), max_param_diff=diff,
                             D_stsp_alone=_d_stsp(a, test), D_stsp_among=_d_stsp(b, test)))
            r = rows[-1]
            print(f"{r['dtype']} {n:>5} updates, seed {seed}: max |Δθ| {diff:.2g}, D_stsp "
                  f"{r['D_stsp_alone']:.3g} alone vs {r['D_stsp_among']:.3g} among 3", flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_rounding",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", nargs="+", type=int, default=[10, 300, 3000], metavar="N")
    p.add_argument("--float64", action="store_true", help="train in float64 instead")
    p.add_argument("--out", required=True, metavar="FILE", help="the JSON record")
    a = p.parse_args(argv)
    if any(n < 1 for n in a.steps):
        p.error(f"--steps must be ≥ 1; got {a.steps}")
    if a.float64:
        import jax

        jax.config.update("jax_enable_x64", True)
    write_json(a.out, dict(rows=probe(a.steps, a.float64)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
