"""Moved to :mod:`vecmode.testing.wrapper`: an alias while ``vecmode.cli`` and its
tests import it from here."""

from vecmode.testing.wrapper import *  # noqa: F403
from vecmode.testing.wrapper.driver import PARTIAL_RESET_HINT


def conformance_partial_reset_hint() -> str:
    """:data:`PARTIAL_RESET_HINT`, for ``tests/cli`` until it reads the constant."""
    return PARTIAL_RESET_HINT
