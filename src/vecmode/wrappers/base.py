"""Base classes that make a vector wrapper correct in every autoreset mode.

Subclass one and implement one method; the base does the mode-dependent part:

* :class:`ObservationWrapper`: implement ``observations(batch)``; the base applies
  it to every returned batch AND to the ended episodes' ``info["final_obs"]``
  entries (batched, as a full-size batch), keeping ``_final_obs`` and the object
  array layout.
* :class:`ActionWrapper`: implement ``actions(batch)``.
* :class:`RewardWrapper`: implement ``rewards(batch)``; NEXT_STEP's reset-step
  reward (whose action was ignored) stays 0, whatever the transform.
* :class:`StatefulWrapper`: implement the hooks ``episode_start(obs, mask)`` and
  ``transition(obs, rewards, terminations, truncations, mask)``; the base calls
  them exactly once per episode start and per real transition, with the masks of
  the sub-envs concerned, in every mode and across partial resets.

Every base declares all three modes in the registry (:func:`vecmode.supports`), so
subclasses do too, unless they declare otherwise. All of them pass
``reset(options={"reset_mask": mask})`` down with the mask intact, validated, and
without mutating the caller's ``options``.

What a step means for each sub-env comes from :mod:`vecmode.modes`
(:class:`~vecmode.modes.BoundaryTracker`); nothing here branches on the mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import Space
from gymnasium.error import InvalidBound
from gymnasium.spaces import Box
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import (
    create_empty_array,
    iterate,
)

from vecmode._numpy import count_nonzero
from vecmode.core import StepResult, copy_batch
from vecmode.env_classes import layers
from vecmode.forwarding import ForwardingWrapper, reset_arguments
from vecmode.modes import (
    MODES,
    Boundary,
    BoundaryTracker,
    final_entries,
    final_observations,
    merge_final_observations,
    mode_of,
    with_final_observations,
)
from vecmode.registry import supports

__all__ = [
    "ActionWrapper",
    "MaskedResetWrapper",
    "ObservationWrapper",
    "RewardWrapper",
    "RunningStatistics",
    "StatefulWrapper",
    "check_infos",
    "empty_batch",
    "final_entries",
    "forward_reset",
    "iterate_batch",
    "map_final_observations",
    "merge_final_observations",
    "replace_final_observations",
    "reset_arguments",
]


def forward_reset(
    env: VectorEnv, seed: Any, options: dict[str, Any] | None, who: str = "wrapper"
) -> tuple[Any, dict[str, Any], np.ndarray | None]:
    """Reset ``env``; return ``(obs, infos, mask)``, ``mask`` None for a full reset
    (the arguments as :func:`reset_arguments` makes them, the infos checked)."""
    seed, options, mask = reset_arguments(env, seed, options)
    obs, infos = env.reset(seed=seed, options=options)
    check_infos(infos, who)
    return obs, infos, mask


def check_infos(infos: Any, who: str) -> None:
    """Raise a clear error when ``infos`` is not Gymnasium's batched dict."""
    if type(infos) is not dict and not isinstance(infos, dict):
        raise TypeError(infos_not_dict(who, infos))


def empty_batch(space: Space, num_envs: int) -> Any:
    """A new batch of ``num_envs`` items of ``space`` to concatenate into."""
    return create_empty_array(space, num_envs)


def iterate_batch(batched_space: Space, batch: Any) -> Any:
    """The single items of ``batch``, an element of ``batched_space``.

    Pass the batched space the env already holds (``env.observation_space``):
    building one with ``batch_space`` costs more than a whole wrapper step.
    """
    if type(batch) is np.ndarray and type(batched_space) is Box:
        return iter(batch)
    return iterate(batched_space, batch)


def map_final_observations(
    infos: dict[str, Any],
    observations: Any,
    transform: Any,
    inner: VectorEnv,
    outer: VectorEnv,
    who: str = "wrapper",
) -> dict[str, Any]:
    """``infos`` with each final observation replaced by its transform.

    ``observations`` is the raw batch ``inner`` returned; the ended sub-envs' rows
    are replaced by their final observations (:func:`merge_final_observations`),
    ``transform`` maps that full-size batch into ``outer``'s observation space,
    and the transformed rows go into a new object array (same layout, the mask
    untouched, the inner env's arrays not modified). Returns ``infos`` unchanged
    when no sub-env has a final observation.
    """
    found = final_observations(infos)
    if found is None:
        return infos
    rows = found[0]
    transformed = transform(
        merge_final_observations(inner, observations, infos, rows, who)
    )
    return replace_final_observations(infos, rows, transformed, outer)


def replace_final_observations(
    infos: dict[str, Any], rows: np.ndarray, batch: Any, env: VectorEnv
) -> dict[str, Any]:
    """``infos`` whose final observation of sub-env ``i`` is item ``i`` of
    ``batch``, for the ``rows`` (``batch`` is an element of
    ``env.observation_space``)."""
    indices = np.flatnonzero(rows).tolist()
    singles: Any = batch  # an array's rows, without splitting the whole batch
    if type(batch) is not np.ndarray or type(env.observation_space) is not Box:
        singles = list(iterate_batch(env.observation_space, batch))
    return with_final_observations(infos, {i: copy_batch(singles[i]) for i in indices})


# ---------------------------------------------------------------------------- bases
# Performance: on the step path, masks are tested with np.count_nonzero (one C
# call) rather than ndarray.any() / .all(), which go through numpy's Python-level
# wrappers and cost several times more on arrays of num_envs flags.
class MaskedResetWrapper(ForwardingWrapper):
    """Passes ``reset(options={"reset_mask": mask})`` down validated, as a bool
    array, in a copy of ``options`` (as every vecmode wrapper does); checks that
    infos are Gymnasium's batched dict.

    The shared base of every base below: :meth:`_reset_result` receives the mask
    (None for a full reset) as its ``state``.
    """

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        check_infos(infos, type(self).__name__)
        return obs, infos

    @property
    def autoreset_mode(self) -> AutoresetMode | None:
        """The mode of what this layer returns (its ``metadata["autoreset_mode"]``)
        as an attribute, as Gymnasium's vector envs have it: a library that reads
        ``envs.autoreset_mode`` (TorchRL's ``GymWrapper``) finds it on a stack of
        vecmode's wrappers too (Gymnasium's wrappers have no such attribute)."""
        return mode_of(self)


@supports(*MODES)
class ObservationWrapper(MaskedResetWrapper):
    """Base for a wrapper that transforms observations, right in every mode.

    Implement :meth:`observations` (a batch in, a batch out) and set
    ``single_observation_space`` / ``observation_space`` if they change. The
    transform is applied to the batch returned by ``reset`` and ``step`` and to
    the final observations in ``info["final_obs"]`` (SAME_STEP): those are put in
    a full-size batch in place of the returned rows, transformed together, and
    written into a new ``final_obs`` array (``_final_obs`` kept).

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import ObservationWrapper
    >>> class Double(ObservationWrapper):
    ...     def observations(self, observations):
    ...         return observations * 2
    >>> envs = Double(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...     autoreset_mode="SameStep", max_episode_steps=1, vectorization_mode="sync"))
    >>> obs, _ = envs.reset(seed=0)
    >>> _, _, _, _, infos = envs.step(np.array([0, 1]))
    >>> infos["_final_obs"], infos["final_obs"][0].shape
    (array([ True,  True]), (4,))
    >>> envs.close()
    """

    def observations(self, observations: Any) -> Any:
        """Transform a batch of observations (``num_envs`` rows)."""
        raise NotImplementedError

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        return self.observations(obs), infos

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = result
        check_infos(infos, type(self).__name__)
        if final_observations(infos) is not None:
            infos = self.final_observations(infos, obs)
        return self.observations(obs), rewards, terminations, truncations, infos

    def final_observations(
        self, infos: dict[str, Any], observations: Any
    ) -> dict[str, Any]:
        """``infos`` with its ``final_obs`` entries transformed (a new dict).

        By default the final observations replace their rows of the returned batch
        ``observations`` and the full-size batch goes through :meth:`observations`.
        """
        return map_final_observations(
            infos, observations, self.observations, self.env, self, type(self).__name__
        )


@supports(*MODES)
class ActionWrapper(MaskedResetWrapper):
    """Base for a wrapper that transforms actions (the same in every mode).

    Implement :meth:`actions` (a batch in, a batch out; don't write into the
    caller's batch) and set ``single_action_space`` / ``action_space`` if they
    change.
    """

    def actions(self, actions: Any) -> Any:
        """Transform a batch of actions (``num_envs`` rows) for the wrapped env."""
        raise NotImplementedError

    def _step_actions(self, actions: Any) -> Any:
        return self.actions(actions)


def _tracker_below(env: Any) -> BoundaryTracker | None:
    """The boundary tracker of the nearest tracked vecmode wrapper in ``env``'s
    stack (through any wrappers between), to share boundaries with: it computes
    each call's boundary once per stack, where the calls are the same (see
    :class:`~vecmode.modes.BoundaryTracker`)."""
    return next(
        (layer.boundaries for layer in layers(env) if isinstance(layer, _Tracked)),
        None,
    )


class _Tracked(MaskedResetWrapper):
    """Holds the :class:`BoundaryTracker` of the wrapped env and the last boundary."""

    #: What the last ``reset`` / ``step`` meant for each sub-env.
    boundary: Boundary

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.boundaries = BoundaryTracker(
            mode_of(env), self.num_envs, source=_tracker_below(env)
        )
        self.boundary = self.boundaries.reset(None)

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        self.boundary = self.boundaries.reset(state)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        check_infos(result[4], type(self).__name__)
        self.boundary = self.boundaries.step(result[2], result[3])
        return result


@supports(*MODES)
class RewardWrapper(_Tracked):
    """Base for a wrapper that transforms rewards, right in every mode.

    Implement :meth:`rewards` (a batch in, a batch out). The transform applies to
    the rewards of real transitions; NEXT_STEP's reset step (the step after an
    episode ended, whose action the env ignored) keeps reward 0 whatever the
    transform, so ``TransformReward(env, lambda r: r + 1)`` does not invent a
    reward for a step that did not happen. In the other modes every step is real.
    """

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Transform a batch of rewards (``num_envs`` entries)."""
        raise NotImplementedError

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        b = self.boundary
        out = self.rewards(rewards)
        if b is not self.boundaries.quiet and count_nonzero(b.real) < len(b.real):
            out = np.array(out, copy=True)
            out[~b.real] = 0
        return obs, out, terminations, truncations, infos


@supports(*MODES)
class StatefulWrapper(_Tracked):
    """Base for a wrapper that keeps per-sub-env state across steps.

    Override the hooks; the base calls them in every mode, exactly once per event:

    * :meth:`episode_start` with the returned observations and the mask of the
      sub-envs whose returned observation is the first of a new episode (after
      ``reset``, a masked ``reset``, or an autoreset);
    * :meth:`transition` with the observations the sub-envs moved to (for an
      ended episode, its final observation, wherever the mode puts it), the
      rewards and flags, and the mask of the sub-envs that made a real
      transition (not NEXT_STEP's reset step).

    Within one ``step``, ``transition`` runs before ``episode_start`` (in SAME_STEP
    a sub-env can end an episode and start the next in the same call). After each
    call, :attr:`boundary` says what it meant for every sub-env. ``reset`` and
    ``step`` return the wrapped env's results unchanged; to change what they
    return, override :meth:`_step_result` / :meth:`_reset_result` (calling
    ``super()`` first, which runs the hooks), so that the split async API
    (``step_async`` / ``step_wait``) gets the change too.

    >>> import numpy as np, vecmode
    >>> from vecmode.wrappers import StatefulWrapper
    >>> class CountEpisodes(StatefulWrapper):
    ...     def __init__(self, env):
    ...         super().__init__(env)
    ...         self.episodes = np.zeros(self.num_envs, dtype=int)
    ...     def episode_start(self, observations, mask):
    ...         self.episodes[mask] += 1
    >>> for mode in vecmode.MODES:
    ...     envs = CountEpisodes(vecmode.make_vec("CartPole-v1", num_envs=2,
    ...         autoreset_mode=mode, max_episode_steps=2, vectorization_mode="sync"))
    ...     _ = envs.reset(seed=0)
    ...     for _ in range(3):
    ...         _ = envs.step(np.array([0, 1]))
    ...         if envs.boundary.needs_reset.any():
    ...             _ = envs.reset(options={"reset_mask": envs.boundary.needs_reset})
    ...     print(mode.value, envs.episodes)
    NextStep [2 2]
    SameStep [2 2]
    Disabled [2 2]
    """

    def episode_start(self, observations: Any, mask: np.ndarray) -> None:
        """Sub-envs in ``mask`` start an episode; ``observations[i]`` is its first."""

    def transition(
        self,
        observations: Any,
        rewards: np.ndarray,
        terminations: np.ndarray,
        truncations: np.ndarray,
        mask: np.ndarray,
    ) -> None:
        """Sub-envs in ``mask`` made a real transition to ``observations[i]``."""

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        b = self.boundary
        if b.starts.any():
            self.episode_start(obs, b.starts)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        result = super()._step_result(result)
        b = self.boundary
        obs, rewards, terminations, truncations, infos = result
        # Performance: a hook still the base's no-op (overridden neither on the
        # class nor on the instance) is not called, and its arguments (the final
        # observations merged into a copy of the batch) are not built.
        transition: Any = self.transition
        if getattr(transition, "__func__", None) is StatefulWrapper.transition:
            transition = None
        if b is self.boundaries.quiet:
            if transition is not None:
                transition(obs, rewards, terminations, truncations, b.real)
            return result
        if transition is not None and count_nonzero(b.real):
            transition(
                self.last_observations(obs, infos),
                rewards,
                terminations,
                truncations,
                b.real,
            )
        if count_nonzero(b.starts):
            episode_start = self.episode_start
            if getattr(episode_start, "__func__", None) is not (
                StatefulWrapper.episode_start
            ):
                episode_start(obs, b.starts)
        return result

    def last_observations(self, observations: Any, infos: dict[str, Any]) -> Any:
        """The observations the last step moved to: the final ones where ended.

        The returned batch, except for sub-envs whose final observation is in
        ``info["final_obs"]`` (a copy is made then).
        """
        rows = self.boundary.final_in_info
        if not count_nonzero(rows):
            return observations
        return merge_final_observations(
            self.env,
            observations,
            infos,
            rows,
            type(self).__name__,
        )


class RunningStatistics:
    """Mixin of Gymnasium's normalising wrappers: ``update_running_mean`` and the
    check of ``epsilon``."""

    _update_running_mean: bool = True
    #: Its outputs depend on which sub-envs' steps share a call (the statistics
    #: pool the batch): :func:`vecmode.testing.check_wrapper` compares their
    #: values across modes only where episodes end together.
    batch_dependent: bool = True

    @staticmethod
    def _checked_epsilon(epsilon: float) -> float:
        if epsilon <= 0:
            raise InvalidBound(
                f"`epsilon` should be strictly positive. Received {epsilon}"
            )
        return epsilon

    @property
    def update_running_mean(self) -> bool:
        """Whether the statistics are updated (set False to freeze them)."""
        return self._update_running_mean

    @update_running_mean.setter
    def update_running_mean(self, setting: bool) -> None:
        self._update_running_mean = setting

    def _update_rows(self, rms: Any, batch: Any, mask: np.ndarray) -> None:
        """Update ``rms`` with the rows of ``batch`` in ``mask`` (the whole batch
        when every row is, nothing when none is), unless frozen."""
        if not self._update_running_mean:
            return
        count = count_nonzero(mask)
        if count == len(mask):
            rms.update(batch)
        elif count:
            rms.update(batch[mask])

    def _reset_normalised(
        self,
        rms: Any,
        observations: np.ndarray,
        starts: np.ndarray,
        normalised: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """A reset's observations, normalised: the reset rows update ``rms`` and
        are normalised with it. The others (the untouched rows of a masked
        reset) stay as the call before returned them, normalised with the
        statistics before this update, so that a sub-env acts on the observation
        it was last given (``next_obs`` of its step is ``obs`` of the next)."""
        count = count_nonzero(starts)
        if count == len(starts) or not count or not self._update_running_mean:
            self._update_rows(rms, observations, starts)
            return normalised(observations)
        out = normalised(observations)
        self._update_rows(rms, observations, starts)
        out[starts] = normalised(observations[starts])
        return out


# ------------------------------------------------------------------ messages
def infos_not_dict(who: str, got: Any) -> str:
    return (
        f"{who} needs the wrapped env's infos as Gymnasium's batched dict, got "
        f"{type(got).__name__}. A DictInfoToList wrapper (or similar) is probably "
        f"inside it: make DictInfoToList the outermost wrapper."
    )


def final_obs_missing(who: str, indices: list[int]) -> str:
    subs = ", ".join(str(i) for i in indices)
    return (
        f"{who}: sub-env(s) {subs} ended in a SAME_STEP env but info['final_obs'] / "
        f"info['_final_obs'] does not hold their final observation. The env (or a "
        f"wrapper under {who}) does not follow Gymnasium's SAME_STEP contract; check "
        f"it with vecmode.check_stack(env) and declare its real mode."
    )
