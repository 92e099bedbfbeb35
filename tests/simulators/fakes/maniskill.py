"""A fake of ManiSkill3's ``ManiSkillVectorEnv``, in torch on the CPU.

Written from haosulab/ManiSkill ``mani_skill/vector/wrappers/gymnasium.py`` @
07e17a0a42c10927155e8e5d91dbece46b0ececd, with ``mani_skill/envs/sapien_env.py``
@ 0000ccff1a15 (``BaseEnv.step``/``reset``: ``reset(options={"env_idx": ...})``
resets those rows and returns the whole batch with ``{"reconfigure": ...}``)
and ``mani_skill/utils/registration.py`` @ 1337dea754ae (``TimeLimitWrapper``:
``truncated = elapsed_steps >= max_episode_steps``, a bool tensor). The step's
order and layout are ManiSkill's: with ``auto_reset`` and any sub-env done, the
whole batch's observations and info are cloned, the done rows reset with
``env_idx``, and the reset's info returned with ``final_observation``,
``final_info``, ``_final_observation``, ``_final_info`` and ``_elapsed_steps``
(the masks are ``dones``); ``ignore_terminations`` writes ``terminated`` to all
False in place. The physics is :mod:`tests.simulators.fakes.torch_episodes`.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium.vector import VectorEnv

from tests.simulators.fakes.torch_episodes import (
    Episodes,
    action_space,
    observation_space,
)


class ManiSkillVectorEnv(VectorEnv):
    """ManiSkill's vector env over the fake physics.

    Args:
        num_envs: the number of sub-envs.
        auto_reset: reset ended sub-envs inside the step (ManiSkill's default).
        ignore_terminations: end episodes by truncation only.
        max_episode_steps: the time limit.
        seed: the physics' seed.
        record: record the true transitions (``self.record``).
    """

    def __init__(
        self,
        num_envs: int = 4,
        auto_reset: bool = True,
        ignore_terminations: bool = False,
        max_episode_steps: int = 6,
        seed: int = 0,
        record: bool = False,
    ) -> None:
        self.physics = Episodes(num_envs, max_episode_steps, seed, record)
        self.auto_reset, self.ignore_terminations = auto_reset, ignore_terminations
        self.num_envs = num_envs
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.device = torch.device("cpu")
        #: the ``env_idx`` of each reset (None: a full one)
        self.resets: list[Any] = []

    @property
    def record(self) -> Any:
        return self.physics.record

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        options = {} if options is None else options
        if seed is not None:
            self.physics.seed(seed)
        if "env_idx" in options:
            env_idx = options["env_idx"]
            mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            mask[env_idx] = True
            self.resets.append(env_idx)
        else:
            mask = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
            self.resets.append(None)
        self.physics.reset_rows(mask)
        return self.physics.observe(), dict(reconfigure=False)

    def _base_step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """``TimeLimitWrapper(BaseEnv).step``: info, obs, reward, the flags."""
        terminated, truncated = self.physics.advance(actions)
        info = {"elapsed_steps": self.physics.t.clone(), "success": terminated.clone()}
        obs = self.physics.observe()
        reward = self.physics.reward(actions)
        return obs, reward, terminated, truncated, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        before = self.physics.observe()
        obs, rew, terminations, truncations, infos = self._base_step(actions)
        if self.ignore_terminations:
            terminations[:] = False
        self.physics.note(
            obs=before,
            action=actions,
            reward=rew,
            next_obs=obs,
            terminated=terminations,
            truncated=truncations,
        )
        dones = torch.logical_or(terminations, truncations)
        if dones.any() and self.auto_reset:
            final_obs = obs.clone()
            env_idx = torch.arange(0, self.num_envs, device=self.device)[dones]
            final_info = {key: value.clone() for key, value in infos.items()}
            obs, infos = self.reset(options=dict(env_idx=env_idx))
            infos["final_observation"] = final_obs
            infos["final_info"] = final_info
            infos["_final_info"] = dones
            infos["_final_observation"] = dones
            infos["_elapsed_steps"] = dones
        return obs, rew, terminations, truncations, infos
