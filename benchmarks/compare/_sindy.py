"""SINDy (pysindy): polynomial library, sequentially thresholded least squares (STLSQ),
derivatives by a smoothed (Savitzky–Golay) finite difference; the identified vector field is
integrated by RK4 (the same map generates, forecasts and gives the Lyapunov exponent).

Tuning (on the validation split, by `validation_score`): the library degree and the STLSQ
threshold over `GRID` (`--quick`: `SMALL_GRID`). SINDy is deterministic: one member.
"""

from __future__ import annotations

import time
import warnings

import jax.numpy as jnp
import numpy as np

from ._member import Member, rk4_map

GRID = [dict(degree=d, threshold=t) for d in (2, 3) for t in (0.02, 0.05, 0.1, 0.2)]
SMALL_GRID = [dict(degree=2, threshold=0.05), dict(degree=3, threshold=0.1)]  # --quick
SUBSTEPS = 10


def _fit(x: np.ndarray, dt: float, degree: int, threshold: float, ridge: float = 0.05):
    import pysindy as ps

    lib = ps.PolynomialLibrary(degree=degree)
    model = ps.SINDy(optimizer=ps.STLSQ(threshold=threshold, alpha=ridge),
                     feature_library=lib, differentiation_method=ps.SmoothedFiniteDifference())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # STLSQ's "eliminated all coefficients" etc.
        model.fit(np.asarray(x, np.float64), t=dt)
    return np.asarray(model.coefficients()), np.asarray(lib.powers_), model


def sindy_member(coef: np.ndarray, powers: np.ndarray, dt: float, **info) -> Member:
    C, P = jnp.asarray(coef, jnp.float32), jnp.asarray(powers, jnp.float32)

    def f(x):
        return C @ jnp.prod(x[None, :] ** P, axis=1)

    flow = rk4_map(f, dt, SUBSTEPS)
    return Member(warm=lambda ctx: flow(ctx[-1]), step=flow, observe=lambda x: x, info=info)


def sindy_members(data, k: int, settings: dict, score) -> list[Member]:
    """Fit every grid point on train, keep the best on validation (`score(member)`)."""
    t0 = time.perf_counter()
    dt = settings["dt"]
    tried, best = [], None
    for g in (SMALL_GRID if settings.get("grid") == "small" else GRID):
        coef, powers, model = _fit(data["train"], dt, **g)
        m = sindy_member(coef, powers, dt, **g, n_terms=int(np.count_nonzero(coef)))
        s = score(m)
        tried.append(dict(g, val_score=s))
        if best is None or s < best[0]:
            best = (s, m, g, model)
    m = best[1]
    m.train_s = time.perf_counter() - t0
    m.info.update(tuning=tried, equations=best[3].equations(precision=3))
    return [m]
