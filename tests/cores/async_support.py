"""What the async core's test files share: building an env, a hang's deadline,
whether processes are gone, and a run beside Gymnasium's and the sync core."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal

import gymnasium as gym

import vecmode
from tests.helpers import drive, make_script
from vecmode import AsyncVectorEnv, AutoresetMode

MODES = list(AutoresetMode)
FORK = "fork"


def make_async(fns, **kwargs) -> AsyncVectorEnv:
    kwargs.setdefault("context", FORK)
    kwargs.setdefault("num_workers", 2)
    return AsyncVectorEnv(fns, **kwargs)


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) if the block takes too long."""

    def alarm(signum, frame):
        raise AssertionError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def gone(pids) -> bool:
    """Whether every process in ``pids`` has exited and been reaped."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    children = {child.pid for child in multiprocessing.active_children()}
    return not children & set(pids)


def run_three(fns_factory, mode, steps=30, seed=1, mask_prob=0.3, **kwargs):
    """Gymnasium's async env, vecmode's sync env and vecmode's async env, on one
    script; return the three runs."""
    reference = gym.vector.AsyncVectorEnv(
        fns_factory(),
        autoreset_mode=mode,
        context=FORK,
        shared_memory=kwargs.get("shared_memory", True),
        copy=kwargs.get("copy", True),
    )
    sync = vecmode.with_autoreset(vecmode.SyncVectorEnv(fns_factory()), mode)
    ours = vecmode.with_autoreset(make_async(fns_factory(), **kwargs), mode)
    try:
        script = make_script(reference, steps, seed=seed, mask_prob=mask_prob)
        disabled = mode is AutoresetMode.DISABLED
        return (
            drive(reference, script, disabled),
            drive(sync, script, disabled),
            drive(ours, script, disabled),
        )
    finally:
        reference.close()
        sync.close()
        ours.close()
