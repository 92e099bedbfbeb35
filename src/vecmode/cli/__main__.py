"""``python -m vecmode.cli``, as ``python -m vecmode``."""

from vecmode.cli import main

raise SystemExit(main())
