"""The PPO training stack (CleanRL's recipe), as one layer."""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
from gymnasium.error import InvalidBound
from gymnasium.spaces import Box
from gymnasium.vector import VectorEnv

from vecmode import _arrays, _rows
from vecmode._numpy import count_nonzero
from vecmode.core import StepResult
from vecmode.wrappers.array_stats import clipped
from vecmode.wrappers.base import map_final_observations, set_spaces
from vecmode.wrappers.common import RecordEpisodeStatistics
from vecmode.wrappers.stateful_observation import NormalizeObservation
from vecmode.wrappers.stateful_reward import NormalizeReward
from vecmode.wrappers.vectorize_observation import TransformObservation
from vecmode.wrappers.vectorize_reward import ClipReward, clip_symmetric


@overload
def ppo_stack(
    env: VectorEnv,
    *,
    gamma: float,
    clip_obs: float = ...,
    clip_reward: float = ...,
    fused: Literal[True] = ...,
) -> PPOStack: ...


@overload
def ppo_stack(
    env: VectorEnv,
    *,
    gamma: float,
    clip_obs: float = ...,
    clip_reward: float = ...,
    fused: Literal[False],
) -> ClipReward: ...


@overload
def ppo_stack(
    env: VectorEnv,
    *,
    gamma: float,
    clip_obs: float = ...,
    clip_reward: float = ...,
    fused: bool,
) -> PPOStack | ClipReward: ...


def ppo_stack(
    env: VectorEnv,
    *,
    gamma: float,
    clip_obs: float = 10.0,
    clip_reward: float = 10.0,
    fused: bool = True,
) -> PPOStack | ClipReward:
    """CleanRL's PPO stack over ``env``, right in every mode.

    ``RecordEpisodeStatistics``, ``NormalizeObservation``, observations clipped,
    ``NormalizeReward`` and ``ClipReward``: by default one :class:`PPOStack`
    layer, which returns exactly what the five layers return.

    Args:
        env: a vector env with Box observations.
        gamma: ``NormalizeReward``'s discount, in [0, 1].
        clip_obs: the bound of the normalised observations (>= 0, inf: none).
        clip_reward: the bound of the normalised rewards (>= 0, inf: none).
        fused: one layer (True) or the five (False).

    >>> import vecmode
    >>> from vecmode.wrappers import ppo_stack
    >>> envs = vecmode.make_vec("CartPole-v1", 4, "sync", autoreset_mode="SameStep")
    >>> ppo_stack(envs, gamma=0.99)
    <PPOStack, <SameStepAutoreset, SyncVectorEnv(CartPole-v1, num_envs=4)>>
    >>> envs.close()
    """
    if fused:
        return PPOStack(env, gamma=gamma, clip_obs=clip_obs, clip_reward=clip_reward)
    clip_obs = _bound("clip_obs", clip_obs)
    clip_reward = _bound("clip_reward", clip_reward)
    env = RecordEpisodeStatistics(env)
    env = NormalizeObservation(env)
    space = _clipped_space(env, clip_obs)
    env = TransformObservation(env, _Clip(clip_obs), single_observation_space=space)
    env = NormalizeReward(env, gamma=gamma)
    return ClipReward(env, -clip_reward, clip_reward)


def _bound(name: str, value: float) -> float:
    """A clip bound: a number >= 0 (inf: no clipping)."""
    message = f"`{name}` should be a number >= 0 (inf: no clipping). Received {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(message)
    value = float(value)
    if math.isnan(value) or value < 0:
        raise InvalidBound(message)
    return value


def _clipped_space(env: VectorEnv, clip: float) -> Box:
    return Box(-clip, clip, env.single_observation_space.shape, np.float32)


class _Clip:
    """``np.clip(x, -bound, bound)``, picklable and named."""

    def __init__(self, bound: float) -> None:
        self.bound = bound

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if type(x) is np.ndarray:
            return clip_symmetric(x, self.bound)
        if (xp := _arrays.namespace(x)) is None:
            return clip_symmetric(x, self.bound)
        return clipped(xp, x, self.bound)

    def __repr__(self) -> str:
        return f"clip to [-{self.bound}, {self.bound}]"


class PPOStack(NormalizeReward, NormalizeObservation, RecordEpisodeStatistics):
    """CleanRL's five PPO wrappers as one layer, with their attributes: what
    :func:`ppo_stack` builds (same arguments, but ``fused``).
    ``update_running_mean = False`` freezes both statistics.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import PPOStack
    >>> envs = PPOStack(vecmode.make_vec("CartPole-v1", 2, "sync"), gamma=0.99)
    >>> _ = envs.reset(seed=0)
    >>> _ = envs.step(np.array([0, 1]))
    >>> envs.return_rms.count, envs.obs_rms.count
    (2.0001, 4.0001)
    >>> envs.close()
    """

    def __init__(
        self,
        env: VectorEnv,
        *,
        gamma: float,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
    ) -> None:
        super().__init__(env, gamma=gamma)
        self.clip_obs = _bound("clip_obs", clip_obs)
        self.clip_reward = _bound("clip_reward", clip_reward)
        set_spaces(self, "observation", None, _clipped_space(self, self.clip_obs))

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """Normalise and clip a batch with the current statistics (no update)."""
        out = super().normalize(observations)
        return clip_symmetric(out, self.clip_obs, out)

    @property
    def _array_bound(self) -> float:  # type: ignore[override]
        return self.clip_obs

    def _array_step_result(self, result: StepResult) -> StepResult:
        # NormalizeObservation's and the layers below; the rewards here
        result = super(NormalizeReward, self)._array_step_result(result)
        obs, rewards, terminations, truncations, infos = result
        rewards = self._array_rewards(rewards, terminations, self.clip_reward)
        b, quiet = self.boundary, self.boundaries.quiet
        if b is not quiet and not _rows.some(b.final_in_info):
            # final observations no layer normalised (none ended here): clipped
            infos = map_final_observations(
                infos, obs, _Clip(self.clip_obs), self, self, type(self).__name__
            )
        if b.real is not quiet.real:  # (quiet's: all True)
            rewards = self.array_xp.where(b.real, rewards, 0.0)
        return obs, rewards, terminations, truncations, infos

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        if not count_nonzero(self.boundary.final_in_info):
            # final observations no layer normalised (none ended here): clipped
            infos = map_final_observations(
                infos, obs, _Clip(self.clip_obs), self, self, type(self).__name__
            )
        out = clip_symmetric(rewards, self.clip_reward, rewards)
        real = self.boundary.real
        if count_nonzero(real) < len(real):
            out[~real] = 0
        return obs, out, terminations, truncations, infos
