"""Shared pytest configuration for freeattn's tests."""

import os

import matplotlib

# Tests never open a window.
matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")
