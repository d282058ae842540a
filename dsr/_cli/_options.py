"""The options of `python -m dsr fit / evaluate / generate`: one table, three sources.

Every option has a default — the library's own, read from the signatures of `dsr.fit` and
`dsr.metrics.evaluate`, so the command line and Python agree — and can be set in a config
file (`--config FILE.toml` or `.json`, flat `name = value` pairs, names as the long flags
with `_` or `-`) or on the command line. A flag overrides the file; the file overrides the
default. Values from both sources go through the same converters, so a bad value gets the
same one-line message naming where it came from. A relative file name in a config file is
relative to the config file's folder (on the command line: to the working folder).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from collections.abc import Callable
from typing import Any

from .._training._fit import fit
from .._training._setup import RESUME_SETTINGS as RESUME_SETTINGS
from .._solvers._resolve import SOLVER_NAMES
from .._training._validation import KEEP
from ..metrics import evaluate
from ._converters import (_alpha, _bool, _choice, _delay_embed, _embedding, _float, _list,
                          _model, _nonnegative, _path, _paths, _schedule, _sweep, _validation,
                          auto_or, integer)
from ._converters import schedule_object as schedule_object
from ._errors import CLIError
from ._models import MODELS

FIT_DEFAULTS = {k: p.default for k, p in inspect.signature(fit).parameters.items()}
EVAL_DEFAULTS = {k: p.default for k, p in inspect.signature(evaluate).parameters.items()}

# ------------------------------------------------------------------------------ the table


@dataclasses.dataclass(frozen=True)
class Option:
    """`name`: config key and `--name` flag (with `-`); `group`: help section; `flag`: a
    `--x / --no-x` switch; `positional`: DATA; `cli_only`: not a setting of the run."""

    name: str
    convert: Callable
    default: Any
    help: str
    group: str
    metavar: str | None = None
    flag: bool = False
    positional: bool = False

    @property
    def dest(self) -> str:
        return self.name

    @property
    def long(self) -> str:
        return "--" + self.name.replace("_", "-")


F, E = FIT_DEFAULTS, EVAL_DEFAULTS
DATA = [
    Option("data", _paths, None, "training recording(s): .npy (T, N), .csv (header row "
           "allowed) or .npz (a data_gen data set, or --key); several files = several "
           "trajectories", "data", "DATA", positional=True),
    Option("test", _path, None, "test recording (same format; a data_gen .npz gives its "
           "'test' array): evaluated after training", "data", "TEST"),
    Option("inputs", _paths, None, "external inputs s_t, one file per DATA file, same "
           "number of rows", "data", "S"),
    Option("columns", _list, None, "columns to use: names (CSV header) or 0-based indices, "
           "comma-separated", "data", "A,B,..."),
    Option("key", _list, None, "array name inside a generic .npz (one per role: train[,test])",
           "data", "NAME"),
    Option("standardize", _bool, True, "standardize every variable with the training data's "
           "mean and std (stored in the run folder)", "data", flag=True),
    Option("delay_embed", _delay_embed, None, "train on the delay embedding (x_t, x_{t-tau}, "
           "…) of a one-column recording: M,TAU, or auto (tau: first minimum of the mutual "
           "information; M: false nearest neighbours below 5 %%; see dsr.choose_embedding)",
           "data", "M,TAU|auto"),
    Option("denoise", _bool, False, "smooth the training (and validation) data's noisy "
           "channels before training: Savitzky-Golay, the window from the data (dsr.denoise; "
           "noise-free channels are left as they are; the test data are not smoothed)",
           "data", flag=True),
    Option("dt", _float(0.0, optional=True), None, "sampling step in your time unit (λ_max is "
           "per time unit; default: a data_gen set's dt, else 1 = per step)", "data"),
]
MODEL = [
    Option("model", _model, MODELS[0], "clipped = ClippedShPLRNN (bounded orbits; "
           "recommended for recordings), shplrnn = ShPLRNN (Eq. 5), alrnn = ALRNN (needs "
           "--relu-units), lssm = LSSM; or MODULE:CLASS, a model class of a module --import "
           "names", "model", "NAME"),
    Option("import", _list, None, "modules to import (comma-separated) for --model "
           "MODULE:CLASS; recorded in the run, and needed again by evaluate, generate and "
           "fit --resume of it (a run folder never makes dsr import code)", "model",
           "MODULE"),
    Option("latent_dim", integer(1, optional=True), None, "latent dimension M (default: N, the "
           "number of variables)", "model", "M"),
    Option("hidden_dim", integer(1), 256, "hidden units L", "model", "L"),
    Option("rank", integer(1, optional=True), None, "low rank r of W (shPLRNN family)", "model"),
    Option("relu_units", integer(0, optional=True), None, "rectified units P of the AL-RNN "
           "(the last P of the M latent units)", "model", "P"),
]
TRAINING = [
    Option("alpha", _alpha, F["alpha"], "GTF forcing strength in [0, 1] or 'adaptive' (aGTF)",
           "training"),
    Option("steps", integer(0), F["steps"], "parameter updates", "training"),
    Option("seq_len", integer(1), F["seq_len"], "window length T", "training"),
    Option("batch_size", integer(1), F["batch_size"], "windows per update", "training"),
    Option("warmup", integer(0), F["warmup"], "forced warm-up steps T_w per window (not in the "
           "loss)", "training"),
    Option("lr", _float(), F["learning_rate"], "learning rate (RAdam, cosine decay to lr/50)",
           "training"),
    Option("noise", _nonnegative, F["noise"], "Gaussian noise (std, standardized units) added to "
           "the teacher signals every update; the targets stay clean (0: none)", "training"),
    Option("lr_schedule", _schedule, "cosine", "learning-rate schedule: cosine (to lr/50) or "
           "exponential[:FINAL] (geometric decay to FINAL, default 1e-6, as the GTF authors)",
           "training", "NAME"),
    Option("solver", _choice(*SOLVER_NAMES), F["solver"], "GTF solver", "training"),
    Option("runs", integer(1), 1, "independent runs K, trained together as one ensemble "
           "(with --sweep: seeds per setting)", "training", "K"),
    Option("sweep", _sweep, None, "train every combination of these values (their product) "
           "× --runs seeds as one program and keep the best setting by its median validation "
           "score (needs --validation): KEY=V1,V2 ... with KEY one of alpha, lr, noise, "
           "hidden-dim, latent-dim; every member's scores go to sweep.csv and sweep.png",
           "training", "KEY=V1,V2"),
    Option("seed", integer(0), 0, "random seed (initialization, windows, evaluation)", "training"),
    Option("checkpoint_every", integer(1), F["checkpoint_every"], "updates between checkpoints",
           "training"),
    Option("monitor_every", integer(0, optional=True), F["monitor_every"], "updates between "
           "free-run checks (default: 4 per fit; 0: never)", "training"),
    Option("validation", _validation, None, "free-run validation data: a recording (same "
           "format as DATA) or a fraction in (0, 1) of the training data taken from its end",
           "training", "FILE|FRACTION"),
    Option("keep", _choice(*KEEP), F["keep"], "keep the parameters of the last "
           "update or each run's best validation step (needs --validation)", "training"),
    Option("eval_every", integer(1, optional=True), F["eval_every"], "updates between "
           "validation free runs (default: 20 per fit)", "training"),
    Option("status_steps", integer(1, optional=True), F["status_steps"], "length of each "
           "validation free run, over which its status (ok, off, collapsed, diverged) is judged "
           "(default: 4 x the validation length; D_stsp and D_H of its first validation "
           "length)", "training"),
]
EVALUATION = [
    Option("embedding", _embedding, None, "delay embedding m,tau for D_stsp^DE", "evaluation",
           "M,TAU"),
    Option("n_samples", auto_or(integer(10)), E["n_samples"], "D_stsp Monte-Carlo samples "
           "(auto: 10 per test step, 10^4 to 10^6)", "evaluation"),
    Option("n_rmse", integer(1), E["n_rmse"], "forecast horizon n of RMSE(n)", "evaluation"),
    Option("context_steps", integer(1), E["warmup"], "observed steps that warm the model up "
           "before each free run", "evaluation"),
    Option("gen_factor", auto_or(integer(1)), E["gen_factor"], "free-run length in test "
           "lengths (auto: 3, at most 30,000 steps, at least 1)", "evaluation"),
    Option("lyapunov_steps", integer(1), E["lyapunov_steps"], "steps for λ_max", "evaluation"),
]
OUTPUT = [
    Option("plots", _bool, True, "draw the pictures (loss, time series, state space, power "
           "spectra)", "output", flag=True),
    Option("plot_steps", integer(10), 2000, "time steps shown in the time-series picture",
           "output"),
    Option("progress", _bool, True, "progress bars", "output", flag=True),
]
FIT_OPTIONS = DATA + MODEL + TRAINING + EVALUATION + OUTPUT
EVAL_OPTIONS = EVALUATION + OUTPUT
BY_NAME = {o.name: o for o in FIT_OPTIONS}
#: Options that fix what the run is; `fit --resume` refuses to change them.
IDENTITY = ("data", "inputs", "columns", "key", "standardize", "delay_embed", "denoise", "model",
            "latent_dim",
            "hidden_dim", "rank", "relu_units", "runs", "seed", "sweep")
#: Options that change the training result; changing one on resume needs --resume-settings.
TRAINING_SETTINGS = ("alpha", "steps", "seq_len", "batch_size", "warmup", "lr", "lr_schedule",
                     "noise",
                     "solver",
                     "validation", "keep", "eval_every", "status_steps")


def read_config_file(path: str) -> dict:
    """A flat `{name: value}` table from a `.toml` or `.json` file."""
    if not os.path.isfile(path):
        raise CLIError(f"{path}: no such config file.")
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                raise CLIError(f"{path}: TOML config files need Python ≥ 3.11; use a .json "
                               "file.") from None
            with open(path, "rb") as f:
                table = tomllib.load(f)
        elif ext == ".json":
            with open(path, encoding="utf-8") as f:
                table = json.load(f)
        else:
            raise CLIError(f"{path}: a config file must end in .toml or .json.")
    except (ValueError, UnicodeDecodeError) as e:
        if isinstance(e, CLIError):
            raise
        raise CLIError(f"{path}: not valid {ext[1:].upper()} ({e}).") from None
    if not isinstance(table, dict):
        raise CLIError(f"{path}: expected a table of settings, got {type(table).__name__}.")
    return {str(k).replace("-", "_"): v for k, v in table.items()}


#: Options that name files (resolved against a config file's folder when given there).
FILE_OPTIONS = ("data", "test", "inputs", "validation")


def _beside(folder: str, value):
    """`value` (a file name, a list of them, or a validation fraction) with relative file
    names taken relative to `folder`."""
    if isinstance(value, list):
        return [_beside(folder, v) for v in value]
    if isinstance(value, str):
        return os.path.join(folder, os.path.expanduser(value))
    return value


def resolve(options: list[Option], flags: dict, config_path: str | None,
            base: dict | None = None) -> tuple[dict, set]:
    """`(values, given)`: every option's value (flag > config file > `base` > default) and
    the names set by a flag or the file."""
    mine = {o.name for o in options}
    values = {o.name: o.default for o in options}
    if base is not None:  # a run's stored options (a newer option keeps its default)
        values.update({k: v for k, v in base.items() if k in values})
    given = set()
    if config_path is not None:
        for name, v in read_config_file(config_path).items():
            if name not in BY_NAME:
                raise CLIError(f"{config_path}: unknown setting {name!r}; known: "
                               f"{', '.join(sorted(BY_NAME))}.")
            if name in mine:  # other commands' settings in a shared file are skipped
                values[name] = BY_NAME[name].convert(f"{config_path}: {name}", v)
                if name in FILE_OPTIONS:
                    folder = os.path.dirname(os.path.abspath(config_path))
                    values[name] = _beside(folder, values[name])
                given.add(name)
    for o in options:
        if o.name in flags:
            values[o.name] = o.convert(o.long if not o.positional else o.metavar, flags[o.name])
            given.add(o.name)
    return values, given
