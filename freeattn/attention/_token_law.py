"""The attention law for tokens with a non-isotropic Gram (theory section 13.4).

``attention_law(beta, gamma, tokens=G)`` checks its arguments and hands a
token-Gram law other than the unit point mass to :func:`token_attention_law`,
which builds the sample-covariance law of theory eq. (13.7) with the
composition engine.
"""

from functools import lru_cache

import numpy as np

from ..compose._dyson import DysonLaw, DysonSystem, law_nodes
from ..core._errors import ConvergenceError
from ..core._options import DEFAULT_OPTIONS
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
        built for ``tokens``, and the Dyson system of theory eq. (13.12) (tried
        then, for a Gram law without an atom at 0) fails too.

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
    what = f"the attention law with a token Gram law on [{lo:.4g}, {hi:.4g}] (beta={b}, gamma={g})"
    try:
        law = engine_build(build, what)
        # built now, so that a failure of the engine falls back to eq. (13.12) here
        law.squared()._representation()
        return law
    except ConvergenceError as exc:
        loc, mass = tokens.atoms()
        if np.any((loc <= 0.0) & (mass > 0.0)):
            raise        # a rank-deficient Gram: eq. (13.12) is not set up for its atom
        try:
            dyson = TokenHeadLaw(b, g, tokens, DEFAULT_OPTIONS if options is None else options)
            dyson._representation()
        except ConvergenceError as exc2:
            raise ConvergenceError(f"{exc}; the Dyson system (theory eq. (13.12)): "
                                   f"{exc2}") from exc2
        return SingularValueLaw(dyson)


# ---------------------------------------------------------------------------
# the same law as a Dyson system (theory eq. (13.12)): the fallback of the engine


class TokenHeadSystem(DysonSystem):
    """The Dyson system (13.12) of one head's linear model on tokens of Gram law ``G``.

    Unknowns ``w = (e1, e2, eps)``; the keys' level of eq. (9.26) without values and
    output projection.
    """

    def __init__(self, theta2, alpha2, gamma, nodes, weights):
        self.b2, self.a2, self.gamma = float(theta2), float(alpha2), float(gamma)
        self.g = np.asarray(nodes, float)
        self.gpow = np.array([np.asarray(weights, float) * self.g ** k for k in range(3)])
        self._set_far([self.b2, self.a2, 1.0 / self.gamma])       # eq. (13.12) at z = oo
        self.mean = self.b2 + self.a2                               # theta1, eq. (13.8)

    def phi(self, w, z):
        e1, e2, eps = w
        b2, a2, gam = self.b2, self.a2, self.gamma
        P = self.gpow
        n = z.shape[0]
        zero, one = np.zeros(n, complex), np.ones(n, complex)
        q = 1.0 / ((e2 - z)[:, None] + e1[:, None] * self.g[None, :])
        q2 = q * q
        phi1, phi2 = q @ P[1], q @ P[0]
        t0, t1, t2 = q2 @ P[0], q2 @ P[1], q2 @ P[2]
        du1 = b2 * np.array([-t2, -t1, zero])
        du2 = a2 * np.array([-t1, -t0, zero])
        u1, u2 = b2 * phi1, a2 * phi2
        deps = np.array([zero, zero, one])
        den = 1.0 + u1 * eps
        dden = eps * du1 + u1 * deps
        B = u1 / den
        dB = (du1 - B * dden) / den
        r = 1.0 / (1.0 + u2[:, None] + B[:, None] * self.g[None, :])
        r2 = r * r
        S0, S1 = r @ P[0], r @ P[1]
        T0, T1, T2 = r2 @ P[0], r2 @ P[1], r2 @ P[2]
        dS0 = -(T0 * du2 + T1 * dB)
        dS1 = -(T1 * du2 + T2 * dB)
        val = np.array([b2 * gam * eps / den, a2 * S0, S1 / gam])
        jac = np.array([b2 * gam * (deps - (eps / den) * dden) / den, a2 * dS0, dS1 / gam])
        return val, jac, phi2


class TokenHeadLaw(DysonLaw):
    """Law of ``s**2`` for one head on tokens of Gram law ``G``, from eq. (13.12).

    The same law as eq. (13.7); used where the composition engine does not solve
    it.  The continuous part starts at 0 with a density ``~ x**(-1/2)`` (the
    square linear model).
    """

    hard_edge_at_zero = True

    def __init__(self, beta, gamma, tokens, options):
        from ._coefficients import linear_coefficients

        c = linear_coefficients(beta)
        self.beta, self.gamma, self.tokens = beta, gamma, tokens
        nodes, weights = law_nodes(tokens)
        super().__init__(TokenHeadSystem(float(c.theta2), float(c.alpha2), gamma, nodes,
                                         weights), options)

    def _describe(self):
        return (f"attention law (squared) beta={self.beta:g}, gamma={self.gamma:g}, "
                f"tokens={self.tokens!r} (Dyson system, theory eq. (13.12))")
