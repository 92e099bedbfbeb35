"""The PPO training stack (CleanRL's recipe), as one layer."""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numpy as np
from gymnasium.error import InvalidBound
from gymnasium.spaces import Box
from gymnasium.vector import VectorEnv

from vecmode import errors
from vecmode._numpy import count_nonzero
from vecmode.core import StepResult
from vecmode.wrappers.base import (
    Infos,
    Mask,
    RunningStatistics,
    map_final_observations,
    set_spaces,
)
from vecmode.wrappers.clipping import clip_symmetric
from vecmode.wrappers.common import RecordEpisodeStatistics
from vecmode.wrappers.running_stats import RunningMeanStd, normalize, scale_by_std
from vecmode.wrappers.stateful_observation import NormalizeObservation
from vecmode.wrappers.stateful_reward import NormalizeReward, discount
from vecmode.wrappers.vectorize_observation import TransformObservation
from vecmode.wrappers.vectorize_reward import ClipReward


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
        return clip_symmetric(x, self.bound)

    def __repr__(self) -> str:
        return f"clip to [-{self.bound}, {self.bound}]"


class PPOStack(RunningStatistics, RecordEpisodeStatistics):
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
        gamma = self._checked_gamma(gamma)
        clip_obs = _bound("clip_obs", clip_obs)
        clip_reward = _bound("clip_reward", clip_reward)
        space = env.single_observation_space
        if not isinstance(space, Box):
            raise TypeError(errors.needs_box(type(self).__name__, space))
        super().__init__(env)
        set_spaces(self, "observation", None, _clipped_space(self, clip_obs))
        self.clip_obs = clip_obs
        self.clip_reward = clip_reward
        self.gamma = gamma
        self.epsilon = 1e-8  # both normalisers' default
        self.obs_rms = RunningMeanStd(shape=space.shape, dtype=np.float32)
        self.return_rms = RunningMeanStd(shape=())
        self.accumulated_reward = np.zeros((self.num_envs,), dtype=np.float32)
        self._merged: tuple[Any, Any] | None = None

    def _normalised(self, observations: np.ndarray) -> np.ndarray:
        """Normalised and clipped, into a new float32 array."""
        rms = self.obs_rms
        out = normalize(observations, rms.mean, rms.var, self.epsilon)
        return clip_symmetric(out, self.clip_obs, out)

    def last_observations(self, observations: Any, infos: Infos) -> Any:
        """As the base's, kept for the rest of the step (merged once)."""
        merged = super().last_observations(observations, infos)
        self._merged = (observations, merged)
        return merged

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        out = self._reset_normalised(
            self.obs_rms, obs, self.boundary.starts, self._normalised
        )
        if state is None:
            self.accumulated_reward[:] = 0
        return out, infos

    def _step_result(self, result: StepResult) -> StepResult:
        self._merged = None
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        cached, self._merged = self._merged, None
        merged = cached[1] if cached is not None and cached[0] is obs else None
        out_obs, infos = self._step_normalised(
            self.obs_rms, obs, infos, self._normalised, merged
        )
        self._merged = None
        if not count_nonzero(self.boundary.final_in_info):
            # final observations no layer normalised (none ended here): clipped
            infos = map_final_observations(
                infos, out_obs, _Clip(self.clip_obs), self, self, type(self).__name__
            )
        real = self.boundary.real
        moving = count_nonzero(real)
        if moving:
            sums = discount(
                self.accumulated_reward, self.gamma, rewards, terminations, real
            )
            if self.update_running_mean:
                self.return_rms.update(sums)
        out = scale_by_std(rewards, self.return_rms.var, self.epsilon)
        out = clip_symmetric(out, self.clip_reward, out)
        if moving < len(real):
            out[~real] = 0
        return out_obs, out, terminations, truncations, infos
