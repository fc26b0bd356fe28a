"""Time one peer library on one task; runs inside that peer's virtual environment.

Started by bench_peers.py as ``<venv>/bin/python peer_worker.py`` with a JSON request
on standard input::

    {"peer": "freealg", "task": "mp_density", "params": {...}, "x": [...],
     "repeat": 5, "quick": false}

and prints one JSON object on standard output: ``{"ok": true, "version": ...,
"cold_seconds": ..., "time": {"min": ..., "median": ...}, "density": [...]}``, or
``{"ok": false, "unsupported": true|false, "error": "..."}``.  It imports neither
freeattn nor anything of the peer's beyond its public API, and only calls the peer
(rmtool is GPL: it is called here, never copied).

Tasks and the calls made (each timed from scratch: build the law, evaluate on x):

- ``mp_density`` (params ratio c, variance v): the Marchenko-Pastur density.
  freealg ``distributions.MarchenkoPastur(lam=c, sigma=sqrt(v)).density(x)``;
  scikit-rmt ``ensemble.MarchenkoPasturDistribution(ratio=c, beta=1, sigma=sqrt(v)).pdf(x)``;
  rmtool ``Lmz2pdf(wishartpol(c), x).density`` (v = 1 only).
- ``mp_plus_semicircle`` (ratio c, semicircle variance s2): MP(c) boxplus SC(s2).
  freealg ``distributions.FreeLevy(t=[c], w=[1], lam=1/c, sigma=sqrt(s2))`` (compound
  free Poisson with rate 1/c and jump c is MP(c), plus a semicircle part);
  rmtool ``Lmz2pdf(AplusB(wishartpol(c), wignerpol()), x)`` (s2 = 1 only).
- ``mp_times_mp`` (ratio 1 twice): MP(1) boxtimes MP(1), the Fuss-Catalan law of order 2.
  freealg ``distributions.FussCatalan(p=2).density(x)``;
  rmtool ``Lmz2pdf(AtimesB(wishartpol(1), wishartpol(1)), x)``.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _common import time_call  # noqa: E402


class Unsupported(Exception):
    """The peer has no routine for this task (or these parameters)."""


def _freealg(task, params):
    from freealg import distributions

    if task == "mp_density":
        return lambda x: distributions.MarchenkoPastur(
            lam=params["ratio"], sigma=math.sqrt(params["variance"])).density(x)
    if task == "mp_plus_semicircle":
        c = params["ratio"]
        return lambda x: distributions.FreeLevy(
            t=[c], w=[1.0], lam=1.0 / c, sigma=math.sqrt(params["s2"])).density(x)
    if task == "mp_times_mp":
        return lambda x: distributions.FussCatalan(p=2).density(x)
    raise Unsupported(task)


def _skrmt(task, params):
    if task != "mp_density":
        raise Unsupported(f"scikit-rmt has no free convolution routine for {task}")
    from skrmt.ensemble.spectral_law import MarchenkoPasturDistribution

    return lambda x: MarchenkoPasturDistribution(
        ratio=params["ratio"], beta=1, sigma=math.sqrt(params["variance"])).pdf(x)


def _rmtool(task, params):
    import numpy as np
    import rmtool

    def density(curve):
        def evaluate(x):
            return np.asarray(rmtool.Lmz2pdf(curve(), np.asarray(x)).density, dtype=float)
        return evaluate

    if task == "mp_density":
        if params["variance"] != 1.0:
            raise Unsupported("rmtool's wishartpol has unit variance")
        return density(lambda: rmtool.wishartpol(params["ratio"]))
    if task == "mp_plus_semicircle":
        if params["s2"] != 1.0:
            raise Unsupported("rmtool's wignerpol has unit variance")
        return density(lambda: rmtool.AplusB(rmtool.wishartpol(params["ratio"]),
                                             rmtool.wignerpol()))
    if task == "mp_times_mp":
        return density(lambda: rmtool.AtimesB(rmtool.wishartpol(1), rmtool.wishartpol(1)))
    raise Unsupported(task)


PEERS = {"freealg": ("freealg", _freealg), "scikit-rmt": ("skrmt", _skrmt),
         "rmtool": ("rmtool", _rmtool)}


def _version(distribution):
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def run(request):
    """Serve one request; return the JSON-ready answer."""
    import numpy as np

    peer, task, params = request["peer"], request["task"], request["params"]
    _, factory = PEERS[peer]
    x = np.asarray(request["x"], dtype=float)
    try:
        evaluate = factory(task, params)
    except Unsupported as exc:
        return {"ok": False, "unsupported": True, "error": str(exc), "version": _version(peer)}
    start = time.perf_counter()
    density = np.asarray(evaluate(x), dtype=float)
    cold = time.perf_counter() - start
    timing = time_call(lambda: evaluate(x), repeat=request.get("repeat", 5),
                       quick=request.get("quick", False))
    return {"ok": True, "version": _version(peer), "cold_seconds": cold, "time": timing,
            "density": density.tolist()}


def main():
    request = json.loads(sys.stdin.read())
    try:
        answer = run(request)
    except Exception as exc:  # reported to the parent, which prints it as a skip reason
        answer = {"ok": False, "unsupported": False,
                  "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
