"""Collection rules for the whole suite (tests/ and the doctests of src/vecmode);
tests/conftest.py holds the test settings.

A module whose optional dependency is not installed is not collected for its
doctests: ``vecmode.sb3`` needs the ``sb3`` extra, ``tests/cores/ray_cluster_driver.py``
Ray (their tests skip the same way).

The examples in ``vecmode.RayVectorEnv``'s docstring need a Ray session: rather
than start one of its own for them (half a minute on a small machine), pytest's
doctest run leaves them out and ``tests/cores/test_ray.py`` runs them in its session
(``test_the_docstring_examples_run``), or skips them with the module where Ray is
not installed. The module's other doctests need no Ray and run as usual.
"""

from __future__ import annotations

import importlib.util

import pytest

collect_ignore: list[str] = []
if importlib.util.find_spec("stable_baselines3") is None:
    collect_ignore.append("src/vecmode/sb3")
if importlib.util.find_spec("ray") is None:  # the multi-node test's child process
    collect_ignore.append("tests/cores/ray_cluster_driver.py")

#: Doctest items run by tests/cores/test_ray.py instead, in its Ray session.
NEED_A_RAY_SESSION = frozenset({"vecmode.ray_vector_env.RayVectorEnv"})


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    deselected = [item for item in items if item.name in NEED_A_RAY_SESSION]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.name not in NEED_A_RAY_SESSION]
