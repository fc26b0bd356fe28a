"""Layer 4, ``attention``: the limiting laws of random softmax attention.

Symbolic and Hermite coefficients of the linear Gaussian equivalent, the
single-head law, the multi-head laws and the causal solver and law.  It may
import ``core``, ``algebra``, ``laws`` and ``compose``.
"""
