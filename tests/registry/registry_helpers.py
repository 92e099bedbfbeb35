"""What the registry's tests share: envs in each mode, and wrappers to declare."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorWrapper

import vecmode
from tests.helpers import scheduled_fns

NS, SS, D = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED


def core(num_envs: int = 2) -> vecmode.SyncVectorEnv:
    return vecmode.SyncVectorEnv(scheduled_fns(num_envs, lengths=[(2,), (3,)]))


def in_mode(mode, num_envs: int = 2):
    return vecmode.with_autoreset(core(num_envs), mode)


def gym_env(mode, num_envs: int = 2):
    return gym.vector.SyncVectorEnv(
        scheduled_fns(num_envs, lengths=[(2,), (3,)]), autoreset_mode=mode
    )


def undeclared_env(num_envs: int = 2):
    envs = gym_env(NS, num_envs)
    envs.metadata = {k: v for k, v in envs.metadata.items() if k != "autoreset_mode"}
    return envs


def usable(envs) -> None:
    """The env still resets and steps (a refused wrapper left it untouched)."""
    envs.reset(seed=0)
    envs.step(np.zeros(envs.num_envs, dtype=int))


class Recorder(VectorWrapper):
    """A wrapper we "don't own": it records that its __init__ ran."""

    built = 0

    def __init__(self, env, scale: float = 1.0) -> None:
        type(self).built += 1
        super().__init__(env)
        self.scale = scale


@vecmode.supports(NS, "Disabled", why={SS: "It ignores info['final_obs']."})
class NoSameStep(VectorWrapper):
    built = 0

    def __init__(self, env) -> None:
        type(self).built += 1
        super().__init__(env)
