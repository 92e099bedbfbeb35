"""A fake of IsaacLab's ``DirectRLEnv`` (and ``ManagerBasedRLEnv``: the same step
order), in torch on the CPU.

Written from isaac-sim/IsaacLab ``source/isaaclab/isaaclab/envs/direct_rl_env.py``
@ 7ff33ed47bd8 and ``manager_based_rl_env.py`` @ 02dc5f7461a6: ``step`` counts
the episode steps, computes the dones into the persistent buffers
``reset_terminated`` / ``reset_time_outs`` (written in place) and the rewards
(``reward_buf``: written in place here, as the reward manager's buffer is),
resets the done rows with ``_reset_idx(ids)`` (which writes ``extras["log"]``),
then computes the observations ``{"policy": ...}``: the final observation is
lost. With ``cfg.compute_final_obs=True`` (IsaacLab PR #6219, merged: issues
#4369, #1362) the observations computed before the reset, the whole batch, are
put in ``extras["final_obs"]`` on a step where some sub-env is done, and the
key is removed on the other steps; ``compute_final_obs=None`` builds a config
without the field (IsaacLab before the PR). ``extras`` is one dict, the env's,
returned every step. The physics is :mod:`tests.simulators.fakes.torch_episodes`.
"""

from __future__ import annotations

import types
from typing import Any

import torch
from gymnasium import spaces

from tests.simulators.fakes.torch_episodes import (
    Episodes,
    action_space,
    observation_space,
)


class DirectRLEnv:
    """IsaacLab's RL env over the fake physics.

    Args:
        num_envs: the number of sub-envs.
        max_episode_length: the time limit (``time_outs``).
        compute_final_obs: the config's field (None: absent).
        critic: add a ``"critic"`` observation group (asymmetric actor-critic).
        seed: the physics' seed.
        record: record the true transitions (``self.record``; of ``"policy"``).
    """

    def __init__(
        self,
        num_envs: int = 4,
        max_episode_length: int = 6,
        compute_final_obs: bool | None = None,
        critic: bool = False,
        seed: int = 0,
        record: bool = False,
    ) -> None:
        self.physics = Episodes(num_envs, max_episode_length, seed, record)
        self.cfg = types.SimpleNamespace(decimation=2)
        if compute_final_obs is not None:
            self.cfg.compute_final_obs = compute_final_obs
        self.num_envs, self.device = num_envs, "cpu"
        self.max_episode_length, self.critic = max_episode_length, critic
        groups = {"policy": observation_space()}
        if critic:
            groups["critic"] = observation_space()
        self.single_observation_space = spaces.Dict(groups)
        self.single_action_space = action_space()
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.int64)
        self.reset_terminated = torch.zeros(num_envs, dtype=torch.bool)
        self.reset_time_outs = torch.zeros(num_envs, dtype=torch.bool)
        self.reward_buf = torch.zeros(num_envs)
        self.extras: dict[str, Any] = {}

    @property
    def unwrapped(self) -> DirectRLEnv:
        return self

    @property
    def record(self) -> Any:
        return self.physics.record

    def _get_observations(self) -> dict[str, torch.Tensor]:
        obs = {"policy": self.physics.observe()}
        if self.critic:
            obs["critic"] = 2.0 * obs["policy"]
        return obs

    def _reset_idx(self, env_ids: torch.Tensor) -> None:
        mask = torch.zeros(self.num_envs, dtype=torch.bool)
        mask[env_ids] = True
        self.physics.reset_rows(mask)
        self.extras["log"] = {
            "Episode_Termination/time_out": self.reset_time_outs.sum()
        }
        self.episode_length_buf[env_ids] = 0

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        if seed is not None:
            self.physics.seed(seed)
        self._reset_idx(torch.arange(self.num_envs, dtype=torch.int32))
        return self._get_observations(), self.extras

    def step(self, action: torch.Tensor) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        before = self.physics.observe()
        terminated, truncated = self.physics.advance(action)
        self.episode_length_buf += 1
        self.reset_terminated[:], self.reset_time_outs[:] = terminated, truncated
        reset_buf = self.reset_terminated | self.reset_time_outs
        self.reward_buf[:] = self.physics.reward(action)
        self.physics.note(
            obs=before,
            action=action,
            reward=self.reward_buf,
            next_obs=self.physics.observe(),
            terminated=terminated,
            truncated=truncated,
        )
        self.extras.pop("final_obs", None)
        reset_env_ids = reset_buf.nonzero(as_tuple=False).squeeze(-1).int()
        if len(reset_env_ids) > 0:
            if getattr(self.cfg, "compute_final_obs", False):
                self.extras["final_obs"] = self._get_observations()
            self._reset_idx(reset_env_ids)
        obs = self._get_observations()
        return (
            obs,
            self.reward_buf,
            self.reset_terminated,
            self.reset_time_outs,
            self.extras,
        )


class GymWrapper:
    """What ``gym.make`` puts over an IsaacLab env: ``step``/``reset`` passed
    through, the env as ``unwrapped``."""

    def __init__(self, env: DirectRLEnv) -> None:
        self.env = env

    @property
    def unwrapped(self) -> DirectRLEnv:
        return self.env

    def reset(self, **kwargs: Any) -> Any:
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        return self.env.step(action)
