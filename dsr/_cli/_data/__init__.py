"""Reading a user's recordings: `.npy` (T, N), `.csv` (optional header row, `--columns`) and
`.npz` (a `data_gen` data set, or one array chosen by `--key`), and standardizing them.

Every problem is one `CLIError` line that names the file and says what was expected: a
missing file, a 1-D series, a wrong shape, text in a numeric column, rows with NaN, values
beyond the model's float range, a damaged or inconsistent `.npy`/`.npz` header (checked
against the file size before anything is allocated).

**Columns.** A first row is a header when it holds no number, or when its numbers are the
column labels `0, 1, …` that pandas writes for an unnamed frame. Without `--columns`, these
columns are not variables (each is named in a printed note and in the run's config): a
leading unnamed / `index` / `Unnamed: 0` column (pandas' index), a column named `time` or
`t` (the time axis: its step is the recording's `dt` when uniform; an error names it when
not, unless the step is already known), and a column of strictly increasing integers (a
sample counter). **Further files** (test, context, validation, more training files, inputs)
are matched by column name when both they and the training data have a header — reordered
to the training order; missing or extra names are an error naming both — and by position
(the number of columns) otherwise.

**Orientation.** Time runs along the rows. A file with fewer rows than columns is read as it
is when a header names its columns, `--columns` picks them, or the run's variable count is
known (a further file); only a first training file without any of these is refused.
"""

from ._embed import embed_series as embed_series
from ._load import FORMATS as FORMATS, load_recordings as load_recordings
from ._load import load_series as load_series, run_dt as run_dt
from ._columns import shown as shown
from ._csv import read_csv as read_csv
from ._series import Layout as Layout, Series as Series, sha256 as sha256
from ._standardize import Standardization as Standardization, model_units as model_units
