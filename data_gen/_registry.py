"""Entry points by name: `generate` (any benchmark data set), and raw batched trajectories of a
registered system or a user vector field (`initial_conditions`, `trajectories`).
"""

from __future__ import annotations

import numpy as np

from dsr._checks import ArgumentTypeError, check_array, check_bool, check_choice, check_int

from ._dataset import Dataset
from ._integrate import check_field, integrate
from ._lds import lds
from ._odes import bursting_neuron, lorenz63, lorenz96, preset_params
from ._recipe import LONG_RUN, check_params
from ._systems import SYSTEMS

GENERATORS = {
    "lorenz63": lorenz63, "lorenz96": lorenz96, "bursting_neuron": bursting_neuron, "lds": lds,
}  # fmt: skip


def generate(name: str, **params) -> Dataset:
    """Generate the named benchmark data set (paper defaults, Hess et al. (2026) App. F).

    **Arguments:**

    - `name`: one of `GENERATORS` (`"lorenz63"`, `"lorenz96"`, `"bursting_neuron"`, `"lds"`).
    - `**params`: override the defaults (e.g. `preset=`, `n_steps=`, `seed=`, vector-field
      parameters), as the named function (`data_gen.lorenz96(...)`, ...) takes them.

    **Returns:** a [`data_gen.Dataset`][].
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(f"`name` must be a system name (str); got {name!r}.")
    check_choice("name", name, tuple(sorted(GENERATORS)))
    return GENERATORS[name](**params)


def resolve_system(system, params):
    """``(field, checked params, System or None)`` for a registered name or a vector field."""
    if callable(system):
        if params:
            raise ArgumentTypeError(f"unexpected keyword arguments {sorted(params)} for a user "
                                    f"vector field; pass args={{...}}.")
        return system, None, None
    if not isinstance(system, str):
        raise ArgumentTypeError(f"`system` must be a system name or a vector field "
                                f"f(t, x, args); got {system!r}.")
    check_choice("system", system, tuple(sorted(SYSTEMS)))
    s = SYSTEMS[system]
    params = dict(params)
    if s.presets:
        base = preset_params(system, params.pop("preset", s.default_preset), {})
    else:
        base = dict(s.params)
    unknown = sorted(set(params) - set(base))
    if unknown:
        raise ValueError(f"`{unknown[0]}` is not a parameter of {system}; known: "
                         f"{sorted(base)}.")
    return s.field, check_params({**base, **params}), s


def initial_conditions(system: str, n: int, *, seed=0, **params) -> np.ndarray:
    """`n` random initial states from the system's sampler (the one [`data_gen.generate`][] uses).

    **Arguments:**

    - `system`: a registered system name; `**params` override its parameters (`preset=`).
    - `n`: how many; `seed`: the NumPy seed.

    **Returns:** a NumPy array `(n, D)`.
    """
    if callable(system):
        raise ArgumentTypeError("`system`: initial_conditions needs a registered system name.")
    _, p, s = resolve_system(system, params)
    n, seed = check_int("n", n, 1), check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    return np.stack([s.sample_x0(rng, p) for _ in range(n)])


def trajectories(
    system, x0s, n_steps: int, *, dt=None, t0=0.0, transient=0, solver="tsit5", rtol=1e-8,
    atol=1e-10, max_steps=None, progress=None, args=None, **params,
) -> np.ndarray:  # fmt: skip
    """Many raw (clean, full-state, float64) trajectories at once, vmapped over one diffrax solve.

    **Arguments:**

    - `system`: a registered name (`**params` override its parameters, `preset=` for the
      systems with presets) or a vector field `f(t, x, args)` (`args` passed through; then
      `dt` is required).
    - `x0s`: initial states `(B, D)`, e.g. from [`data_gen.initial_conditions`][].
    - `n_steps`: kept samples per trajectory; `transient`: samples integrated and discarded
      first; `dt`: sampling step (default: the system's); `t0`: scalar or `(B,)`.
    - `solver`, `rtol`, `atol`, `max_steps`, `progress`: as in [`data_gen.integrate`][].

    **Returns:** a NumPy array `(B, n_steps, D)`, sample k at time `t0 + (transient + k)·dt`.
    """
    field, p, s = resolve_system(system, params)
    x0s = np.asarray(check_array("x0s", x0s, ndim=2, min_len=1), np.float64)
    if s is None:
        if dt is None:
            raise ValueError("`dt` is required for a user vector field.")
        p = args
        check_field("system", field, x0s.shape[1], p)
    else:
        if args is not None:
            raise ArgumentTypeError(f"`args` is for a user vector field; pass the parameters "
                                    f"of {system} by keyword (known: {sorted(p)}).")
        dim = len(s.names(p))
        if x0s.shape[1] != dim:
            raise ValueError(f"`x0s` must have shape (B, {dim}) for {system}; got {x0s.shape}.")
    t0s = np.asarray(check_array("t0", t0, ndim=(0, 1)), np.float64)
    if t0s.shape not in ((), (len(x0s),)):
        raise ValueError(f"`t0` must be a scalar or have shape ({len(x0s)},); got {t0s.shape}.")
    n_steps, transient = check_int("n_steps", n_steps, 1), check_int("transient", transient, 0)
    progress = n_steps + transient >= LONG_RUN if progress is None else progress
    return integrate(
        field, x0s, np.broadcast_to(t0s, (len(x0s),)), n_steps=n_steps,
        dt=s.dt if dt is None else dt, args=p, transient=transient, solver=solver, rtol=rtol,
        atol=atol, max_steps=max_steps, progress=check_bool("progress", progress),
    )  # fmt: skip
