"""mpmath references for the peer benchmark (benchmarks/bench_peers.py).

Independent of freeattn and of every peer: closed forms where they exist, a cubic
equation for the Stieltjes transform otherwise, all evaluated with mpmath at
``DPS`` (>= 30) significant digits and only rounded to float at the end.

Convention: ``G(z) = int dmu(x) / (z - x)``, ``G ~ 1/z``, density ``-Im G(x + i0) / pi``.

Laws
----
- Marchenko-Pastur law of ``X X^T / N`` (entries of variance ``v``, ratio ``c = p/N``),
  closed form (Marchenko & Pastur 1967)::

      rho(x) = sqrt((b - x)(x - a)) / (2 pi c v x),   a, b = v (1 -+ sqrt(c))^2.

- Fuss-Catalan law of order 2 = MP(1) boxtimes MP(1), the squared singular values
  of a product of two square Ginibre matrices (mean 1), closed form of Penson &
  Zyczkowski, Phys. Rev. E 83, 061118 (2011), eq. (11) with s = 2, on (0, 27/4]::

      rho(x) = 2^(1/3) sqrt(3) / (12 pi) * [2^(1/3) (27 + 3 sqrt(81 - 12 x))^(2/3) - 6 x^(1/3)]
               / (x^(2/3) (27 + 3 sqrt(81 - 12 x))^(1/3)).

  Cross-checked here against its algebraic equation ``z^2 G^3 - z G + 1 = 0``
  (from the moment series ``B(t) = 1 + t B(t)^3``, ``G(z) = B(1/z)/z``).

- MP(c, variance 1) boxplus semicircle(variance s2): the R-transforms add,
  ``R(w) = 1/(1 - c w) + s2 w``, and ``z = R(G) + 1/G`` gives the cubic::

      s2 c G^3 - (c z + s2) G^2 + (z - 1 + c) G - 1 = 0,

  whose root with negative imaginary part gives the density; the support edges are
  the real roots of the cubic's discriminant (a quartic in z).

- semicircle(s2) boxplus (delta_{-a} + delta_a)/2 (two bands when a is large enough),
  by subordination ``G = G_b(z - s2 G)`` with ``G_b(w) = w / (w^2 - a^2)``::

      s2^2 G^3 - 2 s2 z G^2 + (z^2 - a^2 + s2) G - z = 0.

- sample_covariance(w1 delta_t1 + w2 delta_t2, c), the limit eigenvalue law of
  ``T^1/2 X X^T T^1/2 / N`` (p/N -> c), from Silverstein's equation (Silverstein &
  Bai 1995) in this sign convention, ``G = sum_i w_i / (z - t_i u)`` with
  ``u = 1 - c + c z G``: with ``alpha = 1 - c``, ``beta = c z``,
  ``s = w1 t2 + w2 t1``::

      t1 t2 beta^2 G^3 + (2 t1 t2 alpha beta - (t1 + t2) z beta) G^2
          + (z^2 - (t1 + t2) alpha z + t1 t2 alpha^2 + s beta) G - z + s alpha = 0.

For these two cubics (real coefficients at real z) the density is the root with
negative imaginary part, and the support edges are those real roots of the
discriminant (recovered, like the quartic above, from its values at integer nodes)
at which that density switches between zero and positive.  Both are cross-checked
against tests/reference/composition_references.json (cases ``sc_two_atoms`` and
``samplecov_two_atoms``, 40-digit continuation references) by
tests/test_composition_references.py.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

DPS = 30


def marchenko_pastur_edges(ratio, variance=1.0):
    """Support ``(a, b)`` of the MP law (ratio <= 1), ``v (1 -+ sqrt(c))^2``."""
    root = ratio ** 0.5
    return variance * (1.0 - root) ** 2, variance * (1.0 + root) ** 2


def marchenko_pastur_density(x, ratio, variance=1.0, dps=DPS):
    """MP density at each float ``x``, closed form at ``dps`` digits, as floats."""
    out = np.zeros(np.shape(x))
    with mp.workdps(dps):
        c = mp.mpf(ratio)
        v = mp.mpf(variance)
        a = v * (1 - mp.sqrt(c)) ** 2
        b = v * (1 + mp.sqrt(c)) ** 2
        for i, xi in enumerate(np.asarray(x, dtype=float).ravel()):
            t = mp.mpf(xi)
            if a < t < b:
                out.flat[i] = float(mp.sqrt((b - t) * (t - a)) / (2 * mp.pi * c * v * t))
    return out


FUSS_CATALAN2_EDGES = (0.0, 27.0 / 4.0)


def _fuss_catalan2_closed_form(t):
    """Penson & Zyczkowski (2011), eq. (11) with s = 2, at an mpf point 0 < t < 27/4."""
    root = 27 + 3 * mp.sqrt(81 - 12 * t)
    cbrt2 = mp.cbrt(2)
    return (cbrt2 * mp.sqrt(3) / (12 * mp.pi)
            * (cbrt2 * root ** (mp.mpf(2) / 3) - 6 * mp.cbrt(t))
            / (t ** (mp.mpf(2) / 3) * mp.cbrt(root)))


def _fuss_catalan2_from_cubic(t):
    """Density from ``z^2 G^3 - z G + 1 = 0``: the root with the most negative Im G."""
    roots = mp.polyroots([t ** 2, 0, -t, 1], maxsteps=200, extraprec=2 * mp.mp.prec)
    return max(0, -min(mp.im(r) for r in roots)) / mp.pi


def fuss_catalan2_density(x, dps=DPS):
    """Fuss-Catalan (order 2) density at each float ``x``, as floats."""
    out = np.zeros(np.shape(x))
    with mp.workdps(dps):
        for i, xi in enumerate(np.asarray(x, dtype=float).ravel()):
            t = mp.mpf(xi)
            if 0 < t < mp.mpf(27) / 4:
                out.flat[i] = float(_fuss_catalan2_closed_form(t))
    return out


def _mp_plus_semicircle_coefficients(z, ratio, s2):
    """Coefficients (highest first) of the cubic in G for MP(ratio) boxplus SC(s2)."""
    return [s2 * ratio, -(ratio * z + s2), z - 1 + ratio, mp.mpf(-1)]


def _cubic_discriminant(a, b, c, d):
    return 18 * a * b * c * d - 4 * b ** 3 * d + b ** 2 * c ** 2 - 4 * a * c ** 3 - 27 * a ** 2 * d ** 2


def mp_plus_semicircle_edges(ratio, s2, dps=DPS):
    """Support ``(lower, upper)`` of MP(ratio) boxplus SC(s2): outermost real roots of the
    discriminant of the cubic, a quartic in z recovered exactly from five of its values."""
    with mp.workdps(dps):
        c, s = mp.mpf(ratio), mp.mpf(s2)
        nodes = [mp.mpf(k) for k in range(-2, 3)]
        values = [_cubic_discriminant(*_mp_plus_semicircle_coefficients(t, c, s)) for t in nodes]
        vandermonde = mp.matrix([[t ** p for p in range(4, -1, -1)] for t in nodes])
        coeffs = mp.lu_solve(vandermonde, mp.matrix(values))
        roots = mp.polyroots([coeffs[k] for k in range(5)], maxsteps=200, extraprec=200)
        real = sorted(mp.re(r) for r in roots if abs(mp.im(r)) < mp.mpf(10) ** (-dps // 2))
        return float(real[0]), float(real[-1])


def mp_plus_semicircle_density(x, ratio, s2, dps=DPS):
    """Density of MP(ratio, variance 1) boxplus semicircle(variance s2), as floats."""
    out = np.zeros(np.shape(x))
    with mp.workdps(dps):
        c, s = mp.mpf(ratio), mp.mpf(s2)
        for i, xi in enumerate(np.asarray(x, dtype=float).ravel()):
            coeffs = _mp_plus_semicircle_coefficients(mp.mpf(xi), c, s)
            roots = mp.polyroots(coeffs, maxsteps=200, extraprec=2 * mp.mp.prec)
            out.flat[i] = float(max(0, -min(mp.im(r) for r in roots)) / mp.pi)
    return out


def _negative_im_density(coeffs):
    """-min Im of the roots / pi (0 when all roots are real), at the working precision."""
    roots = mp.polyroots(coeffs, maxsteps=400, extraprec=2 * mp.mp.prec)
    return max(0, -min(mp.im(r) for r in roots)) / mp.pi


def _discriminant_polynomial(coefficients, degree):
    """Coefficients (highest first) of disc_G(P(z, G)) as a polynomial in z of at most
    ``degree``, from its values at ``degree + 1`` integer nodes (exact up to round-off
    of the working precision); leading coefficients that vanish to round-off are dropped,
    and so are trailing ones (a factor z^k)."""
    nodes = [mp.mpf(k) for k in range(-(degree // 2), degree - degree // 2 + 1)]
    values = [_cubic_discriminant(*coefficients(t)) for t in nodes]
    vandermonde = mp.matrix([[t ** p for p in range(degree, -1, -1)] for t in nodes])
    coeffs = mp.lu_solve(vandermonde, mp.matrix(values))
    coeffs = [coeffs[k] for k in range(degree + 1)]
    size = max(abs(c) for c in coeffs)
    while abs(coeffs[0]) < size * mp.mpf(10) ** (-mp.mp.dps // 2):
        coeffs = coeffs[1:]
    # Roots at z = 0 (a multiple root where P's leading coefficient in G vanishes) are
    # dropped: 0 is not an edge of these laws, and a multiple root slows polyroots.
    while abs(coeffs[-1]) < size * mp.mpf(10) ** (-mp.mp.dps // 2):
        coeffs = coeffs[:-1]
    return coeffs


def _support_edges(coefficients, degree, scale):
    """Real roots of the discriminant at which the density switches on or off, sorted."""
    disc = _discriminant_polynomial(coefficients, degree)
    roots = mp.polyroots(disc, maxsteps=400, extraprec=4 * mp.mp.prec)
    real = sorted(mp.re(r) for r in roots if abs(mp.im(r)) < mp.mpf(10) ** (-mp.mp.dps // 2))
    delta = mp.mpf(10) ** -10 * scale
    edges = []
    for r in real:
        left = _negative_im_density(coefficients(r - delta)) > mp.mpf(10) ** (-mp.mp.dps // 2)
        right = _negative_im_density(coefficients(r + delta)) > mp.mpf(10) ** (-mp.mp.dps // 2)
        if left != right:
            edges.append(r)
    return edges


def _density_on_bands(x, coefficients, edges):
    """Density at each float x: zero outside the bands [e0, e1], [e2, e3], ..."""
    out = np.zeros(np.shape(x))
    for i, xi in enumerate(np.asarray(x, dtype=float).ravel()):
        t = mp.mpf(xi)
        if any(edges[k] < t < edges[k + 1] for k in range(0, len(edges), 2)):
            out.flat[i] = float(_negative_im_density(coefficients(t)))
    return out


def _sc_two_atoms_coefficients(z, s2, atom):
    """Cubic in G (highest first) of semicircle(s2) boxplus (delta_-a + delta_a)/2."""
    return [s2 ** 2, -2 * s2 * z, z * z - atom ** 2 + s2, -z]


def sc_two_atoms_edges(s2=1.0, atom=3.0, dps=DPS):
    """Support edges ``(e0, e1, e2, e3)`` (two bands) or ``(e0, e1)`` (one band) of
    semicircle(s2) boxplus point_masses([-atom, atom], [0.5, 0.5]), as floats."""
    with mp.workdps(dps):
        s, a = mp.mpf(s2), mp.mpf(atom)
        edges = _support_edges(lambda t: _sc_two_atoms_coefficients(t, s, a), 6,
                               a + 2 * mp.sqrt(s))
        return tuple(float(e) for e in edges)


def sc_two_atoms_density(x, s2=1.0, atom=3.0, dps=DPS):
    """Density of semicircle(s2) boxplus point_masses([-atom, atom], [0.5, 0.5]) at each
    float ``x``, as floats."""
    with mp.workdps(dps):
        s, a = mp.mpf(s2), mp.mpf(atom)

        def coefficients(t):
            return _sc_two_atoms_coefficients(t, s, a)
        edges = _support_edges(coefficients, 6, a + 2 * mp.sqrt(s))
        return _density_on_bands(x, coefficients, edges)


def _samplecov_two_atoms_coefficients(z, values, weights, ratio):
    """Cubic in G (highest first) of sample_covariance(two point masses, ratio)."""
    (t1, t2), (w1, w2) = values, weights
    alpha, beta = 1 - ratio, ratio * z
    s = w1 * t2 + w2 * t1
    return [t1 * t2 * beta ** 2,
            2 * t1 * t2 * alpha * beta - (t1 + t2) * z * beta,
            z * z - (t1 + t2) * alpha * z + t1 * t2 * alpha ** 2 + s * beta,
            -z + s * alpha]


def _samplecov_setup(values, weights, ratio):
    vals = tuple(mp.mpf(v) for v in values)
    wts = tuple(mp.mpf(w) for w in weights)
    c = mp.mpf(ratio)

    def coefficients(t):
        return _samplecov_two_atoms_coefficients(t, vals, wts, c)
    scale = max(vals) * (1 + mp.sqrt(c)) ** 2
    return coefficients, _support_edges(coefficients, 8, scale)


def samplecov_two_atoms_edges(values=(1.0, 10.0), weights=(0.5, 0.5), ratio=0.1, dps=DPS):
    """Support edges of sample_covariance(point_masses(values, weights), ratio) (the
    continuous part; for ratio > 1 there is also an atom 1 - 1/ratio at 0), as floats."""
    with mp.workdps(dps):
        return tuple(float(e) for e in _samplecov_setup(values, weights, ratio)[1])


def samplecov_two_atoms_density(x, values=(1.0, 10.0), weights=(0.5, 0.5), ratio=0.1,
                                dps=DPS):
    """Density of sample_covariance(point_masses(values, weights), ratio) at each float
    ``x`` (the continuous part), as floats."""
    with mp.workdps(dps):
        coefficients, edges = _samplecov_setup(values, weights, ratio)
        return _density_on_bands(x, coefficients, edges)


def self_check(dps=DPS):
    """Consistency of the references, returned as a dict of worst discrepancies.

    - Fuss-Catalan closed form against its cubic at 7 interior points;
    - MP boxplus SC with s2 -> 0 against the MP closed form (s2 = 1e-20);
    - total mass of MP boxplus SC by mpmath quadrature between its edges.
    """
    worst = {}
    with mp.workdps(dps):
        pts = [mp.mpf(k) / 8 * mp.mpf(27) / 4 for k in range(1, 8)]
        worst["fuss_catalan2_closed_vs_cubic"] = float(max(
            abs(_fuss_catalan2_closed_form(t) / _fuss_catalan2_from_cubic(t) - 1) for t in pts))
    x = np.linspace(0.2, 2.8, 9)
    mp_ref = marchenko_pastur_density(x, 0.5, 1.0, dps)
    conv = mp_plus_semicircle_density(x, 0.5, 1e-20, dps)
    worst["mp_plus_sc_vs_mp_at_s2_0"] = float(np.max(np.abs(conv - mp_ref)))
    lo, hi = mp_plus_semicircle_edges(0.5, 1.0, dps)
    with mp.workdps(15):
        def density(t):
            coeffs = _mp_plus_semicircle_coefficients(t, mp.mpf(0.5), mp.mpf(1))
            return max(0, -min(mp.im(r) for r in mp.polyroots(coeffs, maxsteps=100,
                                                               extraprec=60))) / mp.pi
        mass = mp.quad(density, [lo, (lo + hi) / 2, hi])
    worst["mp_plus_sc_mass_minus_1"] = float(abs(mass - 1))
    return worst


if __name__ == "__main__":
    for name, value in self_check().items():
        print(f"{name}: {value:.3e}")
    print("MP(0.5) boxplus SC(1) support:", mp_plus_semicircle_edges(0.5, 1.0))
    print("SC(1) boxplus atoms -3, 3 support:", sc_two_atoms_edges())
    print("sample covariance of atoms 1, 10 (ratio 0.1) support:", samplecov_two_atoms_edges())
