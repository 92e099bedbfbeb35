"""The async core's worker processes: started, one message and one answer each per
call (noticing deaths at once), and stopped without leaving a process behind."""

from __future__ import annotations

import atexit
import contextlib
import gc
import multiprocessing.process
import multiprocessing.util  # (its exit function, registered first, runs after ours)
import os
import pickle
import select
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn

from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector.utils import clear_mpi_env_vars

from vecmode import errors
from vecmode.frames import FrameReader, frame_sender
from vecmode.worker import CLOSE, CLOSED, PROTOCOL, Doorbell

#: Seconds between checks that the workers waited for are alive.
LIVENESS = 0.5

#: The worker processes started in this process (forgotten with their pools).
_STARTED: weakref.WeakSet[Any] = weakref.WeakSet()
#: The pools of non-daemonic workers not shut down yet.
_NOT_DAEMONIC: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


def next_wait(deadline: float | None) -> float:
    """Seconds to wait next: :data:`LIVENESS`, or less to meet ``deadline``."""
    if deadline is None:
        return LIVENESS
    return max(0.0, min(deadline - time.monotonic(), LIVENESS))


#: Whether this process is forking one of its workers (read in the child).
_FORKING_A_WORKER = False


def _forget_workers_in_forked_child() -> None:
    """In a child forked with ``os.fork()``, unlist the parent's workers. A
    worker freezes what it inherited (:func:`gc.freeze`) before running any
    Python code: a finaliser of the parent's objects (torch's, Ray's) may not
    survive a fork, and the worker must never run one."""
    if _FORKING_A_WORKER:
        gc.freeze()
    children = getattr(multiprocessing.process, "_children", None)
    for process in list(_STARTED):
        if children is not None:
            children.discard(process)
    _STARTED.clear()
    _NOT_DAEMONIC.clear()  # (not the child's to shut down at its exit)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers_in_forked_child)


@atexit.register
def _shut_down_at_exit() -> None:
    """Shut down the pools of non-daemonic workers left open: the interpreter
    would wait for their workers forever (daemonic ones it ends itself)."""
    for pool in list(_NOT_DAEMONIC):
        with contextlib.suppress(Exception):
            pool.shutdown(terminate=False, timeout=5.0)


class Worker:
    """The parent's handle on one worker process."""

    def __init__(
        self, index: int, start: int, stop: int, process: Any, conn: Connection
    ) -> None:
        self.index = index
        self.start = start
        self.stop = stop
        self.process = process
        self.conn = conn
        self.reader = FrameReader(conn)
        self.send = frame_sender(conn)
        self.sentinel: int = process.sentinel

    @property
    def indices(self) -> range:
        return range(self.start, self.stop)


class WorkerPool:
    """Worker processes, each serving a slice of sub-envs; :attr:`broken` says why
    the pool cannot be used (a worker died, a call timed out or was cut short)."""

    def __init__(self, spin: float = 0.0) -> None:
        #: Seconds :meth:`collect` spins before it blocks on the pipes.
        self.spin = spin
        self.doorbell: Doorbell | None = None
        self.workers: list[Worker] = []
        self.broken: str | None = None
        #: The workers whose answers a wait interrupted by Ctrl-C left unread.
        self.interrupted: list[Worker] | None = None
        # one poller, built once: a wait is one system call
        self._poller: Any = select.poll() if hasattr(select, "poll") else None
        self._by_fd: dict[int, tuple[Worker, bool]] = {}
        #: The pipes whose reader holds a whole answer already.
        self._buffered: set[int] = set()
        self._shut_down = False
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
        ``target(*args(start, stop, child_end, parent_ends_so_far))``."""
        global _FORKING_A_WORKER
        self.method = ctx.get_start_method()
        fork = self.method == "fork"
        if not daemon:
            _NOT_DAEMONIC.add(self)
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
                    _FORKING_A_WORKER = fork
                    try:
                        process.start()
                    except Exception as exc:
                        _raise_start_error(exc, range(start, stop), self.method)
                    finally:
                        _FORKING_A_WORKER = False
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
        try:
            self._send(worker, data)
        except OSError:  # the worker is gone
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
        """One answer from each of ``workers`` (a WorkerError at once for a death);
        after an answer that is ``enough``, the others are not waited for."""
        answers: list[Any] = [None] * len(workers)
        waiting = {worker.index: n for n, worker in enumerate(workers)}
        deadline = None if timeout is None else time.monotonic() + timeout
        polling = False
        try:
            while waiting:
                polling = True
                ready = self._ready(next_wait(deadline))
                polling = False
                if not ready:
                    late = [workers[n] for n in waiting.values()]
                    self._nothing_came(late, deadline, timeout, during)
                    continue
                self._read(ready, waiting, answers, during)
                if enough is not None and self._enough(enough, answers, during):
                    break
        except BaseException as exc:
            unread = [workers[n] for n in waiting.values()] if polling else []
            self._stopped(exc, unread, during)
            raise
        return answers

    def _stopped(self, exc: BaseException, unread: list[Worker], during: str) -> None:
        """Why :meth:`collect` stopped: a Ctrl-C while polling (nothing half
        read) leaves ``unread``'s answers to :meth:`drain`; else the pool is
        broken (the pipes may be out of step). Shut down meanwhile (another
        thread, a signal handler): the closed-env error."""
        if unread and isinstance(exc, KeyboardInterrupt) and self.broken is None:
            self.interrupted = unread
        elif self.broken is None:
            self.broken = f"{during} was interrupted by {type(exc).__name__}"
        ours = isinstance(exc, ClosedEnvironmentError)
        if self._shut_down and isinstance(exc, Exception) and not ours:
            message = errors.closed_during_message(during)
            raise ClosedEnvironmentError(message) from exc

    def drain(self, timeout: float | None, during: str) -> list[Any]:
        """The answers of the call a Ctrl-C interrupted (a WorkerTimeoutError,
        the pool broken, if they take over ``timeout``)."""
        workers, self.interrupted = self.interrupted or [], None
        return self.collect(workers, timeout, during)

    def _nothing_came(
        self,
        late: list[Worker],
        deadline: float | None,
        timeout: float | None,
        during: str,
    ) -> None:
        """No answer in a while: raise for a dead worker, or past the deadline."""
        self._check_alive(late, during)
        if deadline is None or time.monotonic() < deadline:
            return
        self.broken = f"{during} timed out"
        each = (f"{w.index} ({errors.sub_envs(w.indices)})" for w in late)
        workers = f"worker(s) {', '.join(each)}"
        message = errors.timed_out_message(
            during, timeout, workers, "the workers", "terminates"
        )
        raise errors.WorkerTimeoutError(message, [i for w in late for i in w.indices])

    def _enough(
        self, enough: Callable[[Any], bool], answers: list[Any], during: str
    ) -> bool:
        """Whether an answer so far is ``enough`` (then the pool is broken)."""
        if not any(answer is not None and enough(answer) for answer in answers):
            return False
        self.broken = f"{during} failed"
        return True

    def _read(
        self, ready: list[int], waiting: dict[int, int], answers: list[Any], during: str
    ) -> None:
        """Read the answers that arrived; raise for a worker that died."""
        dead = []
        for fd in ready:
            found = self._by_fd.get(fd)
            if found is None:  # shut down meanwhile, from another thread
                raise ClosedEnvironmentError(errors.closed_during_message(during))
            worker, is_pipe = found
            if worker.index not in waiting:
                # it answered already: its exit, or a stale answer
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
        if worker.reader.ready():
            self._buffered.add(worker.conn.fileno())
        elif self._buffered:
            self._buffered.discard(worker.conn.fileno())

    def _check_alive(self, workers: list[Worker], during: str) -> None:
        """Raise for a worker the OS finds gone (its child may hold its pipe)."""
        for worker in workers:
            if worker.process.exitcode is not None and not worker.reader.pending():
                self._died(worker, during)

    def _ready(self, timeout: float | None) -> list[int]:
        """The pipes and sentinels ready to read (after spinning, if set)."""
        if self._buffered:
            return list(self._buffered)
        poller = self._poller
        if poller is not None:
            if self.spin and self.doorbell is not None:
                found = _spin(poller, self.doorbell, self.spin)
                if found:
                    return found
            ms = None if timeout is None else timeout * 1000
            return [fd for fd, _ in poller.poll(ms)]
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
            self.broken = _death(worker, during)

    def _died(self, worker: Worker, during: str) -> NoReturn:
        worker.process.join(1.0)
        self.broken = _death(worker, during)
        code = worker.process.exitcode
        signal = f" (killed by signal {-code})" if code is not None and code < 0 else ""
        todo = (
            "No env was built and no worker is left: fix what ended it (its stderr "
            "may say), then build the env again."
            if during == "construction"
            else "Its sub-envs are lost: close() the env and build a new one."
        )
        message = (
            f"worker process {worker.index} ({errors.sub_envs(worker.indices)}) died"
            f"{'' if code is None else f' with exit code {code}'}{signal} during "
            f"{during}. {todo}"
        )
        if during == "construction" and self.method != "fork":
            message += (
                f" With {self.method!r} a worker starts by importing the main module "
                f"(its error is on its stderr): guard the script's top-level code "
                f"with `if __name__ == '__main__':`, and define the classes and "
                f"functions it needs in an importable module."
            )
        raise errors.WorkerError(message, worker.indices)

    # ---------------------------------------------------------------- shutdown
    def shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        """Stop every worker, even when interrupted; the sub-envs' close()
        failures. Unless ``terminate``, each first gets ``timeout`` seconds to
        close its sub-envs (:attr:`unclosed`: those of the workers that did
        not answer in time). A worker that could not be ended stays listed."""
        workers = list(self.workers)
        self._shut_down = True
        _NOT_DAEMONIC.discard(self)
        self._poller = None
        self._by_fd = {}
        self._buffered = set()
        failures: list[Any] = []
        silent: list[Worker] = []
        try:
            if not terminate:
                live = [w for w in workers if w.process.is_alive()]
                for worker in live:
                    with contextlib.suppress(OSError):
                        self._send(worker, pickle.dumps((CLOSE,), PROTOCOL))
                failures = _closed_answers(live, timeout, silent)
        except BaseException:
            terminate = True
            raise
        finally:
            remaining = list(workers)
            try:
                for worker in workers:
                    _end(worker, terminate or worker in silent)
                    remaining.remove(worker)
            finally:
                self.workers = remaining
        self.unclosed = [i for w in silent for i in w.indices]
        return failures


def _death(worker: Worker, during: str) -> str:
    code = worker.process.exitcode
    return f"worker process {worker.index} died during {during} (exit code {code})"


def _closed_answers(
    live: list[Worker], timeout: float | None, silent: list[Worker]
) -> list[Any]:
    """The workers' close() failures; those silent at ``timeout`` go in ``silent``."""
    failures: list[Any] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    waiting = {w.conn: w for w in live}
    while waiting:
        ready = [conn for conn, w in waiting.items() if w.reader.ready()] or wait(
            [*waiting, *(w.sentinel for w in waiting.values())], next_wait(deadline)
        )
        for obj in ready:
            failures += _closed_answer(obj, waiting)
        if ready:
            continue
        for conn, w in list(waiting.items()):
            if w.process.exitcode is not None and not w.reader.pending():
                del waiting[conn]
        if deadline is not None and time.monotonic() >= deadline:
            silent += waiting.values()
            break
    return failures


def _closed_answer(obj: Any, waiting: dict[Any, Worker]) -> list[Any]:
    """Read a ready pipe or sentinel; drop its worker once it closed or is gone."""
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
    return []  # a stale answer: keep reading


def _spin(poller: Any, doorbell: Doorbell, seconds: float) -> list[int]:
    """Spin up to ``seconds`` on the answer counters; the fds ready then."""
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
    """Wait for ``worker`` to exit (unless ``terminate``), then end it."""
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


def _raise_start_error(exc: Exception, indices: range, method: str) -> NoReturn:
    """Raise a clearer error for a worker that could not be started."""
    text, which = str(exc), errors.sub_envs(indices)
    if "daemonic processes are not allowed to have children" in text:
        raise AssertionError(  # multiprocessing's own type
            f"could not start the worker of {which}: {text}. This process is "
            f"daemonic (a multiprocessing.Pool or torch DataLoader worker): build a "
            f"vecmode.SyncVectorEnv here, or the async env in the main process."
        ) from exc
    pickling = isinstance(exc, pickle.PicklingError) or "pickle" in text.lower()
    if method != "fork" and pickling:
        raise TypeError(
            f"could not start the worker of {which} with the {method!r} start "
            f"method: {type(exc).__name__}: {exc}. Define the env_fns, env classes "
            f"and custom spaces at the top level of a module (so they pickle), or "
            f"use context='fork'."
        ) from exc
    raise exc
