"""`python -m benchmarks.runtime --compare-before`: the solver before and after, one process.

*Before* is the frozen copy in `benchmarks/_reference/deer.py` (dsr as of commit 060a8c8), *after*
is the installed `dsr`. For every latent size M, one shPLRNN trained by `dsr.fit`, one window
of T steps, and the cases of each group below timed interleaved (median):

- `step`: one forward + backward training step (`value_and_grad` of the one-step MSE) for
  sequential BPTT, the fused path (`scan_method="sequential"`, `auto` on CPU), the
  associative path (the accelerator path) and quasi-DEER (fused), before and after; with
  the compiled executable's temporary memory;
  and the associative path's forward alone (so backward = step − forward);
- `iteration`: the cost of one Newton iteration, `(t(8 iterations) − t(2)) / 6` of a
  forward solve with `fixed_iters`, full and quasi, fused and associative, before and after;
- `jacobian`: the T forced Jacobians `J_F(z̃) P_α` (full) and their diagonals, as before
  (`J − α J B⁺B`, `jnp.diagonal`) and after (`jacobian_product(_diagonal)`);
- `scan`: the associative scan kernel of full multipliers, forward and reverse: before
  (`lax.associative_scan`, flipped transposed copies for reverse) and after (own recursive
  doubling, matmul and unrolled combines).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dsr
from dsr._solvers._associative import associative_forward, associative_reverse

from .. import _common as C
from .._reference import deer as B

ALPHA = 0.15


def _loss(gtf, static, solver):
    def loss(params, x):
        model = eqx.combine(params, static)
        z, _ = gtf(model, x, ALPHA, solver=solver)
        return jnp.mean((z @ model.B.T - x[1:]) ** 2)

    return loss


def _step_solvers():
    return {
        "sequential": (dsr.gtf_forward, dsr.Sequential()),
        "fused_before": (B.gtf_forward, B.DEER(scan_method="sequential")),
        "fused_after": (dsr.gtf_forward, dsr.DEER(scan_method="sequential")),
        "associative_before": (B.gtf_forward, B.DEER(scan_method="associative")),
        "associative_after": (dsr.gtf_forward, dsr.DEER(scan_method="associative")),
        "quasi_before": (B.gtf_forward, B.DEER(jacobian="diag", scan_method="sequential")),
        "quasi_after": (dsr.gtf_forward, dsr.DEER(jacobian="diag", scan_method="sequential")),
    }


def _time_group(fns, args, repeats, budget_s):
    """Compile every `fns[name]` for `args`, time them interleaved; `(times, memory)`."""
    cases, mem = {}, {}
    for name, fn in fns.items():
        compiled, compile_s, m = C.compile_fn(fn, *args)
        cases[name] = (compiled, args)
        mem[name] = dict(compile_s=compile_s, **m)
    return C.time_interleaved(cases, repeats, budget_s), mem


def _record(group, times, mem, M, T, **extra):
    return [dict(group=group, case=k, M=M, T=T, median_s=C.median(v), min_s=min(v), times_s=v,
                 **mem.get(k, {}), **extra.get(k, {})) for k, v in times.items()]  # fmt: skip


def _step_group(params, static, x, M, T, repeats, budget_s):
    fns, extra = {}, {}
    for name, (gtf, solver) in _step_solvers().items():
        fns[name] = jax.value_and_grad(_loss(gtf, static, solver))
        if name.startswith("associative"):  # the forward alone, timed with the steps
            fns[f"{name}_forward"] = _loss(gtf, static, solver)
    for name, (gtf, solver) in _step_solvers().items():  # Newton iterations of each solve
        if name != "sequential":
            out = jax.jit(lambda p, x, g=gtf, s=solver: g(eqx.combine(p, static), x, ALPHA,
                                                          solver=s)[1])(params, x)  # fmt: skip
            it, ok = (out.iterations, out.converged) if name.endswith("after") else out
            extra[name] = dict(newton_iters=int(it), converged=bool(ok))
    times, mem = _time_group(fns, (params, x), repeats, budget_s)
    return _record("step", times, mem, M, T, **extra)


def _iteration_group(params, static, x, M, T, repeats, budget_s):
    fns = {}
    for path in ("sequential", "associative"):
        for jac in ("full", "diag"):
            for k in (2, 8):
                for version, gtf, cls in (("before", B.gtf_forward, B.DEER),
                                          ("after", dsr.gtf_forward, dsr.DEER)):  # fmt: skip
                    solver = cls(jacobian=jac, scan_method=path, fixed_iters=k)
                    fns[f"{path}_{jac}_{version}_{k}"] = (
                        lambda p, x, g=gtf, s=solver: g(eqx.combine(p, static), x, ALPHA,
                                                        solver=s)[0])  # fmt: skip
    times, mem = _time_group(fns, (params, x), repeats, budget_s)
    out = []
    for name in {k.rsplit("_", 1)[0] for k in fns}:
        t2, t8 = C.median(times[f"{name}_2"]), C.median(times[f"{name}_8"])
        path, jac, version = name.split("_")
        out.append(dict(group="iteration", case=name, path=path, jacobian=jac, version=version,
                        M=M, T=T, per_iteration_s=(t8 - t2) / 6, t2_s=t2, t8_s=t8,
                        times_2_s=times[f"{name}_2"], times_8_s=times[f"{name}_8"]))  # fmt: skip
    return out


def _jacobian_group(model, x, M, T, repeats, budget_s):
    Bp = jnp.linalg.pinv(model.B)
    BpB = Bp @ model.B
    P = jnp.eye(M, dtype=BpB.dtype) - ALPHA * BpB
    z = x[1:] @ Bp.T  # T forced states near the data

    def before(m, z):
        J = jax.vmap(m.jacobian)(z)
        return J - ALPHA * (J @ BpB)

    fns = {
        "full_before": before,
        "full_after": lambda m, z: jax.vmap(lambda v: m.jacobian_product(v, P))(z),
        "diag_before": lambda m, z: jnp.diagonal(before(m, z), axis1=-2, axis2=-1),
        "diag_after": lambda m, z: jax.vmap(lambda v: m.jacobian_product_diagonal(v, P))(z),
    }
    times, mem = _time_group(fns, (model, z), repeats, budget_s)
    return _record("jacobian", times, mem, M, T)


def _scan_group(M, T, repeats, budget_s):
    rng = np.random.default_rng(0)
    A = jnp.asarray(0.9 * np.eye(M) + 0.05 * rng.normal(size=(T, M, M)) / np.sqrt(M), jnp.float32)
    b = jnp.asarray(rng.normal(size=(T, M)), jnp.float32)
    z0 = jnp.zeros((M,), jnp.float32)
    fns = {
        "forward_before": lambda A, b: B._associative(A, b, z0, True),
        "reverse_before": lambda A, b: B._reverse(A, b, z0, True, "associative"),
    }
    for combine in ("matmul", "unrolled"):
        fns[f"forward_after_{combine}"] = lambda A, b, c=combine: associative_forward(A, b, True, c)
        fns[f"reverse_after_{combine}"] = lambda A, b, c=combine: associative_reverse(A, b, True, c)
    times, mem = _time_group(fns, (A, b), repeats, budget_s)
    return _record("scan", times, mem, M, T)


GROUPS = ("step", "iteration", "jacobian", "scan")


def compare(*, M=(4, 16), T=32768, groups=GROUPS, repeats=7, budget_s=60.0, hidden_dim=50,
            train_steps=300, train_seq_len=512, out=None, verbose=True) -> dict:  # fmt: skip
    """Run the before/after groups for every M; returns (and with `out`, writes) the payload."""
    data = C.lorenz63(max(T + 1, 20_000))
    x = jnp.asarray(data[: T + 1])
    records, training = [], {}
    for m in M:
        model, info = C.trained_shplrnn(data, m, hidden_dim=hidden_dim, steps=train_steps,
                                        seq_len=min(train_seq_len, T), alpha=ALPHA)  # fmt: skip
        training[m] = info
        params, static = eqx.partition(model, eqx.is_inexact_array)
        for group in groups:
            if group == "step":
                recs = _step_group(params, static, x, m, T, repeats, budget_s)
            elif group == "iteration":
                recs = _iteration_group(params, static, x, m, T, repeats, budget_s)
            elif group == "jacobian":
                recs = _jacobian_group(model, x, m, T, repeats, budget_s)
            else:
                recs = _scan_group(m, T, repeats, budget_s)
            records += recs
            if verbose:
                print(f"M={m} {group}: " + "  ".join(
                    f"{r['case']}={C.fmt_s(r.get('median_s', r.get('per_iteration_s')))}"
                    for r in sorted(recs, key=lambda r: r["case"])), flush=True)  # fmt: skip
    payload = dict(benchmark="runtime_compare", environment=C.environment(),
                   settings=dict(M=list(M), T=T, groups=list(groups), repeats=repeats,
                                 alpha=ALPHA, hidden_dim=hidden_dim, budget_s=budget_s,
                                 before="benchmarks/_reference/deer.py (dsr commit 060a8c8)",
                                 training={str(k): v for k, v in training.items()}),
                   records=records)  # fmt: skip
    if out is not None:
        C.write_json(out, "runtime_compare", payload)
        plot(payload, out)
    return payload


def _get(payload, group, case, M, key="median_s"):
    for r in payload["records"]:
        if r["group"] == group and r["case"] == case and r["M"] == M:
            return r.get(key)
    return None


def _ratio(a, b):
    return "–" if a is None or b is None or not b else f"{a / b:.2f}×"


def ratios(payload: dict) -> dict:
    """The issue's before/after figures per M (None where not measured)."""
    out = {}
    for m in payload["settings"]["M"]:
        g = lambda *a, **k: _get(payload, *a, M=m, **k)  # noqa: E731
        it = {(p, j, v): g("iteration", f"{p}_{j}_{v}", key="per_iteration_s")
              for p in ("sequential", "associative") for j in ("full", "diag")
              for v in ("before", "after")}  # fmt: skip
        div = lambda a, b: None if a is None or b is None or not b else a / b  # noqa: E731
        out[m] = dict(
            associative_step_speedup=div(g("step", "associative_before"), g("step", "associative_after")),
            fused_step_speedup=div(g("step", "fused_before"), g("step", "fused_after")),
            quasi_step_speedup=div(g("step", "quasi_before"), g("step", "quasi_after")),
            quasi_over_full_iteration_fused=div(it["sequential", "diag", "after"],
                                                it["sequential", "full", "after"]),
            quasi_over_full_iteration_fused_before=div(it["sequential", "diag", "before"],
                                                       it["sequential", "full", "before"]),
            quasi_over_full_iteration_associative=div(it["associative", "diag", "after"],
                                                      it["associative", "full", "after"]),
            quasi_over_full_iteration_associative_before=div(
                it["associative", "diag", "before"], it["associative", "full", "before"]),
        )  # fmt: skip
    return out


def table(payload: dict) -> str:
    """Before/after per M: training-step times (and temporaries), the associative path's
    backward, per-iteration costs, Jacobians and the scan kernel."""
    rows = []
    for m in payload["settings"]["M"]:
        g = lambda *a, **k: _get(payload, *a, M=m, **k)  # noqa: E731
        mb = lambda c: g("step", c, key="temp_bytes")  # noqa: E731
        for label, b, a in (("fused step (auto on CPU)", "fused_before", "fused_after"),
                            ("associative step", "associative_before", "associative_after"),
                            ("quasi step (fused)", "quasi_before", "quasi_after")):  # fmt: skip
            tb, ta = g("step", b), g("step", a)
            it = f"{g('step', b, key='newton_iters')} / {g('step', a, key='newton_iters')}"
            mem = (f"{(mb(b) or 0) / 1e6:.1f} → {(mb(a) or 0) / 1e6:.1f} MB"
                   if mb(b) is not None else "–")  # fmt: skip
            rows.append([m, label, C.fmt_s(tb), C.fmt_s(ta), _ratio(tb, ta), it, mem])
        fb, fa = g("step", "associative_before_forward"), g("step", "associative_after_forward")
        sb, sa = g("step", "associative_before"), g("step", "associative_after")
        if None not in (fb, fa, sb, sa):
            rows.append([m, "associative backward (step − forward)", C.fmt_s(sb - fb),
                         C.fmt_s(sa - fa), _ratio(sb - fb, sa - fa), "", ""])  # fmt: skip
        for p in ("sequential", "associative"):
            for j in ("full", "diag"):
                b = g("iteration", f"{p}_{j}_before", key="per_iteration_s")
                a = g("iteration", f"{p}_{j}_after", key="per_iteration_s")
                name = f"{'quasi' if j == 'diag' else 'full'} iteration ({'fused' if p == 'sequential' else p})"
                rows.append([m, name, C.fmt_s(b), C.fmt_s(a), _ratio(b, a), "", ""])
        for j in ("full", "diag"):
            b, a = g("jacobian", f"{j}_before"), g("jacobian", f"{j}_after")
            rows.append([m, f"T Jacobians ({j})", C.fmt_s(b), C.fmt_s(a), _ratio(b, a), "", ""])
        for d in ("forward", "reverse"):
            b = g("scan", f"{d}_before")
            for c in ("matmul", "unrolled"):
                a = g("scan", f"{d}_after_{c}")
                rows.append([m, f"associative scan {d} ({c})", C.fmt_s(b), C.fmt_s(a),
                             _ratio(b, a), "", ""])  # fmt: skip
    rows = [r for r in rows if r[2] != "–" or r[3] != "–"]
    header = ["M", "case", "before", "after", "speedup", "Newton it. (before / after)",
              "temporaries"]
    return C.markdown_table(header, rows)


def plot(payload: dict, out) -> None:
    """Speedup (before / after) of every case, one bar group per M."""
    cases = [("step", "fused"), ("step", "associative"), ("step", "quasi")]
    fig, (ax,) = C.new_figure(1, width=6.0)
    Ms = payload["settings"]["M"]
    width = 0.8 / len(Ms)
    labels = [f"{c} step" for _, c in cases] + ["quasi it. (fused)", "J (full)", "J (diag)"]
    for i, m in enumerate(Ms):
        g = lambda *a, **k: _get(payload, *a, M=m, **k)  # noqa: E731
        vals = [(g(gr, f"{c}_before") or np.nan) / (g(gr, f"{c}_after") or np.nan)
                for gr, c in cases]  # fmt: skip
        vals.append((g("iteration", "sequential_diag_before", key="per_iteration_s") or np.nan)
                    / (g("iteration", "sequential_diag_after", key="per_iteration_s") or np.nan))
        vals += [(g("jacobian", f"{j}_before") or np.nan) / (g("jacobian", f"{j}_after") or np.nan)
                 for j in ("full", "diag")]  # fmt: skip
        ax.bar(np.arange(len(vals)) + i * width, vals, width, label=f"M = {m}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2)
    ax.set_xticklabels(labels, rotation=30, fontsize=7, ha="right")
    ax.set_ylabel("t_before / t_after")
    ax.set_yscale("log")
    env = payload["environment"]
    ax.set_title(f"solver before/after, T = {payload['settings']['T']} ({env['backend']})",
                 fontsize=9)  # fmt: skip
    ax.legend(fontsize=7)
    C.save_figure(fig, out, "runtime_compare")
