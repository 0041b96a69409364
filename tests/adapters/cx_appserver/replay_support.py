"""cx_appserver without the binary: the real client, source and normaliser driven by a fake
server that answers with the lines recorded from codex 0.169.0 (fixtures/codex-app-server/
transcripts/run1, run2, run3, run3b), matched by method and params, ids re-mapped.

Where a transcript lacks an answer the test needs (a second thread/list page, the error for a
request before initialize), the fake builds it from recorded data or from the behaviour
FORMATS.md §1.3 verified, and says so next to the route.


What the replay tests share: the recorded exchanges and the fake server that plays them.
"""

from __future__ import annotations

import copy
import json
import os
import textwrap
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable
from chinvex_adapters.cx_appserver import schemas as s
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.launch import ClientConfig
from chinvex_adapters.cx_appserver.transport import StreamTransport
from chinvex_adapters.cx_appserver.source import AppServerSource
from helpers import FIXTURES

TRANSCRIPTS = FIXTURES / "codex-app-server" / "transcripts"


PAGINATED = "01a20116-364e-7ac1-8d5a-b68a4dbbf7c6"  # run1 (live) / run3 (projection missing)


LEGACY_169 = "01a20116-7f80-7e82-8754-e5125007d434"  # run2


LOCALPUSH_SHORT = "019c8a70-dda7-7f33-98ea-f30553347322"


LOCALPUSH_MID = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"


CODEMIE = "019e1695-0522-7c83-8b39-0dd379793f80"


LARGE_0106 = "019b2ea4-aaaa-bbbb-cccc-58208e1f0000"


UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"


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


def source_over(fake: FakeAppServer) -> AppServerSource:
    return AppServerSource(
        lambda: AppServerClient(ClientConfig(request_timeout_s=5.0), transport=fake.transport())
    )


def role_counts(doc) -> dict[str, int]:
    return dict(Counter(t.role for t in doc.turns))


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


def _run1_thread() -> s.Thread:
    return s.ThreadReadResponse.model_validate(
        result_of(recorded("run1", "thread/read", includeTurns=True))
    ).thread
