"""What the Ray core's test files share: one local Ray session per module, envs
built once per module, and whether actors are gone."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vecmode import AutoresetMode

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
MODES = list(AutoresetMode)
#: A custom resource of the test session, to see actor_options reach Ray.
RESOURCE, RESOURCE_TOTAL = "vecmode_test", 4.0


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One local Ray for the module (``address="local"``: never a cluster that
    happens to run on this machine). Its autoscaler's events (the tip about
    ``ray status``, a resource request no node can fulfil) are turned off: they
    reach this process's stdout at any later moment, a doctest's output too."""
    events = os.environ.get("RAY_SCHEDULER_EVENTS")
    os.environ["RAY_SCHEDULER_EVENTS"] = "0"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        resources={RESOURCE: RESOURCE_TOTAL},
        log_to_driver=False,  # nor the actors' output
    )
    yield
    ray.shutdown()
    if events is None:
        os.environ.pop("RAY_SCHEDULER_EVENTS", None)
    else:
        os.environ["RAY_SCHEDULER_EVENTS"] = events


@pytest.fixture(scope="module")
def shared():
    """Envs built once for the module, by name (closed at its end)."""
    made: dict[str, Any] = {}

    def get(name: str, build):
        if name not in made:
            made[name] = build()
        return made[name]

    yield get
    for envs in made.values():
        envs.close()


#: The attributes of the test sub-envs that change as they run, or that tests set.
RESTART = ("episode", "t", "resets", "lengths", "truncate")


def restart(core: Any, fns: list, **attrs: Any) -> None:
    """Give every sub-env the state of a new one built by ``fns`` (then set
    ``attrs``), so that a reused env runs like a new one from its next seeded
    reset."""
    fresh = [fn() for fn in fns]
    for name in RESTART:
        if hasattr(fresh[0], name):
            core.set_attr(name, [getattr(env, name) for env in fresh])
    for name, value in attrs.items():
        core.set_attr(name, value)


def live_actors() -> set[str]:
    """The actors Ray has not marked dead (the GCS's table: ``ray.util.state``
    needs the dashboard)."""
    from ray._private import state

    return {aid for aid, info in state.actors().items() if info["State"] != "DEAD"}


def assert_no_actor_left(envs: Any, before: set[str]) -> None:
    """No actor of ``envs`` is alive in Ray, and their processes are gone."""
    assert live_actors() - before == set(), "an actor was left alive"
    pids = envs.unwrapped.pids
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        running = [pid for pid in pids if _running(pid)]
        if not running:
            return
        time.sleep(0.05)
    pytest.fail(f"actor processes {running} still run after close()")


def wait_gone(pid: int, seconds: float = 10.0) -> None:
    """Wait until process ``pid`` has exited (``ray.kill`` returns before)."""
    deadline = time.monotonic() + seconds
    while _running(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"actor process {pid} still runs {seconds} s after ray.kill")
        time.sleep(0.02)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between the calls
        return False


def writeable_arrays(value: Any, where: str = "") -> list[str]:
    """Where ``value`` holds a read-only array (none should reach the caller)."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return [where]
        if value.dtype == object:
            return [
                p
                for i, v in enumerate(value.flat)
                for p in writeable_arrays(v, f"{where}[{i}]")
            ]
        return []
    if isinstance(value, dict):
        return [
            p for k, v in value.items() for p in writeable_arrays(v, f"{where}.{k}")
        ]
    if isinstance(value, (list, tuple)):
        return [
            p for i, v in enumerate(value) for p in writeable_arrays(v, f"{where}[{i}]")
        ]
    return []
