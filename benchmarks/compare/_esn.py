"""Echo-state network (reservoirpy): `Reservoir >> Ridge` trained by ridge regression to predict
the next observation (teacher forcing), then run in closed loop (its prediction fed back).

The fitted reservoir's matrices are read out of reservoirpy and the same update
`r' = (1 - lr) r + lr tanh(W r + Win x + bias)`, `x = Wout^T r + b` is written in JAX, so that
generation, forecasts and the Lyapunov exponent (on the reservoir state) use the shared code;
`check_against_reservoirpy` verifies it equals reservoirpy's own `run` on the fit.

Tuning (on the validation split, seed 0): spectral radius and leak rate over `GRID` (`--quick`: `SMALL_GRID`); K seeds
(different random reservoirs) with the chosen setting.
"""

from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np

from ._member import Member

UNITS = 400
RIDGE = 1e-6
WARMUP = 100
GRID = [dict(sr=sr, lr=lr) for sr in (0.6, 0.9, 1.2) for lr in (0.3, 1.0)]
SMALL_GRID = [dict(sr=0.9, lr=0.3), dict(sr=1.2, lr=1.0)]  # --quick


def _fit(x: np.ndarray, sr: float, lr: float, seed: int):
    from reservoirpy.nodes import Reservoir, Ridge

    res = Reservoir(units=UNITS, sr=sr, lr=lr, seed=seed)
    ro = Ridge(ridge=RIDGE)
    esn = res >> ro
    x = np.asarray(x, np.float64)
    esn.fit(x[:-1], x[1:], warmup=WARMUP)
    return res, ro, esn


def _arrays(res, ro):
    W = res.W.toarray() if hasattr(res.W, "toarray") else np.asarray(res.W)
    Win = res.Win.toarray() if hasattr(res.Win, "toarray") else np.asarray(res.Win)
    bias = np.broadcast_to(np.asarray(res.bias, np.float64).ravel(), (W.shape[0],))
    return dict(W=W, Win=Win, bias=bias, lr=float(res.lr), Wout=np.asarray(ro.Wout),
                b=np.asarray(ro.bias).ravel())


def esn_member(a: dict, **info) -> Member:
    W, Win, bias = (jnp.asarray(a[k], jnp.float32) for k in ("W", "Win", "bias"))
    Wout, b, lr = jnp.asarray(a["Wout"], jnp.float32), jnp.asarray(a["b"], jnp.float32), a["lr"]

    def update(r, x):
        return (1 - lr) * r + lr * jnp.tanh(W @ r + Win @ x + bias)

    def observe(r):
        return Wout.T @ r + b

    def warm(ctx):
        import jax

        r = jnp.zeros(W.shape[0], jnp.float32)
        return jax.lax.scan(lambda r, x: (update(r, x), None), r, ctx)[0]

    info = dict(info, update=update, units=W.shape[0])
    return Member(warm=warm, step=lambda r: update(r, observe(r)), observe=observe, info=info)


def teacher_forced(m: Member, x) -> np.ndarray:
    """Outputs after each input of `x`, from a zero reservoir state (as reservoirpy's `run`)."""
    import jax

    xs = jnp.asarray(x, jnp.float32)
    rs = jax.lax.scan(lambda r, xt: (m.info["update"](r, xt),) * 2,
                      jnp.zeros(m.info["units"], jnp.float32), xs)[1]
    return np.asarray(jax.vmap(m.observe)(rs))


def check_against_reservoirpy(x: np.ndarray, sr=0.9, lr=0.5, seed=0, n=50) -> float:
    """Max abs difference between reservoirpy's own teacher-forced outputs and ours."""
    res, ro, esn = _fit(x, sr, lr, seed)
    m = esn_member(_arrays(res, ro))
    res.reset()
    ref = esn.run(np.asarray(x[:n], np.float64))
    return float(np.max(np.abs(teacher_forced(m, x[:n]) - ref)))


def esn_members(data, k: int, settings: dict, score) -> list[Member]:
    t0 = time.perf_counter()
    tried, best = [], None
    for g in (SMALL_GRID if settings.get("grid") == "small" else GRID):
        res, ro, _ = _fit(data["train"], seed=0, **g)
        s = score(esn_member(_arrays(res, ro)))
        tried.append(dict(g, val_score=s))
        if best is None or s < best[0]:
            best = (s, g)
    tune_s = time.perf_counter() - t0
    members = []
    for i in range(k):
        t1 = time.perf_counter()
        res, ro, _ = _fit(data["train"], seed=1000 + i, **best[1])
        m = esn_member(_arrays(res, ro), seed=1000 + i, units=UNITS, ridge=RIDGE, **best[1])
        m.train_s = time.perf_counter() - t1 + tune_s / k
        m.info["tuning"] = tried
        members.append(m)
    return members
