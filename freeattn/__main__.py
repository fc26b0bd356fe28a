"""``python -m freeattn``: the freeattn command line (see ``freeattn --help``)."""

import sys

from .cli._cli import main

if __name__ == "__main__":
    sys.exit(main())
