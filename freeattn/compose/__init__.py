"""Layer 3, ``compose``: the composition engine (theory section 8.3).

Laws built by subordination: sample covariance, free additive and
multiplicative convolution, their rational and generic solvers and the
numerical R- and S-transforms.  It may import ``core``, ``algebra`` and ``laws``.
"""
