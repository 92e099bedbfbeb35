"""The command runner: a slice of sub-envs through one call's commands.

Every backend runs its sub-envs with this loop (the sync core, each async worker,
the async parent's share), so a sub-env behaves and fails the same wherever it
runs. The first exception a sub-env raises (in the parent, but KeyboardInterrupt
and SystemExit) stops the slice there, reported as a :class:`Failure`.
"""

from __future__ import annotations

import contextlib
import copy
import numbers
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from types import BuiltinMethodType, MethodType, ModuleType
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_empty_array, iterate

from vecmode import errors
from vecmode.core import Command, ran_by
from vecmode.errors import SubEnvError, short, sub_env_error, text_of

__all__ = ["Failure", "Outcome", "Runner"]

_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)
_STEPS = (_STEP, _STEP_THEN_RESET)
#: The types of a reward that need no check that it is one number.
_NUMBERS = frozenset({float, int, bool, np.float64, np.float32, np.int64, np.bool_})
#: The types of a flag that need no conversion.
_BOOLS = frozenset({bool, np.bool_})
#: What a sub-env raises that goes up as it is, not as its failure: in the
#: parent, KeyboardInterrupt and SystemExit are the user's (Ctrl-C); no Ctrl-C
#: reaches a worker (or Ray actor), so there the sub-env's own code raised them.
IN_PARENT: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemExit)
IN_WORKER: tuple[type[BaseException], ...] = ()


def check_reward(reward: Any) -> None:
    """Refuse a reward that is not one real number (a scalar, a 0-d array)."""
    if isinstance(reward, numbers.Real):
        return
    try:
        found = np.asarray(reward)
    except Exception:
        found = None
    if found is None or found.ndim or found.dtype.kind not in "biuf":
        raise ValueError(reward_not_a_number_message(reward))


def reward_not_a_number_message(reward: Any) -> str:
    """What :func:`check_reward` says (the async core's tests compare with it)."""
    try:
        what = (
            f"of shape {np.shape(reward)}" if np.ndim(reward) else "that is no number"
        )
    except Exception:
        what = "that is no number"
    return (
        f"step() returned a reward {what} ({reward!r}, {type(reward).__name__}): a "
        f"reward is one number (a Python or NumPy scalar): return float(reward)"
    )


def check_flags(terminated: Any, truncated: Any) -> tuple[bool, bool]:
    """The flags as Gymnasium's sync env stores them, into a bool array (a
    one-element array as its element); a ValueError for one that is not one."""
    flags = np.zeros(2, np.bool_)
    for k, (name, flag) in enumerate(
        (("terminated", terminated), ("truncated", truncated))
    ):
        try:
            flags[k] = flag
        except Exception as exc:
            raise ValueError(
                f"step() returned a {name} flag that is not one bool: {short(flag)}; "
                f"{name} is one bool (a Python or NumPy bool): return bool({name})"
            ) from exc
    return bool(flags[0]), bool(flags[1])


def check_info(info: Any, method: str) -> None:
    """Refuse an info that is not a dict (Gymnasium batches a dict's items)."""
    if not isinstance(info, Mapping):
        raise TypeError(
            f"{method}() returned an info that is not a dict: {short(info)}; it "
            f"must return {errors.RETURNS[method]}, Gymnasium's API, its info a "
            f"dict (return {{}} for none)"
        )


# Classes, not closures: a sync core holding them deep-copies and pickles.
class _LeafCheck:
    """:func:`row_writer`'s check of one array of ``shape`` and ``dtype``."""

    __slots__ = ("dtype", "shape", "where")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, path: str) -> None:
        self.shape, self.dtype = shape, dtype
        self.where = f"observation{path}: " if path else ""

    def __call__(self, obs: Any) -> None:
        shape, dtype = self.shape, self.dtype
        if type(obs) is not np.ndarray or obs.shape != shape or obs.dtype != dtype:
            obs = np.asarray(obs)
            if obs.shape != shape:
                raise ValueError(
                    f"{self.where}an observation of shape {obs.shape} does not fit "
                    f"the batch of the observation space's shape {shape}: return "
                    f"observations of the space's shape (a wrong shape is not "
                    f"broadcast, as Gymnasium's sync env does not)"
                )
            if not np.can_cast(obs.dtype, dtype, "same_kind"):
                raise TypeError(
                    f"{self.where}an observation of dtype {obs.dtype} does not fit "
                    f"the batch of the observation space's dtype {dtype} (NumPy's "
                    f"'same_kind' casting, as Gymnasium's sync env casts): return "
                    f"observations of the space's dtype"
                )


class _PartsCheck:
    """A Dict's or Tuple's check: each part's (``checks``: key or index, check)."""

    __slots__ = ("checks", "path", "what")

    def __init__(
        self, checks: list[tuple[Any, Callable[[Any], None]]], path: str, what: str
    ) -> None:
        self.checks, self.path, self.what = checks, path, what

    def __call__(self, obs: Any) -> None:
        for key, check in self.checks:
            try:
                part = obs[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise ValueError(
                    f"an observation{self.path} of type {type(obs).__name__} has no "
                    f"{self.what} {key!r}, which the observation space has: return "
                    f"observations of the space's structure"
                ) from exc
            check(part)


class _CheckedWriter:
    """``store(i, obs)`` once ``check(obs)`` passed (``store``: a function, or
    rows: row ``i - first``)."""

    __slots__ = ("check", "first", "store")

    def __init__(self, check: Callable[[Any], None], store: Any, first: int) -> None:
        self.check, self.store, self.first = check, store, first

    def __call__(self, i: int, obs: Any) -> None:
        self.check(obs)
        if type(self.store) is np.ndarray:
            self.store[i - self.first] = obs
        else:
            self.store(i, obs)


def row_writer(rows: np.ndarray, first: int = 0) -> Callable[[int, Any], None]:
    """``write(i, obs)``: a Box observation into row ``i - first`` of ``rows``,
    checked as Gymnasium's ``concatenate`` checks it: the row's very shape, and
    a dtype that casts "same_kind" (float64 into float32, not 300 into uint8).
    """
    return _CheckedWriter(_LeafCheck(rows.shape[1:], rows.dtype, ""), rows, first)


def unreset_rows(env: gym.vector.VectorEnv) -> list[Any]:
    """Each sub-env's observation until its first reset: its row of an empty
    batch (a Box batch's zeros), so that a masked reset before the first full
    reset can batch the rows it left out, in any space."""
    empty = create_empty_array(env.single_observation_space, env.num_envs)
    try:
        rows = list(iterate(env.observation_space, empty))
    except (CustomSpaceError, ValueError):  # (a custom space's; an empty Dict's)
        rows = []
    return rows if len(rows) == env.num_envs else [None] * env.num_envs


def checked_writer(
    space: gym.Space[Any], store: Callable[[int, Any], Any]
) -> Callable[[int, Any], Any]:
    """``write(i, obs)``: ``store(i, obs)`` once ``obs`` fits a batch of ``space``
    (:func:`row_writer`'s rule for each array leaf, in Dicts and Tuples too).

    >>> from gymnasium.spaces import Box, Dict, Discrete
    >>> kept = {}
    >>> write = checked_writer(Dict(x=Box(0, 9, (2,)), n=Discrete(3)), kept.__setitem__)
    >>> write(0, {"x": np.zeros(2, np.float32), "n": 2}); sorted(kept[0])
    ['n', 'x']
    >>> write(1, {"x": np.zeros(2, np.float32), "n": 2.7})
    Traceback (most recent call last):
    ...
    TypeError: observation['n']: an observation of dtype float64 does not fit ...
    """
    check = _fit_check(space, "")
    return store if check is None else _CheckedWriter(check, store, 0)


_ARRAY_LEAVES = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


def _fit_check(space: gym.Space[Any], path: str) -> Callable[[Any], None] | None:
    """The check of ``space`` at ``path`` (None: nothing to check)."""
    if isinstance(space, _ARRAY_LEAVES):
        return _LeafCheck(
            cast(tuple[int, ...], space.shape), cast(np.dtype, space.dtype), path
        )
    if isinstance(space, gym.spaces.Dict):
        parts: Iterable[tuple[Any, gym.Space[Any]]] = space.spaces.items()
        what = "key"
    elif isinstance(space, gym.spaces.Tuple):
        parts, what = enumerate(space.spaces), "index"
    else:
        return None
    checks = []
    for key, sub in parts:
        check = _fit_check(sub, f"{path}[{key!r}]")
        if check is not None:
            checks.append((key, check))
    return _PartsCheck(checks, path, what) if checks else None


# What call / get_attr / set_attr do to each sub-env, in the sync core and in a
# worker: the label a failure is reported under, and the function.
def call_each(
    name: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
) -> tuple[str, Callable[[gym.Env], Any]]:
    """``call(name, *args, **kwargs)``: the method's result, or the attribute."""

    def call(env: gym.Env) -> Any:
        attr = env.get_wrapper_attr(name)
        return attr(*args, **(kwargs or {})) if callable(attr) else attr

    return f"call({name!r})", call


def get_attr_each(
    name: str, copied: bool = False
) -> tuple[str, Callable[[gym.Env], Any]]:
    """``get_attr(name)``; ``copied``: the value goes to another process, so a
    method bound to an object (it would come back bound to a copy; a class's or
    a module's is pickled by name) is refused."""

    def get(env: gym.Env) -> Any:
        value = env.get_wrapper_attr(name)
        method = isinstance(value, (MethodType, BuiltinMethodType))
        owner = getattr(value, "__self__", None) if method else None
        if copied and owner is not None and not isinstance(owner, (type, ModuleType)):
            raise TypeError(
                f"{name!r} is a method: get_attr would return it bound to a copy of "
                f"its object, and calling it would not change the sub-env. Call it "
                f"with envs.call({name!r}, *args)."
            )
        return value

    return f"get_attr({name!r})", get


def set_attr_each(
    name: str, values: Sequence[Any]
) -> tuple[str, Callable[[gym.Env], Any]]:
    """``set_attr(name, values)``: one value per sub-env, in order."""
    it = iter(values)
    return f"set_attr({name!r})", lambda env: env.set_wrapper_attr(name, next(it))


@dataclass
class Failure:
    """Sub-env ``index`` raised ``error`` doing ``method`` (``"step"``,
    ``"reset"``, ``"call('name')"``...); its ``traceback`` as text."""

    index: int
    method: str
    error: BaseException
    traceback: str

    @classmethod
    def caught(
        cls,
        index: int,
        method: str,
        error: BaseException,
        passes: tuple[type[BaseException], ...] = (),
    ) -> Failure:
        """The failure of an exception being handled (its traceback taken now);
        one of the classes ``passes`` is raised again instead."""
        if isinstance(error, passes):
            raise error
        return cls(index, method, error, traceback.format_exc())

    def as_error(
        self, others: Sequence[int] = (), lost: Sequence[int] = ()
    ) -> SubEnvError:
        """The :class:`~vecmode.SubEnvError` the cores raise (``others``: the other
        sub-envs that failed; ``lost``: those whose state the call lost)."""
        return sub_env_error(
            self.index,
            self.method,
            type(self.error).__name__,
            text_of(self.error, self.method),
            self.traceback,
            others,
            lost,
            cause=self.error,
        )


def build_env(index: int, env_fn: Callable[[], gym.Env]) -> gym.Env:
    """``env_fn()``, sub-env ``index``; a :class:`~vecmode.SubEnvError` if it raises
    or returns no env."""
    try:
        return checked_env(env_fn())
    except BaseException as exc:
        raise Failure.caught(index, "env_fn", exc, IN_PARENT).as_error() from exc


def checked_env(env: Any) -> gym.Env:
    """``env``, an env_fn's result, if it is an env (has ``reset`` and ``step``,
    as Gymnasium's vector envs need: a subclass of ``gymnasium.Env`` or not)."""
    if not all(callable(getattr(env, name, None)) for name in ("reset", "step")):
        raise errors.NotAnEnvError(
            f"returned {errors.describe(env)[:80]} ({type(env).__name__}), not a "
            f"gymnasium.Env: return the env it builds"
        )
    return env


def close_quietly(envs: Iterable[gym.Env]) -> None:
    """Close each env, ignoring its errors (while another error is raised)."""
    for env in envs:
        with contextlib.suppress(Exception):
            env.close()


@dataclass
class Outcome:
    """What a slice of sub-envs did in one call (indices are the vector env's).

    One reward and flag per sub-env (0.0 / False where it did not step); the
    non-empty infos (the reset's where it was reset), ``(index, info)``; the
    sub-envs whose step ended their episode; those reset within the call,
    ``(index, last observation, last info)``; the first failure, and the
    sub-envs that ran before it.
    """

    rewards: list[Any]
    terminations: list[Any]
    truncations: list[Any]
    infos: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    ended: list[int] = field(default_factory=list)
    finals: list[tuple[int, Any, dict[str, Any]]] = field(default_factory=list)
    ran: list[int] = field(default_factory=list)
    failure: Failure | None = None


def _kept(obs: Any) -> Any:
    """An episode's last observation, safe from the sub-env's reset writing into
    the buffer it returned (Gymnasium's SameStep then gives the reset's)."""
    if type(obs) is np.ndarray:
        return obs.copy()
    return copy.deepcopy(obs) if isinstance(obs, (dict, list, tuple)) else obs


def _reset(env: gym.Env, k: int, seeds: Any, options: Any) -> tuple[Any, Any]:
    """Reset ``env``, the ``k``-th of the slice: its seed, a copy of the options
    (or of its own, in a list of one per sub-env), each passed only when given (as
    SB3 does: an env's ``reset`` may take neither)."""
    seed = None if seeds is None else seeds[k]
    if type(options) is list:
        options = options[k]
    if seed is None:
        return env.reset() if options is None else env.reset(options=dict(options))
    if options is None:
        return env.reset(seed=seed)
    return env.reset(seed=seed, options=dict(options))


class Runner:
    """Runs the sub-envs ``envs`` (the vector env's ``first`` .. ``first + len - 1``).

    ``write(index, observation)`` stores each new observation (a list, shared
    memory, a list to send); or ``rows`` are the slice's rows of a Box batch. An
    observation of the row's very dtype and shape is copied in after the loop
    (every row in one copy where all ran), any other is checked first.
    ``passes``: what a sub-env raises that goes up as it is (:data:`IN_WORKER` in a
    worker).
    """

    __slots__ = ("_bytes", "_row", "envs", "first", "passes", "rows", "write")

    def __init__(
        self,
        envs: list[gym.Env],
        first: int,
        write: Callable[[int, Any], Any] | None = None,
        *,
        rows: np.ndarray | None = None,
        passes: tuple[type[BaseException], ...] = IN_PARENT,
    ) -> None:
        if rows is not None:
            write = row_writer(rows, first)
        elif write is None:
            raise TypeError("Runner takes write, or rows for a Box batch")
        self.envs = envs
        self.first = first
        self.passes = passes
        self.write: Callable[[int, Any], Any] = write
        self.rows = rows
        self._fast_path()

    def _fast_path(self) -> None:
        """The dtype (NumPy's own object, compared by identity) and shape of a row
        that :meth:`run` copies without a check, and the rows' bytes."""
        rows = self.rows
        self._row: tuple[Any, Any] = (None, None)
        self._bytes: memoryview | None = None
        if rows is not None:
            dtype = np.dtype(rows.dtype.type) if rows.dtype.isnative else rows.dtype
            self._row = (dtype, rows.shape[1:])
            if rows.flags.c_contiguous and rows.flags.writeable and rows.size:
                self._bytes = rows.data.cast("B")

    # A copy writes into its own rows, and finds its fast path again.
    def __getstate__(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in ("envs", "first", "passes", "rows", "write")
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._fast_path()

    def run(
        self,
        commands: Sequence[int],
        actions: Iterator[Any] | None = None,
        seeds: Sequence[int | None] | None = None,
        options: dict[str, Any] | list[dict[str, Any] | None] | None = None,
    ) -> Outcome:
        """Carry out ``commands[k]`` on sub-env ``first + k``.

        Args:
            commands: one ``int(Command)`` per sub-env of the slice.
            actions: an iterator over one action per sub-env, or None.
            seeds: one per sub-env of the slice, or None.
            options: for the sub-envs that reset (each gets a copy), or one
                dict (or None) per sub-env of the slice.
        """
        n = len(commands)
        out = Outcome([0.0] * n, [False] * n, [False] * n)
        fresh: list[Any] = [None] * n
        acts = repeat(None) if actions is None else actions
        whole = self._loop(out, fresh, commands, acts, seeds, options)
        if self.rows is not None:
            self._flush(fresh, whole)
        return out

    def _loop(
        self,
        out: Outcome,
        fresh: list[Any],
        commands: Sequence[int],
        actions: Iterator[Any],
        seeds: Sequence[int | None] | None,
        options: dict[str, Any] | list[dict[str, Any] | None] | None,
    ) -> bool:
        """:meth:`run`'s loop: an observation of the row's kind into ``fresh[k]``,
        any other to ``write``. True if every one went to ``fresh``."""
        rewards, terminations = out.rewards, out.terminations
        truncations, infos = out.truncations, out.infos
        ended, finals = out.ended, out.finals
        write, first, array = self.write, self.first, np.ndarray
        dtype, shape = self._row
        whole, k, method = True, 0, "step"
        try:
            for k, (cmd, env, action) in enumerate(
                zip(commands, self.envs, actions, strict=False)
            ):
                if cmd in _STEPS:
                    method = "step"
                    obs, reward, terminated, truncated, info = env.step(action)
                    if type(reward) not in _NUMBERS:
                        check_reward(reward)
                    rewards[k] = reward
                    if not (type(terminated) is type(truncated) in _BOOLS):  # (rare)
                        terminated, truncated = check_flags(terminated, truncated)
                    if terminated | truncated:  # (else both stay False)
                        terminations[k], truncations[k] = terminated, truncated
                        ended.append(first + k)
                        if cmd == _STEP_THEN_RESET:
                            check_info(info, method)  # (only where episodes end)
                            finals.append((first + k, _kept(obs), info))
                            method = "reset"
                            obs, info = _reset(env, k, seeds, options)
                elif cmd == _RESET:
                    method = "reset"
                    obs, info = _reset(env, k, seeds, options)
                else:  # KEEP
                    whole = False
                    continue
                if type(info) is not dict:
                    check_info(info, method)
                method = "writing its observation"
                if type(obs) is array and obs.dtype is dtype and obs.shape == shape:
                    fresh[k] = obs
                else:
                    whole = False
                    write(first + k, obs)
                if info:
                    infos.append((first + k, info))
        except BaseException as exc:
            out.failure = Failure.caught(first + k, method, exc, self.passes)
            out.ran = [first + j for j in ran_by(list(commands[:k]))]
            return False
        return whole

    def _flush(self, fresh: list[Any], whole: bool) -> None:
        """Copy ``fresh`` into the rows: their bytes joined where every row is new
        and C-contiguous, else row by row."""
        if whole and self._bytes is not None:
            try:
                data = b"".join(fresh)
                self._bytes[: len(data)] = data  # (the rows may go on past the slice)
                return
            except (BufferError, TypeError):  # one that is not C-contiguous
                pass
        rows = cast(np.ndarray, self.rows)
        for k, obs in enumerate(fresh):
            if obs is not None:
                rows[k] = obs

    def each(
        self,
        method: str,
        fn: Callable[[gym.Env], Any],
        positions: Sequence[int] | None = None,
    ) -> tuple[list[Any], list[Failure]]:
        """``fn(env)`` for every sub-env, or those at ``positions`` of the slice, in
        order, whatever fails (as in every core): the results, and the failures."""
        results: list[Any] = []
        failures = []
        for k in range(len(self.envs)) if positions is None else positions:
            try:
                results.append(fn(self.envs[k]))
            except BaseException as exc:
                failures.append(
                    Failure.caught(self.first + k, method, exc, self.passes)
                )
        return results, failures

    def close(self) -> list[Failure]:
        """Close every sub-env (all of them, whatever fails; a Ctrl-C in one goes
        on up once the others are closed): the failures."""
        failures: list[Failure] = []
        interrupted = None
        for k in range(len(self.envs)):
            try:
                failures += self.each("close", lambda env: env.close(), [k])[1]
            except BaseException as exc:  # (what the parent lets through)
                interrupted = interrupted or exc
        self.envs = []
        if interrupted is not None:
            raise interrupted
        return failures


def shared_sub_envs(envs: Sequence[gym.Env]) -> list[list[int]]:
    """The groups of sub-envs that are one env object (by ``unwrapped``, as SB3's
    ``DummyVecEnv`` compares them); empty when every sub-env is its own."""
    groups: dict[int, list[int]] = {}
    for i, env in enumerate(envs):
        groups.setdefault(id(getattr(env, "unwrapped", env)), []).append(i)
    return [group for group in groups.values() if len(group) > 1]
