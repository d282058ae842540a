"""`python -m dsr fit DATA ... --out RUN_DIR` and `python -m dsr fit --resume RUN_DIR`.

A fresh fit reads and standardizes the data, writes `config.json` (so that a killed run can
be resumed), trains with a checkpoint in the run folder, saves the model, the history and
(with `--test`) the evaluation and the pictures. `--resume` reads the run's options, checks
that the data files are unchanged (sha256), and continues from the checkpoint — bit-exactly
when no training setting changes; a changed one (e.g. more `--steps`) must be allowed with
`--resume-settings call` (or ignored with `checkpoint`).

Nothing is written or deleted before every argument has been checked — the data, the model
and `dsr.fit`'s own checks (`make_plan`, which compiles nothing) — and then only under the
run's lock (`RunFolder.lock`), so a second `fit` or `evaluate` of the same run refuses with
who holds it. The config records the files a session actually used (absolute paths and
sha256), on resume too.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings

import numpy as np

from .._ensemble import ensemble
from .._training._fit import fit
from .._training._arguments import FitArguments
from .._training._setup import make_plan
from .._serialization import model_spec, save
from ._run import (CONFIG_VERSION, RunFolder, device, now, read_history, run_keys, versions,
                   write_history)
from ._data import (Layout, Standardization, embed_series, load_recordings, model_units, run_dt,
                    sha256)
from ._errors import CLIError
from ._evaluate import draw_reference, evaluate_and_draw
from ._models import check_run_imports, constructor_sizes, model_class
from ._records import fit_record, print_fit
from ._sweep import build_sweep, check_sweep_options, describe as describe_sweep, write_sweep
from ._options import (FIT_OPTIONS, IDENTITY, OUTPUT, TRAINING_SETTINGS, resolve,
                       schedule_object)


@dataclasses.dataclass
class Prepared:
    """The loaded data: standardized training series (and test), inputs, names, dt."""

    series: list
    train: list
    test: object | None
    test_x: np.ndarray | None
    inputs: list | None
    inputs_info: list | None
    std: Standardization
    names: list
    dt: float | None
    validation: object = None  # a fraction, or the standardized validation array
    delay_embed: list | None = None  # [m, tau] when the data were delay-embedded
    validation_info: dict | None = None  # the validation file's record
    denoise: list | None = None  # `--denoise`: per training file (then validation) its record


def prepare_data(opts: dict) -> Prepared:
    keys = opts["key"] or [None, None]
    series = load_recordings(opts["data"], role="data", columns=opts["columns"], key=keys[0],
                             dt=opts["dt"])
    dt = run_dt(opts["dt"], series)
    emb = delay_embedding(opts, series[0])
    if emb is not None:
        series = [embed_series(s, *emb) for s in series]
    names = series[0].names
    layout = dataclasses.replace(Layout.of(series[0]), dt=dt)
    for s in series:
        if len(s.x) < opts["seq_len"] + 1:
            raise CLIError(f"{s.info['path']}: {len(s.x)} time steps; --seq-len "
                           f"{opts['seq_len']} needs at least {opts['seq_len'] + 1}.")
    std = Standardization.of(series, opts["standardize"])
    test = test_x = None
    if opts["test"] is not None:
        test = load_recordings([opts["test"]], role="test", columns=opts["columns"],
                               key=keys[-1], like=None if emb else layout, dt=opts["dt"])[0]
        test = embed_series(test, *emb) if emb else test
        need = opts["context_steps"] + opts["n_rmse"]
        if len(test.x) < need:
            raise CLIError(f"{opts['test']}: {len(test.x)} time steps; the evaluation needs "
                           f"--context-steps + --n-rmse = {need}.")
        test_x = model_units(test, std)
    inputs = inputs_info = None
    if opts["inputs"] is not None:
        if len(opts["inputs"]) != len(series):
            raise CLIError(f"--inputs: {len(opts['inputs'])} file(s) for {len(series)} data "
                           "file(s); give one inputs file per data file.")
        loaded = load_recordings(opts["inputs"], role="inputs", dt=dt)
        for s, u in zip(series, loaded):
            if len(u.x) != len(s.x):
                raise CLIError(f"{u.info['path']}: {len(u.x)} rows; expected {len(s.x)} like "
                               f"{s.info['path']}.")
        inputs, inputs_info = [model_units(u, None) for u in loaded], [u.info for u in loaded]
        if test is not None:
            raise CLIError("--test with --inputs: evaluating input-driven models is not "
                           "supported yet (the free runs would need test inputs).")
    val, val_info = opts["validation"], None
    if isinstance(val, str):
        v = load_recordings([val], role="validation", columns=opts["columns"],
                            like=None if emb else layout, dt=opts["dt"])[0]
        val, val_info = model_units(embed_series(v, *emb) if emb else v, std), v.info
    train = [model_units(s, std) for s in series]
    smoothing = None
    if opts.get("denoise"):
        train, smoothing = _denoised(train, [s.info["path"] for s in series])
        if isinstance(val, np.ndarray):
            (val,), rec = _denoised([val], [val_info["path"]])
            smoothing += rec
    return Prepared(series, train, test, test_x, inputs, inputs_info, std, names, dt, val, emb,
                    val_info, smoothing)


def _denoised(arrays: list, paths: list) -> tuple[list, list]:
    """`--denoise`: each array through `dsr.denoise`, and a record per file."""
    from .._denoise import denoise

    out, records = [], []
    for x, path in zip(arrays, paths):
        try:
            d = denoise(x)
        except ValueError as e:
            raise CLIError(f"{path}: --denoise: {e}") from None
        out.append(d.x)
        records.append(dict(file=path, noise=[float(v) for v in d.noise],
                            window=[int(w) for w in d.window]))
    return out, records


def build_model(opts: dict, n_obs: int, n_inputs: int, key):
    """The run's model by the constructor protocol (`_models.py`): `cls(obs_dim=N,
    latent_dim=M, key=key, **sizes)`."""
    cls = model_class(opts["model"], opts["import"])
    defaults = {o.name: o.default for o in FIT_OPTIONS}
    kw = constructor_sizes(cls, opts, n_inputs, defaults)
    def make(k, latent_dim=opts["latent_dim"] or n_obs, **sizes):
        kws = dict(kw, **sizes)
        try:
            return cls(obs_dim=n_obs, latent_dim=latent_dim, key=k, **kws)
        except (TypeError, ValueError) as e:
            raise CLIError(f"--model {opts['model']}: {cls.__qualname__}(obs_dim={n_obs}, "
                           f"latent_dim={latent_dim}, "
                           f"{', '.join(f'{k}={v}' for k, v in kws.items())}) "
                           f"fails: {str(e).splitlines()[0]}") from None

    if opts.get("sweep"):
        try:
            return build_sweep(opts, make, key)
        except ValueError as e:
            raise CLIError(f"--sweep: {e}") from None
    return make(key) if opts["runs"] == 1 else ensemble(make, opts["runs"], key=key)


def delay_embedding(opts: dict, first) -> list | None:
    """`[m, tau]` of `--delay-embed` (chosen from the first training file for `auto`)."""
    emb = opts.get("delay_embed")
    if emb != "auto":
        return emb
    from .._delay import choose_embedding

    if first.x.shape[1] != 1:
        raise CLIError(f"{first.info['path']}: --delay-embed needs one column; the file has "
                       f"{first.x.shape[1]}.")
    try:
        return list(choose_embedding(first.x[:, 0]))
    except ValueError as e:
        raise CLIError(f"--delay-embed auto: {e}") from None


def _data_record(data: Prepared) -> dict:
    return {"files": [s.info for s in data.series], "names": data.names, "dt": data.dt,
            "delay_embed": data.delay_embed,
            "test": None if data.test is None else data.test.info,
            "inputs": data.inputs_info, "validation": data.validation_info,
            "denoise": data.denoise}


def _describe(opts, data: Prepared, model) -> str:
    sweep = getattr(model, "ensemble", None) is not None  # a dsr.Sweep
    spec = model_spec(model.ensemble if sweep else model)
    hp = spec["hyperparameters"]
    runs = f", {opts['runs']} runs (one ensemble)" if opts["runs"] > 1 else ""
    steps = sum(len(s.x) for s in data.series)
    letters = {"obs_dim": "N", "latent_dim": "M", "hidden_dim": "L", "relu_units": "P",
               "input_dim": "K"}
    sizes = " ".join(f"{letters.get(k, k)}={v}" for k, v in hp.items()
                     if k != "dtype" and v is not None and not (k == "input_dim" and v == 0))
    return (f"data: {len(data.series)} file(s), {steps} time steps × {len(data.names)} "
            f"variables {data.names}" + ("; standardized" if data.std.enabled else "") +
            f"\nmodel: {spec['class']} {sizes}" + (
                "\n" + describe_sweep(opts) if sweep else runs))


def _absolute_paths(opts: dict) -> dict:
    def absolute(p):
        return None if p is None else os.path.abspath(p)

    val = opts["validation"]
    return {"data": [absolute(p) for p in opts["data"]], "test": absolute(opts["test"]),
            "validation": absolute(val) if isinstance(val, str) else val,
            "inputs": None if opts["inputs"] is None else [absolute(p) for p in opts["inputs"]]}


def _inputs_of(opts: dict) -> list:
    """Every file a fit reads."""
    val = opts["validation"]
    return (list(opts["data"] or []) + [opts["test"]] + list(opts["inputs"] or [])
            + [val if isinstance(val, str) else None])


def new_fit(flags: dict, config_path, argv) -> int:
    opts, given = resolve(FIT_OPTIONS, flags, config_path)
    check_sweep_options(opts, given)
    if not opts["data"]:
        raise CLIError("fit: give the DATA file(s) to train on (or --resume RUN_DIR).")
    if not flags.get("out"):
        raise CLIError("fit: give the run folder with --out RUN_DIR.")
    force = flags.get("force", False)
    run = RunFolder(flags["out"])
    run.check_target(force, _inputs_of(opts))  # early, before reading the data
    data = prepare_data(opts)
    opts = dict(opts, **_absolute_paths(opts))  # so that --resume works from any folder
    key_model, _, _ = run_keys(opts["seed"])
    model = build_model(opts, len(data.names), 0 if data.inputs is None
                        else data.inputs[0].shape[1], key_model)
    check_fit(model, opts, data, fit_arguments(run, opts, data, None, None), checkpoint=None)
    os.makedirs(run.path, exist_ok=True)
    with run.lock():  # every argument is checked: replace the old run (if any) and write
        run.prepare(force, _inputs_of(opts))
        cfg = {"dsr_run": CONFIG_VERSION, "created": now(), "options": opts,
               "data": _data_record(data), "standardization": data.std.as_dict(),
               "model": model_spec(getattr(model, "ensemble", model)),
               "versions": versions(), "device": device(),
               "sessions": []}
        run.write_config(dict(cfg, fit={"status": "created"}))
        run.write_array(run.context, data.train[0][:opts["context_steps"]])
        if data.inputs is not None:
            run.write_array(run.context_inputs, data.inputs[0][:opts["context_steps"]])
        print(_describe(opts, data, model))
        return train(run, cfg, opts, data, model, argv, resume_settings=None)


def fit_arguments(run: RunFolder, opts: dict, data: Prepared, resume, resume_settings) -> dict:
    """The keyword arguments of `dsr.fit` for this session (less model, data and alpha)."""
    _, key_fit, _ = run_keys(opts["seed"])
    return dict(steps=opts["steps"], seq_len=opts["seq_len"], batch_size=opts["batch_size"],
                warmup=opts["warmup"], learning_rate=opts["lr"], solver=opts["solver"],
                inputs=data.inputs, key=key_fit, progress=opts["progress"],
                checkpoint=run.checkpoint, checkpoint_every=opts["checkpoint_every"],
                resume=resume, resume_settings=resume_settings or "check",
                monitor_every=opts["monitor_every"], validation=data.validation,
                keep=opts["keep"], eval_every=opts["eval_every"],
                status_steps=opts.get("status_steps"),
                schedule=schedule_object(opts.get("lr_schedule", "cosine")),
                noise=opts.get("noise", 0.0))


def check_fit(model, opts: dict, data: Prepared, kw: dict, **override) -> None:
    """`dsr.fit`'s own argument checks (and, resuming, its checks of the checkpoint), run
    before anything is written: `make_plan` validates and compiles nothing. Its warnings
    are left to the real call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make_plan(model, data.train, opts["alpha"], FitArguments(**dict(kw, **override)))


def _check_resume_options(run, base, opts, given, mode):
    changed = sorted(k for k in given if opts[k] != base.get(k))
    fixed = [k for k in changed if k in IDENTITY]
    if fixed:
        k = fixed[0]
        raise CLIError(f"fit --resume {run.path}: --{k.replace('_', '-')} cannot change on "
                       f"resume (the run has {base.get(k)!r}); start a new run with --out.")
    training = [k for k in changed if k in TRAINING_SETTINGS]
    if training and mode == "check":
        what = ", ".join(f"--{k.replace('_', '-')} {base.get(k)!r} → {opts[k]!r}"
                         for k in training)
        raise CLIError(f"fit --resume {run.path}: {what} changes the training settings; add "
                       "--resume-settings call to continue with the new ones (the result "
                       "then differs from a run started with them) or --resume-settings "
                       "checkpoint to keep the run's.")
    if training and mode == "checkpoint":
        print(f"resume: keeping the run's {', '.join(training)} (--resume-settings checkpoint)")
        opts.update({k: base[k] for k in training})
    return training


def resume_fit(flags: dict, config_path, argv) -> int:
    run = RunFolder(flags["resume"])
    check_run_imports(run.read_config(), flags, "fit --resume", run.path)  # a run folder
    if flags.get("data"):
        raise CLIError("fit --resume: the run's data files are in its config.json; do not "
                       "give DATA.")
    with run.lock():
        return _resume(run, flags, config_path, argv)


def _resume(run: RunFolder, flags: dict, config_path, argv) -> int:
    cfg = run.read_config()  # again, under the lock
    output = {o.name for o in OUTPUT}  # per command, not inherited from the first session
    output.add("import")  # never taken from the run folder: given again (checked above)
    base = {k: v for k, v in cfg["options"].items() if k not in output}
    opts, given = resolve(FIT_OPTIONS, flags, config_path, base=base)
    mode = flags.get("resume_settings", "check")
    training = _check_resume_options(run, base, opts, given, mode)
    for rec in cfg["data"]["files"]:
        path = rec["abspath"]
        if not os.path.isfile(path):
            raise CLIError(f"{path}: the run's data file is missing (needed to resume).")
        if sha256(path) != rec["sha256"]:
            raise CLIError(f"{path}: changed since the run started (sha256 mismatch); "
                           "resume needs the same data.")
    data = prepare_data(opts)
    opts = dict(opts, **_absolute_paths(opts))  # a new --test or --validation: absolute
    if data.names != cfg["data"]["names"]:  # a run of a dsr that read other columns
        raise CLIError(f"fit --resume {run.path}: the run was trained on the variables "
                       f"{cfg['data']['names']}; its files are now read as {data.names} (an "
                       "index, time or counter column is not a variable); start a new run "
                       "with --out.")
    key_model, _, _ = run_keys(opts["seed"])
    model = build_model(opts, len(data.names), 0 if data.inputs is None
                        else data.inputs[0].shape[1], key_model)
    settings = "call" if training and mode == "call" else "check"
    check_fit(model, opts, data, fit_arguments(run, opts, data, _checkpoint_to_resume(run),
                                               settings))
    if _finished(cfg, opts) and "test" not in given:
        print(f"fit --resume {run.path}: the run is complete ({cfg['fit']['steps_done']} of "
              f"{opts['steps']} updates); nothing to train. Evaluate it with `python -m dsr "
              f"evaluate {run.path}` (or add --test FILE here), or train further with "
              "--steps N --resume-settings call.")
        return 0
    cfg["options"] = opts
    cfg["data"].update(test=None if data.test is None else data.test.info,
                       validation=data.validation_info)  # the files this session uses
    print(_describe(opts, data, model))
    return train(run, cfg, opts, data, model, argv, resume_settings=settings)


def _finished(cfg: dict, opts: dict) -> bool:
    """Whether the run's last session trained every one of `opts["steps"]` updates."""
    rec = cfg.get("fit") or {}
    return rec.get("status") == "done" and int(rec.get("steps_done", -1)) >= opts["steps"]


def _checkpoint_to_resume(run: RunFolder) -> str | None:
    return run.checkpoint if os.path.isfile(run.checkpoint) else None


def train(run, cfg, opts, data: Prepared, model, argv, resume_settings) -> int:
    """Train (or continue), then save the model, history, config and evaluation."""
    _, _, key_eval = run_keys(opts["seed"])
    resume = _checkpoint_to_resume(run) if resume_settings else None
    if resume_settings and resume is None:
        print("resume: no checkpoint yet (the run stopped before its first one); training "
              "from step 0")
    session = {"started": now(), "argv": list(argv), "resumed": resume is not None}
    cfg["sessions"].append(session)
    cfg["fit"] = dict(cfg.get("fit") or {}, status="training")
    run.write_config(cfg)
    done_before = int((cfg.get("fit") or {}).get("steps_done", 0)) if resume else 0
    t0 = time.perf_counter()
    try:
        res = fit(model, data.train, opts["alpha"],
                  **fit_arguments(run, opts, data, resume, resume_settings))
    except Exception as e:
        cfg["fit"].update(status="failed", error=str(e))
        run.write_config(cfg)
        raise
    wall = time.perf_counter() - t0
    if res.sweep is not None and opts["runs"] == 1:  # one seed: the selected model itself
        res = dataclasses.replace(res, model=res.model[0])
    save(run.model, res.model, extra={"standardization": data.std.as_dict(),
                                      "names": data.names, "dt": data.dt})
    write_history(run.history, res.history, np.atleast_2d(res.history["loss"]).shape[0])
    cfg["fit"] = fit_record(res, wall, done_before)
    if res.sweep is not None:
        cfg["fit"]["sweep"] = write_sweep(run, res)
    session.update(finished=now(), steps=cfg["fit"]["steps_done"], wall_s=wall)
    run.write_config(cfg)
    print_fit(run, cfg["fit"], done_before)
    if res.interrupted:
        print(f"interrupted: continue with `python -m dsr fit --resume {run.path}`")
        return 130
    hist = read_history(run.history)
    if data.test_x is not None:
        evaluate_and_draw(run, cfg, res.model, data.test_x, opts, data.std, data.names,
                          data.dt, key_eval, hist)
    elif opts["plots"]:
        draw_reference(run, res.model, data.train[0], opts, data.std, data.names, data.dt,
                       hist)
    return 0
