"""What free-run validation costs in `fit` at the defaults (`python -m benchmarks.validation
[--quick] --out DIR`).

One ensemble of 4 shPLRNNs (N = M = 3, L = 50) on a Lorenz-63 orbit, `fit`'s defaults
(T = 256, batch 16, DEER, `eval_every` = steps / 20), trained twice with the same key: without
validation and with `validation=0.2` (the last fifth of the data held out). The figure is the
validation's own time (`FitResult.validation["seconds"]`, compilation of the free run
included) as a fraction of the training time without it; both wall times are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import jax
import numpy as np

import dsr

from ._json import write_json


def _lorenz(n: int) -> np.ndarray:
    """A standardized Lorenz-63 orbit (RK4, dt = 0.01)."""
    x, out, dt = np.array([1.0, 1.0, 1.0]), [], 0.01
    f = lambda v: np.array([10 * (v[1] - v[0]), v[0] * (28 - v[2]) - v[1],  # noqa: E731
                            v[0] * v[1] - 8 / 3 * v[2]])
    for i in range(n + 500):
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + f(x + dt * k3))
        if i >= 500:
            out.append(x)
    out = np.array(out)
    return ((out - out.mean(0)) / out.std(0)).astype(np.float32)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.validation")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=os.path.join("results", "validation"))
    a = p.parse_args(argv)
    steps, n = (100, 5000) if a.quick else (1000, 20_000)
    x = _lorenz(n)
    ens = dsr.ensemble(lambda k: dsr.ShPLRNN(3, 3, 50, key=k), 4, key=jax.random.key(0))
    out = {}
    for name, kw in (("plain", {}), ("validation", dict(validation=0.2, keep="best"))):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dsr.fit(ens, x, 0.1, steps=steps, progress=False, key=jax.random.key(1),
                          monitor_every=0, **kw)
        out[name] = dict(wall_s=time.perf_counter() - t0)
        if res.validation is not None:
            out[name]["validation_s"] = res.validation["seconds"]
            out[name]["evals"] = len(res.validation["step"])
    out["fraction"] = out["validation"]["validation_s"] / out["plain"]["wall_s"]
    out["settings"] = dict(steps=steps, n=n, members=4, L=50, cpu_count=os.cpu_count(),
                           backend=jax.default_backend())
    write_json(os.path.join(a.out, "validation.json"), out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
