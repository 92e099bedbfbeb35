"""``python -m vecmode``: the vecmode command line."""

from vecmode.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
