"""`python -m benchmarks.compare._probe_denoise --run DIR [--systems NAME ...] --out FILE`: how
much observation noise does `dsr.denoise` leave on the comparison's noisy rows, against the
best a Savitzky–Golay smoother could do?

For each system of comparison run `DIR` (its settings: lengths, seed; `--systems` to name
fewer), the noisy variant's training split is made as the run makes it, and with the same
seed its clean one (the same trajectory: the noise is drawn after it). Per channel, the root
mean square of noisy − clean (what the noise is), of `dsr.denoise`'s output − clean (what the
comparison's dsr trained on, `--dsr-denoise`), and of the best Savitzky–Golay fit by that
clean truth over polynomial orders 3, 5, 7, 9 and odd windows up to 101 (an oracle: no
smoother of this family can leave less). The clean series is used for scoring only. A table
is printed; the record is one JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from .._json import write_json

ORDERS = (3, 5, 7, 9)
MAX_WINDOW = 101


def _rms(a, b) -> np.ndarray:
    return np.sqrt(((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean(0))


def oracle(noisy: np.ndarray, clean: np.ndarray) -> list[dict]:
    """Per channel the Savitzky–Golay fit (order, window) closest to `clean`, and its RMS."""
    from scipy.signal import savgol_filter

    x = np.asarray(noisy, np.float64)
    best = [dict(rms=np.inf) for _ in range(x.shape[1])]
    for order in ORDERS:
        for w in range(order + 1 + order % 2, MAX_WINDOW + 1, 2):  # odd, > order
            e = _rms(savgol_filter(x, w, order, axis=0), clean)
            for j, ej in enumerate(e):
                if ej < best[j]["rms"]:
                    best[j] = dict(rms=float(ej), order=order, window=w)
    return best


def probe_system(name: str, s: dict) -> dict:
    import dsr

    from ._run import VARIANTS
    from ._systems import get_system, make_data

    system = get_system(name, s["pts_per_period"], s.get("numpy_rhs", False))
    make = lambda noise: make_data(system, s["n_train"], s["n_test"], s["transient"],  # noqa: E731
                                   noise, s["seed"])["train"]
    clean, noisy = make(0.0), make(VARIANTS["noisy"])
    d = dsr.denoise(noisy)
    return dict(system=name, noise_rms=_rms(noisy, clean).tolist(), window=d.window.tolist(),
                denoise_rms=_rms(d.x, clean).tolist(), oracle=oracle(noisy, clean))


def table(rows: list[dict]) -> str:
    lines = ["| system | noise (RMS per channel) | `dsr.denoise`: window, RMS left | best "
             "Savitzky–Golay by the clean truth: order/window, RMS left | left, × the best |",
             "|---|---|---|---|---|"]
    f = lambda v: ", ".join(f"{x:.3g}" for x in v)  # noqa: E731
    for r in rows:
        o = r["oracle"]
        ratio = [a / b["rms"] for a, b in zip(r["denoise_rms"], o)]
        lines.append(f"| {r['system']} | {f(r['noise_rms'])} | "
                     f"{', '.join(str(w) for w in r['window'])}; {f(r['denoise_rms'])} | "
                     f"{', '.join(str(b['order']) + '/' + str(b['window']) for b in o)}; "
                     f"{f([b['rms'] for b in o])} | {f(ratio)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare._probe_denoise",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="a comparison run folder (its settings)")
    p.add_argument("--systems", nargs="+", help="systems of the run (default: all)")
    p.add_argument("--out", required=True, help="the JSON record to write")
    a = p.parse_args(argv)
    path = os.path.join(a.run, "compare.json")
    if not os.path.isfile(path):
        raise SystemExit(f"_probe_denoise: --run {a.run}: no compare.json there (a "
                         f"comparison run's folder was expected)")
    with open(path) as f:
        s = json.load(f)["settings"]
    unknown = sorted(set(a.systems or ()) - set(s["systems"]))
    if unknown:
        raise SystemExit(f"_probe_denoise: --systems {' '.join(unknown)}: not in the run "
                         f"(it has {' '.join(s['systems'])})")
    rows = [probe_system(n, s) for n in (a.systems or s["systems"])]
    write_json(a.out, dict(run=a.run, rows=rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
