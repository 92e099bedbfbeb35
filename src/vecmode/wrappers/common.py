"""Episode statistics, right in every mode and across partial resets."""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from vecmode.core import StepResult
from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers import array_stats
from vecmode.wrappers.array_stats import ArrayPath, ArrayQueue, compiled, float_dtype
from vecmode.wrappers.base import HookReads, StatefulWrapper

#: Up to this many episodes ending in a step, their statistics go row by row.
_FEW_ENDED = 8
#: Array path: seconds between moves of the clock's origin, so that float32
#: start times (JAX's default) keep microseconds, as float64 ones do.
_REBASE_SECONDS = 64.0


@supports(*MODES, array_native=True)
class RecordEpisodeStatistics(ArrayPath, StatefulWrapper):
    """Gymnasium's ``RecordEpisodeStatistics``, right in every mode (only real
    transitions count); same arguments and info layout. Over torch or JAX
    batches, the statistics and ``info["episode"]`` are arrays of that library
    on its device; the queues keep them there until they are read.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import RecordEpisodeStatistics
    >>> envs = RecordEpisodeStatistics(vecmode.make_vec("CartPole-v1", 2, "sync",
    ...     autoreset_mode="SameStep", max_episode_steps=3))
    >>> _ = envs.reset(seed=0)
    >>> for _ in range(3):
    ...     infos = envs.step(np.array([0, 1]))[4]
    >>> infos["episode"]["r"], infos["_episode"]
    (array([3., 3.]), array([ True,  True]))
    >>> envs.close()
    """

    #: Its statistics are its episode's (check_wrapper checks it).
    episodic = True
    #: Its hook reads rewards and flags only (any final-observation layout suits
    #: it); a subclass's own hook gets final observations.
    reads_final_observations = HookReads(False)

    def __init__(
        self, env: VectorEnv, buffer_length: int = 100, stats_key: str = "episode"
    ) -> None:
        super().__init__(env)
        self._stats_key = stats_key
        self.episode_count = 0
        self.episode_start_times = np.zeros((self.num_envs,))
        self.episode_returns = np.zeros((self.num_envs,))
        self.episode_lengths = np.zeros((self.num_envs,), dtype=int)
        self.time_queue: deque[float] = deque(maxlen=buffer_length)
        self.return_queue: deque[float] = deque(maxlen=buffer_length)
        self.length_queue: deque[int] = deque(maxlen=buffer_length)
        self._ended: tuple[dict[str, np.ndarray], np.ndarray] | None = None
        self._arm("_reset_result")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        n, device = self.num_envs, self.array_device
        real, whole = float_dtype(xp, device), float_dtype(xp, device, "int")
        self.episode_start_times = xp.zeros(n, dtype=real, device=device)
        self._origin = time.perf_counter()  # start times count from it
        self.episode_returns = xp.zeros(n, dtype=real, device=device)
        self.episode_lengths = xp.zeros(n, dtype=whole, device=device)
        for name in ("time_queue", "return_queue", "length_queue"):
            setattr(self, name, ArrayQueue(getattr(self, name).maxlen))

    def _array_now(self) -> float:
        """Seconds since the clock's origin, which moves up every minute (the
        start times with it): perf_counter() as float32 is off by a second."""
        now = time.perf_counter() - self._origin
        if now > _REBASE_SECONDS:
            self._origin += now
            self.episode_start_times = self.episode_start_times - now
            now = 0.0
        return now

    def _array_episode_start(self, observations: Any, mask: Any) -> None:
        columns = self.episode_start_times, self.episode_returns, self.episode_lengths
        now, started = self._array_now(), compiled(self.array_xp, array_stats.started)
        (self.episode_start_times, self.episode_returns, self.episode_lengths) = (
            started(mask, now, *columns)
        )

    def _array_transition(self, obs: Any, rewards: Any, *flags_mask: Any) -> None:
        mask, xp, b = flags_mask[2], self.array_xp, self.boundary
        quiet = self.boundaries.quiet
        if b is quiet:
            self.episode_returns = self.episode_returns + rewards
            self.episode_lengths = self.episode_lengths + 1
            return
        mask = None if mask is quiet.real else mask  # (quiet's: all True)
        returns, lengths, dones, count = compiled(xp, array_stats.advanced)(
            self.episode_returns, self.episode_lengths, rewards, mask, b.ended
        )
        self.episode_returns, self.episode_lengths = returns, lengths
        ended = int(count)  # one scalar to the host
        if not ended:
            return
        # Gymnasium's np.where(dones, ..., 0) and seconds rounded to 6 decimals
        now = self._array_now()  # (first: it may move the start times)
        *stats, seconds = compiled(xp, array_stats.episode_statistics)(
            returns, lengths, self.episode_start_times, dones, now
        )
        self.return_queue.add(returns, dones, ended)  # type: ignore[attr-defined]
        self.length_queue.add(lengths, dones, ended)  # type: ignore[attr-defined]
        self.time_queue.add(seconds, dones, ended)  # type: ignore[attr-defined]
        self._ended = (dict(zip("rlt", stats, strict=True)), dones)
        self.episode_count += ended

    def episode_start(self, observations: Any, mask: np.ndarray) -> None:
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
        # every row: a row whose step was not real starts an episode in this
        # very step, and episode_start zeroes it right after this hook
        b = self.boundary
        returns, lengths = self.episode_returns, self.episode_lengths
        returns += rewards
        lengths += 1
        if b is self.boundaries.quiet:
            return
        dones = b.ended & mask  # a new array: it goes out in the info
        rows = dones.nonzero()[0]
        if not len(rows):
            return
        # Gymnasium's np.where(dones, ..., 0) and rounded seconds: row by row
        # for a few (cheaper than a NumPy call per array), else by NumPy calls
        now = time.perf_counter()
        if len(rows) <= _FEW_ENDED:
            out_returns, out_lengths, out_seconds = (
                np.zeros(len(dones), column.dtype)
                for column in (returns, lengths, self.episode_start_times)
            )
            self._rows_ended(rows.tolist(), now, out_returns, out_lengths, out_seconds)
        else:
            seconds = np.subtract(now, self.episode_start_times[rows])
            np.multiply(seconds, 1e6, out=seconds)  # np.round(seconds, 6): its ufuncs
            np.rint(seconds, out=seconds)
            np.divide(seconds, 1e6, out=seconds)
            out_seconds = np.zeros(len(dones))
            out_seconds[rows] = seconds
            out_returns = np.where(dones, returns, 0.0)
            out_lengths = np.where(dones, lengths, 0)
            _extend(self.return_queue, returns[rows])
            _extend(self.length_queue, lengths[rows])
            _extend(self.time_queue, seconds)
        self._ended = ({"r": out_returns, "l": out_lengths, "t": out_seconds}, dones)
        self.episode_count += len(rows)

    def _rows_ended(
        self,
        ended: list[int],
        now: float,
        out_returns: np.ndarray,
        out_lengths: np.ndarray,
        out_seconds: np.ndarray,
    ) -> None:
        """The statistics of the few sub-envs in ``ended``, row by row."""
        returns, lengths = self.episode_returns, self.episode_lengths
        starts = self.episode_start_times
        for i in ended:
            out_returns[i] = value = returns[i]
            self.return_queue.append(value)
            out_lengths[i] = value = lengths[i]
            self.length_queue.append(value)
            out_seconds[i] = value = round_seconds(now - starts[i])
            self.time_queue.append(value)

    def _step_result(self, result: StepResult) -> StepResult:
        result = super()._step_result(result)
        return result if self._ended is None else self._with_statistics(result)

    def _array_step_result(self, result: StepResult) -> StepResult:
        result = super()._array_step_result(result)
        return result if self._ended is None else self._with_statistics(result)

    def _with_statistics(self, result: StepResult) -> StepResult:
        """``result`` with the statistics of the episodes that ended in its info."""
        key = self._stats_key
        obs, rewards, terminations, truncations, infos = result
        (stats, mask), self._ended = self._ended, None  # type: ignore[misc]
        if key in infos or f"_{key}" in infos:
            raise ValueError(
                f"RecordEpisodeStatistics cannot put statistics in info[{key!r}]: "
                f"the key is already there ({list(infos)}), from a layer below (a "
                f"sub-env's RecordEpisodeStatistics, say). Keep one of the two, or "
                f"pass another stats_key."
            )
        infos = {**infos, key: stats, f"_{key}": mask}
        return obs, rewards, terminations, truncations, infos


def _extend(queue: Any, values: np.ndarray) -> None:
    """``queue.extend(values)``, of only the values a bounded deque keeps."""
    maxlen = getattr(queue, "maxlen", None)
    queue.extend(values if maxlen is None else values[max(len(values) - maxlen, 0) :])


def round_seconds(seconds: np.float64) -> np.float64:
    """``np.round(seconds, 6)`` of one value, without a NumPy call."""
    if not math.isfinite(seconds):
        return np.float64(seconds)
    scaled = float(seconds) * 1e6
    # round() ties to even, as rint; copysign keeps the sign of a zero
    return np.float64(math.copysign(round(scaled), scaled) / 1e6)
