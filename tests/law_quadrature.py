"""An independent quadrature rule for a law's density (helper of the law tests).

:func:`decade_rule` integrates ``g(x) pdf(x)`` without the law's own
quadrature: decade by decade towards every edge, by Gauss-Legendre in
``log |x - edge|``, so that edge singularities (``x**(-1/2)``, ``x**(-2/3)``,
square roots) and the pole of ``1/(z - x)`` close to the axis are resolved to
rounding.  :func:`stieltjes_reference` sums ``int dmu(x)/(z - x)`` with it.
"""

import math

import numpy as np

__all__ = ["decade_rule", "decade_nodes", "stieltjes_reference", "DECADE_NODES", "EDGE_DECADES",
           "MAX_EDGE_DECADES", "EXPONENT_SETTLED", "DECADE_SPLIT", "REFINE_ATOL", "REFINE_DEPTH"]


#: Gauss-Legendre nodes per decade of distance to an edge in
#: :func:`decade_rule` (the integrand ``pdf(x) (x - edge)`` is smooth
#: in ``log(x - edge)`` over a decade, so 24 nodes reach rounding).
DECADE_NODES = 24
#: Decades resolved next to each edge; the mass closer than
#: ``10**-EDGE_DECADES`` of the width is taken from the local power law
#: ``pdf ~ |x - edge|**eta`` (at most ``1e-16**(1/3) ~ 5e-6`` of the mass for the
#: steepest edge ``eta = -2/3``, with a relative correction of the same order).
EDGE_DECADES = 16
#: ... unless the local exponent still moves (two successive decades differ by
#: more than ``EXPONENT_SETTLED``): then up to ``MAX_EDGE_DECADES`` decades (a
#: crossover between two edge exponents, as for sample_covariance(MP(1, 1),
#: 0.99999), where x**(-2/3) turns into x**(-1/2) near 1e-19 of the width).
MAX_EDGE_DECADES = 30
EXPONENT_SETTLED = 1e-3


#: Sub-pieces per decade: keeps the quadrature of ``1/(z - x)`` float accurate
#: for ``Im z`` down to 0.1 of the width (the pole's offset in ``log |x - edge|``
#: is then >= 0.4, i.e. more than the half-length 0.29 of a sub-piece).
DECADE_SPLIT = 4
#: Adaptive refinement of a sub-piece (with a density given): it is halved
#: until Gauss-Legendre on the halves agrees with the whole to
#: ``REFINE_ATOL`` of mass -- narrow features inside an interval (the neck of
#: a support about to split, the shoulder where two bulks meet) are not
#: resolved by the fixed decades (1e-8 off for semicircle(0.375) ⊞ MP(1, 3)).
REFINE_ATOL = 1e-17
#: Most halvings of one sub-piece (2**-30 of a decade).
REFINE_DEPTH = 30


def decade_rule(law):
    """A quadrature rule for ``int g(x) pdf(x) dx`` built without the law's own.

    Each interval is cut at its midpoint and towards both edges at distances
    ``w/2 * 10**-k`` (k = 0..EDGE_DECADES, stopping where ``edge +- d`` is no
    longer resolved in floats; deeper, up to ``MAX_EDGE_DECADES``, while the
    local exponent of the density still moves); each decade is split in
    ``DECADE_SPLIT`` and
    integrated by Gauss-Legendre in ``log |x - edge|``, halving a sub-piece
    until the density's integral over it is converged (``REFINE_ATOL``).  The sliver closer to
    the edge than the last distance is a power law with the local exponent read
    off the last decade (the stated exponent of ``interval_details`` is only
    asymptotic: at beta = 1e-6 the attention law's ``x**(-1/2)`` hard edge takes
    over from ``x**(-2/3)`` only below ~1e-17 of its width).

    Returns
    -------
    pieces : list of (l, r, x, w)
        A decade ``[l, r]``, its nodes and weights (``sum w * pdf(x) * g(x)``).
    slivers : list of (edge, mass)
    """
    pieces, slivers = [], []
    for iv in law.interval_details():
        a, b = iv.lo, iv.hi
        half = 0.5 * (b - a)
        for edge, sign in ((a, 1.0), (b, -1.0)):
            dist = _distances(edge, half, MAX_EDGE_DECADES)
            f = np.asarray(law.pdf(edge + sign * dist), dtype=float)
            slope = np.diff(np.log(f)) / np.diff(np.log(dist))     # local exponents
            k = min(EDGE_DECADES, dist.size - 1)
            while (k + 1 < dist.size and np.all(np.isfinite(slope[:k + 1]))
                   and abs(slope[k - 1] - slope[k - 2]) > EXPONENT_SETTLED):
                k += 1                                  # the exponent still moves: go deeper
            pieces += _decades(edge, sign, dist[:k + 1], law.pdf)
            eta = slope[k - 1]
            slivers.append((edge, f[k] * dist[k] / (1.0 + eta)))
    return pieces, slivers


def _distances(edge, half, decades):
    """``half * 10**-k``, k = 0..decades, while ``edge +- d`` is resolved in floats."""
    floor = 1e3 * np.finfo(float).eps * abs(edge)
    dist = half * 10.0 ** -np.arange(decades + 1)
    return dist[dist >= floor]


def _decades(edge, sign, dist, density=None):
    """Gauss-Legendre in ``log |x - edge|`` on each decade ``dist[k+1] .. dist[k]``,
    refined adaptively where ``density`` (when given) needs it."""
    t, wt = np.polynomial.legendre.leggauss(DECADE_NODES)

    def rule(u0, u1):
        d = np.exp(0.5 * (u1 - u0) * t + 0.5 * (u1 + u0))
        return edge + sign * d, 0.5 * (u1 - u0) * wt * d

    def refine(u0, u1, depth):
        x, w = rule(u0, u1)
        if density is None or depth >= REFINE_DEPTH:
            return [(x, w)]
        um = 0.5 * (u0 + u1)
        (xl, wl), (xr, wr) = rule(u0, um), rule(um, u1)
        whole = np.sum(w * density(x))
        halves = np.sum(wl * density(xl)) + np.sum(wr * density(xr))
        if abs(whole - halves) <= REFINE_ATOL:
            return [(x, w)]
        return refine(u0, um, depth + 1) + refine(um, u1, depth + 1)

    out = []
    for far, near in zip(dist[:-1], dist[1:]):
        cuts = np.linspace(math.log(near), math.log(far), DECADE_SPLIT + 1)
        parts = [p for u0, u1 in zip(cuts[:-1], cuts[1:]) for p in refine(u0, u1, 0)]
        lo, hi = sorted((edge + sign * near, edge + sign * far))
        out.append((lo, hi, np.concatenate([p[0] for p in parts]),
                     np.concatenate([p[1] for p in parts])))
    return out


def decade_nodes(a, b, decades=EDGE_DECADES):
    """Nodes and weights on ``[a, b]``, graded towards both ends (``decades`` each).

    For integrands that are smooth in ``log`` of the distance to either end
    (a square-root end, a sharp feature at an end); the two slivers closer
    than ``10**-decades`` of the half-width are left out.
    """
    half = 0.5 * (b - a)
    pieces = []
    for edge, sign in ((a, 1.0), (b, -1.0)):
        pieces += _decades(edge, sign, _distances(edge, half, decades))
    return np.concatenate([p[2] for p in pieces]), np.concatenate([p[3] for p in pieces])


def stieltjes_reference(law, z):
    """``int dmu(x)/(z - x)`` from the density by :func:`decade_rule`, plus atoms,
    and ``int dmu(x)/|z - x|`` (the size of the terms, the scale of rounding)."""
    pieces, slivers = decade_rule(law)
    x = np.concatenate([p[2] for p in pieces]) if pieces else np.empty(0)
    w = np.concatenate([p[3] for p in pieces]) if pieces else np.empty(0)
    wf = w * law.pdf(x)
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    g = (wf[None, :] / (z[:, None] - x[None, :])).sum(axis=1)
    size = (wf[None, :] / np.abs(z[:, None] - x[None, :])).sum(axis=1)
    loc, mass = law.atoms()
    for a, m in list(slivers) + list(zip(loc, mass)):
        g += m / (z - a)
        size += m / np.abs(z - a)
    return g, size
