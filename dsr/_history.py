"""Training history: one row per update, kept in memory and appended to a file.

The file beside a checkpoint (`<checkpoint>.history`) is append-only: a JSON header line
(fields, members), then fixed-size rows of float64 numbers `(fields × members)`. A
checkpoint records how many rows it covers and the SHA-256 of those rows, so saving a
checkpoint costs O(new rows), not O(steps); on resume the rows are verified and anything
written after the checkpoint (e.g. by a run killed later) is cut off.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ._io import FileFormatError


class History:
    """Rows `(len(fields), n_members)` per update, plus callback results `evals`."""

    def __init__(self, fields: tuple[str, ...], n_members: int):
        self.fields, self.n_members = tuple(fields), n_members
        self.rows: list[np.ndarray] = []
        self.evals: list = []
        # (rows in the file, SHA-256 of them): one tuple, so an interrupt never splits it
        self._saved = (0, hashlib.sha256())

    @property
    def row_bytes(self) -> int:
        return 8 * len(self.fields) * self.n_members

    def append(self, row: np.ndarray) -> None:
        self.rows.append(np.asarray(row, np.float64).reshape(len(self.fields), self.n_members))

    def truncate(self, n: int) -> None:
        """Keep the first `n` rows in memory (the file is cut at the next `flush`)."""
        del self.rows[n:]

    def __len__(self) -> int:
        return len(self.rows)

    def _header(self) -> bytes:
        return (json.dumps({"fields": list(self.fields), "members": self.n_members}) + "\n").encode()

    def flush(self, path: str) -> tuple[int, str]:
        """Write the rows not yet in `path` after its saved ones (creating it, and cutting off
        whatever a killed write left), fsync, and return the number of rows and the SHA-256
        of all of them."""
        saved, digest = self._saved
        saved = min(saved, len(self.rows))
        if saved < self._saved[0]:  # rows were dropped after an interrupt: rehash
            digest = hashlib.sha256(b"".join(r.tobytes() for r in self.rows[:saved]))
        if saved and not os.path.exists(path):  # the file went missing: write it anew
            saved, digest = 0, hashlib.sha256()
        body = b"".join(r.tobytes() for r in self.rows[saved:])
        head = self._header()
        with open(path, "r+b" if saved else "wb") as f:
            f.write(head)
            f.seek(len(head) + saved * self.row_bytes)
            f.truncate()
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        digest = digest.copy()
        digest.update(body)
        self._saved = (len(self.rows), digest)
        return len(self.rows), digest.hexdigest()

    @classmethod
    def restore(cls, path: str, fields, n_members: int, n_rows: int, digest: str) -> History:
        """The first `n_rows` rows of `path`, verified against `digest`; the file is cut to
        them so later appends continue it."""
        h = cls(fields, n_members)
        try:
            with open(path, "rb") as f:
                header = f.readline()
                body = f.read(n_rows * h.row_bytes)
        except OSError as e:
            raise FileFormatError(f"{path!r}: the checkpoint's history file cannot be read "
                                  f"({e.strerror}).") from None
        if header != h._header() or len(body) != n_rows * h.row_bytes:
            raise FileFormatError(f"{path!r}: the history file does not match its checkpoint "
                                  f"(expected {n_rows} rows of {h.fields}).")
        if hashlib.sha256(body).hexdigest() != digest:
            raise FileFormatError(f"{path!r}: history checksum mismatch (the file is damaged).")
        with open(path, "r+b") as f:
            f.truncate(len(header) + len(body))
        h.rows = list(np.frombuffer(body, np.float64).reshape(n_rows, len(h.fields), n_members))
        h._saved = (n_rows, hashlib.sha256(body))
        return h

    def arrays(self, squeeze: bool) -> dict:
        """`{field: (K, steps) array}` (`(steps,)` when `squeeze`; `wall_time`, shared by the
        members, always `(steps,)`) and `eval`."""
        data = np.stack(self.rows, axis=-1) if self.rows else np.zeros(
            (len(self.fields), self.n_members, 0))
        out = {}
        for i, name in enumerate(self.fields):
            col = data[i]
            if name in ("converged", "applied", "fallback", "alpha_raised"):
                col = col.astype(bool)
            elif name == "newton_iters":
                col = col.astype(np.int64)
            out[name] = col[0] if squeeze or name == "wall_time" else col
        out["eval"] = list(self.evals)
        return out
