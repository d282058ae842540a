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
from dsr._training import _checkpoint, _fit, _trainer
from dsr import _io
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


def make_base(folder):
    """A checkpoint of the run at step STEPS - 1 (saved on an interrupt)."""
    ck = folder / "run.ckpt"
    res = fit(checkpoint=ck, checkpoint_every=1, callback=stop_at(STEPS - 1), eval_every=1)
    assert res.interrupted and _checkpoint.read_header(ck)[0]["step"] == STEPS - 1
    return ck


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_base(tmp_path_factory.mktemp("base"))


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


def test_resume_into_another_checkpoint_file(reference, base, tmp_path):
    # the target holds another run's checkpoint whose history has the same header and size
    # but other rows: it is rewritten, not appended to
    a = copy_checkpoint(base, tmp_path / "a")
    b = copy_checkpoint(base, tmp_path / "b")
    hist = bytearray(open(_checkpoint.history_path(b), "rb").read())
    hist[-3] ^= 0xFF
    open(_checkpoint.history_path(b), "wb").write(bytes(hist))
    with pytest.warns(UserWarning, match="holds the checkpoint of an earlier run"):
        dsr.fit(make_model(), X, ALPHA, **{**FIT_KW, "steps": STEPS}, resume=a, checkpoint=b)
    assert_same(arrays(fit(resume=b, checkpoint=b)), reference)


# ----------------------------------------------------------------- interrupts at every point

# The modules whose state an update changes (pure helpers they call — `to_host`,
# `from_stack` — are interrupted at their call), and the end of the window: `_result`, which
# only reads the finished run.
TRACED = {os.path.join(os.path.dirname(dsr.__file__), f) for f in (
    "_training/_fit.py", "_training/_trainer.py", "_training/_checkpoint.py",
    "_training/_history.py", "_io.py", "_serialization.py", "_training/_signals.py")}
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


def _start(ck, out, steps, cache, extra_env=None):
    env = dict(os.environ, JAX_PLATFORMS="cpu", **(extra_env or {}),
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


def kill_and_resume(folder, n_kills, steps, cache, seed, extra_env=None):
    """Run the worker, killing it `n_kills` times at random points (SIGKILL; every fourth a
    SIGTERM) and restarting it, until it finishes; returns its arrays and statistics."""
    rng = np.random.default_rng(seed)
    ck, out = folder / "run.ckpt", folder / "out.npz"
    stats = dict(kills=0, sigterm=0, lives=0, temporary_left=0, history_ahead=0)
    period = 0.05  # seconds per update, updated from the worker's output
    while True:
        stats["lives"] += 1
        p = _start(ck, out, steps, cache, extra_env)
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


@pytest.mark.slow  # ≈ 1.5–2.5 min of subprocess start-ups; keeps `make test` under 10 min
def test_killed_fit_resumes_bit_exactly(reference, jax_cache, tmp_path):
    got, stats = kill_and_resume(tmp_path, 3, STEPS, jax_cache, seed=0)
    print("fault test:", stats)
    assert_same(got, reference)
    assert stats["lives"] == 4


@pytest.mark.slow
def test_killed_fit_resumes_bit_exactly_20_kills(jax_cache, tmp_path):
    steps = 150  # ≈ 2–4 updates per life: 20 kills must not outlast the run
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


def test_resume_checks_before_compiling(base, ctx):
    # another model shape / class / ensemble: caught from the header, in well under a second
    _raises_fast("latent_dim: checkpoint 3, call 2", model=ctx["m2"], resume=base)
    _raises_fast("model class: checkpoint ShPLRNN, call LSSM", model=ctx["lssm"], resume=base)
    _raises_fast("members: checkpoint a single model, call an ensemble of 2", model=ctx["ens"],
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


def test_callback_results_are_checked_and_kept_across_a_resume(base, tmp_path):
    with pytest.raises(TypeError, match="`callback` must return a dict of numbers"):
        fit(steps=STEPS, callback=lambda step, m: {"x": "high"}, eval_every=1)
    ck = copy_checkpoint(base, tmp_path)
    res = fit(resume=ck, checkpoint=ck, callback=lambda step, m: {"step": step}, eval_every=1)
    assert res.history["eval"] == [(STEPS, {"step": float(STEPS)})]
    again = fit(resume=ck)  # the result was saved in the history file
    assert again.history["eval"] == res.history["eval"]


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


# ---------------------------------------------------------------------------- bad inputs


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, base):
    """Objects and files the bad inputs refer to (built before the timed calls)."""
    folder = tmp_path_factory.mktemp("bad")
    m = make_model()
    dsr.save(folder / "model.eqx", m)
    (folder / "random.bin").write_bytes(np.random.default_rng(0).bytes(500))
    (folder / "empty.bin").write_bytes(b"")
    (folder / "short.eqx").write_bytes((folder / "model.eqx").read_bytes()[:-10])
    np.savez(folder / "data.npz", x=X)
    nan = X.copy()
    nan[5, 1] = np.nan
    import data_gen.__main__  # noqa: F401 (imported before the timed calls)

    lssm = dsr.LSSM(3, 3, 8, key=jax.random.key(0), dtype=np.float64)
    return dict(m=m, m2=make_model(2), lssm=lssm,
                ens=dsr.Ensemble.from_members([m, m]), folder=folder, ckpt=base, nan=nan,
                key=jax.random.key(0))


def _fit(c, **kw):
    model = kw.pop("model", c["m"])
    return dsr.fit(model, kw.pop("data", X), kw.pop("alpha", ALPHA), **{**FIT_KW, "steps": 0,
                                                                        **kw})


def _gtf(c, **kw):
    return dsr.gtf_forward(kw.pop("model", c["m"]), kw.pop("x", X[:10]), kw.pop("alpha", 0.1),
                           **kw)


def _gen(c, **kw):
    return dsr.generate(kw.pop("model", c["m"]), kw.pop("n_steps", 5), **kw)


def _cli(*argv):
    """`python -m data_gen ARGV` in this process; its usage error as a ValueError."""
    import contextlib
    import io

    from data_gen.__main__ import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as e:
            if e.code == 2:
                raise ValueError(err.getvalue()) from None
            raise


def _metric(name, *args, **kw):
    return getattr(dsr.metrics, name)(*args, **kw)


F, T, ANY = dsr.FileFormatError, TypeError, (TypeError, ValueError)
K = jax.random.key(0)
SH = lambda *a, **kw: dsr.ShPLRNN(*a, **{"key": K, **kw})  # noqa: E731
BAD = {  # id: (call, exception, what the message names)
    # fit
    "fit-alpha-None": (lambda c: _fit(c, alpha=None), ANY, "`alpha`"),
    "fit-alpha-str": (lambda c: _fit(c, alpha="big"), ANY, "`alpha`"),
    "fit-alpha-1.5": (lambda c: _fit(c, alpha=1.5), ANY, "`alpha`"),
    "fit-alpha-nan": (lambda c: _fit(c, alpha=float("nan")), ANY, "`alpha`"),
    "fit-alpha-bool": (lambda c: _fit(c, alpha=True), ANY, "`alpha`"),
    "fit-key-0": (lambda c: _fit(c, key=0), ANY, "`key`"),
    "fit-key-str": (lambda c: _fit(c, key="seed"), ANY, "`key`"),
    "fit-key-array": (lambda c: _fit(c, key=jax.random.split(K, 2)), ANY, "`key`"),
    "fit-steps-bool": (lambda c: _fit(c, steps=True), ANY, "`steps`"),
    "fit-steps-neg": (lambda c: _fit(c, steps=-1), ANY, "`steps`"),
    "fit-steps-float": (lambda c: _fit(c, steps=2.5), ANY, "`steps`"),
    "fit-steps-str": (lambda c: _fit(c, steps="10"), ANY, "`steps`"),
    "fit-seq_len-0": (lambda c: _fit(c, seq_len=0), ANY, "`seq_len`"),
    "fit-seq_len-npfloat": (lambda c: _fit(c, seq_len=np.float64(16)), ANY, "`seq_len`"),
    "fit-batch-0": (lambda c: _fit(c, batch_size=0), ANY, "`batch_size`"),
    "fit-batch-bool": (lambda c: _fit(c, batch_size=True), ANY, "`batch_size`"),
    "fit-warmup-big": (lambda c: _fit(c, warmup=16), ANY, "`warmup`"),
    "fit-lr-0": (lambda c: _fit(c, learning_rate=0.0), ANY, "`learning_rate`"),
    "fit-lr-nan": (lambda c: _fit(c, learning_rate=float("nan")), ANY, "`learning_rate`"),
    "fit-lr-str": (lambda c: _fit(c, learning_rate="1e-3"), ANY, "`learning_rate`"),
    "fit-optimizer-str": (lambda c: _fit(c, optimizer="adam"), ANY, "`optimizer`"),
    "fit-solver-name": (lambda c: _fit(c, solver="fast"), ANY, "`solver`"),
    "fit-solver-int": (lambda c: _fit(c, solver=3), ANY, "`solver`"),
    "fit-regularization": (lambda c: _fit(c, regularization="l2"), ANY, "`regularization`"),
    "fit-checkpoint-folder": (lambda c: _fit(c, checkpoint=c["folder"]), ANY, "`checkpoint`"),
    "fit-checkpoint-int": (lambda c: _fit(c, checkpoint=3), ANY, "`checkpoint`"),
    "fit-checkpoint-datafile": (lambda c: _fit(c, checkpoint=c["folder"] / "data.npz"), ANY,
                                "`checkpoint`.*refusing"),
    "fit-resume-missing": (lambda c: _fit(c, resume=c["folder"] / "nope"), ANY, "`resume`"),
    "fit-resume-folder": (lambda c: _fit(c, resume=c["folder"]), ANY, "`resume`"),
    "fit-resume-model": (lambda c: _fit(c, resume=c["folder"] / "model.eqx"), F,
                         "saved by dsr.save"),
    "fit-resume-random": (lambda c: _fit(c, resume=c["folder"] / "random.bin"), F,
                          "not a dsr file"),
    "fit-resume_settings": (lambda c: _fit(c, resume_settings="always"), ANY,
                            "`resume_settings`"),
    "fit-resume-other-shape": (lambda c: _fit(c, model=c["m2"], resume=c["ckpt"],
                                              steps=STEPS), ANY, "latent_dim"),
    "fit-callback": (lambda c: _fit(c, callback=3), ANY, "`callback`"),
    "fit-eval_every-0": (lambda c: _fit(c, eval_every=0), ANY, "`eval_every`"),
    "fit-checkpoint_every-0": (lambda c: _fit(c, checkpoint_every=0), ANY,
                               "`checkpoint_every`"),
    "fit-max_failures-0": (lambda c: _fit(c, max_failures=0), ANY, "`max_failures`"),
    "fit-alpha_every-0": (lambda c: _fit(c, alpha="adaptive", alpha_every=0), ANY,
                          "`alpha_every`"),
    "fit-alpha_gamma": (lambda c: _fit(c, alpha="adaptive", alpha_gamma=1.5), ANY,
                        "`alpha_gamma`"),
    "fit-data-nan": (lambda c: _fit(c, data=c["nan"]), ANY, "`data`.*non-finite"),
    "fit-data-short": (lambda c: _fit(c, data=X[:10]), ANY, "`data` is too short"),
    "fit-data-dims": (lambda c: _fit(c, data=X[:, :2]), ANY, "`data` has 2 dimensions"),
    "fit-data-1d": (lambda c: _fit(c, data=X[:, 0]), ANY, "`data`"),
    "fit-data-str": (lambda c: _fit(c, data=[["a", "b", "c"]] * 40), ANY, "`data`"),
    "fit-data-empty": (lambda c: _fit(c, data=[]), ANY, "`data`"),
    "fit-inputs-unused": (lambda c: _fit(c, inputs=X), ANY, "`inputs`"),
    "fit-progress": (lambda c: _fit(c, progress="yes"), ANY, "`progress`"),
    "fit-devices": (lambda c: _fit(c, devices=[]), ANY, "`devices`"),
    "fit-monitor_every": (lambda c: _fit(c, monitor_every=-1), ANY, "`monitor_every`"),
    "fit-model": (lambda c: _fit(c, model="rnn"), ANY, "`model`"),
    # gtf_forward
    "gtf-alpha-None": (lambda c: _gtf(c, alpha=None), ANY, "`alpha`"),
    "gtf-alpha-2": (lambda c: _gtf(c, alpha=2.0), ANY, "`alpha`"),
    "gtf-x-1d": (lambda c: _gtf(c, x=X[:10, 0]), ANY, "`x`"),
    "gtf-x-str": (lambda c: _gtf(c, x="abc"), ANY, "`x`"),
    "gtf-x-nan": (lambda c: _gtf(c, x=c["nan"][:10]), ANY, "`x`"),
    "gtf-x-dims": (lambda c: _gtf(c, x=X[:10, :2]), ANY, "`x`"),
    "gtf-warmup-bool": (lambda c: _gtf(c, warmup=True), ANY, "`warmup`"),
    "gtf-warmup-big": (lambda c: _gtf(c, warmup=9), ANY, "`warmup`"),
    "gtf-solver-str": (lambda c: _gtf(c, solver="deer"), ANY, "`solver`"),
    "gtf-model-lssm": (lambda c: _gtf(c, model=c["lssm"]), ANY, "`model`"),
    "gtf-inputs-unused": (lambda c: _gtf(c, inputs=X[:10]), ANY, "`inputs`"),
    # model constructors
    "shplrnn-bool-dim": (lambda c: dsr.ShPLRNN(True, 3, 64, key=K), ANY, "`obs_dim`"),
    "shplrnn-latent-0": (lambda c: SH(3, 0, 8), ANY, "`latent_dim`"),
    "shplrnn-hidden-float": (lambda c: SH(3, 3, 8.0), ANY, "`hidden_dim`"),
    "shplrnn-kappa-1": (lambda c: SH(3, 3, 8, kappa=1.0), ANY, "`kappa`"),
    "shplrnn-kappa-0": (lambda c: SH(3, 3, 8, kappa=0), ANY, "`kappa`"),
    "shplrnn-key-0": (lambda c: dsr.ShPLRNN(3, 3, 8, key=0), ANY, "`key`"),
    "shplrnn-rank-0": (lambda c: SH(3, 3, 8, rank=0), ANY, "`rank`"),
    "shplrnn-inputs-neg": (lambda c: SH(3, 3, 8, input_dim=-1), ANY, "`input_dim`"),
    "shplrnn-dtype-int": (lambda c: SH(3, 3, 8, dtype=np.int32), ANY, "dtype"),
    "clipped-bool-dim": (lambda c: dsr.ClippedShPLRNN(3, 3, True, key=K), ANY, "`hidden_dim`"),
    "lssm-kappa-1": (lambda c: dsr.LSSM(3, 3, 8, key=K, kappa=1.0), ANY, "`kappa`"),
    "lssm-latent-npfloat": (lambda c: dsr.LSSM(3, np.float32(3), 8, key=K), ANY,
                            "`latent_dim`"),
    "lssm-key-str": (lambda c: dsr.LSSM(3, 3, 8, key="k"), ANY, "`key`"),
    # generate
    "gen-z0-nan": (lambda c: _gen(c, z0=np.full(3, np.nan)), ANY, "`z0`"),
    "gen-z0-shape": (lambda c: _gen(c, z0=np.zeros(4)), ANY, "`z0`"),
    "gen-z0-str": (lambda c: _gen(c, z0="abc"), ANY, "`z0`"),
    "gen-both": (lambda c: _gen(c, z0=np.zeros(3), context=X[:5]), ANY, "`context`.*`z0`"),
    "gen-neither": (lambda c: _gen(c), ANY, "`context`.*`z0`"),
    "gen-n-0": (lambda c: _gen(c, n_steps=0, z0=np.zeros(3)), ANY, "`n_steps`"),
    "gen-n-bool": (lambda c: _gen(c, n_steps=True, z0=np.zeros(3)), ANY, "`n_steps`"),
    "gen-inputs-unused": (lambda c: _gen(c, z0=np.zeros(3), inputs=np.zeros((5, 1))), ANY,
                          "`inputs`"),
    "gen-context-dims": (lambda c: _gen(c, context=X[:5, :2]), ANY, "`context`"),
    "gen-context-nan": (lambda c: _gen(c, context=c["nan"][:10]), ANY, "`context`"),
    "gen-return_latents": (lambda c: _gen(c, z0=np.zeros(3), return_latents="yes"), ANY,
                           "`return_latents`"),
    "gen-model": (lambda c: _gen(c, model=3, z0=np.zeros(3)), ANY, "`model`"),
    # save / load
    "load-random": (lambda c: dsr.load(c["folder"] / "random.bin"), F, "not a dsr file"),
    "load-empty": (lambda c: dsr.load(c["folder"] / "empty.bin"), F, "is empty"),
    "load-truncated": (lambda c: dsr.load(c["folder"] / "short.eqx"), F, "truncated"),
    "load-checkpoint": (lambda c: dsr.load(c["ckpt"]), F, "training checkpoint"),
    "load-folder": (lambda c: dsr.load(c["folder"]), F, "folder"),
    "load-missing": (lambda c: dsr.load(c["folder"] / "missing.eqx"), F, "no such file"),
    "load-npz": (lambda c: dsr.load(c["folder"] / "data.npz"), F, "not a dsr file"),
    "load-path-int": (lambda c: dsr.load(3), ANY, "`path`"),
    "save-folder": (lambda c: dsr.save(c["folder"], c["m"]), ANY, "`path`"),
    "save-model": (lambda c: dsr.save(c["folder"] / "x.eqx", 3), ANY, "`model`"),
    "save-extra": (lambda c: dsr.save(c["folder"] / "x.eqx", c["m"], extra={"a": object()}),
                   ANY, "`extra`"),
    # ensembles
    "ensemble-n-bool": (lambda c: dsr.ensemble(lambda k: c["m"], True, key=K), ANY, "`n`"),
    "ensemble-n-0": (lambda c: dsr.ensemble(lambda k: c["m"], 0, key=K), ANY, "`n`"),
    "ensemble-key-0": (lambda c: dsr.ensemble(lambda k: c["m"], 2, key=0), ANY, "`key`"),
    "ensemble-make-3": (lambda c: dsr.ensemble(3, 2, key=K), ANY, "`make_model`"),
    "ensemble-returns-int": (lambda c: dsr.ensemble(lambda k: 3, 2, key=K), ANY,
                             "`make_model`"),
    "Ensemble-axis": (lambda c: dsr.Ensemble(c["m"], 2), ANY, "leading member axis"),
    "Ensemble-empty": (lambda c: dsr.Ensemble.from_members([]), ANY, "`models`"),
    "Ensemble-index-float": (lambda c: c["ens"][1.0], ANY, "index"),
    # data_gen: library and command line (validated before integrating)
    "datagen-n_steps-bool": (lambda c: __import__("data_gen").lorenz63(n_steps=True), ANY,
                             "`n_steps`"),
    "datagen-n_steps-neg": (lambda c: __import__("data_gen").lorenz63(n_steps=-5), ANY,
                            "`n_steps`"),
    "datagen-dt": (lambda c: __import__("data_gen").lorenz63(n_steps=100, dt=-0.01), ANY,
                   "`dt`"),
    "datagen-name": (lambda c: __import__("data_gen").generate("nosuch"), ANY, "`name`"),
    "datagen-noise": (lambda c: __import__("data_gen").lorenz63(n_steps=100, noise=-1.0), ANY,
                      "`noise`"),
    "cli-system": (lambda c: _cli("nosuch", "--out", str(c["folder"])), ANY, "unknown system"),
    "cli-n-steps": (lambda c: _cli("lorenz63", "--out", str(c["folder"]), "--n-steps", "-3"),
                    ANY, "--n-steps"),
    "cli-dt": (lambda c: _cli("lorenz63", "--out", str(c["folder"]), "--dt", "0"), ANY, "--dt"),
    "cli-param": (lambda c: _cli("lorenz63", "--out", str(c["folder"]), "--param", "rho"), ANY,
                  "--param"),
    # metrics (where they validate already)
    "metric-embed-m-0": (lambda c: _metric("delay_embed", X, 0, 1), ANY, "`m`"),
    "metric-embed-m-float": (lambda c: _metric("delay_embed", X, 2.5, 1), ANY, "`m`"),
    "metric-dstsp-nan": (lambda c: _metric("state_space_divergence", c["nan"], X, key=K), ANY,
                         "`x_true`"),
    "metric-dstsp-n-0": (lambda c: _metric("state_space_divergence", X, X, n_samples=0, key=K),
                         ANY, "`n_samples`"),
    "metric-psd-dims": (lambda c: _metric("power_spectrum_distance", X, X[:, :2]), ANY,
                        "`x_gen`"),
    "metric-psd-str": (lambda c: _metric("power_spectrum_distance", "abc", X), ANY, "`x_true`"),
    "metric-lyap-dt": (lambda c: _metric("model_lyapunov_spectrum", c["m"], np.zeros(3), 10,
                                         dt=-1.0), ANY, "`dt`"),
    "metric-lyap-n-0": (lambda c: _metric("model_lyapunov_spectrum", c["m"], np.zeros(3), 0),
                        ANY, "`n_steps`"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_rejected_early_naming_the_argument(ctx, name):
    call, exc, names = BAD[name]
    t = time.perf_counter()
    with pytest.raises(exc, match=names):
        call(ctx)
    assert time.perf_counter() - t < 1.0  # checked up front, nothing compiled


def test_enough_bad_inputs():
    assert len(BAD) >= 60


def test_integer_types_accepted_and_bools_rejected(ctx):
    i64 = np.int64
    res = _fit(ctx, steps=i64(0), seq_len=i64(16), batch_size=i64(2), checkpoint_every=i64(3),
               eval_every=i64(2), max_failures=i64(5), monitor_every=i64(0))
    assert res.history["loss"].shape == (0,)
    f64 = np.float64  # the shapes and dtype of the models built already: nothing compiles
    assert dsr.ShPLRNN(i64(3), i64(3), np.int32(8), key=K, input_dim=i64(0), dtype=f64) \
        .latent_dim == 3
    assert dsr.LSSM(i64(3), i64(3), i64(8), key=K, dtype=f64).hidden_dim == 8
    z_float = dsr.generate(ctx["m"], i64(4), z0=np.zeros(3))
    z_int = dsr.generate(ctx["m"], 4, z0=np.zeros(3, np.int64))  # converted to the model's
    np.testing.assert_array_equal(z_float, z_int)
    assert len(dsr.ensemble(lambda k: ctx["m"], i64(2), key=K)) == 2
    np.testing.assert_array_equal(ctx["ens"][i64(1)].B, ctx["m"].B)
    with pytest.raises(TypeError, match="`steps`"):
        _fit(ctx, steps=np.bool_(True))
