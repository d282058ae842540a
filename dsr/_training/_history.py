"""Training history: one row per update and the callback's results, kept in memory and
appended to a file beside the checkpoint.

The file (`<checkpoint>.history`) is append-only: a JSON header line (fields, members),
then records in the order they happened — `b"R"` + one row of float64 numbers
`(fields × members)` per update, `b"E"` + a 4-byte length + JSON `[step, {name: value}]` per
callback result. A checkpoint records how many bytes of records it covers and their SHA-256,
so saving a checkpoint writes only the new records (O(1) per update, not O(steps)); on resume
the covered bytes are verified and anything written after them (by a run killed later) is
cut off.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._io import NOFOLLOW, FileFormatError, fsync_folder

_ROW, _EVAL = b"R", b"E"
_HEAD_MAX = 1 << 16


class History:
    """Rows `(len(fields), n_members)` per update, plus callback results `evals`.

    Generic: the owner names the `fields` and gives the `dtypes` they have in `arrays()`
    (`{field: dtype}`; float64 where not given — the file stores every value as float64).
    `fit`'s training code declares its own (`_training._step.RECORD_DTYPES`)."""

    def __init__(self, fields: tuple[str, ...], n_members: int,
                 dtypes: Mapping[str, Any] | None = None):
        self.fields, self.n_members = tuple(fields), n_members
        self.dtypes = {f: np.dtype((dtypes or {}).get(f, np.float64)) for f in self.fields}
        self.rows: list[np.ndarray] = []
        self.evals: list[tuple[int, dict]] = []
        self._records: list[bytes] = []  # every row and eval, encoded, in order
        # (the file, records in it, their bytes, SHA-256 of them): one tuple, so an
        # interrupt never splits it
        self._saved = (None, 0, 0, hashlib.sha256())

    @property
    def row_bytes(self) -> int:
        return 8 * len(self.fields) * self.n_members

    # Every change appends or pops the encoded record first and the decoded row or result
    # last; an interrupt between the two leaves a trailing record without its row (an
    # orphan), which `truncate` and `flush` ignore. So the history is never inconsistent.

    def append(self, row: Mapping[str, Any] | np.ndarray) -> None:
        """Append one update: `{field: (n_members,) values}`, or the row `(fields, members)`
        in field order."""
        if isinstance(row, Mapping):
            missing = set(self.fields) - set(row)
            if missing:
                raise ValueError(f"history record without the fields {sorted(missing)}.")
            row = [np.asarray(row[f], np.float64).reshape(self.n_members) for f in self.fields]
        row = np.asarray(row, np.float64).reshape(len(self.fields), self.n_members)
        self._records.append(_ROW + row.tobytes())
        self.rows.append(row)

    def add_eval(self, step: int, values: dict) -> None:
        item = (int(step), {str(k): float(v) for k, v in values.items()})
        data = json.dumps(list(item)).encode()
        self._records.append(_EVAL + len(data).to_bytes(4, "little") + data)
        self.evals.append(item)

    def _complete(self) -> int:
        """The number of records that have their row or result (all but orphans)."""
        return len(self.rows) + len(self.evals)

    def truncate(self, n: int) -> None:
        """Drop the rows after the first `n` (and callback results after step `n`): what an
        interrupted update appended before its state was committed."""
        while len(self._records) > self._complete():
            self._records.pop()
        while len(self.rows) > n or (self.evals and self.evals[-1][0] > n):
            (self.rows if self._records[-1][:1] == _ROW else self.evals).pop()
            self._records.pop()

    def __len__(self) -> int:
        return len(self.rows)

    def _header(self) -> bytes:
        head = {"format": "dsr-history", "version": 2, "fields": list(self.fields),
                "members": self.n_members}
        return (json.dumps(head) + "\n").encode()

    def _saved_prefix(self, path: str, total: int) -> tuple:
        """`_saved` for the file `path` (nothing saved if it is another file), cut back to
        the first `total` records."""
        file, n, size, digest = self._saved
        if file != os.path.realpath(path):
            return 0, 0, hashlib.sha256()
        if n > total:  # records were dropped after being saved: rehash
            n = total
            body = b"".join(self._records[:n])
            size, digest = len(body), hashlib.sha256(body)
        return n, size, digest

    def flush(self, path: str) -> dict:
        """Append the records not yet in `path` (creating it, or rewriting it if it is not
        what was saved before; cutting off whatever a killed write left), fsync, and return
        what a checkpoint records: `{"bytes", "sha256", "rows", "evals"}`."""
        total = self._complete()
        n, size, digest = self._saved_prefix(path, total)
        head = self._header()
        created = not os.path.exists(path)
        with os.fdopen(open_for_writing(path, os.O_RDWR | os.O_CREAT), "r+b") as f:
            if n and (os.fstat(f.fileno()).st_size < len(head) + size or f.read(len(head))
                      != head):  # the file was replaced or cut: write it anew
                n, size, digest = 0, 0, hashlib.sha256()
            if not n:
                f.seek(0)
                f.write(head)
            f.seek(len(head) + size)
            f.truncate()
            body = b"".join(self._records[n:total])
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        if created:
            fsync_folder(os.path.dirname(os.path.abspath(path)))
        digest = digest.copy()
        digest.update(body)
        self._saved = (os.path.realpath(path), total, size + len(body), digest)
        return {"bytes": size + len(body), "sha256": digest.hexdigest(), "rows": len(self.rows),
                "evals": len(self.evals)}

    @classmethod
    def restore(cls, path: str, fields, n_members: int, record: dict,
                truncate: bool = True, dtypes: Mapping[str, Any] | None = None) -> History:
        """The history a checkpoint covers (`record`: what `flush` returned), verified; with
        `truncate` (the caller writes this file next, holding its lock) the file is cut to it
        so later appends continue it. The extent is checked against the file's size before
        anything is read."""
        size = _record_field(path, record, "bytes", int)
        try:
            with open(path, "rb") as f:
                head = f.readline(_HEAD_MAX)
                if size < 0 or len(head) + size > os.fstat(f.fileno()).st_size:
                    raise FileFormatError(
                        f"{path!r}: the history file does not match its checkpoint (expected "
                        f"{size} bytes of records, the file has fewer).")
                body = f.read(size)
        except OSError as e:
            raise FileFormatError(f"{path!r}: the checkpoint's history file cannot be read "
                                  f"({e.strerror}).") from None
        h = cls.verified(path, head, body, fields, n_members, record, dtypes)
        if truncate:
            fd = open_for_writing(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, len(head) + size)
            finally:
                os.close(fd)
        return h

    @classmethod
    def verified(cls, path: str, head: bytes, body: bytes, fields, n_members: int,
                 record: dict, dtypes: Mapping[str, Any] | None = None) -> History:
        """The history from the header line and records read from `path`, checked against a
        checkpoint's `record`."""
        h = cls(fields, n_members, dtypes)
        size, digest = (_record_field(path, record, k, t) for k, t in (("bytes", int),
                                                                       ("sha256", str)))
        if head != h._header() or len(body) != size:
            raise FileFormatError(f"{path!r}: the history file does not match its checkpoint "
                                  f"(expected {size} bytes of records of {h.fields}).")
        if hashlib.sha256(body).hexdigest() != digest:
            raise FileFormatError(f"{path!r}: history checksum mismatch (the file is damaged).")
        h._parse(path, body)
        rows, evals = (_record_field(path, record, k, int) for k in ("rows", "evals"))
        if (len(h.rows), len(h.evals)) != (rows, evals):
            raise FileFormatError(f"{path!r}: {len(h.rows)} rows and {len(h.evals)} results "
                                  f"in the history; the checkpoint expects {rows} and {evals}.")
        h._saved = (os.path.realpath(path), len(h._records), size, hashlib.sha256(body))
        return h

    def _parse(self, path: str, body: bytes) -> None:
        i, rb = 0, self.row_bytes
        while i < len(body):
            kind = body[i:i + 1]
            if kind == _ROW and i + 1 + rb <= len(body):
                rec = body[i:i + 1 + rb]
                self.rows.append(np.frombuffer(rec[1:], np.float64).reshape(
                    len(self.fields), self.n_members))
            elif kind == _EVAL and i + 5 <= len(body):
                n = int.from_bytes(body[i + 1:i + 5], "little")
                rec = body[i:i + 5 + n]
                try:
                    if len(rec) != 5 + n:
                        raise ValueError
                    step, values = json.loads(rec[5:].decode())
                    self.evals.append((int(step), {str(k): float(v) for k, v in values.items()}))
                except (ValueError, TypeError, AttributeError):
                    raise FileFormatError(f"{path!r}: a damaged callback record.") from None
            else:
                raise FileFormatError(f"{path!r}: a damaged record at byte {i} of the history.")
            self._records.append(rec)
            i += len(rec)

    def arrays(self, squeeze: bool) -> dict:
        """`{field: (K, steps) array of its dtype}` (`(steps,)` when `squeeze`: member 0's)
        and `eval`."""
        data = np.stack(self.rows, axis=-1) if self.rows else np.zeros(
            (len(self.fields), self.n_members, 0))
        out = {}
        for i, name in enumerate(self.fields):
            col = data[i].astype(self.dtypes[name], copy=False)
            out[name] = col[0] if squeeze else col
        out["eval"] = list(self.evals)
        return out


def open_for_writing(path: str, flags: int) -> int:
    """`os.open(path, flags | O_NOFOLLOW)`: a symbolic link planted at `path` is an error,
    never followed (so its target is not truncated or written)."""
    try:
        return os.open(path, flags | NOFOLLOW, 0o644)
    except OSError as e:
        if os.path.islink(path):
            raise ValueError(f"{path!r} is a symbolic link; dsr does not write through links "
                             f"(remove it, or choose another checkpoint file).") from None
        raise


def _record_field(path, record, key, kind):
    try:
        return kind(record[key])
    except (KeyError, TypeError, ValueError):
        raise FileFormatError(f"{path!r}: the checkpoint's history record is damaged.") \
            from None
