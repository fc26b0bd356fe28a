"""Front end, ``cli``: the ``freeattn`` command line.

It parses arguments without importing the mathematics; each subcommand imports
what it needs.  Front ends (``cli``, :mod:`freeattn.plotting`,
:mod:`freeattn.torch`) may import every layer.
"""
