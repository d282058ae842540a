"""Tests for dsr.metrics: D_stsp, delay embedding, power-spectrum distance, Lyapunov exponents."""

import math
import time
import warnings

import equinox as eqx
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage
import scipy.special
from hypothesis import given, settings

from dsr.metrics import (
    StateSpaceDivergence,
    delay_embed,
    lyapunov_spectrum,
    max_lyapunov,
    model_lyapunov_spectrum,
    power_spectrum_distance,
    state_space_divergence,
    vector_field_lyapunov_spectrum,
)
from helpers import rk4_orbit

# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------


def lorenz_field(x, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    return jnp.stack([sigma * (x[1] - x[0]), x[0] * (rho - x[2]) - x[1], x[0] * x[1] - beta * x[2]])


@pytest.fixture(scope="module")
def lorenz_pair():
    """Two independent Lorenz-63 orbits (dt = 0.01), 4,000 and 12,000 points."""
    x = rk4_orbit(lorenz_field, (1.0, 1.0, 1.0), 0.01, 4_000, 1_000)
    y = rk4_orbit(lorenz_field, (-3.0, 2.0, 20.0), 0.01, 12_000, 1_000)
    return x, y


def _reference_dstsp(x, y, s, idx, eps):
    """Independent float64 NumPy reference of the Monte-Carlo estimator (Eqs. 67-68)."""
    q = x[idx] + eps * s

    def logpdf(points):
        z = (q[:, None, :] - points[None]) / s
        logk = -0.5 * np.sum(z**2, -1) - np.sum(np.log(s)) - 0.5 * x.shape[1] * np.log(2 * np.pi)
        return scipy.special.logsumexp(logk, axis=1) - np.log(len(points))

    return np.mean(logpdf(x) - logpdf(y))


# ------------------------------------------------------------------------------------------------
# delay embedding
# ------------------------------------------------------------------------------------------------


def test_delay_embed_values():
    x = np.arange(20.0).reshape(10, 2)
    xi = delay_embed(x, 3, 2)
    assert xi.shape == (6, 6)
    # row 0 is time t = 4: (x_4, x_2, x_0)
    np.testing.assert_array_equal(xi[0], np.concatenate([x[4], x[2], x[0]]))
    np.testing.assert_array_equal(xi[-1], np.concatenate([x[9], x[7], x[5]]))
    np.testing.assert_array_equal(delay_embed(x, 1, 5), x)
    assert isinstance(delay_embed(jnp.asarray(x), 2, 1), jax.Array)


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 40), N=st.integers(1, 3), m=st.integers(1, 5), tau=st.integers(1, 6)
)
def test_delay_embed_hypothesis(T, N, m, tau):
    x = np.random.default_rng(T * 7 + N).normal(size=(T, N))
    window = (m - 1) * tau + 1
    if T < window:
        with pytest.raises(ValueError, match="`x`"):
            delay_embed(x, m, tau)
        return
    xi = delay_embed(x, m, tau)
    assert xi.shape == (T - window + 1, m * N)
    for i in (0, xi.shape[0] - 1):
        t = i + (m - 1) * tau
        for k in range(m):
            np.testing.assert_array_equal(xi[i, k * N : (k + 1) * N], x[t - k * tau])


def test_delay_embed_bad_args():
    x = np.zeros((10, 2))
    with pytest.raises(ValueError, match="`m`"):
        delay_embed(x, 0, 1)
    with pytest.raises(ValueError, match="`tau`"):
        delay_embed(x, 2, 0)
    with pytest.raises(TypeError, match="`tau`"):
        delay_embed(x, 2, 1.5)


# ------------------------------------------------------------------------------------------------
# D_stsp
# ------------------------------------------------------------------------------------------------


def test_exact_matches_numpy_reference(getkey):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2)) * [1.0, 3.0]
    y = rng.normal(size=(500, 2)) * [1.5, 2.0] + [0.5, 0.0]
    key = getkey()
    res = state_space_divergence(x, y, n_samples=700, key=key, method="exact")
    # rebuild the same samples
    k_idx, k_eps, _ = jax.random.split(key, 3)
    idx = np.asarray(jax.random.randint(k_idx, (700,), 0, 300))
    eps = np.asarray(jax.random.normal(k_eps, (700, 2)), dtype=np.float64)
    f = (300 * 4 / 4) ** (-1 / 6)
    s = f * x.std(0, ddof=1)
    np.testing.assert_allclose(res.bandwidth, s, rtol=1e-12)
    ref = _reference_dstsp(x, y, s, idx, eps)
    assert res.value == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert res.value > 0.05


def test_result_object(getkey):
    x = np.random.default_rng(1).normal(size=(200, 1))
    res = state_space_divergence(x, x + 0.3, n_samples=500, key=getkey())
    assert isinstance(res, StateSpaceDivergence)
    value, stderr = res
    assert value == res.value and stderr == res.stderr
    assert float(res) == res.value
    assert res.method == "exact" and res.n_samples == 500 and stderr > 0


def test_identical_orbits_zero(lorenz_pair, getkey):
    x, _ = lorenz_pair
    res = state_space_divergence(x, x, n_samples=2_000, key=getkey())
    assert abs(res.value) < 1e-12


def test_two_samples_same_distribution(lorenz_pair, getkey):
    # two independent orbits of the same attractor (the Monte-Carlo part is exact here)
    x, y = lorenz_pair
    key = getkey()
    res = state_space_divergence(x, y, n_samples=5_000, key=key)
    assert abs(res.value) < 0.05
    # two i.i.d. samples of one Gaussian: D ≈ 0 up to a few standard errors and the O(1/(T h^d))
    # positive bias of kernel estimates (small for T = 20,000, h = 0.5)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(20_000, 2)), rng.normal(size=(20_000, 2))
    res = state_space_divergence(a, b, n_samples=5_000, key=key, bandwidth=0.5)
    assert abs(res.value) < 4 * res.stderr + 1e-3


def test_monotone_in_shift_and_scale(lorenz_pair, getkey):
    x, y = lorenz_pair
    sd = x.std(0)
    key = getkey()

    def D(z):
        return state_space_divergence(x, z, n_samples=3_000, key=key).value

    shifts = [D(y + c * sd) for c in (0.0, 0.25, 0.5, 1.0, 2.0)]
    assert all(b > a for a, b in zip(shifts, shifts[1:])), shifts
    m = y.mean(0)
    scales = [D(m + k * (y - m)) for k in (1.0, 1.3, 1.7, 2.5)]
    assert all(b > a for a, b in zip(scales, scales[1:])), scales


def test_embedding_equals_embedded_inputs(getkey):
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=(400, 2)), axis=0) * 0.1
    y = np.cumsum(rng.normal(size=(500, 2)), axis=0) * 0.1
    key = getkey()
    a = state_space_divergence(x, y, n_samples=500, key=key, embedding=(3, 5))
    b = state_space_divergence(delay_embed(x, 3, 5), delay_embed(y, 3, 5), n_samples=500, key=key)
    assert a.value == b.value
    assert len(a.bandwidth) == 6


def test_user_bandwidth(getkey):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 0.5
    key = getkey()
    r1 = state_space_divergence(x, y, n_samples=500, key=key, bandwidth=0.4)
    r2 = state_space_divergence(x, y, n_samples=500, key=key, bandwidth=np.array([0.4, 0.4]))
    assert r1.value == r2.value and r1.bandwidth == (0.4, 0.4)
    # wider kernels blur the shift away
    r3 = state_space_divergence(x, y, n_samples=500, key=key, bandwidth=2.0)
    assert r3.value < r1.value


def test_grid_matches_exact(lorenz_pair, getkey):
    x, y = lorenz_pair
    key = getkey()
    ex = state_space_divergence(x, y, n_samples=8_000, key=key, method="exact")
    gr = state_space_divergence(x, y, n_samples=8_000, key=key, method="grid")
    assert gr.method == "grid" and gr.n_check < 8_000
    assert abs(gr.value - ex.value) <= 0.01 * abs(ex.value)
    assert abs(gr.value - ex.value) <= 5 * gr.approx_stderr + 1e-9
    # a badly wrong "model" (far tails of q̂) goes through the certified tail path
    far = y + 3 * x.std(0)
    ex = state_space_divergence(x, far, n_samples=4_000, key=key, method="exact")
    gr = state_space_divergence(x, far, n_samples=4_000, key=key, method="grid")
    assert gr.value == pytest.approx(ex.value, rel=1e-3)


def test_subsample_matches_exact(lorenz_pair, getkey):
    x, y = lorenz_pair
    key = getkey()
    ex = state_space_divergence(x, y, n_samples=5_000, key=key, method="exact", embedding=(2, 5))
    ss = state_space_divergence(x, y, n_samples=5_000, key=key, method="subsample",
                                embedding=(2, 5), subsample=4)
    assert ss.method == "subsample"
    assert abs(ss.value - ex.value) <= 5 * ss.approx_stderr + 1e-9
    assert abs(ss.value - ex.value) <= 0.02 * abs(ex.value)


def test_bad_inputs(getkey):
    key = getkey()
    x = np.random.default_rng(5).normal(size=(100, 2))
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="x_true"):
        state_space_divergence(bad, x, key=key, n_samples=10)
    with pytest.raises(ValueError, match="x_gen"):
        state_space_divergence(x, x[:, :1], key=key, n_samples=10)
    with pytest.raises(ValueError, match="x_true"):
        state_space_divergence(x[:20], x, key=key, n_samples=10, embedding=(3, 10))
    with pytest.raises(ValueError, match="x_gen"):
        state_space_divergence(x, x[:20], key=key, n_samples=10, embedding=(3, 10))
    for n in (0, -5):
        with pytest.raises(ValueError, match="n_samples"):
            state_space_divergence(x, x, key=key, n_samples=n)
    for bw in (-1.0, 0.0, np.nan, [1.0, 2.0, 3.0], "scott", [1.0, -1.0]):
        with pytest.raises(ValueError, match="bandwidth"):
            state_space_divergence(x, x, key=key, n_samples=10, bandwidth=bw)
    const = np.ones((50, 2))
    with pytest.raises(ValueError, match="x_true"):
        state_space_divergence(const, x, key=key, n_samples=10)
    with pytest.raises(ValueError, match="method"):
        state_space_divergence(x, x, key=key, n_samples=10, method="fast")
    with pytest.raises(ValueError, match="grid"):
        state_space_divergence(np.random.default_rng(0).normal(size=(50, 4)),
                               np.random.default_rng(1).normal(size=(50, 4)),
                               key=key, n_samples=10, method="grid")


@pytest.mark.parametrize("kind", ["nan", "inf", "huge"])
def test_diverged_orbit_gives_inf(kind, getkey):
    x = np.random.default_rng(6).normal(size=(100, 2))
    y = x.copy()
    y[50:] = {"nan": np.nan, "inf": np.inf, "huge": 1e30}[kind]
    with pytest.warns(RuntimeWarning, match="diverged"):
        res = state_space_divergence(x, y, key=getkey(), n_samples=100)
    assert res.value == math.inf and not math.isfinite(float(res))


def _reference_bins(x, y, n_bins=30, alpha=1e-5):
    """Plain dense NumPy transliteration of the GTF authors' binning D_stsp (stsp_measure.jl)."""
    sd = x.std(0, ddof=1)
    lo, hi = x.min(0) - 0.1 * sd, x.max(0) + 0.1 * sd
    edges = [np.linspace(lo[i], hi[i], n_bins + 1) for i in range(x.shape[1])]
    hp, _ = np.histogramdd(x, bins=edges)
    hq, _ = np.histogramdd(y, bins=edges)
    p = (hp + alpha) / (hp.sum() + alpha * hp.size)
    q = (hq + alpha) / (hq.sum() + alpha * hq.size)
    return float(np.sum(p * np.log(p / q)))


@pytest.mark.parametrize("d, n_bins", [(1, 30), (2, 30), (3, 30), (3, 7)])
def test_bins_matches_numpy_histogram(d, n_bins):
    rng = np.random.default_rng(d)
    x = rng.normal(size=(3_000, d)) * np.arange(1, d + 1)
    y = rng.normal(size=(5_000, d)) * 1.2 + 0.3  # some points fall outside the box: dropped
    res = state_space_divergence(x, y, method="bins", n_bins=n_bins)
    assert res.method == "bins" and res.status == "ok" and math.isnan(res.stderr)
    assert res.value == pytest.approx(_reference_bins(x, y, n_bins), rel=1e-10)
    assert state_space_divergence(x, x, method="bins").value == pytest.approx(0.0, abs=1e-12)


def test_bins_embedding_and_far_orbit():
    rng = np.random.default_rng(7)
    x = np.cumsum(rng.normal(size=(2_000, 1)), axis=0)
    y = np.cumsum(rng.normal(size=(2_000, 1)), axis=0)
    res = state_space_divergence(x, y, method="bins", embedding=(2, 3), n_bins=10)
    assert res.value == pytest.approx(_reference_bins(delay_embed(x, 2, 3), delay_embed(y, 2, 3),
                                                      10), rel=1e-10)
    with pytest.warns(RuntimeWarning, match="histogram box"):
        far = state_space_divergence(x, y + 1e3, method="bins")
    assert far.value == math.inf and far.status == "empty"


def test_fixed_sigma_gmm_matches_gtf_code(getkey):
    # the GTF code's GMM (N >= 6): Σ = σ² I with σ² = 1, i.e. bandwidth = 1
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(400, 6)), rng.normal(size=(300, 6)) * 1.3
    key = getkey()
    res = state_space_divergence(x, y, n_samples=500, key=key, bandwidth=1.0, method="exact")
    k_idx, k_eps, _ = jax.random.split(key, 3)
    idx = np.asarray(jax.random.randint(k_idx, (500,), 0, 400))
    eps = np.asarray(jax.random.normal(k_eps, (500, 6)), dtype=np.float64)
    samples = x[idx] + eps

    def gmm(mu):  # gmm_likelihood_diagonal_Σ with σ = 1
        e = np.sum((samples[:, None, :] - mu[None]) ** 2, axis=-1)
        return np.exp(-0.5 * e).sum(axis=1) / len(mu)

    assert res.value == pytest.approx(np.mean(np.log(gmm(x)) - np.log(gmm(y))), rel=1e-9)


def _cycle(points, T):
    return np.tile(points, (T // len(points) + 1, 1))[:T]


@pytest.mark.parametrize("period", [1, 3])
def test_collapsed_orbit_exact_and_fast(period, lorenz_pair, getkey):
    x, _ = lorenz_pair
    y = _cycle(x[::997][:period] + 0.5, 12_000)
    key = getkey()
    ex = state_space_divergence(x, y, n_samples=2_000, key=key, method="exact")
    k_idx, k_eps, _ = jax.random.split(key, 3)
    idx = np.asarray(jax.random.randint(k_idx, (2_000,), 0, len(x)))
    eps = np.asarray(jax.random.normal(k_eps, (2_000, 3)), dtype=np.float64)
    s = np.asarray(ex.bandwidth)
    ref = _reference_dstsp(x, y[:period], s, idx, eps) + math.log(12_000 / period) * 0
    # the mixture of a cycle is the mixture of its distinct points (weights cancel)
    assert ex.value == pytest.approx(ref, rel=1e-9)
    assert "collapsed" in ex.note and ex.status == "ok"
    gr = state_space_divergence(x, y, n_samples=2_000, key=key, method="grid")
    assert gr.value == pytest.approx(ex.value, rel=1e-3)


def test_collapsed_orbit_subsample(lorenz_pair, getkey):
    x, _ = lorenz_pair
    y = _cycle(x[::997][:3] + 0.5, 12_000)
    key = getkey()
    kw = {"n_samples": 3_000, "key": key, "embedding": (2, 5)}
    ex = state_space_divergence(x, y, method="exact", **kw)
    ss = state_space_divergence(x, y, method="subsample", **kw)
    assert abs(ss.value - ex.value) <= max(5 * ss.approx_stderr, 2e-3 * ex.value)


def test_near_collapsed_orbit_grid(lorenz_pair, getkey):
    # no exact duplicates (jitter 1e-9): the tails use lattice-merged sources
    x, _ = lorenz_pair
    y = x[100] + 1e-9 * np.random.default_rng(0).normal(size=(12_000, 3))
    key = getkey()
    ex = state_space_divergence(x, y, n_samples=2_000, key=key, method="exact")
    gr = state_space_divergence(x, y, n_samples=2_000, key=key, method="grid")
    assert gr.value == pytest.approx(ex.value, rel=1e-3)
    assert gr.n_check < 2_000


def test_budget_caps_work(lorenz_pair, getkey):
    x, y = lorenz_pair
    key = getkey()
    full = state_space_divergence(x, y, n_samples=3_000, key=key, method="exact")
    cut = state_space_divergence(x, y, n_samples=3_000, key=key, method="exact", max_evals=1e7)
    assert cut.status == "budget" and "max_evals" in cut.note
    assert cut.n_samples == int(1e7 // (len(x) + len(y))) and cut.stderr > full.stderr
    assert abs(cut.value - full.value) < 5 * cut.stderr
    # a coarse grid needs every sample checked; the budget leaves 250 checks after the pilot
    gr = state_space_divergence(x, y, n_samples=3_000, key=key, method="grid", max_evals=2e7,
                                grid_spacing=1.0, rtol=1e-6, mc_frac=1e-3)
    assert gr.status == "budget" and 1_000 < gr.n_check <= 1_250 and gr.approx_stderr > 0
    assert abs(gr.value - full.value) < 5 * gr.stderr
    assert full.status == "ok" and full.note == ""


def test_far_off_orbit_exits_after_the_pilot(lorenz_pair, getkey):
    x, y = lorenz_pair
    far = y + 30 * x.std(0)
    key = getkey()
    ex = state_space_divergence(x, far, n_samples=3_000, key=key, method="exact")
    gr = state_space_divergence(x, far, n_samples=3_000, key=key, method="grid")
    assert gr.status == "early_exit" and gr.n_samples == gr.n_check == 1_000
    assert gr.stderr <= 2e-3 * gr.value and "pilot" in gr.note
    assert abs(gr.value - ex.value) < 5 * math.hypot(gr.stderr, ex.stderr)


def test_kernel_sums_merge_duplicates_and_tails():
    from dsr.metrics import _dstsp_grid, _kernel

    rng = np.random.default_rng(9)
    pts = rng.normal(size=(40, 3)) * 3
    src = pts[rng.integers(0, 40, 3_000)]  # 3,000 points, 40 distinct
    q = np.concatenate([rng.normal(size=(300, 3)) * 3, rng.normal(size=(200, 3)) * 3 + 30])
    ref = scipy.special.logsumexp(-0.5 * np.sum((q[:, None] - src[None]) ** 2, -1), axis=1)
    with jax.enable_x64(True):
        sources = _kernel.KernelSources(src, np.float64)
        assert sources.n == 3_000 and sources.n_distinct == 40
        np.testing.assert_allclose(_kernel.log_kernel_sums(q, [sources])[0], ref, rtol=1e-12)
    cent, w = _dstsp_grid.lattice_merge(src, 1e-3)
    assert len(cent) == 40 and w.sum() == 3_000
    for eps in (0.0, 0.1):
        val, ok = _kernel.tail_log_sums(q, cent, w, eps=eps)
        np.testing.assert_allclose(val[ok], ref[ok], rtol=1e-9)
        assert np.all(val <= ref + 1e-9)
    val, ok = _kernel.tail_log_sums(q, src)  # unweighted: duplicates defeat the bound
    np.testing.assert_allclose(val[ok], ref[ok], rtol=1e-9)
    assert np.all(val <= ref + 1e-9) and not ok.all()


def test_tail_grid_path(lorenz_pair, getkey, monkeypatch):
    # many tail queries (a shifted orbit): the coarse log-grid path, corrected by the checks
    from dsr.metrics import _dstsp_grid

    monkeypatch.setattr(_dstsp_grid, "_TAIL_GRID", 100)
    monkeypatch.setattr(_dstsp_grid, "_TAIL_BRUTE", 0.0)
    x, y = lorenz_pair
    shifted = y + 1.5 * x.std(0)
    key = getkey()
    ex = state_space_divergence(x, shifted, n_samples=4_000, key=key, method="exact")
    gr = state_space_divergence(x, shifted, n_samples=4_000, key=key, method="grid")
    assert gr.status == "ok"
    assert abs(gr.value - ex.value) <= max(5 * gr.approx_stderr, 1e-3 * ex.value)


def test_progress_bar_names_the_step(capsys, getkey):
    x = np.random.default_rng(1).normal(size=(200, 2))
    state_space_divergence(x, x + 0.1, n_samples=100, key=getkey(), progress=True)
    assert "D_stsp: exact kernel sums" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# power spectrum distance
# ------------------------------------------------------------------------------------------------


def _sines(freq, T=4_000, noise=0.0, seed=0):
    t = np.arange(T)
    rng = np.random.default_rng(seed)
    x = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * 1.7 * freq * t)], axis=1)
    return x + noise * rng.normal(size=x.shape)


def _reference_pse(x, y, sigma=20.0):
    """Plain NumPy transliteration of the GTF authors' `power_spectrum_error` (pse.jl)."""

    def spectrum(z):
        z = (z - z.mean(0)) / z.std(0, ddof=1)
        ps = np.abs(np.fft.rfft(z, axis=0)) ** 2
        ps = scipy.ndimage.gaussian_filter1d(ps, sigma, axis=0, mode="reflect")
        return ps / ps.sum(0)

    p, q = spectrum(x), spectrum(y)
    return float(np.mean(np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2, axis=0)) / np.sqrt(2)))


def test_power_spectrum_matches_gtf_code(lorenz_pair):
    x, y = lorenz_pair
    y = y[: len(x)]
    for sigma in (20.0, 5.0):
        got = power_spectrum_distance(x, y, smoothing=sigma)
        assert got == pytest.approx(_reference_pse(x, y, sigma), rel=1e-6)


def test_power_spectrum_zero_for_identical(lorenz_pair):
    x, _ = lorenz_pair
    assert power_spectrum_distance(x, x) == 0.0
    s = _sines(0.01)
    assert power_spectrum_distance(s, s) == 0.0
    # scale and offset invariant
    assert power_spectrum_distance(s, 3 * s + 1) == pytest.approx(0.0, abs=1e-7)


def test_power_spectrum_grows():
    base = _sines(0.01)
    d_freq = [power_spectrum_distance(base, _sines(f)) for f in (0.01, 0.0105, 0.012, 0.02, 0.05)]
    assert d_freq[0] == 0.0
    assert all(b > a for a, b in zip(d_freq, d_freq[1:])), d_freq
    d_noise = [
        power_spectrum_distance(base, _sines(0.01, noise=n, seed=1)) for n in (0.1, 0.5, 2.0)
    ]
    assert all(b > a for a, b in zip(d_noise, d_noise[1:])), d_noise
    assert all(0.0 <= v <= 1.0 for v in d_freq + d_noise)


def test_power_spectrum_lorenz_orbits(lorenz_pair):
    x, y = lorenz_pair
    same = power_spectrum_distance(x, y)  # different lengths: segment-averaged
    noise = np.random.default_rng(0).normal(size=y.shape)
    other = power_spectrum_distance(x, noise)
    assert 0.0 < same < 0.1 < 0.5 < other <= 1.0


def test_power_spectrum_bad_input_and_divergence():
    s = _sines(0.01)
    bad = s.copy()
    bad[10, 0] = np.nan
    with pytest.raises(ValueError, match="x_true"):
        power_spectrum_distance(bad, s)
    with pytest.raises(ValueError, match="x_gen"):
        power_spectrum_distance(s, s[:, :1])
    with pytest.raises(ValueError, match="smoothing"):
        power_spectrum_distance(s, s, smoothing=-1.0)
    with pytest.warns(RuntimeWarning, match="diverged"):
        assert power_spectrum_distance(s, bad) == 1.0
    with pytest.warns(RuntimeWarning, match="constant"):
        assert power_spectrum_distance(s, np.ones_like(s)) == 1.0


# ------------------------------------------------------------------------------------------------
# Lyapunov exponents
# ------------------------------------------------------------------------------------------------


def test_lorenz_max_lyapunov():
    lam = vector_field_lyapunov_spectrum(lorenz_field, jnp.array([1.0, 1.0, 1.0]), 0.01, 40_000,
                                         n_exponents=1)
    assert lam.shape == (1,)
    assert abs(float(lam[0]) - 0.906) < 0.05 * 0.906


def test_lorenz_full_spectrum_sum():
    # f(t, x) signature; the exponents sum to the divergence -(σ + 1 + β) = -13.667
    lams = vector_field_lyapunov_spectrum(lambda t, x: lorenz_field(x), jnp.ones(3), 0.01, 10_000)
    assert lams.shape == (3,)
    assert float(jnp.sum(lams)) == pytest.approx(-(10 + 1 + 8 / 3), rel=1e-3)
    assert abs(float(lams[1])) < 0.05
    assert lams[0] > 0.7


def test_linear_map_exact():
    A = jnp.array([[2.0, 1.0], [0.0, 0.5]])
    lams = lyapunov_spectrum(lambda z: A @ z, lambda z: A, jnp.array([1.0, 1.0]), 200,
                             n_transient=0)
    np.testing.assert_allclose(lams, [math.log(2.0), math.log(0.5)], atol=1e-10)
    lams_dt = lyapunov_spectrum(lambda z: A @ z, lambda z: A, jnp.ones(2), 200, dt=0.5,
                                n_transient=0, n_exponents=1)
    np.testing.assert_allclose(lams_dt, [2 * math.log(2.0)], atol=1e-10)


class Henon(eqx.Module):
    """Toy model with the library's model API: `step(z)` and `jacobian(z)`."""

    a: jax.Array
    b: jax.Array

    def step(self, z):
        return jnp.stack([1.0 - self.a * z[0] ** 2 + z[1], self.b * z[0]])

    def jacobian(self, z):
        return jnp.array([[-2.0 * self.a * z[0], 1.0], [self.b, 0.0]])


def test_model_lyapunov_henon():
    model = Henon(jnp.asarray(1.4), jnp.asarray(0.3))
    z0 = jnp.array([0.1, 0.1])
    lams = model_lyapunov_spectrum(model, z0, 50_000)
    np.testing.assert_allclose(lams, [0.419, -1.623], atol=0.01)
    # sum of exponents = log|det J| = log b
    assert float(jnp.sum(lams)) == pytest.approx(math.log(0.3), abs=1e-10)
    lmax = max_lyapunov(model.step, model.jacobian, z0, 50_000)
    assert float(lmax) == pytest.approx(float(lams[0]), abs=0.01)
    # a jacobian from autodiff agrees with the hand-written one
    lams_ad = lyapunov_spectrum(model.step, jax.jacfwd(model.step), z0, 50_000)
    np.testing.assert_allclose(lams_ad, lams, atol=1e-8)


def test_lyapunov_bad_args():
    f = lambda z: z  # noqa: E731
    with pytest.raises(ValueError, match="n_steps"):
        lyapunov_spectrum(f, jax.jacfwd(f), jnp.ones(2), 0)
    with pytest.raises(ValueError, match="dt"):
        lyapunov_spectrum(f, jax.jacfwd(f), jnp.ones(2), 10, dt=0.0)
    with pytest.raises(ValueError, match="n_exponents"):
        lyapunov_spectrum(f, jax.jacfwd(f), jnp.ones(2), 10, n_exponents=3)
    with pytest.raises(ValueError, match="z0"):
        lyapunov_spectrum(f, jax.jacfwd(f), jnp.ones((2, 2)), 10)


# ------------------------------------------------------------------------------------------------
# slow: larger sizes
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_grid_and_subsample_medium_scale(getkey):
    x = rk4_orbit(lorenz_field, (1.0, 1.0, 1.0), 0.01, 20_000, 1_000)
    y = rk4_orbit(lambda z: lorenz_field(z, rho=29.0), (-3.0, 2.0, 20.0), 0.01, 60_000, 1_000)
    key = getkey()
    ex = state_space_divergence(x, y, n_samples=50_000, key=key, method="exact")
    gr = state_space_divergence(x, y, n_samples=50_000, key=key, method="grid")
    assert abs(gr.value - ex.value) <= 0.01 * abs(ex.value)
    ex = state_space_divergence(x, y, n_samples=20_000, key=key, method="exact", embedding=(3, 10))
    ss = state_space_divergence(x, y, n_samples=20_000, key=key, method="subsample",
                                embedding=(3, 10))
    assert abs(ss.value - ex.value) <= max(0.01 * abs(ex.value), 5 * ss.approx_stderr)


@pytest.mark.slow
def test_no_warnings_on_regular_call(lorenz_pair, getkey):
    x, y = lorenz_pair
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state_space_divergence(x, y, n_samples=1_000, key=getkey(), method="grid")


# ------------------------------------------------------------------------------------------------
# bad inputs: each raises naming the argument, within a second (before any compilation)
# ------------------------------------------------------------------------------------------------

_X = np.random.default_rng(11).normal(size=(400, 2))
_Y = np.random.default_rng(12).normal(size=(400, 2))
_K = jax.random.key(0)
def _ID(z):
    return z


def _J(z):
    return jnp.eye(2)


def _dstsp(**kw):
    return lambda: state_space_divergence(_X, _Y, **{"key": _K, "n_samples": 100, **kw})


def _psd(x=_X, y=_Y, **kw):
    return lambda: power_spectrum_distance(x, y, **kw)


def _lyap(z0=None, n=10, **kw):
    z0 = jnp.ones(2) if z0 is None else z0
    return lambda: lyapunov_spectrum(_ID, _J, z0, n, **kw)


BAD_METRIC_INPUTS = {
    "psd_8_steps": (_psd(_X[:8], _Y[:8]), ValueError, "x_true"),
    "psd_short_gen": (_psd(_X, _Y[:100]), ValueError, "x_gen"),
    "psd_smoothing_str": (_psd(smoothing="20"), TypeError, "smoothing"),
    "psd_smoothing_bool": (_psd(smoothing=True), TypeError, "smoothing"),
    "psd_smoothing_neg": (_psd(smoothing=-1.0), ValueError, "smoothing"),
    "psd_smoothing_nan": (_psd(smoothing=float("nan")), ValueError, "smoothing"),
    "psd_true_nan": (_psd(np.where(_X > 2, np.nan, _X)), ValueError, "x_true"),
    "psd_true_text": (_psd(np.array([["a", "b"]] * 400)), TypeError, "x_true"),
    "psd_gen_3d": (_psd(_X, _Y[None]), ValueError, "x_gen"),
    "psd_gen_dims": (_psd(_X, _Y[:, :1]), ValueError, "x_gen"),
    "dstsp_n_samples_1": (_dstsp(n_samples=1), ValueError, "n_samples"),
    "dstsp_n_samples_9": (_dstsp(n_samples=9), ValueError, "n_samples"),
    "dstsp_n_samples_bool": (_dstsp(n_samples=True), TypeError, "n_samples"),
    "dstsp_n_samples_float": (_dstsp(n_samples=100.0), TypeError, "n_samples"),
    "dstsp_key_int": (_dstsp(key=0), TypeError, "key"),
    "dstsp_key_none": (_dstsp(key=None), ValueError, "key"),
    "dstsp_key_batch": (_dstsp(key=jax.random.split(_K, 2)), ValueError, "key"),
    "dstsp_key_floats": (_dstsp(key=np.zeros(2)), TypeError, "key"),
    "dstsp_method": (_dstsp(method="histogram"), ValueError, "method"),
    "dstsp_n_bins_0": (_dstsp(method="bins", n_bins=0), ValueError, "n_bins"),
    "dstsp_n_bins_bool": (_dstsp(method="bins", n_bins=True), TypeError, "n_bins"),
    "dstsp_grid_d4": (_dstsp(method="grid", embedding=(2, 1)), ValueError, "method='grid'"),
    "dstsp_rtol_0": (_dstsp(rtol=0.0), ValueError, "rtol"),
    "dstsp_mc_frac_str": (_dstsp(mc_frac="0.1"), TypeError, "mc_frac"),
    "dstsp_grid_spacing_2": (_dstsp(grid_spacing=2.0), ValueError, "grid_spacing"),
    "dstsp_subsample_0": (_dstsp(subsample=0), ValueError, "subsample"),
    "dstsp_subsample_float": (_dstsp(subsample=1.5), TypeError, "subsample"),
    "dstsp_embedding_single": (_dstsp(embedding=(3,)), ValueError, "embedding"),
    "dstsp_embedding_bool": (_dstsp(embedding=(True, 1)), TypeError, "m"),
    "dstsp_embedding_tau_0": (_dstsp(embedding=(2, np.int64(0))), ValueError, "tau"),
    "dstsp_bandwidth_bool": (_dstsp(bandwidth=True), TypeError, "bandwidth"),
    "dstsp_bandwidth_str": (_dstsp(bandwidth="0.5"), ValueError, "bandwidth"),
    "dstsp_max_evals_0": (_dstsp(max_evals=0), ValueError, "max_evals"),
    "dstsp_progress_str": (_dstsp(progress="yes"), TypeError, "progress"),
    "dstsp_threshold_neg": (_dstsp(divergence_threshold=-1.0), ValueError,
                            "divergence_threshold"),
    "dstsp_true_one_step": (lambda: state_space_divergence(_X[:1], _Y, key=_K), ValueError,
                            "x_true"),
    "dstsp_gen_complex": (lambda: state_space_divergence(_X, _Y + 0j, key=_K), TypeError,
                          "x_gen"),
    "dstsp_true_inf": (lambda: state_space_divergence(np.where(_X > 2, np.inf, _X), _Y, key=_K),
                       ValueError, "x_true"),
    "dstsp_true_bool": (lambda: state_space_divergence(_X > 0, _Y, key=_K), TypeError, "x_true"),
    "embed_m_bool": (lambda: delay_embed(_X, True, 1), TypeError, "m"),
    "embed_tau_float": (lambda: delay_embed(_X, 2, 1.0), TypeError, "tau"),
    "lyap_n_steps_bool": (_lyap(n=True), TypeError, "n_steps"),
    "lyap_n_steps_float": (_lyap(n=10.0), TypeError, "n_steps"),
    "lyap_n_transient_neg": (_lyap(n_transient=-1), ValueError, "n_transient"),
    "lyap_dt_str": (_lyap(dt="0.1"), TypeError, "dt"),
    "lyap_dt_neg": (_lyap(dt=-0.1), ValueError, "dt"),
    "lyap_n_exponents_bool": (_lyap(n_exponents=True), TypeError, "n_exponents"),
    "lyap_n_exponents_0": (_lyap(n_exponents=0), ValueError, "n_exponents"),
    "lyap_z0_nan": (_lyap(z0=jnp.array([1.0, jnp.nan])), ValueError, "z0"),
    "lyap_z0_matrix": (_lyap(z0=jnp.ones((2, 2))), ValueError, "z0"),
    "max_lyap_n_steps_0": (lambda: max_lyapunov(_ID, _J, jnp.ones(2), 0), ValueError, "n_steps"),
    "field_lyap_dt_0": (lambda: vector_field_lyapunov_spectrum(lorenz_field, jnp.ones(3), 0.0, 10),
                        ValueError, "dt"),
    "field_lyap_x0_text": (lambda: vector_field_lyapunov_spectrum(lorenz_field, "abc", 0.01, 10),
                           TypeError, "x0"),
}


@pytest.mark.parametrize("case", sorted(BAD_METRIC_INPUTS))
def test_bad_metric_inputs_raise_fast(case):
    fn, exc, name = BAD_METRIC_INPUTS[case]
    t0 = time.perf_counter()
    with pytest.raises(exc, match=f"`{name}`"):
        fn()
    assert time.perf_counter() - t0 < 2.0


def test_integer_types_accepted(getkey):
    key = getkey()
    ref = state_space_divergence(_X, _Y, n_samples=50, embedding=(2, 3), key=key)
    for to in (np.int64, np.int32, np.uint16, lambda v: np.asarray(v, np.int8)):
        res = state_space_divergence(_X, _Y, n_samples=to(50), embedding=(to(2), to(3)), key=key)
        assert res.value == ref.value
        b = state_space_divergence(_X, _Y, method="bins", n_bins=to(7))
        assert b.value == state_space_divergence(_X, _Y, method="bins", n_bins=7).value
        np.testing.assert_array_equal(delay_embed(_X, to(2), to(3)), delay_embed(_X, 2, 3))
    A = jnp.array([[0.5, 0.0], [0.0, 0.25]])
    lams = lyapunov_spectrum(lambda z: A @ z, lambda z: A, jnp.ones(2), np.int64(20),
                             n_transient=np.int16(0), n_exponents=np.uint8(2))
    np.testing.assert_allclose(lams, np.log([0.5, 0.25]), atol=1e-10)
    # an integer state is cast to float
    assert lyapunov_spectrum(lambda z: A @ z, lambda z: A, jnp.array([1, 1]), 5,
                             n_transient=0).dtype.kind == "f"


def test_one_summary_convention_for_inf_and_nan():
    """`median_mad`: inf (diverged) is kept and widens the MAD, NaN/None (undefined) is left
    out and counted; more than half infinite gives median and MAD inf."""
    from dsr.metrics import median_mad, summarize_members

    d = median_mad([1.0, 2.0, 4.0, math.inf, math.nan, None])
    assert (d["median"], d["mad"]) == (3.0, 1.5)
    assert (d["n"], d["n_inf"], d["n_undefined"]) == (4, 1, 2)
    assert median_mad([math.inf, math.inf, 1.0])["mad"] == math.inf
    assert math.isnan(median_mad([math.nan])["median"])
    s = summarize_members({"D": [1.0, math.inf, 3.0]}, ["ok", "diverged", "off"])
    assert s["D"]["median"] == 3.0 and s["members"] == 3
    assert (s["n_diverged"], s["n_collapsed"], s["n_off"]) == (1, 0, 1)
