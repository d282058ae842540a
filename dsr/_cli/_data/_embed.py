"""A one-column recording as its delay embedding (`--delay-embed`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._errors import CLIError
from ._series import Series


def embed_series(s: Series, m: int, tau: int) -> Series:
    """A one-column recording as its delay embedding `(x_t, x_{t-τ}, …, x_{t-(m-1)τ})`
    (column 0 is the original channel; rows start at `t = (m-1)τ`)."""
    from ...metrics import delay_embed

    if s.x.shape[1] != 1:
        raise CLIError(f"{s.info['path']}: --delay-embed needs one column; the file has "
                       f"{s.x.shape[1]} {s.names} (pick one with --columns).")
    if len(s.x) <= (m - 1) * tau + 1:
        raise CLIError(f"{s.info['path']}: {len(s.x)} rows; --delay-embed {m},{tau} needs "
                       f"more than {(m - 1) * tau + 1}.")
    name = s.names[0]
    names = [f"{name}(t)"] + [f"{name}(t-{j * tau})" for j in range(1, m)]
    return dataclasses.replace(s, x=np.asarray(delay_embed(s.x, m, tau)), names=names,
                               lines=None if s.lines is None else s.lines[(m - 1) * tau:])
