"""Tests of data_gen (Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. F).

Short lengths; paper-size checks are `slow`.
"""

import json
import math
import time

import jax
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import data_gen
from data_gen import SYSTEMS
from data_gen.__main__ import main as cli

# Horizons shorter than the Lyapunov time (Lorenz-63: 1/0.906 ≈ 1.1 time units).
SCIPY_CASES = {
    "lorenz63": dict(n_steps=80, transient=20),  # 1.0 time unit
    "lorenz96": dict(n_steps=80, transient=20),  # 0.5 time units
    "bursting_neuron": dict(n_steps=380, transient=20, full_state=True),  # 10 tu, not chaotic
}
FD_TOL = {"lorenz63": 2e-2, "lorenz96": 2e-2, "bursting_neuron": 5e-3}  # O(Δt²) of central diff.
SMALL = dict(n_steps=4000, transient=500, progress=False)  # one compiled solve for many tests


@pytest.fixture(scope="module")
def l63():
    return data_gen.lorenz63(seed=0, **SMALL)


@pytest.fixture(scope="module")
def l63_clean():
    return data_gen.lorenz63(seed=0, noise=0.0, **SMALL)


@pytest.mark.parametrize("name", SCIPY_CASES)
def test_matches_scipy_and_vector_field(name):
    ds = data_gen.generate(name, seed=3, noise=0.0, dtype="float64", rtol=1e-10, atol=1e-12,
                           **SCIPY_CASES[name])  # fmt: skip
    m, p = ds.meta, ds.meta["params"]
    f = lambda t, x: SYSTEMS[name].field(t, x, p, xp=np)  # noqa: E731
    assert m["x0"][0] != m["x0"][1]
    if name == "lorenz96":  # different start times; forcing period 2π/ω = 75 tu = 15,000 steps
        assert m["t0"][0] != m["t0"][1] and m["forcing_period_steps"] == 15_000
    for b, split in enumerate(("train", "test")):
        x = ds.destandardize(getattr(ds, split))
        ts = m["t0"][b] + ds.dt * np.arange(m["transient"], m["transient"] + len(x))
        np.testing.assert_allclose(ts[0], m["t_first"][b])
        ref = solve_ivp(f, (m["t0"][b], ts[-1]), m["x0"][b], t_eval=ts, method="DOP853",
                        rtol=1e-11, atol=1e-12).y.T  # fmt: skip
        assert np.abs(x - ref).max() / np.abs(ref).max() < 1e-7
        fd = (x[2:] - x[:-2]) / (2 * ds.dt)
        fx = f(ts[1:-1], x[1:-1].T).T
        assert np.abs(fd - fx).max() / np.abs(fx).max() < FD_TOL[name]


def test_standardized_and_destandardized(l63_clean):
    ds = l63_clean
    assert ds.train.dtype == np.float32 and ds.train.shape == (4000, 3) == ds.test.shape
    np.testing.assert_allclose(ds.train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(ds.train.std(0), 1, atol=1e-5)
    raw = data_gen.trajectories("lorenz63", ds.meta["x0"], 4000, t0=ds.meta["t0"],
                                transient=500, progress=False)  # fmt: skip
    np.testing.assert_allclose(ds.destandardize(ds.train), raw[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ds.destandardize(ds.test), raw[1], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ds.meta["mean"], raw[0].mean(0))
    np.testing.assert_allclose(ds.meta["std"], raw[0].std(0))


def test_train_noise_is_five_percent(l63, l63_clean):
    assert l63.meta["noise"] == 0.05 and l63.meta["x0"] == l63_clean.meta["x0"]
    np.testing.assert_array_equal(l63.test, l63_clean.test)  # test stays clean
    noise = l63.train.astype(np.float64) - l63_clean.train  # standardized units: std 0.05
    np.testing.assert_allclose(noise.std(0), 0.05, rtol=0.05)
    np.testing.assert_allclose(noise.mean(0), 0, atol=0.005)
    np.testing.assert_allclose(l63.meta["noise_std"], 0.05 * np.asarray(l63.meta["std"]))


def test_same_seed_same_bytes(l63, tmp_path):
    again = data_gen.lorenz63(seed=0, **SMALL)
    a, b = l63.save(tmp_path / "a.npz"), again.save(tmp_path / "b")
    assert b.name == "b.npz"
    assert a.read_bytes() == b.read_bytes()
    other = data_gen.lorenz63(seed=1, **SMALL)
    assert other.meta["x0"] != l63.meta["x0"]
    assert not np.array_equal(other.train, l63.train)


def test_save_load_round_trip(l63, tmp_path):
    path = l63.save(tmp_path / "sub" / "l63.npz")
    back = data_gen.load(path)
    for x, y in ((back.train, l63.train), (back.test, l63.test)):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert back.meta == l63.meta and back.dt == l63.dt
    assert json.loads(path.with_suffix(".json").read_text()) == l63.meta
    for key in ("system", "params", "dt", "seed", "noise", "x0", "t0", "transient", "mean", "std",
                "solver", "rtol", "atol", "version"):  # fmt: skip
        assert key in back.meta
    ds = data_gen.lds(n_steps=8, n_sequences=5, n_test=2, dtype="float64", seed=1)
    back = data_gen.load(ds.save(tmp_path / "lds.npz"))
    assert back.meta == ds.meta and back.train.dtype == np.float64
    assert np.array_equal(back.train, ds.train) and set(back.arrays) == set(ds.arrays)
    for k in ds.arrays:
        assert np.array_equal(back.arrays[k], ds.arrays[k])


def test_atomic_write_and_load_rejects(l63, tmp_path, monkeypatch):
    good = l63.save(tmp_path / "d.npz")
    before = good.read_bytes()

    def broken(f, arrays):
        f.write(b"PK\x03\x04 partial")
        raise OSError("disk full")

    monkeypatch.setattr("data_gen._dataset._write_npz", broken)
    with pytest.raises(OSError):
        l63.save(tmp_path / "d.npz")
    with pytest.raises(OSError):
        l63.save(tmp_path / "new.npz")
    assert good.read_bytes() == before and not (tmp_path / "new.npz").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "d.npz"]  # no temp files
    np.savez(tmp_path / "other.npz", train=np.zeros(3))
    (tmp_path / "text.npz").write_text("hello")
    for bad in ("other.npz", "text.npz"):
        with pytest.raises(ValueError, match="not a data_gen data set"):
            data_gen.load(tmp_path / bad)


def test_files_are_written_by_the_atomic_writer(tmp_path):
    import os

    ds = data_gen.lds(n_steps=3, n_sequences=2, n_test=1)
    from dsr._lock import host_tag

    # left by a killed writer on this host (no such pid), in the temporaries' naming scheme
    stale = tmp_path / f".d.npz.tmp-{host_tag()}-999999999-0-deadbeef"
    stale.write_bytes(b"partial")
    path = ds.save(tmp_path / "d")
    umask = os.umask(0)
    os.umask(umask)
    for p in (path, path.with_suffix(".json")):
        assert p.stat().st_mode & 0o777 == 0o644 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "d.npz"]


def test_bad_inputs(l63, tmp_path):
    with pytest.raises(ValueError, match="lorenz63.*lorenz96"):
        data_gen.generate("lorenz99")
    cases = [
        (ValueError, "dt", dict(dt=0.0)), (ValueError, "dt", dict(dt=-0.01)),
        (ValueError, "n_steps", dict(n_steps=0)), (TypeError, "n_steps", dict(n_steps=2.5)),
        (ValueError, "transient", dict(transient=-1)), (ValueError, "sigma", dict(sigma=math.nan)),
        (ValueError, "rho", dict(rho=math.inf)), (ValueError, "noise", dict(noise=-0.1)),
        (ValueError, "observe", dict(observe=["w"])), (ValueError, "x0", dict(x0=[1.0, 2.0])),
        (TypeError, "dtype", dict(dtype="int32")), (ValueError, "solver", dict(solver="euler")),
    ]  # fmt: skip
    for exc, match, kw in cases:
        with pytest.raises(exc, match=match):
            data_gen.lorenz63(**kw)
    with pytest.raises(ValueError, match="F0"):
        data_gen.lorenz96(F0=math.inf)
    with pytest.raises(ValueError, match="preset"):
        data_gen.bursting_neuron(preset="fast")
    with pytest.raises(ValueError, match="x0s"):
        data_gen.trajectories("lorenz63", np.zeros(3), 10)
    with pytest.raises(ValueError, match="dt"):
        data_gen.trajectories(lambda t, x, a: -x, np.ones((2, 1)), 10)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="cannot create output folder"):
        l63.save(blocker / "x.npz")


def test_cli(tmp_path, capsys):
    assert cli(["lorenz63", "--n-steps", "4000", "--transient", "500", "--no-progress",
                "--out", str(tmp_path)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    stem = "lorenz63_n_steps=4000_transient=500"  # the file name spells out the variant
    assert f"{stem}.npz" in out and f"{stem}.json" in out
    ds = data_gen.load(tmp_path / f"{stem}.npz")
    assert ds.train.shape == (4000, 3) and ds.meta["seed"] == 0
    blocker = tmp_path / "file"
    blocker.write_text("")
    for argv in (["lorenz99", "--out", str(tmp_path)], ["lorenz63", "--out", str(blocker / "d")]):
        with pytest.raises(SystemExit) as e:
            cli(argv)
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unknown system" in err and "--out" in err


def test_no_global_x64_change():
    jax.config.update("jax_enable_x64", False)
    try:
        ys = data_gen.trajectories("lorenz63", np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 20.0]]), 80,
                                   transient=20, rtol=1e-10, atol=1e-12)  # fmt: skip
        assert jax.config.jax_enable_x64 is False and ys.dtype == np.float64
        p = SYSTEMS["lorenz63"].params
        ts = 0.01 * np.arange(20, 100)
        f = lambda t, x: SYSTEMS["lorenz63"].field(t, x, p, xp=np)  # noqa: E731
        ref = solve_ivp(f, (0, ts[-1]), [1.0, 1.0, 1.0], t_eval=ts, method="DOP853", rtol=1e-11,
                        atol=1e-12)  # fmt: skip
        assert np.abs(ys[0] - ref.y.T).max() / np.abs(ref.y).max() < 1e-7  # float64 accuracy
    finally:
        jax.config.update("jax_enable_x64", True)


def test_batched_trajectories():
    x0s = data_gen.initial_conditions("lorenz63", 2, seed=5)  # B=2: reuses a compiled solve
    t0s = np.array([1.0, 2.0])
    batch = data_gen.trajectories("lorenz63", x0s, 80, t0=t0s, transient=20, rtol=1e-10,
                                  atol=1e-12, rho=30.0)  # fmt: skip
    assert batch.shape == (2, 80, 3)
    p = dict(SYSTEMS["lorenz63"].params, rho=30.0)
    f = lambda t, x: SYSTEMS["lorenz63"].field(t, x, p, xp=np)  # noqa: E731
    for x0, t0, ys in zip(x0s, t0s, batch):
        ts = t0 + 0.01 * np.arange(20, 100)
        ref = solve_ivp(f, (t0, ts[-1]), x0, t_eval=ts, method="DOP853", rtol=1e-11, atol=1e-12)
        assert np.abs(ys - ref.y.T).max() / np.abs(ref.y).max() < 1e-7


def test_lorenz96_forcing_period():
    p = SYSTEMS["lorenz96"].params
    assert 2 * math.pi / p["omega"] / SYSTEMS["lorenz96"].dt == pytest.approx(15_000)
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=6), rng.uniform(0, 100)
    f = SYSTEMS["lorenz96"].field
    np.testing.assert_allclose(f(t, x, p, xp=np), f(t + 75.0, x, p, xp=np), atol=1e-10)
    np.testing.assert_allclose(f(t, x, p, xp=np) - f(t, x, {**p, "A": 0.0}, xp=np),
                               12 * np.sin(2 * math.pi * t / 75))  # fmt: skip


@pytest.mark.slow
def test_lorenz96_paper_spectrum():
    ds = data_gen.lorenz96(progress=False)
    assert ds.train.shape == (100_000, 6) and ds.meta["forcing_period_steps"] == 15_000
    for x in (ds.train, ds.test):
        m = x.astype(np.float64).mean(1)
        power = np.abs(np.fft.rfft(m - m.mean(), 1 << 22)) ** 2
        freq = np.fft.rfftfreq(1 << 22)
        k = np.argmax(np.where((freq > 1 / 60_000) & (freq < 1 / 2_000), power, 0))
        assert abs(1 / freq[k] / 15_000 - 1) < 0.02


def test_bursting_neuron_gap_short():
    ds = data_gen.bursting_neuron(n_steps=12_000, seed=0, noise=0.0, progress=False)
    assert ds.train.shape == (12_000, 2) and ds.meta["variables"] == ["V", "n"]
    gaps, _ = data_gen.interburst_gaps(ds.destandardize(ds.train)[:, 0])
    assert len(gaps) >= 1 and abs(np.median(gaps) / 3_400 - 1) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("preset,gap", [("standard", 3_400), ("slow", 13_600)])
def test_bursting_neuron_paper_gaps(preset, gap):
    ds = data_gen.bursting_neuron(preset=preset, progress=False)
    assert ds.train.shape == (160_000, 2) and ds.meta["transient"] == 40_000
    for x in (ds.train, ds.test):
        gaps, _ = data_gen.interburst_gaps(ds.destandardize(x)[:, 0])
        assert len(gaps) >= 5 and abs(np.median(gaps) / gap - 1) < 0.03
    print(f"{preset}: median inter-burst gap {ds.meta['interburst_gap_steps']} steps")


def test_lds():
    ds = data_gen.lds(n_steps=30, n_sequences=64, n_test=8, seed=0)
    assert ds.train.shape == (64, 30, 1) and ds.test.shape == (8, 30, 1)
    radius = np.abs(np.linalg.eigvals(ds.arrays["A_train"])).max(-1)
    assert np.all((radius >= 0.5 - 1e-9) & (radius <= 0.95 + 1e-9))
    clean = data_gen.lds(n_steps=6, n_sequences=3, sigma_w=0, sigma_v=0, dtype="float64")
    A, C, x = clean.arrays["A_train"][0], clean.arrays["C_train"][0], clean.arrays["x0_train"][0]
    for t in range(6):
        np.testing.assert_allclose(clean.train[0, t], C @ x, atol=1e-12)
        x = A @ x
    with pytest.raises(ValueError, match="A"):
        data_gen.lds(A=np.eye(3))


def test_from_vector_field():
    import jax.numpy as jnp

    def duffing(t, x, p):
        return jnp.stack([x[1], -p["d"] * x[1] + x[0] - x[0] ** 3 + p["g"] * jnp.cos(t)])

    ds = data_gen.from_vector_field(
        duffing, [1.0, 0.0], args={"d": 0.3, "g": 0.5}, dt=0.05, n_steps=200, name="duffing",
        noise=0.0, dtype="float64",
    )  # fmt: skip
    assert ds.meta["system"] == "duffing" and ds.train.shape == (200, 2)
    assert ds.meta["x0"][0] == [1.0, 0.0] and ds.meta["params"] == {"d": 0.3, "g": 0.5}
    x = ds.destandardize(ds.train)
    np.testing.assert_allclose((x[2:, 0] - x[:-2, 0]) / 0.1, x[1:-1, 1], rtol=0, atol=2e-3)


# ----------------------------------------------------------------------------- short-period preset


def test_lorenz96_short_period_preset():
    paper, short = data_gen.LORENZ96_PRESETS["paper"], data_gen.LORENZ96_PRESETS["short_period"]
    assert short == {**paper, "omega": 2 * math.pi / 7.5} and paper == SYSTEMS["lorenz96"].params
    assert 2 * math.pi / short["omega"] / SYSTEMS["lorenz96"].dt == pytest.approx(1_500)
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=6), rng.uniform(0, 100)
    f = SYSTEMS["lorenz96"].field
    np.testing.assert_allclose(f(t, x, short, xp=np), f(t + 7.5, x, short, xp=np), atol=1e-10)
    np.testing.assert_allclose(f(t, x, short, xp=np) - f(t, x, {**short, "A": 0.0}, xp=np),
                               12 * np.sin(2 * math.pi * t / 7.5))  # fmt: skip
    ds = data_gen.generate("lorenz96", preset="short_period", n_steps=15_000, transient=500,
                           progress=False)  # fmt: skip
    m = ds.meta
    assert m["preset"] == "short_period" and m["forcing_period_steps"] == 1_500
    assert m["params"]["omega"] == short["omega"] and m["params"]["F0"] == 14.0
    assert 0 <= min(m["t0"]) and max(m["t0"]) < 7.5  # t0 drawn over one forcing period
    for x in (ds.train, ds.test):  # 10 forcing periods; energy spectrum, Hann window
        e = (x.astype(np.float64) ** 2).mean(1)
        power = np.abs(np.fft.rfft((e - e.mean()) * np.hanning(len(e)), 1 << 20)) ** 2
        freq = np.fft.rfftfreq(1 << 20)
        k = np.argmax(np.where((freq > 1 / 6_000) & (freq < 1 / 200), power, 0))
        assert abs(1 / freq[k] / 1_500 - 1) < 0.02


# ----------------------------------------------------------------------------- CLI file names

README_COMMANDS = {  # the README's examples and the files they write
    "paper": ["lorenz63.npz", "lorenz96_paper.npz", "bursting_neuron_standard.npz",
              "bursting_neuron_slow.npz"],
    "lorenz96 --n-steps 20000 --seed 1 --noise 0.05": ["lorenz96_paper_n_steps=20000_seed=1.npz"],
    "lorenz96 --preset short_period": ["lorenz96_short_period.npz"],
    "bursting_neuron --preset slow --full-state": ["bursting_neuron_slow_full_state.npz"],
    "lorenz63 --observe x --param rho=35": ["lorenz63_observe=x_rho=35.npz"],
    "lds --param n_sequences=4096": ["lds_n_sequences=4096.npz"],
    "lorenz63 --param rho=28 --seed 0 --dtype float32": ["lorenz63.npz"],  # defaults: no suffix
    "lorenz63 --no-standardize --dtype float64 --param rtol=1e-9":
        ["lorenz63_no_standardize_dtype=float64_rtol=1e-09.npz"],
}  # fmt: skip


def test_cli_file_names_name_the_variant(tmp_path, capsys):
    for command, names in README_COMMANDS.items():
        assert cli(command.split() + ["--out", str(tmp_path), "--dry-run"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split()[2] for line in lines] == [str(tmp_path / n) for n in names], command
    assert not any(tmp_path.iterdir())  # a dry run writes nothing


def test_cli_refuses_to_overwrite_without_force(tmp_path, capsys):
    argv = ["lds", "--param", "n_sequences=4", "--param", "n_steps=5", "--out", str(tmp_path)]
    assert cli(argv) == 0
    path = tmp_path / "lds_n_sequences=4_n_steps=5.npz"
    before = path.read_bytes()
    for extra in ([], ["--seed", "0"]):  # the same variant, spelled differently
        with pytest.raises(SystemExit) as e:
            cli(argv + extra)
        assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(str(path) in line and "--force" in line for line in err)
    assert path.read_bytes() == before
    assert cli(argv + ["--force"]) == 0 and path.read_bytes() == before  # same seed, same bytes
    assert cli(argv + ["--seed", "1"]) == 0
    assert (tmp_path / "lds_n_sequences=4_n_steps=5_seed=1.npz").exists()
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json", ".npz", ".npz"]


# ----------------------------------------------------------------------------- bad input


def _field(out):
    """A vector field of the wrong output shape (or one that needs a missing parameter)."""
    import jax.numpy as jnp

    return {
        "short": lambda t, x, p: x[:1],
        "scalar": lambda t, x, p: jnp.sum(x),
        "long": lambda t, x, p: jnp.concatenate([x, x]),
        "missing_param": lambda t, x, p: -p["k"] * x,
    }[out]


def _dataset():
    return data_gen.lds(n_steps=2, n_sequences=1, n_test=1)


BAD_LIBRARY = [  # (call, exception, message pattern)
    (lambda: data_gen.from_vector_field(_field("short"), [1.0, 0.0], dt=0.1, n_steps=5),
     ValueError, "`f` must return a real array of the state's shape \\(2,\\)"),
    (lambda: data_gen.from_vector_field(_field("scalar"), [1.0, 0.0], dt=0.1, n_steps=5),
     ValueError, "`f` must return"),
    (lambda: data_gen.from_vector_field(_field("long"), [1.0, 0.0], dt=0.1, n_steps=5),
     ValueError, "`f` must return"),
    (lambda: data_gen.from_vector_field(_field("missing_param"), [1.0], dt=0.1, n_steps=5),
     ValueError, "`f` fails"),
    (lambda: data_gen.from_vector_field("f", [1.0], dt=0.1, n_steps=5), TypeError, "`f`"),
    (lambda: data_gen.from_vector_field(_field("short"), np.zeros((3, 2)), dt=0.1, n_steps=5),
     ValueError, "`x0`"),
    (lambda: data_gen.from_vector_field(_field("short"), [[[1.0]]], dt=0.1, n_steps=5),
     ValueError, "`x0`"),
    (lambda: data_gen.from_vector_field(_field("short"), [np.nan, 0.0], dt=0.1, n_steps=5),
     ValueError, "`x0`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, [1.0], args=[1.0], dt=0.1,
                                        n_steps=5), TypeError, "`args`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, [1.0], args={"k": "1"}, dt=0.1,
                                        n_steps=5), TypeError, "`k`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, [1.0], dt=0.1, n_steps=5,
                                        variables=["a", "b"]), ValueError, "`variables`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, [1.0], dt=0.1, n_steps=5, sigma=1),
     TypeError, "`sigma`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, lambda r: np.zeros((2, 2)),
                                        dt=0.1, n_steps=5), ValueError, "`x0`"),
    (lambda: data_gen.from_vector_field(lambda t, x, p: -x, [1.0], dt=0.0, n_steps=5),
     ValueError, "`dt`"),
    (lambda: data_gen.lorenz63(dt=-0.01), ValueError, "`dt`"),
    (lambda: data_gen.lorenz63(noise=-0.1), ValueError, "`noise`"),
    (lambda: data_gen.lorenz63(n_steps=2.5), TypeError, "`n_steps`"),
    (lambda: data_gen.lorenz63(n_steps=1e3), TypeError, "`n_steps`"),
    (lambda: data_gen.lorenz63(n_steps=True), TypeError, "`n_steps`"),
    (lambda: data_gen.lorenz63(n_steps="100"), TypeError, "`n_steps`"),
    (lambda: data_gen.lorenz63(seed=True), TypeError, "`seed`"),
    (lambda: data_gen.lorenz63(seed=-1), ValueError, "`seed`"),
    (lambda: data_gen.lorenz63(transient=False), TypeError, "`transient`"),
    (lambda: data_gen.lorenz63(x0=np.zeros(4)), ValueError, "`x0`"),
    (lambda: data_gen.lorenz63(x0=np.zeros((3, 3))), ValueError, "`x0`"),
    (lambda: data_gen.lorenz63(t0=[0.0, 1.0, 2.0]), ValueError, "`t0`"),
    (lambda: data_gen.lorenz63(foo=1), TypeError, "`foo`"),
    (lambda: data_gen.lorenz63(standardize="no"), TypeError, "`standardize`"),
    (lambda: data_gen.lorenz63(observe=[0, 0]), ValueError, "`observe`"),
    (lambda: data_gen.lorenz63(observe=3), ValueError, "`observe`"),
    (lambda: data_gen.lorenz63(observe=True), TypeError, "`observe`"),
    (lambda: data_gen.lorenz63(max_steps=0), ValueError, "`max_steps`"),
    (lambda: data_gen.lorenz63(rtol=0.0), ValueError, "`rtol`"),
    (lambda: data_gen.lorenz63(progress="yes"), TypeError, "`progress`"),
    (lambda: data_gen.lorenz63(sigma=True), TypeError, "`sigma`"),
    (lambda: data_gen.lorenz96(preset="long"), ValueError, "`preset`.*short_period"),
    (lambda: data_gen.lorenz96(N=3), ValueError, "`N`"),
    (lambda: data_gen.lorenz96(N=6.0), TypeError, "`N`"),
    (lambda: data_gen.lorenz96(omega=0.0), ValueError, "`omega`"),
    (lambda: data_gen.lorenz96(sigma=10.0), TypeError, "`sigma`"),
    (lambda: data_gen.bursting_neuron(x0="rest"), ValueError, "`x0`"),
    (lambda: data_gen.bursting_neuron(full_state=1), TypeError, "`full_state`"),
    (lambda: data_gen.bursting_neuron(tau_h=-math.inf), ValueError, "`tau_h`"),
    (lambda: data_gen.lds(n_sequences=True), TypeError, "`n_sequences`"),
    (lambda: data_gen.lds(n_test=0), ValueError, "`n_test`"),
    (lambda: data_gen.lds(rho=(0.9, 0.5)), ValueError, "`rho`"),
    (lambda: data_gen.lds(rho=(0.1, 0.2, 0.3)), ValueError, "`rho`"),
    (lambda: data_gen.lds(C=np.ones((2, 5))), ValueError, "`C`"),
    (lambda: data_gen.lds(sigma_w=-1.0), ValueError, "`sigma_w`"),
    (lambda: data_gen.lds(dtype="int32"), TypeError, "`dtype`"),
    (lambda: data_gen.generate(3), TypeError, "`name`"),
    (lambda: data_gen.generate("lorenz99"), ValueError, "`name`"),
    (lambda: data_gen.generate("lorenz63", preset="paper"), TypeError, "`preset`"),
    (lambda: data_gen.trajectories("lorenz63", np.zeros((2, 4)), 10), ValueError, "`x0s`"),
    (lambda: data_gen.trajectories("lorenz63", np.zeros((2, 3)), 10, t0=[0.0, 1.0, 2.0]),
     ValueError, "`t0`"),
    (lambda: data_gen.trajectories("lorenz63", np.zeros((2, 3)), 10, rho2=1.0), ValueError,
     "`rho2`"),
    (lambda: data_gen.trajectories("lorenz63", np.zeros((2, 3)), 10, args={}), TypeError,
     "`args`"),
    (lambda: data_gen.trajectories("lorenz96", np.zeros((2, 6)), 10, preset="x"), ValueError,
     "`preset`"),
    (lambda: data_gen.trajectories(_field("short"), np.ones((2, 2)), 10, dt=0.1), ValueError,
     "`system` must return"),
    (lambda: data_gen.trajectories(lambda t, x, a: -x, np.ones((2, 2)), 10, dt=0.1,
                                   args={"k": "one"}), TypeError, "`args`"),
    (lambda: data_gen.trajectories("lorenz63", np.zeros((2, 3)), np.int64(0)), ValueError,
     "`n_steps`"),
    (lambda: data_gen.initial_conditions("lorenz63", 0), ValueError, "`n`"),
    (lambda: data_gen.initial_conditions(_field("short"), 2), TypeError, "`system`"),
    (lambda: data_gen.integrate(lambda t, x, a: -x, np.zeros(3), np.zeros(1), n_steps=5,
                                dt=0.1), ValueError, "`x0s`"),
    (lambda: data_gen.integrate(lambda t, x, a: -x, np.zeros((2, 3)), np.zeros(3), n_steps=5,
                                dt=0.1), ValueError, "`t0s`"),
    (lambda: data_gen.integrate(lambda t, x, a: -x, np.zeros((2, 3)), np.zeros(2), n_steps=5,
                                dt=0.1, solver="euler"), ValueError, "`solver`"),
    (lambda: data_gen.interburst_gaps(np.zeros((3, 3))), ValueError, "`v`"),
    (lambda: data_gen.interburst_gaps(np.zeros(9), factor=0.0), ValueError, "`factor`"),
    (lambda: data_gen.load(3), TypeError, "`path`"),
    (lambda: _dataset().save(None), TypeError, "`path`"),
]  # fmt: skip


@pytest.mark.parametrize("call,exc,pattern", BAD_LIBRARY)
def test_bad_library_input_fails_fast(call, exc, pattern):
    t = time.perf_counter()
    with pytest.raises(exc, match=pattern):
        call()
    assert time.perf_counter() - t < 2.0


BAD_CLI = [  # (arguments, what the one-line error must name)
    ("lorenz99", "unknown system 'lorenz99'"),
    ("lorenz63 --n-steps 0", "--n-steps must be an integer ≥ 1"),
    ("lorenz63 --n-steps 1.5", "argument --n-steps: invalid int value"),
    ("lorenz63 --seed -1", "--seed must be"),
    ("lorenz63 --dt -1", "--dt must be"),
    ("lorenz63 --noise -0.1", "--noise must be"),
    ("lorenz63 --dtype int32", "--dtype must be"),
    ("lorenz63 --observe w", "--observe: unknown variable 'w'"),
    ("lorenz63 --param rho=abc", "--param rho must be a real number"),
    ("lorenz63 --param foo=1", "--param foo: not a parameter of lorenz63"),
    ("lorenz63 --param rho", "argument --param: expected KEY=VALUE"),
    ("lorenz63 --param n_steps=5 --n-steps 4", "--param n_steps: also given as --n-steps"),
    ("lorenz96 --param N=3", "--param N must be an integer ≥ 4"),
    ("lorenz96 --preset fast", "--preset: lorenz96 has presets ['paper', 'short_period']"),
    ("lorenz63 --preset slow", "--preset: none of ['lorenz63'] has presets"),
    ("paper --preset slow", "--preset does not combine with 'paper'"),
    ("lorenz63 --full-state", "--full-state applies to bursting_neuron only"),
    ("lds --dt 0.1", "--dt does not apply to lds"),
    ("lds --param rho=2,1", "--param rho must be a (low, high) range"),
    ("lorenz63 --solver euler", "argument --solver: invalid choice"),
    ("lorenz63 --out {blocker}/sub", "--out: cannot create output folder"),
    ("lorenz63 --n-steps 5 --out {existing}", "exists; pass --force to overwrite"),
]


@pytest.mark.parametrize("argv,message", BAD_CLI)
def test_bad_cli_input_is_one_line_exit_2(argv, message, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    existing = tmp_path / "has"
    existing.mkdir()
    (existing / "lorenz63_n_steps=5.json").write_text("{}")
    args = argv.format(blocker=blocker, existing=existing).split()
    args = args if "--out" in args else args + ["--out", str(tmp_path / "out")]
    t = time.perf_counter()
    with pytest.raises(SystemExit) as e:
        cli(args)
    assert time.perf_counter() - t < 2.0 and e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_counts_accept_any_integer_type(l63):
    again = data_gen.lorenz63(n_steps=np.int64(4000), transient=np.int32(500), seed=np.uint8(0),
                              progress=False)  # fmt: skip
    np.testing.assert_array_equal(again.train, l63.train)
    assert again.meta == l63.meta
    x0s = data_gen.initial_conditions("lorenz63", np.int64(2), seed=np.int64(5))
    assert x0s.shape == (2, 3)
    ds = data_gen.lds(n_steps=np.int64(3), n_sequences=np.int16(2), state_dim=np.int64(2))
    assert ds.train.shape == (2, 3, 1)
    meta = data_gen.lorenz96(N=np.int64(6), n_steps=80, transient=20, progress=False).meta
    assert meta["params"]["N"] == 6 and meta["preset"] == "paper"
    assert meta["forcing_period_steps"] == 15_000
