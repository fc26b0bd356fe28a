"""Layer 2, ``laws``: spectral laws and their transforms.

The law base class :class:`~freeattn.SpectralLaw` (with the affine, singular
value and zero-padding transforms), the elementary laws (semicircle, point
masses, Marchenko-Pastur) and the SciPy adapter.  It may import ``core`` and
``algebra``.
"""
