"""The benchmark ODE systems of Hess, Götz, Durstewitz (2026), "Parallel-in-Time Training of
Recurrent Neural Networks for Dynamical Systems Reconstruction", arXiv:2605.12683, App. F.

Each system is a vector field ``f(t, x, p, xp=jnp)`` (diffrax convention, ``p`` a dict of
parameters; ``xp=numpy`` evaluates it in NumPy, e.g. for scipy; ``x`` may be ``(D, ...)`` for
vectorized evaluation) plus its paper defaults: Δt, length, transient, observed variables, named
parameter presets and a sampler of initial conditions driven by a NumPy ``Generator``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import jax.numpy as jnp
import numpy as np

from dsr._checks import check_array, check_real


def lorenz63_field(t, x, p, xp=jnp):
    """Lorenz-63 (Hess et al. (2026) App. F, Eq. 62): x' = σ(y−x), y' = x(ρ−z) − y, z' = xy − βz."""
    x_, y, z = x[0], x[1], x[2]
    return xp.stack([p["sigma"] * (y - x_), x_ * (p["rho"] - z) - y, x_ * y - p["beta"] * z])


def lorenz96_field(t, x, p, xp=jnp):
    """Forced Lorenz-96 (Hess et al. (2026) App. F, Eq. 63).

    x_i' = (x_{i+1} − x_{i−2}) x_{i−1} − x_i + F0 + A sin(ωt), indices cyclic.
    """
    forcing = p["F0"] + p["A"] * xp.sin(p["omega"] * t)
    return (xp.roll(x, -1, 0) - xp.roll(x, 2, 0)) * xp.roll(x, 1, 0) - x + forcing


def bursting_neuron_field(t, x, p, xp=jnp):
    """Bursting neuron (Durstewitz 2009; Hess et al. (2026) App. F, Eqs. 64–65), state (V, n, h)."""
    v, n, h = x[0], x[1], x[2]
    sig = lambda vh, k: 1.0 / (1.0 + xp.exp((vh - v) / k))  # noqa: E731
    m_inf, n_inf = sig(p["Vh_Na"], p["k_Na"]), sig(p["Vh_K"], p["k_K"])
    h_inf = sig(p["Vh_M"], p["k_M"])
    s_inf = 1.0 / (1.0 + 0.33 * xp.exp(-0.0625 * v))
    dv = (
        p["I"]
        - p["g_L"] * (v - p["E_L"])
        - p["g_Na"] * m_inf * (v - p["E_Na"])
        - p["g_K"] * n * (v - p["E_K"])
        - p["g_M"] * h * (v - p["E_K"])
        - p["g_NMDA"] * s_inf * (v - p["E_NMDA"])
    ) / p["C"]
    return xp.stack([dv, (n_inf - n) / p["tau_n"], (h_inf - h) / p["tau_h"]])


# Neuron presets: "standard" (the Durstewitz lab's usual parameters, gaps ≈ 3,400 steps at
# Δt = 0.025) and "slow" (the legible values of Hess et al. (2026) Table A1, τh = 1000,
# Vh,M = −18, with gM = 30: gaps ≈ 13,600 steps).
NEURON_STANDARD = dict(
    C=6.0, I=0.0, g_L=8.0, E_L=-80.0, g_Na=20.0, E_Na=60.0, Vh_Na=-20.0, k_Na=15.0,
    g_K=10.0, E_K=-90.0, Vh_K=-25.0, k_K=5.0, tau_n=1.0, g_M=25.0, Vh_M=-15.0, k_M=5.0,
    tau_h=200.0, g_NMDA=10.2, E_NMDA=0.0,
)  # fmt: skip
NEURON_PRESETS = {
    "standard": NEURON_STANDARD,
    "slow": {**NEURON_STANDARD, "tau_h": 1000.0, "Vh_M": -18.0, "g_M": 30.0},
}
NEURON_X0 = (-24.4694, 0.0386, 0.0231)

# Lorenz-96 presets: "paper" (App. F: forcing period 2π/ω = 75 time units = 15,000 steps at
# Δt = 5e-3) and "short_period" (ω = 2π/7.5: 1,500 steps; the slow time scale shrunk tenfold so
# that sequence-length experiments fit a CPU; everything else as "paper").
LORENZ96_PAPER = dict(N=6, F0=14.0, A=12.0, omega=2 * math.pi / 75)
LORENZ96_PRESETS = {
    "paper": LORENZ96_PAPER,
    "short_period": {**LORENZ96_PAPER, "omega": 2 * math.pi / 7.5},
}


@dataclasses.dataclass(frozen=True)
class System:
    """A registered ODE system with its paper defaults (App. F)."""

    name: str
    field: Callable
    params: dict
    dt: float
    n_steps: int
    transient: int
    sample_x0: Callable  # (rng, params) -> (D,) initial state
    variables: tuple  # names of the full state (defines D unless dim_param is set)
    observed: tuple | None = None  # default observed indices (None: all)
    dim_param: str | None = None  # parameter fixing the state dimension (Lorenz-96 "N")
    t0_period: Callable | None = None  # params -> period over which t0 is drawn (forced systems)
    presets: dict | None = None  # named parameter sets; `params` is the default one
    default_preset: str | None = None
    doc: str = ""

    def names(self, params):
        if self.dim_param is not None:
            return tuple(f"x{i + 1}" for i in range(int(params[self.dim_param])))
        return self.variables


def _x0_lorenz63(rng, p):
    return rng.uniform([-15.0, -20.0, 5.0], [15.0, 20.0, 45.0])


def _x0_lorenz96(rng, p):
    return p["F0"] + rng.normal(0.0, 1.0, int(p["N"]))


def _x0_neuron(rng, p):
    # Box around the paper's x0 (V, n, h); the 1000-time-unit transient removes the rest.
    return rng.uniform([-70.0, 0.0, 0.0], [-20.0, 0.1, 0.1])


SYSTEMS = {
    "lorenz63": System(
        "lorenz63", lorenz63_field, dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0),
        dt=0.01, n_steps=100_000, transient=1_000, sample_x0=_x0_lorenz63,
        variables=("x", "y", "z"), doc="Lorenz-63, σ=10, ρ=28, β=8/3, Δt=0.01 (App. F)",
    ),
    "lorenz96": System(
        "lorenz96", lorenz96_field, dict(LORENZ96_PAPER),
        dt=5e-3, n_steps=100_000, transient=2_000, sample_x0=_x0_lorenz96, variables=(),
        dim_param="N", t0_period=lambda p: 2 * math.pi / p["omega"],
        presets=LORENZ96_PRESETS, default_preset="paper",
        doc="forced Lorenz-96, N=6, F0=14, A=12, ω=2π/75, Δt=5e-3 (App. F)",
    ),
    "bursting_neuron": System(
        "bursting_neuron", bursting_neuron_field, dict(NEURON_STANDARD),
        dt=0.025, n_steps=160_000, transient=40_000, sample_x0=_x0_neuron,
        variables=("V", "n", "h"), observed=(0, 1), presets=NEURON_PRESETS,
        default_preset="standard",
        doc="bursting neuron (Durstewitz 2009), Δt=0.025, 1000 of 5000 time units cut (App. F)",
    ),
}  # fmt: skip


def interburst_gaps(v, *, threshold=-30.0, hysteresis=5.0, factor=5.0):
    """Quiescent gaps between bursts of a voltage trace, in samples (robust to 5% noise).

    A spike is an upward crossing of `threshold` after the trace has been below
    `threshold − hysteresis`; an inter-spike interval longer than `factor` times the median
    one separates two bursts.

    **Arguments:**

    - `v`: the voltage trace `(T,)`.
    - `threshold`, `hysteresis`: the spike detector; `factor`: the burst separator.

    **Returns:** `(gaps, periods)`: the silent intervals from a burst's last spike to the next
    burst's first spike, and the burst-onset-to-onset periods (NumPy int arrays; empty for
    tonic spiking).
    """
    v = np.asarray(check_array("v", v, ndim=1))
    threshold = check_real("threshold", threshold)
    hysteresis = check_real("hysteresis", hysteresis, 0)
    factor = check_real("factor", factor, 0, lo_open=True)
    ups = np.flatnonzero((v[:-1] < threshold) & (v[1:] >= threshold)) + 1
    low = np.flatnonzero(v < threshold - hysteresis)
    spikes, last = [], -1
    for u in ups:  # keep a crossing only if the trace re-armed below the lower level since
        j = np.searchsorted(low, last, side="right")
        if last < 0 or (j < len(low) and low[j] < u):
            spikes.append(u)
            last = u
    if len(spikes) < 3:
        return np.zeros(0, int), np.zeros(0, int)
    isi = np.diff(spikes)
    long = isi > factor * np.median(isi)
    return isi[long], np.diff(np.asarray(spikes)[1:][long])
