"""Progress bars for the long steps of the measures (tqdm): each says what it computes."""

from __future__ import annotations


class Progress:
    """A tqdm bar, or nothing when disabled; the description names the step running now.

    **Arguments:** `enabled`; `desc`: what is computed (e.g. `"D_stsp: exact kernel sums"`);
    `total`: units of work (may grow with `Progress.add_total`); `unit`.
    """

    def __init__(self, enabled: bool, desc: str, total: float = 0, unit: str = "it"):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=int(total), desc=desc, unit=unit, unit_scale=unit != "it",
                            leave=False, dynamic_ncols=True)

    def __enter__(self) -> Progress:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, k: float = 1) -> None:
        if self.bar is not None:
            self.bar.update(int(k))

    def add_total(self, k: float) -> None:
        if self.bar is not None:
            self.bar.total += int(k)
            self.bar.refresh()

    def stage(self, desc: str) -> None:
        """Rename the bar to the step that starts now."""
        if self.bar is not None:
            self.bar.set_description_str(desc)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def want_progress(progress: bool | None, expected_work: float, threshold: float = 3e9) -> bool:
    """`progress` if given, else whether `expected_work` (kernel evaluations) exceeds
    `threshold` — a few seconds on a small CPU."""
    return bool(expected_work > threshold) if progress is None else bool(progress)
