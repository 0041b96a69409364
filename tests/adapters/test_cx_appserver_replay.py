"""cx_appserver without the binary: the real client, source and normaliser driven by a fake
server that answers with the lines recorded from codex 0.169.0 (fixtures/codex-app-server/
transcripts/run1, run2, run3, run3b), matched by method and params, ids re-mapped.

Where a transcript lacks an answer the test needs (a second thread/list page, the error for a
request before initialize), the fake builds it from recorded data or from the behaviour
FORMATS.md §1.3 verified, and says so next to the route.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from chinvex.ids import thread_doc_id
from chinvex.models.sources import ParseReport
from chinvex_adapters.cx_appserver import schemas as s
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.errors import (
    AppServerDied,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
)
from chinvex_adapters.cx_appserver.launch import ClientConfig
from chinvex_adapters.cx_appserver.transport import StreamTransport
from chinvex_adapters.cx_appserver.item_text import NormalizeOptions, clip
from chinvex_adapters.cx_appserver.normalize import thread_to_conversation
from chinvex_adapters.cx_appserver.source import DEFAULT_SOURCE_KINDS, AppServerSource
from chinvex_adapters.cx_appserver.threads import ThreadReadError, resolve_rollout_path
from helpers import FIXTURES

TRANSCRIPTS = FIXTURES / "codex-app-server" / "transcripts"

PAGINATED = "01a20116-364e-7ac1-8d5a-b68a4dbbf7c6"  # run1 (live) / run3 (projection missing)
LEGACY_169 = "01a20116-7f80-7e82-8754-e5125007d434"  # run2
LOCALPUSH_SHORT = "019c8a70-dda7-7f33-98ea-f30553347322"
LOCALPUSH_MID = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
CODEMIE = "019e1695-0522-7c83-8b39-0dd379793f80"
LARGE_0106 = "019b2ea4-aaaa-bbbb-cccc-58208e1f0000"
UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"


# ------------------------------------------------------------------------------------------
# Transcript loading
# ------------------------------------------------------------------------------------------


@dataclass
class Exchange:
    method: str
    params: dict[str, Any]
    response: dict[str, Any]  # the recorded response line (result or error), recorded id
    notifications: list[dict[str, Any]]  # server notifications recorded before the response


def load_run(name: str) -> list[Exchange]:
    requests: dict[Any, tuple[str, dict[str, Any]]] = {}
    notes: list[dict[str, Any]] = []
    out: list[Exchange] = []
    for raw in (TRANSCRIPTS / f"{name}.transcript.jsonl").read_text().splitlines():
        record = json.loads(raw)
        message = json.loads(record["line"])
        if record["dir"] == "c2s":
            if "id" in message:
                requests[message["id"]] = (message["method"], message.get("params") or {})
        elif "method" in message and "id" not in message:
            notes.append(message)
        elif "id" in message and message["id"] in requests:
            method, params = requests[message["id"]]
            out.append(Exchange(method, params, message, notes))
            notes = []
    return out


def recorded(run: str, method: str, **params: Any) -> Exchange:
    matches = [
        ex for ex in load_run(run)
        if ex.method == method and all(ex.params.get(k) == v for k, v in params.items())
    ]
    assert matches, f"no {method} {params} in {run}"
    return matches[0]


# ------------------------------------------------------------------------------------------
# Fake server over two OS pipes
# ------------------------------------------------------------------------------------------

Responder = Callable[[dict[str, Any]], "list[dict[str, Any]] | None"]


@dataclass
class FakeAppServer:
    """Plays the server side of the protocol from recorded exchanges.

    Routing: explicit routes first (predicate on params), then an exact (method, params)
    match among the loaded transcripts. Unanswerable requests get a -32601 and are listed in
    `unmatched` so a test fails loudly instead of hanging.
    """

    runs: tuple[str, ...] = ()
    require_initialize: bool = True
    exchanges: list[Exchange] = field(default_factory=list)
    routes: list[tuple[str, Callable[[dict[str, Any]], bool], Responder]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)
    ignore_methods: set[str] = field(default_factory=set)
    die_on: set[str] = field(default_factory=set)
    swap_pairs: bool = False

    def __post_init__(self) -> None:
        for run in self.runs:
            self.exchanges += load_run(run)
        c2s_r, c2s_w = os.pipe()
        s2c_r, s2c_w = os.pipe()
        self.client_reader = os.fdopen(s2c_r, "rb")
        self.client_writer = os.fdopen(c2s_w, "wb")
        self._in = os.fdopen(c2s_r, "rb")
        self._out = os.fdopen(s2c_w, "wb")
        self._initialized = False
        self._held: list[list[dict[str, Any]]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def route(self, method: str, when: Callable[[dict[str, Any]], bool], respond: Responder) -> None:
        self.routes.append((method, when, respond))

    def transport(self) -> StreamTransport:
        return StreamTransport(self.client_reader, self.client_writer)

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message).encode() + b"\n")
        self._out.flush()

    def send_raw(self, data: bytes) -> None:
        self._out.write(data)
        self._out.flush()

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]

    def _serve(self) -> None:
        try:
            for raw in iter(self._in.readline, b""):
                message = json.loads(raw)
                self.received.append(message)
                if "method" not in message:
                    continue  # a client's answer to a server request
                if "id" not in message:
                    continue  # client notification ("initialized")
                if message["method"] in self.die_on:
                    break
                if message["method"] in self.ignore_methods:
                    continue
                replies = self._answer(message)
                if self.swap_pairs:
                    self._held.append(replies)
                    if len(self._held) == 2:
                        for batch in reversed(self._held):
                            for reply in batch:
                                self.send(reply)
                        self._held = []
                    continue
                for reply in replies:
                    self.send(reply)
        finally:
            self._out.close()

    def _answer(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        method, params, rid = message["method"], message.get("params") or {}, message["id"]
        if method == "initialize":
            if self._initialized:
                # Not in the transcripts; verified on 0.169.0 (FORMATS.md §1.3).
                return [{"id": rid, "error": {"code": -32600, "message": "Already initialized"}}]
            self._initialized = True
            if not any(r[0] == "initialize" for r in self.routes):
                recorded_init = [ex for ex in self.exchanges if ex.method == "initialize"]
                return [self._with_id(recorded_init[0].response, rid)]
        elif self.require_initialize and not self._initialized:
            # Not in the transcripts; behaviour verified on 0.169.0 (FORMATS.md §1.3).
            return [{"id": rid, "error": {"code": -32600, "message": "Not initialized"}}]
        for r_method, when, respond in self.routes:
            if r_method == method and when(params):
                out = respond(params)
                if out is not None:
                    return [self._with_id(m, rid) for m in out]
        for ex in self.exchanges:
            if ex.method == method and ex.params == params:
                return ex.notifications + [self._with_id(ex.response, rid)]
        self.unmatched.append(message)
        return [{"id": rid, "error": {"code": -32601, "message": f"fake: no recording for {method} {params}"}}]

    @staticmethod
    def _with_id(message: dict[str, Any], rid: Any) -> dict[str, Any]:
        if "id" not in message:
            return message
        return {**copy.deepcopy(message), "id": rid}


def reply(ex: Exchange) -> Responder:
    return lambda _params: ex.notifications + [ex.response]


def result_of(ex: Exchange) -> dict[str, Any]:
    return copy.deepcopy(ex.response["result"])


def add_history_routes(fake: FakeAppServer) -> None:
    """Lenient routes for the reads the source makes (its params differ from the recording's
    in `limit`; thread/read without turns is derived from a recorded read with turns)."""
    reads = [ex for ex in fake.exchanges if ex.method == "thread/read"]
    turn_lists = [ex for ex in fake.exchanges if ex.method == "thread/turns/list"]

    def read(params: dict[str, Any]) -> list[dict[str, Any]] | None:
        tid, with_turns = params.get("threadId"), bool(params.get("includeTurns"))
        same = [ex for ex in reads if ex.params.get("threadId") == tid]
        exact = [ex for ex in same if bool(ex.params.get("includeTurns")) == with_turns]
        if exact:
            return exact[0].notifications + [exact[0].response]
        if same and not with_turns and "result" in same[0].response:
            # thread/read without includeTurns = the same thread with an empty turns list.
            response = copy.deepcopy(same[0].response)
            response["result"]["thread"]["turns"] = []
            return [response]
        if same:
            return [same[0].response]
        return None

    def turns(params: dict[str, Any]) -> list[dict[str, Any]] | None:
        same = [ex for ex in turn_lists
                if ex.params.get("threadId") == params.get("threadId")
                and ex.params.get("cursor") == params.get("cursor")]
        view = params.get("itemsView", "summary")
        exact = [ex for ex in same if ex.params.get("itemsView", "summary") == view]
        if exact:
            return [exact[0].response]
        # An empty page is empty whatever the view (run3's projection-less thread).
        empty = [ex for ex in same if ex.response.get("result", {}).get("data") == []]
        return [empty[0].response] if empty else None

    fake.route("thread/read", lambda p: True, read)
    fake.route("thread/turns/list", lambda p: True, turns)


@pytest.fixture
def make_client():
    made: list[tuple[AppServerClient, FakeAppServer]] = []

    def _make(fake: FakeAppServer, *, handshake: bool = True, timeout: float = 5.0) -> AppServerClient:
        client = AppServerClient(ClientConfig(request_timeout_s=timeout), transport=fake.transport())
        client.start(handshake=handshake)
        made.append((client, fake))
        return client

    yield _make
    for client, _fake in made:
        client.close()


def source_over(fake: FakeAppServer) -> AppServerSource:
    return AppServerSource(
        lambda: AppServerClient(ClientConfig(request_timeout_s=5.0), transport=fake.transport())
    )


def role_counts(doc) -> dict[str, int]:
    return dict(Counter(t.role for t in doc.turns))


# ------------------------------------------------------------------------------------------
# Protocol: handshake, errors, ordering, death, timeout
# ------------------------------------------------------------------------------------------


def test_handshake_sends_chinvex_client_info_then_initialized(make_client):
    fake = FakeAppServer(runs=("run1",))
    init = recorded("run1", "initialize")
    fake.route("initialize", lambda p: True, reply(init))
    client = make_client(fake)

    assert client.initialize_result == init.response["result"]
    s.InitializeResponse.model_validate(client.initialize_result)
    sent = fake.received[0]
    assert sent["method"] == "initialize" and isinstance(sent["id"], int)
    assert sent["params"]["clientInfo"]["name"] == "chinvex"
    from chinvex import __version__

    assert sent["params"]["clientInfo"]["version"] == __version__
    assert sent["params"]["capabilities"] is None  # only stable methods/fields are used
    deadline = time.time() + 2
    while len(fake.received) < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert fake.received[1] == {"method": "initialized"}
    assert "jsonrpc" not in sent


def test_request_before_initialize_is_refused(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake, handshake=False)
    with pytest.raises(AppServerError) as info:
        client.request("thread/list", {"modelProviders": []})
    assert info.value.code == -32600 and info.value.message == "Not initialized"
    assert info.value.method == "thread/list"


def test_second_initialize_is_reported_as_unavailable(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake)
    with pytest.raises(AppServerUnavailable, match="Already initialized"):
        client.initialize()


def test_out_of_order_responses_are_matched_by_id(make_client):
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    client = make_client(fake)
    fake.swap_pairs = True  # from now on, every two answers are sent in reverse order
    first = client.send_request("thread/read", {"threadId": LOCALPUSH_SHORT, "includeTurns": True})
    second = client.send_request("thread/read", {"threadId": CODEMIE, "includeTurns": True})
    assert client.wait(second, "thread/read")["thread"]["id"] == CODEMIE
    assert client.wait(first, "thread/read")["thread"]["id"] == LOCALPUSH_SHORT
    ids = [m["id"] for m in fake.received if m.get("method") == "thread/read"]
    assert ids == [first.request_id, second.request_id] and ids[0] != ids[1]


def test_notifications_and_non_json_lines_are_ignored(make_client):
    fake = FakeAppServer(runs=("run1",))
    add_history_routes(fake)
    seen: list[str] = []
    client = AppServerClient(ClientConfig(request_timeout_s=5), transport=fake.transport(),
                             on_notification=lambda method, params: seen.append(method))
    client.start()
    try:
        fake.send_raw(b"this is not json\n")
        # thread/read with includeTurns on a paginated thread is preceded by a recorded
        # deprecationNotice notification.
        result = client.request("thread/read", {"threadId": PAGINATED, "includeTurns": True})
        assert len(result["thread"]["turns"]) == 5
        assert "deprecationNotice" in seen
        assert client.ignored_lines == 1
    finally:
        client.close()


def test_server_requests_are_answered_with_an_error(make_client):
    fake = FakeAppServer(runs=("run3b",))
    client = make_client(fake)
    fake.send({"id": 99, "method": "item/tool/requestUserInput", "params": {"threadId": "t"}})
    deadline = time.time() + 2
    while not any(m.get("id") == 99 for m in fake.received) and time.time() < deadline:
        time.sleep(0.01)
    answer = [m for m in fake.received if m.get("id") == 99]
    assert answer and answer[0]["error"]["code"] == -32601
    assert client.server_requests_refused == 1


def test_unknown_thread_id_is_a_per_thread_error():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    with source_over(fake) as source:
        with pytest.raises(ThreadReadError, match="thread not loaded") as info:
            source.read_thread(UNKNOWN_ID)
        assert info.value.outcome.reason == "server_error"
        # the source and its client are still usable afterwards
        assert source.read_thread(LARGE_0106) is not None


def test_eof_fails_every_pending_request_at_once(make_client):
    fake = FakeAppServer(runs=("run3",))
    fake.ignore_methods = {"thread/loaded/list"}
    fake.die_on = {"thread/list"}
    client = make_client(fake, timeout=30)
    pending = client.send_request("thread/loaded/list", {})
    started = time.monotonic()
    with pytest.raises(AppServerDied, match="end of file"):
        client.request("thread/list", {"modelProviders": []})
    with pytest.raises(AppServerDied, match="thread/loaded/list"):
        client.wait(pending, "thread/loaded/list")
    assert time.monotonic() - started < 5  # nobody waited for the 30 s timeout
    with pytest.raises(AppServerDied):
        client.request("thread/list", {})  # a dead client says so immediately


DYING_CHILD = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            print(json.dumps({"id": msg["id"], "result": {"userAgent": "fake/0.169.0",
                  "codexHome": "/x", "platformFamily": "unix", "platformOs": "linux"}}), flush=True)
        elif msg.get("method") == "thread/list":
            sys.stderr.write("thread 'main' panicked: disk on fire\\n")
            sys.stderr.flush()
            sys.exit(7)
    """
)


def test_dead_child_error_names_exit_code_and_stderr(tmp_path):
    script = tmp_path / "dying_child.py"
    script.write_text(DYING_CHILD)
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False)
    with AppServerClient(config) as client:
        pending = client.send_request("thread/loaded/list", {})
        with pytest.raises(AppServerDied) as info:
            client.request("thread/list", {"modelProviders": []})
        message = str(info.value)
        assert "exited with code 7" in message and "disk on fire" in message
        with pytest.raises(AppServerDied, match="exited with code 7"):
            client.wait(pending, "thread/loaded/list")


NOISY_CHILD = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        for i in range(5000):  # ~0.5 MB of log lines: far more than a pipe buffer holds
            sys.stderr.write(f"WARN noisy log line {i:05d} " + "x" * 80 + "\\n")
        sys.stderr.flush()
        print(json.dumps({"id": msg["id"], "result": {"userAgent": "noisy/0.169.0"}}), flush=True)
    """
)


def test_stderr_is_drained_so_a_chatty_child_never_blocks(tmp_path):
    script = tmp_path / "noisy_child.py"
    script.write_text(NOISY_CHILD)
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False,
                          request_timeout_s=20, stderr_lines=50)
    with AppServerClient(config) as client:
        assert client.request("thread/list", {}) == {"userAgent": "noisy/0.169.0"}
        deadline = time.time() + 5
        while not client.stderr_tail(1)[-1].startswith("WARN noisy log line 04999") and time.time() < deadline:
            time.sleep(0.01)  # the drain thread may still be catching up
        tail = client.stderr_tail(100)
        assert len(tail) == 50 and tail[-1].startswith("WARN noisy log line 04999")


def test_child_failing_at_start_is_unavailable(tmp_path):
    script = tmp_path / "bad_start.py"
    script.write_text("import sys; sys.stderr.write('Error: config.toml is broken\\n'); sys.exit(1)\n")
    home = tmp_path / ".codex"
    home.mkdir()
    config = ClientConfig(command=[sys.executable, str(script)], codex_home=str(home), offline=False)
    with pytest.raises(AppServerUnavailable, match=r"(?s)exited with code 1.*config.toml is broken"):
        with AppServerClient(config):
            pass


def test_start_failures_are_clear(tmp_path):
    with pytest.raises(AppServerUnavailable, match="not on PATH"):
        AppServerClient(ClientConfig(command=["codex-does-not-exist-xyz", "app-server"])).start()
    with pytest.raises(AppServerUnavailable, match="not found at"):
        AppServerClient(ClientConfig(binary=str(tmp_path / "nope" / "codex"))).start()
    missing_home = tmp_path / "no-such-codex-home"
    with pytest.raises(AppServerUnavailable, match="CODEX_HOME .* does not exist"):
        AppServerClient(ClientConfig(command=[sys.executable], codex_home=str(missing_home))).start()


def test_command_line_from_context_config(tmp_path):
    from chinvex.models import CodexAppServerConfig
    from chinvex_adapters.cx_appserver.launch import build_argv
    from chinvex_adapters.cx_appserver.source import client_factory_from

    cfg = CodexAppServerConfig(command=["codex", "app-server", "--listen", "stdio://"], timeout_s=7)
    client = client_factory_from(cfg, codex_home=str(tmp_path), binary=sys.executable)()
    assert client.config.request_timeout_s == 7 and client.config.codex_home == str(tmp_path)
    argv = build_argv(client.config)
    # the resolved binary replaces "codex"; plugin sync (github.com) is switched off
    assert argv == [sys.executable, "app-server", "--listen", "stdio://", "-c", "features.plugins=false"]
    offline_off = CodexAppServerConfig(offline=False)  # an extra key of context.json
    assert "-c" not in build_argv(client_factory_from(offline_off, binary=sys.executable)().config)


def test_timeout_is_reported_and_client_stays_usable(make_client):
    fake = FakeAppServer(runs=("run3b",))
    add_history_routes(fake)
    fake.ignore_methods = {"thread/loaded/list"}
    client = make_client(fake)
    started = time.monotonic()
    with pytest.raises(AppServerTimeout, match=r"thread/loaded/list got no answer within 0.2 s"):
        client.request("thread/loaded/list", {}, timeout=0.2)
    assert time.monotonic() - started < 2
    result = client.request("thread/read", {"threadId": LOCALPUSH_MID, "includeTurns": True})
    assert result["thread"]["id"] == LOCALPUSH_MID


# ------------------------------------------------------------------------------------------
# Source: listing and paging
# ------------------------------------------------------------------------------------------


def test_list_threads_pages_with_cursor_and_sorts():
    fake = FakeAppServer(runs=("run3b",))
    page1 = recorded("run3b", "thread/list", limit=2)
    full = recorded("run3b", "thread/list", modelProviders=[])
    cursor = page1.response["result"]["nextCursor"]
    assert cursor and "|" in cursor  # an opaque "<timestamp>|<thread id>" string

    def page2(_params):
        # Not recorded: the rest of the recorded full listing, as the server would page it.
        first_ids = {t["id"] for t in page1.response["result"]["data"]}
        rest = [t for t in full.response["result"]["data"] if t["id"] not in first_ids]
        return [{"id": 0, "result": {"data": rest, "nextCursor": None, "backwardsCursor": None}}]

    fake.route("thread/list", lambda p: p.get("cursor") == cursor, page2)
    fake.route("thread/list", lambda p: "cursor" not in p, reply(page1))
    with source_over(fake) as source:
        threads = source.list_threads()
    calls = fake.requests("thread/list")
    assert len(calls) == 2
    assert "cursor" not in calls[0]["params"] and calls[1]["params"]["cursor"] == cursor
    for call in calls:
        assert call["params"]["modelProviders"] == []
        assert call["params"]["sourceKinds"] == list(DEFAULT_SOURCE_KINDS)
        assert "archived" not in call["params"]
    ids = [t.thread_id for t in threads]
    assert sorted(ids) == sorted(t["id"] for t in full.response["result"]["data"])
    assert len(ids) == 6
    assert [t.created_at for t in threads] == sorted(t.created_at for t in threads)
    by_id = {t.thread_id: t for t in threads}
    assert by_id[PAGINATED].history_mode == "paginated"
    assert by_id[LARGE_0106].source_kind == "cli" and by_id[CODEMIE].source_kind == "vscode"
    assert by_id[CODEMIE].updated_at == "2026-11-22T02:31:51.000Z"  # unix seconds → ISO
    assert by_id[CODEMIE].path.endswith(f"{CODEMIE}.jsonl")
    assert by_id[CODEMIE].source_uri == f"codex://thread/{CODEMIE}"
    assert fake.unmatched == []


def test_list_threads_subagents_and_archived_passes():
    fake = FakeAppServer(runs=("run3b",))
    full = recorded("run3b", "thread/list", modelProviders=[])
    empty = {"id": 0, "result": {"data": [], "nextCursor": None}}
    fake.route("thread/list", lambda p: p.get("archived") is True, lambda p: [empty])
    fake.route("thread/list", lambda p: True, reply(full))
    with source_over(fake) as source:
        threads = source.list_threads(include_subagents=True, include_archived=True)
    calls = [c["params"] for c in fake.requests("thread/list")]
    assert len(calls) == 2 and calls[1]["archived"] is True
    assert set(s.SUBAGENT_KINDS) <= set(calls[0]["sourceKinds"])
    assert len(threads) == 6 and not any(t.archived for t in threads)


def test_listing_survives_one_invalid_thread_and_dedupes_ids():
    fake = FakeAppServer(runs=("run3b",))
    full = recorded("run3b", "thread/list", modelProviders=[])
    data = copy.deepcopy(full.response["result"]["data"])
    broken = copy.deepcopy(data[1])
    del broken["createdAt"]  # required
    broken["id"] = "broken-thread"
    copy_of_first = copy.deepcopy(data[2])
    copy_of_first["path"] = copy_of_first["path"].replace("/sessions/", "/sessions/copy/")
    response = {"id": 0, "result": {"data": data + [broken, copy_of_first], "nextCursor": None}}
    fake.route("thread/list", lambda p: True, lambda p: [response])
    with source_over(fake) as source:
        threads = source.list_threads()
        assert len(threads) == 6
        assert source.list_errors and "broken-thread" in source.list_errors[0]
        assert source.list_counts["duplicate_thread_ids"] == 1
    dup = next(t for t in threads if t.thread_id == data[2]["id"])
    assert len(dup.duplicate_paths) == 1


# ------------------------------------------------------------------------------------------
# Source: reading
# ------------------------------------------------------------------------------------------


def test_paginated_thread_without_projection_returns_none_with_reason():
    fake = FakeAppServer(runs=("run3", "run3b"))
    add_history_routes(fake)
    listing = recorded("run3b", "thread/list", modelProviders=[])
    fake.route("thread/list", lambda p: True, reply(listing))
    with source_over(fake) as source:
        summary = next(t for t in source.list_threads() if t.thread_id == PAGINATED)
        report = ParseReport()
        assert source.read_thread(summary, report) is None
        outcome = source.read_thread_outcome(summary)
    assert outcome.reason == "paginated_projection_missing"
    assert report.counts["fallback_paginated_projection_missing"] == 1
    assert any("paginated_projection_missing" in w for w in report.warnings)
    # the source asked the paginated way: metadata read, then thread/turns/list, full items
    turns_calls = fake.requests("thread/turns/list")
    assert turns_calls[0]["params"]["itemsView"] == "full"
    assert turns_calls[0]["params"]["sortDirection"] == "asc"
    assert fake.requests("thread/read")[0]["params"]["includeTurns"] is False


def test_items_list_unsupported_on_legacy_keeps_turn_items():
    """thread/turns/list pages (cursor) for a legacy thread; its summary-view turns need
    thread/items/list, which legacy threads refuse with -32601: the turns keep their items."""
    fake = FakeAppServer(runs=("run3", "run2"))
    page1 = recorded("run3", "thread/turns/list", threadId=CODEMIE)
    cursor = page1.response["result"]["nextCursor"]
    full_read = recorded("run3", "thread/read", threadId=CODEMIE)
    legacy_refusal = recorded("run2", "thread/items/list")
    assert legacy_refusal.response["error"]["code"] == -32601

    def page2(_params):
        # Not recorded: the remaining turn (from the recorded full read) in summary view.
        third = copy.deepcopy(full_read.response["result"]["thread"]["turns"][2])
        third["itemsView"] = "summary"
        return [{"id": 0, "result": {"data": [third], "nextCursor": None, "backwardsCursor": None}}]

    fake.route("thread/turns/list", lambda p: p.get("cursor") == cursor, page2)
    fake.route("thread/turns/list", lambda p: "cursor" not in p, reply(page1))
    fake.route("thread/items/list", lambda p: True, reply(legacy_refusal))
    with source_over(fake) as source:
        turns, counts = source.list_turns(CODEMIE)
    assert [t.id for t in turns] == ["rollout-1", "rollout-30", "rollout-32"]
    assert all(len(t.items) == 1 and t.items[0].type == "userMessage" for t in turns)
    assert counts["turns_items_partial"] == 3 and counts["turn_pages"] == 2
    assert len(fake.requests("thread/items/list")) == 1  # not asked again after -32601


def test_paginated_turns_with_summary_view_are_completed_by_items_list():
    fake = FakeAppServer(runs=("run1",))
    summary_page = copy.deepcopy(recorded("run1", "thread/turns/list", limit=2).response)
    summary_page["result"]["nextCursor"] = None
    items = recorded("run1", "thread/items/list")

    def items_for(params):
        entries = [e for e in items.response["result"]["data"] if e["turnId"] == params["turnId"]]
        return [{"id": 0, "result": {"data": entries, "nextCursor": None}}]

    fake.route("thread/turns/list", lambda p: True, lambda p: [summary_page])
    fake.route("thread/items/list", lambda p: True, items_for)
    with source_over(fake) as source:
        turns, counts = source.list_turns(PAGINATED)
    assert [len(t.items) for t in turns] == [3, 4]  # summary view had 2 and 2
    assert [i.type for i in turns[1].items] == ["userMessage", "reasoning", "commandExecution", "agentMessage"]
    assert counts["item_pages"] == 2


# Per-role turn counts, counted by hand from the transcripts (reasoning summaries are assistant
# turns, contextCompaction a system marker, commandExecution a tool turn).
EXPECTED = {
    # run1, thread/turns/list itemsView=full: 5 codex turns; 4 × (user, reasoning, agent),
    # + commandExecution in turn 2, + a compaction-only turn.
    ("run1", PAGINATED): {"user": 4, "assistant": 8, "tool": 1, "system": 1},
    # run2, legacy thread/read: 2 turns × (user, reasoning, agent). The recorded replay has no
    # commandExecution although the rollout holds an exec_command call (0.169 legacy replay).
    ("run2", LEGACY_169): {"user": 2, "assistant": 4},
    ("run3", LOCALPUSH_SHORT): {"user": 1, "assistant": 2},
    ("run3", CODEMIE): {"user": 3},  # 3 turns, user messages only
    ("run3", LARGE_0106): {"user": 1},
    ("run3b", LOCALPUSH_MID): {"user": 1, "assistant": 12},  # 6 × (reasoning, agent)
}


@pytest.mark.parametrize(("run", "thread_id"), list(EXPECTED))
def test_every_transcript_thread_normalises(run, thread_id):
    fake = FakeAppServer(runs=(run,))
    add_history_routes(fake)
    with source_over(fake) as source:
        report = ParseReport()
        doc = source.read_thread(thread_id, report)
    assert fake.unmatched == []
    assert doc is not None
    assert role_counts(doc) == EXPECTED[(run, thread_id)]
    assert doc.source == "cx_appserver" and doc.source_type == "codex_session"
    assert doc.thread_id == thread_id
    assert doc.doc_id == thread_doc_id("codex_session", thread_id)
    assert doc.source_uri == f"codex://thread/{thread_id}"
    assert len({t.turn_id for t in doc.turns}) == len(doc.turns)
    assert all(t.text.strip() for t in doc.turns)
    assert all("base64," not in t.text for t in doc.turns)
    assert doc.title and doc.created_at and doc.updated_at
    assert doc.links.repo_paths and doc.metadata["history_mode"] in ("legacy", "paginated")
    assert report.counts["items_total"] == sum(EXPECTED[(run, thread_id)].values())


def test_paginated_thread_details():
    fake = FakeAppServer(runs=("run1",))
    add_history_routes(fake)
    with source_over(fake) as source:
        doc = source.read_thread(PAGINATED)
    assert doc.title == "Mock research thread"  # thread name beats preview
    tool = next(t for t in doc.turns if t.role == "tool")
    assert tool.tool.name == "exec_command"
    assert tool.tool.input["command"] == "/bin/bash -lc 'echo hi from mock tool'"
    assert tool.text == (
        "Tool: exec_command\n$ /bin/bash -lc 'echo hi from mock tool'\n(in /home/dev/run1/work)\n"
        "Output (exit code 0):\nhi from mock tool"
    )  # the rollout-file adapter's layout
    assert tool.turn_id == "01a20116-372c-7180-bb9b-e5e1dbe2f914:call_2"
    assert tool.meta["exit_code"] == 0
    image_turn = next(t for t in doc.turns if t.attachments)
    assert image_turn.role == "user"
    assert image_turn.attachments[0].kind == "image"
    assert image_turn.attachments[0].path == "/home/dev/run1/work/red.png"
    assert image_turn.text.startswith("What is in this image?")
    marker = next(t for t in doc.turns if t.role == "system")
    assert marker.text == "Context compacted." and marker.meta["kind"] == "compaction"
    assert marker.meta["item_type"] == "contextCompaction"
    reasoning = [t for t in doc.turns if t.meta["kind"] == "reasoning"]
    assert len(reasoning) == 4 and reasoning[0].role == "assistant"
    assert doc.turns[0].ts is not None and doc.turns[0].ts.year == 2026
    assert doc.metadata["model"] == "mock-model" and doc.metadata["model_provider"] == "mock_provider"
    assert doc.metadata["cli_version"] == "0.169.0" and doc.metadata["source_kind"] == "vscode"


def test_legacy_thread_metadata_and_git():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    with source_over(fake) as source:
        doc = source.read_thread(LOCALPUSH_SHORT)
    assert doc.metadata["git"] == {"sha": "86b4a8d9581d63089e53845daf7dd787129a9972",
                                   "branch": "main", "origin_url": "redacted://url/d18f1190d0"}
    assert doc.links.repo_paths == ["/redacted/path/da0ba47443"]
    assert doc.links.model_extra["git_origin_url"] == "redacted://url/d18f1190d0"
    assert all(t.meta.get("turn_status") == "interrupted" for t in doc.turns)
    assert doc.metadata["originator"] == "Codex Desktop"
    # legacy items carry no timestamps; created/updated come from the thread
    assert doc.created_at.year == 2026 and doc.created_at.month == 2


def test_validation_failure_is_a_per_thread_error():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    bad = copy.deepcopy(recorded("run3", "thread/read", threadId=LARGE_0106).response)
    bad["result"]["thread"]["turns"][0]["items"] = "not a list"
    fake.routes.insert(0, ("thread/read", lambda p: p["threadId"] == LARGE_0106 and p.get("includeTurns"),
                           lambda p: [bad]))
    with source_over(fake) as source:
        with pytest.raises(ThreadReadError, match="invalid response") as info:
            source.read_thread(LARGE_0106)
        assert info.value.outcome.reason == "invalid_response"
        assert source.read_thread(LOCALPUSH_SHORT) is not None


# ------------------------------------------------------------------------------------------
# Normalisation rules on recorded data with edits
# ------------------------------------------------------------------------------------------


def _run1_thread() -> s.Thread:
    return s.ThreadReadResponse.model_validate(
        result_of(recorded("run1", "thread/read", includeTurns=True))
    ).thread


def test_unknown_items_are_kept_as_text_or_counted():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    items = raw["thread"]["turns"][0]["items"]
    items.append({"type": "holoDeck", "id": "h1", "text": "a future item with words"})
    items.append({"type": "pulse", "id": "p1", "intensity": 3})
    thread = s.ThreadReadResponse.model_validate(raw).thread
    assert isinstance(thread.turns[0].items[-1], s.UnknownItem)
    assert thread.turns[0].items[-1].raw["intensity"] == 3
    doc, counts = thread_to_conversation(thread)
    kept = [t for t in doc.turns if t.meta.get("unknown_item")]
    assert [t.text for t in kept] == ["a future item with words"]
    assert counts["unknown_items_kept"] == 1 and counts["unknown_items_dropped"] == 1


def test_tool_output_is_clipped_head_and_tail_and_base64_never_indexed():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    turn = raw["thread"]["turns"][1]
    command = next(i for i in turn["items"] if i["type"] == "commandExecution")
    command["aggregatedOutput"] = ("HEAD-LINE\n" + "".join(f"log line {i}: ok\n" for i in range(1500))
                                   + "TAIL-ERROR: boom")
    turn["items"][0]["content"].append({"type": "image", "url": "data:image/png;base64," + "A" * 5000})
    turn["items"][0]["content"][0]["text"] += " see data:image/png;base64," + "B" * 400
    turn["items"][-1]["text"] += "\nraw: " + "QUJD" * 200  # a bare base64 run in assistant text
    thread = s.ThreadReadResponse.model_validate(raw).thread
    doc, counts = thread_to_conversation(thread, options=NormalizeOptions(max_tool_output_chars=1000))
    tool = next(t for t in doc.turns if t.role == "tool")
    assert "HEAD-LINE" in tool.text and "TAIL-ERROR: boom" in tool.text
    assert "characters omitted" in tool.text and len(tool.text) < 1200
    assert tool.meta["output_chars"] > 20_000
    assert counts["tool_outputs_truncated"] == 1
    user = next(t for t in doc.turns if t.role == "user" and t.attachments)
    assert "base64" not in user.text and "[image/png data omitted]" in user.text
    assert user.attachments[0].mime_type == "image/png" and user.attachments[0].uri is None
    assert counts["data_urls_removed"] == 1
    answer = next(t for t in doc.turns if t.turn_id.endswith(":msg_3"))
    assert "QUJDQUJD" not in answer.text and "[base64 data, 800 chars omitted]" in answer.text
    assert counts["base64_runs_removed"] == 1


def test_clip_keeps_short_text_and_marks_long_text():
    counts: Counter[str] = Counter()
    assert clip("short", 100, counts, "c") == "short" and not counts
    clipped = clip("a" * 50 + "b" * 50, 20, counts, "c")
    assert clipped.startswith("a" * 15) and clipped.endswith("b" * 5) and "80 characters omitted" in clipped
    assert counts["c"] == 1


def test_tool_like_items_become_tool_turns():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    extra = [
        {"type": "fileChange", "id": "fc1", "status": "completed",
         "changes": [{"path": "/w/a.py", "kind": {"type": "update", "move_path": None},
                      "diff": "@@ -1 +1 @@\n-old\n+new\n"}]},
        {"type": "mcpToolCall", "id": "m1", "server": "docs", "tool": "search", "status": "completed",
         "arguments": {"q": "pydantic"}, "error": None,
         "result": {"content": [{"type": "text", "text": "found 3 pages"},
                                {"type": "image", "data": "QUJD", "mimeType": "image/png"}]}},
        {"type": "webSearch", "id": "w1", "query": "codex app-server",
         "action": {"type": "search", "query": "codex app-server", "queries": ["codex rpc"]}},
        {"type": "plan", "id": "pl1", "text": "1. read\n2. write"},
        {"type": "sleep", "id": "z1", "durationMs": 10},
    ]
    raw["thread"]["turns"][0]["items"].extend(extra)
    doc, counts = thread_to_conversation(s.ThreadReadResponse.model_validate(raw).thread)
    by_type = {t.meta["item_type"]: t for t in doc.turns}
    assert by_type["fileChange"].role == "tool" and "update /w/a.py" in by_type["fileChange"].text
    assert by_type["fileChange"].tool.input == {"files": ["/w/a.py"]}
    assert "+new" in by_type["fileChange"].text and by_type["fileChange"].tool.name == "apply_patch"
    mcp = by_type["mcpToolCall"]
    assert mcp.tool.name == "docs.search" and "found 3 pages" in mcp.text and "QUJD" not in mcp.text
    assert mcp.text.startswith('Tool: docs.search\n{"q": "pydantic"}\nOutput:')
    assert mcp.meta["media_omitted"] == 1
    assert by_type["webSearch"].text == "Tool: web_search\ncodex app-server\ncodex rpc"
    assert by_type["plan"].role == "assistant" and by_type["plan"].meta["kind"] == "plan"
    assert "sleep" not in by_type and counts["items_dropped_sleep"] == 1


def test_rollout_path_resolution_accepts_zst(tmp_path):
    plain = tmp_path / "rollout-x.jsonl"
    assert resolve_rollout_path(str(plain)) is None
    (tmp_path / "rollout-x.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    assert resolve_rollout_path(str(plain)) == str(plain) + ".zst"
    plain.write_text("{}\n")
    assert resolve_rollout_path(str(plain)) == str(plain)
    assert resolve_rollout_path(None) is None
