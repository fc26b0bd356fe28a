"""Layer 5, ``montecarlo``: everything that touches samples.

Drawing attention matrices (single-head, multi-head, causal), the registry of
Monte Carlo models, the parallel draws, the spectral statistics, the
validation reports and the fit of a law to a measured spectrum.  It may import
every layer below it (``core`` to ``attention``).
"""

# The registry is complete whenever any part of this layer is imported: the
# chain models (_models), then the causal, the multi-head and the finite-width models register
# themselves, in this order (the order of freeattn.MODELS).
from . import _models, _causal_sampling, _multihead_models, _finite_width, _stack_sampling  # noqa: F401
