"""Test configuration: hypothesis profiles, and a warning xdist causes.

``CI`` set in the environment (as ``.ci/run`` does) selects the ``ci`` profile:
derandomized with a bounded number of examples, so a landing never depends on luck.
``HYPOTHESIS_PROFILE`` picks a profile explicitly (``dev``, ``ci`` or ``thorough``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker process runs a thread of its own (execnet's),
    so on Python 3.12 and later every fork of it, as the async env's tests do on
    purpose, warns that "this process is multi-threaded". Known, and harmless for
    these short-lived children; run with ``-n 0`` and the warning would be
    vecmode's (it shows then)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        config.addinivalue_line(
            "filterwarnings",
            r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\) "
            r"may lead to deadlocks:DeprecationWarning",
        )


settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
