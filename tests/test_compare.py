"""`python -m benchmarks.compare`: the pieces (fast) and the whole comparison on a tiny grid
(slow). The whole module needs the `compare` extra (dysts, pysindy, reservoirpy), which
`make test-slow` installs, so all of it runs in the slow suite (never skipped)."""

import json
import math

import jax

import numpy as np
import pytest

pytestmark = pytest.mark.slow

from benchmarks.compare import __main__ as cli  # noqa: E402
from benchmarks.compare._measures import MEASURES, valid_time  # noqa: E402
from benchmarks.compare._report import median_mad  # noqa: E402
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
    med, mad = median_mad(np.array([1.0, 2.0, 4.0, math.inf, math.nan]))
    assert med == 3.0 and mad == 1.0  # nan left out; inf counts in the median, not the MAD
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
    assert (out / "compare.png").stat().st_size > 0 and (out / "table.md").exists()
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


@pytest.mark.slow
def test_any_dysts_system_by_name(tmp_path):
    names = ["Sakarya", "Dadras"]
    assert not set(names) & set(DEFAULT_SYSTEMS)
    out = tmp_path / "s"
    methods = ["ESN", "VAR1"]
    assert cli.main(["--quick", "--systems", *names, "--methods", *methods, "--members", "1",
                     "--variants", "noisy", "--out", str(out)]) == 0
    _check_payload(out, names, methods, 1, variants=("noisy",))
