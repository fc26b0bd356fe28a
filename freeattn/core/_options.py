"""Solver options: every tolerance of the law engine in one frozen object.

A law is built with an :class:`SolverOptions` instance (``options=`` keyword
of the constructors; :data:`DEFAULT_OPTIONS` otherwise).  Each field says why
its default has that value; tests that need a different tolerance pass their
own options instead of patching module globals.
"""

from dataclasses import dataclass, fields, replace

import numpy as np

__all__ = ["SolverOptions", "DEFAULT_OPTIONS"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class SolverOptions:
    """Tolerances and limits of the spectral-law engine.

    Parameters
    ----------
    branch_rtol : float
        Relative residual of the defining (subordination) equation, evaluated
        with the constituents' true-branch transforms, below which a root is
        accepted (theory eq. (8.10)).  Roots of other sheets have residuals of
        order one; nearly double roots at a soft edge lose about half the
        digits, hence ``sqrt(eps)``-scale slack.
    newton_rtol : float
        Relative Newton step at which polishing stops (a few ulps).
    newton_max_iter : int
        Newton iterations per solve (quadratic convergence from a good start
        needs 3-5; the margin covers nearly double roots).
    root_nudge : float
        Relative imaginary offset given to eigenvalue-computed roots before
        Newton polishing, so that a nearly double complex pair at a soft edge
        is not polished into a spurious real root.
    real_root_rtol : float
        A root with ``|Im t| <= real_root_rtol * |t|`` is real.
    continuation_stages : int
        Stages of the continuation in ``Im z`` of the generic (non-rational)
        solver: ``eta_k = eta_0 * 2**-k``.
    cheb_start_nodes : int
        First-kind Chebyshev nodes of a panel to start with (tripled: the
        nodes of ``n`` are among those of ``3 n``, so no solve is discarded).
    cheb_max_nodes : int
        Most nodes of one panel; a panel that needs more is split.
    cheb_tail_rtol : float
        A panel's series has converged when its last third of coefficients is
        below this fraction of the largest (a few ulps of the samples).
    cheb_noise_rtol : float
        A tail that no longer shrinks on tripling but lies below this is the
        rounding floor of the samples (nearly double roots near an edge carry
        ``eps / distance`` relative noise), not missing resolution.
    panel_max_depth : int
        Most successive splits of a panel (60 quarterings reach 1e-36 of the
        interval).
    panel_min_width_rtol : float
        Panels narrower than this fraction of their interval are kept even when
        not converged (a sliver next to a cusp, float-accurate to
        ``eps**(1/3)``, carrying mass below ``~1e-12``).
    mass_atol : float
        Largest allowed difference between the representation's total mass
        (continuous part plus atoms) and 1; beyond it the build raises
        ``ConvergenceError`` instead of returning a law that is off.
    edge_merge_rtol : float
        Two edges closer than this (relative) are one; a gap narrower than
        this is not resolved (the split-support resolution stated in the docs).
    ppf_max_iter : int
        Safeguarded Newton steps when inverting a panel's CDF (bisection
        fallback, so 80 steps reach float resolution).
    critical_grid : int
        Points per gap of a constituent's support on which the generic solver
        samples the derivative of the inverse map before bracketing its zeros
        (theory eq. (8.12)); features narrower than the grid spacing in the
        transformed variable are not resolved.
    max_rational_degree : int
        Largest degree of the clear-denominator polynomial solved by
        companion-matrix eigenvalues; larger rational towers use the generic
        Newton path (monomial coefficients of high degree are ill-conditioned).
    max_exact_moment_order : int
        Largest order for which the moments of a composed law come from its
        exact moment recursion (theory eqs. (8.21)-(8.24): rational, or fixed
        point verified at two precisions; ``k**3/6`` integer products per
        conversion, so 0.6 s at 150 and 1.7 s at 200 for the four-level
        multi-head tower, benchmarks/bench_moments.py);
        higher orders use quadrature of the representation (accurate to
        ~1e-11 of ``E|X|**k``, eq. (8.25)).  The elementary laws have closed
        forms at every order.
    """

    branch_rtol: float = 1e-7
    newton_rtol: float = 4 * _EPS
    newton_max_iter: int = 40
    root_nudge: float = 1e-6
    real_root_rtol: float = 1e-13
    continuation_stages: int = 60
    cheb_start_nodes: int = 9
    cheb_max_nodes: int = 243
    cheb_tail_rtol: float = 2e-15
    cheb_noise_rtol: float = 1e-10
    panel_max_depth: int = 60
    panel_min_width_rtol: float = 1e-9
    mass_atol: float = 1e-11
    edge_merge_rtol: float = 1e-12
    ppf_max_iter: int = 80
    critical_grid: int = 256
    max_rational_degree: int = 16
    max_exact_moment_order: int = 200

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in (int, "int"):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                    raise ValueError(f"SolverOptions.{f.name} must be a positive integer, "
                                     f"got {value!r}")
            else:
                if not isinstance(value, (int, float, np.floating)) or not 0 < value < 1:
                    raise ValueError(f"SolverOptions.{f.name} must be a float in (0, 1), "
                                     f"got {value!r}")

    def with_(self, **changes):
        """A copy with some fields changed (``dataclasses.replace``).

        Parameters
        ----------
        **changes
            New values of fields, by name (checked as in the constructor).

        Returns
        -------
        SolverOptions
        """
        return replace(self, **changes)


#: The options every law uses unless given others.
DEFAULT_OPTIONS = SolverOptions()


def check_options(options):
    """``options`` or the defaults; TypeError for anything else."""
    if options is None:
        return DEFAULT_OPTIONS
    if not isinstance(options, SolverOptions):
        raise TypeError(f"options must be a freeattn.SolverOptions, got {type(options).__name__}")
    return options
