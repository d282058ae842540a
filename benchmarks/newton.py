"""Newton iterations of the GTF-DEER forward pass against the forcing α (Hess et al. 2026, Fig. 1B).

``python -m benchmarks.newton [--quick] --out DIR`` trains a shPLRNN (L = 50) on Lorenz-63
(N = 3) for M = N = 3 and M = 10 > N, then runs the GTF-DEER forward pass on windows of
T steps for α ∈ [0, 1] with the three initial guesses of App. H.1 — `zeros`, `normal`
(N(0, 1) entries) and `pinv` (teacher signals `B⁺x`) — for full DEER and quasi-DEER, capped
at 500 Newton iterations. It records the iterations of every window (a vmapped solve: each
window stops on its own), whether it converged, and prints a table of the median iterations;
``DIR/newton.json`` holds everything, ``DIR/newton.png`` plots iterations against α
(log scale; non-converged solves are drawn at the cap).

It also measures quasi-DEER's approximate gradient: for every α and window, the relative error
`‖g_quasi − g‖ / ‖g‖` of the one-step-MSE gradient with the diagonal adjoint
(`DEER(jacobian="diag")`, Hess et al. (2026) Eq. 44) against the exact one (BPTT through
`dsr.Sequential()`, which `DEER(jacobian="diag", exact_adjoint=True)` reproduces), over all
parameters (`gradient` records; `gradient_table`).

Expected (paper, Sec. 5.1): iterations fall as α grows; for M ≤ N and large α full DEER
converges in 2 iterations (one to converge, one to verify); `pinv` helps for M = N and the
benefit vanishes for M > N; quasi-DEER needs far more iterations.
"""

from __future__ import annotations

import argparse
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dsr

from . import _common as C

INITS = ("zeros", "normal", "pinv")
JACOBIANS = ("full", "diag")


def run(*, M=(3, 10), alphas=tuple(np.round(np.linspace(0, 1, 21), 4)), inits=INITS,
        jacobians=JACOBIANS, T=1000, windows=5, max_iter=500, hidden_dim=50,
        train_steps=300, train_alpha=0.15, out=None, verbose=True) -> dict:  # fmt: skip
    """Run the sweep; returns (and with `out`, writes) the JSON payload."""
    M, alphas = list(M), [float(a) for a in alphas]
    data = C.lorenz63(max(20_000, windows * (T + 1) + 1))
    rng = np.random.default_rng(1)
    starts = rng.integers(0, len(data) - T - 1, windows)
    xw = jnp.asarray(np.stack([data[s : s + T + 1] for s in starts]))
    records, training, grad_records = [], {}, []
    for m in M:
        model, info = C.trained_shplrnn(data, m, hidden_dim=hidden_dim, steps=train_steps,
                                        alpha=train_alpha, seq_len=min(512, T))  # fmt: skip
        training[m] = info
        params, static = eqx.partition(model, eqx.is_inexact_array)
        if "diag" in jacobians:
            grad_records += gradient_errors(params, static, xw, alphas, m, max_iter)
            if verbose:
                print(f"M={m:<2d} quasi gradient error: " + " ".join(
                    f"{r['median_rel_error']:.2g}" for r in grad_records[-len(alphas):]),
                    flush=True)  # fmt: skip
        for jacobian in jacobians:
            for init in inits:
                solver = dsr.DEER(jacobian=jacobian, init=init, max_iter=max_iter)

                def forward(params, x, alpha, solver=solver):
                    _, sinfo = dsr.gtf_forward(eqx.combine(params, static), x, alpha,
                                               solver=solver)  # fmt: skip
                    return sinfo

                compiled, compile_s, _ = C.compile_fn(forward, params, xw, jnp.float32(0.5))
                t0 = time.perf_counter()
                for alpha in alphas:
                    sinfo = compiled(params, xw, jnp.float32(alpha))
                    it = np.asarray(sinfo.iterations).tolist()
                    conv = np.asarray(sinfo.converged).tolist()
                    capped = [i if c else max_iter for i, c in zip(it, conv)]
                    records.append(dict(M=m, jacobian=jacobian, init=init, alpha=alpha,
                                        iterations=it, converged=conv,
                                        finite=np.asarray(sinfo.finite).tolist(),
                                        median_iters=float(np.median(capped)),
                                        all_converged=bool(all(conv))))  # fmt: skip
                if verbose:
                    row = [r for r in records[-len(alphas):]]
                    print(f"M={m:<2d} {jacobian:4s} {init:6s} ({time.perf_counter() - t0:5.1f} s): "
                          + " ".join(f"{r['median_iters']:.0f}{'' if r['all_converged'] else '*'}"
                                     for r in row), flush=True)  # fmt: skip
    payload = dict(
        benchmark="newton", environment=C.environment(),
        settings=dict(M=M, alphas=alphas, inits=list(inits), jacobians=list(jacobians), T=T,
                      windows=windows, window_starts=starts.tolist(), max_iter=max_iter,
                      hidden_dim=hidden_dim, obs_dim=3, dtype="float32", warmup=0,
                      data="lorenz63 RK4 dt=0.01 standardized",
                      training={str(k): v for k, v in training.items()}),
        records=records, gradient=grad_records)  # fmt: skip
    if out is not None:
        C.write_json(out, "newton", payload)
        plot(payload, out)
    return payload


def gradient_errors(params, static, xw, alphas, M, max_iter) -> list[dict]:
    """Relative error of quasi-DEER's Eq. 44 gradient against the exact one, per window."""

    def grad(solver):
        def loss(p, x, alpha):
            model = eqx.combine(p, static)
            z, info = dsr.gtf_forward(model, x, alpha, solver=solver)
            return jnp.mean((z @ model.B.T - x[1:]) ** 2), info

        g = jax.grad(loss, has_aux=True)
        return jax.jit(jax.vmap(g, in_axes=(None, 0, None)))

    exact = grad(dsr.Sequential())
    quasi = grad(dsr.DEER(jacobian="diag", max_iter=max_iter))
    flat = lambda g: jnp.concatenate([v.reshape(v.shape[0], -1)  # noqa: E731
                                      for v in jax.tree_util.tree_leaves(g)], axis=1)
    out = []
    for alpha in alphas:
        ge, _ = exact(params, xw, jnp.float32(alpha))
        gq, info = quasi(params, xw, jnp.float32(alpha))
        ge, gq = flat(ge), flat(gq)
        rel = np.asarray(jnp.linalg.norm(gq - ge, axis=1) / jnp.linalg.norm(ge, axis=1))
        conv = np.asarray(info.converged)
        ok = rel[conv & np.isfinite(rel)]
        out.append(dict(M=M, alpha=float(alpha), rel_error=rel.tolist(), converged=conv.tolist(),
                        median_rel_error=float(np.median(ok)) if ok.size else float("nan")))
    return out


def gradient_table(payload: dict) -> str:
    """Median relative error of quasi-DEER's gradient (converged windows; `–`: none)."""
    s = payload["settings"]
    idx = {(r["M"], r["alpha"]): r for r in payload.get("gradient", [])}
    header = ["α"] + [f"M={m} quasi ‖g_q − g‖/‖g‖" for m in s["M"]]
    rows = []
    for a in s["alphas"]:
        row = [f"{a:.2f}"]
        for m in s["M"]:
            r = idx.get((m, a))
            v = None if r is None else r["median_rel_error"]
            row.append("–" if v is None or not np.isfinite(v) else f"{v:.2f}")
        rows.append(row)
    return C.markdown_table(header, rows)


def table(payload: dict) -> str:
    """Median Newton iterations over the windows (`*`: some window did not converge)."""
    s = payload["settings"]
    idx = {(r["M"], r["jacobian"], r["init"], r["alpha"]): r for r in payload["records"]}
    cols = [(m, j, i) for m in s["M"] for j in s["jacobians"] for i in s["inits"]]
    header = ["α"] + [f"M={m} {'quasi' if j == 'diag' else 'full'} {i}" for m, j, i in cols]
    rows = []
    for a in s["alphas"]:
        row = [f"{a:.2f}"]
        for m, j, i in cols:
            r = idx.get((m, j, i, a))
            row.append("–" if r is None else
                       f"{r['median_iters']:.0f}{'' if r['all_converged'] else '*'}")  # fmt: skip
        rows.append(row)
    return C.markdown_table(header, rows)


def plot(payload: dict, out) -> None:
    s = payload["settings"]
    panels = [(m, j) for m in s["M"] for j in s["jacobians"]]
    fig, axes = C.new_figure(len(panels), width=3.6)
    for ax, (m, j) in zip(axes, panels):
        for k, init in enumerate(s["inits"]):
            rs = sorted((r for r in payload["records"]
                         if r["M"] == m and r["jacobian"] == j and r["init"] == init),
                        key=lambda r: r["alpha"])  # fmt: skip
            if not rs:
                continue
            a = [r["alpha"] for r in rs]
            capped = [[i if c else s["max_iter"] for i, c in zip(r["iterations"], r["converged"])]
                      for r in rs]  # fmt: skip
            ax.semilogy(a, [np.median(c) for c in capped], "-o", ms=3, color=f"C{k}", label=init)
            ax.fill_between(a, [min(c) for c in capped], [max(c) for c in capped],
                            color=f"C{k}", alpha=0.15)  # fmt: skip
        ax.axhline(s["max_iter"], color="k", lw=0.6, ls=":")
        ax.set_ylim(1, s["max_iter"] * 1.5)
        ax.set_title(f"M = {m}, {'quasi-DEER' if j == 'diag' else 'DEER'} (N = 3)", fontsize=9)
        ax.set_xlabel("α")
        ax.set_ylabel("Newton iterations")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    C.save_figure(fig, out, "newton")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.newton",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--quick", action="store_true", help="small sweep (about a minute on a CPU)")
    p.add_argument("--out", default="results/newton", help="output folder")
    p.add_argument("--M", type=int, nargs="+", help="latent sizes (default 3 10)")
    p.add_argument("--alphas", type=int, help="number of α values in [0, 1] (default 21; quick 11)")
    p.add_argument("--T", type=int, help="window length (default 1000; quick 256)")
    p.add_argument("--windows", type=int, help="windows per α (default 5; quick 2)")
    p.add_argument("--max-iter", type=int, default=500)
    p.add_argument("--inits", nargs="+", choices=INITS, default=list(INITS))
    p.add_argument("--jacobians", nargs="+", choices=JACOBIANS, default=list(JACOBIANS))
    p.add_argument("--train-steps", type=int, help="GTF training steps per M (default 300)")
    a = p.parse_args(argv)
    n = a.alphas or (11 if a.quick else 21)
    payload = run(M=a.M or [3, 10], alphas=np.round(np.linspace(0, 1, n), 4),
                  T=a.T or (256 if a.quick else 1000), windows=a.windows or (2 if a.quick else 5),
                  max_iter=a.max_iter, inits=a.inits, jacobians=a.jacobians, train_steps=(60 if a.quick else 300) if a.train_steps is None else a.train_steps,
                  out=a.out)  # fmt: skip
    print()
    print(table(payload))
    if payload["gradient"]:
        print()
        print(gradient_table(payload))
    print(f"\nwrote {a.out}/newton.json and {a.out}/newton.png")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
