"""Input checks shared by the public functions.

Each public function validates all of its arguments through these helpers, so
that every bad input gets the same kind of message: the argument's name, what
was received and the allowed range.  Wrong type -> ``TypeError``; right type,
wrong value -> ``ValueError``.
"""

import dataclasses
import math
import numbers
import operator

import numpy as np

from ._tolerances import MAX_FLOAT_EXP_ARG

__all__ = [
    "Real",
    "Integer",
    "Probability",
    "ATTENTION_BETA",
    "ATTENTION_GAMMA",
    "CAUSAL_BETA",
    "CAUSAL_GAMMA",
    "as_real_array",
    "real_scalar",
    "check_rng",
    "rng_generator",
    "key_width",
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


def real_scalar(value, name):
    """A finite real Python float; ``TypeError``/``ValueError`` naming ``name``.

    The one scalar check of the library (the law modules used to carry their
    own copies).

    Examples
    --------
    >>> real_scalar(2, "gamma")
    2.0
    >>> real_scalar([1.0, 2.0], "gamma")
    Traceback (most recent call last):
    ...
    TypeError: gamma must be a real scalar, got an array of shape (2,)
    """
    if isinstance(value, float) and math.isfinite(value):
        return value
    arr = as_real_array(value, name, finite=True)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a real scalar, got an array of shape {arr.shape}")
    return float(arr)


@dataclasses.dataclass(frozen=True)
class Real:
    """The domain of a real scalar parameter: ``low (<)<= x (<)<= high``.

    A domain knows no argument name: :meth:`check` is given it, so the same
    domain serves the laws, the family registry and the command line.

    Parameters
    ----------
    low, high : float
        Ends of the allowed range (``-inf``/``inf`` for none).
    low_closed, high_closed : bool, optional
        Whether the ends belong to the domain.
    why : str, optional
        Why the range is what it is, quoted in the error message.

    Examples
    --------
    >>> ATTENTION_BETA.text
    '[1e-08, 4.0]'
    >>> ATTENTION_GAMMA.check(0.5, "gamma")
    0.5
    >>> Real(0.0, 1.0, low_closed=False).check(0, "level")
    Traceback (most recent call last):
    ...
    ValueError: level must be in (0.0, 1.0], got 0
    """

    low: float = -math.inf
    high: float = math.inf
    low_closed: bool = True
    high_closed: bool = True
    why: str = ""

    @property
    def range(self):
        """``(low, high)``."""
        return (self.low, self.high)

    @property
    def text(self):
        """The range as written in messages and help, e.g. ``[1e-08, 4.0]``."""
        return (f"{'[' if self.low_closed else '('}{self.low}, "
                f"{self.high}{']' if self.high_closed else ')'}")

    def contains(self, x):
        """Whether the float ``x`` lies in the domain."""
        above = x >= self.low if self.low_closed else x > self.low
        below = x <= self.high if self.high_closed else x < self.high
        return bool(above and below)

    def check(self, value, name):
        """``value`` as a float, or ``TypeError``/``ValueError`` naming ``name`` and the range."""
        arr = as_real_array(value, name)
        if arr.ndim != 0:
            raise TypeError(f"{name} must be a real scalar, got array of shape {arr.shape}")
        x = float(arr)
        if not self.contains(x):
            why = f" ({self.why})" if self.why else ""
            raise ValueError(f"{name} must be in {self.text}{why}, got {value!r}")
        return x


@dataclasses.dataclass(frozen=True)
class Integer:
    """The domain of an integer parameter: ``minimum <= k (<= maximum)``.

    Examples
    --------
    >>> Integer(1).check(3, "draws")
    3
    >>> Integer(2, 10).text
    '[2, 10]'
    """

    minimum: int = 0
    maximum: int = None

    @property
    def text(self):
        """The range as written in messages and help."""
        if self.maximum is None:
            return f">= {self.minimum}"
        return f"[{self.minimum}, {self.maximum}]"

    def check(self, value, name):
        """``value`` as an ``int`` (bools and floats are a ``TypeError``), in range."""
        k = check_int(value, name, minimum=self.minimum)
        if self.maximum is not None and k > self.maximum:
            raise ValueError(f"{name} must be an integer in {self.text}, got {k}")
        return k


def Probability(*, open_low=True, open_high=True):
    """The domain of a level or probability: a sub-range of ``[0, 1]``.

    Examples
    --------
    >>> Probability().text
    '(0.0, 1.0)'
    >>> Probability().check(0.95, "level")
    0.95
    >>> Probability().check(1, "level")
    Traceback (most recent call last):
    ...
    ValueError: level must be in (0.0, 1.0), got 1
    """
    return Real(0.0, 1.0, low_closed=not open_low, high_closed=not open_high)


#: Inverse temperatures served by the spectral laws (single-head, multi-head,
#: head-average, stacks): below 1e-8 the law in units of theta1 is its
#: beta -> 0 limit (theory eq. (6.11)) to O(beta**2) = 1e-16; above 4,
#: ``theta2/theta1 < 1.8e-6`` and the law is Marchenko-Pastur to that order.
ATTENTION_BETA = Real(1e-8, 4.0, why="below, the law in units of theta1 is its beta -> 0 "
                                     "limit, the two-Wishart product law, to better than "
                                     "1e-16; above, theta2/theta1 < 1.8e-6 and the law is "
                                     "Marchenko-Pastur of variance theta1 to that order")

#: Width ratios ``gamma = d_qk/n`` served by the attention laws: down to 1e-4
#: (long contexts: d_head = 64 at n = 128k is 5e-4) and up to 1e4.
ATTENTION_GAMMA = Real(1e-4, 1e4)

#: Inverse temperatures of the causal law (theory note 10).
CAUSAL_BETA = Real(1e-8, 4.0, why="below 1e-8 the law in units of theta1 is its "
                                  "beta -> 0 limit to 1e-16")

#: Width ratios of the causal law (theory note 10).
CAUSAL_GAMMA = Real(0.1, 10.0)


_RNG_KINDS = "None, a non-negative integer, a numpy SeedSequence, BitGenerator or Generator"


def check_rng(rng):
    """Check an ``rng`` argument and return what :func:`numpy.random.default_rng` needs.

    The one ``rng`` check of the library.  A :class:`numpy.random.SeedSequence`
    is copied (so that spawning streams from it does not change the caller's
    object: a seed sequence is a seed, the same one gives the same draw); a
    Generator or BitGenerator is returned as is (drawing from it advances it);
    anything else must be accepted by ``numpy.random.default_rng``.

    Raises
    ------
    TypeError, ValueError
        Naming ``rng`` and what it may be (a bool, a string, a float, a
        negative integer...).

    Examples
    --------
    >>> check_rng(-1)
    Traceback (most recent call last):
    ...
    ValueError: rng must be None, a non-negative integer, a numpy SeedSequence, BitGenerator or Generator, got -1
    """
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(f"rng must be {_RNG_KINDS}, got {rng!r}")
    if isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key,
                                      pool_size=rng.pool_size)
    if rng is None or isinstance(rng, (np.random.Generator, np.random.BitGenerator)):
        return rng
    try:
        np.random.SeedSequence(rng)
    except TypeError:
        raise TypeError(f"rng must be {_RNG_KINDS}, got {type(rng).__name__} {rng!r}") from None
    except ValueError:
        raise ValueError(f"rng must be {_RNG_KINDS}, got {rng!r}") from None
    return rng


def rng_generator(rng):
    """:func:`check_rng`, then :func:`numpy.random.default_rng`: a ``Generator``."""
    return np.random.default_rng(check_rng(rng))


def key_width(gamma, n):
    """The key width ``d_qk = round(gamma * n)`` of a sampled model.

    The one place where a width ratio becomes a width (:func:`freeattn.validate`
    and the figures call it).

    Raises
    ------
    ValueError
        If ``gamma * n`` rounds to 0.

    Examples
    --------
    >>> key_width(0.5, 1000)
    500
    >>> key_width(1e-4, 100)
    Traceback (most recent call last):
    ...
    ValueError: gamma * n must round to d_qk >= 1, got gamma=0.0001, n=100
    """
    d_qk = int(round(gamma * n))
    if d_qk < 1:
        raise ValueError(f"gamma * n must round to d_qk >= 1, got gamma={gamma!r}, n={n}")
    return d_qk
