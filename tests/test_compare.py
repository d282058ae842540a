"""`python -m benchmarks.compare`: the pieces (fast) and the whole comparison on a tiny grid
(slow). The whole module needs the `compare` extra (dysts, pysindy, reservoirpy), which
`make test-slow` installs, so all of it runs in the slow suite (never skipped)."""

import json
import math
from pathlib import Path

import jax

import numpy as np
import pytest

import dsr

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

from benchmarks.compare import __main__ as cli  # noqa: E402
from benchmarks.compare._measures import MEASURES, valid_time  # noqa: E402
from benchmarks.compare import _report  # noqa: E402
from benchmarks.compare._run import METHODS  # noqa: E402
from benchmarks.compare._systems import DEFAULT_SYSTEMS  # noqa: E402
from benchmarks.compare._var import fit_var  # noqa: E402


def test_var_recovers_a_known_linear_system():
    rng = np.random.default_rng(0)
    A = np.array([[0.9, -0.2], [0.15, 0.8]])
    c = np.array([0.1, -0.3])
    x = np.zeros((4000, 2))
    for t in range(1, len(x)):
        x[t] = A @ x[t - 1] + c + 0.1 * rng.standard_normal(2)
    A_hat, c_hat = fit_var(x)
    np.testing.assert_allclose(A_hat, A, atol=0.03)
    np.testing.assert_allclose(c_hat, c, atol=0.03)


def test_bad_system_name_stops_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        cli.main(["--systems", "Lorenz", "NoSuchSystem", "--out", str(out)])
    msg = str(e.value)
    assert "--systems" in msg and "NoSuchSystem" in msg and "Lorenz" in msg  # the known names
    assert not out.exists()


def test_bad_members_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--members", "0", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "--members" in capsys.readouterr().err


def test_median_mad_and_valid_time():
    """The comparison's tables use dsr's one median ± MAD rule (NaN left out, inf kept in
    the median and the MAD)."""
    assert _report.median_mad is dsr.metrics.median_mad
    s = _report.median_mad(np.array([1.0, 2.0, 4.0, math.inf, math.nan]))
    assert s["median"] == 3.0 and s["mad"] == 1.5 and s["n_undefined"] == 1
    s = _report.median_mad([1.0, math.inf, math.inf])
    assert s["median"] == math.inf and s["mad"] == math.inf
    err = np.array([[0.1, 0.2, 0.6, 0.1], [0.1, 0.1, 0.1, 0.1]])
    np.testing.assert_allclose(valid_time(err, dt=0.5, lyap=2.0), [2.0, 4.0])


def test_max_lyapunov_jvp_matches_dsr_and_a_linear_map():
    import jax.numpy as jnp

    from dsr.metrics import max_lyapunov

    from benchmarks.compare._measures import max_lyapunov_jvp

    A = jnp.array([[2.0, 0.3], [0.0, 0.5]])
    lam = max_lyapunov_jvp(lambda z: A @ z, jnp.ones(2), 200, 20, dt=0.5)
    assert abs(lam - 2 * np.log(2.0)) < 1e-3

    def step(z):  # the Hénon map, λ ≈ 0.42
        return jnp.array([1 - 1.4 * z[0] ** 2 + z[1], 0.3 * z[0]])

    ref = float(max_lyapunov(step, jax.jacfwd(step), jnp.array([0.1, 0.1]), 3000,
                             n_transient=100))
    ours = max_lyapunov_jvp(step, jnp.array([0.1, 0.1]), 3000, 100, dt=1.0)
    assert abs(ours - ref) < 1e-3 and abs(ours - 0.42) < 0.02


def test_esn_in_jax_equals_reservoirpy():
    from benchmarks.compare._esn import check_against_reservoirpy

    x = np.sin(np.linspace(0, 60, 600))[:, None] * np.array([1.0, 0.5])
    assert check_against_reservoirpy(x, n=40) < 1e-4


def _check_payload(out, systems, methods, members, variants=("clean",)):
    p = json.loads((out / "compare.json").read_text())
    assert p["complete"] and p["settings"]["systems"] == list(systems)
    for v in variants:  # one figure per variant
        assert (out / f"compare_{v}.png").stat().st_size > 0
    assert (out / "table.md").exists()
    cells = {(c["system"], c["variant"], c["method"]): c for c in p["cells"]}
    for s in systems:
        for v in variants:
            floor = cells[(s, v, "floor")]["members"][0]
            for meas in set(MEASURES) - {"train_s"}:
                assert math.isfinite(float(floor[meas])), (s, meas)
            assert float(floor["D_stsp"]) >= 0
            for m in methods:
                mem = cells[(s, v, m)]["members"]
                k = 1 if m in ("SINDy", "VAR1") else members
                assert len(mem) == k, (s, m)
                for x in mem:
                    assert not x.get("failed"), x
                    for meas in MEASURES + ("lambda_max", "diverged", "collapsed"):
                        assert meas in x, (s, m, meas)
    return p


@pytest.mark.slow
def test_quick_run_writes_every_method_member_and_measure(tmp_path):
    out = tmp_path / "q"
    assert cli.main(["--quick", "--out", str(out)]) == 0
    p = _check_payload(out, cli.QUICK_SYSTEMS, METHODS, 2)
    assert p["settings"]["members"] == 2 and p["settings"]["quick"]
    n = len(list((out / "cells").glob("*.json")))
    assert cli.main(["--quick", "--out", str(out)]) == 0  # resumes: every cell from its file
    assert len(list((out / "cells").glob("*.json"))) == n
    assert "done before" in (out / "log.txt").read_text()
    # the re-selection probe resumes a finished sweep from its checkpoint (nothing trains)
    from benchmarks.compare import _probe_reselect

    rec = tmp_path / "reselect.json"
    assert _probe_reselect.main(["--run", str(out), "--cells", "Lorenz/clean", "--run-len",
                                 "1000", "--out", str(rec)]) == 0
    r = json.loads(rec.read_text())[f"{out}:Lorenz/clean"]
    assert len(r["scores"]) == 2 * 2 and 0 <= r["selected"] < 2 and len(r["test"]) == 2
    with pytest.raises(SystemExit):
        _probe_reselect.main(["--run", str(out), "--cells", "Lorenz", "--out", str(rec)])
    # the rules probe: every member scored by each validation rule and on the test
    from benchmarks.compare import _probe_rules

    rec = tmp_path / "rules.json"
    assert _probe_rules.main(["--run", str(out), "--cells", "Lorenz/clean", "--run-len",
                              "1000", "--out", str(rec)]) == 0
    r = json.loads(rec.read_text())[f"{out}:Lorenz/clean"]
    assert len(r["members"]) == 2 * 2 and set(r["rules"]) == set(_probe_rules.RULES)
    fit_rule = r["rules"]["fit"]
    assert fit_rule["selected"] == r["selected_by_fit"]  # `fit`'s own rule selects as fit did
    assert len(fit_rule["test_D_stsp"]) == 2 and math.isfinite(float(r["best_other_D_stsp"]))
    # the orbits probe: every method's members on 2 test orbits; orbit 0 is the run's test
    from benchmarks.compare import _probe_orbits

    rec = tmp_path / "orbits.json"
    assert _probe_orbits.main(["--run", str(out), "--orbits", "2", "--cells", "Lorenz/clean",
                               "--out", str(rec)]) == 0
    r = json.loads(rec.read_text())[f"{out}:Lorenz/clean"]
    assert set(r["methods"]) == set(p["settings"]["methods"])
    for method, (same, n) in r["reproduced"].items():
        assert same == n and n == (1 if method in ("SINDy", "VAR1") else 2), method
    assert all(len(m["orbits"]) == 2 for v in r["methods"].values() for m in v)
    # every setting of the dsr sweep on the same orbits: the selected setting's members are
    # the cell's own, score for score
    assert _probe_orbits.main(["--run", str(out), "--orbits", "2", "--cells", "Lorenz/clean",
                               "--sweep", "--out", str(rec)]) == 0
    w = json.loads(rec.read_text())[f"{out}:Lorenz/clean:sweep"]
    assert len(w["members"]) == 2 * 2 and len(w["setting_medians"]) == len(w["settings"])
    chosen = [m for m in w["members"] if m["setting"] == w["selected"]]
    assert [[o["D_stsp"] for o in m["orbits"]] for m in chosen] == [
        [o["D_stsp"] for o in m["orbits"]] for m in r["methods"]["shPLRNN"]]
    lines = _probe_orbits.sweep_table([(r, w)]).splitlines()
    assert len(lines) == 3 and lines[2].startswith("| Lorenz | clean |")
    # the contexts probe: every member's fit score from 2 validation contexts, each rule's
    # selection judged on the orbits' sweep record; `fit`'s rule selects as the run did
    from benchmarks.compare import _probe_contexts

    ctx = tmp_path / "contexts.json"
    assert _probe_contexts.main(["--run", str(out), "--orbits-record", str(rec), "--contexts",
                                 "2", "--out", str(ctx)]) == 0
    c = json.loads(ctx.read_text())[f"{out}:Lorenz/clean"]
    assert set(c["rules"]) == set(_probe_contexts.RULES) and len(c["scores"]) == 2 * 2
    assert c["rules"]["fit"]["selected"] == w["selected"]
    assert c["rules"]["fit"]["median_D_stsp"] == w["setting_medians"][w["selected"]]
    with pytest.raises(SystemExit):  # a cell without a --sweep record: an error, nothing run
        _probe_contexts.main(["--run", str(out), "--orbits-record", str(rec), "--cells",
                              "Thomas/clean", "--out", str(ctx)])
    # a run without its (uncommitted) checkpoints: an error naming --run, nothing trained
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "settings.json").write_text((out / "settings.json").read_text())
    with pytest.raises(SystemExit):
        _probe_orbits.main(["--run", str(bare), "--cells", "Lorenz/clean", "--out", str(rec)])
    assert not (bare / "ckpt").exists()


def test_unsupported_dysts_names_stop_with_one_line_before_anything_runs(tmp_path):
    for name, why in [("MackeyGlass", "delay"), ("Henon", "discrete map"),
                      ("Torus", "non-autonomous")]:
        out = tmp_path / name
        with pytest.raises(SystemExit) as e:
            cli.main(["--systems", "Lorenz", name, "--out", str(out)])
        msg = str(e.value)
        assert "--systems" in msg and name in msg and why in msg and "\n" not in msg, msg
        assert not out.exists()


def test_fallback_map_equals_the_jax_map():
    """Colpitts' dysts `rhs` is a method (it did not trace before); its jax.numpy copy is used,
    and the fallback's host RK4 map (dysts' NumPy code, finite-difference JVP) agrees with it."""
    import jax.numpy as jnp

    from benchmarks.compare._dysts import host_rk4_map
    from benchmarks.compare._systems import System

    s = System("Colpitts", 100)
    assert s.field is not None and not s.field_note
    assert System("Colpitts", 100, numpy_rhs=True).field is None
    with jax.enable_x64(True):
        f_jax, f_host = s.flow_map(20), host_rk4_map(s.np_rhs, s.dt, 20)
        x = jnp.asarray(s.x0 + 0.01)
        v = jnp.ones_like(x) / np.sqrt(x.size)
        np.testing.assert_allclose(f_host(x), f_jax(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.vmap(f_host)(jnp.stack([x, 2 * x]))[1], f_jax(2 * x),
                                   rtol=1e-12, atol=1e-12)
        w_jax = jax.jvp(f_jax, (x,), (v,))[1]
        w_host = jax.jit(lambda x, v: jax.jvp(f_host, (x,), (v,))[1])(x, v)
        np.testing.assert_allclose(w_host, w_jax, rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_any_dysts_system_by_name_with_the_fallback(tmp_path):
    """Two systems outside the default set on dysts' own NumPy right-hand side (the fallback,
    forced for both by `--numpy-rhs`): scipy data, the floor's map through a host callback.
    Colpitts' right-hand side is a method with `np.heaviside`; ForcedBrusselator has a phase
    coordinate that dysts post-processes (sin z), so its floor warms up by lookup."""
    names = ["Colpitts", "ForcedBrusselator"]
    assert not set(names) & set(DEFAULT_SYSTEMS)
    out = tmp_path / "s"
    assert cli.main(["--quick", "--systems", *names, "--methods", "VAR1", "--members", "1",
                     "--variants", "noisy", "--numpy-rhs", "--out", str(out)]) == 0
    p = _check_payload(out, names, ["VAR1"], 1, variants=("noisy",))
    assert p["settings"]["numpy_rhs"]
    for n in names:
        info = p["systems"][n]
        assert info["integrator"].startswith("scipy solve_ivp"), info
        assert "host callback" in info["floor_map"] and info["fallback_reason"], info
    assert p["systems"]["ForcedBrusselator"]["postprocessed"]
    assert "scipy solve_ivp" in (out / "table.md").read_text()


def test_evidence_counts_selections_and_ratios_to_the_cells_best():
    from benchmarks.compare._evidence import evidence

    grid = [{"alpha": 0.1}, {"alpha": 0.3}]
    cells = [dict(sweep=dict(settings=grid, setting_scores=s, selected=int(np.argmin(s))))
             for s in ([1.0, 2.0], [4.0, 2.0], [0.5, 1000.5])]
    cells.append(dict(sweep=dict(settings=[{"alpha": 0.2}], setting_scores=[1.0], selected=0)))
    rows = evidence(cells)  # the last cell has another grid: left out
    assert [r["selected"] for r in rows] == [2, 1] and rows[0]["cells"] == 3
    assert rows[0]["ratio_median"] == 1.0 and rows[1]["ratio_median"] == 2.0
    assert [r["within_1_5"] for r in rows] == [2, 1]
    assert rows[1]["label"] == "α = 0.3"


def test_docs_page_without_its_section_stops_before_anything_runs(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("<!-- compare:begin -->\n<!-- compare:end -->\n")
    with pytest.raises(SystemExit, match="compare-extra:begin"):
        cli.main(["--systems", "Lorenz", "--out", str(tmp_path / "o"), "--docs", str(page),
                  "--section", "compare-extra"])
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):
        cli.main(["--out", str(tmp_path / "o"), "--section", "extra"])
    assert "--section needs --docs" in capsys.readouterr().err


def test_members_table_has_one_row_per_dsr_member():
    info = dict(alpha=0.3, learning_rate=0.005, member=7, seed=1, val_score=0.2, best_step=450)
    cell = dict(system="Lorenz", variant="clean", method="shPLRNN",
                members=[dict(D_stsp=0.01, D_H=0.02, status="ok", info=info)] * 3)
    sindy = dict(system="Lorenz", variant="clean", method="SINDy", members=[dict(D_stsp=1.0)])
    md = _report.members_table([cell, sindy], {})
    rows = [r for r in md if r.startswith("| Lorenz")]
    assert len(rows) == 3 and "α = 0.3, lr = 0.005" in rows[0] and "| 7 (1) |" in rows[0]


def test_dsr_grid_alpha_noise_is_recorded_and_a_run_with_another_grid_is_refused(tmp_path,
                                                                                capsys):
    from benchmarks.compare._dsr_method import GRIDS, grid_of

    axes, base = grid_of({"grid": "full", "dsr_grid": "alpha-noise"})
    assert len(dsr.Grid(**axes)) == 8 == len(dsr.Grid(**grid_of({"grid": "full"})[0]))
    assert axes["noise"] == (0.0, 0.05) and base["learning_rate"] == 5e-3
    assert grid_of({"grid": "full"}) == GRIDS["alpha-lr"]  # runs without the key: unchanged
    out = tmp_path / "o"
    out.mkdir()  # the default rerun's settings (alpha-lr): resuming it with alpha-noise stops
    (out / "settings.json").write_text((ROOT / "docs/compare/rerun/settings.json").read_text())
    with pytest.raises(SystemExit, match=r"other settings \(\['dsr', 'dsr_grid'\]\)"):
        cli.main(["--systems", "Lorenz", "--dsr-grid", "alpha-noise", "--out", str(out)])
    with pytest.raises(SystemExit):
        cli.main(["--quick", "--dsr-grid", "alpha-noise", "--out", str(tmp_path / "q")])
    assert "--dsr-grid" in capsys.readouterr().err


def test_denoise_options_are_recorded_and_a_run_without_them_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()  # the default rerun's settings (no smoothing): resuming it with smoothing stops
    (out / "settings.json").write_text((ROOT / "docs/compare/rerun/settings.json").read_text())
    with pytest.raises(SystemExit, match=r"other settings \(\['dsr_denoise'\]\)"):
        cli.main(["--systems", "Lorenz", "--dsr-denoise", "--out", str(out)])
    with pytest.raises(SystemExit, match=r"other settings \(\['denoise_all', 'dsr_denoise'\]\)"):
        cli.main(["--systems", "Lorenz", "--denoise-all", "--out", str(out)])
    with pytest.raises(SystemExit):
        cli.main(["--dsr-denoise", "--denoise-all", "--out", str(tmp_path / "q")])
    assert "--denoise-all" in capsys.readouterr().err


def test_status_factor_is_recorded_and_sets_fits_status_steps(tmp_path, capsys):
    """`--dsr-status-factor F`: dsr's validation runs judge their status over F × the
    validation length; runs without the key (every recorded one) keep 1 ×."""
    from benchmarks.compare._dsr_method import status_steps

    data = {"val": np.zeros((2000, 3))}
    assert status_steps(data, {}) == 2000 and status_steps(data, {"dsr_status_factor": 4}) == 8000
    out = tmp_path / "o"
    out.mkdir()
    (out / "settings.json").write_text((ROOT / "docs/compare/rerun/settings.json").read_text())
    with pytest.raises(SystemExit, match=r"other settings \(\['dsr_status_factor'\]\)"):
        cli.main(["--systems", "Lorenz", "--dsr-status-factor", "4", "--out", str(out)])
    with pytest.raises(SystemExit):
        cli.main(["--dsr-status-factor", "0", "--out", str(tmp_path / "q")])
    assert "--dsr-status-factor must be ≥ 1" in capsys.readouterr().err


def test_denoised_data_smooths_training_and_validation_only_and_records_it():
    from benchmarks.compare._dsr_method import denoised
    from benchmarks.compare._run import _members

    t = np.arange(3000) / 100 * 2 * np.pi
    clean = np.stack([np.sin(t), np.cos(1.3 * t)], 1).astype(np.float32)
    noisy = clean + 0.05 * np.random.default_rng(0).standard_normal(clean.shape).astype(
        np.float32)
    data = dict(train=noisy[:2000], val=noisy[2000:2500], test=clean[2500:], floor=clean[2500:])
    d, rec = denoised(data)
    assert d["test"] is data["test"] and d["floor"] is data["floor"]
    for split in ("train", "val"):
        assert all(w >= 7 for w in rec[split]["window"])
        assert np.sqrt(np.mean((d[split] - clean[:2000] if split == "train" else
                                d[split] - clean[2000:2500]) ** 2)) < 0.03
    same, rec0 = denoised(dict(data, train=clean[:2000], val=clean[2000:2500]))
    assert np.array_equal(same["train"], clean[:2000]) and rec0["val"]["window"] == [0, 0]
    # --denoise-all: the other methods are fitted to the smoothed data, and the cell says so
    s = dict(members=1, horizon=50, denoise_all=True)
    (m,), record = _members("VAR1", data, s, None, None, "x", "noisy")
    assert record["denoise"] == rec
    (m0,), record0 = _members("VAR1", data, dict(s, denoise_all=False), None, None, "x", "noisy")
    assert record0 == {} and m.info != m0.info


def test_validation_probe_scores_the_true_system_and_reads_a_runs_sweeps(tmp_path):
    from benchmarks.compare import _probe_validation as probe

    r = probe.probe_one("Lorenz", "clean")
    assert len(r["val_score_pieces"]) == len(r["test_D_stsp_pieces"]) == probe.PIECES
    assert r["n_val"] == 2000 and r["bins"] == 12  # n_bins(2000, 3), as dsr.fit's validation
    # a 4x longer run of the truth scores better than its typical 2,000-step piece, both ways
    assert r["val_score_whole"] < np.median(r["val_score_pieces"])
    assert r["test_D_stsp_whole"] < np.median(r["test_D_stsp_pieces"])
    sw = probe.sweep_scores(str(ROOT / "docs/compare/rerun"), "Lorenz", "clean")
    assert sw["member_min"] <= sw["selected_setting_median"] <= sw["member_max"]
    assert probe.sweep_scores(str(tmp_path), "Lorenz", "clean") is None


def _fake_run(root, model, fits, tests, others=None):
    """A finished run's files as `_probe_classes` reads them: one cell, its sweep's
    settings (α × learning rate) and a `_probe_rules` record entry for its members."""
    run = root / model
    (run / "cells").mkdir(parents=True)
    settings = [dict(alpha=a, learning_rate=lr) for a in (0.1, 0.2) for lr in (2e-3, 5e-3)]
    (run / "cells" / f"Lorenz__clean__{model}.json").write_text(
        json.dumps(dict(sweep=dict(settings=settings))))
    for meth, (d, h) in (others or {}).items():
        members = [dict(D_stsp=d, D_H=h), dict(D_stsp=d, D_H=h)]
        (run / "cells" / f"Lorenz__clean__{meth}.json").write_text(
            json.dumps(dict(members=members)))
    members = [dict(setting=g, fit=f, test_D_stsp=t, test_D_H=t / 10, test_status="ok")
               for g in range(4) for f, t in zip(fits[g], tests[g])]
    return str(run), dict(run=str(run), cell="Lorenz/clean", model=model, members=members)


def test_classes_probe_pools_both_runs_and_selects_by_validation_only(tmp_path, capsys):
    from benchmarks.compare import _probe_classes

    # settings 1 and 3 have learning rate 5e-3; the plain run's best validation median is
    # setting 0 (excluded by --where), the clipped run's setting 3 beats the plain setting 1
    a, ca = _fake_run(tmp_path, "shPLRNN", [(0.1, 0.1), (0.5, 0.7), (0.9, 0.9), (2.0, 2.0)],
                      [(9.0, 9.0), (0.2, 0.4), (1.0, 1.0), (1.0, 1.0)],
                      others=dict(SINDy=(0.5, 0.02), ESN=(0.8, 0.01)))
    b, cb = _fake_run(tmp_path, "clipped", [(1.0, 1.0), (0.9, 0.9), (1.0, 1.0), (0.3, 0.4)],
                      [(0.1, 0.1), (0.1, 0.1), (0.1, 0.1), (0.6, 1.4)])
    rec = tmp_path / "rules.json"
    rec.write_text(json.dumps({f"{a}:Lorenz/clean": ca, f"{b}:Lorenz/clean": cb}))
    out = tmp_path / "classes.json"
    assert _probe_classes.main(["--runs", a, b, "--record", str(rec), "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    cell = r["cells"]["Lorenz/clean"]
    p = cell["pooled"]
    assert p["model"] == "clipped" and p["setting"] == dict(alpha=0.2, learning_rate=5e-3)
    assert p["median_D_stsp"] == pytest.approx(1.0)  # not the test-best members of setting 0
    assert p["ratio_D_stsp"] == pytest.approx(1.0 / 0.5)  # best other: SINDy's 0.5
    assert p["ratio_D_H"] == pytest.approx(0.1 / 0.01)  # best other D_H: the ESN's 0.01
    assert cell[f"{a}|where"]["setting"]["alpha"] == 0.1  # plain alone, lr 5e-3: setting 1
    assert cell[f"{a}|all"]["median_D_stsp"] == pytest.approx(9.0)  # full grid: setting 0
    assert r["summary"]["pooled"] == dict(cells=1, best_D_stsp=0, best_D_H=0, within_2x=1,
                                          median_not_ok=0)
    # the pooled grid trained for real: its plain alpha-0.2 setting twice as bad as predicted
    run = tmp_path / "pooled"
    (run / "cells").mkdir(parents=True)
    grid = [dict(model=m, alpha=x) for m in ("shPLRNN", "clipped") for x in (0.1, 0.2)]
    (run / "cells" / "Lorenz__clean__shPLRNN.json").write_text(
        json.dumps(dict(sweep=dict(settings=grid))))
    tests = [(0.2, 0.4), (2.0, 2.0), (0.1, 0.1), (0.6, 1.4)]
    cp = dict(run=str(run), cell="Lorenz/clean", model="shPLRNN", members=[
        dict(setting=g, fit=f, test_D_stsp=t, test_D_H=t / 10, test_status="ok")
        for g, (fs, ts) in enumerate(zip([(0.5, 0.7), (0.9, 0.9), (0.9, 0.9), (0.3, 0.4)],
                                         tests)) for f, t in zip(fs, ts)])
    rec.write_text(json.dumps({f"{a}:Lorenz/clean": ca, f"{b}:Lorenz/clean": cb,
                               f"{run}:Lorenz/clean": cp}))
    assert _probe_classes.main(["--runs", a, b, "--record", str(rec), "--against", str(run),
                                "--out", str(out)]) == 0
    ag = json.loads(out.read_text())["against"]
    assert ag["cells"]["Lorenz/clean"]["run"]["setting"] == dict(model="clipped", alpha=0.2)
    folds = {(p["model"], p["alpha"]): p["fold"] for p in ag["pairs"]}
    assert folds == {("shPLRNN", 0.1): pytest.approx(1.0), ("shPLRNN", 0.2): pytest.approx(2.0),
                     ("clipped", 0.1): pytest.approx(1.0), ("clipped", 0.2): pytest.approx(1.0)}
    assert ag["summary"]["settings"] == 4 and ag["summary"]["settings_within_2x"] == 4
    with pytest.raises(SystemExit):
        _probe_classes.main(["--runs", a, b, "--record", str(rec), "--where", "lr",
                             "--out", str(out)])
    assert "--where" in capsys.readouterr().err


def test_dsr_grid_alpha_model_trains_one_program_per_class_and_selects_over_both(tmp_path,
                                                                                capsys):
    out = tmp_path / "m"
    args = ["--quick", "--systems", "Lorenz", "--methods", "shPLRNN", "VAR1", "--dsr-grid",
            "alpha-model", "--out", str(out)]
    assert cli.main(args) == 0
    cell = json.loads((out / "cells" / "Lorenz__clean__shPLRNN.json").read_text())
    sw = cell["sweep"]
    assert sw["keys"] == ["model", "alpha"] and len(sw["settings"]) == 2 and sw["runs"] == 2
    assert [g["model"] for g in sw["settings"]] == ["shPLRNN", "clipped_shPLRNN"]
    assert [r["member"] for r in sw["rows"]] == [0, 1, 2, 3]
    scores = np.where(np.isnan(sw["setting_scores"]), np.inf, sw["setting_scores"])
    assert sw["selected"] == int(np.argmin(scores))  # the rule over both programs' settings
    for g, sc in enumerate(sw["setting_scores"]):  # each setting's score: its seeds' median
        mine = [r["score"] for r in sw["rows"] if r["setting"] == g]
        assert sc == pytest.approx(float(np.median(mine)))
    cls = {"shPLRNN": "ShPLRNN", "clipped_shPLRNN": "ClippedShPLRNN"}
    want = cls[sw["settings"][sw["selected"]]["model"]]
    assert [m["info"]["model"] for m in cell["members"]] == [want, want]
    assert [p["model"] for p in cell["fit"]["programs"]] == ["shPLRNN", "clipped_shPLRNN"]
    for name in ("shPLRNN", "clipped_shPLRNN"):  # one checkpoint per class's program
        assert (out / "ckpt" / f"Lorenz__clean__shPLRNN.{name}.ckpt").exists()
    assert "model = " in (out / "table.md").read_text()
    settings = json.loads((out / "settings.json").read_text())
    assert settings["dsr_grid"] == "alpha-model"
    from benchmarks.compare import _probe_rules  # reads both programs as one table

    rec = tmp_path / "rules.json"
    assert _probe_rules.main(["--run", str(out), "--cells", "Lorenz/clean", "--run-len",
                              "1000", "--out", str(rec)]) == 0
    r = json.loads(rec.read_text())[f"{out}:Lorenz/clean"]
    assert [m["setting"] for m in r["members"]] == [0, 0, 1, 1]
    assert r["rules"]["fit"]["selected"] == r["selected_by_fit"] == sw["selected"]
    assert [m["fit"] for m in r["members"]] == pytest.approx([x["score"] for x in sw["rows"]])
    with pytest.raises(SystemExit):  # the class is the axis: dsr's method must be the family
        cli.main(["--quick", "--methods", "clipped_shPLRNN", "--dsr-grid", "alpha-model",
                  "--out", str(tmp_path / "x")])
    assert "--methods must name shPLRNN" in capsys.readouterr().err


def test_rounding_probe_finds_float64_copies_equal(tmp_path):
    """The same member trained alone and among other settings: in float64 the copies agree
    to rounding (what the probe's float32 rows are set against)."""
    import subprocess
    import sys

    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "benchmarks.compare._probe_rounding", "--steps", "3",
                    "--float64", "--out", str(out)], check=True, cwd=ROOT, timeout=600)
    rows = json.loads(out.read_text())["rows"]
    assert [(r["steps"], r["seed"], r["dtype"]) for r in rows] == [(3, 0, "float64"),
                                                                    (3, 1, "float64")]
    assert all(r["max_param_diff"] < 1e-12 for r in rows)
    assert all(math.isfinite(r["D_stsp_alone"]) for r in rows)


def test_orbits_probe_status_and_counts_follow_their_definition():
    from benchmarks.compare import _probe_orbits as po

    assert po.member_status(["ok"] * 4 + ["off"] * 4) == "ok"  # at least half ok
    assert po.member_status(["ok"] * 3 + ["off"] * 3 + ["collapsed"] * 2) == "off"
    assert po.member_status(["ok"] * 7 + ["diverged"]) == "diverged"
    m = po._summary([dict(D_stsp=1.0, D_H=0.1, status="ok"),
                     dict(D_stsp=3.0, D_H=0.3, status="ok")])
    assert m["D_stsp"] == 2.0 and abs(m["D_H"] - 0.2) < 1e-12 and m["status"] == "ok"
    assert po._summary([dict(D_stsp=1.0, D_H=0.1, status="ok"),
                        dict(D_stsp=math.inf, D_H=1.0, status="diverged")])["D_stsp"] == math.inf

    def member(d0, d1, h=0.1, status="ok"):
        orbits = [dict(D_stsp=d0, D_H=h, status=status), dict(D_stsp=d1, D_H=h, status=status)]
        return po._summary(orbits)

    # dsr better than SINDy on the mean over orbits, worse than 2 x on orbit 0 alone
    cell = dict(methods=dict(shPLRNN=[member(0.5, 0.1, 0.05), member(0.5, 0.1, 0.05)],
                             SINDy=[member(0.1, 1.0)], VAR1=[member(9.0, 9.0)]))
    r, r0 = po.row(cell), po.row(cell, 0)
    assert r["best_other"] == "SINDy" and r["ratio"] == 0.3 / 0.55 and r["best_D_stsp"]
    assert r0["ratio"] == 5.0 and not r0["best_D_stsp"] and r["best_D_H"]
    k = po.counts([cell, dict(methods=dict(cell["methods"], shPLRNN=[
        member(1.0, 1.0, status="off"), member(1.0, 1.0)]))])
    assert (k["rows"], k["best_D_stsp"], k["within_2x"], k["median_not_ok"]) == (2, 1, 2, 1)
    assert k["members_ok"] == 3 and k["members"] == 4


def test_runs_probe_counts_a_copied_cell_once_and_applies_the_bar(tmp_path, capsys):
    """`_probe_runs`: the bar per row (ratio ≤ 2, median member ok), a dsr cell copied into a
    later run counted once, the product of the rows' pass shares."""
    from benchmarks.compare import _probe_runs

    def run(name, dsr_rows):
        cells = []
        for (system, d_stsp, statuses) in dsr_rows:
            cells.append(dict(system=system, variant="clean", method="shPLRNN", members=[
                dict(D_stsp=x, D_H=0.1, status=s) for x, s in zip(d_stsp, statuses)]))
            cells.append(dict(system=system, variant="clean", method="SINDy",
                              members=[dict(D_stsp=1.0, D_H=0.2, status="ok")]))
        settings = dict(systems=["A", "B"], variants=["clean"], methods=["shPLRNN", "SINDy"])
        folder = tmp_path / name
        folder.mkdir()
        (folder / "compare.json").write_text(json.dumps(dict(settings=settings, cells=cells)))
        return str(folder)

    ok3 = ["ok"] * 3
    a = run("a", [("A", [1.0, 1.5, 3.0], ok3), ("B", [2.5, 3.0, 0.1], ok3)])
    b = run("b", [("A", [1.0, 1.5, 3.0], ok3),                         # A copied from a
                  ("B", [0.5, 1.0, 9.0], ["ok", "off", "collapsed"])])  # median member off
    c = run("c", [("A", [2.0, 2.5, 3.0], ok3), ("B", [1.9, 2.0, 2.1], ok3)])
    out = tmp_path / "rec.json"
    assert _probe_runs.main(["--runs", a, b, c, "--out", str(out)]) == 0
    rates = json.loads(out.read_text())["rates"]
    assert (rates["A clean"]["n"], rates["A clean"]["passed"]) == (2, 1)  # 1.5 ✓, 2.5 ✗
    assert (rates["B clean"]["n"], rates["B clean"]["passed"]) == (3, 1)  # 2.5 ✗, off ✗, 2.0 ✓
    assert json.loads(out.read_text())["product"] == pytest.approx(1 / 2 * 1 / 3)
    assert "| B clean | 2.5 (a) ✗, 1 (b) ✗, 2 (c) | 1 of 3 |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--runs"):
        _probe_runs.main(["--runs", str(tmp_path), "--out", str(out)])

    # on several orbits: SINDy (0.5) below the true system (1.5); dsr (2.0) is 4 x SINDy's,
    # 1.33 x the floor's; a run the record does not have is left out
    def summary(d):
        return dict(D_stsp=d, D_H=0.1, status="ok")

    record = {f"{a}:A/clean": dict(cell="A/clean", floor=summary(1.5), methods=dict(
        shPLRNN=[summary(2.0)] * 3, SINDy=[summary(0.5)], VAR1=[summary(9.0)]))}
    (tmp_path / "orbits.json").write_text(json.dumps(record))
    assert _probe_runs.main(["--runs", a, b, "--orbits-record", str(tmp_path / "orbits.json"),
                             "--out", str(out)]) == 0
    (o,) = json.loads(out.read_text())["orbits"]
    assert o["ratio"] == 4.0 and not o["ok"] and o["ratio_floor"] == 2.0 / 1.5 and o["ok_floor"]
    assert "| a | 1 | 0 | 1 | A/clean (4; 1.33) |" in capsys.readouterr().out


def test_denoise_probe_scores_against_the_clean_series_and_the_oracle_bounds_it(tmp_path):
    """`_probe_denoise` on one short noisy row: `dsr.denoise` leaves less than the noise, and
    the best Savitzky–Golay fit by the clean truth (a family holding `denoise`'s own) no more
    than `denoise` does; a folder without a run, or a system not in it, stops with the flag."""
    from benchmarks.compare import _probe_denoise

    run = tmp_path / "run"
    run.mkdir()
    settings = dict(systems=["Lorenz"], pts_per_period=100, n_train=2000, n_test=500,
                    transient=500, seed=0)
    (run / "compare.json").write_text(json.dumps(dict(settings=settings)))
    out = tmp_path / "rec.json"
    assert _probe_denoise.main(["--run", str(run), "--out", str(out)]) == 0
    (r,) = json.loads(out.read_text())["rows"]
    assert all(w > 0 for w in r["window"])
    for noise, left, best in zip(r["noise_rms"], r["denoise_rms"], r["oracle"]):
        assert 0.04 < noise < 0.06 and left < 0.75 * noise and best["rms"] <= left * (1 + 1e-9)
    with pytest.raises(SystemExit, match="--systems Thomas"):
        _probe_denoise.main(["--run", str(run), "--systems", "Thomas", "--out", str(out)])
    with pytest.raises(SystemExit, match="--run"):
        _probe_denoise.main(["--run", str(tmp_path), "--out", str(out)])


def test_dsr_hidden_is_recorded_and_sets_the_members_L(tmp_path, capsys):
    """`--dsr-hidden L`: the shPLRNN classes' hidden units (recorded as `dsr_hidden` and in
    `dsr`); runs without the key (every recorded one) keep `SETTINGS["hidden"]`."""
    from benchmarks.compare._dsr_method import SETTINGS, member_factory

    key = jax.random.key(0)
    assert member_factory("shPLRNN", 3, {})(key).hidden_dim == SETTINGS["hidden"]
    assert member_factory("clipped_shPLRNN", 3, {"dsr_hidden": 8})(key).hidden_dim == 8
    assert member_factory("shPLRNN", 3, {"dsr_hidden": 8})(key, hidden_dim=4).hidden_dim == 4
    out = tmp_path / "o"
    out.mkdir()
    (out / "settings.json").write_text((ROOT / "docs/compare/rerun/settings.json").read_text())
    with pytest.raises(SystemExit, match=r"other settings \(\['dsr', 'dsr_hidden'\]\)"):
        cli.main(["--systems", "Lorenz", "--dsr-hidden", "512", "--out", str(out)])
    with pytest.raises(SystemExit):
        cli.main(["--dsr-hidden", "0", "--out", str(tmp_path / "q")])
    assert "--dsr-hidden must be ≥ 1" in capsys.readouterr().err
