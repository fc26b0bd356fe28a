"""Moments of free convolutions from the moments of their constituents (theory eqs. (8.2)-(8.5)).

Shared by the algebraic engine (:mod:`freeattn.compose._subordination`) and the
analytic subordination path (:mod:`freeattn.compose._analytic`).
"""

import math

import numpy as np

from ..algebra._cumulants import free_cumulants_to_moments, moments_to_free_cumulants, series_reversion

__all__ = ["MAX_REVERSION_ORDER", "additive_moments", "multiplicative_moments"]

#: Exact moments of a free multiplicative convolution come from series
#: reversion (eq. (8.5)), whose coefficients grow geometrically; beyond this
#: order the moments come from quadrature of the representation.
MAX_REVERSION_ORDER = 120


def additive_moments(a, b, kmax):
    """Moments of ``a ⊞ b`` from ``kappa(a) + kappa(b)`` (eqs. (8.2)-(8.3)), normalized."""
    sa, ma = a._scaled_moments(kmax)
    sb, mb = b._scaled_moments(kmax)
    scale = sa + sb
    ka = moments_to_free_cumulants(np.asarray(ma[1:], dtype=float) if kmax else [0.0])
    kb = moments_to_free_cumulants(np.asarray(mb[1:], dtype=float) if kmax else [0.0])
    if kmax == 0:
        return scale, np.array([1.0])
    n = np.arange(1, kmax + 1)
    kappa = ka * (sa / scale) ** n + kb * (sb / scale) ** n
    m = free_cumulants_to_moments(kappa)
    if not np.all(np.isfinite(m)):
        return None
    return scale, m


def multiplicative_moments(a, b, kmax):
    """Moments of ``a ⊠ b`` (theory eqs. (8.4)-(8.5)).

    For ``a`` a Marchenko-Pastur law ``MP(v, c)`` the companion law is compound
    free Poisson, ``kappa_n = c v**n m_n(b)``, and ``m_n = m_n(companion)/c``
    (eq. (5.8)).  Otherwise ``chi_{a⊠b}(w) = chi_a(w) chi_b(w) (1 + w)/w`` by
    series reversion.
    """
    from ..laws._elementary import MarchenkoPastur

    sb, mb = b._scaled_moments(kmax)
    mb = np.asarray(mb, dtype=float)
    if isinstance(a, MarchenkoPastur):
        if kmax == 0:
            return 1.0, np.array([1.0])
        v, c = a.variance, a.ratio
        scale = v * sb * (1.0 + math.sqrt(c)) ** 2
        n = np.arange(1, kmax + 1)
        kappa = c * (v * sb / scale) ** n * mb[1:]
        m = free_cumulants_to_moments(kappa)
        m[1:] /= c
        return (scale, m) if np.all(np.isfinite(m)) else None
    if kmax > MAX_REVERSION_ORDER:
        return None
    sa, ma = a._scaled_moments(kmax)
    ma = np.asarray(ma, dtype=float)
    if kmax == 0:
        return 1.0, np.array([1.0])
    if ma[1] == 0 or mb[1] == 0:
        return None
    chi_a = series_reversion(ma[1:])              # chi(w) = sum chi_k w**k
    chi_b = series_reversion(mb[1:])
    prod = np.convolve(chi_a, chi_b)[:kmax]       # coefficients of w**2 .. w**(kmax+1)
    # chi_nu(w) = prod(w) (1 + w) / w: coefficients of w**1 .. w**kmax.
    chi_nu = prod.copy()
    chi_nu[1:] += prod[:-1]
    psi = series_reversion(chi_nu)
    if not np.all(np.isfinite(psi)):
        return None
    return sa * sb, np.concatenate([[1.0], psi])
