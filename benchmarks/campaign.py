"""A mixed random campaign: ⊞, ⊠ and sample covariances of two random laws.

Run ``python benchmarks/campaign.py`` (``--seeds 0,1,2,3 --draws 50``, the campaign of
benchmarks/RESULTS.md sections 26-27; ``--quick``: seed 0, five draws).  Each draw
takes, with ``numpy.random.default_rng(seed)``, an operation (⊞, ⊠ or a sample
covariance of ratio log-uniform in [0.1, 10]) and its laws from Marchenko-Pastur
(variance in [0.5, 2], ratio in [0.1, 3]), the semicircle (variance in [0.2, 4],
⊞ only), 1-4 atoms (uniform in [-3, 3], or [0.2, 5] for ⊠ and populations;
Dirichlet weights, rounded to 3 digits) and the squared attention law (beta
log-uniform in [1e-3, 3.2], gamma log-uniform in [0.1, 10]); then builds the law, its
support and ``pdf`` on 200 points across it, and records what happened: the law
built (its mass error, bands, seconds), ``ConvergenceError`` (the message), or
any other exception (a defect: the engine must not let one out).  A draw still
running after ``--timeout`` seconds (default 60) is stopped and reported.

The table lists every draw that did not build, then counts by outcome, the worst
mass error and the slowest draws.  With ``--depth 2`` each operand is, with probability 1/2, itself
such a composition (a positive one under ⊠ and populations): the nested laws of deep
attention stacks.  ``--replay FILE [FILE ...]`` runs again the draws recorded in earlier
campaigns' JSON files (with ``--slower-than S``, those that took more than ``S``
seconds there), under their seeds and draw numbers: the same laws, timed on this
commit (benchmarks/RESULTS.md section 34).
"""

import argparse
import json
import signal
import sys
import time

import numpy as np

from _common import add_common_arguments, machine_info, machine_line, markdown_table, publish


def _law(rng, positive):
    """A random law's constructor call (a string, so that a failing draw can be rerun)."""
    kinds = ["mp", "pm", "att"] if positive else ["mp", "sc", "pm", "att"]
    kind = kinds[rng.integers(len(kinds))]
    if kind == "mp":
        return f"fa.marchenko_pastur({rng.uniform(0.5, 2):.5g}, {rng.uniform(0.1, 3):.5g})"
    if kind == "sc":
        return f"fa.semicircle({rng.uniform(0.2, 4):.5g})"
    if kind == "pm":
        k = int(rng.integers(1, 5))
        lo, hi = (0.2, 5.0) if positive else (-3.0, 3.0)
        atoms = np.round(rng.uniform(lo, hi, k), 3)
        weights = np.round(rng.dirichlet(np.ones(k)), 3)
        weights[-1] = 1.0 - weights[:-1].sum()
        return (f"fa.point_masses({[float(a) for a in atoms]}, "
                f"{[float(w) for w in np.round(weights, 6)]})")
    beta = np.exp(rng.uniform(np.log(1e-3), np.log(3.2)))
    gamma = np.exp(rng.uniform(np.log(0.1), np.log(10.0)))
    return f"fa.attention_law({beta:.5g}, {gamma:.5g}).squared()"


def _operand(rng, positive, depth):
    """An operand: an elementary law, or (depth > 1, with probability 1/2) a
    composition of depth ``depth - 1`` (positive ones only under ⊠ and populations)."""
    if depth > 1 and rng.integers(2):
        return draw(rng, depth - 1, positive)
    return _law(rng, positive)


def draw(rng, depth=1, positive=False):
    """One random composition, as the Python expression that builds it (``depth``:
    nested compositions up to that depth; ``positive``: a law on ``[0, oo)``)."""
    op = ["add", "mul", "cov"][rng.integers(3)]
    if positive and op == "add":
        op = "mul"
    if op == "add":
        return (f"fa.free_additive({_operand(rng, False, depth)}, "
                f"{_operand(rng, False, depth)})")
    if op == "mul":
        return (f"fa.free_multiplicative({_operand(rng, True, depth)}, "
                f"{_operand(rng, True, depth)})")
    ratio = np.exp(rng.uniform(np.log(0.1), np.log(10.0)))
    return f"fa.sample_covariance({_operand(rng, True, depth)}, {ratio:.5g})"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_one(expr, timeout):
    """Build the law of ``expr``, its support and pdf on 200 points: a result row."""
    import freeattn as fa

    row = {"law": expr}
    start = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(timeout))
    try:
        law = eval(expr, {"fa": fa})
        bands = law.intervals()
        lo, hi = law.support()
        law.pdf(np.linspace(lo, hi, 200))
        row.update(outcome="built", bands=len(bands),
                   mass_error=law.accuracy().mass_error if bands else 0.0)
    except fa.ConvergenceError as err:
        row.update(outcome="ConvergenceError", message=str(err)[:160])
    except _Timeout:
        row.update(outcome="timeout", message=f"over {timeout} s")
    except Exception as err:  # a defect: reported, never hidden
        row.update(outcome=type(err).__name__, message=str(err)[:160])
    finally:
        signal.alarm(0)
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, "campaign.json")
    parser.add_argument("--seeds", default="0,1,2,3",
                        help="comma-separated seeds of numpy.random.default_rng")
    parser.add_argument("--draws", type=int, default=50, help="draws per seed (default 50)")
    parser.add_argument("--depth", type=int, default=1,
                        help="nesting of compositions (default 1: two elementary laws; "
                             "2: each operand a depth-1 composition with probability 1/2)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds after which a draw is stopped (default 60)")
    parser.add_argument("--replay", nargs="+", metavar="FILE",
                        help="run again the draws of these campaign JSON files")
    parser.add_argument("--slower-than", type=float, default=0.0, metavar="S",
                        help="with --replay, only the draws that took more than S seconds")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",")]
    draws = 5 if args.quick else args.draws
    if args.replay:
        return _replay(args)
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for i in range(draws):
            row = run_one(draw(rng, args.depth), args.timeout)
            row.update(seed=seed, draw=i)
            rows.append(row)
            print(f"{seed} {i:3d} {row['seconds']:6.2f} s {row['outcome']}", file=sys.stderr,
                  flush=True)
    result = {"machine": machine_info(), "seeds": seeds, "draws": draws, "depth": args.depth,
              "rows": rows}
    return publish(result, render, args, "campaign.json")


def _replay(args):
    """The ``--replay`` run: each recorded draw again, with its recorded outcome beside."""
    rows, seeds, depth = [], [], 1
    for path in args.replay:
        with open(path, encoding="utf-8") as handle:
            recorded = json.load(handle)
        depth = max(depth, recorded.get("depth", 1))
        for old in recorded["rows"]:
            if old["seconds"] <= args.slower_than:
                continue
            row = run_one(old["law"], args.timeout)
            row.update(seed=old["seed"], draw=old["draw"], recorded_seconds=old["seconds"],
                       recorded_outcome=old["outcome"], recorded_bands=old.get("bands"))
            rows.append(row)
            seeds.append(old["seed"])
            print(f"{old['seed']} {old['draw']:3d} {row['seconds']:6.2f} s "
                  f"(recorded {old['seconds']:.2f} s) {row['outcome']}", file=sys.stderr,
                  flush=True)
    result = {"machine": machine_info(), "seeds": sorted(set(seeds)), "draws": len(rows),
              "depth": depth, "replay": args.replay, "slower_than": args.slower_than,
              "rows": rows}
    return publish(result, render, args, "campaign.json")


def render(result):
    """The markdown report of a campaign: the draws that did not build, then a summary."""
    rows = result["rows"]
    failed = [r for r in rows if r["outcome"] != "built"]
    lines = [machine_line(result["machine"]), "",
             f"{len(rows) - len(failed)} of {len(rows)} built.", ""]
    if failed:
        lines += [markdown_table([("seed", "seed", "d"), ("draw", "draw", "d"),
                                  ("outcome", "outcome", ""), ("seconds", "s", ".2f"),
                                  ("law", "law", ""), ("message", "message", "")], failed), ""]
    counts = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    summary = [{"what": k, "value": str(v)} for k, v in sorted(counts.items())]
    built = [r for r in rows if r["outcome"] == "built"]
    if built:
        summary.append({"what": "worst mass error of a built law",
                        "value": f"{max(r['mass_error'] for r in built):.1e}"})
    summary.append({"what": "slowest draw (s)",
                    "value": f"{max(r['seconds'] for r in rows):.2f}"})
    lines.append(markdown_table([("what", "outcome", ""), ("value", "draws", "")], summary))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
