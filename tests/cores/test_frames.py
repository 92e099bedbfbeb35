"""vecmode.frames: the async core's messages in one system call each way.

The frames are multiprocessing's own wire format, so every test pairs our end
with a ``Connection``'s own methods, or ours with ours; the pool tests check that
messages read ahead (two in one read) are neither lost nor waited for.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import struct
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vecmode import frames
from vecmode.frames import FrameReader, frame_sender
from vecmode.pool import WorkerPool
from vecmode.worker import CLOSE, CLOSED, PROTOCOL

SIZES = [0, 1, 3, 4, 100, 16384, 16385, frames.CHUNK - 4, frames.CHUNK, 300_000]


def payload(n: int) -> bytes:
    return bytes(i % 251 for i in range(n))


@pytest.fixture
def pipe() -> Any:
    a, b = multiprocessing.Pipe()
    yield a, b
    a.close()
    b.close()


def in_thread(fn: Any, *args: Any) -> threading.Thread:
    """Run ``fn`` beside the test (a large frame fills the pipe's buffer)."""
    thread = threading.Thread(target=fn, args=args, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("n", SIZES)
def test_our_frames_are_connection_messages(pipe: Any, n: int) -> None:
    a, b = pipe
    thread = in_thread(frame_sender(a), payload(n))
    assert b.recv_bytes() == payload(n)
    thread.join()


@pytest.mark.parametrize("n", SIZES)
def test_connection_messages_read_as_frames(pipe: Any, n: int) -> None:
    a, b = pipe
    thread = in_thread(a.send_bytes, payload(n))
    assert bytes(FrameReader(b).recv()) == payload(n)
    thread.join()


def test_a_connections_pickled_object_reads_as_a_frame(pipe: Any) -> None:
    a, b = pipe
    a.send({"built": None, "x": [1, 2]})  # a worker's first answer is sent so
    assert pickle.loads(FrameReader(b).recv()) == {"built": None, "x": [1, 2]}


@pytest.mark.parametrize("sizes", [[3, 5], [0, 0, 0], [70_000, 10], [10, 70_000]])
def test_messages_read_together_come_out_one_by_one(pipe: Any, sizes: list) -> None:
    a, b = pipe
    thread = in_thread(lambda: [frame_sender(a)(payload(n)) for n in sizes])
    thread.join()  # all of them are in the pipe before the first read
    reader = FrameReader(b)
    for i, n in enumerate(sizes):
        assert bytes(reader.recv()) == payload(n)
        # the next one was read with this one (small ones), or is still in the pipe
        assert (reader.ready() or b.poll()) == (i + 1 < len(sizes))
    assert not reader.ready()
    assert not b.poll()


def test_a_message_split_across_reads_is_put_together(pipe: Any) -> None:
    a, b = pipe
    raw = struct.pack("!i", 6) + b"abcdef"
    reader = FrameReader(b)

    def dribble() -> None:
        for i in range(len(raw)):
            os.write(a.fileno(), raw[i : i + 1])
            time.sleep(0.002)

    thread = in_thread(dribble)
    assert bytes(reader.recv()) == b"abcdef"
    thread.join()


def test_the_long_header_is_read(pipe: Any) -> None:
    """Beyond 2 GiB Connection writes -1 and an 8-byte length: read it right
    (shown on a small message, written by hand)."""
    a, b = pipe
    os.write(a.fileno(), struct.pack("!iQ", -1, 5) + b"hello" + struct.pack("!i", 1))
    os.write(a.fileno(), b"!")
    reader = FrameReader(b)
    assert bytes(reader.recv()) == b"hello"
    assert bytes(reader.recv()) == b"!"


def test_the_end_of_the_pipe_is_eof(pipe: Any) -> None:
    a, b = pipe
    a.close()
    with pytest.raises(EOFError):
        FrameReader(b).recv()


def test_the_end_of_the_pipe_inside_a_message_is_eof(pipe: Any) -> None:
    a, b = pipe
    os.write(a.fileno(), struct.pack("!i", 10) + b"abc")
    a.close()
    with pytest.raises(EOFError):
        FrameReader(b).recv()


class NotAFileConnection:
    """A connection with no file descriptor to use (as Windows' pipes)."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)

    def recv_bytes(self) -> bytes:
        return self.sent.pop(0)

    def poll(self) -> bool:
        return bool(self.sent)


def test_without_a_file_descriptor_the_connections_methods_are_used() -> None:
    conn: Any = NotAFileConnection()
    frame_sender(conn)(b"one")
    frame_sender(conn)(b"two")
    reader = FrameReader(conn)
    assert reader.pending()
    assert reader.recv() == b"one"
    assert reader.recv() == b"two"
    assert not reader.pending()


# ------------------------------------------------------ in the worker pool
def answer_twice(start: int, stop: int, conn: Connection, inherited: list) -> None:
    """A worker that answers each message with TWO answers in one write (one
    ahead of time), and answers CLOSE with a stale answer and CLOSED together."""
    for other in inherited:
        other.close()
    reader = FrameReader(conn)
    count = 0

    def frame(obj: Any) -> bytes:
        data = pickle.dumps(obj, PROTOCOL)
        return struct.pack("!i", len(data)) + data

    while True:
        message = pickle.loads(reader.recv())
        if message[0] == CLOSE:
            os.write(conn.fileno(), frame(("stale",)) + frame((CLOSED, ["done"])))
            return
        count += 2
        os.write(conn.fileno(), frame(("answer", count - 1)) + frame(("answer", count)))


def test_an_answer_read_ahead_is_ready_without_waiting() -> None:
    pool = WorkerPool()
    ctx = multiprocessing.get_context("fork")
    pool.start(ctx, [(0, 1)], answer_twice, lambda *a: a, "frames-test", daemon=True)
    try:
        worker = pool.workers[0]
        pool.send_data(worker, pickle.dumps(("go",), PROTOCOL), "a call")
        assert pool.collect([worker], 5.0, "a call") == [("answer", 1)]
        # the second answer was read with the first: no poll would see it
        assert worker.reader.ready()
        started = time.monotonic()
        assert pool.collect([worker], 5.0, "a call") == [("answer", 2)]
        assert time.monotonic() - started < 0.4  # not a liveness period waited
        assert not worker.reader.ready()
        pool.send_data(worker, pickle.dumps(("go",), PROTOCOL), "a call")
        assert pool.collect([worker], 5.0, "a call") == [("answer", 3)]
        assert pool.collect([worker], 5.0, "a call") == [("answer", 4)]
    finally:
        # CLOSE is answered with a stale answer and CLOSED in one write
        failures = pool.shutdown(terminate=False, timeout=5.0)
    assert failures == ["done"]
    assert pool.workers == []


@settings(deadline=None)
@given(
    sizes=st.lists(st.integers(0, 70_000), min_size=1, max_size=6),
    cuts=st.lists(st.integers(1, 90_000), max_size=8),
    long_header=st.booleans(),
)
def test_any_messages_in_any_pieces_come_out_whole_and_in_order(
    sizes: list, cuts: list, long_header: bool
) -> None:
    """Messages (with Connection's short header, or its long one) written in
    arbitrary pieces, each piece its own write: the reader gives back exactly the
    messages, in order, whatever the reads it takes."""
    a, b = multiprocessing.Pipe()
    try:
        messages = [payload(n)[::-1] + bytes([i]) for i, n in enumerate(sizes)]
        stream = b"".join(
            (
                struct.pack("!iQ", -1, len(m))
                if long_header
                else struct.pack("!i", len(m))
            )
            + m
            for m in messages
        )
        points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
        pieces = [stream[x:y] for x, y in itertools.pairwise(points)]

        def write() -> None:
            for piece in pieces:
                os.write(a.fileno(), piece)
            a.close()  # then the end of the pipe: a reader never waits forever

        thread = in_thread(write)
        reader = FrameReader(b)
        assert [bytes(reader.recv()) for _ in messages] == messages
        thread.join()
        assert not reader.ready()
        with pytest.raises(EOFError):  # nothing was left over
            reader.recv()
    finally:
        a.close()
        b.close()
