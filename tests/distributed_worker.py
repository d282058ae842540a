"""One process of a two-process `jax.distributed` run on this machine (CPU), for
`test_file_safety.py`: an ensemble of K = 3 members sharded over the two processes' devices
(padded to 4), checkpointing every EVERY updates, stopped by Ctrl-C (a callback raising
`KeyboardInterrupt` on every process) at step STOP of STEPS. Every file write, history append
and lock of the process is logged, so the test can check that only process 0 wrote.

Usage: `python distributed_worker.py PROCESS_ID PORT CHECKPOINT OUT.npz LOG.json` (with
`XLA_FLAGS=--xla_force_host_platform_device_count=1 JAX_PLATFORMS=cpu`).

`run` is also the one-process reference (imported by the test).
"""

import json
import os
import sys

import numpy as np

K, STEPS, EVERY, STOP = 3, 8, 2, 4


def data() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.cumsum(rng.normal(size=(300, 3)), axis=0) * 0.05


def _stop(step, model):
    if step == STOP:
        raise KeyboardInterrupt


def run(checkpoint, steps=STEPS, resume=None, stop=False):
    """The ensemble fit (`devices="all"`: sharded when there are several devices)."""
    import warnings

    import jax
    import jax.numpy as jnp

    import dsr

    ens = dsr.ensemble(lambda k: dsr.ShPLRNN(3, 3, 8, key=k, dtype=jnp.float64), K,
                       key=jax.random.key(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fit interrupted after ..."
        return dsr.fit(ens, data(), 0.2, steps=steps, seq_len=16, batch_size=2,
                       progress=False, monitor_every=0, solver="sequential",
                       key=jax.random.key(2), learning_rate=1e-2, devices="all",
                       checkpoint=checkpoint, checkpoint_every=EVERY, resume=resume,
                       callback=_stop if stop else None, eval_every=1 if stop else None)


def leaves(result) -> list:
    import jax

    return [np.asarray(x) for x in jax.tree_util.tree_leaves(result.model)]


def _instrument(writes: list, locks: list) -> None:
    """Log every atomic write, history append and lock taken by this process."""
    from dsr._training import _history
    from dsr import _io, _lock

    atomic_write, flush, acquire = _io.atomic_write, _history.History.flush, _lock.acquire

    def logged_write(path, write):
        writes.append(("container", os.fspath(path)))
        return atomic_write(path, write)

    def logged_flush(self, path):
        writes.append(("history", os.fspath(path)))
        return flush(self, path)

    def logged_acquire(path):
        locks.append(os.fspath(path))
        return acquire(path)

    _io.atomic_write, _history.History.flush, _lock.acquire = (logged_write, logged_flush,
                                                               logged_acquire)


def main(process_id: int, port: int, checkpoint: str, out: str, log: str) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                               process_id=process_id)
    writes, locks = [], []
    _instrument(writes, locks)
    res = run(checkpoint, stop=True)
    assert res.interrupted
    np.savez(out, loss=np.asarray(res.history["loss"]),
             **{f"leaf{i}": x for i, x in enumerate(leaves(res))})
    with open(log, "w") as f:
        json.dump(dict(process_count=jax.process_count(), devices=len(jax.devices()),
                       writes=writes, locks=locks), f)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
