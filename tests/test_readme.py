"""The README's two commands are the ones CI runs (issue 2)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for block in _bash_blocks(readme)
                for line in block.splitlines() if "pytest" in line]
    assert len(commands) == 1, commands
    assert commands[0] in ci


def test_readme_has_exactly_two_fresh_machine_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = [line for block in _bash_blocks(section) for line in block.splitlines()
                if line.strip()]
    assert len(commands) == 2, commands
    assert all(c.startswith("python -m pip install") for c in commands)


def _readme_bound(pattern):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(pattern, " ".join(readme.split()))
    assert match, pattern
    return float(match.group(1))


def test_readme_accuracy_bounds_hold_against_the_mpmath_references():
    """The README's "Accuracy" figures, recomputed: the worst errors of the law over every
    case of tests/reference/law_references.json (tests/reference/make_law_references.py,
    40 digits; CDF by contour integral at 25 digits), in the units the README states."""
    import json

    import numpy as np

    from freeattn import attention_law

    cases = json.loads((ROOT / "tests" / "reference" / "law_references.json")
                       .read_text(encoding="utf-8"))["cases"]
    density = edges = cdf = 0.0
    for case in cases:
        law = attention_law(case["beta"], case["gamma"]).squared()
        theta1 = float(case["theta1"])
        ref_intervals = np.array(case["intervals"], dtype=float) * theta1
        nonzero = ref_intervals != 0         # the lower edge 0 has no relative error
        got_intervals = np.array(law.intervals())
        edges = max(edges, float(np.max(np.abs(got_intervals[nonzero] - ref_intervals[nonzero])
                                        / ref_intervals[nonzero])))
        x, ref = np.array(case["density"], dtype=float).T
        density = max(density, float(np.max(np.abs(law.pdf(x * theta1) * theta1 - ref) / ref)))
        for x, ref in case["cdf"]:
            cdf = max(cdf, abs(float(law.cdf(float(x) * theta1)) - float(ref)))
    assert density <= _readme_bound(r"density ≤ ([0-9.e-]+) relative")
    assert edges <= _readme_bound(r"edges ≤ ([0-9.e-]+) relative")
    assert cdf <= _readme_bound(r"CDF ≤ ([0-9.e-]+) absolute")
    assert any(case["cdf"] for case in cases)
