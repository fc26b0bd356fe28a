"""Named numerical tolerances used across freeattn.

Every tolerance a solver or check relies on is defined here once, with the
reason for its value, instead of as a literal in a function body.  Tolerances
that depend on a working precision are functions of that precision.
"""

import numpy as np

__all__ = [
    "FLOAT_EPS",
    "FLOAT_TINY",
    "MAX_FLOAT_EXP_ARG",
    "mp_tolerance",
]

#: Machine epsilon of float64.
FLOAT_EPS = float(np.finfo(np.float64).eps)

#: Largest ``x`` with ``exp(x)`` finite in float64 (``log(float max)``).
MAX_FLOAT_EXP_ARG = float(np.log(np.finfo(np.float64).max))

#: Smallest normal float64: the floor of a denominator that may be exactly 0
#: (a zero root or an all-zero coefficient vector), never a tolerance.
FLOAT_TINY = float(np.finfo(np.float64).tiny)


def mp_tolerance(dps, guard=5):
    """Residual tolerance for an mpmath computation at ``dps`` decimal digits.

    Parameters
    ----------
    dps : int
        Working precision in decimal digits.
    guard : int, optional
        Digits kept back as a guard against rounding in the residual itself.

    Returns
    -------
    mpmath.mpf
        ``10**-(dps - guard)``.
    """
    import mpmath

    return mpmath.mpf(10) ** (-(int(dps) - int(guard)))

#: Relative step size at which Newton's method on a polynomial stops: a few
#: ulps, the accuracy a simple root can be polished to in float64.
NEWTON_RTOL = 4 * FLOAT_EPS

#: Newton iterations allowed when polishing roots (quadratic convergence from
#: an eigenvalue-quality start needs 2-3; the margin covers near-double roots).
NEWTON_MAX_ITER = 30

#: Relative residual of the transcendental Silverstein equation (theory eq.
#: (5.3)) below which a root is accepted as the Stieltjes branch.  Roots of the
#: other sheet of m_H have residuals of order one; near-double roots at a soft
#: edge lose about half the digits, hence sqrt(eps)-scale slack.
BRANCH_RESIDUAL_RTOL = 1e-7

#: Two candidate edges closer than this (relative to their size) are one edge.
EDGE_MERGE_RTOL = 1e-12

#: A critical point of x(t) (theory eq. (6.3)) with |u(t)| below this fraction
#: of |a| + |b w(t)| is the root u = 0 of dx/dt = -u (...)/b, i.e. the hard
#: edge x = 0; its computed x is round-off and is replaced by 0.
HARD_EDGE_U_RTOL = 1e-8

#: A gap between candidate edges belongs to the support when
#: density(midpoint) * width exceeds this (a mass far below float resolution
#: of the CDF is not an interval).
SUPPORT_DENSITY_FLOOR = 1e-13

#: Chebyshev nodes per support interval to start with; doubled until the last
#: eighth of the coefficients is below CHEB_TAIL_RTOL of the largest one.
CHEB_START_NODES = 32

#: Upper limit on the nodes per panel; a panel that needs more is split
#: (freeattn._solver.build_panels).
CHEB_MAX_NODES = 256

#: Most successive splits of a panel: 60 quarterings reach 1e-36 of the
#: interval width, far below any structure of the laws.
PANEL_MAX_DEPTH = 60

#: Panels narrower than this fraction of their support interval are kept even
#: when their series did not converge: near a cusp (two edges about to merge)
#: the density ~ |x - x0|**(1/3) and float roots are only eps**(1/3)-accurate,
#: and such a sliver carries mass below ~1e-12.
PANEL_MIN_WIDTH_RTOL = 1e-9

#: Coefficient tail (relative to the largest coefficient) at which a Chebyshev
#: series is converged: a few hundred ulps, the level where sampled values'
#: rounding noise sets the floor of the DCT.
CHEB_TAIL_RTOL = 1e-13

#: The fast density path accepts a Newton step from the Chebyshev interpolant
#: only when it is this small relative to |u|; larger steps mean the
#: interpolant is off and the point is re-solved from all roots.
FAST_PATH_MAX_STEP = 1e-8

#: Relative accuracy in beta of the linearization threshold (brentq).
THRESHOLD_RTOL = 1e-13

#: Relative imaginary offset added to eigenvalue-computed roots before Newton
#: polishing (see SampleCovarianceLaw.solve_u): large against the ~1e-16
#: perturbation that can make a near-double complex pair real, small enough
#: that simple real roots are recovered by the first Newton steps.
ROOT_NUDGE = 1e-6

#: A coefficient tail that stops shrinking on doubling but is below this is
#: rounding noise, not lack of resolution: near-double roots at a soft edge
#: carry ~1e-12 relative noise into the samples, nearly triple roots next to a
#: cusp (edges about to merge) up to ~1e-9 before the panel is split further.
CHEB_NOISE_RTOL = 1e-9

#: Safeguarded Newton iterations for quantiles (bisection fallback halves the
#: bracket, so 80 steps reach any float64 resolution).
PPF_MAX_ITER = 80

#: Step in the panel variable s (range of length 1 or 2) at which the quantile
#: iteration stops: a few ulps.
PPF_STEP_ATOL = 8 * FLOAT_EPS

#: Gauss-Legendre nodes added beyond the degree of a panel's series when
#: integrating it against a smooth factor (odd moments, Stieltjes transform
#: of the singular-value law).
QUADRATURE_EXTRA_NODES = 32

#: Continuation in Im z for non-algebraic populations: eta_k = 4 |z| * 0.5**k,
#: 48 stages reach 1e-14 |z|, below which the last stage goes to Im z itself.
CONTINUATION_FACTOR = 0.5
CONTINUATION_STAGES = 48

#: Step halvings allowed to keep a Newton iterate in the upper half-plane.
CONTINUATION_HALVINGS = 30

#: Relative step of the central difference for m_H' (error ~ step**2).
CONTINUATION_DIFF_STEP = 1e-6

#: A polished root with |Im u| below this fraction of |u| is real (Newton from
#: the nudged start leaves ~1e-20 imaginary dust on real roots, while complex
#: roots inside the support have Im u / |u| >~ 1e-8 except within ~1e-16 of an
#: edge).
REAL_ROOT_RTOL = 1e-13

#: pdf on at most this many points of a law whose Chebyshev panels are not
#: built yet solves them directly (~4 us per point) instead of building the
#: panels (a few ms, up to ~0.3 s for beta ~ 1e-8).
PDF_DIRECT_MAX_POINTS = 256

#: A root of the edge polynomial (theory eq. (6.3)) from companion-matrix
#: eigenvalues counts as real when |Im t| <= this times max(1, |t|); it is then
#: polished by Newton on the real line.  Eigenvalues of a real root carry
#: round-off ~ sqrt(eps) ~ 1e-8 only at a double root, where the candidate is
#: also kept; genuinely complex pairs of the cubic are far larger.
EDGE_ROOT_IMAG_RTOL = 1e-8

#: Beyond |z| > STIELTJES_SERIES_RADIUS * (upper edge) the Stieltjes transform is
#: summed from its moment series (theory eq. (5.8)) instead of the polynomial
#: form, whose coefficients (powers of z up to z**4) overflow for |z| ~ 1e77.
#: With 12 terms the truncation error is below (1e-4)**13 relative.
STIELTJES_SERIES_RADIUS = 1e4
STIELTJES_SERIES_TERMS = 12
