"""Base classes that make a vector wrapper right in every autoreset mode, and the
helpers they share. Subclass one and implement one method; the base does what
depends on the mode, declares all three modes and passes ``reset_mask`` down."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from gymnasium import Env, Space
from gymnasium.error import InvalidBound
from gymnasium.logger import warn
from gymnasium.spaces import Box
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from vecmode import _arrays, _rows, errors, modes
from vecmode._numpy import count_nonzero, true_indices
from vecmode.core import StepResult, check_action_batch, copy_batch
from vecmode.env_classes import async_pool_fault, layers, lists_infos
from vecmode.forwarding import ForwardingWrapper, reset_arguments
from vecmode.modes import merge_final_observations
from vecmode.registry import supports

Infos = dict[str, Any]
Mask = np.ndarray | None  # a reset's mask; None: a full reset

__all__ = [
    "ActionWrapper",
    "ObservationWrapper",
    "RewardWrapper",
    "StatefulWrapper",
    "forward_reset",
    "map_final_observations",
    "merge_final_observations",
]


def forward_reset(
    env: VectorEnv, seed: Any, options: dict[str, Any] | None, who: str = "wrapper"
) -> tuple[Any, dict[str, Any], np.ndarray | None]:
    """Reset ``env`` with a validated mask; return ``(obs, infos, mask)``, ``mask``
    None for a full reset."""
    seed, options, mask = reset_arguments(env, seed, options)
    obs, infos = env.reset(seed=seed, options=options)
    check_infos(infos, who)
    return obs, infos, mask


def check_infos(infos: Any, who: str, got: str = "") -> None:
    """Raise a clear error when ``infos`` is not Gymnasium's batched dict."""
    if type(infos) is not dict and not isinstance(infos, dict):
        raise errors.InfoLayoutError(
            f"{who} needs the wrapped env's infos as Gymnasium's batched dict, got "
            f"{got or type(infos).__name__}: make DictInfoToList the outermost "
            f"wrapper."
        )


def empty_batch(space: Space, num_envs: int) -> Any:
    """A new batch of ``num_envs`` items of ``space`` to concatenate into."""
    return create_empty_array(space, num_envs)


def iterate_batch(batched_space: Space, batch: Any) -> Any:
    """The single items of ``batch``, an element of ``batched_space`` (pass the
    env's own: building one with ``batch_space`` costs more than a step)."""
    if type(batch) is np.ndarray and type(batched_space) is Box:
        return iter(batch)
    return iterate(batched_space, batch)


def map_items(
    func: Callable[[Any], Any],
    batched_space: Space,
    batch: Any,
    single_space: Space,
    num_envs: int,
) -> Any:
    """``func`` of each item of ``batch`` (of ``batched_space``), in a new batch
    of ``num_envs`` items of ``single_space``."""
    return concatenate(
        single_space,
        [func(item) for item in iterate_batch(batched_space, batch)],
        empty_batch(single_space, num_envs),
    )


class SpaceEnv(Env):
    """A single env that is only its spaces, to build a single-env wrapper on."""

    def __init__(
        self, observation_space: Space | None = None, action_space: Space | None = None
    ) -> None:
        if observation_space is not None:
            self.observation_space = observation_space
        if action_space is not None:
            self.action_space = action_space


def set_spaces(
    wrapper: Any, kind: str, space: Space | None, single_space: Space | None
) -> None:
    """Set ``{kind}_space`` / ``single_{kind}_space`` of ``wrapper`` as
    Gymnasium's transforms do (``kind``: ``"observation"`` or ``"action"``)."""
    if single_space is not None:
        setattr(wrapper, f"single_{kind}_space", single_space)
    if space is not None:
        setattr(wrapper, f"{kind}_space", space)
    elif single_space is not None:
        setattr(wrapper, f"{kind}_space", batch_space(single_space, wrapper.num_envs))
    batched = batch_space(getattr(wrapper, f"single_{kind}_space"), wrapper.num_envs)
    if getattr(wrapper, f"{kind}_space") != batched:
        warn(
            f"For {wrapper.env}, the {kind} space and the batched single {kind} "
            f"space don't match as expected, {kind}_space="
            f"{getattr(wrapper, f'{kind}_space')}, batched single_{kind}_space="
            f"{batched}"
        )


def map_final_observations(
    infos: Infos,
    observations: Any,
    transform: Any,
    inner: VectorEnv,
    outer: VectorEnv,
    who: str = "wrapper",
) -> Infos:
    """``infos`` with its final observations (merged into ``observations``, the
    batch ``inner`` returned) replaced by ``transform`` of them, in ``outer``'s
    space."""
    found = modes.final_observations(infos)
    if found is None:
        return infos
    rows = found[0]
    transformed = transform(
        merge_final_observations(inner, observations, infos, rows, who)
    )
    if type(rows) is not np.ndarray:  # another library's batch: in its layout
        return modes.with_final_batch(infos, rows, transformed)
    return replace_final_observations(infos, rows, transformed, outer)


def replace_final_observations(
    infos: Infos, rows: np.ndarray, batch: Any, env: VectorEnv
) -> Infos:
    """``infos`` whose final observation of sub-env ``i`` is item ``i`` of
    ``batch`` (an element of ``env.observation_space``), for the ``rows``."""
    indices = true_indices(rows)
    singles: Any = batch
    if type(batch) is not np.ndarray or type(env.observation_space) is not Box:
        singles = list(iterate_batch(env.observation_space, batch))
    return modes.with_final_observations(
        infos, {i: copy_batch(singles[i]) for i in indices}
    )


# masks are counted with np.count_nonzero: one C call, cheaper than any() / all()
class MaskedResetWrapper(ForwardingWrapper):
    """The base of the bases: passes ``reset_mask`` down validated (as ``state``
    to :meth:`_reset_result`, None for a full reset) and checks the infos."""

    #: An empty mask of an array env's library and device, from its first reset
    #: (its library's name before): a caller's NumPy mask is handed to the env as
    #: such a mask.
    _like: Any = None

    def __init__(self, env: VectorEnv) -> None:
        if lists_infos(env):  # (refused when built, not at the first reset)
            check_infos([], type(self).__name__, "a list (DictInfoToList is below it)")
        if fault := async_pool_fault(env, type(self).__name__, "run"):
            raise errors.IncompatibleModeError(fault)
        super().__init__(env)
        self._array_env = _arrays.is_array_env(env)
        if self._array_env:
            self._like = _arrays.declared_namespace(env)

    def _reset_arguments(
        self, seed: Any, options: dict[str, Any] | None
    ) -> tuple[Any, dict[str, Any] | None, Any]:
        return reset_arguments(self.env, seed, options, self._like)

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        check_infos(infos, type(self).__name__)
        if isinstance(self._like, str):  # (not the batch: no pinning)
            self._like = _rows.in_library(np.zeros(0, np.bool_), _arrays.leaf(obs))
        return obs, infos

    @property
    def autoreset_mode(self) -> AutoresetMode | None:
        """The mode this layer returns (TorchRL reads ``envs.autoreset_mode``)."""
        return modes.mode_of(self)


@supports(*modes.MODES)
class ObservationWrapper(MaskedResetWrapper):
    """Base for a wrapper that transforms observations, right in every mode.

    Implement :meth:`observations` (a batch in, a batch out); it also transforms
    the final observations in ``info["final_obs"]``, in a full-size batch.

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

    #: It transforms final observations: refused over a simulator that loses them.
    reads_final_observations = True

    def observations(self, observations: Any) -> Any:
        """Transform a batch of observations (``num_envs`` rows)."""
        raise NotImplementedError

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        return self.observations(obs), infos

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = result
        check_infos(infos, type(self).__name__)
        if modes.final_observations(infos) is not None:
            infos = self.final_observations(infos, obs)
        return self.observations(obs), rewards, terminations, truncations, infos

    def final_observations(self, infos: Infos, observations: Any) -> Infos:
        """``infos`` with its final observations transformed (a new dict), by
        default through :meth:`observations`."""
        return map_final_observations(
            infos, observations, self.observations, self.env, self, type(self).__name__
        )


@supports(*modes.MODES)
class ActionWrapper(MaskedResetWrapper):
    """Base for a wrapper that transforms actions: implement :meth:`actions`."""

    #: It reads no final observation (any layout suits it).
    reads_final_observations = False

    def actions(self, actions: Any) -> Any:
        """Transform a batch of actions (``num_envs`` rows) for the wrapped env."""
        raise NotImplementedError

    def _step_actions(self, actions: Any) -> Any:
        if type(actions) is np.ndarray and actions.shape != self.action_space.shape:
            check_action_batch(self.single_action_space, actions, self.num_envs)
        return self.actions(actions)


class _Tracked(MaskedResetWrapper):
    """Holds the :class:`BoundaryTracker` of the wrapped env and the last boundary."""

    boundaries: modes.BoundaryTracker
    boundary: modes.Boundary
    #: It tracks episodes: refused where reset() keeps pending autoresets.
    keeps_row_state = True

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        # share the nearest tracked layer's boundaries: computed once per stack
        below = (x.boundaries for x in layers(env) if isinstance(x, _Tracked))
        self.boundaries = modes.BoundaryTracker(
            modes.mode_of(env), self.num_envs, source=next(below, None)
        )
        self.boundary = self.boundaries.reset(None)

    def _step_actions(self, actions: Any) -> Any:
        if self.boundaries.ended.count:  # (in DISABLED: not stepped before a reset)
            self.boundaries.refuse_ended_step()
        return super()._step_actions(actions)

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        self.boundary = self.boundaries.reset(state, like=obs)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        check_infos(result[4], type(self).__name__)
        self.boundary = self.boundaries.step(result[2], result[3])
        return result


@supports(*modes.MODES)
class RewardWrapper(_Tracked):
    """Base for a wrapper that transforms rewards: implement :meth:`rewards`.
    NEXT_STEP's reset step (whose action the env ignored) keeps reward 0."""

    #: It reads no final observation (any layout suits it).
    reads_final_observations = False

    def rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Transform a batch of rewards (``num_envs`` entries)."""
        raise NotImplementedError

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = super()._step_result(result)
        real = self.boundary.real
        out = self.rewards(rewards)
        if real is self.boundaries.quiet.real:  # all real: the shared mask
            return obs, out, terminations, truncations, infos
        if type(real) is not np.ndarray:  # another library's: its where
            zeros = cast(Any, _arrays.namespace(out)).zeros_like(out)
            out = _arrays.rows_where(real, out, zeros)
        elif count_nonzero(real) < len(real):
            out = np.where(real, out, 0)
        return obs, out, terminations, truncations, infos


class HookReads:
    """A StatefulWrapper's ``reads_final_observations``: ``reads`` for the
    :meth:`~StatefulWrapper.transition` hook of the class declaring it, True for
    another hook (a subclass's, or one set on the instance), which gets them."""

    def __init__(self, reads: bool) -> None:
        self.reads = reads

    def __set_name__(self, owner: type, name: str) -> None:
        own = vars(owner)
        self.hooks = (own.get("transition"), own.get("_array_transition"))

    def __get__(self, obj: Any, cls: type) -> bool:
        hook = getattr(cls if obj is None else obj, "transition", None)
        return self.reads if getattr(hook, "__func__", hook) in self.hooks else True


@supports(*modes.MODES)
class StatefulWrapper(_Tracked):
    """Base for a wrapper that keeps per-sub-env state across steps.

    The base calls the hooks once per event, in every mode: :meth:`episode_start`
    where an episode starts, :meth:`transition` on each real transition (first,
    in a step). :attr:`boundary` says what the last call meant for each sub-env.
    To change what ``reset`` / ``step`` return, override :meth:`_reset_result` /
    :meth:`_step_result`, calling ``super()`` first.

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

    A class whose :meth:`transition` reads no observation says
    ``reads_final_observations = False``: its hook then gets the step's batch,
    and it runs over simulators that lose final observations.
    """

    #: Whether :meth:`transition` gets the final observations (default: where
    #: the class has its own hook); False: the step's batch.
    reads_final_observations: Any = HookReads(False)

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

    def _reset_result(self, obs: Any, infos: Infos, state: Mask) -> tuple[Any, Any]:
        obs, infos = super()._reset_result(obs, infos, state)
        b = self.boundary
        if _rows.some(b.starts):
            self.episode_start(obs, b.starts)
        return obs, infos

    def _step_result(self, result: StepResult) -> StepResult:
        result = super()._step_result(result)
        obs, rewards, terminations, truncations, infos = result
        b = self.boundary
        quiet = b is self.boundaries.quiet
        # a hook still the base's no-op is not called, nor its arguments built
        transition = self.transition
        if getattr(transition, "__func__", None) is not StatefulWrapper.transition and (
            quiet or _rows.some(b.real)
        ):
            reads = not quiet and self.reads_final_observations
            moved = self.last_observations(obs, infos) if reads else obs
            transition(moved, rewards, terminations, truncations, b.real)
        episode_start = self.episode_start
        if (
            not quiet
            and _rows.some(b.starts)
            and getattr(episode_start, "__func__", None)
            is not StatefulWrapper.episode_start
        ):
            episode_start(obs, b.starts)
        return result

    def last_observations(self, observations: Any, infos: Infos) -> Any:
        """The observations the last step moved to (a copy holding the final
        observations where the info has them)."""
        rows = self.boundary.final_in_info
        if not _rows.some(rows):
            return observations
        return merge_final_observations(
            self.env, observations, infos, rows, type(self).__name__
        )


class RunningStatistics:
    """Mixin of the normalising wrappers. ``update_running_mean = False`` freezes
    the statistics; ``batch_dependent`` tells :func:`vecmode.testing.check_wrapper`
    that the outputs pool the sub-envs of a call (the statistics see the batch)."""

    update_running_mean: bool = True
    batch_dependent: bool = True

    @staticmethod
    def _checked_epsilon(epsilon: float) -> float:
        if epsilon <= 0:
            raise InvalidBound(
                f"`epsilon` should be strictly positive. Received {epsilon}"
            )
        return epsilon
