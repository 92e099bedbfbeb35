"""Action transforms: Gymnasium's names and arguments; unlike Gymnasium's
``VectorizeTransformAction``, they never write into the caller's actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import Space
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers import transform_action

from vecmode.wrappers.base import ActionWrapper, SpaceEnv, map_items, set_spaces

__all__ = ["ClipAction", "RescaleAction", "TransformAction", "VectorizeTransformAction"]


class TransformAction(ActionWrapper):
    """Apply ``func`` to each batch of actions before the wrapped env sees it.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import TransformAction
    >>> envs = TransformAction(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...     vectorization_mode="sync"), func=lambda actions: 1 - actions)
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
        """Args as :class:`gymnasium.wrappers.vector.TransformAction`.

        Args:
            env: the vector env to wrap.
            func: maps a batch of this wrapper's actions to a batch of the env's.
            action_space: this wrapper's batched action space (default: batched
                ``single_action_space``).
            single_action_space: the space of one action (default: the env's).
        """
        super().__init__(env)
        set_spaces(self, "action", action_space, single_action_space)
        self.func = func

    def actions(self, actions: Any) -> Any:
        """Apply ``func``."""
        return self.func(actions)


class VectorizeTransformAction(ActionWrapper):
    """Apply a single-env ``TransformAction``'s function to each sub-env's action."""

    def __init__(
        self,
        env: VectorEnv,
        wrapper: type[transform_action.TransformAction],
        **kwargs: Any,
    ) -> None:
        """Build ``wrapper(single_env, **kwargs)`` (a single-env wrapper class)."""
        super().__init__(env)
        self.wrapper = wrapper(
            SpaceEnv(action_space=self.env.single_action_space), **kwargs
        )
        self.single_action_space = self.wrapper.action_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._func = self.wrapper.func

    def actions(self, actions: Any) -> Any:
        """Apply the single-env function to each sub-env's action."""
        space = self.env.single_action_space
        return map_items(self._func, self.action_space, actions, space, self.num_envs)


class ClipAction(VectorizeTransformAction):
    """Clip Box actions to the wrapped env's action bounds."""

    def __init__(self, env: VectorEnv) -> None:
        """Clip the actions given to ``env`` to its action space's bounds."""
        super().__init__(env, transform_action.ClipAction)
        space: Any = self.env.single_action_space
        self._low, self._high, self._dtype = space.low, space.high, space.dtype

    def actions(self, actions: Any) -> Any:
        """Clip the whole batch at once (a new array)."""
        return np.clip(np.asarray(actions), self._low, self._high).astype(
            self._dtype, copy=False
        )


class RescaleAction(VectorizeTransformAction):
    """Affinely rescale Box actions from ``[min_action, max_action]``."""

    def __init__(
        self,
        env: VectorEnv,
        min_action: float | int | np.ndarray,
        max_action: float | int | np.ndarray,
    ) -> None:
        """``min_action`` / ``max_action``: the bounds of this wrapper's actions."""
        super().__init__(
            env,
            transform_action.RescaleAction,
            min_action=min_action,
            max_action=max_action,
        )
