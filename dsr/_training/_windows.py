"""Training windows drawn on the device: a batch of `B` windows of `T + 1` observations.

All series are concatenated into one device array; a window never crosses a series
boundary. The windows of update `step` of a member with key `k` come from
`jax.random.fold_in(k, step)`, so they depend on nothing but the member's key and the step:
a member trained inside an ensemble sees exactly the windows it sees when trained alone.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray


class Windows(eqx.Module):
    """The training data and where windows of `length` steps may start.

    - `data`: `(total, N)`, the series one after another; `inputs`: `(total, K)` or None.
    - `starts`: index of each series' first step in `data`; `counts`: cumulative number of
      window starts of the series before it (so window `i` is in series
      `searchsorted(counts, i)`).
    """

    data: Float[Array, "total N"]
    inputs: Float[Array, "total K"] | None
    starts: Int[Array, " S"]
    counts: Int[Array, " S+1"]
    length: int = eqx.field(static=True)

    @staticmethod
    def from_series(series: list[np.ndarray], inputs: list[np.ndarray] | None,
                    length: int) -> Windows:
        """Concatenate host arrays (each at least `length` long) into one `Windows`."""
        lens = np.array([len(s) for s in series])
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        counts = np.concatenate([[0], np.cumsum(lens - length + 1)])
        data = np.concatenate(series, axis=0)
        inp = None if inputs is None else np.concatenate(inputs, axis=0)
        return Windows(data, inp, starts.astype(np.int32), counts.astype(np.int32), length)

    def sample(self, key: PRNGKeyArray, step, batch_size: int):
        """`(x, s)`: windows `(B, T+1, N)` and their inputs (or None) for update `step`."""
        idx = jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0,
                                 self.counts[-1])
        which = jnp.searchsorted(self.counts[1:], idx, side="right")
        first = self.starts[which] + idx - self.counts[which]
        rows = first[:, None] + jnp.arange(self.length)
        x = jnp.take(self.data, rows, axis=0)
        s = None if self.inputs is None else jnp.take(self.inputs, rows, axis=0)
        return x, s
