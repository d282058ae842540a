"""`dsr.denoise`: noise-free channels untouched, noisy ones smoothed toward the truth."""

import numpy as np
import pytest

import dsr
from dsr._denoise import _centre_weight


def _signal(T=4000, period=100.0):
    t = np.arange(T) / period * 2 * np.pi
    return np.stack([np.sin(t) + 0.5 * np.sin(2.3 * t), np.cos(0.7 * t) * np.sin(t)], 1)


def test_clean_channels_come_back_unchanged():
    x = _signal()
    d = dsr.denoise(x)
    assert np.array_equal(d.x, x) and list(d.window) == [0, 0]
    assert np.all(d.noise < 0.01 * x.std(0))


@pytest.mark.parametrize("sigma", [0.02, 0.05, 0.1])
def test_noise_is_estimated_and_mostly_removed(sigma):
    rng = np.random.default_rng(0)
    clean = _signal()
    std = clean.std(0)
    noisy = clean + sigma * std * rng.standard_normal(clean.shape)
    d = dsr.denoise(noisy)
    np.testing.assert_allclose(d.noise, sigma * std, rtol=0.1)
    assert np.all(d.window >= 7)
    rmse = np.sqrt(((d.x - clean) ** 2).mean(0))
    assert np.all(rmse < 0.5 * sigma * std), (rmse, sigma * std)


def test_only_the_noisy_channel_is_smoothed_and_spikes_are_not_noise():
    rng = np.random.default_rng(1)
    x = _signal()
    spikes = np.zeros(len(x))
    spikes[::250] = 5.0  # a clean channel of sparse one-sample spikes
    x = np.column_stack([x[:, 0] + 0.05 * rng.standard_normal(len(x)), x[:, 1], spikes])
    d = dsr.denoise(x.astype(np.float32))
    assert d.window[0] > 0 and d.window[1] == 0 and d.window[2] == 0
    assert d.x.dtype == np.float32 and np.array_equal(d.x[:, 1:], x[:, 1:].astype(np.float32))


def test_a_noisy_channel_with_fast_spikes_is_left_as_it_is():
    rng = np.random.default_rng(3)
    x = _signal()[:, 0]
    x[::250] += 5.0  # one-sample spikes: the 7-point fit cannot follow them
    noisy = x + 0.05 * rng.standard_normal(len(x))
    d = dsr.denoise(noisy)
    assert d.noise[0] == pytest.approx(0.05, rel=0.15) and d.window[0] == 0
    assert np.array_equal(d.x, noisy)


def test_one_channel_and_integer_input():
    rng = np.random.default_rng(2)
    x = _signal()[:, 0] + 0.05 * rng.standard_normal(4000)
    d = dsr.denoise(x)
    assert d.x.shape == x.shape and d.noise.shape == (1,) and d.window[0] > 0
    ints = dsr.denoise(np.round(100 * x).astype(int))
    assert ints.x.dtype == np.float64 and ints.window[0] > 0


def test_centre_weight_is_savitzky_golay_s():
    # cubic (= quadratic at the centre), window 2m + 1: h0 = 3 (3m² + 3m − 1) / ((2m − 1)(2m + 1)(2m + 3))
    for m in (3, 5, 10):
        h0 = 3 * (3 * m * m + 3 * m - 1) / ((2 * m - 1) * (2 * m + 1) * (2 * m + 3))
        assert _centre_weight(2 * m + 1, 3) == pytest.approx(h0)


@pytest.mark.parametrize("x, kw, match", [
    (np.zeros((4, 3, 2)), {}, "shape"),
    (np.full((100, 2), np.nan), {}, "NaN"),
    (np.zeros((100, 2)), {"order": 0}, "order"),
    (np.zeros((100, 2)), {"max_window": 8}, "max_window"),
    (np.zeros((40, 2)), {}, "samples"),
    (np.zeros((100, 2)), {"tolerance": 0.5}, "tolerance"),
])
def test_bad_input_names_the_argument(x, kw, match):
    with pytest.raises(ValueError, match=match):
        dsr.denoise(x, **kw)
