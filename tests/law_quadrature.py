"""An independent quadrature rule for a law's density (helper of the law tests).

:func:`decade_rule` integrates ``g(x) pdf(x)`` without the law's own
quadrature: decade by decade towards every edge, by Gauss-Legendre in
``log |x - edge|``, so that edge singularities (``x**(-1/2)``, ``x**(-2/3)``,
square roots) and the pole of ``1/(z - x)`` close to the axis are resolved to
rounding.  :func:`stieltjes_reference` sums ``int dmu(x)/(z - x)`` with it.
"""

import math

import numpy as np

__all__ = ["decade_rule", "stieltjes_reference", "DECADE_NODES", "EDGE_DECADES", "DECADE_SPLIT"]


#: Gauss-Legendre nodes per decade of distance to an edge in
#: :func:`decade_rule` (the integrand ``pdf(x) (x - edge)`` is smooth
#: in ``log(x - edge)`` over a decade, so 24 nodes reach rounding).
DECADE_NODES = 24
#: Decades resolved next to each edge; the mass closer than
#: ``10**-EDGE_DECADES`` of the width is taken from the local power law
#: ``pdf ~ |x - edge|**eta`` (at most ``1e-16**(1/3) ~ 5e-6`` of the mass for the
#: steepest edge ``eta = -2/3``, with a relative correction of the same order).
EDGE_DECADES = 16


#: Sub-pieces per decade: keeps the quadrature of ``1/(z - x)`` float accurate
#: for ``Im z`` down to 0.1 of the width (the pole's offset in ``log |x - edge|``
#: is then >= 0.4, i.e. more than the half-length 0.29 of a sub-piece).
DECADE_SPLIT = 4


def decade_rule(law):
    """A quadrature rule for ``int g(x) pdf(x) dx`` built without the law's own.

    Each interval is cut at its midpoint and towards both edges at distances
    ``w/2 * 10**-k`` (k = 0..EDGE_DECADES, stopping where ``edge +- d`` is no
    longer resolved in floats); each decade is split in ``DECADE_SPLIT`` and
    integrated by Gauss-Legendre in ``log |x - edge|``.  The sliver closer to
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
    t, wt = np.polynomial.legendre.leggauss(DECADE_NODES)
    pieces, slivers = [], []
    for iv in law.interval_details():
        a, b = iv.lo, iv.hi
        half = 0.5 * (b - a)
        for edge, sign in ((a, 1.0), (b, -1.0)):
            floor = 1e3 * np.finfo(float).eps * abs(edge)
            dist = half * 10.0 ** -np.arange(EDGE_DECADES + 1)
            dist = dist[dist >= floor]
            for far, near in zip(dist[:-1], dist[1:]):
                cuts = np.linspace(math.log(near), math.log(far), DECADE_SPLIT + 1)
                xs, ws = [], []
                for u0, u1 in zip(cuts[:-1], cuts[1:]):
                    d = np.exp(0.5 * (u1 - u0) * t + 0.5 * (u1 + u0))
                    xs.append(edge + sign * d)
                    ws.append(0.5 * (u1 - u0) * wt * d)
                l, r = sorted((edge + sign * near, edge + sign * far))
                pieces.append((l, r, np.concatenate(xs), np.concatenate(ws)))
            f_far = law.pdf(edge + sign * dist[-2])
            f_near = law.pdf(edge + sign * dist[-1])
            eta = math.log(f_far / f_near) / math.log(dist[-2] / dist[-1])
            slivers.append((edge, f_near * dist[-1] / (1.0 + eta)))
    return pieces, slivers


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
