"""One loaded recording (`Series`), the layout further files must match (`Layout`), and
the files' fingerprint (`sha256`)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np


@dataclasses.dataclass
class Series:
    """One loaded file: `x` (T, N) float64, column `names`, `dt` (from a data_gen set or a
    uniform time column) and `info` (path, sha256, format, shape, array key, columns) for the
    run's config."""

    x: np.ndarray
    names: list[str]
    dt: float | None
    info: dict
    lines: np.ndarray | None = None  # CSV: the file line of every row (for messages)
    named: bool = False  # the names come from a header row
    time: str | None = None  # the time column's name
    irregular: str | None = None  # why the time column gives no step (not uniform, text)
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Layout:
    """What further files must match: the variables' `names`, whether they came from a
    header (`named`: then files with a header are matched by name), and the step `dt`."""

    names: list
    named: bool
    dt: float | None = None

    @classmethod
    def of(cls, s: Series) -> Layout:
        return cls(list(s.names), s.named, s.dt)

    @classmethod
    def of_run(cls, cfg: dict) -> Layout:
        data = cfg["data"]
        first = (data.get("files") or [{}])[0]
        named = first.get("named")
        if named is None:  # a run made before this was recorded: a CSV with its own names
            named = (first.get("format") in ("csv", "txt", "tsv")
                     and data["names"] != [f"x{j}" for j in range(len(data["names"]))])
        return cls(list(data["names"]), bool(named), data.get("dt"))


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
