"""The synchronous core: every sub-env in this process, one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, MultiBinary, MultiDiscrete
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import concatenate, iterate

from vecmode.core import (
    Command,
    StepResult,
    VectorCore,
    check_core_arguments,
    copy_batch,
)
from vecmode.modes import ModeLike

__all__ = ["SyncVectorEnv"]

_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)


class SyncVectorEnv(VectorCore, gym.vector.SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv`` without an autoreset policy (DISABLED mode).

    It is a :class:`gymnasium.vector.SyncVectorEnv` (same constructor arguments,
    spaces, ``call``, ``get_attr``, ``set_attr``, ``render``, ``envs``), whose
    ``step`` resets nothing: reset ended sub-envs with
    ``reset(options={"reset_mask": mask})``, or give it an autoreset policy with
    :func:`vecmode.with_autoreset` / :func:`vecmode.make_vec`. Stepping a sub-env
    whose episode ended raises :class:`vecmode.EpisodeEndedError` before anything
    is stepped.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 2)
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> _ = envs.reset(seed=0)
    >>> _, _, _, truncations, _ = envs.step(np.array([1, 1]))
    >>> truncations
    array([ True,  True])
    >>> envs.step(np.array([1, 1]))
    Traceback (most recent call last):
    ...
    vecmode.errors.EpisodeEndedError: sub-env(s) 0, 1 ended their episode ...
    >>> obs, infos = envs.reset(options={"reset_mask": truncations})
    >>> envs.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        copy: bool = True,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: ModeLike = AutoresetMode.DISABLED,
    ) -> None:
        """Create the sub-envs.

        Args:
            env_fns: one function per sub-env that creates it.
            copy: return a copy of the observations from ``reset`` and ``step``
                (otherwise the same buffer, overwritten by the next call).
            observation_mode: ``"same"``, ``"different"`` or a tuple
                ``(batched_space, single_space)``, as Gymnasium's.
            autoreset_mode: only ``DISABLED`` (the default): a core has no
                autoreset policy. Given another mode, the error says how to get it.
        """
        check_core_arguments(type(self).__name__, autoreset_mode, observation_mode)
        super().__init__(
            env_fns,
            copy=copy,
            observation_mode=observation_mode,
            autoreset_mode=AutoresetMode.DISABLED,
        )
        # Box observations are written straight into their row of the batch
        # (what ``concatenate`` does, without re-stacking every sub-env each call).
        self._rows: np.ndarray | None = (
            self._observations
            if type(self.observation_space) is Box
            and self._observations.shape[0] == self.num_envs
            else None
        )
        self._array_actions = type(self.action_space) in (
            Box,
            MultiDiscrete,
            MultiBinary,
        )

    def _execute(
        self,
        commands: list[int],
        actions: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> tuple[StepResult, list[int]]:
        envs = self.envs
        env_obs = self._env_obs
        rows = self._rows
        n = self.num_envs
        rewards: list[Any] = [0.0] * n
        terminations = [False] * n
        truncations = [False] * n
        done: list[int] = []
        infos: dict[str, Any] = {}
        add_info = self._add_info
        if actions is None:
            acts: Any = repeat(None)
        elif self._array_actions and type(actions) is np.ndarray:
            acts = iter(actions)  # what gymnasium's ``iterate`` does for these
        else:
            acts = iterate(self.action_space, actions)
        for i, (cmd, action) in enumerate(zip(commands, acts, strict=False)):
            if cmd == _KEEP:
                continue
            reset = cmd == _RESET
            if not reset:  # STEP or STEP_THEN_RESET
                obs, rewards[i], terminations[i], truncations[i], info = envs[i].step(
                    action
                )
                if terminations[i] or truncations[i]:
                    done.append(i)
                    if cmd == _STEP_THEN_RESET:
                        infos = add_info(
                            infos, {"final_obs": obs, "final_info": info}, i
                        )
                        reset = True
            if reset:
                obs, info = envs[i].reset(
                    seed=None if seeds is None else seeds[i],
                    options=None if options is None else dict(options),
                )
            if rows is None:
                env_obs[i] = obs
            else:
                rows[i] = obs
            if info:
                infos = add_info(infos, info, i)

        if rows is None:
            self._observations = concatenate(
                self.single_observation_space, env_obs, self._observations
            )
        result = (
            copy_batch(self._observations) if self.copy else self._observations,
            np.array(rewards, dtype=np.float64),
            np.array(terminations, dtype=np.bool_),
            np.array(truncations, dtype=np.bool_),
            infos,
        )
        return result, done
