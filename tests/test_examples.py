"""The paper-findings scripts (examples/fig*.py): command lines, the shared helpers, and
(slow) their `--quick` runs, whose JSON must hold one record per trained member."""

import importlib
import json
import math
import sys
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `examples` is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

import dsr  # noqa: E402
from dsr.metrics import median_mad  # noqa: E402
from examples import _common  # noqa: E402
from examples import _findings as F  # noqa: E402

FINDINGS = {"fig3a_seq_len": "D_stsp_DE", "fig3b_models": "D_stsp_DE", "fig2_jacobians": "D"}


@pytest.mark.parametrize("name", FINDINGS)
def test_help_settings_and_citation(name, capsys):
    mod = importlib.import_module(f"examples.{name}")
    assert "arXiv:2605.12683" in mod.__doc__ and "papers/" not in mod.__doc__
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--quick", "--paper", "--out", "--members", "--steps"):
        assert flag in out
    assert set(mod.SETTINGS) == {"quick", "cpu", "paper"}
    assert all(s["K"] >= 5 for s in mod.SETTINGS.values())


def test_median_mad_counts_diverged_members():
    d = median_mad([1.0, 2.0, 4.0])
    assert (d["median"], d["mad"]) == (2.0, 1.0)
    d = median_mad([1.0, math.inf, math.inf])
    assert d["median"] == math.inf and d["mad"] == math.inf and d["n_inf"] == 2
    d = median_mad([1.0, 3.0, math.nan])  # NaN: undefined, left out and counted
    assert (d["median"], d["mad"], d["n"], d["n_undefined"]) == (2.0, 1.0, 2, 1)
    rows = F.summarize([{"system": "s", "setting": 64, "diverged": d, "D": v}
                        for d, v in ((False, 1.0), (True, math.inf), (False, 2.0))], ["D"])
    assert rows == [{"setting": 64, "system": "s", "members": 3, "diverged": 1, "D": 2.0,
                     "D_mad": 1.0}]


def test_cached_setting_is_computed_once_per_settings(tmp_path):
    calls = []

    def compute(x, checkpoint):
        calls.append(x)
        assert Path(checkpoint).parent == tmp_path / "parts" and checkpoint.endswith(".ckpt")
        Path(checkpoint).write_text("interrupted training")  # deleted once the part is kept
        return [{"member": 0, "D": x}], {"trace": np.arange(3.0) * x}

    a = F.cached(str(tmp_path), "lorenz96 T=64", {"steps": 10}, compute, 2.0)
    b = F.cached(str(tmp_path), "lorenz96 T=64", {"steps": 10}, compute, 5.0)
    assert calls == [2.0] and b[0] == a[0] and np.array_equal(b[1]["trace"], a[1]["trace"])
    c = F.cached(str(tmp_path), "lorenz96 T=64", {"steps": 20}, compute, 3.0)  # new settings
    assert calls == [2.0, 3.0] and c[0] == [{"member": 0, "D": 3.0}]
    assert not list((tmp_path / "parts").glob("*.ckpt"))


def test_train_resumes_from_its_checkpoint(tmp_path):
    """An interrupted setting continues from its checkpoint instead of starting again."""
    data = np.random.default_rng(0).normal(size=(400, 2)).astype(np.float32)
    make = lambda k: dsr.ShPLRNN(2, 2, 8, key=k)  # noqa: E731
    kw = dict(alpha=0.2, seq_len=20, batch_size=4, solver=dsr.Sequential(), monitor_every=0)
    ckpt = str(tmp_path / "part.ckpt")
    key = jax.random.key(0)
    first = F.train(make, 2, data, key, checkpoint=ckpt, steps=6, **kw)
    again = F.train(make, 2, data, key, checkpoint=ckpt, steps=6, **kw)  # nothing left to do
    whole = F.train(make, 2, data, key, steps=6, **kw)
    for a, b, c in zip(*(jax.tree_util.tree_leaves(eqx.filter(r.model, eqx.is_array))
                         for r in (first, again, whole))):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert len(again.history["loss"][0]) == 6


def test_table_and_json_keep_inf(tmp_path):
    text = _common.table([{"a": "full", "b": 1.23456, "c": math.inf}], ["a", "b", "c"])
    assert "1.23" in text and "inf" in text
    path = F.write(str(tmp_path), "x", {"T": [64]}, [{"D": math.inf, "n": np.int64(2)}], [], 0.0)
    back = json.loads(Path(path).read_text())
    assert back["records"][0]["D"] == math.inf and back["records"][0]["n"] == 2
    assert back["runtime_s"] > 0 and "backend" in back["environment"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FINDINGS)
def test_quick_run_writes_one_record_per_member(name, tmp_path):
    mod = importlib.import_module(f"examples.{name}")
    mod.main(["--quick", "--out", str(tmp_path)])
    result = json.loads((tmp_path / f"{name}.json").read_text())
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    s = result["settings"]
    assert s["mode"] == "quick" and s["K"] >= 5
    records = result["records"]
    groups = {(r["system"], r["setting"]) for r in records}
    assert len(records) == s["K"] * len(groups)  # every member reported, none dropped
    for r in records:
        assert {"system", "setting", "member", FINDINGS[name], "RMSE_128",
                "newton_iters_median", "diverged"} <= set(r)
        assert isinstance(r["diverged"], bool) and math.isfinite(r["final_loss"])
        assert r["diverged"] == (r[FINDINGS[name]] == math.inf) or not r["diverged"]
    for g in groups:
        assert sorted(r["member"] for r in records if (r["system"], r["setting"]) == g) == \
            list(range(s["K"]))
    # the kept records redraw the table and picture without training
    png = tmp_path / f"{name}.png"
    png.unlink()
    mod.main(["--quick", "--out", str(tmp_path), "--redraw"])
    again = json.loads((tmp_path / f"{name}.json").read_text())
    assert again["records"] == records and png.stat().st_size > 0
    with pytest.raises(SystemExit, match="--redraw: no record"):
        mod.main(["--quick", "--out", str(tmp_path / "empty"), "--redraw"])


#: The committed findings: (folder under docs/findings, script, extra arguments of its run).
COMMITTED = [(".", name, []) for name in FINDINGS] + [
    ("fig2_po_20000", "fig2_jacobians",
     ["--observe", "PO", "--arms", "full", "quasi", "--steps", "20000"])]


@pytest.mark.slow
@pytest.mark.parametrize("folder,name,extra", COMMITTED)
def test_committed_records_redraw_the_committed_findings(folder, name, extra, tmp_path):
    """`docs/findings/` holds every finding's records: `--redraw` from a copy of them trains
    nothing, reproduces the committed JSON's records and summary, and draws every picture
    the docs show."""
    import shutil

    docs = Path(__file__).resolve().parent.parent / "docs" / "findings" / folder
    shutil.copytree(docs, tmp_path / "f")
    committed = json.loads((docs / f"{name}.json").read_text())
    pictures = sorted(p.name for p in docs.glob(f"{name}*.png"))
    for p in pictures:
        (tmp_path / "f" / p).unlink()
    importlib.import_module(f"examples.{name}").main(["--out", str(tmp_path / "f"), "--redraw"]
                                                     + extra)
    again = json.loads((tmp_path / "f" / f"{name}.json").read_text())
    same = lambda a, b: json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # noqa: E731, NaN-safe
    assert same(again["records"], committed["records"])
    assert same(again["summary"], committed["summary"])
    assert again["settings"]["mode"] == "cpu"
    for p in pictures:
        assert (tmp_path / "f" / p).stat().st_size > 10_000, p


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    """`make demo`'s script at a tiny size: every phase runs, and demo.json holds every
    member's measures, their summary, the untrained reference and the times."""
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "examples.demo", "--steps", "20", "--runs", "2",
                        "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads((tmp_path / "demo.json").read_text())
    assert out["runs"] == 2 and len(out["members"]) == 2
    assert out["summary"]["D_stsp"]["n"] == 2
    assert set(out["seconds"]) >= {"data", "training_evaluation_pictures", "fit"}
    assert math.isfinite(out["untrained"]["D_H"])
    assert (tmp_path / "run" / "plots").is_dir()
