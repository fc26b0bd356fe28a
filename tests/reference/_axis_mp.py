"""The density on the axis of a sum from its subordination map, at ``mpmath`` precision:
the loop shared by the reference scripts of bands solved by eq. (14.1) (theory sections
14.38, 14.52 and 14.55)."""

import mpmath


def axis_densities(phi, g_a, x, starts, dps):
    """``[repr(x), -Im G_a(w)/pi]`` at each float point ``x`` of a band, as strings.

    ``w = phi(w, z)`` is solved by ``mpmath.findroot`` at ``z = x + 10**-34 i`` from
    ``starts`` (freeattn's values, the starting points only) at the working precision
    ``dps``; a root is accepted when its residual is below ``10**-(dps - 10) |w|`` and
    ``Im G_a(w) < 0`` (the branch of the upper half-plane)."""
    tol = mpmath.mpf(10) ** -(dps - 10)
    points = []
    for xi, start in zip(x, starts):
        z = mpmath.mpf(float(xi)) + 1j * mpmath.mpf(10) ** -34
        w = mpmath.findroot(lambda v: phi(v, z) - v, mpmath.mpc(complex(start)))
        assert abs(phi(w, z) - w) < tol * abs(w)
        g = g_a(w)
        assert mpmath.im(g) < 0
        points.append([repr(float(xi)), mpmath.nstr(-mpmath.im(g) / mpmath.pi, dps)])
    return points


def sum_phi(a, b):
    """The map of eq. (14.1), ``phi(w, z) = z + h_b(z + h_a(w))`` with ``h = 1/G - u``,
    from the laws' own mpmath transforms (``_mp_stieltjes``)."""

    def h(law, u):
        return 1 / law._mp_stieltjes(u) - u

    def phi(w, z):
        return z + h(b, z + h(a, w))

    return phi


def edge(phi, w0, x0, dps):
    """The real edge ``x`` with ``w = phi(w, x)`` and ``d phi / d w = 1`` (eq. (14.5)),
    by ``mpmath.findroot`` from ``(w0, x0)`` (the derivative by ``mpmath.diff``); its
    residual below ``10**-(dps - 10) |w|``."""
    tol = mpmath.mpf(10) ** -(dps - 10)
    sol = mpmath.findroot(
        lambda v, t: [phi(v, t) - v, mpmath.diff(lambda u: phi(u, t), v) - 1],
        (mpmath.mpf(float(w0)), mpmath.mpf(float(x0))))
    w_e, x_e = mpmath.re(sol[0]), mpmath.re(sol[1])
    assert abs(phi(w_e, x_e) - w_e) < tol * abs(w_e)
    return x_e
