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

What the user owns is never overwritten: a folder is a run when its `config.json` carries
the marker `"dsr_run"`; `fit --out --force` replaces only such a folder (its run files and
pictures, nothing else in it) or an empty one, and `fit --out` into a folder that is not a
run refuses when a run file would replace one of its files. One process writes a run at a
time: `fit`, `fit --resume` and `evaluate` hold `RUN_DIR/run.lock` (`dsr._lock`) from
before their first write to the end.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import json
import os
import platform
import sys

import jax
import numpy as np

from .. import _lock
from .._io import write_bytes
from ._errors import CLIError
from ._plots import PICTURES

CONFIG_VERSION = 1
#: The files of a run, relative to its folder (with `plots/<PICTURES>`).
RUN_FILES = ("config.json", "model.eqx", "checkpoint.ckpt", "checkpoint.ckpt.history",
             "history.csv", "metrics.json", "context.npy", "context_inputs.npy")
#: `RUN_DIR/run.lock` is the lock of the run.
LOCK_NAME = "run"
#: What every command reads from a run's config.json (`key.sub` for nested tables).
REQUIRED_KEYS = {"options": dict, "options.data": list, "options.seed": int, "data": dict,
                 "data.files": list, "data.names": list, "data.dt": (int, float, type(None)),
                 "standardization": dict, "standardization.enabled": bool,
                 "standardization.mean": list, "standardization.std": list, "sessions": list}
#: What every data-file record in it holds.
FILE_KEYS = {"abspath": str, "sha256": str}


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

    def run_files(self) -> list[str]:
        """Every file a run writes here (whether it exists or not)."""
        return ([os.path.join(self.path, n) for n in RUN_FILES]
                + [os.path.join(self.plots, n) for n in PICTURES])

    def is_run(self) -> bool:
        """Whether the folder holds a dsr run: a `config.json` (a JSON table) with the
        marker `dsr_run`, whatever else it holds or lacks."""
        try:
            with open(self.config, encoding="utf-8") as f:
                cfg = json.load(f)
        except (OSError, ValueError):
            return False
        return isinstance(cfg, dict) and "dsr_run" in cfg

    def check_target(self, force: bool, inputs=()) -> str:
        """What `fit --out` may do here, or a `CLIError` (nothing is touched): `"new"` (no
        such folder), `"run"` (a run, replaced with `force`), `"folder"` (a folder that is not
        a run, and none of its files has the name of a run file). `inputs`: the files this
        fit reads, none of which may be a run file here."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise CLIError(f"{self.path}: exists and is not a folder; --out needs a folder.")
        own = {os.path.realpath(p): p for p in self.run_files()}
        for p in inputs:
            if p is not None and os.path.realpath(p) in own:
                raise CLIError(f"{p}: an input of this fit is the run file "
                               f"{own[os.path.realpath(p)]}, which the run would replace; "
                               "choose another --out.")
        if not os.path.isdir(self.path):
            return "new"
        if self.is_run():
            if not force:
                raise CLIError(f"{self.path}: already holds a run; continue it with `python "
                               f"-m dsr fit --resume {self.path}`, or pass --force to start it "
                               "anew.")
            return "run"
        taken = [os.path.relpath(p, self.path) for p in self.run_files()
                 if os.path.lexists(p)]
        if os.path.lexists(self.plots) and not os.path.isdir(self.plots):
            taken.append("plots")
        if taken:
            raise CLIError(f"{self.path}: not a dsr run folder (no config.json with the run "
                           f"marker), and it holds {', '.join(taken)}, which a run would "
                           "overwrite; choose another --out (--force replaces only a dsr run "
                           "or an empty folder).")
        return "folder"

    def prepare(self, force: bool, inputs=()) -> None:
        """Check the folder again (under the run's lock) and replace an old run: remove its
        run files and pictures (and `plots/` if it is left empty), nothing else — not while
        a live process holds the lock of its checkpoint (`dsr.fit(checkpoint=...)`)."""
        if self.check_target(force, inputs) == "run":
            holder = _lock.held_by(self.checkpoint)
            if holder:
                raise CLIError(f"{self.checkpoint}: in use by {_lock.describe(holder)}; the "
                               "run is not replaced while its checkpoint is being written.")
            for p in self.run_files():
                if os.path.lexists(p):
                    os.remove(p)
            with contextlib.suppress(OSError):
                os.rmdir(self.plots)  # only if empty: other files there are the user's
        os.makedirs(self.path, exist_ok=True)

    @contextlib.contextmanager
    def lock(self):
        """Hold `run.lock` in the folder (which must exist): one writer per run. Another
        holder is reported by who it is (`CLIError`)."""
        name = os.path.join(self.path, LOCK_NAME)
        try:
            me = _lock.acquire(name)
        except _lock.LockedError as e:
            holder = _lock.held_by(name)
            if not holder:
                raise CLIError(str(e)) from None
            raise CLIError(f"{self.path}: the run is in use by {_lock.describe(holder)} (lock "
                           f"file {name + _lock.SUFFIX}); wait for it to finish, or delete the "
                           "lock file if that process no longer runs.") from None
        try:
            yield
        finally:
            _lock.release(name, me)

    def read_config(self) -> dict:
        if not os.path.isdir(self.path):
            raise CLIError(f"{self.path}: no such run folder.")
        if not os.path.isfile(self.config):
            raise CLIError(f"{self.path}: not a dsr run folder (no config.json); create one "
                           "with `python -m dsr fit DATA --out RUN_DIR`.")
        cfg = self.read_json(self.config)
        if not isinstance(cfg, dict) or "dsr_run" not in cfg:
            raise CLIError(f"{self.config}: not a dsr run config (no \"dsr_run\" marker).")
        if cfg.get("dsr_run") != CONFIG_VERSION:
            raise CLIError(f"{self.config}: not a dsr run config (version "
                           f"{cfg.get('dsr_run')!r}).")
        check_config(self.config, cfg)
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


def _lookup(cfg: dict, dotted: str):
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return KeyError
        node = node[part]
    return node


def check_config(path: str, cfg: dict) -> None:
    """A run config holds what the commands read (`REQUIRED_KEYS`, and `abspath`/`sha256`
    per data file); else one `CLIError` naming the file and every missing or wrong key."""
    missing, wrong = [], []
    for key, kind in REQUIRED_KEYS.items():
        if any(key.startswith(k + ".") for k in missing + wrong):
            continue  # its table is missing or wrong: named already
        v = _lookup(cfg, key)
        if v is KeyError:
            missing.append(key)
        elif not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            wrong.append(key)
    files = _lookup(cfg, "data.files")
    for i, rec in enumerate(files if isinstance(files, list) else []):
        for key, kind in FILE_KEYS.items():
            if not isinstance(rec, dict) or key not in rec:
                missing.append(f"data.files[{i}].{key}")
            elif not isinstance(rec[key], kind):
                wrong.append(f"data.files[{i}].{key}")
    if missing or wrong:
        what = "; ".join(([f"missing {', '.join(missing)}"] if missing else [])
                         + ([f"of the wrong type: {', '.join(wrong)}"] if wrong else []))
        raise CLIError(f"{path}: a damaged dsr run config ({what}); restore the file, or "
                       "start a new run with `fit --out`.")


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
