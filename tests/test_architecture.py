"""The package layout: no import cycles, and imports only go down the layers.

Every module under ``freeattn/`` is parsed with :mod:`ast`, counting the
imports inside functions too (a function-level import is still a dependency;
it only hides a cycle from the interpreter).  The subpackages form layers,
lowest first (:data:`LAYERS`); a module may import from its own subpackage and
from the layers below it.  The front ends (the command line, ``plotting``,
``torch``, ``__main__`` and the package root, whose ``__getattr__`` serves the
public names) may import every layer, and no layer may import a front end.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "freeattn"

#: The subpackages of freeattn, lowest layer first.
LAYERS = ("core", "algebra", "laws", "compose", "attention", "montecarlo")

#: Modules and subpackages of the top layer (they may import every layer).
FRONTENDS = ("cli", "plotting", "torch", "interop", "__main__")


def _modules():
    """``{dotted name: (path, is_package)}`` of every module under freeattn/."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imports(name):
    """Modules of freeattn that module ``name`` imports (anywhere in its body)."""
    path, is_package = MODULES[name]
    package = name if is_package else name.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                # ``import freeattn.a.b`` imports freeattn.a.b (and its packages).
                if alias.name in MODULES:
                    edges.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module not in MODULES:
                continue
            # ``from pkg import sub`` depends on the module pkg.sub, not on pkg's body.
            submodules = {f"{module}.{a.name}" for a in node.names} & MODULES.keys()
            if submodules:
                edges |= submodules
            if len(submodules) < len(node.names):
                edges.add(module)
    edges.discard(name)
    return edges


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name):
    """Index of the layer of module ``name`` (len(LAYERS) for the front ends)."""
    parts = name.split(".")
    if len(parts) == 1 or parts[1] in FRONTENDS:
        return len(LAYERS)
    if parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    raise AssertionError(f"{name} is in no layer: move it into one of the subpackages "
                         f"{LAYERS} (or declare a front end in FRONTENDS)")


def _find_cycle(graph):
    """One import cycle of ``graph`` as a list of modules, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_parser_sees_the_package():
    """The scan found the package, its layers and the imports between them (a
    parser that found no edges would pass the other tests vacuously)."""
    assert {"freeattn", "freeattn.laws._law_base", "freeattn.cli._cli"} <= MODULES.keys()
    for layer in LAYERS + ("cli",):
        assert f"freeattn.{layer}" in MODULES, f"freeattn/{layer}/__init__.py is missing"
    assert "freeattn.core._errors" in GRAPH["freeattn.laws._law_base"]
    # A function-level import counts: the causal Monte Carlo model builds its law lazily.
    assert "freeattn.attention._causal_law" in GRAPH["freeattn.montecarlo._causal_sampling"]


def test_every_module_is_in_a_layer():
    for name in MODULES:
        _layer(name)


def test_no_import_cycles():
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _find_cycle(graph) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_imports_go_down_the_layers():
    upward = [f"{name} (layer {_layer(name)}) imports {target} (layer {_layer(target)})"
              for name, targets in sorted(GRAPH.items()) for target in sorted(targets)
              if _layer(target) > _layer(name)]
    assert not upward, "imports above their own layer:\n" + "\n".join(upward)


HEAVY = ("scipy.optimize", "scipy.linalg", "sympy", "mpmath", "torch", "matplotlib")


@pytest.mark.parametrize("code", [
    "import freeattn",
    "import freeattn; freeattn.__version__; dir(freeattn)",
    "from freeattn.cli import _cli; _cli.main(['--version'])",
    "from freeattn.cli import _cli\ntry:\n    _cli.main(['--help'])\nexcept SystemExit:\n    pass",
])
def test_light_paths_import_no_heavy_module(code):
    """``import freeattn`` and the command line's --version/--help import none of
    SciPy's linear algebra or optimizers, SymPy, mpmath, PyTorch or matplotlib
    (the package root serves its names lazily, PEP 562)."""
    probe = (f"import sys\n{code}\n"
             f"print('heavy:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.splitlines()
    assert out[-1].startswith("heavy:"), out
    assert out[-1] == "heavy:", f"{code!r} imported {out[-1][len('heavy:'):]}"


def test_public_names_resolve_lazily():
    """Every name of ``freeattn.__all__`` resolves (PEP 562 ``__getattr__``) to the
    object of the module it is mapped to, and ``dir(freeattn)`` lists it."""
    import importlib

    import freeattn

    assert set(freeattn._MODULE_OF) == set(freeattn.__all__) - {"__version__"}
    for name in freeattn.__all__:
        value = getattr(freeattn, name)
        if name != "__version__":
            module = importlib.import_module(f"freeattn.{freeattn._MODULE_OF[name]}")
            assert value is getattr(module, name), name
    assert set(freeattn.__all__) <= set(dir(freeattn))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        freeattn.no_such_name  # noqa: B018


def test_the_model_registry_is_complete_from_any_entry_point():
    """Importing the registry module alone (a fresh process) registers the chain,
    causal and multi-head models, in the order of freeattn.MODELS."""
    probe = ("from freeattn.montecarlo._models import MODELS\n"
             "print(','.join(MODELS))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()[-1].split(",")
    assert out[:6] == ["attention", "normalized", "centered", "sigma_f", "sigma_g", "linear"]
    assert {"causal", "causal_linear", "multihead", "multihead_linear", "head_average",
            "head_average_linear"} <= set(out)
    assert out.index("causal") < out.index("multihead")
