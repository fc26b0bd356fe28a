"""Command-line subcommands ``stack`` and ``tokens`` (theory/13_stacks.md).

Self-contained: :func:`add_stack_parser` adds both to an ``argparse``
sub-parser set; each handler returns a :class:`freeattn._render.Document`.
"""

import math

__all__ = ["add_stack_parser"]

#: Output formats (those of the main command line).
FORMATS = ("table", "markdown", "csv", "json")


def _law_pairs(build):
    """``(pairs, note)``: the law's edge and mass near 0, or why it is not available."""
    from ._errors import ConvergenceError

    try:
        law = build()
    except ConvergenceError as exc:
        return [("law_edge", math.nan), ("law_cdf_at_1e-2_mean", math.nan)], \
            f"law not available: {exc}"
    edge = float(law.support()[1])
    return [("law_edge", edge),
            ("law_cdf_at_1e-2_mean", float(law.cdf(1e-2 * float(law.mean()))))], ""


def _cmd_stack(args, emit):
    from ._coefficients import linear_coefficients
    from ._render import Document, Record
    from ._stack_law import attention_stack_law, free_multiplicative_moments, stack_moments

    moments = stack_moments(args.beta, args.gamma, args.layers, 3)
    theta1 = float(linear_coefficients(args.beta).theta1)
    mp = [theta1, 2 * theta1 ** 2, 5 * theta1 ** 3]
    mp_product = mp
    for _ in range(args.layers - 1):
        mp_product = free_multiplicative_moments(mp_product, mp)
    law, note = _law_pairs(lambda: attention_stack_law(args.beta, args.gamma,
                                                       layers=args.layers))
    pairs = [("beta", args.beta), ("gamma", args.gamma), ("layers", args.layers),
             ("m1", float(moments[0])), ("m2", float(moments[1])), ("m3", float(moments[2])),
             ("mp_product_m2", float(mp_product[1])),
             ("mp_product_edge", theta1 ** args.layers * (args.layers + 1) ** (args.layers + 1)
              / args.layers ** args.layers)] + law
    notes = ("m1-m3: exact moments of the stack law (theory eq. (13.3)); mp_product: "
             "Marchenko-Pastur(theta1)^⊠L, its edge the Fuss-Catalan edge",)
    return Document([Record(pairs, title="squared singular values of the stack B_L ... B_1 "
                                         "(theory eq. (13.2))",
                            notes=notes + ((note,) if note else ()))])


def _cmd_tokens(args, emit):
    from ._elementary import point_masses
    from ._laws import attention_law
    from ._render import Document, Record
    from ._stack_law import single_layer_moments, token_moments

    s = args.spread
    gram = [1.0, 1.0 + s * s, 1.0 + 3 * s * s]         # moments of {1 - s, 1 + s}
    moments = token_moments(args.beta, args.gamma, gram, 3)
    iso = single_layer_moments(args.beta, args.gamma, 3)
    law, note = _law_pairs(lambda: attention_law(
        args.beta, args.gamma, tokens=point_masses([1.0 - s, 1.0 + s])).squared())
    pairs = [("beta", args.beta), ("gamma", args.gamma), ("spread", s),
             ("m1", float(moments[0])), ("m2", float(moments[1])), ("m3", float(moments[2])),
             ("isotropic_m2", float(iso[1])), ("isotropic_m3", float(iso[2]))] + law
    notes = ("m1-m3: exact moments of the law with a two-point token Gram {1 - spread, "
             "1 + spread} (theory eqs. (13.7), (13.8)); isotropic: today's law",)
    return Document([Record(pairs, title="attention with anisotropic tokens (equal norms)",
                            notes=notes + ((note,) if note else ()))])


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def add_stack_parser(subparsers):
    """Add the ``stack`` and ``tokens`` subcommands to ``subparsers``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers(...)``; each command sets ``handler``.

    Returns
    -------
    tuple
        The two sub-parsers.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = add_stack_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["stack", "--layers", "3"]).layers
    3
    """
    stack = subparsers.add_parser(
        "stack", help="the law of a stack of attention layers",
        description="Exact moments of the squared singular values of B_L ... B_1 (independent "
                    "layers), beside the Marchenko-Pastur product; the law's edge when the "
                    "composition engine builds it.")
    stack.add_argument("--beta", type=float, default=1.0)
    stack.add_argument("--gamma", type=float, default=1.0)
    stack.add_argument("--layers", type=_positive_int, default=2)
    stack.add_argument("--format", choices=FORMATS, default="table")
    stack.set_defaults(handler=_cmd_stack)
    tokens = subparsers.add_parser(
        "tokens", help="one layer with anisotropic (equal-norm) tokens",
        description="Exact moments of the attention law with a two-point token Gram "
                    "spectrum {1 - s, 1 + s}, beside the isotropic law.")
    tokens.add_argument("--beta", type=float, default=1.0)
    tokens.add_argument("--gamma", type=float, default=1.0)
    tokens.add_argument("--spread", type=float, default=0.5)
    tokens.add_argument("--format", choices=FORMATS, default="table")
    tokens.set_defaults(handler=_cmd_tokens)
    return stack, tokens
