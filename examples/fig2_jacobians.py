"""Fig. 2: full vs diagonal ("quasi") Jacobians in GTF-DEER, fully and partially observed.

Reproduces the experiment of Hess, Götz, Durstewitz (2026), *Parallel-in-Time Training of
Recurrent Neural Networks for Dynamical Systems Reconstruction*, arXiv:2605.12683, Sec. 5.2,
Fig. 2 and App. H.2: shPLRNNs (M = 5, L = 50, α = 0.15) trained on Lorenz-63, fully observed
(FO, N = 3) and partially observed (PO, x only, N = 1), by GTF-DEER with full Jacobians
(`DEER()`) or their diagonals (quasi-DEER, `DEER(jacobian="diag")`, whose adjoint also uses the
diagonal, Eq. 44). The paper attributes quasi's failure in PO to that approximate gradient; a
third arm, `DEER(jacobian="diag", exact_adjoint=True)` (quasi forward, exact adjoint), tests
the claim. Measured per member: loss curve, Newton iterations per update, D_stsp (FO) or
D_stsp^DE with (m, τ) = (3, 10) (PO), wall time per update, diverged runs.

    python -m examples.fig2_jacobians [--quick | --paper] [--members K] [--steps S] [--out DIR]
"""

from __future__ import annotations

import time

import jax
import numpy as np

import data_gen
import dsr
from dsr.metrics import median_mad
from examples import _findings as F

CONTEXT = 64
ORBIT = 3000  # steps of each generated orbit kept for the picture
SETTINGS = {
    "quick": dict(K=5, steps=150, T=100, B=8, n_data=20_000, n_test=5_000, n_samples=5_000,
                  quasi_max_iter=200),
    "cpu": dict(K=5, steps=2_000, T=200, B=16, n_data=100_000, n_test=20_000,
                n_samples=50_000, quasi_max_iter=200),
    "paper": dict(K=20, steps=20_000, T=200, B=16, n_data=100_000, n_test=100_000,
                  n_samples=1_000_000, quasi_max_iter=1000),
}
ARMS = ("full", "quasi", "quasi + exact adjoint")


def solver(arm: str, s: dict) -> dsr.DEER:
    """The arm's solver; quasi-DEER stops after `quasi_max_iter` iterations (then the batch is
    re-solved sequentially, counted in `fallback_frac`)."""
    if arm == "full":
        return dsr.DEER()
    return dsr.DEER(jacobian="diag", max_iter=s["quasi_max_iter"],
                    exact_adjoint=arm == "quasi + exact adjoint")


OBSERVE = {"FO": None, "PO": "x"}
EMBEDDING = {"FO": None, "PO": (3, 10)}


def run_arm(obs, arm, s, ds, test, key, checkpoint=None):
    N = ds.train.shape[1]
    make = lambda k: dsr.ShPLRNN(N, 5, 50, key=k)  # noqa: E731
    res = F.train(make, s["K"], ds, key, checkpoint=checkpoint,
                  alpha=0.15, steps=s["steps"], seq_len=s["T"],
                  batch_size=s["B"], solver=solver(arm, s), monitor_every=0)
    x_gen, _ = F.generate_members(res.model, test[:CONTEXT], 3 * len(test))
    records = []
    for i in range(s["K"]):
        rec = dict(system=f"lorenz63 {obs}", setting=arm, member=i, **F.fit_stats(res, i))
        m = F.evaluate_member(res.model[i], x_gen[i], test, embedding=EMBEDDING[obs],
                              n_samples=s["n_samples"], context=CONTEXT,
                              key=jax.random.fold_in(key, 1000 + i))
        rec.update(m)
        rec["D"] = m["D_stsp_DE" if EMBEDDING[obs] else "D_stsp"]  # common name for plots
        records.append(rec)
    curves = dict(loss=res.history["loss"], iters=res.history["newton_iters"],
                  wall=res.history["wall_time"], gen=x_gen[:, :ORBIT].astype(np.float32),
                  true=test[:ORBIT].astype(np.float32))
    return records, curves


def _bounded(c, recs, arm):
    """`(member, orbit)` of every member of `arm` whose free run stayed bounded."""
    return [(i, x) for i, x in enumerate(c["gen"])
            if not next(r for r in recs if r["setting"] == arm and r["member"] == i)["diverged"]
            and np.all(np.isfinite(x))]  # fmt: skip


def _orbit_panel(ax, true, orbits, obs):
    """`orbits` (`(member, orbit)` pairs) over the test orbit (grey), in the plane the
    measure sees: (x, z) for FO, the delay embedding (x_t, x_{t-10}) for PO."""
    def plane(x):
        if EMBEDDING[obs]:
            tau = EMBEDDING[obs][1]
            return x[tau:, 0], x[:-tau, 0]
        return x[:, 0], x[:, 2]

    ax.plot(*plane(true), color="0.6", lw=0.4)
    for i, x in orbits:
        ax.plot(*plane(x), lw=0.3, color=f"C{i}", alpha=0.8)
    lim = 1.5 * np.max(np.abs(true[:, [0, 2] if not EMBEDDING[obs] else [0]]))
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim))
    ax.set_xlabel("x_t" if EMBEDDING[obs] else "x", fontsize=8)
    ax.set_ylabel("x_{t-10}" if EMBEDDING[obs] else "z", fontsize=8)


def _band(ax, y, label, color, log=True):
    y = np.asarray(y, float)
    med = np.nanmedian(y, axis=0)
    mad = np.nanmedian(np.abs(y - med), axis=0)
    x = np.arange(y.shape[1])
    ax.plot(x, med, color=color, lw=0.8, label=label)
    ax.fill_between(x, med - mad, med + mad, color=color, alpha=0.25, lw=0)
    if log:
        ax.set_yscale("log")


def plot_orbits(results, path):
    """Every member's generated orbit (colour) over the test orbit (grey), one panel each:
    rows are (observation, arm), columns members, titled with the member's D."""
    rows = [(obs, arm) for obs in results for arm in results[obs][1]
            if "gen" in results[obs][1][arm]]  # fmt: skip
    if not rows:
        return
    K = max(len(results[obs][1][arm]["gen"]) for obs, arm in rows)
    plt = F.pyplot()
    fig, axes = plt.subplots(len(rows), K, figsize=(2.6 * K, 2.6 * len(rows)), squeeze=False)
    for r, (obs, arm) in enumerate(rows):
        c = results[obs][1][arm]
        recs = [x for x in results[obs][0] if x["setting"] == arm]
        for i in range(K):
            ax = axes[r, i]
            _orbit_panel(ax, c["true"], [o for o in _bounded(c, recs, arm) if o[0] == i], obs)
            rec = next(x for x in recs if x["member"] == i)
            ax.set_title(f"{obs} {arm}, member {i}: D {F.fmt(rec['D'])}", fontsize=8)
            ax.tick_params(labelsize=7)
    F.save_figure(fig, path, suptitle="generated orbits (colour) over the test orbit (grey)")


def plot(results, path):
    plt = F.pyplot()
    n_arms = max(len(results[obs][1]) for obs in results)
    # Three panels a row (A-D, then one orbit panel per arm), so the figure reads at the
    # documentation's column width.
    per = -(-(4 + n_arms) // 3)
    fig, grid = plt.subplots(per * len(results), 3, figsize=(13, 3.6 * per * len(results)),
                             squeeze=False)  # fmt: skip
    for row, obs in enumerate(results):
        cells = grid[row * per:(row + 1) * per].flat
        axes = {(row, k): ax for k, ax in enumerate(cells)}
        for k in range(4 + len(results[obs][1]), 3 * per):
            axes[row, k].set_visible(False)
        recs = [r for r in results[obs][0]]
        for j, arm in enumerate(results[obs][1]):
            c = results[obs][1][arm]
            _band(axes[row, 0], c["loss"], arm, f"C{j}")
            _band(axes[row, 1], c["iters"], arm, f"C{j}")
            ax = axes[row, 4 + j]
            if "gen" in c:
                _orbit_panel(ax, c["true"], _bounded(c, recs, arm), obs)
                ax.set_title(f"E ({obs}, {arm}): generated orbits", fontsize=9)
            else:
                ax.text(0.5, 0.5, "no orbits stored\n(run before orbits were kept)",
                        ha="center", va="center", transform=ax.transAxes, fontsize=8)
        F.panel(axes[row, 2], recs, "D", log_x=False, color="C0")
        axes[row, 2].set_yscale("log")
        arms = list(results[obs][1])
        walls = [np.median(results[obs][1][a]["wall"][1:]) * 1e3 for a in arms]
        axes[row, 3].bar(range(len(arms)), walls, color=[f"C{j}" for j in range(len(arms))])
        axes[row, 3].set_xticks(range(len(arms)), arms, fontsize=8)
        dname = "D_stsp^DE (3, 10)" if EMBEDDING[obs] else "D_stsp"
        axes[row, 0].set(title=f"A ({obs}): training loss", xlabel="update")
        axes[row, 1].set(title=f"B ({obs}): Newton iterations per update", xlabel="update")
        axes[row, 2].set(title=f"C ({obs}): {dname} (x: diverged)", ylabel=dname)
        axes[row, 3].set(title=f"D ({obs}): wall time per update [ms]")
        axes[row, 0].legend(fontsize=7)
        axes[row, 2].tick_params(axis="x", labelsize=8)
    F.save_figure(fig, path, suptitle="median ± MAD over all members")


def main(argv=None):
    p = F.parser("fig2_jacobians", __doc__)
    p.add_argument("--observe", choices=list(OBSERVE), nargs="+", default=list(OBSERVE),
                   help="train only these (finished parts are kept; run again without it "
                        "to draw all)")
    p.add_argument("--arms", choices=list(ARMS), nargs="+", default=list(ARMS),
                   help="train only these arms")
    args = p.parse_args(argv)
    s = F.settings(args, SETTINGS)
    t_start = time.perf_counter()
    results, records = {}, []
    for obs in args.observe:
        observe = OBSERVE[obs]
        ds = data_gen.lorenz63(n_steps=s["n_data"], observe=observe, seed=args.seed,
                               progress=False)
        test = np.asarray(ds.test[:s["n_test"]], np.float64)
        recs, curves = [], {}
        for j, arm in enumerate(ARMS):
            if arm not in args.arms:
                continue
            t0 = time.perf_counter()
            key = jax.random.key(args.seed * 100 + j)
            r, curves[arm] = F.cached(args.out, f"{obs}_{arm}", dict(s, obs=obs, arm=arm,
                                                                    seed=args.seed),
                                      run_arm, obs, arm, s, ds, test, key)
            recs += r
            d = median_mad([x["D"] for x in r])
            it = np.median([x["newton_iters_median"] for x in r])
            print(f"  {obs} {arm}: D {F.fmt(d['median'])} ± {F.fmt(d['mad'])}, Newton it. {it:g}, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
        results[obs] = (recs, curves)
        records += recs
    summary = F.summarize(records, ["D", "newton_iters_median", "step_s_median", "final_loss"])
    print("\n" + F.table(summary, ["D", "newton_iters_median", "step_s_median"]))
    settings = dict(s, mode=F.mode(args), seed=args.seed, context=CONTEXT, M=5, L=50,
                    alpha=0.15, embeddings=EMBEDDING, learning_rate=1e-3,
                    arms={a: repr(solver(a, s)) for a in ARMS},
                    measure="D = D_stsp (FO) or D_stsp^DE (PO)")
    js = F.write(args.out, "fig2_jacobians", settings, records, summary, t_start)
    plot(results, js[:-5] + ".png")
    plot_orbits(results, js[:-5] + "_orbits.png")
    print(f"saved {js} ({time.perf_counter() - t_start:.0f} s)")
    return records


if __name__ == "__main__":
    main()
