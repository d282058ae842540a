"""data_gen: the benchmark data sets of Hess, Götz, Durstewitz (2026), "Parallel-in-Time Training
of Recurrent Neural Networks for Dynamical Systems Reconstruction", arXiv:2605.12683, App. F,
made with diffrax.

Library::

    import data_gen
    ds = data_gen.generate("lorenz96")          # paper defaults; or data_gen.lorenz96(...)
    ds.train, ds.test, ds.dt, ds.meta            # (T, N) float32, standardized; JSON metadata
    ds.save("data/lorenz96.npz"); ds2 = data_gen.load("data/lorenz96.npz")

Command line: ``python -m data_gen lorenz63 lorenz96 bursting_neuron --out data``.

Where things live: ``_systems.py`` (vector fields, presets, defaults), ``_integrate.py``
(batched diffrax solve), ``_recipe.py`` (the App. F recipe: noise, standardization, metadata),
``_odes.py`` (the named ODE data sets and ``from_vector_field``), ``_lds.py`` (random linear
systems), ``_dataset.py`` (``Dataset``, ``save``/``load``), ``_registry.py`` (``generate``,
raw ``trajectories``), ``_filenames.py`` and ``__main__.py`` (the command line).
"""

from ._dataset import Dataset as Dataset, load as load
from ._integrate import integrate as integrate
from ._lds import lds as lds
from ._odes import bursting_neuron as bursting_neuron, from_vector_field as from_vector_field
from ._odes import lorenz63 as lorenz63, lorenz96 as lorenz96
from ._registry import GENERATORS as GENERATORS, generate as generate
from ._registry import initial_conditions as initial_conditions, trajectories as trajectories
from ._systems import LORENZ96_PRESETS as LORENZ96_PRESETS, NEURON_PRESETS as NEURON_PRESETS
from ._systems import SYSTEMS as SYSTEMS, interburst_gaps as interburst_gaps

__all__ = [
    "Dataset", "generate", "load", "lorenz63", "lorenz96", "bursting_neuron", "lds",
    "from_vector_field", "trajectories", "initial_conditions", "integrate", "interburst_gaps",
    "SYSTEMS", "NEURON_PRESETS", "LORENZ96_PRESETS", "GENERATORS",
]  # fmt: skip
