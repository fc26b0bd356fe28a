"""The attention law for tokens with a non-isotropic Gram (theory section 13.4).

``attention_law(beta, gamma, tokens=G)`` checks its arguments and hands a
token-Gram law other than the unit point mass to :func:`token_attention_law`,
which builds the sample-covariance law of theory eq. (13.7) with the
composition engine.
"""

from functools import lru_cache

from ..core._errors import ConvergenceError
from ..laws._law_base import SpectralLaw

__all__ = ["token_attention_law", "check_tokens", "is_unit_point_mass", "TOKEN_MEAN_RTOL"]

#: Relative tolerance on the token-Gram law's mean being 1 (the Gram ``X X^T/D``
#: of tokens with unit mean squared norm; theory eq. (13.5)).
TOKEN_MEAN_RTOL = 1e-6


def check_tokens(tokens):
    """A token-Gram law: a :class:`freeattn.SpectralLaw` on ``[0, oo)`` with mean 1."""
    if not isinstance(tokens, SpectralLaw):
        raise TypeError(f"tokens must be a freeattn law (the spectral law of the token Gram "
                        f"X X^T/D, e.g. freeattn.point_masses(...)) or None, got "
                        f"{type(tokens).__name__}")
    lo = tokens.support()[0]
    if lo < 0:
        raise ValueError(f"tokens must be a law on [0, inf) (a Gram spectrum), its support "
                         f"starts at {lo!r}")
    mean = float(tokens.mean())
    if not abs(mean - 1.0) <= TOKEN_MEAN_RTOL:
        raise ValueError(f"tokens must have mean 1 (the Gram X X^T/D of tokens with unit mean "
                         f"squared norm, theory eq. (13.5)), got mean {mean!r}; rescale the "
                         f"law by 1/mean with law.affine(0, 1/mean)")
    return tokens


def is_unit_point_mass(tokens):
    lo, hi = tokens.support()
    return lo == hi == 1.0


# ---------------------------------------------------------------------------
# the laws


def engine_build(build, what):
    """Run an engine construction; a law hook the engine needs but a constituent does
    not implement (``NotImplementedError``) becomes ConvergenceError naming ``what``."""
    try:
        return build()
    except NotImplementedError as exc:
        raise ConvergenceError(
            f"the composition engine could not build {what} "
            f"({type(exc).__name__}: {exc}); no law is returned") from exc


@lru_cache(maxsize=16)
def _token_chain(tokens, gamma, options):
    """``pi = G ⊠ G ⊠ MP_{1/gamma}`` as one system (theory eq. (14.8)), shared by the
    heads of a layer: it does not depend on ``beta`` (eq. (13.7)), so its support
    and its tables of warm starts (eqs. (14.15), (14.16)) are built once per token
    law and ``gamma``."""
    from ..compose._chain import ProductChainLaw
    from ..laws._elementary import marchenko_pastur

    return ProductChainLaw([tokens, tokens, marchenko_pastur(1.0, 1.0 / gamma,
                                                             options=options)], options)


def token_attention_law(beta, gamma, tokens, *, options=None):
    # beta, gamma and tokens arrive checked by attention_law (tokens not the unit
    # point mass, which is the isotropic law itself).
    """Single-layer law with token Gram law ``tokens`` (theory eq. (13.7)).

    Reached as ``freeattn.attention_law(beta, gamma, tokens=G)``.  The law of
    ``s**2`` is ``sample_covariance(alpha**2 + beta**2 * pi, 1)`` with
    ``pi = G ⊠ G ⊠ MP_{1/gamma}``.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``1e-8 <= beta <= 4``.
    gamma : float
        ``d_qk / n``, in ``[1e-4, 1e4]``.
    tokens : SpectralLaw
        Spectral law of the token Gram ``X X^T/D`` (``n x n``), mean 1 (to
        :data:`TOKEN_MEAN_RTOL`), support in ``[0, oo)``; the tokens must
        have equal norms (theory section 13.4).
    options : SolverOptions, optional

    Returns
    -------
    SingularValueLaw
        ``.squared()`` is the law of ``s**2``; for the point mass at 1 this
        is ``attention_law(beta, gamma)`` itself.

    Raises
    ------
    TypeError, ValueError
        On bad ``beta``, ``gamma`` or ``tokens`` (not a law, negative
        support, mean not 1).
    ConvergenceError
        If the engine's ``⊠`` or sample-covariance solve fails or cannot be
        built for ``tokens``.

    Examples
    --------
    >>> import freeattn
    >>> law = freeattn.attention_law(1.0, 1.0, tokens=freeattn.point_masses([1.0]))
    >>> law is freeattn.attention_law(1.0, 1.0)
    True
    """
    from ..compose._subordination import free_multiplicative, sample_covariance
    from ..laws._elementary import marchenko_pastur
    from ..laws._law_base import SingularValueLaw
    from ._coefficients import linear_coefficients

    b, g = float(beta), float(gamma)
    c = linear_coefficients(b)

    def build():
        from ..compose._analytic import analytic_multiplicative
        from ..compose._rational_solver import RationalSolver

        if tokens._s_transform() is None:
            # no rational S-transform (an empirical Gram, many atoms): analytic
            # subordination (theory eqs. (14.4)-(14.6)) over pi = G ⊠ G ⊠ MP as one
            # system (eq. (14.8)), which the outer solve sees warm-started (eqs.
            # (14.15), (14.16)); as nested laws, pi would be solved point by point
            # (section 8.4)
            population = _token_chain(tokens, g, options).affine(float(c.alpha2),
                                                                  float(c.theta2))
        else:
            mp_g = marchenko_pastur(1.0, 1.0 / g, options=options)
            pi = free_multiplicative(free_multiplicative(tokens, tokens), mp_g)
            population = pi.affine(float(c.alpha2), float(c.theta2))
            law = sample_covariance(population, 1.0, options=options)
            if isinstance(getattr(law, "_solver", None), RationalSolver):
                try:
                    # the algebraic path (theory section 8) is fast where it applies;
                    # its support is located now so that a failure falls back here
                    law.interval_details()
                    return SingularValueLaw(law)
                except ConvergenceError:
                    pass
        law = analytic_multiplicative(marchenko_pastur(1.0, 1.0, options=options),
                                      population, options=options)
        return SingularValueLaw(law)

    lo, hi = tokens.support()
    return engine_build(build, f"the attention law with a token Gram law on [{lo:.4g}, {hi:.4g}] "
                          f"(beta={b}, gamma={g})")
