"""data_gen: the paper's benchmark data sets (GTF-DEER paper, App. F; SPEC §7), made with diffrax.

Library::

    import data_gen
    ds = data_gen.generate("lorenz96")          # paper defaults; or data_gen.lorenz96(...)
    ds.train, ds.test, ds.dt, ds.meta            # (T, N) float32, standardized; JSON metadata
    ds.save("data/lorenz96.npz"); ds2 = data_gen.load("data/lorenz96.npz")

Command line: ``python -m data_gen lorenz63 lorenz96 bursting_neuron --out data``.
"""

from ._dataset import (
    GENERATORS,
    Dataset,
    bursting_neuron,
    from_vector_field,
    generate,
    initial_conditions,
    lds,
    load,
    lorenz63,
    lorenz96,
    trajectories,
)
from ._integrate import integrate
from ._systems import NEURON_PRESETS, SYSTEMS, interburst_gaps

__all__ = [
    "Dataset", "generate", "load", "lorenz63", "lorenz96", "bursting_neuron", "lds",
    "from_vector_field", "trajectories", "initial_conditions", "integrate", "interburst_gaps",
    "SYSTEMS", "NEURON_PRESETS", "GENERATORS",
]  # fmt: skip
