"""dsr: dynamical-systems reconstruction in JAX, trained by GTF-DEER.

The public surface is everything imported here.
"""

from . import metrics as metrics
from ._alpha import estimate_alpha as estimate_alpha
from ._fit import FitResult as FitResult, fit as fit, resolve_solver as resolve_solver
from ._generate import generate as generate, warm_start as warm_start
from ._gtf import forcing_alphas as forcing_alphas, gtf_forward as gtf_forward
from ._gtf import teacher_signals as teacher_signals
from ._regularization import Regularization as Regularization
from ._scan import linear_scan as linear_scan
from ._serialization import load as load, save as save
from ._ttt import SwiGLUKernel as SwiGLUKernel, ttt_linear as ttt_linear
from ._ttt_layer import TTTLinear as TTTLinear
from ._solver import DEER as DEER, AbstractSolver as AbstractSolver
from ._solver import Sequential as Sequential, SolverInfo as SolverInfo
from .models import AbstractGTFModel as AbstractGTFModel, AbstractModel as AbstractModel
from .models import LSSM as LSSM, SelectiveSSM as SelectiveSSM, ShPLRNN as ShPLRNN
from .models import TTTModel as TTTModel

__version__ = "0.1.0"
