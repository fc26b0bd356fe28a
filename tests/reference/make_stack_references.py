"""High-precision references for products of attention laws (stacks of layers).

Run from the repository root:

    PYTHONPATH=. python tests/reference/make_stack_references.py

It writes ``tests/reference/stack_references.json`` (about a minute of CPU).
Working precision ``DPS`` = 50 significant digits; the values are stored as
decimal strings of ``STORED_DIGITS`` = 40 digits, and every root is accepted
only when its residual is below ``10**-(DPS - RESIDUAL_SLACK)``.  The tests do
not run this script: they read the JSON.

The law of the squared singular values of a stack of ``L`` independent layers
is ``nu_L ⊠ ... ⊠ nu_1`` (theory eq. (13.2)), computed here by the S-transform
route, independently of freeattn's solvers (no subordination, no polynomial,
no engine: only mpmath).  freeattn is imported for two cross-checks only: the
coefficients ``theta1, theta2`` (recomputed here from their closed forms,
theory eqs. (2.4)-(2.6), and compared with ``linear_coefficients(beta,
dps=DPS)``) and the exact moments (``stack_moments`` in sympy arithmetic,
compared with the moments of the series below to ``MOMENT_DIGITS`` digits).

Derivation (theory eqs. (13.9)-(13.11)).

1. One layer is the sample-covariance law with ratio ``c = 1`` and population
   ``H = a + b MP_lam``, ``a = alpha**2 = theta1 - theta2``, ``b = beta**2``,
   ``lam = 1/gamma`` (theory eqs. (5.1), (5.5)); for ``c = 1`` it is
   ``H ⊠ MP_1`` (its free cumulants are the moments of ``H``, eq. (5.8)), and
   ``S_{MP_1}(w) = 1/(1 + w)``.
2. ``S_H``: with ``psi(z) = sum_k m_k z**k = G(1/z)/z - 1`` and
   ``chi = psi^{-1}``, ``psi_H(z) = w`` means ``G_H(zeta) = (1 + w)/zeta`` at
   ``zeta = 1/z``.  ``G_H(zeta) = g/b`` with ``g = G_MP((zeta - a)/b)``, a
   root of ``lam xi g**2 - (xi + lam - 1) g + 1 = 0`` (eq. (5.5) with
   ``G = -M``).  Substituting ``g = b (1 + w) z`` and ``xi = (1/z - a)/b``
   gives ``lam a b (1 + w)**2 z**2 - (1 + w) P z + w = 0`` with
   ``P = a + b + lam b w``; so ``sigma = S_H(w) = chi_H(w) (1 + w)/w`` solves

       lam a b w sigma**2 - P sigma + 1 = 0,
       sigma = 2 / (P + s),   s**2 = D(w) = P**2 - 4 lam a b w,

   the root with ``sigma(0) = 1/(a + b) = 1/m_1(H)`` (``s(0) = a + b``).
   Checks: ``a = 0`` gives ``1/(b (1 + lam w))`` (``S`` of ``b MP_lam``),
   ``b = 0`` gives ``1/a`` (``S`` of ``delta_a``).
   ``D = lam**2 b**2 w**2 + 2 lam b (b - a) w + (a + b)**2`` has the
   discriminant ``-16 lam**2 a b**3 < 0``: no real zero, so on the real
   ``w`` axis ``s`` is the positive root.  Off the axis ``s`` is continued
   analytically: every step picks the sign of ``sqrt(D)`` nearer to the
   previous step's ``s`` (the script records whether that ever differs from
   the principal root).
3. The stack: ``S(w) = prod_l S_{H_l}(w) / (1 + w)**L`` and

       chi(w) = w prod_l sigma_l(w) / (1 + w)**(L + 1),
       d log chi / dw = 1/w - (L + 1)/(1 + w) + sum_l lam_l b_l (a_l sigma_l - 1)/s_l

   (``d sigma/dw = lam b sigma (a sigma - 1)/s`` by implicit differentiation;
   ``2 lam a b w sigma - P = -s``).
4. ``G(z) = (1 + w)/z`` with ``chi(w) = 1/z``, ``w = psi(1/z)``, on the branch
   continuous from ``w ~ m_1/z`` at large ``|z|``: Newton on
   ``z chi(w) - 1 = 0`` along ``z = x + i eta``, ``eta`` from ``8 x_+`` divided by
   ``ETA_FACTOR`` per step down to ``ETA_END x_+`` (``w`` stays in the lower half-plane), then at
   ``eta = 0``; the density is ``f(x) = -Im G(x + i0)/pi = -Im w/(pi x)``.
5. Edges: ``x`` real above the support has ``1/x`` in ``(0, 1/x_+)`` and ``w``
   real increasing from 0; the soft edge is ``x_+ = 1/chi(w*)`` at the first
   zero ``w* > 0`` of ``d log chi/dw`` (``mpmath.findroot``, 50 digits).  A scan
   of ``d log chi/dw`` on ``(-1, 0)`` and ``W_SCAN`` (``w`` up to ``1e4``) finds no other
   zero in every case stored: ``x < 0`` maps to ``w`` in ``(-1, 0)`` with
   ``chi`` monotone, so the support is the single band ``[0, x_+]`` with a hard
   edge at 0.
6. Hard edge: at ``w = -1 + eps``, ``chi ~ -K/eps**(L + 1)`` with
   ``K = prod_l sigma_l(-1) > 0``, so ``eps**(L+1) ~ -K z``; continuity from
   ``z < 0`` (``eps > 0``) through the upper half-plane gives
   ``arg eps -> -pi/(L + 1)`` at ``z = x + i0`` and

       f(x) ~ C x**(-L/(L + 1)),   C = K**(1/(L + 1)) sin(pi/(L + 1)) / pi,

   theory eq. (14.6) with ``p = L``.  The script checks it against the solved
   density at ``x = 10**-k x_+`` (the ratio tends to 1 like ``x**(1/(L+1))``).
7. Moments: the power series of ``sigma_l`` (fixed point of
   ``sigma = (1 + lam a b w sigma**2)/P``), of ``chi``, and its reversion
   ``psi``, in mpmath at ``DPS`` digits, give ``m_1 .. m_MOMENTS``.
8. Mass: ``int_0^{x_+} f = 1`` and ``int x f = m_1`` by tanh-sinh quadrature
   at ``QUAD_DPS`` digits (both edge singularities are algebraic).

JSON layout: ``cases[name]`` has ``betas``, ``gammas`` (per layer, decimal
strings), ``layers``, ``theta1`` (per layer), ``intervals`` ``[[0, x_+]]``,
``critical_w`` (``w*``), ``density`` (``[x, f(x)]`` pairs at the
``DENSITY_FRACTIONS`` of the band), ``stieltjes`` (``[re z, im z, re G, im G]``),
``moments`` (``m_1 .. m_MOMENTS``), ``hard_edge`` (``exponent`` as a fraction
string, ``coefficient`` ``C``), and the checks' measured numbers.
"""

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import mpmath

DPS = 50
STORED_DIGITS = 40
#: Newton/findroot residuals must be below 10**-(DPS - RESIDUAL_SLACK).
RESIDUAL_SLACK = 8
#: A residual below ROUNDING_RESIDUAL * eps is at the rounding of ``z chi(w) - 1``.
ROUNDING_RESIDUAL = 100
#: Digits to which the series moments must equal freeattn's exact moments.
MOMENT_DIGITS = 30
MOMENTS = 6
#: Continuation in eta = Im z stops at ETA_END * x_+ before the solve at eta = 0.
ETA_END = mpmath.mpf(10) ** -12
#: Ratio of successive eta levels of the continuation.
ETA_FACTOR = 4
#: The scan for real critical points covers w in [W_SCAN[0], W_SCAN[1]] and (-1, 0).
W_SCAN = (mpmath.mpf(10) ** -6, mpmath.mpf(10) ** 4)
QUAD_DPS = 20
DENSITY_FRACTIONS = ["0.001", "0.01", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4",
                     "0.5", "0.6", "0.7", "0.75", "0.8", "0.85", "0.9", "0.95", "0.99",
                     "0.999"]
#: Complex points z / x_+ of the Stieltjes transform (inside the band, above it, below 0).
STIELTJES_POINTS = [(mpmath.mpf("0.3"), mpmath.mpf("0.05")), (mpmath.mpf("0.7"), mpmath.mpf("0.01")),
                    (mpmath.mpf("1.5"), mpmath.mpf(0)), (mpmath.mpf(-1), mpmath.mpf(0))]
#: (name, betas, gammas): one entry per layer, as exact decimal strings.
CASES = [
    ("L2_beta1_gamma1", ["1", "1"], ["1", "1"]),
    ("L2_beta0.5_gamma1", ["0.5", "0.5"], ["1", "1"]),
    ("L2_beta1_gamma0.5", ["1", "1"], ["0.5", "0.5"]),
    ("L2_mixed", ["1", "0.5"], ["1", "0.5"]),
    ("L3_beta1_gamma1", ["1", "1", "1"], ["1", "1", "1"]),
]
OUT = Path(__file__).with_name("stack_references.json")


def tol():
    return mpmath.mpf(10) ** (RESIDUAL_SLACK - mpmath.mp.dps)


def nstr(v):
    return mpmath.nstr(v, STORED_DIGITS)


# ---------------------------------------------------------------------------
# one layer


def layer_parameters(beta, gamma):
    """``(a, b, lam, theta1)`` of ``H = a + b MP_lam`` (theory eqs. (2.4)-(2.6), (5.5))."""
    beta = mpmath.mpf(beta)
    theta2 = beta ** 2
    theta1 = mpmath.expm1(theta2)
    # alpha**2 = sum_{k>=2} beta**(2k)/k! (eq. (2.6)), summed without cancellation
    alpha2 = mpmath.nsum(lambda k: theta2 ** k / mpmath.factorial(k), [2, mpmath.inf])
    assert abs(alpha2 - (theta1 - theta2)) <= tol() * theta1
    return alpha2, theta2, 1 / mpmath.mpf(gamma), theta1


def check_coefficients(beta, theta1, theta2):
    """The closed forms against freeattn's own mpmath path (its only solver-free part)."""
    import freeattn

    c = freeattn.linear_coefficients(float(beta), dps=DPS)
    return max(abs(mpmath.mpf(c.theta1) / theta1 - 1), abs(mpmath.mpf(c.theta2) / theta2 - 1))


def sigma(layer, w, ref=None):
    """``(S_H(w), s)``: eq. (13.9), ``s`` the root of ``D(w)`` continued from ``ref``."""
    a, b, lam, _ = layer
    p = a + b + lam * b * w
    s = mpmath.sqrt(p * p - 4 * lam * a * b * w)
    if ref is not None and abs(s - ref) > abs(s + ref):
        s = -s
    return 2 / (p + s), s


# ---------------------------------------------------------------------------
# the product


class Stack:
    """``chi(w)`` and ``d log chi/dw`` of ``nu_L ⊠ ... ⊠ nu_1`` (eq. (13.10))."""

    def __init__(self, layers):
        self.layers = layers
        self.L = len(layers)
        self.flips = 0           # steps where the continued s was not the principal root

    def eval(self, v, refs=None):
        """``(chi, d log chi/dw, s_list)`` at ``w = v - 1``.

        The unknown is ``v = 1 + w``: next to the hard edge ``w -> -1`` and ``v``
        keeps its relative precision where ``w`` would not.
        """
        refs = refs or [None] * self.L
        w = v - 1
        chi = w / v ** (self.L + 1)
        dlog = 1 / w - (self.L + 1) / v
        ss = []
        for layer, ref in zip(self.layers, refs):
            a, b, lam, _ = layer
            sg, s = sigma(layer, w, ref)
            chi *= sg
            dlog += lam * b * (a * sg - 1) / s
            ss.append(s)
        return chi, dlog, ss

    def solve(self, z, v, refs):
        """Newton on ``z chi(w) - 1 = 0`` in ``v = 1 + w`` (``s`` continued from ``refs``)."""
        for _ in range(200):
            chi, dlog, ss = self.eval(v, refs)
            h = z * chi - 1
            step = h / (z * chi * dlog)
            # damp steps that would cross w = -1 (move v by at most half its size)
            lim = abs(v) / 2
            if abs(step) > lim:
                step *= lim / abs(step)
            v -= step
            refs = ss
            # converged: a step at the tolerance, or a residual at rounding (next to a
            # double root, at a node of the quadrature within rounding of x_+, Newton's
            # step is rounding noise divided by a vanishing derivative)
            if abs(h) <= tol() and (abs(step) <= tol() * min(abs(v), abs(v - 1))
                                    or abs(h) <= ROUNDING_RESIDUAL * mpmath.eps):
                break
        else:
            raise RuntimeError(f"Newton did not converge at z = {z}: residual {h}")
        chi, _, ss = self.eval(v, refs)
        res = abs(z * chi - 1)
        assert res <= tol(), (z, res)
        w = v - 1
        for s, layer in zip(ss, self.layers):
            a, b, lam, _ = layer
            p = a + b + lam * b * w
            if abs(s - mpmath.sqrt(p * p - 4 * lam * a * b * w)) > abs(s) / 2:
                self.flips += 1
        return v, ss

    def v_of_z(self, z, top):
        """``v = 1 + psi(1/z)`` on the Stieltjes branch, by continuation in ``eta = Im z``."""
        x, target = mpmath.re(z), mpmath.im(z)
        eta = 8 * top
        zz = mpmath.mpc(x, eta)
        v, refs = self.solve(zz, 1 + self.mean / zz, None)
        # down to ETA_END of the smaller of x_+ and |x| (next to the hard edge the
        # solution varies on the scale |x|)
        scale = min(top, abs(x)) if x != 0 else top
        end = max(target, ETA_END * scale)
        prev = None
        while eta > end:
            new = max(eta / ETA_FACTOR, end)
            # secant extrapolation of v in eta from the last two levels
            guess = v if prev is None else v + (v - prev[0]) * (new - eta) / (eta - prev[1])
            if abs(guess - v) > abs(v) / 2:
                guess = v
            prev = (v, eta)
            eta = new
            v, refs = self.solve(mpmath.mpc(x, eta), guess, refs)
        if target < end:
            v, refs = self.solve(mpmath.mpc(x, target), v, refs)
        return v

    @property
    def mean(self):
        m = mpmath.mpf(1)
        for _, _, _, theta1 in self.layers:
            m *= theta1
        return m

    def cauchy(self, z, top):
        """``(G(z), v)``: ``G = (1 + w)/z = v/z`` (eq. (13.10))."""
        v = self.v_of_z(z, top)
        return v / z, v

    def density(self, x, top, strict=True):
        """``-Im G(x + i0)/pi``; ``strict=False`` returns 0 where ``Im v`` is at rounding
        (the quadrature's nodes next to ``x_+``)."""
        g, v = self.cauchy(mpmath.mpc(x, 0), top)
        if not strict and mpmath.im(v) > -tol():
            return mpmath.mpf(0)
        assert mpmath.im(v) < 0, (x, v)
        return -mpmath.im(g) / mpmath.pi


def critical_points(stack):
    """Real zeros of ``d log chi/dw`` on ``(-1, 0)`` and on ``W_SCAN`` (step 5)."""
    def dlog(w):
        return stack.eval(1 + mpmath.mpf(w))[1]

    found = []
    # (0, inf): d log chi -> +inf at 0+, and -(L+1) + 1 + ... < 0 at infinity
    grids = []
    lo, hi = W_SCAN
    grids.append([lo * (hi / lo) ** (mpmath.mpf(k) / 2000) for k in range(2001)])
    # (-1, 0): symmetric geometric grids towards both ends
    neg = [-(mpmath.mpf(10) ** (-mpmath.mpf(k) / 100)) for k in range(1, 1201)]
    grids.append(sorted(neg + [-1 + mpmath.mpf(10) ** (-mpmath.mpf(k) / 100)
                               for k in range(1, 1201)]))
    for grid in grids:
        vals = [dlog(w) for w in grid]
        for k in range(len(grid) - 1):
            if vals[k] * vals[k + 1] < 0:
                root = mpmath.findroot(dlog, (grid[k], grid[k + 1]), solver="anderson")
                found.append(root)
    return found


# ---------------------------------------------------------------------------
# power series (step 7)


def series_mul(p, q, n):
    return [mpmath.fsum(p[i] * q[k - i] for i in range(k + 1)) for k in range(n + 1)]


def series_inv(p, n):
    out = [1 / p[0]]
    for k in range(1, n + 1):
        out.append(-mpmath.fsum(p[i] * out[k - i] for i in range(1, k + 1)) / p[0])
    return out


def sigma_series(layer, n):
    """``sigma = (1 + lam a b w sigma**2)/P`` iterated on truncated series."""
    a, b, lam, _ = layer
    inv_p = series_inv([a + b, lam * b] + [0] * n, n)
    sg = [mpmath.mpf(0)] * (n + 1)
    for _ in range(n + 2):
        sq = series_mul(sg, sg, n)
        rhs = [mpmath.mpf(1)] + [lam * a * b * sq[k - 1] for k in range(1, n + 1)]
        sg = series_mul(rhs, inv_p, n)
    return sg


def stack_moments_series(stack, n):
    """``m_1 .. m_n`` from the reversion of ``chi`` (eq. (13.10)) as a power series."""
    prod = [mpmath.mpf(1)] + [mpmath.mpf(0)] * n
    for layer in stack.layers:
        prod = series_mul(prod, sigma_series(layer, n), n)
    # (1 + w)**-(L+1) = sum_k binom(-(L+1), k) w**k
    binom = [mpmath.binomial(-(stack.L + 1), k) for k in range(n + 1)]
    chi = [mpmath.mpf(0)] + series_mul(prod, binom, n)[:n]     # chi = w * prod * binom
    # reversion: psi with chi(psi(u)) = u, psi = (u - sum_{j>=2} chi_j psi**j)/chi_1
    psi = [mpmath.mpf(0)] * (n + 1)
    for _ in range(n + 1):
        acc = [mpmath.mpf(0)] * (n + 1)
        power = psi[:]
        for j in range(2, n + 1):
            power = series_mul(power, psi, n)
            for k in range(n + 1):
                acc[k] += chi[j] * power[k]
        psi = [((1 if k == 1 else 0) - acc[k]) / chi[1] for k in range(n + 1)]
    return psi[1:]


def check_moments(betas, gammas, moments):
    """Digits of agreement with freeattn's exact (sympy) moments (theory eq. (13.3))."""
    import sympy
    from freeattn.attention._stack_law import stack_moments

    exact = stack_moments([sympy.Rational(b) for b in betas], [sympy.Rational(g) for g in gammas],
                          len(betas), len(moments))
    worst = mpmath.mpf(0)
    for m, e in zip(moments, exact):
        e = mpmath.mpf(sympy.N(e, DPS + 10))
        worst = max(worst, abs(m / e - 1))
    return worst


def mass_and_mean(stack, top):
    """``int f`` and ``int x f`` over ``[0, x_+]`` (step 8), with smooth integrands.

    ``x = x_+ t**(L+1)`` on ``t`` in ``[0, 1/2]`` removes the hard edge
    (``f dx`` is a power series in ``t``, step 6) and ``x = x_+ (1 - tau**2)**(L+1)``
    on the rest removes the square root at ``x_+``.
    """
    q = stack.L + 1
    memo = {}

    def f(x):
        if x not in memo:
            memo[x] = stack.density(x, top, strict=False)
        return memo[x]

    def near0(t, k):
        x = top * t ** q
        return f(x) * x ** k * q * top * t ** (q - 1)

    def near_top(tau, k):
        x = top * (1 - tau ** 2) ** q
        return f(x) * x ** k * q * top * (1 - tau ** 2) ** (q - 1) * 2 * tau

    cut = 1 / mpmath.sqrt(2)      # x = x_+ / 2**(L+1): t = 1/2, tau = 1/sqrt(2)
    out = []
    for k in (0, 1):
        out.append(mpmath.quad(lambda t: near0(t, k), [0, mpmath.mpf(1) / 2])
                   + mpmath.quad(lambda tau: near_top(tau, k), [0, cut]))
    return out


# ---------------------------------------------------------------------------
# one case


def build_case(betas, gammas):
    t0 = time.process_time()
    layers = [layer_parameters(b, g) for b, g in zip(betas, gammas)]
    coeff_err = max(check_coefficients(b, l[3], l[1]) for b, l in zip(betas, layers))
    stack = Stack(layers)
    crit = critical_points(stack)
    positive = [w for w in crit if w > 0]
    assert len(crit) == 1 and len(positive) == 1, ("expected one real critical point", crit)
    wstar = positive[0]
    chi_star, dlog_star, _ = stack.eval(1 + wstar)
    assert abs(dlog_star * wstar) <= tol(), dlog_star
    top = 1 / chi_star
    case = {"betas": betas, "gammas": gammas, "layers": len(betas),
            "theta1": [nstr(l[3]) for l in layers],
            "intervals": [["0", nstr(top)]], "critical_w": nstr(wstar),
            "density": [], "stieltjes": []}
    for frac in DENSITY_FRACTIONS:
        x = top * mpmath.mpf(frac)
        case["density"].append([nstr(x), nstr(stack.density(x, top))])
    for re_f, im_f in STIELTJES_POINTS:
        z = mpmath.mpc(re_f * top, im_f * top)
        g, _ = stack.cauchy(z, top)
        case["stieltjes"].append([nstr(z.real), nstr(z.imag), nstr(g.real), nstr(g.imag)])
    # hard edge (step 6, theory eqs. (13.11), (14.6))
    big_l = stack.L
    k_const = mpmath.mpf(1)
    for layer in layers:
        k_const *= sigma(layer, mpmath.mpf(-1))[0]
    coef = k_const ** (mpmath.mpf(1) / (big_l + 1)) * mpmath.sin(mpmath.pi / (big_l + 1)) / mpmath.pi
    expo = Fraction(-big_l, big_l + 1)
    ratios = []
    for k in (10, 20, 30):
        x = top * mpmath.mpf(10) ** -k
        ratios.append(stack.density(x, top) / (coef * x ** (mpmath.mpf(expo.numerator) / expo.denominator)))
    # the ratio tends to 1 like x**(1/(L+1)): each factor 1e-10 in x shrinks |ratio - 1|
    assert abs(ratios[2] - 1) < abs(ratios[1] - 1) < abs(ratios[0] - 1) < mpmath.mpf("0.1"), ratios
    case["hard_edge"] = {"exponent": str(expo), "coefficient": nstr(coef),
                         "K": nstr(k_const),
                         "ratio_at_1e-10_1e-20_1e-30_of_edge": [mpmath.nstr(r, 12) for r in ratios]}
    moments = stack_moments_series(stack, MOMENTS)
    mom_err = check_moments(betas, gammas, moments)
    assert mom_err <= mpmath.mpf(10) ** -MOMENT_DIGITS, mom_err
    case["moments"] = [nstr(m) for m in moments]
    # mass and mean by quadrature (step 8), at QUAD_DPS digits
    with mpmath.workdps(QUAD_DPS):
        mass, mean = mass_and_mean(stack, +top)
    mass_err = abs(mass - 1)
    mean_err = abs(mean / moments[0] - 1)
    assert mass_err < mpmath.mpf(10) ** (4 - QUAD_DPS) and mean_err < mpmath.mpf(10) ** (4 - QUAD_DPS)
    case["checks"] = {
        "theta_vs_freeattn_linear_coefficients_rel": mpmath.nstr(coeff_err, 3),
        "moments_vs_freeattn_stack_moments_rel": mpmath.nstr(mom_err, 3),
        "quadrature_mass_minus_1": mpmath.nstr(mass_err, 3),
        "quadrature_mean_rel": mpmath.nstr(mean_err, 3),
        "sqrt_branch_flips": stack.flips,
        "cpu_seconds": round(time.process_time() - t0, 1),
    }
    return case


def main():
    out = {"dps": DPS, "stored_digits": STORED_DIGITS,
           "command": "PYTHONPATH=. python tests/reference/make_stack_references.py",
           "units": "absolute: the law of attention_stack_law(betas, gammas, layers=L), "
                    "mean prod theta1",
           "density_fractions": DENSITY_FRACTIONS, "cases": {}}
    only = set(sys.argv[1:])
    if only and OUT.exists():
        # named cases only: the others are kept as stored
        out["cases"] = json.loads(OUT.read_text())["cases"]
    for name, betas, gammas in CASES:
        if only and name not in only:
            continue
        with mpmath.workdps(DPS):
            case = build_case(betas, gammas)
        out["cases"][name] = case
        print(name, case["intervals"], case["checks"], file=sys.stderr, flush=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
