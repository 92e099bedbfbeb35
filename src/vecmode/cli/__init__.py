"""The ``vecmode`` command line (also ``python -m vecmode``).

Its commands, options, exit codes and JSON documents are in docs/cli.md. One
module per command (``timeline``, ``table``, ``check``, ``conform``, ``probe``),
each with its row of the parser's table (``COMMAND``); ``spec`` reads the names
of wrappers and factories; ``dispatch`` builds the parser and runs a command.
"""

from vecmode.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
    JSON_SCHEMA_VERSION,
)
from vecmode.cli.dispatch import main

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "JSON_SCHEMA_VERSION",
    "main",
]
