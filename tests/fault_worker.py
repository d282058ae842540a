"""The small checkpointing `fit` run of the reliability tests, and a worker process running
it for the fault tests (`test_reliability.py`), which kill it at random points and restart
it until it finishes.

Usage: `python fault_worker.py CHECKPOINT OUT.npz STEPS CACHE_DIR`. Resumes from CHECKPOINT
when it exists; prints `step <k>` after every update (before that update's checkpoint is
written); at the end writes the model's arrays and the loss history to OUT.npz and prints
`done`. After SIGTERM (the checkpoint saved) it exits with status 3. With
`FAULT_WORKER_WAIT=PATH` it waits after printing `step 2` until PATH exists.
"""

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import dsr

#: `fit` settings of the run (one compiled program for every test that uses them)
FIT_KW = dict(seq_len=16, batch_size=2, progress=False, monitor_every=0, solver="sequential",
              key=jax.random.key(1), learning_rate=1e-2)
ALPHA = 0.2


def data() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.cumsum(rng.normal(size=(300, 3)), axis=0) * 0.05


def make_model(latent_dim: int = 3) -> dsr.ShPLRNN:
    return dsr.ShPLRNN(3, latent_dim, 8, key=jax.random.key(0), dtype=jnp.float64)


def arrays(result) -> list[np.ndarray]:
    """The model's arrays and the loss history of a `FitResult`."""
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(result.model)] + [
        np.asarray(result.history["loss"])]


def _progress(step, model):
    print(f"step {step}", flush=True)
    go = os.environ.get("FAULT_WORKER_WAIT")  # a test's cue: wait at step 2 until it exists
    if go and step == 2:
        deadline = time.monotonic() + 300
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)


def make_sweep() -> dsr.Sweep:
    """A sweep of 4 settings (α × L, sizes padded) × 2 seeds: 8 members in one program."""
    return dsr.sweep(lambda key, hidden_dim: dsr.ShPLRNN(3, 3, hidden_dim, key=key,
                                                         dtype=jnp.float64),
                     dsr.Grid(alpha=(0.1, 0.3), hidden_dim=(4, 8)), runs=2,
                     key=jax.random.key(0))


def validation_data() -> np.ndarray:
    """Held-out data for the sweep's validation (D_H needs ≥ 320 steps)."""
    rng = np.random.default_rng(1)
    return np.cumsum(rng.normal(size=(400, 3)), axis=0) * 0.05


#: the sweep's extra `fit` settings (a validation after every update, as the callback)
SWEEP_KW = dict(validation=validation_data(), keep="best", eval_every=1)


def main(ckpt: str, out: str, steps: int) -> None:
    sweeping = bool(os.environ.get("FAULT_WORKER_SWEEP"))
    model, extra = (make_sweep(), SWEEP_KW) if sweeping else (make_model(), dict(eval_every=1))
    kw = dict(FIT_KW, **extra)
    res = dsr.fit(model, data(), ALPHA, steps=steps, checkpoint=ckpt,
                  checkpoint_every=1, resume=ckpt if os.path.exists(ckpt) else None,
                  callback=_progress, **kw)
    np.savez(out, *arrays(res))
    print("done", flush=True)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    # compiled programs are shared by all the (killed and restarted) workers of a test
    jax.config.update("jax_compilation_cache_dir", sys.argv[4])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
