"""Layer 5, ``montecarlo``: everything that touches samples.

Drawing attention matrices (single-head, multi-head, causal), the registry of
Monte Carlo models, the parallel draws, the spectral statistics, the
validation reports and the fit of a law to a measured spectrum.  It may import
every layer below it (``core`` to ``attention``).
"""
