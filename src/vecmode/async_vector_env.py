"""The multi-process core: sub-envs in worker processes, one round trip per call
(see docs/core.md)."""

from __future__ import annotations

import multiprocessing
import pickle
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import ClosedEnvironmentError, CustomSpaceError
from gymnasium.vector.utils import CloudpickleWrapper

from vecmode import layout, worker
from vecmode.core import check_core_arguments, is_int
from vecmode.errors import SharedMemorySpaceError, closed_during_message
from vecmode.modes import CORE_MODE, ModeLike
from vecmode.pool import Worker, WorkerPool
from vecmode.remote import MessageFor, RemoteCore


class AsyncVectorEnv(RemoteCore):
    """A vecmode core whose sub-envs run in worker processes (DISABLED mode).

    Returns exactly what :class:`vecmode.SyncVectorEnv` returns, with the surface
    of :class:`gymnasium.vector.AsyncVectorEnv`. Each worker runs a slice of the
    sub-envs; a call is one message to each busy worker and one answer back.

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.AsyncVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 4,
    ...     num_workers=2, context="fork")
    >>> envs  # sub-envs 0-1 in one worker process, 2-3 in the other
    AsyncVectorEnv(num_envs=4, num_workers=2)
    >>> envs.reset_async(seed=0)
    >>> obs, infos = envs.reset_wait(timeout=10)
    >>> envs.step_async(np.ones(4, dtype=int))
    >>> truncations = envs.step_wait(timeout=10)[3]
    >>> envs.awaiting_reset.tolist()  # DISABLED: the caller resets them
    [True, True, True, True]
    >>> obs, infos = envs.reset(options={"reset_mask": truncations})
    >>> envs.close()
    """

    #: The sub-envs the parent steps itself, and the message still to run there.
    _local: worker.SliceServer | None = None
    _local_message: tuple[Any, ...] | None = None
    #: The observations' shared memory, where they must be read after a call.
    _obs_memory: Any = None

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        shared_memory: bool = True,
        copy: bool = True,
        context: str | None = None,
        daemon: bool = True,
        worker: Any = None,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: ModeLike = CORE_MODE,
        max_concurrency: int | None = None,
        *,
        num_workers: int | None = None,
        in_parent: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """Start the worker processes and build the sub-envs in them.

        ``env_fns``, ``shared_memory``, ``copy``, ``context``, ``daemon`` and
        ``observation_mode`` are as Gymnasium's, in its order.

        Args:
            num_workers: worker processes (default: one per CPU, at most one
                per sub-env).
            in_parent: how many sub-envs (the last) the parent steps itself.
            timeout: seconds a call may take (None: no limit).
            autoreset_mode: only ``DISABLED``: a core has no autoreset policy.
            worker: Gymnasium's, refused (saying what to do instead).
            max_concurrency: Gymnasium's, refused (saying what to do instead).

        Raises:
            SubEnvError: an ``env_fn`` raised.
            RuntimeError: a sub-env's spaces differ from the first sub-env's.
        """
        name, how = type(self).__name__, "vectorization_mode='async', "
        check_core_arguments(name, autoreset_mode, observation_mode, how)
        _refuse_gymnasium_arguments(worker, max_concurrency)
        env_fns = list(env_fns)
        counts = _check_arguments(len(env_fns), num_workers, in_parent)
        self.shared_memory = shared_memory
        self.context = context
        self.daemon = daemon
        self._pool = WorkerPool()
        self._setup(env_fns, copy, observation_mode, timeout)
        self.num_workers, self.in_parent = layout.default_layout(self.num_envs, *counts)
        ctx = multiprocessing.get_context(context)
        memory = self._create_memory(ctx)
        self._start(ctx, memory)

    # ------------------------------------------------------------ construction
    def _create_memory(self, ctx: Any) -> tuple[Any, Any, Any]:
        """Shared memory (None: not shared) of the observations, stats, actions."""
        space, n = self.single_observation_space, self.num_envs
        obs_memory = None
        if self.shared_memory:
            try:
                obs_memory = worker.create(space, n, ctx)
            except (CustomSpaceError, TypeError) as exc:
                raise SharedMemorySpaceError(
                    f"the observation space {space} cannot be put in shared memory "
                    f"({exc}); pass shared_memory=False."
                ) from exc
            self._observations = worker.view(space, obs_memory, n)
            # Text and OneOf are decoded, not viewed: read them after every call
            self._obs_memory = None if worker.viewed(space) else obs_memory
            self._rows = None
        else:
            self._batch_buffers()
        stats_memory = worker.create(worker.STATS_SPACE, n, ctx)
        self._stats_rows = worker.view(worker.STATS_SPACE, stats_memory, n)
        action_memory = None
        self._action_rows: np.ndarray | None = None
        if self._array_actions:
            action_memory = worker.create(self.single_action_space, n, ctx)
            self._action_rows = worker.view(self.single_action_space, action_memory, n)
        return obs_memory, stats_memory, action_memory

    def _start(self, ctx: Any, memory: tuple[Any, Any, Any]) -> None:
        """Start the workers and build the parent's own sub-envs."""
        self._pool.spin = layout.spin_seconds(self.num_workers)
        parts = layout.slices(self.num_envs - self.in_parent, self.num_workers)
        self._remote_slices = parts
        spin = layout.worker_spin_seconds()
        doorbell = worker.Doorbell.create(ctx, len(parts)) if spin else None
        self._pool.doorbell = doorbell
        firsts = [start for start, _ in parts]
        # Linux ends a worker with the thread that started it: from the main one only
        main = threading.current_thread() is threading.main_thread()

        def args(
            start: int, stop: int, conn: Connection, inherited: list[Connection]
        ) -> tuple[Any, ...]:  # worker_main's
            fns = [CloudpickleWrapper(fn) for fn in self.env_fns[start:stop]]
            bell = None if doorbell is None else (doorbell, firsts.index(start))
            return (start, fns, conn, inherited, memory, self._spec, spin, bell, main)

        def start(limit: float | None) -> list[Any]:
            name = type(self).__name__
            self._pool.start(ctx, parts, worker.worker_main, args, name, self.daemon)
            answers = self._pool.collect(
                self._pool.workers,
                limit,
                "construction",
                # a failed env_fn is reported at once, not after the slowest build
                enough=lambda answer: answer[0] == worker.FAILED,
            )
            worker.raise_failure(answers)
            if self.in_parent:
                answers.append(self._start_local(memory))
            return answers

        self._construct(start)

    def _start_local(self, memory: tuple[Any, Any, Any]) -> tuple[Any, ...] | None:
        """Build the sub-envs the parent steps itself; a worker's answer."""
        first, envs = self.num_envs - self.in_parent, list[gym.Env]()
        self._local = worker.SliceServer(first, envs, memory, self._spec)
        return worker.build_slice(first, self.env_fns[first:], envs, self._spec)

    def _close_local(self) -> list[worker.RemoteFailure]:
        local, self._local = self._local, None
        self._local_message = None
        if local is None or local.closed:
            return []
        return list(local.handle((worker.CLOSE,))[1])

    def _run_local(self, during: str = "a call") -> Any:
        """Run the parent share's message; its answer checked as a worker's."""
        message, self._local_message = self._local_message, None
        if message is None or self._local is None:
            return None
        try:
            answer = self._local.handle(message)
        except BaseException as exc:
            self._break(f"{during} was interrupted by {type(exc).__name__}")
            raise
        if answer is not None and answer[0] == worker.OK:
            try:
                pickle.dumps(answer, worker.PROTOCOL)
            except Exception as exc:
                answer = worker.unpicklable(answer, exc)
        return answer

    # --------------------------------------------------------- the transport
    @property
    def _interrupted(self) -> bool:  # type: ignore[override]
        return self._pool.interrupted is not None

    def _drain(self, timeout: float, during: str) -> list[Any]:
        return self._pool.drain(timeout, during)

    @property
    def _broken(self) -> str | None:
        return self._pool.broken

    def _break(self, reason: str) -> None:
        if self._pool.broken is None:
            self._pool.broken = reason

    def _send_each(
        self, encoded: dict[int, bytes], message_for: MessageFor, during: str
    ) -> tuple[list[Worker], bool]:
        """Send each worker its message, queue the parent share's; who is busy."""
        busy = []
        for w in self._pool.workers:
            data = encoded.get(w.start)
            if data is not None:
                self._pool.send_data(w, data, during)
                busy.append(w)
        if self._local is not None:
            self._local_message = message_for(self._local.first, self.num_envs)
        return busy, self._local_message is not None

    def _collect(
        self, token: tuple[list[Worker], bool], timeout: float | None, during: str
    ) -> list[Any]:
        """The answers of the busy workers, then the parent share's."""
        local = self._run_local(during)
        if self.closed:  # a sub-env of the parent's share closed the env
            raise ClosedEnvironmentError(closed_during_message(during))
        answers = self._pool.collect(token[0], timeout, during)
        if self._local is not None:
            answers.append(local)
        return answers

    def _split_actions(self, actions: Any) -> Any:
        """:data:`SHARED` where the actions were written to shared memory."""
        rows = self._action_rows
        if (
            rows is not None
            and type(actions) is np.ndarray
            and actions.dtype == rows.dtype
            and actions.shape == rows.shape
        ):
            rows[...] = actions
            return worker.SHARED
        return super()._split_actions(actions)

    def _read_observations(self) -> None:
        if not self.shared_memory:
            super()._read_observations()
        elif self._obs_memory is not None:
            self._observations = worker.view(
                self.single_observation_space, self._obs_memory, self.num_envs
            )

    def _stats(
        self, token: tuple[list[Worker], bool], answers: list[Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the rewards and flags; zero where nothing ran."""
        busy, local_busy = token
        stats = tuple(stat.copy() for stat in self._stats_rows)
        idle = [(w.start, w.stop) for w in self._pool.workers if w not in busy]
        if self._local is not None and not local_busy:
            idle.append((self._local.first, self.num_envs))
        for start, stop in idle:
            for stat in stats:
                stat[start:stop] = 0
        return stats

    @property
    def processes(self) -> list[Any]:
        """The worker processes (``multiprocessing.Process``), in sub-env order."""
        return [w.process for w in self._pool.workers]

    # ----------------------------------------------------------------- closing
    def _leftovers(self) -> bool:
        return bool(self._pool.workers)

    def _shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        try:
            failures = self._close_local()
        finally:
            failures_in_workers = self._pool.shutdown(terminate, timeout)
            self._unclosed = self._pool.unclosed
        return failures + failures_in_workers

    def _layout(self) -> str:
        in_parent = f", in_parent={self.in_parent}" if self.in_parent else ""
        return f"num_workers={self.num_workers}{in_parent}"


def _check_arguments(
    num_envs: int, num_workers: Any, in_parent: Any
) -> tuple[int | None, int | None]:
    """``num_workers`` and ``in_parent`` checked, as ints (None: not given)."""
    workers = layout.positive_count("num_workers", num_workers)
    if in_parent is not None and (
        not is_int(in_parent) or not 0 <= in_parent < max(1, num_envs)
    ):
        raise ValueError(
            f"in_parent must be an int from 0 to {num_envs - 1} (the sub-envs the "
            f"parent steps itself; one at least runs in a worker), got "
            f"{in_parent!r}."
        )
    return workers, None if in_parent is None else int(in_parent)


def _refuse_gymnasium_arguments(worker: Any, max_concurrency: Any) -> None:
    if worker is not None:
        raise TypeError(
            "vecmode.AsyncVectorEnv takes no worker=: its workers run vecmode's "
            "command runner. Put the custom behaviour in the sub-env (a "
            "gymnasium.Wrapper in its env_fn), or use gymnasium.vector."
            "AsyncVectorEnv."
        )
    if max_concurrency is not None:
        raise TypeError(
            f"vecmode.AsyncVectorEnv takes no max_concurrency= (got "
            f"{max_concurrency!r}): pass num_workers={max_concurrency!r}, which "
            f"steps at most that many sub-envs at once."
        )
