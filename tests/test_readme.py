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
