"""The MCP handshake is answered before the SDK loads (chinvex.mcp.front), exactly as the SDK
would answer it, and the session continues in the SDK from the first message the door leaves.

The door's answers come from a recording of the real server (chinvex.mcp.handshake): a test
fails when the recording is stale. The end-to-end tests run the real `chinvex mcp`; one of them
holds the SDK's import until the handshake is over, so it can only pass if the handshake needs
no SDK at all."""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chinvex.mcp import front, handshake
from chinvex.mcp.profiles import ALL
from helpers import CHINVEX_BIN

INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}},
               "clientInfo": {"name": "test", "version": "1.0"}}


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _msg(method: str, request_id: Any = None, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return message


# -- the recording --------------------------------------------------------------------------------

def test_the_recording_matches_the_installed_sdk_and_the_tools():
    assert handshake.main(["--check"]) == 0, "run: python -m chinvex.mcp.handshake"
    assert handshake.usable()


def test_a_folder_merely_named_mcp_does_not_hide_the_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # `import mcp` passes over a directory without __init__.py (a namespace portion, such as a
    # project's mcp/ folder, or this suite's tests/mcp) when the real package follows on sys.path
    (tmp_path / "mcp").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert handshake.installed_sdk_version() == handshake.replies()["sdk"]


def test_check_fails_when_the_recording_is_stale(tmp_path: Path):
    target = tmp_path / "handshake_replies.py"
    target.write_text(handshake.DATA_PATH.read_text().replace("chinvex_search", "chinvex_find"))
    assert handshake.main(["--out", str(target), "--check"]) == 1


# -- deciding -------------------------------------------------------------------------------------

def test_initialize_is_answered_kept_for_the_sdk_and_negotiates_the_version():
    decision = front.decide(_msg("initialize", 7, INIT_PARAMS), None)
    assert decision.replay and decision.version == "2025-06-18"
    assert decision.reply is not None and decision.reply["id"] == 7
    assert decision.reply["result"]["protocolVersion"] == "2025-06-18"
    assert decision.reply["result"]["serverInfo"]["name"] == "chinvex"
    future = front.decide(_msg("initialize", "a", {**INIT_PARAMS, "protocolVersion": "2099-01-01"}), None)
    assert future.version == handshake.replies()["latest"] == future.reply["result"]["protocolVersion"]


def test_lists_and_ping_are_answered_after_initialize_only():
    tools = front.decide(_msg("tools/list", 2), "2025-06-18")
    assert not tools.replay and [t["name"] for t in tools.reply["result"]["tools"]][:2] == [
        "chinvex_answer", "chinvex_search"]
    assert front.decide(_msg("ping", 3), "2025-06-18").reply == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert front.decide(_msg("prompts/list", 4, {}), "2024-11-05").reply["result"] == {"prompts": []}
    assert front.decide(_msg("tools/list", 2), None).hand_over
    assert front.decide(_msg("notifications/initialized"), "2025-06-18") == front.Decision(replay=True)
    assert front.decide(_msg("notifications/initialized"), None).hand_over


@pytest.mark.parametrize("message", [
    _msg("tools/call", 5, {"name": "chinvex_list_contexts", "arguments": {}}),
    _msg("tools/list", 5, {"cursor": "abc"}),
    _msg("initialize", 1, INIT_PARAMS),  # a second initialize
    _msg("tools/list", True),
    _msg("tools/list", 2**60),
    {**_msg("tools/list", 5), "jsonrpc": "1.0"},
    {**_msg("tools/list", 5), "extra": 1},
    _msg("notifications/cancelled", None, {"requestId": 1}),
    [_msg("tools/list", 5)],
    "tools/list",
])
def test_anything_else_goes_to_the_sdk(message):
    assert front.decide(message, "2025-06-18").hand_over


@pytest.mark.parametrize("params", [
    None, {}, {**INIT_PARAMS, "protocolVersion": 20250618},
    {**INIT_PARAMS, "clientInfo": {"name": "x"}}, {**INIT_PARAMS, "capabilities": {"roots": True}},
    {**INIT_PARAMS, "unknown": 1},
    {**INIT_PARAMS, "clientInfo": {"name": "x", "version": "1", "deep": _nested(40)}},
])
def test_an_unusual_initialize_goes_to_the_sdk(params):
    assert front.decide(_msg("initialize", 1, params), None).hand_over


# -- the seam -------------------------------------------------------------------------------------

def test_replay_reader_gives_the_kept_lines_then_the_wire_with_the_same_bounds():
    reader = front.ReplayReader(b'{"a":1}\n{"b":2}\npart', io.BytesIO(b"-of-a-line\nnext\n"))
    assert reader.readline(100) == b'{"a":1}\n'
    assert reader.readline(3) == b'{"b'
    assert reader.readline(100) == b'":2}\n'
    assert reader.readline(100) == b"part-of-a-line\n"
    assert reader.readline(100) == b"next\n"
    assert reader.readline(100) == b""
    bounded = front.ReplayReader(b"abc", io.BytesIO(b"defghij\n"))
    assert bounded.readline(5) == b"abcde"


def test_drop_reply_drops_only_the_replayed_initialize_reply():
    out = io.BytesIO()
    wire = front.DropReply(out, 7)
    wire.write(b'{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-06-18"}}\n')
    wire.write(b'{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}\n')  # a later reply with the id
    wire.write(b'{"jsonrpc":"2.0","id":8,"result":{}}\n')
    assert out.getvalue().splitlines() == [b'{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}',
                                           b'{"jsonrpc":"2.0","id":8,"result":{}}']


# -- the real server ------------------------------------------------------------------------------

HOLD_SDK = """
import os, sys, time
release = sys.argv[1]
class HoldTheSdk:
    '''Blocks `import mcp` until the test creates the release file.'''
    def find_spec(self, name, path=None, target=None):
        if name in ("mcp", "mcp_types"):
            open(release + ".waiting", "w").close()
            while not os.path.exists(release):
                time.sleep(0.01)
        return None
sys.meta_path.insert(0, HoldTheSdk())
sys.argv = ["chinvex", "mcp"]
from chinvex.entry import main
main()
"""


class Server:
    def __init__(self, args: list[str], home: Path, cwd: Path):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=cwd, env={**os.environ, "CHINVEX_HOME": str(home),
                                                   "ANONYMIZED_TELEMETRY": "False", "CHINVEX_MCP_TOOLS": "all"})
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout], daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no reply in {timeout} s: {b''.join(self.stderr).decode()[-2000:]}") from None

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


def test_the_handshake_needs_no_sdk_and_the_sdk_serves_the_rest(tmp_path, chinvex_home):
    release = tmp_path / "release"
    server = Server([sys.executable, "-c", HOLD_SDK, str(release)], chinvex_home, tmp_path)
    try:
        server.send(_msg("initialize", 1, INIT_PARAMS))
        init = server.receive()
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "chinvex", init
        server.send(_msg("notifications/initialized"), _msg("tools/list", 2), _msg("resources/list", 3),
                    _msg("ping", 4))
        tools, resources, ping = server.receive(), server.receive(), server.receive()
        assert (tools["id"], resources["id"], ping["id"]) == (2, 3, 4)
        assert len(tools["result"]["tools"]) == len(ALL) and resources["result"] == {"resources": []}
        # The SDK's import runs on a thread that may not have reached it yet; it is held there
        # until `release` exists, so whatever the timing, the replies above came without it.
        deadline = time.monotonic() + 60
        while not Path(str(release) + ".waiting").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(str(release) + ".waiting").exists()
        server.send(_msg("tools/call", 5, {"name": "chinvex_list_contexts", "arguments": {}}))
        release.touch()
        call = server.receive()
        assert call["id"] == 5 and call["result"]["isError"] is False, call  # no second initialize reply
        server.send(_msg("tools/list", 6, {"cursor": None}))
        assert server.receive()["result"] == tools["result"]  # the SDK's answer is the door's
        assert server.close() == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    assert b"Traceback" not in b"".join(server.stderr)


@pytest.mark.parametrize("version", handshake.replies()["protocol_versions"])
def test_the_door_answers_what_the_sdk_answers(version, tmp_path, chinvex_home):
    """The same handshake sent to the door and, through a line the door hands over at once, to
    the SDK itself, gets the same replies."""
    door = Server([str(CHINVEX_BIN), "mcp"], chinvex_home, tmp_path)
    sdk = Server([str(CHINVEX_BIN), "mcp"], chinvex_home, tmp_path)
    try:
        sdk.send(_msg("ping", "first"))  # before initialize: the door hands over, the SDK answers
        assert sdk.receive()["id"] == "first"
        replies = {}
        for name, server in (("door", door), ("sdk", sdk)):
            server.send(_msg("initialize", 1, {**INIT_PARAMS, "protocolVersion": version}),
                        _msg("notifications/initialized"), _msg("tools/list", 2), _msg("prompts/list", 3),
                        _msg("resources/templates/list", 4))
            replies[name] = [server.receive() for _ in range(4)]
        assert replies["door"] == replies["sdk"]
        assert door.close() == 0 and sdk.close() == 0
    finally:
        for server in (door, sdk):
            if server.proc.poll() is None:
                server.proc.kill()
