"""The thin core: a vector env with no autoreset policy, and its batched primitive.

A core runs in DISABLED mode. Its primitive, :meth:`VectorCore.execute`, runs one
:class:`Command` per sub-env in a single call and returns an :class:`Executed`
record; the autoreset policies are a choice of commands per step. A backend
subclasses :class:`VectorCore` and implements :meth:`VectorCore._execute` with
:class:`vecmode.runner.Runner`.
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

from vecmode import errors
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

#: Gymnasium's step tuple (its batches NumPy's, torch's or JAX's).
StepResult = tuple[Any, Any, Any, Any, dict[str, Any]]
#: What ``reset(seed=...)`` takes: an int (sub-env ``i`` gets ``seed + i``), None,
#: or one seed (or None) per sub-env; NumPy integers and arrays of them too.
SeedLike = int | np.integer | Sequence[int | np.integer | None] | np.ndarray | None


class Request(NamedTuple):
    """One call's work: an ``int(Command)`` per sub-env, the batched actions (None
    when nothing steps), a seed (or None) per sub-env or None, and the options of
    the sub-envs that reset (each gets a copy): one dict, or a dict (or None) per
    sub-env."""

    commands: list[int]
    actions: Any = None
    seeds: list[int | None] | None = None
    options: dict[str, Any] | list[dict[str, Any] | None] | None = None


class Executed(NamedTuple):
    """What one :meth:`VectorCore.execute` call did, per sub-env.

    The first five fields are Gymnasium's step tuple in DISABLED mode (reward 0 and
    flags False where a sub-env did not step; the last observation where it did not
    run); ``ended``: the sub-envs a step ended; ``finals``: ``(index, last
    observation, last info)`` of each sub-env reset within the call.
    """

    observations: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]
    ended: list[int]
    finals: list[tuple[int, Any, dict[str, Any]]]


class Command(enum.IntEnum):
    """What a sub-env does in one :meth:`VectorCore.execute` call: nothing, step,
    reset (with the call's seed and options), or step then reset within the call
    if the step ended the episode."""

    KEEP = 0
    STEP = 1
    RESET = 2
    STEP_THEN_RESET = 3


_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)
_VALID_COMMANDS = frozenset(int(c) for c in Command)
_STEPPING = frozenset((_STEP, _STEP_THEN_RESET))


def validate_reset_mask(mask: Any, num_envs: int) -> np.ndarray:
    """``options["reset_mask"]`` (an array, list or tuple of bools) checked, as a bool
    array of shape ``(num_envs,)``; ``TypeError`` or ``ValueError`` as Gymnasium."""
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
            f"if its values are 0/1, pass them as bools (mask.astype(bool))."
        )
    return mask


def env_fn_list(env_fns: Iterable[Callable[[], Any]]) -> list[Callable[[], Any]]:
    """``env_fns`` as a list (a generator, too, is taken once), refusing none."""
    found = list(env_fns)
    if not found:  # Gymnasium's sync env gives an IndexError
        raise ValueError(errors.NO_ENV_FNS)
    return found


def check_core_arguments(
    name: str, autoreset_mode: Any, observation_mode: Any, make_vec_args: str = ""
) -> None:
    """Refuse a mode other than DISABLED and a bad ``observation_mode``, as every
    core's constructor does (``make_vec_args``: those that build it, for the message)."""
    mode = as_mode(autoreset_mode)
    if mode is not CORE_MODE:
        raise errors.IncompatibleModeError(
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


def check_action_batch(space: Space, actions: Any, num_envs: int) -> None:
    """ActionBatchError unless ``actions`` are ``num_envs`` actions of ``space``."""
    problem = batch_problem(space, actions, num_envs)
    if problem is not None:
        raise errors.action_batch_error(problem, num_envs)


def batch_problem(
    space: Space, batch: Any, num_envs: int, where: str = "actions"
) -> str | None:
    """What keeps ``batch`` from being ``num_envs`` samples of ``space`` structured
    as ``batch_space(space, num_envs)`` batches them (not their values); None if
    nothing does.

    >>> from gymnasium.spaces import Dict, Discrete
    >>> batch_problem(Dict(a=Discrete(2)), {"a": [0, 1], "b": [0, 1]}, 2)
    "actions has the key 'b', which the action space Dict('a': Discrete(2)) lacks"
    """
    kind = batch_space.dispatch(type(space))
    if kind in _BATCHED_AS_ARRAY:
        return _array_batch_problem(space, batch, num_envs, where)
    if kind is _BATCHED_AS_TUPLE_OF_SPACES or kind is _BATCHED_AS_DICT:
        return _parts_problem(cast(Tuple | Dict, space), batch, num_envs, where)
    if kind is _BATCHED_AS_TUPLE_OF_SAMPLES:
        if isinstance(batch, (tuple, list)) and len(batch) == num_envs:
            return None
        return (
            f"{where} must be a tuple of {num_envs} samples of {space} (one per "
            f"sub-env), got {errors.short(batch)}"
        )
    return None  # batched by a function of its own: its structure is unknown here


def _array_batch_problem(
    space: Space, batch: Any, num_envs: int, where: str
) -> str | None:
    shape = getattr(batch, "shape", None)  # an array of any library
    kind = getattr(getattr(batch, "dtype", None), "kind", None)
    if not isinstance(shape, tuple):
        try:  # a regular nested sequence
            array = np.asarray(batch)
            shape, kind = array.shape, array.dtype.kind
        except (ValueError, TypeError):  # ragged, or not a sequence at all
            shape = None
    size = int(shape[0]) if shape else None
    text = kind in ("U", "S", "V")  # text is no action of an array space
    if size != num_envs or text:
        got = errors.short(batch) if size is None or text else f"a batch of {size}"
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


def _parts_problem(
    space: Tuple | Dict, batch: Any, num_envs: int, where: str
) -> str | None:
    """A Tuple's batch: a tuple of its subspaces' batches (never a list, which
    may be one action per sub-env); a Dict's: a dict of them, with its keys."""
    subspaces = space.spaces
    if isinstance(subspaces, tuple):
        keys: Iterable[Any] = range(len(subspaces))
        if not isinstance(batch, tuple) or len(batch) != len(subspaces):
            return (
                f"{where} must be a tuple of {len(subspaces)} batches, one per "
                f"subspace of {space}, as env.action_space.sample() returns, got "
                f"{errors.short(batch)} (a list is refused: one of actions, one per "
                f"sub-env, would step them transposed where there are as many "
                f"sub-envs as subspaces); tuple(np.array(part) for part in "
                f"zip(*{where})) batches a list of actions, tuple({where}) a list of "
                f"batches"
            )
    else:
        keys = subspaces.keys()
        if type(batch) is not dict and not isinstance(batch, Mapping):
            return f"{where} must be a dict with the keys {list(keys)}, got {errors.short(batch)}"
        if batch.keys() != keys:  # one set comparison when all is well
            missing = [key for key in keys if key not in batch]
            if missing:
                return (
                    f"{where} lacks the key {missing[0]!r} of the action space {space}"
                )
            key = next(key for key in batch if key not in keys)
            return f"{where} has the key {key!r}, which the action space {space} lacks"
    for key in keys:
        problem = batch_problem(
            subspaces[key], batch[key], num_envs, f"{where}[{key!r}]"
        )
        if problem is not None:
            return problem
    return None


def space_row(space: Space, batch: Any, i: int) -> Any:
    """Sub-env ``i``'s entry of ``batch``, a batch of samples of the single space
    ``space``, read as Gymnasium's ``iterate`` reads it.

    >>> from gymnasium.spaces import Box, Dict, Discrete, Text, Tuple
    >>> space = Dict(pos=Box(0, 9, (2,), int), tag=Tuple((Discrete(7), Text(3))))
    >>> pos, tag = np.array([[1, 2], [3, 4]]), (np.array([5, 6]), ("a", "bc"))
    >>> space_row(space, {"pos": pos, "tag": tag}, 1)
    {'pos': array([3, 4]), 'tag': (np.int64(6), 'bc')}
    """
    kind = batch_space.dispatch(type(space))
    parts: Any = getattr(space, "spaces", None)  # a Tuple's or a Dict's
    if kind is _BATCHED_AS_TUPLE_OF_SPACES:
        return tuple(space_row(sub, b, i) for sub, b in zip(parts, batch, strict=True))
    if kind is _BATCHED_AS_DICT:
        return {key: space_row(sub, batch[key], i) for key, sub in parts.items()}
    return batch[i]  # an array's row, or the i-th of a tuple of samples


#: The wrapper classes (exact classes) whose observations are never a buffer that
#: a later call writes into: vecmode's, each module adding its own.
FRESH_OBSERVATION_WRAPPERS: set[type] = set()


def reuses_buffers(envs: VectorEnv) -> bool:
    """Whether ``envs`` may hand out observation arrays that later calls overwrite:
    unless the innermost env has ``copy=True`` and every wrapper over it is one of
    :data:`FRESH_OBSERVATION_WRAPPERS`."""
    env = envs
    while isinstance(env, VectorWrapper):
        if type(env) not in FRESH_OBSERVATION_WRAPPERS:
            return True
        env = env.env
    return getattr(env, "copy", None) is not True


def copy_batch(batch: Any) -> Any:
    """A copy of a batched observation (a plain copy for arrays, else deep)."""
    return batch.copy() if type(batch) is np.ndarray else deepcopy(batch)


_Env = TypeVar("_Env", bound="ClosesOnExit")


class ClosesOnExit:
    """``with env: ...`` closes ``env`` on leaving the block, as Gymnasium's
    single envs do."""

    def __enter__(self: _Env) -> _Env:
        """The env itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the env (an exception in the block goes on up)."""
        self.close()  # type: ignore[attr-defined]


class VectorCore(ClosesOnExit, VectorEnv):
    """A vector env in DISABLED mode built on one batched primitive, :meth:`execute`.

    Subclasses implement :meth:`_execute`; this class gives Gymnasium's ``reset`` and
    ``step``, validates input, and refuses to step a sub-env whose episode ended.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        space = self.single_action_space
        #: The shape of an array batch of an array space, which needs no other check.
        self._action_batch_shape = (
            (self.num_envs, *space.shape)
            if batch_space.dispatch(type(space)) in _BATCHED_AS_ARRAY
            and space.shape is not None
            else None
        )
        #: The sub-envs whose episode a ``STEP`` ended and that were not reset
        #: since (NEXT_STEP's policy resets exactly these). Read it, don't change it.
        self.ended = EndedTracker(self.num_envs)
        #: Sub-envs whose state a failed call left unknown (reset them to go on).
        self._lost: set[int] = set()
        #: Calls that ran (TransitionCollector: none made behind its back).
        self.calls_run = 0
        self._all_step: list[int] = [_STEP] * self.num_envs
        self._all_reset: list[int] = [_RESET] * self.num_envs

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
        options: dict[str, Any] | list[dict[str, Any] | None] | None = None,
    ) -> Executed:
        """Run ``commands[i]`` on sub-env ``i``, for every sub-env, in one call.

        Args:
            commands: one :class:`Command` per sub-env.
            actions: the batched actions (those of sub-envs that don't step are
                ignored), or None when nothing steps.
            seed: for the sub-envs that reset, as in :meth:`reset`.
            options: for the sub-envs that reset, as in :meth:`reset`, or a list
                of one dict (or None: no options) per sub-env.

        Raises:
            EpisodeEndedError: a sub-env whose episode ended would be stepped.
            ValueError: bad commands, or actions that are no batch of actions.

        >>> import numpy as np, gymnasium as gym, vecmode
        >>> from vecmode.core import Command
        >>> envs = vecmode.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
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
                None if options is None else check_options(options, self.num_envs),
            )
        )

    def _commands(self, commands: Sequence[int] | np.ndarray) -> list[int]:
        """``commands`` checked, as a list of ints."""
        if type(commands) is list and len(commands) == self.num_envs:
            cmds = commands
        else:
            if isinstance(commands, np.ndarray):
                cmds, shape = commands.tolist(), commands.shape
            else:
                cmds = [int(c) for c in commands]
                shape = (len(cmds),)
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
        except errors.SubEnvError as exc:
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
        """Check, then send the call ``name`` (``"step"`` or ``"reset"``)."""
        self._validate(request.commands, request.actions)
        self._execute_async(name, request)

    def _dispatch_wait(self, name: str, timeout: float | None) -> Executed:
        """Wait for the pending call ``name``; track endings; return its record."""
        try:
            executed, cmds = self._execute_wait(name, timeout)
        except errors.SubEnvError as exc:
            self._lose(exc.lost)
            raise
        self._track(cmds, executed)
        return executed

    def close(self, **kwargs: Any) -> None:
        """Close the sub-envs and release every resource; closing twice is a no-op."""
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
        if self.closed:
            raise ClosedEnvironmentError(env_closed_message(type(self).__name__))

    def _validate(self, cmds: list[int], actions: Any) -> list[int] | None:
        """Raise before anything runs: an ended sub-env stepped, a wrong batch. The
        ended sub-envs that stay ended, or None when none had ended."""
        kept = self._check_ended(cmds) if self._lost or self.ended.count else None
        if not (  # the common case, in O(1): an array batch of an array space
            type(actions) is np.ndarray
            and actions.shape == self._action_batch_shape
            and actions.dtype.kind not in "USV"  # (text)
        ) and (actions is not None or not _STEPPING.isdisjoint(cmds)):
            check_action_batch(self.single_action_space, actions, self.num_envs)
        self.calls_run += 1
        return kept

    def _check_ended(self, cmds: list[int]) -> list[int] | None:
        """Refuse to step a sub-env whose episode ended or whose state was lost;
        the ended sub-envs that stay ended (None: none had ended)."""
        if self._lost:
            lost = [i for i in sorted(self._lost) if cmds[i] in _STEPPING]
            if lost:
                raise errors.EpisodeEndedError(lost, lost=True)
        if not self.ended.count:
            return None
        stepped, kept = [], []
        for i in self.ended.mask.nonzero()[0].tolist():  # (flatnonzero is slower)
            if cmds[i] in _STEPPING:
                stepped.append(i)
            elif cmds[i] == _KEEP:
                kept.append(i)
        if stepped:
            raise errors.EpisodeEndedError(stepped)
        return kept

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

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env; refuse if an ended sub-env was not reset."""
        if self.closed:
            raise ClosedEnvironmentError(env_closed_message(type(self).__name__))
        return self._dispatch(Request(self._all_step, actions))[:5]  # type: ignore[return-value]

    def reset(
        self,
        *,
        seed: SeedLike = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or only those in ``options["reset_mask"]`` (the others
        keep their observations, as in Gymnasium). An all-False mask is a no-op,
        and ``options`` is never mutated."""
        self._open()
        seeds = self._seeds(seed)
        cmds, rest = self._reset_commands(options)
        executed = self._dispatch(Request(cmds, None, seeds, rest))
        return executed.observations, executed.infos

    def _reset_commands(
        self, options: dict[str, Any] | None
    ) -> tuple[list[int], dict[str, Any] | None]:
        """The commands of a reset with ``options``, and the options the reset
        sub-envs get (``reset_mask`` taken out; None if nothing is left, for a
        ``reset`` with no ``options``; the caller's dict untouched)."""
        options = check_options(options)
        if options is not None and "reset_mask" in options:
            mask = validate_reset_mask(options["reset_mask"], self.num_envs)
            rest = {k: v for k, v in options.items() if k != "reset_mask"}
            return [_RESET if m else _KEEP for m in mask.tolist()], rest or None
        return self._all_reset, options

    @property
    def awaiting_reset(self) -> np.ndarray:
        """Bool mask of the sub-envs that must be reset before they are stepped (an
        episode ended, or a failed call lost their state)."""
        mask = self.ended.mask.copy()
        if self._lost:
            mask[sorted(self._lost)] = True
        return mask

    def _seeds(self, seed: SeedLike) -> list[int | None] | None:
        """One seed (or None) per sub-env, as ints (sub-env ``i`` of an int: seed + i)."""
        if seed is None:
            return None
        n = self.num_envs
        one = (  # one seed (or a wrong one), not a list of seeds
            is_int(seed)
            or not isinstance(seed, Iterable)
            or isinstance(seed, (str, bytes, set, frozenset))  # (a set has no order)
            or getattr(seed, "ndim", None) == 0  # a 0-d array or tensor
        )
        seeds: list[Any] = [seed] if one else list(cast(Iterable[Any], seed))
        if not one and (len(seeds) != n or getattr(seed, "ndim", 1) != 1):
            raise errors.SeedError(errors.seeds_to_count(seed, len(seeds), n))
        _check_seeds(seeds, "seed" if one else "each seed in the list", n)
        if one:
            return [int(seeds[0]) + i for i in range(n)]
        return [None if s is None else int(s) for s in seeds]


def _check_seeds(seeds: list[Any], where: str, num_envs: int) -> None:
    """Refuse a seed that is not an int or None, or is negative."""
    wrong = [s for s in seeds if s is not None and not is_int(s)]
    if wrong:
        raise errors.SeedError(
            f"{where} must be an int or None, got {type(wrong[0]).__name__} "
            f"{wrong[0]!r}; pass seed=None, an int (sub-env i gets seed + i), or "
            f"a list of {num_envs} ints or Nones (NumPy integers are fine; "
            f"int(seed) for a 0-d array or tensor)."
        )
    negative = [s for s in seeds if s is not None and s < 0]
    if negative:  # Gymnasium's seeding refuses them in every sub-env
        raise errors.SeedError(
            f"{where} must be >= 0 (Gymnasium's seeding takes no negative "
            f"seed), got {negative[0]!r}; nothing was reset."
        )


#: What a backend raises for a call it refuses before running anything.
_REFUSED = (AlreadyPendingCallError, ClosedEnvironmentError, errors.NotPicklableError)


def ran_by(commands: list[int]) -> list[int]:
    """The sub-envs a call ran (all but KEEP)."""
    return [i for i, c in enumerate(commands) if c != _KEEP]


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int or a NumPy integer, and not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def check_options(options: Any, num_envs: int | None = None) -> Any:
    """``options`` if it is a dict or None (or, given ``num_envs``, a list of one
    dict or None per sub-env), else a clear TypeError."""
    if options is None or isinstance(options, dict):
        return options
    if (
        type(options) is list
        and len(options) == num_envs
        and all(o is None or isinstance(o, dict) for o in options)
    ):
        return options
    each = f", or a list of {num_envs} dicts or Nones" if num_envs else ""
    raise TypeError(
        f"options must be a dict or None{each}, got {type(options).__name__} "
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
    order given: None means every sub-env, an int that one; negative indices count
    from the end, as in a list.

    >>> check_indices(None, 3), check_indices(-1, 3), check_indices((2, 0), 3)
    ([0, 1, 2], [2], [2, 0])
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
