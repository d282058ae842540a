"""The library's files under faults and hostile input: headers checked before anything is
allocated, a checkpoint saved on every exception that leaves the training loop, one writer
per checkpoint (a lock; process 0 only under `jax.distributed`), temporary-file clean-up that
removes only provably dead writers' files, symbolic links never written through.

The fast tests use the small run of `test_reliability.py` (one compiled step); the
multi-process ones are `-m slow`.
"""

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr._training import _checkpoint, _history, _trainer
from dsr import _io, _lock, _serialization, _sharding
from fault_worker import ALPHA, FIT_KW, arrays, make_model
from test_reliability import ROOT, STEPS, X, assert_same, copy_checkpoint, fit, make_base

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def reference():
    return arrays(fit())


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_base(tmp_path_factory.mktemp("base"))


def _rewrite(path, kind, header, payload):
    """Write a container with valid checksums (what a crafted or re-checksummed file is)."""
    _io.write_container(path, kind, header, payload)


def _one_line_error(call, match, exc=dsr.FileFormatError, limit=2.0):
    """`call()` raises `exc` with a one-line message matching `match`, quickly (nothing big
    allocated or compiled; `limit` in seconds)."""
    t = time.perf_counter()
    with pytest.raises(exc, match=match) as e:
        call()
    assert time.perf_counter() - t < limit
    assert "\n" not in str(e.value)
    return e.value


def _step(ck):
    return _checkpoint.read_header(ck)[0]["step"]


# ------------------------------------------------------------------ 1. headers before allocation


@pytest.mark.parametrize("kind,key,value,match", [
    ("model", "hidden_dim", 10**10, "describes 2000000.* bytes of arrays but the payload"),
    ("model", "latent_dim", 10**30, "bytes of arrays but the payload"),
    ("model", "hidden_dim", -1, "does not describe a dsr model"),
    ("model", "rank", 2.5, "does not describe a dsr model"),
    ("model", "hidden_dim", 3, "stored arrays do not match.*shape"),  # small, but not the payload
    ("ensemble", "members", 10**12, "bytes of arrays but the payload"),
    ("ensemble", "members", 0, "does not describe a dsr model"),
])
def test_crafted_model_header_is_rejected_before_allocating(tmp_path, kind, key, value, match):
    small = dsr.ShPLRNN(2, 2, 2, key=jax.random.key(0), dtype=jnp.float32)
    model = dsr.Ensemble.from_members([small, small]) if kind == "ensemble" else small
    path = tmp_path / "m.eqx"
    dsr.save(path, model)
    header, payload = _io.read_container(path, (kind,))
    if key == "members":
        header["members"] = value
    else:
        header["hyperparameters"][key] = value
    _rewrite(path, kind, header, payload)
    assert os.path.getsize(path) < 3000  # a small file claiming a huge model
    err = _one_line_error(lambda: dsr.load(path), match)
    assert str(path) in str(err)


@pytest.mark.parametrize("field,value,match", [
    (1, b"9999999999999999", "header of 9999999999999999 bytes, beyond the 16 MiB limit"),
    (1, b"16777217", "beyond the 16 MiB limit"),
    (3, b"9999999999999999", "truncated or has extra bytes"),
])
def test_container_lengths_are_bounded_before_reading(base, tmp_path, field, value, match):
    for src, kinds in ((None, ("model",)), (base, ("checkpoint",))):
        path = tmp_path / f"f{len(kinds)}"
        if src is None:
            dsr.save(path, make_model())
        else:
            path.write_bytes(open(src, "rb").read())
        data = path.read_bytes()
        end = data.index(b"\n")
        fields = data[:end].split(b" ")
        fields[field] = value
        path.write_bytes(b" ".join(fields) + data[end:])
        _one_line_error(lambda: _io.read_container(path, kinds), match)
        assert _io.read_kind(path) is None
    _one_line_error(lambda: dsr.load(tmp_path / "f1"), match)
    _one_line_error(lambda: fit(resume=tmp_path / "f1", steps=0), match)


def test_crafted_array_header_in_the_payload_allocates_nothing(tmp_path):
    """A payload (checksums recomputed) whose first `.npy` header claims 10^15 elements."""
    import io

    model = make_model()
    path = tmp_path / "m.eqx"
    dsr.save(path, model)
    header, payload = _io.read_container(path, ("model",))
    buf = io.BytesIO(payload)
    version = np.lib.format.read_magic(buf)
    shape, _, dtype = np.lib.format.read_array_header_1_0(buf) if version == (1, 0) else \
        np.lib.format.read_array_header_2_0(buf)
    rest = payload[buf.tell() + int(np.prod(shape)) * dtype.itemsize:]
    crafted = io.BytesIO()
    np.lib.format.write_array_header_1_0(crafted, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**5, 10**5, 10**5)})
    _rewrite(path, "model", header, crafted.getvalue() + b"\0" * 64 + rest)
    _one_line_error(lambda: dsr.load(path), r"stored arrays do not match.*\(100000, 100000")
    # bytes after the last array
    _rewrite(path, "model", header, payload + b"\0" * 8)
    _one_line_error(lambda: dsr.load(path), "8 bytes after the last array")


def test_crafted_checkpoint_header_is_rejected_before_allocating(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    header, payload = _checkpoint.read_header(ck)
    good = dict(header, history=dict(header["history"]))
    header["history"]["bytes"] = 10**16  # the history extent: checked against the file size
    _rewrite(ck, "checkpoint", header, payload)
    _one_line_error(lambda: fit(resume=ck, checkpoint=ck), "does not match its checkpoint",
                    limit=5.0)  # (after the optimizer's initial state: eager, slow on a busy CPU)
    # a payload for another structure: each array header is checked against the call's
    other = _serialization.serialize((make_model(4), 0))
    _rewrite(ck, "checkpoint", good, other)
    _one_line_error(lambda: fit(resume=ck, checkpoint=ck), "stored arrays do not match",
                    limit=5.0)
    _rewrite(ck, "checkpoint", good, payload)
    assert fit(resume=ck, checkpoint=ck).history["loss"].shape == (STEPS,)


# --------------------------------------------------------- 2. a checkpoint on every exception


def _raise_at(n, error):
    def callback(step, model):
        if step == n:
            raise error
    return callback


def test_callback_that_raises_saves_a_checkpoint_first(reference, tmp_path):
    ck = tmp_path / "run.ckpt"
    with pytest.raises(RuntimeError, match="callback failed") as e:
        fit(checkpoint=ck, checkpoint_every=100, callback=_raise_at(7, RuntimeError(
            "callback failed")), eval_every=1)
    assert _step(ck) == 7
    assert any("checkpoint saved to" in n and "step 7" in n for n in e.value.__notes__)
    assert_same(arrays(fit(resume=ck, checkpoint=ck)), reference)
    assert not os.path.exists(str(ck) + ".lock")


def test_out_of_memory_in_the_free_run_monitor_saves_a_checkpoint_first(reference, tmp_path,
                                                                        monkeypatch):
    calls = []
    real = _trainer.generate

    def generate(*a, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying "
                                             "to allocate 80000000000 bytes.")
        return real(*a, **kw)

    monkeypatch.setattr(_trainer, "generate", generate)
    ck = tmp_path / "run.ckpt"
    with pytest.raises(jax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
        fit(checkpoint=ck, checkpoint_every=100, monitor_every=4)
    assert _step(ck) == 4 and calls == [1]
    monkeypatch.setattr(_trainer, "generate", real)
    assert_same(arrays(fit(resume=ck, checkpoint=ck)), reference)


@pytest.mark.parametrize("persistent", [False, True])
def test_enospc_on_the_history_file_saves_what_it_can_and_raises_it(reference, tmp_path,
                                                                    monkeypatch, persistent):
    """The 2nd history append fails half-written (ENOSPC); transient: the save after the
    error succeeds at that step; persistent: that save fails too and the original error is
    raised, the checkpoint before it intact."""
    real, calls = _history.History.flush, []

    def flush(self, path):
        calls.append(path)
        if len(calls) == 2 or (persistent and len(calls) > 2):
            with open(path, "ab") as f:
                f.write(b"R\x01\x02")  # a partial record, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(self, path)

    monkeypatch.setattr(_history.History, "flush", flush)
    ck = tmp_path / "run.ckpt"
    with pytest.raises(OSError) as e:
        fit(checkpoint=ck, checkpoint_every=4)
    assert e.value.errno == errno.ENOSPC  # the original error, not the failed save's
    notes = " ".join(e.value.__notes__)
    if persistent:
        assert _step(ck) == 4 and "failed too (OSError" in notes
    else:
        assert _step(ck) == 8 and "checkpoint saved to" in notes
    monkeypatch.setattr(_history.History, "flush", real)
    assert_same(arrays(fit(resume=ck, checkpoint=ck)), reference)


def test_resume_without_checkpoint_keeps_writing_the_resumed_file(reference, base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: this is the documented default
        res = dsr.fit(make_model(), X, ALPHA, **{**FIT_KW, "steps": STEPS}, resume=ck)
    assert res.checkpoint == ck and _step(ck) == STEPS
    assert_same(arrays(res), reference)
    # an exception after resuming is saved into the resumed file too (at step STEPS: the
    # base is at STEPS - 1, and the loop never reached its final save)
    ck2 = copy_checkpoint(base, tmp_path / "b")
    with pytest.raises(ZeroDivisionError):
        fit(resume=ck2, callback=_raise_at(STEPS, ZeroDivisionError()), eval_every=1)
    assert _step(ck2) == STEPS


def test_resume_through_a_link_without_checkpoint_warns_and_writes_nothing(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path / "real")
    os.makedirs(tmp_path / "links")
    for suffix in ("", ".history"):
        os.symlink(ck + suffix, tmp_path / "links" / f"run.ckpt{suffix}")
    before = {p: open(p, "rb").read() for p in (ck, ck + ".history")}
    with pytest.warns(UserWarning, match="continued without a checkpoint because it.*link"):
        res = dsr.fit(make_model(), X, ALPHA, **{**FIT_KW, "steps": STEPS},
                      resume=tmp_path / "links" / "run.ckpt")
    assert res.checkpoint is None
    assert {p: open(p, "rb").read() for p in before} == before
    assert sorted(os.listdir(tmp_path / "links")) == ["run.ckpt", "run.ckpt.history"]


# ----------------------------------------------------------------- 3. one writer per checkpoint

_HOLDER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("lock", sys.argv[1])
lock = importlib.util.module_from_spec(spec); spec.loader.exec_module(lock)
with lock.exclusive(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""


def _hold_lock(path):
    """Another process holding the lock of `path` (only `_lock.py` loaded: starts fast)."""
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, _lock.__file__, str(path)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_fit_on_a_locked_checkpoint_refuses_naming_the_holder(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    before = {p: open(p, "rb").read() for p in (ck, ck + ".history")}
    holder = _hold_lock(os.path.realpath(ck))
    try:
        for kw in (dict(checkpoint=ck), dict(resume=ck), dict(resume=ck, checkpoint=ck)):
            err = _one_line_error(lambda: fit(**kw), f"in use by process {holder.pid} on "
                                  f"{socket.gethostname()}", _lock.LockedError)
            assert isinstance(err, ValueError)
        # another spelling of the same file (a relative path through its folder) is the same
        rel = os.path.relpath(ck)
        _one_line_error(lambda: fit(checkpoint=rel), "in use by process", _lock.LockedError)
    finally:
        holder.kill()  # SIGKILL: the lock file stays behind, stale
        holder.wait()
    assert {p: open(p, "rb").read() for p in before} == before  # nothing written
    assert os.path.exists(ck + ".lock")
    assert fit(resume=ck).history["loss"].shape == (STEPS,)  # the stale lock is taken over
    assert not os.path.exists(ck + ".lock")


def test_a_lock_appears_complete_or_not_at_all(tmp_path, monkeypatch):
    """A writer stopped between writing the lock's content and linking it into place leaves
    no lock (and its temporary is removed); without hard links, `O_EXCL` is used."""
    path = tmp_path / "run.ckpt"

    def stopped(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", stopped)
    with pytest.raises(KeyboardInterrupt):
        _lock.acquire(path)
    assert os.listdir(tmp_path) == []
    left = tmp_path / f".run.ckpt.lock.tmp-{_lock.host_tag()}-{_dead_pid()}-0-0123abcd"
    left.write_bytes(b"{}")  # as SIGKILL at that point would leave it

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    with _lock.exclusive(path):
        holder = json.loads(open(str(path) + ".lock").read())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert os.listdir(tmp_path) == ["run.ckpt.lock"]  # the dead writer's temporary: gone
    assert os.listdir(tmp_path) == []


def test_processes_other_than_0_never_touch_the_files(base, tmp_path, monkeypatch):
    ck0 = copy_checkpoint(base, tmp_path)
    with open(ck0 + ".history", "ab") as f:
        f.write(b"R garbage a killed writer left")  # process 0 would cut this off
    stale = tmp_path / f".run.ckpt.tmp-{_lock.host_tag()}-{_dead_pid()}-0-0123abcd"
    stale.write_bytes(b"partial")
    def files():
        return {p: (os.path.getsize(tmp_path / p), os.stat(tmp_path / p).st_mtime_ns)
                for p in os.listdir(tmp_path)}

    before = files()
    monkeypatch.setattr(_sharding, "process_index", lambda: 1)
    res = fit(resume=ck0, checkpoint=ck0)
    assert res.history["loss"].shape == (STEPS,)
    fresh = tmp_path / "new" / "run.ckpt"
    fit(checkpoint=fresh, callback=_raise_at(3, KeyboardInterrupt), eval_every=1)
    assert not (tmp_path / "new").exists()  # not even the folder
    assert files() == before  # the history not cut, the stale temporary kept, no lock


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temporary_clean_up_removes_only_provably_dead_writers_files(tmp_path):
    target = tmp_path / "run.ckpt"
    me, dead = _lock.host_tag(), _dead_pid()
    parent = os.getppid()
    started = int(_lock.start_time(parent) or 0)
    assert started  # Linux: /proc gives a process's start time
    names = {
        f".run.ckpt.tmp-{me}-{dead}-0-00000001": True,  # a dead local writer
        f".run.ckpt.tmp-{me}-{dead}-123-00000002": True,
        f".run.ckpt.tmp-{me}-{parent}-{started + 1}-00000003": True,  # pid reused since
        f".run.ckpt.tmp-{me}-{parent}-{started}-00000004": False,  # that writer still runs
        f".run.ckpt.tmp-{me}-{parent}-0-00000005": False,  # running, start unknown
        f".run.ckpt.tmp-{me}-{os.getpid()}-0-00000006": False,  # this process's own
        f".run.ckpt.tmp-0badc0de-{dead}-0-00000007": False,  # another host's
        f".run.ckpt.tmp-{dead}-0123abcd": False,  # an older form: whose is unknown
        f".run.ckpt.tmp-{me}-{dead}-0-00000008.x": False,  # not a temporary of this form
        f".other.ckpt.tmp-{me}-{dead}-0-00000009": False,  # another file's
    }
    for n in names:
        (tmp_path / n).write_bytes(b"partial")
    removed = _lock.clean_stale_temporaries(str(target))
    assert sorted(removed) == sorted(n for n, gone in names.items() if gone)
    assert sorted(os.listdir(tmp_path)) == sorted(n for n, gone in names.items() if not gone)
    # the writer's own temporary names it: host, pid, start time
    _io.write_bytes(target, b"x")
    name = _lock.temporary_name(str(target))
    started = int(_lock.start_time(os.getpid()))
    assert name.startswith(f".run.ckpt.tmp-{me}-{os.getpid()}-{started}-")


# ---------------------------------------------------------------------------- 4. links, identity


def test_a_planted_symlink_is_never_written_through(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"the user's data\n" * 100)
    ck = tmp_path / "run.ckpt"
    os.symlink(victim, str(ck) + ".history")
    _one_line_error(lambda: fit(checkpoint=ck), "run.ckpt.history' is a symbolic link",
                    ValueError)
    os.remove(str(ck) + ".history")
    os.symlink(victim, ck)
    _one_line_error(lambda: fit(checkpoint=ck), "run.ckpt' is a symbolic link", ValueError)
    # the guard at the open itself (a link planted after the checks): O_NOFOLLOW
    h = _history.History(("a",), 1)
    h.append(np.zeros((1, 1)))
    link = tmp_path / "late.history"
    os.symlink(victim, link)
    with pytest.raises(ValueError, match="is a symbolic link"):
        h.flush(str(link))
    assert victim.read_bytes() == b"the user's data\n" * 100


def test_checkpoint_identity_is_the_real_path(base, tmp_path, monkeypatch):
    ck = copy_checkpoint(base, tmp_path / "real")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    monkeypatch.chdir(tmp_path)
    kw = {**FIT_KW, "steps": STEPS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not "holds the checkpoint of an earlier run"
        dsr.fit(make_model(), X, ALPHA, resume=os.path.join("alias", "..", "real", "run.ckpt"),
                checkpoint=ck, **kw)
        dsr.fit(make_model(), X, ALPHA, resume=ck, checkpoint=tmp_path / "alias" / "run.ckpt",
                **kw)
    assert _step(ck) == STEPS
    holder = _hold_lock(os.path.realpath(ck))
    try:
        _one_line_error(lambda: fit(checkpoint=tmp_path / "alias" / "run.ckpt"),
                        "in use by process", _lock.LockedError)
    finally:
        holder.stdin.close()
        holder.wait()


def test_resuming_into_another_file_leaves_the_source_as_it_is(reference, base, tmp_path):
    """A checkpoint resumed into another file is only read: bytes beyond its extent in the
    history (a running writer's next append) are not cut off."""
    src = copy_checkpoint(base, tmp_path / "a")
    with open(src + ".history", "ab") as f:
        f.write(b"R in flight")
    before = {p: open(p, "rb").read() for p in (src, src + ".history")}
    with pytest.warns(UserWarning, match="earlier run"):  # b holds another run's checkpoint
        dst = copy_checkpoint(base, tmp_path / "b")
        res = dsr.fit(make_model(), X, ALPHA, **{**FIT_KW, "steps": STEPS}, resume=src,
                      checkpoint=dst)
    assert_same(arrays(res), reference)
    assert {p: open(p, "rb").read() for p in before} == before


# ----------------------------------------------------------------- 5. processes, jax.distributed

DIST_WORKER = os.path.join(HERE, "distributed_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_jax_distributed_two_processes_write_one_checkpoint_and_resume_reproduces(tmp_path):
    """Two processes (one CPU device each) under `jax.distributed` train one ensemble of 3
    members sharded over both (padded to 4), stopped by Ctrl-C at step STOP; only process 0
    wrote (checkpoint, history, lock); resuming the checkpoint in one process reproduces the
    one-process run."""
    import distributed_worker as w

    ck, port = tmp_path / "shared" / "ens.ckpt", _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=1",
               PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, DIST_WORKER, str(i), str(port), str(ck),
                               str(tmp_path / f"out{i}.npz"), str(tmp_path / f"log{i}.json")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for i in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    logs = [json.load(open(tmp_path / f"log{i}.json")) for i in range(2)]
    assert logs[0]["process_count"] == logs[1]["process_count"] == 2
    assert logs[0]["devices"] == logs[1]["devices"] == 2
    assert logs[1]["writes"] == [] and logs[1]["locks"] == []  # process 1 touched nothing
    n_saves = len(range(w.EVERY, w.STOP, w.EVERY)) + 1  # periodic, then on the interrupt
    kinds = [k for k, _ in logs[0]["writes"]]
    assert kinds.count("container") == kinds.count("history") == n_saves
    assert {p for _, p in logs[0]["writes"]} == {str(ck), str(ck) + ".history"}
    assert logs[0]["locks"] == [os.path.realpath(ck)]
    assert sorted(os.listdir(ck.parent)) == ["ens.ckpt", "ens.ckpt.history"]
    assert _step(ck) == w.STOP
    two = [np.load(tmp_path / f"out{i}.npz") for i in range(2)]
    np.testing.assert_array_equal(two[0]["loss"], two[1]["loss"])  # gathered to both
    # one process, one device: the same run, stopped at the same step
    one = w.run(str(tmp_path / "one.ckpt"), stop=True)
    got = [two[0][f"leaf{i}"] for i in range(len(w.leaves(one)))]
    for u, v in zip(got, w.leaves(one)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-13)
    # the two-process checkpoint (its 4th, padded member dropped) resumed in one process
    # reproduces the one-process run to the end
    full = w.run(None)
    resumed = w.run(str(ck), resume=str(ck))
    for u, v in zip(w.leaves(resumed), w.leaves(full)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(resumed.history["loss"], full.history["loss"], rtol=1e-10)
    assert _step(ck) == w.STEPS


@pytest.mark.slow
def test_two_fit_processes_on_one_checkpoint_the_second_refuses(tmp_path):
    """A checkpointing `fit` running in another process: `fit` here on its checkpoint
    refuses at once naming it; the first finishes and equals the uninterrupted run."""
    steps = 40
    ck, out, go = tmp_path / "run.ckpt", tmp_path / "out.npz", tmp_path / "go"
    env = dict(os.environ, JAX_PLATFORMS="cpu", FAULT_WORKER_WAIT=str(go),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_worker.py"), str(ck),
                          str(out), str(steps), str(tmp_path / "cache")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for _ in range(2):  # after "step 2", the checkpoint of step 1 is on disk (and the
            assert p.stdout.readline().startswith("step")  # worker waits for `go`)
        for kw in (dict(resume=ck, checkpoint=ck), dict(checkpoint=ck)):
            with pytest.raises(_lock.LockedError, match=f"in use by process {p.pid}"):
                fit(steps=steps, **kw)
        go.write_bytes(b"")
        rest = p.stdout.read()
        assert p.wait(timeout=600) == 0 and "done" in rest
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    with np.load(out) as f:
        got = [f[f"arr_{i}"] for i in range(len(f.files))]
    assert_same(got, arrays(fit(steps=steps)))
    assert_same(arrays(fit(resume=ck, steps=steps)), got)
    assert not os.path.exists(str(ck) + ".lock")
