"""Files: models, ensembles and checkpoints in the checksummed container, the appendable
history file — a damaged byte anywhere is detected, foreign files get one clear error,
writes are atomic with normal permissions, a checkpoint costs O(parameters)."""

import functools
import hashlib
import inspect
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._training import _checkpoint, _history
from dsr import _io, _lock
from dsr._training._arguments import FitArguments
from dsr._training._setup import make_plan
from dsr._training._history import History
from dsr._training._trainer import HISTORY_FIELDS, Trainer
from fault_worker import ALPHA, FIT_KW, make_model
from test_reliability import STEPS, X, assert_same, copy_checkpoint, fit, make_base

MASKS = (0x01, 0xFF)  # the lowest bit, and every bit, of each byte


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_base(tmp_path_factory.mktemp("base"))


def damaged_copies(data: bytes):
    """`(position, bytes)` with one byte changed, for every position and mask."""
    for i in range(len(data)):
        for mask in MASKS:
            yield i, data[:i] + bytes([data[i] ^ mask]) + data[i + 1:]


def _every_flip_detected(label, good: bytes, decode):
    """`decode(bytes)` must reject every damaged copy of `good` (in memory: the readers
    below are the ones `load` and `fit(resume=...)` apply to the file's bytes)."""
    decode(good)
    for i, bad in damaged_copies(good):
        try:
            decode(bad)
        except dsr.FileFormatError as e:
            assert label in str(e), (i, str(e))
        else:
            raise AssertionError(f"a changed byte at {i} of {len(good)} was not detected")


def _flip_on_disk(path, data: bytes, spots, read):
    """Flip single bytes of the file at `path` and check that `read()` names it."""
    for i in spots:
        with open(path, "wb") as f:
            f.write(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
        with pytest.raises(dsr.FileFormatError, match=str(path)):
            read()
    with open(path, "wb") as f:
        f.write(data)


def _spots(data: bytes):
    """A byte of each region: the magic, the header line's numbers and checksums, the JSON
    header, the payload, the last byte."""
    first = data.index(b"\n")
    return sorted({1, 6, first - 3, first + 5, (first + len(data)) // 2, len(data) - 1})


def test_flipped_byte_anywhere_in_a_model_or_ensemble_is_detected(tmp_path):
    ens = dsr.Ensemble.from_members([make_model(), make_model()])
    for name, m in (("model.eqx", make_model()), ("ensemble.eqx", ens)):
        path = tmp_path / name
        dsr.save(path, m, extra={"mean": [0.5, 1.5]})
        good = path.read_bytes()
        decode = functools.partial(_io.decode_container, str(path), kinds=("model", "ensemble"))
        _every_flip_detected(str(path), good, decode)
        _flip_on_disk(path, good, _spots(good), functools.partial(dsr.load, path))
    back = dsr.load(tmp_path / "model.eqx")  # (an ensemble's round trip: test_ensemble.py)
    assert_same(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(make_model()))


def test_flipped_byte_anywhere_in_a_checkpoint_or_its_history_is_detected(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    hist = _checkpoint.history_path(ck)
    rec = _checkpoint.read_header(ck)[0]["history"]
    good, good_hist = Path(ck).read_bytes(), Path(hist).read_bytes()
    _every_flip_detected(ck, good, lambda b: _io.decode_container(ck, b, ("checkpoint",)))

    def history(b):
        end = b.find(b"\n") + 1 or len(b)  # the header line, as `readline` splits it
        return History.verified(hist, b[:end], b[end:], tuple(rec["fields"]), 1, rec)

    _every_flip_detected(hist, good_hist, history)
    # through `fit` itself, for a byte of each region of both files
    resume = lambda: fit(resume=ck, checkpoint=ck)  # noqa: E731
    _flip_on_disk(ck, good, _spots(good), resume)
    _flip_on_disk(hist, good_hist, _spots(good_hist), resume)
    assert fit(resume=ck, checkpoint=ck).history["loss"].shape == (STEPS,)


def test_truncated_or_extended_files_are_detected(base, tmp_path):
    path = tmp_path / "m.eqx"
    dsr.save(path, make_model())
    good = path.read_bytes()
    for n in list(range(len(good))) + [len(good) + 1]:  # in memory, then a few on disk
        with pytest.raises(dsr.FileFormatError, match=str(path)):
            _io.decode_container(str(path), good[:n] if n < len(good) else good + b"\0",
                                 ("model",))
    for n in (0, 3, 100, len(good) - 1, len(good) + 1):
        path.write_bytes(good[:n] if n < len(good) else good + b"\0")
        with pytest.raises(dsr.FileFormatError, match=str(path)):
            dsr.load(path)
    ck = copy_checkpoint(base, tmp_path / "ck")
    hist = _checkpoint.history_path(ck)
    full = Path(hist).read_bytes()
    with open(hist, "wb") as f:
        f.write(full[:-1])
    with pytest.raises(dsr.FileFormatError, match="does not match its checkpoint"):
        fit(resume=ck)
    os.remove(hist)
    with pytest.raises(dsr.FileFormatError, match="history file cannot be read"):
        fit(resume=ck)


def test_foreign_files_get_one_clear_error_each(base, tmp_path):
    rng = np.random.default_rng(0)
    model_path = tmp_path / "model.eqx"
    dsr.save(model_path, make_model())
    files = {
        "random": (rng.bytes(3000), "not a dsr file"),
        "empty": (b"", "is empty"),
        "text": (b"hello\nworld\n", "not a dsr file"),
        "long_line": (b"DSR1" + b"x" * 1000, "not a dsr file"),
        "bad_numbers": (b"DSR1 1e3 " + b"0" * 64 + b" 5 " + b"0" * 64 + b"\n", "damaged header"),
    }
    buf = io.BytesIO()
    eqx.tree_serialise_leaves(buf, make_model())  # the old, unchecked format
    files["equinox"] = (buf.getvalue(), "not a dsr file")
    np.savez(tmp_path / "data.npz", x=X)
    files["npz"] = ((tmp_path / "data.npz").read_bytes(), "not a dsr file")
    head = b'{"format_version": 9, "kind": "model"}'  # valid checksums, a later version
    sha = lambda b: hashlib.sha256(b).hexdigest().encode()  # noqa: E731
    files["version"] = (b"DSR1 %d %s 0 %s\n" % (len(head), sha(head), sha(b"")) + head + b"\n",
                        "unsupported format version 9")
    for name, (data, match) in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        for load in (dsr.load, lambda p: fit(resume=p)):
            with pytest.raises(dsr.FileFormatError, match=match) as e:
                load(path)
            assert str(path) in str(e.value)
    # valid checksums, wrong content
    _io.write_container(tmp_path / "nonsense", "model", {"class": "Nope"}, b"")
    with pytest.raises(dsr.FileFormatError, match="does not describe a dsr model"):
        dsr.load(tmp_path / "nonsense")
    header, _ = _io.read_container(model_path, ("model",))
    _io.write_container(tmp_path / "other", "model", header, dsr._serialization.serialize(
        make_model(4)))
    with pytest.raises(dsr.FileFormatError, match="do not match the structure"):
        dsr.load(tmp_path / "other")
    # the wrong kind of dsr file, each way round; folders and missing files
    with pytest.raises(dsr.FileFormatError, match="training checkpoint.*resume=path"):
        dsr.load(base)
    with pytest.raises(dsr.FileFormatError, match="saved by dsr.save.*dsr.load"):
        fit(resume=model_path)
    with pytest.raises(dsr.FileFormatError, match="folder"):
        dsr.load(tmp_path)
    with pytest.raises(dsr.FileFormatError, match="no such file"):
        dsr.load(tmp_path / "missing.eqx")
    assert issubclass(dsr.FileFormatError, ValueError)


def test_checkpoint_file_arguments_are_checked_before_training(tmp_path):
    with pytest.raises(ValueError, match="`checkpoint`.*is a folder"):
        fit(checkpoint=tmp_path)
    np.savez(tmp_path / "data.npz", x=X)
    with pytest.raises(ValueError, match="`checkpoint`.*not a dsr checkpoint; refusing"):
        fit(checkpoint=tmp_path / "data.npz")
    assert np.load(tmp_path / "data.npz")["x"].shape == X.shape  # untouched
    model_path = tmp_path / "m.eqx"
    dsr.save(model_path, make_model())
    with pytest.raises(ValueError, match="`checkpoint`.*not a dsr checkpoint"):
        fit(checkpoint=model_path)


def test_permissions_follow_the_umask(base, tmp_path):
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        old = os.umask(umask)
        try:
            folder = tmp_path / oct(umask)
            folder.mkdir()
            dsr.save(folder / "m.eqx", make_model())
            ck = str(folder / "run.ckpt")
            fit(checkpoint=ck, checkpoint_every=STEPS, callback=_stop(1), eval_every=1)
        finally:
            os.umask(old)
        for f in ("m.eqx", "run.ckpt", "run.ckpt.history"):
            assert os.stat(folder / f).st_mode & 0o777 == mode, (f, oct(umask))


def _stop(n):
    def cb(step, model):
        if step == n:
            raise KeyboardInterrupt
    return cb


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temporaries_are_removed_and_failed_writes_leave_none(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    host = _lock.host_tag()  # temporaries name their writer: host, pid, start time, token
    stale = tmp_path / f".run.ckpt.tmp-{host}-{_dead_pid()}-0-0123abcd"
    live = tmp_path / f".run.ckpt.tmp-{host}-{os.getpid()}-0-0123abcd"  # a writer still running
    other = tmp_path / f".other.tmp-{host}-{_dead_pid()}-0-0123abcd"  # not this file's
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    fit(resume=ck, checkpoint=ck)
    assert not stale.exists() and live.exists() and other.exists()
    # a write that fails half-way leaves the old file and no temporary
    target = tmp_path / "t.bin"
    _io.write_bytes(target, b"old")

    def half(f):
        f.write(b"new, half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _io.atomic_write(target, half)
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == sorted(
        [live.name, other.name, "run.ckpt", "run.ckpt.history", "t.bin"])


def _trainer(tmp_path) -> Trainer:
    """A started `Trainer` of the small run (nothing compiled), checkpointing to tmp_path."""
    kw = {k: p.default for k, p in inspect.signature(dsr.fit).parameters.items()
          if p.default is not inspect.Parameter.empty and k != "alpha"}
    kw.update(FIT_KW, steps=STEPS, checkpoint=str(tmp_path / "cost.ckpt"))
    trainer = Trainer(make_plan(make_model(), X, ALPHA, FitArguments(**kw)))
    trainer.start()
    return trainer


class _CountingFile:
    """A file object that counts the bytes read from and written to it."""

    def __init__(self, f, counts):
        self._f, self._counts = f, counts

    def read(self, *a):
        out = self._f.read(*a)
        self._counts["read"] += len(out)
        return out

    def write(self, b):
        self._counts["written"] += len(b)
        return self._f.write(b)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)


def checkpoint_cost(tmp_path, steps: int, monkeypatch, repeats: int = 3):
    """Bytes 3 checkpoints after `steps` updates read and write (history and container), the
    checkpoint's size, the history file's size before, and what the save appended to it
    (history rows of the run's shape; the last checkpoint `steps - 1` updates in). Counted,
    not timed: the work is deterministic, a wall clock on a shared machine is not."""
    trainer = _trainer(tmp_path)
    row = np.zeros((len(HISTORY_FIELDS), 1))
    for _ in range(steps - 1):
        trainer.history.append(row)
    trainer.state = eqx.tree_at(lambda s: s.step, trainer.state, jnp.asarray(steps - 1, jnp.int32))
    trainer.save()  # the checkpoint before: all but one row on disk
    ck, hist = trainer.checkpoint_path, _checkpoint.history_path(trainer.checkpoint_path)
    counts = {"read": 0, "written": 0}
    fdopen = os.fdopen
    monkeypatch.setattr(_history.os, "fdopen",
                        lambda *a, **k: _CountingFile(fdopen(*a, **k), counts))
    for _ in range(repeats):
        trainer.history.append(row)
        trainer.state = eqx.tree_at(lambda s: s.step, trainer.state, trainer.state.step + 1)
        before = os.path.getsize(hist)
        trainer.save()
    monkeypatch.undo()
    cost = (counts["read"] + counts["written"], os.path.getsize(ck), before,
            os.path.getsize(hist) - before)
    shutil.rmtree(tmp_path)
    return cost


def test_checkpoint_cost_does_not_grow_with_the_steps(tmp_path, monkeypatch):
    small = checkpoint_cost(tmp_path / "a", 100, monkeypatch)
    large = checkpoint_cost(tmp_path / "b", 10_000, monkeypatch)
    print(f"checkpoint at step 100: {small[0]} B I/O (3 saves), {small[1]} B + {small[3]} B "
          f"history; at step 10,000: {large[0]} B I/O, {large[1]} B + {large[3]} B "
          f"history (history file {large[2]} B)")
    assert large[3] == small[3]  # one history record appended
    assert abs(large[1] - small[1]) <= 16  # the same container (the step has more digits)
    # the save's file I/O (history and container) does not grow with the history's length
    # (3 saves; the step has more digits in the container's header) ...
    assert small[0] > 0 and abs(large[0] - small[0]) <= 3 * 16
    assert large[2] > 10 * large[0]  # ... and is far less than rewriting the history would be


def test_history_records_by_name_are_the_rows_of_the_file(tmp_path):
    """A record of named fields is stored as the float64 row of those fields in order (the
    file format of positional rows), and `arrays` gives each field the owner's dtype."""
    named, rows = (History(("loss", "n", "ok"), 2, {"n": np.int64, "ok": np.bool_})
                   for _ in range(2))
    named.append({"ok": [True, False], "loss": np.float32([0.5, 1.25]), "n": [3, 4]})
    rows.append(np.array([[0.5, 1.25], [3, 4], [1, 0]]))
    a, b = named.flush(str(tmp_path / "a.history")), rows.flush(str(tmp_path / "b.history"))
    assert a == b and (tmp_path / "a.history").read_bytes() == (tmp_path / "b.history").read_bytes()
    out = named.arrays(squeeze=False)
    assert out["n"].dtype == np.int64 and out["ok"].dtype == bool and out["loss"].dtype == np.float64
    assert out["ok"].tolist() == [[True], [False]] and out["n"].tolist() == [[3], [4]]
    with pytest.raises(ValueError, match="without the fields"):
        named.append({"loss": [0.0, 0.0]})
