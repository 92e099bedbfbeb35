"""vecmode.pool: the worker processes' plumbing, driven by plain echo workers
(no sub-env, no vecmode worker): one answer per worker in order, a death or a
timeout noticed, an early stop, and a shutdown that leaves no process."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import time
from multiprocessing.connection import Connection

import pytest

from tests.cores.async_support import gone
from vecmode.errors import WorkerError, WorkerTimeoutError
from vecmode.frames import FrameReader, frame_sender
from vecmode.pool import LIVENESS, WorkerPool, next_wait
from vecmode.worker import CLOSE, CLOSED, PROTOCOL

SLICES = [(0, 2), (2, 3), (3, 5)]


def echo(start: int, stop: int, conn: Connection, inherited: list) -> None:
    """A worker answering each message with ``(start, stop, message)``; "die"
    ends the process, "sleep" sleeps before answering, CLOSE is answered with
    CLOSED and a failure naming it."""
    for other in inherited:
        other.close()
    reader, send = FrameReader(conn), frame_sender(conn)
    while True:
        message = pickle.loads(reader.recv())
        if message == (CLOSE,):
            send(pickle.dumps((CLOSED, [f"close of {start}"]), PROTOCOL))
            return
        if message == "die":
            os._exit(3)
        if message == "sleep":
            time.sleep(30)
        send(pickle.dumps((start, stop, message), PROTOCOL))


@pytest.fixture
def pool():
    pool = WorkerPool()
    ctx = multiprocessing.get_context("fork")
    pool.start(ctx, SLICES, echo, lambda *args: args, "pool-test", daemon=True)
    pids = [worker.process.pid for worker in pool.workers]
    yield pool
    pool.shutdown(terminate=True)
    assert pool.workers == [] and gone(pids)


def send(pool: WorkerPool, messages: dict[int, object]) -> None:
    for index, message in messages.items():
        pool.send_data(pool.workers[index], pickle.dumps(message, PROTOCOL), "a call")


def test_each_worker_answers_once_in_the_order_asked(pool):
    send(pool, {0: "a", 1: "b", 2: "c"})
    assert pool.collect(pool.workers, 5.0, "a call") == [
        (0, 2, "a"),
        (2, 3, "b"),
        (3, 5, "c"),
    ]
    send(pool, {2: "x", 0: "y"})  # a subset, asked in another order
    workers = [pool.workers[2], pool.workers[0]]
    assert pool.collect(workers, 5.0, "a call") == [(3, 5, "x"), (0, 2, "y")]
    assert pool.collect([], 5.0, "a call") == []
    assert pool.broken is None


def test_a_worker_that_dies_is_reported_at_once_without_a_timeout(pool):
    send(pool, {0: "a", 1: "die", 2: "c"})
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker process 1 \(sub-env 2\) died"):
        pool.collect(pool.workers, None, "a step")
    assert time.monotonic() - started < 5 * LIVENESS
    assert "worker process 1 died during a step" in pool.broken


def test_a_worker_that_does_not_answer_in_time_is_a_timeout(pool):
    send(pool, {0: "a", 1: "b", 2: "sleep"})
    started = time.monotonic()
    with pytest.raises(WorkerTimeoutError) as caught:
        pool.collect(pool.workers, 0.3, "a step")
    assert 0.3 <= time.monotonic() - started < 0.3 + 2 * LIVENESS
    assert caught.value.lost == (3, 4)  # the sleeping worker's sub-envs
    assert "(worker(s) 2 (sub-envs 3-4) had not answered)" in str(caught.value)
    assert pool.broken == "a step timed out"


def test_enough_stops_waiting_for_the_others(pool):
    send(pool, {0: "sleep", 1: "fail", 2: "c"})
    started = time.monotonic()
    answers = pool.collect(
        pool.workers, None, "construction", enough=lambda a: a[2] == "fail"
    )
    assert time.monotonic() - started < 5
    assert answers[0] is None and answers[1] == (2, 3, "fail")
    assert pool.broken == "construction failed"


def test_shutdown_collects_the_close_failures_and_ends_every_worker(pool):
    pids = [worker.process.pid for worker in pool.workers]
    failures = pool.shutdown(terminate=False, timeout=5.0)  # in arrival order
    assert sorted(failures) == ["close of 0", "close of 2", "close of 3"]
    assert pool.workers == [] and gone(pids)


def test_shutdown_ends_a_busy_worker_when_its_grace_is_up(pool):
    send(pool, {1: "sleep"})
    pids = [worker.process.pid for worker in pool.workers]
    started = time.monotonic()
    failures = pool.shutdown(terminate=False, timeout=0.5)
    # the sleeper is ended at once after the grace, not given a second more
    assert time.monotonic() - started < 1.4
    assert sorted(failures) == ["close of 0", "close of 3"]  # the sleeper: nothing
    assert pool.workers == [] and gone(pids)


def test_next_wait_is_the_liveness_period_or_what_is_left():
    assert next_wait(None) == LIVENESS
    assert next_wait(time.monotonic() - 1) == 0.0
    assert 0.0 < next_wait(time.monotonic() + LIVENESS / 2) <= LIVENESS / 2
    assert next_wait(time.monotonic() + 10 * LIVENESS) == LIVENESS
