"""The benchmarks run end to end on a tiny grid (`--quick` plus overrides) and write valid
JSON and a PNG. No assertion on speed: only that every timing is positive and finite. The
two training-step benchmarks are the heaviest cases of the fast suite and run in the slow one."""

import json
import math

import pytest

from benchmarks import device, newton, runtime, scan
from benchmarks._runtime import before_after as _compare


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


@pytest.mark.slow  # the heaviest two (≈ 1–2 min each): in the slow suite
def test_runtime(tmp_path, capsys):
    runtime.main(["--quick", "--T-min", "64", "--T-max", "64", "--M", "2", "--repeats", "2",
                  "--train-steps", "0", "--unroll", "2", "--out", str(tmp_path)])
    p = _load(tmp_path, "runtime")
    recs = p["records"]
    assert {(r["method"], r["T"]) for r in recs} == {
        (m, t) for m in runtime.METHODS for t in (64,)}
    for r in recs:
        assert r["M"] == 2
        assert r["method"] in runtime.METHODS
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
    assert len(p["gradient"]) == 2  # quasi's gradient error per α
    for r in p["gradient"]:
        assert len(r["rel_error"]) == 2 and all(e >= 0 for e in r["rel_error"])
    assert "‖g_q − g‖" in newton.gradient_table(p)


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


def test_scan_combine_and_suggested_entry(tmp_path):
    p = scan.run(T=(12,), M=(2,), combine=True, repeats=2, budget_s=1.0, out=tmp_path,
                 verbose=False)
    full = [r for r in p["records"] if r["kind"] == "full"]
    assert {r["method"] for r in full} == set(scan.METHODS) | set(scan.COMBINES)
    entry = scan.suggested_entry(p)
    assert set(entry["combine"].values()) <= {"matmul", "unrolled"}
    for kind in ("full", "diag"):
        assert [rule[2] in scan.METHODS for rule in entry[kind]] == [True]
    from dsr._solvers._auto import auto_combine, auto_method

    # the entry is in the format `_auto` reads
    import dsr._solvers._auto as auto

    auto.AUTO_TABLE["test-backend"] = entry
    try:
        assert auto_method(100, 2, True, "test-backend") == entry["full"][0][2]
        assert auto_combine(2, "test-backend") == entry["combine"][2]
    finally:
        del auto.AUTO_TABLE["test-backend"]


@pytest.mark.slow  # the heaviest two (≈ 1–2 min each): in the slow suite
def test_runtime_compare_before(tmp_path, capsys):
    """`--compare-before`: the frozen solver and the current one in one process."""
    runtime.main(["--compare-before", "--quick", "--T-max", "32", "--M", "2", "--repeats", "2",
                  "--train-steps", "0", "--groups", "step", "jacobian", "--out", str(tmp_path)])
    p = _load(tmp_path, "runtime_compare")
    cases = {r["case"] for r in p["records"] if r["group"] == "step"}
    assert {"sequential", "fused_before", "fused_after", "associative_before",
            "associative_after", "quasi_before", "quasi_after"} <= cases
    for r in p["records"]:
        assert _positive_finite([r["median_s"], *r["times_s"]])
    r = _compare.ratios(p)[2]
    assert r["fused_step_speedup"] > 0 and r["associative_step_speedup"] > 0
    assert "associative step" in capsys.readouterr().out


@pytest.mark.slow
def test_device_quick(tmp_path, capsys):
    """`benchmarks.device --quick` on CPU: every part runs (or is skipped with a reason)."""
    p = device.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "device.png").stat().st_size > 0
    saved = json.loads((tmp_path / "device.json").read_text())
    assert saved["benchmark"] == "device" and saved["headline"]["paper_speedup"] == 870.0
    assert saved["headline"]["speedup"] > 0
    assert p["ensemble"]["status"] in ("ok", "skipped", "timeout") or p["ensemble"]["status"].startswith("exit")
    _load(tmp_path / "runtime", "runtime")
    _load(tmp_path / "scan", "scan")
    assert "suggested dsr/_auto.py AUTO_TABLE entry" in capsys.readouterr().out


def test_bad_arguments():
    with pytest.raises(SystemExit):
        scan.main(["--methods", "fast"])


@pytest.mark.slow
def test_overhead_quick(tmp_path, capsys):
    from benchmarks import overhead

    overhead.main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    p = _load(tmp_path, "overhead")
    assert {(r["solver"], r["K"], r["M"]) for r in p["records"]} == {
        ("sequential", 1, 3), ("deer", 1, 3)}
    for r in p["records"]:
        for name in ("reference", "fit"):
            assert _positive_finite([r[name]["per_update_s"]])
    first = p["first_update"]
    assert _positive_finite([first[k]["first_update_s"] for k in ("cold", "warm")])
    ev = p["evaluate"]["defaults"]
    assert len(ev) == 2 and ev[0]["settings"]["n_samples"] == 100_000
    assert "| solver | K | M |" in capsys.readouterr().out


def test_solver_choice_rules():
    from benchmarks import solver_choice as sc

    cell = lambda K, T, M, f: dict(K=K, T=T, M=M, faster=f)  # noqa: E731
    assert sc.rules([cell(1, 64, 3, "sequential")]) == [(None, None, None, "sequential")]
    box = [cell(1, 64, 3, "deer"), cell(4, 64, 3, "deer"), cell(4, 200, 16, "sequential")]
    assert sc.rules(box) == [(3, 64, 4, "deer"), (None, None, None, "sequential")]
    mixed = [cell(1, 64, 3, "sequential"), cell(4, 64, 3, "deer")]
    assert sc.rules(mixed) == [(None, None, None, "sequential")]


@pytest.mark.slow
def test_solver_choice_quick(tmp_path):
    from benchmarks import solver_choice as sc

    sc.main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    p = _load(tmp_path, "solver_choice")
    assert len(p["records"]) == 8 and p["rules"]
    assert _positive_finite([c[k] for c in p["records"] for k in ("deer_s", "sequential_s")])
