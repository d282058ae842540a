"""`dsr._lock`: one writer per file; a held lock is reported with its holder, a stale one taken over."""
import os, subprocess, sys, json, pytest
from dsr import _lock
def test_a_held_lock_is_refused_and_a_stale_one_taken_over(tmp_path):
    p = tmp_path / "ck.eqx"
    with _lock.exclusive(p):
        with pytest.raises(_lock.LockedError, match="in use by process"):
            _lock.acquire(p)
    assert not os.path.exists(str(p) + ".lock")
    # stale: dead pid
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    import socket
    (tmp_path / "ck.eqx.lock").write_text(json.dumps({"pid": int(dead), "host": socket.gethostname(), "started": 1.0, "token": "x"}))
    me = _lock.acquire(p); _lock.release(p, me)
    (tmp_path / "ck.eqx.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere", "token": "x"}))
    with pytest.raises(_lock.LockedError, match="elsewhere"):
        _lock.acquire(p)
