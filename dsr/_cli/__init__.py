"""The command line `python -m dsr fit | evaluate | generate` (private; `main(argv)` runs it).

One concept per module: `_options.py` (the option table, config files, defaults),
`_converters.py` (each option's value check), `_models.py` (`--model`, `--import` and the
constructor protocol), `_data/` (reading .npy / .csv / .npz recordings, standardization),
`_run.py` (the run folder), `_fit.py`, `_evaluate.py`, `_generate.py` (the commands), `_measures.py`
(per-member measures and median ± MAD), `_plots.py` (pictures), `_errors.py` (one-line
errors), `_main.py` (parser and dispatch).
"""

from ._main import main as main
