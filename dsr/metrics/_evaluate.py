"""All measures of a trained model on a data set (Hess, Götz & Durstewitz (2026),
arXiv:2605.12683, App. G), built from per-measure pieces that an ensemble version can reuse:
[`evaluation_settings`][] (validation, before any compilation), [`free_orbit`][],
[`orbit_report`][], [`dstsp_measure`][], [`spectrum_measure`][], [`rmse_measure`][] and
[`lyapunov_measure`][], each returning its entries of the result dict."""

from __future__ import annotations

import warnings

import jax
import numpy as np
from jaxtyping import PRNGKeyArray

from .._cache import enable_compilation_cache
from .._checks import check_bool, check_int, check_key, check_real
from .._ensemble import Ensemble
from .._orbit_status import data_range, orbit_status
from .._generate import generate
from ._dstsp import MIN_SAMPLES, state_space_divergence
from ._embedding import embedding_window
from ._evaluate_ensemble import evaluate_ensemble
from ._lyapunov import lyapunov_spectrum
from ._orbits import as_model_input, as_orbit, collapse_note, divergence_reason
from ._progress import Progress
from ._rmse import check_model, rmse_n
from ._spectrum import min_length, power_spectrum_distance

#: Delay embeddings (m, τ) used by the paper for D_stsp^DE (App. G).
PAPER_EMBEDDINGS = {
    "lorenz96": (3, 4096),
    "bursting_neuron": (7, 1024),
    "lorenz63_partial": (3, 10),
}

#: A generated orbit farther than this many true standard deviations counts as diverged.
DIVERGENCE_THRESHOLD = 1e6

#: The paper's evaluation scale (App. G): 10^6 D_stsp samples, free runs of 3 × the test
#: length. `evaluate(model, ds, key=k, **PAPER_EVALUATION)`; the defaults scale with the data.
PAPER_EVALUATION = {"n_samples": 1_000_000, "gen_factor": 3}
#: The default free run is 3 × the test length, but at most this many steps (and at least
#: the test length).
AUTO_GEN_STEPS = 30_000
#: The default D_stsp sample count is this many per test step, within `AUTO_SAMPLES_RANGE`.
AUTO_SAMPLES_PER_STEP = 10
AUTO_SAMPLES_RANGE = (10_000, 1_000_000)


def free_run_length(gen_factor, T: int) -> int:
    """Steps of the free run for `T` test steps: `gen_factor × T`, or for `"auto"`
    `max(T, min(3 T, AUTO_GEN_STEPS))` (3 × for test sets up to 10,000 steps, then fewer
    test lengths, never less than one)."""
    if isinstance(gen_factor, str):
        if gen_factor != "auto":
            raise ValueError(f"`gen_factor` must be 'auto' or an integer ≥ 1; got "
                             f"{gen_factor!r}.")
        return max(T, min(3 * T, AUTO_GEN_STEPS))
    return check_int("gen_factor", gen_factor, 1) * T


def sample_count(n_samples, T: int) -> int:
    """D_stsp's Monte-Carlo samples for `T` test steps: `n_samples`, or for `"auto"`
    `10 T` clipped to [10^4, 10^6] (10^6, the paper's, from 100,000 test steps on)."""
    if isinstance(n_samples, str):
        if n_samples != "auto":
            raise ValueError(f"`n_samples` must be 'auto' or an integer ≥ {MIN_SAMPLES}; "
                             f"got {n_samples!r}.")
        lo, hi = AUTO_SAMPLES_RANGE
        return int(min(hi, max(lo, AUTO_SAMPLES_PER_STEP * T)))
    return check_int("n_samples", n_samples, MIN_SAMPLES)


def default_embedding(dataset, obs_dim: int):
    system = (getattr(dataset, "meta", None) or {}).get("system")
    if system == "lorenz63" and obs_dim < 3:
        return PAPER_EMBEDDINGS["lorenz63_partial"]
    return PAPER_EMBEDDINGS.get(system)


def _check_embedding(embedding, dataset, T: int, N: int):
    if isinstance(embedding, str):
        if embedding != "paper":
            raise ValueError(f"`embedding` must be 'paper', None or a pair (m, tau); got "
                             f"{embedding!r}.")
        embedding = default_embedding(dataset, N)
    if embedding is None:
        return None
    try:
        m, tau = embedding
    except (TypeError, ValueError):
        raise ValueError(f"`embedding` must be 'paper', None or a pair (m, tau); got "
                         f"{embedding!r}.") from None
    if embedding_window(m, tau) - 1 >= T // 2:
        warnings.warn(f"embedding {embedding} too long for {T} test steps; dropped.",
                      stacklevel=3)
        return None
    return int(m), int(tau)


def evaluation_settings(model, dataset, *, warmup, n_rmse, n_windows, n_samples, embedding,
                        gen_factor, smoothing, lyapunov_steps) -> tuple[np.ndarray, dict]:
    """The test orbit `(T, N)` and the validated settings of [`evaluate`][]; raises naming the
    argument, before any compilation."""
    one = check_model(model[0] if isinstance(model, Ensemble) else model)
    x = as_orbit("dataset", getattr(dataset, "test", dataset), n_dims=one.obs_dim,
                 like="the model's `obs_dim`")
    dt = getattr(dataset, "dt", None)  # None (an array, or a data set of a map): per step
    dt = 1.0 if dt is None else check_real("dataset.dt", dt, 0.0, lo_open=True)
    s = {"warmup": check_int("warmup", warmup, 1), "n_rmse": check_int("n_rmse", n_rmse, 1),
         "n_windows": check_int("n_windows", n_windows, 1),
         "n_samples": sample_count(n_samples, x.shape[0]),
         "embedding": _check_embedding(embedding, dataset, *x.shape),
         "n_gen": free_run_length(gen_factor, x.shape[0]),
         "smoothing": check_real("smoothing", smoothing, 0.0), "dt": dt,
         "lyapunov_steps": check_int("lyapunov_steps", lyapunov_steps, 1)}
    if x.shape[0] < s["warmup"] + s["n_rmse"]:
        raise ValueError(f"`dataset` has {x.shape[0]} test steps; `warmup` + `n_rmse` = "
                         f"{s['warmup'] + s['n_rmse']} are needed.")
    if x.shape[0] < min_length(s["smoothing"]):
        raise ValueError(f"`dataset` has {x.shape[0]} test steps; D_H with `smoothing`="
                         f"{s['smoothing']:g} needs at least {min_length(s['smoothing'])}.")
    return x, s


def free_orbit(model, x: np.ndarray, settings: dict):
    """Warm up on `x[:warmup]`, run freely for `n_gen` steps: `(x_gen float64, last latent)`."""
    x_gen, z_gen = generate(model, settings["n_gen"], return_latents=True,
                            context=as_model_input(model, x[: settings["warmup"]]))
    return np.asarray(x_gen, np.float64), z_gen[-1]


def orbit_report(x: np.ndarray, x_gen: np.ndarray) -> dict:
    """`diverged` and `status` (`"ok"`, `"diverged"`, `"collapsed"` or `"off"`: bounded but
    outside the test data's range, the rule of `dsr.orbit_status`) of the free orbit, and
    `notes` saying why."""
    why = divergence_reason(x_gen, x, DIVERGENCE_THRESHOLD)
    if why is not None:
        return {"diverged": True, "status": "diverged",
                "notes": [f"the free-running orbit has diverged ({why})."]}
    note = collapse_note(x_gen, x)
    if note is not None:
        return {"diverged": False, "status": "collapsed", "notes": [note]}
    ref = data_range(x)
    off = orbit_status(x_gen, **ref)
    if off.status == "off":
        return {"diverged": False, "status": "off",
                "notes": [f"the free-running orbit {off.describe()}."]}
    return {"diverged": False, "status": "ok", "notes": []}


def dstsp_measure(x, x_gen, settings: dict, key, progress=None) -> dict:
    """`D_stsp`, `D_stsp_stderr` and `D_stsp_status` (with `D_stsp_note`)."""
    d = state_space_divergence(x, x_gen, n_samples=settings["n_samples"], key=key,
                               embedding=settings["embedding"], progress=progress,
                               divergence_threshold=DIVERGENCE_THRESHOLD)
    return {"D_stsp": float(d.value), "D_stsp_stderr": float(d.stderr),
            "D_stsp_status": d.status, "D_stsp_note": d.note}


def spectrum_measure(x, x_gen, settings: dict) -> dict:
    """`D_H`, the power-spectrum Hellinger distance."""
    return {"D_H": power_spectrum_distance(x, x_gen, smoothing=settings["smoothing"])}


def rmse_measure(model, x, settings: dict, key) -> dict:
    """`RMSE_n`, the `n_rmse`-step forecast error over `n_windows` windows."""
    return {"RMSE_n": rmse_n(model, x, settings["n_rmse"], warmup=settings["warmup"],
                             n_windows=settings["n_windows"], key=key)}


def lyapunov_measure(model, z0, settings: dict) -> dict:
    """`lambda_max` per time unit (NaN when the orbit's last state is not finite)."""
    if not bool(np.all(np.isfinite(np.asarray(z0)))):
        return {"lambda_max": float("nan")}
    lam = lyapunov_spectrum(model.step, model.jacobian, z0, settings["lyapunov_steps"],
                            dt=settings["dt"], n_transient=1000, n_exponents=1)
    return {"lambda_max": float(lam[0])}


def evaluate(
    model,
    dataset,
    *,
    key: PRNGKeyArray,
    warmup: int = 512,
    n_rmse: int = 128,
    n_windows: int = 100,
    n_samples: int | str = "auto",
    embedding="paper",
    gen_factor: int | str = "auto",
    smoothing: float = 20.0,
    lyapunov_steps: int = 20_000,
    progress: bool | None = None,
    return_orbits: bool = False,
) -> dict:
    """Warm up on the test data, generate a free orbit (`gen_factor ×` the test length) and
    return every measure with the settings used.

    **Arguments:** `model`; `dataset`: a `data_gen.Dataset` (uses `test`, `dt`, `meta`) or a
    test array (T, N); `key`; `warmup`: context length for the warm-up and for RMSE(n);
    `n_rmse`, `n_windows`: RMSE(n) settings; `n_samples`: D_stsp Monte-Carlo samples
    (`"auto"`: 10 per test step within [10^4, 10^6]); `gen_factor`: the free run's length in
    test lengths (`"auto"`: 3 ×, but at most 30,000 steps and at least one test length);
    `embedding`: `"paper"` (App. G settings for the system, none for fully observed
    Lorenz-63), `None` or `(m, τ)`; `smoothing`: D_H kernel width; `lyapunov_steps`;
    `progress`: tqdm bars naming each step (default: only for long evaluations);
    `return_orbits`: also return the free orbits the measures were computed from.

    **Scale.** The defaults scale with the test set, so that a 10,000-step 3-d test set is
    evaluated in seconds on a laptop CPU (10^5 samples, a 30,000-step free run: a D_stsp within
    its Monte-Carlo spread of the 10^6-sample value, see the Evaluation page);
    `**dsr.metrics.PAPER_EVALUATION` (10^6 samples, 3 × the test length) is the paper's scale.

    **Time.** Bounded: a diverged orbit gives D_stsp = inf at once (and λ_max = NaN when its
    last state is not finite); a collapsed one (fixed point, short cycle) or one far from the
    data takes seconds to tens of seconds; D_stsp's brute-force work is capped (see
    [`dsr.metrics.state_space_divergence`][], `max_evals`), and `D_stsp_status` says when the cap bit.

    **Returns:** a dict with `D_stsp`, `D_stsp_stderr`, `D_H`, `RMSE_n`, `lambda_max` (per
    time unit when the data set has `dt`, else per step), `diverged`, `settings`, and
    `status` (`"ok"`, `"diverged"`, `"collapsed"` or `"off"`: bounded but outside the test
    data's range, see `dsr.orbit_status`), `notes` (why), `D_stsp_status`,
    `D_stsp_note`; with `return_orbits`, `orbits`: the free orbit `(gen_factor·T, N)` (float64,
    `(K, gen_factor·T, N)` for an ensemble), so a caller that needs it does not generate it again.

    **Ensembles.** For an `Ensemble` of K members the free orbits are generated in one
    vmapped call; each scalar measure is an array `(K,)`, `diverged` a bool array,
    `status`/`notes`/`D_stsp_status`/`D_stsp_note` lists, and `summary` holds, per measure,
    `{"median", "mad", "n"}` over all members (diverged members enter with D_stsp = inf),
    with `members`, `n_diverged`, `n_collapsed` and `n_off`. Member i is evaluated with
    `jax.random.split(key, K)[i]`, so it matches `evaluate(ens[i], ..., key=that key)`.
    """
    enable_compilation_cache()
    with warnings.catch_warnings(record=True) as caught:  # re-issued at the caller's line
        warnings.simplefilter("always")
        out = _evaluate(model, dataset, key=key, warmup=warmup, n_rmse=n_rmse,
                        n_windows=n_windows, n_samples=n_samples, embedding=embedding,
                        gen_factor=gen_factor, smoothing=smoothing,
                        lyapunov_steps=lyapunov_steps, progress=progress,
                        return_orbits=return_orbits)
    for w in caught:
        warnings.warn(w.message, stacklevel=2)
    return out


def _evaluate(model, dataset, *, key, warmup, n_rmse, n_windows, n_samples, embedding,
              gen_factor, smoothing, lyapunov_steps, progress, return_orbits) -> dict:
    x, s = evaluation_settings(
        model, dataset, warmup=warmup, n_rmse=n_rmse, n_windows=n_windows, n_samples=n_samples,
        embedding=embedding, gen_factor=gen_factor, smoothing=smoothing,
        lyapunov_steps=lyapunov_steps)
    key = check_key("key", key)
    progress = None if progress is None else check_bool("progress", progress)
    return_orbits = check_bool("return_orbits", return_orbits)
    K = len(model) if isinstance(model, Ensemble) else 1
    work = K * s["n_samples"] * (x.shape[0] + s["n_gen"])
    show = progress if progress is not None else work > 3e9
    if isinstance(model, Ensemble):
        return evaluate_ensemble(model, x, s, key, show, _member_measures, return_orbits)
    with Progress(show, "evaluate: free-running orbit", total=2) as bar:
        x_gen, z_last = free_orbit(model, x, s)
        bar.update()
        bar.stage("evaluate: D_stsp, D_H, RMSE(n), λ_max")
        out = _member_measures(model, x, x_gen, z_last, s, key, progress)
        bar.update()
    if return_orbits:
        out["orbits"] = x_gen
    return {**out, "settings": s}


def _member_measures(model, x, x_gen, z_last, s: dict, key, progress=None) -> dict:
    """Every measure of one model from its free orbit `x_gen` (and last latent `z_last`)."""
    k1, k2, _ = jax.random.split(key, 3)
    out = orbit_report(x, x_gen)
    out.update(dstsp_measure(x, x_gen, s, k1, progress))
    out.update(spectrum_measure(x, x_gen, s))
    out.update(rmse_measure(model, x, s, k2))
    out.update(lyapunov_measure(model, z_last, s))
    if out["D_stsp_note"] and out["D_stsp_status"] == "budget":
        out["notes"].append(out["D_stsp_note"])
    return out
