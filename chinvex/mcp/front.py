"""The MCP handshake, answered while the SDK loads.

A client starts `chinvex mcp` at the beginning of every session and waits for `initialize` and
`tools/list`. Importing the MCP SDK and building the server takes far longer than
Python's own start. So the server starts with this front door: it reads the
first lines off the wire and answers the handshake from the recording of what the SDK answers
(`chinvex.mcp.handshake`), while a thread imports the SDK and builds the real server. At the
first line the door has no recorded answer for (a tool call, anything unusual, a line it cannot
read), it hands the session over: the SDK's transport reads the lines the door kept for it
first (`initialize` and `notifications/initialized`, so the SDK's session is initialised as if
it had seen them live, then the line that ended the door's turn) and then the wire itself, and
its own reply to the replayed `initialize`, already answered, is dropped. From there on the SDK
serves every message, exactly as without the door.

The door answers only what it can answer exactly as the SDK would: `initialize` with ordinary
params, then `ping` and the parameterless list methods (`tools/list`, `prompts/list`,
`resources/list`, `resources/templates/list`) at the negotiated version. Everything else goes to
the SDK, including every error reply. Without a recording for the installed SDK version it
steps aside and the SDK serves the whole session.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from chinvex.mcp import handshake
from chinvex.mcp.context_warning import ContextCheck
from chinvex.mcp.stdfds import claim_std_fds

DOOR_LINE_MAX = 64 * 1024
"""The door reads handshake messages (a few hundred bytes); a longer line goes to the SDK's
transport, which reads up to its own limit (chinvex.mcp.limits.LINE_MAX_BYTES) and answers."""
DOOR_DEPTH_MAX = 32
ID_MAX = 2**53
"""Ids the door echoes: integers JSON numbers carry exactly, or strings."""
DOOR_SWITCH_INTERVAL = 0.001
"""While the SDK imports on its thread (holding the GIL in 5 ms slices by default), the door's
thread gets the interpreter back sooner to answer a line."""


# -- deciding (pure) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What the door does with one message: `reply` it (a JSON-RPC result to write), keep it for
    the SDK's session (`replay`), both, or neither: then the session is handed over."""

    reply: dict[str, Any] | None = None
    replay: bool = False
    version: str | None = None
    """The protocol version negotiated by this message (initialize only)."""

    @property
    def hand_over(self) -> bool:
        return self.reply is None and not self.replay


HAND_OVER = Decision()


def _plain(value: Any, depth: int = 0) -> bool:
    """JSON the SDK's wire would accept without question: shallow, integers of 53 bits."""
    if depth > DOOR_DEPTH_MAX:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -ID_MAX < value < ID_MAX
    return value is None or isinstance(value, (str, bool, float))


def _valid_id(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return type(value) is int and -ID_MAX < value < ID_MAX


def _ordinary_initialize(params: Any) -> bool:
    """Params the SDK's InitializeRequestParams accepts as they are (what every client sends)."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    capabilities = params.get("capabilities")
    return (isinstance(capabilities, dict)
            and all(isinstance(v, dict) for v in capabilities.values())
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
            and set(params) <= {"protocolVersion", "capabilities", "clientInfo", "_meta"})


def decide(message: Any, version: str | None,
           result_for: Callable[[str, str], Any] = handshake.result_for) -> Decision:
    """The door's answer to one decoded message, given the version negotiated so far (None
    before `initialize`). Pure apart from reading the recording through `result_for`."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not _plain(message):
        return HAND_OVER
    method = message.get("method")
    params = message.get("params")
    if "id" not in message:
        if method == "notifications/initialized" and version is not None and set(message) <= {
                "jsonrpc", "method", "params"} and params in (None, {}):
            return Decision(replay=True)
        return HAND_OVER
    request_id = message["id"]
    if not _valid_id(request_id) or set(message) - {"jsonrpc", "id", "method", "params"}:
        return HAND_OVER
    try:
        if method == "initialize" and version is None and _ordinary_initialize(params):
            agreed = handshake.negotiated(params["protocolVersion"])
            return Decision(reply=_result(request_id, result_for("initialize", agreed)), replay=True,
                            version=agreed)
        if version is not None and params in (None, {}) and (
                method == "ping" or method in handshake.LIST_METHODS):
            return Decision(reply=_result(request_id, result_for(method, version)))
    except KeyError:  # not recorded (another SDK's recording): the SDK answers
        return HAND_OVER
    return HAND_OVER


def _result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


# -- the wire -------------------------------------------------------------------------------------


class ReplayReader:
    """A binary reader for the SDK's transport: the bytes the door kept, then the wire. Lines
    keep their boundaries, and `readline(limit)` its bound, across the seam."""

    def __init__(self, kept: bytes, wire: BinaryIO):
        self._kept = kept
        self._wire = wire

    def readline(self, limit: int = -1) -> bytes:
        if not self._kept:
            return self._wire.readline(limit)
        end = self._kept.find(b"\n") + 1 or len(self._kept)
        if limit >= 0:
            end = min(end, limit)
        piece, self._kept = self._kept[:end], self._kept[end:]
        if piece.endswith(b"\n") or len(piece) == limit or self._kept:
            return piece
        return piece + self._wire.readline(limit - len(piece) if limit >= 0 else -1)


class DropReply:
    """The SDK's output, minus its reply to the replayed `initialize` (the door has answered
    it). The transport writes one whole frame per `write`."""

    def __init__(self, wire: BinaryIO, request_id: Any):
        self._wire = wire
        self._pending = request_id
        self._armed = True

    def write(self, data: bytes) -> int:
        if self._armed:
            try:
                frame = orjson.loads(data)
            except orjson.JSONDecodeError:
                frame = None
            if isinstance(frame, dict) and frame.get("id") == self._pending and (
                    "result" in frame or "error" in frame):
                self._armed = False
                if "error" in frame:  # the door accepted what the SDK refused: say so
                    sys.stderr.write("chinvex mcp: the SDK refused the initialize request the "
                                     f"handshake accepted: {frame['error']}\n")
                return len(data)
        return self._wire.write(data)

    def flush(self) -> None:
        self._wire.flush()


class _Loader(threading.Thread):
    """Imports the SDK and builds the server while the door answers the handshake."""

    def __init__(self, default_context: str | None):
        super().__init__(name="chinvex-mcp-load", daemon=True)
        self.default_context = default_context
        self.state: Any = None
        self.server: Any = None
        self.relay: Any = None
        self.error: BaseException | None = None
        self.check = ContextCheck(default_context)

    def run(self) -> None:
        self.check.run()  # first: a session that ends at once still gets the warning
        try:
            import anyio  # noqa: F401  (everything the session needs, imported here)

            import chinvex.mcp.transport  # noqa: F401
            from chinvex.mcp.server import build_server
            from chinvex.mcp.state import ServerState

            self.state = ServerState(self.default_context)
            self.server = build_server(self.state)
            threading.Thread(target=self.state.warm, name="chinvex-mcp-warm", daemon=True).start()
            from chinvex.relay.handlers import start_for

            state = self.state
            self.relay = start_for(lambda: state.engine)  # other shells' search/answer/pack
        except BaseException as exc:  # reported by the thread that serves
            self.error = exc


def _serve_sdk(server: Any, stdin: Any, stdout: Any) -> None:
    """`ChinvexMCPServer.run_stdio_async` over the given streams: the door has claimed the
    standard descriptors already, so the transport is given the wire instead of taking it."""
    import anyio

    from chinvex.mcp.transport import stdio_transport

    lowlevel = server._lowlevel_server

    async def run() -> None:
        async with stdio_transport(stdin, stdout) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(run)


def serve(default_context: str | None = None) -> None:
    """Serve one session on stdin/stdout: the door first, then the SDK (see the module
    docstring). Without a usable recording, the SDK serves it all (`chinvex.mcp.server.serve`)."""
    if not handshake.usable():
        from chinvex.mcp.server import serve as serve_with_sdk

        serve_with_sdk(default_context)
        return
    from chinvex.mcp.profiles import profile_name

    profile = profile_name(os.environ)

    def recorded(method: str, version: str) -> Any:
        return handshake.result_for(method, version, profile)

    wire = claim_std_fds()
    loader = _Loader(default_context)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(DOOR_SWITCH_INTERVAL)
    loader.start()
    try:
        kept: list[bytes] = []
        version: str | None = None
        initialize_id: Any = None
        while True:
            line = wire.stdin.readline(DOOR_LINE_MAX + 1)
            if not line:  # the client left during the handshake: nothing to hand over
                loader.check.wait()  # the loader's first step: its warning reaches the log
                return
            try:
                decision = (decide(orjson.loads(line), version, recorded) if len(line) <= DOOR_LINE_MAX
                            else HAND_OVER)
            except orjson.JSONDecodeError:
                decision = HAND_OVER
            if decision.hand_over:
                kept.append(line)
                break
            if decision.replay:
                kept.append(line if line.endswith(b"\n") else line + b"\n")
            if decision.version is not None:
                version, initialize_id = decision.version, decision.reply["id"] if decision.reply else None
            if decision.reply is not None:
                try:
                    wire.stdout.write(orjson.dumps(decision.reply) + b"\n")
                    wire.stdout.flush()
                except (BrokenPipeError, ConnectionResetError, ValueError):
                    return  # the client closed its end: the session is over, as in the SDK's
        sys.setswitchinterval(switch)
        loader.join()
        if loader.error is not None:
            raise loader.error
        stdout: Any = wire.stdout if initialize_id is None else DropReply(wire.stdout, initialize_id)
        try:
            _serve_sdk(loader.server, ReplayReader(b"".join(kept), wire.stdin), stdout)
        finally:
            with suppress(Exception):
                loader.state.close()
            if loader.relay is not None:
                loader.relay.close()
    finally:
        sys.setswitchinterval(switch)
        wire.restore()
