"""What a `fit` session records in `config.json` and prints at its end."""

from __future__ import annotations

import numpy as np


def fit_record(res, wall: float, start_step: int) -> dict:
    h = res.history
    loss = np.atleast_2d(h["loss"])
    tail = max(1, loss.shape[1] // 10)
    return {"status": "interrupted" if res.interrupted else "done",
            "steps_done": int(loss.shape[1]), "started_at_step": start_step,
            "wall_s": wall, "final_loss": np.nanmean(loss[:, -tail:], axis=1).tolist(),
            "alpha": np.atleast_1d(res.alpha).tolist(),
            "stopped": np.atleast_1d(res.stopped).tolist(),
            "free_run": res.free_run if isinstance(res.free_run, list) else [res.free_run],
            "validation": _validation_record(res.validation), "settings": res.settings}


def _validation_record(v) -> dict | None:
    """`FitResult.validation` as JSON: per member (rows) and validation step (columns)."""
    if v is None:
        return None
    rows = lambda a: np.atleast_2d(a).tolist()  # noqa: E731
    return {"step": np.asarray(v["step"]).tolist(), "D_stsp": rows(v["D_stsp"]),
            "D_H": rows(v["D_H"]), "best_step": np.atleast_1d(v["best_step"]).tolist(),
            "best_score": np.atleast_1d(v["best_score"]).tolist(), "keep": v["keep"],
            "seconds": v["seconds"]}


def print_fit(run, rec: dict, done_before: int) -> None:
    new = rec["steps_done"] - done_before
    loss = ", ".join(f"{v:.4g}" for v in rec["final_loss"])
    print(f"training: {new} updates in {rec['wall_s']:.1f} s (now {rec['steps_done']}); "
          f"final loss {loss}")
    bad = [f"member {i}: {fr.get('status')} (after {fr.get('after_updates')} updates)"
           for i, fr in enumerate(rec["free_run"]) if fr and fr.get("status") != "ok"]
    if bad:
        print("free-run check: " + "; ".join(bad))
    val = rec.get("validation")
    if val:
        best = ", ".join(f"{s:.4g} at {b}" for s, b in zip(val["best_score"], val["best_step"]))
        print(f"validation: best D_stsp (binning) {best} (keep {val['keep']}; "
              f"{val['seconds']:.1f} s)")
    sw = rec.get("sweep")
    if sw:
        setting = " ".join(f"{k}={v:g}" for k, v in sw["setting"].items())
        print(f"sweep: selected {setting} (setting {sw['selected']}, members "
              f"{sw['members']}; median validation score "
              f"{sw['setting_scores'][sw['selected']]:.4g}); every member in {sw['csv']}, "
              f"{sw['picture']}")
    print(f"saved: {run.model}, {run.checkpoint}, {run.history}, {run.config}")
