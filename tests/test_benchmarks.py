"""The benchmarks run end to end on a tiny grid (`--quick` plus overrides) and write valid
JSON and a PNG. No assertion on speed: only that every timing is positive and finite."""

import json
import math

import pytest

from benchmarks import newton, runtime, scan


def _load(out, name):
    assert (out / f"{name}.png").stat().st_size > 0
    payload = json.loads((out / f"{name}.json").read_text())
    assert payload["benchmark"] == name
    env = payload["environment"]
    for key in ("backend", "device", "jax", "jaxlib", "date"):
        assert env[key]
    assert payload["settings"] and payload["records"]
    return payload


def _positive_finite(xs):
    return all(isinstance(x, float) and math.isfinite(x) and x > 0 for x in xs)


def test_runtime(tmp_path, capsys):
    runtime.main(["--quick", "--T-min", "64", "--T-max", "64", "--M", "2", "--repeats", "2",
                  "--train-steps", "0", "--unroll", "2", "--out", str(tmp_path)])
    p = _load(tmp_path, "runtime")
    recs = p["records"]
    assert {(r["method"], r["T"]) for r in recs} == {
        (m, t) for m in runtime.METHODS for t in (64,)}
    for r in recs:
        assert r["M"] == 2
        assert r["method"] in ("sequential", "sequential_unroll", "deer", "quasi")
        assert _positive_finite([r["median_s"], r["min_s"], *r["times_s"]])
        assert len(r["times_s"]) == 2
        assert isinstance(r["newton_iters"], int) and r["newton_iters"] >= 0
        assert (r["newton_iters"] == 0) == r["method"].startswith("sequential")
        assert r["compile_s"] > 0 and r["finite"]
    assert "| M | T |" in capsys.readouterr().out


def test_newton(tmp_path):
    newton.main(["--quick", "--M", "3", "--alphas", "2", "--T", "24", "--windows", "2",
                 "--inits", "pinv", "--train-steps", "0", "--out", str(tmp_path)])
    p = _load(tmp_path, "newton")
    assert p["settings"]["alphas"] == [0.0, 1.0]
    assert len(p["records"]) == 2 * 2  # alphas × jacobians
    for r in p["records"]:
        assert len(r["iterations"]) == len(r["converged"]) == 2
        assert all(1 <= i <= p["settings"]["max_iter"] for i in r["iterations"])
        if r["alpha"] == 1.0 and r["jacobian"] == "full":
            assert r["all_converged"] and r["median_iters"] <= 3  # M = N, fully forced
    assert "α" in newton.table(p)


def test_scan(tmp_path):
    scan.main(["--quick", "--T", "40", "--M", "2", "--repeats", "2", "--out", str(tmp_path)])
    p = _load(tmp_path, "scan")
    assert len(p["records"]) == 2 * 2 * 3  # kinds × directions × methods
    for r in p["records"]:
        assert r["method"] in scan.METHODS and r["direction"] in scan.DIRECTIONS
        assert _positive_finite([r["median_s"], r["min_s"], *r["times_s"]])
    for c in p["cells"]:
        assert c["auto"] in scan.METHODS
        assert c["best_forward"] in scan.METHODS and c["best_reverse"] in scan.METHODS


def test_bad_arguments():
    with pytest.raises(SystemExit):
        scan.main(["--methods", "fast"])
