"""Test configuration: hypothesis profiles.

``CI`` set in the environment (as ``.ci/run`` does) selects the ``ci`` profile:
derandomized with a bounded number of examples, so a landing never depends on luck.
``HYPOTHESIS_PROFILE`` picks a profile explicitly (``dev``, ``ci`` or ``thorough``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
