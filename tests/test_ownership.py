"""The command line's run folders: nothing the user owns is overwritten, one writer per run,
records that stay true (issue 22).

- `fit --out/--force`: only a dsr run (its `config.json` marker) or an empty folder is
  replaced, and only after every argument has been checked; a folder that is not a run keeps
  every file (an error names the ones a run would overwrite); old pictures go with the run.
- `generate --out`: an existing file only with `--force`; never an input of the run nor a
  file inside a run folder (by `realpath`).
- One writer per run: `RUN_DIR/run.lock`, taken by `fit`, `fit --resume` and `evaluate`
  before they write; a holder is named, a dead one is taken over.
- Records: the config and `metrics.json` name the files a session used (absolute path,
  sha256); config-file paths are relative to the config file; a damaged config is one line.

Like `test_cli.py`, every call runs in-process through `main(argv)` with its small shapes
(the same FAST and EVAL), so the training step and the evaluation compile once; the two
concurrent processes are a slow test.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import equinox as eqx
import numpy as np
import pytest

import dsr
from dsr import _lock
from dsr._cli import main
from helpers import CLI_EVAL as EVAL, CLI_FAST as FAST, cli_signal as _signal
from dsr._cli._data import sha256
from dsr._cli._options import FIT_OPTIONS, resolve
from dsr._cli._run import read_history

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("own")
    np.save(d / "train.npy", _signal(400))
    np.savetxt(d / "test.csv", _signal(400, phase=3.0), delimiter=",", header="a,b",
               comments="")
    np.savetxt(d / "other.csv", _signal(400, phase=5.0), delimiter=",", header="a,b",
               comments="")
    return d


@pytest.fixture(scope="module")
def run(files):
    """A finished run (no test data, no pictures); tests that change it use a copy."""
    out = files / "run"
    assert main(["fit", str(files / "train.npy"), "--out", str(out), "--no-plots"] + FAST) == 0
    return out


@pytest.fixture(scope="module")
def evaluated(run, files, tmp_path_factory):
    """A copy of `run`, evaluated from another working folder on a relative test path."""
    out = _copy(run, tmp_path_factory.mktemp("ev") / "run")
    here = os.getcwd()
    os.chdir(files)
    try:
        assert main(["evaluate", str(out), "--test", "test.csv", "--no-plots"] + EVAL) == 0
    finally:
        os.chdir(here)
    return out


def _copy(run, dest):
    shutil.copytree(run, dest)
    return dest


def _json(path):
    with open(path) as f:
        return json.load(f)


def _snapshot(folder) -> dict:
    """Every file under `folder` (relative path → bytes)."""
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = f.read()
    return out


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------------- --out and --force


def test_force_deletes_nothing_when_an_argument_is_bad(run, files, tmp_path, capsys):
    out = _copy(run, tmp_path / "run")
    before = _snapshot(out)
    argv = ["fit", str(files / "train.npy"), "--out", str(out), "--force"] + FAST
    assert main(argv + ["--warmup", "20"]) == 1  # seq_len 16: warmup must be < 16
    assert "warmup" in _one_line_error(capsys)
    assert main(argv + ["--lr-schedule", "exponential:0"]) == 1
    _one_line_error(capsys)
    assert main(argv + ["--columns", "nope"]) == 1
    assert "no column 'nope'" in _one_line_error(capsys)
    assert _snapshot(out) == before


def test_force_replaces_a_run_and_its_pictures_but_nothing_else(run, files, tmp_path):
    out = _copy(run, tmp_path / "run")
    (out / "plots").mkdir()
    for name in ("timeseries.png", "spectra.png"):
        (out / "plots" / name).write_bytes(b"old picture")
    (out / "plots" / "my_notes.txt").write_text("mine")
    (out / "analysis.py").write_text("mine")
    (out / "metrics.json").write_text('{"old": true}')
    old_created = _json(out / "config.json")["created"]
    time.sleep(1.1)  # `created` has one-second resolution
    assert main(["fit", str(files / "train.npy"), "--out", str(out), "--force", "--no-plots",
                 "--seed", "1"] + FAST) == 0
    assert sorted(os.listdir(out / "plots")) == ["my_notes.txt"]
    assert (out / "analysis.py").read_text() == "mine"
    assert not (out / "metrics.json").exists()  # it measured the replaced run
    cfg = _json(out / "config.json")
    assert cfg["options"]["seed"] == 1 and cfg["created"] != old_created
    assert [s["resumed"] for s in cfg["sessions"]] == [False]
    assert not (out / "run.lock").exists()


def test_plots_folder_of_a_replaced_run_goes_when_left_empty(run, files, tmp_path):
    out = _copy(run, tmp_path / "run")
    (out / "plots").mkdir()
    (out / "plots" / "loss.png").write_bytes(b"old picture")
    assert main(["fit", str(files / "train.npy"), "--out", str(out), "--force",
                 "--no-plots"] + FAST) == 0
    assert not (out / "plots").exists()


def test_a_folder_that_is_not_a_run_keeps_every_file(files, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text('{"my": "settings"}')
    (out / "history.csv").write_text("my,own\n1,2\n")
    (out / "data.txt").write_text("mine")
    before = _snapshot(out)
    for force in ([], ["--force"]):
        assert main(["fit", str(files / "train.npy"), "--out", str(out), "--no-plots"]
                    + force + FAST) == 1
        err = _one_line_error(capsys)
        assert "not a dsr run folder" in err and "config.json, history.csv" in err
        assert "data.txt" not in err
    assert _snapshot(out) == before


def test_out_dot_force_in_a_folder_with_other_files_deletes_nothing(files, tmp_path,
                                                                     monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(files / "train.npy", "train.npy")
    for name, text in (("notes.txt", "mine"), ("model.eqx", "my model"),
                       ("context.npy", "not even an array")):
        (tmp_path / name).write_text(text)
    before = _snapshot(tmp_path)
    assert main(["fit", "train.npy", "--out", ".", "--force", "--no-plots"] + FAST) == 1
    assert "model.eqx, context.npy" in _one_line_error(capsys)
    assert _snapshot(tmp_path) == before


def test_out_dot_without_name_clashes_adds_the_run_beside_the_files(files, tmp_path,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(files / "train.npy", "train.npy")
    (tmp_path / "notes.txt").write_text("mine")
    before = _snapshot(tmp_path)
    assert main(["fit", "train.npy", "--out", ".", "--force", "--no-plots"] + FAST) == 0
    after = _snapshot(tmp_path)
    assert {k: after[k] for k in before} == before
    assert _json(tmp_path / "config.json")["dsr_run"] == 1
    assert main(["fit", "train.npy", "--out", ".", "--no-plots"] + FAST) == 1  # now a run


def test_an_input_of_the_fit_is_never_a_file_the_run_replaces(run, files, tmp_path, capsys):
    out = _copy(run, tmp_path / "run")
    shutil.copy(files / "train.npy", out / "model.eqx")  # an odd name, but the user's data
    before = _snapshot(out)
    assert main(["fit", str(files / "train.npy"), "--test", str(out / "model.eqx"), "--out",
                 str(out), "--force", "--no-plots"] + FAST) == 1
    assert "an input of this fit is the run file" in _one_line_error(capsys)
    assert _snapshot(out) == before


def test_empty_and_new_folders_need_no_force(files, tmp_path):
    (tmp_path / "empty").mkdir()
    for name in ("empty", "new/deeper"):
        assert main(["fit", str(files / "train.npy"), "--out", str(tmp_path / name),
                     "--no-plots"] + FAST) == 0
        assert _json(tmp_path / name / "config.json")["fit"]["status"] == "done"


# ------------------------------------------------------------------------- generate --out


def test_generate_refuses_an_existing_file_without_force(run, tmp_path, capsys):
    mine = tmp_path / "mine.npy"
    np.save(mine, np.arange(3.0))
    before = mine.read_bytes()
    assert main(["generate", str(run), "--steps", "5", "--out", str(mine)]) == 1
    assert "exists; pass --force" in _one_line_error(capsys)
    assert mine.read_bytes() == before and not (tmp_path / "mine.npy.lock").exists()
    assert main(["generate", str(run), "--steps", "5", "--out", str(mine), "--force"]) == 0
    assert np.load(mine).shape == (2, 5, 2)
    assert main(["generate", str(run), "--steps", "5", "--out", str(tmp_path / "dir.npy"),
                 "--force"]) == 0  # a new file needs no --force either way


def test_generate_never_overwrites_an_input_even_with_force(evaluated, files, tmp_path, capsys):
    np.save(tmp_path / "ctx.npy", np.load(files / "train.npy")[:64])
    os.symlink(files / "train.npy", tmp_path / "link.npy")
    cases = {str(files / "train.npy"): "an input of the run",   # the training recording
             str(tmp_path / "link.npy"): "an input of the run",  # a link to it
             str(files / "test.csv")[:-4] + ".npy": None}        # not an input: allowed
    snap = {p: open(files / "train.npy", "rb").read() for p in cases}
    argv = ["generate", str(evaluated), "--steps", "5", "--force"]
    for out, expected in cases.items():
        rc = main(argv + ["--out", out])
        if expected is None:
            assert rc == 0
            capsys.readouterr()
            continue
        assert rc == 1 and expected in _one_line_error(capsys)
        assert open(out, "rb").read() == snap[out]
    assert main(argv + ["--context", str(tmp_path / "ctx.npy"), "--out",
                        str(tmp_path / "ctx.npy")]) == 1  # this call's context
    assert "an input of the run" in _one_line_error(capsys)
    test_npy = files / "test_as.npy"  # the evaluated run's test file, by a second name
    os.symlink(files / "test.csv", test_npy)
    assert main(argv + ["--out", str(test_npy)]) == 1
    assert "test.csv, an input of the run" in _one_line_error(capsys)


def test_generate_never_writes_inside_a_run_folder(run, files, tmp_path, capsys):
    other = _copy(run, tmp_path / "other_run")
    before = _snapshot(run), _snapshot(other)
    for out in (run / "context.npy", run / "gen.npy", run / "plots" / "gen.npy",
                other / "context.npy"):
        assert main(["generate", str(run), "--steps", "5", "--out", str(out), "--force"]) == 1
        assert "inside the run folder" in _one_line_error(capsys)
    assert (_snapshot(run), _snapshot(other)) == before


# ------------------------------------------------------------------------- one writer


def test_a_second_writer_of_a_run_refuses_naming_the_holder(run, files, tmp_path, capsys):
    out = _copy(run, tmp_path / "run")
    before = _snapshot(out)
    holder = _lock.acquire(os.path.join(out, "run"))  # as if another fit were running
    try:
        for argv in (["fit", "--resume", str(out), "--no-plots"],
                     ["fit", str(files / "train.npy"), "--out", str(out), "--force",
                      "--no-plots"] + FAST,
                     ["evaluate", str(out), "--test", str(files / "test.csv")] + EVAL):
            assert main(argv) == 1
            err = _one_line_error(capsys)
            assert f"the run is in use by process {os.getpid()} on {socket.gethostname()}" \
                in err and "run.lock" in err, err
        assert {k: v for k, v in _snapshot(out).items() if k != "run.lock"} == before
    finally:
        _lock.release(os.path.join(out, "run"), holder)
    assert main(["fit", "--resume", str(out), "--no-plots"]) == 0
    assert not (out / "run.lock").exists()


def test_a_run_whose_checkpoint_is_being_written_is_not_replaced(run, files, tmp_path,
                                                                 capsys):
    out = _copy(run, tmp_path / "run")
    before = _snapshot(out)
    holder = _lock.acquire(out / "checkpoint.ckpt")  # as dsr.fit(checkpoint=...) holds it
    try:
        assert main(["fit", str(files / "train.npy"), "--out", str(out), "--force",
                     "--no-plots"] + FAST) == 1
        assert "checkpoint.ckpt: in use by process" in _one_line_error(capsys)
    finally:
        _lock.release(out / "checkpoint.ckpt", holder)
    assert _snapshot(out) == before


def test_the_lock_of_a_dead_process_is_taken_over(run, tmp_path):
    out = _copy(run, tmp_path / "run")
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    (out / "run.lock").write_text(json.dumps({"pid": p.pid, "host": socket.gethostname(),
                                              "started": None, "since": 0, "token": "x"}))
    assert main(["fit", "--resume", str(out), "--no-plots"]) == 0
    assert not (out / "run.lock").exists()


# ------------------------------------------------------------------------- records


def test_resume_with_another_test_file_records_it(run, files, tmp_path, monkeypatch):
    out = _copy(run, tmp_path / "run")
    monkeypatch.chdir(files)
    assert main(["fit", "--resume", str(out), "--test", "other.csv", "--no-plots"]
                + EVAL) == 0
    cfg, metrics = _json(out / "config.json"), _json(out / "metrics.json")
    other = str(files / "other.csv")
    assert cfg["options"]["test"] == other
    for rec in (cfg["data"]["test"], metrics["test"]):
        assert rec["abspath"] == other and rec["sha256"] == sha256(other)
    assert metrics["model"]["sha256"] == sha256(str(out / "model.eqx"))
    assert metrics["model"]["steps_done"] == 4


def test_evaluate_records_the_test_file_and_model_it_used(evaluated, files):
    cfg, metrics = _json(evaluated / "config.json"), _json(evaluated / "metrics.json")
    test = str(files / "test.csv")
    for rec in (cfg["data"]["test"], cfg["evaluation"]["test"], metrics["test"]):
        assert rec["abspath"] == test and rec["sha256"] == sha256(test)
    assert metrics["model"] == {"path": str(evaluated / "model.eqx"),
                                "sha256": sha256(str(evaluated / "model.eqx")),
                                "steps_done": 4}
    assert not (evaluated / "run.lock").exists()


def test_a_resume_refused_by_fit_leaves_the_records_as_they_were(run, tmp_path, capsys):
    out = _copy(run, tmp_path / "run")
    before = _snapshot(out)
    assert main(["fit", "--resume", str(out), "--steps", "2", "--resume-settings", "call",
                 "--no-plots"]) == 1  # below the checkpoint's step: fit's own check
    assert "below the step of the checkpoint" in _one_line_error(capsys)
    assert _snapshot(out) == before  # status not turned into "failed", nothing written


def test_config_file_paths_are_relative_to_the_config_file(files, tmp_path, monkeypatch):
    sub = tmp_path / "project"
    sub.mkdir()
    shutil.copy(files / "train.npy", sub / "rec.npy")
    (sub / "fit.json").write_text(json.dumps({"data": ["rec.npy"]}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["fit", "--config", "../project/fit.json", "--out", "run", "--no-plots"]
                + FAST) == 0
    cfg = _json(elsewhere / "run" / "config.json")
    assert cfg["options"]["data"] == [str(sub / "rec.npy")]
    assert cfg["data"]["files"][0]["sha256"] == sha256(str(sub / "rec.npy"))
    for validation, expected in (("val.npy", str(sub / "val.npy")), (0.2, 0.2)):
        (sub / "fit.json").write_text(json.dumps({"test": "t.csv", "inputs": ["/abs/u.npy"],
                                                  "validation": validation}))
        opts, _ = resolve(FIT_OPTIONS, {"data": ["here.npy"]}, "../project/fit.json")
        assert opts["validation"] == expected  # a fraction stays a fraction
        assert opts["test"] == str(sub / "t.csv") and opts["inputs"] == ["/abs/u.npy"]
        assert opts["data"] == ["here.npy"]  # a flag: relative to the working folder


def test_a_run_config_with_missing_keys_is_one_line(run, files, tmp_path, capsys):
    out = _copy(run, tmp_path / "run")
    cfg = _json(out / "config.json")
    del cfg["standardization"], cfg["data"]["names"], cfg["data"]["files"][0]["sha256"]
    (out / "config.json").write_text(json.dumps(cfg))
    for argv in (["fit", "--resume", str(out)], ["evaluate", str(out)],
                 ["generate", str(out), "--steps", "5", "--out", str(tmp_path / "g.npy")]):
        assert main(argv) == 1
        err = _one_line_error(capsys)
        assert f"{out / 'config.json'}: a damaged dsr run config (missing data.names, " \
            "standardization, data.files[0].sha256)" in err, err
    (out / "config.json").write_text('[1, 2]')  # JSON, but no table
    assert main(["fit", "--resume", str(out)]) == 1
    assert "not a dsr run config" in _one_line_error(capsys)
    assert not (tmp_path / "g.npy").exists() and not (out / "run.lock").exists()


# ------------------------------------------------------------------------- two processes

_HOLDER = """
import os, sys, time
import jax
jax.config.update("jax_enable_x64", True)
from dsr._training import _trainer
from dsr._cli import main

ready, go = sys.argv[1], sys.argv[2]
original = _trainer.Trainer.after_step

def pause_at_2(self, done):  # hold the run mid-training until the test says go
    original(self, done)
    if done == 2:
        open(ready, "w").close()
        deadline = time.monotonic() + 300
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.05)

_trainer.Trainer.after_step = pause_at_2
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.slow
def test_two_concurrent_fits_of_one_run_folder(files, tmp_path, capsys):
    out, ref = tmp_path / "run", tmp_path / "reference"
    argv = ["fit", str(files / "train.npy"), "--no-plots"] + FAST
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    first = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_HOLDER), str(ready),
                              str(go)] + argv + ["--out", str(out)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not ready.exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        capsys.readouterr()
        for second in (["fit", "--resume", str(out), "--no-plots"],
                       argv + ["--out", str(out), "--force"],
                       ["evaluate", str(out), "--test", str(files / "test.csv")] + EVAL):
            assert main(second) == 1
            err = _one_line_error(capsys)
            assert f"the run is in use by process {first.pid}" in err, err
        go.touch()
        stdout, stderr = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, stderr
    assert not (out / "run.lock").exists()
    assert main(argv + ["--out", str(ref)]) == 0  # the same run, never disturbed
    assert eqx.tree_equal(dsr.load(out / "model.eqx"), dsr.load(ref / "model.eqx"))
    more = ["--steps", "6", "--resume-settings", "call", "--no-plots"]
    for folder in (out, ref):  # its checkpoint and history are intact: it resumes
        assert main(["fit", "--resume", str(folder)] + more) == 0
    assert eqx.tree_equal(dsr.load(out / "model.eqx"), dsr.load(ref / "model.eqx"))
    hist = [read_history(str(f / "history.csv")) for f in (out, ref)]
    assert hist[0]["loss"].shape == (2, 6)
    np.testing.assert_array_equal(hist[0]["loss"], hist[1]["loss"])
