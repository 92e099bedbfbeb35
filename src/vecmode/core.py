"""The thin core: a vector env with no autoreset policy, and its batched primitive.

A core runs in DISABLED mode: ``step`` steps every sub-env, nothing is reset unless
the caller asks with ``reset(options={"reset_mask": mask})``. On top of that a core
offers ONE primitive, :meth:`VectorCore.execute`, which runs one :class:`Command` per
sub-env in a single call (for a multi-process backend: a single round trip):

* ``Command.KEEP``: leave the sub-env alone; its last observation is returned.
* ``Command.STEP``: step it with its action.
* ``Command.RESET``: reset it (with the call's seed and options).
* ``Command.STEP_THEN_RESET``: step it, and if that ended its episode reset it
  within the same call; its last observation and info are returned apart, in the
  record's ``finals``.

It returns what happened per sub-env as an :class:`Executed` record, not any
mode's info layout: the autoreset policies (:class:`vecmode.NextStepAutoreset`,
:class:`vecmode.SameStepAutoreset`) are a choice of commands per step, and
:mod:`vecmode.modes` turns a record into SAME_STEP's layout.

For backend authors: subclass :class:`VectorCore` next to a
:class:`gymnasium.vector.VectorEnv`, run your sub-envs with
:class:`vecmode.runner.Runner`, and implement :meth:`VectorCore._execute`;
``reset``, ``step``, input validation and the DISABLED-mode check that no ended
sub-env is stepped come from :class:`VectorCore`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    """One call's work: a command per sub-env, and what the commands need."""

    #: One ``int(Command)`` per sub-env.
    commands: list[int]
    #: The batched actions (entries of sub-envs that don't step are ignored), or
    #: None when no command steps.
    actions: Any = None
    #: One seed (or None) per sub-env, for those that reset; or None.
    seeds: list[int | None] | None = None
    #: The options of the sub-envs that reset (each gets a copy), or None.
    options: dict[str, Any] | None = None


class Executed(NamedTuple):
    """What one :meth:`VectorCore.execute` call did, per sub-env.

    The first five fields are Gymnasium's step tuple in DISABLED mode
    (``executed[:5]``); sub-envs that did not step have reward 0 and flags False.
    """

    #: The batch of observations: the new one of each sub-env that ran (its reset
    #: observation where it was reset), the last one of the others.
    observations: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    #: The infos of the sub-envs that ran, batched with ``_key`` masks
    #: (Gymnasium's ``_add_info``): the step's info, or the reset's.
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
    """Check ``options["reset_mask"]`` and return it as a bool array of ``(num_envs,)``.

    A list or tuple of bools is accepted as well as an array. Raises ``TypeError``
    for anything that is not boolean and ``ValueError`` for a wrong shape (the
    exception types Gymnasium raises), with a message saying what to pass.
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

    ``make_vec_args``: extra ``make_vec`` arguments that build this core (e.g.
    ``"vectorization_mode='async', "``), for the message.
    """
    mode = as_mode(autoreset_mode)
    if mode is not CORE_MODE:
        raise IncompatibleModeError(core_mode(name, mode, make_vec_args))
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
#: function it dispatches to tells the structure of a batch (so a subclass of Box
#: is batched as a Box, and a space with a batching of its own is left alone).
_BATCHED_AS_ARRAY = frozenset(
    batch_space.dispatch(kind) for kind in (Box, Discrete, MultiDiscrete, MultiBinary)
)
_BATCHED_AS_TUPLE_OF_SPACES = batch_space.dispatch(Tuple)
_BATCHED_AS_DICT = batch_space.dispatch(Dict)
_BATCHED_AS_TUPLE_OF_SAMPLES = batch_space.dispatch(Space)


def batch_problem(
    space: Space, batch: Any, num_envs: int, where: str = "actions"
) -> str | None:
    """What keeps ``batch`` from being a batch of ``num_envs`` samples of
    ``space``, structured as ``batch_space(space, num_envs)`` (and as Gymnasium's
    ``iterate`` reads it); None if nothing does.

    * Box, Discrete, MultiDiscrete, MultiBinary: an array (or a sequence) whose
      leading dimension is ``num_envs``;
    * Tuple: a tuple of one batch per subspace; Dict: a dict with exactly the
      space's keys, one batch per key;
    * Text, Graph, Sequence, OneOf and custom spaces: a tuple (or list) of
      ``num_envs`` single samples;
    * a space with a ``batch_space`` of its own: not checked (None).

    Only the structure and the batch size are checked, not the samples' values.

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
    shape = _shape_of(batch)
    size: int | None = int(shape[0]) if shape else None
    if size is None and type(batch) is not np.ndarray:
        try:  # a ragged sequence: its length
            size = len(batch)
        except TypeError:
            size = None
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


def _shape_of(batch: Any) -> tuple[int, ...] | None:
    """The shape of an array (any library's) or of a regular nested sequence."""
    shape = getattr(batch, "shape", None)
    if isinstance(shape, tuple):
        return shape
    try:
        return np.shape(batch)
    except (ValueError, TypeError):  # ragged, or not a sequence at all
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
        for key in subspaces:
            if key not in batch:
                return f"{where} lacks the key {key!r} of the action space {space}"
        for key in batch:
            if key not in subspaces:
                return (
                    f"{where} has the key {key!r}, which the action space {space} lacks"
                )
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
    """Sub-env ``i``'s entry of ``batch``, a batch of samples of ``space`` (the
    single space, e.g. ``envs.single_observation_space``), read by the structure
    ``batch_space(space, n)`` gives it (as Gymnasium's ``iterate`` reads it):

    * Box, Discrete, MultiDiscrete, MultiBinary: row ``i`` of the array;
    * Tuple: a tuple of the rows of each subspace's batch; Dict: a dict of them;
    * Text, Graph, Sequence, OneOf and custom spaces: item ``i`` of the tuple of
      samples;
    * a space with a ``batch_space`` of its own: ``batch[i]``.

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
        self._actions_are_arrays = (
            batch_space.dispatch(type(self.single_action_space)) in _BATCHED_AS_ARRAY
        )
        self._action_batch_shape = (
            (self.num_envs, *self.single_action_space.shape)
            if self._actions_are_arrays and self.single_action_space.shape is not None
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

        Returns:
            An :class:`Executed` record: the observations, rewards, flags and
            batched infos of the call, the sub-envs whose episode ended, and the
            last observation and info of those reset within the call.

        Raises:
            EpisodeEndedError: a sub-env whose episode ended would be stepped (use
                ``RESET`` or ``STEP_THEN_RESET`` for it, or reset it first).
            ValueError: wrong number of commands, an unknown command, or actions
                that are not a batch of ``num_envs`` actions.

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
        self._open()
        return self._dispatch(
            Request(
                self._commands(commands),
                actions,
                self._seeds(seed),
                check_options(options),
            )
        )

    def _commands(self, commands: Sequence[int] | np.ndarray) -> list[int]:
        """``commands`` checked, as a list of ints."""
        if type(commands) is list and len(commands) == self.num_envs:
            cmds = commands
            shape: tuple[int, ...] = (len(cmds),)
        elif isinstance(commands, np.ndarray):
            shape = commands.shape
            cmds = commands.tolist()
        else:
            cmds = [int(c) for c in commands]
            shape = (len(cmds),)
        if shape != (self.num_envs,):
            raise ValueError(commands_shape(shape, self.num_envs))
        if not _VALID_COMMANDS.issuperset(cmds):
            unknown = set(cmds) - _VALID_COMMANDS
            raise ValueError(unknown_command(sorted(unknown)[0]))
        return cmds

    def _dispatch(self, request: Request) -> Executed:
        """Validated entry: check ended sub-envs and actions, run, track endings.

        If the call fails (a sub-env raised, or it was interrupted), the sub-envs
        whose state it left unknown must be reset before they are stepped again.
        """
        self._validate(request.commands, request.actions)
        try:
            executed = self._execute(request)
        except SubEnvError as exc:
            self._lose(exc.lost or ran_by(request.commands))
            raise
        except _REFUSED:  # the backend refused the call before it ran anything
            raise
        except BaseException:
            self._lose(ran_by(request.commands))
            raise
        self._track(request.commands, executed.ended)
        return executed

    def _dispatch_async(self, name: str, request: Request) -> None:
        """Validated entry of the split API: check, then send the call ``name``
        (``"step"`` or ``"reset"``) without waiting; :meth:`_dispatch_wait` ends it.
        """
        self._validate(request.commands, request.actions)
        self._execute_async(name, request)

    def _dispatch_wait(self, name: str, timeout: float | None) -> Executed:
        """Wait for the pending call ``name``; track endings; return its record."""
        try:
            executed, cmds = self._execute_wait(name, timeout)
        except SubEnvError as exc:
            self._lose(exc.lost)
            raise
        self._track(cmds, executed.ended)
        return executed

    def close(self, **kwargs: Any) -> None:
        """Close the sub-envs and release every resource; closing twice is a no-op.

        The env is closed even when a sub-env's ``close()`` raises: every other
        sub-env is closed too, then a :class:`~vecmode.SubEnvError` names the
        sub-envs whose ``close()`` failed; later calls raise the closed-env error.
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
            raise ClosedEnvironmentError(env_closed(type(self).__name__))

    def _validate(self, cmds: list[int], actions: Any) -> None:
        """Raise before anything runs: an ended sub-env stepped, a wrong batch."""
        if self._lost:
            stepped_lost = [
                i for i in sorted(self._lost) if cmds[i] != _RESET and cmds[i] != _KEEP
            ]
            if stepped_lost:
                raise EpisodeEndedError(stepped_lost, lost=True)
        if self.ended.count:
            stepped_ended = [i for i in self.ended.indices() if cmds[i] in _STEPPING]
            if stepped_ended:
                raise EpisodeEndedError(stepped_ended)
        if actions is not None or _STEP in cmds or _STEP_THEN_RESET in cmds:
            if (  # the common case, in O(1): an array batch of an array space
                type(actions) is np.ndarray
                and self._actions_are_arrays
                and actions.shape == self._action_batch_shape
            ):
                return
            problem = batch_problem(self.single_action_space, actions, self.num_envs)
            if problem is not None:
                raise ActionBatchError(
                    f"{problem}; nothing was stepped. Pass one action per sub-env "
                    f"({self.num_envs}), structured like env.action_space (sample "
                    f"one with env.action_space.sample())."
                )

    def _track(self, cmds: list[int], done: list[int]) -> None:
        """After a call ran: reset sub-envs are no longer ended, stepped ones may be
        (those reset within the call are not)."""
        tracker = self.ended
        cleared = (
            [i for i in tracker.indices() if cmds[i] == _RESET] if tracker.count else ()
        )
        tracker.update(cleared, [i for i in done if cmds[i] == _STEP])
        if self._lost:
            self._lost.difference_update([i for i in self._lost if cmds[i] == _RESET])

    def _execute(self, request: Request) -> Executed:
        """Run a (validated) :class:`Request`. Backends implement this.

        ``request.commands`` is a list of ``int(Command)`` of length ``num_envs``;
        :class:`vecmode.runner.Runner` carries a request out for a slice of
        sub-envs (seeds and options as given, each reset sub-env a copy of the
        options).
        """
        raise NotImplementedError

    #: Backends with a split API (send now, wait later) implement these two:
    #: ``_execute_async(name, request)`` sends the call
    #: ``name`` (``"step"``/``"reset"``) and ``_execute_wait(name, timeout)``
    #: returns ``(executed, commands)``; the policies' ``step_async`` /
    #: ``step_wait`` / ``reset_async`` / ``reset_wait`` then work over the core.
    _execute_async: Any
    _execute_wait: Any

    # ------------------------------------------------------------ Gymnasium API
    def step(self, actions: Any) -> StepResult:
        """Step every sub-env (DISABLED mode: nothing is reset).

        Raises:
            EpisodeEndedError: a sub-env's episode ended and it was not reset.
        """
        self._open()
        return self._dispatch(Request(self._all_step, actions))[:5]  # type: ignore[return-value]

    def reset(
        self,
        *,
        seed: SeedLike = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or only those in ``options["reset_mask"]``.

        With a mask, the returned observations hold the reset observations of the
        masked sub-envs and the latest ones of the others, and the infos only the
        masked sub-envs' reset infos (as Gymnasium). Unlike Gymnasium, an all-False
        mask is a no-op rather than an error, and ``options`` is never mutated: the
        masked sub-envs receive the other options.
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
        state).

        In NEXT_STEP mode (:class:`vecmode.NextStepAutoreset`) these are the
        sub-envs that the next step resets.
        """
        mask = self.ended.mask.copy()
        if self._lost:
            mask[sorted(self._lost)] = True
        return mask

    def _seeds(self, seed: SeedLike) -> list[int | None] | None:
        """One seed (or None) per sub-env, as Python ints: an int gives
        ``seed + i`` to sub-env ``i`` (as Gymnasium); NumPy integers are accepted."""
        if seed is None:
            return None
        if is_int(seed):
            if seed < 0:  # type: ignore[operator]
                raise SeedError(seed_negative(seed))
            return [int(cast(int, seed)) + i for i in range(self.num_envs)]
        if (
            isinstance(seed, (str, bytes))
            or not isinstance(seed, Iterable)
            or getattr(seed, "ndim", None) == 0  # a 0-d array or tensor
        ):
            raise SeedError(seed_type(seed, self.num_envs))
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise SeedError(seeds_length(len(seeds), self.num_envs))
        bad = [s for s in seeds if s is not None and not is_int(s)]
        if bad:
            raise SeedError(seed_type(bad[0], self.num_envs, in_list=True))
        negative = [s for s in seeds if s is not None and s < 0]
        if negative:  # Gymnasium's seeding refuses them in every sub-env
            raise SeedError(seed_negative(negative[0], in_list=True))
        return [None if s is None else int(s) for s in seeds]


#: What a backend raises for a call it refuses before running anything (a call
#: of the split API pending or one from another thread in progress, the env
#: closed, a message that does not pickle): no sub-env's state is lost. (The
#: closed-env error also ends a call the env was closed during: closed, it has
#: no state left to keep.)
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
    raise TypeError(options_type(options))


#: ``call`` may not run these: they would bypass the core's bookkeeping.
FORBIDDEN_CALLS = frozenset(("step", "reset", "close"))


def check_call(name: str) -> None:
    """Refuse ``call("step")`` and the like, pointing to the env's own method."""
    if name in FORBIDDEN_CALLS:
        raise ValueError(forbidden_call(name))


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
        raise TypeError(indices_type(indices))
    out = []
    for i in indices:
        if not is_int(i):
            raise TypeError(indices_type(i))
        if not -num_envs <= int(i) < num_envs:
            raise IndexError(index_range(int(i), num_envs))
        out.append(int(i) % num_envs)
    return out


# ------------------------------------------------------------------ messages
def indices_type(got: Any) -> str:
    return (
        f"indices must be None (every sub-env), an int or an iterable of ints, got "
        f"{type(got).__name__} {got!r}."
    )


def index_range(index: int, num_envs: int) -> str:
    return (
        f"sub-env index {index} is out of range for {num_envs} sub-envs; pass "
        f"indices in range({num_envs}) (or -{num_envs}..-1), an int, or None for "
        f"every sub-env."
    )


def env_closed(name: str) -> str:
    return f"{name} was closed; build a new env to go on."


def forbidden_call(name: str) -> str:
    return (
        f"call({name!r}) would run {name} behind the vector env's back (its "
        f"bookkeeping of ended sub-envs would be wrong); use the env's own "
        f"{name}() instead."
    )


def seed_type(got: Any, num_envs: int, in_list: bool = False) -> str:
    where = "each seed in the list" if in_list else "seed"
    return (
        f"{where} must be an int or None, got {type(got).__name__} {got!r}; pass "
        f"seed=None, an int (sub-env i gets seed + i), or a list of {num_envs} ints "
        f"or Nones (NumPy integers are fine; int(seed) for a 0-d array or tensor)."
    )


def options_type(got: Any) -> str:
    return (
        f"options must be a dict or None, got {type(got).__name__} {got!r}; pass e.g. "
        f'options={{"reset_mask": mask}}.'
    )


def seed_negative(got: Any, in_list: bool = False) -> str:
    where = "each seed in the list" if in_list else "seed"
    return (
        f"{where} must be >= 0 (Gymnasium's seeding takes no negative seed), got "
        f"{got!r}; nothing was reset."
    )


def seeds_length(got: int, num_envs: int) -> str:
    return (
        f"seed must be None, an int, or a list of {num_envs} seeds (one per sub-env), "
        f"got a list of {got}."
    )


def commands_shape(shape: tuple[int, ...], num_envs: int) -> str:
    return (
        f"commands must be a sequence of {num_envs} vecmode.core.Command values (one per "
        f"sub-env), got shape {shape}."
    )


def unknown_command(value: Any) -> str:
    return (
        f"{value!r} is not a vecmode.core.Command; use Command.KEEP, Command.STEP, "
        f"Command.RESET or Command.STEP_THEN_RESET."
    )


def core_mode(name: str, mode: Any, make_vec_args: str) -> str:
    return (
        f"{name} runs in {CORE_MODE.value} mode only, not {mode.value}: the core "
        f"holds no autoreset policy; the policy is a wrapper. Use "
        f"vecmode.with_autoreset({name}(env_fns), {mode.value!r}) or "
        f"vecmode.make_vec(..., {make_vec_args}autoreset_mode={mode.value!r})."
    )
