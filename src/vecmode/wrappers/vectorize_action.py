"""Gymnasium's action transforms, right in every mode; unlike Gymnasium's
``VectorizeTransformAction``, they never write into the caller's actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import Space
from gymnasium.vector import VectorEnv
from gymnasium.wrappers import transform_action

from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers.array_stats import ArrayPath, RescalingPath
from vecmode.wrappers.base import ActionWrapper, SpaceEnv, map_items, set_spaces


@supports(*MODES, array_native=True)
class TransformAction(ActionWrapper):
    """Gymnasium's ``TransformAction``: ``func`` maps each batch of actions to the
    env's; same arguments. Over torch or JAX batches, ``func`` gets and returns
    that library's arrays.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import TransformAction
    >>> envs = TransformAction(vecmode.make_vec("CartPole-v1", 2, "sync"),
    ...     func=lambda actions: 1 - actions)
    >>> _ = envs.reset(seed=0)
    >>> envs.step(np.array([0, 1]))[1]
    array([1., 1.])
    >>> envs.close()
    """

    def __init__(
        self,
        env: VectorEnv,
        func: Callable[[Any], Any],
        action_space: Space | None = None,
        single_action_space: Space | None = None,
    ) -> None:
        super().__init__(env)
        set_spaces(self, "action", action_space, single_action_space)
        self.func = func

    def actions(self, actions: Any) -> Any:
        return self.func(actions)


class VectorizeTransformAction(ActionWrapper):
    """Gymnasium's ``VectorizeTransformAction``; same arguments."""

    def __init__(
        self,
        env: VectorEnv,
        wrapper: type[transform_action.TransformAction],
        **kwargs: Any,
    ) -> None:
        super().__init__(env)
        self.wrapper = wrapper(
            SpaceEnv(action_space=self.env.single_action_space), **kwargs
        )
        set_spaces(self, "action", None, self.wrapper.action_space)
        self._func = self.wrapper.func

    def actions(self, actions: Any) -> Any:
        space = self.env.single_action_space
        return map_items(self._func, self.action_space, actions, space, self.num_envs)


@supports(*MODES, array_native=True)
class ClipAction(ArrayPath, VectorizeTransformAction):
    """Gymnasium's ``ClipAction``: Box actions clipped to the env's bounds. Over
    torch or JAX actions, in their library (the bounds made once, on their
    device)."""

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env, transform_action.ClipAction)
        space: Any = self.env.single_action_space
        self._low, self._high, self._dtype = space.low, space.high, space.dtype
        self._arm("actions")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        self._low, self._high = (
            xp.asarray(b, device=self.array_device) for b in (self._low, self._high)
        )
        self._dtype = self._low.dtype

    def _array_actions(self, actions: Any) -> Any:
        clipped = self.array_xp.clip(actions, self._low, self._high)
        return self.array_xp.astype(clipped, self._dtype, copy=False)

    def actions(self, actions: Any) -> Any:
        return np.clip(np.asarray(actions), self._low, self._high).astype(
            self._dtype, copy=False
        )


@supports(*MODES, array_native=True)
class RescaleAction(RescalingPath, VectorizeTransformAction):
    """Gymnasium's ``RescaleAction``; same arguments. Over torch or JAX actions,
    in their library (the rescaling's arrays made once, on their device)."""

    def __init__(
        self,
        env: VectorEnv,
        min_action: float | int | np.ndarray,
        max_action: float | int | np.ndarray,
    ) -> None:
        super().__init__(
            env,
            transform_action.RescaleAction,
            min_action=min_action,
            max_action=max_action,
        )
        self._arm("actions")

    def _array_actions(self, actions: Any) -> Any:
        out = (actions - self._intercept) / self._gradient
        return self.array_xp.astype(out, self._gradient.dtype, copy=False)
