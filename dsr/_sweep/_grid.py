"""`dsr.Grid`: the training settings a sweep tries, the product of one list per setting."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from .._checks import ArgumentTypeError, check_int, check_real

#: The settings one vmapped program can vary per member, and how each value is checked.
#: `alpha` is the constant α, or the start `alpha0` when `fit`'s alpha is adaptive (aGTF);
#: `hidden_dim` / `latent_dim` pad every member to the largest size, with masks.
SWEEPABLE = ("alpha", "learning_rate", "noise", "lambda_mar", "lambda_l1", "lambda_l2",
             "hidden_dim", "latent_dim")
#: The model-size settings (`make_model(key, **sizes)` builds each member).
SIZES = ("hidden_dim", "latent_dim")
#: The regularization weights (need `fit`'s `regularization=`, whose other λ stay as given).
LAMBDAS = ("lambda_mar", "lambda_l1", "lambda_l2")


def _check_value(key: str, value):
    if key in SIZES:
        return check_int(f"Grid {key}", value, 1)
    if key == "alpha":
        return check_real("Grid alpha", value, 0.0, 1.0)
    if key == "learning_rate":
        return check_real("Grid learning_rate", value, 0.0, lo_open=True)
    return check_real(f"Grid {key}", value, 0.0)


class Grid:
    """The settings of a sweep: every combination of the given values (their product, the
    last key varying fastest), each trained with `runs` seeds by [`dsr.sweep`][] and
    [`dsr.fit`][] in one program.

    **Arguments:** keyword lists, one per swept setting: `alpha` (the constant forcing
    strength, or the aGTF start α₀ when `fit`'s `alpha` is adaptive), `learning_rate`,
    `noise` (teacher-signal noise σ), `lambda_mar`, `lambda_l1`, `lambda_l2` (weights of
    `fit`'s `regularization`), `hidden_dim` (L), `latent_dim` (M). A single number counts
    as a list of one.

    Example:
    ```python
    grid = dsr.Grid(alpha=(0.05, 0.1, 0.2), learning_rate=(1e-3, 3e-3))   # 6 settings
    grid.settings[1]   # {'alpha': 0.05, 'learning_rate': 0.003}
    ```
    """

    def __init__(self, **values):
        if not values:
            raise ValueError(f"`Grid` needs at least one setting; sweepable: "
                             f"{', '.join(SWEEPABLE)}.")
        self._values: dict[str, tuple] = {}
        for key, vals in values.items():
            if key not in SWEEPABLE:
                raise ArgumentTypeError(f"`Grid`: {key!r} cannot be swept in one program; "
                                        f"sweepable: {', '.join(SWEEPABLE)}.")
            vals = tuple(vals) if isinstance(vals, (list, tuple)) else (vals,)
            if not vals:
                raise ValueError(f"`Grid` {key}: give at least one value.")
            checked = tuple(_check_value(key, v) for v in vals)
            if len(set(checked)) != len(checked):
                raise ValueError(f"`Grid` {key}: a value is repeated in {list(checked)}.")
            self._values[key] = checked

    @property
    def keys(self) -> tuple[str, ...]:
        """The swept settings, in the order given."""
        return tuple(self._values)

    @property
    def values(self) -> dict[str, tuple]:
        """`{key: values}`."""
        return dict(self._values)

    @property
    def settings(self) -> list[dict]:
        """Every combination, as `{key: value}` (the last key varies fastest)."""
        return [dict(zip(self.keys, combo)) for combo in itertools.product(*self._values.values())]

    @property
    def sizes(self) -> tuple[str, ...]:
        """The swept model sizes (`hidden_dim`, `latent_dim`), if any."""
        return tuple(k for k in self.keys if k in SIZES)

    def __len__(self) -> int:
        n = 1
        for vals in self._values.values():
            n *= len(vals)
        return n

    def __iter__(self) -> Iterator[dict]:
        return iter(self.settings)

    def __eq__(self, other) -> bool:
        return isinstance(other, Grid) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Grid({inner})"

    def to_config(self) -> dict:
        """The grid as JSON: `{key: [values]}`."""
        return {k: list(v) for k, v in self._values.items()}
