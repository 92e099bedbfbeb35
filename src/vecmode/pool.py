"""The async core's process plumbing: starting worker processes, one message and
one answer per worker per call, waiting (with a timeout, noticing deaths at once)
and stopping them without leaving a process behind.

Nothing here knows what a sub-env or a mode is: :mod:`vecmode.worker` is what
runs in the processes, :class:`vecmode.AsyncVectorEnv` what drives them.
"""

from __future__ import annotations

import contextlib
import multiprocessing.process
import os
import pickle
import select
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn

from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector.utils import clear_mpi_env_vars

from vecmode.errors import WorkerError, WorkerTimeoutError, sub_envs, timed_out_remedy
from vecmode.frames import FrameReader, frame_sender
from vecmode.worker import CLOSE, CLOSED, PROTOCOL, Doorbell

__all__ = ["LIVENESS", "Worker", "WorkerPool"]

#: Seconds between checks that the workers being waited for are alive, beyond what
#: their pipes and sentinels say.
LIVENESS = 0.5

#: The worker processes started in this process (held weakly: forgotten when
#: their pools are).
_STARTED: weakref.WeakSet[Any] = weakref.WeakSet()


def _forget_workers_in_forked_child() -> None:
    """In a child forked with ``os.fork()``: the parent's workers are not its
    children. multiprocessing still lists them, so at the child's exit its atexit
    handler terminated them (daemonic workers) or waited for them, breaking the
    parent's env. (A process multiprocessing starts resets the list itself.)"""
    children = getattr(multiprocessing.process, "_children", None)
    for process in list(_STARTED):
        if children is not None:
            children.discard(process)
    _STARTED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers_in_forked_child)


class Worker:
    """The parent's handle on one worker process (running sub-envs start..stop-1)."""

    __slots__ = (
        "conn",
        "index",
        "process",
        "reader",
        "send",
        "sentinel",
        "start",
        "stop",
    )

    def __init__(
        self, index: int, start: int, stop: int, process: Any, conn: Connection
    ) -> None:
        self.index = index
        self.start = start
        self.stop = stop
        self.process = process
        self.conn = conn
        #: Reads the worker's answers from ``conn`` (see :mod:`vecmode.frames`).
        self.reader = FrameReader(conn)
        #: Sends a pickled message on ``conn`` (see :mod:`vecmode.frames`).
        self.send = frame_sender(conn)
        self.sentinel: int = process.sentinel

    @property
    def indices(self) -> range:
        return range(self.start, self.stop)


class WorkerPool:
    """Worker processes, each serving a contiguous slice of sub-envs.

    Once a worker died, or a call timed out or was interrupted, the pool is
    *broken* (:attr:`broken` says why): the pipes may be out of step, so every
    later call raises :class:`~vecmode.WorkerError`; :meth:`shutdown` still works.
    """

    def __init__(self, spin: float = 0.0) -> None:
        #: Seconds :meth:`collect` spins before it blocks on the pipes (see
        #: :func:`vecmode.layout.spin_seconds`).
        self.spin = spin
        #: The counters the workers and the parent spin on (where they spin).
        self.doorbell: Doorbell | None = None
        self.workers: list[Worker] = []
        #: Why the pool cannot be used any more, or None.
        self.broken: str | None = None
        # One poller over every pipe and process sentinel, built once: waiting on
        # it costs one system call (multiprocessing.connection.wait builds a
        # selector per call, which doubles a round trip's time).
        self._poller: Any = select.poll() if hasattr(select, "poll") else None
        self._by_fd: dict[int, tuple[Worker, bool]] = {}
        #: The pipes whose reader holds a whole answer already read (its pipe
        #: may look empty to a poll): ready, before any poll.
        self._buffered: set[int] = set()
        #: Whether a shutdown began (a wait sees one from another thread or a
        #: signal handler, or one that came between a call's send and its wait).
        self._shut_down = False
        #: The start method of the workers (set by :meth:`start`).
        self.method = "fork"

    # ------------------------------------------------------------------ start
    def start(
        self,
        ctx: Any,
        slices: Sequence[tuple[int, int]],
        target: Callable[..., None],
        args: Callable[[int, int, Connection, list[Connection]], tuple[Any, ...]],
        name: str,
        daemon: bool,
    ) -> None:
        """Start one process per ``(start, stop)`` slice, running
        ``target(*args(start, stop, child_end, inherited))``; ``inherited`` are the
        parent's ends of the pipes so far (with fork the child closes them)."""
        self.method = ctx.get_start_method()
        fork = self.method == "fork"
        parent_ends: list[Connection] = []
        try:
            with clear_mpi_env_vars():
                for w, (start, stop) in enumerate(slices):
                    parent_end, child_end = ctx.Pipe()
                    parent_ends.append(parent_end)
                    process = ctx.Process(
                        target=target,
                        name=f"Worker<{name}>-{w}",
                        args=args(
                            start, stop, child_end, list(parent_ends) if fork else []
                        ),
                        daemon=daemon,
                    )
                    try:
                        process.start()
                    except Exception as exc:
                        clearer = _start_error(exc, start, stop, self.method)
                        if clearer is None:
                            raise
                        raise clearer from exc
                    finally:
                        child_end.close()
                    _STARTED.add(process)
                    self._add(Worker(w, start, stop, process, parent_end))
        except BaseException:
            started = [w.conn for w in self.workers]
            for end in parent_ends:
                if end not in started:
                    end.close()
            raise

    def _add(self, worker: Worker) -> None:
        self.workers.append(worker)
        self._by_fd[worker.conn.fileno()] = (worker, True)
        self._by_fd[worker.sentinel] = (worker, False)
        if self._poller is not None:
            self._poller.register(worker.conn.fileno(), select.POLLIN)
            self._poller.register(worker.sentinel, select.POLLIN)

    # ------------------------------------------------------------- round trips
    def send_data(self, worker: Worker, data: bytes, during: str) -> None:
        """Send a pickled message to ``worker`` (a dead worker is a WorkerError)."""
        try:
            self._send(worker, data)
        except OSError:  # the worker is gone (EPIPE)
            self._died(worker, during)

    def _send(self, worker: Worker, data: bytes) -> None:
        worker.send(data)
        if self.doorbell is not None:  # after the send: the data is there to read
            self.doorbell.rang(worker.index)

    def collect(
        self,
        workers: Sequence[Worker],
        timeout: float | None,
        during: str,
        enough: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        """One answer from each of ``workers`` (in their order), or a WorkerError.

        Waits on the pipes and on the process sentinels together, so a worker that
        dies is reported at once whatever the timeout. ``enough``: an answer after
        which the others are not waited for (they are None then): a worker that
        failed to build its sub-envs, while the others are still building theirs.
        """
        answers: list[Any] = [None] * len(workers)
        if not workers:
            return answers
        waiting = {worker.index: n for n, worker in enumerate(workers)}
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while waiting:
                remaining = (
                    None if deadline is None else max(0.0, deadline - time.monotonic())
                )
                ready = self._ready(
                    LIVENESS if remaining is None else min(remaining, LIVENESS)
                )
                if not ready:
                    self._check_alive([workers[n] for n in waiting.values()], during)
                    if deadline is None or time.monotonic() < deadline:
                        continue
                    late = [workers[n] for n in waiting.values()]
                    self.broken = f"{during} timed out"
                    raise WorkerTimeoutError(
                        call_timed_out(during, timeout or 0.0, [w.index for w in late]),
                        [i for w in late for i in w.indices],
                    )
                self._read(ready, waiting, answers, during)
                if enough is not None and self._enough(enough, answers, during):
                    break
        except BaseException as exc:
            closed = self._failed_wait(exc, during)
            if closed is not None:
                raise closed from exc
            raise
        return answers

    def _failed_wait(
        self, exc: BaseException, during: str
    ) -> ClosedEnvironmentError | None:
        """A wait for answers raised ``exc``: the pool is broken (interrupted, a
        pipe error: the pipes may be out of step). If it was shut down meanwhile
        (from another thread, a signal handler), ``exc`` came from reading what
        that closed: the closed-env error to raise instead."""
        if self.broken is None:
            self.broken = f"{during} was interrupted by {type(exc).__name__}"
        if self._shut_down and _read_what_was_closed(exc):
            return ClosedEnvironmentError(closed_during(during))
        return None

    def _enough(
        self, enough: Callable[[Any], bool], answers: list[Any], during: str
    ) -> bool:
        """Whether an answer so far is ``enough``; then the others' answers stay
        unread, so the pool cannot be used for another call."""
        if not any(answer is not None and enough(answer) for answer in answers):
            return False
        self.broken = f"{during} failed"
        return True

    def _read(
        self, ready: list[int], waiting: dict[int, int], answers: list[Any], during: str
    ) -> None:
        """Read the answers that arrived; note the workers that died."""
        dead = []
        for fd in ready:
            found = self._by_fd.get(fd)
            if found is None:  # shut down meanwhile, from another thread
                raise ClosedEnvironmentError(closed_during(during))
            worker, is_pipe = found
            if worker.index not in waiting:
                # It answered already: this is its exit (EOF, sentinel) or a stale
                # answer to an abandoned call.
                try:
                    if not is_pipe:
                        raise EOFError
                    worker.reader.recv()
                    self._note_buffered(worker)
                except (EOFError, OSError):
                    self._forget(worker, during)
                continue
            if not is_pipe:
                dead.append(worker)
                continue
            try:
                answer = pickle.loads(worker.reader.recv())
            except (EOFError, OSError):
                self._died(worker, during)
            answers[waiting.pop(worker.index)] = answer
            self._note_buffered(worker)
        for worker in dead:
            if worker.index in waiting and not worker.reader.pending():
                self._died(worker, during)  # else: read its answer first

    def _note_buffered(self, worker: Worker) -> None:
        """Keep :attr:`_buffered` up to date after reading from ``worker``."""
        if worker.reader.ready():
            self._buffered.add(worker.conn.fileno())
        elif self._buffered:
            self._buffered.discard(worker.conn.fileno())

    def _check_alive(self, workers: list[Worker], during: str) -> None:
        """A process a worker forked may hold its pipe and sentinel open: ask the
        OS whether the worker itself is still there."""
        for worker in workers:
            if worker.process.exitcode is not None and not worker.reader.pending():
                self._died(worker, during)

    def _ready(self, timeout: float | None) -> list[int]:
        """The file descriptors (pipes, process sentinels) ready to read (after
        polling without blocking for :attr:`spin` seconds, where it spins)."""
        if self._buffered:
            return list(self._buffered)
        poller = self._poller
        if poller is not None:
            if self.spin and self.doorbell is not None:
                found = _spin(poller, self.doorbell, self.spin)
                if found:
                    return found
            return [
                fd for fd, _ in poller.poll(None if timeout is None else timeout * 1000)
            ]
        objects = [obj for w in self.workers for obj in (w.conn, w.sentinel)]
        return [
            obj if isinstance(obj, int) else obj.fileno()
            for obj in wait(objects, timeout)
        ]

    def _forget(self, worker: Worker, during: str) -> None:
        """A worker died after it answered: this call stands, the next fails."""
        if self._poller is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._poller.unregister(worker.sentinel)
                self._poller.unregister(worker.conn.fileno())
        worker.process.join(1.0)
        if self.broken is None:
            self.broken = (
                f"worker process {worker.index} died during {during}"
                f" (exit code {worker.process.exitcode})"
            )

    def _died(self, worker: Worker, during: str) -> NoReturn:
        worker.process.join(1.0)
        self.broken = (
            f"worker process {worker.index} died during {during}"
            f" (exit code {worker.process.exitcode})"
        )
        message = worker_died(
            worker.index, worker.indices, worker.process.exitcode, during
        )
        if during == "construction" and self.method != "fork":
            message += started_by_import(self.method)
        raise WorkerError(message, worker.indices)

    # ---------------------------------------------------------------- shutdown
    def shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        """Stop every worker; return the failures of the sub-envs' ``close()``.

        Unless ``terminate``, each worker is asked to close its sub-envs, and
        waited for up to ``timeout`` seconds (None: no limit); then whatever is
        still alive is terminated, then killed. No process is left either way,
        even if the wait is interrupted (the interrupt then goes on up); a worker
        that could not be ended stays in :attr:`workers` for the next call.
        """
        workers = list(self.workers)
        self._shut_down = True
        self._poller = None
        self._by_fd = {}
        self._buffered = set()
        failures: list[Any] = []
        #: the workers that did not answer CLOSE in time: ended at once
        silent: list[Worker] = []
        try:
            if not terminate:
                live = [w for w in workers if w.process.is_alive()]
                for worker in live:
                    with contextlib.suppress(OSError):
                        self._send(worker, pickle.dumps((CLOSE,), PROTOCOL))
                failures = self._closed_answers(live, timeout, silent)
        except BaseException:
            terminate = True  # interrupted: end them all at once
            raise
        finally:
            remaining = list(workers)
            try:
                for worker in workers:
                    _end(worker, terminate or worker in silent)
                    remaining.remove(worker)
            finally:
                self.workers = remaining
        return failures

    @staticmethod
    def _closed_answers(
        live: list[Worker], timeout: float | None, silent: list[Worker]
    ) -> list[Any]:
        """Wait for each live worker's answer to CLOSE: their close() failures;
        those that did not answer by the ``timeout`` are added to ``silent``."""
        failures: list[Any] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        waiting = {w.conn: w for w in live}
        while waiting:
            remaining = (
                None if deadline is None else max(0.0, deadline - time.monotonic())
            )
            ready = [conn for conn, w in waiting.items() if w.reader.ready()] or wait(
                [*waiting, *(w.sentinel for w in waiting.values())],
                LIVENESS if remaining is None else min(remaining, LIVENESS),
            )
            if not ready:
                for conn, w in list(waiting.items()):
                    if w.process.exitcode is not None and not w.reader.pending():
                        del waiting[conn]  # gone (its pipe may be held open)
                if deadline is not None and time.monotonic() >= deadline:
                    silent += waiting.values()
                    break
                continue
            for obj in ready:
                failures += _closed_answer(obj, waiting)
        return failures


def _spin(poller: Any, doorbell: Doorbell, seconds: float) -> list[int]:
    """Spin up to ``seconds`` on the answer counters (not on the pipes: see
    :class:`~vecmode.worker.Doorbell`); the file descriptors ready then, or none."""
    before = doorbell.answers()  # read first: a later answer changes it
    found = poller.poll(0)
    clock = time.perf_counter
    end = clock() + seconds
    while not found and clock() < end:
        now = doorbell.answers()
        if now != before:
            before = now
            found = poller.poll(0)
    return [fd for fd, _ in found]


def _end(worker: Worker, terminate: bool) -> None:
    """Wait a moment for ``worker`` to exit (none if ``terminate``), then terminate
    it, then kill it; release its pipe."""
    process = worker.process
    process.join(0 if terminate else 1.0)
    if process.is_alive():
        process.terminate()
        process.join(1.0)
    if process.is_alive():
        process.kill()
        process.join()
    worker.conn.close()
    process.close()


def _closed_answer(obj: Any, waiting: dict[Any, Worker]) -> list[Any]:
    """Read what ``obj`` (a pipe or a sentinel that is ready) says during shutdown;
    drop the worker from ``waiting`` once it answered CLOSE or is gone."""
    if isinstance(obj, int):  # a sentinel: the process ended
        for conn, w in list(waiting.items()):
            if w.sentinel == obj and not w.reader.pending():
                del waiting[conn]
        return []
    if obj not in waiting:
        return []
    try:
        answer = pickle.loads(waiting[obj].reader.recv())
    except (EOFError, OSError):
        del waiting[obj]
        return []
    if answer is not None and answer[0] == CLOSED:
        del waiting[obj]
        return list(answer[1])
    return []  # a stale answer to an abandoned call; keep reading


# ------------------------------------------------------------------ messages
def closed_during(during: str) -> str:
    return (
        f"the env was closed during {during} (from another thread, a signal "
        f"handler, or a sub-env stepped in this process); its results are lost"
    )


def worker_died(
    worker: int, indices: Iterable[int], exitcode: int | None, during: str
) -> str:
    code = "" if exitcode is None else f" with exit code {exitcode}"
    signal_note = (
        f" (killed by signal {-exitcode})"
        if exitcode is not None and exitcode < 0
        else ""
    )
    return (
        f"worker process {worker} ({sub_envs(indices)}) died{code}{signal_note} "
        f"during {during}. Its sub-envs are lost, so the env cannot be used any "
        f"more: close() it and build a new one."
    )


def call_timed_out(during: str, timeout: float, workers: Iterable[int]) -> str:
    remedy = timed_out_remedy(during, "the workers", "terminates", "the sub-envs")
    return (
        f"{during} did not finish within timeout={timeout} s (worker(s) "
        f"{', '.join(map(str, workers))} had not answered). {remedy}"
    )


def _read_what_was_closed(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a wait during which the pool was shut down, is
    what reading the pipes and processes it closed raises (not an interrupt)."""
    return isinstance(exc, Exception) and not isinstance(exc, ClosedEnvironmentError)


def _start_error(
    exc: Exception, start: int, stop: int, method: str
) -> Exception | None:
    """A clearer error for a worker that could not be started (None: ``exc`` says
    it well enough): a daemonic parent, or what the start method pickles."""
    text = str(exc)
    if "daemonic processes are not allowed to have children" in text:
        # multiprocessing's own type, whatever the start method
        return AssertionError(daemonic_parent(start, stop, text))
    pickling = isinstance(exc, pickle.PicklingError) or "pickle" in text.lower()
    if method != "fork" and pickling:
        return TypeError(unpicklable_env_fns(start, stop, method, exc))
    return None


def daemonic_parent(start: int, stop: int, text: str) -> str:
    return (
        f"could not start the worker of {sub_envs(range(start, stop))}: {text}. "
        f"This process is daemonic (a multiprocessing.Pool worker, a torch "
        f"DataLoader worker, ...), and may not start processes of its own: build "
        f"a vecmode.SyncVectorEnv here instead, or the async env in a process that "
        f"is not daemonic (the main process, a concurrent.futures."
        f"ProcessPoolExecutor worker)."
    )


def unpicklable_env_fns(start: int, stop: int, method: str, exc: BaseException) -> str:
    return (
        f"could not start the worker of {sub_envs(range(start, stop))} with the "
        f"{method!r} start method: {type(exc).__name__}: {exc}. With 'spawn' and "
        f"'forkserver' a worker is sent its env_fns (pickled by cloudpickle) and "
        f"the env's spaces (pickled): make the env_fns, the env classes and any "
        f"custom space class importable and picklable (defined at the top level of "
        f"a module, not inside a function), or use context='fork'."
    )


def started_by_import(method: str) -> str:
    return (
        f" With the {method!r} start method a worker starts by importing the main "
        f"module, then unpickling what it is sent; its error is printed on its "
        f"standard error. If that says the process was started before the current "
        f"one finished bootstrapping, run the script's top-level code under "
        f"`if __name__ == '__main__':`; if it cannot find a class or function, "
        f"define it in an importable module, not in the main script or interactively."
    )
