"""The remote cores' protocol: a :class:`SliceServer` carries out the parent's
messages (tuples starting with an op, :data:`EXECUTE` ...) for a slice of sub-envs
in a worker, an actor or the parent; an answer is None or starts with a status."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, NamedTuple, NoReturn, cast

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector import utils

from vecmode import errors, runner
from vecmode.core import Command
from vecmode.frames import FrameReader, frame_sender
from vecmode.layout import SPIN_AGAIN

EXECUTE, CALL, GET_ATTR, SET_ATTR, CLOSE, EACH = range(6)
# ROWS: an OK answer to EXECUTE that the slice's observation rows follow (Ray)
OK, FAILED, CLOSED, MISMATCH, SHARED_ENV, ROWS = range(6)
#: The ``method`` of a failure to read a message the parent sent.
UNPICKLING = (
    "unpickling what the parent sent (a class or function it needs must be "
    "importable in the worker)"
)
_KEEP = int(Command.KEEP)
#: Sent instead of the actions when they are in shared memory.
SHARED = "shared"
PROTOCOL = pickle.HIGHEST_PROTOCOL

#: Each sub-env's reward and flags, in shared memory.
_FLAG = Box(0, 1, (), cast(Any, np.bool_))
STATS_SPACE = Tuple((Box(-np.inf, np.inf, (), np.float64), _FLAG, _FLAG))


def pack_rows(array: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """An array as a message carries it (faster to pickle than the array)."""
    return (array.dtype.str, array.shape, array.tobytes())


def unpack_rows(packed: tuple[str, tuple[int, ...], bytes]) -> np.ndarray:
    """The array :func:`pack_rows` packed (read-only)."""
    dtype, shape, data = packed
    return np.frombuffer(data, dtype).reshape(shape)


def create(space: Space, n: int, ctx: Any) -> Any:
    """Gymnasium's ``create_shared_memory`` (typed loosely)."""
    return utils.create_shared_memory(space, n=n, ctx=ctx)


def view(space: Space, memory: Any, n: int) -> Any:
    """Gymnasium's ``read_from_shared_memory`` (typed loosely)."""
    return utils.read_from_shared_memory(space, memory, n=n)


def viewed(space: Space) -> bool:
    """Whether :func:`view` gives live views of ``space`` (not Text, OneOf)."""
    if isinstance(space, Tuple):
        return all(viewed(sub) for sub in space.spaces)
    if isinstance(space, Dict):
        return all(viewed(sub) for sub in space.spaces.values())
    return isinstance(space, (Box, Discrete, MultiDiscrete, MultiBinary))


@dataclass(frozen=True)
class RemoteFailure:
    """A :class:`~vecmode.runner.Failure` that crosses a pipe (picklable)."""

    index: int
    method: str
    exc_type: str
    message: str
    traceback: str
    #: The pickled exception, or None if it cannot be pickled.
    original: bytes | None
    #: The pickled class (by name), for an exception that does not (un)pickle.
    original_class: bytes | None = None

    @classmethod
    def of(cls, fault: runner.Failure) -> RemoteFailure:
        return cls.caught(fault.index, fault.method, fault.error, fault.traceback)

    @classmethod
    def caught(
        cls, index: int, method: str, error: BaseException, trace: str | None = None
    ) -> RemoteFailure:
        trace = traceback.format_exc() if trace is None else trace
        pickled = _pickled(error), _pickled(type(error))
        text = errors.text_of(error, method)
        return cls(index, method, type(error).__name__, text, trace, *pickled)

    def error(
        self, others: tuple[int, ...] = (), lost: tuple[int, ...] = ()
    ) -> errors.SubEnvError:
        """The :class:`~vecmode.SubEnvError` to raise."""
        original, original_class = _unpickled(self.original), None
        if not isinstance(original, BaseException):
            original = None
            found = _unpickled(self.original_class)
            if isinstance(found, type) and issubclass(found, BaseException):
                original_class = found
        fields = (self.index, self.method, self.exc_type, self.message, self.traceback)
        return errors.sub_env_error(
            *fields, others, lost, cause=original, original_class=original_class
        )


def _pickled(value: Any) -> bytes | None:
    try:
        return pickle.dumps(value, PROTOCOL)
    except Exception:
        return None


def _unpickled(data: bytes | None) -> Any:
    """``data`` unpickled, or None where it cannot be."""
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:
        return None


class SliceSpec(NamedTuple):
    """What every slice of a remote core shares."""

    num_envs: int
    observation_space: Space
    action_space: Space
    observation_mode: Any


class SliceServer:
    """Carries out the parent's messages for a slice of sub-envs."""

    def __init__(
        self,
        first: int,
        envs: list[gym.Env],
        memory: tuple[Any, Any, Any],
        spec: SliceSpec,
        rows: np.ndarray | None = None,
        passes: tuple[type[BaseException], ...] = runner.IN_PARENT,
    ) -> None:
        """``memory``: the shared memory of the observations, rewards and flags,
        and actions (None: in the messages); ``rows``: a Box batch's (Ray);
        ``passes``: as :class:`~vecmode.runner.Runner`'s."""
        obs_memory, stats_memory, action_memory = memory
        num_envs, observation_space, action_space = spec[:3]
        self.first = first
        self.stats: Any = None
        self.action_rows: Any = None
        if stats_memory is not None:
            self.stats = view(STATS_SPACE, stats_memory, num_envs)
        if action_memory is not None:
            self.action_rows = view(action_space, action_memory, num_envs)
        #: This call's observations, sent with the answer (no shared memory).
        self._sent: list[tuple[int, Any]] | None = None
        if rows is not None:
            self.runner = runner.Runner(envs, first, rows=rows, passes=passes)
        elif obs_memory is None:
            self._sent = []
            self.runner = runner.Runner(envs, first, self._send, passes=passes)
        elif type(observation_space) is Box:
            batch = view(observation_space, obs_memory, num_envs)
            self.runner = runner.Runner(envs, first, rows=batch[first:], passes=passes)
        else:  # shared memory casts and broadcasts: checked first

            def write(i: int, obs: Any) -> None:
                utils.write_to_shared_memory(observation_space, i, obs, obs_memory)

            self.runner = runner.Runner(
                envs,
                first,
                runner.checked_writer(observation_space, write),
                passes=passes,
            )
        self.closed = False

    @property
    def stop(self) -> int:
        return self.first + len(self.runner.envs)

    def _send(self, i: int, obs: Any) -> None:
        cast(list, self._sent).append((i, obs))

    def handle(self, message: tuple[Any, ...]) -> Any:
        op = message[0]
        if op == EXECUTE:
            return self._execute(*message[1:])
        if op == CLOSE:
            failures = [RemoteFailure.of(f) for f in self.runner.close()]
            self.closed = True
            return (CLOSED, failures)
        if op == CALL:
            _, name, args, kwargs = message
            return self._each(*runner.call_each(name, args, kwargs))
        if op == EACH:
            _, label, wrapped, args, positions = message
            fn = wrapped.fn
            return self._each(label, lambda env: fn(env, *args), positions)
        if op == GET_ATTR:
            return self._each(*runner.get_attr_each(message[1], copied=True))
        _, name, values = message  # SET_ATTR
        answer = self._each(*runner.set_attr_each(name, values))
        return None if answer[0] == OK else answer

    def _each(
        self,
        method: str,
        fn: Callable[[gym.Env], Any],
        positions: list[int] | None = None,
    ) -> tuple[Any, ...]:
        results, failures = self.runner.each(method, fn, positions)
        if failures:
            return (FAILED, [RemoteFailure.of(failure) for failure in failures], ())
        # with the sub-envs they are of (named if one does not pickle)
        if positions is None:
            return (OK, results, range(self.first, self.stop))
        return (OK, results, [self.first + k for k in positions])

    def _execute(
        self,
        commands: list[int],
        actions: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> tuple[Any, ...] | None:
        first, stop = self.first, self.stop
        if type(actions) is str:  # SHARED
            mine = self.action_rows[first:stop]
        elif type(actions) is tuple:  # an array's rows, packed (pack_rows)
            mine = unpack_rows(actions)
        else:  # None, or one action per sub-env
            mine = None
        acts: Any
        if mine is not None:  # each sub-env a row of its own
            acts = iter(mine if mine.ndim == 1 else mine.copy())
        else:
            acts = None if actions is None else iter(actions)
        sent = self._sent
        if sent is not None:
            sent = self._sent = []
        out = self.runner.run(commands, acts, seeds, options)
        if out.failure is not None:
            return (FAILED, [RemoteFailure.of(out.failure)], out.ran)
        if self.stats is None:  # no shared memory: everything in the answer
            stats = (out.rewards, out.terminations, out.truncations)
            return (OK, out.ended, out.infos, out.finals, sent, stats)
        rewards, terminations, truncations = self.stats
        rewards[first:stop] = out.rewards
        terminations[first:stop] = out.terminations
        truncations[first:stop] = out.truncations
        if out.ended or out.infos or sent is not None:
            return (OK, out.ended, out.infos, out.finals, sent)
        return None


def unpicklable(answer: tuple[Any, ...], exc: Exception) -> tuple[Any, ...]:
    """The failure to send when ``answer`` cannot be pickled."""
    entries: list[tuple[str, int, Any]] = []
    if answer[0] == OK and len(answer) == 3:  # results, and whose they are
        _, results, whose = answer
        entries = [("result", i, r) for i, r in zip(whose, results, strict=True)]
    elif answer[0] in (OK, ROWS) and len(answer) >= 5:
        _, _, infos, finals, sent = answer[:5]
        entries = [("info", i, info) for i, info in infos]
        entries += [("final observation", i, obs) for i, obs, _ in finals]
        entries += [("final info", i, info) for i, _, info in finals]
        entries += [("observation", i, obs) for i, obs in sent or ()]
    for what, i, value in sorted(entries, key=lambda e: e[1]):
        try:
            pickle.dumps(value, PROTOCOL)
        except Exception as error:
            failure = RemoteFailure.caught(i, f"pickling its {what}", error)
            return (FAILED, [failure], ())
    return (FAILED, [RemoteFailure.caught(0, "pickling its answer", exc)], ())


def build_slice(
    first: int,
    env_fns: Sequence[Callable[[], gym.Env]],
    envs: list[gym.Env],
    spec: SliceSpec,
    passes: tuple[type[BaseException], ...] = runner.IN_PARENT,
) -> tuple[Any, ...] | None:
    """Build sub-envs ``first ..`` into ``envs``; the answer to the parent: None,
    or what failed or does not match ``spec`` (``passes``: as SliceServer's)."""
    for k, env_fn in enumerate(env_fns):
        try:
            envs.append(runner.checked_env(env_fn()))
        except BaseException as exc:
            failure = runner.Failure.caught(first + k, "env_fn", exc, passes)
            return (FAILED, [RemoteFailure.of(failure)], ())
    shared = runner.shared_sub_envs(envs)
    if shared:
        return (SHARED_ENV, [[first + k for k in group] for group in shared])
    space = spec.observation_space
    for k, env in enumerate(envs):
        same_obs = (
            env.observation_space == space
            if spec.observation_mode == "same"
            else is_space_dtype_shape_equiv(env.observation_space, space)
        )
        if not same_obs:
            return (MISMATCH, "observation space", first + k, env.observation_space)
        if env.action_space != spec.action_space:
            return (MISMATCH, "action space", first + k, env.action_space)
    return None


def encode(answer: Any) -> bytes:
    """An answer pickled, or its :func:`unpicklable` failure."""
    try:
        return pickle.dumps(answer, PROTOCOL)
    except Exception as exc:
        return pickle.dumps(unpicklable(answer, exc), PROTOCOL)


def serve(
    conn: Connection,
    server: SliceServer,
    spin: float = 0.0,
    bell: tuple[Doorbell, int] | None = None,
) -> None:
    """The worker's loop: one answer per message, until told to close."""
    loads = pickle.loads
    nothing = pickle.dumps(None, PROTOCOL)
    handle = server.handle
    receive, send_bytes = _doorbell(conn, spin, bell)
    while True:
        data = receive()
        try:
            message = loads(data)
        except Exception as exc:  # e.g. a class the worker cannot import (spawn)
            failure = RemoteFailure.caught(server.first, UNPICKLING, exc)
            send_bytes(encode((FAILED, [failure], ())))
            continue
        answer = handle(message)
        if answer is None:
            send_bytes(nothing)
            continue
        send_bytes(encode(answer))
        if server.closed:
            return


class Doorbell:
    """Two counters per worker in shared memory (messages sent to it, answers
    it sent) that a spinning process watches instead of polling its pipe."""

    __slots__ = ("array", "counts")

    def __init__(self, array: Any) -> None:
        #: A ``RawArray("q")`` (shareable with any start method).
        self.array = array
        self.counts = memoryview(array).cast("B").cast("q")

    @classmethod
    def create(cls, ctx: Any, num_workers: int) -> Doorbell:
        return cls(ctx.RawArray("q", 2 * num_workers))

    def __reduce__(self) -> tuple[Any, ...]:  # to a worker (spawn): the memory
        return (Doorbell, (self.array,))

    def rang(self, worker: int) -> None:
        self.counts[2 * worker] += 1

    def sent(self, worker: int) -> int:
        return self.counts[2 * worker]

    def answered(self, worker: int) -> None:
        self.counts[2 * worker + 1] += 1

    def answers(self) -> bytes:
        """Every counter's value, to compare with a later reading."""
        return self.counts.tobytes()


def _doorbell(
    conn: Connection, spin: float, bell: tuple[Doorbell, int] | None
) -> tuple[Callable[[], bytes | bytearray], Callable[[bytes], None]]:
    """How :func:`serve` receives (spinning on the doorbell first) and answers."""
    recv, send = FrameReader(conn).recv, frame_sender(conn)
    if not spin or bell is None:
        return recv, send
    doorbell, w = bell
    sent, clock = doorbell.sent, time.perf_counter
    # the CPU to whatever else is ready (the parent, another worker) first
    yield_cpu = getattr(os, "sched_yield", lambda: None)
    seen = 0  # messages received so far; the parent counts those it sent
    answered_at = clock()  # when the last answer was sent
    spinning = True  # whether the last message came within the spin

    def receive() -> bytes | bytearray:
        nonlocal seen, spinning
        if spinning and sent(w) == seen:
            end = answered_at + spin
            while sent(w) == seen and clock() < end:
                yield_cpu()
        seen += 1
        data = recv()
        # far later than the spin: the caller computes between calls
        spinning = clock() - answered_at <= SPIN_AGAIN * spin
        return data

    def send_answer(data: bytes) -> None:
        nonlocal answered_at
        send(data)
        doorbell.answered(w)  # after the send: the answer is there to read
        answered_at = clock()

    return receive, send_answer


#: Seconds between a worker's checks that its parent lives, where the OS does not
#: end it with its parent (see :func:`die_with_parent`).
ORPHAN_POLL = 0.25


def die_with_parent(main_thread: bool) -> None:
    """End this worker when the process that started it dies: at once on Linux
    (``PR_SET_PDEATHSIG``), else within :data:`ORPHAN_POLL` s (a watching thread).

    Args:
        main_thread: whether the parent started it from its main thread (Linux
            signals when the starting thread ends, not the process).
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    ppid = os.getppid()  # forkserver: the fork server's (or the parent is gone)
    if ppid == parent.pid and main_thread and _pdeathsig():
        if os.getppid() != ppid:  # the parent died before the signal was set
            os._exit(1)
        return
    watch = threading.Thread(target=_exit_when_gone, args=(parent, ppid), daemon=True)
    watch.start()


def _pdeathsig() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; whether it will."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _exit_when_gone(parent: Any, ppid: int) -> None:
    """Exit once the OS parent changes or, where the parent is not the OS parent
    (forkserver), its end of the pipe it started this process with closes."""
    own = ppid == parent.pid
    while os.getppid() == ppid and (own or parent.is_alive()):
        time.sleep(ORPHAN_POLL)
    os._exit(1)


def worker_main(
    first: int,
    env_fns: list[utils.CloudpickleWrapper],
    conn: Connection,
    inherited: list[Connection],
    memory: tuple[Any, Any, Any],
    spec: SliceSpec,
    spin: float = 0.0,
    bell: tuple[Doorbell, int] | None = None,
    main_thread: bool = False,
) -> None:
    """A worker process: build sub-envs ``first ..``, then serve; it dies with
    its parent (:func:`die_with_parent`)."""
    die_with_parent(main_thread)
    # Ctrl-C is the parent's to handle (it closes the workers)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for other in inherited:  # with fork: the parent's ends of every pipe so far
        other.close()
    envs: list[gym.Env] = []
    try:
        built = build_slice(first, env_fns, envs, spec, runner.IN_WORKER)
        conn.send(built)
        if built is not None:
            return
        server = SliceServer(first, envs, memory, spec, passes=runner.IN_WORKER)
        serve(conn, server, spin, bell)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the parent is gone: just leave
    finally:
        runner.close_quietly(envs)


# ------------------------------------------------------- the parent's side
class SliceRows(NamedTuple):
    """The observations of sub-envs ``start ..`` as rows of a Box batch."""

    start: int
    rows: np.ndarray

    def copy_into(self, batch: np.ndarray, commands: Sequence[int]) -> None:
        """Copy the rows of the sub-envs that ran (by ``commands``) into ``batch``."""
        start, rows = self.start, self.rows
        mine = commands[start : start + len(rows)]
        if _KEEP not in mine:
            batch[start : start + len(rows)] = rows
            return
        for k, command in enumerate(mine):
            if command != _KEEP:
                batch[start + k] = rows[k]


def raise_failure(answers: Sequence[Any], lost: Sequence[int] = ()) -> None:
    """Raise the SubEnvError of the lowest failed sub-env in ``answers``, if any."""
    failures: list[RemoteFailure] = sorted(
        (f for a in answers if a is not None and a[0] == FAILED for f in a[1]),
        key=lambda f: f.index,
    )
    if failures:
        raise failures[0].error(tuple(f.index for f in failures[1:]), tuple(lost))


def raise_built_problem(answer: tuple[Any, ...], core: Any) -> NoReturn:
    """Raise what a :func:`space_mismatch` answer reports about ``core``."""
    if answer[0] == SHARED_ENV:
        raise ValueError(errors.same_env_instance(answer[1]))
    what, index, got = answer[1:]
    action = what == "action space"
    expected = core.single_action_space if action else core.single_observation_space
    differs = (
        f"sub-env {index}'s {what} {got} differs from the first sub-env's {expected}."
    )
    if action:
        raise RuntimeError(f"{differs} All sub-envs need the same action space.")
    if core.observation_mode == "same":  # Gymnasium's wording first
        raise RuntimeError(
            f"{type(core).__name__}(..., observation_mode='same') however the "
            f"sub-environments observation spaces are not equivalent. {differs} "
            f"If this is intentional, use `observation_mode='different'` instead "
            f"(their shapes and dtypes must still agree)."
        )
    raise RuntimeError(f"{differs} Their shapes and dtypes must agree.")


def slice_message(
    start: int,
    stop: int,
    cmds: list[int],
    split: Any,
    seeds: list[int | None] | None,
    options: dict[str, Any] | list[dict[str, Any] | None] | None,
) -> tuple[Any, ...] | None:
    """The EXECUTE message for sub-envs ``start .. stop - 1``; None if all KEEP."""
    mine = cmds[start:stop]
    if mine.count(_KEEP) == len(mine):
        return None
    actions: Any
    if split is None or type(split) is str:
        actions = split
    elif type(split) is np.ndarray and not split.dtype.hasobject:
        actions = pack_rows(split[start:stop])
    else:
        actions = split[start:stop]
    if type(options) is list:  # one per sub-env
        options = options[start:stop]
    return (EXECUTE, mine, actions, seeds and seeds[start:stop], options)
