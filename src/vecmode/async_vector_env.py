"""The multi-process core: sub-envs in worker processes, one round trip per call.

Each worker process holds a contiguous slice of the sub-envs. A call to
:meth:`~vecmode.VectorCore.execute` (so every ``step`` and ``reset``, whatever the
autoreset policy on top) sends each worker that has work one message with its
slice's commands, actions, seeds and options; the worker runs its sub-envs one
after the other exactly as :class:`vecmode.SyncVectorEnv` does, writes
observations, rewards and flags to shared memory, and answers with one message
holding only its non-empty infos and the indices of the sub-envs whose episode
ended. The parent merges the infos in sub-env order with Gymnasium's
``_add_info``, so the info dict is exactly the sync env's.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import select
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn, cast

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    CustomSpaceError,
    NoAsyncCallError,
)
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import (
    CloudpickleWrapper,
    batch_differing_spaces,
    batch_space,
    clear_mpi_env_vars,
    concatenate,
    create_empty_array,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)

from vecmode import errors
from vecmode.core import (
    Command,
    StepResult,
    VectorCore,
    check_core_arguments,
    copy_batch,
)
from vecmode.errors import (
    SharedMemorySpaceError,
    SubEnvError,
    WorkerError,
    WorkerTimeoutError,
)
from vecmode.modes import ModeLike

__all__ = ["AsyncVectorEnv", "default_num_workers"]

_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)

# Messages to a worker: a tuple whose first item is one of these.
_EXECUTE, _CALL, _GET_ATTR, _SET_ATTR, _CLOSE = range(5)
# A worker's answer: None (done, nothing to report) or a tuple starting with one of
# these.
_OK, _FAILED, _CLOSED, _MISMATCH = range(4)

#: Where a worker writes each sub-env's reward and flags (gymnasium's shared memory).
_STATS_SPACE = Tuple(
    (
        Box(-np.inf, np.inf, (), np.float64),
        Box(0, 1, (), cast(Any, np.bool_)),
        Box(0, 1, (), cast(Any, np.bool_)),
    )
)
_ARRAY_ACTIONS = (Box, MultiDiscrete, MultiBinary)
#: ``call`` may not run these: they would bypass the core's bookkeeping.
_FORBIDDEN_CALLS = frozenset(("step", "reset", "close"))
#: Seconds between checks that the workers being waited for are alive, beyond what
#: their pipes and sentinels say.
_LIVENESS = 0.5
_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: Seconds a worker spins on its pipe before it blocks, where it spins at all.
_SPIN = 0.0003
#: Sent instead of the actions when they are in shared memory.
_SHARED = "shared"


def _create(space: Space, n: int, ctx: Any) -> Any:
    """Gymnasium's ``create_shared_memory`` (typed loosely)."""
    return create_shared_memory(space, n=n, ctx=ctx)


def _view(space: Space, memory: Any, n: int) -> Any:
    """Gymnasium's ``read_from_shared_memory``: numpy views of the memory."""
    return read_from_shared_memory(space, memory, n=n)


def _viewed(space: Space) -> bool:
    """Whether Gymnasium's ``read_from_shared_memory`` gives live NumPy views of
    ``space`` (False for Text and OneOf, which it decodes into new objects)."""
    if isinstance(space, Tuple):
        return all(_viewed(sub) for sub in space.spaces)
    if isinstance(space, Dict):
        return all(_viewed(sub) for sub in space.spaces.values())
    return isinstance(space, (Box, Discrete, MultiDiscrete, MultiBinary))


def usable_cpus() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_num_workers(num_envs: int) -> int:
    """The default ``num_workers``: one per CPU, at most one per sub-env."""
    return max(1, min(num_envs, usable_cpus()))


def default_layout(
    num_envs: int, num_workers: int | None, in_parent: int | None
) -> tuple[int, int]:
    """``(num_workers, in_parent)`` for the arguments given (None: not given).

    By default every sub-env runs in a worker (one worker per CPU, at most one per
    sub-env): a sub-env that hangs, crashes or is killed takes down a worker, not
    the training process, and ``timeout`` covers every sub-env. Given
    ``in_parent``, the parent steps that many sub-envs itself (the opt-in faster
    layout), with ``num_workers`` (default: one per CPU but one) for the rest.
    """
    if not in_parent:
        workers = default_num_workers(num_envs) if num_workers is None else num_workers
        return min(num_envs, workers), 0
    remote = num_envs - in_parent
    if num_workers is None:
        num_workers = max(1, min(remote, usable_cpus() - 1))
    return min(remote, num_workers), in_parent


def _slices(num_envs: int, num_workers: int) -> list[tuple[int, int]]:
    """Contiguous slices of sub-envs, sizes differing by at most one."""
    size, extra = divmod(num_envs, num_workers)
    out, start = [], 0
    for w in range(num_workers):
        stop = start + size + (1 if w < extra else 0)
        out.append((start, stop))
        start = stop
    return out


# ---------------------------------------------------------------------- worker
def _failure(index: int, method: str, exc: BaseException) -> tuple[Any, ...]:
    try:
        original: bytes | None = pickle.dumps(exc)
    except Exception:
        original = None
    return (
        _FAILED,
        index,
        method,
        type(exc).__name__,
        str(exc),
        traceback.format_exc(),
        original,
    )


def _unpicklable(
    infos: list[tuple[int, Any]], sent_obs: list[tuple[int, Any]] | None, exc: Exception
) -> tuple[Any, ...]:
    """The failure to report when an answer cannot be pickled: whose info or
    observation it is."""
    for what, entries in (("info", infos), ("observation", sent_obs or [])):
        for i, value in entries:
            try:
                pickle.dumps(value, _PROTOCOL)
            except Exception as error:
                return _failure(i, f"pickling its {what}", error)
    return _failure(infos[0][0] if infos else 0, "pickling its answer", exc)


def _mismatch(
    first: int,
    envs: list[gym.Env],
    observation_space: Space,
    action_space: Space,
    observation_mode: Any,
) -> tuple[Any, ...] | None:
    """The first sub-env whose spaces don't fit the vector env's, as an answer."""
    for k, env in enumerate(envs):
        same_obs = (
            env.observation_space == observation_space
            if observation_mode == "same"
            else is_space_dtype_shape_equiv(env.observation_space, observation_space)
        )
        if not same_obs:
            return (_MISMATCH, "observation space", first + k, env.observation_space)
        if env.action_space != action_space:
            return (_MISMATCH, "action space", first + k, env.action_space)
    return None


def _worker(
    first: int,
    env_fns: list[CloudpickleWrapper],
    conn: Connection,
    inherited: list[Connection],
    obs_memory: Any,
    stats_memory: Any,
    action_memory: Any,
    num_envs: int,
    observation_space: Space,
    action_space: Space,
    observation_mode: Any,
    spin: float = 0.0,
) -> None:
    """Run sub-envs ``first .. first + len(env_fns) - 1`` until told to close."""
    # Ctrl-C is the parent's to handle (it closes the workers); a worker that died
    # of it would lose its sub-envs in the middle of a call.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for other in inherited:  # with fork: the parent's ends of every pipe so far
        other.close()
    envs: list[gym.Env] = []
    try:
        for k, env_fn in enumerate(env_fns):
            try:
                envs.append(env_fn())
            except BaseException as exc:
                conn.send(_failure(first + k, "env_fn", exc))
                return
        mismatch = _mismatch(
            first, envs, observation_space, action_space, observation_mode
        )
        if mismatch is not None:
            conn.send(mismatch)
            return
        conn.send(None)
        _serve(
            first,
            envs,
            conn,
            (obs_memory, stats_memory, action_memory),
            num_envs,
            observation_space,
            action_space,
            spin,
        )
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the parent is gone: just leave
    finally:
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()


class _Server:
    """Runs a slice of sub-envs: one answer per message (in a worker, or in the
    parent for the slice it steps itself)."""

    def __init__(
        self,
        first: int,
        envs: list[gym.Env],
        memory: tuple[Any, Any, Any],
        num_envs: int,
        observation_space: Space,
        action_space: Space,
    ) -> None:
        obs_memory, stats_memory, action_memory = memory
        self.first = first
        self.stop = first + len(envs)
        self.envs = envs
        self.obs_memory = obs_memory
        self.observation_space = observation_space
        self.stats = _view(_STATS_SPACE, stats_memory, num_envs)
        self.shared = obs_memory is not None
        self.rows = (
            _view(observation_space, obs_memory, num_envs)
            if self.shared and type(observation_space) is Box
            else None
        )
        self.action_rows = (
            None
            if action_memory is None
            else _view(action_space, action_memory, num_envs)
        )
        self.closed = False

    def handle(self, message: tuple[Any, ...]) -> Any:
        """Carry out one message; return the answer."""
        envs, first, stop = self.envs, self.first, self.stop
        rewards, terminations, truncations = self.stats
        rows, shared, action_rows = self.rows, self.shared, self.action_rows
        obs_memory, observation_space = self.obs_memory, self.observation_space
        op = message[0]
        if op == _EXECUTE:
            _, cmds, actions, seeds, options = message
            done: list[int] = []
            infos: list[tuple[int, dict[str, Any]]] = []
            sent_obs: list[tuple[int, Any]] | None = None if shared else []
            if type(actions) is str:  # _SHARED: the parent wrote them to shared memory
                mine = action_rows[first:stop]  # type: ignore[index]
                acts: Any = iter(mine if mine.ndim == 1 else mine.copy())
            else:
                acts = iter(actions) if actions is not None else None
            i = first
            method = "step"
            try:
                for cmd, env in zip(cmds, envs, strict=True):
                    action = next(acts) if acts is not None else None
                    if cmd == _KEEP:
                        rewards[i] = 0.0
                        terminations[i] = truncations[i] = False
                        i += 1
                        continue
                    reset = cmd == _RESET
                    if reset:
                        rewards[i] = 0.0
                        terminations[i] = truncations[i] = False
                    else:  # STEP or STEP_THEN_RESET
                        method = "step"
                        obs, reward, terminated, truncated, info = env.step(action)
                        rewards[i] = reward
                        terminations[i] = terminated
                        truncations[i] = truncated
                        if terminated or truncated:
                            done.append(i)
                            if cmd == _STEP_THEN_RESET:
                                infos.append(
                                    (i, {"final_obs": obs, "final_info": info})
                                )
                                reset = True
                    if reset:
                        method = "reset"
                        obs, info = env.reset(
                            seed=None if seeds is None else seeds[i - first],
                            options=None if options is None else dict(options),
                        )
                    if rows is not None:
                        rows[i] = obs
                    elif sent_obs is None:
                        write_to_shared_memory(observation_space, i, obs, obs_memory)
                    else:
                        sent_obs.append((i, obs))
                    if info:
                        infos.append((i, info))
                    i += 1
            except BaseException as exc:
                return _failure(i, method, exc)
            return (_OK, done, infos, sent_obs) if done or infos or not shared else None
        elif op == _CALL:
            _, name, args, kwargs = message
            results = []
            i = first
            try:
                for env in envs:
                    attr = env.get_wrapper_attr(name)
                    results.append(attr(*args, **kwargs) if callable(attr) else attr)
                    i += 1
            except BaseException as exc:
                return _failure(i, f"call({name!r})", exc)
            return (_OK, results)
        elif op == _GET_ATTR:
            _, name = message
            results = []
            i = first
            try:
                for env in envs:
                    results.append(env.get_wrapper_attr(name))
                    i += 1
            except BaseException as exc:
                return _failure(i, f"get_attr({name!r})", exc)
            return (_OK, results)
        elif op == _SET_ATTR:
            _, name, values = message
            i = first
            try:
                for env, value in zip(envs, values, strict=True):
                    env.set_wrapper_attr(name, value)
                    i += 1
            except BaseException as exc:
                return _failure(i, f"set_attr({name!r})", exc)
            return None
        else:  # _CLOSE
            failures = []
            for k, env in enumerate(envs):
                try:
                    env.close()
                except BaseException as exc:
                    failures.append(_failure(first + k, "close", exc))
            envs.clear()
            self.closed = True
            return (_CLOSED, failures)


def _serve(
    first: int,
    envs: list[gym.Env],
    conn: Connection,
    memory: tuple[Any, Any, Any],
    num_envs: int,
    observation_space: Space,
    action_space: Space,
    spin: float = 0.0,
) -> None:
    """The worker's loop: one answer per message (spinning ``spin`` seconds on
    the pipe before blocking on it)."""
    server = _Server(first, envs, memory, num_envs, observation_space, action_space)
    # Plain pickle through send_bytes/recv_bytes: multiprocessing's send/recv build
    # a ForkingPickler per message, which costs more than these small messages.
    recv_bytes, send_bytes, loads, dumps = (
        conn.recv_bytes,
        conn.send_bytes,
        pickle.loads,
        pickle.dumps,
    )
    nothing = dumps(None, _PROTOCOL)
    handle = server.handle
    poll, clock = conn.poll, time.perf_counter
    while True:
        if spin and not poll():
            end = clock() + spin
            while not poll() and clock() < end:
                pass
        message = loads(recv_bytes())
        answer = handle(message)
        if answer is None:
            send_bytes(nothing)
            continue
        try:
            send_bytes(dumps(answer, _PROTOCOL))
        except Exception as exc:  # something in it cannot be pickled
            failure = (
                _unpicklable(answer[2], answer[3], exc)
                if message[0] == _EXECUTE
                else _failure(server.first, "pickling its answer", exc)
            )
            send_bytes(dumps(failure, _PROTOCOL))
        if server.closed:
            return


# ---------------------------------------------------------------------- parent
class _Worker:
    """The parent's handle on one worker process."""

    __slots__ = ("conn", "index", "process", "sentinel", "start", "stop")

    def __init__(
        self,
        index: int,
        start: int,
        stop: int,
        process: Any,
        conn: Connection,
    ) -> None:
        self.index = index
        self.start = start
        self.stop = stop
        self.process = process
        self.conn = conn
        self.sentinel: int = process.sentinel

    @property
    def indices(self) -> range:
        return range(self.start, self.stop)


class AsyncVectorEnv(VectorCore):
    """A vecmode core whose sub-envs run in worker processes (DISABLED mode).

    Behaves exactly like :class:`vecmode.SyncVectorEnv` (the same observations,
    rewards, flags and info dicts for the same calls) and offers the public surface
    of :class:`gymnasium.vector.AsyncVectorEnv`: ``step_async``/``step_wait``,
    ``reset_async``/``reset_wait``, ``call``, ``call_async``/``call_wait``,
    ``get_attr``, ``set_attr``, ``render``, ``close(terminate=...)``, and use as a
    context manager. Give it an autoreset policy with :func:`vecmode.with_autoreset`
    or build it with ``vecmode.make_vec(..., vectorization_mode="async")``.

    Unlike Gymnasium's, it runs several sub-envs per worker process
    (``num_workers``, by default one per CPU), and every call, whatever each
    sub-env does in it (step, reset, or step then reset), is ONE message to each
    worker and one answer back. Observations, rewards and flags come back through
    shared memory; only non-empty infos are pickled. By default every sub-env
    runs in a worker, isolated from the training process; ``in_parent=k`` opts
    into a faster layout where the parent steps the last ``k`` sub-envs itself
    while the workers step theirs (giving up crash isolation and the timeout for
    those ``k``).

    Faults:

    * a sub-env that raises in ``step``/``reset`` is reported as
      :class:`vecmode.SubEnvError` naming it, with the worker's traceback; every
      sub-env then awaits a reset (``awaiting_reset`` is all True) and the env is
      usable again once reset;
    * a worker that dies, or a call that takes longer than ``timeout`` seconds, is
      a :class:`vecmode.WorkerError` (:class:`vecmode.WorkerTimeoutError`); the env
      cannot be used after it, but ``close()`` works;
    * an ``env_fn`` that fails is reported at construction as a
      :class:`vecmode.SubEnvError` naming the sub-env, and no process is left;
    * ``close()`` is idempotent and leaves no process behind.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.AsyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 2,
    ...     num_workers=1, context="fork")
    >>> envs.metadata["autoreset_mode"]
    <AutoresetMode.DISABLED: 'Disabled'>
    >>> _ = envs.reset(seed=0)
    >>> _, rewards, _, truncations, _ = envs.step(np.array([1, 1]))
    >>> rewards, truncations
    (array([1., 1.]), array([ True,  True]))
    >>> envs.step(np.array([1, 1]))
    Traceback (most recent call last):
    ...
    vecmode.errors.EpisodeEndedError: sub-env(s) 0, 1 ended their episode ...
    >>> obs, infos = envs.reset(options={"reset_mask": truncations})
    >>> envs.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        num_workers: int | None = None,
        in_parent: int | None = None,
        shared_memory: bool = True,
        copy: bool = True,
        context: str | None = None,
        daemon: bool = True,
        observation_mode: str | tuple[Space, Space] = "same",
        timeout: float | None = None,
        autoreset_mode: ModeLike = AutoresetMode.DISABLED,
    ) -> None:
        """Start the worker processes and build the sub-envs in them.

        Args:
            env_fns: one function per sub-env that creates it. With the ``spawn``
                and ``forkserver`` start methods they must be picklable (by
                cloudpickle: lambdas are fine, but the env classes they use must be
                importable in the worker).
            num_workers: the number of worker processes; each runs a contiguous
                slice of the sub-envs. Default: one per CPU this process may use
                (one per CPU but one with ``in_parent``), at most one per sub-env.
            in_parent: opt-in: how many sub-envs (the last ones) the parent
                process steps itself while the workers step theirs, so that the
                parent's CPU does not idle waiting for them; faster for cheap
                sub-envs, but those sub-envs are not isolated: a crash or
                ``os._exit`` in one ends the training process, and ``timeout``
                cannot interrupt them. Default 0: every sub-env in a worker.
                When the parent steps sub-envs and every process has a CPU of its
                own, the workers spin for 0.3 ms on their pipe before blocking,
                which halves a round trip on a virtual machine (at the cost of
                that much CPU time per call).
            shared_memory: observations travel through shared memory (else they
                are pickled through the pipes; needed for spaces that shared memory
                cannot hold). Rewards and flags always use shared memory.
            copy: return a copy of the observations from ``reset`` and ``step``
                (otherwise the same buffer, overwritten by the next call).
            context: the ``multiprocessing`` start method (``"fork"``,
                ``"spawn"``, ``"forkserver"``); None: the platform's default.
            daemon: make the workers daemonic (they die with the parent; a
                daemonic process cannot start children of its own).
            observation_mode: ``"same"``, ``"different"`` or a tuple
                ``(batched_space, single_space)``, as Gymnasium's.
            timeout: seconds any call may take before it fails with
                :class:`vecmode.WorkerTimeoutError`; None: no limit (a worker that
                dies is still reported at once).
            autoreset_mode: only ``DISABLED`` (the default): a core has no
                autoreset policy. Given another mode, the error says how to get it.

        Raises:
            SubEnvError: an ``env_fn`` raised (naming the sub-env).
            RuntimeError: a sub-env's spaces differ from the first sub-env's.
            ValueError: bad arguments.
        """
        check_core_arguments(
            type(self).__name__,
            autoreset_mode,
            observation_mode,
            "vectorization_mode='async', ",
        )
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError(errors.no_env_fns())
        if num_workers is not None and (
            isinstance(num_workers, bool)
            or not isinstance(num_workers, (int, np.integer))
            or num_workers < 1
        ):
            raise ValueError(errors.num_workers(num_workers))
        if in_parent is not None and (
            isinstance(in_parent, bool)
            or not isinstance(in_parent, (int, np.integer))
            or not 0 <= in_parent < len(env_fns)
        ):
            raise ValueError(errors.in_parent(in_parent, len(env_fns)))
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be None or > 0 seconds, got {timeout!r}.")

        self.env_fns = env_fns
        self.num_envs = len(env_fns)
        self.shared_memory = shared_memory
        self.copy = copy
        self.context = context
        self.daemon = daemon
        self.observation_mode = observation_mode
        self.timeout = timeout
        self.autoreset_mode = AutoresetMode.DISABLED
        self.num_workers, self.in_parent = default_layout(
            self.num_envs,
            None if num_workers is None else int(num_workers),
            None if in_parent is None else int(in_parent),
        )
        # Workers wait for their next message by spinning briefly before they
        # block, when the parent steps sub-envs too and every process has a CPU:
        # waking a blocked process costs 40-65 us on a virtual machine, more than
        # a cheap sub-env's step (see docs/performance.md).
        self._spin = (
            _SPIN if self.in_parent and self.num_workers + 1 <= usable_cpus() else 0.0
        )
        self._workers: list[_Worker] = []
        #: The sub-envs the parent steps itself (the last ``in_parent``), and the
        #: message it has still to carry out for them.
        self._local: _Server | None = None
        self._local_message: tuple[Any, ...] | None = None
        # One poller over every pipe and process sentinel, built once: waiting on
        # it costs one system call (multiprocessing.connection.wait builds a
        # selector per call, which doubles a round trip's time).
        self._poller: Any = select.poll() if hasattr(select, "poll") else None
        self._by_fd: dict[int, tuple[_Worker, bool]] = {}
        self._broken: str | None = None
        #: The observations' shared memory, where they must be read after a call.
        self._obs_memory: Any = None
        self._pending: tuple[str, Any] | None = None
        self.closed = False

        dummy = self._build_in_parent(0)
        try:
            self.metadata = {**dummy.metadata, "autoreset_mode": AutoresetMode.DISABLED}
            self.render_mode = dummy.render_mode
            self.single_action_space = dummy.action_space
            self.action_space = batch_space(self.single_action_space, self.num_envs)
            if isinstance(observation_mode, tuple):
                self.observation_space, self.single_observation_space = observation_mode
            elif observation_mode == "same":
                self.single_observation_space = dummy.observation_space
                self.observation_space = batch_space(
                    self.single_observation_space, self.num_envs
                )
            else:  # "different": as Gymnasium, build each sub-env to read its space
                env_spaces = [dummy.observation_space]
                for i in range(1, self.num_envs):
                    env = self._build_in_parent(i)
                    env_spaces.append(env.observation_space)
                    env.close()
                self.single_observation_space = env_spaces[0]
                self.observation_space = batch_differing_spaces(env_spaces)
        finally:
            dummy.close()
        super().__init__()

        ctx = multiprocessing.get_context(context)
        if shared_memory:
            try:
                obs_memory = _create(self.single_observation_space, self.num_envs, ctx)
                self._observations = _view(
                    self.single_observation_space, obs_memory, self.num_envs
                )
                # Text and OneOf are decoded from the memory when read, not
                # viewed: read them again after every call (Gymnasium 1.4's
                # AsyncVectorEnv does not, and returns its first, blank reading)
                self._obs_memory = (
                    None if _viewed(self.single_observation_space) else obs_memory
                )
            except (CustomSpaceError, TypeError) as exc:
                raise SharedMemorySpaceError(
                    f"the observation space {self.single_observation_space} cannot be "
                    f"put in shared memory ({exc}); pass shared_memory=False "
                    f"(observations then travel by pipe)."
                ) from exc
        else:
            obs_memory = None
            self._observations = create_empty_array(
                self.single_observation_space, n=self.num_envs, fn=np.zeros
            )
        self._env_obs: list[Any] = [None] * self.num_envs
        self._rows: np.ndarray | None = (
            self._observations
            if not shared_memory
            and type(self.observation_space) is Box
            and self._observations.shape[0] == self.num_envs
            else None
        )
        stats_memory = _create(_STATS_SPACE, self.num_envs, ctx)
        self._rewards, self._terminations, self._truncations = _view(
            _STATS_SPACE, stats_memory, self.num_envs
        )
        self._array_actions = type(self.action_space) in _ARRAY_ACTIONS
        # Array actions of the batch's own dtype go through shared memory too.
        action_memory = None
        self._action_rows: np.ndarray | None = None
        if self._array_actions:
            action_memory = _create(self.single_action_space, self.num_envs, ctx)
            self._action_rows = _view(
                self.single_action_space, action_memory, self.num_envs
            )
        self._start_workers(ctx, obs_memory, stats_memory, action_memory)

    # ------------------------------------------------------------ construction
    def _build_in_parent(self, index: int) -> gym.Env:
        """Build sub-env ``index`` here, to read its spaces (as Gymnasium does)."""
        try:
            return self.env_fns[index]()
        except Exception as exc:
            raise SubEnvError(
                index, "env_fn", type(exc).__name__, str(exc), traceback.format_exc()
            ) from exc

    def _start_workers(
        self, ctx: Any, obs_memory: Any, stats_memory: Any, action_memory: Any
    ) -> None:
        fork = ctx.get_start_method() == "fork"
        parent_ends: list[Connection] = []
        try:
            with clear_mpi_env_vars():
                for w, (start, stop) in enumerate(
                    _slices(self.num_envs - self.in_parent, self.num_workers)
                ):
                    parent_end, child_end = ctx.Pipe()
                    parent_ends.append(parent_end)
                    process = ctx.Process(
                        target=_worker,
                        name=f"Worker<{type(self).__name__}>-{w}",
                        args=(
                            start,
                            [CloudpickleWrapper(fn) for fn in self.env_fns[start:stop]],
                            child_end,
                            list(parent_ends) if fork else [],
                            obs_memory,
                            stats_memory,
                            action_memory,
                            self.num_envs,
                            self.single_observation_space,
                            self.single_action_space,
                            self.observation_mode,
                            self._spin,
                        ),
                        daemon=self.daemon,
                    )
                    try:
                        process.start()
                    except Exception as exc:
                        if fork:
                            raise
                        raise TypeError(
                            errors.unpicklable_env_fns(
                                start, stop, ctx.get_start_method(), exc
                            )
                        ) from exc
                    finally:
                        child_end.close()
                    worker = _Worker(w, start, stop, process, parent_end)
                    self._workers.append(worker)
                    self._by_fd[parent_end.fileno()] = (worker, True)
                    self._by_fd[worker.sentinel] = (worker, False)
                    if self._poller is not None:
                        self._poller.register(parent_end.fileno(), select.POLLIN)
                        self._poller.register(worker.sentinel, select.POLLIN)
            answers = self._collect(self._workers, self.timeout, "construction")
            failures = [a for a in answers if a is not None and a[0] == _FAILED]
            if failures:
                self._raise_failure(failures)
            if self.in_parent:
                answers.append(
                    self._start_local(obs_memory, stats_memory, action_memory)
                )
            for answer in answers:
                if answer is None:
                    continue
                _, what, index, got = answer
                expected = (
                    self.single_action_space
                    if what == "action space"
                    else self.single_observation_space
                )
                differs = (
                    f"sub-env {index}'s {what} {got} differs from the first "
                    f"sub-env's {expected}."
                )
                if what == "action space":
                    message = f"{differs} All sub-envs need the same action space."
                elif self.observation_mode == "same":
                    # Gymnasium's wording around ours (code and tests match it)
                    message = (
                        f"{type(self).__name__}(..., observation_mode='same') "
                        f"however the sub-environments observation spaces are not "
                        f"equivalent. {differs} If this is intentional, use "
                        f"`observation_mode='different'` instead (their shapes and "
                        f"dtypes must still agree)."
                    )
                else:
                    message = f"{differs} Their shapes and dtypes must agree."
                raise RuntimeError(message)
        except BaseException as exc:
            started = [w.conn for w in self._workers]
            for end in parent_ends:
                if end not in started:
                    end.close()
            # Workers that built their sub-envs close them; anything else (a dead
            # or stuck worker, an interrupt) terminates them all.
            self._close_local()
            graceful = isinstance(exc, (SubEnvError, RuntimeError)) and not isinstance(
                exc, WorkerError
            )
            self._shutdown(terminate=not graceful, timeout=10.0)
            self.closed = True
            raise

    def _start_local(
        self, obs_memory: Any, stats_memory: Any, action_memory: Any
    ) -> tuple[Any, ...] | None:
        """Build the sub-envs the parent steps itself; a space mismatch, if any."""
        first = self.num_envs - self.in_parent
        envs: list[gym.Env] = []
        self._local = _Server(
            first,
            envs,
            (obs_memory, stats_memory, action_memory),
            self.num_envs,
            self.single_observation_space,
            self.single_action_space,
        )
        for i in range(first, self.num_envs):
            envs.append(self._build_in_parent(i))
        self._local.stop = self.num_envs
        return _mismatch(
            first,
            envs,
            self.single_observation_space,
            self.single_action_space,
            self.observation_mode,
        )

    def _close_local(self) -> list[tuple[Any, ...]]:
        """Close the sub-envs the parent steps; their close() failures."""
        local, self._local = self._local, None
        self._local_message = None
        if local is None or local.closed:
            return []
        return list(local.handle((_CLOSE,))[1])

    def _run_local(self) -> Any:
        """Carry out the message pending for the parent's own sub-envs."""
        message, self._local_message = self._local_message, None
        if message is None or self._local is None:
            return None
        return self._local.handle(message)

    # ------------------------------------------------------------ round trips
    def _usable(self, what: str) -> None:
        if self.closed:
            raise ClosedEnvironmentError(errors.env_closed(type(self).__name__))
        if self._broken is not None:
            raise WorkerError(errors.env_unusable(self._broken))
        if self._pending is not None:
            raise AlreadyPendingCallError(
                errors.already_pending(what, self._pending[0]), self._pending[0]
            )

    def _send_execute(
        self,
        cmds: list[int],
        actions: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> list[_Worker]:
        """Send each worker with work its slice of the call; return those workers."""
        rows = self._action_rows
        if actions is None:
            split: Any = None
        elif (
            rows is not None
            and type(actions) is np.ndarray
            and actions.dtype == rows.dtype
            and actions.shape == rows.shape
        ):
            rows[...] = actions
            split = _SHARED
        elif self._array_actions and type(actions) is np.ndarray:
            split = actions
        else:
            split = list(iterate(self.action_space, actions))
        busy = []
        for worker in self._workers:
            start, stop = worker.start, worker.stop
            mine = cmds[start:stop]
            if _KEEP in mine and mine.count(_KEEP) == len(mine):
                continue  # nothing to do there; its results are filled in below
            self._send(
                worker,
                (
                    _EXECUTE,
                    mine,
                    split if split is None or split is _SHARED else split[start:stop],
                    None if seeds is None else seeds[start:stop],
                    options,
                ),
                "a step or reset",
            )
            busy.append(worker)
        if self._local is not None:
            start, stop = self._local.first, self.num_envs
            mine = cmds[start:stop]
            if mine.count(_KEEP) < len(mine):
                self._local_message = (
                    _EXECUTE,
                    mine,
                    split if split is None or split is _SHARED else split[start:stop],
                    None if seeds is None else seeds[start:stop],
                    options,
                )
        return busy

    def _collect(
        self, workers: Sequence[_Worker], timeout: float | None, during: str
    ) -> list[Any]:
        """One answer from each of ``workers`` (in their order), or a WorkerError.

        Waits on the pipes and on the process sentinels together, so a worker that
        dies is reported at once whatever the timeout.
        """
        answers: list[Any] = [None] * len(workers)
        if not workers:
            return answers
        waiting = {worker.index: n for n, worker in enumerate(workers)}
        deadline = None if timeout is None else time.monotonic() + timeout
        by_fd = self._by_fd
        try:
            while waiting:
                remaining = (
                    None if deadline is None else max(0.0, deadline - time.monotonic())
                )
                ready = self._ready(
                    _LIVENESS if remaining is None else min(remaining, _LIVENESS)
                )
                if not ready:
                    for n in waiting.values():
                        worker = workers[n]
                        # A process it forked may hold its pipe and sentinel open:
                        # ask the OS whether the worker itself is still there.
                        if worker.process.exitcode is not None and not (
                            worker.conn.poll()
                        ):
                            self._died(worker, during)
                    if deadline is None or time.monotonic() < deadline:
                        continue
                    late = [workers[n].index for n in waiting.values()]
                    self._broken = f"{during} timed out"
                    raise WorkerTimeoutError(
                        errors.call_timed_out(during, timeout or 0.0, late)
                    )
                dead = []
                for fd in ready:
                    worker, is_pipe = by_fd[fd]
                    if worker.index not in waiting:
                        # It answered already: this is its exit (EOF, sentinel) or
                        # a stale answer to an abandoned call.
                        try:
                            if not is_pipe:
                                raise EOFError
                            worker.conn.recv()
                        except (EOFError, OSError):
                            self._forget(worker, during)
                        continue
                    if not is_pipe:
                        dead.append(worker)
                        continue
                    try:
                        answer = pickle.loads(worker.conn.recv_bytes())
                    except (EOFError, OSError):
                        self._died(worker, during)
                    answers[waiting.pop(worker.index)] = answer
                for worker in dead:
                    if worker.index in waiting and not worker.conn.poll():
                        self._died(worker, during)  # else: read its answer first
        except BaseException as exc:
            if self._broken is None:
                # interrupted (Ctrl-C) or a pipe error: the pipes may be out of step
                self._broken = f"{during} was interrupted by {type(exc).__name__}"
            raise
        return answers

    def _ready(self, timeout: float | None) -> list[int]:
        """The file descriptors (pipes, process sentinels) ready to read."""
        poller = self._poller
        if poller is not None:
            return [
                fd for fd, _ in poller.poll(None if timeout is None else timeout * 1000)
            ]
        objects = [obj for w in self._workers for obj in (w.conn, w.sentinel)]
        return [
            obj if isinstance(obj, int) else obj.fileno()
            for obj in wait(objects, timeout)
        ]

    def _forget(self, worker: _Worker, during: str) -> None:
        """A worker died after it answered: this call stands, the next fails."""
        if self._poller is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._poller.unregister(worker.sentinel)
                self._poller.unregister(worker.conn.fileno())
        worker.process.join(1.0)
        if self._broken is None:
            self._broken = (
                f"worker process {worker.index} died during {during}"
                f" (exit code {worker.process.exitcode})"
            )

    def _send(self, worker: _Worker, message: Any, during: str) -> None:
        try:
            worker.conn.send_bytes(pickle.dumps(message, _PROTOCOL))
        except OSError:  # the worker is gone (EPIPE)
            self._died(worker, during)

    def _died(self, worker: _Worker, during: str) -> NoReturn:
        worker.process.join(1.0)
        self._broken = (
            f"worker process {worker.index} died during {during}"
            f" (exit code {worker.process.exitcode})"
        )
        raise WorkerError(
            errors.worker_died(
                worker.index, worker.indices, worker.process.exitcode, during
            )
        )

    def _raise_failure(self, failures: list[tuple[Any, ...]]) -> None:
        failures = sorted(failures, key=lambda failure: failure[1])
        _, index, method, exc_type, message, trace, original = failures[0]
        cause: BaseException | None = None
        if original is not None:
            try:
                cause = pickle.loads(original)
            except Exception:
                cause = None
        error = SubEnvError(
            index, method, exc_type, message, trace, [f[1] for f in failures[1:]]
        )
        raise error from cause

    # --------------------------------------------------------------- the core
    def _execute(
        self,
        commands: list[int],
        actions: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> tuple[StepResult, list[int]]:
        self._usable(
            "step" if _STEP in commands or _STEP_THEN_RESET in commands else "reset"
        )
        busy = self._send_execute(commands, actions, seeds, options)
        return self._finish(commands, busy, self.timeout, "a step or reset")

    def _execute_async(
        self,
        name: str,
        commands: list[int],
        actions: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> None:
        self._usable(f"{name}_async")
        busy = self._send_execute(commands, actions, seeds, options)
        self._pending = (name, (commands, busy))

    def _execute_wait(
        self, name: str, timeout: float | None
    ) -> tuple[StepResult, list[int], list[int]]:
        commands, busy = self._take_pending(name)
        result, done = self._finish(
            commands,
            busy,
            self.timeout if timeout is None else timeout,
            f"{name}_wait()",
        )
        return result, commands, done

    def _finish(
        self,
        commands: list[int],
        busy: list[_Worker],
        timeout: float | None,
        during: str,
    ) -> tuple[StepResult, list[int]]:
        """Collect the answers to an execute message; build the step tuple.

        The parent's own sub-envs run first, while the workers run theirs.
        """
        local_busy = self._local_message is not None
        local = self._run_local()
        answers = self._collect(busy, timeout, during)
        if self._local is not None:
            answers.append(local)
        failures = [a for a in answers if a is not None and a[0] == _FAILED]
        if failures:
            # The call's results are lost: no sub-env's episode can go on.
            self._ended.update(range(self.num_envs))
            self._raise_failure(failures)
        rewards = self._rewards.copy()
        terminations = self._terminations.copy()
        truncations = self._truncations.copy()
        if len(busy) < len(self._workers):  # idle workers wrote nothing
            for worker in self._workers:
                if worker not in busy:
                    rewards[worker.start : worker.stop] = 0.0
                    terminations[worker.start : worker.stop] = False
                    truncations[worker.start : worker.stop] = False
        if self._local is not None and not local_busy:
            first = self._local.first
            rewards[first:] = 0.0
            terminations[first:] = False
            truncations[first:] = False
        done: list[int] = []
        infos: dict[str, Any] = {}
        add_info = self._add_info
        rows = self._rows
        env_obs = rows if rows is not None else self._env_obs
        for answer in answers:
            if answer is None:
                continue
            _, worker_done, worker_infos, sent_obs = answer
            done += worker_done
            for i, info in worker_infos:
                infos = add_info(infos, info, i)
            if sent_obs:
                for i, obs in sent_obs:
                    env_obs[i] = obs
        if not self.shared_memory and rows is None:
            self._observations = concatenate(
                self.single_observation_space, env_obs, self._observations
            )
        elif self._obs_memory is not None:
            self._observations = _view(
                self.single_observation_space, self._obs_memory, self.num_envs
            )
        result = (
            copy_batch(self._observations) if self.copy else self._observations,
            rewards,
            terminations,
            truncations,
            infos,
        )
        return result, done

    # ------------------------------------------------ Gymnasium's async surface
    def step_async(self, actions: Any) -> None:
        """Send the actions to the workers; :meth:`step_wait` returns the result.

        Raises:
            EpisodeEndedError: a sub-env whose episode ended would be stepped.
            AlreadyPendingCallError: another ``*_async`` call is pending.
        """
        self._dispatch_async("step", self._all_step, actions, None, None)

    def step_wait(self, timeout: float | None = None) -> StepResult:
        """Wait for the step sent by :meth:`step_async` and return its result.

        Args:
            timeout: seconds to wait; None: the env's ``timeout``.

        Raises:
            NoAsyncCallError: no :meth:`step_async` is pending.
            WorkerTimeoutError: the step took longer than ``timeout``.
        """
        return self._dispatch_wait("step", timeout)

    def reset_async(
        self,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Send a reset (of all sub-envs, or those in ``options["reset_mask"]``)."""
        self._usable("reset_async")
        seeds = self._seeds(seed)
        commands, rest = self._reset_commands(options)
        self._dispatch_async("reset", commands, None, seeds, rest)

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """Wait for the reset sent by :meth:`reset_async`; return ``(obs, infos)``.

        Args:
            timeout: seconds to wait; None: the env's ``timeout``.
        """
        obs, _, _, _, infos = self._dispatch_wait("reset", timeout)
        return obs, infos

    def _take_pending(self, what: str) -> Any:
        if self.closed:
            raise ClosedEnvironmentError(errors.env_closed(type(self).__name__))
        if self._broken is not None:
            raise WorkerError(errors.env_unusable(self._broken))
        pending = self._pending
        if pending is None or pending[0] != what:
            raise NoAsyncCallError(
                errors.nothing_pending(what, None if pending is None else pending[0]),
                what,
            )
        self._pending = None
        return pending[1]

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (or get it, if not callable)."""
        self.call_async(name, *args, **kwargs)
        return self.call_wait()

    def call_async(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Send a :meth:`call` to the workers; :meth:`call_wait` returns the results."""
        self._usable("call_async")
        if name in _FORBIDDEN_CALLS:
            raise ValueError(errors.forbidden_call(name))
        for worker in self._workers:
            self._send(worker, (_CALL, name, args, kwargs), f"call({name!r})")
        if self._local is not None:
            self._local_message = (_CALL, name, args, kwargs)
        self._pending = ("call", name)

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """Wait for the results of :meth:`call_async`, one per sub-env."""
        name = self._take_pending("call")
        return self._results(
            self.timeout if timeout is None else timeout, f"call({name!r})"
        )

    def _results(self, timeout: float | None, during: str) -> tuple[Any, ...]:
        answers = self._answers(timeout, during)
        failures = [a for a in answers if a is not None and a[0] == _FAILED]
        if failures:
            self._raise_failure(failures)
        return tuple(result for answer in answers for result in answer[1])

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env (like ``SyncVectorEnv.get_attr``:
        a method is returned, not called)."""
        self._usable("get_attr")
        for worker in self._workers:
            self._send(worker, (_GET_ATTR, name), f"get_attr({name!r})")
        if self._local is not None:
            self._local_message = (_GET_ATTR, name)
        return self._results(self.timeout, f"get_attr({name!r})")

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value for all, or a list or
        tuple of ``num_envs`` values."""
        self._usable("set_attr")
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        for worker in self._workers:
            self._send(
                worker,
                (_SET_ATTR, name, list(values[worker.start : worker.stop])),
                f"set_attr({name!r})",
            )
        if self._local is not None:
            self._local_message = (
                _SET_ATTR,
                name,
                list(values[self._local.first :]),
            )
        answers = self._answers(self.timeout, f"set_attr({name!r})")
        failures = [a for a in answers if a is not None and a[0] == _FAILED]
        if failures:
            self._raise_failure(failures)

    def _answers(self, timeout: float | None, during: str) -> list[Any]:
        """The answers of every worker, then the parent's for its own sub-envs
        (run while the workers work)."""
        local = self._run_local()
        answers = self._collect(self._workers, timeout, during)
        if self._local is not None:
            answers.append(local)
        return answers

    def render(self) -> tuple[Any, ...] | None:
        """The frames of every sub-env (``call("render")``)."""
        return self.call("render")

    @property  # type: ignore[misc]
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """The ``np_random_seed`` of every sub-env."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """The ``np_random`` generator of every sub-env (copies: they live in the
        workers)."""
        return self.get_attr("np_random")

    @property
    def processes(self) -> list[Any]:
        """The worker processes (``multiprocessing.Process``), in sub-env order."""
        return [worker.process for worker in self._workers]

    # ----------------------------------------------------------------- closing
    def close_extras(
        self, timeout: float | None = None, terminate: bool = False, **kwargs: Any
    ) -> None:
        """Close the sub-envs and stop the workers; leaves no process behind.

        Args:
            timeout: seconds to wait for the workers to close their sub-envs before
                they are terminated; None: the env's ``timeout``, else no limit.
            terminate: terminate the workers at once, without closing the sub-envs.

        Raises:
            SubEnvError: a sub-env's ``close()`` raised (after every worker is
                stopped).
        """
        if self._pending is not None:
            # as Gymnasium's AsyncVectorEnv (its answers are read and dropped below)
            gym.logger.warn(
                f"Calling `close` while waiting for a pending call to "
                f"`{self._pending[0]}` to complete."
            )
            self._pending = None
        if self._broken is not None and "timed out" in self._broken:
            terminate = True  # the workers may be stuck in the call
        failures = self._shutdown(
            terminate=terminate, timeout=self.timeout if timeout is None else timeout
        )
        if failures:
            self._raise_failure(failures)

    def _shutdown(
        self, terminate: bool, timeout: float | None = None
    ) -> list[tuple[Any, ...]]:
        workers, self._workers = self._workers, []
        self._poller = None
        self._by_fd = {}
        # the parent's own sub-envs are never stuck: close them in any case
        failures: list[tuple[Any, ...]] = self._close_local()
        live = [w for w in workers if w.process.is_alive()]
        if not terminate:
            for worker in live:
                with contextlib.suppress(OSError):
                    worker.conn.send((_CLOSE,))
            deadline = None if timeout is None else time.monotonic() + timeout
            waiting = {w.conn: w for w in live}
            while waiting:
                remaining = (
                    None if deadline is None else max(0.0, deadline - time.monotonic())
                )
                ready = wait(
                    [*waiting, *(w.sentinel for w in waiting.values())],
                    _LIVENESS if remaining is None else min(remaining, _LIVENESS),
                )
                if not ready:
                    for conn, w in list(waiting.items()):
                        if w.process.exitcode is not None and not conn.poll():
                            del waiting[conn]  # gone (its pipe may be held open)
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                    continue
                for obj in ready:
                    if isinstance(obj, int):
                        for conn, w in list(waiting.items()):
                            if w.sentinel == obj and not conn.poll():
                                del waiting[conn]
                        continue
                    if obj not in waiting:
                        continue
                    try:
                        answer = obj.recv()  # type: ignore[union-attr]
                    except (EOFError, OSError):
                        del waiting[obj]  # type: ignore[arg-type]
                        continue
                    if answer is not None and answer[0] == _CLOSED:
                        failures += answer[1]
                        del waiting[obj]  # type: ignore[arg-type]
                    # else: a stale answer to an abandoned call; keep reading
        for worker in workers:
            worker.process.join(0 if terminate else 1.0)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(1.0)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
            worker.process.close()
        return failures

    def __del__(self) -> None:
        """Terminate the workers of an env that was never closed."""
        if getattr(self, "_workers", None) and not getattr(self, "closed", True):
            with contextlib.suppress(Exception):
                self.close(terminate=True)

    def __enter__(self) -> AsyncVectorEnv:
        """Use as a context manager: the env is closed on exit."""
        return self

    def __exit__(self, *args: object) -> None:
        """Close the env."""
        self.close()

    def __repr__(self) -> str:
        """``AsyncVectorEnv(num_envs=..., num_workers=...)``, with the env id if known."""
        spec = getattr(self, "spec", None)
        head = f"{spec.id}, " if spec is not None else ""
        return (
            f"{type(self).__name__}({head}num_envs={self.num_envs}, "
            f"num_workers={self.num_workers}"
            + (f", in_parent={self.in_parent})" if self.in_parent else ")")
        )
