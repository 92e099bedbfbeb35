"""Episode statistics, right in every mode and across partial resets."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from vecmode._numpy import count_nonzero
from vecmode.core import StepResult
from vecmode.wrappers.base import StatefulWrapper

__all__ = ["RecordEpisodeStatistics"]


class RecordEpisodeStatistics(StatefulWrapper):
    """Report each ended episode's return, length and duration in ``info``.

    Same arguments and info layout as
    :class:`gymnasium.wrappers.vector.RecordEpisodeStatistics`: at the step an
    episode ends, ``info[stats_key]`` holds ``{"r": returns, "l": lengths, "t":
    seconds}`` (zero for sub-envs that did not end) and ``info["_" + stats_key]``
    the mask of the ended sub-envs; the last ``buffer_length`` episodes are in
    ``return_queue``, ``length_queue`` and ``time_queue``. Right in every mode:
    returns and lengths count real transitions only (not NEXT_STEP's reset
    step), a masked reset clears only the masked sub-envs, and in SAME_STEP the
    statistics are those of the episode that ended (next to ``final_obs``), the
    new episode starting from zero.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import RecordEpisodeStatistics
    >>> envs = RecordEpisodeStatistics(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...     autoreset_mode="SameStep", max_episode_steps=3, vectorization_mode="sync"))
    >>> _ = envs.reset(seed=0)
    >>> for _ in range(3):
    ...     _, _, _, _, infos = envs.step(np.array([0, 1]))
    >>> infos["episode"]["r"], infos["episode"]["l"], infos["_episode"]
    (array([3., 3.]), array([3, 3]), array([ True,  True]))
    >>> envs.close()
    """

    def __init__(
        self, env: VectorEnv, buffer_length: int = 100, stats_key: str = "episode"
    ) -> None:
        """``buffer_length``: size of the queues; ``stats_key``: the info key."""
        super().__init__(env)
        self._stats_key = stats_key
        self.episode_count = 0
        self.episode_start_times = np.zeros((self.num_envs,))
        self.episode_returns = np.zeros((self.num_envs,))
        self.episode_lengths = np.zeros((self.num_envs,), dtype=int)
        self.time_queue: deque[float] = deque(maxlen=buffer_length)
        self.return_queue: deque[float] = deque(maxlen=buffer_length)
        self.length_queue: deque[int] = deque(maxlen=buffer_length)
        self._ended: dict[str, np.ndarray] | None = None

    def episode_start(self, observations: Any, mask: np.ndarray) -> None:
        """Start counting from zero for the sub-envs in ``mask``."""
        self.episode_start_times[mask] = time.perf_counter()
        self.episode_returns[mask] = 0
        self.episode_lengths[mask] = 0

    def transition(
        self,
        observations: Any,
        rewards: np.ndarray,
        terminations: np.ndarray,
        truncations: np.ndarray,
        mask: np.ndarray,
    ) -> None:
        """Count the step; record the episodes that it ended."""
        b = self.boundary
        if b is self.boundaries.quiet or count_nonzero(mask) == len(mask):
            self.episode_returns += rewards
            self.episode_lengths += 1
            if b is self.boundaries.quiet:
                return
        else:
            self.episode_returns[mask] += rewards[mask]
            self.episode_lengths[mask] += 1
        dones = b.ended & mask  # a new array: it goes out in the info
        ended = np.flatnonzero(dones)
        if not len(ended):
            return
        seconds = np.round(time.perf_counter() - self.episode_start_times, 6)
        self._ended = {
            "r": np.where(dones, self.episode_returns, 0.0),
            "l": np.where(dones, self.episode_lengths, 0),
            "t": np.where(dones, seconds, 0.0),
            "mask": dones,
        }
        self.episode_count += len(ended)
        self.time_queue.extend(seconds[ended])
        self.return_queue.extend(self.episode_returns[ended])
        self.length_queue.extend(self.episode_lengths[ended])

    def _step_result(self, result: StepResult) -> StepResult:
        """``info[stats_key]`` reports the episodes that ended."""
        key = self._stats_key
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        if self._ended is not None:
            stats, self._ended = self._ended, None
            if key in infos or f"_{key}" in infos:
                raise ValueError(stats_key_taken(key, list(infos)))
            mask = stats.pop("mask")
            infos = {**infos, key: stats, f"_{key}": mask}
        return obs, rewards, terminations, truncations, infos


# ------------------------------------------------------------------ messages
def stats_key_taken(key: str, keys: list[str]) -> str:
    return (
        f"RecordEpisodeStatistics cannot add episode statistics under info[{key!r}]: "
        f"the key is already in the info ({keys}). Pass another stats_key."
    )
