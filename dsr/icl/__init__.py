"""In-context learning of linear dynamical systems with one linear-attention layer.

After Vladarean, Zhang, Sra (2026), *On learning linear dynamical systems in context with
attention layers*, ICLR 2026 (OpenReview os7OLubIMI). A single linear self-attention layer
(`LinearSelfAttention`, on the shared linear-attention / scan code of `dsr.ttt_linear`) is
trained (`train`) on fresh random noisy LDS sequences (`sample_lds`) to predict the next
observation, and compared with in-context predictors:

- `one_step_gd` with Theorem 4.1's step size `optimal_eta_ar1` (the AR(1) optimum),
- `ar_least_squares` (in-context OLS on the AR(s) loss),
- `kalman` (the optimal predictor with the true system).

The learned weights are checked against Theorem 4.1 / Lemma 4.1 (`predicted_pattern`,
`family_of`, `structure_ratio`, `project`, `implied_eta`), and for s ≥ 2 against two steps
of preconditioned CG (`krylov_terms`, `pcg_cosine`). See `examples/icl_lds.py`.
"""

from ._attention import LinearSelfAttention as LinearSelfAttention
from ._kalman import kalman as kalman
from ._pcg import KrylovTerms as KrylovTerms, krylov_terms as krylov_terms
from ._pcg import pcg_cosine as pcg_cosine
from ._predictors import MonteCarloEstimate as MonteCarloEstimate
from ._predictors import ar_least_squares as ar_least_squares
from ._predictors import one_step_gd as one_step_gd, optimal_eta_ar1 as optimal_eta_ar1
from ._sampling import LDSBatch as LDSBatch, SETTINGS as SETTINGS, sample_lds as sample_lds
from ._structure import family_of as family_of, implied_eta as implied_eta
from ._structure import predicted_pattern as predicted_pattern, project as project
from ._structure import relevant_entries as relevant_entries
from ._structure import structure_ratio as structure_ratio
from ._tokens import ar_tokens as ar_tokens
from ._train import TrainResult as TrainResult, train as train
