"""Baselines from other papers, in the templates of `dsr.models`.

- `TTTModel`, `TTTLinear`, `ttt_linear`, `SwiGLUKernel`: test-time training with KV binding
  as linear attention (Liu, Elflein, Litany, Gojcic, Li (2026), *Test-Time Training with KV
  Binding Is Secretly Linear Attention*), recurrent and chunk-wise parallel forms on the
  shared scan backend.
- `SelectiveSSM`: the Mamba-2 selective recurrence (Dao & Gu 2024) in the LSSM template,
  the comparison of Hess, Götz, Durstewitz (2026), arXiv:2605.12683, App. H.4.
"""

from ._selective_ssm import SelectiveSSM as SelectiveSSM
from ._ttt import ttt_linear as ttt_linear
from ._ttt_kernel import SwiGLUKernel as SwiGLUKernel
from ._ttt_layer import TTTLinear as TTTLinear
from ._ttt_model import TTTModel as TTTModel
