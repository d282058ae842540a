"""The command line on users' own files, read as a busy user writes them: the CSV layouts
pandas writes by default (an index column, the labels `0,1,…` of an unnamed frame), time
and counter columns, test / context / further training files whose columns come in another
order, short wide recordings, one-row files, numbers beyond float ranges, and damaged or
inconsistent `.npy` / `.npz` headers.

Only two tests train (one run, the shapes of tests/test_cli.py: runs 2, L 8, T 16, batch 2,
4 steps) and evaluate it; every other case is read directly (`load_recordings`) or fails
in `main(argv)` before anything is compiled. The CSV texts are written literally in the
layout pandas writes (`df.to_csv(path)` / `df.to_csv(path, index=False)`: a float is
written as its `repr`), so pandas is not needed; `test_literal_texts_are_what_pandas_writes`
compares them with pandas where it is installed.
"""

import json
import shutil
import zipfile

import numpy as np
import pytest

from dsr._cli import main
from helpers import CLI_EVAL, CLI_FAST, cli_signal as _signal
from dsr._cli._data import Layout, Standardization, load_recordings, model_units

FAST = CLI_FAST
EVAL = CLI_EVAL + ["--no-plots"]


def _csv(path, header, rows, index=None):
    """`rows` as pandas writes them: `header` (a list, or None), an optional index column
    (its values `index`), every float as its repr."""
    lines = [] if header is None else [",".join(header)]
    for i, row in enumerate(rows):
        cells = [repr(float(v)) for v in row]
        lines.append(",".join(([str(index[i])] if index is not None else []) + cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def _json(path):
    with open(path) as f:
        return json.load(f)


def _read(path, **kw):
    return load_recordings([str(path)], role=kw.pop("role", "data"), quiet=True, **kw)[0]


def _fails(capsys, argv, *expected):
    """`main(argv)` stops with one `error:` line holding every `expected` text."""
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    return err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_input")
    train, test = _signal(400), _signal(400, phase=3.0)
    np.save(d / "train.npy", train)
    _csv(d / "train_index.csv", ["", "a", "b"], train, index=range(400))  # df.to_csv(path)
    _csv(d / "test_ab.csv", ["a", "b"], test)  # df.to_csv(path, index=False)
    _csv(d / "test_ba.csv", ["b", "a"], test[:, ::-1])
    return d


@pytest.fixture(scope="module")
def run(files):
    """One run trained on a pandas `to_csv()` file with its index column."""
    out = files / "run"
    assert main(["fit", str(files / "train_index.csv"), "--out", str(out), "--no-plots"]
                + FAST) == 0
    return out


# ------------------------------------------------------------------------------ layouts


def test_pandas_index_column_is_not_trained_on(run, files, capsys):
    cfg = _json(run / "config.json")
    assert cfg["data"]["names"] == ["a", "b"]
    assert cfg["data"]["files"][0]["left_out"] == {"": "an index column"}
    assert cfg["data"]["files"][0]["columns"] == ["a", "b"] and cfg["data"]["files"][0]["named"]
    assert cfg["model"]["hyperparameters"]["obs_dim"] == 2
    np.testing.assert_allclose(cfg["standardization"]["mean"],
                               np.load(files / "train.npy").mean(0), rtol=1e-12)
    out = capsys.readouterr().out  # a fresh fit prints what it left out and what it uses
    assert main(["fit", str(files / "train_index.csv"), "--out", str(files / "never"),
                 "--seq-len", "999"]) == 1
    out = capsys.readouterr().out
    assert "not variables, left out: '' (an index column)" in out


def test_reordered_test_csv_is_matched_by_name(run, files, capsys):
    metrics = []
    for name in ("test_ab.csv", "test_ba.csv"):
        assert main(["evaluate", str(run), "--test", str(files / name)] + EVAL) == 0
        m = _json(run / "metrics.json")
        metrics.append(m["members"])
    assert metrics[0] == metrics[1]
    assert "columns matched by name: the file's order ['b', 'a'] is read as ['a', 'b']" in \
        capsys.readouterr().out


@pytest.mark.parametrize("layout", ["unnamed", "unnamed_index", "unnamed_one_column"])
def test_pandas_labels_of_an_unnamed_frame_are_a_header(tmp_path, layout):
    x = _signal(40)
    if layout == "unnamed":  # pd.DataFrame(x).to_csv(path, index=False)
        path, names = _csv(tmp_path / "u.csv", ["0", "1"], x), ["0", "1"]
    elif layout == "unnamed_index":  # pd.DataFrame(x).to_csv(path)
        path, names = _csv(tmp_path / "u.csv", ["", "0", "1"], x, index=range(40)), ["0", "1"]
    else:  # pd.DataFrame(x[:, :1]).to_csv(path, index=False)
        x = x[:, :1]
        path, names = _csv(tmp_path / "u.csv", ["0"], x), ["0"]
    s = _read(path)
    assert s.names == names and s.named
    np.testing.assert_array_equal(s.x, x)  # the header is not the first time step


def test_integer_first_row_of_one_column_is_data(tmp_path):
    (tmp_path / "counts.csv").write_text("0\n3\n1\n4\n1\n5\n")
    s = _read(tmp_path / "counts.csv")
    assert not s.named and s.x[:, 0].tolist() == [0, 3, 1, 4, 1, 5]


@pytest.mark.parametrize("name", ["index", "Unnamed: 0", ""])
def test_leading_index_column_left_out_unless_named(tmp_path, name):
    x = _signal(40)
    # an index with gaps (rows dropped earlier): left out for its name, not as a counter
    path = _csv(tmp_path / "i.csv", [name, "a", "b"], x, index=range(0, 80, 2))
    s = _read(path)
    assert s.names == ["a", "b"] and s.info["left_out"] == {name: "an index column"}
    np.testing.assert_array_equal(s.x, x)
    if name:
        assert _read(path, columns=[name, "a"]).names == [name, "a"]


def test_counter_column_left_out_unless_named(tmp_path):
    x = _signal(40)
    path = _csv(tmp_path / "c.csv", ["sample", "a", "b"], np.c_[np.arange(7, 47), x])
    s = _read(path)
    assert s.names == ["a", "b"] and "sample" in s.info["left_out"]
    assert _read(path, columns=["sample", "b"]).names == ["sample", "b"]
    np.save(tmp_path / "c.npy", np.c_[x[:, 0], np.arange(40), x[:, 1]])  # also without names
    np.testing.assert_array_equal(_read(tmp_path / "c.npy").x, x)


def test_uniform_time_column_is_the_time_axis(tmp_path, capsys):
    x = _signal(40)
    t = 0.004 * np.arange(40)
    s = load_recordings([str(_csv(tmp_path / "t.csv", ["time", "a", "b"], np.c_[t, x]))],
                        role="data")[0]
    assert s.names == ["a", "b"] and s.dt == pytest.approx(0.004) and s.time == "time"
    assert "column 'time' is the time axis (not a variable): step 0.004" in \
        capsys.readouterr().out
    np.testing.assert_array_equal(s.x, x)
    path = _csv(tmp_path / "t2.csv", ["t", "a"], np.c_[t, x[:, :1]])
    assert _read(path).dt == pytest.approx(0.004)
    assert _read(path, columns=["t", "a"]).names == ["t", "a"]  # named: a variable


def test_irregular_time_column_is_an_error_naming_it(tmp_path, capsys):
    t = 0.01 * np.arange(400)
    t[150:] += 0.01  # one sample missing
    path = _csv(tmp_path / "gap.csv", ["time", "a", "b"], np.c_[t, _signal(400)])
    _fails(capsys, ["fit", str(path), "--out", str(tmp_path / "r")] + FAST,
           "gap.csv: column 'time' (the time axis) is not uniformly sampled",
           "first irregular step: 0.02 at line 152", "--dt")
    assert _read(path, dt=0.01).dt == 0.01  # a given step: the column is only not used
    assert not (tmp_path / "r").exists()


def test_time_column_must_agree_with_dt(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", ["time", "a", "b"], np.c_[0.01 * np.arange(400),
                                                             _signal(400)])
    _fails(capsys, ["fit", str(path), "--dt", "0.02", "--out", str(tmp_path / "r")] + FAST,
           "t.csv: column 'time' (the time axis) steps by 0.01; expected 0.02 (--dt)")


# ------------------------------------------------------------------------------ matching


def test_test_file_with_other_names_is_an_error_naming_both(run, files, capsys):
    _csv(files / "test_ac.csv", ["a", "c"], _signal(100))
    _fails(capsys, ["evaluate", str(run), "--test", str(files / "test_ac.csv")] + EVAL,
           "test_ac.csv: has the columns ['a', 'c']; the training data has ['a', 'b']",
           "missing ['b']", "extra ['c']", "matched by column name")


def test_test_file_with_an_extra_index_and_time_column_matches(run, files):
    x = _signal(100)
    path = _csv(files / "test_idx.csv", ["", "b", "a"], x[:, ::-1], index=range(100))
    s = _read(path, role="test", like=Layout.of_run(_json(run / "config.json")))
    np.testing.assert_array_equal(s.x, x)


def test_further_training_files_are_matched_by_name(tmp_path, capsys):
    x, y = _signal(60), _signal(60, 1.0)
    a = _csv(tmp_path / "a.csv", ["a", "b"], x)
    b = _csv(tmp_path / "b.csv", ["b", "a"], y[:, ::-1])
    s = load_recordings([str(a), str(b)], role="data", quiet=True)
    np.testing.assert_array_equal(s[1].x, y)
    c = _csv(tmp_path / "c.csv", ["a", "x"], y)
    _fails(capsys, ["fit", str(a), str(c), "--out", str(tmp_path / "r")] + FAST,
           "c.csv: has the columns ['a', 'x']; the training data has ['a', 'b']")


def test_files_without_header_are_matched_by_count(run, files, capsys):
    np.save(files / "three.npy", np.zeros((100, 3)))
    _fails(capsys, ["evaluate", str(run), "--test", str(files / "three.npy")] + EVAL,
           "three.npy: 3 variables", "expected 2 like the training data ['a', 'b']")
    np.save(files / "two.npy", _signal(100)[:, ::-1])
    s = _read(files / "two.npy", role="test", like=Layout.of_run(_json(run / "config.json")))
    assert s.names == ["x0", "x1"]  # by position: no names to match


# ------------------------------------------------------------------------------ shapes


def test_short_wide_context_follows_the_runs_variable_count(tmp_path, capsys):
    like = Layout([f"ch{j}" for j in range(64)], False)
    np.save(tmp_path / "eeg.npy", np.random.default_rng(0).normal(size=(50, 64)))
    s = load_recordings([str(tmp_path / "eeg.npy")], role="test", like=like)[0]
    assert s.x.shape == (50, 64)
    assert "read as 50 time steps (the run has 64 variables)" in capsys.readouterr().out
    np.save(tmp_path / "eeg_t.npy", np.zeros((64, 50)))
    with pytest.raises(ValueError, match="it has 64 rows: if time runs along its columns, "
                       "transpose it"):
        _read(tmp_path / "eeg_t.npy", role="test", like=like)
    # a first training file: a header decides; without one, the longer axis is time
    _csv(tmp_path / "wide.csv", [f"ch{j}" for j in range(64)], np.zeros((50, 64)) + 1)
    assert _read(tmp_path / "wide.csv").x.shape == (50, 64)
    _fails(capsys, ["fit", str(tmp_path / "eeg.npy"), "--out", str(tmp_path / "r")] + FAST,
           "eeg.npy: 50 rows but 64 columns", "no run to compare with", "transpose")


@pytest.mark.parametrize("name", ["row.npy", "row.csv"])
def test_one_row_file(tmp_path, capsys, name):
    if name.endswith(".npy"):
        np.save(tmp_path / name, np.zeros((1, 500)))
    else:
        (tmp_path / name).write_text("a,b,c\n1,2,3\n")
    err = _fails(capsys, ["fit", str(tmp_path / name), "--out", str(tmp_path / "r")] + FAST,
                 f"{name}: one row of", "a single time step", "T ≥ 2 rows")
    assert "transpose" not in err


# ------------------------------------------------------------------------------ numbers


def test_huge_values_standardize_without_overflow(tmp_path):
    x = _signal(200) * 1e200 + 3e200
    np.save(tmp_path / "big.npy", x)
    s = _read(tmp_path / "big.npy")
    std = Standardization.of([s], True)
    z = model_units(s, std)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(z.std(0), 1, rtol=1e-9)
    np.testing.assert_allclose(std.invert(z), x, rtol=1e-9)
    near = _read(tmp_path / "big.npy")  # values near float64's end: x − mean overflows
    near.x = np.c_[np.linspace(-1, 1, 200) * 1.7e308, x[:, 0]]
    assert np.isfinite(Standardization.of([near], True).apply(near.x)).all()


def test_values_beyond_float32_are_refused_before_the_cast(tmp_path, capsys, run, files):
    x = _signal(400)
    x[5, 1] = 1e39
    np.save(tmp_path / "f32.npy", x)
    _fails(capsys, ["fit", str(tmp_path / "f32.npy"), "--no-standardize", "--out",
                    str(tmp_path / "r")] + FAST,
           "f32.npy: row 5, column 'x1': 1e+39 is beyond the range of the model's float32 "
           "numbers (±3.4e+38)")
    assert not (tmp_path / "r").exists()
    far = _signal(100)
    far[7, 0] = 1e300  # finite, far beyond float32 on the training data's scale
    _csv(files / "test_far.csv", ["a", "b"], far)
    _fails(capsys, ["evaluate", str(run), "--test", str(files / "test_far.csv")] + EVAL,
           "test_far.csv: line 9, column 'a': 1e+300 is", "after standardization",
           "beyond the range of the model's float32 numbers")


# ------------------------------------------------------------------------------ no tracebacks


@pytest.mark.parametrize("value", ["9223372036854775808", str(10**30)])
def test_seed_out_of_range(files, capsys, tmp_path, value):
    _fails(capsys, ["fit", str(files / "train.npy"), "--seed", value, "--out",
                    str(tmp_path / "r")] + FAST,
           "--seed must be an integer in [0, 9223372036854775807] (2^63 − 1)")
    (tmp_path / "s.json").write_text('{"seed": %s}' % value)
    _fails(capsys, ["fit", str(files / "train.npy"), "--config", str(tmp_path / "s.json"),
                    "--out", str(tmp_path / "r")] + FAST, "s.json: seed must be an integer")


def _damaged_member(d):
    np.savez(d / "damaged.npz", x=_signal(400))
    data = bytearray((d / "damaged.npz").read_bytes())
    data[300] ^= 0xFF  # inside the member's bytes: the CRC no longer matches
    (d / "damaged.npz").write_bytes(bytes(data))


def _huge_header(d):
    with open(d / "huge.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                 "shape": (10**9, 10**4)})
        f.write(b"\0" * 800)


def _huge_member(d):
    _huge_header(d)
    with zipfile.ZipFile(d / "huge.npz", "w") as z:
        z.write(d / "huge.npy", "x.npy")


def _truncated(d):
    np.save(d / "cut.npy", _signal(400))
    (d / "cut.npy").write_bytes((d / "cut.npy").read_bytes()[:-100])


BAD_ARRAYS = {
    "damaged.npz": (_damaged_member, "the array 'x' cannot be read; the archive is damaged"),
    "renamed.npz": (lambda d: np.save(d / "renamed.npy", _signal(400)) or
                    (d / "renamed.npy").rename(d / "renamed.npz"),
                    "is an .npy array with an .npz name"),
    "renamed.npy": (lambda d: np.savez(d / "z.npz", x=_signal(400)) or
                    (d / "z.npz").rename(d / "renamed.npy"), "is an .npz archive with an .npy"),
    "huge.npy": (_huge_header, "the file's header says shape (1000000000, 10000) of float64"),
    "huge.npz": (_huge_member, "the array 'x''s header says shape (1000000000, 10000)"),
    "cut.npy": (_truncated, "the file's header says shape (400, 2) of float64 (6,400 bytes) but "
                "6,300 bytes follow; the file is truncated or damaged"),
    "objects.npy": (lambda d: np.save(d / "objects.npy", np.array([[1, "a"]] * 40, object),
                                      allow_pickle=True), "the file holds Python objects"),
    "notzip.npz": (lambda d: (d / "notzip.npz").write_bytes(b"hello" * 100),
                   "not a readable .npz archive"),
}


@pytest.mark.parametrize("name", sorted(BAD_ARRAYS))
def test_bad_array_files_one_line(tmp_path, capsys, name):
    make, expected = BAD_ARRAYS[name]
    make(tmp_path)
    _fails(capsys, ["fit", str(tmp_path / name), "--out", str(tmp_path / "r")] + FAST,
           f"{name}: {expected}")
    assert not (tmp_path / "r").exists()


def test_text_in_a_left_out_column_and_duplicate_names(tmp_path, capsys):
    x = _signal(40)
    rows = [",a,b"] + [
        f"2024-01-01 00:00:{i:02d},{float(u)!r},{float(v)!r}" for i, (u, v) in enumerate(x)]
    (tmp_path / "dates.csv").write_text("\n".join(rows) + "\n")  # a DatetimeIndex
    np.testing.assert_array_equal(_read(tmp_path / "dates.csv").x, x)
    (tmp_path / "dup.csv").write_text("a,a\n" + "1,2\n3,4\n" * 200)
    _fails(capsys, ["fit", str(tmp_path / "dup.csv"), "--out", str(tmp_path / "r")] + FAST,
           "dup.csv: the header names the column 'a' more than once")


def test_literal_texts_are_what_pandas_writes(tmp_path):
    import pandas as pd  # the `test` group installs it: never skipped
    x = _signal(20)
    pd.DataFrame(x, columns=["a", "b"]).to_csv(tmp_path / "p1.csv")
    assert (tmp_path / "p1.csv").read_text() == _csv(
        tmp_path / "l1.csv", ["", "a", "b"], x, index=range(20)).read_text()
    pd.DataFrame(x).to_csv(tmp_path / "p2.csv", index=False)
    assert (tmp_path / "p2.csv").read_text() == _csv(tmp_path / "l2.csv", ["0", "1"],
                                                     x).read_text()


@pytest.mark.slow
def test_generate_on_a_short_wide_context(tmp_path):
    """A 64-channel run (as EEG) generates after a 50-step context (fewer rows than
    columns), and a context CSV with its columns reordered gives the same orbit."""
    rng = np.random.default_rng(1)
    x = np.sin(0.1 * np.arange(300)[:, None] + rng.uniform(0, 6, 64)) + 0.05 * rng.normal(
        size=(300, 64))
    names = [f"ch{j}" for j in range(64)]
    _csv(tmp_path / "eeg.csv", names, x)
    run = tmp_path / "run"
    assert main(["fit", str(tmp_path / "eeg.csv"), "--out", str(run), "--no-plots"]
                + FAST) == 0
    ctx = x[:50]
    _csv(tmp_path / "ctx.csv", names, ctx)
    _csv(tmp_path / "ctx_rev.csv", names[::-1], ctx[:, ::-1])
    outs = []
    for name in ("ctx.csv", "ctx_rev.csv"):
        assert main(["generate", str(run), "--steps", "20", "--context", str(tmp_path / name),
                     "--out", str(tmp_path / f"g_{name}.npy")]) == 0
        outs.append(np.load(tmp_path / f"g_{name}.npy"))
    assert outs[0].shape == (2, 20, 64)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_positional_matching_keeps_the_index_rule_and_the_runs_count(tmp_path):
    x = _signal(40)
    like = Layout(["x0", "x1"], False)  # a run trained on an .npy
    path = _csv(tmp_path / "p.csv", ["", "a", "b"], x, index=range(40))
    np.testing.assert_array_equal(_read(path, role="test", like=like).x, x)
    ramp = np.c_[np.arange(40), np.arange(3, 43)]  # two variables that happen to increase
    np.save(tmp_path / "r.npy", ramp)
    np.testing.assert_array_equal(_read(tmp_path / "r.npy", role="test", like=like).x, ramp)


def test_resume_of_a_run_that_read_other_columns_says_so(run, tmp_path, capsys):
    old = tmp_path / "old"  # as a run made when the index column was read as a variable
    shutil.copytree(run, old)
    cfg = _json(old / "config.json")
    cfg["data"]["names"] = ["", "a", "b"]
    (old / "config.json").write_text(json.dumps(cfg))
    _fails(capsys, ["fit", "--resume", str(old)],
           "the run was trained on the variables ['', 'a', 'b']; its files are now read as "
           "['a', 'b']", "start a new run")


def test_container_header_length_beyond_the_file_allocates_nothing(tmp_path):
    import hashlib

    from dsr._io import FileFormatError, read_container, read_kind

    sha = lambda b: hashlib.sha256(b).hexdigest().encode()  # noqa: E731
    path = tmp_path / "m.eqx"  # the first line claims a 10^16-byte header
    path.write_bytes(b"DSR1 %d %s 0 %s\n{}" % (10**16 - 1, sha(b"{}"), sha(b"")))
    assert read_kind(path) is None
    with pytest.raises(FileFormatError, match="beyond the 16 MiB limit|truncated or has extra"):
        read_container(path, ["model"])
