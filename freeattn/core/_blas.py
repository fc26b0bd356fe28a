"""Scoped single-threaded BLAS for solvers made of many small dense products.

The causal solver (:mod:`freeattn.attention._causal`) works with batches of ``33 x 33`` to
``81 x 81`` complex matrices.  OpenBLAS threads products of that size, and on a
shared two-core machine a threaded ``49 x 49`` product measured 11 ms against
0.02 ms single-threaded (benchmarks/RESULTS.md, causal section): the helper
threads are descheduled and the caller spins.  :func:`single_thread_blas`
sets numpy's OpenBLAS to one thread for the duration of a block and restores
the previous count; it is a no-op when numpy's BLAS is not an OpenBLAS whose
thread setter it can find.  The setting is process-wide: another Python
thread calling BLAS meanwhile runs single-threaded too (slower, never wrong).

Nothing here does I/O beyond locating numpy's bundled library once.
"""

import contextlib
import ctypes
import functools
import glob
import os
import threading

__all__ = ["single_thread_blas"]

_LOCK = threading.Lock()
_STATE = {"depth": 0, "saved": None}

# Names of the thread setter/getter in OpenBLAS builds numpy ships or links.
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


@functools.lru_cache(maxsize=1)
def _openblas():
    """``(set_num_threads, get_num_threads)`` of numpy's OpenBLAS, or None."""
    import numpy

    root = os.path.dirname(os.path.dirname(numpy.__file__))
    candidates = sorted(glob.glob(os.path.join(root, "numpy.libs", "*openblas*")))
    candidates += sorted(glob.glob(os.path.join(root, "scipy_openblas64", "lib", "*openblas*.so*")))
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            getter.restype = ctypes.c_int
            return setter, getter
    return None


@contextlib.contextmanager
def single_thread_blas():
    """Run the block with numpy's OpenBLAS on one thread (re-entrant)."""
    fns = _openblas()
    if fns is None:
        yield
        return
    setter, getter = fns
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["saved"] = int(getter())
            setter(1)
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                setter(_STATE["saved"])


def single_threaded(func):
    """Decorator: ``func`` runs inside :func:`single_thread_blas`."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with single_thread_blas():
            return func(*args, **kwargs)
    return wrapper
