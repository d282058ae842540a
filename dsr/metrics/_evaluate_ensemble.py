"""[`evaluate`][] for an `Ensemble`: the free orbits of all K members in one vmapped
generation, then every measure per member, and a summary (median, MAD, diverged count)."""

from __future__ import annotations

import jax
import numpy as np

from .._generate import generate
from ._orbits import as_model_input
from ._progress import Progress
from ._summary import summarize_members

#: The scalar measures of one member, in the order of the result.
MEASURES = ("D_stsp", "D_stsp_stderr", "D_H", "RMSE_n", "lambda_max")


def summarize(out: dict) -> dict:
    """`summary` of an ensemble result (see `summarize_members`)."""
    return summarize_members({m: out[m] for m in MEASURES}, out["status"])


def free_orbits(ens, x: np.ndarray, settings: dict):
    """All members' free orbits `(K, n_gen, N)` (float64) and last latents `(K, M)`."""
    x_gen, z_gen = generate(ens, settings["n_gen"], return_latents=True,
                            context=as_model_input(ens[0], x[: settings["warmup"]]))
    return np.asarray(x_gen, np.float64), z_gen[:, -1]


def evaluate_ensemble(ens, x: np.ndarray, settings: dict, key, show: bool, member_measures,
                      return_orbits: bool = False):
    """Per-member measures of `ens` on the test orbit `x`; member i uses
    `jax.random.split(key, K)[i]` exactly as `evaluate(ens[i], ..., key=that)` does, so its
    entries equal the solo evaluation's (up to the rounding of a vmapped generation). With
    `return_orbits`, `orbits` holds the free orbits `(K, n_gen, N)`."""
    K = len(ens)
    keys = jax.random.split(key, K)
    per = []
    with Progress(show, f"evaluate: free orbits of {K} members", total=K + 1) as bar:
        x_gen, z_last = free_orbits(ens, x, settings)
        for i in range(K):
            bar.update()
            bar.stage(f"evaluate: member {i + 1}/{K}")
            per.append(member_measures(ens[i], x, x_gen[i], z_last[i], settings, keys[i]))
        bar.update()
    out = {m: np.array([p[m] for p in per], np.float64) for m in MEASURES}
    out["diverged"] = np.array([p["diverged"] for p in per], bool)
    for name in ("status", "notes", "D_stsp_status", "D_stsp_note"):
        out[name] = [p[name] for p in per]
    out["summary"] = summarize(out)
    if return_orbits:
        out["orbits"] = x_gen
    return {**out, "settings": settings}
