"""The named ODE data sets of Hess, Götz, Durstewitz (2026), "Parallel-in-Time Training of
Recurrent Neural Networks for Dynamical Systems Reconstruction", arXiv:2605.12683, App. F
(Lorenz-63, forced Lorenz-96, bursting neuron), and data sets from any user vector field.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from dsr._checks import ArgumentTypeError, check_array, check_bool, check_choice, check_int
from dsr._checks import check_real

from ._dataset import Dataset
from ._integrate import check_field
from ._recipe import COMMON_DOC, OPTIONS, check_params, simulate
from ._systems import NEURON_PRESETS, NEURON_X0, SYSTEMS, interburst_gaps


def check_options(where, kw, known=()):
    """``kw`` may hold only the recipe's options (and the names in ``known``)."""
    unknown = sorted(set(kw) - OPTIONS - set(known))
    if unknown:
        raise ArgumentTypeError(
            f"`{unknown[0]}` is not an argument of {where}; known: "
            f"{sorted(set(known)) + sorted(OPTIONS)}."
        )


def preset_params(system, preset, overrides) -> dict:
    """The parameters of ``system``'s named ``preset``, updated with ``overrides``."""
    presets = SYSTEMS[system].presets
    check_choice("preset", preset, tuple(presets))
    unknown = sorted(set(overrides) - set(presets[preset]))
    if unknown:
        raise ValueError(f"`{unknown[0]}` is not a parameter of {system}; known: "
                         f"{sorted(presets[preset])}.")
    return {**presets[preset], **overrides}


def system_dataset(name, params, kw, extra_meta=None) -> Dataset:
    """The App. F recipe for the registered system ``name`` with its defaults."""
    sys_ = SYSTEMS[name]
    check_options(name, kw, known=sys_.params)
    chk = check_params({**sys_.params, **params})
    names = sys_.names(chk)
    kw.setdefault("observe", sys_.observed)
    kw.setdefault("transient", sys_.transient)
    return simulate(
        name, sys_.field, chk, dim=len(names), names=names, sample_x0=sys_.sample_x0,
        period=sys_.t0_period(chk) if sys_.t0_period else None, extra_meta=extra_meta, **kw,
    )  # fmt: skip


def lorenz63(n_steps=100_000, *, dt=0.01, sigma=10.0, rho=28.0, beta=8 / 3, **kw) -> Dataset:
    """Lorenz-63 (Hess et al. (2026) App. F, Eq. 62): σ=10, ρ=28, β=8/3, Δt=0.01, 100,000 steps.

    Default transient: 1,000 steps from a random x0 (the paper states none).

    **Arguments:**

    - `n_steps`, `dt`: kept samples per trajectory and sampling step.
    - `sigma`, `rho`, `beta`: the vector field's parameters.
    - `**kw`: the common keyword arguments of the ODE data sets.

    **Returns:** a [`data_gen.Dataset`][].
    """
    params = dict(sigma=sigma, rho=rho, beta=beta)
    return system_dataset("lorenz63", params, dict(kw, n_steps=n_steps, dt=dt))


def lorenz96(
    n_steps=100_000, *, dt=5e-3, preset="paper", N=None, F0=None, A=None, omega=None, **kw
) -> Dataset:
    """Forced Lorenz-96 (Hess et al. (2026) App. F, Eq. 63), Δt=5e-3, 100,000 steps.

    Presets (``N``, ``F0``, ``A``, ``omega`` given by keyword override them):

    | preset | parameters | forcing period 2π/ω |
    |---|---|---|
    | ``"paper"`` | N=6, F0=14, A=12, ω=2π/75 | 75 time units = 15,000 steps |
    | ``"short_period"`` | as ``"paper"``, ω=2π/7.5 | 7.5 time units = 1,500 steps |

    ``meta["preset"]`` and ``meta["forcing_period_steps"]`` (2π/ω/Δt) record them. t0 of each
    trajectory is drawn uniformly over one forcing period.

    **Arguments:**

    - `n_steps`, `dt`: kept samples per trajectory and sampling step.
    - `preset`: `"paper"` or `"short_period"`; `N`, `F0`, `A`, `omega` override it.
    - `**kw`: the common keyword arguments of the ODE data sets.

    **Returns:** a [`data_gen.Dataset`][].
    """
    overrides = {k: v for k, v in dict(N=N, F0=F0, A=A, omega=omega).items() if v is not None}
    params = check_params(preset_params("lorenz96", preset, overrides))
    check_int("N", params["N"], 4)
    omega = check_real("omega", params["omega"], 0, lo_open=True)
    period = 2 * math.pi / omega / check_real("dt", dt, 0, lo_open=True)
    return system_dataset(
        "lorenz96", params, dict(kw, n_steps=n_steps, dt=dt),
        extra_meta={"preset": preset, "forcing_period_steps": round(period, 9)},
    )  # fmt: skip


def bursting_neuron(
    n_steps=160_000, *, dt=0.025, preset="standard", full_state=False, **kw
) -> Dataset:
    """Bursting neuron (Durstewitz 2009; Hess et al. (2026) App. F, Eqs. 64–65), state (V, n, h).

    Δt=0.025, 5000 time units of which the first 1000 (40,000 steps) are cut → 160,000 steps.
    Only V and n are observed (N = 2) unless `full_state=True` or `observe` is given.
    Presets: `"standard"` (τh=200, gM=25, Vh,M=−15: quiescent inter-burst gaps ≈ 3,360 steps,
    burst period ≈ 5,920) and `"slow"` (the paper's Table A1 τh=1000, Vh,M=−18, with gM=30:
    gaps ≈ 13,580 steps, period ≈ 18,800); `meta["interburst_gap_steps"]` holds the median gap
    measured on the clean test trajectory. Any vector-field parameter (`C, I, g_L, E_L, g_Na,
    E_Na, Vh_Na, k_Na, g_K, E_K, Vh_K, k_K, tau_n, g_M, Vh_M, k_M, tau_h, g_NMDA, E_NMDA`) may be
    overridden by keyword. `x0="paper"` starts the train trajectory at the paper's
    (−24.4694, 0.0386, 0.0231).

    **Arguments:**

    - `n_steps`, `dt`: kept samples per trajectory and sampling step.
    - `preset`: `"standard"` or `"slow"`; `full_state`: observe (V, n, h) instead of (V, n).
    - `**kw`: vector-field parameters and the common keyword arguments of the ODE data sets.

    **Returns:** a [`data_gen.Dataset`][].
    """
    check_choice("preset", preset, tuple(NEURON_PRESETS))
    params = {k: kw.pop(k) for k in list(kw) if k in NEURON_PRESETS[preset]}
    params = preset_params("bursting_neuron", preset, params)
    if isinstance(kw.get("x0"), str):
        if kw["x0"] != "paper":
            raise ValueError(f"`x0` must be 'paper' or an array; got {kw['x0']!r}.")
        kw["x0"] = NEURON_X0
    if check_bool("full_state", full_state):
        kw.setdefault("observe", (0, 1, 2))
    ds = system_dataset(
        "bursting_neuron", params, dict(kw, n_steps=n_steps, dt=dt),
        extra_meta={"preset": preset},
    )  # fmt: skip
    if 0 in ds.meta["observed"]:  # measured on the clean test trajectory (None: no full gap)
        v = ds.destandardize(ds.test)[:, ds.meta["observed"].index(0)]
        gaps = interburst_gaps(v)[0]
        ds.meta["interburst_gap_steps"] = float(np.median(gaps)) if len(gaps) else None
    return ds


def _state_sampler(x0):
    """``(sample(rng, params), x0 or None, D)`` for a user's x0: an array or a sampler."""
    if callable(x0):
        sample = lambda r, p: x0(r)  # noqa: E731
        first = check_array("x0", sample(np.random.default_rng(0), None), ndim=1)
        return sample, None, int(first.shape[0])
    x0 = np.asarray(check_array("x0", x0, ndim=(1, 2)), np.float64)
    if x0.shape[-1] < 1 or (x0.ndim == 2 and x0.shape[0] != 2):
        raise ValueError(f"`x0` must have shape (D,) or (2, D); got {x0.shape}.")
    dim, base = x0.shape[-1], x0.reshape(-1, x0.shape[-1])[0]
    return (lambda r, p: base + r.normal(size=dim)), x0, dim


def from_vector_field(
    f: Callable, x0, *, args=None, dt, n_steps, name="custom", variables=None, **kw
) -> Dataset:
    """Data set from any vector field `f(t, x, args)` (diffrax convention), by the same recipe.

    **Arguments:**

    - `f`: the vector field; it must return an array of the state's shape `(D,)` and is
      checked (traced, not run) before anything is integrated.
    - `x0`: an array `(D,)` (train; the test trajectory starts from it plus a unit Gaussian
      perturbation), `(2, D)` (train, test), or a callable `rng -> (D,)` sampling initial
      states from a NumPy Generator.
    - `args`: a dict of numeric parameters passed to `f`.
    - `dt`, `n_steps`: sampling step and kept samples per trajectory.
    - `name`: the data set's name in its metadata; `variables`: names of the state variables.
    - `**kw`: the common keyword arguments of the ODE data sets.

    **Returns:** a [`data_gen.Dataset`][].

    Example:

    ```python
    def duffing(t, x, p):
        return jnp.stack([x[1], -p["d"] * x[1] + x[0] - x[0] ** 3])
    ds = data_gen.from_vector_field(duffing, [1.0, 0.0], args={"d": 0.2}, dt=0.05, n_steps=5000)
    ```
    """
    if not callable(f):
        raise ArgumentTypeError(f"`f` must be a callable f(t, x, args); got {type(f).__name__}.")
    if args is not None and not isinstance(args, dict):
        raise ArgumentTypeError(f"`args` must be a dict of numeric parameters or None; got "
                                f"{type(args).__name__}.")
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"`name` must be a non-empty string; got {name!r}.")
    check_options("from_vector_field", kw)
    params = check_params(dict(args or {}))
    sample, x0, dim = _state_sampler(x0)
    if variables is None:
        names = tuple(f"x{i + 1}" for i in range(dim))
    else:
        names = (variables,) if isinstance(variables, str) else tuple(variables)
    if len(names) != dim or len(set(names)) != dim or not all(isinstance(v, str) for v in names):
        raise ValueError(f"`variables` must be {dim} distinct names (one per state variable); "
                         f"got {variables!r}.")
    check_field("f", f, dim, params)
    return simulate(
        name, f, params, dim=dim, names=names, sample_x0=sample, x0=x0, n_steps=n_steps, dt=dt,
        **kw,
    )  # fmt: skip


for _fn in (lorenz63, lorenz96, bursting_neuron, from_vector_field):
    if _fn.__doc__:  # None under python -OO
        _fn.__doc__ += COMMON_DOC
