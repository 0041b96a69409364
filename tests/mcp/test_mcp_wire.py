"""Issue 16: `chinvex mcp` answers every line it receives.

A line that is not a message the server accepts (truncated, a lone surrogate escape, too deep,
an integer beyond 64 bits, too long, not JSON-RPC) gets a JSON-RPC error with the request's id
where the line lets it be read, and the server goes on serving. Checked three ways: the decoder
itself (`chinvex.mcp.wire`, pure), raw lines written to the server's stdin, and the official SDK
client whose traffic is interleaved with raw malformed lines on the same pipe."""

from __future__ import annotations

import io
import json
import os
import queue
import random
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.shared.message import SessionMessage

from chinvex.mcp.limits import DEPTH_MAX, INVALID_REQUEST, LINE_MAX_BYTES, PARSE_ERROR
from chinvex.mcp.profiles import ALL
from chinvex.mcp.transport import END, read_frame
from chinvex.mcp.wire import WireError, decode_line, recover_id
from helpers import CHINVEX_BIN, run_cli, run_cli_in_process


def _call(request_id: Any, tool: str, arguments_json: str) -> str:
    return ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
            % (json.dumps(request_id), tool, arguments_json))


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


# The four lines of the issue (each once left the official client waiting forever), then more.
ISSUE_LINES = {
    "200 levels of nesting": (_call(7, "chinvex_search", '{"query":"x","k":%s}' % _nested(200)), INVALID_REQUEST, 7),
    "a lone \\ud800": (_call(8, "chinvex_search", '{"query":"a\\ud800b"}'), PARSE_ERROR, 8),
    "a truncated line": (_call(9, "chinvex_search", '{"query":"webhook ret')[:-1], PARSE_ERROR, 9),
    "a 5,000-digit k": (_call(10, "chinvex_search", '{"query":"x","k":%s}' % ("9" * 5000)), INVALID_REQUEST, 10),
}
MORE_LINES = {
    "not JSON": ("this is not json {", PARSE_ERROR, None),
    "NaN": (_call(11, "chinvex_search", '{"query":"x","k":NaN}'), PARSE_ERROR, 11),
    "a number beyond float range": (_call(12, "chinvex_search", '{"query":"x","k":1e999}'), INVALID_REQUEST, 12),
    "2**63": (_call(13, "chinvex_search", '{"query":"x","k":%d}' % 2**63), INVALID_REQUEST, 13),
    "a string id, truncated": (_call("req-14", "recall_get", '{"id":"D-1')[:-3], PARSE_ERROR, "req-14"),
    "a batch": ('[{"jsonrpc":"2.0","id":15,"method":"tools/list"}]', INVALID_REQUEST, None),
    "a number": ("42", INVALID_REQUEST, None),
    "no jsonrpc member": ('{"id":16,"method":"tools/list"}', INVALID_REQUEST, 16),
    "params an array": ('{"jsonrpc":"2.0","id":17,"method":"tools/list","params":[1]}', INVALID_REQUEST, 17),
    "method a number": ('{"jsonrpc":"2.0","id":18,"method":5}', INVALID_REQUEST, 18),
    "neither method nor result": ('{"jsonrpc":"2.0","id":19}', INVALID_REQUEST, 19),
    "a boolean id": ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', INVALID_REQUEST, None),
    "a lone surrogate in a key": ('{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"\\udc00":1}}',
                                  PARSE_ERROR, 20),
    "deep nesting past the decoder's stack": ('{"jsonrpc":"2.0","id":21,"params":' + _nested(100_000) + "}",
                                              INVALID_REQUEST, 21),
}
ALL_LINES = {**ISSUE_LINES, **MORE_LINES}


# -- the decoder --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ALL_LINES))
def test_each_malformed_line_decodes_to_an_error_with_its_id(name):
    line, code, request_id = ALL_LINES[name]
    decoded = decode_line(line.encode("utf-8"))
    assert isinstance(decoded, WireError), (name, decoded)
    assert (decoded.code, decoded.request_id) == (code, request_id), (name, decoded)
    assert len(decoded.message) < 300 and decoded.message.startswith(
        "Parse error" if code == PARSE_ERROR else "Invalid request"), decoded.message
    reply = json.loads(decoded.reply().model_dump_json(by_alias=True, exclude_unset=True))
    assert reply == {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": decoded.message}}


def test_error_messages_say_what_is_wrong():
    def message(line: str) -> str:
        decoded = decode_line(line.encode("utf-8", "surrogatepass"))
        assert isinstance(decoded, WireError)
        return decoded.message

    assert "nested deeper than 64 levels" in message(ISSUE_LINES["200 levels of nesting"][0])
    assert "lone UTF-16 surrogate (\\ud800)" in message(ISSUE_LINES["a lone \\ud800"][0])
    assert "unexpected end of data at column" in message(ISSUE_LINES["a truncated line"][0])
    assert "integer of 5,000 digits" in message(ISSUE_LINES["a 5,000-digit k"][0])
    assert "batches" in message(MORE_LINES["a batch"][0])
    assert '"jsonrpc" must be "2.0"' in message(MORE_LINES["no jsonrpc member"][0])
    assert '"params" must be an object' in message(MORE_LINES["params an array"][0])
    assert "not UTF-8 (byte 0xff at offset 34)" in decode_line(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}').message


def test_the_limits_are_exact():
    def depth(levels: int) -> Any:  # the envelope object is level 1, params level 2
        return decode_line(_call(1, "x", _nested(levels - 2)).encode())

    assert isinstance(depth(DEPTH_MAX), types.JSONRPCRequest)
    assert isinstance(depth(DEPTH_MAX + 1), WireError)
    biggest, smallest = 2**63 - 1, -(2**63)
    for value in (biggest, smallest):
        ok = decode_line(_call(value, "x", '{"k":%d}' % value).encode())
        assert isinstance(ok, types.JSONRPCRequest) and ok.id == value and ok.params["arguments"]["k"] == value
    for value in (biggest + 1, smallest - 1):
        refused = decode_line(_call(2, "x", '{"k":%d}' % value).encode())
        assert isinstance(refused, WireError) and refused.request_id == 2


def test_valid_messages_and_blank_lines_pass():
    request = decode_line(b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"q":"\\u00e9\\ud83d\\ude00"}}}\r\n')
    assert isinstance(request, types.JSONRPCRequest) and request.params["arguments"]["q"] == "é😀"
    assert isinstance(decode_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), types.JSONRPCNotification)
    assert isinstance(decode_line(b'{"jsonrpc":"2.0","id":3,"result":{}}'), types.JSONRPCResponse)
    assert decode_line(b"   \r\n") is None


def test_recover_id_reads_only_the_top_level_id():
    # an "id" inside params (recall_get's argument) is not the request's id, before or after it
    assert recover_id('{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":"D-1"}},"id":4,"x":[') == 4
    assert recover_id('{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":"D-1"}}') is None
    # braces and quotes inside strings are text, not structure
    assert recover_id('{"a":"}{\\"id\\":9","id":"r\\"1","b":') == 'r"1'
    # a number cut by the end of the line may be a prefix of the real id
    assert recover_id('{"jsonrpc":"2.0","id":12') is None
    assert recover_id('{"jsonrpc":"2.0","id":12 ,') == 12
    assert recover_id('{"id":12345678901234567890,') is None
    assert recover_id('{"id":"' + "x" * 300 + '",') is None
    assert recover_id('[{"id":1}') is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_decode_without_raising(data):
    decoded = decode_line(data.replace(b"\n", b" "))
    assert decoded is None or isinstance(decoded, WireError | types.JSONRPCRequest | types.JSONRPCNotification
                                         | types.JSONRPCResponse | types.JSONRPCError)


_IDS = st.one_of(st.integers(-(2**63), 2**63 - 1),
                 st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))


@settings(max_examples=200, deadline=None)
@given(request_id=_IDS, query=st.text(max_size=60), cut=st.integers(min_value=1, max_value=400))
def test_a_request_cut_anywhere_after_its_id_is_answered_with_that_id(request_id, query, cut):
    """Whatever the query holds (lone surrogates too), and wherever the line ends."""
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "chinvex_search", "arguments": {"query": query, "id": "inner"}}},
                      ensure_ascii=False).encode("utf-8", "surrogatepass")
    id_end = len(json.dumps({"jsonrpc": "2.0", "id": request_id}, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 1
    cut = min(cut, len(line) - 1)
    decoded = decode_line(line[:cut])
    assert isinstance(decoded, WireError)
    if cut > id_end:  # the id and the comma after it arrived
        assert decoded.request_id == request_id, (line[:cut], decoded)
    else:
        assert decoded.request_id is None or decoded.request_id == request_id


# -- bounded reading ----------------------------------------------------------------------------

def test_read_frame_skips_an_oversized_line_and_reads_the_next():
    over = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"q":"' + b"x" * 5000 + b'"}}\n'
    stream = io.BytesIO(over + b"\n" + b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n' + b'{"jsonrpc":"2.0","id":3,')
    first = read_frame(stream, limit=1000)
    assert isinstance(first, WireError) and first.code == INVALID_REQUEST and first.request_id == "big"
    assert f"the line is {len(over) - 1:,} bytes" in first.message and "limit is 1000 B" in first.message
    assert read_frame(stream, limit=1000) is None  # the blank line
    second = read_frame(stream, limit=1000)
    assert isinstance(second, types.JSONRPCRequest) and second.id == 2
    last = read_frame(stream, limit=1000)  # input ends inside a message
    assert isinstance(last, WireError) and last.code == PARSE_ERROR
    assert read_frame(stream, limit=1000) is END


# -- the server over raw stdio ------------------------------------------------------------------

class RawServer:
    """`chinvex mcp` with raw lines written to its stdin and its replies read by id."""

    def __init__(self, home: Path, cwd: Path):
        self.proc = subprocess.Popen([str(CHINVEX_BIN), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd,
                                     env={**os.environ, "CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False",
                                          "CHINVEX_MCP_TOOLS": "all"})
        self.stderr: list[bytes] = []
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout], daemon=True).start()

    def send(self, line: bytes | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode("utf-8") if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        """The next line the server writes; a server that says nothing fails the test."""
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s; stderr: {b''.join(self.stderr).decode()[-2000:]}") from None

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


def _handshake(server: RawServer) -> None:
    server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
    assert server.receive()["result"]["serverInfo"]["name"] == "chinvex"
    server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')


def test_every_malformed_line_is_answered_and_the_next_call_too(tmp_path, chinvex_home):
    server = RawServer(chinvex_home, tmp_path)
    try:
        _handshake(server)
        for n, (name, (line, code, request_id)) in enumerate(ALL_LINES.items()):
            server.send(line)
            reply = server.receive()  # the reply to this line comes before anything else
            assert reply["id"] == request_id and reply["error"]["code"] == code, (name, reply)
            server.send(_call(1000 + n, "chinvex_list_contexts", "{}"))
            answered = server.receive()
            assert answered["id"] == 1000 + n and answered["result"]["isError"] is False, (name, answered)
        # a line past the size limit is read in pieces, refused with its id, and skipped
        server.send(b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"chinvex_search",'
                    b'"arguments":{"query":"' + b"a" * (LINE_MAX_BYTES + 10) + b'"}}}')
        reply = server.receive()
        assert reply["id"] == "huge" and reply["error"]["code"] == INVALID_REQUEST
        assert "the limit is 8.0 MB" in reply["error"]["message"]
        server.send('{"jsonrpc":"2.0","id":"after","method":"tools/list"}')
        assert len(server.receive()["result"]["tools"]) == len(ALL)
    finally:
        code = server.close()
    assert code == 0
    log = b"".join(server.stderr).decode()
    assert "Traceback" not in log and "refused a line (id 9)" in log


# -- the official client, with malformed lines interleaved on the same pipe -----------------------

class InterleavingStdio:
    """A client transport over a `chinvex mcp` subprocess (the role of the SDK's `stdio_client`)
    that can also write raw lines between the client's messages. Replies to those lines (string
    ids starting with "raw-", or a null id) are kept in `raw_replies` instead of reaching the
    client, which never sent them."""

    def __init__(self, home: Path, cwd: Path):
        self.home, self.cwd = home, cwd
        self.raw_replies: dict[Any, dict[str, Any]] = {}
        self.null_replies: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self._lock = anyio.Lock()
        self._arrived = anyio.Event()

    async def __aenter__(self):
        self.process = await anyio.open_process(
            [str(CHINVEX_BIN), "mcp"], cwd=self.cwd,
            env={**os.environ, "CHINVEX_HOME": str(self.home), "ANONYMIZED_TELEMETRY": "False",
                 "CHINVEX_MCP_TOOLS": "all"})
        to_client_send, to_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        from_client, from_client_receive = anyio.create_memory_object_stream[SessionMessage](0)
        self._streams = (to_client_send, to_client, from_client, from_client_receive)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._pump_stdout, to_client_send)
        self._tg.start_soon(self._pump_stdin, from_client_receive)
        self._tg.start_soon(self._pump_stderr)
        return to_client, from_client

    async def __aexit__(self, *exc: object) -> None:
        await self.process.stdin.aclose()
        with anyio.fail_after(60):
            await self.process.wait()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        for stream in self._streams:
            await stream.aclose()

    async def _pump_stdout(self, to_client) -> None:
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                raw = json.loads(line)
                rid = raw.get("id", "none")
                if rid is None or (isinstance(rid, str) and rid.startswith("raw-")):
                    (self.null_replies.append(raw) if rid is None else self.raw_replies.__setitem__(rid, raw))
                    self._arrived.set()
                    self._arrived = anyio.Event()
                    continue
                await to_client.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))

    async def _pump_stdin(self, from_client) -> None:
        async for message in from_client:
            await self._write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode())

    async def _pump_stderr(self) -> None:
        async for chunk in self.process.stderr:
            self.stderr += chunk

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self.process.stdin.send(data + b"\n")

    async def inject(self, line: str, request_id: Any) -> dict[str, Any]:
        """Write `line` raw and wait for its reply (by id, or the next null-id reply)."""
        nulls = len(self.null_replies)
        await self._write(line.encode("utf-8"))
        with anyio.fail_after(60):
            while (request_id not in self.raw_replies) if request_id is not None else len(self.null_replies) == nulls:
                await self._arrived.wait()
        return self.raw_replies.pop(request_id) if request_id is not None else self.null_replies[nulls]


def _raw_variant(line: str, request_id: Any, n: int) -> tuple[str, Any]:
    """`line` with its id made unique ("raw-<n>"); lines without a recoverable id keep None."""
    if request_id is None:
        return line, None
    new_id = f"raw-{n}"
    return line.replace('"id":%s' % json.dumps(request_id), '"id":%s' % json.dumps(new_id), 1), new_id


@pytest.fixture(scope="module")
def small_context(tmp_path_factory):
    base = tmp_path_factory.mktemp("wire")
    notes, home = base / "notes", base / "home"
    notes.mkdir()
    (notes / "webhooks.md").write_text("# Webhooks\n\nFailed webhook deliveries are retried with exponential "
                                       "backoff and full jitter, at most five attempts.\n", encoding="utf-8")
    (notes / "settlement.md").write_text("# Settlement\n\nSettlement batches close at midnight UTC and are "
                                         "reconciled against the acquirer report.\n", encoding="utf-8")
    env = {"CHINVEX_HOME": str(home)}
    created = run_cli_in_process("context", "create", "wire", "--note-root", str(notes), env=env)
    assert created.code == 0, created
    ingested = run_cli_in_process("ingest", "--context", "wire", env=env)
    assert ingested.code == 0, ingested
    return {"home": home, "notes": notes, "base": base, "env": env}


def test_official_client_with_malformed_lines_interleaved(small_context):
    rng = random.Random(16)
    transport = InterleavingStdio(small_context["home"], small_context["base"])
    malformed = [(_raw_variant(line, rid, n), code) for n, (line, code, rid) in enumerate(
        list(ALL_LINES.values()) * 3)]
    rng.shuffle(malformed)

    async def body() -> tuple[int, int]:
        searches = 0
        async with Client(transport, mode="legacy", read_timeout_seconds=120) as client:

            async def search(query: str, expected: str) -> None:
                nonlocal searches
                result = await client.call_tool("chinvex_search", {"query": query, "context": "wire", "k": 2})
                assert not result.is_error, result.content[0].text
                assert result.structured_content["results"][0]["source_uri"].endswith(expected)
                searches += 1

            async def bad(line: str, request_id: Any, code: int) -> None:
                reply = await transport.inject(line, request_id)
                assert reply["error"]["code"] == code and reply["id"] == request_id, (line[:80], reply)

            await search("webhook retry backoff", "webhooks.md")
            for i, ((line, rid), code) in enumerate(malformed):
                if i % 3 == 0:  # one alone between two calls
                    await bad(line, rid, code)
                    await search("midnight settlement acquirer", "settlement.md")
                else:  # or while calls are in flight
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(search, "webhook jitter attempts", "webhooks.md")
                        tg.start_soon(bad, line, rid, code)
                        tg.start_soon(search, "acquirer reconciliation", "settlement.md")
            listed = await client.list_tools()
            assert len(listed.tools) == len(ALL)
        return searches, len(malformed)

    searches, injected = anyio.run(body)
    alone = len(range(0, injected, 3))
    assert injected == 3 * len(ALL_LINES) and searches == 1 + alone + 2 * (injected - alone)
    assert "Traceback" not in transport.stderr.decode(errors="replace")


# -- load: several clients while an ingest runs -------------------------------------------------

def test_four_clients_of_25_queries_during_ingests_all_answer(small_context):
    """The small version of bench/mcp_load.py (8 clients x 200): every call answered without an
    error and with the right document first, while ingests of the same context keep writing."""
    notes, env = small_context["notes"], small_context["env"]
    stop = threading.Event()
    ingests: list[tuple[float, float, int, str]] = []

    def ingest_loop() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            for k in range(6):  # new files every round, so each ingest embeds and writes
                (notes / f"extra_{n}_{k}.md").write_text(
                    f"# Extra {n}.{k}\n\nRound {n} note {k} about ledger currency refunds and payouts.\n",
                    encoding="utf-8")
            if n > 1:
                for old in notes.glob(f"extra_{n - 1}_*.md"):
                    old.unlink()
            started = time.perf_counter()
            result = run_cli("ingest", "--context", "wire", "--wait", env=env)
            ingests.append((started, time.perf_counter(), result.code, result.stderr[-300:]))

    async def client(i: int, latencies: list[tuple[float, float]]) -> None:
        params = StdioServerParameters(command=str(CHINVEX_BIN), args=["mcp", "--context", "wire"],
                                       env={"CHINVEX_HOME": str(small_context["home"]), "ANONYMIZED_TELEMETRY": "False",
                                            "CHINVEX_MCP_TOOLS": "all"},
                                       cwd=str(small_context["base"]))
        async with Client(params, mode="legacy", read_timeout_seconds=180) as session:
            for q in range(25):
                query, expected = (("webhook retry backoff jitter", "webhooks.md") if (i + q) % 2 else
                                   ("settlement midnight acquirer report", "settlement.md"))
                started = time.perf_counter()
                result = await session.call_tool("chinvex_search", {"query": query, "k": 3})
                latencies.append((started, time.perf_counter()))
                assert not result.is_error, result.content[0].text
                assert result.structured_content["results"][0]["source_uri"].endswith(expected), result.structured_content

    async def clients() -> list[tuple[float, float]]:
        latencies: list[tuple[float, float]] = []
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(client, i, latencies)
        return latencies

    writer = threading.Thread(target=ingest_loop)
    writer.start()
    try:
        while not ingests and writer.is_alive():  # the first ingest has finished: the next is writing
            time.sleep(0.1)
        latencies = anyio.run(clients)
    finally:
        stop.set()
        writer.join(timeout=600)
    assert len(latencies) == 100
    assert all(code == 0 for _, _, code, _ in ingests), ingests
    during = [s for s, e in latencies if any(a <= e and s <= b for a, b, _, _ in ingests[1:])]
    print(f"{len(ingests)} ingests; {len(during)} of 100 calls overlapped one")
    assert len(ingests) >= 2 and len(during) >= 25, (len(ingests), len(during))


def test_a_client_that_closes_its_end_ends_the_session_without_a_traceback(tmp_path, chinvex_home):
    proc = subprocess.Popen([str(CHINVEX_BIN), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path,
                            env={**os.environ, "CHINVEX_HOME": str(chinvex_home), "ANONYMIZED_TELEMETRY": "False"})
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the client stops reading; its requests still arrive
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                     b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n')
    proc.stdin.write(b"not json\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0  # the failed write ended the session; stdin is still open
    proc.stdin.close()
    log = proc.stderr.read().decode()
    assert "Traceback" not in log and "internal error" not in log, log
