"""freeattn: the limiting spectrum of random softmax attention, from free probability.

The singular values of the centred, rescaled attention matrix
``sqrt(n) * (A - 11^T/n)`` follow, as ``n -> oo``, the law of a linear Gaussian
model ``(beta*S + alpha*W)/sqrt(n)`` (Hayase, Collins & Karakida, AISTATS 2026).
freeattn computes that law exactly and checks it against simulation.
"""

from ._errors import ConvergenceError
from ._options import DEFAULT_OPTIONS, SolverOptions
from ._law_base import Interval, LawAccuracy, LogEnd, SpectralLaw
from ._cumulants import free_cumulants_to_moments, moments_to_free_cumulants
from ._elementary import point_masses, semicircle
from ._subordination import free_additive, free_multiplicative, sample_covariance
from ._coefficients import (
    LinearCoefficients,
    conditional_covariance,
    conditional_mean,
    gaussian_equivalent_covariance,
    linear_coefficients,
)
from ._hermite import (
    HermiteTable,
    alpha2_fraction,
    hermite_coefficients,
    hermite_table,
    order_variances,
    truncated_alpha2,
)
from ._laws import (
    AttentionLaw,
    EigenvalueLaw,
    LinearizationThreshold,
    OperatorNorm,
    SingularValueLaw,
    attention_law,
    linearization_threshold,
    marchenko_pastur,
    operator_norm,
)
from ._sampling import sample_attention, squared_singular_values
from ._models import (
    CHAIN_MODELS,
    MODELS,
    Draw,
    Intermediate,
    Model,
    register_intermediate,
    register_model,
    sample_chain,
    sample_model,
    unregister_model,
)
from ._causal_law import CausalLaw, causal_law
from ._stack_law import attention_stack_law, stack_moments
from ._stack_sampling import STACK_MODELS, TOKEN_MODELS
from ._causal_sampling import CAUSAL_MODELS, causal_attention, causal_matrix, causal_spectrum
from ._multihead import MultiheadLaw, head_average_law, multihead_law
from ._draws import DrawError, ValidationInterrupted
from ._fit import FitResult, fit
from ._validation import (
    ConvergenceReport,
    ModelResult,
    RateFit,
    ValidationReport,
    convergence,
    validate,
)

__version__ = "0.1.0"

__all__ = [
    "MultiheadLaw",
    "multihead_law",
    "head_average_law",
    "CausalLaw",
    "causal_law",
    "CAUSAL_MODELS",
    "causal_attention",
    "causal_matrix",
    "causal_spectrum",
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
