"""``python -m ubpe``: the ``ubpe`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
