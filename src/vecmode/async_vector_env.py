"""The multi-process core: sub-envs in worker processes, one round trip per call.

Each worker process holds a contiguous slice of the sub-envs (:mod:`vecmode.layout`)
and runs it with the same command runner as the sync core (:mod:`vecmode.worker`).
A call to :meth:`~vecmode.VectorCore.execute` (so every ``step`` and ``reset``,
whatever the autoreset policy on top) sends each worker that has work one message
with its slice's commands, actions, seeds and options (:mod:`vecmode.pool`); the
worker writes observations, rewards and flags to shared memory and answers with one
message holding only its non-empty infos, the sub-envs whose episode ended and the
final observations of those reset within the call. The parent merges the infos in
sub-env order with Gymnasium's ``_add_info``, so the record is exactly the sync
env's.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    CustomSpaceError,
    NoAsyncCallError,
)
from gymnasium.spaces import Box, MultiBinary, MultiDiscrete
from gymnasium.vector.utils import (
    CloudpickleWrapper,
    batch_differing_spaces,
    batch_space,
    concatenate,
    create_empty_array,
    iterate,
)

from vecmode import errors
from vecmode.core import (
    Command,
    Executed,
    Request,
    StepResult,
    VectorCore,
    check_call,
    check_core_arguments,
    check_indices,
    copy_batch,
    env_closed,
)
from vecmode.errors import SharedMemorySpaceError, SubEnvError, WorkerError
from vecmode.layout import default_layout, slices, spin_seconds
from vecmode.modes import CORE_MODE, ModeLike
from vecmode.pool import Worker, WorkerPool
from vecmode.worker import (
    CALL,
    CLOSE,
    EACH,
    EXECUTE,
    FAILED,
    GET_ATTR,
    OK,
    PROTOCOL,
    SET_ATTR,
    SHARED,
    STATS_SPACE,
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

_KEEP, _STEP, _RESET, _STEP_THEN_RESET = (int(c) for c in Command)
_ARRAY_ACTIONS = (Box, MultiDiscrete, MultiBinary)
#: ``call`` may not run these: they would bypass the core's bookkeeping.


def _raise_failure(answers: Sequence[Any], lost: Sequence[int] = ()) -> None:
    """Raise the :class:`~vecmode.SubEnvError` of the lowest failed sub-env among
    the answers (naming the others and the sub-envs whose state was ``lost``), if
    any failed."""
    failures: list[RemoteFailure] = sorted(
        (f for a in answers if a is not None and a[0] == FAILED for f in a[1]),
        key=lambda f: f.index,
    )
    if failures:
        raise failures[0].error(tuple(f.index for f in failures[1:]), tuple(lost))


#: Seconds the workers may take to build their sub-envs when ``timeout`` is set
#: (the larger of the two counts); with no ``timeout``, as long as they need (a
#: worker that dies is reported at once all the same).
BUILD_GRACE = 60.0

#: Seconds ``close()`` gives the workers to close their sub-envs (when neither
#: ``close(timeout=...)`` nor the env's ``timeout`` says otherwise), before it
#: terminates them.
CLOSE_GRACE = 5.0


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
                :class:`vecmode.WorkerTimeoutError` (building the sub-envs may take
                :data:`BUILD_GRACE`, a minute, if that is more); None: no limit (a
                worker that dies is still reported at once).
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
            raise ValueError(no_env_fns())
        if num_workers is not None and (
            isinstance(num_workers, bool)
            or not isinstance(num_workers, (int, np.integer))
            or num_workers < 1
        ):
            raise ValueError(num_workers_message(num_workers))
        if in_parent is not None and (
            isinstance(in_parent, bool)
            or not isinstance(in_parent, (int, np.integer))
            or not 0 <= in_parent < len(env_fns)
        ):
            raise ValueError(in_parent_message(in_parent, len(env_fns)))
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
        self.autoreset_mode = CORE_MODE
        self.num_workers, self.in_parent = default_layout(
            self.num_envs,
            None if num_workers is None else int(num_workers),
            None if in_parent is None else int(in_parent),
        )
        self._pool = WorkerPool()
        #: The sub-envs the parent steps itself (the last ``in_parent``), and the
        #: message it has still to carry out for them.
        self._local: SliceServer | None = None
        self._local_message: tuple[Any, ...] | None = None
        #: The observations' shared memory, where they must be read after a call.
        self._obs_memory: Any = None
        self._pending: tuple[str, Any] | None = None
        self.closed = False
        self._read_spaces(observation_mode)
        super().__init__()
        ctx = multiprocessing.get_context(context)
        memory = self._create_memory(ctx)
        self._start(ctx, memory)

    # ------------------------------------------------------------ construction
    def _build_in_parent(self, index: int) -> gym.Env:
        """Build sub-env ``index`` here, to read its spaces (as Gymnasium does)."""
        try:
            return self.env_fns[index]()
        except Exception as exc:
            raise SubEnvError(
                index, "env_fn", type(exc).__name__, str(exc), traceback.format_exc()
            ) from exc

    def _read_spaces(self, observation_mode: Any) -> None:
        """The spaces and metadata, from sub-env 0 built here (as Gymnasium does)."""
        dummy = self._build_in_parent(0)
        try:
            self.metadata = {**dummy.metadata, "autoreset_mode": CORE_MODE}
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
        else:
            self._observations = create_empty_array(space, n=n, fn=np.zeros)
        self._env_obs: list[Any] = [None] * n
        self._rows: np.ndarray | None = (
            self._observations
            if not self.shared_memory
            and type(self.observation_space) is Box
            and self._observations.shape[0] == n
            else None
        )
        stats_memory = create(STATS_SPACE, n, ctx)
        self._rewards, self._terminations, self._truncations = view(
            STATS_SPACE, stats_memory, n
        )
        self._array_actions = type(self.action_space) in _ARRAY_ACTIONS
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
        spin = spin_seconds(self.num_workers, self.in_parent)

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
            )

        try:
            self._pool.start(
                ctx,
                slices(self.num_envs - self.in_parent, self.num_workers),
                worker_main,
                args,
                type(self).__name__,
                self.daemon,
            )
            # building sub-envs (and, with spawn, importing their modules) may take
            # longer than a step: the timeout grants construction at least a minute
            limit = None if self.timeout is None else max(self.timeout, BUILD_GRACE)
            answers = self._pool.collect(self._pool.workers, limit, "construction")
            _raise_failure(answers)
            if self.in_parent:
                answers.append(self._start_local(memory))
            for answer in answers:
                if answer is not None:
                    raise RuntimeError(self._mismatch_message(*answer[1:]))
        except BaseException as exc:
            # Workers that built their sub-envs close them; anything else (a dead
            # or stuck worker, an interrupt) terminates them all.
            self._close_local()
            graceful = isinstance(exc, (SubEnvError, RuntimeError)) and not isinstance(
                exc, WorkerError
            )
            self._pool.shutdown(terminate=not graceful, timeout=10.0)
            self.closed = True
            raise

    def _mismatch_message(self, what: str, index: int, got: Any) -> str:
        expected = (
            self.single_action_space
            if what == "action space"
            else self.single_observation_space
        )
        differs = (
            f"sub-env {index}'s {what} {got} differs from the first sub-env's "
            f"{expected}."
        )
        if what == "action space":
            return f"{differs} All sub-envs need the same action space."
        if self.observation_mode == "same":
            # Gymnasium's wording around ours (code and tests match it)
            return (
                f"{type(self).__name__}(..., observation_mode='same') however the "
                f"sub-environments observation spaces are not equivalent. {differs} "
                f"If this is intentional, use `observation_mode='different'` instead "
                f"(their shapes and dtypes must still agree)."
            )
        return f"{differs} Their shapes and dtypes must agree."

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
            if self._pool.broken is None:
                self._pool.broken = f"{during} was interrupted by {type(exc).__name__}"
            raise
        if answer is not None and answer[0] == OK:
            try:
                pickle.dumps(answer, PROTOCOL)
            except Exception as exc:
                answer = unpicklable(answer, exc)
        return answer

    # ------------------------------------------------------------ round trips
    @property
    def _broken(self) -> str | None:
        return self._pool.broken

    def _usable(self, what: str) -> None:
        if self.closed:
            raise ClosedEnvironmentError(env_closed(type(self).__name__))
        if self._pool.broken is not None:
            raise WorkerError(env_unusable(self._pool.broken))
        if self._pending is not None:
            raise AlreadyPendingCallError(
                already_pending(what, self._pending[0]), self._pending[0]
            )

    def _send_to_all(self, message: tuple[Any, ...], during: str) -> None:
        """Send ``message`` to every worker and queue it for the parent's share."""
        for worker in self._pool.workers:
            self._pool.send(worker, message, during)
        if self._local is not None:
            self._local_message = message

    def _send_execute(self, request: Request) -> list[Worker]:
        """Send each worker with work its slice of the call; return those workers."""
        cmds, actions, seeds, options = request
        split = self._split_actions(actions)
        busy = []
        try:
            for worker in self._pool.workers:
                message = self._slice_message(
                    worker.start, worker.stop, cmds, split, seeds, options
                )
                if message is not None:
                    self._pool.send(worker, message, "a step or reset")
                    busy.append(worker)
        except BaseException as exc:  # some workers have the call, others not
            if self._pool.broken is None:
                self._pool.broken = (
                    f"sending a call was interrupted by {type(exc).__name__}"
                )
            raise
        if self._local is not None:
            self._local_message = self._slice_message(
                self._local.first, self.num_envs, cmds, split, seeds, options
            )
        return busy

    def _split_actions(self, actions: Any) -> Any:
        """The actions as sent: None, :data:`SHARED` (written to shared memory),
        the array, or one action per sub-env."""
        rows = self._action_rows
        if actions is None:
            return None
        if (
            rows is not None
            and type(actions) is np.ndarray
            and actions.dtype == rows.dtype
            and actions.shape == rows.shape
        ):
            rows[...] = actions
            return SHARED
        if self._array_actions and type(actions) is np.ndarray:
            return actions
        return list(iterate(self.action_space, actions))

    @staticmethod
    def _slice_message(
        start: int,
        stop: int,
        cmds: list[int],
        split: Any,
        seeds: list[int | None] | None,
        options: dict[str, Any] | None,
    ) -> tuple[Any, ...] | None:
        """The message for sub-envs ``start .. stop - 1``; None if all KEEP."""
        mine = cmds[start:stop]
        if mine.count(_KEEP) == len(mine):
            return None  # nothing to do there; its results are filled in later
        return (
            EXECUTE,
            mine,
            split if split is None or split is SHARED else split[start:stop],
            None if seeds is None else seeds[start:stop],
            options,
        )

    # --------------------------------------------------------------- the core
    def _execute(self, request: Request) -> Executed:
        commands = request.commands
        self._usable(
            "step" if _STEP in commands or _STEP_THEN_RESET in commands else "reset"
        )
        busy = self._send_execute(request)
        return self._finish(commands, busy, self.timeout, "a step or reset")

    def _execute_async(self, name: str, request: Request) -> None:
        self._usable(f"{name}_async")
        busy = self._send_execute(request)
        self._pending = (name, (request.commands, busy))

    def _execute_wait(
        self, name: str, timeout: float | None
    ) -> tuple[Executed, list[int]]:
        commands, busy = self._take_pending(name)
        executed = self._finish(
            commands,
            busy,
            self.timeout if timeout is None else timeout,
            f"{name}_wait()",
        )
        return executed, commands

    def _finish(
        self,
        commands: list[int],
        busy: list[Worker],
        timeout: float | None,
        during: str,
    ) -> Executed:
        """Collect the answers to an execute message; build the record.

        The parent's own sub-envs run first, while the workers run theirs.
        """
        local_busy = self._local_message is not None
        local = self._run_local(during)
        answers = self._pool.collect(busy, timeout, during)
        if self._local is not None:
            answers.append(local)
        # A failure: the call's results are lost, for every sub-env it ran.
        _raise_failure(answers, [i for i, c in enumerate(commands) if c != _KEEP])
        rewards, terminations, truncations = self._stats(busy, local_busy)
        ended: list[int] = []
        finals: list[tuple[int, Any, dict[str, Any]]] = []
        infos: dict[str, Any] = {}
        add_info = self._add_info
        env_obs = self._rows if self._rows is not None else self._env_obs
        for answer in answers:
            if answer is None:
                continue
            _, worker_ended, worker_infos, worker_finals, sent_obs = answer
            ended += worker_ended
            finals += worker_finals
            for i, info in worker_infos:
                infos = add_info(infos, info, i)
            if sent_obs:
                for i, obs in sent_obs:
                    env_obs[i] = obs
        if not self.shared_memory and self._rows is None:
            self._observations = concatenate(
                self.single_observation_space, env_obs, self._observations
            )
        elif self._obs_memory is not None:
            self._observations = view(
                self.single_observation_space, self._obs_memory, self.num_envs
            )
        return Executed(
            copy_batch(self._observations) if self.copy else self._observations,
            rewards,
            terminations,
            truncations,
            infos,
            ended,
            finals,
        )

    def _stats(
        self, busy: list[Worker], local_busy: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the rewards and flags; zero where nothing ran (idle workers,
        and an idle parent share, wrote nothing this call)."""
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

    # ------------------------------------------------ the split primitive
    def execute_async(
        self,
        commands: Sequence[int] | np.ndarray,
        actions: Any = None,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
        name: str = "execute",
    ) -> None:
        """Send :meth:`~vecmode.VectorCore.execute`'s call without waiting;
        :meth:`execute_wait` returns its record. ``name`` is the call as the
        caller sees it (``"step"``, ``"reset"``), for the pending-call errors."""
        cmds = self._commands(commands)
        self._usable(f"{name}_async")
        self._dispatch_async(name, Request(cmds, actions, self._seeds(seed), options))

    def execute_wait(
        self, timeout: float | None = None, *, name: str = "execute"
    ) -> Executed:
        """Wait for the call sent by :meth:`execute_async`; return its record.

        Args:
            timeout: seconds to wait; None: the env's ``timeout``.
            name: as given to :meth:`execute_async`.
        """
        return self._dispatch_wait(name, timeout)

    # ------------------------------------------------ Gymnasium's async surface
    def step_async(self, actions: Any) -> None:
        """Send the actions to the workers; :meth:`step_wait` returns the result.

        Raises:
            EpisodeEndedError: a sub-env whose episode ended would be stepped.
            AlreadyPendingCallError: another ``*_async`` call is pending.
        """
        self._dispatch_async("step", Request(self._all_step, actions))

    def step_wait(self, timeout: float | None = None) -> StepResult:
        """Wait for the step sent by :meth:`step_async` and return its result.

        Args:
            timeout: seconds to wait; None: the env's ``timeout``.

        Raises:
            NoAsyncCallError: no :meth:`step_async` is pending.
            WorkerTimeoutError: the step took longer than ``timeout``.
        """
        return self._dispatch_wait("step", timeout)[:5]  # type: ignore[return-value]

    def reset_async(
        self,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Send a reset (of all sub-envs, or those in ``options["reset_mask"]``)."""
        self._usable("reset_async")
        seeds = self._seeds(seed)
        commands, rest = self._reset_commands(options)
        self._dispatch_async("reset", Request(commands, None, seeds, rest))

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """Wait for the reset sent by :meth:`reset_async`; return ``(obs, infos)``.

        Args:
            timeout: seconds to wait; None: the env's ``timeout``.
        """
        executed = self._dispatch_wait("reset", timeout)
        return executed.observations, executed.infos

    def _take_pending(self, what: str) -> Any:
        if self.closed:
            raise ClosedEnvironmentError(env_closed(type(self).__name__))
        if self._pool.broken is not None:
            raise WorkerError(env_unusable(self._pool.broken))
        pending = self._pending
        if pending is None or pending[0] != what:
            raise NoAsyncCallError(
                nothing_pending(what, None if pending is None else pending[0]),
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
        check_call(name)
        self._send_to_all((CALL, name, args, kwargs), f"call({name!r})")
        self._pending = ("call", name)

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """Wait for the results of :meth:`call_async`, one per sub-env."""
        name = self._take_pending("call")
        return self._results(
            self.timeout if timeout is None else timeout, f"call({name!r})"
        )

    def _results(self, timeout: float | None, during: str) -> tuple[Any, ...]:
        answers = self._answers(timeout, during)
        _raise_failure(answers)
        return tuple(result for answer in answers for result in answer[1])

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env (like ``SyncVectorEnv.get_attr``:
        a method is returned, not called)."""
        self._usable("get_attr")
        self._send_to_all((GET_ATTR, name), f"get_attr({name!r})")
        return self._results(self.timeout, f"get_attr({name!r})")

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value for all, or a list or
        tuple of ``num_envs`` values."""
        self._usable("set_attr")
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        during = f"set_attr({name!r})"
        for worker in self._pool.workers:
            message = (SET_ATTR, name, list(values[worker.start : worker.stop]))
            self._pool.send(worker, message, during)
        if self._local is not None:
            self._local_message = (SET_ATTR, name, list(values[self._local.first :]))
        _raise_failure(self._answers(self.timeout, during))

    def each(
        self,
        fn: Callable[..., Any],
        *args: Any,
        indices: int | Sequence[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn(sub_env, *args)`` for each sub-env at ``indices`` (all by default,
        in the order given), in the process that runs it; the results in that order.

        ``fn`` travels with cloudpickle (a lambda is fine); ``args`` and the results
        are pickled. Only the workers holding one of the sub-envs are asked. A
        sub-env that raises gives a :class:`~vecmode.SubEnvError`, as in
        :meth:`call`.

        >>> import gymnasium as gym, vecmode
        >>> envs = vecmode.AsyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3,
        ...                               num_workers=1, context="fork")
        >>> envs.each(lambda env, name: env.get_wrapper_attr(name), "spec",
        ...           indices=[2, 0])[0].id
        'CartPole-v1'
        >>> envs.close()
        """
        self._usable("each")
        order = check_indices(indices, self.num_envs)
        during = f"each({getattr(fn, '__name__', 'fn')})"
        wrapped = CloudpickleWrapper(fn)
        parts: list[tuple[int, int]] = []  # the (start, stop) of each answer
        busy = []
        for worker in self._pool.workers:
            mine = [i - worker.start for i in order if worker.start <= i < worker.stop]
            if mine:
                self._pool.send(worker, (EACH, during, wrapped, args, mine), during)
                busy.append(worker)
                parts.append((worker.start, worker.stop))
        local = self._local
        if local is not None:
            mine = [i - local.first for i in order if i >= local.first]
            if mine:
                self._local_message = (EACH, during, wrapped, args, mine)
                parts.append((local.first, self.num_envs))
        answer = self._run_local(during)
        answers = self._pool.collect(busy, self.timeout, during)
        if answer is not None:
            answers.append(answer)
        _raise_failure(answers)
        results = [iter(a[1]) for a in answers]
        return tuple(
            next(results[next(n for n, (a, b) in enumerate(parts) if a <= i < b)])
            for i in order
        )

    def _answers(self, timeout: float | None, during: str) -> list[Any]:
        """The answers of every worker, then the parent's for its own sub-envs
        (run while the workers work)."""
        local = self._run_local()
        answers = self._pool.collect(self._pool.workers, timeout, during)
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
        return [worker.process for worker in self._pool.workers]

    # ----------------------------------------------------------------- closing
    def close(self, **kwargs: Any) -> None:
        """Close the sub-envs and stop the workers (see :meth:`close_extras`).

        Leaves no process behind, even when interrupted (Ctrl-C) or when a
        sub-env's ``close()`` raises: the env is closed then, every later call
        raises the closed-env error, and a second ``close()`` terminates whatever
        an interrupted first one left.
        """
        if self.closed:
            if self._pool.workers:  # an interrupted close left some: end them
                self._pool.shutdown(terminate=True)
            return
        super().close(**kwargs)

    def close_extras(
        self, timeout: float | None = None, terminate: bool = False, **kwargs: Any
    ) -> None:
        """Close the sub-envs and stop the workers; leaves no process behind.

        Args:
            timeout: seconds to wait for the workers to close their sub-envs
                before they are terminated; None: the env's ``timeout`` if set,
                else :data:`CLOSE_GRACE` (5 s). A worker still busy with an
                interrupted or timed-out call is given the same grace, then
                terminated.
            terminate: terminate the workers at once, without closing the sub-envs.

        Raises:
            SubEnvError: a sub-env's ``close()`` raised, naming every sub-env whose
                close failed (after every sub-env was closed and every worker
                stopped).
        """
        if self._pending is not None:
            # as Gymnasium's AsyncVectorEnv (its answers are read and dropped below)
            gym.logger.warn(
                f"Calling `close` while waiting for a pending call to "
                f"`{self._pending[0]}` to complete."
            )
            self._pending = None
        if self._pool.broken is not None and "timed out" in self._pool.broken:
            terminate = True  # the workers may be stuck in the call
        if timeout is None:
            timeout = CLOSE_GRACE if self.timeout is None else self.timeout
        # the parent's own sub-envs are never stuck: close them in any case
        try:
            failures = self._close_local()
        finally:
            failures_in_workers = self._pool.shutdown(terminate, timeout)
        failures += failures_in_workers
        _raise_failure([(FAILED, failures)] if failures else [])

    def __del__(self) -> None:
        """Terminate the workers of an env that was never closed."""
        pool = getattr(self, "_pool", None)
        if pool is not None and pool.workers and not getattr(self, "closed", True):
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


# ------------------------------------------------------------------ messages
def env_unusable(reason: str) -> str:
    return f"this AsyncVectorEnv cannot be used any more: {reason}"


def already_pending(what: str, pending: str) -> str:
    # Gymnasium's wording first (code and tests match it), then what to do
    return (
        f"Calling `{what}` while waiting for a pending call to `{pending}` to "
        f"complete; call {pending}_wait() first."
    )


def nothing_pending(what: str, pending: str | None) -> str:
    had = f" (the pending call is {pending}_async())" if pending else ""
    return f"Calling `{what}_wait` without any prior call to `{what}_async`.{had}"


def num_workers_message(value: Any) -> str:
    return f"num_workers must be None or an int >= 1, got {value!r}."


def no_env_fns() -> str:
    return "env_fns must hold at least one function that creates a sub-env."


def in_parent_message(got: Any, num_envs: int) -> str:
    return (
        f"in_parent must be an int from 0 to {num_envs - 1} (the number of sub-envs "
        f"the parent process steps itself; at least one sub-env runs in a worker), "
        f"got {got!r}."
    )
