"""One writer per file: an exclusive lock beside it, naming who holds it.

`exclusive(path)` creates `<path>.lock` atomically, complete with its content (a temporary
file hard-linked into place), holding the holder's pid, host, the process's start time and a
random token, and removes it on exit
only if the token is still its own. A lock whose holder is a dead process on this host (or
whose pid now belongs to a process started later) is stale and taken over; any other lock is
reported with who holds it (`LockedError`), and nothing is written.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import socket
import time
import uuid

#: Suffix of a lock file.
SUFFIX = ".lock"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LockedError(ValueError):
    """Another process holds the lock of a file this call would write."""


def start_time(pid: int) -> float | None:
    """The start time of process `pid` in clock ticks since boot (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return float(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid, started=None) -> bool:
    """Whether process `pid` of this host still runs and is the process that started at
    `started` (`start_time`; None: not known), not a later one that was given its pid."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = start_time(pid)
    return started is None or now is None or started == now


def host() -> str:
    return socket.gethostname()


def host_tag() -> str:
    """A short tag of this host's name, for file names."""
    return hashlib.sha256(host().encode()).hexdigest()[:8]


def _tmp_prefix(path: str) -> str:
    return f".{os.path.basename(path)}.tmp-"


def temporary_name(path: str) -> str:
    """`.<name>.tmp-<host>-<pid>-<start>-<token>`, the name of a temporary file for writing
    `path`: its writer's host tag, pid and process start time (0: unknown), so a clean-up
    can prove whose it is."""
    pid = os.getpid()
    started = int(start_time(pid) or 0)
    return f"{_tmp_prefix(path)}{host_tag()}-{pid}-{started}-{secrets.token_hex(4)}"


def clean_stale_temporaries(path: str) -> list[str]:
    """Remove the temporary files (`temporary_name`) for `path` whose writer is provably gone:
    a process of this host (its host tag) that no longer runs (its pid is free, or belongs to
    a process started later). Files of other hosts, of running processes (this one included)
    and any name of another form are never touched. Returns the names removed."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    pattern = re.compile(re.escape(_tmp_prefix(path)) + r"([0-9a-f]{8})-(\d{1,10})-(\d{1,20})-"
                         r"[0-9a-f]{8}")
    removed, me = [], host_tag()
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if not m or m.group(1) != me:
            continue
        pid, started = int(m.group(2)), int(m.group(3))
        if pid == os.getpid() or alive(pid, started or None):
            continue
        try:
            os.remove(os.path.join(folder, name))
            removed.append(name)
        except OSError:
            pass
    return removed


def _alive(holder: dict) -> bool:
    """Whether the holder of a lock on this host still runs."""
    return alive(holder.get("pid"), holder.get("started"))


def _read(lock: str) -> dict | None:
    try:
        with open(lock, "rb") as f:
            holder = json.loads(f.read(4096).decode())
        return holder if isinstance(holder, dict) else {}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def _stale(holder: dict) -> bool:
    """A lock of a process of this host that no longer runs (the one rule for taking over)."""
    return holder.get("host") == host() and not _alive(holder)


def held_by(path: str | os.PathLike) -> dict | None:
    """The holder record of the lock of `path` while it is held (by a live process here, or
    by any process on another host); None when it is free or stale."""
    holder = _read(os.fspath(path) + SUFFIX)
    if holder is None or _stale(holder):
        return None
    return holder


def describe(holder: dict) -> str:
    """`process PID on HOST (since TIME)`, for messages."""
    since = holder.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(
        since, (int, float)) else "an unknown time"
    return f"process {holder.get('pid', '?')} on {holder.get('host', '?')} (since {when})"


def _create(lock: str, me: dict) -> bool:
    """Create `lock` holding `me`, atomically and with its content (a temporary file, then
    `os.link`, which fails if the lock exists), so a writer killed at any point leaves either
    no lock or a complete one. Where hard links are not supported: `O_EXCL` directly."""
    clean_stale_temporaries(lock)
    data = json.dumps(me).encode()
    tmp = os.path.join(os.path.dirname(os.path.abspath(lock)), temporary_name(lock))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, lock)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                               errno.ENOSYS):
                raise
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)
    try:  # no hard links on this file system
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return True


def acquire(path: str | os.PathLike) -> dict:
    """Take the lock of `path` or raise `LockedError`; returns the holder record (pass it to
    `release`)."""
    lock = os.fspath(path) + SUFFIX
    me = {"pid": os.getpid(), "host": host(), "started": start_time(os.getpid()),
          "since": time.time(), "token": uuid.uuid4().hex}
    for _ in range(3):
        if _create(lock, me):
            return me
        holder = _read(lock)
        if holder is None:
            continue  # released in between
        if not _stale(holder):
            raise LockedError(
                f"{os.fspath(path)}: in use by {describe(holder)} (lock file {lock}); wait for "
                f"it to finish, or delete the lock file if that process no longer runs")
        with contextlib.suppress(FileNotFoundError):
            if _read(lock) == holder:
                os.remove(lock)
    raise LockedError(f"{os.fspath(path)}: could not take the lock {lock} (contended)")


def release(path: str | os.PathLike, me: dict) -> None:
    """Remove the lock of `path` if it is still `me`'s."""
    lock = os.fspath(path) + SUFFIX
    holder = _read(lock)
    if holder is not None and holder.get("token") == me.get("token"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)


@contextlib.contextmanager
def exclusive(path: str | os.PathLike, enabled: bool = True):
    """Hold the lock of `path` for the `with` block (a no-op when not `enabled`, e.g. on
    processes other than 0 under `jax.distributed`, which write nothing)."""
    if not enabled:
        yield None
        return
    me = acquire(path)
    try:
        yield me
    finally:
        release(path, me)
