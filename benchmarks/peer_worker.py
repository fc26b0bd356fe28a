"""Time one peer library on one task; runs inside that peer's virtual environment.

Started by bench_peers.py as ``<venv>/bin/python peer_worker.py`` with a JSON request
on standard input::

    {"peer": "freealg", "task": "mp_density", "params": {...}, "x": [...],
     "repeat": 5, "quick": false}

and prints one JSON object on standard output: ``{"ok": true, "version": ...,
"cold_seconds": ..., "time": {"min": ..., "median": ...}, "baseline": {...},
"density": [...], "bands": [[lo, hi], ...] or null, "band_source": "..."}``, or
``{"ok": false, "unsupported": true|false, "error": "..."}``.  ``baseline`` is the
cost C of 10^4 batched 3 x 3 ``numpy.linalg.eigvals`` timed in this process right
before the task (recorded as a check of the peer's numpy; the table's ratios use the
C of the parent process).  It imports neither freeattn nor anything of the peer's
beyond its public API, and only calls the peer (rmtool is GPL: it is called here,
never copied).

Tasks and the calls made (each timed from scratch: build the law, evaluate on x),
with the peers' default accuracy settings:

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
- ``samplecov_two_atoms`` (values t, weights w, ratio c): the sample-covariance law
  of a population with atoms t (weights w).
  freealg ``distributions.DeformedMarchenkoPastur(t=t, w=w, c=c).density(x)``;
  rmtool ``Lmz2pdf(AtimesWish(atomLmz(t, w), c), x)``.
- ``sc_plus_two_atoms`` (atoms t, weights w, semicircle variance s2): SC(s2) boxplus
  the atoms.  freealg ``distributions.DeformedWigner(t=t, w=w, sigma=sqrt(s2)).density(x)``;
  rmtool ``Lmz2pdf(AplusB(wignerpol(), atomLmz(t, w)), x)`` (s2 = 1 only).

scikit-rmt has the Marchenko-Pastur law only (no free convolution, no population).

Bands: a peer's own support routine where it has one (freealg ``.support()``,
scikit-rmt ``lambda_minus``/``lambda_plus``), called on a separate object after the
timing; otherwise ``bands`` is null and bench_peers.py counts the bands of the
density on the grid.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _common import time_call, time_eigvals_baseline  # noqa: E402


class Unsupported(Exception):
    """The peer has no routine for this task (or these parameters)."""


def _freealg_bands(law):
    return [[float(lo), float(hi)] for lo, hi in law.support()]


def _freealg(task, params):
    """``(make_law, density(law, x), bands(law) or None)`` for freealg."""
    from freealg import distributions

    density = (lambda law, x: law.density(x))
    if task == "mp_density":
        make = (lambda: distributions.MarchenkoPastur(
            lam=params["ratio"], sigma=math.sqrt(params["variance"])))
    elif task == "mp_plus_semicircle":
        c = params["ratio"]
        make = (lambda: distributions.FreeLevy(t=[c], w=[1.0], lam=1.0 / c,
                                               sigma=math.sqrt(params["s2"])))
    elif task == "mp_times_mp":
        make = (lambda: distributions.FussCatalan(p=2))
    elif task == "samplecov_two_atoms":
        make = (lambda: distributions.DeformedMarchenkoPastur(
            t=params["values"], w=params["weights"], c=params["ratio"]))
    elif task == "sc_plus_two_atoms":
        make = (lambda: distributions.DeformedWigner(
            t=params["values"], w=params["weights"], sigma=math.sqrt(params["s2"])))
    else:
        raise Unsupported(task)
    return make, density, _freealg_bands


def _skrmt(task, params):
    if task != "mp_density":
        raise Unsupported("scikit-rmt has the Marchenko-Pastur law only (no free "
                          "convolution, no sample covariance of a population)")
    from skrmt.ensemble.spectral_law import MarchenkoPasturDistribution

    def make():
        return MarchenkoPasturDistribution(ratio=params["ratio"], beta=1,
                                           sigma=math.sqrt(params["variance"]))

    def bands(law):
        return [[float(law.lambda_minus), float(law.lambda_plus)]]

    return make, (lambda law, x: law.pdf(x)), bands


def _rmtool(task, params):
    import numpy as np
    import rmtool

    def density(curve, x):
        return np.asarray(rmtool.Lmz2pdf(curve, np.asarray(x)).density, dtype=float)

    if task == "mp_density":
        if params["variance"] != 1.0:
            raise Unsupported("rmtool's wishartpol has unit variance")
        make = (lambda: rmtool.wishartpol(params["ratio"]))
    elif task == "mp_plus_semicircle":
        if params["s2"] != 1.0:
            raise Unsupported("rmtool's wignerpol has unit variance")
        make = (lambda: rmtool.AplusB(rmtool.wishartpol(params["ratio"]), rmtool.wignerpol()))
    elif task == "mp_times_mp":
        make = (lambda: rmtool.AtimesB(rmtool.wishartpol(1), rmtool.wishartpol(1)))
    elif task == "samplecov_two_atoms":
        make = (lambda: rmtool.AtimesWish(rmtool.atomLmz(params["values"], params["weights"]),
                                          params["ratio"]))
    elif task == "sc_plus_two_atoms":
        if params["s2"] != 1.0:
            raise Unsupported("rmtool's wignerpol has unit variance")
        make = (lambda: rmtool.AplusB(rmtool.wignerpol(),
                                      rmtool.atomLmz(params["values"], params["weights"])))
    else:
        raise Unsupported(task)
    return make, density, None


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
    repeat, quick = request.get("repeat", 5), request.get("quick", False)
    try:
        make, density, bands = factory(task, params)
    except Unsupported as exc:
        return {"ok": False, "unsupported": True, "error": str(exc), "version": _version(peer)}

    def evaluate():
        return density(make(), x)

    start = time.perf_counter()
    values = np.asarray(evaluate(), dtype=float)
    cold = time.perf_counter() - start
    baseline = time_eigvals_baseline(repeat=repeat, quick=quick)
    timing = time_call(evaluate, repeat=repeat, quick=quick)
    answer = {"ok": True, "version": _version(peer), "cold_seconds": cold, "time": timing,
              "baseline": baseline, "density": values.tolist(), "bands": None,
              "band_source": None}
    if bands is not None:
        try:
            answer["bands"] = bands(make())
            answer["band_source"] = "support routine"
        except Exception as exc:  # the density still counts; the bands come from the grid
            answer["band_error"] = f"{type(exc).__name__}: {exc}"
    return answer


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
