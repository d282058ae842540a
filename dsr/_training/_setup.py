"""Everything `fit` decides before it compiles anything: validated arguments, the data as
training windows, the static step configuration and the settings as reproducible text."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import warnings
from typing import Any

import jax
import numpy as np
import optax

from .._alpha import AbstractAlpha, as_alpha
from .._check_model import check_model as check_jacobians
from ._checkpoint import (check_compatible, differences, history_path, identity, read_header,
                          stored_arguments, structure)
from .._checks import (ArgumentTypeError, check_bool, check_choice, check_int, check_key,
                      check_optional_int, check_path, check_real)
from .._config import describe_optimizer, from_config, to_config
from .._ensemble import Ensemble, as_stack
from .._io import read_kind
from .._regularization import Regularization
from .._schedule import AbstractSchedule, CosineDecay
from .._serialization import model_spec
from .._sharding import Placement, is_writer, resolve_devices
from .._solvers._resolve import resolve_solver
from ._arguments import Counts, FitArguments, RunOptions
from ._members import MemberSettings, check_sweep, member_settings
from ._step import StepConfig
from .._sweep._build import Sweep
from ._validation import Validation, before_status_steps, make_validation
from ._windows import Windows
from ..models import AbstractGTFModel, AbstractModel
from ..models._base import parameter_dtype

RESUME_SETTINGS = ("check", "checkpoint", "call")


@functools.lru_cache(maxsize=64)
def default_optimizer(learning_rate: float, steps: int,
                      schedule: AbstractSchedule | None = None) -> optax.GradientTransformation:
    """RAdam with the learning-rate `schedule` (default `CosineDecay()`: cosine from
    `learning_rate` to `learning_rate/50`) and gradient clipping at norm 10 (the paper
    decays 5e-5 → 1e-6 over 150k updates). Cached, so equal settings give the same object
    and `fit` reuses its compiled step."""
    schedule = CosineDecay() if schedule is None else schedule
    return optax.chain(optax.clip_by_global_norm(10.0),
                       optax.radam(schedule(learning_rate, steps)))


def _check_schedule(schedule):
    if schedule is not None and not isinstance(schedule, AbstractSchedule):
        raise ArgumentTypeError("`schedule` must be a dsr.CosineDecay, dsr.ExponentialDecay "
                                f"(an AbstractSchedule) or None; got {schedule!r}.")
    return None if schedule == CosineDecay() else schedule


def as_series(name: str, data, obs_dim: int, dtype) -> list[np.ndarray]:
    """`data` (an array, a list of arrays, or an object with `.train`) as (T, N) arrays."""
    if hasattr(data, "train") and not isinstance(data, np.ndarray):  # a data_gen.Dataset
        data = data.train
    series = list(data) if isinstance(data, (list, tuple)) else [data]
    if not series:
        raise ValueError(f"`{name}` is empty.")
    out = []
    for i, s in enumerate(series):
        try:
            a = np.asarray(s)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"`{name}` must be (T, N) arrays; series {i} is "
                                    f"{type(s).__name__}.") from None
        if a.ndim != 2 or not np.issubdtype(a.dtype, np.number):
            raise ValueError(f"`{name}` must be (T, N) numeric arrays; series {i} has shape "
                             f"{a.shape} and dtype {a.dtype}.")
        if a.shape[1] != obs_dim:
            raise ValueError(f"`{name}` has {a.shape[1]} dimensions (series {i}) but the "
                             f"model's {'obs_dim' if name == 'data' else 'input_dim'} is "
                             f"{obs_dim}.")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"`{name}` contains non-finite values (NaN or inf) in series {i}.")
        out.append(np.ascontiguousarray(a, dtype=dtype))
    return out


def fingerprint(series, inputs) -> str:
    """SHA-256 of the training data (shapes, dtype and values) and inputs."""
    h = hashlib.sha256()
    for a in list(series) + [None] + list(inputs or []):
        if a is None:  # the data end, the inputs begin
            h.update(b"|inputs|")
            continue
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@dataclasses.dataclass
class Plan:
    """A validated `fit` call."""

    cfg: StepConfig
    steps: int
    windows: Windows
    stacked: AbstractModel
    n_members: int
    is_ensemble: bool
    key_data: np.ndarray
    key_impl: str
    placement: Placement
    settings: dict
    expected: dict  # model spec, structure, data SHA-256, settings: a checkpoint's header
    series: list
    options: RunOptions
    validation: Validation | None = None
    sweep: Sweep | None = None
    members: MemberSettings | None = None  # a sweep's per-member settings
    alpha0: np.ndarray | None = None  # a sweep's per-member start α


def _check_counts(a: FitArguments) -> Counts:
    steps, seq_len = check_int("steps", a.steps, 0), check_int("seq_len", a.seq_len, 1)
    monitor_every = check_optional_int("monitor_every", a.monitor_every, 0)
    if monitor_every is None:  # default: four free-run checks per fit
        monitor_every = max(1, steps // 4) if steps else 0
    return Counts(steps=steps, seq_len=seq_len, batch_size=check_int("batch_size", a.batch_size, 1),
                  warmup=check_int("warmup", a.warmup, 0, seq_len - 1),
                  checkpoint_every=check_int("checkpoint_every", a.checkpoint_every, 1),
                  max_failures=check_int("max_failures", a.max_failures, 1),
                  eval_every=check_optional_int("eval_every", a.eval_every, 1),
                  monitor_every=monitor_every, noise=check_real("noise", a.noise, 0.0))


def _check_model(model):
    """The model whose static fields (dimensions, class) and dtype describe the call: a
    member's are the stacked model's, so no array is indexed."""
    if isinstance(model, Ensemble):
        return model.stacked
    if not isinstance(model, AbstractModel):
        raise ArgumentTypeError(f"`model` must be a dsr model or Ensemble; got "
                                f"{type(model).__name__}.")
    return model


def _check_files(checkpoint, resume, resume_settings):
    check_choice("resume_settings", resume_settings, RESUME_SETTINGS)
    checkpoint, resume = (None if p is None else check_path(name, p)
                          for name, p in (("checkpoint", checkpoint), ("resume", resume)))
    if resume is not None and not os.path.isfile(resume):
        what = "is a folder" if os.path.isdir(resume) else "does not exist"
        raise ValueError(f"`resume`: {os.fspath(resume)!r} {what}; give a checkpoint file.")
    if checkpoint is None:
        return
    path = os.fspath(checkpoint)
    if os.path.isdir(path):
        raise ValueError(f"`checkpoint`: {path!r} is a folder; give a file name, e.g. "
                         f"{os.path.join(path, 'fit.ckpt')!r}.")
    for p in (path, history_path(path)):
        if os.path.islink(p):
            raise ValueError(f"`checkpoint`: {p!r} is a symbolic link; dsr does not write "
                             f"through links (give the file itself, "
                             f"{os.path.realpath(p)!r}, or remove the link).")
        if os.path.exists(p) and not os.path.isfile(p):
            raise ValueError(f"`checkpoint`: {p!r} exists and is not a regular file.")
    same = resume is not None and identity(path) == identity(resume)
    if not same and os.path.exists(path):
        if read_kind(path) != "checkpoint":
            raise ValueError(f"`checkpoint`: {path!r} exists and is not a dsr checkpoint; "
                             "refusing to overwrite it (delete it or choose another file name).")
        if is_writer():
            warnings.warn(f"`checkpoint`: {path!r} holds the checkpoint of an earlier run, "
                          f"which this run overwrites (pass resume={path!r} to continue that "
                          "run).", stacklevel=5)
    if not is_writer():  # under jax.distributed only process 0 writes (or creates) files
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ValueError(f"`checkpoint`: cannot create folder {folder!r} ({e.strerror}).") \
            from None
    if not os.access(folder, os.W_OK):
        raise ValueError(f"`checkpoint`: folder {folder!r} is not writable.")


def default_checkpoint(checkpoint, resume):
    """`checkpoint`, or — when only `resume` is given — the resumed file, which the run
    keeps writing; unless that file cannot be written safely (a link, read-only): then None,
    with a warning that this run saves no checkpoint."""
    if checkpoint is not None or resume is None:
        return checkpoint
    path = check_path("resume", resume)
    if not os.path.isfile(path) or not is_writer():
        return path  # (an error later if it is missing; other processes never write)
    hist = history_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    why = None
    if os.path.islink(path) or os.path.islink(hist):
        why = "it (or its history) is a symbolic link"
    elif not (os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
        why = "it (or its folder) is not writable"
    if why is None:
        return path
    warnings.warn(f"`resume`: {os.fspath(path)!r} is continued without a checkpoint because "
                  f"{why}; pass `checkpoint=` to save this run.", stacklevel=4)
    return None


def _data(one, data, inputs, dtype, seq_len):
    series = as_series("data", data, one.obs_dim, dtype)
    shortest = min(len(s) for s in series)
    if shortest < seq_len + 1:
        raise ValueError(f"`data` is too short: a series has {shortest} steps but "
                         f"seq_len + 1 = {seq_len + 1} are needed per window.")
    inp = None
    if one.input_dim:
        if inputs is None:
            raise ValueError(f"the model takes {one.input_dim} external inputs: pass `inputs`.")
        inp = as_series("inputs", inputs, one.input_dim, dtype)
        if [len(s) for s in inp] != [len(s) for s in series]:
            raise ValueError("`inputs` must have the same lengths as `data`.")
    elif inputs is not None:
        raise ValueError("`inputs` given but the model has input_dim = 0.")
    return series, inp


def _strategies(one, alpha, alpha_every, alpha_gamma, solver, regularization, seq_len, K):
    strategy = as_alpha(alpha, check_optional_int("alpha_every", alpha_every, 1),
                        None if alpha_gamma is None else
                        check_real("alpha_gamma", alpha_gamma, 0.0, 1.0, lo_open=True))
    solver_obj = resolve_solver(solver, one.latent_dim, seq_len=seq_len, members=K)
    if regularization is not None:
        if not isinstance(regularization, Regularization):
            raise ArgumentTypeError("`regularization` must be a dsr.Regularization or None; "
                                    f"got {regularization!r}.")
        regularization.check(one)
    return strategy, solver_obj


@dataclasses.dataclass
class Call:
    """The validated arguments of a `fit` call that decide its result (nothing compiled)."""

    one: AbstractModel
    counts: Counts
    learning_rate: float
    key: jax.Array
    strategy: AbstractAlpha
    solver: Any
    regularization: Regularization | None
    optimizer: optax.GradientTransformation
    series: list
    inputs: list | None
    settings: dict
    expected: dict  # what a checkpoint of this call records: model, structure, data, settings
    validation: Validation | None = None


def _validate(model, data, alpha, kw: FitArguments, sweep: Sweep | None = None) -> Call:
    """Validate every argument of `fit`; cheap (NumPy and argument checks only)."""
    one = _check_model(model)
    user_class = type(one).__module__.split(".")[0] != "dsr"
    if check_bool("check_model", kw.check_model) and user_class:
        check_jacobians(model)  # a user's analytic Jacobians, once, before compiling
    n = _check_counts(kw)
    lr = check_real("learning_rate", kw.learning_rate, 0.0, lo_open=True)
    key = check_key("key", jax.random.key(0) if kw.key is None else kw.key)
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):  # a raw uint32[2] key
        key = jax.random.wrap_key_data(key)
    for name in ("callback", "optimizer"):
        _check_optional_callable(name, getattr(kw, name))
    check_bool("progress", kw.progress)
    K = model.n_members if isinstance(model, Ensemble) else 1
    strategy, solver_obj = _strategies(one, alpha, kw.alpha_every, kw.alpha_gamma,
                                       kw.solver, kw.regularization, n.seq_len, K)
    _check_files(kw.checkpoint, kw.resume, kw.resume_settings)
    dtype = parameter_dtype(one)
    series, inp = _data(one, data, kw.inputs, dtype, n.seq_len)
    if kw.validation is not None and one.input_dim:
        raise ValueError("`validation`: free runs of a model with external inputs need inputs "
                         "beyond the data; not supported.")
    series, val = make_validation(kw.validation, kw.keep, n.eval_every, series,
                                  one.obs_dim, dtype, n.seq_len, n.steps, kw.status_steps)
    opt, schedule = kw.optimizer, _check_schedule(kw.schedule)
    if opt is not None and schedule is not None:
        raise ValueError("`schedule` sets the default optimizer's learning rate; with your "
                         "own `optimizer`, put the schedule into it.")
    opt_spec = None if opt is not None else {"name": "radam+cosine+clip", "lr": lr,
                                             "steps": n.steps}
    if schedule is not None:  # the default cosine keeps the old text (old checkpoints)
        opt_spec = dict(opt_spec, name="radam+schedule+clip", schedule=to_config(schedule))
    optimizer = default_optimizer(lr, n.steps, schedule) if opt is None else opt
    settings = _settings(n, lr, strategy, solver_obj, kw.regularization,
                         describe_optimizer(optimizer, opt_spec), key, K, dtype)
    if val is not None:  # only then: checkpoints of runs without validation stay compatible
        settings["validation"] = val.settings
    if n.noise:  # likewise
        settings["noise"] = n.noise
    if sweep is not None:
        settings["sweep"] = check_sweep(sweep, one, val, kw.regularization)
    expected = dict(model=model_spec(model), data_sha256=fingerprint(series, inp),
                    settings=settings, structure=structure(
                        model.stacked if isinstance(model, Ensemble) else model,
                        None if isinstance(model, Ensemble) else 1))
    return Call(one, n, lr, key, strategy, solver_obj, kw.regularization, optimizer, series,
                inp, settings, expected, val)


def _check_optional_callable(name, value):
    if value is not None and not (callable(value) if name == "callback" else
                                  isinstance(value, optax.GradientTransformation)):
        what = "callable" if name == "callback" else "an optax.GradientTransformation"
        raise ArgumentTypeError(f"`{name}` must be {what} or None; got {value!r}.")


def _reconcile(path, header: dict, call: Call, model, data, alpha, kw: FitArguments,
               sweep: Sweep | None = None) -> Call:
    """Check the checkpoint at `path` against the call (before anything is compiled) and
    return the call to continue: this one, or — with `resume_settings="checkpoint"` — one
    with the stored settings."""
    check_compatible(path, header, call.expected)
    stored, mode = header.get("settings", {}), kw.resume_settings
    if before_status_steps(stored.get("validation"), call.validation, kw.status_steps):
        kw = kw.replace(status_steps=call.validation.n_steps)
        call = _validate(model, data, alpha, kw, sweep)
    diff = differences(stored, call.settings)
    if diff and mode == "checkpoint":
        restored = stored_arguments(path, stored, kw.optimizer, call.settings, call,
                                    kw.schedule)
        alpha = restored.pop("alpha")
        call = _validate(model, data, alpha, kw.replace(**restored), sweep)
        left = differences(stored, call.settings)
        if left:
            raise ValueError(f"`resume_settings='checkpoint'`: the settings of {path!r} "
                             "cannot all be restored: " + "; ".join(left) + ".")
        return call
    step = int(header.get("step", 0))
    if step > call.counts.steps:
        raise ValueError(f"`steps` ({call.counts.steps}) is below the step of the "
                         f"checkpoint {path!r} ({step}); resuming cannot go back.")
    if diff and mode == "check":
        raise ValueError(f"`resume`: {path!r} was written with other settings — "
                         + "; ".join(diff) + ". Pass resume_settings='checkpoint' to continue "
                         "with the stored ones or 'call' to use this call's.")
    if diff:
        warnings.warn("resuming with this call's settings, which differ from the "
                      "checkpoint's: " + "; ".join(diff), stacklevel=4)
    return call


def make_plan(model, data, alpha, kw: FitArguments) -> Plan:
    """Validate every argument of `fit`, check a checkpoint to resume against them (nothing
    is compiled yet) and build the plan."""
    kw = kw.replace(checkpoint=default_checkpoint(kw.checkpoint, kw.resume))
    sweep = model if isinstance(model, Sweep) else None
    model = model.ensemble if sweep is not None else model
    call = _validate(model, data, alpha, kw, sweep)
    resume = None
    if kw.resume is not None:
        path = os.fspath(kw.resume)
        header, payload = read_header(path)
        call = _reconcile(path, header, call, model, data, alpha, kw, sweep)
        resume = (path, header, payload)
    n = call.counts
    stacked, K, is_ens = as_stack(model)
    placement = Placement(K, resolve_devices(kw.devices))
    cfg = StepConfig(call.solver, call.regularization, call.optimizer, call.strategy,
                     n.batch_size, n.warmup, n.max_failures,
                     isinstance(call.one, AbstractGTFModel), n.noise, steps=n.steps)
    keys = jax.random.split(call.key, K) if is_ens else call.key[None]
    members = alpha0 = None
    if sweep is not None:  # member i = (setting i // runs, seed i % runs): seeds share keys
        keys = jax.random.split(call.key, sweep.runs)[np.arange(K) % sweep.runs]
        members, alpha0 = member_settings(sweep, call.learning_rate, parameter_dtype(call.one))
    windows = Windows.from_series(call.series, call.inputs, n.seq_len + 1)
    options = RunOptions(checkpoint=kw.checkpoint, checkpoint_every=n.checkpoint_every,
                         resume=resume, eval_every=n.eval_every, monitor_every=n.monitor_every,
                         callback=kw.callback, progress=kw.progress)
    return Plan(cfg, n.steps, windows, stacked, K, is_ens,
                np.asarray(jax.random.key_data(keys)), str(jax.random.key_impl(keys)),
                placement, call.settings, call.expected, call.series, options, call.validation,
                sweep, members, alpha0)


def _settings(n, lr, strategy: AbstractAlpha, solver, regularization, optimizer, key, K,
              dtype) -> dict[str, Any]:
    """Every setting that changes the result, as JSON (no reprs, no addresses)."""
    return dict(alpha=to_config(strategy), steps=n.steps, seq_len=n.seq_len,
                batch_size=n.batch_size, warmup=n.warmup, learning_rate=lr,
                optimizer=optimizer, solver=to_config(solver),
                regularization=to_config(regularization), max_failures=n.max_failures,
                key=np.asarray(jax.random.key_data(key)).tolist(),
                key_impl=str(jax.random.key_impl(key)), members=K, dtype=str(dtype))
