"""The command line `python -m dsr`: fit → evaluate → generate on .npy and .csv files, an
ensemble (--runs 2), --resume after an interruption, config files, bad files; and that a
second `dsr.fit` with the same shapes and settings compiles nothing.

Every CLI call runs in-process through `main(argv)` with one set of small shapes (runs 2,
L 8, T 16, batch 2, 4 steps), so the training step and the evaluation compile once for the
whole file; one test runs a subprocess.
"""

import json
import os
import subprocess
import sys

import equinox as eqx
import jax
import jax.monitoring
import numpy as np
import pytest

import dsr
from dsr._cli import main
from helpers import CLI_EVAL as EVAL, CLI_FAST as FAST, cli_signal as _signal
from dsr._cli._run import read_history



@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    train, test = _signal(400), _signal(400, phase=3.0)
    np.save(d / "train.npy", train)
    np.save(d / "test.npy", test)
    with open(d / "train.csv", "w") as f:  # a header and an extra column to leave out
        f.write("time,a,b\n" + "".join(f"{i},{u},{v}\n" for i, (u, v) in enumerate(train)))
    np.savetxt(d / "test.csv", test, delimiter=",", header="a,b", comments="")
    return d


@pytest.fixture(scope="module")
def npy_run(files):
    out = files / "run_npy"
    rc = main(["fit", str(files / "train.npy"), "--test", str(files / "test.npy"),
               "--out", str(out)] + FAST + EVAL)
    assert rc == 0
    return out


def _json(path):
    with open(path) as f:
        return json.load(f)


def test_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(c in out for c in ("fit", "evaluate", "generate"))
    assert main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--runs" in out and "(default: 1000)" in out and "--embedding" in out
    assert main([]) == 2


def test_fit_evaluate_generate_npy(npy_run, files, capsys):
    cfg = _json(npy_run / "config.json")
    rec = cfg["data"]["files"][0]
    assert rec["sha256"] == dsr._cli._data.sha256(str(files / "train.npy"))
    assert cfg["options"]["steps"] == 4 and cfg["options"]["model"] == "clipped"
    assert cfg["options"]["n_samples"] == 500 and cfg["options"]["alpha"] == 0.3  # fit's default
    assert cfg["fit"]["status"] == "done" and cfg["fit"]["settings"]["members"] == 2
    assert "jax" in cfg["versions"] and cfg["device"]["backend"] == "cpu"
    std = cfg["standardization"]
    np.testing.assert_allclose(std["mean"], np.load(files / "train.npy").mean(0))
    ens = dsr.load(npy_run / "model.eqx")
    assert isinstance(ens, dsr.Ensemble) and len(ens) == 2
    hist = read_history(str(npy_run / "history.csv"))
    assert hist["loss"].shape == (2, 4)
    m = _json(npy_run / "metrics.json")
    assert [r["member"] for r in m["members"]] == [0, 1]
    for name in ("D_stsp", "D_H", "RMSE_n", "lambda_max"):
        s = m["summary"][name]
        vals = [r[name] for r in m["members"]]
        assert s["median"] == pytest.approx(np.median(vals))
        assert s["mad"] == pytest.approx(np.median(np.abs(np.array(vals) - np.median(vals))))
    assert m["summary"]["n_diverged"] == 0
    assert sorted(os.listdir(npy_run / "plots")) == ["loss.png", "spectra.png",
                                                     "state_space.png", "timeseries.png"]
    capsys.readouterr()
    assert main(["evaluate", str(npy_run), "--test", str(files / "test.csv"), "--no-plots"]
                + EVAL) == 0
    assert "median±MAD" in capsys.readouterr().out
    gen = files / "gen.npy"
    assert main(["generate", str(npy_run), "--steps", "30", "--out", str(gen)]) == 0
    assert np.load(gen).shape == (2, 30, 2)
    assert main(["generate", str(npy_run), "--steps", "30", "--out", str(gen), "--member",
                 "1", "--context", str(files / "test.csv"), "--force"]) == 0  # gen.npy exists
    x = np.load(gen)
    assert x.shape == (30, 2) and np.all(np.isfinite(x))
    assert main(["generate", str(npy_run), "--steps", "30", "--out", str(gen), "--member",
                 "5", "--force"]) == 1
    assert "--member 5" in capsys.readouterr().err


def test_csv_with_header_and_columns(files, capsys):
    out = files / "run_csv"
    rc = main(["fit", str(files / "train.csv"), "--columns", "a,b", "--out", str(out),
               "--no-plots"] + FAST)
    assert rc == 0
    cfg = _json(out / "config.json")
    assert cfg["data"]["names"] == ["a", "b"] and "metrics.json" not in os.listdir(out)
    np.testing.assert_allclose(cfg["standardization"]["std"],
                               np.load(files / "train.npy").std(0), rtol=1e-12)
    assert main(["evaluate", str(out), "--test", str(files / "test.csv"), "--no-plots"]
                + EVAL) == 0
    assert _json(out / "metrics.json")["summary"]["members"] == 2
    assert main(["fit", str(files / "train.csv"), "--out", str(out)] + FAST) == 1
    assert "already holds a run" in capsys.readouterr().err


def test_resume_after_interrupt(npy_run, files, monkeypatch, capsys):
    from dsr._training import _trainer

    out = files / "run_resume"  # no --test: training does not depend on it
    args = ["fit", str(files / "train.npy"), "--out", str(out), "--no-plots"] + FAST
    original = _trainer.Trainer.after_step

    def interrupt_at_2(self, done):  # as if Ctrl-C arrived during update 2
        original(self, done)
        if done == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(_trainer.Trainer, "after_step", interrupt_at_2)
    assert main(args) == 130
    monkeypatch.undo()
    assert _json(out / "config.json")["fit"]["status"] == "interrupted"
    assert "fit --resume" in capsys.readouterr().out
    assert main(["fit", "--resume", str(out), "--no-plots"]) == 0
    cfg = _json(out / "config.json")
    assert cfg["fit"]["status"] == "done" and cfg["fit"]["steps_done"] == 4
    assert [s["resumed"] for s in cfg["sessions"]] == [False, True]
    # bit-exact: the same model as the uninterrupted run with the same settings
    assert eqx.tree_equal(dsr.load(out / "model.eqx"), dsr.load(npy_run / "model.eqx"))
    # more steps: the changed setting must be allowed explicitly
    capsys.readouterr()
    assert main(["fit", "--resume", str(out), "--steps", "6"]) == 1
    assert "--resume-settings call" in capsys.readouterr().err
    assert main(["fit", "--resume", str(out), "--steps", "6", "--resume-settings",
                 "checkpoint", "--no-plots"]) == 0
    assert _json(out / "config.json")["fit"]["steps_done"] == 4
    capsys.readouterr()
    assert main(["fit", "--resume", str(out), "--steps", "6", "--resume-settings", "call",
                 "--no-plots"]) == 0
    assert "warning: resuming with this call's settings" in capsys.readouterr().err
    cfg = _json(out / "config.json")
    assert cfg["fit"]["steps_done"] == 6 and cfg["options"]["steps"] == 6
    assert read_history(str(out / "history.csv"))["loss"].shape == (2, 6)
    assert main(["fit", "--resume", str(out), "--model", "lssm"]) == 1
    assert "cannot change on resume" in capsys.readouterr().err


def test_config_file_overridden_by_flag(files, capsys):
    toml = files / "fit.toml"
    toml.write_text('steps = 99\nseed = 3\nhidden-dim = 8\nplots = false\n'
                    'data = ["%s"]\n' % (files / "train.npy"))
    out = files / "run_cfg"
    assert main(["fit", "--config", str(toml), "--out", str(out)] + FAST) == 0
    opts = _json(out / "config.json")["options"]
    assert opts["steps"] == 4 and opts["seed"] == 3 and opts["plots"] is False
    bad = files / "bad.json"
    bad.write_text('{"stepz": 3}')
    assert main(["fit", str(files / "train.npy"), "--config", str(bad), "--out",
                 str(files / "x")]) == 1
    err = capsys.readouterr().err
    assert "bad.json: unknown setting 'stepz'" in err
    bad.write_text('{"alpha": 2}')
    assert main(["fit", str(files / "train.npy"), "--config", str(bad), "--out",
                 str(files / "x")]) == 1
    assert "bad.json: alpha must be a number in [0, 1] or 'adaptive'" in capsys.readouterr().err


def _bad_files(d):
    np.save(d / "three_d.npy", np.zeros((10, 4, 2)))
    np.save(d / "series.npy", np.zeros(500))
    x = _signal(400)
    x[[7, 9]] = np.nan
    np.save(d / "nan_rows.npy", x)
    (d / "text.csv").write_text("a,b\n1.0,2.0\n3.0,abc\n")
    (d / "missing_value.csv").write_text("a,b\n1.0,2.0\n3.0,\n" + "1,2\n" * 300)
    return {"missing.npy": "no such file", "three_d.npy": "expected a (T, N) array",
            "series.npy": "a 1-D series of 500 values", "nan_rows.npy": "2 of 400 rows",
            "text.csv": "line 3, column 'b': 'abc' is not a number",
            "missing_value.csv": "(first: line 3)"}


def test_bad_files_one_line_errors(files, capsys):
    for name, expected in _bad_files(files).items():
        rc = main(["fit", str(files / name), "--out", str(files / "never")] + FAST)
        err = capsys.readouterr().err
        assert rc == 1, name
        assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
        assert name in err and expected in err, err
    assert main(["fit", str(files / "train.npy"), "--alpha", "2", "--out", "x"]) == 1
    assert "--alpha must be a number in [0, 1]" in capsys.readouterr().err
    assert main(["fit", str(files / "train.npy"), "--seq-len", "999", "--out", "x"]) == 1
    assert "needs at least 1000" in capsys.readouterr().err
    assert not os.path.exists(files / "never")


def test_subprocess_exit_code_and_message(tmp_path):
    np.save(tmp_path / "short.npy", np.zeros(50))
    p = subprocess.run([sys.executable, "-m", "dsr", "fit", str(tmp_path / "short.npy"),
                        "--out", str(tmp_path / "run")], capture_output=True, text=True,
                       check=False,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert p.returncode == 1
    assert p.stderr.strip().count("\n") == 0 and "short.npy: a 1-D series" in p.stderr


def test_second_fit_does_not_recompile():
    compiles = []

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    x = _signal(300).astype(np.float32)
    kw = dict(steps=3, seq_len=16, batch_size=2, progress=False, monitor_every=0,
              solver="sequential")
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        dsr.fit(dsr.ShPLRNN(2, 2, 4, key=jax.random.key(0)), x, **kw)
        first = len(compiles)
        dsr.fit(dsr.ShPLRNN(2, 2, 4, key=jax.random.key(1)), x, **kw)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert first > 0 and len(compiles) == first


def test_resume_of_a_finished_run_says_so_and_does_not_evaluate_again(npy_run, capsys):
    metrics, config = npy_run / "metrics.json", npy_run / "config.json"
    before = (metrics.stat().st_mtime_ns, config.read_bytes())
    capsys.readouterr()
    assert main(["fit", "--resume", str(npy_run)]) == 0
    out = capsys.readouterr().out
    assert "the run is complete (4 of 4 updates)" in out and "evaluation:" not in out
    assert (metrics.stat().st_mtime_ns, config.read_bytes()) == before


def test_denoise_smooths_training_and_validation_files_and_records_it(files, npy_run):
    out = files / "run_denoise"
    rc = main(["fit", str(files / "train.npy"), "--validation", str(files / "test.npy"),
               "--denoise", "--out", str(out), "--no-plots"] + FAST)
    assert rc == 0
    rec = _json(out / "config.json")["data"]["denoise"]
    assert [os.path.basename(r["file"]) for r in rec] == ["train.npy", "test.npy"]
    assert all(w >= 7 for r in rec for w in r["window"])  # the signal's 2 % noise is found
    cfg = _json(out / "config.json")
    std = np.asarray(cfg["standardization"]["std"])
    np.testing.assert_allclose(rec[0]["noise"], 0.02 / std, rtol=0.15)
    assert _json(npy_run / "config.json")["data"]["denoise"] is None
