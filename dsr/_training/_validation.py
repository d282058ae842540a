"""Free-run validation during `fit`: every `eval_every` updates each member runs freely from a
context of held-out data for the data's length, the literature's measures against the data
(binning D_stsp with `n_bins` per axis, Hess et al. (2023), arXiv:2306.04406; D_H, the power-spectrum Hellinger
distance) go into the history, and with `keep="best"` each member's parameters at its best
validation score are kept (in the result and in the checkpoint, so resume keeps them).

The score is the binning D_stsp (lower is better); a diverged orbit (`dsr.orbit_status`)
scores `inf`, so it is never kept as the best (one that collapses or is off the data's range
scores badly by itself).
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

KEEP = ("last", "best")
#: Bins per axis of the validation D_stsp (the GTF authors' histogram estimator): 30, fewer
#: where the data have fewer than 30^N points (`n_bins`).
N_BINS = 30


def n_bins(n_points: int, n_dims: int) -> int:
    """`min(30, max(4, ⌊n_points^(1/N)⌋))`: about one point per cell or more, so that the
    Laplace smoothing of the empty cells does not swamp the histogram in high dimension."""
    return int(min(N_BINS, max(4, np.floor(n_points ** (1.0 / n_dims) + 1e-9))))
#: Frequency smoothing of the validation D_H.
SMOOTHING = 20.0
#: The free run starts after a context of this fraction of the validation data (at most
#: `seq_len` steps) and runs for the validation data's full length.
CONTEXT_FRACTION = 0.1
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

    @property
    def n_steps(self) -> int:
        return len(self.x)


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


def make_validation(validation, keep, eval_every, series: list, obs_dim: int, dtype,
                    seq_len: int, steps: int):
    """`(training series, Validation or None)` from `fit`'s arguments (validated)."""
    check_choice("keep", keep, KEEP)
    if validation is None:
        if keep == "best":
            raise ValueError("`keep='best'` needs `validation=` (held-out data or a fraction).")
        return series, None
    if isinstance(validation, (float, int)) and not isinstance(validation, bool):
        if not 0 < validation < 1:
            raise ValueError(f"`validation` as a fraction must be in (0, 1); got {validation}.")
        series, x = _fraction_split(series, float(validation), seq_len)
        spec = {"fraction": float(validation)}
    else:
        x = _as_array(validation, obs_dim, dtype, seq_len)
        spec = {"steps": len(x), "sha256": hashlib.sha256(x.tobytes()).hexdigest()}
    every = eval_every or max(1, steps // DEFAULT_EVALS)
    tc = int(min(seq_len, max(1, CONTEXT_FRACTION * len(x))))
    settings = dict(spec, keep=keep, every=every, context=tc, n_bins=n_bins(*x.shape))
    return series, Validation(np.asarray(x, np.float64), np.asarray(x[:tc]), keep, every,
                              settings)


def member_scores(val: Validation, gen: np.ndarray) -> dict:
    """Per-member `D_stsp` (binning), `D_H` and `status` of free runs `gen` (K, T, N)."""
    from ..metrics._dstsp_bins import binned_divergence
    from ..metrics._spectrum import power_spectrum_distance

    ref = data_range(val.x)
    d_stsp, d_h, status = [], [], []
    for g in np.asarray(gen, np.float64):
        st = orbit_status(g, **ref)
        status.append(st.status)
        if st.status == "diverged":
            d_stsp.append(float("inf"))
            d_h.append(1.0)
            continue
        d_stsp.append(binned_divergence(val.x, g, val.settings["n_bins"])[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant dimensions of an orbit
            d_h.append(float(power_spectrum_distance(val.x, g, smoothing=SMOOTHING)))
    return dict(D_stsp=np.asarray(d_stsp), D_H=np.asarray(d_h), status=status)


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


def eval_keys(i: int | None) -> tuple[str, str]:
    """The history keys of member `i` (None: a single model)."""
    tag = "" if i is None else f"[{i}]"
    return f"val_D_stsp{tag}", f"val_D_H{tag}"


def validation_history(evals: list, n_members: int, is_ensemble: bool) -> dict:
    """`{"step", "D_stsp", "D_H"}` arrays from the history's eval records."""
    names = [eval_keys(i if is_ensemble else None) for i in range(n_members)]
    rows = [(s, v) for s, v in evals if names[0][0] in v]
    steps = np.asarray([s for s, _ in rows], np.int64)
    out = {"step": steps}
    for j, key in enumerate(("D_stsp", "D_H")):
        a = np.asarray([[v[n[j]] for n in names] for _, v in rows], np.float64).reshape(
            len(rows), n_members).T
        out[key] = a if is_ensemble else a[0]
    return out
