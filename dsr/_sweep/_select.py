"""The selection of a sweep: every member's validation score, the median over each setting's
seeds, and the best setting's members as the result."""

from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np

from .._ensemble import Ensemble
from ._build import Sweep

STATUS_NAMES = ("ok", "off", "collapsed", "diverged")
#: How a sweep's result is chosen (recorded in `FitResult.sweep.rule` and the settings).
RULE = ("per setting, the median over its seeds of each member's validation score (the "
        "score of the parameters kept: the best validation step with keep='best', the last "
        "with keep='last'); the setting with the lowest median wins (ties: the first)")


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep found ([`dsr.FitResult`][]`.sweep`).

    **Attributes:**

    - `keys`: the swept settings; `settings`: every setting (`{key: value}`), in grid order;
      `runs`: seeds per setting.
    - `rows`: one dict per member — `member`, `setting` (index), `seed`, the swept values
      under their keys, then `score` (the validation score the selection used), `D_stsp`,
      `D_H` and `status` of the validation run of the kept parameters, and `step` (that
      validation's update; -1 if none).
    - `setting_scores`: per setting, the median of its members' scores; `selected`: the
      chosen setting's index; `selected_members`: its members' indices (the members of
      `FitResult.model`); `rule`: how it was chosen.
    - `models`: every trained member (an `Ensemble`, padded to the largest size);
      `member(i)` gives member `i` at its own size.
    """

    keys: tuple
    settings: list
    runs: int
    rows: list
    setting_scores: np.ndarray
    selected: int
    selected_members: tuple
    rule: str
    models: Ensemble
    sweep: Sweep = dataclasses.field(repr=False)

    @property
    def setting(self) -> dict:
        """The selected setting."""
        return self.settings[self.selected]

    def member(self, i: int):
        """Trained member `i` at its own size."""
        return self.sweep.member(i, self.models.stacked)

    def to_csv(self) -> str:
        """The rows as CSV text: `member, setting, seed`, one column per swept key, then
        `score, D_stsp, D_H, status, step, selected`."""
        out = io.StringIO()
        fields = ["member", "setting", "seed", *self.keys, "score", "D_stsp", "D_H", "status",
                  "step", "selected"]
        w = csv.DictWriter(out, fields, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow(dict(r, selected=int(r["setting"] == self.selected)))
        return out.getvalue()


def _kept_index(steps: np.ndarray, at: int) -> int:
    """The validation record of update `at` (the last one for `at` < 0)."""
    hits = np.flatnonzero(steps == at)
    return int(hits[0]) if hits.size else len(steps) - 1


def select(sweep: Sweep, validation: dict, trained: Ensemble) -> tuple[SweepResult, Ensemble]:
    """`(SweepResult, the selected setting's members as an Ensemble at their own size)` from
    `fit`'s validation record (`FitResult.validation`, arrays `(K, E)`)."""
    steps = np.asarray(validation["step"])
    score_hist = np.asarray(validation.get("score", validation["D_stsp"]), np.float64)
    status_hist = validation.get("status")
    keep_best = validation.get("keep") == "best"
    rows, scores = [], []
    for i in range(sweep.n_members):
        at = int(validation["best_step"][i]) if keep_best else -1
        j = _kept_index(steps, at) if steps.size else None
        score = float(validation["best_score"][i]) if keep_best else (
            float(score_hist[i, j]) if j is not None else float("inf"))
        status = ("" if j is None or status_hist is None
                  else STATUS_NAMES[int(np.asarray(status_hist)[i, j])])
        g, seed = divmod(i, sweep.runs)
        rows.append(dict(member=i, setting=g, seed=seed, **sweep.setting(i), score=score,
                         D_stsp=float("nan") if j is None else float(validation["D_stsp"][i, j]),
                         D_H=float("nan") if j is None else float(validation["D_H"][i, j]),
                         status=status, step=-1 if j is None else int(steps[j])))
        scores.append(score)
    per_setting = np.asarray(scores).reshape(len(sweep.grid), sweep.runs)
    medians = np.array([np.median(s) for s in per_setting])
    finite = np.where(np.isnan(medians), np.inf, medians)
    best = int(np.argmin(finite))
    chosen = tuple(range(best * sweep.runs, (best + 1) * sweep.runs))
    result = SweepResult(sweep.grid.keys, sweep.grid.settings, sweep.runs, rows, medians, best,
                         chosen, RULE, trained, sweep)
    model = Ensemble.from_members([sweep.member(i, trained.stacked) for i in chosen])
    return result, model
