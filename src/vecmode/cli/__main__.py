"""``python -m vecmode.cli``, as ``python -m vecmode``."""

import sys

from vecmode.cli import main

sys.exit(main())
