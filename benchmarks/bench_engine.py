"""Speed of the analytic subordination path (theory section 14): a new law + pdf on 2000 points.

Run ``python benchmarks/bench_engine.py`` (``--quick``: one timing each, the
smallest population only).  Every time is a ratio to C, the batched LAPACK
``eigvals`` of 10^4 companion 3 x 3 matrices (``_common.time_eigvals_baseline``),
timed in the same run right before the cases:

* ``free_additive(Bernoulli, Bernoulli)`` (the arcsine law), target <= 2 C;
* the three-band ``free_additive`` of two discrete laws;
* ``free_multiplicative`` of two discrete laws on ``(0, oo)`` (support by theory
  eq. (14.34)): ``{1, 2} ⊠ {1, 3}`` (weights 0.3/0.7 and 0.6/0.4, two bands and an
  atom) and a 4-atom by 3-atom product with a gap of 5.6e-4 (four bands);
* ``sample_covariance(point_masses(t, 1/k), 0.5)`` with ``t`` chi-square(3) draws
  (``numpy.random.default_rng(1)``), k = 500 and 1000 (> 400 atoms: the
  analytic path), target <= 10 C at k = 500 and cost linear in k (k = 5000,
  20 000 and 10^5 in the full run; from 2048 atoms the sums over atoms take the
  tree code of theory eq. (14.25));
* ``free_multiplicative(attention, attention)`` (beta = gamma = 1, a hard edge
  at 0, theory eq. (14.6)), target <= 10 C, and the products of three (target
  <= 10 C), four and eight attention laws (one system in all the factors,
  eqs. (14.8), (14.21); four and eight in the full run only);
* the attention law with Wishart tokens ``MP(1, 1/2)`` at beta = gamma = 1
  (theory eq. (13.7), whose outer sample covariance takes eq. (14.4));
* the two-band token law at beta = 0.5, gamma = 1/4, Gram ``{1/2, 3/2}``, where the
  engine stalls and the Dyson system of theory eq. (13.12) answers (the time of the
  failed attempt included);
* the multi-head law on tokens (theory section 9.12, the Dyson system (9.25)-(9.30)):
  4 heads, gamma_k = gamma_v = 1/2, gamma_o = 1, Gram ``{1/2, 3/2}`` and a 64-atom
  chi-square(4) Gram.

Each case builds a new law (cold: perturbed by ``_common.cold_value``) and
evaluates ``pdf`` on 2000 points spanning its support.

``--populations`` runs the population cases only, k = 500 to 10^5, each with the
tree code and again with the direct sums over atoms (the tree disabled), so that
the two are compared in the same run.
"""

import argparse
import sys
import time

import numpy as np

from _common import cold_value, limit_blas_threads, time_eigvals_baseline


def cases(quick):
    import freeattn as fa

    def arcsine():
        # cold: shifted by a new tiny amount (a change of one atom's amplitude would
        # open a gap around 0, theory section 14.19)
        ber = fa.point_masses([-1.0, 1.0], [0.5, 0.5])
        shift = cold_value(1.0) - 1.0
        return fa.free_additive(fa.point_masses([shift - 1.0, shift + 1.0], [0.5, 0.5]), ber)

    def three():
        return fa.free_additive(fa.point_masses([-1.0, 0.0, cold_value(2.0)], [0.3, 0.3, 0.4]),
                                fa.point_masses([0.0, 1.0], [0.5, 0.5]))

    def product_pair():
        return fa.free_multiplicative(fa.point_masses([1.0, cold_value(2.0)], [0.3, 0.7]),
                                      fa.point_masses([1.0, 3.0], [0.6, 0.4]))

    def product_gap():
        w = [0.19229024064948552, 0.30000000000000004, 0.3432333320649627,
             0.16447642728555176]
        return fa.free_multiplicative(
            fa.point_masses([0.644, 0.813, 1.93, cold_value(2.832)], w),
            fa.point_masses([0.646, 0.702, 0.92],
                            [0.1796186026675551, 0.12038139733244488, 0.7]))

    def population(n):
        t = np.random.default_rng(1).chisquare(3, n)

        def build():
            return fa.sample_covariance(fa.point_masses(t * cold_value(1.0),
                                                        np.full(n, 1.0 / n)), 0.5)
        return build

    def attention_product(layers):
        def build():
            from freeattn.attention._stack_law import attention_stack_law
            return attention_stack_law(cold_value(1.0), 1.0, layers=layers)
        return build

    def wishart_tokens():
        return fa.attention_law(cold_value(1.0), 1.0,
                                tokens=fa.marchenko_pastur(1.0, 0.5)).squared()

    def split_tokens():
        return fa.attention_law(cold_value(0.5), 0.25,
                                tokens=fa.point_masses([0.5, 1.5])).squared()

    def multihead_tokens(tokens):
        def build():
            return fa.multihead_law(cold_value(1.0), heads=4, gamma_k=0.5, gamma_v=0.5,
                                    gamma_o=1.0, tokens=tokens)
        return build

    def semicircle_causal():
        return fa.free_additive(fa.semicircle(1.0), fa.causal_law(cold_value(0.55), 1.5))

    chi = np.random.default_rng(1).chisquare(4, 64)
    out = [("Bernoulli ⊞ Bernoulli (arcsine)", arcsine), ("three-band discrete ⊞", three),
           ("discrete ⊠, 2 x 2 atoms", product_pair),
           ("discrete ⊠, 4 x 3 atoms, gap 5.6e-4", product_gap),
           ("population, 500 atoms", population(500)),
           ("attention ⊠ attention", attention_product(2)),
           ("attention ⊠ attention ⊠ attention", attention_product(3)),
           ("attention, Wishart tokens", wishart_tokens),
           ("attention, two-band tokens", split_tokens),
           ("multi-head, two-point tokens", multihead_tokens(fa.point_masses([0.5, 1.5]))),
           ("multi-head, 64-atom tokens", multihead_tokens(fa.point_masses(chi / chi.mean())))]
    if not quick:
        out += [("population, 1000 atoms", population(1000)),
                ("population, 5000 atoms", population(5000)),
                ("population, 20000 atoms", population(20000)),
                ("population, 100000 atoms", population(100000)),
                ("attention stack, 4 layers", attention_product(4)),
                ("attention stack, 8 layers", attention_product(8)),
                ("semicircle ⊞ causal attention", semicircle_causal)]
    return out


def population_cases():
    import freeattn as fa
    from freeattn.compose import _analytic, _population_support

    default = _analytic.TREE_MIN_ATOMS

    def population(n, tree):
        t = np.random.default_rng(1).chisquare(3, n)

        def build():
            # the direct sums: the tree's threshold above every population
            limit = default if tree else 10 ** 12
            _analytic.TREE_MIN_ATOMS = _population_support.TREE_MIN_ATOMS = limit
            return fa.sample_covariance(fa.point_masses(t * cold_value(1.0),
                                                        np.full(n, 1.0 / n)), 0.5)
        return build

    out = []
    for n in (500, 5000, 20000, 100000):
        out.append((f"population, {n} atoms", population(n, True)))
        if 2000 < n <= 20000:
            out.append((f"population, {n} atoms, direct", population(n, False)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--populations", action="store_true",
                        help="the population cases only, with and without the tree code")
    args = parser.parse_args(argv)
    limit_blas_threads(sys.argv[1:] if argv is None else argv)
    c = time_eigvals_baseline(quick=args.quick)["min"]
    print(f"C = {c * 1e3:.3f} ms")
    from freeattn import ConvergenceError

    # warm-up: imports and first-call costs are not part of any case
    cases(True)[0][1]().pdf(0.0)
    todo = population_cases() if args.populations else cases(args.quick)
    for name, build in todo:
        t0 = time.perf_counter()
        try:
            law = build()
            lo, hi = law.support()
            law.pdf(np.linspace(lo, hi, 2000))
        except ConvergenceError as exc:
            dt = time.perf_counter() - t0
            print(f"{name:34s} {dt:9.3f} s  {dt / c:10.1f} C  ConvergenceError: {str(exc)[:90]}")
            continue
        dt = time.perf_counter() - t0
        print(f"{name:34s} {dt:9.3f} s  {dt / c:10.1f} C  bands {len(law.intervals())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
