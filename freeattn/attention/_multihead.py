"""Limiting laws of multi-head attention (theory/09_multihead.md).

``multihead_law`` is the law of the ``n`` eigenvalues of ``MHA_perp MHA_perp^T``
for ``MHA_perp = [A_1perp V_1, ..., A_hperp V_h] W_O`` (theory eq. (9.1)): the
nested compound free Poisson law of eqs. (9.6)-(9.9), computed in the engine
form of eq. (9.13),

    F = comp_h( (gamma_o/h) SC(SC(SC(H, h/gamma_v), h/gamma_o), h) ),
    H = alpha^2 + beta^2 MP(1, h/gamma_k),

with ``SC`` the sample-covariance law (:func:`freeattn.sample_covariance`) and
``comp_t(mu) = t mu + (1 - t) delta_0`` (:meth:`SpectralLaw.zero_padded`), or in
the companion form of eq. (9.11) or the atom-free output form of eq. (9.21)
(first with a square factor, whose hard edge at 0 is eq. (9.22)).
``head_average_law`` is the law of the squared singular values of the
head-averaged map ``sqrt(n h)(mean_r A_r - 11^T/n)``: the single-head law at
``gamma_eff = kv_groups gamma_k / heads`` (eq. (9.19)).

The Monte Carlo models of these laws (softmax and Gaussian-equivalent
multi-head attention, MHA/GQA/MQA, and the head-averaged map) are registered
in :data:`freeattn.MODELS` by :mod:`freeattn.montecarlo._multihead_models`.
"""

from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..core._checks import ATTENTION_BETA, Integer, Real, check_int, real_scalar
from ._coefficients import linear_coefficients
from ..laws._elementary import MarchenkoPastur
from ..core._errors import ConvergenceError
from ._laws import GAMMA_RANGE, attention_law
from ..core._options import DEFAULT_OPTIONS, check_options
from ..algebra._rational import padd, pmul, pscale
from ..algebra._levels import SLevel, edge_at_zero
from ..compose._subordination import SubordinationLaw
from ..laws._law_base import ZERO_MASS_ATOL, AffineLaw, affine

__all__ = [
    "HEADS_RANGE",
    "MULTIHEAD_RATIO_RANGE",
    "MultiheadLaw",
    "head_average_law",
    "multihead_law",
]

#: Range of ``heads``.  Every level of eq. (9.13) is a sample-covariance law
#: whose ratio (``heads``, ``heads/gamma``) must lie in the engine's range
#: ``[1e-4, 1e4]``; the tests check the law for 1 to 16 heads
#: (tests/test_multihead_law.py) and a spot check solved 32 heads, while one
#: at 64 heads (``gamma_k = gamma_v = 8``, ``gamma_o = 0.5``) missed the mass
#: tolerance by 1.5e-12 and raised ``ConvergenceError`` (theory section 9.11).
HEADS_RANGE = (1, 64)

#: Range of ``gamma_k/heads``, ``gamma_v/heads`` and ``gamma_o`` (per-head
#: widths over ``n``), accepted as arguments: the Marchenko-Pastur ratios of
#: the tower (``heads/gamma_k``, ``heads/gamma_v``, ``heads/gamma_o``) stay
#: within ``[1e-2, 1e2]`` times ``heads``, inside the engine's range.  The
#: tests check per-head ratios from 0.1 to 1.5 and ``gamma_o`` from 0.5 to 2
#: (tests/test_multihead_law.py); where the engine's tower does not converge it
#: raises ``ConvergenceError`` (theory section 9.11).
MULTIHEAD_RATIO_RANGE = (1e-2, 1e2)

#: Tail target of the Chebyshev panels of the multi-head law.  Its density,
#: solved through the degree-8 tower of eq. (9.13), carries a rounding noise
#: of about 5e-15 of a panel's largest coefficient (measured at the
#: Monte Carlo case of theory section 9.10), so the engine's default 2e-15 is
#: met only by the noise-floor rule after tripling every panel to its 243-node
#: maximum (4.5 times the density solves, same accuracy).  1e-13 keeps the
#: representation 1000 times below the 1e-10 density target and converges at
#: 81 nodes per panel.
MULTIHEAD_CHEB_TAIL_RTOL = 1e-13


#: Relative distance below which two of ``1, gamma_v, gamma_o`` count as equal
#: (:func:`has_hard_edge`; :func:`check_multihead_args` then makes them equal).
#: At a relative distance ``delta`` from a tie the soft lower edge lies within
#: about ``delta**2`` of the scale from 0, so below ``1e-9`` the tie's law (hard
#: edge at 0) differs from the given one by less than rounding of its CDF, and
#: ratios such as ``0.1 * 5`` computed in floating point still count as ties.
HARD_EDGE_TIE_RTOL = 1e-9


_real_scalar = real_scalar


#: The domains of ``heads`` and ``gamma_o`` (:data:`HEADS_RANGE`,
#: :data:`MULTIHEAD_RATIO_RANGE`); the per-head ratios' range scales with
#: ``heads`` (:func:`_check_per_head`).
HEADS = Integer(*HEADS_RANGE)
GAMMA_O = Real(*MULTIHEAD_RATIO_RANGE)


def _check_heads(heads, kv_groups):
    """``heads`` in :data:`HEADS_RANGE` and ``kv_groups`` dividing it (``None``: ``heads``)."""
    h = HEADS.check(heads, "heads")
    if kv_groups is None:
        return h, h
    g = check_int(kv_groups, "kv_groups", minimum=1)
    if h % g:
        raise ValueError(f"kv_groups must divide heads (1 <= kv_groups <= heads, "
                         f"heads % kv_groups == 0), got kv_groups={kv_groups!r}, heads={h}")
    return h, g


def _check_per_head(value, name, heads):
    """A ratio ``gamma`` with ``gamma/heads`` in :data:`MULTIHEAD_RATIO_RANGE`."""
    g = _real_scalar(value, name)
    lo, hi = MULTIHEAD_RATIO_RANGE
    if not lo * heads <= g <= hi * heads:
        raise ValueError(f"{name} must be in [{lo:g} * heads, {hi:g} * heads] = "
                         f"[{lo * heads:g}, {hi * heads:g}] (per-head width over n in "
                         f"[{lo:g}, {hi:g}]), got {value!r}")
    return g


def _sample_covariance_level(population, ratio, options):
    """``SC(population, ratio)`` as one S-level against ``MP(1, ratio)``.

    :func:`freeattn.sample_covariance` of a sample-covariance law merges the
    two Marchenko-Pastur factors into one partner (``MP ⊠ MP``), whose branch
    test is itself a tower solve; kept as separate levels, every partner is a
    closed-form Marchenko-Pastur law and the tower costs one polynomial solve
    per point (the same law: ``⊠`` is associative).
    """
    mp = MarchenkoPastur(1.0, ratio, options)
    return SubordinationLaw(SLevel(mp._s_transform(), mp), population, options)


class CompanionLevel:
    """``comp_t``: ``G(z) = t G_b(z) + (1 - t)/z`` (theory eq. (9.4)) as a tower level.

    The companion of a sample covariance (``pi(mu, t) = comp_t SC(mu, t)``)
    keeps the point ``z`` and maps the Stieltjes transform rationally, so it
    extends the constituent's rational curve like the engine's affine and
    subordination levels (``z = N/D``, ``G = A/B`` ->
    ``G' = (t A N + (1 - t) D B)/(B N)``).  Used with ``t = heads`` to
    remove the ``(h - 1)/h`` atom of ``SC(H/h, h)``.
    """

    kind = "companion"
    #: The point under the level is ``z`` itself, not a subordination point.
    subordinating = False
    fold_before_soft_end = False

    def __init__(self, t):
        self.t = float(t)

    def slope_at_infinity(self):
        """``dz/dtau = 1``: the level keeps the point."""
        return 1.0

    def ray_reach(self):
        """No structure of its own beyond the constituent's support (the level keeps the point)."""
        return 0.0

    def apply(self, tau, gb, dtau, dgb):
        t = self.t
        g = t * gb + (1.0 - t) / tau
        if dtau is None:
            return tau, g, None, None
        return tau, g, dtau, t * dgb - (1.0 - t) * dtau / (tau * tau)

    def guess(self, z):
        return z

    def partner_point(self, z, tau, gb, g):
        return None

    def partner_check(self, point, tau, gb, g):
        return None

    def rational(self, n, d, a, b):
        return n, d, padd(pscale(pmul(a, n), self.t), pscale(pmul(d, b), 1.0 - self.t)), pmul(b, n)

    def atoms(self, constituent):
        loc, mass = constituent.atoms()
        mass = np.asarray(mass, dtype=float) * self.t
        at_zero = loc == 0.0
        zero = float(mass[at_zero].sum()) + (1.0 - self.t)
        loc, mass = loc[~at_zero], mass[~at_zero]
        if zero > ZERO_MASS_ATOL:
            loc, mass = np.append(loc, 0.0), np.append(mass, zero)
        return loc, mass

    def series(self, constituent, kmax, prec):
        """Moment series: ``t m_n`` for ``n >= 1`` (exact for an integer ``t``; theory
        section 8.10), or ``None``."""
        from ..algebra._moment_series import times_constant

        base = constituent._series(kmax, prec)
        return None if base is None else times_constant(base, self.t, prec)

    def hard_edge(self, constituent):
        """Zeros added or removed leave the continuous part's edge at 0 as it is."""
        eta = edge_at_zero(constituent)
        return eta if isinstance(eta, Fraction) else None

    def mp(self, mpmath):
        t = mpmath.mpf(self.t)
        return lambda tau, gb: (tau, t * gb + (1 - t) / tau)

    def describe(self):
        return f"companion t={self.t:g}"


def _population(beta, heads, gamma_k, options):
    """The single-head population ``H = alpha^2 + beta^2 MP(1, h/gamma_k)`` (eq. (9.6)),
    in units of ``theta1``."""
    c = linear_coefficients(beta)
    return MarchenkoPastur(1.0, heads / gamma_k, options).affine(c.alpha2 / c.theta1,
                                                                 c.theta2 / c.theta1)


def engine_form(beta, heads, gamma_k, gamma_v, gamma_o, options):
    """Theory eq. (9.13) in units of ``gamma_o theta1``: ``comp_h(L/h)``.

    ``L = SC(SC(SC(H, h/gamma_v), h/gamma_o), h)`` with the single-head
    population ``H = alpha^2 + beta^2 MP(1, h/gamma_k)`` (eq. (9.6)) in units
    of ``theta1``; ``comp_h`` removes ``(h - 1)/h`` of the atom of ``L/h``.
    """
    population = _population(beta, heads, gamma_k, options)
    tower = population
    for ratio in (heads / gamma_v, heads / gamma_o, float(heads)):
        tower = _sample_covariance_level(tower, ratio, options)
    return affine(tower, 0.0, 1.0 / heads).zero_padded(float(heads))


def companion_form(beta, heads, gamma_k, gamma_v, gamma_o, options):
    """The same law as one rational tower with a companion level, units ``gamma_o theta1``.

    ``nu_0 = comp_h(SC(H/h, h))`` (``S = S_H(w/h)/(1 + w/h)``, eq. (9.10))
    carries the single-head population and the heads; then
    ``F = gamma_o theta1 SC(SC(nu_0, 1/gamma_v), 1/gamma_o)``: by eq. (9.10)
    its S-transform is ``S_H(w/h)/((1 + w/h)(1 + w/gamma_v)(gamma_o + w))``,
    eq. (9.11) (the law of eq. (9.13): ``⊠`` is commutative and
    ``SC(comp_t mu, c) = comp_t SC(mu, c t)``).
    """
    nu = _heads_population(beta, heads, gamma_k, options)
    return _sample_covariance_level(_sample_covariance_level(nu, 1.0 / gamma_v, options),
                                    1.0 / gamma_o, options)


def _heads_population(beta, heads, gamma_k, options):
    """``nu_0 = comp_h(SC(H/h, h))`` of the companion form (``SC(H, 1)`` for one head)."""
    population = _population(beta, heads, gamma_k, options)
    if heads > 1:
        nu = _sample_covariance_level(affine(population, 0.0, 1.0 / heads), float(heads),
                                      options)
        return SubordinationLaw(CompanionLevel(heads), nu, options)
    return _sample_covariance_level(population, 1.0, options)


def chain_form(beta, heads, gamma_k, gamma_v, gamma_o, options):
    """The companion form's law as one system in its factors (theory eq. (14.8)).

    ``nu_0 ⊠ MP(1, 1/gamma_v) ⊠ MP(1, 1/gamma_o)`` (``S_MP(1, c)(w) = 1/(1 + c w)``,
    so the S-transform is eq. (9.11)), solved by the product-chain system
    instead of one rational tower: it does not depend on the roots of the
    expanded polynomial, so it is the formulation of last resort where the
    towers lose the branch (theory section 9.11).
    """
    from ..compose._chain import ProductChainLaw
    from ..laws._elementary import MarchenkoPastur

    nu = _heads_population(beta, heads, gamma_k, options)
    return ProductChainLaw([nu, MarchenkoPastur(1.0, 1.0 / gamma_v, options),
                            MarchenkoPastur(1.0, 1.0 / gamma_o, options)], options)


def output_form(beta, heads, gamma_k, gamma_v, gamma_o, options):
    """The law of eq. (9.21) in units of ``gamma_o theta1``: no atom inside the tower.

    For ``gamma_o <= min(1, gamma_v)`` the non-zero eigenvalues are those of
    the ``d_o x d_o`` Gram matrix, whose law
    ``F_o = SC(SC(comp_{h/gamma_o}(SC(H, h/gamma_o)), gamma_o/gamma_v), gamma_o)/h``
    has no atom (``comp`` removes the ``1 - gamma_o/h`` of ``SC(H, h/gamma_o)``
    inside the rational tower), and ``F = comp_{gamma_o}(F_o)``.  A square factor
    (``gamma_o = gamma_v`` or ``gamma_o = 1``) then gives an ``MP(1, 1)`` level
    and the hard edge at 0 of eq. (9.22), which the towers with an atom inside
    cannot resolve (the atom's pole swamps ``Im G`` next to 0).  For
    ``gamma_v < gamma_o`` the two ratios are swapped: in units of
    ``gamma_o theta1`` the law is symmetric in them (eq. (9.11)).
    """
    if gamma_v < gamma_o:
        return output_form(beta, heads, gamma_k, gamma_o, gamma_v, options)
    population = _population(beta, heads, gamma_k, options)
    t = heads / gamma_o
    nu = _sample_covariance_level(population, t, options)
    if t != 1.0:
        nu = SubordinationLaw(CompanionLevel(t), nu, options)
    gram = _sample_covariance_level(_sample_covariance_level(nu, gamma_o / gamma_v, options),
                                    gamma_o, options)
    law = affine(gram, 0.0, 1.0 / heads)
    return law if gamma_o == 1.0 else law.zero_padded(gamma_o)


#: The formulations of the law, tried in this order (see :func:`multihead_tower`);
#: with a hard edge at 0 the output form goes first (:func:`_forms`).
FORMS = (("engine form, eq. (9.13)", engine_form),
         ("companion form, eq. (9.11)", companion_form),
         ("output form, eq. (9.21)", output_form))

#: The formulation tried after every tower (:func:`chain_form`): slower (about
#: 3 s against milliseconds), but without polynomial roots.
CHAIN_FORM = ("product-chain form, eqs. (9.11) and (14.8)", chain_form)


#: Relative distance of the two smallest of ``1, gamma_v, gamma_o`` below which the
#: output form is tried first (:func:`_forms`): next to a tie the soft lower edge
#: is close to 0 and the towers with an atom inside resolve it slowly or not at
#: all (at a 0.1% tie the engine form raised after 59 s, the companion form took
#: 15 s with 424 panels, the output form 0.22 s with 9).
NEAR_TIE_RTOL = 0.1


def _forms(heads, gamma_v, gamma_o):
    """:data:`FORMS` in the order to try: the output form first where it is atom-free
    (``min(gamma_v, gamma_o) <= 1``) and the law has a hard edge at 0 or is within
    :data:`NEAR_TIE_RTOL` of one (theory section 9.11); :data:`CHAIN_FORM` last."""
    lo, mid = sorted((1.0, gamma_v, gamma_o))[:2]
    near_tie = mid - lo <= NEAR_TIE_RTOL * lo
    if min(gamma_v, gamma_o) <= 1.0 and (near_tie or has_hard_edge(heads, gamma_v, gamma_o)):
        return (FORMS[2],) + FORMS[:2] + (CHAIN_FORM,)
    return FORMS + (CHAIN_FORM,)


def multihead_tower(beta, heads, gamma_k, gamma_v, gamma_o, options):
    """The multi-head law in units of ``gamma_o theta1``, built and checked eagerly.

    The engine's tower solver does not converge for every parameter of
    every equivalent formulation; each formulation is built (support and
    density representation, whose mass is checked against the atom) until
    one succeeds, so a failure surfaces here and not at a later ``pdf``.

    Raises
    ------
    ConvergenceError
        If no formulation converges, quoting each one's error.
    """
    failures = []
    for name, form in _forms(heads, gamma_v, gamma_o):
        try:
            law = form(beta, heads, gamma_k, gamma_v, gamma_o, options)
            lo, hi = law.support()
            law.pdf(np.array([0.5 * (lo + hi)]))
            law.cdf(np.array([0.5 * (lo + hi)]))
            return law
        except (ConvergenceError, ValueError, ArithmeticError) as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    raise ConvergenceError(
        f"the multi-head law at beta={beta!r}, heads={heads}, gamma_k={gamma_k!r}, "
        f"gamma_v={gamma_v!r}, gamma_o={gamma_o!r} was not solved by any formulation: "
        + "; ".join(failures))


class MultiheadLaw(AffineLaw):
    """Law of the ``n`` eigenvalues of ``MHA_perp MHA_perp^T`` (theory eq. (9.9)).

    Built by :func:`multihead_law`; a :class:`freeattn.SpectralLaw` (``pdf``,
    ``cdf``, ``ppf``, ``moment``, ``support``, ``intervals``, ``atom``,
    ``stieltjes``, ...).  The atom at 0 (mass ``1 - min(1, gamma_v,
    gamma_o)``, eq. (9.14)) is part of the law; ``pdf`` is the density of the
    continuous part.

    Attributes
    ----------
    beta : float
    heads, kv_groups : int
    gamma_k, gamma_v, gamma_o : float
    theta1 : float
        ``exp(beta**2) - 1``; the mean is ``theta1 * gamma_o`` (eq. (9.16)).
    normalized : SpectralLaw
        The law in units of ``gamma_o theta1``: the first of the towers of
        eq. (9.13), eq. (9.11) (companion) and eq. (9.21) (output, tried first
        with a hard edge at 0) that converges (:func:`multihead_tower`).
    """

    def __init__(self, beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options):
        c = linear_coefficients(beta)
        tower = multihead_tower(beta, heads, gamma_k, gamma_v, gamma_o, options)
        super().__init__(tower, 0.0, c.theta1 * gamma_o)
        self.beta = beta
        self.heads = heads
        self.kv_groups = kv_groups
        self.gamma_k = gamma_k
        self.gamma_v = gamma_v
        self.gamma_o = gamma_o
        self.theta1 = c.theta1
        self.normalized = tower

    def _describe(self):
        return (f"multi-head law beta={self.beta:g}, heads={self.heads}, "
                f"gamma_k={self.gamma_k:g}, gamma_v={self.gamma_v:g}, "
                f"gamma_o={self.gamma_o:g}, kv_groups={self.kv_groups}")


#: Below this ``beta`` the isotropic law is solved first by the Dyson system of theory
#: eqs. (9.25)-(9.30) at ``G = delta_1``.  At the geometry of section 9.10 the towers
#: raise at ``beta <= 0.01`` (in 0.02-0.2 s) and after about 70 s at ``beta = 0.02``,
#: and solve ``beta = 0.03`` in 0.27 s; the Dyson solve takes 1-2.3 s from
#: ``beta = 1e-3`` to 0.02 and raises below ``1e-4``.  The towers stay the fallback.
DYSON_FIRST_BETA = 0.025


def _dyson(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options):
    """The isotropic law as the Dyson system at ``G = delta_1``, built eagerly."""
    from ..laws._elementary import point_masses
    from ._multihead_tokens import TokenMultiheadLaw

    law = TokenMultiheadLaw(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups,
                            point_masses([1.0]), options)
    lo, hi = law.intervals()[-1]
    law.cdf(np.array([0.5 * (lo + hi)]))
    return law


@lru_cache(maxsize=32)
def _multihead(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options):
    dyson = not has_hard_edge(heads, gamma_v, gamma_o)
    if dyson and beta < DYSON_FIRST_BETA:
        try:
            return _dyson(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options)
        except ConvergenceError:
            dyson = False
    try:
        return MultiheadLaw(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options)
    except ConvergenceError as exc:
        if not dyson:
            raise
        try:
            return _dyson(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, options)
        except ConvergenceError as exc2:
            raise ConvergenceError(f"{exc}; the Dyson system (theory eqs. (9.25)-(9.30)): "
                                   f"{exc2}") from exc2


#: Largest degree of the tower's rational curve (``SolverOptions.max_rational_degree``).
#: The curve of eq. (9.13) has degree 12 at ``beta = 1``; where the population
#: is nearly a point mass (``beta >= 3``: ``theta2/theta1 < 1.2e-3``) the
#: multiple roots of its factors no longer cancel in floating point and the
#: degree reaches 17, above the engine's default 16, which would switch the
#: outer level to the (much slower) generic solver.
MULTIHEAD_MAX_RATIONAL_DEGREE = 24


def _default_options(options):
    if options is None:
        return DEFAULT_OPTIONS.with_(cheb_tail_rtol=MULTIHEAD_CHEB_TAIL_RTOL,
                                     max_rational_degree=MULTIHEAD_MAX_RATIONAL_DEGREE)
    return check_options(options)


def has_hard_edge(heads, gamma_v, gamma_o):
    """Whether the multi-head law's continuous part reaches 0 with a diverging density.

    ``MHA_perp = M W_O`` has the dimensions ``n``, ``h d_v`` and ``d_o``; as
    for a square Wishart matrix, the non-zero eigenvalues reach 0 when the
    smallest of ``1, gamma_v, gamma_o`` is attained twice (a square factor:
    ``h d_v = d_o <= n``, ``n = d_o <= h d_v`` or ``n = h d_v <= d_o``), and,
    with one head, when ``gamma_v, gamma_o >= 1`` (the square ``n x n``
    attention map carries the rank).
    """
    r = min(1.0, gamma_v, gamma_o)
    ties = sum(abs(v - r) <= HARD_EDGE_TIE_RTOL * r for v in (1.0, gamma_v, gamma_o))
    return ties >= 2 or (heads == 1 and r == 1.0)


def check_multihead_args(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups):
    """All checks of :func:`multihead_law`'s arguments; return them normalized."""
    h, g = _check_heads(heads, kv_groups)
    b = ATTENTION_BETA.check(beta, "beta")
    gk = _check_per_head(gamma_k, "gamma_k", h)
    gv = _check_per_head(gamma_v, "gamma_v", h)
    go = GAMMA_O.check(gamma_o, "gamma_o")
    # Ties up to HARD_EDGE_TIE_RTOL are made exact (a square factor, eq. (9.22)).
    if abs(gv - 1.0) <= HARD_EDGE_TIE_RTOL:
        gv = 1.0
    if abs(go - 1.0) <= HARD_EDGE_TIE_RTOL:
        go = 1.0
    if abs(gv - go) <= HARD_EDGE_TIE_RTOL * min(gv, go):
        go = gv
    return b, h, gk, gv, go, g


def multihead_law(beta, *, heads, gamma_k, gamma_v, gamma_o, kv_groups=None, tokens=None,
                  options=None):
    """Limiting law of the eigenvalues of ``MHA_perp MHA_perp^T`` (multi-head attention).

    ``MHA_perp = [A_1perp V_1, ..., A_hperp V_h] W_O`` with ``h = heads``
    softmax heads ``A_r = softmax_rows(beta Q_r K_r^T/sqrt(d_k))``,
    ``A_perp = A - 11^T/n``, values ``V_r`` (``n x d_v``) and
    ``W_O = G_O/sqrt(h d_v)`` (``h d_v x d_o``), all Gaussian entries
    N(0, 1) (theory eq. (9.1)); ``n, d_k, d_v, d_o -> oo`` with
    ``gamma_k = h d_k/n``, ``gamma_v = h d_v/n``, ``gamma_o = d_o/n``.

    Parameters
    ----------
    beta : float
        Inverse temperature in ``[1e-8, 4]``.
    heads : int
        Number of heads ``h`` in ``[1, 64]`` (:data:`HEADS_RANGE`).
    gamma_k, gamma_v : float
        ``h d_k / n`` and ``h d_v / n``, each in ``[0.01 h, 100 h]``
        (per-head widths ``d_k/n``, ``d_v/n`` in
        :data:`MULTIHEAD_RATIO_RANGE`).
    gamma_o : float
        ``d_o / n`` in ``[0.01, 100]``.
    kv_groups : int, optional
        Number of distinct key/value sets (``heads``: MHA, the default;
        ``1``: multi-query attention; otherwise grouped-query attention).
        Must divide ``heads``.  It does not change this law (theory
        eq. (9.18)): the heads' rows stay independent given shared keys and
        values, and the Gaussian ``W_O`` sees only the spectrum of the
        block-diagonal covariance.  It is validated and kept as an attribute.
    tokens : SpectralLaw, optional
        Spectral law ``G`` of the token Gram ``X X^T/D`` (mean 1, support in
        ``(0, oo)``, no atom at 0) when queries, keys and values are
        ``X W_Q, X W_K, X W_V`` with weights N(0, 1/D) and tokens of equal
        norms (theory section 9.12).  ``None`` (default) or the point mass
        at 1 is the isotropic law.  Not available with a square factor (a
        hard edge at 0, see Notes), except one head with ``gamma_v, gamma_o > 1``
        (the square attention map's hard edge).
    options : SolverOptions, optional
        Engine tolerances; default :data:`freeattn.DEFAULT_OPTIONS` with
        ``cheb_tail_rtol = 1e-13`` (the density's rounding floor, see
        ``MULTIHEAD_CHEB_TAIL_RTOL``).

    Returns
    -------
    MultiheadLaw or TokenMultiheadLaw
        A :class:`freeattn.SpectralLaw` of the ``n`` eigenvalues, with the
        atom ``1 - min(1, gamma_v, gamma_o)`` at 0 (theory eq. (9.14));
        with ``tokens``, the solution of the Dyson system of theory eqs.
        (9.25)-(9.29), whose mean is ``gamma_o (alpha**2 + beta**2 m2(G))``
        (eq. (9.31)).

    Raises
    ------
    TypeError
        If ``heads`` or ``kv_groups`` is not an integer (bools included), or
        a ratio or ``beta`` is not a real scalar.
    ValueError
        If ``heads`` is not in ``[1, 64]``, ``kv_groups`` does not divide it,
        or ``beta`` or a ratio is NaN, infinite or out of range; if
        ``tokens`` is not a law of mean 1 on ``[0, oo)``, has an atom at 0,
        or is given with a square factor.
    ConvergenceError
        If the tower's equation (or, with ``tokens``, the Dyson system) is not
        solved to its tolerance.

    Notes
    -----
    The law is the nested compound free Poisson law of theory eqs.
    (9.6)-(9.9), computed in the form of eq. (9.13):
    ``F = comp_h((gamma_o theta1/h) L)``,
    ``L = SC(SC(SC(H, h/gamma_v), h/gamma_o), h)`` with
    ``H = alpha^2/theta1 + (theta2/theta1) MP(1, h/gamma_k)`` the single-head
    population (eq. (9.6)) in units of ``theta1 = exp(beta**2) - 1``, ``SC``
    the sample-covariance law (:func:`freeattn.sample_covariance`) and
    ``comp_t(mu) = t mu + (1 - t) delta_0`` (eq. (9.4)). Its mean is
    ``theta1 gamma_o`` (eq. (9.16)) and
    ``m2/m1**2 - 1 = 1/h + 1/gamma_v + 1/gamma_o + theta2**2/(gamma_k theta1**2)``
    (eq. (9.17)); its S-transform is eq. (9.11).  Swapping ``gamma_v`` and
    ``gamma_o`` rescales the law by ``gamma_o/gamma_v``.  When the smallest of
    ``1, gamma_v, gamma_o`` is attained twice (a square factor, e.g.
    ``h d_v = d_o <= n`` as in a default ``torch.nn.MultiheadAttention`` with
    ``n >= E``) the continuous part starts at 0 with a density
    ``~ x**(-k/(k+1))`` (eq. (9.22)); ratios within ``1e-9`` of a tie are made
    equal.  Without a square factor, the Dyson system of theory section 9.12 at
    ``G = delta_1`` solves the law where the towers do not (it is tried first
    for ``beta < DYSON_FIRST_BETA``, and then returned as a
    ``TokenMultiheadLaw`` with the same attributes); where neither converges
    (e.g. ``beta < 0.01`` at the geometry of theory section 9.10) it raises
    ``ConvergenceError``.

    Examples
    --------
    >>> import freeattn
    >>> law = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0)
    >>> law.atom                                   # 1 - min(1, gamma_v, gamma_o)
    0.5
    >>> round(law.mean(), 10)                      # theta1 gamma_o, eq. (9.16)
    1.7182818285
    >>> round(law.moment(2) / law.mean() ** 2 - 1, 10)   # eq. (9.17)
    3.9273937747
    >>> [tuple(round(v, 6) for v in iv) for iv in law.intervals()]
    [(0.057486, 20.329318)]
    >>> mqa = freeattn.multihead_law(1.0, heads=4, gamma_k=0.5, gamma_v=0.5, gamma_o=1.0,
    ...                              kv_groups=1)  # the same law, eq. (9.18)
    >>> bool(abs(mqa.cdf(2.0) - law.cdf(2.0)) < 1e-14)
    True
    """
    b, h, gk, gv, go, g = check_multihead_args(beta, heads, gamma_k, gamma_v, gamma_o,
                                               kv_groups)
    if tokens is not None:
        from ._token_law import check_tokens, is_unit_point_mass

        check_tokens(tokens)
        if not is_unit_point_mass(tokens):
            tokens = _check_multihead_tokens(tokens, h, gv, go)
            return _token_multihead(b, h, gk, gv, go, g, tokens, _default_options(options))
    return _multihead(b, h, gk, gv, go, g, _default_options(options))


def _check_multihead_tokens(tokens, heads, gamma_v, gamma_o):
    """The token law of the multi-head law: no atom at 0 and no square factor."""
    loc, mass = tokens.atoms()
    if np.any((loc <= 0.0) & (mass > 0.0)):
        raise ValueError("tokens must have no atom at 0 for the multi-head law (a "
                         "rank-deficient token Gram is supported by the single-head "
                         "attention_law(beta, gamma, tokens=G) only)")
    if has_hard_edge(heads, gamma_v, gamma_o) and not one_head_square_map(heads, gamma_v,
                                                                          gamma_o):
        raise ValueError(f"tokens are not supported with a square factor (the smallest of "
                         f"1, gamma_v={gamma_v!r}, gamma_o={gamma_o!r} attained twice): the "
                         f"law's hard edge at 0 is derived for isotropic tokens only (theory "
                         f"section 9.12)")
    return tokens


def one_head_square_map(heads, gamma_v, gamma_o):
    """One head with ``gamma_v, gamma_o > 1`` (no tie): the square attention map carries
    the rank, and the density is ``~ x**(-1/2)`` at 0 (eq. (9.22), ``k = 1``)."""
    r = min(gamma_v, gamma_o)
    return heads == 1 and r > 1.0 and not has_hard_edge(2, gamma_v, gamma_o)


@lru_cache(maxsize=32)
def _token_multihead(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, tokens, options):
    from ._multihead_tokens import TokenMultiheadLaw

    return TokenMultiheadLaw(beta, heads, gamma_k, gamma_v, gamma_o, kv_groups, tokens, options,
                             hard_edge_at_zero=one_head_square_map(heads, gamma_v, gamma_o))


def head_average_gamma(heads, gamma_k, kv_groups=None):
    """``gamma_eff = kv_groups gamma_k / heads`` of theory eq. (9.19), checked."""
    h, g = _check_heads(heads, kv_groups)
    gk = _real_scalar(gamma_k, "gamma_k")
    if not gk > 0:
        raise ValueError(f"gamma_k must be > 0, got {gamma_k!r}")
    eff = g * gk / h
    if not GAMMA_RANGE[0] <= eff <= GAMMA_RANGE[1]:
        raise ValueError(f"gamma_k must make kv_groups * gamma_k / heads lie in "
                         f"[{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}] (the single-head law's "
                         f"range), i.e. gamma_k in [{GAMMA_RANGE[0] * h / g:g}, "
                         f"{GAMMA_RANGE[1] * h / g:g}] for heads={h}, kv_groups={g}; "
                         f"got {gamma_k!r}")
    return eff


def head_average_law(beta, *, heads, gamma_k, kv_groups=None, tokens=None, options=None):
    """Limiting law of the squared singular values of the head-averaged attention map.

    The map is ``sqrt(n h)(Abar - 11^T/n)`` with ``Abar = (1/h) sum_r A_r``
    the mean of ``h = heads`` softmax attention maps,
    ``gamma_k = h d_k / n`` and ``kv_groups`` distinct key sets (theory
    section 9.8).

    Parameters
    ----------
    beta : float
        Inverse temperature in ``[1e-8, 4]``.
    heads : int
        Number of heads in ``[1, 64]``.
    gamma_k : float
        ``h d_k / n``; ``kv_groups gamma_k / heads`` must lie in the
        single-head law's range ``[1e-4, 1e4]``.
    kv_groups : int, optional
        Number of distinct key sets (must divide ``heads``); ``None`` means
        ``heads`` (independent keys), ``1`` means all heads share one key
        matrix (multi-query attention).
    tokens : SpectralLaw, optional
        Spectral law of the token Gram ``X X^T/D`` (mean 1, equal token
        norms), as for :func:`freeattn.attention_law`: the summed queries of
        a key group are again ``G^{1/2}`` times a Gaussian matrix, so the
        averaged map is one head on the same tokens (theory section 9.12).
    options : SolverOptions, optional
        Engine tolerances (:data:`freeattn.DEFAULT_OPTIONS`).

    Returns
    -------
    SpectralLaw
        ``attention_law(beta, gamma_eff, tokens=tokens).squared()`` with
        ``gamma_eff = kv_groups gamma_k / heads`` (theory eq. (9.19)):
        ``gamma_k`` for independent keys, ``gamma_k/heads`` for one shared key.

    Raises
    ------
    TypeError
        If ``heads`` or ``kv_groups`` is not an integer, or ``beta`` or
        ``gamma_k`` is not a real scalar.
    ValueError
        If ``kv_groups`` does not divide ``heads`` or a value is NaN or out
        of range.

    Notes
    -----
    The summed queries of a key group form one Gaussian query matrix, so the
    averaged scores are those of one head of key width ``kv_groups d_k``; the
    non-linear parts of the heads stay independent (their queries are), so
    the averaged map has the single-head law at
    ``gamma_eff = kv_groups d_k / n`` and mean ``theta1`` for every
    ``kv_groups`` (theory eqs. (9.19), (5.11)).  Independent and shared keys
    differ by a Kolmogorov distance of 0.1288 at ``beta = 1``, ``heads = 4``,
    ``gamma_k = 0.5`` (eq. (9.20)).

    Examples
    --------
    >>> import freeattn
    >>> mha = freeattn.head_average_law(1.0, heads=4, gamma_k=0.5)
    >>> mqa = freeattn.head_average_law(1.0, heads=4, gamma_k=0.5, kv_groups=1)
    >>> round(mha.mean(), 10), round(mqa.mean(), 10)          # theta1 either way
    (1.7182818285, 1.7182818285)
    >>> round(mha.moment(2) - 2 * mha.mean() ** 2, 10)      # beta**4 / gamma_eff
    2.0
    >>> round(mqa.moment(2) - 2 * mqa.mean() ** 2, 10)
    8.0
    """
    eff = head_average_gamma(heads, gamma_k, kv_groups)
    return attention_law(beta, eff, tokens=tokens, options=options).squared()


def rank_fraction(gamma_v, gamma_o):
    """``min(1, gamma_v, gamma_o)``: the rank of ``MHA_perp`` over ``n`` (eq. (9.14))."""
    return min(1.0, gamma_v, gamma_o)


def mean_and_rank_matched_mp(beta, gamma_v, gamma_o):
    """Marchenko-Pastur law with the multi-head law's mean and rank.

    ``MP(theta1 gamma_o, 1/r)``, ``r = min(1, gamma_v, gamma_o)``: mean
    ``theta1 gamma_o`` (eq. (9.16)) and atom ``1 - r`` at 0 (eq. (9.14)),
    the law of an ``n x rn`` matrix of i.i.d. entries with the layer's
    variance.
    """
    from ..laws._elementary import marchenko_pastur

    theta1 = float(linear_coefficients(beta).theta1)
    return marchenko_pastur(theta1 * gamma_o, 1.0 / rank_fraction(gamma_v, gamma_o))
