"""A reader with a fresh shell follows the home page alone to a trained model (slow).

The home page's "Install" shell block and its "A first model" Python block run exactly as
written, in order, in a copy of the repository (its tracked and untracked, not ignored
files) and a shell with no environment active: a new `.venv`, `pip install -e .`, then the
Python block with that environment's `python`. The machine's pip settings (`PIP_*`, proxies)
are kept, as a reader's would be. The README shows the same lines (checked here too)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import _markdown as md

pytestmark = pytest.mark.slow

HOME = md.ROOT / "docs" / "index.md"


def _home_blocks() -> tuple[md.Block, md.Block]:
    """The shell block of the home page's "Install" section and the Python block of its
    "A first model" section."""
    install_text, first_text = md.section(HOME, "Install"), md.section(HOME, "A first model")
    blocks = md.blocks(HOME)
    (install,) = [b for b in blocks if b.lang in md.SHELL and b.code in install_text]
    (first,) = [b for b in blocks if b.lang == "python" and b.code in first_text]
    return install, first


def _fresh_env() -> dict:
    """The environment of a new login shell: no venv active, no PYTHONPATH, the venv's bin
    folder off the PATH."""
    env = {k: v for k, v in os.environ.items()
           if k in ("HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "PATH")
           or k.startswith("PIP_") or k.lower().endswith("_proxy")}
    venv = os.environ.get("VIRTUAL_ENV")
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if not (venv and p.startswith(venv)) and "/.venv/" not in p + "/"]
    env["PATH"] = os.pathsep.join(path)
    env["MPLBACKEND"] = "Agg"
    return env


def test_readme_shows_the_home_page_lines():
    readme = md.blocks(md.ROOT / "README.md")
    install, first = _home_blocks()
    assert any(b.code == install.code for b in readme), "README's install block differs"
    assert any(b.code == first.code for b in readme), "README's first-model block differs"


def test_fresh_shell_follows_the_home_page_to_a_trained_model(tmp_path):
    install, first = _home_blocks()
    assert "pip install" in install.code and "dsr.fit(" in first.code
    assert first.code.count("\n") < 15, "the home page's example is longer than 15 lines"
    repo = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=md.ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = md.ROOT / f
        if src.is_file():
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / f)
    (repo / "first_model.py").write_text(first.code + "\n")
    script = f"set -e\n{install.code}\npython first_model.py\n"
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=repo,
                          env=_fresh_env(), capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    d_stsp, d_h, lam = (float(v) for v in proc.stdout.strip().splitlines()[-1].split())
    assert (repo / "l63.eqx").is_file()
    # A trained model: it reconstructs the attractor (untrained: D_stsp ≈ 17, λ_max < 0).
    assert d_stsp < 0.1 and d_h < 0.2 and 0.5 < lam < 1.3, (d_stsp, d_h, lam)
