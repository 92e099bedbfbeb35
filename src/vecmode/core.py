"""The thin core: a vector env with no autoreset policy, and its batched primitive.

A core runs in DISABLED mode: ``step`` steps every sub-env and resets none. Its one
primitive, :meth:`VectorCore.execute`, runs one :class:`Command` per sub-env in a
single call (for a multi-process backend, a single round trip) and returns an
:class:`Executed` record. The autoreset policies (:class:`vecmode.NextStepAutoreset`,
:class:`vecmode.SameStepAutoreset`) are a choice of commands per step, and
:mod:`vecmode.modes` turns a record into SAME_STEP's layout.

A backend subclasses :class:`VectorCore` next to a :class:`gymnasium.vector.VectorEnv`,
runs its sub-envs with :class:`vecmode.runner.Runner` and implements
:meth:`VectorCore._execute`; see ``docs/authors.md``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from copy import deepcopy
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
from gymnasium import Space
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from vecmode.errors import (
    ActionBatchError,
    EpisodeEndedError,
    IncompatibleModeError,
    NotPicklableError,
    SeedError,
    SubEnvError,
    no_env_fns,
)
from vecmode.modes import CORE_MODE, EndedTracker, as_mode

__all__ = [
    "FRESH_OBSERVATION_WRAPPERS",
    "Command",
    "Executed",
    "Request",
    "SeedLike",
    "StepResult",
    "VectorCore",
    "check_core_arguments",
    "check_indices",
    "env_fn_list",
    "is_int",
    "reuses_buffers",
    "space_row",
    "validate_reset_mask",
]

#: Gymnasium's step tuple, ``(observations, rewards, terminations, truncations,
#: infos)``.
StepResult = tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]
#: What ``reset(seed=...)`` takes: an int (sub-env ``i`` gets ``seed + i``), None,
#: or one seed (or None) per sub-env; NumPy integers and arrays of them too.
SeedLike = int | np.integer | Sequence[int | np.integer | None] | np.ndarray | None


class Request(NamedTuple):
    """One call's work: an ``int(Command)`` per sub-env, the batched actions (None
    when nothing steps), a seed (or None) per sub-env or None, and the options of
    the sub-envs that reset (each gets a copy)."""

    commands: list[int]
    actions: Any = None
    seeds: list[int | None] | None = None
    options: dict[str, Any] | None = None


class Executed(NamedTuple):
    """What one :meth:`VectorCore.execute` call did, per sub-env.

    The first five fields are Gymnasium's step tuple in DISABLED mode
    (``executed[:5]``); sub-envs that did not step have reward 0 and flags False.
    """

    #: The new observation of each sub-env that ran (the reset one where it was
    #: reset), the last one of the others.
    observations: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    #: The infos of the sub-envs that ran, batched as Gymnasium batches them.
    infos: dict[str, Any]
    #: The sub-envs whose step ended their episode, in order.
    ended: list[int]
    #: The ``STEP_THEN_RESET`` sub-envs reset within the call:
    #: ``(index, last observation, last info)``, in order.
    finals: list[tuple[int, Any, dict[str, Any]]]


class Command(enum.IntEnum):
    """What a sub-env does in one :meth:`VectorCore.execute` call."""

    #: Nothing; the sub-env's last observation is returned, reward 0, flags False.
    KEEP = 0
    #: Step with the sub-env's action.
    STEP = 1
    #: Reset (with the call's seed and options); reward 0, flags False.
    RESET = 2
    #: Step, then reset within the same call if the step ended the episode.
    STEP_THEN_RESET = 3


_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)
_VALID_COMMANDS = frozenset(int(c) for c in Command)
_STEPPING = frozenset((_STEP, _STEP_THEN_RESET))


def validate_reset_mask(mask: Any, num_envs: int) -> np.ndarray:
    """``options["reset_mask"]`` checked, as a bool array of shape ``(num_envs,)``.

    A list or tuple of bools is accepted too. Raises ``TypeError`` for anything not
    boolean and ``ValueError`` for a wrong shape, as Gymnasium does.
    """
    if isinstance(mask, (list, tuple)):
        mask = np.asarray(mask)
        if mask.size == 0:
            mask = mask.astype(np.bool_)
    if not isinstance(mask, np.ndarray):
        raise TypeError(
            f"`options['reset_mask']` must be a numpy array, got {type(mask)}: pass "
            f"a bool array of shape ({num_envs},) (or a list of {num_envs} bools), "
            f"e.g. np.logical_or(terminations, truncations)."
        )
    # Gymnasium's own wording first (code and tests match it), then what to do.
    if mask.shape != (num_envs,):
        raise ValueError(
            f"`options['reset_mask']` must have shape `({num_envs},)`, got "
            f"{mask.shape}: one flag per sub-env."
        )
    if mask.dtype != np.bool_:
        raise TypeError(
            f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}; "
            f"if its values are 0/1, pass them as bools (mask.astype(bool); "
            f"mask.bool() for a torch tensor)."
        )
    return mask


def env_fn_list(env_fns: Iterable[Callable[[], Any]]) -> list[Callable[[], Any]]:
    """``env_fns`` as a list (a generator, too, is taken once), refusing none."""
    found = list(env_fns)
    if not found:  # Gymnasium's sync env gives an IndexError
        raise ValueError(no_env_fns())
    return found


def check_core_arguments(
    name: str, autoreset_mode: Any, observation_mode: Any, make_vec_args: str = ""
) -> None:
    """Refuse a mode other than DISABLED (saying how to get it) and a bad
    ``observation_mode``: the checks every core's constructor starts with.

    ``make_vec_args``: the ``make_vec`` arguments that build this core (e.g.
    ``"vectorization_mode='async', "``), for the message.
    """
    mode = as_mode(autoreset_mode)
    if mode is not CORE_MODE:
        raise IncompatibleModeError(
            f"{name} runs in {CORE_MODE.value} mode only, not {mode.value}: the core "
            f"holds no autoreset policy; the policy is a wrapper. Use "
            f"vecmode.with_autoreset({name}(env_fns), {mode.value!r}) or "
            f"vecmode.make_vec(..., {make_vec_args}autoreset_mode={mode.value!r})."
        )
    if not (
        observation_mode in ("same", "different")
        or (isinstance(observation_mode, tuple) and len(observation_mode) == 2)
    ):
        raise ValueError(
            # Gymnasium's wording (code and tests match it), then the fix
            f"Invalid `observation_mode`, expected: 'same' or 'different' or tuple "
            f"of single and batch observation space, actual got {observation_mode}. "
            f"Pass observation_mode='same' (every sub-env has the first one's "
            f"space), 'different' (same shapes and dtypes, other bounds) or a tuple "
            f"(batched_space, single_space)."
        )


#: How ``gymnasium.vector.utils.batch_space`` batches each kind of space: the
#: function it dispatches to tells the structure of a batch (a subclass of Box is
#: batched as a Box; a space with a batching of its own is left alone).
_BATCHED_AS_ARRAY = frozenset(
    batch_space.dispatch(kind) for kind in (Box, Discrete, MultiDiscrete, MultiBinary)
)
_BATCHED_AS_TUPLE_OF_SPACES = batch_space.dispatch(Tuple)
_BATCHED_AS_DICT = batch_space.dispatch(Dict)
_BATCHED_AS_TUPLE_OF_SAMPLES = batch_space.dispatch(Space)


def batch_problem(
    space: Space, batch: Any, num_envs: int, where: str = "actions"
) -> str | None:
    """What keeps ``batch`` from being ``num_envs`` samples of ``space`` batched as
    ``batch_space(space, num_envs)`` batches them; None if nothing does.

    Array spaces need a leading dimension of ``num_envs``; a Tuple a tuple of
    batches, a Dict a dict of them with the space's keys; Text, Graph, Sequence,
    OneOf and custom spaces a tuple of ``num_envs`` samples. A space with a
    ``batch_space`` of its own is not checked. The samples' values are not checked.

    >>> from gymnasium.spaces import Dict, Discrete, Text
    >>> batch_problem(Text(5), ("ab", "c"), 2) is None
    True
    >>> batch_problem(Dict(a=Discrete(2)), {"a": [0, 1], "b": [0, 1]}, 2)
    "actions has the key 'b', which the action space Dict('a': Discrete(2)) lacks"
    """
    kind = batch_space.dispatch(type(space))
    if kind in _BATCHED_AS_ARRAY:
        return _array_batch_problem(space, batch, num_envs, where)
    if kind is _BATCHED_AS_TUPLE_OF_SPACES:
        return _tuple_batch_problem(cast(Tuple, space), batch, num_envs, where)
    if kind is _BATCHED_AS_DICT:
        return _dict_batch_problem(cast(Dict, space), batch, num_envs, where)
    if kind is _BATCHED_AS_TUPLE_OF_SAMPLES:
        if isinstance(batch, (tuple, list)) and len(batch) == num_envs:
            return None
        return (
            f"{where} must be a tuple of {num_envs} samples of {space} (one per "
            f"sub-env), got {_short(batch)}"
        )
    return None  # batched by a function of its own: its structure is unknown here


def _array_batch_problem(
    space: Space, batch: Any, num_envs: int, where: str
) -> str | None:
    shape = getattr(batch, "shape", None)  # an array of any library
    if not isinstance(shape, tuple):
        try:  # a regular nested sequence
            shape = np.shape(batch)
        except (ValueError, TypeError):  # ragged, or not a sequence at all
            shape = None
    size = int(shape[0]) if shape else None
    if size is None and type(batch) is not np.ndarray and isinstance(batch, Sized):
        size = len(batch)  # a ragged sequence: its length
    if size != num_envs:
        got = (
            f"{type(batch).__name__} {batch!r}"
            if size is None
            else f"a batch of {size}"
        )
        return (
            f"{where} must be a batch of {num_envs} actions (one per sub-env, "
            f"leading dimension {num_envs}), got {got}"
        )
    single = space.shape
    if shape is not None and single is not None and tuple(shape[1:]) != single:
        return (
            f"{where} must have shape {(num_envs, *single)} ({num_envs} samples of "
            f"{space}, each of shape {single}), got shape {tuple(shape)}"
        )
    return None


def _tuple_batch_problem(
    space: Tuple, batch: Any, num_envs: int, where: str
) -> str | None:
    subspaces = space.spaces
    if not isinstance(batch, (tuple, list)) or len(batch) != len(subspaces):
        return (
            f"{where} must be a tuple of {len(subspaces)} batches, one per "
            f"subspace of {space}, got {_short(batch)}"
        )
    for j, (subspace, sub) in enumerate(zip(subspaces, batch, strict=True)):
        problem = batch_problem(subspace, sub, num_envs, f"{where}[{j}]")
        if problem is not None:
            return problem
    return None


def _dict_batch_problem(
    space: Dict, batch: Any, num_envs: int, where: str
) -> str | None:
    subspaces = space.spaces
    if type(batch) is not dict and not isinstance(batch, Mapping):
        return (
            f"{where} must be a dict with the keys {list(subspaces)}, got "
            f"{_short(batch)}"
        )
    if batch.keys() != subspaces.keys():  # one set comparison when all is well
        missing = [key for key in subspaces if key not in batch]
        if missing:
            return f"{where} lacks the key {missing[0]!r} of the action space {space}"
        key = next(key for key in batch if key not in subspaces)
        return f"{where} has the key {key!r}, which the action space {space} lacks"
    for key, subspace in subspaces.items():
        problem = batch_problem(subspace, batch[key], num_envs, f"{where}[{key!r}]")
        if problem is not None:
            return problem
    return None


def _short(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def space_row(space: Space, batch: Any, i: int) -> Any:
    """Sub-env ``i``'s entry of ``batch``, a batch of samples of the single space
    ``space``, read as Gymnasium's ``iterate`` reads it (row ``i`` of an array,
    item ``i`` of a tuple of samples, and so on through Tuples and Dicts).

    >>> import numpy as np
    >>> from gymnasium.spaces import Box, Dict, Discrete, Text, Tuple
    >>> space_row(Text(8), ("hcafe", "hhcafe"), 0)
    'hcafe'
    >>> space = Dict(pos=Box(0, 9, (2,), int), tag=Tuple((Discrete(7), Text(3))))
    >>> pos, tag = np.array([[1, 2], [3, 4]]), (np.array([5, 6]), ("a", "bc"))
    >>> space_row(space, {"pos": pos, "tag": tag}, 1)
    {'pos': array([3, 4]), 'tag': (np.int64(6), 'bc')}
    """
    kind = batch_space.dispatch(type(space))
    if kind is _BATCHED_AS_TUPLE_OF_SPACES:
        subspaces = cast(Tuple, space).spaces
        return tuple(
            space_row(subspace, sub, i)
            for subspace, sub in zip(subspaces, batch, strict=True)
        )
    if kind is _BATCHED_AS_DICT:
        return {
            key: space_row(subspace, batch[key], i)
            for key, subspace in cast(Dict, space).spaces.items()
        }
    return batch[i]  # an array's row, or the i-th of a tuple of samples


#: The wrapper classes whose observations (``final_obs`` included) are new
#: arrays or the wrapped env's own, never a buffer that a later call writes into:
#: vecmode's, each module adding its own. Exact classes: a subclass (or any
#: other wrapper) may keep one buffer and return it every call.
FRESH_OBSERVATION_WRAPPERS: set[type] = set()


def reuses_buffers(envs: VectorEnv) -> bool:
    """Whether ``envs`` may hand out observation arrays that later calls overwrite.

    The innermost env says it does not with ``copy=True`` (Gymnasium's and
    vecmode's vector envs, their default), and every wrapper over it must be one
    of :data:`FRESH_OBSERVATION_WRAPPERS`. An env that says nothing (a custom
    vector env), and any other wrapper (yours, Gymnasium's), are assumed to.
    """
    env = envs
    while isinstance(env, VectorWrapper):
        if type(env) not in FRESH_OBSERVATION_WRAPPERS:
            return True
        env = env.env
    return getattr(env, "copy", None) is not True


def copy_batch(batch: Any) -> Any:
    """A copy of a batched observation (a plain copy for arrays, else deep)."""
    if type(batch) is np.ndarray:
        return batch.copy()
    return deepcopy(batch)


_Env = TypeVar("_Env", bound="ClosesOnExit")


class ClosesOnExit:
    """``with env: ...`` closes ``env`` on leaving the block, as Gymnasium's
    single envs do (its vector envs and wrappers are no context managers):
    vecmode's cores and wrappers have it."""

    def __enter__(self: _Env) -> _Env:
        """The env itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the env (an exception in the block goes on up)."""
        self.close()  # type: ignore[attr-defined]


class VectorCore(ClosesOnExit, VectorEnv):
    """A vector env in DISABLED mode built on one batched primitive, :meth:`execute`.

    Subclasses implement :meth:`_execute`. This class turns it into Gymnasium's
    ``reset``/``step`` API, validates input (actions, seeds, ``reset_mask``) and
    raises :class:`~vecmode.EpisodeEndedError` before anything runs when a sub-env
    whose episode ended would be stepped without a reset.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        space = self.single_action_space
        #: The shape of a batch of actions that needs no other check: an array
        #: batch of an array space (None: every batch is checked in full).
        self._action_batch_shape = (
            (self.num_envs, *space.shape)
            if batch_space.dispatch(type(space)) in _BATCHED_AS_ARRAY
            and space.shape is not None
            else None
        )
        #: The sub-envs whose episode ended (in a ``STEP``) and that were not reset
        #: since; stepping one raises :class:`~vecmode.EpisodeEndedError`. Read it,
        #: don't change it (NEXT_STEP's policy resets exactly these).
        self.ended = EndedTracker(self.num_envs)
        #: Sub-envs whose state a failed call left unknown (reset them to go on).
        self._lost: set[int] = set()
        self._all_step: list[int] = [_STEP] * self.num_envs
        self._all_reset: list[int] = [_RESET] * self.num_envs

    # ------------------------------------------------------------------ primitive
    def add_info(
        self, infos: dict[str, Any], info: dict[str, Any], index: int
    ) -> dict[str, Any]:
        """Gymnasium's info batching: sub-env ``index``'s ``info`` into ``infos``."""
        return self._add_info(infos, info, index)

    def execute(
        self,
        commands: Sequence[int] | np.ndarray,
        actions: Any = None,
        *,
        seed: SeedLike = None,
        options: dict[str, Any] | None = None,
    ) -> Executed:
        """Run ``commands[i]`` on sub-env ``i``, for every sub-env, in one call.

        Args:
            commands: one :class:`Command` per sub-env.
            actions: the batched actions (needed when any command steps); entries of
                sub-envs that don't step are ignored.
            seed: seeds for the sub-envs that reset, as in :meth:`reset`.
            options: options for the sub-envs that reset (never mutated).

        Raises:
            EpisodeEndedError: a sub-env whose episode ended would be stepped.
            ValueError: bad commands, or actions that are no batch of actions.

        >>> import numpy as np, gymnasium as gym
        >>> from vecmode import SyncVectorEnv
        >>> from vecmode.core import Command
        >>> envs = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
        >>> _ = envs.reset(seed=0)
        >>> done = envs.execute([Command.STEP, Command.RESET], np.array([1, 1]))
        >>> done.rewards, done.ended, done.finals
        (array([1., 0.]), [], [])
        >>> envs.close()
        """
        if self.closed:
            raise ClosedEnvironmentError(env_closed_message(type(self).__name__))
        return self._dispatch(
            Request(
                self._commands(commands),
                actions,
                None if seed is None else self._seeds(seed),
                None if options is None else check_options(options),
            )
        )

    def _commands(self, commands: Sequence[int] | np.ndarray) -> list[int]:
        """``commands`` checked, as a list of ints."""
        if type(commands) is list and len(commands) == self.num_envs:
            cmds = commands
        else:
            is_array = isinstance(commands, np.ndarray)
            cmds = commands.tolist() if is_array else [int(c) for c in commands]
            shape = commands.shape if is_array else (len(cmds),)
            if shape != (self.num_envs,):
                raise ValueError(
                    f"commands must be a sequence of {self.num_envs} "
                    f"vecmode.core.Command values (one per sub-env), got shape {shape}."
                )
        if not _VALID_COMMANDS.issuperset(cmds):
            unknown = sorted(set(cmds) - _VALID_COMMANDS)[0]
            raise ValueError(
                f"{unknown!r} is not a vecmode.core.Command; use Command.KEEP, "
                f"Command.STEP, Command.RESET or Command.STEP_THEN_RESET."
            )
        return cmds

    def _dispatch(self, request: Request) -> Executed:
        """Check, run, track the episodes ended. Where the call fails, the sub-envs
        whose state it left unknown must be reset before they are stepped again."""
        cmds = request.commands
        kept = self._validate(cmds, request.actions)
        try:
            executed = self._execute(request)
        except SubEnvError as exc:
            self._lose(exc.lost or ran_by(cmds))
            raise
        except _REFUSED:  # the backend refused the call before it ran anything
            raise
        except BaseException:
            self._lose(ran_by(cmds))
            raise
        self._track(cmds, executed, kept)
        return executed

    def _dispatch_async(self, name: str, request: Request) -> None:
        """Check, then send the call ``name`` (``"step"`` or ``"reset"``) without
        waiting; :meth:`_dispatch_wait` ends it."""
        self._validate(request.commands, request.actions)
        self._execute_async(name, request)

    def _dispatch_wait(self, name: str, timeout: float | None) -> Executed:
        """Wait for the pending call ``name``; track endings; return its record."""
        try:
            executed, cmds = self._execute_wait(name, timeout)
        except SubEnvError as exc:
            self._lose(exc.lost)
            raise
        self._track(cmds, executed)
        return executed

    def close(self, **kwargs: Any) -> None:
        """Close the sub-envs and release every resource; closing twice is a no-op.

        When a sub-env's ``close()`` raises, the others are closed too, then a
        :class:`~vecmode.SubEnvError` names those whose ``close()`` failed.
        """
        if self.closed:
            return
        try:
            self.close_extras(**kwargs)
        finally:
            self.closed = True

    def _lose(self, indices: Iterable[int]) -> None:
        """These sub-envs' state is unknown: they must be reset to go on."""
        self._lost.update(int(i) for i in indices)

    def _open(self) -> None:
        """Raise the closed-env error if the env was closed."""
        if self.closed:
            raise ClosedEnvironmentError(env_closed_message(type(self).__name__))

    def _validate(self, cmds: list[int], actions: Any) -> list[int] | None:
        """Raise before anything runs: an ended sub-env stepped, a wrong batch.

        Returns the ended sub-envs that stay ended (kept), or None when no
        sub-env had ended.
        """
        kept = self._check_ended(cmds) if self._lost or self.ended.count else None
        if not (  # the common case, in O(1): an array batch of an array space
            type(actions) is np.ndarray and actions.shape == self._action_batch_shape
        ) and (actions is not None or not _STEPPING.isdisjoint(cmds)):
            problem = batch_problem(self.single_action_space, actions, self.num_envs)
            if problem is not None:
                raise ActionBatchError(
                    f"{problem}; nothing was stepped. Pass one action per sub-env "
                    f"({self.num_envs}), structured like env.action_space (sample "
                    f"one with env.action_space.sample())."
                )
        return kept

    def _check_ended(self, cmds: list[int]) -> list[int] | None:
        """Refuse to step a sub-env whose episode ended or whose state was lost;
        the ended sub-envs that stay ended (None: none had ended)."""
        if self._lost:
            lost = [i for i in sorted(self._lost) if cmds[i] in _STEPPING]
            if lost:
                raise EpisodeEndedError(lost, lost=True)
        if not self.ended.count:
            return None
        ended = self.ended.mask.nonzero()[0].tolist()  # (faster than flatnonzero)
        stepped = [i for i in ended if cmds[i] in _STEPPING]
        if stepped:
            raise EpisodeEndedError(stepped)
        return [i for i in ended if cmds[i] == _KEEP]

    def _track(
        self, cmds: list[int], executed: Executed, kept: list[int] | None = None
    ) -> None:
        """After a call ran: the ended sub-envs are those ``kept`` (ended before,
        and neither stepped nor reset) and those that a ``STEP`` ended."""
        tracker = self.ended
        if kept is None and tracker.count:
            kept = [i for i in tracker.indices() if cmds[i] == _KEEP]
        if kept or executed.finals:  # (a STEP_THEN_RESET's end was reset)
            ended = [i for i in executed.ended if cmds[i] == _STEP]
            tracker.clear()
            tracker.update(ended=[*(kept or ()), *ended])
        elif executed.ended:  # only STEPs ended: their flags tell which
            tracker.set(np.logical_or(executed.terminations, executed.truncations))
        elif tracker.count:
            tracker.clear()
        if self._lost:
            self._lost.difference_update([i for i in self._lost if cmds[i] == _RESET])

    def _execute(self, request: Request) -> Executed:
        """Run a validated :class:`Request` (:class:`vecmode.runner.Runner` runs
        one for a slice of sub-envs). Backends implement this."""
        raise NotImplementedError

    #: A backend with a split API implements ``_execute_async(name, request)``
    #: (send the call ``"step"`` or ``"reset"``) and ``_execute_wait(name,
    #: timeout)`` (its ``(executed, commands)``).
    _execute_async: Any
    _execute_wait: Any

    # ------------------------------------------------------------ Gymnasium API
    def step(self, actions: Any) -> StepResult:
        """Step every sub-env (DISABLED mode: nothing is reset).

        Raises:
            EpisodeEndedError: a sub-env's episode ended and it was not reset.
        """
        if self.closed:
            raise ClosedEnvironmentError(env_closed_message(type(self).__name__))
        return self._dispatch(Request(self._all_step, actions))[:5]  # type: ignore[return-value]

    def reset(
        self,
        *,
        seed: SeedLike = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or only those in ``options["reset_mask"]``.

        With a mask, the observations hold the reset observations of the masked
        sub-envs and the latest ones of the others, and the infos only the masked
        sub-envs' reset infos (as Gymnasium). Unlike Gymnasium, an all-False mask is
        a no-op rather than an error, and ``options`` is never mutated.
        """
        self._open()
        seeds = self._seeds(seed)
        cmds, rest = self._reset_commands(options)
        executed = self._dispatch(Request(cmds, None, seeds, rest))
        return executed.observations, executed.infos

    def _reset_commands(
        self, options: dict[str, Any] | None
    ) -> tuple[list[int], dict[str, Any] | None]:
        """The commands of a reset with ``options``, and the options the reset
        sub-envs get (``reset_mask`` taken out, the caller's dict untouched)."""
        options = check_options(options)
        if options is not None and "reset_mask" in options:
            mask = validate_reset_mask(options["reset_mask"], self.num_envs)
            rest = {k: v for k, v in options.items() if k != "reset_mask"}
            return [_RESET if m else _KEEP for m in mask.tolist()], rest
        return self._all_reset, options

    @property
    def awaiting_reset(self) -> np.ndarray:
        """Bool mask of the sub-envs that must be reset before they are stepped:
        their episode ended and they were not reset (or a failed call lost their
        state). In NEXT_STEP mode, the sub-envs that the next step resets."""
        mask = self.ended.mask.copy()
        if self._lost:
            mask[sorted(self._lost)] = True
        return mask

    def _seeds(self, seed: SeedLike) -> list[int | None] | None:
        """One seed (or None) per sub-env, as Python ints: an int gives
        ``seed + i`` to sub-env ``i`` (as Gymnasium); NumPy integers are accepted."""
        if seed is None:
            return None
        n = self.num_envs
        one = is_int(seed) or not _is_seed_list(seed)
        seeds = [seed] if one else list(cast(Iterable[Any], seed))
        if not one and len(seeds) != n:
            raise SeedError(
                f"seed must be None, an int, or a list of {n} seeds (one per "
                f"sub-env), got a list of {len(seeds)}."
            )
        _check_seeds(seeds, "seed" if one else "each seed in the list", n)
        if one:
            return [int(cast(int, seed)) + i for i in range(n)]
        return [None if s is None else int(s) for s in seeds]


def _check_seeds(seeds: list[Any], where: str, num_envs: int) -> None:
    """Refuse a seed that is not an int or None, or is negative."""
    wrong = [s for s in seeds if s is not None and not is_int(s)]
    if wrong:
        raise SeedError(
            f"{where} must be an int or None, got {type(wrong[0]).__name__} "
            f"{wrong[0]!r}; pass seed=None, an int (sub-env i gets seed + i), or "
            f"a list of {num_envs} ints or Nones (NumPy integers are fine; "
            f"int(seed) for a 0-d array or tensor)."
        )
    negative = [s for s in seeds if s is not None and s < 0]
    if negative:  # Gymnasium's seeding refuses them in every sub-env
        raise SeedError(
            f"{where} must be >= 0 (Gymnasium's seeding takes no negative "
            f"seed), got {negative[0]!r}; nothing was reset."
        )


def _is_seed_list(seed: Any) -> bool:
    """Whether ``seed`` is a list of seeds (any iterable but a string or a 0-d
    array or tensor)."""
    return (
        isinstance(seed, Iterable)
        and not isinstance(seed, (str, bytes))
        and getattr(seed, "ndim", None) != 0
    )


#: What a backend raises for a call it refuses before running anything (a call
#: pending or in progress, the env closed, a message that does not pickle): no
#: sub-env's state is lost.
_REFUSED = (AlreadyPendingCallError, ClosedEnvironmentError, NotPicklableError)


def ran_by(commands: list[int]) -> list[int]:
    """The sub-envs a call ran (all but KEEP)."""
    return [i for i, c in enumerate(commands) if c != _KEEP]


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int or a NumPy integer, and not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def check_options(options: Any) -> dict[str, Any] | None:
    """``options`` if it is a dict or None, else a clear TypeError."""
    if options is None or isinstance(options, dict):
        return options
    raise TypeError(
        f"options must be a dict or None, got {type(options).__name__} "
        f'{options!r}; pass e.g. options={{"reset_mask": mask}}.'
    )


#: ``call`` may not run these: they would bypass the core's bookkeeping.
FORBIDDEN_CALLS = frozenset(("step", "reset", "close"))


def check_call(name: str) -> None:
    """Refuse ``call("step")`` and the like, pointing to the env's own method."""
    if name in FORBIDDEN_CALLS:
        raise ValueError(
            f"call({name!r}) would run {name} behind the vector env's back (its "
            f"bookkeeping of ended sub-envs would be wrong); use the env's own "
            f"{name}() instead."
        )


def check_indices(indices: Any, num_envs: int) -> list[int]:
    """``indices`` of sub-envs as a list of ints in ``range(num_envs)``, in the
    order given (repeats kept): None means every sub-env, an int that one;
    negative indices count from the end, as in a list.

    >>> check_indices(None, 3), check_indices(-1, 3), check_indices((2, 0), 3)
    ([0, 1, 2], [2], [2, 0])
    >>> check_indices([3], 3)
    Traceback (most recent call last):
    ...
    IndexError: sub-env index 3 is out of range for 3 sub-envs; pass indices in range(3) (or -3..-1), an int, or None for every sub-env.
    """
    if indices is None:
        return list(range(num_envs))
    if is_int(indices):
        indices = [indices]
    if isinstance(indices, (str, bytes, Mapping)) or not isinstance(indices, Iterable):
        items, wrong = [], [indices]
    else:
        items = list(indices)
        wrong = [i for i in items if not is_int(i)]
    if wrong:
        raise TypeError(
            f"indices must be None (every sub-env), an int or an iterable of ints, "
            f"got {type(wrong[0]).__name__} {wrong[0]!r}."
        )
    outside = [int(i) for i in items if not -num_envs <= int(i) < num_envs]
    if outside:
        raise IndexError(
            f"sub-env index {outside[0]} is out of range for {num_envs} sub-envs; "
            f"pass indices in range({num_envs}) (or -{num_envs}..-1), an int, or "
            f"None for every sub-env."
        )
    return [int(i) % num_envs for i in items]


def env_closed_message(name: str) -> str:
    """What every vecmode env raises when used after ``close()``."""
    return f"{name} was closed; build a new env to go on."


# The name sb3.py and remote.py import until they import env_closed_message.
env_closed = env_closed_message
