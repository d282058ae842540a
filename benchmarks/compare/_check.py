"""`--check-systems`: only the data-set step (no training) for each system, each in its own
process under a time limit, one line per system and `OUT/check_systems.json`: which dysts
flows this comparison supports, how each data set is made, and why the others fail.

`python -m benchmarks.compare._check NAME N_TRAIN N_TEST TRANSIENT PTS SEED NUMPY_RHS` is the
per-system child: it prints one JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from .._json import write_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 300  # per system; a stiff system the fallback integrates slowly runs into it


def check_one(name, n_train, n_test, transient, pts, seed, numpy_rhs) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    from ._run import SPREAD_WARN, spread
    from ._systems import L96, NotSupported, System, make_data

    r = dict(system=name)
    t0 = time.perf_counter()
    try:
        s = System(name, pts, numpy_rhs)
        d = make_data(s, n_train, n_test, transient, 0.0, seed)
    except KeyError:
        return dict(r, status="unknown", why="not a dysts system")
    except NotSupported as e:
        return dict(r, status="refused", why=str(e))
    except Exception as e:
        return dict(r, status="failed", why=f"{type(e).__name__}: {e}".splitlines()[0][:400],
                    data_s=time.perf_counter() - t0)
    far = spread(d)
    return dict(r, status="ok" if far <= SPREAD_WARN else "ok, but far",
                data_s=round(time.perf_counter() - t0, 1), max_abs_std=round(far, 3),
                **{k: v for k, v in s.info().items() if k != "source"},
                source=s.kind if name == L96 else "dysts")


def check_systems_run(names, s: dict, out: str, log=print) -> list[dict]:
    """Each system in a child process (so a slow one is stopped at `TIMEOUT_S`)."""
    os.makedirs(out, exist_ok=True)
    rows = []
    for i, n in enumerate(names):
        args = [str(a) for a in (n, s["n_train"], s["n_test"], s["transient"],
                                 s["pts_per_period"], s["seed"], int(s.get("numpy_rhs", 0)))]
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-m", "benchmarks.compare._check", *args],
                               capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
            line = (p.stdout.strip().splitlines() or [""])[-1]
            r = json.loads(line) if line.startswith("{") else dict(
                system=n, status="failed", why=(p.stderr.strip().splitlines() or ["?"])[-1])
        except subprocess.TimeoutExpired:
            r = dict(system=n, status="timeout", why=f"data set not made in {TIMEOUT_S} s")
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        rows.append(r)
        how = r.get("integrator") or r.get("why", "")
        extra = f"; {r['fallback_reason']}" if r.get("fallback_reason") else ""
        if r.get("ic_shrink") not in (None, 1.0):
            extra += f"; initial perturbation ×{r['ic_shrink']:g} (larger ones blow up)"
        far = f"; test/floor reach {r['max_abs_std']:.3g} train stds" \
            if r["status"] == "ok, but far" else ""
        log(f"[{i + 1}/{len(names)}] {n}: {r['status']} ({r['wall_s']:.0f} s): {how}{extra}{far}")
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    write_json(os.path.join(out, "check_systems.json"),
               dict(settings=s, timeout_s=TIMEOUT_S, counts=counts, systems=rows), default=str)
    log(f"{len(rows)} systems: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + f"; wrote {out}/check_systems.json")
    return rows


if __name__ == "__main__":
    n, a, b, c, p, seed, nr = sys.argv[1:8]
    print(json.dumps(check_one(n, int(a), int(b), int(c), int(p), int(seed), bool(int(nr))),
                     default=str))
