"""The `Dataset` container and its files: a byte-reproducible ``.npz`` plus a ``.json`` sidecar.

``save`` writes both through `dsr`'s atomic writer (temporary file in the target folder, fsync,
rename, permissions 0644 less the umask), so an interrupted write never leaves a file that
`load` accepts and the same data set always gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from dsr._io import FileFormatError, atomic_write

FORMAT = "data_gen/1"


def package_version() -> str:
    """The installed ``dsr`` distribution's version (recorded in every data set's metadata)."""
    try:
        from importlib.metadata import version

        return version("dsr")
    except Exception:
        try:
            import dsr

            return str(dsr.__version__)
        except Exception:
            return "unknown"


def jsonable(x):
    """``x`` with NumPy arrays and scalars turned into lists and Python numbers (for JSON)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


def check_path(name, path) -> Path:
    """``path`` (a ``str`` or ``os.PathLike``) as a ``Path``."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a file path (str or os.PathLike); got {path!r}.")
    return Path(path)


def writable_folder(folder, name) -> Path:
    """Create ``folder`` if needed and check that files can be written into it."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{name}: cannot create output folder {str(folder)!r}: {e}") from e
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: output folder {str(folder)!r} is not writable")
    return folder


@dataclasses.dataclass(eq=False)
class Dataset:
    """A generated data set: a train and a test trajectory with their metadata.

    **Arguments:**

    - `train`, `test`: arrays `(T, N)` (`(B, T, N)` for batched sets such as `lds`),
      standardized unless `meta["standardized"]` is False.
    - `dt`: the sampling step.
    - `meta`: JSON metadata (system, params, dt, seed, noise, x0, t0, transient, mean, std,
      solver, rtol, atol, version, ...).
    - `arrays`: optional extra arrays (e.g. the LDS matrices), saved alongside.
    """

    train: np.ndarray
    test: np.ndarray
    dt: float
    meta: dict
    arrays: dict = dataclasses.field(default_factory=dict)

    def destandardize(self, x):
        """Undo the standardization: `x * std + mean` (float64)."""
        return np.asarray(x, np.float64) * np.asarray(self.meta["std"]) + np.asarray(
            self.meta["mean"]
        )

    def save(self, path) -> Path:
        """Write `path` (`.npz`: arrays + metadata JSON) and a readable `.json` sidecar.

        Both files are written atomically (`dsr`'s `atomic_write`), so an interrupted write
        never leaves a file that [`data_gen.load`][] accepts. An existing file is replaced.

        **Arguments:**

        - `path`: the file; `.npz` is appended if it has another suffix.

        **Returns:** the `.npz` path.
        """
        path = check_path("path", path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        folder = writable_folder(path.parent, "path")
        meta = dict(self.meta, dt=float(self.dt))
        text = json.dumps(meta, indent=2, sort_keys=True)
        arrays = {"train": self.train, "test": self.test, "meta": np.array(text)}
        arrays.update({f"arrays.{k}": v for k, v in self.arrays.items()})
        atomic_write(folder / path.name, lambda f: _write_npz(f, arrays))
        atomic_write(path.with_suffix(".json"), lambda f: f.write(text.encode() + b"\n"))
        return path

    def __repr__(self):
        return (
            f"Dataset({self.meta.get('system')!r}, train={self.train.shape}, "
            f"test={self.test.shape}, dt={self.dt}, dtype={self.train.dtype})"
        )


def _write_npz(f, arrays):
    """Like ``np.savez`` but byte-reproducible (fixed zip timestamps)."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
        for key, a in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as g:
                np.lib.format.write_array(g, np.asarray(a), allow_pickle=False)


def load(path) -> Dataset:
    """Read a data set written by [`data_gen.Dataset.save`][] (exact round trip).

    **Arguments:**

    - `path`: the `.npz` file.

    **Returns:** the [`data_gen.Dataset`][].

    Raises `FileNotFoundError` for a missing file and `dsr.FileFormatError` (a `ValueError`)
    naming the file for anything that is not a data_gen data set.
    """
    path = check_path("path", path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"][()]))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                found = meta.get("format") if isinstance(meta, dict) else None
                raise ValueError(f"unknown format {found!r}")
            extra = {k[len("arrays.") :]: z[k] for k in z.files if k.startswith("arrays.")}
            train, test = z["train"], z["test"]
    except FileNotFoundError:
        raise
    except Exception as e:
        raise FileFormatError(f"path: {str(path)!r} is not a data_gen data set ({e})") from e
    return Dataset(train, test, meta["dt"], meta, extra)
