"""Test configuration: hypothesis profiles, JAX's compilation cache, a warning
xdist causes, and SB3's log folders and Ray's session folders kept out of the
system's temp dir.

``CI`` set in the environment (as ``.ci/run`` does) selects the ``ci`` profile:
derandomized with a bounded number of examples, so a landing never depends on luck.
``HYPOTHESIS_PROFILE`` picks a profile explicitly (``dev``, ``ci`` or ``thorough``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.wrappers.cases import FRESH


def _jax_compilation_cache(config: pytest.Config) -> None:
    """JAX's persistent compilation cache in a folder of this test process's
    own, removed at the end (the subprocesses it runs use it too): a jitted
    function's own cache lives as long as the function, and the tests build
    the same env or stack again and again, so XLA compiled the same program
    hundreds of times. Every program is kept, however quick to compile. Not in
    xdist's controller (it runs no test), nor where the caller chose a folder."""
    if config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput"):
        return
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="vmjax")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ.update(
        JAX_COMPILATION_CACHE_DIR=folder,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
    )


def pytest_configure(config: pytest.Config) -> None:
    """JAX's compilation cache (above); and under pytest-xdist, each worker
    process runs a thread of its own (execnet's), so on Python 3.12 and later
    every fork of it, as the async env's tests do on purpose, warns that "this
    process is multi-threaded". Known, and harmless for these short-lived
    children; run with ``-n 0`` and the warning would be vecmode's (it shows
    then)."""
    _jax_compilation_cache(config)
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


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folders_in_pytest_tmp(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """SB3's default logger (``learn()`` with no logger of the caller's, as the
    docs' SB3 example trains) makes its folder, ``$SB3_LOGDIR`` or else a new
    ``SB3-<date>`` one per call in the system's temp dir, where it stays: this
    session's is in pytest's temp dir (its subprocesses' too, by the environment)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.getbasetemp() / "sb3-logs"))
        yield


@pytest.fixture(scope="session", autouse=True)
def ray_sessions_removed() -> Iterator[None]:
    """Ray keeps every session's folder (``<temp>/ray/session_*``, logs and
    sockets; about 0.7 MB each, several per run) in the system's temp dir:
    ``$RAY_TMPDIR`` puts this run's (its subprocesses' too) in a folder removed at
    the end. A short one: Ray's sockets live in it, and a socket's path is limited
    to 107 bytes."""
    folder = tempfile.mkdtemp(prefix="vmray")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", folder)
        yield
    shutil.rmtree(folder, ignore_errors=True)


# pygame (HumanRendering) draws into no window, and says nothing when imported
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


#: Doctests that need optional libraries (by the names pytest gives them): skipped
#: where one is missing. The jax ones also run only in a fresh interpreter, from
#: tests/test_isolated.py (once jax is imported, a later os.fork() in the session,
#: as async envs' workers do, risks a deadlock).
OPTIONAL_DOCTESTS = {
    "vecmode.wrappers.array_conversion.ArrayConversion": ("array_api_compat",),
    "vecmode.wrappers.array_conversion.NumpyToTorch": ("array_api_compat", "torch"),
    "vecmode.wrappers.array_conversion.JaxToNumpy": ("array_api_compat", "jax"),
    "vecmode.wrappers.array_conversion.JaxToTorch": (
        "array_api_compat",
        "jax",
        "torch",
    ),
    "vecmode.wrappers.rendering.FinalFrameInfo": ("pygame",),
    "vecmode.wrappers.rendering.RecordVideo": ("moviepy", "pygame"),
}
ISOLATED_DOCTESTS = frozenset(name for name in OPTIONAL_DOCTESTS if ".Jax" in name)


#: Tests that compute with jax: they run last (``_jax_last``).
JAX_PATHS = ("tests/simulators/", "tests/batched/", "docs/simulators.md")


def _jax_last(items: list[pytest.Item]) -> None:
    """Move the tests that compute with jax after every other one (a stable
    sort). Once JAX has computed, its threads make a later ``os.fork()`` in the
    same process (an async env's workers) risk a deadlock or a crash; xdist
    hands tests to its workers in this order, so no worker forks after one."""
    items.sort(
        key=lambda i: any(p in i.nodeid for p in JAX_PATHS) or "jax" in i.nodeid.lower()
    )


def _jax_not_started() -> None:
    """Fail collection if importing a test module started JAX's backend (a jnp
    array at module level): its threads would reach every fork of the session,
    whatever the order of the tests."""
    xla_bridge = sys.modules.get("jax._src.xla_bridge")
    if xla_bridge is not None and getattr(xla_bridge, "_backends", None):
        raise pytest.UsageError(
            "a test module started JAX's backend at import: build jax arrays "
            "inside tests or fixtures, not at module level"
        )


def pytest_collection_modifyitems(config, items):
    _jax_last(items)
    _jax_not_started()
    for item in items:
        needs = OPTIONAL_DOCTESTS.get(item.name)
        if needs is None:
            continue
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(missing)}"))
        elif item.name in ISOLATED_DOCTESTS and not os.environ.get(FRESH):
            item.add_marker(
                pytest.mark.skip(reason="imports jax: runs in tests/test_isolated.py")
            )
