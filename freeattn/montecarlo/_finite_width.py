"""Attention at finite head width: the harmonic Gaussian-equivalent model (theory note 15).

At head widths ``d = 16-128`` the paper's law (the linear Gaussian model of
theory eq. (7.6)) is far from softmax attention.  Theory note 15 decomposes the
score kernel ``exp(beta s_ij)`` in spherical harmonics of the query/key
directions, conditionally on the query and key norms (theory eqs. (15.2) and
(15.3)): degree 1 is the score matrix itself, degree 2 lives in a feature space
of dimension ``N_2 = (d + 2)(d - 1)/2`` comparable with ``n`` and is kept as a
product of two Gaussian matrices of that width, and the degrees ``>= 3`` act
as uncorrelated noise: Gaussian with the variance profile of theory eq.
(15.5) in the norms (theory eq. (15.6)), or the exact remainder of the kernel
with random signs (theory eq. (15.8)).

No closed law of these models is built here: :func:`finite_width_law`
returns the pooled spectrum of sampled draws (an
:class:`EmpiricalSpectrumLaw`), a semi-analytic predictor whose coefficients
are exact Bessel functions and whose randomness is Gaussian (and signs).
Its measured accuracy is in theory note 15,
section 15.4, and in ``benchmarks/finite_width.py``.
"""

import math

import numpy as np
from scipy.special import gammainc, gammaln, ive

from ..core._errors import ConvergenceError
from ..core._checks import rng_generator
from ._sampling import squared_singular_values

__all__ = [
    "EmpiricalSpectrumLaw",
    "FINITE_WIDTH_MODELS",
    "MAX_FINITE_BETA",
    "NOISE_KINDS",
    "finite_width_law",
    "EXACT_DEGREES",
    "gegenbauer_coefficients",
    "gegenbauer_polynomial",
    "harmonic_dimension",
    "harmonic_equivalent_matrix",
    "harmonic_noise_variance",
    "hermite_noise_variance",
    "hermite_truncation_matrix",
    "row_variance_matrix",
    "SEQUENCE_MODELS",
]

#: Largest inverse temperature of the finite-width predictor.  Above it the
#: model stops describing softmax attention (theory note 15, section 15.5:
#: KS 0.05 at beta = 1.5, d = 32) and the Bessel arguments grow beyond the
#: checked range.
MAX_FINITE_BETA = 2.0
#: Smallest head width: the harmonic decomposition (15.3) needs ``d >= 3``
#: (the Gegenbauer weight ``(1 - t^2)^((d-3)/2)``).
MIN_FINITE_D = 3
#: A residual noise variance (15.5) below ``-NOISE_VARIANCE_RTOL`` times the
#: total conditional second moment is not rounding: it raises.
NOISE_VARIANCE_RTOL = 1e-10
#: Silverman's robust rule for the kernel width of :meth:`EmpiricalSpectrumLaw.pdf`:
#: ``0.9 min(sd, IQR/1.34) N^(-1/5)`` (Silverman 1986, Density estimation, section 3.4.2).
SILVERMAN_FACTOR = 0.9
SILVERMAN_IQR = 1.34

#: Below this value ``scipy.special.ive`` has lost relative precision to
#: underflow; :func:`_log_kappa` then switches to Debye's expansion.
BESSEL_UNDERFLOW = 1e-250

FINITE_WIDTH_MODELS = ("harmonic_equivalent", "harmonic_signed")

#: Harmonic degrees the model can keep as Gaussian products (``exact_degrees``):
#: 2 is theory eq. (15.6)/(15.8), 3 adds the degree-3 product of eq. (15.10).
EXACT_DEGREES = (2, 3)

#: The approximations of softmax attention at finite width between the paper's
#: law and the harmonic models, as registry models (theory section 15.3): the
#: Hermite truncations of order 2 and 3 with homogeneous noise (eq. (15.9)) and
#: the row-normalised kernel (eq. (15.1)).  Order 1 is the linear model (7.6),
#: whose law is the paper's.
SEQUENCE_MODELS = ("hermite2", "hermite3", "row_variance")
#: Largest order of :func:`hermite_truncation_matrix` (``He_k`` by the recurrence).
MAX_HERMITE_ORDER = 8


def _check_args(beta, n, d):
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)):
        raise TypeError(f"beta must be a real number, got {type(beta).__name__}")
    if not 0.0 < float(beta) <= MAX_FINITE_BETA:
        raise ValueError(f"beta must satisfy 0 < beta <= {MAX_FINITE_BETA}, got {beta}")
    for name, value, low in (("n", n, 2), ("d", d, MIN_FINITE_D)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    return float(beta), int(n), int(d)


def harmonic_dimension(d, degree):
    """Dimension ``N_l`` of the degree-``l`` spherical harmonics on ``S^(d-1)`` (theory eq. (15.3)).

    ``N_0 = 1``, ``N_1 = d``, ``N_2 = (d + 2)(d - 1)/2``, and in general
    ``C(d + l - 1, l) - C(d + l - 3, l - 2)``.

    Parameters
    ----------
    d : int
        Head width, ``d >= 3``.
    degree : int
        Degree ``l >= 0``.

    Returns
    -------
    int

    Examples
    --------
    >>> harmonic_dimension(32, 2)
    527
    """
    from math import comb

    if degree < 0:
        raise ValueError(f"degree must be >= 0, got {degree}")
    if degree < 2:
        return 1 if degree == 0 else int(d)
    return comb(d + degree - 1, degree) - comb(d + degree - 3, degree - 2)


def _log_bessel_i_debye(order, x):
    """``log I_order(x)`` by Debye's uniform expansion, three correction terms (DLMF 10.41.3).

    Used only where ``scipy.special.ive`` underflows, which happens for
    ``order >~ 60``; there the truncation error is below ``~1e-8`` relative.
    """
    z = x / order
    root = np.sqrt(1.0 + z * z)
    eta = root + np.log(z / (1.0 + root))
    p = 1.0 / root
    u1 = (3 * p - 5 * p ** 3) / 24
    u2 = (81 * p ** 2 - 462 * p ** 4 + 385 * p ** 6) / 1152
    u3 = (30375 * p ** 3 - 369603 * p ** 5 + 765765 * p ** 7 - 425425 * p ** 9) / 414720
    series = 1.0 + u1 / order + u2 / order ** 2 + u3 / order ** 3
    return (order * eta - 0.5 * np.log(2 * np.pi * order) - 0.5 * np.log(root)
            + np.log(series))


def _log_kappa(x, d, degree):
    """``log E[exp(x t) P_l(t)]`` (theory eq. (15.4)), ``x > 0``, elementwise."""
    nu = d / 2.0 - 1.0
    scaled = ive(nu + degree, x)
    with np.errstate(divide="ignore"):
        log_bessel = np.where(scaled > BESSEL_UNDERFLOW, np.log(scaled) + x,
                              _log_bessel_i_debye(nu + degree, x))
    return gammaln(d / 2.0) + nu * np.log(2.0 / x) + log_bessel


def gegenbauer_coefficients(x, d, degrees=(0, 1, 2)):
    """Coefficients ``c_l(x)`` of ``exp(x t) = sum_l c_l(x) P_l(t)`` (theory eq. (15.4)).

    ``t`` is the cosine between two independent uniform directions of
    ``R^d`` and ``P_l`` the Gegenbauer polynomial normalised to ``P_l(1) = 1``
    (``P_1 = t``, ``P_2 = (d t^2 - 1)/(d - 1)``); then
    ``c_l(x) = N_l Gamma(d/2) (2/x)^(d/2 - 1) I_(d/2 - 1 + l)(x)``.

    Parameters
    ----------
    x : array_like
        Positive arguments (``beta sqrt(d) r_i rho_j`` in the model).
    d : int
        Head width, ``d >= 3``.
    degrees : sequence of int, optional
        The degrees ``l`` wanted.

    Returns
    -------
    list of numpy.ndarray
        One array of ``x``'s shape per degree.

    Examples
    --------
    >>> c0, c1 = gegenbauer_coefficients([1e-3, 2.0], 32, degrees=(0, 1))
    >>> bool(abs(c0[0] - 1) < 1e-6), bool(abs(c1[0] - 1e-3) < 1e-6)
    (True, True)
    """
    x = np.asarray(x, dtype=float)
    if np.any(~(x > 0)) or not np.all(np.isfinite(x)):
        raise ValueError("x must be finite and > 0")
    return [harmonic_dimension(d, l) * np.exp(_log_kappa(x, d, l)) for l in degrees]


def harmonic_noise_variance(x, d, exact_degrees=2):
    """Variance of the degrees ``> exact_degrees`` of ``exp(x t)`` (theory eqs. (15.5), (15.10)).

    ``v(x) = E[exp(2 x t)] - c_0(x)^2 - c_1(x)^2/d - c_2(x)^2/N_2``, the
    second moment of the kernel minus its degree 0-2 parts (Parseval on the
    sphere, ``E[P_l^2] = 1/N_l``); with ``exact_degrees=3`` also minus
    ``c_3(x)^2/N_3`` (the variance of the degrees ``>= 4``).

    Parameters
    ----------
    x : array_like
        Positive arguments.
    d : int
        Head width, ``d >= 3``.
    exact_degrees : {2, 3}, optional
        The highest degree kept out of the noise.

    Returns
    -------
    numpy.ndarray
        ``>= 0``, of ``x``'s shape.

    Notes
    -----
    The subtraction is exact up to rounding of the second moment: the
    absolute error is ``~1e-15 c_0(2x)`` (relative error grows where
    ``v << c_0(2x)``, i.e. ``x << 1``).

    Raises
    ------
    ConvergenceError
        If cancellation leaves a variance below ``-NOISE_VARIANCE_RTOL`` of
        the second moment (it is rounded to 0 within that tolerance).

    Examples
    --------
    >>> v = harmonic_noise_variance([0.5, 5.0], 32)
    >>> bool(np.all(v > 0))
    True
    """
    x = np.asarray(x, dtype=float)
    _check_exact_degrees(exact_degrees)
    coefficients = gegenbauer_coefficients(x, d, degrees=range(exact_degrees + 1))
    (second,) = gegenbauer_coefficients(2.0 * x, d, degrees=(0,))
    v = second - sum(c ** 2 / harmonic_dimension(d, l) for l, c in enumerate(coefficients))
    worst = np.min(v / second) if v.size else 0.0
    if worst < -NOISE_VARIANCE_RTOL:
        raise ConvergenceError(
            f"harmonic noise variance cancelled to {worst:.3g} of the second moment "
            f"(tolerance {NOISE_VARIANCE_RTOL:g})", residual=float(worst),
            tolerance=NOISE_VARIANCE_RTOL)
    return np.maximum(v, 0.0)


def _check_exact_degrees(exact_degrees):
    if isinstance(exact_degrees, bool) or exact_degrees not in EXACT_DEGREES:
        raise ValueError(f"exact_degrees must be one of {EXACT_DEGREES}, got {exact_degrees!r}")


def gegenbauer_polynomial(t, d, degree):
    """``P_l(t)`` normalised to ``P_l(1) = 1`` for ``S^(d-1)``, ``l <= 3`` (theory eq. (15.3)).

    ``P_0 = 1``, ``P_1 = t``, ``P_2 = (d t^2 - 1)/(d - 1)``,
    ``P_3 = ((d + 2) t^3 - 3 t)/(d - 1)`` (orthogonal to ``t`` under the cosine
    law (15.2): ``E[t^4] = 3/(d(d + 2))``, ``E[t^2] = 1/d``).

    Examples
    --------
    >>> float(gegenbauer_polynomial(1.0, 16, 3))
    1.0
    """
    t = np.asarray(t, dtype=float)
    if degree == 0:
        return np.ones_like(t)
    if degree == 1:
        return t
    if degree == 2:
        return (d * t * t - 1.0) / (d - 1.0)
    if degree == 3:
        return ((d + 2.0) * t * t - 3.0) * t / (d - 1.0)
    raise ValueError(f"degree must be 0, 1, 2 or 3, got {degree}")


def _wishart_factor(n, width, rng):
    """Lower-triangular ``L`` with ``L L^T ~ Wishart_n(width, I)`` (Bartlett decomposition)."""
    low = np.tril(rng.standard_normal((n, n)), -1)
    diag = np.sqrt(rng.chisquare(width - np.arange(n)))
    return low + np.diag(diag)


def _gaussian_product(n, width, rng):
    """A matrix distributed as ``G H^T/width``, ``G, H`` n x width i.i.d. N(0, 1).

    The Gaussian stand-in for a harmonic degree of width ``N_l`` (theory
    eqs. (15.6), (15.10)).

    For ``width >= n`` it is sampled as ``Z L^T/width`` with ``Z`` n x n
    Gaussian and ``L`` the Bartlett factor of ``H H^T`` (``H = L O`` with
    ``O`` Haar and independent of ``G``, so ``G O^T`` is Gaussian): ``O(n^3)``
    whatever the width.
    """
    if width < n:
        return rng.standard_normal((n, width)) @ rng.standard_normal((n, width)).T / width
    return rng.standard_normal((n, n)) @ _wishart_factor(n, width, rng).T / width


NOISE_KINDS = ("gaussian", "signed")


def harmonic_equivalent_matrix(n, d, beta, *, noise="gaussian", exact_degrees=2, rng=None):
    """One draw of the harmonic Gaussian-equivalent model (theory eqs. (15.6), (15.8), (15.10)).

    ``Y_ij = e^(-beta^2 r_i^2/2) [c_1(x_ij) t_ij + c_2(x_ij) X_ij
    + sqrt(v(x_ij)) W_ij]/sqrt(n)`` with Gaussian queries and keys, norms
    ``r_i = |q_i|/sqrt(d)``, ``rho_j = |k_j|/sqrt(d)``, cosines ``t_ij``,
    ``x_ij = beta sqrt(d) r_i rho_j``, ``X`` a product ``G H^T/N_2`` of two
    independent Gaussian matrices of width ``N_2`` and ``W`` i.i.d. N(0, 1).

    Parameters
    ----------
    n : int
        Tokens, ``n >= 2``.
    d : int
        Head width, ``d >= 3``.
    beta : float
        Inverse temperature, ``0 < beta <= MAX_FINITE_BETA``.
    noise : {"gaussian", "signed"}, optional
        The degrees ``>= 3``: ``"gaussian"`` is ``sqrt(v(x_ij)) W_ij``
        (eq. (15.6)); ``"signed"`` is ``eps_ij R(x_ij, t_ij)``, the exact
        remainder of the kernel at the model's own cosines with independent
        random signs (eq. (15.8)).
    exact_degrees : {2, 3}, optional
        ``3`` also replaces degree 3 by a Gaussian product ``c_3(x_ij)
        (G_3 H_3^T)_ij/N_3`` of width ``N_3`` (theory eq. (15.10)), for narrow
        heads where ``N_3`` is comparable with ``n``; the noise is then that
        of the degrees ``>= 4``.  Default 2 (eqs. (15.6), (15.8)).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`; ``Q``, ``K``, the degree-2
        product, the degree-3 product (``exact_degrees=3`` only), then the noise
        are drawn.

    Returns
    -------
    numpy.ndarray, shape (n, n)

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong type or range.

    Examples
    --------
    >>> harmonic_equivalent_matrix(64, 16, 0.5, rng=0).shape
    (64, 64)
    """
    beta, n, d = _check_args(beta, n, d)
    if noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
    _check_exact_degrees(exact_degrees)
    rng = rng_generator(rng)
    q, k = _gaussian_queries_keys(n, d, rng)
    r = np.linalg.norm(q, axis=1) / np.sqrt(d)
    rho = np.linalg.norm(k, axis=1) / np.sqrt(d)
    t = (q / np.linalg.norm(q, axis=1)[:, None]) @ (k / np.linalg.norm(k, axis=1)[:, None]).T
    x = beta * np.sqrt(d) * np.outer(r, rho)
    c = gegenbauer_coefficients(x, d, degrees=range(exact_degrees + 1))
    structured = c[1] * t
    for degree in range(2, exact_degrees + 1):
        structured += c[degree] * _gaussian_product(n, harmonic_dimension(d, degree), rng)
    if noise == "gaussian":
        rest = (np.sqrt(harmonic_noise_variance(x, d, exact_degrees))
                * rng.standard_normal((n, n)))
    else:
        remainder = np.exp(x * t)
        for degree, coefficient in enumerate(c):
            remainder -= coefficient * gegenbauer_polynomial(t, d, degree)
        rest = remainder * rng.choice(np.array([-1.0, 1.0]), size=(n, n))
    scale = np.exp(-0.5 * beta ** 2 * r ** 2)[:, None] / np.sqrt(n)
    return scale * (structured + rest)


def _gaussian_queries_keys(n, d, rng):
    """``Q, K``: ``n x d`` i.i.d. N(0, 1), queries first (the draw order of every model here)."""
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


def hermite_noise_variance(beta, order):
    """``alpha_m^2 = sum_(k > m) beta^(2k)/k!``, the variance left after ``order`` terms.

    ``theta1 = exp(beta^2) - 1 = sum_(k >= 1) beta^(2k)/k!`` is the variance of
    ``exp(beta s - beta^2/2)`` for ``s ~ N(0, 1)`` (theory eq. (2.4)); the tail is
    ``exp(x) P(m + 1, x)``, ``x = beta^2``, with ``P`` the regularised lower incomplete
    gamma function (no cancellation at small ``beta``); theory eq. (15.9).

    Examples
    --------
    >>> round(hermite_noise_variance(1.0, 1), 12) == round(np.e - 2, 12)   # e - 1 - 1
    True
    """
    x = float(beta) ** 2
    return float(math.exp(x) * gammainc(order + 1, x))


def hermite_truncation_matrix(n, d, beta, *, order=2, rng=None):
    """The Hermite truncation of order ``m`` with homogeneous noise (theory eq. (15.9)).

    ``Y = [sum_(k=1..m) beta^k He_k(S)/k! + alpha_m W]/sqrt(n)`` with
    ``S = Q K^T/sqrt(d)`` (Gaussian queries and keys), ``He_k`` the
    probabilists' Hermite polynomials applied entrywise, ``W`` i.i.d. N(0, 1)
    and ``alpha_m^2 = e^(beta^2) - 1 - sum_(k <= m) beta^(2k)/k!``
    (:func:`hermite_noise_variance`).  ``order=1`` is the linear model (theory
    eq. (7.6)); orders 2 and 3 are the steps "+ He_2" and "+ He_3" of theory
    section 15.3.

    Parameters
    ----------
    n : int
        Tokens, ``n >= 2``.
    d : int
        Head width, ``d >= 3``.
    beta : float
        Inverse temperature, ``0 < beta <= MAX_FINITE_BETA``.
    order : int, optional
        ``1 <= order <= MAX_HERMITE_ORDER``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`; ``Q``, ``K``, then ``W`` are drawn.

    Returns
    -------
    numpy.ndarray, shape (n, n)

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong type or range.

    Examples
    --------
    >>> hermite_truncation_matrix(32, 8, 0.5, order=3, rng=0).shape
    (32, 32)
    """
    beta, n, d = _check_args(beta, n, d)
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order must be an integer, got {type(order).__name__}")
    if not 1 <= order <= MAX_HERMITE_ORDER:
        raise ValueError(f"order must satisfy 1 <= order <= {MAX_HERMITE_ORDER}, got {order}")
    rng = rng_generator(rng)
    q, k = _gaussian_queries_keys(n, d, rng)
    s = q @ k.T / np.sqrt(d)
    # He_(k+1)(s) = s He_k(s) - k He_(k-1)(s), He_0 = 1, He_1 = s
    previous, current = np.ones_like(s), s
    total = beta * s
    for degree in range(2, order + 1):
        previous, current = current, s * current - (degree - 1) * previous
        total += beta ** degree / math.factorial(degree) * current
    total += math.sqrt(hermite_noise_variance(beta, order)) * rng.standard_normal((n, n))
    total /= np.sqrt(n)
    return total


def row_variance_matrix(n, d, beta, *, rng=None):
    """The kernel normalised by each row's own score variance (theory eq. (15.1)).

    ``Y_ij = [exp(beta s_ij - beta^2 r_i^2/2) - 1]/sqrt(n)`` with
    ``s_ij = q_i . k_j/sqrt(d)`` and ``r_i^2 = |q_i|^2/d``, the variance of row
    ``i``'s scores given ``q_i``: the last step of theory section 15.3 before the
    harmonic models, and the approximation of ``sqrt(n)(A - 11^T/n)`` they
    start from.

    Parameters
    ----------
    n : int
        Tokens, ``n >= 2``.
    d : int
        Head width, ``d >= 3``.
    beta : float
        Inverse temperature, ``0 < beta <= MAX_FINITE_BETA``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`; ``Q`` then ``K`` are drawn.

    Returns
    -------
    numpy.ndarray, shape (n, n)

    Examples
    --------
    >>> row_variance_matrix(32, 8, 0.5, rng=0).shape
    (32, 32)
    """
    beta, n, d = _check_args(beta, n, d)
    q, k = _gaussian_queries_keys(n, d, rng_generator(rng))
    exponent = beta * (q @ k.T) / np.sqrt(d)
    exponent -= (0.5 * beta ** 2 / d) * np.einsum("ij,ij->i", q, q)[:, None]
    out = np.expm1(exponent)
    out /= np.sqrt(n)
    return out


class EmpiricalSpectrumLaw:
    """The pooled squared singular values of sampled draws, as a law.

    Parameters
    ----------
    values : array_like
        Pooled sample (at least two values, finite, ``>= 0``).
    description : str, optional
        What was sampled.

    Notes
    -----
    ``cdf`` is the empirical CDF (right-continuous step function), ``ppf``
    its quantiles, ``pdf`` a Gaussian kernel estimate reflected at 0 with
    Silverman's robust bandwidth ``0.9 min(sd, IQR/1.34) N^(-1/5)``.  The Monte Carlo noise of the
    ``cdf`` is ``~ 1/sqrt(N_eff)`` with ``N_eff`` the number of draws
    times ``n`` (eigenvalues of one draw are strongly correlated, so the
    error is smaller than for i.i.d. values).

    Examples
    --------
    >>> law = EmpiricalSpectrumLaw([0.0, 1.0, 2.0, 3.0])
    >>> float(law.cdf(1.5)), float(law.mean())
    (0.5, 1.5)
    """

    def __init__(self, values, description=""):
        values = np.sort(np.asarray(values, dtype=float).ravel())
        if values.size < 2 or not np.all(np.isfinite(values)) or values[0] < 0:
            raise ValueError("values must hold at least two finite values >= 0")
        self.values = values
        self.description = description
        q75, q25 = np.quantile(values, [0.75, 0.25])
        spread = min(np.std(values), (q75 - q25) / SILVERMAN_IQR) or np.std(values)
        if not spread > 0:
            raise ValueError("values must not all be equal")
        self.bandwidth = SILVERMAN_FACTOR * spread * values.size ** (-0.2)

    def cdf(self, x):
        """Empirical CDF.

        Parameters
        ----------
        x : array_like
            Points.

        Returns
        -------
        numpy.ndarray
            Fraction of pooled values ``<= x``, of ``x``'s shape.
        """
        x = np.asarray(x, dtype=float)
        return np.searchsorted(self.values, x, side="right") / self.values.size

    def ppf(self, p):
        """Empirical quantiles.

        Parameters
        ----------
        p : array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        numpy.ndarray
            Quantiles of the pooled values, of ``p``'s shape.

        Raises
        ------
        ValueError
            If a ``p`` lies outside ``[0, 1]``.
        """
        p = np.asarray(p, dtype=float)
        if np.any((p < 0) | (p > 1)):
            raise ValueError("p must lie in [0, 1]")
        return np.quantile(self.values, p)

    def pdf(self, x):
        """Gaussian kernel density estimate, reflected at 0.

        Parameters
        ----------
        x : array_like
            Points.

        Returns
        -------
        numpy.ndarray
            Density of ``x``'s shape, 0 below 0.
        """
        x = np.asarray(x, dtype=float)
        h = self.bandwidth
        flat = x.ravel()
        out = np.empty(flat.shape)
        for start in range(0, flat.size, 256):
            block = flat[start:start + 256, None]
            z = (block - self.values[None, :]) / h
            w = (block + self.values[None, :]) / h
            out[start:start + 256] = (np.exp(-0.5 * z * z) + np.exp(-0.5 * w * w)).sum(1)
        out = np.where(flat < 0, 0.0, out)
        return (out / (self.values.size * h * np.sqrt(2 * np.pi))).reshape(x.shape)

    def moment(self, k):
        """Moment of the pooled values.

        Parameters
        ----------
        k : int
            Order.

        Returns
        -------
        float
        """
        return float(np.mean(self.values ** k))

    def mean(self):
        """Mean of the pooled values."""
        return self.moment(1)

    def support(self):
        """``(min, max)`` of the pooled values."""
        return float(self.values[0]), float(self.values[-1])


def finite_width_law(beta, n, d, *, draws=4, noise="signed", exact_degrees=2, rng=None):
    """Predicted squared singular values of ``sqrt(n)(A - 11^T/n)`` at head width ``d``.

    Theory note 15.

    The pooled spectrum of ``draws`` draws of the harmonic equivalent
    model, by default with the signed exact remainder (theory eq. (15.8)),
    or with Gaussian noise (eq. (15.6), ``noise="gaussian"``).  Measured
    against softmax attention in theory section 15.4 (4 draws each, the
    table of ``benchmarks/finite_width.py``); it stops holding for
    ``d <= 16`` and ``beta >= 1.5`` (theory section 15.5).

    Parameters
    ----------
    beta : float
        Inverse temperature, ``0 < beta <= MAX_FINITE_BETA``.
    n : int
        Tokens, ``n >= 2``.
    d : int
        Query/key head width, ``d >= 3``.
    draws : int, optional
        Draws pooled, ``>= 1``.  Cost: ``draws`` times one ``n x n``
        eigenvalue problem, ``O(n^3)`` whatever ``d`` (the degree-2 product is
        sampled through its Bartlett factor).
    noise : {"signed", "gaussian"}, optional
        The model of the degrees ``>= 3`` (see :func:`harmonic_equivalent_matrix`).
    exact_degrees : {2, 3}, optional
        ``3`` keeps degree 3 as a Gaussian product too (theory eq. (15.10), for
        narrow heads; measured in theory section 15.5).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    EmpiricalSpectrumLaw
        With ``cdf``, ``pdf``, ``ppf``, ``moment``, ``support``.

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong type or range.

    Examples
    --------
    >>> law = finite_width_law(0.5, n=64, d=16, draws=1, rng=0)
    >>> float(law.cdf(np.inf))
    1.0
    """
    beta, n, d = _check_args(beta, n, d)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    seeds = rng_generator(rng).spawn(int(draws))
    _check_exact_degrees(exact_degrees)
    values = [squared_singular_values(harmonic_equivalent_matrix(
        n, d, beta, noise=noise, exact_degrees=exact_degrees, rng=s)) for s in seeds]
    kept = "" if exact_degrees == 2 else f", degrees <= {exact_degrees} kept"
    return EmpiricalSpectrumLaw(np.concatenate(values),
                                description=f"harmonic equivalent ({noise} noise{kept}), "
                                            f"n={n}, d={d}, beta={beta}, {draws} draws")


# ---------------------------------------------------------------------------
# the Monte Carlo model in the registry


def _build_finite_seed(draw, rng):
    """Entropy of the draw's finite-width stream (four 64-bit words)."""
    return rng.integers(0, 2 ** 63, size=4, dtype=np.int64)


#: Options of the harmonic registry models (``validate(..., options=...)``).
_HARMONIC_OPTIONS = {"exact_degrees": 2}


def _finite_seed(draw):
    return np.random.SeedSequence([int(w) for w in draw.get("finite_seed")])


def _sample_harmonic(draw, noise):
    exact = draw.options.get("exact_degrees", _HARMONIC_OPTIONS["exact_degrees"])
    return harmonic_equivalent_matrix(draw.n, draw.d_qk, draw.beta, noise=noise,
                                      exact_degrees=exact, rng=_finite_seed(draw))


def _sample_harmonic_equivalent(draw):
    return _sample_harmonic(draw, "gaussian")


def _sample_harmonic_signed(draw):
    return _sample_harmonic(draw, "signed")


def _sample_hermite2(draw):
    return hermite_truncation_matrix(draw.n, draw.d_qk, draw.beta, order=2,
                                     rng=_finite_seed(draw))


def _sample_hermite3(draw):
    return hermite_truncation_matrix(draw.n, draw.d_qk, draw.beta, order=3,
                                     rng=_finite_seed(draw))


def _sample_row_variance(draw):
    return row_variance_matrix(draw.n, draw.d_qk, draw.beta, rng=_finite_seed(draw))


def _check_harmonic_model(n, d_qk, **options):
    if d_qk < MIN_FINITE_D:
        raise ValueError(f"d_qk must be >= {MIN_FINITE_D} for the harmonic model, got {d_qk}")
    if "exact_degrees" in options:
        _check_exact_degrees(options["exact_degrees"])


def _register_models():
    # Degree 0 of (15.3) is left out of (15.6), so no deterministic low-rank
    # part remains; the model has no n -> infinity limit law at fixed d, and
    # validate compares its sampled spectrum with softmax attention's instead
    # (compare_with, theory section 15.4).
    from ._models import Intermediate, Model, register_intermediate, register_model

    register_intermediate(Intermediate("finite_seed", _build_finite_seed, stream="finite"))
    # The steps of theory section 15.3 before the harmonic models.  They draw Q and K
    # from the same finite-width stream as the harmonic models (so they share them:
    # differences between these models are not sampling noise), independent of
    # attention's (so their two-sample distance to attention has the floor validate
    # reports).  Non-bulk parts as in the proof chain (theory eq. (7.8)): He_2(S) has
    # a conditional column mean (|k_j|^2/d - 1) and a row factor (|q_i|^2/d - 1), as
    # "normalized"; the row-normalised kernel keeps only the conditional column mean,
    # as "attention".
    for name, sample, equation, outliers, description in (
            ("hermite2", _sample_hermite2, "theory eq. (15.9)", 2,
             "(beta S + beta^2 He_2(S)/2 + alpha_2 W)/sqrt(n), Hermite truncation"),
            ("hermite3", _sample_hermite3, "theory eq. (15.9)", 2,
             "(beta S + beta^2 He_2(S)/2 + beta^3 He_3(S)/6 + alpha_3 W)/sqrt(n)"),
            ("row_variance", _sample_row_variance, "theory eq. (15.1)", 1,
             "(exp(beta s_ij - beta^2 |q_i|^2/(2d)) - 1)/sqrt(n), own row variance")):
        register_model(Model(name, sample, uses=("finite_seed",), outliers=outliers,
                             description=description, equation=equation,
                             check=_check_harmonic_model, compare_with="attention"))

    register_model(Model("harmonic_equivalent", _sample_harmonic_equivalent,
                         uses=("finite_seed",),
                         description="finite-width harmonic Gaussian equivalent of "
                                     "sqrt(n)(A - 11^T/n)",
                         equation="theory eq. (15.6)", check=_check_harmonic_model,
                         compare_with="attention", options=_HARMONIC_OPTIONS))
    register_model(Model("harmonic_signed", _sample_harmonic_signed,
                         uses=("finite_seed",),
                         description="harmonic equivalent with the signed exact remainder "
                                     "of degrees >= 3",
                         equation="theory eq. (15.8)", check=_check_harmonic_model,
                         compare_with="attention", options=_HARMONIC_OPTIONS))


_register_models()
