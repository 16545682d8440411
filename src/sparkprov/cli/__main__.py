"""``python -m sparkprov.cli``: the ``sparkprov`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
