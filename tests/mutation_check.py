"""Mutation check of the Monte Carlo validation's tests (run by hand, not by pytest).

A test of the tests (STYLE: "change one line of the code on purpose and see a
test fail"): each entry of MUTATIONS changes one line of freeattn's Monte Carlo
layer in a scratch copy of the repository, and the deterministic tests of that
layer (statistical tests excluded) must then fail.  Run from the repository root:

    python tests/mutation_check.py            # all mutations (about 5 minutes)
    python tests/mutation_check.py 0 3        # mutations 0 and 3

It prints, for each mutation, CAUGHT and the tests that failed, or SURVIVED.
"""

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parents[1]

MUTATIONS = [
    ("w1_noise at the 50% quantile", "freeattn/montecarlo/_statistics.py",
     "float(np.quantile(np.concatenate(w1), level))", "float(np.quantile(np.concatenate(w1), 0.5))"),
    ("w1_noise at the 90% quantile", "freeattn/montecarlo/_statistics.py",
     "float(np.quantile(np.concatenate(w1), level))", "float(np.quantile(np.concatenate(w1), 0.9))"),
    ("above_edge forced to 0", "freeattn/montecarlo/_validation.py",
     "above_edge=int(sum(np.count_nonzero(b > edge) for b in bulks)),", "above_edge=0,"),
    ("ks_iid scaled by N instead of sqrt(N)", "freeattn/montecarlo/_statistics.py",
     "scipy.stats.kstwobign.ppf(level) / np.sqrt(count)", "scipy.stats.kstwobign.ppf(level) / count"),
    ("moments_se without sqrt(N)", "freeattn/montecarlo/_statistics.py",
     "float(values.std(ddof=1) / np.sqrt(len(values)))", "float(values.std(ddof=1))"),
    ("top singular values from the smallest", "freeattn/montecarlo/_statistics.py",
     "np.sqrt(np.sort(values)[::-1][:count])", "np.sqrt(np.sort(values)[:count])"),
    ("outlier margin loosened 3 -> 4 widths", "freeattn/montecarlo/_statistics.py",
     "EDGE_MARGIN_WIDTHS = 3.0", "EDGE_MARGIN_WIDTHS = 4.0"),
    ("outlier margin loosened 3 -> 3.5 widths", "freeattn/montecarlo/_statistics.py",
     "EDGE_MARGIN_WIDTHS = 3.0", "EDGE_MARGIN_WIDTHS = 3.5"),
    ("covariance round-off tolerance loosened 100 -> 10000", "freeattn/montecarlo/_sampling.py",
     "_COVARIANCE_CLIP = 100.0", "_COVARIANCE_CLIP = 10000.0"),
    # further mutations of every other field
    ("ks_noise at the 50% quantile", "freeattn/montecarlo/_statistics.py",
     "float(np.quantile(np.concatenate(ks), level))", "float(np.quantile(np.concatenate(ks), 0.5))"),
    ("KS off by one step", "freeattn/montecarlo/_statistics.py",
     "np.max(left - (upper - 1.0 / m))", "np.max(left - upper)"),
    ("KS without the left limit at an atom", "freeattn/montecarlo/_statistics.py",
     "left = cdf_sorted if cdf_left_sorted is None else np.asarray(cdf_left_sorted, dtype=float)",
     "left = cdf_sorted"),
    ("W1 without the uniform grid", "freeattn/montecarlo/_statistics.py",
     "W1_GRID_POINTS = 2048", "W1_GRID_POINTS = 2"),
    ("largest from the smallest bulk value", "freeattn/montecarlo/_validation.py",
     "largest, largest_se = stats.mean_and_se([b[-1] for b in bulks])",
     "largest, largest_se = stats.mean_and_se([b[0] for b in bulks])"),
    ("removed misses the zeros", "freeattn/montecarlo/_statistics.py",
     "return values[zeros:len(values) - removed_top], zeros + removed_top",
     "return values[zeros:len(values) - removed_top], removed_top"),
    ("zeros kept in the bulk", "freeattn/montecarlo/_statistics.py",
     "return values[zeros:len(values) - removed_top], zeros + removed_top",
     "return values[:len(values) - removed_top], zeros + removed_top"),
    ("moments_exact shifted by one order", "freeattn/montecarlo/_validation.py",
     "return tuple(float(target.moment(k)) if target is not None else math.nan",
     "return tuple(float(target.moment(k + 1)) if target is not None else math.nan"),
    ("mp_edge from the law", "freeattn/montecarlo/_validation.py",
     "mp_edge = float(reference.support()[1]) if reference is not None else math.nan",
     "mp_edge = edge"),
    ("ks_per_draw from the pooled sample", "freeattn/montecarlo/_validation.py",
     "ks_per_draw = tuple(stats.ks_distance(law.cdf(b)) if law is not None else math.nan",
     "ks_per_draw = tuple(stats.ks_distance(law.cdf(pooled)) if law is not None else math.nan"),
    ("ks_mp against the law", "freeattn/montecarlo/_validation.py",
     "ks_mp, w1_mp = distances(reference)", "ks_mp, w1_mp = distances(law)"),
    ("sqrt_n as n", "freeattn/montecarlo/_validation.py", "sqrt_n=float(np.sqrt(n)),", "sqrt_n=float(n),"),
    ("moments over the full spectrum", "freeattn/montecarlo/_validation.py",
     "moment_stats = [stats.mean_and_se([np.mean(b ** k) for b in bulks])",
     "moment_stats = [stats.mean_and_se([np.mean(v ** k) for v in spectra])"),
    ("rate slope_se ignores K = 2", "freeattn/montecarlo/_statistics.py",
     "se = float(fit.stderr) if len(values) > 2 else math.nan", "se = float(fit.stderr)"),
    ("bootstrap seed shared by all models", "freeattn/montecarlo/_validation.py",
     "spawn_key=base.spawn_key + (model.stream_key(),)", "spawn_key=base.spawn_key + (0,)"),
    ("convergence children reversed", "freeattn/montecarlo/_validation.py",
     "for args, child in zip(checked, children))", "for args, child in zip(checked, children[::-1]))"),
    ("common mode not removed", "freeattn/montecarlo/_statistics.py",
     "removed_top = common_mode + int(np.count_nonzero(candidates > threshold))",
     "removed_top = int(np.count_nonzero(candidates > threshold))"),
]
TESTS = ["tests/test_statistics.py", "tests/test_validation.py", "tests/test_sampling.py",
         "tests/test_models.py", "tests/test_render.py"]



def check(index, name, path, old, new):
    """Apply one mutation in a scratch copy, run TESTS there; return the failed tests."""
    with tempfile.TemporaryDirectory() as folder:
        scratch = pathlib.Path(folder) / "repo"
        shutil.copytree(SRC, scratch, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        target = scratch / path
        text = target.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise SystemExit(f"mutation {index} ({name}): the line to change is not in {path} "
                             f"exactly once; update MUTATIONS")
        target.write_text(text.replace(old, new), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m",
             "not statistical", "--no-header", "-rf", "-o", "addopts=", *TESTS],
            cwd=scratch, capture_output=True, text=True,
            env={"PYTHONPATH": str(scratch), "PATH": "/usr/bin:/bin"}, check=False)
    return sorted(set(re.findall(r"FAILED (\S+?)(?: - |$)", result.stdout, flags=re.M)))


def main(selected):
    survived = 0
    for i, mutation in enumerate(MUTATIONS):
        if selected and str(i) not in selected:
            continue
        failed = check(i, *mutation)
        survived += not failed
        print(f"[{i}] {mutation[0]}: {'CAUGHT' if failed else 'SURVIVED'} by "
              f"{len(failed)} test(s)")
        for name in failed:
            print("      ", name)
        sys.stdout.flush()
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
