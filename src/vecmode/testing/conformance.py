"""Moved to :mod:`vecmode.testing.wrapper`; kept while ``vecmode.cli`` (and its
tests) still import from here."""

from vecmode.testing.wrapper import (
    BASES,
    ConformanceError,
    WrapperConformance,
    WrapperReport,
    check_wrapper,
    episode_statistics,
)
from vecmode.testing.wrapper.driver import PARTIAL_RESET_HINT

__all__ = [
    "BASES",
    "PARTIAL_RESET_HINT",
    "ConformanceError",
    "WrapperConformance",
    "WrapperReport",
    "check_wrapper",
    "episode_statistics",
]
