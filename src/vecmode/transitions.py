"""Real transitions out of any vector env, whatever its autoreset mode.

:class:`TransitionReader` reads each call's real transitions, ``next_obs`` being
an ended episode's final observation; :class:`TransitionCollector` steps an env
and reads them with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
from gymnasium import Space
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import _arrays, errors, modes
from vecmode._numpy import count_nonzero, host_array, true_indices
from vecmode._rows import copied, in_library, some
from vecmode.autoreset import gymnasium_layout
from vecmode.core import reuses_buffers, space_row, validate_reset_mask
from vecmode.env_classes import (
    async_pool_fault,
    kept_pending_fault,
    refuse_lost,
    semantics_of,
)
from vecmode.forwarding import refuse_unhonoured_mask, valid_reset_mask
from vecmode.registry.stack import warn_if_incompatible
from vecmode.wrappers.base import check_infos

__all__ = [
    "EpisodeStart",
    "Reading",
    "RealTransition",
    "Transition",
    "TransitionCollector",
    "TransitionReader",
    "read_run",
]

_WHO = "vecmode.TransitionCollector"

NOT_RESET = (
    "The TransitionCollector was used (step() or obs) before reset(): call "
    "collector.reset(seed=...) first."
)
CLOSED = "the TransitionCollector is closed."
BEHIND_ITS_BACK = (
    "the env was stepped or reset without the TransitionCollector since its last "
    "call (an evaluation on the same env?), so its observations are stale: call "
    "collector.reset() to go on, or evaluate on another env."
)


def call_failed_message(call: str) -> str:
    """Why the collector cannot go on after its env raised midway in ``call``."""
    return (
        f"the env raised during the TransitionCollector's last {call}(), so what "
        f"the sub-envs hold now is unknown: call collector.reset() to go on."
    )


# ----------------------------------------------------------------- the reader
class RealTransition(NamedTuple):
    """One sub-env's real transition: ``next_obs`` is what the action led to (at
    an episode's end, its final observation), ``infos`` the step's, batched."""

    sub_env: int
    obs: Any
    action: Any
    reward: Any
    terminated: bool
    truncated: bool
    next_obs: Any
    infos: Any


class EpisodeStart(NamedTuple):
    """Sub-env ``sub_env`` started an episode; ``obs`` is its first observation."""

    sub_env: int
    obs: Any


#: The errors in which an env names the sub-envs a failed call lost.
_TOLD_LOST = (errors.SubEnvError, errors.WorkerError)


def _host_mask(mask: Any) -> np.ndarray:
    """A boundary's mask as NumPy (another library's: a host copy, for the
    reader's per-sub-env lists, never in the collector's step)."""
    return mask if type(mask) is np.ndarray else np.asarray(host_array(mask), bool)


def _row(space: Space | None, batch: Any, i: int) -> Any:
    """Sub-env ``i``'s entry of a batch of ``space`` (None: split by key or row)."""
    if batch is None:
        return None
    if space is not None:
        return space_row(space, batch, i)
    if isinstance(batch, dict):
        return {key: _row(None, value, i) for key, value in batch.items()}
    if type(batch) is tuple:
        return tuple(_row(None, value, i) for value in batch)
    return batch[i]


class Reading(NamedTuple):
    """What one call of the env meant: its :class:`~vecmode.modes.Boundary`
    (``needs_reset``: the sub-envs the caller must reset), the batch the actions
    were taken in (``obs``, None for a reset), the batch it ``returned``, and
    the call's other arguments and results as given."""

    reader: TransitionReader
    boundary: modes.Boundary
    obs: Any
    returned: Any
    infos: Any
    actions: Any = None
    rewards: Any = None
    terminations: Any = None
    truncations: Any = None

    def _infos(self) -> Any:
        """The infos, checked to be Gymnasium's batched dict (or a list)."""
        if not isinstance(self.infos, (dict, list, tuple)):
            check_infos(self.infos, self.reader.who)
        return self.infos

    @property
    def next_obs(self) -> Any:
        """The returned batch with the ended episodes' final observations in
        their rows (then a new batch); needs the reader's ``spaces``."""
        rows = self.boundary.final_in_info
        if not some(rows):
            return self.returned
        reader = self.reader
        if reader.spaces is None:
            raise TypeError(
                f"{reader.who}: Reading.next_obs merges the final observations by "
                f"the observation spaces: give the reader the env (its spaces)."
            )
        return modes.merge_final_observations(
            reader.spaces, self.returned, self._infos(), rows, reader.who
        )

    def transitions(self) -> list[RealTransition]:
        """The real transitions of the call, in sub-env order; ValueError if an
        ended episode's final observation is missing."""
        b, space = self.boundary, self.reader.observation_space
        rows, finals = _host_mask(b.final_in_info), {}
        if count_nonzero(rows):
            found = modes.final_entries(self._infos(), rows, self.reader.who)
            finals = {i: found[i] for i in true_indices(rows)}
        return [
            RealTransition(
                i,
                _row(space, self.obs, i),
                _row(self.reader.action_space, self.actions, i),
                self.rewards[i],
                bool(self.terminations[i]),
                bool(self.truncations[i]),
                finals[i] if i in finals else _row(space, self.returned, i),
                self.infos,
            )
            for i in true_indices(_host_mask(b.real))
        ]

    def starts(self) -> list[EpisodeStart]:
        """The episodes the call started, in sub-env order."""
        return [
            EpisodeStart(i, _row(self.reader.observation_space, self.returned, i))
            for i in true_indices(_host_mask(self.boundary.starts))
        ]


class TransitionReader:
    """Reads real transitions and episode starts out of a vector env's calls.

    Feed it each call's result in order (:meth:`reset`, full or masked, and
    :meth:`step`); each returns a :class:`Reading`. It calls nothing: in DISABLED
    mode, reset the sub-envs of ``reading.boundary.needs_reset`` and feed that too.

    Args:
        mode: the env's mode (None: NEXT_STEP, Gymnasium's assumption).
        spaces: the env (or anything with its spaces), to split batches by space
            (:attr:`Reading.next_obs` needs it); None: by key, position or row.
        who: the name error messages give.
    """

    def __init__(
        self,
        mode: modes.ModeLike | None,
        num_envs: int,
        spaces: Any = None,
        who: str = "vecmode.transitions.TransitionReader",
    ) -> None:
        self.tracker = modes.BoundaryTracker(mode, num_envs)
        declared = modes.mode_of(spaces) if isinstance(spaces, VectorEnv) else None
        if declared not in (None, self.tracker.mode):
            raise ValueError(
                f"{who} was told {self.tracker.mode.value} mode, but the env declares "
                f"{declared.value}: read it in the mode it declares (pass "
                f"{declared.value!r}), or pass the env whose calls you read."
            )
        self.spaces, self.who = spaces, who
        self.action_space: Space | None = getattr(spaces, "single_action_space", None)
        self.observation_space: Space | None = getattr(
            spaces, "single_observation_space", None
        )
        #: The batch the next actions are taken in (None before a reset).
        self.obs: Any = None

    def reset(
        self, obs: Any, infos: Any = None, mask: np.ndarray | None = None
    ) -> Reading:
        """Read a ``reset`` that returned ``(obs, infos)``; ``mask``: its
        ``options["reset_mask"]`` (None: a full reset)."""
        b = self.tracker.reset(mask, like=obs)
        self.obs = obs
        return Reading(self, b, None, obs, infos)

    def step(
        self,
        actions: Any,
        obs: Any,
        rewards: Any,
        terminations: Any,
        truncations: Any,
        infos: Any,
    ) -> Reading:
        """Read a ``step(actions)`` that returned the rest."""
        before = self.obs
        if before is None:
            raise ResetNeeded(
                f"{self.who}: a step was read before any reset; read the "
                f"env's first reset() first."
            )
        b = self.tracker.step(terminations, truncations)
        self.obs = obs
        return Reading(
            self, b, before, obs, infos, actions, rewards, terminations, truncations
        )


def read_run(
    reader: TransitionReader, calls: Iterable[tuple[Any, ...]]
) -> Iterator[Reading]:
    """The readings of a recorded run, call by call: ``("reset", obs, infos,
    mask)`` or ``("step", actions, obs, rewards, terminations, truncations,
    infos)``."""
    for name, *arguments in calls:
        if name not in ("reset", "step"):
            raise ValueError(
                f"a recorded call is ('reset', obs, infos, mask) or ('step', "
                f"actions, obs, rewards, terminations, truncations, infos), not "
                f"one named {name!r}"
            )
        yield getattr(reader, name)(*arguments)


# ------------------------------------------------------------- the collector
class Transition(NamedTuple):
    """One call of :meth:`TransitionCollector.step`: a transition per sub-env.

    Every field is batched like the env's results (row ``i`` is sub-env ``i``)
    and never changed by later calls; don't write into them.

    Attributes:
        obs: the observations the actions were taken in.
        actions: a copy of the actions given to :meth:`TransitionCollector.step`.
        rewards, terminations, truncations: ``(num_envs,)`` each.
        next_obs: what the actions led to: at an episode's end, its final
            observation, in every mode.
        valid: False only on NEXT_STEP's reset step (action ignored): skip it.
            In the array library and on the device of ``terminations`` (a
            tensor under ``NumpyToTorch``).
        infos: the env's infos, unchanged.
    """

    obs: Any
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    next_obs: Any
    valid: Any
    infos: dict[str, Any]


def _unshared(infos: Any) -> Any:
    """``infos`` with every array copied: a reset may clear them in place."""
    if isinstance(infos, dict):
        return {key: _unshared(value) for key, value in infos.items()}
    if type(infos) is np.ndarray:
        return infos.copy()
    return infos


def _env_space(name: str) -> Any:
    """A property: the collector's env's space ``name``."""
    return property(lambda self: getattr(self.envs, name), doc=f"The env's {name}.")


class TransitionCollector:
    """Steps a vector env and returns real transitions, the same in every mode.

    :meth:`step` returns a :class:`Transition`; :attr:`obs` is what to act on
    next. In DISABLED mode the collector resets ended sub-envs itself (that
    reset's infos are in :attr:`reset_infos`). An env that declares no mode is
    taken as NEXT_STEP with an :class:`~vecmode.UndeclaredModeWarning` (an
    error under :func:`vecmode.strict`).

    Args:
        envs: the vector env (closed by :meth:`close` and by a ``with`` block).
        copy: copy the observations, rewards and flags the env returns, so that
            later calls cannot change them. None (default): unless the env is
            known to return fresh arrays (``vecmode.core.reuses_buffers``).

    >>> import numpy as np, vecmode
    >>> envs = vecmode.make_vec("CartPole-v1", num_envs=2, autoreset_mode="SameStep",
    ...                         max_episode_steps=1, vectorization_mode="sync")
    >>> collector = vecmode.TransitionCollector(envs)
    >>> obs, infos = collector.reset(seed=0)
    >>> t = collector.step(np.array([0, 1]))
    >>> t.truncations, t.valid
    (array([ True,  True]), array([ True,  True]))
    >>> np.array_equal(t.next_obs[0], t.infos["final_obs"][0])  # the final obs
    True
    >>> collector.close()
    """

    def __init__(self, envs: VectorEnv, *, copy: bool | None = None) -> None:
        if not isinstance(envs, VectorEnv):
            raise TypeError(errors.not_a_vector_env(_WHO, envs))
        self.mode: AutoresetMode = modes.mode_or_assumed(envs, _WHO, None, stacklevel=1)
        refuse_lost(envs, _WHO, "read real transitions")
        fault = async_pool_fault(envs, _WHO, "read real transitions")
        if fault := fault or kept_pending_fault(envs, _WHO):
            raise errors.IncompatibleModeError(fault)
        warn_if_incompatible(envs, _WHO)
        #: Whether ended episodes' ``next_obs`` are approximated (the last
        #: observation seen: :class:`vecmode.simulators.ApproximateFinalObs`).
        self.approximated: bool = semantics_of(envs).approximated
        #: ``envs``, through :class:`vecmode.autoreset.GymnasiumFinalObs` where
        #: it reports final observations its own way (ALE's).
        self.envs = gymnasium_layout(envs)
        self.num_envs: int = envs.num_envs
        self.copy: bool = reuses_buffers(envs) if copy is None else bool(copy)
        #: Whether the env's batches are another array library's (kept in it).
        self._array = _arrays.is_array_env(envs)
        #: Whether the env says which sub-envs a failed step lost (vecmode's
        #: cores, from_sb3's): over another, a failed step blocks the collector.
        self._tracks_lost = hasattr(envs.unwrapped, "awaiting_reset")
        #: The infos of the last reset, the collector's own included (DISABLED).
        self.reset_infos: dict[str, Any] = {}
        self._reader = TransitionReader(self.mode, self.num_envs, self.envs, _WHO)
        self._obs: Any = None
        #: Why :meth:`step` cannot run: not reset yet, or a call failed midway.
        self._blocked: str = NOT_RESET
        #: The sub-envs whose episode the last :meth:`reset` cut short, after
        #: real transitions: treat the last one of each as truncated.
        self.cut: Any = np.zeros(self.num_envs, dtype=bool)
        #: The sub-envs with real transitions in their episode (or the last
        #: step's Boundary, which says it).
        self._moved: Any = None
        #: The calls the env had run after the collector's last (vecmode's cores).
        self._calls_run = self._calls_now()

    def _calls_now(self) -> int | None:
        return getattr(self.envs.unwrapped, "calls_run", None)

    def _check_calls(self) -> None:
        """Forget the observations if the env was called behind the collector's back."""
        if self._obs is not None and self._calls_now() != self._calls_run:
            self._obs, self._blocked = None, BEHIND_ITS_BACK

    @property
    def obs(self) -> Any:
        """The observations to act on next (batched like the env's)."""
        self._check_calls()
        if self._obs is None:
            closed = self._blocked == CLOSED
            if not closed:  # an async core broken (Ctrl-C): its error, not reset()
                getattr(self.envs.unwrapped, "_check_open", lambda: None)()
            raise (ClosedEnvironmentError if closed else ResetNeeded)(self._blocked)
        return self._obs

    single_observation_space = _env_space("single_observation_space")
    single_action_space = _env_space("single_action_space")
    observation_space = _env_space("observation_space")
    action_space = _env_space("action_space")

    def reset(
        self, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env; return ``(obs, infos)`` as its ``reset`` does.

        ``options["reset_mask"]`` resets only the masked sub-envs (after a full
        reset); a wrong mask raises before anything is reset; an all-False one
        does nothing, over any env.
        """
        if self._blocked == CLOSED:  # (Gymnasium's closed envs reset on)
            raise ClosedEnvironmentError(CLOSED)
        mask = None
        if options is not None:
            options = dict(options)
            if "reset_mask" in options:
                options["reset_mask"] = mask = self._reset_mask(options["reset_mask"])
                if not some(mask):  # nothing to reset (Gymnasium's envs refuse it)
                    self.cut, self.reset_infos = mask & False, {}  # (a new array)
                    return self._obs, self.reset_infos
                refuse_unhonoured_mask(self.envs)
        before = self._obs, self._blocked
        self._obs = None
        self._blocked = call_failed_message("reset")
        try:
            obs, infos = self.envs.reset(seed=seed, options=options)
        except BaseException:  # refused before anything ran: nothing changed
            calls = self._calls_now()
            if calls is not None and calls == self._calls_run:
                self._obs, self._blocked = before
            raise
        moved = self._moved
        if moved is None:  # no real transition since the last full reset
            moved = np.zeros(self.num_envs, dtype=bool)
            moved = in_library(moved, _arrays.leaf(obs)) if self._array else moved
        elif isinstance(moved, modes.Boundary):  # a step that is no real transition
            moved = moved.real & ~moved.ended  # (NEXT_STEP's reset step) starts one
        self.cut = moved & (True if mask is None else mask)  # (a new array)
        self._moved = None if mask is None else moved & ~mask
        self._obs = copied(obs) if self.copy else obs
        self._reader.reset(self._obs, infos, mask)
        self.reset_infos = infos
        self._calls_run = self._calls_now()
        return self._obs, infos

    def _reset_mask(self, mask: Any) -> Any:
        """``options["reset_mask"]`` checked: in the env's library for an env of
        torch or JAX batches; else as NumPy (a tensor over ``NumpyToTorch``).
        Refused where the other sub-envs' observations are unknown."""
        if self._array:
            mask = valid_reset_mask(mask, self.num_envs, self._obs)
        else:
            mask = validate_reset_mask(host_array(mask), self.num_envs)
        self._check_calls()
        if self._obs is None:
            why = {
                NOT_RESET: "needs a full reset() first",
                BEHIND_ITS_BACK: "cannot follow calls made without it",
            }.get(
                self._blocked,
                "cannot follow a call of the collector that failed midway",
            )
            raise ResetNeeded(
                f'TransitionCollector.reset(options={{"reset_mask": mask}}) {why}: '
                f"the other sub-envs' observations are unknown. Call "
                f"collector.reset(seed=...) without a mask."
            )
        return mask

    def step(self, actions: Any) -> Transition:
        """Step every sub-env with ``actions``; return the :class:`Transition`.

        In DISABLED mode the sub-envs whose episode ended are reset afterwards.
        When vecmode's core refuses the actions or a sub-env fails, the collector
        is unchanged (the core says which sub-envs to reset); when that reset
        fails so, it keeps the step's observations (reset the sub-envs in
        ``envs.unwrapped.awaiting_reset``).
        A step that raised returns no transition. ``ResetNeeded``
        before the first :meth:`reset`, or after a call whose env step or reset
        raised midway (any error in another env's step).
        """
        obs = self.obs
        # the caller's actions as they were: their buffer may be refilled, and a
        # sub-env may write into the row it gets (a view, on a sync core)
        actions = copied(actions)
        try:
            result = self.envs.step(copied(actions))
            stepped, rewards, terminations, truncations, infos = result
        except errors.ActionBatchError:  # refused before anything was stepped
            raise
        except BaseException as error:
            if not self._holds_after(error):
                self._obs, self._blocked = None, call_failed_message("step")
            self._calls_run = self._calls_now()
            raise
        # the env has moved on: if anything below raises, only a reset is safe
        self._obs, self._calls_run = None, self._calls_now()
        self._blocked = call_failed_message("step")
        # (a simulator may write even its rewards and flags in place)
        arrays = stepped, rewards, terminations, truncations
        following, rewards, terminations, truncations = (
            map(copied, arrays) if self.copy else arrays
        )
        reader = self._reader
        read = reader.step(
            actions, following, rewards, terminations, truncations, infos
        )
        b, moved_to = read.boundary, following
        self._moved = b  # (read at a reset only)
        reset_infos: dict[str, Any] = {}
        if b is not reader.tracker.quiet:
            moved_to = read.next_obs  # a new batch where finals were merged in
            rows = b.needs_reset
            if some(rows):
                infos = _unshared(infos)  # as the step returned them
                following, reset_infos = self._reset_ended(rows, following)
        self.reset_infos = reset_infos
        self._obs, self._calls_run = following, self._calls_now()
        # in the library and on the device of the flags (a tensor over NumpyToTorch),
        # not the tracker's own (NumPy's is read-only, torch's cannot be)
        flags = _arrays.namespace(terminations)
        valid = b.real if flags is None else in_library(b.real, terminations)
        if valid is b.real and flags is not None:
            valid = copied(valid)  # (JAX's: immutable, kept)
        return Transition(
            obs, actions, rewards, terminations, truncations, moved_to, valid, infos
        )

    def _reset_ended(self, rows: Any, stepped: Any) -> tuple[Any, dict[str, Any]]:
        """DISABLED: reset the sub-envs in ``rows`` (failing, as _holds_after says)."""
        try:
            obs, infos = self.envs.reset(options={"reset_mask": rows})
        except BaseException as error:
            if self._holds_after(error):
                self._obs, self._calls_run = stepped, self._calls_now()
            raise
        obs = copied(obs) if self.copy else obs
        self._reader.reset(obs, infos, rows)
        return obs, infos

    def _holds_after(self, error: BaseException) -> bool:
        """Whether the observations held before a call that raised ``error`` still
        stand: it ran nothing, or the env names the sub-envs it lost."""
        calls = self._calls_now()
        told = self._tracks_lost and isinstance(error, _TOLD_LOST)
        return told or (calls is not None and calls == self._calls_run)

    def close(self) -> None:
        """Close the env; the collector cannot step or reset any more."""
        self._obs, self._blocked = None, CLOSED
        self.envs.close()

    def __enter__(self) -> TransitionCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TransitionCollector({self.envs}, mode={self.mode.value})"
