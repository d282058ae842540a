"""Free-run validation during `fit`: every `eval_every` updates each member runs freely from a
context of held-out data for the data's length, the literature's measures against the data
(binning D_stsp, Hess et al. (2023), arXiv:2306.04406; D_H, the power-spectrum Hellinger
distance, per channel and averaged) and the run's `dsr.orbit_status` go into the history, and
with `keep="best"` each member's parameters at its best validation score are kept (in the
result and in the checkpoint, so resume keeps them).

**Where D_stsp is computed.** For N ≤ 3 on the data themselves, `n_bins(T, N)` bins per axis.
For N > 3 a histogram of `n_bins^N` cells holds about one point per occupied cell and says
nothing (on a 64-channel EEG every score was 4e-30), so the D_stsp is computed on the leading
`PCA_DIMS = 3` principal components of the validation data (fitted on them, centered on their
mean; the free run gets the same projection) with `n_bins(T, 3)` bins per axis, and the
settings record `space: "pca3"`. What the projection leaves out is still seen by D_H (every
channel) and by the status (every channel's extent and variance).

**How long the run is.** The D_stsp and D_H are those of the run's first `len(x)` steps (as long
as the validation data); its status is judged over `status_steps` (default `STATUS_FACTOR = 4`
× the validation length): an orbit that drifts off the data's range only after the validation
length is "off", not "ok" (on the comparison's 71 probed cells a status over 4× the length
changed the selected setting in 3; in 2 the median member went from not ok to ok: docs,
Compare).

**The score** that `keep="best"` minimizes ranks by status first: D_stsp for an "ok" run,
`STATUS_PENALTY + D_stsp` for an "off" or "collapsed" one (so it ranks after every "ok" run:
a finite binning D_stsp is below ln((T + αK)/α) < 40 for T < 10^12), `inf` for a "diverged" one (never
kept).
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import ArgumentTypeError, check_choice
from .._orbit_status import data_range, orbit_status
from .._sharding import to_host
from ..metrics._spectrum import min_length

KEEP = ("last", "best")
#: Bins per axis of the validation D_stsp (the GTF authors' histogram estimator): 30, fewer
#: where the data have fewer than 30^N points (`n_bins`).
N_BINS = 30
#: Above `PCA_DIMS` dimensions the D_stsp is computed on that many principal components.
PCA_DIMS = 3
#: Added to the D_stsp of an "off" or "collapsed" free run: above any finite binning D_stsp,
#: so such a run ranks after every "ok" one.
STATUS_PENALTY = 1000.0
#: The history's number for a free run's status (`val_status`); -1 where a record has none.
STATUS_CODES = {"ok": 0, "off": 1, "collapsed": 2, "diverged": 3}


def n_bins(n_points: int, n_dims: int) -> int:
    """`min(30, max(4, ⌊n_points^(1/N)⌋))`: about one point per cell or more, so that the
    Laplace smoothing of the empty cells does not swamp the histogram in high dimension."""
    return int(min(N_BINS, max(4, np.floor(n_points ** (1.0 / n_dims) + 1e-9))))


#: Frequency smoothing of the validation D_H.
SMOOTHING = 20.0
#: The free run starts after a context of this fraction of the validation data (at most
#: `seq_len` steps) and runs for `status_steps` (≥ the validation data's length).
CONTEXT_FRACTION = 0.1
#: The status of a validation free run is judged over this many validation lengths.
STATUS_FACTOR = 4
#: Validation runs per `fit` when `eval_every` is not given.
DEFAULT_EVALS = 20


@dataclasses.dataclass
class Validation:
    """The held-out series, its free-run context and what is kept."""

    x: np.ndarray  # (T_val, N), float64
    context: np.ndarray  # (Tc, N), the model's dtype
    keep: str
    every: int
    settings: dict  # what goes into `fit`'s settings
    mean: np.ndarray | None = None  # N > PCA_DIMS: the data's mean (N,) ...
    basis: np.ndarray | None = None  # ... and leading principal axes (N, PCA_DIMS)
    status_steps: int = 0  # the free run's length, over which its status is judged (≥ T_val)

    @property
    def n_steps(self) -> int:
        return len(self.x)

    def space(self, x: np.ndarray) -> np.ndarray:
        """`x` (T, N) in the space of the D_stsp: itself, or its principal components."""
        return x if self.basis is None else (x - self.mean) @ self.basis


def principal_axes(x: np.ndarray, k: int = PCA_DIMS) -> tuple[np.ndarray, np.ndarray]:
    """`(mean, basis)`: the mean (N,) of `x` (T, N) and its `k` leading principal axes
    (N, k), the eigenvectors of the covariance with the largest eigenvalues."""
    mean = x.mean(axis=0)
    c = x - mean
    _, vecs = np.linalg.eigh(c.T @ c / max(len(x) - 1, 1))
    return mean, np.ascontiguousarray(vecs[:, ::-1][:, :k])


def _fraction_split(series: list, fraction: float, seq_len: int):
    """`(training series, validation array)`: the last `fraction` of the last series."""
    last = series[-1]
    n = int(round(fraction * len(last)))
    if n < 2 * seq_len or len(last) - n < seq_len + 1:
        raise ValueError(f"`validation={fraction:g}` leaves {len(last) - n} training and {n} "
                         f"validation steps of a {len(last)}-step series; both need more "
                         f"than {seq_len + 1} (lower it or give a validation array).")
    return series[:-1] + [last[:-n]], last[-n:]


def _as_array(validation, obs_dim: int, dtype, seq_len: int) -> np.ndarray:
    val = getattr(validation, "test", validation)  # a data_gen.Dataset: its test part
    try:
        a = np.asarray(val)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"`validation` must be a fraction in (0, 1), a (T, N) array or "
                                f"a Dataset; got {type(validation).__name__}.") from None
    if a.ndim != 2 or a.shape[1] != obs_dim or not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"`validation` must be a (T, {obs_dim}) numeric array; got shape "
                         f"{a.shape} and dtype {a.dtype}.")
    if not np.all(np.isfinite(a)):
        raise ValueError("`validation` contains non-finite values (NaN or inf).")
    if len(a) < 2 * seq_len:
        raise ValueError(f"`validation` has {len(a)} steps; at least 2 × seq_len = "
                         f"{2 * seq_len} are needed.")
    return np.ascontiguousarray(a, dtype)


def _status_steps(status_steps, n_val: int) -> int:
    """`status_steps` validated: None → `STATUS_FACTOR × n_val`; else an int ≥ `n_val`."""
    if status_steps is None:
        return STATUS_FACTOR * n_val
    if isinstance(status_steps, bool) or not isinstance(status_steps, (int, np.integer)):
        raise ArgumentTypeError(f"`status_steps` must be an int or None; got {status_steps!r}.")
    if status_steps < n_val:
        raise ValueError(f"`status_steps` ({status_steps}) is below the validation length "
                         f"({n_val}): the status is judged over at least the scored run.")
    return int(status_steps)


def before_status_steps(stored: dict | None, val: Validation | None, status_steps) -> bool:
    """A checkpoint's validation settings `stored`, written before `status_steps` existed
    (its runs' status judged over the validation length), resumed without `status_steps`:
    the call then judges over that length too."""
    return (status_steps is None and val is not None and isinstance(stored, dict)
            and "status_steps" not in stored and "status_steps" in val.settings)


def make_validation(validation, keep, eval_every, series: list, obs_dim: int, dtype,
                    seq_len: int, steps: int, status_steps: int | None = None):
    """`(training series, Validation or None)` from `fit`'s arguments (validated)."""
    check_choice("keep", keep, KEEP)
    if validation is None:
        if keep == "best":
            raise ValueError("`keep='best'` needs `validation=` (held-out data or a fraction).")
        if status_steps is not None:
            raise ValueError("`status_steps` sets the length of the validation free runs; "
                             "it needs `validation=`.")
        return series, None
    if isinstance(validation, (float, int)) and not isinstance(validation, bool):
        if not 0 < validation < 1:
            raise ValueError(f"`validation` as a fraction must be in (0, 1); got {validation}.")
        series, x = _fraction_split(series, float(validation), seq_len)
        spec = {"fraction": float(validation)}
    else:
        x = _as_array(validation, obs_dim, dtype, seq_len)
        spec = {"steps": len(x), "sha256": hashlib.sha256(x.tobytes()).hexdigest()}
    if len(x) < min_length(SMOOTHING):  # else D_H fails at the first validation run
        raise ValueError(f"`validation` gives {len(x)} validation steps; the validation D_H "
                         f"needs at least {min_length(SMOOTHING)} (give more held-out data).")
    every = eval_every or max(1, steps // DEFAULT_EVALS)
    tc = int(min(seq_len, max(1, CONTEXT_FRACTION * len(x))))
    n_status = _status_steps(status_steps, len(x))
    x64, mean, basis = np.asarray(x, np.float64), None, None
    settings = dict(spec, keep=keep, every=every, context=tc)
    if n_status != len(x):  # only then: checkpoints written before `status_steps` stay valid
        settings["status_steps"] = n_status
    if obs_dim > PCA_DIMS:  # only then: the settings of N <= 3 runs stay as they were
        mean, basis = principal_axes(x64)
        settings.update(n_bins=n_bins(len(x), PCA_DIMS), space=f"pca{PCA_DIMS}")
    else:
        settings.update(n_bins=n_bins(*x.shape))
    return series, Validation(x64, np.asarray(x[:tc]), keep, every, settings, mean, basis,
                              n_status)


def rank_score(d_stsp, status) -> np.ndarray:
    """The score `keep="best"` minimizes, from D_stsp and the status codes (`STATUS_CODES`):
    D_stsp if ok, `STATUS_PENALTY + D_stsp` if off or collapsed, inf if diverged (D_stsp
    where the status is unknown, -1: records written before statuses were)."""
    d, code = np.asarray(d_stsp, np.float64), np.asarray(status)
    off = (code == STATUS_CODES["off"]) | (code == STATUS_CODES["collapsed"])
    penalty = np.where(off, STATUS_PENALTY, 0.0)
    return np.where(code == STATUS_CODES["diverged"], np.inf, d + penalty)


def member_scores(val: Validation, gen: np.ndarray) -> dict:
    """Per-member `D_stsp` (binning, in `val.space`), `D_H`, `status` (names), `code` (its
    number) and `score` (`rank_score`) of free runs `gen` (K, T, N): the status over all T
    steps, the D_stsp and D_H over the first `val.n_steps`."""
    from ..metrics._dstsp_bins import binned_divergence
    from ..metrics._spectrum import power_spectrum_distance

    ref, x_space = data_range(val.x), val.space(val.x)
    d_stsp, d_h, status = [], [], []
    for g in np.asarray(gen, np.float64):
        st = orbit_status(g, **ref)
        status.append(st.status)
        if st.status == "diverged":
            d_stsp.append(float("inf"))
            d_h.append(1.0)
            continue
        g = g[:val.n_steps]
        d_stsp.append(binned_divergence(x_space, val.space(g), val.settings["n_bins"])[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant dimensions of an orbit
            d_h.append(float(power_spectrum_distance(val.x, g, smoothing=SMOOTHING)))
    code = np.asarray([STATUS_CODES[s] for s in status], np.int64)
    return dict(D_stsp=np.asarray(d_stsp), D_H=np.asarray(d_h), status=status, code=code,
                score=rank_score(d_stsp, code))


def _cut(model, n: int):
    """The arrays of a stacked model (None elsewhere) on the host, members `:n`."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[:n],
                                  eqx.filter(to_host(model), eqx.is_array))


def initial_best(stacked, n_members: int):
    """`(params, score, step)` before any validation: the initial model, `inf`, -1."""
    return (_cut(stacked, n_members), np.full((n_members,), np.inf),
            np.full((n_members,), -1, np.int64))


def update_best(best, model, scores: np.ndarray, step: int):
    """`best` with the members whose `scores` beat their best replaced by (stacked, maybe
    padded) `model`'s parameters."""
    params, score, at = best
    better = np.isfinite(scores) & (scores < score)

    def pick(old, new):
        return np.where(better.reshape((-1,) + (1,) * (np.ndim(new) - 1)), new, old)

    params = jax.tree_util.tree_map(pick, params, _cut(model, len(score)))
    return params, np.where(better, scores, score), np.where(better, step, at)


def kept_model(best, stacked):
    """A stacked model of the best members' parameters (`stacked`'s, cut to the members,
    where a member has no validated best yet)."""
    params, _, at = best
    cur = _cut(stacked, len(at))

    def pick(c, b):
        return jnp.asarray(np.where((at >= 0).reshape((-1,) + (1,) * (np.ndim(c) - 1)), b, c))

    return eqx.combine(jax.tree_util.tree_map(pick, cur, params),
                       eqx.filter(stacked, eqx.is_array, inverse=True))


def eval_keys(i: int | None) -> tuple[str, str, str]:
    """The history keys of member `i` (None: a single model): D_stsp, D_H, status code."""
    tag = "" if i is None else f"[{i}]"
    return f"val_D_stsp{tag}", f"val_D_H{tag}", f"val_status{tag}"


def eval_values(scores: dict, n_members: int, is_ensemble: bool) -> dict:
    """The history's eval record of one validation run (`member_scores`' result)."""
    out = {}
    for i in range(n_members):
        k_stsp, k_h, k_status = eval_keys(i if is_ensemble else None)
        out[k_stsp], out[k_h] = scores["D_stsp"][i], scores["D_H"][i]
        out[k_status] = int(scores["code"][i])
    return out


def validation_history(evals: list, n_members: int, is_ensemble: bool) -> dict:
    """`{"step", "D_stsp", "D_H", "status", "score"}` arrays from the history's eval records
    (`status`: `STATUS_CODES`, -1 in records written before statuses were)."""
    names = [eval_keys(i if is_ensemble else None) for i in range(n_members)]
    rows = [(s, v) for s, v in evals if names[0][0] in v]
    out = {"step": np.asarray([s for s, _ in rows], np.int64)}
    for j, key in enumerate(("D_stsp", "D_H", "status")):
        a = np.asarray([[v.get(n[j], -1) for n in names] for _, v in rows], np.float64)
        out[key] = a.reshape(len(rows), n_members).T
    out["status"] = out["status"].astype(np.int64)
    out["score"] = rank_score(out["D_stsp"], out["status"])
    return out if is_ensemble else {k: v if k == "step" else v[0] for k, v in out.items()}
