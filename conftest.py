"""Collection for the whole repository (tests/conftest.py holds the test settings).

A module whose optional dependency is not installed is not collected for its
doctests: ``vecmode.sb3`` needs the ``sb3`` extra (its tests skip the same way).
"""

from __future__ import annotations

import importlib.util

collect_ignore: list[str] = []
if importlib.util.find_spec("stable_baselines3") is None:
    collect_ignore.append("src/vecmode/sb3.py")
