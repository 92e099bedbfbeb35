"""What the async core (worker processes) and the Ray core (actors) share: the
core's API and Gymnasium's async surface over slices of sub-envs, each served by
a :class:`vecmode.worker.SliceServer`. A backend supplies the transport."""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any, NoReturn, cast

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, MultiBinary, MultiDiscrete
from gymnasium.vector import utils

from vecmode import core, errors, runner, worker
from vecmode.infos import add_infos
from vecmode.modes import CORE_MODE
from vecmode.runner import Failure, build_env, checked_writer, row_writer

_STEPS = (int(core.Command.STEP), int(core.Command.STEP_THEN_RESET))
_ARRAY_ACTIONS = (Box, MultiDiscrete, MultiBinary)

#: Seconds building may take when ``timeout`` is set (the larger of the two counts).
BUILD_GRACE = 60.0
#: Seconds ``close()`` gives the sub-envs to close by default; after a call was
#: interrupted (Ctrl-C), at most ``INTERRUPTED_GRACE``: the call may be hung.
CLOSE_GRACE, INTERRUPTED_GRACE = 5.0, 1.0

#: This process's id (kept: ``os.getpid()`` is a system call).
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


#: Builds the message for the sub-envs ``start .. stop - 1`` (None: nothing to send).
MessageFor = Callable[[int, int], "tuple[Any, ...] | None"]


def _call_name(commands: Sequence[int]) -> str:
    return "step" if any(c in _STEPS for c in commands) else "reset"


def _close_copy(env: gym.Env, index: int) -> None:
    try:
        env.close()
    except Exception as exc:
        raise Failure.caught(index, errors.BUILDING_CLOSE, exc).as_error() from exc


class RemoteCore(core.VectorCore):
    """A vecmode core whose sub-envs run in slices elsewhere; a subclass calls
    :meth:`_setup` and :meth:`_construct`, and supplies the transport."""

    #: Each sub-env's observation (where not written into :attr:`_rows`).
    _env_obs: list[Any]
    _rows: np.ndarray | None
    _observations: Any
    #: The ``(start, stop)`` of each remote slice's sub-envs.
    _remote_slices: Sequence[tuple[int, int]]
    #: The pending ``*_async`` call: ``(name, what its ``*_wait`` needs)``.
    _pending: tuple[str, Any] | None

    def __reduce_ex__(self, protocol: Any, how: str = "pickled") -> NoReturn:
        name = type(self).__name__
        raise TypeError(
            f"{name} cannot be {how}: a copy would share or break the processes "
            f"(or actors) running its sub-envs. Build another one: "
            f"{name}(envs.env_fns, ...)."
        )

    def __deepcopy__(self, memo: Any = None) -> NoReturn:
        self.__reduce_ex__(None, "copied")

    __copy__ = __deepcopy__

    def _setup(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        copy: bool,
        observation_mode: Any,
        timeout: float | None,
    ) -> None:
        """Check and set the shared attributes; read the spaces here."""
        env_fns = core.env_fn_list(env_fns)
        timeout = _checked_timeout(timeout, None)
        self.env_fns = env_fns
        self.num_envs = len(env_fns)
        self._owner = _pid
        #: Held for the whole of a call (``*_async`` to the end of ``*_wait``).
        self._in_call = threading.Lock()
        self._in_flight = ""
        self._outstanding = ""  # a call sent whose answers are not read yet
        self.copy = copy
        self.observation_mode = observation_mode
        self.timeout = timeout
        self.autoreset_mode = CORE_MODE
        self._pending = None
        self.closed = False
        self._read_spaces(observation_mode)
        spaces = (self.single_observation_space, self.single_action_space)
        self._spec = worker.SliceSpec(self.num_envs, *spaces, observation_mode)
        self._array_actions = type(self.action_space) in _ARRAY_ACTIONS
        self._env_obs = runner.unreset_rows(self)
        self._write_obs: Callable[[int, Any], None] = checked_writer(
            self.single_observation_space, self._env_obs.__setitem__
        )
        core.VectorCore.__init__(self)

    # ------------------------------------------------------------ construction
    #: The sub-envs whose worker was ended before they closed, at the shutdown.
    _unclosed: Sequence[int] = ()

    def _build_in_parent(self, index: int) -> gym.Env:
        return build_env(index, self.env_fns[index])

    def _read_spaces(self, observation_mode: Any) -> None:
        """The spaces and metadata, from sub-env 0 built here (as Gymnasium does)."""
        dummy = self._build_in_parent(0)
        try:
            self.metadata = {**dummy.metadata, "autoreset_mode": CORE_MODE}
            self.render_mode = dummy.render_mode
            self.single_action_space = dummy.action_space
            self.action_space = utils.batch_space(
                self.single_action_space, self.num_envs
            )
            if isinstance(observation_mode, tuple):
                if not all(isinstance(s, gym.Space) for s in observation_mode):
                    raise TypeError(  # Gymnasium's
                        f"Expected both elements of observation_mode to be Spaces, "
                        f"got {type(observation_mode[0])} and "
                        f"{type(observation_mode[1])}"
                    )
                self.observation_space, self.single_observation_space = observation_mode
            elif observation_mode == "same":
                self.single_observation_space = dummy.observation_space
                self.observation_space = utils.batch_space(
                    self.single_observation_space, self.num_envs
                )
            else:  # "different": as Gymnasium, build each sub-env to read its space
                env_spaces = [dummy.observation_space]
                for i in range(1, self.num_envs):
                    env = self._build_in_parent(i)
                    env_spaces.append(env.observation_space)
                    _close_copy(env, i)
                self.single_observation_space = env_spaces[0]
                self.observation_space = utils.batch_differing_spaces(env_spaces)
        finally:
            _close_copy(dummy, 0)

    def _construct(self, start: Callable[[float | None], list[Any]]) -> None:
        """Start the slices with ``start(limit)``; raise what their answers
        report, leaving nothing running."""
        limit = None if self.timeout is None else max(self.timeout, BUILD_GRACE)
        try:
            answers = start(limit)
            worker.raise_failure(answers)
            for answer in answers:
                if answer is not None:
                    worker.raise_built_problem(answer, self)
        except BaseException as exc:
            # the sub-envs are closed, unless a slice died, hangs or was cut short
            dead = isinstance(exc, errors.WorkerError)
            graceful = isinstance(exc, RuntimeError) and not dead
            grace = 1.0 if self._broken else 10.0
            self._shutdown(terminate=not graceful, timeout=grace)
            self.closed = True
            raise

    # ------------------------------------------ the transport (a backend's)
    @property
    def _broken(self) -> str | None:
        """Why the env cannot be used any more, or None."""
        raise NotImplementedError

    def _break(self, reason: str) -> None:
        """Record why the env cannot be used any more (the first reason stays)."""
        raise NotImplementedError

    def _send_each(
        self, encoded: dict[int, bytes], message_for: MessageFor, during: str
    ) -> Any:
        """Send each remote slice its pickled message; a token."""
        raise NotImplementedError

    def _collect(self, token: Any, timeout: float | None, during: str) -> list[Any]:
        """The answers, in sub-env order."""
        raise NotImplementedError

    def _stats(
        self, token: Any, answers: list[Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """New arrays of the rewards and flags, zero where nothing ran."""
        raise NotImplementedError

    def _leftovers(self) -> bool:
        """Whether workers (or actors) are left to stop."""
        raise NotImplementedError

    def _shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        """Close the sub-envs (unless ``terminate``), then stop every worker."""
        raise NotImplementedError

    def _layout(self) -> str:
        """``num_workers=...`` (or the like), for ``repr``."""
        raise NotImplementedError

    def _read_observations(self) -> None:
        if self._rows is None:
            self._observations = utils.concatenate(
                self.single_observation_space, self._env_obs, self._observations
            )

    def _batch_buffers(self) -> None:
        """The batch the answers' observations go into (a Box batch's rows)."""
        space, n = self.single_observation_space, self.num_envs
        self._observations = utils.create_empty_array(space, n=n, fn=np.zeros)
        self._rows = (
            self._observations
            if type(self.observation_space) is Box and self._observations.shape[0] == n
            else None
        )
        self._write_obs = (
            checked_writer(self.single_observation_space, self._env_obs.__setitem__)
            if self._rows is None
            else row_writer(self._rows)
        )

    def _send(self, message_for: MessageFor, during: str) -> Any:
        """:meth:`_send_each`, once every message pickled (else nothing sent)."""
        encoded = {}
        for start, stop in self._remote_slices:
            message = message_for(start, stop)
            if message is not None:
                try:
                    encoded[start] = pickle.dumps(message, worker.PROTOCOL)
                except Exception as exc:
                    raise errors.NotPicklableError(
                        f"what {during} sends to the sub-envs' processes cannot be "
                        f"pickled ({type(exc).__name__}: {exc}); nothing was sent. "
                        f"Pass values that pickle (no locks or open files, nothing "
                        f"defined inside a function)."
                    ) from exc
        try:
            token = self._send_each(encoded, message_for, during)
        except BaseException as exc:
            self._break(f"sending {during} was interrupted by {type(exc).__name__}")
            raise
        self._outstanding = during
        return token

    def _answers(self, token: Any, timeout: float | None, during: str) -> list[Any]:
        answers = self._collect(token, timeout, during)
        self._outstanding = ""
        return answers

    def _check_open(self) -> None:
        """Refuse a call to a closed env, a broken one, or a forked child's copy."""
        if self.closed:
            raise gym.error.ClosedEnvironmentError(
                core.env_closed_message(type(self).__name__)
            )
        broken = self._broken
        if broken is None and not self._owned():
            broken = (
                f"it belongs to process {self._owner}; this process ({os.getpid()}) "
                f"holds a copy forked from it (os.fork()), whose workers are the "
                f"parent's"
            )
        if broken is not None:
            raise errors.WorkerError(
                f"this {type(self).__name__} cannot be used any more: {broken}. "
                f"close() it and build a new one."
            )

    # ------------------------------------------------- one call at a time
    def _begin(self, what: str) -> None:
        """Begin a call, refusing one while another thread's is in progress."""
        if not self._in_call.acquire(blocking=False):
            self._usable(what)
            raise gym.error.AlreadyPendingCallError(
                f"{type(self).__name__} got {what}() while {self._in_flight}() was "
                f"in progress in another thread (or a sub-env it steps here); "
                f"nothing was sent. Give each thread an env of its own, or guard "
                f"the env with a lock.",
                what,
            )
        self._in_flight = what
        try:
            if self._outstanding and self._pending is None:
                # the last call was interrupted between sending and reading
                self._check_open()  # (a closed env's, a forked copy's: not drained)
                if not self._drained(self._outstanding):
                    self._break(
                        f"{self._outstanding} was interrupted before its answers "
                        f"were read"
                    )
                self._outstanding = ""
            self._usable(what)
        except BaseException:
            self._in_call.release()
            raise

    #: Whether a Ctrl-C interrupted the last call while it waited: a backend's.
    _interrupted = False

    def _drained(self, during: str) -> bool:
        """Whether the answers of ``during``, which a Ctrl-C interrupted while
        waiting, were read (and dropped) now, at most the env's timeout (else
        CLOSE_GRACE): a WorkerTimeoutError past it."""
        if not self._interrupted:  # (interrupted elsewhere: broken)
            return False
        limit = CLOSE_GRACE if self.timeout is None else self.timeout
        answers = self._drain(limit, f"{during} (interrupted by Ctrl-C)")
        try:
            worker.raise_failure(answers)
        except Exception as error:  # its sub-envs are lost: reset, they go on
            gym.logger.warn(f"the call Ctrl-C interrupted failed: {error}")
        return True

    def _drain(self, timeout: float, during: str) -> list[Any]:
        """The answers a Ctrl-C left unread: a backend's."""
        raise NotImplementedError

    def _round_trip(self, what: str, message_for: MessageFor, during: str) -> list[Any]:
        self._begin(what)
        try:
            return self._answers(self._send(message_for, during), self.timeout, during)
        finally:
            self._in_call.release()

    def _end_pending(self, pending: Any) -> None:
        """End the split call ``pending`` was, if this wait took it."""
        if pending is not None and self._pending is None and self._in_call.locked():
            self._in_call.release()

    def _dispatch(self, request: core.Request) -> core.Executed:
        self._begin(_call_name(request.commands))
        try:
            return super()._dispatch(request)
        finally:
            self._in_call.release()

    def _dispatch_async(self, name: str, request: core.Request) -> None:
        self._begin(f"{name}_async")
        try:
            super()._dispatch_async(name, request)
        except BaseException:
            self._in_call.release()
            raise

    def _dispatch_wait(self, name: str, timeout: float | None) -> core.Executed:
        pending = self._pending
        try:
            return super()._dispatch_wait(name, timeout)
        finally:
            self._end_pending(pending)

    def _usable(self, what: str) -> None:
        self._check_open()
        if self._pending is not None:
            pending = self._pending[0]
            raise gym.error.AlreadyPendingCallError(
                f"Calling `{what}` while waiting for a pending call to `{pending}` "
                f"to complete; call {pending}_wait() first.",
                pending,
            )

    def _split_actions(self, actions: Any) -> Any:
        """The actions as sent: None, the array, or one action per sub-env."""
        if actions is None:
            return None
        if self._array_actions and type(actions) is np.ndarray:
            return actions
        return list(utils.iterate(self.action_space, actions))

    # --------------------------------------------------------------- the core
    def _send_execute(self, request: core.Request) -> Any:
        cmds, actions, seeds, options = request
        split = self._split_actions(actions)
        return self._send(
            lambda start, stop: worker.slice_message(
                start, stop, cmds, split, seeds, options
            ),
            f"a {_call_name(cmds)}",
        )

    def _execute(self, request: core.Request) -> core.Executed:
        during = f"a {_call_name(request.commands)}"
        token = self._send_execute(request)
        return self._finish(request.commands, token, self.timeout, during)

    def _execute_async(self, name: str, request: core.Request) -> None:
        token = self._send_execute(request)
        self._pending = (name, (request.commands, token))

    def _execute_wait(
        self, name: str, timeout: float | None
    ) -> tuple[core.Executed, list[int]]:
        (commands, token), timeout = self._take_pending(name, timeout)
        try:
            return self._finish(commands, token, timeout, f"{name}_wait()"), commands
        except errors.SubEnvError:
            raise  # (it names the sub-envs lost)
        except BaseException:  # a Ctrl-C: the call's results are lost
            self._lose(core.ran_by(commands))
            raise

    def _finish(
        self, commands: list[int], token: Any, timeout: float | None, during: str
    ) -> core.Executed:
        answers = self._answers(token, timeout, during)
        if any(answer is not None and answer[0] == worker.FAILED for answer in answers):
            worker.raise_failure(answers, core.ran_by(commands))
        rewards, terminations, truncations = self._stats(token, answers)
        ended: list[int] = []
        finals: list[tuple[int, Any, dict[str, Any]]] = []
        infos: dict[str, Any] = {}
        for answer in answers:
            if answer is None:
                continue
            slice_ended, slice_infos, slice_finals, sent_obs = answer[1:5]
            ended += slice_ended or ()
            finals += slice_finals or ()
            if slice_infos:
                infos = add_infos(self.add_info, infos, slice_infos)
            if type(sent_obs) is worker.SliceRows:
                sent_obs.copy_into(cast(np.ndarray, self._rows), commands)
            elif sent_obs:
                self._write_sent(sent_obs, commands)
        self._read_observations()
        observations = (
            core.copy_batch(self._observations) if self.copy else self._observations
        )
        return core.Executed(
            observations, rewards, terminations, truncations, infos, ended, finals
        )

    def _write_sent(self, sent: list[tuple[int, Any]], commands: list[int]) -> None:
        write = self._write_obs
        for i, obs in sent:
            try:
                write(i, obs)
            except (ValueError, TypeError) as exc:
                failure = Failure.caught(i, "writing its observation", exc)
                raise failure.as_error(lost=core.ran_by(commands)) from exc

    # ------------------------------------------------ the split primitive
    def execute_async(
        self,
        commands: Sequence[int] | np.ndarray,
        actions: Any = None,
        *,
        seed: core.SeedLike = None,
        options: dict[str, Any] | list[dict[str, Any] | None] | None = None,
        name: str = "execute",
    ) -> None:
        """Send ``execute``'s call; ``name``: what the caller calls it ("step")."""
        cmds = self._commands(commands)
        self._usable(f"{name}_async")
        options = core.check_options(options, self.num_envs)
        request = core.Request(cmds, actions, self._seeds(seed), options)
        self._dispatch_async(name, request)

    def execute_wait(
        self, timeout: float | None = None, *, name: str = "execute"
    ) -> core.Executed:
        """The record of the call sent by :meth:`execute_async`."""
        return self._dispatch_wait(name, timeout)

    # ------------------------------------------------ Gymnasium's async surface
    def step_async(self, actions: Any) -> None:
        """Send the actions; :meth:`step_wait` returns the result."""
        self._dispatch_async("step", core.Request(self._all_step, actions))

    def step_wait(self, timeout: float | None = None) -> core.StepResult:
        """The result of the step sent by :meth:`step_async`."""
        return self._dispatch_wait("step", timeout)[:5]  # type: ignore[return-value]

    def reset_async(
        self, seed: core.SeedLike = None, options: dict[str, Any] | None = None
    ) -> None:
        """Send a reset (of all sub-envs, or those in ``options["reset_mask"]``)."""
        self._usable("reset_async")
        seeds, (commands, rest) = self._seeds(seed), self._reset_commands(options)
        self._dispatch_async("reset", core.Request(commands, None, seeds, rest))

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """``(obs, infos)`` of the reset sent by :meth:`reset_async`."""
        executed = self._dispatch_wait("reset", timeout)
        return executed.observations, executed.infos

    def _take_pending(self, what: str, timeout: Any) -> tuple[Any, float | None]:
        """The pending call ``what`` (it is taken) and the wait's timeout."""
        self._check_open()
        pending = self._pending
        if pending is None or pending[0] != what:
            had = pending and f" (the pending call is {pending[0]}_async())"
            raise gym.error.NoAsyncCallError(
                f"Calling `{what}_wait` without any prior call to `{what}_async`."
                f"{had or ''}",
                what,
            )
        timeout = _checked_timeout(timeout, self.timeout)  # (bad: still pending)
        self._pending = None
        return pending[1], timeout

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (or get it, if not callable)."""
        self.call_async(name, *args, **kwargs)
        return self.call_wait()

    def call_async(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Send a :meth:`call`; :meth:`call_wait` returns the results."""
        self._begin("call_async")
        try:
            core.check_call(name)
            message = (worker.CALL, name, args, kwargs)
            token = self._send(lambda *_: message, f"call({name!r})")
        except BaseException:
            self._in_call.release()
            raise
        self._pending = ("call", (name, token))

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """Wait for the results of :meth:`call_async`, one per sub-env."""
        pending = self._pending
        try:
            (name, token), timeout = self._take_pending("call", timeout)
            return _results(self._answers(token, timeout, f"call({name!r})"))
        finally:
            self._end_pending(pending)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env (a method is not called)."""
        message = (worker.GET_ATTR, name)
        during = f"get_attr({name!r})"
        return _results(self._round_trip("get_attr", lambda *_: message, during))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env: one value, or one per sub-env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(errors.set_attr_values(len(values), self.num_envs))
        answers = self._round_trip(
            "set_attr",
            lambda start, stop: (worker.SET_ATTR, name, list(values[start:stop])),
            f"set_attr({name!r})",
        )
        worker.raise_failure(answers)

    def each(
        self,
        fn: Callable[..., Any],
        *args: Any,
        indices: int | Sequence[int] | None = None,
    ) -> tuple[Any, ...]:
        """``fn(sub_env, *args)`` for each sub-env at ``indices`` (all by default)."""
        order = core.check_indices(indices, self.num_envs)
        during = f"each({getattr(fn, '__name__', 'fn')})"
        wrapped = utils.CloudpickleWrapper(fn)
        asked: list[list[int]] = []  # each message's sub-envs, in order

        def message_for(start: int, stop: int) -> tuple[Any, ...] | None:
            mine = [i for i in order if start <= i < stop]
            if not mine:
                return None
            asked.append(mine)
            return (worker.EACH, during, wrapped, args, [i - start for i in mine])

        answers = [a for a in self._round_trip("each", message_for, during) if a]
        worker.raise_failure(answers)
        # a sub-env asked twice ran twice: its results in the order asked
        results: dict[int, list[Any]] = {}
        for mine, answer in zip(asked, answers, strict=True):
            for i, result in zip(mine, answer[1], strict=True):
                results.setdefault(i, []).append(result)
        return tuple(results[i].pop(0) for i in order)

    def render(self) -> tuple[Any, ...] | None:
        """The frames of every sub-env (``call("render")``)."""
        return self.call("render")

    @property  # type: ignore[misc]
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """The ``np_random_seed`` of every sub-env."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Copies of the ``np_random`` generator of every sub-env."""
        return self.get_attr("np_random")

    # ----------------------------------------------------------------- closing
    def close(self, **kwargs: Any) -> None:
        """Close the sub-envs and stop the workers (see :meth:`close_extras`)."""
        if self.closed:
            if self._leftovers():  # an interrupted close left some
                self._shutdown(terminate=True)
            return
        if kwargs.get("timeout") is not None and not kwargs.get("terminate"):
            kwargs["timeout"] = _checked_timeout(kwargs["timeout"], None, zero=True)
        super().close(**kwargs)

    def close_extras(
        self, timeout: float | None = None, terminate: bool = False, **kwargs: Any
    ) -> None:
        """Close the sub-envs and stop the workers (or actors), leaving none.

        Args:
            timeout: seconds the sub-envs may take to close before the workers
                are ended; None: the env's ``timeout``, else :data:`CLOSE_GRACE`
                (at most 1 s after an interrupted call).
            terminate: end the workers at once, without closing the sub-envs.

        Raises:
            SubEnvError: a sub-env's ``close()`` raised (after everything closed).
        """
        if not self._owned():
            return  # a forked child's copy
        pending, self._pending = self._pending, None
        broken = self._broken
        if broken is not None and "timed out" in broken:
            terminate = True  # the workers may be stuck in the call
        if timeout is None:
            timeout = CLOSE_GRACE if self.timeout is None else self.timeout
            if self._interrupted or (broken is not None and "interrupted" in broken):
                timeout = min(timeout, INTERRUPTED_GRACE)
        failures = self._shutdown(terminate, timeout)
        try:
            if self._unclosed:
                gym.logger.warn(
                    f"sub-env(s) {', '.join(map(str, self._unclosed))} did not close "
                    f"within {timeout} s: their worker (or Ray actor) was ended, so "
                    f"their close() may not have finished."
                )
            if pending is not None:  # after the shutdown: an error leaks nothing
                gym.logger.warn(
                    f"Calling `close` while waiting for a pending call to "
                    f"`{pending[0]}` to complete."
                )
        finally:
            worker.raise_failure([(worker.FAILED, failures)] if failures else [])

    def _owned(self) -> bool:
        return getattr(self, "_owner", None) in (None, _pid)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not self.closed and self._owned() and self._leftovers():
                self.close(terminate=True)

    def __repr__(self) -> str:
        spec = getattr(self, "spec", None)
        head = f"{spec.id}, " if spec is not None else ""
        layout = f"num_envs={self.num_envs}, {self._layout()}"
        return f"{type(self).__name__}({head}{layout})"


def _checked_timeout(
    timeout: Any, default: float | None, zero: bool = False
) -> float | None:
    """``timeout``, or ``default`` for None; a ValueError for anything but a
    number of seconds > 0 (``zero``: >= 0; NaN neither)."""
    number = isinstance(timeout, Real) and not isinstance(timeout, bool)
    if timeout is None:
        return default
    if not (number and (timeout >= 0 if zero else timeout > 0)):
        raise ValueError(
            f"timeout must be None or {'>=' if zero else '>'} 0 seconds (an int or "
            f"float), got {timeout!r}."
        )
    return float(timeout)


def _results(answers: list[Any]) -> tuple[Any, ...]:
    worker.raise_failure(answers)
    return tuple(result for answer in answers for result in answer[1])
