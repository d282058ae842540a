"""`python -m dsr fit DATA --sweep KEY=V1,V2 ... --runs K --validation F`: one program for the
grid × seeds, `sweep.csv` (one row per member) and `sweep.png` in the run folder, the best
setting's members as `model.eqx`, clear errors before anything runs, and resume."""

import csv
import json
import os

import numpy as np
import pytest

import dsr
from dsr._cli import main
from helpers import cli_signal

FAST = ["--seq-len", "16", "--batch-size", "2", "--steps", "6",
        "--checkpoint-every", "3", "--monitor-every", "0", "--no-progress", "--no-plots",
        "--eval-every", "3"]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    np.save(d / "train.npy", cli_signal(1600))
    return d / "train.npy"


@pytest.fixture(scope="module")
def sweep_run(data_file):
    out = data_file.parent / "run"
    rc = main(["fit", str(data_file), "--out", str(out), "--sweep", "alpha=0.05,0.2",
               "hidden-dim=4,8", "lr=1e-3,3e-3", "--runs", "2", "--validation", "0.25"] + FAST)
    assert rc == 0
    return out


def test_sweep_writes_every_member_and_selects(sweep_run):
    with open(sweep_run / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 * 2
    assert list(rows[0])[:6] == ["member", "setting", "seed", "alpha", "hidden-dim", "lr"]
    assert {r["alpha"] for r in rows} == {"0.05", "0.2"}
    assert os.path.getsize(sweep_run / "sweep.png") > 5000
    cfg = json.loads((sweep_run / "config.json").read_text())
    sw = cfg["fit"]["sweep"]
    scores = np.array([float(r["score"]) for r in rows]).reshape(8, 2)
    medians = np.median(scores, axis=1)
    assert sw["selected"] == int(np.argmin(medians))
    chosen = [r for r in rows if r["selected"] == "1"]
    assert [int(r["member"]) for r in chosen] == sw["members"]
    assert sw["setting"] == {"alpha": float(chosen[0]["alpha"]), "hidden-dim":
                             int(chosen[0]["hidden-dim"]), "lr": float(chosen[0]["lr"])}
    model = dsr.load(str(sweep_run / "model.eqx"))
    assert isinstance(model, dsr.Ensemble) and model.n_members == 2
    assert model[0].hidden_dim == sw["setting"]["hidden-dim"]
    assert cfg["options"]["sweep"] == {"alpha": [0.05, 0.2], "hidden-dim": [4, 8],
                                       "lr": [1e-3, 3e-3]}


def test_sweep_run_resumes(sweep_run, capsys):
    rc = main(["fit", "--resume", str(sweep_run), "--steps", "9", "--resume-settings", "call",
               "--no-progress"])
    assert rc == 0
    cfg = json.loads((sweep_run / "config.json").read_text())
    assert cfg["fit"]["steps_done"] == 9 and "sweep" in cfg["fit"]


@pytest.mark.parametrize("extra, match", [
    (["--sweep", "seq-len=16,32", "--validation", "0.25"], "cannot be swept"),
    (["--sweep", "alpha=0.1,0.2"], "--validation"),
    (["--sweep", "alpha"], "KEY=V1,V2"),
    (["--sweep", "alpha=0.1,2", "--validation", "0.25"], r"alpha must be a number in \[0, 1\]"),
    (["--sweep", "alpha=0.1,0.1", "--validation", "0.25"], "repeats"),
    (["--sweep", "alpha=0.1,0.2", "--alpha", "0.3", "--validation", "0.25"], "both given"),
    (["--sweep", "latent-dim=3,5", "--model", "alrnn", "--relu-units", "1",
      "--validation", "0.25"], "padded with zeros"),
])
def test_sweep_errors_name_the_option(data_file, tmp_path, capsys, extra, match):
    rc = main(["fit", str(data_file), "--out", str(tmp_path / "bad")] + FAST + extra)
    assert rc == 1
    err = capsys.readouterr().err
    assert "--sweep" in err or "--validation" in err
    import re
    assert re.search(match, err), err
    assert not os.path.exists(tmp_path / "bad")
