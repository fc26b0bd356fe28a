"""Layer 0, ``core``: errors, argument checks, solver options, tolerances, BLAS threads, report rendering.

It owns :class:`~freeattn.ConvergenceError`, the argument checks of every public
function, :class:`~freeattn.SolverOptions`, the named tolerances, the BLAS
thread limiter and the report documents (``Document``, ``render``).
It imports nothing from freeattn (layers, lowest first: core, algebra, laws,
compose, attention, montecarlo, then the front ends cli, plotting, torch).
"""
