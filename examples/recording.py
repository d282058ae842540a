"""A one-channel recording, end to end: delay embedding, an ensemble of clipped shPLRNNs with
free-run validation, and an evaluation on the held-out last minute against baselines.

    python -m examples.recording PATH [--fs 360] [--quick] [--out results/examples/recording]
    python -m examples.recording --synthetic [--quick]

`PATH`: a `.npy` file with one channel, e.g. the MIT-BIH ECG of
`np.save("ecg.npy", scipy.datasets.electrocardiogram())` (five minutes at 360 Hz);
`--synthetic`: the synthetic ECG of `examples.ecg_like` (250 Hz) through the same pipeline.

The pipeline: standardize with the training part's mean and std; hold out the last minute
(`--test-seconds`); choose `(m, τ)` by `dsr.choose_embedding` on the training part (or take
`--embedding M,TAU`; `--taus` sweeps the delay); train a sweep of clipped shPLRNNs as one
program per delay (α ∈ {0.1, 0.3} × teacher noise ∈ {0, 0.05} × `--members` = 2 seeds;
T = 200, batch 16, exponential learning-rate decay to 1e-6, validation on the last 15 % of
the training part, each member kept at its best validation step) and keep the setting with
the best median validation score (and, of several delays, the one whose kept members have
the lowest median validation D_H). Every member, a
linear VAR(1) fitted by least squares (the linear baseline) and the training part itself (the
floor) are then measured against the held-out minute the same way: a free run of `--gen-factor`
× its length from a context at its start, its status (in range / off / diverged / collapsed
against the training data's range), binning D_stsp (`min(30, ⌊T^(1/N)⌋)` bins per axis, as
`fit`'s validation) in the embedding, D_H of the original channel, and beat statistics of the
original channel (R peaks above 2 standard deviations at least 0.25 s apart; mean and standard
deviation of the R-R interval, its median, and the fraction of premature beats, R-R < 80 % of
the median). Pictures: early and late time series, the embedded state space and the spectra
(`recording.png`); numbers in `recording.json`.
"""

from __future__ import annotations

import os
import time
import warnings

import jax
import numpy as np

import dsr
from benchmarks.compare._var import fit_var  # the one VAR(1) fit, shared with the comparison
from dsr._cli._converters import _embedding as parse_embedding  # the CLI's M,TAU rule
from dsr._orbit_status import data_range
from dsr._training._validation import n_bins
from dsr.metrics._dstsp_bins import binned_divergence

from ._common import parser, pyplot, table, write_json

# On CPU the sequential solver: for this shape (M = 5, L = 250, T = 200, 4 × 16 windows) it
# took 18.7 s for 600 updates against 50.2 s for "auto" (DEER), same process, idle 2-core CPU
# (docs/recordings.md). Elsewhere "auto" (GTF-DEER on accelerators).
_SOLVER = "sequential" if jax.default_backend() == "cpu" else "auto"
# α = 0.1 and teacher noise 0.05: of the arms measured on the MIT-BIH ECG (docs/recordings.md)
# the ones with the fewest collapsed and off members; the GTF authors' ECG setting is α = 0.3.
# A sweep (`dsr.Grid`, one program per delay τ): α × teacher noise × `members` seeds per
# setting; the setting with the best median validation score is kept (dsr.fit's rule), and of
# several delays (`--taus`) the one whose kept members have the lowest median validation D_H
# (the spectrum of the channel, comparable across embeddings; D_stsp is not: each delay has
# its own state space).
SETTINGS = dict(members=2, hidden_dim=250, alpha=(0.1, 0.3), seq_len=200, batch_size=16,
                steps=20_000, lr=1e-3, final_lr=1e-6, validation=0.15, gen_factor=10,
                noise=(0.0, 0.05), solver=_SOLVER)
QUICK = dict(members=2, hidden_dim=16, alpha=(0.3,), seq_len=50, batch_size=8, steps=150,
             lr=3e-3, final_lr=1e-4, validation=0.2, gen_factor=2, noise=(0.0, 0.05),
             solver="auto")
#: How the delay is chosen among `--taus` (recorded in recording.json).
TAU_RULE = ("per delay τ a sweep (α × noise × seeds, the best setting by its median validation "
            "D_stsp); among the delays, the lowest median validation D_H of the kept members")


def beat_stats(ecg: np.ndarray, fs: float) -> dict:
    """R-R interval statistics (in samples) of a standardized ECG channel."""
    from scipy.signal import find_peaks

    ecg = np.asarray(ecg, np.float64)
    if not np.all(np.isfinite(ecg)):
        return dict(beats=0, rr_mean=np.nan, rr_std=np.nan, rr_median=np.nan, premature=np.nan)
    peaks, _ = find_peaks(ecg, height=2.0, distance=max(1, int(0.25 * fs)))
    rr = np.diff(peaks).astype(np.float64)
    if len(rr) < 2:
        return dict(beats=len(peaks), rr_mean=np.nan, rr_std=np.nan, rr_median=np.nan,
                    premature=np.nan)
    med = float(np.median(rr))
    return dict(beats=len(peaks), rr_mean=float(rr.mean()), rr_std=float(rr.std()),
                rr_median=med, premature=float(np.mean(rr < 0.8 * med)))


def measures(name, x_test, gen, x_train, fs) -> dict:
    """Status, binning D_stsp (embedding), D_H (channel 0) and beat statistics of `gen`."""
    ref = data_range(x_train)
    st = dsr.orbit_status(gen, **ref)
    row = dict(name=name, status=st.status, max_abs=float(np.nanmax(np.abs(gen))))
    if st.status == "diverged":
        row.update(D_stsp=np.inf, D_H=1.0)
    else:
        row["D_stsp"] = binned_divergence(x_test, gen, n_bins(*x_test.shape))[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            row["D_H"] = dsr.metrics.power_spectrum_distance(x_test[:, :1], gen[:, :1])
    row.update(beat_stats(gen[:, 0], fs))
    return row


def var1_run(A, c, x0, n):
    """`n` steps of `x_{t+1} = A x_t + c` from `x0` (NaN from the first non-finite step)."""
    out, x = np.empty((n, len(x0))), np.asarray(x0, np.float64)
    for i in range(n):
        x = A @ x + c
        if not np.all(np.isfinite(x)) or np.abs(x).max() > 1e12:
            out[i:] = np.nan
            break
        out[i] = x
    return out


def prepare(raw: np.ndarray, fs: float, test_seconds: float, embedding=None):
    """`(train embedded, test embedded, (m, tau), mean, std)`."""
    n_test = int(test_seconds * fs)
    if len(raw) < 4 * n_test:
        raise SystemExit(f"the recording has {len(raw)} samples; holding out {n_test} needs "
                         f"at least {4 * n_test}.")
    train_raw, test_raw = raw[:-n_test], raw[-n_test:]
    mu, sd = float(train_raw.mean()), float(train_raw.std())
    train_raw, test_raw = (train_raw - mu) / sd, (test_raw - mu) / sd
    m, tau = dsr.choose_embedding(train_raw) if embedding is None else embedding
    emb = lambda v: np.asarray(dsr.metrics.delay_embed(v[:, None], m, tau), np.float32)  # noqa
    return emb(train_raw), emb(test_raw), (m, tau), mu, sd


def train(x_train, s: dict, seed: int, checkpoint: str):
    """The sweep α × noise × `members` seeds in one program, with validation and
    best-keeping (resumes from `checkpoint`); `FitResult.model` is the best setting's."""
    N = x_train.shape[1]
    grid = dsr.Grid(alpha=tuple(s["alpha"]), noise=tuple(s["noise"]))
    ens = dsr.sweep(lambda k: dsr.ClippedShPLRNN(N, N, s["hidden_dim"], key=k), grid,
                    s["members"], key=jax.random.key(seed))
    kw = dict(steps=s["steps"], seq_len=s["seq_len"], batch_size=s["batch_size"],
              learning_rate=s["lr"], schedule=dsr.ExponentialDecay(s["final_lr"]),
              validation=s["validation"], keep="best", key=jax.random.key(seed + 1),
              solver=s["solver"],
              checkpoint=checkpoint, checkpoint_every=max(1, s["steps"] // 20),
              progress=False)
    resume = checkpoint if os.path.isfile(checkpoint) else None
    return dsr.fit(ens, x_train, resume=resume, **kw)


def evaluate_all(res, x_train, x_test, s, fs) -> tuple[list, dict]:
    """Rows for every member, the VAR(1) baseline and the floor; and the free runs."""
    n_gen, ctx = s["gen_factor"] * len(x_test), x_test[:s["seq_len"]]
    gens = np.asarray(dsr.generate(res.model, n_gen, context=ctx, check=False), np.float64)
    kept = [res.sweep.rows[j] for j in res.sweep.selected_members]
    rows = [dict(measures(f"member {i}", x_test, g, x_train, fs), best_step=r["step"],
                 alpha=r["alpha"], noise=r["noise"]) for i, (g, r) in enumerate(zip(gens, kept))]
    runs = {f"member {i}": g for i, g in enumerate(gens)}
    runs["VAR(1)"] = var1_run(*fit_var(x_train), ctx[-1], n_gen)
    rows.append(measures("VAR(1)", x_test, runs["VAR(1)"], x_train, fs))
    rows.append(measures("floor (training part)", x_test, x_train.astype(np.float64),
                         x_train, fs))
    rows.append(dict(measures("held-out data", x_test, x_test.astype(np.float64), x_train, fs),
                     D_stsp=0.0, D_H=0.0))
    return rows, runs


def draw(path, x_test, runs, fs, tau):
    plt = pyplot()
    fig, ax = plt.subplots(2, 2, figsize=(12, 7.5))
    w = int(3 * fs)
    t = np.arange(w) / fs
    names = ["member 0", "member 1", "VAR(1)"]
    ax[0, 0].plot(t, x_test[:w, 0], "k", lw=1, label="held-out data")
    for n in names:
        if n in runs:
            ax[0, 0].plot(t, runs[n][:w, 0], lw=0.8, label=n)
            ax[0, 1].plot(t, runs[n][-w:, 0], lw=0.8, label=n)
    ax[0, 1].plot(t, x_test[-w:, 0], "k", lw=1, label="held-out data")
    ax[0, 0].set(title="early: first 3 s of the free runs", xlabel="s")
    ax[0, 1].set(title=f"late: last 3 s of a {len(runs['member 0']) / fs:.0f} s free run",
                 xlabel="s")
    ax[0, 0].legend(fontsize=7)
    lag = min(2, x_test.shape[1] - 1)
    ax[1, 0].plot(x_test[:, 0], x_test[:, lag], "k", lw=0.3, label="held-out data")
    g = runs["member 0"]
    ax[1, 0].plot(g[-len(x_test):, 0], g[-len(x_test):, lag], lw=0.3, label="member 0 (late)")
    ax[1, 0].set(title="embedded state space", xlabel="x(t)", ylabel=f"x(t-{lag * tau})")
    for n, x in [("held-out data", x_test)] + [(n, runs[n]) for n in names if n in runs]:
        if np.all(np.isfinite(x)):
            f = np.fft.rfftfreq(len(x), 1 / fs)
            p = np.abs(np.fft.rfft(x[:, 0] - x[:, 0].mean())) ** 2
            k = max(1, len(p) // 2000)
            ax[1, 1].semilogy(f[: len(p) // k * k].reshape(-1, k).mean(1),
                              p[: len(p) // k * k].reshape(-1, k).mean(1) + 1e-12, lw=0.8,
                              label=n, color="k" if n == "held-out data" else None)
    ax[1, 1].set(title="power spectrum of the original channel", xlabel="Hz", xlim=(0, 40))
    ax[1, 1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _embedding(p, text):
    """`--embedding M,TAU` as `(m, tau)` (None: choose it), by the CLI's own parser."""
    try:
        emb = parse_embedding("--embedding", text)
    except ValueError as e:
        p.error(str(e))
    return None if emb is None else tuple(emb)


def _floats(text):
    return tuple(float(v) for v in str(text).split(","))


def _arguments(argv):
    p = parser("recording", __doc__)
    p.add_argument("path", nargs="?", help="a one-channel .npy recording")
    p.add_argument("--synthetic", action="store_true", help="the synthetic ECG (ecg_like)")
    p.add_argument("--fs", type=float, default=360.0, help="sampling rate (Hz)")
    p.add_argument("--test-seconds", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=None, help="updates (default 20000)")
    p.add_argument("--members", type=int, default=None, help="seeds per setting (default 2)")
    p.add_argument("--alpha", type=_floats, default=None, metavar="A1,A2",
                   help="GTF α values swept (default 0.1,0.3)")
    p.add_argument("--noise", type=_floats, default=None, metavar="S1,S2", help="teacher-signal "
                   "noise std values swept (default 0,0.05)")
    p.add_argument("--seq-len", type=int, default=None, help="GTF window T (default 200)")
    p.add_argument("--hidden-dim", type=int, default=None, help="shPLRNN L (default 250)")
    p.add_argument("--embedding", default=None, metavar="M,TAU",
                   help="delay embedding (default: dsr.choose_embedding on the training part)")
    p.add_argument("--taus", default=None, metavar="T1,T2", help="delays τ swept (one sweep "
                   "program each, the embedding's M); default: the embedding's τ alone")
    p.add_argument("--solver", default=None,
                   help="dsr.fit's solver (default: sequential on CPU, auto elsewhere)")
    a = p.parse_args(argv)
    s = dict(QUICK if a.quick else SETTINGS)
    given = ("steps", "members", "alpha", "noise", "solver", "seq_len", "hidden_dim")
    s.update({k: getattr(a, k) for k in given if getattr(a, k) is not None})
    return p, a, s


def _recording(a):
    if a.synthetic:
        from .ecg_like import FS, ecg_like

        raw, fs = ecg_like(5 * 60 * int(FS), seed=a.seed, m=1)[0][:, 0], FS
    elif a.path:
        raw, fs = np.load(a.path).astype(np.float64).reshape(-1), a.fs
    else:
        raise SystemExit("give PATH (a one-channel .npy) or --synthetic")
    if a.quick:  # a short stretch, and a short held-out part
        raw, a.test_seconds = raw[: int(60 * fs)], 10.0
    return raw, fs


def _sweep_delays(p, a, s, raw, fs) -> dict:
    """One sweep per delay; `{tau: (res, x_train, x_test, m, mu, sd, train_s)}`."""
    emb = _embedding(p, a.embedding)
    if emb is None:
        _, first, (m, tau), _, _ = prepare(raw, fs, a.test_seconds)
        emb = (m, tau)
    taus = [int(t) for t in a.taus.split(",")] if a.taus else [emb[1]]
    out = {}
    for tau in taus:
        x_train, x_test, (m, tau), mu, sd = prepare(raw, fs, a.test_seconds, (emb[0], tau))
        print(f"embedding m={m}, tau={tau} ({1000 * tau / fs:.0f} ms); train {x_train.shape}, "
              f"held out {x_test.shape}; {s}")
        t1 = time.perf_counter()
        res = train(x_train, s, a.seed, os.path.join(a.out, f"fit_tau{tau}.ckpt"))
        if res.interrupted:
            return {}
        out[tau] = (res, x_train, x_test, m, mu, sd, time.perf_counter() - t1)
    return out


def _kept_D_H(res) -> float:
    return float(np.median([res.sweep.rows[j]["D_H"] for j in res.sweep.selected_members]))


def main(argv=None):
    p, a, s = _arguments(argv)
    t0 = time.perf_counter()
    raw, fs = _recording(a)
    os.makedirs(a.out, exist_ok=True)
    runs_by_tau = _sweep_delays(p, a, s, raw, fs)
    if not runs_by_tau:
        print("interrupted; run the same command again to resume from the checkpoints")
        return None
    tau = min(runs_by_tau, key=lambda t: _kept_D_H(runs_by_tau[t][0]))
    res, x_train, x_test, m, mu, sd, train_s = runs_by_tau[tau]
    rows, runs = evaluate_all(res, x_train, x_test, s, fs)
    cols = ["name", "status", "D_stsp", "D_H", "beats", "rr_mean", "rr_std", "rr_median",
            "premature", "max_abs", "best_step", "alpha", "noise"]
    print(table(rows, cols))
    draw(os.path.join(a.out, "recording.png"), x_test, runs, fs, tau)
    sweeps = {str(t): dict(rows=r[0].sweep.rows, selected=r[0].sweep.setting,
                           kept_D_H=_kept_D_H(r[0]), train_s=r[6])
              for t, r in runs_by_tau.items()}
    v = res.validation
    write_json(os.path.join(a.out, "recording.json"), dict(
        settings=s, embedding=dict(m=m, tau=tau), fs=fs, standardization=[mu, sd],
        rows=rows, train_s=sum(r[6] for r in runs_by_tau.values()),
        validation_s=sum(r[0].validation["seconds"] for r in runs_by_tau.values()),
        validation=dict(step=v["step"], D_stsp=v["D_stsp"], D_H=v["D_H"]),
        sweeps=sweeps, rule=dict(setting=res.sweep.rule, tau=TAU_RULE),
        interrupted=False, source="synthetic" if a.synthetic else os.path.basename(a.path)), t0)
    print(f"delay τ = {tau} of {list(runs_by_tau)} ({TAU_RULE}); training {train_s:.0f} s; "
          f"total {time.perf_counter() - t0:.0f} s; wrote {a.out}/recording.json, recording.png")
    return rows


if __name__ == "__main__":
    main()
