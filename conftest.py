"""Collection rules for the whole suite (tests/ and the doctests of src/vecmode).

The examples in ``vecmode.RayVectorEnv``'s docstring need a Ray session: rather
than start one of its own for them (half a minute on a small machine), pytest's
doctest run leaves them out and ``tests/test_ray.py`` runs them in its session
(``test_the_docstring_examples_run``), or skips them with the module where Ray is
not installed. The module's other doctests need no Ray and run as usual.
"""

from __future__ import annotations

import pytest

#: Doctest items run by tests/test_ray.py instead, in its Ray session.
NEED_A_RAY_SESSION = frozenset({"vecmode.ray_vector_env.RayVectorEnv"})


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    deselected = [item for item in items if item.name in NEED_A_RAY_SESSION]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.name not in NEED_A_RAY_SESSION]
