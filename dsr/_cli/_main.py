"""`python -m dsr`: the command line (parser and dispatch)."""

from __future__ import annotations

import argparse
import os
import sys

from ._errors import REPORTED, report, short_warnings
from ._models import MODELS
from ._options import EVAL_OPTIONS, FIT_OPTIONS, RESUME_SETTINGS, Option

DESCRIPTION = """\
Dynamical-systems reconstruction from your own recordings (T × N time series).

commands:
  fit       train a model (or --runs K of them) on DATA; writes a run folder
  evaluate  measure a run on test data (D_stsp, D_H, RMSE(n), λ_max; pictures)
  generate  run a trained model freely after a context; writes a .npy
"""

EPILOG = """\
examples:
  python -m dsr fit rec.csv --test rec_test.csv --runs 4 --steps 2000 --out runs/rec
  python -m dsr fit --config fit.toml --steps 5000 --out runs/rec   # flags override the file
  python -m dsr fit --resume runs/rec                               # after an interruption
  python -m dsr evaluate runs/rec --test other_test.csv
  python -m dsr generate runs/rec --steps 10000 --context rec_test.csv --out gen.npy

python -m dsr COMMAND --help shows every option with its default (the library's).
"""

GROUPS = {"data": "data", "model": "model", "training": "training",
          "evaluation": "evaluation (with --test, or the evaluate command)",
          "output": "output"}


def _default_text(o: Option) -> str:
    if o.name == "model":
        return f" (default: {o.default}; one of {', '.join(MODELS)} or MODULE:CLASS)"
    return "" if o.default is None else f" (default: {o.default})"


def _add_options(parser: argparse.ArgumentParser, options: list[Option]) -> None:
    groups = {}
    for o in options:
        if o.group not in groups:
            groups[o.group] = parser.add_argument_group(GROUPS[o.group])
        g = groups[o.group]
        help_text = o.help + _default_text(o)
        if o.positional:
            g.add_argument(o.dest, nargs="*", metavar=o.metavar, help=help_text)
        elif o.flag:
            g.add_argument(o.long, dest=o.dest, action=argparse.BooleanOptionalAction,
                           help=help_text)
        else:
            g.add_argument(o.long, dest=o.dest, metavar=o.metavar or o.name.upper(),
                           nargs="+" if o.name in ("inputs", "sweep") else None, help=help_text)


def _run_dir_command(sub, name: str, summary: str, description: str):
    p = sub.add_parser(name, help=summary, description=description,
                       argument_default=argparse.SUPPRESS)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--import", dest="import", metavar="MODULE", type=_modules,
                   help="modules to import (comma-separated): the run's own --import, needed "
                   "for a run of a model class defined outside dsr")
    return p


def _modules(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m dsr", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                argument_default=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    fit = sub.add_parser("fit", help="train on DATA, write a run folder",
                         argument_default=argparse.SUPPRESS,
                         description="Train a model (or --runs K as one ensemble) on DATA; "
                         "write RUN_DIR with config.json, model.eqx, checkpoint, history.csv, "
                         "metrics.json (with --test) and plots/.")
    fit.add_argument("--out", metavar="RUN_DIR", help="the run folder to create")
    fit.add_argument("--config", metavar="FILE", help="settings file (.toml or .json); flags "
                     "override it")
    fit.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from "
                     "its checkpoint")
    fit.add_argument("--resume-settings", dest="resume_settings", choices=RESUME_SETTINGS,
                     help="on --resume, when a flag changes a training setting: check (an "
                     "error, the default), call (use the new value), checkpoint (keep the "
                     "run's)")
    fit.add_argument("--force", action="store_true", help="replace the run in --out (only a dsr "
                     "run or an empty folder is replaced; checked after every argument)")
    _add_options(fit, FIT_OPTIONS)
    ev = _run_dir_command(sub, "evaluate", "measure a run on test data",
                          "Evaluate every member of the run in RUN_DIR on TEST: metrics.json "
                          "(per member and median ± MAD) and plots/.")
    ev.add_argument("--test", metavar="TEST", help="test recording (default: the run's)")
    ev.add_argument("--config", metavar="FILE", help="settings file (.toml or .json)")
    _add_options(ev, EVAL_OPTIONS)
    gen = _run_dir_command(sub, "generate", "free-running orbit from a trained run",
                           "Warm the run's model up on a context, run it freely for --steps "
                           "steps, save the orbit as .npy (original units).")
    gen.add_argument("--steps", required=True, metavar="N", help="steps to generate")
    gen.add_argument("--out", required=True, metavar="FILE.npy", help="output file")
    gen.add_argument("--context", metavar="FILE", help="recording to warm up on (default: "
                     "the start of the training data)")
    gen.add_argument("--member", metavar="I", help="only member I of an ensemble")
    gen.add_argument("--inputs", metavar="S", help="external inputs for the generated steps")
    gen.add_argument("--context-inputs", dest="context_inputs", metavar="S", help="external "
                     "inputs during --context (default with the stored context: the "
                     "training inputs)")
    gen.add_argument("--standardized", action="store_true", help="output in the model's "
                     "(standardized) units")
    gen.add_argument("--force", action="store_true", help="replace an existing --out file (never "
                     "an input of the run or a file inside a run folder)")
    return p


def _dispatch(args: dict, argv) -> int:
    from ._evaluate import run_evaluate
    from ._fit import new_fit, resume_fit
    from ._generate import run_generate

    command = args.pop("command", None)
    if command == "fit":
        if args.get("data") == []:
            args.pop("data")
        config = args.pop("config", None)
        return (resume_fit if "resume" in args else new_fit)(args, config, argv)
    if command == "evaluate":
        return run_evaluate(args, args.pop("config", None))
    return run_generate(args)


def main(argv: list[str] | None = None) -> int:
    """Run `python -m dsr ARGS`; returns the exit code (0 ok, 1 error, 2 usage, 130
    interrupted). Problems with the input are one `error: ...` line on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = vars(parser.parse_args(argv))
    except SystemExit as e:  # --help (0) or a usage error (2), already printed
        return int(e.code or 0)
    if not args.get("command"):
        parser.print_help()
        return 2
    with short_warnings():
        try:
            return _dispatch(args, argv)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except REPORTED as e:
            if os.environ.get("DSR_DEBUG"):
                raise
            return report(e)
