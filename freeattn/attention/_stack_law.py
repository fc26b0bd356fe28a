"""Laws of attention in depth (stacks of layers) and with anisotropic tokens.

Two families (theory/13_stacks.md):

- :func:`attention_stack_law`: the law of the squared singular values of the
  product ``B_L ... B_1`` of independent centred attention matrices
  ``B_l = sqrt(n) (A_l - 11^T/n)``: the free multiplicative convolution of
  the single-layer laws (theory eq. (13.2)), folded over the layers with
  :func:`freeattn.free_multiplicative`;
- :func:`freeattn.attention._token_law.token_attention_law` (reached as ``attention_law(beta, gamma,
  tokens=G)``): one layer fed with tokens whose Gram ``X X^T/D`` has the
  spectral law ``G`` (mean 1, equal token norms), the sample-covariance law
  with ratio 1 and population ``alpha**2 + beta**2 * (G ⊠ G ⊠ MP_{1/gamma})``
  (theory eq. (13.7)).

Both need the composition engine's ``⊠`` of the laws involved; where the
engine cannot build it the functions raise :class:`freeattn.ConvergenceError`
saying so.  The exact moments of both are available without the engine:
:func:`stack_moments` and :func:`token_moments` compute them in exact
arithmetic by the S-transform series (theory eqs. (13.3), (13.8)).
"""

import numbers
from fractions import Fraction

import numpy as np

from ..core._checks import Integer, check_int
from ._token_law import engine_build

__all__ = [
    "MAX_STACK_LAYERS",
    "MAX_STACK_LAW_LAYERS",
    "attention_stack_law",
    "free_multiplicative_moments",
    "stack_moments",
    "token_moments",
    "single_layer_moments",
]

#: Deepest stack served by the Monte Carlo models and the exact moments.
MAX_STACK_LAYERS = 64
#: Deepest stack whose law is solved.  The density is ``~ x**(-L/(L + 1))`` at 0
#: (theory eq. (13.11)), whose panel map ``x = w s**(L + 1)`` puts the first
#: nodes of a fine panel below the float64 range (``s ~ 1e-5``) beyond about
#: ``L = 60``; served and tested to 48 (2.3 s for law + pdf, RESULTS §15).
MAX_STACK_LAW_LAYERS = 48


# ---------------------------------------------------------------------------
# input checks


def _layer_parameters(beta, gamma, layers):
    """``(betas, gammas)`` as tuples of floats of length ``layers`` (checked)."""
    from ._laws import check_law_args

    layers = Integer(1, MAX_STACK_LAW_LAYERS).check(layers, "layers")

    def per_layer(value, name):
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be a real scalar or a sequence of {layers} reals, "
                            f"got {value!r}")
        if np.ndim(value) == 0:
            return [value] * layers
        seq = list(value)
        if len(seq) != layers:
            raise ValueError(f"{name} must have one value per layer ({layers}), "
                             f"got {len(seq)}")
        return seq

    pairs = [check_law_args(b, g)
             for b, g in zip(per_layer(beta, "beta"), per_layer(gamma, "gamma"))]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def attention_stack_law(beta, gamma=1.0, *, layers=1, options=None):
    """Law of the squared singular values of a stack of L attention layers (theory eq. (13.2)).

    ``B_l = sqrt(n) (A_l - 11^T/n)`` with independent queries and keys per
    layer; the layers are asymptotically free and R-diagonal, so the law is
    ``nu_1 ⊠ ... ⊠ nu_L`` with ``nu_l = attention_law(beta_l, gamma_l).squared()``.

    Parameters
    ----------
    beta : float or sequence of float
        Inverse temperature(s), each in ``[1e-8, 4]``; a scalar is used for
        every layer.
    gamma : float or sequence of float, optional
        ``d_qk / n`` per layer, each in ``[1e-4, 1e4]``.
    layers : int, optional
        Depth ``L``, ``1 <= L <= 48`` (:data:`MAX_STACK_LAW_LAYERS`; the
        Monte Carlo models and :func:`stack_moments` go to 64).
    options : SolverOptions, optional
        Tolerances of the engine.

    Returns
    -------
    SpectralLaw
        The eigenvalue law of ``(B_L ... B_1)(B_L ... B_1)^T / 1`` (squared
        singular values; no further scaling: its mean is ``prod theta1_l``).
        For ``L = 1`` it is ``attention_law(beta, gamma).squared()`` itself.

    Raises
    ------
    TypeError, ValueError
        For a non-integer or out-of-range ``layers``, or a ``beta``/``gamma``
        that is out of range or does not have one value per layer.
    ConvergenceError
        If the engine's ``⊠`` does not converge or cannot be built for these
        laws.

    Notes
    -----
    The exact moments are :func:`stack_moments` (theory eq. (13.3)); the mean
    is ``prod_l theta1_l`` and, for two layers,
    ``m2 = m2_1 m1_2**2 + m1_1**2 m2_2 - m1_1**2 m1_2**2``.

    Examples
    --------
    >>> import freeattn
    >>> one = attention_stack_law(1.0, 1.0, layers=1)
    >>> one is freeattn.attention_law(1.0, 1.0).squared()
    True
    """
    from ._laws import attention_law
    from ..compose._chain import product_chain

    betas, gammas = _layer_parameters(beta, gamma, layers)
    laws = [attention_law(b, g, options=options).squared() for b, g in zip(betas, gammas)]
    if len(laws) == 1:
        return laws[0]

    def build():
        # one system in all the layers (theory eqs. (14.8), (14.21)); folding
        # pairwise would first locate the support of every partial product
        return product_chain(laws, options=options)

    return engine_build(build, f"the product of {layers} attention laws (beta={betas}, "
                          f"gamma={gammas})")


# ---------------------------------------------------------------------------
# exact moments (no engine): S-transform series


def _exact_div(a, b):
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        q = Fraction(a, b)
        return int(q) if q.denominator == 1 else q
    return a / b


def _mul(a, b, k):
    """Product of two power series (coefficient lists from ``z**0``), truncated to order k."""
    return [sum(a[i] * b[j - i] for i in range(j + 1) if i < len(a) and j - i < len(b))
            for j in range(k + 1)]


def _reversion(f, k):
    """Compositional inverse of ``f = f[1] z + f[2] z**2 + ...`` (``f[0] = 0``) to order k.

    Newton-free fixed point ``g = (w - sum_{j>=2} f_j g**j)/f_1``, exact in
    the arithmetic of the coefficients (theory eq. (8.5)).
    """
    g = [0] * (k + 1)
    for order in range(1, k + 1):
        # coefficient of w**order in sum_{j>=2} f_j g**j (only lower g terms enter)
        acc = 0
        power = g[:]
        for j in range(2, order + 1):
            power = _mul(power, g, order) if j > 2 else _mul(g, g, order)
            if j < len(f):
                acc += f[j] * power[order]
        g[order] = _exact_div((1 if order == 1 else 0) - acc, f[1])
    return g


def free_multiplicative_moments(a, b):
    """Moments of ``mu ⊠ nu`` from those of ``mu`` and ``nu`` (theory eq. (13.3)).

    With ``psi(z) = sum_{k>=1} m_k z**k`` and ``chi = psi^{-1}``, the
    S-transform is ``S(z) = chi(z) (1 + z)/z`` and ``S_{mu⊠nu} = S_mu S_nu``,
    i.e. ``chi_{mu⊠nu}(z) = chi_mu(z) chi_nu(z) (1 + z)/z``.

    Parameters
    ----------
    a, b : sequence
        Moments ``[m_1, ..., m_K]`` of each law (``m_1 != 0``), same length.
        Integers, fractions or sympy numbers give exact results; floats (with
        positive first moments) give the exact product of the given floats,
        rounded (theory eq. (8.24)).

    Returns
    -------
    list
        ``[m_1, ..., m_K]`` of ``mu ⊠ nu``.

    Raises
    ------
    ValueError
        On sequences of different or zero length, or ``m_1 = 0``.

    Examples
    --------
    >>> free_multiplicative_moments([1, 2, 5], [1, 2, 5])     # MP(1) ⊠ MP(1): Fuss-Catalan
    [1, 3, 12]
    """
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ValueError(f"a and b must be non-empty moment sequences of one length, got "
                         f"lengths {len(a)} and {len(b)}")
    if a[0] == 0 or b[0] == 0:
        raise ValueError("the first moments must be non-zero (the S-transform needs m_1 != 0)")
    k = len(a)
    if any(isinstance(v, (float, np.floating)) for v in a + b) and a[0] > 0 and b[0] > 0:
        return _float_product(a, b)
    chi_a = _reversion([0] + a, k)
    chi_b = _reversion([0] + b, k)
    # chi_a chi_b (1 + z)/z: chi_a chi_b starts at z**2
    prod = _mul(chi_a, chi_b, k + 1)
    shifted = prod[1:] + [0]                      # divided by z
    chi = [shifted[j] + (shifted[j - 1] if j >= 1 else 0) for j in range(k + 1)]
    chi[0] = 0
    return _reversion(chi, k)[1:]


def _float_product(a, b):
    """:func:`free_multiplicative_moments` of float moments: the floats are taken as
    the exact binary rationals they are, the product is computed in fixed point at
    a precision verified by a second run (theory eqs. (8.21)-(8.24)), then rounded."""
    from ..algebra._moment_series import free_multiplicative_series, from_fractions
    from ..laws._law_base import verified_series

    exact = [[Fraction(1)] + [Fraction(float(v)) for v in seq] for seq in (a, b)]
    radii = [max(float(abs(m)) ** (1.0 / n) for n, m in enumerate(seq) if n) for seq in exact]

    def compute(prec):
        sa, sb = (from_fractions(seq, r, prec) for seq, r in zip(exact, radii))
        return free_multiplicative_series(sa, sb, prec)

    series = verified_series(compute, len(a), "a free multiplicative convolution")
    return [series.to_float(n) for n in range(1, len(a) + 1)]


def _mp_moments(ratio, k):
    """Moments of MP(variance 1, ratio): Narayana polynomials ``sum_j N(m, j) ratio**(j-1)``."""
    from math import comb

    return [sum(_exact_div(comb(m, j) * comb(m, j - 1), m) * ratio ** (j - 1)
                for j in range(1, m + 1)) for m in range(1, k + 1)]


def single_layer_moments(beta, gamma, k, *, tokens_moments=None):
    """Moments ``m_1..m_k`` of ``attention_law(beta, gamma, tokens=G).squared()``.

    Free cumulants of the ratio-1 sample-covariance law are the moments of
    its population ``alpha**2 + beta**2 pi`` (theory eq. (13.8)), with
    ``pi = MP_{1/gamma}`` (isotropic) or ``G ⊠ G ⊠ MP_{1/gamma}`` (eq. (13.7)).

    Parameters
    ----------
    beta, gamma : number
        Exact (int, Fraction, sympy) for exact moments; floats give floats.
    k : int
        Number of moments, ``k >= 1``.
    tokens_moments : sequence, optional
        Moments ``[1, g_2, ..., g_k]`` of the token-Gram law ``G``.

    Returns
    -------
    list
        ``[m_1, ..., m_k]``.

    Examples
    --------
    >>> import sympy
    >>> b = sympy.Integer(1)
    >>> m = single_layer_moments(b, 1, 2)
    >>> [sympy.simplify(x - y) for x, y in zip(m, [sympy.E - 1, 2*(sympy.E - 1)**2 + 1])]
    [0, 0]
    """
    from ..algebra._cumulants import free_cumulants_to_moments

    k = check_int(k, "k", minimum=1)
    try:
        import sympy
        exact = isinstance(beta, (sympy.Basic, numbers.Rational)) and not isinstance(beta, float)
    except ImportError:  # pragma: no cover - sympy is a dependency
        exact = False
    if exact:
        theta2 = sympy.sympify(beta) ** 2
        alpha2 = sympy.exp(theta2) - 1 - theta2
    else:
        theta2 = float(beta) ** 2
        alpha2 = float(np.expm1(theta2)) - theta2
    ratio = _exact_div(1, gamma) if exact or isinstance(gamma, numbers.Integral) else 1.0 / gamma
    pi = _mp_moments(ratio, k)
    if tokens_moments is not None:
        g = list(tokens_moments)[:k]
        if len(g) != k:
            raise ValueError(f"tokens_moments must have at least k = {k} moments, got {len(g)}")
        pi = free_multiplicative_moments(free_multiplicative_moments(g, g), pi)
    from math import comb
    # moments of alpha2 + theta2 * pi (binomial expansion), i.e. the free cumulants
    pim = [1] + list(pi)
    kappa = [sum(comb(m, j) * alpha2 ** (m - j) * theta2 ** j * pim[j] for j in range(m + 1))
             for m in range(1, k + 1)]
    moments = free_cumulants_to_moments(kappa)[1:]
    if exact:
        moments = [sympy.expand(m) for m in moments]
    return list(moments)


def stack_moments(beta, gamma, layers, k):
    """Exact moments of :func:`attention_stack_law`, in exact arithmetic (theory eq. (13.3)).

    Parameters
    ----------
    beta, gamma : number or sequence
        Per-layer values (a scalar for every layer); exact numbers give exact moments.
    layers : int
        ``L >= 1``.
    k : int
        Number of moments.

    Returns
    -------
    list

    Examples
    --------
    >>> import sympy
    >>> m = stack_moments(sympy.Integer(1), 1, 2, 1)
    >>> sympy.simplify(m[0] - (sympy.E - 1)**2)
    0
    """
    layers = check_int(layers, "layers", minimum=1)
    betas = [beta] * layers if np.ndim(beta) == 0 else list(beta)
    gammas = [gamma] * layers if np.ndim(gamma) == 0 else list(gamma)
    if len(betas) != layers or len(gammas) != layers:
        raise ValueError(f"beta and gamma must be scalars or have {layers} values")
    out = single_layer_moments(betas[0], gammas[0], k)
    for b, g in zip(betas[1:], gammas[1:]):
        out = free_multiplicative_moments(out, single_layer_moments(b, g, k))
    return out


def token_moments(beta, gamma, tokens_moments, k):
    """Exact moments of ``attention_law(beta, gamma, tokens=G).squared()`` (eq. (13.7)).

    Parameters
    ----------
    beta, gamma : number
    tokens_moments : sequence
        ``[1, g_2, ..., g_k]``, the moments of ``G``.
    k : int

    Returns
    -------
    list

    Examples
    --------
    >>> token_moments(1.0, 1.0, [1, 1], 2) == single_layer_moments(1.0, 1.0, 2)
    True
    """
    return single_layer_moments(beta, gamma, k, tokens_moments=tokens_moments)
