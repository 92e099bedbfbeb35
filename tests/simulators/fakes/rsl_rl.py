"""A fake of a Genesis example env in RSL-RL's ``VecEnv`` shape, in torch on the CPU.

Written from leggedrobotics/rsl_rl ``rsl_rl/env/vec_env.py`` @ c281c32e5746 (v5:
``get_observations() -> TensorDict``, ``step(actions) -> (TensorDict, rewards,
dones, extras)``, ``extras["time_outs"]``; v2.3.0: ``get_observations() ->
(tensor, extras)``, ``step -> (tensor, rewards, dones, extras)``) and
Genesis-Embodied-AI/Genesis ``examples/locomotion/go2_env.py`` @ 7bf5f6a7bf29
(``step``: physics, the reward into ``rew_buf`` zeroed and summed in place, the
dones ``reset_buf`` and ``extras["time_outs"]`` as float 0/1, ``_reset_idx``
of the done mask, then the observations: the final observation is lost). With
``reward_after_reset=True`` it computes the reward after ``_reset_idx``, as
go2_env.py did up to Genesis 0.4.4 (@ 50e71ee10991). ``api=2`` gives rsl_rl 2's
tensors (and ``extras["observations"]["critic"]``). The env resets when built.
The physics is :mod:`tests.simulators.fakes.torch_episodes`; a sub-env both
terminated and timed out is done with ``time_outs`` 1.
"""

from __future__ import annotations

from typing import Any

import torch

from tests.simulators.fakes.torch_episodes import ACT_DIM, Episodes


class Go2Env:
    """A Genesis-style locomotion env over the fake physics.

    Args:
        num_envs: the number of sub-envs.
        max_episode_length: the time limit.
        reward_after_reset: compute the reward after the reset (Genesis <= 0.4.4).
        api: 5 (TensorDict observations, rsl_rl >= 3) or 2 (tensors).
        seed: the physics' seed.
        record: record the true transitions (``self.record``).
    """

    def __init__(
        self,
        num_envs: int = 4,
        max_episode_length: int = 6,
        reward_after_reset: bool = False,
        api: int = 5,
        seed: int = 0,
        record: bool = False,
    ) -> None:
        self.physics = Episodes(num_envs, max_episode_length, seed, record)
        self.num_envs, self.num_actions, self.device = num_envs, ACT_DIM, "cpu"
        self.max_episode_length, self.cfg = max_episode_length, {}
        self.reward_after_reset, self.api = reward_after_reset, api
        self.rew_buf = torch.zeros(num_envs)
        self.reset_buf = torch.ones(num_envs, dtype=torch.bool)
        self.extras: dict[str, Any] = {"observations": {}}
        self.reset()

    @property
    def record(self) -> Any:
        return self.physics.record

    def _reset_idx(self, envs_idx: torch.Tensor | None = None) -> None:
        if envs_idx is None:
            envs_idx = torch.ones(self.num_envs, dtype=torch.bool)
        self.physics.reset_rows(envs_idx)
        self.extras["episode"] = {"rew_total": self.rew_buf.mean()}

    def _update_observation(self) -> None:
        self.obs_buf = self.physics.observe()

    def _compute_reward(self, actions: torch.Tensor) -> None:
        self.rew_buf.zero_()
        self.rew_buf += self.physics.reward(actions)

    def get_observations(self) -> Any:
        if self.api == 2:
            self.extras["observations"]["critic"] = self.obs_buf
            return self.obs_buf, self.extras
        from tensordict import TensorDict

        return TensorDict({"policy": self.obs_buf}, batch_size=[self.num_envs])

    def reset(self) -> Any:
        self._reset_idx()
        self._update_observation()
        return self.get_observations()

    def step(self, actions: torch.Tensor) -> tuple[Any, Any, Any, dict[str, Any]]:
        before = self.physics.observe()
        terminated, truncated = self.physics.advance(actions)
        true_reward = self.physics.reward(actions)
        if not self.reward_after_reset:
            self._compute_reward(actions)
        self.reset_buf = terminated | truncated
        self.extras["time_outs"] = truncated.to(dtype=torch.float32)
        self.physics.note(
            obs=before,
            action=actions,
            reward=true_reward,
            next_obs=self.physics.observe(),
            terminated=terminated,
            truncated=truncated,
        )
        self._reset_idx(self.reset_buf)
        if self.reward_after_reset:
            self._compute_reward(actions)
        self._update_observation()
        if self.api == 2:
            self.extras["observations"]["critic"] = self.obs_buf
            return self.obs_buf, self.rew_buf, self.reset_buf, self.extras
        return self.get_observations(), self.rew_buf, self.reset_buf, self.extras


class RslRlVecEnvWrapper:
    """IsaacLab's RSL-RL wrapper over a (fake) IsaacLab env, written from
    isaac-sim/IsaacLab ``source/isaaclab_rl/isaaclab_rl/rsl_rl/vecenv_wrapper.py``
    @ d719f7d5efc1 (rsl_rl 2: the ``"policy"`` tensor, the groups in
    ``extras["observations"]``) and, for ``api=5``, the TensorDict of the groups
    its rsl_rl >= 3 versions return. ``dones`` is ``terminated | truncated`` as
    int64, ``extras["time_outs"] = truncated``; IsaacLab's extras (its
    ``final_obs`` among them) pass through. It resets the env when built.
    """

    def __init__(self, env: Any, api: int = 5) -> None:
        self.env, self.api = env, api
        self.num_envs, self.device = env.num_envs, env.device
        self.num_actions = env.single_action_space.shape[0]
        self.env.reset()

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    @property
    def cfg(self) -> Any:
        return self.unwrapped.cfg

    def _observations(self, obs_dict: dict[str, Any], extras: dict[str, Any]) -> Any:
        if self.api == 2:
            extras["observations"] = obs_dict
            return obs_dict["policy"]
        from tensordict import TensorDict

        return TensorDict(obs_dict, batch_size=[self.num_envs])

    def get_observations(self) -> Any:
        extras: dict[str, Any] = {}
        obs = self._observations(self.unwrapped._get_observations(), extras)
        return (obs, extras) if self.api == 2 else obs

    def reset(self) -> Any:
        obs_dict, _ = self.env.reset()
        extras: dict[str, Any] = {}
        obs = self._observations(obs_dict, extras)
        return (obs, extras) if self.api == 2 else (obs, {})

    def step(self, actions: torch.Tensor) -> tuple[Any, Any, Any, dict[str, Any]]:
        obs_dict, rew, terminated, truncated, extras = self.env.step(actions)
        dones = (terminated | truncated).to(dtype=torch.long)
        obs = self._observations(obs_dict, extras)
        extras["time_outs"] = truncated
        return obs, rew, dones, extras
