"""Observation wrappers with state: normalisation and frame stacking.

Both are right in every mode and across partial resets: statistics see every
real observation exactly once (the final ones in ``info["final_obs"]`` included,
a masked reset's untouched rows not again), and every episode starts a fresh
frame stack whose final stacked observation is where the mode puts final
observations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space, create_empty_array
from gymnasium.wrappers.utils import create_zero_array

from vecmode import errors
from vecmode._numpy import count_nonzero
from vecmode.core import StepResult, copy_batch
from vecmode.modes import with_final_observations
from vecmode.wrappers.base import (
    RunningStatistics,
    StatefulWrapper,
    map_final_observations,
)
from vecmode.wrappers.running_stats import RunningMeanStd, normalize

__all__ = ["FrameStackObservation", "NormalizeObservation"]


class NormalizeObservation(RunningStatistics, StatefulWrapper):
    """Normalise Box observations to mean 0 and variance 1, per dimension.

    Same arguments and statistics as
    :class:`gymnasium.wrappers.vector.NormalizeObservation` (over a NEXT_STEP env
    it returns exactly what Gymnasium's does given the same statistics, see
    below), and right in every mode: the running
    statistics (``obs_rms``) are updated once per call with every observation it
    revealed, each exactly once: after ``reset``, the reset sub-envs' observations
    (not the untouched rows of a masked reset, which it returns as the call
    before did); after ``step``, every returned
    observation and the final observations in ``info["final_obs"]``. Those final
    observations are normalised too, in time order as NEXT_STEP reveals them: with
    the statistics that include them but not yet the first observations of the
    episodes that replace them (a second update follows for those), so episodes
    that end together are normalised alike in every mode.

    ``obs_rms`` is a :class:`vecmode.wrappers.running_stats.RunningMeanStd`:
    Gymnasium's class, with float32 statistics as Gymnasium's wrapper keeps them
    (for float32 observations; float64 ones make them float64, in both), updated
    in float64 at a fraction of the cost (Gymnasium's arithmetic is float32
    there, so the two agree to float32 rounding); any object with ``mean``,
    ``var`` and ``update`` may replace it, Gymnasium's ``RunningMeanStd``
    included, e.g. to load saved statistics into an evaluation env.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import NormalizeObservation
    >>> envs = NormalizeObservation(vecmode.make_vec("CartPole-v1", num_envs=4,
    ...     autoreset_mode="SameStep", vectorization_mode="sync"))
    >>> obs, _ = envs.reset(seed=0)
    >>> for _ in range(100):
    ...     obs, *_ = envs.step(envs.action_space.sample())
    >>> bool(abs(obs.mean()) < 1), envs.obs_rms.count > 400
    (True, True)
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv, epsilon: float = 1e-8) -> None:
        """``epsilon``: added to the variance before its square root."""
        super().__init__(env)
        space = self.env.single_observation_space
        if not isinstance(space, Box):
            raise TypeError(errors.needs_box(type(self).__name__, space))
        self.single_observation_space = Box(
            low=-np.inf, high=np.inf, shape=space.shape, dtype=np.float32
        )
        self.observation_space = batch_space(
            self.single_observation_space, self.num_envs
        )
        # float32, as Gymnasium's (the dtype of the normalised observations)
        self.obs_rms = RunningMeanStd(
            shape=space.shape, dtype=self.single_observation_space.dtype
        )
        self.epsilon = self._checked_epsilon(epsilon)
        self._update_running_mean = True

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """Normalise a batch with the current statistics (no update): float32
        ``(observations - mean) / sqrt(var + epsilon)``, Gymnasium's arithmetic."""
        rms = self.obs_rms
        return normalize(observations, rms.mean, rms.var, self.epsilon)

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        """The reset sub-envs' observations update the statistics and are
        normalised with them; a masked reset's other rows stay as returned."""
        obs, infos = super()._reset_result(obs, infos, state)
        out = self._reset_normalised(
            self.obs_rms, obs, self.boundary.starts, self.normalize
        )
        return out, infos

    def _step_result(self, result: StepResult) -> StepResult:
        """Returned and final observations update the statistics, in one go."""
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        finals = self.boundary.final_in_info
        ended = count_nonzero(finals) > 0
        if not ended:
            if self._update_running_mean:
                self.obs_rms.update(obs)
            return self.normalize(obs), rewards, terminations, truncations, infos
        # In time order, as NEXT_STEP reveals them: the observations moved to
        # (final ones included) first, normalising the final ones; then the new
        # episodes' first observations. Episodes that end together thus get the
        # same statistics, hence the same outputs, in every mode.
        if self._update_running_mean:
            self.obs_rms.update(self.last_observations(obs, infos))
        infos = map_final_observations(
            infos, obs, self.normalize, self.env, self, type(self).__name__
        )
        self._update_rows(self.obs_rms, obs, finals)
        return self.normalize(obs), rewards, terminations, truncations, infos


_STACKABLE = (Box, Discrete, MultiDiscrete, MultiBinary)


def _leaves(space: Space, *values: Any) -> Iterator[tuple[Any, ...]]:
    """The leaves of values structured like ``space`` (Dict / Tuple), in order."""
    if isinstance(space, Dict):
        for key, sub in space.spaces.items():
            yield from _leaves(sub, *(value[key] for value in values))
    elif isinstance(space, Tuple):
        for j, sub in enumerate(space.spaces):
            yield from _leaves(sub, *(value[j] for value in values))
    else:
        yield values


def _tree_map(space: Space, fn: Callable[[Any], Any], value: Any) -> Any:
    if isinstance(space, Dict):
        return {
            key: _tree_map(sub, fn, value[key]) for key, sub in space.spaces.items()
        }
    if isinstance(space, Tuple):
        return tuple(_tree_map(sub, fn, value[j]) for j, sub in enumerate(space.spaces))
    return fn(value)


def _leaf_spaces(space: Space) -> Iterator[Space]:
    if isinstance(space, Dict):
        for sub in space.spaces.values():
            yield from _leaf_spaces(sub)
    elif isinstance(space, Tuple):
        for sub in space.spaces:
            yield from _leaf_spaces(sub)
    else:
        yield space


class FrameStackObservation(StatefulWrapper):
    """Stack each sub-env's last ``stack_size`` observations (Gymnasium has none).

    A vector version of :class:`gymnasium.wrappers.FrameStackObservation`, with
    its arguments: each sub-env returns what that single-env wrapper would return
    on it, in every mode. Every episode starts a fresh stack, padded with
    ``padding_type``: ``"reset"`` (the first observation), ``"zero"``, or a
    custom observation of the env's single observation space. The final stacked
    observation of every ended episode is where the mode puts final observations
    (the returned observation, or ``info["final_obs"]`` in SAME_STEP).

    Observations may be Box, Discrete, MultiDiscrete, MultiBinary or Dict / Tuple
    spaces of those; the stacked space is ``batch_space(single_space, stack_size)``
    per sub-env.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import FrameStackObservation
    >>> envs = FrameStackObservation(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...     autoreset_mode="SameStep", max_episode_steps=2,
    ...     vectorization_mode="sync"), stack_size=3)
    >>> obs, _ = envs.reset(seed=0)
    >>> obs.shape
    (2, 3, 4)
    >>> _ = envs.step(np.array([0, 1]))
    >>> obs, _, _, truncations, infos = envs.step(np.array([0, 1]))
    >>> truncations, infos["final_obs"][0].shape
    (array([ True,  True]), (3, 4))
    >>> bool((obs[0] == obs[0][0]).all())  # a fresh stack of the new first obs
    True
    >>> envs.close()
    """

    def __init__(
        self, env: VectorEnv, stack_size: int, *, padding_type: Any = "reset"
    ) -> None:
        """Args as :class:`gymnasium.wrappers.FrameStackObservation`.

        Args:
            env: the vector env to wrap.
            stack_size: how many observations to stack (> 0).
            padding_type: ``"reset"``, ``"zero"``, or an observation of the env's
                single observation space to pad new stacks with.
        """
        super().__init__(env)
        space = self.env.single_observation_space
        if not np.issubdtype(type(stack_size), np.integer):
            raise TypeError(
                f"The stack_size is expected to be an integer, actual type: "
                f"{type(stack_size)}"
            )
        if not stack_size > 0:
            raise ValueError(
                f"The stack_size needs to be greater than zero, actual value: "
                f"{stack_size}"
            )
        unstackable = [s for s in _leaf_spaces(space) if not isinstance(s, _STACKABLE)]
        if unstackable:
            raise TypeError(not_stackable(space, unstackable[0]))
        if isinstance(padding_type, str) and padding_type in ("reset", "zero"):
            # "zero": Gymnasium's create_zero_array, as its wrapper pads: 0 where
            # the space holds it, else a Box's bound nearest 0, a Discrete's or
            # MultiDiscrete's start
            self.padding_value: Any = create_zero_array(space)
        elif not isinstance(padding_type, str) and padding_type in space:
            self.padding_value = padding_type
            padding_type = "_custom"
        else:
            raise ValueError(padding_type_message(padding_type, space))
        self.stack_size = int(stack_size)
        self.padding_type = padding_type
        self.single_observation_space = batch_space(space, n=self.stack_size)
        self.observation_space = batch_space(
            self.single_observation_space, self.num_envs
        )
        self._space = space
        self.stacks = create_empty_array(
            self.single_observation_space, self.num_envs, fn=np.zeros
        )
        self._finals: dict[int, Any] = {}

    def episode_start(self, observations: Any, mask: np.ndarray) -> None:
        """A fresh stack, padded, ending with the first observation."""
        rows: Any = slice(None) if count_nonzero(mask) == len(mask) else mask
        if self.padding_type == "reset":
            for stack, obs in _leaves(self._space, self.stacks, observations):
                stack[rows] = np.expand_dims(obs[rows], 1)
            return
        leaves = _leaves(self._space, self.stacks, observations, self.padding_value)
        for stack, obs, value in leaves:
            stack[rows, :-1] = value
            stack[rows, -1] = obs[rows]

    def transition(
        self,
        observations: Any,
        rewards: np.ndarray,
        terminations: np.ndarray,
        truncations: np.ndarray,
        mask: np.ndarray,
    ) -> None:
        """Push each sub-env's new observation; keep the final stacks aside."""
        rows: Any = slice(None) if count_nonzero(mask) == len(mask) else mask
        for stack, obs in _leaves(self._space, self.stacks, observations):
            stack[rows, :-1] = stack[rows, 1:]
            stack[rows, -1] = obs[rows]
        finals = self.boundary.final_in_info
        if count_nonzero(finals):
            self._finals = {i: self._row(i) for i in np.flatnonzero(finals).tolist()}

    def _row(self, i: int) -> Any:
        return _tree_map(
            self.single_observation_space, lambda leaf: leaf[i].copy(), self.stacks
        )

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        """Reset sub-envs get a fresh stack, the others keep theirs."""
        _, infos = super()._reset_result(obs, infos, state)
        return copy_batch(self.stacks), infos

    def _step_result(self, result: StepResult) -> StepResult:
        """The stacks (final stacks in ``final_obs`` where ended)."""
        _, rewards, terminations, truncations, infos = super()._step_result(result)
        if self._finals:
            finals, self._finals = self._finals, {}
            infos = with_final_observations(infos, finals)
        return copy_batch(self.stacks), rewards, terminations, truncations, infos


# ------------------------------------------------------------------ messages


def not_stackable(space: Any, leaf: Any) -> str:
    return (
        f"FrameStackObservation cannot stack observations of {space}: {leaf} is not "
        f"a Box, Discrete, MultiDiscrete or MultiBinary space (nor a Dict / Tuple of "
        f"them). Transform the observations into such a space first."
    )


def padding_type_message(value: Any, space: Any) -> str:
    return (
        f"Unexpected `padding_type` {value!r}: use 'reset', 'zero', or an "
        f"observation of the env's single observation space ({space})."
    )
