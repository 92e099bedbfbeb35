"""The registry tests' fixture: undo what a test registers."""

from __future__ import annotations

import pytest

import vecmode
from vecmode.registry import declare


def registrations() -> set:
    """The classes and names registered now."""
    return {*declare.registered, *declare.pending, *declare.resolved}


@pytest.fixture
def clean_registry():
    """Undo what a test registers, so tests don't leak declarations."""
    before = registrations()
    yield
    for target in registrations() - before:
        vecmode.unregister(target)
