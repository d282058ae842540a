"""Durable files: one atomic writer and one checksummed container format.

**Writer** (`atomic_write`): the bytes go to a temporary file in the target's folder
(created with mode 0644, so the umask applies as for any new file), are flushed and
`fsync`ed, and replace the target by `os.replace`; then the folder is `fsync`ed, so after a
crash the target is either the old or the new file, never a mix. A temporary is named after
its writer (host, pid, process start time, token: `_lock.temporary_name`); those of a writer
of this host that provably no longer runs are removed the next time the same target is
written, and no other file is.

**Container** (`write_container` / `read_container`), used for models, ensembles and
checkpoints::

    DSR1 <header bytes> <header sha256> <payload bytes> <payload sha256>\\n
    <header: UTF-8 JSON, with "kind" and "format_version">
    <payload: equinox-serialized arrays>

Both checksums are verified on reading, so a truncated file or a flipped byte anywhere is
reported as a `FileFormatError` (a `ValueError`) naming the file, never loaded.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable

from . import _lock

MAGIC = b"DSR1"
FORMAT_VERSION = 1
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FIRST_LINE_MAX = 256
#: The largest header a reader accepts (a checkpoint's is a few kB).
HEADER_MAX = 1 << 24
_DIGITS = re.compile(rb"0|[1-9][0-9]{0,15}")
_HEX = re.compile(rb"[0-9a-f]{64}")


class FileFormatError(ValueError):
    """A file that is missing, damaged, truncated or not the kind of dsr file expected.

    A `ValueError` whose message names the file and what is wrong."""


def fsync_folder(folder: str) -> None:
    """`fsync` a folder, so that the files created or renamed in it are durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:  # some file systems refuse fsync on folders
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Callable) -> None:
    """Write a file through `write(f)` (f: a binary file object), atomically and durably."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a folder, not a file.")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    _lock.clean_stale_temporaries(path)  # only this host's, of writers that no longer run
    tmp = os.path.join(folder, _lock.temporary_name(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW
    try:
        with os.fdopen(os.open(tmp, flags, 0o644), "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    fsync_folder(folder)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    atomic_write(path, lambda f: f.write(data))


# ------------------------------------------------------------------------------ container


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def encode_container(kind: str, header: dict, payload: bytes) -> bytes:
    head = dict(header, kind=kind, format_version=FORMAT_VERSION)
    hbytes = json.dumps(head, sort_keys=True, allow_nan=True).encode()
    first = b"%s %d %s %d %s\n" % (MAGIC, len(hbytes), _sha(hbytes).encode(), len(payload),
                                   _sha(payload).encode())
    return first + hbytes + b"\n" + payload


def write_container(path: str | os.PathLike, kind: str, header: dict, payload: bytes) -> None:
    """Write `header` (JSON-serializable) and `payload` as one checksummed file."""
    write_bytes(path, encode_container(kind, header, payload))


def read_container(path: str | os.PathLike, kinds: Iterable[str]) -> tuple[dict, bytes]:
    """Read and verify a container; `kinds`: the kinds the caller accepts. The lengths in
    the first line are checked against the file's size (and the header's against
    `HEADER_MAX`) before the rest is read, so a damaged length never allocates."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileFormatError(f"{path!r} is a folder, not a dsr file.")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno())
            if not stat.S_ISREG(size.st_mode):
                raise FileFormatError(f"{path!r} is not a regular file.")
            head = f.read(_FIRST_LINE_MAX)
            start, hlen, plen, *_ = _first_line(path, head)
            _check_extent(path, start, hlen, plen, size.st_size)
            data = head + f.read(size.st_size - len(head) + 1)
    except FileNotFoundError:
        raise FileFormatError(f"{path!r}: no such file.") from None
    except OSError as e:
        raise FileFormatError(f"{path!r} cannot be read: {e.strerror}.") from None
    return decode_container(path, data, kinds)


def _check_extent(path: str, start: int, hlen: int, plen: int, size: int) -> None:
    """The header and payload lengths of the first line against the file's `size`."""
    if start + hlen + 1 + plen != size:
        raise FileFormatError(f"{path!r} is truncated or has extra bytes: expected a "
                              f"{hlen}-byte header and a {plen}-byte payload.")


def decode_container(path: str, data: bytes, kinds: Iterable[str]) -> tuple[dict, bytes]:
    """Verify and split the bytes of a container read from `path` (named in errors)."""
    kinds = tuple(kinds)
    header, payload = _decode(path, data)
    if header.get("kind") not in kinds:
        raise FileFormatError(_wrong_kind(path, header.get("kind"), kinds))
    return header, payload


def _first_line(path: str, data: bytes) -> tuple[int, int, int, bytes, bytes]:
    """`(start of the header, header length, payload length, header sha, payload sha)`."""
    if not data:
        raise FileFormatError(f"{path!r} is empty.")
    end = data.find(b"\n", 0, _FIRST_LINE_MAX)
    fields = data[:end].split(b" ") if end > 0 else []
    if len(fields) != 5 or fields[0] != MAGIC:
        raise FileFormatError(f"{path!r} is not a dsr file (no valid 'DSR1' header line).")
    if not (_DIGITS.fullmatch(fields[1]) and _DIGITS.fullmatch(fields[3])
            and _HEX.fullmatch(fields[2]) and _HEX.fullmatch(fields[4])):
        raise FileFormatError(f"{path!r}: damaged header line (the file is damaged).")
    hlen = int(fields[1])
    if hlen > HEADER_MAX:
        raise FileFormatError(f"{path!r}: the header line gives a header of {hlen} bytes, "
                              f"beyond the {HEADER_MAX >> 20} MiB limit (the file is damaged).")
    return end + 1, hlen, int(fields[3]), fields[2], fields[4]


def _parse_header(path: str, hbytes: bytes, digest: bytes) -> dict:
    if _sha(hbytes).encode() != digest:
        raise FileFormatError(f"{path!r}: header checksum mismatch (the file is damaged).")
    try:
        header = json.loads(hbytes.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise FileFormatError(f"{path!r}: the header is not valid JSON.") from None
    version = header.get("format_version") if isinstance(header, dict) else None
    if version != FORMAT_VERSION:
        raise FileFormatError(f"{path!r}: unsupported format version {version!r} (this dsr "
                              f"reads version {FORMAT_VERSION}).")
    return header


def _decode(path: str, data: bytes) -> tuple[dict, bytes]:
    start, hlen, plen, hsha, psha = _first_line(path, data)
    hbytes = data[start:start + hlen]
    payload = data[start + hlen + 1:]
    if len(hbytes) != hlen or len(payload) != plen or data[start + hlen:start + hlen + 1] != b"\n":
        raise FileFormatError(f"{path!r} is truncated or has extra bytes: expected a "
                              f"{hlen}-byte header and a {plen}-byte payload.")
    header = _parse_header(path, hbytes, hsha)
    if _sha(payload).encode() != psha:
        raise FileFormatError(f"{path!r}: payload checksum mismatch (the file is damaged).")
    return header, payload


def read_kind(path: str | os.PathLike) -> str | None:
    """The kind of an existing dsr file (its header verified, its payload not read), or None
    if `path` is not a readable, undamaged dsr file."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_FIRST_LINE_MAX)
            start, hlen, plen, hsha, _ = _first_line(path, head)
            _check_extent(path, start, hlen, plen, size)
            f.seek(start)
            return _parse_header(path, f.read(hlen), hsha).get("kind")
    except (OSError, FileFormatError):
        return None


_KIND_HINT = {
    "model": "a model saved by dsr.save (open it with dsr.load)",
    "ensemble": "an ensemble saved by dsr.save (open it with dsr.load)",
    "checkpoint": "a training checkpoint (continue it with dsr.fit(..., resume=path))",
}


def _wrong_kind(path, kind, kinds) -> str:
    what = _KIND_HINT.get(kind, f"a dsr file of kind {kind!r}")
    want = " or ".join(kinds)
    return f"{path!r} is {what}; expected a {want} file."
