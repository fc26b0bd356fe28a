"""40-digit edges of nested sample covariances over a discrete population (theory
section 14.62, eq. (14.67)).

Run from the repository root:

    python tests/reference/make_discrete_tower_references.py

The laws are ``MP(1, c_1) ⊠ ... ⊠ MP(1, c_m) ⊠ nu`` with ``nu`` the four-atom population
of the depth-3 campaign's seed 80 / draw 37 (atoms 4.779, 2.75, 4.986, 2.507 with weights
0.138, 0.639, 0.021, 0.202):

* ``two_levels``: ``c = (9.1327, 9.1414)``, ``sample_covariance(sample_covariance(nu,
  9.1327), 9.1414)``;
* ``three_levels``: ``c = (9.1327, 9.1414, 1.7133)``, the seed's law itself;
* ``six_factors``: the depth-3 campaign's seed 106 / draw 31, ``MP(s_k, c_k)`` for
  ``(s, c) = (1, 2.2275), (1.4848, 0.20064), (1.3225, 2.2271), (0.7798, 2.2413), (1.1997,
  1.3974)`` over the atoms 4.174, 1.719, 4.663, 4.291 with weights 0.019, 0.063, 0.223,
  0.695.

With ``psi(zeta) = sum_j p_j a_j zeta/(1 - a_j zeta)`` the edges of the support are the
critical values on the real axis of ``x(zeta) = zeta**-1 prod_k s_k (1 + c_k psi(zeta))``
(eq. (14.67); ``s_k = 1`` unless given).  ``x'`` is scanned for sign changes on a grid of real ``zeta`` (geometric
on the negative axis from -1e3 to -1e-3, uniform on ``[1e-3, 1/max(a)]`` below the first
pole), each bracket refined by ``mpmath.findroot`` (Anderson) at ``DPS`` digits; the
positive critical values are the edges.  freeattn is not used.  The parameters are the
decimal strings above.

The density of ``two_levels`` at ``DENSITY_POINTS``: ``G(x) = (1 + psi(zeta))/x`` at the root
``zeta`` of ``x(zeta) = z`` (``1/x = chi_mu(psi(zeta))``, eq. (14.67)), continued (as ``z/x(zeta) = 1``) from
``z = x + 1000 i`` (``zeta ~ 1/z``) down the vertical line by halving ``Im z`` to
``1e-30`` and then to ``Im z = 0``, each level by ``mpmath.findroot`` (secant) from the last; the
density is ``-Im G/pi``.

Written to ``tests/reference/discrete_tower_references.json`` as decimal strings (the
lowest and the highest edge of each law; the densities).
"""

import json
import pathlib

import mpmath

DPS = 40
OUT = pathlib.Path(__file__).with_name("discrete_tower_references.json")
ATOMS = ("4.779", "2.75", "4.986", "2.507")
WEIGHTS = ("0.138", "0.639", "0.021", "0.202")
LAWS = {"two_levels": ("9.1327", "9.1414"), "three_levels": ("9.1327", "9.1414", "1.7133")}
#: (atoms, weights, ((variance, ratio), ...)) of the laws with their own population
OTHER_LAWS = {"six_factors": (("4.174", "1.719", "4.663", "4.291"),
                              ("0.019", "0.063", "0.223", "0.695"),
                              (("1", "2.2275"), ("1.4848", "0.20064"), ("1.3225", "2.2271"),
                               ("0.7798", "2.2413"), ("1.1997", "1.3974")))}
DENSITY_POINTS = ("6e-6", "1e-5", "6.4e-5", "1e-3", "1")
#: The secant's second point, relative to the first (the default, ``+1/4``, leaves the
#: branch far out where ``zeta ~ 1/z`` is small).
STEP = mpmath.mpf("1e-8")


def _maps(ratios, atoms=ATOMS, weights=WEIGHTS, variances=None):
    a = [mpmath.mpf(v) for v in atoms]
    p = [mpmath.mpf(v) for v in weights]
    c = [mpmath.mpf(v) for v in ratios]
    s = [mpmath.mpf(v) for v in (variances or ("1",) * len(ratios))]

    def psi(zeta):
        return sum(pj * aj * zeta / (1 - aj * zeta) for aj, pj in zip(a, p))

    def x_of(zeta):
        out = 1 / zeta
        w = psi(zeta)
        for sk, ck in zip(s, c):
            out *= sk * (1 + ck * w)
        return out
    return a, psi, x_of


def density(ratios, x):
    """``-Im G(x)/pi`` by the continuation of ``x(zeta) = z`` from ``z = x + 1000 i``."""
    _, psi, x_of = _maps(ratios)
    y = mpmath.mpf(1000)
    zeta = 1 / mpmath.mpc(x, y)
    while True:
        z = mpmath.mpc(x, y)
        # in the relative form z/x(zeta) - 1 (x ~ 1/zeta far out)
        zeta = mpmath.findroot(lambda q: z / x_of(q) - 1, (zeta, zeta * (1 + STEP)))
        if y == 0:
            break
        y = y / 2 if y > mpmath.mpf("1e-30") else mpmath.mpf(0)
    return -mpmath.im((1 + psi(zeta)) / x) / mpmath.pi


def critical_values(ratios, points=20000, **population):
    a, _, x_of = _maps(ratios, **population)

    def dx(zeta):
        return mpmath.diff(x_of, zeta)

    first_pole = 1 / max(a)
    grid = ([-mpmath.mpf(10) ** (3 - 6 * mpmath.mpf(k) / 3000) for k in range(3001)]
            + [mpmath.mpf("1e-3") + (first_pole - mpmath.mpf("2e-3")) * k / points
               for k in range(points + 1)])
    values = []
    prev = None
    for zeta in grid:
        d = dx(zeta)
        if prev is not None and mpmath.sign(d) != mpmath.sign(prev[1]):
            root = mpmath.findroot(dx, (prev[0], zeta), solver="anderson")
            if abs(dx(root)) > mpmath.mpf(10) ** (15 - DPS) * abs(dx(root * (1 + mpmath.mpf(10) ** -3))):
                raise AssertionError(f"x' = {dx(root)} at zeta = {root}")
            values.append(x_of(root))
        prev = (zeta, d)
    return sorted(v for v in values if v > 0)


def main():
    mpmath.mp.dps = DPS
    laws = {}
    for name, ratios in LAWS.items():
        vals = critical_values(ratios)
        laws[name] = [mpmath.nstr(vals[0], DPS), mpmath.nstr(vals[-1], DPS)]
        print(name, laws[name])
    for name, (atoms, weights, levels) in OTHER_LAWS.items():
        vals = critical_values([c for _, c in levels], atoms=atoms, weights=weights,
                               variances=[v for v, _ in levels])
        laws[name] = [mpmath.nstr(vals[0], DPS), mpmath.nstr(vals[-1], DPS)]
        print(name, laws[name])
    dens = {x: mpmath.nstr(density(LAWS["two_levels"], mpmath.mpf(x)), DPS)
            for x in DENSITY_POINTS}
    print(dens)
    OUT.write_text(json.dumps({"dps": DPS, "command":
                               "python tests/reference/make_discrete_tower_references.py",
                               "laws": laws, "two_levels_density": dens}, indent=1) + "\n")


if __name__ == "__main__":
    main()
