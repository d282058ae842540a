"""In-context learning of noisy linear dynamical systems with one linear-attention layer.

After Vladarean, Zhang, Sra (2026), *On learning linear dynamical systems in context with
attention layers* (ICLR 2026), Fig. 1 and Sec. 5, at CPU scale. Trains one
`dsr.icl.LinearSelfAttention` per AR window s = 1 … 4 on fresh random systems of the
paper's setting (a) (A diagonal and centrosymmetric, c = 1, d = 5, T = 30, σ_w = σ_v =
0.1), then

- shows the learned W_QK and W_V as heat maps next to Lemma 4.1's predicted non-zero
  pattern (Theorem 4.1 for s = 1), with the off-pattern ratio (`structure_ratio`);
- compares, on held-out systems, the mean squared error of predicting y_T against the
  context length T for the trained attention, one GD step with Theorem 4.1's η*(T)
  (`one_step_gd`, `optimal_eta_ar1`), in-context OLS on AR(s) (`ar_least_squares`) and the
  Kalman filter with the true system (`kalman`);
- for s = 1, the step size the weights implement against η*; for s ≥ 2, the cosine
  similarity between the attention's Hessian term and the two-step PCG direction
  (`pcg_cosine`; the paper reports 0.88–0.93 for AR(4)).

Writes `icl_lds.json` and `icl_lds.png` to `--out`.

    python -m examples.icl_lds [--quick] [--out DIR] [--seed 0]

Scale reduction: one seed (the paper: three), 2000 (AR(1)) and 3000 steps per model (paper:
8000), batch sizes 2000–3000 (paper: from 3000 up).
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from dsr import icl
from examples import _common

WINDOWS = (1, 2, 3, 4)
FULL = dict(steps=(2000, 3000, 3000, 3000), batch=(2000, 2000, 3000, 3000), n_test=20_000,
            n_systems=10_000, lengths=(4, 6, 8, 10, 12, 15, 18, 21, 24, 27, 30))
QUICK = dict(steps=(100, 100, 100, 100), batch=(256, 256, 256, 256), n_test=2_000,
             n_systems=1_000, lengths=(6, 12, 20, 30))
LAW = dict(n_steps=30, state_dim=5, setting="a", rho=(0.5, 0.95), sigma_w=0.1, sigma_v=0.1)
LEARNING_RATE = 0.05


def _mse(pred, target) -> float:
    return float(jnp.mean((pred - target) ** 2))


def evaluate(model, test, lengths, eta_star, kalman_pred) -> dict:
    """MSE of y_T for each context length T (prefixes of the test sequences)."""
    s = model.s
    rows = {"T": [], "attention": [], "gd": [], "ols": [], "kalman": []}
    for T, eta in zip(lengths, eta_star):
        if T < s + 2:
            continue
        y = test.y[:, :T]
        rows["T"].append(T)
        rows["attention"].append(_mse(model(y), y[:, -1]))
        rows["gd"].append(_mse(icl.one_step_gd(y, eta.value), y[:, -1]))
        rows["ols"].append(_mse(icl.ar_least_squares(y, s), y[:, -1]))
        rows["kalman"].append(_mse(kalman_pred[:, T - 1], y[:, -1]))
    return rows


def run_window(s, steps, batch, key, test, cfg, eta_star, kalman_pred) -> dict:
    kinit, ktrain = jax.random.split(key)
    model = icl.LinearSelfAttention(s, key=kinit)
    res = icl.train(model, steps=steps, batch_size=batch, key=ktrain, **LAW,
                    learning_rate=LEARNING_RATE, progress=sys.stderr.isatty())
    m = res.model
    curve = evaluate(m, test, cfg["lengths"], eta_star, kalman_pred)
    family = icl.family_of(m)
    out = {
        "s": s, "steps": steps, "batch_size": batch, "train_s": res.train_s,
        "final_loss": float(np.mean(res.loss[-max(1, steps // 10):])),
        "family": family, "structure_ratio": icl.structure_ratio(m),
        "w_qk": np.asarray(m.w_qk), "w_v": np.asarray(m.w_v),
        "mse_vs_T": curve,
        "mse_T30": {k: curve[k][-1] for k in ("attention", "gd", "ols", "kalman")},
    }
    if s == 1:
        out["implied_eta"] = icl.implied_eta(m)
    else:
        cos = np.asarray(icl.pcg_cosine(m, test.y))
        out["pcg_cosine"] = {"mean": float(np.mean(cos)), "abs_mean": float(np.mean(np.abs(cos))),
                             "median": float(np.median(cos)),
                             "q10": float(np.quantile(cos, 0.1)),
                             "q90": float(np.quantile(cos, 0.9))}
    return out


def _heat(ax, w, title, pattern=False):
    w = np.asarray(w, float)
    if pattern:
        ax.imshow(w, cmap="Greys", vmin=0, vmax=1.6)
    else:
        lim = float(np.max(np.abs(w))) or 1.0
        ax.imshow(w, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_title(title, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def plot(runs, path):
    plt = _common.pyplot()
    fig, axes = plt.subplots(len(runs), 5, figsize=(13, 2.6 * len(runs)),
                             gridspec_kw={"width_ratios": [1, 1, 1, 1, 2.2]})
    for row, r in zip(np.atleast_2d(axes), runs):
        s, fam = r["s"], r["family"]
        pq, pv = icl.predicted_pattern(s, family=fam)
        _heat(row[0], r["w_qk"], f"AR({s}): W_QK, off/on {r['structure_ratio']:.3f}")
        _heat(row[1], pq, f"Lemma 4.1 pattern (family {fam})", pattern=True)
        _heat(row[2], r["w_v"], f"AR({s}): W_V")
        _heat(row[3], pv, "Lemma 4.1 pattern", pattern=True)
        c = r["mse_vs_T"]
        for k, style in (("attention", "o-"), ("gd", "s--"), ("ols", "^:"), ("kalman", "k-")):
            label = {"attention": f"attention AR({s})", "gd": "one-step GD, η*(T)",
                     "ols": f"OLS AR({s})", "kalman": "Kalman (true system)"}[k]
            row[4].plot(c["T"], c[k], style, ms=3, label=label)
        row[4].set_yscale("log")
        row[4].set_xlabel("context length T")
        row[4].set_ylabel("MSE of ŷ_T")
        row[4].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(runs) -> str:
    rows = []
    for r in runs:
        row = {"s": r["s"], **{f"{k} MSE": v for k, v in r["mse_T30"].items()},
               "family": r["family"], "off/on": r["structure_ratio"],
               "train s": r["train_s"]}
        if "pcg_cosine" in r:
            row["PCG cos"] = r["pcg_cosine"]["mean"]
            row["|PCG cos|"] = r["pcg_cosine"]["abs_mean"]
        rows.append(row)
    cols = ["s", "attention MSE", "gd MSE", "ols MSE", "kalman MSE", "family", "off/on",
            "PCG cos", "|PCG cos|", "train s"]
    return _common.table(rows, cols)


def main(argv=None):
    import os

    args = _common.parser("icl_lds", __doc__).parse_args(argv)
    cfg = QUICK if args.quick else FULL
    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    key = jax.random.key(args.seed)
    k_test, k_eta, k_models = jax.random.split(key, 3)
    test = icl.sample_lds(k_test, cfg["n_test"], **LAW)
    eta_star = icl.optimal_eta_ar1(key=k_eta, n_samples=cfg["n_systems"], **LAW,
                                   lengths=cfg["lengths"], batch_size=1000)
    kalman_pred = icl.kalman(test.y, test.A, test.C, test.Sigma_w, test.sigma_v, all_steps=True)
    runs = []
    for i, s in enumerate(WINDOWS):
        runs.append(run_window(s, cfg["steps"][i], cfg["batch"][i],
                               jax.random.fold_in(k_models, s), test, cfg, eta_star,
                               kalman_pred))
        print(f"AR({s}) trained in {runs[-1]['train_s']:.0f} s", flush=True)
    print(table(runs))
    eta30 = eta_star[-1]
    print(f"η*(T=30) = {eta30.value:.4f} ± {eta30.stderr:.4f}; AR(1) model implements "
          f"η = {runs[0]['implied_eta']:.4f}")
    png = os.path.join(args.out, "icl_lds.png")
    plot(runs, png)
    payload = {
        "settings": dict(LAW, windows=list(WINDOWS), learning_rate=LEARNING_RATE,
                         quick=args.quick, seed=args.seed, **{k: list(v) if isinstance(
                             v, tuple) else v for k, v in cfg.items()}),
        "eta_star": {"T": list(cfg["lengths"]), "value": [e.value for e in eta_star],
                     "stderr": [e.stderr for e in eta_star]},
        "runs": runs,
    }
    _common.write_json(os.path.join(args.out, "icl_lds.json"), payload, t_start)
    print(f"wrote {png} and icl_lds.json ({time.perf_counter() - t_start:.0f} s)")
    return payload


if __name__ == "__main__":
    main()
