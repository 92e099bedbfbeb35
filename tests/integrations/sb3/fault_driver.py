"""Runs one from_sb3 fault case in a fresh process and prints what happened as
JSON (``tests/integrations/sb3/test_from_sb3.py`` runs it under a hard time limit).

Usage: ``python -m tests.integrations.sb3.fault_driver SOURCE AT``, SOURCE one of
``sync-core``, ``DummyVecEnv``, ``fork``, ``forkserver`` (SubprocVecEnv's start
method), AT the step sub-env 1 raises at (0: in the second reset); a third
argument ``every``: every sub-env raises there.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")  # (pytest's doctest run imports this)

from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from tests.integrations.sb3.envs import SAME, Faulty, vecmode_env
from vecmode.sb3 import from_sb3


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` returned (observations as lists), or what it raised."""
    try:
        result = call()
    except Exception as exc:
        return {
            "raised": [cls.__name__ for cls in type(exc).__mro__],
            "index": getattr(exc, "index", None),
            "method": getattr(exc, "method", None),
            "lost": getattr(exc, "lost", None),
            "indices": getattr(exc, "indices", None),
        }
    return np.asarray(result[0]).tolist()


def main(source: str, at: int, every: bool = False) -> dict[str, Any]:
    fns = [functools.partial(Faulty, i, i if every else 1, at) for i in range(3)]
    if source == "sync-core":
        envs = vecmode_env(fns, SAME)
    elif source == "DummyVecEnv":
        envs = from_sb3(DummyVecEnv(fns))
    else:
        envs = from_sb3(SubprocVecEnv(fns, start_method=source))
    zeros = np.zeros(3, dtype=np.int64)
    envs.reset(seed=0)
    for _ in range(at):
        envs.step(zeros)
    report = {
        "fault": outcome(lambda: envs.reset(seed=1) if at == 0 else envs.step(zeros)),
        "awaiting_reset": envs.unwrapped.awaiting_reset.tolist(),
        "step": outcome(lambda: envs.step(zeros)),
    }
    mask = envs.unwrapped.awaiting_reset
    report["masked reset"] = outcome(lambda: envs.reset(options={"reset_mask": mask}))
    report["then step"] = outcome(lambda: envs.step(zeros))
    envs.close()
    report["processes left"] = len(multiprocessing.active_children())
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), "every" in sys.argv[3:])))
