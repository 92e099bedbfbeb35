"""Gymnasium's reward transforms, right in every mode: NEXT_STEP's reset step
keeps reward 0 whatever the transform. ``clip`` is ``np.clip`` bit for bit, calling
its ufunc directly for a float array and scalar bounds (cheaper on a small batch)."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.wrappers import transform_reward

from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers.array_stats import ArrayPath
from vecmode.wrappers.base import RewardWrapper, SpaceEnv

try:  # the ufunc np.clip calls: NumPy 2's, else 1's
    _clip_ufunc: Any = importlib.import_module("numpy._core.umath").clip
except (ImportError, AttributeError):
    _clip_ufunc = importlib.import_module("numpy.core.umath").clip


def fast_bounds(low: Any, high: Any) -> bool:
    """Whether ``clip`` may call the ufunc: scalar bounds, neither zero nor NaN,
    ``low <= high``."""
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, (int, float, np.number)):
            return False
        if bound == 0 or math.isnan(bound):
            return False
    return bool(low <= high)


def clip(x: Any, low: Any, high: Any, out: Any = None, fast: bool = False) -> Any:
    """``np.clip(x, low, high, out=out)``; ``fast``: :func:`fast_bounds` holds."""
    if fast and type(x) is np.ndarray and x.dtype.kind == "f":
        return _clip_ufunc(x, low, high, out=out)
    # np.clip drops an integer array's out-of-range Python-int bound; the ufunc
    # would refuse it
    return np.clip(x, low, high, out=out)


def clip_symmetric(x: np.ndarray, bound: float, out: np.ndarray | None = None) -> Any:
    """``np.clip(x, -bound, bound, out=out)``, bit for bit (``bound >= 0``)."""
    return clip(x, -bound, bound, out, fast=bound > 0)


@supports(*MODES, array_native=True)
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


@supports(*MODES, array_native=True)
class ClipReward(ArrayPath, VectorizeTransformReward):
    """Gymnasium's ``ClipReward``; same arguments. Over torch or JAX batches, in
    their library (array bounds made once, on the batch's device)."""

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
        self._arm("rewards")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        self._bounds = tuple(  # type: ignore[assignment]
            b
            if b is None or isinstance(b, (int, float))
            else xp.asarray(b, device=self.array_device)
            for b in self._bounds
        )

    def _array_rewards(self, rewards: Any) -> Any:
        low, high = self._bounds
        return self.array_xp.clip(rewards, low, high)

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        low, high = self._bounds
        return clip(rewards, low, high, fast=self._fast)
