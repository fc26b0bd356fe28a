"""Named numerical tolerances used across freeattn.

Every tolerance a solver or check relies on is defined here once, with the
reason for its value, instead of as a literal in a function body.  Tolerances
that depend on a working precision are functions of that precision.
"""

import numpy as np

__all__ = [
    "FLOAT_EPS",
    "FLOAT_TINY",
    "MAX_FLOAT_EXP_ARG",
    "mp_tolerance",
]

#: Machine epsilon of float64.
FLOAT_EPS = float(np.finfo(np.float64).eps)

#: Largest ``x`` with ``exp(x)`` finite in float64 (``log(float max)``).
MAX_FLOAT_EXP_ARG = float(np.log(np.finfo(np.float64).max))

#: Smallest normal float64: the floor of a denominator that may be exactly 0
#: (a zero root or an all-zero coefficient vector), never a tolerance.
FLOAT_TINY = float(np.finfo(np.float64).tiny)


def mp_tolerance(dps, guard=5):
    """Residual tolerance for an mpmath computation at ``dps`` decimal digits.

    Parameters
    ----------
    dps : int
        Working precision in decimal digits.
    guard : int, optional
        Digits kept back as a guard against rounding in the residual itself.

    Returns
    -------
    mpmath.mpf
        ``10**-(dps - guard)``.
    """
    import mpmath

    return mpmath.mpf(10) ** (-(int(dps) - int(guard)))
