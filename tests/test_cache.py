"""JAX's persistent compilation cache as `fit` turns it on: the folder rules
(`DSR_CACHE_DIR`, off, the user's own setting) and a second process that finds the programs
the first one wrote. Each case runs in its own process (the setting is process-wide)."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, sys
import jax
import numpy as np
import dsr
from dsr._cache import compilation_cache_dir
if len(sys.argv) > 1:
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
x = np.cumsum(np.random.default_rng(0).normal(size=(200, 2)), axis=0) * 0.05
dsr.fit(dsr.ShPLRNN(2, 2, 4, key=jax.random.key(0)), x, 0.2, steps=2, seq_len=8,
        batch_size=2, progress=False, monitor_every=0, solver="sequential")
print(json.dumps({"dir": compilation_cache_dir(),
                  "min_s": jax.config.jax_persistent_cache_min_compile_time_secs}))
"""


def _run(env_value, *args, home=None):
    env = {k: v for k, v in os.environ.items() if k != "DSR_CACHE_DIR"}
    if env_value is not None:
        env["DSR_CACHE_DIR"] = env_value
    if home is not None:
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "xdg"))
    p = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _entries(folder):
    return sorted(f for f in os.listdir(folder) if not f.startswith("."))


def test_cache_folder_is_written_and_reused(tmp_path):
    folder = tmp_path / "cache"
    first = _run(str(folder))
    assert first["dir"] == str(folder) and first["min_s"] == 0.2
    written = _entries(folder)
    assert written, "fit wrote no compiled program to the cache"
    os.utime(folder)  # a second process finds them: it adds nothing new
    second = _run(str(folder))
    assert second["dir"] == str(folder)
    assert _entries(folder) == written


def test_default_folder_off_and_user_setting(tmp_path):
    assert _run(None, home=tmp_path)["dir"] == str(tmp_path / "xdg" / "dsr" / "jax")
    assert _entries(tmp_path / "xdg" / "dsr" / "jax")
    assert _run("off", home=tmp_path / "h2")["dir"] is None
    assert not (tmp_path / "h2").exists()
    own = tmp_path / "mine"
    got = _run(str(tmp_path / "ignored"), own)  # the user's jax setting wins
    assert got["dir"] == str(own) and got["min_s"] == 1.0
    assert not (tmp_path / "ignored").exists()
