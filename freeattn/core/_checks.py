"""Input checks shared by the public functions.

Each public function validates all of its arguments through these helpers, so
that every bad input gets the same kind of message: the argument's name, what
was received and the allowed range.  Wrong type -> ``TypeError``; right type,
wrong value -> ``ValueError``.
"""

import math
import numbers
import operator

import numpy as np

from ._tolerances import MAX_FLOAT_EXP_ARG

__all__ = [
    "as_real_array",
    "real_scalar",
    "check_beta",
    "check_positive",
    "check_int",
    "MAX_FLOAT_BETA",
]

#: Largest ``beta`` for which ``exp(beta**2)`` is finite in float64.
MAX_FLOAT_BETA = float(np.sqrt(MAX_FLOAT_EXP_ARG))


def as_real_array(value, name, *, finite=False):
    """Convert ``value`` to a float64 array, rejecting non-real input.

    Parameters
    ----------
    value : array_like
        Real scalar or array.
    name : str
        Argument name used in error messages.
    finite : bool, optional
        Also reject infinite entries.

    Returns
    -------
    numpy.ndarray
        Float64 array of the same shape (0-d for scalars).

    Raises
    ------
    TypeError
        If ``value`` is a string, a bool, complex, or not numeric.
    ValueError
        If ``value`` contains NaN (or, with ``finite=True``, an infinity).
    """
    if value is None or isinstance(value, (str, bytes, bool)):
        raise TypeError(f"{name} must be a real number or array of real numbers, "
                        f"got {type(value).__name__} {value!r}")
    arr = np.asarray(value)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be real-valued, got {value!r}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex value {value!r}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, "
                        f"got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def real_scalar(value, name):
    """A finite real Python float; TypeError/ValueError naming ``name``."""
    if isinstance(value, float) and math.isfinite(value):
        return value
    arr = as_real_array(value, name, finite=True)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a real scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_positive(value, name, *, upper=None, upper_name=None, inclusive_upper=True):
    """Check ``0 < value (<= upper)`` elementwise and return a float array.

    Parameters
    ----------
    value : array_like
        Value to check.
    name : str
        Argument name for messages.
    upper : float, optional
        Upper bound of the allowed range.
    upper_name : str, optional
        Why the upper bound exists, quoted in the message.
    inclusive_upper : bool, optional
        Whether ``value == upper`` is allowed.

    Returns
    -------
    numpy.ndarray
    """
    arr = as_real_array(value, name, finite=True)
    if (arr <= 0).any():
        rng = f"(0, {upper}]" if upper is not None else "(0, inf)"
        raise ValueError(f"{name} must be > 0 (allowed range {rng}), got {value!r}")
    if upper is not None:
        bad = arr > upper if inclusive_upper else arr >= upper
        if bad.any():
            why = f" ({upper_name})" if upper_name else ""
            bracket = "]" if inclusive_upper else ")"
            raise ValueError(f"{name} must be in (0, {upper}{bracket}{why}, got {value!r}")
    return arr


def check_beta(beta, *, upper=MAX_FLOAT_BETA):
    """Check an inverse temperature: real, finite, ``0 < beta <= upper``.

    The default upper bound is the largest ``beta`` whose ``exp(beta**2)`` is a
    finite float64 (about 26.64); pass a smaller ``upper`` where a function's
    accuracy range is narrower.

    Returns
    -------
    numpy.ndarray
        ``beta`` as a float64 array (0-d for a scalar).
    """
    return check_positive(beta, "beta", upper=upper,
                          upper_name="exp(beta**2) must be finite in float64; "
                                     "use exact=True or mpmath for larger beta"
                          if upper == MAX_FLOAT_BETA else None)


def check_int(value, name, *, minimum=1):
    """Check that ``value`` is an integer ``>= minimum`` and return it as ``int``.

    Accepts Python and numpy integers; rejects bools, floats (even integral
    ones such as ``1000.0``) and strings with a ``TypeError``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, "
                        f"got {type(value).__name__} {value!r}")
    value = operator.index(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value
