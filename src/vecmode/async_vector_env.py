"""The multi-process core: sub-envs in worker processes, one round trip per call.

Each worker process holds a contiguous slice of the sub-envs (:mod:`vecmode.layout`)
and runs it with the same command runner as the sync core (:mod:`vecmode.worker`).
A call to :meth:`~vecmode.core.VectorCore.execute` (so every ``step`` and ``reset``,
whatever the autoreset policy on top) sends each worker that has work one message
with its slice's commands, actions, seeds and options (:mod:`vecmode.pool`); the
worker writes observations, rewards and flags to shared memory and answers with one
message holding only its non-empty infos, the sub-envs whose episode ended and the
final observations of those reset within the call. The parent merges the infos in
sub-env order with Gymnasium's ``_add_info``, so the record is exactly the sync
env's.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import ClosedEnvironmentError, CustomSpaceError
from gymnasium.vector.utils import CloudpickleWrapper

from vecmode.core import check_core_arguments
from vecmode.errors import SharedMemorySpaceError, SubEnvError, WorkerError
from vecmode.layout import default_layout, slices, spin_seconds, worker_spin_seconds
from vecmode.modes import CORE_MODE, ModeLike
from vecmode.pool import Worker, WorkerPool, closed_during
from vecmode.remote import (
    BUILD_GRACE,
    MessageFor,
    RemoteCore,
    raise_failure,
)
from vecmode.worker import (
    CLOSE,
    FAILED,
    OK,
    PROTOCOL,
    SHARED,
    STATS_SPACE,
    Doorbell,
    RemoteFailure,
    SliceServer,
    create,
    space_mismatch,
    unpicklable,
    view,
    viewed,
    worker_main,
)

__all__ = ["AsyncVectorEnv"]


class AsyncVectorEnv(RemoteCore):
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
        autoreset_mode: ModeLike = CORE_MODE,
        worker: Any = None,
        max_concurrency: int | None = None,
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
                The workers spin up to 0.3 ms for the next message before
                blocking (yielding the CPU at each turn), and when every process
                has a CPU of its own, e.g. ``num_workers=1`` on 2 CPUs, the parent
                spins for their answers too (both watching counters in shared
                memory), which saves a round trip's wake-ups on a virtual machine
                (at the cost of up to that much CPU time per call).
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
                :class:`vecmode.WorkerTimeoutError` (building the sub-envs may take
                :data:`BUILD_GRACE`, a minute, if that is more); None: no limit (a
                worker that dies is still reported at once).
            autoreset_mode: only ``DISABLED`` (the default): a core has no
                autoreset policy. Given another mode, the error says how to get it.
            worker: Gymnasium's argument, refused with what to do instead:
                vecmode's workers run its own command runner, which a custom
                worker function cannot stand in for.
            max_concurrency: Gymnasium's argument, refused with what to use
                instead: ``num_workers=k`` already steps at most ``k`` sub-envs
                at once (plus the parent's share, with ``in_parent``).

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
        if worker is not None:
            raise TypeError(custom_worker_refused())
        if max_concurrency is not None:
            raise TypeError(max_concurrency_refused(max_concurrency))
        env_fns = list(env_fns)
        if num_workers is not None and (
            isinstance(num_workers, bool)
            or not isinstance(num_workers, (int, np.integer))
            or num_workers < 1
        ):
            raise ValueError(num_workers_message(num_workers))
        if in_parent is not None and (
            isinstance(in_parent, bool)
            or not isinstance(in_parent, (int, np.integer))
            or not 0 <= in_parent < max(1, len(env_fns))
        ):
            raise ValueError(in_parent_message(in_parent, len(env_fns)))
        self.shared_memory = shared_memory
        self.context = context
        self.daemon = daemon
        self._pool = WorkerPool()
        #: The sub-envs the parent steps itself (the last ``in_parent``), and the
        #: message it has still to carry out for them.
        self._local: SliceServer | None = None
        self._local_message: tuple[Any, ...] | None = None
        #: The observations' shared memory, where they must be read after a call.
        self._obs_memory: Any = None
        self._setup(
            env_fns, copy=copy, observation_mode=observation_mode, timeout=timeout
        )
        self.num_workers, self.in_parent = default_layout(
            self.num_envs,
            None if num_workers is None else int(num_workers),
            None if in_parent is None else int(in_parent),
        )
        ctx = multiprocessing.get_context(context)
        memory = self._create_memory(ctx)
        self._start(ctx, memory)

    # ------------------------------------------------------------ construction
    def _create_memory(self, ctx: Any) -> tuple[Any, Any, Any]:
        """Shared memory for observations (unless ``shared_memory=False``), rewards
        and flags, and array actions; the parent's views of it."""
        space, n = self.single_observation_space, self.num_envs
        obs_memory = None
        if self.shared_memory:
            try:
                obs_memory = create(space, n, ctx)
            except (CustomSpaceError, TypeError) as exc:
                raise SharedMemorySpaceError(
                    f"the observation space {space} cannot be put in shared memory "
                    f"({exc}); pass shared_memory=False (observations then travel "
                    f"by pipe)."
                ) from exc
            self._observations = view(space, obs_memory, n)
            # Text and OneOf are decoded from the memory when read, not viewed:
            # read them again after every call (Gymnasium 1.4's AsyncVectorEnv
            # does not, and returns its first, blank reading)
            self._obs_memory = None if viewed(space) else obs_memory
            self._rows = None
        else:
            self._batch_buffers()
        stats_memory = create(STATS_SPACE, n, ctx)
        self._rewards, self._terminations, self._truncations = view(
            STATS_SPACE, stats_memory, n
        )
        # Array actions of the batch's own dtype go through shared memory too.
        action_memory = None
        self._action_rows: np.ndarray | None = None
        if self._array_actions:
            action_memory = create(self.single_action_space, n, ctx)
            self._action_rows = view(self.single_action_space, action_memory, n)
        return obs_memory, stats_memory, action_memory

    def _start(self, ctx: Any, memory: tuple[Any, Any, Any]) -> None:
        """Start the workers, build the parent's own sub-envs; check what they
        built. On any error, nothing is left running."""
        self._pool.spin = spin_seconds(self.num_workers, self.in_parent)
        spin = worker_spin_seconds()
        parts = slices(self.num_envs - self.in_parent, self.num_workers)
        doorbell = Doorbell.create(ctx, len(parts)) if spin else None
        self._pool.doorbell = doorbell
        firsts = [start for start, _ in parts]

        def args(
            start: int, stop: int, conn: Connection, inherited: list[Connection]
        ) -> tuple[Any, ...]:
            return (
                start,
                [CloudpickleWrapper(fn) for fn in self.env_fns[start:stop]],
                conn,
                inherited,
                memory,
                self.num_envs,
                self.single_observation_space,
                self.single_action_space,
                self.observation_mode,
                spin,
                None if doorbell is None else (doorbell, firsts.index(start)),
            )

        answers: list[Any] = []
        try:
            self._pool.start(
                ctx,
                parts,
                worker_main,
                args,
                type(self).__name__,
                self.daemon,
            )
            # building sub-envs (and, with spawn, importing their modules) may take
            # longer than a step: the timeout grants construction at least a minute
            limit = None if self.timeout is None else max(self.timeout, BUILD_GRACE)
            answers = self._pool.collect(
                self._pool.workers,
                limit,
                "construction",
                # a failed env_fn is reported at once, not after the slowest build
                enough=lambda answer: answer[0] == FAILED,
            )
            raise_failure(answers)
            if self.in_parent:
                answers.append(self._start_local(memory))
            self._check_built(answers)
        except BaseException as exc:
            # Workers that built their sub-envs close them; anything else (a dead
            # or stuck worker, an interrupt) terminates them all.
            graceful = isinstance(exc, (SubEnvError, RuntimeError)) and not isinstance(
                exc, WorkerError
            )
            # (a worker still building when another failed does not answer: it
            # is ended when the wait is up)
            self._shutdown(
                terminate=not graceful, timeout=10.0 if all(answers) else 1.0
            )
            self.closed = True
            raise

    def _start_local(self, memory: tuple[Any, Any, Any]) -> tuple[Any, ...] | None:
        """Build the sub-envs the parent steps itself; a space mismatch, if any."""
        first = self.num_envs - self.in_parent
        envs: list[gym.Env] = []
        self._local = SliceServer(
            first,
            envs,
            memory,
            self.num_envs,
            self.single_observation_space,
            self.single_action_space,
        )
        for i in range(first, self.num_envs):
            envs.append(self._build_in_parent(i))
        return space_mismatch(
            first,
            envs,
            self.single_observation_space,
            self.single_action_space,
            self.observation_mode,
        )

    def _close_local(self) -> list[RemoteFailure]:
        """Close the sub-envs the parent steps; their close() failures."""
        local, self._local = self._local, None
        self._local_message = None
        if local is None or local.closed:
            return []
        return list(local.handle((CLOSE,))[1])

    def _run_local(self, during: str = "a call") -> Any:
        """Carry out the message pending for the parent's own sub-envs.

        Its answer is pickled as a worker's would be, so that the same fault gives
        the same error wherever a sub-env runs. An interrupt (Ctrl-C) here leaves
        the workers' answers unread: the env cannot be used any more.
        """
        message, self._local_message = self._local_message, None
        if message is None or self._local is None:
            return None
        try:
            answer = self._local.handle(message)
        except BaseException as exc:
            self._break(f"{during} was interrupted by {type(exc).__name__}")
            raise
        if answer is not None and answer[0] == OK:
            try:
                pickle.dumps(answer, PROTOCOL)
            except Exception as exc:
                answer = unpicklable(answer, exc)
        return answer

    # --------------------------------------------------------- the transport
    @property
    def _broken(self) -> str | None:
        return self._pool.broken

    def _break(self, reason: str) -> None:
        if self._pool.broken is None:
            self._pool.broken = reason

    @property
    def _remote_slices(self) -> list[tuple[int, int]]:
        return [(worker.start, worker.stop) for worker in self._pool.workers]

    def _send_each(
        self, encoded: dict[int, bytes], message_for: MessageFor, during: str
    ) -> tuple[list[Worker], bool]:
        """Send each worker its message; queue the parent share's. The busy
        workers, and whether the parent share has work."""
        busy = []
        for worker in self._pool.workers:
            data = encoded.get(worker.start)
            if data is not None:
                self._pool.send_data(worker, data, during)
                busy.append(worker)
        if self._local is not None:
            self._local_message = message_for(self._local.first, self.num_envs)
        return busy, self._local_message is not None

    def _collect(
        self, token: tuple[list[Worker], bool], timeout: float | None, during: str
    ) -> list[Any]:
        """The answers of the busy workers, then the parent's for its own
        sub-envs (run while the workers work)."""
        local = self._run_local(during)
        if self.closed:  # a sub-env of the parent's share closed the env
            raise ClosedEnvironmentError(closed_during(during))
        answers = self._pool.collect(token[0], timeout, during)
        if self._local is not None:
            answers.append(local)
        return answers

    def _split_actions(self, actions: Any) -> Any:
        """The actions as sent: :data:`SHARED` where they were written to shared
        memory, else as :meth:`RemoteCore._split_actions` sends them."""
        rows = self._action_rows
        if (
            rows is not None
            and type(actions) is np.ndarray
            and actions.dtype == rows.dtype
            and actions.shape == rows.shape
        ):
            rows[...] = actions
            return SHARED
        return super()._split_actions(actions)

    def _read_observations(self) -> None:
        if not self.shared_memory:
            super()._read_observations()
        elif self._obs_memory is not None:
            self._observations = view(
                self.single_observation_space, self._obs_memory, self.num_envs
            )

    def _stats(
        self, token: tuple[list[Worker], bool], answers: list[Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the rewards and flags; zero where nothing ran (idle workers,
        and an idle parent share, wrote nothing this call)."""
        busy, local_busy = token
        rewards = self._rewards.copy()
        terminations = self._terminations.copy()
        truncations = self._truncations.copy()
        idle = [(w.start, w.stop) for w in self._pool.workers if w not in busy]
        if self._local is not None and not local_busy:
            idle.append((self._local.first, self.num_envs))
        for start, stop in idle:
            rewards[start:stop] = 0.0
            terminations[start:stop] = False
            truncations[start:stop] = False
        return rewards, terminations, truncations

    @property
    def processes(self) -> list[Any]:
        """The worker processes (``multiprocessing.Process``), in sub-env order."""
        return [worker.process for worker in self._pool.workers]

    # ----------------------------------------------------------------- closing
    def _leftovers(self) -> bool:
        return bool(self._pool.workers)

    def _shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        """Close the parent's own sub-envs (never stuck: in any case), then stop
        the workers (:meth:`WorkerPool.shutdown`); the close() failures."""
        try:
            failures = self._close_local()
        finally:
            failures_in_workers = self._pool.shutdown(terminate, timeout)
        return failures + failures_in_workers

    def _layout(self) -> str:
        in_parent = f", in_parent={self.in_parent}" if self.in_parent else ""
        return f"num_workers={self.num_workers}{in_parent}"


# ------------------------------------------------------------------ messages
def num_workers_message(value: Any) -> str:
    return f"num_workers must be None or an int >= 1, got {value!r}."


def in_parent_message(got: Any, num_envs: int) -> str:
    return (
        f"in_parent must be an int from 0 to {num_envs - 1} (the number of sub-envs "
        f"the parent process steps itself; at least one sub-env runs in a worker), "
        f"got {got!r}."
    )


def custom_worker_refused() -> str:
    return (
        "vecmode.AsyncVectorEnv takes no worker=: its workers run vecmode's command "
        "runner, which a custom Gymnasium worker function cannot stand in for. Put "
        "the custom behaviour in the sub-env (a gymnasium.Wrapper in its env_fn), "
        "or use gymnasium.vector.AsyncVectorEnv for a custom worker."
    )


def max_concurrency_refused(value: Any) -> str:
    return (
        f"vecmode.AsyncVectorEnv takes no max_concurrency= (got {value!r}): each "
        f"worker steps its sub-envs one after the other, so num_workers={value!r} "
        f"steps at most {value!r} sub-env(s) at once; pass that instead."
    )
