"""The remote cores' layouts: how many workers or actors, which sub-envs each
runs, and whether processes spin as they wait."""

from __future__ import annotations

import os
from typing import Any

from vecmode.core import is_int

#: Seconds a process spins for the next message or answer before it blocks.
SPIN = 0.0003
#: A worker stops spinning once a message comes this many spins after its answer.
SPIN_AGAIN = 2.0


def positive_count(name: str, value: Any) -> int | None:
    """``value`` (an int >= 1, or None) as an int; else a ValueError."""
    if value is None:
        return None
    if not is_int(value) or value < 1:
        raise ValueError(f"{name} must be None or an int >= 1, got {value!r}.")
    return int(value)


def usable_cpus() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_num_workers(num_envs: int) -> int:
    """One worker per CPU, at most one per sub-env."""
    return max(1, min(num_envs, usable_cpus()))


def default_layout(
    num_envs: int, num_workers: int | None, in_parent: int | None
) -> tuple[int, int]:
    """``(num_workers, in_parent)``: by default a worker per CPU (but one)."""
    if not in_parent:
        workers = default_num_workers(num_envs) if num_workers is None else num_workers
        return min(num_envs, workers), 0
    remote = num_envs - in_parent
    if num_workers is None:
        num_workers = max(1, min(remote, usable_cpus() - 1))
    return min(remote, num_workers), in_parent


def slices(num_envs: int, num_workers: int) -> list[tuple[int, int]]:
    """Contiguous ``(start, stop)`` slices of sizes differing by one at most."""
    size, extra = divmod(num_envs, num_workers)
    out, start = [], 0
    for w in range(num_workers):
        stop = start + size + (1 if w < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def spin_seconds(num_workers: int) -> float:
    """The parent's spin: :data:`SPIN` when each process has a CPU, else 0."""
    return SPIN if num_workers + 1 <= usable_cpus() else 0.0


def worker_spin_seconds() -> float:
    """A worker's spin (yielding its CPU): :data:`SPIN` with two CPUs, else 0."""
    return SPIN if usable_cpus() > 1 else 0.0


def actor_count(
    num_envs: int, num_actors: int | None, envs_per_actor: int | None, cpus: int
) -> int:
    """The Ray core's number of actors (by default one per CPU of the cluster),
    at most one per sub-env."""
    if envs_per_actor is not None:
        return -(-num_envs // envs_per_actor)
    wanted = cpus if num_actors is None else num_actors
    return max(1, min(num_envs, wanted))
