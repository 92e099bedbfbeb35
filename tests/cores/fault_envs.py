"""Sub-envs that fail on purpose, for the fault-injection tests.

Importable (not defined in a test), so they also work with the ``spawn`` and
``forkserver`` start methods. Each fails at its ``at``-th call to ``step`` (counted
over its life) when it is the faulty sub-env; the others are ``ScheduledEnv``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import pickle
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np

from vecmode.testing.envs import ScheduledEnv

FAULTS = (
    "raise_step",
    "raise_reset",
    "raise_interrupt",
    "raise_exit",
    "hang",
    "slow",
    "exit",
    "segfault",
    "close_raises",
    "close_hangs",
    "unpicklable_info",
    "info_not_dict",
    "unpicklable_obs",
    "flag_array",
    "raise_base",
)


class Unpicklable:
    """A value pickle refuses (a lock inside)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __reduce__(self) -> Any:
        raise pickle.PicklingError("this value cannot be pickled, on purpose")


class Abandoned(BaseException):
    """A BaseException that is no Exception, as GeneratorExit and
    asyncio.CancelledError are."""


class FaultyEnv(ScheduledEnv):
    """A ScheduledEnv (episodes of 1000 steps) that fails as ``fault`` says at its
    ``at``-th step (``raise_reset``: its ``at``-th reset; ``close_raises``: in
    ``close``)."""

    def __init__(self, index: int = 0, fault: str = "raise_step", at: int = 2) -> None:
        super().__init__(index, lengths=(1000,))
        self.fault, self.at = fault, at
        self.steps_taken = 0

    def reset(self, *, seed=None, options=None):
        if self.fault == "raise_reset" and self.resets + 1 == self.at:
            self.resets += 1
            raise ValueError(f"reset of sub-env {self.index} failed on purpose")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps_taken += 1
        obs, reward, terminated, truncated, info = super().step(action)
        if self.steps_taken != self.at:
            return obs, reward, terminated, truncated, info
        if self.fault == "raise_step":
            raise ValueError(f"step of sub-env {self.index} failed on purpose")
        if self.fault == "raise_interrupt":  # its own code, no Ctrl-C
            raise KeyboardInterrupt(f"sub-env {self.index}'s code raised it")
        if self.fault == "raise_exit":  # sys.exit() in its code (a game's "quit")
            raise SystemExit(3)
        if self.fault == "raise_base":
            raise Abandoned(f"sub-env {self.index} gave up")
        if self.fault == "hang":
            time.sleep(3600)
        if self.fault == "slow":
            time.sleep(1.0)
        if self.fault == "exit":
            os._exit(3)
        if self.fault == "segfault":
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        if self.fault == "unpicklable_info":
            info = {**info, "bad": Unpicklable()}
        if self.fault == "info_not_dict":
            info = ["not", "a", "dict"]
        if self.fault == "unpicklable_obs":
            obs = Unpicklable()
        if self.fault == "flag_array":  # two flags where one is due
            terminated, truncated = True, np.array([True, True])
        return obs, reward, terminated, truncated, info

    def close(self):
        super().close()
        if self.fault == "close_raises":
            raise RuntimeError(f"close of sub-env {self.index} failed on purpose")
        if self.fault == "close_hangs":
            time.sleep(3600)


class DictFaultyEnv(FaultyEnv):
    """A FaultyEnv whose observations are dicts, ``{"obs": ...}`` (a batch that
    is not a Box: an actor or a worker without shared memory pickles them); an
    unpicklable observation is returned as it is."""

    def __init__(self, index: int = 0, fault: str = "raise_step", at: int = 2) -> None:
        super().__init__(index, fault, at)
        self.observation_space = gym.spaces.Dict({"obs": self.observation_space})

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return {"obs": obs}, info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if not isinstance(obs, Unpicklable):
            obs = {"obs": obs}
        return obs, reward, terminated, truncated, info


def env_fns(num_envs: int, faulty: dict[int, str], at: int = 2) -> list:
    """``num_envs`` sub-env factories; sub-env ``i`` in ``faulty`` fails as said."""
    return [
        functools.partial(FaultyEnv, i, faulty[i], at)
        if i in faulty
        else functools.partial(ScheduledEnv, i, (1000,))
        for i in range(num_envs)
    ]
