"""Gymnasium's reward transforms, right in every mode: NEXT_STEP's reset step
keeps reward 0 whatever the transform."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.wrappers import transform_reward

from vecmode.wrappers.base import RewardWrapper, SpaceEnv
from vecmode.wrappers.clipping import clip, fast_bounds


class TransformReward(RewardWrapper):
    """Gymnasium's ``TransformReward``: ``func`` maps each batch of rewards.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import TransformReward
    >>> envs = TransformReward(vecmode.make_vec("CartPole-v1", 2, "sync"),
    ...     func=lambda rewards: rewards * 10)
    >>> _ = envs.reset(seed=0)
    >>> envs.step(np.array([0, 1]))[1]
    array([10., 10.])
    >>> envs.close()
    """

    def __init__(
        self, env: VectorEnv, func: Callable[[np.ndarray], np.ndarray]
    ) -> None:
        super().__init__(env)
        self.func = func

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        return self.func(rewards)


class VectorizeTransformReward(RewardWrapper):
    """Gymnasium's ``VectorizeTransformReward``; same arguments."""

    def __init__(
        self,
        env: VectorEnv,
        wrapper: type[transform_reward.TransformReward],
        **kwargs: Any,
    ) -> None:
        super().__init__(env)
        self.wrapper = wrapper(SpaceEnv(), **kwargs)
        self._func = self.wrapper.func

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        out = np.array(rewards, copy=True)
        func = self._func
        for i, r in enumerate(out):
            out[i] = func(r)
        return out


class ClipReward(VectorizeTransformReward):
    """Gymnasium's ``ClipReward``; same arguments."""

    def __init__(
        self,
        env: VectorEnv,
        min_reward: float | np.ndarray | None = None,
        max_reward: float | np.ndarray | None = None,
    ) -> None:
        super().__init__(
            env,
            transform_reward.ClipReward,
            min_reward=min_reward,
            max_reward=max_reward,
        )
        self._bounds = (min_reward, max_reward)
        self._fast = fast_bounds(min_reward, max_reward)

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        low, high = self._bounds
        return clip(rewards, low, high, fast=self._fast)
