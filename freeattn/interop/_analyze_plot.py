"""The figure of an analysis report (matplotlib; re-exported by ``freeattn.plotting``)."""

import math

import numpy as np

__all__ = ["plot_analysis"]


def _ecdf(values):
    v = np.sort(np.asarray(values, dtype=float))
    return v, np.arange(1, v.size + 1) / v.size


def _representative(rows):
    """The head whose KS distance to the law is the median of its layer (finite ones first)."""
    finite = [r for r in rows if math.isfinite(r.ks_law)]
    pool = finite or rows
    key = (lambda r: r.ks_law) if finite else (lambda r: r.ks_null)
    ordered = sorted(pool, key=key)
    return ordered[len(ordered) // 2]


def plot_analysis(report, *, figsize=None):
    """Per layer, the measured spectrum of a representative head against the law and the
    finite-size null model.

    Parameters
    ----------
    report : freeattn.interop._analyze.AnalysisReport
    figsize : tuple of float, optional

    Returns
    -------
    matplotlib.figure.Figure
        One panel per layer: empirical CDFs (logarithmic axis) of the squared
        singular values of ``sqrt(n)(A - 11^T/n)`` of the layer's median head
        (by KS distance to the law), of its null model (Gaussian softmax
        attention at the same ``n``, ``d``, ``beta``), and the CDF of the law at
        the head's ``beta_scores`` (theory eqs. (12.8), (12.10)).
    """
    from matplotlib.figure import Figure

    from ..attention._laws import attention_law

    layers = sorted({r.layer for r in report.rows})
    if not layers:
        raise ValueError("report has no rows to plot")
    cols = min(3, len(layers))
    nrows = math.ceil(len(layers) / cols)
    fig = Figure(figsize=figsize or (4.2 * cols, 3.2 * nrows), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    for ax, layer in zip(axes, layers):
        row = _representative([r for r in report.rows if r.layer == layer])
        floor = 1e-12
        x, f = _ecdf(np.maximum(row.values, floor))
        ax.step(x, f, where="post", color="tab:blue", label="measured")
        xn, fn = _ecdf(np.maximum(row.null_values, floor))
        ax.step(xn, fn, where="post", color="tab:orange", label="null model")
        if math.isfinite(row.ks_law):
            law = attention_law(row.beta_scores, row.gamma).squared()
            lo, hi = law.support()
            grid = np.geomspace(max(lo, x[0], 1e-6), hi, 300)
            ax.plot(grid, law.cdf(grid), color="black", linewidth=1.8, label="law")
        ax.set_xscale("log")
        ax.set_title(f"layer {layer} head {row.head}: beta {row.beta_scores:.2f}\n"
                     f"KS law {row.ks_law:.2f}, null-law {row.ks_null_law:.2f}", fontsize=9)
        ax.set_xlabel("squared singular value")
        ax.set_ylabel("CDF")
    for ax in axes[len(layers):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=8, loc="lower right")
    return fig
