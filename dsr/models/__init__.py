"""Models: the shallow PLRNN and the linear SSM with MLP readout."""

from ._base import AbstractGTFModel as AbstractGTFModel, AbstractModel as AbstractModel
from ._lssm import LSSM as LSSM
from ._shplrnn import ShPLRNN as ShPLRNN
from ._selective_ssm import SelectiveSSM as SelectiveSSM
from ._ttt_model import TTTModel as TTTModel
