"""Evaluation measures for dynamical-systems reconstruction (Hess, Götz & Durstewitz (2026),
"Parallel-in-Time Training of Recurrent Neural Networks for Dynamical Systems Reconstruction",
arXiv:2605.12683, App. G).

Where it lives: D_stsp in `_dstsp.py` (public function) with its estimators in `_kernel.py`
(exact kernel sums), `_dstsp_grid.py`, `_dstsp_subsample.py`, `_dstsp_cv.py` (control
variate) and `_dstsp_bins.py` (the GTF authors' histogram variant); D_H in `_spectrum.py`;
RMSE(n) in `_rmse.py`; Lyapunov exponents in `_lyapunov.py`; delay embedding in
`_embedding.py`; `evaluate` and its per-measure pieces in `_evaluate.py`; the one summary over
members (`median_mad`) in `_summary.py`; the orbit
validation every measure shares in `_orbits.py`; progress bars in `_progress.py`.
"""

from ._dstsp import StateSpaceDivergence as StateSpaceDivergence
from ._dstsp import state_space_divergence as state_space_divergence
from ._embedding import delay_embed as delay_embed
from ._evaluate import PAPER_EMBEDDINGS as PAPER_EMBEDDINGS
from ._evaluate import PAPER_EVALUATION as PAPER_EVALUATION
from ._evaluate import evaluate as evaluate
from ._lyapunov import lyapunov_spectrum as lyapunov_spectrum
from ._lyapunov import max_lyapunov as max_lyapunov
from ._lyapunov import model_lyapunov_spectrum as model_lyapunov_spectrum
from ._lyapunov import vector_field_lyapunov_spectrum as vector_field_lyapunov_spectrum
from ._rmse import rmse_n as rmse_n
from ._summary import median_mad as median_mad
from ._summary import summarize_members as summarize_members
from ._spectrum import power_spectrum_distance as power_spectrum_distance
