"""Figures of the freeattn documentation (matplotlib).

This is the only freeattn module that uses matplotlib, and it imports it
inside the functions, so ``import freeattn`` never needs it (install the
``plot`` extra: ``pip install freeattn[plot]``).  Every figure function takes
the sizes of what it computes as arguments -- tests draw the same figures with
tiny matrices -- and returns a :class:`matplotlib.figure.Figure` built without
``pyplot`` (no global state, no window).

The gallery (:data:`FIGURES`, filled by the :func:`gallery_figure` decorator
of each figure function; numbers and names accepted by ``freeattn plot``):

1. ``chain`` -- histograms of the squared singular values of every model of
   the proof chain with the predicted density over them, and a quantile
   panel (Monte Carlo);
2. ``law-vs-mp`` -- the predicted law against Marchenko-Pastur of the same
   variance, for several ``beta``, edges marked;
3. ``edge`` -- the operator norm against ``beta``, the Marchenko-Pastur edge,
   the common mode ``sqrt(n)`` and the linearization threshold for several
   ``n``;
4. ``convergence`` -- Kolmogorov distance to the limit against ``n``
   (Monte Carlo);
5. ``gamma`` -- the law across ``gamma = d_qk/n`` at fixed ``beta``;
6. ``causal`` -- causal (masked) attention: histograms of the causal softmax
   ``C`` and its masked linear model ``Y_c`` against the causal law, the
   non-causal law and Marchenko-Pastur, and the CDF at the logarithmic end on
   a log axis (Monte Carlo).
7. ``multihead`` -- multi-head attention (MHA, GQA, MQA) against its law and
   Marchenko-Pastur, and the head-averaged map with independent and shared
   keys (Monte Carlo).
8. ``finite-width`` -- Kolmogorov distance to softmax attention against the
   head width ``d`` for the paper's law and the harmonic Gaussian equivalent
   (Monte Carlo).
9. ``stacks`` -- squared singular values of a stack of attention layers against
   the stack law and the Marchenko-Pastur product, per depth (Monte Carlo).
10. ``tokens`` -- attention on anisotropic tokens (Wishart and rotated token
    Grams) against the token-covariance law and the isotropic law (Monte Carlo).
11. ``multihead-tokens`` -- the output of multi-head attention on anisotropic
    tokens against the multi-head token law (the Dyson system) and the isotropic
    multi-head law (Monte Carlo).

``freeattn reproduce`` (or :func:`reproduce`) writes all of them as PNG.
"""

import pathlib
from dataclasses import dataclass, field

import numpy as np

from .core._checks import key_width

__all__ = [
    "FIGURES",
    "figure_finite_width",
    "figure_stacks",
    "figure_tokens",
    "figure_multihead_tokens",
    "chain_samples",
    "figure_chain",
    "figure_law_vs_mp",
    "figure_edge",
    "figure_convergence",
    "figure_gamma",
    "figure_causal",
    "figure_multihead",
    "make_figure",
    "plot_analysis",
    "save_figure",
    "output_path",
    "reproduce",
    "check_output_folder",
    "gallery_figure",
    "figure_list",
]

from .interop._analyze_plot import plot_analysis  # noqa: E402  (freeattn analyze --plot)

#: Default output folder of :func:`reproduce`: the working directory (never the
#: committed docs/figures implicitly).
DEFAULT_FIGURE_DIR = "."

#: Default Monte Carlo sizes of the gallery figures 1, 4, 6, 7, 8 and 9, chosen so
#: that ``freeattn reproduce`` stays within about 90 s of CPU on a loaded
#: two-core machine (benchmarks/RESULTS.md); the ``--n``/``--draws`` options
#: of ``plot`` and ``reproduce`` raise them.
CHAIN_N, CHAIN_DRAWS = 600, 6
CONVERGENCE_N, CONVERGENCE_DRAWS = 1000, 3
CAUSAL_N, CAUSAL_DRAWS = 600, 3
MULTIHEAD_N, MULTIHEAD_DRAWS = 800, 3
FINITE_WIDTH_N, FINITE_WIDTH_DRAWS = 512, 2
STACK_N, STACK_DRAWS = 300, 2
TOKENS_N, TOKENS_DRAWS = 400, 2
MULTIHEAD_TOKENS_N, MULTIHEAD_TOKENS_DRAWS = 800, 2

#: Resolution of the PNGs in docs/figures: legible on a laptop screen and in
#: a GitHub README without being heavy (about 100-200 kB each).
PNG_DPI = 130

#: Points on which densities are drawn: smooth at the figure sizes used.
CURVE_POINTS = 600

#: Histogram bins over the plotted range: about 170 samples per bin at
#: 10 draws of n = 1000.
HISTOGRAM_BINS = 60

#: Quantile levels in the quantile panel (the extreme levels are left out:
#: the pooled sample has no resolution there).
QUANTILE_LEVELS = np.linspace(0.005, 0.995, 199)

#: The densities at gamma = 1 diverge like lambda**(-1/2) at 0; the y-range of
#: a density panel is set by the curve on [EDGE_FRACTION*edge, edge].
EDGE_FRACTION = 0.05

# One colour per model ("tab10" order, without the gray of the Marchenko-Pastur
# curves) so the same model has the same colour in every panel; the chain's six
# come first, further registered models take the next ones.
_MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
                  "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
_THEORY_STYLE = {"color": "black", "linewidth": 2.0, "zorder": 5}
_MP_STYLE = {"color": "tab:gray", "linewidth": 1.6, "linestyle": "--", "zorder": 4}



# ---------------------------------------------------------------------------
# registry


#: The gallery, in order; keys are the figure numbers as strings.  Filled by
#: :func:`gallery_figure`: a new figure is one decorated function.
FIGURES = {}

#: Seed of the gallery's Monte Carlo figures (the command line's ``--seed``
#: default is 0 for every command; the gallery keeps its own seed so that the
#: committed PNGs are reproducible with ``freeattn reproduce --seed 2026``).
GALLERY_SEED = 2026


@dataclass(frozen=True)
class FigureSpec:
    """One gallery figure: its number, name, file, default sizes and how to draw it.

    Attributes
    ----------
    number : int
    name : str
        Accepted by ``freeattn plot`` and :func:`make_figure` beside the number.
    function : callable
        The figure function.
    caption : str
        Its title in the gallery (``docs/gallery.md``) and the command line's help.
    monte_carlo : bool
        Whether it samples matrices (then ``n``, ``draws``, ``seed``, ``jobs``
        apply).
    defaults : dict
        Default ``n``, ``draws``, ``seed`` of a Monte Carlo figure.
    size_argument : {"n", "ns", None}
        How ``n`` reaches the function: as ``n``, as the sizes
        ``ns = (n/4, n/2, n)``, or not at all.
    """

    number: int
    name: str
    function: object
    caption: str
    monte_carlo: bool = False
    defaults: dict = field(default_factory=dict)
    size_argument: str = None

    def draw(self, *, n=None, draws=None, seed=None, jobs=None):
        """Call the figure function with the default sizes, overridden by the given ones."""
        if not self.monte_carlo:
            return self.function()
        options = dict(self.defaults)
        options.update({k: v for k, v in {"n": n, "draws": draws, "seed": seed}.items()
                        if v is not None})
        kwargs = {"draws": options["draws"], "rng": options.get("seed"),
                  # An int executor is a local process pool with that many workers.
                  "executor": jobs if jobs is not None and jobs > 1 else None}
        if self.size_argument == "n":
            kwargs["n"] = options["n"]
        elif self.size_argument == "ns" and "n" in options:
            kwargs["ns"] = tuple(sorted({max(options["n"] // 4, 2),
                                         max(options["n"] // 2, 2), options["n"]}))
        return self.function(**kwargs)

    @property
    def filename(self):
        return f"fig{self.number}_{self.name.replace('-', '_')}.png"


def gallery_figure(number, name, caption, *, defaults=None, size_argument=None):
    """Register the decorated function as gallery figure ``number`` (one entry per figure).

    ``make_figure``, ``reproduce``, the command line's figure lists and the
    gallery page's list are all read from :data:`FIGURES`.

    Parameters
    ----------
    number : int
        The figure's number (the next free one).
    name : str
        Its name, accepted beside the number.
    caption : str
        Its title in the gallery and the help.
    defaults : dict, optional
        Default ``n``, ``draws``, ``seed``: makes it a Monte Carlo figure.
    size_argument : {"n", "ns"}, optional
        How ``n`` reaches the function (see :class:`FigureSpec`).

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    ValueError
        If the number or the name is already registered.
    """
    def register(function):
        key = str(number)
        if key in FIGURES or any(s.name == name for s in FIGURES.values()):
            raise ValueError(f"figure {number} ({name}) is already registered")
        FIGURES[key] = FigureSpec(number, name, function, caption,
                                  monte_carlo=defaults is not None,
                                  defaults=dict(defaults or {}), size_argument=size_argument)
        return function
    return register


def _figure(figsize):
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def _library():
    import freeattn

    return freeattn


def _mp_same_variance(beta):
    """The Marchenko-Pastur law of the squared singular values of i.i.d. entries with the
    attention entries' variance ``theta1 = exp(beta^2) - 1`` (theory eq. (2.4)), ratio 1."""
    fa = _library()
    return fa.marchenko_pastur(fa.linear_coefficients(beta).theta1, 1.0)


def _curve(law, points=CURVE_POINTS):
    """Grid over the support of ``law`` and the density on it."""
    lower, upper = law.support()
    x = np.linspace(lower, upper, points)
    return x, law.pdf(x)


def _density_ylim(x, *densities, edge):
    """Upper y-limit that shows the bulk, ignoring the 1/sqrt singularity at 0."""
    mask = x >= EDGE_FRACTION * edge
    peak = max(float(np.max(np.where(mask, d, 0.0))) for d in densities)
    return 1.15 * peak


# ---------------------------------------------------------------------------
# Figure 1


def chain_samples(beta=1.0, n=1000, gamma=1.0, draws=10, *, models=None, rng=None,
                  executor=None, options=None):
    """Pooled squared singular values of each model (the proof chain by default).

    Parameters
    ----------
    beta : float
        Inverse temperature.
    n : int
        Matrix size (tokens); ``d_qk = round(gamma * n)``.
    gamma : float
        Width ratio ``d_qk / n``.
    draws : int
        Independent draws per model.
    models : sequence of str, optional
        Registered models to sample (``freeattn.MODELS``; default
        ``freeattn.CHAIN_MODELS``).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Root seed; draw ``i`` uses its ``i``-th spawned child, shared by all
        models (``freeattn.sample_chain``), so the result does not depend on
        the executor.  The draws are those of ``freeattn.validate`` with the
        same arguments.
    executor : None, int, 'process' or concurrent.futures.Executor, optional
        Runs the draws in parallel, as in ``freeattn.validate`` (an int: a
        local process pool with that many workers); ``None`` runs them here.
    options : mapping, optional
        Model options (``freeattn.Model.options``), as in ``freeattn.validate``.

    Returns
    -------
    dict
        ``{model: 1-d array of n*draws squared singular values}``, in
        registry order.

    Raises
    ------
    freeattn.DrawError
        When a draw fails (it names the draw and its seed).

    Examples
    --------
    >>> samples = chain_samples(1.0, n=20, draws=2, models=("attention", "linear"), rng=0)
    >>> {model: values.shape for model, values in samples.items()}
    {'attention': (40,), 'linear': (40,)}
    """
    # The draws of freeattn.validate: same argument checks, seeds, executors and
    # DrawError (with the failing draw's seed) when a draw fails.
    from .montecarlo._draws import root_seed, run_draws
    from .montecarlo._validation import _check_validate_args

    fa = _library()
    beta, _, n, d_qk, draws, models, options = _check_validate_args(
        beta, gamma, n, draws, fa.CHAIN_MODELS if models is None else models, False, options)
    spectra = run_draws(n, d_qk, beta, models, root_seed(rng).spawn(draws), executor,
                        progress=False, options=options)
    return {m.name: np.concatenate([draw[m.name] for draw in spectra]) for m in models}


def _cached(cache, law, method, x):
    """``law.method(x)``, computed once per law object (models share their law)."""
    key = (id(law), method)
    if key not in cache:
        cache[key] = getattr(law, method)(x)
    return cache[key]


#: Histogram panels per row of figure 1; the quantile panel spans the rows.
CHAIN_COLUMNS = 3


@gallery_figure(1, "chain", "Squared singular values of the six models of the proof chain against the predicted law",
                defaults={"n": CHAIN_N, "draws": CHAIN_DRAWS, "seed": GALLERY_SEED}, size_argument="n")
def figure_chain(beta=1.0, n=1000, gamma=1.0, draws=10, *, models=None, rng=None,
                 executor=None, samples=None):
    """Figure 1: the spectrum of every model (the proof chain by default) against its law.

    One histogram per model (pooled squared singular values of ``draws``
    matrices of size ``n``), with the predicted density of the model's law
    (for the chain ``attention_law(beta, d_qk / n).squared()``, at the
    sampled width ratio, ``d_qk = round(gamma * n)``, as in
    ``freeattn.validate``) over it and the Marchenko-Pastur density it is
    contrasted with dashed; a last panel plots the empirical quantiles of each
    model against its predicted ones (on the diagonal if the theory is right)
    and the first model's against Marchenko-Pastur's.  The histograms fill
    rows of three, as many rows as the models need.

    Parameters
    ----------
    beta, n, gamma, draws, models, rng, executor
        As in :func:`chain_samples`.
    samples : dict, optional
        Precomputed output of :func:`chain_samples` (then nothing is sampled).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_chain(1.0, n=20, draws=1, rng=0)
    >>> [ax.get_title() for ax in fig.axes][::3]
    ['1. attention', '4. sigma_f', 'quantiles']
    """
    from .montecarlo._models import resolve_models

    fa = _library()
    if samples is None:
        samples = chain_samples(beta, n, gamma, draws, models=models, rng=rng,
                                executor=executor)
    names = list(samples)
    registered = {m.name: m for m in resolve_models(names)}
    # the laws at the sampled width ratio d_qk/n, as freeattn.validate compares
    d_qk = key_width(gamma, n)
    laws = {name: (registered[name].limit_law(beta, d_qk / n),
                   registered[name].reference_law(beta, d_qk / n)) for name in names}
    edges = [law.support()[1] for pair in laws.values() for law in pair if law is not None]
    if edges:
        x_max = 1.25 * max(edges)
    else:
        x_max = 1.05 * float(np.quantile(np.concatenate(list(samples.values())), 0.995))
    x = np.linspace(0.0, x_max, CURVE_POINTS)[1:]
    cache = {}
    curves = [_cached(cache, law, "pdf", x) for pair in laws.values() for law in pair
              if law is not None]
    theory_edges = [pair[0].support()[1] for pair in laws.values() if pair[0] is not None]
    y_max = (_density_ylim(x, *curves, edge=max(theory_edges or edges)) if curves
             else None)

    columns = min(CHAIN_COLUMNS, max(len(names), 1))
    rows = max(-(-len(names) // CHAIN_COLUMNS), 1)
    fig = _figure((3.2 * (columns + 1.25), 3.6 * max(rows, 1.5)))
    grid = fig.add_gridspec(rows, columns + 1, width_ratios=(1,) * columns + (1.25,))
    for i, model in enumerate(names):
        ax = fig.add_subplot(grid[i // columns, i % columns])
        values = samples[model]
        law, reference = laws[model]
        ax.hist(values, bins=HISTOGRAM_BINS, range=(0.0, x_max), density=True,
                color=_MODEL_COLOURS[i % len(_MODEL_COLOURS)], alpha=0.55,
                label=f"{model} (MC)")
        if law is not None:
            ax.plot(x, _cached(cache, law, "pdf", x), label="predicted law", **_THEORY_STYLE)
            ax.axvline(law.support()[1], color="black", linewidth=0.8, linestyle=":")
        if reference is not None:
            ax.plot(x, _cached(cache, reference, "pdf", x), label="Marchenko-Pastur",
                    **_MP_STYLE)
        if y_max is not None:
            ax.set_ylim(0.0, y_max)
        ax.set_xlim(0.0, x_max)
        outside = int(np.count_nonzero(values > x_max))
        if outside:
            # Outliers beyond the bulk are not hidden silently: say how many.
            ax.text(0.97, 0.55, f"{outside} value{'s' if outside > 1 else ''} > {x_max:.3g}\n"
                    f"(max {values.max():.3g})", transform=ax.transAxes, ha="right",
                    fontsize=8)
        ax.set_title(f"{i + 1}. {model}", fontsize=11)
        ax.set_xlabel(r"squared singular value $\lambda$")
        ax.set_ylabel("density")
        if i == 0:
            ax.legend(fontsize=8, loc="upper right")

    ax = fig.add_subplot(grid[:, columns])
    top = 0.0
    for i, model in enumerate(names):
        law = laws[model][0]
        if law is None:
            continue
        predicted = _cached(cache, law, "ppf", QUANTILE_LEVELS)
        top = max(top, float(predicted[-1]) * 1.05)
        ax.plot(predicted, np.quantile(samples[model], QUANTILE_LEVELS),
                color=_MODEL_COLOURS[i % len(_MODEL_COLOURS)], linewidth=1.4, label=model)
    contrasted = [m for m in names if laws[m][1] is not None]
    if contrasted:
        first = contrasted[0]
        ax.plot(_cached(cache, laws[first][1], "ppf", QUANTILE_LEVELS),
                np.quantile(samples[first], QUANTILE_LEVELS),
                color="tab:gray", linestyle="--", linewidth=1.4,
                label=f"{first} vs Marchenko-Pastur")
    if top > 0:
        ax.plot([0, top], [0, top], color="black", linewidth=0.8, label="y = x")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
    ax.set_xlabel("predicted quantile")
    ax.set_ylabel("empirical quantile")
    ax.set_title("quantiles", fontsize=11)
    ax.legend(fontsize=8, loc="upper left")
    total = sum(len(v) for v in samples.values()) // max(len(samples), 1)
    what = ("along the proof chain" if set(names) <= set(fa.CHAIN_MODELS)
            else f"of {len(names)} models")
    fig.suptitle(
        rf"Squared singular values {what}, $\beta$ = {beta:g}, "
        rf"n = {n}, $d_{{qk}}$ = {d_qk}, {draws} draws "
        f"({total} values per model)", fontsize=12)
    return fig


# ---------------------------------------------------------------------------
# Figure 2


@gallery_figure(2, "law-vs-mp", "The predicted law against Marchenko-Pastur of the same variance")
def figure_law_vs_mp(betas=(0.5, 1.0, 1.5, 2.0), gamma=1.0, *, points=CURVE_POINTS):
    """Figure 2: the predicted law against Marchenko-Pastur of the same variance.

    For each ``beta`` a panel with the density of the squared singular values
    (``attention_law(beta, gamma).squared()``) and of
    ``marchenko_pastur(theta1, 1)``, the two upper edges marked: the true
    edge lies beyond ``4*theta1``.

    Parameters
    ----------
    betas : sequence of float
        Inverse temperatures, one panel each.
    gamma : float
        Width ratio ``d_qk / n``.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_law_vs_mp(betas=(1.0,), points=50)
    >>> [line.get_label() for line in fig.axes[0].get_lines()][0]
    'predicted law'
    >>> fig.axes[0].get_ylabel()
    'density'
    """
    fa = _library()
    betas = list(betas)
    columns = min(len(betas), 2) or 1
    rows = -(-len(betas) // columns)
    fig = _figure((5.2 * columns, 3.6 * rows))
    for i, beta in enumerate(betas):
        ax = fig.add_subplot(rows, columns, i + 1)
        law = fa.attention_law(beta, gamma).squared()
        norm = fa.operator_norm(beta, gamma)
        mp = _mp_same_variance(beta)
        x_max = 1.12 * max(norm.squared_edge, norm.mp_squared_edge)
        x = np.linspace(0.0, x_max, points)[1:]
        pdf, mp_pdf = law.pdf(x), mp.pdf(x)
        ax.plot(x, pdf, label="predicted law", **_THEORY_STYLE)
        ax.plot(x, mp_pdf, label=r"Marchenko-Pastur, variance $\theta_1$", **_MP_STYLE)
        ax.axvline(norm.squared_edge, color="black", linewidth=1.0, linestyle=":",
                   label=f"edge {norm.squared_edge:.3g}")
        ax.axvline(norm.mp_squared_edge, color="tab:gray", linewidth=1.0, linestyle="-.",
                   label=rf"$4\theta_1$ = {norm.mp_squared_edge:.3g}")
        ax.set_xlim(0.0, x_max)
        ax.set_ylim(0.0, _density_ylim(x, pdf, mp_pdf, edge=norm.squared_edge))
        ax.set_title(rf"$\beta$ = {beta:g}  (edge / $4\theta_1$ = "
                     rf"{norm.squared_edge / norm.mp_squared_edge:.3f})", fontsize=11)
        ax.set_xlabel(r"squared singular value $\lambda$")
        ax.set_ylabel("density")
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(rf"Limiting law of $\lambda = s^2$, $s$ singular values of "
                 rf"$\sqrt{{n}}\,A_\perp$ ($\gamma$ = {gamma:g}), vs Marchenko-Pastur",
                 fontsize=12)
    return fig


# ---------------------------------------------------------------------------
# Figure 3


def _power_of_ten(n):
    """``n`` as mathtext: ``$10^{4}$`` for powers of ten, else the integer."""
    exponent = int(round(np.log10(n)))
    return rf"$10^{{{exponent}}}$" if 10 ** exponent == n else f"{n}"


@gallery_figure(3, "edge", "Operator norm against beta; common mode sqrt(n) and the linearization threshold")
def figure_edge(betas=None, ns=(10**3, 10**4, 10**5, 10**6), gamma=1.0):
    """Figure 3: the operator norm against ``beta`` and the linearization threshold.

    The upper edge of the singular-value law (``operator_norm(beta).norm``),
    the Marchenko-Pastur edge ``2*sqrt(theta1)``, and for each ``n`` the
    common mode ``sqrt(n)`` with the threshold ``linearization_threshold(n)``
    where the bulk edge reaches it.

    Parameters
    ----------
    betas : array_like, optional
        Grid of inverse temperatures (default 120 points on [0.05, 4]).
    ns : sequence of int
        Context lengths whose common mode is drawn.
    gamma : float
        Width ratio ``d_qk / n``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_edge(betas=[0.5, 1.0, 2.0, 3.0], ns=(1000,))
    >>> fig.axes[0].get_yscale()
    'log'
    """
    fa = _library()
    betas = np.linspace(0.05, 4.0, 120) if betas is None else np.asarray(betas, float)
    results = [fa.operator_norm(float(b), gamma) for b in betas]
    norms = np.array([r.norm for r in results])
    mp_norms = np.array([r.mp_norm for r in results])
    fig = _figure((7.5, 5.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.semilogy(betas, norms, label=r"bulk edge (operator norm of $\sqrt{n}A_\perp$)",
                **_THEORY_STYLE)
    ax.semilogy(betas, mp_norms, label=r"Marchenko-Pastur edge $2\sqrt{\theta_1}$",
                **_MP_STYLE)
    for i, n in enumerate(ns):
        colour = _MODEL_COLOURS[i % len(_MODEL_COLOURS)]
        threshold = fa.linearization_threshold(n, gamma)
        ax.axhline(np.sqrt(n), color=colour, linewidth=1.0, linestyle="-.")
        ax.plot([threshold.beta], [threshold.norm], "o", color=colour, markersize=7,
                label=rf"n = {_power_of_ten(n)}: $\sqrt{{n}}$ reached at "
                      rf"$\beta$ = {threshold.beta:.2f}")
        ax.axvline(threshold.beta, color=colour, linewidth=0.6, linestyle=":")
    ax.set_xlim(float(betas[0]), float(betas[-1]))
    ax.set_xlabel(r"inverse temperature $\beta$")
    ax.set_ylabel(r"singular value of $\sqrt{n}\,A$ (log scale)")
    ax.set_title(rf"Bulk edge vs common mode $\sqrt{{n}}$ ($\gamma$ = {gamma:g})",
                 fontsize=12)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="major", alpha=0.3)
    return fig


# ---------------------------------------------------------------------------
# Figure 4


@gallery_figure(4, "convergence", "Finite-size convergence of the Kolmogorov distance",
                defaults={"n": CONVERGENCE_N, "draws": CONVERGENCE_DRAWS,
                          "seed": GALLERY_SEED}, size_argument="ns")
def figure_convergence(betas=(0.5, 1.0, 1.5), ns=(250, 500, 1000, 2000), draws=4, gamma=1.0,
                       *, models=("attention", "linear"), rng=None, executor=None,
                       reports=None):
    """Figure 4: finite-size convergence to the limiting law.

    Kolmogorov distance between the pooled empirical squared singular values
    and the limiting CDF, against ``n``, for each ``beta`` (from
    ``freeattn.convergence``), with the distance to Marchenko-Pastur for
    contrast.

    Parameters
    ----------
    betas : sequence of float
        Inverse temperatures, one colour each.
    ns : sequence of int
        Matrix sizes.
    draws : int
        Draws per size and model.
    gamma : float
        Width ratio ``d_qk / n``.
    models : sequence of str
        Chain models shown (solid: first, dashed: second, ...).
    rng : None, int or numpy.random.Generator
        Seed; each beta gets an independent child stream.
    executor : None, int or concurrent.futures.Executor, optional
        Runs the draws in parallel (as in ``freeattn.validate``: an int is a
        local process pool with that many workers).
    reports : dict, optional
        Precomputed ``{beta: freeattn.convergence(...) report}``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_convergence(betas=(1.0,), ns=(20, 40), draws=1, models=("linear",), rng=0)
    >>> len(fig.axes[0].get_lines())         # the law and Marchenko-Pastur
    2
    """
    fa = _library()
    if reports is None:
        streams = np.random.default_rng(rng).spawn(len(betas))
        reports = {beta: fa.convergence(beta, gamma, ns=tuple(ns), draws=draws,
                                        models=tuple(models), rng=stream,
                                        executor=executor)
                   for beta, stream in zip(betas, streams)}
    fig = _figure((10.5, 5.2))
    ax = fig.add_subplot(1, 1, 1)
    styles = ("-", "--", "-.", ":")
    all_sizes = set()
    for i, (beta, report) in enumerate(reports.items()):
        colour = _MODEL_COLOURS[i % len(_MODEL_COLOURS)]
        for j, model in enumerate(models):
            sizes, ks, ks_mp = _convergence_series(report, model)
            all_sizes.update(int(n) for n in sizes)
            slope = report.fits[model]["ks"].slope
            ax.loglog(sizes, ks, styles[j % len(styles)], marker="o", color=colour,
                      label=rf"$\beta$ = {beta:g}, {model} (slope {slope:.2f})")
            if j == 0:
                ax.loglog(sizes, ks_mp, ":", marker="x", color=colour, alpha=0.6,
                          label=rf"$\beta$ = {beta:g}, {model} vs Marchenko-Pastur")
    ticks = sorted(all_sizes)
    ax.set_xticks(ticks, [str(n) for n in ticks])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("matrix size n (tokens)")
    ax.set_ylabel("Kolmogorov distance to the limiting law")
    ax.set_title(rf"Finite-size convergence ($\gamma$ = {gamma:g}, {draws} draws per point; "
                 "slope: fitted rate n**slope)", fontsize=12)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    return fig


def _convergence_series(report, model):
    """Sizes, KS distances to the law and to Marchenko-Pastur for one model."""
    sizes, ks, ks_mp = [], [], []
    for n, validation in zip(report.ns, report.reports):
        result = validation.results[model]
        sizes.append(n)
        ks.append(result.ks)
        ks_mp.append(result.ks_mp)
    return np.array(sizes), np.array(ks), np.array(ks_mp)


# ---------------------------------------------------------------------------
# Figure 5


@gallery_figure(5, "gamma", "The law across gamma = d_qk/n at beta = 1")
def figure_gamma(beta=1.0, gammas=(0.25, 0.5, 1.0, 2.0, 4.0), *, points=CURVE_POINTS):
    """Figure 5: the law of the squared singular values across ``gamma = d_qk/n``.

    Density (left) and CDF (right) of ``attention_law(beta, gamma).squared()``
    for each ``gamma``, with the Marchenko-Pastur law of the same variance
    (which does not depend on ``gamma``) for reference.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    gammas : sequence of float
        Width ratios, one curve each.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_gamma(1.0, gammas=(0.5, 2.0), points=40)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['density', 'CDF']
    """
    fa = _library()
    mp = _mp_same_variance(beta)
    laws = [fa.attention_law(beta, g).squared() for g in gammas]
    x_max = 1.08 * max([law.support()[1] for law in laws] + [mp.support()[1]])
    x = np.linspace(0.0, x_max, points)[1:]
    fig = _figure((11.5, 4.6))
    ax_pdf = fig.add_subplot(1, 2, 1)
    ax_cdf = fig.add_subplot(1, 2, 2)
    peaks = []
    for i, (g, law) in enumerate(zip(gammas, laws)):
        colour = _MODEL_COLOURS[i % len(_MODEL_COLOURS)]
        pdf = law.pdf(x)
        peaks.append(_density_ylim(x, pdf, edge=law.support()[1]))
        label = rf"$\gamma$ = {g:g}" + (f" (atom {law.atom:.2f} at 0)" if law.atom > 0 else "")
        ax_pdf.plot(x, pdf, color=colour, linewidth=1.8, label=label)
        ax_cdf.plot(x, law.cdf(x), color=colour, linewidth=1.8, label=label)
    ax_pdf.plot(x, mp.pdf(x), label="Marchenko-Pastur", **_MP_STYLE)
    ax_cdf.plot(x, mp.cdf(x), label="Marchenko-Pastur", **_MP_STYLE)
    ax_pdf.set_ylim(0.0, max(peaks))
    ax_cdf.set_ylim(0.0, 1.02)
    for ax, what in ((ax_pdf, "density"), (ax_cdf, "CDF")):
        ax.set_xlim(0.0, x_max)
        ax.set_xlabel(r"squared singular value $\lambda$")
        ax.set_ylabel(what)
        ax.legend(fontsize=8, loc="upper right" if what == "density" else "lower right")
    fig.suptitle(rf"Law of $\lambda = s^2$ across $\gamma = d_{{qk}}/n$ at $\beta$ = {beta:g}",
                 fontsize=12)
    return fig


@gallery_figure(6, "causal", "Causal attention against the causal, non-causal and Marchenko-Pastur laws",
                defaults={"n": CAUSAL_N, "draws": CAUSAL_DRAWS, "seed": GALLERY_SEED}, size_argument="n")
def figure_causal(beta=1.0, n=1000, gamma=1.0, draws=4, *, rng=None, executor=None,
                  samples=None, points=CURVE_POINTS):
    """Figure 6: causal attention against the causal, non-causal and MP laws.

    Left: histograms of the pooled squared singular values of the causal
    softmax ``C = diag(1..n)(A - M)/sqrt(n)`` (model ``causal``, theory
    eq. (10.1)) and of the masked linear model ``Y_c`` (``causal_linear``,
    eq. (10.3)), with the density of ``causal_law(beta, gamma)`` (black), the
    non-causal law ``attention_law(beta, gamma).squared()`` and
    Marchenko-Pastur with the causal law's mean ``theta1/2`` (dashed).  Right:
    the empirical CDFs against the causal law's CDF on a logarithmic ``x``
    axis down to ``1e-14 theta1``: the logarithmic end of eq. (10.18) (about
    15% of the mass below ``1e-3 theta1``) and the float64 resolution floor
    of eq. (7.15) (dotted), below which values are counted, not placed.

    Parameters
    ----------
    beta, n, gamma, draws, rng, executor
        As in :func:`chain_samples`.
    samples : dict, optional
        Precomputed ``chain_samples(..., models=("causal", "causal_linear"))``.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_causal(1.0, n=30, draws=1, rng=0, points=40)
    >>> [ax.get_xscale() for ax in fig.axes]
    ['linear', 'log']
    """
    from .montecarlo._statistics import resolution_floor

    fa = _library()
    names = ("causal", "causal_linear")
    if samples is None:
        samples = chain_samples(beta, n, gamma, draws, models=names, rng=rng, executor=executor)
    d_qk = key_width(gamma, n)
    law = fa.causal_law(beta, d_qk / n)
    noncausal = fa.attention_law(beta, d_qk / n).squared()
    mp = fa.marchenko_pastur(float(law.mean()), 1.0)
    edge = law.support()[1]
    x_max = 1.08 * max(edge, mp.support()[1])
    x = np.linspace(0.0, x_max, points)[1:]
    fig = _figure((12.0, 4.8))
    ax = fig.add_subplot(1, 2, 1)
    ax_cdf = fig.add_subplot(1, 2, 2)
    bins = np.linspace(0.0, x_max, HISTOGRAM_BINS + 1)
    labels = {"causal": "causal softmax C", "causal_linear": r"masked linear $Y_c$"}
    colours = {"causal": _MODEL_COLOURS[0], "causal_linear": _MODEL_COLOURS[1]}
    for name in names:
        ax.hist(samples[name], bins=bins, density=True, histtype="step", linewidth=1.4,
                color=colours[name], label=labels[name])
    pdf = law.pdf(x)
    ax.plot(x, pdf, label="causal law", **_THEORY_STYLE)
    ax.plot(x, noncausal.pdf(x), color="tab:green", linewidth=1.4, linestyle="-.",
            label="non-causal law")
    ax.plot(x, mp.pdf(x), label=r"Marchenko-Pastur, mean $\theta_1/2$", **_MP_STYLE)
    ax.axvline(edge, color="black", linestyle=":", linewidth=1.0)
    ax.set_ylim(0.0, _density_ylim(x, pdf, edge=edge))
    ax.set_xlim(0.0, x_max)
    ax.set_xlabel(r"squared singular value $\lambda$")
    ax.set_ylabel("density")
    ax.legend(fontsize=8, loc="upper right")
    theta1 = float(np.expm1(beta * beta))
    xs = np.geomspace(1e-14 * theta1, edge, points)
    ax_cdf.plot(xs, law.cdf(xs), label="causal law", **_THEORY_STYLE)
    for name in names:
        v = np.sort(samples[name])
        ax_cdf.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=colours[name],
                    linewidth=1.2, label=labels[name])
    floor = resolution_floor(n, max(float(np.max(samples[nm])) for nm in names))
    ax_cdf.axvline(floor, color="tab:gray", linestyle=":", linewidth=1.2,
                   label="float64 floor, eq. (7.15)")
    ax_cdf.set_xscale("log")
    ax_cdf.set_xlim(xs[0], 1.1 * edge)
    ax_cdf.set_ylim(0.0, 1.02)
    ax_cdf.set_xlabel(r"squared singular value $\lambda$ (log scale)")
    ax_cdf.set_ylabel("CDF")
    ax_cdf.legend(fontsize=8, loc="upper left")
    fig.suptitle(rf"Causal attention, $\beta$ = {beta:g}, $\gamma$ = {d_qk / n:g}, "
                 rf"n = {n}, {draws} draws", fontsize=12)
    return fig


# ---------------------------------------------------------------------------
# Figure 7


def _pooled_ks(law, values):
    """KS distance of pooled values (zeros counted as the law's atom, theory eq. (7.9))."""
    from .montecarlo._validation import _ks

    return _ks(law, np.sort(values))


@gallery_figure(7, "multihead", "Multi-head attention (MHA, GQA, MQA) against its law and Marchenko-Pastur; the head-averaged map with independent and shared keys",
                defaults={"n": MULTIHEAD_N, "draws": MULTIHEAD_DRAWS, "seed": GALLERY_SEED}, size_argument="n")
def figure_multihead(beta=1.0, n=600, draws=4, *, heads=4, gamma_k=0.5, gamma_v=0.5,
                     gamma_o=1.0, rng=None, executor=None, points=CURVE_POINTS):
    """Figure 7: multi-head attention (MHA, GQA, MQA) and the head-averaged map.

    Three panels: histograms of the non-zero eigenvalues of
    ``MHA_perp MHA_perp^T`` (softmax heads, theory eq. (9.1)) for
    ``kv_groups = heads`` (MHA), ``heads/2`` (GQA) and 1 (MQA), with the
    density of :func:`freeattn.multihead_law` (the same for the three,
    eq. (9.18)) and of the Marchenko-Pastur law of the same mean and rank;
    the atom at 0 (``1 - min(1, gamma_v, gamma_o)``, eq. (9.14)) is left out
    of the histogram and of the curves alike.  A fourth panel: the squared
    singular values of the head-averaged softmax map with independent and
    with one shared key, against the two laws of
    :func:`freeattn.head_average_law` (eq. (9.19)).  Kolmogorov distances
    (atom included) are in the legends.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    n : int
        Tokens; ``n gamma_k/heads``, ``n gamma_v/heads`` and ``n gamma_o``
        must be integers (the per-head key and value widths, the output width).
    draws : int
        Independent draws per model.
    heads : int
        Number of heads (even, for the GQA panel with ``heads/2`` groups).
    gamma_k, gamma_v, gamma_o : float
        ``heads d_k/n``, ``heads d_v/n`` and ``d_o/n``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Root seed; each panel's model gets an independent child.
    executor : None, int or concurrent.futures.Executor, optional
        Runs the draws in parallel, as in ``freeattn.validate``.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_multihead(n=64, draws=1, rng=0, points=40)
    >>> [ax.get_title().split(":")[0] for ax in fig.axes]
    ['MHA (kv_groups = 4)', 'GQA (kv_groups = 2)', 'MQA (kv_groups = 1)', 'head-averaged map']
    """
    from .attention._multihead import mean_and_rank_matched_mp

    fa = _library()
    law = fa.multihead_law(beta, heads=heads, gamma_k=gamma_k, gamma_v=gamma_v,
                           gamma_o=gamma_o)
    mp = mean_and_rank_matched_mp(beta, gamma_v, gamma_o)
    groups = {"MHA": heads, "GQA": max(heads // 2, 1), "MQA": 1}
    streams = np.random.default_rng(rng).spawn(len(groups) + 2)
    x = np.linspace(0.0, 1.08 * law.support()[1], points)[1:]
    fig = _figure((11.5, 8.4))
    peaks = [_density_ylim(x, law.pdf(x), mp.pdf(x), edge=law.support()[1])]
    panels = []
    for i, ((name, g), stream) in enumerate(zip(groups.items(), streams)):
        values = chain_samples(beta, n, gamma_k, draws, models=("multihead",), rng=stream,
                               executor=executor,
                               options={"heads": heads, "kv_groups": g, "gamma_v": gamma_v,
                                        "gamma_o": gamma_o})["multihead"]
        ax = fig.add_subplot(2, 2, i + 1)
        panels.append(ax)
        nonzero = values[values > 0]
        # Normalized by all N values: the bars integrate to the non-zero fraction,
        # like the density of the law's continuous part.
        counts, edges = np.histogram(nonzero, bins=HISTOGRAM_BINS, range=(0.0, x[-1]))
        ax.stairs(counts / (values.size * np.diff(edges)), edges, fill=True,
                  color=_MODEL_COLOURS[i], alpha=0.45,
                  label=f"softmax, {draws} draws (n = {n})")
        ax.plot(x, law.pdf(x), label=f"predicted law (KS {_pooled_ks(law, values):.4f})",
                **_THEORY_STYLE)
        ax.plot(x, mp.pdf(x), label=f"Marchenko-Pastur, same mean and rank "
                                    f"(KS {_pooled_ks(mp, values):.3f})", **_MP_STYLE)
        ax.set_title(f"{name} (kv_groups = {g}): atom {law.atom:g} at 0 not drawn",
                     fontsize=10)
    ax = fig.add_subplot(2, 2, 4)
    laws = {g: fa.head_average_law(beta, heads=heads, gamma_k=gamma_k, kv_groups=g)
            for g in (heads, 1)}
    x_avg = np.linspace(0.0, 1.05 * max(l.support()[1] for l in laws.values()), points)[1:]
    for j, (g, stream) in enumerate(zip((heads, 1), streams[len(groups):])):
        values = chain_samples(beta, n, gamma_k, draws, models=("head_average",), rng=stream,
                               executor=executor,
                               options={"heads": heads, "kv_groups": g})["head_average"]
        own, other = laws[g], laws[heads + 1 - g]
        label = "independent keys" if g == heads else "one shared key"
        ax.hist(values, bins=HISTOGRAM_BINS, range=(0.0, x_avg[-1]), density=True,
                color=_MODEL_COLOURS[4 + j], alpha=0.4,
                label=f"{label}: KS {_pooled_ks(own, values):.3f} to its law, "
                      f"{_pooled_ks(other, values):.3f} to the other")
        ax.plot(x_avg, own.pdf(x_avg), color=_MODEL_COLOURS[4 + j], linewidth=2.0,
                label=rf"law at $\gamma_{{eff}}$ = {own.gamma:g}")
    ax.set_ylim(0.0, _density_ylim(x_avg, *(l.pdf(x_avg) for l in laws.values()),
                                   edge=max(l.support()[1] for l in laws.values())))
    ax.set_title("head-averaged map: sqrt(n h)(mean A_r - 11^T/n), softmax", fontsize=10)
    ax.set_xlabel(r"squared singular value $\lambda$")
    ax.set_ylabel("density")
    ax.legend(fontsize=7, loc="upper right")
    for ax in panels:
        ax.set_xlim(0.0, x[-1])
        ax.set_ylim(0.0, max(peaks))
        ax.set_xlabel(r"eigenvalue $\lambda$ of MHA$_\perp$ MHA$_\perp^T$")
        ax.set_ylabel("density (continuous part)")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(rf"Multi-head attention: $\beta$ = {beta:g}, h = {heads}, "
                 rf"$\gamma_K$ = {gamma_k:g}, $\gamma_V$ = {gamma_v:g}, "
                 rf"$\gamma_O$ = {gamma_o:g}", fontsize=12)
    return fig


# ---------------------------------------------------------------------------
# registry, saving


def _finite_width_cell(task):
    """The three distances of :func:`figure_finite_width` at one ``(beta, d)`` (picklable)."""
    from scipy.stats import ks_2samp, kstest

    fa = _library()
    n, d, beta, draws, seeds = task
    seeds = iter(seeds)

    def attention():
        return np.concatenate([fa.squared_singular_values(
            np.sqrt(n) * (fa.sample_attention(n, d, beta, rng=next(seeds)) - 1.0 / n))
            for _ in range(draws)])

    att = attention()
    paper = kstest(att, fa.attention_law(beta, d / n).squared().cdf).statistic
    law = fa.finite_width_law(beta, n=n, d=d, draws=draws, rng=next(seeds))
    return paper, ks_2samp(att, law.values).statistic, ks_2samp(att, attention()).statistic


@gallery_figure(8, "finite-width", "Kolmogorov distance to softmax attention against the head width d: the paper's law and the harmonic Gaussian equivalent",
                defaults={"n": FINITE_WIDTH_N, "draws": FINITE_WIDTH_DRAWS, "seed": GALLERY_SEED},
                size_argument="n")
def figure_finite_width(betas=(0.5, 1.0), n=512, widths=(16, 32, 64, 128), draws=2, *,
                        rng=None, executor=None):
    """Kolmogorov distance to softmax attention against the head width ``d`` at fixed ``n``.

    For each ``beta`` and ``d``: the one-sample KS of the pooled squared
    singular values of ``sqrt(n)(A - 11^T/n)`` (``draws`` draws) to the
    paper's law ``attention_law(beta, d/n).squared()``, the two-sample KS to
    :func:`freeattn.finite_width_law` (the harmonic equivalent with the signed
    remainder, theory eq. (15.8)), and the two-sample KS between two
    independent sets of attention draws (the Monte Carlo noise floor).

    Parameters
    ----------
    betas : sequence of float
        Inverse temperatures, one colour each.
    n : int
        Tokens.
    widths : sequence of int
        Head widths ``d`` (``>= 3``).
    draws : int
        Draws pooled per estimate.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Seed of all draws.
    executor : concurrent.futures.Executor, optional
        Runs the ``(beta, d)`` points (its ``map``); by default one after the
        other in this process.  The result does not depend on it.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_finite_width(betas=(0.5,), n=48, widths=(8, 16), draws=1, rng=0)
    >>> fig.axes[0].get_xlabel()
    'head width d'
    """
    seeds = iter(np.random.default_rng(rng).spawn(len(betas) * len(widths) * (2 * draws + 1)))
    tasks = [(n, d, beta, draws, [next(seeds) for _ in range(2 * draws + 1)])
             for beta in betas for d in widths]
    cells = list((executor.map if executor is not None else map)(_finite_width_cell, tasks))

    fig = _figure((6.4, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    for i, beta in enumerate(betas):
        colour = _MODEL_COLOURS[i % len(_MODEL_COLOURS)]
        rows = cells[i * len(widths):(i + 1) * len(widths)]
        paper, harmonic, floor = ([row[k] for row in rows] for k in range(3))
        ax.plot(widths, paper, "o--", color=colour, label=rf"paper's law, $\beta$ = {beta:g}")
        ax.plot(widths, harmonic, "s-", color=colour,
                label=rf"harmonic equivalent (15.8), $\beta$ = {beta:g}")
        ax.plot(widths, floor, ":", color=colour, alpha=0.7,
                label=rf"attention vs attention, $\beta$ = {beta:g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("head width d")
    ax.set_ylabel("Kolmogorov distance to softmax attention")
    ax.set_title(f"Finite head width, n = {n}, {draws} draws")
    ax.legend(fontsize=7)
    return fig


def _pooled_cell(task):
    """Pooled bulk spectra of registry models at one setting (picklable).

    ``task`` is ``(n, beta, names, seeds, options)``: every model of ``names``
    is sampled once per seed (``n`` tokens, head width ``n``) with the model
    ``options``, and its structural zeros are dropped.
    """
    from .montecarlo._models import iter_models, resolve_models

    n, beta, names, seeds, options = task
    out = {name: [] for name in names}
    models = resolve_models(list(names))
    for seed in seeds:
        for model, matrix in iter_models(n, n, beta, models, seed, options=options):
            out[model.name].append(model.spectrum(matrix)[model.zeros:])
    return {k: np.concatenate(v) for k, v in out.items()}


@gallery_figure(9, "stacks", "A stack of attention layers: the law of the product against independent and residual + LayerNorm layers, and the Marchenko-Pastur product",
                defaults={"n": STACK_N, "draws": STACK_DRAWS, "seed": GALLERY_SEED},
                size_argument="n")
def figure_stacks(beta=0.5, n=300, depths=(1, 2, 3, 4), draws=2, *, models=("stack_linear",
                  "stack_residual", "stack_pure"), rng=None, executor=None, points=CURVE_POINTS):
    """The squared singular values of a stack of attention layers against its law, per depth.

    One panel per depth ``L``: histograms of the pooled spectra of the stack
    models (independent linear layers, coupled residual + LayerNorm layers,
    pure attention without residual: the documented counterexample, theory
    note 13), the density of ``attention_stack_law(beta, 1, layers=L)``
    (theory eq. (13.2), solved by eqs. (14.8), (14.21)) and, dashed, the
    ``⊠``-product of Marchenko-Pastur laws of the same mean; the legend gives
    each model's Kolmogorov distance to the law.

    Parameters
    ----------
    beta : float
        Inverse temperature of every layer.
    n : int
        Tokens (and head width: ``gamma = 1``).
    depths : sequence of int
        Depths ``L``, one panel each.
    draws : int
        Draws pooled per model and depth.
    models : sequence of str
        Stack models of the registry.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Seed of all draws.
    executor : concurrent.futures.Executor, optional
        Runs the depths (its ``map``); by default one after the other in this
        process.  The result does not depend on it.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = figure_stacks(n=24, depths=(1,), draws=1, rng=0, points=40)
    >>> fig.axes[0].get_title()
    'L = 1'
    """
    from scipy.stats import kstest

    fa = _library()
    from .attention._stack_law import attention_stack_law

    depths = list(depths)
    seeds = iter(np.random.default_rng(rng).spawn(len(depths) * draws))
    tasks = [(n, beta, tuple(models), [next(seeds) for _ in range(draws)], {"layers": L})
             for L in depths]
    pooled = list((executor.map if executor is not None else map)(_pooled_cell, tasks))
    theta1 = float(fa.linear_coefficients(beta).theta1)
    fig = _figure((5.2 * len(depths), 3.8))
    for i, (L, spectra) in enumerate(zip(depths, pooled)):
        ax = fig.add_subplot(1, len(depths), i + 1)
        law = attention_stack_law(beta, 1.0, layers=L)
        mp = fa.marchenko_pastur(theta1, 1.0)
        product = mp
        for _ in range(L - 1):
            product = fa.free_multiplicative(product, mp)
        edge = law.support()[1]
        bins = np.linspace(0.0, 1.15 * edge, HISTOGRAM_BINS)
        for k, name in enumerate(models):
            values = spectra[name]
            ks = kstest(values, law.cdf).statistic
            ax.hist(values, bins=bins, density=True, histtype="step",
                    color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)], label=f"{name} (KS {ks:.3f})")
        x = np.linspace(EDGE_FRACTION * edge / 10, 1.15 * edge, points)
        dens = law.pdf(x)
        ax.plot(x, dens, "k-", lw=1.4, label="stack law (13.2)")
        ax.plot(x, product.pdf(x), "k--", lw=1.0, label="Marchenko-Pastur product")
        top = float(np.max(dens[x >= EDGE_FRACTION * edge]))
        ax.set_ylim(0.0, 1.6 * top)
        ax.set_title(f"L = {L}")
        ax.set_xlabel("squared singular value of $B_L \\cdots B_1$")
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    fig.suptitle(rf"Attention stack, $\beta$ = {beta:g}, n = {n}, {draws} draws", fontsize=9)
    return fig


#: Titles of the panels of :func:`figure_tokens`, by token-Gram kind.
_TOKEN_TITLES = {"wishart": "Wishart tokens, Gram MP(1, 1/2)",
                 "rotated": "rotated tokens, Gram spectrum {0.5, 1.5}",
                 "diagonal": "diagonal Gram {0.5, 1.5}: unequal norms"}


@gallery_figure(10, "tokens", "Anisotropic tokens: the token-covariance law against softmax attention and its linear model, and the isotropic law it replaces",
                defaults={"n": TOKENS_N, "draws": TOKENS_DRAWS, "seed": GALLERY_SEED},
                size_argument="n")
def figure_tokens(beta=0.5, n=400, kinds=("wishart", "rotated"), draws=2, *, rng=None,
                  executor=None, points=CURVE_POINTS):
    """Squared singular values of attention on anisotropic tokens against the token law.

    One panel per token-Gram kind of the registry's token models (theory
    section 13.4, ``gamma = 1``): histograms of the pooled spectra of
    ``sqrt(n)(A - 11^T/n)`` (``tokens_<kind>``) and of its linear model
    (``tokens_<kind>_linear``), the density of
    ``attention_law(beta, 1, tokens=G).squared()`` for the kind's limiting
    Gram law ``G`` (theory eq. (13.7)) and, dashed, today's isotropic law;
    the legend gives each model's Kolmogorov distance to both laws.  The
    ``"diagonal"`` kind (unequal token norms) is the documented counterexample.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    n : int
        Tokens (and head width: ``gamma = 1``).
    kinds : sequence of {"wishart", "rotated", "diagonal"}
        Token-Gram kinds, one panel each.
    draws : int
        Draws pooled per model.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Seed of all draws.
    executor : concurrent.futures.Executor, optional
        Runs the kinds (its ``map``); by default one after the other in this
        process.  The result does not depend on it.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        On an unknown kind.

    Examples
    --------
    >>> fig = figure_tokens(n=32, kinds=("wishart",), draws=1, rng=0, points=40)
    >>> fig.axes[0].get_title()
    'Wishart tokens, Gram MP(1, 1/2)'
    """
    from scipy.stats import kstest

    fa = _library()
    from .montecarlo._stack_sampling import token_law_for_model

    kinds = list(kinds)
    for kind in kinds:
        if kind not in _TOKEN_TITLES:
            raise ValueError(f"kinds must hold {', '.join(map(repr, _TOKEN_TITLES))}; "
                             f"got {kind!r}")
    seeds = iter(np.random.default_rng(rng).spawn(len(kinds) * draws))
    tasks = [(n, beta, (f"tokens_{kind}", f"tokens_{kind}_linear"),
              [next(seeds) for _ in range(draws)], None) for kind in kinds]
    pooled = list((executor.map if executor is not None else map)(_pooled_cell, tasks))
    iso = fa.attention_law(beta, 1.0).squared()
    fig = _figure((5.2 * len(kinds), 3.8))
    for i, (kind, spectra) in enumerate(zip(kinds, pooled)):
        ax = fig.add_subplot(1, len(kinds), i + 1)
        law = token_law_for_model(kind, beta, 1.0)
        edge = max(law.support()[1], iso.support()[1])
        bins = np.linspace(0.0, 1.15 * edge, HISTOGRAM_BINS)
        for k, name in enumerate(spectra):
            values = spectra[name]
            ks, ks_iso = kstest(values, law.cdf).statistic, kstest(values, iso.cdf).statistic
            ax.hist(values, bins=bins, density=True, histtype="step",
                    color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)],
                    label=f"{name} (KS {ks:.3f}; isotropic {ks_iso:.3f})")
        x = np.linspace(EDGE_FRACTION * edge / 10, 1.15 * edge, points)
        dens = law.pdf(x)
        ax.plot(x, dens, "k-", lw=1.4, label="token law (13.7)")
        ax.plot(x, iso.pdf(x), "k--", lw=1.0, label="isotropic law")
        top = float(np.max(dens[x >= EDGE_FRACTION * edge]))
        ax.set_ylim(0.0, 1.6 * top)
        ax.set_title(_TOKEN_TITLES[kind])
        ax.set_xlabel(r"squared singular value of $\sqrt{n}(A - 11^T/n)$")
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    fig.suptitle(rf"Anisotropic tokens, $\beta$ = {beta:g}, n = d = {n}, {draws} draws",
                 fontsize=9)
    return fig


@gallery_figure(11, "multihead-tokens", "Multi-head attention on anisotropic tokens: the output's spectrum against the multi-head token law (the Dyson system) and the isotropic multi-head law",
                defaults={"n": MULTIHEAD_TOKENS_N, "draws": MULTIHEAD_TOKENS_DRAWS,
                          "seed": GALLERY_SEED},
                size_argument="n")
def figure_multihead_tokens(beta=0.5, n=800, kinds=("rotated", "wishart"), draws=2, *,
                            rng=None, executor=None, points=CURVE_POINTS):
    """Singular values of ``MHA_perp`` on anisotropic tokens against the token law.

    One panel per token-Gram kind of the registry's multi-head token models
    (theory section 9.12; 4 heads, ``gamma_k = gamma_v = 1``, ``gamma_o = 3/4``):
    histograms of the non-zero singular values of softmax multi-head attention
    (``multihead_tokens_<kind>``) and of its Gaussian-equivalent heads
    (``multihead_tokens_<kind>_linear``), the density of
    ``multihead_law(beta, ..., tokens=G)`` (theory eqs. (9.25)-(9.30)) as a law of
    singular values and, dashed,
    the isotropic ``multihead_law``; the legend gives each model's Kolmogorov
    distance to both (continuous parts: the atom at 0 is exact in both).

    Parameters
    ----------
    beta : float
        Inverse temperature.
    n : int
        Tokens; a multiple of 4 (the heads' key width ``n/4``).
    kinds : sequence of {"rotated", "wishart"}
        Token-Gram kinds, one panel each.
    draws : int
        Draws pooled per model.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Seed of all draws.
    executor : concurrent.futures.Executor, optional
        Runs the kinds (its ``map``); by default one after the other in this
        process.  The result does not depend on it.
    points : int
        Points per curve.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        On an unknown kind.

    Examples
    --------
    >>> fig = figure_multihead_tokens(n=64, kinds=("rotated",), draws=1, rng=0, points=40)
    >>> fig.axes[0].get_title()
    'rotated tokens, Gram spectrum {0.5, 1.5}'
    """
    fa = _library()
    from .montecarlo._multihead_models import multihead_model_law
    from .montecarlo._stack_sampling import token_gram_law

    kinds = list(kinds)
    for kind in kinds:
        if kind not in ("rotated", "wishart"):
            raise ValueError(f"kinds must hold 'rotated', 'wishart'; got {kind!r}")
    seeds = iter(np.random.default_rng(rng).spawn(len(kinds) * draws))
    tasks = [(n, beta, (f"multihead_tokens_{kind}", f"multihead_tokens_{kind}_linear"),
              [next(seeds) for _ in range(draws)], None) for kind in kinds]
    pooled = list((executor.map if executor is not None else map)(_pooled_cell, tasks))
    geometry = dict(heads=4, gamma_k=1.0, gamma_v=1.0, gamma_o=0.75)
    iso = multihead_model_law(beta, 1.0, 4, None, 1.0, 0.75)
    fig = _figure((5.2 * len(kinds), 3.8))

    def bulk_ks(values, law):
        v = np.sort(values[values > 0])
        f = (law.cdf(v) - law.atom) / (1.0 - law.atom)
        e = np.arange(1, v.size + 1) / v.size
        return float(np.max(np.maximum(np.abs(f - e), np.abs(f - (e - 1.0 / v.size)))))

    for i, (kind, spectra) in enumerate(zip(kinds, pooled)):
        ax = fig.add_subplot(1, len(kinds), i + 1)
        law = fa.multihead_law(beta, tokens=token_gram_law(kind), **geometry)
        # drawn as singular values s = sqrt(lambda): the eigenvalue density piles up
        # next to its small lower edge
        law_s, iso_s = fa.SingularValueLaw(law), fa.SingularValueLaw(iso)
        edge = np.sqrt(max(law.support()[1], iso.support()[1]))
        bins = np.linspace(0.0, 1.15 * edge, HISTOGRAM_BINS)
        scale = 1.0 - law.atom                   # the histograms show the continuous part
        for k, name in enumerate(spectra):
            values = spectra[name]
            bulk = np.sqrt(values[values > 0])
            weights = np.full(bulk.size, scale / bulk.size / (bins[1] - bins[0]))
            ax.hist(bulk, bins=bins, weights=weights, histtype="step",
                    color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)],
                    label=f"{name} (KS {bulk_ks(values, law):.3f}; "
                          f"isotropic {bulk_ks(values, iso):.3f})")
        x = np.linspace(EDGE_FRACTION * edge / 10, 1.15 * edge, points)
        dens = law_s.pdf(x)
        ax.plot(x, dens, "k-", lw=1.4, label="token law (9.25)-(9.30)")
        ax.plot(x, iso_s.pdf(x), "k--", lw=1.0, label="isotropic law")
        ax.set_ylim(0.0, 1.6 * float(np.max(dens)))
        ax.set_title(_TOKEN_TITLES[kind])
        ax.set_xlabel(r"singular value of $\mathrm{MHA}_\perp$")
        ax.set_ylabel("density (continuous part)")
        ax.legend(fontsize=7)
    fig.suptitle(rf"Multi-head attention on anisotropic tokens, $\beta$ = {beta:g}, n = {n}, "
                 rf"4 heads, $\gamma_K = \gamma_V = 1$, $\gamma_O = 3/4$, {draws} draws",
                 fontsize=9)
    return fig


def _spec(figure):
    key = str(figure).strip().lower()
    if key in FIGURES:
        return FIGURES[key]
    for spec in FIGURES.values():
        if key in (spec.name, spec.name.replace("-", "_")):
            return spec
    known = ", ".join(f"{k} ({v.name})" for k, v in FIGURES.items())
    raise ValueError(f"figure must be one of {known}; got {figure!r}")


def figure_list(style="short"):
    """The gallery's figures as text, read from :data:`FIGURES`.

    Parameters
    ----------
    style : {"short", "markdown"}, optional
        ``"short"``: ``1 (chain), 2 (law-vs-mp), ...`` for the command line's
        help; ``"markdown"``: one bullet per figure with its file and caption.

    Returns
    -------
    str

    Examples
    --------
    >>> figure_list().split(", ")[:2]
    ['1 (chain)', '2 (law-vs-mp)']
    """
    if style == "short":
        return ", ".join(f"{k} ({v.name})" for k, v in FIGURES.items())
    if style == "markdown":
        return "\n".join(f"- `{v.filename}` ({v.name}): {v.caption}" for v in FIGURES.values())
    raise ValueError(f"style must be 'short' or 'markdown', got {style!r}")


def _check_sizes(n=None, draws=None, seed=None, jobs=None):
    """All checks of the Monte Carlo sizes of the gallery figures (``None``: default)."""
    from .core._checks import check_int

    for name, value, minimum in (("n", n, 2), ("draws", draws, 1), ("seed", seed, 0),
                                 ("jobs", jobs, 1)):
        if value is not None:
            check_int(value, name, minimum=minimum)


def make_figure(figure, *, n=None, draws=None, seed=None, jobs=None):
    """Draw one gallery figure with its default (or the given) sizes.

    Parameters
    ----------
    figure : int or str
        Number or name of a figure of :data:`FIGURES` (see :func:`figure_list`).
    n, draws, seed, jobs : int, optional
        Monte Carlo sizes (``n >= 2``, ``draws >= 1``), seed (``>= 0``) and
        worker processes (``jobs >= 1``) for figures 1, 4, 6 and 7 (``n`` is the
        matrix size of figures 1, 6 and 7, a multiple of 8 for figure 7; ignored
        by figures 2, 3, 5, but checked).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError, ValueError
        On an unknown figure or a bad size, naming it.

    Examples
    --------
    >>> make_figure("edge").axes[0].get_yscale()
    'log'
    """
    spec = _spec(figure)
    _check_sizes(n, draws, seed, jobs)
    return spec.draw(n=n, draws=draws, seed=seed, jobs=jobs)


def _supported_formats():
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def output_path(figure, out=None):
    """The file :func:`save_figure` writes for ``figure`` and ``out``, checked before drawing.

    ``None``: the figure's file name (e.g. ``fig2_law_vs_mp.png``) in the working
    directory; an existing folder: that file name inside it; a path without a
    suffix: that path with ``.png`` appended (matplotlib's default format);
    otherwise the path itself, whose suffix must be a format matplotlib
    writes.  The folder must exist (nothing is created).

    Parameters
    ----------
    figure : int or str
        A figure of :data:`FIGURES`, by number or name.
    out : str or os.PathLike, optional
        File or folder, as above.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If the folder does not exist or cannot be written (tried by opening
        the file once: a new file is created and removed, an existing one is
        left unchanged), or the suffix is not a format matplotlib writes.

    Examples
    --------
    >>> output_path(2, "figures_that_do_not_exist/law.png")
    Traceback (most recent call last):
    ...
    ValueError: out: folder figures_that_do_not_exist does not exist (it is not created)
    >>> str(output_path("edge", "edge"))
    'edge.png'
    """
    import os

    spec = _spec(figure)
    if out is None:
        path = pathlib.Path(spec.filename)
    else:
        path = pathlib.Path(out)
        if path.is_dir():
            path = path / spec.filename
        elif not path.suffix:
            path = path.with_name(path.name + ".png")
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f"out: folder {folder} does not exist (it is not created)")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"out: cannot write {path}")
    formats = _supported_formats()
    if path.suffix[1:].lower() not in formats:
        raise ValueError(f"out: {path} has suffix {path.suffix!r}; matplotlib writes "
                         f"{', '.join('.' + f for f in sorted(formats))}")
    _probe_writable(path)
    return path


def _probe_writable(path):
    """Open ``path`` for writing once, without changing it, before anything is drawn.

    ``os.access`` is not enough: it answers for the permission bits (always "yes"
    for root), not for file systems that refuse new files, such as ``/proc``.  An
    existing file is opened for update (not truncated); a new one is created and
    removed again.
    """
    try:
        if path.exists():
            if not path.is_file():
                raise ValueError(f"out: {path} exists and is not a regular file")
            with open(path, "r+b"):
                pass
        else:
            with open(path, "xb"):
                pass
            path.unlink()
    except OSError as error:
        raise ValueError(f"out: cannot write {path} ({error.strerror or error})") from error


def save_figure(figure, out=None, **sizes):
    """Draw one gallery figure and write it to ``out``.

    Parameters
    ----------
    figure : int or str
        Number or name of the figure (see :data:`FIGURES`).
    out : str or path-like, optional
        Output file (see :func:`output_path`): the format follows its suffix,
        ``.png`` is appended to a path without one, an existing folder gets
        the figure's file name; default: the figure's file name, e.g.
        ``fig2_law_vs_mp.png``, in the working directory.  Its folder must
        exist.
    **sizes
        ``n``, ``draws``, ``seed``, ``jobs`` as in :func:`make_figure`.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError, ValueError
        On a bad figure, size or output path -- before anything is drawn.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_figure(3, pathlib.Path(folder) / "edge.pdf")
    ...     path.name, path.stat().st_size > 0
    ('edge.pdf', True)
    """
    spec = _spec(figure)
    unknown = sorted(set(sizes) - {"n", "draws", "seed", "jobs"})
    if unknown:
        raise TypeError(f"save_figure got unexpected size arguments {unknown}")
    _check_sizes(**sizes)
    path = output_path(spec.number, out)
    fig = make_figure(spec.number, **sizes)
    fig.savefig(path, dpi=PNG_DPI)
    return path


def _check_only(only):
    """``only`` of :func:`reproduce` -> the figure specs, in the order asked for."""
    if only is None:
        return list(FIGURES.values())
    if isinstance(only, (str, int)) and not isinstance(only, bool):
        return [_spec(only)]          # one figure, by name or number (not its characters)
    try:
        only = list(only)
    except TypeError:
        raise TypeError(f"only must be None, a figure number or name, or a sequence of "
                        f"them; got {only!r}") from None
    if not only:
        raise ValueError("only must name at least one figure (only=None draws all of them)")
    return [_spec(f) for f in only]


def check_output_folder(out):
    """The folder :func:`reproduce` writes into, checked before anything is drawn.

    Parameters
    ----------
    out : str or os.PathLike
        An existing writable folder, or a path whose parent folder exists and
        is writable (the folder is then created by :func:`reproduce`).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``out`` is a file, or neither it nor its parent is a writable folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.NamedTemporaryFile() as handle:
    ...     check_output_folder(handle.name)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: out: ... is a file, not a folder
    """
    import os

    folder = pathlib.Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"out: {folder} is a file, not a folder")
    existing = folder if folder.is_dir() else folder.parent
    if not existing.is_dir():
        raise ValueError(f"out: neither {folder} nor its parent folder exists")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"out: cannot write into {existing}")
    return folder


def reproduce(out=DEFAULT_FIGURE_DIR, *, only=None, written=None, progress=False, **sizes):
    """Write every gallery figure (or those in ``only``) as PNG into ``out``.

    BLAS runs on one thread meanwhile (``threadpoolctl``): the draws are many
    mid-sized products, and on a loaded machine threaded BLAS spins against
    the other work (benchmarks/RESULTS.md, reproduce section).

    Parameters
    ----------
    out : str or path-like, optional
        Output folder (created if its parent exists), default the working
        directory.
    only : int, str or sequence of int or str, optional
        Figures to draw, by number or name: one figure (a string is one name,
        ``"gamma"``) or a non-empty sequence; ``None`` draws all of them.
    written : callable, optional
        Called with each path as soon as its file is written.
    progress : bool, optional
        Show a ``tqdm`` progress bar (one step per figure) on stderr.
    **sizes
        ``n``, ``draws``, ``seed``, ``jobs`` as in :func:`make_figure`.

    Returns
    -------
    list of pathlib.Path
        The files written, in the order asked for.

    Raises
    ------
    TypeError, ValueError
        On an unknown figure, an empty ``only``, a bad size or an output path
        that is a file or cannot be written -- before any figure is drawn.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     [p.name for p in reproduce(folder, only="gamma")]
    ['fig5_gamma.png']
    """
    specs = _check_only(only)
    unknown = sorted(set(sizes) - {"n", "draws", "seed", "jobs"})
    if unknown:
        raise TypeError(f"reproduce got unexpected size arguments {unknown}")
    _check_sizes(**sizes)
    folder = check_output_folder(out)
    folder.mkdir(exist_ok=True)
    from threadpoolctl import threadpool_limits
    from tqdm import tqdm

    paths = []
    with threadpool_limits(limits=1, user_api="blas"), \
            tqdm(specs, desc="figures", unit="figure", disable=not progress,
                 file=None) as bar:
        for spec in bar:
            bar.set_postfix_str(f"fig{spec.number} {spec.name}")
            paths.append(save_figure(spec.number, folder / spec.filename, **sizes))
            if written is not None:
                written(paths[-1])
    return paths
