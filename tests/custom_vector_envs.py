"""A hand-written (numpy-batched) vector env in each autoreset mode, with optional
bugs, for the tests of ``probe_mode`` and ``check_vector_env`` (the sync env in
ALE's dense layout is public: ``vecmode.testing.DenseFinalObsVectorEnv``).

Like Gymnasium's ``CartPoleVectorEnv`` it steps every sub-env in one numpy
operation rather than holding ``gymnasium.Env`` sub-envs. Observation ``i`` is
``[i, episode, step]`` (float32), so a wrong or stale observation is a wrong value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecmode import as_mode

#: The bugs ``CounterVectorEnv`` can have.
BUGS = (
    "reset_step_reward",  # NEXT_STEP: the reset step returns reward 1
    "no_final_obs_mask",  # SAME_STEP: info has final_obs but no _final_obs
    "final_obs_is_reset_obs",  # SAME_STEP: final_obs holds a copy of the reset obs
    "final_obs_view",  # SAME_STEP: final_obs holds a view of the obs buffer
    "reset_mask_resets_all",  # reset(options={"reset_mask": m}) resets everyone
    "unseeded",  # observations carry noise from an unseeded RNG
    "reset_keeps_pending",  # NEXT_STEP: reset() does not clear pending autoresets
    "unseeded_autoreset",  # NEXT_STEP: the reset step's obs carry unseeded noise
    "reset_step_truncated",  # NEXT_STEP: the reset step returns truncated True
    "final_obs_mask_all",  # SAME_STEP: _final_obs is True for every sub-env
    "final_obs_float64",  # SAME_STEP: final observations are float64
    "reset_info_all",  # the info of a masked reset marks every sub-env
    "reset_mask_ignored",  # reset(options={"reset_mask": m}) resets nobody
)

_DECLARED_AS_BEHAVES: Any = object()


class CounterVectorEnv(VectorEnv):
    """Sub-env ``i``'s episodes last ``lengths[i]`` steps (default ``2 + i``),
    truncated on even episodes, terminated on odd ones. Reward: ``action + 0.5 *
    step``. ``mode``: how it behaves; ``declared``: what its metadata says (default:
    the same; None: nothing). In DISABLED mode an ended sub-env stepped without a
    reset just goes on counting (as Gymnasium's ``AsyncVectorEnv`` does)."""

    def __init__(
        self,
        num_envs: int = 3,
        mode: Any = AutoresetMode.NEXT_STEP,
        *,
        declared: Any = _DECLARED_AS_BEHAVES,
        lengths: list[int] | None = None,
        bug: str | None = None,
        num_actions: int = 3,
        raise_on_ended: bool = False,
    ) -> None:
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}")
        self.num_envs = num_envs
        self.behaviour = as_mode(mode)
        declared = self.behaviour if declared is _DECLARED_AS_BEHAVES else declared
        self.metadata = {} if declared is None else {"autoreset_mode": declared}
        self.lengths = np.array(lengths or [2 + i for i in range(num_envs)])
        self.bug = bug
        self.raise_on_ended = raise_on_ended
        self.single_observation_space = spaces.Box(-1e6, 1e6, (3,), np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = spaces.Discrete(num_actions)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.episode = np.full(num_envs, -1)
        self.t = np.zeros(num_envs, dtype=np.int64)
        self.ended = np.zeros(num_envs, dtype=np.bool_)
        self.buffer = np.zeros((num_envs, 3), dtype=np.float32)
        self.noise = np.random.default_rng()  # used by the "unseeded" bug only
        self.closed_count = 0

    def _restart(self, mask: np.ndarray) -> None:
        self.episode[mask] += 1
        self.t[mask] = 0
        self.ended[mask] = False

    def _observe(self) -> np.ndarray:
        self.buffer[:, 0] = np.arange(self.num_envs)
        if self.bug == "unseeded":
            self.buffer[:, 0] += self.noise.random(self.num_envs) / 100
        self.buffer[:, 1] = self.episode
        self.buffer[:, 2] = self.t
        return self.buffer

    def _out(self, obs: np.ndarray) -> np.ndarray:
        return obs if self.bug == "final_obs_view" else obs.copy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        mask = (options or {}).get("reset_mask")
        if mask is None or self.bug == "reset_mask_resets_all":
            mask = np.ones(self.num_envs, dtype=np.bool_)
        pending = self.ended.copy()
        if self.bug != "reset_mask_ignored" or options is None:
            self._restart(mask)
        if self.bug == "reset_keeps_pending":
            self.ended = pending
        infos = {"episode": np.where(mask, self.episode, 0), "_episode": mask.copy()}
        if self.bug == "reset_info_all":
            infos["_episode"][:] = True
        return self._out(self._observe()), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = np.asarray(actions)
        n = self.num_envs
        disabled = self.behaviour is AutoresetMode.DISABLED
        if self.raise_on_ended and disabled and self.ended.any():
            raise RuntimeError(f"sub-envs {np.flatnonzero(self.ended)} ended")
        resetting = (
            self.ended.copy()
            if self.behaviour is AutoresetMode.NEXT_STEP
            else np.zeros(n, dtype=np.bool_)
        )
        stepping = ~resetting
        self.t[stepping] += 1
        rewards = np.where(stepping, actions + 0.5 * self.t, 0.0)
        ended = stepping & (self.t >= self.lengths)
        truncations = ended & (self.episode % 2 == 0)
        terminations = ended & ~truncations
        self._restart(resetting)
        if self.bug == "reset_step_reward":
            rewards[resetting] = 1.0
        if self.bug == "reset_step_truncated":
            truncations = truncations | resetting
        obs = self._observe()
        if self.bug == "unseeded_autoreset":
            obs[resetting, 0] += self.noise.random(int(resetting.sum())) / 100
        infos: dict[str, Any] = {}
        if self.behaviour is AutoresetMode.SAME_STEP and ended.any():
            final = np.full(n, None, dtype=object)
            for i in np.flatnonzero(ended):
                final[i] = obs[i] if self.bug == "final_obs_view" else obs[i].copy()
            self._restart(ended)
            obs = self._observe()
            if self.bug == "final_obs_is_reset_obs":
                for i in np.flatnonzero(ended):
                    final[i] = obs[i].copy()
            if self.bug == "final_obs_float64":
                for i in np.flatnonzero(ended):
                    final[i] = final[i].astype(np.float64)
            infos = {
                "final_obs": final,
                "_final_obs": ended.copy(),
                "final_info": {},
                "_final_info": ended.copy(),
            }
            if self.bug == "no_final_obs_mask":
                del infos["_final_obs"]
            if self.bug == "final_obs_mask_all":
                infos["_final_obs"][:] = True
        else:
            self.ended = ended
        return self._out(obs), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        self.closed_count += 1
