"""`python -m dsr generate RUN_DIR --steps n [--context FILE] --out FILE.npy`.

The model is warmed up on the context — a recording in the training data's units and
columns (`--context FILE`), or by default the first `context_steps` training steps kept in
the run folder — and then runs freely for `n` steps. The output is in the recording's
original units (`--standardized`: the model's units): `(n, N)` for one model, `(K, n, N)`
for an ensemble of K (`--member i`: that member only, `(n, N)`). A model with external
inputs needs `--inputs S` for the generated steps (and `--context-inputs` with `--context`).

`--out` (and `<out>_channel.npy` of a delay-embedded run) never replaces an existing file
without `--force`, and never — even with `--force` — an input of the run (its training
recordings, test, validation and inputs files, and this call's context and inputs files) or
a file inside a run folder (compared by `os.path.realpath`, so links count too).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from .._ensemble import Ensemble
from .. import _lock
from .._generate import generate
from .._serialization import load
from ._data import Layout, Standardization, embed_series, load_recordings, model_units
from ._errors import CLIError
from ._models import check_run_imports
from ._converters import integer
from ._run import RunFolder


def _run_inputs(cfg: dict, flags: dict) -> list[str]:
    """Every file the run read (as recorded) and this call reads."""
    data = cfg.get("data") or {}
    opts = cfg.get("options") or {}
    recs = list(data.get("files") or []) + list(data.get("inputs") or []) + [
        data.get("test"), data.get("validation"), (cfg.get("evaluation") or {}).get("test")]
    paths = [r.get("abspath") for r in recs if isinstance(r, dict)]
    val = opts.get("validation")
    paths += list(opts.get("data") or []) + list(opts.get("inputs") or []) + [
        opts.get("test"), val if isinstance(val, str) else None]
    paths += [flags.get(k) for k in ("context", "inputs", "context_inputs")]
    return [os.fspath(p) for p in paths if isinstance(p, (str, os.PathLike))]


def _enclosing_run(path: str) -> str | None:
    """The run folder that holds `path` (at any depth), or None."""
    folder = os.path.dirname(path)
    while True:
        if RunFolder(folder).is_run():
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def check_output(out: str, run: RunFolder, cfg: dict, flags: dict) -> None:
    """Refuse to write `out` over a file the user owns (see the module docstring)."""
    real = os.path.realpath(out)
    for p in _run_inputs(cfg, flags):
        if os.path.realpath(p) == real:
            raise CLIError(f"--out {out}: is {p}, an input of the run {run.path}; refusing to "
                           "overwrite it (even with --force); choose another file name.")
    holder = _enclosing_run(real)
    if holder is not None:
        raise CLIError(f"--out {out}: inside the run folder {holder}, whose files belong to "
                       "the run; refusing to write there (even with --force); choose a file "
                       "outside it.")
    if os.path.isdir(out):
        raise CLIError(f"--out {out}: is a folder; give a file name ending in .npy.")
    if os.path.lexists(out) and not flags.get("force"):
        raise CLIError(f"--out {out}: exists; pass --force to overwrite it.")


def _context(run: RunFolder, cfg: dict, path, std: Standardization, dtype) -> np.ndarray:
    if path is None:
        if not os.path.isfile(run.context):
            raise CLIError(f"{run.path}: no stored context (context.npy); pass --context FILE.")
        return np.load(run.context)
    keys = cfg["options"].get("key") or [None, None]
    emb = cfg["data"].get("delay_embed")
    s = load_recordings([path], role="test", columns=cfg["options"].get("columns"),
                        key=keys[-1], like=None if emb else Layout.of_run(cfg))[0]
    return model_units(embed_series(s, *emb) if emb else s, std, dtype)


def _read_inputs(model, path, n: int, flag: str, like):
    if path is None:
        raise CLIError(f"generate: the model takes {model.input_dim} external inputs; give "
                       f"them with {flag} FILE.")
    u = load_recordings([path], role="inputs", like=like)[0]
    if u.x.shape[1] != model.input_dim or len(u.x) < n:
        raise CLIError(f"{path}: shape {tuple(u.x.shape)}; expected at least {n} rows of "
                       f"{model.input_dim} inputs.")
    return model_units(u, None, jax.tree_util.tree_leaves(model)[0].dtype)[:n]


def _inputs(run: RunFolder, cfg: dict, model, flags: dict, n: int, n_context: int):
    """`(inputs for the generated steps, inputs for the context)`, or Nones; a file with a
    header is matched by name to the training inputs when those had one."""
    if not model.input_dim:
        if flags.get("inputs") or flags.get("context_inputs"):
            raise CLIError("--inputs: the model takes no external inputs.")
        return None, None
    first = ((cfg["data"].get("inputs") or [{}])[0])
    like = (Layout(first["columns"], bool(first.get("named")), cfg["data"].get("dt"))
            if first.get("columns") else None)
    s = _read_inputs(model, flags.get("inputs"), n, "--inputs", like)
    if flags.get("context") is None:
        cs = np.load(run.context_inputs)
    else:
        cs = _read_inputs(model, flags.get("context_inputs"), n_context, "--context-inputs",
                          like)
    return jnp.asarray(s), jnp.asarray(cs)


def run_generate(flags: dict) -> int:
    run = RunFolder(flags["run_dir"])
    cfg = run.read_config()
    check_run_imports(cfg, flags, "generate", run.path)
    n = integer(1)("--steps", flags["steps"])
    out = os.fspath(flags["out"])
    if not out.endswith(".npy"):
        raise CLIError(f"--out {out}: the output is a NumPy file; give a name ending in .npy.")
    outs = [out] + ([out[:-4] + "_channel.npy"] if cfg["data"].get("delay_embed") else [])
    for o in outs:  # before any work
        check_output(o, run, cfg, flags)
    std = Standardization.from_dict(cfg["standardization"])
    model = load(run.model)
    if "member" in flags:
        if not isinstance(model, Ensemble):
            raise CLIError("--member: the run holds one model, not an ensemble.")
        i = integer(0)("--member", flags["member"])
        if i >= len(model):
            raise CLIError(f"--member {i}: the ensemble has {len(model)} members (0.."
                           f"{len(model) - 1}).")
        model = model[i]
    one = model[0] if isinstance(model, Ensemble) else model
    dtype = jax.tree_util.tree_leaves(one)[0].dtype
    ctx = _context(run, cfg, flags.get("context"), std, dtype)
    s, cs = _inputs(run, cfg, one, flags, n, len(ctx))
    x = generate(model, n, context=jnp.asarray(ctx, dtype), inputs=s, context_inputs=cs)
    x = np.asarray(x, np.float64)
    if not flags.get("standardized"):
        x = std.invert(x)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with _lock.exclusive(out):  # one writer; the checks again, right before writing
        for o in outs:
            check_output(o, run, cfg, flags)
        run.write_array(out, x)
        if len(outs) > 1:  # the original channel is column 0 of the embedding
            run.write_array(outs[1], x[..., 0])
    if len(outs) > 1:
        channel = outs[1]
        print(f"generate: {channel}, shape {x[..., 0].shape} (the original channel "
              f"{cfg['data']['names'][0]})")
    units = "model (standardized)" if flags.get("standardized") else "original"
    print(f"generate: {out}, shape {x.shape} ({units} units; warmed up on {len(ctx)} context "
          "steps)")
    return 0
