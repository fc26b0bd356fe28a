"""freeattn: the limiting spectrum of random softmax attention, from free probability.

The singular values of the centred, rescaled attention matrix
``sqrt(n) * (A - 11^T/n)`` follow, as ``n -> oo``, the law of a linear Gaussian
model ``(beta*S + alpha*W)/sqrt(n)`` (Hayase, Collins & Karakida, AISTATS 2026).
freeattn computes that law exactly and checks it against simulation.

The package is layered; a subpackage imports only from the layers below it
(tests/test_architecture.py checks this and that no import cycle exists):

==============  ==========================================================
``core``        errors, argument checks, options, tolerances, BLAS, reports
``algebra``     polynomials, cumulant series, Chebyshev representation,
                the levels and the rational curve of composed laws
``laws``        the law base and its transforms, elementary laws, SciPy adapter
``compose``     sample covariance, free convolutions: solvers, numerical R/S
``attention``   coefficients, the single-head, multi-head and causal laws
``montecarlo``  sampling, the model registry, draws, statistics, validation, fit
front ends      ``cli`` (the command line), ``plotting``, ``torch``
==============  ==========================================================

The public names below are loaded on first use (PEP 562), so ``import
freeattn`` does not import SciPy's solvers, SymPy, mpmath, PyTorch or
matplotlib.
"""

import importlib

__version__ = "0.1.0"

#: The module (under freeattn) of each public name.
_EXPORTS = {
    "core._errors": ("ConvergenceError",),
    "core._options": ("DEFAULT_OPTIONS", "SolverOptions"),
    "laws._law_base": ("Interval", "LawAccuracy", "LogEnd", "SpectralLaw"),
    "algebra._cumulants": ("free_cumulants_to_moments", "moments_to_free_cumulants"),
    "laws._elementary": ("point_masses", "semicircle"),
    "compose._subordination": ("free_additive", "free_multiplicative", "sample_covariance"),
    "compose._rectangular": ("rectangular_free_additive",),
    "attention._coefficients": (
        "LinearCoefficients", "conditional_covariance", "conditional_mean",
        "gaussian_equivalent_covariance", "linear_coefficients"
    ),
    "attention._hermite": (
        "HermiteTable", "alpha2_fraction", "hermite_coefficients", "hermite_table",
        "order_variances", "truncated_alpha2"
    ),
    "attention._laws": (
        "AttentionLaw", "EigenvalueLaw", "LinearizationThreshold", "OperatorNorm",
        "SingularValueLaw", "attention_law", "linearization_threshold", "marchenko_pastur",
        "operator_norm"
    ),
    "montecarlo._sampling": ("sample_attention", "squared_singular_values"),
    "montecarlo._models": (
        "CHAIN_MODELS", "MODELS", "Draw", "Intermediate", "Model", "register_intermediate",
        "register_model", "sample_chain", "sample_model", "unregister_model"
    ),
    "attention._causal_law": ("CausalLaw", "causal_law"),
    "montecarlo._causal_sampling": (
        "CAUSAL_MODELS", "causal_attention", "causal_matrix", "causal_spectrum"
    ),
    "montecarlo._finite_width": ("EmpiricalSpectrumLaw", "finite_width_law",
                                 "harmonic_equivalent_matrix"),
    "attention._stack_law": ("attention_stack_law", "stack_moments"),
    "montecarlo._stack_sampling": ("STACK_MODELS", "TOKEN_MODELS"),
    "attention._multihead": ("MultiheadLaw", "head_average_law", "multihead_law"),
    "attention._families": ("FAMILIES", "Family", "Parameter", "register_family"),
    "montecarlo._draws": ("DrawError", "ValidationInterrupted"),
    "montecarlo._fit": ("FitResult", "fit"),
    "montecarlo._validation": (
        "ConvergenceReport", "ModelResult", "RateFit", "ValidationReport", "convergence",
        "validate"
    ),
}

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    """Import the module of the public name ``name`` on first use (PEP 562)."""
    try:
        module = _MODULE_OF[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "FAMILIES",
    "Family",
    "Parameter",
    "register_family",
    "MultiheadLaw",
    "multihead_law",
    "head_average_law",
    "CausalLaw",
    "causal_law",
    "CAUSAL_MODELS",
    "causal_attention",
    "causal_matrix",
    "causal_spectrum",
    "EmpiricalSpectrumLaw",
    "finite_width_law",
    "harmonic_equivalent_matrix",
    "ConvergenceError",
    "SolverOptions",
    "DEFAULT_OPTIONS",
    "SpectralLaw",
    "Interval",
    "LogEnd",
    "LawAccuracy",
    "semicircle",
    "point_masses",
    "attention_stack_law",
    "STACK_MODELS",
    "TOKEN_MODELS",
    "stack_moments",
    "sample_covariance",
    "free_additive",
    "free_multiplicative",
    "rectangular_free_additive",
    "free_cumulants_to_moments",
    "moments_to_free_cumulants",
    "AttentionLaw",
    "LinearCoefficients",
    "linear_coefficients",
    "attention_law",
    "marchenko_pastur",
    "operator_norm",
    "linearization_threshold",
    "EigenvalueLaw",
    "SingularValueLaw",
    "OperatorNorm",
    "LinearizationThreshold",
    "conditional_mean",
    "conditional_covariance",
    "gaussian_equivalent_covariance",
    "HermiteTable",
    "hermite_coefficients",
    "order_variances",
    "truncated_alpha2",
    "alpha2_fraction",
    "hermite_table",
    "CHAIN_MODELS",
    "MODELS",
    "Model",
    "Draw",
    "Intermediate",
    "register_model",
    "unregister_model",
    "register_intermediate",
    "sample_attention",
    "sample_chain",
    "sample_model",
    "squared_singular_values",
    "validate",
    "convergence",
    "ValidationReport",
    "ModelResult",
    "ConvergenceReport",
    "RateFit",
    "DrawError",
    "ValidationInterrupted",
    "fit",
    "FitResult",
    "__version__",
]
