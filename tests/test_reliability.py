"""Reliability of training: interrupts at every point of an update, SIGKILL during
checkpoint writes, resume checks before compilation, `resume_settings`.

One small float64 run (`fault_worker.py`: shPLRNN 3-3-8, 12 updates, checkpoint after every
update) serves every test, so the training step is compiled once per test process.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

import jax
import numpy as np
import pytest

import dsr
from dsr import _checkpoint, _fit, _io, _trainer
from fault_worker import ALPHA, FIT_KW, arrays, data, make_model

X = data()
STEPS = 12
WORKER = os.path.join(os.path.dirname(__file__), "fault_worker.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(dsr.__file__)))


def fit(model=None, x=None, alpha=ALPHA, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fit interrupted after ..."
        return dsr.fit(make_model() if model is None else model, X if x is None else x,
                       alpha, **{**FIT_KW, "steps": STEPS, **kw})


def stop_at(n):
    def callback(step, model):
        if step == n:
            raise KeyboardInterrupt
    return callback


def assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def temporaries(folder):
    return [f for f in os.listdir(folder) if ".tmp-" in f]


@pytest.fixture(scope="module")
def reference():
    """Model arrays and loss history of the uninterrupted run."""
    return arrays(fit())


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A checkpoint of the run at step STEPS - 1 (saved on an interrupt)."""
    ck = tmp_path_factory.mktemp("base") / "run.ckpt"
    res = fit(checkpoint=ck, checkpoint_every=1, callback=stop_at(STEPS - 1), eval_every=1)
    assert res.interrupted and _checkpoint.read_header(ck)[0]["step"] == STEPS - 1
    return ck


def copy_checkpoint(ck, folder):
    os.makedirs(folder, exist_ok=True)
    for src in (ck, _checkpoint.history_path(ck)):
        shutil.copy(src, folder)
    return os.path.join(folder, os.path.basename(ck))


def test_resume_equals_uninterrupted(reference, base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    res = fit(resume=ck, checkpoint=ck)
    assert_same(arrays(res), reference)
    assert res.history["loss"].shape == (STEPS,) and not temporaries(tmp_path)


# ----------------------------------------------------------------- interrupts at every point

# The modules whose state an update changes (pure helpers they call — `to_host`,
# `from_stack` — are interrupted at their call), and the end of the window: `_result`, which
# only reads the finished run.
TRACED = {os.path.join(os.path.dirname(dsr.__file__), f) for f in (
    "_fit.py", "_trainer.py", "_checkpoint.py", "_history.py", "_io.py", "_serialization.py",
    "_signals.py")}
END = _fit._result.__code__


class Injector:
    """Raises `KeyboardInterrupt` at the `at`-th line (or bytecode) event in the training
    modules, counted from the start of the first `Trainer.step` to the call of `_result` —
    as a Ctrl-C arriving at exactly that point would. Tracing starts there (`arm`), on the
    frames already running (`_loop`, `fit`) and on every new one."""

    def __init__(self, at: int, opcodes: bool):
        self.at, self.opcodes = at, opcodes
        self.count, self.armed, self.where = 0, False, None

    def arm(self, frame):
        self.armed = True
        while frame is not None:
            if frame.f_code.co_filename in TRACED:
                frame.f_trace, frame.f_trace_opcodes = self.local, self.opcodes
            frame = frame.f_back
        sys.settrace(self.new_frame)

    def new_frame(self, frame, event, arg):
        if frame.f_code is END:
            self.armed = False
        if frame.f_code.co_filename not in TRACED:
            return None
        frame.f_trace_opcodes = self.opcodes
        return self.local

    def local(self, frame, event, arg):
        if self.armed and event == ("opcode" if self.opcodes else "line"):
            self.count += 1
            if self.count == self.at:
                self.where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                raise KeyboardInterrupt(f"injected at {self.where}")
        return self.local


def _interrupted_run(base, folder, injector):
    """Resume `base` (step STEPS - 1) for the last update with `injector` armed at its start;
    returns the checkpoint path and whether `fit` returned (else the interrupt escaped)."""
    ck = copy_checkpoint(base, folder)
    step = _trainer.Trainer.step

    def traced_step(self):
        if not injector.armed:
            injector.arm(sys._getframe(1))
        return step(self)

    _trainer.Trainer.step = traced_step
    try:
        fit(resume=ck, checkpoint=ck, checkpoint_every=1)
        returned = True
    except KeyboardInterrupt:
        returned = False
    finally:
        sys.settrace(None)
        _trainer.Trainer.step = step
    return ck, returned


def _interrupt_everywhere(reference, base, tmp_path, opcodes):
    # The last update of the run, its checkpoint, the loop's end and the final save: count
    # the points, then interrupt at each one and resume (every resume, not a sample).
    counter = Injector(0, opcodes)
    _interrupted_run(base, tmp_path / "count", counter)
    n = counter.count
    assert n > (500 if opcodes else 80)
    t0 = time.perf_counter()
    steps_seen, escaped = set(), 0
    for at in range(1, n + 1):
        inj = Injector(at, opcodes)
        ck, returned = _interrupted_run(base, tmp_path / str(at), inj)
        assert inj.where is not None
        escaped += not returned
        steps_seen.add(_checkpoint.read_header(ck)[0]["step"])
        res = fit(resume=ck, checkpoint=ck)
        try:
            assert_same(arrays(res), reference)
        except AssertionError as e:
            raise AssertionError(f"resume after an interrupt at {inj.where} differs") from e
        assert not temporaries(os.path.dirname(ck)), inj.where
        shutil.rmtree(tmp_path / str(at))
    assert steps_seen == {STEPS - 1, STEPS}  # interrupts before and after the commit
    print(f"{n} interrupt points ({'bytecodes' if opcodes else 'lines'}), {escaped} escaped "
          f"fit (interrupt after the loop), {time.perf_counter() - t0:.1f} s")
    return n, escaped


def test_interrupt_at_every_line_of_an_update_resumes_bit_exactly(reference, base, tmp_path):
    _interrupt_everywhere(reference, base, tmp_path, opcodes=False)


@pytest.mark.slow
def test_interrupt_at_every_bytecode_of_an_update_resumes_bit_exactly(reference, base,
                                                                      tmp_path):
    _interrupt_everywhere(reference, base, tmp_path, opcodes=True)


# ----------------------------------------------------------------------- SIGKILL / SIGTERM


@pytest.fixture(scope="module")
def jax_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("jax_cache"))


def _start(ck, out, steps, cache):
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, WORKER, str(ck), str(out), str(steps), cache],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)


def _wait_for_steps(p, n):
    """Read `n` "step" lines (False if the worker ended first); returns the read times."""
    times = []
    while len(times) < n:
        line = p.stdout.readline()
        if not line or not line.startswith("step"):
            return None
        times.append(time.perf_counter())
    return times


def _after_kill(folder, ck, stats):
    """Note what the kill interrupted: a container write (a temporary left) or the window
    between the history append and the checkpoint's rename (history beyond the header)."""
    stats["temporary_left"] += bool(temporaries(folder))
    if os.path.exists(ck):
        header, _ = _checkpoint.read_header(ck)
        covered = header["history"]["bytes"]
        with open(_checkpoint.history_path(ck), "rb") as f:
            head = f.readline()
        size = os.path.getsize(_checkpoint.history_path(ck)) - len(head)
        stats["history_ahead"] += size > covered


def kill_and_resume(folder, n_kills, steps, cache, seed):
    """Run the worker, killing it `n_kills` times at random points (SIGKILL; every fourth a
    SIGTERM) and restarting it, until it finishes; returns its arrays and statistics."""
    rng = np.random.default_rng(seed)
    ck, out = folder / "run.ckpt", folder / "out.npz"
    stats = dict(kills=0, sigterm=0, lives=0, temporary_left=0, history_ahead=0)
    period = 0.05  # seconds per update, updated from the worker's output
    while True:
        stats["lives"] += 1
        p = _start(ck, out, steps, cache)
        times = _wait_for_steps(p, int(rng.integers(1, 3))) if stats["kills"] < n_kills else None
        if times is None:
            assert p.wait(timeout=600) == 0 and os.path.exists(out), "the worker failed"
            break
        if len(times) > 1:
            period = times[-1] - times[-2]
        time.sleep(rng.uniform(0.0, 1.5 * period))
        term = stats["kills"] % 4 == 3
        p.send_signal(signal.SIGTERM if term else signal.SIGKILL)
        p.wait(timeout=600)
        p.stdout.close()
        stats["kills"] += 1
        stats["sigterm"] += term
        _after_kill(folder, ck, stats)
    with np.load(out) as f:
        got = [f[f"arr_{i}"] for i in range(len(f.files))]
    assert stats["kills"] == n_kills, stats
    assert not temporaries(folder), os.listdir(folder)
    return got, stats


def test_killed_fit_resumes_bit_exactly(reference, jax_cache, tmp_path):
    got, stats = kill_and_resume(tmp_path, 3, STEPS, jax_cache, seed=0)
    assert_same(got, reference)


@pytest.mark.slow
def test_killed_fit_resumes_bit_exactly_20_kills(jax_cache, tmp_path):
    steps = 50
    ref = arrays(fit(steps=steps))
    got, stats = kill_and_resume(tmp_path, 20, steps, jax_cache, seed=1)
    print("fault test:", stats)
    assert_same(got, ref)


# ------------------------------------------------------------------------- resume checks


def _raises_fast(match, **kw):
    t = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        fit(**kw)
    assert time.perf_counter() - t < 1.0


def test_resume_checks_before_compiling(base):
    # another model shape / class / ensemble: caught from the header, in well under a second
    _raises_fast("latent_dim: checkpoint 3, call 4", model=make_model(4), resume=base)
    lssm = dsr.LSSM(3, 3, 8, key=jax.random.key(0), dtype=np.float64)
    _raises_fast("model class: checkpoint ShPLRNN, call LSSM", model=lssm, resume=base)
    ens = dsr.ensemble(lambda k: make_model(), 2, key=jax.random.key(0))
    _raises_fast("members: checkpoint a single model, call an ensemble of 2", model=ens,
                 resume=base)
    _raises_fast("data: the training data", x=X * 1.0001, resume=base)
    # every differing setting is listed
    with pytest.raises(ValueError) as e:
        fit(resume=base, seq_len=20, learning_rate=2e-2, key=jax.random.key(5), alpha=0.3)
    for name in ("seq_len: checkpoint 16, call 20", "learning_rate", "key:", "alpha:"):
        assert name in str(e.value)
    assert "batch_size" not in str(e.value)
    # steps below the checkpoint's step: an error in every mode
    for mode in ("check", "call"):
        _raises_fast(r"`steps` \(5\) is below the step", resume=base, steps=5,
                     resume_settings=mode)


def test_resume_settings_checkpoint_restores_the_stored_settings(reference, base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    stored = _checkpoint.read_header(ck)[0]["settings"]
    res = fit(resume=ck, resume_settings="checkpoint", seq_len=20, learning_rate=2e-2,
              key=jax.random.key(5), alpha=0.5, steps=40, batch_size=3, solver="deer")
    assert res.settings == stored
    assert_same(arrays(res), reference)


def test_resume_settings_call_warns_and_user_optimizer_is_not_restored(base, tmp_path):
    ck = copy_checkpoint(base, tmp_path)
    with pytest.warns(UserWarning, match="this call's settings.*key: checkpoint"):
        res = dsr.fit(make_model(), X, ALPHA, **{**FIT_KW, "steps": STEPS,
                                                  "key": jax.random.key(5)},
                      resume=ck, resume_settings="call")
    assert res.history["loss"].shape == (STEPS,)
    # a checkpoint trained with a user's optimizer: "checkpoint" cannot rebuild it
    header, payload = _checkpoint.read_header(ck)
    header["settings"]["optimizer"] = {"kind": "user", "type": "GradientTransformation"}
    _io.write_container(ck, "checkpoint", header, payload)
    _raises_fast("user optimizer", resume=ck, resume_settings="checkpoint", seq_len=20)
