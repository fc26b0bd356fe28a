"""Symbolic derivation (sympy) of the linear model's coefficients.

Nothing here is typed in: every closed form is the output of a Gaussian
expectation computed by sympy from the definition of the feature map
``f(x) = exp(beta*x - beta**2/2) - 1`` (theory eq. (2.1)).  The expectations
are of sums of ``polynomial(x) * exp(affine(x))`` terms, which
:func:`gaussian_expectation` evaluates exactly by completing the square;
anything else falls back to ``sympy.integrate``.

See theory/02_coefficients.md (coefficients, Hermite bookkeeping),
theory/03_centering.md (normalizer, conditional mean) and
theory/04_covariance.md (conditional covariance, the Taylor step to
``Sigma_G``).
"""

import fractions
import functools
import numbers

import numpy as np
import sympy as sp

__all__ = [
    "BETA",
    "gaussian_expectation",
    "feature",
    "derive_linear_coefficients",
    "derive_hermite_coefficient",
    "derive_hermite_norm",
    "derive_order_variance",
    "derive_theta1_series",
    "derive_normalizer_mean",
    "derive_conditional_mean",
    "derive_conditional_covariance",
    "derive_taylor_step",
    "gram_symbols",
    "as_sympy_beta",
]

#: The inverse temperature as a positive sympy symbol.
BETA = sp.Symbol("beta", positive=True)

_X = sp.Symbol("x", real=True)
_Z1 = sp.Symbol("z1", real=True)
_Z2 = sp.Symbol("z2", real=True)


def gram_symbols():
    """Symbols ``(rho_jj, rho_kk, rho_jk)`` for two entries of the key Gram matrix.

    Returns
    -------
    tuple of sympy.Symbol
        ``rho_jj`` and ``rho_kk`` are positive (squared key norms over
        ``d_qk``), ``rho_jk`` is real.
    """
    return (sp.Symbol("rho_jj", positive=True), sp.Symbol("rho_kk", positive=True),
            sp.Symbol("rho_jk", real=True))


def _split_term(term, var):
    """Write one product term as ``coeff * poly(var) * exp(arg(var))``."""
    coeff, dependent = term.as_independent(var, as_Add=False)
    poly, arg = sp.Integer(1), sp.Integer(0)
    for factor in sp.Mul.make_args(dependent):
        if isinstance(factor, sp.exp):
            arg += factor.args[0]
        elif factor.is_Pow and isinstance(factor.base, sp.exp):
            arg += factor.base.args[0] * factor.exp
        else:
            poly *= factor
    return coeff, sp.expand(poly), sp.expand(arg)


def gaussian_expectation(expr, var):
    """``E[expr]`` for ``var ~ N(0, 1)``, exactly.

    Each term ``p(x) * exp(a*x + c)`` with ``p`` a polynomial is evaluated by
    completing the square, ``E[p(x) e^{a x}] = e^{a^2/2} E[p(x + a)]``, and the
    Gaussian moments ``E[x^m] = (m - 1)!!`` (``m`` even, else 0).  Terms of any
    other form are integrated against the Gaussian density by
    ``sympy.integrate``.

    Parameters
    ----------
    expr : sympy.Expr
        Integrand, a function of ``var``.
    var : sympy.Symbol
        The standard Gaussian variable.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> import sympy as sp
    >>> x, t = sp.symbols("x t", real=True)
    >>> gaussian_expectation(x**4, x)
    3
    >>> gaussian_expectation(sp.exp(t * x), x)
    exp(t**2/2)
    """
    expr = sp.powsimp(sp.expand(expr, power_exp=True, mul=True, multinomial=True),
                      combine="exp")
    total = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(expr)):
        coeff, poly, arg = _split_term(term, var)
        slope = sp.diff(arg, var)
        # Affine exponent: the slope does not depend on var.
        if poly.is_polynomial(var) and sp.simplify(sp.diff(slope, var)) == 0:
            offset = arg.subs(var, 0)
            shifted = sp.Poly(sp.expand(poly.subs(var, var + slope)), var)
            moments = sum(c * sp.factorial2(m - 1) for (m,), c in shifted.terms()
                          if m % 2 == 0)
            total += coeff * sp.exp(offset + slope**2 / 2) * moments
        else:
            density = sp.exp(-var**2 / 2) / sp.sqrt(2 * sp.pi)
            total += sp.integrate(term * density, (var, -sp.oo, sp.oo))
    return total


def _factor_exponents(expr):
    """Factor the argument of every ``exp`` in ``expr`` (for readable output)."""
    return expr.replace(sp.exp, lambda arg: sp.exp(sp.factor(arg)))


def feature(beta, x):
    """The centred feature map ``f(x) = exp(beta*x - beta**2/2) - 1``, theory eq. (2.1)."""
    return sp.exp(beta * x - beta**2 / 2) - 1


@functools.lru_cache(maxsize=None)
def derive_linear_coefficients():
    """Derive ``theta1``, ``theta2``, ``alpha2`` as expressions in :data:`BETA`.

    ``theta1 = E[f(x)^2]`` (theory eq. (2.4)), ``theta2 = E[f'(x)]^2`` (theory
    eq. (2.5)), ``alpha2 = theta1 - theta2`` (theory eq. (2.6)), each computed
    as a Gaussian expectation and simplified.

    Returns
    -------
    dict
        Keys ``"theta1"``, ``"theta2"``, ``"alpha2"``.

    Examples
    --------
    >>> c = derive_linear_coefficients()
    >>> c["theta1"], c["theta2"], c["alpha2"]
    (exp(beta**2) - 1, beta**2, -beta**2 + exp(beta**2) - 1)
    """
    f = feature(BETA, _X)
    theta1 = sp.simplify(gaussian_expectation(f**2, _X))
    theta2 = sp.simplify(gaussian_expectation(sp.diff(f, _X), _X) ** 2)
    return {"theta1": theta1, "theta2": theta2, "alpha2": sp.simplify(theta1 - theta2)}


@functools.lru_cache(maxsize=None)
def derive_hermite_norm(k):
    """``E[He_k(x)^2]`` for the probabilists' Hermite polynomial ``He_k``.

    Equals ``k!`` (theory eq. (2.2)); derived, not assumed.

    Examples
    --------
    >>> [derive_hermite_norm(k) for k in range(5)]
    [1, 1, 2, 6, 24]
    """
    return sp.expand(gaussian_expectation(sp.hermite_prob(k, _X) ** 2, _X))


@functools.lru_cache(maxsize=None)
def derive_hermite_coefficient(k):
    """Hermite coefficient ``c_k = E[g(x) He_k(x)] / E[He_k(x)^2]``, ``g = 1 + f``.

    ``g(x) = exp(beta*x - beta**2/2)``; ``c_k = beta**k / k!`` for every
    ``k >= 0`` (theory eq. (2.3)).  The feature ``f = g - 1`` has the same
    coefficients except ``c_0 = 0``: centring removes order 0, the common mode.

    Examples
    --------
    >>> [derive_hermite_coefficient(k) for k in range(5)]
    [1, beta, beta**2/2, beta**3/6, beta**4/24]
    """
    generating = feature(BETA, _X) + 1
    projection = gaussian_expectation(generating * sp.hermite_prob(k, _X), _X)
    return sp.simplify(projection / derive_hermite_norm(k))


@functools.lru_cache(maxsize=None)
def derive_order_variance(k):
    """Variance carried by Hermite order ``k``: ``c_k^2 E[He_k^2] = beta**(2k)/k!``.

    Theory eq. (2.7).  Order 0 gives 1, the squared common mode, which the
    centred feature ``f`` does not carry.

    Examples
    --------
    >>> [derive_order_variance(k) for k in range(4)]
    [1, beta**2, beta**4/2, beta**6/6]
    """
    return sp.simplify(derive_hermite_coefficient(k) ** 2 * derive_hermite_norm(k))


def derive_theta1_series():
    """Sum the order variances over all orders, ``sum_k beta**(2k)/k!``.

    The general term is read off :func:`derive_order_variance` (checked
    against it for the first orders) and summed by sympy; the result equals
    ``theta1`` (theory eqs. (2.4) and (2.7)).

    Examples
    --------
    >>> derive_theta1_series()
    exp(beta**2) - 1
    """
    k = sp.Symbol("k", integer=True, positive=True)
    general = BETA ** (2 * k) / sp.factorial(k)
    for order in range(1, 4):
        if sp.simplify(general.subs(k, order) - derive_order_variance(order)) != 0:
            raise ArithmeticError(f"order variance {order} does not match beta**(2k)/k!")
    return sp.simplify(sp.summation(general, (k, 1, sp.oo)))


def derive_normalizer_mean():
    """``E[exp(beta*S_ij) | K] = exp(beta**2 rho_jj / 2)``, theory eq. (3.1).

    ``S_ij = sqrt(rho_jj) z`` with ``z ~ N(0, 1)`` given the keys.

    Examples
    --------
    >>> derive_normalizer_mean()
    exp(beta**2*rho_jj/2)
    """
    rho_jj = gram_symbols()[0]
    return sp.simplify(gaussian_expectation(sp.exp(BETA * sp.sqrt(rho_jj) * _Z1), _Z1))


def derive_conditional_mean():
    """``E[f(S_ij) | K] = exp(beta**2 (rho_jj - 1)/2) - 1``, theory eq. (3.5).

    Examples
    --------
    >>> derive_conditional_mean()
    exp(beta**2*(rho_jj - 1)/2) - 1
    """
    rho_jj = gram_symbols()[0]
    mean = gaussian_expectation(feature(BETA, sp.sqrt(rho_jj) * _Z1), _Z1)
    return _factor_exponents(sp.simplify(mean + 1)) - 1


def derive_conditional_covariance():
    """Conditional covariance ``Cov(f(S_ij), f(S_ik) | K)``, theory eq. (4.2).

    Given the keys, ``(S_ij, S_ik)`` is centred Gaussian with covariance
    ``[[rho_jj, rho_jk], [rho_jk, rho_kk]]``; it is written through two
    independent standard Gaussians (Cholesky),
    ``S_ij = sqrt(rho_jj) z1``,
    ``S_ik = rho_jk/sqrt(rho_jj) z1 + sqrt(rho_kk - rho_jk**2/rho_jj) z2``,
    and the expectation is taken over ``z2``, then ``z1``.

    Returns
    -------
    sympy.Expr
        In the symbols of :func:`gram_symbols` and :data:`BETA`, in the form
        ``exp(beta**2 (rho_jj + rho_kk - 2)/2) * (exp(beta**2 rho_jk) - 1)``.

    Examples
    --------
    >>> derive_conditional_covariance()
    (exp(beta**2*rho_jk) - 1)*exp(beta**2*(rho_jj + rho_kk - 2)/2)
    """
    rho_jj, rho_kk, rho_jk = gram_symbols()
    s_j = sp.sqrt(rho_jj) * _Z1
    s_k = rho_jk / sp.sqrt(rho_jj) * _Z1 + sp.sqrt(rho_kk - rho_jk**2 / rho_jj) * _Z2
    second = gaussian_expectation(
        gaussian_expectation(feature(BETA, s_j) * feature(BETA, s_k), _Z2), _Z1)
    mean_j = gaussian_expectation(feature(BETA, s_j), _Z1)
    mean_k = gaussian_expectation(gaussian_expectation(feature(BETA, s_k), _Z2), _Z1)
    cov = sp.expand(sp.simplify(second - mean_j * mean_k))
    # Factor the common envelope exp(beta**2 (rho_jj + rho_kk - 2)/2) out.
    envelope = sp.exp(BETA**2 * (rho_jj + rho_kk - 2) / 2)
    inner = sp.simplify(sp.expand(sp.powsimp(cov / envelope)))
    return sp.Mul(sp.factor(inner), envelope, evaluate=True)


def derive_taylor_step(order=1):
    """Taylor expansion of ``Sigma_f - Sigma_G`` at ``rho_jj = rho_kk = 1``, ``rho_jk = 0``.

    With ``rho_jj = 1 + eps_j``, ``rho_kk = 1 + eps_k``, ``rho_jk = r`` (all
    small: ``O(d_qk**-1/2)`` for Gaussian keys), expands to total degree
    ``order`` in ``(eps_j, eps_k, r)`` (theory eq. (4.5)).

    Parameters
    ----------
    order : int, optional
        Total degree kept.

    Returns
    -------
    dict
        ``"offdiagonal"``: expansion of ``(Sigma_f - Sigma_G)_jk`` for
        ``j != k``; ``"diagonal"``: expansion of ``(Sigma_f - Sigma_G)_jj``
        in ``eps_j``.  Both in the symbols ``eps_j``, ``eps_k``, ``r``.

    Examples
    --------
    >>> step = derive_taylor_step()
    >>> step["offdiagonal"]
    0
    >>> step["diagonal"]
    2*beta**2*eps_j*(exp(beta**2) - 1)
    """
    rho_jj, rho_kk, rho_jk = gram_symbols()
    eps_j, eps_k, r, t = sp.symbols("eps_j eps_k r t", real=True)
    coefficients = derive_linear_coefficients()
    sigma_f = derive_conditional_covariance()
    at = {rho_jj: 1 + t * eps_j, rho_kk: 1 + t * eps_k, rho_jk: t * r}
    sigma_g_off = coefficients["theta2"] * rho_jk
    off = sp.series((sigma_f - sigma_g_off).subs(at), t, 0, order + 1).removeO()
    # On the diagonal rho_jk = rho_kk = rho_jj.
    sigma_f_diag = sigma_f.subs({rho_kk: rho_jj, rho_jk: rho_jj})
    sigma_g_diag = coefficients["theta2"] * rho_jj + coefficients["alpha2"]
    diag = sp.series((sigma_f_diag - sigma_g_diag).subs(rho_jj, 1 + t * eps_j),
                     t, 0, order + 1).removeO()
    return {"offdiagonal": sp.factor_terms(sp.expand(off.subs(t, 1))),
            "diagonal": sp.factor_terms(sp.expand(diag.subs(t, 1)))}


def as_sympy_beta(beta):
    """Convert ``beta`` for the exact path; check it is real and positive.

    Accepts a sympy expression or symbol, an ``int``, a
    :class:`fractions.Fraction` or a float (taken at its exact binary value:
    ``0.5`` is ``1/2``, but ``0.1`` is ``3602879701896397/36028797018963968``;
    pass ``Fraction("0.1")`` or ``sympy.Rational(1, 10)`` for a decimal).

    Raises
    ------
    TypeError
        For strings, bools, complex values and other non-real input.
    ValueError
        For ``beta <= 0`` or NaN or infinity.
    """
    if isinstance(beta, (str, bytes, bool, np.bool_)):
        raise TypeError(f"beta must be a positive real number or a sympy expression "
                        f"(allowed range (0, oo)), got {type(beta).__name__} {beta!r}")
    if isinstance(beta, fractions.Fraction):
        value = sp.Rational(beta.numerator, beta.denominator)
    elif isinstance(beta, sp.Basic):
        value = beta
    elif isinstance(beta, (numbers.Integral, np.integer)):
        value = sp.Integer(int(beta))
    elif isinstance(beta, (numbers.Real, np.floating)):
        if not np.isfinite(beta):
            raise ValueError(f"beta must be finite and > 0 (allowed range (0, oo)), "
                             f"got {beta!r}")
        value = sp.Rational(float(beta))
    else:
        raise TypeError(f"beta must be a positive real number or a sympy expression "
                        f"(allowed range (0, oo)), got {type(beta).__name__} {beta!r}")
    if not isinstance(value, sp.Expr) or value.is_extended_real is False:
        raise TypeError(f"beta must be real (allowed range (0, oo)), got {beta!r}")
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or value.is_positive is False:
        raise ValueError(f"beta must be finite and > 0 (allowed range (0, oo)), got {beta!r}")
    return value
