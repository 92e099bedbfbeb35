"""The array-batch tests' JAX runs in float64 (``support.xp_of`` turns it on):
each test leaves ``jax_enable_x64`` as it found it, for the tests after it."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def jax_x64_restored() -> Iterator[None]:
    jax = sys.modules.get("jax")
    was = None if jax is None else jax.config.jax_enable_x64
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", bool(was))
