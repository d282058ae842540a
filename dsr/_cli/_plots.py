"""The pictures of a run, in the recording's original units: loss curve, generated vs true
time series (the start of the free run against the data, and its end against the data's
range), state space (three coordinates; the first three principal components when there are
more; a delay embedding of the first one when there are fewer) and power spectra."""

from __future__ import annotations

import functools
import os

import numpy as np

#: At most this many points of an orbit go into the state-space picture.
STATE_SPACE_POINTS = 20_000
SPECTRUM_SEGMENT = 4096
#: The pictures of a run (in `RUN_DIR/plots/`).
PICTURES = ("loss.png", "timeseries.png", "state_space.png", "spectra.png")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def plot_loss(history: dict, path: str) -> str:
    """Training loss (log scale) per update, one line per member; α beside it if it
    changed during training (adaptive α, or raised after failures)."""
    plt = _pyplot()
    loss = np.atleast_2d(np.asarray(history["loss"], np.float64))
    alpha = np.atleast_2d(np.asarray(history["alpha"], np.float64))
    varies = bool(np.ptp(alpha) > 0)
    fig, axes = plt.subplots(1, 1 + varies, figsize=(5 + 5 * varies, 3.4), squeeze=False)
    steps = np.arange(1, loss.shape[1] + 1)
    for i, row in enumerate(loss):
        axes[0, 0].plot(steps, np.where(row > 0, row, np.nan), lw=0.8,
                        label=f"member {i}" if len(loss) > 1 else None)
        if varies:
            axes[0, 1].plot(steps, alpha[min(i, len(alpha) - 1)], lw=0.8)
    title = "training loss" + ("" if varies else f" (GTF α = {alpha.flat[0]:.3g})")
    axes[0, 0].set(yscale="log", xlabel="update", ylabel="loss (standardized units)",
                   title=title)
    if varies:
        axes[0, 1].set(xlabel="update", ylabel="α", title="GTF forcing α")
    if len(loss) > 1:
        axes[0, 0].legend(fontsize=7)
    return _save(fig, path)


def _ylim(ax, ref, gen) -> None:
    """The reference's range, widened to the free run's but by at most 3 × that range."""
    lo, hi = np.min(ref), np.max(ref)
    pad = 0.15 * (hi - lo) + 1e-12
    g = gen[np.isfinite(gen)]
    ax.set_ylim(max(min(lo, g.min(initial=lo)), lo - 3 * (hi - lo)) - pad,
                min(max(hi, g.max(initial=hi)), hi + 3 * (hi - lo)) + pad)


def plot_timeseries(x_true, x_gen, names, dt, ref_label: str, path: str,
                    plot_steps: int | None = None) -> str:
    """The first (up to 3) variables. Left: the reference vs the free run, aligned in time,
    over the first `plot_steps` steps. Right: the *last* `plot_steps` steps of the free run
    against the reference's range (grey band) — where a run that drifts off the data's
    attractor shows it."""
    plt = _pyplot()
    n_dim = min(3, x_true.shape[1])
    n = min(len(x_true), len(x_gen), plot_steps or len(x_gen))
    late = len(x_gen) > n
    u = dt or 1.0
    fig, axes = plt.subplots(n_dim, 1 + late, figsize=(10 + 5 * late, 1.9 * n_dim + 0.6),
                             sharex="col", squeeze=False)
    t = np.arange(n) * u
    for j in range(n_dim):
        ax = axes[j, 0]
        ax.plot(t, x_true[:n, j], color="0.35", lw=0.8, label=ref_label)
        ax.plot(t, x_gen[:n, j], color="C3", lw=0.8, label="model, free-running")
        _ylim(ax, x_true[:n, j], x_gen[:n, j])
        ax.set_ylabel(names[j])
        if late:
            ax = axes[j, 1]
            t_late = np.arange(len(x_gen) - n, len(x_gen)) * u
            ax.axhspan(np.min(x_true[:, j]), np.max(x_true[:, j]), color="0.85",
                       label=f"{ref_label}: range")
            ax.plot(t_late, x_gen[-n:, j], color="C3", lw=0.8, label="model, free-running")
            _ylim(ax, x_true[:, j], x_gen[-n:, j])
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[0, 0].set_title("start of the free run", fontsize=9)
    axes[-1, 0].set_xlabel("time after the context" + ("" if dt else " (steps)"))
    if late:
        axes[0, 1].legend(loc="upper right", fontsize=8)
        axes[0, 1].set_title(f"end of the free run ({len(x_gen)} steps)", fontsize=9)
        axes[-1, 1].set_xlabel("time after the context" + ("" if dt else " (steps)"))
    return _save(fig, path)


def autocorrelation_delay(x: np.ndarray) -> int:
    """The first lag where the autocorrelation of `x` falls below 1/e (at least 1)."""
    x = np.asarray(x[:50_000], np.float64) - np.mean(x[:50_000])
    n = len(x)
    f = np.fft.rfft(x, 2 * n)
    ac = np.fft.irfft(f * np.conj(f))[:n]
    ac = ac / ac[0] if ac[0] > 0 else ac
    below = np.flatnonzero(ac < np.exp(-1))
    return int(max(1, below[0] if below.size else 1))


def _projection(x_true, names, tau):
    """`(coords(x) -> (n, 3), axis labels)`: the three variables (N = 3); the first three
    principal components of the reference (N > 3, scikit-learn's PCA, fitted on the
    reference only and applied to both orbits); or `(x(t), x(t−τ), x(t−2τ))` of the first
    variable (N < 3)."""
    if x_true.shape[1] == 3:
        return (lambda x: x[:STATE_SPACE_POINTS]), list(names[:3])
    if x_true.shape[1] > 3:
        from sklearn.decomposition import PCA

        ref = x_true[:STATE_SPACE_POINTS]
        pca = PCA(3).fit(ref[np.all(np.isfinite(ref), axis=1)])
        share = pca.explained_variance_ratio_

        def coords(x):
            x = x[:STATE_SPACE_POINTS]
            out = np.full((len(x), 3), np.nan)
            ok = np.all(np.isfinite(x), axis=1)
            out[ok] = pca.transform(np.clip(x[ok], -1e150, 1e150))
            return out

        return coords, [f"PC{k + 1} ({share[k]:.0%})" for k in range(3)]

    def delays(x):
        s = x[:STATE_SPACE_POINTS + 2 * tau, 0]
        return np.stack([s[2 * tau:], s[tau:-tau], s[:-2 * tau]], axis=1)

    return delays, [f"{names[0]}(t)", f"{names[0]}(t−{tau})", f"{names[0]}(t−{2 * tau})"]


def plot_state_space(x_true, x_gen, names, tau, ref_label: str, path: str) -> str:
    """The orbits in three coordinates (see `_projection`), reference and free run side by
    side, framed by the reference."""
    plt = _pyplot()
    fig = plt.figure(figsize=(10, 4.6))
    coords, labels = _projection(x_true, names, tau)
    pts = [coords(x) for x in (x_true, x_gen)]
    lo = np.nanmin(pts[0], axis=0)
    hi = np.nanmax(pts[0], axis=0)
    pad = 0.25 * (hi - lo)
    for k, (p, title, color) in enumerate(zip(pts, (ref_label, "model, free-running"),
                                              ("C0", "C3"))):
        ax = fig.add_subplot(1, 2, k + 1, projection="3d")
        keep = np.all((p >= lo - pad) & (p <= hi + pad), axis=1)
        ax.plot(*np.where(keep[:, None], p, np.nan).T, lw=0.3, color=color)
        ax.set(xlim=(lo[0] - pad[0], hi[0] + pad[0]), ylim=(lo[1] - pad[1], hi[1] + pad[1]),
               zlim=(lo[2] - pad[2], hi[2] + pad[2]), xlabel=labels[0], ylabel=labels[1],
               zlabel=labels[2])
        shown = "" if keep.all() else f" ({np.mean(~keep):.0%} of points off the frame)"
        ax.set_title(title + shown, fontsize=9)
    return _save(fig, path)


def spectrum(x: np.ndarray, dt, L: int) -> tuple[np.ndarray, np.ndarray]:
    """`(frequencies, power (F, N))`: averaged periodograms of length-`L` segments (Hann
    window, each without its mean)."""
    n_seg = max(1, len(x) // L)
    segs = x[:n_seg * L].reshape(n_seg, L, -1)
    segs = segs - segs.mean(axis=1, keepdims=True)
    power = (np.abs(np.fft.rfft(segs * np.hanning(L)[:, None], axis=1)) ** 2).mean(axis=0)
    return np.fft.rfftfreq(L, d=dt or 1.0), power


def plot_spectra(x_true, x_gens, names, dt, ref_label: str, path: str) -> str:
    """Power spectra of the first (up to 3) variables: reference and every member."""
    plt = _pyplot()
    n_dim = min(3, x_true.shape[1])
    fig, axes = plt.subplots(1, n_dim, figsize=(3.6 * n_dim + 0.5, 3.3), squeeze=False)
    L = int(min(SPECTRUM_SEGMENT, len(x_true), *(len(g) for g in x_gens)))
    f, p_true = spectrum(x_true, dt, L)
    cum = np.cumsum(p_true[1:, 0]) / max(np.sum(p_true[1:, 0]), 1e-300)
    f_max = f[1 + min(len(cum) - 1, int(np.searchsorted(cum, 0.995)))] * 2
    gens = [spectrum(g, dt, L)[1] for g in x_gens if np.all(np.isfinite(g))]
    for j in range(n_dim):
        ax = axes[0, j]
        for i, p in enumerate(gens):
            ax.semilogy(f[1:], p[1:, j], color="C3", lw=0.7, alpha=0.6,
                        label="model (each member)" if i == 0 else None)
        ax.semilogy(f[1:], p_true[1:, j], color="k", lw=1.0, label=ref_label)
        ax.set(xlim=(0, f_max), xlabel="frequency" + (" (1/time unit)" if dt else
                                                       " (1/step)"), title=names[j])
    axes[0, 0].set_ylabel("power")
    axes[0, 0].legend(fontsize=7)
    return _save(fig, path)


def draw(folder: str, *, history, x_ref, x_gens, names, dt, tau, context: int,
         plot_steps: int, ref_label: str) -> list[str]:
    """Every picture into `folder`; `x_ref` and `x_gens` (K, n, N) in original units, the
    free runs starting right after `x_ref[:context]`. A picture of `PICTURES` that is not
    drawn this time is removed (it showed an earlier model)."""
    os.makedirs(folder, exist_ok=True)
    j = functools.partial(os.path.join, folder)
    out = []
    try:
        _draw_all(out, j, history, x_ref, x_gens, names, dt, tau, context, plot_steps,
                  ref_label)
    finally:
        for name in PICTURES:
            if j(name) not in out and os.path.lexists(j(name)):
                os.remove(j(name))
    return out


def _draw_all(out, j, history, x_ref, x_gens, names, dt, tau, context, plot_steps,
              ref_label) -> None:
    if history is not None and np.size(history.get("loss", [])):
        out.append(plot_loss(history, j("loss.png")))
    if x_ref is None or x_gens is None:
        return
    after = x_ref[context:]
    first = x_gens[0]
    out.append(plot_timeseries(after, first, names, dt, ref_label, j("timeseries.png"),
                               plot_steps))
    out.append(plot_state_space(after, first, names, tau, ref_label, j("state_space.png")))
    out.append(plot_spectra(after, list(x_gens), names, dt, ref_label, j("spectra.png")))
