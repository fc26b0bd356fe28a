"""Start-up time: ``import freeattn`` and ``freeattn --version``/``--help`` against ``import numpy``.

Run ``python benchmarks/bench_startup.py`` (``--quick`` for a seconds-long smoke run).

Each command is a fresh Python process, timed from start to exit (wall clock,
:func:`time.perf_counter` around :func:`subprocess.run`):

- baseline: ``python -c "import numpy"``;
- ``import freeattn``: ``python -c "import freeattn"``;
- ``--version`` and ``--help``: ``python -m freeattn --version`` / ``--help`` (the
  code path of the ``freeattn`` console script, which calls the same ``main``).

The commands are run in rounds, each round running every command once in turn, so
that load from other processes shifts all of them alike; a command's time is the
median over rounds, and its ratio is its median over the baseline's median
(targets: ``import freeattn`` <= 2x, ``--version`` and ``--help`` <= 1.5x).  Each
row also lists which heavy modules (SciPy's linear algebra and optimizers, SymPy,
mpmath, PyTorch, matplotlib) the command left in ``sys.modules``, from one extra
run of it.  The processes inherit this process's environment (``PYTHONPATH``
included) and run in a temporary directory (so that the current directory does
not shadow it): to compare two versions of freeattn run the script with each on
``PYTHONPATH``; the freeattn that was timed is printed.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

DEFAULT_JSON = "bench_startup.json"
ROUNDS = 15
QUICK_ROUNDS = 2
HEAVY = ("scipy.linalg", "scipy.optimize", "sympy", "mpmath", "torch", "matplotlib")

#: (name, Python arguments, target ratio to the baseline or None).
COMMANDS = (
    ("import numpy (baseline)", ["-c", "import numpy"], None),
    ("import freeattn", ["-c", "import freeattn"], 2.0),
    ("freeattn --version", ["-m", "freeattn", "--version"], 1.5),
    ("freeattn --help", ["-m", "freeattn", "--help"], 1.5),
)

# The same commands in one process, then a report of the heavy modules they loaded
# (``python -m freeattn`` through runpy, as the interpreter runs it).
_MAIN = ("import runpy, sys\nsys.argv = ['freeattn', {flag!r}]\ntry:\n"
         "    runpy.run_module('freeattn', run_name='__main__')\nexcept SystemExit:\n    pass")
_PROBES = {
    "import numpy (baseline)": "import numpy",
    "import freeattn": "import freeattn",
    "freeattn --version": _MAIN.format(flag="--version"),
    "freeattn --help": _MAIN.format(flag="--help"),
}


# The processes run here, so that the current directory does not shadow PYTHONPATH.
_CWD = tempfile.gettempdir()


def _run(args):
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=_CWD)
    return time.perf_counter() - start


def heavy_modules(name):
    """The heavy modules in ``sys.modules`` after command ``name`` (one extra process)."""
    code = (_PROBES[name] + "\nimport sys\n"
            f"print('heavy:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=_CWD).stdout.splitlines()[-1]
    return out[len("heavy:"):] or "none"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_common_arguments(parser, DEFAULT_JSON)
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"rounds of the four commands (default {ROUNDS}, "
                             f"{QUICK_ROUNDS} with --quick)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    location = subprocess.run([sys.executable, "-c", "import freeattn; print(freeattn.__file__)"],
                              check=True, capture_output=True, text=True, cwd=_CWD).stdout.strip()
    for _, cmd, _ in COMMANDS:          # warm the file cache, not timed
        _run(cmd)
    times = {name: [] for name, _, _ in COMMANDS}
    for _ in range(rounds):
        for name, cmd, _ in COMMANDS:
            times[name].append(_run(cmd))
    base = statistics.median(times[COMMANDS[0][0]])
    rows = []
    for name, cmd, target in COMMANDS:
        median = statistics.median(times[name])
        row = {"command": "python " + " ".join(cmd), "task": name, "rounds": rounds,
               "median_s": median, "min_s": min(times[name]), "max_s": max(times[name]),
               "ratio": median / base, "target_ratio": target,
               "heavy_modules": heavy_modules(name)}
        if target is not None:
            row["meets_target"] = "yes" if row["ratio"] <= target else "no"
        rows.append(row)
    result = {"benchmark": "startup", "quick": args.quick, "machine": _common.machine_info(),
              "freeattn": location, "rows": rows}
    return _common.publish(result, render, args, DEFAULT_JSON)


def render(result):
    lines = [_common.machine_line(result["machine"]), "",
             f"Fresh processes, timed start to exit; median over {result['rows'][0]['rounds']} "
             "rounds (every command once per round). Ratio: median / median of "
             f"`python -c \"import numpy\"`. freeattn timed: {result['freeattn']}.", ""]
    columns = [("task", "command", ""), ("median_s", "median (s)", ".3f"),
               ("min_s", "min (s)", ".3f"), ("max_s", "max (s)", ".3f"),
               ("ratio", "× import numpy", ".2f"), ("target_ratio", "target", "g"),
               ("meets_target", "≤ target", ""), ("heavy_modules", "heavy modules loaded", "")]
    lines.append(_common.markdown_table(columns, result["rows"]))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
