"""The autoreset policies, as wrappers that set ``metadata["autoreset_mode"]``.

* :class:`NextStepAutoreset`: NEXT_STEP over a vecmode core.
* :class:`SameStepAutoreset`: SAME_STEP over a vecmode core, or over any vector env
  that runs DISABLED with ``reset_mask`` support.
* :class:`DisableAutoreset`: DISABLED (with vecmode's check that ended sub-envs are
  not stepped) over a foreign env whose own mode is DISABLED, or NEXT_STEP where a
  masked reset provably clears the pending autoreset (Gymnasium's sync env, and its
  async env with shared memory).
* :func:`with_autoreset` picks and composes them.

Every conversion offered here is exact; the others are refused when the wrapper is
built, with :class:`~vecmode.IncompatibleModeError` saying why and what to use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from vecmode import errors
from vecmode.core import (
    FRESH_OBSERVATION_WRAPPERS,
    Command,
    Executed,
    StepResult,
    VectorCore,
    copy_batch,
    validate_reset_mask,
)
from vecmode.env_classes import final_obs_layout, vector_env_declaration
from vecmode.errors import EpisodeEndedError, IncompatibleModeError
from vecmode.forwarding import ForwardingWrapper
from vecmode.infos import expand_infos, merge_infos, select_infos
from vecmode.modes import (
    MODES,
    EndedTracker,
    ModeLike,
    as_mode,
    caller_resets,
    final_in_info,
    from_dense_finals,
    mode_of,
    resets_on_next_step,
    same_step_infos,
    with_finals,
)
from vecmode.registry import declaration, supports

__all__ = [
    "DisableAutoreset",
    "GymnasiumBatch",
    "GymnasiumFinalObs",
    "NextStepAutoreset",
    "SameStepAutoreset",
    "gymnasium_layout",
    "honours_reset_mask",
    "with_autoreset",
]

_STEP, _RESET, _STEP_THEN_RESET = (
    int(Command.STEP),
    int(Command.RESET),
    int(Command.STEP_THEN_RESET),
)


def honours_reset_mask(env: VectorEnv) -> bool:
    """Whether ``env`` can be driven as DISABLED through ``reset_mask`` exactly.

    True for an env whose declared mode is DISABLED (the mode's contract; vecmode's
    cores are such envs) and for a NEXT_STEP env whose class is declared (see
    :mod:`vecmode.env_classes`) to clear the pending autoreset of the sub-envs a
    masked reset resets: Gymnasium's ``SyncVectorEnv``, its ``AsyncVectorEnv`` with
    shared memory, ALE's ``AtariVectorEnv``, EnvPool. Not for envs that reset every
    sub-env whatever the mask (Gymnasium's numpy ``CartPoleVectorEnv``), nor for
    Gymnasium's ``AsyncVectorEnv(shared_memory=False)``, nor for undeclared classes.
    """
    mode = mode_of(env)
    if mode is None:
        return False
    if caller_resets(mode):
        return True
    found = vector_env_declaration(env)
    return (
        resets_on_next_step(mode)
        and found is not None
        and found.masked_reset(env) == "clears"
    )


def _why_not_masked(env: VectorEnv) -> tuple[str, str]:
    """Why ``env``'s masked reset cannot drive it as DISABLED, and the remedy."""
    name = type(env.unwrapped).__name__
    if mode_of(env) is None:
        return (
            "It declares no mode, so what its reset with a mask does is unknown.",
            "Declare the mode it runs in in metadata['autoreset_mode'].",
        )
    found = vector_env_declaration(env)
    if found is None:
        return unknown_masked_reset(name), declare_vector_env(name)
    why = (
        found.why.format(name=name)
        if found.why
        else declared_masked_reset(name, found.masked_reset(env))
    )
    return why, found.remedy.format(name=name) or _BUILD_DISABLED


class _AutoresetWrapper(ForwardingWrapper):
    """Shared base: sets the produced mode, forwards ``call``/``get_attr``/``set_attr``.

    Each policy declares the modes it accepts and the mode it produces with
    :func:`vecmode.supports`; the registry checks the wrapped env's mode before
    ``__init__`` runs, and ``__init__`` refuses what the mode alone cannot tell.

    Over a vecmode core (:attr:`core` set), every ``step`` is one
    :meth:`~vecmode.core.VectorCore.execute` with the policy's :meth:`_commands`, and
    ``reset`` is the core's. Over a foreign env the policy works through the
    wrapper halves (:class:`~vecmode.forwarding.ForwardingWrapper`), with vecmode's
    ``reset_mask`` contract: validated, the caller's options never mutated, an
    all-False mask a no-op. The split async API works on both paths wherever the
    env below has it.
    """

    #: A policy writes what its mode returns itself (SAME_STEP's final
    #: observations in Gymnasium's layout, none in the other modes), whatever the
    #: env below reports (see :func:`vecmode.env_classes.final_obs_layout`).
    final_obs_layout = "gymnasium"
    #: The vecmode core this policy drives, or None (a foreign env).
    core: VectorCore | None = None
    #: The last observations returned (for a no-op masked reset of a foreign env).
    _last_obs: Any = None

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self.metadata = {**env.metadata, "autoreset_mode": self.autoreset_mode}
        found = vector_env_declaration(env)
        if found is not None and not found.batched_spaces and env.unwrapped is env:
            # the env's spaces are the single-env ones (EnvPool): batch them here
            n = env.num_envs
            self.observation_space = batch_space(env.single_observation_space, n)
            self.action_space = batch_space(env.single_action_space, n)

    @property
    def _declared(self) -> tuple[frozenset[AutoresetMode], AutoresetMode]:
        """The modes this policy accepts, and the mode it produces."""
        found = declaration(self)
        if found is None or found.output is None:
            raise TypeError(undeclared_policy(type(self).__name__))
        return found.modes, found.output

    def _refuse(self, why: str, instead: str) -> IncompatibleModeError:
        error = IncompatibleModeError(
            errors.incompatible_mode(
                type(self).__name__, mode_of(self.env), self._declared[0], why, instead
            )
        )
        error.why, error.instead = why, instead  # type: ignore[attr-defined]
        return error

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """The mode, as Gymnasium's vector envs expose it (also in ``metadata``)."""
        return self._declared[1]

    def _commands(self) -> list[int]:
        """The core's commands for a ``step`` (over a vecmode core)."""
        raise NotImplementedError

    def _result(self, executed: Executed) -> StepResult:
        """The step tuple of this mode from the core's record (over a core)."""
        return executed[:5]  # type: ignore[return-value]

    # ------------------------------------------------------------------ step
    def step(self, actions: Any) -> StepResult:
        """Step every sub-env, resetting where the policy says."""
        if self.core is not None:
            return self._result(self.core.execute(self._commands(), actions))
        return super().step(actions)

    @property
    def step_async(self) -> Callable[[Any], None]:
        """Send a step (where the env below has the split async API)."""
        core = self.core
        if core is None:
            return super().step_async
        send = self._split("step_async", "step", "execute_async")

        def step_async(actions: Any) -> None:
            send(self._commands(), actions, name="step")

        return step_async

    @property
    def step_wait(self) -> Callable[..., StepResult]:
        """Wait for the step sent by :attr:`step_async`."""
        core = self.core
        if core is None:
            return super().step_wait
        wait = self._split("step_wait", "step", "execute_wait")

        def step_wait(timeout: float | None = None) -> StepResult:
            return self._result(wait(timeout, name="step"))

        return step_wait

    # ----------------------------------------------------------------- reset
    def _noop(self, options: dict[str, Any] | None) -> bool:
        """Whether ``options`` asks a foreign env for a masked reset of no sub-env
        (checked: a bad mask raises here, before anything is sent)."""
        if options is None or "reset_mask" not in options:
            return False
        return not validate_reset_mask(options["reset_mask"], self.num_envs).any()

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those in ``options["reset_mask"]``."""
        if self.core is not None:
            return self.core.reset(seed=seed, options=options)
        if self._noop(options):
            return copy_batch(self._last_obs), {}
        return super().reset(seed=seed, options=options)

    @property
    def reset_async(self) -> Callable[..., None]:
        """Send a reset (where the env below has the split async API)."""
        if self.core is not None:
            return self._split("reset_async", "reset")
        send = super().reset_async

        def reset_async(
            seed: Any = None, options: dict[str, Any] | None = None
        ) -> None:
            if self._noop(options):
                self._reset_state = _NOTHING_SENT
            else:
                send(seed=seed, options=options)

        return reset_async

    @property
    def reset_wait(self) -> Callable[..., tuple[Any, dict[str, Any]]]:
        """Wait for the reset sent by :attr:`reset_async`."""
        if self.core is not None:
            return self._split("reset_wait", "reset")
        wait = super().reset_wait

        def reset_wait(
            timeout: float | None = None, **kwargs: Any
        ) -> tuple[Any, dict[str, Any]]:
            if self._reset_state is _NOTHING_SENT:
                self._reset_state = None
                return copy_batch(self._last_obs), {}
            return wait(timeout=timeout, **kwargs)

        return reset_wait

    # ------------------------------------------- halves, over a foreign env
    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        if state is not None:
            obs, infos = self._whole_batch(obs, infos, state)
        self._last_obs = obs
        return obs, infos

    def _masked_reset(self, mask: np.ndarray) -> tuple[Any, dict[str, Any]]:
        """Reset the masked sub-envs of the foreign env; the whole batch back."""
        obs, infos = self.env.reset(options={"reset_mask": mask})
        return self._whole_batch(obs, infos, mask)

    def _whole_batch(
        self, obs: Any, infos: dict[str, Any], mask: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        """A masked reset's result as the whole batch, for an env declared to
        return only the masked sub-envs' rows (EnvPool): the others keep their
        last observations, the infos are spread over the sub-envs with masks."""
        # (only directly over the declared env: a vecmode layer between returns all)
        found = (
            vector_env_declaration(self.env) if self.env.unwrapped is self.env else None
        )
        if found is None or found.reset_returns == "all" or self._last_obs is None:
            return obs, infos
        whole = copy_batch(self._last_obs)
        _place_rows(whole, np.flatnonzero(mask), obs)
        return whole, expand_infos(infos, mask, self.num_envs)


def _place_rows(whole: Any, rows: np.ndarray, part: Any) -> None:
    """Write the rows of batch ``part`` (one per index in ``rows``) into the batch
    ``whole`` at those indices (Dict and Tuple batches included)."""
    if isinstance(whole, dict):
        for key in whole:
            _place_rows(whole[key], rows, part[key])
    elif isinstance(whole, tuple):
        for sub_whole, sub_part in zip(whole, part, strict=True):
            _place_rows(sub_whole, rows, sub_part)
    else:
        whole[rows] = part


#: The state of a foreign env's ``reset_async`` that sent nothing (an all-False mask).
_NOTHING_SENT = object()


_BUILD_DISABLED = (
    "Build the env in DISABLED mode itself, or use vecmode.make_vec(..., "
    "vectorization_mode='sync') whose core supports every mode."
)
_FOREIGN_SAME_STEP = (
    "A SAME_STEP env has already reset the ended sub-envs (without the caller's "
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
    instead="Wrap vecmode.SyncVectorEnv directly (vecmode.make_vec(..., "
    "autoreset_mode='NextStep')), or build the env in NextStep mode itself.",
)
class NextStepAutoreset(_AutoresetWrapper):
    """NEXT_STEP autoreset over a vecmode core.

    On the step after a sub-env's episode ends, its action is ignored and it is
    reset instead: the step returns the reset observation and info, reward 0 and
    ``terminated = truncated = False``. Exactly what Gymnasium's vector envs return
    with ``autoreset_mode="NextStep"``.

    It needs to reset a sub-env without stepping the others, which only a vecmode
    core offers (:meth:`vecmode.core.VectorCore.execute`), so it must wrap the core
    directly; anything else is refused when the wrapper is built.

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
                "Put NextStepAutoreset directly on vecmode.SyncVectorEnv (e.g. "
                "vecmode.make_vec(..., autoreset_mode='NextStep')), or build the "
                "foreign env in NEXT_STEP mode itself (Gymnasium: "
                "autoreset_mode='NextStep'), or use vecmode.SameStepAutoreset.",
            )
        self.core = env
        self._all_step = [_STEP] * env.num_envs

    def _commands(self) -> list[int]:
        """Step every sub-env but those whose episode ended on the previous step,
        which are reset."""
        # The sub-envs that await a reset are exactly those that ended on the
        # previous step (or were reset by a masked reset since, which the core
        # already cleared), so the core's record is the pending autoreset.
        ended = cast(VectorCore, self.core).ended
        if not ended.count:
            return self._all_step
        commands = self._all_step.copy()
        for i in ended.indices():
            commands[i] = _RESET
        return commands


@supports(
    AutoresetMode.DISABLED,
    output=AutoresetMode.SAME_STEP,
    why={
        AutoresetMode.NEXT_STEP: "It resets ended sub-envs with reset_mask, which "
        "only a DISABLED env leaves to the caller.",
        AutoresetMode.SAME_STEP: "The env already resets within the ending step "
        "by itself (use it as it is).",
    },
    instead="Use vecmode.with_autoreset(env, 'SameStep'), which first converts the "
    "env to DISABLED where that is exact, or build it with autoreset_mode='Disabled'.",
)
class SameStepAutoreset(_AutoresetWrapper):
    """SAME_STEP autoreset: a sub-env is reset within the step its episode ends.

    The step returns the reset observation and info, the final step's reward and
    flags, and ``info["final_obs"]`` / ``info["final_info"]`` with their masks,
    exactly as Gymnasium's vector envs do with ``autoreset_mode="SameStep"``.

    Over a vecmode core this is one :meth:`~vecmode.core.VectorCore.execute` call per
    step. Over any other vector env whose mode is DISABLED (e.g.
    ``gymnasium.vector.SyncVectorEnv(..., autoreset_mode="Disabled")``) it steps,
    then resets the ended sub-envs with ``reset_mask``. A NEXT_STEP env is refused;
    :func:`with_autoreset` converts one first where that is exact.

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
            self._all_step_then_reset = [_STEP_THEN_RESET] * env.num_envs

    def _commands(self) -> list[int]:
        """Step every sub-env, resetting within the call those whose episode ends."""
        return self._all_step_then_reset

    def _result(self, executed: Executed) -> StepResult:
        """The record in SAME_STEP's layout (final observations and infos)."""
        core = cast(VectorCore, self.core)
        infos = same_step_infos(
            executed.infos, executed.finals, self.num_envs, core.add_info
        )
        return (*executed[:4], infos)  # type: ignore[return-value]

    def _step_result(self, result: StepResult) -> StepResult:
        """Over a foreign DISABLED env: reset the ended sub-envs with a mask, moving
        their last observations and infos into ``final_obs`` / ``final_info``."""
        obs, rewards, terminations, truncations, infos = result
        ended = np.logical_or(terminations, truncations)
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i, single in enumerate(iterate(self.env.observation_space, obs)):
                if ended[i]:
                    final_obs[i] = copy_batch(single)
            obs, reset_infos = self._masked_reset(ended)
            infos = with_finals(
                merge_infos(select_infos(infos, ~ended), reset_infos),
                ended,
                final_obs,
                select_infos(infos, ended),
            )
        self._last_obs = obs
        return obs, rewards, terminations, truncations, infos


@supports(
    AutoresetMode.NEXT_STEP,
    AutoresetMode.DISABLED,
    output=AutoresetMode.DISABLED,
    why={AutoresetMode.SAME_STEP: _FOREIGN_SAME_STEP},
    instead=_BUILD_DISABLED,
)
class DisableAutoreset(_AutoresetWrapper):
    """DISABLED mode over a foreign vector env, with vecmode's checks.

    Accepts an env whose mode is DISABLED (adding the check Gymnasium's
    ``AsyncVectorEnv`` lacks: stepping an ended sub-env raises
    :class:`~vecmode.EpisodeEndedError` before anything is stepped), or a NEXT_STEP
    env for which :func:`honours_reset_mask` is True: the caller resets ended
    sub-envs with ``reset_mask`` before stepping them, which clears their pending
    autoreset, so the inner env never autoresets and the data is exactly DISABLED.

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
            raise self._refuse(*_why_not_masked(env))
        self.ended = EndedTracker(env.num_envs)

    @property
    def awaiting_reset(self) -> np.ndarray:
        """The sub-envs whose episode ended and that were not reset since: reset
        them with ``reset(options={"reset_mask": envs.awaiting_reset})`` before
        stepping them (as vecmode's cores' ``awaiting_reset``)."""
        return self.ended.mask

    def _step_actions(self, actions: Any) -> Any:
        """Refuse to step a sub-env whose episode ended (before anything runs)."""
        if self.ended.count:
            raise EpisodeEndedError(self.ended.indices())
        return actions

    def _step_result(self, result: StepResult) -> StepResult:
        self.ended.set(np.logical_or(result[2], result[3]))
        self._last_obs = result[0]
        return result

    def _reset_result(
        self, obs: Any, infos: dict[str, Any], state: np.ndarray | None
    ) -> tuple[Any, Any]:
        if state is None:
            self.ended.clear()
        else:
            self.ended.update(cleared=state)
        return super()._reset_result(obs, infos, state)


#: The policies :func:`with_autoreset` composes, by their declarations: each
#: accepts some modes and produces one.
POLICIES: tuple[type[_AutoresetWrapper], ...] = (
    NextStepAutoreset,
    SameStepAutoreset,
    DisableAutoreset,
)


def _conversion(
    current: AutoresetMode, target: AutoresetMode
) -> list[type[_AutoresetWrapper]] | None:
    """The shortest chain of policies from ``current`` to ``target``, by what each
    declares it accepts and produces (None: no chain)."""
    chains: dict[AutoresetMode, list[type[_AutoresetWrapper]]] = {current: []}
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


def with_autoreset(env: VectorEnv, mode: ModeLike) -> VectorEnv:
    """Return ``env`` running in ``mode``, adding the autoreset wrapper it needs.

    * ``env`` already in ``mode``: returned unchanged.
    * a vecmode core (DISABLED): ``NextStepAutoreset(env)`` or
      ``SameStepAutoreset(env)``.
    * a foreign DISABLED env: ``SameStepAutoreset(env)``; NEXT_STEP is refused.
    * a foreign NEXT_STEP env that honours ``reset_mask`` (see
      :func:`honours_reset_mask`): ``DisableAutoreset(env)`` for DISABLED,
      ``SameStepAutoreset(DisableAutoreset(env))`` for SAME_STEP.
    * anything else: :class:`~vecmode.IncompatibleModeError`, saying why.

    >>> import gymnasium as gym
    >>> import vecmode
    >>> core = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    >>> vecmode.with_autoreset(core, "SameStep")
    <SameStepAutoreset, SyncVectorEnv(num_envs=2)>
    >>> vecmode.with_autoreset(core, "Disabled") is core
    True
    >>> core.close()
    """
    target = as_mode(mode)
    current = mode_of(env)
    if current is target:
        return _gymnasium_batch(gymnasium_layout(env))
    if current is None:
        raise IncompatibleModeError(
            errors.incompatible_mode(
                "with_autoreset",
                None,
                tuple(AutoresetMode),
                f"{errors.describe(env)} has no metadata['autoreset_mode'], so what "
                "its step "
                "returns at an episode's end is unknown.",
                "Declare the mode the env really uses in its metadata.",
            )
        )
    chain = _conversion(current, target)
    if chain is None:  # the policy producing the target refuses, saying why
        chain = [p for p in POLICIES if cast(Any, declaration(p)).output is target]
        rebuild = _rebuild_in(env, current, target)
        if rebuild is not None:  # ... and the env's class can be built otherwise
            found = cast(Any, declaration(chain[0]))
            raise IncompatibleModeError(
                errors.incompatible_mode(
                    chain[0].__name__, current, found.modes, found.why(current), rebuild
                )
            )
    original = env
    for policy in chain:
        try:
            env = policy(env)
        except IncompatibleModeError as error:
            if len(chain) == 1 or not hasattr(error, "why"):
                raise
            # a step on the way refused: say so in terms of what was asked
            raise IncompatibleModeError(
                conversion_refused(original, current, target, policy.__name__, error)
            ) from error
    return env


def _rebuild_in(
    env: VectorEnv, current: AutoresetMode, target: AutoresetMode
) -> str | None:
    """How to get ``target`` from a declared env class that can be built in
    another mode than ``current`` (ALE's SAME_STEP env cannot become DISABLED,
    but the same class built in NEXT_STEP can), or None."""
    found = vector_env_declaration(env) if env.unwrapped is env else None
    if found is None:
        return None
    name = type(env).__name__
    if target in found.modes:
        return rebuilt_in(name, target, None)
    for mode in MODES:
        chain = _conversion(mode, target) if mode in found.modes else None
        if not chain or mode is current:
            continue
        if DisableAutoreset in chain and found.masked_reset_of != "clears":
            continue  # the way there needs a masked reset the class lacks
        return rebuilt_in(name, mode, target)
    return None


def gymnasium_layout(env: VectorEnv) -> VectorEnv:
    """``env`` with its SAME_STEP final observations in Gymnasium's layout: ``env``
    itself, or :class:`GymnasiumFinalObs` over it where its class reports them its
    own way (a declared ``final_obs_layout``, as ALE's ``AtariVectorEnv``'s dense
    one). What :func:`with_autoreset`, :func:`vecmode.probe_mode` and
    :func:`vecmode.testing.check_vector_env` read such an env through.

    >>> import gymnasium as gym
    >>> from vecmode.autoreset import gymnasium_layout
    >>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")],
    ...     autoreset_mode="SameStep")
    >>> gymnasium_layout(envs) is envs  # Gymnasium's own layout already
    True
    >>> envs.close()
    """
    mode = mode_of(env)
    if (
        mode is not None
        and final_in_info(mode)
        and final_obs_layout(env) != "gymnasium"
    ):
        return GymnasiumFinalObs(env)
    return env


@supports(
    AutoresetMode.SAME_STEP,
    output=AutoresetMode.SAME_STEP,
    why={
        AutoresetMode.NEXT_STEP: "It only rewrites SameStep's final observations.",
        AutoresetMode.DISABLED: "It only rewrites SameStep's final observations.",
    },
    instead="Use vecmode.with_autoreset(env, 'SameStep').",
)
class GymnasiumFinalObs(_AutoresetWrapper):
    """SAME_STEP's final observations in Gymnasium's layout, over an env that
    reports them its own way (ALE's ``AtariVectorEnv``: one dense array with a row
    for every sub-env, no mask, no final infos).

    Translated once, at the edge of the stack, so that every layer above reads
    Gymnasium's layout (``final_obs`` an object array, ``_final_obs`` /
    ``final_info`` / ``_final_info``; the final infos are empty: the env reports
    none). :func:`with_autoreset` adds it where a declared env class needs it;
    vecmode's wrappers refuse such an env without it (it reports Gymnasium's
    layout above, as every policy does: :attr:`final_obs_layout`).
    """

    def _step_result(self, result: StepResult) -> StepResult:
        obs, rewards, terminations, truncations, infos = result
        ended = np.logical_or(terminations, truncations)
        return obs, rewards, terminations, truncations, from_dense_finals(infos, ended)


def _gymnasium_batch(env: VectorEnv) -> VectorEnv:
    """``env``, or :class:`GymnasiumBatch` over it where its declared class keeps
    batch conventions of its own (EnvPool's single-env spaces and masked rows)."""
    found = vector_env_declaration(env) if env.unwrapped is env else None
    if found is not None and (not found.batched_spaces or found.reset_returns != "all"):
        return GymnasiumBatch(env)
    return env


@supports(*MODES)
class GymnasiumBatch(_AutoresetWrapper):
    """Gymnasium's batch conventions over an env, in the env's own mode, whose
    class keeps others (EnvPool: a single env's spaces, a masked reset returning
    only the masked rows): the spaces batched, a masked reset returning the whole
    batch (the other rows as last returned), an all-False mask a no-op.

    :func:`with_autoreset` adds it where such an env is already in the mode asked
    for, so that ``with_autoreset(pool, mode)`` has the same spaces and masked
    resets in every mode (each conversion does the same work itself). Over any
    other env it changes nothing.

    >>> import numpy as np, gymnasium as gym
    >>> from vecmode.autoreset import GymnasiumBatch
    >>> envs = GymnasiumBatch(gym.vector.SyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1")] * 2))
    >>> envs.metadata["autoreset_mode"], envs.observation_space.shape
    (<AutoresetMode.NEXT_STEP: 'NextStep'>, (2, 4))
    >>> envs.close()
    """

    @property
    def _declared(self) -> tuple[frozenset[AutoresetMode], AutoresetMode]:
        """Every mode; it produces the env's own."""
        return frozenset(MODES), cast(AutoresetMode, mode_of(self.env))

    def _step_result(self, result: StepResult) -> StepResult:
        self._last_obs = result[0]  # the rows a masked reset keeps
        return result


# Each returns the wrapped env's observations or new arrays (a collector over
# them need not copy what a copying core returns).
FRESH_OBSERVATION_WRAPPERS.update(
    {
        NextStepAutoreset,
        SameStepAutoreset,
        DisableAutoreset,
        GymnasiumFinalObs,
        GymnasiumBatch,
    }
)


# ------------------------------------------------------------------ messages
def undeclared_policy(name: str) -> str:
    return (
        f"{name} is an autoreset policy but declares no output mode; decorate it with "
        f"@vecmode.supports(..., output=<the mode it produces>)."
    )


def conversion_refused(
    env: VectorEnv,
    current: AutoresetMode,
    target: AutoresetMode,
    policy: str,
    error: IncompatibleModeError,
) -> str:
    name = type(env.unwrapped).__name__
    return (
        f"with_autoreset cannot turn {name} ({current.value}) into {target.value}: "
        f"the way there goes through {policy}, and {cast(Any, error).why} "
        f"{cast(Any, error).instead}"
    )


def rebuilt_in(name: str, mode: AutoresetMode, target: AutoresetMode | None) -> str:
    build = f"Build {name} with autoreset_mode={mode.value!r}"
    if target is None:
        return f"{build} instead."
    return (
        f"{build} instead and convert that: vecmode.with_autoreset(env, "
        f"{target.value!r}) is exact from {mode.value}."
    )


def unknown_masked_reset(name: str) -> str:
    return (
        f"vecmode does not know what {name}'s reset(options={{'reset_mask': mask}}) "
        f"does: it must reset only the masked sub-envs and clear their pending "
        f"autoreset for the conversion to be exact."
    )


def declared_masked_reset(name: str, masked_reset: str) -> str:
    """Why a declared masked reset cannot drive the env, where the declaration
    gives no ``why``."""
    what = {
        "keeps-pending": "keeps a masked sub-env's pending autoreset, so the next "
        "step would reset it once more",
        "ignores": "ignores the mask and resets every sub-env",
    }.get(masked_reset, "does not reset only the masked sub-envs")
    return (
        f"{name}'s reset(options={{'reset_mask': mask}}) {what} (declared "
        f"masked_reset={masked_reset!r} with vecmode.register_vector_env)."
    )


def declare_vector_env(name: str) -> str:
    return (
        f"If it does (vecmode.testing.check_vector_env and a masked reset after an "
        f"episode end show it), declare it: vecmode.register_vector_env({name}, "
        f"masked_reset='clears'); or build it in Disabled mode."
    )
