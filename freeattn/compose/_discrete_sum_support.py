"""Support of the free additive convolution of two finite discrete laws (theory section 14.19).

For ``a = sum_i p_i delta_{s_i}`` and ``b = sum_j q_j delta_{t_j}`` the
reciprocal Cauchy transforms ``F_a = 1/G_a``, ``F_b = 1/G_b`` are real and
increasing on the real line between their poles (the zeros of ``G``), and
``x`` lies outside the support of ``a ⊞ b`` exactly when the real solution
``(omega_1, omega_2)`` of ``F_a(omega_1) = F_b(omega_2) = f``,
``x = omega_1 + omega_2 - f`` is attracting there, that is when

    dx/df = 1/F_a'(omega_1) + 1/F_b'(omega_2) - 1 > 0       (theory eq. (14.20)).

Each pair of branches (one interval between consecutive poles of ``F_a`` and
one of ``F_b``) is a curve parametrized by the common value ``f`` in R; the
gaps of the support are the images by ``x`` of the ``f``-intervals where
eq. (14.20) is positive, and the edges are the values of ``x`` at its zeros.
Each curve is sampled on its own and every sampled local maximum of
``dx/df`` is refined, so a gap is found however narrow it is against the
support (the grid locator of theory section 14.10 can miss one that holds no
grid point).

Nothing in this module prints or does I/O.
"""

import numpy as np

from ..core._errors import ConvergenceError
from ._atom_tree import sums_nearest_apart
from ._fixed_point import BRACKET_RTOL, bracketed_maxima, bracketed_newton, bracketed_zeros

__all__ = ["curve_bands", "discrete_sum_edges", "sum_criterion"]

#: Geometric samples on each side of a curve beyond the ``tan`` samples, reaching
#: ``sqrt(TAIL_FACTOR)`` times beyond ``spread**2/sqrt(|C|)``, where the tail
#: ``C/f**2 + D/f**4`` of eq. (14.20) has its last zero (``D ~ spread**4``), and at
#: least to where ``C/f**2`` is ``TAIL_FACTOR * S_MARGIN``.
TAIL_SAMPLES = 24
TAIL_FACTOR = 1e3
#: Every curve's tail reaches at least this many times the last ``tan`` sample.
TAIL_MIN_REACH = 4.0
#: Most pairs of branches ``K_a K_b`` the method takes: its cost grows as
#: ``K_a K_b`` curves times ``K**3`` per companion eigenvalue solve (6 x 6 atoms:
#: see theory section 14.19); larger sums keep the grid locator.
MAX_CURVES = 36
#: Samples of ``f = tan(theta)`` per curve (``theta`` uniform in (-pi/2, pi/2),
#: scaled by the laws' spread).
CURVE_SAMPLES = 96
#: Most steps of the search for the zeros of eq. (14.20) (halving a bracket 200
#: times reaches the rounding of any double).
ZERO_STEPS = 200
#: Steps (parabolic, or golden-section) refining a sampled local maximum of eq. (14.20).
PEAK_STEPS = 120
#: Two gap images whose ends agree to this (relative to the spread) are one gap
#: (a curve ends where ``omega_2`` passes through infinity and the next begins).
TOUCH_RTOL = 1e-9
#: On a curve with ``p_i + q_j = 1`` (to this margin), ``f = 0`` (both points atoms,
#: eq. (14.20) equal to ``p_i + q_j - 1 = 0``) is the pole edge ``s_i + t_j`` when
#: eq. (14.20) changes sign there (``p_i + q_j > 1``: an atom of the sum, in a gap).
ATOM_MARGIN = 1e-12
#: Eq. (14.20) counts as positive above this, relative to its terms ``|1/F' - 1| +
#: 1/F'`` (each summed without cancellation, theory section 14.26; their rounding
#: about 1e-16 of their size): on a degenerate curve it vanishes identically
#: (Bernoulli ⊞ Bernoulli: omega_2 = -1/omega_1 and x = 0 all along), and rounding
#: must not open a gap there.
#: At an edge x is stationary in f, so the shift of the zero moves the edge by
#: O(S_MARGIN**2).
S_MARGIN = 1e-13
#: Newton steps polishing the companion-matrix roots of the inverse branches; a
#: root is kept when the last step is below ``POLISH_SLACK * BRACKET_RTOL``
#: (relative; ``BRACKET_RTOL`` is the rounding level of ``bracketed_newton``).
POLISH_STEPS = 3
POLISH_SLACK = 64.0
#: The search for the zeros and the maxima of eq. (14.20) stops at this (relative to
#: ``max(|f|, spread)``): at a zero ``x`` is stationary in ``f``
#: (``dx/df`` is eq. (14.20)), so an error ``d`` in ``f`` moves the edge by
#: ``O(d**2)``; at a maximum the value of eq. (14.20) is off by ``O(d**2)`` too.
SEARCH_RTOL = 1e-9


class _Branches:
    """``F = 1/G`` of a discrete law, its poles and its inverse on each branch."""

    def __init__(self, values, weights):
        order = np.argsort(values)
        self.t = np.asarray(values, dtype=float)[order]
        self.w = np.asarray(weights, dtype=float)[order]
        self.mean = float(self.w @ self.t)
        self.var = float(self.w @ (self.t - self.mean) ** 2)
        self.scale = max(float(np.max(np.abs(self.t))), float(self.t[-1] - self.t[0]))
        # zeros of G: one in each (t_j, t_{j+1}), where G falls from +oo to -oo
        self.poles = bracketed_newton(lambda u, idx: self._g_dg(u), self.t[:-1], self.t[1:],
                                      np.ones(self.t.size - 1), scale=self.scale,
                                      what="G = 0 between atoms (theory section 14.19)")
        self.count = self.t.size           # branches: (-oo, p_1), ..., (p_{K-1}, oo)
        self.left = np.r_[-np.inf, self.poles]
        self.right = np.r_[self.poles, np.inf]
        # coefficients of prod_i (u - t_i) and of sum_j w_j prod_{i != j} (u - t_i)
        self._prod = np.poly(self.t)
        self._q = sum(wj * np.poly(np.delete(self.t, j)) for j, wj in enumerate(self.w))

    def _g_dg(self, u):
        """``G`` and ``G'`` at real ``u`` (any shape; infinite at an atom)."""
        with np.errstate(all="ignore"):
            d = u[..., None] - self.t
            return (self.w / d).sum(axis=-1), -(self.w / d ** 2).sum(axis=-1)

    def parts(self, u, f):
        """``(d, e, r)`` at real points ``u`` with ``F(u) = f``, free of cancellation:
        ``d = 1/F'(u) = G**2/(-G')`` with ``G = 1/f``, ``e = d - 1 =
        -sum_j w_j x_j**2 (t_j G - H)**2 / (-G')`` and ``r = u - F(u) = H/G``
        (``x_j = 1/(u - t_j)``, ``H = sum_j w_j t_j x_j``; theory eq. (14.28)), the
        nearest atom's term apart in ``t_j G - H``.  At an atom ``t_j``:
        ``(w_j, w_j - 1, t_j)``.
        """
        u, f = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(f, dtype=float))
        with np.errstate(all="ignore"):
            x = 1.0 / (u[..., None] - self.t)
            g, h, c = sums_nearest_apart(x, self.t, self.w)
            s2 = (x * x) @ self.w
            gf = np.where(f != 0, 1.0 / f, g)
            d = gf * gf / s2
            e = -(((x * c) ** 2) @ self.w) / s2
            r = h / g
        hit = np.isin(u, self.t)
        if hit.any():
            wt = self.w[np.searchsorted(self.t, np.where(hit, u, self.t[0]))]
            d, e, r = np.where(hit, wt, d), np.where(hit, wt - 1.0, e), np.where(hit, u, r)
        return d, e, r

    def inverse(self, f, k, guess=None):
        """``omega`` on branch ``k`` with ``F(omega) = f`` (``f``, ``k`` arrays of one shape).

        From the companion-matrix roots (:meth:`_companion_roots`); where they do
        not settle, by :func:`bracketed_newton` from ``guess`` (a nearby solve):
        every branch holds one atom ``t_k`` (``F = 0``), ``F`` increases on it, and
        outside ``[t_1, t_K]`` ``omega - t_K <= F(omega) <= omega - t_1`` bounds the
        outer branches.
        """
        shape = np.shape(f)
        f, k = np.ravel(f), np.ravel(np.broadcast_to(k, shape))
        x = self._companion_roots(f, k)
        if x is not None:
            return x.reshape(shape)
        t1, tk = self.t[0], self.t[-1]
        atom = self.t[k]
        lo = np.where(f >= 0, atom, np.maximum(self.left[k], f + t1))
        hi = np.where(f >= 0, np.minimum(self.right[k], f + tk), atom)
        hi = np.maximum(hi, lo)
        x = atom.astype(float)
        todo = np.flatnonzero(f != 0)          # F(t_k) = 0: the atom itself
        if todo.size:

            def f_pair(u, idx):                # F(u) - f, increasing, and F' = -G'/G**2
                g, dg = self._g_dg(u)
                with np.errstate(all="ignore"):
                    return 1.0 / g - f[todo][idx], -dg / (g * g)

            x0 = None if guess is None else np.ravel(guess)[todo]
            x[todo] = bracketed_newton(f_pair, lo[todo], hi[todo], -np.ones(todo.size), x0=x0,
                                       scale=self.scale, what="F(omega) = f (eq. (14.20))")
        return x.reshape(shape)

    def _companion_roots(self, f, k):
        """``omega`` on branch ``k`` from the eigenvalues of the companion matrix of
        ``prod_i (u - t_i) - f sum_j w_j prod_{i != j} (u - t_i)`` (its ``K`` real roots,
        one per branch, in increasing order), polished by ``POLISH_STEPS`` Newton steps
        on ``F(u) = f``; None when a root leaves its branch or the polish does not
        settle (the safeguarded Newton of :meth:`inverse` takes over)."""
        n, K = f.size, self.count
        comp = np.zeros((n, K, K))
        comp[:, 1:, :-1] = np.eye(K - 1)
        # monic: u**K + (c_1 - f q_1) u**(K-1) + ... ; companion's last column
        coef = self._prod[1:][None, :] - f[:, None] * self._q[None, :]
        comp[:, :, -1] = -coef[:, ::-1]
        with np.errstate(all="ignore"):
            roots = np.linalg.eigvals(comp)
        x = np.sort(roots.real, axis=1)[np.arange(n), k]
        atom = self.t[k]
        x = np.where(f == 0, atom, x)
        for _ in range(POLISH_STEPS):
            g, dg = self._g_dg(x)
            with np.errstate(all="ignore"):
                step = (1.0 / g - f) * g * g / -dg
            step = np.where((f == 0) | ~np.isfinite(step), 0.0, step)
            x = x - step
        tol = BRACKET_RTOL * np.maximum(np.abs(x), self.scale) * POLISH_SLACK
        ok = np.all(np.isfinite(x)) and np.all(np.abs(step) <= tol) and np.all(
            (x > self.left[k]) & (x < self.right[k]))
        return x if ok else None

    def end(self, k, side):
        """As ``f -> side * oo`` on branch ``k``: ``(True, m)`` on an outer branch, where
        ``omega - f -> m`` (the mean: ``F(u) = u - m + O(1/u)``), or ``(False, p)``,
        the pole of ``F`` that ``omega`` tends to."""
        outer = k == (0 if side < 0 else self.count - 1)
        return outer, (self.mean if outer else (self.poles[k - 1] if side < 0 else self.poles[k]))


def discrete_sum_edges(a_values, a_weights, b_values, b_weights):
    """Bands of ``a ⊞ b`` for two finite discrete laws (theory eq. (14.20)).

    Parameters
    ----------
    a_values, a_weights, b_values, b_weights : ndarray
        Distinct atoms and their weights (each summing to 1), at least two atoms each.

    Returns
    -------
    list of (float, float, bool, bool)
        The bands of the continuous part, increasing, each with whether its lower
        and upper edge is a pole edge (``x = s_i + t_j`` with ``p_i + q_j = 1``:
        density ``~ |x - e|**(-1/2)``; else a square-root edge).  An atom of the
        sum (``p_i + q_j > 1``, at ``s_i + t_j``) lies in a gap: there eq. (14.20)
        is ``p_i + q_j - 1 > 0`` at ``f = 0``.

    Raises
    ------
    ConvergenceError
        If the gap images of the curves overlap (two attracting real solutions
        at one ``x``, which the theory excludes) or do not leave bands.
    """
    a, b = _Branches(a_values, a_weights), _Branches(b_values, b_weights)
    pair = a.w[:, None] + b.w[None, :]
    spread = max(a.t[-1] - a.t[0], b.t[-1] - b.t[0])
    kk, ll = np.meshgrid(np.arange(a.count), np.arange(b.count), indexing="ij")
    kk, ll = kk.ravel(), ll.ravel()
    theta = np.pi * (np.arange(1, CURVE_SAMPLES + 1) / (CURVE_SAMPLES + 1) - 0.5)
    fs = spread * np.tan(theta)
    # f = 0 is sampled: there both points are atoms, and at p_i + q_j = 1 it is an edge
    fs = np.sort(np.r_[fs, 0.0])
    # tails: where one branch is outer and the other inner, eq. (14.20) decays as
    # C/f**2 (C = 1/|G'(p)| of the inner branch's pole minus the outer law's variance,
    # theory section 14.19), and its last zero can lie far beyond the samples; each
    # curve gets TAIL_SAMPLES geometric points on each side out to where C/f**2 is
    # TAIL_FACTOR times the margin, so that the last sample has the asymptotic sign
    reach = np.full((kk.size, 2), TAIL_MIN_REACH)
    for side, col in ((-1, 0), (1, 1)):
        for r, (k, l) in enumerate(zip(kk, ll)):
            c = _tail_coefficient(a, b, int(k), int(l), side)
            if c is not None and c != 0.0:
                # the last zero of C/f**2 + D/f**4 (D ~ spread**4) lies near
                # spread**2/sqrt(|C|) (theory section 14.26): the samples reach sqrt(TAIL_FACTOR) beyond it,
                # and at least to where C/f**2 is TAIL_FACTOR times the margin
                far = max(np.sqrt(TAIL_FACTOR) * spread ** 2 / np.sqrt(abs(c)),
                          np.sqrt(abs(c) / (TAIL_FACTOR * S_MARGIN)))
                reach[r, col] = max(TAIL_MIN_REACH, far / abs(fs[-1]))
    grow = np.linspace(0.0, 1.0, TAIL_SAMPLES + 1)[1:][None, :]
    left = fs[0] * reach[:, :1] ** grow
    right = fs[-1] * reach[:, 1:] ** grow
    f = np.concatenate([left[:, ::-1], np.broadcast_to(fs, (kk.size, fs.size)), right], axis=1)

    last = {}

    def s_and_x(f, rows):
        k, l = kk[rows], ll[rows]
        # Newton starts from the previous call's points when it had the same points
        prev = last.get(np.shape(f))
        w1 = a.inverse(f, k, None if prev is None else prev[0])
        w2 = b.inverse(f, l, None if prev is None else prev[1])
        last.clear()
        last[np.shape(f)] = (w1, w2)
        # eq. (14.20) relative to its terms, so that the margin is relative: in a
        # curve's tail the terms are ~ 1/f**2 and their difference C/f**2 (the outer
        # law's 1/F' - 1 and the inner one's 1/F', each without cancellation); x as
        # the smaller point plus u - F(u) = H/G of the larger one
        return sum_criterion((w1, w2), (a.parts(w1, f), b.parts(w2, f)))

    # a zero at f = 0 on curve (i, j) with p_i + q_j = 1 is the pole edge s_i + t_j
    # (there both points are atoms and eq. (14.20) is p_i + q_j - 1 = 0): its value
    # is the sum of the atoms, exact, so that a gap that closes (Bernoulli ⊞
    # Bernoulli at 0) has width 0 rather than rounding noise
    pole_x = np.where(np.abs(pair[kk, ll] - 1.0) <= ATOM_MARGIN, a.t[kk] + b.t[ll], np.nan)
    return curve_bands(f, s_and_x, lambda r, side: _limit(a, b, int(kk[r]), int(ll[r]), side),
                       pole_x, spread, spread, "eq. (14.20)", increasing=True)


def sum_criterion(points, parts):
    """Eq. (14.20) relative to its terms, and ``x``, at the points ``omega_i`` of a
    curve of ``n`` laws (eq. (14.50)) with their :meth:`_Branches.parts` ``(d, e, r)``.

    ``sum_i d_i - (n - 1)`` is summed as ``d_j + sum_{i != j} e_i`` with ``j`` the
    law of the largest ``|e|`` (each term without cancellation; in a curve's tail
    the terms are ``~ 1/f**2`` and their sum ``C/f**2``), over the sum of their
    moduli (0 where all vanish; a NaN stays NaN); ``x = sum_i omega_i - (n - 1) f``
    is the smallest point plus ``u - F(u)`` of every other one.  Ties go to the
    later law (for two laws: ``e_a + d_b`` where ``|e_a| <= |e_b|``).
    """
    shape = np.shape(points[0])
    d, e, r = (np.stack([np.asarray(p[i], dtype=float).reshape(-1) for p in parts])
               for i in range(3))
    w = np.stack([np.asarray(v, dtype=float).reshape(-1) for v in points])
    n, cols = d.shape[0], np.arange(d.shape[1])
    rows = np.arange(n)[:, None]
    # the last index of the largest |e| (of the smallest |w|): argmax of the reversed rows
    j = n - 1 - np.argmax(np.abs(e)[::-1], axis=0)
    s = d[j, cols] + np.where(rows != j, e, 0.0).sum(axis=0)
    size = d[j, cols] + np.where(rows != j, np.abs(e), 0.0).sum(axis=0)
    with np.errstate(all="ignore"):
        rel = np.where(size == 0, 0.0, s / size)
    k = n - 1 - np.argmin(np.abs(w)[::-1], axis=0)
    x = w[k, cols] + np.where(rows != k, r, 0.0).sum(axis=0)
    rel, x = rel.reshape(shape), x.reshape(shape)
    return rel, x


def curve_bands(f, fun, limit, pole_x, spread, xscale, what, closed=None, pole_at=None,
                peak_reach=None, touch_relative=False, increasing=False):
    """Bands from the sign of a real criterion along curves of real solutions.

    The common core of theory sections 14.19 and 14.28: every sampled local
    maximum of the criterion at or below the margin is refined, its zeros are
    bracketed, the parameter intervals where it is positive are mapped to gaps
    of the support, and the gaps of all curves are merged.

    Parameters
    ----------
    f : ndarray, shape (curves, samples)
        Each curve's parameter samples, increasing; a row may end in ``+inf``
        padding (curves with fewer samples).
    fun : callable
        ``fun(v, rows) -> (rel, x)``: the criterion relative to its terms
        (positive outside the support) and the point ``x`` at parameters ``v``
        of the curves ``rows``.
    limit : callable
        ``limit(r, side)``: ``x`` at the end ``side`` (``-1`` or ``+1``) of curve
        ``r``'s parameter range.
    pole_x : ndarray, shape (curves,)
        The exact pole edge of each curve whose criterion vanishes at the
        parameter ``pole_at`` (two atoms whose masses sum to 1), else NaN.
    spread : float
        Scale of the parameter (the floor of the search tolerances).
    xscale : float
        Scale of ``x``: gap images whose ends agree to ``TOUCH_RTOL * xscale`` meet
        (to ``xscale`` itself when ``touch_relative``).
    what : str
        The criterion's equation, named in errors.
    closed : ndarray of bool, shape (curves, 2), optional
        Whether each curve's parameter range ends at its first (last) sample (a
        point reaching an edge of its law's support, theory eq. (14.38)): a
        sampled maximum there is not refined beyond it.  By default no end is.
    pole_at : ndarray, shape (curves,), optional
        The parameter of each curve's two atoms (a sample of the curve); 0 by
        default (the common value ``f`` of ``F_a`` and ``F_b``).
    peak_reach : float, optional
        Refine only the sampled maxima ``s_c`` that a parabola through their
        neighbours could lift above the margin: ``s_c + peak_reach * (s_c -
        min(s_l, s_r)) > margin`` (theory eq. (14.39); a flat run of the criterion at
        ``-1``, rounding noise, has a sampled maximum at every other sample).  By
        default every sampled maximum at or below the margin is refined.
    touch_relative : bool
        Gap images meet where their ends agree to ``xscale`` times the size of
        the end (a band can be many decades narrower than the support: a
        constituent's own narrow band next to an atom of the other, theory
        section 14.29).
    increasing : bool
        ``x`` increases along every gap (a sum, eq. (14.20)): a gap image whose
        ends are reversed by more than the touching tolerance raises (a product's
        may decrease, eq. (14.34), and is turned round).

    Returns
    -------
    list of (float, float, bool, bool)
        The bands, increasing, each with whether its lower and upper edge is a
        pole edge.

    Raises
    ------
    ConvergenceError
        If the criterion is not finite at a sample, a bracket does not close,
        the gap images overlap or do not leave bands.
    """
    ncurves = f.shape[0]
    rows_all = np.arange(ncurves)
    width = np.count_nonzero(np.isfinite(f), axis=1)

    def evaluate(f):
        rr = np.broadcast_to(rows_all[:, None], f.shape)
        ok = np.isfinite(f)
        s = np.full(f.shape, np.nan)
        if ok.any():
            s[ok] = fun(f[ok], rr[ok])[0]
        return s

    s = evaluate(f)
    # every sampled local maximum of s at or below the margin is refined:
    # a hump above 0 narrower than the sampling shows as two sign changes once its
    # top is inserted
    sm = np.where(np.isfinite(f), s, -np.inf)
    ext = np.concatenate([np.full((ncurves, 1), -np.inf), sm, np.full((ncurves, 1), -np.inf)],
                         axis=1)
    # (a degenerate curve, |s| <= S_MARGIN at every sample, has s = 0 to rounding all
    # along: its noise peaks are not refined)
    live = np.max(np.where(np.isfinite(f), np.abs(s), 0.0), axis=1, keepdims=True) > S_MARGIN
    rows, cols = np.nonzero((sm >= ext[:, :-2]) & (sm >= ext[:, 2:]) & (sm <= S_MARGIN)
                            & live & np.isfinite(f))
    if closed is not None and rows.size:
        at_end = ((cols == 0) & closed[rows, 0]) | ((cols == width[rows] - 1) & closed[rows, 1])
        rows, cols = rows[~at_end], cols[~at_end]
    if peak_reach is not None and rows.size:
        sc = sm[rows, cols]
        low = np.minimum(ext[rows, cols], ext[rows, cols + 2])
        low = np.where(np.isfinite(low), low, sc)
        lift = sc + peak_reach * (sc - low) > -S_MARGIN
        rows, cols = rows[lift], cols[lift]
    if rows.size:
        last = width[rows] - 1
        lo = np.where(cols > 0, f[rows, np.maximum(cols - 1, 0)], f[rows, cols] - 4 * spread)
        hi = np.where(cols < last, f[rows, np.minimum(cols + 1, last)],
                      f[rows, cols] + 4 * spread)
        crit = (lambda v, sub=slice(None): fun(v, rows[sub])[0])
        s_lo = np.where(cols > 0, s[rows, np.maximum(cols - 1, 0)], np.nan)
        s_hi = np.where(cols < last, s[rows, np.minimum(cols + 1, last)], np.nan)
        ends = np.isnan(s_lo) | np.isnan(s_hi)
        if ends.any():
            s_lo = np.where(np.isnan(s_lo), crit(lo), s_lo)
            s_hi = np.where(np.isnan(s_hi), crit(hi), s_hi)
        top = bracketed_maxima(crit, lo, f[rows, cols], hi, s_lo, s[rows, cols], s_hi,
                               SEARCH_RTOL, spread, PEAK_STEPS,
                               f"a local maximum of {what}").value
        extra = [[] for _ in range(ncurves)]
        for r, v in zip(rows, top):
            extra[r].append(v)
        size = f.shape[1] + max(len(e) for e in extra)
        fpad = np.full((ncurves, size), np.inf)
        for r in range(ncurves):
            row = np.sort(np.r_[f[r, :width[r]], extra[r]])
            fpad[r, :row.size] = row
        f = fpad
        width = np.count_nonzero(np.isfinite(f), axis=1)
        s = evaluate(f)
    bad = np.isfinite(f) & ~np.isfinite(s)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ConvergenceError(f"{what} is not finite on the curve {r} at "
                               f"parameter {float(f[r, c])!r}")
    pos = s > S_MARGIN
    # zeros of s between consecutive samples of a curve, all curves in one bisection
    valid = np.isfinite(s[:, 1:]) & np.isfinite(s[:, :-1])
    rows, cols = np.nonzero(valid & (pos[:, 1:] != pos[:, :-1]))
    # (the parameter 0 is a sample of every curve that holds both atoms: the zero in
    # one of its two cells is the pole edge, found at s = S_MARGIN, away from 0 where
    # s is small all along; its x is the exact pole edge, eq. (14.30), so its zero is
    # not searched: theory section 14.49)
    at_atoms = f == (np.zeros(ncurves) if pole_at is None else pole_at)[:, None]
    has_zero = at_atoms.any(axis=1)
    zero_at = np.argmax(at_atoms, axis=1)[rows]
    pole = has_zero[rows] & ((cols == zero_at - 1) | (cols == zero_at)) & np.isfinite(
        pole_x[rows])
    zx = pole_x[rows].astype(float)
    search = np.flatnonzero(~pole)
    if search.size:
        rs, cs = rows[search], cols[search]
        z = bracketed_zeros(lambda v, sub=slice(None): fun(v, rs[sub])[0] - S_MARGIN,
                            f[rs, cs], f[rs, cs + 1], s[rs, cs] - S_MARGIN,
                            s[rs, cs + 1] - S_MARGIN, SEARCH_RTOL, spread, ZERO_STEPS,
                            f"a zero of {what}").value
        zx[search] = fun(z, rs)[1]
    gaps = []
    for r in range(ncurves):
        sel = rows == r
        gaps.extend(_curve_gaps(lambda side, r=r: limit(r, side), pos[r, :width[r]],
                                cols[sel], zx[sel], pole[sel]))
    # (x increases along a gap of a sum, eq. (14.20): a gap reversed beyond the rounding
    # of its ends was found on a curve whose values are not the law's; along one of a
    # product it may decrease, eq. (14.34))
    def touch_at(x):
        # the rounding within which two gap ends touch, at x (relative or absolute)
        return xscale * abs(x) if touch_relative else TOUCH_RTOL * xscale

    if increasing:
        for g in gaps:
            if g[0] > g[1] + touch_at(max(abs(g[0]), abs(g[1]))):
                raise ConvergenceError(
                    f"x decreases along a gap of {what}, from {g[0]!r} to {g[1]!r}: a "
                    f"sum's x increases along its gaps (theory eq. (14.20))",
                    point=float(g[1]))
    gaps = [g if g[0] <= g[1] else (g[1], g[0], g[3], g[2]) for g in gaps]
    gaps = sorted((g for g in gaps if g[0] < g[1]), key=lambda g: g[0])
    merged = []
    for lo, hi, plo, phi in gaps:
        touch = touch_at(merged[-1][1]) if merged else TOUCH_RTOL * xscale
        if merged and lo <= merged[-1][1] + touch:
            if hi <= merged[-1][1] and hi - lo <= touch:
                # a sliver within the rounding of x (a curve through an atom's pole,
                # whose image collapses onto the atom) inside the gap before it
                continue
            if lo < merged[-1][1] - touch:
                raise ConvergenceError(
                    f"gap images of {what} overlap: {merged[-1][:2]!r} and {(lo, hi)!r}")
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi, merged[-1][2], phi)
        else:
            merged.append((lo, hi, plo, phi))
    if not merged or merged[0][0] != -np.inf or merged[-1][1] != np.inf:
        raise ConvergenceError(f"{what} did not find the outer gaps: "
                               f"{[m[:2] for m in merged]!r}")
    bands = [(merged[j][1], merged[j + 1][0], merged[j][3], merged[j + 1][2])
             for j in range(len(merged) - 1)]
    if any(not lo < hi for lo, hi, _, _ in bands):
        raise ConvergenceError(f"{what} gave empty bands: {bands!r}")
    return [(float(lo), float(hi), bool(plo), bool(phi)) for lo, hi, plo, phi in bands]


def _curve_gaps(limit, pos, cols, zx, pole):
    """``(x_lo, x_hi, pole_lo, pole_hi)`` images of the parameter intervals where the
    criterion is positive on one curve; ``cols`` are the sample cells of its zeros,
    ``limit(side)`` the curve's ``x`` at its ends."""
    out = []
    cur = None
    if pos[0]:
        cur = (limit(-1), False)
    for c, xe, pe in zip(cols.tolist(), zx.tolist(), pole.tolist()):
        if not pos[c]:           # s rises through 0: a gap starts
            cur = (xe, pe)
        else:                    # s falls through 0: the gap ends
            out.append((cur[0], xe, cur[1], pe))
            cur = None
    if pos[-1]:
        out.append((cur[0], limit(+1), cur[1], False))
    return out


def _tail_coefficient(a, b, k, l, side):
    """``C`` with eq. (14.20) ``~ C/f**2`` as ``f -> side * oo`` on curve ``(k, l)`` when
    one branch is outer and the other inner (``1/F' ~ 1/(|G'(p)| f**2)`` next to a pole
    ``p`` of ``F``, ``1/F' ~ 1 - var/f**2`` on an outer branch); else None."""
    outer_a, pa = a.end(k, side)
    outer_b, pb = b.end(l, side)
    if outer_a == outer_b:
        return None
    inner, p, outer = (b, pb, a) if outer_a else (a, pa, b)
    dg = float(np.sum(inner.w / (p - inner.t) ** 2))
    return 1.0 / dg - outer.var


def _limit(a, b, k, l, side):
    """``lim x`` as ``f -> side * oo`` on curve ``(k, l)`` (theory section 14.19)."""
    outer_a, va = a.end(k, side)
    outer_b, vb = b.end(l, side)
    if outer_a and outer_b:
        return side * np.inf
    if outer_a or outer_b:       # omega - f -> the mean on one branch, a pole on the other
        return va + vb
    # both inner: s -> 0 + 0 - 1 < 0 there, so no gap reaches this end
    raise ConvergenceError(
        f"eq. (14.20) is positive at the end of the inner curve ({k}, {l}): the samples "
        f"do not reach its limit")
