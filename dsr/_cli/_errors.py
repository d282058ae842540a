"""How the command line reports problems: one line naming the file or option, no traceback.

`CLIError` is what the CLI's own checks raise. `main` also turns the library's argument
errors (`ValueError`, `TypeError`, `dsr.FileFormatError`) and file-system errors into the
same one-line form; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

#: Exceptions reported as one line (exit code 1).
REPORTED = (ValueError, TypeError, OSError)


class CLIError(ValueError):
    """A problem with the user's input (a file, an option or a run folder)."""


def one_line(exc: BaseException) -> str:
    """The message of `exc` on one line (file-system errors with their file name)."""
    if isinstance(exc, OSError) and exc.filename and not isinstance(exc, CLIError):
        text = f"{exc.filename}: {exc.strerror or exc}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def report(exc: BaseException) -> int:
    """Print `error: <message>` to stderr; returns the exit code (1). A plain `TypeError`
    (not an argument error) may be a bug: the line says how to see the traceback."""
    hint = ""
    if isinstance(exc, TypeError) and not isinstance(exc, ValueError):
        hint = " (set DSR_DEBUG=1 for the traceback)"
    print(f"error: {one_line(exc)}{hint}", file=sys.stderr)
    return 1


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr if file is None else file)


@contextlib.contextmanager
def short_warnings():
    """Show warnings as one `warning: ...` line each (no source lines), then restore."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        old, warnings.showwarning = warnings.showwarning, _show_warning
        try:
            yield
        finally:
            warnings.showwarning = old
