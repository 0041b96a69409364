"""cx_appserver against the real `codex app-server` 0.169.0 (offline, unauthenticated).

Binary: $CHINVEX_CODEX_BIN, else the cache of scripts/install-codex.sh
($CHINVEX_CODEX_CACHE or .cache/codex-0.169.0), else `codex` on PATH. The tests skip only
when no binary exists and npm is unavailable to install one; with npm present a missing
binary is a failure that says to run the install script.

The Codex home is a temp dir seeded with the rollouts of fixtures/codex-rollout. What 0.169.0
lists there (verified, FORMATS.md §1.5 / §2.1):
- the three 0.104 localpush rollouts, the 0.128 codemie rollout and the generated 0.169.0
  legacy rollout: listed (envelope-era files) and readable through thread/read;
- the generated 0.169.0 paginated rollout: listed, but its turns live in the server's SQLite
  projection, which a copied file does not have → no turns → `read_thread` returns None
  with reason `paginated_projection_missing` (the JSONL adapter reads it instead);
- the `.jsonl.zst` copy of the legacy rollout sits next to its plain twin: the plain file
  wins, so it adds no thread;
- `truncated-last-line.jsonl` is that same legacy thread cut mid-line; it gets a rollout name
  and a thread id of its own (rewritten in the copy) so it lists as a 7th thread, whose last
  turn reads back "interrupted".
A second home holds the `.zst` plus an unrenamed copy of the truncated file in another day
folder: one thread id in two files, which 0.169.0 lists twice by default (no sourceKinds) and
once with an explicit sourceKinds filter.

A paginated thread *with* a server projection cannot be copied in (the projection lives in the
server's thread_history_1.sqlite), so `record_paginated_thread` has the real server write one:
`thread/start`, two `turn/start`s answered by a loopback stand-in for the Responses API (the way
fixtures/codex-rollout/generated-0.169.0 was made, FORMATS.md §1.6: no network, no account),
then a `thread/shellCommand` turn. What was tried first, without any model: `thread/shellCommand`
alone gives a projected paginated turn, but a thread without a user message is not listed by
`thread/list`; `thread/inject_items` appends raw response items and creates no turn; `thread/fork`
of a legacy thread gives a legacy thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chinvex.models import CodexAppServerConfig
from chinvex.models.sources import ParseReport, SourceCandidate
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.errors import AppServerDied, AppServerError
from chinvex_adapters.cx_appserver.launch import ClientConfig
from chinvex_adapters.cx_appserver.source import (
    AppServerSource,
    AppServerSourceOptions,
    client_factory_from,
)
from chinvex_adapters.cx_appserver.threads import ThreadReadError
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from helpers import (CODEX_INSTALL_SCRIPT, CODEX_TRIPLE, CODEX_VERSION, FIXTURES, REPO_ROOT,
                     codex_binary_or_skip)

ROLLOUTS = FIXTURES / "codex-rollout"
INSTALL_SCRIPT, VERSION, TRIPLE = CODEX_INSTALL_SCRIPT, CODEX_VERSION, CODEX_TRIPLE

LEGACY_ID = "01a20116-7f80-7e82-8754-e5125007d434"
TRUNCATED_ID = "01a20116-7f80-7e82-8754-00000000aaaa"  # the truncated copy's own id
PAGINATED_ID = "01a20116-364e-7ac1-8d5a-b68a4dbbf7c6"
LEGACY_NAME = f"rollout-2026-11-22T02-29-41-{LEGACY_ID}.jsonl"

# Per-role turn counts of each listed thread as 0.169.0 replays it (reasoning summaries are
# assistant turns). Legacy replays carry no tool calls: see the module report.
EXPECTED_ROLES = {
    "019c8a4d-8f45-7010-8b5d-7fad920aa6f9": {"user": 1, "assistant": 34},  # 17 reasoning + 17 agent
    "019c8a70-dda7-7f33-98ea-f30553347322": {"user": 1, "assistant": 2},
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff": {"user": 1, "assistant": 12},
    "019e1695-0522-7c83-8b39-0dd379793f80": {"user": 3},
    LEGACY_ID: {"user": 2, "assistant": 4},
    TRUNCATED_ID: {"user": 2, "assistant": 4},
}
EXPECTED_CODEX_TURNS = {
    "019c8a4d-8f45-7010-8b5d-7fad920aa6f9": 1,
    "019c8a70-dda7-7f33-98ea-f30553347322": 1,
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff": 1,
    "019e1695-0522-7c83-8b39-0dd379793f80": 3,
    LEGACY_ID: 2,
    TRUNCATED_ID: 2,
}


@pytest.fixture(scope="module")
def codex_bin() -> str:
    return codex_binary_or_skip()


def _copy(src: Path, dest: Path, replace: tuple[bytes, bytes] | None = None) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    if replace:
        data = data.replace(*replace)
    dest.write_bytes(data)


@pytest.fixture(scope="module")
def codex_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("cxlive") / ".codex"
    home.mkdir()  # the server refuses a CODEX_HOME that does not exist
    sessions = home / "sessions"
    for src in (ROLLOUTS / "public/localpush/sessions/2026/02/23").glob("rollout-*.jsonl"):
        _copy(src, sessions / "2026/02/23" / src.name)
    codemie = ROLLOUTS / "public/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
    _copy(codemie, sessions / "2026/05/11" / codemie.name)
    for kind in ("legacy", "paginated"):
        for src in (ROLLOUTS / "generated-0.169.0" / kind / "sessions").rglob("rollout-*.jsonl"):
            _copy(src, sessions / src.relative_to(ROLLOUTS / "generated-0.169.0" / kind / "sessions"))
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, sessions / "2026/11/22" / zst.name)  # beside its plain twin, as its path shows
    _copy(ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
          sessions / "2026/11/22" / f"rollout-2026-11-22T02-29-41-{TRUNCATED_ID}.jsonl",
          replace=(LEGACY_ID.encode(), TRUNCATED_ID.encode()))
    return home


@pytest.fixture(scope="module")
def dup_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("cxdup") / ".codex"
    home.mkdir()
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, home / "sessions/2026/11/22" / zst.name)
    _copy(ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
          home / "sessions/2026/11/23" / f"rollout-2026-11-23T08-00-00-{LEGACY_ID}.jsonl")
    return home


def _config(binary: str, home: Path, **kw) -> ClientConfig:
    return ClientConfig(binary=binary, codex_home=str(home), request_timeout_s=20, startup_timeout_s=20, **kw)


def _source(binary: str, home: Path) -> AppServerSource:
    # How the pipeline builds it: from context.json's codex_appserver block.
    factory = client_factory_from(CodexAppServerConfig(timeout_s=20), codex_home=str(home), binary=binary)
    return AppServerSource(factory)


def _digests(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (home / "sessions").rglob("*") if p.is_file()}


# -- a paginated thread written by the real server -----------------------------------------------

class ScriptedResponsesAPI:
    """A loopback stand-in for the Responses API behind `turn/start`: the N-th POST to
    `/v1/responses` streams one reasoning item and one assistant message (both with ids, which
    paginated threads require, FORMATS.md §1.6). It stands in for the *model*, not for the
    app-server: the server under test is the real binary, which writes the rollout and its own
    SQLite projection exactly as it does for a real session."""

    def __init__(self, answers: Sequence[tuple[str, str]]):
        self.answers = list(answers)  # (reasoning summary, assistant text) per model call
        self.requests: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                api.requests.append(self.path)
                calls = sum(1 for path in api.requests if path.endswith("/responses"))
                if not self.path.endswith("/responses") or calls > len(api.answers):
                    self.send_response(404)
                    self.end_headers()
                    return
                body = api.stream(calls)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                api.requests.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def stream(self, n: int) -> bytes:
        reasoning, answer = self.answers[n - 1]
        events = [
            {"type": "response.created", "response": {"id": f"resp_{n}"}},
            {"type": "response.output_item.done",
             "item": {"type": "reasoning", "id": f"rs_{n}", "content": None, "encrypted_content": None,
                      "summary": [{"type": "summary_text", "text": reasoning}]}},
            {"type": "response.output_item.done",
             "item": {"type": "message", "role": "assistant", "id": f"msg_{n}",
                      "content": [{"type": "output_text", "text": answer}]}},
            {"type": "response.completed",
             "response": {"id": f"resp_{n}", "usage": {"input_tokens": 10, "input_tokens_details": None,
                                                       "output_tokens": 5, "output_tokens_details": None,
                                                       "total_tokens": 15}}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedResponsesAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class RecordedThread:
    """What `record_paginated_thread` asked the server to write, to check readers against."""

    thread_id: str
    rollout_path: Path
    turn_ids: list[str]
    prompts: list[str]
    answers: list[tuple[str, str]]
    shell_output: str
    notifications: list[str] = field(default_factory=list)


MOCK_CONFIG = """\
model = "mock-model"
approval_policy = "never"
sandbox_mode = "read-only"
model_provider = "mock_provider"

[features]
remote_models = false

[model_providers.mock_provider]
name = "Loopback stand-in for the Responses API"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


def record_paginated_thread(binary: str, home: Path, *, tag: str = "live") -> RecordedThread:
    """Have the real `codex app-server` write a paginated thread into `home` (created if
    missing): two user turns answered by `ScriptedResponsesAPI`, then a user shell command
    (`thread/shellCommand`, no model). The server keeps the thread's projection in its own
    thread_history_1.sqlite, so `thread/turns/list` and `thread/items/list` have content —
    unlike a copied paginated rollout. The temporary config.toml is removed afterwards, so
    whoever reads the home next starts the server with its defaults."""
    home.mkdir(parents=True, exist_ok=True)
    prompts = [f"{tag}: what does the paginated reader return?", f"{tag}: and for a second turn?"]
    answers = [(f"**Planning {tag} 1**\n\nLook at the projection.", f"{tag} answer one: turns come from SQLite."),
               (f"**Planning {tag} 2**", f"{tag} answer two: items are listed per turn.")]
    shell_output = f"{tag}-shell-output"
    completed: list[dict[str, Any]] = []
    seen: list[str] = []
    done = threading.Condition()

    def on_notification(method: str, params: Any) -> None:
        with done:
            seen.append(method)
            if method == "turn/completed":
                completed.append(params)
                done.notify_all()

    def wait_for_turn(count: int) -> dict[str, Any]:
        with done:
            if not done.wait_for(lambda: len(completed) >= count, timeout=60):
                raise AssertionError(f"turn {count} did not complete; notifications: {seen[-20:]}")
            return completed[count - 1]

    config = home / "config.toml"
    with ScriptedResponsesAPI(answers) as api:
        config.write_text(MOCK_CONFIG.format(base_url=api.base_url))
        try:
            client = AppServerClient(ClientConfig(binary=binary, codex_home=str(home), request_timeout_s=60,
                                                  startup_timeout_s=60, extra_env={"MOCK_API_KEY": "test"}),
                                     on_notification=on_notification)
            with client:
                thread = client.request("thread/start", {"cwd": str(home)})["thread"]
                assert thread["historyMode"] == "paginated", thread
                for number, prompt in enumerate(prompts, start=1):
                    client.request("turn/start", {"threadId": thread["id"], "input": [
                        {"type": "text", "text": prompt, "text_elements": []}]})
                    turn = wait_for_turn(number)["turn"]
                    assert turn["status"] == "completed", turn
                client.request("thread/shellCommand", {"threadId": thread["id"], "timeoutMs": 30_000,
                                                       "command": f"echo {shell_output}"})
                wait_for_turn(len(prompts) + 1)
        finally:
            config.unlink(missing_ok=True)
    assert sum(1 for path in api.requests if path.endswith("/responses")) == len(prompts)
    turn_ids = [params["turn"]["id"] for params in completed]
    assert all(params["turn"]["status"] == "completed" for params in completed), completed
    return RecordedThread(thread_id=thread["id"], rollout_path=Path(thread["path"]), turn_ids=turn_ids,
                          prompts=prompts, answers=answers, shell_output=shell_output, notifications=seen)


def squash_ws(text: str) -> str:
    """Text compared modulo whitespace: the readers join multi-part texts differently (the
    server joins reasoning summary parts with blank lines)."""
    return re.sub(r"\s+", " ", text).strip()


def turn_kind(turn: Any) -> str:
    """user | assistant | reasoning | tool | <role>:<kind> — the two adapters agree on these
    (the rollout adapter leaves `meta.kind` unset on user turns, the server's copy says
    "message")."""
    kind = turn.meta.get("kind")
    if turn.role == "assistant" and kind == "reasoning":
        return "reasoning"
    if turn.role in ("user", "tool") or (turn.role == "assistant" and kind in (None, "message")):
        return turn.role
    return f"{turn.role}:{kind}"


def test_live_handshake_and_not_initialized(codex_bin, codex_home):
    with AppServerClient(_config(codex_bin, codex_home)) as probe:
        pass  # a normal start works
    client = AppServerClient(_config(codex_bin, codex_home))
    try:
        client.start(handshake=False)
        with pytest.raises(AppServerError) as info:
            client.request("thread/list", {"modelProviders": []})
        assert (info.value.code, info.value.message) == (-32600, "Not initialized")
        result = client.initialize()
        assert result["codexHome"] == str(codex_home)
        assert result["userAgent"].startswith(f"chinvex/{VERSION}")
        with pytest.raises(AppServerError, match="Already initialized"):
            client.request("initialize", {"clientInfo": {"name": "x", "title": None, "version": "1"},
                                          "capabilities": None})
        # The gotcha of FORMATS.md §1.5: without modelProviders only the configured
        # provider's ("openai" by default) threads are listed — the 4 public rollouts.
        default = client.request("thread/list", {})
        assert len(default["data"]) == 4
        assert {t["modelProvider"] for t in default["data"]} == {"openai"}
    finally:
        client.close()
    assert probe.closed and client.closed


def test_live_list_threads(codex_bin, codex_home):
    before = _digests(codex_home)
    started = time.monotonic()
    with _source(codex_bin, codex_home) as source:
        threads = source.list_threads()
        everything = source.list_threads(include_subagents=True, include_archived=True)
        assert source.codex_home == str(codex_home)
    elapsed = time.monotonic() - started
    ids = [t.thread_id for t in threads]
    assert sorted(ids) == sorted([*EXPECTED_ROLES, PAGINATED_ID])  # 7 threads
    assert [t.thread_id for t in everything] == ids  # no sub-agent or archived threads here
    assert [t.created_at for t in threads] == sorted(t.created_at for t in threads)
    by_id = {t.thread_id: t for t in threads}
    assert by_id[PAGINATED_ID].history_mode == "paginated"
    assert {t.history_mode for t in threads if t.thread_id != PAGINATED_ID} == {"legacy"}
    assert by_id[LEGACY_ID].rollout_path == str(codex_home / "sessions/2026/11/22" / LEGACY_NAME)
    assert by_id[LEGACY_ID].duplicate_paths == ()
    assert all(t.rollout_path and Path(t.rollout_path).is_file() for t in threads)
    assert all(t.updated_at.endswith("Z") and t.source_kind == "vscode" for t in threads)
    assert elapsed < 15
    assert _digests(codex_home) == before  # listing never modifies rollouts


def test_live_read_every_thread(codex_bin, codex_home):
    before = _digests(codex_home)
    with _source(codex_bin, codex_home) as source:
        threads = source.list_threads()
        docs, reasons = {}, {}
        for summary in threads:
            report = ParseReport()
            doc = source.read_thread(summary, report)
            if doc is None:
                reasons[summary.thread_id] = (source.read_thread_outcome(summary).reason, summary.rollout_path)
            else:
                docs[summary.thread_id] = (doc, report.counts)
    assert set(reasons) == {PAGINATED_ID}
    reason, fallback = reasons[PAGINATED_ID]
    assert reason == "paginated_projection_missing"
    assert fallback and Path(fallback).is_file()  # the JSONL adapter's input
    for thread_id, (doc, counts) in docs.items():
        assert dict(Counter(t.role for t in doc.turns)) == EXPECTED_ROLES[thread_id], thread_id
        assert counts["codex_turns"] == EXPECTED_CODEX_TURNS[thread_id], thread_id
        assert doc.doc_id and doc.source_uri == f"codex://thread/{thread_id}"
        assert len({t.turn_id for t in doc.turns}) == len(doc.turns)
    truncated, counts = docs[TRUNCATED_ID]
    assert counts["codex_turns_interrupted"] == 1
    assert truncated.turns[-1].meta["turn_status"] == "interrupted"
    legacy, _ = docs[LEGACY_ID]
    image = next(t for t in legacy.turns if t.attachments)
    assert image.attachments[0].path == "/home/dev/run2/work/red.png"
    assert docs["019c8a4d-8f45-7010-8b5d-7fad920aa6f9"][0].metadata["git"]["branch"] == "main"
    assert _digests(codex_home) == before


def test_live_zst_and_duplicate_ids(codex_bin, dup_home):
    with AppServerClient(_config(codex_bin, dup_home)) as client:
        raw = client.request("thread/list", {"modelProviders": []})["data"]
    # The server lists the thread once per file, and names the .zst file without ".zst".
    assert [t["id"] for t in raw] == [LEGACY_ID, LEGACY_ID]
    zst_entry = next(t for t in raw if "/2026/11/22/" in t["path"])
    assert zst_entry["path"].endswith(LEGACY_NAME)
    assert not Path(zst_entry["path"]).exists()
    # With an explicit sourceKinds filter (what the source sends) 0.169.0 answers from another
    # code path that returns the id once; the source's own de-duplication is the safety net.
    with _source(codex_bin, dup_home) as source:
        threads = source.list_threads()
        assert len(threads) == 1
        report = ParseReport()
        doc = source.read_thread(threads[0], report)
    assert threads[0].path in {t["path"] for t in raw}
    assert {threads[0].path, *threads[0].duplicate_paths} <= {t["path"] for t in raw}
    assert dict(Counter(t.role for t in doc.turns)) == {"user": 2, "assistant": 4}
    assert report.counts["codex_turns"] == 2


def test_live_zst_alone_is_listed_and_read(codex_bin, tmp_path):
    home = tmp_path / ".codex"
    home.mkdir()
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, home / "sessions/2026/11/22" / zst.name)
    with _source(codex_bin, home) as source:
        (summary,) = source.list_threads()
        doc = source.read_thread(summary)
    assert summary.path.endswith(LEGACY_NAME)  # reported without .zst ...
    assert summary.rollout_path == str(home / "sessions/2026/11/22" / zst.name)  # ... resolved here
    assert dict(Counter(t.role for t in doc.turns)) == {"user": 2, "assistant": 4}


def test_live_paginated_thread_with_a_real_projection(codex_bin, tmp_path):
    """The one kind of thread only the server can read from its projection: a paginated
    thread it wrote itself. The source reads it through thread/turns/list, paged through real
    cursors (one turn per page), and gets exactly the turns the rollout adapter reads from the
    rollout file the server wrote alongside — so neither reader loses or duplicates anything.
    The listing itself carries no last turn id, which is why cx_appserver fingerprints a thread
    by updatedAt alone (see `CodexAppServerAdapter._route`)."""
    home = tmp_path / ".codex"
    rec = record_paginated_thread(codex_bin, home)
    factory = client_factory_from(CodexAppServerConfig(timeout_s=30), codex_home=str(home), binary=codex_bin)
    with AppServerSource(factory, AppServerSourceOptions(turns_page_size=1)) as source:
        (summary,) = source.list_threads()
        report = ParseReport()
        doc = source.read_thread(summary, report)
        client = source.client()
        raw = client.request("thread/list", {"modelProviders": []})
        shell_items = client.request("thread/items/list", {"threadId": rec.thread_id, "turnId": rec.turn_ids[-1]})
    assert (summary.thread_id, summary.history_mode) == (rec.thread_id, "paginated")
    assert summary.rollout_path == str(rec.rollout_path) and rec.rollout_path.is_file()
    assert doc is not None, report.warnings
    assert report.counts["codex_turns"] == 3 and report.counts["turn_pages"] >= 3
    assert list(dict.fromkeys(t.meta["codex_turn_id"] for t in doc.turns)) == rec.turn_ids
    (p1, p2), ((r1, a1), (r2, a2)) = rec.prompts, rec.answers
    expected = [("user", p1), ("reasoning", r1), ("assistant", a1), ("user", p2), ("reasoning", r2), ("assistant", a2)]
    assert [(turn_kind(t), squash_ws(t.text)) for t in doc.turns[:-1]] == [(k, squash_ws(text)) for k, text in expected]
    (tool,) = doc.turns[-1:]
    assert turn_kind(tool) == "tool" and rec.shell_output in tool.text and "exit code 0" in tool.text
    assert tool.meta["codex_turn_id"] == rec.turn_ids[-1]

    # The rollout adapter reading the server's rollout file: the same turns, in the same order.
    rollout = CodexRolloutAdapter()
    path = rec.rollout_path
    (from_file,) = rollout.parse(SourceCandidate(str(path), "codex_session", rollout.name, str(home), path),
                                 ParseReport(), None)
    assert from_file.doc_id == doc.doc_id
    assert [(turn_kind(t), squash_ws(t.text)) for t in from_file.turns if turn_kind(t) != "tool"] == \
        [(turn_kind(t), squash_ws(t.text)) for t in doc.turns if turn_kind(t) != "tool"]
    tools = [t for t in from_file.turns if turn_kind(t) == "tool"]
    assert len(tools) == 1 and rec.shell_output in tools[0].text  # rendered from other fields, same output

    # thread/items/list gives the shell turn's item on its own.
    assert [(e["turnId"], e["item"]["type"]) for e in shell_items["data"]] == [(rec.turn_ids[-1], "commandExecution")]
    assert shell_items["data"][0]["item"]["aggregatedOutput"].strip() == rec.shell_output
    # The listing: no turns, and the only turn id in it is the *first unread* turn, not the last.
    (entry,) = raw["data"]
    assert entry["id"] == rec.thread_id and entry["turns"] == []
    assert raw["readStates"][rec.thread_id]["firstUnread"] == {"type": "turn", "turnId": rec.turn_ids[0]}


def test_live_unknown_thread_is_a_per_thread_error(codex_bin, codex_home):
    with _source(codex_bin, codex_home) as source:
        with pytest.raises(ThreadReadError, match="thread not loaded"):
            source.read_thread("00000000-0000-0000-0000-000000000000")
        assert source.read_thread(LEGACY_ID) is not None  # same child, still fine


def test_live_killed_child_fails_pending_requests_and_source_restarts(codex_bin, codex_home):
    with _source(codex_bin, codex_home) as source:
        client = source.client()
        pid = client.pid
        assert pid
        os.kill(pid, signal.SIGSTOP)  # freeze it so the read is surely pending when it dies
        first = client.send_request("thread/read", {"threadId": "019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
                                                    "includeTurns": True})
        second = client.send_request("thread/turns/list", {"threadId": LEGACY_ID})
        started = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(AppServerDied, match="killed by signal 9"):
            client.wait(first, "thread/read")
        with pytest.raises(AppServerDied, match="thread/turns/list"):
            client.wait(second, "thread/turns/list")
        assert time.monotonic() - started < 5
        # The source replaces the dead child on the next call.
        doc = source.read_thread(LEGACY_ID)
        assert doc is not None and source.client().pid != pid


def test_install_script_without_npm_exits_3(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("uname", "dirname", "mktemp", "mkdir", "rm", "grep", "tail", "cat", "tar", "chmod", "mv", "bash"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    proc = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=60,
        env={"PATH": str(tools), "CHINVEX_CODEX_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 3, proc.stderr
    assert "npm is not installed" in proc.stderr


def test_install_script_is_idempotent(codex_bin):
    cached = REPO_ROOT / ".cache" / f"codex-{VERSION}" / "vendor" / TRIPLE / "bin" / "codex"
    if Path(codex_bin) != cached:
        pytest.skip("the binary under test is not the install script's cache")
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CHINVEX_CODEX_CACHE": str(cached.parents[3])})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(cached)
    assert "already installed" in proc.stderr
