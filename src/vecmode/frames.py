"""Messages on the async core's pipes in one system call each way, in the format
of ``Connection`` (which takes two), so either end may still use its methods."""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!iQ")
#: Bytes asked for by a read: a small message and its length in one read.
CHUNK = 65536
#: The longest message whose length ``Connection`` writes in 4 bytes.
_SHORT = 0x7FFFFFFF
#: Up to this size a message is copied behind its length (beyond: ``writev``).
_JOIN = 16384


def _fd(conn: Any) -> int | None:
    if os.name == "posix" and isinstance(conn, Connection):
        return conn.fileno()
    return None


def frame_sender(conn: Connection) -> Callable[[bytes], None]:
    """``conn.send_bytes``, in one ``write``."""
    fd = _fd(conn)
    if fd is None:
        return conn.send_bytes
    return functools.partial(_send, fd)


def _send(fd: int, data: bytes) -> None:
    n = len(data)
    header = _LENGTH.pack(n) if n <= _SHORT else _LONG_LENGTH.pack(-1, n)
    if n <= _JOIN:
        whole = header + data
        written = os.write(fd, whole)
        if written < len(whole):  # a signal came between two chunks
            _write_rest(fd, memoryview(whole)[written:])
        return
    written = os.writev(fd, [header, data])
    if written < len(header) + n:
        _write_rest(fd, memoryview(header + data)[written:])


def _write_rest(fd: int, rest: memoryview) -> None:
    while rest:
        rest = rest[os.write(fd, rest) :]


class FrameReader:
    """Reads the messages sent on one pipe, one ``read`` for a small one."""

    __slots__ = ("_buffer", "conn", "fd")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.fd = _fd(conn)
        #: What was read beyond the last message returned.
        self._buffer = bytearray()

    def ready(self) -> bool:
        """Whether a whole message is already read (the pipe may look empty)."""
        buffer = self._buffer
        return bool(buffer) and _split(buffer) is not None

    def pending(self) -> bool:
        """Whether a message (or the end of the pipe) can be read now."""
        return bool(self._buffer) or self.conn.poll()

    def recv(self) -> bytes | bytearray:
        """The next message (blocking); EOFError at the end of the pipe."""
        fd = self.fd
        if fd is None:
            return self.conn.recv_bytes()
        buffer = self._buffer
        if not buffer:  # the usual case: one read, one message
            data = os.read(fd, CHUNK)
            if len(data) >= 4:
                n = _LENGTH.unpack_from(data)[0]
                if len(data) == n + 4:
                    return data[4:]
            if not data:
                raise EOFError
            buffer += data
        return self._recv_rest(fd)

    def _recv_rest(self, fd: int) -> bytes | bytearray:
        buffer = self._buffer
        while True:
            found = _split(buffer)
            if found is not None:
                start, stop = found
                message = buffer[start:stop]
                del buffer[:stop]
                return message
            head = _head(buffer)
            want = CHUNK if head is None else max(CHUNK, sum(head) - len(buffer))
            data = os.read(fd, want)
            if not data:
                raise EOFError
            buffer += data


def _head(buffer: bytearray) -> tuple[int, int] | None:
    """``(header length, message length)`` once the header is read, else None."""
    if len(buffer) < 4:
        return None
    n = _LENGTH.unpack_from(buffer)[0]
    if n != -1:
        return 4, n
    if len(buffer) < _LONG_LENGTH.size:
        return None
    return _LONG_LENGTH.size, _LONG_LENGTH.unpack_from(buffer)[1]


def _split(buffer: bytearray) -> tuple[int, int] | None:
    """Where the first whole message in ``buffer`` starts and stops, if any."""
    head = _head(buffer)
    if head is None or len(buffer) < head[0] + head[1]:
        return None
    return head[0], head[0] + head[1]
