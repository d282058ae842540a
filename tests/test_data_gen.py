"""Tests of data_gen (paper App. F; SPEC §7). Short lengths; paper-size checks are `slow`."""

import json
import math

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
    assert "lorenz63.npz" in out and "lorenz63.json" in out
    ds = data_gen.load(tmp_path / "lorenz63.npz")
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
