"""The example scripts (examples/): command lines, helpers, and (slow) their `--quick` runs."""

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `examples` is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from examples import _common  # noqa: E402

EXAMPLES = ["po_lorenz63", "lorenz96_seq_len", "bursting_neuron", "model_comparison"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_help_and_docstring(name, capsys):
    mod = importlib.import_module(f"examples.{name}")
    doc = mod.__doc__
    assert "papers/001 Fig." in doc and "Scale reduction" in doc and "Measured here" in doc
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--out" in out and "--seed" in out
    assert f"results/examples/{name}" in _common.parser(name, doc).parse_args([]).out


def test_table_formats_numbers_inf_and_text():
    text = _common.table([{"a": "full", "b": 1.23456, "c": math.inf},
                          {"a": "quasi", "b": 1e-5, "c": 0.0}], ["a", "b", "c"])
    lines = text.splitlines()
    assert len(lines) == 3 and len({len(line) for line in lines}) == 1
    assert "1.23" in text and "1.00e-05" in text and "inf" in text


def test_fit_summary_and_json(tmp_path):
    class Res:
        history = {"loss": np.linspace(1, 0.1, 20), "newton_iters": np.full(20, 3),
                   "fallback": np.zeros(20, bool), "applied": np.ones(20, bool),
                   "wall_time": np.full(20, 0.01)}

    s = _common.fit_summary(Res())
    assert s["newton_iters_median"] == 3 and s["fallback_frac"] == 0 and s["skipped_frac"] == 0
    assert math.isclose(s["final_loss"], np.mean(Res.history["loss"][-2:]))
    path = tmp_path / "x.json"
    _common.write_json(str(path), {"runs": [dict(s, D_stsp=math.inf, n=np.int64(2))]}, 0.0)
    back = json.loads(path.read_text())
    assert back["runs"][0]["D_stsp"] == math.inf and back["runs"][0]["n"] == 2
    assert back["runtime_s"] > 0 and "backend" in back["environment"]


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_quick_run(name, tmp_path):
    mod = importlib.import_module(f"examples.{name}")
    mod.main(["--quick", "--out", str(tmp_path)])
    result = json.loads((tmp_path / f"{name}.json").read_text())
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    assert result["runs"] and result["runtime_s"] > 0
    for run in result["runs"]:
        assert math.isfinite(run["final_loss"])
        assert "D_stsp" in run and "RMSE_128" in run
