"""dsr: dynamical-systems reconstruction in JAX, trained by GTF-DEER.

The public surface is everything imported here. Where it lives:

- models: `dsr/models/` — `ShPLRNN`, `ClippedShPLRNN` (`_shplrnn.py`, `_clipped.py`), `ALRNN`
  (`_alrnn.py`, written with the public contract only), `LSSM` (`_lssm.py`) and the abstract templates (`_base.py`); baselines from other papers in
  `dsr/baselines/` (TTT / linear attention, selective SSM).
- solving the forced recurrence: `_solvers/` (the interface, `Sequential`, `DEER` and its two
  Newton paths, solver names, the shared scan backend); `_gtf.py` (generalized teacher
  forcing).
- training: `_training/` (`fit` and its pipeline), `_sweep/` (`Grid`, `sweep`: settings ×
  seeds in one program, and the selection), `_alpha.py` (α strategies),
  `_schedule.py` (learning-rate schedules), `_regularization.py`, `_denoise.py` (smoothing
  noisy observations before training); `_orbit_status.py` judges
  free runs for `fit`, `generate` and `evaluate` alike.
- using a model: `_generate.py`, `_serialization.py` (`save` / `load`), `_io.py` (the
  checksummed file format); evaluation in `dsr/metrics/`.
- extension: `_check_model.py` (`check_model`: analytic Jacobians against autodiff),
  `_registry.py` (`register`: the classes files may name), `_config.py`
  (strategies as text).
"""

from . import icl as icl
from . import metrics as metrics
from ._alpha import estimate_alpha as estimate_alpha
from ._alpha import AbstractAlpha as AbstractAlpha, AdaptiveAlpha as AdaptiveAlpha
from ._alpha import ConstantAlpha as ConstantAlpha
from ._schedule import AbstractSchedule as AbstractSchedule, CosineDecay as CosineDecay
from ._schedule import ExponentialDecay as ExponentialDecay
from ._check_model import check_model as check_model
from ._delay import choose_embedding as choose_embedding
from ._denoise import Denoised as Denoised, denoise as denoise
from ._ensemble import Ensemble as Ensemble, ensemble as ensemble
from ._sweep._grid import Grid as Grid
from ._sweep._build import Sweep as Sweep, sweep as sweep
from ._sweep._select import SweepResult as SweepResult
from ._training._fit import FitResult as FitResult, fit as fit
from ._orbit_status import OrbitStatus as OrbitStatus, orbit_status as orbit_status
from ._generate import generate as generate, warm_start as warm_start
from ._gtf import forcing_alphas as forcing_alphas, gtf_forward as gtf_forward
from ._gtf import teacher_signals as teacher_signals
from ._io import FileFormatError as FileFormatError
from ._regularization import Regularization as Regularization
from ._registry import register as register
from ._solvers._scan import linear_scan as linear_scan
from ._serialization import load as load, load_extra as load_extra, save as save
from ._solvers._deer import DEER as DEER
from ._solvers._base import AbstractSolver as AbstractSolver, Linearization as Linearization
from ._solvers._sequential import Sequential as Sequential
from ._solvers._base import SolverInfo as SolverInfo
from ._solvers._resolve import resolve_solver as resolve_solver
from .baselines import SelectiveSSM as SelectiveSSM, SwiGLUKernel as SwiGLUKernel
from .baselines import TTTLinear as TTTLinear, TTTModel as TTTModel, ttt_linear as ttt_linear
from .models import ALRNN as ALRNN
from .models import AbstractDataDrivenModel as AbstractDataDrivenModel
from .models import AbstractGTFModel as AbstractGTFModel, AbstractModel as AbstractModel
from .models import AbstractMARModel as AbstractMARModel
from .models import AbstractShPLRNN as AbstractShPLRNN
from .models import AbstractTeacherForcedModel as AbstractTeacherForcedModel
from .models import ClippedShPLRNN as ClippedShPLRNN, LSSM as LSSM, ShPLRNN as ShPLRNN

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("dsr")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
