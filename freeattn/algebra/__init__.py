"""Layer 1, ``algebra``: the algebra that needs no law class.

Polynomials and rational maps (``_rational``), free-cumulant and moment
series (``_cumulants``) and the Chebyshev representation of a density
(``_chebyshev``).  It may import ``core`` only.
"""
