"""Sub-envs and vector envs that both directions' SB3 tests run."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import vecmode
from vecmode import AutoresetMode
from vecmode.sb3 import to_sb3
from vecmode.testing import ScheduledEnv

NEXT, SAME, DISABLED = (
    AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED,
)
MODES = (NEXT, SAME, DISABLED)
FORK = "fork"


def limited(fn: Any, steps: int) -> gym.Env:
    return gym.wrappers.TimeLimit(fn(), max_episode_steps=steps)


def scheduled(obs_type: str = "box", action_type: str = "discrete") -> list:
    """Four scheduled sub-envs with rich infos (reset infos drawn from the
    sub-env's seeded generator): 0 and 1 end their first episodes together, then
    apart (1 is cut by a TimeLimit); 2 ends apart from the others; 3 ends every
    episode both terminated and truncated (its own end and its TimeLimit agree)."""
    kw = {"action_type": action_type}
    se = functools.partial
    return [
        se(ScheduledEnv, 0, (3, 5), (True, False), obs_type, **kw),
        se(limited, se(ScheduledEnv, 1, (3, 5), (False,), obs_type, **kw), 4),
        se(ScheduledEnv, 2, (2, 6), (False, True), obs_type, **kw),
        se(limited, se(ScheduledEnv, 3, (4,), (False,), obs_type, **kw), 4),
    ]


def cartpoles(n: int = 4, limit: int = 30) -> list:
    """CartPoles cut at ``limit`` steps: random episodes (seeded), TimeLimit."""
    return [functools.partial(gym.make, "CartPole-v1", max_episode_steps=limit)] * n


SUB_ENVS = {
    "box": scheduled,
    "discrete": functools.partial(scheduled, "discrete"),
    "dict": functools.partial(scheduled, "dict"),
    "tuple": functools.partial(scheduled, "tuple"),
    "image": functools.partial(scheduled, "image"),
    "box-actions": functools.partial(scheduled, "box", "box"),
    "cartpole": cartpoles,
}


def vecmode_env(fns: list, mode: AutoresetMode, core: str = "sync") -> Any:
    base = (
        vecmode.SyncVectorEnv(fns)
        if core == "sync"
        else vecmode.AsyncVectorEnv(fns, num_workers=2, context=FORK)
    )
    return vecmode.with_autoreset(base, mode)


class Tagged(ScheduledEnv):
    """A scheduled env with a method that changes it and frames to render."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, index: int = 0, render_mode: str | None = None) -> None:
        super().__init__(index, lengths=(3, 4))
        self.render_mode = render_mode
        self.bumps = 0

    def bump(self, by: int = 1) -> tuple[int, int]:
        self.bumps += by
        return self.index, self.bumps

    def render(self) -> np.ndarray:  # type: ignore[override]
        return np.full((4, 6, 3), 10 * self.index + self.t, dtype=np.uint8)


def tagged_fns(render_mode: str | None = None) -> list:
    """Four Tagged sub-envs, 1 wrapped in SB3's Monitor, 3 in a TimeLimit."""
    se = functools.partial
    return [
        se(Tagged, 0, render_mode),
        se(lambda i: Monitor(Tagged(i, render_mode)), 1),
        se(Tagged, 2, render_mode),
        se(limited, se(Tagged, 3, render_mode), 50),
    ]


CORES = {
    "vecmode-sync": lambda fns: to_sb3(vecmode_env(fns, SAME)),
    "vecmode-async": lambda fns: to_sb3(vecmode_env(fns, NEXT, "async")),
    "gymnasium-sync": lambda fns: to_sb3(gym.vector.SyncVectorEnv(fns)),
}


def sb3_vec_env(kind: str, fns: list) -> Any:
    if kind == "DummyVecEnv":
        return DummyVecEnv(fns)
    return SubprocVecEnv(fns, start_method=FORK)


ACTION_SPACES = {
    "tuple": gym.spaces.Tuple((gym.spaces.Discrete(5), gym.spaces.Discrete(5))),
    "dict": gym.spaces.Dict(
        {
            "x": gym.spaces.Discrete(3),
            "y": gym.spaces.Box(0, 1, (2,), np.float32),
            "z": gym.spaces.Tuple((gym.spaces.MultiBinary(2), gym.spaces.Discrete(4))),
        }
    ),
}


class ActionRecorder(gym.Env):
    """Keeps every action it is given (in ``received``); episodes of 3 steps."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, space: str = "tuple") -> None:
        self.action_space = ACTION_SPACES[space]
        self.received: list[Any] = []
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.received.append(action)
        self.t += 1
        return np.zeros(1, np.float32), 1.0, self.t == 3, False, {}


def recorders(space: str, n: int = 3) -> list:
    return [functools.partial(ActionRecorder, space)] * n


class Faulty(ScheduledEnv):
    """Sub-env ``bad`` raises ValueError at step ``at`` of each episode, or, with
    ``at=0``, in its second reset (only); episodes of 50 steps."""

    def __init__(self, index: int = 0, bad: int = 1, at: int = 2) -> None:
        super().__init__(index, lengths=(50,))
        self.bad, self.at = bad, at

    def reset(self, *, seed=None, options=None):
        if self.index == self.bad and self.at == 0 and self.resets == 1:
            self.at = -1  # once
            raise ValueError("the sub-env's own bug, in reset")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.index == self.bad and self.at and self.t == self.at:
            raise ValueError("the sub-env's own bug, in step")
        return super().step(action)
