"""Observation wrappers with state: normalisation and frame stacking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space, create_empty_array
from gymnasium.wrappers.utils import create_zero_array

from vecmode import _arrays, _rows, modes
from vecmode._numpy import count_nonzero
from vecmode.core import StepResult, copy_batch
from vecmode.modes import MODES
from vecmode.registry import supports
from vecmode.wrappers import array_stats, base
from vecmode.wrappers.running_stats import RunningMeanStd, normalize


@supports(*MODES, array_native=True)
class NormalizeObservation(
    base.RunningStatistics, array_stats.ArrayPath, base.StatefulWrapper
):
    """Gymnasium's ``NormalizeObservation``, right in every mode: ``obs_rms`` sees
    every observation once, the final ones included; same arguments. Over torch
    or JAX batches, ``obs_rms`` is an
    :class:`~vecmode.wrappers.array_stats.ArrayRunningMeanStd` in that library
    (``obs_rms.to_numpy()`` to save it; a NumPy one assigned is converted).

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import NormalizeObservation
    >>> envs = NormalizeObservation(vecmode.make_vec("CartPole-v1", 2, "sync",
    ...     autoreset_mode="SameStep", max_episode_steps=1))
    >>> _ = envs.reset(seed=0)
    >>> _ = envs.step(np.array([0, 1]))  # the final and the first observations
    >>> envs.obs_rms.count
    6.0001
    >>> envs.close()
    """

    #: Its statistics see final observations: refused where they are lost.
    reads_final_observations = True
    obs_rms = array_stats.Statistics()
    #: The array path's clip of the normalised observations (PPOStack's).
    _array_bound: float = array_stats.INF

    def __init__(self, env: VectorEnv, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        space = self.env.single_observation_space
        if not isinstance(space, Box):
            raise TypeError(
                f"{type(self).__name__} needs a Box single observation space, got "
                f"{space}. Flatten the observations first (vecmode.wrappers."
                f"FlattenObservation; over torch or JAX batches, TransformObservation "
                f"joining them) or normalise the Box parts yourself."
            )
        base.set_spaces(self, "observation", None, Box(-np.inf, np.inf, space.shape))
        self.obs_rms = RunningMeanStd(shape=space.shape, dtype=np.float32)
        self.epsilon = self._checked_epsilon(epsilon)
        self._merged: tuple[Any, Any] | None = None
        # what the rows a masked reset does not reset come back as, the
        # statistics having moved since: NumPy, the statistics each row was
        # last normalised with, [(mean, var, rows or None: all)]; other
        # libraries, a copy of the last batch
        self._kept: Any = None
        self._arm("_reset_result")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        super()._to_array_path(xp, leaf)
        self._dtype = xp.float32

    def _array_normalize(self, observations: Any) -> Any:
        rms: Any = self.obs_rms
        bound = self._array_bound
        return array_stats.normalize(
            observations, rms, self.epsilon, self._dtype, bound
        )

    def _array_reset_result(
        self, obs: Any, infos: base.Infos, state: base.Mask
    ) -> tuple[Any, Any]:
        """The reset rows update ``obs_rms``; the others as last returned."""
        obs, infos = super()._array_reset_result(obs, infos, state)
        kept, self._kept = self._kept, None
        starts = None if state is None else self.boundary.starts
        if not self.update_running_mean:
            obs = self.normalize(obs)
        else:
            obs = self._updated(obs, starts)
        if kept is not None and starts is not None:
            obs = _arrays.rows_where(~starts, kept, obs)
        return self._keep(obs), infos

    def _keep(self, obs: Any) -> Any:
        """Keep a copy of ``obs``, the batch returned (JAX's arrays are immutable)."""
        xp = self.array_xp
        jax = _arrays.name_of(xp) == "jax.numpy"
        self._kept = obs if jax else xp.asarray(obs, copy=True)
        return obs

    def _updated(self, obs: Any, mask: Any) -> Any:
        """``obs`` normalised, the rows of ``mask`` (all: None) after updating."""
        rms: Any = self.obs_rms
        eps, bound = self.epsilon, self._array_bound
        return rms.normalized(obs, mask, eps, self._dtype, bound)

    def _array_step_result(self, result: StepResult) -> StepResult:
        self._merged = self._kept = None
        obs, rewards, terminations, truncations, infos = super()._array_step_result(
            result
        )
        cached, self._merged = self._merged, None
        rms: Any = self.obs_rms
        b = self.boundary
        found = None if b is self.boundaries.quiet else modes.final_observations(infos)
        if found is None:
            updating = self.update_running_mean
            out = self._updated(obs, None) if updating else self.normalize(obs)
            return self._keep(out), rewards, terminations, truncations, infos
        rows = found[0]
        if cached is not None and cached[0] is obs:
            merged = cached[1]
        else:
            who = type(self).__name__
            merged = modes.merge_final_observations(self.env, obs, infos, rows, who)
        if self.update_running_mean:
            rms.update(merged)
        infos = modes.with_final_batch(infos, rows, self.normalize(merged))
        if not self.update_running_mean:
            obs = self.normalize(obs)
        else:
            obs = self._updated(obs, b.final_in_info)  # the firsts: as a masked reset
        return self._keep(obs), rewards, terminations, truncations, infos

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """Normalise a batch with the current statistics (no update)."""
        rms = self.obs_rms
        return normalize(observations, rms.mean, rms.var, self.epsilon)

    def _reset_result(
        self, obs: Any, infos: base.Infos, state: base.Mask
    ) -> tuple[Any, Any]:
        """The reset rows update ``obs_rms``; the others as last returned."""
        obs, infos = super()._reset_result(obs, infos, state)
        kept, self._kept = self._kept, None
        starts = self.boundary.starts
        out = self._with_firsts(obs, starts)
        if kept is None or state is None:
            self._kept = [(*self._stats(), None)]
            return out, infos
        others, self._kept = ~starts, [(*self._stats(), starts)]
        for mean, var, rows in kept:
            rows = others if rows is None else others & rows
            if count_nonzero(rows):
                out[rows] = self._normalized_with((mean, var), obs[rows])
                self._kept.append((mean, var, rows))
        return out, infos

    def _stats(self) -> tuple[Any, Any]:
        """The statistics now (``update`` replaces the arrays: a snapshot)."""
        return self.obs_rms.mean, self.obs_rms.var

    def _normalized_with(self, stats: tuple[Any, Any], obs: np.ndarray) -> Any:
        """:meth:`normalize` of ``obs`` with the statistics ``stats``."""
        rms, now = self.obs_rms, self._stats()
        rms.mean, rms.var = stats
        try:
            return self.normalize(obs)
        finally:
            rms.mean, rms.var = now

    def _with_firsts(self, obs: np.ndarray, firsts: np.ndarray) -> np.ndarray:
        """``obs`` normalised: the rows of ``firsts``, first observations of
        episodes, after they update ``obs_rms``; the others before."""
        count = count_nonzero(firsts)
        if not count or not self.update_running_mean:
            return self.normalize(obs)
        if count == len(firsts):
            self.obs_rms.update(obs)
            return self.normalize(obs)
        out = self.normalize(obs)
        first = obs[firsts]
        self.obs_rms.update(first)
        out[firsts] = self.normalize(first)
        return out

    def last_observations(self, observations: Any, infos: base.Infos) -> Any:
        """As the base's, kept for the rest of the step (merged once)."""
        merged = super().last_observations(observations, infos)
        self._merged = (observations, merged)
        return merged

    def _step_result(self, result: StepResult) -> StepResult:
        """In DISABLED's order: update, normalise the finals, normalise the other
        rows, update with the firsts and normalise them."""
        self._merged = self._kept = None
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        cached, self._merged = self._merged, None
        finals = self.boundary.final_in_info
        if not count_nonzero(finals):
            if self.update_running_mean:
                self.obs_rms.update(obs)
            self._kept = [(*self._stats(), None)]
            return self.normalize(obs), rewards, terminations, truncations, infos
        if cached is not None and cached[0] is obs:
            merged = cached[1]
        else:
            merged = super().last_observations(obs, infos)
        if self.update_running_mean:
            self.obs_rms.update(merged)
        found = modes.final_observations(infos)
        rows = found[0] if found is not None else np.zeros_like(finals)
        if rows is not finals and (
            rows.shape != finals.shape or count_nonzero(rows != finals)
        ):
            who = type(self).__name__
            merged = modes.merge_final_observations(self.env, obs, infos, rows, who)
        infos = base.replace_final_observations(
            infos, rows, self.normalize(merged), self
        )
        before = self._stats()
        obs = self._with_firsts(obs, finals)  # as a masked reset would
        self._kept = [(*before, ~finals), (*self._stats(), finals)]
        return obs, rewards, terminations, truncations, infos


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


@supports(*MODES, array_native=True)
class FrameStackObservation(array_stats.ArrayPath, base.StatefulWrapper):
    """Stack each sub-env's last ``stack_size`` observations, in every mode.

    Each sub-env returns what :class:`gymnasium.wrappers.FrameStackObservation`
    would return on it; every episode starts a fresh stack. Box, Discrete,
    MultiDiscrete, MultiBinary observations, and Dict / Tuple of them (NumPy's
    only); over torch or JAX batches the stacks live in that library and device.

    Args:
        stack_size: how many observations to stack (> 0).
        padding_type: ``"reset"`` (the first observation), ``"zero"`` or an observation.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import FrameStackObservation
    >>> envs = FrameStackObservation(vecmode.make_vec("CartPole-v1", 2, "sync",
    ...     autoreset_mode="SameStep", max_episode_steps=2), stack_size=3)
    >>> _ = envs.reset(seed=0)
    >>> _ = envs.step(np.array([0, 1]))
    >>> obs, _, _, truncations, infos = envs.step(np.array([0, 1]))
    >>> obs.shape, infos["final_obs"][0].shape
    ((2, 3, 4), (3, 4))
    >>> bool((obs[0] == obs[0][0]).all())  # a fresh stack of the new first obs
    True
    >>> envs.close()
    """

    #: Its final stacks are built from final observations.
    reads_final_observations = True
    #: A stack holds its episode's observations only (check_wrapper checks it).
    episodic = True

    def __init__(
        self, env: VectorEnv, stack_size: int, *, padding_type: Any = "reset"
    ) -> None:
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
        for (leaf,) in _leaves(space, space):
            if not isinstance(leaf, _STACKABLE):
                raise TypeError(
                    f"FrameStackObservation cannot stack observations of {space}: "
                    f"{leaf} is not a Box, Discrete, MultiDiscrete or MultiBinary. "
                    f"Transform the observations into such spaces first."
                )
        if isinstance(padding_type, str) and padding_type in ("reset", "zero"):
            self.padding_value: Any = create_zero_array(space)
        elif not isinstance(padding_type, str) and padding_type in space:
            self.padding_value = padding_type
            padding_type = "_custom"
        else:
            raise ValueError(
                f"Unexpected `padding_type` {padding_type!r}: use 'reset', 'zero', "
                f"or an observation of the env's single observation space ({space})."
            )
        self.stack_size = int(stack_size)
        self.padding_type = padding_type
        base.set_spaces(
            self, "observation", None, batch_space(space, n=self.stack_size)
        )
        self._space = space
        self.stacks: Any = create_empty_array(
            self.single_observation_space, self.num_envs, fn=np.zeros
        )
        self._finals: dict[int, Any] = {}
        self._arm("_reset_result")

    def _to_array_path(self, xp: Any, leaf: Any) -> None:
        if isinstance(self._space, (Dict, Tuple)):
            raise TypeError(
                f"FrameStackObservation stacks torch/JAX batches of one array, not "
                f"{self._space}: join them first (TransformObservation with your "
                f"library's concatenate and a Box single_observation_space)."
            )
        super()._to_array_path(xp, leaf)
        n, like = self.num_envs, {"dtype": leaf.dtype, "device": self.array_device}
        self.stacks = xp.zeros((n, self.stack_size, *leaf.shape[1:]), **like)
        pad = xp.asarray(np.asarray(self.padding_value), **like)
        self._pad = xp.broadcast_to(pad, (n, self.stack_size - 1, *pad.shape))

    def _array_episode_start(self, observations: Any, mask: Any) -> None:
        first, pad = observations[:, None], self._pad
        if self.padding_type == "reset":
            pad = self.array_xp.broadcast_to(first, pad.shape)
        fill = self.array_xp.concat([pad, first], axis=1)
        self.stacks = _arrays.rows_where(mask, fill, self.stacks)

    def _array_transition(self, obs: Any, *rest: Any) -> None:
        """The mask's rows (``rest[-1]``) shift, into new arrays: never written."""
        moved = self.array_xp.concat([self.stacks[:, 1:], obs[:, None]], axis=1)
        self.stacks = self._moved = _arrays.rows_where(rest[-1], moved, self.stacks)

    def _array_step_result(self, result: StepResult) -> StepResult:
        *_, infos = result = super()._array_step_result(result)
        b = self.boundary
        if b is not self.boundaries.quiet and _rows.some(b.final_in_info):
            infos = modes.with_final_batch(infos, b.final_in_info, self._moved)
        # a copy, as NumPy's path gives: the caller may write into it
        return (self.array_xp.asarray(self.stacks, copy=True), *result[1:4], infos)

    def episode_start(self, observations: Any, mask: np.ndarray) -> None:
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
        rows: Any = slice(None) if count_nonzero(mask) == len(mask) else mask
        for stack, obs in _leaves(self._space, self.stacks, observations):
            stack[rows, :-1] = stack[rows, 1:]
            stack[rows, -1] = obs[rows]
        finals = self.boundary.final_in_info
        if count_nonzero(finals):
            stacks = list(base.iterate_batch(self.observation_space, self.stacks))
            self._finals = {
                i: copy_batch(stacks[i]) for i in np.flatnonzero(finals).tolist()
            }

    def _reset_result(
        self, obs: Any, infos: base.Infos, state: base.Mask
    ) -> tuple[Any, Any]:
        _, infos = super()._reset_result(obs, infos, state)
        return copy_batch(self.stacks), infos

    def _step_result(self, result: StepResult) -> StepResult:
        _, rewards, terminations, truncations, infos = super()._step_result(result)
        if self._finals:
            finals, self._finals = self._finals, {}
            infos = modes.with_final_observations(infos, finals)
        return copy_batch(self.stacks), rewards, terminations, truncations, infos
