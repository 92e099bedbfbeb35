"""``python -m vecmode``: the vecmode command line."""

import sys

from vecmode.cli import main

if __name__ == "__main__":
    sys.exit(main())
