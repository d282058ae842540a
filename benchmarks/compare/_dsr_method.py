"""dsr: an ensemble of K shPLRNNs, clipped shPLRNNs or AL-RNNs trained by GTF-DEER in one
vmapped `dsr.fit`, checkpointed so that an interrupted run resumes mid-training.

No tuning budget is spent on dsr (each extra setting costs a full ensemble fit on this CPU):
α = 0.1, T = 64, batch 16, learning rate 2e-3, the library's DEER solver; the shPLRNNs with
M = N latent and L = 64 hidden units, the AL-RNN with M = max(20, N) latent units of which
the last P = 6 are rectified (its setting on the paper's Lorenz-63 set,
`tests/test_models.py`); the validation split is not used.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp

import dsr

from ._member import Member

SETTINGS = dict(alpha=0.1, hidden=64, seq_len=64, batch_size=16, learning_rate=2e-3)
ALRNN_SIZES = dict(latent=20, relu_units=6)

#: The comparison's dsr methods: name → the model of one member, from N and a key.
MODELS = {
    "shPLRNN": lambda N, key: dsr.ShPLRNN(N, N, SETTINGS["hidden"], key=key),
    "clipped_shPLRNN": lambda N, key: dsr.ClippedShPLRNN(N, N, SETTINGS["hidden"], key=key),
    "ALRNN": lambda N, key: dsr.ALRNN(N, max(ALRNN_SIZES["latent"], N),
                                      ALRNN_SIZES["relu_units"], key=key),
}


def as_member(m, train_s: float, info: dict) -> Member:
    """One fitted dsr model as the comparison's `Member` (warm start, map, read-out)."""
    return Member(warm=lambda ctx: dsr.warm_start(m, ctx), step=m.step, observe=m.observe,
                  train_s=train_s, info=info)


def dsr_members(data, k: int, settings: dict, method: str, checkpoint: str, seed: int):
    N = data["train"].shape[1]
    ens = dsr.ensemble(lambda key: MODELS[method](N, key), k, key=jax.random.key(seed))
    t0 = time.perf_counter()
    resume = checkpoint if os.path.exists(checkpoint) else None
    wall_file = checkpoint + ".wall_s"  # training time of earlier, interrupted sessions
    before = float(open(wall_file).read()) if resume and os.path.exists(wall_file) else 0.0
    res = dsr.fit(ens, data["train"], alpha=SETTINGS["alpha"], steps=settings["steps"],
                  seq_len=SETTINGS["seq_len"], batch_size=SETTINGS["batch_size"],
                  learning_rate=SETTINGS["learning_rate"], solver=dsr.DEER(),
                  key=jax.random.key(seed + 1), progress=False, checkpoint=checkpoint,
                  resume=resume)
    wall = before + time.perf_counter() - t0
    with open(wall_file, "w") as f:
        f.write(repr(wall))
    if res.interrupted:  # Ctrl-C / SIGTERM: the checkpoint is saved; stop, do not score it
        raise KeyboardInterrupt(f"dsr.fit interrupted; rerun to resume from {checkpoint}")
    stopped = [bool(v) for v in jnp.atleast_1d(jnp.asarray(res.stopped))]
    members = []
    for i in range(k):
        m = res.model[i]
        members.append(Member(warm=lambda ctx, m=m: dsr.warm_start(m, ctx),
                              step=lambda z, m=m: m.step(z), observe=lambda z, m=m: m.observe(z),
                              train_s=wall / k,
                              info=dict(SETTINGS, steps=settings["steps"], member=i,
                                        model=type(m).__name__,
                                        resumed=resume is not None, frozen=stopped[i],
                                        ensemble_wall_s=wall)))
    return members
