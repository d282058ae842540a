"""dsr.icl: one linear-attention layer learning LDS in context (Vladarean, Zhang, Sra 2026).

Every fast path against a plain reference in float64: the layer's two forms and the paper's
dense formula; OLS against `numpy.linalg.lstsq`; the Kalman filter against a NumPy filter
and exact Gaussian conditioning; Isserlis moments against autodiff of the Gaussian MGF.
One small AR(1) training run checks Theorem 4.1 (structure, GD-equivalence, η*).
"""

import importlib
import json
import math
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr import icl
from dsr.icl._moments import ar1_moments, gaussian_moment, observation_covariance

T = 30  # the paper's sequence length, shared by most tests (one jit shape)
B = 512


@pytest.fixture(scope="module")
def batch():
    return icl.sample_lds(jax.random.key(0), B, setting="a")


def _with_weights(s, w_qk, w_v):
    m = icl.LinearSelfAttention(s, key=jax.random.key(0))
    return eqx.tree_at(lambda m: (m.w_qk, m.w_v), m, (jnp.asarray(w_qk), jnp.asarray(w_v)))


# ------------------------------------------------------------------------- layer and tokens


def test_tokens_follow_the_paper_layout():
    y = jnp.arange(1.0, 8.0)[None]  # y_1 … y_7
    tok = icl.ar_tokens(y, 2)  # n = 7 − 2 − 1 = 4 context tokens
    np.testing.assert_array_equal(tok[0], [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 0]])


def _dense_prediction(model, y):
    """Z = Y + W_V Y M (Yᵀ W_QK Y) / n, columns = tokens (the paper's Eq. 5), in NumPy."""
    s = model.s
    yy = np.asarray(y)
    n = yy.shape[1] - s - 1
    Wq, Wv = np.asarray(model.w_qk), np.asarray(model.w_v)
    out = []
    for seq in yy:
        Y = np.stack([seq[j: j + n + 1] for j in range(s + 1)])
        Y[-1, -1] = 0.0
        M = np.diag(np.r_[np.ones(n), 0.0])
        out.append((Y + Wv @ Y @ M @ (Y.T @ Wq @ Y) / n)[-1, -1])
    return np.array(out)


@pytest.mark.parametrize("s", [1, 3])
def test_recurrent_equals_parallel_and_the_dense_formula(s, batch):
    model = icl.LinearSelfAttention(s, key=jax.random.key(s), init_scale=1.0)
    z_par = model.forward(batch.y, form="parallel")
    z_rec = model.forward(batch.y, form="recurrent")
    assert z_par.dtype == jnp.float64 and z_par.shape == (B, T - s, s + 1)
    np.testing.assert_allclose(z_par, z_rec, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(z_par[:16, -1, -1], _dense_prediction(model, batch.y[:16]),
                               rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ predictors


def test_one_step_gd_is_one_gradient_step_on_the_ar1_loss(batch):
    y = np.asarray(batch.y[:16])
    eta = 0.37

    def loss(w, seq):  # L_1(w) = 1/(2(T−2)) Σ_{t=1}^{T−2} (y_{t+1} − w y_t)²
        return jnp.sum((seq[1:T - 1] - w * seq[: T - 2]) ** 2) / (2 * (T - 2))

    w1 = -eta * jax.vmap(jax.grad(loss), (None, 0))(0.0, y)
    np.testing.assert_allclose(icl.one_step_gd(y, eta), w1 * y[:, T - 2], rtol=1e-12)


@pytest.mark.parametrize("s, n_steps", [(1, T), (3, T), (3, 6)])  # (3, 6): underdetermined
def test_ar_least_squares_equals_numpy_lstsq(s, n_steps, batch):
    y = np.asarray(batch.y[:8, :n_steps])
    got = icl.ar_least_squares(y, s)
    n = n_steps - s - 1
    for b, seq in enumerate(y):
        X = np.stack([seq[t: t + s] for t in range(n)])
        w = np.linalg.lstsq(X, seq[s: s + n], rcond=None)[0]
        assert abs(float(got[b]) - seq[n_steps - s - 1: n_steps - 1] @ w) < 1e-10


def test_optimal_eta_is_the_mse_minimizer_and_isserlis_agrees_with_plain(batch):
    # From given sequences: the exact least-squares step size of the GD feature.
    est = icl.optimal_eta_ar1(batch.y)
    etas = est.value + np.linspace(-0.05, 0.05, 5)
    mse = [float(jnp.mean((icl.one_step_gd(batch.y, e) - batch.y[:, -1]) ** 2)) for e in etas]
    assert np.argmin(mse) == 2 and est.n_samples == B
    # Rao–Blackwellized (Isserlis) vs plain Monte Carlo, same law, within their errors.
    rb = icl.optimal_eta_ar1(key=jax.random.key(1), n_samples=2048, batch_size=B)
    plain = icl.optimal_eta_ar1(key=jax.random.key(2), n_samples=16 * B, method="plain",
                                batch_size=B)
    assert rb.stderr < plain.stderr
    assert abs(rb.value - plain.value) < 4 * math.hypot(rb.stderr, plain.stderr)


def test_isserlis_moments_equal_derivatives_of_the_gaussian_mgf():
    rng = np.random.default_rng(0)
    n = 5
    L = rng.normal(size=(n, n))
    K = L @ L.T / n + 0.1 * np.eye(n)

    def mgf(t):
        return jnp.exp(0.5 * t @ jnp.asarray(K) @ t)

    d4, d6 = mgf, mgf
    for order in range(6):
        d6 = jax.jacfwd(d6)
        d4 = d6 if order == 3 else d4
    d4, d6 = (np.asarray(jax.jit(f)(jnp.zeros(n))) for f in (d4, d6))
    np.testing.assert_allclose(gaussian_moment(K[None], (0, 2, 3, 4))[0], d4[0, 2, 3, 4])
    u, w, i = n - 2, n - 1, np.arange(n - 2)
    m4 = sum(d4[u, w, k, k + 1] for k in i) / (n - 2)
    m6 = sum(d6[u, u, k, k + 1, j, j + 1] for k in i for j in i) / (n - 2) ** 2
    got4, got6 = ar1_moments(K[None])
    np.testing.assert_allclose([got4[0], got6[0]], [m4, m6], rtol=1e-12)


# ------------------------------------------------------------------------------- Kalman


def _state_cov(A, Q, a, b):
    """Cov(x_a, x_b) by the explicit sum over x_0 and the noises (not the P recursion)."""
    mp = np.linalg.matrix_power
    out = mp(A, a) @ mp(A, b).T
    for k in range(min(a, b)):
        out += mp(A, a - 1 - k) @ Q @ mp(A, b - 1 - k).T
    return out


def _numpy_kalman(y, A, c, Q, r):
    """A textbook Kalman filter (covariance form), one-step predictions of y_T."""
    m, P = np.zeros(A.shape[0]), np.eye(A.shape[0])
    for t in range(len(y) - 1):
        S = c @ P @ c + r**2
        K = P @ c / S
        m = m + K * (y[t] - c @ m)
        P = P - np.outer(K, c @ P)
        m, P = A @ m, A @ P @ A.T + Q
    return c @ m


def _conditional_mean(y, A, c, Q, r):
    n = len(y)
    K = np.array([[c @ _state_cov(A, Q, a, b) @ c for b in range(n)] for a in range(n)])
    K += r**2 * np.eye(n)
    return K[-1, :-1] @ np.linalg.solve(K[:-1, :-1], y[:-1]), K


@pytest.mark.parametrize("setting", ["c", "d"])  # non-isotropic Σ_w; non-normal A
def test_kalman_matches_a_numpy_filter_and_exact_conditioning(setting):
    b = icl.sample_lds(jax.random.key(3), 64, n_steps=8, setting=setting)  # as test_sampler
    got = icl.kalman(b.y, b.A, b.C, b.Sigma_w, b.sigma_v)
    K_lib = observation_covariance(b.A, b.C, b.Sigma_w, b.sigma_v, 8)
    for i in range(4):
        A, c, Q = (np.asarray(x[i]) for x in (b.A, b.C[:, 0], b.Sigma_w))
        y, r = np.asarray(b.y[i]), float(b.sigma_v)
        ref, K = _conditional_mean(y, A, c, Q, r)
        assert abs(float(got[i]) - _numpy_kalman(y, A, c, Q, r)) < 1e-10
        assert abs(float(got[i]) - ref) < 1e-10
        np.testing.assert_allclose(K_lib[i], K, rtol=1e-10, atol=1e-12)
    # One shared system for the whole batch: the same as passing it per sequence.
    shared = icl.kalman(b.y, b.A[0], b.C[0], b.Sigma_w[0], b.sigma_v)
    per = icl.kalman(b.y, *(jnp.broadcast_to(x[0], x.shape) for x in (b.A, b.C, b.Sigma_w)),
                     jnp.full((64,), b.sigma_v))
    np.testing.assert_allclose(shared, per, rtol=1e-12)


# ------------------------------------------------------------------------------- sampling


@pytest.mark.parametrize("setting", icl.SETTINGS)
def test_sampler_settings(setting):
    b = icl.sample_lds(jax.random.key(4), 64, n_steps=8, setting=setting)
    A, x, y = np.asarray(b.A), np.asarray(b.x), np.asarray(b.y)
    radius = np.abs(np.linalg.eigvals(A)).max(-1)
    assert np.all(radius >= 0.5 - 1e-9) and np.all(radius <= 0.95 + 1e-9)
    v = y - np.einsum("bd,btd->bt", np.asarray(b.C[:, 0]), x)
    w = x[:, 1:] - np.einsum("bij,btj->bti", A, x[:, :-1])
    assert abs(v.std() - 0.1) < 0.01
    cov = np.einsum("bti,btj->bij", w, w) / w.shape[1]
    assert abs(np.mean(np.trace(cov, axis1=1, axis2=2) / np.trace(np.asarray(b.Sigma_w),
                                                                 axis1=1, axis2=2)) - 1) < 0.1
    if setting in ("a", "c"):
        np.testing.assert_array_equal(A, A * np.eye(5))
    if setting != "lds":
        np.testing.assert_array_equal(np.asarray(b.C), 1.0)


# -------------------------------------------------------------------- structure, Krylov terms


def test_predicted_patterns():
    qk, v = icl.predicted_pattern(1)  # Theorem 4.1
    np.testing.assert_array_equal(qk, [[1, 0], [0, 0]])
    np.testing.assert_array_equal(v, [[0, 0], [0, 1]])
    qk, v = icl.predicted_pattern(2)
    np.testing.assert_array_equal(qk, [[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(v[2], [1, 0, 1])
    for s in (1, 2, 3, 4):  # the two families split the relevant entries
        rq, rv = icl.relevant_entries(s)
        (q0, v0), (q1, v1) = icl.predicted_pattern(s), icl.predicted_pattern(s, family=1)
        np.testing.assert_array_equal(q0 | q1, rq)
        np.testing.assert_array_equal(v0 | v1, rv)
        assert not np.any(q0 & q1) and not np.any(v0 & v1)


def test_family_one_is_theorem_41_with_key_and_value_swapped(batch):
    m0 = _with_weights(1, [[0.8, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.5]])
    m1 = _with_weights(1, [[0.0, 0.0], [0.8, 0.0]], [[0.0, 0.0], [0.5, 0.0]])
    assert icl.family_of(m0) == 0 and icl.family_of(m1) == 1
    for m in (m0, m1):
        assert icl.implied_eta(m) == pytest.approx(0.4)
        assert icl.structure_ratio(m) == 0.0
        np.testing.assert_allclose(m(batch.y), icl.one_step_gd(batch.y, 0.4), rtol=1e-12)


def test_krylov_terms_reconstruct_the_prediction(batch):
    model = icl.LinearSelfAttention(3, key=jax.random.key(5), init_scale=1.0)
    y = batch.y
    t = icl.krylov_terms(model, y)
    w = t.hessian + t.gradient + t.correction
    np.testing.assert_allclose(jnp.sum(w * t.test, -1), model(y), rtol=1e-10, atol=1e-12)
    cos = icl.pcg_cosine(model, y)
    assert cos.shape == (B,) and bool(jnp.all(jnp.abs(cos) <= 1 + 1e-12))
    # For s = 1 every direction is a multiple of the one feature: |cos| = 1.
    assert np.allclose(np.abs(icl.pcg_cosine(icl.LinearSelfAttention(1, key=jax.random.key(6),
                                                                      init_scale=1.0), y)), 1)


# -------------------------------------------------------------------- training (Theorem 4.1)


STEPS = 600


@pytest.fixture(scope="module")
def trained_ar1():
    model = icl.LinearSelfAttention(1, key=jax.random.key(1))
    return icl.train(model, steps=STEPS, batch_size=B, key=jax.random.key(11),
                     learning_rate=0.02, progress=False)


def test_training_reaches_theorem_41(trained_ar1, batch):
    res = trained_ar1
    m = res.model
    assert res.loss.shape == (STEPS,) and res.loss[-50:].mean() < res.loss[:20].mean()
    # Structure: the off-structure entries are small relative to the main ones.
    assert icl.structure_ratio(m) < 0.1  # measured: 0.051 (8 seeds of 300 steps: 0.017-0.048)
    # In the structure, the forward pass *is* one GD step with the model's own η.
    p = icl.project(m)
    np.testing.assert_allclose(p(batch.y), icl.one_step_gd(batch.y, icl.implied_eta(p)),
                               rtol=1e-5, atol=1e-7)
    # The trained weights themselves: the off-structure terms change little.
    eta = icl.implied_eta(m)
    err = jnp.sqrt(jnp.mean((m(batch.y) - icl.one_step_gd(batch.y, eta)) ** 2))
    assert float(err / jnp.sqrt(jnp.mean(m(batch.y) ** 2))) < 0.08  # measured: 0.040


def test_training_finds_the_optimal_step_size(trained_ar1, batch):
    eta = icl.implied_eta(trained_ar1.model)
    star = icl.optimal_eta_ar1(key=jax.random.key(12), n_samples=4 * B, batch_size=B)
    # The trained η is itself a Monte Carlo estimate from the sequences training saw, with
    # an effective count of about 1/7 of them (measured: 8 seeds of 300 steps × 512 gave
    # η = 0.356 ± 0.019 (std) against η* = 0.358 ± 0.0015 and a per-sequence standard
    # deviation 2.78, i.e. N_eff ≈ 22k of 154k); one eighth is counted here.
    per_sample = icl.optimal_eta_ar1(batch.y).stderr * math.sqrt(B)
    se_train = per_sample / math.sqrt(STEPS * B / 8)
    assert abs(eta - star.value) < 3 * math.hypot(star.stderr, se_train), (eta, star, se_train)


# ------------------------------------------------------------------------------- bad input


def test_bad_inputs_name_the_argument(batch):
    y = batch.y[:4]
    model = icl.LinearSelfAttention(1, key=jax.random.key(0))
    for bad, match in [(0, "`s`"), (-1, "`s`"), (1.5, "`s`"), (True, "`s`"),
                       (T - 1, "`s` must be at most T − 2")]:
        with pytest.raises(ValueError, match=match):
            icl.ar_least_squares(y, bad)
        with pytest.raises(ValueError, match=match):
            icl.ar_tokens(y, bad)
    for s in (0, True):
        with pytest.raises(ValueError, match="`s`"):
            icl.LinearSelfAttention(s, key=jax.random.key(0))
    with pytest.raises(ValueError, match="`s` must be at most"):
        icl.LinearSelfAttention(3, key=jax.random.key(0))(y[:, :4])
    vector_obs = jnp.ones((4, T, 2))
    nan = y.at[0, 3].set(jnp.nan)
    calls = [lambda v: icl.one_step_gd(v, 0.3), lambda v: icl.ar_least_squares(v, 2), model,
             lambda v: icl.optimal_eta_ar1(v),
             lambda v: icl.kalman(v, batch.A[0], batch.C[0], batch.Sigma_w[0], 0.1)]
    for f in calls:
        with pytest.raises(ValueError, match="`y` must hold scalar observations"):
            f(vector_obs)
        with pytest.raises(ValueError, match="`y` contains non-finite"):
            f(nan)
        with pytest.raises(ValueError, match="`y` must have 2 or 3 dimensions"):
            f(y[0])
    with pytest.raises(ValueError, match="`C` must have shape .*scalar observations"):
        icl.kalman(y, batch.A[0], jnp.ones((2, 5)), batch.Sigma_w[0], 0.1)
    with pytest.raises(ValueError, match="`A` must"):
        icl.kalman(y, jnp.ones((5, 4)), batch.C[0], batch.Sigma_w[0], 0.1)
    with pytest.raises(ValueError, match="`eta`"):
        icl.one_step_gd(y, float("nan"))
    with pytest.raises(ValueError, match="`setting`"):
        icl.sample_lds(jax.random.key(0), 4, setting="e")
    with pytest.raises(TypeError, match="`sigma` is not an argument"):
        icl.optimal_eta_ar1(key=jax.random.key(0), sigma=0.1)
    with pytest.raises(ValueError, match="`rho"):
        icl.sample_lds(jax.random.key(0), 4, rho=(0.9, 0.5))
    with pytest.raises(ValueError, match="`steps`"):
        icl.train(model, steps=0, batch_size=4, key=jax.random.key(0))
    with pytest.raises(ValueError, match="`s` must be at most"):
        icl.train(icl.LinearSelfAttention(5, key=jax.random.key(0)), steps=1, batch_size=4,
                  key=jax.random.key(0), n_steps=6)
    with pytest.raises(ValueError, match="`form`"):
        model(y, form="chunked")
    with pytest.raises(ValueError, match="`model` must be an AR\\(1\\)"):
        icl.implied_eta(icl.LinearSelfAttention(2, key=jax.random.key(0)))


def test_public_surface():
    assert dsr.icl is icl
    for name in ("LinearSelfAttention", "train", "one_step_gd", "optimal_eta_ar1",
                 "ar_least_squares", "kalman", "sample_lds", "predicted_pattern", "pcg_cosine"):
        assert callable(getattr(icl, name))


# ------------------------------------------------------------------------------- example


@pytest.mark.slow
def test_example_quick_run(tmp_path):
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mod = importlib.import_module("examples.icl_lds")
    mod.main(["--quick", "--out", str(tmp_path)])
    result = json.loads((tmp_path / "icl_lds.json").read_text())
    assert (tmp_path / "icl_lds.png").stat().st_size > 0
    assert [r["s"] for r in result["runs"]] == [1, 2, 3, 4]
    for run in result["runs"]:
        assert all(math.isfinite(run["mse_T30"][k]) for k in ("attention", "gd", "ols", "kalman"))
