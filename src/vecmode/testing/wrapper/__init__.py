"""The wrapper kit: :func:`check_wrapper`, its report and its test mixin."""

from vecmode.testing.wrapper.check import (
    WrapperCheck,
    check_wrapper,
    episode_statistics,
)
from vecmode.testing.wrapper.events import PROPERTIES, ConformanceError
from vecmode.testing.wrapper.mixin import WrapperConformance
from vecmode.testing.wrapper.report import WrapperReport
from vecmode.testing.wrapper.schedules import BASES, DEFAULT_BASES

__all__ = [
    "BASES",
    "DEFAULT_BASES",
    "PROPERTIES",
    "ConformanceError",
    "WrapperCheck",
    "WrapperConformance",
    "WrapperReport",
    "check_wrapper",
    "episode_statistics",
]
