"""Sample-covariance laws from the Silverstein fixed-point equation.

The engine behind every law in freeattn.  A *population* is a probability
law ``H`` on ``[0, oo)`` that knows its Stieltjes transform (on the correct
branch) and, when it is algebraic, the polynomial form of the Silverstein
equation.  :class:`SampleCovarianceLaw` combines a population with an aspect
ratio ``c = p/N`` into the limiting eigenvalue law of
``T^{1/2} X X^T T^{1/2} / N`` (theory eq. (5.1)-(5.3)).

Conventions (theory/05_fixed_point.md):

* ``m(z) = int dnu(x)/(x - z)`` and the companion transform ``mbar(z)``, both
  in the upper half-plane for ``Im z > 0``;
* ``u = -1/mbar``, which solves ``z = u(1-c) - c u^2 m_H(u)`` (eq. (5.3));
* for algebraic populations that equation is a polynomial ``P(u; z) = 0``
  (eq. (5.6) for the attention population).  The right root is chosen by
  :func:`select_branch`, which re-checks each candidate against the
  transcendental equation with the *true* ``m_H`` (eq. (5.7)).

Nothing in this module prints or does I/O.
"""

from dataclasses import dataclass
from math import comb

import numpy as np

from ._errors import ConvergenceError
from ._tolerances import (BRANCH_RESIDUAL_RTOL, CHEB_MAX_NODES, CHEB_NOISE_RTOL, EDGE_ROOT_IMAG_RTOL,
                          CHEB_START_NODES, CHEB_TAIL_RTOL,
                          CONTINUATION_DIFF_STEP, CONTINUATION_FACTOR, CONTINUATION_HALVINGS,
                          CONTINUATION_STAGES, EDGE_MERGE_RTOL, FLOAT_TINY, HARD_EDGE_U_RTOL,
                          NEWTON_MAX_ITER, NEWTON_RTOL, PANEL_MAX_DEPTH, PANEL_MIN_WIDTH_RTOL,
                          REAL_ROOT_RTOL, ROOT_NUDGE, SUPPORT_DENSITY_FLOOR, mp_tolerance)

__all__ = [
    "PointMassPopulation",
    "AffineMarchenkoPasturPopulation",
    "SampleCovarianceLaw",
    "select_branch",
    "poly_eval",
    "poly_roots",
    "free_cumulants_to_moments",
    "Panel",
    "build_panels",
]


def poly_eval(coeffs, x):
    """Evaluate polynomials (highest degree first) and their derivative.

    Parameters
    ----------
    coeffs : sequence of ndarray
        ``coeffs[0] * x**d + ... + coeffs[d]``, each entry broadcastable to ``x``.
    x : ndarray
        Points.

    Returns
    -------
    value, derivative : ndarray
    """
    p = np.zeros_like(x) + coeffs[0]
    dp = np.zeros_like(p)
    for c in coeffs[1:]:
        dp = dp * x + p
        p = p * x + c
    return p, dp


def poly_roots(coeffs):
    """All roots of a batch of polynomials (companion-matrix eigenvalues).

    Parameters
    ----------
    coeffs : sequence of ndarray
        Coefficients, highest first, each of shape ``(N,)``; the leading one must
        not vanish.

    Returns
    -------
    ndarray, shape (d, N)
        Complex roots.
    """
    lead = np.asarray(coeffs[0], dtype=complex)
    rest = [np.asarray(c, dtype=complex) / lead for c in coeffs[1:]]
    if len(rest) == 2:
        return _quadratic_roots(*np.broadcast_arrays(*rest))
    # Real polynomials (real z) take LAPACK's faster real eigenvalue path.
    dtype = float if all(not np.any(np.imag(c)) for c in rest) else complex
    rest = [np.real(c) if dtype is float else c for c in rest]
    d = len(rest)
    n = np.broadcast(*rest).shape[0] if rest[0].ndim else 1
    comp = np.zeros((n, d, d), dtype=dtype)
    for j, c in enumerate(rest):
        comp[:, 0, j] = -c
    for j in range(1, d):
        comp[:, j, j - 1] = 1.0
    return np.linalg.eigvals(comp).T.astype(complex)


def _quadratic_roots(p, q):
    """Roots of ``u**2 + p u + q`` without cancellation, shape ``(2, N)``."""
    disc = np.sqrt(p * p / 4 - q + 0j)
    # Take the larger-modulus root first, the other from the product q.
    sign = np.where((np.conj(p) * disc).real >= 0, 1.0, -1.0)
    big = -p / 2 - sign * disc
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.where(big != 0, q / big, 0.0)
    return np.stack([np.atleast_1d(big), np.atleast_1d(small)])


def free_cumulants_to_moments(kappa):
    """Moments ``m_0..m_K`` from free cumulants ``kappa_1..kappa_K``.

    Uses ``m_n = sum_s kappa_s sum_{i_1+..+i_s = n-s} m_{i_1}...m_{i_s}``
    (the free moment-cumulant relation, theory eq. (5.9)), i.e.
    ``M(z) = 1 + sum_s kappa_s z**s M(z)**s`` for ``M(z) = sum_n m_n z**n``,
    with the coefficients of the powers ``M**s`` tabulated as the moments
    become known (``O(K**3)`` operations).  Works for floats, fractions and
    sympy expressions.

    Parameters
    ----------
    kappa : sequence
        ``kappa[0]`` is ``kappa_1``.

    Returns
    -------
    list
        ``[m_0, m_1, ..., m_K]`` with ``m_0 = 1``.

    Examples
    --------
    >>> free_cumulants_to_moments([1, 1, 1, 1])     # free Poisson: Catalan numbers
    [1, 1, 2, 5, 14]
    """
    kmax = len(kappa)
    m = [1] + [0] * kmax
    # power[s][j] = coefficient of z**j in M(z)**s; power[0] = [1, 0, 0, ...].
    power = [[1] + [0] * kmax] + [[0] * (kmax + 1) for _ in range(kmax)]
    for n in range(1, kmax + 1):
        total = 0
        for s in range(1, n + 1):
            j = n - s
            # power[s][j] needs power[s-1][<= j] and m[<= j], all known (j < n).
            power[s][j] = sum(m[i] * power[s - 1][j - i] for i in range(j + 1))
            total = total + kappa[s - 1] * power[s][j]
        m[n] = total
    return m


# --------------------------------------------------------------------------- #
# Populations
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class PointMassPopulation:
    """Population law ``H = delta_v`` (all population eigenvalues equal ``v``).

    With it, :class:`SampleCovarianceLaw` is the Marchenko-Pastur law of
    variance ``v`` (theory eq. (5.4)).
    """

    value: float

    def stieltjes(self, u):
        """``m_H(u) = 1/(v - u)``."""
        return 1.0 / (self.value - u)

    def stieltjes_derivative(self, u):
        """``m_H'(u) = 1/(v - u)**2``."""
        return 1.0 / (self.value - u) ** 2

    def silverstein_polynomial(self, z, c):
        """Coefficients in ``u`` of eq. (5.3) cleared of denominators.

        ``u**2 - ((1-c) v + z) u + z v = 0``.
        """
        v = self.value
        return [np.ones_like(z), -((1.0 - c) * v + z), z * v]

    def moments(self, kmax):
        """``[v**0, ..., v**kmax]``."""
        return [self.value ** k for k in range(kmax + 1)]

    def critical_values(self, c):
        """Critical values of ``x(u)`` on the real line: ``v (1 +- sqrt c)**2``."""
        r = np.sqrt(c)
        return np.array([self.value * (1 - r) ** 2, self.value * (1 + r) ** 2])

    def hard_edge_coefficient(self):
        """``lim_{x->0} sqrt(x) * density(x)`` for ``c = 1`` (eq. (6.6))."""
        return 1.0 / (np.pi * np.sqrt(self.value))


@dataclass(frozen=True)
class AffineMarchenkoPasturPopulation:
    """Population law ``H = shift + scale * MP_ratio`` (theory eq. (5.5)).

    ``MP_ratio`` is the Marchenko-Pastur law with unit variance and ratio
    ``lam`` (the law of ``K K^T/d`` with ``lam = n/d``); it has an atom of mass
    ``1 - 1/lam`` at 0 when ``lam > 1``.

    Parameters
    ----------
    shift, scale : float
        ``a >= 0`` and ``b > 0``.
    ratio : float
        ``lam > 0``.
    """

    shift: float
    scale: float
    ratio: float

    def mp_stieltjes(self, w):
        """Stieltjes transform of ``MP_ratio`` on its true branch (eq. (5.5)).

        ``M(w) = 2 / (-(w + lam - 1) - sqrt(w - e_-) sqrt(w - e_+))`` with
        principal square roots, which behaves as ``-1/w`` at infinity and has
        its cut exactly on ``[e_-, e_+]``; real ``w`` on the cut is read as
        ``w + i0``.  Where that denominator cancels (next to the pole at
        ``w = 0``) the equal form ``(-(w + lam - 1) + sqrt.sqrt)/(2 lam w)``
        is used.
        """
        lam = self.ratio
        w = np.asarray(w, dtype=complex)
        lo, hi = (1 - np.sqrt(lam)) ** 2, (1 + np.sqrt(lam)) ** 2
        sq = _sqrt_upper(w - lo) * _sqrt_upper(w - hi)
        big = -(w + lam - 1) - sq
        small = -(w + lam - 1) + sq
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # Two forms of the same root; use the one without cancellation
            # (the second near the pole w = 0 of the atom when lam > 1).
            return np.where(np.abs(big) >= np.abs(small), 2.0 / big, small / (2 * lam * w))

    def stieltjes(self, u):
        """``m_H(u) = M((u - a)/b) / b``."""
        return self.mp_stieltjes((u - self.shift) / self.scale) / self.scale

    def stieltjes_derivative(self, u):
        """``m_H'(u) = M'(w)/b**2`` with ``M' = -(lam M**2 + M)/(2 lam w M + w + lam - 1)``.

        (Implicit differentiation of the quadratic of eq. (5.5).)
        """
        lam = self.ratio
        w = (u - self.shift) / self.scale
        m = self.mp_stieltjes(w)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dm = -(lam * m * m + m) / (2 * lam * w * m + w + lam - 1)
        return dm / self.scale ** 2

    def silverstein_polynomial(self, z, c):
        """Coefficients in ``u`` of the Silverstein equation (theory eq. (5.6)).

        ``lam b (u-a) R**2 + (u - a + b(lam-1)) R c u**2 + c**2 u**4 = 0`` with
        ``R = u (1-c) - z``; a quartic in ``u``.
        """
        a, b, lam = self.shift, self.scale, self.ratio
        one = np.ones_like(z)
        r_poly = [(1.0 - c) * one, -z]                      # R(u)
        r2 = _pmul(r_poly, r_poly)
        term1 = _pmul([lam * b * one, -lam * a * b * one], r2)
        term2 = _pmul(_pmul([c * one, c * (b * (lam - 1) - a) * one], r_poly),
                      [one, 0 * one, 0 * one])
        term3 = [c * c * one, 0 * one, 0 * one, 0 * one, 0 * one]
        return _padd(_padd(term1, term2), term3)

    def moments(self, kmax):
        """Moments of ``H``: binomial expansion of Narayana moments (eq. (5.10))."""
        a, b, lam = self.shift, self.scale, self.ratio
        mp = [1.0] + [sum(lam ** r * comb(j, r) * comb(j - 1, r) / (r + 1)
                          for r in range(j)) for j in range(1, kmax + 1)]
        return [sum(comb(k, j) * a ** (k - j) * b ** j * mp[j] for j in range(k + 1))
                for k in range(kmax + 1)]

    def critical_values(self, c):
        """Critical values ``x(t)`` with ``dx/dt = 0`` on valid real ``t`` (eq. (6.2)).

        The parameter is ``t = M(w)``; ``w(t) = -((lam-1) t + 1)/(t (lam t + 1))``,
        ``u = a + b w``, ``x = u (1-c) - c u**2 t / b``.  The critical points
        are the real roots of a polynomial (eq. (6.3)); each is kept only when
        ``t`` is the true-branch value ``M(w(t))``.
        """
        a, b, lam = self.shift, self.scale, self.ratio
        p = np.polynomial.polynomial
        d = np.array([0.0, 1.0, lam])                         # t (lam t + 1)
        nu = p.polysub(a * d, b * np.array([1.0, lam - 1.0]))         # u = nu / d
        tpoly = np.array([0.0, 1.0])
        num = p.polysub((1 - c) * b * p.polymul(nu, d), c * p.polymul(tpoly, p.polymul(nu, nu)))
        den = b * p.polymul(d, d)                             # x = num / den
        crit = p.polysub(p.polymul(p.polyder(num), den), p.polymul(num, p.polyder(den)))
        crit = np.trim_zeros(crit, "b")
        roots = np.roots(crit[::-1])
        out = []
        for t in roots:
            if abs(t.imag) > EDGE_ROOT_IMAG_RTOL * max(1.0, abs(t)):
                continue
            t = _newton_real_root(crit, t.real)
            dt = p.polyval(t, d)
            if dt == 0 or p.polyval(t, nu) == 0:
                continue
            w = -((lam - 1) * t + 1) / dt
            t_true = self.mp_stieltjes(np.array(w)).real
            if (not np.isfinite(t_true)
                    or abs(t_true - t) > BRANCH_RESIDUAL_RTOL * max(1.0, abs(t))):
                continue
            u_t = a + b * w
            if abs(u_t) <= HARD_EDGE_U_RTOL * (abs(a) + abs(b * w)):
                out.append(0.0)           # u = 0: the hard edge x = 0 (c = 1)
            else:
                out.append(p.polyval(t, num) / p.polyval(t, den))
        return np.array(sorted(out))

    def hard_edge_coefficient(self):
        """``lim_{x->0} sqrt(x) * density(x)`` for ``c = 1`` (theory eq. (6.6)).

        Near 0, ``u ~ kappa sqrt(x)`` with ``kappa**4 - (b(lam-1) - a) kappa**2
        - lam a b = 0``, and ``kappa**2 < 0``; the limit is
        ``1/(pi |kappa|)``.
        """
        a, b, lam = self.shift, self.scale, self.ratio
        s = b * (lam - 1) - a
        disc = np.hypot(s, 2 * np.sqrt(lam * a * b))
        # Negative root of kappa**4 - s kappa**2 - lam a b = 0, without cancellation.
        k2 = (s - disc) / 2 if s <= 0 else -2 * lam * a * b / (s + disc)
        return 1.0 / (np.pi * np.sqrt(-k2))


def _sqrt_upper(w):
    """Principal square root with the cut's upper lip used for real negative ``w``."""
    w = np.asarray(w, dtype=complex)
    # Replace a signed zero imaginary part by +0 so that sqrt(-r) = +i sqrt(r).
    return np.sqrt(np.where(w.imag == 0, w.real + 0j, w))


def _pmul(p, q):
    """Product of two polynomials given as coefficient lists, highest first."""
    out = [0] * (len(p) + len(q) - 1)
    for i, pi in enumerate(p):
        for j, qj in enumerate(q):
            out[i + j] = out[i + j] + pi * qj
    return out


def _padd(p, q):
    if len(p) < len(q):
        p, q = q, p
    q = [0] * (len(p) - len(q)) + list(q)
    return [a + b for a, b in zip(p, q)]


def _newton_real_root(coeffs_low_first, t):
    """Polish a real root of a polynomial (coefficients lowest first)."""
    p = np.polynomial.polynomial
    der = p.polyder(coeffs_low_first)
    for _ in range(NEWTON_MAX_ITER):
        f, df = p.polyval(t, coeffs_low_first), p.polyval(t, der)
        if df == 0:
            break
        step = f / df
        t = t - step
        if abs(step) <= NEWTON_RTOL * max(abs(t), FLOAT_TINY):
            break
    return t


# --------------------------------------------------------------------------- #
# Branch selection
# --------------------------------------------------------------------------- #

def silverstein_residual(u, z, population, c):
    """``u (1-c) - c u**2 m_H(u) - z`` with the true ``m_H`` (theory eq. (5.3))."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return u * (1.0 - c) - c * u * u * population.stieltjes(u) - z


def select_branch(candidates, z, population, c):
    """Pick, for each ``z``, the root ``u`` that is the Stieltjes branch.

    Criterion (theory eq. (5.7)): ``Im u >= 0`` (``mbar = -1/u`` in the closed
    upper half-plane) and ``u`` solves the transcendental Silverstein equation
    with the true-branch ``m_H``.  Roots of the polynomial form that belong to
    the other sheet of ``m_H`` fail the second test.  Real roots on decreasing
    branches of ``x(u)`` pass it inside the support, so among admissible roots
    the one with the largest ``Im u / |u|`` wins; real ``z`` outside the
    support leaves only real admissible roots.

    Parameters
    ----------
    candidates : ndarray, shape (d, N)
        Roots of the polynomial form.
    z : ndarray, shape (N,)
    population : population object
    c : float

    Returns
    -------
    u : ndarray, shape (N,)
    residual : ndarray, shape (N,)
        Relative residual of the chosen root.
    """
    scale = np.abs(candidates) + np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.abs(silverstein_residual(candidates, z[None, :], population, c)) / scale
    res = np.where(np.isfinite(res), res, np.inf)
    bad_half = candidates.imag < -BRANCH_RESIDUAL_RTOL * np.abs(candidates)
    res = np.where(bad_half, np.inf, res)
    # Real roots on a decreasing branch of x(u) also solve the real equation
    # inside the support (Silverstein & Choi 1995); the Stieltjes branch is the
    # admissible root deepest in the upper half-plane.
    admissible = res < BRANCH_RESIDUAL_RTOL
    score = np.where(admissible,
                     candidates.imag / np.maximum(np.abs(candidates), FLOAT_TINY), -np.inf)
    # Real roots (off the support): the Stieltjes value is the one where
    # x(u) increases (Silverstein & Choi 1995, theory eq. (6.1)).
    real = admissible & (np.abs(candidates.imag) <= REAL_ROOT_RTOL * np.abs(candidates))
    if real.any() and hasattr(population, "stieltjes_derivative"):
        ur = candidates.real + 0j
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dx = ((1 - c) - c * (2 * ur * population.stieltjes(ur)
                                 + ur * ur * population.stieltjes_derivative(ur))).real
        score = np.where(real, np.where(dx > 0, 0.0, -1.0), score)
    idx = np.where(admissible.any(axis=0), np.argmax(score, axis=0), np.argmin(res, axis=0))
    cols = np.arange(candidates.shape[1])
    return candidates[idx, cols], res[idx, cols]


# --------------------------------------------------------------------------- #
# The law
# --------------------------------------------------------------------------- #

class SampleCovarianceLaw:
    """Limiting eigenvalue law of a sample covariance matrix (theory eq. (5.1)).

    Parameters
    ----------
    population : PointMassPopulation or AffineMarchenkoPasturPopulation
        The population law ``H``.  Any object with ``stieltjes(u)``,
        ``silverstein_polynomial(z, c)``, ``moments(k)`` and
        ``critical_values(c)`` plugs in.
    ratio : float
        ``c = p/N``.

    Notes
    -----
    For ``Im z > 0`` (or real ``z``, read as ``z + i0``) the companion
    transform is ``mbar = -1/u`` with ``u`` the selected root of the
    polynomial form, polished by Newton's method on that polynomial; the law's
    own transform is ``m = (mbar + (1-c)/z)/c`` (eq. (5.2)).
    """

    def __init__(self, population, ratio):
        self.population = population
        self.ratio = float(ratio)
        self._intervals = None

    # -- spectral variable u -------------------------------------------------
    def solve_u(self, z, guess=None):
        """Solve eq. (5.3) for ``u`` at each ``z`` (1-d complex array).

        Parameters
        ----------
        z : ndarray
            Points with ``Im z >= 0`` (real points mean ``z + i0``).
        guess : ndarray, optional
            Starting values for Newton; points whose polished value fails the
            branch test fall back to all roots plus :func:`select_branch`.

        Returns
        -------
        ndarray
            ``u``, same shape as ``z``.

        Raises
        ------
        ConvergenceError
            If no admissible root reaches the residual tolerance.
        """
        z = np.asarray(z, dtype=complex).ravel()
        c = self.ratio
        if not hasattr(self.population, "silverstein_polynomial"):
            return self.solve_u_continuation(z)
        coeffs = self.population.silverstein_polynomial(z, c)
        u = np.empty_like(z)
        todo = np.ones(z.shape, dtype=bool)
        if guess is not None:
            ug = _newton_poly(coeffs, np.asarray(guess, dtype=complex).ravel())
            res = (np.abs(silverstein_residual(ug, z, self.population, c))
                   / (np.abs(ug) + np.abs(z)))
            ok = np.isfinite(res) & (res < BRANCH_RESIDUAL_RTOL) & (ug.imag >= 0)
            u[ok] = ug[ok]
            todo = ~ok
        if todo.any():
            zz = z[todo]
            sub = [np.broadcast_to(cf, z.shape)[todo] for cf in coeffs]
            roots = poly_roots(sub)
            # A real start keeps Newton on the real axis, where a near-double
            # pair u0 +- i eps at a soft edge would be polished to a wrong real
            # root; a small imaginary nudge lets it reach the complex root.
            roots = _newton_poly(sub, roots + 1j * ROOT_NUDGE * np.abs(roots))
            best, res = select_branch(roots, zz, self.population, c)
            if not np.all(res < BRANCH_RESIDUAL_RTOL):
                k = int(np.argmax(res))
                raise ConvergenceError(
                    f"Silverstein equation not solved at z={zz[k]!r}: best relative residual "
                    f"{res[k]:.3e} > tolerance {BRANCH_RESIDUAL_RTOL:.1e} "
                    f"(after {NEWTON_MAX_ITER} Newton steps)",
                    point=zz[k], residual=float(res[k]), tolerance=BRANCH_RESIDUAL_RTOL,
                    iterations=NEWTON_MAX_ITER)
            u[todo] = best
        return u

    def solve_u_continuation(self, z):
        """Solve eq. (5.3) by Newton's method with continuation in ``Im z``.

        The path for populations that are not algebraic (for example a nested
        sample-covariance law, SPEC section 5): only ``population.stieltjes``
        (true branch) is needed, and ``population.stieltjes_derivative`` if
        present (otherwise a central difference of the analytic ``m_H``).
        Each point starts at ``Re z + i eta_0`` with ``u = z`` (``mbar ~ -1/z``
        far from the support), and ``eta`` shrinks geometrically to ``Im z``
        (to ``0`` for real ``z``: the boundary value from above); a few Newton
        steps per stage, each step halved while it would leave the upper
        half-plane.

        Parameters
        ----------
        z : ndarray
            1-d complex array, ``Im z >= 0``.

        Returns
        -------
        ndarray

        Raises
        ------
        ConvergenceError
            If the final relative residual exceeds ``BRANCH_RESIDUAL_RTOL``.
        """
        z = np.asarray(z, dtype=complex).ravel()
        c = self.ratio
        pop = self.population
        scale = np.maximum(np.abs(z), 1.0)
        eta0 = 4.0 * scale
        etas = [eta0 * CONTINUATION_FACTOR ** k for k in range(CONTINUATION_STAGES)]
        u = z.real + 1j * eta0

        def deriv(v):
            if hasattr(pop, "stieltjes_derivative"):
                return pop.stieltjes_derivative(v)
            h = CONTINUATION_DIFF_STEP * np.abs(v)
            return (pop.stieltjes(v + h) - pop.stieltjes(v - h)) / (2 * h)

        for eta in etas + [None]:
            zk = z if eta is None else z.real + 1j * np.maximum(eta, z.imag)
            for _ in range(NEWTON_MAX_ITER):
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    mh = pop.stieltjes(u)
                    f = u * (1 - c) - c * u * u * mh - zk
                    df = (1 - c) - c * (2 * u * mh + u * u * deriv(u))
                    step = f / df
                step = np.where(np.isfinite(step), step, 0)
                new = u - step
                for _ in range(CONTINUATION_HALVINGS):
                    out = new.imag < 0
                    if not out.any():
                        break
                    step = np.where(out, step / 2, step)
                    new = u - step
                u = np.where(new.imag < 0, new.real + 0j, new)
                if np.all(np.abs(step) <= NEWTON_RTOL * np.abs(u)):
                    break
        res = np.abs(silverstein_residual(u, z, pop, c)) / (np.abs(u) + np.abs(z))
        if not np.all(res < BRANCH_RESIDUAL_RTOL):
            k = int(np.argmax(res))
            raise ConvergenceError(
                f"continuation for the Silverstein equation failed at z={z[k]!r}: relative "
                f"residual {res[k]:.3e} > tolerance {BRANCH_RESIDUAL_RTOL:.1e}",
                point=z[k], residual=float(res[k]), tolerance=BRANCH_RESIDUAL_RTOL,
                iterations=NEWTON_MAX_ITER * (CONTINUATION_STAGES + 1))
        return u

    def companion_stieltjes(self, z):
        """``mbar(z) = -1/u(z)``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return -1.0 / self.solve_u(z)

    def stieltjes(self, z):
        """``m(z) = int dnu(x)/(x - z)`` for ``Im z >= 0`` (1-d array)."""
        z = np.asarray(z, dtype=complex).ravel()
        mbar = self.companion_stieltjes(z)
        c = self.ratio
        if c == 1.0:
            return mbar
        with np.errstate(divide="ignore", invalid="ignore"):
            return (mbar + (1.0 - c) / z) / c

    # -- density and support -------------------------------------------------
    def density(self, x, guess=None):
        """Density ``Im m(x + i0)/pi`` at real ``x > 0`` (1-d array)."""
        x = np.asarray(x, dtype=float).ravel()
        u = self.solve_u(x.astype(complex), guess=guess)
        with np.errstate(divide="ignore", invalid="ignore"):
            mbar_im = u.imag / (u.real ** 2 + u.imag ** 2)
        return np.maximum(mbar_im, 0.0) / (np.pi * self.ratio)

    @property
    def atom(self):
        """Mass at 0: ``max(0, 1 - 1/c)`` (population without atom at 0)."""
        return max(0.0, 1.0 - 1.0 / self.ratio)

    def intervals(self):
        """Support intervals from the critical values (theory eq. (6.1)-(6.4)).

        Candidate edges are the valid critical values (and 0 when ``c = 1``,
        the hard edge); each gap between consecutive candidates is kept when the
        density at its midpoint is positive.
        """
        if self._intervals is not None:
            return self._intervals
        crit = list(self.population.critical_values(self.ratio))
        if self.ratio == 1.0:
            crit.append(0.0)
        edges = []
        for x in sorted(x for x in crit if x >= 0):
            if not edges or x - edges[-1] > EDGE_MERGE_RTOL * x:
                edges.append(x)
        crit = np.array(edges)
        if crit.size < 2:
            raise ConvergenceError(f"found only {crit.size} candidate edges: {crit!r}",
                                   point=crit)
        mids = 0.5 * (crit[:-1] + crit[1:])
        widths = crit[1:] - crit[:-1]
        keep = widths > EDGE_MERGE_RTOL * crit[1:]
        dens = np.zeros_like(mids)
        if keep.any():
            dens[keep] = self.density(mids[keep])
        inside = keep & (dens * widths > SUPPORT_DENSITY_FLOOR)
        out = []
        for lo, hi, ins in zip(crit[:-1], crit[1:], inside):
            if not ins:
                continue
            if out and abs(out[-1][1] - lo) <= EDGE_MERGE_RTOL * lo:
                out[-1] = (out[-1][0], float(hi))
            else:
                out.append((float(lo), float(hi)))
        self._intervals = tuple(out)
        return self._intervals

    # -- moments ---------------------------------------------------------------
    def moments(self, kmax):
        """Moments ``m_0..m_kmax`` of the law (free cumulants ``c**(k-1) m_k(H)``, eq. (5.8))."""
        h = self.population.moments(kmax)
        c = self.ratio
        kappa = [c ** (k - 1) * h[k] for k in range(1, kmax + 1)]
        return free_cumulants_to_moments(kappa)

    # -- high precision --------------------------------------------------------
    def stieltjes_mp(self, z, dps=40):
        """``m(z)`` at one point with mpmath, by continuation in ``Im z``.

        Solves the transcendental equation (5.3) with ``mpmath.findroot``,
        starting far from the axis (``u ~ z``) and bringing ``Im z`` down
        geometrically to the requested point; the final residual is checked
        against :func:`freeattn._tolerances.mp_tolerance`.

        Parameters
        ----------
        z : complex
            ``Im z >= 0``; a real ``z`` is replaced by ``z + i 10**-(dps//2)``.
        dps : int
            Working precision in decimal digits.

        Returns
        -------
        mpmath.mpc
        """
        import mpmath

        with mpmath.workdps(dps):
            z = mpmath.mpc(z)
            target_im = z.imag if z.imag > 0 else mpmath.mpf(10) ** (-(dps // 2))
            c = mpmath.mpf(self.ratio)
            mh = _mp_population_stieltjes(self.population)

            def f(u, zz):
                return u * (1 - c) - c * u * u * mh(u) - zz

            # findroot verifies |f|**2 < tol, hence the square.
            tol = (mp_tolerance(dps) * (abs(z) + 1)) ** 2
            eta = max(mpmath.mpf(1), abs(z.real), target_im)
            u = mpmath.mpc(z.real, eta)
            u = mpmath.findroot(lambda v: f(v, mpmath.mpc(z.real, eta)), u, tol=tol)
            while eta > target_im:
                eta = max(eta / 4, target_im)
                u = mpmath.findroot(lambda v: f(v, mpmath.mpc(z.real, eta)), u, tol=tol)
            res = abs(f(u, mpmath.mpc(z.real, target_im)))
            if res > mp_tolerance(dps) * (abs(u) + abs(z)):
                raise ConvergenceError(f"mpmath Silverstein solve at z={z}: residual {res}",
                                       point=z, residual=float(res))
            mbar = -1 / u
            return (mbar + (1 - c) / mpmath.mpc(z.real, target_im)) / c


def _mp_population_stieltjes(population):
    """mpmath version of a population's true-branch Stieltjes transform."""
    import mpmath

    if isinstance(population, PointMassPopulation):
        v = mpmath.mpf(population.value)
        return lambda u: 1 / (v - u)
    a = mpmath.mpf(population.shift)
    b = mpmath.mpf(population.scale)
    lam = mpmath.mpf(population.ratio)
    lo, hi = (1 - mpmath.sqrt(lam)) ** 2, (1 + mpmath.sqrt(lam)) ** 2

    def mh(u):
        w = (u - a) / b
        sq = mpmath.sqrt(w - lo) * mpmath.sqrt(w - hi)
        return 2 / (-(w + lam - 1) - sq) / b

    return mh


def _newton_poly(coeffs, u):
    """Polish roots ``u`` (any shape broadcastable against coeffs) by Newton."""
    u = np.array(u, dtype=complex)
    for _ in range(NEWTON_MAX_ITER):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            p, dp = poly_eval(coeffs, u)
            step = np.where(dp != 0, p / dp, 0)
        step = np.where(np.isfinite(step), step, 0)
        u = u - step
        if np.all(np.abs(step) <= NEWTON_RTOL * np.abs(u)):
            break
    return u


# --------------------------------------------------------------------------- #
# Chebyshev panels on the support
# --------------------------------------------------------------------------- #

class Panel:
    """Chebyshev representation of ``u(x + i0)`` and of the CDF on one panel.

    A support interval is cut into panels (:func:`build_panels`).  On a panel
    whose left end is an edge (soft, or the hard edge 0) the variable is
    ``s = sqrt((x - lo)/(hi - lo))``; at a right edge ``s = -sqrt((hi - x)/(hi - lo))``;
    otherwise ``s`` is linear.  Near an edge ``u`` is a power series in the
    square root of the distance to it, with ``Re u`` even and ``Im u`` odd
    (theory eq. (6.7)), so ``U(s) = u`` for ``s`` on the panel and
    ``conj(u)`` on the mirror image is analytic on ``[-1, 1]``; so is the CDF
    integrand ``g(s) = f(x(s)) |dx/ds|``.  Both are Chebyshev series in ``s``
    computed from samples at Chebyshev nodes (a DCT-II); the CDF is the exact
    integral of the series of ``g`` (eq. (6.8)).

    Parameters
    ----------
    law : SampleCovarianceLaw
    lo, hi : float
    kind : {"left", "right", "smooth"}
    nodes : int
        Number of Chebyshev nodes (even).
    guess : Panel, optional
        A coarser panel on the same range whose values start Newton's method.
    """

    def __init__(self, law, lo, hi, kind, nodes, guess=None):
        from scipy.fft import dct

        self.lo, self.hi, self.kind, self.nodes = float(lo), float(hi), kind, int(nodes)
        self.ratio = law.ratio
        n = self.nodes
        s = np.cos(np.pi * (np.arange(n) + 0.5) / n)        # decreasing, symmetric
        if kind == "smooth":
            phys = np.ones(n, dtype=bool)
        elif kind == "left":
            phys = s > 0
        else:
            phys = s < 0
        x = self.x_of_s(s[phys])
        u_phys = law.solve_u(x.astype(complex),
                             guess=None if guess is None else guess.u_of_s(s[phys]))
        u = np.empty(n, dtype=complex)
        u[phys] = u_phys
        if kind != "smooth":
            u[~phys] = np.conj(u_phys[::-1])                 # mirror node of -s is n-1-j
        dens = u.imag / (np.pi * self.ratio * (u.real ** 2 + u.imag ** 2))
        g = dens * self._dxds_abs_signed(s)

        def coef(vals):
            c = dct(vals, type=2) / n
            c[0] /= 2
            return c

        self.u_coef = coef(u.real) + 1j * coef(u.imag)
        self.g_coef = coef(g)
        tail = slice(-max(n // 8, 4), None)
        self.tails = np.array([np.max(np.abs(cf[tail])) / max(np.max(np.abs(cf)), FLOAT_TINY)
                               for cf in (self.u_coef, self.g_coef)])
        cheb = np.polynomial.chebyshev
        self.s_range = {"left": (0.0, 1.0), "right": (-1.0, 0.0), "smooth": (-1.0, 1.0)}[kind]
        self.cdf_coef = cheb.chebint(self.g_coef, lbnd=self.s_range[0])
        self.mass = float(cheb.chebval(self.s_range[1], self.cdf_coef))

    # -- maps -----------------------------------------------------------------------
    def x_of_s(self, s):
        """Physical point of the panel variable ``s``."""
        w = self.hi - self.lo
        if self.kind == "left":
            return self.lo + w * s * s
        if self.kind == "right":
            return self.hi - w * s * s
        return self.lo + w * (s + 1.0) / 2.0

    def s_of_x(self, x):
        """Inverse of :meth:`x_of_s` on the panel (``x`` clipped to it)."""
        w = self.hi - self.lo
        x = np.clip(x, self.lo, self.hi)
        if self.kind == "left":
            return np.sqrt((x - self.lo) / w)
        if self.kind == "right":
            return -np.sqrt((self.hi - x) / w)
        return 2.0 * (x - self.lo) / w - 1.0

    def _dxds_abs_signed(self, s):
        """``|dx/ds|`` continued evenly (left/right kinds) across ``s = 0``."""
        w = self.hi - self.lo
        if self.kind == "smooth":
            return np.full_like(s, w / 2.0)
        return 2.0 * w * np.abs(s) * np.sign(s) * (1 if self.kind == "left" else -1)

    # -- evaluation -------------------------------------------------------------------
    def u_of_s(self, s):
        """``U(s)``, the Chebyshev series of ``u``."""
        return np.polynomial.chebyshev.chebval(s, self.u_coef)

    def u(self, x):
        """Interpolated ``u(x + i0)`` on the panel."""
        return self.u_of_s(self.s_of_x(x))

    def g_of_s(self, s):
        """CDF integrand ``g(s) = f(x(s)) dx/ds``."""
        return np.polynomial.chebyshev.chebval(s, self.g_coef)

    def cdf_of_s(self, s):
        """Mass of ``[lo, x(s)]``."""
        return np.polynomial.chebyshev.chebval(s, self.cdf_coef)

    def converged(self):
        """Whether the series tails are below ``CHEB_TAIL_RTOL``."""
        return bool(np.all(self.tails <= CHEB_TAIL_RTOL))


def _fit_panel(law, lo, hi, kind):
    """Double the nodes until the panel's series converge.

    Returns
    -------
    (Panel or None, Panel)
        The converged panel (``None`` if none) and the last one tried.
    """
    n, panel = CHEB_START_NODES, None
    while n <= CHEB_MAX_NODES:
        new = Panel(law, lo, hi, kind, n, guess=panel)
        if new.converged():
            return new, new
        # Rounding noise of near-double roots at soft edges sets a floor:
        # accept a tail that is small and no longer shrinks on doubling.
        if panel is not None and np.all((new.tails <= CHEB_NOISE_RTOL)
                                        & (new.tails > panel.tails / 4)):
            return new, new
        panel, n = new, 2 * n
    return None, panel


def build_panels(law, lo, hi, *, depth=0):
    """Cut the support interval ``[lo, hi]`` into converged panels.

    Both ends of a support interval are edges; the interval is halved into a
    ``left`` and a ``right`` panel.  A panel that does not converge with
    ``CHEB_MAX_NODES`` nodes is split: an edge panel keeps its edge on a
    quarter of its width (grading towards the edge, where structure on small
    scales lives: for small ``beta`` the ``x**(-1/2)`` hard edge crosses over
    to the ``x**(-2/3)`` Fuss-Catalan law on the scale ``(alpha/beta)**3``);
    a smooth panel is halved.

    Returns
    -------
    list of Panel

    Raises
    ------
    ConvergenceError
        If a panel still fails after ``PANEL_MAX_DEPTH`` splits.
    """
    mid = 0.5 * (lo + hi)
    floor = PANEL_MIN_WIDTH_RTOL * (hi - lo)
    return (_build(law, lo, mid, "left", depth, floor)
            + _build(law, mid, hi, "right", depth, floor))


def _build(law, lo, hi, kind, depth, floor):
    if depth > PANEL_MAX_DEPTH:
        raise ConvergenceError(
            f"Chebyshev panels did not converge on [{lo!r}, {hi!r}] after {depth} splits "
            f"(tail above {CHEB_TAIL_RTOL:.1e} with {CHEB_MAX_NODES} nodes)",
            point=(lo, hi), iterations=depth)
    panel, last = _fit_panel(law, lo, hi, kind)
    if panel is not None:
        return [panel]
    hard_edge = kind == "left" and lo == 0.0
    if not hard_edge and hi - lo <= floor:
        # A sliver next to a cusp (two edges about to merge or just merged:
        # |x - x0|**(1/3) behaviour and a nearly triple root, float-accurate to
        # ~eps**(1/3) only).  Its mass is below ~floor**(4/3) of the
        # interval's, so the best-effort expansion is kept.  Panels at the
        # hard edge 0 are always split further: there the mass of a sliver
        # can be large (x**(-2/3) above the crossover scale for small beta).
        return [last]
    if kind == "left":
        cut = lo + (hi - lo) / 4
        return (_build(law, lo, cut, "left", depth + 1, floor)
                + _build(law, cut, hi, "smooth", depth + 1, floor))
    if kind == "right":
        cut = hi - (hi - lo) / 4
        return (_build(law, lo, cut, "smooth", depth + 1, floor)
                + _build(law, cut, hi, "right", depth + 1, floor))
    mid = 0.5 * (lo + hi)
    return (_build(law, lo, mid, "smooth", depth + 1, floor)
            + _build(law, mid, hi, "smooth", depth + 1, floor))
