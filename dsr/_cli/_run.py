"""The run folder that `python -m dsr fit ... --out RUN_DIR` writes::

    RUN_DIR/config.json       every setting, the data files and their sha256, the
                              standardization, versions, device, what happened
    RUN_DIR/model.eqx         the trained model (an Ensemble for --runs K), dsr.load-able
    RUN_DIR/checkpoint.ckpt   the training checkpoint (+ .history): fit --resume RUN_DIR
    RUN_DIR/history.csv       one row per update and member
    RUN_DIR/context.npy       the warm-up context for `generate` (standardized; and
                              context_inputs.npy for a model with external inputs)
    RUN_DIR/metrics.json      with --test (or after `evaluate`)
    RUN_DIR/plots/*.png       loss, time series, state space, power spectra

Files are written atomically (`dsr._io`); JSON holds no NaN/inf literals (they are written
as the strings "nan", "inf", "-inf").
"""

from __future__ import annotations

import datetime
import functools
import io
import json
import os
import platform
import sys

import jax
import numpy as np

from .._io import write_bytes
from ._errors import CLIError

CONFIG_VERSION = 1


_NON_FINITE = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}


def _numpy_default(o):
    if isinstance(o, (np.ndarray, np.generic)):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def json_text(obj) -> str:
    """`obj` as indented JSON: NumPy values as Python ones, NaN/inf as "nan"/"inf"/"-inf"."""
    loose = json.dumps(obj, default=_numpy_default)
    strict = json.loads(loose, parse_constant=_NON_FINITE.__getitem__)
    return json.dumps(strict, indent=2, allow_nan=False) + "\n"


def versions() -> dict:
    import equinox
    import optax

    from .. import __version__

    return {"dsr": __version__, "python": sys.version.split()[0], "jax": jax.__version__,
            "equinox": equinox.__version__, "optax": optax.__version__,
            "numpy": np.__version__, "platform": platform.platform()}


def device() -> dict:
    devs = jax.devices()
    return {"backend": jax.default_backend(), "devices": [str(d) for d in devs],
            "kind": devs[0].device_kind, "cpu_count": os.cpu_count()}


def run_keys(seed: int):
    """`(model, fit, evaluation)` PRNG keys of a run with seed `seed`."""
    return jax.random.split(jax.random.key(seed), 3)


def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


class RunFolder:
    """Paths and reads/writes of one run folder."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        j = functools.partial(os.path.join, self.path)
        self.config, self.model, self.checkpoint = j("config.json"), j("model.eqx"), j(
            "checkpoint.ckpt")
        self.history, self.metrics, self.context = j("history.csv"), j("metrics.json"), j(
            "context.npy")
        self.context_inputs, self.plots = j("context_inputs.npy"), j("plots")

    def create(self, force: bool) -> None:
        """Make the folder; an existing run is only replaced with `force`."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise CLIError(f"{self.path}: exists and is not a folder; --out needs a folder.")
        if os.path.exists(self.config) and not force:
            raise CLIError(f"{self.path}: already holds a run; continue it with `python -m dsr "
                           f"fit --resume {self.path}`, or pass --force to start it anew.")
        if force:
            for p in (self.config, self.model, self.checkpoint, self.checkpoint + ".history",
                      self.history, self.metrics, self.context, self.context_inputs):
                if os.path.exists(p):
                    os.remove(p)
        os.makedirs(self.path, exist_ok=True)

    def read_config(self) -> dict:
        if not os.path.isdir(self.path):
            raise CLIError(f"{self.path}: no such run folder.")
        if not os.path.isfile(self.config):
            raise CLIError(f"{self.path}: not a dsr run folder (no config.json); create one "
                           "with `python -m dsr fit DATA --out RUN_DIR`.")
        cfg = self.read_json(self.config)
        if cfg.get("dsr_run") != CONFIG_VERSION:
            raise CLIError(f"{self.config}: not a dsr run config (version "
                           f"{cfg.get('dsr_run')!r}).")
        return cfg

    def write_config(self, cfg: dict) -> None:
        self.write_json(self.config, dict(cfg, updated=now()))

    @staticmethod
    def read_json(path: str) -> dict:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise CLIError(f"{path}: cannot be read as JSON ({e}).") from None

    @staticmethod
    def write_json(path: str, obj) -> None:
        write_bytes(path, json_text(obj).encode())

    def write_array(self, path: str, x: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, np.asarray(x), allow_pickle=False)
        write_bytes(path, buf.getvalue())


def write_history(path: str, history: dict, n_members: int) -> None:
    """`history.csv`: `step, member, <fields>` (one row per update and member)."""
    fields = [k for k in history if k != "eval" and np.ndim(history[k]) >= 1]
    per = {k: np.asarray(history[k], np.float64).reshape(-1, np.shape(history[k])[-1])
           for k in fields}
    steps = per["loss"].shape[-1] if "loss" in per else 0
    lines = ["step,member," + ",".join(fields)]
    for t in range(steps):
        for i in range(n_members):
            vals = (per[k][min(i, per[k].shape[0] - 1), t] for k in fields)
            lines.append(f"{t + 1},{i}," + ",".join(f"{v:.8g}" for v in vals))
    write_bytes(path, ("\n".join(lines) + "\n").encode())


def read_history(path: str) -> dict | None:
    """`{field: (K, steps)}` from `history.csv`, or None if there is none."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        head = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        return None
    K = int(data[:, 1].max()) + 1
    return {name: data[:, j].reshape(-1, K).T for j, name in enumerate(head) if j >= 2}
