"""The registry of law families: every attention law the library builds, in one table.

A :class:`Family` records a law family's name, its parameters (each with its
domain from :mod:`freeattn.core._checks`, its default and its help text), its
builder, and what the builder's law describes.  The command line builds one
subcommand per family from this table (``freeattn law``, ``multihead``,
``head-average``, ``causal``), and the conformance tests loop over it.

Views
-----
The public entry points keep their historical return types:

=====================  ==========================  ==============================
family                 entry point                 what the entry point returns
=====================  ==========================  ==============================
``law``                :func:`attention_law`       singular values
``multihead``          :func:`multihead_law`       eigenvalues (of MHA MHA^T)
``head-average``       :func:`head_average_law`    squared singular values
``causal``             :func:`causal_law`          squared singular values
=====================  ==========================  ==============================

Changing what an entry point returns would break every caller, so nothing
is changed there; instead every family offers the same two *views* under the
same names through :meth:`Family.law`:

- ``view="squared"``: the law of the squared singular values ``s**2`` (for
  the multi-head map, the eigenvalues of ``MHA MHA^T``, which are the same
  numbers);
- ``view="singular_values"``: the law of the singular values ``s``
  (:class:`freeattn.SingularValueLaw`, theory eq. (8.17)).

Adding a family is one :func:`register_family` call (docs/contributing.md).
"""

import dataclasses
import math

from ..core._checks import (ATTENTION_BETA, ATTENTION_GAMMA, CAUSAL_BETA, CAUSAL_GAMMA, Integer,
                      Real)

__all__ = ["Parameter", "Family", "FAMILIES", "VIEWS", "register_family", "family"]

#: The views every family offers (see the module docstring).
VIEWS = ("squared", "singular_values")

#: What a law describes, by view.
DESCRIBES = {"squared": "squared singular values", "singular_values": "singular values"}


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter of a law family.

    Attributes
    ----------
    name : str
        The builder's keyword (``gamma_k``); the command line spells it
        ``--gamma-k``.
    domain : Real or Integer
        Its allowed values (checked by the builder; shown in the help).
    default : object
        ``None`` with ``required=True``: no default.
    help : str
        One line for the command line's help.
    required : bool
    """

    name: str
    domain: object
    default: object = None
    help: str = ""
    required: bool = False

    @property
    def kind(self):
        """``int`` or ``float``: how the command line parses it."""
        return int if isinstance(self.domain, Integer) else float


@dataclasses.dataclass(frozen=True)
class Family:
    """A family of limiting laws: its parameters, builder and views.

    Attributes
    ----------
    name : str
        Registry key and command name (``law``, ``multihead``, ...).
    title : str
        One line: what matrix's spectrum the family describes.
    builder : callable
        The public entry point, called with the parameters as keywords.
    describes : str
        What the builder's law describes: ``"singular values"``,
        ``"squared singular values"`` or ``"eigenvalues"``.
    parameters : tuple of Parameter
    reference : str
        The theory equations and paper the law comes from.
    """

    name: str
    title: str
    builder: object
    describes: str
    parameters: tuple
    reference: str = ""

    @property
    def native_view(self):
        """The view the builder returns: ``"singular_values"`` or ``"squared"``."""
        return "singular_values" if self.describes == "singular values" else "squared"

    def defaults(self):
        """``{name: default}`` of the parameters that have one."""
        return {p.name: p.default for p in self.parameters if not p.required}

    def law(self, view=None, **params):
        """The family's law at ``params`` in the given view.

        Parameters
        ----------
        view : {"squared", "singular_values"}, optional
            See the module docstring; default: what the builder returns.
        **params
            The family's parameters (unset ones take their defaults).

        Returns
        -------
        SpectralLaw

        Raises
        ------
        TypeError, ValueError
            On an unknown parameter or view, or a parameter out of its domain.

        Examples
        --------
        >>> from freeattn import FAMILIES
        >>> law = FAMILIES["law"].law(view="squared", beta=1.0)
        >>> round(law.mean(), 12) == round(2.718281828459045 - 1, 12)   # theta1
        True
        """
        view = self.native_view if view is None else view
        if view not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
        known = {p.name for p in self.parameters}
        unknown = sorted(set(params) - known)
        if unknown:
            raise TypeError(f"{self.name} takes the parameters {', '.join(sorted(known))}; "
                            f"got unexpected {', '.join(unknown)}")
        missing = [p.name for p in self.parameters if p.required and p.name not in params]
        if missing:
            raise TypeError(f"{self.name} needs the parameters {', '.join(missing)}")
        kwargs = {**self.defaults(), **params}
        native = self.builder(**kwargs)
        if view == self.native_view:
            return native
        if view == "squared":
            return native.squared()
        from ..laws._law_base import SingularValueLaw

        return SingularValueLaw(native)


#: The registered families, in the order of the command line's help.
FAMILIES = {}


def register_family(family_):
    """Add a law family to :data:`FAMILIES`; it gets a command of its own.

    Parameters
    ----------
    family_ : Family
        The entry; its name must be new.

    Returns
    -------
    Family
        ``family_``.

    Raises
    ------
    ValueError
        If a family of that name is already registered.
    """
    if family_.name in FAMILIES:
        raise ValueError(f"family {family_.name!r} is already registered")
    FAMILIES[family_.name] = family_
    return family_


def family(name):
    """The registered family called ``name`` (``ValueError`` listing them otherwise)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {name!r}") from None


#: The module (under freeattn.attention) of each family's builder.
_BUILDER_MODULES = {"attention_law": "_laws", "multihead_law": "_multihead",
                    "head_average_law": "_multihead", "causal_law": "_causal_law"}


def _lazy(name):
    """The builder ``freeattn.<name>``, imported on call (the CLI help stays light)."""
    def build(**kwargs):
        import importlib

        module = importlib.import_module(f"{__package__}.{_BUILDER_MODULES[name]}")
        return getattr(module, name)(**kwargs)
    build.__name__ = name
    build.__qualname__ = name
    return build


_BETA = Parameter("beta", ATTENTION_BETA, required=True,
                  help="inverse temperature beta of the softmax (dimensionless)")
_HEADS = Parameter("heads", Integer(1, 64), required=True, help="number of heads h")
_KV_GROUPS = Parameter("kv_groups", Integer(1, 64), default=None,
                       help="distinct key/value sets, dividing heads (None: heads, no sharing)")
_PER_HEAD = Real(0.0, math.inf, low_closed=False)

register_family(Family(
    "law", "singular values s of sqrt(n)*(A - 11^T/n), single-head softmax attention",
    _lazy("attention_law"), "singular values",
    (_BETA, Parameter("gamma", ATTENTION_GAMMA, default=1.0,
                      help="width ratio gamma = d_qk / n")),
    "theory eqs. (5.1), (5.5); Hayase, Collins & Karakida, AISTATS 2026"))

register_family(Family(
    "multihead", "eigenvalues of MHA_perp MHA_perp^T, MHA_perp = [A_1perp V_1, ..., "
                 "A_hperp V_h] W_O",
    _lazy("multihead_law"), "eigenvalues",
    (_BETA, _HEADS,
     Parameter("gamma_k", _PER_HEAD, required=True,
               help="gamma_k = h d_k / n (per head in [1e-2, 1e2])"),
     Parameter("gamma_v", _PER_HEAD, required=True,
               help="gamma_v = h d_v / n (per head in [1e-2, 1e2])"),
     Parameter("gamma_o", Real(1e-2, 1e2), required=True, help="gamma_o = d_o / n"),
     _KV_GROUPS),
    "theory eqs. (9.9), (9.13)"))

register_family(Family(
    "head-average", "squared singular values of sqrt(n h)(Abar - 11^T/n), "
                    "Abar the mean of the h heads' attention",
    _lazy("head_average_law"), "squared singular values",
    (_BETA, _HEADS,
     Parameter("gamma_k", _PER_HEAD, required=True,
               help="gamma_k = h d_k / n (per head in [1e-2, 1e2])"),
     _KV_GROUPS),
    "theory eq. (9.19)"))

register_family(Family(
    "causal", "squared singular values of causal attention C = diag(1..n)(A - M)/sqrt(n)",
    _lazy("causal_law"), "squared singular values",
    (dataclasses.replace(_BETA, domain=CAUSAL_BETA),
     Parameter("gamma", CAUSAL_GAMMA, default=1.0, help="width ratio gamma = d_qk / n")),
    "theory eqs. (10.1)-(10.5)"))
