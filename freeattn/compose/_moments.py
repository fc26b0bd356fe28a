"""Moments of free convolutions from the moments of their constituents (theory section 8.10).

The moment series of ``a ⊞ b`` and ``a ⊠ b`` (exact rationals, or fixed point
at a given precision: :mod:`freeattn.algebra._moment_series`) from the series
of the constituents: free cumulants add (eqs. (8.2), (8.3)); a product with a
Marchenko-Pastur factor is compound free Poisson (eq. (5.8)); any other
product goes through the S-transform by series reversion (eqs. (8.4),
(8.5)).  All use the online recursion of eq. (8.23).  Shared by the algebraic
engine (:mod:`freeattn.compose._subordination`) and the analytic
subordination path (:mod:`freeattn.compose._analytic`).
"""


from ..algebra._moment_series import (compound_poisson_series, free_additive_series,
                                      free_multiplicative_series, scaled_series)

__all__ = ["additive_moments", "additive_series", "law_series", "multiplicative_moments",
           "multiplicative_series", "product_series"]


def _analytic_pair(law):
    """``(a, b, multiplicative)`` of a free convolution built by analytic subordination
    (:class:`freeattn.compose._analytic.AnalyticLaw`, theory section 14), else ``None``."""
    if type(law).__name__ == "AnalyticLaw" and hasattr(law, "a") and hasattr(law, "b"):
        return law.a, law.b, bool(getattr(law, "multiplicative", False))
    return None


def law_series(law, kmax, prec):
    """The moment series of a law (its ``_series``), or for an analytic free
    convolution that of the convolution of its two laws.

    Parameters
    ----------
    law : SpectralLaw
    kmax, prec : int

    Returns
    -------
    MomentSeries or None
    """
    pair = _analytic_pair(law)
    if pair is None:
        return law._series(kmax, prec)
    cache = law.__dict__.get("_series_cache", {})
    for key in (0, prec):
        hit = cache.get(key)
        if hit is not None and hit.order >= kmax:
            return hit.truncated(kmax)
    a, b, multiplicative = pair
    series = (multiplicative_series if multiplicative else additive_series)(a, b, kmax, prec)
    return None if series is None else law._store_series(series, prec)


def additive_series(a, b, kmax, prec):
    """Moment series of ``a ⊞ b`` (eqs. (8.2), (8.3)); ``None`` if a constituent has none.

    Parameters
    ----------
    a, b : SpectralLaw
    kmax : int
    prec : int
        Bits of the fixed-point arithmetic (when not exact).

    Returns
    -------
    MomentSeries or None
    """
    if a is None or b is None:
        return None
    sa = law_series(a, kmax, prec)
    if sa is None:
        return None
    sb = law_series(b, kmax, prec)
    if sb is None:
        return None
    return free_additive_series(sa, sb, prec)


def _free_factors(law):
    """``(scale, factors)`` with ``law = scale * (f_1 ⊠ f_2 ⊠ ...)``.

    S-levels (``partner ⊠ constituent``) and positive dilations are opened up,
    so that every Marchenko-Pastur factor of a tower is applied as compound
    free Poisson (eq. (5.8)) and a single positive atom as a dilation.
    """
    from ..laws._elementary import PointMasses
    from ..laws._law_base import AffineLaw

    level = getattr(law, "level", None)
    if level is not None and getattr(level, "kind", None) == "S" and level.partner is not None:
        s1, f1 = _free_factors(level.partner)
        s2, f2 = _free_factors(law.constituent)
        return s1 * s2, f1 + f2
    pair = _analytic_pair(law)
    if pair is not None and pair[2]:
        s1, f1 = _free_factors(pair[0])
        s2, f2 = _free_factors(pair[1])
        return s1 * s2, f1 + f2
    if type(law).__name__ == "ProductChainLaw":
        scale, out = 1.0, []
        for f in law.factors:
            s, fs = _free_factors(f)
            scale, out = scale * s, out + fs
        return scale, out
    if isinstance(law, AffineLaw) and law.shift == 0.0 and law.scale > 0:
        s, f = _free_factors(law.base)
        return s * law.scale, f
    if isinstance(law, PointMasses) and law.values.size == 1 and law.values[0] > 0:
        return float(law.values[0]), []
    return 1.0, [law]


def multiplicative_series(a, b, kmax, prec):
    """Moment series of ``a ⊠ b`` of laws on ``[0, oo)`` (eqs. (5.8), (8.4), (8.5)).

    The product is opened into free factors (:func:`_free_factors`); the
    factors other than Marchenko-Pastur laws are multiplied by series
    reversion (fixed point), then every Marchenko-Pastur factor is applied as
    compound free Poisson (exact when the series and its parameters are), then
    the dilations.

    Returns
    -------
    MomentSeries or None
        ``None`` if a factor has no moment series or a mean is not positive.
    """
    if a is None or b is None:
        return None
    return product_series([a, b], kmax, prec)


def product_series(laws, kmax, prec):
    """Moment series of ``laws[0] ⊠ laws[1] ⊠ ...`` (free laws on ``[0, oo)``), as
    :func:`multiplicative_series`; ``None`` if a factor has no moment series or a mean
    is not positive."""
    from ..algebra._moment_series import MomentSeries
    from ..laws._elementary import MarchenkoPastur
    from fractions import Fraction

    scale, factors = 1.0, []
    for law in laws:
        s, f = _free_factors(law)
        scale, factors = scale * s, factors + f
    mps = [f for f in factors if isinstance(f, MarchenkoPastur)]
    rest = [f for f in factors if not isinstance(f, MarchenkoPastur)]
    series = None
    for law in rest:
        s = law_series(law, kmax, prec)
        if s is None:
            return None
        series = s if series is None else free_multiplicative_series(series, s, prec)
        if series is None:
            return None
    if series is None:                                # delta_1
        series = MomentSeries([1] * (kmax + 1), 0, Fraction(1))
    for mp in mps:
        series = compound_poisson_series(series, mp.variance, mp.ratio, prec)
    if scale != 1.0:
        series = scaled_series(series, scale, prec)
    return series


def _verified(compute, kmax):
    from ..laws._law_base import verified_series

    series = verified_series(compute, kmax, "a free convolution")
    if series is None:
        return None
    return series.scaled_floats()


def additive_moments(a, b, kmax):
    """``(scale, m_j / scale**j)`` of ``a ⊞ b``, exact then rounded; ``None`` without
    moment series (eqs. (8.2), (8.3))."""
    return _verified(lambda prec: additive_series(a, b, kmax, prec), kmax)


def multiplicative_moments(a, b, kmax):
    """``(scale, m_j / scale**j)`` of ``a ⊠ b``, exact then rounded; ``None`` without
    moment series (eqs. (8.4), (8.5))."""
    return _verified(lambda prec: multiplicative_series(a, b, kmax, prec), kmax)
