"""Evaluation measures for dynamical-systems reconstruction (SPEC §8, paper App. G)."""

from ._dstsp import StateSpaceDivergence as StateSpaceDivergence
from ._dstsp import state_space_divergence as state_space_divergence
from ._embedding import delay_embed as delay_embed
from ._lyapunov import lyapunov_spectrum as lyapunov_spectrum
from ._lyapunov import max_lyapunov as max_lyapunov
from ._lyapunov import model_lyapunov_spectrum as model_lyapunov_spectrum
from ._lyapunov import vector_field_lyapunov_spectrum as vector_field_lyapunov_spectrum
from ._spectrum import power_spectrum_distance as power_spectrum_distance
from ._evaluate import PAPER_EMBEDDINGS as PAPER_EMBEDDINGS, evaluate as evaluate
from ._rmse import rmse_n as rmse_n
