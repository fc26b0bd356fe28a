"""Shared pytest configuration for freeattn's tests."""

import os

import matplotlib

# Tests never open a window.
matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


def load_script(relative_path):
    """Import a script of the repository (a benchmark, a reference generator) as a module.

    ``relative_path`` is relative to the repository root, e.g.
    ``"benchmarks/finite_width.py"``.
    """
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / relative_path
    spec = importlib.util.spec_from_file_location(path.stem + "_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeClock:
    """A ``time`` module for a module under test: ``perf_counter`` advances 1.25 s at
    every reading, and the readings are kept (a recorded duration is then a known
    difference, never wall-clock time)."""

    def __init__(self):
        self.readings = []

    def perf_counter(self):
        self.readings.append(100.0 + 1.25 * len(self.readings))
        return self.readings[-1]


def record_calls(monkeypatch, owner, name):
    """Replace ``owner.name`` (through ``monkeypatch``) by a wrapper that keeps a copy of
    each call's first argument, as an array, and calls through; returns the list of
    those copies (the points a solver was asked, in order)."""
    import numpy as np

    calls = []
    original = getattr(owner, name)

    def recorded(first, *args, **kwargs):
        calls.append(np.array(first))
        return original(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return calls
