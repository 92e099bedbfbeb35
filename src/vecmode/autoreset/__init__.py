"""The autoreset policies, as wrappers that set ``metadata["autoreset_mode"]``;
:func:`with_autoreset` composes them where a conversion is exact and refuses
the others when the wrapper is built (docs/core.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard, cast

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import iterate

from vecmode import _arrays, _rows, core, env_classes, errors, modes
from vecmode.autoreset import batched, masked_reset
from vecmode.autoreset.base import (
    RESET,
    STEP,
    STEP_THEN_RESET,
    AutoresetWrapper,
)
from vecmode.autoreset.masked_reset import (
    BUILD_DISABLED,
    honours_reset_mask,
    why_not_masked,
)
from vecmode.autoreset.schedule import EpisodeSchedule, schedule_for
from vecmode.core import Executed, StepResult, VectorCore
from vecmode.env_classes import final_obs_layout, refuse_lost, vector_env_declaration
from vecmode.errors import EpisodeEndedError, IncompatibleModeError
from vecmode.infos import merge_infos, select_infos
from vecmode.registry import declaration, supports

__all__ = [
    "DisableAutoreset",
    "EpisodeSchedule",
    "GymnasiumBatch",
    "GymnasiumFinalObs",
    "NextStepAutoreset",
    "SameStepAutoreset",
    "gymnasium_layout",
    "honours_reset_mask",
    "with_autoreset",
]


_FOREIGN_SAME_STEP = (
    "A SameStep env has already reset the ended sub-envs (without the caller's "
    "seed and options), so this cannot be recovered exactly."
)


@supports(
    AutoresetMode.DISABLED,
    output=AutoresetMode.NEXT_STEP,
    why={
        AutoresetMode.NEXT_STEP: "The env already autoresets on the next step "
        "by itself (use it as it is).",
        AutoresetMode.SAME_STEP: _FOREIGN_SAME_STEP,
    },
    instead="Wrap a vecmode core directly (vecmode.make_vec(..., autoreset_mode="
    "'NextStep'), sync or async), or build the env in NextStep mode itself.",
)
class NextStepAutoreset(AutoresetWrapper):
    """NEXT_STEP autoreset over a vecmode core: the step after an episode ends
    resets the sub-env instead of stepping it.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.NextStepAutoreset(vecmode.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)]))
    >>> _ = envs.reset(seed=0)
    >>> envs.step(np.array([1]))[1:4]
    (array([1.]), array([False]), array([ True]))
    >>> envs.step(np.array([1]))[1:4]  # the reset step
    (array([0.]), array([False]), array([False]))
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        if not isinstance(env, VectorCore):
            raise self._refuse(
                f"NEXT_STEP must reset a sub-env without stepping it, which "
                f"{type(env).__name__} cannot do (only a vecmode core, via "
                f"VectorCore.execute, can).",
                "Put NextStepAutoreset directly on a vecmode core (vecmode."
                "make_vec(..., autoreset_mode='NextStep'), sync or async), or build the "
                "foreign env in NEXT_STEP mode itself (Gymnasium: "
                "autoreset_mode='NextStep'), or use vecmode.SameStepAutoreset.",
            )
        self.core = env
        self._ended = env.ended
        self._all_step = [STEP] * env.num_envs

    def _commands(self) -> list[int]:
        """Reset the sub-envs whose episode ended on the last step; step the rest."""
        ended = self._ended
        if not ended.count:
            return self._all_step
        commands = self._all_step.copy()
        for i in ended.indices():
            commands[i] = RESET
        return commands


@supports(
    AutoresetMode.DISABLED,
    output=AutoresetMode.SAME_STEP,
    why={
        AutoresetMode.NEXT_STEP: "It resets ended sub-envs with reset_mask, which "
        "only a Disabled env leaves to the caller.",
        AutoresetMode.SAME_STEP: "The env already resets within the ending step "
        "by itself (use it as it is).",
    },
    instead="Use vecmode.with_autoreset(env, 'SameStep'), which first converts the "
    "env to DISABLED where that is exact, or build it with autoreset_mode='Disabled'.",
    array_native=True,
)
class SameStepAutoreset(AutoresetWrapper):
    """SAME_STEP autoreset: a sub-env is reset within the step its episode ends,
    its last observation and info in ``info["final_obs"]`` /
    ``info["final_info"]``. Over a vecmode core or any DISABLED env.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.SameStepAutoreset(vecmode.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)]))
    >>> _ = envs.reset(seed=0)
    >>> obs, rewards, terminations, truncations, infos = envs.step(np.array([1]))
    >>> truncations, infos["_final_obs"]
    (array([ True]), array([ True]))
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        if isinstance(env, VectorCore):
            self.core = env
            self._all_step_then_reset = [STEP_THEN_RESET] * env.num_envs
        elif not honours_reset_mask(env):  # it resets the ended with a mask
            raise self._refuse(*why_not_masked(env))

    def _commands(self) -> list[int]:
        return self._all_step_then_reset

    def _result(self, executed: Executed) -> StepResult:
        add_info = cast(VectorCore, self.core).add_info
        infos = modes.same_step_infos(
            executed.infos, executed.finals, self.num_envs, add_info
        )
        return (*executed[:4], infos)  # type: ignore[return-value]

    def _step_result(self, result: StepResult) -> StepResult:
        """Over a foreign DISABLED env: reset the ended sub-envs with a mask."""
        if self._array:  # torch/JAX batches: in their library, the dense layout
            return batched.same_step(self, result)
        obs, rewards, terminations, truncations, infos = result
        if type(terminations) is not np.ndarray and (xp := _arrays.namespace(obs)):
            library = _arrays.name_of(xp)
            declared = _arrays.declared_namespace(self.env)
            declares = "no" if declared is None else f"{declared!r} in its"
            raise errors.ArrayLibraryError(
                f"{errors.describe(self.env)} returns {library} batches but declares "
                f"{declares} metadata['array_namespace'], so they were read as NumPy. "
                f"Declare metadata['array_namespace'] = {library!r} (docs/batched.md)."
            )
        ended = np.logical_or(terminations, truncations)
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i, single in enumerate(iterate(self.env.observation_space, obs)):
                if ended[i]:
                    final_obs[i] = core.copy_batch(single)
            # (read before the reset: a layer's infos may alias what it resets,
            # as Gymnasium's RecordEpisodeStatistics's "_episode" mask does)
            finals, infos = select_infos(infos, ended), select_infos(infos, ~ended)
            obs, reset_infos = self._masked_reset(ended)
            infos = modes.with_finals(
                merge_infos(infos, reset_infos, ended), ended, final_obs, finals
            )
        self._last_obs = obs
        return obs, rewards, terminations, truncations, infos


@supports(
    AutoresetMode.NEXT_STEP,
    AutoresetMode.DISABLED,
    output=AutoresetMode.DISABLED,
    why={AutoresetMode.SAME_STEP: _FOREIGN_SAME_STEP},
    instead=BUILD_DISABLED,
    array_native=True,
)
class DisableAutoreset(AutoresetWrapper):
    """DISABLED mode over a foreign vector env whose masked reset is exact
    (:func:`honours_reset_mask`); stepping an ended sub-env raises
    :class:`~vecmode.EpisodeEndedError`.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.DisableAutoreset(gym.vector.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)]))
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> envs.close()
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        if not honours_reset_mask(env):
            raise self._refuse(*why_not_masked(env))
        self.ended = modes.EndedTracker(env.num_envs)
        pending = masked_reset.awaiting_reset_step(env)  # stepping them raises
        #: Whether the env's pending reset steps are unseen (all refused until reset).
        self._unseen = pending is None
        self.ended.set(np.ones(env.num_envs, np.bool_) if pending is None else pending)
        if isinstance(env, VectorCore):  # (it refuses to step an ended sub-env)
            self.core, self._all_step = env, [STEP] * env.num_envs

    def _commands(self) -> list[int]:
        return self._all_step

    @property
    def awaiting_reset(self) -> np.ndarray:
        """The sub-envs whose episode ended and that were not reset since."""
        return self.ended.mask if self.core is None else self.core.awaiting_reset

    def _step_actions(self, actions: Any) -> Any:
        """Refuse to step a sub-env whose episode ended."""
        if self.ended.count:
            raise EpisodeEndedError(self.ended.indices(), unseen=self._unseen)
        return actions

    def _step_result(self, result: StepResult) -> StepResult:
        terms, truncs = result[2], result[3]  # another library's: kept in it
        ended = _arrays.ended if self._array else np.logical_or
        self.ended.set(ended(terms, truncs))
        self._last_obs = result[0]
        return result

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        if state is None:
            self.ended.clear()
        else:  # (a NumPy record, until the first step: a torch mask to NumPy)
            self.ended.update(cleared=_rows.in_library(state, self.ended.mask))
        self._unseen = self._unseen and bool(self.ended.count)
        return super()._reset_result(obs, infos, state)


#: The policies :func:`with_autoreset` composes, by their declarations.
POLICIES = (NextStepAutoreset, SameStepAutoreset, DisableAutoreset)


def _conversion(
    current: AutoresetMode, target: AutoresetMode
) -> list[type[AutoresetWrapper]] | None:
    """The shortest chain of policies from ``current`` to ``target``, or None."""
    chains: dict[AutoresetMode, list[type[AutoresetWrapper]]] = {current: []}
    frontier = [current]
    while frontier:
        following = []
        for mode in frontier:
            for policy in POLICIES:
                found = declaration(policy)
                if found is None or found.output is None or mode not in found.modes:
                    continue
                if found.output not in chains:
                    chains[found.output] = [*chains[mode], policy]
                    following.append(found.output)
        frontier = following
    return chains.get(target)


def with_autoreset(
    env: VectorEnv,
    mode: modes.ModeLike,
    *,
    episode_seeds: int | np.random.SeedSequence | None = None,
    episode_options: Callable[[int, int], dict[str, Any] | None] | None = None,
) -> VectorEnv:
    """Return ``env`` running in ``mode``, adding the autoreset policies it needs;
    :class:`~vecmode.IncompatibleModeError` where no conversion is exact.

    Args:
        env: the vector env.
        mode: the autoreset mode wanted.
        episode_seeds: a run seed (an int or a ``numpy.random.SeedSequence``)
            seeding every episode of every sub-env (:class:`EpisodeSchedule`),
            the same in every mode and on every core; ``env``: a vecmode core.
        episode_options: ``(sub_env_index, episode) -> dict | None``, the
            options of each episode's reset (with ``episode_seeds``).

    >>> import gymnasium as gym
    >>> import vecmode
    >>> core = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    >>> vecmode.with_autoreset(core, "SameStep")
    <SameStepAutoreset, SyncVectorEnv(num_envs=2)>
    >>> vecmode.with_autoreset(core, "Disabled") is core
    True
    >>> core.close()
    """
    if not isinstance(env, VectorEnv):
        raise TypeError(errors.not_a_vector_env("with_autoreset", env))
    target = modes.as_mode(mode)
    if episode_seeds is not None or episode_options is not None:
        return _scheduled(env, target, episode_seeds, episode_options)
    current = modes.mode_of(env)
    refuse_lost(env, "with_autoreset", f"give {target.value}'s real transitions")
    if current is target:
        return _gymnasium_batch(gymnasium_layout(env))
    if current is None:
        raise IncompatibleModeError(_undeclared(env))
    masked_reset.refuse_pending(env, current, target)
    if _on_a_core(env):  # the new policy replaces it, right on the core
        return with_autoreset(env.env, target)
    batched.refuse_unreachable(env, current, target)  # (torch/JAX batches)
    chain = _chain(env, current, target)
    for policy in chain:
        try:
            env = policy(env)
        except IncompatibleModeError as error:
            if len(chain) == 1 or not hasattr(error, "why"):
                raise
            refused = cast(Any, error)
            raise IncompatibleModeError(
                f"with_autoreset cannot turn {type(env.unwrapped).__name__} "
                f"({current.value}) into {target.value}: the way there goes "
                f"through {policy.__name__}, which cannot wrap it: {refused.why} "
                f"{refused.instead}"
            ) from error
    return env


def _on_a_core(env: VectorEnv) -> TypeGuard[AutoresetWrapper]:
    """A policy with no schedule right on a vecmode core, no sub-env awaiting
    its reset: another policy there gives the same transitions, in one layer."""
    return (
        isinstance(env, AutoresetWrapper)
        and env.schedule is None
        and isinstance(env.env, VectorCore)
        and not env.env.awaiting_reset.any()
    )


def _undeclared(env: VectorEnv) -> str:
    """Why ``with_autoreset`` cannot convert an env that declares no mode."""
    why = (
        f"{errors.describe(env)} has no metadata['autoreset_mode'], so what its "
        "step returns at an episode's end is unknown."
    )
    todo = "Declare the mode the env really uses in its metadata."
    return errors.incompatible_mode("with_autoreset", None, modes.MODES, why, todo)


def _scheduled(env: VectorEnv, target: AutoresetMode, seeds: Any, options: Any) -> Any:
    """The policy giving the core ``env`` mode ``target``, with a schedule."""
    schedule = schedule_for(env, target, seeds, options)  # (refuses a foreign env)
    policy = (_conversion(modes.CORE_MODE, target) or [DisableAutoreset])[0](env)
    policy.schedule = schedule
    return policy


def _chain(
    env: VectorEnv, current: AutoresetMode, target: AutoresetMode
) -> list[type[AutoresetWrapper]]:
    """The policies from ``current`` to ``target``, else the one producing
    ``target`` (it refuses), or a refusal saying how to rebuild the env."""
    chain = _conversion(current, target)
    if chain is not None:
        return chain
    chain = [p for p in POLICIES if cast(Any, declaration(p)).output is target]
    rebuild = _rebuild_in(env, current, target)
    if rebuild is not None:
        found = cast(Any, declaration(chain[0]))
        raise IncompatibleModeError(
            errors.incompatible_mode(
                chain[0].__name__, current, found.modes, found.why(current), rebuild
            )
        )
    return chain


def _rebuild_in(
    env: VectorEnv, current: AutoresetMode, target: AutoresetMode
) -> str | None:
    """How to get ``target`` by building a declared env class another way."""
    found = vector_env_declaration(env) if env.unwrapped is env else None
    if found is None:
        return None
    build = f"Build {type(env).__name__} with autoreset_mode="
    if target in found.modes:
        return f"{build}{target.value!r} instead."
    for mode in modes.MODES:
        chain = _conversion(mode, target) if mode in found.modes else None
        if not chain or mode is current:
            continue
        if DisableAutoreset in chain and found.masked_reset(env) != "clears":
            continue  # the way there needs a masked reset the class lacks
        return (
            f"{build}{mode.value!r} instead and convert that: vecmode."
            f"with_autoreset(env, {target.value!r}) is exact from {mode.value}."
        )
    return None


def gymnasium_layout(env: VectorEnv) -> VectorEnv:
    """``env``, or :class:`GymnasiumFinalObs` over it where its class reports
    SAME_STEP's final observations its own way (ALE's dense layout)."""
    mode = modes.mode_of(env)
    own = mode is not None and modes.final_in_info(mode)
    own = own and not _arrays.is_array_env(env)  # array batches: dense, as is
    return (
        GymnasiumFinalObs(env) if own and final_obs_layout(env) != "gymnasium" else env
    )


@supports(
    AutoresetMode.SAME_STEP,
    output=AutoresetMode.SAME_STEP,
    why={
        AutoresetMode.NEXT_STEP: "It only rewrites SameStep's final observations.",
        AutoresetMode.DISABLED: "It only rewrites SameStep's final observations.",
    },
    instead="Use vecmode.with_autoreset(env, 'SameStep').",
)
class GymnasiumFinalObs(AutoresetWrapper):
    """SAME_STEP's final observations in Gymnasium's layout, over an env that
    reports them its own way (ALE's one dense array)."""

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = result
        ended = np.logical_or(terminations, truncations)
        infos = modes.from_dense_finals(infos, ended)
        return obs, rewards, terminations, truncations, infos


def _gymnasium_batch(env: VectorEnv) -> VectorEnv:
    """``env``, or :class:`GymnasiumBatch` over a class of other conventions."""
    found = vector_env_declaration(env) if env.unwrapped is env else None
    if found is not None and (not found.batched_spaces or found.reset_returns != "all"):
        return GymnasiumBatch(env)
    return env


@supports(*modes.MODES)
class GymnasiumBatch(AutoresetWrapper):
    """Gymnasium's batch conventions, in the env's own mode, over an env whose
    class keeps others (EnvPool's single-env spaces and masked-reset rows)."""

    @property
    def _declared(self) -> tuple[frozenset[AutoresetMode], AutoresetMode]:
        return frozenset(modes.MODES), cast(AutoresetMode, modes.mode_of(self.env))

    def _step_result(self, result: StepResult) -> StepResult:
        self._last_obs = result[0]  # the rows a masked reset keeps
        return result


# each returns the wrapped env's observations or new arrays
core.FRESH_OBSERVATION_WRAPPERS.update((*POLICIES, GymnasiumFinalObs, GymnasiumBatch))
env_classes.PASSES_BATCHES.update(POLICIES)
