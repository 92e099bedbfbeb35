"""Reward normalisation, right in every mode."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.error import InvalidBound
from gymnasium.vector import VectorEnv

from vecmode._numpy import count_nonzero
from vecmode.core import StepResult
from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers import array_stats as arrays
from vecmode.wrappers.array_stats import ArrayPath, Statistics, compiled
from vecmode.wrappers.base import Infos, Mask, RunningStatistics, StatefulWrapper
from vecmode.wrappers.running_stats import RunningMeanStd, scale_by_std


def discount(
    sums: np.ndarray,
    gamma: float,
    rewards: np.ndarray,
    terminations: np.ndarray,
    mask: np.ndarray,
) -> np.ndarray:
    """Advance, in place, the discounted sums of the sub-envs in ``mask`` as
    Gymnasium does (``sums * gamma * (1 - terminated) + reward``); return them."""
    every = count_nonzero(mask) == len(mask)
    if count_nonzero(terminations):
        moved = np.multiply(sums, gamma) * (1 - terminations) + rewards
        if every:
            sums[...] = moved
            return sums
        # whole arrays, kept where mask: fewer NumPy calls than indexing each
        np.copyto(sums, moved, casting="same_kind", where=mask)
        return sums[mask]
    # no termination: (1 - terminated) is all ones; the sum in float64, rounded
    scaled = np.multiply(sums, gamma)
    if every:
        np.add(scaled, rewards, sums, dtype=np.float64)
        return sums
    np.add(scaled, rewards, sums, dtype=np.float64, casting="same_kind", where=mask)
    return sums[mask]


@supports(*MODES, array_native=True)
class NormalizeReward(RunningStatistics, ArrayPath, StatefulWrapper):
    """Gymnasium's ``NormalizeReward``, right in every mode: only real transitions
    advance ``accumulated_reward`` and ``return_rms``; same arguments. Over torch
    or JAX batches, both are arrays of that library on its device
    (``return_rms.to_numpy()`` to save it; a NumPy one assigned is converted)
    and float rewards keep their dtype (integer or bool: the default float).

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import NormalizeReward
    >>> envs = NormalizeReward(vecmode.make_vec("CartPole-v1", 2, "sync"), gamma=0.9)
    >>> _ = envs.reset(seed=0)
    >>> _ = envs.step(np.array([0, 1]))
    >>> envs.accumulated_reward, envs.return_rms.count
    (array([1., 1.], dtype=float32), 2.0001)
    >>> envs.close()
    """

    return_rms = Statistics()

    def __init__(
        self, env: VectorEnv, gamma: float = 0.99, epsilon: float = 1e-8
    ) -> None:
        if not 0 <= gamma <= 1:
            raise InvalidBound(
                f"`gamma` should be in the interval [0, 1]. Received {gamma}"
            )
        super().__init__(env)
        self.return_rms = RunningMeanStd(shape=())
        self.accumulated_reward = np.zeros((self.num_envs,), dtype=np.float32)
        self.gamma = gamma
        self.epsilon = self._checked_epsilon(epsilon)
        self._arm("_reset_result")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        device = self.array_device
        self.accumulated_reward = xp.asarray(self.accumulated_reward, device=device)

    def _array_reset_result(
        self, obs: Any, infos: Infos, state: Mask
    ) -> tuple[Any, Any]:
        obs, infos = super()._array_reset_result(obs, infos, state)
        if state is None:
            self.accumulated_reward = self.array_xp.zeros_like(self.accumulated_reward)
        return obs, infos

    def _array_step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = super()._array_step_result(
            result
        )
        out = self._array_rewards(rewards, terminations, arrays.INF)
        return obs, out, terminations, truncations, infos

    def _array_rewards(self, rewards: Any, terminations: Any, bound: float) -> Any:
        """Advance the discounted sums and ``return_rms`` by a step's rewards;
        return them scaled and clipped to ``[-bound, bound]``."""
        xp, b, quiet = self.array_xp, self.boundary, self.boundaries.quiet
        real = None if b.real is quiet.real else b.real  # (quiet's: all True)
        sums = compiled(xp, arrays.discounted)(
            self.accumulated_reward, rewards, terminations, real, self.gamma
        )
        self.accumulated_reward = sums
        rms: Any = self.return_rms
        if self.update_running_mean:
            rms.update(sums, real)
        return compiled(xp, arrays.scaled, 3)(rewards, rms.var, self.epsilon, bound)

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        if state is None:
            self.accumulated_reward[:] = 0
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        real = self.boundary.real
        if count_nonzero(real):
            sums = discount(
                self.accumulated_reward, self.gamma, rewards, terminations, real
            )
            if self.update_running_mean:
                self.return_rms.update(sums)
        scaled = scale_by_std(rewards, self.return_rms.var, self.epsilon)
        return obs, scaled, terminations, truncations, infos
