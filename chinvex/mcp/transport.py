"""The stdio transport of `chinvex mcp`: newline-delimited JSON-RPC where every line is answered.

It replaces the SDK's `mcp.server.stdio.stdio_server`, which (SDK 2.3) reads unbounded lines and
passes the session an exception for a line it cannot validate; the session logs it and replies
nothing, so a client waits forever. Here a line is read with a bound (`LINE_MAX_BYTES`; the rest
of a longer line is skipped, never held), decoded by `chinvex.mcp.wire.decode_line` in a worker
thread (an 8 MB line must not stall the event loop), and either handed to the session or
answered at once with a JSON-RPC error. Responses and these errors share one writer, so frames
never interleave.

A request that arrives just before the end of input is still answered: at the end of input
the reader waits (up to `DRAIN_AFTER_EOF_SECONDS`) until every request it handed the session
has its response written, and only then closes the session's read stream (which cancels the
handlers still running). `printf '<request>\\n' | chinvex mcp` gets its reply.

Like the SDK's transport, it takes fd 0 and fd 1 for the wire while serving: fd 0 reads the null
device and fd 1 writes to stderr, so a library or child process that prints cannot corrupt the
protocol; both are restored on exit.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.message import SessionMessage

from chinvex.mcp.limits import LINE_MAX_BYTES
from chinvex.mcp.stdfds import claim_std_fds
from chinvex.mcp.wire import WireError, decode_line, oversized_line

DRAIN_AFTER_EOF_SECONDS = 300.0
"""How long requests already received may still run once the client has closed stdin: long
enough for a cold `chinvex_answer`, bounded so a stuck call cannot keep the process alive."""
_SKIP_CHUNK = 64 * 1024
_HEAD_KEPT = 64 * 1024
"""Of a line past the limit, the start kept to find its id in (clients write the id first)."""


class EndOfInput:
    """What `read_frame` returns when the client has closed its end."""


END = EndOfInput()
Frame = types.JSONRPCMessage | WireError | None | EndOfInput


def read_frame(stream: BinaryIO, limit: int = LINE_MAX_BYTES) -> Frame:
    """Read one line from `stream` and decode it (None: a blank line; END: no more input).
    Blocking: run it in a worker thread. Memory stays bounded by `limit` whatever the client
    sends: the rest of a longer line is read in pieces and dropped."""
    line = stream.readline(limit + 1)
    if not line:
        return END
    if len(line) <= limit or line.endswith(b"\n"):
        return decode_line(line)
    head, size = line[:_HEAD_KEPT], len(line)
    while not line.endswith(b"\n"):
        line = stream.readline(_SKIP_CHUNK)
        if not line:
            break
        size += len(line)
    if line.endswith(b"\n"):
        size -= 1
    return oversized_line(size, head, limit)


def _dump(message: types.JSONRPCMessage) -> bytes:
    return (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")


class Unanswered:
    """The ids of requests handed to the session whose response has not been written yet, so
    that the end of input can wait for them (a cancelled request gets no response)."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self._all_answered: anyio.Event | None = None

    def received(self, frame: types.JSONRPCMessage) -> None:
        if isinstance(frame, types.JSONRPCRequest):
            self.ids.add(frame.id)
        elif isinstance(frame, types.JSONRPCNotification) and frame.method == "notifications/cancelled":
            self.ids.discard((frame.params or {}).get("requestId"))

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            self.ids.discard(message.id)
            if not self.ids and self._all_answered is not None:
                self._all_answered.set()

    async def drained(self, seconds: float) -> None:
        """Return once every request is answered, or after `seconds`."""
        if not self.ids:
            return
        self._all_answered = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._all_answered.wait()


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]]:
    """(read_stream, write_stream) for the low-level `Server.run`, over the process's stdin and
    stdout, or over the given binary streams (then the standard descriptors are left alone)."""
    wire = claim_std_fds() if stdin is None and stdout is None else None
    if wire is not None:
        stdin, stdout = wire.stdin, wire.stdout
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    write_lock = anyio.Lock()
    reading = anyio.CancelScope()
    client_gone = False
    unanswered = Unanswered()

    def write_all(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    async def emit(data: bytes) -> None:
        """Write one frame; a client that closed its end ends the session (no traceback)."""
        nonlocal client_gone
        async with write_lock:
            if client_gone:
                return
            try:
                await anyio.to_thread.run_sync(write_all, data)
            except (BrokenPipeError, ConnectionResetError, ValueError):
                client_gone = True
                reading.cancel()  # closes the read stream, which ends the session

    async def reader() -> None:
        async with read_writer:
            while True:
                frame = await anyio.to_thread.run_sync(read_frame, stdin, abandon_on_cancel=True)
                if isinstance(frame, EndOfInput):
                    await unanswered.drained(DRAIN_AFTER_EOF_SECONDS)
                    return
                if frame is None:
                    continue
                if isinstance(frame, WireError):
                    sys.stderr.write(f"chinvex mcp: refused a line (id {frame.request_id!r}): {frame.message}\n")
                    await emit(_dump(frame.reply()))
                    continue
                unanswered.received(frame)  # before the send: the reply may be written first
                try:
                    await read_writer.send(SessionMessage(frame))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                await emit(_dump(session_message.message))
                unanswered.sent(session_message.message)

    async def read_until_cancelled(scope: anyio.CancelScope) -> None:
        with scope:
            await reader()

    restore: Callable[[], None] = wire.restore if wire is not None else (lambda: None)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_until_cancelled, reading)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                # The session is over: stop reading, and let the writer send what the session
                # handed it (it ends when the write stream is closed) rather than cut a reply.
                reading.cancel()
                await write_stream.aclose()
    finally:
        restore()
