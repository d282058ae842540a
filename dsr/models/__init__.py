"""Models: the shallow PLRNN (plain and clipped, optionally low-rank), the almost-linear RNN
and the linear SSM with MLP read-out, with their abstract templates."""

from ._base import AbstractDataDrivenModel as AbstractDataDrivenModel
from ._base import AbstractGTFModel as AbstractGTFModel, AbstractModel as AbstractModel
from ._base import AbstractMARModel as AbstractMARModel, AbstractSizedModel as AbstractSizedModel
from ._base import AbstractTeacherForcedModel as AbstractTeacherForcedModel
from ._alrnn import ALRNN as ALRNN
from ._clipped import ClippedShPLRNN as ClippedShPLRNN
from ._lssm import LSSM as LSSM
from ._shplrnn import AbstractShPLRNN as AbstractShPLRNN, ShPLRNN as ShPLRNN
